/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The deployment's fits (CoCoPeLia section IV-A): a link's latency t_i as
 * the median of one-byte copies (the paper's mean, but one copy that the
 * OS held up on a loaded machine would outweigh the rest and leave the
 * large copies less than their latency); its seconds a byte t_b by least squares
 * through the origin on (bytes, time - t_i) of square copies; the
 * bidirectional slowdown sl as t_b with a copy running the other way over
 * t_b alone; and the stopping rule of every micro-benchmark, repeat until
 * the 95% confidence interval of the mean lies within 5% of it.
 */
#ifndef GRAIN_RUNTIME_BLAS_BLAS_FIT_H
#define GRAIN_RUNTIME_BLAS_BLAS_FIT_H

#include <stddef.h>

double blas_mean(const double *x, size_t n);
/* The median of x, which it sorts. */
double blas_median(double *x, size_t n);
/* Least squares of y = t_b x through the origin, after taking t_i off y. */
double blas_fit_t_b(const double *bytes, const double *seconds, size_t n, double t_i);
/* Whether the 95% confidence interval of the mean of x (n >= 2) is within
 * `within` (0.05) of the mean: Student's t for few samples. */
int blas_mean_settled(const double *x, size_t n, double within);

#endif
