/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Push-style PageRank through grain: every work-item owns one vertex of its
 * rank and adds the vertex's share of rank, in fixed point, to the
 * accumulator of each out-neighbour at the neighbour's owner.
 *
 * A vertex's edge list is a divergent per-lane loop: the work-group deals its
 * vertices' edges out to its lanes (../common/expand.h) and lanes without one
 * in the last round send with active = 0, so every grain_add64 is reached by
 * the whole work-group.
 *
 * The kernels push the edges in [e0, e1) of the vertices in [v0, v1): all of
 * them but under the coprocessor model, whose chunks must fit its per-node
 * queues.  The models differ only in the send (../common/model_send.h).
 */
#include "grain/device.h"
#include "../common/expand.h"
#include "../common/model_send.h"

#define PR_LOCAL_MASK ((((grain_u64)1) << 40) - 1) /* APP_DEST in partition.h */
#define PR_FIXED_ONE 4503599627370496.0        /* 2^52, FIXED_ONE in pagerank.c */

GRAIN_INLINE void pr_push_edges(const app_sender_t *s, app_expand_t *x, const grain_wg_t *wg,
                                GRAIN_GLOBAL grain_i64 *acc, GRAIN_GLOBAL const grain_u64 *offsets,
                                GRAIN_GLOBAL const grain_u64 *dest, GRAIN_GLOBAL const grain_i64 *share,
                                grain_u64 v0, grain_u64 v1, grain_u64 e0, grain_u64 e1)
{
    grain_u64 u = v0 + grain_global_linear_id();
    int mine = u < v1;
    grain_u64 begin = mine ? (offsets[u] > e0 ? offsets[u] : e0) : 0;
    grain_u64 end = mine ? (offsets[u + 1] < e1 ? offsets[u + 1] : e1) : 0;
    app_expand_start(x, wg, begin, end > begin ? end - begin : 0, mine ? share[u] : 0);
    for (grain_u64 r = 0; r * x->lanes < x->total; r++) {
        grain_u64 edge;
        grain_i64 value;
        int active = app_expand_edge(x, r, &edge, &value);
        grain_u64 d = active ? dest[edge] : 0;
        app_send_add64(s, wg, acc, d & PR_LOCAL_MASK, value, (int)(d >> 40), active);
    }
}

#define PR_PUSH_ARGS                                                                                    \
    GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *acc, GRAIN_GLOBAL const grain_u64 *offsets,               \
        GRAIN_GLOBAL const grain_u64 *dest, GRAIN_GLOBAL const grain_i64 *share, grain_u64 v0, grain_u64 v1, \
        grain_u64 e0, grain_u64 e1

GRAIN_KERNEL void pr_push(PR_PUSH_ARGS)
{
    GRAIN_WG_BEGIN(wg);
    APP_EXPAND_DECL(x);
    app_sender_t s = app_sender_grain();
    pr_push_edges(&s, &x, &wg, acc, offsets, dest, share, v0, v1, e0, e1);
}

GRAIN_KERNEL void pr_push_coalesced(PR_PUSH_ARGS)
{
    GRAIN_WG_BEGIN(wg);
    APP_EXPAND_DECL(x);
    APP_COALESCED_DECL(s);
    pr_push_edges(&s, &x, &wg, acc, offsets, dest, share, v0, v1, e0, e1);
}

GRAIN_KERNEL void pr_push_coprocessor(PR_PUSH_ARGS, GRAIN_GLOBAL grain_u64 *queue, GRAIN_GLOBAL grain_u64 *tails,
                                      grain_u64 capacity)
{
    GRAIN_WG_BEGIN(wg);
    APP_EXPAND_DECL(x);
    APP_PERNODE_DECL(s, queue, tails, capacity);
    pr_push_edges(&s, &x, &wg, acc, offsets, dest, share, v0, v1, e0, e1);
}

/*
 * The step between two pushes, on the device: with `update`, a vertex's new
 * rank from its accumulator (then zeroed for the next push) and the L1 change;
 * then the share it pushes next and, without out-edges, the rank it spreads
 * instead.  Each work-group leaves its sums of change and dangling rank in
 * sums[2 * group], fixed point like the shares, so that the totals are exact
 * whatever the rank count.
 */
GRAIN_KERNEL void pr_step(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *acc, GRAIN_GLOBAL double *x,
                          GRAIN_GLOBAL const grain_u64 *offsets, GRAIN_GLOBAL grain_i64 *share,
                          GRAIN_GLOBAL grain_i64 *sums, grain_u64 local_n, double base, double damping,
                          double dangling_each, int update)
{
    GRAIN_WG_BEGIN(wg);
    grain_u64 v = grain_global_linear_id();
    int mine = v < local_n;
    grain_i64 change = 0, dangling = 0;
    if (mine) {
        double old = x[v], next = old;
        if (update) {
            next = base + damping * ((double)acc[v] / PR_FIXED_ONE + dangling_each);
            acc[v] = 0;
            x[v] = next;
            change = (grain_i64)floor(fabs(next - old) * PR_FIXED_ONE + 0.5);
        }
        grain_u64 degree = offsets[v + 1] - offsets[v];
        grain_i64 fixed = (grain_i64)floor(next * PR_FIXED_ONE + 0.5);
        share[v] = degree == 0 ? 0 : (grain_i64)floor(next / (double)degree * PR_FIXED_ONE + 0.5);
        dangling = degree == 0 ? fixed : 0;
    }
    change = grain_wg_reduce_add(&wg, change, mine);
    dangling = grain_wg_reduce_add(&wg, dangling, mine);
    if (grain_local_linear_id() == 0) {
        sums[2 * grain_group_linear_id()] = change;
        sums[2 * grain_group_linear_id() + 1] = dangling;
    }
}
