/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device tests on the OpenCL backend (PoCL here), one rank: the diverged
 * WG-level primitives against a scalar reference for every active-lane
 * pattern, work-group shapes in 1, 2 and 3 dimensions; and every kind of bad
 * message from a kernel reported with the work-item that sent it, while the
 * good messages of the same launch are applied; adds combined in the
 * work-group; device active-message handlers, and the programs grain must
 * refuse as their registry.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "grain/grain.h"
#include "tests/device/send_to_handler.h"

extern const char device_tests_source[];

static grain_t *g;
static grain_program_t *prog;

static int setup(void **state)
{
    grain_config_t *c;
    if (grain_config_create(&c) != GRAIN_OK || grain_config_set(c, "transport", "self") != GRAIN_OK ||
        grain_config_set(c, "heap_size", "1M") != GRAIN_OK)
        return -1;
    grain_status_t st = grain_init(c, &g);
    grain_config_destroy(c);
    if (st != GRAIN_OK)
        return -1;
    return grain_program_create(g, device_tests_source, NULL, &prog) == GRAIN_OK ? 0 : -1;
}

static int teardown(void **state)
{
    grain_program_destroy(prog);
    return grain_finalize(g) == GRAIN_OK ? 0 : -1;
}

enum { ALL, NONE, ONE, ALTERNATING, RANDOM, N_PATTERNS };

static int pattern_active(int pattern, unsigned lid, unsigned n, unsigned seed)
{
    switch (pattern) {
    case ALL: return 1;
    case NONE: return 0;
    case ONE: return lid == (seed % n);
    case ALTERNATING: return (lid + seed) % 2 == 0;
    default: return ((lid * 2654435761u + seed * 40503u) >> 7) % 3 == 0;
    }
}

/* Runs wg_prims over a grid and checks every lane against the reference. */
static void check_grid(unsigned dims, const size_t *global, const size_t *local)
{
    size_t n = global[0] * (dims > 1 ? global[1] : 1) * (dims > 2 ? global[2] : 1);
    size_t lx = local[0], ly = dims > 1 ? local[1] : 1, lz = dims > 2 ? local[2] : 1;
    size_t gx = global[0], gy = dims > 1 ? global[1] : 1;
    unsigned wg = (unsigned)(lx * ly * lz);
    int64_t *values, *out;
    int32_t *active;
    assert_int_equal(grain_mem_alloc(g, n * sizeof *values, (void **)&values), GRAIN_OK);
    assert_int_equal(grain_mem_alloc(g, n * sizeof *active, (void **)&active), GRAIN_OK);
    assert_int_equal(grain_mem_alloc(g, 5 * n * sizeof *out, (void **)&out), GRAIN_OK);
    grain_kernel_t *k;
    assert_int_equal(grain_kernel_create(prog, "wg_prims", &k), GRAIN_OK);
    grain_kernel_set_arg_ptr(k, 1, values);
    grain_kernel_set_arg_ptr(k, 2, active);
    grain_kernel_set_arg_ptr(k, 3, out);

    for (int pattern = 0; pattern < N_PATTERNS; pattern++) {
        /* Lane (x, y, z) of the grid: its work-group and its local linear id. */
        for (size_t i = 0; i < n; i++) {
            size_t x = i % gx, y = (i / gx) % gy, z = i / (gx * gy);
            unsigned lid = (unsigned)((z % lz) * ly * lx + (y % ly) * lx + x % lx);
            size_t group = (z / lz) * 1000003 + (y / ly) * 1009 + x / lx;
            values[i] = (int64_t)((i * 7919u) % 201) - 100;
            active[i] = pattern_active(pattern, lid, wg, (unsigned)group);
        }
        assert_int_equal(grain_launch(k, dims, global, local), GRAIN_OK);
        assert_int_equal(grain_wait(g), GRAIN_OK);
        for (size_t i = 0; i < n; i++) {
            size_t x = i % gx, y = (i / gx) % gy, z = i / (gx * gy);
            unsigned lid = (unsigned)((z % lz) * ly * lx + (y % ly) * lx + x % lx);
            int64_t sum = 0, max = INT64_MIN, min = INT64_MAX, before = 0;
            /* The scalar reference walks the lanes of i's work-group in local order. */
            for (size_t j = 0; j < n; j++) {
                size_t xj = j % gx, yj = (j / gx) % gy, zj = j / (gx * gy);
                if (xj / lx != x / lx || yj / ly != y / ly || zj / lz != z / lz || !active[j])
                    continue;
                unsigned lj = (unsigned)((zj % lz) * ly * lx + (yj % ly) * lx + xj % lx);
                sum += values[j];
                max = values[j] > max ? values[j] : max;
                min = values[j] < min ? values[j] : min;
                if (lj < lid)
                    before += values[j];
            }
            if (out[5 * i] != sum || out[5 * i + 1] != max || out[5 * i + 2] != min ||
                out[5 * i + 3] != (active[i] ? before + values[i] : 0) ||
                out[5 * i + 4] != (active[i] ? before : 0))
                fail_msg("dims %u wg %u pattern %d lane %zu: got %lld %lld %lld %lld %lld, want %lld "
                         "%lld %lld %lld %lld",
                         dims, wg, pattern, i, (long long)out[5 * i], (long long)out[5 * i + 1],
                         (long long)out[5 * i + 2], (long long)out[5 * i + 3], (long long)out[5 * i + 4],
                         (long long)sum, (long long)max, (long long)min,
                         (long long)(active[i] ? before + values[i] : 0), (long long)(active[i] ? before : 0));
        }
    }
    grain_kernel_destroy(k);
    grain_mem_free(g, values);
    grain_mem_free(g, active);
    grain_mem_free(g, out);
}

