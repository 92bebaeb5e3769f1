/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Statistics of every rank (docs/design.md "Errors, configuration, observability"),
 * gathered collectively so that one rank can print the whole job.  Read
 * after a quiet: the aggregators publish their counters in its handshake.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/messages/apply.h"
#include "runtime/messages/recv_threads.h"
#include "services/log.h"

enum {
    S_SLOTS, S_FULL_WAITS, S_LOCAL, S_REMOTE, S_DIRECT, S_BUFFERS, S_BYTES, S_FLUSH_FULL, S_FLUSH_TIMEOUT,
    S_FLUSH_QUIET, S_FLUSH_SCOPE, S_BUFFER_WAITS, S_RECV_BUFFERS, S_RECV_BYTES, S_APPLY_KERNELS, S_APPLY_BUFFERS,
    S_APPLY_KEPT, S_APPLY_OVERLAPPED, S_APPLY_AGENTS, S_APPLY_AGENT_BUFFERS, S_BUSY_NS, S_BUSY_MAX_NS, S_WAIT_NS,
    S_SEND_NS, S_RECV_BUSY_NS, S_PROGRESS_NS, S_RECV_THREADS, S_RECV_THREADS_BUSY_NS, S_RECV_THREAD_MAX_BUFFERS,
    S_SCHED0, S_EP0 = S_SCHED0 + GRAIN_SCHED_COUNTS, S_PHASE0 = S_EP0 + GRAIN_EP_COUNTS,
    S_CMD0 = S_PHASE0 + GRAIN_PHASE_COUNT,
    S_FIXED = S_CMD0 + GRAIN_CMD_COUNT /* then per rank: msgs and bytes to it, buffers and msgs rejected from it */
};

static const char *const cmd_names[GRAIN_CMD_COUNT] = {NULL,    "put32", "put64",        "add32",   "add64",
                                                       "inc32", "inc64", "am",           "put64_signal",
                                                       "fetch32", "fetch64", "reply", "quiet",   "reply_after"};

/* rows[n_pes][width]: every rank's counters, after an allreduce; NULL (and
 * a warning) when they could not be gathered. */
