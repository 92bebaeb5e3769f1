/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counter-triggered transfers, host side: regions, their chunk plan, the
 * transfer agents and the chunk pieces that travel through the transport.
 */
#ifndef GRAIN_RUNTIME_TRANSFERS_REGION_H
#define GRAIN_RUNTIME_TRANSFERS_REGION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backends/backend.h" /* GRAIN_COPY_LANES */
#include "grain/device/chunks.h"
#include "grain/grain.h"
#include "transports/transport.h"

#define GRAIN_MAX_REGIONS 64u

/* Where a region's copy lives: the symmetric heap only where the transport
 * puts into the peers' heaps (grain_t.heap_puts), peer memory where every
 * rank maps every other's, else device memory (region.c). */
enum { PLACE_HEAP, PLACE_PEER, PLACE_DEVICE };

/* A piece of a chunk on the wire: the header, then `bytes` - header bytes
 * for offset `offset` of region `region` at the destination.  The magic
 * sits where a packed buffer has its own, so the transport tells them
 * apart; pieces need no order (chunks are disjoint, iterations are
 * separated by grain_region_end). */
#define GRAIN_PIECE_MAGIC 0x48435247u /* "GRCH" */
typedef struct grain_piece_hdr {
    uint32_t magic;
    uint32_t src_pe;
    uint32_t region;
    uint32_t bytes; /* header included */
    uint64_t offset;
} grain_piece_hdr_t;

/* Which chunks each work-group writes: the mapping worked out once. */
typedef struct grain_chunk_plan {
    uint64_t chunk_bytes;
    uint32_t n_chunks;
    unsigned n_segments;
    grain_segment_dev_t segments[GRAIN_REGION_MAX_SEGMENTS];
    uint32_t *expected;     /* per chunk: the work-groups that write it */
    uint64_t n_groups;
    uint64_t *group_first;  /* n_groups + 1 */
    uint32_t *group_chunks; /* group_first[n_groups] entries */
} grain_chunk_plan_t;

/* Checks `desc` (segments inside the region, destinations that exist and
 * are not this rank, a mapping with work-groups) and builds the plan; a
 * chunk that no work-group writes is an error, since it would never move. */
grain_status_t grain_chunk_plan_build(const grain_region_desc_t *desc, uint64_t chunk_bytes, int my_pe, int n_pes,
                                      grain_chunk_plan_t *plan);
void grain_chunk_plan_free(grain_chunk_plan_t *plan);
/* Chunk c: its segment, and its bytes [*start, *start + *len) of the region. */
unsigned grain_chunk_span(const grain_chunk_plan_t *plan, uint32_t c, uint64_t *start, uint64_t *len);

/* A pool of pinned buffers for pieces on their way through the transport. */
typedef struct grain_piece_buf {
    grain_send_token_t token; /* first: the transport hands it back */
    _Atomic unsigned sends;   /* sends of it not yet handed back: one per destination */
    struct grain_piece_buf *next;
    struct grain_piece_pool *pool;
    uint8_t *data;
} grain_piece_buf_t;

typedef struct grain_piece_pool {
    pthread_mutex_t lock;
    pthread_cond_t returned;
    grain_piece_buf_t *bufs, *free;
    unsigned n;
    size_t size;
    uint8_t *memory;
    const atomic_int *abandon; /* the runtime's `failed`: buffers in flight may never come back */
} grain_piece_pool_t;

/* Pieces a lane stages before it waits for their copies and sends them; a
 * pool holds this many a thread, so that a thread waiting for a buffer,
 * having sent its own, always leaves some to come back. */
#define GRAIN_STAGED_MAX 4u

/* A lane's staged pieces: copies into pinned memory started, not yet sent.
 * A wait for each piece cost more than its 64 KiB copy. */
typedef struct grain_staged {
    grain_piece_buf_t *bufs[GRAIN_STAGED_MAX];
    int to[GRAIN_STAGED_MAX]; /* a rank, or -1: every unmapped one */
    unsigned n;
} grain_staged_t;

