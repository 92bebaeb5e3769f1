/*
 * SSSP by Bellman-Ford rounds through active messages.  Each round, every
 * vertex whose distance improved in the round before sends, along each
 * out-edge u -> v, its distance plus the edge's weight to v's owner, where
 * the handler min-updates v's distance and marks v improved.  Distances are
 * non-negative doubles carried as their bits, which order as the numbers do.
 *
 * The edge list is a divergent per-lane loop: the work-group loops to its
 * largest degree and lanes past their own send with active = 0 (software
 * predication, seed 001 figure 10b).
 */
#define SSSP_RELAX 1
#define GRAIN_AM_HANDLERS(X) X(SSSP_RELAX, sssp_relax)
#include "grain/device.h"

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
    grain_u64 u = grain_global_linear_id();
    int mine = u < local_n && frontier[u] >= 0;
    grain_u64 begin = mine ? offsets[u] : 0;
    grain_u64 degree = mine ? offsets[u + 1] - begin : 0;
    double du = mine ? grain_bits_f64(frontier[u]) : 0.0;
    grain_u64 most = (grain_u64)grain_wg_reduce_max(&wg, (grain_i64)degree, 1);
    for (grain_u64 i = 0; i < most; i++) {
        int active = i < degree;
        grain_u64 d = active ? dest[begin + i] : 0;
        double candidate = du + (active ? weight[begin + i] : 0.0);
        grain_am(&wg, SSSP_RELAX, grain_offset(&wg, state + 2 * (d & SSSP_LOCAL_MASK)),
                 (grain_u64)grain_f64_bits(candidate), (grain_i32)(d >> 40), active);
    }
}
