/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kmer: phase 1 of Meraculous' de Bruijn graph construction (Gravel
 * section 6): a distributed hash table of the reads' canonical k-mers
 * (k odd, up to 31, 2 bits a base) with each k-mer's count and the counts of
 * the bases seen on either side of it, filled by active messages.  The reads
 * (FASTA or FASTQ) are spread over the ranks in blocks; each k-mer lives on
 * the rank its hash names, in an open-addressing table in the symmetric heap.
 * A table that fills is an error that names the option to raise, never a
 * lost k-mer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/app.h"
#include "../common/reads.h"
#include "grain/device/port.h"
#include "grain/grain.h"
#include "kmer_table.h"

extern const char kmer_kernel_source[];

typedef struct kmer_options {
    const char *reads;
    unsigned long long k, table_slots;
    app_common_t common;
} kmer_options_t;

static void usage(FILE *out)
{
    fprintf(out, "usage: kmer --reads FILE [--k K] [--table-slots N] [--out FILE] [--verify] [--json]\n"
                 "  --reads FILE       FASTA or FASTQ reads\n"
                 "  --k K              k-mer length, odd, 1 to 31 (21)\n"
                 "  --table-slots N    hash-table slots a rank, a power of two (default: the one at or above\n"
                 "                     1.25 x the k-mers a rank would own if all were distinct); a slot\n"
                 "                     takes 48 bytes of the symmetric heap (--heap-size, 64M by default)\n"
                 "  --out FILE         one line a k-mer: \"KMER COUNT lA lC lG lT rA rC rG rT\", the counts of\n"
                 "                     the bases seen left and right of it (canonical k-mers)\n"
                 "  --verify           compare with a sequential count of the same k-mers\n"
                 "  --json             one JSON object with the result and statistics\n");
    app_config_usage(out);
}

enum { KMER_READS, KMER_K, KMER_TABLE_SLOTS };

static void take(void *state, int key, const char *option, const char *value)
{
    kmer_options_t *o = state;
    if (key == KMER_READS)
        o->reads = value;
    else if (key == KMER_K)
        o->k = cli_u64(option, value);
    else
        o->table_slots = cli_u64(option, value);
}

static grain_config_t *parse(int argc, char **argv, kmer_options_t *o)
{
    static const cli_option_t options[] = {
        {"reads", 1, KMER_READS}, {"k", 1, KMER_K}, {"table-slots", 1, KMER_TABLE_SLOTS}};
    grain_config_t *config = app_config();
    *o = (kmer_options_t){.k = 21};
    const cli_group_t groups[] = {CLI_GROUP(options, take, o)};
    app_parse_options("kmer", argc, argv, groups, 1, &o->common, config, usage);
    if (o->reads == NULL) {
        fprintf(stderr, "kmer: --reads FILE is required\n");
        exit(APP_EXIT_ERROR);
    }
    if (o->k < 1 || o->k > 31 || o->k % 2 == 0) {
        fprintf(stderr, "kmer: --k %llu: k must be odd and 1 to 31 (2 bits a base in 64; an even k-mer can be its "
                        "own reverse complement)\n", o->k);
        exit(APP_EXIT_ERROR);
    }
    return config;
}

/* ---- the sequential reference: every window, sorted ---- */

typedef struct window {
    uint64_t key;
    uint32_t left, right;
} window_t;

static int by_key(const void *a, const void *b)
{
    const window_t *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Every k bases of every read, valid or not: a bound on the k-mers. */
static uint64_t window_bound(const app_reads_t *r, unsigned k)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < r->n; i++)
        n += r->offset[i + 1] - r->offset[i] >= k ? r->offset[i + 1] - r->offset[i] - k + 1 : 0;
    return n;
}

/* Every window of every read, as the kernel sees them; *n_p of them. */
static window_t *windows(const app_reads_t *r, unsigned k, size_t *n_p)
{
    size_t n = 0;
    window_t *w = app_malloc(window_bound(r, k) * sizeof *w);
    for (uint64_t i = 0; i < r->n; i++) {
        const char *s = r->bases + r->offset[i];
        uint64_t len = r->offset[i + 1] - r->offset[i];
        kmer_window_t kw = {0, 0, 0};
        for (uint64_t p = 0; p < len; p++) {
            kmer_push(&kw, kmer_base_code(s[p]), k);
            if (kw.run < k)
                continue;
            uint64_t start = p + 1 - k;
            unsigned left = start > 0 ? kmer_base_code(s[start - 1]) : 4u;
            unsigned right = p + 1 < len ? kmer_base_code(s[p + 1]) : 4u;
            w[n].key = kmer_canonical(&kw, left, right, &w[n].left, &w[n].right);
            n++;
        }
    }
    *n_p = n;
    return w;
}

