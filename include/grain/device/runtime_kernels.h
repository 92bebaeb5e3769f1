/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Kernels the runtime launches, compiled into every program so that they see
 * the program's active-message handlers (GRAIN_AM_HANDLERS):
 *
 *   grain_apply_wire  applies received buffers as they came off the wire
 *                     on devices whose heap the host cannot apply to, and
 *                     active messages for device handlers;
 *   grain_apply_agent the same, resident beside the producers;
 *   grain_am_census   tells grain_am_register_program which handler ids the
 *                     program defines;
 *   grain_chunk_agent the device transfer agent of counter-triggered
 *                     transfers (grain/device/chunks.h).
 */
#ifndef GRAIN_DEVICE_RUNTIME_KERNELS_H
#define GRAIN_DEVICE_RUNTIME_KERNELS_H

/*
 * Work-group-wide: applies data words [base, base + span) of a stage
 * (grain/device/apply.h), span = GRAIN_APPLY_TILE_WORDS(local size), with
 * the bitmap of the words that start a message left to it
 * (grain_wire_validate): the tile and its bits are read once, in wide
 * coalesced loads over the host link, into local memory, with the
 * GRAIN_APPLY_LOOKAHEAD words after it, where a message that starts in the
 * tile may end (a run is the longest); then each work-item applies the
 * messages that start at its words, except runs: the work-item of a run's
 * first word hands each of its offset words to the work-item that holds
 * it (`owner`), which applies the pair of entries whose offsets it holds.
 * A run of 16 increments takes 9 words, so that one work-item a run left 8
 * of every 9 idle while it made 16 atomic adds in turn.  The caller makes
 * sure base is below the stage's words, and that nobody still reads `tile`,
 * `bits` and `owner` from an earlier call.
 */
#define GRAIN_APPLY_NO_RUN 0xffffffffu

GRAIN_INLINE void grain_apply_tile_(GRAIN_GLOBAL char *heap, GRAIN_GLOBAL grain_u64 *stage, grain_u64 data_words,
                                    grain_u64 base, GRAIN_LOCAL grain_u64 *tile, GRAIN_LOCAL grain_u32 *bits,
                                    GRAIN_LOCAL grain_u32 *owner)
{
    grain_u32 lid = (grain_u32)grain_local_linear_id(), wg = (grain_u32)grain_local_linear_size();
    grain_u32 span = GRAIN_APPLY_TILE_WORDS(wg);
    grain_u64 hdr = stage[0], n_words = hdr & 0xffffffffu;
    grain_u32 src_pe = (grain_u32)(hdr >> 32);
    GRAIN_GLOBAL grain_u64 *words = stage + 1;
    GRAIN_GLOBAL const grain_u32 *marks = (GRAIN_GLOBAL const grain_u32 *)(stage + GRAIN_APPLY_MARKS_AT(data_words));
    grain_u32 have = n_words - base < span + GRAIN_APPLY_LOOKAHEAD ? (grain_u32)(n_words - base)
                                                                   : span + GRAIN_APPLY_LOOKAHEAD;
    for (grain_u32 j = lid; j < have; j += wg) {
        tile[j] = words[base + j];
        owner[j] = GRAIN_APPLY_NO_RUN;
    }
    for (grain_u32 j = lid; 32u * j < have && j < span / 32; j += wg)
        bits[j] = marks[base / 32 + j];
    grain_wg_barrier();
    for (grain_u32 j = lid; j < span && j < have; j += wg) {
        if (((bits[j / 32] >> (j % 32)) & 1u) == 0)
            continue;
        grain_u64 w0 = tile[j];
        grain_u32 cmd = (grain_u32)(w0 & 0xffu);
        if (cmd < GRAIN_CMD_AM) /* an increment, the buffer's last word, has no value word */
            grain_apply_msg(heap, cmd, w0 >> 8, grain_cmd_valueless(cmd) ? 0 : tile[j + 1]);
        else if (cmd == GRAIN_CMD_AM)
            grain_am_dispatch_((grain_u32)(w0 >> 8), heap, src_pe, tile[j + 1], tile[j + 2]);
        else if (cmd == GRAIN_CMD_RUN) {
            for (grain_u32 q = 0; q < grain_run_pairs(GRAIN_RUN_COUNT(w0)); q++)
                owner[j + 1u + q] = j;
        } else if (cmd == GRAIN_CMD_PUT64_SIGNAL)
            grain_apply_put_signal(heap, w0 >> 8, tile[j + 1], tile[j + 2], tile[j + 3]);
        else /* a fetch: its old value replaces its operand, where the host reads it for the reply */
            words[base + j + 1] = cmd == GRAIN_CMD_FETCH64
                                      ? grain_apply_amo64(heap + (w0 >> 8), GRAIN_TICKET_OP(tile[j + 3]), tile[j + 1],
                                                          tile[j + 2])
                                      : grain_apply_amo32(heap + (w0 >> 8), GRAIN_TICKET_OP(tile[j + 3]),
                                                          (grain_u32)tile[j + 1], (grain_u32)tile[j + 2]);
    }
    grain_wg_barrier();
    for (grain_u32 j = lid; j < have; j += wg)
        if (owner[j] != GRAIN_APPLY_NO_RUN)
            grain_apply_run_pair(heap, tile + owner[j], j - owner[j] - 1u);
}

