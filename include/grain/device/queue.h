/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device-to-host queue, shared by the device producers and the host
 * consumers.  Two protocols share one slot layout; GRAIN_QUEUE picks one at
 * kernel compile time and the runtime's GRAIN_QUEUE setting at run time.
 *
 * A slot is a 64-byte control line and a column-major payload of `rows` x
 * `width` 64-bit words: column c holds the message of the c-th active lane of
 * the producer, so the lanes of a work-group write whole cache lines.  Slots
 * are grouped in `nrings` rings of `nslots`; ticket t of a ring maps to slot
 * t % nslots in lap t / nslots.  A producer publishes a slot by storing its
 * count and then seq = 2*lap + 1 with release semantics.
 *
 * GRAIN_QUEUE_PAPER (Gravel, section 4.2): one ring, producers take a ticket
 * with a fetch-add on write_idx and consumers claim one on read_idx, both
 * system-scope atomics on host memory.  seq == 2*lap means the slot is empty
 * and owned by that lap's producer; the consumer empties it by storing
 * 2*(lap + 1).  The work-group leader spins on seq over the host link.
 *
 * GRAIN_QUEUE_RING (the default): a ring per group of work-groups (work-group
 * g uses ring g % nrings), each drained in ticket order by exactly one host
 * thread.  Tickets come from a device-scope fetch-add on the ring's producer
 * state in device memory; the consumer returns credits by storing how many
 * tickets it has finished (`consumed`, in host memory), and producers re-read
 * that word over the host link only when the credit they last saw is used
 * up.  The fast path has no system-scope atomic and no read of host memory:
 * the leader's stores stream over the link as posted writes.
 *
 * Either way a producer whose slot is still in use waits: nothing is dropped.
 * Indices are 64-bit and seq compares for equality only, so wraparound is
 * correct for any number of slots.
 */
#ifndef GRAIN_DEVICE_QUEUE_H
#define GRAIN_DEVICE_QUEUE_H

#include "grain/device/port.h"

#define GRAIN_QUEUE_PAPER 0
#define GRAIN_QUEUE_RING 1

#ifndef GRAIN_QUEUE
#define GRAIN_QUEUE GRAIN_QUEUE_RING
#endif

#define GRAIN_QUEUE_CTRL_BYTES 64u

/* The shape of a queue, known to both sides. */
typedef struct grain_queue_geom {
    grain_u32 protocol;    /* GRAIN_QUEUE_PAPER or GRAIN_QUEUE_RING */
    grain_u32 nrings;      /* 1 for the paper's queue */
    grain_u32 nslots;      /* per ring */
    grain_u32 width;       /* columns (lanes) per slot */
    grain_u32 rows;        /* 64-bit words per message */
    grain_u32 pad;
    grain_u64 slot_stride; /* bytes from one slot to the next */
    grain_u64 ring_stride; /* bytes from one ring to the next */
} grain_queue_geom_t;

/* The host-memory part: this header, then the rings. */
typedef struct grain_queue {
    grain_u64 write_idx;     /* paper: producers' fetch-add */
    grain_u64 pad0[7];
    grain_u64 read_idx;      /* paper: consumers' claim */
    grain_u64 pad1[7];
    grain_queue_geom_t geom;
    grain_u64 pad2[3];       /* the rings, and so every slot's rows, start on a cache line */
} grain_queue_t;

/* First line of a ring (ring protocol): written by its consumer only. */
typedef struct grain_ring_ctrl {
    grain_u64 consumed; /* tickets below this are processed and free again */
    grain_u64 pad[7];
} grain_ring_ctrl_t;

/*
 * A ring's producer state, in device memory.  full_waits counts reservations
 * that waited: for their slot to be freed, or in the ring protocol for the
 * ring's oldest waiter to raise the credit (both protocols; the paper's
 * queue has one ring).  It is a device-scope counter so that producers that
 * wait do not also contend for one host-memory word across the link.  in_place
 * and direct count the messages its work-groups applied without the queue,
 * to their own rank and to the node's other ranks (the direct path), which
 * the host counters never see.
 */
