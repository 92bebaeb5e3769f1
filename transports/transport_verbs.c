/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ibverbs transport (GRAIN_TRANSPORT=verbs; docs/design.md, send path
 * 5): RC queue pairs to every peer, buffers RDMA-written with their
 * length as immediate data into the peer's receive ring for this rank, and
 * credits returned by RDMA writes of a count (verbs_proto.h).  MPI
 * bootstraps it and runs the collectives: the MPI transport is opened and
 * started inside this one, and only buffers take the verbs path.
 *
 * One progress thread polls the completion queue: it hands arrived buffers
 * to the runtime, reposts their receives, returns credits, gives send
 * buffers back, and posts the sends that waited for a credit or a buffer.
 * send() copies the caller's buffer into a registered one and posts it
 * straight away when it can; either way the caller's buffer is free once
 * copied.  Nothing is dropped: a failed completion names the peer and the
 * status and is returned by the next send() or collective.
 *
 * Chunks of counter-triggered transfers whose region lives in the
 * symmetric heap skip the rings: put() RDMA-writes them from this rank's
 * heap into the destination's, where nothing needs to handle them, and
 * quiet waits for those writes (put_wait) before the ranks compare counts.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "services/backoff.h"
#include "services/config.h"
#include "services/log.h"
#include "transports/transport.h"
#include "transports/verbs_proto.h"

/* wr_ids: a buffer's write has its buffer's address, a receive its peer. */
#define CREDIT_WR UINT64_MAX       /* a credit return */
#define PUT_WR (UINT64_C(1) << 63) /* a put, or'ed with its peer: no user-space address has this bit */
#define POLL_BATCH 32
/* Puts in flight to one peer: the send queue's room beside the ring's writes.
 * Each is as long as the chunk (up to the port's largest message), so a
 * few keep the link busy. */
#define PUT_DEPTH 16u

typedef struct pending_send {
    struct pending_send *next;
    const void *data;
    size_t len;
    void *token;
} pending_send_t;

/* This rank's state for one peer; `lock` orders credit takes with posts. */
typedef struct verbs_peer {
    pthread_mutex_t lock;
    struct ibv_qp *qp;
    grain_verbs_credits_t credits;
    grain_verbs_ring_t ring; /* the progress thread's only */
    grain_verbs_peer_info_t remote;
    pending_send_t *pending_head, *pending_tail;
    _Atomic int credit_in_flight; /* a return is being written from credit_out */
    _Atomic unsigned puts;        /* in flight, at most PUT_DEPTH */
    uint64_t heap_addr;           /* its heap, where puts land */
    uint32_t heap_rkey;
} verbs_peer_t;

struct grain_transport {
    grain_transport_t *mpi;
    int my_pe, n_pes;
    struct ibv_context *ctx;
    struct ibv_port_attr port_attr;
    union ibv_gid gid;
    uint8_t port, gid_index;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    verbs_peer_t *peers;
    uint32_t slots, slot_bytes;
    uint8_t *rings;                     /* n_pes rings of slots x slot_bytes: peers write here */
    _Atomic uint64_t *credit_in;        /* per peer: its count of this rank's writes consumed */
    uint64_t *credit_out;               /* per peer: the count this rank returns, while in flight */
    uint8_t *send_memory;
    struct ibv_mr *rings_mr, *credit_in_mr, *credit_out_mr, *send_mr;
    grain_verbs_pool_t pool;
    grain_transport_handlers_t handlers;
    /* Progress thread only: the peers whose ring slots the runtime holds,
     * in the order it took them (it returns them so, transport.h), a ring
     * of n_pes x slots. */
    uint32_t *lent, lent_first, n_lent;
    pthread_t thread;
    int running;
    _Atomic int stop;
    _Atomic unsigned pending; /* sends waiting for a credit or a buffer */
    int sends;                /* GRAIN_IB_OPCODE=send: buffers as sends, not writes with immediate */
    int put_allowed;          /* GRAIN_IB_PUT */
    uint8_t *heap;            /* registered on every rank: puts go */
    size_t heap_size, max_put;
    struct ibv_mr *heap_mr;
    _Atomic uint64_t puts_out; /* puts in flight to all peers */
    pthread_mutex_t error_lock;
    grain_status_t error;
    char error_message[512];
};

static void record_error(grain_transport_t *t, grain_status_t st)
{
    pthread_mutex_lock(&t->error_lock);
    if (t->error == GRAIN_OK) {
        t->error = st;
        snprintf(t->error_message, sizeof t->error_message, "%s", grain_error_message(NULL));
    }
    pthread_mutex_unlock(&t->error_lock);
}

static grain_status_t first_error(grain_transport_t *t)
{
    if (grain_transport_mpi_failed(t->mpi))
        return GRAIN_ERR_PEER;
    pthread_mutex_lock(&t->error_lock);
    grain_status_t st = t->error;
    if (st != GRAIN_OK)
        grain_error_keep(t->error_message);
    pthread_mutex_unlock(&t->error_lock);
    return st;
}

/* ---- the device ------------------------------------------------------------ */

/* GRAIN_IB_GID_INDEX: a number, or auto: 0 on InfiniBand, where LIDs route,
 * and on RoCE the entry grain_verbs_gid_pick prefers. */
