/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The binary graph cache's format: a header, then the edge array as it lies
 * in memory.  A cache lies on a disk that other programs and other machines
 * share, so a reader trusts nothing in it: app_cache_check verifies every
 * header field, every edge and a checksum of the payload before an id is
 * ever used as an index.
 */
#ifndef GRAIN_GRAPHAPPS_GRAPH_CACHE_H
#define GRAIN_GRAPHAPPS_GRAPH_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

#define APP_CACHE_MAGIC 0x3243475f4e494152ull /* "RAIN_GC2" */

typedef struct app_cache_header {
    uint64_t magic;
    uint64_t source_size, source_mtime_ns; /* the input it was parsed from */
    uint64_t undirected_option;            /* and the option it was read with */
    uint64_t n, base, weighted, undirected, count;
    uint64_t checksum; /* app_cache_checksum of all the rest */
} app_cache_header_t;

/* Over every field of `h` but the checksum, and the edges. */
uint64_t app_cache_checksum(const app_cache_header_t *h, const app_edge_t *edges, size_t count);

/* Whether `h` and the `count` edges after it (all the file holds) form a
 * graph this program wrote: 0, or -1 with the first fault found in `why`. */
int app_cache_check(const app_cache_header_t *h, const app_edge_t *edges, uint64_t count, app_error_t *why);

#endif
