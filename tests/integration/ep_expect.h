/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the endpoint tests (ep_run.c, ep_streams.c) check with: a failure
 * count that endpoint threads add to, a refusal's status and sentence, and
 * a run whose every endpoint reports what it checked.  EP_TEST names the
 * test in its lines.
 */
#ifndef GRAIN_TESTS_EP_EXPECT_H
#define GRAIN_TESTS_EP_EXPECT_H

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "check_ok.h"
#include "grain/ep.h"

#define MAX_EPS 64

static atomic_int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, EP_TEST ": FAILED: %s\n", what);
        failures++;
    }
}

static void expect_refused(grain_status_t st, grain_status_t want, const char *words, const char *what)
{
    char line[1536];
    snprintf(line, sizeof line, "%s: %s (%s), wanted %s with \"%s\"", what, grain_strerror(st),
             grain_error_message(NULL), grain_strerror(want), words);
    expect(st == want && strstr(grain_error_message(NULL), words) != NULL, line);
}

/* Runs `fn`, which sets ok[its virtual device] to 1 when what it checked
 * held, and expects that of every endpoint of this rank. */
static void expect_each(grain_t *g, int me, unsigned want, grain_ep_fn_t fn, const char *checked)
{
    int ok[MAX_EPS];
    for (int i = 0; i < MAX_EPS; i++)
        ok[i] = -1;
    OK(grain_ep_run(g, want, fn, ok));
    for (int v = 0; v < MAX_EPS && ok[v] != -1; v++) {
        char what[160];
        snprintf(what, sizeof what, "rank %d virtual device %d: %s", me, v, checked);
        expect(ok[v] == 1, what);
    }
}

#endif
