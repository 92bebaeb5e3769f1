/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/messages/apply.h"

#include <stdlib.h>
#include <string.h>

#include "grain/device/apply.h"
#include "runtime/grain_impl.h"
#include "runtime/messages/quiets.h"
#include "runtime/messages/replier.h"
#include "services/log.h"
#include "transports/wire.h"

extern const char grain_apply_kernel_source[];

/* Launches on the side stream at once: while two run, filled stages wait
 * and the next launch takes them all (up to LAUNCH_STAGES). */
#define IN_FLIGHT 2u

/* How often a thread that polls asks the backend whether the application's
 * kernels still run, while the resident agent does: a query costs about a
 * microsecond, and an agent that runs on a little after the producers only
 * holds compute units nobody wants. */
#define AGENT_IDLE_CHECK_NS 100000u

/* Stages one launch applies at most.  Its list of them sits in its first
 * stage, so every stage has room for one: bounded, thousands of stages
 * would each carry a list of thousands. */
#define LAUNCH_STAGES 256u

/* A stage (grain/device/apply.h): one buffer's words and bitmap, in a
 * block of shared memory that holds every stage, `stride` words apart, and
 * last an empty one for warm-up launches. */
typedef struct layout {
    size_t data_words, stride_words;
} layout_t;

static layout_t layout_for(size_t data_words, unsigned stages)
{
    unsigned listed = stages < LAUNCH_STAGES ? stages : LAUNCH_STAGES;
    size_t words = GRAIN_APPLY_LIST_AT(data_words) + (listed + 2) / 2;
    return (layout_t){data_words, (words + 7) / 8 * 8}; /* 64-byte aligned stages */
}

typedef struct stage {
    uint64_t *mem;   /* in the shared block: grain/device/apply.h's layout */
    size_t fetches;  /* fetches among its messages: their replies go out once it is applied */
    grain_epoch_t *epoch; /* its buffer's (quiets.h), left once it is applied */
    uint64_t launch; /* the side-stream launch that reads it */
    /* At that launch: the application's launch count, when one of its
     * kernels was running (else 0). */
    uint64_t beside;
} stage_t;

/* A buffer waiting in host memory for a free stage. */
typedef struct kept {
    struct kept *next;
    uint32_t src_pe;
    size_t fetches;
    grain_epoch_t *epoch;
    size_t n_words;
    uint64_t words[]; /* then the bitmap */
} kept_t;

struct grain_applier {
    grain_t *grain;
    pthread_mutex_t lock;
    grain_program_t *program; /* whose grain_apply_wire runs: the runtime's own or a registered one */
    grain_kernel_t *kernel;
    size_t wg, tiles; /* work-items of a work-group; work-groups a stage */
    uint64_t *block;  /* every stage, in shared memory */
    stage_t *stages;
    unsigned n_stages;
    layout_t layout;
    /* Stages not being filled: the free ones, the filled ones waiting for
     * a launch, and the launched ones in launch order.  The side stream
     * runs in order, so the oldest launched is the first to finish. */
    unsigned *free_list, n_free;
    unsigned *ready, n_ready;
    unsigned *batch; /* the launcher's copy of the ready ones */
    int launching;   /* a thread launches, without the lock */
    unsigned *launched, launched_first, n_launched;
    uint64_t recent[IN_FLIGHT]; /* the last launches, oldest first */
    uint64_t done_mark;         /* launches up to it are known done: no backend query */
    uint64_t overlap_counted;   /* the last launch counted in stats.overlapped */
    kept_t *kept_head, *kept_tail;
    unsigned filling; /* kept buffers being copied into stages, without the lock */
    atomic_int waiting; /* stages or kept buffers wait for a launch: a hint for grain_applier_progress */
    /* The resident apply agent (grain_apply_agent), NULL where it is off:
     * while a launch of it takes tickets (agent_on), filled stages are
     * posted to its ring instead of waiting for a launch.  Ticket t holds
     * its stage until the agent's done word for it says so; tickets are
     * reaped, and their stages freed, in order. */
    grain_kernel_t *agent;
    unsigned agent_groups;
    uint64_t *ring;   /* shared memory, GRAIN_APPLY_RING_WORDS(n_stages) words */
    uint64_t *mirror; /* device memory, GRAIN_APPLY_MIRROR_WORDS(n_stages) words: the relay copies the ring */
    uint32_t agent_gen; /* launches of the agent, from 1: its stop word names the launch */
    uint64_t tickets, reaped;
    atomic_int agent_on;
    uint64_t agent_launches;
    uint64_t agent_marks[2];   /* the side-stream launch that last used each control word */
    unsigned app_launching;    /* application launches between grain_applier_before_launch and after */
    atomic_ullong idle_check_ns; /* when a poller last asked whether the application's kernels run */
    atomic_uint fetching;        /* stages with fetches not yet known applied: pollers look for them */
    grain_applier_stats_t stats;
};

