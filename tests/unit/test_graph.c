/* SPDX-License-Identifier: BSD-3-Clause */
/* Graph input: the real test graphs, every malformed case the apps must
 * reject with a line number, Kronecker determinism, the binary cache and its
 * checks, and the callers' vertex limits. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "graphapps/common/graph.h"
#include "graphapps/common/graph_cache.h"
#include "graphapps/common/points.h"
#include "graphapps/common/reads.h"

static const char *data_dir; /* tests/data/graphs, from argv[1] */

/* A graph cache in `dir` with the default bound. */
#define CACHE_IN(where) (&(app_cache_t){.dir = (where), .max_bytes = APP_CACHE_MAX_DEFAULT})

static app_edges_t read_ok(const char *file)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", data_dir, file);
    app_edges_t e;
    app_error_t err = {{0}};
    if (app_read_graph(path, 0, NULL, NULL, &e, &err) != 0)
        fail_msg("%s", err.msg);
    return e;
}

static void read_fails(const char *file, const char *expect)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", data_dir, file);
    app_edges_t e;
    app_error_t err = {{0}};
    assert_int_equal(app_read_graph(path, 0, NULL, NULL, &e, &err), -1);
    if (strstr(err.msg, expect) == NULL)
        fail_msg("%s: '%s' does not say '%s'", file, err.msg, expect);
    assert_null(e.edges);
}

static void mtx_fails(const char *text, const char *expect)
{
    app_edges_t e;
    app_error_t err = {{0}};
    assert_int_equal(app_parse_mtx(text, strlen(text), "t.mtx", NULL, &e, &err), -1);
    if (strstr(err.msg, expect) == NULL)
        fail_msg("'%s' does not say '%s'", err.msg, expect);
}

static void list_fails(const char *text, const char *expect)
{
    app_edges_t e;
    app_error_t err = {{0}};
    assert_int_equal(app_parse_edge_list(text, strlen(text), "t.el", 0, NULL, &e, &err), -1);
    if (strstr(err.msg, expect) == NULL)
        fail_msg("'%s' does not say '%s'", err.msg, expect);
}

static int has_edge(const app_edges_t *e, uint64_t u, uint64_t v, double w)
{
    for (size_t i = 0; i < e->count; i++)
        if (e->edges[i].u == u && e->edges[i].v == v && e->edges[i].w == w)
            return 1;
    return 0;
}

static void test_real_graphs(void **state)
{
    (void)state;
    app_edges_t k = read_ok("karate.mtx"); /* symmetric pattern: 78 edges, both ways */
    assert_int_equal(k.n, 34);
    assert_int_equal(k.count, 156);
    assert_int_equal(k.base, 1);
    assert_true(k.undirected && !k.weighted);
    assert_true(has_edge(&k, 1, 0, 1) && has_edge(&k, 0, 1, 1)); /* the file's "2 1" */
    app_edges_free(&k);

    app_edges_t b = read_ok("test_BF.mtx"); /* general real: row -> column */
    assert_int_equal(b.n, 7);
    assert_int_equal(b.count, 12);
    assert_true(b.weighted && !b.undirected);
    assert_true(has_edge(&b, 3, 0, 4) && has_edge(&b, 1, 6, 8));
    assert_false(has_edge(&b, 0, 3, 4));
    app_edges_free(&b);

    app_edges_t w = read_ok("west0067.mtx");
    assert_int_equal(w.n, 67);
    assert_int_equal(w.count, 294);
    app_edges_free(&w);
}

static void test_malformed_files(void **state)
{
    (void)state;
    read_fails("mangled1.mtx", "mangled1.mtx:1: object 'mangled' is not 'matrix'");
    read_fails("mangled10.mtx", "mangled10.mtx:4: a graph's matrix is square; this one is 3 x 4");
    read_fails("mangled_format.mtx", ":1: a dense 'array' matrix is not a graph");
    read_fails("empty.mtx", "3 x 4");
    read_fails("no-such-file.mtx", "No such file");
}

