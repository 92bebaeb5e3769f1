/* SPDX-License-Identifier: BSD-3-Clause */
/* The ibverbs transport's protocol state (verbs_proto.h). */
#include "transports/verbs_proto.h"

#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>

#include "services/log.h"

void grain_verbs_credits_init(grain_verbs_credits_t *c, uint32_t slots)
{
    *c = (grain_verbs_credits_t){.slots = slots};
}

uint32_t grain_verbs_credits_available(const grain_verbs_credits_t *c)
{
    return c->slots - (uint32_t)(c->sent - c->consumed);
}

int grain_verbs_credits_take(grain_verbs_credits_t *c, uint32_t *slot_p)
{
    if (grain_verbs_credits_available(c) == 0)
        return 0;
    *slot_p = c->next_slot;
    c->next_slot = c->next_slot + 1 == c->slots ? 0 : c->next_slot + 1;
    c->sent++;
    return 1;
}

grain_status_t grain_verbs_credits_returned(grain_verbs_credits_t *c, uint64_t consumed, uint32_t peer)
{
    /* Within [the last count, the writes so far], round the wrap. */
    if (consumed - c->consumed > c->sent - c->consumed)
        return grain_fail(GRAIN_ERR_TRANSPORT,
                          "verbs: rank %u returned credits for %llu slots consumed, but it had returned %llu "
                          "and this rank has written %llu: the peer broke the credit protocol",
                          peer, (unsigned long long)consumed, (unsigned long long)c->consumed,
                          (unsigned long long)c->sent);
    c->consumed = consumed;
    return GRAIN_OK;
}

void grain_verbs_ring_init(grain_verbs_ring_t *r, uint32_t slots, uint32_t slot_bytes)
{
    *r = (grain_verbs_ring_t){.slots = slots, .slot_bytes = slot_bytes};
}

grain_status_t grain_verbs_ring_arrive(grain_verbs_ring_t *r, uint32_t bytes, uint32_t peer, uint32_t *slot_p)
{
    if (bytes > r->slot_bytes)
        return grain_fail(GRAIN_ERR_TRANSPORT, "verbs: rank %u wrote %u bytes into a %u-byte receive slot", peer,
                          bytes, r->slot_bytes);
    if (r->arrived - r->consumed >= r->slots)
        return grain_fail(GRAIN_ERR_TRANSPORT,
                          "verbs: rank %u wrote into a full receive ring (%u slots, none consumed since): the "
                          "peer sent without credits",
                          peer, r->slots);
    *slot_p = r->next_slot;
    r->next_slot = r->next_slot + 1 == r->slots ? 0 : r->next_slot + 1;
    r->arrived++;
    return GRAIN_OK;
}

void grain_verbs_ring_consume(grain_verbs_ring_t *r)
{
    if (r->consumed != r->arrived)
        r->consumed++;
}

int grain_verbs_ring_should_return(const grain_verbs_ring_t *r, int idle)
{
    uint64_t pending = r->consumed - r->returned, half = r->slots / 2 ? r->slots / 2 : 1;
    return pending >= half || (idle && pending > 0);
}

uint64_t grain_verbs_ring_return(grain_verbs_ring_t *r)
{
    r->returned = r->consumed;
    return r->consumed;
}

grain_status_t grain_verbs_pool_init(grain_verbs_pool_t *p, void *base, size_t buf_bytes, uint32_t n)
{
    memset(p, 0, sizeof *p);
    p->free = malloc((n ? n : 1) * sizeof *p->free);
    if (p->free == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "verbs: no memory for a pool of %u buffers", n);
    p->base = base;
    p->buf_bytes = buf_bytes;
    p->n = p->n_free = n;
    /* Taken from the top: buffer 0 first. */
    for (uint32_t i = 0; i < n; i++)
        p->free[i] = n - 1 - i;
    pthread_mutex_init(&p->lock, NULL);
    return GRAIN_OK;
}

void grain_verbs_pool_destroy(grain_verbs_pool_t *p)
{
    if (p->free == NULL)
        return;
    pthread_mutex_destroy(&p->lock);
    free(p->free);
    p->free = NULL;
}

void *grain_verbs_pool_take(grain_verbs_pool_t *p)
{
    pthread_mutex_lock(&p->lock);
    void *buf = p->n_free > 0 ? p->base + (size_t)p->free[--p->n_free] * p->buf_bytes : NULL;
    pthread_mutex_unlock(&p->lock);
    return buf;
}

