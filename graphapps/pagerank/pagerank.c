/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pagerank: push-style PageRank through grain adds (Gravel, section 6),
 * with the semantics of networkx.pagerank on the unweighted graph (weights in
 * the input are ignored; parallel edges and self loops count as edges):
 *
 *   x'[v] = (1 - d) / n + d * (sum over edges u->v of x[u] / outdeg(u) + dangling / n)
 *
 * where `dangling` is the rank held by vertices without out-edges.  It starts
 * from x = 1/n and stops when sum |x' - x| < n * tolerance, networkx's test,
 * or after --iterations N.
 *
 * Shares travel as 64-bit fixed point, 2^52 units to a unit of rank: integer
 * adds are exact and associative, so the ranks do not depend on the order in
 * which messages arrive or on the rank count.
 *
 * --agent runs the replicated formulation instead (replicated.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/app.h"
#include "pagerank.h"

extern const char pagerank_kernel_source[];

static void usage(FILE *out)
{
    fprintf(out, "usage: pagerank (--graph FILE | --kronecker S[,E]) [--damping D] [--tolerance T | --iterations N]\n"
                 "                [--max-iterations N] [--agent A] [--out FILE] [--verify] [--json]\n"
                 "  --damping D         probability of following an edge (0.85)\n"
                 "  --tolerance T       stop when sum |x' - x| < n * T, as networkx (1e-6)\n"
                 "  --iterations N      run exactly N iterations instead\n"
                 "  --max-iterations N  give up after N iterations without converging (100, as networkx)\n"
                 "  --agent A           replicate the rank vector on every rank and pull over in-edges;\n"
                 "                      each step's new slice reaches the other ranks by counter-triggered\n"
                 "                      transfers, moved by A: bulk (a copy after the step), host (host\n"
                 "                      threads), device (a polling kernel; CUDA, HIP), launch (a copy\n"
                 "                      kernel launched by the work-group that finishes a chunk; CUDA),\n"
                 "                      inline (the step's own stores), ideal (nothing: the time with free\n"
                 "                      transfers, unverifiable), auto (GRAIN_TRANSFER_AGENT, else the\n"
                 "                      transfer profile's for this device, else host); --chunk-size and\n"
                 "                      --transfer-threads tune it (default: the profile's)\n"
                 "  --out FILE          write \"<vertex> <rank>\" per vertex, input ids\n"
                 "  --verify            compare with a sequential double-precision run of as many\n"
                 "                      iterations (L1 distance <= 1e-6)\n"
                 "  --json              one JSON object with the result and statistics\n");
    app_input_usage(out);
    app_model_usage(out);
    app_config_usage(out);
}

enum { PR_DAMPING, PR_TOLERANCE, PR_ITERATIONS, PR_MAX_ITERATIONS, PR_AGENT };

static void take(void *state, int key, const char *option, const char *value)
{
    pr_options_t *o = state;
    if (key == PR_DAMPING)
        o->damping = cli_real(option, value, 0, 1);
    else if (key == PR_TOLERANCE)
        o->tolerance = cli_real(option, value, 0, 1);
    else if (key == PR_ITERATIONS)
        o->iterations = cli_u64(option, value);
    else if (key == PR_MAX_ITERATIONS)
        o->max_iterations = cli_u64(option, value);
    else {
        o->replicated = 1;
        o->agent = app_parse_agent(value);
    }
}

static grain_config_t *parse(int argc, char **argv, pr_options_t *o)
{
    static const cli_option_t options[] = {{"damping", 1, PR_DAMPING},
                                           {"tolerance", 1, PR_TOLERANCE},
                                           {"iterations", 1, PR_ITERATIONS},
                                           {"max-iterations", 1, PR_MAX_ITERATIONS},
                                           {"agent", 1, PR_AGENT}};
    grain_config_t *config = app_config();
    *o = (pr_options_t){.damping = 0.85, .tolerance = 1e-6, .max_iterations = 100};
    app_input_defaults(&o->input);
    const cli_group_t groups[] = {CLI_GROUP(options, take, o), app_input_group(&o->input), app_model_group(&o->model)};
    app_parse_options("pagerank", argc, argv, groups, 3, &o->common, config, usage);
    app_input_check("pagerank", &o->input);
    if (o->replicated && o->model.model != APP_GRAIN) {
        fprintf(stderr, "pagerank: --model %s: the replicated formulation (--agent) sends no messages; "
                        "drop one of the two\n", app_model_names[o->model.model]);
        exit(APP_EXIT_ERROR);
    }
    app_model_configure("pagerank", &o->model, config);
    return config;
}

/* The sequential reference: the same formula in double precision over the
 * whole edge list, for exactly `iterations` iterations. */
static double *reference(const app_edges_t *e, double d, unsigned long long iterations)
{
    uint64_t n = e->n;
    double *x = app_malloc(n * sizeof *x), *next = app_malloc(n * sizeof *next);
    uint64_t *deg = app_malloc(n * sizeof *deg);
    memset(deg, 0, n * sizeof *deg);
    for (size_t i = 0; i < e->count; i++)
        deg[e->edges[i].u]++;
    for (uint64_t v = 0; v < n; v++)
        x[v] = 1.0 / (double)n;
    for (unsigned long long it = 0; it < iterations; it++) {
        double dangling = 0;
        for (uint64_t v = 0; v < n; v++) {
            dangling += deg[v] == 0 ? x[v] : 0;
            next[v] = 0;
        }
        for (size_t i = 0; i < e->count; i++)
            next[e->edges[i].v] += x[e->edges[i].u] / (double)deg[e->edges[i].u];
        for (uint64_t v = 0; v < n; v++)
            next[v] = (1 - d) / (double)n + d * (next[v] + dangling / (double)n);
        double *t = x;
        x = next;
        next = t;
    }
    free(next);
    free(deg);
    return x;
}

/* Runs pr_step and returns this rank's change and dangling rank, summed over
 * its work-groups (exact: fixed point). */
static void step(grain_t *g, grain_kernel_t *k, size_t global, size_t wg, int64_t *sums, int64_t *host_sums,
                 double dangling_each, int update, double out[2])
{
    app_check(grain_kernel_set_arg(k, 9, sizeof dangling_each, &dangling_each), "setting kernel arguments");
    app_check(grain_kernel_set_arg(k, 10, sizeof update, &update), "setting kernel arguments");
    app_check(grain_launch(k, 1, &global, &wg), "launching the pagerank step");
    app_check(grain_wait(g), "waiting for the pagerank step");
    int64_t total[2];
    app_group_sums(g, sums, global / wg, 2, host_sums, total);
    out[0] = (double)total[0] / FIXED_ONE;
    out[1] = (double)total[1] / FIXED_ONE;
}

/* One push: every local edge at once, or under the coprocessor model chunks
 * of at most a per-node queue's worth of edges, each shipped by the host
 * before the next; every rank runs `chunks`, the most any rank needs. */
static void launch_range(grain_kernel_t *k, const uint64_t range[4], size_t global, size_t wg)
{
    for (unsigned i = 0; i < 4; i++)
        app_check(grain_kernel_set_arg(k, 5 + i, sizeof range[i], &range[i]), "setting kernel arguments");
    app_check(grain_launch(k, 1, &global, &wg), "launching pagerank");
}

static void push(grain_t *g, grain_kernel_t *k, const app_local_graph_t *l, uint64_t local_n, size_t global,
                 size_t wg, app_coprocessor_t *c, uint64_t chunks, int64_t *acc)
{
    if (c == NULL) {
        launch_range(k, (const uint64_t[4]){0, local_n, 0, UINT64_MAX}, global, wg);
        return;
    }
    uint64_t v0 = 0;
    for (uint64_t i = 0; i < chunks; i++) {
        uint64_t e0 = i * c->capacity, e1 = e0 + c->capacity < l->edges ? e0 + c->capacity : l->edges;
        if (e0 < l->edges) {
            /* The vertices whose edges meet [e0, e1). */
            while (l->offsets[v0 + 1] <= e0)
                v0++;
            uint64_t v1 = v0;
            while (v1 < local_n && l->offsets[v1] < e1)
                v1++;
            launch_range(k, (const uint64_t[4]){v0, v1, e0, e1}, app_grid(v1 - v0, wg), wg);
        }
        app_coprocessor_exchange(g, c, acc);
    }
}

/* Runs the iterations; x holds this rank's ranks on return. */
static pr_result_t run(grain_t *g, const app_graph_t *graph, const pr_options_t *o, double *x,
                       app_coprocessor_t *coproc)
{
    const app_partition_t *p = &graph->part;
    uint64_t local_n = p->local_n, n = p->n;
    size_t rows = local_n ? local_n : 1;
    size_t wg = 256, global = app_vertex_grid(graph, wg), groups = global / wg;

    int64_t *acc, *share, *sums;
    double *dev_x;
    app_device_graph_t dg;
    app_check(grain_malloc(g, p->max_local_n * sizeof *acc, (void **)&acc), "allocating the accumulators");
    app_check(grain_mem_alloc(g, rows * sizeof *share, (void **)&share), "allocating the shares");
    app_check(grain_mem_alloc(g, 2 * groups * sizeof *sums, (void **)&sums), "allocating the step's sums");
    app_device_graph_upload(g, graph, 0, &dg);
    /* x holds local_n ranks: a rank without vertices has none to copy. */
    for (uint64_t v = 0; v < local_n; v++)
        x[v] = 1.0 / (double)n;
    dev_x = app_device_copy(g, x, local_n * sizeof *x);

    grain_program_t *prog;
    grain_kernel_t *pusher, *k;
    app_check(grain_program_create(g, pagerank_kernel_source, NULL, &prog), "building the pagerank kernels");
    char name[64];
    app_model_kernel_name(&o->model, "pr_push", name, sizeof name);
    app_check(grain_kernel_create(prog, name, &pusher), "creating the pagerank kernel");
    app_check(grain_kernel_create(prog, "pr_step", &k), "creating the pagerank kernel");
    app_kernel_ptrs(pusher, 1, 4, (void *const[]){acc, dg.offsets, dg.dest, share});
    uint64_t chunks = 0;
    if (coproc != NULL) {
        app_coprocessor_init(g, prog, &o->model, coproc);
        app_coprocessor_args(coproc, pusher, 9);
        chunks = (graph->local.edges + coproc->capacity - 1) / coproc->capacity;
        app_check(grain_allreduce(g, &chunks, 1, GRAIN_UINT64, GRAIN_MAX), "agreeing on the chunks");
    }
    app_kernel_ptrs(k, 1, 5, (void *const[]){acc, dev_x, dg.offsets, share, sums});
    double base = (1 - o->damping) / (double)n;
    app_check(grain_kernel_set_arg(k, 6, sizeof local_n, &local_n), "setting kernel arguments");
    app_check(grain_kernel_set_arg(k, 7, sizeof base, &base), "setting kernel arguments");
    app_check(grain_kernel_set_arg(k, 8, sizeof o->damping, &o->damping), "setting kernel arguments");

    int64_t *host_sums = app_malloc(2 * groups * sizeof *host_sums);
    int64_t *zeros = app_malloc(rows * sizeof *zeros);
    memset(zeros, 0, rows * sizeof *zeros);
    app_check(grain_memcpy(g, acc, zeros, rows * sizeof *acc), "zeroing the accumulators");

    pr_result_t r = {0};
    unsigned long long limit = o->iterations ? o->iterations : o->max_iterations;
    app_check(grain_barrier_all(g), "the barrier before the run");
    app_clock_t clock;
    app_clock_start(g, &clock);
    double sums_now[2]; /* change, dangling rank */
    step(g, k, global, wg, sums, host_sums, 0, 0, sums_now);
    /* Every rank has zeroed its accumulators and made its shares once the
     * sums are reduced, before any pushes. */
    app_check(grain_allreduce(g, sums_now, 2, GRAIN_DOUBLE, GRAIN_SUM), "reducing the dangling rank");
    while (r.iterations < limit) {
        push(g, pusher, &graph->local, local_n, global, wg, coproc, chunks, acc);
        app_check(grain_barrier_all(g), "grain_barrier_all after pagerank");
        step(g, k, global, wg, sums, host_sums, sums_now[1] / (double)n, 1, sums_now);
        app_check(grain_allreduce(g, sums_now, 2, GRAIN_DOUBLE, GRAIN_SUM), "reducing the change");
        if (pr_step_done(&r, o, sums_now[0], n))
            break;
    }
    r.timing = app_clock_stop(g, &clock);
    app_check(grain_memcpy(g, x, dev_x, local_n * sizeof *x), "reading the ranks");

    free(zeros);
    free(host_sums);
    grain_kernel_destroy(k);
    grain_kernel_destroy(pusher);
    grain_program_destroy(prog);
    app_device_graph_free(g, &dg);
    app_device_free(g, sums);
    app_device_free(g, dev_x);
    app_device_free(g, share);
    app_check(grain_free(g, acc), "freeing");
    return r;
}

int main(int argc, char **argv)
{
    pr_options_t o;
    grain_t *g = app_init(parse(argc, argv, &o));
    int me = grain_my_pe(g), npes = grain_n_pes(g);

    app_graph_t graph;
    o.input.heap_per_part_vertex = sizeof(int64_t); /* the accumulators */
    double tl = app_load_graph(g, "pagerank", &o.input, 0, &graph);
    double *x = app_malloc(graph.part.local_n * sizeof *x);
    app_model_check(g, "pagerank", &o.model);
    app_coprocessor_t cp, *coproc = app_model_is_coprocessor(&o.model) ? &cp : NULL;
    pr_result_t r = o.replicated ? pr_run_replicated(g, &graph, &o, x) : run(g, &graph, &o, x, coproc);

    /* The ideal agent moves no shares: its ranks are not PageRank. */
    int verifiable = !o.replicated || r.transfers.agent != GRAIN_AGENT_IDEAL || npes == 1;
    int verified = -1;
    double distance = 0;
    if (o.common.verify && verifiable) {
        double *ref = reference(&graph.all, o.damping, r.iterations);
        for (uint64_t k = 0; k < graph.part.local_n; k++)
            distance += fabs(x[k] - ref[graph.part.global_of[k]]);
        free(ref);
        app_check(grain_allreduce(g, &distance, 1, GRAIN_DOUBLE, GRAIN_SUM), "reducing the verification");
        verified = distance <= 1e-6;
    }
    int status = APP_EXIT_OK;
    if (o.common.out != NULL)
        status = app_write_values(g, "pagerank", graph.part.global_of, graph.part.local_n, graph.all.base, x,
                                  o.common.out);

    uint64_t n = graph.all.n, m = graph.all.count;
    if (me == 0 && !o.common.json) {
        printf("pagerank: %s, %llu vertices, %llu edges, %d rank%s (%s partition), %s on %s\n", graph.name,
               (unsigned long long)n, (unsigned long long)m, npes, app_plural(npes), app_scheme_name(o.input.scheme),
               grain_backend_name(g), grain_device_name(g));
        printf("%llu iterations%s in %.3f s, last change %.3g (", r.iterations,
               r.converged ? "" : " without converging", r.timing.seconds, r.last_error);
        if (o.replicated)
            printf("replicated, %s agent, chunks of %llu bytes, %llu chunk moves)\n",
                   grain_agent_name(r.transfers.agent),
                   (unsigned long long)r.transfers.chunk_bytes, (unsigned long long)r.transfers.moves);
        else
            printf("model %s)\n", app_model_names[o.model.model]);
        app_timing_print(stdout, &r.timing);
        if (verified >= 0)
            printf("verification: %s (L1 distance to the sequential run %.3g)\n", verified ? "passed" : "FAILED",
                   distance);
        else if (o.common.verify)
            printf("verification: skipped (the ideal agent moves no shares, so the ranks are not PageRank)\n");
    }
    FILE *out = app_json_begin(g, o.common.json, "pagerank");
    if (out != NULL) {
        fputc(',', out);
        app_graph_json(out, &graph);
        fprintf(out,
                ",\"verified\":%s,\"l1_distance\":%.3g,\"iterations\":%llu,\"converged\":%s,"
                "\"last_change\":%.6g,\"load_seconds\":%.6f,\"edges_per_second\":%.6g,",
                verified < 0 ? "null" : verified ? "true" : "false", distance, r.iterations,
                r.converged ? "true" : "false", r.last_error, tl, (double)m * (double)r.iterations / r.timing.seconds);
        app_timing_json(out, &r.timing);
        fprintf(out, ",\"model\":\"%s\"", app_model_names[o.model.model]);
        if (o.replicated) {
            fprintf(out, ",\"checksum\":%.17g,", r.checksum);
            app_region_json(out, &r.transfers);
        }
    }
    if (coproc != NULL) {
        app_coprocessor_json(g, out, coproc);
        app_coprocessor_free(g, coproc);
    }
    app_json_end(g, out);

    free(x);
    app_graph_free(&graph);
    /* Not converging within --max-iterations fails, as networkx raises. */
    return app_finish(g, status, verified == 0 || !r.converged ? 0 : 1);
}
