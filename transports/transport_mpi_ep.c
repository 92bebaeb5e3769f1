/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI transport's channel for device endpoints' two-sided messages
 * (grain/ep.h): a communicator of its own.  Who calls MPI follows
 * GRAIN_MPI_THREADS, as for the aggregators' sends: under
 * MPI_THREAD_MULTIPLE endpoint threads post their sends and receives
 * themselves; under "serialized" they hand them to the network thread, the
 * only caller of MPI, which posts them in the order handed over and tests
 * them.  Either way an endpoint tests its request rather than block in MPI,
 * so that a rank found failed ends a wait.  MPI matches by (source rank,
 * tag) in order; the endpoints' tags carry both virtual devices and the
 * application's tag.
 */
#include <limits.h>
#include <stdlib.h>

#include "services/log.h"
#include "transports/transport_mpi.h"

/* A request of the channel: MPI's, what a receive needs to report and,
 * handed to the network thread, where it stands (under ep_lock). */
typedef struct ep_req {
    struct ep_req *next; /* handed over, not yet posted */
    MPI_Request req;
    int recv;
    uint32_t peer;
    int tag;
    void *data;
    size_t cap;
    enum { HANDED, POSTED, DONE } state;
    int abandoned; /* the endpoint will not look again: the network thread frees it */
    int err, count;
} ep_req_t;

grain_status_t grain_mpi_ep_open(grain_transport_t *t)
{
    int err = MPI_Comm_dup(t->comm, &t->ep_comm);
    if (err != MPI_SUCCESS)
        return grain_mpi_error(err, "MPI_Comm_dup for the endpoints' messages");
    MPI_Comm_set_errhandler(t->ep_comm, MPI_ERRORS_RETURN);
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(t->ep_comm, MPI_TAG_UB, &ub, &flag);
    t->ep_tags = flag && ub != NULL && *ub > 0 ? (uint64_t)*ub + 1 : 32768; /* the standard's least */
    pthread_mutex_init(&t->ep_lock, NULL);
    t->ep_queued_tail = &t->ep_queued;
    return GRAIN_OK;
}

void grain_mpi_ep_close(grain_transport_t *t)
{
    /* Only requests of a failed job are left: nothing completes them now. */
    for (ep_req_t *r = t->ep_queued, *next; r != NULL; r = next) {
        next = r->next;
        free(r);
    }
    for (unsigned i = 0; i < t->n_ep_posted; i++)
        free(t->ep_posted[i]);
    free(t->ep_posted);
    pthread_mutex_destroy(&t->ep_lock);
    MPI_Comm_free(&t->ep_comm);
}

uint64_t grain_mpi_ep_tags(grain_transport_t *t)
{
    return t->ep_tags;
}

static int post(grain_transport_t *t, ep_req_t *r)
{
    return r->recv ? MPI_Irecv(r->data, (int)r->cap, MPI_BYTE, (int)r->peer, r->tag, t->ep_comm, &r->req)
                   : MPI_Isend(r->data, (int)r->cap, MPI_BYTE, (int)r->peer, r->tag, t->ep_comm, &r->req);
}

