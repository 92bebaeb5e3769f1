/* SPDX-License-Identifier: BSD-3-Clause */
/* grain_init / grain_finalize and the calls that only read or allocate. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/grain_impl.h"
#include "runtime/messages/apply.h"
#include "runtime/messages/queue_consumer.h"
#include "runtime/messages/quiets.h"
#include "runtime/messages/recv_threads.h"
#include "runtime/messages/replier.h"
#include "services/backoff.h"
#include "services/cores.h"
#include "services/log.h"

/* Apply stages at most; and at least, where fewer receive buffers would
 * give fewer, the smaller of a number and a size (see grain_init_transport):
 * a launch applies the stages filled while the last ones ran
 * (runtime/messages/apply.h).  On a GPU, at least as many as
 * GRAIN_APPLY_STAGES_GPU_BYTES hold, up to GRAIN_APPLY_STAGES_GPU_MAX (the
 * most GRAIN_APPLY_STAGES takes). */
#define GRAIN_APPLY_STAGES_MAX 256u
#define GRAIN_APPLY_STAGES_MIN 32u
#define GRAIN_APPLY_STAGES_BYTES (2u << 20)
#define GRAIN_APPLY_STAGES_GPU_BYTES (256u << 20)
#define GRAIN_APPLY_STAGES_GPU_MAX 4096u

static grain_status_t check_symmetric_config(grain_t *g)
{
    /* A work-group takes a reply slot for each of its lanes at once
     * (grain/device.h), and waits for all of them. */
    if (g->config.reply_slots < g->config.queue_width)
        return grain_fail(GRAIN_ERR_CONFIG,
                          "GRAIN_REPLY_SLOTS (%llu) is below GRAIN_QUEUE_WIDTH (%llu), the lanes of the widest "
                          "work-group, which take their reply slots at once",
                          (unsigned long long)g->config.reply_slots, (unsigned long long)g->config.queue_width);
    /* The host's reply slots follow the kernels', and a ticket names a slot
     * in 24 bits. */
    if (g->config.reply_slots + (uint64_t)g->n_pes > GRAIN_REPLY_SLOTS_MAX)
        return grain_fail(GRAIN_ERR_CONFIG,
                          "GRAIN_REPLY_SLOTS (%llu) and one reply slot for each of the %d ranks exceed the %u slots a "
                          "reply can name",
                          (unsigned long long)g->config.reply_slots, g->n_pes, GRAIN_REPLY_SLOTS_MAX);
    /* Receives are sized by this rank's buffer_size, and heap offsets and
     * reply slots are checked against its heap_size and reply_slots: every
     * rank must agree on all three. */
    uint64_t mins[3] = {g->config.buffer_size, g->config.heap_size, g->config.reply_slots};
    uint64_t maxs[3] = {g->config.buffer_size, g->config.heap_size, g->config.reply_slots};
    grain_status_t st = grain_allreduce(g, mins, 3, GRAIN_UINT64, GRAIN_MIN);
    if (st == GRAIN_OK)
        st = grain_allreduce(g, maxs, 3, GRAIN_UINT64, GRAIN_MAX);
    if (st != GRAIN_OK)
        return st;
    if (mins[0] != maxs[0] || mins[1] != maxs[1] || mins[2] != maxs[2])
        return grain_fail(GRAIN_ERR_CONFIG,
                          "ranks disagree on GRAIN_BUFFER_SIZE (%llu..%llu), GRAIN_HEAP_SIZE (%llu..%llu) or "
                          "GRAIN_REPLY_SLOTS (%llu..%llu); give every rank the same settings",
                          (unsigned long long)mins[0], (unsigned long long)maxs[0],
                          (unsigned long long)mins[1], (unsigned long long)maxs[1],
                          (unsigned long long)mins[2], (unsigned long long)maxs[2]);
    return GRAIN_OK;
}

grain_status_t grain_dev_upload(grain_t *g)
{
    return g->bops->copy(g->backend, g->dev, &g->dev_host, sizeof g->dev_host);
}

/* The transport's receive buffers on a device with memory of its own:
 * pinned, so that chunk pieces go to the device by DMA rather
 * than through the driver's bounce buffer. */
static void *pinned_alloc(void *arg, size_t size)
{
    grain_t *g = arg;
    void *p = NULL;
    return g->bops->alloc_shared(g->backend, size, &p) == GRAIN_OK ? p : NULL;
}

static void pinned_free(void *arg, void *ptr)
{
    grain_t *g = arg;
    g->bops->free_shared(g->backend, ptr);
}

/* What kernels use beside the heap: the device context, the error record
 * and the queue. */
