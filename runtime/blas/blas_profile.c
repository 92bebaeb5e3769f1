/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/blas/blas_profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/cache_path.h"
#include "services/log.h"

const char *const blas_routine_names[BLAS_ROUTINES] = {"dgemm", "sgemm", "daxpy", "saxpy"};

/* Each path's links, in the order of machine.path. */
static const char *const link_names[2 * BLAS_PATHS] = {"h2d", "d2h", "h2d-pinned", "d2h-pinned"};

/* The machine's link of link_names' index `link`. */
static blas_link_t *link_of(blas_machine_t *m, unsigned link)
{
    blas_links_t *ls = &m->path[link / 2];
    return link % 2 ? &ls->d2h : &ls->h2d;
}

void blas_profile_free(blas_profile_t *p)
{
    for (unsigned r = 0; r < BLAS_ROUTINES; r++) {
        free(p->tile[r]);
        free(p->seconds[r]);
    }
    for (unsigned l = 0; l < 2 * BLAS_PATHS; l++) {
        free(p->copy_tile[l]);
        free(p->copy_ld[l]);
        free(p->copy_alone[l]);
        free(p->copy_beside[l]);
    }
    *p = (blas_profile_t){0};
}

void blas_profile_point(blas_profile_t *p)
{
    for (unsigned link = 0; link < 2 * BLAS_PATHS; link++)
        link_of(&p->machine, link)->tiles =
            (blas_tile_copies_t){p->copies[link], p->copy_tile[link], p->copy_ld[link], p->copy_alone[link],
                                 p->copy_beside[link]};
    if (!p->have_pinned) /* none deployed: page-locked operands cost what the others do */
        p->machine.path[BLAS_PATH_PINNED] = p->machine.path[BLAS_PATH_HOST];
}

blas_lookup_t blas_profile_lookup(const blas_profile_t *p, unsigned routine)
{
    return (blas_lookup_t){p->n[routine], p->tile[routine], p->seconds[routine]};
}

double blas_profile_seconds(const blas_profile_t *p, unsigned routine, size_t tile)
{
    for (size_t i = 0; i < p->n[routine]; i++)
        if (p->tile[routine][i] == tile)
            return p->seconds[routine][i];
    return -1.0;
}

static int parse_link(char **f, unsigned n, blas_link_t *l)
{
    char *end[3];
    if (n != 6)
        return 0;
    l->t_i = strtod(f[3], &end[0]);
    l->t_b = strtod(f[4], &end[1]);
    l->sl = strtod(f[5], &end[2]);
    return *end[0] == '\0' && *end[1] == '\0' && *end[2] == '\0' && l->t_i >= 0 && l->t_b > 0 && l->sl >= 1.0;
}

static int parse_size(const char *at, char **end, size_t *v)
{
    errno = 0;
    unsigned long long x = strtoull(at, end, 10);
    *v = (size_t)x;
    return errno == 0 && *end != at && x > 0;
}

/* "T:seconds,..." in ascending T (a kernel line: one value), or tile copies'
 * "TxLD:alone:beside,..." ascending by T, then LD, into *ld_p too; an entry
 * without xLD, as the first deployments of tile copies wrote them, was
 * measured at LD = 2T. */
static int parse_table(const char *text, size_t *n_p, size_t **tile_p, size_t **ld_p, double **val_p)
{
    unsigned values = ld_p != NULL ? 2 : 1;
    size_t cap = 1;
    for (const char *c = text; *c; c++)
        cap += *c == ',';
    size_t *tile = malloc(cap * sizeof *tile), *ld = ld_p != NULL ? malloc(cap * sizeof *ld) : NULL, n = 0;
    double *val[2] = {malloc(cap * sizeof(double)), values > 1 ? malloc(cap * sizeof(double)) : NULL};
    const char *at = text;
    int ok = tile != NULL && val[0] != NULL && (values < 2 || (val[1] != NULL && ld != NULL));
    while (ok && *at != '\0') {
        char *end;
        size_t t, pitch = 0;
        ok = parse_size(at, &end, &t);
        if (ok && ld != NULL && *end == 'x')
            ok = parse_size(end + 1, &end, &pitch) && pitch >= t;
        else
            pitch = 2 * t;
        ok = ok && *end == ':' &&
             (n == 0 || t > tile[n - 1] || (ld != NULL && t == tile[n - 1] && pitch > ld[n - 1]));
        for (unsigned v = 0; ok && v < values; v++) {
            at = end + 1;
            val[v][n] = strtod(at, &end);
            ok = end != at && val[v][n] > 0 && (v + 1 < values ? *end == ':' : *end == ',' || *end == '\0');
        }
        if (ok) {
            if (ld != NULL)
                ld[n] = pitch;
            tile[n++] = t;
            at = *end == ',' ? end + 1 : end;
        }
    }
    if (!ok || n == 0) {
        free(tile);
        free(ld);
        free(val[0]);
        free(val[1]);
        return 0;
    }
    *n_p = n;
    *tile_p = tile;
    if (ld_p != NULL)
        *ld_p = ld;
    for (unsigned v = 0; v < values; v++)
        val_p[v] = val[v];
    return 1;
}

/* Each entry of a table: "T[xLD]:v[:v]" with a comma between. */
static void print_table(FILE *out, size_t n, const size_t *tile, const size_t *ld, const double *a, const double *b)
{
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%s%zu", i ? "," : "", tile[i]);
        if (ld != NULL)
            fprintf(out, "x%zu", ld[i]);
        fprintf(out, ":%.6g", a[i]);
        if (b != NULL)
            fprintf(out, ":%.6g", b[i]);
    }
    fprintf(out, "\n");
}

