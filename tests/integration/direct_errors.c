/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bad messages to another rank, under mpirun (2 or more ranks): each rank's
 * kernel sends 128 messages to the next rank, one of them bad in each way
 * the one-rank device test checks (a PE that does not exist, an offset past
 * or before the heap, a misaligned one, an unregistered handler).  The
 * sender reports it, naming the destination and the work-item; at the
 * destination the block holds exactly what the 127 good messages wrote.
 *
 * argv[1] names the path the messages must have taken: "direct" (the next
 * rank's heap mapped here, every message applied by its sender) or
 * "transport" (none of them direct).  Exit 0 only if every rank agrees.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_ok.h"
#include "grain/grain.h"

extern const char device_tests_source[];

#define HANDLER 2 /* wg_prims.cl's add_twice */
#define BAD_LANE 37u
#define WORDS 8

static int failures;

static void expect(int me, int ok, const char *what, const char *detail)
{
    if (!ok && ++failures <= 10)
        fprintf(stderr, "rank %d: %s (%s)\n", me, what, detail);
}

/* One number of grain_stats_json's totals (the first occurrence). */
static unsigned long long total_stat(grain_t *g, const char *name)
{
    char *json = NULL, key[64];
    size_t size = 0;
    FILE *f = open_memstream(&json, &size);
    if (f == NULL)
        exit(2);
    grain_stats_json(g, f);
    fclose(f);
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *at = strstr(json, key);
    unsigned long long v = at != NULL ? strtoull(at + strlen(key), NULL, 10) : ~0ull;
    free(json);
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "direct") != 0 && strcmp(argv[1], "transport") != 0)) {
        fprintf(stderr, "usage: direct_errors direct|transport\n");
        return 2;
    }
    int want_direct = strcmp(argv[1], "direct") == 0;
    grain_t *g;
    OK(grain_init(NULL, &g));
    int me = grain_my_pe(g), n = grain_n_pes(g), dest = (me + 1) % n;
    /* The first allocation sits at heap offset 0, so that one word before
     * it is outside the heap. */
    int64_t *target, host[WORDS], zeros[WORDS] = {0};
    OK(grain_malloc(g, sizeof host, (void **)&target));
    grain_program_t *prog;
    grain_kernel_t *k;
    OK(grain_program_create(g, device_tests_source, NULL, &prog));
    OK(grain_am_register_program(g, prog));
    OK(grain_kernel_create(prog, "send_bad_to", &k));
    static const struct {
        grain_status_t status;
        const char *phrase;
    } kinds[] = {{GRAIN_ERR_BAD_PE, "message to PE %d,"},
                 {GRAIN_ERR_BAD_OFFSET, "message to PE %d at heap offset 1073741824"},
                 {GRAIN_ERR_BAD_OFFSET, "message to PE %d at heap offset 18446744073709551608"},
                 {GRAIN_ERR_BAD_OFFSET, "add32 message to PE %d at heap offset 2"},
                 {GRAIN_ERR_BAD_HANDLER, "active message to PE %d for handler 77"}};
    for (int32_t what = 0; what < 5; what++) {
        OK(grain_memcpy(g, target, zeros, sizeof zeros));
        OK(grain_barrier_all(g));
        uint32_t bad_lane = BAD_LANE, handler = HANDLER;
        OK(grain_kernel_set_arg_ptr(k, 1, target));
        OK(grain_kernel_set_arg(k, 2, sizeof what, &what));
        OK(grain_kernel_set_arg(k, 3, sizeof bad_lane, &bad_lane));
        OK(grain_kernel_set_arg(k, 4, sizeof handler, &handler));
        OK(grain_kernel_set_arg(k, 5, sizeof dest, &dest));
        size_t global = 128, local = 64;
        OK(grain_launch(k, 1, &global, &local));
        grain_status_t st = grain_barrier_all(g);
        char phrase[128], detail[640];
        snprintf(phrase, sizeof phrase, kinds[what].phrase, what == 0 ? n + 4 : dest);
        snprintf(detail, sizeof detail, "kind %d: status %d, \"%s\"", what, (int)st, grain_error_message(g));
        expect(me, st == kinds[what].status, "the bad message's status", detail);
        expect(me, strstr(grain_error_message(g), phrase) != NULL, phrase, detail);
        expect(me, strstr(grain_error_message(g), "work-item 37 ") != NULL, "the work-item", detail);
        expect(me, grain_barrier_all(g) == GRAIN_OK, "the error reported once", detail);
        /* What arrived here from the previous rank: 127 good messages. */
        OK(grain_memcpy(g, host, target, sizeof host));
        int32_t low;
        memcpy(&low, host, sizeof low);
        int64_t first = what == 3 ? low : host[0];
        int64_t rest = what == 3 ? host[0] - low : 0;
        for (int i = 1; i < WORDS; i++)
            rest |= host[i];
        snprintf(detail, sizeof detail, "kind %d: the first word is %lld, the others %s", what, (long long)host[0],
                 rest ? "not zero" : "zero");
        expect(me, first == (what == 4 ? 2 * 127 : 127) && rest == 0, "the good messages alone", detail);
    }
    unsigned long long direct = total_stat(g, "direct_messages"), remote = total_stat(g, "remote_messages");
    char detail[128];
    snprintf(detail, sizeof detail, "%llu direct, %llu through the transport", direct, remote);
    expect(me, want_direct ? direct > 0 && remote == 0 : direct == 0 && remote > 0, "the path taken", detail);
    uint64_t total = (uint64_t)failures;
    OK(grain_allreduce(g, &total, 1, GRAIN_UINT64, GRAIN_SUM));
    if (me == 0)
        printf("direct_errors: %d ranks, %s path (%s): %s\n", n, argv[1], detail, total ? "FAILED" : "passed");
    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    OK(grain_free(g, target));
    OK(grain_finalize(g));
    return total ? 1 : 0;
}
