/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tiled BLAS's execution (grain/blas.h, docs/blas.md) on the rank's
 * backend: gemm tiles by the backend's vendor BLAS where it has one
 * (gemm_tile), else, and axpy's always, by grain's own tile kernels
 * (blas_kernels.cl).  A host
 * operand is packed tile by tile into pinned staging memory and copied to
 * a device buffer that holds all its tiles, each copied once (full reuse,
 * CoCoPeLia eq. 5), op() applied while packing so that a packed tile is
 * plain; an operand in the heap is used where it is, with its leading
 * dimension and transpose.  C's tile stays on the device through its K
 * steps (beta the first, 1 after) and goes back once.  The copies are the
 * backend's synchronous ones, so that copy, kernel and copy do not overlap
 * yet; the lanes come with the tile scheduler.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "grain/blas.h"
#include "runtime/blas/blas_run.h"
#include "runtime/grain_impl.h"
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

static size_t local_size(const grain_t *g, size_t global)
{
    return grain_divisor_at_most(global, g->binfo.max_wg_size < 256 ? g->binfo.max_wg_size : 256);
}

/* A tile in and out of host memory: rows x cols of a column-major matrix
 * at `src` (ld apart), transposed when `trans`, into packed column-major
 * `dst` (rows apart), and back. */
static void pack(unsigned char *dst, const unsigned char *src, size_t ld, int trans, size_t rows, size_t cols,
                 size_t es)
{
    for (size_t c = 0; c < cols; c++)
        if (!trans)
            memcpy(dst + c * rows * es, src + c * ld * es, rows * es);
        else
            for (size_t r = 0; r < rows; r++)
                memcpy(dst + (c * rows + r) * es, src + (r * ld + c) * es, es);
}

static void unpack(unsigned char *dst, size_t ld, const unsigned char *src, size_t rows, size_t cols, size_t es)
{
    for (size_t c = 0; c < cols; c++)
        memcpy(dst + c * ld * es, src + c * rows * es, rows * es);
}

/* A tile kernel on the application's stream, counted as the application's
 * kernels are (the apply kernels' overlap statistics); it sends nothing,
 * so the resident apply agent is not started for it. */
static grain_status_t launch_tile(grain_t *g, grain_bkernel_t *bk, size_t global)
{
    size_t local = local_size(g, global);
    atomic_fetch_add_explicit(&g->app_launches, 1, memory_order_relaxed);
    return g->bops->launch(bk, 1, &global, &local);
}

/* Whether gemm tiles go to the backend's vendor BLAS (GRAIN_BLAS_KERNELS);
 * GRAIN_ERR_UNSUPPORTED where "vendor" asks for one the backend lacks. */
static grain_status_t vendor_of(grain_t *g, int *vendor_p)
{
    const char *want = g->config.blas_kernels;
    *vendor_p = g->bops->gemm_tile != NULL && g->binfo.blas[0] != '\0' && strcmp(want, "grain") != 0;
    if (!*vendor_p && strcmp(want, "vendor") == 0)
        return grain_fail(GRAIN_ERR_UNSUPPORTED, "GRAIN_BLAS_KERNELS=vendor: the %s backend has no vendor BLAS here "
                          "(CLBlast serves OpenCL where libclblast-dev is installed, cuBLAS CUDA where the "
                          "toolkit's libcublas loads)", g->bops->name);
    struct grain_blas_state *b = state(g);
    if (b != NULL && !b->told) {
        b->told = 1;
        grain_info("blas: gemm tiles by %s", *vendor_p ? g->binfo.blas : "grain's kernels");
    }
    return GRAIN_OK;
}

/* One gemm tile: c (m x n, ldc) = alpha op(a) op(b) + beta c, by the vendor's
 * BLAS when `vendor` (k > 0; it may read c where beta is 0), else by grain's
 * kernel. */
