/* SPDX-License-Identifier: BSD-3-Clause */
#include "graph_app.h"

#include <stdlib.h>
#include <string.h>

void app_input_defaults(app_input_t *in)
{
    static char dir[4096];
    *in = (app_input_t){.kron_factor = 16, .seed = 1, .scheme = APP_PART_BLOCK};
    const char *env = getenv("GRAIN_GRAPH_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (env != NULL && env[0] != '\0')
        snprintf(dir, sizeof dir, "%s", env);
    else if (xdg != NULL && xdg[0] != '\0')
        snprintf(dir, sizeof dir, "%s/grain", xdg);
    else if (home != NULL && home[0] != '\0')
        snprintf(dir, sizeof dir, "%s/.cache/grain", home);
    in->cache_dir = dir[0] != '\0' ? dir : NULL;
    const char *max = getenv("GRAIN_GRAPH_CACHE_MAX");
    in->cache_max = max != NULL && max[0] != '\0' ? cli_bytes("GRAIN_GRAPH_CACHE_MAX", max)
                                                   : APP_CACHE_MAX_DEFAULT;
}

static void parse_kronecker(app_input_t *in, const char *text)
{
    char *end;
    unsigned long scale = strtoul(text, &end, 10), factor = 16;
    if (end != text && *end == ',')
        factor = strtoul(end + 1, &end, 10);
    if (end == text || *end != '\0' || text[0] == '-' || scale == 0 || factor == 0) {
        fprintf(stderr, "--kronecker: \"%s\" is not SCALE or SCALE,EDGEFACTOR\n", text);
        exit(APP_EXIT_ERROR);
    }
    in->kron_scale = (unsigned)(scale > 64 ? 64 : scale);
    in->kron_factor = (unsigned)(factor > 1u << 20 ? 1u << 20 : factor);
}

enum { INPUT_GRAPH, INPUT_KRONECKER, INPUT_SEED, INPUT_UNDIRECTED, INPUT_PARTITION, INPUT_CACHE_DIR,
       INPUT_CACHE_MAX, INPUT_NO_CACHE };

static void take_input(void *state, int key, const char *option, const char *value)
{
    app_input_t *in = state;
    switch (key) {
    case INPUT_GRAPH: in->graph = value; break;
    case INPUT_KRONECKER: parse_kronecker(in, value); break;
    case INPUT_SEED: in->seed = cli_u64(option, value); break;
    case INPUT_UNDIRECTED: in->undirected = 1; break;
    case INPUT_CACHE_DIR: in->cache_dir = value; break;
    case INPUT_CACHE_MAX: in->cache_max = cli_bytes(option, value); break;
    case INPUT_NO_CACHE: in->cache_dir = NULL; break;
    default:
        if (app_scheme_parse(value, &in->scheme) != 0) {
            fprintf(stderr, "--partition: \"%s\" is not block or hash\n", value);
            exit(APP_EXIT_ERROR);
        }
    }
}

cli_group_t app_input_group(app_input_t *in)
{
    static const cli_option_t options[] = {
        {"graph", 1, INPUT_GRAPH},         {"kronecker", 1, INPUT_KRONECKER}, {"seed", 1, INPUT_SEED},
        {"undirected", 0, INPUT_UNDIRECTED}, {"partition", 1, INPUT_PARTITION}, {"cache-dir", 1, INPUT_CACHE_DIR},
        {"cache-max", 1, INPUT_CACHE_MAX}, {"no-cache", 0, INPUT_NO_CACHE}};
    return CLI_GROUP(options, take_input, in);
}

void app_input_usage(FILE *out)
{
    fprintf(out,
            "input (one of --graph and --kronecker):\n"
            "  --graph FILE        Matrix Market (.mtx) or edge list (\"u v [weight]\" per line, ids from 0)\n"
            "  --kronecker S[,E]   Graph500 Kronecker graph: 2^S vertices, E x 2^S undirected edges (E: 16)\n"
            "  --seed N            the Kronecker graph's seed (1)\n"
            "  --undirected        read an edge list's edges both ways\n"
            "  --partition block|hash  vertices over ranks (block)\n"
            "  --cache-dir DIR     binary cache of parsed files of 1 MiB and more\n"
            "                      ($GRAIN_GRAPH_CACHE, else ~/.cache/grain); remove it to clear it\n"
            "  --cache-max BYTES   the cache's files stay within this, least recently used out first\n"
            "                      ($GRAIN_GRAPH_CACHE_MAX, else 4G; K, M, G suffixes)\n"
            "  --no-cache          neither read nor write the cache\n");
}

void app_input_check(const char *app, const app_input_t *in)
{
    if ((in->graph != NULL) == (in->kron_scale != 0)) {
        fprintf(stderr, "%s: give one input: --graph FILE or --kronecker SCALE[,EDGEFACTOR]\n", app);
        exit(APP_EXIT_ERROR);
    }
}

int app_graph_load(const app_input_t *in, unsigned ranks, unsigned rank, int flags, const app_limit_t *limit,
                   app_graph_t *g, app_error_t *err)
{
    memset(g, 0, sizeof *g);
    int rc;
    if (in->graph != NULL) {
        snprintf(g->name, sizeof g->name, "%s", in->graph);
        app_cache_t cache = {.dir = in->cache_dir, .max_bytes = in->cache_max};
        rc = app_read_graph(in->graph, in->undirected, &cache, limit, &g->all, err);
        if (rank == 0 && cache.stored[0] != '\0')
            fprintf(stderr, "note: %s parsed into the graph cache: %s, %.1f MiB; later runs load it (--no-cache: "
                            "not; the cache stays within --cache-max %.1f GiB; remove the file or %s to clear it)\n",
                    in->graph, cache.stored, (double)cache.stored_bytes / (1 << 20),
                    (double)in->cache_max / (1u << 30), in->cache_dir);
    } else {
        snprintf(g->name, sizeof g->name, "kronecker-%u-%u-%llu", in->kron_scale, in->kron_factor, in->seed);
        rc = app_kronecker(in->kron_scale, in->kron_factor, in->seed, limit, &g->all, err);
    }
    if (rc == 0 && (flags & APP_LOAD_UNDIRECTED))
        rc = app_edges_make_simple_undirected(&g->all, err);
    if (rc == 0)
        rc = app_check_not_empty(&g->all, g->name, err);
    if (rc == 0)
        rc = app_partition_init(&g->part, in->scheme, g->all.n, ranks, rank, err);
    if (rc == 0)
        rc = app_local_graph_build(&g->part, &g->all, &g->local, err);
    if (rc != 0)
        app_graph_free(g);
    return rc;
}

/* The most vertices whose heap arrays fit what is left of the heap: n per
 * vertex and n / ranks per vertex of a part (a lower bound of the need under
 * any partition, so that nothing that fits is refused). */
static void heap_limit(grain_t *grain, const char *app, const app_input_t *in, app_limit_t *limit)
{
    uint64_t avail;
    app_check(grain_heap_available(grain, &avail), "asking for the heap left");
    double ranks = grain_n_pes(grain);
    double per_vertex = (double)in->heap_per_vertex + (double)in->heap_per_part_vertex / ranks;
    double fit = (double)avail / per_vertex;
    limit->max_n = fit >= 0x1p63 ? UINT64_MAX : (uint64_t)fit;
    char cost[96] = "";
    if (in->heap_per_vertex != 0)
        snprintf(cost, sizeof cost, "%llu bytes a vertex", (unsigned long long)in->heap_per_vertex);
    if (in->heap_per_part_vertex != 0)
        snprintf(cost + strlen(cost), sizeof cost - strlen(cost), "%s%llu bytes a vertex of a rank's part",
                 cost[0] ? " and " : "", (unsigned long long)in->heap_per_part_vertex);
    snprintf(limit->why, sizeof limit->why,
             "%s fits %llu (%s) in the %llu bytes left of each rank's symmetric heap on %d rank(s): raise "
             "--heap-size or run more ranks",
             app, (unsigned long long)limit->max_n, cost, (unsigned long long)avail, grain_n_pes(grain));
}

double app_load_graph(grain_t *grain, const char *app, const app_input_t *in, int flags, app_graph_t *g)
{
    app_error_t err;
    app_limit_t limit;
    double t0 = app_seconds();
    int heap_bound = in->heap_per_vertex != 0 || in->heap_per_part_vertex != 0;
    if (heap_bound)
        heap_limit(grain, app, in, &limit);
    if (app_graph_load(in, (unsigned)grain_n_pes(grain), (unsigned)grain_my_pe(grain), flags,
                       heap_bound ? &limit : NULL, g, &err) != 0)
        app_fail(grain, app, err.msg);
    return app_seconds() - t0;
}

void app_graph_free(app_graph_t *g)
{
    app_local_graph_free(&g->local);
    app_partition_free(&g->part);
    app_edges_free(&g->all);
}

void app_device_graph_upload(grain_t *grain, const app_graph_t *g, int what, app_device_graph_t *d)
{
    const app_local_graph_t *lg = &g->local;
    *d = (app_device_graph_t){0};
    d->offsets = app_device_copy(grain, lg->offsets, (g->part.local_n + 1) * sizeof *d->offsets);
    d->dest = app_device_copy(grain, lg->dest, lg->edges * sizeof *d->dest);
    if (what & APP_UPLOAD_WEIGHTS)
        d->weight = app_device_copy(grain, lg->weight, lg->edges * sizeof *d->weight);
    if (what & APP_UPLOAD_TARGETS)
        d->target = app_device_copy(grain, lg->target, lg->edges * sizeof *d->target);
}

void app_device_graph_free(grain_t *grain, app_device_graph_t *d)
{
    app_device_free(grain, d->target);
    app_device_free(grain, d->weight);
    app_device_free(grain, d->dest);
    app_device_free(grain, d->offsets);
    *d = (app_device_graph_t){0};
}

size_t app_vertex_grid(const app_graph_t *g, size_t wg)
{
    return app_grid(g->part.max_local_n, wg);
}

void app_graph_json(FILE *out, const app_graph_t *g)
{
    fputs("\"graph\":\"", out);
    for (const char *c = g->name; *c; c++) { /* a path may hold quotes or backslashes */
        if (*c == '"' || *c == '\\')
            fputc('\\', out);
        fputc((unsigned char)*c < 0x20 ? '?' : *c, out);
    }
    fprintf(out, "\",\"vertices\":%llu,\"edges\":%llu,\"partition\":\"%s\"", (unsigned long long)g->all.n,
            (unsigned long long)g->all.count, app_scheme_name(g->part.scheme));
}

static void take_vertex(void *state, int key, const char *option, const char *value)
{
    app_vertex_options_t *o = state;
    o->vertex = cli_u64(option, value);
    o->vertex_given = 1;
}

grain_config_t *app_parse_vertex_app(int argc, char **argv, const char *app, const char *vertex_option,
                                     void (*usage)(FILE *out), app_vertex_options_t *o)
{
    grain_config_t *config = app_config();
    *o = (app_vertex_options_t){0};
    app_input_defaults(&o->input);
    const cli_option_t vertex[] = {{vertex_option + 2, 1, 0}}; /* "--source": source */
    const cli_group_t groups[] = {CLI_GROUP(vertex, take_vertex, o), app_input_group(&o->input)};
    app_parse_options(app, argc, argv, groups, 2, &o->common, config, usage);
    app_input_check(app, &o->input);
    return config;
}

int app_vertex_of(const app_graph_t *g, const app_vertex_options_t *o, const char *vertex_option, uint64_t *v,
                  app_error_t *err)
{
    const app_edges_t *e = &g->all;
    uint64_t x = o->vertex_given ? o->vertex : e->base;
    if (x < e->base || x - e->base >= e->n) {
        snprintf(err->msg, sizeof err->msg, "%s: %s %llu is not a vertex (ids %llu to %llu)", g->name, vertex_option,
                 (unsigned long long)x, (unsigned long long)e->base, (unsigned long long)(e->n - 1 + e->base));
        return -1;
    }
    *v = x - e->base;
    return 0;
}
