/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Failure detection for the MPI transport (GRAIN_PEER_TIMEOUT_S).
 *
 * Nothing in MPI says that a rank died or stopped: Open MPI without ULFM
 * ends the whole job when a rank dies, unless the launcher keeps the others
 * alive (mpirun --enable-recovery), and never notices a rank stopped by a
 * signal or a debugger.  Sends to such a rank through shared memory still
 * complete (eager), larger ones wait forever, and a collective just waits.
 * So every network thread sends every other rank an 8-byte heartbeat each
 * quarter of the timeout, and a rank is failed when, for the timeout:
 *
 *   - nothing came from it, not even its heartbeat (it died or stopped, or
 *     its host or the link did);
 *   - a buffer sent to it stayed in flight (it no longer receives);
 *   - a buffer of its, set aside for an earlier one, waited for that one.
 *
 * An error MPI returns fails the rank it names at once.  A failure is
 * reported once (grain_mpi_fail): every collective then returns
 * GRAIN_ERR_PEER, and the runtime stops waiting for buffers in flight.
 *
 * Not a failure: a rank that is alive but slow to reach a collective (a
 * long host computation or kernel).  Its network thread keeps beating and
 * reposting receives.  The silence verdict needs a rank's first heartbeat,
 * or a completed collective (grain_init has one, after every rank started
 * beating): a rank that dies before that is not detected.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/backoff.h"
#include "services/log.h"
#include "transports/transport_mpi.h"

#define BEAT_TAG 0x6753
#define BEAT_MAGIC 0x67726e6862656174ull /* "grnhbeat" */

static void post_beat_recv(grain_transport_t *t)
{
    MPI_Irecv(&t->beat_in, 1, MPI_UINT64_T, MPI_ANY_SOURCE, BEAT_TAG, t->comm, &t->beat_recv);
}

static void free_watch(grain_transport_t *t)
{
    free(t->heard_ns);
    free(t->beat_sent_ns);
    free(t->beat_reqs);
    t->heard_ns = NULL;
    t->beat_sent_ns = NULL;
    t->beat_reqs = NULL;
}

grain_status_t grain_mpi_watch_start(grain_transport_t *t, unsigned timeout_s)
{
    t->timeout_ns = (uint64_t)timeout_s * 1000000000u;
    if (t->timeout_ns == 0 || t->n_pes < 2)
        return GRAIN_OK;
    t->heard_ns = calloc((size_t)t->n_pes, sizeof *t->heard_ns);
    t->beat_sent_ns = calloc((size_t)t->n_pes, sizeof *t->beat_sent_ns);
    t->beat_reqs = malloc((size_t)t->n_pes * sizeof *t->beat_reqs);
    if (t->heard_ns == NULL || t->beat_sent_ns == NULL || t->beat_reqs == NULL) {
        free_watch(t);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "mpi: no memory to watch %d ranks", t->n_pes);
    }
    for (int p = 0; p < t->n_pes; p++)
        t->beat_reqs[p] = MPI_REQUEST_NULL;
    post_beat_recv(t);
    return GRAIN_OK;
}

void grain_mpi_watch_stop(grain_transport_t *t)
{
    if (t->heard_ns != NULL && !grain_mpi_failed(t)) {
        /* Unmatched: a peer may have stopped beating first.  A small
         * send completes on its own, freed or not. */
        MPI_Cancel(&t->beat_recv);
        MPI_Wait(&t->beat_recv, MPI_STATUS_IGNORE);
        for (int p = 0; p < t->n_pes; p++)
            if (t->beat_reqs[p] != MPI_REQUEST_NULL)
                MPI_Request_free(&t->beat_reqs[p]);
    }
    free_watch(t);
}

