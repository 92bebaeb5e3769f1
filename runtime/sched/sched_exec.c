/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The executor's engine: an element placed, its coherence settled, then
 * submitted and finished (sched_exec.h says when).  GrCUDA, section III-B:
 * the policy picks among the parents' devices, a child reuses a parent's
 * stream unless another child took it, and an array's state changes when
 * an element is scheduled, not when it runs.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/sched/sched_exec.h"
#include "services/backoff.h"
#include "services/log.h"

static sched_where_t bit(unsigned location)
{
    return (sched_where_t)1 << location;
}

/* The first failure since the last wait is kept; the others counted. */
static void note_failure(grain_sched_t *s, sched_elem_t *el, grain_status_t st, const char *why)
{
    el->failed = 1;
    if (s->status == GRAIN_OK) {
        s->status = st;
        snprintf(s->why, sizeof s->why, "%s", why);
    } else {
        s->failures++;
    }
}

void sched_elem_release(grain_sched_t *s, sched_elem_t *el)
{
    (void)s;
    if (el->kernel != NULL)
        sched_kernel_let_go(el->kernel);
    el->kernel = NULL;
    free(el->args);
    el->args = NULL;
    free(el->copies);
    el->copies = NULL;
    /* The parents stay, for the export. */
    el->n_waits = el->n_parents;
}

/* Whether argument i names an array that no argument before it names. */
static int first_use(const sched_elem_t *el, unsigned i)
{
    if (el->args[i].array == NULL)
        return 0;
    for (unsigned j = 0; j < i; j++)
        if (el->args[j].array == el->args[i].array)
            return 0;
    return 1;
}

static void finish(grain_sched_t *s, uint32_t e)
{
    sched_elem_t *el = &s->elems[e];
    el->state = ELEM_DONE;
    el->done_tick = ++s->tick;
    sched_dag_retire(s->dag, e);
    if (el->location != SCHED_HOST)
        sched_device_at(s, el->location)->stream[el->stream].placed--;
    if (el->kind == ELEM_KERNEL) {
        for (unsigned i = 0; i < el->n_args; i++)
            if (first_use(el, i))
                el->args[i].array->users--;
    } else {
        el->array->users--;
    }
    sched_elem_release(s, el);
}

/* ---- placement ---------------------------------------------------------- */

static unsigned pick_stream(grain_sched_t *s, sched_elem_t *el, const uint32_t *parents, size_t n_parents)
{
    for (size_t i = 0; i < n_parents; i++) {
        sched_elem_t *p = &s->elems[parents[i]];
        if (p->location == el->location && !p->stream_taken) {
            p->stream_taken = 1;
            return p->stream;
        }
    }
    sched_device_t *dev = sched_device_at(s, el->location);
    unsigned best = 0;
    for (unsigned k = 0; k < dev->streams; k++) {
        if (dev->stream[k].placed == 0)
            return k;
        if (dev->stream[k].placed < dev->stream[best].placed)
            best = k;
    }
    return best;
}

/* The device for a kernel (GrCUDA fig. 5): among its parents' devices when
 * it has parents on devices, else among all. */
static unsigned pick_device(grain_sched_t *s, const uint32_t *parents, size_t n_parents, const sched_need_t *needs,
                            size_t n_needs)
{
    sched_where_t candidates = 0;
    for (size_t i = 0; i < n_parents; i++)
        if (s->elems[parents[i]].location != SCHED_HOST)
            candidates |= bit(s->elems[parents[i]].location);
    if (candidates == 0)
        for (unsigned l = 1; l <= s->n_dev; l++)
            candidates |= bit(l);
    unsigned busy[SCHED_MAX_LOCATIONS] = {0};
    for (unsigned d = 0; d < s->n_dev; d++)
        for (unsigned k = 0; k < s->dev[d].streams; k++)
            busy[1 + d] += s->dev[d].stream[k].placed > 0;
    sched_policy_t policy = (sched_policy_t)s->policy;
    if (policy == SCHED_MIN_MAX_TRANSFER_TIME && s->bw == NULL && sched_load_bandwidth(s, 0) != GRAIN_OK) {
        grain_warn("sched: the bandwidth matrix could not be measured (%s): placing by bytes instead",
                   grain_error_message(s->grain));
        policy = SCHED_MIN_TRANSFER_SIZE;
        s->policy = GRAIN_POLICY_MIN_TRANSFER_SIZE;
    }
    sched_topology_t topology = {.locations = s->n_dev + 1, .bw = s->bw};
    sched_choice_t choice = {.policy = policy, .candidates = candidates, .busy = busy, .threshold = s->threshold,
                             .next = &s->next_rr};
    return sched_choose(&topology, &choice, needs, n_needs);
}

/* ---- coherence ---------------------------------------------------------- */

