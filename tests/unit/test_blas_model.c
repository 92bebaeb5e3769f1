/* SPDX-License-Identifier: BSD-3-Clause */
/* The tiled-BLAS models (CoCoPeLia eqs. 1-5 and the CUDA-stream overlap
 * baseline) against values worked by hand, the deployment's fits on
 * synthetic copies, the stopping rule, and tile selection and its cache. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "grain/blas.h"
#include "runtime/blas/blas_fit.h"
#include "runtime/blas/blas_model.h"
#include "runtime/blas/blas_profile.h"
#include "runtime/blas/blas_select.h"
#include "runtime/blas/blas_sim.h"

/* The host path: h2d 10 GB/s after 10 us, d2h 5 GB/s after 20 us;
 * slowdowns 1.25, 1.5.  Page-locked: 20 GB/s both ways after 5 us, 1.1. */
#define LINK(ti, tb, slow) {.t_i = (ti), .t_b = (tb), .sl = (slow)}
static const blas_machine_t machine = {{{LINK(1e-5, 1e-10, 1.25), LINK(2e-5, 2e-10, 1.5)},
                                        {LINK(5e-6, 5e-11, 1.1), LINK(5e-6, 5e-11, 1.1)}}};
static const blas_links_t *const host = &machine.path[BLAS_PATH_HOST];

#define NEAR(x, want) assert_true(fabs((x) - (want)) <= 1e-12 + 1e-9 * fabs(want))

/* dgemm 1024^3, every operand on the host, T = 256, t_GPU = 100 us:
 * k = 64, a tile 524288 bytes, t_h2d = 62.4288 us, t_d2h = 124.8576 us. */
static void test_gemm_by_hand(void **state)
{
    (void)state;
    blas_shape_t s;
    blas_shape_gemm(&s, 1024, 1024, 1024, 8, 1, 1, 1, 0);
    assert_true(blas_subproblems(&s, 256) == 64.0);
    NEAR(blas_tile_copy(&host->h2d, &s, 0, 256), 6.24288e-5);
    NEAR(blas_tile_copy(&host->d2h, &s, 2, 256), 1.248576e-4);
    /* eq. 1: max(100, 3 x 62.4, 3 x 124.9) x 63 + 3 x 62.4 + 100 + 3 x 124.9 (us) */
    NEAR(blas_predict(BLAS_MODEL_BASELINE, &machine, &s, 256, 1e-4), 2.42599456e-2);
    /* eq. 2: t_in = 3 tiles, t_out = C's alone */
    NEAR(blas_predict(BLAS_MODEL_DATALOC, &machine, &s, 256, 1e-4), 1.22111872e-2);
    /* eq. 3: in 234.108 us at 1.25x, out 187.2864 us at 1.5x: 187.2864 + 46.8216 / 1.25 */
    NEAR(blas_overlap(blas_flow(&host->h2d, 1.872864e-4), blas_flow(&host->d2h, 1.248576e-4)), 2.2474368e-4);
    NEAR(blas_predict(BLAS_MODEL_BTS, &machine, &s, 256, 1e-4), 1.457099584e-2);
    /* eq. 5: 16 tiles an operand, k_in = 45: 100 x 45 + 100 x 19 + t_in + t_out */
    NEAR(blas_predict(BLAS_MODEL_DR, &machine, &s, 256, 1e-4), 6.712144e-3);
    /* dr-link, K_in = 45, K_out = 15: the link's 45 x 62.4 us in against 15 x 124.9 us back overlap by eq. 3 to
     * 2809.296 + 702.324 / 1.25 = 3371.1552 us, below the kernels' 63 x 100 us; with 10 us kernels the link wins:
     * t_in + 3371.1552 + 10 + t_out (us). */
    NEAR(blas_overlap(blas_flow(&host->h2d, 45 * 6.24288e-5), blas_flow(&host->d2h, 15 * 1.248576e-4)), 3.3711552e-3);
    NEAR(blas_predict(BLAS_MODEL_DR_LINK, &machine, &s, 256, 1e-4), 6.712144e-3);
    NEAR(blas_predict(BLAS_MODEL_DR_LINK, &machine, &s, 256, 1e-5), 3.6932992e-3);
    /* CSO: the kernel stage dominates: h2d's share + 64 x 100 us + d2h's share */
    NEAR(blas_predict(BLAS_MODEL_CSO, &machine, &s, 256, 1e-4), 6.495536e-3);
}

