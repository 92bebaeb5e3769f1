/*
 * Applying received buffers with a kernel (GRAIN_APPLY=device, DESIGN.md
 * "The receive path"): the heap lives in device memory, where host threads
 * would apply slowly.
 *
 * A validated buffer is decoded on the receiving thread into pairs of words
 * in shared memory (a stage), and one apply kernel per buffer applies them
 * from there on the backend's side stream.  Nothing waits for the device: the
 * stage stays in host memory until its kernel has finished, and when every
 * stage is busy (a producer kernel fills the device and the apply kernels
 * queue behind it) a new one is allocated.  So a producer spinning on a full
 * queue never waits on its own apply, and the network keeps receiving.
 */
#ifndef GRAIN_RUNTIME_APPLY_H
#define GRAIN_RUNTIME_APPLY_H

#include <stdint.h>

#include "grain/grain.h"

struct grain;
typedef struct grain_applier grain_applier_t;

/* Builds the apply kernel; called once the device context exists. */
grain_status_t grain_applier_create(struct grain *g, grain_applier_t **applier_p);
/* Frees the stages; the caller has waited for the apply kernels. */
void grain_applier_destroy(grain_applier_t *a);

/* Applies a buffer that passed grain_wire_validate: its active messages on
 * this thread, the rest by a kernel it launches.  Any thread, serialized
 * inside. */
grain_status_t grain_applier_submit(grain_applier_t *a, const void *buf);

/* Waits until every submitted buffer is applied. */
grain_status_t grain_applier_wait(grain_applier_t *a);

/* Apply kernels launched so far, and stages allocated (statistics). */
void grain_applier_counts(grain_applier_t *a, uint64_t *kernels, uint64_t *stages);

#endif