static grain_status_t alloc_device_state(grain_t *g)
{
    const grain_config_t *c = &g->config;
    grain_queue_geom_t geom = grain_queue_geom_of(g, (uint32_t)c->queue_slots, (uint32_t)c->queue_width,
                                                  GRAIN_MSG_ROWS);
    void *dev, *err;
    grain_status_t st = g->bops->alloc_device(g->backend, sizeof(grain_dev_t), &dev);
    if (st != GRAIN_OK)
        return st;
    g->dev = dev;
    if ((st = g->bops->alloc_shared(g->backend, sizeof(grain_dev_err_t), &err)) != GRAIN_OK)
        return st;
    g->dev_err = err;
    return grain_queue_create(g, geom, &g->queue);
}

/* Why the heap is not offered to the node's other ranks, or NULL when it
 * may be. */
static const char *no_peer_heap(const grain_t *g)
{
    if (strcmp(g->config.peer, "off") == 0)
        return "GRAIN_PEER=off";
    if (g->bops->alloc_peer == NULL)
        return "the backend cannot map memory between processes";
    if (!g->apply_on_device && !g->binfo.peer_host_access)
        return "GRAIN_APPLY=host keeps the heap in pinned host memory, which other processes cannot map";
    return NULL;
}

/* The info log's account of the direct path: which ranks this rank reaches
 * directly, and why the node's others are not. */
static void log_direct_path(grain_t *g, const char *why_not)
{
    size_t n = (size_t)g->n_pes;
    unsigned char *set = calloc(3 * n, 1);
    char direct[256], unmapped[256], other[256];
    if (set == NULL)
        return;
    for (size_t p = 0; p < n; p++) {
        set[p] = g->heap_peers.maps[p] != NULL;
        set[n + p] = grain_node_peer(g, (int)p) && g->heap_peers.maps[p] == NULL;
        set[2 * n + p] = g->node_of[p] != g->node_of[g->my_pe];
    }
    grain_rank_ranges(set, (int)n, direct, sizeof direct);
    grain_rank_ranges(set + n, (int)n, unmapped, sizeof unmapped);
    grain_rank_ranges(set + 2 * n, (int)n, other, sizeof other);
    grain_info("rank %d: direct path to ranks %s (their heaps mapped here; %s-scope heap atomics)", g->my_pe,
               direct, g->heap_scope_system ? "system" : "device");
    if (strcmp(unmapped, "none") != 0)
        grain_info("rank %d: ranks %s of this node through the transport: %s", g->my_pe, unmapped,
                   why_not != NULL && why_not[0] != '\0' ? why_not : g->heap_peers.why);
    if (strcmp(other, "none") != 0)
        grain_info("rank %d: ranks %s on other nodes through the transport", g->my_pe, other);
    free(set);
}

/*
 * GRAIN_APPLY_AGENT, once the direct path is known: auto runs the agent where
 * buffers arrive through the transport to be applied on the device; a
 * number asks for it wherever it can run.
 */
#define APPLY_AGENT_AUTO 32u

static grain_status_t resolve_apply_agent(grain_t *g)
{
    const char *v = g->config.apply_agent;
    int can = g->apply_on_device && g->bops->launch_agent != NULL;
    char *end;
    if (strcmp(v, "auto") == 0) {
        g->apply_agent_groups = can && g->heap_peers.mapped + 1 < (unsigned)g->n_pes ? APPLY_AGENT_AUTO : 0;
        return GRAIN_OK;
    }
    if (strcmp(v, "off") == 0) {
        g->apply_agent_groups = 0;
        return GRAIN_OK;
    }
    unsigned long n = strtoul(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || *end != '\0' || n > 1024)
        return grain_fail(GRAIN_ERR_CONFIG, "GRAIN_APPLY_AGENT=\"%s\": expected a number of work-groups (0 to 1024), "
                          "off or auto", v);
    if (n > 0 && !can)
        return grain_fail(GRAIN_ERR_CONFIG,
                          "GRAIN_APPLY_AGENT=\"%s\": the resident apply agent is a kernel that polls beside the "
                          "producers, so it needs received buffers applied on the device (GRAIN_APPLY=device; "
                          "here %s) and a backend that runs such a kernel (CUDA, HIP; here %s): use "
                          "GRAIN_APPLY_AGENT=off or auto",
                          v, g->apply_on_device ? "device" : "host", g->bops->name);
    g->apply_agent_groups = (unsigned)n;
    return GRAIN_OK;
}

/* The heap: peer memory that the node's other ranks can map where it may
 * be (its handle in `handle`), else what GRAIN_APPLY asks for.  *why_not
 * says why it is not peer memory ("" without node peers). */
static grain_status_t alloc_node_heap(grain_t *g, void *handle, const char **why_not, char *why, size_t why_size)
{
    size_t size = g->config.heap_size;
    void *heap = NULL;
    *why_not = g->node_size > 1 ? no_peer_heap(g) : "";
    if (*why_not == NULL) {
        grain_log_quiet(1); /* a heap that cannot be shared is a reason, not an error */
        g->heap_peer = g->bops->alloc_peer(g->backend, size, &heap, handle) == GRAIN_OK;
        snprintf(why, why_size, "%s", g->heap_peer ? "" : grain_error_message(g));
        grain_log_quiet(0);
        *why_not = g->heap_peer ? NULL : why;
    }
    grain_status_t st = GRAIN_OK;
    if (!g->heap_peer)
        st = g->apply_on_device ? g->bops->alloc_heap(g->backend, size, &heap)
                                : g->bops->alloc_shared(g->backend, size, &heap);
    if (st == GRAIN_OK)
        g->heap = heap;
    g->heap_host_access = !g->heap_peer || g->binfo.peer_host_access;
    return st;
}

