/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bandwidth matrix B of the min-max-transfer-time policy (GrCUDA
 * III-B3, fig. 2): host to each device and back measured, the best of a
 * few copies of a buffer as large as the arrays a benchmark moves; device
 * to device as the scheduler's copies go: measured where the devices reach
 * each other (sched_peer), else through the host, so both hops in turn.
 * The diagonal is left 0: a location holding an array copies nothing
 * (sched_place.c).
 *
 * Measured once, then kept in the profile (GRAIN_SCHED_PROFILE), a text
 * file of '#' comments and one line per backend and set of devices:
 *
 *   backend <TAB> devices <TAB> name|name|... <TAB> b,b,... (bytes a second, row by row)
 *
 * The last line for a key wins.  A line for these devices of another form
 * is ignored with a warning and left for a person to see, so that a
 * damaged profile costs one measurement and never a wrong matrix.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/sched/sched_exec.h"
#include "services/backoff.h"
#include "services/cache_path.h"
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
    void **dev = calloc(s->n_dev, sizeof *dev);
    if (st == GRAIN_OK && dev == NULL)
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "sched: no memory to measure bandwidth");
    for (unsigned d = 0; d < s->n_dev && st == GRAIN_OK; d++) {
        grain_backend_t *b = s->dev[d].backend;
        if ((st = s->bops->alloc_device(b, bytes, &dev[d])) != GRAIN_OK)
            break;
        st = time_copy(s, b, dev[d], host, bytes, &bw[0 * n + d + 1]);
        if (st == GRAIN_OK)
            st = time_copy(s, b, host, dev[d], bytes, &bw[(d + 1) * n + 0]);
    }
    for (unsigned i = 1; i < n && st == GRAIN_OK; i++)
        for (unsigned j = 1; j < n && st == GRAIN_OK; j++)
            if (sched_peer(s, i, j))
                st = time_copy(s, s->dev[j - 1].backend, dev[j - 1], dev[i - 1], bytes, &bw[i * n + j]);
            else if (i != j)
                bw[i * n + j] = 1.0 / (1.0 / bw[i * n + 0] + 1.0 / bw[0 * n + j]);
    for (unsigned d = 0; dev != NULL && d < s->n_dev; d++)
        if (dev[d] != NULL)
            s->bops->free_device(s->dev[d].backend, dev[d]);
    free(dev);
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

/* The profile's key of this scheduler's devices: backend, count, names. */
static void profile_key(const grain_sched_t *s, char *key, size_t size)
{
    int len = snprintf(key, size, "%s\t%u\t", s->bops->name, s->n_dev);
    for (unsigned d = 0; d < s->n_dev && len > 0 && (size_t)len < size; d++)
        len += snprintf(key + len, size - (size_t)len, "%s%s", d > 0 ? "|" : "", s->dev[d].info.device_name);
}

/* The matrix of a line with this key, into bw; 0 when the line is another's,
 * -1 when it is ours but malformed. */
static int parse_line(const char *line, const char *key, size_t locations, double *bw)
{
    size_t klen = strlen(key);
    if (strncmp(line, key, klen) != 0 || line[klen] != '\t')
        return 0;
    const char *at = line + klen + 1;
    for (size_t i = 0; i < locations * locations; i++) {
        char *end;
        errno = 0;
        bw[i] = strtod(at, &end);
        if (errno != 0 || end == at || bw[i] < 0.0 || (*end != ',' && *end != '\0') ||
            (*end == '\0' && i + 1 < locations * locations))
            return -1;
        at = end + 1;
    }
    return 1;
}

/* The profile's matrix for these devices into a new s->bw; 1 found. */
static int profile_read(grain_sched_t *s, const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = (size_t)s->n_dev + 1, cap = 0;
    char key[2048], *line = NULL;
    profile_key(s, key, sizeof key);
    double *bw = calloc(n * n, sizeof *bw), *found = NULL;
    for (unsigned number = 1; bw != NULL && getline(&line, &cap, f) >= 0; number++) {
        line[strcspn(line, "\r\n")] = '\0';
        int r = parse_line(line, key, n, bw);
        if (r < 0)
            grain_warn("sched: %s, line %u: not a bandwidth matrix of %zu x %zu numbers; ignored", path, number, n,
                       n);
        if (r > 0) {
            free(found);
            found = bw;
            bw = calloc(n * n, sizeof *bw);
        }
    }
    free(line);
    free(bw);
    fclose(f);
    if (found == NULL)
        return 0;
    free(s->bw);
    s->bw = found;
    return 1;
}

/* The profile's rewrite: the other lines kept, a damaged one of these
 * devices too (for a person to see), a good one replaced by s->bw. */
typedef struct rewrite {
    const grain_sched_t *s;
    char key[2048];
    double *scratch;
} rewrite_t;

static int keep_line(const char *line, void *arg)
{
    rewrite_t *r = arg;
    return parse_line(line, r->key, (size_t)r->s->n_dev + 1, r->scratch) <= 0;
}

static void append_matrix(FILE *out, void *arg)
{
    const rewrite_t *r = arg;
    size_t n = (size_t)r->s->n_dev + 1;
    fprintf(out, "%s\t", r->key);
    for (size_t i = 0; i < n * n; i++)
        fprintf(out, "%s%.6g", i > 0 ? "," : "", r->s->bw[i]);
    fprintf(out, "\n");
}

static void profile_write(grain_sched_t *s, const char *path)
{
    size_t n = (size_t)s->n_dev + 1;
    rewrite_t r = {.s = s, .scratch = calloc(n * n, sizeof(double))};
    profile_key(s, r.key, sizeof r.key);
    if (r.scratch == NULL ||
        grain_cache_rewrite(path, "# grain's task scheduler: bandwidth matrices, bytes a second from row to column "
                                  "(host, then the devices)",
                            keep_line, append_matrix, &r) != 0)
        grain_warn("sched: cannot write the bandwidth profile %s (%s): it will be measured again", path,
                   r.scratch == NULL ? "no memory" : strerror(errno));
    free(r.scratch);
}

grain_status_t sched_load_bandwidth(grain_sched_t *s, int measure)
{
    char path[4096];
    grain_cache_path(s->grain->config.sched_profile, "sched-bandwidth.tsv", path, sizeof path);
    if (!measure && path[0] != '\0' && profile_read(s, path)) {
        grain_info("sched: the bandwidth matrix of these %u devices from %s", s->n_dev, path);
        return GRAIN_OK;
    }
    /* Nothing of the scheduler's may run beside the measurement: it would
     * slow both. */
    sched_wait_for(s, SCHED_NONE);
    grain_status_t st = sched_measure_bandwidth(s);
    if (st == GRAIN_OK && path[0] != '\0')
        profile_write(s, path);
    return st;
}

grain_status_t grain_sched_bandwidth(grain_sched_t *s, int measure, double *gbps)
{
    if (s == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_sched_bandwidth needs a scheduler");
    if (measure || s->bw == NULL) {
        grain_status_t st = sched_load_bandwidth(s, measure);
        if (st != GRAIN_OK)
            return st;
    }
    unsigned n = s->n_dev + 1;
    for (size_t i = 0; gbps != NULL && i < (size_t)n * n; i++)
        gbps[i] = s->bw[i] * 1e-9;
    return GRAIN_OK;
}
