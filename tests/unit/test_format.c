/* test_format.c - the format rules (vfgx/format.h) on packets written out
 * byte by byte from the published specifications (SPEAD, VDIF, RFC 4175,
 * RFC 3550, VITA-49, eCPRI), not from our encoder: fields, composite and
 * extended sequences, placement, every drop reason of bad input, and the
 * YAML description with its one-line errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>
#include <vfgx/format.h>

#include "format/format_priv.h"

#include "unit_ctx.h"

static void profile(const char *name, struct vfgx_format *f)
{
	assert_int_equal(vfgx_format_profile(name, f), 0);
}

/* Decode p both ways: as the cpu engine does (the plan made once, its
 * kind's decoder: a built-in profile's straight-line one) and field by
 * field (vfgx_fmt_decode, the generic reading); the two must give the
 * same answer, and the same packet where it is whole (OK, or a stream
 * past the streams).  Every expected value below is from the
 * specifications, so both readings are held to them. */
static int decode(const struct vfgx_format *f, const uint8_t *p, uint32_t len,
		  struct vfgx_fmt_pkt *o)
{
	struct vfgx_fmt_plan c;
	struct vfgx_fmt_pkt g;
	int r, rg;

	memset(o, 0xa5, sizeof(*o));
	memset(&g, 0x5a, sizeof(g));
	vfgx_fmt_plan_make(f, &c);
	r = vfgx_fmt_decode_plan(f, &c, p, len, o);
	rg = vfgx_fmt_decode(f, p, len, &g);
	assert_int_equal(r, rg);
	if (r != VFGX_FD_OK && r != VFGX_FD_BAD_STREAM)
		return r;
	assert_int_equal(o->stream_raw, g.stream_raw);
	assert_int_equal(o->stream, g.stream);
	assert_int_equal(o->end, g.end);
	assert_int_equal(o->seq, g.seq);
	assert_int_equal(o->ext_seq, g.ext_seq);
	assert_int_equal(o->timestamp, g.timestamp);
	assert_int_equal(o->ts_frac, g.ts_frac);
	assert_int_equal(o->chunk, g.chunk);
	assert_int_equal(o->chunk_bytes, g.chunk_bytes);
	assert_int_equal(o->nseg, g.nseg);
	assert_int_equal(o->payload_off, g.payload_off);
	assert_int_equal(o->payload_len, g.payload_len);
	for (uint32_t i = 0; i < o->nseg && i < VFGX_FMT_MAX_SEGS; i++) {
		assert_int_equal(o->seg[i].src_off, g.seg[i].src_off);
		assert_int_equal(o->seg[i].len, g.seg[i].len);
		assert_int_equal(o->seg[i].dst_off, g.seg[i].dst_off);
		if (f->layout == VFGX_FMT_RFC4175) {
			assert_int_equal(o->seg[i].line, g.seg[i].line);
			assert_int_equal(o->seg[i].pixel, g.seg[i].pixel);
		}
	}
	return r;
}

/* decode, extend against *st, place: the engines' order */
static int run_rules(const struct vfgx_format *f, struct vfgx_seq_state *st,
		     const uint8_t *p, uint32_t len, struct vfgx_fmt_pkt *o)
{
	int r = decode(f, p, len, o);

	if (r == VFGX_FD_OK)
		r = vfgx_seq_extend(f, st, o->seq, &o->ext_seq);
	if (r == VFGX_FD_OK)
		r = vfgx_fmt_place(f, o);
	return r;
}

/* ---- SPEAD-64-48 ------------------------------------------------------- */

/* One SPEAD packet (SPEAD protocol, MeerKAT/CASPER, "SPEAD-64-48"):
 * an 8-byte header and four immediate item pointers, big endian. */
static uint32_t spead_pkt(uint8_t *p, uint64_t cnt, uint64_t size, uint64_t off,
			  uint64_t plen, uint32_t real_len)
{
	static const uint8_t hdr[8] = {
		0x53,       /* magic 'S' */
		0x04,       /* version 4 */
		0x02,       /* ItemPointerWidth: (64 - 48) / 8 = 2 bytes */
		0x06,       /* HeapAddrWidth: 48 / 8 = 6 bytes */
		0x00, 0x00, /* reserved */
		0x00, 0x04, /* 4 item pointers follow */
	};
	/* item pointer: bit 63 immediate (1), bits 62..48 id, 47..0 value */
	uint64_t items[4] = {
		(1ull << 63) | (0x1ull << 48) | cnt,  /* heap counter */
		(1ull << 63) | (0x2ull << 48) | size, /* heap size */
		(1ull << 63) | (0x3ull << 48) | off,  /* heap offset */
		(1ull << 63) | (0x4ull << 48) | plen, /* payload length */
	};

	memcpy(p, hdr, 8);
	for (int i = 0; i < 4; i++)
		for (int b = 0; b < 8; b++)
			p[8 + 8 * i + b] = (uint8_t)(items[i] >> (56 - 8 * b));
	for (uint32_t i = 0; i < real_len; i++)
		p[40 + i] = (uint8_t)(0xa0 + i);
	return 40 + real_len;
}

