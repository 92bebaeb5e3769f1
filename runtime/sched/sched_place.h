/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where the scheduler's arrays are valid, and which device an element runs
 * on (GrCUDA, sections III-B1 to III-B3).
 *
 * Locations: 0 is the host, 1 .. n - 1 the devices.  Coherence is kept per
 * whole array, MSI-like: a write at a location leaves it the only valid
 * copy; a read adds the location to the valid ones (after a copy from one of
 * them).
 *
 * The policies pick a device among `candidates` (the devices of an
 * element's parents when it has any, else all):
 *   round-robin            the next device in turn;
 *   stream-aware           the fewest busy streams;
 *   min-transfer-size      the fewest bytes to copy in;
 *   min-max-transfer-time  the least time to copy in, each missing array
 *                          from its slowest valid location:
 *                          sum_a S_a / min_{i valid for a} B_ij, an array
 *                          valid at j costing nothing.
 * The two data-aware ones consider only the devices that hold some of the
 * bytes the element reads and at least `threshold` of them (exploration:
 * the first devices used would otherwise take everything); with none, as
 * for an element that reads nothing, they fall back to round-robin.  Ties
 * go to the lowest device.
 */
#ifndef GRAIN_RUNTIME_SCHED_SCHED_PLACE_H
#define GRAIN_RUNTIME_SCHED_SCHED_PLACE_H

#include <stddef.h>
#include <stdint.h>

#define SCHED_HOST 0u
#define SCHED_MAX_LOCATIONS 64u

typedef uint64_t sched_where_t; /* bit l: valid at location l */

static inline sched_where_t sched_after_read(sched_where_t where, unsigned location)
{
    return where | (sched_where_t)1 << location;
}

static inline sched_where_t sched_after_write(sched_where_t where, unsigned location)
{
    (void)where;
    return (sched_where_t)1 << location;
}

typedef enum sched_policy {
    SCHED_ROUND_ROBIN,
    SCHED_STREAM_AWARE,
    SCHED_MIN_TRANSFER_SIZE,
    SCHED_MIN_MAX_TRANSFER_TIME,
} sched_policy_t;

/* An element's arrays as placement sees them: only those it reads need
 * their bytes where it runs. */
typedef struct sched_need {
    uint64_t bytes;
    sched_where_t where;
    int read;
} sched_need_t;

typedef struct sched_topology {
    unsigned locations;  /* host and devices */
    const double *bw;    /* locations x locations, bytes a second, bw[i * locations + j] */
} sched_topology_t;

/* Bytes of `needs` that location `l` must copy in. */
uint64_t sched_bytes_missing(const sched_need_t *needs, size_t n, unsigned l);
/* Seconds to copy them in, each from its slowest valid location. */
double sched_transfer_time(const sched_topology_t *t, const sched_need_t *needs, size_t n, unsigned l);

/* The location to copy an array valid at `where` (not 0) from into `to`:
 * one whose copy is `filled` before one still being filled, then the
 * fastest by the matrix (a device that does not reach `to` counts as its
 * two hops through the host); without the matrix (t->bw NULL), the lowest.
 * A copy from a location still being filled waits for the whole element
 * that fills it: fastest alone sent MUL's vector x to its second block's
 * device from the first block's, whose copy of a quarter of A it then
 * waited for, and two H200s ran MUL at 0.62 of the hand-written version. */
unsigned sched_copy_from(const sched_topology_t *t, sched_where_t where, sched_where_t filled, unsigned to);

typedef struct sched_choice {
    sched_policy_t policy;
    sched_where_t candidates; /* devices allowed: bits 1 .. locations - 1 */
    const unsigned *busy;     /* busy streams per location (stream-aware) */
    double threshold;         /* of the element's bytes (data-aware) */
    unsigned *next;           /* round-robin's turn, kept by the caller */
} sched_choice_t;

/* The device for an element with `needs`; 0 when no candidate is a device. */
unsigned sched_choose(const sched_topology_t *t, const sched_choice_t *c, const sched_need_t *needs, size_t n);

#endif