/* The slot of `key` in a rank's table, or NULL. */
static const uint64_t *find(const uint64_t *table, uint64_t slots, uint64_t key)
{
    for (uint64_t probes = 0, s = KMER_SLOT_START(key) & (slots - 1); probes < slots; probes++, s = (s + 1) & (slots - 1)) {
        const uint64_t *slot = table + s * KMER_SLOT_WORDS;
        if (slot[0] == key)
            return slot;
        if (slot[0] == KMER_EMPTY)
            return NULL;
    }
    return NULL;
}

/* Mismatches between this rank's table and a sequential count of its k-mers;
 * *total: the k-mers of all reads. */
static int64_t verify(const app_reads_t *all, unsigned k, unsigned ranks, unsigned me, const uint64_t *table,
                      uint64_t slots, uint64_t used, uint64_t *total)
{
    size_t n;
    window_t *w = windows(all, k, &n);
    *total = n;
    qsort(w, n, sizeof *w, by_key);
    int64_t wrong = 0;
    uint64_t mine = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        uint64_t count = 0, sides[8] = {0};
        for (; j < n && w[j].key == w[i].key; j++, count++) {
            if (w[j].left < 4)
                sides[w[j].left]++;
            if (w[j].right < 4)
                sides[4 + w[j].right]++;
        }
        if (KMER_OWNER(w[i].key, ranks) == me) {
            mine++;
            const uint64_t *s = find(table, slots, w[i].key);
            const uint32_t *ext = s != NULL ? (const uint32_t *)(s + 2) : NULL;
            int same = s != NULL && s[1] == count;
            for (int b = 0; same && b < 8; b++)
                same = ext[b] == sides[b];
            wrong += !same;
        }
        i = j;
    }
    free(w);
    return wrong + (int64_t)(mine > used ? mine - used : used - mine);
}

typedef struct table_out {
    const uint64_t *table;
    uint64_t slots;
    unsigned k;
} table_out_t;

static void write_table(FILE *f, void *ctx)
{
    const table_out_t *t = ctx;
    char kmer[32];
    for (uint64_t s = 0; s < t->slots; s++) {
        const uint64_t *slot = t->table + s * KMER_SLOT_WORDS;
        if (slot[0] == KMER_EMPTY)
            continue;
        for (unsigned i = 0; i < t->k; i++)
            kmer[i] = "ACGT"[(slot[0] >> (2 * (t->k - 1 - i))) & 3u];
        kmer[t->k] = '\0';
        const uint32_t *ext = (const uint32_t *)(slot + 2);
        fprintf(f, "%s %llu %u %u %u %u %u %u %u %u\n", kmer, (unsigned long long)slot[1], ext[0], ext[1], ext[2],
                ext[3], ext[4], ext[5], ext[6], ext[7]);
    }
}

