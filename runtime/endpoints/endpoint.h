/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device endpoints (include/grain/ep.h, docs/endpoints.md): what one
 * endpoint thread owns, and which device each virtual device drives.
 */
#ifndef GRAIN_RUNTIME_ENDPOINTS_ENDPOINT_H
#define GRAIN_RUNTIME_ENDPOINTS_ENDPOINT_H

#include <pthread.h>

#include "backends/backend.h"
#include "grain/ep.h"

struct grain_ep_mem {
    struct grain_ep_mem *next; /* in its endpoint's list */
    const grain_cmdq_t *owner;
    size_t size;
    unsigned flags;
    void *device; /* the backend's alloc_device */
    void *shadow; /* the backend's alloc_shared (pinned, or shared virtual memory), or NULL */
};

/* Memory that holds a message in flight (ep_stage.c): the sender's device
 * memory for one that waits in the mailbox for an endpoint of its rank,
 * pinned host memory for one between ranks; from its endpoint's pool, and
 * back to it once copied out. */
typedef struct grain_ep_stage {
    struct grain_ep_stage *next; /* in its pool's free list */
    struct grain_ep_pool *pool;
    void *device;
    size_t cap;
} grain_ep_stage_t;

/* An endpoint's stages of one kind, under the team's lock: device memory
 * for the mailbox, or pinned host memory (`host`) for messages between
 * ranks. */
typedef struct grain_ep_pool {
    grain_ep_stage_t *free; /* copied out, to reuse */
    size_t bytes;           /* of the stages allocated and not freed: GRAIN_EP_STAGING at most */
    unsigned out;           /* stages holding a message or being copied out */
    int host;
} grain_ep_pool_t;

/* An endpoint's window (ep_window.c): device memory of its own that the
 * endpoints of the node's other ranks map, so that a message to one of them
 * goes device to device.  A block holds a message from the copy into it
 * until the receiver's FIN; `maps` holds every endpoint's window that this
 * one mapped (NULL: none), `reads` whether each endpoint mapped this one's. */
typedef struct grain_ep_block {
    struct grain_ep_block *next; /* by offset */
    size_t at, len;
} grain_ep_block_t;

/* A FIN on its way: received into `word` (the block's offset) or sent from
 * it. */
typedef struct grain_ep_fin {
    struct grain_ep_fin *next;
    void *req;
    uint32_t rank; /* the other side */
    uint64_t word;
} grain_ep_fin_t;

typedef struct grain_ep_window {
    void *base;
    size_t size;
    grain_ep_block_t *blocks;
    void **maps;
    size_t *sizes;
    unsigned char *reads;
    grain_ep_fin_t *awaited, *sent;
} grain_ep_window_t;

/* A message (GMH's transport request) or a stream command (its backend
 * event), in its endpoint's list until waited for. */
struct grain_ep_event {
    struct grain_ep_event *next; /* in its endpoint's list, in the order posted */
    int recv, here, done;
    grain_status_t status;
    char why[512];
    grain_ep_mem_t *mem; /* a receive's */
    size_t offset, cap, *received;
    int src, tag;
    void *req;              /* the transport's, between ranks */
    unsigned char *staging; /* the message's host bytes, between ranks: hstage's, or malloc'ed */
    struct grain_ep_stage *hstage;
    struct grain_ep_cmd *cmd; /* a stream command's (ep_stream.c), else NULL */
    int inner;                /* a stream command's own message: the user knows it as that command */
    /* A receive from the rank's own endpoints, under the team's lock: in
     * its endpoint's list of posted receives until matched; claimed by a
     * sender that copies straight into its memory (1), then filled (2)
     * with `filled` bytes and `fill_status` (why in `why`). */
    struct grain_ep_event *posted_next;
    int headed; /* between ranks of one node with windows: a head before the bytes (ep_window.c) */
    int claim;
    size_t filled;
    grain_status_t fill_status;
};

/* The endpoints of one rank in one grain_ep_run, for collectives: the last
 * endpoint to arrive leads (rank-local combine, the ranks' agreement, the
 * data collective), the others wait for it. */
