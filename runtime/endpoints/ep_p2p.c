/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two-sided messages between device endpoints (GMH III-B3, III-B4), matched
 * by (source endpoint, tag) in the order sent and the order posted; every
 * message is an event, and the blocking calls start one and wait for it.
 * Between endpoints of one rank a message whose receive is posted already
 * goes straight from the sender's device memory into the receiver's, on
 * the sender's message lane, where its lanes reach that device (backend
 * reach_peer: peer access between GPUs, one GPU, CPU devices): no host
 * byte.  The sender claims the receive under the team's lock and copies
 * outside it; the receiver sees it filled.  Otherwise, or where a message
 * of the mailbox comes first for that receive, it goes through the rank's
 * mailbox: copied at once into device memory of the sender's pool
 * (ep_stage.c; host memory where the lanes do not reach the receiver's
 * device or the pool has no room), onto the receiver's device when the
 * receiver progresses its receives, oldest first.  Either way a send is
 * done when it returns, so its memory may change at once.
 * Between ranks it goes
 * device to a host buffer of its own, through the transport's endpoint
 * channel, host to device; the MPI tag carries both virtual devices and the
 * application's tag, so that MPI's own matching and order serve.  Between
 * ranks of one node with windows (ep_window.c), a large message goes
 * through the sender's window instead, and only its head through the
 * channel.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/endpoints/endpoint.h"
#include "runtime/grain_impl.h"
#include "services/backoff.h"
#include "services/log.h"

struct grain_ep_msg {
    struct grain_ep_msg *next;
    int src, dst, tag;
    size_t len;
    grain_ep_stage_t *stage; /* where the bytes wait on the sender's device; NULL: in data */
    int lost;                /* its sender returned and had no host memory to keep it */
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

void grain_ep_mail_unstage(grain_cmdq_t *q)
{
    grain_ep_team_t *t = q->team;
    pthread_mutex_lock(&t->lock);
    for (struct grain_ep_msg **p = &t->mail; *p != NULL; p = &(*p)->next) {
        struct grain_ep_msg *m = *p;
        if (m->stage == NULL || m->stage->pool != &q->pool)
            continue;
        struct grain_ep_msg *h = malloc(sizeof *h + m->len);
        grain_ep_stage_t *stage = m->stage;
        if (h != NULL)
            *h = *m; /* first: the struct's tail padding may overlap data */
        if (h != NULL && q->bops->copy(q->backend, h->data, stage->device, m->len) == GRAIN_OK) {
            h->stage = NULL;
            *p = h;
            if (t->mail_tail == &m->next)
                t->mail_tail = &h->next;
            free(m);
        } else {
            free(h);
            m->stage = NULL;
            m->lost = 1;
        }
        grain_ep_stage_give(t, stage, 1);
    }
    pthread_mutex_unlock(&t->lock);
    grain_ep_pool_close(q, &q->pool);
}

/* The checks of a message's arguments, on q's thread; the application's
 * tags, and the collectives' where the message is grain's `own`. */
static grain_status_t check(const grain_cmdq_t *q, const char *what, const grain_ep_mem_t *mem, size_t offset,
                            size_t bytes, int peer, int tag, int own, unsigned needs)
{
    grain_status_t st = grain_ep_check_thread(q, what);
    if (st != GRAIN_OK)
        return st;
    if (peer < 0 || peer >= q->count)
        return grain_fail(GRAIN_ERR_INVALID, "%s: endpoint %d; the job has endpoints 0 to %d", what, peer,
                          q->count - 1);
    if ((tag < 0 || tag >= GRAIN_EP_TAGS) && !(own && tag == GRAIN_EP_TAG_COLL))
        return grain_fail(GRAIN_ERR_INVALID, "%s: tag %d; tags are 0 to %d", what, tag, GRAIN_EP_TAGS - 1);
    return grain_ep_mem_check(q, mem, offset, bytes, needs, what);
}

uint64_t grain_ep_channel_tag(unsigned devices, int src, int dst, int tag)
{
    uint64_t D = devices, pair = (uint64_t)(src % (int)D) * D + (uint64_t)(dst % (int)D);
    if (tag < GRAIN_EP_TAGS)
        return pair * GRAIN_EP_TAGS + (uint64_t)tag;
    return D * D * GRAIN_EP_TAGS + (uint64_t)(tag - GRAIN_EP_TAGS) * D * D + pair;
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
                          "endpoint messages between ranks",
                          what, src, dst, g->tops->name);
    uint64_t D = q->devices;
    *mpi_tag = grain_ep_channel_tag(q->devices, src, dst, tag);
    if (*mpi_tag >= tags)
        return grain_fail(GRAIN_ERR_UNSUPPORTED,
                          "%s: %llu endpoints a rank need %llu tags of the %s transport, which has %llu", what,
                          (unsigned long long)D, (unsigned long long)(D * D * GRAIN_EP_TAGS), g->tops->name,
                          (unsigned long long)tags);
    return GRAIN_OK;
}

