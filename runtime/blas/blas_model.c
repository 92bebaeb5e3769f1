/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/blas/blas_model.h"

#include <math.h>
#include <string.h>

#include "grain/blas.h"
#include "runtime/blas/blas_sim.h"
#include "services/log.h"

_Static_assert((int)BLAS_MODELS == (int)GRAIN_BLAS_MODELS && (int)BLAS_MODEL_SCHEDULE == (int)GRAIN_BLAS_MODEL_SCHEDULE,
               "the models in the public order");

static const char *const names[BLAS_MODELS] = {"cso", "baseline", "dataloc", "bts", "dr", "dr-link", "schedule"};

const char *grain_blas_model_name(grain_blas_model_t model)
{
    return (unsigned)model < BLAS_MODELS ? names[model] : "unknown";
}

int blas_model_named(const char *name)
{
    for (int m = 0; name != NULL && m < BLAS_MODELS; m++)
        if (strcmp(name, names[m]) == 0)
            return m;
    return -1;
}

grain_status_t grain_blas_model_parse(const char *name, grain_blas_model_t *model_p)
{
    int m = blas_model_named(name);
    if (m < 0)
        return grain_fail(GRAIN_ERR_INVALID, "BLAS model \"%s\": expected " BLAS_MODEL_NAMES, name != NULL ? name : "");
    *model_p = (grain_blas_model_t)m;
    return GRAIN_OK;
}

static blas_operand_t operand(size_t s1, size_t s2, int on, int get, int set)
{
    return (blas_operand_t){.s1 = s1, .s2 = s2, .ld = s1, .get = on != BLAS_ON_DEVICE && get,
                            .set = on != BLAS_ON_DEVICE && set,
                            .path = on == BLAS_ON_PINNED ? BLAS_PATH_PINNED : BLAS_PATH_HOST};
}

void blas_shape_axpy(blas_shape_t *s, size_t n, size_t dtype, int x_on, int y_on)
{
    *s = (blas_shape_t){.level = 1, .d = {n, 1, 1}, .dtype = dtype, .opd = 2};
    s->op[0] = operand(n, 1, x_on, 1, 0);
    s->op[1] = operand(n, 1, y_on, 1, 1);
}

void blas_shape_gemm(blas_shape_t *s, size_t m, size_t n, size_t k, size_t dtype, int a_on, int b_on, int c_on,
                     int beta_zero)
{
    *s = (blas_shape_t){.level = 3, .d = {m, n, k}, .dtype = dtype, .opd = 3};
    s->op[0] = operand(m, k, a_on, 1, 0);
    s->op[1] = operand(k, n, b_on, 1, 0);
    s->op[2] = operand(m, n, c_on, !beta_zero, 1);
}

static double parts(size_t extent, size_t tile)
{
    return (double)((extent + tile - 1) / tile);
}

double blas_subproblems(const blas_shape_t *s, size_t tile)
{
    double k = 1.0;
    for (unsigned j = 0; j < (s->level == 1 ? 1u : 3u); j++)
        k *= parts(s->d[j], tile);
    return k;
}

double blas_operand_tiles(const blas_shape_t *s, unsigned i, size_t tile)
{
    return s->level == 1 ? parts(s->op[i].s1, tile) : parts(s->op[i].s1, tile) * parts(s->op[i].s2, tile);
}

double blas_tile_copy(const blas_link_t *l, const blas_shape_t *s, unsigned i, size_t tile)
{
    /* A tile is never more than its operand: a T past the problem copies it whole. */
    double rows = (double)(tile < s->op[i].s1 ? tile : s->op[i].s1);
    double cols = s->level == 1 ? 1.0 : (double)(tile < s->op[i].s2 ? tile : s->op[i].s2);
    return l->t_i + l->t_b * rows * cols * (double)s->dtype;
}

double blas_overlap(blas_flow_t in, blas_flow_t out)
{
    /* The longer flow's rest runs alone: of one path, its slowed seconds
     * over sl, as eq. 3 writes it. */
    if (in.both >= out.both)
        return out.both + (in.both > 0 ? (in.both - out.both) * in.alone / in.both : 0.0);
    return in.both + (out.both - in.both) * out.alone / out.both;
}

