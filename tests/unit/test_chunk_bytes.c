/* test_chunk_bytes.c - the cpu engine with a producer's header
 * (pipeline.format): packets written byte by byte from the specifications
 * (RFC 3550 + RFC 4175 raw video, SPEAD-64-48, GNU Radio's sequence
 * header, VITA-49, eCPRI) go through the processor (vfgx_proc_burst) into
 * chunks by bytes: each segment at line x stride + pixel offset, each
 * SPEAD piece at its heap offset; a frame complete with every byte, one
 * with a hole closed with its missing bytes, never mixed with the next;
 * the end mark; the header metadata (first_seq, hdr_ts, bytes); and every
 * format drop reason counted under its own name. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>
#include <vfgx/chunk.h>
#include <vfgx/format.h>

#include "pipeline/chunkset.h"
#include "chunk_rig.h"
#include "pipeline/proc_steer.h"

#include "unit_ctx.h"

/* A tiny video: 8 x 4 pixels UYVY (4 bytes per 2 pixels): 16-byte lines,
 * 64-byte frames; each packet carries two half lines (two segments). */
#define W 8
#define H 4
#define STRIDE (W / 2 * 4)
#define FRAME (STRIDE * H)
#define SSRC 0x11223344u

static uint32_t ssrc = SSRC; /* the SSRC video_pkt writes */

static uint8_t pixel(uint32_t frame, uint32_t off)
{
	return (uint8_t)(frame * 31 + off * 7 + 1);
}

/* RFC 3550 header (V=2, PT 96), RFC 4175's extended sequence (0), then
 * segment headers (length, F|line, C|offset) and the segments' bytes. */
static uint32_t video_pkt(uint8_t *p, uint16_t seq, uint32_t ts, int marker,
			  uint32_t frame, uint32_t line, uint32_t nseg,
			  uint32_t seg_len, uint32_t pix0)
{
	uint32_t h = 14, src;

	p[0] = 0x80;
	p[1] = (uint8_t)((marker ? 0x80 : 0) | 96);
	p[2] = (uint8_t)(seq >> 8);
	p[3] = (uint8_t)seq;
	for (int i = 0; i < 4; i++) {
		p[4 + i] = (uint8_t)(ts >> (24 - 8 * i));
		p[8 + i] = (uint8_t)(ssrc >> (24 - 8 * i));
	}
	p[12] = p[13] = 0;
	for (uint32_t s = 0; s < nseg; s++) {
		uint32_t pix = pix0 + s * (seg_len / 4 * 2);

		p[h] = (uint8_t)(seg_len >> 8);
		p[h + 1] = (uint8_t)seg_len;
		p[h + 2] = (uint8_t)(line >> 8);
		p[h + 3] = (uint8_t)line;
		p[h + 4] = (uint8_t)((pix >> 8) | (s + 1 < nseg ? 0x80 : 0));
		p[h + 5] = (uint8_t)pix;
		h += 6;
	}
	src = h;
	for (uint32_t s = 0; s < nseg; s++) {
		uint32_t pix = pix0 + s * (seg_len / 4 * 2);
		uint32_t dst = line * STRIDE + pix / 2 * 4;

		for (uint32_t i = 0; i < seg_len; i++)
			p[src++] = pixel(frame, dst + i);
	}
	return src;
}

/* Frame f's packets: one per line (two 8-byte segments), the last with
 * the marker; RTP timestamps 3000 apart (90 kHz, 30 fps). */
static uint32_t frame_pkt(uint8_t *p, uint32_t frame, uint32_t line)
{
	return video_pkt(p, (uint16_t)(65530 + frame * H + line), 1000 + frame * 3000,
			 line == H - 1, frame, line, 2, STRIDE / 2, 0);
}

struct rig {
	struct vfgx_format f;
	struct vfgx_chunkset *cs;
	vfgx_proc *p;
};

