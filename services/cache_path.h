/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where grain keeps a file it caches between runs (the transfer profile,
 * the scheduler's bandwidth profile): the path a setting names, none when
 * it says "none", else $XDG_CACHE_HOME/grain/<name>, else
 * ~/.cache/grain/<name>.
 */
#ifndef GRAIN_SERVICES_CACHE_PATH_H
#define GRAIN_SERVICES_CACHE_PATH_H

#include <stddef.h>

/* The path in `out`; "" for none (the setting says "none", or neither
 * variable is set). */
void grain_cache_path(const char *setting, const char *name, char *out, size_t size);
/* Creates the folders above `path` that are missing; 0, or -1 with errno. */
int grain_cache_mkdirs(const char *path);

#endif
