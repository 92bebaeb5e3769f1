/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mailbox's device memory.  A message between endpoints of one rank
 * whose receive is not posted yet must leave the sender's memory at once (a
 * send is done when it returns).  Copied to the host, a large one crossed
 * the host link twice and was copied twice more between pinned and
 * pageable memory: on four H100s the hand-written scheduler benchmarks ran
 * 5-30x slower on two or four endpoints than on one, where a gigabyte went
 * that way.  Kept on the sender's own device instead, it costs one copy
 * there and one device to device when the receive lands it.
 *
 * A message between ranks passes through host memory on both sides.  In a
 * fresh malloc each, a 64 MiB one was copied through the memory's pinned
 * shadow into pages the copy faulted in; a pinned stage takes it straight
 * from the device (two ranks on one H100: 64 MiB messages at 0.36-0.41
 * GB/s before, 3.2-3.8 after, with the yielding wait of ep_p2p.c).
 *
 * Each endpoint keeps the stages it allocated in a pool of each kind and
 * reuses them, so that a loop of sends allocates once: allocating device
 * or pinned memory takes the driver, and freeing device memory (cudaFree)
 * waits for the whole device.  GRAIN_EP_STAGING bounds each pool; a message
 * that finds no room, or no memory, takes malloc'ed host memory as before.
 */
#include <stdlib.h>

#include "runtime/endpoints/endpoint.h"
#include "runtime/grain_impl.h"
#include "services/log.h"

static void stages_free(grain_cmdq_t *q, const grain_ep_pool_t *p, grain_ep_stage_t *s)
{
    while (s != NULL) {
        grain_ep_stage_t *next = s->next;
        (p->host ? q->bops->free_shared : q->bops->free_device)(q->backend, s->device);
        free(s);
        s = next;
    }
}

/* Under the lock: the smallest free stage that holds `bytes`, unlinked, or
 * NULL. */
static grain_ep_stage_t *fitting(grain_ep_pool_t *p, size_t bytes)
{
    grain_ep_stage_t **best = NULL;
    for (grain_ep_stage_t **s = &p->free; *s != NULL; s = &(*s)->next)
        if ((*s)->cap >= bytes && (best == NULL || (*s)->cap < (*best)->cap))
            best = s;
    if (best == NULL)
        return NULL;
    grain_ep_stage_t *s = *best;
    *best = s->next;
    return s;
}

grain_ep_stage_t *grain_ep_stage_take(grain_cmdq_t *q, grain_ep_pool_t *p, size_t bytes)
{
    grain_ep_team_t *t = q->team;
    size_t limit = q->grain->config.ep_staging;
    grain_ep_stage_t *drop = NULL;
    pthread_mutex_lock(&t->lock);
    grain_ep_stage_t *s = fitting(p, bytes);
    int room = 0;
    if (s == NULL && bytes <= limit) {
        /* Free stages too small for this message make room for it. */
        while (p->free != NULL && p->bytes + bytes > limit) {
            grain_ep_stage_t *f = p->free;
            p->free = f->next;
            p->bytes -= f->cap;
            f->next = drop;
            drop = f;
        }
        room = p->bytes + bytes <= limit;
        if (room)
            p->bytes += bytes; /* held for the allocation below */
    }
    if (s != NULL || room)
        p->out++;
    pthread_mutex_unlock(&t->lock);
    stages_free(q, p, drop);
    if (s != NULL || !room)
        return s;
    if ((s = calloc(1, sizeof *s)) != NULL &&
        (p->host ? q->bops->alloc_shared : q->bops->alloc_device)(q->backend, bytes, &s->device) == GRAIN_OK) {
        s->pool = p;
        s->cap = bytes;
        return s;
    }
    grain_info("endpoint %d: no %s memory to stage %zu bytes; they take malloc'ed memory", q->id,
               p->host ? "pinned" : "device", bytes);
    free(s);
    pthread_mutex_lock(&t->lock);
    p->bytes -= bytes;
    p->out--;
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

void grain_ep_stage_give(grain_ep_team_t *t, grain_ep_stage_t *s, int locked)
{
    if (!locked)
        pthread_mutex_lock(&t->lock);
    grain_ep_pool_t *p = s->pool;
    s->next = p->free;
    p->free = s;
    p->out--;
    pthread_cond_broadcast(&t->mail_cond); /* its endpoint may wait to close */
    if (!locked)
        pthread_mutex_unlock(&t->lock);
}

/* Frees p's free stages; with `wait`, once none is out.  Returns whether
 * it freed any. */
static int trim(grain_cmdq_t *q, grain_ep_pool_t *p, int wait)
{
    grain_ep_team_t *t = q->team;
    pthread_mutex_lock(&t->lock);
    while (wait && p->out > 0) /* receivers copying out of them */
        pthread_cond_wait(&t->mail_cond, &t->lock);
    grain_ep_stage_t *all = p->free;
    p->free = NULL;
    for (const grain_ep_stage_t *s = all; s != NULL; s = s->next)
        p->bytes -= s->cap;
    pthread_mutex_unlock(&t->lock);
    stages_free(q, p, all);
    return all != NULL;
}

int grain_ep_pools_trim(grain_cmdq_t *q)
{
    int freed = trim(q, &q->pool, 0);
    return trim(q, &q->host_pool, 0) | freed;
}

void grain_ep_pool_close(grain_cmdq_t *q, grain_ep_pool_t *p)
{
    trim(q, p, 1);
}
