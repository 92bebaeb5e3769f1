/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Point-to-point synchronization (grain/device/sync.h): grain_test's truth
 * table on known words, then lanes that wait for words other ranks change
 * with messages, each kind of wait once a lane % P2P_KINDS.
 */
#include "p2p_sync_pattern.h"
#include "grain/device.h"

GRAIN_KERNEL void truth(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w)
{
    GRAIN_WG_BEGIN(wg);
    grain_u32 l = grain_local_linear_id();
    int cmp = P2P_TRUTH_CMP(l), delta = P2P_TRUTH_DELTA(l);
    GRAIN_GLOBAL grain_i32 *w32 = (GRAIN_GLOBAL grain_i32 *)&w[P2P_W32];
    int got = l < 18 ? grain_test64(&wg, &w[P2P_W64], cmp, P2P_V64 + delta, 1)
                     : grain_test32(&wg, w32, cmp, P2P_V32 + delta, l < P2P_TRUTH_LANES);
    /* Signals compare unsigned: P2P_V64 is above 5 as a signal (a signed
     * comparison would wait for ever). */
    grain_u64 seen = grain_signal_wait_until(&wg, (GRAIN_GLOBAL grain_u64 *)&w[P2P_W64], GRAIN_CMP_GT, 5,
                                             l == P2P_TRUTH_LANES);
    w[P2P_TRUTH + l] = l == P2P_TRUTH_LANES ? seen == (grain_u64)P2P_V64 : got;
}

GRAIN_KERNEL void arrive_and_wait(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w)
{
    GRAIN_WG_BEGIN(wg);
    grain_u32 l = grain_local_linear_id();
    int me = grain_my_pe(&wg), n = grain_n_pes(&wg);
    GRAIN_GLOBAL grain_i32 *up32 = (GRAIN_GLOBAL grain_i32 *)&w[P2P_W32S], *down32 = up32 + 1;
    for (int pe = 0; pe < n; pe++) {
        grain_inc64(&wg, &w[P2P_UP], pe, 1);
        grain_add64(&wg, &w[P2P_DOWN], -1, pe, 1);
        grain_inc32(&wg, up32, pe, 1);
        grain_add32(&wg, down32, -1, pe, 1);
    }
    grain_put64(&wg, &w[P2P_TOKEN], me + 1, (me + 1) % n, l == 0);

    grain_i64 all = (grain_i64)n * P2P_LANES, seen = 0;
    int kind = (int)(l % P2P_KINDS), after = 0;
    switch (kind) {
    case 0:
        grain_wait_until64(&wg, &w[P2P_UP], GRAIN_CMP_EQ, all, 1);
        after = grain_test64(&wg, &w[P2P_UP], GRAIN_CMP_EQ, all, 1);
        break;
    case 1:
        grain_wait_until64(&wg, &w[P2P_UP], GRAIN_CMP_GE, all, 1);
        after = grain_test64(&wg, &w[P2P_UP], GRAIN_CMP_GE, all, 1);
        break;
    case 2:
        grain_wait_until64(&wg, &w[P2P_UP], GRAIN_CMP_GT, all - 1, 1);
        after = grain_test64(&wg, &w[P2P_UP], GRAIN_CMP_GT, all - 1, 1);
        break;
    case 3:
        grain_wait_until64(&wg, &w[P2P_DOWN], GRAIN_CMP_LE, 0, 1);
        after = grain_test64(&wg, &w[P2P_DOWN], GRAIN_CMP_LE, 0, 1);
        break;
    case 4:
        grain_wait_until64(&wg, &w[P2P_DOWN], GRAIN_CMP_LT, 1, 1);
        after = grain_test64(&wg, &w[P2P_DOWN], GRAIN_CMP_LT, 1, 1);
        break;
    case 5:
        seen = (grain_i64)grain_signal_wait_until(&wg, (GRAIN_GLOBAL grain_u64 *)&w[P2P_TOKEN], GRAIN_CMP_NE, 0, 1);
        after = grain_test64(&wg, &w[P2P_TOKEN], GRAIN_CMP_NE, 0, 1);
        break;
    case 6:
        grain_wait_until32(&wg, up32, GRAIN_CMP_EQ, (grain_i32)all, 1);
        after = grain_test32(&wg, up32, GRAIN_CMP_EQ, (grain_i32)all, 1);
        break;
    default:
        grain_wait_until32(&wg, down32, GRAIN_CMP_LT, 1, 1);
        after = grain_test32(&wg, down32, GRAIN_CMP_LT, 1, 1);
        break;
    }
    if (kind == 5)
        w[P2P_SEEN + l] = seen;
    else if (kind >= 6)
        w[P2P_SEEN + l] = grain_atomic_load_acquire_u32(kind == 6 ? up32 : down32);
    else
        w[P2P_SEEN + l] = (grain_i64)grain_atomic_load_acquire_u64(&w[kind < 3 ? P2P_UP : P2P_DOWN]);
    w[P2P_AFTER + l] = after;
}