static grain_status_t choose_gid(grain_transport_t *t, const char *setting, const char *dev)
{
    static const uint8_t zero[16];
    if (strcmp(setting, "auto") != 0) {
        char *end;
        unsigned long i = strtoul(setting, &end, 10);
        if (end == setting || *end != '\0' || i >= (unsigned long)t->port_attr.gid_tbl_len || i > UINT8_MAX)
            return grain_fail(GRAIN_ERR_CONFIG,
                              "GRAIN_IB_GID_INDEX=%s: neither auto nor an entry of the %d-entry GID table of %s "
                              "port %u", setting, t->port_attr.gid_tbl_len, dev, t->port);
        t->gid_index = (uint8_t)i;
    } else if (t->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET) {
        struct ibv_device_attr attr;
        if (ibv_query_device(t->ctx, &attr) != 0)
            return grain_fail(GRAIN_ERR_TRANSPORT, "verbs: cannot query device %s", dev);
        size_t max = (size_t)attr.phys_port_cnt * (size_t)t->port_attr.gid_tbl_len;
        struct ibv_gid_entry *entries = calloc(max ? max : 1, sizeof *entries);
        if (entries == NULL)
            return grain_fail(GRAIN_ERR_NO_MEMORY, "verbs: no memory for the GID table of %s", dev);
        ssize_t n = ibv_query_gid_table(t->ctx, entries, max, 0);
        int pick = n > 0 ? grain_verbs_gid_pick(entries, (size_t)n, t->port) : -1;
        free(entries);
        if (pick < 0 || pick > UINT8_MAX)
            return grain_fail(GRAIN_ERR_TRANSPORT,
                              "verbs: port %u of %s has no GID to route by (does its netdev have an IP "
                              "address?); GRAIN_IB_GID_INDEX names one", t->port, dev);
        t->gid_index = (uint8_t)pick;
    }
    if (ibv_query_gid(t->ctx, t->port, t->gid_index, &t->gid) != 0 || memcmp(t->gid.raw, zero, sizeof zero) == 0)
        return grain_fail(GRAIN_ERR_CONFIG, "GRAIN_IB_GID_INDEX=%s: entry %u of %s port %u has no GID", setting,
                          t->gid_index, dev, t->port);
    return GRAIN_OK;
}

/* Opens GRAIN_IB_DEVICE (or the first device) and checks GRAIN_IB_PORT,
 * naming what is missing. */
static grain_status_t open_device(grain_transport_t *t, const grain_config_t *config)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (list == NULL || n == 0) {
        if (list != NULL)
            ibv_free_device_list(list);
        return grain_fail(GRAIN_ERR_TRANSPORT,
                          "GRAIN_TRANSPORT=verbs: no RDMA device (libibverbs lists none: no InfiniBand or RoCE "
                          "adapter with its driver loaded; Soft-RoCE adds one: rdma link add rxe0 type rxe netdev "
                          "eth0); GRAIN_TRANSPORT=verbs,mpi falls back to MPI");
    }
    char names[256] = "";
    struct ibv_device *dev = NULL;
    for (int i = 0; i < n; i++) {
        const char *name = ibv_get_device_name(list[i]);
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", name);
        if (dev == NULL && (config->ib_device[0] == '\0' || strcmp(config->ib_device, name) == 0))
            dev = list[i];
    }
    if (dev == NULL) {
        ibv_free_device_list(list);
        return grain_fail(GRAIN_ERR_CONFIG, "GRAIN_IB_DEVICE=%s: no such RDMA device (there are: %s)",
                          config->ib_device, names);
    }
    t->ctx = ibv_open_device(dev);
    const char *name = ibv_get_device_name(dev);
    char opened[64];
    snprintf(opened, sizeof opened, "%s", name);
    ibv_free_device_list(list);
    if (t->ctx == NULL)
        return grain_fail(GRAIN_ERR_TRANSPORT, "verbs: cannot open RDMA device %s", opened);
    t->port = (uint8_t)config->ib_port;
    if (ibv_query_port(t->ctx, t->port, &t->port_attr) != 0)
        return grain_fail(GRAIN_ERR_CONFIG, "GRAIN_IB_PORT=%u: device %s has no such port", t->port, opened);
    if (t->port_attr.state != IBV_PORT_ACTIVE)
        return grain_fail(GRAIN_ERR_TRANSPORT,
                          "verbs: port %u of %s is not active (state %s): is the link up, and a subnet manager "
                          "running on InfiniBand?",
                          t->port, opened, ibv_port_state_str(t->port_attr.state));
    grain_status_t st = choose_gid(t, config->ib_gid_index, opened);
    if (st != GRAIN_OK)
        return st;
    char gid[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, t->gid.raw, gid, sizeof gid);
    grain_info("verbs: device %s, port %u, %s, lid %u, GID %u (%s)", opened, t->port,
               t->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand", t->port_attr.lid,
               t->gid_index, gid);
    return GRAIN_OK;
}

static grain_status_t register_memory(grain_transport_t *t, void *p, size_t len, int access, struct ibv_mr **mr_p,
                                      const char *what)
{
    *mr_p = ibv_reg_mr(t->pd, p, len, access);
    return *mr_p != NULL ? GRAIN_OK
                         : grain_fail(GRAIN_ERR_TRANSPORT, "verbs: cannot register %zu bytes of %s", len, what);
}

/* ---- queue pairs ------------------------------------------------------------ */

static grain_status_t create_qp(grain_transport_t *t, verbs_peer_t *p)
{
    struct ibv_qp_init_attr attr = {
        .send_cq = t->cq,
        .recv_cq = t->cq,
        .cap = {.max_send_wr = t->slots + 2 + PUT_DEPTH, .max_recv_wr = t->slots, .max_send_sge = 1,
                .max_recv_sge = 1},
        .qp_type = IBV_QPT_RC,
    };
    p->qp = ibv_create_qp(t->pd, &attr);
    if (p->qp == NULL)
        return grain_fail(GRAIN_ERR_TRANSPORT, "verbs: cannot create a queue pair (%u writes in flight)", t->slots);
    struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .port_num = t->port,
                               .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE};
    int err = ibv_modify_qp(p->qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (err != 0)
        return grain_fail(GRAIN_ERR_TRANSPORT, "verbs: cannot move a queue pair to INIT: %s", strerror(err));
    return GRAIN_OK;
}

/* A receive for each slot: a write with immediate data takes one and
 * ignores it; a send lands in it.  Receives complete in the order they
 * were posted, so reposting each slot as it is consumed keeps the k-th
 * receive on slot k mod slots, the slot the ring expects. */
