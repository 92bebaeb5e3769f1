/* SPDX-License-Identifier: BSD-3-Clause */
/* The self transport: one rank, no peers, collectives are identities. */
#include <stdlib.h>
#include <string.h>

#include "services/log.h"
#include "transports/transport.h"

struct grain_transport {
    int unused;
};

static grain_status_t self_open(grain_transport_t **t_p, const grain_config_t *config, const void *mpi_comm,
                                int *my_pe_p, int *n_pes_p)
{
    (void)config, (void)mpi_comm; /* grain_transport_open refuses self with a communicator */
    grain_transport_t *t = calloc(1, sizeof *t);
    if (t == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "self transport: no memory");
    *t_p = t;
    *my_pe_p = 0;
    *n_pes_p = 1;
    return GRAIN_OK;
}

static grain_status_t self_start(grain_transport_t *t, const grain_transport_handlers_t *h,
                                 size_t recv_size, unsigned recv_buffers)
{
    (void)t, (void)h, (void)recv_size, (void)recv_buffers;
    return GRAIN_OK;
}

static grain_status_t self_send(grain_transport_t *t, uint32_t dest, const void *data, size_t len,
                                void *token)
{
    (void)t, (void)data, (void)len, (void)token;
    return grain_fail(GRAIN_ERR_BAD_PE, "self transport: there is no rank %u, only rank 0", dest);
}

static grain_status_t self_collective(grain_transport_t *t, const grain_coll_t *c)
{
    (void)t;
    if (c->kind == GRAIN_COLL_ALLTOALL_U64)
        memcpy(c->recv, c->buf, c->count * sizeof(uint64_t));
    else if (c->kind == GRAIN_COLL_ALLTOALLV && c->send_counts[0] > 0)
        memcpy(c->recv, c->buf, (size_t)c->send_counts[0]);
    return GRAIN_OK;
}

static void self_close(grain_transport_t *t)
{
    free(t);
}

const grain_transport_ops_t grain_transport_self = {
    .size = sizeof(grain_transport_ops_t),
    .name = "self",
    .open = self_open,
    .start = self_start,
    .send = self_send,
    .collective = self_collective,
    .close = self_close,
    .uses_thread = 0,
};
