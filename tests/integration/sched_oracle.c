/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The task scheduler against the order of the program: a random program
 * (a fixed seed) of kernel launches, host reads and writes, prefetches
 * and advice on a set of arrays, with updates that do not commute, run by the
 * scheduler under the policy given and whatever GRAIN_SCHED and
 * GRAIN_SCHED_DEVICES say, and on the host in program order.  Every host
 * read and every array at the end must equal the host's bit for bit, so a
 * run under any policy and mode equals the serial run.
 *
 *   sched_oracle [--policy P] [--seed S] [--launches N] [--arrays A]
 *                [--elements E] [--dot FILE] [--trace FILE]
 *
 * --dot writes the scheduler's graph, --trace each element's arrays and
 * accesses (a line "kind array:access ..."), for check_sched_dot.py.
 * Prints one line ending "ok" and exits 0, else names the first wrong
 * value and exits 1 (2 for a call that failed).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_ok.h"
#include "grain/sched.h"

extern const char sched_oracle_source[];

enum { OP_SCALE, OP_MIX, OP_MIX_SELF, OP_FILL, OP_COMBINE, OP_HOST_WRITE, OP_HOST_READ, OP_PREFETCH, OP_ADVISE, N_OPS };
/* Out of 100: mostly kernels. */
static const unsigned weight[N_OPS] = {18, 22, 6, 16, 20, 5, 5, 5, 3};

typedef struct program {
    grain_sched_t *s;
    grain_kernel_t *k[4]; /* scale3, mix3, fill5, combine7 */
    grain_array_t **arrays;
    uint64_t **want; /* the host's copies, in program order */
    unsigned n_arrays;
    uint64_t n;
    uint64_t reads_hash, want_reads_hash;
    FILE *trace;
} program_t;

static uint64_t rng_state;

static uint64_t next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint64_t fnv(uint64_t h, const uint64_t *x, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        h = (h ^ x[i]) * 1099511628211ull;
    return h;
}

static void trace(program_t *p, const char *kind, unsigned n, const unsigned *arrays, const char *const *access)
{
    if (p->trace == NULL)
        return;
    fprintf(p->trace, "%s", kind);
    for (unsigned i = 0; i < n; i++)
        fprintf(p->trace, " %u:%s", arrays[i], access[i]);
    fprintf(p->trace, "\n");
}

static void launch(program_t *p, unsigned kernel, unsigned n_arrays, const unsigned *arrays,
                   const grain_access_t *access, uint64_t a)
{
    grain_kernel_t *k = p->k[kernel];
    for (unsigned i = 0; i < n_arrays; i++)
        OK(grain_kernel_set_arg_array(k, i, p->arrays[arrays[i]], access[i]));
    OK(grain_kernel_set_arg(k, n_arrays, sizeof p->n, &p->n));
    OK(grain_kernel_set_arg(k, n_arrays + 1, sizeof a, &a));
    size_t global = (size_t)p->n;
    OK(grain_sched_launch(k, 1, &global, NULL));
}