/* grain_ep_msg_check, with the collectives' tag taken where `own`. */
static grain_status_t msg_check(const grain_cmdq_t *q, const char *what, const grain_ep_mem_t *mem, size_t offset,
                                size_t bytes, int peer, int tag, int recv, int own, uint64_t *mpi_tag)
{
    /* A collective checked its memory's permissions for the whole call: a
     * tree's forwarder sends from memory the call only writes. */
    unsigned needs = own ? 0 : recv ? GRAIN_EP_WRITE : GRAIN_EP_READ;
    grain_status_t st = check(q, what, mem, offset, bytes, peer, tag, own, needs);
    uint64_t unused = 0;
    if (st == GRAIN_OK && peer / (int)q->devices != q->grain->my_pe)
        st = channel(q, what, recv ? peer : q->id, recv ? q->id : peer, tag, mpi_tag != NULL ? mpi_tag : &unused);
    return st;
}

grain_status_t grain_ep_msg_check(const grain_cmdq_t *q, const char *what, const grain_ep_mem_t *mem, size_t offset,
                                  size_t bytes, int peer, int tag, int recv, uint64_t *mpi_tag)
{
    return msg_check(q, what, mem, offset, bytes, peer, tag, recv, 0, mpi_tag);
}

/* Counts a send of `bytes` by its path (GRAIN_EP_COUNT_*_MSGS). */
static void count_send(grain_cmdq_t *q, unsigned path, size_t bytes)
{
    atomic_fetch_add_explicit(&q->grain->ep_counts[path], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&q->grain->ep_counts[path + 1], bytes, memory_order_relaxed);
}


/* Whether this endpoint's lanes copy into the memory of virtual device
 * `vdev` of its rank, asked of the backend once; not while that one is
 * not running (it then posts no receive). */
static int reaches(grain_cmdq_t *q, unsigned vdev)
{
    if (q->reach == NULL || !q->streams_async || q->bops->reach_peer == NULL)
        return 0;
    if (q->reach[vdev] < 0) {
        grain_ep_team_t *t = q->team;
        pthread_mutex_lock(&t->lock); /* the other may not close its backend meanwhile */
        grain_backend_t *b = t->backends[vdev];
        if (b != NULL)
            q->reach[vdev] = q->bops->reach_peer(q->backend, b) == GRAIN_OK;
        pthread_mutex_unlock(&t->lock);
    }
    return q->reach[vdev] > 0;
}

static void unpost(grain_ep_team_t *t, unsigned vdev, grain_ep_event_t *e)
{
    for (grain_ep_event_t **p = &t->posted[vdev]; *p != NULL; p = &(*p)->posted_next)
        if (*p == e) {
            *p = e->posted_next;
            return;
        }
}

/* The oldest receive that endpoint `dst` posted for (src, tag), claimed
 * for a copy straight into it; NULL where a message of the mailbox comes
 * first, none is posted, or it has too little room (the mailbox then
 * carries the message, and the receive refuses it).  Under the lock. */
static grain_ep_event_t *claim_receive(grain_ep_team_t *t, int src, int dst, int tag, size_t bytes)
{
    for (const struct grain_ep_msg *m = t->mail; m != NULL; m = m->next)
        if (m->src == src && m->dst == dst && m->tag == tag)
            return NULL;
    unsigned vdev = (unsigned)dst % t->devices;
    for (grain_ep_event_t *e = t->posted[vdev]; e != NULL; e = e->posted_next)
        if (e->src == src && e->tag == tag) {
            if (e->cap < bytes)
                return NULL;
            unpost(t, vdev, e);
            e->claim = 1;
            return e;
        }
    return NULL;
}

/* Where the backend's memory is the host's, the thread copies: a lane's
 * command and its wait took a 4-byte message between two PoCL endpoints of
 * one rank from 9 to 28-33 us half round trip. */
