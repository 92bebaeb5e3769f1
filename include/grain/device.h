/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grain device API: one-sided messages from any work-item.
 *
 * Every work-item of a work-group calls the same function; lanes with nothing
 * to send pass active = 0.  Names and argument order follow OpenSHMEM
 * (destination in the symmetric heap, value, PE), plus `active`:
 *
 *   GRAIN_KERNEL void k(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_i64 *table, ...)
 *   {
 *       GRAIN_WG_BEGIN(wg);
 *       grain_inc64(&wg, &table[idx], owner, idx_is_valid);
 *   }
 *
 * How queue space is reserved is chosen at compile time with GRAIN_RESERVE:
 * GRAIN_RESERVE_WG (default: one lane reserves one slot for all the active
 * lanes of its work-group), GRAIN_RESERVE_SG (one slot per sub-group of
 * GRAIN_SG_WIDTH lanes) or GRAIN_RESERVE_WI (one slot per work-item); which
 * queue protocol, with GRAIN_QUEUE (grain/device/queue.h).  With
 * GRAIN_APPLY_IN_PLACE (GRAIN_APPLY=device: the heap is in device memory) a
 * PUT, add or increment to the sender's own PE is applied by the sender
 * instead of crossing the queue.  With GRAIN_PEER_DIRECT (GRAIN_PEER=auto,
 * and some other rank of the node has its heap mapped here) the sender
 * applies them, and active messages to device handlers its program defines,
 * to those ranks too: the direct path.  The runtime defines all four from
 * its configuration when it builds a program.
 *
 * Names: a call's type is its suffix (64, 32; mem for blocks of bytes), and
 * a call that returns before its effect is done here ends in _nbi (the gets
 * that do not wait); sends do not wait for their destination either, as in
 * OpenSHMEM, and keep its names.  What completes a message, and what orders
 * messages before that, is the memory model in grain/grain.h (completion):
 * grain_quiet and grain_fence of a work-group below, grain_quiet and
 * grain_barrier_all on the host.  A lane waits for its own heap's words
 * with grain_wait_until, grain_test and grain_signal_wait_until
 * (grain/device/sync.h).
 */
#ifndef GRAIN_DEVICE_H
#define GRAIN_DEVICE_H

#include "grain/device/port.h"
#include "grain/device/apply.h"
#include "grain/device/ctx.h"
#include "grain/device/queue.h"
#include "grain/device/wg.h"

#define GRAIN_RESERVE_WG 0
#define GRAIN_RESERVE_SG 1
#define GRAIN_RESERVE_WI 2

#ifndef GRAIN_RESERVE
#define GRAIN_RESERVE GRAIN_RESERVE_WG
#endif
#ifndef GRAIN_SG_WIDTH
#define GRAIN_SG_WIDTH 32
#endif
#ifndef GRAIN_APPLY_IN_PLACE
#define GRAIN_APPLY_IN_PLACE 0
#endif
#ifndef GRAIN_PEER_DIRECT
#define GRAIN_PEER_DIRECT 0
#endif

#if GRAIN_RESERVE == GRAIN_RESERVE_WG
#define GRAIN_RESERVE_SEGMENT GRAIN_MAX_WG
#elif GRAIN_RESERVE == GRAIN_RESERVE_SG
#define GRAIN_RESERVE_SEGMENT GRAIN_SG_WIDTH
#else
#define GRAIN_RESERVE_SEGMENT GRAIN_MAX_WG /* unused: work-items reserve alone */
#endif
#define GRAIN_RESERVE_SEGMENTS ((GRAIN_MAX_WG + GRAIN_RESERVE_SEGMENT - 1) / GRAIN_RESERVE_SEGMENT)

/*
 * Active-message handlers are written in this dialect, so that one source
 * serves every place a message may be applied.  A program lists the handlers
 * it runs on the device in an X-macro defined before this header:
 *
 *   #define GRAIN_AM_HANDLERS(X) X(1, relax) X(2, count)
 *   #include "grain/device.h"
 *   GRAIN_AM_HANDLER(relax) { grain_heap_add_u64(heap + a0, a1); }
 *
 * and the host registers it with grain_am_register_program().  Included in
 * host C (no dialect defined), GRAIN_AM_HANDLER makes a function that
 * grain_am_register() takes.
 */
#define GRAIN_AM_HANDLER(name) \
    GRAIN_INLINE void name(GRAIN_GLOBAL char *heap, grain_u32 src_pe, grain_u64 a0, grain_u64 a1)

#if !defined(GRAIN_DIALECT_HOST)

#ifdef GRAIN_AM_HANDLERS
#define GRAIN_AM_DECLARE_(id, fn) GRAIN_AM_HANDLER(fn);
GRAIN_AM_HANDLERS(GRAIN_AM_DECLARE_)
#define GRAIN_AM_CASE_(id, fn) \
    case id:                   \
        fn(heap, src_pe, a0, a1); \
        return 1;
#endif

/* Runs handler `id` if this program defines it (a duplicate id is a compile
 * error); returns whether it did. */
GRAIN_INLINE int grain_am_dispatch_(grain_u32 id, GRAIN_GLOBAL char *heap, grain_u32 src_pe, grain_u64 a0,
                                    grain_u64 a1)
{
#ifdef GRAIN_AM_HANDLERS
    switch (id) {
        GRAIN_AM_HANDLERS(GRAIN_AM_CASE_)
    default:
        break;
    }
#else
    (void)id, (void)heap, (void)src_pe, (void)a0, (void)a1;
#endif
    return 0;
}

/* First parameter of every kernel that uses grain. */
#define GRAIN_KERNEL_CTX GRAIN_GLOBAL grain_dev_t *grain_ctx_

/* The per-segment counts of a work-group: columns claimed, messages in
 * place and, with the direct path, messages direct. */
#define GRAIN_WG_CLAIM_WORDS ((2 + GRAIN_PEER_DIRECT) * GRAIN_RESERVE_SEGMENTS)

/* Declares `wg` and its local memory; must stand at kernel function scope,
 * reached by every work-item (it holds a barrier).  The counts share one
 * array: with a second automatic local array, PoCL 3.1's work-item
 * replication (its method for small work-groups) made kernels that crash. */