/* The arguments both apply kernels begin with: where the stages are. */
static grain_status_t set_stage_args(grain_applier_t *a, grain_kernel_t *k)
{
    grain_u64 stride = a->layout.stride_words, data = a->layout.data_words;
    grain_status_t st = grain_kernel_set_arg_ptr(k, 1, a->block);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(k, 2, sizeof stride, &stride);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(k, 3, sizeof data, &data);
    return st;
}

/* One kernel over the `n` stages of `list`, whose work-groups find their
 * stage through the list, written into the stage `list_in`. */
static grain_status_t launch_list(grain_applier_t *a, unsigned list_in, const unsigned *list, unsigned n,
                                  uint64_t *mark_p)
{
    memcpy(a->block + list_in * a->layout.stride_words + GRAIN_APPLY_LIST_AT(a->layout.data_words), list,
           n * sizeof *list);
    grain_u32 tiles = (grain_u32)a->tiles, in = list_in;
    grain_status_t st = set_stage_args(a, a->kernel);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(a->kernel, 4, sizeof tiles, &tiles);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(a->kernel, 5, sizeof in, &in);
    if (st == GRAIN_OK)
        st = grain_kernel_launch_side(a->kernel, n * a->tiles * a->wg, a->wg, mark_p);
    return st;
}

/* Under the lock: whether launch `mark` is done.  The side stream runs in
 * order, so one answer covers every earlier launch. */
static int done(grain_applier_t *a, uint64_t mark)
{
    grain_t *g = a->grain;
    if (mark <= a->done_mark)
        return 1;
    if (!g->bops->side_done(g->backend, mark))
        return 0;
    a->done_mark = mark;
    return 1;
}

static _Atomic uint64_t *ring_word(grain_applier_t *a, size_t i)
{
    return (_Atomic uint64_t *)(a->ring + i);
}

static _Atomic uint32_t *done_word(grain_applier_t *a, uint64_t ticket)
{
    return (_Atomic uint32_t *)(a->ring + GRAIN_APPLY_RING_DONE(a->n_stages)) + ticket % a->n_stages;
}

/* Under the lock: a stage whose kernel is done, before it is filled again:
 * the replies of its fetches go out, with the old values the kernel left in
 * place of their operands, and quiet requests that waited for it may be
 * answered; without `ok` (the kernel failed, and the error says so) the
 * replies are lost with the rest. */
static void applied(grain_applier_t *a, stage_t *s, int ok)
{
    grain_t *g = a->grain;
    if (s->fetches > 0) {
        uint64_t hdr = s->mem[0];
        if (ok)
            grain_wire_stage_replies(s->mem + 1, hdr & 0xffffffffu,
                                     (const uint32_t *)(s->mem + GRAIN_APPLY_MARKS_AT(a->layout.data_words)),
                                     (uint32_t)(hdr >> 32), &g->reply_sink);
        s->fetches = 0;
        atomic_fetch_sub_explicit(&a->fetching, 1, memory_order_relaxed);
    }
    if (s->epoch != NULL)
        grain_quiets_applied(g->quiets, s->epoch);
    s->epoch = NULL;
}

