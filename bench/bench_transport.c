/* SPDX-License-Identifier: BSD-3-Clause */
#include "bench/bench_transport.h"

#include <stdlib.h>
#include <string.h>

#include "transports/wire.h"

/* One job at a time: the benchmarks run their points one after another. */
static struct {
    unsigned pes;
    grain_transport_handlers_t h;
    size_t recv_size;
    void **bufs;
    unsigned n_bufs;
    /* The buffers the runtime holds, oldest first (settle frees in that
     * order), as a ring over the pool. */
    unsigned *held, held_first, n_held;
    unsigned char *is_held;
    uint64_t *delivered; /* messages, per source rank */
} bt;

void bench_transport_set_pes(unsigned pes)
{
    bt.pes = pes;
}

static grain_status_t bt_open(grain_transport_t **t_p, const grain_config_t *config, const void *mpi_comm,
                              int *my_pe_p, int *n_pes_p)
{
    (void)config, (void)mpi_comm;
    *t_p = NULL;
    *my_pe_p = 0;
    *n_pes_p = (int)bt.pes;
    return GRAIN_OK;
}

static void bt_free(void)
{
    for (unsigned i = 0; bt.bufs != NULL && i < bt.n_bufs; i++) {
        if (bt.h.free_recv != NULL)
            bt.h.free_recv(bt.h.arg, bt.bufs[i]);
        else
            free(bt.bufs[i]);
    }
    free(bt.bufs);
    free(bt.held);
    free(bt.is_held);
    free(bt.delivered);
    bt.bufs = NULL;
    bt.held = NULL;
    bt.is_held = NULL;
    bt.delivered = NULL;
}

static grain_status_t bt_start(grain_transport_t *t, const grain_transport_handlers_t *h, size_t recv_size,
                               unsigned recv_buffers)
{
    (void)t;
    bt.h = *h;
    bt.recv_size = recv_size;
    bt.n_bufs = recv_buffers;
    bt.held_first = bt.n_held = 0;
    bt.bufs = calloc(recv_buffers, sizeof *bt.bufs);
    bt.held = calloc(recv_buffers, sizeof *bt.held);
    bt.is_held = calloc(recv_buffers, 1);
    bt.delivered = calloc(bt.pes, sizeof *bt.delivered);
    int ok = bt.bufs != NULL && bt.held != NULL && bt.is_held != NULL && bt.delivered != NULL;
    for (unsigned i = 0; ok && i < recv_buffers; i++) {
        bt.bufs[i] = h->alloc_recv != NULL ? h->alloc_recv(h->arg, recv_size) : malloc(recv_size);
        ok = bt.bufs[i] != NULL;
    }
    if (!ok) {
        bt_free();
        return GRAIN_ERR_NO_MEMORY;
    }
    return GRAIN_OK;
}

void **bench_transport_recv_buffers(unsigned *count_p, size_t *recv_size_p)
{
    *count_p = bt.n_bufs;
    *recv_size_p = bt.recv_size;
    return bt.bufs;
}

static void settle(int wait)
{
    for (unsigned n = bt.h.settle(bt.h.arg, wait); n > 0; n--) {
        bt.is_held[bt.held[bt.held_first]] = 0;
        bt.held_first = (bt.held_first + 1) % bt.n_bufs;
        bt.n_held--;
    }
}

void bench_transport_deliver(unsigned i)
{
    while (bt.is_held[i])
        settle(0);
    grain_wire_hdr_t hdr;
    memcpy(&hdr, bt.bufs[i], sizeof hdr);
    bt.delivered[hdr.src_pe] += hdr.count;
    if (bt.h.received(bt.h.arg, hdr.src_pe, bt.bufs[i], hdr.bytes)) {
        bt.is_held[i] = 1;
        bt.held[(bt.held_first + bt.n_held++) % bt.n_bufs] = i;
    }
}

void bench_transport_settle_all(void)
{
    if (bt.n_held > 0)
        settle(1);
}

static grain_status_t bt_send(grain_transport_t *t, uint32_t dest, const void *data, size_t len, void *token)
{
    (void)t, (void)dest, (void)data, (void)len;
    grain_send_token_t *sent = token;
    sent->sent(sent);
    return GRAIN_OK;
}

/* The others take part in nothing but quiet's exchange of counts
 * (completion.c, two words a rank: messages, then chunk pieces), where
 * they say what was delivered from them. */
static grain_status_t bt_collective(grain_transport_t *t, const grain_coll_t *c)
{
    (void)t;
    if (c->kind != GRAIN_COLL_ALLTOALL_U64)
        return GRAIN_OK;
    uint64_t *recv = c->recv;
    memset(recv, 0, bt.pes * c->count * sizeof *recv);
    memcpy(recv, c->buf, c->count * sizeof *recv);
    for (unsigned p = 1; c->count == 2 && bt.delivered != NULL && p < bt.pes; p++)
        recv[2 * p] = bt.delivered[p];
    return GRAIN_OK;
}

static void bt_close(grain_transport_t *t)
{
    (void)t;
    bench_transport_settle_all();
    bt_free();
}

const grain_transport_ops_t bench_transport_ops = {
    .size = sizeof bench_transport_ops,
    .name = "bench",
    .open = bt_open,
    .start = bt_start,
    .send = bt_send,
    .collective = bt_collective,
    .close = bt_close,
};