static int post_recv(const grain_transport_t *t, verbs_peer_t *p, uint32_t peer, uint32_t slot)
{
    struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)(t->rings + ((size_t)peer * t->slots + slot) * t->slot_bytes),
                          .length = t->slot_bytes,
                          .lkey = t->rings_mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = peer, .sg_list = &sge, .num_sge = t->sends}, *bad;
    return ibv_post_recv(p->qp, &wr, &bad);
}

static grain_status_t connect_qp(grain_transport_t *t, verbs_peer_t *p, uint32_t peer, uint32_t psn)
{
    const grain_verbs_peer_info_t *r = &p->remote;
    struct ibv_qp_attr rtr = {
        .qp_state = IBV_QPS_RTR,
        .path_mtu = t->port_attr.active_mtu,
        .dest_qp_num = r->qp_num,
        .rq_psn = r->psn,
        .max_dest_rd_atomic = 1,
        .min_rnr_timer = 12,
        .ah_attr = {.dlid = r->lid, .port_num = t->port},
    };
    /* RoCE has no LIDs: it routes by GID. */
    if (t->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET || r->lid == 0) {
        rtr.ah_attr.is_global = 1;
        memcpy(rtr.ah_attr.grh.dgid.raw, r->gid, sizeof r->gid);
        rtr.ah_attr.grh.hop_limit = 64;
        rtr.ah_attr.grh.sgid_index = t->gid_index;
    }
    int err = ibv_modify_qp(p->qp, &rtr,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (err != 0)
        return grain_fail(GRAIN_ERR_TRANSPORT,
                          "verbs: cannot connect the queue pair to rank %u (RTR: %s; on RoCE, is GID %u one the "
                          "ranks reach each other by? GRAIN_IB_GID_INDEX)",
                          peer, strerror(err), t->gid_index);
    struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
                              .sq_psn = psn, .max_rd_atomic = 1};
    err = ibv_modify_qp(p->qp, &rts,
                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                            IBV_QP_MAX_QP_RD_ATOMIC);
    if (err != 0)
        return grain_fail(GRAIN_ERR_TRANSPORT, "verbs: cannot connect the queue pair to rank %u (RTS: %s)", peer,
                          strerror(err));
    return GRAIN_OK;
}

/* What this rank tells `peer`: its end of their QP, its ring for the peer's
 * writes and the word where the peer returns credits. */
static grain_verbs_peer_info_t local_info(const grain_transport_t *t, uint32_t peer, uint32_t psn)
{
    grain_verbs_peer_info_t info = {
        .qp_num = t->peers[peer].qp->qp_num,
        .psn = psn,
        .lid = t->port_attr.lid,
        .port = t->port,
        .ring_addr = (uint64_t)(uintptr_t)(t->rings + (size_t)peer * t->slots * t->slot_bytes),
        .ring_rkey = t->rings_mr->rkey,
        .credit_addr = (uint64_t)(uintptr_t)&t->credit_in[peer],
        .credit_rkey = t->credit_in_mr->rkey,
        .slots = t->slots,
        .slot_bytes = t->slot_bytes,
    };
    memcpy(info.gid, t->gid.raw, sizeof info.gid);
    return info;
}

static uint32_t psn_for(uint32_t from, uint32_t to) { return (from * 7919u + to * 104729u) & 0xffffffu; }

/* Collective: every pair's records through MPI, then every QP connected. */
static grain_status_t bootstrap(grain_transport_t *t)
{
    size_t n = (size_t)t->n_pes, rec = GRAIN_VERBS_INFO_BYTES;
    uint8_t *out = calloc(n, rec), *in = calloc(n, rec);
    int *counts = calloc(n, sizeof *counts), *displs = calloc(n, sizeof *displs);
    grain_status_t st = out && in && counts && displs ? GRAIN_OK
                                                      : grain_fail(GRAIN_ERR_NO_MEMORY, "verbs: no memory to bootstrap");
    for (size_t p = 0; st == GRAIN_OK && p < n; p++) {
        counts[p] = (int)rec;
        displs[p] = (int)(p * rec);
        if ((int)p == t->my_pe)
            continue;
        grain_verbs_peer_info_t info = local_info(t, (uint32_t)p, psn_for((uint32_t)t->my_pe, (uint32_t)p));
        grain_verbs_info_pack(&info, out + p * rec);
    }
    if (st == GRAIN_OK) {
        grain_coll_t c = {.kind = GRAIN_COLL_ALLTOALLV, .buf = out, .recv = in, .send_counts = counts,
                          .send_displs = displs, .recv_counts = counts, .recv_displs = displs};
        st = grain_transport_mpi.collective(t->mpi, &c);
    }
    for (size_t p = 0; st == GRAIN_OK && p < n; p++) {
        if ((int)p == t->my_pe)
            continue;
        verbs_peer_t *peer = &t->peers[p];
        st = grain_verbs_info_unpack(in + p * rec, rec, (uint32_t)p, &peer->remote);
        if (st == GRAIN_OK && (peer->remote.slots != t->slots || peer->remote.slot_bytes != t->slot_bytes))
            st = grain_fail(GRAIN_ERR_CONFIG,
                            "verbs: rank %zu keeps %u receive slots of %u bytes, this rank %u of %u: give every "
                            "rank the same GRAIN_BUFFER_SIZE and GRAIN_RECV_BUFFERS",
                            p, peer->remote.slots, peer->remote.slot_bytes, t->slots, t->slot_bytes);
        if (st == GRAIN_OK)
            st = connect_qp(t, peer, (uint32_t)p, psn_for((uint32_t)t->my_pe, (uint32_t)p));
    }
    free(out);
    free(in);
    free(counts);
    free(displs);
    /* Nobody writes before every rank's queue pairs are ready to receive. */
    grain_coll_t barrier = {.kind = GRAIN_COLL_BARRIER};
    grain_status_t bst = grain_transport_mpi.collective(t->mpi, &barrier);
    return st != GRAIN_OK ? st : bst;
}

/* ---- sending ----------------------------------------------------------------- */

