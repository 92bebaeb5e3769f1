/* SPDX-License-Identifier: BSD-3-Clause */
/* Programs and kernels: the runtime's defines, argument 0, launch checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grain/device.h"
#include "runtime/grain_impl.h"
#include "runtime/messages/apply.h"
#include "runtime/sched/sched_exec.h"
#include "services/backoff.h"
#include "services/log.h"

/* A program of the task scheduler (grain/sched.h) keeps its builds, one a
 * device, in `sched`, and its kernels theirs: both are plain, with no
 * grain device context and no `grain`. */
struct grain_program {
    grain_t *grain;
    grain_bprogram_t *bprogram;
    unsigned refs; /* the application's, and the apply engine's while it runs this program */
    sched_program_t *sched;
};

struct grain_kernel {
    grain_t *grain;
    grain_bkernel_t *bkernel;
    char name[128];
    sched_kernel_t *sched;
};

sched_program_t *grain_program_sched(const grain_program_t *p)
{
    return p != NULL ? p->sched : NULL;
}

sched_kernel_t *grain_kernel_sched(const grain_kernel_t *k)
{
    return k != NULL ? k->sched : NULL;
}

grain_status_t grain_program_wrap_sched(sched_program_t *sp, grain_program_t **program_p)
{
    grain_program_t *prog = calloc(1, sizeof *prog);
    if (prog == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for a program");
    prog->refs = 1;
    prog->sched = sp;
    *program_p = prog;
    return GRAIN_OK;
}

static int reserve_mode(const char *name)
{
    return strcmp(name, "sg") == 0 ? GRAIN_RESERVE_SG : strcmp(name, "wi") == 0 ? GRAIN_RESERVE_WI
                                                                                : GRAIN_RESERVE_WG;
}

/* Lanes per segment of GRAIN_RESERVE=sg. */
static unsigned subgroup_width(const grain_t *g)
{
    return g->config.subgroup_width ? (unsigned)g->config.subgroup_width : g->binfo.subgroup_width;
}

const char *grain_device_include_dir(const grain_t *g, const char *source)
{
    if (strstr(source, "#include \"grain/") == NULL)
        return "";
    if (g->config.include_dir[0] != '\0')
        return g->config.include_dir;
    static const char *const dirs[] = {GRAIN_BUILD_INCLUDE_DIR, GRAIN_INSTALL_INCLUDE_DIR};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char header[4096];
        snprintf(header, sizeof header, "%s/grain/device.h", dirs[i]);
        if (access(header, R_OK) == 0)
            return dirs[i];
    }
    return "";
}

