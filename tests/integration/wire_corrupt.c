/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Buffers damaged on the wire, end to end over the MPI transport (two ranks,
 * GRAIN_PEER=off): rank 0 hands the transport raw buffers for rank 1, each a
 * PUT of 7 into a word of rank 1's heap with one field of its header or
 * message wrong, between two good ones.  Rank 1 must apply exactly the two
 * good ones, reject every other naming rank 0, count each rejection in its
 * statistics and report the first error with the number that followed; and
 * both ranks must go on (a quiet after it completes).
 *
 * With argument "gap" (GRAIN_PEER_TIMEOUT_S set): rank 0 sends buffers 0
 * and 2, never 1.  Rank 1 applies the first, holds the other, and within
 * twice the timeout fails rank 0 for the buffer that never came; both
 * ranks' quiets then return GRAIN_ERR_PEER.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_ok.h"
#include "runtime/grain_impl.h"
#include "transports/wire.h"

#define WORDS 16
#define MAX_BUFFERS 16

typedef struct raw {
    grain_send_token_t token;
    uint64_t words[3 + 2]; /* header, one 16-byte message */
} raw_t;

static atomic_uint released;

static void sent(grain_send_token_t *token)
{
    (void)token;
    atomic_fetch_add(&released, 1);
}

/* A PUT64 of 7 at heap word `word`, sequence number `seq`. */
static size_t good(raw_t *r, uint64_t heap_offset, unsigned word, uint64_t seq)
{
    grain_wire_hdr_t h = {GRAIN_WIRE_MAGIC, 0, 1, sizeof h + 16, seq};
    memcpy(r->words, &h, sizeof h);
    r->words[3] = GRAIN_CMD_PUT64 | (heap_offset + 8u * word) << 8;
    r->words[4] = 7;
    r->token.sent = sent;
    return sizeof h + 16;
}

static grain_wire_hdr_t *hdr(raw_t *r)
{
    return (grain_wire_hdr_t *)r->words;
}

static int failures;

static int me;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "rank %d: %s\n", me, what);
        failures++;
    }
}

