/* SPDX-License-Identifier: BSD-3-Clause */
/* The verbs transport's protocol without a device: credits, ring slots and
 * their wraparound, the send pool, the bootstrap and heap records, the
 * RoCE GID choice and completion errors, each misuse refused with a sentence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "transports/verbs_proto.h"

static void credits_run_out_and_come_back(void **state)
{
    (void)state;
    grain_verbs_credits_t c;
    grain_verbs_credits_init(&c, 3);
    uint32_t slot;
    for (uint32_t i = 0; i < 3; i++) {
        assert_true(grain_verbs_credits_take(&c, &slot));
        assert_int_equal(slot, i);
    }
    assert_int_equal(grain_verbs_credits_available(&c), 0);
    assert_false(grain_verbs_credits_take(&c, &slot));
    /* Two consumed: two slots, continuing round the ring. */
    assert_int_equal(grain_verbs_credits_returned(&c, 2, 1), GRAIN_OK);
    assert_int_equal(grain_verbs_credits_available(&c), 2);
    assert_true(grain_verbs_credits_take(&c, &slot));
    assert_int_equal(slot, 0);
    assert_true(grain_verbs_credits_take(&c, &slot));
    assert_int_equal(slot, 1);
    assert_false(grain_verbs_credits_take(&c, &slot));
    /* The same count again (a return written twice) frees nothing more. */
    assert_int_equal(grain_verbs_credits_returned(&c, 2, 1), GRAIN_OK);
    assert_int_equal(grain_verbs_credits_available(&c), 0);
}

static void credits_refuse_a_broken_peer(void **state)
{
    (void)state;
    grain_verbs_credits_t c;
    grain_verbs_credits_init(&c, 4);
    uint32_t slot;
    assert_true(grain_verbs_credits_take(&c, &slot));
    assert_true(grain_verbs_credits_take(&c, &slot));
    assert_int_equal(grain_verbs_credits_returned(&c, 3, 5), GRAIN_ERR_TRANSPORT);
    assert_non_null(strstr(grain_error_message(NULL), "rank 5 returned credits for 3 slots"));
    assert_int_equal(grain_verbs_credits_returned(&c, 2, 5), GRAIN_OK);
    assert_int_equal(grain_verbs_credits_returned(&c, 1, 5), GRAIN_ERR_TRANSPORT);
    assert_int_equal(grain_verbs_credits_available(&c), 4);
}

/* Counters near 2^64: slots and credits still follow each other. */
static void counters_wrap(void **state)
{
    (void)state;
    grain_verbs_credits_t c;
    grain_verbs_ring_t r;
    grain_verbs_credits_init(&c, 5);
    grain_verbs_ring_init(&r, 5, 64);
    c.sent = c.consumed = r.arrived = r.consumed = r.returned = UINT64_MAX - 7;
    for (int i = 0; i < 40; i++) {
        uint32_t sent_slot, arrived_slot;
        assert_true(grain_verbs_credits_take(&c, &sent_slot));
        assert_int_equal(grain_verbs_ring_arrive(&r, 64, 0, &arrived_slot), GRAIN_OK);
        assert_int_equal(sent_slot, arrived_slot);
        assert_true(arrived_slot < 5);
        grain_verbs_ring_consume(&r);
        if (grain_verbs_ring_should_return(&r, 0))
            assert_int_equal(grain_verbs_credits_returned(&c, grain_verbs_ring_return(&r), 0), GRAIN_OK);
        assert_true(grain_verbs_credits_available(&c) >= 1);
    }
    assert_int_equal(grain_verbs_ring_offset(&r, 4), 256);
}

static void ring_returns_half_or_when_idle(void **state)
{
    (void)state;
    grain_verbs_ring_t r;
    grain_verbs_ring_init(&r, 8, 128);
    uint32_t slot;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(grain_verbs_ring_arrive(&r, 100, 2, &slot), GRAIN_OK);
        grain_verbs_ring_consume(&r);
    }
    assert_false(grain_verbs_ring_should_return(&r, 0));
    assert_true(grain_verbs_ring_should_return(&r, 1));
    assert_int_equal(grain_verbs_ring_arrive(&r, 128, 2, &slot), GRAIN_OK);
    grain_verbs_ring_consume(&r);
    assert_true(grain_verbs_ring_should_return(&r, 0));
    assert_int_equal(grain_verbs_ring_return(&r), 4);
    assert_false(grain_verbs_ring_should_return(&r, 1));
    /* Consuming what never arrived changes nothing. */
    grain_verbs_ring_consume(&r);
    assert_int_equal(r.consumed, 4);
}