/* Where to copy `a` from into `to` (sched_copy_from): its copies whose
 * producer is done, or never ran, are filled. */
static unsigned copy_source(const grain_sched_t *s, const grain_array_t *a, unsigned to)
{
    sched_where_t filled = 0;
    for (unsigned l = SCHED_HOST; l <= s->n_dev; l++)
        if (a->producer[l] == SCHED_NONE || s->elems[a->producer[l]].state == ELEM_DONE)
            filled |= bit(l);
    sched_topology_t t = {.locations = s->n_dev + 1, .bw = s->bw};
    return sched_copy_from(&t, a->where, filled, to);
}

static void add_wait(sched_elem_t *el, uint32_t self, uint32_t w)
{
    if (w == SCHED_NONE || w == self)
        return;
    for (size_t i = 0; i < el->n_waits; i++)
        if (el->waits[i] == w)
            return;
    el->waits[el->n_waits++] = w;
}

/* An element's use of `a` at its location, as of the elements placed before
 * it: a read copies the latest contents in (from a location whose copy the
 * producer there makes valid) and waits for what makes its own copy
 * valid; a write leaves its location the only valid copy.  A write that is
 * not a read overwrites every byte: nothing is copied in for it. */
static void settle(grain_sched_t *s, sched_elem_t *el, uint32_t e, grain_array_t *a, unsigned access)
{
    unsigned l = el->location;
    if (access & SCHED_READ) {
        if (!(a->where & bit(l))) {
            unsigned from = copy_source(s, a, l);
            el->copies[el->n_copies++] = (sched_copy_t){.array = a, .from = from};
            el->bytes_in += a->bytes;
            add_wait(el, e, a->producer[from]);
            if (from != SCHED_HOST && l != SCHED_HOST && !sched_peer(s, from, l)) { /* through the host, valid after */
                a->where |= bit(SCHED_HOST);
                a->producer[SCHED_HOST] = e;
            }
            a->where |= bit(l);
            a->producer[l] = e;
        } else {
            add_wait(el, e, a->producer[l]);
        }
    }
    if (access & SCHED_WRITE) {
        a->where = bit(l);
        for (unsigned k = 0; k <= s->n_dev; k++)
            a->producer[k] = SCHED_NONE;
        a->producer[l] = e;
    }
}

/* Room for one more element, live too. */
static grain_status_t room(grain_sched_t *s)
{
    if (!sched_reserve((void **)&s->elems, &s->cap_elems, s->n_elems + 1, sizeof *s->elems) ||
        !sched_reserve((void **)&s->live, &s->cap_live, s->n_live + 1, sizeof *s->live))
        return grain_fail(GRAIN_ERR_NO_MEMORY, "sched: no memory for %zu elements", s->n_elems + 1);
    return GRAIN_OK;
}

grain_status_t sched_add(grain_sched_t *s, sched_elem_t *proto, const sched_arg_t *args, size_t n_args,
                         grain_array_t *const *arrays, uint32_t *index_p)
{
    grain_status_t st = room(s);
    if (st != GRAIN_OK) {
        sched_elem_release(s, proto);
        return st;
    }
    sched_copy_t *copies = malloc((n_args + 1) * sizeof *copies);
    uint32_t e;
    const uint32_t *parents;
    size_t n_parents;
    st = copies == NULL ? grain_fail(GRAIN_ERR_NO_MEMORY, "sched: no memory for an element")
                        : sched_dag_add(s->dag, args, n_args, &e, &parents, &n_parents);
    uint32_t *waits = st == GRAIN_OK ? malloc((n_parents + n_args * 2 + 1) * sizeof *waits) : NULL;
    if (st != GRAIN_OK || waits == NULL) {
        free(copies);
        sched_elem_release(s, proto);
        if (st != GRAIN_OK)
            return st;
        /* The graph holds the element: it stays, done and failed. */
        s->elems[e] = (sched_elem_t){.kind = proto->kind, .state = ELEM_DONE, .failed = 1, .name = proto->name};
        s->n_elems = (size_t)e + 1;
        sched_dag_retire(s->dag, e);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "sched: no memory for an element");
    }
    sched_elem_t *el = &s->elems[e];
    *el = *proto;
    el->placed_tick = ++s->tick;
    el->waits = waits;
    el->copies = copies;
    if (n_parents > 0)
        memcpy(waits, parents, n_parents * sizeof *waits);
    el->n_parents = el->n_waits = n_parents;
    s->n_elems = (size_t)e + 1;

    /* Each array once, its accesses combined (the graph does the same). */
    grain_array_t *seen[SCHED_ARGS + 1];
    unsigned access[SCHED_ARGS + 1];
    sched_need_t needs[SCHED_ARGS + 1];
    size_t n_seen = 0;
    for (size_t i = 0; i < n_args; i++) {
        size_t j = 0;
        while (j < n_seen && seen[j] != arrays[i])
            j++;
        if (j == n_seen) {
            seen[n_seen] = arrays[i];
            access[n_seen++] = 0;
        }
        access[j] |= args[i].access;
    }
    for (size_t j = 0; j < n_seen; j++)
        needs[j] = (sched_need_t){.bytes = seen[j]->bytes, .where = seen[j]->where,
                                  .read = (access[j] & SCHED_READ) != 0};
    if (el->kind == ELEM_KERNEL)
        el->location = s->mode == GRAIN_SCHED_SERIAL ? 1 : pick_device(s, parents, n_parents, needs, n_seen);
    if (el->location != SCHED_HOST) {
        el->stream = s->mode == GRAIN_SCHED_SERIAL ? 0 : pick_stream(s, el, parents, n_parents);
        sched_device_at(s, el->location)->stream[el->stream].placed++;
    }
    for (size_t j = 0; j < n_seen; j++) {
        if (el->kind != ELEM_ADVICE) /* advice moves no data: it waits for its parents alone */
            settle(s, el, e, seen[j], access[j]);
        seen[j]->users++;
    }
    s->live[s->n_live++] = e;
    sched_count(s, GRAIN_SCHED_COUNT_ELEMENTS, 1, 0);
    sched_count(s, GRAIN_SCHED_COUNT_EDGES, n_parents, 0);
    *index_p = e;
    if (s->mode != GRAIN_SCHED_ASYNC)
        sched_wait_for(s, e);
    else
        sched_progress(s);
    return GRAIN_OK;
}

