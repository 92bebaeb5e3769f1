/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The scheduler's programs and kernels: built once a device, so that a
 * launch runs wherever the policy places it, and plain (arguments from 0).
 * A launch takes a copy of its kernel's arguments when it is added, as
 * CUDA's launch does, and holds the kernel until it is done; a program
 * whose scheduler is destroyed first lets go of its builds then, and its
 * shell lives until the application destroys it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/sched/sched_exec.h"
#include "services/log.h"

const char *sched_intern(grain_sched_t *s, const char *name)
{
    for (sched_name_t *n = s->names; n != NULL; n = n->next)
        if (strcmp(n->text, name) == 0)
            return n->text;
    size_t len = strlen(name);
    sched_name_t *n = malloc(sizeof *n + len + 1);
    if (n == NULL)
        return "(no memory for the name)";
    memcpy(n->text, name, len + 1);
    n->next = s->names;
    s->names = n;
    return n->text;
}

/* The builds of `sp`, of its first `n` devices. */
static void builds_release(sched_program_t *sp, unsigned n)
{
    grain_sched_t *s = sp->sched;
    for (unsigned d = 0; d < n; d++)
        if (sp->per_device[d] != NULL)
            s->bops->program_release(sp->per_device[d]);
    free(sp->per_device);
    sp->per_device = NULL;
}

grain_status_t grain_sched_program_create(grain_sched_t *s, const char *source, const char *options,
                                          grain_program_t **program_p)
{
    if (s == NULL || source == NULL || program_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_sched_program_create needs a scheduler, a source and an output");
    const char *include = grain_device_include_dir(s->grain, source);
    char defines[2048];
    if ((size_t)snprintf(defines, sizeof defines, "%s%s%s", options != NULL ? options : "", *include ? " -I" : "",
                         include) >= sizeof defines)
        return grain_fail(GRAIN_ERR_INVALID, "grain_sched_program_create: the options are too long");
    sched_program_t *sp = calloc(1, sizeof *sp);
    if (sp == NULL || (sp->per_device = calloc(s->n_dev, sizeof *sp->per_device)) == NULL) {
        free(sp);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "grain_sched_program_create: no memory");
    }
    sp->sched = s;
    sp->refs = 1;
    grain_status_t st = GRAIN_OK;
    for (unsigned d = 0; d < s->n_dev && st == GRAIN_OK; d++)
        st = s->bops->program_build(s->dev[d].backend, source, defines, &sp->per_device[d]);
    if (st == GRAIN_OK && (st = grain_program_wrap_sched(sp, program_p)) == GRAIN_OK) {
        sp->next = s->programs;
        s->programs = sp;
        return GRAIN_OK;
    }
    builds_release(sp, s->n_dev);
    free(sp);
    return st;
}

void sched_program_release(sched_program_t *sp)
{
    if (--sp->refs > 0)
        return;
    grain_sched_t *s = sp->sched;
    if (s != NULL) {
        for (sched_program_t **x = &s->programs; *x != NULL; x = &(*x)->next)
            if (*x == sp) {
                *x = sp->next;
                break;
            }
        builds_release(sp, s->n_dev);
    }
    free(sp);
}

/* The device builds of k (with the scheduler's backends still open). */
static void kernel_builds_release(grain_sched_t *s, sched_kernel_t *k)
{
    for (unsigned d = 0; d < s->n_dev; d++)
        s->bops->kernel_release(k->per_device[d]);
    free(k->per_device);
    k->per_device = NULL;
}

void sched_programs_orphan(grain_sched_t *s)
{
    for (sched_program_t *sp = s->programs, *next; sp != NULL; sp = next) {
        next = sp->next;
        for (sched_kernel_t *k = sp->kernels; k != NULL; k = k->next)
            kernel_builds_release(s, k);
        builds_release(sp, s->n_dev);
        sp->sched = NULL;
    }
    s->programs = NULL;
}

