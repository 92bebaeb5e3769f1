/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Aggregator threads (docs/design.md, send path 4): drain queue slots, apply the
 * messages addressed to this rank, pack the others per destination and hand
 * full or expired buffers to the transport.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/messages/queue_consumer.h"
#include "runtime/messages/quiets.h"
#include "services/backoff.h"
#include "services/log.h"
#include "transports/wire.h"

/* Slots between two looks at the clock while the queue is busy. */
#define TIMEOUT_CHECK_SLOTS 16u

static void send_buffer(void *arg, grain_outbuf_t *buf)
{
    grain_aggregator_t *a = arg;
    grain_t *g = a->grain;
    if (buf->dest == (uint32_t)g->my_pe) { /* active messages for an apply kernel here (dispatch) */
        grain_receive_buffer(g, buf->dest, buf->data, buf->used, NULL, grain_quiets_arrived(g->quiets));
        grain_packer_release(buf);
        return;
    }
    grain_status_t st = g->tops->send(g->transport, buf->dest, buf->data, buf->used, &buf->token);
    if (st != GRAIN_OK) {
        /* Not sent, so not counted: quiet must not wait for these.  A
         * failed rank was reported once, by the transport. */
        a->packer.dest_msgs[buf->dest] -= buf->count;
        if (st == GRAIN_ERR_PEER)
            a->lost_msgs += buf->count;
        else
            grain_async_error(g, st, grain_error_message(g));
        grain_packer_release(buf);
    }
}

/* The error paths of dispatch, kept out of its frame: it runs per message. */
static void __attribute__((noinline, cold)) reject(grain_aggregator_t *a, grain_status_t st, uint32_t cmd,
                                                    uint32_t pe)
{
    char why[160];
    if (st == GRAIN_ERR_BAD_MESSAGE)
        snprintf(why, sizeof why, "a queue slot holds a message with command %u for PE %u (of %d)", cmd, pe,
                 a->grain->n_pes);
    else
        snprintf(why, sizeof why, "a %u-command message to PE %u has an offset the wire cannot carry", cmd, pe);
    grain_async_error(a->grain, st, why);
}

/* A work-group's quiet request to its own rank: answered once what this
 * rank's apply kernels hold for it is applied (its other messages to itself
 * are applied by now, by it or by this thread).  Such active messages wait
 * in this rank's own buffer: it goes first. */
static void __attribute__((noinline)) quiet_self(grain_aggregator_t *a, grain_u64 w1)
{
    grain_t *g = a->grain;
    grain_packer_flush_dest(&a->packer, (uint32_t)g->my_pe, GRAIN_FLUSH_SCOPE);
    grain_status_t st = grain_quiets_request(g->quiets, (uint32_t)g->my_pe, GRAIN_CMD_QUIET | w1 << 8);
    if (st != GRAIN_OK)
        grain_async_error(g, st, grain_error_message(g));
}

/* `sig` and `sig_value`: a PUT's signal, or a fetch's value compared and
 * reply ticket, as on the wire (0 for the others). */
GRAIN_PACKER_INLINE void dispatch(grain_aggregator_t *a, grain_u64 hdr, grain_u64 w1, grain_u64 w2, grain_u64 sig,
                                  grain_u64 sig_value, uint64_t now)
{
    grain_t *g = a->grain;
    uint32_t pe = GRAIN_HDR_PE(hdr), cmd = GRAIN_HDR_CMD(hdr);
    /* The device checked the message; a slot that fails here was corrupted. */
    if (pe >= (uint32_t)g->n_pes || grain_wire_msg_size(cmd) == 0) {
        reject(a, GRAIN_ERR_BAD_MESSAGE, cmd, pe);
        return;
    }
    a->cmd_msgs[cmd]++;
    if (pe == (uint32_t)g->my_pe) {
        a->local_msgs++;
        if (__builtin_expect(cmd == GRAIN_CMD_QUIET, 0)) {
            quiet_self(a, w1);
            return;
        }
        /* Every current backend lets host threads write the heap.  A device
         * handler that the sending program does not define runs in an apply
         * kernel, packed like a remote message and handed back to this rank. */
        if (cmd != GRAIN_CMD_AM || !grain_am_on_device(&g->am, GRAIN_HDR_HANDLER(hdr))) {
            grain_apply_one(g->heap, &g->am, pe, hdr, w1, w2, sig, sig_value);
            return;
        }
    } else {
        a->remote_msgs++;
    }
    grain_status_t st = grain_packer_append(&a->packer, pe, hdr, w1, w2, sig, sig_value, now);
    if (st == GRAIN_ERR_PEER)
        a->lost_msgs++;
    else if (st != GRAIN_OK)
        reject(a, GRAIN_ERR_BAD_OFFSET, cmd, pe);
    else if (a->scope == GRAIN_AGGREGATE_NONE)
        grain_packer_flush_dest(&a->packer, pe, GRAIN_FLUSH_SCOPE);
}

