/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * jacobi: Jacobi sweeps of the Laplace equation on an n x n grid (the top
 * edge held at 1, the other edges at 0), its interior rows split in blocks
 * over the ranks.  Each rank keeps its rows between two ghost rows in two
 * regions, read and written in turn; after a sweep its first row goes to the
 * rank above and its last to the rank below, by counter-triggered transfers
 * (--agent): the halo rows are computed first and each chunk of them moves
 * as soon as the tiles that write it are done.  --verify runs the same
 * sweeps on the host over the whole grid, as one rank would, and requires
 * every owned point to match.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/app.h"
#include "grain/grain.h"

extern const char jacobi_kernel_source[];

#define WG_X 32u
#define WG_Y 8u

typedef struct jacobi_options {
    unsigned long long n, iterations, tile_rows;
    grain_agent_t agent;
    app_common_t common;
} jacobi_options_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: jacobi [--n N] [--iterations K] [--agent A] [--tile-rows R] [--verify] [--json]\n"
            "  --n N           grid of N x N points, the edges included (default 1024)\n"
            "  --iterations K  sweeps (default 100)\n"
            "  --agent A       who moves the halo rows: bulk (a copy after each sweep), host (host\n"
            "                  threads), device (a polling kernel; CUDA, HIP), launch (a copy kernel\n"
            "                  launched by the work-group that finishes a chunk; CUDA), inline (the\n"
            "                  sweep's own stores), ideal (nothing: the time with free transfers,\n"
            "                  unverifiable), auto (default: GRAIN_TRANSFER_AGENT, else the transfer\n"
            "                  profile's for this device, as bench/transfer_profile.py chose it,\n"
            "                  else host)\n"
            "  --tile-rows R   rows of a work-group's tile (default 16)\n"
            "  --verify        run the sweeps on the host too and require the same grid\n"
            "  --json          print one JSON object with the result and statistics\n"
            "The chunk size and the agent's threads are grain settings: --chunk-size 64K,\n"
            "--transfer-threads 2 (default: the transfer profile's, else 256K and 1).\n");
    app_config_usage(out);
}

enum { JACOBI_N, JACOBI_ITERATIONS, JACOBI_TILE_ROWS, JACOBI_AGENT };

static void take(void *state, int key, const char *option, const char *value)
{
    jacobi_options_t *o = state;
    if (key == JACOBI_N)
        o->n = cli_u64(option, value);
    else if (key == JACOBI_ITERATIONS)
        o->iterations = cli_u64(option, value);
    else if (key == JACOBI_TILE_ROWS)
        o->tile_rows = cli_u64(option, value);
    else
        o->agent = app_parse_agent(value);
}

static grain_config_t *parse(int argc, char **argv, jacobi_options_t *o)
{
    static const cli_option_t options[] = {{"n", 1, JACOBI_N},
                                           {"iterations", 1, JACOBI_ITERATIONS},
                                           {"tile-rows", 1, JACOBI_TILE_ROWS},
                                           {"agent", 1, JACOBI_AGENT}};
    grain_config_t *config = app_config();
    *o = (jacobi_options_t){.n = 1024, .iterations = 100, .tile_rows = 16, .agent = GRAIN_AGENT_AUTO};
    const cli_group_t groups[] = {CLI_GROUP(options, take, o)};
    app_parse_options("jacobi", argc, argv, groups, 1, &o->common, config, usage);
    if (o->common.out != NULL) {
        fprintf(stderr, "jacobi: --out: jacobi writes no values (--verify checks them)\n");
        exit(APP_EXIT_ERROR);
    }
    if (o->n < 3 || o->n > (1ull << 20) || o->tile_rows == 0 || o->tile_rows > 4096) {
        fprintf(stderr, "jacobi: --n must be 3 to 2^20 and --tile-rows 1 to 4096\n");
        exit(APP_EXIT_ERROR);
    }
    return config;
}

/* Global row `row` at the start: the top edge is 1, everything else 0. */
static double initial(uint64_t row, uint64_t col, uint64_t n)
{
    (void)col, (void)n;
    return row == 0 ? 1.0 : 0.0;
}

/* The sweeps of a one-rank run, on the host, in the kernel's order of
 * additions; returns the grid after `iterations`. */
