/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI transport's put channel (GRAIN_MPI_BUFFERS=put, and auto where
 * every rank's window allows it): the sender writes each buffer into the
 * receiver's memory with MPI_Put, so that the receiving rank's network
 * thread copies nothing and drives no protocol; it only notices arrivals.
 *
 * Why: two-sided MPI over shared memory without a single-copy mechanism
 * copies every byte twice on the network threads (into the shared FIFO,
 * then out of it), and the receiver's network thread was the limit of
 * pagerank and of GUPS through the transport (docs/receive-path.md).  With
 * puts over Open MPI's osc/sm the sending aggregator copies its buffer, hot
 * in its own cache, straight into the peer's ring, once; between nodes the
 * osc components RDMA-write it.  The protocol is the verbs transport's
 * (verbs_proto.h) over MPI's one-sided calls:
 *
 * - Every rank's window holds a ring of `slots` slots for each peer, a
 *   stamp word for each slot and a credit word for each peer.  The sender
 *   numbers its writes to a peer (tickets, under the peer's lock, in the
 *   order send() was called) and writes ticket k into slot k mod slots.
 * - MPI orders no two puts, so the data is flushed to the target before its
 *   stamp is written: (k + 1) mod 2^32 in the high half and the length in
 *   the low, one word written atomically (MPI_Accumulate with MPI_REPLACE).
 *   The receiver expects its peer's tickets in order and takes slot k only
 *   when the stamp names k; an older stamp in that slot names k - slots.
 * - A sender may write ticket k only once the receiver has consumed ticket
 *   k - slots: the receiver returns its running count of consumed tickets
 *   into the sender's credit word, a count and not an increment, so that
 *   a return overtaken by a later one frees nothing twice.  A slot is
 *   consumed once the runtime lets go of it (transport.h, settle), possibly
 *   out of order, and the count moves over the run of freed slots.
 * - A send that finds no credit waits in a list, in order; the next send
 *   to that peer, or the network thread once credits return, writes it.
 *   So send() never waits for the peer, and a receive thread that sends
 *   replies can never wait on a peer that waits on it.
 *
 * Buffers keep the order of the tickets; two senders may still take
 * tickets in the other order than the buffers' sequence numbers, which the
 * transport restores as for receives (transport_mpi.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/backoff.h"
#include "services/log.h"
#include "transports/transport_mpi.h"

/* Past this, a window of rings for every peer takes more memory than the
 * copies it saves are worth; auto sends instead. */
#define PUT_WINDOW_MAX (1ull << 30)
#define STAMP_ALIGN 64u

static uint64_t stamp_of(uint64_t ticket, size_t len)
{
    return (uint64_t)(uint32_t)(ticket + 1) << 32 | (uint32_t)len;
}

static int has_credit(const mpi_put_t *p, const mpi_put_peer_t *peer, uint32_t dest)
{
    return peer->tickets - atomic_load_explicit(&p->credits[dest], memory_order_acquire) < p->slots;
}

/* Writes ticket `ticket` of this rank to `dest`: the buffer, then, once it
 * is whole there, its stamp. */
static int write_slot(grain_transport_t *t, uint32_t dest, uint64_t ticket, const void *data, size_t len)
{
    mpi_put_t *p = t->put;
    size_t slot = (size_t)t->my_pe * p->slots + (size_t)(ticket % p->slots);
    uint64_t stamp = stamp_of(ticket, len);
    int err = MPI_Put(data, (int)len, MPI_BYTE, (int)dest, (MPI_Aint)(slot * p->slot_bytes), (int)len, MPI_BYTE,
                      p->win);
    if (err == MPI_SUCCESS)
        err = MPI_Win_flush((int)dest, p->win);
    if (err == MPI_SUCCESS)
        err = MPI_Accumulate(&stamp, 1, MPI_UINT64_T, (int)dest, p->stamps_at + (MPI_Aint)(slot * sizeof stamp), 1,
                             MPI_UINT64_T, MPI_REPLACE, p->win);
    if (err == MPI_SUCCESS)
        err = MPI_Win_flush((int)dest, p->win);
    if (err != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        grain_mpi_fail(t, (int)dest, "mpi: rank %d could not put a buffer into rank %d's window: %s", t->my_pe,
                       (int)dest, grain_mpi_error_string(err, text));
    }
    return err == MPI_SUCCESS;
}

/* Writes the waiting sends to `dest` while credits last; their buffers go
 * back to their senders, written or, after a failure, dropped. */
static int drain(grain_transport_t *t, uint32_t dest)
{
    mpi_put_t *p = t->put;
    mpi_put_peer_t *peer = &p->peers[dest];
    int worked = 0;
    for (;;) {
        pthread_mutex_lock(&peer->lock);
        put_wait_t *w = peer->wait_head;
        if (w == NULL || !has_credit(p, peer, dest)) {
            pthread_mutex_unlock(&peer->lock);
            return worked;
        }
        peer->wait_head = w->next;
        if (peer->wait_head == NULL)
            peer->wait_tail = NULL;
        uint64_t ticket = peer->tickets++;
        pthread_mutex_unlock(&peer->lock);
        atomic_fetch_sub_explicit(&p->waiting, 1, memory_order_relaxed);
        if (!grain_mpi_failed(t))
            write_slot(t, dest, ticket, w->data, w->len);
        t->handlers.sent(t->handlers.arg, w->token);
        free(w);
        worked = 1;
    }
}

grain_status_t grain_mpi_put_send(grain_transport_t *t, uint32_t dest, const void *data, size_t len, void *token)
{
    mpi_put_t *p = t->put;
    if (len > p->slot_bytes)
        return grain_fail(GRAIN_ERR_INVALID, "mpi: a %zu-byte buffer for rank %u; the slots of its ring hold %u", len,
                          dest, p->slot_bytes);
    mpi_put_peer_t *peer = &p->peers[dest];
    put_wait_t *w = NULL;
    pthread_mutex_lock(&peer->lock);
    /* Behind earlier waiting sends, never ahead; under "serialized" only
     * the network thread calls MPI, so every send waits for it. */
    int now = t->multiple && peer->wait_head == NULL && has_credit(p, peer, dest);
    uint64_t ticket = now ? peer->tickets++ : 0;
    if (!now && (w = malloc(sizeof *w)) != NULL) {
        *w = (put_wait_t){NULL, data, len, token, grain_now_ns()};
        if (peer->wait_tail != NULL)
            peer->wait_tail->next = w;
        else
            peer->wait_head = w;
        peer->wait_tail = w;
        atomic_fetch_add_explicit(&p->waiting, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&peer->lock);
    if (now) {
        if (!write_slot(t, dest, ticket, data, len))
            return GRAIN_ERR_PEER; /* reported once, by grain_mpi_fail */
        t->handlers.sent(t->handlers.arg, token);
        return GRAIN_OK;
    }
    if (w == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "mpi: no memory to queue a send");
    if (t->multiple)
        drain(t, dest); /* the credit may have come back meanwhile */
    grain_bell_ring(&t->bell);
    return GRAIN_OK;
}

unsigned grain_mpi_put_poll(grain_transport_t *t, mpi_put_arrival_t *out, unsigned max)
{
    mpi_put_t *p = t->put;
    unsigned n = 0, pes = (unsigned)t->n_pes;
    /* The public and private copies of a unified window are one, but
     * loads may still need a fence to see remote writes. */
    MPI_Win_sync(p->win);
    for (unsigned k = 0; k < pes && n < max; k++) {
        unsigned src = (p->next_peer + k) % pes;
        mpi_put_peer_t *peer = &p->peers[src];
        while (src != (unsigned)t->my_pe && n < max) {
            unsigned index = src * p->slots + (unsigned)(peer->arrived % p->slots);
            uint64_t stamp = atomic_load_explicit(&p->stamps[index], memory_order_acquire);
            if (stamp >> 32 != (uint32_t)(peer->arrived + 1))
                break;
            peer->arrived++;
            out[n++] = (mpi_put_arrival_t){index, (int)src, (size_t)(uint32_t)stamp};
        }
    }
    p->next_peer = (p->next_peer + 1) % pes; /* no peer always first */
    return n;
}

uint8_t *grain_mpi_put_slot(const grain_transport_t *t, unsigned index)
{
    return t->put->rings + (size_t)index * t->put->slot_bytes;
}

void grain_mpi_put_release(grain_transport_t *t, unsigned index)
{
    mpi_put_t *p = t->put;
    unsigned src = index / p->slots;
    mpi_put_peer_t *peer = &p->peers[src];
    p->freed[index] = 1;
    for (;;) {
        unsigned oldest = src * p->slots + (unsigned)(peer->consumed % p->slots);
        if (peer->consumed == peer->arrived || !p->freed[oldest])
            return;
        p->freed[oldest] = 0;
        peer->consumed++;
    }
}

int grain_mpi_put_progress(grain_transport_t *t)
{
    mpi_put_t *p = t->put;
    int worked = 0;
    for (int q = 0; q < t->n_pes && !grain_mpi_failed(t); q++) {
        mpi_put_peer_t *peer = &p->peers[q];
        if (q == t->my_pe)
            continue;
        if (peer->consumed != peer->returned) {
            uint64_t count = peer->consumed;
            int err = MPI_Accumulate(&count, 1, MPI_UINT64_T, q, p->credits_at + (MPI_Aint)(t->my_pe * sizeof count),
                                     1, MPI_UINT64_T, MPI_REPLACE, p->win);
            if (err == MPI_SUCCESS)
                err = MPI_Win_flush(q, p->win);
            if (err != MPI_SUCCESS) {
                char text[MPI_MAX_ERROR_STRING];
                grain_mpi_fail(t, q, "mpi: rank %d could not return credits to rank %d: %s", t->my_pe, q,
                               grain_mpi_error_string(err, text));
                break;
            }
            peer->returned = count;
            worked = 1;
        }
        if (atomic_load_explicit(&p->waiting, memory_order_relaxed) > 0)
            worked |= drain(t, (uint32_t)q);
    }
    return worked;
}

unsigned grain_mpi_put_waiting(grain_transport_t *t, int dest, uint64_t *oldest_ns_p)
{
    mpi_put_t *p = t->put;
    unsigned n = 0;
    if (p == NULL || atomic_load_explicit(&p->waiting, memory_order_relaxed) == 0)
        return 0;
    pthread_mutex_lock(&p->peers[dest].lock);
    const put_wait_t *w = p->peers[dest].wait_head;
    if (w != NULL)
        *oldest_ns_p = w->queued_ns;
    for (; w != NULL; w = w->next)
        n++;
    pthread_mutex_unlock(&p->peers[dest].lock);
    return n;
}

int grain_mpi_put_idle(const grain_transport_t *t)
{
    return t->put == NULL || atomic_load_explicit(&t->put->waiting, memory_order_relaxed) == 0;
}

static void free_put(mpi_put_t *p, int n_pes)
{
    for (int q = 0; p->peers != NULL && q < n_pes; q++) {
        for (put_wait_t *w = p->peers[q].wait_head, *next; w != NULL; w = next) {
            next = w->next;
            free(w);
        }
        pthread_mutex_destroy(&p->peers[q].lock);
    }
    free(p->peers);
    free(p->freed);
    free(p);
}

/* Allocates the window and agrees with every rank on using it; 0, and why,
 * where any rank's does not allow puts. */
static int open_window(grain_transport_t *t, mpi_put_t *p, char *why, size_t why_size)
{
    size_t n = (size_t)t->n_pes, rings = n * p->slots * p->slot_bytes;
    p->stamps_at = (MPI_Aint)((rings + STAMP_ALIGN - 1) / STAMP_ALIGN * STAMP_ALIGN);
    p->credits_at = p->stamps_at + (MPI_Aint)(n * p->slots * sizeof(uint64_t));
    size_t bytes = (size_t)p->credits_at + n * sizeof(uint64_t);
    int ok = bytes <= PUT_WINDOW_MAX;
    if (!ok)
        snprintf(why, why_size, "rings of %u slots of %u bytes for %d peers take %zu MiB, more than %llu", p->slots,
                 p->slot_bytes, t->n_pes - 1, bytes >> 20, PUT_WINDOW_MAX >> 20);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "accumulate_ordering", "none");
    MPI_Info_set(info, "accumulate_ops", "same_op");
    MPI_Info_set(info, "same_size", "true");
    MPI_Info_set(info, "same_disp_unit", "true");
    void *base = NULL;
    int err = MPI_Win_allocate(ok ? (MPI_Aint)bytes : 0, 1, info, t->comm, &base, &p->win);
    MPI_Info_free(&info);
    int created = err == MPI_SUCCESS;
    if (ok && !created) {
        char text[MPI_MAX_ERROR_STRING];
        snprintf(why, why_size, "MPI_Win_allocate failed: %s", grain_mpi_error_string(err, text));
        ok = 0;
    }
    if (ok) {
        MPI_Win_set_errhandler(p->win, MPI_ERRORS_RETURN);
        int *model = NULL, found = 0;
        MPI_Win_get_attr(p->win, MPI_WIN_MODEL, &model, &found);
        if (!found || *model != MPI_WIN_UNIFIED) {
            snprintf(why, why_size, "the window's memory model is separate, where loads need not see puts");
            ok = 0;
        }
        p->rings = base;
        p->stamps = (_Atomic uint64_t *)(void *)(p->rings + p->stamps_at);
        p->credits = (_Atomic uint64_t *)(void *)(p->rings + p->credits_at);
        memset(base, 0, bytes);
    }
    /* Every rank zeroed its window before any leaves this. */
    int mine[2] = {ok, created}, all[2] = {0, 0};
    if (MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, t->comm) != MPI_SUCCESS) {
        snprintf(why, why_size, "the ranks could not agree on their windows"); /* left to MPI_Finalize */
        return 0;
    }
    if (ok && !all[0])
        snprintf(why, why_size, "another rank's window does not allow it");
    if (!all[0]) {
        /* Freeing is collective: a window that some rank lacks is left to
         * MPI_Finalize. */
        if (all[1])
            MPI_Win_free(&p->win);
        return 0;
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, p->win);
    return 1;
}

