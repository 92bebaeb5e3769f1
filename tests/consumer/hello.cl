/* SPDX-License-Identifier: BSD-3-Clause */
/* Every work-item of every rank adds one to a counter on every rank. */
#include "grain/device.h"

GRAIN_KERNEL void hello(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *counter)
{
    GRAIN_WG_BEGIN(wg);
    for (int pe = 0; pe < grain_n_pes(&wg); pe++)
        grain_inc64(&wg, counter, pe, 1);
}
