/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * blas_replay: every tiled-BLAS model's time for problems that ran, from
 * the profile of the device they ran on, without the device.  A change to
 * the models is checked against every stored run of blas_bench (CoCoPeLia
 * figs. 4-6) in a second; bench/blas_replay.py reads the runs and compares.
 *
 *   blas_replay <profile> <device>
 *
 * reads lines "routine m n k where tile" (routine dgemm|sgemm|daxpy|saxpy;
 * axpy gives n for m and ignores n and k; where a letter an operand as
 * blas_bench places them: h the host's pageable memory, p page-locked, g
 * grain's heap; gemm as blas_bench runs it, C = A B + C) and prints for
 * each a line of "model seconds" pairs, every model, or "error <why>";
 * tile 0 asks for each model's selection instead, "model tile" pairs.
 * The placement is what the routines see on a GPU that stages pageable
 * memory; a run without the page-locked links deployed costs p as h, as
 * the routines' selection does.
 */
#include <stdio.h>
#include <string.h>

#include "grain/blas.h"
#include "runtime/blas/blas_model.h"
#include "runtime/blas/blas_profile.h"
#include "runtime/blas/blas_select.h"

static int where_of(char c)
{
    return c == 'h' ? BLAS_ON_HOST : c == 'p' ? BLAS_ON_PINNED : c == 'g' ? BLAS_ON_DEVICE : -1;
}

static void replay(const blas_profile_t *p, const char *line)
{
    char name[16], where[4];
    size_t m, n, k, tile;
    if (sscanf(line, "%15s %zu %zu %zu %3s %zu", name, &m, &n, &k, where, &tile) != 6) {
        printf("error not a line of routine m n k where tile\n");
        return;
    }
    unsigned routine = 0;
    while (routine < BLAS_ROUTINES && strcmp(name, blas_routine_names[routine]) != 0)
        routine++;
    int gemm = routine == BLAS_DGEMM || routine == BLAS_SGEMM, on[3];
    size_t operands = gemm ? 3 : 2, es = routine == BLAS_DGEMM || routine == BLAS_DAXPY ? 8 : 4;
    for (size_t i = 0; i < 3; i++)
        on[i] = i < operands && i < strlen(where) ? where_of(where[i]) : -1;
    double t_gpu = routine < BLAS_ROUTINES ? blas_profile_seconds(p, routine, tile) : -1.0;
    if (routine == BLAS_ROUTINES || strlen(where) != operands || on[0] < 0 || on[1] < 0 || (gemm && on[2] < 0)) {
        printf("error %s %s: a routine and a letter (h, p, g) an operand\n", name, where);
        return;
    }
    if (t_gpu < 0 && tile > 0) {
        printf("error tile %zu was not deployed for %s\n", tile, name);
        return;
    }
    blas_shape_t s;
    if (gemm)
        blas_shape_gemm(&s, m, n, k, es, on[0], on[1], on[2], 0);
    else
        blas_shape_axpy(&s, m, es, on[0], on[1]);
    blas_lookup_t lk = blas_profile_lookup(p, routine);
    for (unsigned model = 0; model < BLAS_MODELS; model++) {
        const char *mname = grain_blas_model_name((grain_blas_model_t)model);
        if (tile == 0)
            printf("%s%s %zu", model ? " " : "", mname, blas_select_tile((blas_model_t)model, &p->machine, &s, &lk,
                                                                         NULL));
        else
            printf("%s%s %.9g", model ? " " : "", mname, blas_predict((blas_model_t)model, &p->machine, &s, tile,
                                                                       t_gpu));
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: blas_replay <profile> <device>, then lines of \"routine m n k where tile\"\n");
        return 2;
    }
    blas_profile_t p;
    int read = blas_profile_read(&p, argv[1], argv[2]);
    if (read <= 0) {
        fprintf(stderr, "blas_replay: %s has %s profile of \"%s\"\n", argv[1], read < 0 ? "a damaged" : "no",
                argv[2]);
        return 1;
    }
    char line[256];
    while (fgets(line, sizeof line, stdin) != NULL) {
        replay(&p, line);
        fflush(stdout);
    }
    blas_profile_free(&p);
    return 0;
}
