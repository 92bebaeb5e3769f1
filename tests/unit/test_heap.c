/* SPDX-License-Identifier: BSD-3-Clause */
/* The symmetric heap allocator: deterministic offsets, reuse, coalescing,
 * exhaustion with a clear error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "grain/grain.h"
#include "runtime/heap.h"

static void test_same_sequence_same_offsets(void **state)
{
    grain_heap_t a, b;
    assert_int_equal(grain_heap_init(&a, 1 << 20), GRAIN_OK);
    assert_int_equal(grain_heap_init(&b, 1 << 20), GRAIN_OK);
    uint64_t oa[20], ob[20];
    for (int i = 0; i < 20; i++) {
        assert_int_equal(grain_heap_alloc(&a, (uint64_t)(i * 37 + 1), &oa[i]), GRAIN_OK);
        assert_int_equal(grain_heap_alloc(&b, (uint64_t)(i * 37 + 1), &ob[i]), GRAIN_OK);
        assert_int_equal(oa[i], ob[i]);
        assert_int_equal(oa[i] % 64, 0);
        if (i > 0)
            assert_true(oa[i] >= oa[i - 1] + (uint64_t)((i - 1) * 37 + 1));
    }
    grain_heap_destroy(&a);
    grain_heap_destroy(&b);
}

static void test_free_reuses_and_coalesces(void **state)
{
    grain_heap_t h;
    grain_heap_init(&h, 4096);
    uint64_t x, y, z, w;
    assert_int_equal(grain_heap_alloc(&h, 1024, &x), GRAIN_OK);
    assert_int_equal(grain_heap_alloc(&h, 1024, &y), GRAIN_OK);
    assert_int_equal(grain_heap_alloc(&h, 2048, &z), GRAIN_OK);
    assert_int_equal(grain_heap_alloc(&h, 1, &w), GRAIN_ERR_NO_MEMORY);
    assert_int_equal(grain_heap_largest_free(&h), 0);
    assert_int_equal(grain_heap_free(&h, x), GRAIN_OK);
    assert_int_equal(grain_heap_largest_free(&h), 1024);
    assert_int_equal(grain_heap_free(&h, y), GRAIN_OK);
    assert_int_equal(grain_heap_largest_free(&h), 2048);
    assert_int_equal(grain_heap_free(&h, y), GRAIN_ERR_INVALID); /* double free */
    assert_int_equal(grain_heap_alloc(&h, 2048, &w), GRAIN_OK);  /* needs x and y merged */
    assert_int_equal(w, 0);
    assert_int_equal(grain_heap_free(&h, z), GRAIN_OK);
    assert_int_equal(grain_heap_free(&h, w), GRAIN_OK);
    assert_int_equal(h.n_blocks, 1);
    assert_int_equal(grain_heap_alloc(&h, 8192, &w), GRAIN_ERR_NO_MEMORY);
    assert_non_null(strstr(grain_error_message(NULL), "exceeds the 4096-byte symmetric heap"));
    grain_heap_destroy(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_sequence_same_offsets),
        cmocka_unit_test(test_free_reuses_and_coalesces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
