/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A doorbell for polling threads.  An idle polling thread naps (backoff.h),
 * and a nap lasts the timer slack at least (50 us on Linux): a thread that
 * the application waits on (an aggregator asked to drain, the network
 * thread given a collective) then answered up to 70 us late, twice a
 * grain_quiet.  A thread that naps at a bell wakes as soon as the bell is
 * rung; ringing costs an atomic add, and a futex wake only when somebody
 * naps.
 */
#ifndef GRAIN_SERVICES_BELL_H
#define GRAIN_SERVICES_BELL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "services/backoff.h"

typedef struct grain_bell {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC */
    _Atomic uint64_t rings;
    _Atomic unsigned sleepers;
} grain_bell_t;

void grain_bell_init(grain_bell_t *b);
void grain_bell_destroy(grain_bell_t *b);
void grain_bell_ring(grain_bell_t *b);

/* What a polling round saw: read before it looks for work. */
static inline uint64_t grain_bell_seen(grain_bell_t *b)
{
    return atomic_load(&b->rings);
}

/* grain_backoff_idle, whose naps end early once the bell has rung since
 * `seen` (then the next round finds what the ringer left). */
void grain_backoff_idle_bell(grain_backoff_t *backoff, grain_bell_t *b, uint64_t seen);

/* One wait (under `lock`, on a CLOCK_REALTIME `cond`) for a buffer the
 * transport hands back; 0 at once, without waiting, when `abandon` (NULL:
 * never) is set, as a rank failed and buffers in flight may never come
 * back.  The wait ends after 50 ms at the latest, so that the caller looks
 * at `abandon` again: whoever sets it does not know who waits. */
int grain_wait_returned(pthread_cond_t *cond, pthread_mutex_t *lock, const atomic_int *abandon);

#endif
