/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the input parsers.  The first byte picks the reader
 * (Matrix Market, directed or undirected edge list, k-means points,
 * FASTA/FASTQ reads, the graph cache's checks, the graph cache loaded from
 * its file by app_read_graph); the rest is the file.
 * Every input must either parse into edges that respect the graph's
 * invariants or fail with a message: a crash, a sanitizer report, a leak or
 * a broken invariant is a bug.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphapps/common/graph.h"
#include "graphapps/common/graph_cache.h"
#include "graphapps/common/points.h"
#include "graphapps/common/reads.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether `e` is a graph the apps may index: ids below n, real weights. */
static int sound(const app_edges_t *e)
{
    for (size_t i = 0; i < e->count; i++)
        if (e->edges[i].u >= e->n || e->edges[i].v >= e->n || e->edges[i].w != e->edges[i].w)
            return 0;
    return 1;
}

/* The cache file of a source graph big enough to be cached (1 MiB, most
 * of it a comment), made once: its path and its header as written. */
static struct {
    char dir[256], source[320], cache[640];
    app_cache_header_t header;
} cached;

static int make_cached_source(void)
{
    if (cached.cache[0] != '\0')
        return 0;
    const char *tmp = getenv("TMPDIR");
    snprintf(cached.dir, sizeof cached.dir, "%s/grain-fuzz-cache-XXXXXX", tmp != NULL ? tmp : "/tmp");
    if (mkdtemp(cached.dir) == NULL)
        return -1;
    snprintf(cached.source, sizeof cached.source, "%s/source.el", cached.dir);
    FILE *f = fopen(cached.source, "w");
    if (f == NULL)
        return -1;
    fputc('#', f);
    for (int i = 0; i < 1 << 20; i++)
        fputc('x', f);
    fputs("\n0 1\n1 2\n2 0\n", f);
    fclose(f);
    app_edges_t e;
    app_error_t err = {{0}};
    app_cache_t cache = {.dir = cached.dir, .max_bytes = APP_CACHE_MAX_DEFAULT};
    if (app_read_graph(cached.source, 0, &cache, NULL, &e, &err) != 0)
        return -1;
    app_edges_free(&e);
    DIR *d = opendir(cached.dir);
    for (struct dirent *ent; d != NULL && (ent = readdir(d)) != NULL;)
        if (strstr(ent->d_name, ".gcache") != NULL)
            snprintf(cached.cache, sizeof cached.cache, "%s/%s", cached.dir, ent->d_name);
    if (d != NULL)
        closedir(d);
    f = cached.cache[0] != '\0' ? fopen(cached.cache, "rb") : NULL;
    int ok = f != NULL && fread(&cached.header, sizeof cached.header, 1, f) == 1;
    if (f != NULL)
        fclose(f);
    return ok ? 0 : -1;
}

/* The input becomes the source's cache file: the fields that tie it to the
 * source as written (so that the loader reads on), then the rest of the
 * header and the edges from the input.  app_read_graph must return that
 * graph if it passes the checks, else the source parsed again: a sound
 * graph either way. */
static void load_cache_file(const uint8_t *data, size_t size)
{
    if (make_cached_source() != 0)
        abort();
    app_cache_header_t h = cached.header;
    size_t tail = offsetof(app_cache_header_t, n), len = size - 1;
    size_t fields = len < sizeof h - tail ? len : sizeof h - tail;
    memcpy((char *)&h + tail, data + 1, fields);
    const uint8_t *rest = data + 1 + fields;
    size_t rest_len = len - fields;
    if (data[0] >= 128 && rest_len % sizeof(app_edge_t) == 0) {
        app_edge_t *edges = malloc(rest_len + 1); /* aligned, as the loader's */
        memcpy(edges, rest, rest_len);
        h.checksum = app_cache_checksum(&h, edges, rest_len / sizeof(app_edge_t));
        free(edges);
    }
    FILE *f = fopen(cached.cache, "wb");
    if (f == NULL || fwrite(&h, sizeof h, 1, f) != 1 || fwrite(rest, 1, rest_len, f) != rest_len)
        abort();
    fclose(f);
    app_limit_t limit = {1u << 20, "the fuzz target's limit"};
    app_edges_t e;
    app_error_t err = {{0}};
    app_cache_t cache = {.dir = cached.dir, .max_bytes = APP_CACHE_MAX_DEFAULT};
    if (app_read_graph(cached.source, 0, &cache, &limit, &e, &err) != 0) {
        if (err.msg[0] == '\0' || e.edges != NULL)
            abort();
        return;
    }
    if (!sound(&e))
        abort();
    app_edges_free(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned mode = data[0] % 7;
    if (mode == 6) {
        load_cache_file(data, size);
        return 0;
    }
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    app_edges_t e;
    app_error_t err = {{0}};
    if (mode == 5) {
        /* A cache file.  A first byte of 128 or more seals it with its
         * checksum, so that the checks behind the checksum are reached. */
        app_cache_header_t h;
        if (len < sizeof h)
            return 0;
        memcpy(&h, text, sizeof h);
        size_t count = (len - sizeof h) / sizeof(app_edge_t);
        app_edge_t *edges = malloc(count * sizeof *edges + 1);
        memcpy(edges, text + sizeof h, count * sizeof *edges);
        if (data[0] >= 128)
            h.checksum = app_cache_checksum(&h, edges, count);
        if (app_cache_check(&h, edges, count, &err) == 0) {
            /* Ids index arrays of n, as the apps do: ASan reports any the
             * checks let through. */
            unsigned char *seen = h.n <= 1u << 16 ? calloc(h.n ? h.n : 1, 1) : NULL;
            for (size_t i = 0; seen != NULL && i < count; i++)
                seen[edges[i].u] = seen[edges[i].v] = 1;
            free(seen);
        } else if (err.msg[0] == '\0') {
            abort();
        }
        free(edges);
        return 0;
    }
    if (mode == 4) {
        app_reads_t r;
        if (app_parse_reads(text, len, "fuzz.fq", &r, &err) != 0) {
            if (err.msg[0] == '\0' || r.bases != NULL || r.offset != NULL)
                abort();
            return 0;
        }
        for (uint64_t i = 0; i < r.n; i++)
            if (r.offset[i] > r.offset[i + 1] || r.offset[i + 1] > len)
                abort();
        app_reads_free(&r);
        return 0;
    }
    if (mode == 3) {
        app_points_t p;
        if (app_parse_points(text, len, "fuzz.txt", &p, &err) != 0) {
            if (err.msg[0] == '\0' || p.x != NULL)
                abort();
            return 0;
        }
        for (uint64_t i = 0; i < p.n * p.dims; i++)
            if (p.x[i] != p.x[i] || p.x[i] - p.x[i] != 0) /* NaN or infinite */
                abort();
        app_points_free(&p);
        return 0;
    }
    /* A limit makes the early refusals reachable. */
    app_limit_t limit = {1u << 20, "the fuzz target's limit"};
    int rc = mode == 0 ? app_parse_mtx(text, len, "fuzz.mtx", &limit, &e, &err)
                       : app_parse_edge_list(text, len, "fuzz.el", mode == 2, &limit, &e, &err);
    if (rc != 0) {
        if (err.msg[0] == '\0' || e.edges != NULL)
            abort(); /* a failure says why and leaves nothing behind */
        return 0;
    }
    if (e.n > limit.max_n || !sound(&e))
        abort();
    app_edges_free(&e);
    return 0;
}
