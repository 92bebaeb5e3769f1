/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device endpoints: every GPU a message endpoint with a host thread of its
 * own, after "GMH: GPU Message Handler" (sections III-A and III-B).
 *
 * grain's messages (grain.h) are one-sided and fine-grained, sent by
 * work-items.  Codes written with two-sided messages between GPU buffers
 * (halo exchanges, solvers) want each GPU as an endpoint instead: a rank
 * runs one thread per device it drives, each bound to a virtual device
 * 0..n-1, and an endpoint's id joins rank and virtual device, so that a
 * program addresses a GPU of its own process, of its node or of another
 * node the same way.  docs/endpoints.md says what exists and what comes.
 *
 * Every call returns a grain_status_t and, on failure, leaves a sentence for
 * grain_error_message() in the calling thread.
 */
#ifndef GRAIN_EP_H
#define GRAIN_EP_H

#include <stddef.h>

#include "grain/grain.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

/* One endpoint: its thread, its device and what it allocated there.  Valid
 * inside the function grain_ep_run runs, on that function's thread only. */
typedef struct grain_cmdq grain_cmdq_t;
/* Memory of one endpoint's device with, by default, a pinned host shadow of
 * the same size (GMH's gmh_mem_t). */
typedef struct grain_ep_mem grain_ep_mem_t;
typedef struct grain_ep_event grain_ep_event_t;

typedef grain_status_t (*grain_ep_fn_t)(grain_cmdq_t *q, void *arg);

/* Collective over the ranks: starts `devices` endpoint threads on this rank
 * (0: GRAIN_EP_DEVICES; that 0 too: this rank's share of its node's devices,
 * at least 1), each with its own device, runs fn(q, arg) on each and returns
 * once all have returned.  Every rank must ask for the same number.
 * Returns GRAIN_OK on every rank, or an error on every rank: the first one
 * an endpoint of this rank returned (by virtual device), else that of another
 * rank's.  Memory an endpoint did not free is freed when it returns, and
 * messages it did not wait for are finished (grain_ep_test). */
grain_status_t grain_ep_run(grain_t *grain, unsigned devices, grain_ep_fn_t fn, void *arg);

/* rank x endpoints a rank + virtual device: 0 .. grain_ep_count() - 1. */
int grain_ep_id(const grain_cmdq_t *q);
/* The virtual device, 0 .. grain_ep_devices() - 1. */
unsigned grain_ep_vdev(const grain_cmdq_t *q);
/* Endpoints a rank runs, and in the job. */
unsigned grain_ep_devices(const grain_cmdq_t *q);
int grain_ep_count(const grain_cmdq_t *q);
/* The device the endpoint drives, as its API names it, and its index among
 * the devices the backend sees on this node (grain_info lists them). */
const char *grain_ep_device_name(const grain_cmdq_t *q);
unsigned grain_ep_device_index(const grain_cmdq_t *q);
grain_t *grain_ep_grain(const grain_cmdq_t *q);

/* What an endpoint may do with its memory's contents: read them out (to the
 * host, in a message, into a collective) and write them (from the host,
 * from a message or a collective).  GRAIN_EP_NO_SHADOW leaves out the
 * pinned host shadow. */
#define GRAIN_EP_READ 1u
#define GRAIN_EP_WRITE 2u
#define GRAIN_EP_NO_SHADOW 4u

/* Zeroed device memory of `bytes` (at least 1) on q's device.  Freeing
 * memory that a receive not yet waited for writes into is refused (logged;
 * the memory is freed when the endpoint returns). */
grain_status_t grain_ep_mem_alloc(grain_cmdq_t *q, size_t bytes, unsigned flags, grain_ep_mem_t **mem_p);
void grain_ep_mem_free(grain_cmdq_t *q, grain_ep_mem_t *mem);
size_t grain_ep_mem_size(const grain_ep_mem_t *mem);
/* The pinned host shadow, or NULL without one.  Host copies, messages and
 * collectives of the memory pass through it (the device copies pinned
 * memory several times faster than pageable), so a copy command into or
 * out of it may race with them over the same bytes. */
