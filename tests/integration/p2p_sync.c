/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration test under mpirun (1 to 4 ranks) of point-to-point
 * synchronization (grain/device/sync.h):
 *
 *   p2p_sync               grain_test's truth table for every comparison, on
 *                          64- and 32-bit words; then one work-group a rank
 *                          whose lanes send to every rank and wait, each kind
 *                          of wait in turn, for what the others send; then
 *                          the _all, _any and _some calls on known words and
 *                          on a token from every rank; then puts with signal,
 *                          whose data a lane reads once it saw the signal
 *   p2p_sync bad-address   a wait outside the heap: refused, reported with
 *                          the rank, and the kernel ends
 *   p2p_sync bad-cmp       a wait with a comparison that is none of them
 *   p2p_sync bad-signal    a put whose signal word is outside the heap
 *   p2p_sync bad-signal-op a put whose signal operation is none
 *
 * Exit 0 only if every rank agrees.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_ok.h"
#include "grain/grain.h"
#include "p2p_sync_pattern.h"

extern const char p2p_sync_source[];

static int holds(int64_t seen, int cmp, int64_t value)
{
    switch (cmp) {
    case 0: return seen == value;
    case 1: return seen != value;
    case 2: return seen > value;
    case 3: return seen >= value;
    case 4: return seen < value;
    default: return seen <= value;
    }
}

/* The _all, _any and _some lanes of the kernel `many`: what each must
 * answer on `n` ranks, and its detail (checked where `check` is set). */
typedef struct many_want {
    int64_t answer, detail;
    int check_detail;
} many_want_t;

static many_want_t many_want(int lane, int n)
{
    switch (lane) {
    case 0: case 2: case 8: case 11: return (many_want_t){1, 0, 0};
    case 3: case 7: case 15: return (many_want_t){-1, 0, 0}; /* GRAIN_NO_INDEX */
    case 4: return (many_want_t){6, 0, 0};
    case 5: return (many_want_t){3, 3, 1}; /* 0, 1, 3 below 4; 2 left out */
    case 6: return (many_want_t){4, 2, 1};
    case 9: return (many_want_t){3, 0, 0};
    case 10: return (many_want_t){3, 4, 1}; /* 4, 6, 7; 5 left out */
    case 12: case 16: return (many_want_t){n, 0, 0};
    case 17: case 19: case 22: return (many_want_t){1, 0, 0};
    case 20: return (many_want_t){3, 3, 1}; /* 0, 3, 6 equal their values; 2 and 5 left out */
    case 21: return (many_want_t){5, 7, 1}; /* 1, 2, 4, 5, 7 differ */
    case 23: return (many_want_t){3, 6, 1};
    default: return (many_want_t){0, 0, 0};
    }
}

static int many_ok(int lane, int n, int64_t answer, int64_t detail)
{
    if (lane == 13) /* any token: its index, and the token there */
        return answer >= 0 && answer < n && detail == answer + 1;
    if (lane == 14) /* some tokens: how many, and the first one right */
        return answer >= 1 && answer <= n && detail == 1;
    many_want_t w = many_want(lane, n);
    return answer == w.answer && (!w.check_detail || detail == w.detail);
}

static void launch(grain_kernel_t *k, int64_t *w)
{
    size_t global = P2P_LANES, local = P2P_LANES;
    OK(grain_kernel_set_arg_ptr(k, 1, w));
    OK(grain_launch(k, 1, &global, &local));
}

/* A bad call of `kernel` (`beyond` and `arg`: its arguments) must end the
 * kernel and come back as `want` naming the rank. */
