/* test_user_place.c - a user placement function (vfgx/place.h) on the cpu
 * engine: examples/user_place/tile_place.c, compiled into this test as C,
 * places a made-up "tiles" header through the processor
 * (vfgx_proc_burst) into chunks.  Frames sent with their tiles scrambled
 * and reordered come out byte for byte where the header's rule puts them
 * (the rule computed here, not by the function's table), by the
 * function's own offsets (place: user) and by slot (place: slot) alike;
 * the function's drops count as user_place; and a function that answers
 * with pieces outside the packet or the chunk, a stream past the
 * configured ones or no pieces at all gets its packets dropped under the
 * description's reasons, with nothing written. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>
#include <vfgx/chunk.h>
#include <vfgx/format.h>
#include <vfgx/place.h>

#include "pipeline/chunkset.h"
#include "chunk_rig.h"
#include "../../examples/user_place/tile_place.h"

#define TILES TILE_PLACE_TILES
#define TB TILE_PLACE_BYTES
#define FRAME TILE_PLACE_FRAME

#include "unit_ctx.h"

/* the header's rule, from its description (README): the tile sent k-th
 * goes to (5k + 5) mod 16 */
static uint32_t where(uint32_t k)
{
	return (5 * k + 5) % TILES;
}

static uint8_t pixel(uint32_t stream, uint32_t frame, uint32_t off)
{
	return (uint8_t)(stream * 101 + frame * 31 + off * 7 + 1);
}

/* A tiles packet: header (with `opt` optional words), tile k of frame,
 * its bytes those of its place in the frame. */
static uint32_t tile_pkt(uint8_t *p, uint32_t stream, uint32_t frame, uint32_t k,
			 uint32_t opt, uint32_t kind)
{
	uint32_t h = 8 + 4 * opt;

	p[0] = (uint8_t)(0x10 | kind);
	p[1] = (uint8_t)(h / 4);
	p[2] = (uint8_t)(frame >> 8);
	p[3] = (uint8_t)frame;
	p[4] = (uint8_t)k;
	p[5] = (uint8_t)stream;
	p[6] = 0;
	p[7] = TB;
	memset(p + 8, 0xee, 4 * opt);
	for (uint32_t i = 0; i < TB; i++)
		p[h + i] = pixel(stream, frame, where(k) * TB + i);
	return h + TB;
}

struct rig {
	struct vfgx_format f;
	struct vfgx_place_conf pcf;
	struct vfgx_chunkset *cs;
	vfgx_proc *p;
};

/* The description: a fixed header of at least 8 bytes, nothing read
 * (the function reads it), 2 streams, 32-bit sequences. */
static void rig_make(struct rig *r, uint32_t place, vfgx_place_fn *fn)
{
	struct vfgx_pipeline_config pc;
	struct vfgx_chunk_config c;

	memset(&r->f, 0, sizeof(r->f));
	r->f.argsz = sizeof(r->f);
	r->f.layout = VFGX_FMT_FIXED;
	r->f.header_len = 8;
	r->f.seq_bits = 32;
	r->f.seq_max_dropout = 1u << 31;
	r->f.seq_max_misorder = 1u << 31;
	r->f.max_streams = 2;
	r->f.place = place;
	r->f.packets = TILES;
	r->f.payload_bytes = TB;
	r->f.chunk_bytes = FRAME;
	snprintf(r->f.name, sizeof(r->f.name), "tiles");
	assert_int_equal(vfgx_format_check(ctx, &r->f, 8 + TB, 0), 0);
	memset(&r->pcf, 0, sizeof(r->pcf));
	r->pcf.argsz = sizeof(r->pcf);
	r->pcf.symbol = "tile_place";
	r->pcf.fn = fn;
	vfgx_pipeline_config_default(&pc);
	vfgx_chunk_config_default(&c);
	c.packets = TILES;
	c.payload_bytes = TB;
	c.in_flight = 4;
	c.streams = 2;
	c.close_distance = 2;
	pc.chunks = &c;
	pc.format = &r->f;
	pc.place = &r->pcf;
	pc.max_streams = 2;
	assert_int_equal(vfgx_chunkset_create_fmt(ctx, &c, &r->f, &r->cs), 0);
	assert_int_equal(vfgx_proc_create(ctx, &pc, &r->p), 0);
	assert_int_equal(vfgx_proc_set_chunks(r->p, r->cs), 0);
}

static struct vfgx_pipeline_stats stats(struct rig *r)
{
	struct vfgx_pipeline_stats st;

