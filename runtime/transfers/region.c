/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Regions of counter-triggered transfers: creation (the chunk plan, where
 * the region lives, what kernels are given), the iteration protocol and the
 * statistics.  The agents are in region_host_agent.c (host threads),
 * grain/device/runtime_kernels.h (the device agent's kernel) and
 * grain/device/chunks.h (inline stores); the transfers in region_move.c.
 *
 * A region lives in peer memory when every rank shares one node and the
 * backend can map each rank's copy into the others' (CUDA/HIP IPC, shared
 * memory on a CPU OpenCL device; runtime/node.c): copies then go device to
 * device and kernels may store to peers.  Otherwise it moves through the
 * transport: from the symmetric heap where the transport writes into the
 * peers' heaps (RDMA puts), else from device memory, in pieces.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/node.h"
#include "runtime/transfers/region.h"
#include "services/backoff.h"
#include "services/log.h"

extern const char grain_apply_kernel_source[];

#define AGENT_WG 256u

/* Collective: every rank learns whether some rank failed; a rank that did
 * not fail itself says which rank's error stopped it. */
static grain_status_t agree(grain_t *g, grain_status_t st)
{
    /* The worst status, and the lowest rank that failed. */
    int64_t v[2] = {st, st != GRAIN_OK ? g->my_pe : INT64_MAX};
    grain_status_t cst = grain_allreduce(g, v, 2, GRAIN_INT64, GRAIN_MIN);
    if (cst != GRAIN_OK)
        return cst;
    if (st == GRAIN_OK && v[0] != GRAIN_OK)
        return grain_fail((grain_status_t)v[0], "region: rank %lld failed (%s), so every rank does", (long long)v[1],
                          grain_strerror((grain_status_t)v[0]));
    return st;
}

static void unmap_peers(grain_region_t *r)
{
    grain_peer_maps_t m = {.maps = r->peer_maps};
    grain_peer_unmap_all(r->grain, &m);
    r->mapped_peers = 0;
}

/* Collective: peer memory mapped by every rank, or (when any rank cannot
 * have it) nothing, with the reason logged. */
static grain_status_t place_in_peer_memory(grain_region_t *r, int *placed_p)
{
    grain_t *g = r->grain;
    unsigned char handle[GRAIN_PEER_HANDLE_BYTES] = {0};
    void *data = NULL;
    grain_log_quiet(1);
    grain_status_t local = g->bops->alloc_peer(g->backend, r->size, &data, handle);
    grain_log_quiet(0);
    char why[256];
    snprintf(why, sizeof why, "%s", local != GRAIN_OK ? grain_error_message(g) : "");
    grain_peer_maps_t m = {.maps = r->peer_maps};
    grain_status_t st = grain_peer_map_all(g, local == GRAIN_OK ? handle : NULL, data, &m);
    if (st != GRAIN_OK || !m.all_mapped) {
        grain_peer_unmap_all(g, &m);
        /* Nobody may still hold this copy mapped when it is freed. */
        grain_status_t bst = grain_ranks_barrier(g);
        if (data != NULL)
            g->bops->free_peer(g->backend, data);
        if (st == GRAIN_OK)
            grain_info("region %u: no peer memory on rank %d (%s); chunks move through the transport", r->id,
                       g->my_pe, why[0] ? why : m.why[0] ? m.why : "another rank could not map every copy");
        *placed_p = 0;
        return st != GRAIN_OK ? st : bst;
    }
    r->mapped_peers = m.mapped;
    r->data = data;
    r->peer_maps[g->my_pe] = data;
    *placed_p = 1;
    return GRAIN_OK;
}

static grain_status_t place(grain_region_t *r)
{
    grain_t *g = r->grain;
    int placed = 0;
    grain_status_t st = GRAIN_OK;
    /* The node map is the same on every rank, so all or none take part. */
    if (g->n_pes > 1 && g->bops->alloc_peer != NULL && g->config.peer_memory && strcmp(g->config.peer, "off") != 0 &&
        g->node_size == (unsigned)g->n_pes)
        st = place_in_peer_memory(r, &placed);
    if (st != GRAIN_OK)
        return st;
    if (placed) {
        r->placement = PLACE_PEER;
        return GRAIN_OK;
    }
    /* Pieces need no heap address, and on GPUs that apply messages on the
     * device the heap is managed memory: there the host agent took 0.117-0.121
     * s for pagerank through MPI on two H200s, in device memory 0.098-0.110. */
    void *data;
    r->placement = g->heap_puts ? PLACE_HEAP : PLACE_DEVICE;
    st = r->placement == PLACE_HEAP ? grain_malloc(g, r->size, &data)
                                    : g->bops->alloc_device(g->backend, r->size ? r->size : 8, &data);
    if (st == GRAIN_OK)
        r->data = data;
    return st;
}

/* Whether segment s goes to rank pe (not the host copy, never this rank). */
static int goes_to(const grain_region_t *r, unsigned s, int pe)
{
    int dest = r->plan.segments[s].dest;
    return pe != r->grain->my_pe && (dest == GRAIN_DEST_PEERS || dest == pe);
}

/*
 * The launch agent where kernels launch kernels, with room for every chunk's
 * launch at once; else the device agent, its nearest kin, where the backend
 * polls from the device (HIP); else a refusal saying why.
 */
static grain_status_t settle_launch(grain_region_t *r)
{
    grain_t *g = r->grain;
    const char *why = g->binfo.no_device_launch;
    if (r->agent != GRAIN_AGENT_LAUNCH)
        return GRAIN_OK;
    if (why[0] == '\0')
        return g->bops->reserve_launches(g->backend, r->plan.n_chunks);
    if (g->bops->launch_agent == NULL)
        return grain_fail(GRAIN_ERR_UNSUPPORTED,
                          "region: the launch agent needs kernels that launch kernels (CUDA's dynamic "
                          "parallelism, OpenCL's device-side enqueue), and %s: use the host agent",
                          why);
    if (g->my_pe == 0)
        grain_warn("region: %s, so the launch agent falls back to the device agent (a polling kernel)", why);
    r->agent = GRAIN_AGENT_DEVICE;
    return GRAIN_OK;
}

/* Whether the agent reaches every destination of this rank's segments. */
static grain_status_t check_reach(const grain_region_t *r)
{
    grain_t *g = r->grain;
    if (r->agent == GRAIN_AGENT_DEVICE && g->bops->launch_agent == NULL)
        return grain_fail(GRAIN_ERR_UNSUPPORTED,
                          "region: the device agent needs a backend that runs a polling kernel beside the "
                          "producer (CUDA, HIP); %s has none: use the host agent",
                          g->bops->name);
    if (r->agent != GRAIN_AGENT_DEVICE && r->agent != GRAIN_AGENT_LAUNCH)
        return GRAIN_OK;
    for (unsigned s = 0; s < r->plan.n_segments; s++) {
        for (int pe = 0; pe < g->n_pes; pe++) {
            if (!goes_to(r, s, pe) || r->peer_maps[pe] != NULL)
                continue;
            return grain_fail(GRAIN_ERR_UNSUPPORTED,
                              "region: the %s agent stores chunks into their destination, but rank %d "
                              "cannot map rank %d's copy (ranks on several nodes, or no peer access "
                              "between their devices): use the host agent",
                              grain_agent_name(r->agent), g->my_pe, pe);
        }
    }
    return GRAIN_OK;
}

/* Device memory holding `bytes` of host memory. */
static grain_status_t upload(grain_t *g, void **dst_p, const void *src, size_t bytes)
{
    grain_status_t st = g->bops->alloc_device(g->backend, bytes ? bytes : 8, dst_p);
    if (st == GRAIN_OK && bytes > 0)
        st = g->bops->copy(g->backend, *dst_p, src, bytes);
    return st;
}

static int needs_pieces(const grain_region_t *r)
{
    for (unsigned s = 0; s < r->plan.n_segments; s++)
        for (int pe = 0; pe < r->grain->n_pes; pe++)
            if (goes_to(r, s, pe) && r->peer_maps[pe] == NULL)
                return 1;
    return 0;
}

/* Whether host threads move chunks as they complete: the host agent's
 * every chunk, and the inline agent's where its stores cannot reach some
 * destination (a rank on another node). */
static int host_moves(const grain_region_t *r)
{
    return r->agent == GRAIN_AGENT_HOST || (r->agent == GRAIN_AGENT_INLINE && needs_pieces(r));
}

/* [first, end) of the work-groups that write some chunk. */
static void counting_groups(const grain_chunk_plan_t *p, grain_u64 range[2])
{
    range[0] = range[1] = 0;
    for (uint64_t g = 0; g < p->n_groups; g++) {
        if (p->group_first[g] == p->group_first[g + 1])
            continue;
        if (range[1] == 0)
            range[0] = g;
        range[1] = g + 1;
    }
}

static int has_host_dest(const grain_region_t *r)
{
    for (unsigned s = 0; s < r->plan.n_segments; s++)
        if (r->plan.segments[s].dest == GRAIN_DEST_HOST)
            return 1;
    return 0;
}

static grain_status_t agent_kernel(grain_t *g)
{
    if (g->agent_kernel != NULL)
        return GRAIN_OK;
    grain_status_t st = grain_program_create(g, grain_apply_kernel_source, NULL, &g->agent_program);
    if (st == GRAIN_OK && (st = grain_kernel_create(g->agent_program, "grain_chunk_agent", &g->agent_kernel)) != GRAIN_OK) {
        grain_program_destroy(g->agent_program);
        g->agent_program = NULL;
    }
    return st;
}

/* What only this rank allocates: the plan and ready words, the host copy,
 * the transfer buffers, the agent. */
static grain_status_t build_local(grain_region_t *r)
{
    grain_t *g = r->grain;
    const grain_chunk_plan_t *p = &r->plan;
    size_t ready_bytes = ((size_t)p->n_chunks + 1) * sizeof(uint32_t); /* never an empty allocation */
    int counting = host_moves(r) || r->agent == GRAIN_AGENT_DEVICE || r->agent == GRAIN_AGENT_LAUNCH;
    for (int pe = 0; pe < g->n_pes; pe++)
        if (pe != g->my_pe && r->peer_maps[pe] == NULL)
            r->unmapped[r->n_unmapped++] = pe;
    grain_status_t st = settle_launch(r);
    if (st == GRAIN_OK)
        st = check_reach(r);
    if (st == GRAIN_OK && has_host_dest(r))
        st = g->bops->alloc_shared(g->backend, r->size, &r->host_copy);
    if (st == GRAIN_OK)
        st = upload(g, &r->counters, p->expected, p->n_chunks * sizeof *p->expected);
    if (st == GRAIN_OK)
        st = upload(g, &r->expected, p->expected, p->n_chunks * sizeof *p->expected);
    if (st == GRAIN_OK)
        st = upload(g, &r->group_first, p->group_first, (p->n_groups + 1) * sizeof *p->group_first);
    if (st == GRAIN_OK)
        st = upload(g, &r->group_chunks, p->group_chunks, p->group_first[p->n_groups] * sizeof *p->group_chunks);
    if (st == GRAIN_OK)
        st = g->bops->alloc_device(g->backend, ready_bytes, &r->ready);
    if (st == GRAIN_OK)
        st = g->bops->alloc_shared(g->backend, ready_bytes, &r->ready_host);
    if (st == GRAIN_OK)
        st = g->bops->alloc_shared(g->backend, sizeof(uint32_t), &r->refused);
    if (st == GRAIN_OK)
        st = upload(g, &r->abort, &(uint32_t){0}, sizeof(uint32_t));
    if (st == GRAIN_OK)
        st = g->bops->alloc_device(g->backend, (p->n_chunks + 1) * sizeof(uint32_t), &r->moved);
    uint64_t *addr = calloc((size_t)g->n_pes, sizeof *addr);
    if (st == GRAIN_OK && addr == NULL)
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "region: no memory");
    for (int pe = 0; st == GRAIN_OK && pe < g->n_pes; pe++)
        addr[pe] = pe != g->my_pe ? (uint64_t)(uintptr_t)r->peer_maps[pe] : 0;
    if (st == GRAIN_OK)
        st = upload(g, &r->peers, addr, (size_t)g->n_pes * sizeof *addr);
    free(addr);
    if (st != GRAIN_OK)
        return st;
    r->dev_host = (grain_region_dev_t){
        .data = r->data,
        .size = r->size,
        .chunk_bytes = p->chunk_bytes,
        .counters = r->counters,
        .expected = r->expected,
        .ready = r->ready,
        .ready_host = r->ready_host,
        .refused = r->refused,
        .abort = r->abort,
        .moved = r->moved,
        .group_first = r->group_first,
        .group_chunks = r->group_chunks,
        .n_groups = p->n_groups,
        .peers = r->peers,
        .host_copy = r->host_copy,
        .store_inline = r->agent == GRAIN_AGENT_INLINE,
        .n_segments = p->n_segments,
        .n_chunks = p->n_chunks,
        .my_pe = (grain_u32)g->my_pe,
        .n_pes = (grain_u32)g->n_pes,
        .launch_groups = r->agent == GRAIN_AGENT_LAUNCH ? r->threads : 0,
    };
    memcpy(r->dev_host.segments, p->segments, sizeof p->segments);
    if (counting)
        counting_groups(p, r->dev_host.counting_groups);
    r->counting = counting;
    if ((st = upload(g, (void **)&r->dev, &r->dev_host, sizeof r->dev_host)) != GRAIN_OK)
        return st;
    r->moves = calloc(p->n_chunks ? p->n_chunks : 1, sizeof *r->moves);
    if (r->moves == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "region: no memory");
    if (needs_pieces(r) && r->agent != GRAIN_AGENT_IDEAL)
        st = grain_piece_pool_init(&r->pieces, g, GRAIN_STAGED_MAX * r->threads, (size_t)g->config.buffer_size);
    if (st == GRAIN_OK && host_moves(r))
        st = grain_host_agent_start(r);
    if (st == GRAIN_OK && r->agent == GRAIN_AGENT_DEVICE)
        st = agent_kernel(g);
    return st;
}

