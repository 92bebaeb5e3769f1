/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * blas_bench: grain's tiled gemm (grain/blas.h) on operands that start in
 * the host's pageable memory, as "CoCoPeLia: Communication-Computation
 * Overlap Prediction for Efficient Linear Algebra on GPUs" (figs. 4-7)
 * measures tiles on data that starts on the host: C = A B + C, so that A
 * and B go to the device and C both ways.  For each shape and each tile (0:
 * the one grain selects from the device's profile) it times --reps calls
 * and prints a JSON line: the median and best time, GFLOP/s, the tile
 * used, the time the selecting model predicted for it and where the
 * calling thread's time went (grain_blas_last), every model's time, and
 * the bench's own seconds beside the calls: filling and placing the
 * operands (fill_s, once a shape), refilling C (prep_s) and checking it
 * (check_s).
 * With --where, operands are copied into grain's heap first (partial
 * offload: "g" for A, B or C, axpy's x or y), or into page-locked host
 * memory ("p", grain_mem_alloc).  The first call of each is
 * checked: 64 entries of C against the host's sums.  With --routine daxpy
 * or saxpy, y = x + y on vectors of each N of --shapes.
 * bench/blas_bench.py sets it beside cuBLASXt on the same shapes.
 *
 *   mpirun -np 1 blas_bench [--routine dgemm|sgemm|daxpy|saxpy] [--shapes MxNxK[,...] | N[,...]]
 *                           [--tiles T[,...]] [--reps R] [--deploy] [--where hhh|ghh|pph|...|hh|gh|pp|...]
 *   (--deploy: measure the device's profile first, GRAIN_BLAS_PROFILE's,
 *   and print a JSON line of its time)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grain/blas.h"
#include "tools/cli/cli.h"

#define MAX_LIST 32
#define CHECKED 64

typedef struct options {
    grain_blas_routine_t routine;
    int single, axpy, deploy;
    const char *shapes_text; /* parsed once the routine is known */
    char where[4];           /* A, B, C (axpy: x, y): 'h' the host's memory, 'g' grain's heap */
    size_t shapes[MAX_LIST][3], tiles[MAX_LIST];
    unsigned n_shapes, n_tiles;
    unsigned long long reps;
} options_t;

enum { OPT_ROUTINE, OPT_SHAPES, OPT_TILES, OPT_REPS, OPT_DEPLOY, OPT_WHERE };

/* "AxBxC,..." (`dims` numbers an item) into out; the items. */
static unsigned list(const char *option, const char *value, unsigned dims, int zero_ok, size_t *out)
{
    unsigned n = 0;
    for (const char *at = value; *at != '\0'; n++) {
        char *end;
        unsigned long long v = strtoull(at, &end, 10);
        int last = (n + 1) % dims == 0;
        if (n == MAX_LIST * dims || end == at || (v == 0 && !zero_ok) ||
            (last ? *end != ',' && *end != '\0' : *end != 'x')) {
            fprintf(stderr, "blas_bench: %s %s: expected %s, at most %d\n", option, value,
                    dims == 3   ? "MxNxK[,MxNxK...], each above 0"
                    : zero_ok ? "T[,T...] (0: selected)"
                                : "N[,N...], each above 0",
                    MAX_LIST);
            exit(CLI_EXIT_USAGE);
        }
        out[n] = (size_t)v;
        at = *end != '\0' ? end + 1 : end;
    }
    if (n == 0 || n % dims != 0) {
        fprintf(stderr, "blas_bench: %s %s: incomplete\n", option, value);
        exit(CLI_EXIT_USAGE);
    }
    return n / dims;
}

static void take(void *state, int key, const char *option, const char *value)
{
    static const char *const routines[] = {"dgemm", "sgemm", "daxpy", "saxpy"};
    options_t *o = state;
    if (key == OPT_ROUTINE) {
        unsigned r = 0;
        while (r < 4 && strcmp(value, routines[r]) != 0)
            r++;
        if (r == 4) {
            fprintf(stderr, "blas_bench: %s %s: dgemm, sgemm, daxpy or saxpy\n", option, value);
            exit(CLI_EXIT_USAGE);
        }
        o->routine = (grain_blas_routine_t)r; /* grain/blas.h's order */
        o->single = value[0] == 's';
        o->axpy = r >= 2;
    } else if (key == OPT_SHAPES) {
        o->shapes_text = value;
    } else if (key == OPT_TILES) {
        o->n_tiles = list(option, value, 1, 1, o->tiles);
    } else if (key == OPT_REPS) {
        o->reps = cli_u64_in(option, value, 1, 1000);
    } else if (key == OPT_WHERE) {
        size_t n = strlen(value);
        if (n < 2 || n > 3 || strspn(value, "hgp") != n) {
            fprintf(stderr, "blas_bench: %s %s: a letter an operand (A, B, C; axpy x, y), h for the host's memory, "
                            "g for grain's heap or p for its page-locked memory\n", option, value);
            exit(CLI_EXIT_USAGE);
        }
        memcpy(o->where, value, n + 1);
    } else {
        o->deploy = 1;
    }
}

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np 1 blas_bench [--routine dgemm|sgemm|daxpy|saxpy] [--shapes MxNxK[,...] | N[,...]]\n"
                 "                  [--tiles T[,...]] [--reps R] [--deploy] [--where hhh|ghh|pph|...|hh|gh|pp|...]\n"
                 "  times C = A B + C (y = x + y) per shape and tile (0: grain's selection), a JSON line each, with\n"
                 "  each operand in the host's pageable memory (h, the default), grain's heap (g) or page-locked\n"
                 "  memory (p)\n");
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static double draw(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53 * 2.0 - 1.0;
}

