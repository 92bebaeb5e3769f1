/*
 * Kernels the runtime launches, compiled into every program so that they see
 * the program's active-message handlers (GRAIN_AM_HANDLERS):
 *
 *   grain_apply       applies records staged from received buffers (one
 *                     work-item each) on devices whose heap the host cannot
 *                     apply to, and active messages for device handlers;
 *   grain_am_census   tells grain_am_register_program which handler ids the
 *                     program defines;
 *   grain_chunk_agent the device transfer agent of counter-triggered
 *                     transfers (grain/device/chunks.h).
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

/*
 * The device agent: launched beside a producer, its work-groups poll region
 * r's ready bitmap (work-group w the words w, w + groups, ...) and each
 * moves the chunks of its words as they turn ready, returning once it has
 * moved every one of them.  moved[c] counts chunk c's moves.
 */
GRAIN_KERNEL void grain_chunk_agent(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_region_dev_t *r,
                                    GRAIN_GLOBAL grain_u32 *moved)
{
    GRAIN_LOCAL_DECL grain_u64 claimed[2]; /* the bits, and whether to give up */
    (void)grain_ctx_;
    grain_u64 first = grain_group_linear_id(), stride = grain_group_linear_count();
    grain_u64 words = ((grain_u64)r->n_chunks + 63u) / 64u;
    grain_u64 left = 0;
    for (grain_u64 w = first; w < words; w += stride)
        left += r->n_chunks - w * 64u < 64u ? r->n_chunks - w * 64u : 64u;
    while (left > 0) {
        for (grain_u64 w = first; w < words; w += stride) {
            if (grain_local_linear_id() == 0) {
                grain_u64 seen = grain_atomic_load_acquire_u64(&r->ready[w]);
                claimed[0] = seen != 0 ? grain_atomic_exchange_acquire_u64(&r->ready[w], 0) : 0;
                claimed[1] = grain_atomic_load_relaxed_u32(r->abort);
            }
            grain_wg_barrier();
            grain_u64 bits = claimed[0];
            int give_up = claimed[1] != 0; /* the producer ended without completing every chunk */
            grain_wg_barrier();
            while (bits != 0) {
                grain_u32 c = (grain_u32)(w * 64u) + grain_ctz64(bits);
                grain_chunk_move_(r, c);
                if (grain_local_linear_id() == 0)
                    moved[c] += 1u;
                bits &= bits - 1u;
                left--;
            }
            if (give_up) {
                left = 0;
                break;
            }
        }
    }
}

#endif /* GRAIN_DEVICE_RUNTIME_KERNELS_H */
