/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aggregator_bench: how many queue messages one aggregator thread turns into
 * per-destination buffers per second (docs/design.md, send path 4), with the
 * network taken out: a transport that returns every buffer the moment it is
 * handed over (bench_transport.h), and one process stands for D+1 ranks.
 *
 *   aggregator_bench [--aggregators A] [--producers P] [--dests D]
 *                    [--messages N] [--csv FILE] [--gpu] [--inc] [--far]
 *
 * Messages are grain's 24-byte queue messages (header, offset, value: an
 * add of a small value) to D other ranks in turn, packed into runs on the
 * wire (8.5 bytes a message; 16 as plain messages).  For A from 1 to
 * --aggregators (doubling, and A itself) it prints messages per second per
 * aggregator thread; every point is the median of three runs, checked by the
 * count of messages the buffers carried.
 *
 * Host producers (the default): P host threads fill a ring queue as fast as
 * they can, through the device API's reservation compiled for the host; the
 * baseline is the same producers with nothing draining but bare readers.
 *
 * --gpu: the whole path from a kernel on the backend's device (grain_add64
 * from every work-item, the runtime's own queue) through the runtime's
 * aggregators into per-destination buffers.  It prints the rate in queue
 * bytes and wire bytes; the baseline is the same bytes stored by a kernel
 * into the same kind of memory with no queue and no reader (the link's
 * ceiling).
 *
 * --inc: increments instead of adds (grain_inc64 from the kernel), what GUPS
 * sends: two rows a message (the value row stays unwritten), 4.5 wire bytes
 * in runs.
 *
 * --far (host producers): each message's offset differs from the one before
 * it above bit 32, as random offsets into a heap past 4 GiB do, so that no
 * two messages share a run: the packer's worst case.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_transport.h"
#include "bench/queue_baselines.h"
#include "grain/device/queue.h"
#include "runtime/grain_impl.h"
#include "tools/cli/cli.h"

extern const char queue_bench_source[];

#define WIDTH 256u /* a 256-lane work-group's slot */
#define RINGS_PER_AGG 4u
#define SLOTS 64u
#define GPU_PER_WI 64u

typedef struct producer {
    grain_queue_desc_t *desc;
    unsigned first, stride; /* rings first, first + stride, ... */
    uint64_t slots;         /* to write */
    uint32_t dests;
    uint32_t cmd; /* GRAIN_CMD_ADD64, or GRAIN_CMD_INC64 whose value row stays unwritten */
    int far;      /* offsets that differ above bit 32 message to message */
    pthread_t thread;
} producer_t;

/* Fills whole slots, as a work-group would, through the device API's
 * reservation and publication compiled for the host. */
