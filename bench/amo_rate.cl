/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rates of fetching atomics and gets (grain/device.h): every work-item (or,
 * with `one_lane`, the first of each work-group) takes `per_lane` words of
 * a table at random, each on a rank other than its own where there is one,
 * and fetch-adds 1 to it or gets it, or gets it without waiting into the
 * same word of its own table and quiets once at the end.  The sum of what
 * came back goes to `sums[global id]`, so that no call is left out.  The
 * baselines do the same to the rank's own table with plain device atomics
 * and loads.
 */
#include "grain/device.h"

/* The word and rank of a lane's i-th call: splitmix64 of its global id and
 * i, so that every kernel of a run draws the same ones. */
GRAIN_INLINE grain_u64 amo_rate_draw_(grain_u64 id, grain_u64 i)
{
    grain_u64 z = id * 0x9e3779b97f4a7c15ull + i + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#define AMO_RATE_KERNEL(name, CALL, END)                                                                          \
    GRAIN_KERNEL void name(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *table, grain_u64 words, grain_u64 per_lane, \
                           grain_u32 one_lane, GRAIN_GLOBAL grain_i64 *sums)                                     \
    {                                                                                                          \
        GRAIN_WG_BEGIN(wg);                                                                                    \
        grain_u32 me = (grain_u32)grain_my_pe(&wg), n = (grain_u32)grain_n_pes(&wg);                           \
        grain_u64 id = grain_global_linear_id();                                                               \
        int active = !one_lane || grain_local_linear_id() == 0;                                                \
        grain_i64 s = 0;                                                                                       \
        for (grain_u64 i = 0; i < per_lane; i++) {                                                             \
            grain_u64 x = amo_rate_draw_(id, i);                                                               \
            grain_i32 pe = (grain_i32)(n > 1 ? (me + 1 + (grain_u32)(x % (n - 1))) % n : me);                  \
            GRAIN_GLOBAL grain_i64 *word = &table[(x >> 24) % words];                                          \
            (void)pe;                                                                                          \
            s += CALL;                                                                                         \
        }                                                                                                      \
        END;                                                                                                   \
        sums[id] = s;                                                                                          \
    }

AMO_RATE_KERNEL(rate_fetch_add, grain_atomic_fetch_add64(&wg, word, 1, pe, active), (void)0)
AMO_RATE_KERNEL(rate_get, grain_get64(&wg, word, pe, active), (void)0)
AMO_RATE_KERNEL(rate_get_nbi, (grain_get64_nbi(&wg, word, word, pe, active), 0), grain_quiet(&wg))
AMO_RATE_KERNEL(rate_fetch_add_local, active ? (grain_i64)grain_heap_rmw_u64(fetch_add, word, 1) : 0, (void)0)
AMO_RATE_KERNEL(rate_get_local, active ? (grain_i64)grain_heap_load_u64(word) : 0, (void)0)
