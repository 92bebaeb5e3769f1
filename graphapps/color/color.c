/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * color: distributed graph coloring with PUTs (Jones-Plassmann, Gravel
 * section 6) of the simple undirected graph under the input (self loops and
 * directions dropped).  Priorities put large degrees first, as networkx's
 * greedy_color(strategy="largest_first"), with a hash of the id (and --seed)
 * between equal degrees.  The coloring is proper whatever the order in which
 * PUTs land; --verify checks every edge and that every vertex has a color.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/app.h"
#include "../common/graph_app.h"
#include "grain/grain.h"

extern const char color_kernel_source[];

typedef struct color_options {
    app_input_t input;
    app_common_t common;
} color_options_t;

static void usage(FILE *out)
{
    fprintf(out, "usage: color (--graph FILE | --kronecker S[,E]) [--out FILE] [--verify] [--json]\n"
                 "  --out FILE  write \"<vertex> <color>\" per vertex, input ids, colors from 0\n"
                 "  --verify    check that no edge joins two vertices of one color\n"
                 "  --json      one JSON object with the result and statistics\n"
                 "  (--seed also breaks ties between equal degrees)\n");
    app_input_usage(out);
    app_config_usage(out);
}

static grain_config_t *parse(int argc, char **argv, color_options_t *o)
{
    grain_config_t *config = app_config();
    *o = (color_options_t){0};
    app_input_defaults(&o->input);
    const cli_group_t groups[] = {app_input_group(&o->input)};
    app_parse_options("color", argc, argv, groups, 1, &o->common, config, usage);
    app_input_check("color", &o->input);
    return config;
}

/* Every vertex's priority: its degree above a hash of its id. */
static uint64_t *priorities(const app_edges_t *e, uint64_t seed)
{
    uint64_t *prio = app_malloc(e->n * sizeof *prio);
    memset(prio, 0, e->n * sizeof *prio);
    for (size_t i = 0; i < e->count; i++)
        prio[e->edges[i].u]++;
    for (uint64_t v = 0; v < e->n; v++) {
        uint64_t degree = prio[v] < (1u << 23) ? prio[v] : (1u << 23) - 1;
        prio[v] = degree << 40 | (app_mix64(v ^ app_mix64(seed)) >> 24);
    }
    return prio;
}

/* For each own vertex, the distinct ranks that own a neighbour, and its own
 * rank, which keeps the vertex's color too: the PUTs of its broadcast. */
static void neighbour_ranks(const app_graph_t *g, uint64_t **offsets_p, uint32_t **ranks_p)
{
    const app_partition_t *p = &g->part;
    const app_local_graph_t *lg = &g->local;
    uint64_t *off = app_malloc((p->local_n + 1) * sizeof *off);
    uint32_t *ranks = app_malloc((lg->edges + p->local_n) * sizeof *ranks);
    uint64_t *seen = app_malloc(p->ranks * sizeof *seen); /* the vertex that last listed each rank, + 1 */
    memset(seen, 0, p->ranks * sizeof *seen);
    uint64_t n = 0;
    for (uint64_t k = 0; k < p->local_n; k++) {
        off[k] = n;
        seen[p->rank] = k + 1;
        ranks[n++] = p->rank;
        for (uint64_t e = lg->offsets[k]; e < lg->offsets[k + 1]; e++) {
            uint32_t r = APP_DEST_PE(lg->dest[e]);
            if (seen[r] != k + 1) {
                seen[r] = k + 1;
                ranks[n++] = r;
            }
        }
    }
    off[p->local_n] = n;
    free(seen);
    *offsets_p = off;
    *ranks_p = ranks;
}

typedef struct color_result {
    unsigned long long rounds;
    app_timing_t timing;
} color_result_t;

/* colors receives every vertex's color as this rank knows it: its own
 * vertices' and their neighbours' are final. */
