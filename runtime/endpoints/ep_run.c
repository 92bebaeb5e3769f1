/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grain_ep_run: a thread per device endpoint (GMH, sections III-A and
 * III-B1).  Each thread opens a backend of its own on its device, so that
 * APIs that bind a device to a thread (CUDA, HIP) see one device a thread,
 * and runs the application's function with its command queue.
 */
#define _GNU_SOURCE /* sched_getaffinity, pthread_setaffinity_np, pthread_setname_np */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/devices.h"
#include "runtime/endpoints/endpoint.h"
#include "runtime/grain_impl.h"
#include "services/log.h"

/* Past this, a rank would start more threads than any node has devices. */
#define EP_DEVICES_MAX 1024u

unsigned grain_ep_auto_devices(unsigned node_devices, unsigned node_ranks)
{
    unsigned share = node_ranks > 0 ? node_devices / node_ranks : node_devices;
    return share > 0 ? share : 1;
}

/* A core of its own for each endpoint thread where the node's ranks may
 * use at least twice as many cores as they run endpoints: the last ones,
 * since the application's thread and grain's own threads start on the
 * first, each rank of the node below the one after it (node rank 0 last).
 * Every rank once took the same last cores: four ranks of one endpoint
 * each on four H100s (64 cores, unbound) all ran their endpoint threads on
 * one core, and dslash's four ranks ran no faster than two.  -1 (the
 * scheduler's choice) otherwise. */
static void pick_cores(grain_cmdq_t *eps, unsigned devices, unsigned node_rank, unsigned node_ranks)
{
    cpu_set_t allowed;
    int count = sched_getaffinity(0, sizeof allowed, &allowed) == 0 ? CPU_COUNT(&allowed) : 0;
    for (unsigned v = 0; v < devices; v++)
        eps[v].cpu = -1;
    long long below = (long long)devices * (node_rank + 1);
    if (count < 2 * (long long)devices * node_ranks || below > count)
        return;
    int seen = 0, first = count - (int)below;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &allowed))
            continue;
        if (seen >= first && seen - first < (int)devices)
            eps[seen - first].cpu = cpu;
        seen++;
    }
}

static grain_status_t open_device(grain_cmdq_t *q)
{
    grain_status_t st = grain_node_device_open(q->grain, q->device_index, &q->backend);
    if (st != GRAIN_OK)
        return st;
    q->bops->query(q->backend, &q->info);
    /* Streams are lanes of the endpoint's own backend, which nothing else uses. */
    q->streams_async = q->bops->copy_async != NULL && q->bops->launch_lane != NULL &&
                       GRAIN_EP_STREAMS <= GRAIN_COPY_LANES;
    return GRAIN_OK;
}

static void *endpoint_thread(void *arg)
{
    grain_cmdq_t *q = arg;
    q->self = pthread_self();
    char name[16];
    snprintf(name, sizeof name, "grain-ep%u", q->vdev);
    pthread_setname_np(q->self, name);
    if (q->cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(q->cpu, &one);
        if (pthread_setaffinity_np(q->self, sizeof one, &one) != 0)
            grain_info("endpoint %d: could not bind its thread to core %d; the scheduler places it", q->id, q->cpu);
    }
    q->status = open_device(q);
    if (q->status == GRAIN_OK && (q->reach = malloc(q->devices)) != NULL)
        memset(q->reach, -1, q->devices);
    q->host_pool.host = 1;
    if (q->status == GRAIN_OK) {
        pthread_mutex_lock(&q->team->lock);
        q->team->backends[q->vdev] = q->backend;
        pthread_mutex_unlock(&q->team->lock);
        q->status = grain_ep_window_open(q);
    }
    if (q->status == GRAIN_OK)
        q->status = q->fn(q, q->arg);
    if (q->status != GRAIN_OK)
        snprintf(q->why, sizeof q->why, "%s", grain_error_message(NULL));
    grain_ep_events_finish(q);
    grain_ep_mail_unstage(q);
    grain_ep_pool_close(q, &q->host_pool); /* every event released: its stages are back */
    grain_ep_team_depart(q->team, q->vdev);
    grain_ep_clear(q);
    grain_ep_programs_free(q);
    grain_ep_reduce_release(q);
    grain_ep_mem_free_all(q);
    /* The backend stays open for the window, which other ranks may still
     * read: grain_ep_run closes it once every rank's endpoints returned. */
    free(q->reach);
    return NULL;
}

/* Every rank's count, and whether any rank's arguments were bad, in one
 * collective: ranks that disagree all return, none waits for the others. */
static grain_status_t agree(grain_t *g, unsigned devices, int bad)
{
    int64_t a[A_WORDS];
    grain_status_t st = grain_ep_agree(g, 0, devices, bad ? GRAIN_ERR_INVALID : GRAIN_OK, NULL, 0, a);
    if (st != GRAIN_OK || bad)
        return st != GRAIN_OK ? st : GRAIN_ERR_INVALID;
    if (a[A_STATUS_NEG] != 0)
        return grain_fail(GRAIN_ERR_INVALID, "grain_ep_run: another rank's arguments were refused");
    if (a[A_KEY] != -a[A_KEY_NEG])
        return grain_fail(GRAIN_ERR_CONFIG,
                          "grain_ep_run: the ranks ask for %lld to %lld endpoints each; every rank must run the same "
                          "number (the endpoint ids are rank x endpoints + virtual device)",
                          (long long)-a[A_KEY_NEG], (long long)a[A_KEY]);
    return GRAIN_OK;
}