#define GRAIN_WG_BEGIN(wg)                                              \
    GRAIN_LOCAL_DECL grain_i64 grain_scratch_[GRAIN_WG_SCRATCH_WORDS];  \
    GRAIN_LOCAL_DECL grain_u32 grain_claims_[GRAIN_WG_CLAIM_WORDS];       \
    grain_wg_t wg;                                                        \
    wg.ctx = grain_ctx_;                                                  \
    wg.scratch = grain_scratch_;                                          \
    wg.claims = grain_claims_;                                            \
    wg.in_place = grain_claims_ + GRAIN_RESERVE_SEGMENTS;                 \
    wg.direct = grain_claims_ + 2 * GRAIN_RESERVE_SEGMENTS;               \
    grain_wg_begin_(&wg)

GRAIN_INLINE void grain_wg_begin_(const grain_wg_t *wg)
{
    for (grain_u32 i = grain_local_linear_id(); i < GRAIN_WG_CLAIM_WORDS; i += grain_local_linear_size())
        wg->claims[i] = 0; /* and the counts that follow */
    grain_wg_barrier();
}

/* This rank and the job's ranks, spelled as the host's grain_my_pe and
 * grain_n_pes (and OpenSHMEM's shmem_my_pe and shmem_n_pes). */
GRAIN_INLINE int grain_my_pe(const grain_wg_t *wg) { return (int)wg->ctx->my_pe; }
GRAIN_INLINE int grain_n_pes(const grain_wg_t *wg) { return (int)wg->ctx->n_pes; }
/* Deprecated: the names before grain_my_pe and grain_n_pes, kept for one
 * version. */
GRAIN_INLINE int grain_dev_my_pe(const grain_wg_t *wg) { return grain_my_pe(wg); }
GRAIN_INLINE int grain_dev_n_pes(const grain_wg_t *wg) { return grain_n_pes(wg); }

/* A message that would be rejected at its destination is refused here, so the
 * kernel's first bad call is reported with the work-item that made it, and
 * on the paths that apply here (in place, direct) nothing bad is written. */
GRAIN_INLINE int grain_msg_valid_(GRAIN_GLOBAL grain_dev_t *ctx, grain_u32 cmd, grain_u32 handler,
                                  grain_i32 pe, grain_u64 offset)
{
    grain_u64 item = grain_global_linear_id();
    if (pe < 0 || (grain_u32)pe >= ctx->n_pes) {
        grain_dev_error(ctx, GRAIN_DEV_ERR_BAD_PE, cmd, pe, (grain_u64)(grain_i64)pe, item);
        return 0;
    }
    if (cmd == GRAIN_CMD_QUIET)
        return 1; /* its first row is a reply ticket, no offset */
    if (cmd == GRAIN_CMD_AM) {
        if (!grain_handler_registered(ctx, handler)) {
            grain_dev_error(ctx, GRAIN_DEV_ERR_BAD_HANDLER, cmd, pe, handler, item);
            return 0;
        }
        return 1;
    }
    grain_u32 width = grain_cmd_width(cmd);
    if (!grain_heap_word_(ctx, offset, width)) {
        grain_dev_error(ctx, GRAIN_DEV_ERR_BAD_OFFSET, cmd, pe, offset, item);
        return 0;
    }
    return 1;
}

/* Whether a put's signal is one: an aligned 64-bit word of the heap at
 * `offset`, set or added to. */
GRAIN_INLINE int grain_signal_valid_(GRAIN_GLOBAL grain_dev_t *ctx, grain_i32 pe, grain_u64 offset, grain_u32 op)
{
    grain_u64 item = grain_global_linear_id();
    if (!grain_heap_word_(ctx, offset, 8)) {
        grain_dev_error(ctx, GRAIN_DEV_ERR_BAD_SIGNAL, GRAIN_CMD_PUT64_SIGNAL, pe, offset, item);
        return 0;
    }
    if (op > GRAIN_SIGNAL_ADD) {
        grain_dev_error(ctx, GRAIN_DEV_ERR_BAD_SIGNAL_OP, GRAIN_CMD_PUT64_SIGNAL, pe, op, item);
        return 0;
    }
    return 1;
}

/* The heap a valid message is applied to by its sender: this rank's (in
 * place: every device handler, and the rest with GRAIN_APPLY_IN_PLACE) or
 * another rank's that is mapped here (direct); 0: through the queue. */
GRAIN_INLINE GRAIN_GLOBAL char *grain_bypass_heap_(GRAIN_GLOBAL grain_dev_t *ctx, grain_u32 cmd, grain_i32 pe)
{
    if ((grain_u32)pe == ctx->my_pe)
        return cmd == GRAIN_CMD_AM || GRAIN_APPLY_IN_PLACE ? ctx->heap : 0;
#if GRAIN_PEER_DIRECT
    return ctx->peers[pe].heap;
#else
    return 0;
#endif
}

/* Adds a segment's count of messages that bypassed the queue to the ring's
 * counter, by its first lane, the count's only reader, who also clears it
 * for the next send (the barrier of grain_wg_publish_ orders that). */
GRAIN_INLINE void grain_count_bypass_(GRAIN_LOCAL grain_u32 *count, GRAIN_GLOBAL grain_u64 *counter, int first)
{
    if (first && *count != 0) {
        grain_atomic_fetch_add_dev_u64(counter, *count);
        *count = 0;
    }
}

/*
 * A lane's place in the queue for one collective send: the slot's ring and
 * ticket, the lane's column in it, and whether this lane publishes the slot
 * (with how many messages).  grain_wg_reserve_ and grain_wg_publish_ are
 * called by every work-item of the work-group (they hold barriers unless
 * GRAIN_RESERVE_WI); between them each active lane writes the rows of its
 * column.
 */
typedef struct grain_slot {
    grain_u64 ticket;
    grain_u32 col;
    grain_u32 col2; /* a wide message's second column */
    grain_u32 count;
    grain_u32 ring;
    int publisher;
} grain_slot_t;

