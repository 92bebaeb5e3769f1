/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport's receive buffers that the runtime still reads: a chunk
 * piece whose copy into device memory runs, or a packed buffer that a
 * receive thread validates and applies.  A transport reposts its buffers in
 * the order it lent them (transport.h, `settle`), so the runtime keeps them
 * in that order and returns the oldest ones that are done.  Network thread
 * only; receive threads only set their job's `done`.
 */
#ifndef GRAIN_RUNTIME_MESSAGES_LENT_H
#define GRAIN_RUNTIME_MESSAGES_LENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct grain;
struct grain_region;

/* Buffers the runtime may hold at once: more than the receive buffers a
 * transport keeps by default (3 a peer), so that the ledger rarely makes
 * the network thread wait. */
#define GRAIN_LENT_MAX 256u

/* A packed buffer handed to a receive thread. */
typedef struct grain_recv_job {
    uint32_t src;
    const void *data;
    size_t len;
    struct grain_epoch *epoch; /* quiets.h */
    atomic_int done;
} grain_recv_job_t;

typedef struct grain_lent {
    grain_recv_job_t *job; /* a receive thread's, or NULL: a chunk piece ... */
    struct grain_region *region; /* ... of this region, */
    uint32_t src;
    uint64_t bytes;
    uint64_t mark; /* landing once the receiving lane passed this mark */
} grain_lent_t;

/* Makes room for one more, waiting for the oldest when the ledger is full. */
void grain_lent_make_room(struct grain *g);
void grain_lent_add(struct grain *g, const grain_lent_t *lent);
/* Finishes every held buffer, waiting for them. */
void grain_lent_finish(struct grain *g);
/* The transport's settle: how many of the oldest held buffers are free
 * (with `wait`, all of them, once they are), those freed while the
 * ledger was full included. */
unsigned grain_lent_settle(struct grain *g, int wait);

#endif
