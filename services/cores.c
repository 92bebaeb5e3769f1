/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE /* sched_getaffinity */
#include "services/cores.h"

#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

grain_cores_t grain_rank_cores(void)
{
    grain_cores_t c = {sysconf(_SC_NPROCESSORS_ONLN), 0, 0, 0};
    c.online = c.online < 1 ? 1 : c.online;
    c.mine = c.online;
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    c.ranks = local != NULL && atol(local) > 0 ? atol(local) : 0;
    cpu_set_t allowed;
    c.bound = sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) < c.online;
    if (c.bound)
        c.mine = CPU_COUNT(&allowed); /* this share is the rank's own */
    else if (c.ranks > 1)
        c.mine = c.online / c.ranks;
    c.mine = c.mine < 1 ? 1 : c.mine;
    return c;
}
