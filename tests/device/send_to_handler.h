/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * For the device tests: 128 work-items of the `send_bad` kernel (wg_prims.cl)
 * each send one active message to `handler` on this rank, which adds twice
 * its argument to a heap word; after quiet, *got holds that word.  Whether
 * the handler runs in the sender or in an apply kernel depends on whether
 * `from` defines it.
 */
#ifndef GRAIN_TESTS_SEND_TO_HANDLER_H
#define GRAIN_TESTS_SEND_TO_HANDLER_H

#include <stdint.h>

#include "grain/grain.h"

static grain_status_t send_to_handler(grain_t *g, grain_program_t *from, uint32_t handler, int64_t *got)
{
    int64_t *target = NULL;
    grain_kernel_t *k = NULL;
    int32_t what = 4;
    uint32_t no_bad_lane = 1u << 30;
    size_t global = 128, local = 64;
    grain_status_t st = grain_malloc(g, 64, (void **)&target);
    if (st == GRAIN_OK)
        st = grain_kernel_create(from, "send_bad", &k);
    if (st == GRAIN_OK) {
        grain_kernel_set_arg_ptr(k, 1, target);
        grain_kernel_set_arg(k, 2, sizeof what, &what);
        grain_kernel_set_arg(k, 3, sizeof no_bad_lane, &no_bad_lane);
        grain_kernel_set_arg(k, 4, sizeof handler, &handler);
        st = grain_launch(k, 1, &global, &local);
    }
    if (st == GRAIN_OK)
        st = grain_quiet(g);
    if (st == GRAIN_OK)
        st = grain_memcpy(g, got, target, sizeof *got);
    grain_kernel_destroy(k);
    if (target != NULL) {
        grain_status_t freed = grain_free(g, target);
        if (st == GRAIN_OK)
            st = freed;
    }
    return st;
}

#endif