typedef struct grain_ring_prod {
    grain_u64 reserved;   /* tickets handed out (ring protocol) */
    grain_u64 credit;     /* the largest `consumed` a producer has read (ring protocol) */
    grain_u64 full_waits;
    grain_u64 in_place;
    grain_u64 direct;
    grain_u64 pad[3];
} grain_ring_prod_t;

/* What producers hold: where both parts are, and the shape. */
typedef struct grain_queue_desc {
    GRAIN_DPTR(grain_queue_t) shared;
    GRAIN_DPTR(grain_ring_prod_t) prod; /* nrings entries */
    grain_queue_geom_t geom;
} grain_queue_desc_t;

typedef struct grain_queue_slot_ctrl {
    grain_u32 seq;
    grain_u32 count; /* messages in the slot, written before seq turns full */
} grain_queue_slot_ctrl_t;

GRAIN_INLINE GRAIN_GLOBAL grain_ring_ctrl_t *grain_ring_ctrl(GRAIN_GLOBAL grain_queue_t *q,
                                                             GRAIN_GLOBAL const grain_queue_geom_t *g, grain_u32 ring)
{
    return (GRAIN_GLOBAL grain_ring_ctrl_t *)((GRAIN_GLOBAL char *)q + sizeof(grain_queue_t) +
                                              ring * g->ring_stride);
}

GRAIN_INLINE GRAIN_GLOBAL grain_queue_slot_ctrl_t *
grain_queue_ctrl(GRAIN_GLOBAL grain_queue_t *q, GRAIN_GLOBAL const grain_queue_geom_t *g, grain_u32 ring,
                 grain_u64 ticket)
{
    return (GRAIN_GLOBAL grain_queue_slot_ctrl_t *)((GRAIN_GLOBAL char *)grain_ring_ctrl(q, g, ring) +
                                                    sizeof(grain_ring_ctrl_t) +
                                                    (ticket % g->nslots) * g->slot_stride);
}

/* Word (row, col) of the payload is payload[row * width + col]. */
GRAIN_INLINE GRAIN_GLOBAL grain_u64 *grain_queue_payload(GRAIN_GLOBAL grain_queue_t *q,
                                                         GRAIN_GLOBAL const grain_queue_geom_t *g,
                                                         grain_u32 ring, grain_u64 ticket)
{
    return (GRAIN_GLOBAL grain_u64 *)((GRAIN_GLOBAL char *)grain_queue_ctrl(q, g, ring, ticket) +
                                      GRAIN_QUEUE_CTRL_BYTES);
}

GRAIN_INLINE grain_u32 grain_queue_lap_seq(GRAIN_GLOBAL const grain_queue_geom_t *g, grain_u64 ticket)
{
    return (grain_u32)(2u * (ticket / g->nslots));
}

/*
 * Reservation hands out tickets, and the slot of ticket t is free once the
 * consumer has taken ticket t - nslots.  Why no reservation deadlocks: a
 * waiter holds no ticket that is not yet published, except those of its
 * own reservation, and those are consecutive.  So the holder of the
 * smallest unpublished ticket waits only on tickets below it, which are
 * all published and will be consumed: it goes on, and so, in turn, does
 * every other.  That needs `n` <= nslots (grain_launch refuses more), and
 * the caller must take all the tickets a work-group holds at once in one
 * call: two calls by one work-group interleave with other work-groups'
 * tickets, and each can wait for a slot the other holds.  GRAIN_RESERVE=wg
 * takes one ticket per send, and sg one per sub-group, all in one call by
 * lane 0.  wi takes one per lane and publishes it with no barrier between:
 * the holder of the smallest ticket goes on only if its lane can run while
 * another lane of its warp waits, which grain_init requires of the device
 * for wi (independent thread scheduling, CPU devices).
 */

/* The paper's reservation: one fetch-add, then wait until the consumer of
 * the previous lap has emptied each slot. */
