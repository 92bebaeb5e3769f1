/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An endpoint's command queue over streams (GMH III-B3): kernels, copies
 * and messages queued on GRAIN_EP_STREAMS streams, each command an event
 * beside the immediate messages' and waited for with them.
 *
 * The endpoint's thread is the loop: whenever it queues, waits or tests it
 * starts the commands whose turn has come (FIFO per stream: none passes an
 * earlier one of its stream that has not started; a message, which leaves
 * the lane's order, also waits for the earlier ones to be done, and holds
 * the later kernels and copies until it is) and whose `after` events are
 * done, and notes those the device finished.  Dependencies are therefore
 * kept on the host, which lets a kernel come after a message as easily as
 * after another kernel.  Messages in flight on a stream hold a later
 * message only where they receive into bytes it uses: a send's bytes are
 * off the device once it is posted, and holding a send behind another that
 * waits for its receiver (MPI's rendezvous) would deadlock two endpoints
 * that send to each other before they receive.  A stream is one of
 * the backend's lanes, of the endpoint's own backend, where the backend can
 * launch kernels on them (CUDA and HIP streams, OpenCL in-order queues):
 * the commands then run asynchronously, in order on their lane, and the
 * lane's marks are their backend events.  Elsewhere (a backend without
 * lanes) a command runs to completion when it starts, which keeps every
 * ordering the asynchronous form promises.
 *
 * A launch takes its kernel's arguments when it is queued, as CUDA's launch
 * does, so that the next launch may set others while this one still waits
 * for its events.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/endpoints/endpoint.h"
#include "runtime/grain_impl.h"
#include "services/log.h"

enum { EP_ARGS = 32, EP_ARG_BYTES = 64 };

typedef struct ep_arg {
    size_t size; /* 0: never set */
    const grain_ep_mem_t *mem; /* a memory argument's, else NULL */
    unsigned char value[EP_ARG_BYTES]; /* a memory argument's device address */
} ep_arg_t;

struct grain_ep_program {
    struct grain_ep_program *next; /* in its endpoint's list */
    grain_cmdq_t *owner;
    grain_bprogram_t *bprogram;
    struct grain_ep_kernel *kernels; /* not yet released */
    unsigned refs; /* the application's, until it destroys the program, and its kernels' */
};

struct grain_ep_kernel {
    struct grain_ep_kernel *next; /* in its program's list */
    grain_ep_program_t *program;
    grain_bkernel_t *bkernel;
    char name[128];
    unsigned refs; /* the application's and its queued launches' */
    unsigned n_args;
    ep_arg_t args[EP_ARGS];
};

enum { CMD_LAUNCH, CMD_COPY_IN, CMD_COPY_OUT, CMD_SEND, CMD_RECV };

struct grain_ep_cmd {
    int kind;
    unsigned stream;
    int started;
    uint64_t mark; /* the lane's mark after it, once started on a lane */
    grain_ep_mem_t *mem; /* a copy's or a message's */
    void *dst;
    const void *src;
    size_t bytes, offset;
    int peer, tag;                /* a message's */
    size_t *received;             /* a receive's */
    grain_ep_event_t *msg;        /* a message's own event, once started */
    grain_ep_kernel_t *kernel; /* a launch's */
    unsigned dims;
    size_t global[3], local[3];
    unsigned n_args; /* of args: the kernel may take more arguments later */
    ep_arg_t *args;
    int after_failed;
    char why[512]; /* why, when an event it came after failed */
    size_t n_after;
    grain_ep_event_t *after[]; /* NULL once done and waited for */
};

static const char *const cmd_names[] = {"grain_ep_launch", "grain_ep_copy_in", "grain_ep_copy_out", "grain_ep_send_on",
                                        "grain_ep_recv_on"};

static void program_release(grain_ep_program_t *p)
{
    if (--p->refs > 0)
        return;
    grain_cmdq_t *q = p->owner;
    for (grain_ep_program_t **x = &q->programs; *x != NULL; x = &(*x)->next)
        if (*x == p) {
            *x = p->next;
            break;
        }
    q->bops->program_release(p->bprogram);
    free(p);
}