static void test_malformed_mtx(void **state)
{
    (void)state;
    const char *hdr = "%%MatrixMarket matrix coordinate pattern general\n";
    char buf[512];
    mtx_fails("", "t.mtx: empty file");
    mtx_fails("%%MatrixMarket matrix coordinate\n", "t.mtx:1: expected the banner");
    mtx_fails("%%MatrixMarket matrix coordinate complex general\n1 1 0\n", ":1: field 'complex' is not supported");
    mtx_fails("%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", ":1: symmetry 'hermitian'");
    snprintf(buf, sizeof buf, "%s%% only comments\n", hdr);
    mtx_fails(buf, "t.mtx:2: the file ends before the size line");
    snprintf(buf, sizeof buf, "%s3 3\n", hdr);
    mtx_fails(buf, "t.mtx:2: expected the size line");
    snprintf(buf, sizeof buf, "%s3 3 3\n1 2\n2 3\n", hdr);
    mtx_fails(buf, "t.mtx:4: truncated: the size line gives 3 entries, the file ends after 2");
    snprintf(buf, sizeof buf, "%s3 3 1\n1 2\n2 3\n", hdr);
    mtx_fails(buf, "t.mtx:4: more entries than the 1");
    snprintf(buf, sizeof buf, "%s3 3 2\n1 2\n4 1\n", hdr);
    mtx_fails(buf, "t.mtx:4: vertex id out of range: entry (4, 1)");
    snprintf(buf, sizeof buf, "%s3 3 1\n0 1\n", hdr);
    mtx_fails(buf, "t.mtx:3: vertex id out of range: entry (0, 1)");
    snprintf(buf, sizeof buf, "%s3 3 1\n1 -2\n", hdr);
    mtx_fails(buf, "t.mtx:3: column '-2' is not a non-negative integer");
    snprintf(buf, sizeof buf, "%s3 3 1\n1 2 5\n", hdr);
    mtx_fails(buf, "t.mtx:3: an entry of a pattern matrix has 2 fields, found 3");
    mtx_fails("%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 2 2.5\n",
              "t.mtx:3: weight '2.5' is not an integer");
    mtx_fails("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 nan\n", "t.mtx:3: weight 'nan' is not finite");
    mtx_fails("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 1e999\n", "is not finite");
    mtx_fails("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 x\n", "weight 'x' is not a number");
    mtx_fails("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2\x01 1\n", "t.mtx:3: unexpected control character 0x01");
    static const char nul[] = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2\0 1\n";
    app_edges_t e;
    app_error_t err = {{0}};
    assert_int_equal(app_parse_mtx(nul, sizeof nul - 1, "t.mtx", NULL, &e, &err), -1);
    assert_non_null(strstr(err.msg, "t.mtx:3: unexpected control character 0x00"));
    mtx_fails("%%MatrixMarket matrix coordinate real general\n99999999999999999999 1 1\n", "is too large");
    mtx_fails("%%MatrixMarket matrix coordinate real general\n2000000000000 2000000000000 0\n",
              "more than grain's limit");
}

static void test_mtx_details(void **state)
{
    (void)state;
    /* CRLF line ends, comments between entries, a symmetric self loop once,
     * negative integer weights kept (sssp refuses them, not the parser). */
    const char *text = "%%MatrixMarket matrix coordinate integer symmetric\r\n% c\r\n3 3 3\r\n2 1 -4\r\n"
                       "% between\r\n3 3 7\r\n\r\n3 1 2\r\n";
    app_edges_t e;
    app_error_t err = {{0}};
    assert_int_equal(app_parse_mtx(text, strlen(text), "t.mtx", NULL, &e, &err), 0);
    assert_int_equal(e.count, 5);
    assert_true(has_edge(&e, 1, 0, -4) && has_edge(&e, 0, 1, -4) && has_edge(&e, 2, 2, 7));
    assert_true(has_edge(&e, 2, 0, 2) && has_edge(&e, 0, 2, 2));
    app_edges_free(&e);

    const char *none = "%%MatrixMarket matrix coordinate pattern general\n3 3 0\n";
    assert_int_equal(app_parse_mtx(none, strlen(none), "t.mtx", NULL, &e, &err), 0);
    assert_int_equal(app_check_not_empty(&e, "t.mtx", &err), -1);
    assert_non_null(strstr(err.msg, "t.mtx: the graph is empty (3 vertices, 0 edges)"));
    app_edges_free(&e);
}