#define WORDS_PER_LINE 8u
/* How far ahead of the message being dispatched: lines enough to cover the
 * host's memory latency at the rate of one message every few nanoseconds. */
#define PREFETCH_WORDS (8u * WORDS_PER_LINE)

/* Rows `from` to `to` (not included) at column `c`. */
static inline void prefetch_rows(const grain_u64 *p, grain_u32 width, grain_u32 c, grain_u32 from, grain_u32 to)
{
    for (grain_u32 r = from; r < to; r++)
        __builtin_prefetch(p + (size_t)r * width + c, 0, 0);
}

/* The first `rows` rows' line PREFETCH_WORDS ahead of column `c` of a slot
 * of `count`, once a line: where `c` starts one. */
static inline void prefetch_ahead(const grain_u64 *p, grain_u32 width, size_t c, size_t count, grain_u32 rows)
{
    if (c % WORDS_PER_LINE == 0 && c + PREFETCH_WORDS < count)
        prefetch_rows(p, width, (grain_u32)(c + PREFETCH_WORDS), 0, rows);
}

/* The rows every message is read from: header and offset. */
#define ADDRESS_ROWS 2u
_Static_assert(ADDRESS_ROWS + 1u == GRAIN_MSG_ROWS, "the value row is the last");

/* Column `c` of a slot of `count` messages, a message that takes two
 * columns, the second column of one (read with its first), or a quiet
 * request (held until the slot is done). */
static void __attribute__((noinline)) dispatch_wide(grain_aggregator_t *a, const grain_u64 *p, grain_u32 width,
                                                    grain_u32 count, grain_u32 c, uint64_t now)
{
    grain_u64 hdr = p[c];
    uint32_t cmd = GRAIN_HDR_CMD(hdr), more = GRAIN_HDR_HANDLER(hdr);
    if (cmd == GRAIN_CMD_MORE)
        return;
    if (cmd == GRAIN_CMD_QUIET) {
        a->quiets[2 * a->n_quiets] = hdr;
        a->quiets[2 * a->n_quiets++ + 1] = p[width + c];
        return;
    }
    int fetch = cmd == GRAIN_CMD_FETCH32 || cmd == GRAIN_CMD_FETCH64;
    /* The device wrote both columns; a slot that disagrees was corrupted. */
    if ((cmd != GRAIN_CMD_PUT64_SIGNAL && !fetch) || more >= count || GRAIN_HDR_CMD(p[more]) != GRAIN_CMD_MORE) {
        reject(a, GRAIN_ERR_BAD_MESSAGE, cmd, GRAIN_HDR_PE(hdr));
        return;
    }
    /* The second column's rows: a fetch's value compared and reply ticket,
     * as the wire carries them; a put's signal offset and value. */
    grain_u64 second = p[width + more], third = p[2 * width + more];
    if (fetch) {
        if (GRAIN_HDR_PE(hdr) == (uint32_t)a->grain->my_pe) { /* the sender applies those itself */
            reject(a, GRAIN_ERR_BAD_MESSAGE, cmd, GRAIN_HDR_PE(hdr));
            return;
        }
        dispatch(a, hdr, p[width + c], p[2 * width + c], second, third, now);
        /* No lane waits for a get that does not wait: its buffer may fill. */
        int nbi = GRAIN_TICKET_OP(third) == GRAIN_AMO_GET_NBI;
        a->awaited |= !nbi;
        a->gets_nbi += (uint64_t)nbi;
        return;
    }
    if (second > GRAIN_WIRE_MAX_OFFSET) {
        reject(a, GRAIN_ERR_BAD_OFFSET, cmd, GRAIN_HDR_PE(hdr));
        return;
    }
    dispatch(a, hdr, p[width + c], p[2 * width + c], GRAIN_HDR_HANDLER(p[more]) | second << 8, third, now);
}

