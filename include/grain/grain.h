/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grain host API.
 *
 * A grain process is one rank (PE).  grain_init() picks a backend (the GPU
 * API) and a transport (how ranks talk), allocates this rank's symmetric heap
 * and device queue, and starts the aggregator and network threads.  Kernels
 * built with grain_program_create() take the device context as their first
 * argument (GRAIN_KERNEL_CTX in grain/device.h) and send one-sided messages;
 * grain_quiet() returns once this rank's are applied at their destinations,
 * grain_barrier_all() once every rank's are.
 *
 * Every call returns a grain_status_t; the call that first sees an error logs
 * a sentence naming what was wrong, and grain_error_message() returns it.
 */
#ifndef GRAIN_GRAIN_H
#define GRAIN_GRAIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libgrain exports what this header declares and nothing else: it is built
 * with every other symbol hidden, so that its internals cannot clash with
 * a program's or be linked against by mistake. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

/* Names kept for one version after a rename. */
#if defined(__GNUC__) || defined(__clang__)
#define GRAIN_DEPRECATED(why) __attribute__((deprecated(why)))
#else
#define GRAIN_DEPRECATED(why)
#endif

typedef enum grain_status {
    GRAIN_OK = 0,
    GRAIN_ERR_INVALID = -1,      /* a bad argument from the caller */
    GRAIN_ERR_NO_MEMORY = -2,
    GRAIN_ERR_CONFIG = -3,       /* an impossible configuration */
    GRAIN_ERR_NO_BACKEND = -4,   /* the backend asked for is not built in */
    GRAIN_ERR_NO_DEVICE = -5,    /* no platform or device for the backend */
    GRAIN_ERR_BACKEND = -6,      /* the GPU API failed */
    GRAIN_ERR_BUILD = -7,        /* a kernel did not compile */
    GRAIN_ERR_TRANSPORT = -8,    /* the transport failed */
    GRAIN_ERR_BAD_PE = -9,       /* a message named a PE that does not exist */
    GRAIN_ERR_BAD_OFFSET = -10,  /* a message fell outside the symmetric heap */
    GRAIN_ERR_BAD_HANDLER = -11, /* an active message named no registered handler */
    GRAIN_ERR_BAD_MESSAGE = -12, /* a received buffer was malformed */
    GRAIN_ERR_UNSUPPORTED = -13, /* the device lacks a capability grain needs */
    GRAIN_ERR_STATE = -14,       /* the call is not allowed now */
    GRAIN_ERR_PEER = -15,        /* a rank died, stopped, or accepted nothing for GRAIN_PEER_TIMEOUT_S */
} grain_status_t;

const char *grain_strerror(grain_status_t status);
/* The library's version, "MAJOR.MINOR.PATCH"; grain/version.h has the
 * headers' (GRAIN_VERSION_STRING and its parts). */
const char *grain_version(void);

/* ---- configuration ------------------------------------------------------
 * Every setting has a GRAIN_* environment variable; grain_config_create()
 * reads them over the defaults and grain_config_set() overrides by name
 * ("queue_slots" or "GRAIN_QUEUE_SLOTS").  Sizes take K/M/G suffixes. */
typedef struct grain_config grain_config_t;

grain_status_t grain_config_create(grain_config_t **config_p);
grain_status_t grain_config_set(grain_config_t *config, const char *name, const char *value);
/* Whether `name` names a setting (either spelling). */
int grain_config_known(const char *name);
/* The name of setting `index` as grain_config_set takes it ("queue_slots"),
 * or NULL past the last: every setting, for programs that list them or take
 * them as options. */
const char *grain_config_name(size_t index);
void grain_config_print(const grain_config_t *config, FILE *out);
void grain_config_destroy(grain_config_t *config);

/* ---- life cycle --------------------------------------------------------- */
typedef struct grain grain_t;

/* `config` may be NULL (defaults and environment).  Collective over every
 * rank the launcher started (MPI_COMM_WORLD under mpirun).  grain
 * initializes MPI if the application has not, and then finalizes it too. */
