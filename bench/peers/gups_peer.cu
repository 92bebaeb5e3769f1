// SPDX-License-Identifier: BSD-3-Clause
/*
 * The device side of grain's GUPS peers: the same updates as
 * graphapps/gups (the HPCC stream, the same split over ranks, `per_wi` a
 * thread), each one device atomic straight into the owner's counter, with
 * no runtime between the kernel and the GPUs' links.  Built twice:
 *
 *   plain               (gups_ipc) every rank maps every other rank's
 *                       block by CUDA IPC and adds with atomicAdd through
 *                       the mapping: the node's hardware ceiling.
 *   -DGUPS_PEER_NVSHMEM (gups_nvshmem) the blocks live on NVSHMEM's
 *                       symmetric heap and each update is
 *                       nvshmem_uint64_atomic_add to the owner PE.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#ifdef GUPS_PEER_NVSHMEM
#include <nvshmem.h>
#include <nvshmemx.h>
#endif

#include "gups_peer.h"
#include "gups_stream.h"

#ifdef GUPS_PEER_NVSHMEM
const char gups_peer_name[] = "nvshmem";
#else
const char gups_peer_name[] = "ipc";
#endif

static int64_t *table;                  /* this rank's block */
static grain_u64 *m2;                   /* the stream's step table */
static unsigned long long **blocks; /* ipc: every rank's block, as this GPU reaches it */
#ifndef GUPS_PEER_NVSHMEM
static unsigned long long **peer_views; /* the host's copy of blocks, to unmap */
#endif
static int my_rank, n_ranks;
static cudaDeviceProp prop;

#define CUDA_OK(call)                                                                                         \
    do {                                                                                                      \
        cudaError_t e_ = (call);                                                                              \
        if (e_ != cudaSuccess) {                                                                              \
            snprintf(why, len, "%s: %s", #call, cudaGetErrorString(e_));                                      \
            return -1;                                                                                        \
        }                                                                                                     \
    } while (0)

__global__ void fill_m2(grain_u64 *m)
{
    gups_m2_table(m);
}

__global__ void updates(int64_t *mine, unsigned long long **all, const grain_u64 *m, grain_u64 first,
                        grain_u64 count, grain_u64 per_wi, grain_u64 local_entries, grain_u64 mask)
{
    grain_u64 begin = ((grain_u64)blockIdx.x * blockDim.x + threadIdx.x) * per_wi;
    if (begin >= count)
        return;
    grain_u64 n = count - begin < per_wi ? count - begin : per_wi;
    grain_u64 ran = gups_starts((grain_i64)(first + begin), m);
    for (grain_u64 i = 0; i < n; i++) {
        ran = gups_next(ran);
        grain_u64 index = ran & mask;
        int owner = (int)(index / local_entries);
#ifdef GUPS_PEER_NVSHMEM
        (void)all;
        nvshmem_uint64_atomic_add((uint64_t *)&mine[index % local_entries], 1, owner);
#else
        (void)mine;
        atomicAdd(&all[owner][index % local_entries], 1ull);
#endif
    }
}

/* This rank's place among the ranks of its node. */
static int node_rank(void)
{
    MPI_Comm node;
    int r;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &r);
    MPI_Comm_free(&node);
    return r;
}

#ifdef GUPS_PEER_NVSHMEM
/* NVSHMEM bootstrapped by a unique id that MPI broadcasts: no dependence
 * on which MPI its bootstrap plugins were built for. */
