/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Point-to-point synchronization on this rank's heap words, as OpenSHMEM's
 * shmem_wait_until, shmem_test and shmem_signal_wait_until: a lane waits
 * for (or tests) a word of its own symmetric heap that other ranks, or
 * other work-items, change through grain's messages.
 *
 *   grain_wait_until64(&wg, &arrivals, GRAIN_CMP_GE, expected, active);
 *   ... what the senders wrote before their messages that changed the word
 *       is visible here, if they ordered it so (see below) ...
 *
 * A lane that passes active = 0 returns at once (test: 0); the calls hold
 * no barrier, so lanes may call them apart.  A word is compared as the
 * signed integer its type is (the signal word: unsigned).  A lane that
 * returns has seen the word satisfy the comparison with an acquire load at
 * system scope: its later reads see whatever the writer released before
 * the write that satisfied it (the direct path's and the apply paths'
 * writes are relaxed atomics; what orders a message after earlier data is
 * the memory model of grain/grain.h).
 *
 * Progress: the word changes while the kernel spins only if whoever applies
 * the messages runs meanwhile: always on the direct path and where host
 * threads apply (GRAIN_APPLY=host); with GRAIN_APPLY=device through the
 * transport, the resident apply agent (GRAIN_APPLY_AGENT, CUDA and HIP)
 * launched before the kernel does; without it, the apply kernels must find
 * room on the device beside the waiting kernel, so a kernel that waits
 * should not fill it.  On a CPU
 * device, a work-group waits for messages only from other ranks or from
 * work-groups that already ran: its workers run work-groups one after the
 * other.
 *
 * A word outside the heap, or not aligned to its width, is a device error
 * (GRAIN_ERR_BAD_OFFSET at the next grain_wait, naming the rank and the
 * work-item); the lane then returns at once and test answers 0.
 */
#ifndef GRAIN_DEVICE_SYNC_H
#define GRAIN_DEVICE_SYNC_H

/* Comparisons, OpenSHMEM's SHMEM_CMP_*. */
#define GRAIN_CMP_EQ 0
#define GRAIN_CMP_NE 1
#define GRAIN_CMP_GT 2
#define GRAIN_CMP_GE 3
#define GRAIN_CMP_LT 4
#define GRAIN_CMP_LE 5

/* Whether `seen cmp value` holds; an unknown comparison never does (and
 * is reported by the caller). */
GRAIN_INLINE int grain_cmp_i64_(grain_i64 seen, int cmp, grain_i64 value)
{
    switch (cmp) {
    case GRAIN_CMP_EQ:
        return seen == value;
    case GRAIN_CMP_NE:
        return seen != value;
    case GRAIN_CMP_GT:
        return seen > value;
    case GRAIN_CMP_GE:
        return seen >= value;
    case GRAIN_CMP_LT:
        return seen < value;
    case GRAIN_CMP_LE:
        return seen <= value;
    default:
        return 0;
    }
}

/* Unsigned: the signed comparison of both words with their top bit
 * flipped. */
GRAIN_INLINE int grain_cmp_u64_(grain_u64 seen, int cmp, grain_u64 value)
{
    grain_u64 top = (grain_u64)1 << 63;
    return grain_cmp_i64_((grain_i64)(seen ^ top), cmp, (grain_i64)(value ^ top));
}

/* Whether a lane may wait on `word` (`width` bytes) with `cmp`; reports the
 * first bad call of the kernel otherwise. */
GRAIN_INLINE int grain_sync_valid_(const grain_wg_t *wg, GRAIN_GLOBAL void *word, grain_u32 width, int cmp)
{
    GRAIN_GLOBAL grain_dev_t *ctx = wg->ctx;
    grain_u64 offset = (grain_u64)((GRAIN_GLOBAL char *)word - ctx->heap);
    grain_u64 item = grain_global_linear_id();
    if (!grain_heap_word_(ctx, offset, width)) {
        grain_dev_error(ctx, GRAIN_DEV_ERR_BAD_WAIT, width, (grain_i32)ctx->my_pe, offset, item);
        return 0;
    }
    if (cmp < GRAIN_CMP_EQ || cmp > GRAIN_CMP_LE) {
        grain_dev_error(ctx, GRAIN_DEV_ERR_BAD_CMP, width, (grain_i32)ctx->my_pe, (grain_u64)(grain_i64)cmp,
                        item);
        return 0;
    }
    return 1;
}

