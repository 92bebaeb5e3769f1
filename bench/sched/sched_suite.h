/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The scheduler's benchmarks (GrCUDA section IV-B: VEC, B&S, ML, CG, MUL),
 * each described once as arrays and kernel steps, which sched_bench.c
 * runs twice: through the task scheduler, which infers the graph, and as
 * hand-written code on the device endpoints' streams, with the streams and
 * the events between them that the description names (the hand-tuned
 * schedule).  The host runs the same steps in order for the expected
 * outputs.
 */
#ifndef GRAIN_BENCH_SCHED_SUITE_H
#define GRAIN_BENCH_SCHED_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "grain/sched.h"

#define SUITE_MAX_PARTITIONS 40
/* MUL has the most: x, then a block of A and of y for each partition. */
#define SUITE_ARRAYS (1 + 2 * SUITE_MAX_PARTITIONS)
#define SUITE_ARGS 8
#define SUITE_AFTER 4

typedef struct suite_arg {
    int array;             /* -1: a value */
    grain_access_t access; /* an array's */
    uint64_t value;
} suite_arg_t;

typedef struct suite_step {
    const char *kernel;
    size_t global;
    unsigned stream; /* the hand-written version's */
    unsigned n_after;
    unsigned after[SUITE_AFTER]; /* earlier steps on other streams it waits for */
    unsigned n_args;
    suite_arg_t args[SUITE_ARGS];
} suite_step_t;

typedef struct suite {
    const char *name;
    unsigned n_arrays;
    size_t length[SUITE_ARRAYS]; /* doubles */
    int input[SUITE_ARRAYS];     /* filled by the host before a run */
    int output[SUITE_ARRAYS];    /* read by the host after it */
    double *init[SUITE_ARRAYS];  /* inputs' contents */
    suite_step_t *steps;
    unsigned n_steps, cap_steps;
    unsigned streams; /* the hand-written version uses 0 .. streams - 1 */
    int dry;          /* lengths only, no inputs (suite_footprint) */
} suite_t;

/* Array a's bytes. */
static inline size_t suite_bytes(const suite_t *s, unsigned a)
{
    return s->length[a] * sizeof(double);
}

/* Every array's bytes. */
static inline uint64_t suite_total_bytes(const suite_t *s)
{
    uint64_t bytes = 0;
    for (unsigned a = 0; a < s->n_arrays; a++)
        bytes += suite_bytes(s, a);
    return bytes;
}

/* Returns the status of a call that failed from the function making it. */
#define SUITE_CHECK(x)                                                                                            \
    do {                                                                                                          \
        grain_status_t st_ = (x);                                                                                 \
        if (st_ != GRAIN_OK)                                                                                      \
            return st_;                                                                                           \
    } while (0)

/* The benchmark `name` ("vec", "bs", "ml", "cg", "mul") at size `n` (the
 * vectors' length; MUL and CG: the matrix's rows), MUL split into
 * `partitions` row blocks; 0, or -1 with a sentence on stderr. */
int suite_build(suite_t *s, const char *name, uint64_t n, unsigned partitions, uint64_t seed);
void suite_free(suite_t *s);
/* The size sched_bench takes without --size or --footprint, or 0 for a
 * name that is not a benchmark. */
uint64_t suite_default_size(const char *name);
/* The bytes of the benchmark's arrays at size `n`, or 0 where it has none
 * (a size or partitions suite_build refuses). */
uint64_t suite_footprint(const char *name, uint64_t n, unsigned partitions);
/* The smallest size suite_build takes. */
uint64_t suite_smallest_size(const char *name, unsigned partitions);
/* The largest size up to `most` whose arrays take at most `bytes`, rounded
 * down to a multiple of 64 where that leaves one, or 0 where even the
 * smallest takes more. */
uint64_t suite_size_for(const char *name, uint64_t bytes, unsigned partitions, uint64_t most);
/* Runs the steps on the host in order over copies of the inputs; out[a]
 * gets array a's final contents (allocated) for the outputs. */
int suite_reference(const suite_t *s, double **out);
/* Whether `got` matches `want` for array `a` (relative 1e-8: the devices
 * may contract a * b + c); names the first mismatch on stderr. */
int suite_same(const suite_t *s, unsigned a, const double *got, const double *want);

#endif
