/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration test under mpirun (1 to 4 ranks) of gets and fetching atomics
 * (grain/device.h): lane L of every rank works on PE (rank + L) mod n, so
 * that the lanes of every rank contend for every rank's words.  Every rank
 * gathers what its lanes got back, and the ranks sum the tables
 * (grain_allreduce), so each checks the whole job:
 *
 *   fetch-inc (64, 32 bits)  every old value of a counter came back to one
 *                            lane, and the counter holds how many asked
 *   compare-and-swap         one lane won each slot (got 0); the others got
 *                            the winner's value, which the slot holds
 *   swap                     the old values and the last value are the
 *                            initial value and every lane's, once each
 *   fetch-or/and/xor/add     the last value is what every lane's operand
 *                            makes, and every old value is part of it
 *                            (or, and)
 *   get, fetch, getmem       the words the owner wrote before the kernel
 *   get_nbi, getmem_nbi      the same words, found after the work-group's
 *                            quiet (in the kernel), after the host's
 *                            grain_quiet and after grain_barrier_all
 *   getmem_local             the same block, through local memory
 *   a compare-and-swap lock  the holders' increments of a counter by a get
 *                            and a put inside it all count, and every
 *                            release found the holder's id
 *
 * on the direct path and through the transport (GRAIN_PEER=off), where each
 * is a request and a reply.
 *
 *   fetch bad-pe | bad-offset | bad-size | bad-dest
 *                            one lane asks for a PE that does not exist, a
 *                            misaligned word, 6 bytes, or a get that does not
 *                            wait into a misaligned word: the error names
 *                            the rank
 *
 * Exit 0 only if every rank agrees.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_ok.h"
#include "fetch_layout.h"
#include "grain/grain.h"

extern const char fetch_source[];

#define MAX_ID (FETCH_MAX_PES * FETCH_LANES + 1) /* lane ids run from 1 */

static int64_t data64(int rank, int i)
{
    return ((int64_t)(rank + 1) << 36) | (i * 5 + 3);
}

static int32_t data32(int rank, int i)
{
    return (rank + 1) * 1000000 + i * 7 + 2;
}

/* Sums of every rank's tables: [pe][value] counts of what came back, and
 * each rank's last words at [pe]. */
typedef struct tables {
    uint64_t inc64[FETCH_MAX_PES][MAX_ID], inc32[FETCH_MAX_PES][MAX_ID], swap[FETCH_MAX_PES][MAX_ID + 1];
    uint64_t wins64[FETCH_MAX_PES][FETCH_CLAIMS], wins32[FETCH_MAX_PES][FETCH_CLAIMS];
    int64_t last[FETCH_MAX_PES][FETCH_DATA]; /* each rank's words before its data */
} tables_t;

static int bad;

static void fail(int me, const char *what, int pe, long long got, long long want)
{
    if (++bad <= 10)
        fprintf(stderr, "rank %d: %s of PE %d: %lld, expected %lld\n", me, what, pe, got, want);
}

/* Lanes of the whole job that work on PE `pe`. */
static int askers(int n, int pe)
{
    int k = 0;
    for (int r = 0; r < n; r++)
        for (int lane = 0; lane < FETCH_LANES; lane++)
            k += (r + lane) % n == pe;
    return k;
}

