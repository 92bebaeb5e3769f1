/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI transport's channel for device endpoints' two-sided messages
 * (grain/ep.h): a communicator of its own, on which endpoint threads post
 * their sends and receives themselves (MPI_THREAD_MULTIPLE) and test them
 * rather than block in MPI, so that a rank found failed ends a wait.
 * MPI matches by (source rank, tag) in order; the endpoints' tags carry
 * both virtual devices and the application's tag.
 */
#include <limits.h>
#include <stdlib.h>

#include "services/log.h"
#include "transports/transport_mpi.h"

grain_status_t grain_mpi_ep_open(grain_transport_t *t)
{
    int err = MPI_Comm_dup(t->comm, &t->ep_comm);
    if (err != MPI_SUCCESS)
        return grain_mpi_error(err, "MPI_Comm_dup for the endpoints' messages");
    MPI_Comm_set_errhandler(t->ep_comm, MPI_ERRORS_RETURN);
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(t->ep_comm, MPI_TAG_UB, &ub, &flag);
    t->ep_tags = flag && ub != NULL && *ub > 0 ? (uint64_t)*ub + 1 : 32768; /* the standard's least */
    return GRAIN_OK;
}

void grain_mpi_ep_close(grain_transport_t *t)
{
    MPI_Comm_free(&t->ep_comm);
}

uint64_t grain_mpi_ep_tags(grain_transport_t *t)
{
    return t->multiple ? t->ep_tags : 0;
}

/* A request of the channel: MPI's, and what a receive needs to report. */
typedef struct ep_req {
    MPI_Request req;
    int recv;
    uint32_t peer;
    size_t cap;
} ep_req_t;

static grain_status_t usable(grain_transport_t *t, const char *what)
{
    if (!t->multiple)
        return grain_fail(GRAIN_ERR_UNSUPPORTED,
                          "%s: endpoint messages between ranks need MPI_THREAD_MULTIPLE (GRAIN_MPI_THREADS=multiple "
                          "or auto, with an MPI library that provides it)",
                          what);
    if (grain_mpi_failed(t))
        return grain_fail(GRAIN_ERR_PEER, "%s: a rank failed: %s", what, t->why);
    return GRAIN_OK;
}

/* Starts a send or a receive of up to `len` bytes with `peer`. */
static grain_status_t start(grain_transport_t *t, int recv, uint32_t peer, uint64_t tag, void *data, size_t len,
                            void **req_p)
{
    const char *what = recv ? "endpoint receive" : "endpoint send";
    grain_status_t st = usable(t, what);
    if (st != GRAIN_OK)
        return st;
    if (len > INT_MAX || tag >= t->ep_tags)
        return grain_fail(GRAIN_ERR_INVALID,
                          "%s: %zu bytes with MPI tag %llu; MPI carries at most %d bytes a message and tags below %llu",
                          what, len, (unsigned long long)tag, INT_MAX, (unsigned long long)t->ep_tags);
    ep_req_t *r = malloc(sizeof *r);
    if (r == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory for a request", what);
    *r = (ep_req_t){MPI_REQUEST_NULL, recv, peer, len};
    int err = recv ? MPI_Irecv(data, (int)len, MPI_BYTE, (int)peer, (int)tag, t->ep_comm, &r->req)
                   : MPI_Isend(data, (int)len, MPI_BYTE, (int)peer, (int)tag, t->ep_comm, &r->req);
    if (err != MPI_SUCCESS) {
        free(r);
        return grain_mpi_error(err, recv ? "MPI_Irecv of an endpoint message" : "MPI_Isend of an endpoint message");
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

int grain_mpi_ep_test(grain_transport_t *t, void *req, size_t *len, grain_status_t *st)
{
    ep_req_t *r = req;
    MPI_Status status;
    int done = 0, err = MPI_Test(&r->req, &done, &status);
    if (err == MPI_SUCCESS && !done && !grain_mpi_failed(t))
        return 0;
    if (err != MPI_SUCCESS) {
        int class = MPI_SUCCESS;
        MPI_Error_class(err, &class);
        *st = class == MPI_ERR_TRUNCATE
                  ? grain_fail(GRAIN_ERR_INVALID, "endpoint receive: a message from rank %u does not fit the %zu "
                                                  "bytes given; it was taken and dropped",
                               r->peer, r->cap)
                  : grain_mpi_error(err, r->recv ? "an endpoint receive" : "an endpoint send");
    } else if (!done) {
        MPI_Cancel(&r->req);
        MPI_Request_free(&r->req);
        *st = grain_fail(GRAIN_ERR_PEER, "endpoint %s: a rank failed: %s", r->recv ? "receive" : "send", t->why);
    } else {
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        *len = r->recv ? (size_t)count : 0;
        *st = GRAIN_OK;
    }
    free(r);
    return 1;
}

void grain_mpi_ep_cancel(grain_transport_t *t, void *req)
{
    ep_req_t *r = req;
    if (!grain_mpi_failed(t)) {
        MPI_Cancel(&r->req);
        MPI_Wait(&r->req, MPI_STATUS_IGNORE);
    }
    free(r);
}
