/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI transport's state, shared by its two files: transport_mpi.c
 * (buffers, sends, collectives) and transport_mpi_watch.c (failure
 * detection).  Everything but the collective's hand-off and the sends'
 * queue belongs to the network thread.
 */
#ifndef GRAIN_TRANSPORTS_TRANSPORT_MPI_H
#define GRAIN_TRANSPORTS_TRANSPORT_MPI_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "services/bell.h"
#include "services/config.h"
#include "transports/transport.h"

#define DATA_TAG 0x6752
#define SEQ_WINDOW (1ull << 20)

typedef struct send_node {
    struct send_node *next;
    uint32_t dest;
    const void *data;
    size_t len;
    void *token;
    MPI_Request req;    /* posted by the aggregator in "multiple" mode */
    uint64_t queued_ns; /* when send() took it: a destination that accepts nothing shows here */
} send_node_t;

typedef struct held_buffer {
    struct held_buffer *next;
    int src;
    uint64_t seq;
    uint64_t since_ns; /* when it was set aside: the gap before it must fill in time */
    size_t len;
    unsigned char data[];
} held_buffer_t;

typedef enum { COLL_NONE, COLL_REQUESTED, COLL_STARTED, COLL_DONE } coll_state_t;

/* The put channel (transport_mpi_put.c). */
typedef struct put_wait {
    struct put_wait *next;
    const void *data;
    size_t len;
    void *token;
    uint64_t queued_ns;
} put_wait_t;

typedef struct mpi_put_peer {
    /* This rank's writes into the peer's ring for it: `lock` orders tickets
     * with the sends that wait for a credit. */
    pthread_mutex_t lock;
    uint64_t tickets; /* slots taken, in the order the writes are numbered */
    put_wait_t *wait_head, *wait_tail;
    /* The peer's writes into this rank's ring (the network thread's). */
    uint64_t arrived, consumed, returned;
} mpi_put_peer_t;

typedef struct mpi_put {
    MPI_Win win;
    uint32_t slots, slot_bytes;
    /* In the window, whose layout every rank shares: a ring of `slots`
     * slots for each peer, a stamp for each slot, and each peer's count of
     * this rank's writes it has consumed (its credit returns). */
    uint8_t *rings;
    _Atomic uint64_t *stamps;
    _Atomic uint64_t *credits;
    MPI_Aint stamps_at, credits_at;
    uint8_t *freed; /* slots given back out of order, for the network thread */
    mpi_put_peer_t *peers;
    atomic_uint waiting; /* sends waiting for a credit, all peers */
    unsigned next_peer;  /* where the network thread's next look for arrivals starts */
} mpi_put_t;

struct grain_transport {
    MPI_Comm comm;
    MPI_Comm ep_comm; /* device endpoints' two-sided messages (transport_mpi_ep.c) */
    uint64_t ep_tags; /* MPI's tags on it: 0 .. ep_tags - 1 */
    /* Under "serialized" the network thread posts and tests the endpoints'
     * requests: those handed to it, in order, and those it posted. */
    pthread_mutex_t ep_lock;
    struct ep_req *ep_queued, **ep_queued_tail;
    struct ep_req **ep_posted;
    unsigned n_ep_posted, cap_ep_posted;
    int my_pe, n_pes;
    int initialized_mpi;
    int multiple; /* aggregators post their own sends */
    grain_mpi_buffers_t buffers_as; /* GRAIN_MPI_BUFFERS */
    int one_node;                   /* every rank shares this rank's memory */
    mpi_put_t *put; /* buffers travel as MPI puts; NULL: as sends */
    grain_transport_handlers_t handlers;
    pthread_t thread;
    int running;
    atomic_int stop;
    grain_bell_t bell; /* rung for the network thread: a send queued, a collective asked for, stop */

    /* Receives, always all posted, and the early buffers set aside. */
    unsigned n_recv;
    size_t recv_size;
    uint8_t *recv_memory;
    MPI_Request *recv_reqs;
    uint64_t *next_seq;   /* per source */
    held_buffer_t *held;
    held_buffer_t *spare_held; /* set-aside buffers of recv_size bytes to reuse (the network thread's) */
    /* Buffers the runtime still reads, oldest first (a ring that grows):
     * a receive buffer, reposted as settle frees it, or a buffer that was
     * set aside, then freed. */
    struct mpi_lent {
        held_buffer_t *aside; /* NULL: receive buffer `index` */
        unsigned index;
    } *lent;
    unsigned lent_first, n_lent, lent_cap;
    int *indices;
    MPI_Status *statuses;
    uint64_t *arrival_seq; /* the sequence numbers of one MPI_Testsome's receives, to order them */

    /* Sends queued by aggregators, then in flight. */
    pthread_mutex_t lock;
    send_node_t *pending_head, *pending_tail;
    send_node_t *spare_nodes; /* sends done, to reuse: no allocation a buffer once there are enough */
    atomic_int n_pending;
    MPI_Request *send_reqs;
    send_node_t **send_nodes;
    int *send_done;
    int n_inflight, cap_inflight;