/* ---- submission ---------------------------------------------------------- */

static int ready(const grain_sched_t *s, const sched_elem_t *el)
{
    for (size_t i = 0; i < el->n_waits; i++) {
        const sched_elem_t *w = &s->elems[el->waits[i]];
        if (w->state == ELEM_DONE)
            continue;
        /* A stream keeps its order. */
        if (w->state == ELEM_SUBMITTED && el->location != SCHED_HOST && w->location == el->location &&
            w->stream == el->stream)
            continue;
        return 0;
    }
    return 1;
}

static grain_status_t launch(grain_sched_t *s, sched_elem_t *el)
{
    sched_device_t *dev = sched_device_at(s, el->location);
    grain_bkernel_t *bk = el->kernel->per_device[el->location - 1];
    int vendor = 0;
    grain_status_t st = sched_blas_vendor(s, el, &vendor);
    if (st != GRAIN_OK || vendor)
        return st;
    for (unsigned i = 0; i < el->n_args && st == GRAIN_OK; i++) {
        const sched_argval_t *a = &el->args[i];
        if (a->array != NULL) {
            void *ptr = NULL;
            if ((st = sched_replica(s, a->array, el->location, &ptr)) == GRAIN_OK)
                st = s->bops->kernel_set_arg_ptr(bk, i, ptr);
        } else {
            st = s->bops->kernel_set_arg(bk, i, a->size, a->value);
        }
    }
    size_t local[3] = {1, 1, 1};
    for (unsigned d = 0; d < el->dims; d++)
        local[d] = el->has_local ? el->local[d] : 1;
    if (!el->has_local)
        local[0] = grain_wg_default(el->global[0], dev->info.max_wg_size);
    if (st != GRAIN_OK)
        return st;
    if (dev->lanes)
        return s->bops->launch_lane(bk, el->stream, el->dims, el->global, local);
    return s->bops->launch(bk, el->dims, el->global, local);
}

static void submit(grain_sched_t *s, uint32_t e)
{
    sched_elem_t *el = &s->elems[e];
    for (size_t i = 0; i < el->n_waits; i++)
        if (s->elems[el->waits[i]].failed) {
            note_failure(s, el, GRAIN_ERR_STATE, "an element it depends on failed");
            finish(s, e);
            return;
        }
    grain_status_t st = GRAIN_OK;
    for (size_t i = 0; i < el->n_copies && st == GRAIN_OK; i++)
        st = sched_copy(s, el->copies[i].array, el->copies[i].from, el->location, el->stream);
    if (st == GRAIN_OK && el->kind == ELEM_KERNEL)
        st = launch(s, el);
    if (st == GRAIN_OK && el->kind == ELEM_ADVICE)
        st = sched_advise(s, el);
    if (st == GRAIN_OK && el->n_copies > 0 && sched_down_on_lane(s, el->copies[0].from, el->location)) {
        el->down_from = el->copies[0].from;
        st = s->bops->copy_mark(sched_device_at(s, el->down_from)->backend, SCHED_HOST_LANE, &el->mark);
    }
    if (st == GRAIN_OK && el->location != SCHED_HOST) {
        sched_device_t *dev = sched_device_at(s, el->location);
        dev->stream[el->stream].used = 1;
        if (dev->lanes)
            st = s->bops->copy_mark(dev->backend, el->stream, &el->mark);
        else
            el->mark = ++dev->submitted;
        if (el->kind == ELEM_KERNEL)
            sched_count(s, GRAIN_SCHED_COUNT_KERNELS, 1, el->location - 1);
    }
    if (st != GRAIN_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", grain_error_message(s->grain));
        note_failure(s, el, st, why);
        finish(s, e);
    } else if (el->location == SCHED_HOST && el->down_from == 0) {
        finish(s, e);
    } else {
        el->state = ELEM_SUBMITTED;
    }
}

