/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the tiled BLAS's files share (blas_run.c, blas_deploy.c): the
 * rank's BLAS state (kernels, the device's profile, the selection cache),
 * where an operand lives, and one tile kernel on device buffers.
 */
#ifndef GRAIN_RUNTIME_BLAS_BLAS_RUN_H
#define GRAIN_RUNTIME_BLAS_BLAS_RUN_H

#include <stddef.h>

#include "backends/backend.h" /* GRAIN_BLAS_LANE */
#include "grain/grain.h"
#include "runtime/blas/blas_profile.h"
#include "runtime/blas/blas_select.h"
#include "runtime/blas/blas_stage.h"

/* The lanes a call runs on: copies in, tile kernels, copies back. */
enum { BLAS_H2D = GRAIN_BLAS_LANE, BLAS_RUN, BLAS_D2H };

/* Whether rows x cols elements of `es` bytes from p (`ld` apart) lie in the
 * symmetric heap, where kernels reach them. */
int blas_in_heap_ld(grain_t *g, const void *p, size_t rows, size_t cols, size_t ld, size_t es);

/* Where such an operand is for the models: BLAS_ON_DEVICE in the heap,
 * BLAS_ON_PINNED where its page-locked memory passes the staging, else
 * BLAS_ON_HOST (blas_model.h). */
int blas_where_ld(grain_t *g, const void *p, size_t rows, size_t cols, size_t ld, size_t es);
static inline int blas_where(grain_t *g, const void *p, size_t rows, size_t cols, size_t es)
{
    return blas_where_ld(g, p, rows, cols, rows, es);
}

/* Whether a BLAS transpose letter ('T', 'C', either case) transposes. */
static inline int blas_transposed(char t)
{
    return t == 'T' || t == 't' || t == 'C' || t == 'c';
}

/* grain's tile kernels in grain_blas_kernels_source (blas_kernels.cl), by
 * routine (BLAS_DGEMM ...): the tiled BLAS's and the scheduler's BLAS
 * elements' (sched_blas.c).  A gemm kernel takes c, ldc, a, lda, ta, b,
 * ldb, tb, m, n, k, alpha, beta; an axpy kernel y, incy, x, incx, n,
 * alpha; counts are 64-bit, alpha and beta of the routine's type. */
extern const char grain_blas_kernels_source[];
extern const char *const blas_kernel_names[BLAS_ROUTINES];
enum { BLAS_GEMM_C = 0, BLAS_GEMM_A = 2, BLAS_GEMM_B = 5, BLAS_GEMM_ALPHA = 11, BLAS_GEMM_BETA = 12 };
enum { BLAS_AXPY_Y = 0, BLAS_AXPY_X = 2, BLAS_AXPY_ALPHA = 5 };
/* Where a gemm kernel takes ldc, lda, ta, ldb, tb, m, n and k; where an
 * axpy kernel takes incy, incx and n. */
extern const unsigned blas_gemm_counts_at[8];
extern const unsigned blas_axpy_counts_at[3];

/* The tile kernels run in work-groups of one size whatever the tile, the
 * last one padded (the kernels skip the work-items past their tile): a size
 * that divides the elements, as a user's kernel needs, falls to a few lanes
 * for some tiles (1 for a prime count), and a compiler that builds a kernel
 * for each work-group size (PoCL) would build one for nearly every tile. */
enum { BLAS_TILE_WG = 256 };
static inline size_t blas_tile_global(size_t elements, size_t local)
{
    return (elements + local - 1) / local * local;
}

/* `count` kernels of `routine` on a tile of t (t x t for gemm: C += A B)
 * on device buffers of that size, queued back to back on the lane of the
 * tiled BLAS's kernels as the routines queue them, then waited for: what
 * deployment times. */
grain_status_t blas_run_tile(grain_t *g, unsigned routine, size_t t, unsigned count, void *a, void *b, void *c);

/* Whether a backend computes gemm tiles by its vendor BLAS under
 * GRAIN_BLAS_KERNELS=want ("auto", "grain", "vendor"), loading it at the
 * first ask (its name then in info->blas); GRAIN_ERR_UNSUPPORTED where
 * "vendor" asks for one the backend lacks.  The tiled BLAS's and the
 * scheduler's BLAS elements' (sched_blas.c). */
grain_status_t blas_vendor(const grain_backend_ops_t *o, grain_backend_t *backend, grain_backend_info_t *info,
                           const char *want, int *vendor_p);

/* GRAIN_ERR_INVALID with `name`'s sentence where gemm's lda, ldb or ldc
 * (op() transposing where ta, tb) is below the rows its operand holds, or
 * below 1: the routines' check, and the predictions'. */
grain_status_t blas_check_ld(const char *name, int ta, int tb, size_t m, size_t n, size_t k, size_t lda, size_t ldb,
                             size_t ldc);

/* The rank's staging of host operands (GRAIN_BLAS_STAGE), opened at the
 * first need; NULL where they go straight. */
grain_status_t blas_stage_of(grain_t *g, blas_stage_t **s_p);

/* The device's profile, read from `path` at the first need (NULL: none
 * there); the one a deployment measured, whose arrays it takes. */
const blas_profile_t *blas_profile_of(grain_t *g, const char *path);
void blas_use_profile(grain_t *g, blas_profile_t *p);
/* The profile's path: `given`, else GRAIN_BLAS_PROFILE's; "" for none. */
void blas_profile_path(const grain_t *g, const char *given, char *out, size_t size);
/* The selection cache (NULL without memory). */
blas_cache_t *blas_cache_of(grain_t *g);

#endif
