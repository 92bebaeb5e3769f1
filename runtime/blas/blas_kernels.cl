/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grain's own tile kernels for the tiled BLAS (blas_run.c): the fallback
 * where no vendor BLAS serves the backend, and the reference the others
 * are checked against.  Column-major, with leading dimensions and
 * transposes, on one tile: C (m x n) = alpha op(A) op(B) + beta C with
 * op(A) m x k.  A work-item an element, the sum in the order of k, so that
 * integer data gives exact results whatever the tiling.  beta == 0 never
 * reads C (BLAS: C may hold anything, NaN included).
 */
#include "grain/device/port.h"

#define GEMM_TILE(name, real)                                                                                     \
    GRAIN_KERNEL void name(GRAIN_GLOBAL real *c, grain_u64 ldc, GRAIN_GLOBAL const real *a, grain_u64 lda,        \
                           grain_u64 ta, GRAIN_GLOBAL const real *b, grain_u64 ldb, grain_u64 tb, grain_u64 m,     \
                           grain_u64 n, grain_u64 k, real alpha, real beta)                                        \
    {                                                                                                             \
        grain_u64 id = grain_global_linear_id();                                                                  \
        if (id >= m * n)                                                                                          \
            return;                                                                                               \
        grain_u64 i = id % m, j = id / m;                                                                         \
        real acc = 0;                                                                                             \
        for (grain_u64 l = 0; l < k; l++)                                                                         \
            acc += (ta ? a[i * lda + l] : a[l * lda + i]) * (tb ? b[l * ldb + j] : b[j * ldb + l]);                \
        c[j * ldc + i] = beta == (real)0 ? alpha * acc : alpha * acc + beta * c[j * ldc + i];                    \
    }

GEMM_TILE(grain_blas_dgemm_tile, double)
GEMM_TILE(grain_blas_sgemm_tile, float)

#define AXPY_TILE(name, real)                                                                                     \
    GRAIN_KERNEL void name(GRAIN_GLOBAL real *y, grain_u64 incy, GRAIN_GLOBAL const real *x, grain_u64 incx,      \
                           grain_u64 n, real alpha)                                                               \
    {                                                                                                             \
        grain_u64 i = grain_global_linear_id();                                                                   \
        if (i < n)                                                                                                \
            y[i * incy] += alpha * x[i * incx];                                                                   \
    }

AXPY_TILE(grain_blas_daxpy_tile, double)
AXPY_TILE(grain_blas_saxpy_tile, float)
