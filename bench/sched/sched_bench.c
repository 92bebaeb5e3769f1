/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sched_bench: one of the scheduler's benchmarks (sched_suite.h) through
 * the task scheduler (--mode sched: the graph inferred, devices and
 * streams picked by --policy, copies made as needed; each policy of a
 * list in turn, one report each, the inputs built once) or hand-written on
 * --devices device endpoints (--mode hand, sched_hand.c).  Either way a
 * repetition is timed from the inputs on the host to the outputs on the
 * host, and checked against the host's run of the same steps.
 * bench/sched_bench.py runs the grid and draws the figures.
 *
 *   mpirun -np 1 sched_bench --bench vec|bs|ml|cg|mul [--size N | --footprint BYTES | --memory-share F]
 *                            [--partitions P] [--mode sched|hand] [--policy P[,P...]] [--devices D] [--reps R]
 *                            [--seed S] [--read-mostly] [--json]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grain/ep.h"
#include "grain/sched.h"
#include "sched_hand.h"
#include "sched_suite.h"
#include "tools/cli/cli.h"

extern const char sched_bench_source[];

#define MAX_REPS 1000
#define KERNELS 16
#define MAX_POLICIES 4 /* grain_policy_t's */
#define MAX_SIZE (1ull << 34)

typedef struct options {
    const char *bench, *mode;
    unsigned long long size, footprint, partitions, reps, seed, devices;
    double memory_share;
    grain_policy_t policy[MAX_POLICIES];
    unsigned n_policies;
    int json, read_mostly;
} options_t;

typedef struct run {
    const options_t *o;
    grain_policy_t policy;
    suite_t suite;
    double *want[SUITE_ARRAYS];
    double seconds[MAX_REPS];
    int verified;
    unsigned devices;
    grain_sched_stats_t stats;
    double bw[64 * 64]; /* the bandwidth matrix, GB/s: (devices + 1)^2, GRAIN_SCHED_DEVICES at most 63 */
} run_t;

enum {
    OPT_BENCH, OPT_SIZE, OPT_FOOTPRINT, OPT_MEMORY_SHARE, OPT_PARTITIONS, OPT_MODE, OPT_POLICY, OPT_DEVICES,
    OPT_REPS, OPT_SEED, OPT_JSON, OPT_READ_MOSTLY
};

static void take(void *state, int key, const char *option, const char *value)
{
    options_t *o = state;
    if (key == OPT_BENCH)
        o->bench = value;
    else if (key == OPT_SIZE)
        o->size = cli_u64_in(option, value, 1, MAX_SIZE);
    else if (key == OPT_FOOTPRINT)
        o->footprint = cli_bytes(option, value);
    else if (key == OPT_MEMORY_SHARE)
        o->memory_share = cli_real(option, value, 1e-9, 1.0);
    else if (key == OPT_PARTITIONS)
        o->partitions = cli_u64_in(option, value, 1, SUITE_MAX_PARTITIONS);
    else if (key == OPT_MODE)
        o->mode = value;
    else if (key == OPT_POLICY) {
        o->n_policies = 0;
        for (const char *at = value; o->n_policies < MAX_POLICIES;) {
            char name[64];
            size_t len = strcspn(at, ",");
            snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), at);
            if (grain_policy_parse(name, &o->policy[o->n_policies++]) != GRAIN_OK) {
                fprintf(stderr, "sched_bench: %s: %s\n", option, grain_error_message(NULL));
                exit(CLI_EXIT_USAGE);
            }
            if (at[len] == '\0')
                break;
            at += len + 1;
        }
    } else if (key == OPT_DEVICES)
        o->devices = cli_u64_in(option, value, 1, 64);
    else if (key == OPT_REPS)
        o->reps = cli_u64_in(option, value, 1, MAX_REPS - 1);
    else if (key == OPT_SEED)
        o->seed = cli_u64(option, value);
    else if (key == OPT_READ_MOSTLY)
        o->read_mostly = 1;
    else
        o->json = 1;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np 1 sched_bench --bench vec|bs|ml|cg|mul\n"
                 "                   [--size N | --footprint BYTES | --memory-share F] [--partitions P]\n"
                 "                   [--mode sched|hand] [--policy P[,P...]] [--devices D] [--reps R] [--seed S]\n"
                 "                   [--read-mostly] [--json]\n"
                 "  one benchmark of the task scheduler (GRAIN_SCHED, GRAIN_SCHED_DEVICES) or hand-written on\n"
                 "  D device endpoints' streams (default 1); each repetition timed host to host and checked;\n"
                 "  the size: vector length (CG, MUL: matrix rows; default 2^27 vec, 2^24 bs, 2^20 ml, 16384 cg,\n"
                 "  20000 mul), or the largest whose arrays take at most BYTES (e.g. 14G) or the share F of the\n"
                 "  device's memory (a CPU device: the host's);\n"
                 "  --read-mostly advises the inputs no kernel writes read-mostly (GRAIN_SCHED_MEMORY=managed)\n");
}

