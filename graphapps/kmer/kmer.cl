/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Phase 1 of Meraculous' de Bruijn graph construction through grain: every
 * k-mer of every read is inserted into a distributed hash table with an
 * active message to its owner, whose handler claims or finds its slot and
 * counts the k-mer and the bases seen on either side of it.
 *
 * K-mers are canonical (the smaller of the k-mer and its reverse complement,
 * 2 bits a base, A C G T = 0 1 2 3); when the reverse complement is the one
 * kept, the two sides swap and their bases are complemented.  Windows with a
 * base other than A, C, G or T are skipped, and so is a side whose base is
 * one.  Each work-item reads one read; the work-group loops to its longest
 * read and lanes past their own windows send with active = 0 (Gravel
 * figure 10b).
 */
#define KMER_INSERT 1
#define GRAIN_AM_HANDLERS(X) X(KMER_INSERT, kmer_insert)
#include "grain/device.h"
#include "kmer_table.h"

/* a0: the canonical k-mer; a1: kmer_table.h's packed table and sides. */
GRAIN_AM_HANDLER(kmer_insert)
{
    (void)src_pe;
    GRAIN_GLOBAL grain_u64 *table = (GRAIN_GLOBAL grain_u64 *)(heap + KMER_A1_TABLE(a1));
    grain_u64 mask = (((grain_u64)1) << KMER_A1_LOG2_SLOTS(a1)) - 1;
    grain_u64 slot = KMER_SLOT_START(a0) & mask;
    for (grain_u64 probes = 0; probes <= mask; probes++, slot = (slot + 1) & mask) {
        GRAIN_GLOBAL grain_u64 *s = table + slot * KMER_SLOT_WORDS;
        grain_u64 seen = grain_heap_cas_u64(s, KMER_EMPTY, a0);
        if (seen != KMER_EMPTY && seen != a0)
            continue;
        grain_heap_add_u64(s + 1, 1u);
        GRAIN_GLOBAL grain_u32 *ext = (GRAIN_GLOBAL grain_u32 *)(s + 2);
        if (KMER_A1_LEFT(a1) < 4)
            grain_heap_add_u32(ext + KMER_A1_LEFT(a1), 1u);
        if (KMER_A1_RIGHT(a1) < 4)
            grain_heap_add_u32(ext + 4 + KMER_A1_RIGHT(a1), 1u);
        return;
    }
    grain_heap_add_u64(table + (mask + 1) * KMER_SLOT_WORDS, 1u); /* the overflow counter: the host fails */
}

GRAIN_KERNEL void kmer_count(GRAIN_KERNEL_CTX, GRAIN_GLOBAL const char *bases, GRAIN_GLOBAL const grain_u64 *offset,
                             grain_u64 reads, grain_u32 k, grain_u64 table_a1, grain_u32 ranks)
{
    GRAIN_WG_BEGIN(wg);
    grain_u64 r = grain_global_linear_id();
    grain_u64 begin = r < reads ? offset[r] : 0, length = r < reads ? offset[r + 1] - begin : 0;
    grain_u64 positions = (grain_u64)grain_wg_reduce_max(&wg, (grain_i64)length, 1);
    kmer_window_t w = {0, 0, 0};
    /* Position i adds base i; the window ending there starts at i - k + 1. */
    for (grain_u64 i = 0; i < positions; i++) {
        kmer_push(&w, i < length ? kmer_base_code(bases[begin + i]) : 4u, k);
        int active = i < length && w.run >= k;
        grain_u64 start = i + 1 - (active ? k : 0);
        grain_u32 left = active && start > 0 ? kmer_base_code(bases[begin + start - 1]) : 4u;
        grain_u32 right = active && i + 1 < length ? kmer_base_code(bases[begin + i + 1]) : 4u;
        grain_u32 l, rt;
        grain_u64 key = kmer_canonical(&w, left, right, &l, &rt);
        grain_am(&wg, KMER_INSERT, key, table_a1 | KMER_A1_SIDES(l, rt), (grain_i32)(KMER_OWNER(key, ranks)),
                 active);
    }
}