/* `wide` (the same in every lane): each active lane takes two columns. */
GRAIN_INLINE grain_slot_t grain_wg_reserve_(const grain_wg_t *wg, GRAIN_GLOBAL grain_queue_desc_t *d,
                                            int active, int in_place, int direct, int wide)
{
    grain_slot_t s = {0, 0, 0, 0, 0, 0};
    s.ring = grain_queue_ring_of(&d->geom, grain_group_linear_id());
#if GRAIN_RESERVE == GRAIN_RESERVE_WI
    (void)wg;
    if (in_place)
        grain_atomic_fetch_add_dev_u64(&d->prod[s.ring].in_place, 1);
    if (direct)
        grain_atomic_fetch_add_dev_u64(&d->prod[s.ring].direct, 1);
    if (active) {
        s.ticket = grain_queue_reserve(d, s.ring, 1);
        s.count = wide ? 2 : 1;
        s.col2 = 1;
        s.publisher = 1;
    }
#else
    /*
     * Active lanes claim their columns (one local atomic per warp where the
     * dialect has warp intrinsics, per lane elsewhere).  Lane 0 (active or
     * not: every lane runs this code) reserves the slots of every segment
     * with messages in one queue atomic: consecutive tickets, which is what
     * keeps reservation free of deadlock (grain/device/queue.h).  Each
     * segment's first lane zeroes its claims for the next send, which the
     * barrier of grain_wg_publish_ orders before it.  Two barriers replace
     * the prefix sum of Gravel: PoCL compiles a kernel with many sends in
     * minutes less.  The messages applied without the queue are counted the
     * same way.
     */
    GRAIN_LOCAL grain_u64 *tickets = (GRAIN_LOCAL grain_u64 *)wg->scratch;
    grain_u32 seg = grain_local_linear_id() / GRAIN_RESERVE_SEGMENT;
    int first = grain_local_linear_id() % GRAIN_RESERVE_SEGMENT == 0;
    s.col = grain_local_claim_u32(&wg->claims[seg], active, GRAIN_RESERVE_SEGMENT);
    if (wide)
        s.col2 = grain_local_claim_u32(&wg->claims[seg], active, GRAIN_RESERVE_SEGMENT);
    (void)grain_local_claim_u32(&wg->in_place[seg], in_place, GRAIN_RESERVE_SEGMENT);
#if GRAIN_PEER_DIRECT
    (void)grain_local_claim_u32(&wg->direct[seg], direct, GRAIN_RESERVE_SEGMENT);
#else
    (void)direct;
#endif
    grain_wg_barrier();
    s.count = wg->claims[seg];
    grain_count_bypass_(&wg->in_place[seg], &d->prod[s.ring].in_place, first);
#if GRAIN_PEER_DIRECT
    grain_count_bypass_(&wg->direct[seg], &d->prod[s.ring].direct, first);
#endif
    s.publisher = first && s.count > 0;
    if (grain_local_linear_id() == 0) {
        grain_u32 segs = (grain_local_linear_size() + GRAIN_RESERVE_SEGMENT - 1) / GRAIN_RESERVE_SEGMENT, n = 0;
        for (grain_u32 i = 0; i < segs; i++)
            tickets[i] = wg->claims[i] > 0 ? n++ : 0;
        grain_u64 base = n > 0 ? grain_queue_reserve(d, s.ring, n) : 0;
        for (grain_u32 i = 0; i < segs; i++)
            tickets[i] += base;
    }
    grain_wg_barrier();
    s.ticket = tickets[seg];
    if (first)
        wg->claims[seg] = 0;
#endif
    return s;
}

/* Where the lane writes row 0 of its message's column `col`. */
GRAIN_INLINE GRAIN_GLOBAL grain_u64 *grain_slot_word_(GRAIN_GLOBAL grain_queue_desc_t *d, grain_slot_t s,
                                                      grain_u32 col)
{
    return grain_queue_payload(d->shared, &d->geom, s.ring, s.ticket) + col;
}

GRAIN_INLINE void grain_wg_publish_(GRAIN_GLOBAL grain_queue_desc_t *d, grain_slot_t s)
{
#if GRAIN_RESERVE != GRAIN_RESERVE_WI
    grain_wg_barrier(); /* every column of the slot is written */
#endif
    if (s.publisher) {
        grain_fence_release();
        grain_queue_publish(d->shared, &d->geom, s.ring, s.ticket, s.count);
    }
}

/* The send path: validate, apply here where the destination's heap is in
 * reach, else reserve, write the lane's column and publish.  A put with
 * signal (GRAIN_CMD_PUT64_SIGNAL) also carries the signal word's offset,
 * its operation and its value, in a second column; a fetch (GRAIN_CMD_FETCH*)
 * the value compared and its reply ticket in the second column's rows. */
