/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * GRAIN_* variables in the environment that grain reads nowhere: mostly
 * typos (GRAIN_HEAP_SZIE), which would otherwise change nothing without a
 * word.  The warning names the closest variable grain does read.
 */
#include <stddef.h>
#include <string.h>

#include "services/config.h"
#include "services/log.h"

extern char **environ;

#define GRAIN_SETTING_NAME_(field, env, ...) "GRAIN_" #env,
#define GRAIN_OTHER_NAME_(env, doc) "GRAIN_" #env,
static const char *const known[] = {GRAIN_CONFIG_VARS(GRAIN_SETTING_NAME_) GRAIN_OTHER_VARS(GRAIN_OTHER_NAME_)};
#define N_KNOWN (sizeof known / sizeof known[0])
#define LONGEST 64 /* no known name is longer; a longer one is far from all */

/* Edits (insertions, deletions, substitutions) from a[0..la) to b. */
static size_t distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b), row[LONGEST + 1];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

void grain_config_warn_unknown_env(void)
{
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        if (strncmp(*e, "GRAIN_", 6) != 0)
            continue;
        size_t len = strcspn(*e, "=");
        const char *closest = NULL;
        size_t best = (size_t)-1;
        for (size_t i = 0; i < N_KNOWN && best > 0; i++) {
            size_t d = len <= LONGEST ? distance(*e, len, known[i]) : (size_t)-1;
            if (d < best) {
                best = d;
                closest = known[i];
            }
        }
        if (best == 0)
            continue;
        /* A suggestion only where it is near: a third of the name's letters
         * after the prefix. */
        int near = closest != NULL && best <= (len - 6) / 3 + 1;
        grain_warn("%.*s is set, but grain reads no such variable%s%s%s (grain_info lists the settings)", (int)len,
                   *e, near ? "; did you mean " : "", near ? closest : "", near ? "?" : "");
    }
}