void *grain_ep_mem_shadow(grain_ep_mem_t *mem);
/* Host to device (needs GRAIN_EP_WRITE) and device to host (GRAIN_EP_READ)
 * at a byte offset, through the shadow where there is one; they return once
 * the copy is done.  `mem` must be q's. */
grain_status_t grain_ep_mem_write(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, const void *src,
                                  size_t bytes);
grain_status_t grain_ep_mem_read(grain_cmdq_t *q, const grain_ep_mem_t *mem, size_t offset, void *dst,
                                 size_t bytes);

/* ---- two-sided messages (GMH section III-B4) ------------------------------
 * Blocking, matched by (source endpoint, tag) in the order sent, to and from
 * endpoints of this rank, of this node or of another node alike.  A send
 * needs GRAIN_EP_READ and returns once its bytes have left `mem`: at once
 * to an endpoint of this rank (the rank keeps them until received), and
 * as MPI_Send does to another rank (a large message may wait for its
 * receive).  A receive needs GRAIN_EP_WRITE and `bytes` room; it sets
 * *received to the message's length, and refuses (takes and drops) a longer
 * one.  A receive from an endpoint of this rank that returned without
 * sending fails with GRAIN_ERR_STATE; one from a failed rank, with
 * GRAIN_ERR_PEER.  Between ranks over MPI, endpoint threads call MPI
 * themselves under MPI_THREAD_MULTIPLE and hand their messages to the
 * network thread under GRAIN_MPI_THREADS=serialized. */
#define GRAIN_EP_TAGS 32768 /* tags are 0 .. GRAIN_EP_TAGS - 1 */
grain_status_t grain_ep_send(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int dest, int tag);
grain_status_t grain_ep_recv(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int src, int tag,
                             size_t *received);

/* The immediate forms (GMH III-B3, III-B4): each starts its message and
 * returns an event at once; receives take messages in the order they were
 * posted, blocking ones included.  An immediate send has copied `mem` off
 * the device when it returns, so the memory may change at once; an
 * immediate receive writes `mem` and *received by the time its event is
 * waited for.  A message longer than a receive's room is refused. */
grain_status_t grain_ep_isend(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int dest, int tag,
                              grain_ep_event_t **event_p);
grain_status_t grain_ep_irecv(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int src, int tag,
                              size_t *received, grain_ep_event_t **event_p);
/* Waits for an event, frees it and returns its message's status. */
grain_status_t grain_ep_wait(grain_cmdq_t *q, grain_ep_event_t *event);
/* Waits for all `n` (GMH's event sets) and returns the first error. */
grain_status_t grain_ep_wait_all(grain_cmdq_t *q, grain_ep_event_t *const *events, size_t n);
/* Without waiting: *done 0, or 1 and the event freed, its status returned.
 * Events an endpoint leaves are finished when it returns: sends waited
 * for, receives dropped, with a warning. */
grain_status_t grain_ep_test(grain_cmdq_t *q, grain_ep_event_t *event, int *done);

/* ---- command queues over streams (GMH section III-B3) --------------------
 * An endpoint queues kernels, copies and messages on GRAIN_EP_STREAMS
 * streams of its device.  Each stream runs its commands in the order queued; streams run
 * beside each other.  A command may name events of this endpoint to come
 * `after` (messages' or other commands', of any stream): it starts once
 * they are done, and the later commands of its stream wait behind it.  One
 * whose event failed, or was dropped unwaited, does not run and fails
 * naming it.  Every command returns an event, finished with grain_ep_wait,
 * grain_ep_wait_all or grain_ep_test as a message's, in the same sets.
 * Commands start as the endpoint queues, waits or tests.  Where the backend
 * runs streams (CUDA, HIP) they run asynchronously on its streams; elsewhere
 * (OpenCL) each runs to its end when it starts, in the same order.  Host
 * memory a copy names must stay until its event is done; the memory's
 * pinned shadow (grain_ep_mem_shadow) lets a copy overlap for real. */
