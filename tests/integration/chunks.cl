/* SPDX-License-Identifier: BSD-3-Clause */
#include "grain/device.h"
#include "chunks_pattern.h"

/* Words [first, first + count) of region r get this rank's pattern, one
 * word a work-item, through grain_region_store64 (so that the inline agent
 * moves them too); work-group `skip` (-1: none) leaves without
 * grain_chunk_done, as a faulty producer would. */
GRAIN_KERNEL void produce(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_region_dev_t *r, grain_u64 first, grain_u64 count,
                          grain_u64 iteration, grain_i64 skip)
{
    GRAIN_WG_BEGIN(wg);
    grain_u64 i = grain_global_linear_id();
    if (i < count)
        grain_region_store64(r, first + i, chunk_word(iteration, grain_ctx_->my_pe, i));
    if ((grain_i64)grain_group_linear_id() == skip)
        return;
    grain_chunk_done(&wg, r);
}
