/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration test under mpirun (1 to 4 ranks) of the work-group quiet and
 * fence (grain_quiet, grain_fence in grain/device.h): in each round every
 * lane of one work-group a rank writes a word on every rank, quiets, gets
 * its words back, then raises a flag on every rank; a rank that sees a
 * sender's flag of a round finds the sender's words of that round in its
 * heap (wg_quiet.cl).
 *
 *   wg_quiet         words written by puts, then grain_quiet
 *   wg_quiet fence   the same with grain_fence
 *   wg_quiet slow    words written by an active message whose host handler
 *                    sleeps before it stores: with receive threads, a flag
 *                    in a later buffer is applied while they sleep unless
 *                    the quiet waited for them
 *   wg_quiet host    the host's grain_quiet, OpenSHMEM's per-rank quiet: in
 *                    round r one rank (r mod the ranks) writes its words on
 *                    every rank, quiets alone, then raises its flag on every
 *                    rank, while every rank waits in a kernel for that flag
 *                    and then counts the writer's words short.  The others
 *                    do not call grain_quiet meanwhile: a quiet that waited
 *                    for them would never return
 *   wg_quiet host-slow  the same with the slow active message
 *
 * Exit 0 only if every rank agrees; 77 (skipped) for `slow` where ranks have
 * no host handlers.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check_ok.h"
#include "grain/grain.h"
#include "wg_quiet_layout.h"

extern const char wg_quiet_source[];

static void slow_store(char *heap, uint32_t src, uint64_t offset, uint64_t value)
{
    (void)src;
    nanosleep(&(struct timespec){0, 2000000}, NULL);
    __atomic_store_n((int64_t *)(heap + offset), (int64_t)value, __ATOMIC_RELEASE);
}

static grain_kernel_t *kernel(grain_program_t *prog, const char *name, int64_t *w, uint32_t round)
{
    grain_kernel_t *k;
    OK(grain_kernel_create(prog, name, &k));
    OK(grain_kernel_set_arg_ptr(k, 1, w));
    OK(grain_kernel_set_arg(k, 2, sizeof round, &round));
    return k;
}

static void launch(grain_kernel_t *k)
{
    size_t global = QUIET_LANES, local = QUIET_LANES;
    OK(grain_launch(k, 1, &global, &local));
    grain_kernel_destroy(k);
}

/* Every round of one work-group's quiets (or fences), in one kernel. */
static void wg_rounds(grain_program_t *prog, int64_t *w, uint32_t rounds, uint32_t slow, uint32_t fence)
{
    grain_kernel_t *k = kernel(prog, "quiet_rounds", w, rounds);
    OK(grain_kernel_set_arg(k, 3, sizeof slow, &slow));
    OK(grain_kernel_set_arg(k, 4, sizeof fence, &fence));
    launch(k);
}

/* The last round up to `rounds` whose writer is `pe` (0: none). */
static int64_t last_round(uint32_t rounds, int pe, int n)
{
    int64_t r = (int64_t)rounds;
    while (r > 0 && (r - 1) % n != pe)
        r--;
    return r;
}

/* The host's per-rank quiet between the writer's data and its flag.  Each
 * kernel is created just before its launch, as applications may: on CUDA
 * under lazy loading that hung beside the apply agent (gpu_api.h). */
static void host_rounds(grain_t *g, grain_program_t *prog, int64_t *w, uint32_t rounds, uint32_t slow)
{
    int me = grain_my_pe(g), n = grain_n_pes(g);
    for (uint32_t r = 1; r <= rounds; r++) {
        uint32_t writer = (r - 1) % (uint32_t)n;
        if ((uint32_t)me == writer) {
            grain_kernel_t *k = kernel(prog, "write_words", w, r);
            OK(grain_kernel_set_arg(k, 3, sizeof slow, &slow));
            launch(k);
            OK(grain_quiet(g));
            launch(kernel(prog, "raise_flag", w, r));
        }
        grain_kernel_t *k = kernel(prog, "check_words", w, r);
        OK(grain_kernel_set_arg(k, 3, sizeof writer, &writer));
        launch(k);
        OK(grain_wait(g));
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "quiet";
    uint32_t host_quiet = strncmp(mode, "host", 4) == 0;
    uint32_t slow = strcmp(mode, "slow") == 0 || strcmp(mode, "host-slow") == 0, fence = strcmp(mode, "fence") == 0;
    uint32_t rounds = slow ? 4 : 16;
    grain_t *g;
    OK(grain_init(NULL, &g));
    int me = grain_my_pe(g), n = grain_n_pes(g);
    if (n > QUIET_MAX_PES) {
        if (me == 0)
            fprintf(stderr, "wg_quiet: at most %d ranks, not %d\n", QUIET_MAX_PES, n);
        grain_finalize(g);
        return 2;
    }
    if (slow && grain_am_register(g, QUIET_SLOW_AM, slow_store) == GRAIN_ERR_UNSUPPORTED) {
        if (me == 0)
            printf("wg_quiet %s: skipped: %s\n", mode, grain_error_message(g));
        OK(grain_finalize(g));
        return 77;
    }
    int64_t *w;
    OK(grain_malloc(g, QUIET_WORDS * sizeof *w, (void **)&w));
    static int64_t host[QUIET_WORDS];
    OK(grain_memcpy(g, w, host, sizeof host));
    OK(grain_barrier_all(g)); /* every rank's words are zero before any is written */
    grain_program_t *prog;
    OK(grain_program_create(g, wg_quiet_source, NULL, &prog));
    if (host_quiet)
        host_rounds(g, prog, w, rounds, slow);
    else
        wg_rounds(prog, w, rounds, slow, fence);
    OK(grain_barrier_all(g));
    OK(grain_memcpy(g, host, w, sizeof host));
    uint64_t bad = (uint64_t)(host[QUIET_ERRORS] + host[QUIET_FLAGGED_ERRORS]);
    if (bad > 0)
        fprintf(stderr,
                "wg_quiet %s: rank %d found words short of their round: %lld by gets after the quiet, %lld behind "
                "a flag\n",
                mode, me, (long long)host[QUIET_ERRORS], (long long)host[QUIET_FLAGGED_ERRORS]);
    for (int r = 0; r < n; r++) {
        int64_t want = host_quiet ? last_round(rounds, r, n) : (int64_t)rounds;
        if (host[QUIET_FLAG(r)] != want && ++bad)
            fprintf(stderr, "wg_quiet %s: rank %d: rank %d's flag is %lld, not %lld\n", mode, me, r,
                    (long long)host[QUIET_FLAG(r)], (long long)want);
    }
    OK(grain_allreduce(g, &bad, 1, GRAIN_UINT64, GRAIN_SUM));
    if (me == 0)
        printf("wg_quiet %s: %d ranks, %u rounds: %s (%llu wrong)\n", mode, n, rounds, bad ? "FAILED" : "passed",
               (unsigned long long)bad);
    grain_program_destroy(prog);
    OK(grain_free(g, w));
    OK(grain_finalize(g));
    return bad ? 1 : 0;
}
