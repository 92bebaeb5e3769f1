/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Idle back-off for polling threads.  grain's threads poll (the device queue
 * and the network have no interrupts), but on a CPU device or with several
 * ranks per node they share cores with the kernel's workers: after a short
 * spin an idle thread yields, then sleeps in short naps well under the flush
 * timeout.
 */
#ifndef GRAIN_SERVICES_BACKOFF_H
#define GRAIN_SERVICES_BACKOFF_H

#include <sched.h>
#include <stdint.h>
#include <time.h>

typedef struct grain_backoff {
    uint32_t idle;
    uint64_t since_ns; /* the first idle round since the reset (patient waits) */
} grain_backoff_t;

#define GRAIN_BACKOFF_SPINS 64u
#define GRAIN_BACKOFF_YIELDS 256u
#define GRAIN_BACKOFF_NAP_NS 20000l

static inline void grain_backoff_reset(grain_backoff_t *b)
{
    b->idle = 0;
}

static inline void grain_backoff_idle(grain_backoff_t *b)
{
    if (b->idle < GRAIN_BACKOFF_SPINS) {
        b->idle++;
    } else if (b->idle < GRAIN_BACKOFF_YIELDS) {
        b->idle++;
        sched_yield();
    } else {
        struct timespec nap = {0, GRAIN_BACKOFF_NAP_NS};
        nanosleep(&nap, NULL);
    }
}

static inline uint64_t grain_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* How long a thread waiting for work in flight (a GPU producer's chunks,
 * an MPI collective, RDMA writes) yields before it naps: longer than such
 * work usually takes, short against an iteration on a CPU device. */
#define GRAIN_BACKOFF_PATIENCE_NS 2000000u

/* For a wait that usually ends within `patience_ns`: it yields rather than
 * naps until then.  A nap lasts the timer slack at least (50 us on Linux),
 * which added 67 us to every 150 us iteration of the host agent on an H200
 * machine; yielding still lets a CPU device's workers run. */
static inline void grain_backoff_idle_patient(grain_backoff_t *b, uint64_t patience_ns)
{
    if (b->idle == 0)
        b->since_ns = grain_now_ns();
    if (b->idle < GRAIN_BACKOFF_YIELDS || grain_now_ns() - b->since_ns >= patience_ns) {
        grain_backoff_idle(b);
        return;
    }
    sched_yield();
}

#endif
