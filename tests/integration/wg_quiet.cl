/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One work-group a rank, for `rounds` rounds: every lane writes its word of
 * this rank's slice on every rank (a put, or with `slow` an active message
 * whose host handler takes its time), then the work-group quiets (or
 * fences), reads its words back from every rank with gets, and sets its flag
 * on every rank to the round.  Then it waits for every rank's flag of the
 * round and reads their words in its own heap: the quiet (fence) put them
 * there before the flag.  Every word found short is counted.
 */
#include "wg_quiet_layout.h"
#include "grain/device.h"

GRAIN_KERNEL void quiet_rounds(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w, grain_u32 rounds, grain_u32 slow,
                               grain_u32 fence)
{
    GRAIN_WG_BEGIN(wg);
    int me = grain_my_pe(&wg), n = grain_n_pes(&wg);
    grain_u32 lane = grain_local_linear_id();
    GRAIN_GLOBAL grain_i64 *mine = &w[QUIET_DATA(me, lane)];
    grain_u64 short_got = 0, short_flagged = 0;
    for (grain_u32 r = 1; r <= rounds; r++) {
        grain_i64 v = QUIET_VALUE(r, me, lane);
        for (int pe = 0; pe < n; pe++) {
            grain_am(&wg, QUIET_SLOW_AM, (grain_u64)grain_offset(&wg, mine), (grain_u64)v, pe, slow != 0);
            grain_put64(&wg, mine, v, pe, slow == 0);
        }
        if (fence)
            grain_fence(&wg);
        else
            grain_quiet(&wg);
        for (int pe = 0; pe < n; pe++)
            short_got += grain_get64(&wg, mine, pe, 1) != v;
        for (int pe = 0; pe < n; pe++)
            grain_put64(&wg, &w[QUIET_FLAG(me)], (grain_i64)r, pe, lane == 0);
        for (int src = 0; src < n; src++) {
            grain_wait_until64(&wg, &w[QUIET_FLAG(src)], GRAIN_CMP_GE, (grain_i64)r, 1);
            short_flagged += w[QUIET_DATA(src, lane)] < QUIET_VALUE(r, src, lane);
        }
    }
    if (short_got > 0)
        grain_heap_add_u64((GRAIN_GLOBAL char *)&w[QUIET_ERRORS], short_got);
    if (short_flagged > 0)
        grain_heap_add_u64((GRAIN_GLOBAL char *)&w[QUIET_FLAGGED_ERRORS], short_flagged);
}

/* The host quiet's rounds (wg_quiet host): the writer's words of round
 * `round` on every rank, by a put or with `slow` the slow active message. */
GRAIN_KERNEL void write_words(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w, grain_u32 round, grain_u32 slow)
{
    GRAIN_WG_BEGIN(wg);
    int me = grain_my_pe(&wg), n = grain_n_pes(&wg);
    grain_u32 lane = grain_local_linear_id();
    GRAIN_GLOBAL grain_i64 *mine = &w[QUIET_DATA(me, lane)];
    grain_i64 v = QUIET_VALUE(round, me, lane);
    for (int pe = 0; pe < n; pe++) {
        grain_am(&wg, QUIET_SLOW_AM, (grain_u64)grain_offset(&wg, mine), (grain_u64)v, pe, slow != 0);
        grain_put64(&wg, mine, v, pe, slow == 0);
    }
}

/* The writer's flag, set to the round on every rank. */
GRAIN_KERNEL void raise_flag(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w, grain_u32 round)
{
    GRAIN_WG_BEGIN(wg);
    int me = grain_my_pe(&wg), n = grain_n_pes(&wg);
    for (int pe = 0; pe < n; pe++)
        grain_put64(&wg, &w[QUIET_FLAG(me)], (grain_i64)round, pe, grain_local_linear_id() == 0);
}

/* Waits for `writer`'s flag of the round, then counts its words short. */
GRAIN_KERNEL void check_words(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w, grain_u32 round, grain_u32 writer)
{
    GRAIN_WG_BEGIN(wg);
    grain_u32 lane = grain_local_linear_id();
    grain_wait_until64(&wg, &w[QUIET_FLAG(writer)], GRAIN_CMP_GE, (grain_i64)round, 1);
    if (w[QUIET_DATA(writer, lane)] < QUIET_VALUE(round, writer, lane))
        grain_heap_add_u64((GRAIN_GLOBAL char *)&w[QUIET_FLAGGED_ERRORS], 1);
}
