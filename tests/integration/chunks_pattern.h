/* SPDX-License-Identifier: BSD-3-Clause */
/* What tests/integration/chunks.c expects its kernel to write: one source
 * for the kernel (device dialect) and the checks (host C). */
#ifndef GRAIN_TESTS_CHUNKS_PATTERN_H
#define GRAIN_TESTS_CHUNKS_PATTERN_H

/* Word i of rank pe's slice in iteration `it`: differs from every other
 * word of every other slice and iteration. */
GRAIN_INLINE grain_u64 chunk_word(grain_u64 it, grain_u64 pe, grain_u64 i)
{
    return ((it + 1u) * 0x9E3779B97F4A7C15ull) ^ (pe << 40) ^ i;
}

#endif