static color_result_t run(grain_t *g, const app_graph_t *graph, uint64_t seed, int32_t *colors)
{
    const app_partition_t *p = &graph->part;
    uint64_t n = p->n, local_n = p->local_n;

    int32_t *heap_colors;
    app_check(grain_malloc(g, n * sizeof *heap_colors, (void **)&heap_colors), "allocating the colors");
    uint64_t *prio_host = priorities(&graph->all, seed), *rank_off_host;
    uint32_t *ranks_host;
    neighbour_ranks(graph, &rank_off_host, &ranks_host);
    app_device_graph_t dg;
    app_device_graph_upload(g, graph, APP_UPLOAD_TARGETS, &dg);
    uint64_t *prio = app_device_copy(g, prio_host, n * sizeof *prio);
    uint64_t *vertex = app_device_copy(g, p->global_of, local_n * sizeof *vertex);
    uint64_t *rank_off = app_device_copy(g, rank_off_host, (local_n + 1) * sizeof *rank_off);
    uint32_t *ranks = app_device_copy(g, ranks_host, rank_off_host[local_n] * sizeof *ranks);

    grain_program_t *prog;
    grain_kernel_t *k;
    app_check(grain_program_create(g, color_kernel_source, NULL, &prog), "building the color kernel");
    app_check(grain_kernel_create(prog, "color_round", &k), "creating the color kernel");
    size_t wg = 256, global = app_vertex_grid(graph, wg), groups = global / wg;
    size_t rows = local_n ? local_n : 1;
    uint64_t *zeros = app_malloc(rows * sizeof *zeros);
    memset(zeros, 0, rows * sizeof *zeros);
    uint64_t *scanned = app_device_copy(g, zeros, rows * sizeof *scanned);
    int64_t *left, *host_left = app_malloc(groups * sizeof *host_left);
    app_check(grain_mem_alloc(g, groups * sizeof *left, (void **)&left), "allocating the round's counts");
    app_kernel_ptrs(k, 1, 9,
                    (void *const[]){heap_colors, prio, vertex, dg.offsets, dg.target, rank_off, ranks, scanned, left});
    app_check(grain_kernel_set_arg(k, 10, sizeof local_n, &local_n), "setting kernel arguments");

    memset(colors, 0xff, n * sizeof *colors); /* -1: no color yet */
    app_check(grain_memcpy(g, heap_colors, colors, n * sizeof *colors), "writing the colors");
    app_check(grain_barrier_all(g), "the barrier before the run");
    color_result_t r = {0};
    app_clock_t clock;
    app_clock_start(g, &clock);
    for (int64_t uncolored = 1; uncolored > 0;) {
        app_check(grain_launch(k, 1, &global, &wg), "launching color");
        app_check(grain_barrier_all(g), "grain_barrier_all after color");
        r.rounds++;
        app_group_sums(g, left, groups, 1, host_left, &uncolored);
        app_check(grain_allreduce(g, &uncolored, 1, GRAIN_INT64, GRAIN_SUM), "counting uncolored vertices");
    }
    r.timing = app_clock_stop(g, &clock);
    app_check(grain_memcpy(g, colors, heap_colors, n * sizeof *colors), "reading the colors");

    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    app_device_free(g, left);
    free(host_left);
    app_device_free(g, scanned);
    free(zeros);
    app_device_free(g, ranks);
    app_device_free(g, rank_off);
    app_device_free(g, vertex);
    app_device_free(g, prio);
    app_device_graph_free(g, &dg);
    free(ranks_host);
    free(rank_off_host);
    free(prio_host);
    app_check(grain_free(g, heap_colors), "freeing");
    return r;
}

int main(int argc, char **argv)
{
    color_options_t o;
    grain_t *g = app_init(parse(argc, argv, &o));
    int me = grain_my_pe(g), npes = grain_n_pes(g);

    app_graph_t graph;
    o.input.heap_per_vertex = sizeof(int32_t); /* every vertex's color on every rank */
    double tl = app_load_graph(g, "color", &o.input, APP_LOAD_UNDIRECTED, &graph);
    int32_t *colors = app_malloc(graph.all.n * sizeof *colors);
    color_result_t r = run(g, &graph, o.input.seed, colors);

    /* Checked by each owner over its own vertices' edges: their neighbours'
     * colors reached it by the broadcast. */
    const app_partition_t *p = &graph.part;
    int64_t most = -1, conflicts = 0, uncolored = 0;
    double *values = app_malloc(p->local_n * sizeof *values);
    for (uint64_t k = 0; k < p->local_n; k++) {
        int32_t c = colors[p->global_of[k]];
        values[k] = c;
        most = c > most ? c : most;
        uncolored += c < 0;
        for (uint64_t e = graph.local.offsets[k]; e < graph.local.offsets[k + 1]; e++)
            conflicts += colors[graph.local.target[e]] == c;
    }
    app_check(grain_allreduce(g, &most, 1, GRAIN_INT64, GRAIN_MAX), "counting the colors");
    app_check(grain_allreduce(g, &conflicts, 1, GRAIN_INT64, GRAIN_SUM), "checking the coloring");
    app_check(grain_allreduce(g, &uncolored, 1, GRAIN_INT64, GRAIN_SUM), "checking the coloring");
    int verified = o.common.verify ? conflicts == 0 && uncolored == 0 : -1;
    int status = APP_EXIT_OK;
    if (o.common.out != NULL)
        status = app_write_values(g, "color", p->global_of, p->local_n, graph.all.base, values, o.common.out);

    if (me == 0 && !o.common.json) {
        printf("color: %s, %llu vertices, %zu undirected edges (both ways), %d rank%s (%s partition), %s on %s\n",
               graph.name, (unsigned long long)graph.all.n, graph.all.count, npes, app_plural(npes),
               app_scheme_name(graph.part.scheme), grain_backend_name(g), grain_device_name(g));
        printf("%lld colors in %llu rounds, %.3f s\n", (long long)(most + 1), r.rounds, r.timing.seconds);
        app_timing_print(stdout, &r.timing);
        if (verified >= 0)
            printf("verification: %s (%lld edges join one color, %lld vertices without a color)\n",
                   verified ? "passed" : "FAILED", (long long)conflicts / 2, (long long)uncolored);
    }
    FILE *out = app_json_begin(g, o.common.json, "color");
    if (out != NULL) {
        fputc(',', out);
        app_graph_json(out, &graph);
        fprintf(out,
                ",\"verified\":%s,\"colors\":%lld,\"conflicts\":%lld,\"uncolored\":%lld,\"rounds\":%llu,"
                "\"load_seconds\":%.6f,",
                verified < 0 ? "null" : verified ? "true" : "false", (long long)(most + 1),
                (long long)conflicts / 2, (long long)uncolored, r.rounds, tl);
        app_timing_json(out, &r.timing);
    }
    app_json_end(g, out);

    free(values);
    free(colors);
    app_graph_free(&graph);
    return app_finish(g, status, verified);
}
