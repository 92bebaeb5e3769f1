/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The k-mer encoding and the hash table's layout, shared by the kernel, its
 * handler and the host's sequential reference.  Bases are 2 bits (A C G T =
 * 0 1 2 3); a k-mer is kept canonical, the smaller of itself and its reverse
 * complement, and when that is the reverse complement its two sides swap and
 * are complemented.
 *
 * The hash table:  Each rank's table is 2^log2 slots of KMER_SLOT_WORDS 64-bit words
 * in the symmetric heap: the k-mer (KMER_EMPTY: free), its count, then eight
 * 32-bit side counts (left A C G T, right A C G T); one more word after the
 * last slot counts insertions that found the table full.  An insertion's a1
 * packs the table's heap offset, its size and the k-mer's two sides (4: no
 * base).
 */
#ifndef GRAIN_GRAPHAPPS_KMER_TABLE_H
#define GRAIN_GRAPHAPPS_KMER_TABLE_H

#define KMER_SLOT_WORDS 6
#define KMER_EMPTY (~(grain_u64)0) /* no k-mer of 31 bases or fewer: they use 62 bits */

#define KMER_A1(table_offset, log2_slots) ((grain_u64)(table_offset) | ((grain_u64)(log2_slots) << 40))
#define KMER_A1_SIDES(left, right) (((grain_u64)(left) << 46) | ((grain_u64)(right) << 49))
#define KMER_A1_TABLE(a1) ((a1) & ((((grain_u64)1) << 40) - 1))
#define KMER_A1_LOG2_SLOTS(a1) ((grain_u32)(((a1) >> 40) & 63u))
#define KMER_A1_LEFT(a1) ((grain_u32)(((a1) >> 46) & 7u))
#define KMER_A1_RIGHT(a1) ((grain_u32)(((a1) >> 49) & 7u))

/* A k-mer's owner and first slot come from one mix of its bits. */
#define KMER_MIX(x) kmer_mix_(x)
GRAIN_INLINE grain_u64 kmer_mix_(grain_u64 v)
{
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdull;
    v ^= v >> 33;
    v *= 0xc4ceb9fe1a85ec53ull;
    return v ^ (v >> 33);
}
#define KMER_OWNER(key, ranks) (kmer_mix_(key) % (ranks))
#define KMER_SLOT_START(key) (kmer_mix_(key) >> 20)

/* 0..3 for A, C, G, T in either case; 4 for anything else. */
GRAIN_INLINE grain_u32 kmer_base_code(char c)
{
    c = (char)(c & ~0x20);
    return c == 'A' ? 0u : c == 'C' ? 1u : c == 'G' ? 2u : c == 'T' ? 3u : 4u;
}

/* The last k bases of a read as they enter one by one (k <= 31): forward,
 * reverse complement, and how many valid bases in a row end them. */
typedef struct kmer_window {
    grain_u64 fwd, rev, run;
} kmer_window_t;

GRAIN_INLINE void kmer_push(kmer_window_t *w, grain_u32 code, grain_u32 k)
{
    w->run = code < 4 ? w->run + 1 : 0;
    w->fwd = ((w->fwd << 2) | (code & 3u)) & ((((grain_u64)1) << (2 * k)) - 1);
    w->rev = (w->rev >> 2) | ((grain_u64)(3u - (code & 3u)) << (2 * (k - 1)));
}

/* The canonical k-mer of a full window whose neighbours in the read are
 * `left` and `right` (4: none), and its sides in that orientation. */
GRAIN_INLINE grain_u64 kmer_canonical(const kmer_window_t *w, grain_u32 left, grain_u32 right, grain_u32 *l,
                                      grain_u32 *r)
{
    int flip = w->rev < w->fwd;
    *l = flip ? (right < 4 ? 3u - right : 4u) : left;
    *r = flip ? (left < 4 ? 3u - left : 4u) : right;
    return flip ? w->rev : w->fwd;
}

#endif