grain_status_t sched_kernel_create(sched_program_t *sp, const char *name, sched_kernel_t **k_p)
{
    grain_sched_t *s = sp->sched;
    if (s == NULL)
        return grain_fail(GRAIN_ERR_STATE, "grain_kernel_create: kernel %s: the program's scheduler is destroyed",
                          name);
    sched_kernel_t *k = calloc(1, sizeof *k);
    if (k == NULL || (k->per_device = calloc(s->n_dev, sizeof *k->per_device)) == NULL) {
        free(k);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "grain_kernel_create: no memory");
    }
    grain_status_t st = GRAIN_OK;
    unsigned made = 0;
    while (made < s->n_dev && (st = s->bops->kernel_create(sp->per_device[made], name, &k->per_device[made])) ==
                                  GRAIN_OK)
        made++;
    if (st != GRAIN_OK) {
        for (unsigned i = 0; i < made; i++)
            s->bops->kernel_release(k->per_device[i]);
        free(k->per_device);
        free(k);
        return st;
    }
    k->program = sp;
    snprintf(k->name, sizeof k->name, "%s", name);
    k->interned = sched_intern(s, name);
    k->refs = 1;
    k->next = sp->kernels;
    sp->kernels = k;
    sp->refs++;
    *k_p = k;
    return GRAIN_OK;
}

void sched_kernel_hold(sched_kernel_t *k)
{
    k->refs++;
}

void sched_kernel_let_go(sched_kernel_t *k)
{
    if (--k->refs > 0)
        return;
    sched_program_t *sp = k->program;
    for (sched_kernel_t **x = &sp->kernels; *x != NULL; x = &(*x)->next)
        if (*x == k) {
            *x = k->next;
            break;
        }
    if (sp->sched != NULL)
        kernel_builds_release(sp->sched, k);
    free(k);
    sched_program_release(sp);
}

static grain_status_t arg_slot(sched_kernel_t *k, unsigned index, const char *what, sched_argval_t **a_p)
{
    if (k->program->sched == NULL)
        return grain_fail(GRAIN_ERR_STATE, "%s: kernel %s: its scheduler is destroyed", what, k->name);
    if (index >= SCHED_ARGS)
        return grain_fail(GRAIN_ERR_INVALID, "%s: kernel %s: argument %u; a scheduler kernel takes at most %u", what,
                          k->name, index, SCHED_ARGS);
    *a_p = &k->args[index];
    return GRAIN_OK;
}

grain_status_t sched_kernel_set_arg(sched_kernel_t *k, unsigned index, size_t size, const void *value)
{
    const char *what = "grain_kernel_set_arg";
    sched_argval_t *a = NULL;
    grain_status_t st = arg_slot(k, index, what, &a);
    if (st != GRAIN_OK)
        return st;
    if (value == NULL || size == 0 || size > SCHED_ARG_BYTES)
        return grain_fail(GRAIN_ERR_INVALID, "%s: kernel %s: argument %u of %zu bytes; give a value of 1 to %u bytes",
                          what, k->name, index, size, SCHED_ARG_BYTES);
    *a = (sched_argval_t){.size = size};
    memcpy(a->value, value, size);
    if (index >= k->n_args)
        k->n_args = index + 1;
    return GRAIN_OK;
}

grain_status_t grain_kernel_set_arg_array(grain_kernel_t *kernel, unsigned index, grain_array_t *array,
                                          grain_access_t access)
{
    const char *what = "grain_kernel_set_arg_array";
    sched_kernel_t *k = grain_kernel_sched(kernel);
    if (k == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "%s: %s", what,
                          kernel == NULL ? "no kernel" : "the kernel is not the task scheduler's "
                                                         "(grain_sched_program_create)");
    sched_argval_t *a = NULL;
    grain_status_t st = arg_slot(k, index, what, &a);
    if (st != GRAIN_OK)
        return st;
    if (array == NULL || array->sched != k->program->sched)
        return grain_fail(GRAIN_ERR_INVALID, "%s: kernel %s: argument %u: %s", what, k->name, index,
                          array == NULL ? "no array" : "an array of another scheduler");
    if (access < GRAIN_READ || access > GRAIN_READ_WRITE)
        return grain_fail(GRAIN_ERR_INVALID, "%s: kernel %s: argument %u: access %d; give GRAIN_READ, GRAIN_WRITE "
                          "or GRAIN_READ_WRITE", what, k->name, index, (int)access);
    *a = (sched_argval_t){.size = sizeof(void *), .array = array, .access = (unsigned)access};
    if (index >= k->n_args)
        k->n_args = index + 1;
    return GRAIN_OK;
}
