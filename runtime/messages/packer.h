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

/* Appends the queue message (hdr, w1, w2) for destination `dest`, with a
 * PUT's signal word and value or a fetch's value compared and ticket
 * (grain_wire_encode); `now_ns` stamps a
 * buffer's first message.  Returns GRAIN_ERR_BAD_MESSAGE for a
 * message the wire cannot carry, GRAIN_ERR_PEER for one dropped as the job
 * ends (`abandon`).  Inline: once per message. */
static inline grain_status_t grain_packer_append(grain_packer_t *p, uint32_t dest, uint64_t hdr, uint64_t w1,
                                                 uint64_t w2, uint64_t sig, uint64_t sig_value, uint64_t now_ns)
{
    grain_outbuf_t *b = p->filling[dest];
    if (b == NULL && (b = grain_packer_open_(p, dest, now_ns)) == NULL)
        return GRAIN_ERR_PEER;
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
/* Sends every buffer whose first message is older than the timeout. */
void grain_packer_flush_expired(grain_packer_t *p, uint64_t now_ns);
/* Sends every non-empty buffer. */
void grain_packer_flush_all(grain_packer_t *p, grain_flush_cause_t cause);
/* Returns a sent buffer to its destination's free list (any thread). */
void grain_packer_release(grain_outbuf_t *buf);

#endif