static void free_local(grain_region_t *r)
{
    grain_t *g = r->grain;
    grain_host_agent_stop(r);
    grain_piece_pool_destroy(&r->pieces, g);
    void *device[] = {r->counters, r->expected, r->ready, r->group_first, r->group_chunks, r->moved,
                      r->peers, r->abort, r->dev};
    for (size_t i = 0; i < sizeof device / sizeof device[0]; i++)
        if (device[i] != NULL)
            g->bops->free_device(g->backend, device[i]);
    void *shared[] = {r->ready_host, r->refused, r->host_copy};
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++)
        if (shared[i] != NULL)
            g->bops->free_shared(g->backend, shared[i]);
    free(r->moves);
    r->counters = r->expected = r->ready = r->group_first = r->group_chunks = r->moved = r->peers = r->abort = NULL;
    r->dev = NULL;
    r->ready_host = r->refused = r->host_copy = NULL;
    r->moves = NULL;
}

/* Collective: the region's copy (after every rank stopped using the others'). */
static void free_data(grain_region_t *r)
{
    grain_t *g = r->grain;
    unmap_peers(r);
    grain_ranks_barrier(g);
    if (r->data != NULL && r->placement == PLACE_PEER)
        g->bops->free_peer(g->backend, r->data);
    else if (r->data != NULL && r->placement == PLACE_DEVICE)
        g->bops->free_device(g->backend, r->data);
    else if (r->data != NULL)
        grain_free(g, r->data);
    r->data = NULL;
}

