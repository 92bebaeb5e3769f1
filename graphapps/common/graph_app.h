/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the graph apps share beyond app.h: the input options (--graph FILE or
 * --kronecker SCALE[,EDGEFACTOR], --partition, ...), loading and
 * partitioning the graph on every rank, and --out, which writes one line
 * "<vertex> <value>" per vertex with the input's vertex ids.
 */
#ifndef GRAIN_GRAPHAPPS_GRAPH_APP_H
#define GRAIN_GRAPHAPPS_GRAPH_APP_H

#include <stdio.h>

#include "app.h"
#include "graph.h"
#include "partition.h"

typedef struct app_input {
    const char *graph;    /* --graph FILE */
    unsigned kron_scale;  /* --kronecker SCALE[,EDGEFACTOR]; 0: none */
    unsigned kron_factor; /* 16 by default, as Graph500 */
    unsigned long long seed;
    int undirected;        /* --undirected: read an edge list both ways */
    app_scheme_t scheme;   /* --partition */
    const char *cache_dir; /* --cache-dir; NULL after --no-cache */
    uint64_t cache_max;    /* --cache-max: the bytes the cache's files may take */
    /* Bytes of each rank's symmetric heap the app takes per vertex of the
     * graph and per vertex of the rank's part: app_load_graph refuses a
     * graph that cannot fit as soon as its size shows. */
    uint64_t heap_per_vertex, heap_per_part_vertex;
} app_input_t;

/* The loaded graph as a rank holds it. */
typedef struct app_graph {
    app_edges_t all; /* every edge, as read (verification uses it) */
    app_partition_t part;
    app_local_graph_t local;
    char name[256]; /* the file or "kronecker-S-E-seed" */
} app_graph_t;

/* Defaults: no input yet, block partition, the cache in $GRAIN_GRAPH_CACHE,
 * else $XDG_CACHE_HOME/grain, else ~/.cache/grain, within
 * $GRAIN_GRAPH_CACHE_MAX bytes, else APP_CACHE_MAX_DEFAULT. */
void app_input_defaults(app_input_t *in);
/* The input options (app_input_usage lists them); a bad value exits with
 * APP_EXIT_ERROR. */
cli_group_t app_input_group(app_input_t *in);
void app_input_usage(FILE *out);
/* Exits with APP_EXIT_ERROR unless exactly one of --graph and --kronecker was given. */
void app_input_check(const char *app, const app_input_t *in);

/* app_graph_load's flags. */
#define APP_LOAD_UNDIRECTED 1 /* the underlying simple undirected graph: both ways, no self loops */

/* Reads or generates the graph, refuses an empty one or one over `limit`
 * (NULL: none but grain's), and builds this rank's part.  Every rank reads
 * the same input, so all fail alike. */
int app_graph_load(const app_input_t *in, unsigned ranks, unsigned rank, int flags, const app_limit_t *limit,
                   app_graph_t *g, app_error_t *err);
void app_graph_free(app_graph_t *g);
/* app_graph_load for this rank of `grain`, limited to the graphs whose heap
 * needs (`in`'s heap_per_*) fit the heap left, or app_fail; the seconds it
 * took. */
double app_load_graph(grain_t *grain, const char *app, const app_input_t *in, int flags, app_graph_t *g);

/* This rank's part of the graph in device memory, for kernels. */
typedef struct app_device_graph {
    uint64_t *offsets; /* local_n + 1 */
    uint64_t *dest;    /* APP_DEST per edge */
    double *weight;    /* per edge; NULL unless APP_UPLOAD_WEIGHTS */
    uint64_t *target;  /* per edge, the target vertex; NULL unless APP_UPLOAD_TARGETS */
} app_device_graph_t;

#define APP_UPLOAD_WEIGHTS 1
#define APP_UPLOAD_TARGETS 2

/* Exits with a message on failure, as app_check. */
void app_device_graph_upload(grain_t *grain, const app_graph_t *g, int what, app_device_graph_t *d);
void app_device_graph_free(grain_t *grain, app_device_graph_t *d);


/* The command line of an app of a graph and one vertex: the input's options,
 * the common ones, and `vertex_option` (sssp's --source, bfs's --root) with
 * the vertex in the input's ids; anything else is an error. */
typedef struct app_vertex_options {
    app_input_t input;
    unsigned long long vertex;
    int vertex_given;
    app_common_t common;
} app_vertex_options_t;
grain_config_t *app_parse_vertex_app(int argc, char **argv, const char *app, const char *vertex_option,
                                     void (*usage)(FILE *out), app_vertex_options_t *o);
/* The vertex of `o` as an internal id of `g` (its first vertex if none was
 * given), or -1 with the sentence in `err`. */
int app_vertex_of(const app_graph_t *g, const app_vertex_options_t *o, const char *vertex_option, uint64_t *v,
                  app_error_t *err);

/* app_grid for a work-item per vertex of the largest part. */
size_t app_vertex_grid(const app_graph_t *g, size_t wg);

/* The JSON fields that describe the input (no braces, no leading comma). */
void app_graph_json(FILE *out, const app_graph_t *g);

#endif