static void test_spead(void **state)
{
	struct vfgx_format f;
	struct vfgx_seq_state st = { 0 };
	struct vfgx_fmt_pkt o = { 0 };
	uint8_t p[256];
	uint32_t n;

	(void)state;
	profile("spead", &f);
	f.chunk_bytes = 4096;
	/* heap 42 of 4096 bytes: 8 bytes at offset 1024 */
	n = spead_pkt(p, 42, 4096, 1024, 8, 8);
	assert_int_equal(run_rules(&f, &st, p, n, &o), VFGX_FD_OK);
	assert_int_equal(o.chunk, 42);
	assert_int_equal(o.chunk_bytes, 4096);
	assert_int_equal(o.nseg, 1);
	assert_int_equal(o.seg[0].dst_off, 1024);
	assert_int_equal(o.seg[0].src_off, 40);
	assert_int_equal(o.seg[0].len, 8);
	assert_int_equal(o.end, 0);
	/* the heap's last 8 bytes: its size reached ends the chunk */
	n = spead_pkt(p, 42, 4096, 4088, 8, 8);
	assert_int_equal(run_rules(&f, &st, p, n, &o), VFGX_FD_OK);
	assert_int_equal(o.end, 1);
	/* heap offset past the heap: 4092 + 8 > 4096 */
	n = spead_pkt(p, 43, 4096, 4092, 8, 8);
	assert_int_equal(decode(&f, p, n, &o), VFGX_FD_OFFSET_PAST_CHUNK);
	/* a heap larger than the configured chunk */
	n = spead_pkt(p, 44, 8192, 8000, 8, 8);
	assert_int_equal(run_rules(&f, &st, p, n, &o), VFGX_FD_OFFSET_PAST_CHUNK);
	/* payload length that lies: 16 claimed, 8 sent */
	n = spead_pkt(p, 45, 4096, 0, 16, 8);
	assert_int_equal(decode(&f, p, n, &o), VFGX_FD_BAD_LENGTH);
	/* item count that runs past the packet */
	n = spead_pkt(p, 46, 4096, 0, 8, 8);
	p[7] = 40;
	assert_int_equal(decode(&f, p, n, &o), VFGX_FD_FIELD_OUTSIDE);
	/* heap offset item absent: turned into an address item (bit 63 0) */
	n = spead_pkt(p, 47, 4096, 0, 8, 8);
	p[24] &= 0x7f;
	assert_int_equal(decode(&f, p, n, &o), VFGX_FD_FIELD_OUTSIDE);
	/* SPEAD-64-40 (HeapAddrWidth 5): not this flavour */
	n = spead_pkt(p, 48, 4096, 0, 8, 8);
	p[3] = 5;
	assert_int_equal(decode(&f, p, n, &o), VFGX_FD_MISMATCH);
	/* items in any order (the protocol fixes none): heap size and
	 * payload length swapped with the counter and the offset */
	n = spead_pkt(p, 49, 4096, 512, 8, 8);
	for (int b = 0; b < 8; b++) {
		uint8_t t = p[8 + b];

		p[8 + b] = p[16 + b];
		p[16 + b] = t;
		t = p[24 + b];
		p[24 + b] = p[32 + b];
		p[32 + b] = t;
	}
	assert_int_equal(decode(&f, p, n, &o), VFGX_FD_OK);
	assert_int_equal(o.chunk, 49);
	assert_int_equal(o.chunk_bytes, 4096);
	assert_int_equal(o.seg[0].dst_off, 512);
	assert_int_equal(o.seg[0].len, 8);
	/* a fifth item after the usual four: an address item (bit 63 0,
	 * say a descriptor's data in the heap) is skipped; a second heap
	 * offset item is the one read (the last of an id wins) */
	n = spead_pkt(p, 50, 4096, 512, 8, 8);
	memmove(p + 48, p + 40, 8);
	p[7] = 5;
	for (int b = 0; b < 8; b++)
		p[40 + b] = (uint8_t)((0x0005ull << 48 | 1000) >> (56 - 8 * b));
	assert_int_equal(decode(&f, p, 56, &o), VFGX_FD_OK);
	assert_int_equal(o.seg[0].dst_off, 512);
	assert_int_equal(o.seg[0].src_off, 48);
	for (int b = 0; b < 8; b++)
		p[40 + b] = (uint8_t)((1ull << 63 | 0x3ull << 48 | 2048) >> (56 - 8 * b));
	assert_int_equal(decode(&f, p, 56, &o), VFGX_FD_OK);
	assert_int_equal(o.seg[0].dst_off, 2048);
	/* the reserved bytes set (the specification leaves them to the
	 * sender): read item by item, the same fields */
	n = spead_pkt(p, 51, 4096, 256, 8, 8);
	p[4] = 0x12;
	p[5] = 0x34;
	assert_int_equal(decode(&f, p, n, &o), VFGX_FD_OK);
	assert_int_equal(o.chunk, 51);
	assert_int_equal(o.seg[0].dst_off, 256);
	assert_int_equal(o.seg[0].src_off, 40);
	assert_int_equal(o.payload_len, 8);
}

/* Bad SPEAD-64-48 packets, from the packet format of the SPEAD
 * specification: a packet cut short, a bare header with no item
 * pointers, an item whose id is not the one the reader needs, and a
 * header of another version or flavour.  Heap counter, heap offset and
 * payload length are needed to place a packet (FIELD_OUTSIDE without
 * one); heap size is optional (the heap's size unknown, no end mark). */