static void test_wg_prims_1d(void **state)
{
    static const size_t sizes[] = {1, 2, 7, 32, 64, 100, 256};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t global = sizes[i] * 3, local = sizes[i];
        check_grid(1, &global, &local);
    }
}

static void test_wg_prims_2d_3d(void **state)
{
    size_t g2[2] = {16, 6}, l2[2] = {8, 3};
    check_grid(2, g2, l2);
    size_t g3[3] = {8, 4, 6}, l3[3] = {4, 2, 3};
    check_grid(3, g3, l3);
    size_t g3b[3] = {2, 2, 64}, l3b[3] = {1, 2, 64};
    check_grid(3, g3b, l3b);
}

enum { COMBINE_GROUPS = 3, COMBINE_LANES = COMBINE_GROUPS * 256, COMBINE_WORDS = 5 };

/* One launch of combine_adds (words 1) or combine_keys; `bad` as
 * combine_keys takes it.  What the sums must end as is computed here, lane
 * by lane, without combining. */
static void run_combine(const char *kernel, size_t local, uint32_t keys, uint32_t words, uint32_t stride,
                        uint32_t rounds, int pattern, uint32_t bad, int64_t *sums, int64_t *values, int32_t *active,
                        int64_t *want)
{
    size_t global = COMBINE_GROUPS * local, n = (size_t)keys * words;
    int keyed = strcmp(kernel, "combine_keys") == 0;
    grain_kernel_t *k;
    assert_int_equal(grain_kernel_create(prog, kernel, &k), GRAIN_OK);
    memset(sums, 0, n * sizeof *sums);
    memset(want, 0, n * sizeof *want);
    for (size_t i = 0; i < global; i++) {
        values[i] = (int64_t)((i * 7919u) % 201) - 100;
        active[i] = pattern_active(pattern, (unsigned)(i % local), (unsigned)local, (unsigned)(i / local));
        for (uint32_t r = 0; r < rounds && active[i] && bad != 1; r++) {
            size_t key = (i * stride + r) % keys;
            if (!keyed) {
                want[key] += values[i] + r;
                continue;
            }
            for (uint32_t j = 0; j < words; j++)
                want[key * words + j] += values[i] * (j + 1);
            want[key * words] += 1;
        }
    }
    grain_kernel_set_arg_ptr(k, 1, sums);
    grain_kernel_set_arg_ptr(k, 2, values);
    grain_kernel_set_arg_ptr(k, 3, active);
    grain_kernel_set_arg(k, 4, sizeof keys, &keys);
    grain_kernel_set_arg(k, 5, sizeof stride, &stride);
    grain_kernel_set_arg(k, 6, sizeof rounds, &rounds);
    if (keyed) {
        grain_kernel_set_arg(k, 7, sizeof words, &words);
        grain_kernel_set_arg(k, 8, sizeof bad, &bad);
    }
    assert_int_equal(grain_launch(k, 1, &global, &local), GRAIN_OK);
    assert_int_equal(grain_quiet(g), bad ? GRAIN_ERR_INVALID : GRAIN_OK);
    for (size_t w = 0; w < n; w++)
        if (sums[w] != want[w])
            fail_msg("%s: wg %zu, %u keys of %u words, stride %u, %u rounds, pattern %d, bad %u: word %zu is %lld, "
                     "want %lld", kernel, local, keys, words, stride, rounds, pattern, bad, w, (long long)sums[w],
                     (long long)want[w]);
    grain_kernel_destroy(k);
}