static void *produce(void *arg)
{
    producer_t *p = arg;
    grain_queue_desc_t *d = p->desc;
    /* With more producers than rings, producers share rings, as work-groups
     * do: reservation is atomic. */
    unsigned nrings = d->geom.nrings;
    unsigned mine = p->first < nrings ? (nrings - p->first + p->stride - 1) / p->stride : 1;
    for (uint64_t s = 0; s < p->slots; s++) {
        uint32_t ring = (p->first + (uint32_t)(s % mine) * p->stride) % nrings;
        uint64_t ticket = grain_queue_reserve_ring(d, ring, 1);
        grain_u64 *w = grain_queue_payload(d->shared, &d->geom, ring, ticket);
        for (uint32_t c = 0; c < WIDTH; c++) {
            w[c] = GRAIN_HDR(p->cmd, 0, 1 + (c % p->dests));
            w[WIDTH + c] = 8u * c + (p->far ? (uint64_t)c << 32 : 0);
            if (!grain_cmd_valueless(p->cmd))
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
    int inc; /* increments, two rows a message, instead of adds */
    int far; /* --far */
} run_t;

static void fail(const char *what)
{
    fprintf(stderr, "aggregator_bench: %s\n", what);
    exit(2);
}

static void check(grain_status_t st, const char *what)
{
    if (st != GRAIN_OK) {
        fprintf(stderr, "aggregator_bench: %s failed: %s (grain logged why)\n", what, grain_strerror(st));
        exit(2);
    }
}

/* What the aggregators of `g` have done so far: messages handed to the
 * transport, their wire bytes, and the seconds the threads spent busy. */
typedef struct carried {
    uint64_t msgs, bytes;
    double busy_s;
} carried_t;

static carried_t carried_by(grain_t *g)
{
    carried_t c = {0, 0, 0};
    for (unsigned a = 0; a < g->n_aggs; a++) {
        c.bytes += g->aggs[a].packer.stats.bytes;
        c.busy_s += (double)g->aggs[a].busy_ns * 1e-9;
        for (int p = 0; p < g->n_pes; p++)
            c.msgs += g->aggs[a].packer.dest_msgs[p];
    }
    return c;
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
    g->tops = &bench_transport_ops;
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
        ps[i] = (producer_t){&desc, i, r->producers, slots, r->dests, r->inc ? GRAIN_CMD_INC64 : GRAIN_CMD_ADD64,
                              r->far, 0};
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
        carried = carried_by(g).msgs;
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

/* ---- --gpu -------------------------------------------------------------- */

typedef struct gpu_point {
    double msgs_per_s, wire_bytes_per_s, store_bytes_per_s;
    double busy; /* the aggregators' busy fraction of the launches' time */
} gpu_point_t;

/* One launch of `k` over `global` work-items, then quiet: seconds. */
static double timed_launch(grain_t *g, grain_kernel_t *k, size_t global)
{
    size_t wg = WIDTH;
    double t0 = bench_now();
    check(grain_launch(k, 1, &global, &wg), "launch");
    check(grain_barrier_all(g), "quiet");
    return bench_now() - t0;
}

/* The rows a message of the kernel fills. */
static uint32_t gpu_rows(const run_t *r)
{
    return grain_cmd_rows(r->inc ? GRAIN_CMD_INC64 : GRAIN_CMD_ADD64);
}

static gpu_point_t gpu_measure(const run_t *r)
{
    grain_config_t *c;
    char aggs[16];
    snprintf(aggs, sizeof aggs, "%u", r->aggregators);
    check(grain_config_create(&c), "config");
    check(grain_config_set(c, "aggregators", aggs), "config");
    bench_transport_set_pes(r->dests + 1);
    grain_t *g;
    check(grain_init_transport(c, NULL, &bench_transport_ops, &g), "grain_init");
    grain_config_destroy(c);
    int64_t *table;
    void *store_buf;
    grain_program_t *prog;
    grain_kernel_t *send, *store;
    check(grain_malloc(g, 64 * sizeof *table, (void **)&table), "grain_malloc");
    check(grain_program_create(g, queue_bench_source, NULL, &prog), "build");
    check(grain_kernel_create(prog, r->inc ? "bench_pipeline_inc" : "bench_pipeline", &send), "kernel");
    uint32_t per_wi = GPU_PER_WI, dests = r->dests, rows = gpu_rows(r);
    size_t global = (size_t)(r->messages / per_wi / WIDTH * WIDTH);
    global = global < WIDTH ? WIDTH : global;
    uint64_t messages = (uint64_t)global * per_wi;
    check(grain_kernel_set_arg_ptr(send, 1, table), "arg");
    check(grain_kernel_set_arg(send, 2, sizeof per_wi, &per_wi), "arg");
    check(grain_kernel_set_arg(send, 3, sizeof dests, &dests), "arg");
    timed_launch(g, send, WIDTH); /* code loading and first touches */
    double secs[3];
    carried_t before = carried_by(g);
    for (int i = 0; i < 3; i++)
        secs[i] = timed_launch(g, send, global);
    carried_t after = carried_by(g);
    if (after.msgs - before.msgs != 3 * messages) {
        fprintf(stderr, "aggregator_bench: %llu of %llu messages came out\n",
                (unsigned long long)(after.msgs - before.msgs), (unsigned long long)(3 * messages));
        exit(1);
    }
    double t = bench_median3(secs[0], secs[1], secs[2]);
    gpu_point_t pt = {(double)messages / t, (double)(after.bytes - before.bytes) / 3 / t, 0,
                      (after.busy_s - before.busy_s) / (r->aggregators * (secs[0] + secs[1] + secs[2]))};

    /* The ceiling: the queue's bytes stored into shared memory by a kernel. */
    uint64_t nslots = (64ull << 20) / (rows * 8 * WIDTH);
    check(grain_mem_alloc(g, nslots * rows * 8 * WIDTH, &store_buf), "grain_mem_alloc");
    check(grain_kernel_create(prog, "bench_store", &store), "kernel");
    check(grain_kernel_set_arg_ptr(store, 1, store_buf), "arg");
    check(grain_kernel_set_arg(store, 2, sizeof nslots, &nslots), "arg");
    check(grain_kernel_set_arg(store, 3, sizeof rows, &rows), "arg");
    check(grain_kernel_set_arg(store, 4, sizeof per_wi, &per_wi), "arg");
    timed_launch(g, store, WIDTH);
    t = bench_median3(timed_launch(g, store, global), timed_launch(g, store, global),
                      timed_launch(g, store, global));
    pt.store_bytes_per_s = (double)messages * rows * 8 / t;
    grain_kernel_destroy(store);
    grain_kernel_destroy(send);
    grain_program_destroy(prog);
    check(grain_mem_free(g, store_buf), "grain_mem_free");
    check(grain_free(g, table), "grain_free");
    check(grain_finalize(g), "grain_finalize");
    return pt;
}

static void gpu_sweep(run_t r, unsigned max_aggs, FILE *csv)
{
    fprintf(csv, "command,aggregators,dests,msgs_per_s,msgs_per_s_per_thread,busy_fraction,msgs_per_busy_thread_s,"
                 "queue_gb_per_s,wire_gb_per_s,store_gb_per_s,ratio\n");
    printf("%11s %6s %14s %14s %6s %14s %10s %10s %12s %7s\n", "aggregators", "dests", "msgs/s",
           "msgs/s/thread", "busy", "msgs/busy-s", "queue GB/s", "wire GB/s", "stores GB/s", "ratio");
    for (unsigned a = 1; a <= max_aggs; a = a * 2 > max_aggs && a < max_aggs ? max_aggs : a * 2) {
        r.aggregators = a;
        gpu_point_t p = gpu_measure(&r);
        double queue = p.msgs_per_s * gpu_rows(&r) * 8, per_thread = p.msgs_per_s / a;
        double per_busy = p.busy > 0 ? per_thread / p.busy : 0;
        printf("%11u %6u %14.0f %14.0f %5.0f%% %14.0f %10.2f %10.2f %12.2f %7.2f\n", a, r.dests, p.msgs_per_s,
               per_thread, 100 * p.busy, per_busy, queue / 1e9, p.wire_bytes_per_s / 1e9,
               p.store_bytes_per_s / 1e9, queue / p.store_bytes_per_s);
        fprintf(csv, "%s,%u,%u,%.0f,%.0f,%.4f,%.0f,%.3f,%.3f,%.3f,%.4f\n", r.inc ? "inc64" : "add64", a, r.dests,
                p.msgs_per_s, per_thread, p.busy, per_busy, queue / 1e9, p.wire_bytes_per_s / 1e9,
                p.store_bytes_per_s / 1e9, queue / p.store_bytes_per_s);
        fflush(stdout);
    }
}

typedef struct options {
    run_t run;
    unsigned max_aggs;
    const char *csv_path;
    int gpu;
} options_t;

enum { OPT_AGGREGATORS, OPT_PRODUCERS, OPT_DESTS, OPT_MESSAGES, OPT_CSV, OPT_GPU, OPT_INC, OPT_FAR };

static void take(void *state, int key, const char *option, const char *value)
{
    options_t *o = state;
    switch (key) {
    case OPT_AGGREGATORS: o->max_aggs = (unsigned)cli_u64_in(option, value, 1, 64); break;
    case OPT_PRODUCERS: o->run.producers = (unsigned)cli_u64_in(option, value, 1, 256); break;
    case OPT_DESTS: o->run.dests = (unsigned)cli_u64_in(option, value, 1, 4096); break;
    case OPT_MESSAGES: o->run.messages = cli_u64_in(option, value, WIDTH, ~0ull); break;
    case OPT_CSV: o->csv_path = value; break;
    case OPT_INC: o->run.inc = 1; break;
    case OPT_FAR: o->run.far = 1; break;
    default: o->gpu = 1;
    }
}

static void usage(FILE *out)
{
    fprintf(out, "usage: aggregator_bench [--aggregators A] [--producers P] [--dests D] [--messages N] "
                 "[--csv FILE] [--gpu] [--inc] [--far]\n"
                 "  the aggregator threads against a sink transport, fed by host threads (or by a kernel with\n"
                 "  --gpu), beside a bare reader of the same queue as the baseline\n");
}

int main(int argc, char **argv)
{
    static const cli_option_t options[] = {{"aggregators", 1, OPT_AGGREGATORS}, {"producers", 1, OPT_PRODUCERS},
                                           {"dests", 1, OPT_DESTS},             {"messages", 1, OPT_MESSAGES},
                                           {"csv", 1, OPT_CSV},                 {"gpu", 0, OPT_GPU},
                                           {"inc", 0, OPT_INC},                 {"far", 0, OPT_FAR}};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    options_t o = {{1, cpus > 2 ? (unsigned)(cpus / 2) : 1, 8, 0, 0, 0}, cpus > 2 ? (unsigned)(cpus / 2) : 1,
                   "aggregator_bench.csv", 0};
    const cli_group_t groups[] = {CLI_GROUP(options, take, &o)};
    cli_parse("aggregator_bench", argc, argv, groups, 1, 0, usage);
    run_t r = o.run;
    unsigned max_aggs = o.max_aggs;
    const char *csv_path = o.csv_path;
    int gpu = o.gpu;
    if (gpu && r.far) {
        fprintf(stderr, "aggregator_bench: --far is for host producers; a kernel's offsets are its own\n");
        return 2;
    }
    if (r.messages == 0)
        r.messages = gpu ? 1u << 26 : 1u << 24; /* a GPU needs more to reach its rate */
    FILE *csv = fopen(csv_path, "w");
    if (csv == NULL) {
        perror(csv_path);
        return 2;
    }
    if (gpu) {
        gpu_sweep(r, max_aggs, csv);
        fclose(csv);
        printf("wrote %s\n", csv_path);
        return 0;
    }
    fprintf(csv, "kind,aggregators,producers,dests,msgs_per_s_per_thread,reader_msgs_per_s_per_thread,ratio\n");
    printf("%11s %9s %6s %22s %22s %7s\n", "aggregators", "producers", "dests", "agg msgs/s/thread",
           "bare reader msgs/s/thr", "ratio");
    for (unsigned a = 1; a <= max_aggs; a *= 2) {
        r.aggregators = a;
        double agg = bench_median3(measure(&r, 0), measure(&r, 0), measure(&r, 0));
        double bare = bench_median3(measure(&r, 1), measure(&r, 1), measure(&r, 1));
        printf("%11u %9u %6u %22.0f %22.0f %7.2f\n", a, r.producers, r.dests, agg, bare, agg / bare);
        fprintf(csv, "%s%s,%u,%u,%u,%.0f,%.0f,%.4f\n", r.inc ? "inc64" : "add64", r.far ? ".far" : "", a,
                r.producers, r.dests, agg, bare, agg / bare);
        fflush(stdout);
    }
    fclose(csv);
    printf("wrote %s\n", csv_path);
    return 0;
}
