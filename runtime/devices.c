/* SPDX-License-Identifier: BSD-3-Clause */
#include <pthread.h>
#include <stdint.h>

#include "runtime/devices.h"
#include "runtime/grain_impl.h"
#include "services/log.h"

unsigned grain_node_devices(const grain_t *g)
{
    unsigned n = 0;
    for (grain_config_t c = g->config; g->bops->select_device(&c, n); c = g->config)
        n++;
    return n;
}

unsigned grain_node_rank(const grain_t *g)
{
    unsigned r = 0;
    for (int p = 0; p < g->my_pe; p++)
        r += g->node_of[p] == g->node_of[g->my_pe];
    return r;
}

unsigned grain_node_device_of(unsigned node_rank, unsigned devices, unsigned vdev, unsigned node_devices)
{
    return (unsigned)(((uint64_t)node_rank * devices + vdev) % node_devices);
}

/* Backends open one at a time: opening reads and sets process-wide state
 * (the OpenCL platform list, PoCL's thread count in the environment). */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

grain_status_t grain_node_device_open(const grain_t *g, unsigned index, grain_backend_t **backend_p)
{
    grain_config_t c = g->config;
    if (!g->bops->select_device(&c, index))
        return grain_fail(GRAIN_ERR_NO_DEVICE, "%s: the backend no longer lists device %u of this node",
                          g->bops->name, index);
    pthread_mutex_lock(&open_lock);
    grain_status_t st = g->bops->open(&c, 1, backend_p);
    pthread_mutex_unlock(&open_lock);
    return st;
}