int main(int argc, char **argv)
{
    kmer_options_t o;
    grain_t *g = app_init(parse(argc, argv, &o));
    unsigned me = (unsigned)grain_my_pe(g), ranks = (unsigned)grain_n_pes(g), k = (unsigned)o.k;

    app_reads_t all;
    app_error_t err;
    if (app_read_reads(o.reads, &all, &err) != 0)
        app_fail(g, "kmer", err.msg);
    uint64_t first, local_n, total_windows = window_bound(&all, k);
    uint64_t block = app_block(all.n, ranks, me, &first, &local_n);
    uint64_t slots = 1024;
    while (slots < (o.table_slots ? o.table_slots : total_windows / ranks + total_windows / ranks / 4))
        slots *= 2;
    if (o.table_slots && slots != o.table_slots)
        app_fail(g, "kmer", "--table-slots must be a power of two");

    /* The table, every key free, and the overflow counter after it. */
    size_t table_words = slots * KMER_SLOT_WORDS + 1;
    uint64_t *table;
    app_check(grain_malloc(g, table_words * sizeof *table, (void **)&table), "allocating the k-mer table");
    uint64_t *host = app_malloc(table_words * sizeof *host);
    memset(host, 0, table_words * sizeof *host);
    for (uint64_t s = 0; s < slots; s++)
        host[s * KMER_SLOT_WORDS] = KMER_EMPTY;
    app_check(grain_memcpy(g, table, host, table_words * sizeof *table), "clearing the k-mer table");

    uint64_t *offsets = app_malloc((local_n + 1) * sizeof *offsets);
    for (uint64_t i = 0; i <= local_n; i++)
        offsets[i] = all.offset[first + i] - all.offset[first];
    /* Reads may all be empty, and then there are no bases at all. */
    char *bases = app_device_copy(g, offsets[local_n] ? all.bases + all.offset[first] : NULL, offsets[local_n]);
    uint64_t *dev_offsets = app_device_copy(g, offsets, (local_n + 1) * sizeof *offsets);
    grain_program_t *prog;
    grain_kernel_t *kern;
    app_check(grain_program_create(g, kmer_kernel_source, NULL, &prog), "building the kmer kernel");
    app_check(grain_am_register_program(g, prog), "registering the insert handler");
    app_check(grain_kernel_create(prog, "kmer_count", &kern), "creating the kmer kernel");
    uint64_t log2 = 0, table_offset;
    while ((1ull << log2) < slots)
        log2++;
    app_check(grain_heap_offset(g, table, &table_offset), "locating the k-mer table");
    grain_u64 table_a1 = KMER_A1(table_offset, log2);
    app_kernel_ptrs(kern, 1, 2, (void *const[]){bases, dev_offsets});
    app_check(grain_kernel_set_arg(kern, 3, sizeof local_n, &local_n), "setting kernel arguments");
    app_check(grain_kernel_set_arg(kern, 4, sizeof k, &k), "setting kernel arguments");
    app_check(grain_kernel_set_arg(kern, 5, sizeof table_a1, &table_a1), "setting kernel arguments");
    app_check(grain_kernel_set_arg(kern, 6, sizeof ranks, &ranks), "setting kernel arguments");
    size_t wg = 256, global = app_grid(block, wg);

    app_check(grain_barrier_all(g), "the barrier before the run"); /* every table is clear */
    app_clock_t clock;
    app_clock_start(g, &clock);
    app_check(grain_launch(kern, 1, &global, &wg), "launching kmer");
    app_check(grain_barrier_all(g), "grain_barrier_all after kmer");
    app_timing_t timing = app_clock_stop(g, &clock);
    app_check(grain_memcpy(g, host, table, table_words * sizeof *host), "reading the k-mer table");

    uint64_t counts[3] = {host[slots * KMER_SLOT_WORDS], 0, 0}; /* lost to a full table, distinct, total */
    for (uint64_t s = 0; s < slots; s++) {
        counts[1] += host[s * KMER_SLOT_WORDS] != KMER_EMPTY;
        counts[2] += host[s * KMER_SLOT_WORDS + 1];
    }
    uint64_t used = counts[1];
    app_check(grain_allreduce(g, counts, 3, GRAIN_UINT64, GRAIN_SUM), "counting the k-mers");
    if (counts[0] != 0) {
        snprintf(err.msg, sizeof err.msg,
                 "%llu insertions found a table of %llu slots full: raise --table-slots (and --heap-size)",
                 (unsigned long long)counts[0], (unsigned long long)slots);
        app_fail(g, "kmer", err.msg);
    }
    int verified = -1;
    int64_t wrong = 0;
    if (o.common.verify) {
        uint64_t total;
        wrong = verify(&all, k, ranks, me, host, slots, used, &total);
        app_check(grain_allreduce(g, &wrong, 1, GRAIN_INT64, GRAIN_SUM), "reducing the verification");
        verified = wrong == 0 && counts[2] == total;
    }
    int status = APP_EXIT_OK;
    table_out_t t = {host, slots, k};
    if (o.common.out != NULL)
        status = app_write_by_rank(g, "kmer", o.common.out, write_table, &t);

    if (me == 0 && !o.common.json) {
        printf("kmer: %s, %llu reads, k = %u, %u rank%s, %s on %s\n", o.reads, (unsigned long long)all.n, k, ranks,
               app_plural(ranks), grain_backend_name(g), grain_device_name(g));
        printf("%llu k-mers, %llu distinct, in %.3f s; tables of %llu slots a rank\n", (unsigned long long)counts[2],
               (unsigned long long)counts[1], timing.seconds, (unsigned long long)slots);
        app_timing_print(stdout, &timing);
        if (verified >= 0)
            printf("verification: %s (%lld k-mers differ from the sequential count)\n",
                   verified ? "passed" : "FAILED", (long long)wrong);
    }
    FILE *out = app_json_begin(g, o.common.json, "kmer");
    if (out != NULL) {
        fprintf(out,
                ",\"reads\":%llu,\"k\":%u,\"kmers\":%llu,\"distinct\":%llu,\"table_slots\":%llu,\"verified\":%s,"
                "\"wrong\":%lld,\"kmers_per_second\":%.6g,",
                (unsigned long long)all.n, k, (unsigned long long)counts[2], (unsigned long long)counts[1],
                (unsigned long long)slots, verified < 0 ? "null" : verified ? "true" : "false", (long long)wrong,
                (double)counts[2] / timing.seconds);
        app_timing_json(out, &timing);
    }
    app_json_end(g, out);

    grain_kernel_destroy(kern);
    grain_program_destroy(prog);
    app_device_free(g, dev_offsets);
    app_device_free(g, bases);
    free(offsets);
    free(host);
    app_check(grain_free(g, table), "freeing");
    app_reads_free(&all);
    return app_finish(g, status, verified);
}
