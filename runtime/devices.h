/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The devices of a rank's node as the layers that drive several of them
 * see them (device endpoints, the task scheduler): how many the backend
 * lists, which one the rank's n-th virtual device drives, and a backend of
 * its own opened on one.
 */
#ifndef GRAIN_RUNTIME_DEVICES_H
#define GRAIN_RUNTIME_DEVICES_H

#include "backends/backend.h"
#include "grain/grain.h"

/* The devices the rank's backend sees on this node (grain_info's list). */
unsigned grain_node_devices(const grain_t *g);
/* The rank's place among the ranks of its node, from 0. */
unsigned grain_node_rank(const grain_t *g);
/* The node's device that virtual device `vdev` drives on the rank that is
 * `node_rank`-th of its node, each rank driving `devices`: the node's
 * ranks take consecutive devices, round the node's devices when they ask
 * for more than there are. */
unsigned grain_node_device_of(unsigned node_rank, unsigned devices, unsigned vdev, unsigned node_devices);
/* A backend of the caller's own on the node's device `index`, with the
 * rank's settings otherwise (one host thread beside it). */
grain_status_t grain_node_device_open(const grain_t *g, unsigned index, grain_backend_t **backend_p);

#endif
