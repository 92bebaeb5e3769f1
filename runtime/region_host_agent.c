/*
 * The host transfer agent: threads that poll a region's ready bitmap while
 * an iteration is open.  Thread t owns the bitmap words t, t + threads, ...;
 * it claims a word's bits with one exchange and moves each chunk on its own
 * copy lane, so that copies of different threads overlap.  Between
 * iterations the threads sleep.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/backoff.h"
#include "runtime/grain_impl.h"
#include "runtime/log.h"
#include "runtime/region.h"

typedef struct agent_thread {
    struct grain_host_agent *agent;
    unsigned index;
    pthread_t thread;
    uint64_t owned; /* chunks of its words */
} agent_thread_t;

struct grain_host_agent {
    grain_region_t *region;
    agent_thread_t *threads;
    unsigned n, started;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    uint64_t generation; /* iterations armed */
    unsigned busy;       /* threads still moving this iteration's chunks */
    int stop;
    _Atomic int give_up; /* the producer ended with chunks it never completed */
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

/* Moves the chunks of the set bits of word w. */
static uint64_t move_word(agent_thread_t *t, uint64_t w, uint64_t bits)
{
    grain_region_t *r = t->agent->region;
    uint64_t n = 0;
    for (; bits != 0; bits &= bits - 1, n++) {
        uint32_t c = (uint32_t)(w * 64 + (uint64_t)__builtin_ctzll(bits));
        uint64_t start, len;
        unsigned seg = grain_chunk_span(&r->plan, c, &start, &len);
        grain_status_t st = grain_region_move(r, seg, start, len, t->index);
        if (st != GRAIN_OK)
            record_error(t->agent, st);
        r->moves[c]++;
    }
    return n;
}

static void run_iteration(agent_thread_t *t)
{
    struct grain_host_agent *a = t->agent;
    grain_region_t *r = a->region;
    uint64_t words = ((uint64_t)r->plan.n_chunks + 63) / 64, left = t->owned;
    _Atomic uint64_t *ready = r->ready;
    grain_backoff_t idle = {0};
    while (left > 0 && !atomic_load_explicit(&a->give_up, memory_order_relaxed)) {
        uint64_t moved = 0;
        for (uint64_t w = t->index; w < words; w += a->n) {
            if (atomic_load_explicit(&ready[w], memory_order_relaxed) == 0)
                continue;
            moved += move_word(t, w, atomic_exchange_explicit(&ready[w], 0, memory_order_acquire));
        }
        left -= moved;
        if (moved != 0)
            grain_backoff_reset(&idle);
        else
            grain_backoff_idle(&idle);
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
    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (!a->stop && a->generation == served)
            pthread_cond_wait(&a->wake, &a->lock);
        if (a->stop)
            break;
        served = a->generation;
        pthread_mutex_unlock(&a->lock);
        run_iteration(t);
        pthread_mutex_lock(&a->lock);
        if (--a->busy == 0)
            pthread_cond_broadcast(&a->done);
    }
    pthread_mutex_unlock(&a->lock);
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
    pthread_cond_init(&a->wake, NULL);
    pthread_cond_init(&a->done, NULL);
    r->host = a;
    uint64_t words = ((uint64_t)r->plan.n_chunks + 63) / 64;
    for (unsigned i = 0; i < n; i++) {
        threads[i] = (agent_thread_t){.agent = a, .index = i};
        for (uint64_t w = i; w < words; w += n)
            threads[i].owned += r->plan.n_chunks - w * 64 < 64 ? r->plan.n_chunks - w * 64 : 64;
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
    pthread_mutex_lock(&a->lock);
    atomic_store_explicit(&a->give_up, 0, memory_order_relaxed);
    a->busy = a->started;
    a->generation++;
    pthread_cond_broadcast(&a->wake);
    pthread_mutex_unlock(&a->lock);
}

grain_status_t grain_host_agent_finish(grain_region_t *r, int incomplete)
{
    struct grain_host_agent *a = r->host;
    if (incomplete)
        atomic_store_explicit(&a->give_up, 1, memory_order_relaxed);
    pthread_mutex_lock(&a->lock);
    while (a->busy > 0)
        pthread_cond_wait(&a->done, &a->lock);
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
    pthread_mutex_lock(&a->lock);
    a->stop = 1;
    atomic_store_explicit(&a->give_up, 1, memory_order_relaxed);
    pthread_cond_broadcast(&a->wake);
    pthread_mutex_unlock(&a->lock);
    for (unsigned i = 0; i < a->started; i++)
        pthread_join(a->threads[i].thread, NULL);
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->wake);
    pthread_cond_destroy(&a->done);
    free(a->threads);
    free(a);
    r->host = NULL;
}
