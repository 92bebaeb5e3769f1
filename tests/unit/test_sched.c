/* SPDX-License-Identifier: BSD-3-Clause */
/* The scheduler's dependency graph against the order that every pair of
 * conflicting elements needs (read after write, write after read, write
 * after write), on hand cases and on random programs; coherence and each
 * placement policy on a fixed topology against values worked by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/sched/sched_dag.h"
#include "runtime/sched/sched_place.h"

#define R SCHED_READ
#define W SCHED_WRITE

/* Adds an element and checks its parents. */
static void expect_parents(sched_dag_t *dag, const sched_arg_t *args, size_t n, const uint32_t *want, size_t n_want)
{
    uint32_t e;
    const uint32_t *parents;
    size_t n_parents;
    assert_int_equal(sched_dag_add(dag, args, n, &e, &parents, &n_parents), GRAIN_OK);
    assert_int_equal(n_parents, n_want);
    for (size_t i = 0; i < n_want; i++)
        assert_int_equal(parents[i], want[i]);
}

#define EXPECT(dag, args, ...)                                                                                    \
    expect_parents(dag, args, sizeof(args) / sizeof(args[0]), (const uint32_t[]){__VA_ARGS__},                   \
                   sizeof((const uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t))
#define EXPECT_NONE(dag, args) expect_parents(dag, args, sizeof(args) / sizeof(args[0]), NULL, 0)

static void test_dag_by_hand(void **state)
{
    (void)state;
    sched_dag_t *dag;
    assert_int_equal(sched_dag_create(&dag), GRAIN_OK);
    const sched_arg_t w_a[] = {{0, W}}, r_a[] = {{0, R}}, r_a_w_b[] = {{0, R}, {1, W}}, rw_b[] = {{1, R | W}},
                      r_b[] = {{1, R}}, r_c_w_c[] = {{2, R}, {2, W}}, r_c[] = {{2, R}}, w_c[] = {{2, W}};
    EXPECT_NONE(dag, w_a);    /* 0 */
    EXPECT(dag, r_a, 0);      /* 1: read after write */
    EXPECT(dag, r_a, 0);      /* 2: readers do not order each other */
    EXPECT(dag, w_a, 0, 1, 2); /* 3: write after the writer and both readers */
    EXPECT(dag, r_a_w_b, 3);  /* 4 */
    EXPECT(dag, rw_b, 4);     /* 5 */
    sched_dag_retire(dag, 5);
    EXPECT_NONE(dag, r_b);    /* 6: its writer is done */
    EXPECT_NONE(dag, r_c_w_c); /* 7: one array twice, its accesses combined */
    EXPECT(dag, r_c, 7);      /* 8 */
    EXPECT(dag, w_c, 7, 8);   /* 9 */
    const sched_arg_t bad[] = {{0, 0}};
    uint32_t e;
    const uint32_t *parents;
    size_t n;
    assert_int_equal(sched_dag_add(dag, bad, 1, &e, &parents, &n), GRAIN_ERR_INVALID);
    sched_dag_destroy(dag);
}

enum { ELEMENTS = 200, ARRAYS = 16, MOST_ARGS = 4 };

/* Random programs (fixed seeds): every parent is an earlier element that
 * conflicts, and every conflicting pair is ordered through the edges. */
static void test_dag_random(void **state)
{
    (void)state;
    static sched_arg_t args[ELEMENTS][MOST_ARGS];
    static size_t n_args[ELEMENTS];
    static uint64_t reach[ELEMENTS][(ELEMENTS + 63) / 64]; /* reach[j]: elements j comes after */
    for (unsigned seed = 1; seed <= 20; seed++) {
        srand(seed);
        sched_dag_t *dag;
        assert_int_equal(sched_dag_create(&dag), GRAIN_OK);
        memset(reach, 0, sizeof reach);
        for (uint32_t j = 0; j < ELEMENTS; j++) {
            n_args[j] = 1 + (size_t)rand() % MOST_ARGS;
            for (size_t k = 0; k < n_args[j]; k++)
                args[j][k] = (sched_arg_t){(uint32_t)(rand() % ARRAYS), 1u + (unsigned)(rand() % 3)};
            uint32_t e;
            const uint32_t *parents;
            size_t n;
            assert_int_equal(sched_dag_add(dag, args[j], n_args[j], &e, &parents, &n), GRAIN_OK);
            assert_int_equal(e, j);
            for (size_t p = 0; p < n; p++) {
                uint32_t i = parents[p];
                assert_true(i < j);
                int conflict = 0;
                for (size_t a = 0; a < n_args[i]; a++)
                    for (size_t b = 0; b < n_args[j]; b++)
                        conflict |= args[i][a].array == args[j][b].array &&
                                    ((args[i][a].access | args[j][b].access) & W);
                assert_true(conflict);
                reach[j][i / 64] |= 1ull << (i % 64);
                for (size_t w = 0; w < (ELEMENTS + 63) / 64; w++)
                    reach[j][w] |= reach[i][w];
            }
        }
        for (uint32_t j = 0; j < ELEMENTS; j++)
            for (uint32_t i = 0; i < j; i++) {
                int conflict = 0;
                for (size_t a = 0; a < n_args[i]; a++)
                    for (size_t b = 0; b < n_args[j]; b++)
                        conflict |= args[i][a].array == args[j][b].array &&
                                    ((args[i][a].access | args[j][b].access) & W);
                if (conflict && !(reach[j][i / 64] >> (i % 64) & 1))
                    fail_msg("seed %u: elements %u and %u conflict and are not ordered", seed, i, j);
            }
        sched_dag_destroy(dag);
    }
}

static void test_coherence(void **state)
{
    (void)state;
    sched_where_t w = (sched_where_t)1 << SCHED_HOST;
    w = sched_after_read(w, 2);
    assert_int_equal(w, 0x5);
    w = sched_after_read(w, 3);
    assert_int_equal(w, 0xd);
    w = sched_after_write(w, 1);
    assert_int_equal(w, 0x2);
}

/* Host and three devices: host links 5, devices 1-2 10, 1-3 and 2-3 60. */
static const double BW[16] = {0, 5, 5, 5, 5, 0, 10, 60, 5, 10, 0, 60, 5, 60, 60, 0};
static const sched_topology_t TOPO = {4, BW};
#define ALL_DEVICES 0xeu

/* A (100 bytes) on device 1, B (120) on device 2, D (30) on device 3, all
 * read; E written only.  Bytes to copy in: 150, 130, 220.  Time (each from
 * its slowest valid place): device 1 120/10 + 30/60 = 12.5; device 2
 * 100/10 + 30/60 = 10.5; device 3 100/60 + 120/60 = 3.67.  Held: 100, 120,
 * 30 of 250 (12%). */
static const sched_need_t NEEDS[] = {{100, 0x2, 1}, {120, 0x4, 1}, {30, 0x8, 1}, {500, 0x1, 0}};

static unsigned choose(sched_policy_t policy, sched_where_t candidates, double threshold, unsigned *next,
                       const unsigned *busy, const sched_need_t *needs, size_t n)
{
    sched_choice_t c = {policy, candidates, busy, threshold, next};
    return sched_choose(&TOPO, &c, needs, n);
}

static void test_transfers(void **state)
{
    (void)state;
    assert_int_equal(sched_bytes_missing(NEEDS, 4, 1), 150);
    assert_int_equal(sched_bytes_missing(NEEDS, 4, 2), 130);
    assert_int_equal(sched_bytes_missing(NEEDS, 4, 3), 220);
    assert_float_equal(sched_transfer_time(&TOPO, NEEDS, 4, 1), 12.5, 1e-12);
    assert_float_equal(sched_transfer_time(&TOPO, NEEDS, 4, 2), 10.5, 1e-12);
    assert_float_equal(sched_transfer_time(&TOPO, NEEDS, 4, 3), 100.0 / 60 + 2.0, 1e-12);
    /* Valid on the host and device 1: device 2 counts the slower, the host's 5. */
    const sched_need_t two_places[] = {{100, 0x3, 1}};
    assert_float_equal(sched_transfer_time(&TOPO, two_places, 1, 2), 20.0, 1e-12);
}

static void test_copy_source(void **state)
{
    (void)state;
    const sched_where_t all = 0xf;
    /* Valid on the host and device 3, into device 2: device 3's 60 over the host's 5... */
    assert_int_equal(sched_copy_from(&TOPO, 0x9, all, 2), 3);
    /* ...unless device 3's copy is still being filled, and the host's is there. */
    assert_int_equal(sched_copy_from(&TOPO, 0x9, 0x1, 2), SCHED_HOST);
    /* Neither filled, or both: the fastest. */
    assert_int_equal(sched_copy_from(&TOPO, 0xa, 0x0, 2), 3);
    assert_int_equal(sched_copy_from(&TOPO, 0xa, all, 2), 3);
    assert_int_equal(sched_copy_from(&TOPO, 0xa, 0x2, 2), 1);
    /* No matrix: the lowest filled location. */
    const sched_topology_t none = {4, NULL};
    assert_int_equal(sched_copy_from(&none, 0x9, all, 2), SCHED_HOST);
    assert_int_equal(sched_copy_from(&none, 0x9, 0x8, 2), 3);
}

static void test_policies(void **state)
{
    (void)state;
    unsigned next = 0, busy[4] = {0, 3, 1, 1};
    assert_int_equal(choose(SCHED_MIN_TRANSFER_SIZE, ALL_DEVICES, 0.1, &next, busy, NEEDS, 4), 2);
    assert_int_equal(choose(SCHED_MIN_MAX_TRANSFER_TIME, ALL_DEVICES, 0.1, &next, busy, NEEDS, 4), 3);
    /* Device 3 holds 12%: under a 20% threshold it counts as holding none. */
    assert_int_equal(choose(SCHED_MIN_MAX_TRANSFER_TIME, ALL_DEVICES, 0.2, &next, busy, NEEDS, 4), 2);
    /* Only the parents' devices. */
    assert_int_equal(choose(SCHED_MIN_MAX_TRANSFER_TIME, 0x2, 0.1, &next, busy, NEEDS, 4), 1);
    assert_int_equal(choose(SCHED_STREAM_AWARE, ALL_DEVICES, 0.1, &next, busy, NEEDS, 4), 2);
    assert_int_equal(choose(SCHED_STREAM_AWARE, 0xa, 0.1, &next, busy, NEEDS, 4), 3);
    assert_int_equal(next, 0); /* none of them took a turn */
    /* Round-robin in turn over the candidates, and where the data-aware
     * ones find no device with data (an element that reads nothing). */
    assert_int_equal(choose(SCHED_ROUND_ROBIN, ALL_DEVICES, 0.1, &next, busy, NEEDS, 4), 1);
    assert_int_equal(choose(SCHED_ROUND_ROBIN, ALL_DEVICES, 0.1, &next, busy, NEEDS, 4), 2);
    assert_int_equal(choose(SCHED_MIN_TRANSFER_SIZE, ALL_DEVICES, 0.1, &next, busy, NEEDS + 3, 1), 3);
    assert_int_equal(choose(SCHED_ROUND_ROBIN, ALL_DEVICES, 0.1, &next, busy, NEEDS, 4), 1);
    assert_int_equal(choose(SCHED_ROUND_ROBIN, 0xc, 0.1, &next, busy, NEEDS, 4), 2);
    assert_int_equal(choose(SCHED_ROUND_ROBIN, 0xc, 0.1, &next, busy, NEEDS, 4), 3);
    assert_int_equal(choose(SCHED_ROUND_ROBIN, 0xc, 0.1, &next, busy, NEEDS, 4), 2);
    assert_int_equal(choose(SCHED_ROUND_ROBIN, 0x1, 0.1, &next, busy, NEEDS, 4), 0); /* no device */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dag_by_hand), cmocka_unit_test(test_dag_random), cmocka_unit_test(test_coherence),
        cmocka_unit_test(test_transfers),   cmocka_unit_test(test_copy_source), cmocka_unit_test(test_policies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
