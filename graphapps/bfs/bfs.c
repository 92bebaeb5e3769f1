/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bfs: breadth-first search as Graph500's kernel 2, over the undirected
 * simple graph of the input (edges both ways, no self loops): a parent for
 * every vertex reached from the root, found level by level with a
 * compare-and-swap on the owner's parent array (bfs.cl), the way SHMEM
 * codes write it.  TEPS, as Graph500 counts them: the undirected edges of
 * the root's component over the search's seconds.
 *
 * --verify checks the parent array by Graph500's rules against a
 * sequential BFS: the root is its own parent, every other reached vertex's
 * parent is a neighbour one level closer to the root, the reached vertices
 * are exactly the root's component, and the others have no parent.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/app.h"
#include "../common/graph_app.h"
#include "grain/grain.h"

extern const char bfs_kernel_source[];

static void usage(FILE *out)
{
    fprintf(out, "usage: bfs (--graph FILE | --kronecker S[,E]) [--root V] [--out FILE] [--verify] [--json]\n"
                 "  --root V    the root vertex, in the input's ids (default: the first, 1 in a .mtx, else 0)\n"
                 "  --out FILE  write \"<vertex> <parent>\" per vertex, input ids, -1 where not reached\n"
                 "  --verify    check the parents by Graph500's rules against a sequential BFS\n"
                 "  --json      one JSON object with the result and statistics\n");
    app_input_usage(out);
    app_config_usage(out);
}

/* ---- the sequential reference ---- */

/* The graph's adjacency (CSR) and every vertex's level from `root`, -1 where
 * not reached. */
typedef struct bfs_reference {
    uint64_t *off, *to;
    int64_t *level;
} bfs_reference_t;

static bfs_reference_t reference(const app_edges_t *e, uint64_t root)
{
    uint64_t n = e->n;
    bfs_reference_t r = {app_malloc((n + 1) * sizeof *r.off), app_malloc((e->count + 1) * sizeof *r.to),
                         app_malloc(n * sizeof *r.level)};
    uint64_t *fill = app_malloc(n * sizeof *fill), *queue = app_malloc(n * sizeof *queue);
    memset(r.off, 0, (n + 1) * sizeof *r.off);
    for (size_t i = 0; i < e->count; i++)
        r.off[e->edges[i].u + 1]++;
    for (uint64_t v = 0; v < n; v++) {
        r.off[v + 1] += r.off[v];
        fill[v] = r.off[v];
        r.level[v] = -1;
    }
    for (size_t i = 0; i < e->count; i++)
        r.to[fill[e->edges[i].u]++] = e->edges[i].v;
    uint64_t head = 0, tail = 0;
    r.level[root] = 0;
    queue[tail++] = root;
    while (head < tail) {
        uint64_t u = queue[head++];
        for (uint64_t k = r.off[u]; k < r.off[u + 1]; k++)
            if (r.level[r.to[k]] < 0) {
                r.level[r.to[k]] = r.level[u] + 1;
                queue[tail++] = r.to[k];
            }
    }
    free(queue);
    free(fill);
    return r;
}

static int has_edge(const bfs_reference_t *r, uint64_t u, uint64_t v)
{
    for (uint64_t k = r->off[u]; k < r->off[u + 1]; k++)
        if (r->to[k] == v)
            return 1;
    return 0;
}

/* This rank's vertices whose parent breaks a rule; the first one's
 * sentence goes to `why`. */
static int64_t check_parents(const app_graph_t *g, uint64_t root, const int64_t *parent, char *why, size_t size)
{
    bfs_reference_t r = reference(&g->all, root);
    int64_t wrong = 0;
    for (uint64_t k = 0; k < g->part.local_n; k++) {
        uint64_t v = g->part.global_of[k];
        int64_t p = parent[k];
        const char *rule = NULL;
        if (r.level[v] < 0 && p != -1)
            rule = "has a parent but is not in the root's component";
        else if (r.level[v] >= 0 && p < 0)
            rule = "is in the root's component but has no parent";
        else if (v == root && p != (int64_t)root)
            rule = "is the root, whose parent must be itself";
        else if (r.level[v] > 0 && ((uint64_t)p >= g->all.n || !has_edge(&r, (uint64_t)p, v)))
            rule = "has a parent that is not its neighbour";
        else if (r.level[v] > 0 && r.level[p] != r.level[v] - 1)
            rule = "has a parent that is not one level closer to the root";
        if (rule != NULL && wrong++ == 0)
            snprintf(why, size, "vertex %llu (parent %lld) %s", (unsigned long long)(v + g->all.base),
                     (long long)(p < 0 ? p : p + (int64_t)g->all.base), rule);
    }
    free(r.level);
    free(r.to);
    free(r.off);
    return wrong;
}

