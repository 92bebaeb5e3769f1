/* SPDX-License-Identifier: BSD-3-Clause */
/* Which device each endpoint drives: a rank's share of its node's devices,
 * consecutive devices for the node's ranks, round the devices when the
 * ranks ask for more than there are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "runtime/devices.h"
#include "runtime/endpoints/endpoint.h"

static void test_auto_share(void **state)
{
    assert_int_equal(grain_ep_auto_devices(8, 1), 8);
    assert_int_equal(grain_ep_auto_devices(8, 2), 4);
    assert_int_equal(grain_ep_auto_devices(8, 3), 2); /* two devices idle: no rank gets a third */
    assert_int_equal(grain_ep_auto_devices(2, 4), 1); /* at least one, shared */
    assert_int_equal(grain_ep_auto_devices(1, 0), 1); /* node size unknown: all */
}

static void test_consecutive_devices(void **state)
{
    /* 2 ranks x 4 endpoints on 8 devices: 0-3 and 4-7. */
    for (unsigned v = 0; v < 4; v++) {
        assert_int_equal(grain_node_device_of(0, 4, v, 8), v);
        assert_int_equal(grain_node_device_of(1, 4, v, 8), 4 + v);
    }
    /* 2 ranks x 2 endpoints on 2 devices: both ranks use 0 and 1. */
    assert_int_equal(grain_node_device_of(1, 2, 0, 2), 0);
    assert_int_equal(grain_node_device_of(1, 2, 1, 2), 1);
    /* 3 ranks x 1 on 2 devices: 0, 1, 0. */
    assert_int_equal(grain_node_device_of(2, 1, 0, 2), 0);
    /* No overflow for large products. */
    assert_int_equal(grain_node_device_of(1u << 30, 1024, 5, 3), (unsigned)((((uint64_t)1 << 40) + 5) % 3));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_share),
        cmocka_unit_test(test_consecutive_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
