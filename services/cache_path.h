/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The files grain caches between runs (the transfer profile, the
 * scheduler's bandwidth profile, the tiled BLAS's profile): where one is
 * (the path a setting names, none when it says "none", else
 * $XDG_CACHE_HOME/grain/<name>, else ~/.cache/grain/<name>), their lines of
 * tab-separated fields, and a rewrite that keeps other writers' lines.
 */
#ifndef GRAIN_SERVICES_CACHE_PATH_H
#define GRAIN_SERVICES_CACHE_PATH_H

#include <stddef.h>
#include <stdio.h>

/* The path in `out`; "" for none (the setting says "none", or neither
 * variable is set). */
void grain_cache_path(const char *setting, const char *name, char *out, size_t size);
/* Creates the folders above `path` that are missing; 0, or -1 with errno. */
int grain_cache_mkdirs(const char *path);
/* Splits `line` at tabs into up to `max` fields; returns how many. */
unsigned grain_cache_fields(char *line, char **fields, unsigned max);
/* Rewrites `path` (its folders made): the lines of the old file that
 * `keep` accepts (each without its end of line; `header` first where there
 * was no file), then what `append` writes, through a new file renamed over
 * the old, so that a reader never sees half of one.  0, or -1 with errno. */
int grain_cache_rewrite(const char *path, const char *header, int (*keep)(const char *line, void *arg),
                        void (*append)(FILE *out, void *arg), void *arg);

#endif
