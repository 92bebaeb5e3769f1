/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/heap.h"

#include <stdlib.h>
#include <string.h>

#include "services/log.h"

#define GRAIN_HEAP_ALIGN 64u

grain_status_t grain_heap_init(grain_heap_t *h, uint64_t size)
{
    memset(h, 0, sizeof *h);
    h->blocks = malloc(16 * sizeof *h->blocks);
    if (h->blocks == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the heap allocator");
    h->cap_blocks = 16;
    h->n_blocks = 1;
    h->size = size;
    h->blocks[0] = (grain_heap_block_t){0, size, 0};
    return GRAIN_OK;
}

void grain_heap_destroy(grain_heap_t *h)
{
    free(h->blocks);
    memset(h, 0, sizeof *h);
}

grain_status_t grain_heap_alloc(grain_heap_t *h, uint64_t size, uint64_t *offset_p)
{
    if (size == 0)
        size = 1;
    if (size > h->size)
        return grain_fail(GRAIN_ERR_NO_MEMORY,
                          "grain_malloc of %llu bytes exceeds the %llu-byte symmetric heap (GRAIN_HEAP_SIZE)",
                          (unsigned long long)size, (unsigned long long)h->size);
    size = (size + GRAIN_HEAP_ALIGN - 1) & ~(uint64_t)(GRAIN_HEAP_ALIGN - 1);
    for (size_t i = 0; i < h->n_blocks; i++) {
        grain_heap_block_t *b = &h->blocks[i];
        if (b->used || b->size < size)
            continue;
        if (b->size > size) { /* split: the rest stays free after it */
            if (h->n_blocks == h->cap_blocks) {
                grain_heap_block_t *nb = realloc(h->blocks, 2 * h->cap_blocks * sizeof *nb);
                if (nb == NULL)
                    return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the heap allocator");
                h->blocks = nb;
                h->cap_blocks *= 2;
                b = &h->blocks[i];
            }
            memmove(&h->blocks[i + 2], &h->blocks[i + 1], (h->n_blocks - i - 1) * sizeof *b);
            h->blocks[i + 1] = (grain_heap_block_t){b->offset + size, b->size - size, 0};
            h->n_blocks++;
            b->size = size;
        }
        b->used = 1;
        *offset_p = b->offset;
        return GRAIN_OK;
    }
    return grain_fail(GRAIN_ERR_NO_MEMORY,
                      "the symmetric heap has no free range of %llu bytes left (GRAIN_HEAP_SIZE=%llu)",
                      (unsigned long long)size, (unsigned long long)h->size);
}

grain_status_t grain_heap_free(grain_heap_t *h, uint64_t offset)
{
    for (size_t i = 0; i < h->n_blocks; i++) {
        if (h->blocks[i].offset != offset || !h->blocks[i].used)
            continue;
        h->blocks[i].used = 0;
        /* Merge with the free neighbours so that fragmentation stays bounded. */
        if (i + 1 < h->n_blocks && !h->blocks[i + 1].used) {
            h->blocks[i].size += h->blocks[i + 1].size;
            memmove(&h->blocks[i + 1], &h->blocks[i + 2], (h->n_blocks - i - 2) * sizeof h->blocks[0]);
            h->n_blocks--;
        }
        if (i > 0 && !h->blocks[i - 1].used) {
            h->blocks[i - 1].size += h->blocks[i].size;
            memmove(&h->blocks[i], &h->blocks[i + 1], (h->n_blocks - i - 1) * sizeof h->blocks[0]);
            h->n_blocks--;
        }
        return GRAIN_OK;
    }
    return grain_fail(GRAIN_ERR_INVALID, "grain_free: offset %llu is not an allocation of the symmetric heap",
                      (unsigned long long)offset);
}

uint64_t grain_heap_largest_free(const grain_heap_t *h)
{
    uint64_t most = 0;
    for (size_t i = 0; i < h->n_blocks; i++)
        if (!h->blocks[i].used && h->blocks[i].size > most)
            most = h->blocks[i].size;
    return most;
}
