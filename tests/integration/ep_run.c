/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device endpoints (grain/ep.h) on any number of ranks: every endpoint gets
 * its id, virtual device and a device of its own where the node has enough,
 * and moves a pattern through its memory both ways; every pair of endpoints
 * exchanges messages; the collectives give every endpoint the same sums and
 * bytes; then the refusals, each with its sentence, and a run after them
 * that works.
 *
 *   mpirun -np N ep_run DEVICES
 *   GRAIN_PEER_TIMEOUT_S=T mpirun --enable-recovery -np N ep_run peer
 *
 * DEVICES endpoints a rank (0: GRAIN_EP_DEVICES or the rank's share), the
 * ranks on one host.  On PoCL, POCL_DEVICES="pthread pthread" gives a
 * process two devices.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EP_TEST "ep_run"
#include "ep_expect.h"
#include "runtime/devices.h"
#include "runtime/endpoints/endpoint.h"
#include "tools/cli/cli.h"

#define BYTES ((1u << 20) + 3u) /* not a multiple of any word */

typedef struct seen {
    int id[MAX_EPS], count[MAX_EPS];
    unsigned vdev[MAX_EPS], devices[MAX_EPS], device[MAX_EPS];
    int moved[MAX_EPS]; /* the pattern came back whole, both with and without a shadow */
} seen_t;

static uint8_t pattern(int id, size_t i)
{
    return (uint8_t)(i * 131u + (size_t)id * 7u + 1u);
}

/* Writes id's pattern into memory allocated with `flags`, reads it back. */
static int round_trip(grain_cmdq_t *q, unsigned flags)
{
    uint8_t *out = malloc(BYTES), *in = malloc(BYTES);
    grain_ep_mem_t *m = NULL;
    int ok = out != NULL && in != NULL && grain_ep_mem_alloc(q, BYTES, flags, &m) == GRAIN_OK &&
             grain_ep_mem_size(m) == BYTES && (grain_ep_mem_shadow(m) == NULL) == !!(flags & GRAIN_EP_NO_SHADOW);
    if (ok) { /* new memory reads as zero */
        ok = grain_ep_mem_read(q, m, 0, in, BYTES) == GRAIN_OK;
        for (size_t i = 0; ok && i < BYTES; i++)
            ok = in[i] == 0;
    }
    for (size_t i = 0; out != NULL && i < BYTES; i++)
        out[i] = pattern(grain_ep_id(q), i);
    /* In two pieces, the second at an odd offset. */
    ok = ok && grain_ep_mem_write(q, m, 0, out, 1000) == GRAIN_OK &&
         grain_ep_mem_write(q, m, 1000, out + 1000, BYTES - 1000) == GRAIN_OK &&
         grain_ep_mem_read(q, m, 0, in, BYTES) == GRAIN_OK && memcmp(in, out, BYTES) == 0;
    grain_ep_mem_free(q, m);
    free(out);
    free(in);
    return ok;
}

static grain_status_t record(grain_cmdq_t *q, void *arg)
{
    seen_t *s = arg;
    unsigned v = grain_ep_vdev(q);
    if (v >= MAX_EPS)
        return GRAIN_ERR_INVALID;
    s->id[v] = grain_ep_id(q);
    s->count[v] = grain_ep_count(q);
    s->vdev[v] = v;
    s->devices[v] = grain_ep_devices(q);
    s->device[v] = grain_ep_device_index(q);
    s->moved[v] = grain_ep_device_name(q)[0] != '\0' && round_trip(q, GRAIN_EP_READ | GRAIN_EP_WRITE) &&
                  round_trip(q, GRAIN_EP_READ | GRAIN_EP_WRITE | GRAIN_EP_NO_SHADOW);
    /* Memory left allocated is freed when the endpoint returns. */
    grain_ep_mem_t *left = NULL;
    return grain_ep_mem_alloc(q, 4096, GRAIN_EP_READ, &left);
}

static grain_status_t count_endpoints(grain_cmdq_t *q, void *arg)
{
    if (grain_ep_vdev(q) == 0)
        *(int64_t *)arg = grain_ep_count(q);
    return GRAIN_OK;
}

enum { SLOT = 5 }; /* an odd slot, so that a slot's place is never a word's by luck */

static uint8_t slot_byte(int from, int to, int j)
{
    return (uint8_t)(from * 31 + to * 7 + j + 1);
}

/* Reduces into the first and the last endpoint, then allgather, gather,
 * scatter and alltoall on 5-byte slots. */
static int slot_collectives(grain_cmdq_t *q)
{
    int id = grain_ep_id(q), n = grain_ep_count(q), good = 1;
    size_t size = (size_t)n * SLOT;
    grain_ep_mem_t *m = NULL, *r = NULL;
    uint8_t *buf = calloc(size, 1);
    OK(grain_ep_mem_alloc(q, size, GRAIN_EP_READ | GRAIN_EP_WRITE, &m));
    OK(grain_ep_mem_alloc(q, 8, GRAIN_EP_READ | GRAIN_EP_WRITE, &r));
    if (buf == NULL)
        return 0;
    /* reduce: the sum of the ids at endpoint 0 only */
    int64_t v = id, want = id == 0 ? (int64_t)n * (n - 1) / 2 : id;
    OK(grain_ep_mem_write(q, r, 0, &v, 8));
    OK(grain_ep_reduce(q, r, 0, 1, GRAIN_INT64, GRAIN_SUM, 0));
    OK(grain_ep_mem_read(q, r, 0, &v, 8));
    good = v == want;
    /* and into the last endpoint, which a tree counts from */
    v = 3 * (int64_t)id + 1;
    want = id == n - 1 ? 3 * (int64_t)n * (n - 1) / 2 + n : v;
    OK(grain_ep_mem_write(q, r, 0, &v, 8));
    OK(grain_ep_reduce(q, r, 0, 1, GRAIN_INT64, GRAIN_SUM, n - 1));
    OK(grain_ep_mem_read(q, r, 0, &v, 8));
    good &= v == want;
    /* allgather: slot e of every endpoint from endpoint e */
    for (int j = 0; j < SLOT; j++)
        buf[(size_t)id * SLOT + j] = slot_byte(id, -1, j);
    OK(grain_ep_mem_write(q, m, 0, buf, size));
    OK(grain_ep_allgather(q, m, 0, SLOT));
    OK(grain_ep_mem_read(q, m, 0, buf, size));
    for (int e = 0; e < n; e++)
        for (int j = 0; j < SLOT; j++)
            good &= buf[(size_t)e * SLOT + j] == slot_byte(e, -1, j);
    /* gather at the last endpoint; the others keep what they had */
    memset(buf, 0, size);
    for (int j = 0; j < SLOT; j++)
        buf[(size_t)id * SLOT + j] = slot_byte(id, -2, j);
    OK(grain_ep_mem_write(q, m, 0, buf, size));
    OK(grain_ep_gather(q, m, 0, SLOT, n - 1));
    OK(grain_ep_mem_read(q, m, 0, buf, size));
    for (int e = 0; e < n; e++)
        for (int j = 0; j < SLOT; j++)
            good &= buf[(size_t)e * SLOT + j] == (id == n - 1 || e == id ? slot_byte(e, -2, j) : 0);
    /* scatter from endpoint 0: slot e to endpoint e */
    memset(buf, 0, size);
    for (int e = 0; id == 0 && e < n; e++)
        for (int j = 0; j < SLOT; j++)
            buf[(size_t)e * SLOT + j] = slot_byte(e, -3, j);
    OK(grain_ep_mem_write(q, m, 0, buf, size));
    OK(grain_ep_scatter(q, m, 0, SLOT, 0));
    OK(grain_ep_mem_read(q, m, 0, buf, size));
    for (int j = 0; j < SLOT; j++)
        good &= buf[(size_t)id * SLOT + j] == slot_byte(id, -3, j);
    /* alltoall: slot d of endpoint e to slot e of endpoint d */
    for (int d = 0; d < n; d++)
        for (int j = 0; j < SLOT; j++)
            buf[(size_t)d * SLOT + j] = slot_byte(id, d, j);
    OK(grain_ep_mem_write(q, m, 0, buf, size));
    OK(grain_ep_alltoall(q, m, 0, SLOT));
    OK(grain_ep_mem_read(q, m, 0, buf, size));
    for (int e = 0; e < n; e++)
        for (int j = 0; j < SLOT; j++)
            good &= buf[(size_t)e * SLOT + j] == slot_byte(e, id, j);
    free(buf);
    return good;
}

/* A small broadcast's bytes from `root`, the s-th of the list: a word
 * equal to the agreement's filler (INT64_MIN) among them where they hold
 * two words, since those ride with the ranks' agreement. */
static void small_bytes(uint8_t *buf, int root, size_t s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern(root, i + s);
    if (len >= 16)
        memcpy(buf + 8, &(int64_t){INT64_MIN}, 8);
}

/* Barrier, allreduces of each type and operation (with and without a
 * shadow, one large), a broadcast from the job's last endpoint, small ones
 * around the size that rides with the ranks' agreement from several
 * roots, then the slot collectives. */
static grain_status_t collect(grain_cmdq_t *q, void *arg)
{
    int *ok = arg, id = grain_ep_id(q), n = grain_ep_count(q);
    grain_ep_mem_t *a = NULL, *big = NULL, *b = NULL;
    enum { BIG = 100000 };
    int64_t *host = malloc(BIG * sizeof *host);
    uint8_t *bytes = malloc(BYTES);
    OK(grain_ep_mem_alloc(q, 24, GRAIN_EP_READ | GRAIN_EP_WRITE, &a));
    OK(grain_ep_mem_alloc(q, BIG * 8, GRAIN_EP_READ | GRAIN_EP_WRITE | GRAIN_EP_NO_SHADOW, &big));
    OK(grain_ep_mem_alloc(q, BYTES, GRAIN_EP_READ | GRAIN_EP_WRITE, &b));
    if (host == NULL || bytes == NULL)
        return GRAIN_ERR_NO_MEMORY;
    double d = id * 1.5;
    uint64_t u = (uint64_t)id + 7;
    OK(grain_ep_barrier(q));
    OK(grain_ep_mem_write(q, a, 0, &(int64_t){id - 3}, 8));
    OK(grain_ep_mem_write(q, a, 8, &d, 8));
    OK(grain_ep_mem_write(q, a, 16, &u, 8));
    OK(grain_ep_allreduce(q, a, 0, 1, GRAIN_INT64, GRAIN_SUM));
    OK(grain_ep_allreduce(q, a, 8, 1, GRAIN_DOUBLE, GRAIN_MAX));
    OK(grain_ep_allreduce(q, a, 16, 1, GRAIN_UINT64, GRAIN_MIN));
    int64_t sum = 0;
    uint64_t least = 0;
    OK(grain_ep_mem_read(q, a, 0, &sum, 8));
    OK(grain_ep_mem_read(q, a, 8, &d, 8));
    OK(grain_ep_mem_read(q, a, 16, &least, 8));
    int good = sum == (int64_t)n * (n - 1) / 2 - 3 * n && d == (n - 1) * 1.5 && least == 7;
    for (int i = 0; i < BIG; i++)
        host[i] = id + i;
    OK(grain_ep_mem_write(q, big, 0, host, BIG * 8));
    OK(grain_ep_allreduce(q, big, 0, BIG, GRAIN_INT64, GRAIN_SUM));
    OK(grain_ep_mem_read(q, big, 0, host, BIG * 8));
    for (int i = 0; good && i < BIG; i++)
        good = host[i] == (int64_t)n * i + (int64_t)n * (n - 1) / 2;
    for (size_t i = 0; i < BYTES; i++)
        bytes[i] = id == n - 1 ? pattern(id, i) : 0;
    OK(grain_ep_mem_write(q, b, 0, bytes, BYTES));
    OK(grain_ep_broadcast(q, b, 0, BYTES, n - 1));
    OK(grain_ep_mem_read(q, b, 0, bytes, BYTES));
    for (size_t i = 0; good && i < BYTES; i++)
        good = bytes[i] == pattern(n - 1, i);
    static const size_t small[] = {1, 7, 8, 16, 63, 64, 65};
    for (size_t s = 0; s < sizeof small / sizeof *small; s++) {
        int root = (int)(s * 7 % (size_t)n);
        uint8_t want[65];
        small_bytes(want, root, s, small[s]);
        if (id == root)
            OK(grain_ep_mem_write(q, b, 0, want, small[s]));
        OK(grain_ep_broadcast(q, b, 0, small[s], root));
        OK(grain_ep_mem_read(q, b, 0, bytes, small[s]));
        good &= memcmp(bytes, want, small[s]) == 0;
    }
    OK(grain_ep_barrier(q));
    ok[grain_ep_vdev(q)] = good && slot_collectives(q);
    free(host);
    free(bytes);
    return GRAIN_OK; /* memory left is freed */
}

static void check_collectives(grain_t *g, int me, unsigned want)
{
    expect_each(g, me, want, collect, "the collectives' sums or bytes");
}

/* Endpoint 0 calls a barrier where the others call an allreduce. */
static grain_status_t mismatched(grain_cmdq_t *q, void *arg)
{
    (void)arg;
    grain_ep_mem_t *m = NULL;
    OK(grain_ep_mem_alloc(q, 8, GRAIN_EP_READ | GRAIN_EP_WRITE, &m));
    grain_status_t st = grain_ep_id(q) == 0 ? grain_ep_barrier(q) : grain_ep_allreduce(q, m, 0, 1, GRAIN_INT64, GRAIN_SUM);
    expect_refused(st, GRAIN_ERR_CONFIG, "called different collectives, or with different arguments",
                   "endpoints that call different collectives");
    return GRAIN_OK;
}

/* The job's last endpoint returns at once; the others call a barrier. */
static grain_status_t leaves_early(grain_cmdq_t *q, void *arg)
{
    (void)arg;
    if (grain_ep_id(q) + 1 == grain_ep_count(q))
        return GRAIN_OK;
    expect_refused(grain_ep_barrier(q), GRAIN_ERR_STATE, "returned before it", "a barrier an endpoint left");
    return GRAIN_OK;
}

/* Endpoint 0 brings read-only memory to an allreduce. */
static grain_status_t bad_argument(grain_cmdq_t *q, void *arg)
{
    (void)arg;
    grain_ep_mem_t *m = NULL;
    int first = grain_ep_id(q) == 0;
    OK(grain_ep_mem_alloc(q, 8, first ? GRAIN_EP_READ : GRAIN_EP_READ | GRAIN_EP_WRITE, &m));
    grain_status_t st = grain_ep_allreduce(q, m, 0, 1, GRAIN_INT64, GRAIN_SUM);
    const char *words = first                                        ? "allocated without GRAIN_EP_WRITE"
                        : grain_ep_id(q) < (int)grain_ep_devices(q) ? "endpoint 0's arguments were refused"
                                                                     : "an endpoint of another rank was refused in it";
    expect_refused(st, GRAIN_ERR_INVALID, words, "one endpoint's refused argument");
    return GRAIN_OK;
}

static void check_collective_refusals(grain_t *g, unsigned want)
{
    OK(grain_ep_run(g, want, bad_argument, NULL));
    int64_t count = 0; /* the refusals below need two endpoints in the job */
    OK(grain_ep_run(g, want, count_endpoints, &count));
    if (count < 2)
        return;
    OK(grain_ep_run(g, want, mismatched, NULL));
    OK(grain_ep_run(g, want, leaves_early, NULL));
}

/* Two-sided messages: every pair of endpoints of the job, in one order all
 * follow (so that no cycle of blocked sends forms), exchanges four messages
 * each way, of 0, 1, 1000 and 1 MiB + 3 bytes on tags 0-3, and a second
 * 1-byte message on tag 1, which must come after the first; the receiver
 * takes them largest first, the others in reverse. */
static const size_t msg_bytes[4] = {0, 1, 1000, BYTES};

static uint8_t msg_byte(int src, int dst, int tag, size_t i)
{
    return (uint8_t)(src * 13 + dst * 5 + tag * 3 + i * 7 + 1);
}

static int talk(grain_cmdq_t *q, grain_ep_mem_t *m, uint8_t *buf, int peer, int sending)
{
    int me = grain_ep_id(q), good = 1;
    for (int tag = 0; sending && tag < 4; tag++) {
        for (size_t i = 0; i < msg_bytes[tag]; i++)
            buf[i] = msg_byte(me, peer, tag, i);
        OK(grain_ep_mem_write(q, m, 0, buf, msg_bytes[tag]));
        OK(grain_ep_send(q, m, 0, msg_bytes[tag], peer, tag));
        if (tag == 1) { /* the second on tag 1, after the first */
            buf[0] = 0xee;
            OK(grain_ep_mem_write(q, m, 0, buf, 1));
            OK(grain_ep_send(q, m, 0, 1, peer, 1));
        }
    }
    for (int k = 0; !sending && k < 4; k++) {
        int tag = 3 - k;
        size_t got = SIZE_MAX;
        OK(grain_ep_recv(q, m, 0, BYTES, peer, tag, &got));
        OK(grain_ep_mem_read(q, m, 0, buf, got));
        good &= got == msg_bytes[tag];
        for (size_t i = 0; good && i < got; i++)
            good = buf[i] == msg_byte(peer, me, tag, i);
        if (tag == 1) {
            OK(grain_ep_recv(q, m, 0, BYTES, peer, 1, &got));
            OK(grain_ep_mem_read(q, m, 0, buf, 1));
            good &= got == 1 && buf[0] == 0xee;
        }
    }
    return good;
}

static grain_status_t pairs(grain_cmdq_t *q, void *arg)
{
    int *ok = arg, me = grain_ep_id(q), n = grain_ep_count(q), good = 1;
    grain_ep_mem_t *m = NULL;
    uint8_t *buf = malloc(BYTES);
    if (buf == NULL)
        return GRAIN_ERR_NO_MEMORY;
    OK(grain_ep_mem_alloc(q, BYTES, GRAIN_EP_READ | GRAIN_EP_WRITE | (me % 2 ? GRAIN_EP_NO_SHADOW : 0), &m));
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            if (me == a)
                good &= talk(q, m, buf, b, 1) & talk(q, m, buf, b, 0);
            else if (me == b)
                good &= talk(q, m, buf, a, 0) & talk(q, m, buf, a, 1);
        }
    good &= talk(q, m, buf, me, 1) & talk(q, m, buf, me, 0); /* to itself: kept by the rank */
    ok[grain_ep_vdev(q)] = good;
    free(buf);
    return GRAIN_OK;
}

