#include "runtime/apply.h"

#include <stdlib.h>

#include "runtime/grain_impl.h"
#include "runtime/log.h"
#include "runtime/wire.h"

extern const char grain_apply_kernel_source[];

#define APPLY_WG 256u

typedef struct stage {
    uint64_t *records; /* shared memory, room for a full buffer's messages */
    uint64_t launch;   /* the side-stream launch that reads it; 0: none */
} stage_t;

struct grain_applier {
    grain_t *grain;
    pthread_mutex_t lock;
    grain_program_t *program;
    grain_kernel_t *kernel;
    size_t wg;
    stage_t *stages;
    unsigned n_stages;
    unsigned next; /* the stage launched longest ago, first to finish */
    uint64_t kernels, on_host;
};

/*
 * One empty launch now: CUDA loads a kernel's code lazily, on its first
 * launch, and loading waits for the kernels running in the context.  The
 * first apply would then wait for a producer that may be spinning on a full
 * queue, which waits for this rank's network thread: a deadlock.
 */
static grain_status_t warm_up(grain_applier_t *a)
{
    uint64_t none = 0, launch;
    grain_status_t st = grain_kernel_set_arg_ptr(a->kernel, 1, a->stages[0].records);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg(a->kernel, 2, sizeof none, &none);
    if (st == GRAIN_OK)
        st = grain_kernel_launch_side(a->kernel, a->wg, a->wg, &launch);
    if (st == GRAIN_OK)
        st = a->grain->bops->side_synchronize(a->grain->backend);
    return st;
}

grain_status_t grain_applier_create(grain_t *g, unsigned stages, grain_applier_t **applier_p)
{
    grain_applier_t *a = calloc(1, sizeof *a);
    if (a == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the apply engine");
    a->grain = g;
    pthread_mutex_init(&a->lock, NULL);
    a->wg = g->binfo.max_wg_size < APPLY_WG ? g->binfo.max_wg_size : APPLY_WG;
    grain_status_t st = GRAIN_OK;
    if ((a->stages = calloc(stages, sizeof *a->stages)) == NULL)
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the apply engine");
    /* A pair per message of a full buffer; the smallest message is 8 bytes. */
    size_t pairs = (g->config.buffer_size - sizeof(grain_wire_hdr_t)) / 8;
    for (; st == GRAIN_OK && a->n_stages < stages; a->n_stages++) {
        void *records;
        st = g->bops->alloc_shared(g->backend, pairs * 2 * sizeof(uint64_t), &records);
        if (st == GRAIN_OK)
            a->stages[a->n_stages].records = records;
    }
    if (st == GRAIN_OK)
        st = grain_program_create(g, grain_apply_kernel_source, NULL, &a->program);
    if (st == GRAIN_OK)
        st = grain_kernel_create(a->program, "grain_apply", &a->kernel);
    if (st == GRAIN_OK)
        st = warm_up(a);
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
    grain_kernel_destroy(a->kernel);
    grain_program_destroy(a->program);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

/* Stages are used round robin and the side stream runs in order, so the
 * next one is the first to be free again. */
static stage_t *free_stage(grain_applier_t *a)
{
    grain_t *g = a->grain;
    stage_t *s = &a->stages[a->next];
    if (s->launch != 0 && !g->bops->side_done(g->backend, s->launch))
        return NULL;
    a->next = (a->next + 1) % a->n_stages;
    return s;
}

grain_status_t grain_applier_submit(grain_applier_t *a, const void *buf)
{
    grain_t *g = a->grain;
    grain_status_t st = GRAIN_OK;
    pthread_mutex_lock(&a->lock);
    stage_t *s = free_stage(a);
    if (s == NULL) {
        grain_wire_apply(buf, g->heap, g->handlers, NULL);
        a->on_host++;
    } else {
        uint64_t count = grain_wire_apply(buf, g->heap, g->handlers, s->records);
        size_t global = (size_t)((count + a->wg - 1) / a->wg * a->wg);
        s->launch = 0;
        if (count > 0 && (st = grain_kernel_set_arg_ptr(a->kernel, 1, s->records)) == GRAIN_OK &&
            (st = grain_kernel_set_arg(a->kernel, 2, sizeof count, &count)) == GRAIN_OK &&
            (st = grain_kernel_launch_side(a->kernel, global, a->wg, &s->launch)) == GRAIN_OK)
            a->kernels++;
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

grain_status_t grain_applier_wait(grain_applier_t *a)
{
    grain_t *g = a->grain;
    pthread_mutex_lock(&a->lock);
    grain_status_t st = g->bops->side_synchronize(g->backend);
    for (unsigned i = 0; i < a->n_stages; i++)
        a->stages[i].launch = 0;
    pthread_mutex_unlock(&a->lock);
    return st;
}

void grain_applier_counts(grain_applier_t *a, uint64_t *kernels, uint64_t *on_host)
{
    pthread_mutex_lock(&a->lock);
    *kernels = a->kernels;
    *on_host = a->on_host;
    pthread_mutex_unlock(&a->lock);
}
