/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kmeans: Lloyd's algorithm with the points spread over the ranks (a block
 * each) and every cluster's coordinate sums and count accumulated at the
 * cluster's owner by grain adds (Gravel, section 6).  The initial centres
 * are the first k points, as scikit-learn's KMeans(init=X[:k]); it iterates
 * until no point changes cluster, or --max-iterations (300, scikit-learn's).
 * A cluster left without points keeps its centre.
 *
 * Coordinates travel in 64-bit fixed point with the largest power of two
 * that cannot overflow a sum: integer adds make the sums exact and the
 * result independent of message order and rank count.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/app.h"
#include "../common/graph_app.h"
#include "../common/points.h"
#include "grain/grain.h"

extern const char kmeans_kernel_source[];

typedef struct km_options {
    const char *points; /* --points FILE */
    unsigned long long blob_n, blob_dims, blob_k, seed; /* --blobs N,D,C */
    unsigned long long k, max_iterations;
    const char *centres_out;
    app_common_t common;
} km_options_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kmeans (--points FILE | --blobs N,D,C [--seed S]) --k K [--max-iterations N]\n"
            "              [--out FILE] [--centres-out FILE] [--verify] [--json]\n"
            "  --points FILE       one point per line, coordinates separated by commas or spaces\n"
            "  --blobs N,D,C       N points in D dimensions around C random centres (seed --seed, 1)\n"
            "  --k K               clusters; the first K points are the initial centres\n"
            "  --max-iterations N  stop after N iterations even if points still move (300)\n"
            "  --out FILE          write \"<point> <cluster>\" per point, points from 0\n"
            "  --centres-out FILE  write the K final centres, one per line\n"
            "  --verify            compare with a sequential Lloyd run: the same clusters\n"
            "  --json              one JSON object with the result and statistics\n");
    app_config_usage(out);
}

/* Words of a combined key at most (kmeans.cl): up to 8 dims in one key.  Its table takes 2 KiB of local memory
 * a word: at 64 dims, keys of 12 or 16 words made one GPU 20% slower than keys of 9 (fewer work-groups a
 * compute unit; docs/results/kmeans-packed-2xh200-s64). */
enum { KM_MAX_KEY_WORDS = 9 };

enum { KM_POINTS, KM_BLOBS, KM_SEED, KM_K, KM_MAX_ITERATIONS, KM_CENTRES_OUT };

static void take(void *state, int key, const char *option, const char *value)
{
    km_options_t *o = state;
    switch (key) {
    case KM_POINTS: o->points = value; break;
    case KM_SEED: o->seed = cli_u64(option, value); break;
    case KM_K: o->k = cli_u64(option, value); break;
    case KM_MAX_ITERATIONS: o->max_iterations = cli_u64(option, value); break;
    case KM_CENTRES_OUT: o->centres_out = value; break;
    default:
        if (sscanf(value, "%llu,%llu,%llu", &o->blob_n, &o->blob_dims, &o->blob_k) != 3 || strchr(value, '-') != NULL) {
            fprintf(stderr, "kmeans: --blobs \"%s\" is not N,D,C\n", value);
            exit(APP_EXIT_ERROR);
        }
    }
}

static grain_config_t *parse(int argc, char **argv, km_options_t *o)
{
    static const cli_option_t options[] = {{"points", 1, KM_POINTS}, {"blobs", 1, KM_BLOBS},
                                           {"seed", 1, KM_SEED},     {"k", 1, KM_K},
                                           {"max-iterations", 1, KM_MAX_ITERATIONS},
                                           {"centres-out", 1, KM_CENTRES_OUT}};
    grain_config_t *config = app_config();
    *o = (km_options_t){.seed = 1, .max_iterations = 300};
    const cli_group_t groups[] = {CLI_GROUP(options, take, o)};
    app_parse_options("kmeans", argc, argv, groups, 1, &o->common, config, usage);
    if ((o->points != NULL) == (o->blob_n != 0) || o->k == 0) {
        fprintf(stderr, "kmeans: give one input (--points FILE or --blobs N,D,C) and --k K\n");
        exit(APP_EXIT_ERROR);
    }
    return config;
}

