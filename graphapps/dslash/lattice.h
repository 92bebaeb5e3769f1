/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dslash app's lattice on the host: its fields drawn from a seed, the
 * same on every rank and endpoint whatever part of it they hold, and the
 * reference operator --verify compares the device's with (dslash.cl says
 * what D and A are and how sites are numbered).
 */
#ifndef GRAIN_GRAPHAPPS_DSLASH_LATTICE_H
#define GRAIN_GRAPHAPPS_DSLASH_LATTICE_H

#include <stdint.h>

#include "link.h"

typedef struct lattice {
    unsigned l[4]; /* x, y, z, t extents of the whole lattice */
    uint64_t seed;
} lattice_t;

/* Sites of one t-slice, and of the lattice. */
uint64_t lattice_slice(const lattice_t *lat);
uint64_t lattice_volume(const lattice_t *lat);

/* The link U_mu at global site `site`, and the source vector there. */
void lattice_link(const lattice_t *lat, uint64_t site, unsigned mu, double u[DSLASH_LINK]);
void lattice_source(const lattice_t *lat, uint64_t site, double v[DSLASH_VEC]);

/* out = D psi on the whole lattice, `links` holding every site's four
 * (lattice_link's order); out must not be psi. */
void lattice_dslash(const lattice_t *lat, const double *links, const double *psi, double *out);
/* out = (m^2 - D^2) psi, with `scratch` a vector of the lattice. */
void lattice_normal(const lattice_t *lat, const double *links, double mass, const double *psi, double *scratch,
                    double *out);

#endif