#define GRAIN_EP_STREAMS 8
typedef struct grain_ep_program grain_ep_program_t;
typedef struct grain_ep_kernel grain_ep_kernel_t;

/* A program for q's device from source written once for every backend
 * (grain/device/port.h), `options` passed to its compiler; kernels take
 * their arguments from index 0 (no grain device context). */
grain_status_t grain_ep_program_create(grain_cmdq_t *q, const char *source, const char *options,
                                       grain_ep_program_t **program_p);
void grain_ep_program_destroy(grain_ep_program_t *program);
grain_status_t grain_ep_kernel_create(grain_ep_program_t *program, const char *name, grain_ep_kernel_t **kernel_p);
/* A kernel or program destroyed while launches of it are queued lives on
 * until they are done; what an endpoint leaves is freed when it returns. */
void grain_ep_kernel_destroy(grain_ep_kernel_t *kernel);
/* Arguments, by value (at most 64 bytes) or as the device address of q's
 * memory at a byte offset; a launch takes them when it is queued. */
grain_status_t grain_ep_kernel_arg(grain_ep_kernel_t *kernel, unsigned index, size_t size, const void *value);
grain_status_t grain_ep_kernel_arg_mem(grain_ep_kernel_t *kernel, unsigned index, grain_ep_mem_t *mem,
                                       size_t offset);
/* `dims` (1 to 3) global sizes, each a multiple of its work-group size
 * (local; NULL: the largest divisor of global[0] up to 256 and the
 * device's limit). */
grain_status_t grain_ep_launch(grain_cmdq_t *q, unsigned stream, grain_ep_kernel_t *kernel, unsigned dims,
                               const size_t *global, const size_t *local, grain_ep_event_t *const *after,
                               size_t n_after, grain_ep_event_t **event_p);
/* A message as a stream command: posted, as grain_ep_isend and
 * grain_ep_irecv post theirs, once its stream's earlier commands and its
 * `after` events are done (a send thus carries what the kernel before it
 * wrote), and done when the message is.  A receive takes a message in the
 * order it is posted, which is when it starts. */
grain_status_t grain_ep_send_on(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset, size_t bytes,
                                int dest, int tag, grain_ep_event_t *const *after, size_t n_after,
                                grain_ep_event_t **event_p);
grain_status_t grain_ep_recv_on(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset, size_t bytes,
                                int src, int tag, size_t *received, grain_ep_event_t *const *after, size_t n_after,
                                grain_ep_event_t **event_p);
/* Host to device (needs GRAIN_EP_WRITE) and device to host (GRAIN_EP_READ). */
grain_status_t grain_ep_copy_in(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset,
                                const void *src, size_t bytes, grain_ep_event_t *const *after, size_t n_after,
                                grain_ep_event_t **event_p);
grain_status_t grain_ep_copy_out(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset, void *dst,
                                 size_t bytes, grain_ep_event_t *const *after, size_t n_after,
                                 grain_ep_event_t **event_p);

/* ---- registered commands and the run loop (GMH III-B4, III-B6) ----------
 * An endpoint registers its commands once, each as the immediate command of
 * the same name describes it (checked now; a launch takes its kernel's
 * arguments now), and grain_ep_start runs them in rounds.  A round queues
 * them in the order registered; `after` names earlier registered commands
 * by the index each registration returned (*index_p, may be NULL), and
 * means their events of the same round.  GRAIN_EP_BLOCK makes a message
 * blocking: the round queues nothing more until it is done.  A control
 * task runs when its turn comes, once every command before it in the round
 * is done, so it may read results and call collectives; it returns
 * GRAIN_EP_RERUN to go on (the rest of the round, then another) or
 * GRAIN_EP_EXIT to end the loop once the round's commands queued so far are
 * done.  Without a control task grain_ep_start runs one round.  It returns
 * the first command's failure, which ends the loop after the round's other
 * commands, or GRAIN_OK.  Registrations stay for another grain_ep_start
 * until grain_ep_clear (or the endpoint's return); memory they use cannot
 * be freed before.  A control task may not register, clear or start. */