/* Acquire at every poll, unlike grain's own polls (grain/device/port.h):
 * waits are on an application's critical path, and relaxed polls with one
 * acquire fence at the end took sync_latency's local put+wait round trip
 * from 1.1 to 2.7 us on an H200.  The price is that many work-items waiting
 * at once slow the device's other work. */
GRAIN_INLINE grain_i64 grain_sync_load_(GRAIN_GLOBAL void *word, grain_u32 width)
{
    if (width == 8)
        return (grain_i64)grain_atomic_load_acquire_u64(word);
    return (grain_i64)(grain_i32)grain_atomic_load_acquire_u32(word);
}

/* Waits on a signal word (unsigned) and returns the value that satisfied
 * the comparison: OpenSHMEM's shmem_signal_wait_until.  An inactive lane,
 * or one refused, gets 0. */
GRAIN_INLINE grain_u64 grain_signal_wait_until(const grain_wg_t *wg, GRAIN_GLOBAL grain_u64 *sig_addr, int cmp,
                                               grain_u64 value, int active)
{
    if (!active || !grain_sync_valid_(wg, sig_addr, 8, cmp))
        return 0;
    grain_u64 seen;
    while (!grain_cmp_u64_(seen = (grain_u64)grain_sync_load_(sig_addr, 8), cmp, value))
        grain_poll_nap();
    return seen;
}

/*
 * Several words at once, as OpenSHMEM 1.5's _all, _any and _some: `ivars`
 * is an array of `nelems` words of this rank's heap; `status` (0 for none)
 * excludes word i when status[i] is not 0; `status` and `indices` are
 * global memory (device memory or the heap: an OpenCL kernel cannot pass
 * private arrays).  An inactive lane, or one refused for a bad word,
 * returns what "nothing satisfied" means: test_all 0, _any GRAIN_NO_INDEX,
 * _some 0.
 *
 *   grain_test_all64    whether every word left in satisfies the comparison
 *   grain_test_any64    the index of one that does, else GRAIN_NO_INDEX
 *   grain_test_some64   how many do, their indices in `indices`
 *   grain_wait_until_all64, _any64, _some64: the same, waiting until the
 *   answer is 1, an index, or at least 1 (_any and _some return at once,
 *   GRAIN_NO_INDEX or 0, when every word is excluded)
 *
 * and OpenSHMEM 1.5's _vector forms of all six (grain_test_all_vector64,
 * ..., grain_wait_until_some_vector32), which compare word i with
 * values[i] instead of one value: `values`, nelems words of the same
 * width, is global memory too.
 */
#define GRAIN_NO_INDEX (~(grain_u64)0)

#define GRAIN_SCAN_ALL 0
#define GRAIN_SCAN_ANY 1
#define GRAIN_SCAN_SOME 2

/* One look at every word left in, against `value` or, where `values` is
 * not 0, against its word of the same index: for _all, the words that do
 * not satisfy (0: all do); for _any, one index that does (GRAIN_NO_INDEX:
 * none); for _some, how many do.  *open_p: the words not excluded. */
GRAIN_INLINE grain_u64 grain_sync_scan_(GRAIN_GLOBAL void *ivars, grain_u32 width, grain_u64 nelems,
                                        GRAIN_GLOBAL const grain_i32 *status, int cmp, grain_i64 value,
                                        GRAIN_GLOBAL const void *values, int mode, GRAIN_GLOBAL grain_u64 *indices,
                                        grain_u64 *open_p)
{
    grain_u64 found = 0, open = 0;
    for (grain_u64 i = 0; i < nelems; i++) {
        if (status != 0 && status[i] != 0)
            continue;
        open++;
        grain_i64 against = values == 0 ? value
                            : width == 8 ? ((GRAIN_GLOBAL const grain_i64 *)values)[i]
                                         : (grain_i64)((GRAIN_GLOBAL const grain_i32 *)values)[i];
        int ok = grain_cmp_i64_(grain_sync_load_((GRAIN_GLOBAL char *)ivars + i * width, width), cmp, against);
        if (mode == GRAIN_SCAN_ALL) {
            found += !ok;
        } else if (ok && mode == GRAIN_SCAN_ANY) {
            *open_p = open;
            return i;
        } else if (ok) {
            indices[found++] = i;
        }
    }
    *open_p = open;
    return mode == GRAIN_SCAN_ANY ? GRAIN_NO_INDEX : found;
}

