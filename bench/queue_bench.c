/*
 * queue_bench: throughput of grain's device-to-host send path by work-group
 * size and reservation mode (Gravel figure 6), against a CPU-only
 * multi-producer/multi-consumer queue with the same synchronization, one
 * message per slot (Gravel figure 8's baseline), measured in the same run.
 *
 *   queue_bench [--messages N] [--csv FILE]
 * Every point is the median of three runs.  Prints one line per point and the
 * ratio to the CPU queue; writes CSV.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grain/grain.h"
#include "runtime/queue_consumer.h"

extern const char queue_bench_source[];

#define MSG_BYTES 24 /* a grain message in the queue: header, offset, value */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    grain_queue_t *q;
    uint64_t messages;
} cpu_arg_t;

static void *cpu_produce(void *arg)
{
    cpu_arg_t *a = arg;
    for (uint64_t i = 0; i < a->messages; i++) {
        grain_u64 t = grain_queue_reserve(a->q);
        grain_u64 *p = grain_queue_payload(a->q, t);
        p[0] = i, p[1] = i, p[2] = i;
        grain_queue_publish(a->q, t, 1);
    }
    return NULL;
}

static void *cpu_consume(void *arg)
{
    cpu_arg_t *a = arg;
    uint64_t sum = 0;
    for (uint64_t got = 0; got < a->messages;) {
        grain_u64 t;
        if (!grain_queue_try_claim(a->q, &t))
            continue;
        while (!grain_queue_is_full(a->q, t)) {
        }
        grain_u64 *p = grain_queue_payload(a->q, t);
        sum += p[0] + p[1] + p[2];
        got += grain_queue_count(a->q, t);
        grain_queue_release(a->q, t);
    }
    return (void *)(uintptr_t)sum;
}

/* One producer and one consumer thread, as many cores as this machine has. */
static double cpu_queue_rate(uint64_t messages)
{
    size_t bytes = grain_queue_bytes(256, 1, 3);
    grain_queue_t *q = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    memset(q, 0, bytes);
    grain_queue_init(q, 256, 1, 3);
    cpu_arg_t a = {q, messages};
    pthread_t p, c;
    double t0 = now();
    pthread_create(&c, NULL, cpu_consume, &a);
    pthread_create(&p, NULL, cpu_produce, &a);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    double rate = (double)messages / (now() - t0);
    free(q);
    return rate;
}

static void check(grain_status_t st, const char *what)
{
    if (st != GRAIN_OK) {
        fprintf(stderr, "queue_bench: %s: %s\n", what, grain_error_message(NULL));
        exit(2);
    }
}

static double grain_rate(const char *reserve, size_t wg, uint64_t messages)
{
    grain_config_t *c;
    check(grain_config_create(&c), "config");
    check(grain_config_set(c, "transport", "self"), "config");
    check(grain_config_set(c, "reserve", reserve), "config");
    grain_t *g;
    check(grain_init(c, &g), "grain_init");
    grain_config_destroy(c);
    int64_t *counters;
    check(grain_malloc(g, 64 * sizeof *counters, (void **)&counters), "grain_malloc");
    grain_program_t *prog;
    grain_kernel_t *k;
    check(grain_program_create(g, queue_bench_source, NULL, &prog), "build");
    check(grain_kernel_create(prog, "bench_send", &k), "kernel");
    uint32_t per_wi = 64;
    size_t global = (size_t)((messages / per_wi + wg - 1) / wg * wg);
    check(grain_kernel_set_arg_ptr(k, 1, counters), "arg");
    check(grain_kernel_set_arg(k, 2, sizeof per_wi, &per_wi), "arg");
    /* A first small launch compiles and warms up; the second is measured. */
    size_t warm = wg;
    check(grain_launch(k, 1, &warm, &wg), "launch");
    check(grain_quiet(g), "quiet");
    double t0 = now();
    check(grain_launch(k, 1, &global, &wg), "launch");
    check(grain_quiet(g), "quiet");
    double rate = (double)(global * per_wi) / (now() - t0);
    int64_t total = 0;
    for (int i = 0; i < 64; i++)
        total += counters[i];
    if (total != (int64_t)((global + warm) * per_wi)) {
        fprintf(stderr, "queue_bench: %lld increments applied, %zu sent\n", (long long)total,
                (global + warm) * per_wi);
        exit(1);
    }
    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    check(grain_finalize(g), "finalize");
    return rate;
}

static double median3(double a, double b, double c)
{
    return a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
}

int main(int argc, char **argv)
{
    uint64_t messages = 1 << 22;
    const char *csv_path = "queue_bench.csv";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--messages") == 0)
            messages = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--csv") == 0)
            csv_path = argv[i + 1];
    }
    FILE *csv = fopen(csv_path, "w");
    if (csv == NULL) {
        perror(csv_path);
        return 2;
    }
    fprintf(csv, "queue,reserve,wg_size,msg_bytes,msgs_per_s,gb_per_s,ratio_to_cpu_queue\n");
    double cpu = median3(cpu_queue_rate(messages), cpu_queue_rate(messages), cpu_queue_rate(messages));
    printf("%-10s %-7s %6s %14s %9s %9s\n", "queue", "reserve", "wg", "msgs/s", "GB/s", "x cpu");
    printf("%-10s %-7s %6s %14.0f %9.3f %9.2f\n", "cpu-mpmc", "-", "-", cpu, cpu * MSG_BYTES / 1e9, 1.0);
    fprintf(csv, "cpu-mpmc,-,1,%d,%.0f,%.4f,1.0\n", MSG_BYTES, cpu, cpu * MSG_BYTES / 1e9);
    static const char *const modes[] = {"wg", "sg", "wi"};
    static const size_t sizes[] = {8, 16, 32, 64, 128, 256};
    for (int m = 0; m < 3; m++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            uint64_t n = strcmp(modes[m], "wi") == 0 ? messages / 8 : messages;
            double r = median3(grain_rate(modes[m], sizes[s], n), grain_rate(modes[m], sizes[s], n),
                               grain_rate(modes[m], sizes[s], n));
            printf("%-10s %-7s %6zu %14.0f %9.3f %9.2f\n", "grain", modes[m], sizes[s], r, r * MSG_BYTES / 1e9,
                   r / cpu);
            fprintf(csv, "grain,%s,%zu,%d,%.0f,%.4f,%.3f\n", modes[m], sizes[s], MSG_BYTES, r, r * MSG_BYTES / 1e9,
                    r / cpu);
            fflush(stdout);
        }
    }
    fclose(csv);
    printf("wrote %s\n", csv_path);
    return 0;
}