/* Immediate messages: every endpoint posts two receives from every endpoint
 * (itself included) on one tag, then sends each two messages (1000 bytes,
 * then 70000, past any eager limit), changing its memory as soon as each
 * send returns; the first receive posted must get the first message.
 * Then a receive posted before a blocking one of the same source and tag
 * gets the earlier message, and a receive never matched is left to the
 * endpoint's return. */
enum { FIRST = 1000, SECOND = 70000 };

static uint8_t imm_byte(int src, int dst, int which, size_t i)
{
    return (uint8_t)(src * 11 + dst * 3 + which * 101 + i * 13 + 5);
}

static grain_status_t immediate(grain_cmdq_t *q, void *arg)
{
    int *ok = arg, me = grain_ep_id(q), n = grain_ep_count(q), good = 1;
    size_t slot = SECOND, per_peer = 2 * slot;
    grain_ep_mem_t *in = NULL, *out = NULL;
    uint8_t *buf = malloc(per_peer);
    grain_ep_event_t **ev = calloc(4 * (size_t)n, sizeof *ev);
    size_t *got = calloc(2 * (size_t)n, sizeof *got);
    if (buf == NULL || ev == NULL || got == NULL)
        return GRAIN_ERR_NO_MEMORY;
    OK(grain_ep_mem_alloc(q, (size_t)n * per_peer, GRAIN_EP_READ | GRAIN_EP_WRITE, &in));
    OK(grain_ep_mem_alloc(q, SECOND, GRAIN_EP_READ | GRAIN_EP_WRITE, &out));
    for (int p = 0; p < n; p++)
        for (int which = 0; which < 2; which++)
            OK(grain_ep_irecv(q, in, (size_t)p * per_peer + (size_t)which * slot, slot, p, 9, &got[2 * p + which],
                              &ev[2 * p + which]));
    for (int p = 0; p < n; p++)
        for (int which = 0; which < 2; which++) {
            size_t bytes = which == 0 ? FIRST : SECOND;
            for (size_t i = 0; i < bytes; i++)
                buf[i] = imm_byte(me, p, which, i);
            OK(grain_ep_mem_write(q, out, 0, buf, bytes));
            OK(grain_ep_isend(q, out, 0, bytes, p, 9, &ev[2 * n + 2 * p + which]));
            memset(buf, 0, bytes); /* the send has copied it: changing the memory now changes nothing */
            OK(grain_ep_mem_write(q, out, 0, buf, bytes));
        }
    int done = 0; /* one event by test alone */
    while (!done)
        OK(grain_ep_test(q, ev[2 * n], &done));
    OK(grain_ep_wait_all(q, ev + 2 * n + 1, 2 * (size_t)n - 1));
    OK(grain_ep_wait_all(q, ev, 2 * (size_t)n));
    for (int p = 0; p < n; p++)
        for (int which = 0; which < 2; which++) {
            size_t bytes = which == 0 ? FIRST : SECOND;
            good &= got[2 * p + which] == bytes;
            OK(grain_ep_mem_read(q, in, (size_t)p * per_peer + (size_t)which * slot, buf, bytes));
            for (size_t i = 0; good && i < bytes; i++)
                good = buf[i] == imm_byte(p, me, which, i);
        }
    /* An immediate receive posted before a blocking one takes the earlier message. */
    int to = (me + 1) % n, from = (me + n - 1) % n;
    grain_ep_event_t *early = NULL, *never = NULL;
    size_t early_got = 0, late_got = 0;
    OK(grain_ep_irecv(q, in, 0, 100, from, 11, &early_got, &early));
    OK(grain_ep_send(q, out, 0, 10, to, 11));
    OK(grain_ep_send(q, out, 0, 20, to, 11));
    OK(grain_ep_recv(q, in, 100, 100, from, 11, &late_got));
    OK(grain_ep_wait(q, early));
    good &= early_got == 10 && late_got == 20;
    /* Refusals: no place for the event, and an event that is not waiting. */
    expect_refused(grain_ep_isend(q, out, 0, 1, to, 12, NULL), GRAIN_ERR_INVALID, "nowhere to store the event",
                   "an immediate send without an event");
    expect_refused(grain_ep_wait(q, early), GRAIN_ERR_INVALID, "not an event of endpoint", "an event waited twice");
    OK(grain_ep_irecv(q, in, 0, 8, from, 13, NULL, &never)); /* nobody sends it: dropped when this returns */
    grain_ep_mem_free(q, in); /* refused while that receive may write into it */
    expect(strstr(grain_error_message(NULL), "not yet done uses that memory") != NULL,
           "memory freed under a receive not yet waited for");
    ok[grain_ep_vdev(q)] = good;
    free(buf);
    free(ev);
    free(got);
    return GRAIN_OK;
}

