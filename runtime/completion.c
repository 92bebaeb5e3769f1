/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion: waiting for kernels, quiet/barrier, the receive callback that
 * counts what was applied, error reporting and the host collectives.
 *
 * quiet counts, it never sleeps and hopes: every rank drains its queue and
 * flushes its buffers, the ranks exchange how many messages each sent to
 * each, and every rank waits until it has applied as many as were sent to it.
 * A closing barrier makes that true on every rank before any returns.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/grain_impl.h"
#include "runtime/messages/apply.h"
#include "runtime/messages/quiets.h"
#include "runtime/messages/recv_threads.h"
#include "runtime/messages/replier.h"
#include "runtime/transfers/region.h"
#include "services/backoff.h"
#include "services/log.h"
#include "transports/wire.h"

void grain_wait_a_little(unsigned *spins)
{
    if ((*spins)++ < 100u) {
        sched_yield();
        return;
    }
    /* Naps of 10 us doubling, as an idle thread's (backoff.h), up to its
     * longest. */
    unsigned doublings = *spins - 100u < 8u ? *spins - 100u : 8u;
    long nap = 10000l << doublings, max = (long)atomic_load_explicit(&grain_backoff_nap_max_ns, memory_order_relaxed);
    struct timespec t = {0, nap < max ? nap : max};
    nanosleep(&t, NULL);
}

/* Errors logged one by one before they are only counted: a peer that
 * sends nothing but garbage must not drown the log. */
#define LOGGED_ERRORS 100u

void grain_async_error(grain_t *g, grain_status_t status, const char *message)
{
    pthread_mutex_lock(&g->error_lock);
    unsigned seen = g->async_status == GRAIN_OK ? 0 : 1 + g->async_more;
    if (seen == 0) {
        g->async_status = status;
        snprintf(g->async_message, sizeof g->async_message, "%s", message);
    } else {
        g->async_more++;
    }
    if (seen < LOGGED_ERRORS)
        grain_log(GRAIN_LOG_ERROR, "%s", message);
    else if (seen == LOGGED_ERRORS)
        grain_log(GRAIN_LOG_ERROR, "more errors follow; they are counted, not logged");
    pthread_mutex_unlock(&g->error_lock);
}

/* The command with its article: "a put64", "an add32". */
static const char *cmd_name(uint32_t cmd)
{
    static const char *const names[GRAIN_CMD_COUNT] = {"a ?",      "a put32",  "a put64", "an add32",
                                                       "an add64", "an inc32", "an inc64", "an am",
                                                       "a put64_signal", "a fetch32", "a fetch64", "a reply",
                                                       "a quiet", "a reply_after"};
    return cmd < GRAIN_CMD_COUNT ? names[cmd] : "a ?";
}