static double get(const void *x, size_t i, int single)
{
    return single ? (double)((const float *)x)[i] : ((const double *)x)[i];
}

/* C = A B + C, or axpy's y = x + y with x in `a` and y in `c` (m x 1). */
static grain_status_t call(grain_t *g, const options_t *o, size_t m, size_t n, size_t k, const void *a, const void *b,
                           void *c, size_t tile)
{
    switch (o->routine) {
    case GRAIN_BLAS_SGEMM:
        return grain_sgemm(g, 'N', 'N', m, n, k, 1.0f, a, m, b, k, 1.0f, c, m, tile);
    case GRAIN_BLAS_DAXPY:
        return grain_daxpy(g, m, 1.0, a, 1, c, 1, tile);
    case GRAIN_BLAS_SAXPY:
        return grain_saxpy(g, m, 1.0f, a, 1, c, 1, tile);
    default:
        return grain_dgemm(g, 'N', 'N', m, n, k, 1.0, a, m, b, k, 1.0, c, m, tile);
    }
}

/* The largest relative error of CHECKED entries of C against the host's
 * sums of A B + C0 (axpy: x + y0, k = 1 with B a 1 x 1 one), in double. */
static double check(int single, size_t m, size_t n, size_t k, const void *a, const void *b, const void *c,
                    const size_t *rows, const size_t *cols, const double *c0)
{
    double worst = 0.0;
    for (unsigned e = 0; e < CHECKED; e++) {
        double want = c0[e], scale = fabs(c0[e]);
        for (size_t l = 0; l < k; l++) {
            double p = get(a, l * m + rows[e], single) * get(b, cols[e] * k + l, single);
            want += p;
            scale += fabs(p);
        }
        double err = fabs(get(c, cols[e] * m + rows[e], single) - want) / (scale > 0.0 ? scale : 1.0);
        worst = err > worst ? err : worst;
    }
    return worst;
}

/* One call: its time here and grain's account of it. */
typedef struct timed {
    double seconds;
    grain_blas_last_t last;
} timed_t;

