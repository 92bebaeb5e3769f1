/*
 * The producer/consumer queue of Gravel (seed 001, section 4.2), shared by the
 * device producers and the host consumers.
 *
 * A queue is one allocation in memory that both sides can use atomically: a
 * header followed by `nslots` slots.  A slot is a 64-byte control line and a
 * column-major payload of `rows` x `width` 64-bit words: column c holds the
 * message of the c-th active lane of the producer, so the lanes of a work-group
 * write whole cache lines.
 *
 * Producers take a write ticket with one fetch-add on write_idx; ticket t maps
 * to slot t % nslots in lap t / nslots.  The slot's `seq` word is the paper's
 * "current ticket N" and "full bit F" in one word: seq == 2*lap means empty and
 * owned by the producer of that lap, 2*lap + 1 means full.  The consumer of lap
 * `lap` empties it by storing 2*(lap + 1), which hands it to the next lap's
 * producer.  A producer whose slot is still full waits: nothing is dropped.
 * Indices are 64-bit, so wraparound is correct for any number of slots.
 */
#ifndef GRAIN_DEVICE_QUEUE_H
#define GRAIN_DEVICE_QUEUE_H

#include "grain/device/port.h"

#define GRAIN_QUEUE_CTRL_BYTES 64u

typedef struct grain_queue {
    grain_u64 write_idx;     /* producers' fetch-add */
    grain_u64 pad0[7];
    grain_u64 read_idx;      /* consumers' claim */
    grain_u64 pad1[7];
    grain_u32 nslots;
    grain_u32 width;         /* columns (lanes) per slot */
    grain_u32 rows;          /* 64-bit words per message */
    grain_u32 pad2;
    grain_u64 slot_stride;   /* bytes from one slot to the next */
    grain_u64 full_waits;    /* reservations that found their slot still full */
    grain_u64 pad3[5];
} grain_queue_t;

typedef struct grain_queue_slot_ctrl {
    grain_u32 seq;
    grain_u32 count; /* messages in the slot, written before seq turns full */
} grain_queue_slot_ctrl_t;

GRAIN_INLINE GRAIN_GLOBAL grain_queue_slot_ctrl_t *
grain_queue_ctrl(GRAIN_GLOBAL grain_queue_t *q, grain_u64 ticket)
{
    return (GRAIN_GLOBAL grain_queue_slot_ctrl_t *)((GRAIN_GLOBAL char *)q + sizeof(grain_queue_t) +
                                                    (ticket % q->nslots) * q->slot_stride);
}

/* Word (row, col) of the payload of the slot that `ticket` maps to. */
GRAIN_INLINE GRAIN_GLOBAL grain_u64 *
grain_queue_payload(GRAIN_GLOBAL grain_queue_t *q, grain_u64 ticket)
{
    return (GRAIN_GLOBAL grain_u64 *)((GRAIN_GLOBAL char *)grain_queue_ctrl(q, ticket) +
                                      GRAIN_QUEUE_CTRL_BYTES);
}

GRAIN_INLINE grain_u32 grain_queue_lap_seq(GRAIN_GLOBAL grain_queue_t *q, grain_u64 ticket)
{
    return (grain_u32)(2u * (ticket / q->nslots));
}

/*
 * Reserve one slot: one fetch-add, then wait until the consumer of the
 * previous lap has emptied it.  Returns the ticket.
 */
GRAIN_INLINE grain_u64 grain_queue_reserve(GRAIN_GLOBAL grain_queue_t *q)
{
    grain_u64 ticket = grain_atomic_fetch_add_u64(&q->write_idx, 1);
    GRAIN_GLOBAL grain_queue_slot_ctrl_t *ctrl = grain_queue_ctrl(q, ticket);
    grain_u32 want = grain_queue_lap_seq(q, ticket);
    if (grain_atomic_load_acquire_u32(&ctrl->seq) != want) {
        grain_atomic_fetch_add_u64(&q->full_waits, 1);
        while (grain_atomic_load_acquire_u32(&ctrl->seq) != want) {
        }
    }
    return ticket;
}

/* Mark the reserved slot full with `count` messages; the payload must be
 * visible before (the caller fences or the work-group barrier does). */
GRAIN_INLINE void grain_queue_publish(GRAIN_GLOBAL grain_queue_t *q, grain_u64 ticket,
                                      grain_u32 count)
{
    GRAIN_GLOBAL grain_queue_slot_ctrl_t *ctrl = grain_queue_ctrl(q, ticket);
    grain_atomic_store_relaxed_u32(&ctrl->count, count);
    grain_atomic_store_release_u32(&ctrl->seq, grain_queue_lap_seq(q, ticket) + 1u);
}

#endif /* GRAIN_DEVICE_QUEUE_H */
