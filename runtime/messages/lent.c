/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/messages/lent.h"

#include <stdio.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/transfers/region.h"

/* 1 done, 0 not yet, -1 failed (a piece's copy). */
static int done(grain_t *g, const grain_lent_t *l)
{
    if (l->job != NULL)
        return atomic_load_explicit(&l->job->done, memory_order_acquire);
    return g->bops->copy_done(g->backend, GRAIN_RECV_LANE, l->mark);
}

/* Receive threads never wait for the network thread: a job ends. */
static void wait_job(grain_recv_job_t *job)
{
    unsigned spins = 0;
    while (!atomic_load_explicit(&job->done, memory_order_acquire))
        grain_wait_a_little(&spins);
}

/* Finishes the oldest held buffers that are done (with wait, all of them,
 * once they are) and returns how many. */
static unsigned land(grain_t *g, int wait)
{
    unsigned n = 0;
    int d = 1;
    while (!wait && n < g->n_lent && (d = done(g, &g->lent[n])) == 1)
        n++;
    grain_status_t st = GRAIN_OK;
    char why[256] = "";
    if (wait || d < 0) {
        n = g->n_lent;
        int pieces = 0;
        for (unsigned i = 0; i < n; i++) {
            if (g->lent[i].job != NULL)
                wait_job(g->lent[i].job);
            else
                pieces = 1;
        }
        if (pieces && (st = g->bops->copy_wait(g->backend, GRAIN_RECV_LANE)) != GRAIN_OK)
            snprintf(why, sizeof why, "copying received chunk pieces into device memory: %s",
                     grain_error_message(g));
    }
    for (unsigned i = 0; i < n; i++)
        if (g->lent[i].job == NULL)
            grain_region_landed(g, g->lent[i].region, g->lent[i].src, g->lent[i].bytes, st, why);
    g->n_lent -= n;
    memmove(g->lent, g->lent + n, g->n_lent * sizeof *g->lent);
    return n;
}

void grain_lent_make_room(grain_t *g)
{
    if (g->n_lent == GRAIN_LENT_MAX)
        g->lent_freed += land(g, 1);
}

void grain_lent_add(grain_t *g, const grain_lent_t *lent)
{
    g->lent[g->n_lent++] = *lent;
}

void grain_lent_finish(grain_t *g)
{
    g->lent_freed += land(g, 1);
}

unsigned grain_lent_settle(grain_t *g, int wait)
{
    unsigned n = g->lent_freed + land(g, wait);
    g->lent_freed = 0;
    return n;
}
