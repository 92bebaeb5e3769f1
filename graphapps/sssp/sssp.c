/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sssp: single-source shortest paths by Bellman-Ford rounds of active
 * messages (Gravel, section 6): a vertex whose distance improved sends its
 * distance plus each out-edge's weight to the edge's target, whose owner's
 * handler keeps the smaller.  Weights are the input's (1 for a pattern
 * matrix or a two-column edge list) and must be non-negative.  Unreachable
 * vertices have distance inf.
 *
 * Distances are computed as the sequential algorithms compute them, d(u) + w
 * in double precision along the final shortest paths, so they match Dijkstra
 * (--verify, and networkx in the tests) exactly.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/app.h"
#include "../common/graph_app.h"
#include "grain/grain.h"

extern const char sssp_kernel_source[];

static void usage(FILE *out)
{
    fprintf(out, "usage: sssp (--graph FILE | --kronecker S[,E]) [--source V] [--out FILE] [--verify] [--json]\n"
                 "  --source V  the source vertex, in the input's ids (default: the first, 1 in a .mtx, else 0)\n"
                 "  --out FILE  write \"<vertex> <distance>\" per vertex, input ids, inf when unreachable\n"
                 "  --verify    compare with a sequential Dijkstra: every distance exactly\n"
                 "  --json      one JSON object with the result and statistics\n");
    app_input_usage(out);
    app_config_usage(out);
}

/* The source as an internal id, or -1 with a message; and every weight must
 * be a non-negative number. */
static int check_input(const app_graph_t *g, const app_vertex_options_t *o, uint64_t *source, app_error_t *err)
{
    const app_edges_t *e = &g->all;
    if (app_vertex_of(g, o, "--source", source, err) != 0)
        return -1;
    for (size_t i = 0; i < e->count; i++) {
        if (!(e->edges[i].w >= 0)) {
            snprintf(err->msg, sizeof err->msg,
                     "%s: edge %llu -> %llu has weight %g: shortest paths need weights of 0 or more", g->name,
                     (unsigned long long)(e->edges[i].u + e->base), (unsigned long long)(e->edges[i].v + e->base),
                     e->edges[i].w);
            return -1;
        }
    }
    return 0;
}

/* ---- the sequential reference: Dijkstra with a binary heap ---- */

typedef struct heap_item {
    double d;
    uint64_t v;
} heap_item_t;

static void heap_push(heap_item_t *h, size_t *n, heap_item_t x)
{
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2].d > x.d) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static heap_item_t heap_pop(heap_item_t *h, size_t *n)
{
    heap_item_t top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1].d < h[c].d)
            c++;
        if (h[c].d >= last.d)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = last;
    return top;
}

static double *dijkstra(const app_edges_t *e, uint64_t source)
{
    uint64_t n = e->n;
    uint64_t *off = app_malloc((n + 1) * sizeof *off), *fill = app_malloc(n * sizeof *fill);
    uint64_t *to = app_malloc(e->count * sizeof *to);
    double *w = app_malloc(e->count * sizeof *w), *dist = app_malloc(n * sizeof *dist);
    heap_item_t *h = app_malloc((e->count + 1) * sizeof *h); /* lazy deletion: one entry per improvement */
    memset(off, 0, (n + 1) * sizeof *off);
    for (size_t i = 0; i < e->count; i++)
        off[e->edges[i].u + 1]++;
    for (uint64_t v = 0; v < n; v++) {
        off[v + 1] += off[v];
        fill[v] = off[v];
        dist[v] = INFINITY;
    }
    for (size_t i = 0; i < e->count; i++) {
        uint64_t k = fill[e->edges[i].u]++;
        to[k] = e->edges[i].v;
        w[k] = e->edges[i].w;
    }
    size_t hn = 0;
    dist[source] = 0;
    heap_push(h, &hn, (heap_item_t){0, source});
    while (hn > 0) {
        heap_item_t x = heap_pop(h, &hn);
        if (x.d > dist[x.v])
            continue;
        for (uint64_t k = off[x.v]; k < off[x.v + 1]; k++) {
            double nd = x.d + w[k];
            if (nd < dist[to[k]]) {
                dist[to[k]] = nd;
                heap_push(h, &hn, (heap_item_t){nd, to[k]});
            }
        }
    }
    free(h);
    free(w);
    free(to);
    free(fill);
    free(off);
    return dist;
}

