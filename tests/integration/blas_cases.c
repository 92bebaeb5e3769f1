/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tiled BLAS (grain/blas.h) on a fixed list of cases, for
 * tests/oracle/check_blas.py to compare with scipy.linalg.blas: gemm at the
 * issue's 1000 x 777 x 513 with T = 256 and leading dimensions past the
 * rows; every location of A, B and C (host memory, or grain's heap, used
 * where it is), and some in page-locked host memory (grain_mem_alloc,
 * copied without the staging where the backend pins); transposes; fat-by-thin and thin-by-fat shapes; beta = 0
 * over a C of NaNs; alpha = 0; k = 0; sgemm; axpy with increments and
 * locations.  Integer data (|x| <= 8) must come back exact, real data
 * within the rounding of the sums.
 *
 *   blas_cases DIR     writes DIR/cases.jsonl and DIR/case<i>.bin
 *
 * A case's file holds its operands column-major with their leading
 * dimensions (gemm: A, B, C before, C after; axpy: x, y before, y after),
 * as doubles or floats.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_ok.h"
#include "grain/blas.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static double draw(int integer)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    if (integer)
        return (double)((int64_t)(rng % 17) - 8);
    return (double)(rng >> 11) * 0x1p-53 * 2.0 - 1.0;
}

static grain_t *g;

/* grain_blas_last after a call of `routine` with `tile` (0: any). */
static void last_is(grain_blas_routine_t routine, size_t tile)
{
    grain_blas_last_t last;
    OK(grain_blas_last(g, &last));
    /* The account's parts are disjoint spans of the calling thread within the call. */
    double parts = last.pack_s + last.unpack_s + last.wait_s;
    if (last.routine != routine || (tile != 0 && last.tile != tile) || last.tile == 0 || !(last.seconds > 0.0) ||
        last.predicted_s < 0.0 || last.pack_s < 0.0 || last.unpack_s < 0.0 || last.wait_s < 0.0 ||
        parts > last.seconds) {
        fprintf(stderr, "blas_cases: grain_blas_last says routine %d, tile %zu, %g s (%g predicted; packing %g s, "
                        "unpacking %g s, waiting %g s) after routine %d with tile %zu\n", (int)last.routine, last.tile,
                last.seconds, last.predicted_s, last.pack_s, last.unpack_s, last.wait_s, (int)routine, tile);
        exit(1);
    }
}

typedef struct gcase {
    char ta, tb;
    size_t m, n, k, pad, tile;
    double alpha, beta;
    const char *where; /* A, B, C: 'h' host, 'g' grain's heap, 'p' page-locked (grain_mem_alloc) */
    int integer, single, nan_c;
} gcase_t;

typedef struct acase {
    size_t n, incx, incy, tile;
    double alpha;
    const char *where; /* x, y */
    int single;
} acase_t;

/* A call refused with GRAIN_ERR_INVALID and a sentence naming `words`. */
static void refused(grain_status_t st, const char *words)
{
    const char *why = grain_error_message(g);
    if (st != GRAIN_ERR_INVALID || strstr(why, words) == NULL) {
        fprintf(stderr, "blas_cases: %s (%s), wanted a refusal naming \"%s\"\n", grain_strerror(st), why, words);
        exit(1);
    }
    printf("blas_cases: refused: %s\n", why);
}

/* `count` elements, in the heap (g), grain's page-locked memory (p) or the
 * host's pageable memory (h), zeroed. */
static void *space(char where, size_t count, size_t es)
{
    void *p = NULL;
    if (where == 'g') {
        OK(grain_malloc(g, count * es, &p));
    } else if (where == 'p') {
        OK(grain_mem_alloc(g, (count ? count : 1) * es, &p));
        memset(p, 0, (count ? count : 1) * es);
    } else if ((p = calloc(count ? count : 1, es)) == NULL) {
        fprintf(stderr, "blas_cases: no memory\n");
        exit(2);
    }
    return p;
}

static void release(char where, void *p)
{
    if (where == 'g')
        OK(grain_free(g, p));
    else if (where == 'p')
        OK(grain_mem_free(g, p));
    else
        free(p);
}

