/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tiled BLAS's execution (grain/blas.h, docs/blas.md) on the rank's
 * backend, over three lanes (CoCoPeLia IV-C; gemm_tiles says how they
 * join): gemm tiles by the backend's vendor BLAS where it has one
 * (gemm_tile), else, and axpy's always, by grain's own tile kernels
 * (blas_kernels.cl).  A host operand's tiles are copied as the rectangles
 * of the matrix they are (through pinned chunks, blas_stage.h, where the
 * backend's copies are not the host's own) into device memory that holds
 * all of them, each copied once (full reuse, eq. 5), and read transposed
 * there where op() transposes; an operand in the heap is used where it
 * is, with its leading dimension and transpose.  C's tile stays on the
 * device through its K steps (beta the first, 1 after) and goes back
 * once.
 */
#include <stdlib.h>
#include <string.h>

#include "grain/blas.h"
#include "runtime/blas/blas_run.h"
#include "runtime/blas/blas_stage.h"
#include "runtime/grain_impl.h"
#include "services/backoff.h" /* grain_now_ns */
#include "services/log.h"

#define K_COUNT BLAS_ROUTINES
const char *const blas_kernel_names[K_COUNT] = {"grain_blas_dgemm_tile", "grain_blas_sgemm_tile",
                                                "grain_blas_daxpy_tile", "grain_blas_saxpy_tile"};
const unsigned blas_gemm_counts_at[8] = {1, 3, 4, 6, 7, 8, 9, 10};
const unsigned blas_axpy_counts_at[3] = {1, 3, 4};

#define DEFAULT_GEMM_TILE 2048u
#define DEFAULT_AXPY_TILE (4u << 20)

struct grain_blas_state {
    grain_bprogram_t *program;
    grain_bkernel_t *kernel[K_COUNT];
    int profile_read;      /* the profile was looked for */
    int told;              /* the info log said which kernels compute gemm tiles */
    blas_profile_t profile; /* this device's, or none (no routine has kernels) */
    blas_cache_t cache;
    blas_stage_t *stage;  /* host operands' way through pinned memory (GRAIN_BLAS_STAGE), or NULL */
    int stage_chosen;
    unsigned char *room; /* the device memory of the last calls' tiles */
    size_t room_bytes;
    uint64_t end_wait_ns; /* the call's wait for its lanes at the end */
    grain_blas_last_t last;
};

void grain_blas_release(grain_t *g)
{
    if (g->blas == NULL)
        return;
    for (unsigned i = 0; i < K_COUNT; i++)
        if (g->blas->kernel[i] != NULL)
            g->bops->kernel_release(g->blas->kernel[i]);
    if (g->blas->program != NULL)
        g->bops->program_release(g->blas->program);
    blas_stage_close(g->blas->stage);
    if (g->blas->room != NULL)
        g->bops->free_device(g->backend, g->blas->room);
    blas_profile_free(&g->blas->profile);
    free(g->blas);
    g->blas = NULL;
}

static struct grain_blas_state *state(grain_t *g)
{
    if (g->blas == NULL)
        g->blas = calloc(1, sizeof *g->blas);
    return g->blas;
}

blas_cache_t *blas_cache_of(grain_t *g)
{
    return state(g) != NULL ? &g->blas->cache : NULL;
}

const blas_profile_t *blas_profile_of(grain_t *g, const char *path)
{
    struct grain_blas_state *b = state(g);
    if (b == NULL)
        return NULL;
    if (!b->profile_read) {
        b->profile_read = 1;
        if (blas_profile_read(&b->profile, path, grain_device_name(g)) < 0)
            grain_warn("blas: %s", grain_error_message(g)); /* a damaged profile: as if none */
    }
    return b->profile.have_links ? &b->profile : NULL;
}

void blas_use_profile(grain_t *g, blas_profile_t *p)
{
    struct grain_blas_state *b = state(g);
    if (b == NULL)
        return;
    blas_profile_free(&b->profile);
    b->profile = *p;
    b->profile_read = 1;
    memset(&b->cache, 0, sizeof b->cache); /* choices of the old profile */
    *p = (blas_profile_t){0};
}

static grain_status_t kernel(grain_t *g, unsigned which, grain_bkernel_t **k_p)
{
    if (state(g) == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "blas: no memory");
    grain_status_t st = GRAIN_OK;
    if (g->blas->program == NULL)
        st = g->bops->program_build(g->backend, grain_blas_kernels_source, "", &g->blas->program);
    if (st == GRAIN_OK && g->blas->kernel[which] == NULL)
        st = g->bops->kernel_create(g->blas->program, blas_kernel_names[which], &g->blas->kernel[which]);
    *k_p = g->blas->kernel[which];
    return st;
}

int blas_in_heap_ld(grain_t *g, const void *p, size_t rows, size_t cols, size_t ld, size_t es)
{
    if (rows == 0 || cols == 0)
        return 0;
    const unsigned char *first = p, *last = first + ((cols - 1) * ld + rows) * es - 1;
    uint64_t offset;
    grain_log_quiet(1);
    int inside = grain_heap_offset(g, first, &offset) == GRAIN_OK && grain_heap_offset(g, last, &offset) == GRAIN_OK;
    grain_log_quiet(0);
    return inside;
}

/* Whether the routines stage pageable host memory (GRAIN_BLAS_STAGE):
 * where the backend's copies are not the host's own, unless told. */
