/* SPDX-License-Identifier: BSD-3-Clause */
#include "graph_cache.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x * 0x9e3779b97f4a7c15ull;
    h = (h << 27 | h >> 37) * 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
}

uint64_t app_cache_checksum(const app_cache_header_t *hdr, const app_edge_t *edges, size_t count)
{
    const uint64_t fields[] = {hdr->magic, hdr->source_size, hdr->source_mtime_ns, hdr->undirected_option, hdr->n,
                               hdr->base,  hdr->weighted,    hdr->undirected,      hdr->count};
    uint64_t h = 0x677261696e636163ull;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        h = mix(h, fields[i]);
    for (size_t i = 0; i < count; i++) {
        uint64_t w;
        memcpy(&w, &edges[i].w, sizeof w);
        h = mix(mix(mix(h, edges[i].u), edges[i].v), w);
    }
    return mix(h, count);
}

static int fault(app_error_t *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->msg, sizeof why->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int app_cache_check(const app_cache_header_t *h, const app_edge_t *edges, uint64_t count, app_error_t *why)
{
    if (h->count != count)
        return fault(why, "its header gives %llu edges, it holds %llu", (unsigned long long)h->count,
                     (unsigned long long)count);
    if (h->base > 1 || h->weighted > 1 || h->undirected > 1 || h->undirected_option > 1)
        return fault(why, "a flag of its header is neither 0 nor 1");
    if (app_limit_check(NULL, h->n, "its header", why) != 0)
        return -1;
    for (uint64_t i = 0; i < count; i++) {
        const app_edge_t *e = &edges[i];
        if (e->u >= h->n || e->v >= h->n)
            return fault(why, "edge %llu has a vertex id beyond its %llu vertices", (unsigned long long)i,
                         (unsigned long long)h->n);
        if (!isfinite(e->w) || (!h->weighted && e->w != 1))
            return fault(why, "edge %llu has a weight no input of its kind gives", (unsigned long long)i);
    }
    if (app_cache_checksum(h, edges, count) != h->checksum)
        return fault(why, "its checksum does not match its header and %llu edges", (unsigned long long)count);
    return 0;
}