/* Under the lock: frees the stages of the oldest tickets the agent has
 * applied; with `all`, of every ticket, applied or not (after a failed
 * agent, whose messages are lost). */
static void reap(grain_applier_t *a, int all)
{
    for (; a->reaped < a->tickets; a->reaped++) {
        uint64_t t = a->reaped;
        if (!all && atomic_load_explicit(done_word(a, t), memory_order_acquire) != (uint32_t)(t + 1))
            break;
        uint64_t post = atomic_load_explicit(ring_word(a, GRAIN_APPLY_RING_POST + t % a->n_stages),
                                             memory_order_relaxed);
        unsigned i = (unsigned)(post & 0xffffffffu);
        applied(a, &a->stages[i], !all);
        a->free_list[a->n_free++] = i;
    }
}

/* Under the lock: takes the oldest launched stage off the launched ones,
 * its kernel done (`ok`: it applied its messages), and returns its index. */
static unsigned pop_launched(grain_applier_t *a, int ok)
{
    unsigned i = a->launched[a->launched_first];
    a->launched_first = (a->launched_first + 1) % a->n_stages;
    a->n_launched--;
    applied(a, &a->stages[i], ok);
    return i;
}

/* Under the lock: the agent applies no ticket from the next one on; the
 * launch returns once it has applied those before. */
static void agent_stop(grain_applier_t *a)
{
    if (!atomic_load_explicit(&a->agent_on, memory_order_relaxed))
        return;
    unsigned ctl = (unsigned)((a->agent_launches - 1) % 2);
    atomic_store_explicit(ring_word(a, ctl), GRAIN_APPLY_RING_STOP | (uint32_t)a->tickets, memory_order_release);
    atomic_store_explicit(&a->agent_on, 0, memory_order_relaxed);
}

/* Under the lock, with no other thread launching: one launch of the agent
 * from ticket `first` with control word `ctl`: `groups` work-groups that
 * apply, and the relay. */
static grain_status_t launch_agent(grain_applier_t *a, uint64_t first, unsigned ctl, unsigned groups, uint64_t *mark_p)
{
    grain_u32 slots = a->n_stages, from = (grain_u32)first, word = ctl, gen = ++a->agent_gen;
    grain_status_t st = set_stage_args(a, a->agent);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg_ptr(a->agent, 4, a->ring);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(a->agent, 5, sizeof slots, &slots);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(a->agent, 6, sizeof from, &from);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(a->agent, 7, sizeof word, &word);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg_ptr(a->agent, 8, a->mirror);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(a->agent, 9, sizeof gen, &gen);
    if (st == GRAIN_OK)
        st = grain_kernel_launch_side(a->agent, (groups + 1) * a->wg, a->wg, mark_p);
    return st;
}

/*
 * Under the lock: a filled stage goes to the agent when one takes tickets,
 * else to the filled ones that wait for a launch.  Its ticket's ring entry
 * is free: every ticket not yet reaped holds a stage other than this one,
 * so fewer than n_stages are.
 */
static void place(grain_applier_t *a, stage_t *s)
{
    unsigned i = (unsigned)(s - a->stages);
    if (!atomic_load_explicit(&a->agent_on, memory_order_relaxed)) {
        a->ready[a->n_ready++] = i;
        return;
    }
    uint64_t t = a->tickets++;
    atomic_store_explicit(ring_word(a, GRAIN_APPLY_RING_POST + t % a->n_stages), (uint64_t)(uint32_t)(t + 1) << 32 | i,
                          memory_order_release);
    a->stats.agent_stages++;
}

/*
 * Under the lock: launches the filled stages, LAUNCH_STAGES a launch,
 * unless IN_FLIGHT launches still run and `now` is 0.  One thread launches
 * at a time, and it lets go of the lock meanwhile: a launch takes the
 * backend microseconds, which every receiving thread waited for when
 * launches ran under the lock (8.6 us of a buffer's 58, with 4 receive
 * threads on an H100).  The one launching moves the stages on to the
 * launched ones in launch order.  On failure they go back to the free
 * ones: their messages are lost, and the caller says so.
 */
