/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sync_latency: round trips between two ranks, one work-item each, through
 * the path GRAIN_PEER picks (the direct path between ranks of a node, else
 * the queue, the aggregators and the transport, whose flush timeout,
 * GRAIN_FLUSH_TIMEOUT_US, then bounds them from below):
 *
 *   put+wait   a put followed by grain_wait_until on each side
 *   fetch_add  one grain_atomic_fetch_add64 to the other rank's word after
 *              another, both ranks at once
 *
 *   mpirun -np 2 sync_latency [--iters N] [--csv FILE] [--json]
 *
 * The baselines, measured on rank 0 in the same run: the same put+wait
 * round trip between two work-groups of one kernel on its own device
 * through plain atomic stores (none on a CPU device, whose work-groups need
 * not run at once), and the same chain of plain atomic fetch-adds on its
 * own word.  Every figure is the median of three runs of N round trips
 * (default 1000).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/queue_baselines.h"
#include "runtime/grain_impl.h"
#include "tools/cli/cli.h"

extern const char sync_latency_source[];

static void check(grain_status_t st, const char *what)
{
    if (st != GRAIN_OK) {
        fprintf(stderr, "sync_latency: %s failed: %s (grain logged why)\n", what, grain_strerror(st));
        exit(2);
    }
}

/* Microseconds a round trip: one launch of `k` on one work-group of one
 * work-item per `groups`, every rank at once, to the end of quiet. */
static double round_trip_us(grain_t *g, grain_kernel_t *k, size_t groups, uint64_t iters, int64_t *flags)
{
    double t[3];
    int64_t zero[2] = {0, 0};
    for (int r = 0; r < 3; r++) {
        check(grain_memcpy(g, flags, zero, sizeof zero), "clear the flags");
        check(grain_barrier_all(g), "barrier");
        size_t global = groups, local = 1;
        double t0 = bench_now();
        check(grain_launch(k, 1, &global, &local), "launch");
        check(grain_wait(g), "wait");
        t[r] = bench_now() - t0;
        check(grain_barrier_all(g), "quiet");
    }
    return bench_median3(t[0], t[1], t[2]) / (double)iters * 1e6;
}

typedef struct options {
    unsigned long long iters;
    const char *csv;
    int json;
} options_t;

enum { OPT_ITERS, OPT_CSV, OPT_JSON };

static void take(void *state, int key, const char *option, const char *value)
{
    options_t *o = state;
    if (key == OPT_ITERS)
        o->iters = cli_u64_in(option, value, 1, ~0ull);
    else if (key == OPT_CSV)
        o->csv = value;
    else
        o->json = 1;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np 2 sync_latency [--iters N] [--csv FILE] [--json]\n"
                 "  round trips of a put and grain_wait_until between two ranks\n");
}

