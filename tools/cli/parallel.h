/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ranges of a program's set-up on threads: drawing inputs and computing
 * the expected results, work of many GiB that one core would take minutes
 * for.  Each range's result must not depend on how many ranges there are
 * (a counter-based random stream, an output element computed by one
 * range), so that a run's inputs and checks are the same on any machine.
 */
#ifndef GRAIN_TOOLS_CLI_PARALLEL_H
#define GRAIN_TOOLS_CLI_PARALLEL_H

#include <stdint.h>

#define CLI_PARALLEL_MAX 16

/* Ranges for `n` items: the cores this process may use, at most
 * CLI_PARALLEL_MAX, and none of fewer than `min_each` items. */
unsigned cli_parallel_parts(uint64_t n, uint64_t min_each);

/* Calls fn(ctx, part, first, last) for each of `parts` (1 to
 * CLI_PARALLEL_MAX) even ranges of [0, n), each on a thread of its own and
 * part 0 on the caller's; returns once all are done.  A thread that does
 * not start leaves its range to the caller. */
void cli_parallel_run(uint64_t n, unsigned parts, void (*fn)(void *ctx, unsigned part, uint64_t first, uint64_t last),
                      void *ctx);

/* cli_parallel_run over cli_parallel_parts(n, min_each) ranges. */
void cli_parallel_for(uint64_t n, uint64_t min_each,
                      void (*fn)(void *ctx, unsigned part, uint64_t first, uint64_t last), void *ctx);

#endif
