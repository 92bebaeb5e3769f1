/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The task scheduler over a rank's devices, after "Taming Multi-GPU Greedy
 * Scheduling Through a Polyglot Runtime" (GrCUDA), section III.
 *
 * A rank opens a set of devices (GRAIN_SCHED_DEVICES), allocates arrays
 * that grain keeps coherent across the host and the devices, and launches
 * plain kernels whose array arguments say how they are used (GRAIN_READ,
 * GRAIN_WRITE).  grain infers the dependencies from those arguments, runs
 * independent kernels at once on the devices a policy picks, on streams of
 * their own, and copies each array to where it is read: the results equal
 * those of running every launch in order on one device (GRAIN_SCHED=serial,
 * the oracle).  GRAIN_SCHED_MEMORY says where arrays live: replicas (a
 * host copy and one on each device that uses the array) or, on CUDA and
 * HIP, managed (one allocation of managed memory, which the same pointer
 * reaches everywhere and the scheduler prefetches where it is read).
 * docs/scheduler.md says how.
 *
 * A scheduler belongs to the thread that created it: calls from others are
 * not supported.  Dependencies between streams are resolved by the host
 * whenever that thread calls the scheduler (a launch, a host access, a
 * wait), as MPI progresses in its calls: a kernel whose parents run on
 * other streams starts on the first call after they end.
 */
#ifndef GRAIN_SCHED_H
#define GRAIN_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "grain/grain.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

typedef struct grain_sched grain_sched_t;
typedef struct grain_array grain_array_t;

/* Which device an element with no parents runs on, and which of its
 * parents' devices one with parents runs on (GrCUDA III-B3). */
typedef enum grain_policy {
    GRAIN_POLICY_ROUND_ROBIN,           /* the next device in turn */
    GRAIN_POLICY_STREAM_AWARE,          /* the fewest busy streams */
    GRAIN_POLICY_MIN_TRANSFER_SIZE,     /* the fewest bytes to copy in */
    GRAIN_POLICY_MIN_MAX_TRANSFER_TIME, /* the least time to copy in, each array from its slowest holder */
} grain_policy_t;

/* "round-robin", "stream-aware", "min-transfer-size", "min-max-transfer-time". */
const char *grain_policy_name(grain_policy_t policy);
/* GRAIN_ERR_INVALID, naming the policies, for any other name. */
grain_status_t grain_policy_parse(const char *name, grain_policy_t *policy_p);

typedef enum grain_access {
    GRAIN_READ = 1,
    GRAIN_WRITE = 2,
    GRAIN_READ_WRITE = 3,
} grain_access_t;

/* Opens the scheduler's devices: GRAIN_SCHED_DEVICES of them (0: every
 * device of the backend on this node; more than there are share them, which
 * tests the logic of several devices on one), the rank's own first when a
 * node has several ranks.  GRAIN_SCHED=serial runs everything in order on
 * the first device, on one stream, waiting for each element. */
grain_status_t grain_sched_create(grain_t *grain, grain_policy_t policy, grain_sched_t **sched_p);
/* Waits for everything launched, then frees the scheduler, its programs,
 * kernels and arrays. */
void grain_sched_destroy(grain_sched_t *sched);
/* Devices the scheduler places work on (1 under GRAIN_SCHED=serial). */
unsigned grain_sched_devices(const grain_sched_t *sched);

/* `bytes` (at least 1) that the host and every device may hold a copy of;
 * its contents are zero until written. */
grain_status_t grain_array_create(grain_sched_t *sched, size_t bytes, grain_array_t **array_p);
/* Waits for the kernels that use the array, then frees it; a kernel whose
 * argument names it must have that argument set again before its next
 * launch. */
void grain_array_destroy(grain_array_t *array);
size_t grain_array_bytes(const grain_array_t *array);
/* The host's copy, for `access`: waits for the kernels the access must
 * follow (a read: the last writer; a write: every user) and brings the
 * latest contents to the host.  The pointer stays valid while the array
 * lives; the access lasts until the next call of the scheduler, and a
 * host write must be declared (GRAIN_WRITE or GRAIN_READ_WRITE) for the
 * devices to see it. */
grain_status_t grain_array_host(grain_array_t *array, grain_access_t access, void **ptr_p);
/* Copies the array to `device` (0 .. grain_sched_devices() - 1; -1: the
 * host) ahead of the kernels that will read it there, without waiting;
 * under managed memory, migrates it there. */
grain_status_t grain_array_prefetch(grain_array_t *array, int device);

/* Where the driver keeps an array's pages (GrCUDA III-A: MemAdvise as an
 * element of the graph). */
typedef enum grain_advice {
    GRAIN_ADVISE_READ_MOSTLY,        /* each device that reads it keeps a copy of its own until it is written */
    GRAIN_ADVISE_PREFERRED_LOCATION, /* its pages stay at `device` (-1: the host); others reach them there */
    GRAIN_ADVISE_ACCESSED_BY,        /* `device` keeps them mapped wherever they lie, reading them without faults */
} grain_advice_t;

