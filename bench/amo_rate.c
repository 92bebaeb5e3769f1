/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * amo_rate: how many fetching atomics and gets a rank completes a second,
 * through the path GRAIN_PEER picks (the direct path between ranks of a
 * node, else requests and replies through the queue, the aggregators and
 * the transport), beside the same operations as plain atomics and loads on
 * the rank's own table, in the same run: the single-GPU ceiling.
 *
 *   mpirun -np N amo_rate [--groups G] [--lanes L] [--per-lane K]
 *                         [--log2-words W] [--csv FILE] [--json]
 *
 * Every rank runs one kernel of G work-groups of L work-items; each
 * work-item makes K calls on random words of other ranks' tables (its own
 * with one rank): "lane" rows have every work-item call, "work-group" rows
 * only the first of each work-group, so they time a work-group's round trip
 * rather than its lanes' rate.  Each figure is the median of three runs,
 * from launch to the kernel's end (each lane has its values by then).  The
 * fetch-adds check themselves: the tables' words add up to the calls made.
 * "get_nbi" rows get without waiting (grain_get64_nbi) and time the calls
 * with the work-group's quiet that completes them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/queue_baselines.h"
#include "runtime/grain_impl.h"
#include "tools/cli/cli.h"

extern const char amo_rate_source[];

static void check(grain_status_t st, const char *what)
{
    if (st != GRAIN_OK) {
        fprintf(stderr, "amo_rate: %s failed: %s (grain logged why)\n", what, grain_strerror(st));
        exit(2);
    }
}

typedef struct setup {
    grain_t *g;
    int64_t *table, *sums, *host; /* host: words of the table's size, zero */
    uint64_t words, per_lane;
    size_t groups, lanes;
} setup_t;

/* Seconds of one kernel on every rank at once, median of three; the table
 * is cleared before each. */
static double run_s(const setup_t *s, grain_kernel_t *k, uint32_t one_lane)
{
    double t[3];
    check(grain_kernel_set_arg_ptr(k, 1, s->table), "arg");
    check(grain_kernel_set_arg(k, 2, sizeof s->words, &s->words), "arg");
    check(grain_kernel_set_arg(k, 3, sizeof s->per_lane, &s->per_lane), "arg");
    check(grain_kernel_set_arg(k, 4, sizeof one_lane, &one_lane), "arg");
    check(grain_kernel_set_arg_ptr(k, 5, s->sums), "arg");
    for (int r = 0; r < 3; r++) {
        memset(s->host, 0, s->words * sizeof *s->host);
        check(grain_memcpy(s->g, s->table, s->host, s->words * sizeof *s->host), "clear the table");
        check(grain_barrier_all(s->g), "barrier");
        size_t global = s->groups * s->lanes, local = s->lanes;
        double t0 = bench_now();
        check(grain_launch(k, 1, &global, &local), "launch");
        check(grain_wait(s->g), "wait");
        t[r] = bench_now() - t0;
        check(grain_barrier_all(s->g), "barrier");
    }
    return bench_median3(t[0], t[1], t[2]);
}

/* The fetch-adds of every rank, counted in every rank's table. */
static uint64_t table_total(const setup_t *s)
{
    check(grain_memcpy(s->g, s->host, s->table, s->words * sizeof *s->host), "read the table");
    uint64_t total = 0;
    for (uint64_t i = 0; i < s->words; i++)
        total += (uint64_t)s->host[i];
    check(grain_allreduce(s->g, &total, 1, GRAIN_UINT64, GRAIN_SUM), "allreduce");
    return total;
}

typedef struct options {
    setup_t *s;
    const char *csv;
    int json;
} options_t;

enum { OPT_GROUPS, OPT_LANES, OPT_PER_LANE, OPT_LOG2_WORDS, OPT_CSV, OPT_JSON };

static void take(void *state, int key, const char *option, const char *value)
{
    options_t *o = state;
    switch (key) {
    case OPT_GROUPS: o->s->groups = cli_u64_in(option, value, 1, 1u << 20); break;
    case OPT_LANES: o->s->lanes = cli_u64_in(option, value, 1, 1024); break;
    case OPT_PER_LANE: o->s->per_lane = cli_u64_in(option, value, 1, 1u << 30); break;
    case OPT_LOG2_WORDS: o->s->words = 1ull << cli_u64_in(option, value, 0, 34); break;
    case OPT_CSV: o->csv = value; break;
    default: o->json = 1;
    }
}

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np N amo_rate [--groups G] [--lanes L] [--per-lane K] [--log2-words W] "
                 "[--csv FILE] [--json]\n"
                 "  fetching atomics and gets through grain, and plain device atomics as the baseline\n");
}