static int check_outputs(run_t *r, double *const *got)
{
    for (unsigned a = 0; a < r->suite.n_arrays; a++)
        if (r->suite.output[a] && !suite_same(&r->suite, a, got[a], r->want[a]))
            return 0;
    return 1;
}

/* ---- through the scheduler ---------------------------------------------- */

/* An input that no step writes. */
static int read_only(const suite_t *su, unsigned a)
{
    for (unsigned i = 0; i < su->n_steps; i++)
        for (unsigned j = 0; j < su->steps[i].n_args; j++)
            if (su->steps[i].args[j].array == (int)a && (su->steps[i].args[j].access & GRAIN_WRITE))
                return 0;
    return su->input[a];
}

static grain_status_t sched_kernel(grain_program_t *p, grain_kernel_t **kernels, const char **names,
                                   const char *name, grain_kernel_t **k_p)
{
    unsigned i = 0;
    while (i < KERNELS && names[i] != NULL && strcmp(names[i], name) != 0)
        i++;
    if (i == KERNELS)
        return GRAIN_ERR_INVALID;
    if (names[i] == NULL) {
        SUITE_CHECK(grain_kernel_create(p, name, &kernels[i]));
        names[i] = name;
    }
    *k_p = kernels[i];
    return GRAIN_OK;
}

static grain_status_t sched_rep(run_t *r, grain_sched_t *s, grain_program_t *p, grain_kernel_t **kernels,
                                const char **names, grain_array_t **arrays, double *seconds)
{
    const suite_t *su = &r->suite;
    for (unsigned a = 0; a < su->n_arrays; a++)
        if (su->input[a]) {
            void *h;
            SUITE_CHECK(grain_array_host(arrays[a], GRAIN_WRITE, &h));
            memcpy(h, su->init[a], suite_bytes(su, a));
        }
    double t0 = cli_now_s();
    for (unsigned i = 0; i < su->n_steps; i++) {
        const suite_step_t *st = &su->steps[i];
        grain_kernel_t *k;
        SUITE_CHECK(sched_kernel(p, kernels, names, st->kernel, &k));
        for (unsigned j = 0; j < st->n_args; j++) {
            const suite_arg_t *g = &st->args[j];
            if (g->array >= 0)
                SUITE_CHECK(grain_kernel_set_arg_array(k, j, arrays[g->array], g->access));
            else
                SUITE_CHECK(grain_kernel_set_arg(k, j, sizeof g->value, &g->value));
        }
        SUITE_CHECK(grain_sched_launch(k, 1, &st->global, NULL));
    }
    /* Every output on its way down before the first read waits for one, as
     * the hand-written version copies each out after its last writer. */
    for (unsigned a = 0; a < su->n_arrays; a++)
        if (su->output[a])
            SUITE_CHECK(grain_array_prefetch(arrays[a], -1));
    double *got[SUITE_ARRAYS] = {0};
    for (unsigned a = 0; a < su->n_arrays; a++)
        if (su->output[a])
            SUITE_CHECK(grain_array_host(arrays[a], GRAIN_READ, (void **)&got[a]));
    *seconds = cli_now_s() - t0;
    SUITE_CHECK(grain_sched_wait(s));
    r->verified = check_outputs(r, got);
    return GRAIN_OK;
}

static grain_status_t run_sched(grain_t *g, run_t *r)
{
    grain_sched_t *s;
    SUITE_CHECK(grain_sched_create(g, r->policy, &s));
    r->devices = grain_sched_devices(s);
    grain_program_t *p = NULL;
    grain_kernel_t *kernels[KERNELS] = {0};
    const char *names[KERNELS] = {0};
    grain_array_t *arrays[SUITE_ARRAYS] = {0};
    grain_status_t st = grain_sched_program_create(s, sched_bench_source, NULL, &p);
    for (unsigned a = 0; a < r->suite.n_arrays && st == GRAIN_OK; a++)
        st = grain_array_create(s, suite_bytes(&r->suite, a), &arrays[a]);
    /* Under managed memory each device that reads such an array then keeps
     * a copy of its own, as replicas do, where a prefetch would move it. */
    for (unsigned a = 0; a < r->suite.n_arrays && st == GRAIN_OK && r->o->read_mostly; a++)
        if (read_only(&r->suite, a))
            st = grain_array_advise(arrays[a], GRAIN_ADVISE_READ_MOSTLY, 0, 1);
    /* The first repetition builds nothing more but warms every path. */
    for (unsigned rep = 0; rep <= r->o->reps && st == GRAIN_OK && (rep == 0 || r->verified); rep++)
        st = sched_rep(r, s, p, kernels, names, arrays, &r->seconds[rep]);
    if (st == GRAIN_OK)
        st = grain_sched_stats(s, &r->stats);
    if (st == GRAIN_OK) /* measured already under min-max-transfer-time */
        st = grain_sched_bandwidth(s, 0, r->bw);
    for (unsigned i = 0; i < KERNELS; i++)
        grain_kernel_destroy(kernels[i]);
    grain_program_destroy(p);
    grain_sched_destroy(s); /* and its arrays */
    return st;
}