static void test_locations_and_shapes(void **state)
{
    (void)state;
    blas_shape_t s;
    /* Dimensions that T does not divide round up: 4 x 4 x 3 subproblems. */
    blas_shape_gemm(&s, 1000, 777, 513, 8, 1, 1, 1, 0);
    assert_true(blas_subproblems(&s, 256) == 48.0);
    assert_true(blas_operand_tiles(&s, 0, 256) == 12.0); /* A: 1000 x 513 */
    assert_true(blas_operand_tiles(&s, 1, 256) == 12.0); /* B: 513 x 777 */
    assert_true(blas_operand_tiles(&s, 2, 256) == 16.0); /* C: 1000 x 777 */
    /* beta == 0: C is not read, so not copied in; still copied out. */
    blas_shape_gemm(&s, 1024, 1024, 1024, 8, 1, 1, 1, 1);
    assert_false(s.op[2].get);
    assert_true(s.op[2].set);
    /* Everything on the device: no copies, the kernels back to back. */
    blas_shape_gemm(&s, 1024, 1024, 1024, 8, 0, 0, 0, 0);
    for (blas_model_t m = BLAS_MODEL_DATALOC; m < BLAS_MODELS; m++)
        NEAR(blas_predict(m, &machine, &s, 256, 1e-4), 6.4e-3);
    /* daxpy of 2^20 in tiles of 2^18: x and y in, y out; 2 MiB a tile. */
    blas_shape_axpy(&s, 1u << 20, 8, 1, 1);
    assert_true(blas_subproblems(&s, 1u << 18) == 4.0);
    double th = 1e-5 + 1e-10 * 2097152.0, td = 2e-5 + 2e-10 * 2097152.0, g = 5e-5;
    NEAR(blas_predict(BLAS_MODEL_DATALOC, &machine, &s, 1u << 18, g), fmax(g, fmax(2 * th, td)) * 3 + 2 * th + g + td);
    double over = blas_overlap(blas_flow(&host->h2d, 2 * th), blas_flow(&host->d2h, td));
    NEAR(blas_predict(BLAS_MODEL_BTS, &machine, &s, 1u << 18, g), fmax(g, over) * 3 + 2 * th + g + td);
    /* A tile past the vector copies the vector: 2^21 costs what 2^20 does. */
    NEAR(blas_tile_copy(&host->h2d, &s, 0, 1u << 21), blas_tile_copy(&host->h2d, &s, 0, 1u << 20));
    /* A 1024 x 64 operand in tiles of 256: 256 x 64 elements a tile. */
    blas_shape_gemm(&s, 1024, 1024, 64, 8, BLAS_ON_HOST, BLAS_ON_HOST, BLAS_ON_HOST, 0);
    NEAR(blas_tile_copy(&host->h2d, &s, 0, 256), 1e-5 + 1e-10 * 256 * 64 * 8);
    NEAR(blas_tile_copy(&host->h2d, &s, 2, 256), 1e-5 + 1e-10 * 256 * 256 * 8);
    /* Only y on the host: x is copied in by nobody. */
    blas_shape_axpy(&s, 1u << 20, 8, 0, 1);
    NEAR(blas_predict(BLAS_MODEL_DATALOC, &machine, &s, 1u << 18, g), fmax(g, fmax(th, td)) * 3 + th + g + td);
}

/* Page-locked operands cost their own path's links: all of them there is
 * the host path's model on those links; a mix sums each operand's copies
 * and overlaps the sums by their parts' slowdowns. */
