/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank that dies or stops in the middle of a run, under mpirun (3 ranks
 * or more, GRAIN_PEER_TIMEOUT_S set).  Every rank sends every other one
 * messages in rounds (a kernel, then grain_quiet).  In round 4 the last
 * rank launches its kernel, then kills itself (argv[1] "kill") or stops
 * itself ("stop": a child it forks kills it after four timeouts, as a
 * stopped process would keep the launcher waiting forever).
 *
 * Each survivor must see grain_quiet return GRAIN_ERR_PEER with a sentence
 * naming the last rank, within twice the timeout of its last good round,
 * and grain_finalize return at once.  It prints one line either way:
 *   "peer_failure: rank R: GRAIN_ERR_PEER naming rank V after X s: ok"
 * ok_lines.sh runs the job and counts them.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_ok.h"
#include "grain/grain.h"

extern const char device_tests_source[];

#define VICTIM_ROUND 4
#define MAX_ROUNDS 100000

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(int stop, unsigned timeout_s)
{
    fflush(NULL);
    if (!stop)
        raise(SIGKILL);
    pid_t self = getpid();
    if (fork() == 0) {
        sleep(4 * timeout_s);
        kill(self, SIGKILL);
        _exit(0);
    }
    raise(SIGSTOP);
    for (;;) /* until the child's SIGKILL */
        pause();
}

int main(int argc, char **argv)
{
    const char *env = getenv("GRAIN_PEER_TIMEOUT_S");
    unsigned timeout_s = env != NULL ? (unsigned)strtoul(env, NULL, 10) : 0;
    if (argc != 2 || (strcmp(argv[1], "kill") != 0 && strcmp(argv[1], "stop") != 0) || timeout_s == 0) {
        fprintf(stderr, "usage: GRAIN_PEER_TIMEOUT_S=N mpirun -np 3.. peer_failure kill|stop\n");
        return 2;
    }
    grain_t *g;
    OK(grain_init(NULL, &g));
    int me = grain_my_pe(g), n = grain_n_pes(g), victim = n - 1;
    if (n < 3) {
        fprintf(stderr, "peer_failure: needs 3 ranks or more (two survivors)\n");
        return 2;
    }
    int64_t *target;
    OK(grain_malloc(g, 8 * sizeof *target, (void **)&target));
    grain_program_t *prog;
    grain_kernel_t *k;
    OK(grain_program_create(g, device_tests_source, NULL, &prog));
    OK(grain_am_register_program(g, prog));
    OK(grain_kernel_create(prog, "send_bad_to", &k));
    int32_t what = 0; /* inc64 messages, none of them bad: */
    uint32_t bad_lane = UINT32_MAX, handler = 2;
    OK(grain_kernel_set_arg_ptr(k, 1, target));
    OK(grain_kernel_set_arg(k, 2, sizeof what, &what));
    OK(grain_kernel_set_arg(k, 3, sizeof bad_lane, &bad_lane));
    OK(grain_kernel_set_arg(k, 4, sizeof handler, &handler));
    double last_ok = seconds();
    grain_status_t st = GRAIN_OK;
    for (int round = 1; st == GRAIN_OK && round <= MAX_ROUNDS; round++) {
        for (int32_t d = 1; d < n && st == GRAIN_OK; d++) {
            int32_t dest = (me + d) % n;
            size_t global = 4096, local = 64;
            OK(grain_kernel_set_arg(k, 5, sizeof dest, &dest));
            st = grain_launch(k, 1, &global, &local);
        }
        if (me == victim && round == VICTIM_ROUND)
            die(strcmp(argv[1], "stop") == 0, timeout_s);
        if (st == GRAIN_OK && (st = grain_barrier_all(g)) == GRAIN_OK)
            last_ok = seconds();
    }
    double after = seconds() - last_ok;
    char message[1024], name[32];
    snprintf(message, sizeof message, "%s", grain_error_message(g));
    snprintf(name, sizeof name, "rank %d ", victim);
    int ok = st == GRAIN_ERR_PEER && strstr(message, name) != NULL && after <= 2.0 * timeout_s;
    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    double before_finalize = seconds();
    grain_status_t fst = grain_finalize(g);
    double finalize_s = seconds() - before_finalize;
    ok = ok && fst == GRAIN_ERR_PEER && finalize_s < 1.0;
    printf("peer_failure: rank %d: %s naming rank %d after %.1f s (finalize %s in %.2f s): %s\n", me,
           st == GRAIN_ERR_PEER ? "GRAIN_ERR_PEER" : grain_strerror(st), victim, after, grain_strerror(fst),
           finalize_s, ok ? "ok" : "FAILED");
    if (!ok)
        printf("peer_failure: rank %d: \"%s\"\n", me, message);
    return ok ? 0 : 1;
}
