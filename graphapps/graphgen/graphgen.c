/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * graphgen: writes a graph the apps read, a Kronecker graph from its scale
 * and seed or any input file, for other tools (networkx in the tests, the
 * GAP Benchmark Suite) to see exactly the edges grain sees.  FILE.mtx is
 * Matrix Market (coordinate real general, ids from 1), which keeps vertices
 * without edges; any other name is an edge list, "u v w" per line with ids
 * from 0, whose readers count vertices only up to the largest id in it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/graph_app.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: graphgen (--graph FILE | --kronecker S[,E] [--seed N]) [--undirected] [--unweighted] --out FILE\n"
                 "  --unweighted  write \"u v\" lines (the apps then read unit weights)\n");
    app_input_usage(out);
}

typedef struct graphgen_options {
    const char *out;
    int unweighted;
} graphgen_options_t;

enum { GEN_OUT, GEN_UNWEIGHTED };

static void take(void *state, int key, const char *option, const char *value)
{
    graphgen_options_t *o = state;
    if (key == GEN_OUT)
        o->out = value;
    else
        o->unweighted = 1;
}

int main(int argc, char **argv)
{
    static const cli_option_t options[] = {{"out", 1, GEN_OUT}, {"unweighted", 0, GEN_UNWEIGHTED}};
    app_input_t in;
    app_input_defaults(&in);
    graphgen_options_t o = {0};
    const cli_group_t groups[] = {CLI_GROUP(options, take, &o), app_input_group(&in)};
    cli_parse("graphgen", argc, argv, groups, 2, 0, usage);
    const char *out = o.out;
    int unweighted = o.unweighted;
    app_input_check("graphgen", &in);
    if (out == NULL) {
        fprintf(stderr, "graphgen: --out FILE is required\n");
        return APP_EXIT_ERROR;
    }
    app_error_t err;
    app_edges_t e;
    app_cache_t cache = {.dir = in.cache_dir, .max_bytes = in.cache_max};
    int rc = in.graph != NULL ? app_read_graph(in.graph, in.undirected, &cache, NULL, &e, &err)
                              : app_kronecker(in.kron_scale, in.kron_factor, in.seed, NULL, &e, &err);
    if (rc != 0) {
        fprintf(stderr, "graphgen: %s\n", err.msg);
        return APP_EXIT_ERROR;
    }
    FILE *f = fopen(out, "w");
    if (f == NULL) {
        perror(out);
        app_edges_free(&e);
        return APP_EXIT_ERROR;
    }
    /* Every edge as listed: undirected graphs already list both ways. */
    size_t len = strlen(out);
    int mtx = len >= 4 && strcmp(out + len - 4, ".mtx") == 0;
    unsigned long long base = mtx ? 1 : 0;
    if (mtx)
        fprintf(f, "%%%%MatrixMarket matrix coordinate %s general\n%llu %llu %zu\n", unweighted ? "pattern" : "real",
                (unsigned long long)e.n, (unsigned long long)e.n, e.count);
    for (size_t i = 0; i < e.count; i++) {
        unsigned long long u = e.edges[i].u + base, v = e.edges[i].v + base;
        if (unweighted)
            fprintf(f, "%llu %llu\n", u, v);
        else
            fprintf(f, "%llu %llu %.17g\n", u, v, e.edges[i].w);
    }
    int bad = ferror(f) | (fclose(f) != 0);
    if (bad)
        fprintf(stderr, "graphgen: %s: write error\n", out);
    else
        fprintf(stderr, "graphgen: %llu vertices, %zu edges to %s\n", (unsigned long long)e.n, e.count, out);
    app_edges_free(&e);
    return bad ? APP_EXIT_ERROR : APP_EXIT_OK;
}
