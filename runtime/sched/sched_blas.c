/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BLAS calls as the scheduler's elements (GrCUDA III-A).  A call is a
 * kernel, the tiled BLAS's own tile kernel (blas_kernels.cl) over the whole
 * operands, so the scheduler orders, places and feeds it as any kernel: A
 * and B (x) read, C (y) read and written, or only written where the call
 * overwrites all of C's array.  The program is built for every device of
 * the scheduler at the first call and lives as long as the scheduler.
 * Where the device it lands on has a vendor BLAS (GRAIN_BLAS_KERNELS, as
 * for the tiled BLAS: cuBLAS, CLBlast), a gemm runs there instead, on the
 * element's stream, with the same operands.
 */
#include <stdint.h>
#include <string.h>

#include "runtime/blas/blas_run.h"
#include "runtime/grain_impl.h"
#include "runtime/sched/sched_exec.h"
#include "services/log.h"

_Static_assert(BLAS_ROUTINES == GRAIN_BLAS_SAXPY + 1 && BLAS_DGEMM == (int)GRAIN_BLAS_DGEMM &&
                   BLAS_SGEMM == (int)GRAIN_BLAS_SGEMM && BLAS_DAXPY == (int)GRAIN_BLAS_DAXPY &&
                   BLAS_SAXPY == (int)GRAIN_BLAS_SAXPY,
               "the tiled BLAS's routines in the public order");

static grain_status_t blas_kernel(grain_sched_t *s, grain_blas_routine_t r, grain_kernel_t **k_p)
{
    grain_status_t st = GRAIN_OK;
    if (s->blas_program == NULL)
        st = grain_sched_program_create(s, grain_blas_kernels_source, NULL, &s->blas_program);
    if (st == GRAIN_OK && s->blas_kernel[r] == NULL &&
        (st = grain_kernel_create(s->blas_program, blas_kernel_names[r], &s->blas_kernel[r])) == GRAIN_OK &&
        (r == GRAIN_BLAS_DGEMM || r == GRAIN_BLAS_SGEMM))
        grain_kernel_sched(s->blas_kernel[r])->gemm_es = r == GRAIN_BLAS_DGEMM ? sizeof(double) : sizeof(float);
    *k_p = s->blas_kernel[r];
    return st;
}

/* A tile kernel of `elements` work-items in the tiled BLAS's work-groups
 * (blas_run.h), no larger than any of the scheduler's devices takes. */
static grain_status_t launch(grain_sched_t *s, grain_kernel_t *kern, size_t elements)
{
    size_t local = BLAS_TILE_WG;
    for (unsigned d = 0; d < s->n_dev; d++)
        if (s->dev[d].info.max_wg_size < local)
            local = s->dev[d].info.max_wg_size;
    size_t global = blas_tile_global(elements, local);
    return grain_sched_launch(kern, 1, &global, &local);
}

