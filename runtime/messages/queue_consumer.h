/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The consumer side of the queue (include/grain/device/queue.h), for host
 * threads: one reader per thread.
 *
 * Paper protocol: every reader claims tickets of the one ring with a
 * compare-and-swap on read_idx, taken only once a producer holds the ticket
 * (read < write), instead of the paper's blind fetch-add: a fetch-add past the
 * last reservation would leave a consumer waiting on a slot that no kernel
 * will ever fill, and shutdown would hang on it.  A claimed slot may not be
 * published yet; the reader waits for it.
 *
 * Ring protocol: reader i of n owns rings i, i + n, ...  and takes their
 * slots in ticket order, only once published, so it never waits on one
 * producer while another ring has work.  Finishing a slot returns its credit.
 *
 *   grain_queue_slot_t s;
 *   while (grain_queue_take(&reader, &s)) {
 *       while (!grain_queue_is_full(q, s)) ...;    (paper protocol only)
 *       ... read grain_queue_count(q, s) messages of grain_queue_slot_payload(q, s) ...
 *       grain_queue_done(&reader, s);
 *   }
 *
 * When no kernel runs, a take that fails means every published slot of the
 * reader's share has been taken: that is how drains know they are done.
 */
#ifndef GRAIN_RUNTIME_MESSAGES_QUEUE_CONSUMER_H
#define GRAIN_RUNTIME_MESSAGES_QUEUE_CONSUMER_H

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "grain/device/queue.h"

_Static_assert(sizeof(grain_queue_t) % 64 == 0, "rings must start on a cache line");

static inline size_t grain_queue_slot_stride(uint32_t width, uint32_t rows)
{
    size_t payload = (size_t)width * rows * sizeof(grain_u64);
    return GRAIN_QUEUE_CTRL_BYTES + ((payload + 63) & ~(size_t)63);
}

static inline grain_queue_geom_t grain_queue_geom(uint32_t protocol, uint32_t nrings, uint32_t nslots,
                                                  uint32_t width, uint32_t rows)
{
    grain_queue_geom_t g = {protocol, protocol == GRAIN_QUEUE_PAPER ? 1u : nrings, nslots, width, rows, 0,
                            grain_queue_slot_stride(width, rows), 0};
    g.ring_stride = sizeof(grain_ring_ctrl_t) + (size_t)nslots * g.slot_stride;
    return g;
}

/* Bytes of the host-memory part. */
static inline size_t grain_queue_bytes(grain_queue_geom_t g)
{
    return sizeof(grain_queue_t) + (size_t)g.nrings * g.ring_stride;
}

/* `q` points at grain_queue_bytes() bytes of zeroed shared memory; the
 * producer state (ring protocol) is g.nrings zeroed grain_ring_prod_t. */
static inline void grain_queue_init(grain_queue_t *q, grain_queue_geom_t g)
{
    memset(q, 0, sizeof *q);
    q->geom = g;
}

typedef struct grain_queue_slot {
    grain_u32 ring;
    grain_u64 ticket;
} grain_queue_slot_t;

typedef struct grain_queue_reader {
    grain_queue_t *q;
    grain_u32 first, stride; /* rings first, first + stride, ... (ring protocol) */
    grain_u32 cursor;        /* the owned ring to look at first */
    grain_u32 n_owned;
    grain_u64 *next;         /* per owned ring: the next ticket to take */
} grain_queue_reader_t;

/* Reader `index` of `count`; returns 0 without memory. */
static inline int grain_queue_reader_init(grain_queue_reader_t *r, grain_queue_t *q, unsigned index,
                                          unsigned count)
{
    memset(r, 0, sizeof *r);
    r->q = q;
    r->first = index;
    r->stride = count;
    if (q->geom.protocol == GRAIN_QUEUE_PAPER || index >= q->geom.nrings)
        return 1;
    r->n_owned = (q->geom.nrings - index + count - 1) / count;
    r->next = calloc(r->n_owned, sizeof *r->next);
    return r->next != NULL;
}

static inline void grain_queue_reader_destroy(grain_queue_reader_t *r)
{
    free(r->next);
    r->next = NULL;
}

/* Whether the slot's producer has published it. */
static inline int grain_queue_is_full(grain_queue_t *q, grain_queue_slot_t s)
{
    return grain_atomic_load_acquire_u32(&grain_queue_ctrl(q, &q->geom, s.ring, s.ticket)->seq) ==
           grain_queue_lap_seq(&q->geom, s.ticket) + 1u;
}

static inline grain_u32 grain_queue_count(grain_queue_t *q, grain_queue_slot_t s)
{
    return grain_atomic_load_relaxed_u32(&grain_queue_ctrl(q, &q->geom, s.ring, s.ticket)->count);
}

static inline const grain_u64 *grain_queue_slot_payload(grain_queue_t *q, grain_queue_slot_t s)
{
    return grain_queue_payload(q, &q->geom, s.ring, s.ticket);
}

static inline int grain_queue_take(grain_queue_reader_t *r, grain_queue_slot_t *s)
{
    grain_queue_t *q = r->q;
    if (q->geom.protocol == GRAIN_QUEUE_PAPER) {
        /* Fails only when every reserved ticket is claimed, never because
         * another reader won a race: drains rely on that. */
        grain_u64 t = atomic_load_explicit(GRAIN_A64(&q->read_idx), memory_order_relaxed);
        do {
            if (t >= atomic_load_explicit(GRAIN_A64(&q->write_idx), memory_order_acquire))
                return 0;
        } while (!atomic_compare_exchange_weak_explicit(GRAIN_A64(&q->read_idx), &t, t + 1,
                                                        memory_order_acq_rel, memory_order_relaxed));
        *s = (grain_queue_slot_t){0, t};
        return 1;
    }
    for (grain_u32 i = 0; i < r->n_owned; i++) {
        grain_u32 k = r->cursor + i < r->n_owned ? r->cursor + i : r->cursor + i - r->n_owned;
        grain_queue_slot_t cand = {r->first + k * r->stride, r->next[k]};
        if (grain_queue_is_full(q, cand)) {
            /* The next take starts at the following ring: one busy ring does
             * not starve the others. */
            r->cursor = k + 1 < r->n_owned ? k + 1 : 0;
            *s = cand;
            return 1;
        }
    }
    return 0;
}

/* Hands the slot back to the producers. */
static inline void grain_queue_done(grain_queue_reader_t *r, grain_queue_slot_t s)
{
    grain_queue_t *q = r->q;
    if (q->geom.protocol == GRAIN_QUEUE_PAPER) {
        grain_atomic_store_release_u32(&grain_queue_ctrl(q, &q->geom, 0, s.ticket)->seq,
                                       grain_queue_lap_seq(&q->geom, s.ticket) + 2u);
        return;
    }
    grain_u32 k = (s.ring - r->first) / r->stride;
    r->next[k] = s.ticket + 1;
    atomic_store_explicit(GRAIN_A64(&grain_ring_ctrl(q, &q->geom, s.ring)->consumed), s.ticket + 1,
                          memory_order_release);
}

#endif