grain_status_t grain_init(const grain_config_t *config, grain_t **grain_p);

/* What grain_init_attr takes besides the settings.  Zero it, then set what
 * you need: later versions append fields, and `size` says which are there. */
typedef struct grain_init_attr {
    size_t size;          /* sizeof(grain_init_attr_t) */
    const void *mpi_comm; /* an MPI_Comm * of the application's, or NULL */
} grain_init_attr_t;

/* grain_init on the application's terms.  With `mpi_comm`, grain's ranks are
 * that communicator's ranks in its order (PE i is its rank i), the call is
 * collective over it, and the transport is one that starts over MPI (mpi,
 * or verbs where GRAIN_TRANSPORT asks).  MPI must be initialized already,
 * with MPI_THREAD_MULTIPLE (GRAIN_MPI_THREADS=serialized: SERIALIZED, and
 * then the application calls no MPI until grain_finalize); grain works on a
 * duplicate, so its messages never match the application's, and leaves MPI
 * initialized for the application to finalize.  docs/mpi-interop.md. */
grain_status_t grain_init_attr(const grain_config_t *config, const grain_init_attr_t *attr, grain_t **grain_p);
/* Drains outstanding messages, reports statistics when GRAIN_STATS=1, frees
 * everything.  Collective. */
grain_status_t grain_finalize(grain_t *grain);

int grain_my_pe(const grain_t *grain);
int grain_n_pes(const grain_t *grain);
const char *grain_backend_name(const grain_t *grain);
const char *grain_transport_name(const grain_t *grain);
const char *grain_device_name(const grain_t *grain);
/* Bytes of the device's own memory; 0 for a CPU device, which uses the
 * host's. */
uint64_t grain_device_memory(const grain_t *grain);
/* The sentence that explained the last error on this rank ("" if none). */
const char *grain_error_message(const grain_t *grain);

/* ---- memory --------------------------------------------------------------
 * The symmetric heap: collective, same size on every rank, same offset on
 * every rank.  Device code addresses remote copies by local pointer + PE.
 * Read and write it from the host with grain_memcpy: on CUDA and HIP,
 * where the ranks of a node map each other's heaps (GRAIN_PEER=auto), it is
 * device memory that host code cannot dereference. */
grain_status_t grain_malloc(grain_t *grain, size_t size, void **ptr_p);
grain_status_t grain_free(grain_t *grain, void *ptr);
/* Where `ptr` lies in the symmetric heap, in bytes from its start: the same
 * on every rank, so an active message can carry it (as device code's
 * grain_offset does).  GRAIN_ERR_INVALID for a pointer outside the heap. */
grain_status_t grain_heap_offset(grain_t *grain, const void *ptr, uint64_t *offset_p);
/* The largest grain_malloc this rank's heap can serve now (the same on every
 * rank while every rank allocates alike), so that a program can refuse an
 * input that cannot fit before it reads all of it. */
grain_status_t grain_heap_available(grain_t *grain, uint64_t *bytes_p);

/* The largest work-group grain_launch takes: the smaller of
 * GRAIN_QUEUE_WIDTH and the device's maximum. */
size_t grain_wg_size_max(const grain_t *grain);

/* Private memory that kernels and the host can both use (not symmetric). */
grain_status_t grain_mem_alloc(grain_t *grain, size_t size, void **ptr_p);
grain_status_t grain_mem_free(grain_t *grain, void *ptr);
/* Copy between host memory and grain memory (either direction); the portable
 * way to read results on devices whose memory the host cannot address. */
grain_status_t grain_memcpy(grain_t *grain, void *dst, const void *src, size_t size);

/* ---- kernels ------------------------------------------------------------ */
typedef struct grain_program grain_program_t;
typedef struct grain_kernel grain_kernel_t;

