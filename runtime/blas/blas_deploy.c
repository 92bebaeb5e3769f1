/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Deployment (CoCoPeLia section IV-A) and the selection it feeds
 * (section IV-B): grain_blas_deploy measures the rank's device, and
 * grain_blas_predict and grain_blas_select read what it kept.
 *
 * The links: t_i is the median of one-byte copies; t_b the least-squares
 * slope through the origin of square copies of doubles, D = 256 to 16384
 * in steps of 256 (on a CPU device, 64 to 1024 in steps of 64); sl the
 * same slope with a second thread copying the other way over the slope
 * alone.  Copies go as the routines' host operands do: from pageable
 * memory through the staging where they are staged, else from page-locked
 * memory on the lanes; where page-locked operands pass the staging, that
 * path is measured too.  The kernels: the tile kernels the routines use
 * (the vendor's where it loads) at each tile size, gemm T = 256 to 16384
 * in steps of 256 and axpy N = 2^18 to 2^26 in steps of 2^18 (a CPU
 * device, where grain's kernels are slow and the CI runs: 16 to 128 by
 * 16, 2^14 to 2^18 by 2^14), until one kernel takes longer than a second.
 * Every sample is repeated until the 95% confidence interval of its mean
 * is within 5% of it, at most 20 times.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "grain/blas.h"
#include "runtime/blas/blas_fit.h"
#include "runtime/blas/blas_profile.h"
#include "runtime/blas/blas_run.h"
#include "runtime/blas/blas_stage.h"
#include "runtime/grain_impl.h"
#include "services/backoff.h"
#include "services/cache_path.h"
#include "services/log.h"

#define SAMPLE_REPS_MAX 20u
#define SAMPLE_REPS_MIN 3u
#define KERNEL_SECONDS_MAX 1.0
/* Kernels shorter than this are timed in a batch queued back to back, as
 * the routines queue them: one at a time, waited for, an H200's dgemm of
 * 256 took 25 us and of 1024 60 us, ~20 us of them the launch and the
 * wait, and the model `schedule` predicted T = 1024 up to 38% slow. */
#define KERNEL_BATCH_SECONDS 1e-3

typedef struct ranges {
    size_t copy_step, copy_max;      /* square copies of doubles, D */
    size_t gemm_step, gemm_max;      /* T */
    size_t axpy_step, axpy_max;      /* N */
} ranges_t;

static ranges_t ranges_of(const grain_t *g)
{
    if (g->binfo.device_memory > 0)
        return (ranges_t){256, 16384, 256, 16384, 1u << 18, 1u << 26};
    return (ranges_t){64, 1024, 16, 128, 1u << 14, 1u << 18};
}

/* The mean seconds of fn(arg), repeated until it settles. */
static grain_status_t sample(grain_status_t (*fn)(void *), void *arg, double *mean_p)
{
    double t[SAMPLE_REPS_MAX];
    unsigned n = 0;
    /* Once untimed: the first launch of a kernel or copy of a size pays
     * for compiling, paging and caches. */
    grain_status_t first = fn(arg);
    if (first != GRAIN_OK)
        return first;
    for (; n < SAMPLE_REPS_MAX; n++) {
        uint64_t t0 = grain_now_ns();
        grain_status_t st = fn(arg);
        if (st != GRAIN_OK)
            return st;
        t[n] = (double)(grain_now_ns() - t0) * 1e-9;
        if (n + 1 >= SAMPLE_REPS_MIN && blas_mean_settled(t, n + 1, 0.05)) {
            n++;
            break;
        }
    }
    *mean_p = blas_mean(t, n);
    return GRAIN_OK;
}

/* A copy as the routines make it, of rows x cols elements of es bytes (the
 * host's ld apart): through a staging on a lane where they stage
 * (blas_stage.h), else on the lane straight. */
typedef struct copy_job {
    grain_t *g;
    blas_stage_t *stage;
    unsigned lane;
    int h2d;
    unsigned char *host, *dev;
    size_t rows, cols, ld, es;
} copy_job_t;

static grain_status_t copy_once(void *arg)
{
    copy_job_t *j = arg;
    const grain_backend_ops_t *o = j->g->bops;
    size_t width = j->rows * j->es;
    grain_status_t st;
    if (j->stage != NULL)
        st = blas_stage_move(j->stage, j->lane, !j->h2d, j->host, j->ld, j->dev, j->rows, j->cols, j->es);
    else if (j->cols == 1 || j->ld == j->rows) /* one contiguous copy, as the routines make it */
        st = o->copy_async(j->g->backend, j->lane, j->h2d ? (void *)j->dev : j->host, j->h2d ? j->host : j->dev,
                           width * j->cols);
    else if (j->h2d)
        st = o->copy_rect_async(j->g->backend, j->lane, j->dev, width, j->host, j->ld * j->es, width, j->cols);
    else
        st = o->copy_rect_async(j->g->backend, j->lane, j->host, j->ld * j->es, j->dev, width, width, j->cols);
    grain_status_t waited = o->copy_wait(j->g->backend, j->lane);
    grain_status_t drained = j->stage != NULL ? blas_stage_drain(j->stage) : GRAIN_OK;
    return st != GRAIN_OK ? st : waited != GRAIN_OK ? waited : drained;
}

/* A copy one way of rows x cols elements of es bytes, the host's ld apart. */
static copy_job_t copy_of(grain_t *g, blas_stage_t *stage, int h2d, unsigned char *host, unsigned char *dev,
                          size_t rows, size_t cols, size_t ld, size_t es)
{
    return (copy_job_t){.g = g, .stage = stage, .lane = h2d ? BLAS_H2D : BLAS_D2H, .h2d = h2d, .host = host,
                        .dev = dev, .rows = rows, .cols = cols, .ld = ld, .es = es};
}

/* fn(arg) over and over on a thread of its own, while something else is
 * timed beside it: the other direction's copies, or kernels. */
typedef struct beside {
    grain_status_t (*fn)(void *);
    void *arg;
    atomic_int stop;
    grain_status_t status;
    pthread_t thread;
} beside_t;

static void *beside_loop(void *arg)
{
    beside_t *b = arg;
    while (!atomic_load(&b->stop) && b->status == GRAIN_OK)
        b->status = b->fn(b->arg);
    return NULL;
}

/* The mean seconds of fn(arg) with b running. */
static grain_status_t sample_beside(beside_t *b, grain_status_t (*fn)(void *), void *arg, double *mean_p)
{
    atomic_store(&b->stop, 0);
    b->status = GRAIN_OK;
    if (pthread_create(&b->thread, NULL, beside_loop, b) != 0)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "blas: no thread to deploy with");
    grain_status_t st = sample(fn, arg, mean_p);
    atomic_store(&b->stop, 1);
    pthread_join(b->thread, NULL);
    return st != GRAIN_OK ? st : b->status;
}

