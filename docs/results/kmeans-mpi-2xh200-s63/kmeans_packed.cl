/* SPDX-License-Identifier: BSD-3-Clause */
/* A measurement, not one of the apps (README.md here): the combined adds of all dims + 1 words of a
 * work-group's clusters packed into as few sends as lanes allow. */
#include "grain/device.h"
#define KM_MAXW 9 /* dims + 1 at most, for the prototype */

GRAIN_KERNEL void km_assign(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *sums, GRAIN_GLOBAL const double *x,
                            GRAIN_GLOBAL const double *centres, GRAIN_GLOBAL grain_i32 *labels,
                            GRAIN_GLOBAL grain_u64 *moved, grain_u64 local_n, grain_u32 dims, grain_u32 k,
                            grain_u32 ranks, double scale)
{
    GRAIN_WG_BEGIN(wg);
    GRAIN_LOCAL_DECL grain_u64 key_[GRAIN_MAX_WG];
    GRAIN_LOCAL_DECL grain_u32 slot_owner_[2 * GRAIN_MAX_WG];
    GRAIN_LOCAL_DECL grain_u32 entry_[GRAIN_MAX_WG];
    GRAIN_LOCAL_DECL grain_u32 index_[GRAIN_MAX_WG];
    GRAIN_LOCAL_DECL grain_i64 acc_[GRAIN_MAX_WG * KM_MAXW];
    GRAIN_LOCAL_DECL grain_u32 count_[1];
    grain_u64 i = grain_global_linear_id();
    grain_u32 lid = grain_local_linear_id(), n = grain_local_linear_size(), w = dims + 1;
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
    if (lid == 0 && group_moved > 0)
        grain_atomic_fetch_add_dev_u64(moved, (grain_u64)group_moved);
    for (grain_u32 s = lid; s < 2 * GRAIN_MAX_WG; s += n)
        slot_owner_[s] = 0;
    for (grain_u32 s = lid; s < n * w; s += n)
        acc_[s] = 0;
    if (lid == 0)
        count_[0] = 0;
    key_[lid] = best;
    grain_wg_barrier();
    grain_u32 owner = lid;
    if (mine) {
        for (grain_u32 h = (best * 2654435761u) & (2 * GRAIN_MAX_WG - 1);; h = (h + 1) & (2 * GRAIN_MAX_WG - 1)) {
            grain_u32 seen = grain_local_cas_u32(&slot_owner_[h], 0, lid + 1);
            if (seen == 0) {
                grain_u32 c = count_[0], old;
                while ((old = grain_local_cas_u32(&count_[0], c, c + 1)) != c)
                    c = old;
                index_[lid] = c;
                entry_[c] = lid;
                break;
            }
            if (key_[seen - 1] == best) {
                owner = seen - 1;
                break;
            }
        }
    }
    grain_wg_barrier();
    if (mine) {
        grain_u32 e = index_[owner];
        for (grain_u32 j = 0; j < dims; j++)
            grain_local_add_i64(&acc_[e * w + j], (grain_i64)floor(x[i * dims + j] * scale + 0.5));
        grain_local_add_i64(&acc_[e * w + dims], 1);
    }
    grain_wg_barrier();
    grain_u32 messages = count_[0] * w;
    for (grain_u32 base = 0; base < messages; base += n) {
        grain_u32 m = base + lid, e = m / w, j = m % w;
        grain_u32 c = m < messages ? (grain_u32)key_[entry_[e]] : 0;
        grain_add64(&wg, &sums[(grain_u64)(c / ranks) * w + j], m < messages ? acc_[m] : 0,
                    (grain_i32)(c % ranks), m < messages);
    }
}
