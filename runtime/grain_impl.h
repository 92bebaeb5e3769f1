/* SPDX-License-Identifier: BSD-3-Clause */
/* The runtime's state of one rank. */
#ifndef GRAIN_RUNTIME_GRAIN_IMPL_H
#define GRAIN_RUNTIME_GRAIN_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backends/backend.h"
#include "grain/device/ctx.h"
#include "grain/grain.h"
#include "runtime/heap.h"
#include "runtime/messages/lent.h"
#include "runtime/messages/packer.h"
#include "runtime/messages/queue_consumer.h"
#include "runtime/node.h"
#include "runtime/transfers/region.h"
#include "services/bell.h"
#include "services/config.h"
#include "transports/transport.h"

/* A queue's two allocations (runtime/messages/queue.c). */
typedef struct grain_queue_mem {
    grain_queue_t *shared;   /* host memory: header and rings */
    grain_ring_prod_t *prod; /* device memory: the rings' producer state */
    grain_queue_desc_t desc; /* what kernels are given */
} grain_queue_mem_t;

typedef enum grain_phase {
    GRAIN_PHASE_COMPUTE,
    GRAIN_PHASE_QUEUE,
    GRAIN_PHASE_AGGREGATION,
    GRAIN_PHASE_NETWORK,
    GRAIN_PHASE_COUNT
} grain_phase_t;

/* Cache-line aligned: aggregators sit side by side in one array, and a
 * thread's per-message counters on the line of its neighbour's `grain`
 * pointer made two aggregators each slower than one alone. */
typedef struct grain_aggregator {
    _Alignas(64) struct grain *grain;
    unsigned index;
    pthread_t thread;
    grain_packer_t packer;
    grain_queue_reader_t reader;
    grain_aggregation_t scope; /* GRAIN_AGGREGATION */
    int awaited;               /* the slot being dispatched held a fetch or quiet: a lane waits for its reply */
    /* Quiet requests of the slot being dispatched (header, first row),
     * sent once the slot is done: queue width x 2 words. */
    uint64_t *quiets;
    unsigned n_quiets;
    atomic_uint_fast64_t quiet_ack; /* last quiet_epoch served: what it dispatched before is flushed */
    /* Owned by the thread; read by others only after a flush handshake. */
    uint64_t slots;
    uint64_t cmd_msgs[GRAIN_CMD_COUNT];
    uint64_t local_msgs;
    uint64_t remote_msgs;
    uint64_t lost_msgs; /* dropped once a rank failed (GRAIN_ERR_PEER): the job is ending */
    uint64_t gets_nbi;  /* gets that do not wait, which grain_barrier_all must complete */
    /* Time from a take that found a slot to the next one that found none:
     * with the run's length it says whether the aggregators keep up or wait
     * for the producers. */
    uint64_t busy_ns;
    uint64_t drained_at_ns; /* when a drain last found the queue empty */
    atomic_uint_fast64_t flush_ack; /* last flush epoch served (publishes drained_at_ns) */
} grain_aggregator_t;

/* What task schedulers count, in their own statistics and in their rank's. */
enum {
    GRAIN_SCHED_COUNT_ELEMENTS,
    GRAIN_SCHED_COUNT_EDGES,
    GRAIN_SCHED_COUNT_COPIES,
    GRAIN_SCHED_COUNT_BYTES_COPIED,
    GRAIN_SCHED_COUNT_BYTES_PEER,
    GRAIN_SCHED_COUNT_KERNELS,
    GRAIN_SCHED_COUNT_VENDOR_GEMMS,
    GRAIN_SCHED_COUNTS
};

/* What device endpoints' sends count, by the path each took, in their
 * rank's statistics ("endpoints"; every endpoint thread adds). */
