/*
 * Applying received buffers with a kernel (DESIGN.md "The receive path"):
 * with GRAIN_APPLY=device the heap lives in device memory, where host threads
 * would apply slowly; on every backend, active messages whose handlers are
 * device functions (grain_am_register_program) can only run there.
 *
 * A validated buffer is decoded on the receiving thread into records in
 * shared memory (a stage), and one apply kernel per stage applies them on
 * the backend's side stream.  Nothing waits for the device: a stage is reused
 * once its kernel has finished, and when every stage is still busy (a
 * producer kernel fills the device and the apply kernels queue behind it) the
 * receiving thread keeps the records in host memory until a stage frees;
 * only with the heap in host memory does it apply the PUTs and adds itself
 * (a heap in managed device memory would migrate under the kernels).  Stages are allocated up front: pinned memory
 * allocation waits for running kernels on CUDA, and a producer spinning on a
 * full queue would then wait on its own apply.
 */
#ifndef GRAIN_RUNTIME_APPLY_H
#define GRAIN_RUNTIME_APPLY_H

#include <stdint.h>

#include "grain/grain.h"

struct grain;
typedef struct grain_applier grain_applier_t;

/* Builds the apply kernel and `stages` stages; called once the device
 * context exists, and with no kernel running. */
grain_status_t grain_applier_create(struct grain *g, unsigned stages, grain_applier_t **applier_p);
/* Frees the stages; the caller has waited for the apply kernels. */
void grain_applier_destroy(grain_applier_t *a);

/* Applies with `program`'s apply kernel from now on, which runs its device
 * handlers; with no kernel running. */
grain_status_t grain_applier_use(grain_applier_t *a, grain_program_t *program);

/* Applies a buffer that passed grain_wire_validate: what only a kernel can
 * apply (and, with the heap in device memory, everything) by a kernel it
 * launches, the rest here.  Any thread, serialized inside. */
grain_status_t grain_applier_submit(grain_applier_t *a, const void *buf);

/* Waits until every submitted buffer is applied; with no producer kernel
 * running (records kept back are launched first). */
grain_status_t grain_applier_wait(grain_applier_t *a);

typedef struct grain_applier_stats {
    uint64_t kernels;    /* apply kernels launched */
    uint64_t on_host;    /* buffers partly applied on the host because every stage was busy */
    uint64_t kept;       /* records kept back for a later kernel */
    uint64_t overlapped; /* apply kernels seen to start and finish while an application kernel ran
                            (a lower bound: a stage's kernel is looked at only when it is reused) */
} grain_applier_stats_t;

grain_applier_stats_t grain_applier_stats(grain_applier_t *a);

#endif