static void free_region(grain_region_t *r)
{
    grain_chunk_plan_free(&r->plan);
    free(r->peer_maps);
    free(r->unmapped);
    free(r);
}

/* Collective: the region's settings, which every rank must resolve alike. */
static grain_status_t check_desc(grain_t *g, const grain_region_desc_t *d, grain_region_settings_t *s)
{
    grain_status_t st = grain_region_settings(g, d, s);
    uint64_t other, mine = s->chunk_bytes | (uint64_t)s->threads << 41 | (uint64_t)s->agent << 52;
    /* Every rank takes part in both checks, whatever its own status. */
    grain_status_t same = grain_same_everywhere(g, st == GRAIN_OK ? mine : UINT64_MAX, &other);
    if (st == GRAIN_OK && same == GRAIN_OK && other != mine && other != UINT64_MAX)
        st = grain_fail(GRAIN_ERR_CONFIG,
                        "region: the ranks chose different transfer settings (here the %s agent, chunks of %llu "
                        "bytes, %u threads): give them the same GRAIN_TRANSFER_* settings and transfer profile",
                        grain_agent_name(s->agent), (unsigned long long)s->chunk_bytes, s->threads);
    st = st != GRAIN_OK ? st : same;
    /* Symmetric: a destination's copy must hold what lands in it. */
    same = grain_same_everywhere(g, d->size, &other);
    if (st == GRAIN_OK && same == GRAIN_OK && other != d->size)
        st = grain_fail(GRAIN_ERR_INVALID,
                        "region: the size must be the same on every rank; rank %d has %zu bytes, another %llu",
                        g->my_pe, d->size, (unsigned long long)other);
    return st != GRAIN_OK ? st : same;
}