grain_status_t grain_mpi_put_open(grain_transport_t *t, size_t slot_bytes, unsigned recv_buffers, int required,
                                  char *why, size_t why_size)
{
    t->put = NULL;
    snprintf(why, why_size, "one rank sends nothing");
    if (t->n_pes < 2)
        return GRAIN_OK;
    mpi_put_t *p = calloc(1, sizeof *p);
    unsigned peers = (unsigned)t->n_pes - 1;
    if (p == NULL || (p->peers = calloc((size_t)t->n_pes, sizeof *p->peers)) == NULL) {
        free(p);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "mpi: no memory for the put channel");
    }
    for (int q = 0; q < t->n_pes; q++)
        pthread_mutex_init(&p->peers[q].lock, NULL);
    /* The receives of all peers, shared out: each ring at least two, so
     * that a slot can fill while the other is applied. */
    p->slots = (recv_buffers + peers - 1) / peers;
    p->slots = p->slots < 2 ? 2 : p->slots;
    p->slot_bytes = (uint32_t)slot_bytes;
    p->freed = calloc((size_t)t->n_pes * p->slots, 1);
    if (p->freed == NULL) {
        free_put(p, t->n_pes);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "mpi: no memory for the put channel");
    }
    if (!open_window(t, p, why, why_size)) {
        free_put(p, t->n_pes);
        return required ? grain_fail(GRAIN_ERR_TRANSPORT,
                                     "GRAIN_MPI_BUFFERS=put: %s (GRAIN_MPI_BUFFERS=auto sends instead)", why)
                        : GRAIN_OK;
    }
    t->put = p;
    return GRAIN_OK;
}

void grain_mpi_put_close(grain_transport_t *t, int failed)
{
    mpi_put_t *p = t->put;
    if (p == NULL)
        return;
    /* After a failure the window is left to MPI, as MPI is not finalized:
     * freeing it waits for every rank. */
    if (!failed) {
        MPI_Win_unlock_all(p->win);
        MPI_Win_free(&p->win);
    }
    free_put(p, t->n_pes);
    t->put = NULL;
}
