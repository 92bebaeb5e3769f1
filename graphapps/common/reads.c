/* SPDX-License-Identifier: BSD-3-Clause */
#include "reads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void app_reads_free(app_reads_t *r)
{
    free(r->bases);
    free(r->offset);
    *r = (app_reads_t){0};
}

typedef struct builder {
    app_reads_t *r;
    size_t bases_cap, reads_cap, used;
} builder_t;

static int add_bases(builder_t *b, const char *s, size_t n)
{
    if (n == 0)
        return 0; /* bases may still be NULL (fuzz.graph found the empty read) */
    if (b->used + n > b->bases_cap) {
        size_t cap = b->bases_cap ? b->bases_cap : 1 << 16;
        while (cap < b->used + n)
            cap *= 2;
        char *grown = realloc(b->r->bases, cap);
        if (grown == NULL)
            return -1;
        b->r->bases = grown;
        b->bases_cap = cap;
    }
    memcpy(b->r->bases + b->used, s, n);
    b->used += n;
    return 0;
}

/* Ends the current read (if any) and opens the next at b->used. */
static int mark_read(builder_t *b)
{
    if (b->r->n + 2 > b->reads_cap) {
        size_t cap = b->reads_cap ? 2 * b->reads_cap : 1024;
        uint64_t *grown = realloc(b->r->offset, cap * sizeof *grown);
        if (grown == NULL)
            return -1;
        b->r->offset = grown;
        b->reads_cap = cap;
    }
    b->r->offset[b->r->n] = b->used;
    return 0;
}

/* Fails with "name:line: ..." and frees what was read. */
static int fail(app_reads_t *r, app_error_t *err, const app_lines_t *t, const char *what)
{
    app_line_error(t, err, "%s", what);
    app_reads_free(r);
    return -1;
}

/* Sequence characters: letters only (IUPAC codes, either case). */
static int sequence_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z')))
            return 0;
    return 1;
}

int app_parse_reads(const char *data, size_t len, const char *name, app_reads_t *r, app_error_t *err)
{
    *r = (app_reads_t){0};
    builder_t b = {r, 0, 0, 0};
    app_lines_t t = {data, data + len, name, 0};
    const char *s;
    size_t n;
    int fastq = len > 0 && data[0] == '@';
    int in_read = 0;    /* FASTA: a header was seen */
    unsigned state = 0; /* FASTQ: 0 header, 1 sequence, 2 '+', 3 quality */
    size_t seq_len = 0;
    while (app_next_line(&t, &s, &n)) {
        if (t.line == 1 && (n == 0 || (s[0] != '@' && s[0] != '>')))
            return fail(r, err, &t, "expected '>' (FASTA) or '@' (FASTQ) at the start");
        if (fastq) {
            if (state == 0 && n == 0)
                continue; /* blank lines between records */
            if (state == 0 && s[0] != '@')
                return fail(r, err, &t, "expected '@' starting a FASTQ record");
            if (state == 1) {
                if (!sequence_ok(s, n))
                    return fail(r, err, &t, "a sequence line holds a character that is not a letter");
                if (mark_read(&b) != 0 || add_bases(&b, s, n) != 0)
                    return fail(r, err, &t, "no memory for the reads");
                r->n++;
                seq_len = n;
            }
            if (state == 2 && (n == 0 || s[0] != '+'))
                return fail(r, err, &t, "expected the '+' line of a FASTQ record");
            if (state == 3 && n != seq_len)
                return fail(r, err, &t, "the quality line is not as long as the sequence");
            state = (state + 1) % 4;
            continue;
        }
        if (n > 0 && s[0] == '>') {
            if (mark_read(&b) != 0)
                return fail(r, err, &t, "no memory for the reads");
            r->n++;
            in_read = 1;
            continue;
        }
        if (n > 0 && s[0] == ';')
            continue; /* old FASTA comment */
        if (!sequence_ok(s, n))
            return fail(r, err, &t, "a sequence line holds a character that is not a letter");
        if (!in_read && n > 0)
            return fail(r, err, &t, "sequence before the first '>' header");
        if (add_bases(&b, s, n) != 0)
            return fail(r, err, &t, "no memory for the reads");
    }
    if (fastq && state != 0)
        return fail(r, err, &t, "truncated: the file ends inside a FASTQ record");
    if (r->n == 0) {
        snprintf(err->msg, sizeof err->msg, "%s: no reads", name);
        app_reads_free(r);
        return -1;
    }
    r->offset[r->n] = b.used;
    return 0;
}

int app_read_reads(const char *path, app_reads_t *r, app_error_t *err)
{
    size_t len;
    char *data = app_read_file(path, &len, err);
    if (data == NULL)
        return -1;
    int rc = app_parse_reads(data, len, path, r, err);
    free(data);
    return rc;
}
