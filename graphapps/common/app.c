/* SPDX-License-Identifier: BSD-3-Clause */
#include "app.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { COMMON_OUT, COMMON_VERIFY, COMMON_JSON };

static void take_common(void *state, int key, const char *option, const char *value)
{
    app_common_t *c = state;
    if (key == COMMON_OUT)
        c->out = value;
    else if (key == COMMON_VERIFY)
        c->verify = 1;
    else
        c->json = 1;
}

static void take_setting(void *state, int key, const char *option, const char *value)
{
    if (grain_config_set(state, grain_config_name((size_t)key), value) != GRAIN_OK)
        exit(APP_EXIT_ERROR); /* grain said why */
}

/* Every setting as an option, built once: queue_slots is --queue-slots. */
static cli_group_t settings_group(grain_config_t *config)
{
    static cli_option_t *options;
    static size_t count;
    if (options == NULL) {
        while (grain_config_name(count) != NULL)
            count++;
        options = calloc(count, sizeof *options);
        for (size_t i = 0; options != NULL && i < count; i++) {
            char *name = strdup(grain_config_name(i));
            if (name == NULL) {
                options = NULL;
                break;
            }
            for (char *p = name; *p; p++)
                *p = *p == '_' ? '-' : *p;
            options[i] = (cli_option_t){name, 1, (int)i};
        }
        if (options == NULL) {
            fprintf(stderr, "no memory for the options\n");
            exit(APP_EXIT_ERROR);
        }
    }
    return (cli_group_t){options, count, take_setting, config};
}

void app_parse_options(const char *app, int argc, char **argv, const cli_group_t *groups, size_t n_groups,
                       app_common_t *common, grain_config_t *config, void (*usage)(FILE *out))
{
    static const cli_option_t common_options[] = {
        {"out", 1, COMMON_OUT}, {"verify", 0, COMMON_VERIFY}, {"json", 0, COMMON_JSON}};
    cli_group_t all[16];
    if (n_groups + 2 > sizeof all / sizeof all[0]) {
        fprintf(stderr, "%s: %zu option groups are more than app_parse_options holds\n", app, n_groups);
        exit(APP_EXIT_ERROR);
    }
    memcpy(all, groups, n_groups * sizeof *groups);
    all[n_groups] = CLI_GROUP(common_options, take_common, common);
    all[n_groups + 1] = settings_group(config);
    cli_parse(app, argc, argv, all, n_groups + 2, 0, usage);
}

void app_config_usage(FILE *out)
{
    grain_config_t *config;
    if (grain_config_create(&config) != GRAIN_OK)
        return;
    fprintf(out, "\nEvery grain setting is also an option: --queue-slots N, --buffer-size 256, "
                 "--reserve sg, ...\n(GRAIN_QUEUE_SLOTS becomes --queue-slots).\n\n");
    grain_config_print(config, out);
    grain_config_destroy(config);
}

const char *app_plural(long long n)
{
    return n == 1 ? "" : "s";
}

grain_agent_t app_parse_agent(const char *text)
{
    grain_agent_t agent;
    app_check(grain_agent_parse(text, &agent), "--agent");
    return agent;
}

void *app_malloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p == NULL) {
        fprintf(stderr, "no memory for %zu bytes\n", size);
        exit(APP_EXIT_ERROR);
    }
    return p;
}

void app_check(grain_status_t st, const char *what)
{
    if (st == GRAIN_OK)
        return;
    /* grain logged the sentence that says what was wrong. */
    fprintf(stderr, "%s failed: %s\n", what, grain_strerror(st));
    exit(APP_EXIT_ERROR);
}

double app_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void app_kernel_ptrs(grain_kernel_t *k, unsigned first, unsigned count, void *const *ptrs)
{
    for (unsigned i = 0; i < count; i++)
        app_check(grain_kernel_set_arg_ptr(k, first + i, ptrs[i]), "setting kernel arguments");
}

void app_group_sums(grain_t *g, const int64_t *dev, size_t groups, unsigned width, int64_t *host_rows,
                    int64_t *out)
{
    app_check(grain_memcpy(g, host_rows, dev, groups * width * sizeof *host_rows), "reading the work-groups' sums");
    for (unsigned c = 0; c < width; c++)
        out[c] = 0;
    for (size_t i = 0; i < groups; i++)
        for (unsigned c = 0; c < width; c++)
            out[c] += host_rows[i * width + c];
}

