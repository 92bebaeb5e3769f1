/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Jones-Plassmann graph coloring with PUTs.  Every rank holds a color for
 * every vertex (-1: none yet) in the symmetric heap.  In a round, an
 * uncolored vertex whose priority beats every uncolored neighbour's takes the
 * smallest color no neighbour has, and PUTs it into the color array of every
 * rank that owns one of its neighbours (and its own).  Two neighbours never
 * both win a round, so a coloring read at any moment stays proper; a color,
 * once set, never changes, so reading one while PUTs land is safe.
 *
 * For the same reason a neighbour that let a vertex through once (colored,
 * or after it in priority) lets it through for good: a vertex resumes its
 * scan where the last round stopped, at the neighbour that held it back, and
 * a round costs the vertices' new edges, not all of their edges again.
 */
#include "grain/device.h"

GRAIN_INLINE grain_i32 color_of(GRAIN_GLOBAL grain_i32 *colors, grain_u64 v)
{
    return *(volatile GRAIN_GLOBAL grain_i32 *)&colors[v];
}

/* Whether u goes before v: larger priority, then larger id. */
GRAIN_INLINE int before(GRAIN_GLOBAL const grain_u64 *prio, grain_u64 u, grain_u64 v)
{
    return prio[u] > prio[v] || (prio[u] == prio[v] && u > v);
}

/* The smallest color none of u's neighbours has, in windows of 64 colors. */
GRAIN_INLINE grain_i32 smallest_free(GRAIN_GLOBAL grain_i32 *colors, GRAIN_GLOBAL const grain_u64 *target,
                                     grain_u64 begin, grain_u64 end)
{
    for (grain_i32 base = 0;; base += 64) {
        grain_u64 used = 0;
        for (grain_u64 k = begin; k < end; k++) {
            grain_i32 c = color_of(colors, target[k]);
            if (c >= base && c < base + 64)
                used |= ((grain_u64)1) << (c - base);
        }
        for (grain_i32 b = 0; b < 64; b++)
            if (((used >> b) & 1u) == 0)
                return base + b;
    }
}

GRAIN_KERNEL void color_round(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i32 *colors, GRAIN_GLOBAL const grain_u64 *prio,
                              GRAIN_GLOBAL const grain_u64 *vertex, GRAIN_GLOBAL const grain_u64 *offsets,
                              GRAIN_GLOBAL const grain_u64 *target, GRAIN_GLOBAL const grain_u64 *rank_offsets,
                              GRAIN_GLOBAL const grain_u32 *ranks, GRAIN_GLOBAL grain_u64 *scanned,
                              GRAIN_GLOBAL grain_i64 *left, grain_u64 local_n)
{
    GRAIN_WG_BEGIN(wg);
    grain_u64 k = grain_global_linear_id();
    grain_u64 u = k < local_n ? vertex[k] : 0;
    grain_i32 chosen = -1;
    int waits = 0;
    if (k < local_n && color_of(colors, u) < 0) {
        grain_u64 begin = offsets[k], end = offsets[k + 1], e = begin + scanned[k];
        while (e < end && (color_of(colors, target[e]) >= 0 || before(prio, u, target[e])))
            e++;
        scanned[k] = e - begin;
        if (e == end)
            chosen = smallest_free(colors, target, begin, end);
        else
            waits = 1;
    }
    /* The vertices of this work-group left for the next round. */
    grain_i64 still = grain_wg_reduce_add(&wg, waits, 1);
    if (grain_local_linear_id() == 0)
        left[grain_group_linear_id()] = still;
    /* The broadcast is a divergent loop over the vertex's ranks: predicated. */
    grain_u64 first = chosen >= 0 ? rank_offsets[k] : 0;
    grain_u64 count = chosen >= 0 ? rank_offsets[k + 1] - first : 0;
    grain_u64 most = (grain_u64)grain_wg_reduce_max(&wg, (grain_i64)count, 1);
    for (grain_u64 i = 0; i < most; i++) {
        int active = i < count;
        grain_put32(&wg, &colors[u], chosen, active ? (grain_i32)ranks[first + i] : 0, active);
    }
}