static void kernel_release(grain_ep_kernel_t *k)
{
    if (--k->refs > 0)
        return;
    grain_ep_program_t *p = k->program;
    for (grain_ep_kernel_t **x = &p->kernels; *x != NULL; x = &(*x)->next)
        if (*x == k) {
            *x = k->next;
            break;
        }
    p->owner->bops->kernel_release(k->bkernel);
    free(k);
    program_release(p);
}

grain_status_t grain_ep_program_create(grain_cmdq_t *q, const char *source, const char *options,
                                       grain_ep_program_t **program_p)
{
    grain_status_t st = grain_ep_check_thread(q, "grain_ep_program_create");
    if (st != GRAIN_OK)
        return st;
    if (source == NULL || program_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_ep_program_create needs a source and an output");
    const char *include = grain_device_include_dir(q->grain, source);
    char defines[2048];
    if ((size_t)snprintf(defines, sizeof defines, "%s%s%s", options != NULL ? options : "", *include ? " -I" : "",
                         include) >= sizeof defines)
        return grain_fail(GRAIN_ERR_INVALID, "grain_ep_program_create: the options are too long");
    grain_ep_program_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "grain_ep_program_create: no memory");
    if ((st = q->bops->program_build(q->backend, source, defines, &p->bprogram)) != GRAIN_OK) {
        free(p);
        return st;
    }
    p->owner = q;
    p->refs = 1;
    p->next = q->programs;
    q->programs = p;
    *program_p = p;
    return GRAIN_OK;
}

void grain_ep_program_destroy(grain_ep_program_t *program)
{
    if (program != NULL && grain_ep_check_thread(program->owner, "grain_ep_program_destroy") == GRAIN_OK)
        program_release(program);
}

