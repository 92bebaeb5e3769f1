/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Applying one PUT, add or increment to this rank's symmetric heap: the same
 * code for host threads (received buffers on shared-memory devices), for the
 * runtime's apply kernel (received buffers on discrete GPUs) and for a
 * producer that applies its own rank's messages in place.
 *
 * Every store and add is atomic and relaxed: concurrent appliers of one rank
 * may hit the same word, and quiet orders them for readers.  Active messages
 * are not applied here: their handlers are the host's functions or the
 * registered program's (grain/device/runtime_kernels.h).
 */
#ifndef GRAIN_DEVICE_APPLY_H
#define GRAIN_DEVICE_APPLY_H

#include "grain/device/ctx.h"

/* The runtime's apply kernel (grain_apply_wire) decodes a tile of
 * GRAIN_APPLY_TILE_WORDS(local size) words of a received buffer per
 * work-group; the local size is at most GRAIN_APPLY_WG and a multiple of 8,
 * so that a tile's bits in the bitmap of message starts are whole words. */
#define GRAIN_APPLY_WG 256u
#define GRAIN_APPLY_WORDS_PER_ITEM 4u
#define GRAIN_APPLY_TILE_WORDS(wg) (GRAIN_APPLY_WORDS_PER_ITEM * (wg))
/* The words after a tile that a message starting in it may reach: a run's
 * (GRAIN_RUN_WORDS_MAX, below, less its first). */
#define GRAIN_APPLY_LOOKAHEAD 24u

/* A stage, one received buffer in shared memory, in 64-bit words: a header
 * (the buffer's data words, the sending PE above bit 32), room for a full
 * buffer's `data_words`, the bitmap of message starts (a bit a data word),
 * and the list of stages (32-bit indices) that a launch applies, written
 * into its first stage. */
#define GRAIN_APPLY_STAGE_HDR(words, src_pe) ((grain_u64)(words) | (grain_u64)(src_pe) << 32)
#define GRAIN_APPLY_MARKS_AT(data_words) (1u + (data_words))
#define GRAIN_APPLY_LIST_AT(data_words) (GRAIN_APPLY_MARKS_AT(data_words) + ((data_words) + 63u) / 64u)

/* The resident apply agent's ring, 64-bit words in shared memory: two
 * control words (one a launch of the agent, by its parity: 0 while it runs,
 * GRAIN_APPLY_RING_STOP | t once it is to apply no ticket from t on), a
 * post word an entry (the ticket plus one above bit 32, its stage below),
 * then a 32-bit done word an entry (the ticket plus one, once applied).
 * Ticket t uses entry t % slots. */
#define GRAIN_APPLY_RING_STOP (1ull << 32)
#define GRAIN_APPLY_RING_POST 2u
#define GRAIN_APPLY_RING_DONE(slots) (GRAIN_APPLY_RING_POST + (slots))
#define GRAIN_APPLY_RING_WORDS(slots) (GRAIN_APPLY_RING_DONE(slots) + ((slots) + 1u) / 2u)
#define GRAIN_APPLY_RING_NONE (~(grain_u64)0) /* no post word is all ones */
/* The ring's mirror in device memory, which the agent's applying
 * work-groups poll instead of the ring: a copy of each post word, then a
 * stop word (the launch's number above bit 32, the stop ticket below). */
#define GRAIN_APPLY_MIRROR_WORDS(slots) ((slots) + 1u)

/* `offset` was checked against the heap by the sender and the receiver. */
GRAIN_INLINE void grain_apply_msg(GRAIN_GLOBAL char *heap, grain_u32 cmd, grain_u64 offset, grain_u64 value)
{
    GRAIN_GLOBAL char *p = heap + offset;
    switch (cmd) {
    case GRAIN_CMD_PUT32:
        grain_heap_store_u32(p, (grain_u32)value);
        break;
    case GRAIN_CMD_PUT64:
        grain_heap_store_u64(p, value);
        break;
    case GRAIN_CMD_ADD32:
        grain_heap_add_u32(p, (grain_u32)value);
        break;
    case GRAIN_CMD_ADD64:
        grain_heap_add_u64(p, value);
        break;
    case GRAIN_CMD_INC32:
        grain_heap_add_u32(p, 1u);
        break;
    case GRAIN_CMD_INC64:
        grain_heap_add_u64(p, 1u);
        break;
    default:
        break;
    }
}