static void test_spead_bad(void **state)
{
	struct vfgx_format f;
	struct vfgx_fmt_pkt o;
	uint8_t p[256];
	uint32_t n;

	(void)state;
	profile("spead", &f);
	f.chunk_bytes = 4096;
	/* cut inside the 8-byte header */
	n = spead_pkt(p, 60, 4096, 0, 8, 8);
	for (uint32_t cut = 0; cut < 8; cut++)
		assert_int_equal(decode(&f, p, cut, &o), VFGX_FD_FIELD_OUTSIDE);
	/* cut inside the item pointers (4 items: 40 header bytes) */
	for (uint32_t cut = 8; cut < 40; cut++)
		assert_int_equal(decode(&f, p, cut, &o), VFGX_FD_FIELD_OUTSIDE);
	/* cut inside the payload: 8 bytes claimed, 5 there */
	assert_int_equal(decode(&f, p, 45, &o), VFGX_FD_BAD_LENGTH);
	/* header and items whole, no payload: 8 claimed, 0 there */
	assert_int_equal(decode(&f, p, 40, &o), VFGX_FD_BAD_LENGTH);
	/* a bare header: no item pointers, so no heap counter */
	n = spead_pkt(p, 61, 4096, 0, 8, 8);
	p[6] = 0;
	p[7] = 0;
	assert_int_equal(decode(&f, p, 8, &o), VFGX_FD_FIELD_OUTSIDE);
	/* the same with bytes after it */
	assert_int_equal(decode(&f, p, n, &o), VFGX_FD_FIELD_OUTSIDE);
	/* one byte written wrong in a packet that reads whole otherwise */
	static const struct {
		uint32_t at;
		uint8_t val;
		int want;
		const char *what;
	} one_byte[] = {
		/* an immediate item of another kind: no heap counter */
		{ 9, 0x06, VFGX_FD_FIELD_OUTSIDE, "heap counter's id 0x0001 as 0x0006" },
		{ 32, 0x81, VFGX_FD_FIELD_OUTSIDE, "payload length's id 0x0004 as 0x0104" },
		{ 25, 0x07, VFGX_FD_FIELD_OUTSIDE, "heap offset's id 0x0003 as 0x0007" },
		{ 1, 3, VFGX_FD_MISMATCH, "version 3 where SPEAD's is 4" },
		{ 1, 5, VFGX_FD_MISMATCH, "version 5" },
		{ 0, 0x54, VFGX_FD_MISMATCH, "magic 0x54 where 'S' (0x53) is" },
		/* SPEAD-64-40's item pointer width: (64 - 40) / 8 = 3 */
		{ 2, 3, VFGX_FD_MISMATCH, "item pointer width 3 bytes" },
	};
	for (size_t i = 0; i < sizeof(one_byte) / sizeof(one_byte[0]); i++) {
		n = spead_pkt(p, 62 + (uint32_t)i, 4096, 0, 8, 8);
		p[one_byte[i].at] = one_byte[i].val;
		if (decode(&f, p, n, &o) != one_byte[i].want)
			fail_msg("spead: %s: %d, not %d", one_byte[i].what, decode(&f, p, n, &o),
				 one_byte[i].want);
	}
	/* the heap size's id 0x0002 written 0x0008: heap size absent, which
	 * the protocol allows: placed, its size unknown, no end mark */
	n = spead_pkt(p, 65, 4096, 4088, 8, 8);
	p[17] = 0x08;
	assert_int_equal(decode(&f, p, n, &o), VFGX_FD_OK);
	assert_int_equal(o.chunk, 65);
	assert_int_equal(o.chunk_bytes, 0);
	assert_int_equal(o.end, 0);
	assert_int_equal(o.seg[0].dst_off, 4088);
	assert_int_equal(o.seg[0].len, 8);
	/* the same packet whole reads */
	n = spead_pkt(p, 69, 4096, 0, 8, 8);
	assert_int_equal(decode(&f, p, n, &o), VFGX_FD_OK);
	assert_int_equal(o.chunk, 69);
}

/* ---- VDIF ---------------------------------------------------------------- */

/* A VDIF 1.1.1 data frame header: four little-endian 32-bit words. */
static void vdif_hdr(uint8_t *p, uint32_t secs, uint32_t frame, uint32_t len8,
		     uint32_t thread, int legacy)
{
	uint32_t w[4] = {
		/* bit 31 invalid, bit 30 legacy, bits 29..0 seconds from epoch */
		((uint32_t)legacy << 30) | secs,
		/* bits 29..24 reference epoch (half years), 23..0 frame number */
		(10u << 24) | frame,
		/* bits 31..29 version, 28..24 log2(channels), 23..0 frame
		 * length in 8-byte units, header included */
		(0u << 29) | (2u << 24) | len8,
		/* bit 31 complex, 30..26 bits/sample - 1, 25..16 thread id,
		 * 15..0 station id ("Ef") */
		(1u << 26) | (thread << 16) | 0x4566,
	};

	for (int i = 0; i < 4; i++)
		for (int b = 0; b < 4; b++)
			p[4 * i + b] = (uint8_t)(w[i] >> (8 * b));
	memset(p + 16, 0, 16); /* extended user data */
}

static void test_vdif(void **state)
{
	struct vfgx_format f;
	struct vfgx_seq_state st = { 0 };
	struct vfgx_fmt_pkt o = { 0 };
	uint8_t p[32 + 64];

	(void)state;
	profile("vdif", &f);
	/* a composite sequence without frames per second: a config error */
	assert_int_equal(vfgx_format_check(ctx, &f, 96, 96), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "seq_major_mult"));
	f.seq_major_mult = 100; /* frames per second */
	f.packets = 100;
	f.payload_bytes = 64;
	assert_int_equal(vfgx_format_check(ctx, &f, 96, 96), 0);
	memset(p, 0x5a, sizeof(p));
	vdif_hdr(p, 1000, 5, 12, 3, 0); /* (32 + 64) / 8 = 12 */
	assert_int_equal(run_rules(&f, &st, p, 96, &o), VFGX_FD_OK);
	assert_int_equal(o.seq, 1000ull * 100 + 5); /* seconds x fps + frame */
	assert_int_equal(o.ext_seq, 100005);
	assert_int_equal(o.stream_raw, 3);
	assert_int_equal(o.timestamp, 1000);
	assert_int_equal(o.payload_off, 32);
	assert_int_equal(o.payload_len, 64);
	assert_int_equal(o.chunk, 1000);               /* one second per chunk */
	assert_int_equal(o.seg[0].dst_off, 5 * 64);    /* frame number x size */
	/* the next second's frame 0 follows frame 99 */
	vdif_hdr(p, 1000, 99, 12, 3, 0);
	assert_int_equal(run_rules(&f, &st, p, 96, &o), VFGX_FD_OK);
	vdif_hdr(p, 1001, 0, 12, 3, 0);
	assert_int_equal(run_rules(&f, &st, p, 96, &o), VFGX_FD_OK);
	assert_int_equal(o.ext_seq, 100100);
	assert_int_equal(o.chunk, 1001);
	assert_int_equal(o.seg[0].dst_off, 0);
	/* frame length that lies: 13 x 8 = 104, 96 sent */
	vdif_hdr(p, 1001, 1, 13, 3, 0);
	assert_int_equal(decode(&f, p, 96, &o), VFGX_FD_BAD_LENGTH);
	/* a legacy (16-byte header) frame: not this description */
	vdif_hdr(p, 1001, 1, 12, 3, 1);
	assert_int_equal(decode(&f, p, 96, &o), VFGX_FD_MISMATCH);
	/* a header cut short */
	vdif_hdr(p, 1001, 1, 2, 3, 0);
	assert_int_equal(decode(&f, p, 16, &o), VFGX_FD_FIELD_OUTSIDE);
	/* a thread beyond the configured streams */
	f.max_streams = 2;
	vdif_hdr(p, 1001, 2, 12, 3, 0);
	assert_int_equal(decode(&f, p, 96, &o), VFGX_FD_BAD_STREAM);
}