grain_status_t grain_ep_kernel_create(grain_ep_program_t *program, const char *name, grain_ep_kernel_t **kernel_p)
{
    if (program == NULL || name == NULL || kernel_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_ep_kernel_create needs a program, a name and an output");
    grain_cmdq_t *q = program->owner;
    grain_status_t st = grain_ep_check_thread(q, "grain_ep_kernel_create");
    if (st != GRAIN_OK)
        return st;
    grain_ep_kernel_t *k = calloc(1, sizeof *k);
    if (k == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "grain_ep_kernel_create: no memory");
    if ((st = q->bops->kernel_create(program->bprogram, name, &k->bkernel)) != GRAIN_OK) {
        free(k);
        return st;
    }
    snprintf(k->name, sizeof k->name, "%s", name);
    k->program = program;
    k->refs = 1;
    k->next = program->kernels;
    program->kernels = k;
    program->refs++;
    *kernel_p = k;
    return GRAIN_OK;
}

void grain_ep_kernel_destroy(grain_ep_kernel_t *kernel)
{
    if (kernel != NULL && grain_ep_check_thread(kernel->program->owner, "grain_ep_kernel_destroy") == GRAIN_OK)
        kernel_release(kernel);
}

/* Argument `index` of k, checked, for the caller to fill. */
static grain_status_t arg_slot(grain_ep_kernel_t *k, unsigned index, const char *what, ep_arg_t **a_p)
{
    if (k == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "%s: no kernel", what);
    grain_status_t st = grain_ep_check_thread(k->program->owner, what);
    if (st != GRAIN_OK)
        return st;
    if (index >= EP_ARGS)
        return grain_fail(GRAIN_ERR_INVALID, "%s: kernel %s: argument %u; an endpoint kernel takes at most %d", what,
                          k->name, index, EP_ARGS);
    *a_p = &k->args[index];
    return GRAIN_OK;
}

/* Argument `index` of k is set (only once its call succeeded): the
 * kernel takes at least index + 1. */
static void arg_set(grain_ep_kernel_t *k, unsigned index)
{
    if (index >= k->n_args)
        k->n_args = index + 1;
}

grain_status_t grain_ep_kernel_arg(grain_ep_kernel_t *kernel, unsigned index, size_t size, const void *value)
{
    const char *what = "grain_ep_kernel_arg";
    ep_arg_t *a = NULL;
    grain_status_t st = arg_slot(kernel, index, what, &a);
    if (st != GRAIN_OK)
        return st;
    if (value == NULL || size == 0 || size > EP_ARG_BYTES)
        return grain_fail(GRAIN_ERR_INVALID, "%s: kernel %s: argument %u of %zu bytes; give a value of 1 to %d bytes",
                          what, kernel->name, index, size, EP_ARG_BYTES);
    *a = (ep_arg_t){.size = size};
    memcpy(a->value, value, size);
    arg_set(kernel, index);
    return GRAIN_OK;
}

grain_status_t grain_ep_kernel_arg_mem(grain_ep_kernel_t *kernel, unsigned index, grain_ep_mem_t *mem, size_t offset)
{
    const char *what = "grain_ep_kernel_arg_mem";
    ep_arg_t *a = NULL;
    grain_status_t st = arg_slot(kernel, index, what, &a);
    if (st != GRAIN_OK)
        return st;
    if (mem == NULL || mem->owner != kernel->program->owner)
        return grain_fail(GRAIN_ERR_INVALID, "%s: kernel %s: argument %u: %s", what, kernel->name, index,
                          mem == NULL ? "no memory" : "memory of another endpoint");
    if (offset > mem->size)
        return grain_fail(GRAIN_ERR_INVALID, "%s: kernel %s: argument %u: offset %zu is past the memory's %zu bytes",
                          what, kernel->name, index, offset, mem->size);
    void *address = (unsigned char *)mem->device + offset;
    *a = (ep_arg_t){.size = sizeof address, .mem = mem};
    memcpy(a->value, &address, sizeof address);
    arg_set(kernel, index);
    return GRAIN_OK;
}

/* A command described, checked, with its own copy of a launch's
 * arguments and a hold on its kernel; no events yet. */
static grain_status_t describe(grain_cmdq_t *q, int kind, unsigned stream, struct grain_ep_cmd **c_p)
{
    const char *what = cmd_names[kind];
    grain_status_t st = grain_ep_check_thread(q, what);
    if (st != GRAIN_OK)
        return st;
    if (stream >= GRAIN_EP_STREAMS)
        return grain_fail(GRAIN_ERR_INVALID, "%s: stream %u; an endpoint has streams 0 to %d", what, stream,
                          GRAIN_EP_STREAMS - 1);
    struct grain_ep_cmd *c = calloc(1, sizeof *c);
    if (c == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory for a command", what);
    c->kind = kind;
    c->stream = stream;
    *c_p = c;
    return GRAIN_OK;
}

static ep_arg_t *args_copy(const ep_arg_t *from, unsigned n)
{
    ep_arg_t *args = malloc((n > 0 ? n : 1) * sizeof *args);
    if (args != NULL)
        memcpy(args, from, n * sizeof *args);
    return args;
}

grain_status_t grain_ep_describe_launch(grain_cmdq_t *q, unsigned stream, grain_ep_kernel_t *kernel, unsigned dims,
                                        const size_t *global, const size_t *local, struct grain_ep_cmd **c_p)
{
    const char *what = "grain_ep_launch";
    if (kernel == NULL || global == NULL || dims < 1 || dims > 3)
        return grain_fail(GRAIN_ERR_INVALID, "%s needs a kernel and 1 to 3 dimensions", what);
    if (q != kernel->program->owner)
        return grain_fail(GRAIN_ERR_INVALID, "%s: kernel %s was built by another endpoint", what, kernel->name);
    size_t chosen[3] = {1, 1, 1}, wg = 1;
    for (unsigned d = 0; d < dims; d++) {
        if (global[d] == 0 || (local != NULL && (local[d] == 0 || global[d] % local[d] != 0)))
            return grain_fail(GRAIN_ERR_INVALID,
                              "%s: kernel %s: dimension %u has global size %zu%s; give a global size that is a "
                              "non-zero multiple of the work-group size",
                              what, kernel->name, d, global[d], local != NULL ? " and a work-group size" : "");
        chosen[d] = local != NULL ? local[d] : d == 0 ? grain_wg_default(global[0], q->info.max_wg_size) : 1;
        wg *= chosen[d];
    }
    if (wg > q->info.max_wg_size)
        return grain_fail(GRAIN_ERR_INVALID, "%s: kernel %s: work-groups of %zu; the device takes at most %zu", what,
                          kernel->name, wg, (size_t)q->info.max_wg_size);
    for (unsigned i = 0; i < kernel->n_args; i++)
        if (kernel->args[i].size == 0)
            return grain_fail(GRAIN_ERR_INVALID, "%s: kernel %s: argument %u was never set", what, kernel->name, i);
    struct grain_ep_cmd *c = NULL;
    grain_status_t st = describe(q, CMD_LAUNCH, stream, &c);
    if (st != GRAIN_OK)
        return st;
    c->n_args = kernel->n_args;
    if ((c->args = args_copy(kernel->args, c->n_args)) == NULL) {
        free(c);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory", what);
    }
    c->kernel = kernel;
    kernel->refs++;
    c->dims = dims;
    for (unsigned d = 0; d < 3; d++) {
        c->global[d] = d < dims ? global[d] : 1;
        c->local[d] = chosen[d];
    }
    *c_p = c;
    return GRAIN_OK;
}

grain_status_t grain_ep_describe_copy(grain_cmdq_t *q, int in, unsigned stream, grain_ep_mem_t *mem, size_t offset,
                                      void *host, size_t bytes, struct grain_ep_cmd **c_p)
{
    int kind = in ? CMD_COPY_IN : CMD_COPY_OUT;
    const char *what = cmd_names[kind];
    grain_status_t st = grain_ep_mem_check(q, mem, offset, bytes, in ? GRAIN_EP_WRITE : GRAIN_EP_READ, what);
    if (st == GRAIN_OK && host == NULL && bytes > 0)
        st = grain_fail(GRAIN_ERR_INVALID, "%s: no host memory", what);
    struct grain_ep_cmd *c = NULL;
    if (st != GRAIN_OK || (st = describe(q, kind, stream, &c)) != GRAIN_OK)
        return st;
    void *device = (unsigned char *)mem->device + offset;
    c->mem = mem;
    c->dst = in ? device : host;
    c->src = in ? host : device;
    c->bytes = bytes;
    *c_p = c;
    return GRAIN_OK;
}

grain_status_t grain_ep_describe_message(grain_cmdq_t *q, int recv, unsigned stream, grain_ep_mem_t *mem,
                                         size_t offset, size_t bytes, int peer, int tag, size_t *received,
                                         struct grain_ep_cmd **c_p)
{
    int kind = recv ? CMD_RECV : CMD_SEND;
    grain_status_t st = grain_ep_msg_check(q, cmd_names[kind], mem, offset, bytes, peer, tag, recv, NULL);
    struct grain_ep_cmd *c = NULL;
    if (st != GRAIN_OK || (st = describe(q, kind, stream, &c)) != GRAIN_OK)
        return st;
    c->mem = mem;
    c->offset = offset;
    c->bytes = bytes;
    c->peer = peer;
    c->tag = tag;
    c->received = received;
    *c_p = c;
    return GRAIN_OK;
}

grain_status_t grain_ep_cmd_queue(grain_cmdq_t *q, const struct grain_ep_cmd *d, grain_ep_event_t *const *after,
                                  size_t n_after, grain_ep_event_t **event_p)
{
    const char *what = cmd_names[d->kind];
    grain_status_t st = GRAIN_OK;
    if (event_p == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "%s: nowhere to store the event", what);
    if (n_after > 0 && after == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "%s: %zu events to come after, but no array of them", what, n_after);
    for (size_t i = 0; i < n_after; i++)
        if ((st = grain_ep_event_owned(q, after[i], what)) != GRAIN_OK)
            return st;
    grain_ep_event_t *e = calloc(1, sizeof *e);
    struct grain_ep_cmd *c = malloc(sizeof *c + n_after * sizeof c->after[0]);
    ep_arg_t *args = d->kind == CMD_LAUNCH ? args_copy(d->args, d->n_args) : NULL;
    if (e == NULL || c == NULL || (d->kind == CMD_LAUNCH && args == NULL)) {
        free(e);
        free(c);
        free(args);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory for an event", what);
    }
    *c = *d;
    c->args = args;
    if (c->kind == CMD_LAUNCH)
        c->kernel->refs++;
    c->n_after = n_after;
    if (n_after > 0)
        memcpy(c->after, after, n_after * sizeof after[0]);
    e->cmd = c;
    *q->events_tail = e;
    q->events_tail = &e->next;
    q->n_cmds++;
    *event_p = e;
    grain_ep_streams_progress(q);
    return GRAIN_OK;
}

/* An immediate command: described, queued, the description dropped. */
static grain_status_t queue_now(grain_cmdq_t *q, grain_status_t described, struct grain_ep_cmd *d,
                                grain_ep_event_t *const *after, size_t n_after, grain_ep_event_t **event_p)
{
    if (described != GRAIN_OK)
        return described;
    grain_status_t st = grain_ep_cmd_queue(q, d, after, n_after, event_p);
    grain_ep_cmd_free(d);
    return st;
}

grain_status_t grain_ep_launch(grain_cmdq_t *q, unsigned stream, grain_ep_kernel_t *kernel, unsigned dims,
                               const size_t *global, const size_t *local, grain_ep_event_t *const *after,
                               size_t n_after, grain_ep_event_t **event_p)
{
    struct grain_ep_cmd *d = NULL;
    grain_status_t st = grain_ep_describe_launch(q, stream, kernel, dims, global, local, &d);
    return queue_now(q, st, d, after, n_after, event_p);
}

grain_status_t grain_ep_copy_in(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset,
                                const void *src, size_t bytes, grain_ep_event_t *const *after, size_t n_after,
                                grain_ep_event_t **event_p)
{
    struct grain_ep_cmd *d = NULL;
    grain_status_t st = grain_ep_describe_copy(q, 1, stream, mem, offset, (void *)src, bytes, &d);
    return queue_now(q, st, d, after, n_after, event_p);
}

grain_status_t grain_ep_copy_out(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset, void *dst,
                                 size_t bytes, grain_ep_event_t *const *after, size_t n_after,
                                 grain_ep_event_t **event_p)
{
    struct grain_ep_cmd *d = NULL;
    grain_status_t st = grain_ep_describe_copy(q, 0, stream, mem, offset, dst, bytes, &d);
    return queue_now(q, st, d, after, n_after, event_p);
}

grain_status_t grain_ep_send_on(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset, size_t bytes,
                                int dest, int tag, grain_ep_event_t *const *after, size_t n_after,
                                grain_ep_event_t **event_p)
{
    struct grain_ep_cmd *d = NULL;
    grain_status_t st = grain_ep_describe_message(q, 0, stream, mem, offset, bytes, dest, tag, NULL, &d);
    return queue_now(q, st, d, after, n_after, event_p);
}

grain_status_t grain_ep_recv_on(grain_cmdq_t *q, unsigned stream, grain_ep_mem_t *mem, size_t offset, size_t bytes,
                                int src, int tag, size_t *received, grain_ep_event_t *const *after, size_t n_after,
                                grain_ep_event_t **event_p)
{
    struct grain_ep_cmd *d = NULL;
    grain_status_t st = grain_ep_describe_message(q, 1, stream, mem, offset, bytes, src, tag, received, &d);
    return queue_now(q, st, d, after, n_after, event_p);
}

/* Starts command `c`: on its lane where streams are asynchronous, else to
 * completion; a message is posted, and done when its own event is.  Sets
 * *done when it is done already. */
static grain_status_t start(grain_cmdq_t *q, struct grain_ep_cmd *c, int *done)
{
    grain_status_t st = GRAIN_OK;
    *done = !q->streams_async;
    if (c->kind == CMD_SEND || c->kind == CMD_RECV) {
        *done = 0;
        /* Its stream's earlier commands are done, so the device holds what a send reads. */
        st = c->kind == CMD_SEND ? grain_ep_isend(q, c->mem, c->offset, c->bytes, c->peer, c->tag, &c->msg)
                                 : grain_ep_irecv(q, c->mem, c->offset, c->bytes, c->peer, c->tag, c->received,
                                                  &c->msg);
        if (st != GRAIN_OK)
            *done = 1;
        else
            c->msg->inner = 1;
        return st;
    }
    if (c->kind == CMD_LAUNCH) {
        grain_bkernel_t *bk = c->kernel->bkernel;
        for (unsigned i = 0; i < c->n_args && st == GRAIN_OK; i++) {
            const ep_arg_t *a = &c->args[i];
            void *address;
            memcpy(&address, a->value, sizeof address);
            st = a->mem != NULL ? q->bops->kernel_set_arg_ptr(bk, i, address)
                                : q->bops->kernel_set_arg(bk, i, a->size, a->value);
        }
        if (st == GRAIN_OK && q->streams_async)
            st = q->bops->launch_lane(bk, c->stream, c->dims, c->global, c->local);
        else if (st == GRAIN_OK && (st = q->bops->launch(bk, c->dims, c->global, c->local)) == GRAIN_OK)
            st = q->bops->synchronize(q->backend);
    } else if (c->bytes == 0) {
        *done = 1;
        return GRAIN_OK;
    } else {
        st = q->streams_async ? q->bops->copy_async(q->backend, c->stream, c->dst, c->src, c->bytes)
                              : q->bops->copy(q->backend, c->dst, c->src, c->bytes);
    }
    if (st == GRAIN_OK && q->streams_async)
        st = q->bops->copy_mark(q->backend, c->stream, &c->mark);
    if (st != GRAIN_OK)
        *done = 1;
    return st;
}

/* Whether a receive in flight before event `upto` on c's stream lands in
 * bytes that message c uses. */
static int lands_under(const grain_cmdq_t *q, const grain_ep_event_t *upto, const struct grain_ep_cmd *c)
{
    for (const grain_ep_event_t *e = q->events; e != NULL && e != upto; e = e->next) {
        const struct grain_ep_cmd *r = e->cmd;
        if (r != NULL && !e->done && r->msg != NULL && r->kind == CMD_RECV && r->stream == c->stream &&
            r->mem == c->mem && r->offset < c->offset + c->bytes && c->offset < r->offset + r->bytes)
            return 1;
    }
    return 0;
}

/* Whether the events c comes after are done, one look at each message
 * among them; one that failed fails c. */
static int after_done(grain_cmdq_t *q, struct grain_ep_cmd *c)
{
    int ready = 1;
    for (size_t i = 0; i < c->n_after; i++) {
        grain_ep_event_t *a = c->after[i];
        if (a == NULL)
            continue;
        if (!a->done && a->cmd == NULL)
            grain_ep_msg_poke(q, a);
        if (!a->done)
            ready = 0;
        else if (a->status != GRAIN_OK && !c->after_failed) {
            c->after_failed = 1;
            snprintf(c->why, sizeof c->why, "%s", a->why);
        }
    }
    return ready || c->after_failed;
}

int grain_ep_streams_progress(grain_cmdq_t *q)
{
    /* waiting: streams with a command not started, which holds those
     * behind it; flight: streams with a message posted and not done, which
     * holds the kernels and copies behind it (messages are not on the lane,
     * whose order would hold them); busy: streams with a command started
     * on the lane and not done, which a message must wait for, since it
     * leaves the lane's order to read or write the memory. */
    unsigned waiting = 0, busy = 0, flight = 0;
    int pending = 0;
    for (grain_ep_event_t *e = q->n_cmds > 0 ? q->events : NULL; e != NULL; e = e->next) {
        struct grain_ep_cmd *c = e->cmd;
        if (c == NULL || e->done)
            continue;
        unsigned bit = 1u << c->stream;
        if (!c->started) {
            int message = c->kind == CMD_SEND || c->kind == CMD_RECV;
            int held = message ? (busy & bit) || ((flight & bit) && lands_under(q, e, c)) : (flight & bit);
            if ((waiting & bit) || held || !after_done(q, c)) {
                waiting |= bit;
                pending++;
                continue;
            }
            if (c->after_failed) {
                grain_ep_event_complete(e, grain_fail(GRAIN_ERR_STATE, "%s: not run, as an event it came after "
                                                                       "failed: %s",
                                                      cmd_names[c->kind], c->why));
                continue;
            }
            int done = 0;
            grain_status_t st = start(q, c, &done);
            c->started = 1;
            if (done) {
                grain_ep_event_complete(e, st);
                continue;
            }
        }
        if (c->msg != NULL) {
            grain_ep_msg_poke(q, c->msg);
            if (!c->msg->done) {
                flight |= bit;
                pending++;
                continue;
            }
            grain_ep_event_t *m = c->msg;
            grain_status_t st = m->status;
            if (st != GRAIN_OK)
                grain_error_keep(m->why);
            c->msg = NULL; /* first, so that releasing it ends nothing else */
            grain_ep_event_release(q, m);
            grain_ep_event_complete(e, st);
            continue;
        }
        int state = q->bops->copy_done(q->backend, c->stream, c->mark);
        if (state != 0) {
            grain_ep_event_complete(e, state > 0 ? GRAIN_OK : q->bops->copy_wait(q->backend, c->stream));
        } else {
            busy |= bit;
            pending++;
        }
    }
    return pending;
}

int grain_ep_cmd_uses(const struct grain_ep_cmd *c, const grain_ep_mem_t *mem)
{
    if (c->mem == mem && (c->kind != CMD_SEND || c->msg == NULL)) /* a posted send has copied its bytes off */
        return 1;
    for (unsigned i = 0; c->kind == CMD_LAUNCH && i < c->n_args; i++)
        if (c->args[i].mem == mem)
            return 1;
    return 0;
}

void grain_ep_cmd_forget(grain_cmdq_t *q, const grain_ep_event_t *gone)
{
    for (grain_ep_event_t *e = q->n_cmds > 0 ? q->events : NULL; e != NULL; e = e->next) {
        struct grain_ep_cmd *c = e->cmd;
        if (c != NULL && c->msg == gone) { /* its own message, ended with the endpoint */
            c->msg = NULL;
            if (gone->done && gone->status != GRAIN_OK)
                grain_error_keep(gone->why);
            grain_ep_event_complete(e, gone->done ? gone->status
                                                  : grain_fail(GRAIN_ERR_STATE, "%s: its message was dropped",
                                                               cmd_names[c->kind]));
        }
        for (size_t i = 0; c != NULL && !c->started && i < c->n_after; i++) {
            if (c->after[i] != gone)
                continue;
            c->after[i] = NULL;
            if ((!gone->done || gone->status != GRAIN_OK) && !c->after_failed) {
                c->after_failed = 1;
                snprintf(c->why, sizeof c->why, "%s", gone->done ? gone->why : "it was dropped, never waited for");
            }
        }
    }
}

void grain_ep_cmd_free(struct grain_ep_cmd *c)
{
    if (c == NULL)
        return;
    if (c->kind == CMD_LAUNCH)
        kernel_release(c->kernel);
    free(c->args);
    free(c);
}

void grain_ep_programs_free(grain_cmdq_t *q)
{
    unsigned left = 0;
    while (q->programs != NULL) {
        grain_ep_program_t *p = q->programs;
        q->programs = p->next;
        while (p->kernels != NULL) {
            grain_ep_kernel_t *k = p->kernels;
            p->kernels = k->next;
            q->bops->kernel_release(k->bkernel);
            free(k);
        }
        q->bops->program_release(p->bprogram);
        free(p);
        left++;
    }
    if (left > 0)
        grain_info("endpoint %d returned with %u program%s it did not destroy; freed with their kernels", q->id,
                   left, left == 1 ? "" : "s");
}