typedef struct grain_ep_team {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned devices, arrived, departed; /* departed: endpoints whose function returned */
    int leading;
    uint64_t generation;
    /* The collective being gathered, per virtual device. */
    uint64_t *keys;
    void **parts;
    grain_status_t *statuses;
    /* What the last one led to, kept until every endpoint has read it. */
    struct grain_ep_result *result;
    /* Messages between the rank's own endpoints, in the order sent, and
     * which endpoints have returned (a receive from one then fails). */
    struct grain_ep_msg *mail, **mail_tail;
    pthread_cond_t mail_cond;
    unsigned char *gone;
    /* Per virtual device: its receives from the rank's endpoints not yet
     * matched, oldest first, and its backend while it runs, which a sender
     * asks whether its lanes reach that device's memory. */
    grain_ep_event_t **posted;
    grain_backend_t **backends;
    /* Per rank, under the lock: the FINs this rank's endpoints sent it and
     * received from it, so that each rank knows which FINs to wait for
     * before its windows go (ep_window.c). */
    uint64_t *fins_to, *fins_from;
} grain_ep_team_t;

struct grain_cmdq {
    grain_t *grain;
    int id, count;
    unsigned vdev, devices, device_index;
    int cpu; /* the core the thread is bound to, or -1 */
    const grain_backend_ops_t *bops;
    grain_backend_t *backend; /* opened by the endpoint's own thread */
    grain_backend_info_t info;
    grain_ep_mem_t *mems;
    struct grain_ep_program *programs; /* built and not destroyed */
    struct grain_ep_reg *regs;         /* registered commands, in order (ep_loop.c) */
    unsigned n_regs, cap_regs;
    int looping;                       /* inside grain_ep_start: the registrations hold still */
    int streams_async; /* the backend runs lanes and kernels on them */
    /* Messages started and not yet waited for, in the order posted: the
     * rank's mailbox gives its messages to receives in that order. */
    grain_ep_event_t *events, **events_tail;
    unsigned n_cmds; /* of those, stream commands: none, and a wait looks at no stream */
    unsigned n_there; /* of those, messages between ranks in the transport's hands */
    grain_ep_fn_t fn;
    void *arg;
    grain_ep_team_t *team;
    signed char *reach; /* per virtual device: whether this backend's lanes copy into its memory; -1 not asked */
    grain_ep_pool_t pool, host_pool; /* for its messages waiting in the mailbox, and between ranks */
    grain_ep_window_t *window;       /* NULL where no rank of the job shares a node with windows */
    /* Reductions that move as messages (ep_coll_messages.c): the kernels,
     * built at the first, and scratch memory for a chunk. */
    grain_bprogram_t *reduce_program;
    grain_bkernel_t *reduce_kernels[3];
    grain_ep_mem_t *reduce_scratch;
    pthread_t thread;
    pthread_t self; /* set by the thread itself: calls from any other are refused */
    grain_status_t status;
    char why[1024]; /* the thread's error sentence when status is not GRAIN_OK */
};

/* Endpoints a rank runs where neither the call nor GRAIN_EP_DEVICES says:
 * its share of the node's devices, at least one. */
unsigned grain_ep_auto_devices(unsigned node_devices, unsigned node_ranks);

/* Frees what the endpoint allocated and did not free. */
void grain_ep_mem_free_all(grain_cmdq_t *q);
/* The ranks' agreement, one allreduce (MAX) of these words: whether any
 * rank, and every rank, is done (its endpoints returned); a key (a
 * collective and its arguments, or a count), both ways, so that a
 * difference shows and the range is known; the lowest status, negated;
 * then A_CARRY_BYTES that one rank may carry to all (`carry`, the others
 * giving INT64_MIN words, which MAX leaves to the carrier's): a small
 * broadcast's data, so that it costs one host collective, not two.
 * grain_ep_run's start, every collective and grain_ep_run's end each cost
 * every rank one, of the same size, so that ranks in different ones still
 * meet. */
