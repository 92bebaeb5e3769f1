/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Moving a region's bytes to a destination, whichever agent decided to:
 * a copy where this rank reaches the destination's memory (its host copy,
 * a peer GPU mapped here); a put from heap to heap where the transport
 * writes into the destinations' heaps (RDMA); else pieces through the
 * transport, which the destination's network thread checks and copies into
 * its own copy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/messages/lent.h"
#include "runtime/transfers/region.h"
#include "services/log.h"

static void piece_sent(grain_send_token_t *token)
{
    grain_piece_buf_t *b = (grain_piece_buf_t *)token; /* the token is its first member */
    grain_piece_pool_t *pool = b->pool;
    if (atomic_fetch_sub_explicit(&b->sends, 1, memory_order_acq_rel) != 1)
        return;
    pthread_mutex_lock(&pool->lock);
    b->next = pool->free;
    pool->free = b;
    pthread_cond_signal(&pool->returned);
    pthread_mutex_unlock(&pool->lock);
}

grain_status_t grain_piece_pool_init(grain_piece_pool_t *pool, grain_t *g, unsigned n, size_t size)
{
    memset(pool, 0, sizeof *pool);
    pool->bufs = calloc(n, sizeof *pool->bufs);
    if (pool->bufs == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "region: no memory for %u transfer buffers", n);
    void *memory;
    /* Shared memory is pinned where that matters: device copies into it
     * run at the link's speed, and the transport may send from it. */
    grain_status_t st = g->bops->alloc_shared(g->backend, (size_t)n * size, &memory);
    if (st != GRAIN_OK) {
        free(pool->bufs);
        pool->bufs = NULL;
        return st;
    }
    pool->memory = memory;
    pool->abandon = &g->failed;
    pool->n = n;
    pool->size = size;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->returned, NULL);
    for (unsigned i = 0; i < n; i++) {
        grain_piece_buf_t *b = &pool->bufs[i];
        b->token.sent = piece_sent;
        b->pool = pool;
        b->data = pool->memory + (size_t)i * size;
        b->next = pool->free;
        pool->free = b;
    }
    return GRAIN_OK;
}

/* Every buffer must be back (grain_region_end waited for the sends). */
void grain_piece_pool_destroy(grain_piece_pool_t *pool, grain_t *g)
{
    if (pool->bufs == NULL)
        return;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        unsigned back = 0;
        for (grain_piece_buf_t *b = pool->free; b != NULL; b = b->next)
            back++;
        if (back == pool->n)
            break;
        if (!grain_wait_returned(&pool->returned, &pool->lock, pool->abandon)) {
            /* The transport may still read the missing ones: kept. */
            pthread_mutex_unlock(&pool->lock);
            return;
        }
    }
    pthread_mutex_unlock(&pool->lock);
    g->bops->free_shared(g->backend, pool->memory);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->returned);
    free(pool->bufs);
    pool->bufs = NULL;
}

/* A free buffer; NULL when none is, unless `wait`, and then only once a
 * rank failed. */
static grain_piece_buf_t *piece_take(grain_piece_pool_t *pool, int wait)
{
    pthread_mutex_lock(&pool->lock);
    while (wait && pool->free == NULL && grain_wait_returned(&pool->returned, &pool->lock, pool->abandon)) {
    }
    grain_piece_buf_t *b = pool->free;
    if (b != NULL)
        pool->free = b->next;
    pthread_mutex_unlock(&pool->lock);
    return b;
}

static grain_status_t copy_on_lane(grain_region_t *r, unsigned lane, void *dst, const void *src, uint64_t len)
{
    grain_t *g = r->grain;
    if (g->bops->copy_async != NULL)
        return g->bops->copy_async(g->backend, lane % GRAIN_COPY_LANES, dst, src, (size_t)len);
    return g->bops->copy(g->backend, dst, src, (size_t)len);
}

/* The ranks a piece for `to` goes to: one, or (-1) every unmapped one. */
static const int *dests_of(const grain_region_t *r, const int *to, unsigned *n_p)
{
    *n_p = *to < 0 ? r->n_unmapped : 1;
    return *to < 0 ? r->unmapped : to;
}

/* Sends a staged piece to every rank of dests (none: it goes back to the
 * pool); a send that fails, and those after it, hand it back at once. */