/* Applies the stages that the list in stage `list_in` names, `tiles`
 * work-groups a stage, a tile each. */
GRAIN_KERNEL void grain_apply_wire(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_u64 *block, grain_u64 stride,
                                   grain_u64 data_words, grain_u32 tiles, grain_u32 list_in)
{
    GRAIN_LOCAL_DECL grain_u64 tile[GRAIN_APPLY_TILE_WORDS(GRAIN_APPLY_WG) + GRAIN_APPLY_LOOKAHEAD];
    GRAIN_LOCAL_DECL grain_u32 bits[GRAIN_APPLY_TILE_WORDS(GRAIN_APPLY_WG) / 32];
    GRAIN_LOCAL_DECL grain_u32 owner[GRAIN_APPLY_TILE_WORDS(GRAIN_APPLY_WG) + GRAIN_APPLY_LOOKAHEAD];
    grain_u64 group = grain_group_linear_id();
    GRAIN_GLOBAL const grain_u32 *list =
        (GRAIN_GLOBAL const grain_u32 *)(block + list_in * stride + GRAIN_APPLY_LIST_AT(data_words));
    GRAIN_GLOBAL grain_u64 *stage = block + (grain_u64)list[group / tiles] * stride;
    grain_u64 base = (group % tiles) * GRAIN_APPLY_TILE_WORDS(grain_local_linear_size());
    if (base >= (stage[0] & 0xffffffffu))
        return; /* the whole work-group: a short buffer */
    grain_apply_tile_(grain_ctx_->heap, stage, data_words, base, tile, bits, owner);
}

/*
 * The agent's relay, its last work-group: copies the ring's post words, in
 * ticket order, into the mirror in device memory, and once the launch's
 * control word stops it at a ticket it has reached (every earlier one
 * posted and copied), the stop, marked with the launch's number `gen`.
 * Only the relay polls host memory: 32 work-groups that each polled a word
 * of pinned host memory, even every 2 us, made the atomics of a kernel
 * beside them 17x slower on an H100 (70 -> 4 G/s); polling device memory
 * cost nothing (docs/receive-path.md).  Each round reads `span` entries at
 * once, a work-item each, and copies those up to the first not yet posted:
 * one read of host memory a ticket held the agent to a ticket a round trip
 * over a link busy with the producers' queue.  The span doubles while
 * every entry read was posted, and falls back to one while none is, so
 * that an idle relay reads one word a poll.  `round` holds two words.
 */
GRAIN_INLINE void grain_apply_relay_(GRAIN_GLOBAL grain_u64 *ring, GRAIN_GLOBAL grain_u64 *mirror, grain_u32 slots,
                                     grain_u32 first, grain_u32 ctl, grain_u32 gen, GRAIN_LOCAL grain_u32 *round)
{
    grain_u32 lid = (grain_u32)grain_local_linear_id(), wg = (grain_u32)grain_local_linear_size();
    for (grain_u32 t = first, span = 1;;) {
        if (lid == 0) {
            round[0] = span; /* the first entry not posted */
            round[1] = 0;    /* stopped */
        }
        grain_wg_barrier();
        grain_u64 post = 0;
        if (lid < span) {
            post = grain_atomic_load_relaxed_u64(&ring[GRAIN_APPLY_RING_POST + (t + lid) % slots]);
            if ((grain_u32)(post >> 32) != t + lid + 1u)
                grain_local_min_u32(&round[0], lid);
        }
        grain_wg_barrier();
        grain_u32 n = round[0];
        if (lid < n) {
            grain_fence_acquire(); /* the stage's words, then the mirror's release passes them on */
            grain_atomic_store_release_dev_u64(&mirror[(t + lid) % slots], post);
        }
        t += n;
        span = n == 0 ? 1u : 2u * n < wg ? 2u * n : wg;
        if (n == 0 && lid == 0) {
            grain_u64 c = grain_atomic_load_relaxed_u64(&ring[ctl]);
            if ((c >> 32) != 0 && t - (grain_u32)c < 0x80000000u) {
                grain_fence_acquire();
                grain_atomic_store_release_dev_u64(&mirror[slots], (grain_u64)gen << 32 | (grain_u32)c);
                round[1] = 1;
            } else {
                grain_poll_nap();
            }
        }
        grain_wg_barrier();
        if (round[1])
            return;
    }
}

