/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tiled BLAS's host operands through pinned staging memory.  A copy
 * from or to pageable memory runs at the speed of the driver's own staging
 * (about 8 GB/s on an H200's host, against 55 GB/s from pinned memory), and
 * from pageable memory it holds the calling thread until done.  So a
 * rectangle of a host matrix is packed into pinned chunks by host threads
 * in parallel, each chunk then copied on a lane without waiting; one coming
 * back is unpacked when its chunk is needed again, or at the drain.
 */
#ifndef GRAIN_RUNTIME_BLAS_BLAS_STAGE_H
#define GRAIN_RUNTIME_BLAS_BLAS_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "grain/grain.h"

typedef struct blas_stage blas_stage_t;

/* Its threads and chunks, for the rank's backend; freed by close. */
grain_status_t blas_stage_open(grain_t *g, blas_stage_t **s_p);
void blas_stage_close(blas_stage_t *s);

/* cols columns of rows elements of es bytes between a host matrix (ld
 * apart) and packed device memory (rows apart), on `lane`: into the
 * device, returning once the host side is read and the copies are queued;
 * or back when `out`, in place once blas_stage_drain returns. */
grain_status_t blas_stage_move(blas_stage_t *s, unsigned lane, int out, void *host, size_t ld, void *dev,
                               size_t rows, size_t cols, size_t es);

/* Waits for every copy the stage queued and unpacks those coming back;
 * the first error of any. */
grain_status_t blas_stage_drain(blas_stage_t *s);

/* Where the calling thread's time went since the last call: packing
 * chunks, unpacking them, and waiting for a chunk's copy (nanoseconds). */
typedef struct blas_stage_times {
    uint64_t pack_ns, unpack_ns, wait_ns;
} blas_stage_times_t;
blas_stage_times_t blas_stage_times_take(blas_stage_t *s);

#endif
