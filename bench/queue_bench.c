/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * queue_bench: grain's device-to-host queues against each other, against
 * plain kernel stores and against CPU-only queues, all measured in the same
 * run (Gravel, figures 6 and 8).
 *
 *   queue_bench [--sweep wg|size|all] [--messages N] [--bytes B]
 *               [--consumers C] [--rings R] [--msg-bytes B] [--queue-mib M]
 *               [--skip-payload] [--csv FILE]
 *
 * wg:   the whole send path (reservation, slot write, aggregator, apply) of
 *       24-byte increments, by work-group size, reservation mode and queue
 *       protocol, against the CPU-only MPMC queue (figure 6).
 * size: the queue alone, drained by C host threads, by message size from
 *       8 B to 4 KiB, with 256-lane work-groups (Gravel's four 64-lane
 *       wavefronts) reserving per work-group, per 32-lane sub-group and per
 *       work-item, in the paper's queue and in grain's ring queue (R rings;
 *       0: one per compute unit); beside them the same stores with no queue
 *       (the link's ceiling) and CPU-only SPSC and MPMC queues (figure 8);
 *       --msg-bytes B measures one size only; a point moves --bytes
 *       (1 GiB, in at most 8 N messages); the queues hold M MiB (64);
 *       --skip-payload has the consumers take and return slots without
 *       reading them (no checksum): the protocol's cost alone.
 * Every point is the median of three runs, checked by a checksum or by the
 * applied counts.  Prints one line per point with its ratio to the CPU MPMC
 * queue and to the paper's queue (work-group reservation) of the same size;
 * writes CSV.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/queue_baselines.h"
#include "grain/grain.h"
#include "runtime/grain_impl.h"
#include "tools/cli/cli.h"

extern const char queue_bench_source[];

#define SEND_ROWS 3 /* a grain message in the queue: header, offset, value */
#define SIZE_WG 256 /* Gravel, figure 8: work-groups of four 64-lane wavefronts */
#define SIZE_SG 32  /* an NVIDIA warp; on PoCL, fixed-width lane segments */

typedef struct opts {
    uint64_t messages;  /* per point of the wg sweep; 8x this is the most per point of the size sweep */
    uint64_t bytes;     /* payload per point of the size sweep */
    unsigned consumers; /* host threads draining the queue; also the CPU queues' producers */
    unsigned rings;     /* of the ring queue; 0: the runtime's default */
    unsigned msg_bytes; /* the size sweep's one message size; 0: 8 B to 4 KiB */
    unsigned queue_mib; /* payload the size sweep's queues hold */
    int skip_payload;   /* consumers take slots without reading them (no checksum) */
    FILE *csv;
} opts_t;

static const char *const modes[] = {"wg", "sg", "wi"};
#define N_MODES 3
static const char *const queues[] = {"paper", "ring"};
#define N_QUEUES 2

/* Work-item reservation is an order of magnitude slower: it gets fewer
 * messages, so that every point takes about as long. */
static uint64_t messages_for(const char *reserve, uint64_t messages)
{
    return strcmp(reserve, "wi") == 0 ? messages / 8 : messages;
}

static void check(grain_status_t st, const char *what)
{
    if (st != GRAIN_OK) {
        fprintf(stderr, "queue_bench: %s: %s\n", what, grain_error_message(NULL));
        exit(2);
    }
}

static double checked(double rate, const char *what)
{
    if (rate < 0) {
        fprintf(stderr, "queue_bench: %s lost or duplicated messages\n", what);
        exit(1);
    }
    return rate;
}

/* `paper`: the paper's queue with work-group reservation at this point's
 * size, or 0 before it is measured. */
static void report(const opts_t *o, const char *figure, const char *queue, const char *reserve,
                   size_t wg, uint32_t rows, double rate, double mpmc, double paper)
{
    double gbs = rate * rows * 8 / 1e9;
    double x_paper = paper > 0 ? rate / paper : 0;
    printf("%-6s %-9s %-7s %5zu %6u %14.0f %9.3f %8.2f %8.2f\n", figure, queue, reserve, wg, rows * 8,
           rate, gbs, rate / mpmc, x_paper);
    fprintf(o->csv, "%s,%s,%s,%zu,%u,%.0f,%.4f,%.4f,%.4f\n", figure, queue, reserve, wg, rows * 8,
            rate, gbs, rate / mpmc, x_paper);
    fflush(o->csv); /* a run stopped by a time limit keeps its points */
    fflush(stdout);
}

static void set_uint(grain_config_t *c, const char *name, unsigned value)
{
    char text[16];
    snprintf(text, sizeof text, "%u", value);
    check(grain_config_set(c, name, text), "config");
}

/* 0 leaves a number setting at its default. */
static grain_t *start_grain(const opts_t *o, const char *queue, const char *reserve,
                            unsigned device_threads, unsigned sg_width)
{
    grain_config_t *c;
    check(grain_config_create(&c), "config");
    check(grain_config_set(c, "transport", "self"), "config");
    /* Messages to the own rank cross the queue, as in Gravel. */
    check(grain_config_set(c, "apply", "host"), "config");
    check(grain_config_set(c, "queue", queue), "config");
    check(grain_config_set(c, "reserve", reserve), "config");
    if (o->rings > 0)
        set_uint(c, "queue_rings", o->rings);
    if (device_threads > 0)
        set_uint(c, "cpu_device_threads", device_threads);
    if (sg_width > 0)
        set_uint(c, "subgroup_width", sg_width);
    grain_t *g;
    check(grain_init(c, &g), "grain_init");
    grain_config_destroy(c);
    return g;
}

/* ---- figure 6: the send path by work-group size ------------------------- */

static double send_path_rate(const opts_t *o, const char *queue, const char *reserve, size_t wg,
                             uint64_t messages)
{
    grain_t *g = start_grain(o, queue, reserve, 0, 0);
    int64_t *counters;
    check(grain_malloc(g, 64 * sizeof *counters, (void **)&counters), "grain_malloc");
    grain_program_t *prog;
    grain_kernel_t *k;
    check(grain_program_create(g, queue_bench_source, NULL, &prog), "build");
    check(grain_kernel_create(prog, "bench_send", &k), "kernel");
    uint32_t per_wi = 64;
    size_t global = (size_t)((messages / per_wi + wg - 1) / wg * wg);
    check(grain_kernel_set_arg_ptr(k, 1, counters), "arg");
    check(grain_kernel_set_arg(k, 2, sizeof per_wi, &per_wi), "arg");
    /* A first small launch warms up; the second is measured. */
    size_t warm = wg;
    check(grain_launch(k, 1, &warm, &wg), "launch");
    check(grain_barrier_all(g), "quiet");
    double t0 = bench_now();
    check(grain_launch(k, 1, &global, &wg), "launch");
    check(grain_barrier_all(g), "quiet");
    double rate = (double)(global * per_wi) / (bench_now() - t0);
    int64_t total = 0;
    for (int i = 0; i < 64; i++)
        total += counters[i];
    if (total != (int64_t)((global + warm) * per_wi))
        rate = -1;
    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    check(grain_finalize(g), "finalize");
    return rate;
}

static void sweep_wg(const opts_t *o)
{
    unsigned c = o->consumers;
    double cpu = bench_median3(bench_cpu_mpmc_rate(SEND_ROWS, o->messages, c, c),
                         bench_cpu_mpmc_rate(SEND_ROWS, o->messages, c, c),
                         bench_cpu_mpmc_rate(SEND_ROWS, o->messages, c, c));
    report(o, "fig6", "cpu-mpmc", "-", 1, SEND_ROWS, checked(cpu, "the CPU MPMC queue"), cpu, 0);
    static const size_t sizes[] = {8, 16, 32, 64, 128, 256};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        double paper = 0;
        for (int q = 0; q < N_QUEUES; q++) {
            for (int m = 0; m < N_MODES; m++) {
                uint64_t n = messages_for(modes[m], o->messages);
                double r = bench_median3(send_path_rate(o, queues[q], modes[m], sizes[s], n),
                                   send_path_rate(o, queues[q], modes[m], sizes[s], n),
                                   send_path_rate(o, queues[q], modes[m], sizes[s], n));
                report(o, "fig6", queues[q], modes[m], sizes[s], SEND_ROWS, checked(r, "the send path"),
                       cpu, paper);
                if (q == 0 && m == 0)
                    paper = r;
            }
        }
    }
}

