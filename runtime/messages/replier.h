/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replies to other ranks' gets and fetching atomics (docs/shmem-api.md):
 * the old values that the threads and kernels applying their requests here
 * leave, packed per requester and sent by the transport like the
 * aggregators' buffers, on the same sequence numbers.  The words of gets
 * that do not wait, the answers to quiet requests and the host's quiet
 * requests to other ranks go the same way.
 *
 * Any thread adds replies; nothing here waits.  A receiving thread must not
 * wait for a send buffer: two ranks whose receiving threads waited for each
 * other's buffers would stop receiving for good.  So a reply that finds
 * every buffer of its requester in flight is kept, and goes with a later
 * flush.  Replies are sent at each flush, not when a buffer fills or times
 * out: a lane waits for each.
 */
#ifndef GRAIN_RUNTIME_MESSAGES_REPLIER_H
#define GRAIN_RUNTIME_MESSAGES_REPLIER_H

#include <stdint.h>

#include "grain/grain.h"

struct grain;
typedef struct grain_replier grain_replier_t;

grain_status_t grain_replier_create(struct grain *g, grain_replier_t **replier_p);
/* After the transport has returned every buffer. */
void grain_replier_destroy(grain_replier_t *r);

/* The reply to rank `dest`'s fetch with `ticket` (GRAIN_TICKET): `value`. */
void grain_replier_add(grain_replier_t *r, uint32_t dest, uint64_t ticket, uint64_t value);
/* The word rank `dest`'s get that does not wait asked for: a PUT (`cmd`,
 * GRAIN_CMD_PUT32 or PUT64) of `value` at heap offset `offset` there. */
void grain_replier_put(grain_replier_t *r, uint32_t dest, uint32_t cmd, uint64_t offset, uint64_t value);
/* The answer to rank `dest`'s quiet request with `ticket`: a plain reply,
 * or GRAIN_CMD_REPLY_AFTER once a get's word has gone to `dest`, so that the
 * requester fills the slot only after applying what came before it. */
void grain_replier_answer(grain_replier_t *r, uint32_t dest, uint64_t ticket);
/* The host's quiet request to rank `dest` (grain_quiet), answered into this
 * rank's reply slot of `ticket`.  It leaves after every buffer this rank
 * numbered for `dest` before: its packer numbers it after them. */
void grain_replier_ask_quiet(grain_replier_t *r, uint32_t dest, uint64_t ticket);
/* Sends what was added (what buffers are free for); cheap when nothing was. */
void grain_replier_flush(grain_replier_t *r);
/* Replies to `dest` handed to the transport so far (quiet counts them). */
uint64_t grain_replier_sent(grain_replier_t *r, uint32_t dest);

#endif