/* ---- RTP and RFC 4175 ---------------------------------------------------- */

/* RFC 3550 fixed header: V=2 P X CC | M PT | seq | timestamp | SSRC */
static uint32_t rtp_hdr(uint8_t *p, int marker, uint16_t seq, uint32_t ts,
			uint32_t ssrc, uint32_t cc)
{
	p[0] = (uint8_t)(0x80 | cc);
	p[1] = (uint8_t)((marker ? 0x80 : 0) | 96);
	vfgx_wr16(p + 2, seq);
	vfgx_wr32(p + 4, ts);
	vfgx_wr32(p + 8, ssrc);
	for (uint32_t i = 0; i < cc; i++)
		vfgx_wr32(p + 12 + 4 * i, 0x1000 + i); /* CSRC list */
	return 12 + 4 * cc;
}

static void test_rtp(void **state)
{
	struct vfgx_format f;
	struct vfgx_seq_state st = { 0 };
	struct vfgx_fmt_pkt o = { 0 };
	uint8_t p[64] = { 0 };
	uint32_t h;

	(void)state;
	profile("rtp", &f);
	h = rtp_hdr(p, 1, 65535, 90000, 0xdeadbeef, 2);
	assert_int_equal(h, 20);
	assert_int_equal(run_rules(&f, &st, p, 40, &o), VFGX_FD_OK);
	assert_int_equal(o.stream_raw, 0xdeadbeef);
	assert_int_equal(o.seq, 65535);
	assert_int_equal(o.ext_seq, 65536 + 65535);
	assert_int_equal(o.timestamp, 90000);
	assert_int_equal(o.end, 1);
	assert_int_equal(o.payload_off, 20); /* after two CSRCs */
	assert_int_equal(o.payload_len, 20);
	/* an extension header (X): 4 bytes + 1 word */
	h = rtp_hdr(p, 0, 0, 90000, 0xdeadbeef, 0);
	p[0] |= 0x10;
	vfgx_wr16(p + 14, 1);
	assert_int_equal(run_rules(&f, &st, p, 40, &o), VFGX_FD_OK);
	assert_int_equal(o.payload_off, 20);
	assert_int_equal(o.ext_seq, 2 * 65536); /* wrapped */
	assert_int_equal(o.end, 0);
	/* extension length past the packet */
	vfgx_wr16(p + 14, 100);
	assert_int_equal(decode(&f, p, 40, &o), VFGX_FD_FIELD_OUTSIDE);
	/* padding count that lies (P set, last byte 200 > payload) */
	rtp_hdr(p, 0, 1, 0, 1, 0);
	p[0] |= 0x20;
	p[39] = 200;
	assert_int_equal(decode(&f, p, 40, &o), VFGX_FD_BAD_LENGTH);
	/* version 1: not RTP */
	rtp_hdr(p, 0, 1, 0, 1, 0);
	p[0] = 0x40;
	assert_int_equal(decode(&f, p, 40, &o), VFGX_FD_MISMATCH);
	/* an SSRC not among the configured streams */
	rtp_hdr(p, 0, 1, 0, 7, 0);
	f.n_stream_ids = 2;
	f.stream_ids[0] = 0xdeadbeef;
	f.stream_ids[1] = 5;
	f.max_streams = 2;
	assert_int_equal(decode(&f, p, 40, &o), VFGX_FD_BAD_STREAM);
	rtp_hdr(p, 0, 1, 0, 5, 0);
	assert_int_equal(decode(&f, p, 40, &o), VFGX_FD_OK);
	assert_int_equal(o.stream, 1);
}

/* The position of raw in ids, the way the description's comment states
 * the rule (first listed position), as the test's own loop. */
static int first_pos(const uint64_t *ids, uint32_t n, uint64_t raw)
{
	for (uint32_t i = 0; i < n; i++)
		if (ids[i] == raw)
			return (int)i;
	return -1;
}

/* stream_ids looked up by the hash index (vfgx_format_index) give each
 * id its first listed position, as the search in order: 64 ids whose
 * hashes pile onto few slots (long probe runs that wrap past the table's
 * end), one listed twice, ids not listed that hash into the runs; and an
 * index written by hand with slots naming no listed id reads nothing
 * outside stream_ids. */