/* ---- figure 8: the queue alone by message size -------------------------- */

#define SIZE_PER_WI 16u

/* Messages per slot under each reservation mode, and so the queue's width. */
static uint32_t slot_width(const char *reserve)
{
    return strcmp(reserve, "wg") == 0 ? SIZE_WG : strcmp(reserve, "sg") == 0 ? SIZE_SG : 1;
}

static size_t size_global(uint64_t messages)
{
    return (size_t)((messages / SIZE_PER_WI + SIZE_WG - 1) / SIZE_WG * SIZE_WG);
}

/* Queue rate: the kernel writes `messages` through a fresh queue of grain's
 * configured protocol while `consumers` host threads drain it. */
static double queue_rate(const opts_t *o, grain_t *g, grain_kernel_t *k, uint32_t width, uint32_t rows,
                         uint64_t messages)
{
    unsigned consumers = o->consumers;
    uint32_t per_wi = SIZE_PER_WI;
    size_t wg = SIZE_WG, global = size_global(messages);
    messages = (uint64_t)global * per_wi;
    grain_queue_geom_t geom = grain_queue_geom_of(g, 1, width, rows);
    uint64_t nslots = ((uint64_t)o->queue_mib << 20) / geom.slot_stride / geom.nrings;
    geom = grain_queue_geom_of(g, (uint32_t)(nslots < 8 ? 8 : nslots > 65536 ? 65536 : nslots), width, rows);
    grain_queue_mem_t qm;
    check(grain_queue_create(g, geom, &qm), "queue");
    /* Kernels read the descriptor from device memory, as the runtime's. */
    void *desc;
    check(g->bops->alloc_device(g->backend, sizeof qm.desc, &desc), "device memory");
    check(g->bops->copy(g->backend, desc, &qm.desc, sizeof qm.desc), "copy");
    check(grain_kernel_set_arg_ptr(k, 1, desc), "arg");
    check(grain_kernel_set_arg(k, 2, sizeof per_wi, &per_wi), "arg");
    /* The consumers are running before the clock starts, as the runtime's
     * aggregators are: the point times the queue, not thread creation. */
    bench_drain_t drain;
    if (!bench_drain_start(&drain, qm.shared, messages, consumers, o->skip_payload))
        check(GRAIN_ERR_NO_MEMORY, "consumer threads");
    double t0 = bench_now();
    check(grain_launch(k, 1, &global, &wg), "launch");
    check(grain_wait(g), "wait");
    uint64_t sum = bench_drain_join(&drain);
    double rate = (double)messages / (bench_now() - t0);
    if (!o->skip_payload && sum != bench_expected_sum(messages, rows))
        rate = -1;
    g->bops->free_device(g->backend, desc);
    grain_queue_destroy(g, &qm);
    return rate;
}

