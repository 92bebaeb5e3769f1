/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tiled BLAS on the rank's device, on operands that live on the host or in
 * grain's symmetric heap, after "CoCoPeLia: Communication-Computation
 * Overlap Prediction for Efficient Linear Algebra on GPUs" (ISPASS 2021).
 * docs/blas.md says what exists and what comes.
 *
 * The routines follow the reference BLAS: column-major, leading dimensions
 * at least the rows they hold (and at least 1), 'N' or 'T' ('C' is 'T' for
 * real data), alpha and beta as given, beta == 0 never reading C.  An
 * operand in the heap (grain_malloc) is used where it is; any other is
 * host memory, copied to the device tile by tile (each tile once) and, for
 * an output, back.  `tile` is the tile's side (elements, for axpy); 0 takes
 * GRAIN_BLAS_TILE.  Positive increments only.  Each call returns once its
 * results are in place, and is collective over nothing: a rank calls it
 * alone.
 */
#ifndef GRAIN_BLAS_H
#define GRAIN_BLAS_H

#include <stddef.h>

#include "grain/grain.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

/* y = alpha x + y over n elements. */
grain_status_t grain_daxpy(grain_t *grain, size_t n, double alpha, const double *x, size_t incx, double *y,
                           size_t incy, size_t tile);
grain_status_t grain_saxpy(grain_t *grain, size_t n, float alpha, const float *x, size_t incx, float *y, size_t incy,
                           size_t tile);

/* C = alpha op(A) op(B) + beta C, C m x n, op(A) m x k, op(B) k x n. */
grain_status_t grain_dgemm(grain_t *grain, char transa, char transb, size_t m, size_t n, size_t k, double alpha,
                           const double *a, size_t lda, const double *b, size_t ldb, double beta, double *c,
                           size_t ldc, size_t tile);
grain_status_t grain_sgemm(grain_t *grain, char transa, char transb, size_t m, size_t n, size_t k, float alpha,
                           const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc,
                           size_t tile);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
