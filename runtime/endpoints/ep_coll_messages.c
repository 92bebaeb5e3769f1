/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collectives as messages between the endpoints (ep_coll.c agrees on them
 * first and after): each endpoint's part of a schedule of grain's own
 * messages, which go device to device where they can (the windows between
 * ranks of a node, the rank's own copies within it).  Whole copies through
 * the host cost a 64 MiB broadcast over four H100s 174 ms; NCCL takes 0.22.
 *
 * An endpoint that fails in a schedule sends its share on empty (0 bytes),
 * so every endpoint runs its part to the end and none waits for a message
 * that will not come; the ranks' agreement after it says who failed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/endpoints/endpoint.h"
#include "runtime/grain_impl.h"
#include "services/log.h"

extern const char grain_ep_reduce_source[];

/* One message of a collective's schedule, started: from or into `bytes` of
 * mem at `at` (its offset in the memory), to or from endpoint `peer`. */
static grain_status_t post(grain_cmdq_t *q, int recv, grain_ep_mem_t *mem, size_t at, size_t bytes, int peer,
                           size_t *got, grain_ep_event_t **e)
{
    *e = NULL;
    return recv ? grain_ep_coll_irecv(q, mem, at, bytes, peer, got, e)
                : grain_ep_coll_isend(q, mem, at, bytes, peer, e);
}

/* Waits for the events started (NULL: none was), each; the first failure. */
static grain_status_t wait_posted(grain_cmdq_t *q, grain_ep_event_t **e, unsigned n, grain_status_t st)
{
    for (unsigned i = 0; i < n; i++)
        if (e[i] != NULL) {
            grain_status_t w = grain_ep_wait(q, e[i]);
            st = st != GRAIN_OK ? st : w;
        }
    return st;
}

static grain_status_t short_message(int from, size_t got, size_t bytes)
{
    return grain_fail(GRAIN_ERR_STATE, "endpoint collective: %zu of %zu bytes came from endpoint %d, which failed "
                                       "before it had them",
                      got, bytes, from);
}

/* A broadcast as a binomial tree of messages from the root (as MPICH's):
 * endpoint r (counted from the root) receives from r less its lowest set
 * bit, then sends to r plus each lower power of two below the job's size.
 * One that failed sends its children nothing (0 bytes), so that every
 * endpoint runs its part of the schedule and none waits for a message that
 * will not come; the ranks' agreement after it says who failed. */
grain_status_t grain_ep_tree_broadcast(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t at, size_t bytes, int root)
{
    int n = q->count, me = (q->id - root + n) % n, mask = 1;
    grain_status_t st = GRAIN_OK;
    for (; mask < n; mask <<= 1)
        if (me & mask) {
            grain_ep_event_t *e = NULL;
            size_t got = 0;
            int parent = (me - mask + root) % n;
            st = wait_posted(q, &e, 1, post(q, 1, mem, at, bytes, parent, &got, &e));
            if (st == GRAIN_OK && got != bytes)
                st = short_message(parent, got, bytes);
            break;
        }
    grain_ep_event_t *sent[8 * sizeof(int)];
    unsigned k = 0;
    grain_status_t sst = GRAIN_OK;
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (me + mask < n) {
            grain_status_t p = post(q, 0, mem, at, st == GRAIN_OK ? bytes : 0, (me + mask + root) % n, NULL,
                                    &sent[k++]);
            sst = sst != GRAIN_OK ? sst : p;
        }
    sst = wait_posted(q, sent, k, sst);
    return st != GRAIN_OK ? st : sst;
}

/* One step of an exchange: `in_bytes` from endpoint `from` into `into` at
 * `in_at`, and `out_bytes` of mem at `out_at` to endpoint `to`, or 0 bytes
 * where the endpoint failed before (`st`), which passes the failure on.
 * Returns the first failure, `st` included. */
static grain_status_t exchange(grain_cmdq_t *q, int from, grain_ep_mem_t *into, size_t in_at, size_t in_bytes, int to,
                               grain_ep_mem_t *mem, size_t out_at, size_t out_bytes, grain_status_t st)
{
    grain_ep_event_t *e[2];
    size_t got = 0;
    grain_status_t r = post(q, 1, into, in_at, in_bytes, from, &got, &e[0]);
    grain_status_t w = post(q, 0, mem, out_at, st == GRAIN_OK ? out_bytes : 0, to, NULL, &e[1]);
    r = wait_posted(q, e, 2, r != GRAIN_OK ? r : w);
    if (st == GRAIN_OK && r == GRAIN_OK && got != in_bytes)
        r = short_message(from, got, in_bytes);
    return st != GRAIN_OK ? st : r;
}

/* A step of a ring: from the left neighbour, to the right one. */
static grain_status_t ring_step(grain_cmdq_t *q, grain_ep_mem_t *into, size_t in_at, size_t in_bytes,
                                grain_ep_mem_t *mem, size_t out_at, size_t out_bytes, grain_status_t st)
{
    int n = q->count;
    return exchange(q, (q->id + n - 1) % n, into, in_at, in_bytes, (q->id + 1) % n, mem, out_at, out_bytes, st);
}

/* An allgather as a ring of messages: at step k endpoint i sends slot i - k
 * to its right and receives slot i - k - 1 from its left, n - 1 steps.  One
 * that failed sends 0 bytes on, as the tree does. */
grain_status_t grain_ep_ring_allgather(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t at, size_t bytes)
{
    int n = q->count, me = q->id;
    grain_status_t st = GRAIN_OK;
    for (int k = 0; k < n - 1; k++) {
        size_t in = (size_t)((me - k - 1 + 2 * n) % n), out = (size_t)((me - k + n) % n);
        st = ring_step(q, mem, at + in * bytes, bytes, mem, at + out * bytes, bytes, st);
    }
    return st;
}

/* The endpoint's reduction kernels on its device, built at the first
 * reduction that moves as messages; one a grain_dtype_t, in its order. */
static grain_status_t reduce_kernel(grain_cmdq_t *q, grain_dtype_t dtype, grain_bkernel_t **k_p)
{
    static const char *const names[3] = {[GRAIN_INT64] = "grain_ep_reduce_i64", [GRAIN_UINT64] = "grain_ep_reduce_u64",
                                         [GRAIN_DOUBLE] = "grain_ep_reduce_f64"};
    grain_status_t st = GRAIN_OK;
    if (q->reduce_program == NULL)
        st = q->bops->program_build(q->backend, grain_ep_reduce_source, "", &q->reduce_program);
    for (unsigned i = 0; st == GRAIN_OK && i < 3; i++)
        if (q->reduce_kernels[i] == NULL)
            st = q->bops->kernel_create(q->reduce_program, names[i], &q->reduce_kernels[i]);
    *k_p = st == GRAIN_OK ? q->reduce_kernels[dtype] : NULL;
    return st;
}

void grain_ep_reduce_release(grain_cmdq_t *q)
{
    for (unsigned i = 0; i < 3; i++)
        if (q->reduce_kernels[i] != NULL)
            q->bops->kernel_release(q->reduce_kernels[i]);
    if (q->reduce_program != NULL)
        q->bops->program_release(q->reduce_program);
    grain_ep_mem_free(q, q->reduce_scratch);
    memset(q->reduce_kernels, 0, sizeof q->reduce_kernels);
    q->reduce_program = NULL;
    q->reduce_scratch = NULL;
}

/* acc = op(acc, in) over `count` elements on q's device, waited for: on the
 * endpoint's message lane, beside its streams, so that a reduction never
 * waits behind the application's commands. */
static grain_status_t reduce_on_device(grain_cmdq_t *q, void *acc, const void *in, size_t count, grain_dtype_t dtype,
                                       grain_op_t op)
{
    if (count == 0)
        return GRAIN_OK;
    grain_bkernel_t *k = NULL;
    grain_status_t st = reduce_kernel(q, dtype, &k);
    uint64_t n = count;
    uint32_t op32 = (uint32_t)op;
    if (st == GRAIN_OK)
        st = q->bops->kernel_set_arg_ptr(k, 0, acc);
    if (st == GRAIN_OK)
        st = q->bops->kernel_set_arg_ptr(k, 1, (void *)(uintptr_t)in);
    if (st == GRAIN_OK)
        st = q->bops->kernel_set_arg(k, 2, sizeof n, &n);
    if (st == GRAIN_OK)
        st = q->bops->kernel_set_arg(k, 3, sizeof op32, &op32);
    size_t local = 256, global = (count + local - 1) / local * local;
    if (st != GRAIN_OK)
        return st;
    if (q->streams_async) {
        st = q->bops->launch_lane(k, GRAIN_EP_MESSAGE_LANE, 1, &global, &local);
        return st == GRAIN_OK ? q->bops->copy_wait(q->backend, GRAIN_EP_MESSAGE_LANE) : st;
    }
    st = q->bops->launch(k, 1, &global, &local);
    return st == GRAIN_OK ? q->bops->synchronize(q->backend) : st;
}

/* Scratch device memory of at least `bytes` for a chunk that arrives,
 * kept for the endpoint's next reductions. */
static grain_status_t scratch(grain_cmdq_t *q, size_t bytes, grain_ep_mem_t **m_p)
{
    if (q->reduce_scratch == NULL || grain_ep_mem_size(q->reduce_scratch) < bytes) {
        grain_ep_mem_free(q, q->reduce_scratch);
        q->reduce_scratch = NULL;
        grain_status_t st = grain_ep_mem_alloc(q, bytes > 0 ? bytes : 1, GRAIN_EP_READ | GRAIN_EP_WRITE |
                                                                               GRAIN_EP_NO_SHADOW,
                                               &q->reduce_scratch);
        if (st != GRAIN_OK)
            return st;
    }
    *m_p = q->reduce_scratch;
    return GRAIN_OK;
}

/* Chunk j of `count` elements split over n endpoints: its first element and
 * its length. */
static void chunk(size_t count, int n, int j, size_t *first, size_t *len)
{
    *first = count * (size_t)j / (size_t)n;
    *len = count * (size_t)(j + 1) / (size_t)n - *first;
}

/* An allreduce as a ring (reduce-scatter, then allgather): at reduce step k
 * endpoint i sends chunk i - k to its right, receives chunk i - k - 1 from
 * its left into scratch memory and reduces it into its own; after n - 1
 * steps it holds chunk i + 1 whole, and n - 1 allgather steps pass the
 * whole chunks round.  Each chunk is reduced in one order, along the ring,
 * so every endpoint ends with the same bits. */
grain_status_t grain_ep_ring_allreduce(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t at, size_t count,
                                       grain_dtype_t dtype, grain_op_t op)
{
    int n = q->count, me = q->id;
    size_t most = (count + (size_t)n - 1) / (size_t)n;
    grain_ep_mem_t *tmp = NULL;
    grain_status_t st = scratch(q, most * 8, &tmp);
    for (int k = 0; k < 2 * (n - 1); k++) {
        int reducing = k < n - 1, step = reducing ? k : k - (n - 1);
        int out = ((me - step + (reducing ? 0 : 1)) % n + n) % n, in = ((out - 1) % n + n) % n;
        size_t out_first, out_len, in_first, in_len;
        chunk(count, n, out, &out_first, &out_len);
        chunk(count, n, in, &in_first, &in_len);
        /* Without scratch memory the chunk lands in place, its bytes lost
         * to a reduction that fails anyway: the left neighbour's message
         * must still be received. */
        int scratched = reducing && tmp != NULL;
        st = ring_step(q, scratched ? tmp : mem, scratched ? 0 : at + in_first * 8, in_len * 8, mem,
                       at + out_first * 8, out_len * 8, st);
        if (st == GRAIN_OK && reducing)
            st = reduce_on_device(q, (char *)mem->device + at + in_first * 8, tmp->device, in_len, dtype, op);
    }
    return st;
}

/* The messages between a root and every other endpoint, a slot each: a
 * gather's into the root's slots, a scatter's (`scatter`) out of them.
 * Each other endpoint sends or receives its own slot; the root posts a
 * batch of its messages at a time, so that nothing is allocated, and once
 * it failed sends the rest their slots empty. */
grain_status_t grain_ep_root_slots(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t at, size_t bytes, int root,
                                   int scatter)
{
    int n = q->count, me = q->id;
    grain_status_t st = GRAIN_OK;
    if (me != root) {
        grain_ep_event_t *e = NULL;
        size_t got = 0;
        st = wait_posted(q, &e, 1, post(q, scatter, mem, at + (size_t)me * bytes, bytes, root, &got, &e));
        return st == GRAIN_OK && scatter && got != bytes ? short_message(root, got, bytes) : st;
    }
    enum { BATCH = 32 };
    grain_ep_event_t *e[BATCH];
    size_t got[BATCH];
    int peer[BATCH];
    for (int next = 0; next < n;) {
        unsigned k = 0;
        for (; next < n && k < BATCH; next++) {
            if (next == me)
                continue;
            peer[k] = next;
            got[k] = 0;
            grain_status_t p = post(q, !scatter, mem, at + (size_t)next * bytes, st == GRAIN_OK || !scatter ? bytes : 0,
                                    next, &got[k], &e[k]);
            k++;
            st = st != GRAIN_OK ? st : p;
        }
        st = wait_posted(q, e, k, st);
        for (unsigned i = 0; st == GRAIN_OK && !scatter && i < k; i++)
            if (got[i] != bytes)
                st = short_message(peer[i], got[i], bytes);
    }
    return st;
}

/* An alltoall in place as pairwise exchanges: at step k (0 to n - 1)
 * endpoint i trades with endpoint j = k - i (mod n), whose step k is a
 * trade with i: its slot j goes to j, and j's slot i comes into slot j.
 * Every endpoint waits only for the partner of its step, which has reached
 * that step too, so none waits for another.  What arrives waits in scratch
 * memory until the slot it replaces has left.  Without scratch memory the
 * endpoint receives with no room, which takes and drops the message: its
 * memory keeps what it had. */
grain_status_t grain_ep_pairwise_alltoall(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t at, size_t bytes)
{
    int n = q->count, me = q->id;
    grain_ep_mem_t *tmp = NULL;
    grain_status_t st = scratch(q, bytes, &tmp);
    for (int k = 0; k < n; k++) {
        int j = ((k - me) % n + n) % n;
        if (j == me)
            continue;
        size_t slot = at + (size_t)j * bytes;
        st = exchange(q, j, tmp != NULL ? tmp : mem, tmp != NULL ? 0 : slot, tmp != NULL ? bytes : 0, j, mem, slot,
                      bytes, st);
        if (st == GRAIN_OK)
            st = grain_ep_copy_now(q, (char *)mem->device + slot, tmp->device, bytes);
    }
    return st;
}

/* A reduce as a binomial tree into `root` (MPICH's order): endpoint r
 * (counted from the root) reduces what its children r + 1, r + 2, r + 4 ...
 * below its lowest set bit send into its own elements, then sends the
 * result to r less that bit.  The root reduces into its memory; another
 * endpoint with children, whose memory the call only reads, into scratch
 * memory holding a copy of its elements (the scratch's second half; the
 * children's arrive in its first); a leaf sends its memory as it is.
 * Without scratch memory the children's messages are received with no
 * room, which takes and drops them. */
grain_status_t grain_ep_tree_reduce(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t at, size_t count,
                                    grain_dtype_t dtype, grain_op_t op, int root)
{
    int n = q->count, me = (q->id - root + n) % n;
    int low_bit = me == 0 ? n : me & -me, children = low_bit > 1 && me + 1 < n;
    size_t bytes = count * 8, acc_at = at;
    grain_ep_mem_t *tmp = NULL, *acc = mem;
    grain_status_t st = children ? scratch(q, me == 0 ? bytes : 2 * bytes, &tmp) : GRAIN_OK;
    if (st == GRAIN_OK && children && me != 0) {
        acc = tmp;
        acc_at = bytes;
        st = grain_ep_copy_now(q, (char *)tmp->device + bytes, (const char *)mem->device + at, bytes);
    }
    for (int mask = 1; mask < low_bit && me + mask < n; mask <<= 1) {
        int child = (me + mask + root) % n;
        grain_ep_event_t *e = NULL;
        size_t got = 0;
        grain_status_t r = post(q, 1, tmp != NULL ? tmp : mem, tmp != NULL ? 0 : at, tmp != NULL ? bytes : 0, child,
                                &got, &e);
        r = wait_posted(q, &e, 1, r);
        if (st == GRAIN_OK && r == GRAIN_OK && got != bytes)
            r = short_message(child, got, bytes);
        st = st != GRAIN_OK ? st : r;
        if (st == GRAIN_OK)
            st = reduce_on_device(q, (char *)acc->device + acc_at, tmp->device, count, dtype, op);
    }
    if (me != 0) {
        grain_ep_event_t *e = NULL;
        grain_status_t w = post(q, 0, acc, acc_at, st == GRAIN_OK ? bytes : 0, (me - low_bit + root) % n, NULL, &e);
        w = wait_posted(q, &e, 1, w);
        st = st != GRAIN_OK ? st : w;
    }
    return st;
}
