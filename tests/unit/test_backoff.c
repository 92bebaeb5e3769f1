/* SPDX-License-Identifier: BSD-3-Clause */
/* An idle thread's naps (services/backoff.h): short on a GPU, doubling up
 * to the longest on a CPU device, short again once work is found. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "services/backoff.h"

static void test_gpu_naps_stay_short(void **state)
{
    grain_backoff_t b = {0};
    for (int i = 0; i < 20; i++)
        assert_int_equal(grain_backoff_nap(&b), GRAIN_BACKOFF_NAP_NS);
}

static void test_cpu_naps_double_to_the_longest(void **state)
{
    atomic_store(&grain_backoff_nap_max_ns, GRAIN_BACKOFF_CPU_NAP_MAX_NS);
    grain_backoff_t b = {0};
    long expected = GRAIN_BACKOFF_NAP_NS;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(grain_backoff_nap(&b), expected);
        expected = 2 * expected < (long)GRAIN_BACKOFF_CPU_NAP_MAX_NS ? 2 * expected : GRAIN_BACKOFF_CPU_NAP_MAX_NS;
    }
    assert_int_equal(expected, GRAIN_BACKOFF_CPU_NAP_MAX_NS);
    grain_backoff_reset(&b);
    assert_int_equal(grain_backoff_nap(&b), GRAIN_BACKOFF_NAP_NS);
    atomic_store(&grain_backoff_nap_max_ns, GRAIN_BACKOFF_NAP_NS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_naps_stay_short),
        cmocka_unit_test(test_cpu_naps_double_to_the_longest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