/* Starts a send or a receive of up to `len` bytes with `peer`. */
static grain_status_t start(grain_transport_t *t, int recv, uint32_t peer, uint64_t tag, void *data, size_t len,
                            void **req_p)
{
    const char *what = recv ? "endpoint receive" : "endpoint send";
    if (grain_mpi_failed(t))
        return grain_fail(GRAIN_ERR_PEER, "%s: a rank failed: %s", what, t->why);
    if (len > INT_MAX || tag >= t->ep_tags)
        return grain_fail(GRAIN_ERR_INVALID,
                          "%s: %zu bytes with MPI tag %llu; MPI carries at most %d bytes a message and tags below %llu",
                          what, len, (unsigned long long)tag, INT_MAX, (unsigned long long)t->ep_tags);
    ep_req_t *r = malloc(sizeof *r);
    if (r == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory for a request", what);
    *r = (ep_req_t){NULL, MPI_REQUEST_NULL, recv, peer, (int)tag, data, len, HANDED, 0, MPI_SUCCESS, 0};
    if (t->multiple) {
        int err = post(t, r);
        if (err != MPI_SUCCESS) {
            free(r);
            return grain_mpi_error(err, recv ? "MPI_Irecv of an endpoint message" : "MPI_Isend of an endpoint message");
        }
    } else {
        pthread_mutex_lock(&t->ep_lock);
        *t->ep_queued_tail = r;
        t->ep_queued_tail = &r->next;
        pthread_mutex_unlock(&t->ep_lock);
        grain_bell_ring(&t->bell);
    }
    *req_p = r;
    return GRAIN_OK;
}

grain_status_t grain_mpi_ep_isend(grain_transport_t *t, uint32_t dest, uint64_t tag, const void *data, size_t len,
                                  void **req_p)
{
    return start(t, 0, dest, tag, (void *)data, len, req_p);
}

grain_status_t grain_mpi_ep_irecv(grain_transport_t *t, uint32_t src, uint64_t tag, void *data, size_t cap,
                                  void **req_p)
{
    return start(t, 1, src, tag, data, cap, req_p);
}

/* What a finished request says: MPI's error, else the received length. */
static grain_status_t outcome(const ep_req_t *r, int err, int count, size_t *len)
{
    if (err == MPI_SUCCESS) {
        *len = r->recv ? (size_t)count : 0;
        return GRAIN_OK;
    }
    int class = MPI_SUCCESS;
    MPI_Error_class(err, &class);
    if (class == MPI_ERR_TRUNCATE)
        return grain_fail(GRAIN_ERR_INVALID,
                          "endpoint receive: a message from rank %u does not fit the %zu bytes given; it was taken "
                          "and dropped",
                          r->peer, r->cap);
    return grain_mpi_error(err, r->recv ? "an endpoint receive" : "an endpoint send");
}

static grain_status_t peer_failed(grain_transport_t *t, const ep_req_t *r)
{
    return grain_fail(GRAIN_ERR_PEER, "endpoint %s: a rank failed: %s", r->recv ? "receive" : "send", t->why);
}

int grain_mpi_ep_test(grain_transport_t *t, void *req, size_t *len, grain_status_t *st)
{
    ep_req_t *r = req;
    if (!t->multiple) {
        pthread_mutex_lock(&t->ep_lock);
        int done = r->state == DONE, failed = !done && grain_mpi_failed(t);
        r->abandoned = failed;
        pthread_mutex_unlock(&t->ep_lock);
        if (!done && !failed)
            return 0;
        *st = done ? outcome(r, r->err, r->count, len) : peer_failed(t, r);
        if (done)
            free(r);
        return 1;
    }
    MPI_Status status;
    int done = 0, err = MPI_Test(&r->req, &done, &status), count = 0;
    if (err == MPI_SUCCESS && !done && !grain_mpi_failed(t))
        return 0;
    if (err == MPI_SUCCESS && !done) {
        MPI_Cancel(&r->req);
        MPI_Request_free(&r->req);
        *st = peer_failed(t, r);
    } else {
        if (err == MPI_SUCCESS)
            MPI_Get_count(&status, MPI_BYTE, &count);
        *st = outcome(r, err, count, len);
    }
    free(r);
    return 1;
}

void grain_mpi_ep_cancel(grain_transport_t *t, void *req)
{
    ep_req_t *r = req;
    if (!t->multiple) {
        pthread_mutex_lock(&t->ep_lock);
        int done = r->state == DONE;
        r->abandoned = 1;
        pthread_mutex_unlock(&t->ep_lock);
        if (done)
            free(r);
        return;
    }
    if (!grain_mpi_failed(t)) {
        MPI_Cancel(&r->req);
        MPI_Wait(&r->req, MPI_STATUS_IGNORE);
    }
    free(r);
}

/* Ends a request on the network thread: done for its endpoint, or freed
 * when the endpoint abandoned it.  Returns whether it was abandoned. */
static int settle(grain_transport_t *t, ep_req_t *r, int err, int count)
{
    pthread_mutex_lock(&t->ep_lock);
    int abandoned = r->abandoned;
    r->err = err;
    r->count = count;
    r->state = DONE;
    pthread_mutex_unlock(&t->ep_lock);
    if (abandoned)
        free(r);
    return abandoned;
}

static int abandoned(grain_transport_t *t, const ep_req_t *r)
{
    pthread_mutex_lock(&t->ep_lock);
    int gone = r->abandoned;
    pthread_mutex_unlock(&t->ep_lock);
    return gone;
}

int grain_mpi_ep_progress(grain_transport_t *t)
{
    if (t->multiple)
        return 0;
    pthread_mutex_lock(&t->ep_lock);
    ep_req_t *handed = t->ep_queued;
    t->ep_queued = NULL;
    t->ep_queued_tail = &t->ep_queued;
    pthread_mutex_unlock(&t->ep_lock);
    int worked = handed != NULL;
    for (ep_req_t *r = handed, *next; r != NULL; r = next) {
        next = r->next;
        if (abandoned(t, r)) { /* cancelled before it was posted */
            free(r);
            continue;
        }
        int err = post(t, r);
        if (err != MPI_SUCCESS) {
            settle(t, r, err, 0);
            continue;
        }
        if (t->n_ep_posted == t->cap_ep_posted) {
            unsigned cap = t->cap_ep_posted ? 2 * t->cap_ep_posted : 64;
            ep_req_t **grown = realloc(t->ep_posted, cap * sizeof *grown);
            if (grown == NULL) {
                grain_log(GRAIN_LOG_ERROR, "mpi: no memory to track endpoint messages; aborting");
                abort(); /* dropping it would lose a message an endpoint waits for */
            }
            t->ep_posted = grown;
            t->cap_ep_posted = cap;
        }
        pthread_mutex_lock(&t->ep_lock);
        r->state = POSTED;
        pthread_mutex_unlock(&t->ep_lock);
        t->ep_posted[t->n_ep_posted++] = r;
    }
    unsigned kept = 0;
    for (unsigned i = 0; i < t->n_ep_posted; i++) {
        ep_req_t *r = t->ep_posted[i];
        MPI_Status status;
        int done = 0, count = 0, err = MPI_Test(&r->req, &done, &status);
        if (err == MPI_SUCCESS && !done && abandoned(t, r)) {
            MPI_Cancel(&r->req);
            MPI_Wait(&r->req, MPI_STATUS_IGNORE);
            free(r);
            worked = 1;
        } else if (err == MPI_SUCCESS && !done) {
            t->ep_posted[kept++] = r;
        } else {
            if (err == MPI_SUCCESS)
                MPI_Get_count(&status, MPI_BYTE, &count);
            settle(t, r, err, count);
            worked = 1;
        }
    }
    t->n_ep_posted = kept;
    return worked;
}

int grain_mpi_ep_busy(const grain_transport_t *t)
{
    return t->n_ep_posted > 0;
}
