/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dslash: the lattice solver of GMH (GPU Message Handler, section V, fig.
 * 10) on grain's device endpoints.  Every GPU of the job is an endpoint
 * holding a slab of t-slices of a 4-D periodic lattice; a hopping operator
 * D (dslash.cl) needs the slices beside the slab, which travel as halo
 * messages on a second stream while the slab's interior computes; the
 * surface computes once they are in.  Conjugate gradient on
 * A = m^2 - D^2 runs as registered commands in rounds of the endpoint's run
 * loop, whose two control tasks per round reduce the dot products over
 * every endpoint and set the step lengths.
 *
 *   mpirun -np N dslash [--lattice X,Y,Z,T] [--mass M] [--tol E] [--max-iter K]
 *                       [--dslash-reps R] [--devices D] [--seed S] [--verify] [--json]
 *                       [--out FILE]
 *
 * T must be a multiple of the job's endpoints.  --verify checks one D
 * against the host's reference (lattice.c) to 1e-12 and the solution's true
 * residual |b - A x| / |b| on the host; --out writes the solution, a line a
 * site (tests/oracle/check_dslash.py solves the same system with numpy).
 * The report gives CG's iterations and rate, D alone (R applications) in
 * GFLOP/s, and the device's copy bandwidth with the rate it bounds D to.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/app.h"
#include "grain/ep.h"
#include "lattice.h"

extern const char dslash_kernel_source[];

#define PARTS 256u            /* partial sums of a dot product, the same on every endpoint */
#define FLOPS_PER_SITE 570.0  /* 8 link products of 66 flops, 7 vector sums of 6 */
#define BYTES_PER_SITE 1584.0 /* 8 links, 8 neighbours and the result, no reuse */
#define TAG_UP 1              /* a slab's top slice, the next endpoint's halo_lo */
#define TAG_DOWN 2            /* its bottom slice, the previous endpoint's halo_hi */
#define GRAIN_EP_MAX_LOCAL 64 /* --devices' limit */
#define WG 64                 /* every launch's work-group; the kernels skip the items past the end */

typedef struct options {
    lattice_t lat;
    double mass, tol;
    unsigned max_iter, reps, devices;
    app_common_t common;
} options_t;

enum { OPT_LATTICE, OPT_MASS, OPT_TOL, OPT_MAX_ITER, OPT_REPS, OPT_DEVICES, OPT_SEED };

/* What endpoint 0 of each rank reports (every endpoint computes the same
 * scalars), and whether each endpoint verified. */
typedef struct report {
    unsigned iterations;
    double residual, true_residual, dslash_error; /* the last two -1 without --verify */
    double cg_s, dslash_s, copy_s;
    uint64_t copy_bytes; /* an endpoint's, per copy */
    int endpoints;
    unsigned local; /* endpoints of this rank */
} report_t;

typedef struct run {
    const options_t *o;
    report_t rep;                /* written by virtual device 0 */
    int ok[GRAIN_EP_MAX_LOCAL]; /* per virtual device: 1 verified (or not asked), 0 failed */
    char why[256];              /* the app's own refusal, which grain has no sentence for */
} run_t;

