/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI transport's channel for device endpoints' two-sided messages
 * (grain/ep.h): a communicator of its own, on which endpoint threads post
 * their sends and receives themselves (MPI_THREAD_MULTIPLE) and wait for
 * them without blocking in MPI, so that a rank found failed ends the wait.
 * MPI matches by (source rank, tag) in order; the endpoints' tags carry
 * both virtual devices and the application's tag.
 */
#include <limits.h>
#include <stdlib.h>

#include "services/backoff.h"
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

/* Waits for `req` without blocking in MPI; a rank's failure ends it. */
static grain_status_t wait_for(grain_transport_t *t, MPI_Request *req, MPI_Status *status, const char *what)
{
    grain_backoff_t backoff = {0};
    for (;;) {
        int done = 0, err = MPI_Test(req, &done, status);
        if (err != MPI_SUCCESS)
            return grain_mpi_error(err, what);
        if (done)
            return GRAIN_OK;
        if (grain_mpi_failed(t)) {
            MPI_Cancel(req);
            MPI_Request_free(req);
            return grain_fail(GRAIN_ERR_PEER, "%s: a rank failed: %s", what, t->why);
        }
        grain_backoff_idle(&backoff);
    }
}

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

grain_status_t grain_mpi_ep_send(grain_transport_t *t, uint32_t dest, uint64_t tag, const void *data, size_t len)
{
    const char *what = "endpoint send";
    grain_status_t st = usable(t, what);
    if (st != GRAIN_OK)
        return st;
    if (len > INT_MAX || tag >= t->ep_tags)
        return grain_fail(GRAIN_ERR_INVALID, "%s: %zu bytes with MPI tag %llu; MPI carries at most %d bytes a message "
                                             "and tags below %llu",
                          what, len, (unsigned long long)tag, INT_MAX, (unsigned long long)t->ep_tags);
    MPI_Request req;
    int err = MPI_Isend(data, (int)len, MPI_BYTE, (int)dest, (int)tag, t->ep_comm, &req);
    if (err != MPI_SUCCESS)
        return grain_mpi_error(err, "MPI_Isend of an endpoint message");
    return wait_for(t, &req, MPI_STATUS_IGNORE, what);
}

grain_status_t grain_mpi_ep_recv(grain_transport_t *t, uint32_t src, uint64_t tag, void *data, size_t cap,
                                 size_t *len)
{
    const char *what = "endpoint receive";
    grain_status_t st = usable(t, what);
    if (st != GRAIN_OK)
        return st;
    if (tag >= t->ep_tags)
        return grain_fail(GRAIN_ERR_INVALID, "%s: MPI tag %llu; tags are below %llu", what, (unsigned long long)tag,
                          (unsigned long long)t->ep_tags);
    /* The size first: a message longer than `cap` is taken whole and
     * refused, never cut. */
    MPI_Status status;
    MPI_Message msg;
    grain_backoff_t backoff = {0};
    for (int found = 0; !found;) {
        int err = MPI_Improbe((int)src, (int)tag, t->ep_comm, &found, &msg, &status);
        if (err != MPI_SUCCESS)
            return grain_mpi_error(err, "MPI_Improbe for an endpoint message");
        if (!found && grain_mpi_failed(t))
            return grain_fail(GRAIN_ERR_PEER, "%s: a rank failed: %s", what, t->why);
        if (!found)
            grain_backoff_idle(&backoff);
    }
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    void *into = (size_t)count <= cap ? data : malloc((size_t)count);
    if (into == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory to take a refused message of %d bytes", what, count);
    MPI_Request req;
    int err = MPI_Imrecv(into, count, MPI_BYTE, &msg, &req);
    if (err == MPI_SUCCESS)
        st = wait_for(t, &req, MPI_STATUS_IGNORE, what);
    else
        st = grain_mpi_error(err, "MPI_Imrecv of an endpoint message");
    if (into != data) {
        free(into);
        if (st == GRAIN_OK)
            st = grain_fail(GRAIN_ERR_INVALID, "%s: a message of %d bytes from rank %u does not fit the %zu bytes "
                                               "given; it was taken and dropped",
                            what, count, src, cap);
    }
    if (st == GRAIN_OK)
        *len = (size_t)count;
    return st;
}
