/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device endpoints (include/grain/ep.h, docs/endpoints.md): what one
 * endpoint thread owns, and which device each virtual device drives.
 */
#ifndef GRAIN_RUNTIME_ENDPOINTS_ENDPOINT_H
#define GRAIN_RUNTIME_ENDPOINTS_ENDPOINT_H

#include <pthread.h>

#include "backends/backend.h"
#include "grain/ep.h"

struct grain_ep_mem {
    struct grain_ep_mem *next; /* in its endpoint's list */
    const grain_cmdq_t *owner;
    size_t size;
    unsigned flags;
    void *device; /* the backend's alloc_device */
    void *shadow; /* the backend's alloc_shared (pinned, or shared virtual memory), or NULL */
};

struct grain_cmdq {
    grain_t *grain;
    int id, count;
    unsigned vdev, devices, device_index;
    int cpu; /* the core the thread is bound to, or -1 */
    const grain_backend_ops_t *bops;
    grain_backend_t *backend; /* opened by the endpoint's own thread */
    grain_backend_info_t info;
    grain_ep_mem_t *mems;
    grain_ep_fn_t fn;
    void *arg;
    pthread_t thread;
    pthread_t self; /* set by the thread itself: calls from any other are refused */
    grain_status_t status;
    char why[1024]; /* the thread's error sentence when status is not GRAIN_OK */
};

/* The devices the rank's backend sees on this node (grain_info's list). */
unsigned grain_ep_node_devices(const grain_t *g);
/* Endpoints a rank runs where neither the call nor GRAIN_EP_DEVICES says:
 * its share of the node's devices, at least one. */
unsigned grain_ep_auto_devices(unsigned node_devices, unsigned node_ranks);
/* The node's device that virtual device `vdev` drives on the rank that is
 * `node_rank`-th of its node, each rank running `devices` endpoints: the
 * node's ranks take consecutive devices, round the node's devices when they
 * ask for more than there are. */
unsigned grain_ep_device_of(unsigned node_rank, unsigned devices, unsigned vdev, unsigned node_devices);

/* Frees what the endpoint allocated and did not free. */
void grain_ep_mem_free_all(grain_cmdq_t *q);
/* GRAIN_OK when the calling thread is q's own, else GRAIN_ERR_STATE naming
 * `what`, the call. */
grain_status_t grain_ep_check_thread(const grain_cmdq_t *q, const char *what);

#endif
