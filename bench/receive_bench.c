/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * receive_bench: how many received messages one rank validates, moves to
 * where they apply and applies per second (docs/receive-path.md), with
 * the senders and the wire taken out, as aggregator_bench takes them out of
 * the send path: packed buffers from S other ranks are replayed from the
 * runtime's own receive buffers (pinned where the device has its own
 * memory) into its receive path, by the thread that would be the network
 * thread, and quiet waits until every message is applied.
 *
 *   receive_bench [--threads T] [--sources S] [--kind K] [--wire runs|plain]
 *                 [--messages N] [--csv FILE] [--json FILE]
 *
 * The buffers are packed by the runtime's packer, into runs as aggregators
 * send them (--wire plain: each message alone, the wire before runs).  For
 * GRAIN_RECV_THREADS 1, 2, 4, ... T (default 8) and each kind of traffic (K:
 * inc64, add64, mixed or all, the default; mixed takes PUT64, ADD64, INC64,
 * ADD32 and INC32 in turn, 16 messages each) it prints messages per second
 * and wire bytes per second, the median of three runs of about N messages
 * (default 2^26) each, every run checked word by word against the sums of
 * what was sent.  Two baselines, measured in the same job: the rate at which the
 * backend copies the same bytes from that receive memory into device
 * memory in one piece (the ratio says how far the receive path is from a
 * copy of what it moves), and the rate of one LINK_BYTES copy, the link's
 * own ceiling for large copies (the link ratio), measured once a run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_transport.h"
#include "bench/queue_baselines.h"
#include "runtime/grain_impl.h"
#include "runtime/messages/apply.h"
#include "runtime/messages/packer.h"
#include "runtime/messages/recv_threads.h"
#include "tools/cli/cli.h"
#include "transports/wire.h"

#define WORDS (1u << 20) /* per table: 8 MiB of 64-bit words, 4 MiB of 32-bit ones */
#define LINK_BYTES (64u << 20)
#define PUT_WORDS (1u << 16)

typedef enum kind { KIND_INC64, KIND_ADD64, KIND_MIXED, KIND_COUNT } kind_t;
static const char *const kind_names[KIND_COUNT] = {"inc64", "add64", "mixed"};

typedef struct tables {
    uint64_t *t64, *put;
    uint32_t *t32;
    uint64_t o64, o32, oput; /* their heap offsets */
} tables_t;

/* What the replayed buffers add to each word in one round: the check. */
typedef struct expect {
    uint64_t *t64;
    uint32_t *t32;
    unsigned char *put; /* words some PUT wrote */
} expect_t;

typedef struct point {
    double msgs_per_s, wire_bytes_per_s, copy_bytes_per_s, link_bytes_per_s;
    double net_busy, recv_busy, max_share, kept;
} point_t;

