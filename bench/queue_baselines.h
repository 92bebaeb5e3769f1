/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the queue benchmark measures grain's queue against, and the consumer
 * side it shares with it.  Message m of a run carries the words m, m+1, ...,
 * m+rows-1, so one checksum proves that every message arrived once.
 */
#ifndef GRAIN_BENCH_QUEUE_BASELINES_H
#define GRAIN_BENCH_QUEUE_BASELINES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "runtime/messages/queue_consumer.h"

/* Sum of the words of messages 0 .. messages-1 of `rows` words each. */
uint64_t bench_expected_sum(uint64_t messages, uint32_t rows);

#define BENCH_MAX_THREADS 256

/* Consumer threads draining a queue until `messages` messages (in all) have
 * come out, each with a reader of its own, as aggregators do; they read
 * every word, as an aggregator must. */
typedef struct bench_drainer {
    struct bench_drain *drain;
    grain_queue_reader_t reader;
    pthread_t thread;
} bench_drainer_t;

typedef struct bench_drain {
    uint64_t messages;
    int skip_payload; /* take and return slots without reading them: the protocol's own cost */
    unsigned threads;
    atomic_uint_fast64_t consumed;
    atomic_uint_fast64_t sum;
    bench_drainer_t drainers[BENCH_MAX_THREADS];
} bench_drain_t;

/* Returns 0 when the threads or their readers cannot be had. */
int bench_drain_start(bench_drain_t *d, grain_queue_t *q, uint64_t messages, unsigned threads,
                      int skip_payload);
/* Joins the threads; returns the sum of every word they read. */
uint64_t bench_drain_join(bench_drain_t *d);

/* CPU-only queues, producers and consumers both host threads (Gravel
 * figure 8): a single-producer/single-consumer ring with padded indices and
 * padded slots, and grain's own queue algorithm with one message per slot.
 * Each returns messages per second, or a negative value when the checksum
 * fails. */
double bench_cpu_spsc_rate(uint32_t rows, uint64_t messages);
double bench_cpu_mpmc_rate(uint32_t rows, uint64_t messages, unsigned producers, unsigned consumers);

double bench_now(void);
/* Every benchmark point is the median of three runs. */
double bench_median3(double a, double b, double c);

#endif
