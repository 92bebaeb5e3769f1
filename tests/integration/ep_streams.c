/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoint command queues over streams (grain/ep.h, GMH III-B3) on any
 * number of ranks: commands of one stream run in the order queued; a kernel
 * comes after a copy of another stream and after a message from the
 * neighbouring endpoint; a send behind the kernel that wrote it and a
 * copy behind a receive, by their streams' order alone; a launch keeps the
 * arguments it was queued with;
 * a command after a failed event fails and its stream goes on; the
 * refusals, each with its sentence; commands left unwaited run to their end
 * when the endpoint returns.  Every value is checked against what only the
 * right order gives.
 *
 *   mpirun -np N ep_streams DEVICES
 *
 * DEVICES endpoints a rank (0: GRAIN_EP_DEVICES or the rank's share).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EP_TEST "ep_streams"
#include "ep_expect.h"

#define N 65536u /* elements of each buffer */
#define BYTES (N * sizeof(uint64_t))

extern const char ep_streams_source[];

static uint64_t seed(int id, size_t i)
{
    return (uint64_t)i * 2654435761u + (uint64_t)id * 977u + 1u;
}

/* Whether out[i] == want(i) for every i, naming the first that is not. */
static int same(const uint64_t *out, int id, int count, uint64_t (*want)(int, int, size_t), const char *what)
{
    for (size_t i = 0; i < N; i++)
        if (out[i] != want(id, count, i)) {
            char line[256];
            snprintf(line, sizeof line, "endpoint %d, %s: element %zu is %llu, wanted %llu", id, what, i,
                     (unsigned long long)out[i], (unsigned long long)want(id, count, i));
            expect(0, line);
            return 0;
        }
    return 1;
}

static uint64_t after_two(int id, int count, size_t i)
{
    (void)count;
    return (seed(id, i) * 3u + 1u) * 5u + 7u;
}

static int from_of(int id, int count)
{
    return (id + count - 1) % count;
}

static uint64_t sent(int id, size_t i)
{
    return seed(id, i) * 11u;
}

static uint64_t summed(int id, int count, size_t i)
{
    return seed(id, i) + sent(from_of(id, count), i);
}

static void set_affine(grain_ep_kernel_t *k, grain_ep_mem_t *x, uint64_t mul, uint64_t add)
{
    uint64_t n = N;
    OK(grain_ep_kernel_arg_mem(k, 0, x, 0));
    OK(grain_ep_kernel_arg(k, 1, sizeof mul, &mul));
    OK(grain_ep_kernel_arg(k, 2, sizeof add, &add));
    OK(grain_ep_kernel_arg(k, 3, sizeof n, &n));
}

/* One stream, FIFO: a copy in, two launches of one kernel with different
 * arguments (set again between them), a copy out; only the last waited. */
static int fifo(grain_cmdq_t *q, grain_ep_kernel_t *affine, grain_ep_mem_t *x, uint64_t *host, uint64_t *out)
{
    const size_t global = N;
    grain_ep_event_t *e[4];
    OK(grain_ep_copy_in(q, 0, x, 0, host, BYTES, NULL, 0, &e[0]));
    set_affine(affine, x, 3, 1);
    OK(grain_ep_launch(q, 0, affine, 1, &global, NULL, NULL, 0, &e[1]));
    set_affine(affine, x, 5, 7);
    OK(grain_ep_launch(q, 0, affine, 1, &global, NULL, NULL, 0, &e[2]));
    OK(grain_ep_copy_out(q, 0, x, 0, out, BYTES, NULL, 0, &e[3]));
    OK(grain_ep_wait(q, e[3]));
    OK(grain_ep_wait_all(q, e, 3));
    return same(out, grain_ep_id(q), grain_ep_count(q), after_two, "one stream's copy, two launches and copy back");
}

/* Across streams and after a message: x += y on stream 2 once the copy
 * into x (stream 1) and the neighbour's message into y are done, then x
 * copied out behind it on stream 2. */
static int across(grain_cmdq_t *q, grain_ep_kernel_t *accumulate, grain_ep_mem_t *x, grain_ep_mem_t *y,
                  grain_ep_mem_t *z, uint64_t *host, uint64_t *out)
{
    int id = grain_ep_id(q), count = grain_ep_count(q);
    size_t got = 0;
    const size_t global = N, local = 64;
    uint64_t n = N;
    grain_ep_event_t *e[5];
    OK(grain_ep_irecv(q, y, 0, BYTES, from_of(id, count), 5, &got, &e[0]));
    OK(grain_ep_copy_in(q, 1, x, 0, host, BYTES, NULL, 0, &e[1]));
    OK(grain_ep_kernel_arg_mem(accumulate, 0, x, 0));
    OK(grain_ep_kernel_arg_mem(accumulate, 1, y, 0));
    OK(grain_ep_kernel_arg(accumulate, 2, sizeof n, &n));
    OK(grain_ep_launch(q, 2, accumulate, 1, &global, &local, e, 2, &e[2]));
    OK(grain_ep_copy_out(q, 2, x, 0, out, BYTES, NULL, 0, &e[3]));
    uint64_t *mine = malloc(BYTES);
    if (mine == NULL)
        return 0;
    for (size_t i = 0; i < N; i++)
        mine[i] = sent(id, i);
    OK(grain_ep_mem_write(q, z, 0, mine, BYTES));
    free(mine);
    OK(grain_ep_isend(q, z, 0, BYTES, (id + 1) % count, 5, &e[4]));
    OK(grain_ep_wait_all(q, e, 5));
    expect(got == BYTES, "the neighbour's message is whole");
    return same(out, id, count, summed, "a launch after a copy of another stream and a message");
}

/* A launch after a receive that fails is not run; its stream goes on. */
static int after_failure(grain_cmdq_t *q, grain_ep_kernel_t *affine, grain_ep_mem_t *x, grain_ep_mem_t *y,
                         grain_ep_mem_t *z, uint64_t *out)
{
    int id = grain_ep_id(q), count = grain_ep_count(q);
    size_t got = 0;
    const size_t global = N;
    grain_ep_event_t *bad, *skipped, *fine, *s;
    OK(grain_ep_irecv(q, y, 0, 8, from_of(id, count), 6, &got, &bad));
    set_affine(affine, x, 0, 0);
    OK(grain_ep_launch(q, 3, affine, 1, &global, NULL, &bad, 1, &skipped));
    OK(grain_ep_copy_out(q, 3, x, 0, out, BYTES, NULL, 0, &fine));
    OK(grain_ep_isend(q, z, 0, 16, (id + 1) % count, 6, &s));
    expect_refused(grain_ep_wait(q, skipped), GRAIN_ERR_STATE, "not run, as an event it came after failed",
                   "a launch after a receive too small");
    expect_refused(grain_ep_wait(q, bad), GRAIN_ERR_INVALID, "does not fit", "the receive too small");
    OK(grain_ep_wait(q, fine));
    OK(grain_ep_wait(q, s));
    return same(out, id, count, summed, "the stream after a command that was not run");
}

static uint64_t sent_plus_five(int id, int count, size_t i)
{
    return sent(from_of(id, count), i) + 5u;
}

/* Messages as stream commands: a send behind the kernel that wrote its
 * bytes (stream 6), a receive and a copy behind it (stream 7); no events
 * between them but the streams' order. */
static int messages_on_streams(grain_cmdq_t *q, grain_ep_kernel_t *affine, grain_ep_mem_t *y, grain_ep_mem_t *z,
                               uint64_t *out)
{
    int id = grain_ep_id(q), count = grain_ep_count(q);
    size_t got = 0;
    const size_t global = N;
    grain_ep_event_t *e[4];
    set_affine(affine, z, 1, 5);
    OK(grain_ep_launch(q, 6, affine, 1, &global, NULL, NULL, 0, &e[0]));
    OK(grain_ep_send_on(q, 6, z, 0, BYTES, (id + 1) % count, 8, NULL, 0, &e[1]));
    OK(grain_ep_recv_on(q, 7, y, 0, BYTES, from_of(id, count), 8, &got, NULL, 0, &e[2]));
    OK(grain_ep_copy_out(q, 7, y, 0, out, BYTES, NULL, 0, &e[3]));
    OK(grain_ep_wait(q, e[3]));
    OK(grain_ep_wait_all(q, e, 3));
    expect(got == BYTES, "a receive on a stream: its length");
    return same(out, id, count, sent_plus_five, "a send behind a kernel, a copy behind a receive");
}

static void refusals(grain_cmdq_t *q, grain_ep_program_t *p, grain_ep_kernel_t *affine, grain_ep_mem_t *x,
                     grain_ep_mem_t *ro, uint64_t *host)
{
    const size_t global = N, odd = 3, local = 2;
    uint64_t big[9] = {0};
    grain_ep_event_t *e = NULL, *done = NULL;
    expect_refused(grain_ep_copy_in(q, GRAIN_EP_STREAMS, x, 0, host, 8, NULL, 0, &e), GRAIN_ERR_INVALID,
                   "streams 0 to 7", "a stream past the last");
    expect_refused(grain_ep_copy_in(q, 0, x, BYTES - 4, host, 8, NULL, 0, &e), GRAIN_ERR_INVALID, "do not fit",
                   "a copy past the memory's end");
    expect_refused(grain_ep_copy_in(q, 0, ro, 0, host, 8, NULL, 0, &e), GRAIN_ERR_INVALID, "GRAIN_EP_WRITE",
                   "a copy into memory without GRAIN_EP_WRITE");
    expect_refused(grain_ep_copy_out(q, 0, x, 0, host, 8, NULL, 0, NULL), GRAIN_ERR_INVALID,
                   "nowhere to store the event", "a command without an event");
    expect_refused(grain_ep_kernel_arg(affine, 32, 8, big), GRAIN_ERR_INVALID, "at most 32",
                   "an argument past the last");
    expect_refused(grain_ep_kernel_arg(affine, 1, sizeof big, big), GRAIN_ERR_INVALID, "1 to 64 bytes",
                   "an argument of 72 bytes");
    expect_refused(grain_ep_kernel_arg_mem(affine, 0, x, BYTES + 1), GRAIN_ERR_INVALID, "past the memory's",
                   "a memory argument past its end");
    set_affine(affine, x, 1, 0);
    expect_refused(grain_ep_launch(q, 0, affine, 1, &odd, &local, NULL, 0, &e), GRAIN_ERR_INVALID,
                   "non-zero multiple of the work-group size", "a global size not a multiple of the local");
    expect_refused(grain_ep_launch(q, 0, affine, 4, &global, NULL, NULL, 0, &e), GRAIN_ERR_INVALID,
                   "1 to 3 dimensions", "four dimensions");
    grain_ep_kernel_t *unset = NULL;
    OK(grain_ep_kernel_create(p, "accumulate", &unset));
    OK(grain_ep_kernel_arg(unset, 2, 8, big));
    expect_refused(grain_ep_launch(q, 0, unset, 1, &global, NULL, NULL, 0, &e), GRAIN_ERR_INVALID,
                   "argument 0 was never set", "a launch with an argument never set");
    grain_ep_kernel_destroy(unset);
    OK(grain_ep_copy_out(q, 0, x, 0, host, 8, NULL, 0, &done));
    OK(grain_ep_wait(q, done));
    expect_refused(grain_ep_launch(q, 0, affine, 1, &global, NULL, &done, 1, &e), GRAIN_ERR_INVALID,
                   "not an event of endpoint", "a launch after an event already waited for");
}

static grain_status_t streams(grain_cmdq_t *q, void *arg)
{
    int *ok = arg, good = 1;
    int id = grain_ep_id(q);
    grain_ep_program_t *p = NULL;
    grain_ep_kernel_t *affine = NULL, *accumulate = NULL;
    OK(grain_ep_program_create(q, ep_streams_source, NULL, &p));
    OK(grain_ep_kernel_create(p, "affine", &affine));
    OK(grain_ep_kernel_create(p, "accumulate", &accumulate));
    grain_ep_program_destroy(p); /* its kernels keep it */
    grain_ep_mem_t *x, *y, *z, *ro;
    OK(grain_ep_mem_alloc(q, BYTES, GRAIN_EP_READ | GRAIN_EP_WRITE, &x));
    OK(grain_ep_mem_alloc(q, BYTES, GRAIN_EP_READ | GRAIN_EP_WRITE | GRAIN_EP_NO_SHADOW, &y));
    OK(grain_ep_mem_alloc(q, BYTES, GRAIN_EP_READ | GRAIN_EP_WRITE, &z));
    OK(grain_ep_mem_alloc(q, 64, GRAIN_EP_READ, &ro));
    uint64_t *host = malloc(BYTES), *out = malloc(BYTES);
    if (host == NULL || out == NULL) {
        fprintf(stderr, "ep_streams: no memory\n");
        exit(2);
    }
    for (size_t i = 0; i < N; i++)
        host[i] = seed(id, i);
    good &= fifo(q, affine, x, host, out);
    for (size_t i = 0; i < N; i++)
        host[i] = seed(id, i);
    good &= across(q, accumulate, x, y, z, host, out);
    good &= after_failure(q, affine, x, y, z, out);
    good &= messages_on_streams(q, affine, y, z, out);
    refusals(q, p, affine, x, ro, host);

    /* Left for the endpoint's return: a launch after a receive from itself
     * that it never sends (the launch fails when the receive is dropped),
     * which keeps x from being freed, a copy that runs to its end, and a
     * receive on a stream, also never sent: one message and three commands
     * in the warnings (CMakeLists.txt checks the counts).  The copy reads
     * x's shadow, which lives until the endpoint frees x at its return,
     * after its commands: host memory a copy names must outlive it, and on
     * lanes (CUDA, HIP, OpenCL) the copy may run after this returns. */
    size_t got = 0;
    const size_t global = N;
    grain_ep_event_t *never, *stuck, *left, *dropped;
    OK(grain_ep_irecv(q, y, 0, 8, id, 7, &got, &never));
    OK(grain_ep_recv_on(q, 3, z, 0, 8, id, 9, NULL, NULL, 0, &dropped));
    set_affine(affine, x, 2, 0);
    OK(grain_ep_launch(q, 4, affine, 1, &global, NULL, &never, 1, &stuck));
    grain_ep_mem_free(q, x);
    expect(strstr(grain_error_message(NULL), "not yet done uses that memory") != NULL,
           "memory freed under a queued launch");
    OK(grain_ep_copy_in(q, 5, z, 0, grain_ep_mem_shadow(x), BYTES, NULL, 0, &left));
    grain_ep_kernel_destroy(affine); /* its queued launch keeps it */
    free(host);
    free(out);
    ok[grain_ep_vdev(q)] = good;
    return GRAIN_OK;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: mpirun -np N ep_streams DEVICES\n");
        return 2;
    }
    grain_t *g = NULL;
    OK(grain_init(NULL, &g));
    int me = grain_my_pe(g);
    unsigned want = (unsigned)strtoul(argv[1], NULL, 10);
    expect_each(g, me, want, streams, "the streams' order, dependencies and refusals");
    OK(grain_finalize(g));
    if (failures == 0 && me == 0)
        printf("ep_streams: ok\n");
    return failures == 0 ? 0 : 1;
}