    /* One collective at a time, from the application thread. */
    pthread_mutex_t coll_lock;
    pthread_cond_t coll_done;
    const grain_coll_t *coll;
    coll_state_t coll_state;
    int coll_in_flight; /* the network thread's own view: started, not yet done */
    int coll_error;
    MPI_Request coll_req;

    /* Failure detection (transport_mpi_watch.c); timeout_ns 0: none. */
    uint64_t timeout_ns;
    uint64_t next_watch_ns, next_beat_ns;
    uint64_t *heard_ns;       /* per peer: its last heartbeat; 0 until one came or a collective completed */
    int coll_completed;       /* network thread: a collective completed, so every rank beats */
    MPI_Request beat_recv;
    uint64_t beat_in;
    MPI_Request *beat_reqs;   /* per peer: the heartbeat in flight to it */
    uint64_t *beat_sent_ns;
    _Atomic uint64_t progress_ns; /* written by the network thread only: its time in MPI_Testsome */
    atomic_int failing;       /* claimed by the first to find a failure */
    atomic_int failed;        /* `why` is written */
    char why[768];
};

/* MPI's sentence for error code `err`, in `text`. */
static inline const char *grain_mpi_error_string(int err, char text[MPI_MAX_ERROR_STRING])
{
    int len = 0;
    text[0] = '\0';
    MPI_Error_string(err, text, &len);
    return text;
}
grain_status_t grain_mpi_error(int err, const char *what);

/* Failure detection: heartbeats to every peer and the verdicts of
 * GRAIN_PEER_TIMEOUT_S.  start and stop run on the application thread
 * (before the network thread starts, after it stopped); watch on the
 * network thread, every round. */
grain_status_t grain_mpi_watch_start(grain_transport_t *t, unsigned timeout_s);
void grain_mpi_watch(grain_transport_t *t);
void grain_mpi_watch_stop(grain_transport_t *t);
/* Reports rank `rank` (-1: unknown) failed, once for the job: the sentence
 * (printf-style), then what this rank has pending with it.  Any thread. */
void grain_mpi_fail(grain_transport_t *t, int rank, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Device endpoints' messages (transport_mpi_ep.c): the channel opened with
 * the transport and closed with it, and the transport's ep_* ops. */
grain_status_t grain_mpi_ep_open(grain_transport_t *t);
void grain_mpi_ep_close(grain_transport_t *t);
uint64_t grain_mpi_ep_tags(grain_transport_t *t);
grain_status_t grain_mpi_ep_isend(grain_transport_t *t, uint32_t dest, uint64_t tag, const void *data, size_t len,
                                  void **req_p);
grain_status_t grain_mpi_ep_irecv(grain_transport_t *t, uint32_t src, uint64_t tag, void *data, size_t cap,
                                  void **req_p);
int grain_mpi_ep_test(grain_transport_t *t, void *req, size_t *len, grain_status_t *st);
void grain_mpi_ep_cancel(grain_transport_t *t, void *req);
/* Under "serialized", on the network thread: posts the requests handed
 * over and tests those posted; returns whether any changed.  Whether any
 * is posted and not done (MPI progresses it unrung). */
int grain_mpi_ep_progress(grain_transport_t *t);
int grain_mpi_ep_busy(const grain_transport_t *t);

/* The put channel: MPI puts of each buffer into a ring of its destination's
 * window (transport_mpi_put.c).  open is collective, on the application
 * thread before the network thread starts: t->put set, or, where some
 * rank's window does not allow puts, NULL and the reason in `why` (an error
 * only where `required`).  send: any thread.  The network thread's: poll
 * (up to `max` arrivals: their slots' indices, sources and lengths), slot
 * (an index's memory), release (a slot the runtime let go of), progress
 * (credit returns and waiting sends; whether any), waiting (the sends to
 * `dest` waiting for a credit, and since when the oldest has).  idle: no
 * send waits.  close: collective, once the network thread stopped. */
typedef struct mpi_put_arrival {
    unsigned index;
    int src;
    size_t len;
} mpi_put_arrival_t;

grain_status_t grain_mpi_put_open(grain_transport_t *t, size_t slot_bytes, unsigned recv_buffers, int required,
                                  char *why, size_t why_size);
grain_status_t grain_mpi_put_send(grain_transport_t *t, uint32_t dest, const void *data, size_t len, void *token);
unsigned grain_mpi_put_poll(grain_transport_t *t, mpi_put_arrival_t *out, unsigned max);
uint8_t *grain_mpi_put_slot(const grain_transport_t *t, unsigned index);
void grain_mpi_put_release(grain_transport_t *t, unsigned index);
int grain_mpi_put_progress(grain_transport_t *t);
unsigned grain_mpi_put_waiting(grain_transport_t *t, int dest, uint64_t *oldest_ns_p);
int grain_mpi_put_idle(const grain_transport_t *t);
void grain_mpi_put_close(grain_transport_t *t, int failed);

static inline int grain_mpi_failed(grain_transport_t *t)
{
    return atomic_load_explicit(&t->failed, memory_order_acquire);
}

#endif


