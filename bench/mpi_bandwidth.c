/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_bandwidth: the wire under grain's MPI transport, measured as grain
 * uses it: every rank sends buffers of one size to every other rank and
 * receives theirs at the same time, with a window of receives posted and
 * sends in flight (grain keeps GRAIN_BUFFERS_PER_DEST buffers a
 * destination in flight).  It prints GB/s received per rank, the ceiling
 * for grain's applied wire bytes on the same ranks (bench/wire_share.py).
 *
 *   mpirun -np N mpi_bandwidth [--bytes B] [--window W] [--seconds S] [--json]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli/cli.h"

typedef struct options {
    unsigned long long bytes, window;
    double seconds;
    int json;
} options_t;

enum { OPT_BYTES, OPT_WINDOW, OPT_SECONDS, OPT_JSON };

static void take(void *state, int key, const char *option, const char *value)
{
    options_t *o = state;
    if (key == OPT_BYTES)
        o->bytes = cli_u64_in(option, value, 1, 1u << 30);
    else if (key == OPT_WINDOW)
        o->window = cli_u64_in(option, value, 1, 1024);
    else if (key == OPT_SECONDS)
        o->seconds = cli_real(option, value, 1e-3, 3600);
    else
        o->json = 1;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np N mpi_bandwidth [--bytes B] [--window W] [--seconds S] [--json]\n"
                 "  every rank sends B-byte buffers to every other rank, W in flight a peer, for S seconds\n");
}

int main(int argc, char **argv)
{
    static const cli_option_t options[] = {
        {"bytes", 1, OPT_BYTES}, {"window", 1, OPT_WINDOW}, {"seconds", 1, OPT_SECONDS}, {"json", 0, OPT_JSON}};
    options_t o = {65536, 3, 2.0, 0};
    const cli_group_t groups[] = {CLI_GROUP(options, take, &o)};
    cli_parse("mpi_bandwidth", argc, argv, groups, 1, 0, usage);
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    size_t bytes = (size_t)o.bytes;
    int window = (int)o.window, json = o.json;
    double seconds = o.seconds;
    if (n < 2) {
        if (me == 0)
            fprintf(stderr, "mpi_bandwidth: needs two ranks or more\n");
        MPI_Finalize();
        return 2;
    }
    int peers = n - 1, slots = peers * window;
    char *sbuf = malloc(bytes), *rbuf = malloc((size_t)slots * bytes);
    MPI_Request *req = malloc(2 * (size_t)slots * sizeof *req);
    if (sbuf == NULL || rbuf == NULL || req == NULL) {
        fprintf(stderr, "mpi_bandwidth: no memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(sbuf, me, bytes);
    /* Rounds of a full window to and from every peer, until every rank has
     * run `seconds` (decided together, so that all stop at one round). */
    long rounds = 0;
    double t0 = 0;
    for (int stop = 0, warm = 1; !stop;) {
        if (!warm && rounds == 0)
            t0 = MPI_Wtime();
        for (int p = 0, s = 0; p < n; p++) {
            if (p == me)
                continue;
            for (int w = 0; w < window; w++, s++) {
                MPI_Irecv(rbuf + (size_t)s * bytes, (int)bytes, MPI_BYTE, p, 0, MPI_COMM_WORLD, &req[s]);
                MPI_Isend(sbuf, (int)bytes, MPI_BYTE, p, 0, MPI_COMM_WORLD, &req[slots + s]);
            }
        }
        MPI_Waitall(2 * slots, req, MPI_STATUSES_IGNORE);
        if (warm) {
            warm = 0;
            continue;
        }
        rounds++;
        int done = MPI_Wtime() - t0 >= seconds;
        MPI_Allreduce(MPI_IN_PLACE, &done, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        stop = done;
    }
    double t = MPI_Wtime() - t0, gbs = (double)rounds * slots * (double)bytes / t / 1e9, min = gbs, sum = gbs;
    MPI_Allreduce(MPI_IN_PLACE, &min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) {
        if (json)
            printf("{\"ranks\":%d,\"bytes\":%zu,\"window\":%d,\"seconds\":%.3f,\"recv_gb_per_s_per_rank\":%.4f,"
                   "\"recv_gb_per_s_min\":%.4f}\n",
                   n, bytes, window, t, sum / n, min);
        else
            printf("mpi_bandwidth: %d ranks, %zu-byte messages, window %d a peer: %.3f GB/s received per rank "
                   "(slowest rank %.3f)\n",
                   n, bytes, window, sum / n, min);
    }
    free(sbuf);
    free(rbuf);
    free(req);
    MPI_Finalize();
    return 0;
}