/* Between endpoints 0 and 1 of a rank: a message whose receive is posted
 * goes straight into it (where the devices reach each other), but not
 * past an older message of the same source and tag that waits in the
 * mailbox.  Every endpoint meets at the barriers, which order the steps. */
static grain_status_t mailbox_order(grain_cmdq_t *q, void *arg)
{
    int *ok = arg, good = 1;
    unsigned v = grain_ep_vdev(q), pair = grain_ep_devices(q) > 1 && v < 2;
    int other = grain_ep_id(q) + (v == 0 ? 1 : -1);
    grain_ep_mem_t *m = NULL;
    grain_ep_event_t *r[3] = {0};
    size_t got[3] = {0};
    uint8_t byte = 0x41, seen[3] = {0};
    OK(grain_ep_mem_alloc(q, 3, GRAIN_EP_READ | GRAIN_EP_WRITE, &m));
    if (pair && v == 0) { /* no receive posted yet: into the mailbox */
        OK(grain_ep_mem_write(q, m, 0, &byte, 1));
        OK(grain_ep_send(q, m, 0, 1, other, 14));
    }
    OK(grain_ep_barrier(q));
    if (pair && v == 1)
        for (int i = 0; i < 3; i++)
            OK(grain_ep_irecv(q, m, (size_t)i, 1, other, i < 2 ? 14 : 15, &got[i], &r[i]));
    OK(grain_ep_barrier(q));
    if (pair && v == 0) { /* tag 14 after the mailbox's; tag 15 straight into its receive */
        for (byte = 0x42; byte <= 0x43; byte++) {
            OK(grain_ep_mem_write(q, m, 0, &byte, 1));
            OK(grain_ep_send(q, m, 0, 1, other, byte == 0x42 ? 14 : 15));
        }
    }
    if (pair && v == 1) {
        OK(grain_ep_wait_all(q, r, 3));
        OK(grain_ep_mem_read(q, m, 0, seen, 3));
        good = got[0] == 1 && got[1] == 1 && got[2] == 1 && seen[0] == 0x41 && seen[1] == 0x42 && seen[2] == 0x43;
    }
    ok[v] = good;
    return GRAIN_OK;
}

