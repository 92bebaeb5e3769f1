/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Windows: messages between endpoints of ranks that share a node, device to
 * device (GMH III-B4's "same node, peer memory").  Through the host such a
 * message is copied to pinned memory, through MPI's shared memory and onto
 * the other device: two ranks of four H100s moved 64 MiB at 3.9 GB/s that
 * way, where the devices' link carries a hundred times that.
 *
 * Each endpoint allocates a window of GRAIN_EP_WINDOW bytes of its own
 * device memory as peer memory (the backend's alloc_peer: CUDA or HIP IPC,
 * shared memory under OpenCL), and maps the windows of the endpoints of the
 * node's other ranks.  A message of GRAIN_EP_WINDOW_MIN bytes or more to
 * one of them is copied into a block of the sender's window (one copy on its
 * own device), and only a head naming the block travels through the
 * transport, in the message's place, so that MPI's matching and order serve
 * as for every other message.  The receiver copies the block into the
 * receive's memory (device to device, over the link between the devices)
 * and sends a FIN with the block's offset; the sender reuses the block once
 * the FIN is back.  The send is done once the block holds the bytes, as one
 * through the host is done once they are in the transport's hands.  A
 * message that finds no room, or a receiver that could not map the window,
 * goes through the host as before, with a head too: between two such ranks
 * every message carries one, so a receive never has to guess.
 *
 * Windows are allocated and mapped in grain_ep_run before the application's
 * function (two allgathers among the endpoints: the handles, then who
 * mapped whose), sealed once every endpoint mapped what it could, so that
 * nothing outlives a crash, and freed after every rank's endpoints returned:
 * each rank then waits for the FINs the others sent it (their count comes
 * in one all-to-all, so a FIN still on its way is never mistaken for one
 * that will never come: a message nobody received has none), unmaps the
 * others' windows, and meets them before freeing its own.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/endpoints/endpoint.h"
#include "runtime/grain_impl.h"
#include "runtime/node.h"
#include "services/backoff.h"
#include "services/log.h"

/* What an endpoint says of its window in the first allgather. */
typedef struct {
    unsigned char handle[GRAIN_PEER_HANDLE_BYTES];
    uint64_t size; /* 0: it has none */
} offer_t;

/* Blocks start at this alignment: the copies' fast paths want it. */
#define BLOCK_ALIGN 256u

/* The most a CPU device (PoCL) offers: there a window saves no copy (the
 * host's MPI copies as much), and filling the shared memory of a larger one
 * at every grain_ep_run took ep_run's tests from 35 to 85 s (256M); enough
 * to carry messages through the path. */
#define CPU_WINDOW_MAX (4u << 20)

static uint64_t fin_tag(unsigned devices, int src, int dst)
{
    return grain_ep_channel_tag(devices, src, dst, GRAIN_EP_TAG_FIN);
}

/* Whether windows can serve at all: the same answer on every rank, since
 * it depends only on the configuration, the job and the build. */
static int wanted(const grain_cmdq_t *q)
{
    const grain_t *g = q->grain;
    uint64_t tags = g->tops->ep_tags != NULL ? g->tops->ep_tags(g->transport) : 0;
    int last = (int)q->devices - 1;
    return g->config.ep_window > 0 && g->n_pes > 1 && q->bops->alloc_peer != NULL && q->bops->map_peer != NULL &&
           fin_tag(q->devices, last, last) < tags;
}

static void window_free(grain_cmdq_t *q, grain_ep_window_t *w)
{
    while (w->blocks != NULL) {
        grain_ep_block_t *b = w->blocks;
        w->blocks = b->next;
        free(b);
    }
    if (w->base != NULL)
        q->bops->free_peer(q->backend, w->base);
    free(w->maps);
    free(w->sizes);
    free(w->reads);
    free(w);
}

static void unmap_all(grain_cmdq_t *q, grain_ep_window_t *w)
{
    for (int e = 0; e < q->count; e++)
        if (w->maps[e] != NULL) {
            q->bops->unmap_peer(q->backend, w->maps[e]);
            w->maps[e] = NULL;
        }
}

/* One allgather of `bytes` a slot through endpoint memory of q's, `mine`
 * in q's slot, everyone's into `all`. */