static grain_status_t send_staged(grain_region_t *r, grain_piece_buf_t *b, const int *dests, unsigned n_dests)
{
    grain_t *g = r->grain;
    grain_piece_hdr_t h;
    memcpy(&h, b->data, sizeof h);
    atomic_store_explicit(&b->sends, n_dests ? n_dests : 1u, memory_order_relaxed);
    if (n_dests == 0)
        piece_sent(&b->token);
    grain_status_t st = GRAIN_OK;
    for (unsigned d = 0; d < n_dests; d++) {
        if (st == GRAIN_OK) {
            /* Counted first: once sent, the receiver may count it before we would. */
            atomic_fetch_add_explicit(&g->pieces_to[dests[d]], 1, memory_order_relaxed);
            st = g->tops->send(g->transport, dests[d], b->data, h.bytes, &b->token);
            if (st == GRAIN_OK) {
                atomic_fetch_add_explicit(&r->bytes_sent, h.bytes - sizeof h, memory_order_relaxed);
                continue;
            }
            atomic_fetch_sub_explicit(&g->pieces_to[dests[d]], 1, memory_order_relaxed);
        }
        piece_sent(&b->token);
    }
    return st;
}

grain_status_t grain_region_lane_wait(grain_region_t *r, unsigned lane)
{
    grain_t *g = r->grain;
    grain_staged_t *s = &r->staged[lane % GRAIN_COPY_LANES];
    grain_status_t st = g->bops->copy_wait != NULL ? g->bops->copy_wait(g->backend, lane % GRAIN_COPY_LANES) : GRAIN_OK;
    for (unsigned i = 0; i < s->n; i++) {
        unsigned n_dests;
        const int *dests = dests_of(r, &s->to[i], &n_dests);
        grain_status_t sst = send_staged(r, s->bufs[i], dests, st == GRAIN_OK ? n_dests : 0);
        st = st != GRAIN_OK ? st : sst;
    }
    s->n = 0;
    return st;
}

grain_status_t grain_region_lane_send(grain_region_t *r, unsigned lane)
{
    return r->staged[lane % GRAIN_COPY_LANES].n > 0 ? grain_region_lane_wait(r, lane) : GRAIN_OK;
}

/* [src, src + len) of this rank's copy to offset `at` of the copies of the
 * ranks `to` names, in pieces as large as a receive buffer: each staged
 * once into pinned memory on `lane` (a piece's header names no
 * destination) and sent with the lane's others.  When the lane has staged
 * its share, or the pool is empty, it sends what it staged first. */
static grain_status_t send_pieces(grain_region_t *r, unsigned lane, int to, const char *src, uint64_t at,
                                  uint64_t len)
{
    grain_t *g = r->grain;
    grain_staged_t *s = &r->staged[lane % GRAIN_COPY_LANES];
    size_t room = r->pieces.size - sizeof(grain_piece_hdr_t);
    grain_status_t st = GRAIN_OK;
    for (uint64_t done = 0; st == GRAIN_OK && done < len;) {
        grain_piece_buf_t *b = s->n < GRAIN_STAGED_MAX ? piece_take(&r->pieces, 0) : NULL;
        if (b == NULL) {
            if ((st = grain_region_lane_wait(r, lane)) != GRAIN_OK)
                break;
            if ((b = piece_take(&r->pieces, 1)) == NULL) {
                st = grain_fail(GRAIN_ERR_PEER, "region %u: a rank failed while rank %d sent its chunks", r->id,
                                g->my_pe);
                break;
            }
        }
        size_t n = len - done < room ? (size_t)(len - done) : room;
        grain_piece_hdr_t h = {GRAIN_PIECE_MAGIC, (uint32_t)g->my_pe, r->id, (uint32_t)(sizeof h + n), at + done};
        memcpy(b->data, &h, sizeof h);
        st = copy_on_lane(r, lane, b->data + sizeof h, src + done, n);
        if (st != GRAIN_OK) {
            send_staged(r, b, NULL, 0);
            break;
        }
        s->bufs[s->n] = b;
        s->to[s->n++] = to;
        done += n;
    }
    return st;
}

/* The same bytes from this rank's heap into each destination's copy, which
 * lies at the same heap offset: no staging, and nothing for the
 * destination to do (quiet waits for the writes). */
static grain_status_t put_to(grain_region_t *r, const int *dests, unsigned n_dests, uint64_t start, uint64_t at,
                             uint64_t len)
{
    grain_t *g = r->grain;
    uint64_t base = (uint64_t)(r->data - g->heap);
    grain_status_t st = GRAIN_OK;
    for (unsigned d = 0; st == GRAIN_OK && d < n_dests; d++) {
        st = g->tops->put(g->transport, (uint32_t)dests[d], base + start, base + at, (size_t)len);
        if (st == GRAIN_OK)
            atomic_fetch_add_explicit(&r->bytes_written, len, memory_order_relaxed);
    }
    return st;
}

