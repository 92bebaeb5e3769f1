/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Graph files through a binary cache.  Parsing text runs at tens of MB/s;
 * the cache is the edge array as it lies in memory, so a large input loads
 * at the speed of the disk on every later run.  Caches live in a directory
 * of their own, never beside the inputs (which may be read-only or shared),
 * named by the input's absolute path, and used only while their header
 * matches the input's size and modification time and the options it was
 * parsed with, and their content passes app_cache_check.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph.h"
#include "graph_cache.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int is_mtx(const char *path, const char *data, size_t len)
{
    static const char banner[] = "%%MatrixMarket";
    return ends_with(path, ".mtx") || (len >= sizeof banner - 1 && memcmp(data, banner, sizeof banner - 1) == 0);
}

/* Inputs below this parse faster than a cache is written. */
#define CACHE_MIN_BYTES (1u << 20)

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* DIR/<file name>-<hash of the absolute path>.gcache, creating DIR and its
 * parents; NULL when that fails. */
static char *cache_path(const char *dir, const char *path)
{
    char *abs = realpath(path, NULL);
    char *out = NULL;
    char made[4096];
    if (abs == NULL || strlen(dir) >= sizeof made)
        goto done;
    strcpy(made, dir);
    for (char *p = made + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(made, 0777) != 0 && errno != EEXIST)
                goto done;
            *p = c;
            if (c == '\0')
                break;
        }
    }
    const char *base = strrchr(abs, '/') ? strrchr(abs, '/') + 1 : abs;
    size_t n = strlen(dir) + strlen(base) + 40;
    if ((out = malloc(n)) != NULL)
        snprintf(out, n, "%s/%s-%016llx.gcache", dir, base, (unsigned long long)fnv1a(abs));
done:
    free(abs);
    return out;
}

static app_cache_header_t header_for(const struct stat *st, int undirected)
{
    return (app_cache_header_t){APP_CACHE_MAGIC,
                                (uint64_t)st->st_size,
                                (uint64_t)st->st_mtim.tv_sec * 1000000000ull + (uint64_t)st->st_mtim.tv_nsec,
                                (uint64_t)undirected,
                                0, 0, 0, 0, 0, 0};
}

/* 1: the cache matched and was read.  0: there is none to use (none, one
 * for another input or options, or one that fails its checks, said on
 * stderr).  -1: it matches, and its graph is over `limit` (in err). */
static int cache_load(const char *cpath, const char *path, app_cache_header_t want, const app_limit_t *limit,
                      app_edges_t *e, app_error_t *err)
{
    FILE *f = fopen(cpath, "rb");
    if (f == NULL)
        return 0;
    app_cache_header_t h;
    struct stat st;
    int ok = fread(&h, sizeof h, 1, f) == 1 && h.magic == want.magic && h.source_size == want.source_size &&
             h.source_mtime_ns == want.source_mtime_ns && h.undirected_option == want.undirected_option &&
             fstat(fileno(f), &st) == 0 && (uint64_t)st.st_size >= sizeof h;
    if (ok && app_limit_check(limit, h.n, path, err) != 0) {
        fclose(f);
        return -1;
    }
    /* What the file holds decides the allocation, never its header. */
    uint64_t count = ok ? ((uint64_t)st.st_size - sizeof h) / sizeof(app_edge_t) : 0;
    app_edge_t *edges = ok ? malloc(count ? count * sizeof *edges : 1) : NULL;
    ok = edges != NULL && fread(edges, sizeof *edges, count, f) == count;
    fclose(f);
    app_error_t why = {{0}};
    if (ok && (uint64_t)st.st_size != sizeof h + count * sizeof *edges)
        snprintf(why.msg, sizeof why.msg, "its size is not a whole number of edges");
    else if (ok)
        app_cache_check(&h, edges, count, &why);
    if (why.msg[0] != '\0') {
        fprintf(stderr, "warning: the graph cache %s fails its checks (%s): reading %s again\n", cpath, why.msg,
                path);
        ok = 0;
    }
    if (!ok) {
        free(edges);
        return 0;
    }
    utimensat(AT_FDCWD, cpath, NULL, 0); /* recently used: the last to make room */
    *e = (app_edges_t){h.n, h.base, (int)h.weighted, (int)h.undirected, edges, count, count};
    return 1;
}

typedef struct cache_file {
    char name[256];
    uint64_t bytes;
    struct timespec used;
} cache_file_t;

static int older_first(const void *a, const void *b)
{
    const struct timespec *x = &((const cache_file_t *)a)->used, *y = &((const cache_file_t *)b)->used;
    return x->tv_sec != y->tv_sec ? (x->tv_sec < y->tv_sec ? -1 : 1)
                                  : (x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec);
}

