/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host transfer agent: threads that poll a region's ready words while
 * an iteration is open.  Thread t owns the chunks of the runs of 64
 * numbered t, t + threads, ...; it moves a chunk once its ready word reads
 * the iteration's generation (grain/device/chunks.h), on its own copy lane,
 * so that copies of different threads overlap.  Between iterations the
 * threads sleep.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/transfers/region.h"
#include "services/backoff.h"
#include "services/log.h"

typedef struct agent_thread {
    struct grain_host_agent *agent;
    unsigned index;
    pthread_t thread;
    uint64_t owned; /* chunks of its runs */
} agent_thread_t;

struct grain_host_agent {
    grain_region_t *region;
    agent_thread_t *threads;
    unsigned n, started;
    /* Hand-offs poll (with grain_backoff) rather than wait on a condition:
     * a woken thread took tens of microseconds an iteration, longer than
     * the transfers it hid (jacobi on two H200s, 64 KiB halos). */
    _Atomic uint64_t armed;      /* iterations armed */
    _Atomic uint32_t generation; /* the armed iteration's (grain/device/chunks.h) */
    _Atomic unsigned busy;       /* threads still moving this iteration's chunks */
    _Atomic int stop;
    _Atomic int give_up; /* the producer ended with chunks it never completed */
    pthread_mutex_t lock; /* the first error */
    grain_status_t status;
    char message[512];
};

static void record_error(struct grain_host_agent *a, grain_status_t st)
{
    pthread_mutex_lock(&a->lock);
    if (a->status == GRAIN_OK) {
        a->status = st;
        snprintf(a->message, sizeof a->message, "%s", grain_error_message(a->region->grain));
    }
    pthread_mutex_unlock(&a->lock);
}

#define RUN 64u /* chunks a thread owns in a row */

/* Moves the ready chunks of run w not yet moved in this iteration. */
static uint64_t move_run(agent_thread_t *t, uint64_t w, uint32_t generation)
{
    grain_region_t *r = t->agent->region;
    _Atomic uint32_t *ready = r->ready_host;
    uint32_t end = (uint32_t)(w * RUN + RUN < r->plan.n_chunks ? w * RUN + RUN : r->plan.n_chunks);
    uint64_t n = 0;
    for (uint32_t c = (uint32_t)(w * RUN); c < end; c++) {
        if (r->moves[c] == generation || atomic_load_explicit(&ready[c], memory_order_acquire) != generation)
            continue;
        uint64_t start, len;
        unsigned seg = grain_chunk_span(&r->plan, c, &start, &len);
        grain_status_t st = grain_region_move(r, seg, start, len, t->index);
        if (st != GRAIN_OK)
            record_error(t->agent, st);
        r->moves[c] = generation;
        n++;
    }
    return n;
}

static void run_iteration(agent_thread_t *t, uint32_t generation)
{
    struct grain_host_agent *a = t->agent;
    grain_region_t *r = a->region;
    uint64_t runs = ((uint64_t)r->plan.n_chunks + RUN - 1) / RUN, left = t->owned;
    grain_backoff_t idle = {0};
    while (left > 0 && !atomic_load_explicit(&a->give_up, memory_order_relaxed)) {
        uint64_t moved = 0;
        for (uint64_t w = t->index; w < runs; w += a->n)
            moved += move_run(t, w, generation);
        left -= moved;
        if (moved != 0) {
            /* Pieces go out once a sweep, their copies waited for together. */
            grain_status_t st = grain_region_lane_send(r, t->index);
            if (st != GRAIN_OK)
                record_error(a, st);
            grain_backoff_reset(&idle);
        } else
            grain_backoff_idle_patient(&idle, GRAIN_BACKOFF_PATIENCE_NS);
    }
    grain_status_t st = grain_region_lane_wait(r, t->index);
    if (st != GRAIN_OK)
        record_error(a, st);
}

static void *agent_main(void *arg)
{
    agent_thread_t *t = arg;
    struct grain_host_agent *a = t->agent;
    uint64_t served = 0;
    grain_backoff_t idle = {0};
    while (!atomic_load_explicit(&a->stop, memory_order_relaxed)) {
        uint64_t armed = atomic_load_explicit(&a->armed, memory_order_acquire);
        if (armed == served) {
            grain_backoff_idle_patient(&idle, GRAIN_BACKOFF_PATIENCE_NS);
            continue;
        }
        grain_backoff_reset(&idle);
        served = armed;
        run_iteration(t, atomic_load_explicit(&a->generation, memory_order_relaxed));
        atomic_fetch_sub_explicit(&a->busy, 1, memory_order_release);
    }
    return NULL;
}

grain_status_t grain_host_agent_start(grain_region_t *r)
{
    struct grain_host_agent *a = calloc(1, sizeof *a);
    unsigned n = r->threads;
    agent_thread_t *threads = calloc(n, sizeof *threads);
    if (a == NULL || threads == NULL) {
        free(a);
        free(threads);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "region: no memory for the host agent");
    }
    a->region = r;
    a->threads = threads;
    a->n = n;
    pthread_mutex_init(&a->lock, NULL);
    r->host = a;
    uint64_t runs = ((uint64_t)r->plan.n_chunks + RUN - 1) / RUN;
    for (unsigned i = 0; i < n; i++) {
        threads[i] = (agent_thread_t){.agent = a, .index = i};
        for (uint64_t w = i; w < runs; w += n)
            threads[i].owned += r->plan.n_chunks - w * RUN < RUN ? r->plan.n_chunks - w * RUN : RUN;
        if (pthread_create(&threads[i].thread, NULL, agent_main, &threads[i]) != 0) {
            grain_host_agent_stop(r);
            return grain_fail(GRAIN_ERR_NO_MEMORY, "region: cannot start host agent thread %u", i);
        }
        a->started++;
    }
    return GRAIN_OK;
}

void grain_host_agent_arm(grain_region_t *r)
{
    struct grain_host_agent *a = r->host;
    atomic_store_explicit(&a->give_up, 0, memory_order_relaxed);
    atomic_store_explicit(&a->busy, a->started, memory_order_relaxed);
    atomic_store_explicit(&a->generation, (uint32_t)(r->iterations + 1), memory_order_relaxed);
    atomic_fetch_add_explicit(&a->armed, 1, memory_order_release);
}

grain_status_t grain_host_agent_finish(grain_region_t *r, int incomplete)
{
    struct grain_host_agent *a = r->host;
    if (incomplete)
        atomic_store_explicit(&a->give_up, 1, memory_order_relaxed);
    grain_backoff_t idle = {0};
    while (atomic_load_explicit(&a->busy, memory_order_acquire) > 0)
        grain_backoff_idle_patient(&idle, GRAIN_BACKOFF_PATIENCE_NS);
    pthread_mutex_lock(&a->lock);
    grain_status_t st = a->status;
    if (st != GRAIN_OK)
        grain_error_keep(a->message);
    a->status = GRAIN_OK;
    pthread_mutex_unlock(&a->lock);
    return st;
}

void grain_host_agent_stop(grain_region_t *r)
{
    struct grain_host_agent *a = r->host;
    if (a == NULL)
        return;
    atomic_store_explicit(&a->give_up, 1, memory_order_relaxed);
    atomic_store_explicit(&a->stop, 1, memory_order_relaxed);
    for (unsigned i = 0; i < a->started; i++)
        pthread_join(a->threads[i].thread, NULL);
    pthread_mutex_destroy(&a->lock);
    free(a->threads);
    free(a);
    r->host = NULL;
}
