/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SSSP by Bellman-Ford rounds through active messages.  Each round, every
 * vertex whose distance improved in the round before sends, along each
 * out-edge u -> v, its distance plus the edge's weight to v's owner, where
 * the handler min-updates v's distance and marks v improved.  Distances are
 * non-negative doubles carried as their bits, which order as the numbers do.
 *
 * The edge list is a divergent per-lane loop: the work-group deals its
 * frontier's edges out to its lanes (../common/expand.h) and lanes without
 * one in the last round send with active = 0 (software predication, Gravel
 * figure 10b).
 */
#define SSSP_RELAX 1
#define GRAIN_AM_HANDLERS(X) X(SSSP_RELAX, sssp_relax)
#include "grain/device.h"
#include "../common/expand.h"

#define SSSP_LOCAL_MASK ((((grain_u64)1) << 40) - 1) /* APP_DEST in partition.h */

/* a0: the heap offset of v's state, two words: its distance and whether it
 * improved; a1: the candidate distance. */
GRAIN_AM_HANDLER(sssp_relax)
{
    (void)src_pe;
    GRAIN_GLOBAL grain_i64 *state = (GRAIN_GLOBAL grain_i64 *)(heap + a0);
    if ((grain_i64)a1 < grain_heap_fetch_min_i64(state, (grain_i64)a1))
        grain_heap_store_u64(state + 1, 1u);
}

/* frontier[u]: the bits of u's distance if u improved last round, else -1. */
GRAIN_KERNEL void sssp_round(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *state,
                             GRAIN_GLOBAL const grain_u64 *offsets, GRAIN_GLOBAL const grain_u64 *dest,
                             GRAIN_GLOBAL const double *weight, GRAIN_GLOBAL const grain_i64 *frontier,
                             grain_u64 local_n)
{
    GRAIN_WG_BEGIN(wg);
    APP_EXPAND_DECL(x);
    app_expand_frontier(&x, &wg, offsets, frontier, local_n);
    for (grain_u64 r = 0; r * x.lanes < x.total; r++) {
        grain_u64 edge;
        grain_i64 du;
        int active = app_expand_edge(&x, r, &edge, &du);
        grain_u64 d = active ? dest[edge] : 0;
        double candidate = grain_bits_f64(du) + (active ? weight[edge] : 0.0);
        grain_am(&wg, SSSP_RELAX, grain_offset(&wg, state + 2 * (d & SSSP_LOCAL_MASK)),
                 (grain_u64)grain_f64_bits(candidate), (grain_i32)(d >> 40), active);
    }
}

/* The next round's frontier: the vertices whose distance improved, with the
 * distance they send; their flags are cleared before any rank sends again.
 * counts[group] is how many the work-group found. */
GRAIN_KERNEL void sssp_frontier(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *state, GRAIN_GLOBAL grain_i64 *frontier,
                                GRAIN_GLOBAL grain_i64 *counts, grain_u64 local_n)
{
    GRAIN_WG_BEGIN(wg);
    grain_u64 v = grain_global_linear_id();
    int on = 0;
    if (v < local_n) {
        on = state[2 * v + 1] != 0;
        frontier[v] = on ? state[2 * v] : -1;
        state[2 * v + 1] = 0;
    }
    grain_i64 found = grain_wg_reduce_add(&wg, on, v < local_n);
    if (grain_local_linear_id() == 0)
        counts[grain_group_linear_id()] = found;
}
