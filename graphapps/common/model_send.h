/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device code: one send call, three networking models (Gravel, section 3),
 * so that an app's kernel is written once and compared under each:
 *
 * - grain (and message-per-lane, which differs only in GRAIN_AGGREGATION):
 *   every lane sends its own message, grain_add64;
 * - coalesced APIs (figure 4c): the work-group counting-sorts its lanes'
 *   messages by destination in local memory, then sends each destination's
 *   list as one work-group send, lanes past the list inactive;
 * - coprocessor (figure 4a): lanes append (index, value) pairs to per-node
 *   queues in device memory, reserving space with a work-group prefix sum
 *   per destination; the host ships the queues between launches
 *   (coprocessor.c).  A lane's message to its own rank is a device atomic.
 *
 *   app_sender_t s = app_sender_grain();                  or
 *   APP_COALESCED_DECL(s);                                at kernel scope, or
 *   APP_PERNODE_DECL(s, queue, tails, capacity);
 *   ... app_send_add64(&s, &wg, base, index, value, pe, active);   uniform
 *   (or app_send_inc64 without the value)
 */
#ifndef GRAIN_GRAPHAPPS_MODEL_SEND_H
#define GRAIN_GRAPHAPPS_MODEL_SEND_H

#define APP_MODEL_GRAIN 0
#define APP_MODEL_COALESCED 1
#define APP_MODEL_PERNODE 2

/* The ranks a coalesced work-group sorts into (the apps refuse more). */
#define APP_COALESCED_MAX_PES 256

typedef struct app_sender {
    int model;
    GRAIN_LOCAL grain_u32 *count; /* coalesced: per destination; per-node: [0] the reserved base */
    GRAIN_LOCAL grain_u32 *start;
    GRAIN_LOCAL grain_u64 *index; /* coalesced: the group's messages, sorted by destination */
    GRAIN_LOCAL grain_i64 *value;
    GRAIN_GLOBAL grain_u64 *queue; /* per-node: n_pes queues of `capacity` (index, value) pairs */
    GRAIN_GLOBAL grain_u64 *tails;
    grain_u64 capacity;
} app_sender_t;

GRAIN_INLINE app_sender_t app_sender_grain(void)
{
    app_sender_t s;
    s.model = APP_MODEL_GRAIN;
    return s;
}

#define APP_COALESCED_DECL(s)                                         \
    GRAIN_LOCAL_DECL grain_u32 s##_count_[APP_COALESCED_MAX_PES];     \
    GRAIN_LOCAL_DECL grain_u32 s##_start_[APP_COALESCED_MAX_PES];     \
    GRAIN_LOCAL_DECL grain_u64 s##_index_[GRAIN_MAX_WG];              \
    GRAIN_LOCAL_DECL grain_i64 s##_value_[GRAIN_MAX_WG];              \
    app_sender_t s;                                                   \
    s.model = APP_MODEL_COALESCED;                                    \
    s.count = s##_count_;                                             \
    s.start = s##_start_;                                             \
    s.index = s##_index_;                                             \
    s.value = s##_value_

#define APP_PERNODE_DECL(s, queue_, tails_, capacity_)                \
    GRAIN_LOCAL_DECL grain_u32 s##_base_[1];                          \
    app_sender_t s;                                                   \
    s.model = APP_MODEL_PERNODE;                                      \
    s.count = s##_base_;                                              \
    s.queue = (queue_);                                               \
    s.tails = (tails_);                                               \
    s.capacity = (capacity_)

/* Figure 4c: sort by destination (a prefix sum per destination gives each
 * lane its place, and the last lane's the count), then one send per
 * destination present. */