GRAIN_INLINE void grain_send_wide_(const grain_wg_t *wg, grain_u32 cmd, grain_u32 handler, grain_i32 pe,
                                   grain_u64 w1, grain_u64 w2, grain_u64 sig_offset, grain_u32 sig_op,
                                   grain_u64 sig_value, int active)
{
    GRAIN_GLOBAL grain_dev_t *ctx = wg->ctx;
    GRAIN_GLOBAL grain_queue_desc_t *d = &ctx->queue;
    int fetch = cmd == GRAIN_CMD_FETCH32 || cmd == GRAIN_CMD_FETCH64, wide = fetch || cmd == GRAIN_CMD_PUT64_SIGNAL;
    if (active)
        active = grain_msg_valid_(ctx, cmd, handler, pe, w1) &&
                 (fetch || !wide || grain_signal_valid_(ctx, pe, sig_offset, sig_op));
    /* A fetch comes here only for a rank out of reach; a quiet request is
     * answered by the destination's host, whatever the path. */
    GRAIN_GLOBAL char *heap = active && !fetch && cmd != GRAIN_CMD_QUIET ? grain_bypass_heap_(ctx, cmd, pe) : 0;
    int bypass = 0;
    if (heap != 0 && wide) {
        grain_apply_put_signal(heap, w1, w2, (grain_u64)sig_op | sig_offset << 8, sig_value);
        bypass = 1;
    } else if (heap != 0 && cmd != GRAIN_CMD_AM) {
        grain_apply_msg(heap, cmd, w1, w2);
        bypass = 1;
    } else if (heap != 0) {
        /* A device handler runs here, on every backend: the host could only
         * hand it to an apply kernel.  One this program lacks, or a host
         * handler, goes through the queue. */
        bypass = grain_handler_on_device(ctx, handler) && grain_am_dispatch_(handler, heap, ctx->my_pe, w1, w2);
    }
    int in_place = bypass && (grain_u32)pe == ctx->my_pe;
    active = active && !bypass;
    /* A slot holds `width` columns (GRAIN_MAX_WG, at least 2), and wide
     * messages take two: a segment's lanes send in passes of width / 2.  As
     * many passes as the largest segment needs, a constant, so that the loop
     * unrolls: PoCL copies the rest of a kernel for each loop with barriers
     * whose count it cannot see, and a kernel with eight fetches took
     * minutes to compile. */
    grain_u32 per_pass = GRAIN_RESERVE_SEGMENT, passes = 1;
#if GRAIN_RESERVE != GRAIN_RESERVE_WI
    if (wide) {
        per_pass = GRAIN_MAX_WG / 2;
        passes = ((GRAIN_RESERVE_SEGMENT < GRAIN_MAX_WG ? GRAIN_RESERVE_SEGMENT : GRAIN_MAX_WG) + per_pass - 1) /
                 per_pass;
    }
#endif
    for (grain_u32 k = 0; k < passes; k++) {
        int mine = active && (!wide || (grain_local_linear_id() % GRAIN_RESERVE_SEGMENT) / per_pass == k);
        grain_slot_t s = grain_wg_reserve_(wg, d, mine, k == 0 && in_place, k == 0 && bypass && !in_place, wide);
        if (mine) {
            GRAIN_GLOBAL grain_u64 *p = grain_slot_word_(d, s, s.col);
            grain_u32 width = d->geom.width;
            p[0] = GRAIN_HDR(cmd, wide ? s.col2 : handler, (grain_u32)pe);
            p[width] = w1;
            if (!grain_cmd_valueless(cmd))
                p[2 * width] = w2;
            if (wide) {
                GRAIN_GLOBAL grain_u64 *q = grain_slot_word_(d, s, s.col2);
                q[0] = GRAIN_HDR(GRAIN_CMD_MORE, sig_op, (grain_u32)pe);
                q[width] = sig_offset;
                q[2 * width] = sig_value;
            }
        }
        grain_wg_publish_(d, s);
#if GRAIN_RESERVE != GRAIN_RESERVE_WI
        /* In the passes of wide messages only, the loop PoCL misread
         * (port.h, grain_wg_rejoin); after the loop was too late.  A barrier
         * after every send made PoCL compile shmem_all's kernel for more
         * than five minutes. */
        if (wide)
            grain_wg_rejoin();
#endif
    }
}

GRAIN_INLINE void grain_send_(const grain_wg_t *wg, grain_u32 cmd, grain_u32 handler, grain_i32 pe,
                              grain_u64 w1, grain_u64 w2, int active)
{
    grain_send_wide_(wg, cmd, handler, pe, w1, w2, 0, 0, 0, active);
}

/* Offset of a symmetric-heap address: what active-message handlers get back
 * as `heap + offset` on the destination. */
GRAIN_INLINE grain_u64 grain_offset(const grain_wg_t *wg, GRAIN_GLOBAL void *dest)
{
    return (grain_u64)((GRAIN_GLOBAL char *)dest - wg->ctx->heap);
}

/* PUT: store `value` at `dest` (a symmetric-heap address) on PE `pe`. */
GRAIN_INLINE void grain_put64(const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *dest, grain_i64 value,
                              grain_i32 pe, int active)
{
    grain_send_(wg, GRAIN_CMD_PUT64, 0, pe, grain_offset(wg, dest), (grain_u64)value, active);
}

GRAIN_INLINE void grain_put32(const grain_wg_t *wg, GRAIN_GLOBAL grain_i32 *dest, grain_i32 value,
                              grain_i32 pe, int active)
{
    grain_send_(wg, GRAIN_CMD_PUT32, 0, pe, grain_offset(wg, dest), (grain_u64)(grain_u32)value,
                active);
}

/* Atomic add at the destination. */
GRAIN_INLINE void grain_add64(const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *dest, grain_i64 value,
                              grain_i32 pe, int active)
{
    grain_send_(wg, GRAIN_CMD_ADD64, 0, pe, grain_offset(wg, dest), (grain_u64)value, active);
}

GRAIN_INLINE void grain_add32(const grain_wg_t *wg, GRAIN_GLOBAL grain_i32 *dest, grain_i32 value,
                              grain_i32 pe, int active)
{
    grain_send_(wg, GRAIN_CMD_ADD32, 0, pe, grain_offset(wg, dest), (grain_u64)(grain_u32)value,
                active);
}

/* Atomic increment at the destination (the smallest message on the wire). */
GRAIN_INLINE void grain_inc64(const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *dest, grain_i32 pe,
                              int active)
{
    grain_send_(wg, GRAIN_CMD_INC64, 0, pe, grain_offset(wg, dest), 0, active);
}

GRAIN_INLINE void grain_inc32(const grain_wg_t *wg, GRAIN_GLOBAL grain_i32 *dest, grain_i32 pe,
                              int active)
{
    grain_send_(wg, GRAIN_CMD_INC32, 0, pe, grain_offset(wg, dest), 0, active);
}

/* PUT with signal: store `value` at `dest` on PE `pe`, then set
 * (GRAIN_SIGNAL_SET) or add to (GRAIN_SIGNAL_ADD) the 64-bit signal word
 * `sig_addr` there, after the data on every path: a lane that waits for
 * the signal (grain_signal_wait_until) then reads the data. */
GRAIN_INLINE void grain_put64_signal(const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *dest, grain_i64 value,
                                     GRAIN_GLOBAL grain_u64 *sig_addr, grain_u64 signal, grain_u32 sig_op,
                                     grain_i32 pe, int active)
{
    grain_send_wide_(wg, GRAIN_CMD_PUT64_SIGNAL, 0, pe, grain_offset(wg, dest), (grain_u64)value,
                     grain_offset(wg, sig_addr), sig_op, signal, active);
}