static grain_status_t launch_gemm(grain_t *g, grain_bkernel_t *bk, size_t es, int vendor, void *c, uint64_t ldc,
                                  const void *a, uint64_t lda, uint64_t ta, const void *b, uint64_t ldb, uint64_t tb,
                                  uint64_t m, uint64_t n, uint64_t k, const void *alpha, const void *beta)
{
    if (vendor && k > 0) {
        atomic_fetch_add_explicit(&g->app_launches, 1, memory_order_relaxed); /* as launch_tile counts */
        return g->bops->gemm_tile(g->backend, es, (int)ta, (int)tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
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

grain_status_t blas_run_tile(grain_t *g, unsigned routine, size_t t, void *a, void *b, void *c)
{
    static const double one_d = 1.0;
    static const float one_f = 1.0f;
    size_t es = routine == BLAS_DGEMM || routine == BLAS_DAXPY ? 8 : 4;
    const void *one = es == 8 ? (const void *)&one_d : (const void *)&one_f;
    grain_bkernel_t *bk = NULL;
    grain_status_t st = kernel(g, routine, &bk);
    if (st != GRAIN_OK)
        return st;
    int vendor = 0;
    if (routine == BLAS_DGEMM || routine == BLAS_SGEMM)
        return (st = vendor_of(g, &vendor)) != GRAIN_OK
                   ? st
                   : launch_gemm(g, bk, es, vendor, c, t, a, t, 0, b, t, 0, t, t, t, one, one);
    return launch_axpy(g, bk, es, b, 1, a, 1, t, one);
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

/* One operand's device side: where its tiles go, and which are there. */
typedef struct tiles {
    int resident;
    unsigned char *dev;
    unsigned char *copied;
} tiles_t;

static grain_status_t tiles_init(grain_t *g, tiles_t *t, int resident, size_t count, size_t tile_bytes)
{
    *t = (tiles_t){.resident = resident};
    if (resident || count == 0)
        return GRAIN_OK;
    if ((t->copied = calloc(count, 1)) == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "blas: no memory");
    grain_status_t st = g->bops->alloc_device(g->backend, count * tile_bytes, (void **)&t->dev);
    if (st != GRAIN_OK)
        grain_fail(st, "blas: %zu tiles of %zu bytes do not fit the device (%s): the operands must, whatever the tile",
                   count, tile_bytes, grain_error_message(g));
    return st;
}

static void tiles_free(grain_t *g, tiles_t *t)
{
    if (t->dev != NULL)
        g->bops->free_device(g->backend, t->dev);
    free(t->copied);
}

/* A tile of op(X) at (row r0, column c0), rows x cols, for the kernel:
 * where it is and how to read it.  A host operand's is packed (once). */
static grain_status_t tile_of(grain_t *g, tiles_t *t, size_t index, unsigned char *staging, size_t tile_bytes,
                              const unsigned char *x, size_t ld, int trans, size_t r0, size_t c0, size_t rows,
                              size_t cols, size_t es, const unsigned char **ptr_p, uint64_t *ld_p, uint64_t *trans_p)
{
    /* op(X)(r0, c0) is X(r0, c0), or X(c0, r0) transposed. */
    const unsigned char *origin = x + (trans ? r0 * ld + c0 : c0 * ld + r0) * es;
    if (t->resident) {
        *ptr_p = origin;
        *ld_p = ld;
        *trans_p = (uint64_t)trans;
        return GRAIN_OK;
    }
    unsigned char *slot = t->dev + index * tile_bytes;
    if (!t->copied[index]) {
        pack(staging, origin, ld, trans, rows, cols, es);
        grain_status_t st = g->bops->copy(g->backend, slot, staging, rows * cols * es);
        if (st != GRAIN_OK)
            return st;
        t->copied[index] = 1;
    }
    *ptr_p = slot;
    *ld_p = rows;
    *trans_p = 0;
    return GRAIN_OK;
}

static grain_status_t gemm_tiles(grain_t *g, const gemm_call_t *p, grain_bkernel_t *bk, int vendor, tiles_t *ta,
                                 tiles_t *tb, tiles_t *tc, unsigned char *staging)
{
    size_t T = p->tile, es = p->es, tile_bytes = T * T * es;
    size_t mt = (p->m + T - 1) / T, nt = (p->n + T - 1) / T;
    /* alpha == 0 reads neither A nor B (reference BLAS): one pass of k = 0. */
    size_t kt = p->alpha_zero ? 0 : (p->k + T - 1) / T;
    grain_status_t st = GRAIN_OK;
    for (size_t j = 0; j < nt && st == GRAIN_OK; j++)
        for (size_t i = 0; i < mt && st == GRAIN_OK; i++) {
            size_t ti = p->m - i * T < T ? p->m - i * T : T, tj = p->n - j * T < T ? p->n - j * T : T;
            unsigned char *c_at = p->c + (j * T * p->ldc + i * T) * es, *c_tile = c_at;
            uint64_t ldc = p->ldc;
            if (!tc->resident) {
                c_tile = tc->dev;
                ldc = ti;
                if (!p->beta_zero) {
                    pack(staging, c_at, p->ldc, 0, ti, tj, es);
                    st = g->bops->copy(g->backend, c_tile, staging, ti * tj * es);
                } else if (vendor) { /* a vendor BLAS may read C where beta is 0: none of it may be NaN */
                    st = g->bops->zero(g->backend, c_tile, ti * tj * es);
                }
            }
            for (size_t l = 0; l < (kt > 0 ? kt : 1) && st == GRAIN_OK; l++) {
                size_t tl = kt == 0 ? 0 : p->k - l * T < T ? p->k - l * T : T;
                const unsigned char *a = NULL, *b = NULL;
                uint64_t lda = 1, ldb = 1, tra = 0, trb = 0, m = ti, n = tj, k = tl;
                if (tl > 0)
                    st = tile_of(g, ta, l * mt + i, staging, tile_bytes, p->a, p->lda, p->ta, i * T, l * T, ti, tl,
                                 es, &a, &lda, &tra);
                if (st == GRAIN_OK && tl > 0)
                    st = tile_of(g, tb, j * kt + l, staging, tile_bytes, p->b, p->ldb, p->tb, l * T, j * T, tl, tj,
                                 es, &b, &ldb, &trb);
                if (a == NULL) /* k == 0: the kernel reads neither */
                    a = b = c_tile;
                /* C in the heap: grain's kernel computes its first step where beta is 0, never reading it. */
                int by_vendor = vendor && !(l == 0 && p->beta_zero && tc->resident);
                if (st == GRAIN_OK)
                    st = launch_gemm(g, bk, es, by_vendor, c_tile, ldc, a, lda, tra, b, ldb, trb, m, n, k, p->alpha,
                                     l == 0 ? p->beta : p->one);
            }
            if (st == GRAIN_OK && !tc->resident && (st = g->bops->synchronize(g->backend)) == GRAIN_OK &&
                (st = g->bops->copy(g->backend, staging, c_tile, ti * tj * es)) == GRAIN_OK)
                unpack(c_at, p->ldc, staging, ti, tj, es);
        }
    return st;
}

/* The tile of a call that gave 0: GRAIN_BLAS_TILE, else the deployed
 * selection by `model` where the device has a profile, else `fallback`. */
static size_t auto_tile(grain_t *g, const grain_blas_problem_t *q, grain_blas_model_t model, size_t fallback)
{
    if (g->config.blas_tile)
        return (size_t)g->config.blas_tile;
    char path[4096];
    blas_profile_path(g, NULL, path, sizeof path);
    size_t tile = 0;
    if (blas_profile_of(g, path) != NULL) {
        grain_log_quiet(1); /* a routine the profile lacks: the fallback */
        if (grain_blas_select(g, q, model, &tile) != GRAIN_OK)
            tile = 0;
        grain_log_quiet(0);
    }
    return tile ? tile : fallback;
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
    const char *bad = p->lda < (a_rows > 1 ? a_rows : 1)   ? "lda"
                      : p->ldb < (b_rows > 1 ? b_rows : 1) ? "ldb"
                      : p->ldc < (p->m > 1 ? p->m : 1)     ? "ldc"
                                                           : NULL;
    if (bad != NULL)
        return grain_fail(GRAIN_ERR_INVALID,
                          "%s: %s is wrong for m %zu, n %zu, k %zu (lda %zu, ldb %zu, ldc %zu): a leading dimension "
                          "must be at least the rows it holds, and at least 1",
                          p->name, bad, p->m, p->n, p->k, p->lda, p->ldb, p->ldc);
    if ((p->m && p->n && p->c == NULL) || (p->m && p->n && p->k && !p->alpha_zero && (!p->a || !p->b)))
        return grain_fail(GRAIN_ERR_INVALID, "%s: an operand is missing (a %p, b %p, c %p) for m %zu, n %zu, k %zu",
                          p->name, (const void *)p->a, (const void *)p->b, (void *)p->c, p->m, p->n, p->k);
    if (p->m == 0 || p->n == 0)
        return GRAIN_OK;
    size_t es = p->es;
    if (p->tile == 0) {
        grain_blas_problem_t q = {.routine = es == 8 ? GRAIN_BLAS_DGEMM : GRAIN_BLAS_SGEMM, .m = p->m, .n = p->n,
                                  .k = p->k, .transa = p->transa, .transb = p->transb, .a = p->a, .b = p->b,
                                  .c = p->c, .beta_zero = p->beta_zero};
        p->tile = p->k > 0 ? auto_tile(g, &q, GRAIN_BLAS_MODEL_DR, DEFAULT_GEMM_TILE) : DEFAULT_GEMM_TILE;
    }
    size_t T = p->tile, tile_bytes = T * T * es;
    size_t mt = (p->m + T - 1) / T, nt = (p->n + T - 1) / T, kt = (p->k + T - 1) / T;
    grain_bkernel_t *bk = NULL;
    int vendor = 0;
    grain_status_t st = vendor_of(g, &vendor);
    if (st == GRAIN_OK)
        st = kernel(g, es == 8 ? BLAS_DGEMM : BLAS_SGEMM, &bk);
    tiles_t ta_ = {0}, tb_ = {0}, tc_ = {0};
    unsigned char *staging = NULL;
    int reads = p->k > 0 && !p->alpha_zero;
    if (st == GRAIN_OK)
        st = tiles_init(g, &ta_, !reads || blas_in_heap_ld(g, p->a, a_rows, p->ta ? p->m : p->k, p->lda, es),
                        reads ? mt * kt : 0, tile_bytes);
    if (st == GRAIN_OK)
        st = tiles_init(g, &tb_, !reads || blas_in_heap_ld(g, p->b, b_rows, p->tb ? p->k : p->n, p->ldb, es),
                        reads ? kt * nt : 0, tile_bytes);
    if (st == GRAIN_OK)
        st = tiles_init(g, &tc_, blas_in_heap_ld(g, p->c, p->m, p->n, p->ldc, es), 1, tile_bytes);
    if (st == GRAIN_OK)
        st = g->bops->alloc_shared(g->backend, tile_bytes, (void **)&staging);
    if (st == GRAIN_OK)
        st = gemm_tiles(g, p, bk, vendor, &ta_, &tb_, &tc_, staging);
    grain_status_t done = g->bops->synchronize(g->backend);
    st = st != GRAIN_OK ? st : done;
    if (staging != NULL)
        g->bops->free_shared(g->backend, staging);
    tiles_free(g, &ta_);
    tiles_free(g, &tb_);
    tiles_free(g, &tc_);
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
    size_t T = tile ? tile : auto_tile(g, &q, GRAIN_BLAS_MODEL_BTS, DEFAULT_AXPY_TILE);
    grain_bkernel_t *bk = NULL;
    grain_status_t st = kernel(g, es == 8 ? BLAS_DAXPY : BLAS_SAXPY, &bk);
    int rx = blas_in_heap_ld(g, x, 1, n, incx, es), ry = blas_in_heap_ld(g, y, 1, n, incy, es);
    unsigned char *dx = NULL, *dy = NULL, *staging = NULL;
    if (st == GRAIN_OK && !rx)
        st = g->bops->alloc_device(g->backend, T * es, (void **)&dx);
    if (st == GRAIN_OK && !ry)
        st = g->bops->alloc_device(g->backend, T * es, (void **)&dy);
    if (st == GRAIN_OK)
        st = g->bops->alloc_shared(g->backend, T * es, (void **)&staging);
    for (size_t at = 0; at < n && st == GRAIN_OK; at += T) {
        size_t count = n - at < T ? n - at : T;
        /* The tile buffers are rewritten: the kernel that reads them first
         * ends (a copy need not wait for kernels, as OpenCL's does not). */
        if (at > 0 && (!rx || !ry) && (st = g->bops->synchronize(g->backend)) != GRAIN_OK)
            break;
        uint64_t ix = incx, iy = incy, cnt = count;
        const unsigned char *xs = x + at * incx * es;
        unsigned char *ys = y + at * incy * es;
        const unsigned char *xp = xs;
        unsigned char *yp = ys;
        if (!rx) { /* a strided vector is a 1 x count matrix of leading dimension inc */
            pack(staging, xs, incx, 0, 1, count, es);
            st = g->bops->copy(g->backend, dx, staging, count * es);
            xp = dx;
            ix = 1;
        }
        if (st == GRAIN_OK && !ry) {
            pack(staging, ys, incy, 0, 1, count, es);
            st = g->bops->copy(g->backend, dy, staging, count * es);
            yp = dy;
            iy = 1;
        }
        if (st == GRAIN_OK)
            st = launch_axpy(g, bk, es, yp, iy, xp, ix, cnt, alpha);
        if (st == GRAIN_OK && !ry && (st = g->bops->synchronize(g->backend)) == GRAIN_OK &&
            (st = g->bops->copy(g->backend, staging, dy, count * es)) == GRAIN_OK)
            unpack(ys, incy, staging, 1, count, es);
    }
    grain_status_t done = g->bops->synchronize(g->backend);
    st = st != GRAIN_OK ? st : done;
    if (staging != NULL)
        g->bops->free_shared(g->backend, staging);
    if (dx != NULL)
        g->bops->free_device(g->backend, dx);
    if (dy != NULL)
        g->bops->free_device(g->backend, dy);
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
