/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Adds combined and packed at the sender: the lanes of a work-group that add
 * to the same words of the same PE send one add a word carrying their sum,
 * and those adds leave in as few sends as the lanes allow.
 *
 * Where many lanes add to few addresses (k-means' cluster sums, the
 * in-edges of a hub vertex) every add is an atomic on one word at the
 * destination, and the atomics on one word serialize: across NVLink two
 * GPUs ran k-means slower than one.  Combined, a work-group sends at most
 * one add per distinct (PE, word) of a call, whatever the path (in place,
 * direct or the queue).
 *
 * A key is a run of `words` consecutive 64-bit words (a cluster's
 * coordinates and count): the lanes add into it word by word, and the
 * call's sums go out packed, lane l sending sum l, in ceil(keys x words /
 * lanes) sends.  Through the queue every send takes a slot, so a k-means
 * work-group's 16 clusters x 9 words leave in one slot, not nine
 * (docs/results/kmeans-mpi-2xh200-s63: 2.9x on two GPUs through MPI).
 * The price is a local hash table and four barriers a call on top of the
 * sends', so adds to spread-out addresses (GUPS) should keep grain_add64.
 *
 * Usage, with the scratch declared once after GRAIN_WG_BEGIN for keys of at
 * most 16 words:
 *
 *   GRAIN_COMBINE_DECL(comb, 16);
 *   grain_combine_begin(&wg, &comb, &sums[row], words, pe, active);
 *   for (grain_u32 j = 0; j < words; j++)
 *       grain_combine_add(&wg, &comb, j, value_j);
 *   grain_combine_end(&wg, &comb);
 *
 * Every lane of the work-group calls begin and end, with the same `words`,
 * as for every send; a lane adds to its own key's words only (inactive
 * lanes' adds are dropped).  grain_add64_combined is the one-word call.
 * Combining is exact: it changes neither what the destination words end as
 * nor the messages' completion (grain_quiet, grain_barrier_all).
 */
#ifndef GRAIN_DEVICE_COMBINE_H
#define GRAIN_DEVICE_COMBINE_H

/* Twice the lanes: linear probing then finds a free slot in a few probes. */
#define GRAIN_COMBINE_SLOTS (2 * GRAIN_MAX_WG)

typedef struct grain_combine {
    GRAIN_LOCAL grain_u64 *offset; /* per lane: its key's heap offset */
    GRAIN_LOCAL grain_i32 *pe;     /* per lane: its key's PE */
    GRAIN_LOCAL grain_u32 *owner;  /* per slot: owning lane + 1, 0 while free */
    GRAIN_LOCAL grain_u32 *entry;  /* per owning lane: its key's entry, the keys numbered densely */
    GRAIN_LOCAL grain_u32 *first;  /* per entry: its owning lane */
    GRAIN_LOCAL grain_i64 *sum;    /* per entry: `words` sums */
    GRAIN_LOCAL grain_u32 *keys;   /* [0]: the entries of the call */
    /* The lane's own, private: */
    grain_u32 capacity; /* words a key at most (GRAIN_COMBINE_DECL) */
    grain_u32 words;    /* of the current call; 0 after a bad one */
    grain_u32 mine;     /* the lane's entry */
    int active;
} grain_combine_t;

#define GRAIN_COMBINE_DECL(name, max_words)                                \
    GRAIN_LOCAL_DECL grain_u64 name##_offset_[GRAIN_MAX_WG];               \
    GRAIN_LOCAL_DECL grain_i32 name##_pe_[GRAIN_MAX_WG];                   \
    GRAIN_LOCAL_DECL grain_u32 name##_owner_[GRAIN_COMBINE_SLOTS];         \
    GRAIN_LOCAL_DECL grain_u32 name##_entry_[GRAIN_MAX_WG];                \
    GRAIN_LOCAL_DECL grain_u32 name##_first_[GRAIN_MAX_WG];                \
    GRAIN_LOCAL_DECL grain_i64 name##_sum_[GRAIN_MAX_WG * (max_words)];    \
    GRAIN_LOCAL_DECL grain_u32 name##_keys_[1];                            \
    grain_combine_t name;                                                  \
    name.offset = name##_offset_;                                          \
    name.pe = name##_pe_;                                                  \
    name.owner = name##_owner_;                                            \
    name.entry = name##_entry_;                                            \
    name.first = name##_first_;                                            \
    name.sum = name##_sum_;                                                \
    name.keys = name##_keys_;                                              \
    name.capacity = (max_words);                                           \
    name.words = 0;                                                        \
    name.mine = 0;                                                         \
    name.active = 0