static void take(void *state, int key, const char *option, const char *value)
{
    options_t *o = state;
    if (key == OPT_LATTICE) {
        char *end = NULL;
        const char *p = value;
        for (int d = 0; d < 4; d++) {
            unsigned long v = strtoul(p, &end, 10);
            if (end == p || v < 2 || v > 4096 || (d < 3 && *end != ',') || (d == 3 && *end != '\0')) {
                fprintf(stderr, "dslash: %s takes X,Y,Z,T, each 2 to 4096, not '%s'\n", option, value);
                exit(APP_EXIT_ERROR);
            }
            o->lat.l[d] = (unsigned)v;
            p = end + 1;
        }
    } else if (key == OPT_MASS) {
        o->mass = cli_real(option, value, 1e-3, 1e3);
    } else if (key == OPT_TOL) {
        o->tol = cli_real(option, value, 1e-15, 1.0);
    } else if (key == OPT_MAX_ITER) {
        o->max_iter = (unsigned)cli_u64_in(option, value, 1, 1000000);
    } else if (key == OPT_REPS) {
        o->reps = (unsigned)cli_u64_in(option, value, 0, 1000000);
    } else if (key == OPT_DEVICES) {
        o->devices = (unsigned)cli_u64_in(option, value, 0, GRAIN_EP_MAX_LOCAL);
    } else {
        o->lat.seed = cli_u64(option, value);
    }
}

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np N dslash [--lattice X,Y,Z,T] [--mass M] [--tol E] [--max-iter K]\n"
                 "                           [--dslash-reps R] [--devices D] [--seed S] [--verify] [--json]\n"
                 "                           [--out FILE]\n"
                 "  --lattice X,Y,Z,T  the periodic lattice, T a multiple of the endpoints (default 8,8,8,16)\n"
                 "  --mass M           A = M^2 - D^2 (default 1)\n"
                 "  --tol E            CG stops at |r| / |b| <= E (default 1e-10)\n"
                 "  --max-iter K       or after K steps (default 1000)\n"
                 "  --dslash-reps R    D alone R times, for its rate (default 20; 0: not measured)\n"
                 "  --devices D        endpoints a rank (default: its share of the node's devices)\n"
                 "  --seed S           the links and the source (default 1)\n"
                 "  --out FILE         the solution x, a line a site: the site and its 6 doubles\n");
    app_config_usage(out);
}

/* An endpoint's part of the lattice and its device memory. */
typedef struct slab {
    grain_cmdq_t *q;
    const options_t *o;
    unsigned lt, t0;
    uint64_t v3, sites, n; /* n: doubles of a vector */
    int prev, next;
    grain_ep_mem_t *u, *u_below, *halo_lo, *halo_hi, *x, *r, *p, *t, *ap, *partials, *scalars;
    grain_ep_kernel_t *dslash, *dot, *update, *direction, *copy;
    double rr, bb; /* CG's (r, r) and (b, b), the same on every endpoint */
    unsigned iterations;
} slab_t;

#define TRY(call)                                                                                             \
    do {                                                                                                      \
        grain_status_t st_ = (call);                                                                          \
        if (st_ != GRAIN_OK)                                                                                  \
            return st_;                                                                                       \
    } while (0)

/* A launch's global size for `items`: whole work-groups, so that no size
 * of the lattice leaves the device a small work-group that divides it. */
static size_t grid(uint64_t items)
{
    return (size_t)((items + WG - 1) / WG * WG);
}

/* Arguments 0 .. n - 1 of `k`: the memories, from their start. */
static grain_status_t set_mems(grain_ep_kernel_t *k, grain_ep_mem_t *const *mems, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        TRY(grain_ep_kernel_arg_mem(k, i, mems[i], 0));
    return GRAIN_OK;
}

/* Registers the dslash kernel, its arguments set, on slices [from, to). */
static grain_status_t add_slices(slab_t *sl, grain_u32 from, grain_u32 to, const unsigned *after, size_t n_after,
                                 unsigned *index_p)
{
    TRY(grain_ep_kernel_arg(sl->dslash, 11, sizeof from, &from));
    TRY(grain_ep_kernel_arg(sl->dslash, 12, sizeof to, &to));
    size_t global = grid((to - from) * sl->v3), local = WG;
    return grain_ep_add_launch(sl->q, 0, sl->dslash, 1, &global, &local, after, n_after, index_p);
}

/* Registers out = a * y + b * D psi: psi's edge slices out on stream 1
 * (after `produced`, the registration that last wrote psi, or none), the
 * halos in on stream 1 (after `halos_free`, the last launch that read
 * them, or none), the interior on stream 0 meanwhile, the surface once the
 * halos are in.  *surface_p: the last launch, which reads the halos. */
