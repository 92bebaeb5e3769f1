/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_bandwidth: the wire under grain's MPI transport, measured as grain
 * uses it: every rank sends buffers of one size to every other rank and
 * receives theirs at the same time, with a window of receives posted and
 * sends in flight (grain keeps GRAIN_BUFFERS_PER_DEST buffers a
 * destination in flight).  It prints GB/s received per rank, the ceiling
 * for grain's applied wire bytes on the same ranks (bench/wire_share.py).
 *
 * With --threads T it moves the bytes the way grain's MPI transport does
 * under GRAIN_MPI_THREADS=multiple (transports/transport_mpi.c), to show
 * what that way costs MPI itself: T sender threads (the aggregators) each
 * write a buffer of their own and post it with MPI_Isend, W in flight a
 * peer, and hand the request to the main thread (the network thread), the
 * only one that tests: it keeps T x W receives a peer posted, reposts each
 * as it completes and completes the senders' requests, all with
 * MPI_Testsome.  Without --threads, one thread posts a window of sends
 * from one buffer and receives into a window of buffers, both hot in its
 * cache.  Each of the ways that differ can be taken alone, to find which
 * one costs what:
 *
 *   --multiple    the one thread under MPI_THREAD_MULTIPLE;
 *   --unwritten   sender threads post their buffers without writing them;
 *   --per-source  the receives are posted from each source, not any;
 *   --progress    a sender thread whose buffers are all in flight drives
 *                 MPI's progress (MPI_Iprobe) instead of yielding: whether
 *                 grain's aggregators, waiting for a buffer, could take
 *                 some of the network thread's copies.
 *
 *   mpirun -np N mpi_bandwidth [--bytes B] [--window W] [--seconds S] [--multiple]
 *                              [--threads T [--unwritten] [--per-source] [--progress]] [--json]
 */
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli/cli.h"

typedef struct options {
    unsigned long long bytes, window, threads;
    double seconds;
    int multiple, unwritten, per_source, progress, json;
} options_t;

enum { OPT_BYTES, OPT_WINDOW, OPT_SECONDS, OPT_THREADS, OPT_MULTIPLE, OPT_UNWRITTEN, OPT_PER_SOURCE, OPT_PROGRESS,
       OPT_JSON };

static void take(void *state, int key, const char *option, const char *value)
{
    options_t *o = state;
    if (key == OPT_BYTES)
        o->bytes = cli_u64_in(option, value, 1, 1u << 30);
    else if (key == OPT_WINDOW)
        o->window = cli_u64_in(option, value, 1, 1024);
    else if (key == OPT_SECONDS)
        o->seconds = cli_real(option, value, 1e-3, 3600);
    else if (key == OPT_THREADS)
        o->threads = cli_u64_in(option, value, 0, 64);
    else if (key == OPT_MULTIPLE)
        o->multiple = 1;
    else if (key == OPT_UNWRITTEN)
        o->unwritten = 1;
    else if (key == OPT_PER_SOURCE)
        o->per_source = 1;
    else if (key == OPT_PROGRESS)
        o->progress = 1;
    else
        o->json = 1;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np N mpi_bandwidth [--bytes B] [--window W] [--seconds S] [--multiple]\n"
                 "                     [--threads T [--unwritten] [--per-source] [--progress]] [--json]\n"
                 "  every rank sends B-byte buffers to every other rank, W in flight a peer, for S seconds;\n"
                 "  with T, T threads write and post the sends and one thread tests them and the receives;\n"
                 "  --multiple: one thread, under MPI_THREAD_MULTIPLE; --unwritten: the sender threads do not\n"
                 "  write their buffers; --per-source: receives from each source, not any; --progress: a sender\n"
                 "  thread with every buffer in flight drives MPI's progress\n");
}

