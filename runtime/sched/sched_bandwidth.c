/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bandwidth matrix B of the min-max-transfer-time policy (GrCUDA
 * III-B3, fig. 2): host to each device and back measured, the best of a
 * few copies of a buffer as large as the arrays a benchmark moves; device
 * to device as the scheduler's copies go, through the host, so both hops
 * in turn.  The diagonal is left 0: a location holding an array copies
 * nothing (sched_place.c).
 */
#include <stdlib.h>

#include "runtime/grain_impl.h"
#include "runtime/sched/sched_exec.h"
#include "services/backoff.h"
#include "services/log.h"

enum { TRIES = 3 };

/* Bytes a second of the best of TRIES copies. */
static grain_status_t time_copy(grain_sched_t *s, grain_backend_t *b, void *dst, const void *src, size_t bytes,
                                double *bw_p)
{
    uint64_t best = UINT64_MAX;
    for (int t = 0; t < TRIES; t++) {
        uint64_t t0 = grain_now_ns();
        grain_status_t st = s->bops->copy(b, dst, src, bytes);
        if (st != GRAIN_OK)
            return st;
        uint64_t ns = grain_now_ns() - t0;
        best = ns < best ? ns : best;
    }
    *bw_p = (double)bytes / ((double)(best > 0 ? best : 1) * 1e-9);
    return GRAIN_OK;
}

grain_status_t sched_measure_bandwidth(grain_sched_t *s)
{
    unsigned n = s->n_dev + 1;
    double *bw = calloc((size_t)n * n, sizeof *bw);
    /* Large enough to leave latency behind; CPU devices copy within the
     * host's memory, where less does. */
    size_t bytes = s->dev[0].info.device_memory > 0 ? 64u << 20 : 8u << 20;
    int pinned = 0;
    unsigned char *host = sched_host_alloc(s, bytes, &pinned);
    grain_status_t st = bw != NULL && host != NULL ? GRAIN_OK
                                                   : grain_fail(GRAIN_ERR_NO_MEMORY, "sched: no memory to measure "
                                                                                     "bandwidth");
    for (unsigned d = 0; d < s->n_dev && st == GRAIN_OK; d++) {
        grain_backend_t *b = s->dev[d].backend;
        void *dev = NULL;
        if ((st = s->bops->alloc_device(b, bytes, &dev)) != GRAIN_OK)
            break;
        st = time_copy(s, b, dev, host, bytes, &bw[0 * n + d + 1]);
        if (st == GRAIN_OK)
            st = time_copy(s, b, host, dev, bytes, &bw[(d + 1) * n + 0]);
        s->bops->free_device(b, dev);
    }
    for (unsigned i = 1; i < n && st == GRAIN_OK; i++)
        for (unsigned j = 1; j < n; j++)
            if (i != j)
                bw[i * n + j] = 1.0 / (1.0 / bw[i * n + 0] + 1.0 / bw[0 * n + j]);
    if (host != NULL)
        sched_host_free(s, host, pinned);
    if (st != GRAIN_OK) {
        free(bw);
        return st;
    }
    free(s->bw);
    s->bw = bw;
    for (unsigned d = 0; d < s->n_dev; d++)
        grain_info("sched: device %u: host to device %.2f GB/s, device to host %.2f GB/s", d, bw[d + 1] * 1e-9,
                   bw[(d + 1) * n] * 1e-9);
    return GRAIN_OK;
}

grain_status_t grain_sched_bandwidth(grain_sched_t *s, int measure, double *gbps)
{
    if (s == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_sched_bandwidth needs a scheduler");
    if (measure || s->bw == NULL) {
        /* Nothing of the scheduler's may run beside it: it would slow both. */
        sched_wait_for(s, SCHED_NONE);
        grain_status_t st = sched_measure_bandwidth(s);
        if (st != GRAIN_OK)
            return st;
    }
    unsigned n = s->n_dev + 1;
    for (size_t i = 0; gbps != NULL && i < (size_t)n * n; i++)
        gbps[i] = s->bw[i] * 1e-9;
    return GRAIN_OK;
}