/* Combined adds against the sums of every lane's adds: few keys (most lanes
 * combine), as many as lanes (none do, and keys x words sums take several
 * sends), several rounds a launch (the table reused), partial and odd
 * work-groups, lanes inactive; one word a key (grain_add64_combined) and
 * several (grain_combine_begin, add, end). */
static void test_combined_adds(void **state)
{
    static const size_t sizes[] = {1, 7, 64, 256};
    static const uint32_t shapes[][4] = {
        {3, 1, 1, 4}, {COMBINE_LANES, 1, 2, 2}, {5, 1, 3, 3}, /* keys, words, stride, rounds */
        {3, 5, 1, 2}, {COMBINE_LANES, 4, 1, 2}, {7, 2, 3, 1}, {2, 5, 1, 3},
    };
    static const int patterns[] = {ALL, RANDOM};
    int64_t *sums, *values, *want = malloc(COMBINE_LANES * COMBINE_WORDS * sizeof *want);
    int32_t *active;
    assert_non_null(want);
    assert_int_equal(grain_malloc(g, COMBINE_LANES * COMBINE_WORDS * sizeof *sums, (void **)&sums), GRAIN_OK);
    assert_int_equal(grain_mem_alloc(g, COMBINE_LANES * sizeof *values, (void **)&values), GRAIN_OK);
    assert_int_equal(grain_mem_alloc(g, COMBINE_LANES * sizeof *active, (void **)&active), GRAIN_OK);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t h = 0; h < sizeof shapes / sizeof shapes[0]; h++)
            for (size_t p = 0; p < sizeof patterns / sizeof patterns[0]; p++) {
                const uint32_t *sh = shapes[h];
                if (sh[1] == 1)
                    run_combine("combine_adds", sizes[s], sh[0], 1, sh[2], sh[3], patterns[p], 0, sums, values,
                                active, want);
                run_combine("combine_keys", sizes[s], sh[0], sh[1], sh[2], sh[3], patterns[p], 0, sums, values,
                            active, want);
            }
    /* A call asking for more words than its table holds sends nothing; an
     * add past the key's words is dropped, and the rest of the call sent. */
    run_combine("combine_keys", 64, 3, 5, 1, 2, ALL, 1, sums, values, active, want);
    assert_non_null(strstr(grain_error_message(g), "combined adds of 6 words a key, but its GRAIN_COMBINE_DECL "
                                                    "holds 1 to 5"));
    run_combine("combine_keys", 64, 3, 4, 1, 2, ALL, 2, sums, values, active, want);
    const char *msg = grain_error_message(g);
    if (strstr(msg, "work-item 37") == NULL || strstr(msg, "word 4 of a combined key of 4 words") == NULL)
        fail_msg("\"%s\" does not name work-item 37 and word 4 of 4", msg);
    free(want);
    grain_mem_free(g, values);
    grain_mem_free(g, active);
    assert_int_equal(grain_free(g, sums), GRAIN_OK);
}

static uint64_t am_calls;

static void count_am(char *heap, uint32_t src, uint64_t a0, uint64_t a1)
{
    __atomic_fetch_add((int64_t *)(heap + a0), (int64_t)a1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&am_calls, 1, __ATOMIC_RELAXED);
}

static void expect_bad(int what, grain_status_t want, const char *phrase)
{
    int64_t *target;
    assert_int_equal(grain_malloc(g, 64, (void **)&target), GRAIN_OK);
    grain_kernel_t *k;
    assert_int_equal(grain_kernel_create(prog, "send_bad", &k), GRAIN_OK);
    int32_t w = what;
    uint32_t bad_lane = 37, handler = 1;
    grain_kernel_set_arg_ptr(k, 1, target);
    grain_kernel_set_arg(k, 2, sizeof w, &w);
    grain_kernel_set_arg(k, 3, sizeof bad_lane, &bad_lane);
    grain_kernel_set_arg(k, 4, sizeof handler, &handler);
    size_t global = 128, local = 64;
    am_calls = 0;
    assert_int_equal(grain_launch(k, 1, &global, &local), GRAIN_OK);
    assert_int_equal(grain_quiet(g), want);
    const char *msg = grain_error_message(g);
    if (strstr(msg, phrase) == NULL || strstr(msg, "work-item 37") == NULL)
        fail_msg("\"%s\" does not name \"%s\" and work-item 37", msg, phrase);
    /* The 127 good messages were applied; the bad one was not sent. */
    if (what == 3) {
        int32_t v;
        memcpy(&v, target, sizeof v);
        assert_int_equal(v, 127);
    } else {
        assert_int_equal(target[0], 127);
    }
    if (what == 4)
        assert_int_equal(am_calls, 127);
    assert_int_equal(grain_quiet(g), GRAIN_OK); /* reported once */
    grain_kernel_destroy(k);
    assert_int_equal(grain_free(g, target), GRAIN_OK);
}

