/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/messages/replier.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/messages/packer.h"
#include "services/log.h"

/* GRAIN_CMD_REPLY, GRAIN_CMD_REPLY_AFTER (quiet answers) or GRAIN_CMD_QUIET
 * (the host's request), whose first wire word holds the ticket's slot and
 * generation above the command; or a get's word, a PUT32 or PUT64 to a heap
 * offset. */
typedef struct kept_reply {
    uint32_t cmd, dest;
    uint64_t first, value; /* what the first wire word holds above the command */
} kept_reply_t;

struct grain_replier {
    grain_t *grain;
    pthread_mutex_t lock;
    grain_packer_t packer;
    kept_reply_t *kept; /* replies that found no buffer, oldest first */
    size_t n_kept, cap_kept;
    atomic_int pending; /* replies added since the last flush, or kept */
    uint8_t *sent_data; /* per rank: a get's word went to it, so quiet answers wait there (REPLY_AFTER) */
};

static void send_buffer(void *arg, grain_outbuf_t *buf)
{
    grain_replier_t *r = arg;
    grain_t *g = r->grain;
    grain_status_t st = g->tops->send(g->transport, buf->dest, buf->data, buf->used, &buf->token);
    if (st != GRAIN_OK) {
        r->packer.dest_msgs[buf->dest] -= buf->count; /* not sent: quiet must not wait for them */
        if (st != GRAIN_ERR_PEER)
            grain_async_error(g, st, grain_error_message(g));
        grain_packer_release(buf);
    }
}

grain_status_t grain_replier_create(grain_t *g, grain_replier_t **replier_p)
{
    grain_replier_t *r = calloc(1, sizeof *r);
    uint8_t *sent_data = calloc((size_t)g->n_pes, 1);
    if (r == NULL || sent_data == NULL) {
        free(r);
        free(sent_data);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the reply sender");
    }
    r->grain = g;
    r->sent_data = sent_data;
    grain_status_t st = grain_packer_init(&r->packer, (uint32_t)g->my_pe, (uint32_t)g->n_pes, g->config.buffer_size,
                                          (uint32_t)g->config.buffers_per_dest, UINT64_MAX, g->next_seq,
                                          g->send_order, send_buffer, r);
    if (st != GRAIN_OK) {
        free(sent_data);
        free(r);
        return st;
    }
    r->packer.abandon = &g->failed;
    pthread_mutex_init(&r->lock, NULL);
    *replier_p = r;
    return GRAIN_OK;
}

void grain_replier_destroy(grain_replier_t *r)
{
    if (r == NULL)
        return;
    if (r->n_kept > 0)
        grain_warn("%zu replies to other ranks' fetches were never sent", r->n_kept);
    grain_packer_destroy(&r->packer);
    pthread_mutex_destroy(&r->lock);
    free(r->kept);
    free(r->sent_data);
    free(r);
}

/* Under the lock: packs one message if its destination has a buffer to take
 * it. */
static int pack(grain_replier_t *r, kept_reply_t m)
{
    if (!grain_packer_has_room(&r->packer, m.dest))
        return 0;
    grain_status_t st = grain_packer_append(&r->packer, m.dest, GRAIN_HDR(m.cmd, 0, m.dest), m.first, m.value, 0, 0, 0);
    if (st != GRAIN_OK && st != GRAIN_ERR_PEER)
        grain_async_error(r->grain, st, "a reply or quiet request the wire cannot carry");
    return 1;
}

/* Messages go in the order they were added: one that finds no buffer is
 * kept, and so is every later one until it has gone. */
static void add(grain_replier_t *r, kept_reply_t m)
{
    pthread_mutex_lock(&r->lock);
    /* Decided in the order messages are added, which is the order they
     * leave in: an answer after a get's word waits for it at the requester.
     * Once a rank has had one it keeps waiting (two work-groups' answers
     * may straddle the word, and the later one must not overtake it). */
    if (m.cmd == GRAIN_CMD_PUT32 || m.cmd == GRAIN_CMD_PUT64)
        r->sent_data[m.dest] = 1;
    else if (m.cmd == GRAIN_CMD_REPLY_AFTER && !r->sent_data[m.dest])
        m.cmd = GRAIN_CMD_REPLY;
    if (r->n_kept > 0 || !pack(r, m)) {
        if (r->n_kept == r->cap_kept) {
            size_t cap = r->cap_kept ? 2 * r->cap_kept : 64;
            kept_reply_t *k = realloc(r->kept, cap * sizeof *k);
            if (k == NULL) {
                pthread_mutex_unlock(&r->lock);
                grain_async_error(r->grain, GRAIN_ERR_NO_MEMORY, "no memory to keep a reply until a buffer frees");
                return;
            }
            r->kept = k;
            r->cap_kept = cap;
        }
        r->kept[r->n_kept++] = m;
    }
    atomic_store_explicit(&r->pending, 1, memory_order_relaxed);
    pthread_mutex_unlock(&r->lock);
}

/* A ticket's slot and generation travel where an offset does
 * (grain_wire_encode). */
void grain_replier_add(grain_replier_t *r, uint32_t dest, uint64_t ticket, uint64_t value)
{
    add(r, (kept_reply_t){GRAIN_CMD_REPLY, dest, ticket >> 8, value});
}

void grain_replier_put(grain_replier_t *r, uint32_t dest, uint32_t cmd, uint64_t offset, uint64_t value)
{
    add(r, (kept_reply_t){cmd, dest, offset, value});
}

void grain_replier_answer(grain_replier_t *r, uint32_t dest, uint64_t ticket)
{
    add(r, (kept_reply_t){GRAIN_CMD_REPLY_AFTER, dest, ticket >> 8, 0});
}

void grain_replier_ask_quiet(grain_replier_t *r, uint32_t dest, uint64_t ticket)
{
    add(r, (kept_reply_t){GRAIN_CMD_QUIET, dest, ticket >> 8, 0});
}

void grain_replier_flush(grain_replier_t *r)
{
    if (!atomic_load_explicit(&r->pending, memory_order_relaxed) || pthread_mutex_trylock(&r->lock) != 0)
        return; /* the thread that holds it flushes */
    size_t done = 0;
    while (done < r->n_kept && pack(r, r->kept[done]))
        done++;
    if (done > 0) {
        r->n_kept -= done;
        memmove(r->kept, r->kept + done, r->n_kept * sizeof *r->kept);
    }
    grain_packer_flush_all(&r->packer, GRAIN_FLUSH_QUIET);
    atomic_store_explicit(&r->pending, r->n_kept > 0, memory_order_relaxed);
    pthread_mutex_unlock(&r->lock);
}

uint64_t grain_replier_sent(grain_replier_t *r, uint32_t dest)
{
    pthread_mutex_lock(&r->lock);
    uint64_t n = r->packer.dest_msgs[dest];
    pthread_mutex_unlock(&r->lock);
    return n;
}
