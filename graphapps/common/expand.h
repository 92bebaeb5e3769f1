/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device code: a work-group's edge lists dealt out evenly to its lanes.
 *
 * A lane per vertex that walks its own edges makes the work-group loop to its
 * largest degree, every send a collective of the whole group.  On a Kronecker
 * graph a hub then keeps 255 lanes idle for thousands of sends: pagerank on a
 * scale-14 graph took 70 s for 20 iterations on PoCL.  Instead the group
 * numbers all its vertices' edges with a prefix sum and hands out 256 a
 * round; only the last round has idle lanes, which send with active = 0
 * (software predication, Gravel, figure 10b).
 *
 *   APP_EXPAND_DECL(x);                                  at kernel scope
 *   app_expand_start(&x, &wg, begin, degree, value);     every lane
 *     (or app_expand_frontier for the vertices of a frontier)
 *   for (grain_u64 r = 0; r * x.lanes < x.total; r++) {  uniform
 *       grain_u64 edge; grain_i64 value;
 *       int active = app_expand_edge(&x, r, &edge, &value);
 *       ... a send with `active` ...
 *   }
 */
#ifndef GRAIN_GRAPHAPPS_EXPAND_H
#define GRAIN_GRAPHAPPS_EXPAND_H

typedef struct app_expand {
    GRAIN_LOCAL grain_u64 *first; /* lanes + 1: each lane's first edge in the group's numbering */
    GRAIN_LOCAL grain_u64 *begin; /* each lane's first edge in the CSR arrays */
    GRAIN_LOCAL grain_i64 *value; /* what each lane's vertex sends */
    grain_u64 total;
    grain_u32 lanes;
} app_expand_t;

#define APP_EXPAND_DECL(x)                                      \
    GRAIN_LOCAL_DECL grain_u64 x##_first_[GRAIN_MAX_WG + 1];    \
    GRAIN_LOCAL_DECL grain_u64 x##_begin_[GRAIN_MAX_WG];        \
    GRAIN_LOCAL_DECL grain_i64 x##_value_[GRAIN_MAX_WG];        \
    app_expand_t x;                                             \
    x.first = x##_first_;                                       \
    x.begin = x##_begin_;                                       \
    x.value = x##_value_

/* Every lane, with its vertex's edges [begin, begin + degree) (degree 0 for
 * none) and the value it sends along them. */
GRAIN_INLINE void app_expand_start(app_expand_t *x, const grain_wg_t *wg, grain_u64 begin, grain_u64 degree,
                                   grain_i64 value)
{
    grain_u32 lane = grain_local_linear_id(), lanes = grain_local_linear_size();
    grain_u64 at = (grain_u64)grain_wg_scan_exclusive_add(wg, (grain_i64)degree, 1);
    x->first[lane] = at;
    x->begin[lane] = begin;
    x->value[lane] = value;
    if (lane == lanes - 1)
        x->first[lanes] = at + degree;
    grain_wg_barrier();
    x->total = x->first[lanes];
    x->lanes = lanes;
}

/* app_expand_start for a frontier: the lane of local vertex u (the global
 * id) takes u's out-edges where frontier[u] is 0 or more, which is then the
 * value it sends along them. */
GRAIN_INLINE void app_expand_frontier(app_expand_t *x, const grain_wg_t *wg, GRAIN_GLOBAL const grain_u64 *offsets,
                                      GRAIN_GLOBAL const grain_i64 *frontier, grain_u64 local_n)
{
    grain_u64 u = grain_global_linear_id();
    int mine = u < local_n && frontier[u] >= 0;
    grain_u64 begin = mine ? offsets[u] : 0;
    app_expand_start(x, wg, begin, mine ? offsets[u + 1] - begin : 0, mine ? frontier[u] : 0);
}

/* This lane's edge in round `round` (its CSR index) and the value of the
 * vertex it belongs to; 0 past the group's last edge. */
GRAIN_INLINE int app_expand_edge(const app_expand_t *x, grain_u64 round, grain_u64 *edge, grain_i64 *value)
{
    grain_u64 e = round * x->lanes + grain_local_linear_id();
    *edge = 0;
    *value = 0;
    if (e >= x->total)
        return 0;
    /* The last lane whose first edge is at or before e owns it: lanes
     * without edges share their successor's first edge and lose the tie. */
    grain_u32 lo = 0, hi = x->lanes - 1;
    while (lo < hi) {
        grain_u32 mid = (lo + hi + 1) / 2;
        if (x->first[mid] <= e)
            lo = mid;
        else
            hi = mid - 1;
    }
    *edge = x->begin[lo] + (e - x->first[lo]);
    *value = x->value[lo];
    return 1;
}

#endif