static void test_edge_lists(void **state)
{
    (void)state;
    const char *text = "# comment\n0 5\n  5 2\n\n% other comment\n2 2\n";
    app_edges_t e;
    app_error_t err = {{0}};
    assert_int_equal(app_parse_edge_list(text, strlen(text), "t.el", 1, NULL, &e, &err), 0);
    assert_int_equal(e.n, 6);
    assert_int_equal(e.count, 5); /* two edges both ways, the self loop once */
    assert_true(has_edge(&e, 5, 0, 1) && has_edge(&e, 2, 5, 1) && has_edge(&e, 2, 2, 1));
    assert_false(e.weighted);
    app_edges_free(&e);

    const char *weighted = "1 2 0.5\n2 3 -1.25\n";
    assert_int_equal(app_parse_edge_list(weighted, strlen(weighted), "t.el", 0, NULL, &e, &err), 0);
    assert_true(e.weighted && has_edge(&e, 2, 3, -1.25) && e.count == 2 && e.n == 4);
    app_edges_free(&e);

    list_fails("1 2\n3\n", "t.el:2: expected 'u v' or 'u v weight', found 1 fields");
    list_fails("1 2\n3 4 5\n", "t.el:2: 3 fields where the lines before have 2");
    list_fails("1 x\n", "t.el:1: target vertex 'x' is not a non-negative integer");
    list_fails("-1 2\n", "t.el:1: source vertex '-1'");
    list_fails("1 2 3 4\n", "found 4 fields");
    list_fails("1099511627776 0\n", "t.el:1: vertex id 1099511627776: 1099511627777 vertices are more than grain's limit of 2^40");
    list_fails("1 2 inf\n", "weight 'inf' is not finite");
}

static void test_kronecker(void **state)
{
    (void)state;
    app_edges_t a, b, c;
    app_error_t err = {{0}};
    assert_int_equal(app_kronecker(10, 8, 42, NULL, &a, &err), 0);
    assert_int_equal(app_kronecker(10, 8, 42, NULL, &b, &err), 0);
    assert_int_equal(app_kronecker(10, 8, 43, NULL, &c, &err), 0);
    assert_int_equal(a.n, 1024);
    assert_int_equal(a.count, b.count);
    assert_memory_equal(a.edges, b.edges, a.count * sizeof *a.edges);
    assert_false(a.count == c.count && memcmp(a.edges, c.edges, a.count * sizeof *a.edges) == 0);
    size_t loops = 0;
    uint64_t degree0 = 0, low_ids = 0;
    for (size_t i = 0; i < a.count; i++) {
        assert_true(a.edges[i].u < a.n && a.edges[i].v < a.n);
        assert_true(a.edges[i].w >= 1 && a.edges[i].w <= 255 && a.edges[i].w == (double)(uint64_t)a.edges[i].w);
        loops += a.edges[i].u == a.edges[i].v;
        degree0 += a.edges[i].u == 0;
        low_ids += a.edges[i].u < 16;
    }
    assert_int_equal(a.count + loops, 2 * 8 * 1024); /* 8192 undirected edges, loops listed once */
    /* Scrambled: R-MAT's hubs (ids 0..15 before scrambling) are not the low ids. */
    assert_true(low_ids < a.count / 8);
    (void)degree0;
    app_edges_free(&a);
    app_edges_free(&b);
    app_edges_free(&c);

    assert_int_equal(app_kronecker(0, 16, 1, NULL, &a, &err), -1);
    assert_non_null(strstr(err.msg, "the scale must be 1 to 36"));

    /* Drawn by several threads wherever there are several cores, the list
     * is the one the single-threaded generator gave (its FNV-1a hash). */
    assert_int_equal(app_kronecker(16, 16, 7, NULL, &a, &err), 0);
    uint64_t hash = 1469598103934665603ull;
    for (size_t i = 0; i < a.count; i++) {
        uint64_t words[3] = {a.edges[i].u, a.edges[i].v, (uint64_t)a.edges[i].w};
        for (int k = 0; k < 3; k++)
            hash = (hash ^ words[k]) * 1099511628211ull;
    }
    assert_int_equal(a.count, 2096663);
    assert_int_equal(hash, 15896974241523133820ull);
    app_edges_free(&a);
}

static void points_fail(const char *text, const char *expect)
{
    app_points_t p;
    app_error_t err = {{0}};
    assert_int_equal(app_parse_points(text, strlen(text), "p.txt", &p, &err), -1);
    if (strstr(err.msg, expect) == NULL)
        fail_msg("'%s' does not say '%s'", err.msg, expect);
    assert_null(p.x);
}

