/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Breadth-first search, Graph500's kernel 2, level by level with a
 * compare-and-swap on the parent array: every vertex of the last level
 * claims each neighbour v with grain_atomic_compare_swap64(parent[v], -1,
 * u) on v's owner (a native atomic on this rank and on the direct path, a
 * request and its reply through the transport), and the first to claim v
 * is its parent.  The owners then gather the next level from the parents
 * set since.
 *
 * The edges are dealt out to the work-group's lanes (../common/expand.h).
 */
#include "grain/device.h"
#include "../common/expand.h"

#define BFS_LOCAL_MASK ((((grain_u64)1) << 40) - 1) /* APP_DEST in partition.h */

/* parent[v] (symmetric): v's parent's vertex id, -1 while v is not reached.
 * frontier[u]: u's vertex id if u joined at the last level, else -1. */
GRAIN_KERNEL void bfs_level(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *parent, GRAIN_GLOBAL const grain_u64 *offsets,
                            GRAIN_GLOBAL const grain_u64 *dest, GRAIN_GLOBAL const grain_i64 *frontier,
                            grain_u64 local_n)
{
    GRAIN_WG_BEGIN(wg);
    APP_EXPAND_DECL(x);
    app_expand_frontier(&x, &wg, offsets, frontier, local_n);
    for (grain_u64 r = 0; r * x.lanes < x.total; r++) {
        grain_u64 edge;
        grain_i64 id;
        int active = app_expand_edge(&x, r, &edge, &id);
        grain_u64 d = active ? dest[edge] : 0;
        (void)grain_atomic_compare_swap64(&wg, &parent[d & BFS_LOCAL_MASK], -1, id, (grain_i32)(d >> 40), active);
    }
}

/* The next level: the vertices claimed since the last one get `depth` and
 * go into the frontier with their ids; counts[group] is how many the
 * work-group found. */
GRAIN_KERNEL void bfs_frontier(GRAIN_KERNEL_CTX, GRAIN_GLOBAL const grain_i64 *parent, GRAIN_GLOBAL grain_i64 *level,
                               GRAIN_GLOBAL grain_i64 *frontier, GRAIN_GLOBAL const grain_i64 *ids,
                               GRAIN_GLOBAL grain_i64 *counts, grain_u64 local_n, grain_i64 depth)
{
    GRAIN_WG_BEGIN(wg);
    grain_u64 v = grain_global_linear_id();
    int on = 0;
    if (v < local_n) {
        on = level[v] < 0 && parent[v] >= 0;
        if (on)
            level[v] = depth;
        frontier[v] = on ? ids[v] : -1;
    }
    grain_i64 found = grain_wg_reduce_add(&wg, on, v < local_n);
    if (grain_local_linear_id() == 0)
        counts[grain_group_linear_id()] = found;
}
