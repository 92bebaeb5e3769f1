/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gups: distributed GUPS (HPCC RandomAccess) with grain increments.
 *
 * The table of 2^log2-table 64-bit counters is split in blocks over the
 * ranks; every update of the HPCC stream increments table[value & (size-1)]
 * at its owner (increments instead of HPCC's XOR, as in Gravel).  --verify
 * replays the whole stream on the host and requires every counter to match.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/app.h"
#include "../common/model.h"
#include "grain/grain.h"
#include "gups_host.h"

extern const char gups_kernel_source[];

typedef struct gups_options {
    unsigned log2_table;
    unsigned long long updates; /* 0: 4 x table size, as HPCC */
    unsigned long long per_wi;
    unsigned long long wg_size;
    int baseline;
    app_model_options_t model;
    app_common_t common;
} gups_options_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gups [--log2-table N] [--updates N] [--per-wi N] [--wg-size N] [--verify] [--json]\n"
            "  --log2-table N  table of 2^N 64-bit counters over all ranks (default 20)\n"
            "  --updates N     updates over all ranks (default 4 x table size)\n"
            "  --per-wi N      updates per work-item (default 64)\n"
            "  --wg-size N     work-group size (default: queue width, at most 256)\n"
            "  --verify        replay the stream on the host and require an exact match\n"
            "  --baseline      (one rank) also run the updates as plain device atomics, no grain,\n"
            "                  and report grain's rate as a ratio of that\n"
            "  --json          print one JSON object with the result and statistics\n");
    app_model_usage(out);
    app_config_usage(out);
}

enum { GUPS_BASELINE, GUPS_LOG2_TABLE, GUPS_UPDATES, GUPS_PER_WI, GUPS_WG_SIZE };

static void take(void *state, int key, const char *option, const char *value)
{
    gups_options_t *o = state;
    if (key == GUPS_BASELINE)
        o->baseline = 1;
    else if (key == GUPS_LOG2_TABLE)
        o->log2_table = (unsigned)cli_u64(option, value);
    else if (key == GUPS_UPDATES)
        o->updates = cli_u64(option, value);
    else if (key == GUPS_PER_WI)
        o->per_wi = cli_u64(option, value);
    else
        o->wg_size = cli_u64(option, value);
}

static grain_config_t *parse(int argc, char **argv, gups_options_t *o)
{
    static const cli_option_t options[] = {{"baseline", 0, GUPS_BASELINE},
                                           {"log2-table", 1, GUPS_LOG2_TABLE},
                                           {"updates", 1, GUPS_UPDATES},
                                           {"per-wi", 1, GUPS_PER_WI},
                                           {"wg-size", 1, GUPS_WG_SIZE}};
    grain_config_t *config = app_config();
    *o = (gups_options_t){.log2_table = 20, .per_wi = 64};
    const cli_group_t groups[] = {CLI_GROUP(options, take, o), app_model_group(&o->model)};
    app_parse_options("gups", argc, argv, groups, 2, &o->common, config, usage);
    if (o->common.out != NULL) {
        fprintf(stderr, "gups: --out: gups writes no values (--verify checks them)\n");
        exit(APP_EXIT_ERROR);
    }
    if (o->log2_table < 1 || o->log2_table > 40 || o->per_wi == 0) {
        fprintf(stderr, "gups: --log2-table must be 1 to 40 and --per-wi at least 1\n");
        exit(APP_EXIT_ERROR);
    }
    if (o->updates == 0)
        o->updates = 4ull << o->log2_table;
    app_model_configure("gups", &o->model, config);
    return config;
}

/* The kernel `name` of the program, with the run's arguments set. */
static grain_kernel_t *gups_kernel(grain_program_t *prog, const char *name, int64_t *table, uint64_t *m2,
                                   const uint64_t args[5])
{
    grain_kernel_t *k;
    app_check(grain_kernel_create(prog, name, &k), "creating the gups kernels");
    app_kernel_ptrs(k, 1, 2, (void *const[]){table, m2});
    for (unsigned i = 0; i < 5; i++)
        app_check(grain_kernel_set_arg(k, 3 + i, sizeof args[i], &args[i]), "setting kernel arguments");
    return k;
}

