/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The chunk plan of a region: its chunks, and for each work-group of the
 * producer the chunks it writes, from the region's mapping.  The device
 * reads the plan as it is (grain_chunk_done); every chunk's counter starts
 * at the number of work-groups that write it.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/transfers/region.h"
#include "services/log.h"

typedef struct u32_vec {
    uint32_t *v;
    size_t n, cap;
} u32_vec_t;

static int push(u32_vec_t *a, uint32_t x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        uint32_t *v = realloc(a->v, cap * sizeof *v);
        if (v == NULL)
            return 0;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 1;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The chunks of the segments that [lo, hi) of the region touches. */
static int add_range(const grain_chunk_plan_t *p, uint64_t lo, uint64_t hi, u32_vec_t *out)
{
    for (unsigned s = 0; s < p->n_segments; s++) {
        const grain_segment_dev_t *seg = &p->segments[s];
        uint64_t a = lo > seg->offset ? lo : seg->offset;
        uint64_t b = hi < seg->offset + seg->size ? hi : seg->offset + seg->size;
        if (a >= b)
            continue;
        uint64_t first = (a - seg->offset) / p->chunk_bytes, last = (b - 1 - seg->offset) / p->chunk_bytes;
        for (uint64_t c = first; c <= last; c++)
            if (!push(out, seg->first_chunk + (uint32_t)c))
                return 0;
    }
    return 1;
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static uint64_t stencil_columns(const grain_chunk_map_t *m) { return (m->row_bytes + m->tile_bytes - 1) / m->tile_bytes; }
static uint64_t stencil_tile_rows(const grain_chunk_map_t *m) { return (m->rows + m->tile_rows - 1) / m->tile_rows; }

/* Adds the chunks work-group g writes. */
static grain_status_t group_chunks(const grain_region_desc_t *d, const grain_chunk_plan_t *p, uint64_t g,
                                   u32_vec_t *out)
{
    const grain_chunk_map_t *m = &d->map;
    int ok = 1;
    switch (m->kind) {
    case GRAIN_MAP_CONTIGUOUS:
        if (m->offset + g * m->bytes < d->size)
            ok = add_range(p, m->offset + g * m->bytes, min_u64(m->offset + (g + 1) * m->bytes, d->size), out);
        break;
    case GRAIN_MAP_STRIDED:
        for (uint64_t at = m->offset + g * m->bytes; ok && at < d->size; at += m->groups * m->bytes)
            ok = add_range(p, at, min_u64(at + m->bytes, d->size), out);
        break;
    case GRAIN_MAP_STENCIL: {
        uint64_t cols = stencil_columns(m), col = g % cols;
        uint64_t ty = grain_stencil_tile_row(g / cols, stencil_tile_rows(m));
        uint64_t r0 = m->first_row + ty * m->tile_rows, r1 = min_u64(r0 + m->tile_rows, m->first_row + m->rows);
        uint64_t c0 = col * m->tile_bytes, width = min_u64(m->tile_bytes, m->row_bytes - c0);
        for (uint64_t r = r0; ok && r < r1; r++)
            ok = add_range(p, r * m->row_bytes + c0, r * m->row_bytes + c0 + width, out);
        break;
    }
    case GRAIN_MAP_USER: {
        uint64_t stack_off[16], stack_size[16], *off = stack_off, *size = stack_size;
        size_t cap = 16, n = m->ranges(m->arg, g, off, size, cap);
        if (n > cap) {
            cap = n;
            off = malloc(cap * sizeof *off);
            size = malloc(cap * sizeof *size);
            n = off && size ? m->ranges(m->arg, g, off, size, cap) : 0;
            ok = off && size && n <= cap;
        }
        for (size_t i = 0; ok && i < n; i++) {
            if (off[i] > d->size || size[i] > d->size - off[i]) {
                if (off != stack_off)
                    free(off), free(size);
                return grain_fail(GRAIN_ERR_INVALID,
                                  "region: the user mapping gives work-group %llu bytes %llu..%llu, outside "
                                  "the %zu-byte region",
                                  (unsigned long long)g, (unsigned long long)off[i],
                                  (unsigned long long)(off[i] + size[i]), d->size);
            }
            ok = add_range(p, off[i], off[i] + size[i], out);
        }
        if (off != stack_off)
            free(off), free(size);
        break;
    }
    }
    return ok ? GRAIN_OK : grain_fail(GRAIN_ERR_NO_MEMORY, "region: no memory for the chunk plan");
}

static grain_status_t check_map(const grain_region_desc_t *d, uint64_t *groups_p)
{
    const grain_chunk_map_t *m = &d->map;
    switch (m->kind) {
    case GRAIN_MAP_CONTIGUOUS:
    case GRAIN_MAP_STRIDED:
        if (m->bytes == 0)
            return grain_fail(GRAIN_ERR_INVALID, "region: a %s mapping needs the bytes of a work-group's block",
                              m->kind == GRAIN_MAP_CONTIGUOUS ? "contiguous" : "strided");
        break;
    case GRAIN_MAP_STENCIL: {
        if (m->row_bytes == 0 || m->rows == 0 || m->tile_rows == 0 || m->tile_bytes == 0)
            return grain_fail(GRAIN_ERR_INVALID, "region: a stencil mapping needs row_bytes, rows, tile_rows and tile_bytes");
        if ((m->first_row + m->rows) > d->size / m->row_bytes)
            return grain_fail(GRAIN_ERR_INVALID,
                              "region: the stencil mapping's rows %llu..%llu of %llu bytes end past the %zu-byte region",
                              (unsigned long long)m->first_row, (unsigned long long)(m->first_row + m->rows),
                              (unsigned long long)m->row_bytes, d->size);
        uint64_t need = stencil_columns(m) * stencil_tile_rows(m);
        if (m->groups != 0 && m->groups != need)
            return grain_fail(GRAIN_ERR_INVALID,
                              "region: the stencil mapping has %llu tiles, but the launch has %llu work-groups",
                              (unsigned long long)need, (unsigned long long)m->groups);
        *groups_p = need;
        return GRAIN_OK;
    }
    case GRAIN_MAP_USER:
        if (m->ranges == NULL)
            return grain_fail(GRAIN_ERR_INVALID, "region: a user mapping needs its ranges function");
        break;
    default:
        return grain_fail(GRAIN_ERR_INVALID, "region: unknown mapping kind %d", (int)m->kind);
    }
    if (m->groups == 0)
        return grain_fail(GRAIN_ERR_INVALID, "region: the mapping needs the producer launch's work-groups");
    *groups_p = m->groups;
    return GRAIN_OK;
}

static grain_status_t check_segments(const grain_region_desc_t *d, uint64_t chunk_bytes, int my_pe, int n_pes,
                                     grain_chunk_plan_t *p)
{
    /* None is allowed: a rank with nothing to send still takes part. */
    if (d->n_segments > GRAIN_REGION_MAX_SEGMENTS || (d->n_segments > 0 && d->segments == NULL))
        return grain_fail(GRAIN_ERR_INVALID, "region: %u segments; a region has at most %u", d->n_segments,
                          GRAIN_REGION_MAX_SEGMENTS);
    uint64_t chunks = 0;
    for (unsigned s = 0; s < d->n_segments; s++) {
        const grain_segment_t *in = &d->segments[s];
        if (in->size == 0 || in->offset > d->size || in->size > d->size - in->offset)
            return grain_fail(GRAIN_ERR_INVALID, "region: segment %u (bytes %llu..%llu) is empty or outside the %zu-byte region",
                              s, (unsigned long long)in->offset, (unsigned long long)(in->offset + in->size), d->size);
        if (in->dest != GRAIN_REGION_PEERS && in->dest != GRAIN_REGION_HOST &&
            (in->dest < 0 || in->dest >= n_pes || in->dest == my_pe))
            return grain_fail(GRAIN_ERR_INVALID,
                              "region: segment %u goes to PE %d; a destination is another PE (0 to %d, not %d), "
                              "GRAIN_REGION_PEERS or GRAIN_REGION_HOST",
                              s, in->dest, n_pes - 1, my_pe);
        uint64_t dest_offset = in->dest == GRAIN_REGION_PEERS ? in->offset : in->dest_offset;
        if (dest_offset > d->size || in->size > d->size - dest_offset)
            return grain_fail(GRAIN_ERR_INVALID, "region: segment %u lands at bytes %llu..%llu, outside the %zu-byte region",
                              s, (unsigned long long)dest_offset, (unsigned long long)(dest_offset + in->size), d->size);
        uint64_t n = (in->size + chunk_bytes - 1) / chunk_bytes;
        p->segments[s] = (grain_segment_dev_t){.offset = in->offset, .size = in->size, .dest_offset = dest_offset,
                                               .first_chunk = (grain_u32)chunks, .n_chunks = (grain_u32)n,
                                               .dest = in->dest};
        chunks += n;
        if (chunks > UINT32_MAX / 2)
            return grain_fail(GRAIN_ERR_INVALID, "region: %llu chunks of %llu bytes are too many; take larger chunks",
                              (unsigned long long)chunks, (unsigned long long)chunk_bytes);
    }
    p->n_segments = d->n_segments;
    p->n_chunks = (uint32_t)chunks;
    return GRAIN_OK;
}

grain_status_t grain_chunk_plan_build(const grain_region_desc_t *d, uint64_t chunk_bytes, int my_pe, int n_pes,
                                      grain_chunk_plan_t *p)
{
    memset(p, 0, sizeof *p);
    if (d->size == 0)
        return grain_fail(GRAIN_ERR_INVALID, "region: the size is zero");
    if (chunk_bytes == 0)
        return grain_fail(GRAIN_ERR_INVALID, "region: the chunk size is zero");
    p->chunk_bytes = chunk_bytes;
    uint64_t groups = 0;
    grain_status_t st = check_segments(d, chunk_bytes, my_pe, n_pes, p);
    if (st == GRAIN_OK)
        st = check_map(d, &groups);
    if (st != GRAIN_OK)
        return st;
    p->n_groups = groups;
    p->expected = calloc(p->n_chunks ? p->n_chunks : 1, sizeof *p->expected);
    p->group_first = calloc(groups + 1, sizeof *p->group_first);
    u32_vec_t all = {0}, one = {0};
    if (p->expected == NULL || p->group_first == NULL)
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "region: no memory for the chunk plan of %llu work-groups",
                        (unsigned long long)groups);
    for (uint64_t g = 0; st == GRAIN_OK && g < groups; g++) {
        one.n = 0;
        st = group_chunks(d, p, g, &one);
        if (st != GRAIN_OK)
            break;
        if (one.n > 1) /* a work-group that writes no chunk has no list at all */
            qsort(one.v, one.n, sizeof *one.v, cmp_u32);
        p->group_first[g] = all.n;
        for (size_t i = 0; i < one.n; i++) {
            if (i > 0 && one.v[i] == one.v[i - 1])
                continue;
            if (!push(&all, one.v[i])) {
                st = grain_fail(GRAIN_ERR_NO_MEMORY, "region: no memory for the chunk plan");
                break;
            }
            p->expected[one.v[i]]++;
        }
    }
    free(one.v);
    p->group_first[groups] = all.n;
    p->group_chunks = all.v;
    for (uint32_t c = 0; st == GRAIN_OK && c < p->n_chunks; c++) {
        if (p->expected[c] != 0)
            continue;
        uint64_t start, len;
        unsigned s = grain_chunk_span(p, c, &start, &len);
        st = grain_fail(GRAIN_ERR_INVALID,
                        "region: chunk %u (bytes %llu..%llu, segment %u) is written by no work-group of the "
                        "mapping, so it would never move; check the mapping's work-groups and block size",
                        c, (unsigned long long)start, (unsigned long long)(start + len), s);
    }
    if (st != GRAIN_OK)
        grain_chunk_plan_free(p);
    return st;
}

void grain_chunk_plan_free(grain_chunk_plan_t *p)
{
    free(p->expected);
    free(p->group_first);
    free(p->group_chunks);
    p->expected = NULL;
    p->group_first = NULL;
    p->group_chunks = NULL;
}

unsigned grain_chunk_span(const grain_chunk_plan_t *p, uint32_t c, uint64_t *start, uint64_t *len)
{
    unsigned s = grain_chunk_segment(p->segments, p->n_segments, c);
    *start = p->segments[s].offset + grain_chunk_start(&p->segments[s], p->chunk_bytes, c);
    *len = grain_chunk_length(&p->segments[s], p->chunk_bytes, c);
    return s;
}