static grain_status_t run_hand(grain_t *g, run_t *r)
{
    sched_hand_t h = {.suite = &r->suite, .want = r->want, .source = sched_bench_source,
                      .reps = (unsigned)r->o->reps, .seconds = r->seconds};
    r->devices = (unsigned)r->o->devices;
    grain_status_t st = grain_ep_run(g, r->devices, sched_hand_endpoint, &h);
    r->verified = st == GRAIN_OK && !h.wrong;
    return st;
}

/* ---- report --------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(grain_t *g, const run_t *r)
{
    const options_t *o = r->o;
    unsigned n = (unsigned)o->reps;
    double sorted[MAX_REPS];
    memcpy(sorted, r->seconds + 1, n * sizeof *sorted); /* past the warm-up */
    qsort(sorted, n, sizeof *sorted, cmp_double);
    double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    const char *sched = getenv("GRAIN_SCHED");
    int hand = strcmp(o->mode, "hand") == 0;
    if (!o->json) {
        printf("sched_bench: %s, size %llu, %s%s%s on %u device%s: median %.6f s of %u, %s\n", o->bench, o->size,
               o->mode, hand ? "" : " ", hand ? "" : grain_policy_name(r->policy), r->devices,
               r->devices == 1 ? "" : "s", median, n, r->verified ? "verified" : "WRONG");
        return;
    }
    printf("{\"bench\":\"%s\",\"size\":%llu,\"bytes\":%llu,\"device_bytes\":%llu,\"partitions\":%llu,"
           "\"mode\":\"%s\",\"policy\":\"%s\",\"sched\":\"%s\",\"devices\":%u,\"backend\":\"%s\",\"device\":\"%s\","
           "\"read_mostly\":%s,\"reps\":%u,\"median_s\":%.9f,\"seconds\":[",
           o->bench, o->size, (unsigned long long)suite_total_bytes(&r->suite),
           (unsigned long long)grain_device_memory(g), o->partitions, o->mode,
           hand ? "" : grain_policy_name(r->policy),
           hand ? "" : sched != NULL ? sched : "async", r->devices, grain_backend_name(g), grain_device_name(g),
           o->read_mostly && !hand ? "true" : "false", n, median);
    for (unsigned i = 1; i <= n; i++)
        printf("%s%.9f", i > 1 ? "," : "", r->seconds[i]);
    printf("],\"copies\":%llu,\"bytes_copied\":%llu,\"bytes_peer\":%llu,\"edges\":%llu,\"streams_used\":%u,"
           "\"bandwidth_gbps\":[",
           (unsigned long long)r->stats.copies, (unsigned long long)r->stats.bytes_copied,
           (unsigned long long)r->stats.bytes_peer,
           (unsigned long long)r->stats.edges, r->stats.streams_used);
    unsigned locations = hand ? 0 : r->devices + 1;
    for (unsigned i = 0; i < locations * locations; i++)
        printf("%s%.3f", i > 0 ? "," : "", r->bw[i]);
    printf("],\"verified\":%s}\n", r->verified ? "true" : "false");
}

/* The host holds each array about three times: the inputs, the host's run
 * and the copy the scheduler or the hand-written version keeps there. */
#define HOST_COPIES 3

/* --size, --footprint, --memory-share or the benchmark's own default, once
 * the host is found to hold its arrays; 0, or -1 with a sentence on stderr. */
