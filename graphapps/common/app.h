/* SPDX-License-Identifier: BSD-3-Clause */
/* What every graphapp shares: grain settings as command-line options, exit
 * codes, timing and the common part of the --json object. */
#ifndef GRAIN_GRAPHAPPS_APP_H
#define GRAIN_GRAPHAPPS_APP_H

#include <stdint.h>
#include <stdio.h>

#include "grain/grain.h"
#include "tools/cli/cli.h"

/* Exit codes of every app. */
#define APP_EXIT_OK 0
#define APP_EXIT_VERIFY_FAILED 1
#define APP_EXIT_ERROR 2

/* Options every app takes beside grain's settings. */
typedef struct app_common {
    const char *out; /* --out FILE */
    int verify, json;
} app_common_t;

/* Parses the app's command line (tools/cli/cli.h): its own groups, then
 * --out FILE, --verify and --json into `common`, then every grain setting
 * as an option (--queue-slots 64 sets GRAIN_QUEUE_SLOTS's setting in
 * `config`); --help prints `usage` and exits 0; anything else, or a bad
 * value, exits with APP_EXIT_ERROR and a message. */
void app_parse_options(const char *app, int argc, char **argv, const cli_group_t *groups, size_t n_groups,
                       app_common_t *common, grain_config_t *config, void (*usage)(FILE *out));

/* Rank `rank`'s block of n items spread over `ranks` in blocks of
 * ceil(n / ranks): the first item and how many; returns the block size, the
 * most any rank has. */
uint64_t app_block(uint64_t n, unsigned ranks, unsigned rank, uint64_t *first, uint64_t *count);
/* The global size of a launch with a work-item per item, `items` rounded
 * up to whole work-groups of `wg`, at least one.  Ranks launch the grid of
 * the largest block, since the sends' barriers need whole work-groups;
 * lanes past a rank's own items stay inactive. */
size_t app_grid(uint64_t items, size_t wg);

/* Device memory holding a copy of `bytes` of host memory (at least one
 * byte is allocated), and its release (NULL is ignored); exit on failure. */
void *app_device_copy(grain_t *grain, const void *host, size_t bytes);
void app_device_free(grain_t *grain, void *p);

/* The settings from the GRAIN_* environment, for the app's options to
 * override; exits on failure. */
grain_config_t *app_config(void);
/* grain_init with `config`, which it destroys; exits on failure. */
grain_t *app_init(grain_config_t *config);
/* Collective: "<app>: <message>" on rank 0, then every rank finalizes and
 * exits with APP_EXIT_ERROR (all ranks read the same input and fail alike). */
void app_fail(grain_t *g, const char *app, const char *message);

/* --json: on rank 0, when asked, opens the object with the fields every app
 * has and returns stdout; NULL elsewhere.  The app prints its own fields,
 * each after a comma, then app_json_end. */
FILE *app_json_begin(grain_t *g, int json, const char *app);
/* Collective: the statistics (",\"stats\":{...}") and the closing brace on
 * `out`; with NULL, the statistics are gathered and dropped. */
void app_json_end(grain_t *g, FILE *out);
/* Collective: rank 0 creates `path` and writes what `write` writes, then
 * rank 1 appends, and so on.  APP_EXIT_OK, or APP_EXIT_ERROR on every rank
 * after "<app>: ..." on rank 0 when a rank could not write. */
int app_write_by_rank(grain_t *g, const char *app, const char *path, void (*write)(FILE *f, void *ctx), void *ctx);

/*
 * Collective: writes `path` with one line per item, "<id> <value>": each rank
 * its `count` items, ids[i] + base and values[i] with 17 significant digits
 * (infinite values print as "inf"), the ranks in turn.  Returns
 * APP_EXIT_OK, or APP_EXIT_ERROR on every rank after "<app>: ..." on rank 0
 * when a rank could not write.  Graph apps pass their vertices:
 * g->part.global_of, g->part.local_n and g->all.base.
 */
int app_write_values(grain_t *g, const char *app, const uint64_t *ids, uint64_t count, uint64_t base,
                     const double *values, const char *path);

/* Finalizes; the exit status: `status` if it is an error, else 1 when
 * verification failed (verified == 0), else 0. */
int app_finish(grain_t *g, int status, int verified);

/* Prints the grain settings an app accepts as options. */
void app_config_usage(FILE *out);

/* "s" unless n is 1: "1 rank", "2 ranks". */
const char *app_plural(long long n);
/* Parses --agent's transfer agent or exits with grain's message. */
grain_agent_t app_parse_agent(const char *text);

/* Sets arguments first .. first + count - 1 of `k` to the pointers ptrs[]. */
void app_kernel_ptrs(grain_kernel_t *k, unsigned first, unsigned count, void *const *ptrs);

/* This rank only: copies the `groups` rows of `width` int64 that a kernel
 * left in `dev`, one row per work-group, and returns their column sums in
 * out[width] (host_rows: room for the rows). */
void app_group_sums(grain_t *g, const int64_t *dev, size_t groups, unsigned width, int64_t *host_rows,
                    int64_t *out);

/* malloc that exits with a message when there is no memory (0 bytes: 1). */
void *app_malloc(size_t size);

/* Prints `what` failed with grain's explanation and exits with APP_EXIT_ERROR. */
void app_check(grain_status_t st, const char *what);

double app_seconds(void);

/* The timed part of a run: the slowest rank's wall time, and the mean over
 * ranks of where it went (grain_time_split; "host_s" is the rest: the app's
 * host code and its own collectives). */
typedef struct app_clock {
    double t0;
    grain_time_split_t s0;
} app_clock_t;
typedef struct app_timing {
    double seconds;
    double compute_s, queue_s, aggregation_s, network_s, host_s;
} app_timing_t;
void app_clock_start(grain_t *g, app_clock_t *c);
/* Collective. */
app_timing_t app_clock_stop(grain_t *g, const app_clock_t *c);
/* Prints "\"seconds\":...,\"time_split\":{...}" for an app's JSON object. */
void app_timing_json(FILE *out, const app_timing_t *t);
/* Prints the split as one line of the app's text report. */
void app_timing_print(FILE *out, const app_timing_t *t);

/* Collective: the statistics of an app's `n` regions, summed over them and
 * over the ranks (moves, bytes), with grain_region_end's times as the mean
 * over ranks; the choices (agent, chunks) are the first region's. */
void app_region_totals(grain_t *g, grain_region_t *const *regions, unsigned n, grain_region_stats_t *out);
/* Prints the transfer fields of an app's JSON object, from "agent" on. */
void app_region_json(FILE *out, const grain_region_stats_t *s);

#endif
