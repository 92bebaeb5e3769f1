/* SPDX-License-Identifier: BSD-3-Clause */
/* The kernels of the scheduler's benchmarks (sched_suite.c), after GrCUDA's
 * suite ("Taming Multi-GPU Greedy Scheduling Through a Polyglot Runtime",
 * section IV-B); sched_suite.c runs the same arithmetic on the host, in the
 * same order, to check them. */
#include "grain/device/port.h"

#define ID grain_global_linear_id()

/* VEC, and CG's sums: out = in * in. */
GRAIN_KERNEL void square(GRAIN_GLOBAL double *out, GRAIN_GLOBAL const double *in, grain_u64 n)
{
    grain_u64 i = ID;
    if (i < n)
        out[i] = in[i] * in[i];
}

/* Partial p of sum_i a[i] * b[i] (sign -1: of a[i] - b[i]), over i = p,
 * p + parts, ...: a fixed order, so the host gets the same bits. */
GRAIN_KERNEL void partials(GRAIN_GLOBAL double *part, GRAIN_GLOBAL const double *a, GRAIN_GLOBAL const double *b,
                           grain_u64 n, grain_u64 parts, grain_u64 diff)
{
    grain_u64 p = ID;
    if (p >= parts)
        return;
    double s = 0.0;
    for (grain_u64 i = p; i < n; i += parts)
        s += diff ? a[i] - b[i] : a[i] * b[i];
    part[p] = s;
}

GRAIN_KERNEL void sum(GRAIN_GLOBAL double *out, GRAIN_GLOBAL const double *part, grain_u64 parts)
{
    if (ID != 0)
        return;
    double s = 0.0;
    for (grain_u64 p = 0; p < parts; p++)
        s += part[p];
    out[0] = s;
}

/* B&S: the price of a European call, the cumulative normal by the
 * Abramowitz-Stegun polynomial (no erf: the same code on every backend). */
GRAIN_KERNEL void black_scholes(GRAIN_GLOBAL double *call, GRAIN_GLOBAL const double *spot, grain_u64 n)
{
    grain_u64 i = ID;
    if (i >= n)
        return;
    const double strike = 100.0, rate = 0.02, vol = 0.3, years = 1.0;
    double s = spot[i], sq = vol * sqrt(years);
    double d1 = (log(s / strike) + (rate + 0.5 * vol * vol) * years) / sq, d2 = d1 - sq, cnd[2], d[2] = {d1, d2};
    for (int k = 0; k < 2; k++) {
        double x = fabs(d[k]), t = 1.0 / (1.0 + 0.2316419 * x);
        double poly = t * (0.319381530 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
        double c = 1.0 - 0.3989422804014327 * exp(-0.5 * x * x) * poly;
        cnd[k] = d[k] < 0.0 ? 1.0 - c : c;
    }
    call[i] = s * cnd[0] - strike * exp(-rate * years) * cnd[1];
}

/* MUL and CG: y = A x for rows [0, rows) of A (cols wide). */
GRAIN_KERNEL void matvec(GRAIN_GLOBAL double *y, GRAIN_GLOBAL const double *a, GRAIN_GLOBAL const double *x,
                         grain_u64 rows, grain_u64 cols)
{
    grain_u64 r = ID;
    if (r >= rows)
        return;
    double s = 0.0;
    for (grain_u64 c = 0; c < cols; c++)
        s += a[r * cols + c] * x[c];
    y[r] = s;
}

/* ML: scores[r][k] = sum_f x[r][f] * w[k][f]. */
GRAIN_KERNEL void scores(GRAIN_GLOBAL double *out, GRAIN_GLOBAL const double *x, GRAIN_GLOBAL const double *w,
                         grain_u64 rows, grain_u64 feats, grain_u64 classes)
{
    grain_u64 i = ID;
    if (i >= rows * classes)
        return;
    grain_u64 r = i / classes, k = i % classes;
    double s = 0.0;
    for (grain_u64 f = 0; f < feats; f++)
        s += x[r * feats + f] * w[k * feats + f];
    out[i] = s;
}

/* ML: each row of s to exp(s - max) / sum (softmax). */
GRAIN_KERNEL void softmax(GRAIN_GLOBAL double *s, grain_u64 rows, grain_u64 classes)
{
    grain_u64 r = ID;
    if (r >= rows)
        return;
    double top = s[r * classes];
    for (grain_u64 k = 1; k < classes; k++)
        top = fmax(top, s[r * classes + k]);
    double total = 0.0;
    for (grain_u64 k = 0; k < classes; k++) {
        s[r * classes + k] = exp(s[r * classes + k] - top);
        total += s[r * classes + k];
    }
    for (grain_u64 k = 0; k < classes; k++)
        s[r * classes + k] /= total;
}

/* ML: the class of the larger summed score. */
GRAIN_KERNEL void argmax2(GRAIN_GLOBAL double *label, GRAIN_GLOBAL const double *a, GRAIN_GLOBAL const double *b,
                          grain_u64 rows, grain_u64 classes)
{
    grain_u64 r = ID;
    if (r >= rows)
        return;
    grain_u64 best = 0;
    for (grain_u64 k = 1; k < classes; k++)
        if (a[r * classes + k] + b[r * classes + k] > a[r * classes + best] + b[r * classes + best])
            best = k;
    label[r] = (double)best;
}

/* CG: x += sign * (num / den) * p, with num and den one-element arrays. */
GRAIN_KERNEL void axpy_ratio(GRAIN_GLOBAL double *x, GRAIN_GLOBAL const double *p, GRAIN_GLOBAL const double *num,
                             GRAIN_GLOBAL const double *den, grain_u64 n, grain_u64 negate)
{
    grain_u64 i = ID;
    if (i < n)
        x[i] += (negate ? -1.0 : 1.0) * (num[0] / den[0]) * p[i];
}

/* CG: p = r + (num / den) * p. */
GRAIN_KERNEL void xpay_ratio(GRAIN_GLOBAL double *p, GRAIN_GLOBAL const double *r, GRAIN_GLOBAL const double *num,
                             GRAIN_GLOBAL const double *den, grain_u64 n)
{
    grain_u64 i = ID;
    if (i < n)
        p[i] = r[i] + (num[0] / den[0]) * p[i];
}

/* CG: dst = src, both one element. */
GRAIN_KERNEL void copy1(GRAIN_GLOBAL double *dst, GRAIN_GLOBAL const double *src)
{
    if (ID == 0)
        dst[0] = src[0];
}