/* ---- the distributed run ---- */

typedef struct bfs_result {
    unsigned long long levels, reached;
    app_timing_t timing;
} bfs_result_t;

/* parent receives this rank's parents (vertex ids, -1 where not reached). */
static bfs_result_t run(grain_t *g, const app_graph_t *graph, uint64_t root, int64_t *parent)
{
    const app_partition_t *p = &graph->part;
    uint64_t local_n = p->local_n;
    size_t rows = local_n ? local_n : 1;

    int64_t *dparent, *level, *frontier, *ids, *counts;
    app_device_graph_t dg;
    app_check(grain_malloc(g, p->max_local_n * sizeof *dparent, (void **)&dparent), "allocating the parents");
    size_t wg = 256, global = app_vertex_grid(graph, wg), groups = global / wg;
    app_check(grain_mem_alloc(g, rows * sizeof *level, (void **)&level), "allocating the levels");
    app_check(grain_mem_alloc(g, rows * sizeof *frontier, (void **)&frontier), "allocating the frontier");
    app_check(grain_mem_alloc(g, rows * sizeof *ids, (void **)&ids), "allocating the vertex ids");
    app_check(grain_mem_alloc(g, groups * sizeof *counts, (void **)&counts), "allocating the frontier counts");
    app_device_graph_upload(g, graph, 0, &dg);

    grain_program_t *prog;
    grain_kernel_t *k, *next;
    app_check(grain_program_create(g, bfs_kernel_source, NULL, &prog), "building the bfs kernel");
    app_check(grain_kernel_create(prog, "bfs_level", &k), "creating the bfs kernel");
    app_kernel_ptrs(k, 1, 4, (void *const[]){dparent, dg.offsets, dg.dest, frontier});
    app_check(grain_kernel_set_arg(k, 5, sizeof local_n, &local_n), "setting kernel arguments");
    app_check(grain_kernel_create(prog, "bfs_frontier", &next), "creating the bfs kernel");
    app_kernel_ptrs(next, 1, 5, (void *const[]){dparent, level, frontier, ids, counts});
    app_check(grain_kernel_set_arg(next, 6, sizeof local_n, &local_n), "setting kernel arguments");

    /* Nothing reached but the root, which is the first level. */
    int64_t *host = app_malloc(rows * sizeof *host), *host_counts = app_malloc(groups * sizeof *host_counts);
    int own_root = app_owner(p, root) == p->rank;
    uint64_t r0 = own_root ? app_local_index(p, root) : 0;
    for (uint64_t v = 0; v < local_n; v++)
        host[v] = -1;
    if (own_root)
        host[r0] = (int64_t)root;
    app_check(grain_memcpy(g, dparent, host, rows * sizeof *host), "writing the parents");
    app_check(grain_memcpy(g, frontier, host, rows * sizeof *host), "writing the frontier");
    if (own_root)
        host[r0] = 0;
    app_check(grain_memcpy(g, level, host, rows * sizeof *host), "writing the levels");
    for (uint64_t v = 0; v < local_n; v++)
        host[v] = (int64_t)p->global_of[v];
    app_check(grain_memcpy(g, ids, host, rows * sizeof *host), "writing the vertex ids");

    bfs_result_t r = {.levels = 1, .reached = 1};
    app_check(grain_barrier_all(g), "the barrier before the run");
    app_clock_t clock;
    app_clock_start(g, &clock);
    for (int64_t depth = 1;; depth++) {
        app_check(grain_launch(k, 1, &global, &wg), "launching bfs");
        app_check(grain_barrier_all(g), "grain_barrier_all after a level");
        app_check(grain_kernel_set_arg(next, 7, sizeof depth, &depth), "setting kernel arguments");
        app_check(grain_launch(next, 1, &global, &wg), "launching the next level");
        app_check(grain_wait(g), "waiting for the next level");
        int64_t found;
        app_group_sums(g, counts, groups, 1, host_counts, &found);
        app_check(grain_allreduce(g, &found, 1, GRAIN_INT64, GRAIN_SUM), "counting the next level");
        if (found == 0)
            break;
        r.levels++;
        r.reached += (unsigned long long)found;
    }
    r.timing = app_clock_stop(g, &clock);
    app_check(grain_memcpy(g, parent, dparent, rows * sizeof *parent), "reading the parents");

    free(host_counts);
    free(host);
    grain_kernel_destroy(next);
    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    app_device_graph_free(g, &dg);
    app_device_free(g, level);
    app_device_free(g, frontier);
    app_device_free(g, ids);
    app_device_free(g, counts);
    app_check(grain_free(g, dparent), "freeing");
    return r;
}