static void test_stream_index(void **state)
{
	struct vfgx_format f;
	uint64_t probe[200];
	uint32_t np = 0, n = 0, got = 0;
	(void)state;

	assert_int_equal(vfgx_format_profile("rtp", &f), 0);
	/* ids whose first slot is 126 or 127, then some anywhere */
	for (uint64_t v = 1; n < 40; v++)
		if (vfgx_fmt_id_hash(v) >= 126)
			f.stream_ids[n++] = v;
	for (uint64_t v = 1000; n < 63; v += 7919)
		f.stream_ids[n++] = v;
	f.stream_ids[n++] = f.stream_ids[5]; /* listed twice */
	f.n_stream_ids = n;
	f.max_streams = 50;
	vfgx_format_index(&f);
	assert_int_equal(f.stream_index, 1);
	for (uint32_t i = 0; i < n; i++)
		probe[np++] = f.stream_ids[i];
	for (uint64_t v = 100000; np < 200; v++)
		if (vfgx_fmt_id_hash(v) >= 120 || vfgx_fmt_id_hash(v) < 4)
			probe[np++] = v;
	for (uint32_t k = 0; k < np; k++) {
		int want = first_pos(f.stream_ids, n, probe[k]);
		int r = vfgx_fmt_stream_index(&f, probe[k], &got);

		if (want < 0 || (uint32_t)want >= f.max_streams) {
			assert_int_equal(r, VFGX_FD_BAD_STREAM);
		} else {
			assert_int_equal(r, VFGX_FD_OK);
			assert_int_equal(got, (uint32_t)want);
		}
		/* the search in order agrees */
		f.stream_index = 0;
		assert_int_equal(vfgx_fmt_stream_index(&f, probe[k], &got) == VFGX_FD_OK, r == VFGX_FD_OK);
		f.stream_index = 1;
	}
	assert_int_equal(vfgx_fmt_stream_index(&f, f.stream_ids[5], &got), VFGX_FD_OK);
	assert_int_equal(got, 5);
	/* a hand-written index: every slot past the ids, or every slot
	 * taken by a wrong position: bad_stream, no read past the list */
	memset(f.stream_slot, 0xff, sizeof(f.stream_slot));
	assert_int_equal(vfgx_fmt_stream_index(&f, f.stream_ids[0], &got), VFGX_FD_BAD_STREAM);
	memset(f.stream_slot, 1, sizeof(f.stream_slot));
	assert_int_equal(vfgx_fmt_stream_index(&f, f.stream_ids[3], &got), VFGX_FD_BAD_STREAM);
	/* up to VFGX_FMT_IDS_IN_ORDER ids: searched in order; the index
	 * built all the same, and right when turned on */
	f.n_stream_ids = VFGX_FMT_IDS_IN_ORDER;
	vfgx_format_index(&f);
	assert_int_equal(f.stream_index, 0);
	f.stream_index = 1;
	for (uint32_t i = 0; i < VFGX_FMT_IDS_IN_ORDER; i++) {
		assert_int_equal(vfgx_fmt_stream_index(&f, f.stream_ids[i], &got), VFGX_FD_OK);
		assert_int_equal(got, (uint32_t)first_pos(f.stream_ids, VFGX_FMT_IDS_IN_ORDER, f.stream_ids[i]));
	}
	/* no ids: no index, the value is the index */
	f.n_stream_ids = 0;
	vfgx_format_index(&f);
	assert_int_equal(f.stream_index, 0);
	assert_int_equal(vfgx_fmt_stream_index(&f, 7, &got), VFGX_FD_OK);
	assert_int_equal(got, 7);
}

/* RFC 4175 section 4: after the RTP header, Extended Sequence Number (16),
 * then per segment Length (16), F (1) Line No (15), C (1) Offset (15). */
static uint32_t rfc4175_pkt(uint8_t *p, uint16_t seq_hi, uint32_t nseg,
			    const uint16_t (*seg)[3])
{
	uint32_t h = rtp_hdr(p, 0, 7, 1234, 0x1111, 0), data;

	vfgx_wr16(p + h, seq_hi);
	h += 2;
	for (uint32_t i = 0; i < nseg; i++) {
		vfgx_wr16(p + h, seg[i][0]);
		vfgx_wr16(p + h + 2, seg[i][1]);
		vfgx_wr16(p + h + 4, (uint16_t)(seg[i][2] | (i + 1 < nseg ? 0x8000 : 0)));
		h += 6;
	}
	data = h;
	for (uint32_t i = 0; i < nseg; i++)
		for (uint32_t b = 0; b < seg[i][0]; b++)
			p[data++] = (uint8_t)(i * 50 + b);
	return data;
}

static void test_rfc4175(void **state)
{
	struct vfgx_format f;
	struct vfgx_seq_state st = { 0 };
	struct vfgx_fmt_pkt o = { 0 };
	static uint8_t p[2048];
	/* 320x240 UYVY: stride 640 bytes; a pixel group 4 bytes, 2 pixels */
	const uint16_t two[2][3] = { { 8, 0, 316 }, { 640, 1, 0 } };
	const uint16_t past_frame[1][3] = { { 8, 240, 0 } };
	const uint16_t past_line[1][3] = { { 16, 3, 316 } };
	uint32_t n;

	(void)state;
	profile("rtp-video", &f);
	f.stride = 640;
	f.chunk_bytes = 640 * 240;
	n = rfc4175_pkt(p, 3, 2, two);
	assert_int_equal(run_rules(&f, &st, p, n, &o), VFGX_FD_OK);
	assert_int_equal(o.seq, 7); /* RTP's 16 bits: the default */
	f.seq_bits = 32;            /* a sender that keeps the extended one */
	memset(&st, 0, sizeof(st));
	assert_int_equal(run_rules(&f, &st, p, n, &o), VFGX_FD_OK);
	assert_int_equal(o.seq, (3u << 16) | 7);
	assert_int_equal(o.chunk, 1234);         /* the frame: its timestamp */
	assert_int_equal(o.nseg, 2);
	assert_int_equal(o.seg[0].dst_off, 316 / 2 * 4); /* line 0, pixel 316 */
	assert_int_equal(o.seg[0].len, 8);
	assert_int_equal(o.seg[0].src_off, 12 + 2 + 12);
	assert_int_equal(o.seg[1].dst_off, 640);          /* line 1, pixel 0 */
	assert_int_equal(o.seg[1].src_off, 12 + 2 + 12 + 8);
	assert_int_equal(o.payload_len, 648);
	/* a line past the frame's 240 */
	n = rfc4175_pkt(p, 3, 1, past_frame);
	assert_int_equal(decode(&f, p, n, &o), VFGX_FD_SEGMENT_PAST_FRAME);
	/* a segment past its line's end (632 + 16 > 640) */
	n = rfc4175_pkt(p, 3, 1, past_line);
	assert_int_equal(decode(&f, p, n, &o), VFGX_FD_SEGMENT_PAST_FRAME);
	/* segment lengths that lie: 640 claimed, the packet cut 100 short */
	n = rfc4175_pkt(p, 3, 2, two);
	assert_int_equal(decode(&f, p, n - 100, &o), VFGX_FD_BAD_LENGTH);
	/* a continuation bit on the last header: headers run off the end */
	n = rfc4175_pkt(p, 3, 1, past_frame);
	p[12 + 2 + 4] |= 0x80;
	assert_int_equal(decode(&f, p, 12 + 2 + 6, &o), VFGX_FD_FIELD_OUTSIDE);
}

