/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The HPCC RandomAccess update stream: x -> (x << 1) ^ (x < 0 ? POLY : 0),
 * POLY = 7, and HPCC_starts(n), the n-th element, by squaring the step
 * matrix.  Device code, also compiled on the host to replay the stream.
 */
#ifndef GUPS_STREAM_H
#define GUPS_STREAM_H

#include "grain/device/port.h"

#define GUPS_POLY ((grain_u64)7)
#define GUPS_PERIOD ((grain_i64)1317624576693539401)

GRAIN_INLINE grain_u64 gups_next(grain_u64 x)
{
    return (x << 1) ^ (((grain_i64)x < 0) ? GUPS_POLY : (grain_u64)0);
}

/* m2[i] = the stream element 2^(i+1) steps after 1: what gups_starts squares with. */
GRAIN_INLINE void gups_m2_table(grain_u64 *m2)
{
    grain_u64 x = 1;
    for (int i = 0; i < 64; i++) {
        m2[i] = x;
        x = gups_next(gups_next(x));
    }
}

/* The n-th element of the stream (HPCC_starts). */
GRAIN_INLINE grain_u64 gups_starts(grain_i64 n, GRAIN_GLOBAL const grain_u64 *m2)
{
    while (n < 0)
        n += GUPS_PERIOD;
    while (n > GUPS_PERIOD)
        n -= GUPS_PERIOD;
    if (n == 0)
        return 1;
    int i = 62;
    while (i >= 0 && !((n >> i) & 1))
        i--;
    grain_u64 ran = 2;
    while (i > 0) {
        grain_u64 t = 0;
        for (int j = 0; j < 64; j++)
            if ((ran >> j) & 1)
                t ^= m2[j];
        ran = t;
        i--;
        if ((n >> i) & 1)
            ran = gups_next(ran);
    }
    return ran;
}

#endif
