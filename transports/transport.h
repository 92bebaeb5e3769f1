/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transports move packed buffers between ranks and run the few host
 * collectives the runtime and apps need.  A transport owns its progress: the
 * MPI transport runs a network thread that is the only caller of MPI, so the
 * receive path never waits on anything but the network.
 */
#ifndef GRAIN_TRANSPORTS_TRANSPORT_H
#define GRAIN_TRANSPORTS_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "grain/grain.h"

typedef struct grain_transport grain_transport_t;

/* What send() is given as its token: the sender's buffer, whose `sent`
 * hands it back once the transport no longer needs it (the aggregators'
 * packed buffers, the transfer agents' chunk pieces). */
typedef struct grain_send_token {
    void (*sent)(struct grain_send_token *token);
} grain_send_token_t;

typedef struct grain_transport_handlers {
    /* A buffer arrived from `src`.  Called from the transport's thread;
     * returns 1 where the runtime still reads it (an asynchronous copy into
     * device memory): the buffer is held until settle frees it.  Held
     * buffers are freed in the order received() took them. */
    int (*received)(void *arg, uint32_t src, const void *data, size_t len);
    /* Returns how many of the oldest held buffers are the transport's
     * again; with `wait`, all of them, once they are.  Without, it never
     * waits: a transport calls it as it polls, so that no buffer waits for
     * a later one's copy. */
    unsigned (*settle)(void *arg, int wait);
    /* The buffer passed to send() with `token` may be reused. */
    void (*sent)(void *arg, void *token);
    /* A buffer from `src` the transport will not deliver (a sequence number
     * it cannot have), and why: the runtime reports and counts it. */
    void (*rejected)(void *arg, uint32_t src, const void *data, size_t len, const char *why);
    /* Rank `rank` (-1: unknown) failed, and why: it died, stopped, accepts
     * nothing, or the network returned an error.  Called once, from the
     * transport's thread; from then on every collective returns
     * GRAIN_ERR_PEER and send() may drop what it is given, returning
     * GRAIN_ERR_PEER, as the job is ending. */
    void (*failed)(void *arg, int rank, const char *why);
    void *arg;
    /* Memory for receive buffers, whose contents the runtime may copy into
     * device memory; NULL: the transport's own.  The runtime gives pinned
     * memory where the device has its own, so that those copies are DMA. */
    void *(*alloc_recv)(void *arg, size_t size);
    void (*free_recv)(void *arg, void *ptr);
} grain_transport_handlers_t;

typedef enum grain_coll_kind {
    GRAIN_COLL_BARRIER,
    GRAIN_COLL_ALLREDUCE,
    GRAIN_COLL_ALLTOALL_U64, /* count words to each rank */
    GRAIN_COLL_BROADCAST,
    GRAIN_COLL_ALLTOALLV, /* bytes: counts and displacements per rank */
} grain_coll_kind_t;

typedef struct grain_coll {
    grain_coll_kind_t kind;
    void *buf;     /* in place for allreduce and broadcast; send buffer for alltoall */
    void *recv;    /* alltoall only */
    size_t count;  /* elements (allreduce), words per rank (alltoall), bytes (broadcast) */
    grain_dtype_t dtype;
    grain_op_t op;
    int root;
    const int *send_counts, *send_displs, *recv_counts, *recv_displs; /* alltoallv only */
} grain_coll_t;