static grain_status_t add_dslash(slab_t *sl, grain_ep_mem_t *out, grain_ep_mem_t *y, grain_ep_mem_t *psi, double a,
                                 double b, const unsigned *produced, const unsigned *halos_free, unsigned *surface_p)
{
    grain_cmdq_t *q = sl->q;
    size_t slice = sl->v3 * DSLASH_VEC * sizeof(double);
    unsigned halos[2];
    TRY(grain_ep_add_send(q, 1, psi, 0, slice, sl->prev, TAG_DOWN, 0, produced, produced ? 1 : 0, NULL));
    TRY(grain_ep_add_send(q, 1, psi, (sl->lt - 1) * slice, slice, sl->next, TAG_UP, 0, produced, produced ? 1 : 0,
                          NULL));
    TRY(grain_ep_add_recv(q, 1, sl->halo_lo, 0, slice, sl->prev, TAG_UP, 0, NULL, halos_free, halos_free ? 1 : 0,
                          &halos[0]));
    TRY(grain_ep_add_recv(q, 1, sl->halo_hi, 0, slice, sl->next, TAG_DOWN, 0, NULL, NULL, 0, &halos[1]));
    TRY(set_mems(sl->dslash, (grain_ep_mem_t *[]){out, y, psi, sl->u, sl->u_below, sl->halo_lo, sl->halo_hi}, 7));
    const grain_u32 dims[4] = {sl->o->lat.l[0], sl->o->lat.l[1], sl->o->lat.l[2], sl->lt};
    for (unsigned i = 0; i < 4; i++)
        TRY(grain_ep_kernel_arg(sl->dslash, 7 + i, sizeof dims[i], &dims[i]));
    TRY(grain_ep_kernel_arg(sl->dslash, 13, sizeof a, &a));
    TRY(grain_ep_kernel_arg(sl->dslash, 14, sizeof b, &b));
    if (sl->lt <= 2) /* every slice needs a halo */
        return add_slices(sl, 0, sl->lt, halos, 2, surface_p);
    TRY(add_slices(sl, 1, sl->lt - 1, NULL, 0, NULL));
    TRY(add_slices(sl, 0, 1, halos, 2, NULL));
    return add_slices(sl, sl->lt - 1, sl->lt, halos, 2, surface_p);
}

/* (a, b) over every endpoint's slab, from the partials a cg_dot or
 * cg_update left: reduced over the endpoints, then added in one order, so
 * that every endpoint has the same value. */
static grain_status_t reduce(slab_t *sl, double *sum_p)
{
    double part[PARTS], sum = 0.0;
    TRY(grain_ep_allreduce(sl->q, sl->partials, 0, PARTS, GRAIN_DOUBLE, GRAIN_SUM));
    TRY(grain_ep_mem_read(sl->q, sl->partials, 0, part, sizeof part));
    for (unsigned i = 0; i < PARTS; i++)
        sum += part[i];
    *sum_p = sum;
    return GRAIN_OK;
}

/* The control tasks: a failure is kept in the slab and ends the loop. */
typedef struct control {
    slab_t *sl;
    grain_status_t status;
    unsigned count, target; /* rounds, for D and the copy alone */
} control_t;

static int control_alpha(grain_cmdq_t *q, void *arg)
{
    control_t *c = arg;
    double pap = 0.0, alpha;
    if ((c->status = reduce(c->sl, &pap)) != GRAIN_OK)
        return GRAIN_EP_EXIT;
    alpha = c->sl->rr / pap;
    c->status = grain_ep_mem_write(q, c->sl->scalars, 0, &alpha, sizeof alpha);
    return c->status == GRAIN_OK ? GRAIN_EP_RERUN : GRAIN_EP_EXIT;
}

static int control_beta(grain_cmdq_t *q, void *arg)
{
    control_t *c = arg;
    slab_t *sl = c->sl;
    double rr = 0.0;
    if ((c->status = reduce(sl, &rr)) != GRAIN_OK)
        return GRAIN_EP_EXIT;
    double beta = rr / sl->rr;
    sl->rr = rr;
    sl->iterations++;
    if (sqrt(rr / sl->bb) <= sl->o->tol || sl->iterations >= sl->o->max_iter)
        return GRAIN_EP_EXIT;
    c->status = grain_ep_mem_write(q, sl->scalars, sizeof beta, &beta, sizeof beta);
    return c->status == GRAIN_OK ? GRAIN_EP_RERUN : GRAIN_EP_EXIT;
}

static int control_count(grain_cmdq_t *q, void *arg)
{
    (void)q;
    control_t *c = arg;
    return ++c->count < c->target ? GRAIN_EP_RERUN : GRAIN_EP_EXIT;
}