/* A message of a slot that pack_slot does not pack itself. */
static void __attribute__((noinline)) dispatch_column(grain_aggregator_t *a, const grain_u64 *p, grain_u32 width,
                                                      grain_u32 count, grain_u32 c, uint64_t now)
{
    uint32_t cmd = GRAIN_HDR_CMD(p[c]);
    if (cmd >= GRAIN_CMD_PUT64_SIGNAL)
        dispatch_wide(a, p, width, count, c, now);
    else
        dispatch(a, p[c], p[width + c], grain_cmd_valueless(cmd) ? 0 : p[2 * width + c], 0, 0, now);
}

/* How many messages from column `c` on repeat its header `hdr`, c's own
 * included: a line of headers at a time while every one repeats it (a
 * slot to one rank: all of them), as an OR of differences that the
 * compiler computes several words at a time, the lines ahead of the rows
 * asked for once a line; then one by one. */
static inline size_t stretch_length(const grain_u64 *p, grain_u32 width, size_t c, size_t count, grain_u32 rows,
                                    grain_u64 hdr)
{
    size_t n = 1;
    for (; c + n + WORDS_PER_LINE <= count; n += WORDS_PER_LINE) {
        grain_u64 other = 0;
        for (unsigned j = 0; j < WORDS_PER_LINE; j++)
            other |= p[c + n + j] ^ hdr;
        if (other != 0)
            break;
        if (c + n + PREFETCH_WORDS < count)
            prefetch_rows(p, width, (grain_u32)(c + n + PREFETCH_WORDS), 0, rows);
    }
    for (; c + n < count && p[c + n] == hdr; n++)
        prefetch_ahead(p, width, c + n, count, rows);
    return n;
}

/* The messages of a slot, PUTs, adds and increments to other ranks (what
 * a work-group's sends usually are) on the short path: only what their run
 * needs (docs/receive-path.md, "Runs"), since the aggregators' packing is
 * the transport path's limit.  The others dispatch, which checks and counts
 * each kind, and refuses an offset the wire cannot carry.  With `stretches`,
 * the messages that follow one with the same header (destination and
 * command) join it, and the run's state stays in registers through them;
 * without, each message is packed alone, which costs less where
 * destinations alternate.  Inlined into one function for each. */
static inline __attribute__((always_inline)) void pack_columns(grain_aggregator_t *a, const grain_u64 *p,
                                                               grain_u32 width, grain_u32 count, grain_u32 rows,
                                                               uint64_t now, int stretches)
{
    const grain_u64 *hdrs = p, *offsets = p + width, *values = p + 2 * (size_t)width;
    uint32_t me = (uint32_t)a->grain->my_pe, n_pes = (uint32_t)a->grain->n_pes;
    uint64_t dispatched = 0, lost = 0;
    /* The rows' lines ahead, a line each time the loop, or a stretch's
     * scan, reaches one (pack_slot asked for the first ones). */
    for (size_t c = 0; c < count;) {
        prefetch_ahead(p, width, c, count, rows);
        grain_u64 hdr = hdrs[c];
        uint32_t pe = GRAIN_HDR_PE(hdr), cmd = GRAIN_HDR_CMD(hdr);
        if (!__builtin_expect(grain_cmd_runs(cmd) && pe < n_pes && pe != me && offsets[c] <= GRAIN_WIRE_MAX_OFFSET,
                              1)) {
            dispatch_column(a, p, width, count, (grain_u32)c++, now);
            dispatched++;
            continue;
        }
        if (!stretches) { /* its offset fits: it is taken */
            grain_packer_append_stretch(&a->packer, pe, cmd, offsets + c, values + c, 1, now, &lost);
            a->cmd_msgs[cmd]++;
            c++;
            continue;
        }
        size_t n = stretch_length(p, width, c, count, rows, hdr);
        /* At least the first, whose offset fits; an offset that stops the
         * stretch dispatches next. */
        size_t took = grain_packer_append_stretch(&a->packer, pe, cmd, offsets + c, values + c, n, now, &lost);
        a->cmd_msgs[cmd] += took;
        c += took;
    }
    a->remote_msgs += count - dispatched;
    a->lost_msgs += lost;
}