grain_status_t grain_region_create(grain_t *g, const grain_region_desc_t *d, grain_region_t **r_p)
{
    if (g == NULL || d == NULL || r_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_region_create needs a handle, a description and an output");
    grain_region_t *r = calloc(1, sizeof *r);
    if (r == NULL || (r->peer_maps = calloc((size_t)g->n_pes, sizeof *r->peer_maps)) == NULL ||
        (r->unmapped = calloc((size_t)g->n_pes, sizeof *r->unmapped)) == NULL) {
        if (r != NULL)
            free(r->peer_maps);
        free(r);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "region: no memory");
    }
    r->grain = g;
    r->size = d->size;
    grain_region_settings_t set;
    grain_status_t st = check_desc(g, d, &set);
    r->agent = set.agent;
    r->threads = set.threads;
    r->profiled = set.profiled;
    if (st == GRAIN_OK)
        st = grain_chunk_plan_build(d, set.chunk_bytes, g->my_pe, g->n_pes, &r->plan);
    /* Ids follow creation order, the same on every rank. */
    for (r->id = 0; r->id < GRAIN_MAX_REGIONS && atomic_load(&g->regions[r->id]) != NULL; r->id++) {
    }
    if (st == GRAIN_OK && r->id == GRAIN_MAX_REGIONS)
        st = grain_fail(GRAIN_ERR_INVALID, "region: %u regions exist; destroy one first", GRAIN_MAX_REGIONS);
    if ((st = agree(g, st)) == GRAIN_OK && (st = place(r)) == GRAIN_OK) {
        st = agree(g, build_local(r));
        if (st != GRAIN_OK) {
            free_local(r);
            free_data(r);
        }
    }
    if (st != GRAIN_OK) {
        free_region(r);
        return st;
    }
    atomic_store_explicit(&g->regions[r->id], r, memory_order_release);
    /* Nobody sends a piece for this region before every rank knows it. */
    if ((st = grain_ranks_barrier(g)) != GRAIN_OK) {
        grain_region_destroy(r);
        return st;
    }
    grain_info("region %u: %zu bytes, %u chunks of %llu bytes, %s agent, %s", r->id, r->size, r->plan.n_chunks,
               (unsigned long long)set.chunk_bytes, grain_agent_name(r->agent),
               r->placement == PLACE_PEER   ? "in peer memory"
               : r->placement == PLACE_HEAP ? "in the symmetric heap"
                                            : "in device memory");
    *r_p = r;
    return GRAIN_OK;
}

