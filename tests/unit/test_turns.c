/* SPDX-License-Identifier: BSD-3-Clause */
/* Turns between the processes of a node (services/turns.h): a second
 * process waits while the first holds the turn, a process that dies gives
 * it back, and without a folder for the files nobody waits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "services/backoff.h"
#include "services/turns.h"

#define HELD_NS 300000000ull

/* A child that takes the turn for `key`, tells the parent, holds it for
 * HELD_NS and then gives it back, or dies holding it. */
static pid_t child_holding(uint64_t key, int dies)
{
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        grain_turn_t t;
        grain_turn_take(&t, key);
        char c = 1;
        if (write(ready[1], &c, 1) != 1)
            _exit(2);
        struct timespec held = {0, (long)HELD_NS};
        nanosleep(&held, NULL);
        if (dies)
            _exit(0); /* the turn still held: the kernel closes the file */
        grain_turn_give(&t);
        _exit(0);
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    close(ready[1]);
    return pid;
}

static uint64_t waited_for_turn(uint64_t key)
{
    uint64_t start = grain_now_ns();
    grain_turn_t t;
    grain_turn_take(&t, key);
    uint64_t waited = grain_now_ns() - start;
    grain_turn_give(&t);
    return waited;
}

static void reap(pid_t pid)
{
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_second_waits(void **state)
{
    uint64_t key = grain_turn_key(GRAIN_TURN_KEY_START, "program", 7);
    pid_t pid = child_holding(key, 0);
    assert_true(waited_for_turn(key) >= HELD_NS / 2);
    reap(pid);
    assert_true(waited_for_turn(key) < HELD_NS / 2); /* given back */
}

static void test_death_gives_it_back(void **state)
{
    uint64_t key = grain_turn_key(GRAIN_TURN_KEY_START, "dies", 4);
    pid_t pid = child_holding(key, 1);
    assert_true(waited_for_turn(key) >= HELD_NS / 2);
    reap(pid);
}

static void test_other_file_does_not_wait(void **state)
{
    uint64_t a = grain_turn_key(GRAIN_TURN_KEY_START, "a", 1), b = a + 1; /* the next file */
    assert_int_not_equal(a % GRAIN_TURN_FILES, b % GRAIN_TURN_FILES);
    pid_t pid = child_holding(a, 0);
    assert_true(waited_for_turn(b) < HELD_NS / 2);
    reap(pid);
}

static void test_no_folder_no_wait(void **state)
{
    const char *saved = getenv("TMPDIR");
    setenv("TMPDIR", "/nonexistent/grain-turns", 1);
    grain_turn_t t;
    grain_turn_take(&t, 1);
    assert_int_equal(t.fd, -1);
    grain_turn_give(&t);
    if (saved != NULL)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
}

static void test_key_takes_every_byte(void **state)
{
    uint64_t k = grain_turn_key(GRAIN_TURN_KEY_START, "abc", 3);
    assert_int_not_equal(k, grain_turn_key(GRAIN_TURN_KEY_START, "abd", 3));
    assert_int_not_equal(k, grain_turn_key(GRAIN_TURN_KEY_START, "abc", 2));
    assert_int_equal(k, grain_turn_key(grain_turn_key(GRAIN_TURN_KEY_START, "a", 1), "bc", 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_waits),     cmocka_unit_test(test_death_gives_it_back),
        cmocka_unit_test(test_other_file_does_not_wait), cmocka_unit_test(test_no_folder_no_wait),
        cmocka_unit_test(test_key_takes_every_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
