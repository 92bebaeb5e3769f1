/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/messages/recv_threads.h"

#include <pthread.h>
#include <stdlib.h>

#include "runtime/grain_impl.h"
#include "runtime/messages/apply.h"
#include "services/backoff.h"
#include "services/bell.h"
#include "services/log.h"

typedef struct receiver {
    struct grain_receivers *rx;
    pthread_t thread;
    uint32_t *marks; /* grain_receive_buffer's scratch */
    _Atomic uint64_t busy_ns, buffers;
} receiver_t;

struct grain_receivers {
    grain_t *grain;
    receiver_t *threads;
    unsigned n_threads, started;
    /* Jobs in a ring as long as the ledger: the job posted GRAIN_LENT_MAX
     * before this one has left the ledger, so its slot is free. */
    grain_recv_job_t jobs[GRAIN_LENT_MAX];
    pthread_mutex_t lock;
    uint64_t posted, taken; /* under the lock */
    grain_bell_t bell;
    atomic_int stop;
};

static grain_recv_job_t *take(grain_receivers_t *rx)
{
    grain_recv_job_t *job = NULL;
    pthread_mutex_lock(&rx->lock);
    if (rx->taken < rx->posted)
        job = &rx->jobs[rx->taken++ % GRAIN_LENT_MAX];
    pthread_mutex_unlock(&rx->lock);
    return job;
}

static void *receive_thread(void *arg)
{
    receiver_t *me = arg;
    grain_receivers_t *rx = me->rx;
    grain_backoff_t backoff = {0};
    for (;;) {
        uint64_t seen = grain_bell_seen(&rx->bell);
        grain_recv_job_t *job = take(rx);
        if (job != NULL) {
            uint64_t t0 = grain_now_ns();
            grain_receive_buffer(rx->grain, job->src, job->data, job->len, me->marks, job->epoch);
            atomic_store_explicit(&job->done, 1, memory_order_release);
            atomic_fetch_add_explicit(&me->busy_ns, grain_now_ns() - t0, memory_order_relaxed);
            atomic_fetch_add_explicit(&me->buffers, 1, memory_order_relaxed);
            grain_backoff_reset(&backoff);
            continue;
        }
        if (atomic_load(&rx->stop))
            break;
        /* Between buffers, the kept ones go to the stages that finished
         * kernels left (the network thread leaves that to these threads). */
        struct grain_applier *applier = atomic_load_explicit(&rx->grain->applier, memory_order_acquire);
        grain_status_t st = applier != NULL ? grain_applier_progress(applier, 1) : GRAIN_OK;
        if (st != GRAIN_OK)
            grain_async_error(rx->grain, st, grain_error_message(rx->grain));
        grain_backoff_idle_bell(&backoff, &rx->bell, seen);
    }
    return NULL;
}

grain_status_t grain_receivers_start(grain_t *g, unsigned threads, grain_receivers_t **rx_p)
{
    grain_receivers_t *rx = calloc(1, sizeof *rx);
    receiver_t *t = calloc(threads, sizeof *t);
    if (rx == NULL || t == NULL) {
        free(rx);
        free(t);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for %u receive threads", threads);
    }
    rx->grain = g;
    rx->threads = t;
    rx->n_threads = threads;
    pthread_mutex_init(&rx->lock, NULL);
    grain_bell_init(&rx->bell);
    for (; rx->started < threads; rx->started++) {
        unsigned n = rx->started + 1; /* for the message: stopping frees rx */
        t[rx->started].rx = rx;
        if ((t[rx->started].marks = malloc(grain_receive_marks_bytes(g))) == NULL) {
            grain_receivers_stop(rx);
            return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for receive thread %u of %u", n, threads);
        }
        if (pthread_create(&t[rx->started].thread, NULL, receive_thread, &t[rx->started]) != 0) {
            free(t[rx->started].marks);
            grain_receivers_stop(rx);
            return grain_fail(GRAIN_ERR_NO_MEMORY, "could not start receive thread %u of %u", n, threads);
        }
    }
    *rx_p = rx;
    return GRAIN_OK;
}

void grain_receivers_stop(grain_receivers_t *rx)
{
    if (rx == NULL)
        return;
    atomic_store(&rx->stop, 1);
    grain_bell_ring(&rx->bell);
    for (unsigned i = 0; i < rx->started; i++) {
        pthread_join(rx->threads[i].thread, NULL);
        free(rx->threads[i].marks);
    }
    grain_bell_destroy(&rx->bell);
    pthread_mutex_destroy(&rx->lock);
    free(rx->threads);
    free(rx);
}

void grain_receivers_post(grain_t *g, uint32_t src, const void *data, size_t len, struct grain_epoch *epoch)
{
    grain_receivers_t *rx = g->receivers;
    grain_lent_make_room(g);
    grain_recv_job_t *job = &rx->jobs[rx->posted % GRAIN_LENT_MAX]; /* only this thread moves `posted` */
    job->src = src;
    job->data = data;
    job->len = len;
    job->epoch = epoch;
    atomic_store_explicit(&job->done, 0, memory_order_relaxed);
    grain_lent_add(g, &(grain_lent_t){.job = job, .src = src});
    pthread_mutex_lock(&rx->lock);
    rx->posted++;
    pthread_mutex_unlock(&rx->lock);
    grain_bell_ring(&rx->bell);
}

grain_receivers_stats_t grain_receivers_stats(grain_receivers_t *rx)
{
    grain_receivers_stats_t s = {0, 0, 0};
    if (rx == NULL)
        return s;
    s.threads = rx->n_threads;
    for (unsigned i = 0; i < rx->n_threads; i++) {
        uint64_t b = atomic_load_explicit(&rx->threads[i].buffers, memory_order_relaxed);
        s.busy_ns += atomic_load_explicit(&rx->threads[i].busy_ns, memory_order_relaxed);
        s.max_buffers = b > s.max_buffers ? b : s.max_buffers;
    }
    return s;
}