enum {
    GRAIN_EP_COUNT_DEVICE_MSGS, /* between endpoints of the rank, device to device */
    GRAIN_EP_COUNT_DEVICE_BYTES,
    GRAIN_EP_COUNT_MAILBOX_MSGS, /* between endpoints of the rank, through its mailbox (ep_stage.c) */
    GRAIN_EP_COUNT_MAILBOX_BYTES,
    GRAIN_EP_COUNT_RANK_MSGS, /* to another rank's endpoints, through the transport */
    GRAIN_EP_COUNT_RANK_BYTES,
    GRAIN_EP_COUNT_WINDOW_MSGS, /* to the endpoints of another rank of the node, through the sender's window */
    GRAIN_EP_COUNT_WINDOW_BYTES,
    GRAIN_EP_COUNTS
};

struct grain {
    grain_config_t config;
    int my_pe, n_pes;

    const grain_backend_ops_t *bops;
    grain_backend_t *backend;
    grain_backend_info_t binfo;

    const grain_transport_ops_t *tops;
    grain_transport_t *transport;

    grain_dev_t dev_host;     /* the device context as the host builds it */
    grain_dev_t *dev;         /* its copy in device memory, argument 0 of kernels */
    grain_dev_err_t *dev_err; /* in shared memory */
    grain_queue_mem_t queue;
    int apply_on_device;         /* GRAIN_APPLY resolved: the heap is in device memory */
    /* The node (runtime/node.c) and the direct path: the heap in peer
     * memory, the node's other heaps mapped here, and what kernels get of
     * them (grain_dev_t.peers). */
    int *node_of;
    unsigned node_size;
    int heap_peer;               /* the heap is peer memory (alloc_peer) */
    int heap_host_access;        /* host threads address the heap (not a GPU's peer memory) */
    int host_handlers;           /* every rank's heap is within its host threads' reach */
    int heap_scope_system;       /* some rank maps another device's heap: system-scope heap atomics */
    grain_peer_maps_t heap_peers;
    grain_peer_t *peers_dev;     /* device memory, n_pes entries */
    uint64_t *replies;           /* reply slots (grain_dev_t.replies), then the host's, one a rank */
    uint32_t host_quiets;        /* grain_quiet calls: the generation of the host's reply slots */
    uint64_t gets_nbi_done;      /* the aggregators' gets_nbi at the last host quiet */
    uint64_t *reply_next;        /* device memory */
    /* Sends the replies to other ranks' fetches; set after the network
     * thread starts, which reads it (settle), hence atomic. */
    struct grain_replier *_Atomic replier;
    grain_wire_replies_t reply_sink; /* what host threads apply fetches, replies and quiet requests with */
    struct grain_quiets *quiets;     /* answers work-group quiet requests (quiets.h) */
    int heap_puts;               /* the transport writes into every rank's heap (transport.h put) */
    atomic_uint_fast64_t app_launches; /* kernels the application has launched */
    /* Apply kernels: made at init with apply_on_device, else by the first
     * grain_am_register_program while the receive path runs. */
    struct grain_applier *_Atomic applier;
    char *heap;
    grain_heap_t heap_alloc;
    pthread_mutex_t heap_lock;

    grain_am_table_t am;
    unsigned apply_stages; /* stages of the apply engine, made when first needed */
    unsigned apply_agent_groups; /* work-groups of its resident agent (GRAIN_APPLY_AGENT); 0: none */

    grain_aggregator_t *aggs;
    unsigned n_aggs;
    atomic_int stop;
    /* A rank failed (the transport said so): every wait gives up, and
     * messages are dropped rather than waited for. */
    atomic_int failed;
    char failed_why[512]; /* the transport's sentence, written before `failed` */
    atomic_uint_fast64_t flush_epoch; /* bumped to make aggregators drain the queue and flush */
    atomic_uint_fast64_t quiet_epoch; /* bumped to make them flush what they dispatched (a quiet request) */
    grain_bell_t agg_bell;            /* rung with it, and at stop */

