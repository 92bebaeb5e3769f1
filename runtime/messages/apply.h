/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Applying received buffers with a kernel (docs/receive-path.md):
 * with GRAIN_APPLY=device the heap lives in device memory, where host threads
 * would apply slowly; on every backend, active messages whose handlers are
 * device functions (grain_am_register_program) can only run there.
 *
 * A validated buffer goes to the device as it came off the wire: its data
 * words and the bitmap of the words that start a message for the kernel
 * (grain_wire_validate) are copied into a stage in shared memory, and apply
 * kernels decode and apply the stages on the backend's side stream
 * (grain/device/runtime_kernels.h).  Decoding on the device instead of into
 * three-word records on the host moves a third of the bytes (an increment
 * is one word on the wire, three as a record) and leaves the receiving
 * thread one walk over the buffer.
 *
 * Launches are batched: while two apply kernels run, filled stages wait,
 * and the next launch applies all of them, a work-group per tile of each.
 * A launch costs the host several microseconds and the device a kernel's
 * start: with one a buffer, receive_bench on an H100 applied at most about
 * 40 k buffers a second (330 M increments), with 4 receive threads as
 * with 8.
 *
 * Nothing waits for the device: a stage is reused once its kernel has
 * finished, and when every stage is still busy (a producer kernel fills the
 * device and the apply kernels queue behind it) the receiving thread keeps
 * the buffer's words in host memory until a stage frees.  So a producer
 * spinning on a full queue never waits on its own apply.  Stages are
 * allocated up front: pinned memory allocation waits for running kernels on
 * CUDA, and a producer spinning on a full queue would then wait on its own
 * apply.  Several receiving threads fill stages at once; only taking a
 * stage and launching its kernel are serialized.
 */
#ifndef GRAIN_RUNTIME_MESSAGES_APPLY_H
#define GRAIN_RUNTIME_MESSAGES_APPLY_H

#include <stdint.h>

#include "grain/grain.h"

struct grain;
struct grain_epoch;
typedef struct grain_applier grain_applier_t;

/* Builds the apply kernel and `stages` stages; called once the device
 * context exists, and with no kernel running. */
grain_status_t grain_applier_create(struct grain *g, unsigned stages, grain_applier_t **applier_p);
/* Frees the stages; the caller has waited for the apply kernels. */
void grain_applier_destroy(grain_applier_t *a);

/* Applies with `program`'s apply kernel from now on, which runs its device
 * handlers; with no kernel running. */
grain_status_t grain_applier_use(grain_applier_t *a, grain_program_t *program);

/* Applies by a kernel the `staged` messages (> 0) of a validated buffer
 * that `marks` marks (grain_wire_validate), `fetches` of them fetches,
 * whose replies go out once the kernel is done; the caller applies the
 * rest.  The buffer's `epoch` (quiets.h) is left once they are applied, or
 * at once if they never will be.  Any thread, several at once. */
grain_status_t grain_applier_submit(grain_applier_t *a, const void *buf, const uint32_t *marks, size_t staged,
                                    size_t fetches, struct grain_epoch *epoch);

/* Launches what waits for a launch, if the side stream has room; for a
 * thread that polls, never waiting for the lock.  With `copy`, it first
 * copies kept buffers into the stages finished kernels left: the threads
 * that receive do, not a network thread that hands buffers to receive
 * threads, whose MPI progress would wait behind the copies. */
grain_status_t grain_applier_progress(grain_applier_t *a, int copy);

/* Around each launch of an application kernel, by the thread that
 * launches: the resident apply agent (GRAIN_APPLY_AGENT), if on and not
 * running, is launched before the kernel, so that it holds its compute units
 * first; it stops once a thread that polls (grain_applier_progress) sees
 * the application's kernels done. */
grain_status_t grain_applier_before_launch(grain_applier_t *a);
void grain_applier_after_launch(grain_applier_t *a);

/* Waits until every submitted buffer is applied; with no producer kernel
 * running (buffers kept back are launched first). */
grain_status_t grain_applier_wait(grain_applier_t *a);

typedef struct grain_applier_stats {
    uint64_t kernels;    /* apply kernels launched */
    uint64_t stages;     /* buffers they applied */
    uint64_t kept;       /* messages kept back in host memory for a later kernel */
    uint64_t overlapped; /* apply kernels seen to start and finish while an application kernel ran
                            (a lower bound: a stage's kernel is looked at only when it is reused) */
    uint64_t agents;       /* launches of the resident apply agent */
    uint64_t agent_stages; /* buffers it applied */
} grain_applier_stats_t;

grain_applier_stats_t grain_applier_stats(grain_applier_t *a);

#endif
