/*
 * aggregator_bench: how many queue messages one aggregator thread turns into
 * per-destination buffers per second (DESIGN.md, send path 4), with the
 * network taken out: the runtime's own aggregator threads drain a ring queue
 * that host threads fill as fast as they can, and a sink transport returns
 * every buffer the moment it is handed over.
 *
 *   aggregator_bench [--aggregators A] [--producers P] [--dests D]
 *                    [--messages N] [--csv FILE]
 *
 * Messages are grain's 24-byte queue messages (header, offset, value: an
 * add) to D other ranks in turn, 16 bytes each on the wire.  For A from 1 to
 * --aggregators (doubling) it prints messages per second per aggregator
 * thread, the producers' own rate with nothing draining but a bare reader
 * (the baseline: what the queue and the producers allow), and their ratio;
 * every point is the median of three runs, checked by the count of messages
 * the buffers carried.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/queue_baselines.h"
#include "grain/device/queue.h"
#include "runtime/grain_impl.h"

#define WIDTH 256u /* a 256-lane work-group's slot */
#define RINGS_PER_AGG 4u
#define SLOTS 64u

static grain_status_t sink_send(grain_transport_t *t, uint32_t dest, const void *data, size_t len,
                                void *token)
{
    (void)t, (void)dest, (void)data, (void)len;
    grain_packer_release(token);
    return GRAIN_OK;
}

static const grain_transport_ops_t sink_ops = {.size = sizeof sink_ops, .name = "sink", .send = sink_send};

typedef struct producer {
    grain_queue_desc_t *desc;
    unsigned first, stride; /* rings first, first + stride, ... */
    uint64_t slots;         /* to write */
    uint32_t dests;
    pthread_t thread;
} producer_t;

/* Fills whole slots, as a work-group would, through the device API's
 * reservation and publication compiled for the host. */
static void *produce(void *arg)
{
    producer_t *p = arg;
    grain_queue_desc_t *d = p->desc;
    unsigned nrings = (d->geom.nrings - p->first + p->stride - 1) / p->stride;
    for (uint64_t s = 0; s < p->slots; s++) {
        uint32_t ring = p->first + (uint32_t)(s % nrings) * p->stride;
        uint64_t ticket = grain_queue_reserve_ring(d, ring);
        grain_u64 *w = grain_queue_payload(d->shared, &d->geom, ring, ticket);
        for (uint32_t c = 0; c < WIDTH; c++) {
            w[c] = GRAIN_HDR(GRAIN_CMD_ADD64, 0, 1 + (c % p->dests));
            w[WIDTH + c] = 8u * c;
            w[2 * WIDTH + c] = s;
        }
        grain_fence_release();
        grain_queue_publish(d->shared, &d->geom, ring, ticket, WIDTH);
    }
    return NULL;
}

typedef struct run {
    unsigned aggregators, producers, dests;
    uint64_t messages;
} run_t;

static void fail(const char *what)
{
    fprintf(stderr, "aggregator_bench: %s\n", what);
    exit(2);
}

/* Messages per second per draining thread: the aggregators, or with
 * `baseline` the bare readers. */
