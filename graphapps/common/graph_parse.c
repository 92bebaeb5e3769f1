/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Matrix Market and edge-list parsers over a memory buffer.  They never trust
 * a count in the file for an allocation (a fuzzed header may promise 10^18
 * entries): storage grows with the entries actually read.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "graph.h"

/* Far beyond any graph that fits in memory, and small enough that n + 1 and
 * n * sizeof(anything) cannot overflow. */
#define MAX_VERTICES (1ull << 40)
#define MAX_TOKENS 8

typedef struct scanner {
    app_lines_t in;
    app_error_t *err;
    const app_limit_t *limit;
} scanner_t;

/* A line split into whitespace-separated tokens. */
typedef struct tokens {
    const char *tok[MAX_TOKENS];
    size_t len[MAX_TOKENS];
    unsigned count; /* MAX_TOKENS + 1: more than MAX_TOKENS */
} tokens_t;

int app_line_verror(const app_lines_t *t, app_error_t *err, const char *fmt, va_list ap)
{
    int n = t->line ? snprintf(err->msg, sizeof err->msg, "%s:%llu: ", t->name, t->line)
                    : snprintf(err->msg, sizeof err->msg, "%s: ", t->name);
    n = n < (int)sizeof err->msg ? n : (int)sizeof err->msg - 1;
    vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
    return -1;
}

int app_line_error(const app_lines_t *t, app_error_t *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    app_line_verror(t, err, fmt, ap);
    va_end(ap);
    return -1;
}

static int fail(scanner_t *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    app_line_verror(&s->in, s->err, fmt, ap);
    va_end(ap);
    return -1;
}

int app_limit_check(const app_limit_t *limit, uint64_t n, const char *name, app_error_t *err)
{
    if (n > MAX_VERTICES)
        snprintf(err->msg, sizeof err->msg, "%s: %llu vertices are more than grain's limit of 2^40", name,
                 (unsigned long long)n);
    else if (limit != NULL && n > limit->max_n)
        snprintf(err->msg, sizeof err->msg, "%s: %llu vertices are too many: %s", name, (unsigned long long)n,
                 limit->why);
    else
        return 0;
    return -1;
}

/* app_limit_check at the line being read; `what` leads the sentence. */
static int within_limit(scanner_t *s, uint64_t n, const char *what)
{
    app_error_t why;
    if (app_limit_check(s->limit, n, "", &why) == 0)
        return 0;
    return fail(s, "%s%s", what, why.msg + 2); /* without the empty name's ": " */
}

int app_next_line(app_lines_t *t, const char **line, size_t *len)
{
    if (t->p >= t->end)
        return 0;
    const char *nl = memchr(t->p, '\n', (size_t)(t->end - t->p));
    const char *stop = nl != NULL ? nl : t->end;
    *line = t->p;
    *len = (size_t)(stop - t->p);
    if (*len > 0 && (*line)[*len - 1] == '\r')
        (*len)--;
    t->p = nl != NULL ? nl + 1 : t->end;
    t->line++;
    return 1;
}

/* Splits a line; fails on bytes that have no place in a text file. */
static int split(scanner_t *s, const char *line, size_t len, tokens_t *t)
{
    t->count = 0;
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)line[i];
        if (c == ' ' || c == '\t' || c == '\v' || c == '\f') {
            i++;
            continue;
        }
        if (c < 0x20 || c == 0x7f)
            return fail(s, "unexpected control character 0x%02x", c);
        size_t j = i;
        while (j < len && !isspace((unsigned char)line[j]) && (unsigned char)line[j] >= 0x20)
            j++;
        if (t->count < MAX_TOKENS) {
            t->tok[t->count] = line + i;
            t->len[t->count] = j - i;
        }
        t->count += t->count <= MAX_TOKENS;
        i = j;
    }
    return 0;
}

static int token_is(const tokens_t *t, unsigned i, const char *word)
{
    return t->len[i] == strlen(word) && strncasecmp(t->tok[i], word, t->len[i]) == 0;
}

/* A decimal count or id: digits only, no sign, no overflow. */
static int parse_u64(scanner_t *s, const tokens_t *t, unsigned i, const char *what, unsigned long long *out)
{
    unsigned long long v = 0;
    if (t->len[i] == 0)
        return fail(s, "expected %s", what);
    for (size_t k = 0; k < t->len[i]; k++) {
        char c = t->tok[i][k];
        if (c < '0' || c > '9')
            return fail(s, "%s '%.*s' is not a non-negative integer", what, (int)t->len[i], t->tok[i]);
        if (v > (~0ull - 9) / 10)
            return fail(s, "%s '%.*s' is too large", what, (int)t->len[i], t->tok[i]);
        v = v * 10 + (unsigned long long)(c - '0');
    }
    *out = v;
    return 0;
}