/*
 * Gets and fetching atomics (OpenSHMEM's g, atomic_fetch, atomic_fetch_add,
 * atomic_fetch_inc, atomic_swap, atomic_compare_swap and atomic_fetch_and,
 * _or and _xor), called by every work-item of the work-group like the
 * sends; each active lane gets the old value of its word, the others 0.
 * Where the word is in reach, in this rank's heap or in a peer's mapped on
 * the direct path, the lane reads or updates it itself, atomically at the
 * heap's scope (system scope where a peer device's memory is mapped).  A
 * word of a rank reached through the transport is a request, a wide message
 * that carries a reply ticket; whoever applies it at the destination sends
 * the old value back (GRAIN_CMD_REPLY) into the ticket's reply slot, and
 * the lane waits for it there (docs/shmem-api.md).  A word outside the heap
 * or misaligned, or a PE that does not exist, is a device error reported at
 * the next grain_wait with the rank, and the lane gets 0.
 */
/* The word's address where it is in reach; 0 otherwise, with *far_p set
 * where it is valid but needs a request. */
GRAIN_INLINE GRAIN_GLOBAL char *grain_fetch_word_(GRAIN_GLOBAL grain_dev_t *ctx, grain_u32 width, grain_u64 offset,
                                                  grain_i32 pe, int *far_p)
{
    grain_u64 item = grain_global_linear_id();
    *far_p = 0;
    if (pe < 0 || (grain_u32)pe >= ctx->n_pes) {
        grain_dev_error(ctx, GRAIN_DEV_ERR_BAD_FETCH_PE, width, pe, (grain_u64)(grain_i64)pe, item);
        return 0;
    }
    if (!grain_heap_word_(ctx, offset, width)) {
        grain_dev_error(ctx, GRAIN_DEV_ERR_BAD_FETCH, width, pe, offset, item);
        return 0;
    }
    GRAIN_GLOBAL char *heap = (grain_u32)pe == ctx->my_pe ? ctx->heap : 0;
#if GRAIN_PEER_DIRECT
    if (heap == 0)
        heap = ctx->peers[pe].heap;
#endif
    *far_p = heap == 0;
    return heap != 0 ? heap + offset : 0;
}

/* Waits until reply slot number `c` (of the rank's counter) is free for its
 * generation: its previous user has read its reply. */
GRAIN_INLINE void grain_reply_slot_wait_(GRAIN_GLOBAL grain_dev_t *ctx, grain_u64 c)
{
    GRAIN_GLOBAL grain_u64 *tag = ctx->replies + 2 * (c % ctx->reply_slots) + 1;
    while ((grain_u32)grain_atomic_load_acquire_u64(tag) != 2u * (grain_u32)(c / ctx->reply_slots))
        grain_poll_nap();
}

/*
 * The requests of the lanes with `far` set, then their replies; every lane
 * calls it.  The work-group takes consecutive reply slots from the rank's
 * counter in one atomic, and its first work-item waits until each is free
 * before anyone sends (with GRAIN_RESERVE_WI, whose sends hold no barrier,
 * each lane takes and waits for its own).  Slots are taken in counter order
 * and each waits only for earlier ones, whose lanes have sent their
 * requests, so waiting for slots cannot close a cycle, and no lane holds a
 * slot at a barrier that another lane waits at for a slot.
 * GRAIN_REPLY_SLOTS is at least a work-group's lanes.  A lane frees its
 * slot once it has read the reply.
 */
GRAIN_INLINE grain_u64 grain_fetch_far_(const grain_wg_t *wg, grain_u32 cmd, grain_u32 op, grain_u64 offset,
                                        grain_u64 value, grain_u64 cond, grain_i32 pe, int far, grain_u64 got)
{
    GRAIN_GLOBAL grain_dev_t *ctx = wg->ctx;
#if GRAIN_RESERVE == GRAIN_RESERVE_WI
    grain_u64 c = far ? grain_atomic_fetch_add_dev_u64(ctx->reply_next, 1) : 0;
    if (far)
        grain_reply_slot_wait_(ctx, c);
#else
    /* claims[0] is 0 between sends; the send below reserves after a barrier
     * that follows every lane's read of the base. */
    grain_u32 mine = grain_local_claim_u32(&wg->claims[0], far, grain_local_linear_size());
    grain_wg_barrier();
    if (grain_local_linear_id() == 0) {
        grain_u32 total = wg->claims[0];
        wg->claims[0] = 0;
        grain_u64 base = total > 0 ? grain_atomic_fetch_add_dev_u64(ctx->reply_next, total) : 0;
        for (grain_u64 k = base; k < base + total; k++)
            grain_reply_slot_wait_(ctx, k);
        wg->scratch[0] = (grain_i64)base;
    }
    /* No branch around the barriers that follow, though no lane may be far:
     * PoCL copies the rest of a kernel for each such branch, and a kernel
     * with a dozen of these calls took it longer to compile than to run. */
    grain_wg_barrier();
    grain_u64 c = (grain_u64)wg->scratch[0] + mine;
#endif
    grain_u32 slot = (grain_u32)(c % ctx->reply_slots), gen = (grain_u32)(c / ctx->reply_slots);
    grain_u64 ticket = GRAIN_TICKET(op, slot, gen);
    /* A quiet request is a plain message whose first row is the ticket,
     * as a reply's; one call for both, so no branch holds the barriers. */
    int quiet = cmd == GRAIN_CMD_QUIET;
    grain_send_wide_(wg, cmd, 0, pe, quiet ? ticket >> 8 : offset, value, cond, 0, quiet ? 0 : ticket, far);
    if (far) {
        GRAIN_GLOBAL grain_u64 *r = ctx->replies + 2 * slot;
        while ((grain_u32)grain_atomic_load_acquire_u64(&r[1]) != 2u * gen + 1u)
            grain_poll_nap();
        got = r[0];
        grain_atomic_store_release_u32(&r[1], 2u * gen + 2u);
    }
    return got;
}