grain_status_t grain_verbs_pool_give(grain_verbs_pool_t *p, void *buf)
{
    /* As integers: the pointer may belong to no part of the pool. */
    uintptr_t b = (uintptr_t)buf, base = (uintptr_t)p->base;
    uintptr_t at = b >= base ? b - base : UINTPTR_MAX;
    if (at == UINTPTR_MAX || at % p->buf_bytes != 0 || at / p->buf_bytes >= p->n)
        return grain_fail(GRAIN_ERR_INVALID, "verbs: %p is not a buffer of the send pool", buf);
    uint32_t index = (uint32_t)(at / p->buf_bytes);
    pthread_mutex_lock(&p->lock);
    int twice = 0;
    for (uint32_t i = 0; i < p->n_free && !twice; i++)
        twice = p->free[i] == index;
    if (!twice)
        p->free[p->n_free++] = index;
    pthread_mutex_unlock(&p->lock);
    return twice ? grain_fail(GRAIN_ERR_INVALID, "verbs: send buffer %u given back twice", index) : GRAIN_OK;
}

/* ---- the bootstrap record ------------------------------------------------ */

#define INFO_MAGIC 0x42565247u /* "GRVB" */
#define INFO_VERSION 1u

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) { return get16(p) | (uint32_t)get16(p + 2) << 16; }
static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

/* Byte offsets of the packed record. */
enum {
    AT_MAGIC = 0,
    AT_VERSION = 4,
    AT_PORT = 6,
    AT_QP_NUM = 8,
    AT_PSN = 12,
    AT_LID = 16,
    AT_GID = 20,
    AT_RING_ADDR = 36,
    AT_RING_RKEY = 44,
    AT_CREDIT_ADDR = 48,
    AT_CREDIT_RKEY = 56,
    AT_SLOTS = 60,
    AT_SLOT_BYTES = 64,
    AT_RESERVED = 68,
};

void grain_verbs_info_pack(const grain_verbs_peer_info_t *in, uint8_t out[GRAIN_VERBS_INFO_BYTES])
{
    memset(out, 0, GRAIN_VERBS_INFO_BYTES);
    put32(out + AT_MAGIC, INFO_MAGIC);
    put16(out + AT_VERSION, INFO_VERSION);
    out[AT_PORT] = in->port;
    put32(out + AT_QP_NUM, in->qp_num);
    put32(out + AT_PSN, in->psn);
    put16(out + AT_LID, in->lid);
    memcpy(out + AT_GID, in->gid, sizeof in->gid);
    put64(out + AT_RING_ADDR, in->ring_addr);
    put32(out + AT_RING_RKEY, in->ring_rkey);
    put64(out + AT_CREDIT_ADDR, in->credit_addr);
    put32(out + AT_CREDIT_RKEY, in->credit_rkey);
    put32(out + AT_SLOTS, in->slots);
    put32(out + AT_SLOT_BYTES, in->slot_bytes);
}

grain_status_t grain_verbs_info_unpack(const uint8_t *in, size_t len, uint32_t from, grain_verbs_peer_info_t *info)
{
    const char *bad = NULL;
    if (len != GRAIN_VERBS_INFO_BYTES)
        bad = "its length";
    else if (get32(in + AT_MAGIC) != INFO_MAGIC)
        bad = "its magic (not grain's verbs bootstrap)";
    else if (get16(in + AT_VERSION) != INFO_VERSION)
        bad = "its version (another grain)";
    else if (in[AT_PORT] == 0)
        bad = "the port (0; ports count from 1)";
    else if (get32(in + AT_QP_NUM) > 0xffffffu)
        bad = "the queue pair number (more than 24 bits)";
    else if (get32(in + AT_PSN) > 0xffffffu)
        bad = "the packet sequence number (more than 24 bits)";
    else if (get32(in + AT_SLOTS) == 0 || get32(in + AT_SLOT_BYTES) == 0)
        bad = "the receive ring (no slots, or slots of no bytes)";
    else if (get32(in + AT_RESERVED) != 0)
        bad = "its reserved word (not 0)";
    if (bad != NULL)
        return grain_fail(GRAIN_ERR_TRANSPORT, "verbs: the bootstrap record from rank %u (%zu bytes) is wrong in %s",
                          from, len, bad);
    *info = (grain_verbs_peer_info_t){
        .qp_num = get32(in + AT_QP_NUM),
        .psn = get32(in + AT_PSN),
        .lid = get16(in + AT_LID),
        .port = in[AT_PORT],
        .ring_addr = get64(in + AT_RING_ADDR),
        .ring_rkey = get32(in + AT_RING_RKEY),
        .credit_addr = get64(in + AT_CREDIT_ADDR),
        .credit_rkey = get32(in + AT_CREDIT_RKEY),
        .slots = get32(in + AT_SLOTS),
        .slot_bytes = get32(in + AT_SLOT_BYTES),
    };
    memcpy(info->gid, in + AT_GID, sizeof info->gid);
    return GRAIN_OK;
}

