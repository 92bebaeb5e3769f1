/* SPDX-License-Identifier: BSD-3-Clause */
/* What fetch.cl and fetch.c agree on: one heap allocation of 64-bit words.
 * Two work-groups of 64 lanes a rank; lane L of rank r works on PE
 * (r + L) mod n, so that every rank's words take the lanes of every rank. */
#ifndef GRAIN_TESTS_FETCH_LAYOUT_H
#define GRAIN_TESTS_FETCH_LAYOUT_H

#define FETCH_WG 64
#define FETCH_LANES (2 * FETCH_WG)
#define FETCH_MAX_PES 4
#define FETCH_CLAIMS 16     /* compare-and-swap slots: 8 lanes of each rank contend for each */
#define FETCH_BLOCK64 77    /* a bulk get of 64-bit words: more than a work-group, a partial round */
#define FETCH_BLOCK32 101   /* and of 32-bit words, 4 bytes past an 8-byte boundary */
#define FETCH_SWAP_INIT (-7)
#define FETCH_AND_INIT (-1) /* every bit set */

/* Results of one lane, in order. */
enum { R_INC64, R_INC32, R_CAS64, R_CAS32, R_SWAP, R_OR, R_AND, R_XOR32, R_ADD32, R_GET64, R_GET32, R_FETCH64, R_N };

#define FETCH_COUNT64 0
#define FETCH_COUNT32 1
#define FETCH_SWAP 2
#define FETCH_OR 3
#define FETCH_AND 4
#define FETCH_XOR32 5 /* the first 32 bits of the word */
#define FETCH_ADD32 6
#define FETCH_CLAIM64 8
#define FETCH_CLAIM32 (FETCH_CLAIM64 + FETCH_CLAIMS)
#define FETCH_DATA (FETCH_CLAIM32 + FETCH_CLAIMS) /* FETCH_LANES words the owner writes before the kernel */
#define FETCH_DATA32 (FETCH_DATA + FETCH_LANES)  /* FETCH_LANES 32-bit words */
#define FETCH_OUT (FETCH_DATA32 + FETCH_LANES / 2)
#define FETCH_GOT64 (FETCH_OUT + FETCH_LANES * R_N) /* a bulk get a work-group */
#define FETCH_GOT32 (FETCH_GOT64 + 2 * FETCH_BLOCK64)
#define FETCH_NBI64 (FETCH_GOT32 + 2 * ((FETCH_BLOCK32 + 2) / 2) + 1) /* a lane's get64_nbi */
#define FETCH_NBI32 (FETCH_NBI64 + FETCH_LANES)                        /* its get32_nbi (32-bit words) */
#define FETCH_NBIMEM (FETCH_NBI32 + FETCH_LANES / 2)                    /* a getmem_nbi a work-group */
#define FETCH_SEEN (FETCH_NBIMEM + 2 * FETCH_BLOCK64) /* what those held after the work-group's quiet */
#define FETCH_LOCALMEM (FETCH_SEEN + FETCH_NBIMEM - FETCH_NBI64) /* a getmem_local a work-group, copied out */
#define FETCH_LOCK (FETCH_LOCALMEM + 2 * FETCH_BLOCK64) /* rank 0's: 0, or the id of the lane that holds it */
#define FETCH_LOCKED (FETCH_LOCK + 1)  /* the last rank's: what the holders added, by a get and a put */
#define FETCH_LOCK_BAD (FETCH_LOCK + 2) /* releases that found another id in the lock */
#define FETCH_LOCK_LANES 32             /* lanes 0, 32, ... of each work-group take the lock */
#define FETCH_LOCK_ROUNDS 2             /* each, this many times */
#define FETCH_WORDS (FETCH_LOCK + 3)

#endif