static double *reference(uint64_t n, uint64_t iterations)
{
    double *a = malloc(n * n * sizeof *a), *b = malloc(n * n * sizeof *b);
    if (a == NULL || b == NULL) {
        fprintf(stderr, "jacobi: no memory to verify a %llu x %llu grid\n", (unsigned long long)n,
                (unsigned long long)n);
        exit(APP_EXIT_ERROR);
    }
    for (uint64_t r = 0; r < n; r++)
        for (uint64_t c = 0; c < n; c++)
            a[r * n + c] = b[r * n + c] = initial(r, c, n);
    for (uint64_t k = 0; k < iterations; k++) {
        for (uint64_t r = 1; r + 1 < n; r++)
            for (uint64_t c = 1; c + 1 < n; c++) {
                uint64_t at = r * n + c;
                b[at] = 0.25 * (((a[at - n] + a[at + n]) + a[at - 1]) + a[at + 1]);
            }
        double *t = a;
        a = b;
        b = t;
    }
    free(b);
    return a;
}

/* The regions' common description: this rank's halo rows to its neighbours. */
static grain_region_desc_t halo_region(const jacobi_options_t *o, int me, int npes, uint64_t block, uint64_t rows,
                                       grain_segment_t seg[2])
{
    uint64_t row_bytes = o->n * 8;
    unsigned n_seg = 0;
    if (me > 0) /* first row, to the ghost row below the rank above's block */
        seg[n_seg++] = (grain_segment_t){.offset = row_bytes, .size = row_bytes, .dest = me - 1,
                                         .dest_offset = (block + 1) * row_bytes};
    if (me + 1 < npes) /* last row, to the ghost row above the rank below's */
        seg[n_seg++] = (grain_segment_t){.offset = rows * row_bytes, .size = row_bytes, .dest = me + 1, .dest_offset = 0};
    return (grain_region_desc_t){
        .size = (size_t)((block + 2) * row_bytes),
        .map = {.kind = GRAIN_MAP_STENCIL, .row_bytes = row_bytes, .first_row = 1, .rows = rows,
                .tile_rows = o->tile_rows, .tile_bytes = WG_X * 8},
        .segments = seg,
        .n_segments = n_seg,
        .agent = o->agent,
        .name = "jacobi",
    };
}

/* Collective: the largest difference from the one-rank grid over every rank's rows. */
static double max_error(grain_t *g, const double *local, uint64_t first_row, uint64_t rows, const jacobi_options_t *o)
{
    double *want = reference(o->n, o->iterations), worst = 0;
    for (uint64_t r = 1; r <= rows; r++)
        for (uint64_t c = 0; c < o->n; c++) {
            double d = fabs(local[r * o->n + c] - want[(first_row + r - 1) * o->n + c]);
            worst = d > worst || d != d ? d : worst;
        }
    free(want);
    app_check(grain_allreduce(g, &worst, 1, GRAIN_DOUBLE, GRAIN_MAX), "reducing the verification");
    return worst;
}

