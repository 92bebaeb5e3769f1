/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The generators' random numbers: splitmix64 (Steele, Lea and Flood), whose
 * state may be any 64-bit value, so that each edge or point can start a
 * stream of its own from the seed and its number.
 */
#ifndef GRAIN_GRAPHAPPS_RANDOM_H
#define GRAIN_GRAPHAPPS_RANDOM_H

#include <stdint.h>

static inline uint64_t app_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1): never 0, so its logarithm is finite. */
static inline double app_unit_open(uint64_t *state)
{
    return ((double)(app_splitmix64(state) >> 11) + 0.5) * 0x1.0p-53;
}

#endif
