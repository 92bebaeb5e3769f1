/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The scheduler's dependency graph ("Taming Multi-GPU Greedy Scheduling
 * Through a Polyglot Runtime", GrCUDA, section III-A): every element
 * (kernel, host access, copy) names the arrays it uses and how; its parents
 * are the earlier elements it must follow.
 *
 * GrCUDA keeps a dependency set per element, first all its arguments; a
 * later element that writes an argument takes it out of the earlier sets,
 * an empty set adds no edges, and arguments only read never order their
 * readers.  Kept per array instead, the same sets are: the array's last
 * writer, and the readers since it.  A new element
 *   - that reads follows the last writer (read after write);
 *   - that writes follows the last writer and every reader since
 *     (write after write, write after read), and becomes the last writer
 *     with no readers: it stands for them from then on.
 * Elements retired (done) are left out of later parents.
 */
#ifndef GRAIN_RUNTIME_SCHED_SCHED_DAG_H
#define GRAIN_RUNTIME_SCHED_SCHED_DAG_H

#include <stddef.h>
#include <stdint.h>

#include "grain/grain.h"

#define SCHED_READ 1u
#define SCHED_WRITE 2u

typedef struct sched_arg {
    uint32_t array; /* an index the scheduler gave the array */
    unsigned access; /* SCHED_READ, SCHED_WRITE or both */
} sched_arg_t;

typedef struct sched_dag sched_dag_t;

grain_status_t sched_dag_create(sched_dag_t **dag_p);
void sched_dag_destroy(sched_dag_t *dag);

/* Adds an element using `args` (an array may come twice: its accesses
 * combine) and gives its index, 0, 1, ... in the order added, and its
 * parents, earliest first, valid until the next add. */
grain_status_t sched_dag_add(sched_dag_t *dag, const sched_arg_t *args, size_t n_args, uint32_t *element_p,
                             const uint32_t **parents_p, size_t *n_parents_p);

/* The element is done: later elements need not follow it. */
void sched_dag_retire(sched_dag_t *dag, uint32_t element);

/* Room for `n` items of `size` bytes in *p, which holds *cap (doubling);
 * 0 without memory.  The executor's arrays grow the same way. */
int sched_reserve(void **p, size_t *cap, size_t n, size_t size);

#endif
