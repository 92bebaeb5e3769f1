/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One Lloyd assignment step through grain: every work-item takes one point
 * of its rank, finds the nearest centre (the first of equals, as numpy's
 * argmin) and adds the point's coordinates, in fixed point, and a count to
 * that cluster's accumulators at the cluster's owner (cluster c lives on
 * rank c % ranks, slot c / ranks).  Every lane takes part in every send,
 * so the loops are uniform; lanes past the rank's points with active = 0.
 *
 * A work-group's points fall into at most k clusters, so its adds are
 * combined before they leave (grain/device/combine.h): one add per cluster
 * and coordinate, not one per point, to words every point of every rank
 * adds to, packed into as few sends as the work-group's lanes allow.  Each
 * point's label stays on the device, where the step counts the points that
 * changed cluster: the host reads one word, not the labels.
 */
#include "grain/device.h"

/* Words of a combined key: the host passes a cluster's row split evenly
 * (kmeans.c); the default is for compiling the source alone. */
#ifndef KM_KEY_WORDS
#define KM_KEY_WORDS 9
#endif

GRAIN_KERNEL void km_assign(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *sums, GRAIN_GLOBAL const double *x,
                            GRAIN_GLOBAL const double *centres, GRAIN_GLOBAL grain_i32 *labels,
                            GRAIN_GLOBAL grain_u64 *moved, grain_u64 local_n, grain_u32 dims, grain_u32 k,
                            grain_u32 ranks, double scale)
{
    GRAIN_WG_BEGIN(wg);
    GRAIN_COMBINE_DECL(comb, KM_KEY_WORDS);
    grain_u64 i = grain_global_linear_id();
    int mine = i < local_n, changed = 0;
    grain_u32 best = 0;
    if (mine) {
        double nearest = 0;
        for (grain_u32 c = 0; c < k; c++) {
            double d = 0;
            for (grain_u32 j = 0; j < dims; j++) {
                double t = x[i * dims + j] - centres[(grain_u64)c * dims + j];
                d += t * t;
            }
            if (c == 0 || d < nearest) {
                nearest = d;
                best = c;
            }
        }
        changed = labels[i] != (grain_i32)best;
        labels[i] = (grain_i32)best;
    }
    grain_i64 group_moved = grain_wg_reduce_add(&wg, changed, mine);
    if (grain_local_linear_id() == 0 && group_moved > 0)
        grain_atomic_fetch_add_dev_u64(moved, (grain_u64)group_moved);
    /* A cluster's dims + 1 words are one key: a work-group's clusters leave
     * packed, 16 clusters of 8 dims in one send. */
    grain_i32 pe = (grain_i32)(best % ranks);
    grain_u64 slot = (grain_u64)(best / ranks) * (dims + 1);
    for (grain_u32 b = 0; b <= dims; b += KM_KEY_WORDS) {
        grain_u32 words = dims + 1 - b < KM_KEY_WORDS ? dims + 1 - b : KM_KEY_WORDS;
        grain_combine_begin(&wg, &comb, &sums[slot + b], words, pe, mine);
        for (grain_u32 j = 0; j < words && mine; j++) {
            grain_u32 d = b + j;
            grain_combine_add(&wg, &comb, j, d < dims ? (grain_i64)floor(x[i * dims + d] * scale + 0.5) : 1);
        }
        grain_combine_end(&wg, &comb);
    }
}