static void put(void *p, size_t i, double v, int single)
{
    if (single)
        ((float *)p)[i] = (float)v;
    else
        ((double *)p)[i] = v;
}

static void dump(FILE *f, const void *p, size_t count, size_t es)
{
    if (count > 0 && fwrite(p, es, count, f) != count) {
        perror("blas_cases: write");
        exit(2);
    }
}

/* Case `index`'s file, for its operands. */
static FILE *case_file(const char *dir, unsigned index)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/case%u.bin", dir, index);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    return f;
}

static void run_gemm(const char *dir, FILE *manifest, unsigned index, const gcase_t *c)
{
    size_t es = c->single ? 4 : 8;
    size_t a_rows = c->ta == 'N' ? c->m : c->k, a_cols = c->ta == 'N' ? c->k : c->m;
    size_t b_rows = c->tb == 'N' ? c->k : c->n, b_cols = c->tb == 'N' ? c->n : c->k;
    /* At least 1, as the reference BLAS wants even of an empty operand. */
    size_t lda = (a_rows ? a_rows : 1) + c->pad, ldb = (b_rows ? b_rows : 1) + c->pad, ldc = c->m + c->pad;
    size_t na = lda * a_cols, nb = ldb * b_cols, nc = ldc * c->n;
    void *a = space(c->where[0], na, es), *b = space(c->where[1], nb, es), *cc = space(c->where[2], nc, es);
    void *before = malloc(nc * es + 1);
    for (size_t i = 0; i < na; i++)
        put(a, i, draw(c->integer), c->single);
    for (size_t i = 0; i < nb; i++)
        put(b, i, draw(c->integer), c->single);
    for (size_t i = 0; i < nc; i++)
        put(cc, i, c->nan_c ? NAN : draw(c->integer), c->single);
    memcpy(before, cc, nc * es);
    if (c->single)
        OK(grain_sgemm(g, c->ta, c->tb, c->m, c->n, c->k, (float)c->alpha, a, lda, b, ldb, (float)c->beta, cc, ldc,
                       c->tile));
    else
        OK(grain_dgemm(g, c->ta, c->tb, c->m, c->n, c->k, c->alpha, a, lda, b, ldb, c->beta, cc, ldc, c->tile));
    last_is(c->single ? GRAIN_BLAS_SGEMM : GRAIN_BLAS_DGEMM, c->tile);
    FILE *f = case_file(dir, index);
    dump(f, a, na, es);
    dump(f, b, nb, es);
    dump(f, before, nc, es);
    dump(f, cc, nc, es);
    fclose(f);
    fprintf(manifest,
            "{\"case\":%u,\"routine\":\"%cgemm\",\"ta\":\"%c\",\"tb\":\"%c\",\"m\":%zu,\"n\":%zu,\"k\":%zu,"
            "\"lda\":%zu,\"ldb\":%zu,\"ldc\":%zu,\"alpha\":%.17g,\"beta\":%.17g,\"tile\":%zu,\"where\":\"%s\","
            "\"integer\":%s,\"file\":\"case%u.bin\"}\n",
            index, c->single ? 's' : 'd', c->ta, c->tb, c->m, c->n, c->k, lda, ldb, ldc, c->alpha, c->beta, c->tile,
            c->where, c->integer ? "true" : "false", index);
    release(c->where[0], a);
    release(c->where[1], b);
    release(c->where[2], cc);
    free(before);
}