static uint64_t *gather(grain_t *g, size_t *width_p)
{
    size_t n = (size_t)g->n_pes, width = S_FIXED + 4 * n;
    uint64_t *rows = calloc(n * width, sizeof *rows);
    if (rows == NULL) {
        grain_warn("no memory to gather statistics");
        return NULL;
    }
    uint64_t *r = rows + (size_t)g->my_pe * width;
    grain_ring_prod_t prod = {0};
    if (grain_queue_counters(g, &g->queue, &prod) != GRAIN_OK)
        grain_warn("could not read the queue's producer counters: %s", grain_error_message(g));
    r[S_FULL_WAITS] = prod.full_waits;
    r[S_LOCAL] = prod.in_place;
    r[S_DIRECT] = prod.direct;
    for (unsigned a = 0; a < g->n_aggs; a++) {
        grain_aggregator_t *agg = &g->aggs[a];
        const grain_packer_stats_t *ps = &agg->packer.stats;
        r[S_SLOTS] += agg->slots;
        r[S_LOCAL] += agg->local_msgs;
        r[S_REMOTE] += agg->remote_msgs;
        r[S_BUFFERS] += ps->buffers;
        r[S_BYTES] += ps->bytes;
        r[S_FLUSH_FULL] += ps->flushes[GRAIN_FLUSH_FULL];
        r[S_FLUSH_TIMEOUT] += ps->flushes[GRAIN_FLUSH_TIMEOUT];
        r[S_FLUSH_QUIET] += ps->flushes[GRAIN_FLUSH_QUIET];
        r[S_FLUSH_SCOPE] += ps->flushes[GRAIN_FLUSH_SCOPE];
        r[S_BUFFER_WAITS] += ps->buffer_waits;
        r[S_BUSY_NS] += agg->busy_ns;
        if (agg->busy_ns > r[S_BUSY_MAX_NS])
            r[S_BUSY_MAX_NS] = agg->busy_ns;
        r[S_WAIT_NS] += ps->wait_ns;
        r[S_SEND_NS] += ps->send_ns;
        for (unsigned c = 1; c < GRAIN_CMD_COUNT; c++)
            r[S_CMD0 + c] += agg->cmd_msgs[c];
        for (size_t p = 0; p < n; p++) {
            r[S_FIXED + p] += agg->packer.dest_msgs[p];
            r[S_FIXED + n + p] += agg->packer.dest_bytes[p];
        }
    }
    r[S_FIXED + (size_t)g->my_pe] = r[S_LOCAL]; /* local messages never cross the wire */
    for (size_t p = 0; p < n; p++) {
        r[S_RECV_BUFFERS] += g->recv_buffers_from[p];
        r[S_FIXED + 2 * n + p] = atomic_load_explicit(&g->rejected_from[2 * p], memory_order_relaxed);
        r[S_FIXED + 3 * n + p] = atomic_load_explicit(&g->rejected_from[2 * p + 1], memory_order_relaxed);
    }
    r[S_RECV_BYTES] = g->recv_bytes;
    r[S_RECV_BUSY_NS] = g->recv_busy_ns;
    r[S_PROGRESS_NS] = g->tops->progress_ns != NULL ? g->tops->progress_ns(g->transport) : 0;
    grain_receivers_stats_t rs = grain_receivers_stats(g->receivers);
    r[S_RECV_THREADS] = rs.threads;
    r[S_RECV_THREADS_BUSY_NS] = rs.busy_ns;
    r[S_RECV_THREAD_MAX_BUFFERS] = rs.max_buffers;
    for (unsigned i = 0; i < GRAIN_PHASE_COUNT; i++)
        r[S_PHASE0 + i] = g->phase_ns[i];
    for (unsigned i = 0; i < GRAIN_SCHED_COUNTS; i++)
        r[S_SCHED0 + i] = g->sched_counts[i];
    for (unsigned i = 0; i < GRAIN_EP_COUNTS; i++)
        r[S_EP0 + i] = atomic_load_explicit(&g->ep_counts[i], memory_order_relaxed);
    if (g->applier != NULL) {
        grain_applier_stats_t as = grain_applier_stats(g->applier);
        r[S_APPLY_KERNELS] = as.kernels;
        r[S_APPLY_BUFFERS] = as.stages;
        r[S_APPLY_KEPT] = as.kept;
        r[S_APPLY_OVERLAPPED] = as.overlapped;
        r[S_APPLY_AGENTS] = as.agents;
        r[S_APPLY_AGENT_BUFFERS] = as.agent_stages;
    }
    if (grain_allreduce(g, rows, n * width, GRAIN_UINT64, GRAIN_SUM) != GRAIN_OK) {
        grain_warn("statistics could not be gathered");
        free(rows);
        return NULL;
    }
    *width_p = width;
    return rows;
}

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

/* Messages to other ranks, through the transport or direct, of all. */
static double remote_fraction(const uint64_t *r)
{
    return ratio(r[S_REMOTE] + r[S_DIRECT], r[S_LOCAL] + r[S_REMOTE] + r[S_DIRECT]);
}

static void json_array(FILE *out, const char *name, const uint64_t *v, size_t n)
{
    fprintf(out, ",\"%s\":[", name);
    for (size_t p = 0; p < n; p++)
        fprintf(out, "%s%llu", p ? "," : "", (unsigned long long)v[p]);
    fputc(']', out);
}

static uint64_t sum(const uint64_t *v, size_t n)
{
    uint64_t s = 0;
    for (size_t p = 0; p < n; p++)
        s += v[p];
    return s;
}

