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

/*
 * A GPU rank's threads beside the application's and the network thread.
 * Past the counts below, the threads outnumbered the cores or waited for
 * one another: two GUPS ranks through MPI on one H100 machine (16 cores)
 * ran at 0.23 GUP/s with one receive thread, 0.29-0.30 with 4 and 0.227
 * with 8 and 4 aggregators.
 *
 * Where the transport's thread copies every buffer in (MPI sends), it
 * limits the path, and more aggregators only wait longer for their buffers
 * to come back: half of the spare cores aggregate, at most COPIED_MAX (on
 * two H100s pagerank ran fastest with 6: 0.47-0.49 s, 0.52-0.54 with 8; on
 * two H200s 0.49-0.54 s with 6 and 0.54-0.56 with 8, gups 2.28-2.70 GUP/s
 * against 2.16-2.46).  Where the senders write the buffers into this
 * rank's rings (MPI puts on one node), packing limits it: the receive
 * threads keep half of the spare cores, at most RECEIVERS_MAX, and the
 * aggregators take the rest, at most WRITTEN_MAX (on two H200s, 16 cores a
 * rank, 10 and 4 against 6 and 4 in two calls of three and four runs each:
 * gups 3.03-3.60 GUP/s against 2.53-2.95, pagerank 0.225-0.249 s against
 * 0.262-0.301, sssp within the spread; a third call, on another machine,
 * ran gups at 2.31-2.82 against 2.11-2.25 and pagerank at 0.31-0.43 s
 * against 0.32-0.38; 12 aggregators, which leave 2 receive threads, lost to
 * both).  Either way, what the aggregators leave receives, at most
 * RECEIVERS_MAX.
 */
#define RECEIVERS_MAX 4
#define COPIED_MAX 6
#define WRITTEN_MAX 10

static unsigned between_one_and(long n, unsigned most)
{
    return n < 1 ? 1 : n > (long)most ? most : (unsigned)n;
}

unsigned grain_cores_aggregators(long spare, int written)
{
    if (!written)
        return between_one_and(spare / 2, COPIED_MAX);
    long receivers = spare / 2 < RECEIVERS_MAX ? spare / 2 : RECEIVERS_MAX;
    return between_one_and(spare - receivers, WRITTEN_MAX);
}

unsigned grain_cores_receivers(long left)
{
    return between_one_and(left, RECEIVERS_MAX);
}
