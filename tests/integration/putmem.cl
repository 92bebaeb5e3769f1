/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bulk puts (grain_putmem): one work-group a rank puts a block of 64-bit
 * words and a block of 32-bit words that is not 8-byte aligned to every
 * rank, at the sender's place in the destination's blocks.
 */
#include "putmem_layout.h"
#include "grain/device.h"

GRAIN_KERNEL void put_blocks(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w, grain_u64 bytes64, grain_u64 bytes32)
{
    GRAIN_WG_BEGIN(wg);
    int me = grain_my_pe(&wg), n = grain_n_pes(&wg);
    GRAIN_GLOBAL grain_i32 *src32 = (GRAIN_GLOBAL grain_i32 *)&w[PUTMEM_SRC32];
    GRAIN_GLOBAL grain_i32 *dst32 = (GRAIN_GLOBAL grain_i32 *)&w[PUTMEM_DST32] + 1; /* 4 bytes past 8 */
    for (int pe = 0; pe < n; pe++) {
        grain_putmem(&wg, &w[PUTMEM_DST64 + me * PUTMEM_WORDS64], &w[PUTMEM_SRC64], bytes64, pe, 1);
        grain_putmem(&wg, dst32 + me * PUTMEM_WORDS32, src32, bytes32, pe, 1);
    }
}

/*
 * Bulk puts with signal (grain_putmem_signal), a launch each (PoCL took
 * minutes to compile them in loops of ranks and rounds): in round `round`
 * this rank's 64-bit source block takes the round's values and goes to
 * rank `pe` with its signal set to the round.
 */
GRAIN_KERNEL void signal_put(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w, grain_u64 round, grain_i32 pe)
{
    GRAIN_WG_BEGIN(wg);
    grain_i64 me = grain_my_pe(&wg);
    grain_u32 lid = grain_local_linear_id(), lanes = grain_local_linear_size();
    GRAIN_GLOBAL grain_i64 *src = &w[PUTMEM_SRC64];
    /* Each lane rewrites the words it puts (grain_putmem's lane order),
     * which its put of the launch before has read. */
    for (grain_u32 i = lid; i < PUTMEM_WORDS64; i += lanes)
        src[i] = PUTMEM_ROUND_VALUE((grain_i64)round, me, (grain_i64)i);
    grain_putmem_signal(&wg, &w[PUTMEM_DST64 + me * PUTMEM_WORDS64], src, 8 * PUTMEM_WORDS64,
                        (GRAIN_GLOBAL grain_u64 *)&w[PUTMEM_SIG(me)], round, GRAIN_SIGNAL_SET, pe, 1);
}

/* Waits for every sender's signal of the round and counts the words of its
 * block that are older: a signal that overtook its data leaves some. */
GRAIN_KERNEL void signal_check(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w, grain_u64 round)
{
    GRAIN_WG_BEGIN(wg);
    grain_i64 n = grain_n_pes(&wg), r = (grain_i64)round;
    grain_u32 lid = grain_local_linear_id(), lanes = grain_local_linear_size();
    grain_u64 short_words = 0;
    for (grain_i64 from = 0; from < n; from++) {
        grain_signal_wait_until(&wg, (GRAIN_GLOBAL grain_u64 *)&w[PUTMEM_SIG(from)], GRAIN_CMP_GE, round, 1);
        for (grain_u32 i = lid; i < PUTMEM_WORDS64; i += lanes)
            short_words += w[PUTMEM_DST64 + from * PUTMEM_WORDS64 + i] < PUTMEM_ROUND_VALUE(r, from, (grain_i64)i);
    }
    if (short_words > 0)
        grain_heap_add_u64((GRAIN_GLOBAL char *)&w[PUTMEM_ERRORS], short_words);
}
