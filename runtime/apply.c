#include "runtime/apply.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/log.h"
#include "runtime/wire.h"

extern const char grain_apply_kernel_source[];

#define APPLY_WG 256u

typedef struct stage {
    uint64_t *records; /* shared memory, room for a full buffer's messages */
    uint64_t launch;   /* the side-stream launch that reads it; 0: none */
    /* At that launch: the application's launch count, when one of its
     * kernels was running (else 0). */
    uint64_t beside;
} stage_t;

struct grain_applier {
    grain_t *grain;
    pthread_mutex_t lock;
    grain_program_t *program; /* whose grain_apply runs: the runtime's own or a registered one */
    grain_kernel_t *kernel;
    size_t wg;
    stage_t *stages;
    unsigned n_stages;
    size_t stage_records; /* records a stage holds */
    unsigned next;        /* the stage launched longest ago, first to finish */
    uint64_t *kept;       /* records waiting for a free stage (host memory) */
    size_t n_kept, cap_kept;
    grain_applier_stats_t stats;
};

/* Count 0 is the warm-up: one work-group that applies nothing. */
static grain_status_t launch(grain_applier_t *a, stage_t *s, uint64_t count)
{
    grain_t *g = a->grain;
    size_t groups = count == 0 ? 1 : (size_t)((count + a->wg - 1) / a->wg);
    /* Looked at before the launch, so that the kernel starts after. */
    uint64_t launches = atomic_load_explicit(&g->app_launches, memory_order_relaxed);
    s->beside = g->bops->busy(g->backend) ? launches : 0;
    grain_status_t st = grain_kernel_set_arg_ptr(a->kernel, 1, s->records);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(a->kernel, 2, sizeof count, &count);
    if (st == GRAIN_OK)
        st = grain_kernel_launch_side(a->kernel, groups * a->wg, a->wg, &s->launch);
    if (st == GRAIN_OK && count > 0)
        a->stats.kernels++;
    return st;
}

/*
 * One empty launch now: CUDA loads a kernel's code lazily, on its first
 * launch, and loading waits for the kernels running in the context.  The
 * first apply would then wait for a producer that may be spinning on a full
 * queue, which waits for this rank's network thread: a deadlock.
 */
