/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peer_copy: the copy between two GPUs that a message between their
 * endpoints cannot beat, for bench/ep_bench to be set beside (the window of
 * runtime/endpoints/ep_window.c, the endpoints of one rank).  One process,
 * no grain: each size is bounced from device A to device B and back with
 * cudaMemcpyPeerAsync, each copy waited for, and the half round trip gives
 * the latency and the bandwidth, as ep_bench measures a message.
 *
 *   peer_copy [--min-bytes B] [--max-bytes B] [--iters N] [--devices A,B] [--csv FILE]
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/cli/cli.h"

typedef struct options {
    cli_sweep_t sweep;
    int a, b;
    const char *csv;
} options_t;

enum { OPT_DEVICES, OPT_CSV };

static void take(void *state, int key, const char *option, const char *value)
{
    options_t *o = state;
    if (key == OPT_CSV)
        o->csv = value;
    else if (sscanf(value, "%d,%d", &o->a, &o->b) != 2 || o->a < 0 || o->b < 0 || o->a == o->b) {
        fprintf(stderr, "peer_copy: %s takes two different device numbers, as 0,1\n", option);
        exit(CLI_EXIT_USAGE);
    }
}

static void usage(FILE *out)
{
    fprintf(out, "usage: peer_copy [--min-bytes B] [--max-bytes B] [--iters N] [--devices A,B] [--csv FILE]\n"
                 "  cudaMemcpyPeerAsync from device A to B and back, each waited for, sizes from B doubling;\n"
                 "  the half round trip and its bandwidth (defaults 4 to 64M, 100 iterations, devices 0,1)\n");
}

static void check(cudaError_t err, const char *what)
{
    if (err == cudaSuccess)
        return;
    fprintf(stderr, "peer_copy: %s: %s\n", what, cudaGetErrorString(err));
    exit(1);
}

/* Peer access from `from` to `to`, where the devices have it: without it
 * the copies go through the host, which the report says. */
static int enable(int from, int to)
{
    int can = 0;
    check(cudaDeviceCanAccessPeer(&can, from, to), "cudaDeviceCanAccessPeer");
    if (!can)
        return 0;
    check(cudaSetDevice(from), "cudaSetDevice");
    cudaError_t err = cudaDeviceEnablePeerAccess(to, 0);
    if (err == cudaErrorPeerAccessAlreadyEnabled)
        cudaGetLastError();
    else
        check(err, "cudaDeviceEnablePeerAccess");
    return 1;
}

int main(int argc, char **argv)
{
    static const cli_option_t options[] = {{"devices", 1, OPT_DEVICES}, {"csv", 1, OPT_CSV}};
    options_t o = {{4, 64ull << 20, 100}, 0, 1, NULL};
    const cli_group_t groups[] = {cli_sweep_group(&o.sweep), CLI_GROUP(options, take, &o)};
    cli_parse("peer_copy", argc, argv, groups, 2, 0, usage);
    if (!cli_sweep_check("peer_copy", &o.sweep))
        return CLI_EXIT_USAGE;
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (o.a >= count || o.b >= count) {
        fprintf(stderr, "peer_copy: devices %d and %d asked for; this node shows %d\n", o.a, o.b, count);
        return 2;
    }
    int peer = enable(o.a, o.b) & enable(o.b, o.a);
    void *src = NULL, *dst = NULL;
    cudaStream_t s;
    check(cudaSetDevice(o.a), "cudaSetDevice");
    check(cudaMalloc(&src, o.sweep.max_bytes), "cudaMalloc");
    check(cudaStreamCreate(&s), "cudaStreamCreate");
    check(cudaSetDevice(o.b), "cudaSetDevice");
    check(cudaMalloc(&dst, o.sweep.max_bytes), "cudaMalloc");
    FILE *csv = o.csv != NULL ? fopen(o.csv, "w") : NULL;
    if (o.csv != NULL && csv == NULL) {
        fprintf(stderr, "peer_copy: cannot write %s\n", o.csv);
        return 1;
    }
    printf("peer_copy: devices %d and %d, %s\n", o.a, o.b, peer ? "peer access" : "no peer access (through the host)");
    if (csv != NULL)
        fprintf(csv, "bytes,iters,half_rtt_us,gb_per_s,peer_access\n");
    for (unsigned long long bytes = o.sweep.min_bytes; bytes <= o.sweep.max_bytes; bytes = bytes == 0 ? 1 : 2 * bytes) {
        double t0 = 0;
        for (unsigned long long i = 0; i < o.sweep.iters + 2; i++) { /* two bounces to warm up */
            if (i == 2)
                t0 = cli_now_s();
            check(cudaMemcpyPeerAsync(dst, o.b, src, o.a, bytes, s), "cudaMemcpyPeerAsync");
            check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
            check(cudaMemcpyPeerAsync(src, o.a, dst, o.b, bytes, s), "cudaMemcpyPeerAsync");
            check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        }
        double half_us = (cli_now_s() - t0) / (double)o.sweep.iters / 2 * 1e6;
        printf("peer_copy: %10llu bytes: half round trip %10.2f us, %8.3f GB/s\n", bytes, half_us,
               (double)bytes / half_us / 1e3);
        if (csv != NULL)
            fprintf(csv, "%llu,%llu,%.3f,%.4f,%d\n", bytes, o.sweep.iters, half_us, (double)bytes / half_us / 1e3, peer);
    }
    if (csv != NULL)
        fclose(csv);
    return 0;
}
