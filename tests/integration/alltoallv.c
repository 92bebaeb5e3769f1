/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration test of grain_alltoallv under mpirun (1 to 4 ranks): sizes that
 * differ for every pair of ranks, zero included, each byte checked; then one
 * rank sends more than the bound to another, which both must report while
 * the exchange completes everywhere; then a normal exchange again.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grain/grain.h"

#define MAX_BYTES 16

static size_t size_for(int from, int to)
{
    return (size_t)(from * 7 + to * 3) % (MAX_BYTES + 1);
}

static uint8_t byte_for(int from, int to, size_t i)
{
    return (uint8_t)(from * 31 + to * 5 + (int)i);
}

/* One exchange; rank `over` (or -1) sends MAX_BYTES + 1 to rank `victim`.
 * Returns the mismatches; *st_p is the call's status. */
static int exchange(grain_t *g, int over, int victim, grain_status_t *st_p)
{
    int me = grain_my_pe(g), n = grain_n_pes(g), bad = 0;
    size_t send_bytes[64], recv_bytes[64], at = 0;
    uint8_t send[64 * (MAX_BYTES + 1)], recv[64 * MAX_BYTES];
    for (int r = 0; r < n; r++) {
        send_bytes[r] = me == over && r == victim ? MAX_BYTES + 1 : size_for(me, r);
        for (size_t i = 0; i < send_bytes[r]; i++)
            send[at++] = byte_for(me, r, i);
    }
    *st_p = grain_alltoallv(g, send, send_bytes, MAX_BYTES, recv, recv_bytes);
    at = 0;
    for (int r = 0; r < n; r++) {
        size_t want = r == over && me == victim ? 0 : size_for(r, me);
        if (recv_bytes[r] != want) {
            fprintf(stderr, "rank %d: %zu bytes from rank %d, expected %zu\n", me, recv_bytes[r], r, want);
            bad++;
            continue;
        }
        for (size_t i = 0; i < want; i++)
            bad += recv[at + i] != byte_for(r, me, i);
        at += want;
    }
    return bad;
}

int main(void)
{
    grain_t *g;
    if (grain_init(NULL, &g) != GRAIN_OK) {
        fprintf(stderr, "grain_init: %s\n", grain_error_message(NULL));
        return 2;
    }
    int me = grain_my_pe(g), n = grain_n_pes(g), bad = 0;
    if (n > 64) {
        fprintf(stderr, "this test runs on at most 64 ranks\n");
        grain_finalize(g);
        return 2;
    }
    grain_status_t st;
    bad += exchange(g, -1, -1, &st);
    bad += st != GRAIN_OK;
    /* Rank 0 overflows the last rank: those two fail, the others do not. */
    int victim = n - 1;
    bad += exchange(g, 0, victim, &st);
    int should_fail = me == 0 || me == victim;
    if ((st == GRAIN_ERR_INVALID) != should_fail) {
        fprintf(stderr, "rank %d: the overflowing exchange returned %s\n", me, grain_strerror(st));
        bad++;
    } else if (should_fail) {
        printf("rank %d: %s\n", me, grain_error_message(g));
    }
    bad += exchange(g, -1, -1, &st);
    bad += st != GRAIN_OK;
    uint64_t total = (uint64_t)bad;
    if (grain_allreduce(g, &total, 1, GRAIN_UINT64, GRAIN_SUM) != GRAIN_OK)
        total = 1;
    if (me == 0)
        printf("alltoallv on %d ranks: %s\n", n, total == 0 ? "passed" : "FAILED");
    grain_finalize(g);
    return total == 0 ? 0 : 1;
}