/* The coprocessor model (Gravel, figure 4a): chunks of the rank's updates
 * small enough that all of them fit one per-node queue, each launched, then
 * shipped by the host.  Every rank runs as many chunks as the largest share
 * needs, since the exchange is collective. */
static void coprocessor_chunks(grain_t *g, grain_kernel_t *k, app_coprocessor_t *c, int64_t *table,
                               const uint64_t args[5], uint64_t max_count, size_t wg)
{
    uint64_t first = args[0], count = args[1], per_wi = args[2], chunk = c->capacity;
    size_t global = app_grid((chunk + per_wi - 1) / per_wi, wg);
    for (uint64_t at = 0; at < max_count; at += chunk) {
        uint64_t from = first + at, n = at >= count ? 0 : count - at < chunk ? count - at : chunk;
        app_check(grain_kernel_set_arg(k, 3, sizeof from, &from), "setting kernel arguments");
        app_check(grain_kernel_set_arg(k, 4, sizeof n, &n), "setting kernel arguments");
        app_check(grain_launch(k, 1, &global, &wg), "launching gups");
        app_coprocessor_exchange(g, c, table);
    }
}

/* From launch until every update is applied, on the slowest rank; `c` for
 * the coprocessor model, else NULL. */
static app_timing_t timed_run(grain_t *g, grain_kernel_t *k, size_t global, size_t wg, app_coprocessor_t *c,
                              int64_t *table, const uint64_t args[5], uint64_t max_count)
{
    app_check(grain_barrier_all(g), "the barrier before the run");
    app_clock_t clock;
    app_clock_start(g, &clock);
    if (c != NULL)
        coprocessor_chunks(g, k, c, table, args, max_count, wg);
    else
        app_check(grain_launch(k, 1, &global, &wg), "launching gups");
    app_check(grain_barrier_all(g), "grain_barrier_all after gups");
    return app_clock_stop(g, &clock);
}

/* Collective: whether every rank's block matches the replayed stream. */
static int verified_everywhere(grain_t *g, const int64_t *table, const gups_options_t *o, const gups_split_t *s)
{
    /* The heap may be device memory that only grain_memcpy reads. */
    int64_t *host = app_malloc(s->owned * sizeof *host), *expect = app_malloc(s->owned * sizeof *expect);
    app_check(grain_memcpy(g, host, table, s->owned * sizeof *host), "reading the table");
    gups_replay(expect, o->updates, s->mask, s->lo, s->owned);
    uint64_t total = gups_mismatches(host, expect, s->owned);
    free(host);
    free(expect);
    app_check(grain_allreduce(g, &total, 1, GRAIN_UINT64, GRAIN_SUM), "reducing the verification");
    if (grain_my_pe(g) == 0 && !o->common.json)
        printf("verification: %s (%llu of %llu counters differ)\n", total == 0 ? "passed" : "FAILED",
               (unsigned long long)total, (unsigned long long)s->size);
    return total == 0;
}

