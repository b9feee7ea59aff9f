/* test_parser.c - the shared stages on good frames and on every kind of
 * malformed frame; checksums against known values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>
#include <vfgx/stages.h>

static struct vfgx_pkt_spec spec(uint32_t len, uint16_t vlan)
{
	struct vfgx_pkt_spec s = {
		.src_ip = 0x0a000001, .dst_ip = 0x0a000002, .src_port = 1234,
		.dst_port = 5000, .vlan = vlan, .stream = 3, .seq = 99,
		.frame_len = len, .udp_csum = true,
	};
	return s;
}

static void test_checksum_known_values(void **state)
{
	/* RFC 1071 section 3 example: words 0001 f203 f4f5 f6f7 sum ddf2 */
	static const uint8_t d[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	/* an IPv4 header from the wild with checksum b861 */
	static const uint8_t ip[] = { 0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40,
				      0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
				      0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7 };

	(void)state;
	assert_int_equal(vfgx_csum_fold(vfgx_csum_add(0, d, 8)), (uint16_t)~0xddf2);
	assert_int_equal(vfgx_csum_fold(vfgx_csum_add(0, ip, 20)), 0xb861);
	/* odd length pads with a zero byte */
	assert_int_equal(vfgx_csum_add(0, d, 3), 0x0001 + 0xf200);
}

/* The generator's payload pattern pinned by fixed vectors, written out
 * from the documented rule (byte i after the app header of stream s,
 * sequence q: s*131 + (q mod 2^32)*7 + i*13 + 1, mod 256) rather than
 * computed by vfgx_pattern_byte, which every payload check uses as its
 * oracle: a change to the rule fails here, not silently everywhere. */
static void test_pattern_fixed_vectors(void **state)
{
	static const uint8_t s3q99[16] = { 0x3f, 0x4c, 0x59, 0x66, 0x73, 0x80, 0x8d, 0x9a,
					   0xa7, 0xb4, 0xc1, 0xce, 0xdb, 0xe8, 0xf5, 0x02 };
	static const uint8_t far[8] = { 0xc8, 0xd5, 0xe2, 0xef, 0xfc, 0x09, 0x16, 0x23 };
	struct vfgx_parsed p = { 0 };
	uint8_t f[256];

	(void)state;
	for (uint32_t i = 0; i < 16; i++)
		assert_int_equal(vfgx_pattern_byte(3, 99, i), s3q99[i]);
	for (uint32_t i = 0; i < 8; i++)
		assert_int_equal(vfgx_pattern_byte(0x12345678u, (1ull << 40) + 5, 300 + i), far[i]);
	/* and on the wire: the builder's payload after the 16-byte app header */
	struct vfgx_pkt_spec sp = spec(200, 0);

	assert_int_equal(vfgx_pkt_build(f, sizeof(f), &sp), 200);
	assert_int_equal(vfgx_parse(f, 200, &p), VFGX_STAGE_PASS);
	assert_memory_equal(f + p.payload_off + VFGX_APP_HLEN, s3q99, sizeof(s3q99));
}

static void test_good_frames(void **state)
{
	uint8_t f[2048];
	struct vfgx_parsed p = { 0 };
	struct vfgx_app_hdr h = { 0 };

	(void)state;
	for (uint16_t vlan = 0; vlan <= 7; vlan += 7) {
		for (uint32_t len = vfgx_pkt_min_len(vlan); len < 1600; len += 97) {
			struct vfgx_pkt_spec s = spec(len, vlan);

			assert_int_equal(vfgx_pkt_build(f, sizeof(f), &s), len);
			assert_int_equal(vfgx_parse(f, len, &p), VFGX_STAGE_PASS);
			assert_int_equal(p.vlan, vlan);
			assert_int_equal(p.dst_port, 5000);
			assert_int_equal(p.src_ip, 0x0a000001);
			assert_int_equal(p.payload_len, len - p.payload_off);
			assert_int_equal(vfgx_app_hdr_read(f + p.payload_off, p.payload_len, 64, &h), VFGX_STAGE_PASS);
			assert_int_equal(h.stream, 3);
			assert_int_equal(h.seq, 99);
			assert_int_equal(vfgx_app_hdr_read(f + p.payload_off, p.payload_len, 3, &h), VFGX_R_BAD_STREAM);
		}
	}
	/* UDP checksum 0 means "not computed": accepted */
	struct vfgx_pkt_spec s = spec(200, 0);

	s.udp_csum = false;
	vfgx_pkt_build(f, sizeof(f), &s);
	assert_int_equal(vfgx_parse(f, 200, &p), VFGX_STAGE_PASS);
	/* a frame cut below its IPv4 total length is truncated */
	assert_int_equal(vfgx_parse(f, 150, &p), VFGX_R_TRUNCATED);
}