/* ", pending here: ..." for `rank`, what this rank waits for from it. */
static void describe_pending(grain_transport_t *t, int rank, uint64_t now, char *out, size_t size)
{
    unsigned sends = 0, held = 0;
    uint64_t oldest = now, oldest_put = now;
    unsigned puts = grain_mpi_put_waiting(t, rank, &oldest_put);
    for (int i = 0; i < t->n_inflight; i++)
        if ((int)t->send_nodes[i]->dest == rank) {
            sends++;
            if (t->send_nodes[i]->queued_ns < oldest)
                oldest = t->send_nodes[i]->queued_ns;
        }
    for (const held_buffer_t *b = t->held; b != NULL; b = b->next)
        held += b->src == rank;
    int n = snprintf(out, size, "; pending on rank %d:", t->my_pe);
    if (sends > 0)
        n += snprintf(out + n, size - (size_t)n, " %u buffers to rank %d in flight, the oldest for %.1f s,", sends,
                      rank, (double)(now - oldest) * 1e-9);
    if (puts > 0)
        n += snprintf(out + n, size - (size_t)n, " %u buffers to rank %d waiting for room in its ring, the oldest for "
                      "%.1f s,", puts, rank, now > oldest_put ? (double)(now - oldest_put) * 1e-9 : 0.0);
    if (held > 0)
        n += snprintf(out + n, size - (size_t)n, " %u buffers from rank %d held for an earlier one that never came,",
                      held, rank);
    int coll = t->coll_in_flight || t->coll_state == COLL_REQUESTED;
    if (coll)
        n += snprintf(out + n, size - (size_t)n, " a collective (grain_quiet, grain_barrier or another) waiting,");
    if (sends == 0 && puts == 0 && held == 0 && !coll)
        snprintf(out + n, size - (size_t)n, " nothing");
    else
        out[strlen(out) - 1] = '\0';
}

void grain_mpi_fail(grain_transport_t *t, int rank, const char *fmt, ...)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&t->failing, &expected, 1))
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->why, sizeof t->why, fmt, ap);
    va_end(ap);
    /* The in-flight list and the held buffers are the network thread's,
     * which fails a rank itself unless MPI failed an aggregator's send. */
    if (rank >= 0 && n > 0 && (size_t)n < sizeof t->why && pthread_equal(pthread_self(), t->thread))
        describe_pending(t, rank, grain_now_ns(), t->why + n, sizeof t->why - (size_t)n);
    atomic_store_explicit(&t->failed, 1, memory_order_release);
    t->handlers.failed(t->handlers.arg, rank, t->why);
    pthread_mutex_lock(&t->coll_lock);
    if (t->coll_state == COLL_REQUESTED || t->coll_state == COLL_STARTED)
        t->coll_state = COLL_DONE; /* abandoned: the collective's request is never tested again */
    pthread_cond_broadcast(&t->coll_done);
    pthread_mutex_unlock(&t->coll_lock);
}

/* Takes the heartbeats that arrived. */
static void hear(grain_transport_t *t, uint64_t now)
{
    for (;;) {
        int flag = 0;
        MPI_Status status;
        int err = MPI_Test(&t->beat_recv, &flag, &status);
        if (err != MPI_SUCCESS) {
            char text[MPI_MAX_ERROR_STRING];
            grain_mpi_fail(t, -1, "mpi: receiving heartbeats failed on rank %d: %s", t->my_pe,
                           grain_mpi_error_string(err, text));
            return;
        }
        if (!flag)
            return;
        if (t->beat_in == BEAT_MAGIC)
            t->heard_ns[status.MPI_SOURCE] = now;
        post_beat_recv(t);
    }
}

/* Sends a heartbeat to each peer whose last one has left. */
static void beat(grain_transport_t *t, uint64_t now)
{
    static const uint64_t magic = BEAT_MAGIC;
    for (int p = 0; p < t->n_pes; p++) {
        if (p == t->my_pe)
            continue;
        int done = 1;
        if (t->beat_reqs[p] != MPI_REQUEST_NULL)
            MPI_Test(&t->beat_reqs[p], &done, MPI_STATUS_IGNORE);
        if (!done)
            continue; /* judged below, if it stays */
        int err = MPI_Isend(&magic, 1, MPI_UINT64_T, p, BEAT_TAG, t->comm, &t->beat_reqs[p]);
        if (err != MPI_SUCCESS) {
            char text[MPI_MAX_ERROR_STRING];
            grain_mpi_fail(t, p, "mpi: rank %d could not send rank %d its heartbeat: %s", t->my_pe, p,
                           grain_mpi_error_string(err, text));
            return;
        }
        t->beat_sent_ns[p] = now;
    }
}

