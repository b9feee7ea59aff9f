/* test_eba_desc.c - exposed-buffer descriptors and discovery frames:
 * round trips, every refusal (truncation, magic, version, fields), and the
 * peer table's lease expiry on a supplied clock. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/eba.h>

static struct vfgx_eba_desc sample(uint64_t node, uint32_t buf)
{
	struct vfgx_eba_desc d = {
		.node_id = node, .buffer_id = buf, .type = VFGX_EBA_RX,
		.addr = 0x7f0000001000ull, .rkey = 0x1234, .qpn = 0xabcd,
		.size = 1 << 20, .state_off = (1 << 20) - 64, .lease_s = 10,
		.mac = { 2, 0, 0, 0, 0, 7 },
	};

	for (int i = 0; i < 16; i++)
		d.gid[i] = (uint8_t)(0xf0 + i);
	return d;
}

static void test_roundtrip(void **state)
{
	struct vfgx_eba_desc d = sample(42, 3), o;
	uint8_t buf[VFGX_EBA_DESC_LEN];

	(void)state;
	assert_int_equal(vfgx_eba_desc_encode(NULL, &d, buf, sizeof(buf)), 88);
	/* little-endian on the wire, whatever the host */
	assert_int_equal(buf[0], 0x56);
	assert_int_equal(buf[8], 42);
	assert_int_equal(buf[16], 3);
	assert_int_equal(vfgx_eba_desc_decode(NULL, buf, sizeof(buf), &o), 88);
	assert_int_equal(o.node_id, 42);
	assert_int_equal(o.buffer_id, 3);
	assert_int_equal(o.type, VFGX_EBA_RX);
	assert_int_equal(o.addr, d.addr);
	assert_int_equal(o.rkey, d.rkey);
	assert_int_equal(o.qpn, d.qpn);
	assert_int_equal(o.size, d.size);
	assert_int_equal(o.state_off, d.state_off);
	assert_memory_equal(o.gid, d.gid, 16);
	assert_memory_equal(o.mac, d.mac, 6);
	assert_int_equal(o.lease_s, 10);
}

static void test_refusals(void **state)
{
	struct vfgx_eba_desc d = sample(1, 1), o;
	uint8_t buf[VFGX_EBA_DESC_LEN], bad[VFGX_EBA_DESC_LEN];
	vfgx_ctx *ctx;

	(void)state;
	assert_int_equal(vfgx_ctx_create(&ctx), 0);
	assert_int_equal(vfgx_eba_desc_encode(ctx, &d, buf, 87), -ENOBUFS);
	assert_int_equal(vfgx_eba_desc_encode(ctx, &d, buf, sizeof(buf)), 88);
	for (size_t l = 0; l < 88; l++)
		assert_int_equal(vfgx_eba_desc_decode(ctx, buf, l, &o),
				 -EMSGSIZE);
	memcpy(bad, buf, 88);
	bad[0] ^= 1;
	assert_int_equal(vfgx_eba_desc_decode(ctx, bad, 88, &o), -EBADMSG);
	assert_non_null(strstr(vfgx_last_error(ctx), "magic"));
	memcpy(bad, buf, 88);
	bad[4] = 2;
	assert_int_equal(vfgx_eba_desc_decode(ctx, bad, 88, &o), -EPROTONOSUPPORT);
	assert_non_null(strstr(vfgx_last_error(ctx), "version"));
	memcpy(bad, buf, 88);
	bad[6] = 96;
	assert_int_equal(vfgx_eba_desc_decode(ctx, bad, 88, &o), -EINVAL);
	memcpy(bad, buf, 88);
	bad[20] = 9; /* type */
	assert_int_equal(vfgx_eba_desc_decode(ctx, bad, 88, &o), -EINVAL);
	memcpy(bad, buf, 88);
	bad[21] = 1; /* reserved flags */
	assert_int_equal(vfgx_eba_desc_decode(ctx, bad, 88, &o), -EINVAL);
	memcpy(bad, buf, 88);
	bad[39] = 1; /* qpn >= 2^24 */
	assert_int_equal(vfgx_eba_desc_decode(ctx, bad, 88, &o), -EINVAL);
	memcpy(bad, buf, 88);
	bad[80] = bad[81] = bad[82] = bad[83] = 0; /* lease 0 */
	assert_int_equal(vfgx_eba_desc_decode(ctx, bad, 88, &o), -EINVAL);

	d.state_off = d.size - 4; /* past the end */
	assert_int_equal(vfgx_eba_desc_encode(ctx, &d, buf, 88), -EINVAL);
	d.state_off = 12; /* unaligned */
	assert_int_equal(vfgx_eba_desc_encode(ctx, &d, buf, 88), -EINVAL);
	d = sample(1, 1);
	d.addr = UINT64_MAX - 10;
	assert_int_equal(vfgx_eba_desc_encode(ctx, &d, buf, 88), -EINVAL);
	d = sample(1, 1);
	d.size = 0;
	assert_int_equal(vfgx_eba_desc_encode(ctx, &d, buf, 88), -EINVAL);
	d.type = VFGX_EBA_CTRL;
	d.state_off = VFGX_EBA_NO_STATE;
	assert_int_equal(vfgx_eba_desc_encode(ctx, &d, buf, 88), 88);
	vfgx_ctx_destroy(ctx);
}