static void check(int me, int n, const int64_t *w, tables_t *t)
{
    for (int pe = 0; pe < n; pe++) {
        int k = askers(n, pe);
        uint64_t or = 0, xor = 0;
        int64_t add = 0;
        for (int r = 0; r < n; r++)
            for (int lane = 0; lane < FETCH_LANES; lane++)
                if ((r + lane) % n == pe) {
                    uint64_t id = (uint64_t)r * FETCH_LANES + lane + 1;
                    or |= 1ull << (lane % 64);
                    xor ^= (uint32_t)id;
                    add += (int32_t)id;
                }
        for (int v = 0; v < MAX_ID; v++) {
            if (t->inc64[pe][v] != (v < k))
                fail(me, "lanes that got this fetch_inc64 value", pe, (long long)t->inc64[pe][v], v < k);
            if (t->inc32[pe][v] != (v < k))
                fail(me, "lanes that got this fetch_inc32 value", pe, (long long)t->inc32[pe][v], v < k);
        }
        const int64_t *last = t->last[pe];
        if (last[FETCH_COUNT64] != k)
            fail(me, "the 64-bit counter", pe, last[FETCH_COUNT64], k);
        if ((int32_t)last[FETCH_COUNT32] != k)
            fail(me, "the 32-bit counter", pe, (int32_t)last[FETCH_COUNT32], k);
        if ((uint64_t)last[FETCH_OR] != or)
            fail(me, "the or word", pe, last[FETCH_OR], (long long)or);
        if ((uint64_t)last[FETCH_AND] != ~or)
            fail(me, "the and word", pe, last[FETCH_AND], (long long)~or);
        if ((uint32_t)last[FETCH_XOR32] != (uint32_t)xor)
            fail(me, "the xor word", pe, (uint32_t)last[FETCH_XOR32], (uint32_t)xor);
        if ((int32_t)last[FETCH_ADD32] != (int32_t)add)
            fail(me, "the add word", pe, (int32_t)last[FETCH_ADD32], (int32_t)add);
        /* swap: the initial value (index 0) and every asker's id, once */
        for (int v = 0; v <= MAX_ID; v++) {
            uint64_t want = v == 0;
            if (v > 0) {
                int r = (v - 1) / FETCH_LANES, lane = (v - 1) % FETCH_LANES;
                want = r < n && (r + lane) % n == pe;
            }
            if (t->swap[pe][v] != want)
                fail(me, "swap values seen this many times", pe, (long long)t->swap[pe][v], (long long)want);
        }
        for (int s = 0; s < FETCH_CLAIMS; s++) {
            int contenders = 0;
            for (int r = 0; r < n; r++)
                for (int lane = 0; lane < FETCH_LANES; lane++)
                    contenders += (r + lane) % n == pe && lane % FETCH_CLAIMS == s;
            if (t->wins64[pe][s] != (contenders > 0))
                fail(me, "64-bit slot winners", pe, (long long)t->wins64[pe][s], contenders > 0);
            if (t->wins32[pe][s] != (contenders > 0))
                fail(me, "32-bit slot winners", pe, (long long)t->wins32[pe][s], contenders > 0);
        }
    }
    /* What this rank's lanes got back from words whose last value is known
     * now; and the gets. */
    for (int lane = 0; lane < FETCH_LANES; lane++) {
        const int64_t *out = &w[FETCH_OUT + lane * R_N];
        int pe = (me + lane) % n, s = lane % FETCH_CLAIMS;
        int64_t claim64 = t->last[pe][FETCH_CLAIM64 + s], claim32 = (int32_t)t->last[pe][FETCH_CLAIM32 + s];
        if (out[R_CAS64] != 0 && out[R_CAS64] != claim64)
            fail(me, "a losing compare_swap64", pe, out[R_CAS64], claim64);
        if ((int32_t)out[R_CAS32] != 0 && (int32_t)out[R_CAS32] != claim32)
            fail(me, "a losing compare_swap32", pe, (int32_t)out[R_CAS32], claim32);
        if (((uint64_t)out[R_OR] & ~(uint64_t)t->last[pe][FETCH_OR]) != 0)
            fail(me, "a fetch_or64 value beyond the last", pe, out[R_OR], t->last[pe][FETCH_OR]);
        if (((uint64_t)out[R_AND] | (uint64_t)t->last[pe][FETCH_AND]) != (uint64_t)out[R_AND])
            fail(me, "a fetch_and64 value below the last", pe, out[R_AND], t->last[pe][FETCH_AND]);
        if (out[R_GET64] != data64(pe, lane))
            fail(me, "get64", pe, out[R_GET64], data64(pe, lane));
        if (out[R_FETCH64] != data64(pe, lane))
            fail(me, "atomic_fetch64", pe, out[R_FETCH64], data64(pe, lane));
        if ((int32_t)out[R_GET32] != data32(pe, lane))
            fail(me, "get32", pe, (int32_t)out[R_GET32], data32(pe, lane));
    }
    const int32_t *got32 = (const int32_t *)&w[FETCH_GOT32] + 1;
    for (int group = 0; group < 2; group++) {
        int next = (me + 1 + group) % n;
        for (int i = 0; i < FETCH_BLOCK64; i++)
            if (w[FETCH_GOT64 + group * FETCH_BLOCK64 + i] != data64(next, i))
                fail(me, "a getmem 64-bit word", next, w[FETCH_GOT64 + group * FETCH_BLOCK64 + i], data64(next, i));
        for (int i = 0; i < FETCH_BLOCK32; i++)
            if (got32[group * FETCH_BLOCK32 + i] != data32(next, 1 + i))
                fail(me, "a getmem 32-bit word", next, got32[group * FETCH_BLOCK32 + i], data32(next, 1 + i));
    }
    if (got32[-1] != 0 || got32[2 * FETCH_BLOCK32] != 0)
        fail(me, "a word beside the 32-bit getmem blocks", me, 1, 0);
}

