/*
 * libFuzzer target for the input parsers.  The first byte picks the reader
 * (Matrix Market, directed or undirected edge list, k-means points,
 * FASTA/FASTQ reads); the rest is the file.
 * Every input must either parse into edges that respect the graph's
 * invariants or fail with a message: a crash, a sanitizer report, a leak or
 * a broken invariant is a bug.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graphapps/common/graph.h"
#include "graphapps/common/points.h"
#include "graphapps/common/reads.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned mode = data[0] % 5;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    app_edges_t e;
    app_error_t err = {{0}};
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
    int rc = mode == 0 ? app_parse_mtx(text, len, "fuzz.mtx", &e, &err)
                       : app_parse_edge_list(text, len, "fuzz.el", mode == 2, &e, &err);
    if (rc != 0) {
        if (err.msg[0] == '\0' || e.edges != NULL)
            abort(); /* a failure says why and leaves nothing behind */
        return 0;
    }
    for (size_t i = 0; i < e.count; i++)
        if (e.edges[i].u >= e.n || e.edges[i].v >= e.n || e.edges[i].w != e.edges[i].w)
            abort();
    app_edges_free(&e);
    return 0;
}