/* One direction's link: into the device when `h2d`; the other way, for
 * its slowdown, through `other`'s staging. */
static grain_status_t deploy_link(grain_t *g, const ranges_t *r, int h2d, unsigned char *host, unsigned char *dev,
                                  blas_stage_t *mine, blas_stage_t *other, blas_link_t *l)
{
    size_t half = r->copy_max * r->copy_max * 8;
    copy_job_t one = copy_of(g, mine, h2d, host, dev, 1, 1, 1, 1);
    double ones[SAMPLE_REPS_MAX * 2];
    grain_status_t st = GRAIN_OK;
    for (unsigned i = 0; i < SAMPLE_REPS_MAX * 2 && st == GRAIN_OK; i++) {
        uint64_t t0 = grain_now_ns();
        st = copy_once(&one);
        ones[i] = (double)(grain_now_ns() - t0) * 1e-9;
    }
    l->t_i = blas_median(ones, SAMPLE_REPS_MAX * 2);
    size_t n = r->copy_max / r->copy_step;
    double *bytes = calloc(n, sizeof *bytes), *alone = calloc(n, sizeof *alone), *both = calloc(n, sizeof *both);
    if (bytes == NULL || alone == NULL || both == NULL)
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "blas: no memory to deploy");
    for (size_t i = 0; i < n && st == GRAIN_OK; i++) {
        size_t d = r->copy_step * (i + 1);
        bytes[i] = (double)d * (double)d * 8.0;
        copy_job_t job = copy_of(g, mine, h2d, host, dev, (size_t)bytes[i], 1, (size_t)bytes[i], 1);
        /* The other way: the second halves of both buffers. */
        copy_job_t back = copy_of(g, other, !h2d, host + half, dev + half, job.rows, 1, job.rows, 1);
        beside_t b = {.fn = copy_once, .arg = &back};
        st = sample(copy_once, &job, &alone[i]);
        if (st == GRAIN_OK)
            st = sample_beside(&b, copy_once, &job, &both[i]);
    }
    if (st == GRAIN_OK) {
        l->t_b = blas_fit_t_b(bytes, alone, n, l->t_i);
        double t_bid = blas_fit_t_b(bytes, both, n, l->t_i);
        l->sl = l->t_b > 0 && t_bid > l->t_b ? t_bid / l->t_b : 1.0;
        if (l->t_b <= 0)
            st = grain_fail(GRAIN_ERR_BACKEND, "blas: the copies %s the device took no time to fit (a byte "
                            "%.3g us, %zu bytes %.3g us)", h2d ? "to" : "from", l->t_i * 1e6, (size_t)bytes[n - 1],
                            alone[n - 1] * 1e6);
    }
    free(bytes);
    free(alone);
    free(both);
    return st;
}