int main(int argc, char **argv)
{
    static const cli_option_t options[] = {{"groups", 1, OPT_GROUPS},         {"lanes", 1, OPT_LANES},
                                           {"per-lane", 1, OPT_PER_LANE},     {"log2-words", 1, OPT_LOG2_WORDS},
                                           {"csv", 1, OPT_CSV},               {"json", 0, OPT_JSON}};
    setup_t s = {.words = 1u << 20, .per_lane = 64, .groups = 0, .lanes = 0};
    options_t o = {&s, NULL, 0};
    const cli_group_t groups[] = {CLI_GROUP(options, take, &o)};
    cli_parse("amo_rate", argc, argv, groups, 1, 0, usage);
    const char *csv = o.csv;
    int json = o.json;
    check(grain_init(NULL, &s.g), "grain_init");
    grain_t *g = s.g;
    int me = grain_my_pe(g), n = grain_n_pes(g);
    /* Defaults: a CPU device's work-items run one after another, so fewer. */
    if (s.lanes == 0)
        s.lanes = g->binfo.cpu_device ? 64 : 256;
    if (s.groups == 0)
        s.groups = g->binfo.cpu_device ? 4 : 128;
    if (s.lanes > grain_wg_size_max(g)) {
        fprintf(stderr, "amo_rate: --lanes %zu is more than a work-group may have here (%zu)\n", s.lanes,
                grain_wg_size_max(g));
        grain_finalize(g);
        return 2;
    }
    if ((s.host = malloc(s.words * sizeof *s.host)) == NULL) {
        fprintf(stderr, "amo_rate: no memory for a host copy of the table\n");
        return 2;
    }
    check(grain_malloc(g, s.words * sizeof *s.table, (void **)&s.table), "grain_malloc");
    check(grain_mem_alloc(g, s.groups * s.lanes * sizeof *s.sums, (void **)&s.sums), "grain_mem_alloc");
    grain_program_t *prog;
    check(grain_program_create(g, amo_rate_source, NULL, &prog), "build");
    const char *path = n == 1 ? "self" : g->heap_peers.mapped > 0 ? "direct" : "transport";
    static const char *ops[3] = {"fetch_add", "get", "get_nbi"};
    static const char *kernels[3][2] = {
        {"rate_fetch_add", "rate_fetch_add_local"}, {"rate_get", "rate_get_local"}, {"rate_get_nbi", "rate_get_local"}};
    FILE *f = NULL;
    if (me == 0) {
        printf("amo_rate: %s, %d ranks, %s, %zu work-groups of %zu, %llu calls a caller, median of 3\n",
               grain_device_name(g), n, path, s.groups, s.lanes, (unsigned long long)s.per_lane);
        printf("%-10s %-10s %-10s %14s %16s %8s\n", "path", "op", "caller", "M calls/s/rank", "baseline M/s", "ratio");
        if (csv != NULL && (f = fopen(csv, "w")) == NULL) {
            fprintf(stderr, "amo_rate: cannot write %s\n", csv);
            return 2;
        }
        if (f != NULL)
            fprintf(f, "device,ranks,path,op,caller,calls_per_rank,seconds,mcalls_per_s,baseline_mcalls_per_s,ratio\n");
    }
    int bad = 0;
    for (int op = 0; op < 3; op++) {
        for (uint32_t one_lane = 0; one_lane < 2; one_lane++) {
            grain_kernel_t *k, *base;
            check(grain_kernel_create(prog, kernels[op][0], &k), "kernel");
            check(grain_kernel_create(prog, kernels[op][1], &base), "kernel");
            double sec = run_s(&s, k, one_lane);
            uint64_t calls = (uint64_t)s.groups * (one_lane ? 1 : s.lanes) * s.per_lane;
            uint64_t total = op == 0 ? table_total(&s) : calls * (uint64_t)n;
            if (total != calls * (uint64_t)n) {
                if (me == 0)
                    fprintf(stderr, "amo_rate: the tables add up to %llu fetch-adds, not %llu\n",
                            (unsigned long long)total, (unsigned long long)(calls * (uint64_t)n));
                bad = 1;
            }
            double base_sec = run_s(&s, base, one_lane);
            double rate = (double)calls / sec / 1e6, base_rate = (double)calls / base_sec / 1e6;
            const char *caller = one_lane ? "work-group" : "lane";
            if (me == 0) {
                printf("%-10s %-10s %-10s %14.4g %16.4g %8.3g\n", path, ops[op], caller, rate, base_rate,
                       rate / base_rate);
                if (f != NULL)
                    fprintf(f, "\"%s\",%d,%s,%s,%s,%llu,%.6g,%.6g,%.6g,%.6g\n", grain_device_name(g), n, path, ops[op],
                            caller, (unsigned long long)calls, sec, rate, base_rate, rate / base_rate);
                if (json)
                    printf("{\"device\":\"%s\",\"ranks\":%d,\"path\":\"%s\",\"op\":\"%s\",\"caller\":\"%s\","
                           "\"calls_per_rank\":%llu,\"seconds\":%.6g,\"mcalls_per_s\":%.6g,"
                           "\"baseline_mcalls_per_s\":%.6g,\"ratio\":%.6g}\n",
                           grain_device_name(g), n, path, ops[op], caller, (unsigned long long)calls, sec, rate,
                           base_rate, rate / base_rate);
            }
            grain_kernel_destroy(k);
            grain_kernel_destroy(base);
        }
    }
    if (f != NULL)
        fclose(f);
    grain_program_destroy(prog);
    check(grain_mem_free(g, s.sums), "grain_mem_free");
    check(grain_free(g, s.table), "grain_free");
    free(s.host);
    check(grain_finalize(g), "grain_finalize");
    return bad;
}