static int by_time(const void *x, const void *y)
{
    double a = ((const timed_t *)x)->seconds, b = ((const timed_t *)y)->seconds;
    return (a > b) - (a < b);
}

/* Where operand 0, 1 or 2 lies (A, B, C; axpy: x in A, y in C, and B
 * the check's alone, on the host): --where's letter. */
static char place_of(const options_t *o, unsigned operand)
{
    if (o->axpy)
        return operand == 1 ? 'h' : o->where[operand / 2];
    return o->where[operand];
}

/* The heap the largest shape's operands in it need. */
static size_t heap_needed(const options_t *o)
{
    size_t most = 0, es = o->single ? 4 : 8;
    for (unsigned i = 0; i < o->n_shapes; i++) {
        const size_t *d = o->shapes[i];
        size_t bytes[3] = {d[0] * d[2] * es, d[2] * d[1] * es, d[0] * d[1] * es}, sum = 0;
        for (unsigned x = 0; x < 3; x++)
            sum += place_of(o, x) == 'g' ? bytes[x] : 0;
        most = sum > most ? sum : most;
    }
    return most;
}

/* The operand the call takes: a copy of the host's in the heap or in
 * page-locked memory, or the host's itself. */
static void *placed(grain_t *g, const options_t *o, unsigned operand, void *host, size_t bytes, int *failed)
{
    void *p = NULL;
    char where = place_of(o, operand);
    if (*failed || where == 'h')
        return host;
    grain_status_t st = where == 'g' ? grain_malloc(g, bytes, &p) : grain_mem_alloc(g, bytes, &p);
    if (st != GRAIN_OK || grain_memcpy(g, p, host, bytes) != GRAIN_OK) {
        fprintf(stderr, "blas_bench: %zu bytes into %s: %s\n", bytes, where == 'g' ? "the heap" : "page-locked memory",
                grain_error_message(g));
        *failed = 1;
        return host;
    }
    return p;
}

static void unplaced(grain_t *g, const options_t *o, unsigned operand, void *p, const void *host)
{
    if (p == host)
        return;
    if (place_of(o, operand) == 'g')
        grain_free(g, p);
    else
        grain_mem_free(g, p);
}

