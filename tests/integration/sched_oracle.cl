/* SPDX-License-Identifier: BSD-3-Clause */
/* Kernels of the scheduler's oracle test: updates that do not commute
 * (x = 3x + a and the like), so that any two run out of order leave
 * values that the order of the program alone gives. */
#include "grain/device/port.h"

GRAIN_KERNEL void scale3(GRAIN_GLOBAL grain_u64 *x, grain_u64 n, grain_u64 a)
{
    grain_u64 i = grain_global_linear_id();
    if (i < n)
        x[i] = x[i] * 3u + a;
}

GRAIN_KERNEL void mix3(GRAIN_GLOBAL grain_u64 *x, GRAIN_GLOBAL const grain_u64 *y, grain_u64 n, grain_u64 a)
{
    grain_u64 i = grain_global_linear_id();
    if (i < n)
        x[i] = x[i] * 3u + y[i] + a;
}

/* Writes every element of x: its old contents are never read. */
GRAIN_KERNEL void fill5(GRAIN_GLOBAL grain_u64 *x, GRAIN_GLOBAL const grain_u64 *y, grain_u64 n, grain_u64 a)
{
    grain_u64 i = grain_global_linear_id();
    if (i < n)
        x[i] = y[i] * 5u + a + i;
}

GRAIN_KERNEL void combine7(GRAIN_GLOBAL grain_u64 *x, GRAIN_GLOBAL const grain_u64 *y, GRAIN_GLOBAL const grain_u64 *z,
                          grain_u64 n, grain_u64 a)
{
    grain_u64 i = grain_global_linear_id();
    if (i < n)
        x[i] = (y[i] * 7u) ^ (z[i] + a);
}
