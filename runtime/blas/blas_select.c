/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/blas/blas_select.h"


size_t blas_select_tile(blas_model_t model, const blas_machine_t *m, const blas_shape_t *s, const blas_lookup_t *lk,
                        double *t_p)
{
    if (lk->n == 0)
        return 0;
    size_t largest = s->d[0];
    for (unsigned j = 1; s->level == 3 && j < 3; j++)
        largest = s->d[j] > largest ? s->d[j] : largest;
    size_t best = 0;
    double best_t = 0.0;
    for (size_t i = 0; i < lk->n; i++) {
        if (lk->tile[i] > largest && i > 0)
            break;
        double t = blas_predict(model, m, s, lk->tile[i], lk->seconds[i]);
        /* Ties go to the larger tile: fewer launches for the same time. */
        if (best == 0 || t <= best_t) {
            best = lk->tile[i];
            best_t = t;
        }
    }
    if (t_p != NULL)
        *t_p = best_t;
    return best;
}

static int same(const blas_cache_key_t *a, const blas_cache_key_t *b)
{
    int same = a->routine == b->routine && a->model == b->model && a->flags == b->flags;
    for (unsigned i = 0; i < 3; i++)
        same = same && a->d[i] == b->d[i] && a->ld[i] == b->ld[i];
    return same;
}

size_t blas_cache_get(blas_cache_t *c, const blas_cache_key_t *key)
{
    for (unsigned i = 0; i < c->used; i++)
        if (same(&c->key[i], key)) {
            c->hits++;
            return c->tile[i];
        }
    c->misses++;
    return 0;
}

void blas_cache_put(blas_cache_t *c, const blas_cache_key_t *key, size_t tile)
{
    for (unsigned i = 0; i < c->used; i++)
        if (same(&c->key[i], key)) {
            c->tile[i] = tile;
            return;
        }
    unsigned slot = c->used < BLAS_CACHE_SLOTS ? c->used++ : c->next++ % BLAS_CACHE_SLOTS;
    c->key[slot] = *key;
    c->tile[slot] = tile;
}