/* `source` uses the dialect of grain/device.h: with grain's headers inlined
 * by the build tool grain_embed, or including them, when the runtime
 * compiler finds them in GRAIN_INCLUDE_DIR, else in the build tree's or the
 * installed prefix's headers (an -I in `options` comes first; paths
 * without spaces).  `options` may be NULL. */
grain_status_t grain_program_create(grain_t *grain, const char *source, const char *options,
                                    grain_program_t **program_p);
void grain_program_destroy(grain_program_t *program);

/* The kernel's argument 0 is the device context, set here. */
grain_status_t grain_kernel_create(grain_program_t *program, const char *name,
                                   grain_kernel_t **kernel_p);
void grain_kernel_destroy(grain_kernel_t *kernel);
/* Argument `index` (1 and up) by value. */
grain_status_t grain_kernel_set_arg(grain_kernel_t *kernel, unsigned index, size_t size,
                                    const void *value);
/* Argument `index` as a pointer from grain_malloc or grain_mem_alloc. */
grain_status_t grain_kernel_set_arg_ptr(grain_kernel_t *kernel, unsigned index, void *ptr);

/* Launch asynchronously; `local` may be NULL (the runtime's choice).  The
 * flattened work-group size may not exceed queue_width. */
grain_status_t grain_launch(grain_kernel_t *kernel, unsigned dims, const size_t *global,
                            const size_t *local);
/* Wait for every launched kernel; reports the first device-side error. */
grain_status_t grain_wait(grain_t *grain);

/* ---- active messages ------------------------------------------------------
 * A handler runs at the destination with that rank's heap, the sender's PE
 * and the two words sent; handlers of one rank may run concurrently, so they
 * update the heap atomically.  Both calls are collective (every rank
 * registers the same ids) and come before the kernels that send to them. */
typedef void (*grain_am_fn)(char *heap, uint32_t src_pe, uint64_t a0, uint64_t a1);
/* A host function: runs on a host thread of the destination (slow where the
 * heap is in device memory, GRAIN_APPLY=device).  GRAIN_ERR_UNSUPPORTED, on
 * every rank, where some rank's heap is out of its host threads' reach
 * (CUDA and HIP with the direct path: register a device handler, or set
 * GRAIN_PEER=off). */
grain_status_t grain_am_register(grain_t *grain, unsigned id, grain_am_fn handler);
/* The device functions `program` lists in GRAIN_AM_HANDLERS (grain/device.h):
 * each runs on the destination's device, in the sending work-item for a
 * message to its own PE (when the sending program defines it too) and in an
 * apply kernel otherwise; an id registered both ways runs on the device.  A
 * later call replaces the ids of an earlier one.  GRAIN_ERR_INVALID when the
 * program lists no handler or an id of GRAIN_MAX_HANDLERS (256) or more. */
grain_status_t grain_am_register_program(grain_t *grain, grain_program_t *program);