static grain_status_t launch_ready(grain_applier_t *a, int now)
{
    grain_t *g = a->grain;
    grain_status_t st = GRAIN_OK;
    while (st == GRAIN_OK && a->n_ready > 0 && !a->launching && (now || done(a, a->recent[0]))) {
        unsigned n = a->n_ready < LAUNCH_STAGES ? a->n_ready : LAUNCH_STAGES, *list = a->batch;
        memcpy(list, a->ready, n * sizeof *list);
        a->n_ready -= n;
        memmove(a->ready, a->ready + n, a->n_ready * sizeof *a->ready);
        a->launching = 1;
        pthread_mutex_unlock(&a->lock);
        /* Looked at before the launch, so that the kernel starts after. */
        uint64_t launches = atomic_load_explicit(&g->app_launches, memory_order_relaxed);
        uint64_t beside = g->bops->busy(g->backend) ? launches : 0, mark = 0;
        st = launch_list(a, list[0], list, n, &mark);
        pthread_mutex_lock(&a->lock);
        a->launching = 0;
        for (unsigned i = 0; i < n; i++) {
            if (st != GRAIN_OK) {
                a->free_list[a->n_free++] = list[i];
                continue;
            }
            a->stages[list[i]].launch = mark;
            a->stages[list[i]].beside = beside;
            a->launched[(a->launched_first + a->n_launched++) % a->n_stages] = list[i];
        }
        if (st == GRAIN_OK) {
            a->stats.kernels++;
            a->stats.stages += n;
            memmove(a->recent, a->recent + 1, (IN_FLIGHT - 1) * sizeof *a->recent);
            a->recent[IN_FLIGHT - 1] = mark;
        }
    }
    atomic_store_explicit(&a->waiting, a->n_ready > 0 || a->kept_head != NULL, memory_order_relaxed);
    return st;
}

/* Under the lock: until no thread launches and, with `copies`, none
 * copies kept buffers into stages either. */
static void wait_others(grain_applier_t *a, int copies)
{
    unsigned spins = 0;
    while (a->launching || (copies && a->filling > 0)) {
        pthread_mutex_unlock(&a->lock);
        grain_wait_a_little(&spins);
        pthread_mutex_lock(&a->lock);
    }
}

/*
 * One empty launch of each kernel now: CUDA loads a kernel's code lazily, on
 * its first launch, and loading waits for the kernels running in the
 * context.  The first apply would then wait for a producer that may be
 * spinning on a full queue, which waits for this rank's network thread: a
 * deadlock.  The agent's empty launch finds its control word stopping it at
 * its first ticket.
 */
static grain_status_t use_kernel(grain_applier_t *a, grain_program_t *program)
{
    grain_t *g = a->grain;
    grain_kernel_t *k = NULL, *agent = NULL;
    wait_others(a, 0); /* a launch in progress uses the old kernel */
    agent_stop(a);
    grain_status_t st = g->bops->side_synchronize(g->backend);
    reap(a, 1);
    if (st == GRAIN_OK)
        st = grain_kernel_create(program, "grain_apply_wire", &k);
    if (st == GRAIN_OK && a->agent_groups > 0)
        st = grain_kernel_create(program, "grain_apply_agent", &agent);
    if (st != GRAIN_OK) {
        grain_kernel_destroy(k);
        return st;
    }
    grain_kernel_t *old = a->kernel, *old_agent = a->agent;
    a->kernel = k;
    a->agent = agent;
    unsigned empty = a->n_stages;
    uint64_t mark;
    st = launch_list(a, empty, &empty, 1, &mark);
    if (st == GRAIN_OK && agent != NULL) {
        atomic_store_explicit(ring_word(a, 0), GRAIN_APPLY_RING_STOP | (uint32_t)a->tickets, memory_order_release);
        st = launch_agent(a, a->tickets, 0, 1, &mark);
    }
    if (st == GRAIN_OK)
        st = g->bops->side_synchronize(g->backend);
    if (st != GRAIN_OK) {
        a->kernel = old;
        a->agent = old_agent;
        grain_kernel_destroy(k);
        grain_kernel_destroy(agent);
        return st;
    }
    grain_kernel_destroy(old);
    grain_kernel_destroy(old_agent);
    a->agent_marks[0] = a->agent_marks[1] = 0;
    grain_program_retain(program);
    grain_program_destroy(a->program);
    a->program = program;
    return GRAIN_OK;
}