/*
 * grain_test_all/any/some on known words (lanes 0-11; their _vector forms:
 * 17-21), after every rank's
 * token is sent, for many_wait's lanes 12-16 to wait for.  Each lane writes
 * its answer to P2P_MANY and, where there is one, a detail to P2P_DETAIL:
 * the word an index names or the first index found.
 */
GRAIN_KERNEL void many(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w)
{
    GRAIN_WG_BEGIN(wg);
    grain_u32 l = grain_local_linear_id();
    int me = grain_my_pe(&wg), n = grain_n_pes(&wg);
    GRAIN_GLOBAL grain_i64 *arr = &w[P2P_ARR], *tok = &w[P2P_TOK];
    GRAIN_GLOBAL grain_i32 *arr32 = (GRAIN_GLOBAL grain_i32 *)&w[P2P_ARR32];
    GRAIN_GLOBAL grain_i32 *tok32 = (GRAIN_GLOBAL grain_i32 *)&w[P2P_TOK32];
    GRAIN_GLOBAL const grain_i32 *st = (GRAIN_GLOBAL const grain_i32 *)&w[P2P_STATUS];
    GRAIN_GLOBAL const grain_i32 *none = (GRAIN_GLOBAL const grain_i32 *)&w[P2P_EXCLUDE_ALL];
    GRAIN_GLOBAL grain_u64 *idx = (GRAIN_GLOBAL grain_u64 *)&w[P2P_IDX + 8 * (l % 32)];
    GRAIN_GLOBAL const grain_i64 *vals = &w[P2P_VALS];
    GRAIN_GLOBAL const grain_i32 *vals32 = (GRAIN_GLOBAL const grain_i32 *)&w[P2P_VALS32];
    for (int pe = 0; pe < n; pe++) {
        grain_put64(&wg, &tok[me], me + 1, pe, l == 0);
        grain_put32(&wg, &tok32[me], me + 1, pe, l == 0);
    }
    grain_i64 r = 0, detail = 0;
    switch (l) {
    case 0: r = grain_test_all64(&wg, arr, 8, st, GRAIN_CMP_GE, 0, 1); break;
    case 1: r = grain_test_all64(&wg, arr, 8, st, GRAIN_CMP_GE, 1, 1); break;
    case 2: r = grain_test_all64(&wg, arr, 8, st, GRAIN_CMP_NE, 2, 1); break;
    case 3: r = (grain_i64)grain_test_any64(&wg, arr, 8, st, GRAIN_CMP_EQ, 5, 1); break;
    case 4: r = (grain_i64)grain_test_any64(&wg, arr, 8, st, GRAIN_CMP_GT, 5, 1); break;
    case 5:
        r = (grain_i64)grain_test_some64(&wg, arr, 8, idx, st, GRAIN_CMP_LT, 4, 1);
        detail = (grain_i64)idx[2];
        break;
    case 6:
        r = (grain_i64)grain_test_some64(&wg, arr, 8, idx, 0, GRAIN_CMP_LT, 4, 1);
        detail = (grain_i64)idx[2];
        break;
    case 7: r = (grain_i64)grain_test_any64(&wg, arr, 8, st, GRAIN_CMP_GE, 0, 0); break;
    case 8: r = grain_test_all32(&wg, arr32, 8, st, GRAIN_CMP_LE, 7, 1); break;
    case 9: r = (grain_i64)grain_test_any32(&wg, arr32, 8, st, GRAIN_CMP_GE, 2, 1); break;
    case 10:
        r = (grain_i64)grain_test_some32(&wg, arr32, 8, idx, st, GRAIN_CMP_GE, 4, 1);
        detail = (grain_i64)idx[0];
        break;
    case 11: r = grain_test_all64(&wg, arr, 8, none, GRAIN_CMP_EQ, 99, 1); break;
    case 17: r = grain_test_all_vector64(&wg, arr, 8, st, GRAIN_CMP_LE, vals, 1); break;
    case 18: r = grain_test_all_vector64(&wg, arr, 8, 0, GRAIN_CMP_EQ, vals, 1); break;
    case 19: r = (grain_i64)grain_test_any_vector64(&wg, arr, 8, st, GRAIN_CMP_LT, vals, 1); break;
    case 20:
        r = (grain_i64)grain_test_some_vector64(&wg, arr, 8, idx, st, GRAIN_CMP_EQ, vals, 1);
        detail = (grain_i64)idx[1];
        break;
    case 21:
        r = (grain_i64)grain_test_some_vector32(&wg, arr32, 8, idx, 0, GRAIN_CMP_NE, vals32, 1);
        detail = (grain_i64)idx[4];
        break;
    default: break;
    }
    w[P2P_MANY + l] = r; /* lanes 12-16: many_wait's, which runs after */
    w[P2P_DETAIL + l] = detail;
}

