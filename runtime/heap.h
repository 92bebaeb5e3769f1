/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The symmetric heap allocator: first fit over [0, size) with 64-byte
 * granularity.  It is deterministic, so the same sequence of collective
 * grain_malloc/grain_free calls yields the same offsets on every rank.
 */
#ifndef GRAIN_RUNTIME_HEAP_H
#define GRAIN_RUNTIME_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "grain/grain.h"

typedef struct grain_heap_block {
    uint64_t offset;
    uint64_t size;
    int used;
} grain_heap_block_t;

typedef struct grain_heap {
    uint64_t size;
    grain_heap_block_t *blocks; /* sorted by offset, covering [0, size) */
    size_t n_blocks, cap_blocks;
} grain_heap_t;

grain_status_t grain_heap_init(grain_heap_t *h, uint64_t size);
void grain_heap_destroy(grain_heap_t *h);
grain_status_t grain_heap_alloc(grain_heap_t *h, uint64_t size, uint64_t *offset_p);
grain_status_t grain_heap_free(grain_heap_t *h, uint64_t offset);
/* The largest size grain_heap_alloc can give now. */
uint64_t grain_heap_largest_free(const grain_heap_t *h);

#endif