static grain_status_t take_device_error(grain_t *g)
{
    grain_dev_err_t *d = g->dev_err;
    uint32_t kind = d->kind;
    if (kind == GRAIN_DEV_ERR_NONE)
        return GRAIN_OK;
    unsigned long long value = d->value, item = d->item;
    const char *cmd = cmd_name(d->cmd);
    int pe = d->pe;
    grain_status_t st;
    switch (kind) {
    case GRAIN_DEV_ERR_BAD_PE:
        st = grain_fail(GRAIN_ERR_BAD_PE,
                        "work-item %llu of a kernel on rank %d sent %s message to PE %lld, but the "
                        "job has %d PEs (0 to %d); the message was not sent",
                        item, g->my_pe, cmd, (long long)value, g->n_pes, g->n_pes - 1);
        break;
    case GRAIN_DEV_ERR_BAD_OFFSET:
        st = grain_fail(GRAIN_ERR_BAD_OFFSET,
                        "work-item %llu of a kernel on rank %d sent %s message to PE %d at heap offset "
                        "%llu, outside the %llu-byte symmetric heap or misaligned (destinations must point "
                        "into grain_malloc memory); it was neither sent nor written",
                        item, g->my_pe, cmd, pe, value, (unsigned long long)g->config.heap_size);
        break;
    case GRAIN_DEV_ERR_BAD_SIGNAL:
        st = grain_fail(GRAIN_ERR_BAD_OFFSET,
                        "work-item %llu of a kernel on rank %d sent a put64_signal message to PE %d whose signal "
                        "word is at heap offset %llu, outside the %llu-byte symmetric heap or not an aligned "
                        "64-bit word; it was neither sent nor written",
                        item, g->my_pe, pe, value, (unsigned long long)g->config.heap_size);
        break;
    case GRAIN_DEV_ERR_BAD_SIGNAL_OP:
        st = grain_fail(GRAIN_ERR_INVALID,
                        "work-item %llu of a kernel on rank %d sent a put64_signal message to PE %d with signal "
                        "operation %llu, which is neither GRAIN_SIGNAL_SET nor GRAIN_SIGNAL_ADD; it was neither "
                        "sent nor written",
                        item, g->my_pe, pe, value);
        break;
    case GRAIN_DEV_ERR_BAD_SIZE: {
        int put = d->cmd == GRAIN_CMD_PUT32;
        st = grain_fail(GRAIN_ERR_INVALID,
                        "a work-group of a kernel on rank %d (work-item %llu) %s %llu bytes %s PE %d with "
                        "grain_%smem, which is not a multiple of 4 (the smallest word); nothing was %s",
                        g->my_pe, item, put ? "put" : "got", value, put ? "to" : "from", pe, put ? "put" : "get",
                        put ? "sent" : "read");
        break;
    }
    case GRAIN_DEV_ERR_BAD_FETCH_PE:
        st = grain_fail(GRAIN_ERR_BAD_PE,
                        "work-item %llu of a kernel on rank %d read (a get or a fetching atomic) a %u-bit word of "
                        "PE %lld, but the job has %d PEs (0 to %d); the lane got 0",
                        item, g->my_pe, 8 * d->cmd, (long long)(int64_t)value, g->n_pes, g->n_pes - 1);
        break;
    case GRAIN_DEV_ERR_BAD_FETCH:
        st = grain_fail(GRAIN_ERR_BAD_OFFSET,
                        "work-item %llu of a kernel on rank %d read (a get or a fetching atomic) a %u-bit word of "
                        "PE %d at heap offset %llu, outside the %llu-byte symmetric heap or misaligned (the word "
                        "must be in grain_malloc memory); the lane got 0 and nothing was written",
                        item, g->my_pe, 8 * d->cmd, pe, value, (unsigned long long)g->config.heap_size);
        break;
    case GRAIN_DEV_ERR_BAD_GET_DEST:
        st = grain_fail(GRAIN_ERR_BAD_OFFSET,
                        "work-item %llu of a kernel on rank %d got a %u-bit word of PE %d without waiting into heap "
                        "offset %llu, outside the %llu-byte symmetric heap or misaligned (a get that does not "
                        "wait stores into this rank's grain_malloc memory); nothing was read",
                        item, g->my_pe, 8 * d->cmd, pe, value, (unsigned long long)g->config.heap_size);
        break;
    case GRAIN_DEV_ERR_BAD_COMBINE:
        st = grain_fail(GRAIN_ERR_INVALID,
                        "a work-group of a kernel on rank %d (work-item %llu) began combined adds of %llu words a "
                        "key, but its GRAIN_COMBINE_DECL holds 1 to %u; none of that call's adds was sent",
                        g->my_pe, item, value, d->cmd);
        break;
    case GRAIN_DEV_ERR_BAD_COMBINE_WORD:
        st = grain_fail(GRAIN_ERR_INVALID,
                        "work-item %llu of a kernel on rank %d added into word %llu of a combined key of %u words "
                        "(to PE %d); that add was not sent",
                        item, g->my_pe, value, d->cmd, pe);
        break;
    case GRAIN_DEV_ERR_BAD_WAIT:
        st = grain_fail(GRAIN_ERR_BAD_OFFSET,
                        "work-item %llu of a kernel on rank %d waited on (or tested) a %u-bit word at heap "
                        "offset %llu, outside the %llu-byte symmetric heap or misaligned (the word must be "
                        "this rank's grain_malloc memory); it did not wait",
                        item, g->my_pe, 8 * d->cmd, value, (unsigned long long)g->config.heap_size);
        break;
    case GRAIN_DEV_ERR_BAD_CMP:
        st = grain_fail(GRAIN_ERR_INVALID,
                        "work-item %llu of a kernel on rank %d waited on (or tested) a %u-bit word with "
                        "comparison %lld, which is none of GRAIN_CMP_EQ, NE, GT, GE, LT and LE; it did not "
                        "wait",
                        item, g->my_pe, 8 * d->cmd, (long long)value);
        break;
    default:
        st = grain_fail(GRAIN_ERR_BAD_HANDLER,
                        "work-item %llu of a kernel on rank %d sent an active message to PE %d for handler "
                        "%llu, which is not registered (grain_am_register); it was neither sent nor run",
                        item, g->my_pe, pe, value);
        break;
    }
    d->kind = GRAIN_DEV_ERR_NONE;
    return st;
}