static void test_paths(void **state)
{
    (void)state;
    blas_machine_t swapped = machine;
    swapped.path[BLAS_PATH_HOST] = machine.path[BLAS_PATH_PINNED];
    blas_shape_t s, on_host;
    blas_shape_gemm(&s, 1024, 1024, 1024, 8, BLAS_ON_PINNED, BLAS_ON_PINNED, BLAS_ON_PINNED, 0);
    blas_shape_gemm(&on_host, 1024, 1024, 1024, 8, BLAS_ON_HOST, BLAS_ON_HOST, BLAS_ON_HOST, 0);
    for (blas_model_t m = 0; m < BLAS_MODELS; m++)
        NEAR(blas_predict(m, &machine, &s, 256, 1e-4), blas_predict(m, &swapped, &on_host, 256, 1e-4));
    /* A page-locked, B and C pageable, T = 256: a page-locked tile in takes
     * 5 + 26.2144 us; t_in = 31.2144 + 2 x 62.4288 us, slowed 1.1 and 1.25:
     * 34.33584 + 156.072 us; t_out = 124.8576 us, slowed 187.2864. */
    blas_shape_gemm(&s, 1024, 1024, 1024, 8, BLAS_ON_PINNED, BLAS_ON_HOST, BLAS_ON_HOST, 0);
    double t_in = 3.12144e-5 + 2 * 6.24288e-5, in_both = 3.433584e-5 + 1.56072e-4, t_out = 1.248576e-4;
    NEAR(blas_predict(BLAS_MODEL_DATALOC, &machine, &s, 256, 1e-4), fmax(1e-4, t_in) * 63 + t_in + 1e-4 + t_out);
    /* eq. 3: in is the longer slowed; its rest at its mean speed alone */
    double over = 1.872864e-4 + (in_both - 1.872864e-4) * t_in / in_both;
    NEAR(blas_overlap((blas_flow_t){t_in, in_both}, blas_flow(&host->d2h, t_out)), over);
    NEAR(blas_predict(BLAS_MODEL_BTS, &machine, &s, 256, 1e-4), fmax(1e-4, over) * 63 + t_in + 1e-4 + t_out);
    /* eq. 5: 15 later tiles an operand in, their mean copy 52.0240 us, below the kernel's 100 */
    NEAR(blas_predict(BLAS_MODEL_DR, &machine, &s, 256, 1e-4), 1e-4 * 45 + 1e-4 * 19 + t_in + t_out);
    NEAR(blas_predict(BLAS_MODEL_DR, &machine, &s, 256, 1e-5), t_in / 3 * 45 + 1e-5 * 19 + t_in + t_out);
    /* eq. 1 takes every operand in and out, each by its own path. */
    double every_in = t_in, every_out = 2 * 1.248576e-4 + 3.12144e-5;
    NEAR(blas_predict(BLAS_MODEL_BASELINE, &machine, &s, 256, 1e-4),
         fmax(1e-4, fmax(every_in, every_out)) * 63 + every_in + 1e-4 + every_out);
}

/* The schedule simulated: the kernels wait for the tiles they need, in
 * the order grain issues them, and the copies both ways slow each other. */