/* The refusals of messages: a receive too small (then the next message
 * still arrives), bad peers and tags, memory without the permission, and a
 * receive from an endpoint of this rank that returned without sending. */
static grain_status_t message_refusals(grain_cmdq_t *q, void *arg)
{
    (void)arg;
    int me = grain_ep_id(q), n = grain_ep_count(q), peer = (me + 1) % n, from = (me + n - 1) % n;
    grain_ep_mem_t *m = NULL, *ro = NULL;
    size_t got = 0;
    OK(grain_ep_mem_alloc(q, 100, GRAIN_EP_READ | GRAIN_EP_WRITE, &m));
    OK(grain_ep_mem_alloc(q, 100, GRAIN_EP_WRITE, &ro));
    OK(grain_ep_send(q, m, 0, 100, peer, 5));
    OK(grain_ep_send(q, m, 0, 10, peer, 6));
    expect_refused(grain_ep_recv(q, m, 0, 50, from, 5, &got), GRAIN_ERR_INVALID, "does not fit the 50 bytes given",
                   "a receive too small");
    OK(grain_ep_recv(q, m, 0, 50, from, 6, &got));
    expect(got == 10, "the message after a refused one");
    expect_refused(grain_ep_send(q, m, 0, 1, n, 0), GRAIN_ERR_INVALID, "the job has endpoints 0 to", "no such endpoint");
    expect_refused(grain_ep_send(q, m, 0, 1, peer, GRAIN_EP_TAGS), GRAIN_ERR_INVALID, "tags are 0 to 32767",
                   "a tag too large");
    expect_refused(grain_ep_recv(q, m, 0, 1, -1, 0, &got), GRAIN_ERR_INVALID, "endpoint -1", "a negative source");
    expect_refused(grain_ep_send(q, ro, 0, 1, peer, 0), GRAIN_ERR_INVALID, "without GRAIN_EP_READ",
                   "a send from write-only memory");
    expect_refused(grain_ep_recv(q, m, 90, 20, from, 0, &got), GRAIN_ERR_INVALID, "do not fit the memory's 100",
                   "a receive past the end");
    if (grain_ep_devices(q) > 1 && grain_ep_vdev(q) == 1) /* endpoint 0 of this rank never sends tag 7 */
        expect_refused(grain_ep_recv(q, m, 0, 100, me - 1, 7, &got), GRAIN_ERR_STATE, "returned without sending",
                       "a receive from an endpoint that returned");
    return GRAIN_OK;
}

