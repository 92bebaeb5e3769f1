/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/sched/sched_place.h"

static int valid(sched_where_t where, unsigned l)
{
    return (int)(where >> l & 1u);
}

uint64_t sched_bytes_missing(const sched_need_t *needs, size_t n, unsigned l)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        if (needs[i].read && !valid(needs[i].where, l))
            bytes += needs[i].bytes;
    return bytes;
}

double sched_transfer_time(const sched_topology_t *t, const sched_need_t *needs, size_t n, unsigned l)
{
    double seconds = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!needs[i].read || valid(needs[i].where, l) || needs[i].bytes == 0)
            continue;
        double slowest = 0.0;
        for (unsigned from = 0; from < t->locations; from++) {
            double bw = t->bw[from * t->locations + l];
            if (valid(needs[i].where, from) && (slowest == 0.0 || bw < slowest))
                slowest = bw;
        }
        /* Valid nowhere (never written): nothing to copy. */
        if (slowest > 0.0)
            seconds += (double)needs[i].bytes / slowest;
    }
    return seconds;
}

unsigned sched_copy_from(const sched_topology_t *t, sched_where_t where, sched_where_t filled, unsigned to)
{
    unsigned best = t->locations;
    for (unsigned l = 0; l < t->locations; l++) {
        if (!valid(where, l))
            continue;
        int better = best == t->locations || valid(filled, l) > valid(filled, best) ||
                     (valid(filled, l) == valid(filled, best) && t->bw != NULL &&
                      t->bw[l * t->locations + to] > t->bw[best * t->locations + to]);
        if (better)
            best = l;
    }
    return best;
}

static unsigned round_robin(const sched_topology_t *t, const sched_choice_t *c)
{
    unsigned devices = t->locations - 1;
    for (unsigned k = 0; k < devices; k++) {
        unsigned d = 1 + (*c->next + k) % devices;
        if (valid(c->candidates, d)) {
            *c->next = d % devices; /* the device after d */
            return d;
        }
    }
    return 0;
}

unsigned sched_choose(const sched_topology_t *t, const sched_choice_t *c, const sched_need_t *needs, size_t n)
{
    if (c->policy == SCHED_ROUND_ROBIN)
        return round_robin(t, c);
    unsigned best = 0;
    if (c->policy == SCHED_STREAM_AWARE) {
        for (unsigned d = 1; d < t->locations; d++)
            if (valid(c->candidates, d) && (best == 0 || c->busy[d] < c->busy[best]))
                best = d;
        return best;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += needs[i].read ? needs[i].bytes : 0;
    double best_cost = 0.0;
    for (unsigned d = 1; d < t->locations; d++) {
        uint64_t missing = sched_bytes_missing(needs, n, d), held = total - missing;
        if (!valid(c->candidates, d) || held == 0 || (double)held < c->threshold * (double)total)
            continue;
        double cost = c->policy == SCHED_MIN_TRANSFER_SIZE ? (double)missing : sched_transfer_time(t, needs, n, d);
        if (best == 0 || cost < best_cost) {
            best = d;
            best_cost = cost;
        }
    }
    return best != 0 ? best : round_robin(t, c);
}