/* `ranks` rows summed into r: times are printed as their mean. */
static void json_rank(FILE *out, const uint64_t *r, size_t n, size_t ranks, size_t buf_size)
{
    fprintf(out, "{\"slots\":%llu,\"queue_full_waits\":%llu,\"messages\":{",
            (unsigned long long)r[S_SLOTS], (unsigned long long)r[S_FULL_WAITS]);
    for (unsigned c = 1; c < GRAIN_CMD_COUNT; c++)
        fprintf(out, "%s\"%s\":%llu", c > 1 ? "," : "", cmd_names[c], (unsigned long long)r[S_CMD0 + c]);
    fprintf(out,
            "},\"local_messages\":%llu,\"remote_messages\":%llu,\"direct_messages\":%llu,\"remote_fraction\":%.6f,"
            "\"buffers_sent\":%llu,\"bytes_sent\":%llu,\"mean_buffer_bytes\":%.1f,"
            "\"mean_buffer_fill\":%.4f,\"flushes\":{\"full\":%llu,\"timeout\":%llu,\"quiet\":%llu,\"scope\":%llu},"
            "\"buffer_waits\":%llu,\"received_buffers\":%llu,\"received_bytes\":%llu,"
            "\"apply_kernels\":%llu,\"apply_buffers\":%llu,\"apply_messages_kept\":%llu,"
            "\"apply_kernels_overlapped\":%llu,\"apply_agents\":%llu,\"apply_agent_buffers\":%llu,"
            "\"aggregator_busy_s\":%.6f,\"aggregator_busy_max_s\":%.6f,\"aggregator_buffer_wait_s\":%.6f,"
            "\"aggregator_send_s\":%.6f,\"receive_busy_s\":%.6f,\"network_progress_s\":%.6f,"
            "\"receive_threads\":%llu,\"receive_threads_busy_s\":%.6f,\"receive_thread_max_share\":%.4f,"
            "\"rejected_buffers\":%llu,\"rejected_messages\":%llu",
            (unsigned long long)r[S_LOCAL], (unsigned long long)r[S_REMOTE], (unsigned long long)r[S_DIRECT],
            remote_fraction(r), (unsigned long long)r[S_BUFFERS],
            (unsigned long long)r[S_BYTES], ratio(r[S_BYTES], r[S_BUFFERS]),
            ratio(r[S_BYTES], r[S_BUFFERS] * buf_size), (unsigned long long)r[S_FLUSH_FULL],
            (unsigned long long)r[S_FLUSH_TIMEOUT], (unsigned long long)r[S_FLUSH_QUIET],
            (unsigned long long)r[S_FLUSH_SCOPE],
            (unsigned long long)r[S_BUFFER_WAITS], (unsigned long long)r[S_RECV_BUFFERS],
            (unsigned long long)r[S_RECV_BYTES], (unsigned long long)r[S_APPLY_KERNELS],
            (unsigned long long)r[S_APPLY_BUFFERS], (unsigned long long)r[S_APPLY_KEPT],
            (unsigned long long)r[S_APPLY_OVERLAPPED], (unsigned long long)r[S_APPLY_AGENTS],
            (unsigned long long)r[S_APPLY_AGENT_BUFFERS],
            (double)r[S_BUSY_NS] * 1e-9, (double)r[S_BUSY_MAX_NS] * 1e-9, (double)r[S_WAIT_NS] * 1e-9,
            (double)r[S_SEND_NS] * 1e-9, (double)r[S_RECV_BUSY_NS] * 1e-9, (double)r[S_PROGRESS_NS] * 1e-9,
            (unsigned long long)r[S_RECV_THREADS],
            (double)r[S_RECV_THREADS_BUSY_NS] * 1e-9, ratio(r[S_RECV_THREAD_MAX_BUFFERS], r[S_RECV_BUFFERS]),
            (unsigned long long)sum(r + S_FIXED + 2 * n, n), (unsigned long long)sum(r + S_FIXED + 3 * n, n));
    json_array(out, "messages_to", r + S_FIXED, n);
    json_array(out, "bytes_to", r + S_FIXED + n, n);
    json_array(out, "rejected_buffers_from", r + S_FIXED + 2 * n, n);
    json_array(out, "rejected_messages_from", r + S_FIXED + 3 * n, n);
    const uint64_t *sc = r + S_SCHED0;
    fprintf(out, ",\"sched\":{\"elements\":%llu,\"edges\":%llu,\"copies\":%llu,\"bytes_copied\":%llu,"
                 "\"bytes_peer\":%llu,\"kernels\":%llu,\"vendor_gemms\":%llu}",
            (unsigned long long)sc[GRAIN_SCHED_COUNT_ELEMENTS], (unsigned long long)sc[GRAIN_SCHED_COUNT_EDGES],
            (unsigned long long)sc[GRAIN_SCHED_COUNT_COPIES], (unsigned long long)sc[GRAIN_SCHED_COUNT_BYTES_COPIED],
            (unsigned long long)sc[GRAIN_SCHED_COUNT_BYTES_PEER], (unsigned long long)sc[GRAIN_SCHED_COUNT_KERNELS],
            (unsigned long long)sc[GRAIN_SCHED_COUNT_VENDOR_GEMMS]);
    const uint64_t *ec = r + S_EP0;
    fprintf(out, ",\"endpoints\":{\"device_messages\":%llu,\"device_bytes\":%llu,\"mailbox_messages\":%llu,"
                 "\"mailbox_bytes\":%llu,\"rank_messages\":%llu,\"rank_bytes\":%llu,\"window_messages\":%llu,"
                 "\"window_bytes\":%llu}",
            (unsigned long long)ec[GRAIN_EP_COUNT_DEVICE_MSGS], (unsigned long long)ec[GRAIN_EP_COUNT_DEVICE_BYTES],
            (unsigned long long)ec[GRAIN_EP_COUNT_MAILBOX_MSGS], (unsigned long long)ec[GRAIN_EP_COUNT_MAILBOX_BYTES],
            (unsigned long long)ec[GRAIN_EP_COUNT_RANK_MSGS], (unsigned long long)ec[GRAIN_EP_COUNT_RANK_BYTES],
            (unsigned long long)ec[GRAIN_EP_COUNT_WINDOW_MSGS], (unsigned long long)ec[GRAIN_EP_COUNT_WINDOW_BYTES]);
    const uint64_t *ph = r + S_PHASE0;
    double s = 1e-9 / (double)ranks;
    fprintf(out, ",\"time_split\":{\"compute_s\":%.6f,\"queue_s\":%.6f,\"aggregation_s\":%.6f,\"network_s\":%.6f}}",
            (double)ph[GRAIN_PHASE_COMPUTE] * s, (double)ph[GRAIN_PHASE_QUEUE] * s,
            (double)ph[GRAIN_PHASE_AGGREGATION] * s, (double)ph[GRAIN_PHASE_NETWORK] * s);
}

