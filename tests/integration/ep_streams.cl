/* SPDX-License-Identifier: BSD-3-Clause */
/* Kernels of the endpoint stream test: each element depends on the ones
 * before it in a chain of commands, so that a command run out of order
 * leaves a value no order but the right one gives. */
#include "grain/device/port.h"

/* x[i] = x[i] * mul + add */
GRAIN_KERNEL void affine(GRAIN_GLOBAL grain_u64 *x, grain_u64 mul, grain_u64 add, grain_u64 n)
{
    grain_u64 i = grain_global_linear_id();
    if (i < n)
        x[i] = x[i] * mul + add;
}

/* x[i] += y[i] */
GRAIN_KERNEL void accumulate(GRAIN_GLOBAL grain_u64 *x, GRAIN_GLOBAL const grain_u64 *y, grain_u64 n)
{
    grain_u64 i = grain_global_linear_id();
    if (i < n)
        x[i] += y[i];
}
