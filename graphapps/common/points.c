/* SPDX-License-Identifier: BSD-3-Clause */
#include "points.h"
#include "random.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIMS 4096

void app_points_free(app_points_t *p)
{
    free(p->x);
    *p = (app_points_t){0};
}

/* Fails with "name:line: ..." and frees what was read. */
static int fail(app_points_t *p, app_error_t *err, const app_lines_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    app_line_verror(t, err, fmt, ap);
    va_end(ap);
    app_points_free(p);
    return -1;
}

static int is_separator(char c)
{
    return c == ' ' || c == '\t' || c == ',' || c == '\r' || c == '\v' || c == '\f';
}

int app_parse_points(const char *data, size_t len, const char *name, app_points_t *p, app_error_t *err)
{
    *p = (app_points_t){0};
    size_t cap = 0, used = 0;
    app_lines_t t = {data, data + len, name, 0};
    const char *s;
    size_t n_line;
    while (app_next_line(&t, &s, &n_line)) {
        const char *stop = s + n_line;
        uint32_t columns = 0;
        const char *c = s;
        while (c < stop && is_separator(*c))
            c++;
        if (c < stop && *c == '#')
            c = stop;
        while (c < stop) {
            char tok[64];
            size_t n = 0;
            while (c + n < stop && !is_separator(c[n]))
                n++;
            if (n >= sizeof tok)
                return fail(p, err, &t, "a number of 64 characters or more");
            memcpy(tok, c, n);
            tok[n] = '\0';
            if (memchr(tok, '\0', n) != NULL)
                return fail(p, err, &t, "unexpected NUL byte");
            char *after;
            double v = strtod(tok, &after);
            if (after == tok || *after != '\0')
                return fail(p, err, &t, "'%s' is not a number", tok);
            if (!isfinite(v))
                return fail(p, err, &t, "'%s' is not finite", tok);
            if (++columns > MAX_DIMS)
                return fail(p, err, &t, "more than 4096 coordinates");
            if (used == cap) {
                cap = cap ? 2 * cap : 1024;
                double *grown = realloc(p->x, cap * sizeof *grown);
                if (grown == NULL)
                    return fail(p, err, &t, "no memory for the points");
                p->x = grown;
            }
            p->x[used++] = v;
            c += n;
            while (c < stop && is_separator(*c))
                c++;
        }
        if (columns != 0) {
            if (p->dims == 0)
                p->dims = columns;
            if (columns != p->dims)
                return fail(p, err, &t, "%u coordinates where the points before have %u", columns, p->dims);
            p->n++;
        }
    }
    if (p->n == 0) {
        snprintf(err->msg, sizeof err->msg, "%s: no points", name);
        app_points_free(p);
        return -1;
    }
    return 0;
}

int app_read_points(const char *path, app_points_t *p, app_error_t *err)
{
    size_t len;
    char *data = app_read_file(path, &len, err);
    if (data == NULL)
        return -1;
    int rc = app_parse_points(data, len, path, p, err);
    free(data);
    return rc;
}

int app_blobs(uint64_t n, uint32_t dims, uint32_t k, uint64_t seed, app_points_t *p, app_error_t *err)
{
    *p = (app_points_t){0};
    if (n == 0 || dims == 0 || dims > MAX_DIMS || k == 0 || k > n) {
        snprintf(err->msg, sizeof err->msg,
                 "--blobs %llu,%u,%u: need points >= centres >= 1 and 1 to 4096 dimensions", (unsigned long long)n,
                 dims, k);
        return -1;
    }
    double *centres = malloc((size_t)k * dims * sizeof *centres);
    p->x = malloc(n * dims * sizeof *p->x);
    if (centres == NULL || p->x == NULL) {
        free(centres);
        app_points_free(p);
        snprintf(err->msg, sizeof err->msg, "no memory for %llu points", (unsigned long long)n);
        return -1;
    }
    uint64_t state = seed ^ 0x6a09e667f3bcc909ull;
    for (size_t i = 0; i < (size_t)k * dims; i++)
        centres[i] = -10 + 20 * app_unit_open(&state);
    uint64_t key = app_splitmix64(&state);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t s = key ^ (i * 0xd1b54a32d192ed03ull);
        uint32_t c = (uint32_t)(app_splitmix64(&s) % k);
        for (uint32_t d = 0; d < dims; d++) {
            double radius = sqrt(-2 * log(app_unit_open(&s))); /* Box-Muller */
            double r = radius * cos(6.283185307179586 * app_unit_open(&s));
            p->x[i * dims + d] = centres[(size_t)c * dims + d] + r;
        }
    }
    free(centres);
    p->n = n;
    p->dims = dims;
    return 0;
}