grain_status_t grain_take_errors(grain_t *g)
{
    grain_status_t st = take_device_error(g);
    pthread_mutex_lock(&g->error_lock);
    grain_status_t async = g->async_status;
    if (async != GRAIN_OK) {
        char all[sizeof g->async_message + 96];
        if (g->async_more > 0)
            snprintf(all, sizeof all, "%s (and %u more errors after it on rank %d, each logged)", g->async_message,
                     g->async_more, g->my_pe);
        else
            snprintf(all, sizeof all, "%s", g->async_message);
        grain_error_keep(all); /* logged where it happened */
        g->async_status = GRAIN_OK;
        g->async_more = 0;
    }
    pthread_mutex_unlock(&g->error_lock);
    return st != GRAIN_OK ? st : async;
}

/* A buffer that will never be applied: reported and counted.  Its
 * messages count as handled, so that quiet reports the error instead of
 * waiting for messages that will never apply. */
static void reject(grain_t *g, uint32_t src, const grain_wire_hdr_t *h, grain_status_t st, const char *why)
{
    grain_async_error(g, st, why);
    uint64_t count = h->magic == GRAIN_WIRE_MAGIC ? h->count : 0;
    atomic_fetch_add_explicit(&g->rejected_from[2 * src], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g->rejected_from[2 * src + 1], count, memory_order_release);
    atomic_fetch_add_explicit(&g->applied_from[src], count, memory_order_release);
}

void grain_transport_rejected(void *arg, uint32_t src, const void *data, size_t len, const char *why)
{
    grain_wire_hdr_t h = {0};
    if (len >= sizeof h)
        memcpy(&h, data, sizeof h);
    reject(arg, src, &h, GRAIN_ERR_BAD_MESSAGE, why);
}

void grain_transport_failed(void *arg, int rank, const char *why)
{
    grain_t *g = arg;
    (void)rank; /* named in `why` */
    grain_async_error(g, GRAIN_ERR_PEER, why);
    snprintf(g->failed_why, sizeof g->failed_why, "%s", why);
    atomic_store_explicit(&g->failed, 1, memory_order_release);
    grain_bell_ring(&g->agg_bell); /* aggregators waiting for a buffer give up */
}

size_t grain_receive_marks_bytes(const grain_t *g)
{
    return grain_wire_mark_words(grain_wire_words(g->config.buffer_size)) * sizeof(uint32_t);
}