grain_status_t grain_region_move(grain_region_t *r, unsigned seg_index, uint64_t start, uint64_t len, unsigned lane)
{
    const grain_segment_dev_t *seg = &r->plan.segments[seg_index];
    const char *src = r->data + start;
    uint64_t at = seg->dest_offset + (start - seg->offset);
    /* The inline agent's own stores reached whatever this rank maps. */
    int mapped_done = r->agent == GRAIN_AGENT_INLINE;
    if (seg->dest == GRAIN_DEST_HOST)
        return mapped_done ? GRAIN_OK : copy_on_lane(r, lane, (char *)r->host_copy + at, src, len);
    grain_status_t st = GRAIN_OK;
    uint32_t end = grain_segment_end_pe(seg, (uint32_t)r->grain->n_pes);
    for (uint32_t pe = grain_segment_first_pe(seg); st == GRAIN_OK && !mapped_done && pe < end; pe++)
        if (pe != (uint32_t)r->grain->my_pe && r->peer_maps[pe] != NULL)
            st = copy_on_lane(r, lane, (char *)r->peer_maps[pe] + at, src, len);
    /* The others get the same pieces, staged once. */
    int to = seg->dest == GRAIN_DEST_PEERS ? -1 : seg->dest;
    unsigned n_remote;
    const int *remote = dests_of(r, &to, &n_remote);
    if (to >= 0 && r->peer_maps[to] != NULL)
        n_remote = 0;
    if (st == GRAIN_OK && n_remote > 0)
        st = r->placement == PLACE_HEAP ? put_to(r, remote, n_remote, start, at, len)
                                        : send_pieces(r, lane, to, src, at, len);
    return st;
}

static grain_status_t check_piece(grain_t *g, uint32_t src, const void *data, size_t len, grain_piece_hdr_t *h,
                                  grain_region_t **r_p, char *why, size_t why_size)
{
    if (len < sizeof *h) {
        snprintf(why, why_size, "a %zu-byte chunk piece from rank %u is shorter than its header", len, src);
        return GRAIN_ERR_BAD_MESSAGE;
    }
    memcpy(h, data, sizeof *h);
    if (grain_wire_check_origin("chunk piece", src, len, h->src_pe, h->bytes, why, why_size) != 0)
        return GRAIN_ERR_BAD_MESSAGE;
    grain_region_t *r = h->region < GRAIN_MAX_REGIONS
                            ? atomic_load_explicit(&g->regions[h->region], memory_order_acquire)
                            : NULL;
    if (r == NULL) {
        snprintf(why, why_size, "a chunk piece from rank %u is for region %u, which does not exist here", src,
                 h->region);
        return GRAIN_ERR_BAD_MESSAGE;
    }
    uint64_t n = len - sizeof *h;
    if (h->offset > r->size || n > r->size - h->offset) {
        snprintf(why, why_size,
                 "a chunk piece from rank %u writes bytes %llu..%llu of region %u, which has %zu bytes", src,
                 (unsigned long long)h->offset, (unsigned long long)(h->offset + n), h->region, r->size);
        return GRAIN_ERR_BAD_OFFSET;
    }
    *r_p = r;
    return GRAIN_OK;
}

/* Counted even when rejected, so that quiet reports the error instead of
 * waiting for a piece that will never apply; and only once its bytes are
 * in place, for grain_region_end waits for the count. */
void grain_region_landed(grain_t *g, grain_region_t *r, uint32_t src, uint64_t bytes, grain_status_t st,
                         const char *why)
{
    if (st == GRAIN_OK)
        atomic_fetch_add_explicit(&r->bytes_received, bytes, memory_order_relaxed);
    else
        grain_async_error(g, st, why);
    atomic_fetch_add_explicit(&g->pieces_from[src], 1, memory_order_release);
}

int grain_region_receive(grain_t *g, uint32_t src, const void *data, size_t len)
{
    grain_piece_hdr_t h;
    grain_region_t *r = NULL;
    char why[256];
    grain_status_t st = check_piece(g, src, data, len, &h, &r, why, sizeof why);
    size_t n = st == GRAIN_OK ? len - sizeof h : 0;
    int started = 0;
    if (st == GRAIN_OK && g->bops->copy_async != NULL) {
        grain_lent_make_room(g);
        uint64_t mark = 0;
        st = g->bops->copy_async(g->backend, GRAIN_RECV_LANE, r->data + h.offset, (const char *)data + sizeof h, n);
        started = st == GRAIN_OK;
        if (st == GRAIN_OK)
            st = g->bops->copy_mark(g->backend, GRAIN_RECV_LANE, &mark);
        if (st == GRAIN_OK) {
            grain_lent_add(g, &(grain_lent_t){.region = r, .src = src, .bytes = n, .mark = mark});
            return 1;
        }
    } else if (st == GRAIN_OK) {
        st = g->bops->copy(g->backend, r->data + h.offset, (const char *)data + sizeof h, n);
    }
    if (st != GRAIN_OK && r != NULL)
        snprintf(why, sizeof why, "%s", grain_error_message(g));
    /* A copy that started unmarked still reads `data`: wait for it. */
    if (started)
        grain_lent_finish(g);
    grain_region_landed(g, r, src, n, st, why);
    return 0;
}