static int stages(const grain_t *g)
{
    const char *stage = g->config.blas_stage;
    return strcmp(stage, "on") == 0 || (strcmp(stage, "auto") == 0 && !g->binfo.host_copies);
}

/* Whether host memory at [p, p + bytes) would be copied straight past the
 * staging: page-locked, the link's speed without the host. */
static int passes_stage(grain_t *g, const void *p, size_t bytes)
{
    return stages(g) && g->bops->host_pinned != NULL && g->bops->host_pinned(g->backend, p, bytes);
}

/* A tile kernel of `elements` work-items on the BLAS_RUN lane. */
static grain_status_t launch_tile(grain_t *g, grain_bkernel_t *bk, size_t elements)
{
    size_t local = g->binfo.max_wg_size < BLAS_TILE_WG ? g->binfo.max_wg_size : BLAS_TILE_WG;
    size_t global = blas_tile_global(elements, local);
    return g->bops->launch_lane(bk, BLAS_RUN, 1, &global, &local);
}

/* The backend's lanes, which the tiled BLAS runs on, its state, and the
 * staging of host operands (GRAIN_BLAS_STAGE). */
static grain_status_t state_ready(grain_t *g, const char *name)
{
    const grain_backend_ops_t *o = g->bops;
    if (o->copy_async == NULL || o->launch_lane == NULL || o->copy_rect_async == NULL || o->lane_wait == NULL)
        return grain_fail(GRAIN_ERR_UNSUPPORTED, "%s: the %s backend has no transfer lanes to run tiles on", name,
                          o->name);
    struct grain_blas_state *b = state(g);
    if (b == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory", name);
    if (!b->stage_chosen && stages(g)) {
        grain_status_t st = blas_stage_open(g, &b->stage);
        if (st != GRAIN_OK)
            return st;
    }
    b->stage_chosen = 1;
    return GRAIN_OK;
}

/* state_ready, at the start of a call, whose account starts here. */
static grain_status_t ready(grain_t *g, const char *name)
{
    grain_status_t st = state_ready(g, name);
    if (st == GRAIN_OK && g->blas->stage != NULL)
        blas_stage_times_take(g->blas->stage);
    return st;
}

int blas_where_ld(grain_t *g, const void *p, size_t rows, size_t cols, size_t ld, size_t es)
{
    if (blas_in_heap_ld(g, p, rows, cols, ld, es))
        return BLAS_ON_DEVICE;
    /* Asked by predictions too, which open no staging. */
    if (rows == 0 || cols == 0)
        return BLAS_ON_HOST;
    return passes_stage(g, p, ((cols - 1) * ld + rows) * es) ? BLAS_ON_PINNED : BLAS_ON_HOST;
}

grain_status_t blas_stage_of(grain_t *g, blas_stage_t **s_p)
{
    grain_status_t st = ready(g, "blas");
    *s_p = st == GRAIN_OK ? g->blas->stage : NULL;
    return st;
}

/* Whether the rank's device has a profile (GRAIN_BLAS_PROFILE's), read at
 * the first need. */
static int have_profile(grain_t *g)
{
    char path[4096];
    blas_profile_path(g, NULL, path, sizeof path);
    return blas_profile_of(g, path) != NULL;
}

/* The call's tile and time, and the time `model` predicted for it. */
static void record(grain_t *g, const grain_blas_problem_t *q, size_t tile, grain_blas_model_t model, uint64_t t0)
{
    struct grain_blas_state *b = g->blas;
    blas_stage_times_t times = b->stage != NULL ? blas_stage_times_take(b->stage) : (blas_stage_times_t){0};
    grain_blas_last_t *last = &b->last;
    *last = (grain_blas_last_t){.routine = q->routine, .tile = tile, .seconds = (double)(grain_now_ns() - t0) * 1e-9,
                                .pack_s = (double)times.pack_ns * 1e-9, .unpack_s = (double)times.unpack_ns * 1e-9,
                                .wait_s = (double)(times.wait_ns + b->end_wait_ns) * 1e-9};
    if (!have_profile(g))
        return;
    grain_log_quiet(1); /* a routine the profile lacks: no prediction */
    if (grain_blas_predict(g, q, tile, model, &last->predicted_s) != GRAIN_OK)
        last->predicted_s = 0.0;
    grain_log_quiet(0);
}

grain_status_t grain_blas_last(grain_t *g, grain_blas_last_t *last_p)
{
    if (g == NULL || last_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_blas_last needs a handle and a result");
    if (g->blas == NULL || g->blas->last.tile == 0)
        return grain_fail(GRAIN_ERR_STATE, "grain_blas_last: no BLAS call has completed on this rank yet");
    *last_p = g->blas->last;
    return GRAIN_OK;
}

grain_status_t blas_vendor(const grain_backend_ops_t *o, grain_backend_t *backend, grain_backend_info_t *info,
                           const char *want, int *vendor_p)
{
    if (o->blas_load != NULL && strcmp(want, "grain") != 0)
        o->blas_load(backend, info->blas, sizeof info->blas);
    *vendor_p = o->gemm_tile != NULL && info->blas[0] != '\0' && strcmp(want, "grain") != 0;
    if (!*vendor_p && strcmp(want, "vendor") == 0)
        return grain_fail(GRAIN_ERR_UNSUPPORTED, "GRAIN_BLAS_KERNELS=vendor: the %s backend has no vendor BLAS here "
                          "(CLBlast serves OpenCL where libclblast-dev is installed, cuBLAS CUDA where the "
                          "toolkit's libcublas loads)", o->name);
    return GRAIN_OK;
}

/* blas_vendor for the rank's device, said once in the info log. */
static grain_status_t vendor_of(grain_t *g, int *vendor_p)
{
    grain_status_t st = blas_vendor(g->bops, g->backend, &g->binfo, g->config.blas_kernels, vendor_p);
    struct grain_blas_state *b = state(g);
    if (st == GRAIN_OK && b != NULL && !b->told) {
        b->told = 1;
        grain_info("blas: gemm tiles by %s", *vendor_p ? g->binfo.blas : "grain's kernels");
    }
    return st;
}

/* One gemm tile: c (m x n, ldc) = alpha op(a) op(b) + beta c, by the vendor's
 * BLAS when `vendor` (k > 0; it may read c where beta is 0), else by grain's
 * kernel. */
static grain_status_t launch_gemm(grain_t *g, grain_bkernel_t *bk, size_t es, int vendor, void *c, uint64_t ldc,
                                  const void *a, uint64_t lda, uint64_t ta, const void *b, uint64_t ldb, uint64_t tb,
                                  uint64_t m, uint64_t n, uint64_t k, const void *alpha, const void *beta)
{
    if (vendor && k > 0)
        return g->bops->gemm_tile(g->backend, BLAS_RUN, es, (int)ta, (int)tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
                                  ldc);
    const void *values[] = {&ldc, &lda, &ta, &ldb, &tb, &m, &n, &k};
    grain_status_t st = g->bops->kernel_set_arg_ptr(bk, BLAS_GEMM_C, c);
    if (st == GRAIN_OK)
        st = g->bops->kernel_set_arg_ptr(bk, BLAS_GEMM_A, (void *)a);
    if (st == GRAIN_OK)
        st = g->bops->kernel_set_arg_ptr(bk, BLAS_GEMM_B, (void *)b);
    for (unsigned x = 0; x < 8 && st == GRAIN_OK; x++)
        st = g->bops->kernel_set_arg(bk, blas_gemm_counts_at[x], 8, values[x]);
    if (st == GRAIN_OK)
        st = g->bops->kernel_set_arg(bk, BLAS_GEMM_ALPHA, es, alpha);
    if (st == GRAIN_OK)
        st = g->bops->kernel_set_arg(bk, BLAS_GEMM_BETA, es, beta);
    return st == GRAIN_OK ? launch_tile(g, bk, (size_t)(m * n)) : st;
}

/* One axpy tile kernel: y (incy apart) += alpha x (incx apart), n of them. */
static grain_status_t launch_axpy(grain_t *g, grain_bkernel_t *bk, size_t es, void *y, uint64_t incy, const void *x,
                                  uint64_t incx, uint64_t n, const void *alpha)
{
    const void *values[] = {&incy, &incx, &n};
    grain_status_t st = g->bops->kernel_set_arg_ptr(bk, BLAS_AXPY_Y, y);
    if (st == GRAIN_OK)
        st = g->bops->kernel_set_arg_ptr(bk, BLAS_AXPY_X, (void *)x);
    for (unsigned i = 0; i < 3 && st == GRAIN_OK; i++)
        st = g->bops->kernel_set_arg(bk, blas_axpy_counts_at[i], 8, values[i]);
    if (st == GRAIN_OK)
        st = g->bops->kernel_set_arg(bk, BLAS_AXPY_ALPHA, es, alpha);
    return st == GRAIN_OK ? launch_tile(g, bk, (size_t)n) : st;
}

grain_status_t blas_run_tile(grain_t *g, unsigned routine, size_t t, unsigned count, void *a, void *b, void *c)
{
    static const double one_d = 1.0;
    static const float one_f = 1.0f;
    size_t es = routine == BLAS_DGEMM || routine == BLAS_DAXPY ? 8 : 4;
    const void *one = es == 8 ? (const void *)&one_d : (const void *)&one_f;
    grain_bkernel_t *bk = NULL;
    int vendor = 0;
    /* Not a call: no account to start (the deployment runs these beside
     * copies through the staging, whose account they would take). */
    grain_status_t st = state_ready(g, "blas");
    if (st == GRAIN_OK)
        st = kernel(g, routine, &bk);
    int gemm = routine == BLAS_DGEMM || routine == BLAS_SGEMM;
    if (st == GRAIN_OK && gemm)
        st = vendor_of(g, &vendor);
    for (unsigned i = 0; i < count && st == GRAIN_OK; i++)
        st = gemm ? launch_gemm(g, bk, es, vendor, c, t, a, t, 0, b, t, 0, t, t, t, one, one)
                  : launch_axpy(g, bk, es, b, 1, a, 1, t, one);
    return st == GRAIN_OK ? g->bops->copy_wait(g->backend, BLAS_RUN) : st;
}

typedef struct gemm_call {
    const char *name;
    size_t es;
    char transa, transb;
    int ta, tb; /* op() transposes, from transa and transb */
    size_t m, n, k, lda, ldb, ldc, tile;
    const unsigned char *a, *b;
    unsigned char *c;
    const void *alpha, *beta, *one;
    int alpha_zero, beta_zero;
} gemm_call_t;

/* `cols` columns of `rows` elements between a host matrix (ld apart) and a
 * packed device tile, on `lane`: in, or back when `out`; through the
 * staging where the operand is `staged` (resident_at), else one copy
 * where the columns are contiguous. */
static grain_status_t host_rect(grain_t *g, unsigned lane, int out, int staged, unsigned char *host, size_t ld,
                                unsigned char *dev, size_t rows, size_t cols, size_t es)
{
    if (staged)
        return blas_stage_move(g->blas->stage, lane, out, host, ld, dev, rows, cols, es);
    if (ld == rows)
        return g->bops->copy_async(g->backend, lane, out ? host : dev, out ? dev : host, rows * cols * es);
    return out ? g->bops->copy_rect_async(g->backend, lane, host, ld * es, dev, rows * es, rows * es, cols)
               : g->bops->copy_rect_async(g->backend, lane, dev, rows * es, host, ld * es, rows * es, cols);
}

/* Later work of `lane` after the work of lane `on` so far. */
static grain_status_t after(grain_t *g, unsigned lane, unsigned on)
{
    uint64_t mark = 0;
    grain_status_t st = g->bops->copy_mark(g->backend, on, &mark);
    return st == GRAIN_OK ? g->bops->lane_wait(g->backend, lane, on, mark) : st;
}

/* A tile going back to the host, issued one tile late: a copy to pageable
 * host memory returns only once done, so issued at once it would hold the
 * host from queueing the next tile's kernels while this one's run. */
typedef struct back {
    int pending, staged;
    unsigned char *dst, *src;
    size_t ld, rows, cols;
    uint64_t *done_p; /* the slot's D2H mark, for its next tile to wait for */
} back_t;

static grain_status_t back_issue(grain_t *g, back_t *b, size_t es)
{
    if (!b->pending)
        return GRAIN_OK;
    b->pending = 0;
    grain_status_t st = host_rect(g, BLAS_D2H, 1, b->staged, b->dst, b->ld, b->src, b->rows, b->cols, es);
    return st == GRAIN_OK ? g->bops->copy_mark(g->backend, BLAS_D2H, b->done_p) : st;
}

/* An operand's device side: in place (resident, in the heap), or its
 * tiles at `dev` and which of them are there, copied through the staging
 * where `staged`. */
typedef struct tiles {
    int resident, staged;
    unsigned char *dev;
    unsigned char *copied;
} tiles_t;

/* The device memory of a call: every tile of A and B (each copied once,
 * CoCoPeLia eq. 5's full reuse), BLAS_C_SLOTS tiles of C and a zero tile, or
 * axpy's slots; kept between calls, grown when a call needs more. */
static grain_status_t device_room(grain_t *g, size_t bytes, unsigned char **p)
{
    struct grain_blas_state *b = g->blas;
    if (bytes > b->room_bytes) {
        if (b->room != NULL)
            g->bops->free_device(g->backend, b->room);
        b->room = NULL;
        b->room_bytes = 0;
        grain_status_t st = g->bops->alloc_device(g->backend, bytes, (void **)&b->room);
        if (st != GRAIN_OK)
            return grain_fail(st, "blas: %zu bytes of tiles do not fit the device (%s): every tile of the host "
                              "operands stays there during the call, whatever the tile size", bytes,
                              grain_error_message(g));
        b->room_bytes = bytes;
    }
    *p = b->room;
    return GRAIN_OK;
}

/* Whether operand x, rows x cols elements ld apart, lies in the heap
 * (used in place), and else whether its copies go through the staging
 * (pageable memory, where there is one).  Asked once an operand a call,
 * not a tile: the backend answers with a driver call. */
static int resident_at(grain_t *g, const void *x, size_t rows, size_t cols, size_t ld, size_t es, int *staged_p)
{
    int where = blas_where_ld(g, x, rows, cols, ld, es);
    *staged_p = where == BLAS_ON_HOST && g->blas->stage != NULL;
    return where == BLAS_ON_DEVICE;
}

/* Operand x, rows x cols elements ld apart: resident where the call does
 * not read it or it lies in the heap, else `count` tiles to copy. */
static grain_status_t tiles_init(grain_t *g, tiles_t *t, int reads, const void *x, size_t rows, size_t cols,
                                 size_t ld, size_t es, size_t count)
{
    *t = (tiles_t){0};
    t->resident = !reads || resident_at(g, x, rows, cols, ld, es, &t->staged);
    if (t->resident || count == 0)
        return GRAIN_OK;
    if ((t->copied = calloc(count, 1)) == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "blas: no memory");
    return GRAIN_OK;
}

/* A tile of op(X) at (row r0, column c0), rows x cols, for the kernel:
 * where it is and how to read it.  A host operand's is copied (once, on
 * the H2D lane) as the rectangle of X it is, and read transposed there. */
static grain_status_t tile_of(grain_t *g, tiles_t *t, size_t index, size_t tile_bytes, const unsigned char *x,
                              size_t ld, int trans, size_t r0, size_t c0, size_t rows, size_t cols, size_t es,
                              int *copied_p, const unsigned char **ptr_p, uint64_t *ld_p)
{
    /* op(X)(r0, c0) is X(r0, c0), or X(c0, r0) transposed. */
    const unsigned char *origin = x + (trans ? r0 * ld + c0 : c0 * ld + r0) * es;
    if (t->resident) {
        *ptr_p = origin;
        *ld_p = ld;
        return GRAIN_OK;
    }
    size_t xr = trans ? cols : rows, xc = trans ? rows : cols;
    unsigned char *slot = t->dev + index * tile_bytes;
    if (!t->copied[index]) {
        grain_status_t st = host_rect(g, BLAS_H2D, 0, t->staged, (unsigned char *)origin, ld, slot, xr, xc, es);
        if (st != GRAIN_OK)
            return st;
        t->copied[index] = 1;
        *copied_p = 1;
    }
    *ptr_p = slot;
    *ld_p = xr;
    return GRAIN_OK;
}

/* C's tile (i, j) of ti x tj on the device, ready for its first K step:
 * in place in the heap, else in its slot once the slot's previous tile
 * went back, with C copied in where beta reads it, or zeroed where a
 * vendor BLAS might read it anyway. */
static grain_status_t c_tile_in(grain_t *g, const gemm_call_t *p, int vendor, const tiles_t *tc, unsigned char *slot,
                                uint64_t back_mark, unsigned char *c_at, size_t ti, size_t tj, const void *zeros,
                                unsigned char **tile_p, uint64_t *ld_p)
{
    size_t es = p->es, bytes = ti * tj * es;
    *tile_p = c_at;
    *ld_p = p->ldc;
    if (tc->resident)
        return GRAIN_OK;
    *tile_p = slot;
    *ld_p = ti;
    if (!p->beta_zero) {
        grain_status_t st = g->bops->lane_wait(g->backend, BLAS_H2D, BLAS_D2H, back_mark);
        return st == GRAIN_OK ? host_rect(g, BLAS_H2D, 0, tc->staged, c_at, p->ldc, *tile_p, ti, tj, es) : st;
    }
    grain_status_t st = g->bops->lane_wait(g->backend, BLAS_RUN, BLAS_D2H, back_mark);
    if (st == GRAIN_OK && vendor)
        st = g->bops->copy_async(g->backend, BLAS_RUN, *tile_p, zeros, bytes);
    return st;
}

/*
 * The tile scheduler (CoCoPeLia IV-C): three lanes, joined by marks on the
 * device, so that copies in, kernels and copies out of neighbouring tiles
 * overlap and the host only queues.  The kernels of a step wait for the
 * copies in before them; a C tile goes back after its last K step; a C slot
 * is filled again once its tile went back.  Every wait is for work queued
 * earlier, so the lanes cannot wait for each other in a circle.
 */
static grain_status_t gemm_tiles(grain_t *g, const gemm_call_t *p, grain_bkernel_t *bk, int vendor, tiles_t *ta,
                                 tiles_t *tb, tiles_t *tc, const size_t bytes[3], const void *zeros)
{
    size_t T = p->tile, es = p->es;
    size_t mt = (p->m + T - 1) / T, nt = (p->n + T - 1) / T;
    /* alpha == 0 reads neither A nor B (reference BLAS): one pass of k = 0. */
    size_t kt = p->alpha_zero ? 0 : (p->k + T - 1) / T;
    uint64_t slot_back[BLAS_C_SLOTS] = {0};
    back_t back = {0};
    grain_status_t st = GRAIN_OK;
    for (size_t j = 0, count = 0; j < nt && st == GRAIN_OK; j++)
        for (size_t i = 0; i < mt && st == GRAIN_OK; i++, count++) {
            size_t ti = p->m - i * T < T ? p->m - i * T : T, tj = p->n - j * T < T ? p->n - j * T : T;
            size_t slot = count % BLAS_C_SLOTS;
            unsigned char *c_at = p->c + (j * T * p->ldc + i * T) * es, *c_tile = NULL;
            uint64_t ldc = 0;
            unsigned char *c_slot = tc->resident ? NULL : tc->dev + slot * bytes[2];
            st = c_tile_in(g, p, vendor, tc, c_slot, slot_back[slot], c_at, ti, tj, zeros, &c_tile, &ldc);
            int copied = !tc->resident && !p->beta_zero;
            for (size_t l = 0; l < (kt > 0 ? kt : 1) && st == GRAIN_OK; l++) {
                size_t tl = kt == 0 ? 0 : p->k - l * T < T ? p->k - l * T : T;
                const unsigned char *a = NULL, *b = NULL;
                uint64_t lda = 1, ldb = 1;
                if (tl > 0)
                    st = tile_of(g, ta, l * mt + i, bytes[0], p->a, p->lda, p->ta, i * T, l * T, ti, tl, es,
                                 &copied, &a, &lda);
                if (st == GRAIN_OK && tl > 0)
                    st = tile_of(g, tb, j * kt + l, bytes[1], p->b, p->ldb, p->tb, l * T, j * T, tl, tj, es,
                                 &copied, &b, &ldb);
                if (a == NULL) /* k == 0: the kernel reads neither */
                    a = b = c_tile;
                if (st == GRAIN_OK && copied)
                    st = after(g, BLAS_RUN, BLAS_H2D);
                copied = 0;
                /* C in the heap: grain's kernel computes its first step where beta is 0, never reading it. */
                int by_vendor = vendor && !(l == 0 && p->beta_zero && tc->resident);
                if (st == GRAIN_OK)
                    st = launch_gemm(g, bk, es, by_vendor, c_tile, ldc, a, lda, (uint64_t)(tl > 0 && p->ta), b, ldb,
                                     (uint64_t)(tl > 0 && p->tb), ti, tj, tl, p->alpha, l == 0 ? p->beta : p->one);
            }
            if (st == GRAIN_OK)
                st = back_issue(g, &back, es);
            if (st == GRAIN_OK && !tc->resident && (st = after(g, BLAS_D2H, BLAS_RUN)) == GRAIN_OK)
                back = (back_t){.pending = 1, .staged = tc->staged, .dst = c_at, .src = c_tile, .ld = p->ldc,
                                .rows = ti, .cols = tj, .done_p = &slot_back[slot]};
        }
    return st == GRAIN_OK ? back_issue(g, &back, es) : st;
}

/* Waits for the tiled BLAS's lanes, whatever came before, and unpacks
 * what came back through the staging; the first error. */
static grain_status_t lanes_wait(grain_t *g, grain_status_t st)
{
    uint64_t t0 = grain_now_ns();
    for (unsigned lane = BLAS_H2D; lane <= BLAS_D2H; lane++) {
        grain_status_t done = g->bops->copy_wait(g->backend, lane);
        st = st != GRAIN_OK ? st : done;
    }
    if (g->blas != NULL)
        g->blas->end_wait_ns = grain_now_ns() - t0;
    grain_status_t drained = g->blas != NULL && g->blas->stage != NULL ? blas_stage_drain(g->blas->stage) : GRAIN_OK;
    return st != GRAIN_OK ? st : drained;
}

/* The model a call selects its tile by and predicts with:
 * GRAIN_BLAS_MODEL, or the routine's `fallback` where it says auto. */
static grain_status_t model_of(grain_t *g, const char *name, grain_blas_model_t fallback, grain_blas_model_t *model_p)
{
    const char *want = g->config.blas_model;
    *model_p = fallback;
    if (strcmp(want, "auto") == 0)
        return GRAIN_OK;
    int m = blas_model_named(want);
    if (m >= 0) {
        *model_p = (grain_blas_model_t)m;
        return GRAIN_OK;
    }
    return grain_fail(GRAIN_ERR_CONFIG, "%s: GRAIN_BLAS_MODEL=%s is not a model: expected auto, " BLAS_MODEL_NAMES,
                      name, want);
}

/* The tile of a call that gave 0: GRAIN_BLAS_TILE, else the deployed
 * selection by `model` where the device has a profile, else `fallback`. */
static size_t auto_tile(grain_t *g, const grain_blas_problem_t *q, grain_blas_model_t model, size_t fallback)
{
    if (g->config.blas_tile)
        return (size_t)g->config.blas_tile;
    size_t tile = 0;
    if (have_profile(g)) {
        grain_log_quiet(1); /* a routine the profile lacks: the fallback */
        if (grain_blas_select(g, q, model, &tile) != GRAIN_OK)
            tile = 0;
        grain_log_quiet(0);
    }
    return tile ? tile : fallback;
}

grain_status_t blas_check_ld(const char *name, int ta, int tb, size_t m, size_t n, size_t k, size_t lda, size_t ldb,
                             size_t ldc)
{
    size_t a_rows = ta ? k : m, b_rows = tb ? n : k;
    const char *bad = lda < (a_rows > 1 ? a_rows : 1)   ? "lda"
                      : ldb < (b_rows > 1 ? b_rows : 1) ? "ldb"
                      : ldc < (m > 1 ? m : 1)           ? "ldc"
                                                        : NULL;
    if (bad == NULL)
        return GRAIN_OK;
    return grain_fail(GRAIN_ERR_INVALID,
                      "%s: %s is wrong for m %zu, n %zu, k %zu (lda %zu, ldb %zu, ldc %zu): a leading dimension must "
                      "be at least the rows it holds, and at least 1",
                      name, bad, m, n, k, lda, ldb, ldc);
}

static int trans_of(char t, int *trans)
{
    *trans = blas_transposed(t);
    return *trans || t == 'N' || t == 'n';
}

static grain_status_t gemm(grain_t *g, gemm_call_t *p)
{
    if (g == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "%s: no grain handle", p->name);
    if (!trans_of(p->transa, &p->ta) || !trans_of(p->transb, &p->tb))
        return grain_fail(GRAIN_ERR_INVALID, "%s: transa '%c', transb '%c': each 'N', 'T' or 'C'", p->name, p->transa,
                          p->transb);
    size_t a_rows = p->ta ? p->k : p->m, b_rows = p->tb ? p->n : p->k;
    grain_status_t ld_ok = blas_check_ld(p->name, p->ta, p->tb, p->m, p->n, p->k, p->lda, p->ldb, p->ldc);
    if (ld_ok != GRAIN_OK)
        return ld_ok;
    if ((p->m && p->n && p->c == NULL) || (p->m && p->n && p->k && !p->alpha_zero && (!p->a || !p->b)))
        return grain_fail(GRAIN_ERR_INVALID, "%s: an operand is missing (a %p, b %p, c %p) for m %zu, n %zu, k %zu",
                          p->name, (const void *)p->a, (const void *)p->b, (void *)p->c, p->m, p->n, p->k);
    if (p->m == 0 || p->n == 0)
        return GRAIN_OK;
    size_t es = p->es;
    grain_blas_problem_t q = {.routine = es == 8 ? GRAIN_BLAS_DGEMM : GRAIN_BLAS_SGEMM, .m = p->m, .n = p->n,
                              .k = p->k, .transa = p->transa, .transb = p->transb, .a = p->a, .b = p->b, .c = p->c,
                              .beta_zero = p->beta_zero, .lda = p->lda, .ldb = p->ldb, .ldc = p->ldc};
    grain_blas_model_t model;
    grain_status_t modelled = model_of(g, p->name, GRAIN_BLAS_MODEL_SCHEDULE, &model);
    if (modelled != GRAIN_OK)
        return modelled;
    if (p->tile == 0)
        p->tile = p->k > 0 ? auto_tile(g, &q, model, DEFAULT_GEMM_TILE) : DEFAULT_GEMM_TILE;
    uint64_t t0 = grain_now_ns();
    size_t T = p->tile, mt = (p->m + T - 1) / T, nt = (p->n + T - 1) / T, kt = (p->k + T - 1) / T;
    /* A tile is never larger than the matrix it is of. */
    size_t tm = p->m < T ? p->m : T, tn = p->n < T ? p->n : T, tk = p->k < T ? p->k : T;
    size_t a_bytes = tm * tk * es, b_bytes = tk * tn * es, c_bytes = tm * tn * es;
    grain_bkernel_t *bk = NULL;
    int vendor = 0;
    grain_status_t st = ready(g, p->name);
    if (st == GRAIN_OK)
        st = vendor_of(g, &vendor);
    if (st == GRAIN_OK)
        st = kernel(g, es == 8 ? BLAS_DGEMM : BLAS_SGEMM, &bk);
    tiles_t ta = {0}, tb = {0}, tc = {0};
    int reads = p->k > 0 && !p->alpha_zero;
    if (st == GRAIN_OK)
        st = tiles_init(g, &ta, reads, p->a, a_rows, p->ta ? p->m : p->k, p->lda, es, mt * kt);
    if (st == GRAIN_OK)
        st = tiles_init(g, &tb, reads, p->b, b_rows, p->tb ? p->k : p->n, p->ldb, es, kt * nt);
    if (st == GRAIN_OK)
        st = tiles_init(g, &tc, 1, p->c, p->m, p->n, p->ldc, es, 0);
    size_t na = ta.resident ? 0 : mt * kt, nb = tb.resident ? 0 : kt * nt, nc = tc.resident ? 0 : BLAS_C_SLOTS;
    int zero = vendor && p->beta_zero && !tc.resident; /* a vendor BLAS might read C where beta is 0 */
    unsigned char *room = NULL;
    if (st == GRAIN_OK)
        st = device_room(g, na * a_bytes + nb * b_bytes + (nc + (size_t)zero) * c_bytes, &room);
    const unsigned char *zeros = NULL;
    if (st == GRAIN_OK && room != NULL) { /* NULL: every operand in the heap, and no room yet */
        ta.dev = room;
        tb.dev = ta.dev + na * a_bytes;
        tc.dev = tb.dev + nb * b_bytes;
        zeros = tc.dev + nc * c_bytes;
    }
    if (st == GRAIN_OK && zero)
        st = g->bops->zero(g->backend, (void *)zeros, c_bytes);
    /* The lanes run beside the application's kernels: those before the call
     * finish first where they may write what it reads. */
    if (st == GRAIN_OK && (ta.resident || tb.resident || tc.resident))
        st = g->bops->synchronize(g->backend);
    if (st == GRAIN_OK)
        st = gemm_tiles(g, p, bk, vendor, &ta, &tb, &tc, (size_t[3]){a_bytes, b_bytes, c_bytes}, zeros);
    st = lanes_wait(g, st);
    free(ta.copied);
    free(tb.copied);
    if (st == GRAIN_OK)
        record(g, &q, T, model, t0);
    return st;
}

grain_status_t grain_dgemm(grain_t *g, char transa, char transb, size_t m, size_t n, size_t k, double alpha,
                           const double *a, size_t lda, const double *b, size_t ldb, double beta, double *c,
                           size_t ldc, size_t tile)
{
    static const double one = 1.0;
    gemm_call_t p = {.name = "grain_dgemm", .es = 8, .transa = transa, .transb = transb, .m = m, .n = n, .k = k,
                     .lda = lda, .ldb = ldb, .ldc = ldc, .tile = tile, .a = (const unsigned char *)a,
                     .b = (const unsigned char *)b, .c = (unsigned char *)c, .alpha = &alpha, .beta = &beta,
                     .one = &one, .alpha_zero = alpha == 0.0, .beta_zero = beta == 0.0};
    return gemm(g, &p);
}

grain_status_t grain_sgemm(grain_t *g, char transa, char transb, size_t m, size_t n, size_t k, float alpha,
                           const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc,
                           size_t tile)
{
    static const float one = 1.0f;
    gemm_call_t p = {.name = "grain_sgemm", .es = 4, .transa = transa, .transb = transb, .m = m, .n = n, .k = k,
                     .lda = lda, .ldb = ldb, .ldc = ldc, .tile = tile, .a = (const unsigned char *)a,
                     .b = (const unsigned char *)b, .c = (unsigned char *)c, .alpha = &alpha, .beta = &beta,
                     .one = &one, .alpha_zero = alpha == 0.0f, .beta_zero = beta == 0.0f};
    return gemm(g, &p);
}

/* ---- axpy ------------------------------------------------------------------ */

static grain_status_t axpy(grain_t *g, const char *name, size_t es, size_t n, const void *alpha, int alpha_zero,
                           const unsigned char *x, size_t incx, unsigned char *y, size_t incy, size_t tile)
{
    if (g == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "%s: no grain handle", name);
    if (incx == 0 || incy == 0 || (n > 0 && (x == NULL || y == NULL)))
        return grain_fail(GRAIN_ERR_INVALID, "%s: increments %zu and %zu, x %p, y %p: give positive increments and "
                          "both vectors", name, incx, incy, (const void *)x, (void *)y);
    if (n == 0 || alpha_zero) /* reference BLAS: y unchanged */
        return GRAIN_OK;
    grain_blas_problem_t q = {.routine = es == 8 ? GRAIN_BLAS_DAXPY : GRAIN_BLAS_SAXPY, .n = n, .a = x, .b = y};
    grain_blas_model_t model;
    grain_status_t st = model_of(g, name, GRAIN_BLAS_MODEL_BTS, &model);
    if (st != GRAIN_OK)
        return st;
    uint64_t t0 = grain_now_ns();
    size_t T = tile ? tile : auto_tile(g, &q, model, DEFAULT_AXPY_TILE), tt = n < T ? n : T;
    grain_bkernel_t *bk = NULL;
    st = ready(g, name);
    if (st == GRAIN_OK)
        st = kernel(g, es == 8 ? BLAS_DAXPY : BLAS_SAXPY, &bk);
    int sx = 0, sy = 0;
    int rx = st == GRAIN_OK && resident_at(g, x, 1, n, incx, es, &sx);
    int ry = st == GRAIN_OK && resident_at(g, y, 1, n, incy, es, &sy);
    unsigned char *dx = NULL, *dy = NULL;
    if (st == GRAIN_OK && (st = device_room(g, ((size_t)!rx + (size_t)!ry) * BLAS_C_SLOTS * tt * es, &dx)) == GRAIN_OK)
        dy = rx ? dx : dx + BLAS_C_SLOTS * tt * es;
    if (st == GRAIN_OK && (rx || ry))
        st = g->bops->synchronize(g->backend); /* as gemm's */
    /* gemm's lanes, with a slot of x and y per tile in flight: a slot is
     * filled again once its kernel ran (x) and its y went back. */
    uint64_t ran[BLAS_C_SLOTS] = {0}, y_back[BLAS_C_SLOTS] = {0};
    back_t back = {0};
    for (size_t at = 0, t = 0; at < n && st == GRAIN_OK; at += T, t++) {
        size_t count = n - at < T ? n - at : T, slot = t % BLAS_C_SLOTS;
        uint64_t ix = incx, iy = incy, cnt = count;
        const unsigned char *xp = x + at * incx * es;
        unsigned char *ys = y + at * incy * es, *yp = ys;
        if (!rx) { /* a strided vector is a 1 x count matrix of leading dimension inc */
            const unsigned char *xs = xp;
            xp = dx + slot * tt * es;
            ix = 1;
            st = g->bops->lane_wait(g->backend, BLAS_H2D, BLAS_RUN, ran[slot]);
            if (st == GRAIN_OK)
                st = host_rect(g, BLAS_H2D, 0, sx, (unsigned char *)xs, incx, (unsigned char *)xp, 1, count, es);
        }
        if (st == GRAIN_OK && !ry) {
            yp = dy + slot * tt * es;
            iy = 1;
            st = g->bops->lane_wait(g->backend, BLAS_H2D, BLAS_D2H, y_back[slot]);
            if (st == GRAIN_OK)
                st = host_rect(g, BLAS_H2D, 0, sy, ys, incy, yp, 1, count, es);
        }
        if (st == GRAIN_OK && (!rx || !ry))
            st = after(g, BLAS_RUN, BLAS_H2D);
        if (st == GRAIN_OK)
            st = launch_axpy(g, bk, es, yp, iy, xp, ix, cnt, alpha);
        if (st == GRAIN_OK)
            st = back_issue(g, &back, es);
        if (st == GRAIN_OK)
            st = g->bops->copy_mark(g->backend, BLAS_RUN, &ran[slot]);
        if (st == GRAIN_OK && !ry && (st = g->bops->lane_wait(g->backend, BLAS_D2H, BLAS_RUN, ran[slot])) == GRAIN_OK)
            back = (back_t){.pending = 1, .staged = sy, .dst = ys, .src = yp, .ld = incy, .rows = 1, .cols = count,
                            .done_p = &y_back[slot]};
    }
    if (st == GRAIN_OK)
        st = back_issue(g, &back, es);
    st = lanes_wait(g, st);
    if (st == GRAIN_OK)
        record(g, &q, T, model, t0);
    return st;
}

grain_status_t grain_daxpy(grain_t *g, size_t n, double alpha, const double *x, size_t incx, double *y, size_t incy,
                           size_t tile)
{
    return axpy(g, "grain_daxpy", 8, n, &alpha, alpha == 0.0, (const unsigned char *)x, incx, (unsigned char *)y,
                incy, tile);
}

grain_status_t grain_saxpy(grain_t *g, size_t n, float alpha, const float *x, size_t incx, float *y, size_t incy,
                           size_t tile)
{
    return axpy(g, "grain_saxpy", 4, n, &alpha, alpha == 0.0f, (const unsigned char *)x, incx, (unsigned char *)y,
                incy, tile);
}
