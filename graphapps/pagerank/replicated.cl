/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replicated PageRank, one pull step: every rank holds the whole vector of
 * shares (a vertex's rank over its out-degree, fixed point) in the region
 * `in`, and computes its slice of vertices from their in-edges.  Each
 * work-item owns a vertex: its new rank, its change, and its new share,
 * stored into `out` so that, chunk by chunk, the share reaches every other
 * rank's copy as soon as the work-groups that write the chunk are done.
 *
 * Integer sums are exact, so the order of the in-edges does not matter and
 * the ranks come out the same on any number of ranks.  A lane walks its own
 * in-edges up to PR_HUB edges; the work-group walks the in-edges of its
 * hubs (above PR_HUB) together, one hub at a time, so that one lane's hub
 * does not hold 255 lanes for its whole list.
 */
#include "grain/device.h"

#define PR_FIXED_ONE 4503599627370496.0 /* FIXED_ONE in pagerank.h */
#define PR_HUB 128u

GRAIN_KERNEL void pr_pull(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_region_dev_t *in,
                          GRAIN_GLOBAL grain_region_dev_t *out, GRAIN_GLOBAL double *x,
                          GRAIN_GLOBAL const grain_u64 *in_offsets, GRAIN_GLOBAL const grain_u64 *in_src,
                          GRAIN_GLOBAL const grain_u64 *out_degree, GRAIN_GLOBAL grain_i64 *sums, grain_u64 first,
                          grain_u64 count, double base, double damping, double dangling_each)
{
    GRAIN_WG_BEGIN(wg);
    GRAIN_LOCAL_DECL grain_u64 hubs[GRAIN_MAX_WG];
    GRAIN_GLOBAL const grain_i64 *share = (GRAIN_GLOBAL const grain_i64 *)in->data;
    grain_u64 v = grain_global_linear_id();
    int mine = v < count;
    grain_u64 b = mine ? in_offsets[v] : 0, e = mine ? in_offsets[v + 1] : 0;
    int hub = e - b > PR_HUB;
    grain_i64 sum = 0;
    for (grain_u64 i = b; !hub && i < e; i++)
        sum += share[in_src[i]];

    grain_i64 slot = grain_wg_scan_exclusive_add(&wg, 1, hub);
    grain_i64 n_hubs = grain_wg_reduce_add(&wg, 1, hub);
    if (hub)
        hubs[slot] = v;
    grain_wg_barrier();
    for (grain_i64 h = 0; h < n_hubs; h++) {
        grain_u64 hb = in_offsets[hubs[h]], he = in_offsets[hubs[h] + 1];
        grain_i64 part = 0;
        for (grain_u64 i = hb + grain_local_linear_id(); i < he; i += grain_local_linear_size())
            part += share[in_src[i]];
        part = grain_wg_reduce_add(&wg, part, 1);
        if (hub && slot == h)
            sum = part;
    }

    grain_i64 change = 0, dangling = 0;
    if (mine) {
        double old = x[v];
        double next = base + damping * ((double)sum / PR_FIXED_ONE + dangling_each);
        x[v] = next;
        change = (grain_i64)floor(fabs(next - old) * PR_FIXED_ONE + 0.5);
        grain_u64 degree = out_degree[v];
        grain_i64 next_share = degree == 0 ? 0 : (grain_i64)floor(next / (double)degree * PR_FIXED_ONE + 0.5);
        dangling = degree == 0 ? (grain_i64)floor(next * PR_FIXED_ONE + 0.5) : 0;
        grain_region_store64(out, first + v, (grain_u64)next_share);
    }
    grain_chunk_done(&wg, out);
    change = grain_wg_reduce_add(&wg, change, mine);
    dangling = grain_wg_reduce_add(&wg, dangling, mine);
    if (grain_local_linear_id() == 0) {
        sums[2 * grain_group_linear_id()] = change;
        sums[2 * grain_group_linear_id() + 1] = dangling;
    }
}