int main(int argc, char **argv)
{
    jacobi_options_t o;
    grain_t *g = app_init(parse(argc, argv, &o));
    int me = grain_my_pe(g), npes = grain_n_pes(g);
    uint64_t n = o.n, first, rows;
    uint64_t block = app_block(n - 2, (unsigned)npes, (unsigned)me, &first, &rows);
    if ((uint64_t)(npes - 1) * block >= n - 2) {
        char why[160];
        snprintf(why, sizeof why, "%d ranks leave the last without rows of a %llu x %llu grid: use fewer ranks or a larger --n",
                 npes, (unsigned long long)n, (unsigned long long)n);
        app_fail(g, "jacobi", why);
    }
    first += 1; /* global row of the first owned row */

    /* Both regions start as the grid: the edges stay in both. */
    size_t local_bytes = (size_t)((block + 2) * n * 8);
    double *host = app_malloc(local_bytes);
    for (uint64_t r = 0; r < block + 2; r++)
        for (uint64_t c = 0; c < n; c++)
            host[r * n + c] = r <= rows + 1 ? initial(first + r - 1, c, n) : 0.0;
    grain_segment_t seg[2];
    grain_region_desc_t desc = halo_region(&o, me, npes, block, rows, seg);
    grain_region_t *region[2];
    for (int i = 0; i < 2; i++) {
        app_check(grain_region_create(g, &desc, &region[i]), "creating the halo regions");
        app_check(grain_memcpy(g, grain_region_data(region[i]), host, local_bytes), "initialising the grid");
    }

    grain_program_t *prog;
    grain_kernel_t *k;
    app_check(grain_program_create(g, jacobi_kernel_source, NULL, &prog), "building the jacobi kernel");
    app_check(grain_kernel_create(prog, "jacobi_sweep", &k), "creating the jacobi kernel");
    uint64_t args[3] = {n, rows, o.tile_rows};
    for (unsigned i = 0; i < 3; i++)
        app_check(grain_kernel_set_arg(k, 3 + i, sizeof args[i], &args[i]), "setting kernel arguments");
    size_t global[2] = {(size_t)((n + WG_X - 1) / WG_X * WG_X), (size_t)((rows + o.tile_rows - 1) / o.tile_rows * WG_Y)};
    size_t local[2] = {WG_X, WG_Y};

    app_check(grain_barrier_all(g), "the barrier before the run");
    app_clock_t clock;
    app_clock_start(g, &clock);
    for (uint64_t it = 0; it < o.iterations; it++) {
        grain_region_t *in = region[it % 2], *out = region[(it + 1) % 2];
        app_check(grain_kernel_set_arg_region(k, 1, in), "setting kernel arguments");
        app_check(grain_kernel_set_arg_region(k, 2, out), "setting kernel arguments");
        app_check(grain_region_begin(out), "arming the transfer agent");
        app_check(grain_launch(k, 2, global, local), "launching a sweep");
        app_check(grain_region_end(out), "finishing a sweep's transfers");
    }
    app_timing_t timing = app_clock_stop(g, &clock);

    grain_region_t *result = region[o.iterations % 2];
    app_check(grain_memcpy(g, host, grain_region_data(result), local_bytes), "reading the grid");
    double sum = 0;
    for (uint64_t r = 1; r <= rows; r++)
        for (uint64_t c = 0; c < n; c++)
            sum += host[r * n + c];
    app_check(grain_allreduce(g, &sum, 1, GRAIN_DOUBLE, GRAIN_SUM), "reducing the checksum");
    grain_region_stats_t stats;
    app_region_totals(g, region, 2, &stats);
    int verifiable = stats.agent != GRAIN_AGENT_IDEAL || npes == 1;
    double err = o.common.verify && verifiable ? max_error(g, host, first, rows, &o) : 0;
    int verified = o.common.verify && verifiable ? err <= 1e-12 : -1;

    if (me == 0 && !o.common.json) {
        printf("jacobi: %d rank%s, %llu x %llu grid, %llu sweeps in %.4f s (%.1f us a sweep), %s agent, chunks of "
               "%llu bytes (%s on %s, %s); checksum %.12g\n",
               npes, app_plural(npes), (unsigned long long)n, (unsigned long long)n, o.iterations, timing.seconds,
               1e6 * timing.seconds / (double)(o.iterations ? o.iterations : 1), grain_agent_name(stats.agent),
               (unsigned long long)stats.chunk_bytes, grain_backend_name(g), grain_device_name(g),
               grain_transport_name(g), sum);
        if (verified >= 0)
            printf("verification: %s (largest difference from one rank's grid %.3g)\n",
                   verified ? "passed" : "FAILED", err);
        else if (o.common.verify)
            printf("verification: skipped (the ideal agent moves no halo, so the grid is not a solution)\n");
    }
    FILE *jout = app_json_begin(g, o.common.json, "jacobi");
    if (jout != NULL) {
        fprintf(jout, ",\"verified\":%s,", verified < 0 ? "null" : verified ? "true" : "false");
        app_timing_json(jout, &timing);
        fprintf(jout, ",\"n\":%llu,\"iterations\":%llu,\"tile_rows\":%llu,\"checksum\":%.17g,\"max_error\":%.6g,",
                (unsigned long long)n, o.iterations, o.tile_rows, sum, err);
        app_region_json(jout, &stats);
    }
    app_json_end(g, jout);
    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    for (int i = 0; i < 2; i++)
        grain_region_destroy(region[i]);
    free(host);
    return app_finish(g, GRAIN_OK, verified);
}
