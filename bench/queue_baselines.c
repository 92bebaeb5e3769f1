/* SPDX-License-Identifier: BSD-3-Clause */
#include "bench/queue_baselines.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LINE 64u

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double bench_median3(double a, double b, double c)
{
    return a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
}

uint64_t bench_expected_sum(uint64_t messages, uint32_t rows)
{
    /* sum over m of (rows*m + rows*(rows-1)/2), in the wrapping arithmetic
     * of the checksum */
    uint64_t m = messages, r = rows;
    uint64_t pairs = m % 2 == 0 ? (m / 2) * (m - 1) : m * ((m - 1) / 2);
    return r * pairs + m * (r * (r - 1) / 2);
}

/* A thread adds what it drained to the shared count only when it finds
 * nothing to take: a shared counter bumped per slot, one contended line among
 * all the threads, held eight drainers to 31 GB/s of 32-byte messages from an
 * H100; with private counts they took 40. */
static void *drain_thread(void *arg)
{
    bench_drainer_t *me = arg;
    bench_drain_t *d = me->drain;
    grain_queue_t *q = me->reader.q;
    grain_u32 rows = q->geom.rows, width = q->geom.width;
    uint64_t sum = 0, drained = 0;
    for (;;) {
        grain_queue_slot_t s = {0, 0};
        if (!grain_queue_take(&me->reader, &s)) {
            if (drained != 0)
                atomic_fetch_add_explicit(&d->consumed, drained, memory_order_relaxed);
            drained = 0;
            if (atomic_load_explicit(&d->consumed, memory_order_relaxed) >= d->messages)
                break;
            continue;
        }
        while (!grain_queue_is_full(q, s)) {
        }
        const grain_u64 *p = grain_queue_slot_payload(q, s);
        grain_u32 n = grain_queue_count(q, s);
        for (grain_u32 r = 0; r < rows && !d->skip_payload; r++)
            for (grain_u32 c = 0; c < n; c++)
                sum += p[(size_t)r * width + c];
        grain_queue_done(&me->reader, s);
        drained += n;
    }
    atomic_fetch_add(&d->sum, sum);
    return NULL;
}

int bench_drain_start(bench_drain_t *d, grain_queue_t *q, uint64_t messages, unsigned threads,
                      int skip_payload)
{
    if (threads < 1 || threads > BENCH_MAX_THREADS)
        return 0;
    d->messages = messages;
    d->skip_payload = skip_payload;
    d->threads = 0;
    atomic_init(&d->consumed, 0);
    atomic_init(&d->sum, 0);
    for (unsigned i = 0; i < threads; i++) {
        bench_drainer_t *t = &d->drainers[i];
        t->drain = d;
        if (!grain_queue_reader_init(&t->reader, q, i, threads) ||
            pthread_create(&t->thread, NULL, drain_thread, t) != 0) {
            grain_queue_reader_destroy(&t->reader);
            atomic_store(&d->consumed, messages); /* stops the ones started */
            bench_drain_join(d);
            return 0;
        }
        d->threads++;
    }
    return 1;
}

uint64_t bench_drain_join(bench_drain_t *d)
{
    for (unsigned i = 0; i < d->threads; i++) {
        pthread_join(d->drainers[i].thread, NULL);
        grain_queue_reader_destroy(&d->drainers[i].reader);
    }
    d->threads = 0;
    return atomic_load(&d->sum);
}

static void *alloc_zeroed(size_t bytes)
{
    bytes = (bytes + LINE - 1) / LINE * LINE;
    void *p = aligned_alloc(LINE, bytes);
    if (p != NULL)
        memset(p, 0, bytes);
    return p;
}

/* ---- SPSC: Lamport's ring, each index and each slot on lines of its own ---- */

typedef struct spsc {
    _Alignas(LINE) atomic_uint_fast64_t head; /* written by the producer */
    _Alignas(LINE) atomic_uint_fast64_t tail; /* written by the consumer */
    _Alignas(LINE) uint32_t nslots, rows;
    size_t stride;
    unsigned char *slots;
    uint64_t messages, sum;
} spsc_t;

