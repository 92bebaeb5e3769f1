/*
 * grain host API.
 *
 * A grain process is one rank (PE).  grain_init() picks a backend (the GPU
 * API) and a transport (how ranks talk), allocates this rank's symmetric heap
 * and device queue, and starts the aggregator and network threads.  Kernels
 * built with grain_program_create() take the device context as their first
 * argument (GRAIN_KERNEL_CTX in grain/device.h) and send one-sided messages;
 * grain_quiet() returns once all of them are applied everywhere.
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
} grain_status_t;

const char *grain_strerror(grain_status_t status);

/* ---- configuration ------------------------------------------------------
 * Every setting has a GRAIN_* environment variable; grain_config_create()
 * reads them over the defaults and grain_config_set() overrides by name
 * ("queue_slots" or "GRAIN_QUEUE_SLOTS").  Sizes take K/M/G suffixes. */
typedef struct grain_config grain_config_t;

grain_status_t grain_config_create(grain_config_t **config_p);
grain_status_t grain_config_set(grain_config_t *config, const char *name, const char *value);
/* Whether `name` names a setting (either spelling). */
int grain_config_known(const char *name);
void grain_config_print(const grain_config_t *config, FILE *out);
void grain_config_destroy(grain_config_t *config);

/* ---- life cycle --------------------------------------------------------- */
typedef struct grain grain_t;

/* `config` may be NULL (defaults and environment).  Collective. */
grain_status_t grain_init(const grain_config_t *config, grain_t **grain_p);
/* Drains outstanding messages, reports statistics when GRAIN_STATS=1, frees
 * everything.  Collective. */
grain_status_t grain_finalize(grain_t *grain);

int grain_my_pe(const grain_t *grain);
int grain_n_pes(const grain_t *grain);
const char *grain_backend_name(const grain_t *grain);
const char *grain_transport_name(const grain_t *grain);
const char *grain_device_name(const grain_t *grain);
/* The sentence that explained the last error on this rank ("" if none). */
const char *grain_error_message(const grain_t *grain);

/* ---- memory --------------------------------------------------------------
 * The symmetric heap: collective, same size on every rank, same offset on
 * every rank.  Device code addresses remote copies by local pointer + PE. */
grain_status_t grain_malloc(grain_t *grain, size_t size, void **ptr_p);
grain_status_t grain_free(grain_t *grain, void *ptr);
/* Where `ptr` lies in the symmetric heap, in bytes from its start: the same
 * on every rank, so an active message can carry it (as device code's
 * grain_offset does).  GRAIN_ERR_INVALID for a pointer outside the heap. */
grain_status_t grain_heap_offset(grain_t *grain, const void *ptr, uint64_t *offset_p);

/* Private memory that kernels and the host can both use (not symmetric). */
grain_status_t grain_mem_alloc(grain_t *grain, size_t size, void **ptr_p);
grain_status_t grain_mem_free(grain_t *grain, void *ptr);
/* Copy between host memory and grain memory (either direction); the portable
 * way to read results on devices whose memory the host cannot address. */
grain_status_t grain_memcpy(grain_t *grain, void *dst, const void *src, size_t size);

/* ---- kernels ------------------------------------------------------------ */
typedef struct grain_program grain_program_t;
typedef struct grain_kernel grain_kernel_t;

/* `source` uses the dialect of grain/device.h, which the runtime provides
 * (the build tool grain_embed inlines it).  `options` may be NULL. */
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
 * heap is in device memory, GRAIN_APPLY=device). */
grain_status_t grain_am_register(grain_t *grain, unsigned id, grain_am_fn handler);
/* The device functions `program` lists in GRAIN_AM_HANDLERS (grain/device.h):
 * each runs on the destination's device, in the sending work-item for a
 * message to its own PE (when the sending program defines it too) and in an
 * apply kernel otherwise; an id registered both ways runs on the device.  A
 * later call replaces the ids of an earlier one.  GRAIN_ERR_INVALID when the
 * program lists no handler or an id of GRAIN_MAX_HANDLERS (256) or more. */
grain_status_t grain_am_register_program(grain_t *grain, grain_program_t *program);

/* ---- completion ----------------------------------------------------------
 * Both collective: they return when every message issued before the call, by
 * every rank, has been applied at its destination.  grain_barrier() is the
 * name OpenSHMEM users reach for; in grain, quiet already synchronizes. */
grain_status_t grain_quiet(grain_t *grain);
grain_status_t grain_barrier(grain_t *grain);

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

/* ---- statistics (DESIGN.md "Errors, configuration, observability") ------ */
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

#ifdef __cplusplus
}
#endif

#endif /* GRAIN_GRAIN_H */
