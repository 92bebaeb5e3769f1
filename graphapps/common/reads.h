/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sequencing reads for the k-mer app: FASTA (">name", then sequence lines)
 * or FASTQ ("@name", sequence, "+", quality of the same length), told apart
 * by the first character.  Bases are kept as written; k-mer code skips
 * windows with anything but A, C, G, T (either case).  Plain C, no grain:
 * unit tested and fuzzed like the other parsers.
 */
#ifndef GRAIN_GRAPHAPPS_READS_H
#define GRAIN_GRAPHAPPS_READS_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

typedef struct app_reads {
    uint64_t n;       /* reads */
    char *bases;      /* every read's bases, one after the other */
    uint64_t *offset; /* n + 1: read r is bases[offset[r] .. offset[r + 1]) */
} app_reads_t;

int app_parse_reads(const char *data, size_t len, const char *name, app_reads_t *r, app_error_t *err);
int app_read_reads(const char *path, app_reads_t *r, app_error_t *err);
void app_reads_free(app_reads_t *r);

#endif