/* Runs the registered loop `target` rounds (or to its control's exit) and
 * returns this endpoint's seconds, every endpoint starting together (CG's
 * rounds end in collectives, so they end together too). */
static grain_status_t timed_start(slab_t *sl, control_t *c, unsigned target, double *seconds_p)
{
    c->count = 0;
    c->target = target;
    TRY(grain_ep_barrier(sl->q));
    double t0 = app_seconds();
    TRY(grain_ep_start(sl->q));
    TRY(c->status);
    *seconds_p = app_seconds() - t0;
    return grain_ep_barrier(sl->q);
}

/* A kernel's arguments after its `n_mems` memories: the elements and,
 * with `parts`, the partial sums' count. */
static grain_status_t set_args(grain_ep_kernel_t *k, grain_ep_mem_t *const *mems, unsigned n_mems, uint64_t n,
                               int parts)
{
    TRY(set_mems(k, mems, n_mems));
    TRY(grain_ep_kernel_arg(k, n_mems, sizeof n, &n));
    grain_u32 p = PARTS;
    return parts ? grain_ep_kernel_arg(k, n_mems + 1, sizeof p, &p) : GRAIN_OK;
}

/* Registers one CG step (the round): Ap = A p in two D, (p, Ap), alpha,
 * x and r updated with (r, r), beta, p. */
static grain_status_t add_cg_round(slab_t *sl, control_t *c)
{
    grain_cmdq_t *q = sl->q;
    unsigned first, second;
    const size_t parts = PARTS, global = grid(sl->n), local = WG;
    TRY(add_dslash(sl, sl->t, sl->p, sl->p, 0.0, 1.0, NULL, NULL, &first));
    TRY(add_dslash(sl, sl->ap, sl->p, sl->t, sl->o->mass * sl->o->mass, -1.0, &first, &first, &second));
    TRY(set_args(sl->dot, (grain_ep_mem_t *[]){sl->partials, sl->p, sl->ap}, 3, sl->n, 1));
    TRY(grain_ep_add_launch(q, 0, sl->dot, 1, &parts, &local, NULL, 0, NULL));
    TRY(grain_ep_add_control(q, control_alpha, c, NULL));
    TRY(set_args(sl->update, (grain_ep_mem_t *[]){sl->x, sl->r, sl->p, sl->ap, sl->scalars, sl->partials}, 6, sl->n,
                 1));
    TRY(grain_ep_add_launch(q, 0, sl->update, 1, &parts, &local, NULL, 0, NULL));
    TRY(grain_ep_add_control(q, control_beta, c, NULL));
    TRY(set_args(sl->direction, (grain_ep_mem_t *[]){sl->p, sl->r, sl->scalars}, 3, sl->n, 0));
    return grain_ep_add_launch(q, 0, sl->direction, 1, &global, &local, NULL, 0, NULL);
}

/* The whole lattice's links and source on the host, for the reference. */
typedef struct whole {
    double *links, *b, *scratch, *out;
} whole_t;

static void whole_free(whole_t *w)
{
    free(w->links);
    free(w->b);
    free(w->scratch);
    free(w->out);
}

static whole_t whole_make(const lattice_t *lat)
{
    uint64_t volume = lattice_volume(lat);
    whole_t w = {app_malloc(volume * 4 * DSLASH_LINK * sizeof(double)),
                 app_malloc(volume * DSLASH_VEC * sizeof(double)), app_malloc(volume * DSLASH_VEC * sizeof(double)),
                 app_malloc(volume * DSLASH_VEC * sizeof(double))};
    for (uint64_t s = 0; s < volume; s++) {
        for (unsigned mu = 0; mu < 4; mu++)
            lattice_link(lat, s, mu, w.links + (s * 4 + mu) * DSLASH_LINK);
        lattice_source(lat, s, w.b + s * DSLASH_VEC);
    }
    return w;
}

/* Allocates the slab's memory and writes its links, halo links and source
 * (x = 0, r = p = b); the lattice's T was checked against the endpoints. */