#define GRAIN_EP_BLOCK 1u
#define GRAIN_EP_EXIT 0
#define GRAIN_EP_RERUN 1
typedef int (*grain_ep_control_fn_t)(grain_cmdq_t *q, void *arg);
grain_status_t grain_ep_add_launch(grain_cmdq_t *q, unsigned stream, grain_ep_kernel_t *kernel, unsigned dims,
                                   const size_t *global, const size_t *local, const unsigned *after, size_t n_after,
                                   unsigned *index_p);
grain_status_t grain_ep_add_copy_in(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset,
                                    const void *src, size_t bytes, const unsigned *after, size_t n_after,
                                    unsigned *index_p);
grain_status_t grain_ep_add_copy_out(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset, void *dst,
                                     size_t bytes, const unsigned *after, size_t n_after, unsigned *index_p);
grain_status_t grain_ep_add_send(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset, size_t bytes,
                                 int dest, int tag, unsigned flags, const unsigned *after, size_t n_after,
                                 unsigned *index_p);
grain_status_t grain_ep_add_recv(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset, size_t bytes,
                                 int src, int tag, unsigned flags, size_t *received, const unsigned *after,
                                 size_t n_after, unsigned *index_p);
grain_status_t grain_ep_add_control(grain_cmdq_t *q, grain_ep_control_fn_t fn, void *arg, unsigned *index_p);
grain_status_t grain_ep_start(grain_cmdq_t *q);
void grain_ep_clear(grain_cmdq_t *q);

/* ---- collectives (GMH section III-B5) -----------------------------------
 * Synchronous and over every endpoint of the job: each endpoint calls the
 * same ones in the same order with the same arguments (its own memory).
 * One collective a rank's endpoints or the ranks disagree on fails
 * everywhere with GRAIN_ERR_CONFIG, and one that some endpoint returned
 * without calling fails everywhere with GRAIN_ERR_STATE: none waits for an
 * endpoint that is gone.  An endpoint whose own arguments are refused gets
 * their sentence; the others, GRAIN_ERR_INVALID naming it. */
grain_status_t grain_ep_barrier(grain_cmdq_t *q);
/* In place on `count` 64-bit elements at byte `offset` of `mem` (which
 * needs GRAIN_EP_READ and GRAIN_EP_WRITE). */
grain_status_t grain_ep_allreduce(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t count,
                                  grain_dtype_t dtype, grain_op_t op);
/* The same into endpoint `root`'s memory only (GRAIN_EP_READ | WRITE there,
 * GRAIN_EP_READ elsewhere). */
grain_status_t grain_ep_reduce(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t count, grain_dtype_t dtype,
                               grain_op_t op, int root);
/* `bytes` at `offset` from endpoint `root`'s memory (GRAIN_EP_READ) into
 * every other endpoint's (GRAIN_EP_WRITE). */
grain_status_t grain_ep_broadcast(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int root);
/* Slots of `bytes`, one for each endpoint of the job in id order, from
 * `offset` (MPI's in-place forms):
 * - allgather: endpoint e's slot e goes into slot e of every endpoint;
 * - gather: the same into endpoint `root`'s only;
 * - scatter: slot e of `root`'s goes into slot e of endpoint e's;
 * - alltoall: slot d of endpoint e's goes into slot e of endpoint d's.
 * Memory that gives needs GRAIN_EP_READ, memory that takes GRAIN_EP_WRITE. */
grain_status_t grain_ep_allgather(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes);
grain_status_t grain_ep_gather(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int root);
grain_status_t grain_ep_scatter(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int root);
grain_status_t grain_ep_alltoall(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
