/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-destination buffers of one aggregator thread (docs/design.md, send path 4).
 *
 * Messages are packed into the buffer currently filling for their
 * destination; a buffer goes to the transport when the next message would not
 * fit (full), when its first message is older than the flush timeout
 * (timeout), or on request (quiet).  A destination has a fixed number of
 * buffers: when all are in flight, append waits for the transport to return
 * one, which is how back-pressure reaches the device queue.
 *
 * One thread owns a packer; only grain_packer_release() is called from
 * another thread (the transport's, when a send completes).
 */
#ifndef GRAIN_RUNTIME_MESSAGES_PACKER_H
#define GRAIN_RUNTIME_MESSAGES_PACKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "grain/grain.h"
#include "transports/transport.h"
#include "transports/wire.h"

typedef enum grain_flush_cause {
    GRAIN_FLUSH_FULL = 0,
    GRAIN_FLUSH_TIMEOUT = 1,
    GRAIN_FLUSH_QUIET = 2,
    GRAIN_FLUSH_SCOPE = 3, /* the end of what GRAIN_AGGREGATION lets a buffer combine */
    GRAIN_FLUSH_CAUSES = 4,
} grain_flush_cause_t;

typedef struct grain_outbuf {
    grain_send_token_t token;  /* the transport's handle: releases the buffer */
    struct grain_outbuf *next; /* in its destination's free list */
    struct grain_packer *owner;
    uint32_t dest;
    uint32_t count;
    size_t used; /* bytes, header included */
    uint64_t first_ns;
    uint8_t *data;
    /* The run of PUTs, adds or increments gathering at the end of the
     * buffer (grain/device/apply.h) from `run`, its offsets and values
     * where a full run keeps them (two stores a message, as a plain message
     * takes).  `used` and `count` leave it out; the buffer's memory has room
     * for the longest run past buf_size. */
    uint64_t run_key;    /* the offsets above bit 32 | command; GRAIN_RUN_NO_KEY: none */
    uint32_t run_n;
    uint32_t run_cap;    /* entries that still leave room for any message after the run */
    uint32_t run_values; /* GRAIN_VALUES_NONE, _HALF, _NARROW or _WIDE */
    uint32_t run_shift;  /* log2 of the bytes a gathered value takes: 3 if wide, else 2 */
    uint64_t run_limit;  /* the largest value + 2^31 it keeps as it is: GRAIN_RUN_NARROW_LIMIT if narrow */
    uint8_t *run;
} grain_outbuf_t;

/* Hands a flushed buffer (data, used bytes) to the transport; the transport
 * calls grain_packer_release() once it no longer needs it. */
typedef void (*grain_packer_send_fn)(void *arg, grain_outbuf_t *buf);

typedef struct grain_packer_stats {
    uint64_t buffers;                     /* buffers sent */
    uint64_t bytes;                       /* wire bytes sent, headers included */
    uint64_t msgs;
    uint64_t flushes[GRAIN_FLUSH_CAUSES];
    uint64_t buffer_waits;                /* appends that waited for a free buffer */
    uint64_t wait_ns;                     /* ... and how long */
    uint64_t send_ns;                     /* in the send function: the transport's, with MPI_Isend */
} grain_packer_stats_t;

typedef struct grain_packer {
    uint32_t my_pe;
    uint32_t n_dest;
    size_t buf_size;
    uint64_t timeout_ns;
    grain_packer_send_fn send;
    void *send_arg;
    grain_outbuf_t **filling;  /* per destination, NULL when none */
    grain_outbuf_t **free;     /* per destination free lists, under lock */
    _Atomic uint64_t *next_seq; /* per destination, shared by a rank's aggregators */
    pthread_mutex_t *send_order; /* per destination, shared too, or NULL: held from numbering to sending */
    uint64_t *dest_msgs;       /* per destination messages handed to the transport */
    uint64_t *dest_bytes;
    _Atomic uint32_t *in_flight; /* per destination buffers sent and not yet released */
    grain_outbuf_t *all;       /* n_dest * per_dest buffers */
    uint8_t *memory;
    uint32_t n_filling;        /* destinations with a filling buffer */
    pthread_mutex_t lock;
    pthread_cond_t returned;
    /* Set once a rank failed (NULL: never): a destination whose buffers
     * are all in flight then gets no buffer, as they may never return. */
    const atomic_int *abandon;
    grain_packer_stats_t stats;
} grain_packer_t;

/* `next_seq` (n_dest counters) numbers the buffers to each destination; the
 * aggregators of one rank share it so that the receiver sees their order.
 * `send_order` (n_dest locks, or NULL where the transport restores the
 * order) makes numbering and sending one step. */
grain_status_t grain_packer_init(grain_packer_t *p, uint32_t my_pe, uint32_t n_dest,
                                 size_t buf_size, uint32_t per_dest, uint64_t timeout_ns,
                                 _Atomic uint64_t *next_seq, pthread_mutex_t *send_order,
                                 grain_packer_send_fn send, void *send_arg);
void grain_packer_destroy(grain_packer_t *p);

/* The slow paths of append: a destination's next buffer (waiting for one
 * when all are in flight; NULL once `abandon` is set), and sending a full
 * one. */
grain_outbuf_t *grain_packer_open_(grain_packer_t *p, uint32_t dest, uint64_t now_ns);
void grain_packer_flush_full_(grain_packer_t *p, uint32_t dest);

/* The per-message path, inlined into the aggregators' slot loop whatever
 * the compiler's size limits (docs/receive-path.md, "Runs"). */
#define GRAIN_PACKER_INLINE static inline __attribute__((always_inline))

/* How a run keeps its values: none (increments), 32 bits (32-bit
 * commands; 64-bit ones while each fits, sign-extended: narrow), 64 bits.
 * A gathering run keeps them where its final layout has them once it holds
 * GRAIN_RUN_MAX, after that many offsets, so that a full run ends with its
 * header alone. */
#define GRAIN_VALUES_NONE 0u
#define GRAIN_VALUES_HALF 1u
#define GRAIN_VALUES_NARROW 2u
#define GRAIN_VALUES_WIDE 3u
#define GRAIN_RUN_NO_KEY (~(uint64_t)0)
#define GRAIN_RUN_VALUES_AT (8u + 4u * GRAIN_RUN_MAX)
#define GRAIN_RUN_SCRATCH (GRAIN_RUN_VALUES_AT + 8u * GRAIN_RUN_MAX) /* the longest run */

/* Whether a 64-bit value, shifted by 2^31, is above `limit`.  The 32-bit
 * signed values, sign-extended, are those up to GRAIN_RUN_NARROW_LIMIT: a
 * narrow run keeps that limit, the others keep UINT64_MAX. */
#define GRAIN_RUN_NARROW_LIMIT ((uint64_t)UINT32_MAX)
static inline int grain_run_above(uint64_t v, uint64_t limit)
{
    return v + 0x80000000u > limit;
}

/* Whether a 64-bit value is no 32-bit signed value, sign-extended. */
static inline int grain_run_wide_value(uint64_t v)
{
    return grain_run_above(v, GRAIN_RUN_NARROW_LIMIT);
}

/* How a run of `cmd` that starts with value `v` keeps its values. */
static inline uint32_t grain_run_values(uint32_t cmd, uint64_t v)
{
    if (grain_cmd_valueless(cmd))
        return GRAIN_VALUES_NONE;
    if (grain_cmd_width(cmd) == 4)
        return GRAIN_VALUES_HALF;
    return grain_run_wide_value(v) ? GRAIN_VALUES_WIDE : GRAIN_VALUES_NARROW;
}

/* The slow paths of a run, taken once a run rather than once a message: a
 * start, which ends the run before it and counts the room left where it is
 * short; an end, which writes the run's header word (a run that ends short
 * first moves its values down after its offsets) and sends the buffer once
 * the largest message no longer fits; and a value too wide for a narrow run,
 * which widens it (or ends it and starts the next where the buffer has no
 * room for the wider run).  After a run ends, a message always fits. */
void grain_outbuf_start_run(grain_packer_t *p, grain_outbuf_t *b, uint32_t cmd, uint64_t hi, uint32_t values);
void grain_outbuf_end_run(grain_outbuf_t *b);
void grain_outbuf_widen_run(grain_packer_t *p, grain_outbuf_t *b);
void grain_packer_run_ends_(grain_packer_t *p, grain_outbuf_t *b);

/* Gathers `m` messages into a run from entry `k` on, where every one
 * shares the run's `key` and keeps to its values' width (all of GUPS'
 * increments, which have no values, and nearly all of pagerank's adds):
 * their offsets' low halves and their values in one copy each, which the
 * compiler makes several at a time.  Returns 0, having gathered nothing,
 * where one does not; the per-message loop then finds which. */
GRAIN_PACKER_INLINE int grain_run_fill(uint8_t *run, uint32_t k, const uint64_t *offsets, const uint64_t *values,
                                       size_t m, int valueless, uint32_t shift, uint64_t key, uint64_t limit)
{
    const uint64_t hi_bits = ~(uint64_t)UINT32_MAX;
    uint64_t other = 0;
    for (size_t j = 0; j < m; j++)
        other |= (offsets[j] & hi_bits) ^ (key & hi_bits);
    /* A narrow run's bound, grain_run_above's, as bits above 32 (which the
     * compiler adds and shifts several at a time); any other run has none. */
    _Static_assert(GRAIN_RUN_NARROW_LIMIT == UINT32_MAX, "narrow: the high half of v + 2^31 is 0");
    if (!valueless && limit == GRAIN_RUN_NARROW_LIMIT)
        for (size_t j = 0; j < m; j++)
            other |= (values[j] + 0x80000000u) >> 32;
    if (other != 0)
        return 0;
    for (size_t j = 0; j < m; j++) {
        uint32_t lo = (uint32_t)offsets[j];
        memcpy(run + 8 + 4 * (k + j), &lo, 4);
    }
    uint8_t *gathered = run + GRAIN_RUN_VALUES_AT;
    if (!valueless && shift == 3)
        memcpy(gathered + 8 * (size_t)k, values, 8 * m);
    else if (!valueless)
        for (size_t j = 0; j < m; j++) {
            uint32_t v32 = (uint32_t)values[j];
            memcpy(gathered + 4 * (k + j), &v32, 4);
        }
    return 1;
}

/* Appends `n` PUTs, adds or increments of `cmd` for `dest`, at offsets[i]
 * with values[i] (none read for increments): the aggregators' short path,
 * for a stretch of a slot whose messages share a destination and a
 * command.  This is the aggregators' work per message, so it does only what
 * every message needs:
 * its run's key, its two stores and the run's length, which stay in
 * registers while messages join the run (kept in the buffer, they made a
 * chain of stores and loads from one message to the next); the rest waits
 * for the run's end.  Stops before an offset the wire cannot carry and
 * returns how many it appended (n: all); `*lost` counts those dropped as
 * the job ends (`abandon`). */
GRAIN_PACKER_INLINE size_t grain_packer_append_stretch(grain_packer_t *p, uint32_t dest, uint32_t cmd,
                                                       const uint64_t *offsets, const uint64_t *values, size_t n,
                                                       uint64_t now_ns, uint64_t *lost)
{
    /* A run's offsets share their bits from 32 up, and the wire's largest
     * offset has every bit below those: an offset that matches a run's key
     * fits the wire as the run's first did. */
    _Static_assert((GRAIN_WIRE_MAX_OFFSET & UINT32_MAX) == UINT32_MAX, "an offset's key bounds it");
    const uint64_t hi_bits = ~(uint64_t)UINT32_MAX;
    /* An increment's value was never written (grain_cmd_valueless). */
    const int valueless = grain_cmd_valueless(cmd);
    size_t i = 0;
    while (i < n) {
        grain_outbuf_t *b = p->filling[dest];
        if (b == NULL && (b = grain_packer_open_(p, dest, now_ns)) == NULL) {
            *lost += n - i;
            return n;
        }
        uint64_t w1 = offsets[i], v = valueless ? 0 : values[i];
        if (__builtin_expect(((w1 & hi_bits) | cmd) != b->run_key, 0)) {
            if (w1 > GRAIN_WIRE_MAX_OFFSET)
                return i;
            grain_outbuf_start_run(p, b, cmd, w1 >> 32, grain_run_values(cmd, v));
        } else if (__builtin_expect(grain_run_above(v, b->run_limit), 0)) {
            grain_outbuf_widen_run(p, b);
        }
        uint8_t *run = b->run;
        uint64_t key = b->run_key, limit = b->run_limit;
        uint32_t k = b->run_n, cap = b->run_cap, shift = b->run_shift;
        /* A run's whole room at once where it can (grain_run_fill); a
         * message alone (destinations that alternate: n is 1) takes the
         * loop below, which costs it less, and so does a room whose last
         * offset has another key (random offsets into a heap past 4 GiB,
         * where a scan of the room would fail at nearly every message).
         * A fresh run's room is usually GRAIN_RUN_MAX, a count the compiler
         * unrolls. */
        size_t m = cap - k < n - i ? cap - k : n - i;
        const uint64_t *vals = valueless ? NULL : values + i; /* an increment's may be NULL */
        if (m > 1 && ((offsets[i + m - 1] ^ key) & hi_bits) == 0 && (m == GRAIN_RUN_MAX
                          ? grain_run_fill(run, k, offsets + i, vals, GRAIN_RUN_MAX, valueless, shift, key, limit)
                          : grain_run_fill(run, k, offsets + i, vals, m, valueless, shift, key, limit))) {
            b->run_n = k += (uint32_t)m;
            i += m;
            if (k == cap)
                grain_packer_run_ends_(p, b);
            continue;
        }
        for (;;) {
            uint32_t lo = (uint32_t)w1;
            memcpy(run + 8 + 4 * k, &lo, 4);
            /* Eight bytes whatever the run keeps: the next entry, or what
             * follows the run, overwrites the upper half of a 32-bit value,
             * and nothing reads an increment's. */
            memcpy(run + GRAIN_RUN_VALUES_AT + ((size_t)k << shift), &v, 8);
            k++;
            i++;
            if (k == cap || i == n)
                break;
            w1 = offsets[i];
            v = valueless ? 0 : values[i];
            if (((w1 & hi_bits) | cmd) != key || grain_run_above(v, limit))
                break;
        }
        b->run_n = k;
        if (k == cap)
            grain_packer_run_ends_(p, b);
    }
    return n;
}

/* Appends the queue message (hdr, w1, w2) for destination `dest`, with a
 * PUT's signal word and value or a fetch's value compared and ticket
 * (grain_wire_encode); `now_ns` stamps a
 * buffer's first message.  Returns GRAIN_ERR_BAD_MESSAGE for a
 * message the wire cannot carry, GRAIN_ERR_PEER for one dropped as the job
 * ends (`abandon`).  Inline: once per message. */
GRAIN_PACKER_INLINE grain_status_t grain_packer_append(grain_packer_t *p, uint32_t dest, uint64_t hdr, uint64_t w1,
                                                       uint64_t w2, uint64_t sig, uint64_t sig_value, uint64_t now_ns)
{
    uint32_t cmd = GRAIN_HDR_CMD(hdr);
    if (grain_cmd_runs(cmd)) {
        uint64_t lost = 0;
        if (grain_packer_append_stretch(p, dest, cmd, &w1, &w2, 1, now_ns, &lost) == 0)
            return GRAIN_ERR_BAD_MESSAGE;
        return lost != 0 ? GRAIN_ERR_PEER : GRAIN_OK;
    }
    grain_outbuf_t *b = p->filling[dest];
    if (b == NULL && (b = grain_packer_open_(p, dest, now_ns)) == NULL)
        return GRAIN_ERR_PEER;
    if (b->run_n != 0)
        grain_outbuf_end_run(b);
    size_t n = grain_wire_encode(b->data + b->used, hdr, w1, w2, sig, sig_value);
    if (n == 0)
        return GRAIN_ERR_BAD_MESSAGE;
    b->used += n;
    b->count++;
    /* Send as soon as the largest message would no longer fit. */
    if (p->buf_size - b->used < GRAIN_WIRE_MAX_MSG)
        grain_packer_flush_full_(p, dest);
    return GRAIN_OK;
}
/* Whether an append for `dest` would find a buffer without waiting. */
int grain_packer_has_room(grain_packer_t *p, uint32_t dest);
/* Sends `dest`'s filling buffer, if it has one. */
void grain_packer_flush_dest(grain_packer_t *p, uint32_t dest, grain_flush_cause_t cause);
/* Sends every buffer whose first message is older than the timeout while
 * none of its destination's buffers is in flight, and any older than
 * GRAIN_FLUSH_PATIENCE timeouts (Nagle's rule, docs/receive-path.md). */
#define GRAIN_FLUSH_PATIENCE 8u
void grain_packer_flush_expired(grain_packer_t *p, uint64_t now_ns);
/* Sends every non-empty buffer. */
void grain_packer_flush_all(grain_packer_t *p, grain_flush_cause_t cause);
/* Returns a sent buffer to its destination's free list (any thread). */
void grain_packer_release(grain_outbuf_t *buf);

#endif