/* Posts `len` bytes already in `buf` (a pool buffer) into the peer's ring;
 * the caller holds the peer's lock and took a credit for `slot`. */
static grain_status_t post_write(grain_transport_t *t, verbs_peer_t *p, uint32_t peer, uint8_t *buf, size_t len,
                                 uint32_t slot)
{
    struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)buf, .length = (uint32_t)len, .lkey = t->send_mr->lkey};
    struct ibv_send_wr wr = {
        .wr_id = (uint64_t)(uintptr_t)buf,
        .sg_list = &sge,
        .num_sge = 1,
        .opcode = t->sends ? IBV_WR_SEND : IBV_WR_RDMA_WRITE_WITH_IMM,
        .send_flags = IBV_SEND_SIGNALED,
        .imm_data = htonl((uint32_t)len),
        .wr = {.rdma = {.remote_addr = p->remote.ring_addr + (uint64_t)slot * t->slot_bytes,
                        .rkey = p->remote.ring_rkey}},
    }, *bad;
    return ibv_post_send(p->qp, &wr, &bad) == 0
               ? GRAIN_OK
               : grain_fail(GRAIN_ERR_TRANSPORT, "verbs: cannot post a write of %zu bytes to rank %u", len, peer);
}

/* Posts a copy of the buffer if a credit and a registered buffer are
 * free.  The caller holds the peer's lock, and hands the caller's buffer
 * back (handlers.sent) once it has let go of it: the sender's own locks
 * may be taken there. */
static grain_status_t try_send(grain_transport_t *t, uint32_t peer, const void *data, size_t len, int *sent_p)
{
    verbs_peer_t *p = &t->peers[peer];
    *sent_p = 0;
    if (grain_verbs_credits_available(&p->credits) == 0)
        return GRAIN_OK;
    uint8_t *buf = grain_verbs_pool_take(&t->pool);
    if (buf == NULL)
        return GRAIN_OK;
    uint32_t slot;
    grain_verbs_credits_take(&p->credits, &slot);
    memcpy(buf, data, len);
    grain_status_t st = post_write(t, p, peer, buf, len, slot);
    if (st != GRAIN_OK) /* the queue pair is broken: the credit goes with it, the buffer comes back */
        grain_verbs_pool_give(&t->pool, buf);
    *sent_p = st == GRAIN_OK; /* copied: the caller's buffer is free, which the caller says, unlocked */
    return st;
}

/* Posts the peer's waiting sends while credits and buffers last. */
static grain_status_t flush_pending(grain_transport_t *t, uint32_t peer)
{
    verbs_peer_t *p = &t->peers[peer];
    grain_status_t st = GRAIN_OK;
    for (int sent = 1; st == GRAIN_OK && sent;) {
        pthread_mutex_lock(&p->lock);
        pending_send_t *s = p->pending_head;
        sent = 0;
        if (s != NULL)
            st = try_send(t, peer, s->data, s->len, &sent);
        if (sent) {
            p->pending_head = s->next;
            if (p->pending_head == NULL)
                p->pending_tail = NULL;
            atomic_fetch_sub_explicit(&t->pending, 1, memory_order_relaxed);
        }
        pthread_mutex_unlock(&p->lock);
        if (sent) {
            t->handlers.sent(t->handlers.arg, s->token);
            free(s);
        }
    }
    return st;
}

static grain_status_t verbs_send(grain_transport_t *t, uint32_t dest, const void *data, size_t len, void *token)
{
    grain_status_t st = first_error(t);
    if (st != GRAIN_OK)
        return st;
    if (len > t->slot_bytes)
        return grain_fail(GRAIN_ERR_INVALID, "verbs: a %zu-byte buffer for rank %u; receive slots hold %u", len,
                          dest, t->slot_bytes);
    verbs_peer_t *p = &t->peers[dest];
    int sent = 0;
    pthread_mutex_lock(&p->lock);
    /* Behind earlier waiting sends, never ahead: buffers keep their order. */
    if (p->pending_head == NULL)
        st = try_send(t, dest, data, len, &sent);
    if (st == GRAIN_OK && !sent) {
        pending_send_t *s = malloc(sizeof *s);
        if (s == NULL) {
            st = grain_fail(GRAIN_ERR_NO_MEMORY, "verbs: no memory to queue a send");
        } else {
            *s = (pending_send_t){NULL, data, len, token};
            if (p->pending_tail != NULL)
                p->pending_tail->next = s;
            else
                p->pending_head = s;
            p->pending_tail = s;
            atomic_fetch_add_explicit(&t->pending, 1, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&p->lock);
    if (sent)
        t->handlers.sent(t->handlers.arg, token);
    return st;
}

/* ---- progress ---------------------------------------------------------------- */

/* Whether a credit return is due (none may be in flight: its source word
 * must not change under the write). */
static int credits_due(const verbs_peer_t *p, int idle)
{
    return !p->credit_in_flight && grain_verbs_ring_should_return(&p->ring, idle);
}

/* Writes this rank's count of the peer's consumed slots into its credit word. */
static grain_status_t return_credits(grain_transport_t *t, uint32_t peer)
{
    verbs_peer_t *p = &t->peers[peer];
    t->credit_out[peer] = grain_verbs_ring_return(&p->ring);
    struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)&t->credit_out[peer], .length = sizeof(uint64_t),
                          .lkey = t->credit_out_mr->lkey};
    struct ibv_send_wr wr = {
        .wr_id = CREDIT_WR,
        .sg_list = &sge,
        .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE,
        .send_flags = IBV_SEND_SIGNALED,
        .wr = {.rdma = {.remote_addr = p->remote.credit_addr, .rkey = p->remote.credit_rkey}},
    }, *bad;
    pthread_mutex_lock(&p->lock);
    int err = ibv_post_send(p->qp, &wr, &bad);
    pthread_mutex_unlock(&p->lock);
    if (err != 0)
        return grain_fail(GRAIN_ERR_TRANSPORT, "verbs: cannot post a credit return to rank %u", peer);
    p->credit_in_flight = 1;
    return GRAIN_OK;
}

