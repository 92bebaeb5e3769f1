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
 * The device agent: launched beside a producer, work-group w of `groups`
 * owns the chunks w, w + groups, ... and moves each once its ready word
 * reads `generation` (grain/device/chunks.h), returning when it has moved
 * all of them.  r->moved[c] counts chunk c's moves, so it reads
 * `generation` once c has moved in this iteration.  The first work-item
 * looks for work, from the first chunk not yet moved; the whole work-group
 * copies.
 */
#define GRAIN_AGENT_NONE_ 0xfffffffeu /* nothing ready yet */
#define GRAIN_AGENT_DONE_ 0xffffffffu /* every chunk moved, or the host gave up */

GRAIN_KERNEL void grain_chunk_agent(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_region_dev_t *r, grain_u32 generation)
{
    GRAIN_LOCAL_DECL grain_u32 claimed[1];
    (void)grain_ctx_;
    GRAIN_GLOBAL grain_u32 *moved = r->moved;
    grain_u32 stride = (grain_u32)grain_group_linear_count();
    grain_u32 cursor = (grain_u32)grain_group_linear_id(); /* the first work-item's */
    for (;;) {
        if (grain_local_linear_id() == 0) {
            while (cursor < r->n_chunks && moved[cursor] == generation)
                cursor += stride;
            grain_u32 found = cursor < r->n_chunks ? GRAIN_AGENT_NONE_ : GRAIN_AGENT_DONE_;
            for (grain_u32 c = cursor; found == GRAIN_AGENT_NONE_ && c < r->n_chunks; c += stride)
                if (moved[c] != generation && grain_atomic_load_acquire_dev_u32(&r->ready[c]) == generation)
                    found = c;
            if (found == GRAIN_AGENT_NONE_ && grain_atomic_load_relaxed_u32(r->abort) == generation)
                found = GRAIN_AGENT_DONE_; /* the producer ended without completing every chunk */
            if (found == GRAIN_AGENT_NONE_)
                grain_poll_nap();
            claimed[0] = found;
        }
        grain_wg_barrier();
        grain_u32 c = claimed[0];
        grain_wg_barrier();
        if (c == GRAIN_AGENT_DONE_)
            break;
        if (c != GRAIN_AGENT_NONE_) {
            grain_chunk_move_(r, c, grain_local_linear_id(), grain_local_linear_size());
            if (grain_local_linear_id() == 0)
                moved[c] = generation;
        }
    }
}

#endif /* GRAIN_DEVICE_RUNTIME_KERNELS_H */