    /* Completion counting (cumulative, never reset). */
    _Atomic uint64_t *applied_from; /* messages from each rank applied here */
    _Atomic uint64_t *next_seq;     /* buffers sent to each rank */
    pthread_mutex_t *send_order;    /* per rank, where the transport does not restore order (restores_order) */
    uint64_t *recv_buffers_from;    /* network thread only */
    _Atomic uint64_t *rejected_from; /* buffers, then messages, rejected per source (2n): the network
                                        thread counts, others read */
    uint64_t recv_bytes;            /* network thread only */
    uint64_t recv_busy_ns;          /* network thread only: validating and handing on received buffers */
    uint32_t *recv_marks;           /* network thread only: grain_receive_buffer's scratch */
    /* Chunk pieces of counter-triggered transfers, counted for quiet. */
    _Atomic uint64_t *pieces_to;   /* sent to each rank */
    _Atomic uint64_t *pieces_from; /* received from each rank */
    /* Network thread only: the transport's buffers the runtime still
     * reads, oldest first, and those finished while the ledger was full,
     * whose buffers the transport has not yet been told are free (lent.h). */
    grain_lent_t lent[GRAIN_LENT_MAX];
    unsigned n_lent, lent_freed;
    unsigned recv_threads;             /* GRAIN_RECV_THREADS resolved */
    struct grain_receivers *receivers; /* recv_threads > 1: the receive threads */
    /* Regions by id (the same on every rank: creation is collective), for
     * the pieces that arrive; and the device agent's kernel, built once. */
    struct grain_region *_Atomic regions[GRAIN_MAX_REGIONS];
    struct grain_program *agent_program;
    struct grain_kernel *agent_kernel;

    /* First asynchronous error (bad received buffer, failed send), reported
     * by the next call of the application with the count of those after
     * it; every one is logged as it happens. */
    pthread_mutex_t error_lock;
    grain_status_t async_status;
    char async_message[512];
    unsigned async_more;

    int kernels_in_flight;
    double init_seconds;

    /* The application thread's time from the first launch of an epoch to the
     * end of its quiet, split where the critical path changes hands (stats
     * "time_split"): kernels running, then the aggregators reading what the
     * kernels left in the queue, then their last flush, then waiting for the
     * network, the remote apply and the other ranks. */
    uint64_t epoch_start_ns;
    uint64_t phase_ns[GRAIN_PHASE_COUNT];

    /* What the rank's task schedulers did, over all of them (grain/sched.h;
     * statistics "sched"), by GRAIN_SCHED_*; their owner thread alone
     * writes them. */
    uint64_t sched_counts[GRAIN_SCHED_COUNTS];
    atomic_uint_fast64_t ep_counts[GRAIN_EP_COUNTS];

    /* The tiled BLAS's kernels, built at its first call (blas_run.c). */
    struct grain_blas_state *blas;
};

/* Releases the tiled BLAS's kernels, before the backend closes. */
void grain_blas_release(struct grain *g);

/* The rings GRAIN_QUEUE, GRAIN_QUEUE_RINGS and the device give the queue. */
unsigned grain_queue_rings_of(const struct grain *g);
/* The shape GRAIN_QUEUE, GRAIN_QUEUE_RINGS and the device give a queue of
 * `nslots` slots per ring (0: the protocol's default) of width x rows words. */
grain_queue_geom_t grain_queue_geom_of(const struct grain *g, uint32_t nslots, uint32_t width, uint32_t rows);
grain_status_t grain_queue_create(struct grain *g, grain_queue_geom_t geom, grain_queue_mem_t *m);
void grain_queue_destroy(struct grain *g, grain_queue_mem_t *m);
/* The producer counters summed over the rings (full_waits, in_place and
 * direct; the rest zero). */
grain_status_t grain_queue_counters(struct grain *g, const grain_queue_mem_t *m, grain_ring_prod_t *sum);
/* grain_init_attr with the application's MPI communicator (an MPI_Comm *,
 * or NULL) and the transport given instead of GRAIN_TRANSPORT's (NULL: that
 * one), for benchmarks that take the network out. */