static void rig_make(struct rig *r, uint32_t packets,
		     uint32_t payload_bytes)
{
	struct vfgx_pipeline_config pc;
	struct vfgx_chunk_config c;

	vfgx_pipeline_config_default(&pc);
	vfgx_chunk_config_default(&c);
	c.packets = packets;
	c.payload_bytes = payload_bytes;
	c.in_flight = 4;
	c.streams = 2;
	c.close_distance = 2;
	pc.chunks = &c;
	pc.format = &r->f;
	assert_int_equal(vfgx_chunkset_create_fmt(ctx, &c, &r->f, &r->cs), 0);
	assert_int_equal(vfgx_proc_create(ctx, &pc, &r->p), 0);
	assert_int_equal(vfgx_proc_set_chunks(r->p, r->cs), 0);
}

static void rig_video(struct rig *r)
{
	assert_int_equal(vfgx_format_profile("rtp-video", &r->f), 0);
	r->f.stride = STRIDE;
	r->f.chunk_bytes = FRAME;
	r->f.n_stream_ids = 1;
	r->f.stream_ids[0] = SSRC;
	r->f.max_streams = 1;
	rig_make(r, 64, 64);
}

static void check_frame(const struct vfgx_chunk *d, uint32_t frame)
{
	const uint8_t *b = d->data;

	for (uint32_t i = 0; i < FRAME; i++)
		assert_int_equal(b[i], pixel(frame, i));
}

static uint64_t drops(struct rig *r, enum vfgx_drop_reason why)
{
	struct vfgx_pipeline_stats st;

	vfgx_proc_stats(r->p, &st);
	return st.drops[why];
}

/* Three frames, the second's packets reordered with its marker first:
 * every frame complete, byte for byte, with its header metadata. */
static void test_video_frames(void **state)
{
	static const uint32_t order[H] = { 3, 1, 0, 2 };
	struct rig r;
	uint8_t p[256];
	struct vfgx_chunk *d;

	(void)state;
	rig_video(&r);
	for (uint32_t f = 0; f < 3; f++)
		for (uint32_t l = 0; l < H; l++)
			proc_feed(r.p, p, frame_pkt(p, f, f == 1 ? order[l] : l));
	for (uint32_t f = 0; f < 3; f++) {
		d = next_ready(r.cs);
		assert_non_null(d);
		assert_int_equal(d->index, f);
		assert_int_equal(d->flags, VFGX_CHUNK_COMPLETE);
		assert_int_equal(d->bytes, FRAME);
		assert_int_equal(d->missing_bytes, 0);
		assert_int_equal(d->present_count, H);
		assert_int_equal(d->hdr_ts, 1000 + f * 3000);
		assert_int_equal(d->hdr_flags, VFGX_CHUNK_HDR_TS | VFGX_CHUNK_ENDED);
		/* the first that arrived: 16-bit 65530 + 4f, one turn in (2^16) */
		assert_int_equal(d->first_seq,
				 (1ull << 16) + 65530 + f * H + (f == 1 ? order[0] : 0));
		check_frame(d, f);
		vfgx_chunkset_put(r.cs, d->stream, d->index);
	}
	assert_null(next_ready(r.cs));
	proc_rig_free(r.p, r.cs);
}

/* Frame 0 loses line 2: once the stream is close_distance (2) frames on,
 * it goes out closed with 16 bytes missing, its other lines intact and
 * not mixed with frame 1's; frames 1 and 2 complete. */
