/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counter-triggered transfers under mpirun (1 to 4 ranks):
 *
 *   chunks AGENT CHUNK_BYTES [WORDS [ITERATIONS [THREADS]]]
 *
 * Every rank's kernel writes its slice of a replicated array; the slice goes
 * to every other rank (GRAIN_REGION_PEERS), to the host copy, and its first
 * third to the next rank's inbox at another offset.  After each
 * grain_region_end every rank checks every word it should hold, and at the
 * end that every chunk moved exactly once an iteration.  The chunk size
 * need not divide anything, nor be a multiple of the word.
 *
 *   chunks errors
 *
 * checks the refusals: a mapping that leaves a chunk unwritten, a
 * destination that does not exist, a producer that skips grain_chunk_done,
 * the iteration protocol misused.  Exit 0 only if every rank agrees.
 *
 * The device and launch agents run on CUDA (and HIP); on OpenCL, which
 * refuses them, the run reports itself skipped (77) with the refusal.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grain/device/port.h"
#include "check_ok.h"
#include "grain/grain.h"
#include "chunks_pattern.h"

extern const char chunks_source[];

#define WG 64
#define SKIPPED 77     /* CTest's SKIP_RETURN_CODE */
#define NOT_RUN (-1)   /* transfers(): the backend refused the agent */

#define EXPECT(x, want)                                                                            \
    do {                                                                                           \
        grain_status_t st_ = (x);                                                                  \
        if (st_ != (want)) {                                                                       \
            fprintf(stderr, "rank %d: %s returned %s, expected %s\n", me, #x, grain_strerror(st_), \
                    grain_strerror(want));                                                         \
            bad++;                                                                                 \
        }                                                                                          \
    } while (0)

typedef struct run {
    grain_t *g;
    grain_kernel_t *produce;
    int me, n;
    uint64_t words, inbox; /* a slice's words, the words of its first third */
} run_t;

/* The layout above: slices of every rank, then the inbox. */
static grain_region_desc_t layout(const run_t *t, grain_agent_t agent, size_t chunk, unsigned threads,
                                  grain_segment_t *seg)
{
    uint64_t slice = t->words * 8;
    unsigned n_seg = 0;
    seg[n_seg++] = (grain_segment_t){.offset = (uint64_t)t->me * slice, .size = slice, .dest = GRAIN_REGION_HOST,
                                     .dest_offset = (uint64_t)t->me * slice};
    if (t->n > 1) {
        seg[n_seg++] = (grain_segment_t){.offset = (uint64_t)t->me * slice, .size = slice, .dest = GRAIN_REGION_PEERS};
        seg[n_seg++] = (grain_segment_t){.offset = (uint64_t)t->me * slice, .size = t->inbox * 8,
                                         .dest = (t->me + 1) % t->n, .dest_offset = (uint64_t)t->n * slice};
    }
    return (grain_region_desc_t){
        .size = (size_t)t->n * slice + t->inbox * 8,
        .chunk_bytes = chunk,
        .map = {.kind = GRAIN_MAP_CONTIGUOUS, .groups = (t->words + WG - 1) / WG, .bytes = WG * 8,
                .offset = (uint64_t)t->me * slice},
        .segments = seg,
        .n_segments = n_seg,
        .agent = agent,
        .transfer_threads = threads,
    };
}

static grain_status_t produce(const run_t *t, grain_region_t *r, uint64_t it, int64_t skip)
{
    uint64_t first = (uint64_t)t->me * t->words;
    size_t global = (size_t)((t->words + WG - 1) / WG) * WG, local = WG;
    grain_status_t st = grain_kernel_set_arg_region(t->produce, 1, r);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(t->produce, 2, sizeof first, &first);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(t->produce, 3, sizeof t->words, &t->words);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(t->produce, 4, sizeof it, &it);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(t->produce, 5, sizeof skip, &skip);
    if (st == GRAIN_OK)
        st = grain_launch(t->produce, 1, &global, &local);
    return st;
}

static int check_words(int me, const char *what, const uint64_t *got, uint64_t it, int pe, uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
        if (got[i] != chunk_word(it, (grain_u64)pe, i)) {
            fprintf(stderr, "rank %d, iteration %llu: %s word %llu is %#llx, expected %#llx\n", me,
                    (unsigned long long)it, what, (unsigned long long)i, (unsigned long long)got[i],
                    (unsigned long long)chunk_word(it, (grain_u64)pe, i));
            return 1;
        }
    }
    return 0;
}

static int check_iteration(const run_t *t, grain_region_t *r, uint64_t it, size_t size, uint64_t *copy)
{
    int bad = 0;
    OK(grain_memcpy(t->g, copy, grain_region_data(r), size));
    for (int p = 0; p < t->n && !bad; p++)
        bad += check_words(t->me, p == t->me ? "own slice" : "a peer's slice", copy + (uint64_t)p * t->words, it, p,
                           t->words);
    if (t->n > 1)
        bad += check_words(t->me, "inbox", copy + (uint64_t)t->n * t->words, it, (t->me + t->n - 1) % t->n, t->inbox);
    bad += check_words(t->me, "host copy", (const uint64_t *)grain_region_host(r) + (uint64_t)t->me * t->words, it,
                       t->me, t->words);
    return bad;
}