/* Removes the least recently used cache files of `dir` (and `replaced`, the
 * one about to be rewritten) until `need` more bytes fit within `max`;
 * -1 when they cannot. */
static int cache_make_room(const char *dir, const char *replaced, uint64_t need, uint64_t max)
{
    if (need > max)
        return -1;
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    cache_file_t *files = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    char path[4096];
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        size_t len = strlen(de->d_name);
        struct stat st;
        if (len < 7 || len >= sizeof files->name || strcmp(de->d_name + len - 7, ".gcache") != 0 ||
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path || stat(path, &st) != 0 ||
            strcmp(path, replaced) == 0)
            continue;
        if (n == cap) {
            cache_file_t *grown = realloc(files, (cap = cap ? 2 * cap : 16) * sizeof *files);
            if (grown == NULL)
                break;
            files = grown;
        }
        snprintf(files[n].name, sizeof files[n].name, "%s", de->d_name);
        files[n].bytes = (uint64_t)st.st_size;
        files[n++].used = st.st_mtim;
        total += (uint64_t)st.st_size;
    }
    closedir(d);
    if (n > 1)
        qsort(files, n, sizeof *files, older_first);
    for (size_t i = 0; i < n && total + need > max; i++)
        if (snprintf(path, sizeof path, "%s/%s", dir, files[i].name) < (int)sizeof path && remove(path) == 0)
            total -= files[i].bytes;
    free(files);
    return total + need <= max ? 0 : -1;
}

/* Best effort: a read-only directory, a full disk or a graph over the
 * cache's bound leaves no cache. */
static void cache_store(app_cache_t *cache, const char *cpath, app_cache_header_t h, const app_edges_t *e)
{
    uint64_t bytes = sizeof h + e->count * sizeof *e->edges;
    char tmp[4096];
    if (cache_make_room(cache->dir, cpath, bytes, cache->max_bytes) != 0 ||
        snprintf(tmp, sizeof tmp, "%s.%ld.tmp", cpath, (long)getpid()) >= (int)sizeof tmp)
        return;
    FILE *f = fopen(tmp, "wb");
    if (f == NULL)
        return;
    h.n = e->n;
    h.base = e->base;
    h.weighted = (uint64_t)e->weighted;
    h.undirected = (uint64_t)e->undirected;
    h.count = e->count;
    h.checksum = app_cache_checksum(&h, e->edges, e->count);
    int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(e->edges, sizeof *e->edges, e->count, f) == e->count;
    ok = fclose(f) == 0 && ok;
    /* Ranks that parse the same file at once each rename a whole file. */
    if (!ok || rename(tmp, cpath) != 0) {
        remove(tmp);
        return;
    }
    snprintf(cache->stored, sizeof cache->stored, "%s", cpath);
    cache->stored_bytes = bytes;
}

char *app_read_file(const char *path, size_t *len, app_error_t *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err->msg, sizeof err->msg, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *data = malloc(cap);
    while (data != NULL) {
        n += fread(data + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *grown = realloc(data, cap *= 2);
        if (grown == NULL)
            free(data);
        data = grown;
    }
    int failed = ferror(f);
    fclose(f);
    if (data == NULL || failed) {
        snprintf(err->msg, sizeof err->msg, "%s: %s", path, data == NULL ? "no memory to read it" : "read error");
        free(data);
        return NULL;
    }
    *len = n;
    return data;
}

int app_read_graph(const char *path, int undirected, app_cache_t *cache, const app_limit_t *limit,
                   app_edges_t *e, app_error_t *err)
{
    *e = (app_edges_t){0};
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err->msg, sizeof err->msg, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err->msg, sizeof err->msg, "%s: not a regular file", path);
        return -1;
    }
    app_cache_header_t want = header_for(&st, undirected);
    if (cache != NULL) {
        cache->stored[0] = '\0';
        cache->stored_bytes = 0;
    }
    int use_cache = cache != NULL && cache->dir != NULL && st.st_size >= CACHE_MIN_BYTES;
    char *cpath = use_cache ? cache_path(cache->dir, path) : NULL;
    int cached = cpath != NULL ? cache_load(cpath, path, want, limit, e, err) : 0;
    if (cached != 0) {
        free(cpath);
        return cached > 0 ? 0 : -1;
    }
    size_t len = 0;
    char *data = app_read_file(path, &len, err);
    int rc = -1;
    if (data != NULL)
        rc = is_mtx(path, data, len) ? app_parse_mtx(data, len, path, limit, e, err)
                                     : app_parse_edge_list(data, len, path, undirected, limit, e, err);
    free(data);
    if (rc == 0 && cpath != NULL)
        cache_store(cache, cpath, want, e);
    free(cpath);
    return rc;
}