static double measure(const run_t *r, int baseline)
{
    grain_t *g = calloc(1, sizeof *g);
    if (g == NULL || grain_config_init_env(&g->config) != GRAIN_OK)
        fail("no memory or a bad GRAIN_* setting");
    g->config.aggregators = r->aggregators;
    g->my_pe = 0;
    g->n_pes = (int)r->dests + 1;
    g->tops = &sink_ops;
    g->next_seq = calloc((size_t)g->n_pes, sizeof *g->next_seq);
    pthread_mutex_init(&g->error_lock, NULL);
    grain_queue_geom_t geom = grain_queue_geom(GRAIN_QUEUE_RING, r->aggregators * RINGS_PER_AGG, SLOTS, WIDTH,
                                               GRAIN_MSG_ROWS);
    grain_queue_t *q = aligned_alloc(64, grain_queue_bytes(geom));
    grain_ring_prod_t *prod = calloc(geom.nrings, sizeof *prod);
    if (g->next_seq == NULL || q == NULL || prod == NULL)
        fail("no memory");
    memset(q, 0, grain_queue_bytes(geom));
    grain_queue_init(q, geom);
    grain_queue_desc_t desc = {.shared = q, .prod = prod, .geom = geom};
    g->queue.shared = q;

    uint64_t slots = r->messages / WIDTH / r->producers;
    uint64_t messages = slots * WIDTH * r->producers;
    bench_drain_t *drain = baseline ? calloc(1, sizeof *drain) : NULL;
    double t0 = bench_now();
    if (baseline ? (drain == NULL || !bench_drain_start(drain, q, messages, r->aggregators, 1))
                 : grain_aggregators_start(g) != GRAIN_OK)
        fail("cannot start the draining threads");
    producer_t *ps = calloc(r->producers, sizeof *ps);
    for (unsigned i = 0; i < r->producers; i++) {
        ps[i] = (producer_t){&desc, i, r->producers, slots, r->dests, 0};
        if (pthread_create(&ps[i].thread, NULL, produce, &ps[i]) != 0)
            fail("cannot start a producer");
    }
    for (unsigned i = 0; i < r->producers; i++)
        pthread_join(ps[i].thread, NULL);
    uint64_t carried = 0;
    if (baseline) {
        bench_drain_join(drain);
        carried = atomic_load(&drain->consumed);
    } else {
        grain_aggregators_drain(g);
        for (unsigned a = 0; a < g->n_aggs; a++)
            for (int p = 0; p < g->n_pes; p++)
                carried += g->aggs[a].packer.dest_msgs[p];
    }
    double seconds = bench_now() - t0;
    if (!baseline)
        grain_aggregators_stop(g);
    if (carried != messages) {
        fprintf(stderr, "aggregator_bench: %llu of %llu messages came out\n", (unsigned long long)carried,
                (unsigned long long)messages);
        exit(1);
    }
    free(ps);
    free(drain);
    free(prod);
    free(q);
    free((void *)g->next_seq);
    pthread_mutex_destroy(&g->error_lock);
    free(g);
    return (double)messages / seconds / r->aggregators;
}

int main(int argc, char **argv)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    run_t r = {1, cpus > 2 ? (unsigned)(cpus / 2) : 1, 8, 1u << 24};
    unsigned max_aggs = cpus > 2 ? (unsigned)(cpus / 2) : 1;
    const char *csv_path = "aggregator_bench.csv";
    for (int i = 1; i + 1 < argc; i += 2) {
        unsigned long long v = strtoull(argv[i + 1], NULL, 10);
        if (strcmp(argv[i], "--aggregators") == 0 && v >= 1 && v <= 64)
            max_aggs = (unsigned)v;
        else if (strcmp(argv[i], "--producers") == 0 && v >= 1 && v <= 256)
            r.producers = (unsigned)v;
        else if (strcmp(argv[i], "--dests") == 0 && v >= 1 && v <= 4096)
            r.dests = (unsigned)v;
        else if (strcmp(argv[i], "--messages") == 0 && v >= WIDTH)
            r.messages = v;
        else if (strcmp(argv[i], "--csv") == 0)
            csv_path = argv[i + 1];
        else {
            fprintf(stderr, "usage: aggregator_bench [--aggregators A] [--producers P] [--dests D] "
                            "[--messages N] [--csv FILE]\n");
            return 2;
        }
    }
    if (argc % 2 == 0) {
        fprintf(stderr, "aggregator_bench: %s needs a value\n", argv[argc - 1]);
        return 2;
    }
    FILE *csv = fopen(csv_path, "w");
    if (csv == NULL) {
        perror(csv_path);
        return 2;
    }
    fprintf(csv, "aggregators,producers,dests,msgs_per_s_per_thread,reader_msgs_per_s_per_thread,ratio\n");
    printf("%11s %9s %6s %22s %22s %7s\n", "aggregators", "producers", "dests", "agg msgs/s/thread",
           "bare reader msgs/s/thr", "ratio");
    for (unsigned a = 1; a <= max_aggs; a *= 2) {
        r.aggregators = a;
        double agg = bench_median3(measure(&r, 0), measure(&r, 0), measure(&r, 0));
        double bare = bench_median3(measure(&r, 1), measure(&r, 1), measure(&r, 1));
        printf("%11u %9u %6u %22.0f %22.0f %7.2f\n", a, r.producers, r.dests, agg, bare, agg / bare);
        fprintf(csv, "%u,%u,%u,%.0f,%.0f,%.4f\n", a, r.producers, r.dests, agg, bare, agg / bare);
        fflush(stdout);
    }
    fclose(csv);
    printf("wrote %s\n", csv_path);
    return 0;
}