/* ---- completion ----------------------------------------------------------
 * grain_quiet() is OpenSHMEM's shmem_quiet for this rank: it waits for this
 * rank's kernels, then returns once every message they sent has been
 * applied at its destination, visible there to the host (grain_memcpy) and
 * to kernels.  Other ranks need not call it, and it does not wait for their
 * messages to this rank.  Each rank answers a request that follows this
 * rank's last buffer to it (a round trip to every rank: docs/shmem-api.md).
 *
 * grain_barrier_all() is the collective (shmem_barrier_all): every rank
 * calls it, and it returns once every message issued before the call, by
 * every rank, has been applied at its destination; counts of messages out
 * and in are exchanged instead of round trips.  Read the results that
 * other ranks' messages leave in this rank's heap after it, not after
 * grain_quiet.  grain_barrier() is its old name, kept for one version.
 *
 * Messages travel one of three paths, and both complete all of them: in
 * place (to the sender's own rank, applied by the sending work-item), direct
 * (to another rank of the node whose heap this rank maps, GRAIN_PEER=auto:
 * applied by the sending work-item into that heap, done when the sending
 * kernel is) and the queue (everything else: host handlers, other nodes).
 * Before either, only this holds: one work-item's messages to one word, in
 * place or direct, are applied in its program order.  Queued messages keep
 * no order, not even one source's to one destination: aggregator threads
 * pack slots side by side, receive threads (GRAIN_RECV_THREADS) apply
 * buffers side by side, and an apply kernel applies a buffer's messages in
 * parallel.  Nothing orders a direct message after a queued one, or the
 * messages of two work-items: a kernel that needs that order ends and quiets
 * first, or a work-group calls grain_quiet or grain_fence (grain/device.h),
 * which return once its earlier messages are applied at their destinations.
 * Every apply is an atomic, so concurrent messages to one word combine and
 * never tear (grain/device.h).  Within a kernel, a lane sees a message
 * applied to its own rank's heap when it waits for it (grain_wait_until,
 * grain/device/sync.h): since queued messages keep no order, what it waits
 * for must be the messages themselves (a count of arrivals, a word each
 * sender writes), or the signal of a put with signal (grain_put64_signal,
 * grain_putmem_signal), whose data is applied before its signal on every
 * path: not data that another message carried.
 *
 * Gets that do not wait (grain_get64_nbi, grain_getmem_nbi) have stored
 * their words into this rank's heap once the work-group's next grain_quiet
 * or grain_fence returns, and once this rank's next grain_quiet or
 * grain_barrier_all does; not before. */
grain_status_t grain_quiet(grain_t *grain);
grain_status_t grain_barrier_all(grain_t *grain);
GRAIN_DEPRECATED("grain_barrier is grain_barrier_all now") grain_status_t grain_barrier(grain_t *grain);

/* ---- host collectives (the transport is grain's; do not call MPI while
 * grain is initialized) ---------------------------------------------------- */
typedef enum grain_dtype { GRAIN_INT64, GRAIN_UINT64, GRAIN_DOUBLE } grain_dtype_t;
typedef enum grain_op { GRAIN_SUM, GRAIN_MIN, GRAIN_MAX } grain_op_t;

grain_status_t grain_allreduce(grain_t *grain, void *buf, size_t count, grain_dtype_t dtype,
                               grain_op_t op);
grain_status_t grain_broadcast(grain_t *grain, void *buf, size_t size, int root);
/* Every rank sends send_bytes[r] bytes to each rank r, laid out in `send` in
 * rank order, and receives into `recv`, in rank order too, what each rank
 * sends it; recv_bytes[r] is set to the bytes from rank r.  `max_bytes`, the
 * same on every rank, bounds what one rank sends another, so `recv` needs
 * n_pes x max_bytes bytes.  A rank that sends more than max_bytes to
 * another sends it nothing instead, and both ranks return GRAIN_ERR_INVALID
 * naming the other; the exchange still completes everywhere. */
grain_status_t grain_alltoallv(grain_t *grain, const void *send, const size_t *send_bytes, size_t max_bytes,
                               void *recv, size_t *recv_bytes);

/* ---- counter-triggered transfers (ProACT; docs/design.md) -------------------
 * A region is an array a producer kernel writes, parts of which (segments)
 * must reach other ranks or the host.  Segments are cut into chunks of
 * chunk_bytes (the last one shorter); a chunk moves as soon as the
 * work-groups that write it, which the mapping names, have called
 * grain_chunk_done (grain/device/chunks.h).  Every iteration:
 *
 *   grain_region_begin(r);  launch the producer;  grain_region_end(r);
 *
 * and after end every destination holds every segment (end is collective).
 * The next iteration's chunks land in the same copies as soon as their
 * producers run: alternate two regions (as build/bin/jacobi does) or
 * separate the iterations with grain_barrier_all. */
typedef struct grain_region grain_region_t;

