#include "grain/device.h"

/* The runtime's apply kernel (runtime/apply.c): one work-item per PUT, add or
 * increment of a received buffer, decoded to pairs (command | offset << 8,
 * value) that the receiver already checked against the heap. */
GRAIN_KERNEL void grain_apply(GRAIN_KERNEL_CTX, GRAIN_GLOBAL const grain_u64 *records, grain_u64 count)
{
    grain_u64 i = grain_global_linear_id();
    if (i < count) {
        grain_u64 w0 = records[2 * i];
        grain_apply_msg(grain_ctx_->heap, (grain_u32)(w0 & 0xffu), w0 >> 8, records[2 * i + 1]);
    }
}