grain_status_t grain_applier_create(grain_t *g, unsigned stages, grain_applier_t **applier_p)
{
    grain_applier_t *a = calloc(1, sizeof *a);
    if (a == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the apply engine");
    a->grain = g;
    pthread_mutex_init(&a->lock, NULL);
    a->wg = g->binfo.max_wg_size < GRAIN_APPLY_WG ? g->binfo.max_wg_size / 8 * 8 : GRAIN_APPLY_WG;
    a->agent_groups = g->apply_agent_groups;
    a->layout = layout_for(grain_wire_words(g->config.buffer_size), stages);
    grain_status_t st = GRAIN_OK;
    if (a->wg == 0)
        st = grain_fail(GRAIN_ERR_UNSUPPORTED, "the device runs work-groups of %zu work-items, and the apply "
                        "kernel needs 8", g->binfo.max_wg_size);
    else
        a->tiles = (a->layout.data_words + GRAIN_APPLY_TILE_WORDS(a->wg) - 1) / GRAIN_APPLY_TILE_WORDS(a->wg);
    a->stages = calloc(stages, sizeof *a->stages);
    a->free_list = calloc(stages, sizeof *a->free_list);
    a->ready = calloc(stages, sizeof *a->ready);
    a->batch = calloc(stages < LAUNCH_STAGES ? stages : LAUNCH_STAGES, sizeof *a->batch);
    a->launched = calloc(stages, sizeof *a->launched);
    if (st == GRAIN_OK && (a->stages == NULL || a->free_list == NULL || a->ready == NULL || a->batch == NULL ||
                         a->launched == NULL))
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the apply engine");
    void *block = NULL;
    if (st == GRAIN_OK)
        st = g->bops->alloc_shared(g->backend, (stages + 1) * a->layout.stride_words * sizeof(uint64_t), &block);
    void *ring = NULL, *mirror = NULL;
    if (st == GRAIN_OK && a->agent_groups > 0 &&
        (st = g->bops->alloc_shared(g->backend, GRAIN_APPLY_RING_WORDS(stages) * sizeof(uint64_t), &ring)) == GRAIN_OK) {
        a->ring = ring;
        memset(ring, 0, GRAIN_APPLY_RING_WORDS(stages) * sizeof(uint64_t));
        size_t mirror_bytes = GRAIN_APPLY_MIRROR_WORDS(stages) * sizeof(uint64_t);
        if ((st = g->bops->alloc_device(g->backend, mirror_bytes, &mirror)) == GRAIN_OK) {
            a->mirror = mirror;
            st = g->bops->zero(g->backend, mirror, mirror_bytes);
        }
    }
    if (st == GRAIN_OK) {
        a->block = block;
        for (a->n_stages = 0; a->n_stages < stages; a->n_stages++) {
            a->stages[a->n_stages].mem = a->block + a->n_stages * a->layout.stride_words;
            a->free_list[a->n_free++] = a->n_stages;
        }
        a->block[stages * a->layout.stride_words] = 0; /* the empty stage */
    }
    grain_program_t *own = NULL;
    if (st == GRAIN_OK)
        st = grain_program_create(g, grain_apply_kernel_source, NULL, &own);
    if (st == GRAIN_OK)
        st = use_kernel(a, own);
    grain_program_destroy(own); /* the applier keeps its own reference */
    if (st != GRAIN_OK) {
        grain_applier_destroy(a);
        return st;
    }
    *applier_p = a;
    return GRAIN_OK;
}

void grain_applier_destroy(grain_applier_t *a)
{
    if (a == NULL)
        return;
    grain_t *g = a->grain;
    if (a->block != NULL)
        g->bops->free_shared(g->backend, a->block);
    if (a->ring != NULL)
        g->bops->free_shared(g->backend, a->ring);
    if (a->mirror != NULL)
        g->bops->free_device(g->backend, a->mirror);
    while (a->kept_head != NULL) {
        kept_t *k = a->kept_head;
        a->kept_head = k->next;
        free(k);
    }
    free(a->stages);
    free(a->free_list);
    free(a->ready);
    free(a->batch);
    free(a->launched);
    grain_kernel_destroy(a->kernel);
    grain_kernel_destroy(a->agent);
    grain_program_destroy(a->program);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

grain_status_t grain_applier_use(grain_applier_t *a, grain_program_t *program)
{
    pthread_mutex_lock(&a->lock);
    grain_status_t st = use_kernel(a, program);
    pthread_mutex_unlock(&a->lock);
    return st;
}

/* Under the lock: a free stage, or the oldest launched one if its kernel
 * is done; NULL when every stage is busy. */
static stage_t *take_stage(grain_applier_t *a)
{
    grain_t *g = a->grain;
    if (a->n_free == 0)
        reap(a, 0);
    if (a->n_free > 0)
        return &a->stages[a->free_list[--a->n_free]];
    if (a->n_launched == 0)
        return NULL; /* every stage is being filled, waits for a launch or is the agent's */
    stage_t *s = &a->stages[a->launched[a->launched_first]];
    if (!done(a, s->launch))
        return NULL;
    /* No application launch since, and the device still busy: the apply
     * kernel started and finished while the same kernels ran.  Counted once
     * a launch, whose stages come back one by one. */
    if (s->beside != 0 && s->launch != a->overlap_counted &&
        s->beside == atomic_load_explicit(&g->app_launches, memory_order_relaxed) && g->bops->busy(g->backend)) {
        a->stats.overlapped++;
        a->overlap_counted = s->launch;
    }
    pop_launched(a, 1);
    return s;
}

static size_t mark_bytes(size_t n_words)
{
    return grain_wire_mark_words(n_words) * sizeof(uint32_t);
}

static void fill(grain_applier_t *a, stage_t *s, const uint64_t *words, const uint32_t *marks, size_t n_words,
                 uint32_t src_pe, size_t fetches, grain_epoch_t *epoch)
{
    s->fetches = fetches;
    s->epoch = epoch;
    if (fetches > 0)
        atomic_fetch_add_explicit(&a->fetching, 1, memory_order_relaxed);
    s->mem[0] = GRAIN_APPLY_STAGE_HDR(n_words, src_pe);
    memcpy(s->mem + 1, words, n_words * sizeof *words);
    memcpy(s->mem + GRAIN_APPLY_MARKS_AT(a->layout.data_words), marks, mark_bytes(n_words));
}

/*
 * Under the lock: moves kept buffers into stages while stages are free.
 * When the apply kernels run behind, every buffer is kept and these copies
 * are most of the receive side's work, so it lets go of the lock while it
 * copies, and the receiving threads copy side by side; the network thread
 * leaves them to those threads (grain_applier_progress), since MPI's
 * progress waited behind them: two pagerank ranks through MPI on two H100s
 * ran 20% faster once it did.
 */
static void stage_kept(grain_applier_t *a)
{
    stage_t *s;
    while (a->kept_head != NULL && (s = take_stage(a)) != NULL) {
        kept_t *k = a->kept_head;
        if ((a->kept_head = k->next) == NULL)
            a->kept_tail = NULL;
        a->filling++;
        pthread_mutex_unlock(&a->lock);
        fill(a, s, k->words, (const uint32_t *)(k->words + k->n_words), k->n_words, k->src_pe, k->fetches,
             k->epoch);
        free(k);
        pthread_mutex_lock(&a->lock);
        a->filling--;
        place(a, s);
    }
}

/* Keeps a buffer that found no stage in host memory. */
static grain_status_t keep(grain_applier_t *a, const void *buf, const uint32_t *marks, size_t staged,
                           size_t fetches, grain_epoch_t *epoch)
{
    grain_wire_hdr_t h;
    memcpy(&h, buf, sizeof h);
    size_t n_words = grain_wire_words(h.bytes);
    kept_t *k = malloc(sizeof *k + n_words * sizeof(uint64_t) + mark_bytes(n_words));
    if (k == NULL) {
        grain_quiets_applied(a->grain->quiets, epoch); /* never will be: a quiet must not wait for them */
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory to keep %zu messages until an apply kernel can run them",
                          staged);
    }
    *k = (kept_t){NULL, h.src_pe, fetches, epoch, n_words};
    memcpy(k->words, (const char *)buf + sizeof h, n_words * sizeof(uint64_t));
    memcpy(k->words + n_words, marks, mark_bytes(n_words));
    pthread_mutex_lock(&a->lock);
    if (a->kept_tail != NULL)
        a->kept_tail->next = k;
    else
        a->kept_head = k;
    a->kept_tail = k;
    a->stats.kept += staged;
    stage_kept(a);
    grain_status_t st = launch_ready(a, 0);
    pthread_mutex_unlock(&a->lock);
    return st;
}

grain_status_t grain_applier_submit(grain_applier_t *a, const void *buf, const uint32_t *marks, size_t staged,
                                    size_t fetches, grain_epoch_t *epoch)
{
    grain_wire_hdr_t h;
    memcpy(&h, buf, sizeof h);
    pthread_mutex_lock(&a->lock);
    stage_kept(a);
    stage_t *s = a->kept_head == NULL ? take_stage(a) : NULL;
    pthread_mutex_unlock(&a->lock);
    /* A heap in managed device memory is not written from here while
     * kernels run: every page the host touches migrates to it and back on
     * the kernels' next access.  Two GUPS ranks on one H200, 2^23 updates,
     * took 48 s that way (1722 of 3146 buffers applied here), and 3.9 s
     * with the messages kept for the apply kernels. */
    if (s == NULL)
        return keep(a, buf, marks, staged, fetches, epoch);
    fill(a, s, (const uint64_t *)((const char *)buf + sizeof h), marks, grain_wire_words(h.bytes), h.src_pe, fetches,
         epoch);
    pthread_mutex_lock(&a->lock);
    place(a, s);
    grain_status_t st = launch_ready(a, 0);
    pthread_mutex_unlock(&a->lock);
    return st;
}

/* Under the lock: frees the stages known applied, so that the replies of
 * their fetches go out now, not when the stages are next needed: a lane
 * waits for each. */
static void collect_applied(grain_applier_t *a)
{
    reap(a, 0);
    while (a->n_launched > 0 && done(a, a->stages[a->launched[a->launched_first]].launch))
        a->free_list[a->n_free++] = pop_launched(a, 1);
    if (a->grain->replier != NULL)
        grain_replier_flush(a->grain->replier);
}

/* Under the lock: stops the agent once the application's kernels are done
 * (it must not outlive them: allocating pinned memory, among other calls,
 * waits for every running kernel). */
static void stop_if_idle(grain_applier_t *a)
{
    grain_t *g = a->grain;
    if (atomic_load_explicit(&a->agent_on, memory_order_relaxed) && a->app_launching == 0 &&
        !g->bops->busy(g->backend))
        agent_stop(a);
}

grain_status_t grain_applier_progress(grain_applier_t *a, int copy)
{
    int check = 0;
    if (atomic_load_explicit(&a->agent_on, memory_order_relaxed)) {
        uint64_t now = grain_now_ns(), last = atomic_load_explicit(&a->idle_check_ns, memory_order_relaxed);
        check = now - last >= AGENT_IDLE_CHECK_NS &&
                atomic_compare_exchange_strong_explicit(&a->idle_check_ns, &last, now, memory_order_relaxed,
                                                        memory_order_relaxed);
    }
    /* A lane waits for each fetch's reply and each quiet's answer. */
    int fetching = atomic_load_explicit(&a->fetching, memory_order_relaxed) > 0 ||
                   grain_quiets_waiting(a->grain->quiets) > 0;
    if ((!check && !fetching && !atomic_load_explicit(&a->waiting, memory_order_relaxed)) ||
        pthread_mutex_trylock(&a->lock) != 0)
        return GRAIN_OK; /* a thread that holds it moves the stages on */
    if (check)
        stop_if_idle(a);
    if (fetching)
        collect_applied(a);
    if (copy)
        stage_kept(a);
    grain_status_t st = launch_ready(a, 0);
    pthread_mutex_unlock(&a->lock);
    return st;
}

/*
 * Launched before the application's kernel, on the side stream, whose
 * priority puts its work-groups first: they hold their compute units
 * before the producer's fill the device.  A launch waits behind the one
 * before it if that one is still stopping; its control word is then the
 * other one.  If the launch two before has not returned either (it would
 * be the one using that word), this application launch goes without an
 * agent: stages then wait for launches of grain_apply_wire, as where the
 * agent is off.
 */
grain_status_t grain_applier_before_launch(grain_applier_t *a)
{
    grain_t *g = a->grain;
    grain_status_t st = GRAIN_OK;
    pthread_mutex_lock(&a->lock);
    a->app_launching++;
    if (a->agent != NULL)
        wait_others(a, 0); /* the side stream's launches, one thread at a time */
    unsigned ctl = (unsigned)(a->agent_launches % 2);
    if (a->agent != NULL && !atomic_load_explicit(&a->agent_on, memory_order_relaxed) &&
        (a->agent_marks[ctl] == 0 || g->bops->side_done(g->backend, a->agent_marks[ctl]))) {
        atomic_store_explicit(ring_word(a, ctl), 0, memory_order_release);
        uint64_t mark = 0;
        st = launch_agent(a, a->tickets, ctl, a->agent_groups, &mark);
        if (st == GRAIN_OK) {
            a->agent_marks[ctl] = mark;
            a->agent_launches++;
            a->stats.agents++;
            atomic_store_explicit(&a->agent_on, 1, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

void grain_applier_after_launch(grain_applier_t *a)
{
    pthread_mutex_lock(&a->lock);
    a->app_launching--;
    pthread_mutex_unlock(&a->lock);
}

grain_status_t grain_applier_wait(grain_applier_t *a)
{
    grain_t *g = a->grain;
    grain_status_t st;
    /* Every launch must be synchronized before the launched stages are
     * freed: the last synchronize comes after the last launch, since
     * nobody launches or fills while this thread holds the lock from the
     * synchronize to the test.  The agent is stopped first, so that the
     * synchronize sees it return; stages filled after go to launches. */
    pthread_mutex_lock(&a->lock);
    agent_stop(a);
    do {
        wait_others(a, 1);
        stage_kept(a);
        st = launch_ready(a, 1);
        if (st == GRAIN_OK)
            st = g->bops->side_synchronize(g->backend);
    } while (st == GRAIN_OK && (a->kept_head != NULL || a->n_ready > 0 || a->launching || a->filling > 0));
    while (a->n_launched > 0)
        a->free_list[a->n_free++] = pop_launched(a, st == GRAIN_OK);
    reap(a, st != GRAIN_OK);
    if (st == GRAIN_OK && a->reaped != a->tickets) {
        st = grain_fail(GRAIN_ERR_BACKEND, "the resident apply agent returned without applying %llu received "
                        "buffers: their messages are lost", (unsigned long long)(a->tickets - a->reaped));
        reap(a, 1);
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

grain_applier_stats_t grain_applier_stats(grain_applier_t *a)
{
    pthread_mutex_lock(&a->lock);
    grain_applier_stats_t s = a->stats;
    pthread_mutex_unlock(&a->lock);
    return s;
}