static grain_status_t slab_init(slab_t *sl, grain_cmdq_t *q, const options_t *o)
{
    const lattice_t *lat = &o->lat;
    int id = grain_ep_id(q), count = grain_ep_count(q);
    *sl = (slab_t){.q = q, .o = o, .lt = lat->l[3] / (unsigned)count, .v3 = lattice_slice(lat)};
    sl->t0 = sl->lt * (unsigned)id;
    sl->sites = sl->v3 * sl->lt;
    sl->n = sl->sites * DSLASH_VEC;
    sl->prev = (id + count - 1) % count;
    sl->next = (id + 1) % count;
    const unsigned rw = GRAIN_EP_READ | GRAIN_EP_WRITE;
    size_t vec = sl->n * sizeof(double), slice = sl->v3 * DSLASH_VEC * sizeof(double);
    TRY(grain_ep_mem_alloc(q, sl->sites * 4 * DSLASH_LINK * sizeof(double), rw, &sl->u));
    TRY(grain_ep_mem_alloc(q, sl->v3 * DSLASH_LINK * sizeof(double), rw, &sl->u_below));
    TRY(grain_ep_mem_alloc(q, slice, rw, &sl->halo_lo));
    TRY(grain_ep_mem_alloc(q, slice, rw, &sl->halo_hi));
    grain_ep_mem_t **vecs[5] = {&sl->x, &sl->r, &sl->p, &sl->t, &sl->ap};
    for (int i = 0; i < 5; i++)
        TRY(grain_ep_mem_alloc(q, vec, rw, vecs[i]));
    TRY(grain_ep_mem_alloc(q, PARTS * sizeof(double), rw, &sl->partials));
    TRY(grain_ep_mem_alloc(q, 2 * sizeof(double), rw, &sl->scalars));

    uint64_t first = (uint64_t)sl->t0 * sl->v3, below = (uint64_t)((sl->t0 + lat->l[3] - 1) % lat->l[3]) * sl->v3;
    double *links = app_malloc(sl->sites * 4 * DSLASH_LINK * sizeof(double)), *b = app_malloc(vec);
    for (uint64_t s = 0; s < sl->sites; s++) {
        for (unsigned mu = 0; mu < 4; mu++)
            lattice_link(lat, first + s, mu, links + (s * 4 + mu) * DSLASH_LINK);
        lattice_source(lat, first + s, b + s * DSLASH_VEC);
    }
    grain_status_t st = grain_ep_mem_write(q, sl->u, 0, links, sl->sites * 4 * DSLASH_LINK * sizeof(double));
    for (uint64_t s = 0; s < sl->v3 && st == GRAIN_OK; s++) /* the t-links of the slice below */
        lattice_link(lat, below + s, 3, links + s * DSLASH_LINK);
    if (st == GRAIN_OK)
        st = grain_ep_mem_write(q, sl->u_below, 0, links, sl->v3 * DSLASH_LINK * sizeof(double));
    if (st == GRAIN_OK)
        st = grain_ep_mem_write(q, sl->r, 0, b, vec);
    if (st == GRAIN_OK)
        st = grain_ep_mem_write(q, sl->p, 0, b, vec);
    memset(b, 0, vec);
    if (st == GRAIN_OK)
        st = grain_ep_mem_write(q, sl->x, 0, b, vec);
    free(links);
    free(b);
    return st;
}

static grain_status_t kernels(slab_t *sl)
{
    grain_ep_program_t *prog = NULL;
    TRY(grain_ep_program_create(sl->q, dslash_kernel_source, NULL, &prog));
    grain_status_t st = grain_ep_kernel_create(prog, "dslash", &sl->dslash);
    if (st == GRAIN_OK)
        st = grain_ep_kernel_create(prog, "cg_dot", &sl->dot);
    if (st == GRAIN_OK)
        st = grain_ep_kernel_create(prog, "cg_update", &sl->update);
    if (st == GRAIN_OK)
        st = grain_ep_kernel_create(prog, "cg_direction", &sl->direction);
    if (st == GRAIN_OK)
        st = grain_ep_kernel_create(prog, "stream_copy", &sl->copy);
    grain_ep_program_destroy(prog); /* its kernels keep it */
    return st;
}

/* The largest difference between the slab's `mem` and the same slices of
 * the host's whole-lattice vector `want`, over the largest entry of want. */
