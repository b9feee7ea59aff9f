/* fuzz_format.c - libFuzzer target: hostile UDP payloads through one
 * header profile's rules (FMT_PROFILE, one binary per profile; "described"
 * takes a random fixed-layout description from the input's first bytes).
 * decode, sequence extension and placement must never read outside the
 * packet nor place a piece outside its chunk: every piece is copied into
 * a chunk buffer of exactly the chunk's size (ASan checks the copy), and
 * every drop reason is a known one.  decode is the engines' (the plan
 * made once: a built-in profile's own decoder), and it must answer as
 * the generic reading of the same description does, packet and all. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/format.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct vfgx_seq_state states[4];

/* The plan's decoder against the generic reading: the same answer, and
 * the same packet where it is whole (OK, or a stream past the streams). */
static int decode_both(const struct vfgx_format *f, const uint8_t *pkt, uint32_t len,
		       struct vfgx_fmt_pkt *o)
{
	struct vfgx_fmt_plan c;
	struct vfgx_fmt_pkt g;
	int r, rg;

	vfgx_fmt_plan_make(f, &c);
	r = vfgx_fmt_decode_plan(f, &c, pkt, len, o);
	rg = vfgx_fmt_decode(f, pkt, len, &g);
	if (r != rg)
		abort();
	if (r != VFGX_FD_OK && r != VFGX_FD_BAD_STREAM)
		return r;
	if (o->stream_raw != g.stream_raw || o->stream != g.stream || o->end != g.end ||
	    o->seq != g.seq || o->ext_seq != g.ext_seq || o->timestamp != g.timestamp ||
	    o->ts_frac != g.ts_frac || o->chunk != g.chunk || o->chunk_bytes != g.chunk_bytes ||
	    o->nseg != g.nseg || o->payload_off != g.payload_off ||
	    o->payload_len != g.payload_len || o->nseg > VFGX_FMT_MAX_SEGS)
		abort();
	for (uint32_t i = 0; i < o->nseg; i++)
		if (o->seg[i].src_off != g.seg[i].src_off || o->seg[i].len != g.seg[i].len ||
		    o->seg[i].dst_off != g.seg[i].dst_off)
			abort();
	return r;
}

/* SPEAD's straight line (the four items senders write, in their order)
 * against its item-by-item reading: wherever the straight line reads a
 * packet, the same answer and the same packet. */
static void spead_both(const uint8_t *pkt, uint32_t len)
{
	struct vfgx_fmt_pkt a, b;
	int ra, rb;

	vfgx_fmt_pkt_clear(&a);
	vfgx_fmt_pkt_clear(&b);
	ra = vfgx_fmt_spead_common(pkt, len, &a);
	if (ra < 0)
		return;
	rb = vfgx_fmt_spead_items(pkt, len, &b);
	if (ra != rb)
		abort();
	if (ra == VFGX_FD_OK &&
	    (a.seq != b.seq || a.chunk != b.chunk || a.chunk_bytes != b.chunk_bytes ||
	     a.end != b.end || a.payload_off != b.payload_off ||
	     a.payload_len != b.payload_len || a.nseg != b.nseg ||
	     a.seg[0].src_off != b.seg[0].src_off || a.seg[0].len != b.seg[0].len ||
	     a.seg[0].dst_off != b.seg[0].dst_off))
		abort();
}

static int described(struct vfgx_format *f, const uint8_t **data, size_t *size)
{
	struct vfgx_fmt_field *fl[] = { &f->stream, &f->seq, &f->seq_major,
		&f->timestamp, &f->end, &f->length, &f->match[0] };
	const uint8_t *d = *data;

	if (*size < 24)
		return -1;
	vfgx_format_profile("vfgx", f);
	f->header_len = d[0] % 64;
	for (int i = 0; i < 7; i++) {
		const uint8_t *b = d + 1 + 3 * i;

		fl[i]->size = (uint8_t)(b[0] % 9);
		fl[i]->offset = (uint16_t)(b[1] % 80);
		fl[i]->little = b[0] >> 7;
		fl[i]->shift = (uint8_t)(b[2] % (fl[i]->size ? fl[i]->size * 8 : 1));
		fl[i]->bits = (uint8_t)(b[2] >> 2) % 65;
	}
	f->seq_major_mult = d[22] | 1u;
	f->length_unit = 1u + d[23] % 8;
	f->seq_bits = 1u + d[23] % 64;
	f->seq_max_dropout = f->seq_bits < 64 ? 1ull << (f->seq_bits - 1) : 1ull << 62;
	f->seq_max_misorder = f->seq_max_dropout;
	f->payload_bytes = 1u + d[22] % 128;
	f->packets = 1u + d[21] % 16;
	*data += 24;
	*size -= 24;
	/* not filtered through vfgx_format_check: the rules must stay inside
	 * the packet and the chunk for any description, checked or not */
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vfgx_format f;
	struct vfgx_fmt_pkt o;
	uint8_t *pkt, *chunk;
	uint64_t cap;
	int r;

	if (size < 1 || size > 9000)
		return 0;
	if (!strcmp(FMT_PROFILE, "described")) {
		if (described(&f, &data, &size))
			return 0;
	} else {
		vfgx_format_profile(FMT_PROFILE, &f);
		if (f.layout == VFGX_FMT_RFC4175) { /* small frames: easy to pass */
			f.stride = 4u * (1 + data[0] % 16);
			f.chunk_bytes = (uint64_t)f.stride * (1 + data[0] / 16);
		} else if (f.layout == VFGX_FMT_SPEAD) {
			f.chunk_bytes = 1u + data[0] * 16u;
		} else {
			f.payload_bytes = 1u + data[0] * 8u;
			f.packets = 1u + data[0] % 7;
		}
		if (f.seq_major.size)
			f.seq_major_mult = 1u + data[0];
		data++;
		size--;
	}
	/* the packet in its own allocation: a read past it is an ASan error */
	pkt = malloc(size ? size : 1);
	if (!pkt)
		return 0;
	memcpy(pkt, data, size);
	if (f.layout == VFGX_FMT_SPEAD)
		spead_both(pkt, (uint32_t)size);
	r = decode_both(&f, pkt, (uint32_t)size, &o);
	if (r == VFGX_FD_OK)
		r = vfgx_seq_extend(&f, &states[o.stream % 4], o.seq, &o.ext_seq);
	if (r == VFGX_FD_OK)
		r = vfgx_fmt_place(&f, &o);
	if (r < 0 || r >= VFGX_FD_MAX)
		abort();
	cap = f.place == VFGX_FMT_PLACE_SLOT ? (uint64_t)f.packets * f.payload_bytes : f.chunk_bytes;
	if (r == VFGX_FD_OK && cap <= (1u << 24)) {
		chunk = malloc(cap ? cap : 1);
		if (o.nseg > VFGX_FMT_MAX_SEGS)
			abort();
		for (uint32_t i = 0; chunk && i < o.nseg; i++) {
			if (o.seg[i].src_off + (uint64_t)o.seg[i].len > size ||
			    o.seg[i].dst_off + o.seg[i].len > cap)
				abort();
			memcpy(chunk + o.seg[i].dst_off, pkt + o.seg[i].src_off, o.seg[i].len);
		}
		free(chunk);
	}
	free(pkt);
	return 0;
}