/* Polls of a ticket's mirror entry between two of the stop word, which
 * every applying work-group would otherwise poll together (a stop is
 * seen at most this many naps late). */
#define GRAIN_APPLY_STOP_POLLS 64u

/*
 * The resident apply agent (runtime/messages/apply.c): launched before a producer,
 * so that its work-groups hold their compute units while the producer's
 * fill the rest, it applies the stages the host posts to its ring
 * (grain/device/apply.h) as they come.  Its last work-group relays the
 * ring into the mirror; work-group w of the other G applies the tickets
 * first + w, first + w + G, ...: it waits until the ticket's mirrored post
 * word names its stage, applies the stage tile by tile, and stores the
 * ticket into the entry's done word, which frees the stage for the host.
 * It returns at the first ticket that the launch's stop (relayed from its
 * control word `ctl`, one a launch, so that the next launch may wait behind
 * a stopping one) stops it at; the host posts every ticket before the
 * stop.  `gen` numbers the launch, so that no launch takes an earlier
 * one's stop.
 */
GRAIN_KERNEL void grain_apply_agent(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_u64 *block, grain_u64 stride,
                                    grain_u64 data_words, GRAIN_GLOBAL grain_u64 *ring, grain_u32 slots,
                                    grain_u32 first, grain_u32 ctl, GRAIN_GLOBAL grain_u64 *mirror, grain_u32 gen)
{
    GRAIN_LOCAL_DECL grain_u64 tile[GRAIN_APPLY_TILE_WORDS(GRAIN_APPLY_WG) + GRAIN_APPLY_LOOKAHEAD];
    GRAIN_LOCAL_DECL grain_u32 bits[GRAIN_APPLY_TILE_WORDS(GRAIN_APPLY_WG) / 32];
    GRAIN_LOCAL_DECL grain_u32 owner[GRAIN_APPLY_TILE_WORDS(GRAIN_APPLY_WG) + GRAIN_APPLY_LOOKAHEAD];
    GRAIN_LOCAL_DECL grain_u64 posted[1];
    GRAIN_LOCAL_DECL grain_u32 relay[2];
    GRAIN_GLOBAL grain_u32 *done = (GRAIN_GLOBAL grain_u32 *)(ring + GRAIN_APPLY_RING_DONE(slots));
    grain_u32 lid = (grain_u32)grain_local_linear_id();
    grain_u32 span = GRAIN_APPLY_TILE_WORDS(grain_local_linear_size());
    grain_u32 groups = (grain_u32)grain_group_linear_count() - 1u, w = (grain_u32)grain_group_linear_id();
    if (w == groups) { /* the whole work-group: no barrier below is reached */
        grain_apply_relay_(ring, mirror, slots, first, ctl, gen, relay);
        return;
    }
    for (grain_u32 t = first + w;; t += groups) {
        if (lid == 0) {
            grain_u64 p = GRAIN_APPLY_RING_NONE;
            for (grain_u32 polls = 1;; polls++) {
                grain_u64 post = grain_atomic_load_relaxed_dev_u64(&mirror[t % slots]);
                if ((grain_u32)(post >> 32) == t + 1u) {
                    p = post;
                    break;
                }
                if (polls % GRAIN_APPLY_STOP_POLLS == 0) {
                    grain_u64 stop = grain_atomic_load_relaxed_dev_u64(&mirror[slots]);
                    if ((grain_u32)(stop >> 32) == gen && t - (grain_u32)stop < 0x80000000u)
                        break; /* t is at or past the stop */
                }
                grain_poll_nap();
            }
            grain_fence_acquire_dev();
            posted[0] = p;
        }
        grain_wg_barrier();
        grain_u64 p = posted[0];
        if (p == GRAIN_APPLY_RING_NONE)
            return;
        GRAIN_GLOBAL grain_u64 *stage = block + (p & 0xffffffffu) * stride;
        grain_u64 n_words = stage[0] & 0xffffffffu;
        for (grain_u64 base = 0; base < n_words; base += span) {
            grain_apply_tile_(grain_ctx_->heap, stage, data_words, base, tile, bits, owner);
            grain_wg_barrier(); /* before the next tile overwrites what others read */
        }
        if (lid == 0)
            grain_atomic_store_release_u32(&done[t % slots], t + 1u);
    }
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
                if (moved[c] != generation && grain_atomic_load_relaxed_dev_u32(&r->ready[c]) == generation)
                    found = c;
            if (found != GRAIN_AGENT_NONE_)
                grain_fence_acquire_dev(); /* the chunk's writers, whose last released the ready word */
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