static void __attribute__((noinline)) pack_messages(grain_aggregator_t *a, const grain_u64 *p, grain_u32 width,
                                                    grain_u32 count, grain_u32 rows, uint64_t now)
{
    pack_columns(a, p, width, count, rows, now, 0);
}

static void __attribute__((noinline)) pack_stretches(grain_aggregator_t *a, const grain_u64 *p, grain_u32 width,
                                                     grain_u32 count, grain_u32 rows, uint64_t now)
{
    pack_columns(a, p, width, count, rows, now, 1);
}

/* Every message of a slot: stretch by stretch where its first four
 * messages share their header (every slot between two ranks, one in eight
 * where two destinations are taken at random), else one by one.  A device
 * wrote the slot over the host link, so no cache of this core holds it, and
 * the hardware prefetcher learns each of the three rows only after misses of
 * its own: the first lines of the header and offset rows are asked for
 * before the look, which reads no other line, and the value row's once the
 * first header says it was written (grain_cmd_rows: fetching an unwritten
 * row's lines would only take memory bandwidth from the rows read; a slot
 * that mixes kinds waits for the lines not asked for).  (Counting the
 * repeats of the whole header row first made the aggregators wait for lines
 * no prefetch had reached: from a GPU kernel to eight destinations, four
 * packed 0.8x as fast, aggregator_bench --gpu on two H100s.) */
static void pack_slot(grain_aggregator_t *a, const grain_u64 *p, grain_u32 width, grain_u32 count, uint64_t now)
{
    if (a->scope == GRAIN_AGGREGATE_NONE) { /* a buffer a message: the short path never flushes */
        for (grain_u32 c = 0; c < count; c++)
            dispatch_column(a, p, width, count, c, now);
        return;
    }
    for (grain_u32 c = 0; c < PREFETCH_WORDS && c < count; c += WORDS_PER_LINE)
        prefetch_rows(p, width, c, 0, ADDRESS_ROWS);
    grain_u32 rows = grain_cmd_rows(GRAIN_HDR_CMD(p[0]));
    for (grain_u32 c = 0; c < PREFETCH_WORDS && c < count; c += WORDS_PER_LINE)
        prefetch_rows(p, width, c, ADDRESS_ROWS, rows);
    if (count >= 4 && p[0] == p[1] && p[1] == p[2] && p[2] == p[3])
        pack_stretches(a, p, width, count, rows, now);
    else
        pack_messages(a, p, width, count, rows, now);
}

/* Flushes what this thread dispatched if a quiet request asked it to
 * (settle_others). */
static void ack_quiets(grain_aggregator_t *a)
{
    uint64_t epoch = atomic_load_explicit(&a->grain->quiet_epoch, memory_order_acquire);
    if (epoch != atomic_load_explicit(&a->quiet_ack, memory_order_relaxed)) {
        grain_packer_flush_all(&a->packer, GRAIN_FLUSH_QUIET);
        atomic_store_explicit(&a->quiet_ack, epoch, memory_order_release);
    }
}

/*
 * A quiet request must leave after every buffer that holds its work-group's
 * earlier messages to the same rank.  Under the ring protocol one thread
 * takes a work-group's slots in order, so they are in this thread's earlier
 * buffers or ahead of the request in the same one.  Under the paper
 * protocol any thread takes any slot: every other thread flushes what it
 * dispatched (quiet_ack), which holds every slot before this one, since
 * they were all taken before it and a thread acknowledges only between
 * slots.  This thread has handed its slot back (the request was held), and
 * acknowledges others' requests while it waits, so that requests waiting
 * for each other, or a producer waiting for this slot, close no cycle.
 */