/* The heaps this rank maps, as kernels get them (grain_dev_t.peers). */
/* The reply slots of gets and fetching atomics through the transport
 * (grain_dev_t): in shared memory, which the receiving host threads write
 * and the requesting lanes poll; the slot counter in device memory. */
/* The kernels' reply slots, then one a rank for the host's quiet requests
 * (grain_quiet): the host takes no slot from the kernels' counter, which
 * lives in device memory, so quiet touches no device memory. */
static grain_status_t alloc_replies(grain_t *g)
{
    size_t bytes = 2 * sizeof(uint64_t) * (g->config.reply_slots + (size_t)g->n_pes);
    void *replies = NULL, *next = NULL;
    grain_status_t st = g->bops->alloc_shared(g->backend, bytes, &replies);
    if (st == GRAIN_OK) {
        g->replies = replies;
        memset(replies, 0, bytes);
        st = g->bops->alloc_device(g->backend, sizeof(uint64_t), &next);
    }
    if (st == GRAIN_OK) {
        g->reply_next = next;
        st = g->bops->zero(g->backend, next, sizeof(uint64_t));
    }
    return st;
}

/* Replies and data that come due once the replier is gone (the apply
 * kernels that finalize waits for) have nobody to go to. */
static void send_reply(void *arg, uint32_t dest, uint64_t ticket, uint64_t value)
{
    grain_t *g = arg;
    if (g->replier != NULL)
        grain_replier_add(g->replier, dest, ticket, value);
}

static void send_put(void *arg, uint32_t dest, uint32_t cmd, uint64_t offset, uint64_t value)
{
    grain_t *g = arg;
    if (g->replier != NULL)
        grain_replier_put(g->replier, dest, cmd, offset, value);
}

/* The ledger's answer: into this rank's own slot (its own work-groups' and
 * host's requests, and replies after), else back to the asking rank. */
static void send_answer(void *arg, uint32_t dest, uint64_t ticket)
{
    grain_t *g = arg;
    if (dest != (uint32_t)g->my_pe) {
        if (g->replier != NULL)
            grain_replier_answer(g->replier, dest, ticket);
    } else if (!grain_wire_fill_reply(&g->reply_sink, ticket, 0)) {
        grain_async_error(g, GRAIN_ERR_BAD_MESSAGE, "the answer to a quiet request found its reply slot waiting "
                                                    "for no answer");
    }
}

static void quiet_request(void *arg, uint32_t src, uint64_t ticket)
{
    grain_t *g = arg;
    grain_status_t st = grain_quiets_request(g->quiets, src, ticket);
    if (st != GRAIN_OK)
        grain_async_error(g, st, grain_error_message(g));
}

/* What host threads apply other ranks' fetches, their replies and quiet
 * requests with. */
static grain_status_t start_replies(grain_t *g)
{
    g->reply_sink = (grain_wire_replies_t){.slots = g->replies,
                                           .self = (uint32_t)g->my_pe,
                                           .send = send_reply,
                                           .put = send_put,
                                           .quiet = quiet_request,
                                           .answer = send_answer,
                                           .arg = g};
    struct grain_replier *r = NULL;
    grain_status_t st = g->n_pes > 1 ? grain_replier_create(g, &r) : GRAIN_OK;
    atomic_store_explicit(&g->replier, r, memory_order_release);
    return st == GRAIN_OK ? grain_quiets_create(&g->reply_sink, &g->quiets) : st;
}

static grain_status_t upload_peers(grain_t *g)
{
    size_t n = (size_t)g->n_pes;
    grain_peer_t *table = calloc(n, sizeof *table);
    void *peers = NULL;
    if (table == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for %zu ranks' heaps", n);
    for (size_t p = 0; p < n; p++)
        table[p].heap = g->heap_peers.maps[p];
    grain_status_t st = g->bops->alloc_device(g->backend, n * sizeof *table, &peers);
    if (st == GRAIN_OK) {
        g->peers_dev = peers;
        st = g->bops->copy(g->backend, peers, table, n * sizeof *table);
    }
    free(table);
    return st;
}

/* A heap the node cannot hold would page (managed memory spills from the
 * device to the host) for minutes before failing, or never fail: refused,
 * on every rank when one refuses.  Each rank of the node has a heap, and
 * may have a device of its own. */
static grain_status_t check_heap_fits(grain_t *g)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
    uint64_t per_rank = ram / (g->node_size ? g->node_size : 1) + g->binfo.device_memory;
    int fits_here = ram == UINT64_MAX || g->config.heap_size <= per_rank;
    int64_t fits = fits_here;
    grain_status_t st = g->n_pes > 1 ? grain_allreduce(g, &fits, 1, GRAIN_INT64, GRAIN_MIN) : GRAIN_OK;
    if (st != GRAIN_OK || fits)
        return st;
    if (!fits_here)
        return grain_fail(GRAIN_ERR_CONFIG,
                          "GRAIN_HEAP_SIZE=%llu bytes is more than this node holds for a rank: %llu bytes of RAM "
                          "shared by its %u ranks, and %llu bytes on the device",
                          (unsigned long long)g->config.heap_size, (unsigned long long)ram, g->node_size,
                          (unsigned long long)g->binfo.device_memory);
    return grain_fail(GRAIN_ERR_CONFIG, "GRAIN_HEAP_SIZE=%llu bytes is more than another rank's node holds",
                      (unsigned long long)g->config.heap_size);
}

