/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Adds combined at the sender: the lanes of a work-group that add to the
 * same word of the same PE send one message carrying their sum.
 *
 * Where many lanes add to few addresses (k-means' cluster sums, the
 * in-edges of a hub vertex) every add is an atomic on one word at the
 * destination, and the atomics on one word serialize: across NVLink two
 * GPUs ran k-means slower than one.  Combined, a work-group sends at most
 * one add per distinct (PE, word) of a call, whatever the path (in place,
 * direct or the queue).  The price is a local hash table and two barriers a
 * call on top of the send's own, so adds to spread-out addresses (GUPS)
 * should keep grain_add64.
 *
 * Usage, with the scratch declared once after GRAIN_WG_BEGIN:
 *
 *   GRAIN_COMBINE_DECL(comb);
 *   grain_add64_combined(&wg, &comb, &sums[slot], value, owner, active);
 *
 * Every lane of the work-group calls, as for every send.  Combining is
 * exact: it changes neither what the destination word ends as nor the
 * messages' completion (grain_quiet, grain_barrier_all).
 */
#ifndef GRAIN_DEVICE_COMBINE_H
#define GRAIN_DEVICE_COMBINE_H

/* Twice the lanes: linear probing then finds a free slot in a few probes. */
#define GRAIN_COMBINE_SLOTS (2 * GRAIN_MAX_WG)

typedef struct grain_combine {
    GRAIN_LOCAL grain_u64 *offset; /* per lane: the word's heap offset */
    GRAIN_LOCAL grain_i32 *pe;     /* per lane: its PE */
    GRAIN_LOCAL grain_i64 *sum;    /* per lane: the sum it sends, when it owns a slot */
    GRAIN_LOCAL grain_u32 *owner;  /* per slot: owning lane + 1, 0 while free */
} grain_combine_t;

#define GRAIN_COMBINE_DECL(name)                                           \
    GRAIN_LOCAL_DECL grain_u64 name##_offset_[GRAIN_MAX_WG];               \
    GRAIN_LOCAL_DECL grain_i32 name##_pe_[GRAIN_MAX_WG];                   \
    GRAIN_LOCAL_DECL grain_i64 name##_sum_[GRAIN_MAX_WG];                  \
    GRAIN_LOCAL_DECL grain_u32 name##_owner_[GRAIN_COMBINE_SLOTS];         \
    grain_combine_t name;                                                  \
    name.offset = name##_offset_;                                          \
    name.pe = name##_pe_;                                                  \
    name.sum = name##_sum_;                                                \
    name.owner = name##_owner_

GRAIN_INLINE grain_u32 grain_combine_hash_(grain_u64 offset, grain_i32 pe)
{
    grain_u64 h = (offset >> 3) * 0x9e3779b97f4a7c15ull ^ (grain_u64)(grain_u32)pe * 0xc2b2ae3d27d4eb4full;
    return (grain_u32)(h >> 40) & (GRAIN_COMBINE_SLOTS - 1);
}

/*
 * The lane that first claims a (PE, word)'s slot owns it and sends the sum
 * of every lane that found the slot taken by that key.  Race-free across
 * calls: after the second barrier a lane reads only its own sum, so a lane
 * already in the next call, clearing slots and its own row, disturbs no one
 * (every probe of this call ended before that barrier).
 */
GRAIN_INLINE void grain_add64_combined(const grain_wg_t *wg, const grain_combine_t *c,
                                       GRAIN_GLOBAL grain_i64 *dest, grain_i64 value, grain_i32 pe, int active)
{
    grain_u32 lid = grain_local_linear_id(), n = grain_local_linear_size();
    grain_u64 offset = grain_offset(wg, dest);
    for (grain_u32 i = lid; i < GRAIN_COMBINE_SLOTS; i += n)
        c->owner[i] = 0;
    c->offset[lid] = offset;
    c->pe[lid] = pe;
    c->sum[lid] = 0;
    grain_wg_barrier();
    grain_u32 owner = lid;
    if (active) {
        /* At most n of the 2n slots are ever taken: the probe ends. */
        for (grain_u32 h = grain_combine_hash_(offset, pe);; h = (h + 1) & (GRAIN_COMBINE_SLOTS - 1)) {
            grain_u32 seen = grain_local_cas_u32(&c->owner[h], 0, lid + 1);
            if (seen == 0)
                break;
            if (c->offset[seen - 1] == offset && c->pe[seen - 1] == pe) {
                owner = seen - 1;
                break;
            }
        }
        grain_local_add_i64(&c->sum[owner], value);
    }
    grain_wg_barrier();
    grain_add64(wg, dest, c->sum[lid], pe, active && owner == lid);
}

#endif /* GRAIN_DEVICE_COMBINE_H */