grain_status_t sched_blas_vendor(grain_sched_t *s, sched_elem_t *el, int *ran_p)
{
    *ran_p = 0;
    size_t es = el->kernel->gemm_es;
    sched_device_t *dev = sched_device_at(s, el->location);
    if (es == 0 || !dev->lanes)
        return GRAIN_OK;
    int vendor = 0;
    grain_status_t st = blas_vendor(s->bops, dev->backend, &dev->info, s->grain->config.blas_kernels, &vendor);
    if (st == GRAIN_OK && !dev->blas_told) {
        dev->blas_told = 1;
        grain_info("sched: device %u's gemm elements by %s", el->location - 1,
                   vendor ? dev->info.blas : "grain's kernel");
    }
    uint64_t c[8]; /* ldc, lda, ta, ldb, tb, m, n, k: blas_gemm_counts_at's order */
    for (unsigned i = 0; i < 8; i++)
        memcpy(&c[i], el->args[blas_gemm_counts_at[i]].value, sizeof c[i]);
    /* alpha and beta as the routine's type, aligned for the backend (an
     * argument's bytes are not).  A vendor BLAS may read C where beta is 0
     * (CLBlast does), and A and B where alpha is 0, which the reference BLAS
     * never does: a NaN there would survive.  Those stay with grain's
     * kernel, as they do in the tiled BLAS; alpha 0 comes as k 0 (gemm()),
     * which only scales C. */
    union {
        double d;
        float f;
    } alpha, beta;
    memcpy(&alpha, el->args[BLAS_GEMM_ALPHA].value, es);
    memcpy(&beta, el->args[BLAS_GEMM_BETA].value, es);
    if (st != GRAIN_OK || !vendor || c[7] == 0 || (es == sizeof(double) ? beta.d == 0.0 : beta.f == 0.0f))
        return st;
    void *pc = NULL, *pa = NULL, *pb = NULL;
    st = sched_replica(s, el->args[BLAS_GEMM_C].array, el->location, &pc);
    if (st == GRAIN_OK)
        st = sched_replica(s, el->args[BLAS_GEMM_A].array, el->location, &pa);
    if (st == GRAIN_OK)
        st = sched_replica(s, el->args[BLAS_GEMM_B].array, el->location, &pb);
    if (st == GRAIN_OK)
        st = s->bops->gemm_tile(dev->backend, el->stream, es, (int)c[2], (int)c[4], c[5], c[6], c[7], &alpha, pa,
                                c[1], pb, c[3], &beta, pc, c[0]);
    if (st == GRAIN_OK) {
        *ran_p = 1;
        sched_count(s, GRAIN_SCHED_COUNT_VENDOR_GEMMS, 1, 0);
    }
    return st;
}

void sched_blas_release(grain_sched_t *s)
{
    for (unsigned r = 0; r < BLAS_ROUTINES; r++)
        grain_kernel_destroy(s->blas_kernel[r]);
    grain_program_destroy(s->blas_program);
}

/* Operands lie in their arrays from the first byte; `name` names one in a
 * refusal.  That x is an array of s; else its refusal. */
static grain_status_t ours(const grain_sched_t *s, const char *what, const char *name, const grain_array_t *x)
{
    if (x == NULL || x->sched != s)
        return grain_fail(GRAIN_ERR_INVALID, "%s: %s is %s", what, name,
                          x == NULL ? "no array" : "an array of another scheduler");
    return GRAIN_OK;
}

/* Whether (cols - 1) ld + rows elements of es bytes, cols and rows above 0,
 * fit `bytes`, without wrapping. */
static int fits(size_t rows, size_t cols, size_t ld, size_t es, size_t bytes)
{
    size_t limit = SIZE_MAX / es;
    return cols - 1 <= (limit - rows) / ld && ((cols - 1) * ld + rows) * es <= bytes;
}

/* A matrix operand of rows x cols elements of es bytes, column-major with
 * leading dimension ld. */
static grain_status_t matrix(const grain_sched_t *s, const char *what, const char *name, const grain_array_t *x,
                             size_t rows, size_t cols, size_t ld, size_t es)
{
    grain_status_t st = ours(s, what, name, x);
    if (st != GRAIN_OK)
        return st;
    if (ld < (rows > 0 ? rows : 1))
        return grain_fail(GRAIN_ERR_INVALID, "%s: %s's leading dimension is %zu, below its %zu rows",
                          what, name, ld, rows > 0 ? rows : (size_t)1);
    if (rows == 0 || cols == 0 || fits(rows, cols, ld, es, x->bytes))
        return GRAIN_OK;
    return grain_fail(GRAIN_ERR_INVALID,
                      "%s: %s, %zu x %zu elements of %zu bytes with a leading dimension of %zu, does not fit its "
                      "array of %zu bytes",
                      what, name, rows, cols, es, ld, x->bytes);
}