static uint32_t peer_of_qp(const grain_transport_t *t, uint32_t qp_num)
{
    for (int p = 0; p < t->n_pes; p++)
        if (p != t->my_pe && t->peers[p].qp->qp_num == qp_num)
            return (uint32_t)p;
    return UINT32_MAX;
}

/* The peer's oldest slot is free again: its receive is reposted (the
 * slot the ring expects next of it) and the credit returned when due. */
static grain_status_t consume(grain_transport_t *t, uint32_t peer)
{
    verbs_peer_t *p = &t->peers[peer];
    uint32_t slot = (uint32_t)(p->ring.consumed % t->slots);
    grain_verbs_ring_consume(&p->ring);
    if (post_recv(t, p, peer, slot) != 0)
        return grain_fail(GRAIN_ERR_TRANSPORT, "verbs: cannot repost a receive for rank %u", peer);
    return credits_due(p, 0) ? return_credits(t, peer) : GRAIN_OK;
}

/* Consumes the slots the runtime returned (with `wait`, all it holds, once
 * it is done with them); whether any came back. */
static int settle_lent(grain_transport_t *t, int wait)
{
    unsigned n = t->handlers.settle(t->handlers.arg, wait);
    for (unsigned i = 0; i < n && t->n_lent > 0; i++) {
        uint32_t peer = t->lent[t->lent_first];
        t->lent_first = (t->lent_first + 1) % ((uint32_t)t->n_pes * t->slots);
        t->n_lent--;
        grain_status_t st = consume(t, peer);
        if (st != GRAIN_OK)
            record_error(t, st);
    }
    return n > 0;
}

static grain_status_t completed(grain_transport_t *t, const struct ibv_wc *wc)
{
    if (wc->status == IBV_WC_SUCCESS && (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM || wc->opcode == IBV_WC_RECV)) {
        uint32_t peer = (uint32_t)wc->wr_id, slot;
        uint32_t len = wc->opcode == IBV_WC_RECV ? wc->byte_len : ntohl(wc->imm_data);
        verbs_peer_t *p = &t->peers[peer];
        grain_status_t st = grain_verbs_ring_arrive(&p->ring, len, peer, &slot);
        if (st != GRAIN_OK)
            return st;
        uint8_t *data = t->rings + ((size_t)peer * t->slots + slot) * t->slot_bytes;
        /* A slot the runtime holds (a receive thread applies it) is
         * consumed, reposted and credited once returned (settle_lent). */
        if (t->handlers.received(t->handlers.arg, peer, data, len)) {
            t->lent[(t->lent_first + t->n_lent++) % ((uint32_t)t->n_pes * t->slots)] = peer;
            return GRAIN_OK;
        }
        return consume(t, peer);
    }
    /* A failed completion's opcode means nothing: its wr_id says what it
     * was (a receive's is its peer, a write's its buffer) and its QP whom. */
    uint32_t peer = peer_of_qp(t, wc->qp_num);
    int put = wc->wr_id != CREDIT_WR && (wc->wr_id & PUT_WR);
    if (put) { /* landed, or never will: either way no longer in flight */
        atomic_fetch_sub_explicit(&t->peers[peer].puts, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&t->puts_out, 1, memory_order_release);
    }
    if (wc->status != IBV_WC_SUCCESS)
        return grain_verbs_wc_error(wc->status, peer,
                                    wc->wr_id == CREDIT_WR           ? "a credit return"
                                    : put                            ? "a chunk's write into its heap"
                                    : wc->wr_id < (uint64_t)t->n_pes ? "a receive"
                                                                     : "a buffer's write");
    if (put)
        return GRAIN_OK;
    if (wc->wr_id == CREDIT_WR) {
        t->peers[peer].credit_in_flight = 0;
        return GRAIN_OK;
    }
    grain_status_t st = grain_verbs_pool_give(&t->pool, (void *)(uintptr_t)wc->wr_id);
    /* A buffer is back: whoever waited for one may go. */
    for (int q = 0; st == GRAIN_OK && q < t->n_pes && atomic_load(&t->pending) > 0; q++)
        if (q != t->my_pe)
            st = flush_pending(t, (uint32_t)q);
    return st;
}

/* Credits the peers returned since the last look; idle, the returns due. */
static int exchange_credits(grain_transport_t *t, int idle)
{
    int worked = 0;
    for (int q = 0; q < t->n_pes; q++) {
        if (q == t->my_pe)
            continue;
        verbs_peer_t *p = &t->peers[q];
        uint64_t consumed = atomic_load_explicit(&t->credit_in[q], memory_order_acquire);
        grain_status_t st = GRAIN_OK;
        if (consumed != p->credits.consumed) {
            pthread_mutex_lock(&p->lock);
            st = grain_verbs_credits_returned(&p->credits, consumed, (uint32_t)q);
            pthread_mutex_unlock(&p->lock);
            if (st == GRAIN_OK)
                st = flush_pending(t, (uint32_t)q);
            worked = 1;
        }
        if (st == GRAIN_OK && idle && credits_due(p, 1)) {
            st = return_credits(t, (uint32_t)q);
            worked = 1;
        }
        if (st != GRAIN_OK)
            record_error(t, st);
    }
    return worked;
}

static void *progress_thread(void *arg)
{
    grain_transport_t *t = arg;
    grain_backoff_t backoff = {0};
    struct ibv_wc wc[POLL_BATCH];
    while (!atomic_load_explicit(&t->stop, memory_order_acquire)) {
        int n = ibv_poll_cq(t->cq, POLL_BATCH, wc);
        if (n < 0)
            record_error(t, grain_fail(GRAIN_ERR_TRANSPORT, "verbs: polling the completion queue failed"));
        for (int i = 0; i < n; i++) {
            grain_status_t st = completed(t, &wc[i]);
            if (st != GRAIN_OK)
                record_error(t, st);
        }
        int worked = settle_lent(t, 0);
        worked = exchange_credits(t, n <= 0) || n > 0 || worked;
        /* While this rank's writes are in flight, or its sends wait for
         * credits, what they wait for comes soon, and grain_quiet may be
         * waiting on them: no nap then. */
        if (worked)
            grain_backoff_reset(&backoff);
        else if (atomic_load_explicit(&t->puts_out, memory_order_relaxed) != 0 ||
                 atomic_load_explicit(&t->pending, memory_order_relaxed) != 0)
            grain_backoff_idle_patient(&backoff, GRAIN_BACKOFF_PATIENCE_NS);
        else
            grain_backoff_idle(&backoff);
    }
    return NULL;
}

