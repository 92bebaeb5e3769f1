/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Turns between the processes of a node, for work that one of them can do
 * for all: a compile whose result a disk cache then serves to the others
 * (backends/opencl: the ranks of a node otherwise compile the same kernels
 * at once, on the cores their kernels need).  The first process to take a
 * turn does the work; the others wait asleep, then find it done.
 *
 * A turn is a lock file in $TMPDIR (else /tmp), one of GRAIN_TURN_FILES a
 * user, picked by the work's key: flock(2), so that a process that dies in
 * its turn gives it back.  Two keys that share a file only wait for each
 * other; a thread takes one turn at a time (a second in the same file
 * would wait for its own first).  Where no file can be opened, nobody
 * waits.
 */
#ifndef GRAIN_SERVICES_TURNS_H
#define GRAIN_SERVICES_TURNS_H

#include <stddef.h>
#include <stdint.h>

#define GRAIN_TURN_FILES 64u
#define GRAIN_TURN_KEY_START 1469598103934665603ull

typedef struct grain_turn {
    int fd;
} grain_turn_t;

/* The key so far (GRAIN_TURN_KEY_START at first) with `bytes` more of it:
 * FNV-1a. */
uint64_t grain_turn_key(uint64_t key, const void *p, size_t bytes);
/* Waits until this process has the node's turn for `key`. */
void grain_turn_take(grain_turn_t *t, uint64_t key);
void grain_turn_give(grain_turn_t *t);

#endif