static void run_axpy(const char *dir, FILE *manifest, unsigned index, const acase_t *c)
{
    size_t es = c->single ? 4 : 8, nx = (c->n - 1) * c->incx + 1, ny = (c->n - 1) * c->incy + 1;
    void *x = space(c->where[0], nx, es), *y = space(c->where[1], ny, es), *before = malloc(ny * es);
    for (size_t i = 0; i < nx; i++)
        put(x, i, draw(0), c->single);
    for (size_t i = 0; i < ny; i++)
        put(y, i, draw(0), c->single);
    memcpy(before, y, ny * es);
    if (c->single)
        OK(grain_saxpy(g, c->n, (float)c->alpha, x, c->incx, y, c->incy, c->tile));
    else
        OK(grain_daxpy(g, c->n, c->alpha, x, c->incx, y, c->incy, c->tile));
    last_is(c->single ? GRAIN_BLAS_SAXPY : GRAIN_BLAS_DAXPY, c->tile);
    FILE *f = case_file(dir, index);
    dump(f, x, nx, es);
    dump(f, before, ny, es);
    dump(f, y, ny, es);
    fclose(f);
    fprintf(manifest,
            "{\"case\":%u,\"routine\":\"%caxpy\",\"n\":%zu,\"incx\":%zu,\"incy\":%zu,\"alpha\":%.17g,\"tile\":%zu,"
            "\"where\":\"%s\",\"integer\":false,\"file\":\"case%u.bin\"}\n",
            index, c->single ? 's' : 'd', c->n, c->incx, c->incy, c->alpha, c->tile, c->where, index);
    release(c->where[0], x);
    release(c->where[1], y);
    free(before);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: blas_cases DIR\n");
        return 2;
    }
    static const gcase_t gemms[] = {
        /* the shape, T = 256, leading dimensions past the rows */
        {'N', 'N', 1000, 777, 513, 3, 256, 2.0, -1.0, "hhh", 1, 0, 0},
        /* every location of A, B and C */
        {'N', 'N', 300, 200, 150, 1, 64, 1.0, 1.0, "ghh", 1, 0, 0},
        {'N', 'N', 300, 200, 150, 1, 64, 1.0, 1.0, "hgh", 1, 0, 0},
        {'N', 'N', 300, 200, 150, 1, 64, 1.0, 1.0, "hhg", 1, 0, 0},
        {'N', 'N', 300, 200, 150, 1, 64, 1.0, 1.0, "ggh", 1, 0, 0},
        {'N', 'N', 300, 200, 150, 1, 64, 1.0, 1.0, "ghg", 1, 0, 0},
        {'N', 'N', 300, 200, 150, 1, 64, 1.0, 1.0, "hgg", 1, 0, 0},
        {'N', 'N', 300, 200, 150, 1, 64, 1.0, 1.0, "ggg", 1, 0, 0},
        /* page-locked operands beside pageable and heap ones, and transposed */
        {'N', 'N', 300, 200, 150, 1, 64, 1.0, 1.0, "pph", 1, 0, 0},
        {'T', 'N', 130, 90, 70, 2, 32, 1.0, -1.0, "hgp", 1, 0, 0},
        /* transposes, real data, tiles that divide nothing */
        {'N', 'T', 130, 90, 70, 2, 32, 0.5, 0.25, "hhh", 0, 0, 0},
        {'T', 'N', 130, 90, 70, 0, 32, -1.5, 0.0, "hhh", 0, 0, 0},
        {'T', 'T', 130, 90, 70, 5, 32, 1.0, 1.0, "ghg", 0, 0, 0},
        {'C', 'T', 64, 64, 64, 0, 48, 1.0, 1.0, "hhh", 1, 0, 0},
        /* fat-by-thin (M = N = 64 r^3 / 8, K = 64) and thin-by-fat (M = N = 64, K = 64 r^3 / 8), r = 3, 4, 5 */
        {'N', 'N', 216, 216, 64, 0, 64, 1.0, 1.0, "hhh", 1, 0, 0},
        {'N', 'N', 512, 512, 64, 0, 96, 1.0, 1.0, "hhh", 1, 0, 0},
        {'N', 'N', 1000, 1000, 64, 0, 128, 1.0, 1.0, "hhh", 1, 0, 0},
        {'N', 'N', 64, 64, 216, 0, 64, 1.0, 1.0, "hhh", 1, 0, 0},
        {'N', 'N', 64, 64, 512, 0, 64, 1.0, 1.0, "hhh", 1, 0, 0},
        {'N', 'N', 64, 64, 1000, 0, 96, 1.0, 1.0, "hhh", 1, 0, 0},
        /* beta = 0 never reads C (NaNs in it); alpha = 0 reads neither A nor B; k = 0 */
        {'N', 'N', 100, 80, 60, 0, 32, 1.0, 0.0, "hhh", 1, 0, 1},
        {'N', 'N', 100, 80, 60, 0, 32, 0.0, 2.0, "hhh", 1, 0, 0},
        {'N', 'N', 100, 80, 0, 0, 32, 1.0, 3.0, "hhh", 1, 0, 0},
        /* single precision */
        {'T', 'T', 257, 129, 300, 1, 64, 1.0, -2.0, "hhh", 1, 1, 0},
        {'N', 'N', 150, 100, 80, 0, 50, 0.75, 0.5, "ghh", 0, 1, 0},
    };
    static const acase_t axpys[] = {
        {100000, 1, 1, 4096, 2.5, "hh", 0}, {30001, 2, 3, 1000, -1.0, "gh", 0}, {30001, 3, 1, 1000, 0.5, "hg", 0},
        {5000, 1, 2, 0, 1.5, "gg", 0},      {70000, 1, 1, 8192, 3.0, "hh", 1},
        {40000, 1, 2, 3000, 1.0, "pp", 0},  {40000, 2, 1, 3000, -0.5, "ph", 0},
        /* tiles past a staging chunk (8 MiB): contiguous, in pieces of a column; strided, in runs of columns */
        {1500000, 1, 1, 0, 0.5, "hh", 0},   {1200000, 2, 1, 0, -2.0, "hh", 0},
    };
    OK(grain_init(NULL, &g));
    grain_blas_last_t none;
    if (grain_blas_last(g, &none) != GRAIN_ERR_STATE) {
        fprintf(stderr, "blas_cases: grain_blas_last answered before any call\n");
        return 1;
    }
    /* What the routines refuse, each with its sentence. */
    double m4[16] = {0};
    refused(grain_dgemm(g, 'X', 'N', 4, 4, 4, 1.0, m4, 4, m4, 4, 0.0, m4, 4, 0), "transa 'X'");
    refused(grain_dgemm(g, 'N', 'N', 4, 4, 4, 1.0, m4, 3, m4, 4, 0.0, m4, 4, 0), "lda is wrong");
    refused(grain_dgemm(g, 'N', 'T', 4, 4, 2, 1.0, m4, 4, m4, 3, 0.0, m4, 4, 0), "ldb is wrong");
    refused(grain_dgemm(g, 'N', 'N', 4, 4, 4, 1.0, NULL, 4, m4, 4, 0.0, m4, 4, 0), "an operand is missing");
    refused(grain_daxpy(g, 4, 1.0, m4, 0, m4, 1, 0), "increments 0 and 1");
    /* Host operands whose tiles cannot all be on the device (8 TiB each):
     * refused with a sentence before any of them is read. */
    size_t huge = (size_t)1 << 20;
    grain_status_t too_big = grain_dgemm(g, 'N', 'N', huge, huge, huge, 1.0, m4, huge, m4, huge, 1.0, m4, huge, 2048);
    if (too_big == GRAIN_OK || strstr(grain_error_message(g), "do not fit the device") == NULL) {
        fprintf(stderr, "blas_cases: a gemm past the device's memory gave %d (%s)\n", (int)too_big,
                grain_error_message(g));
        return 1;
    }
    printf("blas_cases: refused: %s\n", grain_error_message(g));
    char path[4096];
    snprintf(path, sizeof path, "%s/cases.jsonl", argv[1]);
    FILE *manifest = fopen(path, "w");
    if (manifest == NULL) {
        perror(path);
        return 2;
    }
    unsigned index = 0;
    for (size_t i = 0; i < sizeof gemms / sizeof gemms[0]; i++)
        run_gemm(argv[1], manifest, index++, &gemms[i]);
    for (size_t i = 0; i < sizeof axpys / sizeof axpys[0]; i++)
        run_axpy(argv[1], manifest, index++, &axpys[i]);
    fclose(manifest);
    printf("blas_cases: %u cases on %s (%s)\n", index, grain_device_name(g), grain_backend_name(g));
    OK(grain_finalize(g));
    return 0;
}