static void test_video_hole(void **state)
{
	struct rig r;
	uint8_t p[256];
	struct vfgx_chunk *d;
	const uint8_t *b;

	(void)state;
	rig_video(&r);
	for (uint32_t f = 0; f < 3; f++)
		for (uint32_t l = 0; l < H; l++)
			if (f != 0 || l != 2)
				proc_feed(r.p, p, frame_pkt(p, f, l));
	d = next_ready(r.cs);
	assert_non_null(d);
	assert_int_equal(d->index, 0);
	assert_int_equal(d->flags, VFGX_CHUNK_BY_DISTANCE);
	assert_int_equal(d->missing_bytes, STRIDE);
	assert_int_equal(d->present_count, H - 1);
	b = d->data;
	for (uint32_t i = 0; i < FRAME; i++)
		if (i / STRIDE != 2)
			assert_int_equal(b[i], pixel(0, i));
	vfgx_chunkset_put(r.cs, d->stream, d->index);
	for (uint32_t f = 1; f < 3; f++) {
		d = next_ready(r.cs);
		assert_non_null(d);
		assert_int_equal(d->flags, VFGX_CHUNK_COMPLETE);
		check_frame(d, f);
		vfgx_chunkset_put(r.cs, d->stream, d->index);
	}
	/* line 2 of frame 0 after its frame went out: late, not written */
	proc_feed(r.p, p, frame_pkt(p, 0, 2));
	assert_int_equal(drops(&r, VFGX_DROP_LATE), 1);
	/* a repeated packet of the open frame 3: duplicate */
	proc_feed(r.p, p, frame_pkt(p, 3, 0));
	proc_feed(r.p, p, frame_pkt(p, 3, 0));
	assert_int_equal(drops(&r, VFGX_DROP_DUPLICATE), 1);
	/* the end of input closes frame 3 with what it has */
	vfgx_proc_flush(r.p);
	d = next_ready(r.cs);
	assert_non_null(d);
	assert_int_equal(d->flags, VFGX_CHUNK_BY_END);
	assert_int_equal(d->missing_bytes, FRAME - STRIDE);
	assert_int_equal(d->hdr_flags, VFGX_CHUNK_HDR_TS);
	proc_rig_free(r.p, r.cs);
}

/* A frame smaller than chunk_bytes: the marker's packet says where it
 * ends, and with every byte up to there the frame is complete. */
static void test_video_end_mark(void **state)
{
	struct rig r;
	uint8_t p[256];
	struct vfgx_chunk *d;

	(void)state;
	rig_video(&r);
	/* the cs was made from r.f: make a new one with a larger chunk */
	proc_rig_free(r.p, r.cs);
	assert_int_equal(vfgx_format_profile("rtp-video", &r.f), 0);
	r.f.stride = STRIDE;
	r.f.chunk_bytes = FRAME * 2; /* 8 lines configured, 4 sent */
	r.f.n_stream_ids = 1;
	r.f.stream_ids[0] = SSRC;
	r.f.max_streams = 1;
	rig_make(&r, 64, 64);
	for (uint32_t l = 0; l < H; l++)
		proc_feed(r.p, p, frame_pkt(p, 0, l));
	d = next_ready(r.cs);
	assert_non_null(d);
	assert_int_equal(d->flags, VFGX_CHUNK_COMPLETE);
	assert_int_equal(d->bytes, FRAME);
	assert_true(d->hdr_flags & VFGX_CHUNK_ENDED);
	check_frame(d, 0);
	proc_rig_free(r.p, r.cs);
}

/* SPEAD-64-48, as test_format.c writes it: header, four immediate items
 * (heap counter, heap size, heap offset, payload length), payload. */
static uint32_t spead_pkt(uint8_t *p, uint64_t cnt, uint64_t size, uint64_t off,
			  uint64_t plen)
{
	static const uint8_t hdr[8] = { 0x53, 0x04, 0x02, 0x06, 0, 0, 0, 4 };
	uint64_t items[4] = {
		(1ull << 63) | (0x1ull << 48) | cnt,
		(1ull << 63) | (0x2ull << 48) | size,
		(1ull << 63) | (0x3ull << 48) | off,
		(1ull << 63) | (0x4ull << 48) | plen,
	};

	memcpy(p, hdr, 8);
	for (int i = 0; i < 4; i++)
		for (int b = 0; b < 8; b++)
			p[8 + 8 * i + b] = (uint8_t)(items[i] >> (56 - 8 * b));
	for (uint64_t i = 0; i < plen; i++)
		p[40 + i] = (uint8_t)(cnt * 13 + off + i);
	return (uint32_t)(40 + plen);
}

/* Heaps of 3 x 32 bytes, pieces out of order: each at its heap offset,
 * the heap complete when its size is reached; a heap bigger than the
 * chunk and an offset off the piece grid are dropped. */
