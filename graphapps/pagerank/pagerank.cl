/*
 * Push-style PageRank through grain: every work-item owns one vertex of its
 * rank and adds the vertex's share of rank, in fixed point, to the
 * accumulator of each out-neighbour at the neighbour's owner.
 *
 * A vertex's edge list is a divergent per-lane loop.  The work-group loops to
 * its largest degree and a lane past its own degree sends with active = 0
 * (software predication, seed 001 figure 10b), so every grain_add64 is
 * reached by the whole work-group.
 */
#include "grain/device.h"

#define PR_LOCAL_MASK ((((grain_u64)1) << 40) - 1) /* APP_DEST in partition.h */

GRAIN_KERNEL void pr_push(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *acc, GRAIN_GLOBAL const grain_u64 *offsets,
                          GRAIN_GLOBAL const grain_u64 *dest, GRAIN_GLOBAL const grain_i64 *share,
                          grain_u64 local_n)
{
    GRAIN_WG_BEGIN(wg);
    grain_u64 u = grain_global_linear_id();
    int mine = u < local_n;
    grain_u64 begin = mine ? offsets[u] : 0;
    grain_u64 degree = mine ? offsets[u + 1] - begin : 0;
    grain_i64 value = mine ? share[u] : 0;
    grain_u64 most = (grain_u64)grain_wg_reduce_max(&wg, (grain_i64)degree, 1);
    for (grain_u64 i = 0; i < most; i++) {
        int active = i < degree;
        grain_u64 d = active ? dest[begin + i] : 0;
        grain_add64(&wg, &acc[d & PR_LOCAL_MASK], value, (grain_i32)(d >> 40), active);
    }
}