static grain_status_t slab_error(slab_t *sl, grain_ep_mem_t *mem, const double *want, double *error_p)
{
    double *got = app_malloc(sl->n * sizeof(double)), diff = 0.0, scale = 0.0;
    grain_status_t st = grain_ep_mem_read(sl->q, mem, 0, got, sl->n * sizeof(double));
    const double *w = want + (uint64_t)sl->t0 * sl->v3 * DSLASH_VEC;
    for (uint64_t j = 0; j < sl->n && st == GRAIN_OK; j++) {
        diff = fmax(diff, fabs(got[j] - w[j]));
        scale = fmax(scale, fabs(w[j]));
    }
    free(got);
    *error_p = diff / (scale > 0 ? scale : 1.0);
    return st;
}

/* Collective: the whole solution in `x`, every endpoint's slab gathered. */
static grain_status_t gather_x(slab_t *sl, double *x)
{
    grain_cmdq_t *q = sl->q;
    size_t slab_bytes = sl->n * sizeof(double), bytes = slab_bytes * (size_t)grain_ep_count(q);
    grain_ep_mem_t *all = NULL;
    TRY(grain_ep_mem_alloc(q, bytes, GRAIN_EP_READ | GRAIN_EP_WRITE, &all));
    grain_status_t st = grain_ep_mem_read(q, sl->x, 0, x, slab_bytes);
    if (st == GRAIN_OK)
        st = grain_ep_mem_write(q, all, (size_t)grain_ep_id(q) * slab_bytes, x, slab_bytes);
    if (st == GRAIN_OK)
        st = grain_ep_allgather(q, all, 0, slab_bytes);
    if (st == GRAIN_OK)
        st = grain_ep_mem_read(q, all, 0, x, bytes);
    grain_ep_mem_free(q, all);
    return st;
}

/* |b - A x| / |b| on the host. */
static double true_residual(const options_t *o, whole_t *w, const double *x)
{
    uint64_t n = lattice_volume(&o->lat) * DSLASH_VEC;
    lattice_normal(&o->lat, w->links, o->mass, x, w->scratch, w->out);
    double rr = 0.0, bb = 0.0;
    for (uint64_t j = 0; j < n; j++) {
        double d = w->b[j] - w->out[j];
        rr += d * d;
        bb += w->b[j] * w->b[j];
    }
    return sqrt(rr / bb);
}

/* --out: a line a site, "<site> <6 doubles>", in site order. */
static int write_x(const options_t *o, const double *x)
{
    FILE *f = fopen(o->common.out, "w");
    if (f == NULL)
        return 0;
    uint64_t volume = lattice_volume(&o->lat);
    for (uint64_t s = 0; s < volume; s++) {
        fprintf(f, "%llu", (unsigned long long)s);
        for (int k = 0; k < DSLASH_VEC; k++)
            fprintf(f, " %.17g", x[s * DSLASH_VEC + k]);
        fputc('\n', f);
    }
    return fclose(f) == 0;
}

/* The copy bandwidth of the slab's device: the links into a buffer of
 * their size, `reps` times. */
static grain_status_t copy_rate(slab_t *sl, control_t *c, double *seconds_p, uint64_t *bytes_p)
{
    uint64_t n = sl->sites * 4 * DSLASH_LINK;
    grain_ep_mem_t *tmp = NULL;
    TRY(grain_ep_mem_alloc(sl->q, n * sizeof(double), GRAIN_EP_READ | GRAIN_EP_WRITE | GRAIN_EP_NO_SHADOW, &tmp));
    size_t global = grid(n), local = WG;
    grain_status_t st = set_args(sl->copy, (grain_ep_mem_t *[]){tmp, sl->u}, 2, n, 0);
    if (st == GRAIN_OK)
        st = grain_ep_add_launch(sl->q, 0, sl->copy, 1, &global, &local, NULL, 0, NULL);
    if (st == GRAIN_OK)
        st = grain_ep_add_control(sl->q, control_count, c, NULL);
    if (st == GRAIN_OK)
        st = timed_start(sl, c, sl->o->reps, seconds_p);
    grain_ep_clear(sl->q);
    grain_ep_mem_free(sl->q, tmp);
    *bytes_p = n * sizeof(double);
    return st;
}