static void test_points(void **state)
{
    (void)state;
    const char *text = "# x y z\n1, 2, 3\n\n-4.5e1\t0 ,7\r\n";
    app_points_t p;
    app_error_t err = {{0}};
    assert_int_equal(app_parse_points(text, strlen(text), "p.txt", &p, &err), 0);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.dims, 3);
    assert_true(p.x[0] == 1 && p.x[3] == -45 && p.x[5] == 7);
    app_points_free(&p);
    points_fail("1 2\n3\n", "p.txt:2: 1 coordinates where the points before have 2");
    points_fail("1 2\n3 x\n", "p.txt:2: 'x' is not a number");
    points_fail("1 nan\n", "p.txt:1: 'nan' is not finite");
    points_fail("# nothing\n", "p.txt: no points");

    app_points_t a, b;
    assert_int_equal(app_blobs(1000, 3, 4, 9, &a, &err), 0);
    assert_int_equal(app_blobs(1000, 3, 4, 9, &b, &err), 0);
    assert_memory_equal(a.x, b.x, 3000 * sizeof *a.x);
    app_points_free(&a);
    app_points_free(&b);
    assert_int_equal(app_blobs(3, 2, 4, 1, &a, &err), -1);
    assert_non_null(strstr(err.msg, "need points >= centres >= 1"));
}

static void reads_fail(const char *text, const char *expect)
{
    app_reads_t r;
    app_error_t err = {{0}};
    assert_int_equal(app_parse_reads(text, strlen(text), "r.fq", &r, &err), -1);
    if (strstr(err.msg, expect) == NULL)
        fail_msg("'%s' does not say '%s'", err.msg, expect);
    assert_null(r.bases);
}

static void test_reads(void **state)
{
    (void)state;
    const char *fasta = ">a\nACGT\nNNac\n;comment\n>b\r\n\r\n>c\nTT\n";
    app_reads_t r;
    app_error_t err = {{0}};
    assert_int_equal(app_parse_reads(fasta, strlen(fasta), "r.fa", &r, &err), 0);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.offset[1], 8); /* lines of one read join */
    assert_int_equal(r.offset[2], 8); /* an empty read */
    assert_memory_equal(r.bases, "ACGTNNacTT", 10);
    app_reads_free(&r);
    const char *fastq = "@x\nACG\n+x\n!!!\n\n@y\nT\n+\n#\n";
    assert_int_equal(app_parse_reads(fastq, strlen(fastq), "r.fq", &r, &err), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.offset[2], 4);
    app_reads_free(&r);
    reads_fail("ACGT\n", "r.fq:1: expected '>' (FASTA) or '@' (FASTQ)");
    reads_fail("@x\nACG\n+\n!!\n", "r.fq:4: the quality line is not as long as the sequence");
    reads_fail("@x\nACG\n-\n!!!\n", "r.fq:3: expected the '+' line");
    reads_fail("@x\nACG\n", "r.fq:2: truncated: the file ends inside a FASTQ record");
    reads_fail(">x\nAC1T\n", "r.fq:2: a sequence line holds a character that is not a letter");
    reads_fail("", "r.fq: no reads");
}

static void write_text(const char *path, unsigned lines, unsigned shift)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (unsigned i = 0; i < lines; i++)
        fprintf(f, "%u %u %u.5\n", i, (i * 7 + shift) % lines, i % 13);
    assert_int_equal(fclose(f), 0);
}

