/* test_format_encode.c - the profile encoder (vfgx_fmt_encode, what
 * `vfgx send --format` writes) over every profile and every UDP payload
 * size from too small to a jumbo frame: it never writes past the room it
 * is given, refuses (-EINVAL, nothing written) where its check does, and
 * its RFC 4175 packets, read by the segment headers as RFC 4175 lays them
 * out, cover each frame exactly once with at most 8 segments a packet.
 * The fields themselves are checked against tshark, GStreamer and GNU
 * Radio in tests/net/format/test_send_profiles.py. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>
#include <vfgx/format.h>

#define GUARD 64
#define MAXROOM 9000

static const char *const profiles[] = { "rtp", "rtp-video", "vita49", "ecpri", "spead",
					"vdif", "gr-udp", "gr-udp-size" };

static void setup_profile(const char *name, struct vfgx_format *f)
{
	assert_int_equal(vfgx_format_profile(name, f), 0);
	if (!strcmp(name, "vdif"))
		f->seq_major_mult = 100;
	if (!strcmp(name, "spead"))
		f->chunk_bytes = 10000;
	if (!strcmp(name, "rtp-video")) { /* 64 x 16 UYVY: small frames, many lines a packet */
		f->stride = 64 / 2 * 4;
		f->chunk_bytes = (uint64_t)f->stride * 16;
	}
}

static void test_bounds(void **state)
{
	static uint8_t buf[MAXROOM + GUARD];
	struct vfgx_fmt_send s;

	(void)state;
	vfgx_fmt_send_default(&s);
	s.seq_start = 65530;
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
		struct vfgx_format f;
		uint32_t first_ok = 0;

		setup_profile(profiles[i], &f);
		for (uint32_t room = 0; room <= MAXROOM; room += room < 200 ? 1 : 37) {
			int ok = vfgx_fmt_encode_check(NULL, &f, &s, room) == 0;

			if (ok && !first_ok)
				first_ok = room;
			for (uint64_t k = 0; k < 40; k += 7) {
				int len;

				memset(buf, 0xa5, sizeof(buf));
				len = vfgx_fmt_encode(&f, &s, 3, k, buf, room);
				if (!ok) {
					assert_int_equal(len, -EINVAL);
					assert_int_equal(buf[0], 0xa5);
					continue;
				}
				assert_true(len > 0 && (uint32_t)len <= room);
				for (uint32_t g = room; g < room + GUARD && g < sizeof(buf); g++)
					assert_int_equal(buf[g], 0xa5);
			}
		}
		/* every profile sends from a small packet on, well below 1500 */
		assert_true(first_ok > 0 && first_ok < 64);
	}
}

/* RFC 4175 section 4.3: after the 12-byte RTP header, the 16-bit
 * extended sequence number, then 6-byte line headers (length, F + line
 * number, C + offset in pixels) while C is set, then the data. */
static void test_rfc4175_cover(void **state)
{
	static uint8_t buf[MAXROOM];
	struct vfgx_fmt_send s;
	struct vfgx_format f;

	(void)state;
	vfgx_fmt_send_default(&s);
	setup_profile("rtp-video", &f);
	for (uint32_t room = 40; room <= 3000; room += 13) {
		uint64_t frame = f.chunk_bytes;
		uint8_t *seen = calloc(1, frame);
		uint32_t frames = 0;

		assert_non_null(seen);
		for (uint64_t k = 0; frames < 2; k++) {
			int len = vfgx_fmt_encode(&f, &s, 0, k, buf, room);
			uint32_t h = 14, nseg = 0, data;

			assert_true(len > 0);
			do {
				nseg++;
				h += 6;
			} while (buf[h - 2] & 0x80);
			assert_true(nseg <= 8);
			data = h;
			for (uint32_t i = 0; i < nseg; i++) {
				const uint8_t *sh = buf + 14 + 6 * i;
				uint32_t slen = (uint32_t)sh[0] << 8 | sh[1];
				uint32_t line = ((uint32_t)sh[2] << 8 | sh[3]) & 0x7fff;
				uint32_t pix = ((uint32_t)sh[4] << 8 | sh[5]) & 0x7fff;
				uint64_t off = (uint64_t)line * f.stride + pix / 2 * 4;

				assert_true(pix * 2 + slen <= f.stride && off + slen <= frame);
				for (uint32_t b = 0; b < slen; b++) {
					if (frames == 0)
						assert_int_equal(seen[off + b]++, 0);
					/* byte o of frame n: the pattern */
					assert_int_equal(buf[data + b],
							 vfgx_pattern_byte(0, frames, (uint32_t)(off + b)));
				}
				data += slen;
			}
			assert_int_equal(data, (uint32_t)len);
			if (buf[1] & 0x80) { /* the marker: the frame is whole */
				if (frames == 0)
					for (uint64_t b = 0; b < frame; b++)
						assert_int_equal(seen[b], 1);
				frames++;
			}
		}
		free(seen);
	}
}

/* What the encoder writes the decoder reads back: agreement between the
 * two halves of the format layer, for every profile. */
static void test_round_trip(void **state)
{
	static uint8_t buf[2000];
	struct vfgx_fmt_send s;

	(void)state;
	vfgx_fmt_send_default(&s);
	s.stream_id = 5;
	s.seq_start = 250;
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
		struct vfgx_format f;

		setup_profile(profiles[i], &f);
		for (uint64_t k = 0; k < 20; k++) {
			struct vfgx_fmt_pkt o;
			int len = vfgx_fmt_encode(&f, &s, 1, k, buf, 1000);

			assert_true(len > 0);
			assert_int_equal(vfgx_fmt_decode(&f, buf, (uint32_t)len, &o), VFGX_FD_OK);
			if (strcmp(profiles[i], "spead") && strncmp(profiles[i], "gr-udp", 6))
				assert_int_equal(o.stream_raw, 6);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_rfc4175_cover),
		cmocka_unit_test(test_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