static void check_messages(grain_t *g, int me, unsigned want)
{
    expect_each(g, me, want, pairs, "the messages' lengths or bytes");
    OK(grain_ep_run(g, want, message_refusals, NULL));
    expect_each(g, me, want, immediate, "the immediate messages' order or bytes");
    expect_each(g, me, want, mailbox_order, "a message straight into its receive, or after the mailbox's");
}

static void check_ids(grain_t *g, int me, int ranks, unsigned want, unsigned node_devices)
{
    seen_t s;
    memset(&s, 0xff, sizeof s);
    OK(grain_ep_run(g, want, record, &s));
    unsigned n = s.devices[0];
    expect(n >= 1 && n <= MAX_EPS && (want == 0 || n == want), "the endpoints a rank runs");
    int64_t sum[2] = {0, 0};
    for (unsigned v = 0; v < n && v < MAX_EPS; v++) {
        char what[160];
        snprintf(what, sizeof what, "endpoint of rank %d virtual device %u: id %d of %d, device %u, moved %d", me, v,
                 s.id[v], s.count[v], s.device[v], s.moved[v]);
        expect(s.id[v] == me * (int)n + (int)v && s.count[v] == ranks * (int)n && s.vdev[v] == v &&
                   s.devices[v] == n && s.moved[v] == 1,
               what);
        sum[0] += s.id[v];
        sum[1] += (int64_t)s.id[v] * s.id[v];
    }
    /* Every id of the job once: 0 .. count-1 have one sum and one sum of squares. */
    OK(grain_allreduce(g, sum, 2, GRAIN_INT64, GRAIN_SUM));
    int64_t c = (int64_t)ranks * n;
    expect(sum[0] == c * (c - 1) / 2 && sum[1] == (c - 1) * c * (2 * c - 1) / 6, "the job's ids are 0 .. count-1");
    /* The node's devices evenly used: a device each while there are
     * enough, else as many endpoints on each as can be (one host). */
    int64_t uses[MAX_EPS] = {0};
    for (unsigned v = 0; v < n && v < MAX_EPS; v++)
        if (s.device[v] < node_devices && node_devices <= MAX_EPS)
            uses[s.device[v]]++;
    OK(grain_allreduce(g, uses, MAX_EPS, GRAIN_INT64, GRAIN_SUM));
    int64_t most = 0, least = c, all = 0;
    for (unsigned d = 0; d < node_devices && d < MAX_EPS; d++) {
        most = uses[d] > most ? uses[d] : most;
        least = uses[d] < least ? uses[d] : least;
        all += uses[d];
    }
    expect(all == c && most - least <= 1, "the endpoints spread evenly over the node's devices");
    if (me == 0)
        printf("ep_run: %d rank%s x %u endpoints, devices of rank 0:", ranks, ranks == 1 ? "" : "s", n);
    for (unsigned v = 0; me == 0 && v < n; v++)
        printf(" %u", s.device[v]);
    if (me == 0)
        printf("\n");
}