static int transfers(run_t *t, grain_agent_t agent, size_t chunk, uint64_t iterations, unsigned threads)
{
    grain_segment_t seg[3];
    grain_region_desc_t d = layout(t, agent, chunk, threads, seg);
    grain_region_t *r;
    grain_status_t st = grain_region_create(t->g, &d, &r);
    if (st == GRAIN_ERR_UNSUPPORTED && strcmp(grain_backend_name(t->g), "opencl") == 0 &&
        (agent == GRAIN_AGENT_DEVICE || agent == GRAIN_AGENT_LAUNCH)) {
        if (t->me == 0)
            printf("skipped: the %s agent needs CUDA or HIP%s (%s)\n", grain_agent_name(agent),
                   agent == GRAIN_AGENT_LAUNCH ? ", or OpenCL's device-side enqueue" : "", grain_error_message(t->g));
        return NOT_RUN;
    }
    OK(st);
    uint64_t *copy = malloc(d.size);
    int bad = copy == NULL;
    /* Every rank runs every iteration, so that the collectives match. */
    for (uint64_t it = 0; it < iterations && copy != NULL; it++) {
        OK(grain_region_begin(r));
        OK(produce(t, r, it, -1));
        OK(grain_region_end(r));
        if (agent != GRAIN_AGENT_IDEAL)
            bad += check_iteration(t, r, it, d.size, copy);
        /* The next iteration's chunks land in the copies just checked. */
        OK(grain_barrier_all(t->g));
    }
    grain_region_stats_t s;
    OK(grain_region_stats(r, &s));
    int counted = agent != GRAIN_AGENT_INLINE && agent != GRAIN_AGENT_IDEAL;
    if (!bad && counted && (s.min_moves != iterations || s.max_moves != iterations)) {
        fprintf(stderr, "rank %d: chunks moved %llu to %llu times in %llu iterations\n", t->me,
                (unsigned long long)s.min_moves, (unsigned long long)s.max_moves, (unsigned long long)iterations);
        bad++;
    }
    /* With room for a few launches (GRAIN_LAUNCH_PENDING) and thousands of
     * chunks an iteration, the device refuses copies, and the host makes
     * them: the checks above say that it made them all.  OpenCL sizes its
     * device queue in bytes, not launches, and takes the device's largest. */
    const char *room = getenv("GRAIN_LAUNCH_PENDING");
    unsigned long long launches =
        room != NULL && strcmp(grain_backend_name(t->g), "opencl") != 0 ? strtoull(room, NULL, 10) : 0;
    if (!bad && s.agent == GRAIN_AGENT_LAUNCH && launches != 0 && launches < s.chunks && s.unlaunched == 0) {
        fprintf(stderr, "rank %d: room for %llu launches and %llu chunks, yet the device refused no copy\n", t->me,
                launches, (unsigned long long)s.chunks);
        bad++;
    }
    /* Programs built without the device runtime (GRAIN_DEVICE_LAUNCH=0)
     * launch no kernels: the launch agent falls back to the device agent,
     * the path HIP takes. */
    const char *plain = getenv("GRAIN_DEVICE_LAUNCH");
    if (!bad && agent == GRAIN_AGENT_LAUNCH && plain != NULL && strcmp(plain, "0") == 0 &&
        s.agent != GRAIN_AGENT_DEVICE) {
        fprintf(stderr, "rank %d: without kernels that launch kernels the launch agent became the %s agent\n", t->me,
                grain_agent_name(s.agent));
        bad++;
    }
    if (t->me == 0)
        printf("%s agent, %llu chunks of %zu bytes, %d ranks, %llu iterations: %llu moves, %llu bytes sent, "
               "%llu written, %llu peers mapped, %llu copies made by the host for want of launch room: %s\n",
               grain_agent_name(s.agent), (unsigned long long)s.chunks, chunk, t->n, (unsigned long long)iterations,
               (unsigned long long)s.moves, (unsigned long long)s.bytes_sent, (unsigned long long)s.bytes_written,
               (unsigned long long)s.mapped_peers, (unsigned long long)s.unlaunched, bad ? "FAILED" : "ok");
    free(copy);
    grain_region_destroy(r);
    return bad;
}

static size_t user_ranges(void *arg, uint64_t group, uint64_t *offsets, uint64_t *sizes, size_t max)
{
    (void)arg, (void)max;
    offsets[0] = group * 100;
    sizes[0] = 50; /* half of every block: the other halves are nobody's */
    return 1;
}

