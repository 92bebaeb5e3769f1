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

static inline int grain_mpi_failed(grain_transport_t *t)
{
    return atomic_load_explicit(&t->failed, memory_order_acquire);
}

#endif


