/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI transport's receive buffers lent to the runtime, under mpirun (2
 * to 4 ranks), with no backend: handlers stand in for the runtime's
 * asynchronous copies into device memory.  received() keeps two buffers in
 * three and settle() gives them back only polls later, oldest first, as
 * copies finish, so with few receive buffers (the argument, 2 by default)
 * the transport must hold them back while every peer keeps sending.  Every buffer must arrive once,
 * whole; each kept one must be unchanged when given back (not reposted
 * early); the ordered ones (the wire's magic and sequence numbers) must
 * arrive in order, some set aside early and kept too.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "services/config.h"
#include "transports/transport.h"
#include "transports/wire.h"
#include "tests/integration/check_ok.h"
#include "tools/cli/cli.h"

#define COUNT 600u            /* buffers to each peer */
#define RECV_SIZE (16u << 10) /* above the shared-memory eager limit: rendezvous, out of order */
#define KEPT_MAX 64u
#define POLLS_KEPT 3u /* settle() calls a kept buffer's "copy" takes */
#define OTHER_MAGIC 0x5453454cu

typedef struct kept {
    const uint8_t *data;
    size_t len;
    uint64_t sum;
    uint64_t since; /* settle() calls when kept */
} kept_t;

typedef struct state {
    int me, n;
    /* Network thread only. */
    kept_t kept[KEPT_MAX];
    unsigned first, n_kept;
    uint64_t polls;
    uint64_t *next_wire; /* per source */
    unsigned char *seen; /* per (source, index) */
    /* Read by the main thread. */
    _Atomic uint64_t arrived, given_back, sent, waits;
    _Atomic unsigned errors;
} state_t;

static size_t size_of(unsigned src, unsigned dest, unsigned k)
{
    return sizeof(grain_wire_hdr_t) + ((size_t)src * 7919u + dest * 104729u + k * 2654435761u) %
                                          (RECV_SIZE - sizeof(grain_wire_hdr_t) + 1);
}

static uint8_t byte_of(unsigned src, unsigned dest, unsigned k, size_t i)
{
    return (uint8_t)(src * 131u + dest * 17u + k * 7u + i);
}

/* Even buffers are ordered (the wire's magic, numbered 0, 1, ... to each
 * peer); odd ones are not, like chunk pieces. */
static int ordered(unsigned k)
{
    return k % 2 == 0;
}

static uint64_t sum_of(const uint8_t *data, size_t len)
{
    uint64_t s = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        s = (s ^ data[i]) * 1099511628211ull;
    return s;
}

static void fail(state_t *s, const char *what, unsigned src, unsigned k)
{
    fprintf(stderr, "rank %d: buffer %u from rank %u: %s\n", s->me, k, src, what);
    atomic_fetch_add(&s->errors, 1);
}

static void rejected(void *arg, uint32_t src, const void *data, size_t len, const char *why)
{
    (void)data;
    (void)len;
    fprintf(stderr, "rank %d: the transport rejected a buffer from rank %u: %s\n", ((state_t *)arg)->me, src, why);
    atomic_fetch_add(&((state_t *)arg)->errors, 1);
}

/* No rank fails here: one that does ends the test with the transport's reason. */
static void failed(void *arg, int rank, const char *why)
{
    fprintf(stderr, "rank %d: the transport failed rank %d: %s\n", ((state_t *)arg)->me, rank, why);
    exit(1);
}

static int received(void *arg, uint32_t src, const void *data, size_t len)
{
    state_t *s = arg;
    grain_wire_hdr_t h;
    if (len < sizeof h || src >= (uint32_t)s->n) {
        fail(s, "too short, or from no rank", src, 0);
        return 0;
    }
    memcpy(&h, data, sizeof h);
    unsigned k = h.count;
    if (k >= COUNT || h.src_pe != src || h.bytes != len || len != size_of(src, (unsigned)s->me, k) ||
        h.magic != (ordered(k) ? GRAIN_WIRE_MAGIC : OTHER_MAGIC)) {
        fail(s, "header does not match what was sent", src, k);
        return 0;
    }
    for (size_t i = sizeof h; i < len; i++) {
        if (((const uint8_t *)data)[i] != byte_of(src, (unsigned)s->me, k, i)) {
            fail(s, "bytes differ", src, k);
            break;
        }
    }
    if (s->seen[src * COUNT + k]++ != 0)
        fail(s, "arrived twice", src, k);
    if (ordered(k) && h.seq != s->next_wire[src]++)
        fail(s, "ordered buffer out of order", src, k);
    atomic_fetch_add(&s->arrived, 1);
    if (k % 3 == 0)
        return 0;
    if (s->n_kept == KEPT_MAX) {
        fail(s, "more buffers kept than the transport can have given", src, k);
        return 0;
    }
    s->kept[(s->first + s->n_kept++) % KEPT_MAX] = (kept_t){data, len, sum_of(data, len), s->polls};
    return 1;
}

static unsigned settle(void *arg, int wait)
{
    state_t *s = arg;
    s->polls++;
    unsigned n = 0;
    while (s->n_kept > 0 && (wait || s->polls - s->kept[s->first].since >= POLLS_KEPT)) {
        kept_t *b = &s->kept[s->first];
        grain_wire_hdr_t h;
        memcpy(&h, b->data, sizeof h);
        if (sum_of(b->data, b->len) != b->sum)
            fail(s, "changed while kept: the transport reused it", h.src_pe, h.count);
        s->first = (s->first + 1) % KEPT_MAX;
        s->n_kept--;
        n++;
    }
    atomic_fetch_add(&s->given_back, n);
    if (wait && n > 0)
        atomic_fetch_add(&s->waits, 1); /* a kept buffer set aside early, or the end */
    return n;
}

static void sent(void *arg, void *token)
{
    (void)token;
    atomic_fetch_add(&((state_t *)arg)->sent, 1);
}

int main(int argc, char **argv)
{
    unsigned recv_buffers = argc > 1 ? (unsigned)atoi(argv[1]) : 2;
    if (recv_buffers < 1 || recv_buffers > KEPT_MAX / 2) {
        fprintf(stderr, "usage: transport_lend [RECV_BUFFERS, 1 to %u]\n", KEPT_MAX / 2);
        return 2;
    }
    grain_config_t config;
    OK(grain_config_init_env(&config));
    const grain_transport_ops_t *ops;
    grain_transport_t *t;
    state_t s = {0};
    OK(grain_transport_open("mpi", &config, NULL, &ops, &t, &s.me, &s.n));
    unsigned peers = (unsigned)s.n - 1;
    s.next_wire = calloc((size_t)s.n, sizeof *s.next_wire);
    s.seen = calloc((size_t)s.n * COUNT, 1);
    uint64_t *wire_seq = calloc((size_t)s.n, sizeof *wire_seq);
    uint8_t *out = malloc((size_t)s.n * COUNT * RECV_SIZE);
    if (s.next_wire == NULL || s.seen == NULL || wire_seq == NULL || out == NULL) {
        fprintf(stderr, "no memory\n");
        return 2;
    }
    grain_transport_handlers_t handlers = {
        .received = received, .rejected = rejected, .failed = failed, .settle = settle, .sent = sent, .arg = &s};
    OK(ops->start(t, &handlers, RECV_SIZE, recv_buffers));

    /* Interleaved over the peers, so that each rank's few buffers take
     * turns between sources. */
    for (unsigned k = 0; k < COUNT; k++) {
        for (unsigned d = 0; d < (unsigned)s.n; d++) {
            if (d == (unsigned)s.me)
                continue;
            uint8_t *b = out + ((size_t)d * COUNT + k) * RECV_SIZE;
            size_t len = size_of((unsigned)s.me, d, k);
            grain_wire_hdr_t h = {ordered(k) ? GRAIN_WIRE_MAGIC : OTHER_MAGIC, (uint32_t)s.me, k, (uint32_t)len,
                                  ordered(k) ? wire_seq[d]++ : 0};
            memcpy(b, &h, sizeof h);
            for (size_t i = sizeof h; i < len; i++)
                b[i] = byte_of((unsigned)s.me, d, k, i);
            OK(ops->send(t, d, b, len, b));
        }
    }

    uint64_t expected = (uint64_t)COUNT * peers;
    double start = cli_now_s();
    while (atomic_load(&s.arrived) < expected || atomic_load(&s.sent) < expected ||
           atomic_load(&s.given_back) < (uint64_t)(COUNT - (COUNT + 2) / 3) * peers) {
        if (cli_now_s() - start > 120) {
            fprintf(stderr, "rank %d: after 120 s, %llu of %llu arrived, %llu sent, %llu given back\n", s.me,
                    (unsigned long long)atomic_load(&s.arrived), (unsigned long long)expected,
                    (unsigned long long)atomic_load(&s.sent), (unsigned long long)atomic_load(&s.given_back));
            return 1;
        }
        struct timespec nap = {0, 100000};
        nanosleep(&nap, NULL);
    }
    grain_coll_t barrier = {.kind = GRAIN_COLL_BARRIER};
    OK(ops->collective(t, &barrier));
    ops->close(t);
    unsigned errors = atomic_load(&s.errors);
    printf("rank %d: %llu buffers from %u peers through %u receive buffers, %llu kept and given back "
           "(%llu waited for), %u errors\n",
           s.me, (unsigned long long)expected, peers, recv_buffers, (unsigned long long)atomic_load(&s.given_back),
           (unsigned long long)atomic_load(&s.waits), errors);
    free(out);
    free(wire_seq);
    free(s.seen);
    free(s.next_wire);
    return errors == 0 ? 0 : 1;
}