void app_clock_start(grain_t *g, app_clock_t *c)
{
    app_check(grain_time_split(g, &c->s0), "reading the time split");
    c->t0 = app_seconds();
}

app_timing_t app_clock_stop(grain_t *g, const app_clock_t *c)
{
    double wall = app_seconds() - c->t0;
    grain_time_split_t s;
    app_check(grain_time_split(g, &s), "reading the time split");
    double parts[5] = {s.compute_s - c->s0.compute_s, s.queue_s - c->s0.queue_s,
                       s.aggregation_s - c->s0.aggregation_s, s.network_s - c->s0.network_s, wall};
    for (int i = 0; i < 4; i++)
        parts[4] -= parts[i];
    double slowest = wall;
    app_check(grain_allreduce(g, parts, 5, GRAIN_DOUBLE, GRAIN_SUM), "reducing the time split");
    app_check(grain_allreduce(g, &slowest, 1, GRAIN_DOUBLE, GRAIN_MAX), "reducing the time");
    double n = (double)grain_n_pes(g);
    return (app_timing_t){slowest, parts[0] / n, parts[1] / n, parts[2] / n, parts[3] / n, parts[4] / n};
}

void app_timing_json(FILE *out, const app_timing_t *t)
{
    fprintf(out,
            "\"seconds\":%.6f,\"time_split\":{\"compute_s\":%.6f,\"queue_s\":%.6f,\"aggregation_s\":%.6f,"
            "\"network_s\":%.6f,\"host_s\":%.6f}",
            t->seconds, t->compute_s, t->queue_s, t->aggregation_s, t->network_s, t->host_s);
}

void app_region_totals(grain_t *g, grain_region_t *const *regions, unsigned n, grain_region_stats_t *out)
{
    grain_region_stats_t sum = {0};
    for (unsigned i = 0; i < n; i++) {
        grain_region_stats_t s;
        app_check(grain_region_stats(regions[i], &s), "reading the transfer statistics");
        if (i == 0)
            sum = s;
        else {
            sum.moves += s.moves;
            sum.bytes_sent += s.bytes_sent;
            sum.bytes_written += s.bytes_written;
            sum.producer_wait_ns += s.producer_wait_ns;
            sum.drain_ns += s.drain_ns;
            sum.others_ns += s.others_ns;
        }
    }
    uint64_t totals[6] = {sum.moves,       sum.bytes_sent, sum.bytes_written, sum.producer_wait_ns,
                          sum.drain_ns, sum.others_ns};
    app_check(grain_allreduce(g, totals, 6, GRAIN_UINT64, GRAIN_SUM), "reducing the statistics");
    uint64_t ranks = (uint64_t)grain_n_pes(g);
    sum.moves = totals[0];
    sum.bytes_sent = totals[1];
    sum.bytes_written = totals[2];
    sum.producer_wait_ns = totals[3] / ranks;
    sum.drain_ns = totals[4] / ranks;
    sum.others_ns = totals[5] / ranks;
    *out = sum;
}

void app_region_json(FILE *out, const grain_region_stats_t *s)
{
    fprintf(out,
            "\"agent\":\"%s\",\"chunk_bytes\":%llu,\"transfer_threads\":%llu,\"chunk_moves\":%llu,"
            "\"bytes_sent\":%llu,\"bytes_written\":%llu,\"mapped_peers\":%llu,\"profiled\":%s,"
            "\"end_split\":{\"producer_wait_s\":%.6f,\"drain_s\":%.6f,\"others_s\":%.6f}",
            grain_agent_name(s->agent), (unsigned long long)s->chunk_bytes, (unsigned long long)s->transfer_threads,
            (unsigned long long)s->moves, (unsigned long long)s->bytes_sent, (unsigned long long)s->bytes_written,
            (unsigned long long)s->mapped_peers, s->profiled ? "true" : "false", 1e-9 * (double)s->producer_wait_ns,
            1e-9 * (double)s->drain_ns, 1e-9 * (double)s->others_ns);
}

void app_timing_print(FILE *out, const app_timing_t *t)
{
    fprintf(out,
            "time split (mean over ranks): compute %.3f s, queue %.3f s, aggregation %.3f s, network %.3f s, "
            "host %.3f s\n",
            t->compute_s, t->queue_s, t->aggregation_s, t->network_s, t->host_s);
}