/* One number of this rank's statistics (the `per_rank` entry of `rank`). */
static unsigned long long rank_stat(const char *json, int rank, const char *name)
{
    const char *at = strstr(json, "\"per_rank\":");
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    for (int r = 0; at != NULL && r <= rank; r++)
        at = strstr(at + 1, key);
    if (at == NULL)
        return ~0ull;
    at += strlen(key);
    return strtoull(at + (*at == '['), NULL, 10);
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Buffers 0 and 2 from rank 0: rank 1 must end the job over the gap. */
static int gap(grain_t *g, uint64_t base, uint64_t *heap_words)
{
    const char *env = getenv("GRAIN_PEER_TIMEOUT_S");
    double timeout = env != NULL ? strtod(env, NULL) : 0;
    if (timeout <= 0) {
        fprintf(stderr, "wire_corrupt gap: set GRAIN_PEER_TIMEOUT_S\n");
        return 2;
    }
    if (me == 0) {
        static raw_t raws[2];
        size_t len[2] = {good(&raws[0], base, 0, 0), good(&raws[1], base, 1, 2)};
        for (unsigned i = 0; i < 2; i++)
            OK(g->tops->send(g->transport, 1, raws[i].words, len[i], &raws[i].token));
    }
    /* Raw buffers are not counted for quiet: quiet until the failure. */
    double start = seconds(), after = 0;
    grain_status_t st = GRAIN_OK;
    while (st == GRAIN_OK && after < 4 * timeout) {
        st = grain_barrier_all(g);
        after = seconds() - start;
    }
    char why[1024];
    snprintf(why, sizeof why, "%s", grain_error_message(g));
    expect(st == GRAIN_ERR_PEER, why);
    if (me == 1) {
        uint64_t words[2];
        OK(grain_memcpy(g, words, heap_words, sizeof words));
        expect(words[0] == 7 && words[1] == 0, "rank 1 did not apply buffer 0 alone");
        expect(strstr(why, "buffer 1 from rank 0 never reached rank 1, which has held the later buffer 2") != NULL,
               why);
        expect(after <= 2 * timeout, "rank 1 took longer than twice GRAIN_PEER_TIMEOUT_S");
    }
    expect(grain_finalize(g) == GRAIN_ERR_PEER, "grain_finalize after the failure");
    printf("wire_corrupt gap: rank %d: %s after %.1f s: %s\n", me, grain_strerror(st), after,
           failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && strcmp(argv[1], "gap") != 0)) {
        fprintf(stderr, "usage: mpirun -np 2 wire_corrupt [gap]\n");
        return 2;
    }
    grain_t *g;
    OK(grain_init(NULL, &g));
    if (grain_n_pes(g) != 2 || strcmp(grain_transport_name(g), "mpi") != 0) {
        fprintf(stderr, "wire_corrupt: run two ranks over the MPI transport\n");
        return 2;
    }
    me = grain_my_pe(g);
    uint64_t *heap_words;
    OK(grain_malloc(g, WORDS * sizeof *heap_words, (void **)&heap_words));
    uint64_t base;
    OK(grain_heap_offset(g, heap_words, &base));
    OK(grain_barrier_all(g));
    /* Rank 1 past its barrier, whose end reports errors, before rank 0
     * sends: an allreduce reports none. */
    int64_t ready = 0;
    OK(grain_allreduce(g, &ready, 1, GRAIN_INT64, GRAIN_SUM));
    if (argc == 2)
        return gap(g, base, heap_words);

    if (me == 0) {
        static raw_t raws[MAX_BUFFERS];
        size_t len[MAX_BUFFERS];
        unsigned n = 0, seq = 0;
        len[n] = good(&raws[n], base, 0, seq++), n++;
        /* In sequence, so the transport delivers them and the runtime's
         * checks meet them: one field wrong each. */
        len[n] = good(&raws[n], base, 2, seq++), hdr(&raws[n])->src_pe = 5, n++;
        len[n] = good(&raws[n], base, 3, seq++), hdr(&raws[n])->bytes += 8, n++;
        len[n] = good(&raws[n], base, 4, seq++), hdr(&raws[n])->count = 2, n++;
        len[n] = good(&raws[n], base, 5, seq++), raws[n].words[3] = (raws[n].words[3] & ~0xffull) | 99u, n++;
        len[n] = good(&raws[n], base, 6, seq++), raws[n].words[3] = GRAIN_CMD_PUT64 | (uint64_t)64 << 20 << 8, n++;
        len[n] = good(&raws[n], base, 7, seq++), raws[n].words[3] += 3u << 8, n++;
        len[n] = good(&raws[n], base, 8, seq), hdr(&raws[n])->magic = 0x12345678, n++;
        /* Sequence numbers the transport itself refuses: one delivered
         * already, one too far ahead (its window is 2^20) even after the
         * good buffer below, which may come first. */
        len[n] = good(&raws[n], base, 9, 0), n++;
        len[n] = good(&raws[n], base, 10, seq + (1u << 21)), n++;
        len[n] = good(&raws[n], base, 1, seq++), n++; /* good again */
        for (unsigned i = 0; i < n; i++)
            OK(g->tops->send(g->transport, 1, raws[i].words, len[i], &raws[i].token));
        unsigned spins = 0;
        while (atomic_load(&released) < n)
            grain_wait_a_little(&spins);
    } else {
        /* Until the last good buffer is applied and all nine damaged ones
         * are counted: the network thread may meet them in any order. */
        uint64_t words[WORDS];
        time_t give_up = time(NULL) + 60;
        do {
            OK(grain_memcpy(g, words, heap_words, sizeof words));
        } while ((words[1] != 7 || atomic_load(&g->rejected_from[0]) < 9) && time(NULL) < give_up);
        for (unsigned w = 0; w < WORDS; w++)
            expect(words[w] == (w < 2 ? 7u : 0u), "the heap holds other than the two good PUTs");
    }

    /* The first error, on rank 1, and how many came after it. */
    grain_status_t st = grain_barrier_all(g);
    if (me == 1) {
        const char *why = grain_error_message(g);
        expect(st == GRAIN_ERR_BAD_MESSAGE, "quiet did not report the rejected buffers");
        expect(strstr(why, "a buffer that arrived from rank 0 says it comes from rank 5") != NULL, why);
        expect(strstr(why, "and 8 more errors after it on rank 1") != NULL, why);
    } else {
        expect(st == GRAIN_OK, "quiet failed on the sending rank");
    }
    OK(grain_barrier_all(g)); /* the job goes on */

    char *json = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&json, &size);
    if (f == NULL)
        return 2;
    grain_stats_json(g, f);
    fclose(f);
    if (me == 1) {
        expect(rank_stat(json, 1, "rejected_buffers") == 9, json);
        expect(rank_stat(json, 1, "rejected_buffers_from") == 9, json);
        /* What the damaged buffers' headers say: one message each, none
         * without a header, two in the one whose count is wrong. */
        expect(rank_stat(json, 1, "rejected_messages") == 9, json);
    }
    free(json);
    OK(grain_finalize(g));
    if (failures == 0 && me == 1)
        printf("wire_corrupt: 9 damaged buffers rejected, 2 good ones applied\n");
    return failures ? 1 : 0;
}