#define GRAIN_AMO_CALL_(bits)                                                                              \
    GRAIN_INLINE grain_u##bits grain_amo##bits##_(const grain_wg_t *wg, grain_u32 op, GRAIN_GLOBAL void *addr, \
                                                  grain_u##bits value, grain_u##bits cond, grain_i32 pe,       \
                                                  int active)                                                  \
    {                                                                                                      \
        grain_u64 offset = grain_offset(wg, addr);                                                         \
        int far = 0;                                                                                       \
        GRAIN_GLOBAL char *p = active ? grain_fetch_word_(wg->ctx, bits / 8, offset, pe, &far) : 0;        \
        grain_u64 got = p != 0 ? grain_apply_amo##bits(p, op, value, cond) : 0;                             \
        return (grain_u##bits)grain_fetch_far_(wg, GRAIN_CMD_FETCH##bits, op, offset, value, cond, pe, far, got); \
    }
GRAIN_AMO_CALL_(32)
GRAIN_AMO_CALL_(64)

/* Get: the word at `src` (a symmetric-heap address) on PE `pe`. */
GRAIN_INLINE grain_i64 grain_get64(const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *src, grain_i32 pe, int active)
{
    return (grain_i64)grain_amo64_(wg, GRAIN_AMO_FETCH, src, 0, 0, pe, active);
}

GRAIN_INLINE grain_i32 grain_get32(const grain_wg_t *wg, GRAIN_GLOBAL grain_i32 *src, grain_i32 pe, int active)
{
    return (grain_i32)grain_amo32_(wg, GRAIN_AMO_FETCH, src, 0, 0, pe, active);
}

/*
 * The fetching atomics, 64- and 32-bit: fetch (an atomic read), fetch_add,
 * fetch_inc, swap, compare_swap (stores `value` where the word equals
 * `cond`) and the bitwise fetch_and, fetch_or and fetch_xor.
 */
#define GRAIN_AMO_API_(bits, T, U)                                                                         \
    GRAIN_INLINE T grain_atomic_fetch##bits(const grain_wg_t *wg, GRAIN_GLOBAL T *src, grain_i32 pe, int active) \
    {                                                                                                      \
        return (T)grain_amo##bits##_(wg, GRAIN_AMO_FETCH, src, 0, 0, pe, active);                          \
    }                                                                                                      \
    GRAIN_INLINE T grain_atomic_fetch_add##bits(const grain_wg_t *wg, GRAIN_GLOBAL T *dest, T value, grain_i32 pe, \
                                                int active)                                                \
    {                                                                                                      \
        return (T)grain_amo##bits##_(wg, GRAIN_AMO_ADD, dest, (U)value, 0, pe, active);                    \
    }                                                                                                      \
    GRAIN_INLINE T grain_atomic_fetch_inc##bits(const grain_wg_t *wg, GRAIN_GLOBAL T *dest, grain_i32 pe,    \
                                                int active)                                                \
    {                                                                                                      \
        return (T)grain_amo##bits##_(wg, GRAIN_AMO_ADD, dest, 1, 0, pe, active);                           \
    }                                                                                                      \
    GRAIN_INLINE T grain_atomic_swap##bits(const grain_wg_t *wg, GRAIN_GLOBAL T *dest, T value, grain_i32 pe,  \
                                           int active)                                                     \
    {                                                                                                      \
        return (T)grain_amo##bits##_(wg, GRAIN_AMO_SWAP, dest, (U)value, 0, pe, active);                   \
    }                                                                                                      \
    GRAIN_INLINE T grain_atomic_compare_swap##bits(const grain_wg_t *wg, GRAIN_GLOBAL T *dest, T cond, T value, \
                                                   grain_i32 pe, int active)                               \
    {                                                                                                      \
        return (T)grain_amo##bits##_(wg, GRAIN_AMO_CSWAP, dest, (U)value, (U)cond, pe, active);            \
    }                                                                                                      \
    GRAIN_INLINE U grain_atomic_fetch_and##bits(const grain_wg_t *wg, GRAIN_GLOBAL U *dest, U value, grain_i32 pe, \
                                                int active)                                                \
    {                                                                                                      \
        return grain_amo##bits##_(wg, GRAIN_AMO_AND, dest, value, 0, pe, active);                          \
    }                                                                                                      \
    GRAIN_INLINE U grain_atomic_fetch_or##bits(const grain_wg_t *wg, GRAIN_GLOBAL U *dest, U value, grain_i32 pe, \
                                               int active)                                                 \
    {                                                                                                      \
        return grain_amo##bits##_(wg, GRAIN_AMO_OR, dest, value, 0, pe, active);                           \
    }                                                                                                      \
    GRAIN_INLINE U grain_atomic_fetch_xor##bits(const grain_wg_t *wg, GRAIN_GLOBAL U *dest, U value, grain_i32 pe, \
                                                int active)                                                \
    {                                                                                                      \
        return grain_amo##bits##_(wg, GRAIN_AMO_XOR, dest, value, 0, pe, active);                          \
    }
GRAIN_AMO_API_(64, grain_i64, grain_u64)
GRAIN_AMO_API_(32, grain_i32, grain_u32)

/* The work-group quiet's steps, asking every rank (`only` < 0) or rank
 * `only` alone, and no rank unless `ask`; every work-item calls it. */
GRAIN_INLINE void grain_quiet_ranks_(const grain_wg_t *wg, grain_i32 only, int ask)
{
    GRAIN_GLOBAL grain_dev_t *ctx = wg->ctx;
    grain_heap_fence_release();
    /* Every lane's earlier messages are in the queue before any request
     * (lanes that reserve alone, GRAIN_RESERVE_WI, may be behind). */
    grain_wg_barrier();
    grain_u32 n = grain_local_linear_size(), asked = only < 0 ? ctx->n_pes : 1;
    for (grain_u32 base = 0; base < asked; base += n) {
        grain_u32 k = base + grain_local_linear_id();
        grain_i32 pe = only < 0 ? (grain_i32)k : only;
        (void)grain_fetch_far_(wg, GRAIN_CMD_QUIET, 0, 0, 0, 0, pe, ask && k < asked, 0);
    }
    /* Only the asking lanes waited: the others return once every answer is
     * in, or a lane's next read of its own heap would come first. */
    grain_wg_barrier();
}