static grain_status_t fail_on_last(grain_cmdq_t *q, void *arg)
{
    (void)arg;
    if (grain_ep_vdev(q) + 1 == grain_ep_devices(q) && grain_ep_id(q) + 1 == grain_ep_count(q))
        return GRAIN_ERR_BAD_PE;
    return GRAIN_OK;
}

static void *from_elsewhere(void *arg)
{
    grain_ep_mem_t *m = NULL;
    return (void *)(intptr_t)grain_ep_mem_alloc(arg, 64, GRAIN_EP_READ, &m);
}

/* Every refusal of the memory calls, on one endpoint. */
static grain_status_t misuse(grain_cmdq_t *q, void *arg)
{
    (void)arg;
    grain_ep_mem_t *m = NULL, *w = NULL;
    uint8_t buf[64] = {0};
    expect_refused(grain_ep_mem_alloc(q, 0, GRAIN_EP_READ, &m), GRAIN_ERR_INVALID, "0 bytes", "0 bytes");
    expect_refused(grain_ep_mem_alloc(q, 64, 0, &m), GRAIN_ERR_INVALID, "GRAIN_EP_READ, GRAIN_EP_WRITE or both",
                   "no permission");
    expect_refused(grain_ep_mem_alloc(q, 64, 0x80 | GRAIN_EP_READ, &m), GRAIN_ERR_INVALID, "flags 0x81",
                   "an unknown flag");
    OK(grain_ep_mem_alloc(q, 64, GRAIN_EP_READ, &m));
    OK(grain_ep_mem_alloc(q, 64, GRAIN_EP_WRITE, &w));
    expect_refused(grain_ep_mem_write(q, m, 0, buf, 8), GRAIN_ERR_INVALID, "without GRAIN_EP_WRITE",
                   "a write to read-only memory");
    expect_refused(grain_ep_mem_read(q, w, 0, buf, 8), GRAIN_ERR_INVALID, "without GRAIN_EP_READ",
                   "a read of write-only memory");
    expect_refused(grain_ep_mem_write(q, w, 60, buf, 8), GRAIN_ERR_INVALID, "8 bytes at offset 60 do not fit",
                   "a write past the end");
    expect_refused(grain_ep_mem_write(q, w, SIZE_MAX, buf, 8), GRAIN_ERR_INVALID, "do not fit",
                   "an offset past the end");
    expect_refused(grain_ep_mem_write(q, w, 0, NULL, 8), GRAIN_ERR_INVALID, "no host buffer", "no host buffer");
    pthread_t t;
    void *st = NULL;
    if (pthread_create(&t, NULL, from_elsewhere, q) == 0 && pthread_join(t, &st) == 0)
        expect((grain_status_t)(intptr_t)st == GRAIN_ERR_STATE, "a call from another thread was not refused");
    grain_ep_mem_free(q, m);
    grain_ep_mem_free(q, w);
    return GRAIN_OK;
}