static grain_status_t endpoint(grain_cmdq_t *q, void *arg)
{
    run_t *run = arg;
    const options_t *o = run->o;
    report_t *rep = &run->rep;
    slab_t sl;
    control_t c = {&sl, GRAIN_OK, 0, 1};
    if (o->lat.l[3] % (unsigned)grain_ep_count(q) != 0) {
        if (grain_ep_vdev(q) == 0)
            snprintf(run->why, sizeof run->why, "the lattice's T extent, %u, must be a multiple of the job's %d "
                     "endpoints", o->lat.l[3], grain_ep_count(q));
        return GRAIN_ERR_INVALID;
    }
    TRY(slab_init(&sl, q, o));
    TRY(kernels(&sl));
    whole_t w = {0};
    if (o->common.verify)
        w = whole_make(&o->lat);
    double dslash_error = -1.0, true_res = -1.0, once = 0.0, dslash_s = 0.0, copy_s = 0.0, cg_s = 0.0;
    uint64_t copy_bytes = 0;

    /* D alone: once, checked, then --dslash-reps times for its rate. */
    grain_status_t st = add_dslash(&sl, sl.t, sl.p, sl.p, 0.0, 1.0, NULL, NULL, NULL);
    if (st == GRAIN_OK)
        st = grain_ep_add_control(q, control_count, &c, NULL);
    if (st == GRAIN_OK)
        st = timed_start(&sl, &c, 1, &once);
    if (st == GRAIN_OK && o->common.verify) {
        lattice_dslash(&o->lat, w.links, w.b, w.out);
        st = slab_error(&sl, sl.t, w.out, &dslash_error);
    }
    if (st == GRAIN_OK && o->reps > 0)
        st = timed_start(&sl, &c, o->reps, &dslash_s);
    grain_ep_clear(q);
    if (st == GRAIN_OK && o->reps > 0)
        st = copy_rate(&sl, &c, &copy_s, &copy_bytes);

    /* CG from x = 0: r = p = b. */
    const size_t parts = PARTS, local = WG;
    grain_ep_event_t *e = NULL;
    if (st == GRAIN_OK)
        st = set_args(sl.dot, (grain_ep_mem_t *[]){sl.partials, sl.r, sl.r}, 3, sl.n, 1);
    if (st == GRAIN_OK)
        st = grain_ep_launch(q, 0, sl.dot, 1, &parts, &local, NULL, 0, &e);
    if (st == GRAIN_OK)
        st = grain_ep_wait(q, e);
    if (st == GRAIN_OK)
        st = reduce(&sl, &sl.bb);
    sl.rr = sl.bb;
    if (st == GRAIN_OK)
        st = add_cg_round(&sl, &c);
    if (st == GRAIN_OK)
        st = timed_start(&sl, &c, 0, &cg_s);
    grain_ep_clear(q);
    double *x = NULL;
    if (st == GRAIN_OK && (o->common.verify || o->common.out != NULL)) {
        x = app_malloc(lattice_volume(&o->lat) * DSLASH_VEC * sizeof(double));
        st = gather_x(&sl, x);
    }
    if (st == GRAIN_OK && o->common.verify)
        true_res = true_residual(o, &w, x);
    if (st == GRAIN_OK && o->common.out != NULL && grain_ep_id(q) == 0 && !write_x(o, x)) {
        snprintf(run->why, sizeof run->why, "cannot write %s", o->common.out);
        st = GRAIN_ERR_INVALID;
    }
    free(x);
    whole_free(&w);
    if (st != GRAIN_OK)
        return st;

    double residual = sqrt(sl.rr / sl.bb);
    unsigned vdev = grain_ep_vdev(q);
    run->ok[vdev] = !o->common.verify || (dslash_error <= 1e-12 && residual <= o->tol && true_res <= 10 * o->tol);
    if (vdev == 0) /* the scalars are the same everywhere; endpoint 0's clock speaks for the rank */
        *rep = (report_t){sl.iterations, residual,   true_res,          dslash_error,       cg_s,
                          dslash_s,      copy_s,     copy_bytes,        grain_ep_count(q), grain_ep_devices(q)};
    return GRAIN_OK;
}

