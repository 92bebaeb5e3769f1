/*
 * Idle back-off for polling threads.  grain's threads poll (the device queue
 * and the network have no interrupts), but on a CPU device or with several
 * ranks per node they share cores with the kernel's workers: after a short
 * spin an idle thread yields, then sleeps in short naps well under the flush
 * timeout.
 */
#ifndef GRAIN_RUNTIME_BACKOFF_H
#define GRAIN_RUNTIME_BACKOFF_H

#include <sched.h>
#include <stdint.h>
#include <time.h>

typedef struct grain_backoff {
    uint32_t idle;
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

#endif