/* Runs fetch.cl's kernel `name` on FETCH_LANES work-items, completes it
 * with `complete` and copies the rank's words into `host`. */
static void run_kernel(grain_t *g, grain_program_t *prog, const char *name, int64_t *w, int64_t *host,
                       grain_status_t (*complete)(grain_t *))
{
    grain_kernel_t *k;
    OK(grain_kernel_create(prog, name, &k));
    OK(grain_kernel_set_arg_ptr(k, 1, w));
    size_t global = FETCH_LANES, local = FETCH_WG;
    OK(grain_launch(k, 1, &global, &local));
    OK(complete(g));
    OK(grain_memcpy(g, host, w, FETCH_WORDS * sizeof *host));
    grain_kernel_destroy(k);
}

/* The words of the gets that do not wait, as fetch.cl's nbi_gets asks for
 * them, at `at` (FETCH_NBI64 or FETCH_SEEN: the same layout); `how` says
 * what completed them. */
static void check_nbi(int me, int n, const int64_t *w, size_t at, const char *how)
{
    char what[96];
    for (int lane = 0; lane < FETCH_LANES; lane++) {
        int pe = (me + lane) % n;
        snprintf(what, sizeof what, "get64_nbi after %s", how);
        if (w[at + lane] != data64(pe, lane))
            fail(me, what, pe, w[at + lane], data64(pe, lane));
        int32_t got32 = ((const int32_t *)&w[at + FETCH_LANES])[lane];
        snprintf(what, sizeof what, "get32_nbi after %s", how);
        if (got32 != data32(pe, lane))
            fail(me, what, pe, got32, data32(pe, lane));
    }
    snprintf(what, sizeof what, "a getmem_nbi word after %s", how);
    for (int group = 0; group < 2; group++) {
        int next = (me + 1 + group) % n;
        const int64_t *block = &w[at + FETCH_NBIMEM - FETCH_NBI64 + group * FETCH_BLOCK64];
        for (int i = 0; i < FETCH_BLOCK64; i++)
            if (block[i] != data64(next, i))
                fail(me, what, next, block[i], data64(next, i));
    }
}

/* Runs `name` once with the gets' destinations cleared, completes it with
 * `complete`, and checks the words at `at`. */
static void run_nbi(grain_t *g, grain_program_t *prog, int64_t *w, int64_t *host, const char *name,
                    grain_status_t (*complete)(grain_t *), size_t at, const char *how)
{
    memset(&host[FETCH_NBI64], 0, (FETCH_WORDS - FETCH_NBI64) * sizeof *host);
    OK(grain_memcpy(g, &w[FETCH_NBI64], &host[FETCH_NBI64], (FETCH_WORDS - FETCH_NBI64) * sizeof *host));
    OK(grain_barrier_all(g));
    run_kernel(g, prog, name, w, host, complete);
    check_nbi(grain_my_pe(g), grain_n_pes(g), host, at, how);
    OK(grain_barrier_all(g)); /* no rank clears its words while another's gets are due */
}