/* A finite weight; `integer` requires an optional sign and digits. */
static int parse_weight(scanner_t *s, const tokens_t *t, unsigned i, int integer, double *out)
{
    char buf[64];
    if (t->len[i] >= sizeof buf)
        return fail(s, "weight '%.20s...' is too long", t->tok[i]);
    memcpy(buf, t->tok[i], t->len[i]);
    buf[t->len[i]] = '\0';
    char *end;
    double w;
    if (integer) {
        const char *d = buf + (buf[0] == '-' || buf[0] == '+');
        if (*d == '\0' || strspn(d, "0123456789") != strlen(d))
            return fail(s, "weight '%s' is not an integer (the header says integer)", buf);
        w = strtod(buf, &end);
    } else {
        w = strtod(buf, &end);
        if (end == buf || *end != '\0')
            return fail(s, "weight '%s' is not a number", buf);
    }
    if (!isfinite(w))
        return fail(s, "weight '%s' is not finite", buf);
    *out = w;
    return 0;
}

static int push(scanner_t *s, app_edges_t *e, uint64_t u, uint64_t v, double w)
{
    if (e->count == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 1024;
        app_edge_t *grown = realloc(e->edges, cap * sizeof *grown);
        if (grown == NULL)
            return fail(s, "no memory for %zu edges", cap);
        e->edges = grown;
        e->cap = cap;
    }
    e->edges[e->count++] = (app_edge_t){u, v, w};
    return 0;
}

static int blank_or_comment(const tokens_t *t, const char *comments)
{
    return t->count == 0 || strchr(comments, t->tok[0][0]) != NULL;
}

void app_edges_free(app_edges_t *e)
{
    free(e->edges);
    *e = (app_edges_t){0};
}

/* ---- Matrix Market ------------------------------------------------------ */

typedef struct mtx_header {
    int field; /* 0 pattern, 1 integer, 2 real */
    int symmetric;
} mtx_header_t;

static int mtx_banner(scanner_t *s, mtx_header_t *h)
{
    const char *line;
    size_t len;
    tokens_t t;
    if (!app_next_line(&s->in, &line, &len))
        return fail(s, "empty file: expected the banner '%%%%MatrixMarket matrix coordinate <field> <symmetry>'");
    if (split(s, line, len, &t) != 0)
        return -1;
    if (t.count != 5 || !token_is(&t, 0, "%%MatrixMarket"))
        return fail(s, "expected the banner '%%%%MatrixMarket matrix coordinate <field> <symmetry>'");
    if (!token_is(&t, 1, "matrix"))
        return fail(s, "object '%.*s' is not 'matrix'", (int)t.len[1], t.tok[1]);
    if (token_is(&t, 2, "array"))
        return fail(s, "a dense 'array' matrix is not a graph: the format must be 'coordinate'");
    if (!token_is(&t, 2, "coordinate"))
        return fail(s, "format '%.*s' is not 'coordinate'", (int)t.len[2], t.tok[2]);
    static const char *const fields[] = {"pattern", "integer", "real"};
    h->field = -1;
    for (int f = 0; f < 3; f++)
        if (token_is(&t, 3, fields[f]))
            h->field = f;
    if (h->field < 0)
        return fail(s, "field '%.*s' is not supported: pattern, integer or real", (int)t.len[3], t.tok[3]);
    if (token_is(&t, 4, "general"))
        h->symmetric = 0;
    else if (token_is(&t, 4, "symmetric"))
        h->symmetric = 1;
    else
        return fail(s, "symmetry '%.*s' is not supported: general or symmetric", (int)t.len[4], t.tok[4]);
    return 0;
}

