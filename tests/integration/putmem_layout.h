/* SPDX-License-Identifier: BSD-3-Clause */
/* What putmem.cl and putmem.c agree on: one heap allocation of 64-bit
 * words.  Blocks longer than a work-group (64 lanes) with a partial round,
 * and a 32-bit block of an odd number of words; for puts with signal, a
 * signal word per sender and the words found short behind signals. */
#ifndef GRAIN_TESTS_PUTMEM_LAYOUT_H
#define GRAIN_TESTS_PUTMEM_LAYOUT_H

#define PUTMEM_LANES 64
#define PUTMEM_MAX_PES 4
#define PUTMEM_WORDS64 (3 * PUTMEM_LANES + 5)
#define PUTMEM_WORDS32 101
#define PUTMEM_SRC64 0
#define PUTMEM_SRC32 (PUTMEM_SRC64 + PUTMEM_WORDS64)
#define PUTMEM_DST64 (PUTMEM_SRC32 + (PUTMEM_WORDS32 + 1) / 2)
#define PUTMEM_DST32 (PUTMEM_DST64 + PUTMEM_MAX_PES * PUTMEM_WORDS64)
#define PUTMEM_SIG(src) (PUTMEM_DST32 + (PUTMEM_MAX_PES * PUTMEM_WORDS32 + 2) / 2 + (src))
#define PUTMEM_ERRORS PUTMEM_SIG(PUTMEM_MAX_PES)
#define PUTMEM_WORDS (PUTMEM_ERRORS + 1)
/* Word i of rank src's 64-bit block in round r of the signal test, larger
 * each round; the arguments are 64-bit. */
#define PUTMEM_ROUND_VALUE(r, src, i) (((r) << 40) | ((src) << 32) | (i))

#endif
