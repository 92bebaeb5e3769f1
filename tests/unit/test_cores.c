/* SPDX-License-Identifier: BSD-3-Clause */
/* How a GPU rank's spare cores split between aggregator and receive
 * threads: by what limits the path, the receiving thread's copies (sends)
 * or packing (buffers written into the rank's memory). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "services/cores.h"

/* The aggregators for `spare` cores, then the receive threads on what they
 * leave, as grain_init picks them. */
static void expect_split(long spare, int written, unsigned aggregators, unsigned receivers)
{
    unsigned a = grain_cores_aggregators(spare, written);
    assert_int_equal(a, aggregators);
    assert_int_equal(grain_cores_receivers(spare - (long)a), receivers);
}

static void test_copied_halves(void **state)
{
    expect_split(14, 0, 6, 4); /* 16 cores: 6 aggregators wait less on the receiver than 8 */
    expect_split(6, 0, 3, 3);
    expect_split(7, 0, 3, 4);
    expect_split(30, 0, 6, 4);
}

static void test_written_packs_on_the_rest(void **state)
{
    expect_split(14, 1, 10, 4); /* 16 cores: every core busy, 4 receive threads kept */
    expect_split(6, 1, 3, 3);   /* 8 cores: as with copies */
    expect_split(10, 1, 6, 4);
    expect_split(30, 1, 10, 4);
}

static void test_at_least_one_each(void **state)
{
    for (int written = 0; written < 2; written++) {
        expect_split(0, written, 1, 1);
        expect_split(1, written, 1, 1);
        expect_split(-3, written, 1, 1);
        expect_split(2, written, 1, 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copied_halves),
        cmocka_unit_test(test_written_packs_on_the_rest),
        cmocka_unit_test(test_at_least_one_each),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