typedef struct kernel_job {
    grain_t *g;
    unsigned routine;
    size_t t;
    unsigned count; /* kernels a run, back to back */
    void *a, *b, *c;
} kernel_job_t;

static grain_status_t kernel_once(void *arg)
{
    kernel_job_t *j = arg;
    return blas_run_tile(j->g, j->routine, j->t, j->count, j->a, j->b, j->c);
}

/* The seconds of one kernel of the job's tile in a run of kernels back to
 * back: alone where one takes KERNEL_BATCH_SECONDS, else in a batch that
 * long. */
static grain_status_t kernel_seconds(kernel_job_t *j, double *t_p)
{
    j->count = 1;
    grain_status_t st = sample(kernel_once, j, t_p);
    if (st != GRAIN_OK || *t_p >= KERNEL_BATCH_SECONDS)
        return st;
    j->count = (unsigned)ceil(KERNEL_BATCH_SECONDS / fmax(*t_p, 1e-7));
    st = sample(kernel_once, j, t_p);
    *t_p /= j->count;
    j->count = 1;
    return st;
}

/* The widest host matrix, in doubles between columns, whose tile copies
 * are deployed: eight times the pitch past which an H200's copies slow
 * (64 KiB, docs/blas.md), so that a step like it elsewhere is seen too. */
#define TILE_LD_MAX (1u << 16)

/* Whether a T x T tile of doubles with columns ld apart is deployed from a
 * host buffer of host_bytes. */
static int tile_deployed(size_t t, size_t ld, size_t host_bytes)
{
    return ld <= TILE_LD_MAX && ld * t * 8 <= host_bytes;
}

/* The tile side deployed after t: gemm's step times 1, 1.5, 2, 3, 4, 6,
 * ...  Doubling alone missed where the slowdown beside kernels peaks: on
 * an H200 it is x1.0 at T = 1024, x1.66 at 1536, x1.5 at 2048, x1.12 at
 * 3072 (docs/blas.md), and an interpolation between 2048 and 4096 put
 * 3072 at x1.35. */
static size_t side_after(size_t t, size_t step)
{
    size_t r = 2 * t / step; /* 2, 3, 4, 6, 8, 12, ... */
    return (r & (r - 1)) == 0 ? t + t / 2 : t / 3 * 4;
}

/* Link `link`'s tile copies (blas_tile_copies_t): T x T tiles of doubles,
 * T from gemm's step (side_after) to half its largest (so that the
 * kernel's three tiles and the copy's fit the device buffer), their columns
 * LD apart in the host buffer, LD from T (one contiguous copy) doubling;
 * each alone and while dgemm tile kernels of T run. */
static grain_status_t deploy_tiles(grain_t *g, const ranges_t *r, unsigned link, unsigned char *host,
                                   size_t host_bytes, unsigned char *dev, blas_stage_t *stage, blas_profile_t *p)
{
    size_t n = 0;
    for (size_t t = r->gemm_step; t <= r->gemm_max / 2; t = side_after(t, r->gemm_step))
        for (size_t ld = t; tile_deployed(t, ld, host_bytes); ld *= 2)
            n++;
    size_t *tile = calloc(n, sizeof *tile), *lds = calloc(n, sizeof *lds), i = 0;
    double *alone = calloc(n, sizeof *alone), *beside = calloc(n, sizeof *beside);
    grain_status_t st = GRAIN_OK;
    if (tile == NULL || lds == NULL || alone == NULL || beside == NULL)
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "blas: no memory to deploy");
    for (size_t t = r->gemm_step; t <= r->gemm_max / 2 && st == GRAIN_OK; t = side_after(t, r->gemm_step)) {
        size_t bytes = t * t * 8;
        kernel_job_t kj = {g, BLAS_DGEMM, t, 1, dev, dev + bytes, dev + 2 * bytes};
        beside_t b = {.fn = kernel_once, .arg = &kj};
        st = kernel_once(&kj); /* built and loaded before the copies are timed beside it */
        for (size_t ld = t; tile_deployed(t, ld, host_bytes) && st == GRAIN_OK; ld *= 2, i++) {
            copy_job_t job = copy_of(g, stage, link % 2 == 0, host, dev + 3 * bytes, t, t, ld, 8);
            tile[i] = t;
            lds[i] = ld;
            st = sample(copy_once, &job, &alone[i]);
            if (st == GRAIN_OK)
                st = sample_beside(&b, copy_once, &job, &beside[i]);
        }
    }
    if (st != GRAIN_OK) {
        free(tile);
        free(lds);
        free(alone);
        free(beside);
        return st;
    }
    p->copies[link] = n;
    p->copy_tile[link] = tile;
    p->copy_ld[link] = lds;
    p->copy_alone[link] = alone;
    p->copy_beside[link] = beside;
    return GRAIN_OK;
}

