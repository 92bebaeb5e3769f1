/* SPDX-License-Identifier: BSD-3-Clause */
/* The error sentence: a failure that quotes the failure below it (the
 * usual grain_fail(st, "...(%s)", grain_error_message(g))) keeps both. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "services/log.h"

static void test_a_sentence_quotes_its_cause(void **state)
{
    (void)state;
    grain_log_quiet(1);
    assert_int_equal(grain_fail(GRAIN_ERR_BACKEND, "the allocation of %d bytes failed", 4096), GRAIN_ERR_BACKEND);
    assert_int_equal(grain_fail(GRAIN_ERR_NO_MEMORY, "the tiles do not fit (%s): give fewer",
                                grain_error_message(NULL)),
                     GRAIN_ERR_NO_MEMORY);
    grain_log_quiet(0);
    assert_string_equal(grain_error_message(NULL),
                        "the tiles do not fit (the allocation of 4096 bytes failed): give fewer");
}

static void test_a_long_sentence_is_cut(void **state)
{
    (void)state;
    char word[4000];
    memset(word, 'x', sizeof word - 1);
    word[sizeof word - 1] = '\0';
    grain_log_quiet(1);
    grain_fail(GRAIN_ERR_INVALID, "%s", word);
    grain_fail(GRAIN_ERR_INVALID, "again: %s", grain_error_message(NULL));
    grain_log_quiet(0);
    const char *kept = grain_error_message(NULL);
    assert_true(strncmp(kept, "again: xxx", 10) == 0);
    assert_true(strlen(kept) < sizeof word);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_sentence_quotes_its_cause),
        cmocka_unit_test(test_a_long_sentence_is_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