static int bad_call(grain_t *g, grain_program_t *prog, const char *kernel, int64_t *w, uint64_t beyond, int32_t arg,
                    grain_status_t want)
{
    grain_kernel_t *k;
    OK(grain_kernel_create(prog, kernel, &k));
    OK(grain_kernel_set_arg(k, 2, sizeof beyond, &beyond));
    OK(grain_kernel_set_arg(k, 3, sizeof arg, &arg));
    launch(k, w);
    grain_status_t st = grain_wait(g);
    char rank[32];
    snprintf(rank, sizeof rank, "rank %d", grain_my_pe(g));
    int ok = st == want && strstr(grain_error_message(g), rank) != NULL;
    printf("p2p_sync: rank %d: %s: %s\n", grain_my_pe(g), grain_strerror(st), grain_error_message(g));
    grain_kernel_destroy(k);
    return ok;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    grain_t *g;
    OK(grain_init(NULL, &g));
    int me = grain_my_pe(g), n = grain_n_pes(g);
    if (n > P2P_MAX_PES) {
        if (me == 0)
            fprintf(stderr, "p2p_sync: at most %d ranks, not %d\n", P2P_MAX_PES, n);
        grain_finalize(g);
        return 2;
    }
    int64_t *w, host[P2P_WORDS];
    OK(grain_malloc(g, sizeof host, (void **)&w));
    grain_program_t *prog;
    OK(grain_program_create(g, p2p_sync_source, NULL, &prog));
    int bad = 0;
    if (strcmp(mode, "bad-address") == 0) {
        bad = !bad_call(g, prog, "bad_wait", w, 1ull << 40, 0, GRAIN_ERR_BAD_OFFSET);
    } else if (strcmp(mode, "bad-cmp") == 0) {
        bad = !bad_call(g, prog, "bad_wait", w, 0, 9, GRAIN_ERR_INVALID);
    } else if (strcmp(mode, "bad-signal") == 0) {
        bad = !bad_call(g, prog, "bad_signal", w, 1ull << 40, 1, GRAIN_ERR_BAD_OFFSET);
    } else if (strcmp(mode, "bad-signal-op") == 0) {
        bad = !bad_call(g, prog, "bad_signal", w, 8 * P2P_SIG, 7, GRAIN_ERR_INVALID);
    } else {
        int64_t all = (int64_t)n * P2P_LANES;
        memset(host, 0, sizeof host);
        host[P2P_DOWN] = all;
        host[P2P_W64] = P2P_V64;
        int32_t w32s[2] = {0, (int32_t)all}, w32[2] = {P2P_V32, 0};
        memcpy(&host[P2P_W32S], w32s, sizeof w32s);
        memcpy(&host[P2P_W32], w32, sizeof w32);
        int32_t arr32[8], status[8], exclude_all[8], vals32[8];
        for (int i = 0; i < 8; i++) {
            host[P2P_ARR + i] = i;
            host[P2P_VALS + i] = i % 3 ? i + 1 : i;
            vals32[i] = i % 3 ? i + 1 : i;
            arr32[i] = i;
            status[i] = i == 2 || i == 5;
            exclude_all[i] = 1;
        }
        memcpy(&host[P2P_ARR32], arr32, sizeof arr32);
        memcpy(&host[P2P_STATUS], status, sizeof status);
        memcpy(&host[P2P_EXCLUDE_ALL], exclude_all, sizeof exclude_all);
        memcpy(&host[P2P_VALS32], vals32, sizeof vals32);
        OK(grain_memcpy(g, w, host, sizeof host));
        OK(grain_barrier_all(g)); /* every rank's words are set before any message */
        grain_kernel_t *truth, *wait, *many, *many_wait, *signal;
        OK(grain_kernel_create(prog, "truth", &truth));
        OK(grain_kernel_create(prog, "arrive_and_wait", &wait));
        OK(grain_kernel_create(prog, "many", &many));
        OK(grain_kernel_create(prog, "many_wait", &many_wait));
        OK(grain_kernel_create(prog, "signal_after_data", &signal));
        launch(truth, w);
        OK(grain_wait(g));
        OK(grain_memcpy(g, host, w, sizeof host)); /* checked before anything waits */
        for (int l = 0; l < P2P_LANES; l++) {
            int64_t word = l < 18 ? P2P_V64 : P2P_V32;
            int want = l < P2P_TRUTH_LANES ? holds(word, P2P_TRUTH_CMP(l), word + P2P_TRUTH_DELTA(l))
                                           : l == P2P_TRUTH_LANES; /* the unsigned signal wait */
            if (host[P2P_TRUTH + l] != want && ++bad <= 10)
                fprintf(stderr, "rank %d: grain_test lane %d (comparison %d, %d bits, value %+d) answered %lld\n",
                        me, l, P2P_TRUTH_CMP(l), l < 18 ? 64 : 32, P2P_TRUTH_DELTA(l),
                        (long long)host[P2P_TRUTH + l]);
        }
        launch(wait, w);
        OK(grain_barrier_all(g));
        OK(grain_memcpy(g, host, w, sizeof host));
        for (int l = 0; l < P2P_LANES; l++) {
            int kind = l % P2P_KINDS;
            int64_t final = kind == 5 ? (me + n - 1) % n + 1 : kind < 3 || kind == 6 ? all : 0;
            if ((host[P2P_SEEN + l] != final || host[P2P_AFTER + l] != 1) && ++bad <= 10)
                fprintf(stderr, "rank %d: lane %d (wait kind %d) saw %lld after its wait, expected %lld; the test "
                        "after it answered %lld\n", me, l, kind, (long long)host[P2P_SEEN + l], (long long)final,
                        (long long)host[P2P_AFTER + l]);
        }
        int32_t ends[2];
        memcpy(ends, &host[P2P_W32S], sizeof ends);
        if ((host[P2P_UP] != all || host[P2P_DOWN] != 0 || ends[0] != all || ends[1] != 0) && ++bad <= 10)
            fprintf(stderr, "rank %d: the counters ended at %lld, %lld, %d, %d\n", me, (long long)host[P2P_UP],
                    (long long)host[P2P_DOWN], ends[0], ends[1]);
        launch(many, w);
        OK(grain_wait(g));
        launch(many_wait, w);
        OK(grain_barrier_all(g));
        OK(grain_memcpy(g, host, w, sizeof host));
        for (int l = 0; l < P2P_LANES; l++)
            if (!many_ok(l, n, host[P2P_MANY + l], host[P2P_DETAIL + l]) && ++bad <= 10)
                fprintf(stderr, "rank %d: _all/_any/_some lane %d answered %lld (detail %lld), expected %lld (%lld)\n",
                        me, l, (long long)host[P2P_MANY + l], (long long)host[P2P_DETAIL + l],
                        (long long)many_want(l, n).answer, (long long)many_want(l, n).detail);
        grain_kernel_destroy(truth);
        grain_kernel_destroy(wait);
        launch(signal, w);
        OK(grain_barrier_all(g));
        OK(grain_memcpy(g, host, w, sizeof host));
        for (int l = 0; l < P2P_LANES; l++)
            if (host[P2P_WRONG + l] != 0 && ++bad <= 10)
                fprintf(stderr, "rank %d: lane %d found %lld data words wrong after their signals\n", me, l,
                        (long long)host[P2P_WRONG + l]);
        if (host[P2P_SIG] != all && ++bad <= 10)
            fprintf(stderr, "rank %d: the signal ended at %lld, expected %lld\n", me, (long long)host[P2P_SIG],
                    (long long)all);
        grain_kernel_destroy(many);
        grain_kernel_destroy(many_wait);
        grain_kernel_destroy(signal);
    }
    uint64_t total_bad = (uint64_t)bad;
    OK(grain_allreduce(g, &total_bad, 1, GRAIN_UINT64, GRAIN_SUM));
    if (me == 0)
        printf("p2p_sync%s%s: %d ranks: %s (%llu mismatches)\n", *mode ? " " : "", mode, n,
               total_bad ? "FAILED" : "passed", (unsigned long long)total_bad);
    grain_program_destroy(prog);
    OK(grain_free(g, w));
    OK(grain_finalize(g));
    return total_bad ? 1 : 0;
}