static int errors(run_t *t)
{
    int me = t->me, bad = 0;
    grain_segment_t seg[3];
    grain_region_desc_t d = layout(t, GRAIN_AGENT_HOST, 1000, 1, seg);
    grain_region_t *r;

    grain_agent_t a;
    EXPECT(grain_agent_parse("dma", &a), GRAIN_ERR_INVALID);
    /* Too few work-groups: the slice's last chunks are nobody's. */
    d.map.groups = 1;
    EXPECT(grain_region_create(t->g, &d, &r), GRAIN_ERR_INVALID);
    d = layout(t, GRAIN_AGENT_HOST, 1000, 1, seg);
    grain_chunk_map_t user = {.kind = GRAIN_MAP_USER, .groups = 8, .ranges = user_ranges};
    d.map = user;
    EXPECT(grain_region_create(t->g, &d, &r), GRAIN_ERR_INVALID);
    d = layout(t, GRAIN_AGENT_HOST, 1000, 1, seg);
    seg[0].dest = t->n; /* no such PE */
    seg[0].dest_offset = 0;
    EXPECT(grain_region_create(t->g, &d, &r), GRAIN_ERR_INVALID);
    d = layout(t, GRAIN_AGENT_HOST, 1000, 1, seg);
    seg[0].size = d.size; /* runs past the region's end */
    EXPECT(grain_region_create(t->g, &d, &r), GRAIN_ERR_INVALID);

    /* OpenCL has no stream for a polling kernel beside the producer, and
     * its kernels launch kernels only where the device has device-side
     * enqueue (PoCL has none; the launch tests run the agent elsewhere). */
    if (strcmp(grain_backend_name(t->g), "opencl") == 0) {
        d = layout(t, GRAIN_AGENT_DEVICE, 1000, 1, seg);
        EXPECT(grain_region_create(t->g, &d, &r), GRAIN_ERR_UNSUPPORTED);
        d = layout(t, GRAIN_AGENT_LAUNCH, 1000, 1, seg);
        grain_status_t st = grain_region_create(t->g, &d, &r);
        if (st == GRAIN_OK) {
            grain_region_destroy(r);
        } else if (st != GRAIN_ERR_UNSUPPORTED || strstr(grain_error_message(t->g), "device-side enqueue") == NULL) {
            fprintf(stderr, "rank %d: the launch agent's refusal (%s) does not say what the device lacks: %s\n", me,
                    grain_strerror(st), grain_error_message(t->g));
            bad++;
        }
    }

    /* A producer work-group that never calls grain_chunk_done: the device
     * agent, waiting for its chunk, is stopped too. */
    int on_gpu = strcmp(grain_backend_name(t->g), "opencl") != 0;
    grain_agent_t waiting[] = {GRAIN_AGENT_HOST, GRAIN_AGENT_DEVICE, GRAIN_AGENT_LAUNCH};
    for (int i = 0; i < (on_gpu ? 3 : 1); i++) {
        d = layout(t, waiting[i], 1000, 1, seg);
        OK(grain_region_create(t->g, &d, &r));
        EXPECT(grain_region_end(r), GRAIN_ERR_STATE);
        OK(grain_region_begin(r));
        EXPECT(grain_region_begin(r), GRAIN_ERR_STATE);
        OK(produce(t, r, 0, 0));
        EXPECT(grain_region_end(r), GRAIN_ERR_STATE);
        if (bad == 0 && strstr(grain_error_message(t->g), "grain_chunk_done") == NULL) {
            fprintf(stderr, "rank %d: the %s agent's error does not name grain_chunk_done: %s\n", me,
                    grain_agent_name(waiting[i]), grain_error_message(t->g));
            bad++;
        }
        EXPECT(grain_region_begin(r), GRAIN_ERR_STATE); /* its counters are off now */
        grain_region_destroy(r);
    }
    if (me == 0)
        printf("errors: %s\n", bad ? "FAILED" : "ok");
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: chunks AGENT CHUNK_BYTES [WORDS [ITERATIONS [THREADS]]] | chunks errors\n");
        return 2;
    }
    run_t t = {0};
    OK(grain_init(NULL, &t.g));
    t.me = grain_my_pe(t.g);
    t.n = grain_n_pes(t.g);
    grain_program_t *prog;
    OK(grain_program_create(t.g, chunks_source, NULL, &prog));
    OK(grain_kernel_create(prog, "produce", &t.produce));
    t.words = argc > 3 ? strtoull(argv[3], NULL, 10) : 1000;
    t.inbox = t.words / 3 ? t.words / 3 : 1;
    int bad;
    if (strcmp(argv[1], "errors") == 0) {
        bad = errors(&t);
    } else {
        grain_agent_t agent;
        OK(grain_agent_parse(argv[1], &agent));
        size_t chunk = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
        uint64_t iterations = argc > 4 ? strtoull(argv[4], NULL, 10) : 3;
        unsigned threads = argc > 5 ? (unsigned)strtoul(argv[5], NULL, 10) : 0;
        bad = transfers(&t, agent, chunk, iterations, threads);
    }
    int64_t all[1] = {bad == NOT_RUN ? 0 : bad};
    OK(grain_allreduce(t.g, all, 1, GRAIN_INT64, GRAIN_SUM));
    grain_kernel_destroy(t.produce);
    grain_program_destroy(prog);
    OK(grain_finalize(t.g));
    return all[0] != 0 ? 1 : bad == NOT_RUN ? SKIPPED : 0;
}