static void test_spead_heaps(void **state)
{
	struct rig r;
	uint8_t p[256];
	struct vfgx_chunk *d;
	const uint8_t *b;

	(void)state;
	assert_int_equal(vfgx_format_profile("spead", &r.f), 0);
	r.f.chunk_bytes = 128;
	rig_make(&r, 4, 32);
	proc_feed(r.p, p, spead_pkt(p, 7, 96, 64, 32));
	proc_feed(r.p, p, spead_pkt(p, 7, 96, 0, 32));
	assert_null(next_ready(r.cs));
	proc_feed(r.p, p, spead_pkt(p, 7, 96, 32, 32));
	d = next_ready(r.cs);
	assert_non_null(d);
	assert_int_equal(d->flags, VFGX_CHUNK_COMPLETE);
	assert_int_equal(d->bytes, 96);
	/* the heap counter extended: one turn (2^48) in, docs/formats.md */
	assert_int_equal(d->first_seq, (1ull << 48) + 7);
	assert_int_equal(d->hdr_flags, VFGX_CHUNK_ENDED);
	b = d->data;
	for (uint32_t i = 0; i < 96; i++)
		assert_int_equal(b[i], (uint8_t)(7 * 13 + i));
	vfgx_chunkset_put(r.cs, d->stream, d->index);
	/* heap size 256 > chunk_bytes 128 */
	proc_feed(r.p, p, spead_pkt(p, 8, 256, 0, 32));
	assert_int_equal(drops(&r, VFGX_DROP_OFFSET_PAST_CHUNK), 1);
	/* offset 16: not on the 32-byte piece grid of the present map */
	proc_feed(r.p, p, spead_pkt(p, 8, 96, 16, 32));
	assert_int_equal(drops(&r, VFGX_DROP_OFFSET_PAST_CHUNK), 2);
	/* heap offset past its heap */
	proc_feed(r.p, p, spead_pkt(p, 8, 96, 96, 32));
	assert_int_equal(drops(&r, VFGX_DROP_OFFSET_PAST_CHUNK), 3);
	/* a length item that lies */
	{
		uint32_t n = spead_pkt(p, 8, 96, 0, 32);

		proc_feed(r.p, p, n - 1);
		assert_int_equal(drops(&r, VFGX_DROP_BAD_LENGTH), 1);
	}
	proc_rig_free(r.p, r.cs);
}

/* What the user stage saw (test_spead_delivered). */
struct seen {
	uint32_t n, len;
	uint64_t seq;
	uint8_t first;
};

static int seen_stage(void *user, uint32_t stream, uint64_t seq, const uint8_t *payload,
		      uint32_t len)
{
	struct seen *s = user;

	(void)stream;
	s->n++;
	s->seq = seq;
	s->len = len;
	s->first = payload[0];
	return 0;
}

/* SPEAD without chunks or reorder (the cpu engine's per-kind spead
 * function): the packet senders write, the same items in another order
 * or with the reserved bytes set (read item by item: fmt_any), each
 * delivered with its heap counter extended; a lying length dropped; a
 * format whose streams leave out SPEAD's stream 0 drops every packet as
 * bad_stream. */