/* The ceiling: the kernel's stores alone, into the memory the queue uses. */
static double store_rate(const opts_t *o, grain_t *g, grain_kernel_t *k, uint32_t rows, uint64_t messages)
{
    uint32_t per_wi = SIZE_PER_WI;
    size_t wg = SIZE_WG, global = size_global(messages);
    messages = (uint64_t)global * per_wi;
    uint64_t nslots = ((uint64_t)o->queue_mib << 20) / ((uint64_t)rows * 8 * SIZE_WG);
    nslots = nslots < 1 ? 1 : nslots;
    void *buf;
    check(grain_mem_alloc(g, nslots * rows * 8 * SIZE_WG, &buf), "grain_mem_alloc");
    check(grain_kernel_set_arg_ptr(k, 1, buf), "arg");
    check(grain_kernel_set_arg(k, 2, sizeof nslots, &nslots), "arg");
    check(grain_kernel_set_arg(k, 3, sizeof rows, &rows), "arg");
    check(grain_kernel_set_arg(k, 4, sizeof per_wi, &per_wi), "arg");
    double t0 = bench_now();
    check(grain_launch(k, 1, &global, &wg), "launch");
    check(grain_wait(g), "wait");
    double rate = (double)messages / (bench_now() - t0);
    check(grain_mem_free(g, buf), "grain_mem_free");
    return rate;
}