static int run_shape(grain_t *g, const options_t *o, const size_t shape[3])
{
    /* axpy's N is an m x 1 x 1 shape: x in A, y in C, B a 1 x 1 one for the check. */
    size_t m = shape[0], n = shape[1], k = shape[2], es = o->single ? 4 : 8;
    /* The bench's own time beside the calls' (fill, prep, check: what a
     * problem costs the device machine besides them). */
    double t_fill = cli_now_s();
    /* C's first contents, drawn once: each tile starts from them. */
    void *a = malloc(m * k * es), *b = malloc(k * n * es), *c = malloc(m * n * es), *c_first = malloc(m * n * es);
    timed_t *times = malloc(o->reps * sizeof *times);
    if (a == NULL || b == NULL || c == NULL || c_first == NULL || times == NULL) {
        fprintf(stderr, "blas_bench: no host memory for %zux%zux%zu\n", m, n, k);
        return 1;
    }
    int single = o->single;
    for (size_t i = 0; i < m * k; i++)
        single ? (void)(((float *)a)[i] = (float)draw()) : (void)(((double *)a)[i] = draw());
    for (size_t i = 0; i < k * n; i++)
        single ? (void)(((float *)b)[i] = o->axpy ? 1.0f : (float)draw())
               : (void)(((double *)b)[i] = o->axpy ? 1.0 : draw());
    for (size_t i = 0; i < m * n; i++)
        single ? (void)(((float *)c_first)[i] = (float)draw()) : (void)(((double *)c_first)[i] = draw());
    int failed = 0;
    /* C's copy in the heap is refilled from the host's for each tile. */
    void *ga = placed(g, o, 0, a, m * k * es, &failed), *gb = placed(g, o, 1, b, k * n * es, &failed);
    void *gc = placed(g, o, 2, c, m * n * es, &failed);
    double fill_s = cli_now_s() - t_fill;
    for (unsigned t = 0; t < o->n_tiles && !failed; t++) {
        double t_prep = cli_now_s(), check_s = 0.0;
        size_t rows[CHECKED], cols[CHECKED];
        double c0[CHECKED];
        memcpy(c, c_first, m * n * es);
        for (unsigned e = 0; e < CHECKED; e++) {
            rows[e] = (size_t)((draw() + 1.0) * 0.5 * (double)m) % m;
            cols[e] = (size_t)((draw() + 1.0) * 0.5 * (double)n) % n;
            c0[e] = get(c, cols[e] * m + rows[e], single);
        }
        if (gc != c && grain_memcpy(g, gc, c, m * n * es) != GRAIN_OK) {
            fprintf(stderr, "blas_bench: C into the heap: %s\n", grain_error_message(g));
            failed = 1;
            break;
        }
        double err = 0.0, prep_s = cli_now_s() - t_prep;
        for (unsigned r = 0; r < o->reps && !failed; r++) {
            double t0 = cli_now_s();
            grain_status_t st = call(g, o, m, n, k, ga, gb, gc, o->tiles[t]);
            times[r].seconds = cli_now_s() - t0;
            if (st != GRAIN_OK) {
                fprintf(stderr, "blas_bench: %zux%zux%zu, tile %zu: %s\n", m, n, k, o->tiles[t],
                        grain_error_message(g));
                failed = 1;
                break;
            }
            grain_blas_last(g, &times[r].last);
            double t_check = cli_now_s();
            if (r == 0 && gc != c && grain_memcpy(g, c, gc, m * n * es) != GRAIN_OK) {
                fprintf(stderr, "blas_bench: C from the heap: %s\n", grain_error_message(g));
                failed = 1;
            }
            if (r == 0 && !failed)
                err = check(single, m, n, k, a, b, c, rows, cols, c0);
            check_s += cli_now_s() - t_check;
        }
        if (failed)
            break;
        qsort(times, o->reps, sizeof *times, by_time);
        const grain_blas_last_t last = times[o->reps / 2].last; /* the median call's */
        /* Every model's time for the tile used, where the device has a
         * profile (CoCoPeLia figs. 4-6 set them against the measured one). */
        char predicted[512] = "";
        grain_blas_problem_t q = {.routine = o->routine, .m = m, .n = n, .k = k, .transa = 'N', .transb = 'N',
                                  .a = ga, .b = gb, .c = gc};
        if (o->axpy)
            q = (grain_blas_problem_t){.routine = o->routine, .n = m, .a = ga, .b = gc};
        for (unsigned x = 0; x < GRAIN_BLAS_MODELS && last.predicted_s > 0.0; x++) {
            double t = 0.0;
            grain_blas_predict(g, &q, last.tile, (grain_blas_model_t)x, &t);
            size_t at = strlen(predicted);
            snprintf(predicted + at, sizeof predicted - at, "%s\"%s\":%.6f", x ? "," : "",
                     grain_blas_model_name((grain_blas_model_t)x), t);
        }
        double median = times[o->reps / 2].seconds, flops = 2.0 * (double)m * (double)n * (double)k;
        /* The sums' rounding grows with sqrt(k) ulps at worst, far below this. */
        int ok = err < (single ? 1e-4 : 1e-11);
        static const char *const names[] = {"dgemm", "sgemm", "daxpy", "saxpy"};
        printf("{\"routine\":\"%s\",\"where\":\"%s\",\"m\":%zu,\"n\":%zu,\"k\":%zu,\"tile_asked\":%zu,"
               "\"tile\":%zu,\"reps\":%llu,\"seconds\":%.6f,\"best_s\":%.6f,\"gflops\":%.2f,\"predicted_s\":%.6f,"
               "\"models\":{%s},\"pack_s\":%.6f,\"unpack_s\":%.6f,\"wait_s\":%.6f,"
               "\"max_rel_err\":%.3g,\"verified\":%s,\"device\":\"%s\",\"backend\":\"%s\","
               "\"fill_s\":%.3f,\"prep_s\":%.3f,\"check_s\":%.3f}\n",
               names[o->routine], o->where, m, n, k, o->tiles[t], last.tile, o->reps, median, times[0].seconds,
               flops / median * 1e-9, last.predicted_s, predicted, last.pack_s, last.unpack_s, last.wait_s, err,
               ok ? "true" : "false", grain_device_name(g), grain_backend_name(g), fill_s, prep_s, check_s);
        fflush(stdout);
        failed = !ok;
    }
    unplaced(g, o, 0, ga, a);
    unplaced(g, o, 1, gb, b);
    unplaced(g, o, 2, gc, c);
    free(a);
    free(b);
    free(c);
    free(c_first);
    free(times);
    return failed;
}