/* The cluster of each of points [first, first + count) for `centres`: the
 * nearest, the first of equals. */
static void nearest(const app_points_t *p, const double *centres, uint64_t k, uint64_t first, uint64_t count,
                    int32_t *labels)
{
    for (uint64_t i = first; i < first + count; i++) {
        double best = 0;
        for (uint64_t c = 0; c < k; c++) {
            double d = 0;
            for (uint32_t j = 0; j < p->dims; j++) {
                double t = p->x[i * p->dims + j] - centres[c * p->dims + j];
                d += t * t;
            }
            if (c == 0 || d < best) {
                best = d;
                labels[i - first] = (int32_t)c;
            }
        }
    }
}

/* The sequential reference: the same steps in plain double sums. */
static int32_t *reference(const app_points_t *p, uint64_t k, unsigned long long iterations)
{
    double *centres = app_malloc(k * p->dims * sizeof *centres), *sums = app_malloc(k * p->dims * sizeof *sums);
    uint64_t *counts = app_malloc(k * sizeof *counts);
    int32_t *labels = app_malloc(p->n * sizeof *labels);
    memcpy(centres, p->x, k * p->dims * sizeof *centres);
    for (unsigned long long it = 0; it < iterations; it++) {
        nearest(p, centres, k, 0, p->n, labels);
        memset(sums, 0, k * p->dims * sizeof *sums);
        memset(counts, 0, k * sizeof *counts);
        for (uint64_t i = 0; i < p->n; i++) {
            counts[labels[i]]++;
            for (uint32_t j = 0; j < p->dims; j++)
                sums[(uint64_t)labels[i] * p->dims + j] += p->x[i * p->dims + j];
        }
        for (uint64_t c = 0; c < k; c++)
            for (uint32_t j = 0; counts[c] && j < p->dims; j++)
                centres[c * p->dims + j] = sums[c * p->dims + j] / (double)counts[c];
    }
    free(counts);
    free(sums);
    free(centres);
    return labels;
}

typedef struct km_result {
    unsigned long long iterations;
    int converged;
    double inertia;
    app_timing_t timing;
} km_result_t;

/* This rank's points are [first, first + local_n), in blocks of `block`;
 * labels receives their clusters, centres (k x dims) the final centres. */