static void *zalloc(size_t bytes)
{
    void *p = calloc(1, bytes);
    if (p == NULL) {
        fprintf(stderr, "mpi_bandwidth: no memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* GB/s received by this rank in rounds of a full window to and from every
 * peer, until every rank has run `seconds` (decided together, so that all
 * stop at one round). */
static double rounds_rate(int me, int n, size_t bytes, int window, double seconds)
{
    int peers = n - 1, slots = peers * window;
    char *sbuf = zalloc(bytes), *rbuf = zalloc((size_t)slots * bytes);
    MPI_Request *req = zalloc(2 * (size_t)slots * sizeof *req);
    memset(sbuf, me, bytes);
    long rounds = 0;
    double t0 = 0;
    for (int stop = 0, warm = 1; !stop;) {
        if (!warm && rounds == 0)
            t0 = MPI_Wtime();
        for (int p = 0, s = 0; p < n; p++) {
            if (p == me)
                continue;
            for (int w = 0; w < window; w++, s++) {
                MPI_Irecv(rbuf + (size_t)s * bytes, (int)bytes, MPI_BYTE, p, 0, MPI_COMM_WORLD, &req[s]);
                MPI_Isend(sbuf, (int)bytes, MPI_BYTE, p, 0, MPI_COMM_WORLD, &req[slots + s]);
            }
        }
        MPI_Waitall(2 * slots, req, MPI_STATUSES_IGNORE);
        if (warm) {
            warm = 0;
            continue;
        }
        rounds++;
        int done = MPI_Wtime() - t0 >= seconds;
        MPI_Allreduce(MPI_IN_PLACE, &done, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        stop = done;
    }
    double gbs = (double)rounds * slots * (double)bytes / (MPI_Wtime() - t0) / 1e9;
    free(sbuf);
    free(rbuf);
    free(req);
    return gbs;
}

/* The sends the sender threads posted, for the main thread to complete. */
typedef struct handoff {
    pthread_mutex_t lock;
    MPI_Request *reqs;
    atomic_int **busy;
    int n;
    atomic_int senders_left;
} handoff_t;

typedef struct sender {
    pthread_t thread;
    MPI_Comm comm;
    int me, n, window, unwritten, progress;
    size_t bytes;
    double until;
    char *bufs;       /* (n - 1) x window buffers */
    atomic_int *busy; /* per buffer: posted and not completed yet */
    long *sent_to;    /* per rank: buffers posted to it */
    handoff_t *h;
} sender_t;

static void *sender_thread(void *arg)
{
    sender_t *s = arg;
    int fill = s->me;
    while (MPI_Wtime() < s->until) {
        int posted = 0;
        for (int p = 0, b = 0; p < s->n; p++) {
            for (int w = 0; p != s->me && w < s->window; w++, b++) {
                if (atomic_load_explicit(&s->busy[b], memory_order_acquire))
                    continue;
                char *buf = s->bufs + (size_t)b * s->bytes;
                if (!s->unwritten)
                    memset(buf, ++fill & 0xff, s->bytes); /* as an aggregator packs it */
                atomic_store_explicit(&s->busy[b], 1, memory_order_relaxed);
                MPI_Request req;
                MPI_Isend(buf, (int)s->bytes, MPI_BYTE, p, 0, s->comm, &req);
                s->sent_to[p]++;
                pthread_mutex_lock(&s->h->lock);
                s->h->reqs[s->h->n] = req;
                s->h->busy[s->h->n++] = &s->busy[b];
                pthread_mutex_unlock(&s->h->lock);
                posted = 1;
            }
        }
        if (!posted && s->progress) { /* every buffer in flight: help MPI move them (a tag nobody sends) */
            int flag = 0;
            MPI_Iprobe(MPI_ANY_SOURCE, 1, s->comm, &flag, MPI_STATUS_IGNORE);
        } else if (!posted) {
            sched_yield();
        }
    }
    atomic_fetch_sub(&s->h->senders_left, 1);
    return NULL;
}

/* Completes the sends in `reqs` that are done, freeing their buffers;
 * returns how many are left, moved to the front. */
static int complete_sends(int n, MPI_Request *reqs, atomic_int **busy, int *idx)
{
    int done = 0;
    MPI_Testsome(n, reqs, &done, idx, MPI_STATUSES_IGNORE);
    if (done == MPI_UNDEFINED || done == 0)
        return n;
    for (int k = 0; k < done; k++)
        atomic_store_explicit(busy[idx[k]], 0, memory_order_release);
    int j = 0;
    for (int i = 0; i < n; i++) {
        if (reqs[i] != MPI_REQUEST_NULL) {
            reqs[j] = reqs[i];
            busy[j++] = busy[i];
        }
    }
    return j;
}

/* GB/s received by this rank from T sender threads a rank, grain's way
 * (the file's comment), from the barrier until the last buffer arrives. */
/* Receive r's source: any, or one peer each in turn. */
static int source_of(int r, int me, int n, int per_source)
{
    if (!per_source)
        return MPI_ANY_SOURCE;
    int p = r % (n - 1);
    return p < me ? p : p + 1;
}

static double threaded_rate(int me, int n, size_t bytes, const options_t *o)
{
    int window = (int)o->window, threads = (int)o->threads;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    /* As many receives posted as sends may be in flight. */
    int peers = n - 1, per_thread = peers * window, recvs = per_thread * threads;
    handoff_t h = {.reqs = zalloc((size_t)recvs * sizeof(MPI_Request)),
                   .busy = zalloc((size_t)recvs * sizeof(void *))};
    pthread_mutex_init(&h.lock, NULL);
    atomic_init(&h.senders_left, threads);
    MPI_Request *sends = zalloc((size_t)recvs * sizeof *sends), *rreq = zalloc((size_t)recvs * sizeof *rreq);
    atomic_int **sbusy = zalloc((size_t)recvs * sizeof *sbusy);
    int *idx = zalloc((size_t)recvs * sizeof *idx);
    MPI_Status *st = zalloc((size_t)recvs * sizeof *st);
    char *rbuf = zalloc((size_t)recvs * bytes);
    long *sent_to = zalloc((size_t)n * sizeof *sent_to), *expect = zalloc((size_t)n * sizeof *expect);
    long *got = zalloc((size_t)n * sizeof *got);
    sender_t *s = zalloc((size_t)threads * sizeof *s);
    for (int r = 0; r < recvs; r++)
        MPI_Irecv(rbuf + (size_t)r * bytes, (int)bytes, MPI_BYTE, source_of(r, me, n, o->per_source), 0, comm,
                  &rreq[r]);
    MPI_Barrier(comm);
    double t0 = MPI_Wtime(), t_last = t0;
    for (int i = 0; i < threads; i++) {
        s[i] = (sender_t){.comm = comm, .me = me, .n = n, .window = window, .unwritten = o->unwritten,
                          .progress = o->progress, .bytes = bytes, .until = t0 + o->seconds,
                          .bufs = zalloc((size_t)per_thread * bytes), .busy = zalloc(per_thread * sizeof(atomic_int)),
                          .sent_to = zalloc((size_t)n * sizeof(long)), .h = &h};
        pthread_create(&s[i].thread, NULL, sender_thread, &s[i]);
    }
    double received = 0;
    int in_flight = 0, counted = 0;
    MPI_Request counts = MPI_REQUEST_NULL;
    for (;;) {
        pthread_mutex_lock(&h.lock);
        for (int k = 0; k < h.n; k++) {
            sends[in_flight] = h.reqs[k];
            sbusy[in_flight++] = h.busy[k];
        }
        h.n = 0;
        pthread_mutex_unlock(&h.lock);
        if (in_flight > 0)
            in_flight = complete_sends(in_flight, sends, sbusy, idx);
        int done = 0;
        MPI_Testsome(recvs, rreq, &done, idx, st);
        for (int k = 0; done != MPI_UNDEFINED && k < done; k++) {
            int len = 0;
            MPI_Get_count(&st[k], MPI_BYTE, &len);
            received += len;
            got[st[k].MPI_SOURCE]++;
            t_last = MPI_Wtime();
            MPI_Irecv(rbuf + (size_t)idx[k] * bytes, (int)bytes, MPI_BYTE, source_of(idx[k], me, n, o->per_source), 0,
                      comm, &rreq[idx[k]]);
        }
        /* Once this rank's senders are done, the ranks tell each other
         * how many buffers they sent, and this one receives until it has
         * them all. */
        if (counts == MPI_REQUEST_NULL && !counted && atomic_load(&h.senders_left) == 0 && in_flight == 0) {
            pthread_mutex_lock(&h.lock);
            int handed = h.n;
            pthread_mutex_unlock(&h.lock);
            if (handed == 0) {
                for (int i = 0; i < threads; i++)
                    for (int p = 0; p < n; p++)
                        sent_to[p] += s[i].sent_to[p];
                MPI_Ialltoall(sent_to, 1, MPI_LONG, expect, 1, MPI_LONG, comm, &counts);
            }
        }
        if (counts != MPI_REQUEST_NULL) {
            int flag = 0;
            MPI_Test(&counts, &flag, MPI_STATUS_IGNORE);
            counted = flag;
        }
        if (counted) {
            int all = 1;
            for (int p = 0; p < n; p++)
                all &= p == me || got[p] == expect[p];
            if (all)
                break;
        }
    }
    for (int r = 0; r < recvs; r++)
        MPI_Cancel(&rreq[r]);
    MPI_Waitall(recvs, rreq, MPI_STATUSES_IGNORE);
    for (int i = 0; i < threads; i++) {
        pthread_join(s[i].thread, NULL);
        free(s[i].bufs);
        free(s[i].busy);
        free(s[i].sent_to);
    }
    pthread_mutex_destroy(&h.lock);
    free(h.reqs);
    free(h.busy);
    free(sends);
    free(rreq);
    free(sbusy);
    free(idx);
    free(st);
    free(rbuf);
    free(sent_to);
    free(expect);
    free(got);
    free(s);
    MPI_Comm_free(&comm);
    return received / (t_last - t0) / 1e9;
}

int main(int argc, char **argv)
{
    static const cli_option_t options[] = {
        {"bytes", 1, OPT_BYTES},         {"window", 1, OPT_WINDOW},         {"seconds", 1, OPT_SECONDS},
        {"threads", 1, OPT_THREADS},     {"multiple", 0, OPT_MULTIPLE},     {"unwritten", 0, OPT_UNWRITTEN},
        {"per-source", 0, OPT_PER_SOURCE}, {"progress", 0, OPT_PROGRESS}, {"json", 0, OPT_JSON}};
    options_t o = {65536, 3, 0, 2.0, 0, 0, 0, 0, 0};
    const cli_group_t groups[] = {CLI_GROUP(options, take, &o)};
    cli_parse("mpi_bandwidth", argc, argv, groups, 1, 0, usage);
    if ((o.unwritten || o.per_source || o.progress) && o.threads == 0) {
        fprintf(stderr, "mpi_bandwidth: --unwritten, --per-source and --progress are ways of the sender threads: "
                        "give --threads too\n");
        return 2;
    }
    if (o.multiple && o.threads > 0) {
        fprintf(stderr, "mpi_bandwidth: --multiple is the one thread's way; the sender threads always take it\n");
        return 2;
    }
    int threads = (int)o.threads, provided = 0;
    int multiple = threads > 0 || o.multiple;
    MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    size_t bytes = (size_t)o.bytes;
    int window = (int)o.window;
    if (n < 2 || (multiple && provided < MPI_THREAD_MULTIPLE)) {
        if (me == 0)
            fprintf(stderr, n < 2 ? "mpi_bandwidth: needs two ranks or more\n"
                                  : "mpi_bandwidth: --threads and --multiple need MPI_THREAD_MULTIPLE, which this MPI "
                                    "lacks\n");
        MPI_Finalize();
        return 2;
    }
    double gbs = threads > 0 ? threaded_rate(me, n, bytes, &o)
                             : rounds_rate(me, n, bytes, window, o.seconds);
    double min = gbs, sum = gbs;
    MPI_Allreduce(MPI_IN_PLACE, &min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) {
        if (o.json)
            printf("{\"ranks\":%d,\"bytes\":%zu,\"window\":%d,\"threads\":%d,\"multiple\":%d,\"unwritten\":%d,"
                   "\"per_source\":%d,\"progress\":%d,\"recv_gb_per_s_per_rank\":%.4f,\"recv_gb_per_s_min\":%.4f}\n",
                   n, bytes, window, threads, multiple, o.unwritten, o.per_source, o.progress, sum / n, min);
        else
            printf("mpi_bandwidth: %d ranks, %zu-byte messages, window %d a peer%s: %.3f GB/s received per rank "
                   "(slowest rank %.3f)\n",
                   n, bytes, window, threads > 0 ? " and sender thread" : "", sum / n, min);
    }
    MPI_Finalize();
    return 0;
}
