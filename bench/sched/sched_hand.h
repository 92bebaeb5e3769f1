/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The scheduler's benchmarks hand-written on device endpoints' streams
 * (sched_hand.c): the baseline sched_bench measures the task scheduler
 * against, on one device or on several.
 */
#ifndef GRAIN_BENCH_SCHED_HAND_H
#define GRAIN_BENCH_SCHED_HAND_H

#include "grain/ep.h"
#include "sched_suite.h"

typedef struct sched_hand {
    const suite_t *suite;
    double *const *want; /* the host's outputs, by array */
    const char *source;  /* the kernels' */
    unsigned reps;       /* timed, after one that warms every path */
    double *seconds;     /* [reps + 1]: each repetition, over every endpoint */
    int wrong;           /* set when an output differed from want */
} sched_hand_t;

/* grain_ep_run's function (the argument a sched_hand_t): every endpoint of
 * the rank runs its share of the suite, stream s on virtual device
 * s % devices (GRAIN_EP_DEVICES 64 at most). */
grain_status_t sched_hand_endpoint(grain_cmdq_t *q, void *arg);

#endif