static km_result_t run(grain_t *g, const app_points_t *pts, uint64_t k, uint64_t first, uint64_t local_n,
                       uint64_t block, unsigned long long max_iterations, int32_t *labels, double *centres)
{
    unsigned ranks = (unsigned)grain_n_pes(g), me = (unsigned)grain_my_pe(g);
    uint32_t dims = pts->dims, k32 = (uint32_t)k;
    uint64_t own = (k + ranks - 1) / ranks, row = dims + 1; /* clusters a rank owns at most, words each */

    /* The largest power of two such that no cluster's sum can overflow. */
    double largest = 0;
    for (uint64_t i = 0; i < pts->n * dims; i++)
        largest = fabs(pts->x[i]) > largest ? fabs(pts->x[i]) : largest;
    int exponent = 62 - (int)ceil(log2((largest + 1) * (double)pts->n));
    double scale = ldexp(1.0, exponent < 52 ? exponent : 52);

    int64_t *sums;
    app_check(grain_malloc(g, own * row * sizeof *sums, (void **)&sums), "allocating the cluster sums");
    double *x = app_device_copy(g, pts->x + first * dims, local_n * dims * sizeof *x);
    double *dev_centres = app_device_copy(g, pts->x, k * dims * sizeof *dev_centres);
    memset(labels, 0xff, local_n * sizeof *labels); /* no cluster yet: every point moves in the first step */
    int32_t *dev_labels = app_device_copy(g, labels, local_n * sizeof *dev_labels);
    uint64_t moved_zero = 0, *dev_moved = app_device_copy(g, &moved_zero, sizeof moved_zero);

    grain_program_t *prog;
    grain_kernel_t *kern;
    /* A cluster's row split evenly into as few combined keys as KM_MAX_KEY_WORDS allows. */
    uint64_t parts = (row + KM_MAX_KEY_WORDS - 1) / KM_MAX_KEY_WORDS;
    char options[32];
    snprintf(options, sizeof options, "-DKM_KEY_WORDS=%llu", (unsigned long long)((row + parts - 1) / parts));
    app_check(grain_program_create(g, kmeans_kernel_source, options, &prog), "building the kmeans kernel");
    app_check(grain_kernel_create(prog, "km_assign", &kern), "creating the kmeans kernel");
    app_kernel_ptrs(kern, 1, 5, (void *const[]){sums, x, dev_centres, dev_labels, dev_moved});
    app_check(grain_kernel_set_arg(kern, 6, sizeof local_n, &local_n), "setting kernel arguments");
    app_check(grain_kernel_set_arg(kern, 7, sizeof dims, &dims), "setting kernel arguments");
    app_check(grain_kernel_set_arg(kern, 8, sizeof k32, &k32), "setting kernel arguments");
    app_check(grain_kernel_set_arg(kern, 9, sizeof ranks, &ranks), "setting kernel arguments");
    app_check(grain_kernel_set_arg(kern, 10, sizeof scale, &scale), "setting kernel arguments");
    size_t wg = 256, global = app_grid(block, wg);

    int64_t *host_sums = app_malloc(own * row * sizeof *host_sums), *zeros = app_malloc(own * row * sizeof *zeros);
    double *update = app_malloc((k * dims + k) * sizeof *update); /* new centres, then counts, by owner */
    memset(zeros, 0, own * row * sizeof *zeros);
    memcpy(centres, pts->x, k * dims * sizeof *centres);
    km_result_t r = {0};
    app_check(grain_barrier_all(g), "the barrier before the run");
    app_clock_t clock;
    app_clock_start(g, &clock);
    while (r.iterations < max_iterations) {
        app_check(grain_memcpy(g, sums, zeros, own * row * sizeof *sums), "zeroing the cluster sums");
        app_check(grain_memcpy(g, dev_centres, centres, k * dims * sizeof *centres), "writing the centres");
        app_check(grain_memcpy(g, dev_moved, &moved_zero, sizeof moved_zero), "zeroing the moved count");
        app_check(grain_barrier_all(g), "the barrier before an iteration"); /* every rank has zeroed its sums */
        app_check(grain_launch(kern, 1, &global, &wg), "launching kmeans");
        app_check(grain_barrier_all(g), "grain_barrier_all after kmeans");
        r.iterations++;
        app_check(grain_memcpy(g, host_sums, sums, own * row * sizeof *sums), "reading the cluster sums");
        memset(update, 0, (k * dims + k) * sizeof *update);
        for (uint64_t c = me; c < k; c += ranks) {
            const int64_t *s = host_sums + (c / ranks) * row;
            update[k * dims + c] = (double)s[dims];
            for (uint32_t j = 0; j < dims; j++)
                update[c * dims + j] = s[dims] ? (double)s[j] / scale / (double)s[dims] : centres[c * dims + j];
        }
        app_check(grain_allreduce(g, update, k * dims + k, GRAIN_DOUBLE, GRAIN_SUM), "sharing the centres");
        memcpy(centres, update, k * dims * sizeof *centres);
        int64_t moved;
        app_check(grain_memcpy(g, &moved, dev_moved, sizeof moved), "reading the moved count");
        app_check(grain_allreduce(g, &moved, 1, GRAIN_INT64, GRAIN_SUM), "counting moved points");
        if (moved == 0) {
            r.converged = 1;
            break;
        }
    }
    app_check(grain_memcpy(g, labels, dev_labels, local_n * sizeof *labels), "reading the clusters");
    r.timing = app_clock_stop(g, &clock);
    for (uint64_t i = 0; i < local_n; i++)
        for (uint32_t j = 0; j < dims; j++) {
            double t = pts->x[(first + i) * dims + j] - centres[(uint64_t)labels[i] * dims + j];
            r.inertia += t * t;
        }
    app_check(grain_allreduce(g, &r.inertia, 1, GRAIN_DOUBLE, GRAIN_SUM), "reducing the inertia");

    free(update);
    free(zeros);
    free(host_sums);
    grain_kernel_destroy(kern);
    grain_program_destroy(prog);
    app_device_free(g, dev_moved);
    app_device_free(g, dev_labels);
    app_device_free(g, dev_centres);
    app_device_free(g, x);
    app_check(grain_free(g, sums), "freeing");
    return r;
}