grain_status_t grain_ep_copy_now(grain_cmdq_t *q, void *dst, const void *src, size_t bytes)
{
    if (q->info.host_copies || !q->streams_async)
        return q->bops->copy(q->backend, dst, src, bytes);
    grain_status_t st = q->bops->copy_async(q->backend, GRAIN_EP_MESSAGE_LANE, dst, src, bytes);
    return st == GRAIN_OK ? q->bops->copy_wait(q->backend, GRAIN_EP_MESSAGE_LANE) : st;
}

/* Copies a send into the receive it claimed and waits for the copy, so
 * that the send, like the mailbox's, is done when it returns. */
static grain_status_t push(grain_cmdq_t *q, const grain_ep_mem_t *mem, size_t offset, size_t bytes,
                           grain_ep_event_t *r)
{
    grain_status_t st = grain_ep_copy_now(q, (char *)r->mem->device + r->offset, (const char *)mem->device + offset,
                                          bytes);
    grain_ep_team_t *t = q->team;
    pthread_mutex_lock(&t->lock);
    r->filled = bytes;
    r->fill_status = st;
    if (st != GRAIN_OK)
        snprintf(r->why, sizeof r->why, "%s", grain_error_message(NULL));
    r->claim = 2;
    pthread_cond_broadcast(&t->mail_cond);
    pthread_mutex_unlock(&t->lock);
    return st;
}

static grain_status_t send_here(grain_cmdq_t *q, const grain_ep_mem_t *mem, size_t offset, size_t bytes, int dest,
                                int tag)
{
    grain_ep_team_t *t = q->team;
    int reach = reaches(q, (unsigned)dest % q->devices);
    if (reach) {
        pthread_mutex_lock(&t->lock);
        grain_ep_event_t *r = claim_receive(t, q->id, dest, tag, bytes);
        pthread_mutex_unlock(&t->lock);
        grain_status_t st = r != NULL ? push(q, mem, offset, bytes, r) : GRAIN_OK;
        if (r != NULL && st == GRAIN_OK)
            count_send(q, GRAIN_EP_COUNT_DEVICE_MSGS, bytes);
        if (r != NULL)
            return st;
    }
    grain_ep_stage_t *stage = reach && bytes > 0 ? grain_ep_stage_take(q, &q->pool, bytes) : NULL;
    struct grain_ep_msg *m = malloc(sizeof *m + (stage != NULL ? 0 : bytes));
    grain_status_t st = m != NULL ? GRAIN_OK
                                  : grain_fail(GRAIN_ERR_NO_MEMORY, "grain_ep_send: no memory for a message of %zu "
                                                                    "bytes", bytes);
    if (st == GRAIN_OK) {
        *m = (struct grain_ep_msg){.src = q->id, .dst = dest, .tag = tag, .len = bytes, .stage = stage};
        st = stage != NULL ? grain_ep_copy_now(q, stage->device, (const char *)mem->device + offset, bytes)
                           : grain_ep_mem_out(q, mem, offset, m->data, bytes);
    }
    if (st != GRAIN_OK) {
        if (stage != NULL)
            grain_ep_stage_give(t, stage, 0);
        free(m);
        return st;
    }
    count_send(q, GRAIN_EP_COUNT_MAILBOX_MSGS, bytes);
    pthread_mutex_lock(&t->lock);
    *t->mail_tail = m;
    t->mail_tail = &m->next;
    pthread_cond_broadcast(&t->mail_cond);
    pthread_mutex_unlock(&t->lock);
    return GRAIN_OK;
}

/* The checks of a message to or from `peer`, then its event, appended to
 * q's; between ranks, the MPI tag too. */
