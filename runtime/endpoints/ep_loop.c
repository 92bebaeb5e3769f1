/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Registered commands and the run loop (GMH III-B4, III-B6): an endpoint
 * registers kernels, copies, messages and control tasks once, and
 * grain_ep_start runs them in rounds until a control task says
 * GRAIN_EP_EXIT, as an iterative solver runs its body.
 *
 * A round queues each registered command, in the order registered, as the
 * immediate command it describes (ep_stream.c), its `after` indices turned
 * into that round's events: the streams, their FIFO order and the
 * dependencies are the immediate commands' own.  A blocking command
 * (GRAIN_EP_BLOCK) is waited for before the next is queued.  A control task
 * is synchronous: every command before it in the round is done when it
 * runs, so it may read results, call collectives and decide.  A round ends
 * once all its commands are done; a failed one ends the loop with its
 * status.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/endpoints/endpoint.h"
#include "services/log.h"

struct grain_ep_reg {
    struct grain_ep_cmd *cmd; /* NULL for a control task */
    grain_ep_control_fn_t control;
    void *arg;
    unsigned flags;
    size_t n_after;
    unsigned *after;
};

/* Appends a registration; takes `cmd` (freed on failure). */
static grain_status_t add(grain_cmdq_t *q, const char *what, struct grain_ep_cmd *cmd, grain_ep_control_fn_t control,
                          void *arg, unsigned flags, const unsigned *after, size_t n_after, unsigned *index_p)
{
    grain_status_t st = GRAIN_OK;
    if (q->looping)
        st = grain_fail(GRAIN_ERR_STATE, "%s: endpoint %d's loop is running; register before grain_ep_start", what,
                        q->id);
    else if ((flags & ~GRAIN_EP_BLOCK) != 0)
        st = grain_fail(GRAIN_ERR_INVALID, "%s: flags 0x%x; give GRAIN_EP_BLOCK or 0", what, flags);
    else if (n_after > 0 && after == NULL)
        st = grain_fail(GRAIN_ERR_INVALID, "%s: %zu commands to come after, but no array of them", what, n_after);
    for (size_t i = 0; st == GRAIN_OK && i < n_after; i++)
        if (after[i] >= q->n_regs)
            st = grain_fail(GRAIN_ERR_INVALID,
                            "%s: command %u to come after is not registered yet (endpoint %d has %u)", what,
                            after[i], q->id, q->n_regs);
    if (st == GRAIN_OK && q->n_regs == q->cap_regs) {
        unsigned cap = q->cap_regs ? 2 * q->cap_regs : 16;
        struct grain_ep_reg *grown = realloc(q->regs, cap * sizeof *grown);
        if (grown == NULL)
            st = grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory", what);
        else {
            q->regs = grown;
            q->cap_regs = cap;
        }
    }
    unsigned *copy = NULL;
    if (st == GRAIN_OK && n_after > 0 && (copy = malloc(n_after * sizeof *copy)) == NULL)
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory", what);
    if (st != GRAIN_OK) {
        grain_ep_cmd_free(cmd);
        return st;
    }
    if (n_after > 0)
        memcpy(copy, after, n_after * sizeof *copy);
    q->regs[q->n_regs] = (struct grain_ep_reg){cmd, control, arg, flags, n_after, copy};
    if (index_p != NULL)
        *index_p = q->n_regs;
    q->n_regs++;
    return GRAIN_OK;
}

/* Registers a described command, or passes on why it could not be. */
static grain_status_t add_cmd(grain_cmdq_t *q, const char *what, grain_status_t described, struct grain_ep_cmd *cmd,
                              unsigned flags, const unsigned *after, size_t n_after, unsigned *index_p)
{
    return described != GRAIN_OK ? described : add(q, what, cmd, NULL, NULL, flags, after, n_after, index_p);
}

grain_status_t grain_ep_add_launch(grain_cmdq_t *q, unsigned stream, grain_ep_kernel_t *kernel, unsigned dims,
                                   const size_t *global, const size_t *local, const unsigned *after, size_t n_after,
                                   unsigned *index_p)
{
    struct grain_ep_cmd *c = NULL;
    grain_status_t st = grain_ep_describe_launch(q, stream, kernel, dims, global, local, &c);
    return add_cmd(q, "grain_ep_add_launch", st, c, 0, after, n_after, index_p);
}

grain_status_t grain_ep_add_copy_in(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset,
                                    const void *src, size_t bytes, const unsigned *after, size_t n_after,
                                    unsigned *index_p)
{
    struct grain_ep_cmd *c = NULL;
    grain_status_t st = grain_ep_describe_copy(q, 1, stream, mem, offset, (void *)src, bytes, &c);
    return add_cmd(q, "grain_ep_add_copy_in", st, c, 0, after, n_after, index_p);
}

grain_status_t grain_ep_add_copy_out(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset, void *dst,
                                     size_t bytes, const unsigned *after, size_t n_after, unsigned *index_p)
{
    struct grain_ep_cmd *c = NULL;
    grain_status_t st = grain_ep_describe_copy(q, 0, stream, mem, offset, dst, bytes, &c);
    return add_cmd(q, "grain_ep_add_copy_out", st, c, 0, after, n_after, index_p);
}

grain_status_t grain_ep_add_send(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset, size_t bytes,
                                 int dest, int tag, unsigned flags, const unsigned *after, size_t n_after,
                                 unsigned *index_p)
{
    struct grain_ep_cmd *c = NULL;
    grain_status_t st = grain_ep_describe_message(q, 0, stream, mem, offset, bytes, dest, tag, NULL, &c);
    return add_cmd(q, "grain_ep_add_send", st, c, flags, after, n_after, index_p);
}