static void sweep_size(const opts_t *o)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned c = o->consumers;
    /* On a CPU device the kernel gets the cores the consumers leave. */
    unsigned device_threads = cpus > (long)c ? (unsigned)(cpus - c) : 1;
    for (uint32_t rows = 1; rows <= 512; rows *= 2) {
        if (o->msg_bytes != 0 && o->msg_bytes != rows * 8)
            continue;
        uint64_t n = o->bytes / (rows * 8);
        n = n > 8 * o->messages ? 8 * o->messages : n;
        /* The CPU queues have no thread start or launch in their time, and
         * one message per slot: fewer messages measure them as well. */
        uint64_t cn = n > o->messages ? o->messages : n;
        double mpmc = bench_median3(bench_cpu_mpmc_rate(rows, cn, c, c), bench_cpu_mpmc_rate(rows, cn, c, c),
                              bench_cpu_mpmc_rate(rows, cn, c, c));
        report(o, "fig8", "cpu-mpmc", "-", 1, rows, checked(mpmc, "the CPU MPMC queue"), mpmc, 0);
        double spsc = bench_median3(bench_cpu_spsc_rate(rows, cn), bench_cpu_spsc_rate(rows, cn),
                              bench_cpu_spsc_rate(rows, cn));
        report(o, "fig8", "cpu-spsc", "-", 1, rows, checked(spsc, "the CPU SPSC queue"), mpmc, 0);
        double paper = 0;
        for (int q = 0; q < N_QUEUES; q++) {
            for (int m = 0; m < N_MODES; m++) {
                const char *reserve = modes[m];
                /* One runtime per point: protocol and reservation are
                 * compiled into the kernel. */
                grain_t *g = start_grain(o, queues[q], reserve, device_threads, SIZE_SG);
                grain_program_t *prog;
                grain_kernel_t *k;
                check(grain_program_create(g, queue_bench_source, NULL, &prog), "build");
                if (q == 0 && m == 0) {
                    check(grain_kernel_create(prog, "bench_store", &k), "kernel");
                    store_rate(o, g, k, rows, SIZE_WG * SIZE_PER_WI);
                    double r = bench_median3(store_rate(o, g, k, rows, n), store_rate(o, g, k, rows, n),
                                       store_rate(o, g, k, rows, n));
                    grain_kernel_destroy(k);
                    report(o, "fig8", "store", "-", SIZE_WG, rows, r, mpmc, 0);
                }
                check(grain_kernel_create(prog, "bench_queue", &k), "kernel");
                uint32_t width = slot_width(reserve);
                uint64_t nm = messages_for(reserve, n);
                checked(queue_rate(o, g, k, width, rows, SIZE_WG * SIZE_PER_WI), "warm-up");
                double r = bench_median3(queue_rate(o, g, k, width, rows, nm), queue_rate(o, g, k, width, rows, nm),
                                   queue_rate(o, g, k, width, rows, nm));
                report(o, "fig8", queues[q], reserve, SIZE_WG, rows, checked(r, "grain's queue"), mpmc,
                       paper);
                if (q == 0 && m == 0)
                    paper = r;
                grain_kernel_destroy(k);
                grain_program_destroy(prog);
                check(grain_finalize(g), "finalize");
            }
        }
    }
}

typedef struct options {
    opts_t *o;
    const char *sweep, *csv_path;
} options_t;

