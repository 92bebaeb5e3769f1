/* SPDX-License-Identifier: BSD-3-Clause */
#include "services/cache_path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void grain_cache_path(const char *setting, const char *name, char *out, size_t size)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    out[0] = '\0';
    if (strcmp(setting, "none") == 0)
        return;
    if (setting[0] != '\0')
        snprintf(out, size, "%s", setting);
    else if (xdg != NULL && xdg[0] != '\0')
        snprintf(out, size, "%s/grain/%s", xdg, name);
    else if (home != NULL && home[0] != '\0')
        snprintf(out, size, "%s/.cache/grain/%s", home, name);
}

int grain_cache_mkdirs(const char *path)
{
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *slash = strchr(dir + 1, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return -1;
        *slash = '/';
    }
    return 0;
}
