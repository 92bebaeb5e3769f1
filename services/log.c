/* SPDX-License-Identifier: BSD-3-Clause */
#include "services/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static atomic_int log_level = GRAIN_LOG_WARN;
static atomic_int log_rank = -1;
static _Thread_local char last_error[1024];
static _Thread_local int quiet; /* failures kept, not logged: the caller reports them */

const char *const grain_log_level_names[] = {"error", "warn", "info", "debug", NULL};

void grain_log_configure(grain_log_level_t level, int rank)
{
    atomic_store(&log_level, (int)level);
    atomic_store(&log_rank, rank);
}

int grain_log_level_parse(const char *name)
{
    for (int i = 0; grain_log_level_names[i] != NULL; i++)
        if (strcmp(name, grain_log_level_names[i]) == 0)
            return i;
    return -1;
}

static void log_line(grain_log_level_t level, const char *text)
{
    int rank = atomic_load(&log_rank);
    /* One fprintf per line so that lines of several ranks do not interleave. */
    if (rank >= 0)
        fprintf(stderr, "grain[%d] %s: %s\n", rank, grain_log_level_names[level], text);
    else
        fprintf(stderr, "grain %s: %s\n", grain_log_level_names[level], text);
}

void grain_log(grain_log_level_t level, const char *fmt, ...)
{
    if ((int)level > atomic_load(&log_level))
        return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    log_line(level, text);
}

grain_status_t grain_fail(grain_status_t status, const char *fmt, ...)
{
    /* Formatted apart: a sentence that quotes its cause passes
     * grain_error_message(), this very buffer, as an argument. */
    char message[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    memcpy(last_error, message, sizeof last_error);
    if (!quiet)
        log_line(GRAIN_LOG_ERROR, last_error);
    return status;
}

void grain_log_quiet(int on)
{
    quiet = on;
}

void grain_error_keep(const char *message)
{
    snprintf(last_error, sizeof last_error, "%s", message);
}

const char *grain_error_message(const grain_t *grain)
{
    (void)grain; /* errors are kept per calling thread, also before init */
    return last_error;
}