/* ---- the transport ------------------------------------------------------------ */

static grain_status_t verbs_open(grain_transport_t **t_p, const grain_config_t *config, const void *mpi_comm,
                                 int *my_pe_p, int *n_pes_p)
{
    grain_transport_t *t = calloc(1, sizeof *t);
    if (t == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "verbs transport: no memory");
    pthread_mutex_init(&t->error_lock, NULL);
    /* The device first: without one, MPI is left untouched for a fallback.
     * Buffers take the verbs path, so MPI keeps no window of rings for them. */
    grain_status_t st = open_device(t, config);
    grain_config_t mpi_config = *config;
    snprintf(mpi_config.mpi_buffers, sizeof mpi_config.mpi_buffers, "%s",
             grain_mpi_buffers_names[GRAIN_MPI_BUFFERS_SEND]);
    if (st == GRAIN_OK)
        st = grain_transport_mpi.open(&t->mpi, &mpi_config, mpi_comm, &t->my_pe, &t->n_pes);
    if (st != GRAIN_OK) {
        if (t->ctx != NULL)
            ibv_close_device(t->ctx);
        pthread_mutex_destroy(&t->error_lock);
        free(t);
        return st;
    }
    t->put_allowed = config->ib_put;
    t->sends = strcmp(config->ib_opcode, "send") == 0;
    /* One write of a chunk, up to the port's largest message. */
    t->max_put = t->port_attr.max_msg_sz < (UINT32_C(1) << 30) ? t->port_attr.max_msg_sz : UINT32_C(1) << 30;
    *t_p = t;
    *my_pe_p = t->my_pe;
    *n_pes_p = t->n_pes;
    return GRAIN_OK;
}

static unsigned settle_nothing(void *arg, int wait)
{
    (void)arg, (void)wait;
    return 0;
}

static grain_status_t verbs_start(grain_transport_t *t, const grain_transport_handlers_t *handlers,
                                  size_t recv_size, unsigned recv_buffers)
{
    t->handlers = *handlers;
    /* MPI carries the collectives only: one small receive is plenty.  Its
     * network thread lends the runtime nothing, so it must not settle: the
     * runtime's lent buffers are this thread's slots, and only it may take
     * them back. */
    grain_transport_handlers_t mpi_handlers = *handlers;
    mpi_handlers.settle = settle_nothing;
    grain_status_t st = grain_transport_mpi.start(t->mpi, &mpi_handlers, 64, 1);
    if (st != GRAIN_OK)
        return st;
    size_t n = (size_t)t->n_pes;
    t->slots = recv_buffers;
    t->slot_bytes = (uint32_t)recv_size;
    size_t ring_bytes = n * t->slots * t->slot_bytes, send_bufs = n * t->slots;
    t->peers = calloc(n, sizeof *t->peers);
    t->lent = calloc(n * t->slots, sizeof *t->lent);
    t->rings = aligned_alloc(4096, (ring_bytes + 4095) / 4096 * 4096);
    t->credit_in = aligned_alloc(64, (n * sizeof(uint64_t) + 63) / 64 * 64);
    t->credit_out = aligned_alloc(64, (n * sizeof(uint64_t) + 63) / 64 * 64);
    t->send_memory = aligned_alloc(4096, (send_bufs * t->slot_bytes + 4095) / 4096 * 4096);
    if (!t->peers || !t->lent || !t->rings || !t->credit_in || !t->credit_out || !t->send_memory)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "verbs: no memory for %zu rings of %u slots of %u bytes", n, t->slots,
                          t->slot_bytes);
    for (size_t p = 0; p < n; p++) {
        atomic_init(&t->credit_in[p], 0);
        t->credit_out[p] = 0;
    }
    t->pd = ibv_alloc_pd(t->ctx);
    t->cq = t->pd ? ibv_create_cq(t->ctx, (int)(n * (2 * t->slots + 2 + PUT_DEPTH)), NULL, NULL, 0) : NULL;
    if (t->cq == NULL)
        return grain_fail(GRAIN_ERR_TRANSPORT, "verbs: cannot create a protection domain and a completion queue");
    int remote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    st = register_memory(t, t->rings, ring_bytes, remote, &t->rings_mr, "receive rings");
    if (st == GRAIN_OK)
        st = register_memory(t, (void *)t->credit_in, n * sizeof(uint64_t), remote, &t->credit_in_mr,
                             "credit words");
    if (st == GRAIN_OK)
        st = register_memory(t, t->credit_out, n * sizeof(uint64_t), IBV_ACCESS_LOCAL_WRITE, &t->credit_out_mr,
                             "credit returns");
    if (st == GRAIN_OK)
        st = register_memory(t, t->send_memory, send_bufs * t->slot_bytes, IBV_ACCESS_LOCAL_WRITE, &t->send_mr,
                             "send buffers");
    if (st == GRAIN_OK)
        st = grain_verbs_pool_init(&t->pool, t->send_memory, t->slot_bytes, (uint32_t)send_bufs);
    for (size_t p = 0; st == GRAIN_OK && p < n; p++) {
        verbs_peer_t *peer = &t->peers[p];
        pthread_mutex_init(&peer->lock, NULL);
        if ((int)p == t->my_pe)
            continue;
        grain_verbs_credits_init(&peer->credits, t->slots);
        grain_verbs_ring_init(&peer->ring, t->slots, t->slot_bytes);
        st = create_qp(t, peer);
        for (uint32_t s = 0; st == GRAIN_OK && s < t->slots; s++)
            if (post_recv(t, peer, (uint32_t)p, s) != 0)
                st = grain_fail(GRAIN_ERR_TRANSPORT, "verbs: cannot post the receives for rank %zu", p);
    }
    /* Collective from here: a rank that failed alone must not leave the
     * others waiting in the exchange.  A send into a ring posted for
     * writes would fail: every rank must move buffers the same way. */
    int64_t ok[3] = {st == GRAIN_OK, t->sends, -t->sends};
    grain_coll_t agree = {.kind = GRAIN_COLL_ALLREDUCE, .buf = ok, .count = 3, .dtype = GRAIN_INT64,
                          .op = GRAIN_MIN};
    grain_status_t ast = grain_transport_mpi.collective(t->mpi, &agree);
    if (st == GRAIN_OK && ast == GRAIN_OK && !ok[0])
        st = grain_fail(GRAIN_ERR_TRANSPORT, "verbs: another rank could not set up its queue pairs");
    if (st == GRAIN_OK && ast == GRAIN_OK && ok[1] != -ok[2])
        st = grain_fail(GRAIN_ERR_CONFIG, "verbs: ranks differ in GRAIN_IB_OPCODE: give every rank the same");
    st = st != GRAIN_OK ? st : ast;
    if (st == GRAIN_OK)
        st = bootstrap(t);
    if (st == GRAIN_OK && pthread_create(&t->thread, NULL, progress_thread, t) != 0)
        st = grain_fail(GRAIN_ERR_TRANSPORT, "verbs: cannot start the progress thread");
    t->running = st == GRAIN_OK;
    return st;
}

