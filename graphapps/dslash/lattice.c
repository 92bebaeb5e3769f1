/* SPDX-License-Identifier: BSD-3-Clause */
#include "lattice.h"

#include <string.h>

#include "link.h"

uint64_t lattice_slice(const lattice_t *lat)
{
    return (uint64_t)lat->l[0] * lat->l[1] * lat->l[2];
}

uint64_t lattice_volume(const lattice_t *lat)
{
    return lattice_slice(lat) * lat->l[3];
}

/* SplitMix64 of (seed, stream, index): independent of who draws it. */
static double draw(const lattice_t *lat, uint64_t stream, uint64_t index)
{
    uint64_t z = lat->seed + (stream * 0x9e3779b97f4a7c15ull) + index * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53 * 2.0 - 1.0; /* [-1, 1) */
}

void lattice_link(const lattice_t *lat, uint64_t site, unsigned mu, double u[DSLASH_LINK])
{
    /* Entries of a quarter keep |D| near 2, so that CG on m^2 - D^2 with
     * m = 1 converges in a few tens of steps. */
    for (unsigned k = 0; k < DSLASH_LINK; k++)
        u[k] = 0.25 * draw(lat, 1, (site * 4 + mu) * DSLASH_LINK + k);
}

void lattice_source(const lattice_t *lat, uint64_t site, double v[DSLASH_VEC])
{
    for (unsigned k = 0; k < DSLASH_VEC; k++)
        v[k] = draw(lat, 2, site * DSLASH_VEC + k);
}

void lattice_dslash(const lattice_t *lat, const double *links, const double *psi, double *out)
{
    uint64_t volume = lattice_volume(lat), step[4] = {1, lat->l[0], (uint64_t)lat->l[0] * lat->l[1],
                                                      lattice_slice(lat)};
    for (uint64_t s = 0; s < volume; s++) {
        double acc[DSLASH_VEC] = {0};
        for (unsigned mu = 0; mu < 4; mu++) {
            uint64_t c = s / step[mu] % lat->l[mu], n = lat->l[mu];
            uint64_t fwd = c + 1 == n ? s - (n - 1) * step[mu] : s + step[mu];
            uint64_t bwd = c == 0 ? s + (n - 1) * step[mu] : s - step[mu];
            link_times(links + (s * 4 + mu) * DSLASH_LINK, psi + fwd * DSLASH_VEC, 1.0, 0, acc);
            link_times(links + (bwd * 4 + mu) * DSLASH_LINK, psi + bwd * DSLASH_VEC, -1.0, 1, acc);
        }
        for (int k = 0; k < DSLASH_VEC; k++)
            out[s * DSLASH_VEC + k] = 0.5 * acc[k];
    }
}

void lattice_normal(const lattice_t *lat, const double *links, double mass, const double *psi, double *scratch,
                    double *out)
{
    lattice_dslash(lat, links, psi, scratch);
    lattice_dslash(lat, links, scratch, out);
    uint64_t n = lattice_volume(lat) * DSLASH_VEC;
    for (uint64_t j = 0; j < n; j++)
        out[j] = mass * mass * psi[j] - out[j];
}