static void check(grain_status_t st, const char *what)
{
    if (st != GRAIN_OK) {
        fprintf(stderr, "receive_bench: %s failed: %s (grain logged why)\n", what, grain_strerror(st));
        exit(2);
    }
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint64_t put_value(uint64_t word)
{
    return word * 0x9e3779b97f4a7c15ull | 1;
}

/* Message n's command: mixed traffic takes each command for a stretch of
 * MIXED_STRETCH messages in turn, as work-groups each sending one command
 * do. */
#define MIXED_STRETCH 16u
static uint32_t kind_cmd(kind_t kind, uint32_t n)
{
    static const uint32_t mixed[] = {GRAIN_CMD_PUT64, GRAIN_CMD_ADD64, GRAIN_CMD_INC64, GRAIN_CMD_ADD32,
                                     GRAIN_CMD_INC32};
    return kind == KIND_INC64   ? GRAIN_CMD_INC64
           : kind == KIND_ADD64 ? GRAIN_CMD_ADD64
                                : mixed[n / MIXED_STRETCH % (sizeof mixed / sizeof mixed[0])];
}

/* A message of `cmd` to a random word of its table, its offset and value,
 * added to `e`. */
static void draw(uint32_t cmd, uint64_t *s, const tables_t *t, expect_t *e, uint64_t *off, uint64_t *value)
{
    uint64_t r = next_rand(s), word;
    *value = 1 + (r >> 60);
    switch (cmd) {
    case GRAIN_CMD_PUT64:
        word = r % PUT_WORDS;
        *off = t->oput + 8 * word;
        *value = put_value(word);
        e->put[word] = 1;
        break;
    case GRAIN_CMD_ADD32:
    case GRAIN_CMD_INC32:
        word = r % WORDS;
        *off = t->o32 + 4 * word;
        e->t32[word] += cmd == GRAIN_CMD_INC32 ? 1 : (uint32_t)*value;
        break;
    default:
        word = r % WORDS;
        *off = t->o64 + 8 * word;
        e->t64[word] += cmd == GRAIN_CMD_INC64 ? 1 : *value;
    }
}

/* The one buffer a packer sends, copied into a receive buffer. */
typedef struct caught {
    void *buf;
    int sent;
} caught_t;

static void catch_buffer(void *arg, grain_outbuf_t *b)
{
    caught_t *c = arg;
    memcpy(c->buf, b->data, b->used);
    c->sent = 1;
    grain_packer_release(b);
}

/* Fills receive buffer `slot` from rank `src` with messages of `kind` up
 * to `size` bytes, as an aggregator packs them (`runs`: into runs, as the
 * runtime does; else each message alone), and adds what they do to `e`.
 * Returns the messages. */
static uint32_t fill(void *buf, size_t size, uint32_t src, unsigned slot, kind_t kind, int runs, const tables_t *t,
                     expect_t *e)
{
    uint64_t s = 0x2545f4914f6cdd1dull * (slot + 1), off, value;
    uint32_t n = 0;
    if (runs) {
        _Atomic uint64_t seq = 0;
        caught_t c = {buf, 0};
        grain_packer_t p;
        check(grain_packer_init(&p, src, 1, size, 1, UINT64_MAX, &seq, NULL, catch_buffer, &c), "a packer");
        for (; !c.sent; n++) {
            uint32_t cmd = kind_cmd(kind, n);
            draw(cmd, &s, t, e, &off, &value);
            check(grain_packer_append(&p, 0, GRAIN_HDR(cmd, 0, 0), off, value, 0, 0, 0), "packing");
        }
        grain_packer_destroy(&p);
        return n;
    }
    uint8_t *p = (uint8_t *)buf + sizeof(grain_wire_hdr_t), *end = (uint8_t *)buf + size;
    for (;; n++) {
        uint32_t cmd = kind_cmd(kind, n);
        if ((size_t)(end - p) < grain_wire_msg_size(cmd))
            break;
        draw(cmd, &s, t, e, &off, &value);
        p += grain_wire_encode(p, GRAIN_HDR(cmd, 0, 0), off, value, 0, 0);
    }
    grain_wire_hdr_t h = {GRAIN_WIRE_MAGIC, src, n, (uint32_t)(p - (uint8_t *)buf), 0};
    memcpy(buf, &h, sizeof h);
    return n;
}

/* Every word as `rounds` rounds of the buffers leave it; 0 or exits. */
static void verify(grain_t *g, const tables_t *t, const expect_t *e, uint64_t rounds, const char *what)
{
    uint64_t *t64 = malloc(WORDS * sizeof *t64), *put = malloc(PUT_WORDS * sizeof *put);
    uint32_t *t32 = malloc(WORDS * sizeof *t32);
    if (t64 == NULL || put == NULL || t32 == NULL) {
        fprintf(stderr, "receive_bench: no memory to check the tables\n");
        exit(2);
    }
    check(grain_memcpy(g, t64, t->t64, WORDS * sizeof *t64), "grain_memcpy");
    check(grain_memcpy(g, t32, t->t32, WORDS * sizeof *t32), "grain_memcpy");
    check(grain_memcpy(g, put, t->put, PUT_WORDS * sizeof *put), "grain_memcpy");
    uint64_t bad = 0, first = UINT64_MAX;
    for (uint64_t w = 0; w < WORDS; w++) {
        int wrong = t64[w] != rounds * e->t64[w] || t32[w] != (uint32_t)(rounds * e->t32[w]) ||
                    (w < PUT_WORDS && put[w] != (e->put[w] ? put_value(w) : 0));
        bad += wrong;
        first = wrong && first == UINT64_MAX ? w : first;
    }
    if (bad > 0) {
        fprintf(stderr, "receive_bench: %s: %llu words wrong after %llu rounds, the first word %llu\n", what,
                (unsigned long long)bad, (unsigned long long)rounds, (unsigned long long)first);
        exit(1);
    }
    free(t64);
    free(t32);
    free(put);
}

/* One run: `rounds` rounds over the receive buffers, then quiet; seconds. */
static double replay(grain_t *g, unsigned n_bufs, uint64_t rounds)
{
    double t0 = bench_now();
    for (uint64_t r = 0; r < rounds; r++)
        for (unsigned i = 0; i < n_bufs; i++)
            bench_transport_deliver(i);
    check(grain_barrier_all(g), "quiet");
    double t = bench_now() - t0;
    bench_transport_settle_all();
    return t;
}

/* The baseline: bytes a second of `rounds` copies of `bytes` from receive
 * (pinned) memory into device memory in one piece, the median of three
 * timings on one pair of buffers: making and touching them each time took
 * most of a small run. */
static double copy_ceiling(grain_t *g, size_t bytes, uint64_t rounds)
{
    void *src, *dst;
    check(g->bops->alloc_shared(g->backend, bytes, &src), "pinned memory for the baseline");
    check(g->bops->alloc_device(g->backend, bytes, &dst), "device memory for the baseline");
    memset(src, 1, bytes);
    check(grain_memcpy(g, dst, src, bytes), "grain_memcpy");
    double t[3];
    for (int i = 0; i < 3; i++) {
        double t0 = bench_now();
        for (uint64_t r = 0; r < rounds; r++)
            check(grain_memcpy(g, dst, src, bytes), "grain_memcpy");
        t[i] = bench_now() - t0;
    }
    g->bops->free_device(g->backend, dst);
    g->bops->free_shared(g->backend, src);
    return (double)(rounds * bytes) / bench_median3(t[0], t[1], t[2]);
}

static point_t measure(unsigned threads, unsigned sources, kind_t kind, int runs, uint64_t messages)
{
    grain_config_t *c;
    char v[16];
    snprintf(v, sizeof v, "%u", threads);
    check(grain_config_create(&c), "config");
    check(grain_config_set(c, "recv_threads", v), "config");
    bench_transport_set_pes(sources + 1);
    grain_t *g;
    check(grain_init_transport(c, NULL, &bench_transport_ops, &g), "grain_init");
    grain_config_destroy(c);

    tables_t t;
    check(grain_malloc(g, WORDS * sizeof *t.t64, (void **)&t.t64), "grain_malloc");
    check(grain_malloc(g, WORDS * sizeof *t.t32, (void **)&t.t32), "grain_malloc");
    check(grain_malloc(g, PUT_WORDS * sizeof *t.put, (void **)&t.put), "grain_malloc");
    check(grain_heap_offset(g, t.t64, &t.o64), "offset");
    check(grain_heap_offset(g, t.t32, &t.o32), "offset");
    check(grain_heap_offset(g, t.put, &t.oput), "offset");
    expect_t e = {calloc(WORDS, sizeof *e.t64), calloc(WORDS, sizeof *e.t32), calloc(PUT_WORDS, 1)};
    if (e.t64 == NULL || e.t32 == NULL || e.put == NULL) {
        fprintf(stderr, "receive_bench: no memory\n");
        exit(2);
    }
    unsigned n_bufs;
    size_t size;
    void **bufs = bench_transport_recv_buffers(&n_bufs, &size);
    uint64_t per_round = 0, wire_per_round = 0;
    for (unsigned i = 0; i < n_bufs; i++) {
        per_round += fill(bufs[i], size, 1 + i % sources, i, kind, runs, &t, &e);
        wire_per_round += ((grain_wire_hdr_t *)bufs[i])->bytes;
    }
    uint64_t rounds = (messages + per_round - 1) / per_round;

    replay(g, n_bufs, 1); /* code loading and first touches */
    grain_receivers_stats_t rx0 = grain_receivers_stats(g->receivers);
    uint64_t net0 = g->recv_busy_ns;
    grain_applier_stats_t ap0 = g->applier != NULL ? grain_applier_stats(g->applier) : (grain_applier_stats_t){0};
    double secs[3];
    for (int i = 0; i < 3; i++)
        secs[i] = replay(g, n_bufs, rounds);
    double all = secs[0] + secs[1] + secs[2], tm = bench_median3(secs[0], secs[1], secs[2]);
    grain_receivers_stats_t rx = grain_receivers_stats(g->receivers);
    grain_applier_stats_t ap = g->applier != NULL ? grain_applier_stats(g->applier) : (grain_applier_stats_t){0};
    verify(g, &t, &e, 1 + 3 * rounds, kind_names[kind]);

    point_t p = {(double)(rounds * per_round) / tm, (double)(rounds * wire_per_round) / tm, 0, 0,
                 (double)(g->recv_busy_ns - net0) * 1e-9 / all, 0, 0,
                 (double)(ap.kept - ap0.kept) / (double)(3 * rounds * per_round)};
    if (rx.threads > 0) {
        p.recv_busy = (double)(rx.busy_ns - rx0.busy_ns) * 1e-9 / (all * rx.threads);
        p.max_share = (double)rx.max_buffers / (double)((1 + 3 * rounds) * n_bufs);
    }
    p.copy_bytes_per_s = copy_ceiling(g, (size_t)wire_per_round, rounds);
    /* The link's rate is the machine's, the same for every row: once a run. */
    static double link_bytes_per_s;
    if (link_bytes_per_s == 0)
        link_bytes_per_s = copy_ceiling(g, LINK_BYTES, 1);
    p.link_bytes_per_s = link_bytes_per_s;
    free(e.t64);
    free(e.t32);
    free(e.put);
    check(grain_free(g, t.put), "grain_free");
    check(grain_free(g, t.t32), "grain_free");
    check(grain_free(g, t.t64), "grain_free");
    check(grain_finalize(g), "grain_finalize");
    return p;
}

typedef struct options {
    unsigned long long max_threads, sources, messages;
    int only, runs;
    const char *csv_path, *json_path;
} options_t;

enum { OPT_THREADS, OPT_SOURCES, OPT_MESSAGES, OPT_CSV, OPT_JSON, OPT_KIND, OPT_WIRE };

static void take(void *state, int key, const char *option, const char *value)
{
    options_t *o = state;
    switch (key) {
    case OPT_THREADS: o->max_threads = cli_u64_in(option, value, 1, 64); break;
    case OPT_SOURCES: o->sources = cli_u64_in(option, value, 1, 1024); break;
    case OPT_MESSAGES: o->messages = cli_u64_in(option, value, 1, ~0ull); break;
    case OPT_CSV: o->csv_path = value; break;
    case OPT_JSON: o->json_path = value; break;
    case OPT_WIRE:
        o->runs = strcmp(value, "runs") == 0;
        if (!o->runs && strcmp(value, "plain") != 0) {
            fprintf(stderr, "%s: \"%s\" is neither runs nor plain\n", option, value);
            exit(CLI_EXIT_USAGE);
        }
        break;
    default:
        o->only = -1;
        for (int k = 0; k < KIND_COUNT; k++)
            o->only = strcmp(value, kind_names[k]) == 0 ? k : o->only;
        if (o->only < 0 && strcmp(value, "all") != 0) {
            fprintf(stderr, "%s: \"%s\" is none of inc64, add64, mixed and all\n", option, value);
            exit(CLI_EXIT_USAGE);
        }
    }
}

static void usage(FILE *out)
{
    fprintf(out, "usage: receive_bench [--threads T] [--sources S] [--kind inc64|add64|mixed|all] "
                 "[--wire runs|plain] [--messages N] [--csv FILE] [--json FILE]\n"
                 "  packed buffers replayed into a rank's receive threads and apply path, against a copy of\n"
                 "  the same bytes as the baseline\n");
}

int main(int argc, char **argv)
{
    static const cli_option_t options[] = {{"threads", 1, OPT_THREADS}, {"sources", 1, OPT_SOURCES},
                                           {"messages", 1, OPT_MESSAGES}, {"csv", 1, OPT_CSV},
                                           {"json", 1, OPT_JSON},         {"kind", 1, OPT_KIND},
                                           {"wire", 1, OPT_WIRE}};
    options_t o = {8, 4, 1ull << 26, -1, 1, "receive_bench.csv", "receive_bench.json"};
    const cli_group_t groups[] = {CLI_GROUP(options, take, &o)};
    cli_parse("receive_bench", argc, argv, groups, 1, 0, usage);
    unsigned max_threads = (unsigned)o.max_threads, sources = (unsigned)o.sources;
    uint64_t messages = o.messages;
    int only = o.only;
    const char *csv_path = o.csv_path, *json_path = o.json_path;
    FILE *csv = fopen(csv_path, "w"), *json = fopen(json_path, "w");
    if (csv == NULL || json == NULL) {
        perror(csv == NULL ? csv_path : json_path);
        return 2;
    }
    fprintf(csv, "wire,kind,threads,sources,msgs_per_s,wire_gb_per_s,copy_gb_per_s,ratio,link_gb_per_s,link_ratio,"
                 "network_busy,receive_threads_busy,receive_thread_max_share,kept_fraction\n");
    const char *wire = o.runs ? "runs" : "plain";
    fprintf(json, "{\"benchmark\":\"receive_bench\",\"wire\":\"%s\",\"sources\":%u,\"messages\":%llu,\"points\":[",
            wire, sources, (unsigned long long)messages);
    printf("%6s %7s %14s %9s %9s %7s %9s %7s %8s %8s %9s %6s\n", "kind", "threads", "msgs/s", "wire GB/s",
           "copy GB/s", "ratio", "link GB/s", "ratio", "net busy", "rx busy", "max share", "kept");
    int first = 1;
    for (int k = 0; k < KIND_COUNT; k++) {
        if (only >= 0 && k != only)
            continue;
        for (unsigned t = 1; t <= max_threads; t = t * 2 > max_threads && t < max_threads ? max_threads : t * 2) {
            point_t p = measure(t, sources, (kind_t)k, o.runs, messages);
            double ratio = p.wire_bytes_per_s / p.copy_bytes_per_s, link = p.wire_bytes_per_s / p.link_bytes_per_s;
            printf("%6s %7u %14.0f %9.2f %9.2f %7.3f %9.2f %7.3f %7.0f%% %7.0f%% %9.2f %5.0f%%\n", kind_names[k], t,
                   p.msgs_per_s, p.wire_bytes_per_s / 1e9, p.copy_bytes_per_s / 1e9, ratio,
                   p.link_bytes_per_s / 1e9, link, 100 * p.net_busy, 100 * p.recv_busy, p.max_share, 100 * p.kept);
            fprintf(csv, "%s,%s,%u,%u,%.0f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f\n", wire, kind_names[k], t, sources,
                    p.msgs_per_s, p.wire_bytes_per_s / 1e9, p.copy_bytes_per_s / 1e9, ratio,
                    p.link_bytes_per_s / 1e9, link, p.net_busy, p.recv_busy, p.max_share, p.kept);
            fprintf(json,
                    "%s{\"kind\":\"%s\",\"threads\":%u,\"msgs_per_s\":%.0f,\"wire_gb_per_s\":%.4f,"
                    "\"copy_gb_per_s\":%.4f,\"ratio\":%.4f,\"link_gb_per_s\":%.4f,\"link_ratio\":%.4f,"
                    "\"network_busy\":%.4f,\"receive_threads_busy\":%.4f,"
                    "\"receive_thread_max_share\":%.4f,\"kept_fraction\":%.4f}",
                    first ? "" : ",", kind_names[k], t, p.msgs_per_s, p.wire_bytes_per_s / 1e9,
                    p.copy_bytes_per_s / 1e9, ratio, p.link_bytes_per_s / 1e9, link, p.net_busy, p.recv_busy,
                    p.max_share, p.kept);
            first = 0;
            fflush(stdout);
        }
    }
    fprintf(json, "]}\n");
    fclose(csv);
    fclose(json);
    printf("wrote %s and %s\n", csv_path, json_path);
    return 0;
}
