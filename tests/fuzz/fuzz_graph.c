/*
 * libFuzzer target for the input parsers.  The first byte picks the reader
 * (Matrix Market, directed or undirected edge list, k-means points,
 * FASTA/FASTQ reads, the graph cache's checks); the rest is the file.
 * Every input must either parse into edges that respect the graph's
 * invariants or fail with a message: a crash, a sanitizer report, a leak or
 * a broken invariant is a bug.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graphapps/common/graph.h"
#include "graphapps/common/graph_cache.h"
#include "graphapps/common/points.h"
#include "graphapps/common/reads.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned mode = data[0] % 6;
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
    if (e.n > limit.max_n)
        abort();
    for (size_t i = 0; i < e.count; i++)
        if (e.edges[i].u >= e.n || e.edges[i].v >= e.n || e.edges[i].w != e.edges[i].w)
            abort();
    app_edges_free(&e);
    return 0;
}