static int resolve_size(options_t *o, const grain_t *g)
{
    if (suite_default_size(o->bench) == 0) {
        fprintf(stderr, "sched_bench: no benchmark \"%s\": vec, bs, ml, cg or mul\n", o->bench);
        return -1;
    }
    if ((o->size != 0) + (o->footprint != 0) + (o->memory_share > 0) > 1) {
        fprintf(stderr, "sched_bench: --size, --footprint and --memory-share each set the size: give one\n");
        return -1;
    }
    uint64_t host = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    if (o->memory_share > 0) /* a CPU device's memory is the host's */
        o->footprint = (uint64_t)(o->memory_share * (double)(grain_device_memory(g) ? grain_device_memory(g) : host));
    unsigned parts = (unsigned)o->partitions;
    if (o->footprint != 0 && (o->size = suite_size_for(o->bench, o->footprint, parts, MAX_SIZE)) == 0) {
        uint64_t least = suite_footprint(o->bench, suite_smallest_size(o->bench, parts), parts);
        fprintf(stderr, "sched_bench: %s: a footprint of %llu bytes: even its smallest size takes %llu\n", o->bench,
                o->footprint, (unsigned long long)least);
        return -1;
    }
    if (o->size == 0)
        o->size = suite_default_size(o->bench);
    uint64_t bytes = suite_footprint(o->bench, o->size, parts);
    if (bytes == 0)
        return -1; /* suite_footprint said why */
    if (bytes > host / HOST_COPIES) {
        fprintf(stderr, "sched_bench: %s at size %llu: its arrays take %.1f GiB, which the host holds %d times; it has "
                "%.1f GiB: give a smaller size\n", o->bench, o->size, bytes / 1073741824.0, HOST_COPIES,
                host / 1073741824.0);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    options_t o = {.bench = "vec", .mode = "sched", .partitions = 4, .reps = 5, .seed = 1,
                   .devices = 1, .policy = {GRAIN_POLICY_MIN_MAX_TRANSFER_TIME}, .n_policies = 1};
    static const cli_option_t table[] = {{"bench", 1, OPT_BENCH},           {"size", 1, OPT_SIZE},
                                         {"footprint", 1, OPT_FOOTPRINT},   {"memory-share", 1, OPT_MEMORY_SHARE},
                                         {"partitions", 1, OPT_PARTITIONS}, {"mode", 1, OPT_MODE},
                                         {"policy", 1, OPT_POLICY},         {"devices", 1, OPT_DEVICES},
                                         {"reps", 1, OPT_REPS},             {"seed", 1, OPT_SEED},
                                         {"json", 0, OPT_JSON},             {"read-mostly", 0, OPT_READ_MOSTLY}};
    cli_group_t groups[] = {CLI_GROUP(table, take, &o)};
    cli_parse("sched_bench", argc, argv, groups, 1, 0, usage);
    if (strcmp(o.mode, "sched") != 0 && strcmp(o.mode, "hand") != 0) {
        fprintf(stderr, "sched_bench: --mode %s: expected sched or hand\n", o.mode);
        return CLI_EXIT_USAGE;
    }
    grain_t *g;
    grain_status_t st = grain_init(NULL, &g);
    if (st != GRAIN_OK) {
        fprintf(stderr, "sched_bench: grain_init: %s\n", grain_error_message(NULL));
        return 1;
    }
    static run_t r;
    r.o = &o;
    int hand = strcmp(o.mode, "hand") == 0, rc = CLI_EXIT_USAGE;
    double t0 = cli_now_s();
    if (resolve_size(&o, g) != 0 || suite_build(&r.suite, o.bench, o.size, (unsigned)o.partitions, o.seed) != 0)
        goto done;
    rc = 1;
    double t1 = cli_now_s();
    if (suite_reference(&r.suite, r.want) != 0) {
        fprintf(stderr, "sched_bench: no memory for the host's run\n");
        goto done;
    }
    /* At sizes of many GiB these take much of a run. */
    if (grain_my_pe(g) == 0)
        fprintf(stderr, "sched_bench: %s at size %llu, %.2f GiB of arrays: inputs drawn in %.1f s, the host's run in "
                "%.1f s\n", o.bench, o.size, suite_total_bytes(&r.suite) / 1073741824.0, t1 - t0, cli_now_s() - t1);
    rc = 0;
    for (unsigned i = 0; i < (hand ? 1 : o.n_policies); i++) {
        r.policy = o.policy[i];
        r.verified = 0;
        st = hand ? run_hand(g, &r) : run_sched(g, &r);
        if (st != GRAIN_OK)
            fprintf(stderr, "sched_bench: %s: %s (%s)\n", o.bench, grain_strerror(st), grain_error_message(g));
        else if (grain_my_pe(g) == 0)
            report(g, &r);
        rc |= st != GRAIN_OK || !r.verified;
    }
done:
    grain_finalize(g);
    for (unsigned a = 0; a < SUITE_ARRAYS; a++)
        free(r.want[a]);
    suite_free(&r.suite);
    return rc;
}
