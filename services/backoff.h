/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Idle back-off for polling threads.  grain's threads poll (the device queue
 * and the network have no interrupts), but on a CPU device or with several
 * ranks per node they share cores with the kernel's workers: after a short
 * spin an idle thread yields, then sleeps in short naps well under the flush
 * timeout.  On a CPU device the naps of a thread that stays idle double up
 * to grain_backoff_nap_max_ns: there every wake-up takes a core from the
 * kernels (or from the compiler, which builds kernels at their first
 * launch), and a rank's half-dozen threads woken every 70 us took most of
 * the cores of an oversubscribed node.  pagerank on 3 ranks of 2 cores
 * under AddressSanitizer, PoCL's cache empty, the ranks taking turns at
 * compiles (turns.h): 154 s with 20 us naps, 31 s with 1 ms ones.  A GPU's
 * threads keep the short naps: there a device message waits for the nap to
 * end.
 */
#ifndef GRAIN_SERVICES_BACKOFF_H
#define GRAIN_SERVICES_BACKOFF_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

typedef struct grain_backoff {
    uint32_t idle;
    uint32_t nap_ns;   /* the next nap's length; 0: GRAIN_BACKOFF_NAP_NS */
    uint64_t since_ns; /* the first idle round since the reset (patient waits) */
} grain_backoff_t;

#define GRAIN_BACKOFF_SPINS 64u
#define GRAIN_BACKOFF_YIELDS 256u
#define GRAIN_BACKOFF_NAP_NS 20000l
/* The longest nap: GRAIN_BACKOFF_NAP_NS, unless a handle on a CPU device
 * raised it to GRAIN_BACKOFF_CPU_NAP_MAX_NS (for the whole process). */
#define GRAIN_BACKOFF_CPU_NAP_MAX_NS 1000000u
extern _Atomic uint32_t grain_backoff_nap_max_ns;

static inline void grain_backoff_reset(grain_backoff_t *b)
{
    b->idle = 0;
    b->nap_ns = 0;
}

/* The next nap's length, doubling the one after up to the longest. */
static inline long grain_backoff_nap(grain_backoff_t *b)
{
    uint32_t max = atomic_load_explicit(&grain_backoff_nap_max_ns, memory_order_relaxed);
    uint32_t nap = b->nap_ns != 0 ? b->nap_ns : GRAIN_BACKOFF_NAP_NS;
    nap = nap < max ? nap : max;
    b->nap_ns = nap < max / 2 ? 2 * nap : max;
    return (long)nap;
}

static inline void grain_backoff_idle(grain_backoff_t *b)
{
    if (b->idle < GRAIN_BACKOFF_SPINS) {
        b->idle++;
    } else if (b->idle < GRAIN_BACKOFF_YIELDS) {
        b->idle++;
        sched_yield();
    } else {
        struct timespec nap = {0, grain_backoff_nap(b)};
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