/* The gets that do not wait, completed three ways; and getmem_local. */
static void run_nbi_all(grain_t *g, grain_program_t *prog, int64_t *w, int64_t *host)
{
    int me = grain_my_pe(g), n = grain_n_pes(g);
    run_nbi(g, prog, w, host, "fetch_nbi_quiet", grain_barrier_all, FETCH_SEEN, "the work-group's quiet");
    for (int group = 0; group < 2; group++) {
        int next = (me + 1 + group) % n;
        for (int i = 0; i < FETCH_BLOCK64; i++)
            if (host[FETCH_LOCALMEM + group * FETCH_BLOCK64 + i] != data64(next, i))
                fail(me, "a getmem_local word", next, host[FETCH_LOCALMEM + group * FETCH_BLOCK64 + i],
                     data64(next, i));
    }
    run_nbi(g, prog, w, host, "fetch_nbi", grain_quiet, FETCH_NBI64, "the host's grain_quiet");
    run_nbi(g, prog, w, host, "fetch_nbi", grain_barrier_all, FETCH_NBI64, "grain_barrier_all");
}

/* fetch.cl's fetch_lock; rank 0 holds the lock, the last rank the counter. */
static void run_lock(grain_t *g, grain_program_t *prog, int64_t *w, int64_t *host)
{
    int me = grain_my_pe(g), n = grain_n_pes(g);
    run_kernel(g, prog, "fetch_lock", w, host, grain_barrier_all);
    int64_t holders = (int64_t)n * (FETCH_LANES / FETCH_LOCK_LANES) * FETCH_LOCK_ROUNDS;
    if (me == n - 1 && host[FETCH_LOCKED] != holders)
        fail(me, "the counter incremented inside the lock", me, host[FETCH_LOCKED], holders);
    if (me == 0 && host[FETCH_LOCK] != 0)
        fail(me, "the lock after every release", me, host[FETCH_LOCK], 0);
    if (host[FETCH_LOCK_BAD] != 0)
        fail(me, "releases that found another lane's id", me, host[FETCH_LOCK_BAD], 0);
}

static int run_bad(grain_t *g, grain_program_t *prog, int64_t *w, const char *mode)
{
    static const char *const modes[] = {"bad-pe", "bad-offset", "bad-size", "bad-dest"};
    uint32_t m = 0;
    for (uint32_t i = 0; i < 4; i++)
        if (strcmp(mode, modes[i]) == 0)
            m = i + 1;
    if (m == 0) {
        fprintf(stderr, "usage: fetch [bad-pe|bad-offset|bad-size|bad-dest]\n");
        return 2;
    }
    grain_kernel_t *k;
    OK(grain_kernel_create(prog, "fetch_bad", &k));
    OK(grain_kernel_set_arg_ptr(k, 1, w));
    OK(grain_kernel_set_arg(k, 2, sizeof m, &m));
    size_t global = FETCH_WG, local = FETCH_WG;
    OK(grain_launch(k, 1, &global, &local));
    grain_status_t st = grain_barrier_all(g);
    static const grain_status_t want[] = {GRAIN_ERR_BAD_PE, GRAIN_ERR_BAD_OFFSET, GRAIN_ERR_INVALID,
                                          GRAIN_ERR_BAD_OFFSET};
    char rank[32];
    snprintf(rank, sizeof rank, "rank %d", grain_my_pe(g));
    printf("fetch: rank %d: %s: %s\n", grain_my_pe(g), grain_strerror(st), grain_error_message(g));
    int64_t got;
    OK(grain_memcpy(g, &got, &w[FETCH_OUT], sizeof got));
    grain_kernel_destroy(k);
    /* The lane got 0, or nothing was written. */
    return st != want[m - 1] || strstr(grain_error_message(g), rank) == NULL || (m < 3 && got != 0) ||
           (m == 4 && got != -1);
}

