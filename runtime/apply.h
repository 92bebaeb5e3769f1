/*
 * Applying received buffers with a kernel (GRAIN_APPLY=device, DESIGN.md
 * "The receive path"): the heap lives in device memory, where host threads
 * would apply slowly.
 *
 * A validated buffer is decoded on the receiving thread into pairs of words
 * in shared memory (a stage), and one apply kernel per buffer applies them
 * from there on the backend's side stream.  Nothing waits for the device: a
 * stage is reused once its kernel has finished, and when every stage is
 * still busy (a producer kernel fills the device and the apply kernels queue
 * behind it) the receiving thread applies the buffer itself, through the
 * host's view of the heap.  Stages are allocated up front: pinned memory
 * allocation waits for running kernels on CUDA, and a producer spinning on
 * a full queue would then wait on its own apply.
 */
#ifndef GRAIN_RUNTIME_APPLY_H
#define GRAIN_RUNTIME_APPLY_H

#include <stdint.h>

#include "grain/grain.h"

struct grain;
typedef struct grain_applier grain_applier_t;

/* Builds the apply kernel and `stages` stages; called once the device
 * context exists. */
grain_status_t grain_applier_create(struct grain *g, unsigned stages, grain_applier_t **applier_p);
/* Frees the stages; the caller has waited for the apply kernels. */
void grain_applier_destroy(grain_applier_t *a);

/* Applies a buffer that passed grain_wire_validate: its active messages on
 * this thread, the rest by a kernel it launches (or here, when no stage is
 * free).  Any thread, serialized inside. */
grain_status_t grain_applier_submit(grain_applier_t *a, const void *buf);

/* Waits until every submitted buffer is applied. */
grain_status_t grain_applier_wait(grain_applier_t *a);

/* Statistics: apply kernels launched, and buffers applied on the host
 * because every stage was busy. */
void grain_applier_counts(grain_applier_t *a, uint64_t *kernels, uint64_t *on_host);

#endif