static grain_status_t allgather(grain_cmdq_t *q, const void *mine, size_t bytes, void *all)
{
    grain_ep_mem_t *m = NULL;
    size_t n = (size_t)q->count;
    grain_status_t st = grain_ep_mem_alloc(q, n * bytes, GRAIN_EP_READ | GRAIN_EP_WRITE, &m);
    if (st == GRAIN_OK)
        st = grain_ep_mem_write(q, m, (size_t)q->id * bytes, mine, bytes);
    /* Called even after a failure here: the other endpoints wait for this
     * one's part, and learn of the failure from it. */
    grain_status_t cst = grain_ep_allgather(q, m, 0, bytes);
    if (st == GRAIN_OK && (st = cst) == GRAIN_OK)
        st = grain_ep_mem_read(q, m, 0, all, n * bytes);
    grain_ep_mem_free(q, m);
    return st;
}

/* Maps every window the first allgather offered from another rank of the
 * node; says in reads[] (this endpoint's row of the second) which. */
static void map_offers(grain_cmdq_t *q, grain_ep_window_t *w, const offer_t *offers, unsigned char *mapped)
{
    grain_t *g = q->grain;
    unsigned failed = 0;
    char why[512] = "";
    grain_log_quiet(1); /* a window that cannot be mapped is a reason, not an error */
    for (int e = 0; e < q->count; e++) {
        int rank = e / (int)q->devices;
        mapped[e] = 0;
        if (!grain_node_peer(g, rank) || offers[e].size == 0)
            continue;
        int remote = 0;
        if (q->bops->map_peer(q->backend, offers[e].handle, &w->maps[e], &remote) == GRAIN_OK) {
            w->sizes[e] = (size_t)offers[e].size;
            mapped[e] = 1;
        } else {
            w->maps[e] = NULL;
            if (failed++ == 0)
                snprintf(why, sizeof why, "%s", grain_error_message(NULL));
        }
    }
    grain_log_quiet(0);
    if (failed > 0)
        grain_info("endpoint %d: %u window%s of other ranks of its node could not be mapped (%s); messages from "
                   "there cross the host",
                   q->id, failed, failed == 1 ? "" : "s", why);
}

grain_status_t grain_ep_window_open(grain_cmdq_t *q)
{
    q->window = NULL;
    if (!wanted(q))
        return GRAIN_OK;
    size_t n = (size_t)q->count;
    grain_ep_window_t *w = calloc(1, sizeof *w);
    offer_t mine, *offers = calloc(n, sizeof *offers);
    unsigned char *mapped = calloc(n, n);
    if (w != NULL) {
        w->maps = calloc(n, sizeof *w->maps);
        w->sizes = calloc(n, sizeof *w->sizes);
        w->reads = calloc(n, 1);
    }
    if (w == NULL || offers == NULL || mapped == NULL || w->maps == NULL || w->sizes == NULL || w->reads == NULL) {
        if (w != NULL)
            window_free(q, w);
        free(offers);
        free(mapped);
        /* The others' allgather fails without this endpoint's part. */
        return grain_fail(GRAIN_ERR_NO_MEMORY, "endpoint %d: no memory for the windows of %zu endpoints", q->id, n);
    }
    memset(&mine, 0, sizeof mine);
    size_t size = q->grain->config.ep_window;
    if (q->info.cpu_device && size > CPU_WINDOW_MAX)
        size = CPU_WINDOW_MAX;
    grain_log_quiet(1);
    grain_status_t st = q->bops->alloc_peer(q->backend, size, &w->base, mine.handle);
    grain_log_quiet(0);
    if (st == GRAIN_OK) {
        w->size = size;
        mine.size = size;
    } else {
        w->base = NULL;
        grain_info("endpoint %d: no window of %zu bytes (%s); messages to it from other ranks of its node cross "
                   "the host",
                   q->id, size, grain_error_message(NULL));
    }
    unsigned char *row = mapped + (size_t)q->id * n;
    if ((st = allgather(q, &mine, sizeof mine, offers)) == GRAIN_OK) {
        map_offers(q, w, offers, row);
        st = allgather(q, row, n, mapped);
    }
    if (st == GRAIN_OK) {
        for (size_t e = 0; e < n; e++) /* column q->id: who mapped this one's */
            w->reads[e] = mapped[e * n + (size_t)q->id];
        if (w->base != NULL && q->bops->seal_peer != NULL)
            q->bops->seal_peer(q->backend, w->base);
        q->window = w;
    } else {
        unmap_all(q, w);
        window_free(q, w);
    }
    free(offers);
    free(mapped);
    return st;
}

int grain_ep_window_headed(const grain_cmdq_t *q, int peer)
{
    return q->window != NULL && grain_node_peer(q->grain, peer / (int)q->devices);
}

/* A free range of `len` bytes, first fit, entered among the blocks; SIZE_MAX
 * where there is none. */