static void *spsc_produce(void *arg)
{
    spsc_t *s = arg;
    for (uint64_t m = 0; m < s->messages; m++) {
        while (m - atomic_load_explicit(&s->tail, memory_order_acquire) == s->nslots) {
        }
        uint64_t *p = (uint64_t *)(s->slots + (m % s->nslots) * s->stride);
        for (uint32_t r = 0; r < s->rows; r++)
            p[r] = m + r;
        atomic_store_explicit(&s->head, m + 1, memory_order_release);
    }
    return NULL;
}

static void *spsc_consume(void *arg)
{
    spsc_t *s = arg;
    uint64_t sum = 0;
    for (uint64_t m = 0; m < s->messages; m++) {
        while (atomic_load_explicit(&s->head, memory_order_acquire) == m) {
        }
        const uint64_t *p = (const uint64_t *)(s->slots + (m % s->nslots) * s->stride);
        for (uint32_t r = 0; r < s->rows; r++)
            sum += p[r];
        atomic_store_explicit(&s->tail, m + 1, memory_order_release);
    }
    s->sum = sum;
    return NULL;
}

double bench_cpu_spsc_rate(uint32_t rows, uint64_t messages)
{
    spsc_t *s = alloc_zeroed(sizeof *s);
    if (s == NULL)
        return -1;
    s->nslots = 256;
    s->rows = rows;
    s->stride = ((size_t)rows * 8 + LINE - 1) / LINE * LINE;
    s->messages = messages;
    s->slots = alloc_zeroed(s->nslots * s->stride);
    if (s->slots == NULL) {
        free(s);
        return -1;
    }
    pthread_t p, c;
    double t0 = bench_now();
    pthread_create(&c, NULL, spsc_consume, s);
    pthread_create(&p, NULL, spsc_produce, s);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    double rate = (double)messages / (bench_now() - t0);
    if (s->sum != bench_expected_sum(messages, rows))
        rate = -1;
    free(s->slots);
    free(s);
    return rate;
}

/* ---- MPMC: the paper's queue algorithm, one CPU thread's message per slot ---- */

typedef struct mpmc_producer {
    grain_queue_desc_t *d;
    uint64_t first, end;
} mpmc_producer_t;

static void *mpmc_produce(void *arg)
{
    mpmc_producer_t *a = arg;
    grain_queue_t *q = a->d->shared;
    const grain_queue_geom_t *g = &a->d->geom;
    for (uint64_t m = a->first; m < a->end; m++) {
        grain_u64 t = grain_queue_reserve_paper(a->d, 1);
        grain_u64 *p = grain_queue_payload(q, g, 0, t);
        for (grain_u32 r = 0; r < g->rows; r++)
            p[r] = m + r;
        grain_queue_publish(q, g, 0, t, 1);
    }
    return NULL;
}

double bench_cpu_mpmc_rate(uint32_t rows, uint64_t messages, unsigned producers, unsigned consumers)
{
    if (producers < 1 || producers > BENCH_MAX_THREADS)
        return -1;
    grain_queue_geom_t g = grain_queue_geom(GRAIN_QUEUE_PAPER, 1, 256, 1, rows);
    grain_queue_t *q = alloc_zeroed(grain_queue_bytes(g));
    bench_drain_t drain;
    if (q == NULL)
        return -1;
    grain_queue_init(q, g);
    grain_ring_prod_t prod = {0};
    grain_queue_desc_t d = {q, &prod, g};
    mpmc_producer_t args[BENCH_MAX_THREADS];
    pthread_t pt[BENCH_MAX_THREADS];
    double t0 = bench_now();
    if (!bench_drain_start(&drain, q, messages, consumers, 0)) {
        free(q);
        return -1;
    }
    for (unsigned i = 0; i < producers; i++) {
        args[i] = (mpmc_producer_t){&d, messages * i / producers, messages * (i + 1) / producers};
        pthread_create(&pt[i], NULL, mpmc_produce, &args[i]);
    }
    for (unsigned i = 0; i < producers; i++)
        pthread_join(pt[i], NULL);
    uint64_t sum = bench_drain_join(&drain);
    double rate = (double)messages / (bench_now() - t0);
    if (sum != bench_expected_sum(messages, rows))
        rate = -1;
    free(q);
    return rate;
}
