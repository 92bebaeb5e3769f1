/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BLAS calls as the task scheduler's elements against the reference BLAS's
 * loops on the host: a random program (a fixed seed) of dgemm, sgemm,
 * daxpy and saxpy calls over a few double and float arrays, with every
 * transpose, padded leading dimensions, increments, alpha and beta (0 among
 * them, with C holding NaN, which beta == 0 must never read, and A, B or x
 * holding NaN, which alpha == 0 must never read), host reads in
 * the middle, host writes that renew an array, and a gemm that writes all
 * of its C's array.  Values stay small integers, so every result is exact
 * whatever order or contraction a device sums in: each read must equal the
 * host's bit for bit.  Under round-robin with several devices, every
 * device must have run some.  --vendor-gemms says whether the devices'
 * vendor BLAS (CLBlast on PoCL) must have run some gemms or none.
 *
 *   sched_blas [--policy P] [--seed S] [--calls N] [--vendor-gemms some|none]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_ok.h"
#include "grain/sched.h"

#define ARRAYS 4 /* of each type */
#define SIDE 20  /* the largest m, n, k */
#define PAD 3    /* the most a leading dimension exceeds its rows */
#define ELEMS ((SIDE + PAD) * SIDE)
#define BOUND 4096.0 /* renewed above this: products of two stay exact in a float */

typedef struct matrix {
    grain_array_t *array;
    double host[ELEMS]; /* the reference's copy, in the array's type */
} matrix_t;

static uint64_t rng = 88172645463325252ull;

