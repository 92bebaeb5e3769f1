/* SPDX-License-Identifier: BSD-3-Clause */
/* The scheduler's life, its launches and its waits (grain/sched.h). */
#include <stdlib.h>
#include <string.h>

#include "runtime/devices.h"
#include "runtime/grain_impl.h"
#include "runtime/sched/sched_exec.h"
#include "services/log.h"

static const char *const policy_names[] = {"round-robin", "stream-aware", "min-transfer-size",
                                           "min-max-transfer-time"};
#define N_POLICIES (sizeof policy_names / sizeof policy_names[0])

const char *grain_policy_name(grain_policy_t policy)
{
    return (unsigned)policy < N_POLICIES ? policy_names[policy] : "unknown";
}

grain_status_t grain_policy_parse(const char *name, grain_policy_t *policy_p)
{
    for (unsigned i = 0; name != NULL && i < N_POLICIES; i++)
        if (strcmp(name, policy_names[i]) == 0) {
            *policy_p = (grain_policy_t)i;
            return GRAIN_OK;
        }
    return grain_fail(GRAIN_ERR_INVALID, "scheduling policy \"%s\": expected round-robin, stream-aware, "
                      "min-transfer-size or min-max-transfer-time", name != NULL ? name : "");
}

static grain_status_t open_devices(grain_sched_t *s)
{
    grain_t *g = s->grain;
    unsigned node_devices = grain_node_devices(g);
    if (node_devices == 0)
        return grain_fail(GRAIN_ERR_NO_DEVICE, "grain_sched_create: the %s backend lists no device on this node",
                          g->bops->name);
    unsigned n = g->config.sched_devices ? (unsigned)g->config.sched_devices : node_devices;
    if (s->mode == GRAIN_SCHED_SERIAL)
        n = 1;
    if ((s->dev = calloc(n, sizeof *s->dev)) == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "grain_sched_create: no memory for %u devices", n);
    unsigned node_rank = grain_node_rank(g);
    for (unsigned d = 0; d < n; d++) {
        sched_device_t *dev = &s->dev[d];
        dev->node_index = grain_node_device_of(node_rank, n, d, node_devices);
        grain_status_t st = grain_node_device_open(g, dev->node_index, &dev->backend);
        if (st != GRAIN_OK)
            return st;
        s->n_dev = d + 1;
        s->bops->query(dev->backend, &dev->info);
        dev->lanes = s->bops->copy_async != NULL && s->bops->launch_lane != NULL;
        dev->streams = dev->lanes && s->mode != GRAIN_SCHED_SERIAL ? SCHED_STREAMS : 1;
    }
    if ((s->peer = calloc((size_t)n * n, 1)) == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "grain_sched_create: no memory for %u devices", n);
    for (unsigned to = 0; to < n && s->bops->reach_peer != NULL; to++)
        for (unsigned from = 0; from < n; from++)
            if (from != to && s->dev[from].lanes && s->dev[to].lanes) {
                grain_status_t st = s->bops->reach_peer(s->dev[to].backend, s->dev[from].backend);
                s->peer[from * n + to] = st == GRAIN_OK;
                if (st != GRAIN_OK) /* slower, not wrong */
                    grain_info("sched: device %u to %u through the host: %s", from, to, grain_error_message(s->grain));
            }
    return GRAIN_OK;
}

/* GRAIN_SCHED_MEMORY=managed needs the backend's managed memory and its
 * devices' lanes, where prefetches go in order with the elements. */
static grain_status_t check_managed(grain_sched_t *s)
{
    if (s->bops->alloc_managed == NULL || s->bops->prefetch == NULL || s->bops->advise == NULL)
        return grain_fail(GRAIN_ERR_UNSUPPORTED,
                          "GRAIN_SCHED_MEMORY=managed needs memory that the driver migrates between the host and "
                          "the devices (CUDA or HIP managed memory); the %s backend has none: set "
                          "GRAIN_SCHED_MEMORY=replicas",
                          s->bops->name);
    for (unsigned d = 0; d < s->n_dev; d++)
        if (!s->dev[d].lanes)
            return grain_fail(GRAIN_ERR_UNSUPPORTED,
                              "GRAIN_SCHED_MEMORY=managed prefetches on the devices' streams, and device %u (%s) "
                              "has none here: set GRAIN_SCHED_MEMORY=replicas",
                              d, s->dev[d].info.device_name);
    return GRAIN_OK;
}

grain_status_t grain_sched_create(grain_t *g, grain_policy_t policy, grain_sched_t **sched_p)
{
    if (g == NULL || sched_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_sched_create needs a grain handle and an output");
    if ((unsigned)policy >= N_POLICIES)
        return grain_fail(GRAIN_ERR_INVALID, "grain_sched_create: policy %d is none of grain_policy_t's", (int)policy);
    grain_sched_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "grain_sched_create: no memory");
    s->grain = g;
    s->bops = g->bops;
    s->policy = policy;
    s->mode = grain_config_sched_mode(&g->config);
    s->threshold = (double)g->config.sched_threshold / 100.0;
    s->managed = grain_config_sched_memory(&g->config) == GRAIN_SCHED_MANAGED;
    grain_status_t st = sched_dag_create(&s->dag);
    if (st == GRAIN_OK)
        st = open_devices(s);
    if (st == GRAIN_OK && s->managed)
        st = check_managed(s);
    if (st != GRAIN_OK) {
        grain_sched_destroy(s);
        return st;
    }
    grain_info("sched: %u device%s, policy %s, GRAIN_SCHED=%s, GRAIN_SCHED_MEMORY=%s, %u stream%s a device",
               s->n_dev, s->n_dev == 1 ? "" : "s", grain_policy_name(policy), grain_sched_mode_names[s->mode],
               grain_sched_memory_names[s->managed ? GRAIN_SCHED_MANAGED : GRAIN_SCHED_REPLICAS], s->dev[0].streams,
               s->dev[0].streams == 1 ? "" : "s");
    *sched_p = s;
    return GRAIN_OK;
}