static void test_spead_delivered(void **state)
{
	struct vfgx_pipeline_config pc;
	struct vfgx_format f;
	struct seen s = { 0 };
	struct vfgx_pipeline_stats st;
	vfgx_proc *p = NULL;
	uint8_t pkt[256];
	uint32_t n;

	(void)state;
	assert_int_equal(vfgx_format_profile("spead", &f), 0);
	vfgx_pipeline_config_default(&pc);
	pc.reorder = false;
	pc.format = &f;
	assert_int_equal(vfgx_proc_create(ctx, &pc, &p), 0);
	vfgx_proc_set_user_stage(p, seen_stage, &s);
	n = spead_pkt(pkt, 7, 96, 32, 32);
	proc_feed(p, pkt, n);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.seq, (1ull << 48) + 7);
	assert_int_equal(s.len, 32);
	assert_int_equal(s.first, (uint8_t)(7 * 13 + 32));
	/* heap size and heap offset items swapped */
	n = spead_pkt(pkt, 8, 96, 64, 32);
	for (int b = 0; b < 8; b++) {
		uint8_t t = pkt[16 + b];

		pkt[16 + b] = pkt[24 + b];
		pkt[24 + b] = t;
	}
	proc_feed(p, pkt, n);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.seq, (1ull << 48) + 8);
	assert_int_equal(s.first, (uint8_t)(8 * 13 + 64));
	/* the reserved bytes set */
	n = spead_pkt(pkt, 9, 96, 0, 32);
	pkt[5] = 1;
	proc_feed(p, pkt, n);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.seq, (1ull << 48) + 9);
	/* payload length 32 claimed, 31 bytes sent */
	n = spead_pkt(pkt, 9, 96, 32, 32);
	proc_feed(p, pkt, n - 1);
	assert_int_equal(s.n, 3);
	vfgx_proc_stats(p, &st);
	assert_int_equal(st.drops[VFGX_DROP_BAD_LENGTH], 1);
	assert_int_equal(st.delivered, 3);
	vfgx_proc_destroy(p);

	/* the format's one stream id is 5: SPEAD's stream (raw 0) refused */
	f.n_stream_ids = 1;
	f.stream_ids[0] = 5;
	assert_int_equal(vfgx_proc_create(ctx, &pc, &p), 0);
	vfgx_proc_set_user_stage(p, seen_stage, &s);
	proc_feed(p, pkt, spead_pkt(pkt, 10, 96, 0, 32));
	assert_int_equal(s.n, 3);
	vfgx_proc_stats(p, &st);
	assert_int_equal(st.drops[VFGX_DROP_BAD_STREAM], 1);
	assert_int_equal(st.delivered, 0);
	vfgx_proc_destroy(p);
}

/* RTP without stream_ids: SSRCs get stream indices in order of arrival
 * (0xffffffff too); one past the chunk streams is a bad_stream drop. */
static void test_learned_ssrc(void **state)
{
	static const uint32_t ssrcs[3] = { 0xffffffffu, 7, 0x5555 };
	struct rig r;
	uint8_t p[256];
	struct vfgx_chunk *d;
	uint32_t got[2] = { 0, 0 };

	(void)state;
	assert_int_equal(vfgx_format_profile("rtp-video", &r.f), 0);
	r.f.stride = STRIDE;
	r.f.chunk_bytes = FRAME;
	rig_make(&r, 64, 64);
	for (uint32_t f = 0; f < 2; f++)
		for (uint32_t s = 0; s < 3; s++)
			for (uint32_t l = 0; l < H; l++) {
				ssrc = ssrcs[s];
				proc_feed(r.p, p, frame_pkt(p, f, l));
			}
	ssrc = SSRC;
	while ((d = next_ready(r.cs))) {
		assert_int_equal(d->flags, VFGX_CHUNK_COMPLETE);
		check_frame(d, (uint32_t)d->index);
		got[d->stream]++;
		vfgx_chunkset_put(r.cs, d->stream, d->index);
	}
	assert_int_equal(got[0], 2);
	assert_int_equal(got[1], 2);
	assert_int_equal(drops(&r, VFGX_DROP_BAD_STREAM), 2 * H);
	proc_rig_free(r.p, r.cs);
}