/*
 * Tells the device agent of the open iteration to stop waiting for chunks
 * the producer did not complete: the abort word, in device memory, takes
 * the iteration's generation.  In host memory, the agent's polls of it,
 * 64 work-groups reading across PCIe, made pagerank's producer three times
 * slower on an H200 (and 16 work-groups, 20% slower).  The copy does not
 * wait for the agent's kernel: its stream does not synchronize with others.
 */
static grain_status_t stop_agent(grain_region_t *r)
{
    uint32_t generation = (uint32_t)(r->iterations + 1);
    return r->grain->bops->copy(r->grain->backend, r->abort, &generation, sizeof generation);
}

void grain_region_destroy(grain_region_t *r)
{
    if (r == NULL)
        return;
    grain_t *g = r->grain;
    if (r->iteration_open && r->agent == GRAIN_AGENT_DEVICE && stop_agent(r) == GRAIN_OK)
        g->bops->agent_synchronize(g->backend);
    if (r->iteration_open && r->agent == GRAIN_AGENT_LAUNCH)
        (void)grain_wait(g); /* its copies still store into the peers' copies */
    grain_host_agent_stop(r);
    grain_ranks_barrier(g); /* every piece for this region has arrived: ends were collective */
    atomic_store_explicit(&g->regions[r->id], NULL, memory_order_release);
    free_local(r);
    free_data(r);
    free_region(r);
}

