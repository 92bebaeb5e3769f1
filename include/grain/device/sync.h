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
 * transport, the apply kernels must find room on the device beside the
 * waiting kernel, so a kernel that waits should not fill it.  On a CPU
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

GRAIN_INLINE int grain_cmp_u64_(grain_u64 seen, int cmp, grain_u64 value)
{
    switch (cmp) {
    case GRAIN_CMP_GT:
        return seen > value;
    case GRAIN_CMP_GE:
        return seen >= value;
    case GRAIN_CMP_LT:
        return seen < value;
    case GRAIN_CMP_LE:
        return seen <= value;
    default: /* equality does not care about signs */
        return grain_cmp_i64_((grain_i64)seen, cmp, (grain_i64)value);
    }
}

/* Whether a lane may wait on `word` (`width` bytes) with `cmp`; reports the
 * first bad call of the kernel otherwise. */
GRAIN_INLINE int grain_sync_valid_(const grain_wg_t *wg, GRAIN_GLOBAL void *word, grain_u32 width, int cmp)
{
    GRAIN_GLOBAL grain_dev_t *ctx = wg->ctx;
    grain_u64 offset = (grain_u64)((GRAIN_GLOBAL char *)word - ctx->heap);
    grain_u64 item = grain_global_linear_id();
    if (offset > ctx->heap_size - width || offset % width != 0) {
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

GRAIN_INLINE grain_i64 grain_sync_load_(GRAIN_GLOBAL void *word, grain_u32 width)
{
    if (width == 8)
        return (grain_i64)grain_atomic_load_acquire_u64(word);
    return (grain_i64)(grain_i32)grain_atomic_load_acquire_u32(word);
}

/* Whether the word satisfies the comparison now (one load). */
GRAIN_INLINE int grain_test64(const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *ivar, int cmp, grain_i64 value,
                              int active)
{
    return active && grain_sync_valid_(wg, ivar, 8, cmp) && grain_cmp_i64_(grain_sync_load_(ivar, 8), cmp, value);
}

GRAIN_INLINE int grain_test32(const grain_wg_t *wg, GRAIN_GLOBAL grain_i32 *ivar, int cmp, grain_i32 value,
                              int active)
{
    return active && grain_sync_valid_(wg, ivar, 4, cmp) && grain_cmp_i64_(grain_sync_load_(ivar, 4), cmp, value);
}

/* Returns once the word satisfies the comparison. */
GRAIN_INLINE void grain_wait_until64(const grain_wg_t *wg, GRAIN_GLOBAL grain_i64 *ivar, int cmp, grain_i64 value,
                                     int active)
{
    if (!active || !grain_sync_valid_(wg, ivar, 8, cmp))
        return;
    while (!grain_cmp_i64_(grain_sync_load_(ivar, 8), cmp, value))
        grain_poll_nap();
}

GRAIN_INLINE void grain_wait_until32(const grain_wg_t *wg, GRAIN_GLOBAL grain_i32 *ivar, int cmp, grain_i32 value,
                                     int active)
{
    if (!active || !grain_sync_valid_(wg, ivar, 4, cmp))
        return;
    while (!grain_cmp_i64_(grain_sync_load_(ivar, 4), cmp, value))
        grain_poll_nap();
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

#endif /* GRAIN_DEVICE_SYNC_H */
