/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counter-triggered transfers, device side (docs/design.md "Counter-triggered
 * transfers", ProACT).
 *
 * A region is an array a producer kernel writes and parts of which (its
 * segments) other ranks or the host need.  Each segment is cut into chunks;
 * each chunk has a counter set to the number of work-groups that write it
 * (the host works that out from the region's mapping).  After its writes a
 * work-group calls grain_chunk_done(): every chunk it wrote loses one, and
 * the work-group that takes a chunk to zero sets it back for the next launch
 * (no host round trip) and marks it ready for the transfer agent.  With the
 * inline agent the producer writes through grain_region_store64(), which
 * also stores straight into each destination this rank maps; chunks for
 * the ranks it cannot map (other nodes) are then counted as above and moved
 * by host threads as they complete.
 *
 * Ready is a word per chunk, the number of times the chunk became ready,
 * that only the device writes and the agent only reads: the agent of
 * iteration k moves the chunks whose word reads k + 1.  A bitmap that the
 * device sets and the host clears lost chunks on an H200: without atomics
 * over PCIe, the GPU's atomic OR and the host's exchange on one word of
 * pinned memory are each a read and a write, and the host's could undo a
 * bit set between its two halves.  The ready words live in device memory,
 * where the last writer reads them and the device agent polls them, and
 * again in host memory, where the host agent polls them and the host
 * counts them after the producer (a copy from the device took as long as
 * jacobi's halo copy on an H200).
 *
 *   GRAIN_KERNEL void step(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_region_dev_t *out, ...)
 *   {
 *       GRAIN_WG_BEGIN(wg);
 *       if (i < n)
 *           grain_region_store64(out, i, grain_f64_bits(v));
 *       grain_chunk_done(&wg, out);
 *   }
 */
#ifndef GRAIN_DEVICE_CHUNKS_H
#define GRAIN_DEVICE_CHUNKS_H

#include "grain/device/port.h"

#define GRAIN_REGION_MAX_SEGMENTS 8u
#define GRAIN_LAUNCH_WG 256u /* work-items of a launched copy's work-group */
/* Segment destinations besides a PE number. */
#define GRAIN_DEST_PEERS (-1) /* every other rank, at the same offset */
#define GRAIN_DEST_HOST (-2)  /* this rank's host copy (grain_region_host) */

typedef struct grain_segment_dev {
    grain_u64 offset;      /* bytes into the region */
    grain_u64 size;
    grain_u64 dest_offset; /* where it lands in the destination's copy */
    grain_u32 first_chunk; /* chunks are numbered across segments */
    grain_u32 n_chunks;
    grain_i32 dest;        /* a PE, GRAIN_DEST_PEERS or GRAIN_DEST_HOST */
    grain_u32 pad_;
} grain_segment_dev_t;

/* What kernels are given for a region; it lives in device memory and
 * changes only between launches. */
typedef struct grain_region_dev {
    GRAIN_DPTR(char) data;          /* this rank's copy */
    grain_u64 size;
    grain_u64 chunk_bytes;
    GRAIN_DPTR(grain_u32) counters; /* per chunk: work-groups still to finish it */
    GRAIN_DPTR(grain_u32) expected; /* per chunk: what its counter starts from */
    GRAIN_DPTR(grain_u32) ready;    /* per chunk: the times it became ready (device memory) */
    GRAIN_DPTR(grain_u32) ready_host; /* the same words in host memory */
    /* Host memory, set by the launch agent when the device refused a copy:
     * the host makes the copies not made (nothing is lost). */
    GRAIN_DPTR(grain_u32) refused;
    GRAIN_DPTR(grain_u32) abort;    /* device memory: the iteration whose device agent stops waiting */
    GRAIN_DPTR(grain_u32) moved;    /* per chunk, device and launch agents: the iterations that moved it */
    /* Chunks of work-group g: group_chunks[group_first[g] .. group_first[g + 1]) */
    GRAIN_DPTR(grain_u64) group_first;
    GRAIN_DPTR(grain_u32) group_chunks;
    grain_u64 n_groups;
    /* [first, end): the work-groups that count down chunks, those that
     * write some; empty where nobody counts (bulk, inline, ideal agents). */
    grain_u64 counting_groups[2];
    /* Per PE: the address of its copy where this rank's kernels can store
     * to it (peer GPU memory), else 0. */
    GRAIN_DPTR(grain_u64) peers;
    GRAIN_DPTR(char) host_copy;     /* GRAIN_DEST_HOST's target, or 0 */
    grain_u32 store_inline;         /* the inline agent: stores go to the destinations too */
    grain_u32 n_segments;
    grain_u32 n_chunks;
    grain_u32 my_pe, n_pes;
    grain_u32 launch_groups;        /* the launch agent: work-groups of each copy (0: another agent) */
    grain_segment_dev_t segments[GRAIN_REGION_MAX_SEGMENTS];
} grain_region_dev_t;

/*
 * The stencil mapping orders a launch's rows of tiles so that the rows a
 * halo needs come first: launch row 0 computes tile row 0, launch row 1 the
 * last tile row, then the rows between in order.  Kernels and the host's
 * mapping both call this, so they agree on which work-group writes what.
 */
GRAIN_INLINE grain_u64 grain_stencil_tile_row(grain_u64 launch_row, grain_u64 n_tile_rows)
{
    if (launch_row == 0 || n_tile_rows < 2)
        return launch_row;
    return launch_row == 1 ? n_tile_rows - 1 : launch_row - 1;
}

/* Where chunk c lies, for the device agent and the host's alike: its
 * segment (chunks are numbered across the segments in order), where it
 * starts in that segment, and its bytes (the segment's last is shorter). */
GRAIN_INLINE grain_u32 grain_chunk_segment(GRAIN_GLOBAL const grain_segment_dev_t *segments, grain_u32 n_segments,
                                           grain_u32 c)
{
    grain_u32 s = 0;
    while (s + 1 < n_segments && c >= segments[s].first_chunk + segments[s].n_chunks)
        s++;
    return s;
}

/* The ranks [first, end) a segment goes to: every rank for GRAIN_DEST_PEERS,
 * else the one it names (GRAIN_DEST_HOST's callers never ask).  Callers
 * skip their own rank. */
GRAIN_INLINE grain_u32 grain_segment_first_pe(GRAIN_GLOBAL const grain_segment_dev_t *seg)
{
    return seg->dest == GRAIN_DEST_PEERS ? 0u : (grain_u32)seg->dest;
}

GRAIN_INLINE grain_u32 grain_segment_end_pe(GRAIN_GLOBAL const grain_segment_dev_t *seg, grain_u32 n_pes)
{
    return seg->dest == GRAIN_DEST_PEERS ? n_pes : (grain_u32)seg->dest + 1u;
}

GRAIN_INLINE grain_u64 grain_chunk_start(GRAIN_GLOBAL const grain_segment_dev_t *seg, grain_u64 chunk_bytes, grain_u32 c)
{
    return (grain_u64)(c - seg->first_chunk) * chunk_bytes;
}

GRAIN_INLINE grain_u64 grain_chunk_length(GRAIN_GLOBAL const grain_segment_dev_t *seg, grain_u64 chunk_bytes, grain_u32 c)
{
    grain_u64 left = seg->size - grain_chunk_start(seg, chunk_bytes, c);
    return left < chunk_bytes ? left : chunk_bytes;
}

#if !defined(GRAIN_DIALECT_HOST)

/* Copies `len` bytes with the work-items numbered `first` of `step`: a
 * work-group's (the device agent) or a grid's (a launched copy).  Each
 * work-item has GRAIN_COPY_DEPTH loads in flight before it stores: the
 * compiler cannot reorder a load past a store that may alias it, and one
 * work-group copying a word at a time waits out a load's latency per word
 * (a device agent's 1 MiB chunk took about 150 us on an H200). */
#define GRAIN_COPY_DEPTH 8u
GRAIN_INLINE void grain_chunk_copy_(GRAIN_GLOBAL char *dst, GRAIN_GLOBAL const char *src, grain_u64 len,
                                    grain_u64 first, grain_u64 step)
{
    if (((grain_u64)dst | (grain_u64)src | len) % 8u == 0) {
        GRAIN_GLOBAL grain_u64 *d = (GRAIN_GLOBAL grain_u64 *)dst;
        GRAIN_GLOBAL const grain_u64 *s = (GRAIN_GLOBAL const grain_u64 *)src;
        grain_u64 words = len / 8u, i = first;
        for (; i + (GRAIN_COPY_DEPTH - 1u) * step < words; i += GRAIN_COPY_DEPTH * step) {
            grain_u64 w[GRAIN_COPY_DEPTH];
            for (grain_u32 k = 0; k < GRAIN_COPY_DEPTH; k++)
                w[k] = s[i + k * step];
            for (grain_u32 k = 0; k < GRAIN_COPY_DEPTH; k++)
                d[i + k * step] = w[k];
        }
        for (; i < words; i += step)
            d[i] = s[i];
    } else {
        for (grain_u64 i = first; i < len; i += step)
            dst[i] = src[i];
    }
}

/* Moves chunk c to every destination of its segment that this rank maps
 * (the device and launch agents). */
GRAIN_INLINE void grain_chunk_move_(GRAIN_GLOBAL const grain_region_dev_t *r, grain_u32 c, grain_u64 first,
                                    grain_u64 step)
{
    GRAIN_GLOBAL const grain_segment_dev_t *seg = &r->segments[grain_chunk_segment(r->segments, r->n_segments, c)];
    grain_u64 start = grain_chunk_start(seg, r->chunk_bytes, c);
    grain_u64 len = grain_chunk_length(seg, r->chunk_bytes, c);
    GRAIN_GLOBAL const char *src = r->data + seg->offset + start;
    grain_u64 at = seg->dest_offset + start;
    if (seg->dest == GRAIN_DEST_HOST) {
        grain_chunk_copy_(r->host_copy + at, src, len, first, step);
        return;
    }
    for (grain_u32 pe = grain_segment_first_pe(seg), end = grain_segment_end_pe(seg, r->n_pes); pe < end; pe++)
        if (pe != r->my_pe && r->peers[pe] != 0)
            grain_chunk_copy_((GRAIN_GLOBAL char *)r->peers[pe] + at, src, len, first, step);
}

#if defined(GRAIN_DEVICE_LAUNCH)
/*
 * The launch agent (ProACT's CDP): the work-group that completes chunk c
 * launches a grid to move it, so nothing polls and no work-group waits.
 * The backend defines GRAIN_DEVICE_LAUNCH where kernels launch kernels:
 * CUDA when it builds relocatable code linked with the device runtime,
 * OpenCL where the device has device-side enqueue.  On both the parent
 * grid completes only after its children, so the host's wait for the
 * producer waits for every copy.
 *
 * What the child sees: CUDA guarantees a child grid what its parent's
 * thread saw before the launch (which acquired the other writers' stores).
 * OpenCL orders a parent and a child launched without waiting only through
 * atomics, so each work-item first acquires the ready word that the parent
 * released before it enqueued; it holds `generation` from then until the
 * producer's next launch, which starts after this child ends.
 */
GRAIN_INLINE void grain_chunk_launched_(GRAIN_GLOBAL grain_region_dev_t *r, grain_u32 c, grain_u32 generation)
{
#if defined(GRAIN_DIALECT_OPENCL)
    while (grain_atomic_load_relaxed_dev_u32(&r->ready[c]) != generation)
        ;
    grain_fence_acquire_dev();
#endif
    grain_chunk_move_(r, c, grain_global_linear_id(), grain_global_linear_size());
    if (grain_global_linear_id() == 0)
        r->moved[c] = generation;
}

#if defined(GRAIN_DIALECT_GPU)
GRAIN_KERNEL void grain_chunk_launched(GRAIN_GLOBAL grain_region_dev_t *r, grain_u32 c, grain_u32 generation)
{
    grain_chunk_launched_(r, c, generation);
}
#endif
#endif

/* The launch agent's move of chunk c, ready for the `generation`th time:
 * as many work-groups as have 8-byte words to copy, up to launch_groups.
 * A launch the device refuses (CUDA: its pending launches are full;
 * OpenCL: its device queue is) is flagged for the host to make. */
GRAIN_INLINE void grain_chunk_launch_(GRAIN_GLOBAL grain_region_dev_t *r, grain_u32 c, grain_u32 generation)
{
#if defined(GRAIN_DEVICE_LAUNCH)
    GRAIN_GLOBAL const grain_segment_dev_t *seg = &r->segments[grain_chunk_segment(r->segments, r->n_segments, c)];
    grain_u64 words = (grain_chunk_length(seg, r->chunk_bytes, c) + 7u) / 8u;
    grain_u64 groups = (words + GRAIN_LAUNCH_WG - 1u) / GRAIN_LAUNCH_WG;
    groups = groups < r->launch_groups ? groups : r->launch_groups;
#if defined(GRAIN_DIALECT_OPENCL)
    /* The copy strides over the whole grid: the device picks the groups. */
    ndrange_t range = ndrange_1D((size_t)groups * GRAIN_LAUNCH_WG);
    int launched = enqueue_kernel(get_default_queue(), CLK_ENQUEUE_FLAGS_NO_WAIT, range,
                                  ^{ grain_chunk_launched_(r, c, generation); }) == CLK_SUCCESS;
#else
    grain_chunk_launched<<<(unsigned)groups, GRAIN_LAUNCH_WG, 0, cudaStreamFireAndForget>>>(r, c, generation);
    int launched = cudaGetLastError() == cudaSuccess;
#endif
    if (!launched)
        grain_atomic_store_relaxed_u32(r->refused, 1u);
#else
    (void)r, (void)c, (void)generation;
#endif
}

/*
 * Called by every work-item of a work-group after its writes to the region
 * (it holds a barrier).  The first work-item decrements the counters of
 * the chunks the mapping says this work-group writes; the barrier orders
 * the other work-items' writes before its release.  Work-groups that write
 * no chunk (a stencil's inner rows, most of them) leave at once, without
 * the barrier.
 */
GRAIN_INLINE void grain_chunk_done(const grain_wg_t *wg, GRAIN_GLOBAL grain_region_dev_t *r)
{
    (void)wg;
    /* Every work-group of a producer ends here, after its stores, which
     * evicted the description from L1: each load of it waits out the L2's
     * latency, and loads chained by || (a flag, then each bound) cost jacobi
     * 7 us a sweep on an H200.  One comparison needs both bounds at once.
     * Uniform across the work-group, so the barrier below is too. */
    grain_u64 g = grain_group_linear_id(), first = r->counting_groups[0];
    if (g - first >= r->counting_groups[1] - first)
        return;
    grain_wg_barrier();
    /* No early return from here: PoCL 3.1 ran the rest of the function in
     * every work-item after one, and each decremented the counters. */
    grain_u64 end = grain_local_linear_id() == 0 ? r->group_first[g + 1] : 0;
    for (grain_u64 i = end != 0 ? r->group_first[g] : 0; i < end; i++) {
        grain_u32 c = r->group_chunks[i];
        if (grain_atomic_count_down_dev_u32(&r->counters[c]) == 1u) {
            /* The last writer: nobody else touches the counter this launch. */
            grain_u32 generation = grain_atomic_load_relaxed_u32(&r->ready[c]) + 1u;
            grain_atomic_store_relaxed_u32(&r->counters[c], r->expected[c]);
            /* Only this device reads `ready`: device scope.  The host
             * copies the chunk once it reads `ready_host`: system scope. */
            grain_atomic_store_release_dev_u32(&r->ready[c], generation);
            grain_atomic_store_release_u32(&r->ready_host[c], generation);
            if (r->launch_groups != 0)
                grain_chunk_launch_(r, c, generation);
        }
    }
}

/*
 * Stores the 8-byte word `index` of the region.  With the inline agent the
 * word also goes to each destination of its segment that this rank maps (a
 * peer GPU, the host copy).  A plain store, not a work-group collective:
 * sending through the queue from here kept the queue's registers live
 * through every producer's loop (jacobi's sweep: 64 registers against 40),
 * which slowed every agent's producer, not only the inline one's.  Nothing
 * writes the description while kernels run (`restrict`), so the compiler
 * need not reload the segments after every store.
 */
GRAIN_INLINE void grain_region_store64(GRAIN_GLOBAL const grain_region_dev_t *GRAIN_RESTRICT r, grain_u64 index,
                                       grain_u64 value)
{
    grain_u64 off = index * 8u;
    if (off + 8u > r->size)
        return;
    ((GRAIN_GLOBAL grain_u64 *)r->data)[index] = value;
    if (!r->store_inline)
        return;
    for (grain_u32 s = 0; s < r->n_segments; s++) {
        GRAIN_GLOBAL const grain_segment_dev_t *seg = &r->segments[s];
        if (off < seg->offset || off + 8u > seg->offset + seg->size)
            continue;
        grain_u64 at = (seg->dest_offset + (off - seg->offset)) / 8u;
        if (seg->dest == GRAIN_DEST_HOST) {
            ((GRAIN_GLOBAL grain_u64 *)r->host_copy)[at] = value;
            continue;
        }
        for (grain_u32 pe = grain_segment_first_pe(seg), end = grain_segment_end_pe(seg, r->n_pes); pe < end; pe++)
            if (pe != r->my_pe && r->peers[pe] != 0)
                ((GRAIN_GLOBAL grain_u64 *)r->peers[pe])[at] = value;
    }
}

#endif /* !GRAIN_DIALECT_HOST */

#endif /* GRAIN_DEVICE_CHUNKS_H */
