/* SPDX-License-Identifier: BSD-3-Clause */
#include "grain/device.h"

/* Every work-item sends `per_wi` increments to its own rank: the whole send
 * path (reservation, slot write, aggregator drain, apply) without the network. */
GRAIN_KERNEL void bench_send(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *counters, grain_u32 per_wi)
{
    GRAIN_WG_BEGIN(wg);
    grain_u64 gid = grain_global_linear_id();
    for (grain_u32 i = 0; i < per_wi; i++)
        grain_inc64(&wg, &counters[(gid + i) % 64], grain_my_pe(&wg), 1);
}

/* Every work-item sends `per_wi` adds spread over PEs 1 .. dests: the send
 * path through the aggregators into per-destination buffers
 * (aggregator_bench --gpu). */
GRAIN_KERNEL void bench_pipeline(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *table, grain_u32 per_wi,
                                 grain_u32 dests)
{
    GRAIN_WG_BEGIN(wg);
    grain_u64 gid = grain_global_linear_id();
    for (grain_u32 i = 0; i < per_wi; i++)
        grain_add64(&wg, &table[(gid + i) % 64], (grain_i64)i, 1 + (grain_i32)((gid + i) % dests), 1);
}

/* The same with increments, whose value row is never written: what GUPS
 * sends (aggregator_bench --gpu --inc). */
GRAIN_KERNEL void bench_pipeline_inc(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *table, grain_u32 per_wi,
                                     grain_u32 dests)
{
    GRAIN_WG_BEGIN(wg);
    grain_u64 gid = grain_global_linear_id();
    for (grain_u32 i = 0; i < per_wi; i++)
        grain_inc64(&wg, &table[(gid + i) % 64], 1 + (grain_i32)((gid + i) % dests), 1);
}

/* The queue alone (Gravel, figure 8): every work-item writes `per_wi`
 * messages of `rows` words through grain's reservation into a queue the
 * benchmark drains itself.  Message m carries the words m, m+1, ... */
GRAIN_KERNEL void bench_queue(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_queue_desc_t *qd, grain_u32 per_wi)
{
    GRAIN_WG_BEGIN(wg);
    grain_u32 rows = qd->geom.rows, width = qd->geom.width;
    grain_u64 gid = grain_global_linear_id();
    for (grain_u32 i = 0; i < per_wi; i++) {
        grain_slot_t s = grain_wg_reserve_(&wg, qd, 1, 0, 0, 0);
        GRAIN_GLOBAL grain_u64 *p = grain_slot_word_(qd, s, s.col);
        grain_u64 m = gid * per_wi + i;
        for (grain_u32 r = 0; r < rows; r++)
            p[(grain_u64)r * width] = m + r;
        grain_wg_publish_(qd, s);
    }
}

/* The ceiling: the same stores into the same kind of memory, slot after
 * slot of a buffer of `nslots` slots, with no queue protocol and no reader. */
GRAIN_KERNEL void bench_store(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_u64 *buf, grain_u64 nslots,
                              grain_u32 rows, grain_u32 per_wi)
{
    grain_u32 width = grain_local_linear_size(), lane = grain_local_linear_id();
    grain_u64 gid = grain_global_linear_id(), group = grain_group_linear_id();
    for (grain_u32 i = 0; i < per_wi; i++) {
        GRAIN_GLOBAL grain_u64 *p = buf + ((group * per_wi + i) % nslots) * rows * width + lane;
        grain_u64 m = gid * per_wi + i;
        for (grain_u32 r = 0; r < rows; r++)
            p[(grain_u64)r * width] = m + r;
    }
}
