/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration test under mpirun (1 to 4 ranks) of bulk puts
 * (grain_putmem): every rank puts a 64-bit block and an unaligned 32-bit
 * block to every rank; after quiet every rank checks every sender's
 * blocks word by word.
 *
 *   putmem             the blocks
 *   putmem bad-size    a put of 6 bytes: refused, reported with the rank
 *   putmem signal      rounds of the 64-bit block with a signal
 *                      (grain_putmem_signal): every rank waits for every
 *                      sender's signal of the round, then counts the words
 *                      of its block that the signal overtook
 *
 * Exit 0 only if every rank agrees.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_ok.h"
#include "grain/grain.h"
#include "putmem_layout.h"

extern const char putmem_source[];

static int64_t value64(int rank, int i)
{
    return ((int64_t)rank << 40) | ((int64_t)i * 7 + 1);
}

static int32_t value32(int rank, int i)
{
    return rank * 100000 + i * 3 + 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int bad_size = strcmp(mode, "bad-size") == 0, signal = strcmp(mode, "signal") == 0;
    grain_t *g;
    OK(grain_init(NULL, &g));
    int me = grain_my_pe(g), n = grain_n_pes(g);
    if (n > PUTMEM_MAX_PES) {
        if (me == 0)
            fprintf(stderr, "putmem: at most %d ranks, not %d\n", PUTMEM_MAX_PES, n);
        grain_finalize(g);
        return 2;
    }
    static int64_t host[PUTMEM_WORDS];
    int32_t *src32 = (int32_t *)&host[PUTMEM_SRC32], *dst32 = (int32_t *)&host[PUTMEM_DST32] + 1;
    for (int i = 0; i < PUTMEM_WORDS64; i++)
        host[PUTMEM_SRC64 + i] = value64(me, i);
    for (int i = 0; i < PUTMEM_WORDS32; i++)
        src32[i] = value32(me, i);
    int64_t *w;
    OK(grain_malloc(g, sizeof host, (void **)&w));
    OK(grain_memcpy(g, w, host, sizeof host));
    OK(grain_barrier_all(g)); /* every rank's sources are there before any put */
    grain_program_t *prog;
    grain_kernel_t *k;
    OK(grain_program_create(g, putmem_source, NULL, &prog));
    uint64_t bytes64 = 8 * PUTMEM_WORDS64, bytes32 = bad_size ? 6 : 4 * PUTMEM_WORDS32, rounds = 8;
    OK(grain_kernel_create(prog, signal ? "signal_put" : "put_blocks", &k));
    OK(grain_kernel_set_arg_ptr(k, 1, w));
    size_t global = PUTMEM_LANES, local = PUTMEM_LANES;
    if (signal) {
        grain_kernel_t *check;
        OK(grain_kernel_create(prog, "signal_check", &check));
        OK(grain_kernel_set_arg_ptr(check, 1, w));
        for (uint64_t r = 1; r <= rounds; r++) {
            OK(grain_kernel_set_arg(k, 2, sizeof r, &r));
            OK(grain_kernel_set_arg(check, 2, sizeof r, &r));
            for (int32_t pe = 0; pe < n; pe++) {
                OK(grain_kernel_set_arg(k, 3, sizeof pe, &pe));
                OK(grain_launch(k, 1, &global, &local));
            }
            OK(grain_launch(check, 1, &global, &local));
        }
        grain_kernel_destroy(check);
    } else {
        OK(grain_kernel_set_arg(k, 2, sizeof bytes64, &bytes64));
        OK(grain_kernel_set_arg(k, 3, sizeof bytes32, &bytes32));
        OK(grain_launch(k, 1, &global, &local));
    }
    int bad = 0;
    if (bad_size) {
        grain_status_t st = grain_barrier_all(g);
        char rank[32];
        snprintf(rank, sizeof rank, "rank %d", me);
        printf("putmem: rank %d: %s: %s\n", me, grain_strerror(st), grain_error_message(g));
        bad = st != GRAIN_ERR_INVALID || strstr(grain_error_message(g), rank) == NULL;
    } else if (signal) {
        OK(grain_barrier_all(g));
        OK(grain_memcpy(g, host, w, sizeof host));
        if (host[PUTMEM_ERRORS] != 0 && ++bad)
            fprintf(stderr, "rank %d: %lld words short behind their signals\n", me, (long long)host[PUTMEM_ERRORS]);
        for (int r = 0; r < n; r++) {
            if (host[PUTMEM_SIG(r)] != (int64_t)rounds && ++bad)
                fprintf(stderr, "rank %d: rank %d's signal is %lld, not %llu\n", me, r,
                        (long long)host[PUTMEM_SIG(r)], (unsigned long long)rounds);
            for (int64_t i = 0; i < PUTMEM_WORDS64; i++) {
                int64_t want = PUTMEM_ROUND_VALUE((int64_t)rounds, (int64_t)r, i);
                if (host[PUTMEM_DST64 + r * PUTMEM_WORDS64 + i] != want && ++bad <= 10)
                    fprintf(stderr, "rank %d: word %lld of rank %d's block is %lld, expected %lld\n", me,
                            (long long)i, r, (long long)host[PUTMEM_DST64 + r * PUTMEM_WORDS64 + i], (long long)want);
            }
        }
    } else {
        OK(grain_barrier_all(g));
        OK(grain_memcpy(g, host, w, sizeof host));
        for (int r = 0; r < n; r++) {
            for (int i = 0; i < PUTMEM_WORDS64; i++)
                if (host[PUTMEM_DST64 + r * PUTMEM_WORDS64 + i] != value64(r, i) && ++bad <= 10)
                    fprintf(stderr, "rank %d: word %d of rank %d's 64-bit block is %lld, expected %lld\n", me, i,
                            r, (long long)host[PUTMEM_DST64 + r * PUTMEM_WORDS64 + i], (long long)value64(r, i));
            for (int i = 0; i < PUTMEM_WORDS32; i++)
                if (dst32[r * PUTMEM_WORDS32 + i] != value32(r, i) && ++bad <= 10)
                    fprintf(stderr, "rank %d: word %d of rank %d's 32-bit block is %d, expected %d\n", me, i, r,
                            dst32[r * PUTMEM_WORDS32 + i], value32(r, i));
        }
        if (dst32[-1] != 0 || dst32[n * PUTMEM_WORDS32] != 0) /* nothing beyond the blocks */
            bad++;
    }
    uint64_t total_bad = (uint64_t)bad;
    OK(grain_allreduce(g, &total_bad, 1, GRAIN_UINT64, GRAIN_SUM));
    if (me == 0)
        printf("putmem%s%s: %d ranks: %s (%llu mismatches)\n", *mode ? " " : "", mode, n,
               total_bad ? "FAILED" : "passed", (unsigned long long)total_bad);
    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    OK(grain_free(g, w));
    OK(grain_finalize(g));
    return total_bad ? 1 : 0;
}
