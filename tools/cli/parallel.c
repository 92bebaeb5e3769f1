/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE /* sched_getaffinity */
#include "tools/cli/parallel.h"

#include <pthread.h>
#include <sched.h>

unsigned cli_parallel_parts(uint64_t n, uint64_t min_each)
{
    cpu_set_t set;
    unsigned cores = sched_getaffinity(0, sizeof set, &set) == 0 ? (unsigned)CPU_COUNT(&set) : 1;
    uint64_t most = min_each > 0 ? n / min_each : n;
    unsigned parts = cores < CLI_PARALLEL_MAX ? cores : CLI_PARALLEL_MAX;
    return most < parts ? (most > 0 ? (unsigned)most : 1) : parts;
}

typedef struct range {
    void (*fn)(void *ctx, unsigned part, uint64_t first, uint64_t last);
    void *ctx;
    unsigned part;
    uint64_t first, last;
    pthread_t thread;
} range_t;

static void *run_range(void *arg)
{
    range_t *r = arg;
    r->fn(r->ctx, r->part, r->first, r->last);
    return NULL;
}

void cli_parallel_run(uint64_t n, unsigned parts, void (*fn)(void *ctx, unsigned part, uint64_t first, uint64_t last),
                      void *ctx)
{
    range_t r[CLI_PARALLEL_MAX];
    parts = parts < 1 ? 1 : parts > CLI_PARALLEL_MAX ? CLI_PARALLEL_MAX : parts;
    for (unsigned t = 0; t < parts; t++) {
        r[t] = (range_t){fn, ctx, t, n * t / parts, n * (t + 1) / parts, pthread_self()};
        if (t > 0 && pthread_create(&r[t].thread, NULL, run_range, &r[t]) != 0)
            r[t].thread = pthread_self();
    }
    for (unsigned t = 0; t < parts; t++) {
        if (pthread_equal(r[t].thread, pthread_self()))
            run_range(&r[t]);
        else
            pthread_join(r[t].thread, NULL);
    }
}

void cli_parallel_for(uint64_t n, uint64_t min_each,
                      void (*fn)(void *ctx, unsigned part, uint64_t first, uint64_t last), void *ctx)
{
    cli_parallel_run(n, cli_parallel_parts(n, min_each), fn, ctx);
}