static grain_status_t use_kernel(grain_applier_t *a, grain_program_t *program)
{
    grain_t *g = a->grain;
    grain_kernel_t *k;
    grain_status_t st = g->bops->side_synchronize(g->backend);
    if (st == GRAIN_OK)
        st = grain_kernel_create(program, "grain_apply", &k);
    if (st != GRAIN_OK)
        return st;
    grain_kernel_t *old = a->kernel;
    a->kernel = k;
    st = launch(a, &a->stages[0], 0);
    if (st == GRAIN_OK)
        st = g->bops->side_synchronize(g->backend);
    a->stages[0].launch = 0;
    if (st != GRAIN_OK) {
        a->kernel = old;
        grain_kernel_destroy(k);
        return st;
    }
    grain_kernel_destroy(old);
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
    a->wg = g->binfo.max_wg_size < APPLY_WG ? g->binfo.max_wg_size : APPLY_WG;
    /* A record per message of a full buffer; the smallest message is 8 bytes. */
    a->stage_records = (g->config.buffer_size - sizeof(grain_wire_hdr_t)) / 8;
    grain_status_t st = GRAIN_OK;
    if ((a->stages = calloc(stages, sizeof *a->stages)) == NULL)
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the apply engine");
    for (; st == GRAIN_OK && a->n_stages < stages; a->n_stages++) {
        void *records;
        st = g->bops->alloc_shared(g->backend, a->stage_records * GRAIN_RECORD_WORDS * sizeof(uint64_t),
                                   &records);
        if (st == GRAIN_OK)
            a->stages[a->n_stages].records = records;
    }
    grain_program_t *own = NULL;
    if (st == GRAIN_OK)
        st = grain_program_create(g, grain_apply_kernel_source, NULL, &own);
    if (st == GRAIN_OK) {
        st = use_kernel(a, own);
        grain_program_destroy(own); /* a->program holds it now */
    }
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
    for (unsigned i = 0; i < a->n_stages; i++)
        g->bops->free_shared(g->backend, a->stages[i].records);
    free(a->stages);
    free(a->kept);
    grain_kernel_destroy(a->kernel);
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

/* Stages are used round robin and the side stream runs in order, so the
 * next one is the first to be free again. */
static stage_t *free_stage(grain_applier_t *a)
{
    grain_t *g = a->grain;
    stage_t *s = &a->stages[a->next];
    if (s->launch != 0 && !g->bops->side_done(g->backend, s->launch))
        return NULL;
    /* No application launch since, and the device still busy: the apply
     * kernel started and finished while the same kernels ran. */
    if (s->launch != 0 && s->beside != 0 &&
        s->beside == atomic_load_explicit(&g->app_launches, memory_order_relaxed) &&
        g->bops->busy(g->backend))
        a->stats.overlapped++;
    a->next = (a->next + 1) % a->n_stages;
    s->launch = 0;
    return s;
}

/* Launches kept records while stages are free. */
static grain_status_t launch_kept(grain_applier_t *a)
{
    grain_status_t st = GRAIN_OK;
    stage_t *s;
    while (st == GRAIN_OK && a->n_kept > 0 && (s = free_stage(a)) != NULL) {
        size_t n = a->n_kept < a->stage_records ? a->n_kept : a->stage_records;
        a->n_kept -= n;
        memcpy(s->records, a->kept + GRAIN_RECORD_WORDS * a->n_kept, n * GRAIN_RECORD_WORDS * sizeof(uint64_t));
        st = launch(a, s, n);
    }
    return st;
}

static grain_status_t keep_room(grain_applier_t *a, size_t more)
{
    if (a->n_kept + more <= a->cap_kept)
        return GRAIN_OK;
    size_t cap = 2 * a->cap_kept > a->n_kept + more ? 2 * a->cap_kept : a->n_kept + more;
    uint64_t *kept = realloc(a->kept, cap * GRAIN_RECORD_WORDS * sizeof(uint64_t));
    if (kept == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY,
                          "no memory to keep %zu active messages until an apply kernel can run them",
                          a->n_kept + more);
    a->kept = kept;
    a->cap_kept = cap;
    return GRAIN_OK;
}

grain_status_t grain_applier_submit(grain_applier_t *a, const void *buf)
{
    grain_t *g = a->grain;
    grain_wire_hdr_t h;
    memcpy(&h, buf, sizeof h);
    pthread_mutex_lock(&a->lock);
    grain_status_t st = launch_kept(a);
    stage_t *s = st == GRAIN_OK && a->n_kept == 0 ? free_stage(a) : NULL;
    if (s != NULL) {
        size_t n = grain_wire_apply(buf, g->heap, &g->am, s->records, g->apply_on_device);
        if (n > 0)
            st = launch(a, s, n);
    } else if (st == GRAIN_OK && (st = keep_room(a, h.count)) == GRAIN_OK) {
        /* A heap in managed device memory is not written from here while
         * kernels run: every page the host touches migrates to it and back
         * on the kernels' next access.  Two GUPS ranks on one H200, 2^23
         * updates, took 48 s that way (1722 of 3146 buffers applied here),
         * and 3.9 s with the records kept for the apply kernels. */
        size_t n = grain_wire_apply(buf, g->heap, &g->am, a->kept + GRAIN_RECORD_WORDS * a->n_kept,
                                    g->apply_on_device);
        a->n_kept += n;
        a->stats.kept += n;
        a->stats.on_host += n < h.count;
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

grain_status_t grain_applier_wait(grain_applier_t *a)
{
    grain_t *g = a->grain;
    pthread_mutex_lock(&a->lock);
    grain_status_t st;
    do {
        st = launch_kept(a);
        if (st == GRAIN_OK)
            st = g->bops->side_synchronize(g->backend);
    } while (st == GRAIN_OK && a->n_kept > 0);
    for (unsigned i = 0; i < a->n_stages; i++)
        a->stages[i].launch = 0;
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
