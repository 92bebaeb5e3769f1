/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The scheduler's arrays (GrCUDA III-B1).  GRAIN_SCHED_MEMORY=replicas: a
 * host copy and, on each device that uses it, a copy of its own, kept
 * coherent per whole array (sched_place.h).  Copies between devices go
 * through the host copy, which they leave valid, unless the devices reach
 * each other.  GRAIN_SCHED_MEMORY=managed: one allocation of managed
 * memory that every location addresses, kept coherent by the driver page
 * by page; the same coherence states then say where the array was last
 * made whole, and a copy becomes a prefetch there, ahead of the element
 * that needs it (III-B2), so that its kernel does not fault page by page.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/sched/sched_exec.h"
#include "services/backoff.h"
#include "services/log.h"

void *sched_host_alloc(grain_sched_t *s, size_t bytes, int *pinned_p)
{
    void *p = NULL;
    /* Pinned where copies on lanes overlap for real only from pinned
     * memory (CUDA, HIP); the probe's failure is no error: pageable
     * memory serves, more slowly. */
    grain_log_quiet(1);
    *pinned_p = s->dev[0].lanes && s->bops->alloc_shared(s->dev[0].backend, bytes, &p) == GRAIN_OK;
    grain_log_quiet(0);
    return *pinned_p ? p : calloc(1, bytes);
}

void sched_host_free(grain_sched_t *s, void *p, int pinned)
{
    if (pinned)
        s->bops->free_shared(s->dev[0].backend, p);
    else
        free(p);
}

/* The array's host copy, or its managed allocation. */
static void host_free(grain_sched_t *s, grain_array_t *a)
{
    if (s->managed)
        s->bops->free_device(s->dev[0].backend, a->host);
    else
        sched_host_free(s, a->host, a->host_pinned);
}

