/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ep_bench: two-sided messages between device endpoints (grain/ep.h), as
 * "GMH: GPU Message Handler" measures them (figs. 6-7): endpoint 0 and
 * endpoint 1 bounce a message of each size, and the half round trip gives
 * the latency and the bandwidth.  The baseline, measured in the same run on
 * endpoint 0's device, is what a message between devices cannot avoid
 * without a peer copy: the device-to-host copy at the sender and the
 * host-to-device copy at the receiver (grain_ep_mem_read + write of memory
 * without a shadow, so that each goes straight), so the ratio is the
 * message's cost over those copies.  Beside it, the same two copies as
 * stream commands (grain_ep_copy_out, grain_ep_copy_in on one stream, each
 * waited for; the same memory both ways): GMH's fig. 6 compares the
 * asynchronous copy and its event with the synchronous one.  And both
 * ways at once (fig. 8): each endpoint sends and receives a message per
 * exchange; both_gain is that bandwidth over the bounce's.  Messages go
 * from and to memory with its pinned shadow, through which they pass, or
 * with --no-shadow without one (pageable copies).  Then a broadcast from
 * endpoint 0 to every endpoint (fig. 9), against the ranks' host broadcast
 * of the same bytes (grain_broadcast: MPI on the MPI transport) plus the
 * copies: bcast_ratio is the first over the second; and an allreduce (sum)
 * of the same bytes as doubles, which bench/peers/nccl_coll times with
 * NCCL on the same sizes.  Then the rest of section III-B5 on the same
 * bytes: a reduce of them into endpoint 0, and a gather into endpoint 0, a
 * scatter from it and an alltoall of slots of bytes / endpoints (at least
 * one).  Collectives of GRAIN_EP_COLL_MESSAGES bytes or more (a slot's, for
 * the last three) move as messages between the endpoints, the rest through
 * the host's collective: running it with GRAIN_EP_COLL_MESSAGES=0 times the
 * host's path at every size.
 *
 *   mpirun -np 1 ep_bench --endpoints 2 [options]   two endpoints of one rank
 *   mpirun -np 2 ep_bench [options]                  one endpoint on each of two ranks
 *   [--min-bytes B] [--max-bytes B] [--iters N] [--no-shadow] [--csv FILE] [--json]
 *   (--json: the report, last on stdout)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grain/ep.h"
#include "tools/cli/cli.h"

#define MAX_SIZES 64

typedef struct options {
    cli_sweep_t sweep;
    unsigned long long endpoints;
    const char *csv;
    int json, no_shadow;
} options_t;

typedef struct row {
    size_t bytes;
    unsigned iters;
    double half_rtt_us, copies_us, stream_us, both_us;
    double bcast_us, host_bcast_us; /* every endpoint's broadcast; the ranks' host broadcast of the same bytes */
    double allreduce_us;            /* every endpoint's allreduce of the bytes as doubles (at least one) */
    double reduce_us;               /* the same into endpoint 0 */
    double gather_us, scatter_us, alltoall_us; /* slots of bytes / endpoints, at least one, root 0 */
} row_t;

typedef struct run {
    const options_t *o;
    row_t rows[MAX_SIZES];
    unsigned n_rows;
    char device[256];
    grain_status_t status;
} run_t;

enum { OPT_ENDPOINTS, OPT_CSV, OPT_JSON, OPT_NO_SHADOW };

static void take(void *state, int key, const char *option, const char *value)
{
    options_t *o = state;
    if (key == OPT_ENDPOINTS)
        o->endpoints = cli_u64_in(option, value, 1, 1024);
    else if (key == OPT_CSV)
        o->csv = value;
    else if (key == OPT_NO_SHADOW)
        o->no_shadow = 1;
    else
        o->json = 1;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np 1|2 ep_bench [--endpoints N] [--min-bytes B] [--max-bytes B] [--iters N]\n"
                 "                [--no-shadow] [--csv FILE] [--json]\n"
                 "  endpoints 0 and 1 bounce messages of min-bytes to max-bytes (doubling); N endpoints a rank\n"
                 "  (default 2 on one rank, 1 on several); the baseline is a device-host copy each way\n");
}