/* Whether a lane may look at the array: every word in the heap and
 * aligned, and the comparison known. */
GRAIN_INLINE int grain_sync_valid_all_(const grain_wg_t *wg, GRAIN_GLOBAL void *ivars, grain_u32 width,
                                       grain_u64 nelems, int cmp)
{
    if (nelems == 0)
        return 1;
    GRAIN_GLOBAL char *last = (GRAIN_GLOBAL char *)ivars + (nelems - 1) * width;
    if (nelems > wg->ctx->heap_size / width) { /* longer than the heap: the last word is outside */
        grain_dev_error(wg->ctx, GRAIN_DEV_ERR_BAD_WAIT, width, (grain_i32)wg->ctx->my_pe,
                        (grain_u64)(last - wg->ctx->heap), grain_global_linear_id());
        return 0;
    }
    return grain_sync_valid_(wg, ivars, width, cmp) && grain_sync_valid_(wg, last, width, cmp);
}

/* The six calls over `width`-byte words; `wait` says whether to wait. */
GRAIN_INLINE grain_u64 grain_sync_many_(const grain_wg_t *wg, GRAIN_GLOBAL void *ivars, grain_u32 width,
                                        grain_u64 nelems, GRAIN_GLOBAL grain_u64 *indices,
                                        GRAIN_GLOBAL const grain_i32 *status, int cmp, grain_i64 value,
                                        GRAIN_GLOBAL const void *values, int mode, int wait, int active)
{
    grain_u64 nothing = mode == GRAIN_SCAN_ANY ? GRAIN_NO_INDEX : 0;
    if (!active || !grain_sync_valid_all_(wg, ivars, width, nelems, cmp))
        return nothing;
    for (;;) {
        grain_u64 open,
            r = grain_sync_scan_(ivars, width, nelems, status, cmp, value, values, mode, indices, &open);
        int done = mode == GRAIN_SCAN_ALL ? r == 0 : mode == GRAIN_SCAN_ANY ? r != GRAIN_NO_INDEX : r > 0;
        if (mode == GRAIN_SCAN_ALL && !wait)
            return done;
        if (done || !wait || open == 0)
            return mode == GRAIN_SCAN_ALL ? 1 : r;
        grain_poll_nap();
    }
}

/* The six calls, for one value (V: `type value`, ARGS: value, 0) or one a
 * word (the _vector forms, V: `GRAIN_GLOBAL const type *values`, ARGS: 0,
 * values). */