static void check_refusals(grain_t *g, int me, int ranks)
{
    expect_refused(grain_ep_run(g, 1, NULL, NULL), GRAIN_ERR_INVALID, "no function", "no function");
    expect_refused(grain_ep_run(g, 5000, record, NULL), GRAIN_ERR_INVALID, "at most 1024", "too many endpoints");
    expect_refused(grain_ep_run(NULL, 1, record, NULL), GRAIN_ERR_INVALID, "no grain handle", "no handle");
    OK(grain_ep_run(g, 1, misuse, NULL));
    /* The last endpoint of the job fails: every rank hears of it. */
    grain_status_t st = grain_ep_run(g, 2, fail_on_last, NULL);
    char words[96];
    snprintf(words, sizeof words, "endpoint %d (rank %d, virtual device 1)", 2 * ranks - 1, ranks - 1);
    expect_refused(st, GRAIN_ERR_BAD_PE, me == ranks - 1 ? words : "an endpoint of another rank failed",
                   "an endpoint's error");
    if (ranks > 1) {
        /* Ranks that ask for different numbers, or one rank's bad call. */
        expect_refused(grain_ep_run(g, me == 0 ? 1 : 2, record, NULL), GRAIN_ERR_CONFIG,
                       "the ranks ask for 1 to 2 endpoints each", "different counts");
        expect_refused(grain_ep_run(g, 1, me == 0 ? NULL : record, NULL), GRAIN_ERR_INVALID,
                       me == 0 ? "no function" : "another rank's arguments were refused", "one rank's bad call");
    }
}

