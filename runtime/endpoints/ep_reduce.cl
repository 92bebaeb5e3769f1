/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoints' reductions on the device (ep_coll_messages.c): acc[i] =
 * op(acc[i], in[i]) for i < n, op 0 sum, 1 min, 2 max (grain_op_t's
 * order).  Sums of signed integers wrap, as MPI's and the host's do.
 */
#include "grain/device/port.h"

#define REDUCE(name, type, sum)                                                                                   \
    GRAIN_KERNEL void name(GRAIN_GLOBAL type *acc, GRAIN_GLOBAL const type *in, grain_u64 n, grain_u32 op)       \
    {                                                                                                             \
        grain_u64 i = grain_global_linear_id();                                                                   \
        if (i >= n)                                                                                               \
            return;                                                                                               \
        type x = acc[i], y = in[i];                                                                               \
        acc[i] = op == 0 ? sum : op == 1 ? (y < x ? y : x) : (y > x ? y : x);                                     \
    }

REDUCE(grain_ep_reduce_i64, grain_i64, (grain_i64)((grain_u64)x + (grain_u64)y))
REDUCE(grain_ep_reduce_u64, grain_u64, x + y)
REDUCE(grain_ep_reduce_f64, double, x + y)