/* Every format drop reason, each under its own name. */
static void test_drop_reasons(void **state)
{
	struct rig r;
	uint8_t p[256];
	uint32_t n;

	(void)state;
	assert_string_equal(vfgx_drop_reason_name(VFGX_DROP_FIELD_OUTSIDE), "field_outside");
	assert_string_equal(vfgx_drop_reason_name(VFGX_DROP_BAD_LENGTH), "bad_length");
	assert_string_equal(vfgx_drop_reason_name(VFGX_DROP_MISMATCH), "mismatch");
	assert_string_equal(vfgx_drop_reason_name(VFGX_DROP_OFFSET_PAST_CHUNK),
			    "offset_past_chunk");
	assert_string_equal(vfgx_drop_reason_name(VFGX_DROP_SEGMENT_PAST_FRAME),
			    "segment_past_frame");
	assert_string_equal(vfgx_drop_reason_name(VFGX_DROP_SEQ_JUMP), "seq_jump");

	rig_video(&r);
	/* a field outside: 10 bytes, shorter than RTP's 12 */
	n = frame_pkt(p, 0, 0);
	proc_feed(r.p, p, 10);
	assert_int_equal(drops(&r, VFGX_DROP_FIELD_OUTSIDE), 1);
	/* RTP version 1: mismatch */
	p[0] = 0x40;
	proc_feed(r.p, p, n);
	assert_int_equal(drops(&r, VFGX_DROP_MISMATCH), 1);
	/* a segment length past the packet: a length field that lies */
	n = frame_pkt(p, 0, 0);
	p[14] = 0x7f;
	proc_feed(r.p, p, n);
	assert_int_equal(drops(&r, VFGX_DROP_BAD_LENGTH), 1);
	/* a segment on line H (past the 4-line frame) */
	n = video_pkt(p, 1, 1000, 0, 0, H, 1, STRIDE / 2, 0);
	proc_feed(r.p, p, n);
	assert_int_equal(drops(&r, VFGX_DROP_SEGMENT_PAST_FRAME), 1);
	/* another SSRC: a stream beyond the configured ones */
	n = frame_pkt(p, 0, 0);
	p[11] ^= 1;
	proc_feed(r.p, p, n);
	assert_int_equal(drops(&r, VFGX_DROP_BAD_STREAM), 1);
	/* nothing of these was written: no chunk was even opened */
	assert_null(next_ready(r.cs));
	vfgx_proc_flush(r.p);
	assert_null(next_ready(r.cs));
	proc_rig_free(r.p, r.cs);

	/* gr-udp's 64-bit sequence jumping by 2^63 */
	assert_int_equal(vfgx_format_profile("gr-udp", &r.f), 0);
	r.f.max_streams = 1;
	rig_make(&r, 4, 16);
	memset(p, 0, 24);
	p[0] = 1; /* little-endian 1 */
	proc_feed(r.p, p, 24);
	p[7] = 0x80; /* 1 + 2^63 */
	proc_feed(r.p, p, 24);
	assert_int_equal(drops(&r, VFGX_DROP_SEQ_JUMP), 1);
	proc_rig_free(r.p, r.cs);
}

/* gr-udp places by slots: the 64-bit sequence (from 1) is the packet
 * index; the chunk carries first_seq, and no header timestamp. */
static void test_slot_format(void **state)
{
	struct rig r;
	uint8_t p[64];
	struct vfgx_chunk *d;

	(void)state;
	assert_int_equal(vfgx_format_profile("gr-udp", &r.f), 0);
	r.f.max_streams = 1;
	rig_make(&r, 4, 16);
	for (uint64_t s = 4; s < 8; s++) {
		memset(p, 0, sizeof(p));
		p[0] = (uint8_t)s;
		for (int i = 0; i < 16; i++)
			p[8 + i] = (uint8_t)(s * 16 + (uint64_t)i);
		proc_feed(r.p, p, 24);
	}
	d = next_ready(r.cs);
	assert_non_null(d);
	assert_int_equal(d->flags, VFGX_CHUNK_COMPLETE);
	assert_int_equal(d->index, 1);
	assert_int_equal(d->first_seq, 4);
	assert_int_equal(d->hdr_flags, 0);
	assert_int_equal(d->bytes, 64);
	for (int i = 0; i < 64; i++)
		assert_int_equal(((const uint8_t *)d->data)[i], (uint8_t)(64 + i));
	proc_rig_free(r.p, r.cs);
}

/* pipeline.format in a config: a profile name or a map; an unknown
 * profile is one line; SPEAD with a reorder window and no chunks is
 * refused with one line. */