/* ---- sequence extension ------------------------------------------------- */

static void test_seq_extend(void **state)
{
	struct vfgx_format f;
	struct vfgx_seq_state st = { 0 };
	uint64_t e;

	(void)state;
	/* 16 bits, RFC 3550's 3000 forward / 100 back */
	profile("rtp", &f);
	assert_int_equal(vfgx_seq_extend(&f, &st, 65534, &e), VFGX_FD_OK);
	assert_int_equal(e, 65536 + 65534);
	assert_int_equal(vfgx_seq_extend(&f, &st, 65535, &e), VFGX_FD_OK);
	assert_int_equal(vfgx_seq_extend(&f, &st, 1, &e), VFGX_FD_OK); /* wrap, 0 lost */
	assert_int_equal(e, 2 * 65536 + 1);
	assert_int_equal(vfgx_seq_extend(&f, &st, 0, &e), VFGX_FD_OK); /* late, across the wrap */
	assert_int_equal(e, 2 * 65536);
	assert_int_equal(vfgx_seq_extend(&f, &st, 65530, &e), VFGX_FD_OK); /* late, before it */
	assert_int_equal(e, 65536 + 65530);
	/* a jump of 20000: dropped; the packet after it confirms a restart */
	assert_int_equal(vfgx_seq_extend(&f, &st, 20001, &e), VFGX_FD_SEQ_JUMP);
	assert_int_equal(vfgx_seq_extend(&f, &st, 2, &e), VFGX_FD_OK); /* the old stream goes on */
	assert_int_equal(e, 2 * 65536 + 2);
	assert_int_equal(vfgx_seq_extend(&f, &st, 30000, &e), VFGX_FD_SEQ_JUMP);
	assert_int_equal(vfgx_seq_extend(&f, &st, 30001, &e), VFGX_FD_OK);
	assert_int_equal(e, 3 * 65536 + 30001);
	/* 64 bits: a jump of 2^63 is a drop, twice in a row a restart */
	profile("vfgx", &f);
	memset(&st, 0, sizeof(st));
	assert_int_equal(vfgx_seq_extend(&f, &st, 10, &e), VFGX_FD_OK);
	assert_int_equal(e, 10);
	assert_int_equal(vfgx_seq_extend(&f, &st, 10 + (1ull << 63), &e), VFGX_FD_SEQ_JUMP);
	assert_int_equal(vfgx_seq_extend(&f, &st, 11, &e), VFGX_FD_OK);
	assert_int_equal(vfgx_seq_extend(&f, &st, 5, &e), VFGX_FD_OK); /* late */
	assert_int_equal(e, 5);
	/* behind the first, still a sequence: extended; below 0: late */
	memset(&st, 0, sizeof(st));
	assert_int_equal(vfgx_seq_extend(&f, &st, 3, &e), VFGX_FD_OK);
	assert_int_equal(vfgx_seq_extend(&f, &st, 1, &e), VFGX_FD_OK);
	assert_int_equal(e, 1);
	assert_int_equal(vfgx_seq_extend(&f, &st, UINT64_MAX, &e), VFGX_FD_LATE);
	/* 4 bits (VITA-49): every value is ahead or behind, never a jump */
	profile("vita49", &f);
	memset(&st, 0, sizeof(st));
	for (uint64_t i = 0; i < 100; i++) {
		assert_int_equal(vfgx_seq_extend(&f, &st, i & 15, &e), VFGX_FD_OK);
		assert_int_equal(e, 16 + i);
	}
	/* 8 bits (eCPRI) */
	profile("ecpri", &f);
	memset(&st, 0, sizeof(st));
	for (uint64_t i = 250; i < 600; i++) {
		assert_int_equal(vfgx_seq_extend(&f, &st, i & 255, &e), VFGX_FD_OK);
		assert_int_equal(e, 256 + i);
	}
}

/* ---- vfgx's own header, VITA-49, eCPRI ---------------------------------- */

