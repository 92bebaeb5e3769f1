/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Gets and fetching atomics: every lane of every rank updates or reads words
 * of PE (rank + lane) mod n and keeps what came back; each work-group then
 * gets a block of 64-bit and one of 32-bit words from the next rank.  The
 * bad modes make one lane ask for something it cannot have.
 */
#include "fetch_layout.h"
#include "grain/device.h"

GRAIN_KERNEL void fetch_all(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w)
{
    GRAIN_WG_BEGIN(wg);
    int me = grain_my_pe(&wg), n = grain_n_pes(&wg);
    grain_u32 lane = (grain_u32)grain_global_linear_id(), group = (grain_u32)grain_group_linear_id();
    int pe = (int)(((grain_u32)me + lane) % (grain_u32)n);
    grain_i64 id = (grain_i64)me * FETCH_LANES + lane + 1;
    grain_u64 bit = (grain_u64)1 << (lane % 64);
    GRAIN_GLOBAL grain_i64 *out = &w[FETCH_OUT + lane * R_N];
    out[R_INC64] = grain_atomic_fetch_inc64(&wg, &w[FETCH_COUNT64], pe, 1);
    out[R_INC32] = grain_atomic_fetch_inc32(&wg, (GRAIN_GLOBAL grain_i32 *)&w[FETCH_COUNT32], pe, 1);
    out[R_CAS64] = grain_atomic_compare_swap64(&wg, &w[FETCH_CLAIM64 + lane % FETCH_CLAIMS], 0, id, pe, 1);
    out[R_CAS32] = grain_atomic_compare_swap32(&wg, (GRAIN_GLOBAL grain_i32 *)&w[FETCH_CLAIM32 + lane % FETCH_CLAIMS],
                                               0, (grain_i32)id, pe, 1);
    out[R_SWAP] = grain_atomic_swap64(&wg, &w[FETCH_SWAP], id, pe, 1);
    out[R_OR] = (grain_i64)grain_atomic_fetch_or64(&wg, (GRAIN_GLOBAL grain_u64 *)&w[FETCH_OR], bit, pe, 1);
    out[R_AND] = (grain_i64)grain_atomic_fetch_and64(&wg, (GRAIN_GLOBAL grain_u64 *)&w[FETCH_AND], ~bit, pe, 1);
    out[R_XOR32] = grain_atomic_fetch_xor32(&wg, (GRAIN_GLOBAL grain_u32 *)&w[FETCH_XOR32], (grain_u32)id, pe, 1);
    out[R_ADD32] = grain_atomic_fetch_add32(&wg, (GRAIN_GLOBAL grain_i32 *)&w[FETCH_ADD32], (grain_i32)id, pe, 1);
    out[R_GET64] = grain_get64(&wg, &w[FETCH_DATA + lane], pe, 1);
    out[R_GET32] = grain_get32(&wg, (GRAIN_GLOBAL grain_i32 *)&w[FETCH_DATA32] + lane, pe, 1);
    out[R_FETCH64] = grain_atomic_fetch64(&wg, &w[FETCH_DATA + lane], pe, 1);
    int next = (int)(((grain_u32)me + 1u + group) % (grain_u32)n);
    grain_getmem(&wg, &w[FETCH_GOT64 + group * FETCH_BLOCK64], &w[FETCH_DATA], 8 * FETCH_BLOCK64, next, 1);
    grain_getmem(&wg, (GRAIN_GLOBAL grain_i32 *)&w[FETCH_GOT32] + 1 + group * FETCH_BLOCK32,
                 (GRAIN_GLOBAL grain_i32 *)&w[FETCH_DATA32] + 1, 4 * FETCH_BLOCK32, next, 1);
}

/* Gets that do not wait, from the same words as fetch_all's gets. */
GRAIN_INLINE void nbi_gets(const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *w)
{
    int me = grain_my_pe(wg), n = grain_n_pes(wg);
    grain_u32 lane = (grain_u32)grain_global_linear_id(), group = (grain_u32)grain_group_linear_id();
    int pe = (int)(((grain_u32)me + lane) % (grain_u32)n);
    grain_get64_nbi(wg, &w[FETCH_NBI64 + lane], &w[FETCH_DATA + lane], pe, 1);
    grain_get32_nbi(wg, (GRAIN_GLOBAL grain_i32 *)&w[FETCH_NBI32] + lane,
                    (GRAIN_GLOBAL grain_i32 *)&w[FETCH_DATA32] + lane, pe, 1);
    int next = (int)(((grain_u32)me + 1u + group) % (grain_u32)n);
    grain_getmem_nbi(wg, &w[FETCH_NBIMEM + group * FETCH_BLOCK64], &w[FETCH_DATA], 8 * FETCH_BLOCK64, next, 1);
}

