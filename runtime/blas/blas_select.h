/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tile of a routine (CoCoPeLia section IV-B): the deployed tile sizes
 * that fit the problem, each predicted by a model with its kernel time
 * from the lookup, the fastest chosen; and the choices kept per problem
 * (routine, dimensions, flags, operand locations, model), so that a routine
 * called again with the same problem does not predict again.
 */
#ifndef GRAIN_RUNTIME_BLAS_BLAS_SELECT_H
#define GRAIN_RUNTIME_BLAS_BLAS_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/blas/blas_model.h"

/* Kernel seconds by tile size, as deployed: tile[i] ascending. */
typedef struct blas_lookup {
    size_t n;
    const size_t *tile;
    const double *seconds;
} blas_lookup_t;

/* The fastest tile of the lookup for the problem by `model`, its predicted
 * seconds in *t_p.  Tiles larger than the problem's largest dimension
 * only repeat the largest that fits; with none that fits, the smallest.
 * 0 for an empty lookup. */
size_t blas_select_tile(blas_model_t model, const blas_machine_t *m, const blas_shape_t *s, const blas_lookup_t *lk,
                        double *t_p);

#define BLAS_CACHE_SLOTS 64

typedef struct blas_cache_key {
    uint32_t routine, model, flags; /* flags: transposes, operand locations, beta == 0 */
    uint64_t d[3], ld[3];
} blas_cache_key_t;

typedef struct blas_cache {
    blas_cache_key_t key[BLAS_CACHE_SLOTS];
    size_t tile[BLAS_CACHE_SLOTS];
    unsigned used, next; /* slots filled; the one to replace when full */
    uint64_t hits, misses;
} blas_cache_t;

/* The tile kept for `key`, or 0. */
size_t blas_cache_get(blas_cache_t *c, const blas_cache_key_t *key);
/* Keeps `tile` for `key`, replacing the oldest entry when full. */
void blas_cache_put(blas_cache_t *c, const blas_cache_key_t *key, size_t tile);

#endif
