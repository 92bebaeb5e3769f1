#include "grain/device.h"

/* Every work-item sends `per_wi` increments to its own rank: the whole send
 * path (reservation, slot write, aggregator drain, apply) without the network. */
GRAIN_KERNEL void bench_send(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *counters, grain_u32 per_wi)
{
    GRAIN_WG_BEGIN(wg);
    grain_u64 gid = grain_global_linear_id();
    for (grain_u32 i = 0; i < per_wi; i++)
        grain_inc64(&wg, &counters[(gid + i) % 64], grain_dev_my_pe(&wg), 1);
}