int main(int argc, char **argv)
{
    grain_t *g;
    OK(grain_init(NULL, &g));
    int me = grain_my_pe(g), n = grain_n_pes(g);
    if (n > FETCH_MAX_PES) {
        if (me == 0)
            fprintf(stderr, "fetch: at most %d ranks, not %d\n", FETCH_MAX_PES, n);
        grain_finalize(g);
        return 2;
    }
    static int64_t host[FETCH_WORDS];
    host[FETCH_SWAP] = FETCH_SWAP_INIT;
    host[FETCH_AND] = FETCH_AND_INIT;
    host[FETCH_OUT] = -1; /* what a refused lane overwrites with 0 */
    for (int i = 0; i < FETCH_LANES; i++) {
        host[FETCH_DATA + i] = data64(me, i);
        ((int32_t *)&host[FETCH_DATA32])[i] = data32(me, i);
    }
    int64_t *w;
    OK(grain_malloc(g, sizeof host, (void **)&w));
    OK(grain_memcpy(g, w, host, sizeof host));
    OK(grain_barrier_all(g)); /* every rank's words are there before any lane reads them */
    grain_program_t *prog;
    OK(grain_program_create(g, fetch_source, NULL, &prog));
    if (argc > 1) {
        bad = run_bad(g, prog, w, argv[1]);
    } else {
        run_kernel(g, prog, "fetch_all", w, host, grain_barrier_all);
        tables_t *t = calloc(1, sizeof *t);
        if (t == NULL)
            return 2;
        for (int lane = 0; lane < FETCH_LANES; lane++) {
            const int64_t *out = &host[FETCH_OUT + lane * R_N];
            int pe = (me + lane) % n;
            if (out[R_INC64] >= 0 && out[R_INC64] < MAX_ID)
                t->inc64[pe][out[R_INC64]]++;
            else
                fail(me, "a fetch_inc64 value out of range", pe, out[R_INC64], 0);
            if ((int32_t)out[R_INC32] >= 0 && (int32_t)out[R_INC32] < MAX_ID)
                t->inc32[pe][(int32_t)out[R_INC32]]++;
            else
                fail(me, "a fetch_inc32 value out of range", pe, (int32_t)out[R_INC32], 0);
            int64_t s = out[R_SWAP] == FETCH_SWAP_INIT ? 0 : out[R_SWAP];
            if (s >= 0 && s <= MAX_ID)
                t->swap[pe][s]++;
            else
                fail(me, "a swap value out of range", pe, out[R_SWAP], 0);
            t->wins64[pe][lane % FETCH_CLAIMS] += out[R_CAS64] == 0;
            t->wins32[pe][lane % FETCH_CLAIMS] += (int32_t)out[R_CAS32] == 0;
        }
        int64_t s = host[FETCH_SWAP] == FETCH_SWAP_INIT ? 0 : host[FETCH_SWAP];
        if (s >= 0 && s <= MAX_ID)
            t->swap[me][s]++;
        memcpy(t->last[me], host, sizeof t->last[me]);
        OK(grain_allreduce(g, t, sizeof *t / sizeof(uint64_t), GRAIN_UINT64, GRAIN_SUM));
        check(me, n, host, t);
        free(t);
        run_nbi_all(g, prog, w, host);
        run_lock(g, prog, w, host);
    }
    uint64_t total_bad = (uint64_t)bad;
    OK(grain_allreduce(g, &total_bad, 1, GRAIN_UINT64, GRAIN_SUM));
    if (me == 0)
        printf("fetch%s%s: %d ranks: %s (%llu mismatches)\n", argc > 1 ? " " : "", argc > 1 ? argv[1] : "", n,
               total_bad ? "FAILED" : "passed", (unsigned long long)total_bad);
    grain_program_destroy(prog);
    OK(grain_free(g, w));
    OK(grain_finalize(g));
    return total_bad ? 1 : 0;
}