	vfgx_proc_stats(r->p, &st);
	return st;
}

static void check_frame(const struct vfgx_chunk *d, uint32_t stream, uint32_t frame)
{
	const uint8_t *b = d->data;

	for (uint32_t i = 0; i < FRAME; i++)
		if (b[i] != pixel(stream, frame, i))
			fail_msg("stream %u frame %u byte %u: %u, wanted %u", stream, frame, i,
				 b[i], pixel(stream, frame, i));
}

/* Three frames on two streams, tiles sent in order k = 0..15 (their
 * places scrambled by the rule), frame 1's in reverse and with two
 * optional header words; a control packet and a lying length between
 * them.  Every frame complete and byte-identical to the rule's. */
static void run_frames(uint32_t place)
{
	struct rig r;
	uint8_t p[256];
	struct vfgx_chunk *d;
	struct vfgx_pipeline_stats st;
	uint32_t len;

	rig_make(&r, place, tile_place);
	for (uint32_t f = 0; f < 3; f++)
		for (uint32_t s = 0; s < 2; s++)
			for (uint32_t i = 0; i < TILES; i++) {
				uint32_t k = f == 1 ? TILES - 1 - i : i;

				proc_feed(r.p, p, tile_pkt(p, s, f, k, f == 1 ? 2 : 0, 0));
				if (i == 3) /* a control packet: the function drops it */
					proc_feed(r.p, p, tile_pkt(p, s, f, k, 0, 1));
				if (i == 7) { /* a length that lies: dropped */
					len = tile_pkt(p, s, f, k, 0, 0);
					p[7] = TB + 1;
					proc_feed(r.p, p, len);
				}
			}
	for (uint32_t s = 0; s < 2; s++)
		vfgx_chunkset_flush(r.cs, s);
	for (uint32_t n = 0; n < 6; n++) {
		d = next_ready(r.cs);
		assert_non_null(d);
		assert_true(d->stream < 2);
		/* the frame: the first sequence that arrived (extended one turn
		 * in from 32 bits) / 16 */
		assert_true((uint32_t)d->first_seq / TILES < 3);
		assert_int_equal(d->present_count, TILES);
		assert_true(d->flags & VFGX_CHUNK_COMPLETE);
		check_frame(d, d->stream, (uint32_t)d->first_seq / TILES);
		vfgx_chunkset_put(r.cs, d->stream, d->index);
	}
	assert_null(next_ready(r.cs));
	st = stats(&r);
	assert_int_equal(st.drops[VFGX_DROP_USER_PLACE], 2 * 3 * 2);
	assert_int_equal(st.drops[VFGX_DROP_OFFSET_PAST_CHUNK], 0);
	assert_int_equal(st.drops[VFGX_DROP_DUPLICATE], 0);
	assert_string_equal(vfgx_drop_reason_name(VFGX_DROP_USER_PLACE), "user_place");
	proc_rig_free(r.p, r.cs);
}

static void test_frames_by_function(void **state)
{
	(void)state;
	run_frames(VFGX_FMT_PLACE_USER);
}

static void test_frames_by_slot(void **state)
{
	(void)state;
	run_frames(VFGX_FMT_PLACE_SLOT);
}

/* A function that answers what it is told to, for the checks. */
static int evil_kind;

static int evil_place(const uint8_t *pkt, uint32_t len, const struct vfgx_fmt_pkt *d,
		      struct vfgx_place *out)
{
	int r = tile_place(pkt, len, d, out);

	switch (evil_kind) {
	case 1: /* past the chunk's end */
		out->seg[0].dst_off = FRAME - TB + 1;
		break;
	case 2: /* far past it: an offset that wraps when added */
		out->seg[0].dst_off = UINT64_MAX - 8;
		break;
	case 3: /* bytes from past the packet */
		out->seg[0].len = len;
		break;
	case 4: /* a source offset past the packet */
		out->seg[0].src_off = len + 1;
		out->seg[0].len = 0;
		break;
	case 5: /* a stream past the configured 2 */
		out->stream = 2;
		break;
	case 6: /* no pieces */
		out->nseg = 0;
		break;
	case 7: /* more pieces than there are */
		out->nseg = VFGX_FMT_MAX_SEGS + 1;
		break;
	}
	return r;
}

/* Each wrong answer is a drop under the reason a description's would
 * get, no chunk opens, and a good frame after them is whole. */