static void test_schedule(void **state)
{
    (void)state;
    blas_shape_t s;
    /* A alone on the host, 512^3 in tiles of 256: the first column of C needs
     * A's four tiles (62.4288 us each), one a K step, and the second none. */
    double th = 6.24288e-5;
    blas_shape_gemm(&s, 512, 512, 512, 8, BLAS_ON_HOST, BLAS_ON_DEVICE, BLAS_ON_DEVICE, 0);
    /* Kernels of 100 us outrun by no copy: the first copy, then 8 kernels. */
    NEAR(blas_simulate(&machine, &s, 256, 1e-4), th + 8e-4);
    /* Kernels of 10 us wait for each copy: 4 copies, then the fourth's kernel and the second column's 4. */
    NEAR(blas_simulate(&machine, &s, 256, 1e-5), 4 * th + 5e-5);
    NEAR(blas_predict(BLAS_MODEL_SCHEDULE, &machine, &s, 256, 1e-5), 4 * th + 5e-5);
    /* axpy of 3 tiles of 2^18 with y on the host and kernels of no time: y's
     * second tile in (a = 219.7152 us alone) overlaps the first back (b =
     * 439.4304 us), slowed 1.25 and 1.5; then the third in; then the first's
     * rest alone, and the other two back alone. */
    blas_shape_axpy(&s, 3u << 18, 8, BLAS_ON_DEVICE, BLAS_ON_HOST);
    double a = 2.197152e-4, b = 4.394304e-4, rest = b - 2 * 1.25 * a / 1.5;
    NEAR(blas_simulate(&machine, &s, 1u << 18, 0.0), a + 2 * 1.25 * a + rest + 2 * b);
    /* Deployed tile copies of T = 256: contiguous (ld 256) at the link's
     * time, unslowed; with columns 512 apart twice the link's time, and 1.5x
     * slower beside a kernel.  256^3 with A on the host: one copy, then the
     * kernel; A's columns 512 apart, or past the widest deployed, cost the
     * 2-D copy, and A as tight as its rows the contiguous one. */
    static const size_t tiles[] = {256, 256}, lds[] = {256, 512};
    const double alone[] = {th, 2 * th}, beside[] = {th, 3 * th};
    blas_machine_t deployed = machine;
    deployed.path[BLAS_PATH_HOST].h2d.tiles = (blas_tile_copies_t){2, tiles, lds, alone, beside};
    blas_shape_gemm(&s, 256, 256, 256, 8, BLAS_ON_HOST, BLAS_ON_DEVICE, BLAS_ON_DEVICE, 0);
    NEAR(blas_simulate(&deployed, &s, 256, 1e-5), th + 1e-5);
    s.op[0].ld = 512;
    NEAR(blas_simulate(&deployed, &s, 256, 1e-5), 2 * th + 1e-5);
    s.op[0].ld = 4096;
    NEAR(blas_simulate(&deployed, &s, 256, 1e-5), 2 * th + 1e-5);
    /* 256 x 512 x 256, B on the host (ld 512), kernels of 50 us: B's first
     * tile in (124.8576 us), then its second 1.5x slower throughout: beside
     * the first kernel, and after it while the second waits (the call still
     * computes); then the second kernel.  Contiguous, B's second tile
     * (62.4288 us) runs beside the kernel unslowed and the kernels wait for
     * no copy after the first. */
    blas_shape_gemm(&s, 256, 512, 256, 8, BLAS_ON_DEVICE, BLAS_ON_HOST, BLAS_ON_DEVICE, 0);
    NEAR(blas_simulate(&deployed, &s, 256, 5e-5), 2 * th + 5e-5);
    s.op[1].ld = 512;
    NEAR(blas_simulate(&deployed, &s, 256, 5e-5), 2 * th + 1.5 * 2 * th + 5e-5);
    /* 512 x 256 x 256, A on the host (ld 512), C back to it (beta 0),
     * kernels of 50 us: A's first tile in (124.8576 us); its second beside
     * the first kernel and then beside C's first tile going back, 1.5x
     * slower throughout (the larger of the kernels' 1.5 and the link's 1.25,
     * not their product); then the second kernel, and C's second tile back
     * alone (124.8576 us) after the first, which finished beside it. */
    blas_shape_gemm(&s, 512, 256, 256, 8, BLAS_ON_HOST, BLAS_ON_DEVICE, BLAS_ON_HOST, 1);
    NEAR(blas_simulate(&deployed, &s, 256, 5e-5), 2 * th + 1.5 * 2 * th + 5e-5 + 1.248576e-4);
    /* Past BLAS_SIM_STEPS_MAX subproblems it declines, and the model is dr-link's. */
    blas_shape_gemm(&s, 1u << 14, 1u << 14, 1u << 14, 8, BLAS_ON_HOST, BLAS_ON_HOST, BLAS_ON_HOST, 0);
    assert_true(isnan(blas_simulate(&machine, &s, 128, 1e-6)));
    NEAR(blas_predict(BLAS_MODEL_SCHEDULE, &machine, &s, 128, 1e-6),
         blas_predict(BLAS_MODEL_DR_LINK, &machine, &s, 128, 1e-6));
}