/* Fewer bounces of large messages: about 256 MiB moved a size, 5 at least. */
static unsigned iters_for(const options_t *o, size_t bytes)
{
    unsigned long long n = bytes > 0 ? (256ull << 20) / bytes : o->sweep.iters;
    n = n < 5 ? 5 : n > o->sweep.iters ? o->sweep.iters : n;
    return (unsigned)n;
}

#define CHECK(x)                                                                                                  \
    do {                                                                                                          \
        grain_status_t st_ = (x);                                                                                 \
        if (st_ != GRAIN_OK)                                                                                      \
            return st_;                                                                                           \
    } while (0)

static grain_status_t bounce(grain_cmdq_t *q, void *arg)
{
    run_t *r = arg;
    const options_t *o = r->o;
    int me = grain_ep_id(q);
    if (me > 1)
        return GRAIN_OK; /* only endpoints 0 and 1 take part */
    int peer = 1 - me;
    grain_ep_mem_t *m = NULL, *raw = NULL; /* raw: no shadow, so that the baseline copies go straight */
    size_t got = 0;
    char *host = malloc(o->sweep.max_bytes > 0 ? o->sweep.max_bytes : 1);
    if (host == NULL)
        return GRAIN_ERR_NO_MEMORY;
    memset(host, 0x5a, o->sweep.max_bytes);
    CHECK(grain_ep_mem_alloc(q, o->sweep.max_bytes > 0 ? o->sweep.max_bytes : 1,
                             GRAIN_EP_READ | GRAIN_EP_WRITE | (o->no_shadow ? GRAIN_EP_NO_SHADOW : 0), &m));
    CHECK(grain_ep_mem_alloc(q, o->sweep.max_bytes > 0 ? o->sweep.max_bytes : 1,
                             GRAIN_EP_READ | GRAIN_EP_WRITE | GRAIN_EP_NO_SHADOW, &raw));
    if (me == 0)
        snprintf(r->device, sizeof r->device, "%s", grain_ep_device_name(q));
    unsigned sizes = 0; /* each endpoint counts its own: endpoint 0 alone writes the rows */
    for (size_t bytes = o->sweep.min_bytes; bytes <= o->sweep.max_bytes && sizes < MAX_SIZES;
         bytes = bytes == 0 ? 1 : 2 * bytes, sizes++) {
        unsigned iters = iters_for(o, bytes);
        double t0 = 0;
        for (unsigned i = 0; i < iters + 2; i++) { /* two bounces to warm up */
            if (i == 2)
                t0 = cli_now_s();
            if (me == 0) {
                CHECK(grain_ep_send(q, m, 0, bytes, peer, 0));
                CHECK(grain_ep_recv(q, m, 0, bytes, peer, 0, &got));
            } else {
                CHECK(grain_ep_recv(q, m, 0, bytes, peer, 0, &got));
                CHECK(grain_ep_send(q, m, 0, bytes, peer, 0));
            }
        }
        double bounced = cli_now_s() - t0;
        /* Both ways at once (GMH fig. 8): each sends and receives a message per exchange. */
        t0 = cli_now_s();
        for (unsigned i = 0; i < iters; i++) {
            grain_ep_event_t *e[2];
            CHECK(grain_ep_isend(q, m, 0, bytes, peer, 1, &e[0])); /* copied off m when it returns */
            CHECK(grain_ep_irecv(q, m, 0, bytes, peer, 1, &got, &e[1]));
            CHECK(grain_ep_wait_all(q, e, 2));
        }
        double both = cli_now_s() - t0;
        if (me == 1)
            continue;
        t0 = cli_now_s();
        for (unsigned i = 0; i < iters; i++) {
            CHECK(grain_ep_mem_read(q, raw, 0, host, bytes));
            CHECK(grain_ep_mem_write(q, raw, 0, host, bytes));
        }
        double copied = cli_now_s() - t0;
        t0 = cli_now_s();
        for (unsigned i = 0; i < iters; i++) {
            grain_ep_event_t *e = NULL;
            CHECK(grain_ep_copy_out(q, 0, raw, 0, host, bytes, NULL, 0, &e));
            CHECK(grain_ep_wait(q, e));
            CHECK(grain_ep_copy_in(q, 0, raw, 0, host, bytes, NULL, 0, &e));
            CHECK(grain_ep_wait(q, e));
        }
        row_t *row = &r->rows[r->n_rows++];
        *row = (row_t){.bytes = bytes, /* the collectives come later */
                       .iters = iters,
                       .half_rtt_us = bounced / iters / 2 * 1e6,
                       .copies_us = copied / iters * 1e6,
                       .stream_us = (cli_now_s() - t0) / iters * 1e6,
                       .both_us = both / iters * 1e6};
        printf("ep_bench: %10zu bytes: half round trip %10.2f us, %8.3f GB/s; copies %10.2f us: ratio %.2f; "
               "as stream commands %10.2f us: ratio %.2f; both ways %.2fx the bandwidth\n",
               bytes, row->half_rtt_us, bytes / row->half_rtt_us / 1e3, row->copies_us,
               row->half_rtt_us / row->copies_us, row->stream_us, row->stream_us / row->copies_us,
               2 * row->half_rtt_us / row->both_us);
        fflush(stdout);
    }
    free(host);
    return GRAIN_OK;
}

