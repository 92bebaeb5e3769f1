/* SPDX-License-Identifier: BSD-3-Clause */
/* The simple undirected graph under any input, for apps whose answer
 * depends only on adjacency (coloring). */
#include <stdio.h>
#include <stdlib.h>

#include "graph.h"

static int by_ends(const void *a, const void *b)
{
    const app_edge_t *x = a, *y = b;
    if (x->u != y->u)
        return x->u < y->u ? -1 : 1;
    return x->v < y->v ? -1 : x->v > y->v;
}

int app_edges_make_simple_undirected(app_edges_t *e, app_error_t *err)
{
    size_t kept = 0;
    for (size_t i = 0; i < e->count; i++)
        kept += e->edges[i].u != e->edges[i].v;
    app_edge_t *both = malloc((kept ? 2 * kept : 1) * sizeof *both);
    if (both == NULL) {
        snprintf(err->msg, sizeof err->msg, "no memory for the undirected graph (%zu edges)", 2 * kept);
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < e->count; i++) {
        app_edge_t x = e->edges[i];
        if (x.u == x.v)
            continue;
        both[n++] = (app_edge_t){x.u, x.v, 1};
        both[n++] = (app_edge_t){x.v, x.u, 1};
    }
    qsort(both, n, sizeof *both, by_ends);
    size_t unique = 0;
    for (size_t i = 0; i < n; i++)
        if (unique == 0 || by_ends(&both[unique - 1], &both[i]) != 0)
            both[unique++] = both[i];
    free(e->edges);
    e->edges = both;
    e->count = unique;
    e->cap = n ? n : 1;
    e->weighted = 0;
    e->undirected = 1;
    return 0;
}
