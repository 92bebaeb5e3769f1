/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/messages/packer.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "services/backoff.h"
#include "services/bell.h"
#include "services/log.h"

static void release_token(grain_send_token_t *token)
{
    grain_packer_release((grain_outbuf_t *)token); /* the token is the buffer's first member */
}

grain_status_t grain_packer_init(grain_packer_t *p, uint32_t my_pe, uint32_t n_dest,
                                 size_t buf_size, uint32_t per_dest, uint64_t timeout_ns,
                                 _Atomic uint64_t *next_seq, pthread_mutex_t *send_order,
                                 grain_packer_send_fn send, void *send_arg)
{
    memset(p, 0, sizeof *p);
    if (buf_size < sizeof(grain_wire_hdr_t) + GRAIN_WIRE_MAX_MSG || per_dest == 0 || n_dest == 0)
        return grain_fail(GRAIN_ERR_CONFIG,
                          "a per-destination buffer must hold its %zu-byte header and one %u-byte "
                          "message, and each destination needs at least one",
                          sizeof(grain_wire_hdr_t), GRAIN_WIRE_MAX_MSG);
    p->my_pe = my_pe;
    p->n_dest = n_dest;
    p->buf_size = buf_size;
    p->timeout_ns = timeout_ns;
    p->send = send;
    p->send_arg = send_arg;
    size_t n_bufs = (size_t)n_dest * per_dest;
    p->filling = calloc(n_dest, sizeof *p->filling);
    p->free = calloc(n_dest, sizeof *p->free);
    p->next_seq = next_seq;
    p->send_order = send_order;
    p->dest_msgs = calloc(n_dest, sizeof *p->dest_msgs);
    p->dest_bytes = calloc(n_dest, sizeof *p->dest_bytes);
    p->all = calloc(n_bufs, sizeof *p->all);
    p->memory = aligned_alloc(64, n_bufs * ((buf_size + 63) & ~(size_t)63));
    if (!p->filling || !p->free || !p->dest_msgs || !p->dest_bytes || !p->all ||
        !p->memory) {
        grain_packer_destroy(p);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for %zu per-destination buffers of %zu bytes",
                          n_bufs, buf_size);
    }
    for (size_t i = 0; i < n_bufs; i++) {
        grain_outbuf_t *b = &p->all[i];
        b->owner = p;
        b->token.sent = release_token;
        b->dest = (uint32_t)(i / per_dest);
        b->data = p->memory + i * ((buf_size + 63) & ~(size_t)63);
        b->next = p->free[b->dest];
        p->free[b->dest] = b;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->returned, NULL);
    return GRAIN_OK;
}

void grain_packer_destroy(grain_packer_t *p)
{
    if (p->all != NULL) {
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->returned);
    }
    free(p->filling);
    free(p->free);
    free(p->dest_msgs);
    free(p->dest_bytes);
    free(p->all);
    free(p->memory);
    memset(p, 0, sizeof *p);
}

/* Waits (on the transport) until `dest` has a free buffer; NULL once
 * abandoned. */
static grain_outbuf_t *take_free(grain_packer_t *p, uint32_t dest)
{
    pthread_mutex_lock(&p->lock);
    if (p->free[dest] == NULL) {
        p->stats.buffer_waits++;
        uint64_t t0 = grain_now_ns();
        while (p->free[dest] == NULL) {
            if (!grain_wait_returned(&p->returned, &p->lock, p->abandon)) {
                pthread_mutex_unlock(&p->lock);
                return NULL;
            }
        }
        p->stats.wait_ns += grain_now_ns() - t0;
    }
    grain_outbuf_t *b = p->free[dest];
    p->free[dest] = b->next;
    pthread_mutex_unlock(&p->lock);
    b->next = NULL;
    b->count = 0;
    b->used = sizeof(grain_wire_hdr_t);
    return b;
}

static void flush(grain_packer_t *p, uint32_t dest, grain_flush_cause_t cause)
{
    grain_outbuf_t *b = p->filling[dest];
    p->filling[dest] = NULL;
    p->n_filling--;
    if (p->send_order != NULL)
        pthread_mutex_lock(&p->send_order[dest]);
    grain_wire_hdr_t h = {
        .magic = GRAIN_WIRE_MAGIC,
        .src_pe = p->my_pe,
        .count = b->count,
        .bytes = (uint32_t)b->used,
        .seq = atomic_fetch_add_explicit(&p->next_seq[dest], 1, memory_order_relaxed),
    };
    memcpy(b->data, &h, sizeof h);
    p->stats.buffers++;
    p->stats.bytes += b->used;
    p->stats.msgs += b->count;
    p->stats.flushes[cause]++;
    p->dest_msgs[dest] += b->count;
    p->dest_bytes[dest] += b->used;
    uint64_t t0 = grain_now_ns();
    p->send(p->send_arg, b);
    p->stats.send_ns += grain_now_ns() - t0;
    if (p->send_order != NULL)
        pthread_mutex_unlock(&p->send_order[dest]);
}

grain_outbuf_t *grain_packer_open_(grain_packer_t *p, uint32_t dest, uint64_t now_ns)
{
    grain_outbuf_t *b = take_free(p, dest);
    if (b == NULL)
        return NULL;
    b->first_ns = now_ns;
    p->filling[dest] = b;
    p->n_filling++;
    return b;
}

void grain_packer_flush_full_(grain_packer_t *p, uint32_t dest)
{
    flush(p, dest, GRAIN_FLUSH_FULL);
}

void grain_packer_flush_dest(grain_packer_t *p, uint32_t dest, grain_flush_cause_t cause)
{
    if (p->filling[dest] != NULL)
        flush(p, dest, cause);
}

void grain_packer_flush_expired(grain_packer_t *p, uint64_t now_ns)
{
    if (p->n_filling == 0)
        return;
    for (uint32_t d = 0; d < p->n_dest; d++) {
        grain_outbuf_t *b = p->filling[d];
        if (b != NULL && now_ns - b->first_ns >= p->timeout_ns)
            flush(p, d, GRAIN_FLUSH_TIMEOUT);
    }
}

void grain_packer_flush_all(grain_packer_t *p, grain_flush_cause_t cause)
{
    for (uint32_t d = 0; d < p->n_dest && p->n_filling > 0; d++)
        if (p->filling[d] != NULL)
            flush(p, d, cause);
}

int grain_packer_has_room(grain_packer_t *p, uint32_t dest)
{
    if (p->filling[dest] != NULL)
        return 1;
    pthread_mutex_lock(&p->lock);
    int room = p->free[dest] != NULL;
    pthread_mutex_unlock(&p->lock);
    return room;
}

void grain_packer_release(grain_outbuf_t *buf)
{
    grain_packer_t *p = buf->owner;
    pthread_mutex_lock(&p->lock);
    buf->next = p->free[buf->dest];
    p->free[buf->dest] = buf;
    pthread_cond_broadcast(&p->returned);
    pthread_mutex_unlock(&p->lock);
}
