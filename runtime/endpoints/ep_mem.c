/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoint memory (GMH, section III-B2): device memory of one endpoint,
 * its size and what the endpoint may do with it, and by default a pinned
 * host shadow of the same size through which copies to and from the host
 * go (and, later, messages to other nodes).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/endpoints/endpoint.h"
#include "services/log.h"

#define EP_MEM_FLAGS (GRAIN_EP_READ | GRAIN_EP_WRITE | GRAIN_EP_NO_SHADOW)

grain_status_t grain_ep_check_thread(const grain_cmdq_t *q, const char *what)
{
    if (q == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "%s: no endpoint", what);
    if (!pthread_equal(pthread_self(), q->self))
        return grain_fail(GRAIN_ERR_STATE, "%s: endpoint %d is driven by its own thread only", what, q->id);
    return GRAIN_OK;
}

grain_status_t grain_ep_mem_alloc(grain_cmdq_t *q, size_t bytes, unsigned flags, grain_ep_mem_t **mem_p)
{
    grain_status_t st = grain_ep_check_thread(q, "grain_ep_mem_alloc");
    if (st != GRAIN_OK)
        return st;
    if (mem_p == NULL || bytes == 0)
        return grain_fail(GRAIN_ERR_INVALID, "grain_ep_mem_alloc: %s", mem_p == NULL ? "nowhere to store the memory"
                                                                                     : "0 bytes asked for");
    if ((flags & ~EP_MEM_FLAGS) != 0 || (flags & (GRAIN_EP_READ | GRAIN_EP_WRITE)) == 0)
        return grain_fail(GRAIN_ERR_INVALID,
                          "grain_ep_mem_alloc: flags 0x%x; give GRAIN_EP_READ, GRAIN_EP_WRITE or both, and "
                          "GRAIN_EP_NO_SHADOW or not",
                          flags);
    grain_ep_mem_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "grain_ep_mem_alloc: no memory");
    *m = (grain_ep_mem_t){.owner = q, .size = bytes, .flags = flags};
    /* Memory the staging pools keep for reuse goes first. */
    for (int tries = 0; tries < 2; tries++) {
        st = q->bops->alloc_device(q->backend, bytes, &m->device);
        if (st == GRAIN_OK && !(flags & GRAIN_EP_NO_SHADOW) &&
            (st = q->bops->alloc_shared(q->backend, bytes, &m->shadow)) != GRAIN_OK)
            q->bops->free_device(q->backend, m->device);
        if (st != GRAIN_ERR_NO_MEMORY || !grain_ep_pools_trim(q))
            break;
    }
    if (st != GRAIN_OK) {
        free(m);
        return st;
    }
    m->next = q->mems;
    q->mems = m;
    *mem_p = m;
    return GRAIN_OK;
}

static void release(grain_cmdq_t *q, grain_ep_mem_t *m)
{
    if (m->shadow != NULL)
        q->bops->free_shared(q->backend, m->shadow);
    q->bops->free_device(q->backend, m->device);
    free(m);
}

void grain_ep_mem_free(grain_cmdq_t *q, grain_ep_mem_t *mem)
{
    if (mem == NULL || grain_ep_check_thread(q, "grain_ep_mem_free") != GRAIN_OK)
        return;
    if (grain_ep_events_use(q, mem)) { /* kept: freed when the endpoint returns, after its events */
        grain_fail(GRAIN_ERR_STATE, "grain_ep_mem_free: a receive or a command of endpoint %d not yet done uses that "
                                    "memory; wait for it first (the memory is kept until the endpoint returns)",
                   q->id);
        return;
    }
    if (grain_ep_regs_use(q, mem)) {
        grain_fail(GRAIN_ERR_STATE, "grain_ep_mem_free: a command endpoint %d registered uses that memory; "
                                    "grain_ep_clear its commands first (the memory is kept until the endpoint "
                                    "returns)",
                   q->id);
        return;
    }
    for (grain_ep_mem_t **p = &q->mems; *p != NULL; p = &(*p)->next)
        if (*p == mem) {
            *p = mem->next;
            release(q, mem);
            return;
        }
    grain_fail(GRAIN_ERR_INVALID, "grain_ep_mem_free: endpoint %d did not allocate that memory", q->id);
}

void grain_ep_mem_free_all(grain_cmdq_t *q)
{
    while (q->mems != NULL) {
        grain_ep_mem_t *m = q->mems;
        q->mems = m->next;
        release(q, m);
    }
}