uint64_t app_block(uint64_t n, unsigned ranks, unsigned rank, uint64_t *first, uint64_t *count)
{
    uint64_t block = (n + ranks - 1) / ranks, lo = (uint64_t)rank * block;
    *first = lo < n ? lo : n;
    *count = lo >= n ? 0 : (n - lo < block ? n - lo : block);
    return block;
}

size_t app_grid(uint64_t items, size_t wg)
{
    return (size_t)((items ? (items + wg - 1) / wg : 1) * wg);
}

void *app_device_copy(grain_t *grain, const void *host, size_t bytes)
{
    void *d;
    app_check(grain_mem_alloc(grain, bytes ? bytes : 1, &d), "allocating device memory");
    if (bytes)
        app_check(grain_memcpy(grain, d, host, bytes), "copying to the device");
    return d;
}

void app_device_free(grain_t *grain, void *p)
{
    if (p != NULL)
        app_check(grain_mem_free(grain, p), "freeing device memory");
}

grain_config_t *app_config(void)
{
    grain_config_t *config;
    app_check(grain_config_create(&config), "reading the GRAIN_* settings");
    return config;
}

grain_t *app_init(grain_config_t *config)
{
    grain_t *g;
    app_check(grain_init(config, &g), "grain_init");
    grain_config_destroy(config);
    return g;
}

void app_fail(grain_t *g, const char *app, const char *message)
{
    if (grain_my_pe(g) == 0)
        fprintf(stderr, "%s: %s\n", app, message);
    grain_finalize(g);
    exit(APP_EXIT_ERROR);
}

FILE *app_json_begin(grain_t *g, int json, const char *app)
{
    if (!json || grain_my_pe(g) != 0)
        return NULL;
    printf("{\"app\":\"%s\",\"ranks\":%d,\"backend\":\"%s\",\"device\":\"%s\",\"transport\":\"%s\",\"grain\":\"%s\"",
           app, grain_n_pes(g), grain_backend_name(g), grain_device_name(g), grain_transport_name(g),
           grain_version());
    return stdout;
}

void app_json_end(grain_t *g, FILE *out)
{
    if (out != NULL)
        fputs(",\"stats\":", out);
    grain_stats_json(g, out);
    if (out != NULL)
        fputs("}\n", out);
}

int app_finish(grain_t *g, int status, int verified)
{
    app_check(grain_finalize(g), "grain_finalize");
    if (status != APP_EXIT_OK)
        return status;
    return verified == 0 ? APP_EXIT_VERIFY_FAILED : APP_EXIT_OK;
}

int app_write_by_rank(grain_t *g, const char *app, const char *path, void (*write)(FILE *f, void *ctx), void *ctx)
{
    int me = grain_my_pe(g);
    int64_t failed = 0;
    for (int r = 0; r < grain_n_pes(g); r++) {
        if (r == me && !failed) {
            FILE *f = fopen(path, r == 0 ? "w" : "a");
            if (f != NULL)
                write(f, ctx);
            failed = f == NULL || ferror(f);
            failed |= f != NULL && fclose(f) != 0;
        }
        /* The next rank appends only after this one closed the file, and
         * stops if it failed. */
        if (grain_allreduce(g, &failed, 1, GRAIN_INT64, GRAIN_MAX) != GRAIN_OK)
            failed = 1;
    }
    if (failed && me == 0)
        fprintf(stderr, "%s: %s: could not write it\n", app, path);
    return failed ? APP_EXIT_ERROR : APP_EXIT_OK;
}

typedef struct values_out {
    const uint64_t *ids;
    uint64_t count, base;
    const double *values;
} values_out_t;

static void write_values(FILE *f, void *ctx)
{
    const values_out_t *v = ctx;
    for (uint64_t k = 0; k < v->count; k++) {
        fprintf(f, "%llu ", (unsigned long long)(v->ids[k] + v->base));
        if (isinf(v->values[k]))
            fputs("inf\n", f);
        else
            fprintf(f, "%.17g\n", v->values[k]); /* exact for doubles and integers */
    }
}

int app_write_values(grain_t *g, const char *app, const uint64_t *ids, uint64_t count, uint64_t base,
                     const double *values, const char *path)
{
    values_out_t v = {ids, count, base, values};
    return app_write_by_rank(g, app, path, write_values, &v);
}
