/*
 * sync_latency: the round trip of point-to-point synchronization between
 * two ranks, a put followed by grain_wait_until on each side, one work-item
 * each, through the path GRAIN_PEER picks (the direct path between ranks of
 * a node, else the queue, the aggregators and the transport, whose flush
 * timeout, GRAIN_FLUSH_TIMEOUT_US, then bounds it from below).
 *
 *   mpirun -np 2 sync_latency [--iters N] [--csv FILE] [--json]
 *
 * The baseline, measured on rank 0 in the same run, is the same round trip
 * between two work-groups of one kernel on its own device through plain
 * atomic stores: the device's own ceiling.  A CPU device gets none, since
 * its work-groups need not run at once.  Every figure is the median of
 * three runs of N round trips (default 1000).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/queue_baselines.h"
#include "runtime/grain_impl.h"

extern const char sync_latency_source[];

static void check(grain_status_t st, const char *what)
{
    if (st != GRAIN_OK) {
        fprintf(stderr, "sync_latency: %s: %s (%s)\n", what, grain_strerror(st), grain_error_message(NULL));
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
        check(grain_barrier(g), "barrier");
        size_t global = groups, local = 1;
        double t0 = bench_now();
        check(grain_launch(k, 1, &global, &local), "launch");
        check(grain_wait(g), "wait");
        t[r] = bench_now() - t0;
        check(grain_quiet(g), "quiet");
    }
    return bench_median3(t[0], t[1], t[2]) / (double)iters * 1e6;
}

int main(int argc, char **argv)
{
    uint64_t iters = 1000;
    const char *csv = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--iters") == 0)
            iters = strtoull(argv[++i], NULL, 10);
        else if (i + 1 < argc && strcmp(argv[i], "--csv") == 0)
            csv = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else {
            fprintf(stderr, "usage: mpirun -np 2 sync_latency [--iters N] [--csv FILE] [--json]\n");
            return 2;
        }
    }
    if (iters == 0) {
        fprintf(stderr, "sync_latency: --iters must be at least 1\n");
        return 2;
    }
    grain_t *g;
    check(grain_init(NULL, &g), "grain_init");
    int me = grain_my_pe(g), n = grain_n_pes(g);
    if (n != 2) {
        if (me == 0)
            fprintf(stderr, "sync_latency: needs 2 ranks (mpirun -np 2), not %d\n", n);
        grain_finalize(g);
        return 2;
    }
    int64_t *flags;
    grain_program_t *prog;
    grain_kernel_t *ping, *local;
    check(grain_malloc(g, 2 * sizeof *flags, (void **)&flags), "grain_malloc");
    check(grain_program_create(g, sync_latency_source, NULL, &prog), "build");
    check(grain_kernel_create(prog, "pingpong", &ping), "kernel");
    check(grain_kernel_create(prog, "pingpong_local", &local), "kernel");
    int32_t peer = 1 - me, first = me == 0;
    check(grain_kernel_set_arg_ptr(ping, 1, flags), "arg");
    check(grain_kernel_set_arg(ping, 2, sizeof iters, &iters), "arg");
    check(grain_kernel_set_arg(ping, 3, sizeof peer, &peer), "arg");
    check(grain_kernel_set_arg(ping, 4, sizeof first, &first), "arg");
    check(grain_kernel_set_arg_ptr(local, 1, flags), "arg");
    check(grain_kernel_set_arg(local, 2, sizeof iters, &iters), "arg");

    const char *path = g->heap_peers.mapped > 0 ? "direct" : "transport";
    double grain_us = round_trip_us(g, ping, 1, iters, flags);
    /* The baseline on rank 0 alone: rank 1 launches nothing. */
    int baseline = !g->binfo.cpu_device;
    double local_us = 0;
    if (baseline) {
        uint64_t none = 0;
        if (me == 1)
            check(grain_kernel_set_arg(local, 2, sizeof none, &none), "arg");
        local_us = round_trip_us(g, local, 2, iters, flags);
    }
    if (me == 0) {
        printf("sync_latency: %s, %s, %llu round trips, median of 3\n", grain_device_name(g), path,
               (unsigned long long)iters);
        printf("%-10s %14s %18s %8s\n", "path", "us/round trip", "baseline us/trip", "ratio");
        if (baseline)
            printf("%-10s %14.3f %18.3f %8.2f\n", path, grain_us, local_us, grain_us / local_us);
        else
            printf("%-10s %14.3f %18s %8s   (no baseline on a CPU device)\n", path, grain_us, "-", "-");
        if (csv != NULL) {
            FILE *f = fopen(csv, "w");
            if (f == NULL) {
                fprintf(stderr, "sync_latency: cannot write %s\n", csv);
                return 2;
            }
            fprintf(f, "device,path,iters,round_trip_us,baseline_round_trip_us,ratio\n");
            if (baseline)
                fprintf(f, "\"%s\",%s,%llu,%.4f,%.4f,%.4f\n", grain_device_name(g), path,
                        (unsigned long long)iters, grain_us, local_us, grain_us / local_us);
            else
                fprintf(f, "\"%s\",%s,%llu,%.4f,,\n", grain_device_name(g), path, (unsigned long long)iters,
                        grain_us);
            fclose(f);
        }
        if (json) {
            char base[32] = "null", ratio[32] = "null";
            if (baseline) {
                snprintf(base, sizeof base, "%.4f", local_us);
                snprintf(ratio, sizeof ratio, "%.4f", grain_us / local_us);
            }
            printf("{\"device\":\"%s\",\"path\":\"%s\",\"iters\":%llu,\"round_trip_us\":%.4f,"
                   "\"baseline_round_trip_us\":%s,\"ratio\":%s}\n",
                   grain_device_name(g), path, (unsigned long long)iters, grain_us, base, ratio);
        }
    }
    grain_kernel_destroy(ping);
    grain_kernel_destroy(local);
    grain_program_destroy(prog);
    check(grain_free(g, flags), "grain_free");
    check(grain_finalize(g), "grain_finalize");
    return 0;
}