int main(int argc, char **argv)
{
    km_options_t o;
    grain_t *g = app_init(parse(argc, argv, &o));
    int me = grain_my_pe(g), npes = grain_n_pes(g);

    app_points_t pts;
    app_error_t err;
    int rc = o.points != NULL ? app_read_points(o.points, &pts, &err)
                              : app_blobs(o.blob_n, (uint32_t)o.blob_dims, (uint32_t)o.blob_k, o.seed, &pts, &err);
    if (rc != 0)
        app_fail(g, "kmeans", err.msg);
    if (o.k > pts.n) {
        snprintf(err.msg, sizeof err.msg, "--k %llu is more than the %llu points", o.k, (unsigned long long)pts.n);
        app_points_free(&pts);
        app_fail(g, "kmeans", err.msg);
    }
    uint64_t first, local_n, block = app_block(pts.n, (unsigned)npes, (unsigned)me, &first, &local_n);
    int32_t *labels = app_malloc(local_n * sizeof *labels);
    double *centres = app_malloc(o.k * pts.dims * sizeof *centres);
    km_result_t r = run(g, &pts, o.k, first, local_n, block, o.max_iterations, labels, centres);

    int verified = -1;
    int64_t differ = 0;
    if (o.common.verify) {
        int32_t *ref = reference(&pts, o.k, r.iterations);
        for (uint64_t i = 0; i < local_n; i++)
            differ += labels[i] != ref[first + i];
        free(ref);
        app_check(grain_allreduce(g, &differ, 1, GRAIN_INT64, GRAIN_SUM), "reducing the verification");
        verified = differ == 0;
    }
    int status = APP_EXIT_OK;
    double *values = app_malloc(local_n * sizeof *values);
    uint64_t *ids = app_malloc(local_n * sizeof *ids);
    for (uint64_t i = 0; i < local_n; i++) {
        values[i] = labels[i];
        ids[i] = first + i;
    }
    if (o.common.out != NULL)
        status = app_write_values(g, "kmeans", ids, local_n, 0, values, o.common.out);
    if (o.centres_out != NULL && me == 0) {
        FILE *f = fopen(o.centres_out, "w");
        for (uint64_t c = 0; f != NULL && c < o.k; c++)
            for (uint32_t j = 0; j < pts.dims; j++)
                fprintf(f, "%.17g%c", centres[c * pts.dims + j], j + 1 < pts.dims ? ' ' : '\n');
        if (f == NULL || ferror(f) || fclose(f) != 0) {
            fprintf(stderr, "kmeans: %s: could not write the centres\n", o.centres_out);
            status = APP_EXIT_ERROR;
        }
    }

    if (me == 0 && !o.common.json) {
        printf("kmeans: %llu points in %u dimensions, k = %llu, %d rank%s, %s on %s\n", (unsigned long long)pts.n,
               pts.dims, o.k, npes, app_plural(npes), grain_backend_name(g), grain_device_name(g));
        printf("%llu iterations%s in %.3f s, inertia %.10g\n", r.iterations,
               r.converged ? "" : " without converging", r.timing.seconds, r.inertia);
        app_timing_print(stdout, &r.timing);
        if (verified >= 0)
            printf("verification: %s (%lld points in another cluster than the sequential run's)\n",
                   verified ? "passed" : "FAILED", (long long)differ);
    }
    FILE *out = app_json_begin(g, o.common.json, "kmeans");
    if (out != NULL) {
        fprintf(out,
                ",\"points\":%llu,\"dims\":%u,\"k\":%llu,\"verified\":%s,\"differ\":%lld,\"iterations\":%llu,"
                "\"converged\":%s,\"inertia\":%.17g,",
                (unsigned long long)pts.n, pts.dims, o.k, verified < 0 ? "null" : verified ? "true" : "false",
                (long long)differ, r.iterations, r.converged ? "true" : "false", r.inertia);
        app_timing_json(out, &r.timing);
    }
    app_json_end(g, out);

    free(ids);
    free(values);
    free(centres);
    free(labels);
    app_points_free(&pts);
    return app_finish(g, status, verified);
}
