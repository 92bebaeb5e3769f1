/* SPDX-License-Identifier: BSD-3-Clause */
/* A device-to-host queue's memory: slots where the host reads them, producer
 * state where kernels update it fastest. */
#include <stdlib.h>

#include "runtime/grain_impl.h"
#include "runtime/messages/queue_consumer.h"
#include "services/log.h"

unsigned grain_queue_rings_of(const grain_t *g)
{
    const grain_config_t *c = &g->config;
    unsigned rings = c->queue_rings ? (unsigned)c->queue_rings : g->binfo.compute_units;
    return grain_config_queue_protocol(c) == GRAIN_QUEUE_PAPER ? 1 : rings ? rings : 1;
}

grain_queue_geom_t grain_queue_geom_of(const grain_t *g, uint32_t nslots, uint32_t width, uint32_t rows)
{
    unsigned protocol = grain_config_queue_protocol(&g->config);
    if (nslots == 0)
        nslots = protocol == GRAIN_QUEUE_PAPER ? 256 : 64;
    return grain_queue_geom(protocol, grain_queue_rings_of(g), nslots, width, rows);
}

grain_status_t grain_queue_create(grain_t *g, grain_queue_geom_t geom, grain_queue_mem_t *m)
{
    *m = (grain_queue_mem_t){0};
    void *shared, *prod;
    grain_status_t st = g->bops->alloc_shared(g->backend, grain_queue_bytes(geom), &shared);
    if (st != GRAIN_OK)
        return st;
    st = g->bops->alloc_device(g->backend, geom.nrings * sizeof(grain_ring_prod_t), &prod);
    if (st != GRAIN_OK) {
        g->bops->free_shared(g->backend, shared);
        return st;
    }
    m->shared = shared;
    m->prod = prod;
    grain_queue_init(m->shared, geom);
    m->desc = (grain_queue_desc_t){.shared = m->shared, .prod = m->prod, .geom = geom};
    return GRAIN_OK;
}

void grain_queue_destroy(grain_t *g, grain_queue_mem_t *m)
{
    if (m->shared != NULL)
        g->bops->free_shared(g->backend, m->shared);
    if (m->prod != NULL)
        g->bops->free_device(g->backend, m->prod);
    *m = (grain_queue_mem_t){0};
}

grain_status_t grain_queue_counters(grain_t *g, const grain_queue_mem_t *m, grain_ring_prod_t *sum)
{
    uint32_t n = m->desc.geom.nrings;
    grain_ring_prod_t *prod = malloc(n * sizeof *prod);
    if (prod == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory to read %u rings' producer counters", n);
    grain_status_t st = g->bops->copy(g->backend, prod, m->prod, n * sizeof *prod);
    *sum = (grain_ring_prod_t){0};
    for (uint32_t i = 0; st == GRAIN_OK && i < n; i++) {
        sum->full_waits += prod[i].full_waits;
        sum->in_place += prod[i].in_place;
        sum->direct += prod[i].direct;
    }
    free(prod);
    return st;
}