void grain_receive_buffer(grain_t *g, uint32_t src, const void *data, size_t len, uint32_t *marks,
                          grain_epoch_t *epoch)
{
    grain_wire_limits_t limits = {(uint32_t)g->n_pes, g->config.heap_size,
                                  (uint32_t)g->config.reply_slots + (uint32_t)g->n_pes, &g->am};
    struct grain_applier *applier = atomic_load_explicit(&g->applier, memory_order_acquire);
    uint32_t *own = NULL;
    if (applier != NULL && marks == NULL && (marks = own = malloc(grain_receive_marks_bytes(g))) == NULL) {
        grain_async_error(g, GRAIN_ERR_NO_MEMORY, "no memory to receive a buffer");
        grain_quiets_applied(g->quiets, epoch);
        return;
    }
    grain_wire_marks_t m = {marks, g->apply_on_device, 0, 0};
    char why[512];
    grain_status_t st = grain_wire_validate(data, len, src, &limits, applier != NULL ? &m : NULL, why, sizeof why);
    grain_wire_hdr_t h = {0};
    if (len >= sizeof h)
        memcpy(&h, data, sizeof h);
    if (st != GRAIN_OK) {
        reject(g, src, &h, st, why);
        grain_quiets_applied(g->quiets, epoch);
        free(own);
        return;
    }
    if (m.staged < h.count) {
        unsigned stray = grain_wire_apply(data, g->heap, &g->am, &g->reply_sink, applier != NULL && g->apply_on_device);
        if (stray > 0) {
            snprintf(why, sizeof why,
                     "a buffer from rank %u held %u replies for reply slots of rank %d that waited for none (a "
                     "reply sent twice, or late); they were dropped",
                     src, stray, g->my_pe);
            grain_async_error(g, GRAIN_ERR_BAD_MESSAGE, why);
        }
        if (g->replier != NULL)
            grain_replier_flush(g->replier); /* a lane waits for each reply */
    }
    if (m.staged > 0 && (st = grain_applier_submit(applier, data, marks, m.staged, m.fetches, epoch)) != GRAIN_OK)
        grain_async_error(g, st, grain_error_message(g));
    else if (m.staged == 0)
        grain_quiets_applied(g->quiets, epoch);
    free(own);
    /* A buffer left to an apply kernel counts once launched (or kept for
     * one), and quiet waits for the kernels. */
    atomic_fetch_add_explicit(&g->applied_from[src], h.count, memory_order_release);
}

int grain_transport_received(void *arg, uint32_t src, const void *data, size_t len)
{
    grain_t *g = arg;
    uint64_t t0 = grain_now_ns();
    g->recv_buffers_from[src]++;
    g->recv_bytes += len;
    uint32_t magic = 0;
    if (len >= sizeof magic)
        memcpy(&magic, data, sizeof magic);
    int held = 0;
    if (magic == GRAIN_PIECE_MAGIC)
        held = grain_region_receive(g, src, data, len);
    else if (g->receivers != NULL) {
        grain_receivers_post(g, src, data, len, grain_quiets_arrived(g->quiets));
        held = 1;
    } else
        grain_receive_buffer(g, src, data, len, g->recv_marks, grain_quiets_arrived(g->quiets));
    g->recv_busy_ns += grain_now_ns() - t0;
    return held;
}

unsigned grain_transport_settle(void *arg, int wait)
{
    grain_t *g = arg;
    /* Stages that wait for the apply kernels in flight go as soon as
     * those are done, though no buffer arrives to take them. */
    struct grain_applier *applier = atomic_load_explicit(&g->applier, memory_order_acquire);
    grain_status_t st = applier != NULL ? grain_applier_progress(applier, g->receivers == NULL) : GRAIN_OK;
    if (st != GRAIN_OK)
        grain_async_error(g, st, grain_error_message(g));
    if (g->replier != NULL)
        grain_replier_flush(g->replier); /* replies that found no free buffer before */
    if (g->n_lent == 0 && g->lent_freed == 0)
        return 0; /* polled often: not worth a clock read */
    uint64_t t0 = grain_now_ns();
    unsigned n = grain_lent_settle(g, wait);
    g->recv_busy_ns += grain_now_ns() - t0;
    return n;
}

void grain_transport_sent(void *arg, void *token)
{
    (void)arg;
    grain_send_token_t *t = token;
    t->sent(t);
}