/* Who moves a chunk once it is ready. */
typedef enum grain_agent {
    GRAIN_AGENT_AUTO,   /* GRAIN_TRANSFER_AGENT, else the transfer profile's, else host */
    GRAIN_AGENT_BULK,   /* nobody while the kernel runs: one copy per segment after it (the baseline) */
    GRAIN_AGENT_HOST,   /* host threads polling the chunks' ready words */
    GRAIN_AGENT_DEVICE, /* a polling kernel beside the producer (CUDA, HIP) */
    GRAIN_AGENT_LAUNCH, /* a copy grid launched from the device by the work-group that completes a chunk
                           (CUDA dynamic parallelism, OpenCL device-side enqueue; HIP falls back
                           to device; OpenCL refuses on devices without device-side enqueue) */
    GRAIN_AGENT_INLINE, /* the producer's own stores (grain_region_store64) reach the destinations */
    GRAIN_AGENT_IDEAL,  /* nothing moves: the time with free transfers, for comparison only */
    GRAIN_AGENT_COUNT
} grain_agent_t;
const char *grain_agent_name(grain_agent_t agent);
/* "auto", "bulk", "host", "device", "launch", "inline", "ideal"; GRAIN_ERR_INVALID naming them otherwise. */
grain_status_t grain_agent_parse(const char *name, grain_agent_t *agent_p);

/* Which bytes of the region each work-group of the producer launch writes. */
typedef enum grain_map_kind {
    GRAIN_MAP_CONTIGUOUS, /* group g: [offset + g * bytes, offset + (g + 1) * bytes) */
    GRAIN_MAP_STRIDED,    /* group g: the blocks of `bytes` from `offset` numbered g, g + groups,
                             g + 2 groups, ... (a grid-stride loop) */
    GRAIN_MAP_STENCIL,    /* 2-D tiles of a row-major grid; device code's grain_stencil_tile_row
                             gives the tile row of a launch row (halo rows first) */
    GRAIN_MAP_USER,       /* ranges() says */
} grain_map_kind_t;

typedef struct grain_chunk_map {
    grain_map_kind_t kind;
    uint64_t groups; /* work-groups of the producer launch */
    uint64_t bytes;  /* contiguous, strided: bytes of a block */
    uint64_t offset; /* contiguous, strided: where the first block starts */
    /* stencil: rows of row_bytes from first_row on, in tiles of tile_rows x
     * tile_bytes; launch group g is tile column g % columns of launch row
     * g / columns, columns = ceil(row_bytes / tile_bytes). */
    uint64_t row_bytes, first_row, rows, tile_rows, tile_bytes;
    /* user: writes up to `max` ranges of group `group` and returns how many
     * there are (a larger count: called again with room for them). */
    size_t (*ranges)(void *arg, uint64_t group, uint64_t *offsets, uint64_t *sizes, size_t max);
    void *arg;
} grain_chunk_map_t;

/* Destinations of a segment besides a PE number (grain/device/chunks.h). */
#define GRAIN_REGION_PEERS (-1) /* every other rank, at the same offset */
#define GRAIN_REGION_HOST (-2)  /* this rank's host copy */

typedef struct grain_segment {
    uint64_t offset, size; /* bytes of the region */
    int dest;              /* a PE other than this one, GRAIN_REGION_PEERS or GRAIN_REGION_HOST */
    uint64_t dest_offset;  /* where it lands in the destination's copy (PEERS: ignored, the same) */
} grain_segment_t;

/*
 * The agent, chunk size and threads a region gets: its description's, else
 * the settings' (GRAIN_TRANSFER_AGENT, GRAIN_CHUNK_SIZE,
 * GRAIN_TRANSFER_THREADS), else, for a region with a name, the transfer
 * profile's line for this device and that name (bench/transfer_profile.py
 * writes it; its chunk size and threads only where its agent is the one
 * chosen), else host, 256 KiB and 1 thread (16 work-groups for device and
 * launch).
 */