void grain_sched_destroy(grain_sched_t *s)
{
    if (s == NULL)
        return;
    if (s->n_live > 0)
        sched_wait_for(s, SCHED_NONE);
    sched_arrays_free(s);
    sched_blas_release(s);
    sched_programs_orphan(s);
    for (size_t e = 0; e < s->n_elems; e++)
        free(s->elems[e].waits);
    free(s->elems);
    free(s->live);
    for (unsigned d = 0; d < s->n_dev; d++)
        s->bops->close(s->dev[d].backend);
    free(s->dev);
    free(s->bw);
    free(s->peer);
    sched_dag_destroy(s->dag);
    for (sched_name_t *n = s->names, *next; n != NULL; n = next) {
        next = n->next;
        free(n);
    }
    free(s);
}

unsigned grain_sched_devices(const grain_sched_t *s)
{
    return s != NULL ? s->n_dev : 0;
}

grain_status_t grain_sched_launch(grain_kernel_t *kernel, unsigned dims, const size_t *global, const size_t *local)
{
    sched_kernel_t *k = grain_kernel_sched(kernel);
    if (k == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_sched_launch: %s",
                          kernel == NULL ? "no kernel" : "the kernel is not the task scheduler's "
                                                         "(grain_sched_program_create); launch it with grain_launch");
    grain_sched_t *s = k->program->sched;
    if (s == NULL)
        return grain_fail(GRAIN_ERR_STATE, "grain_sched_launch: kernel %s: its scheduler is destroyed", k->name);
    if (global == NULL || dims < 1 || dims > 3)
        return grain_fail(GRAIN_ERR_INVALID, "grain_sched_launch: kernel %s: give 1 to 3 dimensions", k->name);
    for (unsigned d = 0; d < dims; d++)
        if (global[d] == 0 || (local != NULL && (local[d] == 0 || global[d] % local[d] != 0)))
            return grain_fail(GRAIN_ERR_INVALID, "grain_sched_launch: kernel %s: dimension %u: a global size of "
                              "%zu and a work-group of %zu; give a non-zero multiple of a non-zero work-group",
                              k->name, d, global[d], local != NULL ? local[d] : (size_t)0);
    sched_arg_t args[SCHED_ARGS];
    grain_array_t *arrays[SCHED_ARGS];
    size_t n_arrays = 0;
    for (unsigned i = 0; i < k->n_args; i++) {
        if (k->args[i].size == 0)
            return grain_fail(GRAIN_ERR_INVALID, "grain_sched_launch: kernel %s: argument %u was never set", k->name,
                              i);
        if (k->args[i].array != NULL) {
            args[n_arrays] = (sched_arg_t){.array = k->args[i].array->id, .access = k->args[i].access};
            arrays[n_arrays++] = k->args[i].array;
        }
    }
    sched_elem_t proto = {.kind = ELEM_KERNEL, .name = k->interned, .kernel = k, .dims = dims,
                          .has_local = local != NULL, .n_args = k->n_args};
    for (unsigned d = 0; d < dims; d++) {
        proto.global[d] = global[d];
        proto.local[d] = local != NULL ? local[d] : 1;
    }
    if ((proto.args = malloc(k->n_args * sizeof *proto.args + 1)) == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "grain_sched_launch: no memory");
    memcpy(proto.args, k->args, k->n_args * sizeof *proto.args);
    sched_kernel_hold(k);
    uint32_t e;
    return sched_add(s, &proto, args, n_arrays, arrays, &e);
}

grain_status_t grain_sched_wait(grain_sched_t *s)
{
    if (s == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_sched_wait needs a scheduler");
    sched_wait_for(s, SCHED_NONE);
    grain_status_t st = s->status;
    if (st != GRAIN_OK) {
        st = s->failures > 0 ? grain_fail(st, "sched: %s (and %u more elements failed or did not run)", s->why,
                                          s->failures)
                             : grain_fail(st, "sched: %s", s->why);
        s->status = GRAIN_OK;
        s->failures = 0;
    }
    return st;
}

void sched_count(grain_sched_t *s, unsigned what, uint64_t n, unsigned device)
{
    grain_sched_stats_t *st = &s->stats;
    uint64_t *mine[GRAIN_SCHED_COUNTS] = {
        [GRAIN_SCHED_COUNT_ELEMENTS] = &st->elements, [GRAIN_SCHED_COUNT_EDGES] = &st->edges,
        [GRAIN_SCHED_COUNT_COPIES] = &st->copies,     [GRAIN_SCHED_COUNT_BYTES_COPIED] = &st->bytes_copied,
        [GRAIN_SCHED_COUNT_BYTES_PEER] = &st->bytes_peer, [GRAIN_SCHED_COUNT_KERNELS] = &st->per_device[device],
        [GRAIN_SCHED_COUNT_VENDOR_GEMMS] = &st->vendor_gemms};
    *mine[what] += n;
    s->grain->sched_counts[what] += n;
}

grain_status_t grain_sched_stats(const grain_sched_t *s, grain_sched_stats_t *stats)
{
    if (s == NULL || stats == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_sched_stats needs a scheduler and an output");
    *stats = s->stats;
    stats->streams_used = 0;
    for (unsigned d = 0; d < s->n_dev; d++)
        for (unsigned k = 0; k < s->dev[d].streams; k++)
            stats->streams_used += (unsigned)s->dev[d].stream[k].used;
    return GRAIN_OK;
}