size_t grain_ep_mem_size(const grain_ep_mem_t *mem)
{
    return mem != NULL ? mem->size : 0;
}

void *grain_ep_mem_shadow(grain_ep_mem_t *mem)
{
    return mem != NULL ? mem->shadow : NULL;
}

grain_status_t grain_ep_mem_check(const grain_cmdq_t *q, const grain_ep_mem_t *mem, size_t offset, size_t bytes,
                                  unsigned needs, const char *what)
{
    if (mem == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "%s: no endpoint memory", what);
    if (mem->owner != q)
        return grain_fail(GRAIN_ERR_INVALID, "%s: the memory is endpoint %d's, not endpoint %d's", what, mem->owner->id,
                          q->id);
    unsigned missing = needs & ~mem->flags & (GRAIN_EP_READ | GRAIN_EP_WRITE);
    if (missing != 0)
        return grain_fail(GRAIN_ERR_INVALID, "%s: the memory was allocated without %s", what,
                          missing == GRAIN_EP_READ    ? "GRAIN_EP_READ"
                          : missing == GRAIN_EP_WRITE ? "GRAIN_EP_WRITE"
                                                      : "GRAIN_EP_READ and GRAIN_EP_WRITE");
    if (offset > mem->size || bytes > mem->size - offset)
        return grain_fail(GRAIN_ERR_INVALID, "%s: %zu bytes at offset %zu do not fit the memory's %zu", what, bytes,
                          offset, mem->size);
    return GRAIN_OK;
}

unsigned char *grain_ep_mem_staging(grain_ep_mem_t *mem, size_t offset, size_t bytes, void **own)
{
    *own = NULL;
    if (mem->shadow != NULL)
        return (unsigned char *)mem->shadow + offset;
    return *own = malloc(bytes > 0 ? bytes : 1);
}

/* The checks a copy between the host and `mem` passes. */
static grain_status_t check_copy(const grain_cmdq_t *q, const grain_ep_mem_t *mem, size_t offset, const void *host,
                                 size_t bytes, unsigned needs, const char *what)
{
    grain_status_t st = grain_ep_check_thread(q, what);
    if (st != GRAIN_OK)
        return st;
    if (host == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "%s: no host buffer", what);
    return grain_ep_mem_check(q, mem, offset, bytes, needs, what);
}

/* The device copies pinned memory at full speed and pageable memory at a
 * fraction of it (a sixth for 16 MiB each way on an H100): through the
 * shadow, a host memcpy and a pinned copy beat one pageable copy. */
grain_status_t grain_ep_mem_in(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, const void *src, size_t bytes)
{
    if (bytes == 0)
        return GRAIN_OK;
    uint8_t *dev = (uint8_t *)mem->device + offset;
    if (mem->shadow == NULL)
        return q->bops->copy(q->backend, dev, src, bytes);
    uint8_t *shadow = (uint8_t *)mem->shadow + offset;
    memcpy(shadow, src, bytes);
    return q->bops->copy(q->backend, dev, shadow, bytes);
}

grain_status_t grain_ep_mem_out(grain_cmdq_t *q, const grain_ep_mem_t *mem, size_t offset, void *dst, size_t bytes)
{
    if (bytes == 0)
        return GRAIN_OK;
    const uint8_t *dev = (const uint8_t *)mem->device + offset;
    if (mem->shadow == NULL)
        return q->bops->copy(q->backend, dst, dev, bytes);
    uint8_t *shadow = (uint8_t *)mem->shadow + offset;
    grain_status_t st = q->bops->copy(q->backend, shadow, dev, bytes);
    if (st == GRAIN_OK)
        memcpy(dst, shadow, bytes);
    return st;
}

grain_status_t grain_ep_mem_write(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, const void *src, size_t bytes)
{
    grain_status_t st = check_copy(q, mem, offset, src, bytes, GRAIN_EP_WRITE, "grain_ep_mem_write");
    return st != GRAIN_OK ? st : grain_ep_mem_in(q, mem, offset, src, bytes);
}

grain_status_t grain_ep_mem_read(grain_cmdq_t *q, const grain_ep_mem_t *mem, size_t offset, void *dst, size_t bytes)
{
    grain_status_t st = check_copy(q, mem, offset, dst, bytes, GRAIN_EP_READ, "grain_ep_mem_read");
    return st != GRAIN_OK ? st : grain_ep_mem_out(q, mem, offset, dst, bytes);
}
