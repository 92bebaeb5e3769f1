/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/grain_impl.h"
#include "services/log.h"

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* The host's name and the kernel's boot id: containers on one machine share
 * the boot id, machines that reuse a name do not. */
static uint64_t host_key(void)
{
    char text[256] = "";
    uint64_t h = 1469598103934665603ull;
    gethostname(text, sizeof text - 1);
    h = fnv1a(h, text);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(text, sizeof text, f) != NULL)
            h = fnv1a(h, text);
        fclose(f);
    }
    return h;
}

grain_status_t grain_node_discover(grain_t *g)
{
    size_t n = (size_t)g->n_pes;
    uint64_t *keys = calloc(2 * n, sizeof *keys);
    g->node_of = calloc(n, sizeof *g->node_of);
    if (keys == NULL || g->node_of == NULL) {
        free(keys);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the node map of %zu ranks", n);
    }
    uint64_t mine = host_key();
    for (size_t p = 0; p < n; p++)
        keys[p] = mine;
    grain_status_t st = GRAIN_OK;
    if (n > 1) {
        grain_coll_t c = {.kind = GRAIN_COLL_ALLTOALL_U64, .buf = keys, .recv = keys + n, .count = 1};
        st = g->tops->collective(g->transport, &c);
    } else {
        keys[n] = mine;
    }
    uint64_t block = g->config.node_ranks;
    g->node_size = 0;
    for (size_t p = 0; st == GRAIN_OK && p < n; p++) {
        size_t first = p;
        for (size_t q = 0; q < p && first == p; q++)
            if (keys[n + q] == keys[n + p] && (block == 0 || q / block == p / block))
                first = q;
        g->node_of[p] = (int)first;
    }
    for (size_t p = 0; st == GRAIN_OK && p < n; p++)
        g->node_size += g->node_of[p] == g->node_of[g->my_pe];
    free(keys);
    return st;
}

int grain_node_peer(const grain_t *g, int pe)
{
    return pe != g->my_pe && g->node_of[pe] == g->node_of[g->my_pe];
}

grain_status_t grain_peer_map_all(grain_t *g, const void *handle, void *ptr, grain_peer_maps_t *m)
{
    size_t n = (size_t)g->n_pes, hb = GRAIN_PEER_HANDLE_BYTES;
    m->mapped = 0;
    m->all_mapped = 1;
    m->any_remote = 0;
    m->why[0] = '\0';
    for (size_t p = 0; p < n; p++)
        m->maps[p] = NULL;
    unsigned char *handles = calloc(2 * n, hb);
    size_t *sizes = calloc(2 * n, sizeof *sizes);
    if (handles == NULL || sizes == NULL) {
        free(handles);
        free(sizes);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for %zu ranks' peer handles", n);
    }
    /* grain_alltoallv packs what goes to (and comes from) each rank in
     * rank order: the handle once per rank of the node. */
    size_t at = 0;
    for (size_t p = 0; p < n; p++) {
        if (handle == NULL || !grain_node_peer(g, (int)p))
            continue;
        memcpy(handles + at, handle, hb);
        at += hb;
        sizes[p] = hb;
    }
    grain_status_t st = grain_alltoallv(g, handles, sizes, hb, handles + n * hb, sizes + n);
    int remote_here = 0, all_here = 1;
    at = n * hb;
    grain_log_quiet(1); /* a mapping that fails is a reason, not an error */
    for (size_t p = 0; st == GRAIN_OK && p < n; at += sizes[n + p], p++) {
        if (!grain_node_peer(g, (int)p))
            continue;
        grain_status_t mst = GRAIN_ERR_UNSUPPORTED;
        int remote = 0;
        if (sizes[n + p] != hb)
            grain_fail(mst, "rank %zu offers no memory to map", p);
        else
            mst = g->bops->map_peer(g->backend, handles + at, &m->maps[p], &remote);
        if (mst == GRAIN_OK) {
            m->mapped++;
            remote_here |= remote;
        } else {
            m->maps[p] = NULL;
            all_here = 0;
            if (m->why[0] == '\0')
                snprintf(m->why, sizeof m->why, "rank %zu: %s", p, grain_error_message(g));
        }
    }
    grain_log_quiet(0);
    free(handles);
    free(sizes);
    /* One reduction says both, and that every rank has mapped what it
     * could: only then may the offered memory be sealed. */
    int64_t v[2] = {all_here, !remote_here};
    if (st == GRAIN_OK)
        st = grain_allreduce(g, v, 2, GRAIN_INT64, GRAIN_MIN);
    if (st != GRAIN_OK) {
        grain_peer_unmap_all(g, m);
        return st;
    }
    m->all_mapped = v[0] != 0;
    m->any_remote = v[1] == 0;
    if (ptr != NULL && g->bops->seal_peer != NULL)
        g->bops->seal_peer(g->backend, ptr);
    return GRAIN_OK;
}

void grain_peer_unmap_all(grain_t *g, grain_peer_maps_t *m)
{
    for (int p = 0; m->maps != NULL && p < g->n_pes; p++) {
        if (m->maps[p] != NULL && p != g->my_pe)
            g->bops->unmap_peer(g->backend, m->maps[p]);
        m->maps[p] = NULL;
    }
    m->mapped = 0;
}

void grain_rank_ranges(const unsigned char *in, int n, char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (int r = 0; r < n && len < size; r++) {
        if (!in[r])
            continue;
        int last = r;
        while (last + 1 < n && in[last + 1])
            last++;
        int w = last == r ? snprintf(out + len, size - len, "%s%d", len ? "," : "", r)
                          : snprintf(out + len, size - len, "%s%d-%d", len ? "," : "", r, last);
        len += w > 0 ? (size_t)w : 0;
        r = last;
    }
    if (len == 0)
        snprintf(out, size, "none");
}