static grain_status_t verbs_collective(grain_transport_t *t, const grain_coll_t *c)
{
    grain_status_t st = first_error(t);
    return st != GRAIN_OK ? st : grain_transport_mpi.collective(t->mpi, c);
}

/* ---- device endpoints' messages ----------------------------------------------- */

/* Two-sided messages of any length, matched by (rank, tag) in the order
 * sent and posted, are what MPI's tagged point-to-point does, over the same
 * RDMA network where the job spans nodes: they take the endpoint channel of
 * the MPI transport this one starts over (its own communicator, its thread
 * modes), not grain's rings, which carry packed buffers of one size. */
static grain_status_t verbs_ep_isend(grain_transport_t *t, uint32_t dest, uint64_t tag, const void *data,
                                     size_t len, void **req_p)
{
    return grain_transport_mpi.ep_isend(t->mpi, dest, tag, data, len, req_p);
}

static grain_status_t verbs_ep_irecv(grain_transport_t *t, uint32_t src, uint64_t tag, void *data, size_t cap,
                                     void **req_p)
{
    return grain_transport_mpi.ep_irecv(t->mpi, src, tag, data, cap, req_p);
}

static int verbs_ep_test(grain_transport_t *t, void *req, size_t *len, grain_status_t *st)
{
    return grain_transport_mpi.ep_test(t->mpi, req, len, st);
}

static void verbs_ep_cancel(grain_transport_t *t, void *req)
{
    grain_transport_mpi.ep_cancel(t->mpi, req);
}

static uint64_t verbs_ep_tags(grain_transport_t *t)
{
    return grain_transport_mpi.ep_tags(t->mpi);
}

/* ---- puts: chunks straight into the peers' heaps ------------------------------- */

static grain_status_t verbs_register_heap(grain_transport_t *t, void *base, size_t size, int *ready_p)
{
    *ready_p = 0;
    size_t n = (size_t)t->n_pes;
    uint64_t *words = calloc(4 * n, sizeof *words);
    if (words == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "verbs: no memory to exchange heap keys");
    uint64_t *in = words + 2 * n;
    if (t->put_allowed) {
        /* Device memory registers only through GPUDirect RDMA (nvidia-peermem,
         * amdgpu's peer memory): without it, chunks take the rings. */
        t->heap_mr = ibv_reg_mr(t->pd, base, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        if (t->heap_mr == NULL)
            grain_info("verbs: cannot register the %zu-byte symmetric heap (%s; a heap in GPU memory needs "
                       "GPUDirect RDMA); chunks go through the receive rings",
                       size, strerror(errno));
    }
    for (size_t p = 0; p < n; p++)
        grain_verbs_heap_words((uint64_t)(uintptr_t)base, t->heap_mr ? t->heap_mr->rkey : 0, t->heap_mr != NULL,
                               words + 2 * p);
    grain_coll_t c = {.kind = GRAIN_COLL_ALLTOALL_U64, .buf = words, .recv = in, .count = 2};
    grain_status_t st = verbs_collective(t, &c);
    int all = t->heap_mr != NULL;
    for (size_t p = 0; st == GRAIN_OK && p < n; p++) {
        int registered;
        st = grain_verbs_heap_unwords(in + 2 * p, (uint32_t)p, &t->peers[p].heap_addr, &t->peers[p].heap_rkey,
                                      &registered);
        if (st == GRAIN_OK && !registered && all)
            grain_info("verbs: rank %zu did not register its heap; chunks go through the receive rings", p);
        all = all && registered;
    }
    free(words);
    if (st == GRAIN_OK && all) {
        t->heap = base;
        t->heap_size = size;
        *ready_p = 1;
    } else if (t->heap_mr != NULL) { /* nobody writes into it */
        ibv_dereg_mr(t->heap_mr);
        t->heap_mr = NULL;
    }
    return st;
}

static grain_status_t verbs_put(grain_transport_t *t, uint32_t dest, uint64_t from, uint64_t to, size_t len)
{
    grain_status_t st = first_error(t);
    if (st != GRAIN_OK)
        return st;
    if (t->heap == NULL || from > t->heap_size || len > t->heap_size - from || to > t->heap_size ||
        len > t->heap_size - to)
        return grain_fail(GRAIN_ERR_BAD_OFFSET,
                          "verbs: a put of %zu bytes from heap offset %llu to offset %llu of rank %u, outside the "
                          "%zu-byte registered heap",
                          len, (unsigned long long)from, (unsigned long long)to, dest, t->heap_size);
    verbs_peer_t *p = &t->peers[dest];
    grain_backoff_t full = {0};
    for (size_t done = 0; st == GRAIN_OK && done < len;) {
        size_t n = len - done < t->max_put ? len - done : t->max_put;
        struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)(t->heap + from + done), .length = (uint32_t)n,
                              .lkey = t->heap_mr->lkey};
        struct ibv_send_wr wr = {
            .wr_id = PUT_WR | dest,
            .sg_list = &sge,
            .num_sge = 1,
            .opcode = IBV_WR_RDMA_WRITE,
            .send_flags = IBV_SEND_SIGNALED,
            .wr = {.rdma = {.remote_addr = p->heap_addr + to + done, .rkey = p->heap_rkey}},
        }, *bad;
        pthread_mutex_lock(&p->lock);
        int room = atomic_load_explicit(&p->puts, memory_order_relaxed) < PUT_DEPTH, err = 0;
        if (room) {
            atomic_fetch_add_explicit(&p->puts, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&t->puts_out, 1, memory_order_relaxed);
            err = ibv_post_send(p->qp, &wr, &bad);
            if (err != 0) {
                atomic_fetch_sub_explicit(&p->puts, 1, memory_order_relaxed);
                atomic_fetch_sub_explicit(&t->puts_out, 1, memory_order_relaxed);
            }
        }
        pthread_mutex_unlock(&p->lock);
        if (err != 0) {
            st = grain_fail(GRAIN_ERR_TRANSPORT, "verbs: cannot post a %zu-byte chunk write to rank %u: %s", n, dest,
                            strerror(err));
        } else if (room) {
            done += n;
            grain_backoff_reset(&full);
        } else { /* the progress thread frees room as writes complete */
            grain_backoff_idle_patient(&full, GRAIN_BACKOFF_PATIENCE_NS);
            st = first_error(t);
        }
    }
    return st;
}