enum { A_DONE, A_ALL_DONE_NEG, A_KEY, A_KEY_NEG, A_STATUS_NEG, A_CARRY, A_WORDS = A_CARRY + 8 };
#define A_CARRY_BYTES (8u * (A_WORDS - A_CARRY))
grain_status_t grain_ep_agree(grain_t *g, int done, uint64_t key, grain_status_t st, const void *carry,
                              size_t carry_bytes, int64_t a[A_WORDS]);

/* The team's life: set up for `devices` endpoints, and an endpoint's
 * function returned (collectives of the others fail from then on). */
grain_status_t grain_ep_team_init(grain_ep_team_t *t, unsigned devices, unsigned ranks);
void grain_ep_team_destroy(grain_ep_team_t *t);
void grain_ep_team_depart(grain_ep_team_t *t, unsigned vdev);
/* After every endpoint of the rank returned: answers the other ranks'
 * collectives (which fail, as this rank's endpoints are gone) until every
 * rank's have returned, and returns the lowest status of all ranks. */
grain_status_t grain_ep_team_finish(grain_t *g, grain_status_t mine);

/* When the endpoint's function returned: waits for its sends, drops its
 * receives, lets its commands end (those after a dropped receive fail),
 * and says how many it had left. */
void grain_ep_events_finish(grain_cmdq_t *q);
/* Whether a receive or a command of q not yet done uses `mem`; whether a
 * registered command does (ep_loop.c). */
int grain_ep_events_use(const grain_cmdq_t *q, const grain_ep_mem_t *mem);
int grain_ep_regs_use(const grain_cmdq_t *q, const grain_ep_mem_t *mem);

/* Stream commands (ep_stream.c).  A command is first described (checked,
 * with its own copy of a launch's arguments and a hold on its kernel), then
 * queued with its events as often as wanted: once for an immediate command,
 * once a round for a registered one (ep_loop.c).  grain_ep_cmd_free frees
 * a description or a queued command. */
grain_status_t grain_ep_describe_launch(grain_cmdq_t *q, unsigned stream, grain_ep_kernel_t *kernel, unsigned dims,
                                        const size_t *global, const size_t *local, struct grain_ep_cmd **c_p);
grain_status_t grain_ep_describe_copy(grain_cmdq_t *q, int in, unsigned stream, grain_ep_mem_t *mem, size_t offset,
                                      void *host, size_t bytes, struct grain_ep_cmd **c_p);
grain_status_t grain_ep_describe_message(grain_cmdq_t *q, int recv, unsigned stream, grain_ep_mem_t *mem,
                                         size_t offset, size_t bytes, int peer, int tag, size_t *received,
                                         struct grain_ep_cmd **c_p);
grain_status_t grain_ep_cmd_queue(grain_cmdq_t *q, const struct grain_ep_cmd *d, grain_ep_event_t *const *after,
                                  size_t n_after, grain_ep_event_t **event_p);
void grain_ep_cmd_free(struct grain_ep_cmd *cmd);
/* Starts the commands whose turn has come and whose events are done,
 * notes those the device finished, and returns how many are not done.
 * Whether a command uses `mem`.  That event `gone` is freed: commands that
 * came after it forget it, failing if it failed or never ended.  When the
 * endpoint returns, after its events: frees the programs and kernels it did
 * not destroy. */
int grain_ep_streams_progress(grain_cmdq_t *q);
int grain_ep_cmd_uses(const struct grain_ep_cmd *cmd, const grain_ep_mem_t *mem);
void grain_ep_cmd_forget(grain_cmdq_t *q, const grain_ep_event_t *gone);
void grain_ep_programs_free(grain_cmdq_t *q);
/* Events (ep_p2p.c): the checks of a message's arguments (peer, tag,
 * memory, the channel between ranks, whose MPI tag goes to *mpi_tag when
 * not NULL); one look at a message's event,
 * without waiting; an event unlinked and freed, its status dropped; one
 * ends with `st` (its sentence kept when not GRAIN_OK); GRAIN_OK when `e`
 * is an event of q not yet waited for, else GRAIN_ERR_INVALID naming
 * `what`. */