/* The mean time of `iters` calls of one collective, after one to warm up,
 * on endpoint 0 between barriers (every endpoint calls it: 0 elsewhere). */
#define TIME_COLLECTIVE(q, iters, call, us)                                                                      \
    do {                                                                                                          \
        CHECK(call);                                                                                              \
        CHECK(grain_ep_barrier(q));                                                                               \
        double t0_ = cli_now_s();                                                                                 \
        for (unsigned i_ = 0; i_ < (iters); i_++)                                                                 \
            CHECK(call);                                                                                          \
        CHECK(grain_ep_barrier(q));                                                                               \
        if (grain_ep_id(q) == 0)                                                                                  \
            (us) = (cli_now_s() - t0_) / (iters) * 1e6;                                                           \
    } while (0)

/* GMH fig. 9: a broadcast from endpoint 0 to every endpoint, then an
 * allreduce of the same bytes, then the other collectives (see the top),
 * each size timed on endpoint 0. */
static grain_status_t spread(grain_cmdq_t *q, void *arg)
{
    run_t *r = arg;
    const options_t *o = r->o;
    size_t n = (size_t)grain_ep_count(q);
    size_t bytes = o->sweep.max_bytes > sizeof(double) ? o->sweep.max_bytes : sizeof(double);
    grain_ep_mem_t *m = NULL;
    CHECK(grain_ep_mem_alloc(q, bytes > n ? bytes : n,
                             GRAIN_EP_READ | GRAIN_EP_WRITE | (o->no_shadow ? GRAIN_EP_NO_SHADOW : 0), &m));
    for (unsigned k = 0; k < r->n_rows; k++) {
        row_t *row = &r->rows[k];
        size_t doubles = row->bytes >= sizeof(double) ? row->bytes / sizeof(double) : 1;
        size_t slot = row->bytes >= n ? row->bytes / n : 1;
        TIME_COLLECTIVE(q, row->iters, grain_ep_broadcast(q, m, 0, row->bytes, 0), row->bcast_us);
        TIME_COLLECTIVE(q, row->iters, grain_ep_allreduce(q, m, 0, doubles, GRAIN_DOUBLE, GRAIN_SUM),
                        row->allreduce_us);
        TIME_COLLECTIVE(q, row->iters, grain_ep_reduce(q, m, 0, doubles, GRAIN_DOUBLE, GRAIN_SUM, 0),
                        row->reduce_us);
        TIME_COLLECTIVE(q, row->iters, grain_ep_gather(q, m, 0, slot, 0), row->gather_us);
        TIME_COLLECTIVE(q, row->iters, grain_ep_scatter(q, m, 0, slot, 0), row->scatter_us);
        TIME_COLLECTIVE(q, row->iters, grain_ep_alltoall(q, m, 0, slot), row->alltoall_us);
    }
    return GRAIN_OK;
}

