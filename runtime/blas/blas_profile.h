/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A device's BLAS profile (CoCoPeLia section IV-A): its two links (t_i,
 * t_b, sl each way) and, per routine, the kernel seconds of each tile
 * size, measured once by grain_blas_deploy and kept in a text file
 * (GRAIN_BLAS_PROFILE), a line each:
 *
 *   device <TAB> link <TAB> h2d|d2h|h2d-pinned|d2h-pinned <TAB> t_i <TAB> t_b <TAB> sl
 *   device <TAB> kernel <TAB> dgemm|sgemm|daxpy|saxpy <TAB> T:seconds,T:seconds,...
 *   device <TAB> tiles <TAB> h2d|d2h|h2d-pinned|d2h-pinned <TAB> TxLD:alone:beside,...
 *
 * A tiles line gives a link's copies of a T x T tile of doubles whose
 * columns lie LD apart on the host, alone and beside the dgemm tile kernel
 * of T (blas_model.h's blas_tile_copies_t), where deployed; an entry
 * "T:alone:beside" (the first such profiles) was measured at LD = 2T.
 * h2d and d2h are the routines' copies of pageable host memory; the
 * -pinned links, where the backend copies page-locked memory otherwise,
 * that memory's (absent: the same).  The last line for a (device, what)
 * wins; lines of other devices are kept when a deployment rewrites the
 * file.
 */
#ifndef GRAIN_RUNTIME_BLAS_BLAS_PROFILE_H
#define GRAIN_RUNTIME_BLAS_BLAS_PROFILE_H

#include <stddef.h>

#include "grain/grain.h"
#include "runtime/blas/blas_model.h"
#include "runtime/blas/blas_select.h"

enum { BLAS_DGEMM, BLAS_SGEMM, BLAS_DAXPY, BLAS_SAXPY, BLAS_ROUTINES };
extern const char *const blas_routine_names[BLAS_ROUTINES];

typedef struct blas_profile {
    blas_machine_t machine;
    int have_links;  /* the host path's, both ways */
    int have_pinned; /* the page-locked path's, both ways */
    size_t n[BLAS_ROUTINES];
    size_t *tile[BLAS_ROUTINES];
    double *seconds[BLAS_ROUTINES];
    /* Each link's tile copies (h2d, d2h, h2d-pinned, d2h-pinned), which
     * the machine's links point to (blas_profile_point). */
    size_t copies[2 * BLAS_PATHS];
    size_t *copy_tile[2 * BLAS_PATHS], *copy_ld[2 * BLAS_PATHS];
    double *copy_alone[2 * BLAS_PATHS], *copy_beside[2 * BLAS_PATHS];
} blas_profile_t;

void blas_profile_free(blas_profile_t *p);
/* The machine's links pointed at p's tile copies; a page-locked path that
 * was not deployed is the host path's. */
void blas_profile_point(blas_profile_t *p);
blas_lookup_t blas_profile_lookup(const blas_profile_t *p, unsigned routine);
/* The routine's kernel seconds at the deployed tile `tile`; negative where
 * that tile was not deployed. */
double blas_profile_seconds(const blas_profile_t *p, unsigned routine, size_t tile);
/* This device's lines of the file at `path` into p: 1 when its links and
 * at least one routine's kernels are there, 0 when not (or no file), -1
 * with a sentence for a line of this device that is malformed. */
int blas_profile_read(blas_profile_t *p, const char *path, const char *device);
/* Rewrites `path` with p as this device's lines, the others kept. */
grain_status_t blas_profile_write(const blas_profile_t *p, const char *path, const char *device);

#endif
