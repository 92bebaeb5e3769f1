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

uint64_t bench_expected_sum(uint64_t messages, uint32_t rows)
{
    /* sum over m of (rows*m + rows*(rows-1)/2), in the wrapping arithmetic
     * of the checksum */
    uint64_t m = messages, r = rows;
    uint64_t pairs = m % 2 == 0 ? (m / 2) * (m - 1) : m * ((m - 1) / 2);
    return r * pairs + m * (r * (r - 1) / 2);
}

void *bench_drain_thread(void *arg)
{
    bench_drain_t *d = arg;
    grain_queue_t *q = d->q;
    uint64_t sum = 0;
    while (atomic_load_explicit(&d->consumed, memory_order_relaxed) < d->messages) {
        grain_u64 t;
        if (!grain_queue_try_claim(q, &t))
            continue;
        while (!grain_queue_is_full(q, t)) {
        }
        const grain_u64 *p = grain_queue_payload(q, t);
        grain_u32 n = grain_queue_count(q, t);
        for (grain_u32 r = 0; r < q->rows; r++)
            for (grain_u32 c = 0; c < n; c++)
                sum += p[(size_t)r * q->width + c];
        grain_queue_release(q, t);
        atomic_fetch_add_explicit(&d->consumed, n, memory_order_relaxed);
    }
    atomic_fetch_add(&d->sum, sum);
    return NULL;
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

/* ---- MPMC: grain's queue algorithm, one CPU thread's message per slot ---- */

typedef struct mpmc_producer {
    grain_queue_t *q;
    uint64_t first, end;
} mpmc_producer_t;

static void *mpmc_produce(void *arg)
{
    mpmc_producer_t *a = arg;
    grain_u32 rows = a->q->rows;
    for (uint64_t m = a->first; m < a->end; m++) {
        grain_u64 t = grain_queue_reserve(a->q);
        grain_u64 *p = grain_queue_payload(a->q, t);
        for (grain_u32 r = 0; r < rows; r++)
            p[r] = m + r;
        grain_queue_publish(a->q, t, 1);
    }
    return NULL;
}

#define MAX_THREADS 256

double bench_cpu_mpmc_rate(uint32_t rows, uint64_t messages, unsigned producers, unsigned consumers)
{
    if (producers < 1 || producers > MAX_THREADS || consumers < 1 || consumers > MAX_THREADS)
        return -1;
    grain_queue_t *q = alloc_zeroed(grain_queue_bytes(256, 1, rows));
    if (q == NULL)
        return -1;
    grain_queue_init(q, 256, 1, rows);
    bench_drain_t drain = {.q = q, .messages = messages};
    mpmc_producer_t args[MAX_THREADS];
    pthread_t pt[MAX_THREADS], ct[MAX_THREADS];
    double t0 = bench_now();
    for (unsigned i = 0; i < consumers; i++)
        pthread_create(&ct[i], NULL, bench_drain_thread, &drain);
    for (unsigned i = 0; i < producers; i++) {
        args[i] = (mpmc_producer_t){q, messages * i / producers, messages * (i + 1) / producers};
        pthread_create(&pt[i], NULL, mpmc_produce, &args[i]);
    }
    for (unsigned i = 0; i < producers; i++)
        pthread_join(pt[i], NULL);
    for (unsigned i = 0; i < consumers; i++)
        pthread_join(ct[i], NULL);
    double rate = (double)messages / (bench_now() - t0);
    if (atomic_load(&drain.sum) != bench_expected_sum(messages, rows))
        rate = -1;
    free(q);
    return rate;
}