/*
 * Work-group quiet, OpenSHMEM's shmem_quiet for the calling work-group
 * (NVSHMEM's nvshmemx_quiet_block): returns once every message its lanes
 * sent before the call is applied at its destination, on every path, and
 * visible there to kernels and to the host.  Every work-item calls it.
 *
 * In place and on the direct path the lanes applied their messages
 * themselves: a release fence at the heap's scope makes them visible.  A
 * queued message may be anywhere between the queue and an apply kernel of
 * its destination, so the work-group asks each rank (one lane a rank): the
 * request is a queue message behind the work-group's earlier ones, which
 * leaves after every buffer that holds them, and the destination answers
 * once every buffer that reached it before the request is applied
 * (runtime/messages/quiets.h; docs/shmem-api.md).  The answer comes back like a
 * fetch's reply, into a reply slot, and each asking lane waits for its own.
 * The cost is a round trip through each rank's host, whatever the work-group
 * sent.
 */
GRAIN_INLINE void grain_quiet(const grain_wg_t *wg)
{
    grain_quiet_ranks_(wg, -1, 1);
}

/*
 * Fence, OpenSHMEM's shmem_fence for the calling work-group: its messages
 * to a rank before the call are applied before those after it.  Queued
 * messages keep no order of their own (aggregators, receive threads and
 * apply kernels work side by side), so the fence is a quiet: what it orders
 * after is sent only once what it orders before is applied.
 */
GRAIN_INLINE void grain_fence(const grain_wg_t *wg)
{
    grain_quiet(wg);
}

/*
 * Bulk transfers by the whole work-group, every lane passing the same
 * arguments: `nbytes` between addresses `src` and `dest`, as consecutive words taken
 * by consecutive lanes, 64-bit ones where both addresses and `nbytes`
 * allow, else 32-bit.  The words a lane takes in round r: base + lane, base
 * = r x the work-group's size.  `nbytes` must be a multiple of 4 (there is
 * no smaller message): another size is a device error (`cmd` says whether
 * a put or a get) and nothing moves.  Returns the words, 0 for none; *wide_p
 * says their size.
 */
GRAIN_INLINE grain_u64 grain_mem_words_(const grain_wg_t *wg, grain_u64 dest, grain_u64 src, grain_u64 nbytes,
                                        grain_u32 cmd, grain_i32 pe, int active, int *wide_p)
{
    if (active && nbytes % 4 != 0) {
        if (grain_local_linear_id() == 0)
            grain_dev_error(wg->ctx, GRAIN_DEV_ERR_BAD_SIZE, cmd, pe, nbytes, grain_global_linear_id());
        active = 0;
    }
    *wide_p = (dest | src | nbytes) % 8 == 0;
    return active ? nbytes / (*wide_p ? 8 : 4) : 0;
}

/*
 * Bulk PUT, OpenSHMEM's putmem (NVSHMEM's putmem_block): from `src` (global
 * memory) to `dest` (the symmetric heap) on PE `pe`.  On the direct path
 * the lanes store into the peer's heap, else each word is a message, which
 * quiet completes like any other.
 */
GRAIN_INLINE void grain_putmem(const grain_wg_t *wg, GRAIN_GLOBAL void *dest, GRAIN_GLOBAL const void *src,
                               grain_u64 nbytes, grain_i32 pe, int active)
{
    int wide;
    grain_u64 words = grain_mem_words_(wg, (grain_u64)dest, (grain_u64)src, nbytes, GRAIN_CMD_PUT32, pe, active, &wide);
    grain_u32 lid = grain_local_linear_id(), n = grain_local_linear_size();
    for (grain_u64 base = 0; base < words; base += n) {
        grain_u64 i = base + lid;
        if (wide)
            grain_put64(wg, (GRAIN_GLOBAL grain_i64 *)dest + i,
                        i < words ? ((GRAIN_GLOBAL const grain_i64 *)src)[i] : 0, pe, i < words);
        else
            grain_put32(wg, (GRAIN_GLOBAL grain_i32 *)dest + i,
                        i < words ? ((GRAIN_GLOBAL const grain_i32 *)src)[i] : 0, pe, i < words);
    }
}

/*
 * Bulk PUT with signal, OpenSHMEM's putmem_signal (NVSHMEM's
 * putmem_signal_block): grain_putmem, then the 64-bit signal word
 * `sig_addr` on PE `pe` set to `signal` (GRAIN_SIGNAL_SET) or increased by
 * it (GRAIN_SIGNAL_ADD) once every word is applied there, so that a lane
 * that waits for the signal (grain_signal_wait_until) reads the whole
 * block.  In place and on the direct path the lanes stored the words
 * themselves, and a release fence and a barrier order them before the
 * signal; through the queue the work-group first asks `pe` whether they are
 * applied (a quiet to that rank alone: a round trip through its host).  A
 * signal word outside the heap or misaligned, or another operation, is a
 * device error, and no signal is sent.
 */
GRAIN_INLINE void grain_putmem_signal(const grain_wg_t *wg, GRAIN_GLOBAL void *dest, GRAIN_GLOBAL const void *src,
                                      grain_u64 nbytes, GRAIN_GLOBAL grain_u64 *sig_addr, grain_u64 signal,
                                      grain_u32 sig_op, grain_i32 pe, int active)
{
    GRAIN_GLOBAL grain_dev_t *ctx = wg->ctx;
    grain_putmem(wg, dest, src, nbytes, pe, active);
    int valid = active && pe >= 0 && (grain_u32)pe < ctx->n_pes;
    grain_quiet_ranks_(wg, pe, valid && grain_bypass_heap_(ctx, GRAIN_CMD_PUT64, pe) == 0);
    /* The signal's lane releases what the barrier showed it of the others. */
    grain_heap_fence_release();
    int lead = valid && grain_local_linear_id() == 0 &&
               grain_signal_valid_(ctx, pe, grain_offset(wg, sig_addr), sig_op);
    grain_add64(wg, (GRAIN_GLOBAL grain_i64 *)sig_addr, (grain_i64)signal, pe, lead && sig_op == GRAIN_SIGNAL_ADD);
    grain_put64(wg, (GRAIN_GLOBAL grain_i64 *)sig_addr, (grain_i64)signal, pe, lead && sig_op == GRAIN_SIGNAL_SET);
}

