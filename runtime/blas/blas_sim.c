/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/blas/blas_sim.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define NONE UINT32_MAX

enum { H2D, RUN, D2H, LANES };

typedef struct op {
    unsigned lane, path;
    double work;     /* seconds alone */
    double beside;   /* a copy's slowdown while a kernel runs */
    uint32_t dep[2]; /* ops it waits for, or NONE */
} op_t;

typedef struct plan {
    op_t *op;
    uint32_t n, cap;
    uint32_t last[LANES]; /* each lane's newest op */
    size_t tile;
    int gemm; /* the slowdown beside kernels applies: it was deployed beside gemm's */
} plan_t;

/* Among the deployed copies of the tile side starting at entry `first`, the
 * one whose host columns lie furthest apart without passing `pitch` bytes;
 * the first where all pass it. */
static size_t by_pitch(const blas_tile_copies_t *c, size_t first, double pitch)
{
    size_t at = first;
    while (at + 1 < c->n && c->tile[at + 1] == c->tile[first] && (double)c->ld[at + 1] * 8.0 <= pitch)
        at++;
    return at;
}

/* The first entry of the tile side after the one at `first`, or `first`. */
static size_t next_side(const blas_tile_copies_t *c, size_t first)
{
    size_t at = first;
    while (at < c->n && c->tile[at] == c->tile[first])
        at++;
    return at < c->n ? at : first;
}

/* A deployed tile copy's factor at T, its host columns `pitch` bytes
 * apart: its seconds alone over the link's for its bytes (a 2-D copy's
 * cost), or `beside` a kernel over alone; between deployed sides by log T,
 * the nearest past either end; 1 where none were deployed. */
static double factor(const blas_link_t *l, size_t T, double pitch, int beside)
{
    const blas_tile_copies_t *c = &l->tiles;
    if (c->n == 0)
        return 1.0;
    size_t lo = 0, hi;
    while ((hi = next_side(c, lo)) != lo && c->tile[hi] <= T)
        lo = hi;
    size_t side[2] = {lo, hi};
    double f[2];
    for (unsigned e = 0; e < 2; e++) {
        size_t at = by_pitch(c, side[e], pitch);
        double t = (double)c->tile[at], link = l->t_i + l->t_b * t * t * 8.0;
        double over = beside ? c->alone[at] : link, f_at = (beside ? c->beside[at] : c->alone[at]) / over;
        f[e] = over > 0.0 && f_at > 0.0 ? f_at : 1.0;
    }
    if (T <= c->tile[lo] || hi == lo)
        return f[0];
    double x = (log2((double)T) - log2((double)c->tile[lo])) / (log2((double)c->tile[hi]) - log2((double)c->tile[lo]));
    return f[0] + x * (f[1] - f[0]);
}

static uint32_t add(plan_t *p, unsigned lane, unsigned path, double work, uint32_t dep0, uint32_t dep1)
{
    if (p->op == NULL || p->n == p->cap)
        return NONE;
    p->op[p->n] = (op_t){lane, path, work, 1.0, {dep0, dep1}};
    p->last[lane] = p->n;
    return p->n++;
}

/* How an operand's copies one way cost: its path's link, and the deployed
 * factors at the call's T and the operand's pitch (a 2-D copy's, and
 * beside a kernel for gemm), the same for every tile of the call. */
typedef struct copy_cost {
    const blas_link_t *l;
    unsigned path;
    double two_d, beside;
} copy_cost_t;

static copy_cost_t cost_of(const plan_t *p, const blas_machine_t *m, const blas_operand_t *o, size_t dtype,
                           unsigned lane)
{
    const blas_link_t *l = lane == H2D ? &m->path[o->path].h2d : &m->path[o->path].d2h;
    double pitch = (double)o->ld * (double)dtype;
    return (copy_cost_t){l, o->path, factor(l, p->tile, pitch, 0), p->gemm ? factor(l, p->tile, pitch, 1) : 1.0};
}

/* A copy of rows x cols elements on `lane`, costing c: the link's time, as
 * a 2-D tile copy costs where it has columns. */
static uint32_t add_copy(plan_t *p, unsigned lane, const copy_cost_t *c, size_t rows, size_t cols, size_t dtype,
                         uint32_t dep0, uint32_t dep1)
{
    double bytes = (double)rows * (double)cols * (double)dtype;
    uint32_t at = add(p, lane, c->path, (c->l->t_i + c->l->t_b * bytes) * (cols > 1 ? c->two_d : 1.0), dep0, dep1);
    if (at != NONE)
        p->op[at].beside = c->beside;
    return at;
}

