/* SPDX-License-Identifier: BSD-3-Clause */
/* The heap words of the work-group quiet test (wg_quiet.c, wg_quiet.cl):
 * every rank's slice of every rank's data words, a flag word per sender, and
 * the rank's counts of words found short: by gets after the quiet, then
 * behind a flag. */
#ifndef WG_QUIET_LAYOUT_H
#define WG_QUIET_LAYOUT_H

#define QUIET_MAX_PES 4
#define QUIET_LANES 64
#define QUIET_DATA(src, lane) ((src) * QUIET_LANES + (lane))
#define QUIET_FLAG(src) (QUIET_MAX_PES * QUIET_LANES + (src))
#define QUIET_ERRORS QUIET_FLAG(QUIET_MAX_PES)
#define QUIET_FLAGGED_ERRORS (QUIET_ERRORS + 1)
#define QUIET_WORDS (QUIET_FLAGGED_ERRORS + 1)
/* What lane `lane` of rank `src` writes in round `r` (from 1): larger each
 * round. */
#define QUIET_VALUE(r, src, lane) (((grain_i64)(r) << 32) | ((grain_i64)(src) << 16) | (grain_i64)(lane))
/* The active message whose host handler stores its value slowly. */
#define QUIET_SLOW_AM 5

#endif
