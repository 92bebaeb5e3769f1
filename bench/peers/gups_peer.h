/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What each GUPS peer's device side (gups_peer.cu, built once a peer) gives
 * the host driver they share (gups_peer.c).  Calls return 0, or -1 with a
 * sentence in `why`.  Collective over MPI_COMM_WORLD: init and finalize.
 */
#ifndef GRAIN_BENCH_GUPS_PEER_H
#define GRAIN_BENCH_GUPS_PEER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "ipc" or "nvshmem": the peer this build is. */
extern const char gups_peer_name[];

/* Picks this rank's GPU (its rank on the node, modulo the node's GPUs),
 * allocates its zeroed block of `local_entries` counters where every rank
 * can reach it, and the stream's step table. */
int gups_peer_init(int me, int ranks, uint64_t local_entries, char *why, size_t len);

/* Updates [first, first + count) of the stream, `per_wi` a thread on a grid
 * of `global` threads in blocks of `wg`; returns once every rank's updates
 * have landed. */
int gups_peer_update(uint64_t first, uint64_t count, uint64_t per_wi, uint64_t local_entries, uint64_t mask,
                     size_t global, size_t wg, char *why, size_t len);

/* Copies the first `n` counters of this rank's block to `host`. */
int gups_peer_read(int64_t *host, uint64_t n, char *why, size_t len);

/* The GPU's name. */
const char *gups_peer_device(void);

void gups_peer_finalize(void);

#ifdef __cplusplus
}
#endif

#endif