/* One path's links both ways and their tile copies, as the routines copy
 * host memory: from pageable memory through the staging `mine` where there
 * is one (the other way through `other`), else from page-locked memory on
 * the lanes. */
static grain_status_t deploy_path(grain_t *g, const ranges_t *r, unsigned char *dev, blas_stage_t *mine,
                                  blas_stage_t *other, blas_profile_t *p, unsigned path)
{
    size_t bytes = 2 * r->copy_max * r->copy_max * 8; /* a copy each way at once */
    unsigned char *host = NULL;
    grain_status_t st = GRAIN_OK;
    if (mine != NULL && (host = malloc(bytes)) == NULL)
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "blas: no host memory (%zu bytes) to deploy", bytes);
    else if (mine != NULL)
        memset(host, 0, bytes); /* paged in before it is timed */
    else
        st = g->bops->alloc_shared(g->backend, bytes, (void **)&host);
    blas_links_t *l = &p->machine.path[path];
    if (st == GRAIN_OK)
        st = deploy_link(g, r, 1, host, dev, mine, other, &l->h2d);
    if (st == GRAIN_OK)
        st = deploy_link(g, r, 0, host, dev, mine, other, &l->d2h);
    for (unsigned way = 0; way < 2 && st == GRAIN_OK; way++)
        st = deploy_tiles(g, r, 2 * path + way, host, bytes, dev, mine, p);
    if (mine != NULL)
        free(host);
    else if (host != NULL)
        g->bops->free_shared(g->backend, host);
    return st;
}

static grain_status_t deploy_kernels(grain_t *g, const ranges_t *r, unsigned routine, void *a, void *b, void *c,
                                     blas_profile_t *p)
{
    int gemm = routine == BLAS_DGEMM || routine == BLAS_SGEMM;
    size_t step = gemm ? r->gemm_step : r->axpy_step, max = gemm ? r->gemm_max : r->axpy_max, n = max / step;
    if ((p->tile[routine] = calloc(n, sizeof(size_t))) == NULL ||
        (p->seconds[routine] = calloc(n, sizeof(double))) == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "blas: no memory to deploy");
    grain_status_t st = GRAIN_OK;
    for (size_t i = 0; i < n && st == GRAIN_OK; i++) {
        kernel_job_t job = {g, routine, step * (i + 1), 1, a, b, c};
        double t;
        if ((st = kernel_seconds(&job, &t)) != GRAIN_OK)
            break;
        p->tile[routine][i] = job.t;
        p->seconds[routine][i] = t;
        p->n[routine] = i + 1;
        if (t > KERNEL_SECONDS_MAX)
            break;
    }
    return st;
}

void blas_profile_path(const grain_t *g, const char *given, char *out, size_t size)
{
    grain_cache_path(given != NULL ? given : g->config.blas_profile, "blas-profile.tsv", out, size);
}