static void test_config(void **state)
{
	static const char *const ok = "pipeline:\n  format: rtp-video\n";
	static const char *const bad = "pipeline:\n  format: rtpx\n";
	static const char *const spead =
		"pipeline:\n  format: {profile: spead}\n";
	struct vfgx_config *cfg;

	(void)state;
	assert_int_equal(vfgx_config_load_string(ctx, ok, strlen(ok), "t.yaml", &cfg), 0);
	assert_non_null(cfg->pipeline.format);
	assert_string_equal(cfg->pipeline.format->name, "rtp-video");
	vfgx_config_destroy(cfg);
	assert_int_equal(vfgx_config_load_string(ctx, bad, strlen(bad), "t.yaml", &cfg), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "unknown profile 'rtpx'"));
	assert_null(strchr(vfgx_last_error(ctx), '\n'));
	assert_int_equal(vfgx_config_load_string(ctx, spead, strlen(spead), "t.yaml", &cfg), 0);
	assert_int_equal(vfgx_pipeline_check(ctx, &cfg->pipeline), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "use pipeline.chunks"));
	vfgx_config_destroy(cfg);
}

/* A session over the loopback generator (vfgx's header: stream u32 at
 * 0, sequence u64 at 8) read through a description of it with only a
 * 12-bit sequence: every record delivered once, in order, its sequence
 * extended across 12-bit wraps; and a description whose field lies past
 * the rx buffers' largest payload is one error line at create. */
static const char *const session_yaml =
	"log_level: error\n"
	"memory_regions: [{name: rx, kind: host, buf_size: %u, num_bufs: 4096}]\n"
	"interfaces:\n"
	"  - name: lo0\n"
	"    backend: loopback\n"
	"    rx: {queues: [{id: 0, memory_region: rx, batch_size: 64}]}\n"
	"    loopback: {packets: 20000, packet_size: 200, flows: 3, dst_port: 5000}\n"
	"pipeline:\n"
	"  device: cpu\n"
	"  workers: 1\n"
	"  format:\n"
	"    header_len: 16\n"
	"    stream: {offset: 0, size: 4}\n"
	"    seq: {offset: %u, size: 8, bits: 12}\n"
	"    seq_bits: 12\n"
	"    seq_max_dropout: 2048\n"
	"    seq_max_misorder: 2048\n";

/* A consumer may read packets x payload_bytes at a chunk's data
 * (vfgx/chunk.h; the recorder's rows, Python's arrays): by bytes too,
 * where the frame (64 bytes here) is smaller than that (8 KiB).  Every
 * ring slot's data area holds it, below its own present map and the next
 * slot, and a consumer thread reading it whole while the placer fills the
 * next frames sees its frame, then zeros: never the present map, the
 * lengths or another frame's bytes (#38: before, it read the next ring
 * slot as the placer wrote it, a race ThreadSanitizer reported between
 * place_bytes and the HDF5 recorder's pwrite). */
#define WHOLE_PACKETS 64
#define WHOLE_PAYLOAD 128
#define WHOLE_BYTES (WHOLE_PACKETS * WHOLE_PAYLOAD)
#define WHOLE_FRAMES 48

struct whole_reader {
	struct vfgx_chunkset *cs;
	uint8_t buf[WHOLE_BYTES];
	uint32_t chunks, out_of_order, bad_frame, bad_tail;
};

static void *read_whole(void *arg)
{
	struct whole_reader *w = arg;
	struct vfgx_chunk *d;
	int ret;

	while ((ret = vfgx_chunkset_get(w->cs, 1000, &d)) != -ENODATA) {
		uint32_t f;

		if (ret)
			continue;
		/* what rec_stage and H5Dwrite_chunk read */
		memcpy(w->buf, d->data, (size_t)d->packets * d->payload_bytes);
		f = (uint32_t)d->index;
		w->out_of_order += d->index != w->chunks;
		for (uint32_t i = 0; i < FRAME; i++)
			if (w->buf[i] != pixel(f, i)) {
				w->bad_frame++;
				break;
			}
		for (uint32_t i = FRAME; i < WHOLE_BYTES; i++)
			if (w->buf[i]) {
				w->bad_tail++;
				break;
			}
		w->chunks++;
		vfgx_chunkset_put(w->cs, d->stream, d->index);
	}
	return NULL;
}