/*
 * A run (GRAIN_CMD_RUN): 2 to GRAIN_RUN_MAX PUTs, adds or increments of one
 * command whose heap offsets agree above bit 32, as an aggregator packs what
 * a work-group sends to one rank.  Word 0 is GRAIN_CMD_RUN | command << 8 |
 * (count - 1) << 16 | narrow << 24 | the offsets above bit 32; then the
 * offsets' low 32 bits, two a word (entry 2k in the low half), then the
 * values: none for increments, two a word for 32-bit commands and for 64-bit
 * ones whose values all fit 32 bits signed (narrow: sign-extended), else a
 * word each.  An increment then takes 4.5 wire bytes instead of 8 and an add
 * of a small value 8.5 instead of 16: fewer bytes a message raise messages a
 * second on every wire, and runs of one command are what aggregators see.
 */
#define GRAIN_RUN_MAX 16u
#define GRAIN_RUN_HDR(cmd, count, narrow, hi)                                                        \
    ((grain_u64)GRAIN_CMD_RUN | (grain_u64)(cmd) << 8 | (grain_u64)((count) - 1u) << 16 |           \
     (grain_u64)(narrow) << 24 | (grain_u64)(hi) << 32)
#define GRAIN_RUN_CMD(w0) ((grain_u32)(((w0) >> 8) & 0xffu))
#define GRAIN_RUN_COUNT(w0) ((grain_u32)(((w0) >> 16) & 0xffu) + 1u)
#define GRAIN_RUN_NARROW(w0) ((grain_u32)(((w0) >> 24) & 1u))
#define GRAIN_RUN_RESERVED(w0) ((grain_u32)(((w0) >> 25) & 0x7fu)) /* zero */
#define GRAIN_RUN_WORDS_MAX (1u + GRAIN_RUN_MAX / 2u + GRAIN_RUN_MAX) /* GRAIN_APPLY_LOOKAHEAD + 1 */

/* Whether `cmd` travels in runs: a PUT, add or increment. */
GRAIN_INLINE grain_u32 grain_cmd_runs(grain_u32 cmd)
{
    return cmd - GRAIN_CMD_PUT32 <= GRAIN_CMD_INC64 - GRAIN_CMD_PUT32;
}

/* Whether a run of `cmd` keeps its values in 32 bits, two a word. */
GRAIN_INLINE grain_u32 grain_run_half_values(grain_u32 cmd, grain_u32 narrow)
{
    return narrow || grain_cmd_width(cmd) == 4u;
}

/* Offset words of a run of `count` entries, two offsets a word: the pairs
 * of entries that grain_apply_run_pair applies. */
GRAIN_INLINE grain_u32 grain_run_pairs(grain_u32 count) { return (count + 1u) / 2u; }

/* Words of a run of `count` entries, header included. */
GRAIN_INLINE grain_u32 grain_run_words(grain_u32 cmd, grain_u32 count, grain_u32 narrow)
{
    grain_u32 pairs = grain_run_pairs(count);
    grain_u32 values = grain_cmd_valueless(cmd)             ? 0u
                       : grain_run_half_values(cmd, narrow) ? pairs
                                                            : count;
    return 1u + pairs + values;
}

/* Applies entries 2q and 2q + 1 (those below its count) of the run whose
 * words start at `w` (checked by the receiver): the pair whose offsets
 * share word 1 + q.  A work-item a pair is how the apply kernels spread a
 * run over their work-items (grain/device/runtime_kernels.h). */