void grain_stats_json(grain_t *g, FILE *out)
{
    size_t width, n = (size_t)g->n_pes;
    uint64_t *rows = gather(g, &width);
    if (rows == NULL)
        return;
    if (out != NULL) {
        uint64_t *total = calloc(width, sizeof *total);
        for (size_t p = 0; total != NULL && p < n; p++)
            for (size_t i = 0; i < width; i++)
                total[i] += rows[p * width + i];
        /* With apply "device", messages to the own rank are applied in place
         * by their senders, as are active messages to device handlers the
         * sending program defines: they count in `local` only.  Messages
         * the direct path applied count in `direct` only, not in the
         * per-destination arrays, which the aggregators fill. */
        fprintf(out, "{\"apply\":\"%s\",\"peer\":\"%s\",\"direct_peers\":%u,\"total\":",
                g->apply_on_device ? "device" : "host", g->config.peer, g->heap_peers.mapped);
        if (total != NULL)
            json_rank(out, total, n, n, g->config.buffer_size);
        fprintf(out, ",\"per_rank\":[");
        for (size_t p = 0; p < n; p++) {
            fprintf(out, "%s", p ? "," : "");
            json_rank(out, rows + p * width, n, 1, g->config.buffer_size);
        }
        fprintf(out, "]}");
        free(total);
    }
    free(rows);
}

