/*
 * Push-style PageRank through grain: every work-item owns one vertex of its
 * rank and adds the vertex's share of rank, in fixed point, to the
 * accumulator of each out-neighbour at the neighbour's owner.
 *
 * A vertex's edge list is a divergent per-lane loop: the work-group deals its
 * vertices' edges out to its lanes (../common/expand.h) and lanes without one
 * in the last round send with active = 0, so every grain_add64 is reached by
 * the whole work-group.
 */
#include "grain/device.h"
#include "../common/expand.h"

#define PR_LOCAL_MASK ((((grain_u64)1) << 40) - 1) /* APP_DEST in partition.h */

GRAIN_KERNEL void pr_push(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *acc, GRAIN_GLOBAL const grain_u64 *offsets,
                          GRAIN_GLOBAL const grain_u64 *dest, GRAIN_GLOBAL const grain_i64 *share,
                          grain_u64 local_n)
{
    GRAIN_WG_BEGIN(wg);
    APP_EXPAND_DECL(x);
    grain_u64 u = grain_global_linear_id();
    int mine = u < local_n;
    grain_u64 begin = mine ? offsets[u] : 0;
    app_expand_start(&x, &wg, begin, mine ? offsets[u + 1] - begin : 0, mine ? share[u] : 0);
    for (grain_u64 r = 0; r * x.lanes < x.total; r++) {
        grain_u64 edge;
        grain_i64 value;
        int active = app_expand_edge(&x, r, &edge, &value);
        grain_u64 d = active ? dest[edge] : 0;
        grain_add64(&wg, &acc[d & PR_LOCAL_MASK], value, (grain_i32)(d >> 40), active);
    }
}