static unsigned pick(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static int failures;

/* The array's contents (`es` bytes an element) against the reference. */
static void compare(matrix_t *x, size_t es, const char *when)
{
    void *p;
    OK(grain_array_host(x->array, GRAIN_READ, &p));
    for (size_t i = 0; i < ELEMS; i++) {
        double got = es == sizeof(double) ? ((const double *)p)[i] : (double)((const float *)p)[i];
        int same = got == x->host[i] || (isnan(got) && isnan(x->host[i]));
        if (!same && failures++ < 10)
            fprintf(stderr, "sched_blas: %s: element %zu of a %s array is %g, expected %g\n", when, i,
                    es == sizeof(double) ? "double" : "float", got, x->host[i]);
    }
}

/* New small integers, or NaN (what a zero alpha or beta must not read), on
 * the host and in the array. */
static void renew(matrix_t *x, size_t es, int nan)
{
    void *p;
    OK(grain_array_host(x->array, GRAIN_WRITE, &p));
    for (size_t i = 0; i < ELEMS; i++) {
        x->host[i] = nan ? NAN : (double)pick(7) - 3.0;
        if (es == sizeof(double))
            ((double *)p)[i] = x->host[i];
        else
            ((float *)p)[i] = (float)x->host[i];
    }
}

static int too_large(const matrix_t *x)
{
    for (size_t i = 0; i < ELEMS; i++)
        if (fabs(x->host[i]) > BOUND)
            return 1;
    return 0;
}

/* The reference BLAS's gemm: C = alpha op(A) op(B) + beta C, reading
 * neither A nor B where alpha is 0, nor C where beta is. */
static void ref_gemm(int ta, int tb, size_t m, size_t n, size_t k, double alpha, const double *a, size_t lda,
                     const double *b, size_t ldb, double beta, double *c, size_t ldc)
{
    for (size_t j = 0; j < n; j++)
        for (size_t i = 0; i < m; i++) {
            double acc = 0;
            for (size_t l = 0; alpha != 0 && l < k; l++)
                acc += (ta ? a[i * lda + l] : a[l * lda + i]) * (tb ? b[l * ldb + j] : b[j * ldb + l]);
            c[j * ldc + i] = beta == 0 ? alpha * acc : alpha * acc + beta * c[j * ldc + i];
        }
}

static void gemm_call(grain_sched_t *s, matrix_t *set, size_t es)
{
    unsigned ia = pick(ARRAYS), ib = pick(ARRAYS), ic = pick(ARRAYS);
    while (ic == ia || ic == ib)
        ic = (ic + 1) % ARRAYS;
    matrix_t *a = &set[ia], *b = &set[ib], *c = &set[ic];
    int ta = (int)pick(2), tb = (int)pick(2);
    size_t m = 1 + pick(SIDE), n = 1 + pick(SIDE), k = pick(SIDE + 1); /* k == 0: C = beta C */
    size_t lda = (ta ? k : m) + pick(PAD + 1), ldb = (tb ? n : k) + pick(PAD + 1), ldc = m + pick(PAD + 1);
    lda = lda > 0 ? lda : 1;
    ldb = ldb > 0 ? ldb : 1;
    double alpha = (double)pick(5) - 2.0, beta = (double)pick(4) - 1.0;
    if (beta == 0 && pick(2))
        renew(c, es, 1);
    matrix_t *unread = alpha == 0 && pick(2) ? (pick(2) ? a : b) : NULL;
    if (unread != NULL)
        renew(unread, es, 1);
    ref_gemm(ta, tb, m, n, k, alpha, a->host, lda, b->host, ldb, beta, c->host, ldc);
    char la = ta ? (pick(2) ? 'T' : 'c') : 'N', lb = tb ? 't' : (pick(2) ? 'n' : 'N');
    if (es == sizeof(double))
        OK(grain_sched_dgemm(s, la, lb, m, n, k, alpha, a->array, lda, b->array, ldb, beta, c->array, ldc));
    else
        OK(grain_sched_sgemm(s, la, lb, m, n, k, (float)alpha, a->array, lda, b->array, ldb, (float)beta,
                             c->array, ldc));
    if (too_large(c))
        renew(c, es, 0);
    if (unread != NULL) /* its NaN would spread through every later call */
        renew(unread, es, 0);
}

/* C's whole array, NaN before, written with beta 0 (the scheduler then
 * copies nothing of it in). */
static void whole_call(grain_sched_t *s, matrix_t *set, size_t es)
{
    size_t m = SIDE + PAD, n = SIDE, k = 1 + pick(SIDE);
    renew(&set[2], es, 1);
    ref_gemm(0, 0, m, n, k, 1.0, set[0].host, m, set[1].host, k, 0.0, set[2].host, m);
    if (es == sizeof(double))
        OK(grain_sched_dgemm(s, 'N', 'N', m, n, k, 1.0, set[0].array, m, set[1].array, k, 0.0, set[2].array, m));
    else
        OK(grain_sched_sgemm(s, 'N', 'N', m, n, k, 1.0f, set[0].array, m, set[1].array, k, 0.0f, set[2].array, m));
    compare(&set[2], es, "a gemm over all of C");
}

/* A gemm with alpha 0 scales C alone: A and B, just written on the host,
 * are not copied to its device (nor does it wait for their writers). */
static void zero_alpha_call(grain_sched_t *s, matrix_t *set, size_t es)
{
    size_t m = SIDE, n = SIDE, k = SIDE;
    renew(&set[0], es, 1);
    renew(&set[1], es, 1);
    for (size_t i = 0; i < m * n; i++) /* C's columns lie m apart */
        set[2].host[i] *= 2.0;
    grain_sched_stats_t before, after;
    OK(grain_sched_stats(s, &before));
    if (es == sizeof(double))
        OK(grain_sched_dgemm(s, 'N', 'N', m, n, k, 0.0, set[0].array, m, set[1].array, k, 2.0, set[2].array, m));
    else
        OK(grain_sched_sgemm(s, 'N', 'N', m, n, k, 0.0f, set[0].array, m, set[1].array, k, 2.0f, set[2].array, m));
    OK(grain_sched_wait(s));
    OK(grain_sched_stats(s, &after));
    /* At most C in: A's and B's bytes would pass it. */
    if (after.bytes_copied - before.bytes_copied > ELEMS * es && failures++ < 10)
        fprintf(stderr, "sched_blas: a gemm with alpha 0 copied %llu bytes, more than C's %zu\n",
                (unsigned long long)(after.bytes_copied - before.bytes_copied), ELEMS * es);
    compare(&set[2], es, "a gemm with alpha 0");
    renew(&set[0], es, 0);
    renew(&set[1], es, 0);
}

static void axpy_call(grain_sched_t *s, matrix_t *set, size_t es)
{
    unsigned ix = pick(ARRAYS), iy = (ix + 1 + pick(ARRAYS - 1)) % ARRAYS;
    matrix_t *x = &set[ix], *y = &set[iy];
    size_t incx = 1 + pick(3), incy = 1 + pick(3), n = pick((ELEMS - 1) / 3 + 2); /* n == 0 does nothing */
    double alpha = (double)pick(5) - 2.0;
    int unread = alpha == 0 && pick(2); /* the reference BLAS returns at once */
    if (unread)
        renew(x, es, 1);
    for (size_t i = 0; alpha != 0 && i < n; i++)
        y->host[i * incy] += alpha * x->host[i * incx];
    if (es == sizeof(double))
        OK(grain_sched_daxpy(s, n, alpha, x->array, incx, y->array, incy));
    else
        OK(grain_sched_saxpy(s, n, (float)alpha, x->array, incx, y->array, incy));
    if (too_large(y))
        renew(y, es, 0);
    if (unread)
        renew(x, es, 0);
}

int main(int argc, char **argv)
{
    const char *policy_name = "round-robin", *vendor = NULL;
    unsigned calls = 200;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--policy") == 0)
            policy_name = argv[i + 1];
        else if (strcmp(argv[i], "--seed") == 0)
            rng += strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--calls") == 0)
            calls = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--vendor-gemms") == 0)
            vendor = argv[i + 1];
    }
    grain_policy_t policy;
    OK(grain_policy_parse(policy_name, &policy));
    grain_t *g;
    OK(grain_init(NULL, &g));
    grain_sched_t *s;
    OK(grain_sched_create(g, policy, &s));
    static matrix_t doubles[ARRAYS], floats[ARRAYS];
    for (unsigned i = 0; i < ARRAYS; i++) {
        OK(grain_array_create(s, ELEMS * sizeof(double), &doubles[i].array));
        OK(grain_array_create(s, ELEMS * sizeof(float), &floats[i].array));
        renew(&doubles[i], sizeof(double), 0);
        renew(&floats[i], sizeof(float), 0);
    }
    whole_call(s, doubles, sizeof(double));
    whole_call(s, floats, sizeof(float));
    zero_alpha_call(s, doubles, sizeof(double));
    zero_alpha_call(s, floats, sizeof(float));
    for (unsigned call = 0; call < calls; call++) {
        int dbl = (int)pick(2);
        matrix_t *set = dbl ? doubles : floats;
        size_t es = dbl ? sizeof(double) : sizeof(float);
        unsigned what = pick(10);
        if (what < 6)
            gemm_call(s, set, es);
        else if (what < 9)
            axpy_call(s, set, es);
        else
            compare(&set[pick(ARRAYS)], es, "a host read in the middle");
    }
    for (unsigned i = 0; i < ARRAYS; i++) {
        compare(&doubles[i], sizeof(double), "at the end");
        compare(&floats[i], sizeof(float), "at the end");
    }
    OK(grain_sched_wait(s));
    grain_sched_stats_t st;
    OK(grain_sched_stats(s, &st));
    unsigned used = 0, devices = grain_sched_devices(s);
    for (unsigned d = 0; d < devices; d++)
        used += st.per_device[d] > 0;
    if (policy == GRAIN_POLICY_ROUND_ROBIN && used != devices) {
        fprintf(stderr, "sched_blas: round-robin ran BLAS elements on %u of %u devices\n", used, devices);
        failures++;
    }
    if (vendor != NULL && (strcmp(vendor, "some") == 0) != (st.vendor_gemms > 0)) {
        fprintf(stderr, "sched_blas: %llu gemms by the vendor's BLAS, where %s were expected\n",
                (unsigned long long)st.vendor_gemms, vendor);
        failures++;
    }
    printf("sched_blas: %u calls, %s, %u device%s (%u used), %llu elements (%llu gemms by the vendor's BLAS), %llu "
           "bytes copied: %s\n", calls, policy_name, devices, devices == 1 ? "" : "s", used,
           (unsigned long long)st.elements, (unsigned long long)st.vendor_gemms, (unsigned long long)st.bytes_copied,
           failures == 0 ? "ok" : "FAILED");
    grain_sched_destroy(s);
    OK(grain_finalize(g));
    return failures == 0 ? 0 : 1;
}