int blas_profile_read(blas_profile_t *p, const char *path, const char *device)
{
    *p = (blas_profile_t){0};
    FILE *f = path[0] != '\0' ? fopen(path, "r") : NULL;
    if (f == NULL)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    int links = 0, bad = 0;
    for (unsigned number = 1; !bad && getline(&line, &cap, f) >= 0; number++) {
        line[strcspn(line, "\r\n")] = '\0';
        char *fld[8];
        if (line[0] == '#' || line[0] == '\0')
            continue;
        unsigned n = grain_cache_fields(line, fld, 8);
        if (n < 4 || strcmp(fld[0], device) != 0)
            continue;
        unsigned link = 0;
        while (link < 2 * BLAS_PATHS && strcmp(fld[2], link_names[link]) != 0)
            link++;
        if (strcmp(fld[1], "link") == 0 && link < 2 * BLAS_PATHS) {
            bad = !parse_link(fld, n, link_of(&p->machine, link));
            links |= 1u << link;
        } else if (strcmp(fld[1], "kernel") == 0 && n == 4) {
            unsigned r = 0;
            while (r < BLAS_ROUTINES && strcmp(fld[2], blas_routine_names[r]) != 0)
                r++;
            size_t count, *tile;
            double *sec[1];
            bad = r == BLAS_ROUTINES || !parse_table(fld[3], &count, &tile, NULL, sec);
            if (!bad) {
                free(p->tile[r]);
                free(p->seconds[r]);
                p->n[r] = count;
                p->tile[r] = tile;
                p->seconds[r] = sec[0];
            }
        } else if (strcmp(fld[1], "tiles") == 0 && n == 4 && link < 2 * BLAS_PATHS) {
            size_t count, *tile, *ld;
            double *sec[2];
            bad = !parse_table(fld[3], &count, &tile, &ld, sec);
            if (!bad) {
                free(p->copy_tile[link]);
                free(p->copy_ld[link]);
                free(p->copy_alone[link]);
                free(p->copy_beside[link]);
                p->copies[link] = count;
                p->copy_tile[link] = tile;
                p->copy_ld[link] = ld;
                p->copy_alone[link] = sec[0];
                p->copy_beside[link] = sec[1];
            }
        } else {
            bad = 1;
        }
        if (bad)
            grain_fail(GRAIN_ERR_CONFIG, "blas: %s, line %u: not a line of a BLAS profile (link "
                       "h2d|d2h|h2d-pinned|d2h-pinned t_i t_b sl, kernel <routine> T:seconds,..., or tiles <link> "
                       "TxLD:alone:beside,...): deploy again (grain_blas_deploy)", path, number);
    }
    free(line);
    fclose(f);
    p->have_links = (links & 3) == 3;
    p->have_pinned = (links & 12) == 12;
    blas_profile_point(p);
    int kernels = 0;
    for (unsigned r = 0; r < BLAS_ROUTINES; r++)
        kernels |= p->n[r] > 0;
    if (bad || !p->have_links || !kernels) {
        blas_profile_free(p);
        return bad ? -1 : 0;
    }
    return 1;
}

typedef struct rewrite {
    const blas_profile_t *p;
    const char *device;
} rewrite_t;

/* The other devices' lines stay; this device's are written anew. */
static int keep_line(const char *line, void *arg)
{
    const rewrite_t *r = arg;
    size_t dlen = strlen(r->device);
    return strncmp(line, r->device, dlen) != 0 || line[dlen] != '\t';
}

static void append_device(FILE *out, void *arg)
{
    const rewrite_t *r = arg;
    const blas_profile_t *p = r->p;
    blas_machine_t m = p->machine;
    for (unsigned link = 0; link < (p->have_pinned ? 2u * BLAS_PATHS : 2u); link++) {
        const blas_link_t *l = link_of(&m, link);
        fprintf(out, "%s\tlink\t%s\t%.6g\t%.6g\t%.4f\n", r->device, link_names[link], l->t_i, l->t_b, l->sl);
    }
    for (unsigned k = 0; k < BLAS_ROUTINES; k++) {
        if (p->n[k] == 0)
            continue;
        fprintf(out, "%s\tkernel\t%s\t", r->device, blas_routine_names[k]);
        print_table(out, p->n[k], p->tile[k], NULL, p->seconds[k], NULL);
    }
    for (unsigned link = 0; link < 2 * BLAS_PATHS; link++) {
        if (p->copies[link] == 0)
            continue;
        fprintf(out, "%s\ttiles\t%s\t", r->device, link_names[link]);
        print_table(out, p->copies[link], p->copy_tile[link], p->copy_ld[link], p->copy_alone[link],
                    p->copy_beside[link]);
    }
}

grain_status_t blas_profile_write(const blas_profile_t *p, const char *path, const char *device)
{
    rewrite_t r = {p, device};
    if (grain_cache_rewrite(path, "# grain's tiled BLAS: per device, its links (t_i s, t_b s/byte, bidirectional "
                                  "slowdown; -pinned: from page-locked memory), kernel seconds by tile and tile "
                                  "copies (T x host ld: seconds alone:beside a kernel)",
                            keep_line, append_device, &r) != 0)
        return grain_fail(GRAIN_ERR_CONFIG, "blas: cannot write the profile %s (%s)", path, strerror(errno));
    return GRAIN_OK;
}
