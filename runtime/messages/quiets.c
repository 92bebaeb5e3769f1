/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/messages/quiets.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "services/log.h"

typedef struct request {
    struct request *next;
    uint32_t src;
    uint64_t ticket;
} request_t;

struct grain_epoch {
    struct grain_epoch *next; /* the younger one */
    uint64_t unapplied;       /* buffers that joined it and are not applied yet */
    request_t *requests;      /* answered once it and every older epoch are applied */
};

struct grain_quiets {
    grain_wire_replies_t sink;
    pthread_mutex_t lock;
    grain_epoch_t *oldest, *current; /* a list, oldest first; `current` takes arrivals */
    _Atomic unsigned waiting;
};

grain_status_t grain_quiets_create(const grain_wire_replies_t *sink, grain_quiets_t **q_p)
{
    grain_quiets_t *q = calloc(1, sizeof *q);
    grain_epoch_t *e = calloc(1, sizeof *e);
    if (q == NULL || e == NULL) {
        free(q);
        free(e);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the quiet requests' ledger");
    }
    q->sink = *sink;
    q->oldest = q->current = e;
    pthread_mutex_init(&q->lock, NULL);
    *q_p = q;
    return GRAIN_OK;
}

static void free_requests(request_t *r)
{
    while (r != NULL) {
        request_t *next = r->next;
        free(r);
        r = next;
    }
}

void grain_quiets_destroy(grain_quiets_t *q)
{
    if (q == NULL)
        return;
    for (grain_epoch_t *e = q->oldest; e != NULL;) {
        grain_epoch_t *next = e->next;
        free_requests(e->requests);
        free(e);
        e = next;
    }
    pthread_mutex_destroy(&q->lock);
    free(q);
}

/* Under the lock: answers the requests of the oldest epochs while they are
 * applied; the current one stays, for the buffers still to come. */
static void answer_applied(grain_quiets_t *q)
{
    while (q->oldest != q->current && q->oldest->unapplied == 0) {
        grain_epoch_t *e = q->oldest;
        q->oldest = e->next;
        for (request_t *r = e->requests; r != NULL; r = r->next) {
            q->sink.answer(q->sink.arg, r->src, r->ticket);
            atomic_fetch_sub_explicit(&q->waiting, 1, memory_order_relaxed);
        }
        free_requests(e->requests);
        free(e);
    }
}

grain_epoch_t *grain_quiets_arrived(grain_quiets_t *q)
{
    pthread_mutex_lock(&q->lock);
    grain_epoch_t *e = q->current;
    e->unapplied++;
    pthread_mutex_unlock(&q->lock);
    return e;
}

void grain_quiets_applied(grain_quiets_t *q, grain_epoch_t *e)
{
    pthread_mutex_lock(&q->lock);
    e->unapplied--;
    answer_applied(q);
    pthread_mutex_unlock(&q->lock);
}

grain_status_t grain_quiets_request(grain_quiets_t *q, uint32_t src, uint64_t ticket)
{
    request_t *r = malloc(sizeof *r);
    grain_epoch_t *next = calloc(1, sizeof *next);
    if (r == NULL || next == NULL) {
        free(r);
        free(next);
        q->sink.answer(q->sink.arg, src, ticket);
        return grain_fail(GRAIN_ERR_NO_MEMORY,
                          "no memory to hold a quiet request from rank %u: it was answered before the messages "
                          "that arrived before it were applied",
                          src);
    }
    pthread_mutex_lock(&q->lock);
    /* The request closes the current epoch: what arrives from now on is
     * none of its business. */
    grain_epoch_t *e = q->current;
    *r = (request_t){e->requests, src, ticket};
    e->requests = r;
    e->next = next;
    q->current = next;
    atomic_fetch_add_explicit(&q->waiting, 1, memory_order_relaxed);
    answer_applied(q);
    pthread_mutex_unlock(&q->lock);
    return GRAIN_OK;
}

unsigned grain_quiets_waiting(const grain_quiets_t *q)
{
    return atomic_load_explicit(&q->waiting, memory_order_relaxed);
}