static void flow_add(blas_flow_t *f, const blas_link_t *l, double seconds)
{
    f->alone += seconds;
    f->both += seconds * l->sl;
}

/* The CUDA-stream overlap model: k streams, each stage whole on the one
 * that dominates (a latency per extra stream), a stream's share on the
 * others; copies of every operand's bytes on its path, the kernel k
 * tiles'. */
static double cso(const blas_machine_t *m, const blas_shape_t *s, double k, double t_gpu)
{
    double in = 0.0, out = 0.0, in_lat = 0.0, out_lat = 0.0;
    for (unsigned i = 0; i < s->opd; i++) {
        const blas_links_t *l = &m->path[s->op[i].path];
        double bytes = (double)s->op[i].s1 * (double)s->op[i].s2 * (double)s->dtype;
        if (s->op[i].get) {
            in += l->h2d.t_b * bytes;
            in_lat = fmax(in_lat, l->h2d.t_i);
        }
        if (s->op[i].set) {
            out += l->d2h.t_b * bytes;
            out_lat = fmax(out_lat, l->d2h.t_i);
        }
    }
    double h_all = in > 0 ? in_lat * k + in : 0.0, h_one = in > 0 ? in_lat + in / k : 0.0;
    double d_all = out > 0 ? out_lat * k + out : 0.0, d_one = out > 0 ? out_lat + out / k : 0.0;
    return fmax(fmax(h_all + t_gpu + d_one, h_one + t_gpu * k + d_one), h_one + t_gpu + d_all);
}

double blas_predict(blas_model_t model, const blas_machine_t *m, const blas_shape_t *s, size_t tile, double t_gpu)
{
    double k = blas_subproblems(s, tile);
    /* A tile of each operand both ways (eq. 1's), the tiles of a
     * subproblem (t_in, t_out), and those after the first subproblem's
     * (K_in, k_in of them, and K_out). */
    double every_in = 0.0, every_out = 0.0, k_in = 0.0;
    blas_flow_t t_in = {0}, t_out = {0}, rest_in = {0}, rest_out = {0};
    for (unsigned i = 0; i < s->opd; i++) {
        const blas_links_t *l = &m->path[s->op[i].path];
        double th = blas_tile_copy(&l->h2d, s, i, tile), td = blas_tile_copy(&l->d2h, s, i, tile);
        double later = blas_operand_tiles(s, i, tile) - 1.0;
        every_in += th;
        every_out += td;
        if (s->op[i].get) {
            flow_add(&t_in, &l->h2d, th);
            flow_add(&rest_in, &l->h2d, th * later);
            k_in += later;
        }
        if (s->op[i].set) {
            flow_add(&t_out, &l->d2h, td);
            flow_add(&rest_out, &l->d2h, td * later);
        }
    }
    switch (model) {
    case BLAS_MODEL_CSO:
        return cso(m, s, k, t_gpu);
    case BLAS_MODEL_BASELINE:
        return fmax(t_gpu, fmax(every_in, every_out)) * (k - 1.0) + every_in + t_gpu + every_out;
    case BLAS_MODEL_DATALOC:
        return fmax(t_gpu, fmax(t_in.alone, t_out.alone)) * (k - 1.0) + t_in.alone + t_gpu + t_out.alone;
    case BLAS_MODEL_BTS:
        return fmax(t_gpu, blas_overlap(t_in, t_out)) * (k - 1.0) + t_in.alone + t_gpu + t_out.alone;
    case BLAS_MODEL_DR: {
        /* A tile copied in: their mean over operands and paths. */
        double th = k_in > 0 ? rest_in.alone / k_in : 0.0;
        k_in = fmin(k_in, k);
        return fmax(th, t_gpu) * k_in + t_gpu * (k - k_in) + t_in.alone + t_out.alone;
    }
    case BLAS_MODEL_DR_LINK:
        return t_in.alone + fmax(blas_overlap(rest_in, rest_out), t_gpu * (k - 1.0)) + t_gpu + t_out.alone;
    case BLAS_MODEL_SCHEDULE: {
        double t = blas_simulate(m, s, tile, t_gpu);
        return isnan(t) ? blas_predict(BLAS_MODEL_DR_LINK, m, s, tile, t_gpu) : t;
    }
    default:
        return NAN;
    }
}
