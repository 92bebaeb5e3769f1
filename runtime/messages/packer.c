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
    p->in_flight = calloc(n_dest, sizeof *p->in_flight);
    p->all = calloc(n_bufs, sizeof *p->all);
    size_t stride = (buf_size + GRAIN_RUN_SCRATCH + 63) & ~(size_t)63; /* a run gathers past the end */
    p->memory = aligned_alloc(64, n_bufs * stride);
    if (!p->filling || !p->free || !p->dest_msgs || !p->dest_bytes || !p->in_flight || !p->all || !p->memory) {
        grain_packer_destroy(p);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for %zu per-destination buffers of %zu bytes",
                          n_bufs, buf_size);
    }
    for (size_t i = 0; i < n_bufs; i++) {
        grain_outbuf_t *b = &p->all[i];
        b->owner = p;
        b->token.sent = release_token;
        b->dest = (uint32_t)(i / per_dest);
        b->data = p->memory + i * stride;
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
    free((void *)p->in_flight);
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
    b->run_n = 0;
    b->run_key = GRAIN_RUN_NO_KEY;
    return b;
}

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a run's offsets pair up in words as little-endian");

/* Wire bytes of a run of `n` once it ends; one alone is written as a
 * message, which is shorter. */
static size_t run_bytes(uint32_t cmd, uint32_t values, uint32_t n)
{
    if (n <= 1)
        return n == 1 ? grain_wire_msg_size(cmd) : 0;
    return 8u * grain_run_words(cmd, n, values != GRAIN_VALUES_WIDE);
}

/* The longest run from b->used that leaves room for the largest message
 * after it; at least 1, since that much room is left whenever no run is
 * open. */
static uint32_t run_cap(const grain_packer_t *p, const grain_outbuf_t *b, uint32_t cmd, uint32_t values)
{
    size_t room = p->buf_size - b->used;
    if (room >= GRAIN_RUN_SCRATCH + GRAIN_WIRE_MAX_MSG)
        return GRAIN_RUN_MAX;
    uint32_t n = GRAIN_RUN_MAX;
    while (n > 1 && run_bytes(cmd, values, n) + GRAIN_WIRE_MAX_MSG > room)
        n--;
    return n;
}

static void set_values(grain_outbuf_t *b, uint32_t values)
{
    b->run_values = values;
    b->run_shift = values == GRAIN_VALUES_WIDE ? 3u : 2u;
    b->run_limit = values == GRAIN_VALUES_NARROW ? GRAIN_RUN_NARROW_LIMIT : UINT64_MAX;
}

void grain_outbuf_start_run(grain_packer_t *p, grain_outbuf_t *b, uint32_t cmd, uint64_t hi, uint32_t values)
{
    grain_outbuf_end_run(b);
    b->run = b->data + b->used;
    b->run_key = hi << 32 | cmd;
    set_values(b, values);
    b->run_cap = run_cap(p, b, cmd, values);
}

void grain_outbuf_widen_run(grain_packer_t *p, grain_outbuf_t *b)
{
    uint32_t n = b->run_n, cmd = (uint32_t)b->run_key, cap = run_cap(p, b, cmd, GRAIN_VALUES_WIDE);
    if (n + 1 > cap) {
        grain_outbuf_start_run(p, b, cmd, b->run_key >> 32, GRAIN_VALUES_WIDE);
        return;
    }
    /* From the last down: value i moves from 4i to 8i, over no value
     * still to move. */
    uint8_t *v = b->run + GRAIN_RUN_VALUES_AT;
    for (uint32_t i = n; i-- > 0;) {
        uint32_t x;
        memcpy(&x, v + 4 * i, 4);
        uint64_t y = (uint64_t)(int64_t)(int32_t)x;
        memcpy(v + 8 * i, &y, 8);
    }
    set_values(b, GRAIN_VALUES_WIDE);
    b->run_cap = cap;
}

void grain_outbuf_end_run(grain_outbuf_t *b)
{
    uint32_t n = b->run_n, cmd = (uint32_t)b->run_key, values = b->run_values;
    uint64_t hi = b->run_key >> 32;
    if (n == 0)
        return;
    uint8_t *run = b->run;
    const uint8_t *gathered = run + GRAIN_RUN_VALUES_AT;
    if (n == 1) {
        uint32_t lo, v32;
        uint64_t v;
        memcpy(&lo, run + 8, 4);
        memcpy(&v32, gathered, 4);
        v = (uint64_t)(int64_t)(int32_t)v32;
        if (values == GRAIN_VALUES_WIDE)
            memcpy(&v, gathered, 8);
        b->used += grain_wire_encode(run, GRAIN_HDR(cmd, 0, 0), hi << 32 | lo, v, 0, 0);
    } else {
        uint64_t w0 = GRAIN_RUN_HDR(cmd, n, values != GRAIN_VALUES_WIDE, hi);
        uint32_t pairs = grain_run_pairs(n), zero = 0;
        memcpy(run, &w0, 8);
        if (n % 2 != 0)
            memcpy(run + 8 + 4 * n, &zero, 4);
        /* Values follow the offsets: where they gathered unless the run is short. */
        uint8_t *at = run + 8 + 8 * pairs;
        if (values != GRAIN_VALUES_NONE && at != gathered)
            memmove(at, gathered, (values == GRAIN_VALUES_WIDE ? 8u : 4u) * n);
        if (values != GRAIN_VALUES_NONE && values != GRAIN_VALUES_WIDE && n % 2 != 0)
            memcpy(at + 4 * n, &zero, 4);
        b->used += run_bytes(cmd, values, n);
    }
    b->count += n;
    b->run_n = 0;
    b->run_key = GRAIN_RUN_NO_KEY;
}

static void flush(grain_packer_t *p, uint32_t dest, grain_flush_cause_t cause)
{
    grain_outbuf_t *b = p->filling[dest];
    grain_outbuf_end_run(b);
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
    atomic_fetch_add_explicit(&p->in_flight[dest], 1, memory_order_relaxed);
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

void grain_packer_run_ends_(grain_packer_t *p, grain_outbuf_t *b)
{
    grain_outbuf_end_run(b);
    /* Send as soon as the largest message would no longer fit. */
    if (p->buf_size - b->used < GRAIN_WIRE_MAX_MSG)
        flush(p, b->dest, GRAIN_FLUSH_FULL);
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
        if (b == NULL || now_ns - b->first_ns < p->timeout_ns)
            continue;
        /* While one is in flight, sending a partly filled buffer adds a
         * network message and gains no time: it would wait behind that one.
         * Buffers through MPI between two H100 ranks filled to 0.62 on
         * average with eight aggregators under the plain timeout. */
        if (atomic_load_explicit(&p->in_flight[d], memory_order_relaxed) == 0 ||
            now_ns - b->first_ns >= GRAIN_FLUSH_PATIENCE * p->timeout_ns)
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
    atomic_fetch_sub_explicit(&p->in_flight[buf->dest], 1, memory_order_relaxed);
    pthread_mutex_lock(&p->lock);
    buf->next = p->free[buf->dest];
    p->free[buf->dest] = buf;
    pthread_cond_broadcast(&p->returned);
    pthread_mutex_unlock(&p->lock);
}