static void test_video_read_whole(void **state)
{
	struct whole_reader *w = calloc(1, sizeof(*w));
	struct rig r;
	uint8_t p[256];
	pthread_t t;

	(void)state;
	assert_non_null(w);
	assert_int_equal(vfgx_format_profile("rtp-video", &r.f), 0);
	r.f.stride = STRIDE;
	r.f.chunk_bytes = FRAME;
	r.f.n_stream_ids = 1;
	r.f.stream_ids[0] = SSRC;
	r.f.max_streams = 1;
	rig_make(&r, WHOLE_PACKETS, WHOLE_PAYLOAD);
	for (uint32_t s = 0; s < r.cs->conf.streams; s++)
		for (uint32_t k = 0; k < r.cs->conf.in_flight; k++) {
			const struct vfgx_chunk *d = &r.cs->streams[s].desc[k];
			const uint8_t *end = (const uint8_t *)d->data + WHOLE_BYTES;

			assert_true((const uint8_t *)d->present >= end);
			assert_true((const uint8_t *)d->lens >= end);
			if (k + 1 < r.cs->conf.in_flight)
				assert_true((const uint8_t *)r.cs->streams[s].desc[k + 1].data >= end);
		}
	w->cs = r.cs;
	assert_int_equal(pthread_create(&t, NULL, read_whole, w), 0);
	for (uint32_t f = 0; f < WHOLE_FRAMES; f++)
		for (uint32_t l = 0; l < H; l++)
			proc_feed(r.p, p, frame_pkt(p, f, l));
	vfgx_chunkset_flush(r.cs, 0);
	vfgx_chunkset_finish(r.cs);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(w->chunks, WHOLE_FRAMES);
	assert_int_equal(w->out_of_order, 0);
	assert_int_equal(w->bad_frame, 0);
	assert_int_equal(w->bad_tail, 0);
	proc_rig_free(r.p, r.cs);
	free(w);
}

static void test_session(void **state)
{
	char yaml[1024];
	vfgx_session *s;
	struct vfgx_pipeline_stats st;
	int n;

	(void)state;
	n = snprintf(yaml, sizeof(yaml), session_yaml, 2048u, 8u);
	assert_int_equal(vfgx_session_create_text(ctx, yaml, (size_t)n, "fmt.yaml", NULL, &s), 0);
	assert_int_equal(vfgx_session_start(s), 0);
	while (!vfgx_session_done(s))
		;
	vfgx_session_stop(s);
	vfgx_session_stats(s, &st);
	assert_int_equal(st.packets, 20000);
	assert_int_equal(st.delivered, 20000);
	assert_int_equal(st.order_errors, 0);
	assert_int_equal(st.gaps, 0);
	vfgx_session_destroy(s);

	/* the sequence at byte 250: past 256-byte buffers' 214-byte payload */
	n = snprintf(yaml, sizeof(yaml), session_yaml, 256u, 250u);
	assert_int_equal(vfgx_session_create_text(ctx, yaml, (size_t)n, "fmt.yaml", NULL, &s),
			 -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "seq ends at byte 258"));
	assert_null(strchr(vfgx_last_error(ctx), '\n'));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_video_frames),
		cmocka_unit_test(test_video_hole),
		cmocka_unit_test(test_video_end_mark),
		cmocka_unit_test(test_video_read_whole),
		cmocka_unit_test(test_spead_heaps),
		cmocka_unit_test(test_spead_delivered),
		cmocka_unit_test(test_drop_reasons),
		cmocka_unit_test(test_learned_ssrc),
		cmocka_unit_test(test_slot_format),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_session),
	};

	return cmocka_run_group_tests(tests, ctx_quiet_setup, ctx_teardown);
}