/* The baseline of fig. 9 on the rank's own thread: the ranks' host
 * broadcast of each size (beside the copies each endpoint makes). */
static grain_status_t host_broadcasts(grain_t *g, run_t *r)
{
    char *buf = malloc(r->o->sweep.max_bytes > 0 ? r->o->sweep.max_bytes : 1);
    if (buf == NULL)
        return GRAIN_ERR_NO_MEMORY;
    memset(buf, 0x5a, r->o->sweep.max_bytes);
    for (unsigned k = 0; k < r->n_rows; k++) {
        row_t *row = &r->rows[k];
        grain_status_t st = grain_broadcast(g, buf, row->bytes, 0);
        if (st == GRAIN_OK)
            st = grain_barrier_all(g);
        double t0 = cli_now_s();
        for (unsigned i = 0; i < row->iters && st == GRAIN_OK; i++)
            st = grain_broadcast(g, buf, row->bytes, 0);
        if (st == GRAIN_OK)
            st = grain_barrier_all(g);
        if (st != GRAIN_OK) {
            free(buf);
            return st;
        }
        row->host_bcast_us = (cli_now_s() - t0) / row->iters * 1e6;
    }
    free(buf);
    return GRAIN_OK;
}

static int write_files(const options_t *o, const run_t *r, const char *mode, const char *backend)
{
    FILE *csv = o->csv != NULL ? fopen(o->csv, "w") : NULL, *json = o->json ? stdout : NULL;
    if (o->csv != NULL && csv == NULL) {
        fprintf(stderr, "ep_bench: cannot write %s\n", o->csv);
        return 1;
    }
    if (csv != NULL)
        fprintf(csv, "mode,bytes,iters,half_rtt_us,gb_per_s,copies_us,ratio,stream_us,stream_ratio,both_us,"
                     "both_gain,bcast_us,host_bcast_us,bcast_ratio,allreduce_us,reduce_us,gather_us,scatter_us,"
                     "alltoall_us\n");
    if (json != NULL)
        fprintf(json, "{\"mode\":\"%s\",\"backend\":\"%s\",\"device\":\"%s\",\"rows\":[", mode, backend, r->device);
    for (unsigned i = 0; i < r->n_rows; i++) {
        const row_t *w = &r->rows[i];
        double gbs = w->bytes / w->half_rtt_us / 1e3, ratio = w->half_rtt_us / w->copies_us;
        double bcast_ratio = w->bcast_us / (w->host_bcast_us + w->copies_us);
        if (csv != NULL)
            fprintf(csv, "%s,%zu,%u,%.3f,%.4f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
                    mode, w->bytes, w->iters, w->half_rtt_us, gbs, w->copies_us, ratio, w->stream_us,
                    w->stream_us / w->copies_us, w->both_us, 2 * w->half_rtt_us / w->both_us, w->bcast_us,
                    w->host_bcast_us, bcast_ratio, w->allreduce_us, w->reduce_us, w->gather_us, w->scatter_us,
                    w->alltoall_us);
        if (json != NULL)
            fprintf(json, "%s{\"bytes\":%zu,\"iters\":%u,\"half_rtt_us\":%.3f,\"gb_per_s\":%.4f,\"copies_us\":%.3f,"
                          "\"ratio\":%.3f,\"stream_us\":%.3f,\"stream_ratio\":%.3f,\"both_us\":%.3f,"
                          "\"both_gain\":%.3f,\"bcast_us\":%.3f,\"host_bcast_us\":%.3f,\"bcast_ratio\":%.3f,"
                          "\"allreduce_us\":%.3f,\"reduce_us\":%.3f,\"gather_us\":%.3f,\"scatter_us\":%.3f,"
                          "\"alltoall_us\":%.3f}",
                    i ? "," : "", w->bytes, w->iters, w->half_rtt_us, gbs, w->copies_us, ratio, w->stream_us,
                    w->stream_us / w->copies_us, w->both_us, 2 * w->half_rtt_us / w->both_us, w->bcast_us,
                    w->host_bcast_us, bcast_ratio, w->allreduce_us, w->reduce_us, w->gather_us, w->scatter_us,
                    w->alltoall_us);
    }
    if (json != NULL)
        fprintf(json, "]}\n");
    if (csv != NULL)
        fclose(csv);
    return 0;
}

