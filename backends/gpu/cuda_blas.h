/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuBLAS for the tiled BLAS's gemm tiles on CUDA (docs/blas.md; CoCoPeLia
 * IV-C's tile kernels).  The library is loaded when a backend opens, not
 * linked: grain then starts where cuBLAS is missing (the CI machines have
 * only the compiler) and takes grain's own tile kernel there.  HIP has no
 * counterpart here (Debian 12 has no rocBLAS).
 */
#ifndef GRAIN_BACKENDS_GPU_CUDA_BLAS_H
#define GRAIN_BACKENDS_GPU_CUDA_BLAS_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "grain/grain.h"

typedef struct grain_cublas grain_cublas_t;

/* A handle of cuBLAS on the current device, and the library's name and
 * version in `name` ("cuBLAS 13.0.2"); NULL, with `name` empty, where the
 * library cannot be loaded or started (the info log says why). */
grain_cublas_t *grain_cublas_open(char *name, size_t size);
void grain_cublas_close(grain_cublas_t *h);

/* On `stream`: C (m x n, ldc) = alpha op(A) op(B) + beta C, column-major,
 * op transposing where ta or tb; es 8 (double) or 4 (float), alpha and
 * beta on the host. */
grain_status_t grain_cublas_gemm(grain_cublas_t *h, cudaStream_t stream, size_t es, int ta, int tb, size_t m,
                                 size_t n, size_t k, const void *alpha, const void *a, size_t lda, const void *b,
                                 size_t ldb, const void *beta, void *c, size_t ldc);

#endif