static void ring_refuses_overrun_and_long_writes(void **state)
{
    (void)state;
    grain_verbs_ring_t r;
    grain_verbs_ring_init(&r, 2, 64);
    uint32_t slot;
    assert_int_equal(grain_verbs_ring_arrive(&r, 65, 3, &slot), GRAIN_ERR_TRANSPORT);
    assert_non_null(strstr(grain_error_message(NULL), "rank 3 wrote 65 bytes into a 64-byte receive slot"));
    assert_int_equal(grain_verbs_ring_arrive(&r, 1, 3, &slot), GRAIN_OK);
    assert_int_equal(grain_verbs_ring_arrive(&r, 1, 3, &slot), GRAIN_OK);
    assert_int_equal(grain_verbs_ring_arrive(&r, 1, 3, &slot), GRAIN_ERR_TRANSPORT);
    assert_non_null(strstr(grain_error_message(NULL), "full receive ring"));
    grain_verbs_ring_consume(&r);
    assert_int_equal(grain_verbs_ring_arrive(&r, 1, 3, &slot), GRAIN_OK);
    assert_int_equal(slot, 0);
}

static void pool_takes_and_gives(void **state)
{
    (void)state;
    static uint8_t memory[4 * 256], elsewhere[256];
    grain_verbs_pool_t p;
    assert_int_equal(grain_verbs_pool_init(&p, memory, 256, 4), GRAIN_OK);
    void *b[4];
    for (int i = 0; i < 4; i++) {
        b[i] = grain_verbs_pool_take(&p);
        assert_ptr_equal(b[i], memory + 256 * i);
    }
    assert_null(grain_verbs_pool_take(&p));
    assert_int_equal(grain_verbs_pool_give(&p, b[2]), GRAIN_OK);
    assert_ptr_equal(grain_verbs_pool_take(&p), b[2]);
    assert_int_equal(grain_verbs_pool_give(&p, b[1]), GRAIN_OK);
    assert_int_equal(grain_verbs_pool_give(&p, b[1]), GRAIN_ERR_INVALID);
    assert_non_null(strstr(grain_error_message(NULL), "given back twice"));
    assert_int_equal(grain_verbs_pool_give(&p, memory + 10), GRAIN_ERR_INVALID);
    assert_int_equal(grain_verbs_pool_give(&p, memory + 4 * 256), GRAIN_ERR_INVALID);
    assert_int_equal(grain_verbs_pool_give(&p, elsewhere), GRAIN_ERR_INVALID);
    assert_non_null(strstr(grain_error_message(NULL), "not a buffer of the send pool"));
    grain_verbs_pool_destroy(&p);
}

static grain_verbs_peer_info_t sample_info(void)
{
    grain_verbs_peer_info_t in = {.qp_num = 0xabcdef, .psn = 0x123456, .lid = 0xbeef, .port = 2,
                                  .ring_addr = 0x7f0012345678ull, .ring_rkey = 0xdeadbeef,
                                  .credit_addr = 0x7f00abcdef00ull, .credit_rkey = 0x01020304,
                                  .slots = 16, .slot_bytes = 65536};
    for (int i = 0; i < 16; i++)
        in.gid[i] = (uint8_t)(0xf0 + i);
    return in;
}

static void info_round_trips_little_endian(void **state)
{
    (void)state;
    grain_verbs_peer_info_t in = sample_info(), out;
    uint8_t packed[GRAIN_VERBS_INFO_BYTES];
    grain_verbs_info_pack(&in, packed);
    /* Fixed bytes, whatever the host's order: the magic, then the QP number. */
    assert_memory_equal(packed, "GRVB", 4);
    assert_int_equal(packed[8], 0xef);
    assert_int_equal(packed[10], 0xab);
    assert_int_equal(grain_verbs_info_unpack(packed, sizeof packed, 1, &out), GRAIN_OK);
    assert_int_equal(out.qp_num, in.qp_num);
    assert_int_equal(out.psn, in.psn);
    assert_int_equal(out.lid, in.lid);
    assert_int_equal(out.port, in.port);
    assert_memory_equal(out.gid, in.gid, sizeof in.gid);
    assert_int_equal(out.ring_addr, in.ring_addr);
    assert_int_equal(out.ring_rkey, in.ring_rkey);
    assert_int_equal(out.credit_addr, in.credit_addr);
    assert_int_equal(out.credit_rkey, in.credit_rkey);
    assert_int_equal(out.slots, in.slots);
    assert_int_equal(out.slot_bytes, in.slot_bytes);
}

