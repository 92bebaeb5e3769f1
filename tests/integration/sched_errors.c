/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the task scheduler refuses, each with its sentence, and that a
 * refusal leaves the scheduler working: a kernel of the scheduler given to
 * grain_launch or a pointer, an argument never set, a bad access, an array
 * of another scheduler, a prefetch to a device it does not have, BLAS
 * elements on operands that do not fit or alias, and a program's kernels
 * outliving their scheduler.  Prints "ok" per check.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_ok.h"
#include "grain/sched.h"

extern const char sched_oracle_source[];

static int failures;

static void refused(grain_status_t st, grain_status_t want, const char *words, const char *what)
{
    const char *msg = grain_error_message(NULL);
    if (st == want && strstr(msg, words) != NULL) {
        printf("sched_errors: %s: refused (%s): ok\n", what, msg);
        return;
    }
    printf("sched_errors: %s: got %s (\"%s\"), wanted %s naming \"%s\"\n", what, grain_strerror(st), msg,
           grain_strerror(want), words);
    failures++;
}

int main(void)
{
    grain_t *g;
    OK(grain_init(NULL, &g));
    grain_sched_t *s, *other;
    OK(grain_sched_create(g, GRAIN_POLICY_ROUND_ROBIN, &s));
    OK(grain_sched_create(g, GRAIN_POLICY_STREAM_AWARE, &other));
    grain_program_t *prog;
    grain_kernel_t *k;
    OK(grain_sched_program_create(s, sched_oracle_source, NULL, &prog));
    OK(grain_kernel_create(prog, "scale3", &k));
    grain_array_t *a, *foreign;
    uint64_t n = 64, add = 1;
    OK(grain_array_create(s, n * sizeof(uint64_t), &a));
    OK(grain_array_create(other, n * sizeof(uint64_t), &foreign));
    size_t global = (size_t)n;

    OK(grain_kernel_set_arg(k, 2, sizeof add, &add));
    refused(grain_sched_launch(k, 1, &global, NULL), GRAIN_ERR_INVALID, "argument 0 was never set",
            "a launch with arguments missing");
    refused(grain_kernel_set_arg_ptr(k, 0, a), GRAIN_ERR_INVALID, "grain_kernel_set_arg_array",
            "a pointer argument");
    refused(grain_kernel_set_arg_array(k, 0, a, (grain_access_t)4), GRAIN_ERR_INVALID, "access 4",
            "an access that is none");
    refused(grain_kernel_set_arg_array(k, 0, foreign, GRAIN_READ), GRAIN_ERR_INVALID, "another scheduler",
            "an array of another scheduler");
    refused(grain_kernel_set_arg(k, 40, sizeof n, &n), GRAIN_ERR_INVALID, "at most 32", "argument 40");
    OK(grain_kernel_set_arg_array(k, 0, a, GRAIN_READ_WRITE));
    OK(grain_kernel_set_arg(k, 1, sizeof n, &n));
    OK(grain_kernel_set_arg(k, 2, sizeof add, &add));
    refused(grain_launch(k, 1, &global, NULL), GRAIN_ERR_INVALID, "grain_sched_launch", "grain_launch");
    size_t local = 3;
    refused(grain_sched_launch(k, 1, &global, &local), GRAIN_ERR_INVALID, "work-group of 3",
            "a work-group that does not divide");
    refused(grain_array_prefetch(a, (int)grain_sched_devices(s)), GRAIN_ERR_INVALID, "-1 is the host",
            "a prefetch past the devices");
    refused(grain_array_advise(a, GRAIN_ADVISE_PREFERRED_LOCATION, -2, 1), GRAIN_ERR_INVALID, "-1 is the host",
            "advice for a device below the host");
    refused(grain_array_advise(a, (grain_advice_t)3, 0, 1), GRAIN_ERR_INVALID, "advice 3", "advice that is none");
    refused(grain_array_advise(NULL, GRAIN_ADVISE_READ_MOSTLY, 0, 1), GRAIN_ERR_INVALID, "needs an array",
            "advice without an array");
    refused(grain_policy_parse("fastest", &(grain_policy_t){0}), GRAIN_ERR_INVALID, "min-max-transfer-time",
            "a policy by an unknown name");

    /* BLAS elements: a (8 x 8 doubles) and `foreign` hold 64 words. */
    grain_array_t *b;
    OK(grain_array_create(s, n * sizeof(uint64_t), &b));
    refused(grain_sched_dgemm(s, 'X', 'N', 8, 8, 8, 1, a, 8, b, 8, 0, foreign, 8), GRAIN_ERR_INVALID,
            "'N', 'T' or 'C'", "a gemm transposed by an unknown letter");
    refused(grain_sched_dgemm(s, 'N', 'N', 8, 8, 8, 1, a, 7, b, 8, 0, b, 8), GRAIN_ERR_INVALID,
            "A's leading dimension is 7, below its 8 rows", "a leading dimension below the rows");
    refused(grain_sched_dgemm(s, 'N', 'T', 8, 9, 8, 1, a, 8, b, 9, 0, foreign, 8), GRAIN_ERR_INVALID,
            "B, 9 x 8 elements", "an operand larger than its array");
    refused(grain_sched_sgemm(s, 'N', 'N', 8, 8, 8, 1, a, 8, b, 8, 0, foreign, 8), GRAIN_ERR_INVALID,
            "C is an array of another scheduler", "an operand of another scheduler");
    refused(grain_sched_dgemm(s, 'N', 'N', 8, 8, 8, 1, a, 8, b, 8, 1, a, 8), GRAIN_ERR_INVALID,
            "C is also A", "C as A");
    refused(grain_sched_daxpy(s, 8, 1, a, 0, b, 1), GRAIN_ERR_INVALID, "increments are positive",
            "an axpy increment of 0");
    refused(grain_sched_saxpy(s, 8, 1, a, 1, a, 1), GRAIN_ERR_INVALID, "y is also x", "axpy's y as x");
    refused(grain_sched_daxpy(s, 9, 1, a, 8, b, 1), GRAIN_ERR_INVALID, "x, 9 elements of 8 bytes 8 apart",
            "an axpy past its array");
    refused(grain_sched_daxpy(NULL, 8, 1, a, 1, b, 1), GRAIN_ERR_INVALID, "needs a scheduler",
            "an axpy without a scheduler");
    grain_array_destroy(b);

    /* A kernel launched with none of its arguments set (the scheduler
     * cannot know how many it takes) fails on its device: the wait says
     * so, and the next wait starts afresh. */
    grain_kernel_t *bare;
    OK(grain_kernel_create(prog, "mix3", &bare));
    OK(grain_sched_launch(bare, 1, &global, NULL));
    grain_status_t st = grain_sched_wait(s);
    printf("sched_errors: a kernel without its arguments: %s (%s): %s\n", grain_strerror(st),
           grain_error_message(NULL), st != GRAIN_OK ? "ok" : "WRONG");
    failures += st == GRAIN_OK;
    OK(grain_sched_wait(s));
    grain_kernel_destroy(bare);

    /* After the refusals the scheduler still runs what it is given. */
    OK(grain_sched_launch(k, 1, &global, NULL));
    OK(grain_sched_launch(k, 1, &global, NULL));
    const uint64_t *h;
    OK(grain_array_host(a, GRAIN_READ, (void **)&h));
    int same = 1;
    for (uint64_t i = 0; i < n; i++)
        same &= h[i] == 4; /* 0 -> 1 -> 4 */
    printf("sched_errors: two launches after the refusals: %s\n", same ? "ok" : "WRONG");
    failures += !same;

    /* A program's kernel outlives its scheduler: it refuses launches, and
     * destroying it afterwards is safe. */
    grain_array_destroy(foreign);
    grain_sched_destroy(other);
    grain_sched_destroy(s);
    refused(grain_sched_launch(k, 1, &global, NULL), GRAIN_ERR_STATE, "scheduler is destroyed",
            "a launch after the scheduler");
    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    OK(grain_finalize(g));
    printf("sched_errors: %s\n", failures ? "FAILED" : "all refusals ok");
    return failures != 0;
}