static unsigned how_many(const grain_t *g, unsigned devices, unsigned node_devices)
{
    if (devices == 0)
        devices = g->config.ep_devices;
    return devices > 0 ? devices : grain_ep_auto_devices(node_devices, g->node_size);
}

grain_status_t grain_ep_run(grain_t *g, unsigned devices, grain_ep_fn_t fn, void *arg)
{
    if (g == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_ep_run: no grain handle");
    unsigned node_devices = grain_node_devices(g);
    devices = how_many(g, devices, node_devices);
    int bad = 1;
    if (fn == NULL)
        grain_fail(GRAIN_ERR_INVALID, "grain_ep_run: no function to run on the endpoints");
    else if (node_devices == 0)
        grain_fail(GRAIN_ERR_INVALID, "grain_ep_run: the %s backend lists no device on this node", g->bops->name);
    else if (devices > EP_DEVICES_MAX)
        grain_fail(GRAIN_ERR_INVALID, "grain_ep_run: %u endpoints a rank asked for; at most %u", devices,
                   EP_DEVICES_MAX);
    else
        bad = 0;
    grain_status_t st = agree(g, devices, bad);
    if (st != GRAIN_OK)
        return st;

    grain_ep_team_t team;
    grain_cmdq_t *eps = calloc(devices, sizeof *eps);
    if (eps == NULL)
        return grain_ep_team_finish(g, grain_fail(GRAIN_ERR_NO_MEMORY, "grain_ep_run: no memory for %u endpoints",
                                                  devices));
    if ((st = grain_ep_team_init(&team, devices, (unsigned)g->n_pes)) != GRAIN_OK) {
        free(eps);
        return grain_ep_team_finish(g, st);
    }
    unsigned nr = grain_node_rank(g);
    if ((uint64_t)g->node_size * devices > node_devices && g->my_pe == g->node_of[g->my_pe])
        grain_info("grain_ep_run: %u ranks of this node run %u endpoints each on %u device%s: endpoints share devices",
                   g->node_size, devices, node_devices, node_devices == 1 ? "" : "s");
    pick_cores(eps, devices, nr, g->node_size);
    unsigned started = 0;
    for (unsigned v = 0; v < devices; v++) {
        grain_cmdq_t *q = &eps[v];
        int cpu = q->cpu;
        *q = (grain_cmdq_t){.grain = g,
                            .id = g->my_pe * (int)devices + (int)v,
                            .count = g->n_pes * (int)devices,
                            .vdev = v,
                            .devices = devices,
                            .device_index = grain_node_device_of(nr, devices, v, node_devices),
                            .cpu = cpu,
                            .bops = g->bops,
                            .fn = fn,
                            .arg = arg,
                            .team = &team};
        q->events_tail = &q->events;
        if (q->cpu >= 0)
            grain_info("endpoint %d: virtual device %u drives device %u, its thread on core %d of its own", q->id, v,
                       q->device_index, q->cpu);
        else
            grain_info("endpoint %d: virtual device %u drives device %u", q->id, v, q->device_index);
        if (pthread_create(&q->thread, NULL, endpoint_thread, q) != 0) {
            q->status = grain_fail(GRAIN_ERR_NO_MEMORY, "grain_ep_run: could not start the thread of endpoint %d",
                                   q->id);
            snprintf(q->why, sizeof q->why, "%s", grain_error_message(NULL));
            for (unsigned w = v; w < devices; w++) /* those that never start count as returned */
                grain_ep_team_depart(&team, w);
            break;
        }
        started++;
    }
    for (unsigned v = 0; v < started; v++)
        pthread_join(eps[v].thread, NULL);
    st = GRAIN_OK;
    for (unsigned v = 0; v < devices && st == GRAIN_OK; v++) {
        if (eps[v].status == GRAIN_OK)
            continue;
        st = eps[v].status;
        if (eps[v].why[0] == '\0') { /* the function returned a status without a sentence: say it here */
            grain_fail(st, "endpoint %d (rank %d, virtual device %u): its function returned %s", eps[v].id, g->my_pe,
                       v, grain_strerror(st));
            continue;
        }
        char why[1280]; /* logged by the endpoint's thread already */
        snprintf(why, sizeof why, "endpoint %d (rank %d, virtual device %u): %s", eps[v].id, g->my_pe, v, eps[v].why);
        grain_error_keep(why);
    }
    unsigned dropped = grain_ep_mail_drop(&team);
    if (dropped > 0)
        grain_warn("grain_ep_run: %u message%s between endpoints of rank %d %s never received; dropped", dropped,
                   dropped == 1 ? "" : "s", g->my_pe, dropped == 1 ? "was" : "were");
    st = grain_ep_team_finish(g, st);
    grain_ep_windows_close(g, &team, eps, started, st == GRAIN_OK);
    for (unsigned v = 0; v < started; v++)
        if (eps[v].backend != NULL)
            g->bops->close(eps[v].backend);
    free(eps);
    grain_ep_team_destroy(&team);
    return st;
}

int grain_ep_id(const grain_cmdq_t *q)
{
    return q->id;
}

unsigned grain_ep_vdev(const grain_cmdq_t *q)
{
    return q->vdev;
}

unsigned grain_ep_devices(const grain_cmdq_t *q)
{
    return q->devices;
}

int grain_ep_count(const grain_cmdq_t *q)
{
    return q->count;
}

const char *grain_ep_device_name(const grain_cmdq_t *q)
{
    return q->info.device_name;
}

unsigned grain_ep_device_index(const grain_cmdq_t *q)
{
    return q->device_index;
}

grain_t *grain_ep_grain(const grain_cmdq_t *q)
{
    return q->grain;
}