static void test_vfgx_vita_ecpri(void **state)
{
	struct vfgx_format f;
	struct vfgx_fmt_pkt o = { 0 };
	uint8_t p[64] = { 0 };

	(void)state;
	profile("vfgx", &f);
	vfgx_wr32(p, 3);          /* stream */
	vfgx_wr32(p + 4, 1);      /* flags: last */
	vfgx_wr64(p + 8, 77);     /* sequence */
	assert_int_equal(decode(&f, p, 40, &o), VFGX_FD_OK);
	assert_int_equal(o.stream, 3);
	assert_int_equal(o.seq, 77);
	assert_int_equal(o.end, 1);
	assert_int_equal(o.payload_off, 16);
	assert_int_equal(decode(&f, p, 15, &o), VFGX_FD_FIELD_OUTSIDE);
	f.max_streams = 3;
	assert_int_equal(decode(&f, p, 40, &o), VFGX_FD_BAD_STREAM);

	/* VITA-49.0: type 1 (IF data with stream id), TSI 1, TSF 2, count
	 * 9, 7 words: header, stream id, integer ts, 2 fractional, 2 data */
	profile("vita49", &f);
	vfgx_wr32(p, (1u << 28) | (1u << 22) | (2u << 20) | (9u << 16) | 7);
	vfgx_wr32(p + 4, 0xabc);
	vfgx_wr32(p + 8, 1700000000);
	vfgx_wr64(p + 12, 123456789);
	assert_int_equal(decode(&f, p, 28, &o), VFGX_FD_OK);
	assert_int_equal(o.stream_raw, 0xabc);
	assert_int_equal(o.seq, 9);
	assert_int_equal(o.timestamp, 1700000000);
	assert_int_equal(o.ts_frac, 123456789);
	assert_int_equal(o.payload_off, 20);
	assert_int_equal(o.payload_len, 8);
	/* packet size that lies */
	assert_int_equal(decode(&f, p, 32, &o), VFGX_FD_BAD_LENGTH);
	/* a trailer (T) and a class id (C): payload between */
	vfgx_wr32(p, (1u << 28) | (1u << 27) | (1u << 26) | (9u << 16) | 6);
	assert_int_equal(decode(&f, p, 24, &o), VFGX_FD_OK);
	assert_int_equal(o.payload_off, 16);
	assert_int_equal(o.payload_len, 4);
	/* a context packet (type 4): not data */
	vfgx_wr32(p, (4u << 28) | 7);
	assert_int_equal(decode(&f, p, 28, &o), VFGX_FD_MISMATCH);

	/* eCPRI IQ data: revision 1, C 0 | type 0 | payload size 12 |
	 * PC_ID 0x0102 | SEQ_ID 0x33, E 1 sub 0 | 8 sample bytes */
	profile("ecpri", &f);
	memset(p, 0, sizeof(p));
	p[0] = 0x10;
	p[1] = 0x00;
	vfgx_wr16(p + 2, 12);
	vfgx_wr16(p + 4, 0x0102);
	p[6] = 0x33;
	p[7] = 0x80;
	assert_int_equal(decode(&f, p, 16, &o), VFGX_FD_OK);
	assert_int_equal(o.stream_raw, 0x0102);
	assert_int_equal(o.seq, 0x33);
	assert_int_equal(o.payload_off, 8);
	assert_int_equal(o.payload_len, 8);
	assert_int_equal(decode(&f, p, 20, &o), VFGX_FD_BAD_LENGTH);
	p[0] = 0x11; /* concatenated: another message follows */
	assert_int_equal(decode(&f, p, 16, &o), VFGX_FD_MISMATCH);
}

/* ---- the built-in profiles' decoders ------------------------------------- */

static int load(const char *yaml, struct vfgx_format *f);

static uint32_t kind_of(const struct vfgx_format *f)
{
	struct vfgx_fmt_plan c;

	vfgx_fmt_plan_make(f, &c);
	return c.kind;
}

/* Each built-in profile gets its straight-line decoder; a description
 * that moves a field over a profile gets the generic reading, and reads
 * the field where it says. */
static void test_kinds(void **state)
{
	static const struct {
		const char *name;
		uint32_t kind;
	} k[] = {
		{ "vfgx", VFGX_FMT_KIND_GENERIC },  { "rtp", VFGX_FMT_KIND_RTP },
		{ "rtp-video", VFGX_FMT_KIND_RTP }, { "vita49", VFGX_FMT_KIND_VITA49 },
		{ "ecpri", VFGX_FMT_KIND_ECPRI },   { "spead", VFGX_FMT_KIND_SPEAD },
		{ "vdif", VFGX_FMT_KIND_VDIF },     { "gr-udp", VFGX_FMT_KIND_GR_UDP },
		{ "gr-udp-size", VFGX_FMT_KIND_GR_UDP },
	};
	struct vfgx_format f;
	struct vfgx_fmt_pkt o = { 0 };
	uint8_t p[64] = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		profile(k[i].name, &f);
		assert_int_equal(kind_of(&f), k[i].kind);
	}
	/* eCPRI's PC_ID read as one byte at 5 (a description over the
	 * profile): 0x0102's low byte */
	assert_int_equal(load("format:\n  profile: ecpri\n  stream: {offset: 5, size: 1}\n", &f), 0);
	assert_int_equal(kind_of(&f), VFGX_FMT_KIND_GENERIC);
	p[0] = 0x10;
	vfgx_wr16(p + 2, 12);
	vfgx_wr16(p + 4, 0x0102);
	p[6] = 0x33;
	assert_int_equal(decode(&f, p, 16, &o), VFGX_FD_OK);
	assert_int_equal(o.stream_raw, 0x02);
	assert_int_equal(o.seq, 0x33);
	/* the values compared with stay the description's: another
	 * revision matched, the profile's decoder kept */
	profile("ecpri", &f);
	f.match_value[0] = 0x20;
	assert_int_equal(kind_of(&f), VFGX_FMT_KIND_ECPRI);
	assert_int_equal(decode(&f, p, 16, &o), VFGX_FD_MISMATCH);
	p[0] = 0x20;
	assert_int_equal(decode(&f, p, 16, &o), VFGX_FD_OK);
	assert_int_equal(o.stream_raw, 0x0102);
	/* RTP with its sequence moved (a 32-bit one at 12, the first CSRC
	 * word's place, a made-up header): generic, read at 12 */
	profile("rtp", &f);
	f.seq = (struct vfgx_fmt_field){ .offset = 12, .size = 4 };
	f.header_len = 16;
	assert_int_equal(kind_of(&f), VFGX_FMT_KIND_GENERIC);
	memset(p, 0, sizeof(p));
	p[0] = 0x81; /* V 2, CC 1 */
	vfgx_wr16(p + 2, 9);
	vfgx_wr32(p + 8, 4);
	vfgx_wr32(p + 12, 0x01020304);
	assert_int_equal(decode(&f, p, 40, &o), VFGX_FD_OK);
	assert_int_equal(o.seq, 0x01020304);
	assert_int_equal(o.payload_off, 16);
	/* gr-udp-size with a length field of another width: generic */
	profile("gr-udp-size", &f);
	f.length.size = 4;
	assert_int_equal(kind_of(&f), VFGX_FMT_KIND_GENERIC);
}

