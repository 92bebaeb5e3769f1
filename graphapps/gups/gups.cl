/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * GUPS through grain: every update is an atomic increment at the rank that
 * owns the table entry (Gravel, figure 4b).  Work-item w of this rank
 * applies updates [first + w * per_wi, first + (w + 1) * per_wi) of the
 * global stream; the loop bound is uniform and lanes past the end of the
 * rank's share pass active = 0 (software predication).
 *
 * The same updates under the prior networking models (--model) differ only
 * in the send (../common/model_send.h).
 */
#include "grain/device.h"
#include "gups_stream.h"
#include "../common/model_send.h"

GRAIN_INLINE void gups_updates(const app_sender_t *s, const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *table,
                               GRAIN_GLOBAL const grain_u64 *m2, grain_u64 first, grain_u64 count,
                               grain_u64 per_wi, grain_u64 local_entries, grain_u64 mask)
{
    grain_u64 begin = grain_global_linear_id() * per_wi;
    grain_u64 mine = begin >= count ? 0 : (count - begin < per_wi ? count - begin : per_wi);
    grain_u64 ran = gups_starts((grain_i64)(first + begin), m2);
    for (grain_u64 i = 0; i < per_wi; i++) {
        ran = gups_next(ran);
        grain_u64 index = ran & mask;
        app_send_inc64(s, wg, table, index % local_entries, (int)(index / local_entries), i < mine);
    }
}

GRAIN_KERNEL void gups(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *table, GRAIN_GLOBAL const grain_u64 *m2,
                       grain_u64 first, grain_u64 count, grain_u64 per_wi, grain_u64 local_entries, grain_u64 mask)
{
    GRAIN_WG_BEGIN(wg);
    app_sender_t s = app_sender_grain();
    gups_updates(&s, &wg, table, m2, first, count, per_wi, local_entries, mask);
}

GRAIN_KERNEL void gups_coalesced(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *table, GRAIN_GLOBAL const grain_u64 *m2,
                                 grain_u64 first, grain_u64 count, grain_u64 per_wi, grain_u64 local_entries,
                                 grain_u64 mask)
{
    GRAIN_WG_BEGIN(wg);
    APP_COALESCED_DECL(s);
    gups_updates(&s, &wg, table, m2, first, count, per_wi, local_entries, mask);
}

GRAIN_KERNEL void gups_coprocessor(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *table, GRAIN_GLOBAL const grain_u64 *m2,
                                   grain_u64 first, grain_u64 count, grain_u64 per_wi, grain_u64 local_entries,
                                   grain_u64 mask, GRAIN_GLOBAL grain_u64 *queue, GRAIN_GLOBAL grain_u64 *tails,
                                   grain_u64 capacity)
{
    GRAIN_WG_BEGIN(wg);
    APP_PERNODE_DECL(s, queue, tails, capacity);
    gups_updates(&s, &wg, table, m2, first, count, per_wi, local_entries, mask);
}

/* The baseline of --baseline (one rank): the same updates as plain device
 * atomics on the table, no grain in between. */
GRAIN_KERNEL void gups_plain(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *table,
                             GRAIN_GLOBAL const grain_u64 *m2, grain_u64 first, grain_u64 count,
                             grain_u64 per_wi, grain_u64 local_entries, grain_u64 mask)
{
    (void)grain_ctx_;
    grain_u64 begin = grain_global_linear_id() * per_wi;
    grain_u64 mine = begin >= count ? 0 : (count - begin < per_wi ? count - begin : per_wi);
    grain_u64 ran = gups_starts((grain_i64)(first + begin), m2);
    for (grain_u64 i = 0; i < mine; i++) {
        ran = gups_next(ran);
        grain_heap_add_u64(&table[(ran & mask) % local_entries], 1u);
    }
}
