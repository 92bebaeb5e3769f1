/*
 * Kernels the runtime launches, compiled into every program so that they see
 * the program's active-message handlers (GRAIN_AM_HANDLERS):
 *
 *   grain_apply       applies records staged from received buffers (one
 *                     work-item each) on devices whose heap the host cannot
 *                     apply to, and active messages for device handlers;
 *   grain_am_census   tells grain_am_register_program which handler ids the
 *                     program defines.
 */
#ifndef GRAIN_DEVICE_RUNTIME_KERNELS_H
#define GRAIN_DEVICE_RUNTIME_KERNELS_H

GRAIN_KERNEL void grain_apply(GRAIN_KERNEL_CTX, GRAIN_GLOBAL const grain_u64 *records, grain_u64 count)
{
    grain_u64 i = grain_global_linear_id();
    if (i >= count)
        return;
    GRAIN_GLOBAL const grain_u64 *r = records + GRAIN_RECORD_WORDS * i;
    grain_u64 w0 = r[0];
    grain_u32 cmd = GRAIN_HDR_CMD(w0);
    if (cmd == GRAIN_CMD_AM)
        grain_am_dispatch_(GRAIN_HDR_HANDLER(w0), grain_ctx_->heap, GRAIN_HDR_PE(w0), r[1], r[2]);
    else
        grain_apply_msg(grain_ctx_->heap, cmd, w0 >> 8, r[1]);
}

/* Sets bit `id` of `bits`; an id the runtime cannot register is kept, plus
 * one, in the word after the bitmap. */
GRAIN_INLINE void grain_am_census_one_(GRAIN_GLOBAL grain_u32 *bits, grain_u32 id)
{
    if (id < GRAIN_MAX_HANDLERS)
        bits[id / 32] |= 1u << (id % 32);
    else
        bits[GRAIN_MAX_HANDLERS / 32] = id + 1u;
}

/* One work-item; `bits` holds GRAIN_MAX_HANDLERS / 32 + 1 zeroed words. */
GRAIN_KERNEL void grain_am_census(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_u32 *bits)
{
    (void)grain_ctx_;
#ifdef GRAIN_AM_HANDLERS
#define GRAIN_AM_CENSUS_(id, fn) grain_am_census_one_(bits, (grain_u32)(id));
    GRAIN_AM_HANDLERS(GRAIN_AM_CENSUS_)
#else
    (void)bits;
#endif
}

#endif /* GRAIN_DEVICE_RUNTIME_KERNELS_H */