/* A vector operand of n elements of es bytes, inc (above 0) apart. */
static grain_status_t vector(const grain_sched_t *s, const char *what, const char *name, const grain_array_t *x,
                             size_t n, size_t inc, size_t es)
{
    grain_status_t st = ours(s, what, name, x);
    if (st != GRAIN_OK || n == 0 || fits(1, n, inc, es, x->bytes))
        return st;
    return grain_fail(GRAIN_ERR_INVALID, "%s: %s, %zu elements of %zu bytes %zu apart, does not fit its array of "
                      "%zu bytes", what, name, n, es, inc, x->bytes);
}

static int transpose_letter(char t)
{
    return t == 'N' || t == 'n' || blas_transposed(t);
}

enum { ALPHA_ZERO = 1, BETA_ZERO = 2 };

static grain_status_t gemm(grain_sched_t *s, grain_blas_routine_t r, const char *what, size_t es, char transa,
                           char transb, size_t m, size_t n, size_t k, const void *alpha, grain_array_t *a, size_t lda,
                           grain_array_t *b, size_t ldb, const void *beta, unsigned zero, grain_array_t *c,
                           size_t ldc)
{
    if (s == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "%s needs a scheduler", what);
    if (!transpose_letter(transa) || !transpose_letter(transb))
        return grain_fail(GRAIN_ERR_INVALID, "%s: transa and transb are 'N', 'T' or 'C'", what);
    int ta = blas_transposed(transa), tb = blas_transposed(transb);
    grain_status_t st = matrix(s, what, "A", a, ta ? k : m, ta ? m : k, lda, es);
    if (st == GRAIN_OK)
        st = matrix(s, what, "B", b, tb ? n : k, tb ? k : n, ldb, es);
    if (st == GRAIN_OK)
        st = matrix(s, what, "C", c, m, n, ldc, es);
    if (st == GRAIN_OK && (c == a || c == b))
        st = grain_fail(GRAIN_ERR_INVALID, "%s: C is also %s, which it reads while C is written", what,
                        c == a ? "A" : "B");
    if (st != GRAIN_OK || m == 0 || n == 0)
        return st;
    if (m > (SIZE_MAX - BLAS_TILE_WG) / n)
        return grain_fail(GRAIN_ERR_INVALID, "%s: C has %zu x %zu elements, more than a launch has work-items", what,
                          m, n);
    grain_kernel_t *kern = NULL;
    if ((st = blas_kernel(s, r, &kern)) != GRAIN_OK)
        return st;
    /* alpha == 0 reads neither A nor B (reference BLAS): no K step. */
    const uint64_t counts[8] = {ldc, lda, (uint64_t)ta, ldb, (uint64_t)tb, m, n, zero & ALPHA_ZERO ? 0 : k};
    /* Written only where the call leaves nothing of C's array as it was:
     * a kernel that writes an array is taken to write all of it, and its
     * old contents are not copied to the device. */
    int whole = (zero & BETA_ZERO) && ldc == m && m * n * es == c->bytes;
    grain_access_t c_access = whole ? GRAIN_WRITE : GRAIN_READ_WRITE;
    st = grain_kernel_set_arg_array(kern, BLAS_GEMM_C, c, c_access);
    /* Where alpha is 0 the kernel takes C in A's and B's places, as C is
     * taken: listed as read, A and B would order the element after their
     * writers and be copied to its device for nothing. */
    int unread = (zero & ALPHA_ZERO) != 0;
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg_array(kern, BLAS_GEMM_A, unread ? c : a, unread ? c_access : GRAIN_READ);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg_array(kern, BLAS_GEMM_B, unread ? c : b, unread ? c_access : GRAIN_READ);
    for (unsigned i = 0; i < 8 && st == GRAIN_OK; i++)
        st = grain_kernel_set_arg(kern, blas_gemm_counts_at[i], sizeof counts[i], &counts[i]);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(kern, BLAS_GEMM_ALPHA, es, alpha);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(kern, BLAS_GEMM_BETA, es, beta);
    return st == GRAIN_OK ? launch(s, kern, m * n) : st;
}