/* Completed by the host (grain_quiet or grain_barrier_all). */
GRAIN_KERNEL void fetch_nbi(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w)
{
    GRAIN_WG_BEGIN(wg);
    nbi_gets(&wg, w);
}

/* Completed by the work-group's quiet, after which its lanes copy what
 * they find (every word the work-group asked for) to FETCH_SEEN; and a
 * block got into local memory, copied out. */
GRAIN_KERNEL void fetch_nbi_quiet(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w)
{
    GRAIN_WG_BEGIN(wg);
    GRAIN_LOCAL_DECL grain_i64 block[FETCH_BLOCK64];
    nbi_gets(&wg, w);
    grain_quiet(&wg);
    grain_u32 lid = (grain_u32)grain_local_linear_id(), group = (grain_u32)grain_group_linear_id();
    grain_u32 first = group * FETCH_WG;
    w[FETCH_SEEN + first + lid] = w[FETCH_NBI64 + first + lid];
    ((GRAIN_GLOBAL grain_i32 *)&w[FETCH_SEEN + FETCH_LANES])[first + lid] =
        ((GRAIN_GLOBAL grain_i32 *)&w[FETCH_NBI32])[first + lid];
    for (grain_u32 i = lid; i < FETCH_BLOCK64; i += FETCH_WG)
        w[FETCH_SEEN + FETCH_NBIMEM - FETCH_NBI64 + group * FETCH_BLOCK64 + i] =
            w[FETCH_NBIMEM + group * FETCH_BLOCK64 + i];
    int me = grain_my_pe(&wg), n = grain_n_pes(&wg);
    int next = (int)(((grain_u32)me + 1u + group) % (grain_u32)n);
    grain_getmem_local(&wg, block, &w[FETCH_DATA], 8 * FETCH_BLOCK64, next, 1);
    /* Word j was stored by lane j mod FETCH_WG: mostly another lane. */
    for (grain_u32 i = lid; i < FETCH_BLOCK64; i += FETCH_WG) {
        grain_u32 j = FETCH_BLOCK64 - 1 - i;
        w[FETCH_LOCALMEM + group * FETCH_BLOCK64 + j] = block[j];
    }
}

/*
 * A lock taken by compare-and-swap on rank 0's word: inside it the holder
 * reads the last rank's counter (a get) and writes it back plus one (a
 * put), quiets, and releases it with a swap that must find its own id.  Two
 * holders at once would lose an increment.  Every round, every lane that
 * still wants the lock tries once, so the holder, whose work-group's other
 * lanes may be waiting, finishes in the round it won.
 */
GRAIN_KERNEL void fetch_lock(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w)
{
    GRAIN_WG_BEGIN(wg);
    int me = grain_my_pe(&wg), last = grain_n_pes(&wg) - 1;
    grain_u32 lane = (grain_u32)grain_global_linear_id();
    grain_i64 id = (grain_i64)me * FETCH_LANES + lane + 1;
    grain_i64 left = lane % FETCH_LOCK_LANES == 0 ? FETCH_LOCK_ROUNDS : 0;
    while (grain_wg_reduce_max(&wg, left, 1) > 0) {
        int want = left > 0;
        int mine = grain_atomic_compare_swap64(&wg, &w[FETCH_LOCK], 0, id, 0, want) == 0 && want;
        grain_i64 v = grain_get64(&wg, &w[FETCH_LOCKED], last, mine);
        grain_put64(&wg, &w[FETCH_LOCKED], v + 1, last, mine);
        grain_quiet(&wg);
        if (grain_atomic_swap64(&wg, &w[FETCH_LOCK], 0, 0, mine) != id && mine)
            grain_heap_add_u64(&w[FETCH_LOCK_BAD], 1);
        left -= mine;
    }
}

/* mode 1: a PE that does not exist; 2: a misaligned word; 3: a bulk get of
 * 6 bytes; 4: a get that does not wait into a misaligned word. */
GRAIN_KERNEL void fetch_bad(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w, grain_u32 mode)
{
    GRAIN_WG_BEGIN(wg);
    int me = grain_my_pe(&wg), n = grain_n_pes(&wg), first = grain_global_linear_id() == 0;
    if (mode == 1)
        w[FETCH_OUT] = grain_atomic_fetch_add64(&wg, &w[FETCH_COUNT64], 5, n, first);
    else if (mode == 2)
        w[FETCH_OUT] = grain_get64(&wg, (GRAIN_GLOBAL grain_i64 *)((GRAIN_GLOBAL char *)&w[FETCH_DATA] + 4), me, first);
    else if (mode == 3)
        grain_getmem(&wg, &w[FETCH_GOT64], &w[FETCH_DATA], 6, me, 1);
    else
        grain_get64_nbi(&wg, (GRAIN_GLOBAL grain_i64 *)((GRAIN_GLOBAL char *)&w[FETCH_OUT] + 4), &w[FETCH_DATA], me,
                        first);
}