GRAIN_INLINE grain_u64 grain_queue_reserve_paper(GRAIN_GLOBAL grain_queue_desc_t *d, grain_u32 n)
{
    GRAIN_GLOBAL grain_queue_t *q = d->shared;
    grain_u64 first = grain_atomic_fetch_add_u64(&q->write_idx, n);
    for (grain_u64 ticket = first; ticket < first + n; ticket++) {
        GRAIN_GLOBAL grain_queue_slot_ctrl_t *ctrl = grain_queue_ctrl(q, &d->geom, 0, ticket);
        grain_u32 want = grain_queue_lap_seq(&d->geom, ticket);
        if (grain_atomic_load_acquire_u32(&ctrl->seq) != want) {
            grain_atomic_fetch_add_dev_u64(&d->prod->full_waits, 1);
            while (grain_atomic_load_relaxed_u32(&ctrl->seq) != want)
                grain_poll_nap();
            grain_fence_acquire();
        }
    }
    return first;
}

/*
 * The ring reservation: device-scope tickets, and a look at the host's
 * credit only when the credit last seen does not cover the last of them.
 * Then only the ring's oldest waiter reads the host's word over the link:
 * the one whose first ticket the credit covers, or the next after it.  The
 * others watch the credit in device memory, which it raises.  Every waiter
 * once polled the host: about 8 a ring, a thousand on an H200, whose reads
 * took the link from the apply agent's reads of received buffers.  Every
 * ticket before the oldest waiter's is covered or its owner has yet to look
 * (and will find itself the oldest), so one always polls.
 */
GRAIN_INLINE grain_u64 grain_queue_reserve_ring(GRAIN_GLOBAL grain_queue_desc_t *d, grain_u32 ring, grain_u32 n)
{
    GRAIN_GLOBAL grain_ring_prod_t *p = d->prod + ring;
    grain_u64 nslots = d->geom.nslots;
    grain_u64 first = grain_atomic_fetch_add_dev_u64(&p->reserved, n), last = first + n - 1;
    if (last < grain_atomic_load_acquire_dev_u64(&p->credit) + nslots)
        return first;
    GRAIN_GLOBAL grain_ring_ctrl_t *rc = grain_ring_ctrl(d->shared, &d->geom, ring);
    for (grain_u32 polls = 0;; polls++) {
        grain_u64 credit = grain_atomic_load_relaxed_dev_u64(&p->credit);
        if (last < credit + nslots)
            break;
        if (first <= credit + nslots) {
            grain_u64 consumed = grain_atomic_load_relaxed_u64(&rc->consumed);
            if (last < consumed + nslots) {
                grain_fence_acquire(); /* the consumer's reads of our slots, before we pass them on */
                grain_atomic_max_release_dev_u64(&p->credit, consumed);
                return first;
            }
        }
        if (polls == 0)
            grain_atomic_fetch_add_dev_u64(&p->full_waits, 1);
        grain_poll_nap();
    }
    grain_fence_acquire();
    return first;
}

/* The ring a work-group's sends go to (always 0 for the paper's queue). */
GRAIN_INLINE grain_u32 grain_queue_ring_of(GRAIN_GLOBAL const grain_queue_geom_t *g, grain_u64 group)
{
    return (grain_u32)(group % g->nrings);
}

/* The first of `n` consecutive tickets, every slot of them free. */
GRAIN_INLINE grain_u64 grain_queue_reserve(GRAIN_GLOBAL grain_queue_desc_t *d, grain_u32 ring, grain_u32 n)
{
#if GRAIN_QUEUE == GRAIN_QUEUE_PAPER
    (void)ring;
    return grain_queue_reserve_paper(d, n);
#else
    return grain_queue_reserve_ring(d, ring, n);
#endif
}

/* Marks the reserved slot full with `count` messages; the payload must be
 * visible before (the caller fences or the work-group barrier does). */
GRAIN_INLINE void grain_queue_publish(GRAIN_GLOBAL grain_queue_t *q, GRAIN_GLOBAL const grain_queue_geom_t *g,
                                      grain_u32 ring, grain_u64 ticket, grain_u32 count)
{
    GRAIN_GLOBAL grain_queue_slot_ctrl_t *ctrl = grain_queue_ctrl(q, g, ring, ticket);
    grain_atomic_store_relaxed_u32(&ctrl->count, count);
    grain_atomic_store_release_u32(&ctrl->seq, grain_queue_lap_seq(g, ticket) + 1u);
}

#endif /* GRAIN_DEVICE_QUEUE_H */