static void info_refuses_bad_records(void **state)
{
    (void)state;
    grain_verbs_peer_info_t in = sample_info(), out;
    uint8_t packed[GRAIN_VERBS_INFO_BYTES], bad[GRAIN_VERBS_INFO_BYTES];
    grain_verbs_info_pack(&in, packed);
    assert_int_equal(grain_verbs_info_unpack(packed, sizeof packed - 1, 7, &out), GRAIN_ERR_TRANSPORT);
    assert_non_null(strstr(grain_error_message(NULL), "from rank 7 (71 bytes) is wrong in its length"));
    /* Bytes [at, at + len) set to `value`. */
    static const struct {
        size_t at, len;
        uint8_t value;
        const char *field;
    } cases[] = {{0, 1, 'X', "magic"}, {4, 1, 2, "version"}, {6, 1, 0, "port"}, {11, 1, 1, "queue pair number"},
                 {15, 1, 1, "packet sequence number"}, {60, 4, 0, "receive ring"}, {68, 1, 1, "reserved"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(bad, packed, sizeof bad);
        memset(bad + cases[i].at, cases[i].value, cases[i].len);
        assert_int_equal(grain_verbs_info_unpack(bad, sizeof bad, 7, &out), GRAIN_ERR_TRANSPORT);
        assert_non_null(strstr(grain_error_message(NULL), cases[i].field));
    }
}

static void heap_record_round_trips_and_refuses_strangers(void **state)
{
    (void)state;
    uint64_t w[2], addr;
    uint32_t rkey;
    int registered;
    grain_verbs_heap_words(0x7f0012345000ull, 0xdeadbeefu, 1, w);
    assert_int_equal(grain_verbs_heap_unwords(w, 3, &addr, &rkey, &registered), GRAIN_OK);
    assert_true(addr == 0x7f0012345000ull && rkey == 0xdeadbeefu && registered == 1);
    /* Unregistered: nothing to write into, whatever was passed. */
    grain_verbs_heap_words(0x7f0012345000ull, 0xdeadbeefu, 0, w);
    assert_int_equal(grain_verbs_heap_unwords(w, 3, &addr, &rkey, &registered), GRAIN_OK);
    assert_true(addr == 0 && rkey == 0 && registered == 0);
    /* Words that are no heap record: garbage, another version, a key
     * without a registration. */
    uint64_t garbage[2] = {1, 2};
    assert_int_equal(grain_verbs_heap_unwords(garbage, 5, &addr, &rkey, &registered), GRAIN_ERR_TRANSPORT);
    assert_non_null(strstr(grain_error_message(NULL), "rank 5"));
    grain_verbs_heap_words(0x1000, 7, 1, w);
    uint64_t later[2] = {w[0], w[1] + (1ull << 40)};
    assert_int_equal(grain_verbs_heap_unwords(later, 5, &addr, &rkey, &registered), GRAIN_ERR_TRANSPORT);
    uint64_t keyed[2] = {w[0], w[1] & ~(1ull << 32)};
    assert_int_equal(grain_verbs_heap_unwords(keyed, 5, &addr, &rkey, &registered), GRAIN_ERR_TRANSPORT);
}

static struct ibv_gid_entry gid_entry(uint32_t index, uint32_t port, uint32_t type, const char *hex)
{
    struct ibv_gid_entry e = {.gid_index = index, .port_num = port, .gid_type = type};
    for (int i = 0; i < 16; i++)
        sscanf(hex + 2 * i, "%2hhx", &e.gid.raw[i]);
    return e;
}

/* Soft-RoCE on lo: a link-local GID the netdev does not have comes first. */
static void gid_pick_prefers_routable_roce_v2(void **state)
{
    (void)state;
    const char *link_local = "fe8000000000000002000000fe000000", *v4 = "00000000000000000000ffff7f000001",
               *v6 = "20010db8000000000000000000000001", *none = "00000000000000000000000000000000";
    struct ibv_gid_entry lo[] = {gid_entry(0, 1, IBV_GID_TYPE_ROCE_V2, link_local),
                                 gid_entry(1, 1, IBV_GID_TYPE_ROCE_V2, v4),
                                 gid_entry(2, 1, IBV_GID_TYPE_ROCE_V2, v6)};
    assert_int_equal(grain_verbs_gid_pick(lo, 3, 1), 1);
    /* A ConnectX's usual table: v1 and v2 of each address; v2 of IPv4 wins. */
    struct ibv_gid_entry cx[] = {gid_entry(0, 1, IBV_GID_TYPE_ROCE_V1, link_local),
                                 gid_entry(1, 1, IBV_GID_TYPE_ROCE_V2, link_local),
                                 gid_entry(2, 1, IBV_GID_TYPE_ROCE_V1, v4),
                                 gid_entry(3, 1, IBV_GID_TYPE_ROCE_V2, v4)};
    assert_int_equal(grain_verbs_gid_pick(cx, 4, 1), 3);
    /* Another port's entries, and empty ones, are not candidates. */
    struct ibv_gid_entry mixed[] = {gid_entry(0, 2, IBV_GID_TYPE_ROCE_V2, v4),
                                    gid_entry(1, 1, IBV_GID_TYPE_ROCE_V2, none),
                                    gid_entry(2, 1, IBV_GID_TYPE_ROCE_V1, link_local)};
    assert_int_equal(grain_verbs_gid_pick(mixed, 3, 1), 2);
    assert_int_equal(grain_verbs_gid_pick(mixed, 2, 1), -1);
    /* Equals: the lowest index, wherever it is listed. */
    struct ibv_gid_entry twins[] = {gid_entry(5, 1, IBV_GID_TYPE_ROCE_V2, v6),
                                    gid_entry(4, 1, IBV_GID_TYPE_ROCE_V2, v6)};
    assert_int_equal(grain_verbs_gid_pick(twins, 2, 1), 4);
}

static void completion_errors_name_peer_and_status(void **state)
{
    (void)state;
    assert_int_equal(grain_verbs_wc_error(IBV_WC_SUCCESS, 3, "an RDMA write"), GRAIN_OK);
    assert_int_equal(grain_verbs_wc_error(IBV_WC_RETRY_EXC_ERR, 3, "an RDMA write"), GRAIN_ERR_TRANSPORT);
    const char *m = grain_error_message(NULL);
    assert_non_null(strstr(m, "an RDMA write to rank 3 failed with"));
    assert_non_null(strstr(m, ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR)));
    assert_non_null(strstr(m, "did not answer"));
    assert_int_equal(grain_verbs_wc_error(IBV_WC_REM_ACCESS_ERR, 9, "a credit return"), GRAIN_ERR_TRANSPORT);
    assert_non_null(strstr(grain_error_message(NULL), "refused the write"));
    assert_int_equal(grain_verbs_wc_error(IBV_WC_GENERAL_ERR, 9, "a credit return"), GRAIN_ERR_TRANSPORT);
    char status[32];
    snprintf(status, sizeof status, "(status %d)", (int)IBV_WC_GENERAL_ERR);
    assert_non_null(strstr(grain_error_message(NULL), status));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(credits_run_out_and_come_back),
        cmocka_unit_test(credits_refuse_a_broken_peer),
        cmocka_unit_test(counters_wrap),
        cmocka_unit_test(ring_returns_half_or_when_idle),
        cmocka_unit_test(ring_refuses_overrun_and_long_writes),
        cmocka_unit_test(pool_takes_and_gives),
        cmocka_unit_test(info_round_trips_little_endian),
        cmocka_unit_test(info_refuses_bad_records),
        cmocka_unit_test(heap_record_round_trips_and_refuses_strangers),
        cmocka_unit_test(gid_pick_prefers_routable_roce_v2),
        cmocka_unit_test(completion_errors_name_peer_and_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
