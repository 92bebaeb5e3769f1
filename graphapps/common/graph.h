/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Graph input for the apps: Matrix Market and edge-list files, Graph500
 * Kronecker (R-MAT) graphs generated from a seed, and a binary cache of
 * parsed files.  Nothing here knows about grain: the parsers are plain C over
 * memory, so unit tests and the fuzz target call them directly.
 *
 * A graph is a list of directed edges over vertices 0 .. n-1.  Undirected
 * inputs (a symmetric .mtx, an edge list read with `undirected`) list every
 * edge in both directions, a self loop once.  Vertex ids in the file are kept
 * apart from the internal ones only by `base`: a .mtx numbers from 1, an edge
 * list from 0, and apps print the file's numbering.
 *
 * Every reader either fills its output and returns 0, or returns -1 with a
 * sentence in the error buffer that names the input and, for files, the line.
 */
#ifndef GRAIN_GRAPHAPPS_GRAPH_H
#define GRAIN_GRAPHAPPS_GRAPH_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef struct app_edge {
    uint64_t u, v;
    double w; /* 1 for unweighted inputs */
} app_edge_t;

typedef struct app_edges {
    uint64_t n;        /* vertices */
    uint64_t base;     /* the input's number for vertex 0 */
    int weighted;      /* the input gave weights */
    int undirected;    /* every edge is listed both ways */
    app_edge_t *edges; /* malloc'd */
    size_t count, cap;
} app_edges_t;

typedef struct app_error {
    char msg[512];
} app_error_t;

/* The most vertices a reader may return, and why.  An input over it is
 * refused as soon as its size shows (a .mtx's size line, the first
 * edge-list id beyond it, a Kronecker scale, a cache's header), before the
 * rest is read or memory is taken for it.  NULL: grain's own limit, 2^40. */
typedef struct app_limit {
    uint64_t max_n;
    char why[256]; /* completes "N vertices are too many: " */
} app_limit_t;

/* 0 when `n` vertices are within `limit`; else -1 with "NAME: N vertices are
 * too many: WHY" in err. */
int app_limit_check(const app_limit_t *limit, uint64_t n, const char *name, app_error_t *err);

/* The whole file in malloc'd memory, its length in *len; NULL with a message. */
char *app_read_file(const char *path, size_t *len, app_error_t *err);

/* Text read line by line, for the parsers of every input: the number of the
 * line last returned names it in error messages. */
typedef struct app_lines {
    const char *p, *end;
    const char *name;
    unsigned long long line;
} app_lines_t;

/* The next line without its end of line (\n or \r\n); 0 at the end. */
int app_next_line(app_lines_t *t, const char **line, size_t *len);
/* "name:line: <message>" in err ("name: " before the first line); -1. */
int app_line_error(const app_lines_t *t, app_error_t *err, const char *fmt, ...);
int app_line_verror(const app_lines_t *t, app_error_t *err, const char *fmt, va_list ap);

/* Frees the edges and zeroes *e. */
void app_edges_free(app_edges_t *e);

/* Parses `len` bytes of Matrix Market coordinate data (pattern, integer or
 * real; general or symmetric).  `name` appears in error messages. */
int app_parse_mtx(const char *data, size_t len, const char *name, const app_limit_t *limit, app_edges_t *e,
                  app_error_t *err);

/* Parses a whitespace edge list: "u v" or "u v w" per line, ids from 0,
 * '#' and '%' start comments.  Every line has the same number of columns. */
int app_parse_edge_list(const char *data, size_t len, const char *name, int undirected, const app_limit_t *limit,
                        app_edges_t *e, app_error_t *err);

/* A Graph500-style Kronecker graph: 2^scale vertices, edgefactor * 2^scale
 * undirected edges (listed both ways) drawn with R-MAT probabilities
 * (0.57, 0.19, 0.19, 0.05), vertex ids scrambled, integer weights 1..255.
 * The same seed gives the same graph on every machine and rank count. */
int app_kronecker(unsigned scale, unsigned edgefactor, uint64_t seed, const app_limit_t *limit, app_edges_t *e,
                  app_error_t *err);

/* The binary cache of parsed graph files.  Its files in `dir` stay within
 * `max_bytes` together: the least recently used go first, and a graph
 * larger than the bound is not cached. */
typedef struct app_cache {
    const char *dir;    /* NULL: no cache */
    uint64_t max_bytes;
    char stored[4096];  /* set by app_read_graph: the file it wrote, or "" */
    uint64_t stored_bytes;
} app_cache_t;
#define APP_CACHE_MAX_DEFAULT (4ull << 30)

/*
 * Reads FILE: a .mtx by its suffix or its %%MatrixMarket banner, else an edge
 * list (`undirected` applies to edge lists; a .mtx says itself whether it is
 * symmetric).  With a `cache` (NULL: none), inputs of 1 MiB and more go
 * through a binary cache file, used while it matches FILE's size,
 * modification time and `undirected`, and rewritten after a parse; a cache
 * that cannot be written is not an error.  A cache that fails its checks
 * (graph_cache.h) is reported on stderr and replaced by a parse.
 */
int app_read_graph(const char *path, int undirected, app_cache_t *cache, const app_limit_t *limit,
                   app_edges_t *e, app_error_t *err);

/* Replaces the edges with the simple undirected graph under them: every
 * pair joined by an edge either way, listed both ways once, no self loops,
 * sorted, weights 1. */
int app_edges_make_simple_undirected(app_edges_t *e, app_error_t *err);

/* Rejects a graph with no vertices or no edges. */
int app_check_not_empty(const app_edges_t *e, const char *name, app_error_t *err);

#endif
