/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two-sided messages between device endpoints (GMH III-B4), blocking, matched
 * by (source endpoint, tag) in the order sent.  Between endpoints of one
 * rank a message goes through the rank's mailbox: copied off the sender's
 * device at once, onto the receiver's when it asks.  Between ranks it goes
 * device to host (the memory's shadow), through the transport's endpoint
 * channel, host to device; the MPI tag carries both virtual devices and the
 * application's tag, so that MPI's own matching and order serve.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/endpoints/endpoint.h"
#include "runtime/grain_impl.h"
#include "services/log.h"

struct grain_ep_msg {
    struct grain_ep_msg *next;
    int src, dst, tag;
    size_t len;
    unsigned char data[];
};

unsigned grain_ep_mail_drop(grain_ep_team_t *t)
{
    unsigned n = 0;
    while (t->mail != NULL) {
        struct grain_ep_msg *m = t->mail;
        t->mail = m->next;
        free(m);
        n++;
    }
    t->mail_tail = &t->mail;
    return n;
}

/* The checks of a message's arguments, on q's thread. */
static grain_status_t check(const grain_cmdq_t *q, const char *what, const grain_ep_mem_t *mem, size_t offset,
                            size_t bytes, int peer, int tag, unsigned needs)
{
    grain_status_t st = grain_ep_check_thread(q, what);
    if (st != GRAIN_OK)
        return st;
    if (peer < 0 || peer >= q->count)
        return grain_fail(GRAIN_ERR_INVALID, "%s: endpoint %d; the job has endpoints 0 to %d", what, peer,
                          q->count - 1);
    if (tag < 0 || tag >= GRAIN_EP_TAGS)
        return grain_fail(GRAIN_ERR_INVALID, "%s: tag %d; tags are 0 to %d", what, tag, GRAIN_EP_TAGS - 1);
    return grain_ep_mem_check(q, mem, offset, bytes, needs, what);
}

/* The transport's endpoint channel and the MPI tag of (source, destination,
 * tag) on it. */
static grain_status_t channel(const grain_cmdq_t *q, const char *what, int src, int dst, int tag, uint64_t *mpi_tag)
{
    const grain_t *g = q->grain;
    uint64_t tags = g->tops->ep_tags != NULL ? g->tops->ep_tags(g->transport) : 0;
    if (tags == 0)
        return grain_fail(GRAIN_ERR_UNSUPPORTED,
                          "%s: endpoint %d and endpoint %d are on different ranks, and the %s transport carries no "
                          "endpoint messages between ranks%s",
                          what, src, dst, g->tops->name,
                          strcmp(g->tops->name, "mpi") == 0 ? " without MPI_THREAD_MULTIPLE (GRAIN_MPI_THREADS)" : "");
    uint64_t D = q->devices, pair = (uint64_t)(src % (int)D) * D + (uint64_t)(dst % (int)D);
    *mpi_tag = pair * GRAIN_EP_TAGS + (uint64_t)tag;
    if (*mpi_tag >= tags)
        return grain_fail(GRAIN_ERR_UNSUPPORTED,
                          "%s: %llu endpoints a rank need %llu tags of the %s transport, which has %llu", what,
                          (unsigned long long)D, (unsigned long long)(D * D * GRAIN_EP_TAGS), g->tops->name,
                          (unsigned long long)tags);
    return GRAIN_OK;
}

static grain_status_t send_here(grain_cmdq_t *q, const grain_ep_mem_t *mem, size_t offset, size_t bytes, int dest,
                                int tag)
{
    struct grain_ep_msg *m = malloc(sizeof *m + bytes);
    if (m == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "grain_ep_send: no memory for a message of %zu bytes", bytes);
    *m = (struct grain_ep_msg){.src = q->id, .dst = dest, .tag = tag, .len = bytes};
    grain_status_t st =
        bytes > 0 ? q->bops->copy(q->backend, m->data, (const unsigned char *)mem->device + offset, bytes) : GRAIN_OK;
    if (st != GRAIN_OK) {
        free(m);
        return st;
    }
    grain_ep_team_t *t = q->team;
    pthread_mutex_lock(&t->lock);
    *t->mail_tail = m;
    t->mail_tail = &m->next;
    pthread_cond_broadcast(&t->mail_cond);
    pthread_mutex_unlock(&t->lock);
    return GRAIN_OK;
}

grain_status_t grain_ep_send(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int dest, int tag)
{
    const char *what = "grain_ep_send";
    grain_status_t st = check(q, what, mem, offset, bytes, dest, tag, GRAIN_EP_READ);
    if (st != GRAIN_OK)
        return st;
    if (dest / (int)q->devices == q->grain->my_pe)
        return send_here(q, mem, offset, bytes, dest, tag);
    uint64_t mpi_tag = 0;
    if ((st = channel(q, what, q->id, dest, tag, &mpi_tag)) != GRAIN_OK)
        return st;
    void *own = NULL;
    unsigned char *host = grain_ep_mem_staging(mem, offset, bytes, &own);
    if (host == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory for %zu bytes", what, bytes);
    if (bytes > 0)
        st = q->bops->copy(q->backend, host, (unsigned char *)mem->device + offset, bytes);
    grain_t *g = q->grain;
    if (st == GRAIN_OK)
        st = g->tops->ep_send(g->transport, (uint32_t)(dest / (int)q->devices), mpi_tag, host, bytes);
    free(own);
    return st;
}

/* The first message from `src` with `tag` for q in the rank's mailbox,
 * unlinked; NULL once `src` has returned without one. */
static struct grain_ep_msg *take_mail(grain_cmdq_t *q, int src, int tag)
{
    grain_ep_team_t *t = q->team;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        for (struct grain_ep_msg **p = &t->mail; *p != NULL; p = &(*p)->next) {
            struct grain_ep_msg *m = *p;
            if (m->src != src || m->dst != q->id || m->tag != tag)
                continue;
            *p = m->next;
            if (t->mail_tail == &m->next)
                t->mail_tail = p;
            pthread_mutex_unlock(&t->lock);
            return m;
        }
        if (t->gone[src % (int)t->devices])
            break;
        pthread_cond_wait(&t->mail_cond, &t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

static grain_status_t recv_here(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int src, int tag,
                                size_t *received)
{
    const char *what = "grain_ep_recv";
    struct grain_ep_msg *m = take_mail(q, src, tag);
    if (m == NULL)
        return grain_fail(GRAIN_ERR_STATE, "%s: endpoint %d returned without sending endpoint %d a message of tag %d",
                          what, src, q->id, tag);
    grain_status_t st = GRAIN_OK;
    if (m->len > bytes)
        st = grain_fail(GRAIN_ERR_INVALID,
                        "%s: a message of %zu bytes from endpoint %d does not fit the %zu bytes given; it was taken "
                        "and dropped",
                        what, m->len, src, bytes);
    else if (m->len > 0)
        st = q->bops->copy(q->backend, (unsigned char *)mem->device + offset, m->data, m->len);
    if (st == GRAIN_OK)
        *received = m->len;
    free(m);
    return st;
}

grain_status_t grain_ep_recv(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int src, int tag,
                             size_t *received)
{
    const char *what = "grain_ep_recv";
    grain_status_t st = check(q, what, mem, offset, bytes, src, tag, GRAIN_EP_WRITE);
    if (st != GRAIN_OK)
        return st;
    size_t got = 0;
    if (src / (int)q->devices == q->grain->my_pe) {
        st = recv_here(q, mem, offset, bytes, src, tag, &got);
    } else {
        uint64_t mpi_tag = 0;
        if ((st = channel(q, what, src, q->id, tag, &mpi_tag)) != GRAIN_OK)
            return st;
        void *own = NULL;
        unsigned char *host = grain_ep_mem_staging(mem, offset, bytes, &own);
        if (host == NULL)
            return grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory for %zu bytes", what, bytes);
        grain_t *g = q->grain;
        st = g->tops->ep_recv(g->transport, (uint32_t)(src / (int)q->devices), mpi_tag, host, bytes, &got);
        if (st == GRAIN_OK && got > 0)
            st = q->bops->copy(q->backend, (unsigned char *)mem->device + offset, host, got);
        free(own);
    }
    if (st == GRAIN_OK && received != NULL)
        *received = got;
    return st;
}