grain_status_t grain_array_create(grain_sched_t *s, size_t bytes, grain_array_t **array_p)
{
    if (s == NULL || bytes == 0 || array_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_array_create needs a scheduler, at least 1 byte and an output");
    grain_array_t *a = calloc(1, sizeof *a);
    grain_status_t st = GRAIN_OK;
    void *managed = NULL;
    if (a != NULL && s->managed)
        st = s->bops->alloc_managed(s->dev[0].backend, bytes, &managed); /* says why it failed */
    if (a != NULL && st == GRAIN_OK) {
        a->host = s->managed ? managed : sched_host_alloc(s, bytes, &a->host_pinned);
        a->replica = calloc(s->n_dev + 1, sizeof *a->replica);
        a->producer = malloc((s->n_dev + 1) * sizeof *a->producer);
    }
    if (a == NULL || st != GRAIN_OK || a->host == NULL || a->replica == NULL || a->producer == NULL) {
        if (a != NULL) {
            if (a->host != NULL)
                host_free(s, a);
            free(a->replica);
            free(a->producer);
        }
        free(a);
        return st != GRAIN_OK ? st
                              : grain_fail(GRAIN_ERR_NO_MEMORY, "grain_array_create: no host memory for %zu bytes",
                                           bytes);
    }
    for (unsigned l = 0; l <= s->n_dev; l++)
        a->producer[l] = SCHED_NONE;
    a->sched = s;
    a->bytes = bytes;
    a->where = (sched_where_t)1 << SCHED_HOST; /* zeros, as the allocation left them */
    a->id = s->n_array_ids++;
    a->next = s->arrays;
    a->prev = &s->arrays;
    if (s->arrays != NULL)
        s->arrays->prev = &a->next;
    s->arrays = a;
    *array_p = a;
    return GRAIN_OK;
}

static void array_free(grain_array_t *a)
{
    grain_sched_t *s = a->sched;
    for (unsigned l = 1; l <= s->n_dev; l++)
        if (a->replica[l] != NULL)
            s->bops->free_device(s->dev[l - 1].backend, a->replica[l]);
    *a->prev = a->next;
    if (a->next != NULL)
        a->next->prev = a->prev;
    host_free(s, a);
    free(a->replica);
    free(a->producer);
    free(a);
}

void grain_array_destroy(grain_array_t *a)
{
    if (a == NULL)
        return;
    grain_backoff_t backoff = {0};
    while (a->users > 0) {
        sched_progress(a->sched);
        grain_backoff_idle(&backoff);
    }
    array_free(a);
}

void sched_arrays_free(grain_sched_t *s)
{
    while (s->arrays != NULL)
        array_free(s->arrays);
}

size_t grain_array_bytes(const grain_array_t *a)
{
    return a != NULL ? a->bytes : 0;
}

grain_status_t sched_replica(grain_sched_t *s, grain_array_t *a, unsigned location, void **ptr_p)
{
    if (s->managed) {
        *ptr_p = a->host;
        return GRAIN_OK;
    }
    if (a->replica[location] == NULL) {
        grain_status_t st = s->bops->alloc_device(s->dev[location - 1].backend, a->bytes, &a->replica[location]);
        if (st != GRAIN_OK)
            return st;
    }
    *ptr_p = a->replica[location];
    return GRAIN_OK;
}

static void copied(grain_sched_t *s, const grain_array_t *a)
{
    sched_count(s, GRAIN_SCHED_COUNT_COPIES, 1, 0);
    sched_count(s, GRAIN_SCHED_COUNT_BYTES_COPIED, a->bytes, 0);
}

/* Under managed memory: the array migrated to `to` on `stream` (to the
 * host: on the source device's SCHED_HOST_LANE, as a copy down goes). */
static grain_status_t prefetch(grain_sched_t *s, grain_array_t *a, unsigned from, unsigned to, unsigned stream)
{
    grain_status_t st = to == SCHED_HOST
                            ? s->bops->prefetch(s->dev[from - 1].backend, SCHED_HOST_LANE, a->host, a->bytes, 1)
                            : s->bops->prefetch(s->dev[to - 1].backend, stream, a->host, a->bytes, 0);
    if (st == GRAIN_OK)
        copied(s, a);
    return st;
}

grain_status_t sched_copy(grain_sched_t *s, grain_array_t *a, unsigned from, unsigned to, unsigned stream)
{
    if (s->managed)
        return prefetch(s, a, from, to, stream);
    grain_status_t st = GRAIN_OK;
    void *src = a->host, *dst = NULL;
    if (from != SCHED_HOST && (st = sched_replica(s, a, from, &src)) != GRAIN_OK)
        return st;
    int peer = sched_peer(s, from, to);
    if (from != SCHED_HOST && !peer) { /* down to the host first */
        grain_backend_t *b = s->dev[from - 1].backend; /* else the next hop reads the host's copy now */
        st = sched_down_on_lane(s, from, to) ? s->bops->copy_async(b, SCHED_HOST_LANE, a->host, src, a->bytes)
                                             : s->bops->copy(b, a->host, src, a->bytes);
        if (st != GRAIN_OK)
            return st;
        copied(s, a);
        src = a->host;
    }
    if (to == SCHED_HOST)
        return GRAIN_OK;
    sched_device_t *dev = &s->dev[to - 1];
    if ((st = sched_replica(s, a, to, &dst)) != GRAIN_OK)
        return st;
    st = dev->lanes ? s->bops->copy_async(dev->backend, stream, dst, src, a->bytes)
                    : s->bops->copy(dev->backend, dst, src, a->bytes);
    if (st == GRAIN_OK)
        copied(s, a);
    if (st == GRAIN_OK && peer)
        sched_count(s, GRAIN_SCHED_COUNT_BYTES_PEER, a->bytes, 0);
    return st;
}

/* A host access, a prefetch or an advice: an element of the graph that
 * reads the array (a host write is also a write). */
static grain_status_t add_access(grain_array_t *a, sched_elem_t proto, unsigned access, uint32_t *e_p)
{
    sched_arg_t arg = {.array = a->id, .access = access};
    proto.array = a;
    return sched_add(a->sched, &proto, &arg, 1, &a, e_p);
}

grain_status_t grain_array_host(grain_array_t *a, grain_access_t access, void **ptr_p)
{
    if (a == NULL || ptr_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_array_host needs an array and an output");
    if (access < GRAIN_READ || access > GRAIN_READ_WRITE)
        return grain_fail(GRAIN_ERR_INVALID, "grain_array_host: access %d; give GRAIN_READ, GRAIN_WRITE or "
                                             "GRAIN_READ_WRITE", (int)access);
    /* The host's copy is brought up to date for a write too: the host may
     * write part of it. */
    uint32_t e;
    sched_elem_t proto = {.kind = ELEM_HOST, .location = SCHED_HOST, .name = "host"};
    grain_status_t st = add_access(a, proto, (unsigned)access | SCHED_READ, &e);
    if (st != GRAIN_OK)
        return st;
    grain_sched_t *s = a->sched;
    sched_wait_for(s, e);
    if (s->elems[e].failed)
        return grain_fail(s->status != GRAIN_OK ? s->status : GRAIN_ERR_STATE,
                          "grain_array_host: the array's contents are lost: %s", s->why);
    *ptr_p = a->host;
    return GRAIN_OK;
}

/* A device index of the scheduler's, or -1 for the host: GRAIN_OK, else
 * GRAIN_ERR_INVALID naming `what`. */
static grain_status_t check_device(const grain_sched_t *s, int device, const char *what)
{
    unsigned devices = grain_sched_devices(s);
    if (device >= -1 && device < (int)devices)
        return GRAIN_OK;
    return grain_fail(GRAIN_ERR_INVALID, "%s: device %d; the scheduler has devices 0 to %u, and -1 is the host", what,
                      device, devices - 1);
}

grain_status_t grain_array_prefetch(grain_array_t *a, int device)
{
    if (a == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_array_prefetch needs an array");
    grain_status_t st = check_device(a->sched, device, "grain_array_prefetch");
    sched_elem_t proto = {.kind = ELEM_PREFETCH, .location = (unsigned)(device + 1), .name = "prefetch"};
    uint32_t e;
    return st == GRAIN_OK ? add_access(a, proto, SCHED_READ, &e) : st;
}

/* In the graph as a read of the array, run on the host: after its last
 * writer, before its next. */
grain_status_t grain_array_advise(grain_array_t *a, grain_advice_t advice, int device, int set)
{
    if (a == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_array_advise needs an array");
    if ((int)advice < GRAIN_ADVISE_READ_MOSTLY || advice > GRAIN_ADVISE_ACCESSED_BY)
        return grain_fail(GRAIN_ERR_INVALID, "grain_array_advise: advice %d; give GRAIN_ADVISE_READ_MOSTLY, "
                          "GRAIN_ADVISE_PREFERRED_LOCATION or GRAIN_ADVISE_ACCESSED_BY", (int)advice);
    grain_status_t st = check_device(a->sched, device, "grain_array_advise");
    if (st != GRAIN_OK)
        return st;
    sched_elem_t proto = {.kind = ELEM_ADVICE, .location = SCHED_HOST, .name = "advice", .advice = (int)advice,
                          .advice_set = set != 0, .advice_at = (unsigned)(device + 1)};
    uint32_t e;
    return add_access(a, proto, SCHED_READ, &e);
}

grain_status_t sched_advise(grain_sched_t *s, const sched_elem_t *el)
{
    if (!s->managed)
        return GRAIN_OK;
    /* The host's advice through the first device's driver, which allocated the array. */
    sched_device_t *dev = &s->dev[el->advice_at == SCHED_HOST ? 0 : el->advice_at - 1];
    return s->bops->advise(dev->backend, el->array->host, el->array->bytes, el->advice, el->advice_at == SCHED_HOST,
                           el->advice_set);
}