static void test_bad_answers(void **state)
{
	static const struct {
		int kind;
		enum vfgx_drop_reason why;
	} cases[] = {
		{ 1, VFGX_DROP_OFFSET_PAST_CHUNK }, { 2, VFGX_DROP_OFFSET_PAST_CHUNK },
		{ 3, VFGX_DROP_FIELD_OUTSIDE },     { 4, VFGX_DROP_FIELD_OUTSIDE },
		{ 5, VFGX_DROP_BAD_STREAM },        { 6, VFGX_DROP_FIELD_OUTSIDE },
		{ 7, VFGX_DROP_FIELD_OUTSIDE },
	};
	uint8_t p[256];
	struct vfgx_chunk *d;
	struct vfgx_pipeline_stats st;

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct rig r;
		uint64_t before;

		rig_make(&r, VFGX_FMT_PLACE_USER, evil_place);
		evil_kind = cases[c].kind;
		for (uint32_t k = 0; k < TILES; k++)
			proc_feed(r.p, p, tile_pkt(p, 0, 0, k, 0, 0));
		st = stats(&r);
		before = st.drops[cases[c].why];
		if (before != TILES)
			fail_msg("answer %d: %llu drops as %s, wanted %u", cases[c].kind,
				 (unsigned long long)before, vfgx_drop_reason_name(cases[c].why),
				 TILES);
		vfgx_chunkset_flush(r.cs, 0);
		assert_null(next_ready(r.cs)); /* nothing was placed */
		/* the same packets answered well: frame 1 whole */
		evil_kind = 0;
		for (uint32_t k = 0; k < TILES; k++)
			proc_feed(r.p, p, tile_pkt(p, 0, 1, k, 0, 0));
		vfgx_chunkset_flush(r.cs, 0);
		d = next_ready(r.cs);
		assert_non_null(d);
		assert_int_equal(d->present_count, TILES);
		check_frame(d, 0, 1);
		vfgx_chunkset_put(r.cs, d->stream, d->index);
		proc_rig_free(r.p, r.cs);
	}
}

/* Reorder without chunks, by slot: the function's sequence orders the
 * tiles; their payloads (after the optional words) reach the user stage
 * in the rule's order.  Frame 6's last tile (place 0) comes first, so
 * the window starts below frame 7. */
static uint32_t seen_n;
static uint64_t last_seq;
static uint8_t seen[FRAME];

static int collect(void *user, uint32_t stream, uint64_t seq, const uint8_t *payload,
		   uint32_t len)
{
	(void)user;
	assert_int_equal(stream, 1);
	assert_true(seq > last_seq);
	last_seq = seq;
	if ((uint32_t)seq / TILES == 7 && len == TB) {
		assert_int_equal(seen_n, (uint32_t)seq % TILES); /* in order */
		memcpy(seen + TB * seen_n++, payload, TB);
	}
	return 0;
}

static void test_reorder_by_slot(void **state)
{
	struct vfgx_pipeline_config pc;
	struct vfgx_place_conf pcf = { .argsz = sizeof(pcf), .symbol = "tile_place",
				       .fn = tile_place };
	struct rig r;
	uint8_t p[256];

	(void)state;
	/* the description of rig_make, its chunks left out */
	rig_make(&r, VFGX_FMT_PLACE_SLOT, tile_place);
	proc_rig_free(r.p, r.cs);
	vfgx_pipeline_config_default(&pc);
	pc.format = &r.f;
	pc.place = &pcf;
	pc.max_streams = 2;
	pc.reorder_window = 64;
	assert_int_equal(vfgx_proc_create(ctx, &pc, &r.p), 0);
	vfgx_proc_set_user_stage(r.p, collect, NULL);
	seen_n = 0;
	last_seq = 0;
	proc_feed(r.p, p, tile_pkt(p, 1, 6, TILES - 1, 0, 0));
	for (uint32_t k = 0; k < TILES; k++)
		proc_feed(r.p, p, tile_pkt(p, 1, 7, k, 1, 0));
	vfgx_proc_flush(r.p);
	assert_int_equal(seen_n, TILES);
	for (uint32_t i = 0; i < FRAME; i++)
		assert_int_equal(seen[i], pixel(1, 7, i));
	vfgx_proc_destroy(r.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames_by_function),
		cmocka_unit_test(test_frames_by_slot),
		cmocka_unit_test(test_bad_answers),
		cmocka_unit_test(test_reorder_by_slot),
	};

	return cmocka_run_group_tests(tests, ctx_setup, ctx_teardown);
}