static void test_fits(void **state)
{
    (void)state;
    double bytes[64], one_way[64], both_ways[64];
    for (int i = 0; i < 64; i++) {
        double d = 256.0 * (i + 1);
        bytes[i] = d * d * 8.0;
        one_way[i] = 3e-6 + 8e-11 * bytes[i] * (i % 2 ? 1.01 : 0.99); /* noise that averages out */
        both_ways[i] = 3e-6 + 1.3 * 8e-11 * bytes[i];
    }
    /* One copy held up a millisecond does not move the latency. */
    double ones[5] = {2.9e-6, 1e-3, 3.1e-6, 3.0e-6, 3.0e-6};
    double t_i = blas_median(ones, 5);
    NEAR(t_i, 3e-6);
    NEAR(blas_median(ones, 4), 3e-6);
    NEAR(blas_mean(ones, 4), 3e-6);
    double t_b = blas_fit_t_b(bytes, one_way, 64, t_i), t_bid = blas_fit_t_b(bytes, both_ways, 64, t_i);
    assert_true(fabs(t_b - 8e-11) < 0.01 * 8e-11);
    assert_true(fabs(t_bid / t_b - 1.3) < 0.02);
    /* The stopping rule: identical samples settle, two far apart do not,
     * and many close ones do. */
    double same[3] = {1.0, 1.0, 1.0}, apart[2] = {1.0, 2.0}, close[40];
    for (int i = 0; i < 40; i++)
        close[i] = 1.0 + (i % 2 ? 0.02 : -0.02);
    assert_true(blas_mean_settled(same, 3, 0.05));
    assert_false(blas_mean_settled(apart, 2, 0.05));
    assert_false(blas_mean_settled(apart, 1, 0.05));
    assert_true(blas_mean_settled(close, 40, 0.05));
}

static void test_select(void **state)
{
    (void)state;
    static const size_t tiles[] = {256, 512, 1024, 2048};
    static const double seconds[] = {1e-4, 5e-4, 5e-3, 1e-2};
    blas_lookup_t lk = {4, tiles, seconds};
    blas_shape_t s;
    double t;
    /* On the device: 64 x 100 us, 8 x 500 us, 1 x 5 ms; 2048 exceeds the problem. */
    blas_shape_gemm(&s, 1024, 1024, 1024, 8, 0, 0, 0, 0);
    assert_int_equal(blas_select_tile(BLAS_MODEL_DR, &machine, &s, &lk, &t), 512);
    NEAR(t, 4e-3);
    /* Every choice is the model's least. */
    blas_shape_gemm(&s, 4096, 4096, 4096, 8, 1, 1, 1, 0);
    for (blas_model_t m = 0; m < BLAS_MODELS; m++) {
        size_t best = blas_select_tile(m, &machine, &s, &lk, &t);
        for (size_t i = 0; i < lk.n; i++)
            assert_true(t <= blas_predict(m, &machine, &s, tiles[i], seconds[i]));
        NEAR(blas_predict(m, &machine, &s, best, seconds[best == 256 ? 0 : best == 512 ? 1 : best == 1024 ? 2 : 3]), t);
    }
    /* A problem smaller than every tile: the smallest. */
    blas_shape_gemm(&s, 100, 100, 100, 8, 1, 1, 1, 0);
    assert_int_equal(blas_select_tile(BLAS_MODEL_DR, &machine, &s, &lk, &t), 256);
    blas_lookup_t empty = {0, tiles, seconds};
    assert_int_equal(blas_select_tile(BLAS_MODEL_DR, &machine, &s, &empty, NULL), 0);
}

static void test_cache(void **state)
{
    (void)state;
    static blas_cache_t c;
    blas_cache_key_t a = {.routine = 1, .model = BLAS_MODEL_DR, .flags = 7, .d = {1024, 1024, 1024}};
    blas_cache_key_t b = a;
    b.flags = 3; /* another location of the operands */
    assert_int_equal(blas_cache_get(&c, &a), 0);
    blas_cache_put(&c, &a, 512);
    assert_int_equal(blas_cache_get(&c, &a), 512);
    assert_int_equal(blas_cache_get(&c, &b), 0);
    blas_cache_put(&c, &a, 1024); /* replaced in place */
    assert_int_equal(blas_cache_get(&c, &a), 1024);
    assert_int_equal(c.used, 1);
    /* Full: the oldest goes first. */
    for (uint64_t i = 0; i < BLAS_CACHE_SLOTS; i++) {
        blas_cache_key_t k = a;
        k.d[2] = 1 + i;
        blas_cache_put(&c, &k, 256);
    }
    assert_int_equal(c.used, BLAS_CACHE_SLOTS);
    assert_int_equal(blas_cache_get(&c, &a), 0);
    assert_true(c.hits == 2 && c.misses == 3);
}

