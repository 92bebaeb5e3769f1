/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every GUPS here (grain's and its peers' in bench/peers) does alike
 * on the host, so that their figures compare: the split of the table and
 * of the update stream over the ranks, the grid, and the oracle (the whole
 * stream replayed, counting the updates that land in one rank's block).
 */
#ifndef GUPS_HOST_H
#define GUPS_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gups_stream.h"

typedef struct gups_split {
    uint64_t size, mask;          /* the table: 2^log2 counters */
    uint64_t local_entries;       /* a rank's block; the last blocks may be short or empty */
    uint64_t lo, owned;           /* this rank's block: its first counter, how many it has */
    unsigned long long first;     /* this rank's share of the stream: updates [first, first + count) */
    unsigned long long count;
    unsigned long long max_count; /* the largest share: every rank launches the same grid for it */
} gups_split_t;

static inline gups_split_t gups_split(unsigned log2_table, unsigned long long updates, int me, int ranks)
{
    gups_split_t s;
    uint64_t n = (uint64_t)ranks;
    s.size = 1ull << log2_table;
    s.mask = s.size - 1;
    s.local_entries = (s.size + n - 1) / n;
    s.lo = s.local_entries * (uint64_t)me;
    s.owned = s.lo >= s.size ? 0 : (s.size - s.lo < s.local_entries ? s.size - s.lo : s.local_entries);
    s.first = updates * (unsigned long long)me / n;
    s.count = updates * (unsigned long long)(me + 1) / n - s.first;
    s.max_count = updates / n + 1;
    return s;
}

/* The threads of the grid, `per_wi` updates each, in whole groups of `wg`. */
static inline size_t gups_global_size(const gups_split_t *s, uint64_t per_wi, size_t wg)
{
    size_t items = (size_t)((s->max_count + per_wi - 1) / per_wi);
    return (items + wg - 1) / wg * wg;
}

/* expect[i] = how many of the first `updates` updates hit entry first + i,
 * for i < owned; the table has mask + 1 entries. */
static inline void gups_replay(int64_t *expect, unsigned long long updates, uint64_t mask, uint64_t first,
                               uint64_t owned)
{
    memset(expect, 0, owned * sizeof *expect);
    uint64_t ran = 1; /* element 0 of the stream; update k uses element k + 1 */
    for (unsigned long long k = 0; k < updates; k++) {
        ran = gups_next(ran);
        uint64_t index = ran & mask;
        if (index - first < owned)
            expect[index - first]++;
    }
}

/* How many of the `owned` entries of `table` differ from `expect`. */
static inline unsigned long long gups_mismatches(const int64_t *table, const int64_t *expect, uint64_t owned)
{
    unsigned long long bad = 0;
    for (uint64_t i = 0; i < owned; i++)
        bad += table[i] != expect[i];
    return bad;
}

#endif