/* Sets (`set` 1) or clears (0) `advice` on the array for `device` (-1: the
 * host; READ_MOSTLY, which names no place, ignores it, though it must be
 * one), once the kernels it follows as a read are done (its last writer);
 * returns without waiting.  Under managed
 * memory the driver takes it (cudaMemAdvise, hipMemAdvise); replicas
 * already keep a copy on each device that reads an array and have no
 * pages to place, so there it only takes its place in the graph. */
grain_status_t grain_array_advise(grain_array_t *array, grain_advice_t advice, int device, int set);

/* A program built for every device of the scheduler from source written
 * once for every backend (grain/device/port.h), `options` (may be NULL)
 * passed to its compiler.  Its kernels are plain: their arguments start at
 * index 0 (no grain device context); grain_kernel_create,
 * grain_kernel_set_arg, grain_kernel_destroy and grain_program_destroy take
 * them, grain_launch and grain_kernel_set_arg_ptr refuse them. */
grain_status_t grain_sched_program_create(grain_sched_t *sched, const char *source, const char *options,
                                          grain_program_t **program_p);
/* Argument `index` of a scheduler kernel is `array`, used as `access` says:
 * the device address of its copy wherever the kernel runs. */
grain_status_t grain_kernel_set_arg_array(grain_kernel_t *kernel, unsigned index, grain_array_t *array,
                                          grain_access_t access);
/* Launches a scheduler kernel with the arguments set now (later calls may
 * set others), after every launch and host access it depends on; returns
 * without waiting.  `local` may be NULL: work-groups of the largest
 * divisor of global[0] up to 256 (and the device's limit). */
grain_status_t grain_sched_launch(grain_kernel_t *kernel, unsigned dims, const size_t *global, const size_t *local);
/* Waits for every launch; returns the first error of one since the last
 * wait (and those of its dependents, which do not run). */
grain_status_t grain_sched_wait(grain_sched_t *sched);

/* BLAS calls as elements (GrCUDA III-A), with grain/blas.h's semantics on
 * arrays that hold the operands from their first byte: column-major,
 * leading dimensions at least the rows they hold, 'N' or 'T' ('C' is 'T'),
 * beta == 0 never reading C.  A and B are read and C read and written
 * (only written where beta is 0 and C's m x n elements fill its array),
 * so a call is ordered, placed and fed as a kernel with those arguments,
 * and returns without waiting.  Each array must hold what its dimensions
 * say, and C may be neither A nor B.  grain's own kernels run them on
 * every backend, a work-item an element of C. */
grain_status_t grain_sched_dgemm(grain_sched_t *sched, char transa, char transb, size_t m, size_t n, size_t k,
                                 double alpha, grain_array_t *a, size_t lda, grain_array_t *b, size_t ldb,
                                 double beta, grain_array_t *c, size_t ldc);
grain_status_t grain_sched_sgemm(grain_sched_t *sched, char transa, char transb, size_t m, size_t n, size_t k,
                                 float alpha, grain_array_t *a, size_t lda, grain_array_t *b, size_t ldb, float beta,
                                 grain_array_t *c, size_t ldc);
/* y = alpha x + y over n elements, incx and incy (positive) apart; y may
 * not be x. */
grain_status_t grain_sched_daxpy(grain_sched_t *sched, size_t n, double alpha, grain_array_t *x, size_t incx,
                                 grain_array_t *y, size_t incy);
grain_status_t grain_sched_saxpy(grain_sched_t *sched, size_t n, float alpha, grain_array_t *x, size_t incx,
                                 grain_array_t *y, size_t incy);

/* The bandwidth matrix the min-max-transfer-time policy uses, in GB/s:
 * (devices + 1) x (devices + 1), from location i (0: the host, 1 + d:
 * device d) to location j at gbps[i * (devices + 1) + j], the diagonal
 * 0 (no copy).  Measured once a scheduler when first needed; `measure`
 * measures again.  `gbps` may be NULL (measure only). */
grain_status_t grain_sched_bandwidth(grain_sched_t *sched, int measure, double *gbps);
/* The elements so far as a Graphviz digraph: one node per kernel, host
 * access or prefetch with its device, stream and bytes copied in, one edge
 * per dependency. */
grain_status_t grain_sched_export_dot(grain_sched_t *sched, FILE *out);

/* What the scheduler did since it was created; the rank's statistics
 * (grain_stats_json's "sched", GRAIN_STATS) sum every scheduler's. */
typedef struct grain_sched_stats {
    uint64_t elements;         /* kernels, host accesses and prefetches */
    uint64_t edges;            /* dependencies the graph holds */
    uint64_t bytes_copied;     /* into every location, the host's included */
    uint64_t bytes_peer;       /* of those, copied straight from one device to another */
    uint64_t copies;
    uint64_t per_device[64];   /* kernels each device ran (GRAIN_SCHED_DEVICES is at most 63) */
    unsigned streams_used;     /* streams that ran anything, over the devices */
    uint64_t vendor_gemms;     /* gemm elements the devices' vendor BLAS ran (the others ran grain's kernel) */
} grain_sched_stats_t;
grain_status_t grain_sched_stats(const grain_sched_t *sched, grain_sched_stats_t *stats);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