grain_status_t grain_wait(grain_t *g)
{
    if (g == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_wait of a NULL handle");
    grain_status_t st = g->bops->synchronize(g->backend);
    if (g->kernels_in_flight)
        g->phase_ns[GRAIN_PHASE_COMPUTE] += grain_now_ns() - g->epoch_start_ns;
    g->kernels_in_flight = 0;
    grain_status_t errs = grain_take_errors(g);
    return st != GRAIN_OK ? st : errs;
}

static grain_status_t collective(grain_t *g, grain_coll_t *c)
{
    return g->tops->collective(g->transport, c);
}

/* Whether an error or a rank's failure was recorded: a wait for other ranks
 * stops then, since what it waits for may never come. */
static int gave_up(grain_t *g)
{
    pthread_mutex_lock(&g->error_lock);
    int failed = g->async_status != GRAIN_OK || atomic_load_explicit(&g->failed, memory_order_acquire);
    pthread_mutex_unlock(&g->error_lock);
    return failed;
}

/* Waits until this rank has applied every message and chunk piece the
 * others sent it before they called grain_barrier_all (their counts
 * exchanged here). */
static grain_status_t wait_for_senders(grain_t *g)
{
    size_t n = (size_t)g->n_pes;
    uint64_t *sent = calloc(4 * n, sizeof *sent);
    if (sent == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "grain_quiet: no memory for %zu counters", 4 * n);
    uint64_t *expect = sent + 2 * n; /* per rank: messages, then pieces */
    for (size_t p = 0; p < n; p++) {
        for (unsigned a = 0; a < g->n_aggs; a++)
            sent[2 * p] += g->aggs[a].packer.dest_msgs[p];
        if (g->replier != NULL)
            sent[2 * p] += grain_replier_sent(g->replier, (uint32_t)p);
        sent[2 * p + 1] = atomic_load_explicit(&g->pieces_to[p], memory_order_relaxed);
    }
    grain_coll_t c = {.kind = GRAIN_COLL_ALLTOALL_U64, .buf = sent, .recv = expect, .count = 2};
    grain_status_t st = collective(g, &c);
    unsigned spins = 0;
    for (size_t p = 0; st == GRAIN_OK && p < n; p++) {
        while (atomic_load_explicit(&g->applied_from[p], memory_order_acquire) < expect[2 * p] ||
               atomic_load_explicit(&g->pieces_from[p], memory_order_acquire) < expect[2 * p + 1]) {
            if (gave_up(g))
                break;
            grain_wait_a_little(&spins);
        }
    }
    free(sent);
    return st;
}

/*
 * The host's quiet requests, one to every rank (this one too): each is
 * answered into this rank's host reply slot for that rank (after the
 * kernels' slots) once every buffer that reached the rank before it is
 * applied (runtime/messages/quiets.h).  The slots' generation is the number of
 * earlier host quiets.
 */
static grain_status_t ask_every_rank(grain_t *g)
{
    uint32_t n = (uint32_t)g->n_pes, first = (uint32_t)g->config.reply_slots, gen = g->host_quiets++;
    for (uint32_t pe = 0; pe < n; pe++) {
        uint64_t ticket = GRAIN_TICKET(0, first + pe, gen);
        if (pe != (uint32_t)g->my_pe) {
            grain_replier_ask_quiet(g->replier, pe, ticket);
            continue;
        }
        grain_status_t st = grain_quiets_request(g->quiets, pe, GRAIN_CMD_QUIET | ticket);
        if (st != GRAIN_OK)
            return st;
    }
    if (g->replier != NULL)
        grain_replier_flush(g->replier); /* or the network thread's next settle does */
    struct grain_applier *applier = atomic_load_explicit(&g->applier, memory_order_acquire);
    unsigned spins = 0;
    for (uint32_t pe = 0; pe < n; pe++) {
        _Atomic uint64_t *tag = (_Atomic uint64_t *)&g->replies[2 * (first + pe) + 1];
        while ((uint32_t)atomic_load_explicit(tag, memory_order_acquire) != 2u * gen + 1u) {
            if (gave_up(g))
                return GRAIN_OK; /* the error or failure is what quiet reports */
            /* The own rank's answer waits for its apply stages, and with one
             * rank no network thread moves them on (test_device hung). */
            grain_status_t st = applier != NULL ? grain_applier_progress(applier, g->receivers == NULL) : GRAIN_OK;
            if (st != GRAIN_OK)
                return st;
            grain_wait_a_little(&spins);
        }
        atomic_store_explicit(tag, 2u * gen + 2u, memory_order_release);
    }
    return GRAIN_OK;
}

/* What every quiet says once a rank failed, whatever else went wrong
 * after it: the failure, and what this rank lost to it. */
static grain_status_t peer_failure(grain_t *g)
{
    uint64_t lost = 0;
    for (unsigned a = 0; a < g->n_aggs; a++)
        lost += g->aggs[a].lost_msgs; /* read after the drain's handshake */
    char all[sizeof g->failed_why + 96];
    int n = snprintf(all, sizeof all, "%s", g->failed_why);
    if (lost > 0)
        snprintf(all + n, sizeof all - (size_t)n, "; rank %d dropped %llu messages it could no longer send", g->my_pe,
                 (unsigned long long)lost);
    grain_error_keep(all); /* logged where it was found */
    return GRAIN_ERR_PEER;
}

/* The part of both completions that involves only this rank: its kernels
 * end, its aggregators hand every message to the transport, and its puts
 * land.  The phases are accounted here. */
static grain_status_t finish_own(grain_t *g, uint64_t *flushed_p)
{
    grain_status_t st = grain_wait(g);
    uint64_t kernels_done = grain_now_ns();
    uint64_t drained = grain_aggregators_drain(g), flushed = grain_now_ns();
    /* Aggregators that emptied the queue while the kernels ran cost nothing. */
    drained = drained < kernels_done ? kernels_done : drained > flushed ? flushed : drained;
    g->phase_ns[GRAIN_PHASE_QUEUE] += drained - kernels_done;
    g->phase_ns[GRAIN_PHASE_AGGREGATION] += flushed - drained;
    /* Puts land unannounced: their writer waits for them. */
    grain_status_t pst = g->heap_puts ? g->tops->put_wait(g->transport) : GRAIN_OK;
    *flushed_p = flushed;
    return st != GRAIN_OK ? st : pst;
}

/* The end of both: the first error, or the failure of a rank. */
static grain_status_t finish(grain_t *g, grain_status_t st, uint64_t flushed)
{
    g->phase_ns[GRAIN_PHASE_NETWORK] += grain_now_ns() - flushed;
    grain_status_t errs = grain_take_errors(g);
    if (atomic_load_explicit(&g->failed, memory_order_acquire))
        return peer_failure(g);
    return st != GRAIN_OK ? st : errs;
}

/* Gets that do not wait sent since the last host quiet; read after the
 * drain's handshake. */
static uint64_t gets_nbi(const grain_t *g)
{
    uint64_t n = 0;
    for (unsigned a = 0; a < g->n_aggs; a++)
        n += g->aggs[a].gets_nbi;
    return n;
}

grain_status_t grain_quiet(grain_t *g)
{
    if (g == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_quiet of a NULL handle");
    uint64_t flushed;
    grain_status_t st = finish_own(g, &flushed);
    g->gets_nbi_done = gets_nbi(g);
    grain_status_t ast = ask_every_rank(g);
    return finish(g, st != GRAIN_OK ? st : ast, flushed);
}

grain_status_t grain_barrier_all(grain_t *g)
{
    if (g == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_barrier_all of a NULL handle");
    uint64_t flushed;
    grain_status_t st = finish_own(g, &flushed);
    grain_status_t cst = g->n_pes > 1 ? wait_for_senders(g) : GRAIN_OK;
    /* The words of this rank's gets that do not wait come back only once
     * their requests are applied, after the counts above were taken: a
     * quiet's round trip waits for them (the answers wait behind them). */
    uint64_t nbi = gets_nbi(g);
    if (cst == GRAIN_OK && nbi != g->gets_nbi_done) {
        g->gets_nbi_done = nbi;
        cst = ask_every_rank(g);
    }
    /* One rank too: its own active messages may have gone to apply kernels. */
    struct grain_applier *applier = atomic_load_explicit(&g->applier, memory_order_acquire);
    if (cst == GRAIN_OK && applier != NULL)
        cst = grain_applier_wait(applier);
    if (cst == GRAIN_OK)
        cst = grain_ranks_barrier(g);
    return finish(g, st != GRAIN_OK ? st : cst, flushed);
}

grain_status_t grain_ranks_barrier(grain_t *g)
{
    grain_coll_t barrier = {.kind = GRAIN_COLL_BARRIER};
    return g->n_pes > 1 ? collective(g, &barrier) : GRAIN_OK;
}

grain_status_t grain_barrier(grain_t *g)
{
    return grain_barrier_all(g);
}

grain_status_t grain_allreduce(grain_t *g, void *buf, size_t count, grain_dtype_t dtype, grain_op_t op)
{
    if (g == NULL || (buf == NULL && count > 0))
        return grain_fail(GRAIN_ERR_INVALID, "grain_allreduce needs a handle and a buffer");
    grain_coll_t c = {.kind = GRAIN_COLL_ALLREDUCE, .buf = buf, .count = count, .dtype = dtype, .op = op};
    return collective(g, &c);
}

/* Names the first pair over the limit: this rank's sizes for the others
 * (out[]) or another rank's for this one (in[]). */
static grain_status_t alltoallv_overflow(const grain_t *g, const uint64_t *out, const uint64_t *in, size_t max)
{
    for (int r = 0; r < g->n_pes; r++) {
        if (out[r] == UINT64_MAX)
            return grain_fail(GRAIN_ERR_INVALID, "grain_alltoallv: rank %d had more than %zu bytes for rank %d",
                              g->my_pe, max, r);
        if (in[r] == UINT64_MAX)
            return grain_fail(GRAIN_ERR_INVALID, "grain_alltoallv: rank %d had more than %zu bytes for rank %d",
                              r, max, g->my_pe);
    }
    return GRAIN_OK;
}

grain_status_t grain_alltoallv(grain_t *g, const void *send, const size_t *send_bytes, size_t max_bytes,
                               void *recv, size_t *recv_bytes)
{
    if (g == NULL || send_bytes == NULL || recv_bytes == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_alltoallv needs a handle and both size arrays");
    size_t n = (size_t)g->n_pes;
    /* MPI counts and displacements are ints. */
    if (max_bytes > (size_t)INT_MAX / n)
        return grain_fail(GRAIN_ERR_INVALID, "grain_alltoallv: %zu ranks of %zu bytes exceed %d bytes", n,
                          max_bytes, INT_MAX);
    uint64_t *out = calloc(2 * n, sizeof *out);
    int *ints = calloc(4 * n, sizeof *ints);
    if (out == NULL || ints == NULL) {
        free(out);
        free(ints);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "grain_alltoallv: no memory for %zu ranks' sizes", n);
    }
    uint64_t *in = out + n;
    for (size_t r = 0; r < n; r++)
        out[r] = send_bytes[r] > max_bytes ? UINT64_MAX : send_bytes[r];
    grain_coll_t sizes = {.kind = GRAIN_COLL_ALLTOALL_U64, .buf = out, .recv = in, .count = 1};
    grain_status_t st = collective(g, &sizes);
    if (st == GRAIN_OK) {
        int *sc = ints, *sd = ints + n, *rc = ints + 2 * n, *rd = ints + 3 * n;
        size_t at = 0, got = 0;
        for (size_t r = 0; r < n; r++) {
            sd[r] = (int)at;
            sc[r] = out[r] == UINT64_MAX ? 0 : (int)out[r];
            at += send_bytes[r];
            rd[r] = (int)got;
            rc[r] = in[r] == UINT64_MAX ? 0 : (int)in[r];
            recv_bytes[r] = (size_t)rc[r];
            got += recv_bytes[r];
        }
        grain_coll_t data = {.kind = GRAIN_COLL_ALLTOALLV, .buf = (void *)send, .recv = recv,
                             .send_counts = sc, .send_displs = sd, .recv_counts = rc, .recv_displs = rd};
        st = collective(g, &data);
    }
    if (st == GRAIN_OK)
        st = alltoallv_overflow(g, out, in, max_bytes);
    free(out);
    free(ints);
    return st;
}

grain_status_t grain_broadcast(grain_t *g, void *buf, size_t size, int root)
{
    if (g == NULL || (buf == NULL && size > 0) || root < 0 || root >= g->n_pes)
        return grain_fail(GRAIN_ERR_INVALID, "grain_broadcast needs a handle, a buffer and a root below %d",
                          g ? g->n_pes : 0);
    grain_coll_t c = {.kind = GRAIN_COLL_BROADCAST, .buf = buf, .count = size, .root = root};
    return collective(g, &c);
}
