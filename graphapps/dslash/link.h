/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A link times a colour vector, written once for the device (dslash.cl)
 * and the host's reference operator (lattice.c): 3x3 complex matrices row
 * major and 3-component vectors, re and im side by side.
 */
#ifndef GRAIN_GRAPHAPPS_DSLASH_LINK_H
#define GRAIN_GRAPHAPPS_DSLASH_LINK_H

#include "grain/device/port.h"

#define DSLASH_VEC 6   /* doubles of a colour vector */
#define DSLASH_LINK 18 /* doubles of a link */

/* acc += sign * (U v), or sign * (U^+ v) when `dagger`. */
GRAIN_INLINE void link_times(GRAIN_GLOBAL const double *u, GRAIN_GLOBAL const double *v, double sign, int dagger,
                             double *acc)
{
    for (int i = 0; i < 3; i++) {
        double re = 0.0, im = 0.0;
        for (int j = 0; j < 3; j++) {
            int k = dagger ? 3 * j + i : 3 * i + j;
            double ur = u[2 * k], ui = dagger ? -u[2 * k + 1] : u[2 * k + 1];
            re += ur * v[2 * j] - ui * v[2 * j + 1];
            im += ur * v[2 * j + 1] + ui * v[2 * j];
        }
        acc[2 * i] += sign * re;
        acc[2 * i + 1] += sign * im;
    }
}

#endif