int app_parse_mtx(const char *data, size_t len, const char *name, const app_limit_t *limit, app_edges_t *e,
                  app_error_t *err)
{
    scanner_t s = {{data, data + len, name, 0}, err, limit};
    *e = (app_edges_t){0};
    mtx_header_t h = {0, 0};
    if (mtx_banner(&s, &h) != 0)
        return -1;
    const char *line;
    size_t n;
    tokens_t t;
    unsigned long long rows = 0, cols = 0, nnz = 0, read = 0;
    int sized = 0;
    unsigned want = h.field == 0 ? 2 : 3;
    while (app_next_line(&s.in, &line, &n)) {
        if (split(&s, line, n, &t) != 0)
            goto error;
        if (blank_or_comment(&t, "%"))
            continue;
        if (!sized) {
            if (t.count != 3) {
                fail(&s, "expected the size line 'rows columns entries', found %u fields", t.count);
                goto error;
            }
            if (parse_u64(&s, &t, 0, "rows", &rows) || parse_u64(&s, &t, 1, "columns", &cols) ||
                parse_u64(&s, &t, 2, "entries", &nnz))
                goto error;
            if (rows != cols) {
                fail(&s, "a graph's matrix is square; this one is %llu x %llu", rows, cols);
                goto error;
            }
            if (within_limit(&s, rows, "") != 0)
                goto error;
            sized = 1;
            continue;
        }
        if (read == nnz) {
            fail(&s, "more entries than the %llu the size line gives", nnz);
            goto error;
        }
        if (t.count != want) {
            fail(&s, "an entry of a %s matrix has %u fields, found %u", h.field == 0 ? "pattern" : "weighted",
                 want, t.count);
            goto error;
        }
        unsigned long long i = 0, j = 0; /* set unless parse_u64 fails */
        double w = 1;
        if (parse_u64(&s, &t, 0, "row", &i) || parse_u64(&s, &t, 1, "column", &j))
            goto error;
        if (i < 1 || i > rows || j < 1 || j > cols) {
            fail(&s, "vertex id out of range: entry (%llu, %llu) of a %llu x %llu matrix (ids from 1)", i, j, rows,
                 cols);
            goto error;
        }
        if (want == 3 && parse_weight(&s, &t, 2, h.field == 1, &w) != 0)
            goto error;
        if (push(&s, e, i - 1, j - 1, w) != 0 || (h.symmetric && i != j && push(&s, e, j - 1, i - 1, w) != 0))
            goto error;
        read++;
    }
    if (!sized) {
        fail(&s, "the file ends before the size line 'rows columns entries'");
        goto error;
    }
    if (read < nnz) {
        fail(&s, "truncated: the size line gives %llu entries, the file ends after %llu", nnz, read);
        goto error;
    }
    e->n = rows;
    e->base = 1;
    e->weighted = h.field != 0;
    e->undirected = h.symmetric;
    return 0;
error:
    app_edges_free(e);
    return -1;
}

/* ---- edge lists --------------------------------------------------------- */

int app_parse_edge_list(const char *data, size_t len, const char *name, int undirected, const app_limit_t *limit,
                        app_edges_t *e, app_error_t *err)
{
    scanner_t s = {{data, data + len, name, 0}, err, limit};
    *e = (app_edges_t){0};
    const char *line;
    size_t n;
    tokens_t t;
    unsigned columns = 0;
    unsigned long long top = 0; /* the largest id + 1 */
    while (app_next_line(&s.in, &line, &n)) {
        if (split(&s, line, n, &t) != 0)
            goto error;
        if (blank_or_comment(&t, "#%"))
            continue;
        if (t.count != 2 && t.count != 3) {
            fail(&s, "expected 'u v' or 'u v weight', found %u fields", t.count > MAX_TOKENS ? MAX_TOKENS : t.count);
            goto error;
        }
        if (columns == 0)
            columns = t.count;
        if (t.count != columns) {
            fail(&s, "%u fields where the lines before have %u: weights on every edge or on none", t.count, columns);
            goto error;
        }
        unsigned long long u = 0, v = 0; /* set unless parse_u64 fails */
        double w = 1;
        if (parse_u64(&s, &t, 0, "source vertex", &u) || parse_u64(&s, &t, 1, "target vertex", &v))
            goto error;
        unsigned long long most = u > v ? u : v;
        char what[48];
        snprintf(what, sizeof what, "vertex id %llu: ", most);
        if (within_limit(&s, most < MAX_VERTICES ? most + 1 : MAX_VERTICES + 1, what) != 0)
            goto error;
        if (columns == 3 && parse_weight(&s, &t, 2, 0, &w) != 0)
            goto error;
        if (push(&s, e, u, v, w) != 0 || (undirected && u != v && push(&s, e, v, u, w) != 0))
            goto error;
        top = u + 1 > top ? u + 1 : top;
        top = v + 1 > top ? v + 1 : top;
    }
    e->n = top;
    e->base = 0;
    e->weighted = columns == 3;
    e->undirected = undirected;
    return 0;
error:
    app_edges_free(e);
    return -1;
}

int app_check_not_empty(const app_edges_t *e, const char *name, app_error_t *err)
{
    if (e->n == 0 || e->count == 0) {
        snprintf(err->msg, sizeof err->msg, "%s: the graph is empty (%llu vertices, %zu edges)", name,
                 (unsigned long long)e->n, e->count);
        return -1;
    }
    return 0;
}