enum { OPT_SWEEP, OPT_CSV, OPT_MESSAGES, OPT_BYTES, OPT_CONSUMERS, OPT_RINGS, OPT_MSG_BYTES, OPT_QUEUE_MIB,
       OPT_SKIP_PAYLOAD };

static void take(void *state, int key, const char *option, const char *value)
{
    options_t *p = state;
    opts_t *o = p->o;
    switch (key) {
    case OPT_SWEEP:
        if (strcmp(value, "wg") != 0 && strcmp(value, "size") != 0 && strcmp(value, "all") != 0) {
            fprintf(stderr, "%s: \"%s\" is none of wg, size and all\n", option, value);
            exit(CLI_EXIT_USAGE);
        }
        p->sweep = value;
        break;
    case OPT_CSV: p->csv_path = value; break;
    case OPT_MESSAGES: o->messages = cli_u64_in(option, value, 1, ~0ull); break;
    case OPT_BYTES: o->bytes = cli_u64_in(option, value, 1, ~0ull); break;
    case OPT_CONSUMERS: o->consumers = (unsigned)cli_u64_in(option, value, 1, BENCH_MAX_THREADS); break;
    case OPT_RINGS: o->rings = (unsigned)cli_u64_in(option, value, 1, 65536); break;
    case OPT_MSG_BYTES:
        o->msg_bytes = (unsigned)cli_u64_in(option, value, 8, 4096);
        if (o->msg_bytes % 8 != 0) {
            fprintf(stderr, "%s: %s is not a multiple of 8\n", option, value);
            exit(CLI_EXIT_USAGE);
        }
        break;
    case OPT_QUEUE_MIB: o->queue_mib = (unsigned)cli_u64_in(option, value, 1, 16384); break;
    default: o->skip_payload = 1;
    }
}

static void usage(FILE *out)
{
    fprintf(out, "usage: queue_bench [--sweep wg|size|all] [--messages N] [--bytes B] [--consumers C] [--rings R]\n"
                 "                   [--msg-bytes 8..4096] [--queue-mib M] [--skip-payload] [--csv FILE]\n"
                 "  the device-to-host queue's rate against a CPU queue and Gravel's as baselines\n");
}

int main(int argc, char **argv)
{
    static const cli_option_t options[] = {
        {"sweep", 1, OPT_SWEEP},         {"csv", 1, OPT_CSV},           {"messages", 1, OPT_MESSAGES},
        {"bytes", 1, OPT_BYTES},         {"consumers", 1, OPT_CONSUMERS}, {"rings", 1, OPT_RINGS},
        {"msg-bytes", 1, OPT_MSG_BYTES}, {"queue-mib", 1, OPT_QUEUE_MIB}, {"skip-payload", 0, OPT_SKIP_PAYLOAD}};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    opts_t o = {1u << 22, 1u << 30, cpus > 3 ? (unsigned)(cpus / 2) : 1, 0, 0, 64, 0, NULL};
    options_t p = {&o, "all", "queue_bench.csv"};
    const cli_group_t groups[] = {CLI_GROUP(options, take, &p)};
    cli_parse("queue_bench", argc, argv, groups, 1, 0, usage);
    const char *sweep = p.sweep, *csv_path = p.csv_path;
    int wg = strcmp(sweep, "wg") == 0 || strcmp(sweep, "all") == 0;
    int size = strcmp(sweep, "size") == 0 || strcmp(sweep, "all") == 0;
    o.csv = fopen(csv_path, "w");
    if (o.csv == NULL) {
        perror(csv_path);
        return 2;
    }
    fprintf(o.csv, "figure,queue,reserve,wg_size,msg_bytes,msgs_per_s,gb_per_s,ratio_to_cpu_mpmc,"
                   "ratio_to_paper\n");
    printf("%-6s %-9s %-7s %5s %6s %14s %9s %8s %8s\n", "figure", "queue", "reserve", "wg", "bytes",
           "msgs/s", "GB/s", "x mpmc", "x paper");
    if (wg)
        sweep_wg(&o);
    if (size)
        sweep_size(&o);
    fclose(o.csv);
    printf("wrote %s\n", csv_path);
    return 0;
}
