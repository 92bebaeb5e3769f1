/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The backend interface: everything the runtime needs from a GPU API, as one
 * ops table.  The runtime never includes a vendor header; a backend never
 * knows about aggregation or transports.
 *
 * Contract for every hook: it logs its own errors with grain_fail() and
 * returns the status; output arguments are set only on success.  Hooks are
 * called from the application thread only, except alloc/free, which the
 * runtime serializes itself, the side-stream hooks, which one runtime
 * thread at a time calls while the application thread works, and copy and
 * the transfer lanes, which transfer agents call from their own threads.
 */
#ifndef GRAIN_BACKENDS_BACKEND_H
#define GRAIN_BACKENDS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "grain/grain.h"

typedef struct grain_backend grain_backend_t;   /* one opened device */
typedef struct grain_bprogram grain_bprogram_t; /* one built program */
typedef struct grain_bkernel grain_bkernel_t;   /* one kernel of a program */

typedef struct grain_backend_info {
    char device_name[256];
    size_t max_wg_size;
    unsigned subgroup_width; /* native sub-group / warp width, or the preferred multiple */
    unsigned compute_units;  /* multiprocessors, compute units or cores */
    uint64_t device_memory;  /* bytes of the device's own memory (0 on a CPU device: it uses the host's) */
    int cpu_device;          /* the device runs on the cores the host threads need */
    int prefers_device_apply; /* the device has memory of its own and can keep the heap there
                                 (GRAIN_APPLY=auto picks device) */
    /* Peer memory (alloc_peer) is host memory: host threads address it as
     * kernels do, so it may hold a heap that host threads apply to. */
    int peer_host_access;
    /* Every memory the backend hands out is host memory and `copy` is the
     * host's own: a copy that waits for itself costs less on the calling
     * thread than on a lane (a queue's command and its wait). */
    int host_copies;
    /* A lane may spin while another lane of its warp or wavefront goes on
     * (independent thread scheduling, CPU devices): GRAIN_RESERVE=wi needs it. */
    int independent_lanes;
    /* Empty where kernels launch kernels (the launch transfer agent, with
     * GRAIN_DEVICE_LAUNCH defined in every program); else a sentence saying
     * why they cannot here. */
    char no_device_launch[256];
    /* How host threads and kernels share memory with atomics (the queue, and
     * the heap with GRAIN_APPLY=host), and the device code's dialect. */
    char shared_memory[256];
    /* The vendor BLAS behind gemm_tile ("CLBlast 1.5"), or "" without one
     * (or, where the backend has blas_load, before it is loaded). */
    char blas[64];
} grain_backend_info_t;