int main(int argc, char **argv)
{
    static const cli_option_t options[] = {{"iters", 1, OPT_ITERS}, {"csv", 1, OPT_CSV}, {"json", 0, OPT_JSON}};
    options_t o = {1000, NULL, 0};
    const cli_group_t groups[] = {CLI_GROUP(options, take, &o)};
    cli_parse("sync_latency", argc, argv, groups, 1, 0, usage);
    uint64_t iters = o.iters;
    const char *csv = o.csv;
    int json = o.json;
    grain_t *g;
    check(grain_init(NULL, &g), "grain_init");
    int me = grain_my_pe(g), n = grain_n_pes(g);
    if (n != 2) {
        if (me == 0)
            fprintf(stderr, "sync_latency: needs 2 ranks (mpirun -np 2), not %d\n", n);
        grain_finalize(g);
        return 2;
    }
    /* flags[0..1]: the put+wait flags; flags[2]: the word fetched from;
     * flags[3]: where a chain leaves its sum. */
    int64_t *flags;
    grain_program_t *prog;
    grain_kernel_t *ping, *local, *chain, *chain_local;
    check(grain_malloc(g, 4 * sizeof *flags, (void **)&flags), "grain_malloc");
    check(grain_program_create(g, sync_latency_source, NULL, &prog), "build");
    check(grain_kernel_create(prog, "pingpong", &ping), "kernel");
    check(grain_kernel_create(prog, "pingpong_local", &local), "kernel");
    check(grain_kernel_create(prog, "fetch_chain", &chain), "kernel");
    check(grain_kernel_create(prog, "fetch_chain_local", &chain_local), "kernel");
    int32_t peer = 1 - me, first = me == 0;
    check(grain_kernel_set_arg_ptr(ping, 1, flags), "arg");
    check(grain_kernel_set_arg(ping, 2, sizeof iters, &iters), "arg");
    check(grain_kernel_set_arg(ping, 3, sizeof peer, &peer), "arg");
    check(grain_kernel_set_arg(ping, 4, sizeof first, &first), "arg");
    check(grain_kernel_set_arg_ptr(local, 1, flags), "arg");
    check(grain_kernel_set_arg(local, 2, sizeof iters, &iters), "arg");
    check(grain_kernel_set_arg_ptr(chain, 1, &flags[2]), "arg");
    check(grain_kernel_set_arg(chain, 2, sizeof iters, &iters), "arg");
    check(grain_kernel_set_arg(chain, 3, sizeof peer, &peer), "arg");
    check(grain_kernel_set_arg_ptr(chain, 4, &flags[3]), "arg");
    check(grain_kernel_set_arg_ptr(chain_local, 1, &flags[2]), "arg");
    check(grain_kernel_set_arg(chain_local, 2, sizeof iters, &iters), "arg");
    check(grain_kernel_set_arg_ptr(chain_local, 3, &flags[3]), "arg");

    const char *path = g->heap_peers.mapped > 0 ? "direct" : "transport";
    /* The baselines on rank 0 alone: rank 1 launches nothing. */
    uint64_t none = 0;
    struct {
        const char *op;
        grain_kernel_t *k, *base;
        size_t base_groups;
        int baseline;
        double us, base_us;
    } rows[2] = {{"put+wait", ping, local, 2, !g->binfo.cpu_device, 0, 0},
                 {"fetch_add", chain, chain_local, 1, 1, 0, 0}};
    for (int r = 0; r < 2; r++) {
        rows[r].us = round_trip_us(g, rows[r].k, 1, iters, flags);
        if (!rows[r].baseline)
            continue;
        if (me == 1)
            check(grain_kernel_set_arg(rows[r].base, 2, sizeof none, &none), "arg");
        rows[r].base_us = round_trip_us(g, rows[r].base, rows[r].base_groups, iters, flags);
    }
    if (me == 0) {
        printf("sync_latency: %s, %s, %llu round trips, median of 3\n", grain_device_name(g), path,
               (unsigned long long)iters);
        printf("%-10s %-10s %14s %18s %8s\n", "path", "op", "us/round trip", "baseline us/trip", "ratio");
        FILE *f = csv != NULL ? fopen(csv, "w") : NULL;
        if (csv != NULL && f == NULL) {
            fprintf(stderr, "sync_latency: cannot write %s\n", csv);
            return 2;
        }
        if (f != NULL)
            fprintf(f, "device,path,op,iters,round_trip_us,baseline_round_trip_us,ratio\n");
        for (int r = 0; r < 2; r++) {
            char base[32] = "null", ratio[32] = "null";
            if (rows[r].baseline) {
                snprintf(base, sizeof base, "%.4f", rows[r].base_us);
                snprintf(ratio, sizeof ratio, "%.4f", rows[r].us / rows[r].base_us);
                printf("%-10s %-10s %14.3f %18.3f %8.2f\n", path, rows[r].op, rows[r].us, rows[r].base_us,
                       rows[r].us / rows[r].base_us);
            } else {
                printf("%-10s %-10s %14.3f %18s %8s   (no baseline on a CPU device)\n", path, rows[r].op,
                       rows[r].us, "-", "-");
            }
            if (f != NULL)
                fprintf(f, "\"%s\",%s,%s,%llu,%.4f,%s,%s\n", grain_device_name(g), path, rows[r].op,
                        (unsigned long long)iters, rows[r].us, rows[r].baseline ? base : "",
                        rows[r].baseline ? ratio : "");
            if (json)
                printf("{\"device\":\"%s\",\"path\":\"%s\",\"op\":\"%s\",\"iters\":%llu,"
                       "\"round_trip_us\":%.4f,\"baseline_round_trip_us\":%s,\"ratio\":%s}\n",
                       grain_device_name(g), path, rows[r].op, (unsigned long long)iters, rows[r].us, base, ratio);
        }
        if (f != NULL)
            fclose(f);
    }
    grain_kernel_destroy(ping);
    grain_kernel_destroy(local);
    grain_kernel_destroy(chain);
    grain_kernel_destroy(chain_local);
    grain_program_destroy(prog);
    check(grain_free(g, flags), "grain_free");
    check(grain_finalize(g), "grain_finalize");
    return 0;
}
