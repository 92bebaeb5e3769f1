/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The scheduler's benchmarks hand-written on device endpoints, as a
 * programmer who knows the description writes them: its streams and the
 * events between them that it names, each input copied in on the stream
 * that first needs it and each output copied out after its last writer,
 * from and to pinned memory (the endpoints' shadows).
 *
 * On several devices the description's streams are dealt over the
 * endpoints (stream s on virtual device s % devices), and every endpoint's
 * thread walks all the steps, queuing its own.  An array that a step reads
 * and another device wrote last is sent after its writer, on the writer's
 * stream, and received on the reader's stream before the step; it goes
 * between the devices as the endpoints' messages go.  The description's
 * events cannot order the transfers it never named, so this does: a
 * receive waits for this device's earlier uses of the array, and a kernel
 * that writes an array waits for this device's sends of it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_hand.h"
#include "tools/cli/cli.h"

#define KERNELS 16
#define MAX_DEVICES 64

typedef struct hand {
    const sched_hand_t *run;
    grain_cmdq_t *q;
    unsigned devices, me;
    int first_id; /* the endpoint id of this rank's virtual device 0 */
    grain_ep_program_t *program;
    grain_ep_kernel_t *kernels[KERNELS];
    const char *names[KERNELS];
    grain_ep_mem_t *mem[SUITE_ARRAYS];
    /* One repetition's: every event, for the wait; each step's launch
     * (NULL on other devices); per array, this device's events that use
     * its contents since they last came in, and its sends since its last
     * write here. */
    grain_ep_event_t **events, **step_ev, **uses[SUITE_ARRAYS], **sends[SUITE_ARRAYS];
    size_t n_events, cap_events, n_uses[SUITE_ARRAYS], n_sends[SUITE_ARRAYS];
} hand_t;

static unsigned device_of(const hand_t *h, unsigned step)
{
    return h->run->suite->steps[step].stream % h->devices;
}

static grain_status_t kernel_of(hand_t *h, const char *name, grain_ep_kernel_t **k_p)
{
    unsigned i = 0;
    while (i < KERNELS && h->names[i] != NULL && strcmp(h->names[i], name) != 0)
        i++;
    if (i == KERNELS)
        return GRAIN_ERR_INVALID;
    if (h->names[i] == NULL) {
        SUITE_CHECK(grain_ep_kernel_create(h->program, name, &h->kernels[i]));
        h->names[i] = name;
    }
    *k_p = h->kernels[i];
    return GRAIN_OK;
}

/* Keeps an event for the repetition's wait. */
static grain_status_t keep(hand_t *h, grain_ep_event_t *e)
{
    if (h->n_events == h->cap_events) {
        size_t cap = h->cap_events ? 2 * h->cap_events : 256;
        grain_ep_event_t **grown = realloc(h->events, cap * sizeof *grown);
        if (grown == NULL)
            return GRAIN_ERR_NO_MEMORY;
        h->events = grown;
        h->cap_events = cap;
    }
    h->events[h->n_events++] = e;
    return GRAIN_OK;
}

/* Where array a's contents stand as the steps are walked, the same on
 * every endpoint. */
typedef struct where {
    int writer[SUITE_ARRAYS];           /* the step that wrote it last, -1: the host's input */
    uint64_t held[SUITE_ARRAYS];        /* the devices holding those contents */
    grain_ep_event_t *in[SUITE_ARRAYS]; /* what brought them onto this device, if it did */
    unsigned in_stream[SUITE_ARRAYS];
} where_t;

/* Brings array a's contents onto the device of step i, whose j-th argument
 * reads it: copied in from the host, or sent by the device that wrote it;
 * `after` gains what the step must wait for on this device. */
static grain_status_t bring(hand_t *h, where_t *w, unsigned i, unsigned j, unsigned a, grain_ep_event_t **after,
                            size_t *n_after)
{
    const suite_t *su = h->run->suite;
    const suite_step_t *st = &su->steps[i];
    unsigned dev = device_of(h, i);
    int mine = dev == h->me;
    if (!((w->held[a] >> dev) & 1u)) {
        grain_ep_event_t *e = NULL;
        if (w->writer[a] < 0 && mine) {
            SUITE_CHECK(grain_ep_copy_in(h->q, st->stream, h->mem[a], 0, grain_ep_mem_shadow(h->mem[a]),
                                         suite_bytes(su, a), NULL, 0, &e));
        } else if (w->writer[a] >= 0) {
            unsigned writer = (unsigned)w->writer[a], from = device_of(h, writer);
            int tag = (int)(i * SUITE_ARGS + j);
            if (from == h->me) {
                grain_ep_event_t *sent;
                SUITE_CHECK(grain_ep_send_on(h->q, su->steps[writer].stream, h->mem[a], 0, suite_bytes(su, a),
                                             h->first_id + (int)dev, tag, &h->step_ev[writer], 1, &sent));
                SUITE_CHECK(keep(h, sent));
                h->sends[a][h->n_sends[a]++] = sent;
            }
            if (mine)
                SUITE_CHECK(grain_ep_recv_on(h->q, st->stream, h->mem[a], 0, suite_bytes(su, a),
                                             h->first_id + (int)from, tag, NULL, h->uses[a], h->n_uses[a], &e));
        }
        w->held[a] |= 1ull << dev;
        if (e != NULL) {
            SUITE_CHECK(keep(h, e));
            w->in[a] = e;
            w->in_stream[a] = st->stream;
            h->uses[a][0] = e;
            h->n_uses[a] = 1;
            after[(*n_after)++] = e;
        }
    } else if (mine && w->in[a] != NULL && w->in_stream[a] != st->stream) {
        after[(*n_after)++] = w->in[a];
    }
    return GRAIN_OK;
}

static grain_status_t one_step(hand_t *h, where_t *w, unsigned i)
{
    const suite_t *su = h->run->suite;
    const suite_step_t *st = &su->steps[i];
    unsigned dev = device_of(h, i);
    int mine = dev == h->me;
    grain_ep_event_t *after[SUITE_AFTER + SUITE_ARGS + SUITE_ARGS * MAX_DEVICES];
    size_t n_after = 0;
    for (unsigned k = 0; mine && k < st->n_after; k++)
        if (h->step_ev[st->after[k]] != NULL) /* on this device; elsewhere a transfer carries it */
            after[n_after++] = h->step_ev[st->after[k]];
    grain_ep_kernel_t *k = NULL;
    if (mine)
        SUITE_CHECK(kernel_of(h, st->kernel, &k));
    for (unsigned j = 0; j < st->n_args; j++) {
        const suite_arg_t *g = &st->args[j];
        if (g->array < 0) {
            if (mine)
                SUITE_CHECK(grain_ep_kernel_arg(k, j, sizeof g->value, &g->value));
            continue;
        }
        unsigned a = (unsigned)g->array;
        if (g->access & GRAIN_READ)
            SUITE_CHECK(bring(h, w, i, j, a, after, &n_after));
        if (g->access & GRAIN_WRITE) {
            for (size_t s = 0; mine && s < h->n_sends[a]; s++)
                after[n_after++] = h->sends[a][s];
            if (mine)
                h->n_sends[a] = 0;
            w->writer[a] = (int)i;
            w->held[a] = 1ull << dev;
            w->in[a] = NULL;
        }
        if (mine)
            SUITE_CHECK(grain_ep_kernel_arg_mem(k, j, h->mem[a], 0));
    }
    if (!mine)
        return GRAIN_OK;
    SUITE_CHECK(grain_ep_launch(h->q, st->stream, k, 1, &st->global, NULL, after, n_after, &h->step_ev[i]));
    SUITE_CHECK(keep(h, h->step_ev[i]));
    for (unsigned j = 0; j < st->n_args; j++)
        if (st->args[j].array >= 0) {
            unsigned a = (unsigned)st->args[j].array;
            h->uses[a][h->n_uses[a]++] = h->step_ev[i];
        }
    return GRAIN_OK;
}

/* One repetition, timed from the inputs on the host to every output there,
 * over every endpoint; checks the outputs this device wrote last. */
static grain_status_t repetition(hand_t *h, double *seconds, int *wrong)
{
    const suite_t *su = h->run->suite;
    where_t w;
    for (unsigned a = 0; a < su->n_arrays; a++) {
        w.writer[a] = -1;
        w.held[a] = 0;
        w.in[a] = NULL;
        h->n_uses[a] = h->n_sends[a] = 0;
        if (su->input[a])
            memcpy(grain_ep_mem_shadow(h->mem[a]), su->init[a], suite_bytes(su, a));
    }
    memset(h->step_ev, 0, su->n_steps * sizeof *h->step_ev);
    h->n_events = 0;
    SUITE_CHECK(grain_ep_barrier(h->q));
    double t0 = cli_now_s();
    for (unsigned i = 0; i < su->n_steps; i++)
        SUITE_CHECK(one_step(h, &w, i));
    for (unsigned a = 0; a < su->n_arrays; a++)
        if (su->output[a] && w.writer[a] >= 0 && device_of(h, (unsigned)w.writer[a]) == h->me) {
            unsigned writer = (unsigned)w.writer[a];
            grain_ep_event_t *e;
            SUITE_CHECK(grain_ep_copy_out(h->q, su->steps[writer].stream, h->mem[a], 0,
                                          grain_ep_mem_shadow(h->mem[a]), suite_bytes(su, a), &h->step_ev[writer], 1,
                                          &e));
            SUITE_CHECK(keep(h, e));
        }
    SUITE_CHECK(grain_ep_wait_all(h->q, h->events, h->n_events));
    SUITE_CHECK(grain_ep_barrier(h->q));
    *seconds = cli_now_s() - t0;
    for (unsigned a = 0; a < su->n_arrays; a++)
        if (su->output[a] && w.writer[a] >= 0 && device_of(h, (unsigned)w.writer[a]) == h->me &&
            !suite_same(su, a, grain_ep_mem_shadow(h->mem[a]), h->run->want[a]))
            *wrong = 1;
    return GRAIN_OK;
}

grain_status_t sched_hand_endpoint(grain_cmdq_t *q, void *arg)
{
    sched_hand_t *run = arg;
    const suite_t *su = run->suite;
    hand_t h = {.run = run, .q = q, .devices = grain_ep_devices(q), .me = grain_ep_vdev(q)};
    h.first_id = grain_ep_id(q) - (int)h.me;
    if (h.devices > MAX_DEVICES || (size_t)su->n_steps * SUITE_ARGS > GRAIN_EP_TAGS) {
        if (h.me == 0) /* a transfer's tag is its step and argument */
            fprintf(stderr, "sched_bench: the hand-written version takes %d devices and %d steps at most; %s has %u "
                            "steps on %u devices\n", MAX_DEVICES, GRAIN_EP_TAGS / SUITE_ARGS, su->name, su->n_steps,
                    h.devices);
        return GRAIN_ERR_INVALID;
    }
    grain_status_t st = (h.step_ev = calloc(su->n_steps, sizeof *h.step_ev)) != NULL ? GRAIN_OK
                                                                                      : GRAIN_ERR_NO_MEMORY;
    for (unsigned a = 0; a < su->n_arrays && st == GRAIN_OK; a++)
        if ((h.uses[a] = malloc((su->n_steps * SUITE_ARGS + 1) * sizeof *h.uses[a])) == NULL ||
            (h.sends[a] = malloc((su->n_steps * SUITE_ARGS + 1) * sizeof *h.sends[a])) == NULL)
            st = GRAIN_ERR_NO_MEMORY;
    if (st == GRAIN_OK)
        st = grain_ep_program_create(q, run->source, NULL, &h.program);
    for (unsigned a = 0; a < su->n_arrays && st == GRAIN_OK; a++)
        st = grain_ep_mem_alloc(q, suite_bytes(su, a), GRAIN_EP_READ | GRAIN_EP_WRITE, &h.mem[a]);
    /* Every endpoint runs every repetition, whatever it found, since each
     * ends in a barrier: an endpoint that stopped early would leave the
     * others waiting. */
    for (unsigned rep = 0; rep <= run->reps && st == GRAIN_OK; rep++) {
        int wrong = 0;
        double seconds = 0.0;
        st = repetition(&h, &seconds, &wrong);
        if (wrong)
            __atomic_store_n(&run->wrong, 1, __ATOMIC_RELAXED);
        if (h.me == 0)
            run->seconds[rep] = seconds;
    }
    for (unsigned a = 0; a < su->n_arrays; a++) {
        free(h.uses[a]);
        free(h.sends[a]);
    }
    free(h.step_ev);
    free(h.events);
    return st; /* the endpoint frees its memory, kernels and program when it returns */
}