/* ---- YAML and the check -------------------------------------------------- */

static int load(const char *yaml, struct vfgx_format *f)
{
	char path[] = "/tmp/test_format_XXXXXX";
	int fd = mkstemp(path), ret;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, yaml, strlen(yaml)), (ssize_t)strlen(yaml));
	close(fd);
	ret = vfgx_format_load_file(ctx, path, f);
	unlink(path);
	return ret;
}

static void test_yaml(void **state)
{
	struct vfgx_format f;
	struct vfgx_fmt_pkt o = { 0 };
	uint8_t p[64] = { 0 };

	(void)state;
	/* a header nobody built in: 2-byte little-endian stream at 0, a
	 * 3-bit sequence in bits 5..7 of byte 2, end in bit 0 of byte 2 */
	assert_int_equal(load("pipeline:\n  format:\n    profile: vfgx\n    header_len: 4\n"
			      "    stream: {offset: 0, size: 2, endian: little}\n"
			      "    seq: {offset: 2, size: 1, shift: 5, bits: 3}\n"
			      "    end: {offset: 2, bit: 0}\n"
			      "    seq_bits: 3\n    streams: 600\n", &f), 0);
	p[0] = 0x58;
	p[1] = 0x02; /* stream 0x0258 = 600: beyond 600 streams */
	p[2] = (5 << 5) | 1;
	assert_int_equal(decode(&f, p, 10, &o), VFGX_FD_BAD_STREAM);
	p[0] = 0x57;
	assert_int_equal(decode(&f, p, 10, &o), VFGX_FD_OK);
	assert_int_equal(o.stream, 599);
	assert_int_equal(o.seq, 5);
	assert_int_equal(o.end, 1);
	assert_int_equal(o.payload_off, 4);
	assert_int_equal(f.seq_max_dropout, 4);
	/* a field outside the packet: the sequence at 100 of a 50-byte one */
	assert_int_equal(load("format:\n  profile: gr-udp\n  seq: {offset: 100, size: 8}\n", &f), 0);
	assert_int_equal(decode(&f, p, 50, &o), VFGX_FD_FIELD_OUTSIDE);
	/* ... and against the smallest packet the port receives: one line */
	assert_int_equal(vfgx_format_check(ctx, &f, 64, 1472), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "seq ends at byte 108, past the smallest UDP payload"));
	assert_null(strchr(vfgx_last_error(ctx), '\n'));
	/* the errors of a description, each one line with its place */
	assert_int_equal(load("format:\n  profile: nope\n", &f), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), ":2:12: "));
	assert_non_null(strstr(vfgx_last_error(ctx), "unknown profile 'nope'; built in: vfgx, rtp"));
	assert_int_equal(load("format:\n  seq: {offset: 2, size: 9}\n", &f), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "must be 1..8"));
	assert_int_equal(load("format:\n  seq: {offset: 2, size: 1, shift: 4, bits: 5}\n", &f), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "the bits must lie inside"));
	assert_int_equal(load("format:\n  profile: vdif\n", &f), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "seq_major_mult"));
	assert_int_equal(load("format:\n  profile: vdif\n  frames_per_second: 25600\n", &f), 0);
	assert_int_equal(f.seq_major_mult, 25600);
	assert_int_equal(load("format:\n  profile: rtp\n  seq_bits: 8\n  seq_max_dropout: 200\n", &f),
			 -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "exceed the 8-bit sequence's 256 values"));
	assert_int_equal(load("format:\n  profile: rtp-video\n  width: 3840\n  height: 2160\n", &f), 0);
	assert_int_equal(f.stride, 7680);
	assert_int_equal(f.chunk_bytes, 7680ull * 2160);
	assert_int_equal(load("format:\n  profile: rtp\n  stream_ids: [0xdeadbeef, 17]\n", &f), 0);
	assert_int_equal(f.n_stream_ids, 2);
	assert_int_equal(f.max_streams, 2);
	assert_int_equal(f.stream_ids[0], 0xdeadbeef);
	assert_int_equal(load("format:\n  match: [{offset: 0, size: 1, value: 300}]\n", &f), -EINVAL);
	assert_int_equal(load("format:\n  colour: blue\n", &f), -EINVAL);
	/* names of every drop reason, distinct */
	for (int a = 1; a < VFGX_FD_MAX; a++)
		for (int b = a + 1; b < VFGX_FD_MAX; b++)
			assert_string_not_equal(vfgx_fmt_drop_name(a), vfgx_fmt_drop_name(b));
	/* every built-in profile passes its own check at 1500-byte packets,
	 * except the composite one that needs its rate */
	for (unsigned i = 0; vfgx_format_profile_name(i); i++) {
		profile(vfgx_format_profile_name(i), &f);
		if (!strcmp(f.name, "vdif"))
			f.seq_major_mult = 1;
		assert_int_equal(vfgx_format_check(ctx, &f, 48, 1472), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spead),
		cmocka_unit_test(test_spead_bad),
		cmocka_unit_test(test_vdif),
		cmocka_unit_test(test_rtp),
		cmocka_unit_test(test_stream_index),
		cmocka_unit_test(test_rfc4175),
		cmocka_unit_test(test_seq_extend),
		cmocka_unit_test(test_vfgx_vita_ecpri),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_yaml),
	};

	return cmocka_run_group_tests(tests, ctx_quiet_setup, ctx_teardown);
}
