/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grain's model "schedule": the tile scheduler of blas_run.c simulated
 * lane by lane, in the order it issues the tiles (C column by column, each
 * A and B tile copied at its first use, BLAS_C_SLOTS slots of C, C back
 * after its last K step; axpy's slots of x and y).  Each lane runs its
 * copies or kernels in order once their waits are done, the copies costing
 * their operand's path's link (t_i + t_b bytes, as a 2-D tile copy costs
 * with the operand's leading dimension where the link's tile copies were
 * deployed; slowed by sl while the other
 * direction copies, and for gemm by the deployed factor while a kernel
 * runs), the kernels the lookup's time scaled to the tile's elements.
 * Eq. 5 and dr-link count tiles; this follows the order, which decides how
 * long the kernels wait for the copies: with A on the host, the first
 * column of C needs all of A's tiles (docs/blas.md).
 */
#ifndef GRAIN_RUNTIME_BLAS_BLAS_SIM_H
#define GRAIN_RUNTIME_BLAS_BLAS_SIM_H

#include <stddef.h>

#include "runtime/blas/blas_model.h"

/* Subproblems past which the simulation declines (its plan would take
 * 5 x 32 bytes a subproblem): NAN then. */
#define BLAS_SIM_STEPS_MAX (1u << 18)

/* Seconds for `s` in tiles of `tile` whose kernel takes t_gpu (a full
 * tile's), or NAN past BLAS_SIM_STEPS_MAX or without memory. */
double blas_simulate(const blas_machine_t *m, const blas_shape_t *s, size_t tile, double t_gpu);

#endif