void *grain_region_data(grain_region_t *r) { return r ? r->data : NULL; }
void *grain_region_host(grain_region_t *r) { return r ? r->host_copy : NULL; }

grain_status_t grain_kernel_set_arg_region(grain_kernel_t *k, unsigned index, grain_region_t *r)
{
    if (r == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_kernel_set_arg_region of a NULL region");
    return grain_kernel_set_arg_ptr(k, index, r->dev);
}

grain_status_t grain_region_begin(grain_region_t *r)
{
    if (r == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_region_begin of a NULL region");
    if (r->iteration_open)
        return grain_fail(GRAIN_ERR_STATE, "region %u: grain_region_begin twice without grain_region_end", r->id);
    /* Its counters and ready words would make chunks ready early or never,
     * and the device agent would take the stop word of the failed iteration
     * for its own. */
    if (r->broken)
        return grain_fail(GRAIN_ERR_STATE,
                          "region %u: an earlier iteration failed (its producer left chunks incomplete, or its "
                          "transfers failed), so its counters and ready words no longer match the next "
                          "iteration: destroy the region and create it again",
                          r->id);
    grain_t *g = r->grain;
    grain_status_t st = GRAIN_OK;
    if (r->host != NULL) {
        grain_host_agent_arm(r);
    } else if (r->agent == GRAIN_AGENT_DEVICE) {
        /* Launched before the producer, so that its work-groups are resident
         * before the producer's fill the device. */
        size_t wg = g->binfo.max_wg_size < AGENT_WG ? g->binfo.max_wg_size : AGENT_WG;
        uint32_t generation = (uint32_t)(r->iterations + 1);
        st = grain_kernel_set_arg_ptr(g->agent_kernel, 1, r->dev);
        if (st == GRAIN_OK)
            st = grain_kernel_set_arg(g->agent_kernel, 2, sizeof generation, &generation);
        if (st == GRAIN_OK)
            st = grain_kernel_launch_agent(g->agent_kernel, r->threads * wg, wg);
    }
    if (st == GRAIN_OK)
        r->iteration_open = 1;
    return st;
}

/* After the producer: whether it completed every chunk.  The ready words'
 * host copy says, and reading it costs less than copying a count from the
 * device (which took as long as jacobi's bulk copy of its halos on an
 * H200). */
static grain_status_t check_completed(grain_region_t *r, int *incomplete_p)
{
    grain_t *g = r->grain;
    const _Atomic uint32_t *ready = r->ready_host;
    uint32_t generation = (uint32_t)(r->iterations + 1), completed = 0;
    for (uint32_t c = 0; c < r->plan.n_chunks; c++)
        completed += atomic_load_explicit(&ready[c], memory_order_relaxed) == generation;
    *incomplete_p = completed != r->plan.n_chunks;
    if (!*incomplete_p)
        return GRAIN_OK;
    return grain_fail(GRAIN_ERR_STATE,
                      "region %u on rank %d: the producer completed %u of the region's %u chunks: every "
                      "work-group the mapping names (%llu) must call grain_chunk_done once per iteration; "
                      "the region's counters are now inconsistent",
                      r->id, g->my_pe, completed, r->plan.n_chunks, (unsigned long long)r->plan.n_groups);
}

static grain_status_t move_bulk(grain_region_t *r)
{
    grain_status_t st = GRAIN_OK;
    for (unsigned s = 0; st == GRAIN_OK && s < r->plan.n_segments; s++)
        st = grain_region_move(r, s, r->plan.segments[s].offset, r->plan.segments[s].size, 0);
    grain_status_t wst = grain_region_lane_wait(r, 0);
    for (uint32_t c = 0; st == GRAIN_OK && c < r->plan.n_chunks; c++)
        r->moves[c]++;
    return st != GRAIN_OK ? st : wst;
}

/* The device's moved word of every chunk (device and launch agents), in a
 * host array for the caller to free. */
static grain_status_t read_moved(grain_region_t *r, uint32_t **moved_p)
{
    grain_t *g = r->grain;
    uint32_t *moved = malloc(r->plan.n_chunks * sizeof *moved + 1);
    if (moved == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "region: no memory");
    grain_status_t st = g->bops->copy(g->backend, moved, r->moved, r->plan.n_chunks * sizeof *moved);
    if (st != GRAIN_OK) {
        free(moved);
        return st;
    }
    *moved_p = moved;
    return GRAIN_OK;
}

/*
 * The copies a producer could not launch (the device's room for pending
 * launches was full): the host moves those chunks, whose moved words still
 * name the last iteration, so that nothing is lost.
 */
static grain_status_t move_unlaunched(grain_region_t *r)
{
    grain_t *g = r->grain;
    uint32_t generation = (uint32_t)(r->iterations + 1), n = r->plan.n_chunks;
    uint32_t *moved = NULL; /* set unless read_moved fails */
    grain_status_t st = read_moved(r, &moved);
    if (st != GRAIN_OK)
        return st;
    *(volatile uint32_t *)r->refused = 0; /* the producer, which sets it, has ended */
    uint64_t refused = 0;
    for (uint32_t c = 0; st == GRAIN_OK && c < n; c++) {
        uint64_t start, len;
        if (moved[c] == generation)
            continue;
        unsigned seg = grain_chunk_span(&r->plan, c, &start, &len);
        st = grain_region_move(r, seg, start, len, 0);
        moved[c] = generation;
        refused++;
    }
    grain_status_t wst = grain_region_lane_wait(r, 0);
    st = st != GRAIN_OK ? st : wst;
    if (st == GRAIN_OK)
        st = g->bops->copy(g->backend, r->moved, moved, n * sizeof *moved);
    free(moved);
    if (r->unlaunched == 0) /* once a region: it may happen every iteration */
        grain_warn("region %u on rank %d: the device could not launch %llu of the %u copies (no room for more "
                   "pending launches); the host moves such chunks",
                   r->id, g->my_pe, (unsigned long long)refused, n);
    r->unlaunched += refused;
    return st;
}

grain_status_t grain_region_end(grain_region_t *r)
{
    if (r == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_region_end of a NULL region");
    if (!r->iteration_open)
        return grain_fail(GRAIN_ERR_STATE, "region %u: grain_region_end without grain_region_begin", r->id);
    grain_t *g = r->grain;
    uint64_t t0 = grain_now_ns();
    /* The producer's grid completes after every copy it launched. */
    grain_status_t st = grain_wait(g), ast = GRAIN_OK;
    uint64_t t1 = grain_now_ns();
    int incomplete = st != GRAIN_OK;
    if (st == GRAIN_OK && r->counting)
        st = check_completed(r, &incomplete);
    switch (r->agent) {
    case GRAIN_AGENT_HOST:
    case GRAIN_AGENT_INLINE:
        if (r->host != NULL)
            ast = grain_host_agent_finish(r, incomplete);
        break;
    case GRAIN_AGENT_DEVICE:
        if (incomplete)
            ast = stop_agent(r);
        if (ast == GRAIN_OK)
            ast = g->bops->agent_synchronize(g->backend);
        break;
    case GRAIN_AGENT_LAUNCH:
        if (st == GRAIN_OK && *(volatile uint32_t *)r->refused != 0)
            ast = move_unlaunched(r);
        break;
    case GRAIN_AGENT_BULK:
        if (st == GRAIN_OK)
            ast = move_bulk(r);
        break;
    default:
        break;
    }
    r->iteration_open = 0;
    /* The agents look for the ready words of generation iterations + 1.
     * After a failed iteration they may already read it (the producer got
     * there, the moves did not), or never will (its counters are off). */
    if (st == GRAIN_OK && ast == GRAIN_OK)
        r->iterations++;
    else if (r->counting)
        r->broken = 1;
    uint64_t t2 = grain_now_ns();
    /* Always: the other ranks wait for this rank's pieces and barrier. */
    grain_status_t qst = grain_barrier_all(g);
    r->producer_wait_ns += t1 - t0;
    r->drain_ns += t2 - t1;
    r->others_ns += grain_now_ns() - t2;
    return st != GRAIN_OK ? st : ast != GRAIN_OK ? ast : qst;
}

grain_status_t grain_region_stats(grain_region_t *r, grain_region_stats_t *s)
{
    if (r == NULL || s == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_region_stats needs a region and somewhere to write");
    uint32_t *moved = r->moves;
    uint32_t *device = NULL;
    if (r->agent == GRAIN_AGENT_DEVICE || r->agent == GRAIN_AGENT_LAUNCH) {
        grain_status_t st = read_moved(r, &device);
        if (st != GRAIN_OK)
            return st;
        moved = device;
    }
    *s = (grain_region_stats_t){.iterations = r->iterations,
                                .chunks = r->plan.n_chunks,
                                .chunk_bytes = r->plan.chunk_bytes,
                                .transfer_threads = r->threads,
                                .min_moves = UINT64_MAX,
                                .bytes_sent = atomic_load(&r->bytes_sent),
                                .bytes_received = atomic_load(&r->bytes_received),
                                .bytes_written = atomic_load(&r->bytes_written),
                                .mapped_peers = r->mapped_peers,
                                .unlaunched = r->unlaunched,
                                .producer_wait_ns = r->producer_wait_ns,
                                .drain_ns = r->drain_ns,
                                .others_ns = r->others_ns,
                                .agent = r->agent,
                                .profiled = r->profiled};
    for (uint32_t c = 0; c < r->plan.n_chunks; c++) {
        s->moves += moved[c];
        s->min_moves = moved[c] < s->min_moves ? moved[c] : s->min_moves;
        s->max_moves = moved[c] > s->max_moves ? moved[c] : s->max_moves;
    }
    if (r->plan.n_chunks == 0)
        s->min_moves = 0;
    free(device);
    return GRAIN_OK;
}