static size_t part(size_t extent, size_t at, size_t tile)
{
    return extent - at < tile ? extent - at : tile;
}

/* gemm_tiles' order: C's tiles column by column, each through its K steps;
 * each tile of A and B copied at its first use; a C slot filled again once
 * its last tile went back; C back after its last step, the kernels of a step
 * after the copies queued before them. */
static void plan_gemm(plan_t *p, const blas_machine_t *m, const blas_shape_t *s, size_t T, double t_gpu)
{
    size_t M = s->d[0], N = s->d[1], K = s->d[2], mt = (M + T - 1) / T, nt = (N + T - 1) / T, kt = (K + T - 1) / T;
    const blas_operand_t *a = &s->op[0], *b = &s->op[1], *c = &s->op[2];
    copy_cost_t a_in = cost_of(p, m, a, s->dtype, H2D), b_in = cost_of(p, m, b, s->dtype, H2D);
    copy_cost_t c_in = cost_of(p, m, c, s->dtype, H2D), c_out = cost_of(p, m, c, s->dtype, D2H);
    unsigned char *copied = calloc(mt * kt + kt * nt, 1);
    if (copied == NULL) {
        free(p->op);
        p->op = NULL;
        return;
    }
    uint32_t slot_back[BLAS_C_SLOTS];
    for (unsigned i = 0; i < BLAS_C_SLOTS; i++)
        slot_back[i] = NONE;
    double full = (double)T * (double)T * (double)T;
    for (size_t j = 0, count = 0; j < nt; j++)
        for (size_t i = 0; i < mt; i++, count++) {
            size_t ti = part(M, i * T, T), tj = part(N, j * T, T), slot = count % BLAS_C_SLOTS;
            int fresh = c->get;
            if (c->get)
                add_copy(p, H2D, &c_in, ti, tj, s->dtype, slot_back[slot], NONE);
            /* Where beta is 0 the slot's first kernel still waits for its last tile to have gone back. */
            uint32_t first_wait = c->set && !c->get ? slot_back[slot] : NONE;
            for (size_t l = 0; l < kt; l++) {
                size_t tl = part(K, l * T, T);
                if (a->get && !copied[l * mt + i]) {
                    copied[l * mt + i] = 1;
                    add_copy(p, H2D, &a_in, ti, tl, s->dtype, NONE, NONE);
                    fresh = 1;
                }
                if (b->get && !copied[mt * kt + j * kt + l]) {
                    copied[mt * kt + j * kt + l] = 1;
                    add_copy(p, H2D, &b_in, tl, tj, s->dtype, NONE, NONE);
                    fresh = 1;
                }
                add(p, RUN, 0, t_gpu * (double)ti * (double)tj * (double)tl / full, fresh ? p->last[H2D] : NONE,
                    l == 0 ? first_wait : NONE);
                fresh = 0;
            }
            if (c->set)
                slot_back[slot] = add_copy(p, D2H, &c_out, ti, tj, s->dtype,
                                           p->last[RUN], NONE);
        }
    free(copied);
}

/* axpy's order: a slot of x and y a tile, x's slot filled again once its
 * kernel ran, y's once its y went back. */
static void plan_axpy(plan_t *p, const blas_machine_t *m, const blas_shape_t *s, size_t T, double t_gpu)
{
    const blas_operand_t *x = &s->op[0], *y = &s->op[1];
    copy_cost_t x_in = cost_of(p, m, x, s->dtype, H2D), y_in = cost_of(p, m, y, s->dtype, H2D);
    copy_cost_t y_out = cost_of(p, m, y, s->dtype, D2H);
    uint32_t ran[BLAS_C_SLOTS], back[BLAS_C_SLOTS];
    for (unsigned i = 0; i < BLAS_C_SLOTS; i++)
        ran[i] = back[i] = NONE;
    for (size_t at = 0, t = 0; at < s->d[0]; at += T, t++) {
        size_t count = part(s->d[0], at, T), slot = t % BLAS_C_SLOTS;
        if (x->get)
            add_copy(p, H2D, &x_in, count, 1, s->dtype, ran[slot], NONE);
        if (y->get)
            add_copy(p, H2D, &y_in, count, 1, s->dtype, back[slot], NONE);
        ran[slot] = add(p, RUN, 0, t_gpu * (double)count / (double)T, x->get || y->get ? p->last[H2D] : NONE, NONE);
        if (y->set)
            back[slot] = add_copy(p, D2H, &y_out, count, 1, s->dtype, ran[slot], NONE);
    }
}