static void test_cache(void **state)
{
    (void)state;
    char dir[] = "/tmp/grain-graph-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char src[4096], cache[4096];
    snprintf(src, sizeof src, "%s/big.el", dir);
    snprintf(cache, sizeof cache, "%s/cache/sub", dir);
    write_text(src, 120000, 1); /* > 1 MiB: cached */

    app_edges_t parsed, cached, fresh;
    app_error_t err = {{0}};
    assert_int_equal(app_read_graph(src, 0, NULL, NULL, &parsed, &err), 0);
    assert_int_equal(app_read_graph(src, 0, CACHE_IN(cache), NULL, &cached, &err), 0); /* parses, writes */
    assert_int_equal(app_read_graph(src, 0, CACHE_IN(cache), NULL, &fresh, &err), 0);  /* loads */
    assert_int_equal(parsed.count, 120000);
    assert_int_equal(fresh.count, parsed.count);
    assert_int_equal(fresh.n, parsed.n);
    assert_true(fresh.weighted);
    assert_memory_equal(fresh.edges, parsed.edges, parsed.count * sizeof *parsed.edges);
    app_edges_free(&cached);
    app_edges_free(&fresh);

    /* A cache for other options is not used. */
    assert_int_equal(app_read_graph(src, 1, CACHE_IN(cache), NULL, &fresh, &err), 0);
    assert_int_equal(fresh.count, 2 * parsed.count); /* 7i + 1 = i (mod an even count) has no solution */
    app_edges_free(&fresh);

    /* A changed input is parsed again. */
    sleep(1);
    write_text(src, 110000, 3);
    assert_int_equal(app_read_graph(src, 0, CACHE_IN(cache), NULL, &fresh, &err), 0);
    assert_int_equal(fresh.count, 110000);
    assert_true(fresh.edges[5].v == (5 * 7 + 3) % 110000);
    app_edges_free(&fresh);
    app_edges_free(&parsed);

    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* The cache's files stay within its bound: the least recently used go
 * first, and a graph larger than the bound is not cached. */
static void test_cache_bound(void **state)
{
    (void)state;
    char dir[] = "/tmp/grain-graph-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char a[4096], b[4096], c[4096], cache[4096];
    snprintf(a, sizeof a, "%s/a.el", dir);
    snprintf(b, sizeof b, "%s/b.el", dir);
    snprintf(c, sizeof c, "%s/c.el", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    write_text(a, 100000, 1); /* each > 1 MiB of text, 2.4 MB cached */
    write_text(b, 100000, 2);
    write_text(c, 150000, 3); /* 3.6 MB cached */
    app_cache_t room = {.dir = cache, .max_bytes = 6u << 20}; /* a and b, or b and c, not all three */
    app_edges_t e;
    app_error_t err = {{0}};
    assert_int_equal(app_read_graph(a, 0, &room, NULL, &e, &err), 0);
    app_edges_free(&e);
    assert_true(strstr(room.stored, "/a.el-") != NULL);
    char a_cache[4096];
    snprintf(a_cache, sizeof a_cache, "%s", room.stored);
    uint64_t one = room.stored_bytes;
    assert_int_equal(app_read_graph(b, 0, &room, NULL, &e, &err), 0);
    app_edges_free(&e);
    assert_int_equal(room.stored_bytes, one);
    assert_int_equal(access(a_cache, F_OK), 0); /* both fit */
    char b_cache[4096];
    snprintf(b_cache, sizeof b_cache, "%s", room.stored);
    /* c needs room: b, the least recently used (a was loaded after it),
     * goes, and a stays. */
    sleep(1);
    assert_int_equal(app_read_graph(a, 0, &room, NULL, &e, &err), 0); /* a load writes nothing */
    app_edges_free(&e);
    assert_string_equal(room.stored, "");
    assert_int_equal(app_read_graph(c, 0, &room, NULL, &e, &err), 0);
    app_edges_free(&e);
    assert_true(strstr(room.stored, "/c.el-") != NULL);
    assert_int_equal(access(b_cache, F_OK), -1);
    assert_int_equal(access(a_cache, F_OK), 0);
    /* A graph over the whole bound is read and not cached. */
    app_cache_t tiny = {.dir = cache, .max_bytes = 1u << 20};
    write_text(b, 90000, 4);
    assert_int_equal(app_read_graph(b, 0, &tiny, NULL, &e, &err), 0);
    assert_int_equal(e.count, 90000);
    app_edges_free(&e);
    assert_string_equal(tiny.stored, "");
    assert_int_equal(access(a_cache, F_OK), 0); /* nothing removed for it */
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Every reader refuses a graph over the caller's limit as soon as its size
 * shows, with the caller's reason. */
static void test_limits(void **state)
{
    (void)state;
    app_limit_t limit = {1000, "room for 1000"};
    app_edges_t e;
    app_error_t err = {{0}};
    const char *mtx = "%%MatrixMarket matrix coordinate pattern general\n300000000 300000000 2\n1 2\n3 4\n";
    assert_int_equal(app_parse_mtx(mtx, strlen(mtx), "t.mtx", &limit, &e, &err), -1);
    assert_string_equal(err.msg, "t.mtx:2: 300000000 vertices are too many: room for 1000");
    const char *list = "0 1\n999 3\n1000 2\n";
    assert_int_equal(app_parse_edge_list(list, strlen(list), "t.el", 0, &limit, &e, &err), -1);
    assert_string_equal(err.msg, "t.el:3: vertex id 1000: 1001 vertices are too many: room for 1000");
    assert_int_equal(app_kronecker(10, 4, 1, &limit, &e, &err), -1);
    assert_string_equal(err.msg, "--kronecker 10,4: 1024 vertices are too many: room for 1000");
    assert_null(e.edges);
    /* At the limit itself: read. */
    const char *fits = "%%MatrixMarket matrix coordinate pattern general\n1000 1000 1\n1000 1\n";
    assert_int_equal(app_parse_mtx(fits, strlen(fits), "t.mtx", &limit, &e, &err), 0);
    app_edges_free(&e);
}

static void write_text(const char *path, unsigned lines, unsigned shift);

/* The one cache file in `dir`. */
static void find_cache(const char *dir, char *out, size_t size)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls '%s'/*.gcache", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(out, (int)size, p));
    out[strcspn(out, "\n")] = '\0';
    pclose(p);
}

/* Overwrites `len` bytes of `path` at `at`; a negative `at` truncates the
 * file by that much instead. */
static void corrupt(const char *path, long at, const void *bytes, size_t len)
{
    if (at < 0) {
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(truncate(path, st.st_size + at), 0);
        return;
    }
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, at, SEEK_SET), 0);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* A cache damaged on disk in any field, at the same size or not, is
 * reported and replaced by a parse that gives the input's graph. */
static void test_cache_damage(void **state)
{
    (void)state;
    char dir[] = "/tmp/grain-graph-damage-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char src[4096], cpath[4096];
    snprintf(src, sizeof src, "%s/big.el", dir);
    write_text(src, 120000, 1);
    app_edges_t parsed, e;
    app_error_t err = {{0}};
    assert_int_equal(app_read_graph(src, 0, CACHE_IN(dir), NULL, &parsed, &err), 0); /* writes the cache */
    find_cache(dir, cpath, sizeof cpath);
    const long edges = (long)sizeof(app_cache_header_t);
    const uint64_t huge = 1ull << 39, two = 2;
    const double nan = NAN;
    struct {
        long at;
        const void *bytes;
        size_t len;
    } damage[] = {
        {edges + 7 * (long)sizeof(app_edge_t) + 8, &huge, 8},               /* an id beyond n */
        {edges + 5 * (long)sizeof(app_edge_t), &two, 8},                   /* an id below n, same size */
        {edges + 9 * (long)sizeof(app_edge_t) + 16, &nan, 8},              /* a weight */
        {(long)offsetof(app_cache_header_t, weighted), &two, 8},           /* a flag */
        {(long)offsetof(app_cache_header_t, n), &huge, 8},                 /* n */
        {(long)offsetof(app_cache_header_t, count), &two, 8},              /* the count */
        {-5, NULL, 0},                                                     /* a torn write */
        {-(long)sizeof(app_edge_t), NULL, 0},                              /* an edge short */
    };
    for (size_t d = 0; d < sizeof damage / sizeof damage[0]; d++) {
        corrupt(cpath, damage[d].at, damage[d].bytes, damage[d].len);
        assert_int_equal(app_read_graph(src, 0, CACHE_IN(dir), NULL, &e, &err), 0); /* reparses, rewrites */
        assert_int_equal(e.count, parsed.count);
        assert_int_equal(e.n, parsed.n);
        assert_memory_equal(e.edges, parsed.edges, parsed.count * sizeof *parsed.edges);
        app_edges_free(&e);
    }
    /* The rewritten cache is whole again, and a limit applies to it. */
    app_limit_t limit = {100, "room for 100"};
    assert_int_equal(app_read_graph(src, 0, CACHE_IN(dir), &limit, &e, &err), -1);
    assert_non_null(strstr(err.msg, "120000 vertices are too many: room for 100"));
    app_edges_free(&parsed);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(int argc, char **argv)
{
    data_dir = argc > 1 ? argv[1] : "tests/data/graphs";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_graphs), cmocka_unit_test(test_malformed_files),
        cmocka_unit_test(test_malformed_mtx), cmocka_unit_test(test_mtx_details),
        cmocka_unit_test(test_edge_lists), cmocka_unit_test(test_kronecker),
        cmocka_unit_test(test_cache), cmocka_unit_test(test_cache_bound),
        cmocka_unit_test(test_cache_damage), cmocka_unit_test(test_limits),
        cmocka_unit_test(test_points), cmocka_unit_test(test_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