GRAIN_INLINE void app_coalesced_add64(const app_sender_t *s, const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *base,
                                      grain_u64 index, grain_i64 value, int pe, int active)
{
    grain_u32 lane = grain_local_linear_id(), last = grain_local_linear_size() - 1;
    int n_pes = grain_n_pes(wg);
    grain_u32 mine = 0;
    for (int p = 0; p < n_pes; p++) {
        int to_p = active && pe == p;
        grain_i64 upto = grain_wg_scan_inclusive_add(wg, to_p, 1);
        if (to_p)
            mine = (grain_u32)upto - 1;
        if (lane == last)
            s->count[p] = (grain_u32)upto;
    }
    grain_wg_barrier();
    if (lane == 0) {
        grain_u32 at = 0;
        for (int p = 0; p < n_pes; p++) {
            s->start[p] = at;
            at += s->count[p];
        }
    }
    grain_wg_barrier();
    if (active) {
        s->index[s->start[pe] + mine] = index;
        s->value[s->start[pe] + mine] = value;
    }
    grain_wg_barrier();
    for (int p = 0; p < n_pes; p++) {
        grain_u32 n = s->count[p]; /* the same in every lane */
        if (n == 0)
            continue;
        grain_u32 at = s->start[p] + (lane < n ? lane : 0);
        grain_add64(wg, &base[s->index[at]], s->value[at], p, lane < n);
    }
    /* The next call's sort overwrites the lists. */
    grain_wg_barrier();
}

/* Figure 4a's kernel side: a work-group reservation per destination, made
 * by the last lane, which holds the group's count from the prefix sum. */
GRAIN_INLINE void app_pernode_add64(const app_sender_t *s, const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *base,
                                    grain_u64 index, grain_i64 value, int pe, int active)
{
    int me = grain_my_pe(wg), n_pes = grain_n_pes(wg);
    if (active && pe == me)
        grain_heap_add_u64((GRAIN_GLOBAL grain_u64 *)&base[index], (grain_u64)value);
    for (int p = 0; p < n_pes; p++) {
        int to_p = active && pe == p && p != me;
        grain_i64 upto = grain_wg_scan_inclusive_add(wg, to_p, 1);
        if (grain_local_linear_id() == grain_local_linear_size() - 1 && upto > 0)
            s->count[0] = (grain_u32)grain_atomic_fetch_add_dev_u64(&s->tails[p], (grain_u64)upto);
        grain_wg_barrier();
        if (to_p) {
            grain_u64 at = ((grain_u64)p * s->capacity + s->count[0] + (grain_u64)upto - 1) * 2;
            s->queue[at] = index;
            s->queue[at + 1] = (grain_u64)value;
        }
        grain_wg_barrier();
    }
}

/* The model's send of `value` to be added to base[index] at rank `pe`;
 * every lane of the work-group calls it. */
GRAIN_INLINE void app_send_add64(const app_sender_t *s, const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *base,
                                 grain_u64 index, grain_i64 value, int pe, int active)
{
    if (s->model == APP_MODEL_COALESCED)
        app_coalesced_add64(s, wg, base, index, value, pe, active);
    else if (s->model == APP_MODEL_PERNODE)
        app_pernode_add64(s, wg, base, index, value, pe, active);
    else
        grain_add64(wg, &base[index], value, pe, active);
}

/* An increment: grain's own increment message under grain's model (8 bytes
 * on the wire against an add's 16), an add of 1 under the others, whose
 * lists and queues carry (index, value) pairs. */
GRAIN_INLINE void app_send_inc64(const app_sender_t *s, const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *base,
                                 grain_u64 index, int pe, int active)
{
    if (s->model == APP_MODEL_GRAIN)
        grain_inc64(wg, &base[index], pe, active);
    else
        app_send_add64(s, wg, base, index, 1, pe, active);
}

/* The receiving side of the per-node queues: the pairs that arrived,
 * applied by device atomics. */
GRAIN_KERNEL void app_pernode_apply(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *base,
                                    GRAIN_GLOBAL const grain_u64 *pairs, grain_u64 count)
{
    (void)grain_ctx_;
    grain_u64 i = grain_global_linear_id();
    if (i < count)
        grain_heap_add_u64((GRAIN_GLOBAL grain_u64 *)&base[pairs[2 * i]], pairs[2 * i + 1]);
}

#endif