static grain_status_t open_event(grain_cmdq_t *q, const char *what, const grain_ep_mem_t *mem, size_t offset,
                                 size_t bytes, int peer, int tag, int recv, int own, grain_ep_event_t **event_p,
                                 uint64_t *mpi_tag, grain_ep_event_t **e_p)
{
    grain_status_t st = msg_check(q, what, mem, offset, bytes, peer, tag, recv, own, mpi_tag);
    if (st == GRAIN_OK && event_p == NULL)
        st = grain_fail(GRAIN_ERR_INVALID, "%s: nowhere to store the event", what);
    if (st != GRAIN_OK)
        return st;
    int here = peer / (int)q->devices == q->grain->my_pe;
    grain_ep_event_t *e = calloc(1, sizeof *e);
    if (e == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory for an event", what);
    e->recv = recv;
    e->here = here;
    *q->events_tail = e;
    q->events_tail = &e->next;
    *e_p = e;
    return GRAIN_OK;
}

void grain_ep_event_complete(grain_ep_event_t *e, grain_status_t st)
{
    e->done = 1;
    e->status = st;
    if (st != GRAIN_OK)
        snprintf(e->why, sizeof e->why, "%s", grain_error_message(NULL));
}

/* What comes first in a message between ranks of one node with windows:
 * the bytes follow (HEAD_INLINE), or wait at `at` in the sender's window
 * (HEAD_WINDOW), and the message is the head alone.  A whole number of
 * words, so that the bytes after it keep the alignment copies like. */
enum { HEAD_INLINE = 0x676e6931u, HEAD_WINDOW = 0x676e7731u };
typedef struct {
    uint32_t kind, pad;
    uint64_t len, at, spare;
} ep_head_t;
#define HEAD (sizeof(ep_head_t))

/* Host memory for a message between ranks: a pinned stage of the
 * endpoint's pool, which the device copies to and from directly, else
 * malloc'ed memory, which the copies reach through the memory's shadow. */
static grain_status_t there_staging(grain_cmdq_t *q, grain_ep_event_t *e, size_t bytes, const char *what)
{
    if (bytes > 0 && (e->hstage = grain_ep_stage_take(q, &q->host_pool, bytes)) != NULL) {
        e->staging = e->hstage->device;
        return GRAIN_OK;
    }
    if ((e->staging = malloc(bytes > 0 ? bytes : 1)) == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory for %zu bytes", what, bytes);
    return GRAIN_OK;
}

/* A message to another rank: its bytes into the sender's window, or its
 * head (where it has one) and bytes into host memory, then to the
 * transport. */
static grain_status_t send_there(grain_cmdq_t *q, grain_ep_event_t *e, const grain_ep_mem_t *mem, size_t offset,
                                 size_t bytes, int dest, uint64_t mpi_tag, const char *what)
{
    grain_t *g = q->grain;
    const char *from = (const char *)mem->device + offset;
    e->headed = grain_ep_window_headed(q, dest);
    void *block = NULL;
    size_t at = 0;
    int windowed = e->headed && grain_ep_window_take(q, dest, bytes, &block, &at);
    size_t head = e->headed ? HEAD : 0, carried = windowed ? 0 : bytes;
    grain_status_t st = there_staging(q, e, head + carried, what);
    if (st != GRAIN_OK) {
        if (windowed)
            grain_ep_window_give(q, at);
        return st;
    }
    if (e->headed) {
        ep_head_t h = {.kind = windowed ? HEAD_WINDOW : HEAD_INLINE, .len = bytes, .at = at};
        memcpy(e->staging, &h, sizeof h);
    }
    if (windowed)
        st = grain_ep_copy_now(q, block, from, bytes);
    else if (e->hstage != NULL)
        st = q->bops->copy(q->backend, e->staging + head, from, bytes);
    else
        st = grain_ep_mem_out(q, mem, offset, e->staging + head, bytes);
    if (st == GRAIN_OK)
        st = g->tops->ep_isend(g->transport, (uint32_t)(dest / (int)q->devices), mpi_tag, e->staging,
                               head + carried, &e->req);
    if (st != GRAIN_OK) {
        if (windowed)
            grain_ep_window_give(q, at);
        return st;
    }
    q->n_there++;
    count_send(q, windowed ? GRAIN_EP_COUNT_WINDOW_MSGS : GRAIN_EP_COUNT_RANK_MSGS, bytes);
    /* Its FIN frees the block; without one awaited the block stays taken,
     * which costs room, never the message, which has left. */
    if (windowed && grain_ep_window_sent(q, dest) != GRAIN_OK)
        grain_warn("endpoint %d: the FIN of its message to endpoint %d will not be received (%s): %zu bytes of its "
                   "window stay taken",
                   q->id, dest, grain_error_message(NULL), bytes);
    return GRAIN_OK;
}

/* grain_ep_isend, and (`own`) the collectives' sends. */
static grain_status_t isend(grain_cmdq_t *q, const char *what, grain_ep_mem_t *mem, size_t offset, size_t bytes,
                            int dest, int tag, int own, grain_ep_event_t **event_p)
{
    grain_ep_event_t *e = NULL;
    uint64_t mpi_tag = 0;
    grain_status_t st = open_event(q, what, mem, offset, bytes, dest, tag, 0, own, event_p, &mpi_tag, &e);
    if (st != GRAIN_OK)
        return st;
    if (e->here) {
        grain_ep_event_complete(e, send_here(q, mem, offset, bytes, dest, tag));
    } else {
        st = send_there(q, e, mem, offset, bytes, dest, mpi_tag, what);
        if (st != GRAIN_OK)
            grain_ep_event_complete(e, st);
    }
    *event_p = e;
    return GRAIN_OK;
}

grain_status_t grain_ep_isend(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int dest, int tag,
                              grain_ep_event_t **event_p)
{
    return isend(q, "grain_ep_isend", mem, offset, bytes, dest, tag, 0, event_p);
}

grain_status_t grain_ep_coll_isend(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int dest,
                                   grain_ep_event_t **event_p)
{
    return isend(q, "endpoint collective", mem, offset, bytes, dest, GRAIN_EP_TAG_COLL, 1, event_p);
}

/* grain_ep_irecv, and (`own`) the collectives' receives. */
static grain_status_t irecv(grain_cmdq_t *q, const char *what, grain_ep_mem_t *mem, size_t offset, size_t bytes,
                            int src, int tag, int own, size_t *received, grain_ep_event_t **event_p)
{
    grain_ep_event_t *e = NULL;
    uint64_t mpi_tag = 0;
    grain_status_t st = open_event(q, what, mem, offset, bytes, src, tag, 1, own, event_p, &mpi_tag, &e);
    if (st != GRAIN_OK)
        return st;
    e->mem = mem;
    e->offset = offset;
    e->cap = bytes;
    e->received = received;
    e->src = src;
    e->tag = tag;
    if (e->here) {
        grain_ep_team_t *t = q->team;
        pthread_mutex_lock(&t->lock);
        grain_ep_event_t **p = &t->posted[q->vdev];
        while (*p != NULL)
            p = &(*p)->posted_next;
        *p = e;
        pthread_mutex_unlock(&t->lock);
    } else {
        grain_t *g = q->grain;
        e->headed = grain_ep_window_headed(q, src);
        size_t head = e->headed ? HEAD : 0;
        if ((st = there_staging(q, e, head + bytes, what)) != GRAIN_OK)
            grain_ep_event_complete(e, st);
        else if ((st = g->tops->ep_irecv(g->transport, (uint32_t)(src / (int)q->devices), mpi_tag, e->staging,
                                         head + bytes, &e->req)) != GRAIN_OK)
            grain_ep_event_complete(e, st);
        else
            q->n_there++;
    }
    *event_p = e;
    return GRAIN_OK;
}

grain_status_t grain_ep_irecv(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int src, int tag,
                              size_t *received, grain_ep_event_t **event_p)
{
    return irecv(q, "grain_ep_irecv", mem, offset, bytes, src, tag, 0, received, event_p);
}

grain_status_t grain_ep_coll_irecv(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int src,
                                   size_t *received, grain_ep_event_t **event_p)
{
    return irecv(q, "endpoint collective", mem, offset, bytes, src, GRAIN_EP_TAG_COLL, 1, received, event_p);
}

/* The first message from `src` with `tag` for endpoint `dst` in the
 * mailbox, unlinked, or NULL; under the team's lock. */
static struct grain_ep_msg *take_mail(grain_ep_team_t *t, int src, int dst, int tag)
{
    for (struct grain_ep_msg **p = &t->mail; *p != NULL; p = &(*p)->next) {
        struct grain_ep_msg *m = *p;
        if (m->src != src || m->dst != dst || m->tag != tag)
            continue;
        *p = m->next;
        if (t->mail_tail == &m->next)
            t->mail_tail = p;
        return m;
    }
    return NULL;
}

/* The refusal of a message of `len` bytes (0: its length is not known)
 * longer than receive `e`'s room. */
static grain_status_t too_long(const grain_ep_event_t *e, uint64_t len)
{
    if (len == 0)
        return grain_fail(GRAIN_ERR_INVALID, "grain_ep_recv: a message from endpoint %d does not fit the %zu bytes "
                                             "given; it was taken and dropped",
                          e->src, e->cap);
    return grain_fail(GRAIN_ERR_INVALID,
                      "grain_ep_recv: a message of %llu bytes from endpoint %d does not fit the %zu bytes given; it "
                      "was taken and dropped",
                      (unsigned long long)len, e->src, e->cap);
}

/* Lands a message of the mailbox in receive `e`'s memory. */
static void land(grain_cmdq_t *q, grain_ep_event_t *e, struct grain_ep_msg *m)
{
    grain_status_t st = GRAIN_OK;
    if (m->lost)
        st = grain_fail(GRAIN_ERR_NO_MEMORY,
                        "grain_ep_recv: the message of %zu bytes from endpoint %d was lost: that endpoint returned "
                        "before it was received and had no host memory to keep it in",
                        m->len, e->src);
    else if (m->len > e->cap)
        st = too_long(e, m->len);
    else if (m->stage != NULL)
        st = grain_ep_copy_now(q, (char *)e->mem->device + e->offset, m->stage->device, m->len);
    else
        st = grain_ep_mem_in(q, e->mem, e->offset, m->data, m->len);
    if (st == GRAIN_OK && e->received != NULL)
        *e->received = m->len;
    if (m->stage != NULL)
        grain_ep_stage_give(q->team, m->stage, 0);
    free(m);
    grain_ep_event_complete(e, st);
}

/* Gives the mailbox's messages to this endpoint's receives from its own
 * rank, oldest receive first; a receive from an endpoint that returned
 * without sending fails.  With `wait`, sleeps until something changed when
 * nothing did.  Returns whether any receive finished. */
static int progress_here(grain_cmdq_t *q, int wait)
{
    grain_ep_team_t *t = q->team;
    enum { BATCH = 16 };
    grain_ep_event_t *take[BATCH];
    struct grain_ep_msg *got[BATCH];
    int n = 0;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        for (grain_ep_event_t *e = q->events; e != NULL && n < BATCH; e = e->next) {
            if (!e->recv || !e->here || e->done || e->claim == 1) /* 1: a sender copies into it */
                continue;
            struct grain_ep_msg *m = e->claim == 2 ? NULL : take_mail(t, e->src, q->id, e->tag);
            if (e->claim == 2 || m != NULL) {
                take[n] = e;
                got[n++] = m;
                e->done = 1; /* taken: landed below, outside the lock */
            } else if (t->gone[e->src % (int)t->devices]) { /* it sent all it will: the mailbox has it */
                take[n] = e;
                got[n++] = NULL;
                e->done = 1;
            }
            if (e->done && e->claim == 0)
                unpost(t, q->vdev, e);
        }
        if (n > 0 || !wait)
            break;
        pthread_cond_wait(&t->mail_cond, &t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    for (int i = 0; i < n; i++) {
        grain_ep_event_t *e = take[i];
        if (got[i] != NULL) {
            land(q, e, got[i]);
        } else if (e->claim == 2 && e->fill_status == GRAIN_OK) {
            if (e->received != NULL)
                *e->received = e->filled;
            grain_ep_event_complete(e, GRAIN_OK);
        } else if (e->claim == 2) {
            char why[sizeof e->why];
            snprintf(why, sizeof why, "%s", e->why);
            grain_ep_event_complete(e, grain_fail(e->fill_status, "grain_ep_recv: the copy from endpoint %d "
                                                                  "failed: %s", e->src, why));
        } else
            grain_ep_event_complete(take[i], grain_fail(GRAIN_ERR_STATE,
                                                        "grain_ep_recv: endpoint %d returned without sending endpoint "
                                                        "%d a message of tag %d",
                                                        take[i]->src, q->id, take[i]->tag));
    }
    return n > 0;
}

/* A received message's bytes, `len` of them from `src`, into the
 * receive's memory. */
static grain_status_t land_bytes(grain_cmdq_t *q, grain_ep_event_t *e, const unsigned char *src, size_t len)
{
    if (len == 0)
        return GRAIN_OK;
    return e->hstage != NULL ? q->bops->copy(q->backend, (char *)e->mem->device + e->offset, src, len)
                             : grain_ep_mem_in(q, e->mem, e->offset, src, len);
}

/* A received message that begins with its head: the bytes after it, or
 * those in the sender's window (whose block a FIN then frees, whatever
 * became of the copy).  Sets *len to the message's length. */
static grain_status_t land_headed(grain_cmdq_t *q, grain_ep_event_t *e, size_t *len)
{
    ep_head_t h;
    size_t got = *len;
    if (got >= HEAD)
        memcpy(&h, e->staging, sizeof h);
    if (got < HEAD || (h.kind != HEAD_INLINE && h.kind != HEAD_WINDOW) ||
        (h.kind == HEAD_INLINE ? h.len != got - HEAD : got != HEAD))
        return grain_fail(GRAIN_ERR_PEER,
                          "grain_ep_recv: the message of %zu bytes from endpoint %d has no valid head; it and the "
                          "sender's build may differ",
                          got, e->src);
    *len = (size_t)h.len;
    if (h.kind == HEAD_INLINE)
        return land_bytes(q, e, e->staging + HEAD, got - HEAD);
    const void *block = grain_ep_window_source(q, e->src, h.at, h.len);
    grain_status_t st = GRAIN_OK;
    if (block == NULL)
        st = grain_fail(GRAIN_ERR_PEER,
                        "grain_ep_recv: endpoint %d names %llu bytes at %llu of its window, which this endpoint has "
                        "not mapped that far",
                        e->src, (unsigned long long)h.len, (unsigned long long)h.at);
    else if (h.len > e->cap)
        st = too_long(e, h.len);
    else if (h.len > 0)
        st = grain_ep_copy_now(q, (char *)e->mem->device + e->offset, block, (size_t)h.len);
    grain_status_t fst = grain_ep_window_fin(q, e->src, h.at);
    if (fst != GRAIN_OK)
        grain_warn("endpoint %d: the FIN for endpoint %d's block at %llu was not sent (%s): that room of its "
                   "window stays taken",
                   q->id, e->src, (unsigned long long)h.at, grain_error_message(NULL));
    return st;
}

/* One look at a message between ranks. */
static void progress_there(grain_cmdq_t *q, grain_ep_event_t *e)
{
    grain_t *g = q->grain;
    size_t len = 0;
    grain_status_t st = GRAIN_OK;
    if (!g->tops->ep_test(g->transport, e->req, &len, &st))
        return;
    e->req = NULL;
    q->n_there--;
    if (st == GRAIN_OK && e->recv)
        st = e->headed ? land_headed(q, e, &len) : land_bytes(q, e, e->staging, len);
    else if (st == GRAIN_ERR_INVALID && e->recv && e->headed) /* the transport counted the head as room */
        st = too_long(e, 0);
    if (st == GRAIN_OK && e->recv && e->received != NULL)
        *e->received = len;
    grain_ep_event_complete(e, st);
}

void grain_ep_msg_poke(grain_cmdq_t *q, grain_ep_event_t *e)
{
    if (e->here)
        progress_here(q, 0);
    else
        progress_there(q, e);
}

void grain_ep_event_release(grain_cmdq_t *q, grain_ep_event_t *e)
{
    if (e->recv && e->here && !e->done) { /* dropped: no sender may copy into it from now on */
        grain_ep_team_t *t = q->team;
        pthread_mutex_lock(&t->lock);
        while (e->claim == 1)
            pthread_cond_wait(&t->mail_cond, &t->lock);
        if (e->claim == 0)
            unpost(t, q->vdev, e);
        pthread_mutex_unlock(&t->lock);
    }
    grain_ep_cmd_forget(q, e);
    if (e->cmd != NULL) {
        grain_ep_cmd_free(e->cmd);
        q->n_cmds--;
    }
    for (grain_ep_event_t **p = &q->events; *p != NULL; p = &(*p)->next)
        if (*p == e) {
            *p = e->next;
            if (q->events_tail == &e->next)
                q->events_tail = p;
            break;
        }
    if (e->hstage != NULL)
        grain_ep_stage_give(q->team, e->hstage, 0);
    else
        free(e->staging);
    free(e);
}

/* The status an event ends with, its sentence kept; frees it. */
static grain_status_t finish(grain_cmdq_t *q, grain_ep_event_t *e)
{
    grain_status_t st = e->status;
    if (st != GRAIN_OK)
        grain_error_keep(e->why);
    grain_ep_event_release(q, e);
    return st;
}

grain_status_t grain_ep_event_owned(const grain_cmdq_t *q, const grain_ep_event_t *e, const char *what)
{
    grain_status_t st = grain_ep_check_thread(q, what);
    if (st != GRAIN_OK)
        return st;
    for (const grain_ep_event_t *x = q->events; x != NULL; x = x->next)
        if (x == e)
            return GRAIN_OK;
    return grain_fail(GRAIN_ERR_INVALID, "%s: not an event of endpoint %d still waiting", what, q->id);
}

grain_status_t grain_ep_test(grain_cmdq_t *q, grain_ep_event_t *e, int *done)
{
    grain_status_t st = grain_ep_event_owned(q, e, "grain_ep_test");
    if (st != GRAIN_OK || done == NULL)
        return st != GRAIN_OK ? st : grain_fail(GRAIN_ERR_INVALID, "grain_ep_test: nowhere to say whether it is done");
    if (!e->done && e->cmd == NULL)
        grain_ep_msg_poke(q, e);
    grain_ep_streams_progress(q);
    grain_ep_window_progress(q);
    *done = e->done;
    return e->done ? finish(q, e) : GRAIN_OK;
}

/* Between two looks of a wait.  A message between ranks moves only while
 * a thread of each calls into MPI (Open MPI's shared memory has no thread
 * of its own), and a nap between tests lasts 50 us at least (the timer's
 * slack).  So a wait yields, and never naps, while one is in the
 * transport's hands: on two ranks sharing one H100, 64 MiB messages went
 * from 0.52-0.58 to 0.67-0.72 GB/s and dslash from 318-322 to 388-427
 * GFLOP/s (docs/results/multigpu-4xh100-s39/). */
static void between_polls(const grain_cmdq_t *q, grain_backoff_t *b)
{
    if (q->n_there > 0)
        grain_backoff_idle_patient(b, UINT64_MAX);
    else
        grain_backoff_idle(b);
}

grain_status_t grain_ep_wait(grain_cmdq_t *q, grain_ep_event_t *e)
{
    grain_status_t st = grain_ep_event_owned(q, e, "grain_ep_wait");
    if (st != GRAIN_OK)
        return st;
    grain_backoff_t backoff = {0};
    while (!e->done) {
        int pending = grain_ep_streams_progress(q); /* may finish e: a command came after it */
        if (e->done)
            break;
        int sleep = e->cmd == NULL && e->here && pending == 0; /* until the mailbox changes */
        if (e->cmd == NULL)
            e->here ? (void)progress_here(q, sleep) : progress_there(q, e);
        if (!e->done && !sleep)
            between_polls(q, &backoff);
    }
    grain_ep_window_progress(q);
    return finish(q, e);
}

grain_status_t grain_ep_wait_all(grain_cmdq_t *q, grain_ep_event_t *const *events, size_t n)
{
    grain_status_t first = GRAIN_OK;
    char why[1024] = "";
    for (size_t i = 0; i < n; i++) {
        grain_status_t st = grain_ep_wait(q, events[i]);
        if (st != GRAIN_OK && first == GRAIN_OK) {
            first = st;
            snprintf(why, sizeof why, "%s", grain_error_message(NULL));
        }
    }
    if (first != GRAIN_OK)
        grain_error_keep(why);
    return first;
}

grain_status_t grain_ep_send(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int dest, int tag)
{
    grain_ep_event_t *e = NULL;
    grain_status_t st = grain_ep_isend(q, mem, offset, bytes, dest, tag, &e);
    return st == GRAIN_OK ? grain_ep_wait(q, e) : st;
}

grain_status_t grain_ep_recv(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int src, int tag,
                             size_t *received)
{
    grain_ep_event_t *e = NULL;
    grain_status_t st = grain_ep_irecv(q, mem, offset, bytes, src, tag, received, &e);
    return st == GRAIN_OK ? grain_ep_wait(q, e) : st;
}

int grain_ep_events_use(const grain_cmdq_t *q, const grain_ep_mem_t *mem)
{
    for (const grain_ep_event_t *e = q->events; e != NULL; e = e->next)
        if (!e->done && (e->cmd != NULL ? grain_ep_cmd_uses(e->cmd, mem) : e->recv && e->mem == mem))
            return 1;
    return 0;
}

void grain_ep_events_finish(grain_cmdq_t *q)
{
    unsigned messages = 0, commands = 0;
    /* Messages first: a command that came after a dropped receive then
     * fails instead of waiting for it. */
    for (grain_ep_event_t *e = q->events, *next; e != NULL; e = next) {
        next = e->next;
        if (e->cmd != NULL)
            continue;
        messages += !e->inner; /* a command's own is counted with its command */
        if (!e->done && !e->here && !e->recv) {
            grain_backoff_t backoff = {0};
            while (!e->done) { /* a send: its receiver may be waiting for it */
                progress_there(q, e);
                if (!e->done)
                    between_polls(q, &backoff);
            }
        } else if (!e->done && !e->here) {
            q->grain->tops->ep_cancel(q->grain->transport, e->req);
            q->n_there--;
        }
        grain_ep_event_release(q, e);
    }
    grain_backoff_t backoff = {0};
    while (grain_ep_streams_progress(q) > 0)
        grain_backoff_idle(&backoff);
    while (q->events != NULL) {
        commands++;
        grain_ep_event_release(q, q->events);
    }
    if (messages > 0)
        grain_warn("endpoint %d returned with %u message%s it did not wait for: sends waited for, receives dropped",
                   q->id, messages, messages == 1 ? "" : "s");
    if (commands > 0)
        grain_warn("endpoint %d returned with %u command%s it did not wait for: each ran to its end", q->id,
                   commands, commands == 1 ? "" : "s");
}