grain_status_t grain_init_transport(const grain_config_t *config, const void *mpi_comm,
                                    const grain_transport_ops_t *tops, struct grain **grain_p);
/* Copies dev_host to the device; only while no kernel runs. */
grain_status_t grain_dev_upload(struct grain *g);

/* The directory holding grain/device.h for a source that includes grain's
 * headers rather than having them inlined: GRAIN_INCLUDE_DIR, else the
 * build tree's, else the installed prefix's (CMake defines both); "" for a
 * source that includes none of them. */
const char *grain_device_include_dir(const struct grain *g, const char *source);

/* The largest work-group size that divides `n`, at most `limit`. */
size_t grain_divisor_at_most(size_t n, size_t limit);
/* The work-group size of a kernel of `global` lanes launched without one:
 * the largest divisor of `global` up to 256 and the device's limit.  Past
 * 256 the largest divisor leaves SMs idle: 20000 rows got 20 work-groups
 * of 1000 lanes for an H200's 132 SMs. */
size_t grain_wg_default(size_t global, size_t device_max);

/* Keeps a program alive past the application's grain_program_destroy, until
 * a matching grain_program_destroy of the runtime's own. */
void grain_program_retain(grain_program_t *program);
struct grain *grain_program_grain(const grain_program_t *program);

/* Launches a runtime kernel on the backend's side stream (runtime/messages/apply.c). */
grain_status_t grain_kernel_launch_side(grain_kernel_t *k, size_t global, size_t local, uint64_t *n_p);

/* Launches a runtime kernel on the backend's agent stream (the device agent). */
grain_status_t grain_kernel_launch_agent(grain_kernel_t *k, size_t global, size_t local);

/* Collective: *other_p is a value another rank gave that differs from
 * this rank's `value`, or `value` itself when every rank gave it. */
grain_status_t grain_same_everywhere(struct grain *g, uint64_t value, uint64_t *other_p);

/* Records an error seen off the application thread. */
void grain_async_error(struct grain *g, grain_status_t status, const char *message);
/* Reports (and clears) a pending asynchronous or device-side error. */
grain_status_t grain_take_errors(struct grain *g);
/* Every rank has reached this call (the transport's barrier; no quiet). */
grain_status_t grain_ranks_barrier(struct grain *g);

grain_status_t grain_aggregators_start(struct grain *g);
void grain_aggregators_stop(struct grain *g);
/* With no kernel running: waits until every published slot is processed and
 * every aggregator has flushed its buffers (flush cause "quiet"); returns
 * when the last of them found the queue empty (grain_now_ns). */
uint64_t grain_aggregators_drain(struct grain *g);

int grain_transport_received(void *arg, uint32_t src, const void *data, size_t len);
void grain_transport_rejected(void *arg, uint32_t src, const void *data, size_t len, const char *why);
void grain_transport_failed(void *arg, int rank, const char *why);
unsigned grain_transport_settle(void *arg, int wait);
/* Validates and applies a buffer from `src` (the transport's, or one this
 * rank sent itself) and counts it for quiet; any thread.  `marks` is the
 * caller's scratch for the apply kernel's bitmap (wire.h), of
 * grain_receive_marks_bytes, or NULL: allocated here when needed.  `epoch`
 * is what the buffer took when it arrived (grain_quiets_arrived), left once
 * its messages are applied. */
void grain_receive_buffer(struct grain *g, uint32_t src, const void *data, size_t len, uint32_t *marks,
                          struct grain_epoch *epoch);
size_t grain_receive_marks_bytes(const struct grain *g);
void grain_transport_sent(void *arg, void *token);

/* Sleeps a little; for the application thread's waits. */
void grain_wait_a_little(unsigned *spins);

#endif