/* Lanes 12-16 of the same table: waits for every rank's token (PoCL 3.1's
 * compiler recursed without end on them as cases of the switch above); 22
 * and 23: waits of the _vector forms, satisfied at once. */
GRAIN_KERNEL void many_wait(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w)
{
    GRAIN_WG_BEGIN(wg);
    grain_u32 l = grain_local_linear_id();
    int n = grain_n_pes(&wg);
    GRAIN_GLOBAL grain_i64 *arr = &w[P2P_ARR], *tok = &w[P2P_TOK];
    GRAIN_GLOBAL grain_i32 *tok32 = (GRAIN_GLOBAL grain_i32 *)&w[P2P_TOK32];
    GRAIN_GLOBAL const grain_i32 *none = (GRAIN_GLOBAL const grain_i32 *)&w[P2P_EXCLUDE_ALL];
    GRAIN_GLOBAL grain_u64 *idx = (GRAIN_GLOBAL grain_u64 *)&w[P2P_IDX + 8 * (l % 32)];
    grain_i64 r = 0, detail = 0;
    grain_wait_until_all64(&wg, tok, (grain_u64)n, 0, GRAIN_CMP_NE, 0, l == 12);
    grain_wait_until_all32(&wg, tok32, (grain_u64)n, 0, GRAIN_CMP_GT, 0, l == 16);
    if (l == 12 || l == 16)
        for (int i = 0; i < n; i++)
            r += l == 12 ? grain_atomic_load_acquire_u64(&tok[i]) == (grain_u64)(i + 1)
                         : grain_atomic_load_acquire_u32(&tok32[i]) == (grain_u32)(i + 1);
    grain_u64 any = grain_wait_until_any64(&wg, tok, (grain_u64)n, 0, GRAIN_CMP_NE, 0, l == 13);
    grain_u64 some = grain_wait_until_some64(&wg, tok, (grain_u64)n, idx, 0, GRAIN_CMP_NE, 0, l == 14);
    grain_u64 excluded = grain_wait_until_any64(&wg, arr, 4, none, GRAIN_CMP_EQ, 99, l == 15);
    GRAIN_GLOBAL const grain_i64 *vals = &w[P2P_VALS];
    GRAIN_GLOBAL const grain_i32 *vals32 = (GRAIN_GLOBAL const grain_i32 *)&w[P2P_VALS32];
    GRAIN_GLOBAL grain_i32 *arr32 = (GRAIN_GLOBAL grain_i32 *)&w[P2P_ARR32];
    GRAIN_GLOBAL const grain_i32 *st = (GRAIN_GLOBAL const grain_i32 *)&w[P2P_STATUS];
    grain_wait_until_all_vector32(&wg, arr32, 8, 0, GRAIN_CMP_LE, vals32, l == 22);
    grain_u64 some_v = grain_wait_until_some_vector64(&wg, arr, 8, idx, st, GRAIN_CMP_EQ, vals, l == 23);
    if (l == 13) {
        r = (grain_i64)any;
        detail = (grain_i64)grain_atomic_load_acquire_u64(&tok[any]);
    } else if (l == 14) {
        r = (grain_i64)some;
        detail = (grain_i64)grain_atomic_load_acquire_u64(&tok[idx[0]]) - (grain_i64)idx[0];
    } else if (l == 15) {
        r = (grain_i64)excluded;
    } else if (l == 22) {
        r = 1; /* it returned */
    } else if (l == 23) {
        r = (grain_i64)some_v;
        detail = (grain_i64)idx[2];
    }
    if ((l >= 12 && l <= 16) || l == 22 || l == 23) {
        w[P2P_MANY + l] = r;
        w[P2P_DETAIL + l] = detail;
    }
}