static void test_frame(void **state)
{
	struct vfgx_eba_frame f = { .node_id = 7, .seq = 99, .count = 3 }, o;
	uint8_t buf[1500];
	int len;

	(void)state;
	for (int i = 0; i < 3; i++)
		f.desc[i] = sample(7, (uint32_t)i);
	len = vfgx_eba_frame_encode(NULL, &f, buf, sizeof(buf));
	assert_int_equal(len, 24 + 3 * 88);
	/* Ethernet pads short frames: trailing bytes are accepted */
	assert_int_equal(vfgx_eba_frame_decode(NULL, buf, sizeof(buf), &o), len);
	assert_int_equal(o.node_id, 7);
	assert_int_equal(o.seq, 99);
	assert_int_equal(o.count, 3);
	assert_int_equal(o.desc[2].buffer_id, 2);
	for (int l = 0; l < len; l++)
		assert_int_equal(vfgx_eba_frame_decode(NULL, buf, (size_t)l, &o),
				 -EMSGSIZE);
	buf[4] = 3;
	assert_int_equal(vfgx_eba_frame_decode(NULL, buf, (size_t)len, &o), -EPROTONOSUPPORT);
	buf[4] = 1;
	buf[2] = 0;
	assert_int_equal(vfgx_eba_frame_decode(NULL, buf, (size_t)len, &o), -EBADMSG);
	vfgx_eba_frame_encode(NULL, &f, buf, sizeof(buf));
	buf[6] = 0; /* count 0 */
	assert_int_equal(vfgx_eba_frame_decode(NULL, buf, (size_t)len, &o), -EINVAL);
	buf[6] = 17;
	assert_int_equal(vfgx_eba_frame_decode(NULL, buf, sizeof(buf), &o), -EINVAL);
	vfgx_eba_frame_encode(NULL, &f, buf, sizeof(buf));
	buf[24 + 88 + 8] = 8; /* second descriptor claims another node */
	assert_int_equal(vfgx_eba_frame_decode(NULL, buf, (size_t)len, &o), -EINVAL);
	f.desc[1].node_id = 8;
	assert_int_equal(vfgx_eba_frame_encode(NULL, &f, buf, sizeof(buf)), -EINVAL);
	f.count = 17;
	assert_int_equal(vfgx_eba_frame_encode(NULL, &f, buf, sizeof(buf)), -EINVAL);
}

static int nb_expired;

static void on_expire(void *user, const struct vfgx_eba_peer *p)
{
	(void)user;
	(void)p;
	nb_expired++;
}