grain_status_t grain_blas_deploy(grain_t *g, const char *profile)
{
    if (g == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_blas_deploy: no grain handle");
    char path[4096];
    blas_profile_path(g, profile, path, sizeof path);
    ranges_t r = ranges_of(g);
    /* The device's buffer: for the largest copy both ways at once, and the
     * largest tiles of each routine. */
    size_t copy = r.copy_max * r.copy_max * 8, gemm = r.gemm_max * r.gemm_max * 8, axpy = r.axpy_max * 8;
    size_t big = 2 * copy > 3 * gemm ? 2 * copy : 3 * gemm;
    big = big > 2 * axpy ? big : 2 * axpy;
    unsigned char *dev = NULL;
    blas_profile_t p = {0};
    blas_stage_t *mine = NULL, *other = NULL;
    grain_status_t st = blas_stage_of(g, &mine);
    if (st == GRAIN_OK && mine != NULL)
        st = blas_stage_open(g, &other);
    if (st == GRAIN_OK)
        st = g->bops->alloc_device(g->backend, big, (void **)&dev);
    if (st == GRAIN_OK)
        st = deploy_path(g, &r, dev, mine, other, &p, BLAS_PATH_HOST);
    blas_stage_close(other);
    p.have_links = st == GRAIN_OK;
    /* Where page-locked operands pass the staging, their own links. */
    if (st == GRAIN_OK && mine != NULL && g->bops->host_pinned != NULL) {
        st = deploy_path(g, &r, dev, NULL, NULL, &p, BLAS_PATH_PINNED);
        p.have_pinned = st == GRAIN_OK;
    }
    blas_profile_point(&p);
    for (unsigned routine = 0; routine < BLAS_ROUTINES && st == GRAIN_OK; routine++) {
        int gemm_r = routine == BLAS_DGEMM || routine == BLAS_SGEMM;
        size_t part = gemm_r ? gemm : axpy;
        st = deploy_kernels(g, &r, routine, dev, dev + part, dev + 2 * part, &p);
    }
    if (dev != NULL)
        g->bops->free_device(g->backend, dev);
    if (st == GRAIN_OK && path[0] != '\0')
        st = blas_profile_write(&p, path, grain_device_name(g));
    if (st == GRAIN_OK) {
        const blas_links_t *h = &p.machine.path[BLAS_PATH_HOST], *l = &p.machine.path[BLAS_PATH_PINNED];
        grain_info("blas: deployed %s: h2d %.3g GB/s (sl %.2f), d2h %.3g GB/s (sl %.2f); page-locked: h2d %.3g GB/s "
                   "(sl %.2f), d2h %.3g GB/s (sl %.2f)%s%s", grain_device_name(g), 1e-9 / h->h2d.t_b, h->h2d.sl,
                   1e-9 / h->d2h.t_b, h->d2h.sl, 1e-9 / l->h2d.t_b, l->h2d.sl, 1e-9 / l->d2h.t_b, l->d2h.sl,
                   path[0] ? ", kept in " : "", path);
        blas_use_profile(g, &p); /* takes it */
    }
    blas_profile_free(&p);
    return st;
}

/* ---- selection ---------------------------------------------------------- */

static grain_status_t shape_of(grain_t *g, const grain_blas_problem_t *q, unsigned *routine_p, blas_shape_t *s)
{
    if (q == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "blas: no problem");
    int ta = blas_transposed(q->transa), tb = blas_transposed(q->transb);
    switch (q->routine) {
    case GRAIN_BLAS_DGEMM:
    case GRAIN_BLAS_SGEMM: {
        size_t es = q->routine == GRAIN_BLAS_DGEMM ? 8 : 4;
        if (q->m == 0 || q->n == 0 || q->k == 0)
            return grain_fail(GRAIN_ERR_INVALID, "blas: gemm of %zu x %zu x %zu: nothing to tile", q->m, q->n, q->k);
        /* Each operand's rows and columns as it is stored, and its leading dimension. */
        size_t rows[3] = {ta ? q->k : q->m, tb ? q->n : q->k, q->m};
        size_t cols[3] = {ta ? q->m : q->k, tb ? q->k : q->n, q->n};
        size_t ld[3] = {q->lda ? q->lda : rows[0], q->ldb ? q->ldb : rows[1], q->ldc ? q->ldc : rows[2]};
        grain_status_t ld_ok = blas_check_ld("blas", ta, tb, q->m, q->n, q->k, ld[0], ld[1], ld[2]);
        if (ld_ok != GRAIN_OK)
            return ld_ok;
        blas_shape_gemm(s, q->m, q->n, q->k, es, blas_where(g, q->a, rows[0], cols[0], es),
                        blas_where(g, q->b, rows[1], cols[1], es), blas_where(g, q->c, rows[2], cols[2], es),
                        q->beta_zero);
        for (unsigned i = 0; i < 3; i++)
            s->op[i].ld = ld[i];
        *routine_p = q->routine == GRAIN_BLAS_DGEMM ? BLAS_DGEMM : BLAS_SGEMM;
        return GRAIN_OK;
    }
    case GRAIN_BLAS_DAXPY:
    case GRAIN_BLAS_SAXPY: {
        size_t es = q->routine == GRAIN_BLAS_DAXPY ? 8 : 4;
        if (q->n == 0)
            return grain_fail(GRAIN_ERR_INVALID, "blas: axpy of 0 elements: nothing to tile");
        blas_shape_axpy(s, q->n, es, blas_where(g, q->a, 1, q->n, es), blas_where(g, q->b, 1, q->n, es));
        *routine_p = q->routine == GRAIN_BLAS_DAXPY ? BLAS_DAXPY : BLAS_SAXPY;
        return GRAIN_OK;
    }
    default:
        return grain_fail(GRAIN_ERR_INVALID, "blas: routine %d is none of grain_blas_routine_t's", (int)q->routine);
    }
}

/* The problem's shape and the device's profile, for `what` (which needs
 * an output, `out`). */
static grain_status_t ready(grain_t *g, const char *what, const void *out, const grain_blas_problem_t *q,
                            grain_blas_model_t model, unsigned *routine_p, blas_shape_t *s, const blas_profile_t **p_p)
{
    if (g == NULL || out == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "%s needs a grain handle and an output", what);
    if ((unsigned)model >= BLAS_MODELS)
        return grain_fail(GRAIN_ERR_INVALID, "blas: model %d is none of grain_blas_model_t's", (int)model);
    grain_status_t st = shape_of(g, q, routine_p, s);
    if (st != GRAIN_OK)
        return st;
    char path[4096];
    blas_profile_path(g, NULL, path, sizeof path);
    const blas_profile_t *p = blas_profile_of(g, path);
    if (p == NULL || p->n[*routine_p] == 0)
        return grain_fail(GRAIN_ERR_STATE, "blas: no %s profile of %s in %s: deploy first (grain_blas_deploy)",
                          blas_routine_names[*routine_p], grain_device_name(g), path[0] ? path : "(none)");
    *p_p = p;
    return GRAIN_OK;
}

grain_status_t grain_blas_predict(grain_t *g, const grain_blas_problem_t *q, size_t tile, grain_blas_model_t model,
                                  double *t_p)
{
    unsigned routine;
    blas_shape_t s;
    const blas_profile_t *p;
    grain_status_t st = ready(g, "grain_blas_predict", t_p, q, model, &routine, &s, &p);
    if (st != GRAIN_OK)
        return st;
    double t_gpu = blas_profile_seconds(p, routine, tile);
    if (t_gpu < 0.0)
        return grain_fail(GRAIN_ERR_INVALID, "grain_blas_predict: tile %zu was not deployed for %s (%zu to %zu)",
                          tile, blas_routine_names[routine], p->tile[routine][0],
                          p->tile[routine][p->n[routine] - 1]);
    *t_p = blas_predict((blas_model_t)model, &p->machine, &s, tile, t_gpu);
    return GRAIN_OK;
}

grain_status_t grain_blas_select(grain_t *g, const grain_blas_problem_t *q, grain_blas_model_t model,
                                 size_t *tile_p)
{
    unsigned routine;
    blas_shape_t s;
    const blas_profile_t *p;
    grain_status_t st = ready(g, "grain_blas_select", tile_p, q, model, &routine, &s, &p);
    if (st != GRAIN_OK)
        return st;
    blas_cache_t *cache = blas_cache_of(g);
    uint32_t flags = (uint32_t)(s.op[0].get | s.op[1].get << 1 | s.op[2].get << 2 | s.op[2].set << 3);
    flags |= (uint32_t)(blas_transposed(q->transa) << 4 | blas_transposed(q->transb) << 5);
    for (unsigned i = 0; i < s.opd; i++)
        flags |= s.op[i].path << (6 + i);
    blas_cache_key_t key = {.routine = routine, .model = (uint32_t)model, .flags = flags,
                            .d = {s.d[0], s.d[1], s.d[2]}, .ld = {s.op[0].ld, s.op[1].ld, s.op[2].ld}};
    size_t tile = cache != NULL ? blas_cache_get(cache, &key) : 0;
    if (tile == 0) {
        blas_lookup_t lk = blas_profile_lookup(p, routine);
        tile = blas_select_tile((blas_model_t)model, &p->machine, &s, &lk, NULL);
        if (cache != NULL)
            blas_cache_put(cache, &key, tile);
    }
    *tile_p = tile;
    return GRAIN_OK;
}
