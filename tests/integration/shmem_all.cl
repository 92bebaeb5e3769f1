/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The OpenSHMEM test-suite idea on grain's device API: every active
 * work-item of every rank sends every kind of message to every rank, active
 * messages to a host handler and to a device handler.
 */
#include "shmem_all_pattern.h"
#define GRAIN_AM_HANDLERS(X) X(SHMEM_ALL_DEVICE_AM, add_at_device)
#include "grain/device.h"

GRAIN_AM_HANDLER(add_at_device)
{
    (void)src_pe;
    grain_heap_add_u64(heap + a0, a1);
}

GRAIN_KERNEL void shmem_all(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *cnt, GRAIN_GLOBAL grain_i32 *cnt32,
                            GRAIN_GLOBAL grain_i64 *sum, GRAIN_GLOBAL grain_i32 *sum32,
                            GRAIN_GLOBAL grain_i64 *puts, GRAIN_GLOBAL grain_i32 *puts32,
                            GRAIN_GLOBAL grain_i64 *am_sum, GRAIN_GLOBAL grain_i64 *divergent,
                            grain_u32 pattern, grain_u32 handler, GRAIN_GLOBAL grain_i64 *am_device_sum)
{
    GRAIN_WG_BEGIN(wg);
    grain_u32 me = (grain_u32)grain_my_pe(&wg);
    int n = grain_n_pes(&wg);
    grain_u64 gid = grain_global_linear_id();
    grain_u64 items = grain_global_linear_size();
    int act = pattern_active(pattern, me, gid, grain_local_linear_id());
    grain_u64 slot = me * items + gid;
    for (int pe = 0; pe < n; pe++) {
        grain_inc64(&wg, cnt, pe, act);
        grain_inc32(&wg, cnt32, pe, act);
        grain_add64(&wg, sum, (grain_i64)gid + 1, pe, act);
        grain_add32(&wg, sum32, (grain_i32)(gid % 1000), pe, act);
        grain_put64(&wg, &puts[slot], put_value(me, gid), pe, act);
        grain_put32(&wg, &puts32[slot], (grain_i32)put_value(me, gid), pe, act);
        grain_am(&wg, handler, grain_offset(&wg, am_sum), me + 1, pe, act);
        grain_am(&wg, SHMEM_ALL_DEVICE_AM, grain_offset(&wg, am_device_sum), me + 1, pe, act);
    }
    /* Software predication of a loop whose trip count differs per lane
     * (Gravel, figure 10b). */
    grain_i64 trips = act ? lane_trips(me, gid) : 0;
    grain_i64 rounds = grain_wg_reduce_max(&wg, trips, 1);
    for (grain_i64 i = 0; i < rounds; i++)
        grain_inc64(&wg, &divergent[gid % (grain_u64)n], (int)(gid % (grain_u64)n), i < trips);
}
