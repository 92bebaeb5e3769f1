/* SPDX-License-Identifier: BSD-3-Clause */
#include "services/turns.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

uint64_t grain_turn_key(uint64_t key, const void *p, size_t bytes)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < bytes; i++)
        key = (key ^ c[i]) * 1099511628211ull;
    return key;
}

void grain_turn_take(grain_turn_t *t, uint64_t key)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/grain-compile-%ld-%02u.lock", dir != NULL && dir[0] != '\0' ? dir : "/tmp",
             (long)getuid(), (unsigned)(key % GRAIN_TURN_FILES));
    t->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (t->fd < 0)
        return;
    while (flock(t->fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            close(t->fd);
            t->fd = -1;
            return;
        }
}

void grain_turn_give(grain_turn_t *t)
{
    if (t->fd >= 0)
        close(t->fd); /* releases the lock */
    t->fd = -1;
}