static size_t fit(grain_ep_window_t *w, size_t len)
{
    size_t end = 0;
    grain_ep_block_t **p = &w->blocks;
    for (; *p != NULL; p = &(*p)->next) {
        if ((*p)->at - end >= len)
            break;
        end = (*p)->at + (*p)->len;
    }
    if (*p == NULL && w->size - end < len)
        return SIZE_MAX;
    grain_ep_block_t *b = malloc(sizeof *b);
    if (b == NULL)
        return SIZE_MAX; /* the message crosses the host instead */
    *b = (grain_ep_block_t){*p, end, len};
    *p = b;
    return end;
}

void grain_ep_window_give(grain_cmdq_t *q, size_t at)
{
    grain_ep_window_t *w = q->window;
    for (grain_ep_block_t **p = &w->blocks; *p != NULL; p = &(*p)->next)
        if ((*p)->at == at) {
            grain_ep_block_t *b = *p;
            *p = b->next;
            free(b);
            return;
        }
    grain_warn("endpoint %d: a FIN for offset %zu of its window, where no message is; ignored", q->id, at);
}

int grain_ep_window_take(grain_cmdq_t *q, int dest, size_t bytes, void **block_p, size_t *at_p)
{
    grain_ep_window_t *w = q->window;
    if (w == NULL || w->base == NULL || !w->reads[dest] || bytes < q->grain->config.ep_window_min || bytes == 0 ||
        bytes > w->size)
        return 0;
    size_t len = (bytes + BLOCK_ALIGN - 1) / BLOCK_ALIGN * BLOCK_ALIGN;
    size_t at = fit(w, len);
    if (at == SIZE_MAX && w->awaited != NULL) {
        grain_ep_window_progress(q);
        at = fit(w, len);
    }
    if (at == SIZE_MAX)
        return 0;
    *block_p = (char *)w->base + at;
    *at_p = at;
    return 1;
}

grain_status_t grain_ep_window_sent(grain_cmdq_t *q, int dest)
{
    grain_t *g = q->grain;
    grain_ep_fin_t *f = calloc(1, sizeof *f);
    grain_status_t st = f != NULL ? GRAIN_OK
                                  : grain_fail(GRAIN_ERR_NO_MEMORY, "endpoint %d: no memory to wait for a FIN", q->id);
    if (st == GRAIN_OK) {
        f->rank = (uint32_t)(dest / (int)q->devices);
        st = g->tops->ep_irecv(g->transport, f->rank, fin_tag(q->devices, q->id, dest), &f->word, sizeof f->word,
                               &f->req);
    }
    if (st != GRAIN_OK) {
        free(f); /* the receiver may still read the block: it stays taken */
        return st;
    }
    f->next = q->window->awaited;
    q->window->awaited = f;
    return GRAIN_OK;
}

const void *grain_ep_window_source(const grain_cmdq_t *q, int src, uint64_t at, uint64_t len)
{
    const grain_ep_window_t *w = q->window;
    if (w == NULL || src < 0 || src >= q->count || w->maps[src] == NULL || at > w->sizes[src] ||
        len > w->sizes[src] - at)
        return NULL;
    return (const char *)w->maps[src] + at;
}

/* Counts a FIN this rank sent to, or received from, `rank`. */
static void count_fin(grain_ep_team_t *t, uint64_t *counts, uint32_t rank)
{
    pthread_mutex_lock(&t->lock);
    counts[rank]++;
    pthread_mutex_unlock(&t->lock);
}

grain_status_t grain_ep_window_fin(grain_cmdq_t *q, int src, uint64_t at)
{
    grain_t *g = q->grain;
    grain_ep_fin_t *f = calloc(1, sizeof *f);
    if (f == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "endpoint %d: no memory for a FIN", q->id);
    f->rank = (uint32_t)(src / (int)q->devices);
    f->word = at;
    grain_status_t st = g->tops->ep_isend(g->transport, f->rank, fin_tag(q->devices, src, q->id), &f->word,
                                          sizeof f->word, &f->req);
    if (st != GRAIN_OK) {
        free(f);
        return st;
    }
    f->next = q->window->sent;
    q->window->sent = f;
    count_fin(q->team, q->team->fins_to, f->rank);
    return GRAIN_OK;
}

/* One test of a FIN; once done it leaves its list (a received one frees its
 * block and is counted).  Returns whether it was done, with its status. */
