/* SPDX-License-Identifier: BSD-3-Clause */
/* A device active-message handler, for grain_am_register_program; built
 * again with -DTEST_NO_AM_TABLE (a program that lacks it) and with
 * -DTEST_AM_ID=300 (an id grain must refuse). */
#ifndef TEST_AM_ID
#define TEST_AM_ID 2
#endif
#ifndef TEST_NO_AM_TABLE
#define GRAIN_AM_HANDLERS(X) X(TEST_AM_ID, add_twice)
#endif
#include "grain/device.h"

#ifndef TEST_NO_AM_TABLE
GRAIN_AM_HANDLER(add_twice)
{
    (void)src_pe;
    grain_heap_add_u64(heap + a0, 2 * a1);
}
#endif

/* Every diverged WG-level primitive over per-lane values and active flags. */
GRAIN_KERNEL void wg_prims(GRAIN_KERNEL_CTX, GRAIN_GLOBAL const grain_i64 *values,
                           GRAIN_GLOBAL const grain_i32 *active, GRAIN_GLOBAL grain_i64 *out)
{
    GRAIN_WG_BEGIN(wg);
    grain_u64 g = grain_global_linear_id();
    grain_i64 v = values[g];
    int a = active[g];
    out[5 * g + 0] = grain_wg_reduce_add(&wg, v, a);
    out[5 * g + 1] = grain_wg_reduce_max(&wg, v, a);
    out[5 * g + 2] = grain_wg_reduce_min(&wg, v, a);
    out[5 * g + 3] = grain_wg_scan_inclusive_add(&wg, v, a);
    out[5 * g + 4] = grain_wg_scan_exclusive_add(&wg, v, a);
}

/* `rounds` combined adds a lane: in round r, lane g adds values[g] + r to
 * sums[(g * stride + r) % words] on this rank; inactive lanes add nothing. */
GRAIN_KERNEL void combine_adds(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *sums, GRAIN_GLOBAL const grain_i64 *values,
                               GRAIN_GLOBAL const grain_i32 *active, grain_u32 words, grain_u32 stride,
                               grain_u32 rounds)
{
    GRAIN_WG_BEGIN(wg);
    GRAIN_COMBINE_DECL(comb, 1);
    grain_u64 g = grain_global_linear_id();
    for (grain_u32 r = 0; r < rounds; r++)
        grain_add64_combined(&wg, &comb, &sums[(g * stride + r) % words], values[g] + r, grain_my_pe(&wg),
                             active[g]);
}

/* The same through begin/add/end, with keys of `words` words (at most 5):
 * in round r, lane g adds values[g] * (j + 1) to word j of key
 * (g * stride + r) % keys, and 1 more to word 0.  `bad` 1: the call asks for
 * 6 words a key; 2: lane 37 adds to word `words` as well. */
GRAIN_KERNEL void combine_keys(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *sums, GRAIN_GLOBAL const grain_i64 *values,
                               GRAIN_GLOBAL const grain_i32 *active, grain_u32 keys, grain_u32 stride,
                               grain_u32 rounds, grain_u32 words, grain_u32 bad)
{
    GRAIN_WG_BEGIN(wg);
    GRAIN_COMBINE_DECL(comb, 5);
    grain_u64 g = grain_global_linear_id();
    for (grain_u32 r = 0; r < rounds; r++) {
        grain_u64 key = (g * stride + r) % keys;
        grain_combine_begin(&wg, &comb, &sums[key * words], bad == 1 ? 6 : words, grain_my_pe(&wg), active[g]);
        for (grain_u32 j = 0; j < words; j++)
            grain_combine_add(&wg, &comb, j, values[g] * (j + 1));
        grain_combine_add(&wg, &comb, 0, 1);
        if (bad == 2 && g == 37)
            grain_combine_add(&wg, &comb, words, 1000);
        grain_combine_end(&wg, &comb);
    }
}

/* One message per active lane to `dest`; lane `bad_lane` sends the kind of
 * bad message `what` asks for (0: PE, 1: offset past the heap, 2: offset
 * before it, 3: misaligned, 4: unregistered handler). */
GRAIN_INLINE void send_bad_(const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *target, grain_i32 what,
                            grain_u32 bad_lane, grain_u32 handler, grain_i32 dest)
{
    int bad = grain_global_linear_id() == bad_lane;
    if (what == 0)
        grain_inc64(wg, target, bad ? grain_n_pes(wg) + 4 : dest, 1);
    else if (what == 1)
        grain_inc64(wg, bad ? target + (1 << 27) : target, dest, 1);
    else if (what == 2)
        grain_inc64(wg, bad ? target - 1 : target, dest, 1);
    else if (what == 3)
        grain_add32(wg, bad ? (GRAIN_GLOBAL grain_i32 *)((GRAIN_GLOBAL char *)target + 2)
                            : (GRAIN_GLOBAL grain_i32 *)target, 1, dest, 1);
    else
        grain_am(wg, bad ? 77 : handler, grain_offset(wg, target), 1, dest, 1);
}

/* To this rank. */
GRAIN_KERNEL void send_bad(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *target, grain_i32 what,
                           grain_u32 bad_lane, grain_u32 handler)
{
    GRAIN_WG_BEGIN(wg);
    /* The deprecated name, kept for one version, still answers. */
    send_bad_(&wg, target, what, bad_lane, handler, grain_dev_my_pe(&wg));
}

/* To another rank (tests/integration/direct_errors.c). */
GRAIN_KERNEL void send_bad_to(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *target, grain_i32 what,
                              grain_u32 bad_lane, grain_u32 handler, grain_i32 dest)
{
    GRAIN_WG_BEGIN(wg);
    send_bad_(&wg, target, what, bad_lane, handler, dest);
}