GRAIN_INLINE grain_u32 grain_combine_hash_(grain_u64 offset, grain_i32 pe)
{
    grain_u64 h = (offset >> 3) * 0x9e3779b97f4a7c15ull ^ (grain_u64)(grain_u32)pe * 0xc2b2ae3d27d4eb4full;
    return (grain_u32)(h >> 40) & (GRAIN_COMBINE_SLOTS - 1);
}

/*
 * Every lane: the key at `dest` (its first word) on PE `pe`, `words` words.
 * The lane that first claims a key's slot owns it; owners number the keys
 * with one claim, so the sums are dense and end sends keys x words of them.
 */
GRAIN_INLINE void grain_combine_begin(const grain_wg_t *wg, grain_combine_t *c, GRAIN_GLOBAL grain_i64 *dest,
                                      grain_u32 words, grain_i32 pe, int active)
{
    grain_u32 lid = grain_local_linear_id(), n = grain_local_linear_size();
    grain_u64 offset = grain_offset(wg, dest);
    if (words == 0 || words > c->capacity) {
        if (lid == 0)
            grain_dev_error(wg->ctx, GRAIN_DEV_ERR_BAD_COMBINE, c->capacity, pe, words, grain_global_linear_id());
        words = 0;
        active = 0;
    }
    c->words = words;
    c->active = active;
    /* The previous call's end read these tables in its sends, which have no
     * barrier of their own under GRAIN_RESERVE_WI. */
    grain_wg_barrier();
    for (grain_u32 i = lid; i < GRAIN_COMBINE_SLOTS; i += n)
        c->owner[i] = 0;
    for (grain_u32 i = lid; i < n * words; i += n)
        c->sum[i] = 0;
    if (lid == 0)
        c->keys[0] = 0;
    c->offset[lid] = offset;
    c->pe[lid] = pe;
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
    }
    int owns = active && owner == lid;
    grain_u32 e = grain_local_claim_u32(c->keys, owns, GRAIN_MAX_WG);
    if (owns) {
        c->entry[lid] = e;
        c->first[e] = lid;
    }
    grain_wg_barrier();
    c->mine = active ? c->entry[owner] : 0;
}

/* The lane's own: `value` into word `word` of its key's sum. */
GRAIN_INLINE void grain_combine_add(const grain_wg_t *wg, const grain_combine_t *c, grain_u32 word, grain_i64 value)
{
    if (!c->active)
        return;
    if (word >= c->words)
        grain_dev_error(wg->ctx, GRAIN_DEV_ERR_BAD_COMBINE_WORD, c->words, c->pe[grain_local_linear_id()], word,
                        grain_global_linear_id());
    else
        grain_local_add_i64(&c->sum[c->mine * c->words + word], value);
}

/* Every lane: the call's sums sent, lane l of each send taking sum l. */
GRAIN_INLINE void grain_combine_end(const grain_wg_t *wg, const grain_combine_t *c)
{
    grain_u32 lid = grain_local_linear_id(), n = grain_local_linear_size(), words = c->words;
    grain_wg_barrier();
    grain_u32 sums = c->keys[0] * words;
    for (grain_u32 base = 0; base < sums; base += n) {
        grain_u32 s = base + lid;
        int some = s < sums;
        grain_u32 lane = some ? c->first[s / words] : 0;
        grain_send_(wg, GRAIN_CMD_ADD64, 0, c->pe[lane], c->offset[lane] + 8u * (s % words),
                    some ? (grain_u64)c->sum[s] : 0, some);
    }
}

/* One word: `value` added to `dest` on PE `pe`, combined. */
GRAIN_INLINE void grain_add64_combined(const grain_wg_t *wg, grain_combine_t *c, GRAIN_GLOBAL grain_i64 *dest,
                                       grain_i64 value, grain_i32 pe, int active)
{
    grain_combine_begin(wg, c, dest, 1, pe, active);
    grain_combine_add(wg, c, 0, value);
    grain_combine_end(wg, c);
}

#endif /* GRAIN_DEVICE_COMBINE_H */
