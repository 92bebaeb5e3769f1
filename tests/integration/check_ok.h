/* SPDX-License-Identifier: BSD-3-Clause */
/* The integration tests' guard for calls that must succeed: the call, the
 * status and grain's sentence, then exit 2 (an error, not a failed check). */
#ifndef GRAIN_TESTS_CHECK_OK_H
#define GRAIN_TESTS_CHECK_OK_H

#include <stdio.h>
#include <stdlib.h>

#include "grain/grain.h"

#define OK(x)                                                                                      \
    do {                                                                                           \
        grain_status_t st_ = (x);                                                                  \
        if (st_ != GRAIN_OK) {                                                                     \
            fprintf(stderr, "%s: %s (%s)\n", #x, grain_strerror(st_), grain_error_message(NULL)); \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

#endif
