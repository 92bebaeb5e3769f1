/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Round trips of point-to-point synchronization (grain/device/sync.h): one
 * work-item puts i to its peer's flag and waits for its own flag to reach
 * i, the peer the other way round; and of fetching atomics, one fetch-add
 * after another to the peer's word.
 */
#include "grain/device.h"

/* On two ranks, through grain (the direct path or the transport). */
GRAIN_KERNEL void pingpong(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *flag, grain_u64 iters, grain_i32 peer,
                           grain_i32 first)
{
    GRAIN_WG_BEGIN(wg);
    for (grain_u64 i = 1; i <= iters; i++) {
        grain_wait_until64(&wg, flag, GRAIN_CMP_GE, (grain_i64)i, !first);
        grain_put64(&wg, flag, (grain_i64)i, peer, 1);
        grain_wait_until64(&wg, flag, GRAIN_CMP_GE, (grain_i64)i, first);
    }
}

/* The baseline: two work-groups of one kernel on one device, through two
 * heap words with plain atomic stores. */
GRAIN_KERNEL void pingpong_local(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *flags, grain_u64 iters)
{
    GRAIN_WG_BEGIN(wg);
    int first = grain_group_linear_id() == 0;
    GRAIN_GLOBAL grain_i64 *mine = &flags[first ? 0 : 1], *theirs = &flags[first ? 1 : 0];
    for (grain_u64 i = 1; i <= iters; i++) {
        grain_wait_until64(&wg, mine, GRAIN_CMP_GE, (grain_i64)i, !first);
        grain_heap_store_u64(theirs, i);
        grain_wait_until64(&wg, mine, GRAIN_CMP_GE, (grain_i64)i, first);
    }
}

/* Fetch-adds to the peer's word, each waiting for the one before; the sum
 * of what came back goes to `sum`, so that none is left out. */
GRAIN_KERNEL void fetch_chain(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *word, grain_u64 iters, grain_i32 peer,
                              GRAIN_GLOBAL grain_i64 *sum)
{
    GRAIN_WG_BEGIN(wg);
    grain_i64 s = 0;
    for (grain_u64 i = 0; i < iters; i++)
        s += grain_atomic_fetch_add64(&wg, word, 1, peer, 1);
    *sum = s;
}

/* The baseline: the same chain of plain atomics on this device's own word. */
GRAIN_KERNEL void fetch_chain_local(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *word, grain_u64 iters,
                                    GRAIN_GLOBAL grain_i64 *sum)
{
    (void)grain_ctx_;
    grain_i64 s = 0;
    for (grain_u64 i = 0; i < iters; i++)
        s += (grain_i64)grain_heap_rmw_u64(fetch_add, word, 1);
    *sum = s;
}
