/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI transport.
 *
 * One network thread keeps receives posted, hands arrived buffers to the
 * runtime in the order their source sent them, completes sends, and runs the
 * host collectives as non-blocking collectives so that receives keep being
 * applied meanwhile (and, under "serialized", posts and tests the device
 * endpoints' messages: transport_mpi_ep.c).  Who posts the aggregators' buffers is GRAIN_MPI_THREADS:
 * under MPI_THREAD_MULTIPLE each aggregator calls MPI_Isend itself; under
 * "serialized" it hands the buffer to the network thread, the only caller of
 * MPI.  The hand-off waits for a network thread that may be napping or
 * descheduled; with several ranks per node "multiple" measured 1.15 to 1.7x
 * the GUP/s of "serialized" (README.md, bench/mpi_threads_bench.py), so
 * "auto" takes it whenever the library provides it.
 *
 * Buffers of 64 KiB travel with the rendezvous protocol, so two buffers from
 * one source can complete out of order; each carries a per-(source,
 * destination) sequence number.  A buffer that arrives early is copied aside
 * (its receive reposted at once, so it can never starve the one it waits for)
 * and delivered after its predecessors.  A number below the next expected,
 * or one already set aside, is no buffer the sender could have sent, nor is
 * one SEQ_WINDOW or more ahead (the buffers before it, set aside, would take
 * more memory than a node has): each is rejected with the source named,
 * never held.  MPI bounds nothing less: a send completes, and its buffer is
 * refilled, as soon as MPI has copied it (eager sends), received or not.
 * Sends and early buffers reuse the records and copies of earlier ones, so
 * that nothing is allocated a buffer once the spares cover what is in
 * flight.
 *
 * Under GRAIN_MPI_BUFFERS=put (auto on one node) the buffers skip the
 * receives: the sender writes them into the destination's window
 * (transport_mpi_put.c), and the network thread takes them from there into
 * the same path, sequence numbers, set-aside buffers and lending alike.
 */
#include "transports/transport_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/config.h"
#include "services/log.h"
#include "transports/wire.h"

/* Arrivals the network thread takes from the rings in one look (puts). */
#define PUT_POLL_BATCH 32u

grain_status_t grain_mpi_error(int err, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    return grain_fail(GRAIN_ERR_TRANSPORT, "mpi: %s failed: %s", what, grain_mpi_error_string(err, text));
}

/* Whether every rank of the transport shares this rank's memory: one node.
 * Collective: every rank asks at open, whatever its settings. */
static int one_node(const grain_transport_t *t)
{
    MPI_Comm node;
    int size = 0;
    if (MPI_Comm_split_type(t->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return 0;
    MPI_Comm_size(node, &size);
    MPI_Comm_free(&node);
    return size == t->n_pes;
}

static grain_status_t mpi_open(grain_transport_t **t_p, const grain_config_t *config, const void *mpi_comm,
                               int *my_pe_p, int *n_pes_p)
{
    grain_transport_t *t = calloc(1, sizeof *t);
    if (t == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "mpi transport: no memory");
    int want_multiple = strcmp(config->mpi_threads, "serialized") != 0;
    int needed = strcmp(config->mpi_threads, "multiple") == 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED;
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited && mpi_comm != NULL) {
        free(t);
        return grain_fail(GRAIN_ERR_STATE, "grain_init_attr was given an MPI communicator before MPI_Init: "
                                           "initialize MPI first (MPI_Init_thread with MPI_THREAD_MULTIPLE)");
    }
    if (!inited) {
        if (MPI_Init_thread(NULL, NULL, want_multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED,
                            &provided) != MPI_SUCCESS) {
            free(t);
            return grain_fail(GRAIN_ERR_TRANSPORT, "mpi: MPI_Init_thread failed");
        }
        t->initialized_mpi = 1;
    } else {
        MPI_Query_thread(&provided);
    }
    if (provided < needed) {
        if (t->initialized_mpi)
            MPI_Finalize();
        free(t);
        return grain_fail(GRAIN_ERR_TRANSPORT,
                          "mpi: GRAIN_MPI_THREADS=%s needs MPI_THREAD_%s, the MPI library provides "
                          "only level %d",
                          config->mpi_threads, needed == MPI_THREAD_MULTIPLE ? "MULTIPLE" : "SERIALIZED",
                          provided);
    }
    t->multiple = want_multiple && provided == MPI_THREAD_MULTIPLE;
    t->buffers_as = grain_config_mpi_buffers(config);
    grain_info("mpi: %s", t->multiple ? "aggregators post their own sends (MPI_THREAD_MULTIPLE)"
                                      : "the network thread posts every send");
    /* A communicator of grain's own: its tags never meet the application's. */
    MPI_Comm_dup(mpi_comm != NULL ? *(const MPI_Comm *)mpi_comm : MPI_COMM_WORLD, &t->comm);
    MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(t->comm, &t->my_pe);
    MPI_Comm_size(t->comm, &t->n_pes);
    t->one_node = one_node(t);
    grain_status_t st = grain_mpi_ep_open(t);
    if (st == GRAIN_OK && (st = grain_mpi_watch_start(t, config->peer_timeout_s)) != GRAIN_OK)
        grain_mpi_ep_close(t);
    if (st != GRAIN_OK) {
        MPI_Comm_free(&t->comm);
        if (t->initialized_mpi)
            MPI_Finalize();
        free(t);
        return st;
    }
    pthread_mutex_init(&t->lock, NULL);
    pthread_mutex_init(&t->coll_lock, NULL);
    pthread_cond_init(&t->coll_done, NULL);
    grain_bell_init(&t->bell);
    *t_p = t;
    *my_pe_p = t->my_pe;
    *n_pes_p = t->n_pes;
    return GRAIN_OK;
}

static void post_recv(grain_transport_t *t, unsigned i)
{
    MPI_Irecv(t->recv_memory + (size_t)i * t->recv_size, (int)t->recv_size, MPI_BYTE, MPI_ANY_SOURCE,
              DATA_TAG, t->comm, &t->recv_reqs[i]);
}

/* Buffer `i`: receive buffer i, or under puts slot i of the rings. */
static uint8_t *buffer_of(const grain_transport_t *t, unsigned i)
{
    return t->put != NULL ? grain_mpi_put_slot(t, i) : t->recv_memory + (size_t)i * t->recv_size;
}

/* Buffer `i` is the network's again. */
static void give_back(grain_transport_t *t, unsigned i)
{
    if (t->put != NULL)
        grain_mpi_put_release(t, i);
    else
        post_recv(t, i);
}

/* A buffer to set an early arrival aside in: a spare one, else a new one of
 * the receive size; NULL without memory. */
static held_buffer_t *aside_take(grain_transport_t *t)
{
    held_buffer_t *b = t->spare_held;
    if (b == NULL)
        return malloc(sizeof *b + t->recv_size);
    t->spare_held = b->next;
    return b;
}

static void aside_give(grain_transport_t *t, held_buffer_t *b)
{
    b->next = t->spare_held;
    t->spare_held = b;
}

static void free_held(held_buffer_t *b)
{
    while (b != NULL) {
        held_buffer_t *next = b->next;
        free(b);
        b = next;
    }
}

static void free_nodes(send_node_t *n)
{
    while (n != NULL) {
        send_node_t *next = n->next;
        free(n);
        n = next;
    }
}

/* Reposts (or gives back, set aside) the n oldest lent buffers, which settle freed. */
static void repost_lent(grain_transport_t *t, unsigned n)
{
    for (; n > 0 && t->n_lent > 0; n--, t->n_lent--) {
        struct mpi_lent *l = &t->lent[t->lent_first];
        if (l->aside != NULL)
            aside_give(t, l->aside);
        else
            give_back(t, l->index);
        t->lent_first = (t->lent_first + 1) % t->lent_cap;
    }
}

/* Lends a buffer to the runtime; aborts without the memory to keep track
 * of it, since dropping it would lose messages. */
static void lend(grain_transport_t *t, held_buffer_t *aside, unsigned index)
{
    if (t->n_lent == t->lent_cap) {
        unsigned cap = 2 * t->lent_cap;
        struct mpi_lent *grown = malloc(cap * sizeof *grown);
        if (grown == NULL) {
            grain_log(GRAIN_LOG_ERROR, "mpi: no memory to lend %u buffers; aborting", t->n_lent + 1);
            abort();
        }
        for (unsigned k = 0; k < t->n_lent; k++)
            grown[k] = t->lent[(t->lent_first + k) % t->lent_cap];
        free(t->lent);
        t->lent = grown;
        t->lent_first = 0;
        t->lent_cap = cap;
    }
    t->lent[(t->lent_first + t->n_lent++) % t->lent_cap] = (struct mpi_lent){aside, index};
}

/* Hands buffer i to the runtime, then gives it back unless lent. */
static void hand_over(grain_transport_t *t, unsigned i, int src, size_t len)
{
    if (t->handlers.received(t->handlers.arg, (uint32_t)src, buffer_of(t, i), len))
        lend(t, NULL, i);
    else
        give_back(t, i);
}

/* Delivers the set-aside buffers of `src` while the next in sequence is
 * there; one the runtime holds is lent like a receive buffer, so that no
 * receive thread is waited for here. */
static void deliver_held(grain_transport_t *t, int src)
{
    for (held_buffer_t **h = &t->held; *h != NULL;) {
        held_buffer_t *b = *h;
        if (b->src != src || b->seq != t->next_seq[src]) {
            h = &b->next;
            continue;
        }
        *h = b->next;
        t->next_seq[src]++;
        if (t->handlers.received(t->handlers.arg, (uint32_t)src, b->data, b->len))
            lend(t, b, 0);
        else
            aside_give(t, b);
        h = &t->held; /* a later one may now be next */
    }
}

/* Why buffer `seq` from `src` cannot be held for later, in `why`; 0 when
 * it can. */
static int out_of_sequence(const grain_transport_t *t, int src, uint64_t seq, char *why, size_t size)
{
    uint64_t next = t->next_seq[src];
    if (seq < next) {
        snprintf(why, size, "a buffer from rank %d has sequence number %llu, which was delivered already", src,
                 (unsigned long long)seq);
        return 1;
    }
    if (seq - next >= SEQ_WINDOW) {
        snprintf(why, size,
                 "a buffer from rank %d has sequence number %llu, %llu ahead of the next one (no rank has %llu "
                 "buffers in flight to another)",
                 src, (unsigned long long)seq, (unsigned long long)(seq - next), (unsigned long long)SEQ_WINDOW);
        return 1;
    }
    for (const held_buffer_t *b = t->held; b != NULL; b = b->next)
        if (b->src == src && b->seq == seq) {
            snprintf(why, size, "a buffer from rank %d has sequence number %llu, as one that arrived before it",
                     src, (unsigned long long)seq);
            return 1;
        }
    return 0;
}

/* An error MPI returned for one of the `n` requests `reqs`: the rank of the
 * one that failed (a send's destination from `sends`, else the source its
 * status names) is failed, or none where MPI names none. */
static void request_failed(grain_transport_t *t, int err, int n, MPI_Request *reqs, send_node_t *const *sends)
{
    int rank = -1;
    for (int i = 0; i < n && rank < 0; i++) {
        MPI_Status status;
        int flag = 0;
        if (reqs[i] != MPI_REQUEST_NULL && MPI_Test(&reqs[i], &flag, &status) != MPI_SUCCESS)
            rank = sends != NULL ? (int)sends[i]->dest : status.MPI_SOURCE;
    }
    char text[MPI_MAX_ERROR_STRING], peer[48] = "";
    if (rank >= 0)
        snprintf(peer, sizeof peer, " %s rank %d", sends != NULL ? "to" : "from", rank);
    grain_mpi_fail(t, rank, "mpi: a %s%s failed on rank %d: %s", sends != NULL ? "send" : "receive", peer, t->my_pe,
                   grain_mpi_error_string(err, text));
}

/* Puts the n receives that one MPI_Testsome returned in sequence order
 * per source.  Testsome lists them by request index, and the network thread
 * reposts receives in whatever order their buffers come back, so receives
 * that arrived in order came out of order: between two H100 ranks, 37% of
 * the buffers of six aggregators, each then copied aside (0.1% once
 * ordered).  A buffer the transport or the runtime will reject sorts last:
 * a malformed one, and one numbered below the next expected (delivered
 * already), so that the report's first error is the first damaged buffer
 * in the order sent, as where batches hold one receive each. */
static void order_arrivals(grain_transport_t *t, int n)
{
    for (int k = 0; k < n; k++) {
        grain_wire_hdr_t h = {0};
        int len = 0;
        MPI_Get_count(&t->statuses[k], MPI_BYTE, &len);
        if ((size_t)len >= sizeof h)
            memcpy(&h, t->recv_memory + (size_t)t->indices[k] * t->recv_size, sizeof h);
        int src = t->statuses[k].MPI_SOURCE;
        t->arrival_seq[k] = h.magic == GRAIN_WIRE_MAGIC && h.seq >= t->next_seq[src] ? h.seq : UINT64_MAX;
    }
    for (int k = 1; k < n; k++) { /* insertion sort: a batch holds a few receives */
        int index = t->indices[k];
        MPI_Status status = t->statuses[k];
        uint64_t seq = t->arrival_seq[k];
        int j = k;
        for (; j > 0 && (t->statuses[j - 1].MPI_SOURCE > status.MPI_SOURCE ||
                         (t->statuses[j - 1].MPI_SOURCE == status.MPI_SOURCE && t->arrival_seq[j - 1] > seq));
             j--) {
            t->indices[j] = t->indices[j - 1];
            t->statuses[j] = t->statuses[j - 1];
            t->arrival_seq[j] = t->arrival_seq[j - 1];
        }
        t->indices[j] = index;
        t->statuses[j] = status;
        t->arrival_seq[j] = seq;
    }
}

/* Counts the time since `since_ns` as the network thread's in MPI
 * (grain_transport_ops_t.progress_ns). */
static void add_progress_ns(grain_transport_t *t, uint64_t since_ns)
{
    uint64_t spent = atomic_load_explicit(&t->progress_ns, memory_order_relaxed) + grain_now_ns() - since_ns;
    atomic_store_explicit(&t->progress_ns, spent, memory_order_relaxed);
}

/* MPI_Testsome, timed: MPI's progress (the copies through shared memory,
 * among them) runs in these calls, and their time says whether the network
 * thread is the limit. */
static int timed_testsome(grain_transport_t *t, int n, MPI_Request *reqs, int *done, int *indices,
                          MPI_Status *statuses)
{
    uint64_t t0 = grain_now_ns();
    int err = MPI_Testsome(n, reqs, done, indices, statuses);
    add_progress_ns(t, t0);
    return err;
}

/* Buffer i arrived from `src`: delivered in its sequence, set aside until
 * its predecessors came, or rejected. */
static void arrived(grain_transport_t *t, unsigned i, int src, size_t len)
{
    uint8_t *data = buffer_of(t, i);
    grain_wire_hdr_t h = {0};
    char why[256];
    if (len > t->recv_size) { /* only a peer that writes past the protocol (puts) */
        snprintf(why, sizeof why, "rank %d wrote %zu bytes into a %zu-byte slot", src, len, t->recv_size);
        t->handlers.rejected(t->handlers.arg, (uint32_t)src, data, t->recv_size, why);
        give_back(t, i);
        return;
    }
    if (len >= sizeof h)
        memcpy(&h, data, sizeof h);
    if (h.magic == GRAIN_WIRE_MAGIC && h.seq != t->next_seq[src] && out_of_sequence(t, src, h.seq, why, sizeof why)) {
        t->handlers.rejected(t->handlers.arg, (uint32_t)src, data, len, why);
        give_back(t, i);
    } else if (h.magic == GRAIN_WIRE_MAGIC && h.seq != t->next_seq[src]) {
        held_buffer_t *b = aside_take(t);
        if (b == NULL) {
            grain_log(GRAIN_LOG_ERROR, "mpi: no memory to set an early buffer aside; aborting");
            abort(); /* dropping it would lose messages */
        }
        *b = (held_buffer_t){t->held, src, h.seq, grain_now_ns(), len};
        memcpy(b->data, data, len);
        t->held = b;
        give_back(t, i);
    } else {
        /* In order, or malformed: the runtime rejects and reports the latter. */
        if (h.magic == GRAIN_WIRE_MAGIC)
            t->next_seq[src]++;
        hand_over(t, i, src, len);
        deliver_held(t, src);
    }
}

static int progress_recvs(grain_transport_t *t)
{
    int n = 0;
    int err = timed_testsome(t, (int)t->n_recv, t->recv_reqs, &n, t->indices, t->statuses);
    if (err != MPI_SUCCESS) {
        request_failed(t, err, (int)t->n_recv, t->recv_reqs, NULL);
        return 0;
    }
    if (n == MPI_UNDEFINED || n == 0)
        return 0;
    order_arrivals(t, n);
    for (int k = 0; k < n; k++) {
        int len = 0;
        MPI_Get_count(&t->statuses[k], MPI_BYTE, &len);
        arrived(t, (unsigned)t->indices[k], t->statuses[k].MPI_SOURCE, (size_t)len);
    }
    return 1;
}

/* Under puts: the buffers the peers wrote, in each peer's order. */
static int progress_puts(grain_transport_t *t)
{
    mpi_put_arrival_t batch[PUT_POLL_BATCH];
    uint64_t t0 = grain_now_ns();
    unsigned n = grain_mpi_put_poll(t, batch, PUT_POLL_BATCH);
    add_progress_ns(t, t0);
    for (unsigned k = 0; k < n; k++)
        arrived(t, batch[k].index, batch[k].src, batch[k].len);
    return n > 0;
}

/* Reposts the lent buffers whose copies are done, never waiting: a wait
 * for each batch of pieces cost the receiver 16 us a 64 KiB chunk piece on
 * an H200, and a buffer waits for no later one. */
static int progress_lent(grain_transport_t *t)
{
    unsigned n = t->handlers.settle(t->handlers.arg, 0);
    repost_lent(t, n);
    return n > 0;
}

static grain_status_t post_send(grain_transport_t *t, send_node_t *node)
{
    int err = MPI_Isend(node->data, (int)node->len, MPI_BYTE, (int)node->dest, DATA_TAG, t->comm,
                        &node->req);
    return err == MPI_SUCCESS ? GRAIN_OK : grain_mpi_error(err, "MPI_Isend");
}

/* Takes the sends the aggregators queued into the in-flight set, posting
 * them first unless the aggregators did. */
static int start_sends(grain_transport_t *t)
{
    if (atomic_load_explicit(&t->n_pending, memory_order_acquire) == 0)
        return 0;
    pthread_mutex_lock(&t->lock);
    send_node_t *list = t->pending_head;
    t->pending_head = t->pending_tail = NULL;
    atomic_store(&t->n_pending, 0);
    pthread_mutex_unlock(&t->lock);
    while (list != NULL) {
        send_node_t *node = list;
        list = list->next;
        if (t->n_inflight == t->cap_inflight) {
            int cap = t->cap_inflight ? 2 * t->cap_inflight : 64;
            MPI_Request *reqs = realloc(t->send_reqs, (size_t)cap * sizeof *reqs);
            if (reqs != NULL)
                t->send_reqs = reqs;
            send_node_t **nodes = realloc(t->send_nodes, (size_t)cap * sizeof *nodes);
            if (nodes != NULL)
                t->send_nodes = nodes;
            int *done = realloc(t->send_done, (size_t)cap * sizeof *done);
            if (done != NULL)
                t->send_done = done;
            if (reqs == NULL || nodes == NULL || done == NULL) {
                grain_log(GRAIN_LOG_ERROR, "mpi: no memory to track sends; aborting");
                abort(); /* a lost buffer would break quiet's counting */
            }
            t->cap_inflight = cap;
        }
        if (!t->multiple && post_send(t, node) != GRAIN_OK) {
            grain_mpi_fail(t, (int)node->dest, "mpi: rank %d could not send to rank %d: %s", t->my_pe,
                           (int)node->dest, grain_error_message(NULL));
            t->handlers.sent(t->handlers.arg, node->token); /* dropped: the job ends */
            free(node);
            continue;
        }
        t->send_reqs[t->n_inflight] = node->req;
        t->send_nodes[t->n_inflight++] = node;
    }
    return 1;
}

static int complete_sends(grain_transport_t *t)
{
    if (t->n_inflight == 0)
        return 0;
    int n = 0;
    int *done = t->send_done;
    int err = timed_testsome(t, t->n_inflight, t->send_reqs, &n, done, MPI_STATUSES_IGNORE);
    if (err != MPI_SUCCESS) {
        request_failed(t, err, t->n_inflight, t->send_reqs, t->send_nodes);
        return 0;
    }
    if (n == MPI_UNDEFINED || n == 0)
        return 0;
    send_node_t *spares = NULL, *last = NULL;
    for (int k = 0; k < n; k++) {
        send_node_t *node = t->send_nodes[done[k]];
        t->handlers.sent(t->handlers.arg, node->token);
        node->next = spares;
        spares = node;
        last = last != NULL ? last : node;
        t->send_nodes[done[k]] = NULL;
    }
    pthread_mutex_lock(&t->lock);
    last->next = t->spare_nodes;
    t->spare_nodes = spares;
    pthread_mutex_unlock(&t->lock);
    int j = 0;
    for (int i = 0; i < t->n_inflight; i++) {
        if (t->send_nodes[i] != NULL) {
            t->send_nodes[j] = t->send_nodes[i];
            t->send_reqs[j] = t->send_reqs[i];
            j++;
        }
    }
    t->n_inflight = j;
    return 1;
}

static MPI_Datatype mpi_dtype(grain_dtype_t d)
{
    return d == GRAIN_INT64 ? MPI_INT64_T : d == GRAIN_UINT64 ? MPI_UINT64_T : MPI_DOUBLE;
}

static MPI_Op mpi_op(grain_op_t op)
{
    return op == GRAIN_SUM ? MPI_SUM : op == GRAIN_MIN ? MPI_MIN : MPI_MAX;
}

static int progress_collective(grain_transport_t *t)
{
    pthread_mutex_lock(&t->coll_lock);
    int worked = 0;
    if (t->coll_state == COLL_REQUESTED && grain_mpi_failed(t))
        t->coll_state = COLL_DONE; /* mpi_collective returns the failure */
    if (t->coll_state == COLL_REQUESTED) {
        const grain_coll_t *c = t->coll;
        int err = MPI_SUCCESS;
        switch (c->kind) {
        case GRAIN_COLL_BARRIER:
            err = MPI_Ibarrier(t->comm, &t->coll_req);
            break;
        case GRAIN_COLL_ALLREDUCE:
            err = MPI_Iallreduce(MPI_IN_PLACE, c->buf, (int)c->count, mpi_dtype(c->dtype),
                                 mpi_op(c->op), t->comm, &t->coll_req);
            break;
        case GRAIN_COLL_ALLTOALL_U64:
            err = MPI_Ialltoall(c->buf, (int)c->count, MPI_UINT64_T, c->recv, (int)c->count,
                                MPI_UINT64_T, t->comm, &t->coll_req);
            break;
        case GRAIN_COLL_BROADCAST:
            err = MPI_Ibcast(c->buf, (int)c->count, MPI_BYTE, c->root, t->comm, &t->coll_req);
            break;
        case GRAIN_COLL_ALLTOALLV:
            err = MPI_Ialltoallv(c->buf, c->send_counts, c->send_displs, MPI_BYTE, c->recv, c->recv_counts,
                                 c->recv_displs, MPI_BYTE, t->comm, &t->coll_req);
            break;
        }
        t->coll_error = err;
        t->coll_state = err == MPI_SUCCESS ? COLL_STARTED : COLL_DONE;
        worked = 1;
    }
    if (t->coll_state == COLL_STARTED) {
        int flag = 0;
        t->coll_error = MPI_Test(&t->coll_req, &flag, MPI_STATUS_IGNORE);
        if (flag || t->coll_error != MPI_SUCCESS) {
            t->coll_state = COLL_DONE;
            t->coll_completed |= t->coll_error == MPI_SUCCESS;
            worked = 1;
        }
    }
    if (t->coll_state == COLL_DONE)
        pthread_cond_broadcast(&t->coll_done);
    t->coll_in_flight = t->coll_state == COLL_STARTED;
    pthread_mutex_unlock(&t->coll_lock);
    return worked;
}

static void *network_thread(void *arg)
{
    grain_transport_t *t = arg;
    grain_backoff_t backoff = {0};
    for (;;) {
        uint64_t seen = grain_bell_seen(&t->bell);
        if (grain_mpi_failed(t)) {
            /* Nothing more is sent or received: what is in flight may
             * never complete, and the job is ending. */
            if (atomic_load(&t->stop)) {
                t->handlers.settle(t->handlers.arg, 1);
                break;
            }
            progress_collective(t);
            grain_backoff_idle_bell(&backoff, &t->bell, seen);
            continue;
        }
        int worked = start_sends(t);
        worked |= t->put != NULL ? progress_puts(t) : progress_recvs(t);
        worked |= progress_lent(t);
        worked |= complete_sends(t);
        if (t->put != NULL) {
            uint64_t t0 = grain_now_ns();
            worked |= grain_mpi_put_progress(t);
            add_progress_ns(t, t0);
        }
        worked |= progress_collective(t);
        worked |= grain_mpi_ep_progress(t);
        grain_mpi_watch(t);
        if (atomic_load(&t->stop) && t->n_inflight == 0 && atomic_load(&t->n_pending) == 0 &&
            grain_mpi_put_idle(t)) {
            t->handlers.settle(t->handlers.arg, 1); /* no copy may read freed buffers */
            break;
        }
        if (worked)
            grain_backoff_reset(&backoff);
        else if (t->coll_in_flight || t->n_inflight > 0 || t->n_lent > 0 || grain_mpi_ep_busy(t) ||
                 !grain_mpi_put_idle(t))
            /* MPI and copies progress unrung */
            grain_backoff_idle_patient(&backoff, GRAIN_BACKOFF_PATIENCE_NS);
        else
            grain_backoff_idle_bell(&backoff, &t->bell, seen);
    }
    return NULL;
}

/* Buffers as puts where GRAIN_MPI_BUFFERS asks and the windows allow, else
 * as sends into `recv_buffers` posted receives.  auto takes puts on one
 * node: there a send is copied twice by the network threads (into shared
 * memory and out), a put once by the sender, and two ranks on two H200s ran
 * pagerank in 0.29 s rather than 0.44-0.52 s, GUPS in 0.19-0.20 s rather
 * than 0.20-0.25 s (docs/results/transport-2xh200-s46).  With CMA a send is
 * one copy too, by the receiving network thread: pagerank, bound by that
 * thread, still took 37% less time with puts, and GUPS, bound by its
 * aggregators, which make the put's copy, 10% more.  Between nodes a NIC
 * moves a send's 64 KiB by RDMA without those copies, so sends stay. */
static grain_status_t mpi_start(grain_transport_t *t, const grain_transport_handlers_t *handlers,
                                size_t recv_size, unsigned recv_buffers)
{
    t->handlers = *handlers;
    t->recv_size = recv_size;
    /* Every rank takes the same way, into rings of one layout: the fewest
     * receives any rank asks for, in slots of one size. */
    int64_t agreed[5] = {(int64_t)t->buffers_as, -(int64_t)t->buffers_as, recv_buffers, (int64_t)recv_size,
                         -(int64_t)recv_size};
    if (MPI_Allreduce(MPI_IN_PLACE, agreed, 5, MPI_INT64_T, MPI_MIN, t->comm) != MPI_SUCCESS)
        return grain_fail(GRAIN_ERR_TRANSPORT, "mpi: the ranks could not agree on how buffers travel");
    if (agreed[0] != -agreed[1])
        return grain_fail(GRAIN_ERR_CONFIG, "ranks disagree on GRAIN_MPI_BUFFERS; give every rank the same");
    int same_size = agreed[3] == -agreed[4];
    if (t->buffers_as == GRAIN_MPI_BUFFERS_PUT && !same_size)
        return grain_fail(GRAIN_ERR_CONFIG,
                          "GRAIN_MPI_BUFFERS=put: ranks disagree on GRAIN_BUFFER_SIZE (%lld..%lld), the size of "
                          "their rings' slots", (long long)agreed[3], (long long)-agreed[4]);
    char why[256] = "GRAIN_MPI_BUFFERS=send";
    if (t->buffers_as == GRAIN_MPI_BUFFERS_AUTO && !same_size) {
        snprintf(why, sizeof why, "ranks disagree on GRAIN_BUFFER_SIZE"); /* reported once they compare settings */
    } else if (t->buffers_as == GRAIN_MPI_BUFFERS_AUTO && !t->one_node) {
        snprintf(why, sizeof why, "the ranks span nodes; GRAIN_MPI_BUFFERS=put writes into their windows");
    } else if (t->buffers_as != GRAIN_MPI_BUFFERS_SEND) {
        grain_status_t st = grain_mpi_put_open(t, recv_size, (unsigned)agreed[2],
                                               t->buffers_as == GRAIN_MPI_BUFFERS_PUT, why, sizeof why);
        if (st != GRAIN_OK)
            return st;
    }
    if (t->put != NULL)
        grain_info("mpi: buffers as puts into rings of %u slots a peer", t->put->slots);
    else
        grain_info("mpi: buffers as sends (%s)", why);
    t->n_recv = t->put != NULL ? 0 : recv_buffers;
    size_t recv_bytes = (size_t)t->n_recv * recv_size;
    t->recv_memory = t->put != NULL                ? NULL
                     : handlers->alloc_recv != NULL ? handlers->alloc_recv(handlers->arg, recv_bytes)
                                                    : malloc(recv_bytes);
    t->recv_reqs = calloc(recv_buffers, sizeof *t->recv_reqs);
    t->next_seq = calloc((size_t)t->n_pes, sizeof *t->next_seq);
    t->statuses = calloc(recv_buffers, sizeof *t->statuses);
    t->indices = calloc(recv_buffers, sizeof *t->indices);
    t->arrival_seq = calloc(recv_buffers, sizeof *t->arrival_seq);
    t->lent_cap = recv_buffers;
    t->lent = calloc(recv_buffers, sizeof *t->lent);
    if ((t->put == NULL && !t->recv_memory) || !t->recv_reqs || !t->next_seq || !t->statuses || !t->indices ||
        !t->arrival_seq || !t->lent)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "mpi: no memory for %u receive buffers of %zu bytes",
                          recv_buffers, recv_size);
    for (unsigned i = 0; i < t->n_recv; i++)
        post_recv(t, i);
    if (pthread_create(&t->thread, NULL, network_thread, t) != 0)
        return grain_fail(GRAIN_ERR_TRANSPORT, "mpi: cannot start the network thread");
    t->running = 1;
    return GRAIN_OK;
}

/* What mpi_start will choose, unless the windows refuse puts (Open MPI's
 * osc/pt2pt) and auto falls back to sends. */
static int mpi_receives_written(grain_transport_t *t)
{
    return t->buffers_as == GRAIN_MPI_BUFFERS_PUT || (t->buffers_as == GRAIN_MPI_BUFFERS_AUTO && t->one_node);
}

static grain_status_t mpi_send(grain_transport_t *t, uint32_t dest, const void *data, size_t len,
                               void *token)
{
    if (grain_mpi_failed(t))
        return GRAIN_ERR_PEER; /* reported once, by grain_mpi_fail */
    if (t->put != NULL)
        return grain_mpi_put_send(t, dest, data, len, token);
    pthread_mutex_lock(&t->lock);
    send_node_t *node = t->spare_nodes;
    if (node != NULL)
        t->spare_nodes = node->next;
    pthread_mutex_unlock(&t->lock);
    if (node == NULL && (node = malloc(sizeof *node)) == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "mpi: no memory to queue a send");
    *node = (send_node_t){NULL, dest, data, len, token, MPI_REQUEST_NULL, t->timeout_ns ? grain_now_ns() : 0};
    if (t->multiple && post_send(t, node) != GRAIN_OK) {
        grain_mpi_fail(t, (int)dest, "mpi: rank %d could not send to rank %d: %s", t->my_pe, (int)dest,
                       grain_error_message(NULL));
        free(node);
        return GRAIN_ERR_PEER;
    }
    pthread_mutex_lock(&t->lock);
    if (t->pending_tail != NULL)
        t->pending_tail->next = node;
    else
        t->pending_head = node;
    t->pending_tail = node;
    atomic_fetch_add_explicit(&t->n_pending, 1, memory_order_release);
    pthread_mutex_unlock(&t->lock);
    grain_bell_ring(&t->bell);
    return GRAIN_OK;
}

static grain_status_t mpi_collective(grain_transport_t *t, const grain_coll_t *c)
{
    pthread_mutex_lock(&t->coll_lock);
    t->coll = c;
    t->coll_state = COLL_REQUESTED;
    grain_bell_ring(&t->bell);
    while (t->coll_state != COLL_DONE)
        pthread_cond_wait(&t->coll_done, &t->coll_lock);
    t->coll_state = COLL_NONE;
    int err = t->coll_error;
    pthread_mutex_unlock(&t->coll_lock);
    if (grain_transport_mpi_failed(t))
        return GRAIN_ERR_PEER; /* logged once, where it was found */
    if (err != MPI_SUCCESS)
        return grain_mpi_error(err, "a collective");
    return GRAIN_OK;
}

/* After a failure: what MPI still holds is left to it, and MPI is not
 * finalized, as a finalize waits for every rank, the failed one too. */
static void leave_failed(grain_transport_t *t)
{
    grain_warn("mpi: rank %d leaves without MPI_Finalize, as a rank failed", t->my_pe);
    for (int i = 0; i < t->n_inflight; i++)
        free(t->send_nodes[i]);
    free_nodes(t->pending_head);
    t->pending_head = NULL;
    t->recv_memory = NULL; /* receives stay posted into it */
}

static void mpi_close(grain_transport_t *t)
{
    if (t->running) {
        atomic_store(&t->stop, 1);
        grain_bell_ring(&t->bell);
        pthread_join(t->thread, NULL);
    }
    grain_mpi_watch_stop(t);
    if (grain_mpi_failed(t)) {
        leave_failed(t);
        grain_mpi_put_close(t, 1);
    } else {
        for (unsigned i = 0; t->running && i < t->n_recv; i++) {
            if (t->recv_reqs[i] != MPI_REQUEST_NULL) {
                MPI_Cancel(&t->recv_reqs[i]);
                MPI_Wait(&t->recv_reqs[i], MPI_STATUS_IGNORE);
            }
        }
        grain_mpi_put_close(t, 0);
        grain_mpi_ep_close(t);
        MPI_Comm_free(&t->comm);
        if (t->initialized_mpi)
            MPI_Finalize();
    }
    if (t->recv_memory != NULL && t->handlers.free_recv != NULL)
        t->handlers.free_recv(t->handlers.arg, t->recv_memory);
    else
        free(t->recv_memory);
    free(t->recv_reqs);
    free_held(t->held);
    free_held(t->spare_held);
    free_nodes(t->spare_nodes);
    for (; t->n_lent > 0; t->n_lent--) { /* the runtime let go of them before close */
        free(t->lent[t->lent_first].aside);
        t->lent_first = (t->lent_first + 1) % t->lent_cap;
    }
    free(t->next_seq);
    free(t->statuses);
    free(t->arrival_seq);
    free(t->indices);
    free(t->lent);
    free(t->send_reqs);
    free(t->send_nodes);
    free(t->send_done);
    pthread_mutex_destroy(&t->lock);
    pthread_mutex_destroy(&t->coll_lock);
    pthread_cond_destroy(&t->coll_done);
    grain_bell_destroy(&t->bell);
    free(t);
}

static uint64_t mpi_progress_ns(grain_transport_t *t)
{
    return atomic_load_explicit(&t->progress_ns, memory_order_relaxed);
}

int grain_transport_mpi_failed(grain_transport_t *t)
{
    if (!grain_mpi_failed(t))
        return 0;
    grain_error_keep(t->why);
    return 1;
}

const grain_transport_ops_t grain_transport_mpi = {
    .size = sizeof(grain_transport_ops_t),
    .name = "mpi",
    .open = mpi_open,
    .start = mpi_start,
    .send = mpi_send,
    .collective = mpi_collective,
    .close = mpi_close,
    .uses_thread = 1,
    .restores_order = 1,
    .receives_written = mpi_receives_written,
    .ep_isend = grain_mpi_ep_isend,
    .ep_irecv = grain_mpi_ep_irecv,
    .ep_test = grain_mpi_ep_test,
    .ep_cancel = grain_mpi_ep_cancel,
    .ep_tags = grain_mpi_ep_tags,
    .progress_ns = mpi_progress_ns,
};