/*
 * Bulk get, OpenSHMEM's getmem (NVSHMEM's getmem_block): from `src` (the
 * symmetric heap) on PE `pe` into `dest`, each word read as grain_get64/32
 * reads it, in rounds of the work-group's size (through the transport, a
 * request each and their replies).  grain_getmem stores into global memory
 * (the caller's heap or any buffer of the device), grain_getmem_local into
 * the work-group's local memory.  It returns once the whole block is
 * stored, visible to every lane of the work-group (it ends in a barrier).
 */
#define GRAIN_GETMEM_(name, SPACE)                                                                         \
    GRAIN_INLINE void name(const grain_wg_t *wg, SPACE void *dest, GRAIN_GLOBAL const void *src, grain_u64 nbytes, \
                           grain_i32 pe, int active)                                                       \
    {                                                                                                      \
        int wide;                                                                                          \
        grain_u64 words = grain_mem_words_(wg, (grain_u64)dest, (grain_u64)src, nbytes, 0, pe, active, &wide); \
        grain_u32 lid = grain_local_linear_id(), n = grain_local_linear_size();                            \
        for (grain_u64 base = 0; base < words; base += n) {                                                \
            grain_u64 i = base + lid;                                                                      \
            if (wide) {                                                                                    \
                grain_i64 v = grain_get64(wg, (GRAIN_GLOBAL grain_i64 *)src + i, pe, i < words);           \
                if (i < words)                                                                             \
                    ((SPACE grain_i64 *)dest)[i] = v;                                                      \
            } else {                                                                                       \
                grain_i32 v = grain_get32(wg, (GRAIN_GLOBAL grain_i32 *)src + i, pe, i < words);           \
                if (i < words)                                                                             \
                    ((SPACE grain_i32 *)dest)[i] = v;                                                      \
            }                                                                                              \
        }                                                                                                  \
        grain_wg_barrier();                                                                                \
    }
GRAIN_GETMEM_(grain_getmem, GRAIN_GLOBAL)
GRAIN_GETMEM_(grain_getmem_local, GRAIN_LOCAL)

/*
 * Gets that do not wait, OpenSHMEM's g and getmem with _nbi (NVSHMEM's
 * get_nbi and getmem_nbi_block): the word or block at `src` on PE `pe` is
 * stored into `dest`, which must be in this rank's symmetric heap, by the
 * time the work-group's next grain_quiet (or fence) returns, or the host's
 * grain_quiet or grain_barrier_all; until then `dest` may hold anything.
 * Where the word is in reach the lane copies it at once.  Through the
 * transport the lane sends a request (a fetch that names `dest` instead of
 * a reply slot) and goes on: the destination reads the word and sends it
 * back as a PUT, and its answer to a later quiet waits here until that PUT
 * is applied (GRAIN_CMD_REPLY_AFTER).  So a work-group keeps as many gets
 * in flight as it likes, and pays one round trip at its quiet.  A `dest`
 * outside the heap or misaligned is a device error, and nothing is read.
 */
#define GRAIN_GET_NBI_(bits, T)                                                                            \
    GRAIN_INLINE void grain_get##bits##_nbi(const grain_wg_t *wg, GRAIN_GLOBAL T *dest, GRAIN_GLOBAL const T *src, \
                                            grain_i32 pe, int active)                                      \
    {                                                                                                      \
        GRAIN_GLOBAL grain_dev_t *ctx = wg->ctx;                                                           \
        grain_u64 to = grain_offset(wg, (GRAIN_GLOBAL void *)dest), from = grain_offset(wg, (GRAIN_GLOBAL void *)src); \
        if (active && !grain_heap_word_(ctx, to, bits / 8)) {                                              \
            grain_dev_error(ctx, GRAIN_DEV_ERR_BAD_GET_DEST, bits / 8, pe, to, grain_global_linear_id());   \
            active = 0;                                                                                    \
        }                                                                                                  \
        int far = 0;                                                                                       \
        GRAIN_GLOBAL char *p = active ? grain_fetch_word_(ctx, bits / 8, from, pe, &far) : 0;              \
        if (p != 0)                                                                                        \
            *dest = (T)grain_apply_amo##bits(p, GRAIN_AMO_FETCH, 0, 0);                                    \
        grain_send_wide_(wg, GRAIN_CMD_FETCH##bits, 0, pe, from, 0, to, 0, GRAIN_TICKET(GRAIN_AMO_GET_NBI, 0, 0), far); \
    }
GRAIN_GET_NBI_(64, grain_i64)
GRAIN_GET_NBI_(32, grain_i32)

/* The bulk form: `nbytes` from `src` on PE `pe` into `dest` in this rank's
 * heap, every lane passing the same arguments, as grain_getmem splits it. */
GRAIN_INLINE void grain_getmem_nbi(const grain_wg_t *wg, GRAIN_GLOBAL void *dest, GRAIN_GLOBAL const void *src,
                                   grain_u64 nbytes, grain_i32 pe, int active)
{
    int wide;
    grain_u64 words = grain_mem_words_(wg, (grain_u64)dest, (grain_u64)src, nbytes, 0, pe, active, &wide);
    grain_u32 lid = grain_local_linear_id(), n = grain_local_linear_size();
    for (grain_u64 base = 0; base < words; base += n) {
        grain_u64 i = base + lid;
        if (wide)
            grain_get64_nbi(wg, (GRAIN_GLOBAL grain_i64 *)dest + i, (GRAIN_GLOBAL const grain_i64 *)src + i, pe,
                            i < words);
        else
            grain_get32_nbi(wg, (GRAIN_GLOBAL grain_i32 *)dest + i, (GRAIN_GLOBAL const grain_i32 *)src + i, pe,
                            i < words);
    }
}

/* Active message: run registered handler `handler` on PE `pe` with a0, a1. */
GRAIN_INLINE void grain_am(const grain_wg_t *wg, grain_u32 handler, grain_u64 a0, grain_u64 a1,
                           grain_i32 pe, int active)
{
    grain_send_(wg, GRAIN_CMD_AM, handler, pe, a0, a1, active);
}

#include "grain/device/combine.h"
#include "grain/device/sync.h"
#include "grain/device/chunks.h"
#include "grain/device/runtime_kernels.h"

#endif /* !GRAIN_DIALECT_HOST */

#endif /* GRAIN_DEVICE_H */
