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