static void settle_others(grain_aggregator_t *a)
{
    grain_t *g = a->grain;
    if (a->reader.q->geom.protocol != GRAIN_QUEUE_PAPER || g->n_aggs == 1)
        return;
    uint64_t epoch = atomic_fetch_add_explicit(&g->quiet_epoch, 1, memory_order_acq_rel) + 1;
    grain_bell_ring(&g->agg_bell);
    unsigned spins = 0;
    for (unsigned i = 0; i < g->n_aggs; i++) {
        while (atomic_load_explicit(&g->aggs[i].quiet_ack, memory_order_acquire) < epoch &&
               !atomic_load_explicit(&g->stop, memory_order_acquire) &&
               !atomic_load_explicit(&g->failed, memory_order_acquire)) {
            ack_quiets(a);
            grain_wait_a_little(&spins);
        }
    }
}

/* The quiet requests of the slot just done. */
static void send_quiets(grain_aggregator_t *a, uint64_t now)
{
    settle_others(a);
    for (unsigned i = 0; i < a->n_quiets; i++)
        dispatch(a, a->quiets[2 * i], a->quiets[2 * i + 1], 0, 0, 0, now);
    a->n_quiets = 0;
    a->awaited = 1;
}

/* Processes one slot if there is one to take; returns whether it did. */
static int consume_slot(grain_aggregator_t *a, uint64_t *now)
{
    grain_queue_t *q = a->reader.q;
    grain_queue_slot_t s = {0, 0};
    if (!grain_queue_take(&a->reader, &s))
        return 0;
    /* A paper-queue ticket may be claimed before its producer publishes it,
     * and that producer may be waiting for the previous lap's consumer: keep
     * flushing meanwhile. */
    grain_backoff_t backoff = {0};
    while (!grain_queue_is_full(q, s)) {
        grain_backoff_idle(&backoff);
        *now = grain_now_ns();
        grain_packer_flush_expired(&a->packer, *now);
    }
    pack_slot(a, grain_queue_slot_payload(q, s), q->geom.width, grain_queue_count(q, s), *now);
    grain_queue_done(&a->reader, s);
    if (a->n_quiets > 0)
        send_quiets(a, *now);
    /* A lane waits for the reply to each fetch or quiet: they go with the
     * slot's other messages, not after the flush timeout. */
    if (a->scope == GRAIN_AGGREGATE_WG || a->awaited)
        grain_packer_flush_all(&a->packer, GRAIN_FLUSH_SCOPE);
    a->awaited = 0;
    ack_quiets(a);
    a->slots++;
    return 1;
}

static void *aggregator_thread(void *arg)
{
    grain_aggregator_t *a = arg;
    grain_t *g = a->grain;
    grain_backoff_t backoff = {0};
    uint64_t now = grain_now_ns(), busy_since = 0;
    unsigned since_clock = 0;
    while (!atomic_load_explicit(&g->stop, memory_order_acquire)) {
        uint64_t seen = grain_bell_seen(&g->agg_bell);
        /* Idle polls read the clock: a streak then counts its first slot. */
        uint64_t poll_start = busy_since == 0 ? grain_now_ns() : 0;
        int took = consume_slot(a, &now);
        if (took) {
            grain_backoff_reset(&backoff);
            if (busy_since == 0)
                busy_since = poll_start;
            if (++since_clock < TIMEOUT_CHECK_SLOTS)
                continue;
        }
        since_clock = 0;
        now = grain_now_ns();
        if (!took && busy_since != 0) {
            a->busy_ns += now - busy_since;
            busy_since = 0;
        }
        grain_packer_flush_expired(&a->packer, now);
        uint64_t epoch = atomic_load_explicit(&g->flush_epoch, memory_order_acquire);
        if (epoch != atomic_load_explicit(&a->flush_ack, memory_order_relaxed)) {
            /* No kernel runs during a drain: once nothing is left to take,
             * everything this thread will see has been dispatched. */
            while (consume_slot(a, &now)) {
            }
            a->drained_at_ns = grain_now_ns();
            grain_packer_flush_all(&a->packer, GRAIN_FLUSH_QUIET);
            if (busy_since != 0) { /* the quiet that reads busy_ns sees this streak too */
                a->busy_ns += grain_now_ns() - busy_since;
                busy_since = 0;
            }
            atomic_store_explicit(&a->flush_ack, epoch, memory_order_release);
        }
        ack_quiets(a);
        grain_backoff_idle_bell(&backoff, &g->agg_bell, seen);
    }
    return NULL;
}

