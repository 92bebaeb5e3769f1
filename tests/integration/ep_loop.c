/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Registered commands and the run loop (grain/ep.h, GMH III-B4, III-B6) on
 * any number of ranks: every endpoint of a ring registers, once, a receive
 * of its left neighbour's vector, a blocking send of its own to the right,
 * two kernels after both, a copy back and a control task; grain_ep_start
 * runs rounds until the control task, which checks each round's vector
 * against the ring computed on the host and sums the rounds over every
 * endpoint with a collective, says GRAIN_EP_EXIT.  Then the refusals and a
 * loop a failed receive ends.
 *
 *   mpirun -np N ep_loop DEVICES
 *
 * DEVICES endpoints a rank (0: GRAIN_EP_DEVICES or the rank's share).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EP_TEST "ep_loop"
#include "ep_expect.h"

#define N 4096u /* elements of each vector */
#define BYTES (N * sizeof(uint64_t))
#define ROUNDS 5

extern const char ep_streams_source[];

typedef struct ring {
    grain_cmdq_t *q;
    int id, count, rounds;
    uint64_t *model; /* every endpoint's vector, count x N, as the ring computes them */
    uint64_t *out;   /* this endpoint's vector, copied back each round */
    grain_ep_mem_t *sum;
    int good;
} ring_t;

static uint64_t seed(int id, size_t i)
{
    return (uint64_t)i * 40503u + (uint64_t)id * 7919u + 3u;
}

/* One round of the ring on the host: v_e = (v_e + v_left) * 3 + 1. */
static void model_round(ring_t *r)
{
    uint64_t *next = malloc((size_t)r->count * BYTES);
    if (next == NULL)
        exit(2);
    for (int e = 0; e < r->count; e++) {
        int left = (e + r->count - 1) % r->count;
        for (size_t i = 0; i < N; i++)
            next[(size_t)e * N + i] = (r->model[(size_t)e * N + i] + r->model[(size_t)left * N + i]) * 3u + 1u;
    }
    memcpy(r->model, next, (size_t)r->count * BYTES);
    free(next);
}

static int control(grain_cmdq_t *q, void *arg)
{
    ring_t *r = arg;
    r->rounds++;
    model_round(r);
    if (memcmp(r->out, r->model + (size_t)r->id * N, BYTES) != 0) {
        char line[128];
        snprintf(line, sizeof line, "endpoint %d: round %d's vector differs from the ring's", r->id, r->rounds);
        expect(0, line);
        r->good = 0;
    }
    /* Collectives run inside a control task: every endpoint is at the same round. */
    int64_t rounds = r->rounds;
    OK(grain_ep_mem_write(q, r->sum, 0, &rounds, sizeof rounds));
    OK(grain_ep_allreduce(q, r->sum, 0, 1, GRAIN_INT64, GRAIN_SUM));
    OK(grain_ep_mem_read(q, r->sum, 0, &rounds, sizeof rounds));
    if (rounds != (int64_t)r->count * r->rounds) {
        expect(0, "the control tasks' allreduce of the round");
        r->good = 0;
    }
    return r->rounds < ROUNDS ? GRAIN_EP_RERUN : GRAIN_EP_EXIT;
}

/* Returns 7, once it has seen the loop refuse to change under it. */
static int seven(grain_cmdq_t *q, void *arg)
{
    (void)arg;
    expect_refused(grain_ep_start(q), GRAIN_ERR_STATE, "running already", "the loop started from a control task");
    expect_refused(grain_ep_add_control(q, seven, NULL, NULL), GRAIN_ERR_STATE, "register before grain_ep_start",
                   "a registration from a control task");
    grain_ep_clear(q);
    expect(strstr(grain_error_message(NULL), "its commands stay") != NULL, "grain_ep_clear from a control task");
    return 7;
}

/* Registration and the loop refusing, each with its sentence; then a loop
 * whose receive is too small for what the neighbour sends. */
static int refusals(ring_t *r, grain_ep_kernel_t *affine, grain_ep_mem_t *v, grain_ep_mem_t *halo)
{
    grain_cmdq_t *q = r->q;
    const size_t global = N;
    const unsigned later = 99;
    size_t got = 0;
    expect_refused(grain_ep_start(q), GRAIN_ERR_STATE, "registered no commands", "a loop with nothing registered");
    expect_refused(grain_ep_add_launch(q, 0, affine, 1, &global, NULL, &later, 1, NULL), GRAIN_ERR_INVALID,
                   "command 99 to come after is not registered yet", "coming after a command not registered");
    expect_refused(grain_ep_add_send(q, 0, v, 0, 8, (r->id + 1) % r->count, 2, 4u, NULL, 0, NULL), GRAIN_ERR_INVALID,
                   "give GRAIN_EP_BLOCK or 0", "bad flags");
    expect_refused(grain_ep_add_recv(q, 0, v, 0, 8, -1, 2, 0, &got, NULL, 0, NULL), GRAIN_ERR_INVALID,
                   "the job has endpoints", "a receive from no endpoint");
    expect_refused(grain_ep_add_copy_out(q, GRAIN_EP_STREAMS, v, 0, r->out, 8, NULL, 0, NULL), GRAIN_ERR_INVALID,
                   "an endpoint has streams", "a stream past the last");
    expect_refused(grain_ep_add_control(q, NULL, NULL, NULL), GRAIN_ERR_INVALID, "no function",
                   "a control task without a function");

    OK(grain_ep_add_control(q, seven, NULL, NULL));
    expect_refused(grain_ep_start(q), GRAIN_ERR_INVALID, "returned 7; give GRAIN_EP_EXIT or GRAIN_EP_RERUN",
                   "a control task's verdict");
    grain_ep_clear(q);

    unsigned recv;
    OK(grain_ep_add_recv(q, 0, halo, 0, 8, (r->id + r->count - 1) % r->count, 3, 0, &got, NULL, 0, &recv));
    OK(grain_ep_add_send(q, 1, v, 0, 16, (r->id + 1) % r->count, 3, 0, NULL, 0, NULL));
    OK(grain_ep_add_launch(q, 2, affine, 1, &global, NULL, &recv, 1, NULL)); /* not run: its receive fails */
    expect_refused(grain_ep_start(q), GRAIN_ERR_INVALID, "does not fit", "a loop whose receive is too small");
    grain_ep_mem_free(q, halo);
    expect(strstr(grain_error_message(NULL), "registered uses that memory") != NULL,
           "memory freed under a registered command");
    grain_ep_clear(q);
    return 1;
}

static grain_status_t ring(grain_cmdq_t *q, void *arg)
{
    int *ok = arg;
    ring_t r = {.q = q, .id = grain_ep_id(q), .count = grain_ep_count(q), .good = 1};
    r.model = malloc((size_t)r.count * BYTES);
    r.out = malloc(BYTES);
    if (r.model == NULL || r.out == NULL)
        exit(2);
    for (int e = 0; e < r.count; e++)
        for (size_t i = 0; i < N; i++)
            r.model[(size_t)e * N + i] = seed(e, i);
    grain_ep_program_t *p;
    grain_ep_kernel_t *affine, *accumulate;
    OK(grain_ep_program_create(q, ep_streams_source, NULL, &p));
    OK(grain_ep_kernel_create(p, "affine", &affine));
    OK(grain_ep_kernel_create(p, "accumulate", &accumulate));
    grain_ep_mem_t *v, *halo;
    OK(grain_ep_mem_alloc(q, BYTES, GRAIN_EP_READ | GRAIN_EP_WRITE, &v));
    OK(grain_ep_mem_alloc(q, BYTES, GRAIN_EP_READ | GRAIN_EP_WRITE | GRAIN_EP_NO_SHADOW, &halo));
    OK(grain_ep_mem_alloc(q, 8, GRAIN_EP_READ | GRAIN_EP_WRITE, &r.sum));
    OK(grain_ep_mem_write(q, v, 0, r.model + (size_t)r.id * N, BYTES));

    size_t got = 0;
    uint64_t n = N, mul = 3, add = 1;
    const size_t global = N;
    unsigned c[3];
    OK(grain_ep_add_recv(q, 0, halo, 0, BYTES, (r.id + r.count - 1) % r.count, 1, 0, &got, NULL, 0, &c[0]));
    OK(grain_ep_add_send(q, 1, v, 0, BYTES, (r.id + 1) % r.count, 1, GRAIN_EP_BLOCK, NULL, 0, &c[1]));
    OK(grain_ep_kernel_arg_mem(accumulate, 0, v, 0));
    OK(grain_ep_kernel_arg_mem(accumulate, 1, halo, 0));
    OK(grain_ep_kernel_arg(accumulate, 2, sizeof n, &n));
    OK(grain_ep_add_launch(q, 2, accumulate, 1, &global, NULL, c, 2, &c[2]));
    OK(grain_ep_kernel_arg(accumulate, 9, sizeof n, &n)); /* more arguments than registered: the launch keeps 3 */
    OK(grain_ep_kernel_arg_mem(affine, 0, v, 0));
    OK(grain_ep_kernel_arg(affine, 1, sizeof mul, &mul));
    OK(grain_ep_kernel_arg(affine, 2, sizeof add, &add));
    OK(grain_ep_kernel_arg(affine, 3, sizeof n, &n));
    OK(grain_ep_add_launch(q, 2, affine, 1, &global, NULL, NULL, 0, NULL)); /* behind accumulate on stream 2 */
    mul = 0; /* taken at registration: the registered launch keeps 3 */
    OK(grain_ep_kernel_arg(affine, 1, sizeof mul, &mul));
    OK(grain_ep_add_copy_out(q, 2, v, 0, r.out, BYTES, NULL, 0, NULL));
    OK(grain_ep_add_control(q, control, &r, NULL));
    OK(grain_ep_start(q));
    expect(r.rounds == ROUNDS, "the loop ran until the control task said GRAIN_EP_EXIT");
    expect(got == BYTES, "the registered receive's length");
    grain_ep_clear(q);

    r.good &= refusals(&r, affine, v, halo);
    free(r.model);
    free(r.out);
    ok[grain_ep_vdev(q)] = r.good;
    return GRAIN_OK; /* programs, kernels and memory left are freed */
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: mpirun -np N ep_loop DEVICES\n");
        return 2;
    }
    grain_t *g = NULL;
    OK(grain_init(NULL, &g));
    int me = grain_my_pe(g);
    expect_each(g, me, (unsigned)strtoul(argv[1], NULL, 10), ring, "the loop's rounds and refusals");
    OK(grain_finalize(g));
    if (failures == 0 && me == 0)
        printf("ep_loop: ok\n");
    return failures == 0 ? 0 : 1;
}
