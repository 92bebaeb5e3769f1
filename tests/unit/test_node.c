/* SPDX-License-Identifier: BSD-3-Clause */
/* The rank lists of the direct path's info log, and the settings that
 * choose the path: GRAIN_PEER's words, GRAIN_NODE_RANKS's range. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "grain/grain.h"
#include "services/config.h"
#include "runtime/node.h"

static void expect_ranges(const char *bits, const char *want)
{
    unsigned char set[64];
    int n = (int)strlen(bits);
    for (int r = 0; r < n; r++)
        set[r] = bits[r] == '1';
    char out[128];
    grain_rank_ranges(set, n, out, sizeof out);
    assert_string_equal(out, want);
}

static void test_rank_ranges(void **state)
{
    expect_ranges("0000", "none");
    expect_ranges("", "none");
    expect_ranges("1", "0");
    expect_ranges("0111", "1-3");
    expect_ranges("01110101", "1-3,5,7");
    expect_ranges("11011", "0-1,3-4");
}

static void test_small_buffer_stays_terminated(void **state)
{
    unsigned char set[40];
    for (int r = 0; r < 40; r++)
        set[r] = r % 2;
    char out[16];
    grain_rank_ranges(set, 40, out, sizeof out);
    assert_true(strlen(out) < sizeof out);
    assert_memory_equal(out, "1,3,5,7,9,11,13", 15);
}

static void test_settings(void **state)
{
    grain_config_t c;
    assert_int_equal(grain_config_init_defaults(&c), GRAIN_OK);
    assert_string_equal(c.peer, "auto");
    assert_int_equal(c.node_ranks, 0);
    assert_int_equal(grain_config_set(&c, "peer", "off"), GRAIN_OK);
    assert_int_equal(grain_config_check(&c), GRAIN_OK);
    assert_int_equal(grain_config_set(&c, "GRAIN_PEER", "always"), GRAIN_OK);
    assert_int_equal(grain_config_check(&c), GRAIN_ERR_CONFIG);
    assert_non_null(strstr(grain_error_message(NULL), "GRAIN_PEER=\"always\": expected auto or off"));
    assert_int_equal(grain_config_set(&c, "node_ranks", "2"), GRAIN_OK);
    assert_int_equal(grain_config_set(&c, "node_ranks", "-1"), GRAIN_ERR_CONFIG);
    assert_int_equal(grain_config_set(&c, "node_ranks", "99999999"), GRAIN_ERR_CONFIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_ranges),
        cmocka_unit_test(test_small_buffer_stays_terminated),
        cmocka_unit_test(test_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
