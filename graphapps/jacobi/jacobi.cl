/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One Jacobi sweep of the Laplace equation over this rank's rows: every
 * interior point becomes the mean of its four neighbours in `in`.  A
 * work-group is a tile of tile_rows rows and its width of columns; launch
 * row y of tiles computes tile row grain_stencil_tile_row(y), so the rows
 * the neighbours need (the first and the last) are done first and their
 * chunks move while the rest is computed.
 */
#include "grain/device.h"

GRAIN_KERNEL void jacobi_sweep(GRAIN_KERNEL_CTX, GRAIN_GLOBAL grain_region_dev_t *in,
                               GRAIN_GLOBAL grain_region_dev_t *out, grain_u64 n, grain_u64 rows,
                               grain_u64 tile_rows)
{
    GRAIN_WG_BEGIN(wg);
    grain_u64 tile = grain_stencil_tile_row(grain_group_id(1), (rows + tile_rows - 1) / tile_rows);
    grain_u64 col = grain_group_id(0) * grain_local_size(0) + grain_local_id(0);
    GRAIN_GLOBAL const double *a = (GRAIN_GLOBAL const double *)in->data;
    for (grain_u64 base = 0; base < tile_rows; base += grain_local_size(1)) {
        grain_u64 r = base + grain_local_id(1);
        grain_u64 row = 1 + tile * tile_rows + r; /* local row 0 is the ghost row above */
        if (r < tile_rows && row <= rows && col >= 1 && col + 1 < n) {
            grain_u64 at = row * n + col;
            double v = 0.25 * (((a[at - n] + a[at + n]) + a[at - 1]) + a[at + 1]);
            grain_region_store64(out, at, (grain_u64)grain_f64_bits(v));
        }
    }
    grain_chunk_done(&wg, out);
}