grain_status_t grain_ep_msg_check(const grain_cmdq_t *q, const char *what, const grain_ep_mem_t *mem, size_t offset,
                                  size_t bytes, int peer, int tag, int recv, uint64_t *mpi_tag);
/* Tags of grain's own messages, past the application's: a block's FINs
 * (ep_window.c) and the collectives' (ep_coll.c), which the messages'
 * calls take besides the application's tags.  On the transport's endpoint
 * channel each pair (source vdev, destination vdev) has a block of the
 * application's GRAIN_EP_TAGS; past every pair's block, a FIN tag a pair,
 * then a collectives' tag a pair: the channel's tag of `tag` from `src` to
 * `dst`. */
enum { GRAIN_EP_TAG_FIN = GRAIN_EP_TAGS, GRAIN_EP_TAG_COLL };
uint64_t grain_ep_channel_tag(unsigned devices, int src, int dst, int tag);
/* The lane of an endpoint's backend that its messages' copies and its
 * reductions run on: no stream's. */
#define GRAIN_EP_MESSAGE_LANE GRAIN_RECV_LANE
/* Collectives as messages (ep_coll_messages.c), each endpoint's part of the
 * schedule on `mem` from byte `at`: a binomial tree from `root` of `bytes`;
 * a ring of slots of `bytes`; a ring of reduce-scatter and allgather of
 * `count` elements; a binomial tree reducing `count` elements into `root`;
 * a gather's or a scatter's slots of `bytes` between `root` and each
 * endpoint; pairwise exchanges of an alltoall's slots; then the reductions'
 * kernels and scratch memory freed, when the endpoint returns. */
grain_status_t grain_ep_tree_broadcast(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t at, size_t bytes, int root);
grain_status_t grain_ep_ring_allgather(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t at, size_t bytes);
grain_status_t grain_ep_ring_allreduce(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t at, size_t count,
                                       grain_dtype_t dtype, grain_op_t op);
grain_status_t grain_ep_tree_reduce(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t at, size_t count,
                                    grain_dtype_t dtype, grain_op_t op, int root);
grain_status_t grain_ep_root_slots(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t at, size_t bytes, int root,
                                   int scatter);
grain_status_t grain_ep_pairwise_alltoall(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t at, size_t bytes);
void grain_ep_reduce_release(grain_cmdq_t *q);
/* grain_ep_isend and grain_ep_irecv on the collectives' tag. */
grain_status_t grain_ep_coll_isend(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int dest,
                                   grain_ep_event_t **event_p);
grain_status_t grain_ep_coll_irecv(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int src,
                                   size_t *received, grain_ep_event_t **event_p);
void grain_ep_msg_poke(grain_cmdq_t *q, grain_ep_event_t *e);
void grain_ep_event_release(grain_cmdq_t *q, grain_ep_event_t *e);
void grain_ep_event_complete(grain_ep_event_t *e, grain_status_t st);
grain_status_t grain_ep_event_owned(const grain_cmdq_t *q, const grain_ep_event_t *e, const char *what);

/* Drops the messages between the rank's endpoints that none received;
 * returns how many there were. */
unsigned grain_ep_mail_drop(grain_ep_team_t *t);
/* Before the endpoint's backend closes: its messages still in the mailbox
 * move to host memory, then its stages are freed (ep_p2p.c). */
void grain_ep_mail_unstage(grain_cmdq_t *q);
/* A copy between memories of the rank's devices that is done when it
 * returns: on the endpoint's message lane, or by the thread where the
 * backend's memory is the host's. */
grain_status_t grain_ep_copy_now(grain_cmdq_t *q, void *dst, const void *src, size_t bytes);