static void test_bad_messages_from_kernels(void **state)
{
    assert_int_equal(grain_am_register(g, 1, count_am), GRAIN_OK);
    expect_bad(0, GRAIN_ERR_BAD_PE, "to PE 5");
    expect_bad(1, GRAIN_ERR_BAD_OFFSET, "heap offset 1073741824");
    expect_bad(2, GRAIN_ERR_BAD_OFFSET, "outside the 1048576-byte symmetric heap");
    expect_bad(3, GRAIN_ERR_BAD_OFFSET, "add32 message to PE 0 at heap offset 2");
    expect_bad(4, GRAIN_ERR_BAD_HANDLER, "handler 77");
}

static void test_bad_launches(void **state)
{
    grain_kernel_t *k;
    assert_int_equal(grain_kernel_create(prog, "no_such_kernel", &k), GRAIN_ERR_INVALID);
    assert_non_null(strstr(grain_error_message(g), "no kernel named \"no_such_kernel\""));
    assert_int_equal(grain_kernel_create(prog, "send_bad", &k), GRAIN_OK);
    size_t global = 1024, local = 512;
    assert_int_equal(grain_launch(k, 1, &global, &local), GRAIN_ERR_INVALID);
    assert_non_null(strstr(grain_error_message(g), "exceeds"));
    local = 100;
    assert_int_equal(grain_launch(k, 1, &global, &local), GRAIN_ERR_INVALID);
    assert_non_null(strstr(grain_error_message(g), "not a multiple"));
    assert_int_equal(grain_kernel_set_arg(k, 0, 4, &global), GRAIN_ERR_INVALID);
    grain_kernel_destroy(k);
    grain_program_t *broken;
    assert_int_equal(grain_program_create(g, "GRAIN_KERNEL void oops( {", NULL, &broken), GRAIN_ERR_BUILD);
    assert_int_equal(grain_am_register(g, 1000, count_am), GRAIN_ERR_INVALID);
}

static uint64_t stat_of(const char *name)
{
    char *json = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&json, &size);
    assert_non_null(f);
    grain_stats_json(g, f);
    fclose(f);
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *at = strstr(json, key);
    assert_non_null(at);
    uint64_t v = strtoull(at + strlen(key), NULL, 10);
    free(json);
    return v;
}

/* 128 work-items send handler 2 one active message each, to this rank. */
static int64_t send_to_handler_2(grain_program_t *from)
{
    int64_t got = 0;
    assert_int_equal(send_to_handler(g, from, 2, &got), GRAIN_OK);
    return got;
}

/* Device handlers: in the sending work-item when its program defines the
 * handler, through an apply kernel when it does not; programs that list no
 * handler or an id out of range are refused. */
static void test_device_handlers(void **state)
{
    grain_program_t *lacking, *bad_id;
    assert_int_equal(grain_program_create(g, device_tests_source, "-DTEST_NO_AM_TABLE", &lacking), GRAIN_OK);
    assert_int_equal(grain_am_register_program(g, lacking), GRAIN_ERR_INVALID);
    assert_non_null(strstr(grain_error_message(g), "defines no handlers"));
    assert_int_equal(grain_program_create(g, device_tests_source, "-DTEST_AM_ID=300", &bad_id), GRAIN_OK);
    assert_int_equal(grain_am_register_program(g, bad_id), GRAIN_ERR_INVALID);
    assert_non_null(strstr(grain_error_message(g), "handler id 300"));
    grain_program_destroy(bad_id);

    assert_int_equal(grain_am_register_program(g, prog), GRAIN_OK);
    uint64_t kernels = stat_of("apply_kernels");
    assert_int_equal(send_to_handler_2(prog), 2 * 128);
    assert_int_equal(stat_of("apply_kernels"), kernels);
    assert_int_equal(send_to_handler_2(lacking), 2 * 128);
    assert_true(stat_of("apply_kernels") > kernels);
    grain_program_destroy(lacking);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wg_prims_1d),
        cmocka_unit_test(test_wg_prims_2d_3d),
        cmocka_unit_test(test_combined_adds),
        cmocka_unit_test(test_bad_messages_from_kernels),
        cmocka_unit_test(test_bad_launches),
        cmocka_unit_test(test_device_handlers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