int main(int argc, char **argv)
{
    static const cli_option_t options[] = {{"endpoints", 1, OPT_ENDPOINTS},
                                           {"csv", 1, OPT_CSV},
                                           {"json", 0, OPT_JSON},
                                           {"no-shadow", 0, OPT_NO_SHADOW}};
    options_t o = {{4, 64ull << 20, 1000}, 0, NULL, 0, 0};
    const cli_group_t groups[] = {cli_sweep_group(&o.sweep), CLI_GROUP(options, take, &o)};
    cli_parse("ep_bench", argc, argv, groups, 2, 0, usage);
    if (!cli_sweep_check("ep_bench", &o.sweep))
        return CLI_EXIT_USAGE;
    grain_t *g = NULL;
    grain_status_t st = grain_init(NULL, &g);
    if (st != GRAIN_OK) {
        fprintf(stderr, "ep_bench: grain_init: %s\n", grain_error_message(NULL));
        return 1;
    }
    int ranks = grain_n_pes(g), me = grain_my_pe(g);
    unsigned endpoints = o.endpoints ? (unsigned)o.endpoints : ranks == 1 ? 2 : 1;
    if ((unsigned long long)ranks * endpoints < 2) {
        fprintf(stderr, "ep_bench: needs two endpoints: --endpoints 2 on one rank, or two ranks\n");
        grain_finalize(g);
        return 2;
    }
    run_t r = {.o = &o};
    const char *mode = endpoints > 1 ? (o.no_shadow ? "same rank, no shadow" : "same rank")
                                     : (o.no_shadow ? "two ranks, no shadow" : "two ranks");
    if (me == 0)
        printf("ep_bench: endpoints 0 and 1 on %s (%d rank%s x %u endpoints)\n", mode, ranks, ranks == 1 ? "" : "s",
               endpoints);
    st = grain_ep_run(g, endpoints, bounce, &r);
    /* Every rank times the same sizes: endpoint 0's rows, broadcast. */
    unsigned n_rows = r.n_rows;
    if (st == GRAIN_OK && (st = grain_broadcast(g, &n_rows, sizeof n_rows, 0)) == GRAIN_OK)
        st = grain_broadcast(g, r.rows, sizeof r.rows, 0);
    r.n_rows = n_rows;
    if (st == GRAIN_OK)
        st = grain_ep_run(g, endpoints, spread, &r);
    if (st == GRAIN_OK)
        st = host_broadcasts(g, &r);
    int rc = 0;
    if (st != GRAIN_OK) {
        fprintf(stderr, "ep_bench: rank %d: %s\n", me, grain_error_message(NULL));
        rc = 1;
    } else if (me == 0) {
        rc = write_files(&o, &r, mode, grain_backend_name(g));
    }
    grain_finalize(g);
    return rc;
}
