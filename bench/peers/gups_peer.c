/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gups_ipc, gups_nvshmem: GUPS without grain, to measure grain's gups
 * against (bench/gups_peers.py).  One rank a GPU, the same table, update
 * stream, split over ranks, grid and JSON report as graphapps/gups, and its
 * oracle (gups_replay.h); only the update differs (gups_peer.cu).
 *
 *   mpirun -np N gups_ipc|gups_nvshmem [--log2-table L] [--updates U]
 *                                      [--per-wi P] [--wg-size W] [--verify] [--json]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "gups_peer.h"
#include "gups_host.h"
#include "tools/cli/cli.h"

typedef struct options {
    unsigned long long log2_table, updates, per_wi, wg;
    int verify, json;
} options_t;

enum { OPT_LOG2_TABLE, OPT_UPDATES, OPT_PER_WI, OPT_WG_SIZE, OPT_VERIFY, OPT_JSON };

static void take(void *state, int key, const char *option, const char *value)
{
    options_t *o = state;
    if (key == OPT_LOG2_TABLE)
        o->log2_table = cli_u64_in(option, value, 1, 40);
    else if (key == OPT_UPDATES)
        o->updates = cli_u64_in(option, value, 1, ~0ull);
    else if (key == OPT_PER_WI)
        o->per_wi = cli_u64_in(option, value, 1, 1u << 20);
    else if (key == OPT_WG_SIZE)
        o->wg = cli_u64_in(option, value, 32, 1024);
    else if (key == OPT_VERIFY)
        o->verify = 1;
    else
        o->json = 1;
}

/* gups_ipc or gups_nvshmem. */
static const char *program(void)
{
    static char name[32];
    snprintf(name, sizeof name, "gups_%s", gups_peer_name);
    return name;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np N %s [--log2-table L] [--updates U] [--per-wi P] [--wg-size W] [--verify] "
                 "[--json]\n"
                 "  HPCC RandomAccess on a table of 2^L counters spread over the ranks' GPUs, U updates\n"
                 "  (default 4 x 2^L), each one device atomic at the counter's owner (gups_peer.cu)\n",
            program());
}

static void fail(const char *why)
{
    fprintf(stderr, "%s: %s\n", program(), why);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Collective: every rank's block against the replayed stream. */
static int verified(const gups_split_t *s, unsigned long long updates)
{
    size_t bytes = (s->owned ? s->owned : 1) * sizeof(int64_t);
    int64_t *got = malloc(bytes), *expect = malloc(bytes);
    char why[256];
    if (got == NULL || expect == NULL)
        fail("no host memory to verify");
    if (gups_peer_read(got, s->owned, why, sizeof why) != 0)
        fail(why);
    gups_replay(expect, updates, s->mask, s->lo, s->owned);
    unsigned long long bad = gups_mismatches(got, expect, s->owned);
    free(got);
    free(expect);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return bad == 0;
}

int main(int argc, char **argv)
{
    static const cli_option_t options[] = {{"log2-table", 1, OPT_LOG2_TABLE}, {"updates", 1, OPT_UPDATES},
                                           {"per-wi", 1, OPT_PER_WI},         {"wg-size", 1, OPT_WG_SIZE},
                                           {"verify", 0, OPT_VERIFY},         {"json", 0, OPT_JSON}};
    options_t o = {.log2_table = 20, .per_wi = 64, .wg = 256};
    const cli_group_t groups[] = {CLI_GROUP(options, take, &o)};
    cli_parse(program(), argc, argv, groups, 1, 0, usage);
    if (o.updates == 0)
        o.updates = 4ull << o.log2_table;
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);

    gups_split_t s = gups_split((unsigned)o.log2_table, o.updates, me, n);
    char why[256];
    if (gups_peer_init(me, n, s.local_entries, why, sizeof why) != 0)
        fail(why);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (gups_peer_update(s.first, s.count, o.per_wi, s.local_entries, s.mask, gups_global_size(&s, o.per_wi, o.wg),
                         o.wg, why, sizeof why) != 0)
        fail(why);
    double seconds = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

    int ok = o.verify ? verified(&s, o.updates) : -1;
    double gups = (double)o.updates / seconds / 1e9;
    if (me == 0 && o.json)
        printf("{\"app\":\"gups\",\"peer\":\"%s\",\"ranks\":%d,\"device\":\"%s\",\"verified\":%s,\"seconds\":%.6f,"
               "\"gups\":%.6f,\"table_size\":%llu,\"updates\":%llu,\"wg_size\":%llu,\"per_wi\":%llu}\n",
               gups_peer_name, n, gups_peer_device(), ok < 0 ? "null" : ok ? "true" : "false", seconds, gups,
               (unsigned long long)s.size, o.updates, o.wg, o.per_wi);
    else if (me == 0)
        printf("%s: %d rank%s, table 2^%llu, %llu updates in %.3f s: %.6f GUP/s%s\n", program(), n,
               n == 1 ? "" : "s", o.log2_table, o.updates, seconds, gups,
               ok < 0 ? "" : ok ? "; verification passed" : "; verification FAILED");
    gups_peer_finalize();
    MPI_Finalize();
    return ok == 0 ? 1 : 0;
}
