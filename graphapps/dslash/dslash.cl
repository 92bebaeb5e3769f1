/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The kernels of the dslash app (GMH, section V): a staggered-style
 * hopping operator on a 4-D periodic lattice of colour vectors,
 *
 *   (D psi)(x) = 1/2 sum_mu [ U_mu(x) psi(x + mu) - U_mu(x - mu)^+ psi(x - mu) ],
 *
 * 3x3 complex links times 3-component complex vectors, and the pieces of
 * conjugate gradient on A = m^2 - D^2 (D is anti-Hermitian for any links,
 * so A is Hermitian with eigenvalues >= m^2).
 *
 * A rank's endpoint holds t-slices [t0, t0 + lt) of the lattice; site
 * s = ((t * lz + z) * ly + y) * lx + x of its slab has 6 doubles of a
 * vector (re, im of 3 colours) and 4 x 18 of links (mu = x, y, z, t; row
 * major, re and im).  The slices beside the slab arrive as halos:
 * halo_lo (t = -1) with its t-links (u_below), halo_hi (t = lt).
 */
#include "link.h"

/* out = a * y + b * (D psi) on the slab's slices [t_begin, t_end): the
 * interior (slices whose t-neighbours are in the slab) while the halos
 * travel, the surface once they are in. */
GRAIN_KERNEL void dslash(GRAIN_GLOBAL double *out, GRAIN_GLOBAL const double *y, GRAIN_GLOBAL const double *psi,
                         GRAIN_GLOBAL const double *u, GRAIN_GLOBAL const double *u_below,
                         GRAIN_GLOBAL const double *halo_lo, GRAIN_GLOBAL const double *halo_hi, grain_u32 lx,
                         grain_u32 ly, grain_u32 lz, grain_u32 lt, grain_u32 t_begin, grain_u32 t_end, double a,
                         double b)
{
    grain_u64 v3 = (grain_u64)lx * ly * lz;
    grain_u64 i = grain_global_linear_id();
    if (i >= (grain_u64)(t_end - t_begin) * v3)
        return;
    grain_u64 s = (grain_u64)t_begin * v3 + i, s3 = s % v3;
    grain_u32 x = (grain_u32)(s3 % lx), yy = (grain_u32)(s3 / lx % ly), z = (grain_u32)(s3 / lx / ly);
    grain_u32 t = (grain_u32)(s / v3);
    grain_u32 coord[3] = {x, yy, z}, extent[3] = {lx, ly, lz};
    grain_u64 step[3] = {1, lx, (grain_u64)lx * ly};
    double acc[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int mu = 0; mu < 3; mu++) {
        grain_u64 fwd = coord[mu] + 1 == extent[mu] ? s - (extent[mu] - 1) * step[mu] : s + step[mu];
        grain_u64 bwd = coord[mu] == 0 ? s + (extent[mu] - 1) * step[mu] : s - step[mu];
        link_times(u + (s * 4 + mu) * DSLASH_LINK, psi + fwd * DSLASH_VEC, 1.0, 0, acc);
        link_times(u + (bwd * 4 + mu) * DSLASH_LINK, psi + bwd * DSLASH_VEC, -1.0, 1, acc);
    }
    GRAIN_GLOBAL const double *up = t + 1 < lt ? psi + (s + v3) * DSLASH_VEC : halo_hi + s3 * DSLASH_VEC;
    link_times(u + (s * 4 + 3) * DSLASH_LINK, up, 1.0, 0, acc);
    if (t > 0)
        link_times(u + ((s - v3) * 4 + 3) * DSLASH_LINK, psi + (s - v3) * DSLASH_VEC, -1.0, 1, acc);
    else
        link_times(u_below + s3 * DSLASH_LINK, halo_lo + s3 * DSLASH_VEC, -1.0, 1, acc);
    for (int k = 0; k < 6; k++)
        out[s * DSLASH_VEC + k] = a * y[s * DSLASH_VEC + k] + b * 0.5 * acc[k];
}

/* partials[w] = sum of a[j] * b[j] over j = w, w + parts, ...: `parts`
 * work-items, each the same elements in every run, so that every endpoint
 * adds the same partials in the same order. */
GRAIN_KERNEL void cg_dot(GRAIN_GLOBAL double *partials, GRAIN_GLOBAL const double *a, GRAIN_GLOBAL const double *b,
                         grain_u64 n, grain_u32 parts)
{
    grain_u64 w = grain_global_linear_id();
    if (w >= parts)
        return;
    double sum = 0.0;
    for (grain_u64 j = w; j < n; j += parts)
        sum += a[j] * b[j];
    partials[w] = sum;
}

/* x += alpha p, r -= alpha Ap, and the partials of (r, r); alpha is
 * scalars[0], which the control task wrote. */
GRAIN_KERNEL void cg_update(GRAIN_GLOBAL double *x, GRAIN_GLOBAL double *r, GRAIN_GLOBAL const double *p,
                            GRAIN_GLOBAL const double *ap, GRAIN_GLOBAL const double *scalars,
                            GRAIN_GLOBAL double *partials, grain_u64 n, grain_u32 parts)
{
    grain_u64 w = grain_global_linear_id();
    if (w >= parts)
        return;
    double alpha = scalars[0], sum = 0.0;
    for (grain_u64 j = w; j < n; j += parts) {
        x[j] += alpha * p[j];
        r[j] -= alpha * ap[j];
        sum += r[j] * r[j];
    }
    partials[w] = sum;
}

/* p = r + beta p, beta = scalars[1]. */
GRAIN_KERNEL void cg_direction(GRAIN_GLOBAL double *p, GRAIN_GLOBAL const double *r,
                               GRAIN_GLOBAL const double *scalars, grain_u64 n)
{
    grain_u64 j = grain_global_linear_id();
    if (j < n)
        p[j] = r[j] + scalars[1] * p[j];
}

/* dst = src: the device's memory bandwidth, the bound of a dslash. */
GRAIN_KERNEL void stream_copy(GRAIN_GLOBAL double *dst, GRAIN_GLOBAL const double *src, grain_u64 n)
{
    grain_u64 j = grain_global_linear_id();
    if (j < n)
        dst[j] = src[j];
}