/* ---- completion errors ---------------------------------------------------- */

grain_status_t grain_verbs_wc_error(int wc_status, uint32_t peer, const char *what)
{
    if (wc_status == IBV_WC_SUCCESS)
        return GRAIN_OK;
    const char *hint = "";
    switch (wc_status) {
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
        hint = ": the peer did not answer; is its process alive and the link up?";
        break;
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
        hint = ": the peer refused the write; its ring's key or address is not what it sent at bootstrap";
        break;
    case IBV_WC_WR_FLUSH_ERR:
        hint = ": the queue pair had already failed; the first error names why";
        break;
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_LEN_ERR:
        hint = ": a local buffer was not registered, or too long";
        break;
    }
    return grain_fail(GRAIN_ERR_TRANSPORT, "verbs: %s to rank %u failed with %s (status %d)%s", what, peer,
                      ibv_wc_status_str((enum ibv_wc_status)wc_status), wc_status, hint);
}

/* ---- the heap record ------------------------------------------------------- */

#define HEAP_TAG 0x4748u /* "GH", then the version */
#define HEAP_VERSION 1u

void grain_verbs_heap_words(uint64_t addr, uint32_t rkey, int registered, uint64_t words[2])
{
    words[0] = registered ? addr : 0;
    words[1] = (registered ? rkey : 0) | (uint64_t)(registered != 0) << 32 | (uint64_t)HEAP_VERSION << 40 |
               (uint64_t)HEAP_TAG << 48;
}

grain_status_t grain_verbs_heap_unwords(const uint64_t words[2], uint32_t from, uint64_t *addr_p, uint32_t *rkey_p,
                                        int *registered_p)
{
    uint64_t w = words[1];
    if (w >> 48 != HEAP_TAG || (w >> 40 & 0xff) != HEAP_VERSION || (w >> 33 & 0x7f) != 0)
        return grain_fail(GRAIN_ERR_TRANSPORT,
                          "verbs: rank %u described its heap as 0x%016llx, not a grain heap record of version %u "
                          "(is every rank the same grain?)",
                          from, (unsigned long long)w, HEAP_VERSION);
    *registered_p = (int)(w >> 32 & 1);
    if (!*registered_p && (words[0] != 0 || (uint32_t)w != 0))
        return grain_fail(GRAIN_ERR_TRANSPORT, "verbs: rank %u says its heap is not registered, yet gives its key",
                          from);
    *addr_p = words[0];
    *rkey_p = (uint32_t)w;
    return GRAIN_OK;
}

/* ---- the RoCE GID -------------------------------------------------------- */

static int gid_rank(const struct ibv_gid_entry *e)
{
    static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    const uint8_t *raw = e->gid.raw;
    int ipv4 = memcmp(raw, v4_mapped, sizeof v4_mapped) == 0;
    int link_local = raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
    return (e->gid_type == IBV_GID_TYPE_ROCE_V2) * 4 + ipv4 * 2 + !link_local;
}

int grain_verbs_gid_pick(const struct ibv_gid_entry *entries, size_t n, uint32_t port)
{
    static const uint8_t zero[16];
    int best = -1, best_rank = -1;
    for (size_t i = 0; i < n; i++) {
        const struct ibv_gid_entry *e = &entries[i];
        if (e->port_num != port || memcmp(e->gid.raw, zero, sizeof zero) == 0)
            continue;
        int rank = gid_rank(e);
        if (rank > best_rank || (rank == best_rank && (int)e->gid_index < best)) {
            best = (int)e->gid_index;
            best_rank = rank;
        }
    }
    return best;
}