int main(int argc, char **argv)
{
    app_vertex_options_t o;
    grain_t *g = app_init(app_parse_vertex_app(argc, argv, "bfs", "--root", usage, &o));
    int me = grain_my_pe(g), npes = grain_n_pes(g);

    app_graph_t graph;
    app_error_t err;
    uint64_t root = 0;
    o.input.heap_per_part_vertex = sizeof(int64_t); /* the parent */
    double tl = app_load_graph(g, "bfs", &o.input, APP_LOAD_UNDIRECTED, &graph);
    const app_edges_t *e = &graph.all;
    if (app_vertex_of(&graph, &o, "--root", &root, &err) != 0) {
        app_graph_free(&graph);
        app_fail(g, "bfs", err.msg);
    }
    int64_t *parent = app_malloc((graph.part.local_n ? graph.part.local_n : 1) * sizeof *parent);
    bfs_result_t r = run(g, &graph, root, parent);

    /* Graph500's TEPS: the component's undirected edges, which the search
     * scanned both ways. */
    uint64_t scanned = 0;
    for (uint64_t k = 0; k < graph.part.local_n; k++)
        if (parent[k] >= 0)
            scanned += graph.local.offsets[k + 1] - graph.local.offsets[k];
    app_check(grain_allreduce(g, &scanned, 1, GRAIN_UINT64, GRAIN_SUM), "counting the component's edges");
    double teps = r.timing.seconds > 0 ? (double)(scanned / 2) / r.timing.seconds : 0;

    int verified = -1;
    int64_t wrong = 0;
    char why[320] = "";
    if (o.common.verify) {
        wrong = check_parents(&graph, root, parent, why, sizeof why);
        if (wrong > 0)
            fprintf(stderr, "bfs: rank %d: %s\n", me, why);
        app_check(grain_allreduce(g, &wrong, 1, GRAIN_INT64, GRAIN_SUM), "reducing the verification");
        verified = wrong == 0;
    }
    int status = APP_EXIT_OK;
    if (o.common.out != NULL) {
        double *values = app_malloc((graph.part.local_n ? graph.part.local_n : 1) * sizeof *values);
        for (uint64_t k = 0; k < graph.part.local_n; k++)
            values[k] = parent[k] < 0 ? -1.0 : (double)(parent[k] + (int64_t)e->base);
        status = app_write_values(g, "bfs", graph.part.global_of, graph.part.local_n, e->base, values, o.common.out);
        free(values);
    }

    unsigned long long root_id = (unsigned long long)(root + e->base);
    if (me == 0 && !o.common.json) {
        printf("bfs: %s, %llu vertices, %zu edges both ways, %d rank%s (%s partition), %s on %s\n", graph.name,
               (unsigned long long)e->n, e->count, npes, app_plural(npes), app_scheme_name(graph.part.scheme),
               grain_backend_name(g), grain_device_name(g));
        printf("from %llu: %llu vertices reached in %llu levels, %.6f s, %.4g TEPS (%llu edges)\n", root_id,
               r.reached, r.levels, r.timing.seconds, teps, (unsigned long long)(scanned / 2));
        app_timing_print(stdout, &r.timing);
        if (verified >= 0)
            printf("verification: %s (%lld of %llu parents break Graph500's rules)\n", verified ? "passed" : "FAILED",
                   (long long)wrong, (unsigned long long)e->n);
    }
    FILE *out = app_json_begin(g, o.common.json, "bfs");
    if (out != NULL) {
        fputc(',', out);
        app_graph_json(out, &graph);
        fprintf(out,
                ",\"root\":%llu,\"verified\":%s,\"wrong\":%lld,\"reached\":%llu,\"levels\":%llu,"
                "\"component_edges\":%llu,\"teps\":%.6g,\"load_seconds\":%.6f,",
                root_id, verified < 0 ? "null" : verified ? "true" : "false", (long long)wrong, r.reached, r.levels,
                (unsigned long long)(scanned / 2), teps, tl);
        app_timing_json(out, &r.timing);
    }
    app_json_end(g, out);

    free(parent);
    app_graph_free(&graph);
    return app_finish(g, status, verified);
}
