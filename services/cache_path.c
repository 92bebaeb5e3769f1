/* SPDX-License-Identifier: BSD-3-Clause */
#include "services/cache_path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

unsigned grain_cache_fields(char *line, char **fields, unsigned max)
{
    unsigned n = 0;
    for (char *at = line; n < max; n++) {
        fields[n] = at;
        at = strchr(at, '\t');
        if (at == NULL)
            return n + 1;
        *at++ = '\0';
    }
    return n;
}

int grain_cache_rewrite(const char *path, const char *header, int (*keep)(const char *line, void *arg),
                        void (*append)(FILE *out, void *arg), void *arg)
{
    char tmp[4200], *line = NULL;
    size_t cap = 0;
    if (snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    FILE *in = fopen(path, "r"), *out = NULL;
    if (grain_cache_mkdirs(path) != 0 || (out = fopen(tmp, "w")) == NULL) {
        int saved = errno;
        if (in != NULL)
            fclose(in);
        errno = saved;
        return -1;
    }
    if (in == NULL)
        fprintf(out, "%s\n", header);
    while (in != NULL && getline(&line, &cap, in) >= 0) {
        line[strcspn(line, "\r\n")] = '\0';
        if (keep(line, arg))
            fprintf(out, "%s\n", line);
    }
    free(line);
    if (in != NULL)
        fclose(in);
    append(out, arg);
    if (fclose(out) != 0 || rename(tmp, path) != 0) {
        int saved = errno;
        unlink(tmp);
        errno = saved;
        return -1;
    }
    return 0;
}
