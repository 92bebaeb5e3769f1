/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tiled BLAS's deployment and selection on the rank's device:
 *
 *   blas_select deploy   refuses to predict before a profile exists, then
 *                        deploys (GRAIN_BLAS_PROFILE) and selects
 *   blas_select reuse    selects from the profile a deployment kept
 *
 * Each prints the tile every model selects for a dgemm and a daxpy on
 * host operands, checks that it is a deployed tile no other deployed tile
 * that fits is predicted to beat, and runs the dgemm with tile 0 against
 * the host's product of integers: it must take the tile GRAIN_BLAS_MODEL
 * selects (by default schedule), and report that model's prediction.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_ok.h"
#include "grain/blas.h"

/* The tiles the profile (GRAIN_BLAS_PROFILE) holds for `routine` of this
 * device, from its kernel line (docs/blas.md gives the format). */
static size_t deployed(const char *device, const char *routine, size_t *tiles, size_t max)
{
    const char *path = getenv("GRAIN_BLAS_PROFILE");
    FILE *f = path != NULL ? fopen(path, "r") : NULL;
    char line[1 << 16], want[512];
    size_t n = 0;
    snprintf(want, sizeof want, "%s\tkernel\t%s\t", device, routine);
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, want, strlen(want)) == 0) {
            n = 0;
            for (char *at = line + strlen(want); *at && n < max; at++) {
                tiles[n++] = strtoul(at, &at, 10);
                at = strchr(at, ',');
                if (at == NULL)
                    break;
            }
        }
    if (f != NULL)
        fclose(f);
    return n;
}

static int check_select(grain_t *g, const grain_blas_problem_t *q, const char *what)
{
    int bad = 0;
    size_t tiles[1024];
    size_t n = deployed(grain_device_name(g), q->routine == GRAIN_BLAS_DGEMM ? "dgemm" : "daxpy", tiles, 1024);
    if (n == 0) {
        fprintf(stderr, "blas_select: %s: no tiles in the profile\n", what);
        return 1;
    }
    for (int m = 0; m < GRAIN_BLAS_MODELS; m++) {
        const char *name = grain_blas_model_name((grain_blas_model_t)m);
        size_t tile = 0;
        double best, t;
        OK(grain_blas_select(g, q, (grain_blas_model_t)m, &tile));
        OK(grain_blas_predict(g, q, tile, (grain_blas_model_t)m, &best));
        /* No deployed tile that fits the problem is predicted faster. */
        for (size_t i = 0; i < n; i++) {
            size_t other = tiles[i];
            if (other > (q->routine == GRAIN_BLAS_DGEMM ? q->m : q->n))
                continue;
            OK(grain_blas_predict(g, q, other, (grain_blas_model_t)m, &t));
            if (t < best * (1 - 1e-12)) {
                fprintf(stderr, "blas_select: %s, %s: tile %zu predicted %g s, below the selected %zu's %g s\n", what,
                        name, other, t, tile, best);
                bad = 1;
            }
        }
        if (!(best > 0 && isfinite(best)))
            bad = 1;
        printf("blas_select: %s, %s: tile %zu, %.3g s predicted\n", what, name, tile, best);
    }
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "deploy") != 0 && strcmp(argv[1], "reuse") != 0)) {
        fprintf(stderr, "usage: blas_select deploy|reuse\n");
        return 2;
    }
    grain_t *g;
    OK(grain_init(NULL, &g));
    enum { M = 200, N = 150, K = 170 };
    double *a = malloc(M * K * sizeof *a), *b = malloc(K * N * sizeof *b), *c = calloc(M * N, sizeof *c);
    if (a == NULL || b == NULL || c == NULL)
        return 2;
    for (int i = 0; i < M * K; i++)
        a[i] = (double)(i % 17 - 8);
    for (int i = 0; i < K * N; i++)
        b[i] = (double)(i % 13 - 6);
    grain_blas_problem_t gemm = {.routine = GRAIN_BLAS_DGEMM, .m = M, .n = N, .k = K, .transa = 'N', .transb = 'N',
                                 .a = a, .b = b, .c = c, .beta_zero = 1};
    grain_blas_problem_t axpy = {.routine = GRAIN_BLAS_DAXPY, .n = 1u << 20, .a = a, .b = b};
    size_t tile;
    if (strcmp(argv[1], "deploy") == 0) {
        grain_status_t st = grain_blas_select(g, &gemm, GRAIN_BLAS_MODEL_DR, &tile);
        if (st != GRAIN_ERR_STATE || strstr(grain_error_message(g), "deploy first") == NULL) {
            fprintf(stderr, "blas_select: selection before deployment gave %s (%s)\n", grain_strerror(st),
                    grain_error_message(g));
            return 1;
        }
        printf("blas_select: refused before deployment: %s\n", grain_error_message(g));
        OK(grain_blas_deploy(g, NULL));
    }
    int bad = check_select(g, &gemm, "dgemm 200x150x170") | check_select(g, &axpy, "daxpy 2^20");
    /* The tile copies' cost depends on how far apart A's columns lie, but
     * never closer than its rows. */
    grain_blas_problem_t wide = gemm, narrow = gemm;
    wide.lda = 4 * M;
    narrow.ldb = K - 1;
    bad |= check_select(g, &wide, "dgemm 200x150x170, lda 800");
    if (grain_blas_select(g, &narrow, GRAIN_BLAS_MODEL_SCHEDULE, &tile) != GRAIN_ERR_INVALID ||
        strstr(grain_error_message(g), "ldb 169") == NULL) {
        fprintf(stderr, "blas_select: ldb below B's rows not refused (%s)\n", grain_error_message(g));
        bad = 1;
    }
    OK(grain_dgemm(g, 'N', 'N', M, N, K, 1.0, a, M, b, K, 0.0, c, M, 0));
    const char *by = getenv("GRAIN_BLAS_MODEL") != NULL ? getenv("GRAIN_BLAS_MODEL") : "schedule";
    grain_blas_model_t model;
    OK(grain_blas_model_parse(by, &model));
    grain_blas_last_t last;
    double predicted = 0;
    OK(grain_blas_last(g, &last));
    OK(grain_blas_select(g, &gemm, (grain_blas_model_t)model, &tile));
    OK(grain_blas_predict(g, &gemm, tile, (grain_blas_model_t)model, &predicted));
    if (last.tile != tile || last.predicted_s != predicted) {
        fprintf(stderr, "blas_select: the dgemm with tile 0 took tile %zu (%g s predicted), %s selects %zu (%g s)\n",
                last.tile, last.predicted_s, by, tile, predicted);
        bad = 1;
    }
    for (int j = 0; j < N && !bad; j++)
        for (int i = 0; i < M && !bad; i++) {
            double want = 0;
            for (int l = 0; l < K; l++)
                want += a[l * M + i] * b[j * K + l];
            if (c[j * M + i] != want) {
                fprintf(stderr, "blas_select: C(%d, %d) = %g, wanted %g\n", i, j, c[j * M + i], want);
                bad = 1;
            }
        }
    printf("blas_select: %s: %s\n", argv[1], bad ? "WRONG" : "ok");
    free(a);
    free(b);
    free(c);
    OK(grain_finalize(g));
    return bad;
}