#define GRAIN_SYNC_MANY_(bits, type, sfx, V, ARGS)                                                                  \
    GRAIN_INLINE int grain_test_all##sfx##bits(const grain_wg_t *wg, GRAIN_GLOBAL type *ivars, grain_u64 nelems,    \
                                               GRAIN_GLOBAL const grain_i32 *status, int cmp, V, int active)        \
    {                                                                                                               \
        return (int)grain_sync_many_(wg, ivars, bits / 8, nelems, 0, status, cmp, ARGS, GRAIN_SCAN_ALL, 0, active); \
    }                                                                                                               \
    GRAIN_INLINE grain_u64 grain_test_any##sfx##bits(const grain_wg_t *wg, GRAIN_GLOBAL type *ivars,                \
                                                     grain_u64 nelems, GRAIN_GLOBAL const grain_i32 *status,        \
                                                     int cmp, V, int active)                                        \
    {                                                                                                               \
        return grain_sync_many_(wg, ivars, bits / 8, nelems, 0, status, cmp, ARGS, GRAIN_SCAN_ANY, 0, active);     \
    }                                                                                                               \
    GRAIN_INLINE grain_u64 grain_test_some##sfx##bits(const grain_wg_t *wg, GRAIN_GLOBAL type *ivars,               \
                                                      grain_u64 nelems, GRAIN_GLOBAL grain_u64 *indices,            \
                                                      GRAIN_GLOBAL const grain_i32 *status, int cmp, V, int active) \
    {                                                                                                               \
        return grain_sync_many_(wg, ivars, bits / 8, nelems, indices, status, cmp, ARGS, GRAIN_SCAN_SOME, 0,       \
                                active);                                                                            \
    }                                                                                                               \
    GRAIN_INLINE void grain_wait_until_all##sfx##bits(const grain_wg_t *wg, GRAIN_GLOBAL type *ivars,               \
                                                      grain_u64 nelems, GRAIN_GLOBAL const grain_i32 *status,       \
                                                      int cmp, V, int active)                                       \
    {                                                                                                               \
        (void)grain_sync_many_(wg, ivars, bits / 8, nelems, 0, status, cmp, ARGS, GRAIN_SCAN_ALL, 1, active);      \
    }                                                                                                               \
    GRAIN_INLINE grain_u64 grain_wait_until_any##sfx##bits(const grain_wg_t *wg, GRAIN_GLOBAL type *ivars,          \
                                                           grain_u64 nelems, GRAIN_GLOBAL const grain_i32 *status,  \
                                                           int cmp, V, int active)                                  \
    {                                                                                                               \
        return grain_sync_many_(wg, ivars, bits / 8, nelems, 0, status, cmp, ARGS, GRAIN_SCAN_ANY, 1, active);     \
    }                                                                                                               \
    GRAIN_INLINE grain_u64 grain_wait_until_some##sfx##bits(const grain_wg_t *wg, GRAIN_GLOBAL type *ivars,         \
                                                            grain_u64 nelems, GRAIN_GLOBAL grain_u64 *indices,      \
                                                            GRAIN_GLOBAL const grain_i32 *status, int cmp, V,       \
                                                            int active)                                             \
    {                                                                                                               \
        return grain_sync_many_(wg, ivars, bits / 8, nelems, indices, status, cmp, ARGS, GRAIN_SCAN_SOME, 1,       \
                                active);                                                                            \
    }
#define GRAIN_SYNC_ONE_VALUE_(value) (grain_i64)(value), 0
#define GRAIN_SYNC_A_VALUE_EACH_(values) 0, (values)
GRAIN_SYNC_MANY_(64, grain_i64, , grain_i64 value, GRAIN_SYNC_ONE_VALUE_(value))
GRAIN_SYNC_MANY_(32, grain_i32, , grain_i32 value, GRAIN_SYNC_ONE_VALUE_(value))
GRAIN_SYNC_MANY_(64, grain_i64, _vector, GRAIN_GLOBAL const grain_i64 *values, GRAIN_SYNC_A_VALUE_EACH_(values))
GRAIN_SYNC_MANY_(32, grain_i32, _vector, GRAIN_GLOBAL const grain_i32 *values, GRAIN_SYNC_A_VALUE_EACH_(values))

/* One word: whether it satisfies the comparison now (one load), and
 * returning once it does; an array of one. */
#define GRAIN_SYNC_ONE_(bits, type)                                                                                 \
    GRAIN_INLINE int grain_test##bits(const grain_wg_t *wg, GRAIN_GLOBAL type *ivar, int cmp, type value,          \
                                      int active)                                                                   \
    {                                                                                                               \
        return grain_test_all##bits(wg, ivar, 1, 0, cmp, value, active);                                            \
    }                                                                                                               \
    GRAIN_INLINE void grain_wait_until##bits(const grain_wg_t *wg, GRAIN_GLOBAL type *ivar, int cmp, type value,   \
                                             int active)                                                            \
    {                                                                                                               \
        grain_wait_until_all##bits(wg, ivar, 1, 0, cmp, value, active);                                             \
    }
GRAIN_SYNC_ONE_(64, grain_i64)
GRAIN_SYNC_ONE_(32, grain_i32)

#endif /* GRAIN_DEVICE_SYNC_H */
