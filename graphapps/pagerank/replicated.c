/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replicated PageRank (ProACT's multi-GPU PageRank): every rank holds the
 * whole vector of shares, x[u] / outdeg(u) in fixed point, in two regions
 * read and written in turn, and owns a slice of the vertices, which it
 * computes from their in-edges (replicated.cl).  The new slice is the
 * region's one segment, to every other rank: chunks of it move while the
 * rest of the slice is computed (--agent), where the push formulation sends
 * a message per edge.
 *
 * The slices are contiguous and hold about as many in-edges plus vertices
 * each.  Every rank builds them, and its slice's in-edges, from the whole
 * edge list, which it holds anyway (app_graph_t.all).
 */
#include <stdlib.h>
#include <string.h>

#include "pagerank.h"

extern const char pagerank_replicated_kernel_source[];

#define WG 256u

/* Vertices [lo, hi) of this rank and their in-edges; the out-degree of every vertex. */
typedef struct pr_slice {
    uint64_t lo, hi;
    uint64_t *in_offsets; /* hi - lo + 1 */
    uint64_t *in_src;     /* the sources of each vertex's in-edges, global ids */
    uint64_t *degree;     /* out-degree, every vertex (and a 0 after the last) */
} pr_slice_t;

/* Rank r's slice starts at the first vertex whose prefix of in-edges plus
 * vertices reaches r / ranks of the total: hubs do not leave one rank with
 * most of the edges. */
static pr_slice_t slice(const app_edges_t *all, unsigned ranks, unsigned rank)
{
    uint64_t n = all->n;
    pr_slice_t s = {0};
    uint64_t *in_degree = app_malloc((n + 1) * sizeof *in_degree);
    /* One word past the last vertex: a rank without vertices uploads one. */
    s.degree = app_malloc((n + 1) * sizeof *s.degree);
    memset(in_degree, 0, (n + 1) * sizeof *in_degree);
    memset(s.degree, 0, (n + 1) * sizeof *s.degree);
    for (size_t i = 0; i < all->count; i++) {
        s.degree[all->edges[i].u]++;
        in_degree[all->edges[i].v]++;
    }
    /* cut(r): the first vertex of rank r's slice. */
    double total = (double)all->count + (double)n;
    uint64_t v = 0, weight = 0, bounds[2];
    for (unsigned k = 0; k < 2; k++) {
        double target = total * (double)(rank + k) / (double)ranks;
        while (v < n && (double)weight < target)
            weight += in_degree[v++] + 1;
        bounds[k] = rank + k == ranks ? n : v;
    }
    s.lo = bounds[0];
    s.hi = bounds[1];
    uint64_t count = s.hi - s.lo;
    s.in_offsets = app_malloc((count + 1) * sizeof *s.in_offsets);
    s.in_offsets[0] = 0;
    for (uint64_t i = 0; i < count; i++)
        s.in_offsets[i + 1] = s.in_offsets[i] + in_degree[s.lo + i];
    s.in_src = app_malloc((s.in_offsets[count] ? s.in_offsets[count] : 1) * sizeof *s.in_src);
    /* in_degree becomes each vertex's next free place: sources in edge order. */
    for (uint64_t i = 0; i < count; i++)
        in_degree[s.lo + i] = s.in_offsets[i];
    for (size_t i = 0; i < all->count; i++) {
        uint64_t t = all->edges[i].v;
        if (t >= s.lo && t < s.hi)
            s.in_src[in_degree[t]++] = all->edges[i].u;
    }
    free(in_degree);
    return s;
}

static void slice_free(pr_slice_t *s)
{
    free(s->in_offsets);
    free(s->in_src);
    free(s->degree);
}

/* The regions' description: this rank's slice of shares, to every other
 * rank, a work-group's WG shares at a time. */
static grain_region_desc_t shares_region(const pr_options_t *o, uint64_t n, const pr_slice_t *s, size_t groups,
                                         grain_segment_t *seg)
{
    *seg = (grain_segment_t){.offset = s->lo * 8, .size = (s->hi - s->lo) * 8, .dest = GRAIN_REGION_PEERS};
    return (grain_region_desc_t){
        .size = (size_t)(n * 8),
        .map = {.kind = GRAIN_MAP_CONTIGUOUS, .groups = groups, .offset = s->lo * 8, .bytes = WG * 8},
        .segments = seg,
        .n_segments = s->hi > s->lo, /* a rank without vertices only receives */
        .agent = o->agent,
        .name = "pagerank",
    };
}

/* Collective: every vertex's rank on every rank (each slice summed with the
 * others' zeros, exact), this rank's in part order into x, and the
 * checksum. */
static double gather(grain_t *g, const app_graph_t *graph, const pr_slice_t *s, const double *mine, double *x)
{
    uint64_t n = graph->part.n;
    double *all = app_malloc((n ? n : 1) * sizeof *all);
    memset(all, 0, (n ? n : 1) * sizeof *all);
    memcpy(all + s->lo, mine, (s->hi - s->lo) * sizeof *all);
    app_check(grain_allreduce(g, all, n, GRAIN_DOUBLE, GRAIN_SUM), "gathering the ranks");
    for (uint64_t k = 0; k < graph->part.local_n; k++)
        x[k] = all[graph->part.global_of[k]];
    double checksum = 0;
    for (uint64_t v = 0; v < n; v++)
        checksum += all[v] * (double)(v % 97 + 1);
    free(all);
    return checksum;
}

pr_result_t pr_run_replicated(grain_t *g, const app_graph_t *graph, const pr_options_t *o, double *x)
{
    uint64_t n = graph->part.n;
    pr_slice_t s = slice(&graph->all, (unsigned)grain_n_pes(g), (unsigned)grain_my_pe(g));
    uint64_t count = s.hi - s.lo;
    size_t global = app_grid(count, WG), groups = global / WG;

    /* Everyone starts at 1/n: the shares of the whole vector and the dangling rank. */
    int64_t *share0 = app_malloc((n ? n : 1) * sizeof *share0), dangling_fixed = 0;
    for (uint64_t v = 0; v < n; v++) {
        share0[v] = s.degree[v] ? pr_fixed(1.0 / (double)n / (double)s.degree[v]) : 0;
        dangling_fixed += s.degree[v] ? 0 : pr_fixed(1.0 / (double)n);
    }
    grain_segment_t seg;
    grain_region_desc_t desc = shares_region(o, n, &s, groups, &seg);
    grain_region_t *region[2];
    for (int i = 0; i < 2; i++)
        app_check(grain_region_create(g, &desc, &region[i]), "creating the share regions");
    app_check(grain_memcpy(g, grain_region_data(region[0]), share0, n * sizeof *share0), "copying the shares");
    free(share0);

    double *mine = app_malloc((count ? count : 1) * sizeof *mine);
    for (uint64_t i = 0; i < count; i++)
        mine[i] = 1.0 / (double)n;
    double *dev_x = app_device_copy(g, mine, (count ? count : 1) * sizeof *mine);
    uint64_t *in_offsets = app_device_copy(g, s.in_offsets, (count + 1) * sizeof *s.in_offsets);
    uint64_t *in_src = app_device_copy(g, s.in_src, (s.in_offsets[count] ? s.in_offsets[count] : 1) * sizeof *in_src);
    uint64_t *degree = app_device_copy(g, s.degree + s.lo, (count ? count : 1) * sizeof *degree);
    int64_t *sums, *host_sums = app_malloc(2 * groups * sizeof *host_sums);
    app_check(grain_mem_alloc(g, 2 * groups * sizeof *sums, (void **)&sums), "allocating the step's sums");

    grain_program_t *prog;
    grain_kernel_t *k;
    app_check(grain_program_create(g, pagerank_replicated_kernel_source, NULL, &prog), "building the pull kernel");
    app_check(grain_kernel_create(prog, "pr_pull", &k), "creating the pull kernel");
    app_kernel_ptrs(k, 3, 5, (void *const[]){dev_x, in_offsets, in_src, degree, sums});
    double base = (1 - o->damping) / (double)n;
    uint64_t slice_args[2] = {s.lo, count};
    for (unsigned i = 0; i < 2; i++)
        app_check(grain_kernel_set_arg(k, 8 + i, sizeof slice_args[i], &slice_args[i]), "setting kernel arguments");
    app_check(grain_kernel_set_arg(k, 10, sizeof base, &base), "setting kernel arguments");
    app_check(grain_kernel_set_arg(k, 11, sizeof o->damping, &o->damping), "setting kernel arguments");

    pr_result_t r = {0};
    unsigned long long limit = o->iterations ? o->iterations : o->max_iterations;
    app_check(grain_barrier_all(g), "the barrier before the run");
    app_clock_t clock;
    app_clock_start(g, &clock);
    while (r.iterations < limit) {
        grain_region_t *in = region[r.iterations % 2], *out = region[(r.iterations + 1) % 2];
        double dangling_each = (double)dangling_fixed / FIXED_ONE / (double)n;
        app_check(grain_kernel_set_arg_region(k, 1, in), "setting kernel arguments");
        app_check(grain_kernel_set_arg_region(k, 2, out), "setting kernel arguments");
        app_check(grain_kernel_set_arg(k, 12, sizeof dangling_each, &dangling_each), "setting kernel arguments");
        app_check(grain_region_begin(out), "arming the transfer agent");
        app_check(grain_launch(k, 1, &global, (const size_t[]){WG}), "launching the pull step");
        app_check(grain_region_end(out), "finishing the step's transfers");
        int64_t total[2]; /* change, dangling rank */
        app_group_sums(g, sums, groups, 2, host_sums, total);
        app_check(grain_allreduce(g, total, 2, GRAIN_INT64, GRAIN_SUM), "reducing the change");
        dangling_fixed = total[1];
        if (pr_step_done(&r, o, (double)total[0] / FIXED_ONE, n))
            break;
    }
    r.timing = app_clock_stop(g, &clock);

    app_check(grain_memcpy(g, mine, dev_x, count * sizeof *mine), "reading the ranks");
    r.checksum = gather(g, graph, &s, mine, x);
    app_region_totals(g, region, 2, &r.transfers);

    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    for (int i = 0; i < 2; i++)
        grain_region_destroy(region[i]);
    app_device_free(g, sums);
    app_device_free(g, degree);
    app_device_free(g, in_src);
    app_device_free(g, in_offsets);
    app_device_free(g, dev_x);
    free(host_sums);
    free(mine);
    slice_free(&s);
    return r;
}
