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
 * GRAIN_BLAS_TILE, else the deployed selection, else 2048 (gemm) or 4M
 * elements (axpy).  Positive increments only.  Each call returns once its
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

/* ---- the tile (CoCoPeLia sections III and IV) ----------------------------
 * grain_blas_deploy measures the rank's device once: its links each way
 * (latency, bandwidth, the slowdown while the other way copies) and its
 * tile kernels at each tile size; the profile is kept in `profile` (NULL:
 * GRAIN_BLAS_PROFILE, by default ~/.cache/grain/blas-profile.tsv) and read
 * by later runs on the same device.  From it, grain_blas_predict gives
 * the time of a problem with a tile by a model, and grain_blas_select the
 * deployed tile a model predicts fastest; a routine called with tile 0
 * (and no GRAIN_BLAS_TILE) takes that tile where the device has a profile,
 * by GRAIN_BLAS_MODEL: by default schedule for gemm (it ranks the tiles
 * best, docs/blas.md) and bts for axpy.  Without a profile both calls fail
 * with GRAIN_ERR_STATE, saying so. */
typedef enum grain_blas_routine {
    GRAIN_BLAS_DGEMM,
    GRAIN_BLAS_SGEMM,
    GRAIN_BLAS_DAXPY,
    GRAIN_BLAS_SAXPY,
} grain_blas_routine_t;

typedef enum grain_blas_model {
    GRAIN_BLAS_MODEL_CSO,      /* CUDA-stream overlap (van Werkhoven et al.), the baseline */
    GRAIN_BLAS_MODEL_BASELINE, /* eq. 1: every operand in and out */
    GRAIN_BLAS_MODEL_DATALOC,  /* eq. 2: only what is on the host */
    GRAIN_BLAS_MODEL_BTS,      /* eq. 4: and the copies both ways slowing each other */
    GRAIN_BLAS_MODEL_DR,       /* eq. 5: and each tile copied once (gemm) */
    GRAIN_BLAS_MODEL_DR_LINK,  /* eq. 5 with C's copies back on the link too (grain's; docs/blas.md):
                                * nearer the time, though dr ranks the tiles better */
    GRAIN_BLAS_MODEL_SCHEDULE, /* grain's tile scheduler simulated lane by lane, in its order (docs/blas.md) */
    GRAIN_BLAS_MODELS          /* how many there are */
} grain_blas_model_t;

/* A model's name in profiles and reports ("cso", ..., "schedule"), or
 * "unknown". */
const char *grain_blas_model_name(grain_blas_model_t model);
/* The model of that name; GRAIN_ERR_INVALID, naming the models, for any
 * other. */
grain_status_t grain_blas_model_parse(const char *name, grain_blas_model_t *model_p);

typedef struct grain_blas_problem {
    grain_blas_routine_t routine;
    size_t m, n, k;          /* gemm's; axpy: n */
    char transa, transb;     /* gemm's */
    const void *a, *b, *c;   /* where the operands live (gemm A, B, C; axpy x as a, y as b) */
    int beta_zero;           /* gemm: beta is 0, so C is not read */
    size_t lda, ldb, ldc;    /* gemm's leading dimensions; 0: the rows the operand holds */
} grain_blas_problem_t;

grain_status_t grain_blas_deploy(grain_t *grain, const char *profile);
grain_status_t grain_blas_predict(grain_t *grain, const grain_blas_problem_t *problem, size_t tile,
                                  grain_blas_model_t model, double *seconds_p);
grain_status_t grain_blas_select(grain_t *grain, const grain_blas_problem_t *problem, grain_blas_model_t model,
                                 size_t *tile_p);

/* The rank's last completed call: its routine, its tile, its time from
 * call to return, and the time the model its tile is selected by
 * (GRAIN_BLAS_MODEL) predicted for that tile, or 0 where the device has
 * no profile.  Then where the calling thread's time went: packing host
 * operands into pinned memory and unpacking results from it (with its
 * copy threads; 0 where nothing is staged, GRAIN_BLAS_STAGE), and waiting
 * for the device; the rest went to queueing.  GRAIN_ERR_STATE before any
 * call. */
typedef struct grain_blas_last {
    grain_blas_routine_t routine;
    size_t tile;
    double seconds, predicted_s;
    double pack_s, unpack_s, wait_s;
} grain_blas_last_t;
grain_status_t grain_blas_last(grain_t *grain, grain_blas_last_t *last_p);

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
