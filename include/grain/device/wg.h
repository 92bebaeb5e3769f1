/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Diverged work-group-level reduce and prefix-sum (Gravel, section 5.2).
 *
 * Every work-item of the work-group calls these with the same arguments
 * except `v` and `active`; inactive lanes contribute the non-interfering
 * value of the operation, so divergent code keeps working as long as the call
 * itself is reached by all lanes (software predication).
 *
 * One scan over the work-group serves every operation.  It needs no native
 * work-group collectives, which PoCL and many OpenCL drivers lack: OpenCL
 * runs a Hillis-Steele scan in local memory (log2(n) + 2 barriers); CUDA and
 * HIP scan each warp with shuffles and the warps' totals in one warp (three
 * barriers).
 */
#ifndef GRAIN_DEVICE_WG_H
#define GRAIN_DEVICE_WG_H

#include "grain/device/ctx.h"

#ifndef GRAIN_MAX_WG
#define GRAIN_MAX_WG 256
#endif

/* Local scratch: the scan double-buffers; the send path reuses them for its
 * per-segment tickets. */
#define GRAIN_WG_SCRATCH_WORDS (2 * GRAIN_MAX_WG)

#define GRAIN_OP_ADD 0
#define GRAIN_OP_MAX 1
#define GRAIN_OP_MIN 2

#define GRAIN_I64_MAX ((grain_i64)0x7fffffffffffffff)
#define GRAIN_I64_MIN (-GRAIN_I64_MAX - 1)

GRAIN_INLINE grain_i64 grain_op_identity_(int op)
{
    return op == GRAIN_OP_ADD ? 0 : op == GRAIN_OP_MAX ? GRAIN_I64_MIN : GRAIN_I64_MAX;
}

GRAIN_INLINE grain_i64 grain_op_apply_(int op, grain_i64 a, grain_i64 b)
{
    if (op == GRAIN_OP_ADD)
        return a + b;
    if (op == GRAIN_OP_MAX)
        return a > b ? a : b;
    return a < b ? a : b;
}

/* What every work-item of a work-group holds to call the device API. */
typedef struct grain_wg {
    GRAIN_GLOBAL grain_dev_t *ctx;
    GRAIN_LOCAL grain_i64 *scratch; /* GRAIN_WG_SCRATCH_WORDS words */
    GRAIN_LOCAL grain_u32 *claims;  /* per reservation segment: columns claimed; 0 between sends */
    GRAIN_LOCAL grain_u32 *in_place; /* per segment: messages applied to this rank without the queue; 0 between sends */
    GRAIN_LOCAL grain_u32 *direct;   /* per segment: messages applied to other ranks' mapped heaps (GRAIN_PEER_DIRECT) */
} grain_wg_t;

#if !defined(GRAIN_DIALECT_HOST)
#if defined(GRAIN_DIALECT_GPU)
/* Inclusive scan of x over the present lanes of the caller's warp. */
GRAIN_INLINE grain_i64 grain_sg_scan_(int op, grain_i64 x)
{
    grain_u32 lane = grain_sg_lane();
    for (grain_u32 d = 1; d < grain_sg_width(); d <<= 1) {
        grain_i64 y = grain_sg_shfl_up(x, d);
        if (lane >= d)
            x = grain_op_apply_(op, y, x);
    }
    return x;
}
#endif

/*
 * Inclusive scan of `v` over the active lanes of the work-group; the total is
 * stored in *total_p.  All lanes must call it.
 */
GRAIN_INLINE grain_i64 grain_wg_scan_(GRAIN_LOCAL grain_i64 *scratch, int op, grain_i64 v, int active,
                                      grain_i64 *total_p)
{
#if defined(GRAIN_DIALECT_GPU)
    grain_u32 width = grain_sg_width(), lane = grain_sg_lane();
    grain_u32 warp = grain_local_linear_id() / width;
    grain_u32 nwarps = (grain_local_linear_size() + width - 1) / width;
    /* One warp scans the warps' totals: at most width of them (1024 lanes
     * of 32-wide warps), which every GPU's work-group limit keeps to. */
    if (nwarps <= width) {
        GRAIN_LOCAL grain_i64 *totals = scratch;
        grain_i64 x = grain_sg_scan_(op, active ? v : grain_op_identity_(op));
        if (lane == grain_sg_present() - 1)
            totals[warp] = x;
        grain_wg_barrier();
        if (warp == 0) {
            grain_i64 t = grain_sg_scan_(op, lane < nwarps ? totals[lane] : grain_op_identity_(op));
            if (lane < nwarps)
                totals[GRAIN_MAX_WG + lane] = t;
        }
        grain_wg_barrier();
        if (warp > 0)
            x = grain_op_apply_(op, totals[GRAIN_MAX_WG + warp - 1], x);
        *total_p = totals[GRAIN_MAX_WG + nwarps - 1];
        grain_wg_barrier();
        return x;
    }
#endif
    grain_u32 lid = grain_local_linear_id();
    grain_u32 n = grain_local_linear_size();
    GRAIN_LOCAL grain_i64 *a = scratch;
    GRAIN_LOCAL grain_i64 *b = scratch + GRAIN_MAX_WG;
    grain_i64 x = active ? v : grain_op_identity_(op);

    a[lid] = x;
    grain_wg_barrier();
    /* The loop bound is uniform, so every lane reaches every barrier. */
    for (grain_u32 d = 1; d < n; d <<= 1) {
        if (lid >= d)
            x = grain_op_apply_(op, a[lid - d], x);
        b[lid] = x;
        grain_wg_barrier();
        GRAIN_LOCAL grain_i64 *t = a;
        a = b;
        b = t;
    }
    *total_p = a[n - 1];
    grain_wg_barrier();
    return x;
}

GRAIN_INLINE grain_i64 grain_wg_reduce_(const grain_wg_t *wg, int op, grain_i64 v, int active)
{
    grain_i64 total;
    grain_wg_scan_(wg->scratch, op, v, active, &total);
    return total;
}

/* The reduction over the active lanes, returned to every lane. */
GRAIN_INLINE grain_i64 grain_wg_reduce_add(const grain_wg_t *wg, grain_i64 v, int active)
{
    return grain_wg_reduce_(wg, GRAIN_OP_ADD, v, active);
}

GRAIN_INLINE grain_i64 grain_wg_reduce_max(const grain_wg_t *wg, grain_i64 v, int active)
{
    return grain_wg_reduce_(wg, GRAIN_OP_MAX, v, active);
}

GRAIN_INLINE grain_i64 grain_wg_reduce_min(const grain_wg_t *wg, grain_i64 v, int active)
{
    return grain_wg_reduce_(wg, GRAIN_OP_MIN, v, active);
}

/* Prefix sums over the active lanes, in lane order; inactive lanes get 0. */
GRAIN_INLINE grain_i64 grain_wg_scan_inclusive_add(const grain_wg_t *wg, grain_i64 v, int active)
{
    grain_i64 total;
    grain_i64 x = grain_wg_scan_(wg->scratch, GRAIN_OP_ADD, v, active, &total);
    return active ? x : 0;
}

GRAIN_INLINE grain_i64 grain_wg_scan_exclusive_add(const grain_wg_t *wg, grain_i64 v, int active)
{
    grain_i64 total;
    grain_i64 x = grain_wg_scan_(wg->scratch, GRAIN_OP_ADD, v, active, &total);
    return active ? x - v : 0;
}
#endif /* !GRAIN_DIALECT_HOST */

#endif /* GRAIN_DEVICE_WG_H */
