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
#define P2P_WORDS (P2P_TRUTH + P2P_LANES)

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