/* ---- the distributed run ---- */

typedef struct sssp_result {
    unsigned long long rounds, relaxed; /* rounds, and improvements over all of them */
    app_timing_t timing;
} sssp_result_t;

/* dist receives this rank's distances. */
static sssp_result_t run(grain_t *g, const app_graph_t *graph, uint64_t source, double *dist)
{
    const app_partition_t *p = &graph->part;
    uint64_t local_n = p->local_n;
    size_t rows = local_n ? local_n : 1;

    int64_t *state, *frontier, *counts; /* state: (distance bits, improved) per vertex, in the heap */
    app_device_graph_t dg;
    app_check(grain_malloc(g, 2 * p->max_local_n * sizeof *state, (void **)&state), "allocating the distances");
    size_t wg = 256, global = app_vertex_grid(graph, wg), groups = global / wg;
    app_check(grain_mem_alloc(g, rows * sizeof *frontier, (void **)&frontier), "allocating the frontier");
    app_check(grain_mem_alloc(g, groups * sizeof *counts, (void **)&counts), "allocating the frontier counts");
    app_device_graph_upload(g, graph, APP_UPLOAD_WEIGHTS, &dg);

    grain_program_t *prog;
    grain_kernel_t *k, *next;
    app_check(grain_program_create(g, sssp_kernel_source, NULL, &prog), "building the sssp kernel");
    app_check(grain_am_register_program(g, prog), "registering the relax handler");
    app_check(grain_kernel_create(prog, "sssp_round", &k), "creating the sssp kernel");
    app_kernel_ptrs(k, 1, 5, (void *const[]){state, dg.offsets, dg.dest, dg.weight, frontier});
    app_check(grain_kernel_set_arg(k, 6, sizeof local_n, &local_n), "setting kernel arguments");
    app_check(grain_kernel_create(prog, "sssp_frontier", &next), "creating the sssp kernel");
    app_kernel_ptrs(next, 1, 3, (void *const[]){state, frontier, counts});
    app_check(grain_kernel_set_arg(next, 4, sizeof local_n, &local_n), "setting kernel arguments");

    int64_t *host_state = app_malloc(2 * rows * sizeof *host_state);
    int64_t *host_counts = app_malloc(groups * sizeof *host_counts);
    int64_t inf_bits;
    double inf = INFINITY;
    memcpy(&inf_bits, &inf, sizeof inf_bits);
    for (uint64_t v = 0; v < local_n; v++) {
        host_state[2 * v] = inf_bits;
        host_state[2 * v + 1] = 0;
    }
    if (app_owner(p, source) == p->rank) {
        uint64_t s = app_local_index(p, source);
        host_state[2 * s] = 0;     /* the bits of 0.0 */
        host_state[2 * s + 1] = 1; /* improved: it sends in round one */
    }
    app_check(grain_memcpy(g, state, host_state, 2 * rows * sizeof *state), "writing the distances");

    sssp_result_t r = {0};
    app_check(grain_barrier_all(g), "the barrier before the run");
    app_clock_t clock;
    app_clock_start(g, &clock);
    for (;;) {
        app_check(grain_launch(next, 1, &global, &wg), "launching the sssp frontier");
        app_check(grain_wait(g), "waiting for the sssp frontier");
        int64_t improved;
        app_group_sums(g, counts, groups, 1, host_counts, &improved);
        /* Every rank has cleared its flags once this returns. */
        app_check(grain_allreduce(g, &improved, 1, GRAIN_INT64, GRAIN_SUM), "counting the frontier");
        if (improved == 0)
            break;
        r.relaxed += (unsigned long long)improved;
        r.rounds++;
        app_check(grain_launch(k, 1, &global, &wg), "launching sssp");
        app_check(grain_barrier_all(g), "grain_barrier_all after sssp");
    }
    r.timing = app_clock_stop(g, &clock);
    app_check(grain_memcpy(g, host_state, state, 2 * rows * sizeof *state), "reading the distances");
    for (uint64_t v = 0; v < local_n; v++)
        memcpy(&dist[v], &host_state[2 * v], sizeof dist[v]);

    free(host_counts);
    free(host_state);
    grain_kernel_destroy(next);
    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    app_device_graph_free(g, &dg);
    app_device_free(g, frontier);
    app_device_free(g, counts);
    app_check(grain_free(g, state), "freeing");
    return r;
}

