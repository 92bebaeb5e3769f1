/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive threads (GRAIN_RECV_THREADS, docs/receive-path.md): with
 * more than one, the network thread only receives, and these threads
 * validate and apply the packed buffers it hands them, several buffers at
 * once, of one source or many.  A buffer stays lent by the transport
 * (lent.h) until its thread is done with it, so nothing is copied on the
 * way.  Queued messages are unordered before quiet (grain.h), so two
 * buffers of one source may be applied in either order.
 */
#ifndef GRAIN_RUNTIME_MESSAGES_RECV_THREADS_H
#define GRAIN_RUNTIME_MESSAGES_RECV_THREADS_H

#include <stdint.h>

#include "grain/grain.h"

struct grain;
struct grain_epoch;
typedef struct grain_receivers grain_receivers_t;

grain_status_t grain_receivers_start(struct grain *g, unsigned threads, grain_receivers_t **rx_p);
/* Once the transport is closed: every job handed over is done. */
void grain_receivers_stop(grain_receivers_t *rx);
/* Network thread: hands a packed buffer to a receive thread; the buffer
 * is lent until the job is done. */
void grain_receivers_post(struct grain *g, uint32_t src, const void *data, size_t len, struct grain_epoch *epoch);

typedef struct grain_receivers_stats {
    unsigned threads;
    uint64_t busy_ns;     /* summed over the threads */
    uint64_t max_buffers; /* the most buffers one thread applied */
} grain_receivers_stats_t;

grain_receivers_stats_t grain_receivers_stats(grain_receivers_t *rx);

#endif