grain_status_t grain_program_create(grain_t *g, const char *source, const char *options,
                                    grain_program_t **program_p)
{
    if (g == NULL || source == NULL || program_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_program_create needs a handle, a source and an output");
    unsigned sg = subgroup_width(g);
    const char *include = grain_device_include_dir(g, source);
    char defines[2048];
    /* The include directory after the caller's options: their -I is
     * searched first. */
    snprintf(defines, sizeof defines,
             "-DGRAIN_MAX_WG=%llu -DGRAIN_RESERVE=%d -DGRAIN_SG_WIDTH=%u -DGRAIN_QUEUE=%u "
             "-DGRAIN_APPLY_IN_PLACE=%d -DGRAIN_PEER_DIRECT=%d -DGRAIN_HEAP_SCOPE_SYSTEM=%d %s%s%s",
             (unsigned long long)g->config.queue_width, reserve_mode(g->config.reserve), sg,
             grain_config_queue_protocol(&g->config), g->apply_on_device, g->heap_peers.mapped > 0,
             g->heap_scope_system, options ? options : "", *include ? " -I" : "", include);
    grain_program_t *prog = calloc(1, sizeof *prog);
    if (prog == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for a program");
    prog->grain = g;
    prog->refs = 1;
    grain_status_t st = g->bops->program_build(g->backend, source, defines, &prog->bprogram);
    if (st != GRAIN_OK) {
        free(prog);
        return st;
    }
    *program_p = prog;
    return GRAIN_OK;
}

void grain_program_retain(grain_program_t *prog)
{
    prog->refs++;
}

void grain_program_destroy(grain_program_t *prog)
{
    if (prog == NULL || --prog->refs > 0)
        return;
    if (prog->sched != NULL)
        sched_program_release(prog->sched);
    else
        prog->grain->bops->program_release(prog->bprogram);
    free(prog);
}

grain_status_t grain_kernel_create(grain_program_t *prog, const char *name, grain_kernel_t **kernel_p)
{
    if (prog == NULL || name == NULL || kernel_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_kernel_create needs a program, a name and an output");
    grain_t *g = prog->grain;
    grain_kernel_t *k = calloc(1, sizeof *k);
    if (k == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for a kernel");
    k->grain = g;
    snprintf(k->name, sizeof k->name, "%s", name);
    grain_status_t st = GRAIN_OK;
    if (prog->sched != NULL)
        st = sched_kernel_create(prog->sched, name, &k->sched);
    else if ((st = g->bops->kernel_create(prog->bprogram, name, &k->bkernel)) == GRAIN_OK) {
        st = g->bops->kernel_set_arg_ptr(k->bkernel, 0, g->dev);
        if (st != GRAIN_OK)
            g->bops->kernel_release(k->bkernel);
    }
    if (st != GRAIN_OK) {
        free(k);
        return st;
    }
    *kernel_p = k;
    return GRAIN_OK;
}

void grain_kernel_destroy(grain_kernel_t *k)
{
    if (k == NULL)
        return;
    if (k->sched != NULL)
        sched_kernel_let_go(k->sched);
    else
        k->grain->bops->kernel_release(k->bkernel);
    free(k);
}

grain_status_t grain_kernel_set_arg(grain_kernel_t *k, unsigned index, size_t size, const void *value)
{
    if (k != NULL && k->sched != NULL)
        return sched_kernel_set_arg(k->sched, index, size, value);
    if (k == NULL || index == 0)
        return grain_fail(GRAIN_ERR_INVALID, "kernel argument 0 is grain's device context; yours start at 1");
    return k->grain->bops->kernel_set_arg(k->bkernel, index, size, value);
}

grain_status_t grain_kernel_set_arg_ptr(grain_kernel_t *k, unsigned index, void *ptr)
{
    if (k != NULL && k->sched != NULL)
        return grain_fail(GRAIN_ERR_INVALID, "kernel %s is the task scheduler's: its memory arguments are arrays "
                                             "(grain_kernel_set_arg_array), which it moves between devices", k->name);
    if (k == NULL || index == 0)
        return grain_fail(GRAIN_ERR_INVALID, "kernel argument 0 is grain's device context; yours start at 1");
    return k->grain->bops->kernel_set_arg_ptr(k->bkernel, index, ptr);
}

grain_t *grain_program_grain(const grain_program_t *prog)
{
    return prog->grain;
}

grain_status_t grain_kernel_launch_side(grain_kernel_t *k, size_t global, size_t local, uint64_t *n_p)
{
    return k->grain->bops->launch_side(k->bkernel, global, local, n_p);
}

grain_status_t grain_kernel_launch_agent(grain_kernel_t *k, size_t global, size_t local)
{
    grain_t *g = k->grain;
    if (g->bops->launch_agent == NULL)
        return grain_fail(GRAIN_ERR_UNSUPPORTED, "%s: no stream for a kernel beside the application's", g->bops->name);
    return g->bops->launch_agent(k->bkernel, global, local);
}

size_t grain_divisor_at_most(size_t n, size_t limit)
{
    for (size_t d = limit < n ? limit : n; d > 1; d--)
        if (n % d == 0)
            return d;
    return 1;
}

size_t grain_wg_default(size_t global, size_t device_max)
{
    return grain_divisor_at_most(global, device_max < 256 ? device_max : 256);
}

size_t grain_wg_size_max(const grain_t *g)
{
    return g->config.queue_width < g->binfo.max_wg_size ? g->config.queue_width : g->binfo.max_wg_size;
}

grain_status_t grain_launch(grain_kernel_t *k, unsigned dims, const size_t *global, const size_t *local)
{
    if (k == NULL || global == NULL || dims < 1 || dims > 3)
        return grain_fail(GRAIN_ERR_INVALID, "grain_launch needs a kernel and 1 to 3 dimensions");
    if (k->sched != NULL)
        return grain_fail(GRAIN_ERR_INVALID, "kernel %s is the task scheduler's: launch it with grain_sched_launch",
                          k->name);
    grain_t *g = k->grain;
    size_t limit = grain_wg_size_max(g);
    size_t chosen[3] = {1, 1, 1};
    size_t wg = 1;
    for (unsigned d = 0; d < dims; d++) {
        if (global[d] == 0)
            return grain_fail(GRAIN_ERR_INVALID, "kernel %s: global size %u is zero", k->name, d);
        if (local != NULL) {
            if (local[d] == 0 || global[d] % local[d] != 0)
                return grain_fail(GRAIN_ERR_INVALID,
                                  "kernel %s: global size %zu of dimension %u is not a multiple of the "
                                  "work-group size %zu",
                                  k->name, global[d], d, local[d]);
            chosen[d] = local[d];
        } else if (d == 0) {
            chosen[0] = grain_divisor_at_most(global[0], limit);
        }
        wg *= chosen[d];
    }
    if (wg > limit)
        return grain_fail(GRAIN_ERR_INVALID,
                          "kernel %s: work-group size %zu exceeds %zu, the smaller of GRAIN_QUEUE_WIDTH "
                          "(%llu, the messages one queue slot holds) and the device's maximum (%zu)",
                          k->name, wg, limit, (unsigned long long)g->config.queue_width,
                          g->binfo.max_wg_size);
    /* A send reserves its work-group's slots at once (grain/device/queue.h):
     * they must fit one ring. */
    size_t segments = reserve_mode(g->config.reserve) == GRAIN_RESERVE_SG ? (wg + subgroup_width(g) - 1) /
                                                                                 subgroup_width(g)
                                                                           : 1;
    if (segments > g->queue.desc.geom.nslots)
        return grain_fail(GRAIN_ERR_INVALID,
                          "kernel %s: GRAIN_RESERVE=sg takes a slot per sub-group of %u lanes "
                          "(GRAIN_SUBGROUP_WIDTH), %zu slots for a send of this %zu-lane work-group, but a "
                          "ring has %u (GRAIN_QUEUE_SLOTS): raise GRAIN_QUEUE_SLOTS or the sub-group width, "
                          "or launch smaller work-groups",
                          k->name, subgroup_width(g), segments, wg, (unsigned)g->queue.desc.geom.nslots);
    /* Counted before the launch: an apply kernel that sees the count
     * unchanged and the device busy on both sides of its run ran beside
     * the same kernels (runtime/messages/apply.c). */
    atomic_fetch_add_explicit(&g->app_launches, 1, memory_order_relaxed);
    if (!g->kernels_in_flight)
        g->epoch_start_ns = grain_now_ns();
    struct grain_applier *applier = atomic_load_explicit(&g->applier, memory_order_acquire);
    grain_status_t st = applier != NULL ? grain_applier_before_launch(applier) : GRAIN_OK;
    if (st == GRAIN_OK)
        st = g->bops->launch(k->bkernel, dims, global, chosen);
    if (applier != NULL)
        grain_applier_after_launch(applier);
    if (st == GRAIN_OK)
        g->kernels_in_flight = 1;
    return st;
}