static int reap_one(grain_cmdq_t *q, grain_ep_fin_t **p, int received, grain_status_t *st)
{
    grain_t *g = q->grain;
    grain_ep_fin_t *f = *p;
    size_t len = 0;
    *st = GRAIN_OK;
    if (!g->tops->ep_test(g->transport, f->req, &len, st))
        return 0;
    if (*st == GRAIN_OK && received) {
        count_fin(q->team, q->team->fins_from, f->rank);
        if (len == sizeof f->word)
            grain_ep_window_give(q, (size_t)f->word);
        else
            grain_warn("endpoint %d: a FIN of %zu bytes from rank %u; ignored", q->id, len, f->rank);
    }
    *p = f->next;
    free(f);
    return 1;
}

/* Tests every FIN of a list; returns how many are left. */
static unsigned reap(grain_cmdq_t *q, grain_ep_fin_t **list, int received)
{
    unsigned left = 0;
    grain_status_t st = GRAIN_OK;
    for (grain_ep_fin_t **p = list; *p != NULL;)
        if (!reap_one(q, p, received, &st)) {
            left++;
            p = &(*p)->next;
        }
    return left;
}

void grain_ep_window_progress(grain_cmdq_t *q)
{
    if (q->window == NULL)
        return;
    reap(q, &q->window->sent, 0);
    reap(q, &q->window->awaited, 1);
}

/* The FINs each rank's endpoints sent this one over the whole run, from the
 * counts every rank keeps: one all-to-all. */
static grain_status_t fins_expected(grain_t *g, grain_ep_team_t *t, uint64_t *from)
{
    grain_coll_t c = {.kind = GRAIN_COLL_ALLTOALL_U64, .buf = t->fins_to, .recv = from, .count = 1};
    return g->tops->collective(g->transport, &c);
}

/* Waits for the FINs counted for this rank and not yet received, testing
 * every endpoint's (one rank's FINs may land in any of them with its
 * tag); returns 0 where a rank failed meanwhile. */
static int await_counted(grain_ep_team_t *t, grain_cmdq_t *eps, unsigned devices, const uint64_t *from)
{
    grain_backoff_t backoff = {0};
    for (;;) {
        int waiting = 0;
        for (unsigned v = 0; v < devices; v++) {
            grain_ep_window_t *w = eps[v].window;
            for (grain_ep_fin_t **p = w != NULL ? &w->awaited : NULL; p != NULL && *p != NULL;) {
                grain_status_t st = GRAIN_OK;
                if (t->fins_from[(*p)->rank] >= from[(*p)->rank]) {
                    p = &(*p)->next;
                } else if (!reap_one(&eps[v], p, 1, &st)) {
                    waiting = 1;
                    p = &(*p)->next;
                } else if (st != GRAIN_OK) {
                    return 0;
                }
            }
        }
        if (!waiting)
            return 1;
        grain_backoff_idle(&backoff);
    }
}

void grain_ep_windows_close(grain_t *g, grain_ep_team_t *t, grain_cmdq_t *eps, unsigned devices, int all_ok)
{
    int any = 0;
    for (unsigned v = 0; v < devices; v++)
        any |= eps[v].window != NULL;
    if (!any)
        return;
    grain_backoff_t backoff = {0};
    for (unsigned v = 0; v < devices; v++) /* FINs leave as MPI_Send's eager messages do: without their receiver */
        while (eps[v].window != NULL && reap(&eps[v], &eps[v].window->sent, 0) > 0)
            grain_backoff_idle(&backoff);
    /* Every FIN counted for this rank arrives, since its sender sent it;
     * the rest never will (a message nobody received has none). */
    uint64_t *from = all_ok ? calloc((size_t)g->n_pes, sizeof *from) : NULL;
    if (all_ok && (from == NULL || fins_expected(g, t, from) != GRAIN_OK || !await_counted(t, eps, devices, from))) {
        all_ok = 0;
        grain_info("grain_ep_run: FINs still on their way were not waited for: %s", grain_error_message(NULL));
    }
    free(from);
    for (unsigned v = 0; v < devices; v++) {
        grain_ep_window_t *w = eps[v].window;
        if (w == NULL)
            continue;
        while (w->awaited != NULL) {
            grain_ep_fin_t *f = w->awaited;
            w->awaited = f->next;
            g->tops->ep_cancel(g->transport, f->req);
            free(f);
        }
        unmap_all(&eps[v], w);
    }
    /* No rank frees its window while another still has it mapped. */
    if (all_ok && grain_ranks_barrier(g) != GRAIN_OK)
        grain_info("grain_ep_run: the ranks did not meet before freeing their windows: %s", grain_error_message(NULL));
    for (unsigned v = 0; v < devices; v++)
        if (eps[v].window != NULL) {
            window_free(&eps[v], eps[v].window);
            eps[v].window = NULL;
        }
}