typedef struct grain_transport_ops {
    size_t size;
    const char *name;
    /* Joins the job: learns this rank and the number of ranks.  `mpi_comm`
     * (an MPI_Comm *, or NULL) is the application's communicator, which the
     * transports that start over MPI join instead of MPI_COMM_WORLD. */
    grain_status_t (*open)(grain_transport_t **transport_p, const grain_config_t *config, const void *mpi_comm,
                           int *my_pe_p, int *n_pes_p);
    /* Starts progress; `recv_size` is the largest buffer a peer sends. */
    grain_status_t (*start)(grain_transport_t *t, const grain_transport_handlers_t *handlers,
                            size_t recv_size, unsigned recv_buffers);
    /* Queues `len` bytes for `dest` (never this rank); any thread. */
    grain_status_t (*send)(grain_transport_t *t, uint32_t dest, const void *data, size_t len,
                           void *token);
    /* Collective, from the application thread; receives keep being applied
     * while it runs. */
    grain_status_t (*collective)(grain_transport_t *t, const grain_coll_t *coll);
    /* Stops progress (every send must have completed) and leaves the job. */
    void (*close)(grain_transport_t *t);
    /* Whether progress needs a thread of its own (for core accounting). */
    int uses_thread;
    /* Whether start's `recv_buffers` counts the receives of each peer (a
     * ring per peer) rather than of all peers together. */
    int receives_per_peer;
    /* Whether the buffers this rank receives will be written into its
     * memory by their senders (one-sided puts) rather than copied in by
     * the transport's thread, as it expects before start (start may still
     * find the network unable to): then packing, not that thread, limits
     * the path, and the runtime gives the aggregators more of the rank's
     * cores.  NULL: copied in, or not measured. */
    int (*receives_written)(grain_transport_t *t);
    /* Buffers of one source reach `received` in the order of their
     * sequence numbers (grain_wire_hdr_t.seq): work-group quiets rely on it
     * (quiets.h).  A transport that restores that order itself says so
     * here; for the others the runtime numbers and sends each destination's
     * buffers under one lock, and the transport keeps the order of its
     * send() calls to one destination. */
    int restores_order;

    /* One-sided writes between symmetric heaps, for the chunks of
     * counter-triggered transfers; NULL where the transport has none. */
    /* Collective: makes this rank's heap [base, base + size) a source and a
     * target of put(); *ready_p is 1 only when every rank's is (a rank that
     * could not says why in the log), and put() may be used only then. */
    grain_status_t (*register_heap)(grain_transport_t *t, void *base, size_t size, int *ready_p);
    /* Writes `len` bytes at heap offset `from` here to heap offset `to` of
     * `dest` (never this rank); any thread; waits while the destination's
     * writes in flight fill the send queue. */
    grain_status_t (*put)(grain_transport_t *t, uint32_t dest, uint64_t from, uint64_t to, size_t len);
    /* Waits until every put so far has landed; returns the first error. */
    grain_status_t (*put_wait)(grain_transport_t *t);

    /* Two-sided messages of device endpoints (grain/ep.h) to and from
     * other ranks, on a channel apart from the buffers above; NULL where
     * the transport has none.  Any thread.  ep_isend and ep_irecv start a
     * message and return its request; receives match messages by (rank,
     * tag) in the order sent and the order posted.  ep_test says without
     * waiting whether a request is done (1: its status in *st, a receive's
     * length in *len, the request freed) or a rank failed (1, with
     * GRAIN_ERR_PEER); a message longer than `cap` is refused.  ep_cancel
     * drops a receive nobody waits for.  ep_tags: the tags it carries,
     * 0 .. ep_tags - 1 (0: none now). */
    grain_status_t (*ep_isend)(grain_transport_t *t, uint32_t dest, uint64_t tag, const void *data, size_t len,
                               void **req_p);
    grain_status_t (*ep_irecv)(grain_transport_t *t, uint32_t src, uint64_t tag, void *data, size_t cap,
                               void **req_p);
    int (*ep_test)(grain_transport_t *t, void *req, size_t *len, grain_status_t *st);
    void (*ep_cancel)(grain_transport_t *t, void *req);
    uint64_t (*ep_tags)(grain_transport_t *t);

    /* Nanoseconds the transport's own thread has spent in the library's
     * progress calls (MPI_Testsome and the like), whatever they completed:
     * where the network thread is the limit, this is most of the run.  NULL
     * where the transport has no thread or does not measure it. */
    uint64_t (*progress_ns)(grain_transport_t *t);
} grain_transport_ops_t;

extern const grain_transport_ops_t grain_transport_self;
#ifdef GRAIN_HAVE_MPI
extern const grain_transport_ops_t grain_transport_mpi;
/* Whether the MPI transport `t` found a rank failed (its `why`, kept as
 * grain_error_message, in that case): the verbs transport, bootstrapped
 * over it, stops waiting for its peers then. */
int grain_transport_mpi_failed(grain_transport_t *t);
#endif
#ifdef GRAIN_HAVE_VERBS_TRANSPORT
extern const grain_transport_ops_t grain_transport_verbs;
#endif

/* The transports built in, NULL-terminated. */
const char *const *grain_transports_built(void);

/* Opens the first transport of `names` (GRAIN_TRANSPORT: auto, mpi, self,
 * verbs, or a comma-separated list of them) that opens; falling back to a
 * later one is warned about, naming why the first failed.  With `mpi_comm`,
 * auto means mpi and self is refused: the ranks are the communicator's. */
grain_status_t grain_transport_open(const char *names, const grain_config_t *config, const void *mpi_comm,
                                    const grain_transport_ops_t **ops_p, grain_transport_t **t_p, int *my_pe_p,
                                    int *n_pes_p);

#endif