GRAIN_INLINE void grain_apply_run_pair(GRAIN_GLOBAL char *heap, GRAIN_LOCAL const grain_u64 *w, grain_u32 q)
{
    grain_u64 w0 = w[0];
    grain_u32 cmd = GRAIN_RUN_CMD(w0), n = GRAIN_RUN_COUNT(w0);
    grain_u32 inc = grain_cmd_valueless(cmd);
    grain_u32 paired = grain_run_half_values(cmd, GRAIN_RUN_NARROW(w0));
    grain_u64 hi = w0 >> 32 << 32;
    GRAIN_LOCAL const grain_u64 *values = w + 1u + grain_run_pairs(n);
    for (grain_u32 i = 2u * q; i < 2u * q + 2u && i < n; i++) {
        grain_u32 shift = (i & 1u) * 32u;
        grain_u64 offset = hi | ((w[1u + q] >> shift) & 0xffffffffu);
        grain_u64 value = inc      ? 0u
                          : paired ? (grain_u64)(grain_i64)(grain_i32)(grain_u32)(values[q] >> shift)
                                   : values[i];
        grain_apply_msg(heap, cmd, offset, value);
    }
}

/* Applies the run whose words start at `w` (checked by the receiver). */
GRAIN_INLINE void grain_apply_run(GRAIN_GLOBAL char *heap, GRAIN_LOCAL const grain_u64 *w)
{
    for (grain_u32 q = 0; q < grain_run_pairs(GRAIN_RUN_COUNT(w[0])); q++)
        grain_apply_run_pair(heap, w, q);
}

/* A PUT and its signal (GRAIN_CMD_PUT64_SIGNAL), in that order for any
 * reader that acquires the signal: one work-item, or one host thread,
 * applies both, with a release between.  `sig` is the signal word on the
 * wire: the operation in its low 8 bits, the word's offset above. */
GRAIN_INLINE void grain_apply_put_signal(GRAIN_GLOBAL char *heap, grain_u64 offset, grain_u64 value, grain_u64 sig,
                                         grain_u64 sig_value)
{
    grain_heap_store_u64(heap + offset, value);
    grain_heap_fence_release();
    GRAIN_GLOBAL char *s = heap + (sig >> 8);
    if ((sig & 0xffu) == GRAIN_SIGNAL_ADD)
        grain_heap_add_u64(s, sig_value);
    else
        grain_heap_store_u64(s, sig_value);
}

/* Fetching atomics and gets (grain/device.h): the operation on a 32- or
 * 64-bit heap word, its operand, and the value compare-and-swap compares
 * with; the old value comes back. */
#define GRAIN_AMO_FETCH 0u
#define GRAIN_AMO_ADD 1u
#define GRAIN_AMO_SWAP 2u
#define GRAIN_AMO_CSWAP 3u
#define GRAIN_AMO_AND 4u
#define GRAIN_AMO_OR 5u
#define GRAIN_AMO_XOR 6u
/* A get that does not wait (grain_get64_nbi): read as GRAIN_AMO_FETCH; the
 * value goes back as a PUT into the requester's heap at the offset the
 * request carries in place of the value compared. */
#define GRAIN_AMO_GET_NBI 7u

#define GRAIN_APPLY_AMO_(bits)                                                                              \
    GRAIN_INLINE grain_u##bits grain_apply_amo##bits(GRAIN_GLOBAL char *p, grain_u32 op, grain_u##bits value,     \
                                                     grain_u##bits cond)                                      \
    {                                                                                                       \
        switch (op) {                                                                                       \
        case GRAIN_AMO_ADD:                                                                                 \
            return grain_heap_rmw_u##bits(fetch_add, p, value);                                             \
        case GRAIN_AMO_SWAP:                                                                                \
            return grain_heap_rmw_u##bits(exchange, p, value);                                              \
        case GRAIN_AMO_CSWAP:                                                                               \
            return grain_heap_cas_u##bits(p, cond, value);                                                  \
        case GRAIN_AMO_AND:                                                                                 \
            return grain_heap_rmw_u##bits(fetch_and, p, value);                                             \
        case GRAIN_AMO_OR:                                                                                  \
            return grain_heap_rmw_u##bits(fetch_or, p, value);                                              \
        case GRAIN_AMO_XOR:                                                                                 \
            return grain_heap_rmw_u##bits(fetch_xor, p, value);                                             \
        default:                                                                                            \
            return grain_heap_load_u##bits(p);                                                              \
        }                                                                                                   \
    }
GRAIN_APPLY_AMO_(32)
GRAIN_APPLY_AMO_(64)

#endif /* GRAIN_DEVICE_APPLY_H */
