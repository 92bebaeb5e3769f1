/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_coll: NCCL's broadcast and allreduce on GPU buffers, one rank a GPU,
 * for the endpoints' collectives that bench/ep_bench times on the same sizes
 * (GMH III-B5 against the vendor's library).  Each size from 4 bytes
 * doubling: a broadcast of its bytes from rank 0, then an allreduce (sum)
 * of them as doubles (at least one), each called once to warm up, then
 * `iters` times on one stream, each waited for, between MPI barriers; the
 * mean on rank 0.
 *
 *   mpirun -np N nccl_coll [--min-bytes B] [--max-bytes B] [--iters N] [--csv FILE]
 */
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/cli/cli.h"

typedef struct options {
    cli_sweep_t sweep;
    const char *csv;
} options_t;

enum { OPT_CSV };

static void take(void *state, int key, const char *option, const char *value)
{
    options_t *o = state;
    (void)key;
    (void)option;
    o->csv = value;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np N nccl_coll [--min-bytes B] [--max-bytes B] [--iters N] [--csv FILE]\n"
                 "  NCCL's broadcast and allreduce (doubles, sum) of each size from B doubling, one rank a GPU\n"
                 "  (defaults 4 to 64M, 100 iterations)\n");
}

static void fail(const char *what, const char *why)
{
    fprintf(stderr, "nccl_coll: %s: %s\n", what, why);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void cuda(cudaError_t err, const char *what)
{
    if (err != cudaSuccess)
        fail(what, cudaGetErrorString(err));
}

static void nccl(ncclResult_t err, const char *what)
{
    if (err != ncclSuccess)
        fail(what, ncclGetErrorString(err));
}

/* One collective of `bytes`: the mean of `iters` calls, each waited for. */
static double timed(int bcast, void *buf, size_t bytes, unsigned long long iters, ncclComm_t comm, cudaStream_t s)
{
    size_t doubles = bytes >= sizeof(double) ? bytes / sizeof(double) : 1;
    double t0 = 0;
    for (unsigned long long i = 0; i <= iters; i++) { /* the first warms up */
        if (i == 1) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = cli_now_s();
        }
        if (bcast)
            nccl(ncclBroadcast(buf, buf, bytes, ncclChar, 0, comm, s), "ncclBroadcast");
        else
            nccl(ncclAllReduce(buf, buf, doubles, ncclDouble, ncclSum, comm, s), "ncclAllReduce");
        cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return (cli_now_s() - t0) / (double)iters * 1e6;
}

int main(int argc, char **argv)
{
    static const cli_option_t options[] = {{"csv", 1, OPT_CSV}};
    options_t o = {{4, 64ull << 20, 100}, NULL};
    const cli_group_t groups[] = {cli_sweep_group(&o.sweep), CLI_GROUP(options, take, &o)};
    MPI_Init(&argc, &argv);
    cli_parse("nccl_coll", argc, argv, groups, 2, 0, usage);
    if (!cli_sweep_check("nccl_coll", &o.sweep))
        MPI_Abort(MPI_COMM_WORLD, CLI_EXIT_USAGE);
    int rank = 0, ranks = 1, devices = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    cuda(cudaSetDevice((local != NULL ? atoi(local) : rank) % devices), "cudaSetDevice");
    ncclUniqueId id;
    if (rank == 0)
        nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t comm;
    nccl(ncclCommInitRank(&comm, ranks, id, rank), "ncclCommInitRank");
    void *buf = NULL;
    cudaStream_t s;
    cuda(cudaMalloc(&buf, o.sweep.max_bytes > sizeof(double) ? o.sweep.max_bytes : sizeof(double)), "cudaMalloc");
    cuda(cudaMemset(buf, 0, o.sweep.max_bytes > sizeof(double) ? o.sweep.max_bytes : sizeof(double)), "cudaMemset");
    cuda(cudaStreamCreate(&s), "cudaStreamCreate");
    FILE *csv = rank == 0 && o.csv != NULL ? fopen(o.csv, "w") : NULL;
    if (rank == 0 && o.csv != NULL && csv == NULL)
        fail(o.csv, "cannot write it");
    if (csv != NULL)
        fprintf(csv, "gpus,bytes,iters,bcast_us,allreduce_us\n");
    for (unsigned long long bytes = o.sweep.min_bytes; bytes <= o.sweep.max_bytes; bytes = bytes == 0 ? 1 : 2 * bytes) {
        double bcast = timed(1, buf, bytes, o.sweep.iters, comm, s), allreduce = timed(0, buf, bytes, o.sweep.iters, comm, s);
        if (rank == 0)
            printf("nccl_coll: %d GPUs, %10llu bytes: broadcast %10.2f us, allreduce %10.2f us\n", ranks, bytes,
                   bcast, allreduce);
        if (csv != NULL)
            fprintf(csv, "%d,%llu,%llu,%.3f,%.3f\n", ranks, bytes, o.sweep.iters, bcast, allreduce);
    }
    if (csv != NULL)
        fclose(csv);
    ncclCommDestroy(comm);
    cudaFree(buf);
    MPI_Finalize();
    return 0;
}