static grain_status_t axpy(grain_sched_t *s, grain_blas_routine_t r, const char *what, size_t es, size_t n,
                           const void *alpha, int alpha_zero, grain_array_t *x, size_t incx, grain_array_t *y,
                           size_t incy)
{
    if (s == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "%s needs a scheduler", what);
    if (incx == 0 || incy == 0)
        return grain_fail(GRAIN_ERR_INVALID, "%s: increments are positive (incx %zu, incy %zu)", what, incx, incy);
    grain_status_t st = vector(s, what, "x", x, n, incx, es);
    if (st == GRAIN_OK)
        st = vector(s, what, "y", y, n, incy, es);
    if (st == GRAIN_OK && x == y)
        st = grain_fail(GRAIN_ERR_INVALID, "%s: y is also x, which it reads while y is written", what);
    if (st != GRAIN_OK || n == 0 || alpha_zero) /* reference BLAS: y as it was, x not read */
        return st;
    grain_kernel_t *kern = NULL;
    if ((st = blas_kernel(s, r, &kern)) != GRAIN_OK)
        return st;
    const uint64_t counts[3] = {incy, incx, n};
    st = grain_kernel_set_arg_array(kern, BLAS_AXPY_Y, y, GRAIN_READ_WRITE);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg_array(kern, BLAS_AXPY_X, x, GRAIN_READ);
    for (unsigned i = 0; i < 3 && st == GRAIN_OK; i++)
        st = grain_kernel_set_arg(kern, blas_axpy_counts_at[i], sizeof counts[i], &counts[i]);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(kern, BLAS_AXPY_ALPHA, es, alpha);
    return st == GRAIN_OK ? launch(s, kern, n) : st;
}

grain_status_t grain_sched_dgemm(grain_sched_t *s, char transa, char transb, size_t m, size_t n, size_t k,
                                 double alpha, grain_array_t *a, size_t lda, grain_array_t *b, size_t ldb,
                                 double beta, grain_array_t *c, size_t ldc)
{
    return gemm(s, GRAIN_BLAS_DGEMM, "grain_sched_dgemm", sizeof(double), transa, transb, m, n, k, &alpha, a, lda, b,
                ldb, &beta, (alpha == 0.0 ? ALPHA_ZERO : 0u) | (beta == 0.0 ? BETA_ZERO : 0u), c, ldc);
}

grain_status_t grain_sched_sgemm(grain_sched_t *s, char transa, char transb, size_t m, size_t n, size_t k,
                                 float alpha, grain_array_t *a, size_t lda, grain_array_t *b, size_t ldb, float beta,
                                 grain_array_t *c, size_t ldc)
{
    return gemm(s, GRAIN_BLAS_SGEMM, "grain_sched_sgemm", sizeof(float), transa, transb, m, n, k, &alpha, a, lda, b,
                ldb, &beta, (alpha == 0.0f ? ALPHA_ZERO : 0u) | (beta == 0.0f ? BETA_ZERO : 0u), c, ldc);
}

grain_status_t grain_sched_daxpy(grain_sched_t *s, size_t n, double alpha, grain_array_t *x, size_t incx,
                                 grain_array_t *y, size_t incy)
{
    return axpy(s, GRAIN_BLAS_DAXPY, "grain_sched_daxpy", sizeof(double), n, &alpha, alpha == 0.0, x, incx, y, incy);
}

grain_status_t grain_sched_saxpy(grain_sched_t *s, size_t n, float alpha, grain_array_t *x, size_t incx,
                                 grain_array_t *y, size_t incy)
{
    return axpy(s, GRAIN_BLAS_SAXPY, "grain_sched_saxpy", sizeof(float), n, &alpha, alpha == 0.0f, x, incx, y,
                incy);
}