static int done(const double *finish, uint32_t dep)
{
    return dep == NONE || finish[dep] >= 0.0;
}

/* The lanes run their ops in order, each once its waits are done.  A copy
 * is slowed by its link's sl while the other copy lane runs, and by the
 * deployed factor beside kernels while the call computes: from its first
 * kernel's start to its last one's end, gaps between kernels included (on
 * an H200 a pitched tile copy beside kernels busy a third of the time was
 * as slow as beside kernels busy always, x1.47 against x1.50).  The two
 * slowdowns do not compound: beside both a copy took the larger (x1.55
 * beside dgemm and the other way's copies at T = 2048, against x1.55 and
 * x1.03 apart).  Kernels keep their time (x1.00-1.02 beside copies).
 * Time advances from one op's end to the next. */
static double run(const plan_t *p, const blas_machine_t *m)
{
    double *finish = malloc((size_t)p->n * sizeof *finish), left[LANES] = {0}, t = 0.0;
    if (finish == NULL)
        return NAN;
    for (uint32_t i = 0; i < p->n; i++)
        finish[i] = -1.0;
    uint32_t next[LANES] = {0, 0, 0}, busy[LANES] = {NONE, NONE, NONE}, kernels = 0, ran = 0;
    for (uint32_t i = 0; i < p->n; i++)
        kernels += p->op[i].lane == RUN;
    for (;;) {
        for (unsigned lane = 0; lane < LANES; lane++) {
            while (busy[lane] == NONE && next[lane] < p->n && p->op[next[lane]].lane != lane)
                next[lane]++;
            if (busy[lane] == NONE && next[lane] < p->n && done(finish, p->op[next[lane]].dep[0]) &&
                done(finish, p->op[next[lane]].dep[1])) {
                busy[lane] = next[lane]++;
                left[lane] = p->op[busy[lane]].work;
            }
        }
        int computing = busy[RUN] != NONE || (ran > 0 && ran < kernels); /* ran: kernels finished */
        double rate[LANES] = {1.0, 1.0, 1.0}, step = INFINITY;
        for (unsigned lane = H2D; lane <= D2H; lane += D2H - H2D) {
            unsigned other = lane == H2D ? D2H : H2D;
            double slow = 1.0;
            if (busy[lane] != NONE && busy[other] != NONE) {
                const blas_links_t *l = &m->path[p->op[busy[lane]].path];
                slow = lane == H2D ? l->h2d.sl : l->d2h.sl;
            }
            if (busy[lane] != NONE && computing)
                slow = fmax(slow, p->op[busy[lane]].beside);
            rate[lane] /= slow;
        }
        for (unsigned lane = 0; lane < LANES; lane++)
            if (busy[lane] != NONE)
                step = fmin(step, left[lane] / rate[lane]);
        if (step == INFINITY)
            break; /* nothing runs: every op ran (a plan never waits in a circle) */
        t += step;
        for (unsigned lane = 0; lane < LANES; lane++)
            if (busy[lane] != NONE && (left[lane] -= step * rate[lane]) <= 1e-15 * (1.0 + t)) {
                finish[busy[lane]] = t;
                ran += lane == RUN;
                busy[lane] = NONE;
            }
    }
    free(finish);
    return t;
}

double blas_simulate(const blas_machine_t *m, const blas_shape_t *s, size_t tile, double t_gpu)
{
    double k = blas_subproblems(s, tile);
    if (tile == 0 || k > BLAS_SIM_STEPS_MAX)
        return NAN;
    /* A kernel a subproblem; A's and B's tiles, two copies of each of C's:
     * each count at most k. */
    plan_t p = {.cap = (uint32_t)(5.0 * k + 4.0), .tile = tile, .gemm = s->level == 3};
    p.op = malloc((size_t)p.cap * sizeof *p.op);
    for (unsigned lane = 0; lane < LANES; lane++)
        p.last[lane] = NONE;
    if (s->level == 3)
        plan_gemm(&p, m, s, tile, t_gpu);
    else
        plan_axpy(&p, m, s, tile, t_gpu);
    double t = p.op != NULL ? run(&p, m) : NAN;
    free(p.op);
    return t;
}