/* Writes complete within microseconds: a nap here (the timer slack, 50 us
 * at least) would be most of grain_quiet's wait. */
static grain_status_t verbs_put_wait(grain_transport_t *t)
{
    grain_backoff_t idle = {0};
    grain_status_t st;
    while ((st = first_error(t)) == GRAIN_OK && atomic_load_explicit(&t->puts_out, memory_order_acquire) != 0)
        grain_backoff_idle_patient(&idle, GRAIN_BACKOFF_PATIENCE_NS);
    return st;
}

static void verbs_close(grain_transport_t *t)
{
    if (t->running) {
        /* The runtime's sends were handed back when copied: their writes,
         * and credit returns, finish before the peers tear down. */
        grain_backoff_t idle = {0};
        for (int busy = 1; busy && first_error(t) == GRAIN_OK;) {
            pthread_mutex_lock(&t->pool.lock);
            busy = t->pool.n_free != t->pool.n || atomic_load(&t->pending) != 0 || atomic_load(&t->puts_out) != 0;
            pthread_mutex_unlock(&t->pool.lock);
            for (int p = 0; !busy && p < t->n_pes; p++)
                busy = p != t->my_pe && atomic_load_explicit(&t->peers[p].credit_in_flight, memory_order_acquire);
            grain_backoff_idle(&idle);
        }
        /* No peer writes after the barrier. */
        grain_coll_t barrier = {.kind = GRAIN_COLL_BARRIER};
        grain_transport_mpi.collective(t->mpi, &barrier);
        atomic_store_explicit(&t->stop, 1, memory_order_release);
        pthread_join(t->thread, NULL);
        if (t->n_lent > 0) /* no receive thread may read freed rings */
            t->handlers.settle(t->handlers.arg, 1);
    }
    for (int p = 0; t->peers != NULL && p < t->n_pes; p++) {
        if (t->peers[p].qp != NULL)
            ibv_destroy_qp(t->peers[p].qp);
        while (t->peers[p].pending_head != NULL) {
            pending_send_t *s = t->peers[p].pending_head;
            t->peers[p].pending_head = s->next;
            free(s);
        }
        pthread_mutex_destroy(&t->peers[p].lock);
    }
    struct ibv_mr *mrs[] = {t->rings_mr, t->credit_in_mr, t->credit_out_mr, t->send_mr, t->heap_mr};
    for (size_t i = 0; i < sizeof mrs / sizeof mrs[0]; i++)
        if (mrs[i] != NULL)
            ibv_dereg_mr(mrs[i]);
    if (t->cq != NULL)
        ibv_destroy_cq(t->cq);
    if (t->pd != NULL)
        ibv_dealloc_pd(t->pd);
    if (t->ctx != NULL)
        ibv_close_device(t->ctx);
    grain_verbs_pool_destroy(&t->pool);
    free(t->peers);
    free(t->lent);
    free(t->rings);
    free((void *)t->credit_in);
    free(t->credit_out);
    free(t->send_memory);
    if (t->mpi != NULL)
        grain_transport_mpi.close(t->mpi);
    pthread_mutex_destroy(&t->error_lock);
    free(t);
}

const grain_transport_ops_t grain_transport_verbs = {
    .size = sizeof(grain_transport_ops_t),
    .name = "verbs",
    .open = verbs_open,
    .start = verbs_start,
    .send = verbs_send,
    .collective = verbs_collective,
    .close = verbs_close,
    .uses_thread = 1,
    .receives_per_peer = 1,
    .register_heap = verbs_register_heap,
    .put = verbs_put,
    .put_wait = verbs_put_wait,
    .ep_isend = verbs_ep_isend,
    .ep_irecv = verbs_ep_irecv,
    .ep_test = verbs_ep_test,
    .ep_cancel = verbs_ep_cancel,
    .ep_tags = verbs_ep_tags,
};