static int map_blocks(uint64_t local_entries, char *why, size_t len)
{
    size_t bytes = local_entries * sizeof *table;
    char heap[32];
    snprintf(heap, sizeof heap, "%zu", bytes + (64u << 20)); /* its own allocations beside the block */
    setenv("NVSHMEM_SYMMETRIC_SIZE", heap, 0);
    nvshmemx_uniqueid_t id;
    if (my_rank == 0 && nvshmemx_get_uniqueid(&id) != 0) {
        snprintf(why, len, "nvshmemx_get_uniqueid failed");
        return -1;
    }
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
#ifdef NVSHMEMX_INIT_ATTR_INITIALIZER
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
#else
    nvshmemx_init_attr_t attr;
    memset(&attr, 0, sizeof attr);
#endif
    nvshmemx_set_attr_uniqueid_args(my_rank, n_ranks, &id, &attr);
    int status = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
    if (status != 0) {
        snprintf(why, len, "nvshmemx_init_attr returned %d (NVSHMEM_DEBUG=INFO says why)", status);
        return -1;
    }
    if (nvshmem_my_pe() != my_rank || nvshmem_n_pes() != n_ranks) {
        snprintf(why, len, "NVSHMEM numbered PE %d of %d for rank %d of %d", nvshmem_my_pe(), nvshmem_n_pes(),
                 my_rank, n_ranks);
        return -1;
    }
    table = (int64_t *)nvshmem_malloc(bytes);
    if (table == NULL) {
        snprintf(why, len, "nvshmem_malloc of %zu bytes failed", bytes);
        return -1;
    }
    CUDA_OK(cudaMemset(table, 0, bytes));
    CUDA_OK(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    return 0;
}
#else
/* Every rank's block mapped here by CUDA IPC; this rank's own is its allocation. */
static int map_blocks(uint64_t local_entries, char *why, size_t len)
{
    size_t bytes = local_entries * sizeof *table;
    CUDA_OK(cudaMalloc((void **)&table, bytes));
    CUDA_OK(cudaMemset(table, 0, bytes));
    cudaIpcMemHandle_t mine, *all = (cudaIpcMemHandle_t *)calloc((size_t)n_ranks, sizeof *all);
    peer_views = (unsigned long long **)calloc((size_t)n_ranks, sizeof *peer_views);
    if (all == NULL || peer_views == NULL) {
        free(all);
        snprintf(why, len, "no host memory for %d handles", n_ranks);
        return -1;
    }
    CUDA_OK(cudaIpcGetMemHandle(&mine, table));
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
    for (int r = 0; r < n_ranks; r++) {
        if (r == my_rank) {
            peer_views[r] = (unsigned long long *)table;
            continue;
        }
        cudaError_t e = cudaIpcOpenMemHandle((void **)&peer_views[r], all[r], cudaIpcMemLazyEnablePeerAccess);
        if (e != cudaSuccess) {
            free(all);
            snprintf(why, len, "mapping rank %d's block: %s (CUDA IPC needs every rank on one node)", r,
                     cudaGetErrorString(e));
            return -1;
        }
    }
    free(all);
    CUDA_OK(cudaMalloc((void **)&blocks, (size_t)n_ranks * sizeof *blocks));
    CUDA_OK(cudaMemcpy(blocks, peer_views, (size_t)n_ranks * sizeof *blocks, cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize());
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
}
#endif

extern "C" int gups_peer_init(int me, int ranks, uint64_t local_entries, char *why, size_t len)
{
    my_rank = me;
    n_ranks = ranks;
    int devices;
    CUDA_OK(cudaGetDeviceCount(&devices));
    int device = node_rank() % devices;
    CUDA_OK(cudaSetDevice(device));
    CUDA_OK(cudaGetDeviceProperties(&prop, device));
    if (map_blocks(local_entries, why, len) != 0)
        return -1;
    CUDA_OK(cudaMalloc((void **)&m2, 64 * sizeof *m2));
    fill_m2<<<1, 1>>>(m2);
    CUDA_OK(cudaDeviceSynchronize());
    return 0;
}

extern "C" int gups_peer_update(uint64_t first, uint64_t count, uint64_t per_wi, uint64_t local_entries,
                                uint64_t mask, size_t global, size_t wg, char *why, size_t len)
{
    updates<<<(unsigned)(global / wg), (unsigned)wg>>>(table, blocks, m2, first, count, per_wi, local_entries,
                                                       mask);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
#ifdef GUPS_PEER_NVSHMEM
    nvshmem_barrier_all(); /* its quiet: every PE's atomics have landed */
#else
    MPI_Barrier(MPI_COMM_WORLD);
#endif
    return 0;
}

extern "C" int gups_peer_read(int64_t *host, uint64_t n, char *why, size_t len)
{
    CUDA_OK(cudaMemcpy(host, table, n * sizeof *host, cudaMemcpyDeviceToHost));
    return 0;
}

extern "C" const char *gups_peer_device(void)
{
    return prop.name;
}

extern "C" void gups_peer_finalize(void)
{
    cudaFree(m2);
#ifdef GUPS_PEER_NVSHMEM
    nvshmem_free(table);
    nvshmem_finalize();
#else
    MPI_Barrier(MPI_COMM_WORLD); /* nobody unmaps a block another rank still reads */
    for (int r = 0; r < n_ranks; r++)
        if (r != my_rank && peer_views[r] != NULL)
            cudaIpcCloseMemHandle(peer_views[r]);
    free(peer_views);
    cudaFree(blocks);
    cudaFree(table);
#endif
}