int main(int argc, char **argv)
{
    static const cli_option_t options[] = {{"lattice", 1, OPT_LATTICE},     {"mass", 1, OPT_MASS},
                                           {"tol", 1, OPT_TOL},             {"max-iter", 1, OPT_MAX_ITER},
                                           {"dslash-reps", 1, OPT_REPS},    {"devices", 1, OPT_DEVICES},
                                           {"seed", 1, OPT_SEED}};
    options_t o = {.lat = {{8, 8, 8, 16}, 1}, .mass = 1.0, .tol = 1e-10, .max_iter = 1000, .reps = 20};
    grain_config_t *config = app_config();
    const cli_group_t groups[] = {CLI_GROUP(options, take, &o)};
    app_parse_options("dslash", argc, argv, groups, 1, &o.common, config, usage);
    grain_t *g = app_init(config);
    static run_t run;
    run.o = &o;
    grain_status_t st = grain_ep_run(g, o.devices, endpoint, &run);
    if (st != GRAIN_OK)
        app_fail(g, "dslash", run.why[0] ? run.why : grain_error_message(NULL));

    const report_t *r = &run.rep;
    int64_t verified = 1;
    for (unsigned v = 0; v < r->local; v++)
        verified &= run.ok[v];
    app_check(grain_allreduce(g, &verified, 1, GRAIN_INT64, GRAIN_MIN), "reducing the verification");
    double volume = (double)lattice_volume(&o.lat);
    double cg_gflops = r->iterations * 2.0 * FLOPS_PER_SITE * volume / r->cg_s / 1e9;
    double d_gflops = r->dslash_s > 0 ? o.reps * FLOPS_PER_SITE * volume / r->dslash_s / 1e9 : 0.0;
    double copy_gbps = r->copy_s > 0 ? o.reps * 2.0 * (double)r->copy_bytes / r->copy_s / 1e9 : 0.0;
    double bound = copy_gbps * FLOPS_PER_SITE / BYTES_PER_SITE; /* an endpoint's device */
    FILE *out = app_json_begin(g, o.common.json, "dslash");
    if (out != NULL) {
        fprintf(out, ",\"verified\":%s,\"lattice\":[%u,%u,%u,%u],\"endpoints\":%d,\"mass\":%g,\"iterations\":%u,"
                "\"residual\":%.3e,\"true_residual\":%.3e,\"dslash_error\":%.3e,\"cg_seconds\":%.6f,"
                "\"cg_gflops\":%.3f,\"dslash_reps\":%u,\"dslash_seconds\":%.6f,\"dslash_gflops\":%.3f,"
                "\"copy_gbps\":%.3f,\"bound_gflops\":%.3f",
                !o.common.verify ? "null" : verified ? "true" : "false", o.lat.l[0], o.lat.l[1], o.lat.l[2],
                o.lat.l[3], r->endpoints, o.mass, r->iterations, r->residual, r->true_residual, r->dslash_error,
                r->cg_s, cg_gflops, o.reps, r->dslash_s, d_gflops, copy_gbps, bound);
    } else if (grain_my_pe(g) == 0) {
        printf("dslash: %ux%ux%ux%u lattice on %d endpoint%s (%s): CG %u steps to |r|/|b| = %.2e in %.4f s, "
               "%.2f GFLOP/s\n",
               o.lat.l[0], o.lat.l[1], o.lat.l[2], o.lat.l[3], r->endpoints, app_plural(r->endpoints),
               grain_backend_name(g), r->iterations, r->residual, r->cg_s, cg_gflops);
        if (o.reps > 0)
            printf("dslash: D alone %.2f GFLOP/s; an endpoint's copy %.1f GB/s bounds it to %.2f GFLOP/s a device\n",
                   d_gflops, copy_gbps, bound);
        if (o.common.verify)
            printf("verification: %s (D to %.1e, true residual %.1e)\n", verified ? "passed" : "FAILED",
                   r->dslash_error, r->true_residual);
    }
    app_json_end(g, out);
    return app_finish(g, APP_EXIT_OK, o.common.verify ? (int)verified : -1);
}
