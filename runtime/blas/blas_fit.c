/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/blas/blas_fit.h"

#include <math.h>

double blas_mean(const double *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return n > 0 ? s / (double)n : 0.0;
}

double blas_median(double *x, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && x[j - 1] > x[j]; j--) {
            double t = x[j];
            x[j] = x[j - 1];
            x[j - 1] = t;
        }
    return n == 0 ? 0.0 : n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

double blas_fit_t_b(const double *bytes, const double *seconds, size_t n, double t_i)
{
    double xy = 0.0, xx = 0.0;
    for (size_t i = 0; i < n; i++) {
        xy += bytes[i] * (seconds[i] - t_i);
        xx += bytes[i] * bytes[i];
    }
    return xx > 0.0 ? xy / xx : 0.0;
}

/* Student's t at 97.5% for n - 1 degrees of freedom (1 to 30), then the
 * normal's 1.96. */
static double t975(size_t dof)
{
    static const double t[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                               2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                               2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    return dof >= 1 && dof <= 30 ? t[dof - 1] : 1.96;
}

int blas_mean_settled(const double *x, size_t n, double within)
{
    if (n < 2)
        return 0;
    double mean = blas_mean(x, n), ss = 0.0;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - mean) * (x[i] - mean);
    double half = t975(n - 1) * sqrt(ss / (double)(n - 1)) / sqrt((double)n);
    return half <= within * fabs(mean);
}