grain_status_t grain_time_split(grain_t *g, grain_time_split_t *split)
{
    if (g == NULL || split == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_time_split needs a handle and a result");
    *split = (grain_time_split_t){(double)g->phase_ns[GRAIN_PHASE_COMPUTE] * 1e-9,
                                  (double)g->phase_ns[GRAIN_PHASE_QUEUE] * 1e-9,
                                  (double)g->phase_ns[GRAIN_PHASE_AGGREGATION] * 1e-9,
                                  (double)g->phase_ns[GRAIN_PHASE_NETWORK] * 1e-9};
    return GRAIN_OK;
}

void grain_stats_print(grain_t *g, FILE *out)
{
    size_t width, n = (size_t)g->n_pes;
    uint64_t *rows = gather(g, &width);
    if (rows == NULL)
        return;
    if (g->my_pe == 0 && out != NULL) {
        fprintf(out, "grain statistics (%d ranks, backend %s, transport %s, buffers of %llu bytes)\n",
                g->n_pes, g->bops->name, g->tops->name, (unsigned long long)g->config.buffer_size);
        fprintf(out, "%4s %10s %9s %12s %12s %12s %7s %9s %10s %8s %8s %8s %8s %8s\n", "rank", "slots", "q-waits",
                "local", "remote", "direct", "remote%", "buffers", "mean-B", "full", "timeout", "quiet", "scope",
                "b-waits");
        for (size_t p = 0; p < n; p++) {
            const uint64_t *r = rows + p * width;
            fprintf(out, "%4zu %10llu %9llu %12llu %12llu %12llu %6.1f%% %9llu %10.0f %8llu %8llu %8llu %8llu %8llu\n",
                    p, (unsigned long long)r[S_SLOTS], (unsigned long long)r[S_FULL_WAITS],
                    (unsigned long long)r[S_LOCAL], (unsigned long long)r[S_REMOTE], (unsigned long long)r[S_DIRECT],
                    100.0 * remote_fraction(r), (unsigned long long)r[S_BUFFERS],
                    ratio(r[S_BYTES], r[S_BUFFERS]), (unsigned long long)r[S_FLUSH_FULL],
                    (unsigned long long)r[S_FLUSH_TIMEOUT], (unsigned long long)r[S_FLUSH_QUIET],
                    (unsigned long long)r[S_FLUSH_SCOPE], (unsigned long long)r[S_BUFFER_WAITS]);
        }
        for (size_t p = 0; p < n; p++) {
            const uint64_t *r = rows + p * width, *sc = r + S_SCHED0, *ec = r + S_EP0;
            if (ec[GRAIN_EP_COUNT_DEVICE_MSGS] + ec[GRAIN_EP_COUNT_MAILBOX_MSGS] + ec[GRAIN_EP_COUNT_RANK_MSGS] +
                    ec[GRAIN_EP_COUNT_WINDOW_MSGS] >
                0)
                fprintf(out, "rank %zu: endpoint messages: %llu device to device (%llu bytes), %llu through the "
                             "mailbox (%llu bytes), %llu to other ranks through the host (%llu bytes), %llu through "
                             "windows (%llu bytes)\n",
                        p, (unsigned long long)ec[GRAIN_EP_COUNT_DEVICE_MSGS],
                        (unsigned long long)ec[GRAIN_EP_COUNT_DEVICE_BYTES],
                        (unsigned long long)ec[GRAIN_EP_COUNT_MAILBOX_MSGS],
                        (unsigned long long)ec[GRAIN_EP_COUNT_MAILBOX_BYTES],
                        (unsigned long long)ec[GRAIN_EP_COUNT_RANK_MSGS],
                        (unsigned long long)ec[GRAIN_EP_COUNT_RANK_BYTES],
                        (unsigned long long)ec[GRAIN_EP_COUNT_WINDOW_MSGS],
                        (unsigned long long)ec[GRAIN_EP_COUNT_WINDOW_BYTES]);
            if (sc[GRAIN_SCHED_COUNT_ELEMENTS] > 0)
                fprintf(out, "rank %zu: task scheduler: %llu elements, %llu edges, %llu kernels, %llu copies of "
                             "%llu bytes (%llu between devices)\n",
                        p, (unsigned long long)sc[GRAIN_SCHED_COUNT_ELEMENTS],
                        (unsigned long long)sc[GRAIN_SCHED_COUNT_EDGES],
                        (unsigned long long)sc[GRAIN_SCHED_COUNT_KERNELS],
                        (unsigned long long)sc[GRAIN_SCHED_COUNT_COPIES],
                        (unsigned long long)sc[GRAIN_SCHED_COUNT_BYTES_COPIED],
                        (unsigned long long)sc[GRAIN_SCHED_COUNT_BYTES_PEER]);
            for (size_t q = 0; q < n; q++)
                if (r[S_FIXED + 2 * n + q] > 0)
                    fprintf(out, "rank %zu rejected %llu buffers (%llu messages) from rank %zu\n", p,
                            (unsigned long long)r[S_FIXED + 2 * n + q], (unsigned long long)r[S_FIXED + 3 * n + q],
                            q);
        }
    }
    free(rows);
}