/* Devices without lanes finish everything submitted at once: when their
 * queue is idle, its status is every element's. */
static void poll_queues(grain_sched_t *s)
{
    for (unsigned d = 0; d < s->n_dev; d++) {
        sched_device_t *dev = &s->dev[d];
        if (dev->lanes || dev->finished == dev->submitted || s->bops->busy(dev->backend))
            continue;
        grain_status_t st = s->bops->synchronize(dev->backend);
        dev->finished = dev->submitted;
        dev->status = st;
        if (st != GRAIN_OK)
            snprintf(dev->why, sizeof dev->why, "%s", grain_error_message(s->grain));
    }
}

/* The device location and lane an element's command waits on. */
static void lane_of(const sched_elem_t *el, unsigned *location_p, unsigned *lane_p)
{
    int host = el->location == SCHED_HOST;
    *location_p = host ? el->down_from : el->location;
    *lane_p = host ? SCHED_HOST_LANE : el->stream;
}

static void poll(grain_sched_t *s, uint32_t e);

/*
 * A lane's commands end in order, so those submitted on it before `el`'s
 * (a smaller mark) are done too: they finish first, oldest first, so that
 * a parent on the same lane (ready() lets a child follow one there) is
 * never done after its child.  Polled one by one, a parent found running
 * and then its child found done finished the other way round; a later
 * element placed in between then had neither an edge from the parent (the
 * retired child had taken the parent's place in the graph) nor a parent
 * done before it on the scheduler's clock (oracle.sched_dot.np1 failed so
 * once in CI's runs).
 */
static void finish_lane_before(grain_sched_t *s, const sched_elem_t *el)
{
    unsigned location, lane;
    lane_of(el, &location, &lane);
    for (;;) {
        uint32_t oldest = UINT32_MAX;
        for (size_t i = 0; i < s->n_live; i++) {
            const sched_elem_t *o = &s->elems[s->live[i]];
            unsigned o_location, o_lane;
            lane_of(o, &o_location, &o_lane);
            if (o->state == ELEM_SUBMITTED && o_location == location && o_lane == lane && o->mark < el->mark &&
                (oldest == UINT32_MAX || o->mark < s->elems[oldest].mark))
                oldest = s->live[i];
        }
        if (oldest == UINT32_MAX)
            return;
        poll(s, oldest); /* done: its mark is below a done one */
        if (s->elems[oldest].state != ELEM_DONE)
            return;
    }
}

static void poll(grain_sched_t *s, uint32_t e)
{
    sched_elem_t *el = &s->elems[e];
    unsigned location, lane;
    lane_of(el, &location, &lane);
    sched_device_t *dev = sched_device_at(s, location);
    grain_status_t st = GRAIN_OK;
    if (dev->lanes) {
        int r = s->bops->copy_done(dev->backend, lane, el->mark);
        if (r == 0)
            return;
        if (r > 0)
            finish_lane_before(s, el);
        if (r < 0 && (st = s->bops->copy_wait(dev->backend, lane)) == GRAIN_OK)
            st = grain_fail(GRAIN_ERR_BACKEND, "sched: device %u, lane %u: a command failed", location - 1, lane);
    } else {
        if (el->mark > dev->finished)
            return;
        st = dev->status;
    }
    if (st != GRAIN_OK)
        note_failure(s, el, st, dev->lanes ? grain_error_message(s->grain) : dev->why);
    finish(s, e);
}

size_t sched_progress(grain_sched_t *s)
{
    poll_queues(s);
    size_t kept = 0;
    for (size_t i = 0; i < s->n_live; i++) {
        uint32_t e = s->live[i];
        sched_elem_t *el = &s->elems[e];
        if (el->state == ELEM_SUBMITTED)
            poll(s, e);
        if (el->state == ELEM_PLACED && ready(s, el))
            submit(s, e);
        if (el->state != ELEM_DONE)
            s->live[kept++] = e;
    }
    s->n_live = kept;
    return kept;
}

void sched_wait_for(grain_sched_t *s, uint32_t e)
{
    grain_backoff_t backoff = {0};
    for (;;) {
        size_t left = sched_progress(s);
        if (left == 0 || (e != SCHED_NONE && s->elems[e].state == ELEM_DONE))
            return;
        grain_backoff_idle(&backoff);
    }
}