/* The first rank found failed, by the rules at the top. */
static void judge(grain_transport_t *t, uint64_t now)
{
    double secs = (double)t->timeout_ns * 1e-9;
    for (int p = 0; p < t->n_pes; p++) {
        if (p == t->my_pe)
            continue;
        if (t->heard_ns[p] != 0 && now - t->heard_ns[p] > t->timeout_ns) {
            grain_mpi_fail(t, p,
                           "rank %d has sent rank %d nothing, not even its heartbeat, for %.0f s "
                           "(GRAIN_PEER_TIMEOUT_S: %.0f s): it died, was stopped, or cannot reach this rank",
                           p, t->my_pe, (double)(now - t->heard_ns[p]) * 1e-9, secs);
            return;
        }
        if (t->beat_reqs[p] != MPI_REQUEST_NULL && now - t->beat_sent_ns[p] > t->timeout_ns) {
            grain_mpi_fail(t, p, "rank %d has not taken rank %d's heartbeat for %.0f s (GRAIN_PEER_TIMEOUT_S: %.0f s)",
                           p, t->my_pe, (double)(now - t->beat_sent_ns[p]) * 1e-9, secs);
            return;
        }
    }
    for (int i = 0; i < t->n_inflight; i++) {
        const send_node_t *s = t->send_nodes[i];
        if (now - s->queued_ns > t->timeout_ns) {
            grain_mpi_fail(t, (int)s->dest,
                           "rank %d has accepted none of rank %d's buffers for %.0f s (GRAIN_PEER_TIMEOUT_S: %.0f s): "
                           "it no longer receives",
                           (int)s->dest, t->my_pe, (double)(now - s->queued_ns) * 1e-9, secs);
            return;
        }
    }
    for (int p = 0; p < t->n_pes; p++) {
        uint64_t since = now;
        /* A send may have begun to wait since `now`. */
        if (grain_mpi_put_waiting(t, p, &since) > 0 && now > since && now - since > t->timeout_ns) {
            grain_mpi_fail(t, p,
                           "rank %d has freed no slot of its ring for rank %d's buffers for %.0f s "
                           "(GRAIN_PEER_TIMEOUT_S: %.0f s): it no longer receives",
                           p, t->my_pe, (double)(now - since) * 1e-9, secs);
            return;
        }
    }
    for (const held_buffer_t *b = t->held; b != NULL; b = b->next) {
        if (now - b->since_ns > t->timeout_ns) {
            grain_mpi_fail(t, b->src,
                           "buffer %llu from rank %d never reached rank %d, which has held the later buffer %llu "
                           "for %.0f s (GRAIN_PEER_TIMEOUT_S: %.0f s): a buffer was lost or its sequence number "
                           "damaged",
                           (unsigned long long)t->next_seq[b->src], b->src, t->my_pe, (unsigned long long)b->seq,
                           (double)(now - b->since_ns) * 1e-9, secs);
            return;
        }
    }
}

void grain_mpi_watch(grain_transport_t *t)
{
    if (t->heard_ns == NULL || grain_mpi_failed(t))
        return;
    uint64_t now = grain_now_ns();
    if (now < t->next_watch_ns)
        return;
    /* Eight looks a timeout: a failure is found within 1.125 of it. */
    t->next_watch_ns = now + t->timeout_ns / 8;
    /* Once a collective completed, every rank beats: the silence of one
     * never heard counts from here. */
    for (int p = 0; t->coll_completed && p < t->n_pes; p++)
        if (t->heard_ns[p] == 0)
            t->heard_ns[p] = now;
    hear(t, now);
    if (now >= t->next_beat_ns) {
        t->next_beat_ns = now + t->timeout_ns / 4;
        beat(t, now);
    }
    if (!grain_mpi_failed(t))
        judge(t, now);
}