/* "peer": the last rank's endpoint dies while the others wait to receive
 * from it; each survivor's receive, then grain_ep_run, must end with
 * GRAIN_ERR_PEER within twice GRAIN_PEER_TIMEOUT_S.  One line a survivor
 * (ok_lines.sh counts them). */
static grain_status_t wait_for_the_dead(grain_cmdq_t *q, void *arg)
{
    double *took = arg;
    int n = grain_ep_count(q), victim = n - 1;
    if (grain_ep_id(q) == victim) {
        fflush(NULL);
        raise(SIGKILL);
    }
    grain_ep_mem_t *m = NULL;
    size_t got = 0;
    OK(grain_ep_mem_alloc(q, 8, GRAIN_EP_WRITE, &m));
    double t0 = cli_now_s();
    grain_status_t st = grain_ep_recv(q, m, 0, 8, victim, 0, &got);
    *took = cli_now_s() - t0;
    return st;
}

static int peer_dies(grain_t *g)
{
    const char *env = getenv("GRAIN_PEER_TIMEOUT_S");
    double timeout = env != NULL ? strtod(env, NULL) : 0, took = -1;
    int me = grain_my_pe(g);
    if (timeout <= 0 || grain_n_pes(g) < 2) {
        fprintf(stderr, "ep_run peer: set GRAIN_PEER_TIMEOUT_S and start 2 ranks or more\n");
        return 2;
    }
    grain_status_t st = grain_ep_run(g, 1, wait_for_the_dead, &took);
    int ok = st == GRAIN_ERR_PEER && took >= 0 && took <= 2 * timeout;
    printf("ep_run peer: rank %d: %s after %.1f s (%s): %s\n", me, grain_strerror(st), took, grain_error_message(NULL),
           ok ? "ok" : "FAILED");
    fflush(stdout);
    grain_finalize(g);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: mpirun -np N ep_run DEVICES|peer\n");
        return 2;
    }
    unsigned want = (unsigned)strtoul(argv[1], NULL, 10);
    grain_t *g = NULL;
    OK(grain_init(NULL, &g));
    if (strcmp(argv[1], "peer") == 0)
        return peer_dies(g);
    int me = grain_my_pe(g), ranks = grain_n_pes(g);
    unsigned node_devices = grain_node_devices(g);
    check_ids(g, me, ranks, want, node_devices);
    check_collectives(g, me, want);
    check_messages(g, me, want);
    check_refusals(g, me, ranks);
    check_collective_refusals(g, want);
    check_ids(g, me, ranks, want, node_devices); /* nothing the refusals did lingers */
    check_collectives(g, me, want);
    OK(grain_finalize(g));
    if (failures == 0 && me == 0)
        printf("ep_run: ok\n");
    return failures == 0 ? 0 : 1;
}