/* Windows (ep_window.c).
 * - open: on every endpoint of the job, at the start of grain_ep_run: its
 *   window, and the node's other ranks' mapped (two allgathers); q->window
 *   stays NULL where GRAIN_EP_WINDOW is 0, the job has one rank, or the
 *   backend or the transport's tags cannot serve.
 * - headed: whether messages between q and endpoint `peer` carry a head.
 * - take: a block of q's window for a message of `bytes` to `dest`, at
 *   *at_p (*block_p here); 0 where the message crosses the host instead (too
 *   small, `dest` did not map q's window, no room once the FINs that came are
 *   reaped).  give: the block at `at` free again.  sent: the head left, and
 *   the FIN that will free its block is awaited.
 * - source: where block (at, len) of endpoint src's window lies here; NULL
 *   where it does not.  fin: tells src that its block at `at` is read.
 * - progress: reaps the FINs that came and those that left.
 * - windows_close: the rank's windows, once grain_ep_team_finish returned
 *   (`all_ok`: on every rank): waits for the FINs sent here, unmaps, meets
 *   the other ranks, frees. */
grain_status_t grain_ep_window_open(grain_cmdq_t *q);
int grain_ep_window_headed(const grain_cmdq_t *q, int peer);
int grain_ep_window_take(grain_cmdq_t *q, int dest, size_t bytes, void **block_p, size_t *at_p);
void grain_ep_window_give(grain_cmdq_t *q, size_t at);
grain_status_t grain_ep_window_sent(grain_cmdq_t *q, int dest);
const void *grain_ep_window_source(const grain_cmdq_t *q, int src, uint64_t at, uint64_t len);
grain_status_t grain_ep_window_fin(grain_cmdq_t *q, int src, uint64_t at);
void grain_ep_window_progress(grain_cmdq_t *q);
void grain_ep_windows_close(grain_t *g, grain_ep_team_t *t, grain_cmdq_t *eps, unsigned devices, int all_ok);

/* The staging pools (ep_stage.c).  take: a stage of at least `bytes` from
 * q's pool p, on q's thread, or NULL where GRAIN_EP_STAGING leaves no room
 * or the backend gives no memory (the message then takes malloc'ed host
 * memory).  give: a stage back to its pool, with the team's lock held
 * (`locked`) or not.  close: once q's messages left p's stages, waits for
 * those being copied out and frees them all. */
grain_ep_stage_t *grain_ep_stage_take(grain_cmdq_t *q, grain_ep_pool_t *p, size_t bytes);
void grain_ep_stage_give(grain_ep_team_t *t, grain_ep_stage_t *s, int locked);
void grain_ep_pool_close(grain_cmdq_t *q, grain_ep_pool_t *p);
/* Frees the stages q's pools keep for reuse, for an allocation that found
 * no memory; returns whether there were any. */
int grain_ep_pools_trim(grain_cmdq_t *q);

/* That `mem` is q's, allows `needs` (GRAIN_EP_READ, GRAIN_EP_WRITE) and
 * holds `bytes` at `offset`; else GRAIN_ERR_INVALID with a sentence naming
 * `what`, the call. */
grain_status_t grain_ep_mem_check(const grain_cmdq_t *q, const grain_ep_mem_t *mem, size_t offset, size_t bytes,
                                  unsigned needs, const char *what);
/* Host memory into and out of `mem` at `offset`, through its pinned shadow
 * where it has one; unchecked (the callers checked). */
grain_status_t grain_ep_mem_in(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, const void *src, size_t bytes);
grain_status_t grain_ep_mem_out(grain_cmdq_t *q, const grain_ep_mem_t *mem, size_t offset, void *dst, size_t bytes);
/* Host memory for `bytes` of mem at offset, on the way to or from the
 * device: its shadow, else a buffer the caller frees (*own); NULL without
 * memory. */
unsigned char *grain_ep_mem_staging(grain_ep_mem_t *mem, size_t offset, size_t bytes, void **own);

/* GRAIN_OK when the calling thread is q's own, else GRAIN_ERR_STATE naming
 * `what`, the call. */
grain_status_t grain_ep_check_thread(const grain_cmdq_t *q, const char *what);

#endif
