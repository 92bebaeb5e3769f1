/* SPDX-License-Identifier: BSD-3-Clause */
/* Configuration: defaults, environment, API, units, ranges and every
 * impossible value rejected with a sentence naming the variable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "services/config.h"

static void test_defaults_match_design(void **state)
{
    grain_config_t c;
    assert_int_equal(grain_config_init_defaults(&c), GRAIN_OK);
    assert_int_equal(c.buffer_size, 64 * 1024);
    assert_int_equal(c.buffers_per_dest, 3);
    assert_int_equal(c.flush_timeout_us, 125);
    assert_int_equal(c.aggregators, 0); /* as many as the rank's cores allow */
    assert_string_equal(c.reserve, "wg");
    assert_string_equal(c.backend, "auto");
    assert_int_equal(grain_config_check(&c), GRAIN_OK);
}

static void test_sizes(void **state)
{
    uint64_t v;
    assert_int_equal(grain_parse_size("64K", &v), GRAIN_OK);
    assert_int_equal(v, 65536);
    assert_int_equal(grain_parse_size("1M", &v), GRAIN_OK);
    assert_int_equal(v, 1 << 20);
    assert_int_equal(grain_parse_size("2GiB", &v), GRAIN_OK);
    assert_int_equal(v, 2ull << 30);
    assert_int_equal(grain_parse_size("256", &v), GRAIN_OK);
    assert_int_equal(v, 256);
    assert_int_equal(grain_parse_size("", &v), GRAIN_ERR_CONFIG);
    assert_int_equal(grain_parse_size("-1", &v), GRAIN_ERR_CONFIG);
    assert_int_equal(grain_parse_size("12Q", &v), GRAIN_ERR_CONFIG);
    assert_int_equal(grain_parse_size("99999999999999999999", &v), GRAIN_ERR_CONFIG);
    assert_int_equal(grain_parse_size("20000000000000G", &v), GRAIN_ERR_CONFIG);
}

static void expect_error(grain_status_t st, const char *phrase)
{
    assert_int_equal(st, GRAIN_ERR_CONFIG);
    if (strstr(grain_error_message(NULL), phrase) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", grain_error_message(NULL), phrase);
}

static void test_environment_and_api(void **state)
{
    setenv("GRAIN_QUEUE_SLOTS", "17", 1);
    setenv("GRAIN_BUFFER_SIZE", "1K", 1);
    setenv("GRAIN_STATS", "yes", 1);
    grain_config_t *c;
    assert_int_equal(grain_config_create(&c), GRAIN_OK);
    assert_int_equal(c->queue_slots, 17);
    assert_int_equal(c->buffer_size, 1024);
    assert_int_equal(c->stats, 1);
    assert_string_equal(c->queue_slots_origin, "environment");
    assert_int_equal(grain_config_set(c, "queue_slots", "5"), GRAIN_OK);
    assert_int_equal(grain_config_set(c, "GRAIN_FLUSH_TIMEOUT_US", "50"), GRAIN_OK);
    assert_int_equal(c->queue_slots, 5);
    assert_int_equal(c->flush_timeout_us, 50);
    assert_string_equal(c->queue_slots_origin, "api");
    assert_true(grain_config_known("reserve"));
    assert_true(grain_config_known("GRAIN_RESERVE"));
    assert_false(grain_config_known("no_such_thing"));
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    grain_config_print(c, out);
    fclose(out);
    assert_non_null(strstr(text, "GRAIN_QUEUE_SLOTS"));
    assert_non_null(strstr(text, "(api)"));
    free(text);
    grain_config_destroy(c);
    unsetenv("GRAIN_QUEUE_SLOTS");
    unsetenv("GRAIN_BUFFER_SIZE");
    unsetenv("GRAIN_STATS");
}

static void test_impossible_values(void **state)
{
    grain_config_t c;
    grain_config_init_defaults(&c);
    expect_error(grain_config_set(&c, "queue_slots", "16777217"), "GRAIN_QUEUE_SLOTS=16777217 is out of range");
    expect_error(grain_config_set(&c, "queue_width", "0"), "GRAIN_QUEUE_WIDTH=0 is out of range");
    expect_error(grain_config_set(&c, "buffer_size", "16"), "GRAIN_BUFFER_SIZE=16 is out of range");
    expect_error(grain_config_set(&c, "queue_slots", "many"), "expected a whole number");
    expect_error(grain_config_set(&c, "aggregators", "2K"), "expected a whole number");
    expect_error(grain_config_set(&c, "stats", "maybe"), "expected 0/1");
    expect_error(grain_config_set(&c, "colour", "blue"), "unknown setting \"colour\"");
    assert_int_equal(c.queue_slots, 0); /* nothing changed by the failures */

    setenv("GRAIN_QUEUE_SLOTS", "20000000", 1);
    grain_config_t *cp;
    expect_error(grain_config_create(&cp), "GRAIN_QUEUE_SLOTS=20000000");
    unsetenv("GRAIN_QUEUE_SLOTS");

    grain_config_set(&c, "reserve", "warp");
    expect_error(grain_config_check(&c), "GRAIN_RESERVE=\"warp\"");
    grain_config_set(&c, "reserve", "sg");
    grain_config_set(&c, "transport", "carrier-pigeon");
    expect_error(grain_config_check(&c), "GRAIN_TRANSPORT");
    grain_config_set(&c, "transport", "self");
    grain_config_set(&c, "log_level", "chatty");
    expect_error(grain_config_check(&c), "GRAIN_LOG_LEVEL");
    grain_config_set(&c, "log_level", "warn");
    grain_config_set(&c, "queue", "fast");
    expect_error(grain_config_check(&c), "GRAIN_QUEUE=\"fast\": expected paper or ring");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_match_design),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_environment_and_api),
        cmocka_unit_test(test_impossible_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
