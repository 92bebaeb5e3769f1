/* SPDX-License-Identifier: BSD-3-Clause */
/* What p2p_sync.cl and p2p_sync.c agree on: the heap words, in 64-bit
 * words from one allocation, and the inputs of the truth table. */
#ifndef GRAIN_TESTS_P2P_SYNC_PATTERN_H
#define GRAIN_TESTS_P2P_SYNC_PATTERN_H

#define P2P_LANES 64 /* one work-group */
#define P2P_UP 0     /* every lane of every rank increments it: ends at ranks x lanes */
#define P2P_DOWN 1   /* starts there, every lane of every rank adds -1: ends at 0 */
#define P2P_TOKEN 2  /* starts at 0; the rank before puts its number + 1 */
#define P2P_W64 3    /* P2P_V64, for the truth table */
#define P2P_W32S 4   /* up32, down32: as P2P_UP and P2P_DOWN, in 32 bits */
#define P2P_W32 5    /* the low half: P2P_V32, for the truth table */
#define P2P_SEEN 6   /* a lane each: what it saw once its wait returned */
#define P2P_AFTER (P2P_SEEN + P2P_LANES)  /* a lane each: its test of the same condition after the wait */
#define P2P_TRUTH (P2P_AFTER + P2P_LANES) /* a lane each: grain_test's answer */
/* The _all, _any and _some calls: 8 words holding 0..7 (and 8 32-bit ones),
 * 8 32-bit status words that leave out words 2 and 5, 8 that leave out
 * every word; a token a rank (P2P_MAX_PES at most) in 64 and in 32 bits,
 * which rank r sets to r + 1 everywhere; 8 indices for each of the first
 * 16 lanes; a result and a detail for each lane. */
#define P2P_MAX_PES 4
#define P2P_ARR (P2P_TRUTH + P2P_LANES)
#define P2P_ARR32 (P2P_ARR + 8)
#define P2P_STATUS (P2P_ARR32 + 4)
#define P2P_EXCLUDE_ALL (P2P_STATUS + 4)
#define P2P_TOK (P2P_EXCLUDE_ALL + 4)
#define P2P_TOK32 (P2P_TOK + P2P_MAX_PES)
#define P2P_IDX (P2P_TOK32 + P2P_MAX_PES / 2)
#define P2P_MANY (P2P_IDX + 32 * 8)
#define P2P_DETAIL (P2P_MANY + P2P_LANES)
/* Put with signal: a data word for each lane of each rank, the signal
 * every such put adds 1 to, a word and the signal a rank sets once on the
 * next rank, and a lane's count of data words it found wrong. */
#define P2P_DATA (P2P_DETAIL + P2P_LANES)
#define P2P_SIG (P2P_DATA + P2P_MAX_PES * P2P_LANES)
#define P2P_DATA2 (P2P_SIG + 1)
#define P2P_SIGSET (P2P_DATA2 + 1)
#define P2P_WRONG (P2P_SIGSET + 1)
#define P2P_VALS (P2P_WRONG + P2P_LANES) /* the _vector forms' values: i, or i + 1 where i % 3 != 0 */
#define P2P_VALS32 (P2P_VALS + 8)        /* the same in 32 bits */
#define P2P_WORDS (P2P_VALS32 + 4)
#define P2P_VALUE(r, l) ((grain_i64)(r) * 1000 + (l) + 1)

#define P2P_V64 (-5)
#define P2P_V32 (-7)

/* Truth-table lane l < 36 tests the 64-bit word (l < 18) or the 32-bit one
 * with comparison l % 6 against the word's value plus -1, 0 or 1; the other
 * lanes pass active = 0. */
#define P2P_TRUTH_LANES 36
#define P2P_TRUTH_CMP(l) ((int)((l) % 6))
#define P2P_TRUTH_DELTA(l) ((int)(((l) / 6) % 3) - 1)

/* The waiting lanes' conditions, by lane % P2P_KINDS. */
#define P2P_KINDS 8

#endif
