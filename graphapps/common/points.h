/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Points for k-means: a text matrix, one point per line (numbers separated by
 * commas or whitespace, the same count on every line, '#' comment lines), or
 * Gaussian blobs generated from a seed.  Plain C, no grain: the parser is
 * unit tested and fuzzed like the graph parsers.
 */
#ifndef GRAIN_GRAPHAPPS_POINTS_H
#define GRAIN_GRAPHAPPS_POINTS_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

typedef struct app_points {
    uint64_t n;
    uint32_t dims;
    double *x; /* n x dims, row-major, malloc'd */
} app_points_t;

int app_parse_points(const char *data, size_t len, const char *name, app_points_t *p, app_error_t *err);
int app_read_points(const char *path, app_points_t *p, app_error_t *err);

/* n points in `dims` dimensions around `k` centres drawn uniformly from
 * [-10, 10)^dims, each coordinate a centre's plus a standard normal draw;
 * point i comes from its own random stream, so every rank generates the same
 * points. */
int app_blobs(uint64_t n, uint32_t dims, uint32_t k, uint64_t seed, app_points_t *p, app_error_t *err);

void app_points_free(app_points_t *p);

#endif