/*
 * Collective: the heap, where the node's other ranks can map it (the
 * direct path), and their heaps mapped here; then the device context that
 * points at them, and the apply engine, whose kernels' atomics take the
 * scope the mappings need.
 */
static grain_status_t place_heap(grain_t *g)
{
    const grain_config_t *c = &g->config;
    size_t n = (size_t)g->n_pes;
    unsigned char handle[GRAIN_PEER_HANDLE_BYTES] = {0};
    char why[256];
    const char *why_not;
    grain_status_t st = grain_node_discover(g);
    if (st == GRAIN_OK)
        st = check_heap_fits(g);
    if (st == GRAIN_OK)
        st = alloc_node_heap(g, handle, &why_not, why, sizeof why);
    if (st != GRAIN_OK)
        return st;
    /* Host handlers are registered on every rank or on none: one rank's
     * heap out of the host's reach rules them out everywhere. */
    int64_t host_access = g->heap_host_access;
    if (n > 1 && (st = grain_allreduce(g, &host_access, 1, GRAIN_INT64, GRAIN_MIN)) != GRAIN_OK)
        return st;
    g->host_handlers = host_access != 0;
    if ((g->heap_peers.maps = calloc(n, sizeof *g->heap_peers.maps)) == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for %zu ranks' heaps", n);
    /* Every rank takes part whatever it offers: the exchange is collective. */
    if (n > 1 && (st = grain_peer_map_all(g, g->heap_peer ? handle : NULL, g->heap_peer ? g->heap : NULL,
                                          &g->heap_peers)) != GRAIN_OK)
        return st;
    g->heap_scope_system = g->heap_peers.any_remote;
    if ((st = upload_peers(g)) != GRAIN_OK || (st = alloc_replies(g)) != GRAIN_OK ||
        (st = start_replies(g)) != GRAIN_OK)
        return st;
    if (n > 1)
        log_direct_path(g, why_not);
    g->dev_host = (grain_dev_t){
        .heap = g->heap,
        .heap_size = c->heap_size,
        .queue = g->queue.desc,
        .err = g->dev_err,
        .peers = g->peers_dev,
        .replies = g->replies,
        .reply_next = g->reply_next,
        .reply_slots = (grain_u32)g->config.reply_slots,
        .my_pe = (grain_u32)g->my_pe,
        .n_pes = (grain_u32)g->n_pes,
    };
    if ((st = grain_dev_upload(g)) != GRAIN_OK || (st = resolve_apply_agent(g)) != GRAIN_OK)
        return st;
    if (g->apply_agent_groups > 0)
        grain_info("rank %d: a resident apply agent of %u work-groups applies received buffers beside the "
                   "producers", g->my_pe, g->apply_agent_groups);
    if (g->apply_on_device) {
        struct grain_applier *applier;
        if ((st = grain_applier_create(g, g->apply_stages, &applier)) != GRAIN_OK)
            return st;
        atomic_store_explicit(&g->applier, applier, memory_order_release);
    }
    return grain_heap_init(&g->heap_alloc, c->heap_size);
}

static void release(grain_t *g)
{
    if (g->aggs != NULL)
        grain_aggregators_stop(g);
    if (g->transport != NULL)
        g->tops->close(g->transport);
    grain_receivers_stop(g->receivers); /* the transport waited for their jobs */
    grain_replier_destroy(g->replier);  /* and returned its buffers */
    g->replier = NULL;
    if (g->backend != NULL) {
        if (g->applier != NULL) {
            grain_applier_wait(g->applier);
            grain_applier_destroy(g->applier);
        }
        grain_blas_release(g);
        grain_kernel_destroy(g->agent_kernel); /* the device transfer agent's, if a region built it */
        grain_program_destroy(g->agent_program);
        grain_peer_unmap_all(g, &g->heap_peers);
        if (g->peers_dev != NULL)
            g->bops->free_device(g->backend, g->peers_dev);
        if (g->reply_next != NULL)
            g->bops->free_device(g->backend, g->reply_next);
        if (g->replies != NULL)
            g->bops->free_shared(g->backend, g->replies);
        if (g->heap != NULL && g->heap_peer)
            g->bops->free_peer(g->backend, g->heap);
        else if (g->heap != NULL && g->apply_on_device)
            g->bops->free_heap(g->backend, g->heap);
        else if (g->heap != NULL)
            g->bops->free_shared(g->backend, g->heap);
        grain_queue_destroy(g, &g->queue);
        if (g->dev_err != NULL)
            g->bops->free_shared(g->backend, g->dev_err);
        if (g->dev != NULL)
            g->bops->free_device(g->backend, g->dev);
        g->bops->close(g->backend);
    }
    grain_quiets_destroy(g->quiets); /* after the stages, which answer its requests */
    grain_heap_destroy(&g->heap_alloc);
    free(g->heap_peers.maps);
    free(g->node_of);
    free((void *)g->applied_from);
    free(g->recv_buffers_from);
    free((void *)g->rejected_from);
    free((void *)g->next_seq);
    for (int p = 0; g->send_order != NULL && p < g->n_pes; p++)
        pthread_mutex_destroy(&g->send_order[p]);
    free(g->send_order);
    free((void *)g->pieces_to);
    free((void *)g->pieces_from);
    free(g->recv_marks);
    pthread_mutex_destroy(&g->heap_lock);
    pthread_mutex_destroy(&g->error_lock);
    free(g);
}

grain_status_t grain_init(const grain_config_t *config, grain_t **grain_p)
{
    return grain_init_attr(config, NULL, grain_p);
}

grain_status_t grain_init_attr(const grain_config_t *config, const grain_init_attr_t *attr, grain_t **grain_p)
{
    if (attr == NULL)
        return grain_init_transport(config, NULL, NULL, grain_p);
    /* A caller built against older headers passes a shorter struct: the
     * fields past its size are absent, not garbage. */
    if (attr->size < offsetof(grain_init_attr_t, mpi_comm) + sizeof attr->mpi_comm)
        return grain_fail(GRAIN_ERR_INVALID, "grain_init_attr: attr->size is %zu; set it to "
                                             "sizeof(grain_init_attr_t)", attr->size);
    return grain_init_transport(config, attr->mpi_comm, NULL, grain_p);
}

/* Past a few hundred, more posted receives cost memory and buy little: not
 * every peer sends at once. */
#define RECV_BUFFERS_AUTO_MAX 256u

/* The host threads of GRAIN_AGGREGATORS=0 and GRAIN_RECV_THREADS=0: on a
 * CPU device one of each (the network thread receives), since the device's
 * workers take the other cores; on a GPU, services/cores.c's split. */
static unsigned auto_aggregators(const grain_t *g, unsigned net, int written)
{
    return g->binfo.cpu_device ? 1 : grain_cores_aggregators(grain_rank_cores().mine - 1 - (long)net, written);
}

static unsigned auto_recv_threads(const grain_t *g, unsigned host_threads)
{
    return g->binfo.cpu_device ? 1 : grain_cores_receivers(grain_rank_cores().mine - 1 - (long)host_threads);
}

grain_status_t grain_init_transport(const grain_config_t *config, const void *mpi_comm,
                                    const grain_transport_ops_t *tops, grain_t **grain_p)
{
    if (grain_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_init needs somewhere to store the handle");
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    grain_t *g = calloc(1, sizeof *g);
    if (g == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for grain");
    pthread_mutex_init(&g->heap_lock, NULL);
    pthread_mutex_init(&g->error_lock, NULL);
    grain_status_t st = config ? (g->config = *config, GRAIN_OK) : grain_config_init_env(&g->config);
    if (st == GRAIN_OK)
        st = grain_config_check(&g->config);
    if (st != GRAIN_OK)
        goto err;
    grain_log_configure((grain_log_level_t)grain_log_level_parse(g->config.log_level), -1);

    g->tops = tops;
    if (tops == NULL)
        st = grain_transport_open(g->config.transport, &g->config, mpi_comm, &g->tops, &g->transport, &g->my_pe,
                                  &g->n_pes);
    else
        st = g->tops->open(&g->transport, &g->config, mpi_comm, &g->my_pe, &g->n_pes);
    if (st != GRAIN_OK)
        goto err;
    grain_log_configure((grain_log_level_t)grain_log_level_parse(g->config.log_level), g->my_pe);
    if (g->my_pe == 0) /* every rank has the same environment, as a rule */
        grain_config_warn_unknown_env();

    /* A CPU device's workers take the cores these threads leave; on such a
     * device the automatic counts are 1 (GPU backends ignore the count). */
    unsigned net = g->tops->uses_thread ? 1u : 0u, recv = (unsigned)g->config.recv_threads;
    unsigned aggs = (unsigned)g->config.aggregators, beside_aggs = net + (recv > 1 ? recv : 0);
    st = grain_backend_open(&g->config, (aggs > 0 ? aggs : 1u) + beside_aggs, &g->bops, &g->backend);
    if (st != GRAIN_OK)
        goto err;
    g->bops->query(g->backend, &g->binfo);
    /* Idle threads nap longer where they take the kernels' cores (backoff.h). */
    if (g->binfo.cpu_device)
        atomic_store(&grain_backoff_nap_max_ns, GRAIN_BACKOFF_CPU_NAP_MAX_NS);
    if (aggs == 0) {
        int written = g->tops->receives_written != NULL && g->tops->receives_written(g->transport);
        g->config.aggregators = auto_aggregators(g, net, written);
        grain_info("%u aggregator thread%s (GRAIN_AGGREGATORS=0: %s)", (unsigned)g->config.aggregators,
                   g->config.aggregators == 1 ? "" : "s",
                   g->binfo.cpu_device ? "a CPU device's workers take the spare cores"
                   : written           ? "this rank's spare cores; its peers write buffers into its memory"
                                       : "this rank's spare cores; buffers are copied in on arrival");
    }
    /* Reader i of n owns rings i, i + n, ... (queue_consumer.h): an
     * aggregator past the last ring would never find a slot, only nap, and
     * such naps took the cores a CPU device's workers need (shmem_all on
     * two PoCL ranks sharing 2 cores, one ring each: 64 aggregators took
     * 2.7-5.1 s and 437k context switches, one took 0.9 s). */
    unsigned rings = grain_queue_rings_of(g);
    if (grain_config_queue_protocol(&g->config) == GRAIN_QUEUE_RING && g->config.aggregators > rings) {
        grain_log(aggs > 0 ? GRAIN_LOG_WARN : GRAIN_LOG_INFO,
                  "%u aggregator thread%s, not %u: the ring queue has %u ring%s (%s), each read by one aggregator",
                  rings, rings == 1 ? "" : "s", (unsigned)g->config.aggregators, rings, rings == 1 ? "" : "s",
                  g->config.queue_rings ? "GRAIN_QUEUE_RINGS" : "one per compute unit");
        g->config.aggregators = rings;
    }
    g->recv_threads = recv > 0 ? recv : auto_recv_threads(g, (unsigned)g->config.aggregators + beside_aggs);
    grain_info("%u receive thread%s%s", g->recv_threads, g->recv_threads == 1 ? " (the network thread)" : "s",
               recv > 0               ? ""
               : g->binfo.cpu_device ? " (GRAIN_RECV_THREADS=0 on a CPU device, whose workers take the spare cores)"
                                       : " (GRAIN_RECV_THREADS=0: this rank's spare cores)");
    /* A lane of GRAIN_RESERVE=wi may wait for a slot while lanes of its own
     * warp hold unpublished ones (grain/device/queue.h): in lockstep they
     * never publish. */
    if (strcmp(g->config.reserve, "wi") == 0 && !g->binfo.independent_lanes) {
        st = grain_fail(GRAIN_ERR_INVALID,
                        "GRAIN_RESERVE=wi needs lanes that progress independently, and the lanes of a warp of "
                        "%s (%s) run in lockstep: a lane waiting for a queue slot would hold back the lanes that "
                        "free it; use GRAIN_RESERVE=wg or sg",
                        g->binfo.device_name, g->bops->name);
        goto err;
    }
    g->apply_on_device = strcmp(g->config.apply, "device") == 0 ||
                         (strcmp(g->config.apply, "auto") == 0 && g->binfo.prefers_device_apply);

    g->applied_from = calloc((size_t)g->n_pes, sizeof *g->applied_from);
    g->recv_buffers_from = calloc((size_t)g->n_pes, sizeof *g->recv_buffers_from);
    g->rejected_from = calloc(2 * (size_t)g->n_pes, sizeof *g->rejected_from);
    g->next_seq = calloc((size_t)g->n_pes, sizeof *g->next_seq);
    g->pieces_to = calloc((size_t)g->n_pes, sizeof *g->pieces_to);
    g->pieces_from = calloc((size_t)g->n_pes, sizeof *g->pieces_from);
    g->recv_marks = malloc(grain_receive_marks_bytes(g));
    int order = !g->tops->restores_order;
    if (order && (g->send_order = calloc((size_t)g->n_pes, sizeof *g->send_order)) != NULL)
        for (int p = 0; p < g->n_pes; p++)
            pthread_mutex_init(&g->send_order[p], NULL);
    if ((order && g->send_order == NULL) || g->applied_from == NULL || g->recv_buffers_from == NULL ||
        g->rejected_from == NULL || g->next_seq == NULL ||
        g->pieces_to == NULL || g->pieces_from == NULL || g->recv_marks == NULL) {
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for per-rank counters");
        goto err;
    }
    unsigned recv_buffers = (unsigned)g->config.recv_buffers;
    if (recv_buffers == 0) {
        /* A receive for every buffer the peers' aggregators may have in
         * flight to this rank (each has its own, GRAIN_BUFFERS_PER_DEST a
         * destination; a verbs ring holds one peer's), and one for each
         * buffer a receive thread holds: a lent buffer is reposted only
         * once it is returned.  A sender whose buffer finds no receive
         * posted waits for one (MPI's rendezvous), and so do its
         * aggregators for their buffers.  With the 4 receives of
         * buffers_per_dest x peers, 4 aggregators and 4 receive threads,
         * two GUPS ranks on two H100s applied 1.2 GB/s a rank; with 16
         * and 48, 1.7-2.1. */
        uint64_t n = g->config.buffers_per_dest * g->config.aggregators *
                         (g->tops->receives_per_peer ? 1u : (uint64_t)(g->n_pes - 1)) +
                     (g->recv_threads > 1 ? g->recv_threads : 0);
        recv_buffers = n < 4 ? 4 : n > RECV_BUFFERS_AUTO_MAX ? RECV_BUFFERS_AUTO_MAX : (unsigned)n;
    }
    /* Twice what the network may hand over at once: the stages of the
     * buffers just received while the previous ones' kernels still run.
     * Each stage is a buffer's worth of pinned memory and a launch: on a
     * CPU device, past a few hundred, more of them cost memory and
     * start-up time and buy nothing (a buffer that finds none free waits
     * in host memory for one), and thousands of receives would take
     * gigabytes.  A GPU's backlog takes more (below). */
    g->apply_stages = 2 * recv_buffers < GRAIN_APPLY_STAGES_MAX ? 2 * recv_buffers : GRAIN_APPLY_STAGES_MAX;
    uint64_t floor = GRAIN_APPLY_STAGES_BYTES / g->config.buffer_size;
    floor = floor < GRAIN_APPLY_STAGES_MIN ? floor : GRAIN_APPLY_STAGES_MIN;
    g->apply_stages = g->apply_stages < floor ? (unsigned)floor : g->apply_stages;
    /* Where the producers fill a GPU, its apply agent falls behind the
     * buffers that arrive, and a buffer that finds no stage free waits in
     * host memory, to be copied again into a stage after the producers
     * (docs/receive-path.md, "What limits it now").  The host memory such
     * a backlog takes is then better spent on pinned stages, which leave
     * out the second copy: with 4096 of 64 KiB, two GUPS ranks through MPI
     * on two H200s kept 0-39 M of 268 M messages rather than 255-262 M and
     * took 15% less time (medians of 6 runs), four ranks 21% less; pagerank
     * kept none rather than 6-77 M and took 2-4% more.  A CPU device has no
     * such backlog, and keeps the few. */
    if (!g->binfo.cpu_device) {
        uint64_t gpu = GRAIN_APPLY_STAGES_GPU_BYTES / g->config.buffer_size;
        gpu = gpu < GRAIN_APPLY_STAGES_GPU_MAX ? gpu : GRAIN_APPLY_STAGES_GPU_MAX;
        g->apply_stages = g->apply_stages > gpu ? g->apply_stages : (unsigned)gpu;
    }
    if (g->config.apply_stages > 0)
        g->apply_stages = g->config.apply_stages;
    st = alloc_device_state(g);
    if (st != GRAIN_OK)
        goto err;
    grain_transport_handlers_t handlers = {.received = grain_transport_received,
                                           .rejected = grain_transport_rejected,
                                           .failed = grain_transport_failed,
                                           .settle = grain_transport_settle,
                                           .sent = grain_transport_sent,
                                           .arg = g,
                                           .alloc_recv = g->binfo.cpu_device ? NULL : pinned_alloc,
                                           .free_recv = g->binfo.cpu_device ? NULL : pinned_free};
    if (g->recv_threads > 1)
        st = grain_receivers_start(g, g->recv_threads, &g->receivers);
    if (st == GRAIN_OK)
        st = g->tops->start(g->transport, &handlers, g->config.buffer_size, recv_buffers);
    if (st == GRAIN_OK)
        st = check_symmetric_config(g);
    if (st == GRAIN_OK)
        st = place_heap(g);
    if (st == GRAIN_OK && g->n_pes > 1 && g->tops->register_heap != NULL)
        st = g->tops->register_heap(g->transport, g->heap, g->config.heap_size, &g->heap_puts);
    if (st == GRAIN_OK)
        st = grain_aggregators_start(g);
    /* No rank sends before every rank has a heap and an apply engine to
     * take what arrives. */
    if (st == GRAIN_OK)
        st = grain_ranks_barrier(g);
    if (st != GRAIN_OK)
        goto err;

    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    g->init_seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    grain_info("rank %d of %d: backend %s (%s), transport %s", g->my_pe, g->n_pes, g->bops->name,
               g->binfo.device_name, g->tops->name);
    *grain_p = g;
    return GRAIN_OK;

err:
    release(g);
    return st;
}

grain_status_t grain_finalize(grain_t *g)
{
    if (g == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_finalize of a NULL handle");
    grain_status_t st = grain_barrier_all(g);
    if (g->config.stats)
        grain_stats_print(g, stderr);
    /* No rank frees its heap while another still has it mapped. */
    grain_peer_unmap_all(g, &g->heap_peers);
    grain_status_t bst = grain_ranks_barrier(g);
    st = st != GRAIN_OK ? st : bst;
    release(g);
    return st;
}

int grain_my_pe(const grain_t *g) { return g->my_pe; }
int grain_n_pes(const grain_t *g) { return g->n_pes; }
const char *grain_backend_name(const grain_t *g) { return g->bops->name; }
const char *grain_transport_name(const grain_t *g) { return g->tops->name; }
const char *grain_device_name(const grain_t *g) { return g->binfo.device_name; }
uint64_t grain_device_memory(const grain_t *g) { return g->binfo.device_memory; }

grain_status_t grain_same_everywhere(grain_t *g, uint64_t value, uint64_t *other_p)
{
    uint64_t range[2] = {value, ~value}; /* the largest, and the smallest */
    grain_status_t st = grain_allreduce(g, range, 2, GRAIN_UINT64, GRAIN_MAX);
    *other_p = range[0] != value ? range[0] : ~range[1];
    return st;
}

grain_status_t grain_malloc(grain_t *g, size_t size, void **ptr_p)
{
    if (g == NULL || ptr_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_malloc needs a handle and somewhere to store the pointer");
    /* Symmetric means every rank asks for the same size, in the same order. */
    uint64_t other;
    grain_status_t st = grain_same_everywhere(g, size, &other);
    if (st != GRAIN_OK)
        return st;
    if (other != size)
        return grain_fail(GRAIN_ERR_INVALID,
                          "grain_malloc is collective: rank %d asked for %zu bytes, another rank for "
                          "%llu",
                          g->my_pe, size, (unsigned long long)other);
    uint64_t offset;
    pthread_mutex_lock(&g->heap_lock);
    st = grain_heap_alloc(&g->heap_alloc, size, &offset);
    pthread_mutex_unlock(&g->heap_lock);
    if (st != GRAIN_OK)
        return st;
    if ((st = g->bops->zero(g->backend, g->heap + offset, size)) != GRAIN_OK) {
        pthread_mutex_lock(&g->heap_lock);
        grain_heap_free(&g->heap_alloc, offset);
        pthread_mutex_unlock(&g->heap_lock);
        return st;
    }
    *ptr_p = g->heap + offset;
    return GRAIN_OK;
}

grain_status_t grain_free(grain_t *g, void *ptr)
{
    if (g == NULL || (char *)ptr < g->heap || (char *)ptr >= g->heap + g->config.heap_size)
        return grain_fail(GRAIN_ERR_INVALID, "grain_free of %p, which is not in the symmetric heap", ptr);
    pthread_mutex_lock(&g->heap_lock);
    grain_status_t st = grain_heap_free(&g->heap_alloc, (uint64_t)((char *)ptr - g->heap));
    pthread_mutex_unlock(&g->heap_lock);
    return st;
}

grain_status_t grain_heap_available(grain_t *g, uint64_t *bytes_p)
{
    if (g == NULL || bytes_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_heap_available needs a handle and somewhere to store the size");
    pthread_mutex_lock(&g->heap_lock);
    *bytes_p = grain_heap_largest_free(&g->heap_alloc);
    pthread_mutex_unlock(&g->heap_lock);
    return GRAIN_OK;
}

grain_status_t grain_heap_offset(grain_t *g, const void *ptr, uint64_t *offset_p)
{
    if (g == NULL || offset_p == NULL || (const char *)ptr < g->heap ||
        (const char *)ptr >= g->heap + g->config.heap_size)
        return grain_fail(GRAIN_ERR_INVALID, "grain_heap_offset of %p, which is not in the symmetric heap", ptr);
    *offset_p = (uint64_t)((const char *)ptr - g->heap);
    return GRAIN_OK;
}

grain_status_t grain_mem_alloc(grain_t *g, size_t size, void **ptr_p)
{
    if (g == NULL || ptr_p == NULL || size == 0)
        return grain_fail(GRAIN_ERR_INVALID, "grain_mem_alloc needs a handle, a size and an output pointer");
    return g->bops->alloc_shared(g->backend, size, ptr_p);
}

grain_status_t grain_mem_free(grain_t *g, void *ptr)
{
    if (g == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_mem_free of a NULL handle");
    if (ptr != NULL)
        g->bops->free_shared(g->backend, ptr);
    return GRAIN_OK;
}

grain_status_t grain_memcpy(grain_t *g, void *dst, const void *src, size_t size)
{
    if (g == NULL || (size > 0 && (dst == NULL || src == NULL)))
        return grain_fail(GRAIN_ERR_INVALID, "grain_memcpy needs a handle and two pointers");
    return g->bops->copy(g->backend, dst, src, size);
}
