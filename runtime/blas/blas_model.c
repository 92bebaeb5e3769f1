/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/blas/blas_model.h"

#include <math.h>

static const char *const names[BLAS_MODELS] = {"cso", "baseline", "dataloc", "bts", "dr", "dr-link"};

const char *blas_model_name(blas_model_t model)
{
    return (unsigned)model < BLAS_MODELS ? names[model] : "unknown";
}

void blas_shape_axpy(blas_shape_t *s, size_t n, size_t dtype, int x_on_host, int y_on_host)
{
    *s = (blas_shape_t){.level = 1, .d = {n, 1, 1}, .dtype = dtype, .opd = 2};
    s->op[0] = (blas_operand_t){.s1 = n, .s2 = 1, .get = x_on_host};
    s->op[1] = (blas_operand_t){.s1 = n, .s2 = 1, .get = y_on_host, .set = y_on_host};
}

void blas_shape_gemm(blas_shape_t *s, size_t m, size_t n, size_t k, size_t dtype, int a_on_host, int b_on_host,
                     int c_on_host, int beta_zero)
{
    *s = (blas_shape_t){.level = 3, .d = {m, n, k}, .dtype = dtype, .opd = 3};
    s->op[0] = (blas_operand_t){.s1 = m, .s2 = k, .get = a_on_host};
    s->op[1] = (blas_operand_t){.s1 = k, .s2 = n, .get = b_on_host};
    s->op[2] = (blas_operand_t){.s1 = m, .s2 = n, .get = c_on_host && !beta_zero, .set = c_on_host};
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

double blas_tile_copy(const blas_link_t *l, const blas_shape_t *s, size_t tile)
{
    double elements = s->level == 1 ? (double)tile : (double)tile * (double)tile;
    return l->t_i + l->t_b * elements * (double)s->dtype;
}

double blas_overlap(const blas_machine_t *m, double t_in, double t_out)
{
    double in_bid = m->h2d.sl * t_in, out_bid = m->d2h.sl * t_out;
    if (in_bid >= out_bid)
        return out_bid + (in_bid - out_bid) / m->h2d.sl;
    return in_bid + (out_bid - in_bid) / m->d2h.sl;
}

/* The CUDA-stream overlap model: k streams, each stage whole on the one
 * that dominates (a latency per extra stream), a stream's share on the
 * others; copies of every operand's bytes, the kernel k tiles'. */
static double cso(const blas_machine_t *m, const blas_shape_t *s, double k, double t_gpu)
{
    double in = 0.0, out = 0.0;
    for (unsigned i = 0; i < s->opd; i++) {
        double bytes = (double)s->op[i].s1 * (double)s->op[i].s2 * (double)s->dtype;
        in += s->op[i].get ? bytes : 0.0;
        out += s->op[i].set ? bytes : 0.0;
    }
    double h_all = in > 0 ? m->h2d.t_i * k + m->h2d.t_b * in : 0.0;
    double h_one = in > 0 ? m->h2d.t_i + m->h2d.t_b * in / k : 0.0;
    double d_all = out > 0 ? m->d2h.t_i * k + m->d2h.t_b * out : 0.0;
    double d_one = out > 0 ? m->d2h.t_i + m->d2h.t_b * out / k : 0.0;
    return fmax(fmax(h_all + t_gpu + d_one, h_one + t_gpu * k + d_one), h_one + t_gpu + d_all);
}

double blas_predict(blas_model_t model, const blas_machine_t *m, const blas_shape_t *s, size_t tile, double t_gpu)
{
    double k = blas_subproblems(s, tile);
    double th = blas_tile_copy(&m->h2d, s, tile), td = blas_tile_copy(&m->d2h, s, tile);
    double t_in = 0.0, t_out = 0.0, k_in = 0.0, k_out = 0.0;
    for (unsigned i = 0; i < s->opd; i++) {
        t_in += s->op[i].get ? th : 0.0;
        t_out += s->op[i].set ? td : 0.0;
        k_in += s->op[i].get ? blas_operand_tiles(s, i, tile) - 1.0 : 0.0;
        k_out += s->op[i].set ? blas_operand_tiles(s, i, tile) - 1.0 : 0.0;
    }
    double opd = (double)s->opd;
    switch (model) {
    case BLAS_MODEL_CSO:
        return cso(m, s, k, t_gpu);
    case BLAS_MODEL_BASELINE:
        return fmax(t_gpu, fmax(opd * th, opd * td)) * (k - 1.0) + opd * th + t_gpu + opd * td;
    case BLAS_MODEL_DATALOC:
        return fmax(t_gpu, fmax(t_in, t_out)) * (k - 1.0) + t_in + t_gpu + t_out;
    case BLAS_MODEL_BTS:
        return fmax(t_gpu, blas_overlap(m, t_in, t_out)) * (k - 1.0) + t_in + t_gpu + t_out;
    case BLAS_MODEL_DR:
        k_in = fmin(k_in, k);
        return fmax(th, t_gpu) * k_in + t_gpu * (k - k_in) + t_in + t_out;
    case BLAS_MODEL_DR_LINK:
        return t_in + fmax(blas_overlap(m, th * k_in, td * k_out), t_gpu * (k - 1.0)) + t_gpu + t_out;
    default:
        return NAN;
    }
}