struct grain_region {
    struct grain *grain;
    uint32_t id;
    grain_agent_t agent;
    unsigned threads; /* host threads, or work-groups of the device agent or of each launched copy */
    int profiled;
    grain_chunk_plan_t plan;
    size_t size;

    char *data;         /* this rank's copy */
    int placement;      /* where data lives: PLACE_* (region.c) */
    void *host_copy;    /* shared memory, or NULL */
    void **peer_maps;   /* per PE: this rank's mapping of its copy, or NULL */
    unsigned mapped_peers;
    int *unmapped;      /* the other PEs, not mapped here: what reaches them goes as pieces */
    unsigned n_unmapped;

    grain_region_dev_t dev_host; /* what kernels get, as the host builds it */
    grain_region_dev_t *dev;     /* its copy in device memory */
    void *counters, *expected, *ready, *group_first, *group_chunks, *peers, *moved, *abort; /* device memory */
    void *ready_host, *refused;                                                             /* host memory */

    grain_piece_pool_t pieces;
    grain_staged_t staged[GRAIN_COPY_LANES]; /* each lane used by one thread at a time */
    int counting;       /* producers count down chunks and mark them ready (decoupled agents) */
    int broken;         /* a counting region's iteration failed: counters or ready words are off */
    int iteration_open;

    /* Host agent: threads that own the runs of 64 chunks t, t + threads, ... */
    struct grain_host_agent *host;

    uint64_t iterations;
    uint64_t unlaunched;             /* the launch agent: copies the device refused, the host made */
    uint32_t *moves;                 /* per chunk (the host agent's and bulk copies) */
    _Atomic uint64_t bytes_sent;
    _Atomic uint64_t bytes_received;
    _Atomic uint64_t bytes_written; /* put straight into peers' heaps */
    uint64_t producer_wait_ns, drain_ns, others_ns; /* grain_region_stats_t's */
};

/* What a region was given or chose (region_settings.c). */
typedef struct grain_region_settings {
    grain_agent_t agent;
    uint64_t chunk_bytes;
    unsigned threads; /* host threads, or work-groups of the device agent or of each launched copy */
    int profiled;     /* the transfer profile chose some of it */
} grain_region_settings_t;
grain_status_t grain_region_settings(struct grain *g, const grain_region_desc_t *desc, grain_region_settings_t *s);

/* Transfers, shared by the agents (region_move.c). */
/* Moves [start, start + len) of segment `seg` to its destinations, copies on
 * lane `lane`, pieces for the transport staged there; the caller finishes
 * with grain_region_lane_wait, which waits for the lane's copies and sends
 * what it staged.  grain_region_lane_send sends what it staged, if any, so
 * that a thread between chunks does not hold its pieces back. */
grain_status_t grain_region_move(struct grain_region *r, unsigned seg, uint64_t start, uint64_t len, unsigned lane);
grain_status_t grain_region_lane_wait(struct grain_region *r, unsigned lane);
grain_status_t grain_region_lane_send(struct grain_region *r, unsigned lane);
grain_status_t grain_piece_pool_init(grain_piece_pool_t *pool, struct grain *g, unsigned n, size_t size);
void grain_piece_pool_destroy(grain_piece_pool_t *pool, struct grain *g);
/* Applies a piece that arrived from `src` (validated first) and counts it.
 * Returns 1 where the backend copies asynchronously and the copy may still
 * read `data`: the piece is then lent (lent.h), and counted by
 * grain_region_landed once its copy is done (st: how it ended).  Both on
 * the network thread. */
int grain_region_receive(struct grain *g, uint32_t src, const void *data, size_t len);
void grain_region_landed(struct grain *g, struct grain_region *r, uint32_t src, uint64_t bytes, grain_status_t st,
                         const char *why);

/* The host agent (region_host_agent.c). */
grain_status_t grain_host_agent_start(struct grain_region *r);
void grain_host_agent_arm(struct grain_region *r);
/* Waits until every chunk of the iteration moved (or, with `incomplete`,
 * until the threads stop looking for chunks that will never be ready);
 * returns the first error. */
grain_status_t grain_host_agent_finish(struct grain_region *r, int incomplete);
void grain_host_agent_stop(struct grain_region *r);

#endif