grain_status_t grain_aggregators_start(grain_t *g)
{
    g->n_aggs = (unsigned)g->config.aggregators;
    g->aggs = aligned_alloc(_Alignof(grain_aggregator_t), g->n_aggs * sizeof *g->aggs);
    if (g->aggs == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for %u aggregators", g->n_aggs);
    memset(g->aggs, 0, g->n_aggs * sizeof *g->aggs);
    grain_bell_init(&g->agg_bell);
    for (unsigned i = 0; i < g->n_aggs; i++) {
        grain_aggregator_t *a = &g->aggs[i];
        a->grain = g;
        a->index = i;
        a->scope = grain_config_aggregation(&g->config);
        a->quiets = malloc(2 * g->queue.shared->geom.width * sizeof *a->quiets);
        if (a->quiets == NULL || !grain_queue_reader_init(&a->reader, g->queue.shared, i, g->n_aggs)) {
            free(a->quiets);
            g->n_aggs = i;
            grain_aggregators_stop(g);
            return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for aggregator %u's queue reader", i);
        }
        grain_status_t st = grain_packer_init(&a->packer, (uint32_t)g->my_pe, (uint32_t)g->n_pes,
                                              g->config.buffer_size, (uint32_t)g->config.buffers_per_dest,
                                              g->config.flush_timeout_us * 1000u, g->next_seq, g->send_order,
                                              send_buffer, a);
        if (st != GRAIN_OK) {
            grain_queue_reader_destroy(&a->reader);
            free(a->quiets);
            g->n_aggs = i;
            grain_aggregators_stop(g);
            return st;
        }
        a->packer.abandon = &g->failed;
        if (pthread_create(&a->thread, NULL, aggregator_thread, a) != 0) {
            grain_packer_destroy(&a->packer);
            grain_queue_reader_destroy(&a->reader);
            free(a->quiets);
            g->n_aggs = i;
            grain_aggregators_stop(g);
            return grain_fail(GRAIN_ERR_NO_MEMORY, "cannot start aggregator thread %u", i);
        }
    }
    return GRAIN_OK;
}

void grain_aggregators_stop(grain_t *g)
{
    atomic_store_explicit(&g->stop, 1, memory_order_release);
    grain_bell_ring(&g->agg_bell);
    for (unsigned i = 0; i < g->n_aggs; i++) {
        pthread_join(g->aggs[i].thread, NULL);
        grain_packer_destroy(&g->aggs[i].packer);
        grain_queue_reader_destroy(&g->aggs[i].reader);
        free(g->aggs[i].quiets);
    }
    free(g->aggs);
    g->aggs = NULL;
    g->n_aggs = 0;
    grain_bell_destroy(&g->agg_bell);
}

uint64_t grain_aggregators_drain(grain_t *g)
{
    unsigned spins = 0;
    uint64_t epoch = atomic_fetch_add_explicit(&g->flush_epoch, 1, memory_order_acq_rel) + 1, drained = 0;
    grain_bell_ring(&g->agg_bell);
    for (unsigned i = 0; i < g->n_aggs; i++) {
        while (atomic_load_explicit(&g->aggs[i].flush_ack, memory_order_acquire) < epoch)
            grain_wait_a_little(&spins);
        if (g->aggs[i].drained_at_ns > drained)
            drained = g->aggs[i].drained_at_ns;
    }
    return drained;
}
