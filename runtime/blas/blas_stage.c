/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Host rectangles through pinned chunks (blas_stage.h).  Chunks are taken
 * round robin from one ring, both ways: taking one waits for its last copy
 * and, where that copy came back, unpacks it first, so results are
 * unpacked while later tiles go in (a ring each way, whose copies in never
 * wait for a tile's kernels, measured 5-22% slower on an H200).  Every
 * copy waited for was queued with its own waits before, so the wait ends.
 * The copy threads split a rectangle by columns, or each column by bytes
 * where it has fewer columns than threads; the calling thread copies its
 * share too.
 */
#include "runtime/blas/blas_stage.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "services/backoff.h"
#include "services/cores.h"
#include "services/log.h"

#define CHUNK_BYTES (8u << 20)
#define CHUNKS 8u
/* Alone, more threads copy faster (on an H200's 16-core host 8 threads
 * packed 36-55 GB/s, 16 threads 65-93 GB/s), but with the device's
 * copies running both ways the host's memory is the limit: 16 threads
 * did not speed a gemm up. */
#define THREADS_MAX 8u
/* Below this a rectangle is copied by the calling thread alone: waking the
 * others costs more. */
#define PARALLEL_BYTES (256u << 10)

/* cols columns of width bytes, sld apart at src and dld apart at dst. */
typedef struct rect {
    unsigned char *dst;
    const unsigned char *src;
    size_t dld, sld, width, cols;
} rect_t;

typedef struct chunk {
    unsigned char *host; /* CHUNK_BYTES of pinned memory */
    unsigned lane;
    uint64_t mark; /* its last copy's on `lane`, 0 when none is in flight */
    int out;       /* that copy came back: `unpack` is still to do */
    rect_t unpack;
} chunk_t;

typedef struct worker {
    struct blas_stage *s;
    unsigned index; /* its share, from 1 (the caller's is 0) */
    pthread_t thread;
} worker_t;

struct blas_stage {
    grain_t *g;
    chunk_t chunks[CHUNKS];
    unsigned next;
    worker_t workers[THREADS_MAX - 1];
    unsigned n_workers;
    pthread_mutex_t lock;
    pthread_cond_t go, done;
    uint64_t generation; /* of `job` */
    unsigned finished;   /* workers done with it */
    int quit;
    rect_t job;
    blas_stage_times_t times;
};

static void share(const rect_t *r, unsigned part, unsigned parts)
{
    if (r->cols >= parts) {
        for (size_t c = r->cols * part / parts; c < r->cols * (part + 1) / parts; c++)
            memcpy(r->dst + c * r->dld, r->src + c * r->sld, r->width);
        return;
    }
    size_t b0 = r->width * part / parts, b1 = r->width * (part + 1) / parts;
    for (size_t c = 0; c < r->cols && b1 > b0; c++)
        memcpy(r->dst + c * r->dld + b0, r->src + c * r->sld + b0, b1 - b0);
}

static void *work(void *arg)
{
    worker_t *w = arg;
    blas_stage_t *s = w->s;
    uint64_t seen = 0;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->generation == seen && !s->quit)
            pthread_cond_wait(&s->go, &s->lock);
        if (s->quit)
            break;
        seen = s->generation;
        rect_t job = s->job;
        pthread_mutex_unlock(&s->lock);
        share(&job, w->index, s->n_workers + 1);
        pthread_mutex_lock(&s->lock);
        if (++s->finished == s->n_workers)
            pthread_cond_signal(&s->done);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void copy_parts(blas_stage_t *s, const rect_t *r)
{
    if (s->n_workers == 0 || r->width * r->cols < PARALLEL_BYTES) {
        share(r, 0, 1);
        return;
    }
    pthread_mutex_lock(&s->lock);
    s->job = *r;
    s->finished = 0;
    s->generation++;
    pthread_cond_broadcast(&s->go);
    pthread_mutex_unlock(&s->lock);
    share(r, 0, s->n_workers + 1);
    pthread_mutex_lock(&s->lock);
    while (s->finished < s->n_workers)
        pthread_cond_wait(&s->done, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

/* A rectangle copied by every thread, its time counted in `*ns`. */
static void copy(blas_stage_t *s, const rect_t *r, uint64_t *ns)
{
    uint64_t t0 = grain_now_ns();
    copy_parts(s, r);
    *ns += grain_now_ns() - t0;
}

/* The chunk's last copy done, and unpacked where it came back. */
static grain_status_t settle(blas_stage_t *s, chunk_t *c)
{
    grain_t *g = s->g;
    grain_backoff_t b = {0};
    int done = 1;
    uint64_t t0 = grain_now_ns();
    while (c->mark != 0 && (done = g->bops->copy_done(g->backend, c->lane, c->mark)) == 0)
        grain_backoff_idle_patient(&b, GRAIN_BACKOFF_PATIENCE_NS);
    s->times.wait_ns += grain_now_ns() - t0;
    c->mark = 0;
    if (done < 0) {
        c->out = 0;
        grain_status_t st = g->bops->copy_wait(g->backend, c->lane);
        return st != GRAIN_OK ? st : grain_fail(GRAIN_ERR_BACKEND, "blas: a staged copy failed");
    }
    if (c->out) {
        c->out = 0;
        copy(s, &c->unpack, &s->times.unpack_ns);
    }
    return GRAIN_OK;
}

static grain_status_t take(blas_stage_t *s, chunk_t **c_p)
{
    *c_p = &s->chunks[s->next];
    s->next = (s->next + 1) % CHUNKS;
    return settle(s, *c_p);
}

/* A rectangle in pieces that fit a chunk: whole columns where a column
 * does, else a column in pieces; {0} before the first. */
typedef struct piece {
    size_t c0, cols, r0, rows;
} piece_t;

static int next_piece(piece_t *p, size_t rows, size_t cols, size_t es)
{
    size_t per = rows * es <= CHUNK_BYTES ? CHUNK_BYTES / (rows * es) : 0;
    if (per > 0) {
        p->c0 += p->cols;
        p->cols = cols - p->c0 < per ? cols - p->c0 : per;
        p->r0 = 0;
        p->rows = rows;
        return p->c0 < cols;
    }
    /* A column longer than a chunk: in pieces of CHUNK_BYTES / es rows. */
    size_t part = CHUNK_BYTES / es;
    p->r0 += p->rows;
    if (p->cols == 0 || p->r0 >= rows) {
        p->c0 += p->cols;
        p->r0 = 0;
    }
    p->cols = 1;
    p->rows = rows - p->r0 < part ? rows - p->r0 : part;
    return p->c0 < cols;
}

/* Contiguous columns as one column, which chunks cut anywhere. */
static void flatten(size_t ld, size_t *rows, size_t *cols)
{
    if (ld == *rows) {
        *rows *= *cols;
        *cols = 1;
    }
}

grain_status_t blas_stage_move(blas_stage_t *s, unsigned lane, int out, void *host, size_t ld, void *dev,
                               size_t rows, size_t cols, size_t es)
{
    flatten(ld, &rows, &cols);
    grain_status_t st = GRAIN_OK;
    piece_t p = {0};
    while (st == GRAIN_OK && next_piece(&p, rows, cols, es)) {
        chunk_t *c = NULL;
        if ((st = take(s, &c)) != GRAIN_OK)
            break;
        unsigned char *at_host = (unsigned char *)host + (p.c0 * ld + p.r0) * es;
        /* Packed, the piece is contiguous on the device too. */
        unsigned char *at_dev = (unsigned char *)dev + (p.c0 * rows + p.r0) * es;
        size_t bytes = p.rows * p.cols * es;
        if (!out)
            copy(s, &(rect_t){.dst = c->host, .src = at_host, .dld = p.rows * es, .sld = ld * es,
                              .width = p.rows * es, .cols = p.cols},
                 &s->times.pack_ns);
        st = s->g->bops->copy_async(s->g->backend, lane, out ? c->host : at_dev, out ? at_dev : c->host, bytes);
        c->lane = lane;
        if (st == GRAIN_OK)
            st = s->g->bops->copy_mark(s->g->backend, lane, &c->mark);
        if (st == GRAIN_OK && out) {
            c->out = 1;
            c->unpack = (rect_t){.dst = at_host, .src = c->host, .dld = ld * es, .sld = p.rows * es,
                                 .width = p.rows * es, .cols = p.cols};
        }
    }
    return st;
}

grain_status_t blas_stage_drain(blas_stage_t *s)
{
    grain_status_t st = GRAIN_OK;
    for (unsigned i = 0; i < CHUNKS; i++) {
        grain_status_t one = settle(s, &s->chunks[(s->next + i) % CHUNKS]);
        st = st != GRAIN_OK ? st : one;
    }
    return st;
}

blas_stage_times_t blas_stage_times_take(blas_stage_t *s)
{
    blas_stage_times_t t = s->times;
    s->times = (blas_stage_times_t){0};
    return t;
}

grain_status_t blas_stage_open(grain_t *g, blas_stage_t **s_p)
{
    blas_stage_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "blas: no memory for the staging");
    s->g = g;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->go, NULL);
    pthread_cond_init(&s->done, NULL);
    grain_status_t st = GRAIN_OK;
    for (unsigned i = 0; i < CHUNKS && st == GRAIN_OK; i++)
        st = g->bops->alloc_shared(g->backend, CHUNK_BYTES, (void **)&s->chunks[i].host);
    long mine = grain_rank_cores().mine;
    unsigned want = mine > (long)THREADS_MAX ? THREADS_MAX : (unsigned)mine;
    for (; st == GRAIN_OK && s->n_workers + 1 < want; s->n_workers++) {
        worker_t *w = &s->workers[s->n_workers];
        *w = (worker_t){.s = s, .index = s->n_workers + 1};
        if (pthread_create(&w->thread, NULL, work, w) != 0)
            break; /* fewer threads copy */
    }
    if (st != GRAIN_OK) {
        blas_stage_close(s);
        return st;
    }
    *s_p = s;
    return GRAIN_OK;
}

void blas_stage_close(blas_stage_t *s)
{
    if (s == NULL)
        return;
    blas_stage_drain(s);
    pthread_mutex_lock(&s->lock);
    s->quit = 1;
    pthread_cond_broadcast(&s->go);
    pthread_mutex_unlock(&s->lock);
    for (unsigned i = 0; i < s->n_workers; i++)
        pthread_join(s->workers[i].thread, NULL);
    for (unsigned i = 0; i < CHUNKS; i++)
        if (s->chunks[i].host != NULL)
            s->g->bops->free_shared(s->g->backend, s->chunks[i].host);
    pthread_cond_destroy(&s->done);
    pthread_cond_destroy(&s->go);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