grain_status_t grain_ep_add_recv(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset, size_t bytes,
                                 int src, int tag, unsigned flags, size_t *received, const unsigned *after,
                                 size_t n_after, unsigned *index_p)
{
    struct grain_ep_cmd *c = NULL;
    grain_status_t st = grain_ep_describe_message(q, 1, stream, mem, offset, bytes, src, tag, received, &c);
    return add_cmd(q, "grain_ep_add_recv", st, c, flags, after, n_after, index_p);
}

grain_status_t grain_ep_add_control(grain_cmdq_t *q, grain_ep_control_fn_t fn, void *arg, unsigned *index_p)
{
    const char *what = "grain_ep_add_control";
    grain_status_t st = grain_ep_check_thread(q, what);
    if (st != GRAIN_OK)
        return st;
    if (fn == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "%s: no function", what);
    return add(q, what, NULL, fn, arg, 0, NULL, 0, index_p);
}

void grain_ep_clear(grain_cmdq_t *q)
{
    if (q == NULL || grain_ep_check_thread(q, "grain_ep_clear") != GRAIN_OK)
        return;
    if (q->looping) {
        grain_fail(GRAIN_ERR_STATE, "grain_ep_clear: endpoint %d's loop is running; its commands stay", q->id);
        return;
    }
    for (unsigned i = 0; i < q->n_regs; i++) {
        grain_ep_cmd_free(q->regs[i].cmd);
        free(q->regs[i].after);
    }
    free(q->regs);
    q->regs = NULL;
    q->n_regs = q->cap_regs = 0;
}

int grain_ep_regs_use(const grain_cmdq_t *q, const grain_ep_mem_t *mem)
{
    for (unsigned i = 0; i < q->n_regs; i++)
        if (q->regs[i].cmd != NULL && grain_ep_cmd_uses(q->regs[i].cmd, mem))
            return 1;
    return 0;
}

/* Waits for the round's events of commands [0, n) not yet waited for
 * (gathered into `set`); the first failure, `first` before any, its
 * sentence kept. */
static grain_status_t wait_round(grain_cmdq_t *q, grain_ep_event_t **events, unsigned n, grain_ep_event_t **set,
                                 grain_status_t first)
{
    char why[1024] = "";
    if (first != GRAIN_OK)
        snprintf(why, sizeof why, "%s", grain_error_message(NULL));
    size_t k = 0;
    for (unsigned i = 0; i < n; i++)
        if (events[i] != NULL) {
            set[k++] = events[i];
            events[i] = NULL;
        }
    grain_status_t st = grain_ep_wait_all(q, set, k);
    if (first == GRAIN_OK)
        return st;
    grain_error_keep(why);
    return first;
}

/* One round: every command queued, the control tasks run when their turn
 * comes; *exit_p set when one says GRAIN_EP_EXIT. */
static grain_status_t round_run(grain_cmdq_t *q, grain_ep_event_t **events, grain_ep_event_t **after,
                                grain_ep_event_t **set, int *exit_p)
{
    grain_status_t st = GRAIN_OK;
    for (unsigned i = 0; i < q->n_regs && st == GRAIN_OK; i++) {
        const struct grain_ep_reg *r = &q->regs[i];
        if (r->cmd == NULL) {
            if ((st = wait_round(q, events, i, set, GRAIN_OK)) != GRAIN_OK)
                break;
            int verdict = r->control(q, r->arg);
            if (verdict == GRAIN_EP_EXIT) {
                *exit_p = 1;
                break;
            }
            if (verdict != GRAIN_EP_RERUN)
                st = grain_fail(GRAIN_ERR_INVALID,
                                "grain_ep_start: control task %u returned %d; give GRAIN_EP_EXIT or GRAIN_EP_RERUN", i,
                                verdict);
            continue;
        }
        size_t n = 0;
        for (size_t j = 0; j < r->n_after; j++)
            if (events[r->after[j]] != NULL) /* else done and waited for already */
                after[n++] = events[r->after[j]];
        st = grain_ep_cmd_queue(q, r->cmd, after, n, &events[i]);
        if (st == GRAIN_OK && (r->flags & GRAIN_EP_BLOCK)) {
            st = grain_ep_wait(q, events[i]);
            events[i] = NULL;
        }
    }
    return wait_round(q, events, q->n_regs, set, st);
}

grain_status_t grain_ep_start(grain_cmdq_t *q)
{
    const char *what = "grain_ep_start";
    grain_status_t st = grain_ep_check_thread(q, what);
    if (st != GRAIN_OK)
        return st;
    if (q->looping)
        return grain_fail(GRAIN_ERR_STATE, "%s: endpoint %d's loop is running already (a control task may not "
                                           "start it again)",
                          what, q->id);
    if (q->n_regs == 0)
        return grain_fail(GRAIN_ERR_STATE, "%s: endpoint %d has registered no commands", what, q->id);
    int controlled = 0;
    size_t most_after = 0;
    for (unsigned i = 0; i < q->n_regs; i++) {
        controlled |= q->regs[i].cmd == NULL;
        most_after = q->regs[i].n_after > most_after ? q->regs[i].n_after : most_after;
    }
    grain_ep_event_t **events = calloc(q->n_regs, sizeof *events), **set = malloc(q->n_regs * sizeof *set);
    grain_ep_event_t **after = malloc((most_after > 0 ? most_after : 1) * sizeof *after);
    if (events == NULL || set == NULL || after == NULL) {
        free(events);
        free(set);
        free(after);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory", what);
    }
    int exit = 0;
    q->looping = 1;
    do
        st = round_run(q, events, after, set, &exit);
    while (st == GRAIN_OK && controlled && !exit); /* without a control task: one round */
    q->looping = 0;
    free(events);
    free(set);
    free(after);
    return st;
}
