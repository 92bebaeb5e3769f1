/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Logging and the error sentence of the last failed call.
 *
 * The function that first sees an error calls grain_fail(): it logs one
 * lower-case sentence naming what was wrong and keeps it for
 * grain_error_message(); callers only propagate the status (UCX style).
 */
#ifndef GRAIN_SERVICES_LOG_H
#define GRAIN_SERVICES_LOG_H

#include "grain/grain.h"

typedef enum grain_log_level {
    GRAIN_LOG_ERROR = 0,
    GRAIN_LOG_WARN = 1,
    GRAIN_LOG_INFO = 2,
    GRAIN_LOG_DEBUG = 3,
} grain_log_level_t;

/* By level, NULL-terminated: the words GRAIN_LOG_LEVEL takes. */
extern const char *const grain_log_level_names[];

void grain_log_configure(grain_log_level_t level, int rank);
/* -1 for an unknown name. */
int grain_log_level_parse(const char *name);
void grain_log(grain_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Logs `fmt` as an error, keeps it as this thread's error message, returns
 * `status`. */
grain_status_t grain_fail(grain_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* While on, this thread's grain_fail() keeps its message without logging
 * it: for probes whose caller decides whether the failure is an error. */
void grain_log_quiet(int on);
/* Keeps `message` as this thread's error message without logging it again. */
void grain_error_keep(const char *message);

#define grain_warn(...) grain_log(GRAIN_LOG_WARN, __VA_ARGS__)
#define grain_info(...) grain_log(GRAIN_LOG_INFO, __VA_ARGS__)
#define grain_debug(...) grain_log(GRAIN_LOG_DEBUG, __VA_ARGS__)

#endif