static void test_malformed(void **state)
{
	uint8_t f[512], g[512];
	struct vfgx_pkt_spec s = spec(128, 0);
	struct vfgx_parsed p = { 0 };
	uint32_t len = vfgx_pkt_build(f, sizeof(f), &s);

	(void)state;
	/* every truncation is refused, none crashes */
	for (uint32_t l = 0; l < len; l++)
		assert_int_not_equal(vfgx_parse(f, l, &p), VFGX_STAGE_PASS);
	assert_int_equal(vfgx_parse(f, 10, &p), VFGX_R_TRUNCATED);
#define MUTATE(off, val, reason)                                     \
	do {                                                         \
		memcpy(g, f, len);                                   \
		g[off] = (uint8_t)(val);                             \
		assert_int_equal(vfgx_parse(g, len, &p), reason);    \
	} while (0)
	MUTATE(12, 0x86, VFGX_R_BAD_ETH);          /* IPv6 ethertype */
	MUTATE(14, 0x65, VFGX_R_BAD_IP);           /* version 6 */
	MUTATE(14, 0x44, VFGX_R_BAD_IP);           /* IHL 16 bytes */
	MUTATE(14 + 10, f[24] ^ 1, VFGX_R_BAD_IP_CSUM);
	MUTATE(14 + 9, 6, VFGX_R_BAD_IP_CSUM);     /* protocol change breaks csum */
	MUTATE(14 + 6, 0x20, VFGX_R_BAD_IP);       /* more fragments */
	MUTATE(14 + 2, 0x7f, VFGX_R_TRUNCATED);    /* total length > frame */
	MUTATE(len - 1, f[len - 1] ^ 0x10, VFGX_R_BAD_UDP_CSUM);
	MUTATE(14 + 20 + 4, 0x7f, VFGX_R_BAD_UDP); /* UDP length */
	/* TCP with a valid IP checksum: NOT_UDP */
	memcpy(g, f, len);
	g[14 + 9] = 6;
	g[24] = g[25] = 0;
	{
		uint16_t c = vfgx_csum_fold(vfgx_csum_add(0, g + 14, 20));

		g[24] = (uint8_t)(c >> 8);
		g[25] = (uint8_t)c;
	}
	assert_int_equal(vfgx_parse(g, len, &p), VFGX_R_NOT_UDP);
	/* a VLAN tag announced but cut short */
	memcpy(g, f, len);
	g[12] = 0x81;
	g[13] = 0x00;
	assert_int_equal(vfgx_parse(g, 16, &p), VFGX_R_TRUNCATED);
	/* payload too short for the app header */
	assert_int_equal(vfgx_app_hdr_read(f, 15, 64, &(struct vfgx_app_hdr){ 0 }), VFGX_R_BAD_APP_HDR);
}

static void test_filter(void **state)
{
	uint16_t lo[] = { 53, 1000 }, hi[] = { 53, 2000 };

	(void)state;
	assert_int_equal(vfgx_filter_port(lo, hi, 0, 7), VFGX_STAGE_PASS);
	assert_int_equal(vfgx_filter_port(lo, hi, 2, 53), VFGX_STAGE_PASS);
	assert_int_equal(vfgx_filter_port(lo, hi, 2, 1500), VFGX_STAGE_PASS);
	assert_int_equal(vfgx_filter_port(lo, hi, 2, 2000), VFGX_STAGE_PASS);
	assert_int_equal(vfgx_filter_port(lo, hi, 2, 2001), VFGX_R_FILTERED);
	assert_int_equal(vfgx_filter_port(lo, hi, 2, 54), VFGX_R_FILTERED);
}

static void test_builder_limits(void **state)
{
	uint8_t f[64];
	struct vfgx_pkt_spec s = spec(100, 0);

	(void)state;
	assert_int_equal(vfgx_pkt_build(f, sizeof(f), &s), 0); /* cap too small */
	s.frame_len = vfgx_pkt_min_len(0) - 1;
	assert_int_equal(vfgx_pkt_build(f, sizeof(f), &s), 0);
	assert_int_equal(vfgx_pkt_min_len(0), 58);
	assert_int_equal(vfgx_pkt_min_len(1), 62);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checksum_known_values),
		cmocka_unit_test(test_pattern_fixed_vectors),
		cmocka_unit_test(test_good_frames),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_builder_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
