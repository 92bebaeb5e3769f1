/* SPDX-License-Identifier: BSD-3-Clause */
#include "partition.h"
#include "app.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int app_scheme_parse(const char *name, app_scheme_t *scheme)
{
    if (strcmp(name, "block") == 0)
        *scheme = APP_PART_BLOCK;
    else if (strcmp(name, "hash") == 0)
        *scheme = APP_PART_HASH;
    else
        return -1;
    return 0;
}

const char *app_scheme_name(app_scheme_t scheme)
{
    return scheme == APP_PART_BLOCK ? "block" : "hash";
}

static int no_memory(app_error_t *err, const char *what, uint64_t count)
{
    snprintf(err->msg, sizeof err->msg, "no memory for %s (%llu entries)", what, (unsigned long long)count);
    return -1;
}

int app_partition_init(app_partition_t *p, app_scheme_t scheme, uint64_t n, unsigned ranks, unsigned rank,
                       app_error_t *err)
{
    /* A chunk of at least 1 keeps app_owner defined for an empty graph. */
    *p = (app_partition_t){scheme, n, ranks, rank, n ? (n + ranks - 1) / ranks : 1, NULL, 0, 0, NULL};
    if (scheme == APP_PART_BLOCK) {
        uint64_t first;
        app_block(n, ranks, rank, &first, &p->local_n);
        p->max_local_n = p->chunk;
    } else {
        uint64_t *count = calloc(ranks, sizeof *count);
        p->local_of = malloc((n ? n : 1) * sizeof *p->local_of);
        if (count == NULL || p->local_of == NULL) {
            free(count);
            app_partition_free(p);
            return no_memory(err, "the vertices' local indices", n);
        }
        for (uint64_t v = 0; v < n; v++)
            p->local_of[v] = count[app_owner(p, v)]++;
        for (unsigned r = 0; r < ranks; r++)
            p->max_local_n = count[r] > p->max_local_n ? count[r] : p->max_local_n;
        p->local_n = count[rank];
        free(count);
    }
    p->global_of = malloc((p->local_n ? p->local_n : 1) * sizeof *p->global_of);
    if (p->global_of == NULL) {
        app_partition_free(p);
        return no_memory(err, "the owned vertices", p->local_n);
    }
    for (uint64_t v = 0, k = 0; v < n && k < p->local_n; v++)
        if (app_owner(p, v) == rank)
            p->global_of[k++] = v;
    return 0;
}

void app_partition_free(app_partition_t *p)
{
    free(p->local_of);
    free(p->global_of);
    p->local_of = p->global_of = NULL;
}

int app_local_graph_build(const app_partition_t *p, const app_edges_t *e, app_local_graph_t *g, app_error_t *err)
{
    *g = (app_local_graph_t){0};
    g->offsets = calloc(p->local_n + 1, sizeof *g->offsets);
    if (g->offsets == NULL)
        return no_memory(err, "the edge offsets", p->local_n + 1);
    for (size_t i = 0; i < e->count; i++)
        if (app_owner(p, e->edges[i].u) == p->rank)
            g->offsets[app_local_index(p, e->edges[i].u) + 1]++;
    for (uint64_t k = 0; k < p->local_n; k++)
        g->offsets[k + 1] += g->offsets[k];
    g->edges = g->offsets[p->local_n];
    g->dest = malloc((g->edges ? g->edges : 1) * sizeof *g->dest);
    g->target = malloc((g->edges ? g->edges : 1) * sizeof *g->target);
    g->weight = malloc((g->edges ? g->edges : 1) * sizeof *g->weight);
    uint64_t *fill = malloc((p->local_n ? p->local_n : 1) * sizeof *fill);
    if (g->dest == NULL || g->target == NULL || g->weight == NULL || fill == NULL) {
        free(fill);
        app_local_graph_free(g);
        return no_memory(err, "this rank's edges", g->edges);
    }
    memcpy(fill, g->offsets, p->local_n * sizeof *fill);
    /* In input order within each vertex: the same graph gives the same
     * message order whatever the rank count. */
    for (size_t i = 0; i < e->count; i++) {
        const app_edge_t *x = &e->edges[i];
        if (app_owner(p, x->u) != p->rank)
            continue;
        uint64_t slot = fill[app_local_index(p, x->u)]++;
        g->dest[slot] = APP_DEST(app_owner(p, x->v), app_local_index(p, x->v));
        g->target[slot] = x->v;
        g->weight[slot] = x->w;
    }
    free(fill);
    return 0;
}

void app_local_graph_free(app_local_graph_t *g)
{
    free(g->offsets);
    free(g->dest);
    free(g->target);
    free(g->weight);
    *g = (app_local_graph_t){0};
}