int main(int argc, char **argv)
{
    options_t o = {.n_tiles = 1, .reps = 5};
    static const cli_option_t options[] = {{"routine", 1, OPT_ROUTINE}, {"shapes", 1, OPT_SHAPES},
                                           {"tiles", 1, OPT_TILES},     {"reps", 1, OPT_REPS},
                                           {"deploy", 0, OPT_DEPLOY},   {"where", 1, OPT_WHERE}};
    const cli_group_t groups[] = {CLI_GROUP(options, take, &o)};
    cli_parse("blas_bench", argc, argv, groups, 1, 0, usage);
    const char *shapes = o.shapes_text != NULL ? o.shapes_text : o.axpy ? "67108864" : "4096x4096x4096";
    size_t dims = o.axpy ? 1 : 3, parsed[MAX_LIST * 3];
    o.n_shapes = list("--shapes", shapes, (unsigned)dims, 0, parsed);
    for (unsigned i = 0; i < o.n_shapes; i++)
        for (unsigned d = 0; d < 3; d++)
            o.shapes[i][d] = d < dims ? parsed[i * dims + d] : 1;
    if (o.where[0] == '\0')
        strcpy(o.where, o.axpy ? "hh" : "hhh");
    if (strlen(o.where) != (o.axpy ? 2u : 3u)) {
        fprintf(stderr, "blas_bench: --where %s: %s\n", o.where,
                o.axpy ? "two letters, x and y" : "three letters, A, B and C");
        return CLI_EXIT_USAGE;
    }
    /* The heap holds the operands placed there, whatever GRAIN_HEAP_SIZE says. */
    size_t heap = heap_needed(&o);
    char bytes[32];
    snprintf(bytes, sizeof bytes, "%zu", heap + (64u << 20));
    grain_config_t *config = NULL;
    grain_t *g = NULL;
    grain_status_t st = grain_config_create(&config);
    if (st == GRAIN_OK && heap > 0)
        st = grain_config_set(config, "heap_size", bytes);
    if (st == GRAIN_OK)
        st = grain_init(config, &g);
    grain_config_destroy(config);
    if (st != GRAIN_OK) {
        fprintf(stderr, "blas_bench: grain_init failed: %s\n", grain_strerror(st));
        return 1;
    }
    int failed = 0;
    if (o.deploy) {
        double t0 = cli_now_s();
        if (grain_blas_deploy(g, NULL) != GRAIN_OK) {
            fprintf(stderr, "blas_bench: deploying: %s\n", grain_error_message(g));
            failed = 1;
        } else {
            printf("{\"deploy_s\":%.3f,\"device\":\"%s\"}\n", cli_now_s() - t0, grain_device_name(g));
        }
    }
    for (unsigned s = 0; s < o.n_shapes && !failed; s++)
        failed = run_shape(g, &o, o.shapes[s]);
    grain_finalize(g);
    return failed;
}
