/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the two formulations of build/bin/pagerank share: the options, the
 * result and the fixed point that shares travel in.
 *
 *   push (pagerank.c)         every rank adds its vertices' shares to their
 *                             out-neighbours' owners through grain messages
 *   replicated (replicated.c) every rank holds the whole vector of shares and
 *                             pulls over in-edges; its new slice reaches the
 *                             other ranks by counter-triggered transfers
 *                             (--agent, ProACT)
 */
#ifndef GRAIN_GRAPHAPPS_PAGERANK_H
#define GRAIN_GRAPHAPPS_PAGERANK_H

#include <math.h>
#include <stdint.h>

#include "../common/graph_app.h"
#include "../common/model.h"
#include "grain/grain.h"

#define FIXED_ONE 4503599627370496.0 /* 2^52 units to a unit of rank */

typedef struct pr_options {
    app_input_t input;
    double damping, tolerance;
    unsigned long long iterations; /* 0: until the tolerance, at most max_iterations */
    unsigned long long max_iterations;
    int replicated; /* --agent given */
    grain_agent_t agent;
    app_model_options_t model;
    app_common_t common;
} pr_options_t;

typedef struct pr_result {
    unsigned long long iterations;
    int converged;
    double last_error;
    app_timing_t timing;
    /* replicated only */
    double checksum; /* sum of x[v] * (v % 97 + 1) over all v, in vertex order */
    grain_region_stats_t transfers; /* the two regions' moves and bytes, summed over ranks */
} pr_result_t;

/* A vertex's share of rank x along each of its `degree` out-edges (0 for
 * none: dangling rank spreads to everyone instead), in fixed point.  The
 * kernels compute the same expression. */
static inline int64_t pr_fixed(double x) { return (int64_t)floor(x * FIXED_ONE + 0.5); }

/* Counts a step whose L1 change was `change`; returns whether the run stops
 * there, converged by networkx's test (with --iterations it runs them all
 * and counts as converged). */
static inline int pr_step_done(pr_result_t *r, const pr_options_t *o, double change, uint64_t n)
{
    r->iterations++;
    r->last_error = change;
    r->converged = o->iterations != 0 || change < (double)n * o->tolerance;
    return o->iterations == 0 && r->converged;
}

/* Collective: runs the replicated formulation; x gets this rank's vertices
 * (graph->part.global_of order). */
pr_result_t pr_run_replicated(grain_t *g, const app_graph_t *graph, const pr_options_t *o, double *x);

#endif