int main(int argc, char **argv)
{
    gups_options_t o;
    grain_t *g = app_init(parse(argc, argv, &o));
    int me = grain_my_pe(g), npes = grain_n_pes(g);
    app_model_check(g, "gups", &o.model);
    if (o.baseline && npes != 1) {
        if (me == 0)
            fprintf(stderr, "gups: --baseline compares against plain atomics on one device: run one rank\n");
        grain_finalize(g);
        return APP_EXIT_ERROR;
    }

    gups_split_t split = gups_split(o.log2_table, o.updates, me, npes);
    uint64_t local_entries = split.local_entries;

    int64_t *table;
    uint64_t *m2;
    app_check(grain_malloc(g, local_entries * sizeof *table, (void **)&table), "allocating the table");
    app_check(grain_mem_alloc(g, 64 * sizeof *m2, (void **)&m2), "allocating the stream table");
    uint64_t host_m2[64];
    gups_m2_table(host_m2);
    app_check(grain_memcpy(g, m2, host_m2, sizeof host_m2), "copying the stream table");

    grain_program_t *prog;
    app_check(grain_program_create(g, gups_kernel_source, NULL, &prog), "building the gups kernel");
    /* Every rank launches the same grid so that the loop is uniform. */
    size_t wg_max = grain_wg_size_max(g), wg = o.wg_size ? (size_t)o.wg_size : wg_max < 256 ? wg_max : 256;
    size_t global = gups_global_size(&split, o.per_wi, wg);
    uint64_t args[5] = {split.first, split.count, o.per_wi, local_entries, split.mask};
    char name[64];
    app_model_kernel_name(&o.model, "gups", name, sizeof name);
    grain_kernel_t *k = gups_kernel(prog, name, table, m2, args);
    app_coprocessor_t cp, *coproc = NULL;
    if (app_model_is_coprocessor(&o.model)) {
        coproc = &cp;
        app_coprocessor_init(g, prog, &o.model, coproc);
        app_coprocessor_args(coproc, k, 8);
    }
    app_timing_t timing = timed_run(g, k, global, wg, coproc, table, args, split.max_count);
    double slowest = timing.seconds;
    int verified = o.common.verify ? verified_everywhere(g, table, &o, &split) : -1;

    /* The baseline runs on a fresh table: the heap allocator gives the same
     * range back, zeroed. */
    double plain = 0;
    int plain_verified = -1;
    if (o.baseline) {
        app_check(grain_free(g, table), "freeing");
        app_check(grain_malloc(g, local_entries * sizeof *table, (void **)&table), "allocating the table");
        grain_kernel_t *pk = gups_kernel(prog, "gups_plain", table, m2, args);
        plain = timed_run(g, pk, global, wg, NULL, table, args, split.max_count).seconds;
        grain_kernel_destroy(pk);
        plain_verified = o.common.verify ? verified_everywhere(g, table, &o, &split) : -1;
    }

    double gups = (double)o.updates / slowest / 1e9;
    double plain_gups = o.baseline ? (double)o.updates / plain / 1e9 : 0;
    if (me == 0 && !o.common.json) {
        printf("gups: %d rank%s, table 2^%u, %llu updates in %.3f s: %.6f GUP/s (%s on %s, %s, model %s)\n",
               npes, app_plural(npes), o.log2_table, o.updates, slowest, gups, grain_backend_name(g),
               grain_device_name(g), grain_transport_name(g), app_model_names[o.model.model]);
        if (o.baseline)
            printf("baseline: plain device atomics, %.3f s: %.6f GUP/s; grain / plain = %.3f\n", plain,
                   plain_gups, gups / plain_gups);
    }
    FILE *out = app_json_begin(g, o.common.json, "gups");
    if (out != NULL) {
        fprintf(out, ",\"verified\":%s,", verified < 0 ? "null" : verified ? "true" : "false");
        app_timing_json(out, &timing);
        fprintf(out, ",\"gups\":%.6f,\"table_size\":%llu,\"updates\":%llu,\"wg_size\":%zu,\"per_wi\":%llu,"
                "\"model\":\"%s\"", gups, (unsigned long long)split.size, o.updates, wg, o.per_wi,
                app_model_names[o.model.model]);

        if (o.baseline)
            fprintf(out, ",\"baseline\":{\"verified\":%s,\"seconds\":%.6f,\"gups\":%.6f,\"ratio\":%.4f}",
                    plain_verified < 0 ? "null" : plain_verified ? "true" : "false", plain, plain_gups,
                    gups / plain_gups);
    }
    if (coproc != NULL)
        app_coprocessor_json(g, out, coproc);
    app_json_end(g, out);

    if (coproc != NULL)
        app_coprocessor_free(g, coproc);
    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    app_device_free(g, m2);
    app_check(grain_free(g, table), "freeing");
    return app_finish(g, APP_EXIT_OK, verified == 0 || plain_verified == 0 ? 0 : 1);
}
