/* SPDX-License-Identifier: BSD-3-Clause */
#include "services/bell.h"

#include <time.h>

void grain_bell_init(grain_bell_t *b)
{
    pthread_mutex_init(&b->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&b->cond, &attr);
    pthread_condattr_destroy(&attr);
    atomic_init(&b->rings, 0);
    atomic_init(&b->sleepers, 0);
}

void grain_bell_destroy(grain_bell_t *b)
{
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->lock);
}

/* `ns` (under a second) from now on `clock`, for a timed wait. */
static struct timespec deadline_in(clockid_t clock, long ns)
{
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_nsec += ns;
    if (t.tv_nsec >= 1000000000l) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000l;
    }
    return t;
}

/*
 * The ring and the napper's check are both sequentially consistent: either
 * the ringer sees the sleeper and wakes it under the lock, or the sleeper's
 * check under the lock comes after the ring and sees it.
 */
void grain_bell_ring(grain_bell_t *b)
{
    atomic_fetch_add(&b->rings, 1);
    if (atomic_load(&b->sleepers) == 0)
        return;
    pthread_mutex_lock(&b->lock);
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
}

void grain_backoff_idle_bell(grain_backoff_t *backoff, grain_bell_t *b, uint64_t seen)
{
    if (backoff->idle < GRAIN_BACKOFF_YIELDS) {
        grain_backoff_idle(backoff);
        return;
    }
    struct timespec until = deadline_in(CLOCK_MONOTONIC, grain_backoff_nap(backoff));
    atomic_fetch_add(&b->sleepers, 1);
    pthread_mutex_lock(&b->lock);
    if (atomic_load(&b->rings) == seen)
        pthread_cond_timedwait(&b->cond, &b->lock, &until);
    pthread_mutex_unlock(&b->lock);
    atomic_fetch_sub(&b->sleepers, 1);
}

int grain_wait_returned(pthread_cond_t *cond, pthread_mutex_t *lock, const atomic_int *abandon)
{
    if (abandon != NULL && atomic_load_explicit(abandon, memory_order_acquire))
        return 0;
    struct timespec until = deadline_in(CLOCK_REALTIME, 50000000l);
    pthread_cond_timedwait(cond, lock, &until);
    return 1;
}