static void test_peers(void **state)
{
	struct vfgx_eba_peer_table t;
	struct vfgx_eba_desc a = sample(1, 0), b = sample(2, 0), b1 = sample(2, 1);
	struct vfgx_eba_desc c = sample(3, 0);
	const uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 };
	const uint64_t s = 1000000000ull;

	(void)state;
	assert_int_equal(vfgx_eba_peers_init(&t, 3), 0);
	a.lease_s = 2;
	b.lease_s = 5;
	b1.lease_s = 5;
	assert_int_equal(vfgx_eba_peers_update(&t, &a, mac, 0), VFGX_EBA_PEER_ADDED);
	assert_int_equal(vfgx_eba_peers_update(&t, &b, mac, 0), VFGX_EBA_PEER_ADDED);
	assert_int_equal(vfgx_eba_peers_update(&t, &b1, mac, 0), VFGX_EBA_PEER_ADDED);
	assert_int_equal(vfgx_eba_peers_nodes(&t), 2);
	assert_int_equal(vfgx_eba_peers_update(&t, &c, mac, 0), -ENOSPC);
	assert_int_equal(vfgx_eba_peers_update(&t, &a, mac, 1 * s), VFGX_EBA_PEER_RENEWED);
	b.rkey = 99;
	assert_int_equal(vfgx_eba_peers_update(&t, &b, mac, 1 * s), VFGX_EBA_PEER_CHANGED);
	assert_int_equal(vfgx_eba_peers_find(&t, 2, 0)->desc.rkey, 99);
	/* a was renewed at 1 s with a 2 s lease: alive at 2.9 s, gone at 3 s */
	assert_int_equal(vfgx_eba_peers_expire(&t, 3 * s - 1, on_expire, NULL), 0);
	assert_int_equal(vfgx_eba_peers_expire(&t, 3 * s, on_expire, NULL), 1);
	assert_int_equal(nb_expired, 1);
	assert_null(vfgx_eba_peers_find(&t, 1, 0));
	assert_non_null(vfgx_eba_peers_find(&t, 2, 1));
	assert_int_equal(vfgx_eba_peers_nodes(&t), 1);
	assert_int_equal(vfgx_eba_peers_expire(&t, 6 * s, NULL, NULL), 2);
	assert_int_equal(t.nb, 0);
	vfgx_eba_peers_fini(&t);
}

/* A flood of new keys with the longest lease: live peers (announced within
 * stale_ns) are never evicted, stale entries are, the stalest first.
 */
static void test_peers_flood(void **state)
{
	struct vfgx_eba_peer_table t;
	const uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 };
	const uint64_t s = 1000000000ull;
	struct vfgx_eba_desc d;
	int refused = 0;

	(void)state;
	assert_int_equal(vfgx_eba_peers_init(&t, 4), 0);
	assert_true(t.stale_ns == VFGX_EBA_PEER_STALE_NS && t.stale_ns == 2 * s);
	for (uint64_t n = 1; n <= 4; n++) {
		d = sample(n, 0);
		assert_int_equal(vfgx_eba_peers_update(&t, &d, mac, n * s / 10),
				 VFGX_EBA_PEER_ADDED);
	}
	/* full of live peers: a new key is refused */
	d = sample(5, 0);
	assert_int_equal(vfgx_eba_peers_update(&t, &d, mac, 1 * s), -ENOSPC);
	/* 1 and 2 keep announcing; 3 and 4 went quiet at 0.3 and 0.4 s */
	for (uint64_t n = 1; n <= 2; n++) {
		d = sample(n, 0);
		assert_int_equal(vfgx_eba_peers_update(&t, &d, mac, 2 * s),
				 VFGX_EBA_PEER_RENEWED);
	}
	/* a flood at 2.5 s: takes the two stale slots, stalest (3) first */
	for (uint64_t n = 1000; n < 1100; n++) {
		d = sample(n, 0);
		d.lease_s = VFGX_EBA_LEASE_MAX;
		if (vfgx_eba_peers_update(&t, &d, mac, 5 * s / 2) < 0)
			refused++;
	}
	assert_int_equal(refused, 98);
	assert_int_equal(t.evicted, 2);
	assert_null(vfgx_eba_peers_find(&t, 3, 0));
	assert_null(vfgx_eba_peers_find(&t, 4, 0));
	assert_non_null(vfgx_eba_peers_find(&t, 1, 0));
	assert_non_null(vfgx_eba_peers_find(&t, 2, 0));
	/* the flood never announces again; a new peer at 4.6 s gets a slot
	 * while 1 and 2, renewed at 4 s, stay */
	for (uint64_t n = 1; n <= 2; n++) {
		d = sample(n, 0);
		vfgx_eba_peers_update(&t, &d, mac, 4 * s);
	}
	d = sample(7, 0);
	assert_int_equal(vfgx_eba_peers_update(&t, &d, mac, 46 * s / 10),
			 VFGX_EBA_PEER_ADDED);
	assert_int_equal(t.evicted, 3);
	assert_non_null(vfgx_eba_peers_find(&t, 1, 0));
	assert_non_null(vfgx_eba_peers_find(&t, 2, 0));
	assert_int_equal(t.nb, 4);
	vfgx_eba_peers_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_frame),
		cmocka_unit_test(test_peers),
		cmocka_unit_test(test_peers_flood),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
