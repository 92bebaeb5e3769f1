/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One compile a node.  An OpenCL compiler with a disk cache (PoCL's, the
 * vendors') serves every process of a node from one compile once it is
 * written, but ranks start together and each compiles the same program; on
 * a CPU device PoCL compiles each kernel again, at its first launch, for
 * every work-group size.  There the ranks' compiles share the cores with one
 * another and with the ranks' own threads: pagerank on 3 ranks of a 2-core
 * machine took 192 s with PoCL's cache empty against 20 s for one rank
 * (AddressSanitizer build, where LLVM runs 3x slower).  So the processes of
 * a node take turns at a compile: the first compiles, the others wait
 * asleep and then find its result in the cache.
 *
 * A turn is a lock file in $TMPDIR (else /tmp), one of OCL_TURN_FILES a
 * user, picked by the compile's key: flock(2), so that a process that dies
 * in its turn gives it back.  Two compiles whose keys share a file only
 * wait for each other.  Where no file can be opened, nobody waits.
 */
#ifndef GRAIN_BACKENDS_OPENCL_OCL_TURNS_H
#define GRAIN_BACKENDS_OPENCL_OCL_TURNS_H

#include <stddef.h>
#include <stdint.h>

#define OCL_TURN_FILES 64u
#define OCL_TURN_KEY_START 1469598103934665603ull

typedef struct ocl_turn {
    int fd;
} ocl_turn_t;

/* The key so far (OCL_TURN_KEY_START at first) with `bytes` more of it:
 * FNV-1a. */
uint64_t ocl_turn_key(uint64_t key, const void *p, size_t bytes);
/* Waits until this process has the node's turn for `key`. */
void ocl_turn_take(ocl_turn_t *t, uint64_t key);
void ocl_turn_give(ocl_turn_t *t);

#endif
