/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ranks of this rank's node, and the memory they map of each other's:
 * the direct path's heaps (runtime.c) and regions in peer memory
 * (region.c) share this one exchange.
 *
 * A node is the ranks of one host (its name and kernel boot id agree); with
 * GRAIN_NODE_RANKS=N also only ranks of the same block of N, so that one
 * host emulates several nodes and one job runs direct and transport paths
 * side by side.  Ranks the node groups together may still fail to map each
 * other (GPUs without peer access, processes in other IPC namespaces): then
 * those pairs use the transport, and the info log says why.
 */
#ifndef GRAIN_RUNTIME_NODE_H
#define GRAIN_RUNTIME_NODE_H

#include <stddef.h>

#include "grain/grain.h"

struct grain;

/* Collective: fills g->node_of (per rank, the lowest rank of its node) and
 * g->node_size. */
grain_status_t grain_node_discover(struct grain *g);

/* Whether `pe` is another rank of this rank's node. */
int grain_node_peer(const struct grain *g, int pe);

/* What grain_peer_map_all found, job-wide. */
typedef struct grain_peer_maps {
    void **maps;        /* per rank: its memory mapped here; NULL for this rank, other nodes, failures */
    unsigned mapped;    /* non-NULL entries of maps */
    int all_mapped;     /* every rank mapped every other rank of its node */
    int any_remote;     /* some rank mapped another device's memory (system-scope atomics) */
    char why[256];      /* the first mapping that failed here, or "" */
} grain_peer_maps_t;

/*
 * Collective: every rank offers the memory `handle` names (the backend's
 * alloc_peer; NULL: it offers none) to the other ranks of its node and maps
 * what they offer.  `ptr` is the offered memory itself, sealed (the
 * backend's seal_peer) once every rank has mapped it.  m->maps has room
 * for a pointer per rank.  Mapping failures are not errors: they leave
 * NULL and a reason in m->why.
 */
grain_status_t grain_peer_map_all(struct grain *g, const void *handle, void *ptr, grain_peer_maps_t *m);
/* Unmaps what grain_peer_map_all mapped. */
void grain_peer_unmap_all(struct grain *g, grain_peer_maps_t *m);

/* "1-3,5": the ranks r < n with in[r] set, as ranges ("none" for none). */
void grain_rank_ranges(const unsigned char *in, int n, char *out, size_t size);

#endif