/* One step of the program, by the scheduler and on the host. */
static void step(program_t *p, unsigned op, uint64_t a)
{
    unsigned x = (unsigned)(next() % p->n_arrays), y = (unsigned)(next() % p->n_arrays),
             z = (unsigned)(next() % p->n_arrays);
    uint64_t *wx = p->want[x], *wy = p->want[y], *wz = p->want[z], n = p->n;
    static const grain_access_t rw_r[] = {GRAIN_READ_WRITE, GRAIN_READ}, w_r[] = {GRAIN_WRITE, GRAIN_READ},
                                w_r_r[] = {GRAIN_WRITE, GRAIN_READ, GRAIN_READ};
    switch (op) {
    case OP_SCALE:
        launch(p, 0, 1, &x, rw_r, a);
        trace(p, "kernel", 1, &x, (const char *const[]){"rw"});
        for (uint64_t i = 0; i < n; i++)
            wx[i] = wx[i] * 3u + a;
        break;
    case OP_MIX_SELF: /* mix with the same array as both arguments */
        y = x;
        /* fall through */
    case OP_MIX:
        wy = p->want[y];
        launch(p, 1, 2, (unsigned[]){x, y}, rw_r, a);
        trace(p, "kernel", 2, (unsigned[]){x, y}, (const char *const[]){"rw", "r"});
        for (uint64_t i = 0; i < n; i++)
            wx[i] = wx[i] * 3u + wy[i] + a;
        break;
    case OP_FILL:
        if (x == y) /* a kernel may not write what it reads unless it says so */
            y = (x + 1) % p->n_arrays;
        wy = p->want[y];
        launch(p, 2, 2, (unsigned[]){x, y}, w_r, a);
        trace(p, "kernel", 2, (unsigned[]){x, y}, (const char *const[]){"w", "r"});
        for (uint64_t i = 0; i < n; i++)
            wx[i] = wy[i] * 5u + a + i;
        break;
    case OP_COMBINE:
        if (x == y || x == z) {
            y = (x + 1) % p->n_arrays;
            z = (x + 2) % p->n_arrays;
        }
        wy = p->want[y];
        wz = p->want[z];
        launch(p, 3, 3, (unsigned[]){x, y, z}, w_r_r, a);
        trace(p, "kernel", 3, (unsigned[]){x, y, z}, (const char *const[]){"w", "r", "r"});
        for (uint64_t i = 0; i < n; i++)
            wx[i] = (wy[i] * 7u) ^ (wz[i] + a);
        break;
    case OP_HOST_WRITE: {
        uint64_t *h;
        OK(grain_array_host(p->arrays[x], GRAIN_READ_WRITE, (void **)&h));
        trace(p, "host", 1, &x, (const char *const[]){"rw"});
        for (uint64_t i = 0; i < n; i++) {
            h[i] = h[i] * 11u + a;
            wx[i] = wx[i] * 11u + a;
        }
        break;
    }
    case OP_HOST_READ: {
        const uint64_t *h;
        OK(grain_array_host(p->arrays[x], GRAIN_READ, (void **)&h));
        trace(p, "host", 1, &x, (const char *const[]){"r"});
        p->reads_hash = fnv(p->reads_hash, h, n);
        p->want_reads_hash = fnv(p->want_reads_hash, wx, n);
        break;
    }
    case OP_PREFETCH: {
        int device = (int)(next() % (grain_sched_devices(p->s) + 1)) - 1;
        OK(grain_array_prefetch(p->arrays[x], device));
        trace(p, "prefetch", 1, &x, (const char *const[]){"r"});
        break;
    }
    default: { /* set more often than cleared, so that some stays on */
        int device = (int)(next() % (grain_sched_devices(p->s) + 1)) - 1;
        grain_advice_t advice = (grain_advice_t)(next() % 3);
        OK(grain_array_advise(p->arrays[x], advice, device, next() % 4 != 0));
        trace(p, "advice", 1, &x, (const char *const[]){"r"});
        break;
    }
    }
}

static unsigned pick_op(void)
{
    unsigned r = (unsigned)(next() % 100), op = 0;
    while (r >= weight[op]) {
        r -= weight[op];
        op++;
    }
    return op;
}