typedef struct grain_backend_ops {
    size_t size; /* sizeof(grain_backend_ops_t) the backend was built with */
    const char *name;

    /* Opens the device that `config` selects (threads: how many host threads
     * the runtime will run beside a CPU device). */
    grain_status_t (*open)(const grain_config_t *config, unsigned host_threads,
                           grain_backend_t **backend_p);
    void (*close)(grain_backend_t *backend);
    void (*query)(grain_backend_t *backend, grain_backend_info_t *info);
    /* Points `config` at the index-th device this backend sees (every
     * platform's, for OpenCL), so that open picks that one; 0 past the
     * last.  grain_info lists every device this way. */
    int (*select_device)(grain_config_t *config, unsigned index);

    /* Memory that host threads and kernels both access, atomically included:
     * the queue, the device error record and, with GRAIN_APPLY=host, the heap. */
    grain_status_t (*alloc_shared)(grain_backend_t *backend, size_t size, void **ptr_p);
    void (*free_shared)(grain_backend_t *backend, void *ptr);
    /* Zeroed memory only kernels use while they run (the device context, the
     * queue's producer state); the host reaches it with copy. */
    grain_status_t (*alloc_device)(grain_backend_t *backend, size_t size, void **ptr_p);
    void (*free_device)(grain_backend_t *backend, void *ptr);
    /* The heap with GRAIN_APPLY=device: zeroed memory where kernel atomics run
     * at device speed and that host threads may still address (active
     * message handlers, reads between kernels); GRAIN_ERR_UNSUPPORTED with a
     * sentence saying why when the device cannot give it. */
    grain_status_t (*alloc_heap)(grain_backend_t *backend, size_t size, void **ptr_p);
    void (*free_heap)(grain_backend_t *backend, void *ptr);
    /* Between any two of host, shared, heap and device memory. */
    grain_status_t (*copy)(grain_backend_t *backend, void *dst, const void *src, size_t size);
    grain_status_t (*zero)(grain_backend_t *backend, void *ptr, size_t size);

    /* `source` is complete (device headers inlined); `options` are compiler
     * defines the runtime adds. */
    grain_status_t (*program_build)(grain_backend_t *backend, const char *source,
                                    const char *options, grain_bprogram_t **program_p);
    void (*program_release)(grain_bprogram_t *program);
    grain_status_t (*kernel_create)(grain_bprogram_t *program, const char *name,
                                    grain_bkernel_t **kernel_p);
    void (*kernel_release)(grain_bkernel_t *kernel);
    grain_status_t (*kernel_set_arg)(grain_bkernel_t *kernel, unsigned index, size_t size,
                                     const void *value);
    grain_status_t (*kernel_set_arg_ptr)(grain_bkernel_t *kernel, unsigned index, void *ptr);

    /* Asynchronous: returns once the kernel is submitted, so host threads can
     * drain its messages while it runs. */
    grain_status_t (*launch)(grain_bkernel_t *kernel, unsigned dims, const size_t *global,
                             const size_t *local);
    grain_status_t (*synchronize)(grain_backend_t *backend);
    /* Whether a kernel the application launched is still running, without
     * waiting; any thread. */
    int (*busy)(grain_backend_t *backend);

    /* The side stream: the runtime's apply kernels, in order, beside the
     * application's kernels and never waiting for them.  launch_side numbers
     * its launches from 1; side_done says without waiting whether launch `n`
     * and all before it have finished; side_synchronize waits for all. */
    grain_status_t (*launch_side)(grain_bkernel_t *kernel, size_t global, size_t local, uint64_t *n_p);
    int (*side_done)(grain_backend_t *backend, uint64_t n);
    grain_status_t (*side_synchronize)(grain_backend_t *backend);

    /* Optional (NULL where the API has none), for the direct path and
     * counter-triggered transfers.  Peer memory: zeroed memory whose handle
     * (at most GRAIN_PEER_HANDLE_BYTES) another process on this node maps
     * into its device's address space, so that kernels and copies there
     * reach it; alloc_peer fails, saying why, where the device cannot
     * export memory, and map_peer where this device cannot reach the
     * exporter's.  map_peer sets *remote_p to 1 when the memory is another
     * device's (atomics on it need system scope), 0 when it is this
     * device's (another process on the same GPU, a CPU device).
     * seal_peer (may be NULL) is called once every rank that maps `ptr`
     * has done so: the backend may then drop what let other processes find
     * it, so that nothing outlives a crash. */
    grain_status_t (*alloc_peer)(grain_backend_t *backend, size_t size, void **ptr_p, void *handle);
    void (*free_peer)(grain_backend_t *backend, void *ptr);
    grain_status_t (*map_peer)(grain_backend_t *backend, const void *handle, void **ptr_p, int *remote_p);
    void (*unmap_peer)(grain_backend_t *backend, void *ptr);
    void (*seal_peer)(grain_backend_t *backend, void *ptr);
    /* Transfer lanes: asynchronous copies, in order within a lane, beside
     * every kernel; copy_wait returns once a lane's copies are done.
     * copy_mark numbers the lane's copies so far (from 1); copy_done says
     * without waiting whether those of mark `n` are done: 1 done, 0 not
     * yet, -1 failed (copy_wait then says why).  Lanes [0,
     * GRAIN_COPY_LANES) are the agents', GRAIN_RECV_LANE the receiving
     * thread's, GRAIN_BLAS_LANE and the two after it the tiled BLAS's.
     * All four or none: without them the runtime copies synchronously. */
    grain_status_t (*copy_async)(grain_backend_t *backend, unsigned lane, void *dst, const void *src, size_t size);
    /* Optional, beside the lanes, for the tiled BLAS: `rows` rows of
     * `width` bytes, `spitch` apart at src and `dpitch` apart at dst (a
     * tile of a column-major matrix is a row per column), host memory on
     * one side at most; and later work of `lane` waiting, on the device,
     * for mark `n` of lane `on` (a mark not newer than the 64th before
     * the newest; the wait may then last until a newer one).  Both or
     * neither. */
    grain_status_t (*copy_rect_async)(grain_backend_t *backend, unsigned lane, void *dst, size_t dpitch,
                                      const void *src, size_t spitch, size_t width, size_t rows);
    grain_status_t (*lane_wait)(grain_backend_t *backend, unsigned lane, unsigned on, uint64_t n);
    /* Optional, beside the lanes: a kernel on a lane, in order with its
     * copies and counted by its marks (device endpoints' streams). */
    grain_status_t (*launch_lane)(grain_bkernel_t *kernel, unsigned lane, unsigned dims, const size_t *global,
                                  const size_t *local);
    grain_status_t (*copy_wait)(grain_backend_t *backend, unsigned lane);
    grain_status_t (*copy_mark)(grain_backend_t *backend, unsigned lane, uint64_t *n_p);
    int (*copy_done)(grain_backend_t *backend, unsigned lane, uint64_t n);
    /* Optional, beside the lanes: memory that host threads and every device
     * of the process reach while kernels run, migrated by the driver
     * (GRAIN_SCHED_MEMORY=managed), zeroed, freed with free_device; and a
     * migration of some of it to this backend's device (or, `to_host`, to
     * the host) on a lane, in order with the lane's copies and counted by
     * its marks.  Both or neither. */
    grain_status_t (*alloc_managed)(grain_backend_t *backend, size_t size, void **ptr_p);
    grain_status_t (*prefetch)(grain_backend_t *backend, unsigned lane, const void *ptr, size_t size, int to_host);
    /* Optional, with alloc_managed: advice `advice` (a grain_advice_t) on
     * some managed memory, set or cleared, for this backend's device (or,
     * `to_host`, the host); the driver applies it before returning. */
    grain_status_t (*advise)(grain_backend_t *backend, const void *ptr, size_t size, int advice, int to_host,
                             int set);
    /* Optional, beside the lanes, for backends of one process on devices of
     * one node (the task scheduler's): GRAIN_OK once copy_async on this
     * backend's lanes may take `peer`'s device memory as source or
     * destination, over the link between the devices; else why not
     * (GRAIN_ERR_UNSUPPORTED), and such copies go through the host. */
    grain_status_t (*reach_peer)(grain_backend_t *backend, grain_backend_t *peer);
    /* The agent stream: one kernel beside the application's and the apply
     * kernels (the device transfer agent, which polls until the producer
     * is done, so the device must run both at once). */
    grain_status_t (*launch_agent)(grain_bkernel_t *kernel, size_t global, size_t local);
    grain_status_t (*agent_synchronize)(grain_backend_t *backend);
    /* Device-side launch: room for at least `pending` launches from kernels
     * not yet finished, unless the configuration fixes the room
     * (GRAIN_LAUNCH_PENDING).  Only where info.no_device_launch is empty. */
    grain_status_t (*reserve_launches)(grain_backend_t *backend, size_t pending);
    /* Optional (info.blas names it): one gemm tile by the vendor's BLAS, on
     * memory kernels reach, on a lane, in order with its copies and counted
     * by its marks: C (m x n, ldc) = alpha op(A) op(B) + beta C, op
     * transposing where ta or tb, k > 0, es 8 (double) or 4 (float); alpha
     * and beta point to a double or float, aligned as one.  Unlike the
     * reference BLAS it may read C where beta is 0. */
    grain_status_t (*gemm_tile)(grain_backend_t *backend, unsigned lane, size_t es, int ta, int tb, size_t m,
                                size_t n, size_t k, const void *alpha, const void *a, size_t lda, const void *b,
                                size_t ldb, const void *beta, void *c, size_t ldc);
    /* Optional: loads the vendor BLAS behind gemm_tile at its first need,
     * where loading it at open would cost every rank that never calls it
     * (cuBLAS: a third of a second), and names it in `name` as info.blas
     * would ("" where none loads).  Later calls only name it. */
    void (*blas_load)(grain_backend_t *backend, char *name, size_t size);
    /* Optional: whether the host memory at [ptr, ptr + bytes) is page-locked
     * for the device's copies, so that a lane copies it at the link's speed
     * without holding the host (the tiled BLAS then copies it straight,
     * without its pinned staging). */
    int (*host_pinned)(grain_backend_t *backend, const void *ptr, size_t bytes);
} grain_backend_ops_t;

#define GRAIN_PEER_HANDLE_BYTES 128u
#define GRAIN_COPY_LANES 16u
#define GRAIN_RECV_LANE GRAIN_COPY_LANES
/* The tiled BLAS's: host to device, the tile kernels, device to host. */
#define GRAIN_BLAS_LANE (GRAIN_RECV_LANE + 1u)
#define GRAIN_LANES (GRAIN_BLAS_LANE + 3u)

/* The backend named `name` ("auto": the first built-in one that opens). */
/* The backends built in, in the order "auto" tries them, NULL-terminated. */
const grain_backend_ops_t *const *grain_backends_built(void);

grain_status_t grain_backend_open(const grain_config_t *config, unsigned host_threads,
                                  const grain_backend_ops_t **ops_p, grain_backend_t **backend_p);

#endif