/* Tile-copy lines: by T and the host's ld ("TxLD"), ascending; a line of
 * the first such profiles ("T:alone:beside") was measured at LD = 2T; an
 * entry out of order is refused. */
static void test_profile_tiles(void **state)
{
    (void)state;
    char path[] = "/tmp/grain-blas-profile-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("dev\tlink\th2d\t1e-05\t1e-10\t1.25\ndev\tlink\td2h\t2e-05\t2e-10\t1.5\n"
          "dev\tkernel\tdgemm\t256:0.0001,512:0.0008\n"
          "dev\ttiles\th2d\t256:0.0001:0.0002,512:0.0004:0.0005\n"
          "dev\ttiles\td2h\t256x256:1e-4:1e-4,256x65536:2e-4:3e-4,512x512:4e-4:4e-4\n"
          "other\ttiles\th2d\tnot a table\n", f);
    fclose(f);
    blas_profile_t p;
    assert_int_equal(blas_profile_read(&p, path, "dev"), 1);
    const blas_tile_copies_t *in = &p.machine.path[BLAS_PATH_HOST].h2d.tiles;
    const blas_tile_copies_t *out = &p.machine.path[BLAS_PATH_HOST].d2h.tiles;
    assert_int_equal(in->n, 2);
    assert_int_equal(in->ld[0], 512);
    assert_int_equal(in->ld[1], 1024);
    NEAR(in->beside[1], 5e-4);
    assert_int_equal(out->n, 3);
    assert_int_equal(out->tile[1], 256);
    assert_int_equal(out->ld[1], 65536);
    NEAR(out->beside[1], 3e-4);
    assert_int_equal(out->ld[2], 512);
    blas_profile_free(&p);
    f = fopen(path, "a");
    fputs("dev\ttiles\td2h\t256x1024:1e-4:1e-4,256x512:1e-4:1e-4\n", f);
    fclose(f);
    assert_int_equal(blas_profile_read(&p, path, "dev"), -1);
    f = fopen(path, "a");
    fputs("dev\ttiles\td2h\t256x128:1e-4:1e-4\n", f); /* columns closer than a tile's rows */
    fclose(f);
    assert_int_equal(blas_profile_read(&p, path, "dev"), -1);
    unlink(path);
}

/* Every model's name parses back to it; other names are refused. */
static void test_model_names(void **state)
{
    (void)state;
    for (int m = 0; m < GRAIN_BLAS_MODELS; m++) {
        grain_blas_model_t got = GRAIN_BLAS_MODELS;
        assert_int_equal(grain_blas_model_parse(grain_blas_model_name((grain_blas_model_t)m), &got), GRAIN_OK);
        assert_int_equal(got, m);
    }
    grain_blas_model_t untouched = GRAIN_BLAS_MODEL_DR;
    assert_int_equal(grain_blas_model_parse("eq9", &untouched), GRAIN_ERR_INVALID);
    assert_non_null(strstr(grain_error_message(NULL), "expected cso, baseline"));
    assert_int_equal(grain_blas_model_parse(NULL, &untouched), GRAIN_ERR_INVALID);
    assert_int_equal(untouched, GRAIN_BLAS_MODEL_DR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_by_hand), cmocka_unit_test(test_locations_and_shapes),
        cmocka_unit_test(test_paths),        cmocka_unit_test(test_schedule),
        cmocka_unit_test(test_fits),         cmocka_unit_test(test_select),
        cmocka_unit_test(test_cache),        cmocka_unit_test(test_profile_tiles),
        cmocka_unit_test(test_model_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
