/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Vertices over ranks, and the part of the graph a rank owns.
 *
 * block: vertex v belongs to rank v / ceil(n / ranks), in order.  hash: to
 * rank mix(v) % ranks, numbered on it in increasing v; the placement ignores
 * any locality the ids carry (and the skew of Kronecker hubs), at the price
 * of a table of n local indices on every rank.
 *
 * A rank keeps the out-edges of its own vertices in CSR form, each target
 * packed with its owner (APP_DEST) so that kernels address the owner's
 * symmetric arrays without knowing the scheme.
 */
#ifndef GRAIN_GRAPHAPPS_PARTITION_H
#define GRAIN_GRAPHAPPS_PARTITION_H

#include <stdint.h>

#include "graph.h"

#define APP_DEST_LOCAL_BITS 40
#define APP_DEST(pe, local) ((uint64_t)(pe) << APP_DEST_LOCAL_BITS | (uint64_t)(local))
#define APP_DEST_PE(d) ((uint32_t)((d) >> APP_DEST_LOCAL_BITS))
#define APP_DEST_INDEX(d) ((d) & ((1ull << APP_DEST_LOCAL_BITS) - 1))

typedef enum app_scheme { APP_PART_BLOCK, APP_PART_HASH } app_scheme_t;

typedef struct app_partition {
    app_scheme_t scheme;
    uint64_t n;
    unsigned ranks, rank;
    uint64_t chunk;       /* block: vertices per rank */
    uint64_t *local_of;   /* hash: every vertex's index on its owner */
    uint64_t local_n;     /* vertices this rank owns */
    uint64_t max_local_n; /* the most any rank owns: the length of symmetric arrays */
    uint64_t *global_of;  /* local index -> vertex */
} app_partition_t;

/* This rank's out-edges; weights are 1 for unweighted graphs. */
typedef struct app_local_graph {
    uint64_t *offsets; /* local_n + 1 */
    uint64_t *dest;    /* APP_DEST of each edge's target */
    uint64_t *target;  /* each edge's target vertex */
    double *weight;
    uint64_t edges;
} app_local_graph_t;

/* Parses "block" or "hash"; -1 for anything else. */
int app_scheme_parse(const char *name, app_scheme_t *scheme);
const char *app_scheme_name(app_scheme_t scheme);

int app_partition_init(app_partition_t *p, app_scheme_t scheme, uint64_t n, unsigned ranks, unsigned rank,
                       app_error_t *err);
void app_partition_free(app_partition_t *p);

static inline unsigned app_owner(const app_partition_t *p, uint64_t v);
static inline uint64_t app_local_index(const app_partition_t *p, uint64_t v);

/* The out-edges of this rank's vertices, from the whole edge list. */
int app_local_graph_build(const app_partition_t *p, const app_edges_t *e, app_local_graph_t *g, app_error_t *err);
void app_local_graph_free(app_local_graph_t *g);

/* ---- inline ---- */

static inline uint64_t app_mix64(uint64_t v)
{
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdull;
    v ^= v >> 33;
    v *= 0xc4ceb9fe1a85ec53ull;
    return v ^ (v >> 33);
}

static inline unsigned app_owner(const app_partition_t *p, uint64_t v)
{
    return p->scheme == APP_PART_BLOCK ? (unsigned)(v / p->chunk) : (unsigned)(app_mix64(v) % p->ranks);
}

static inline uint64_t app_local_index(const app_partition_t *p, uint64_t v)
{
    return p->scheme == APP_PART_BLOCK ? v % p->chunk : p->local_of[v];
}

#endif