typedef struct grain_region_desc {
    size_t size;        /* bytes, the same on every rank */
    size_t chunk_bytes; /* 0: see above */
    grain_chunk_map_t map;
    const grain_segment_t *segments; /* this rank's; up to 8 (none: it only receives) */
    unsigned n_segments;
    grain_agent_t agent;
    unsigned transfer_threads; /* host threads, or work-groups of the device agent or of each
                                  launched copy; 0: see above */
    const char *name;          /* the transfer profile's key: the app, e.g. "jacobi"; NULL: none */
} grain_region_desc_t;

/* Collective.  Checks that every chunk is written by some work-group (a
 * chunk nobody writes would never move) and that the agent can reach every
 * destination, with a sentence naming what is wrong. */
grain_status_t grain_region_create(grain_t *grain, const grain_region_desc_t *desc, grain_region_t **region_p);
/* Collective. */
void grain_region_destroy(grain_region_t *region);
/* This rank's copy, which kernels write (and read); zeroed at creation. */
void *grain_region_data(grain_region_t *region);
/* The host copy that GRAIN_REGION_HOST segments land in (NULL without one). */
void *grain_region_host(grain_region_t *region);
/* Passes the region to a kernel as a GRAIN_GLOBAL grain_region_dev_t *. */
grain_status_t grain_kernel_set_arg_region(grain_kernel_t *kernel, unsigned index, grain_region_t *region);
/* Before the producer's launch: arms the agent for one iteration. */
grain_status_t grain_region_begin(grain_region_t *region);
/* Collective: waits for the kernels and for every chunk's transfer, then
 * until every rank has received what was sent to it (a grain_quiet). */
grain_status_t grain_region_end(grain_region_t *region);

typedef struct grain_region_stats {
    uint64_t iterations;
    uint64_t chunks;         /* of the region */
    uint64_t chunk_bytes;
    uint64_t transfer_threads; /* host threads, or work-groups of the device agent or of each launched copy */
    uint64_t moves;          /* chunk moves to a destination, all iterations */
    uint64_t min_moves, max_moves; /* over the chunks: each moved once an iteration makes both iterations */
    uint64_t bytes_sent;     /* through the transport */
    uint64_t bytes_received; /* through the transport, into this rank's copy */
    uint64_t bytes_written;  /* RDMA-written into peers' copies (the verbs transport's puts) */
    uint64_t mapped_peers;   /* peers whose copy this rank stores to directly */
    uint64_t unlaunched;     /* the launch agent: copies the device had no room for, made by the host */
    /* Where grain_region_end's time went, all iterations: waiting for the
     * producer, then for this rank's chunks still on their way after it
     * (the transfer time the agent did not hide), then for the other ranks
     * (their chunks to this rank, and the barrier). */
    uint64_t producer_wait_ns, drain_ns, others_ns;
    grain_agent_t agent;     /* the one chosen */
    int profiled;            /* the transfer profile chose something */
} grain_region_stats_t;
grain_status_t grain_region_stats(grain_region_t *region, grain_region_stats_t *stats);

/* ---- statistics (docs/design.md "Errors, configuration, observability") ------ */
/* Where this rank's time went since grain_init, on the critical path of each
 * epoch: from the first launch after a wait to the end of the quiet that
 * completes it.  The parts follow one another, so they add up to the epochs'
 * length; work that overlaps the kernels (aggregators packing, buffers on the
 * wire) counts only where the application thread waits for it.  Take two
 * readings around a region to split its time. */
typedef struct grain_time_split {
    double compute_s;     /* kernels running, sends into a full queue included */
    double queue_s;       /* after them: the aggregators reading the slots they left */
    double aggregation_s; /* then: flushing the packed buffers */
    double network_s;     /* then: the messages sent here arriving and applied, the closing barrier */
} grain_time_split_t;
grain_status_t grain_time_split(grain_t *grain, grain_time_split_t *split);

void grain_stats_print(grain_t *grain, FILE *out);
/* One JSON object (no trailing newline). */
void grain_stats_json(grain_t *grain, FILE *out);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* GRAIN_GRAIN_H */