int main(int argc, char **argv)
{
    grain_policy_t policy = GRAIN_POLICY_ROUND_ROBIN;
    uint64_t seed = 1;
    unsigned launches = 200, n_arrays = 16;
    uint64_t elements = 4096;
    const char *dot = NULL, *trace_path = NULL;
    static const struct option options[] = {{"policy", required_argument, NULL, 'p'},
                                            {"seed", required_argument, NULL, 's'},
                                            {"launches", required_argument, NULL, 'l'},
                                            {"arrays", required_argument, NULL, 'a'},
                                            {"elements", required_argument, NULL, 'e'},
                                            {"dot", required_argument, NULL, 'd'},
                                            {"trace", required_argument, NULL, 't'},
                                            {NULL, 0, NULL, 0}};
    for (int c; (c = getopt_long(argc, argv, "", options, NULL)) != -1;) {
        switch (c) {
        case 'p':
            OK(grain_policy_parse(optarg, &policy));
            break;
        case 's':
            seed = strtoull(optarg, NULL, 0);
            break;
        case 'l':
            launches = (unsigned)strtoul(optarg, NULL, 0);
            break;
        case 'a':
            n_arrays = (unsigned)strtoul(optarg, NULL, 0);
            break;
        case 'e':
            elements = strtoull(optarg, NULL, 0);
            break;
        case 'd':
            dot = optarg;
            break;
        case 't':
            trace_path = optarg;
            break;
        default:
            fprintf(stderr, "usage: sched_oracle [--policy P] [--seed S] [--launches N] [--arrays A] "
                            "[--elements E] [--dot FILE] [--trace FILE]\n");
            return 2;
        }
    }
    if (n_arrays < 3 || elements == 0) {
        fprintf(stderr, "sched_oracle: give at least 3 arrays and 1 element\n");
        return 2;
    }
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;

    grain_t *g;
    OK(grain_init(NULL, &g));
    program_t p = {.n_arrays = n_arrays, .n = elements};
    OK(grain_sched_create(g, policy, &p.s));
    grain_program_t *prog;
    OK(grain_sched_program_create(p.s, sched_oracle_source, NULL, &prog));
    static const char *const names[] = {"scale3", "mix3", "fill5", "combine7"};
    for (unsigned i = 0; i < 4; i++)
        OK(grain_kernel_create(prog, names[i], &p.k[i]));
    p.arrays = calloc(n_arrays, sizeof *p.arrays);
    p.want = calloc(n_arrays, sizeof *p.want);
    if (p.arrays == NULL || p.want == NULL) {
        fprintf(stderr, "sched_oracle: no memory\n");
        return 2;
    }
    if (trace_path != NULL && (p.trace = fopen(trace_path, "w")) == NULL) {
        perror(trace_path);
        return 2;
    }
    size_t bytes = (size_t)elements * sizeof(uint64_t);
    for (unsigned x = 0; x < n_arrays; x++) {
        OK(grain_array_create(p.s, bytes, &p.arrays[x]));
        if ((p.want[x] = malloc(bytes)) == NULL) {
            fprintf(stderr, "sched_oracle: no memory\n");
            return 2;
        }
        /* Half the arrays start from the host, half as the zeros they are. */
        uint64_t *h = NULL;
        if (x % 2 == 0) {
            OK(grain_array_host(p.arrays[x], GRAIN_WRITE, (void **)&h));
            trace(&p, "host", 1, &x, (const char *const[]){"rw"});
        }
        for (uint64_t i = 0; i < elements; i++) {
            p.want[x][i] = x % 2 == 0 ? i * 2654435761u + x : 0;
            if (h != NULL)
                h[i] = p.want[x][i];
        }
    }
    for (unsigned l = 0; l < launches; l++)
        step(&p, pick_op(), 1000u + l);
    OK(grain_sched_wait(p.s));

    int bad = 0;
    for (unsigned x = 0; x < n_arrays && !bad; x++) {
        const uint64_t *h;
        OK(grain_array_host(p.arrays[x], GRAIN_READ, (void **)&h));
        trace(&p, "host", 1, &x, (const char *const[]){"r"});
        for (uint64_t i = 0; i < elements && !bad; i++)
            if (h[i] != p.want[x][i]) {
                fprintf(stderr, "sched_oracle: array %u, element %" PRIu64 ": %" PRIu64 ", wanted %" PRIu64 "\n", x,
                        i, h[i], p.want[x][i]);
                bad = 1;
            }
    }
    if (!bad && p.reads_hash != p.want_reads_hash) {
        fprintf(stderr, "sched_oracle: the host reads during the program saw other values than the order gives\n");
        bad = 1;
    }
    grain_sched_stats_t st;
    OK(grain_sched_stats(p.s, &st));
    unsigned devices = grain_sched_devices(p.s), used = 0;
    for (unsigned d = 0; d < devices && d < 64; d++)
        used += st.per_device[d] > 0;
    if (dot != NULL) {
        FILE *f = fopen(dot, "w");
        if (f == NULL) {
            perror(dot);
            return 2;
        }
        OK(grain_sched_export_dot(p.s, f));
        fclose(f);
    }
    if (p.trace != NULL)
        fclose(p.trace);
    /* Round-robin spreads kernels with no parents over every device. */
    if (!bad && policy == GRAIN_POLICY_ROUND_ROBIN && used < devices) {
        fprintf(stderr, "sched_oracle: round-robin ran kernels on %u of %u devices\n", used, devices);
        bad = 1;
    }
    uint64_t hash = 14695981039346656037ull;
    for (unsigned x = 0; x < n_arrays; x++)
        hash = fnv(hash, p.want[x], elements);
    printf("sched_oracle: rank %d: %u steps on %u arrays, %s on %u device%s (%u ran kernels), %u streams, "
           "%" PRIu64 " edges, %" PRIu64 " copies of %" PRIu64 " bytes, hash %016" PRIx64 ": %s\n",
           grain_my_pe(g), launches, n_arrays, grain_policy_name(policy), devices, devices == 1 ? "" : "s", used,
           st.streams_used, st.edges, st.copies, st.bytes_copied, hash, bad ? "WRONG" : "ok");
    for (unsigned i = 0; i < 4; i++)
        grain_kernel_destroy(p.k[i]);
    grain_program_destroy(prog);
    for (unsigned x = 0; x < n_arrays; x++) {
        grain_array_destroy(p.arrays[x]);
        free(p.want[x]);
    }
    free(p.arrays);
    free(p.want);
    grain_sched_destroy(p.s);
    OK(grain_finalize(g));
    return bad;
}