/*
 * Put with signal: every lane puts its word to every rank, each put adding
 * 1 to that rank's signal; once a lane has seen its own rank's signal reach
 * ranks x lanes, every data word must be there.  Lane 0 also sets the next
 * rank's second signal after its second data word; lane 1 waits for it.
 */
GRAIN_KERNEL void signal_after_data(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w)
{
    GRAIN_WG_BEGIN(wg);
    grain_u32 l = grain_local_linear_id();
    int me = grain_my_pe(&wg), n = grain_n_pes(&wg);
    GRAIN_GLOBAL grain_u64 *sig = (GRAIN_GLOBAL grain_u64 *)&w[P2P_SIG];
    GRAIN_GLOBAL grain_u64 *sigset = (GRAIN_GLOBAL grain_u64 *)&w[P2P_SIGSET];
    for (int pe = 0; pe < n; pe++)
        grain_put64_signal(&wg, &w[P2P_DATA + me * P2P_LANES + l], P2P_VALUE(me, l), sig, 1, GRAIN_SIGNAL_ADD, pe,
                           1);
    grain_put64_signal(&wg, &w[P2P_DATA2], P2P_VALUE(me, 999), sigset, (grain_u64)me + 1, GRAIN_SIGNAL_SET,
                       (me + 1) % n, l == 0);
    grain_signal_wait_until(&wg, sig, GRAIN_CMP_EQ, (grain_u64)n * P2P_LANES, 1);
    grain_i64 wrong = 0;
    for (int r = 0; r < n; r++)
        wrong += (grain_i64)grain_atomic_load_acquire_u64(&w[P2P_DATA + r * P2P_LANES + l]) != P2P_VALUE(r, l);
    if (l == 1) {
        grain_u64 from = grain_signal_wait_until(&wg, sigset, GRAIN_CMP_NE, 0, 1) - 1;
        wrong += (grain_i64)grain_atomic_load_acquire_u64(&w[P2P_DATA2]) != P2P_VALUE(from, 999);
        wrong += from != (grain_u64)((me + n - 1) % n);
    }
    w[P2P_WRONG + l] = wrong;
}

/* A put whose signal word is `beyond` bytes past w, with operation `op`:
 * refused and reported. */
GRAIN_KERNEL void bad_signal(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w, grain_u64 beyond, grain_i32 op)
{
    GRAIN_WG_BEGIN(wg);
    GRAIN_GLOBAL grain_u64 *sig = (GRAIN_GLOBAL grain_u64 *)((GRAIN_GLOBAL char *)w + beyond);
    grain_put64_signal(&wg, &w[P2P_DATA], 1, sig, 1, (grain_u32)op, grain_my_pe(&wg), grain_local_linear_id() == 0);
}

/* Lane 0 waits on a word `beyond` bytes past w with comparison `cmp`: a bad
 * call must be refused, reported and not wait. */
GRAIN_KERNEL void bad_wait(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *w, grain_u64 beyond, grain_i32 cmp)
{
    GRAIN_WG_BEGIN(wg);
    GRAIN_GLOBAL grain_i64 *word = (GRAIN_GLOBAL grain_i64 *)((GRAIN_GLOBAL char *)w + beyond);
    grain_wait_until64(&wg, word, cmp, 1, grain_local_linear_id() == 0);
    w[P2P_TRUTH] = grain_test64(&wg, word, cmp, 1, grain_local_linear_id() == 0);
}
