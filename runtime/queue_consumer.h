/*
 * The consumer side of the queue (include/grain/device/queue.h), for host
 * threads.
 *
 * Consumers claim a ticket only once a producer holds it (read < write), with
 * a compare-and-swap on read_idx instead of the paper's blind fetch-add: a
 * fetch-add past the last reservation would leave a consumer waiting on a
 * slot that no kernel will ever fill, and shutdown would hang on it.
 */
#ifndef GRAIN_RUNTIME_QUEUE_CONSUMER_H
#define GRAIN_RUNTIME_QUEUE_CONSUMER_H

#include <stdatomic.h>
#include <string.h>

#include "grain/device/queue.h"

static inline size_t grain_queue_slot_stride(uint32_t width, uint32_t rows)
{
    size_t payload = (size_t)width * rows * sizeof(grain_u64);
    return GRAIN_QUEUE_CTRL_BYTES + ((payload + 63) & ~(size_t)63);
}

static inline size_t grain_queue_bytes(uint32_t nslots, uint32_t width, uint32_t rows)
{
    return sizeof(grain_queue_t) + (size_t)nslots * grain_queue_slot_stride(width, rows);
}

/* `q` points at grain_queue_bytes() bytes of zeroed shared memory. */
static inline void grain_queue_init(grain_queue_t *q, uint32_t nslots, uint32_t width, uint32_t rows)
{
    memset(q, 0, sizeof *q);
    q->nslots = nslots;
    q->width = width;
    q->rows = rows;
    q->slot_stride = grain_queue_slot_stride(width, rows);
}

/* Claims the oldest reserved ticket; 0 when no producer holds one. */
static inline int grain_queue_try_claim(grain_queue_t *q, grain_u64 *ticket_p)
{
    grain_u64 r = atomic_load_explicit(GRAIN_A64(&q->read_idx), memory_order_relaxed);
    if (r >= atomic_load_explicit(GRAIN_A64(&q->write_idx), memory_order_acquire))
        return 0;
    if (!atomic_compare_exchange_strong_explicit(GRAIN_A64(&q->read_idx), &r, r + 1,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return 0;
    *ticket_p = r;
    return 1;
}

/* Whether the claimed ticket's slot has been published. */
static inline int grain_queue_is_full(grain_queue_t *q, grain_u64 ticket)
{
    return grain_atomic_load_acquire_u32(&grain_queue_ctrl(q, ticket)->seq) ==
           grain_queue_lap_seq(q, ticket) + 1u;
}

static inline grain_u32 grain_queue_count(grain_queue_t *q, grain_u64 ticket)
{
    return grain_atomic_load_relaxed_u32(&grain_queue_ctrl(q, ticket)->count);
}

/* Empties the slot and hands it to the producer of the next lap. */
static inline void grain_queue_release(grain_queue_t *q, grain_u64 ticket)
{
    grain_atomic_store_release_u32(&grain_queue_ctrl(q, ticket)->seq,
                                   grain_queue_lap_seq(q, ticket) + 2u);
}

#endif
