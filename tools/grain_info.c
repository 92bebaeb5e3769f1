/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grain_info: what this grain was built with and what it finds here: the
 * version, the backends and transports built in, the RDMA devices the verbs
 * transport may open, the device each backend opens with the capabilities
 * grain uses, then the transport, ranks and device grain_init picks and
 * every setting in force with where it came from.  Under mpirun every rank
 * starts grain and rank 0 prints.
 *
 *   grain_info            exit 0 once grain_init succeeded, 1 if it failed
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "grain/version.h"
#include "runtime/grain_impl.h"
#include "services/log.h"
#include "tools/cli/cli.h"
#include "transports/transport.h"

static const char *yes_no(int v)
{
    return v ? "yes" : "no";
}

static void print_device(const grain_backend_info_t *d)
{
    printf("    device            %s\n", d->device_name);
    printf("    compute units     %u\n", d->compute_units);
    printf("    work-group size   up to %zu, sub-groups of %u\n", d->max_wg_size, d->subgroup_width);
    if (d->device_memory > 0)
        printf("    device memory     %.1f GiB\n", (double)d->device_memory / (1u << 30));
    else
        printf("    device memory     none of its own (a CPU device: it uses the host's)\n");
    printf("    heap              %s\n", d->prefers_device_apply ? "in device memory (GRAIN_APPLY=auto picks device)"
                                                                  : "in memory host threads share (GRAIN_APPLY=auto picks host)");
    printf("    shared memory     %s\n", d->shared_memory);
    printf("    lanes spin apart  %s (GRAIN_RESERVE=wi needs it)\n", yes_no(d->independent_lanes));
    printf("    peer memory       %s\n", d->peer_host_access ? "host memory (host threads reach it)" : "device memory");
    printf("    device launch     %s\n", d->no_device_launch[0] == '\0' ? "yes (the launch transfer agent)"
                                                                         : d->no_device_launch);
}

/* Opens the device `config` selects alone and prints it, or why it does not open. */
static void print_opened(const grain_backend_ops_t *ops, const grain_config_t *config, const char *label)
{
    grain_config_t c = *config;
    grain_backend_t *b;
    char name[64];
    snprintf(name, sizeof name, "%s%s%s", ops->name, label[0] != '\0' ? " " : "", label);
    grain_log_quiet(1);
    grain_status_t st = ops->open(&c, 1, &b);
    grain_log_quiet(0);
    if (st != GRAIN_OK) {
        printf("  %s opens no device: %s\n", name, grain_error_message(NULL));
        return;
    }
    grain_backend_info_t d;
    memset(&d, 0, sizeof d);
    ops->query(b, &d);
    printf("  %s\n", name);
    print_device(&d);
    ops->close(b);
}

/* Every device each backend built in sees, each opened alone; where it sees
 * none, why, as the settings in force select. */
static void print_backends(const grain_config_t *settings)
{
    printf("backends built in:\n");
    const grain_backend_ops_t *const *ops = grain_backends_built();
    if (*ops == NULL)
        printf("  none (configure with -DGRAIN_WITH_OPENCL=ON and install ocl-icd-opencl-dev)\n");
    for (; *ops != NULL; ops++) {
        unsigned i = 0;
        for (grain_config_t c = *settings; (*ops)->select_device(&c, i); c = *settings, i++) {
            char label[32];
            snprintf(label, sizeof label, "device %u", i);
            print_opened(*ops, &c, label);
        }
        if (i == 0)
            print_opened(*ops, settings, "");
    }
}

/* The first line of a small file under /sys, without its newline; "" if none. */
static void read_line(const char *path, char *out, size_t size)
{
    FILE *f = fopen(path, "r");
    out[0] = '\0';
    if (f != NULL && fgets(out, (int)size, f) != NULL)
        out[strcspn(out, "\n")] = '\0';
    if (f != NULL)
        fclose(f);
}

/* The RDMA devices the verbs transport may open (GRAIN_IB_DEVICE), with the
 * state of each port, as the kernel lists them. */
static void print_rdma_devices(void)
{
    static const char root[] = "/sys/class/infiniband";
    DIR *d = opendir(root);
    int devices = 0;
    for (struct dirent *dev; d != NULL && (dev = readdir(d)) != NULL;) {
        if (dev->d_name[0] == '.')
            continue;
        char path[1024]; /* the root, two names of at most 255 bytes, a file name */
        snprintf(path, sizeof path, "%s/%s/ports", root, dev->d_name);
        DIR *ports = opendir(path);
        for (struct dirent *port; ports != NULL && (port = readdir(ports)) != NULL;) {
            if (port->d_name[0] == '.')
                continue;
            char state[64], layer[64];
            snprintf(path, sizeof path, "%s/%s/ports/%s/state", root, dev->d_name, port->d_name);
            read_line(path, state, sizeof state);
            snprintf(path, sizeof path, "%s/%s/ports/%s/link_layer", root, dev->d_name, port->d_name);
            read_line(path, layer, sizeof layer);
            printf("  RDMA device %s port %s: %s (%s)\n", dev->d_name, port->d_name, state, layer);
        }
        if (ports != NULL)
            closedir(ports);
        devices++;
    }
    if (d != NULL)
        closedir(d);
    if (devices == 0)
        printf("  RDMA devices: none (%s is empty or absent): the verbs transport has nothing to open\n", root);
}

/* What the build holds, and what each backend finds alone. */
static void print_build(const grain_config_t *settings)
{
    printf("grain %s (headers %s)\n", grain_version(), GRAIN_VERSION_STRING);
    printf("transports built in:");
    for (const char *const *t = grain_transports_built(); *t != NULL; t++)
        printf(" %s", *t);
    printf("\n");
    print_rdma_devices();
    print_backends(settings);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: grain_info (under mpirun too: rank 0 prints)\n"
                 "  the version, the backends and transports built in, the device each backend opens, and\n"
                 "  what grain_init picks with the GRAIN_* settings in force; exit 0 once grain_init succeeded\n");
}

int main(int argc, char **argv)
{
    cli_parse("grain_info", argc, argv, NULL, 0, 0, usage);
    grain_config_t settings;
    grain_status_t st = grain_config_init_env(&settings);
    grain_t *g = NULL;
    if (st == GRAIN_OK)
        st = grain_init(NULL, &g);
    if (st != GRAIN_OK) { /* every rank says why: which one is which is unknown */
        char why[1024];
        snprintf(why, sizeof why, "%s", grain_error_message(NULL));
        print_build(&settings);
        printf("grain_init: %s: %s\n", grain_strerror(st), why);
        return 1;
    }
    if (grain_my_pe(g) == 0) {
        print_build(&g->config);
        printf("grain_init: transport %s, %d rank%s; backend %s on %s; messages applied on the %s\n",
               grain_transport_name(g), grain_n_pes(g), grain_n_pes(g) == 1 ? "" : "s", grain_backend_name(g),
               grain_device_name(g), g->apply_on_device ? "device" : "host");
        grain_config_print(&g->config, stdout);
    }
    return grain_finalize(g) == GRAIN_OK ? 0 : 1;
}