int main(int argc, char **argv)
{
    app_vertex_options_t o;
    grain_t *g = app_init(app_parse_vertex_app(argc, argv, "sssp", "--source", usage, &o));
    int me = grain_my_pe(g), npes = grain_n_pes(g);

    app_graph_t graph;
    app_error_t err;
    uint64_t source = 0;
    o.input.heap_per_part_vertex = 2 * sizeof(int64_t); /* distance and flag */
    double tl = app_load_graph(g, "sssp", &o.input, 0, &graph);
    if (check_input(&graph, &o, &source, &err) != 0) {
        app_graph_free(&graph);
        app_fail(g, "sssp", err.msg);
    }
    double *dist = app_malloc(graph.part.local_n * sizeof *dist);
    sssp_result_t r = run(g, &graph, source, dist);

    uint64_t reached = 0;
    for (uint64_t k = 0; k < graph.part.local_n; k++)
        reached += !isinf(dist[k]);
    app_check(grain_allreduce(g, &reached, 1, GRAIN_UINT64, GRAIN_SUM), "counting the reached vertices");
    int verified = -1;
    int64_t wrong = 0;
    if (o.common.verify) {
        double *ref = dijkstra(&graph.all, source);
        for (uint64_t k = 0; k < graph.part.local_n; k++)
            wrong += dist[k] != ref[graph.part.global_of[k]];
        free(ref);
        app_check(grain_allreduce(g, &wrong, 1, GRAIN_INT64, GRAIN_SUM), "reducing the verification");
        verified = wrong == 0;
    }
    int status = APP_EXIT_OK;
    if (o.common.out != NULL)
        status = app_write_values(g, "sssp", graph.part.global_of, graph.part.local_n, graph.all.base, dist,
                                  o.common.out);

    unsigned long long src_id = (unsigned long long)(source + graph.all.base);
    if (me == 0 && !o.common.json) {
        printf("sssp: %s, %llu vertices, %zu edges, %d rank%s (%s partition), %s on %s\n", graph.name,
               (unsigned long long)graph.all.n, graph.all.count, npes, app_plural(npes),
               app_scheme_name(graph.part.scheme), grain_backend_name(g), grain_device_name(g));
        printf("from %llu: %llu vertices reached in %llu rounds, %.3f s\n", src_id, (unsigned long long)reached,
               r.rounds, r.timing.seconds);
        app_timing_print(stdout, &r.timing);
        if (verified >= 0)
            printf("verification: %s (%lld of %llu distances differ from Dijkstra's)\n",
                   verified ? "passed" : "FAILED", (long long)wrong, (unsigned long long)graph.all.n);
    }
    FILE *out = app_json_begin(g, o.common.json, "sssp");
    if (out != NULL) {
        fputc(',', out);
        app_graph_json(out, &graph);
        fprintf(out,
                ",\"source\":%llu,\"verified\":%s,\"wrong\":%lld,\"reached\":%llu,\"rounds\":%llu,"
                "\"improvements\":%llu,\"load_seconds\":%.6f,",
                src_id, verified < 0 ? "null" : verified ? "true" : "false", (long long)wrong,
                (unsigned long long)reached, r.rounds, r.relaxed, tl);
        app_timing_json(out, &r.timing);
    }
    app_json_end(g, out);

    free(dist);
    app_graph_free(&graph);
    return app_finish(g, status, verified);
}
