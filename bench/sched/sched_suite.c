/* SPDX-License-Identifier: BSD-3-Clause */
/* The five benchmarks as arrays and steps (sched_suite.h), and the host's
 * run of the same steps. */
#include "sched_suite.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli/parallel.h"

enum { ROUND = 64, PARTS = 256, BS_VECTORS = 10, ML_FEATURES = 64, ML_CLASSES = 8, CG_ITERATIONS = 8 };
/* VEC's vectors are 2^27 long: 256 partial sums, a work-item each, left
 * an H100 idle for 0.2 s of its 0.26 s; 2^15 fill it and the one-thread
 * sum of them stays short. */
enum { VEC_PARTS = 1 << 15 };

static uint64_t next(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* Element i of the stream `key`: counter-based, so that threads draw
 * ranges of an array and get what one thread would (splitmix64's mix). */
static double uniform_at(uint64_t key, uint64_t i, double lo, double hi)
{
    uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * (double)(z >> 11) * 0x1p-53;
}

static int add_array(suite_t *s, size_t length, int input, int output)
{
    if (s->n_arrays == SUITE_ARRAYS)
        return -1;
    unsigned a = s->n_arrays++;
    s->length[a] = length;
    s->input[a] = input;
    s->output[a] = output;
    if (input && !s->dry && (s->init[a] = calloc(length, sizeof(double))) == NULL)
        return -1;
    return (int)a;
}

typedef struct draw {
    double *out;
    uint64_t key, n; /* n: CG's matrix's order, 0 for a vector */
    double lo, hi;
} draw_t;

static void draw_range(void *ctx, unsigned part, uint64_t first, uint64_t last)
{
    const draw_t *d = ctx;
    (void)part;
    for (uint64_t i = first; i < last; i++)
        d->out[i] = uniform_at(d->key, i, d->lo, d->hi);
}

/* Rows [first, last) of a symmetric matrix with n on its diagonal: element
 * (i, j) and (j, i) are the same draw. */
static void draw_spd_rows(void *ctx, unsigned part, uint64_t first, uint64_t last)
{
    const draw_t *d = ctx;
    (void)part;
    for (uint64_t i = first; i < last; i++)
        for (uint64_t j = 0; j < d->n; j++)
            d->out[i * d->n + j] = i == j ? (double)d->n
                                          : uniform_at(d->key, i < j ? i * d->n + j : j * d->n + i, d->lo, d->hi);
}

enum { DRAW_EACH = 1 << 16 }; /* the fewest elements drawn or read worth a thread */

static int random_input(suite_t *s, size_t length, uint64_t *rng, double lo, double hi)
{
    int a = add_array(s, length, 1, 0);
    draw_t d = {a >= 0 && !s->dry ? s->init[a] : NULL, next(rng), 0, lo, hi};
    if (d.out != NULL)
        cli_parallel_for(length, DRAW_EACH, draw_range, &d);
    return a;
}

static suite_step_t *add_step(suite_t *s, const char *kernel, size_t global, unsigned stream)
{
    if (s->n_steps == s->cap_steps) {
        unsigned cap = s->cap_steps ? 2 * s->cap_steps : 64;
        suite_step_t *grown = realloc(s->steps, cap * sizeof *grown);
        if (grown == NULL)
            return NULL;
        s->steps = grown;
        s->cap_steps = cap;
    }
    suite_step_t *st = &s->steps[s->n_steps++];
    *st = (suite_step_t){.kernel = kernel, .global = global, .stream = stream};
    if (stream + 1 > s->streams)
        s->streams = stream + 1;
    return st;
}

static void arg_array(suite_step_t *st, int array, grain_access_t access)
{
    st->args[st->n_args++] = (suite_arg_t){.array = array, .access = access};
}

static void arg_value(suite_step_t *st, uint64_t value)
{
    st->args[st->n_args++] = (suite_arg_t){.array = -1, .value = value};
}

static unsigned last_step(const suite_t *s)
{
    return s->n_steps - 1;
}

/* A step: its arrays with their accesses, then its values. */
static suite_step_t *step(suite_t *s, const char *kernel, size_t global, unsigned stream, const int *arrays,
                          const grain_access_t *access, unsigned n_arrays, const uint64_t *values, unsigned n_values)
{
    suite_step_t *st = add_step(s, kernel, global, stream);
    for (unsigned i = 0; st != NULL && i < n_arrays; i++)
        arg_array(st, arrays[i], access[i]);
    for (unsigned i = 0; st != NULL && i < n_values; i++)
        arg_value(st, values[i]);
    return st;
}

#define A(...) (const int[]){__VA_ARGS__}
#define ACC(...) (const grain_access_t[]){__VA_ARGS__}
#define V(...) (const uint64_t[]){__VA_ARGS__}
#define R GRAIN_READ
#define W GRAIN_WRITE
#define RW GRAIN_READ_WRITE

/* VEC: squares of two vectors on two streams, then the sum of their
 * difference. */
static void build_vec(suite_t *s, uint64_t n, uint64_t *rng)
{
    int x = random_input(s, n, rng, -1, 1), y = random_input(s, n, rng, -1, 1);
    int x2 = add_array(s, n, 0, 0), y2 = add_array(s, n, 0, 0), part = add_array(s, VEC_PARTS, 0, 0),
        res = add_array(s, 1, 0, 1);
    step(s, "square", n, 0, A(x2, x), ACC(W, R), 2, V(n), 1);
    step(s, "square", n, 1, A(y2, y), ACC(W, R), 2, V(n), 1);
    unsigned y_squared = last_step(s);
    suite_step_t *st = step(s, "partials", VEC_PARTS, 0, A(part, x2, y2), ACC(W, R, R), 3, V(n, VEC_PARTS, 1), 3);
    st->after[st->n_after++] = y_squared;
    step(s, "sum", 1, 0, A(res, part), ACC(W, R), 2, V(VEC_PARTS), 1);
}

/* B&S: ten independent vectors of prices. */
static void build_bs(suite_t *s, uint64_t n, uint64_t *rng)
{
    for (unsigned k = 0; k < BS_VECTORS; k++) {
        int spot = random_input(s, n, rng, 50, 150), call = add_array(s, n, 0, 1);
        step(s, "black_scholes", n, k % 8, A(call, spot), ACC(W, R), 2, V(n), 1);
    }
}

/* ML: two classifiers of the same rows on two streams (scores, softmax),
 * then their combined vote. */
static void build_ml(suite_t *s, uint64_t rows, uint64_t *rng)
{
    int x = random_input(s, rows * ML_FEATURES, rng, 0, 1);
    int w1 = random_input(s, ML_CLASSES * ML_FEATURES, rng, -1, 1);
    int w2 = random_input(s, ML_CLASSES * ML_FEATURES, rng, -1, 1);
    int s1 = add_array(s, rows * ML_CLASSES, 0, 0), s2 = add_array(s, rows * ML_CLASSES, 0, 0),
        label = add_array(s, rows, 0, 1);
    step(s, "scores", rows * ML_CLASSES, 0, A(s1, x, w1), ACC(W, R, R), 3, V(rows, ML_FEATURES, ML_CLASSES), 3);
    step(s, "softmax", rows, 0, A(s1), ACC(RW), 1, V(rows, ML_CLASSES), 2);
    step(s, "scores", rows * ML_CLASSES, 1, A(s2, x, w2), ACC(W, R, R), 3, V(rows, ML_FEATURES, ML_CLASSES), 3);
    step(s, "softmax", rows, 1, A(s2), ACC(RW), 1, V(rows, ML_CLASSES), 2);
    unsigned second = last_step(s);
    suite_step_t *st = step(s, "argmax2", rows, 0, A(label, s1, s2), ACC(W, R, R), 3, V(rows, ML_CLASSES), 2);
    st->after[st->n_after++] = second;
}

/* CG: conjugate gradient on a dense symmetric positive-definite matrix,
 * from x = 0 (r = p = b), a fixed number of iterations; x's update beside
 * r's on a second stream. */
static void build_cg(suite_t *s, uint64_t n, uint64_t *rng)
{
    int a = add_array(s, n * n, 1, 0);
    draw_t d = {a >= 0 && !s->dry ? s->init[a] : NULL, next(rng), n, -0.5, 0.5};
    if (d.out != NULL)
        cli_parallel_for(n, DRAW_EACH / n + 1, draw_spd_rows, &d);
    int r = random_input(s, n, rng, -1, 1), p = add_array(s, n, 1, 0), x = add_array(s, n, 1, 1);
    if (p >= 0 && r >= 0 && !s->dry)
        memcpy(s->init[p], s->init[r], n * sizeof(double));
    int ap = add_array(s, n, 0, 0), part = add_array(s, PARTS, 0, 0), rr = add_array(s, 1, 0, 0),
        rr_new = add_array(s, 1, 0, 0), pap = add_array(s, 1, 0, 0);
    step(s, "partials", PARTS, 0, A(part, r, r), ACC(W, R, R), 3, V(n, PARTS, 0), 3);
    step(s, "sum", 1, 0, A(rr, part), ACC(W, R), 2, V(PARTS), 1);
    for (unsigned it = 0; it < CG_ITERATIONS; it++) {
        step(s, "matvec", n, 0, A(ap, a, p), ACC(W, R, R), 3, V(n, n), 2);
        step(s, "partials", PARTS, 0, A(part, p, ap), ACC(W, R, R), 3, V(n, PARTS, 0), 3);
        step(s, "sum", 1, 0, A(pap, part), ACC(W, R), 2, V(PARTS), 1);
        unsigned denominator = last_step(s);
        suite_step_t *st = step(s, "axpy_ratio", n, 1, A(x, p, rr, pap), ACC(RW, R, R, R), 4, V(n, 0), 2);
        st->after[st->n_after++] = denominator;
        unsigned x_updated = last_step(s);
        step(s, "axpy_ratio", n, 0, A(r, ap, rr, pap), ACC(RW, R, R, R), 4, V(n, 1), 2);
        step(s, "partials", PARTS, 0, A(part, r, r), ACC(W, R, R), 3, V(n, PARTS, 0), 3);
        step(s, "sum", 1, 0, A(rr_new, part), ACC(W, R), 2, V(PARTS), 1);
        st = step(s, "xpay_ratio", n, 0, A(p, r, rr_new, rr), ACC(RW, R, R, R), 4, V(n), 1);
        st->after[st->n_after++] = x_updated;
        step(s, "copy1", 1, 0, A(rr, rr_new), ACC(W, R), 2, NULL, 0);
    }
}

/* MUL: y = A x with A split into row blocks, one kernel and stream each. */
static void build_mul(suite_t *s, uint64_t n, unsigned partitions, uint64_t *rng)
{
    int x = random_input(s, n, rng, -1, 1);
    for (unsigned p = 0; p < partitions; p++) {
        uint64_t first = n * p / partitions, rows = n * (p + 1) / partitions - first;
        int a = random_input(s, rows * n, rng, -1, 1), y = add_array(s, rows, 0, 1);
        step(s, "matvec", rows, p % 8, A(y, a, x), ACC(W, R, R), 3, V(rows, n), 2);
    }
}

/* The arrays and steps, and with `dry` no inputs: their lengths alone. */
static int build(suite_t *s, const char *name, uint64_t n, unsigned partitions, uint64_t seed, int dry)
{
    *s = (suite_t){.name = name, .dry = dry};
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
    int mul = strcmp(name, "mul") == 0;
    if (n == 0 || (mul && (partitions == 0 || partitions > n || partitions > SUITE_MAX_PARTITIONS))) {
        fprintf(stderr, "sched_bench: %s: size %llu with %u partitions; give a size of at least 1 and 1 to %d "
                        "partitions, at most the size\n",
                name, (unsigned long long)n, partitions, SUITE_MAX_PARTITIONS);
        return -1;
    }
    if (strcmp(name, "vec") == 0)
        build_vec(s, n, &rng);
    else if (strcmp(name, "bs") == 0)
        build_bs(s, n, &rng);
    else if (strcmp(name, "ml") == 0)
        build_ml(s, n, &rng);
    else if (strcmp(name, "cg") == 0)
        build_cg(s, n, &rng);
    else if (strcmp(name, "mul") == 0)
        build_mul(s, n, partitions, &rng);
    else {
        fprintf(stderr, "sched_bench: no benchmark \"%s\": vec, bs, ml, cg or mul\n", name);
        return -1;
    }
    for (unsigned a = 0; a < s->n_arrays && !dry; a++)
        if (s->input[a] && s->init[a] == NULL) {
            fprintf(stderr, "sched_bench: %s: no memory for its inputs\n", name);
            suite_free(s);
            return -1;
        }
    if (s->n_steps == 0 || s->steps == NULL) {
        fprintf(stderr, "sched_bench: %s: no memory for its steps\n", name);
        suite_free(s);
        return -1;
    }
    return 0;
}

uint64_t suite_default_size(const char *name)
{
    /* For a GPU of tens of GiB: 0.6-4 GiB of arrays, a run a few seconds with its inputs, the host's run and
     * the checks.  One size for all would not do: CG's and MUL's matrices grow as its square. */
    static const struct {
        const char *name;
        uint64_t size;
    } sizes[] = {{"vec", 1u << 27}, {"bs", 1u << 24}, {"ml", 1u << 20}, {"cg", 16384}, {"mul", 20000}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (strcmp(sizes[i].name, name) == 0)
            return sizes[i].size;
    return 0;
}

int suite_build(suite_t *s, const char *name, uint64_t n, unsigned partitions, uint64_t seed)
{
    return build(s, name, n, partitions, seed, 0);
}

uint64_t suite_footprint(const char *name, uint64_t n, unsigned partitions)
{
    suite_t s;
    if (build(&s, name, n, partitions, 0, 1) != 0)
        return 0;
    uint64_t bytes = suite_total_bytes(&s);
    suite_free(&s);
    return bytes;
}

uint64_t suite_smallest_size(const char *name, unsigned partitions)
{
    return strcmp(name, "mul") == 0 ? partitions : 1; /* a row a partition */
}

uint64_t suite_size_for(const char *name, uint64_t bytes, unsigned partitions, uint64_t most)
{
    uint64_t lo = suite_smallest_size(name, partitions), hi = lo;
    uint64_t at_lo = suite_footprint(name, lo, partitions);
    if (at_lo == 0 || at_lo > bytes || lo > most)
        return 0;
    /* Footprints grow with the size (CG's and MUL's as its square): doubling
     * stops at the first size past `bytes`, long before they overflow. */
    while (hi < most && suite_footprint(name, hi, partitions) <= bytes)
        hi = hi > most / 2 ? most : 2 * hi;
    while (lo < hi) { /* the largest that fits */
        uint64_t mid = lo + (hi - lo + 1) / 2, at = suite_footprint(name, mid, partitions);
        if (at == 0)
            return 0;
        if (at <= bytes)
            lo = mid;
        else
            hi = mid - 1;
    }
    /* A kernel launched without a work-group size gets the largest divisor
     * of its global size up to 256: 37 x 641 rows would run work-groups of
     * 37 lanes, two warps with 27 of their 64 lanes idle.  A multiple of 64
     * gets at least two full warps, and loses little of a small size. */
    return lo >= ROUND ? lo - lo % ROUND : lo; /* MUL's partitions are at most 40: still fewer */
}

void suite_free(suite_t *s)
{
    for (unsigned a = 0; a < s->n_arrays; a++)
        free(s->init[a]);
    free(s->steps);
    *s = (suite_t){0};
}

/* ---- the host's run: the kernels of sched_kernels.cl, the same order ---- */

static double cnd(double d)
{
    double x = fabs(d), t = 1.0 / (1.0 + 0.2316419 * x);
    double poly = t * (0.319381530 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
    double c = 1.0 - 0.3989422804014327 * exp(-0.5 * x * x) * poly;
    return d < 0.0 ? 1.0 - c : c;
}

/* The items of a step that threads may compute apart, its output elements
 * (matvec, softmax, argmax2: rows; partials: the partial sums; one for sum
 * and copy1), and the work of one in elements read (`*each`). */
static uint64_t step_items(const suite_step_t *st, uint64_t *each)
{
    const suite_arg_t *g = st->args;
    const char *k = st->kernel;
    uint64_t items = 1, per = 1; /* sum, copy1 */
    if (strcmp(k, "square") == 0 || strcmp(k, "black_scholes") == 0)
        items = g[2].value;
    else if (strcmp(k, "partials") == 0)
        items = g[4].value, per = g[3].value / g[4].value + 1;
    else if (strcmp(k, "matvec") == 0 || strcmp(k, "argmax2") == 0)
        items = g[3].value, per = g[4].value;
    else if (strcmp(k, "scores") == 0)
        items = g[3].value * g[5].value, per = g[4].value;
    else if (strcmp(k, "softmax") == 0)
        items = g[1].value, per = g[2].value;
    else if (strcmp(k, "axpy_ratio") == 0 || strcmp(k, "xpay_ratio") == 0)
        items = g[4].value;
    *each = per;
    return items;
}

typedef struct step_run {
    const suite_step_t *st;
    double **m;
} step_run_t;

/* Items [first, last) of a step, each computed as the whole step would. */
static void run_items(void *ctx, unsigned part, uint64_t first, uint64_t last)
{
    const step_run_t *r = ctx;
    const suite_arg_t *g = r->st->args;
    double **m = r->m;
    double *o = m[g[0].array];
    const double *a = r->st->n_args > 1 && g[1].array >= 0 ? m[g[1].array] : NULL;
    const double *b = r->st->n_args > 2 && g[2].array >= 0 ? m[g[2].array] : NULL;
    const double *c = r->st->n_args > 3 && g[3].array >= 0 ? m[g[3].array] : NULL;
    const char *k = r->st->kernel;
    (void)part;
    if (strcmp(k, "square") == 0) {
        for (uint64_t i = first; i < last; i++)
            o[i] = a[i] * a[i];
    } else if (strcmp(k, "partials") == 0) {
        uint64_t n = g[3].value, parts = g[4].value;
        for (uint64_t p = first; p < last; p++) {
            double s = 0.0;
            for (uint64_t i = p; i < n; i += parts)
                s += g[5].value ? a[i] - b[i] : a[i] * b[i];
            o[p] = s;
        }
    } else if (strcmp(k, "sum") == 0) {
        double s = 0.0;
        for (uint64_t p = 0; p < g[2].value; p++)
            s += a[p];
        o[0] = s;
    } else if (strcmp(k, "black_scholes") == 0) {
        const double strike = 100.0, rate = 0.02, vol = 0.3, years = 1.0, sq = vol * sqrt(years);
        for (uint64_t i = first; i < last; i++) {
            double d1 = (log(a[i] / strike) + (rate + 0.5 * vol * vol) * years) / sq;
            o[i] = a[i] * cnd(d1) - strike * exp(-rate * years) * cnd(d1 - sq);
        }
    } else if (strcmp(k, "matvec") == 0) {
        uint64_t cols = g[4].value;
        for (uint64_t row = first; row < last; row++) {
            double s = 0.0;
            for (uint64_t j = 0; j < cols; j++)
                s += a[row * cols + j] * b[j];
            o[row] = s;
        }
    } else if (strcmp(k, "scores") == 0) {
        uint64_t feats = g[4].value, classes = g[5].value;
        for (uint64_t i = first; i < last; i++) {
            double s = 0.0;
            for (uint64_t f = 0; f < feats; f++)
                s += a[i / classes * feats + f] * b[i % classes * feats + f];
            o[i] = s;
        }
    } else if (strcmp(k, "softmax") == 0) {
        uint64_t classes = g[2].value;
        for (uint64_t row = first; row < last; row++) {
            double *x = o + row * classes, top = x[0], total = 0.0;
            for (uint64_t j = 1; j < classes; j++)
                top = fmax(top, x[j]);
            for (uint64_t j = 0; j < classes; j++)
                total += x[j] = exp(x[j] - top);
            for (uint64_t j = 0; j < classes; j++)
                x[j] /= total;
        }
    } else if (strcmp(k, "argmax2") == 0) {
        uint64_t classes = g[4].value;
        for (uint64_t row = first; row < last; row++) {
            uint64_t best = 0;
            for (uint64_t j = 1; j < classes; j++)
                if (a[row * classes + j] + b[row * classes + j] > a[row * classes + best] + b[row * classes + best])
                    best = j;
            o[row] = (double)best;
        }
    } else if (strcmp(k, "axpy_ratio") == 0) {
        double ratio = (g[5].value ? -1.0 : 1.0) * (b[0] / c[0]);
        for (uint64_t i = first; i < last; i++)
            o[i] += ratio * a[i];
    } else if (strcmp(k, "xpay_ratio") == 0) {
        for (uint64_t i = first; i < last; i++)
            o[i] = a[i] + (b[0] / c[0]) * o[i];
    } else { /* copy1 */
        o[0] = a[0];
    }
}

int suite_reference(const suite_t *s, double **out)
{
    double *m[SUITE_ARRAYS] = {0};
    int ok = 1;
    for (unsigned a = 0; a < s->n_arrays && ok; a++) {
        ok = (m[a] = calloc(s->length[a], sizeof(double))) != NULL;
        if (ok && s->input[a])
            memcpy(m[a], s->init[a], s->length[a] * sizeof(double));
    }
    for (unsigned i = 0; i < s->n_steps && ok; i++) {
        step_run_t r = {&s->steps[i], m};
        uint64_t each, items = step_items(r.st, &each);
        cli_parallel_for(items, DRAW_EACH / each + 1, run_items, &r);
    }
    for (unsigned a = 0; a < s->n_arrays; a++) {
        out[a] = ok && s->output[a] ? m[a] : NULL;
        if (out[a] == NULL)
            free(m[a]);
    }
    return ok ? 0 : -1;
}

int suite_same(const suite_t *s, unsigned a, const double *got, const double *want)
{
    for (size_t i = 0; i < s->length[a]; i++) {
        double tol = 1e-8 * fmax(fabs(want[i]), 1.0);
        if (!(fabs(got[i] - want[i]) <= tol)) {
            fprintf(stderr, "sched_bench: %s: array %u, element %zu: %.17g, wanted %.17g\n", s->name, a, i, got[i],
                    want[i]);
            return 0;
        }
    }
    return 1;
}
