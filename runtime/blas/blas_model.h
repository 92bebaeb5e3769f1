/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The offload-time models of tiled BLAS ("CoCoPeLia: Communication-
 * Computation Overlap Prediction for Efficient Linear Algebra on GPUs",
 * section III): how long a routine whose operands start on the host or on
 * the device takes when it is split into T-sized tiles whose host-to-device
 * copies, kernels and device-to-host copies overlap (3-way concurrency).
 *
 * A routine is described by its dimensions D1 [, D2, D3] and its operands,
 * each S1 x S2 elements with flags get (copied in) and set (copied out).
 * A tile is T elements (level 1) or T x T (level 3); k subproblems, each
 * dimension rounded up.  Per tile, t_h2d and t_d2h come from the machine's
 * latency-bandwidth links (t_i + t_b bytes, a slowdown sl when the other
 * direction runs too) and t_GPU from the kernel's lookup table.
 *
 * The paper has one pair of links.  grain's host operands cross two ways:
 * pageable memory as the routines copy it (through a pinned staging where
 * the backend stages), and page-locked memory by the device's DMA alone.
 * Each operand's copies cost its own path's link; a sum of copies over
 * operands is a flow, its seconds alone and slowed by each part's sl.
 * With one path the models are the paper's as written.
 *
 *   baseline  eq. 1: every operand in and out:
 *             max(t_GPU, opd t_h2d, opd t_d2h)(k - 1) + opd t_h2d + t_GPU + opd t_d2h
 *   dataloc   eq. 2: eq. 1 with t_in = sum get t_h2d, t_out = sum set t_d2h
 *   bts       eq. 4: max(t_GPU, t_over)(k - 1) + t_in + t_GPU + t_out, with
 *             t_over from eq. 3: the copies both ways overlapped, each
 *             slowed by sl while the other runs, the rest of the longer
 *             one at full speed (of a flow over paths: the rest's share
 *             of its slowed seconds at the flow's mean speed alone)
 *   dr        eq. 5 (level 3, data reuse): each tile copied once,
 *             k_in = sum get (tiles - 1) subproblems that copy a tile in:
 *             max(t_h2d, t_GPU) k_in + t_GPU (k - k_in) + t_in + t_out
 *   dr-link   grain's: eq. 5's reuse on a scheduler whose lanes run
 *             ahead, and C's tiles going back before the last counted on
 *             the link too: K_in = sum get (tiles - 1), K_out = sum set
 *             (tiles - 1), L = t_over(K_in t_h2d, K_out t_d2h) by eq. 3:
 *             t_in + max(L, t_GPU (k - 1)) + t_GPU + t_out.  With
 *             K_out = 0 and the link the bottleneck it is eq. 5 less the
 *             waits eq. 5 puts between its steps.
 *   schedule  grain's: its tile scheduler simulated lane by lane
 *             (blas_sim.h); dr-link's time where the simulation declines
 *   cso       the CUDA-stream overlap model with two copy engines
 *             ("Performance models for CPU-GPU data transfers", van
 *             Werkhoven et al.), the baseline the paper compares with:
 *             whichever of the three stages dominates runs whole, with a
 *             latency per extra stream, and the other two a stream's share.
 *
 * The paper writes k_in as sum(get_i tiles_i - 1); read literally, an
 * operand already on the device would count -1.  What it counts is the
 * tiles copied after the first subproblem's, sum get_i (tiles_i - 1),
 * which is what this uses.
 */
#ifndef GRAIN_RUNTIME_BLAS_BLAS_MODEL_H
#define GRAIN_RUNTIME_BLAS_BLAS_MODEL_H

#include <stddef.h>

/* Tiles of C (of x and y for axpy) in flight in the tile scheduler
 * (blas_run.c), which blas_sim.c follows: one filled, one computed, one
 * going back. */
#define BLAS_C_SLOTS 3u

typedef enum blas_model {
    BLAS_MODEL_CSO,
    BLAS_MODEL_BASELINE,
    BLAS_MODEL_DATALOC,
    BLAS_MODEL_BTS,
    BLAS_MODEL_DR,
    BLAS_MODEL_DR_LINK,
    BLAS_MODEL_SCHEDULE,
    BLAS_MODELS,
} blas_model_t;

/* The models' names, for the sentences that list them. */
#define BLAS_MODEL_NAMES "cso, baseline, dataloc, bts, dr, dr-link or schedule"

/* The model named `name` (grain_blas_model_name's), or -1. */
int blas_model_named(const char *name);

/* A link's tile copies as the routines make them, by tile side T and the
 * host matrix's leading dimension ld, where deployed: seconds for a T x T
 * tile of doubles whose columns lie ld apart, alone (a 2-D copy; slower
 * than one contiguous copy of its bytes at some T and ld) and while the
 * tile kernel of T runs (a kernel slows the link; the paper's models have
 * no such term).  On an H200 both effects appear only once the columns lie
 * 64 KiB apart or more (docs/blas.md), so the pitch is part of the key.
 * Ascending by T, then ld; n == 0: none deployed. */
typedef struct blas_tile_copies {
    size_t n;
    const size_t *tile, *ld;
    const double *alone, *beside;
} blas_tile_copies_t;

/* One direction of the host-device link. */
typedef struct blas_link {
    double t_i; /* seconds a copy costs whatever its size */
    double t_b; /* seconds a byte */
    double sl;  /* slowdown while the other direction copies too (>= 1) */
    blas_tile_copies_t tiles; /* for the model "schedule" (blas_sim.h) */
} blas_link_t;

/* How a host operand crosses: as the routines copy pageable memory, or
 * straight from page-locked memory by the device's DMA. */
enum { BLAS_PATH_HOST, BLAS_PATH_PINNED, BLAS_PATHS };

typedef struct blas_links {
    blas_link_t h2d, d2h;
} blas_links_t;

typedef struct blas_machine {
    blas_links_t path[BLAS_PATHS];
} blas_machine_t;

/* Where blas_shape_*'s operands are: on the device (never copied), or on
 * the host by path. */
enum { BLAS_ON_DEVICE, BLAS_ON_HOST, BLAS_ON_PINNED };

typedef struct blas_operand {
    size_t s1, s2;
    size_t ld; /* elements between its columns on the host (s1 by default) */
    int get, set;
    unsigned path; /* BLAS_PATH_*; the host's for an operand on the device */
} blas_operand_t;

/* Copies one way: their seconds alone, and while the other way copies. */
typedef struct blas_flow {
    double alone, both;
} blas_flow_t;

typedef struct blas_shape {
    unsigned level; /* 1 or 3 */
    size_t d[3];    /* D1 [, D2, D3] */
    size_t dtype;   /* bytes an element */
    unsigned opd;
    blas_operand_t op[3];
} blas_shape_t;

/* y = a x + y of n elements; each vector BLAS_ON_*. */
void blas_shape_axpy(blas_shape_t *s, size_t n, size_t dtype, int x_on, int y_on);
/* C = alpha A B + beta C with C m x n and k inner: A m x k, B k x n, each
 * BLAS_ON_*.  C is copied in only where beta is not 0 (else the kernel
 * never reads it). */
void blas_shape_gemm(blas_shape_t *s, size_t m, size_t n, size_t k, size_t dtype, int a_on, int b_on, int c_on,
                     int beta_zero);

/* Subproblems of tile T, and tiles of operand i. */
double blas_subproblems(const blas_shape_t *s, size_t tile);
double blas_operand_tiles(const blas_shape_t *s, unsigned i, size_t tile);
/* Seconds to copy one tile of operand i one way. */
double blas_tile_copy(const blas_link_t *l, const blas_shape_t *s, unsigned i, size_t tile);
/* Eq. 3: copies in and out overlapped both ways. */
double blas_overlap(blas_flow_t in, blas_flow_t out);
/* A flow of `seconds` on link `l`. */
static inline blas_flow_t blas_flow(const blas_link_t *l, double seconds)
{
    return (blas_flow_t){seconds, seconds * l->sl};
}
/* The offload time by `model` with tile T, whose kernel takes t_gpu
 * seconds (the lookup's for T). */
double blas_predict(blas_model_t model, const blas_machine_t *m, const blas_shape_t *s, size_t tile, double t_gpu);

#endif
