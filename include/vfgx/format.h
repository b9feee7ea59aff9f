/* vfgx/format.h - the producer's header: where a packet's stream id,
 * sequence, timestamp, payload and end-of-chunk mark are (struct
 * vfgx_format, from a built-in profile or YAML), and the rules that read
 * them, as plain inline C that gcc and nvcc compile unchanged (VFGX_HD,
 * as vfgx/stages.h): field extraction, the layout of each built-in
 * protocol, sequence extension and byte placement in a chunk.  The rules
 * take state in and give a decision out; they never move payload bytes.
 * docs/formats.md describes the keys, the profiles and the rules. */
#ifndef VFGX_FORMAT_H
#define VFGX_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "stages.h"

/* ---- the description --------------------------------------------------- */

/* How the header is laid out beyond the fixed fields. */
enum vfgx_fmt_layout {
	VFGX_FMT_FIXED = 0, /* every field at a fixed offset; payload at header_len */
	VFGX_FMT_RTP,       /* RFC 3550: payload after 12 + 4 x CC (+ extension) */
	VFGX_FMT_RFC4175,   /* RTP + RFC 4175: extended sequence, line segments */
	VFGX_FMT_VITA49,    /* VRT data packets: optional words per header bits */
	VFGX_FMT_SPEAD,     /* SPEAD-64-48: items in any order */
	VFGX_FMT_LAYOUT_MAX
};

/* Where a packet's payload goes in its chunk. */
enum vfgx_fmt_place {
	/* chunk = ext_seq / packets; byte = (ext_seq % packets) x payload_bytes
	 * (today's slot layout; VDIF: frame number x frame size) */
	VFGX_FMT_PLACE_SLOT = 0,
	/* chunk = the layout's chunk id (SPEAD heap counter); byte = the
	 * layout's offset (SPEAD heap offset) */
	VFGX_FMT_PLACE_OFFSET,
	/* RFC 4175: chunk = the RTP timestamp (one frame); each segment at
	 * line x stride + pixel offset / pgroup_pixels x pgroup_bytes */
	VFGX_FMT_PLACE_LINES,
	/* a user placement function (vfgx/place.h): chunk = its chunk id,
	 * each of its pieces at its own offset */
	VFGX_FMT_PLACE_USER,
	VFGX_FMT_PLACE_MAX
};

/* A field: size bytes (1..8; 0: absent) at offset from the start of the
 * UDP payload, big endian unless little; then (value >> shift) masked to
 * bits (0: every bit). */
struct vfgx_fmt_field {
	uint16_t offset;
	uint8_t size;
	uint8_t little;
	uint8_t shift;
	uint8_t bits;
	uint8_t pad[2];
};

#define VFGX_FMT_MAX_STREAM_IDS 64
/* stream_slot's size: twice the ids at most, so a lookup's probe run
 * stays short (vfgx_fmt_stream_index) */
#define VFGX_FMT_STREAM_SLOTS 128
/* up to this many ids are searched in order, more by the hash index
 * (callgrind: 4 ids in order 23.5 instructions a packet on the cpu
 * engine's rtp path, hashed 26; in order grows by 2.5 an id, hashed
 * stays flat, 64 ids: 147 more in order) */
#define VFGX_FMT_IDS_IN_ORDER 4
#define VFGX_FMT_MAX_MATCH 2
#define VFGX_FMT_MAX_SEGS 8
#define VFGX_FMT_NAME_MAX 24

/*
 * A header description.  Plain data without pointers, so an engine copies
 * it to GPU memory as it is.  vfgx_format_profile() fills one from a
 * built-in profile, vfgx_format_load_file() from a YAML file, and a
 * loaded config from its pipeline.format.
 */
struct vfgx_format {
	uint32_t argsz;            /* sizeof(struct vfgx_format) */
	uint32_t layout;           /* enum vfgx_fmt_layout */
	char name[VFGX_FMT_NAME_MAX];
	uint32_t header_len;       /* fixed header bytes (the least for the others) */
	uint32_t place;            /* enum vfgx_fmt_place */
	struct vfgx_fmt_field stream;    /* absent: every packet is stream 0 */
	struct vfgx_fmt_field seq;       /* absent: no sequence (always 0) */
	struct vfgx_fmt_field seq_major; /* composite: major x seq_major_mult + seq */
	struct vfgx_fmt_field timestamp;
	struct vfgx_fmt_field ts_frac;
	struct vfgx_fmt_field end;       /* non-zero: the packet ends its chunk */
	struct vfgx_fmt_field length;    /* a length field the packet must match */
	struct vfgx_fmt_field match[VFGX_FMT_MAX_MATCH]; /* must equal match_value */
	uint64_t match_value[VFGX_FMT_MAX_MATCH];
	uint64_t seq_major_mult;
	/* length: length x length_unit + length_add == UDP payload bytes */
	uint32_t length_unit;
	int32_t length_add;
	/* sequence extension (vfgx_seq_extend): the sequence's width before
	 * extension (1..64), the largest step forward and back taken as
	 * in order / late; beyond both, a jump */
	uint32_t seq_bits;
	uint32_t pad0;
	uint64_t seq_max_dropout;
	uint64_t seq_max_misorder;
	/* streams: with n_stream_ids, the stream index is the position of the
	 * stream field's value in stream_ids; without, the value itself; an
	 * index >= max_streams is a drop */
	uint32_t max_streams;
	uint32_t n_stream_ids;
	uint64_t stream_ids[VFGX_FMT_MAX_STREAM_IDS];
	/* placement: slot: packets per chunk x payload_bytes per slot; the
	 * others: chunk_bytes per chunk (lines: height x stride) */
	uint32_t packets;
	uint32_t payload_bytes;
	uint64_t chunk_bytes;
	uint32_t stride;           /* lines: bytes per line */
	uint32_t pgroup_bytes;     /* lines: a pixel group's bytes ... */
	uint32_t pgroup_pixels;    /* ... and pixels (UYVY: 4 bytes, 2 pixels) */
	/* derived from stream_ids by vfgx_format_index (the engines do it at
	 * create; a loaded YAML description has it): stream_slot holds their
	 * hash index, each id at the first free slot from
	 * vfgx_fmt_id_hash(id) on, as its position + 1; stream_index 1: ids
	 * are looked up by it (more than VFGX_FMT_IDS_IN_ORDER), 0: searched
	 * in order.  Either way an id's index is its first position in
	 * stream_ids. */
	uint32_t stream_index;
	uint8_t stream_slot[VFGX_FMT_STREAM_SLOTS];
	uint32_t pad1;
};

/* Drop reasons of the format rules, their own numbering (the engines map
 * them onto their counters; vfgx_fmt_drop_name names them). */
enum vfgx_fmt_drop {
	VFGX_FD_OK = 0,
	VFGX_FD_FIELD_OUTSIDE,   /* a field or header past the packet's end */
	VFGX_FD_BAD_LENGTH,      /* a length field that disagrees with the packet */
	VFGX_FD_MISMATCH,        /* magic, version, type or match field differs */
	VFGX_FD_OFFSET_PAST_CHUNK, /* payload would end past its chunk (heap, slot) */
	VFGX_FD_SEGMENT_PAST_FRAME, /* an RFC 4175 segment past the frame */
	VFGX_FD_SEQ_JUMP,        /* sequence jumped beyond the dropout limits */
	VFGX_FD_LATE,            /* sequence that would extend below 0 */
	VFGX_FD_BAD_STREAM,      /* stream id beyond the configured streams */
	VFGX_FD_USER_PLACE,      /* the user placement function said drop */
	VFGX_FD_MAX
};

/* One packet as its header describes it. */
struct vfgx_fmt_seg {
	uint32_t src_off;  /* payload bytes from the start of the UDP payload */
	uint32_t len;
	uint64_t dst_off;  /* byte offset in the chunk */
	uint32_t line, pixel; /* RFC 4175 */
};

struct vfgx_fmt_pkt {
	uint64_t stream_raw;   /* the stream field's value */
	uint32_t stream;       /* its index below max_streams */
	uint32_t end;          /* 1: the packet ends its chunk */
	uint64_t seq;          /* the sequence as sent (composite computed) */
	uint64_t ext_seq;      /* extended to 64 bits (vfgx_seq_extend) */
	uint64_t timestamp;
	uint64_t ts_frac;
	uint64_t chunk;        /* chunk id (vfgx_fmt_place) */
	uint64_t chunk_bytes;  /* the packet's own chunk size (SPEAD heap size), 0: unknown */
	uint32_t payload_off;  /* the payload after every header */
	uint32_t payload_len;
	uint32_t nseg;         /* placed pieces (RFC 4175: several per packet) */
	uint32_t pad;
	struct vfgx_fmt_seg seg[VFGX_FMT_MAX_SEGS];
};

/* Per-stream state of vfgx_seq_extend. */
struct vfgx_seq_state {
	uint64_t max_ext;   /* highest extended sequence so far */
	uint64_t bad_next;  /* after a jump: the sequence that confirms it */
	uint32_t started;
	uint32_t have_bad;
};

/*
 * What vfgx_fmt_decode works out of a description before reading a
 * packet (vfgx_fmt_plan_make), made once where an engine keeps it
 * (vfgx_fmt_decode_plan): a packet of at least need bytes holds the least
 * header and every field read at a fixed offset, so that no field needs
 * its own bounds check; kind says which decoder reads it (enum
 * vfgx_fmt_kind, vfgx/format_kinds.h: a built-in profile's straight-line
 * one, or the description field by field).  Plain data, as struct
 * vfgx_format.
 */
struct vfgx_fmt_plan {
	uint32_t need;
	uint32_t kind;
};

/* ---- the rules (VFGX_HD) ---------------------------------------------- */

VFGX_HD uint64_t vfgx_fmt_mask(uint32_t bits)
{
	return bits == 0 || bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
}

/* Little-endian loads (the big-endian ones are stages.h's vfgx_rd*); as
 * the big-endian ones, byte by byte, which gcc turns into one load. */
VFGX_HD uint32_t vfgx_fmt_rd32le(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

VFGX_HD uint64_t vfgx_fmt_rd64le(const uint8_t *p)
{
	return (uint64_t)vfgx_fmt_rd32le(p) | ((uint64_t)vfgx_fmt_rd32le(p + 4) << 32);
}

/* size (1..8) bytes at p as an unsigned number, big endian unless
 * little: the usual sizes as one load each, the others byte by byte. */
VFGX_HD uint64_t vfgx_fmt_load(const uint8_t *p, uint32_t size, uint32_t little)
{
	uint64_t x = 0;

	switch (size) {
	case 1:
		return p[0];
	case 2:
		return little ? (uint64_t)(p[0] | (p[1] << 8)) : vfgx_rd16(p);
	case 4:
		return little ? vfgx_fmt_rd32le(p) : vfgx_rd32(p);
	case 8:
		return little ? vfgx_fmt_rd64le(p) : vfgx_rd64(p);
	default:
		for (uint32_t i = 0; i < size; i++)
			x = (x << 8) | p[little ? size - 1 - i : i];
		return x;
	}
}

/* Read field fl of a UDP payload p of len bytes.  VFGX_FD_FIELD_OUTSIDE
 * when it does not lie inside the payload. */
VFGX_HD int vfgx_fmt_field_get(const struct vfgx_fmt_field *fl, const uint8_t *p,
			       uint32_t len, uint64_t *v)
{
	if (fl->size == 0) {
		*v = 0;
		return VFGX_FD_OK;
	}
	if ((uint32_t)fl->offset + fl->size > len)
		return VFGX_FD_FIELD_OUTSIDE;
	*v = (vfgx_fmt_load(p + fl->offset, fl->size, fl->little) >> fl->shift) &
	     vfgx_fmt_mask(fl->bits);
	return VFGX_FD_OK;
}

/* Read a field at offset off + fl->offset (the variable layouts put some
 * fields after optional words). */
VFGX_HD int vfgx_fmt_field_at(const struct vfgx_fmt_field *fl, uint32_t off,
			      const uint8_t *p, uint32_t len, uint64_t *v)
{
	struct vfgx_fmt_field f = *fl;

	if (off + f.offset > 0xffffu)
		return VFGX_FD_FIELD_OUTSIDE;
	f.offset = (uint16_t)(off + f.offset);
	return vfgx_fmt_field_get(&f, p, len, v);
}

/*
 * Extend a sequence of r->seq_bits bits to 64 (RFC 3550 appendix A.1's
 * rule, for any width).  d = (v - max) modulo 2^bits:
 *   - d < seq_max_dropout: in order or a gap forward; max moves on (a
 *     wrap of v carries into the upper bits);
 *   - 2^bits - d <= seq_max_misorder: a late or duplicate packet,
 *     extended behind max (the engine's reorder decides late or
 *     duplicate); one that would extend below 0: VFGX_FD_LATE;
 *   - between: a jump, dropped (VFGX_FD_SEQ_JUMP), unless it is the
 *     packet right after the last dropped jump: two in a row mean the
 *     sender restarted, and the stream goes on from there.
 * The first packet starts the stream at 2^bits + v (one turn in, so a
 * late packet from before the first wrap still extends), v for 64 bits.
 */
/* The sequence's bits (vfgx_seq_extend's mask): seq_bits 1..63: 2^bits -
 * 1; 0 or 64: every bit; vfgx_format_check refuses the others (beyond 64
 * would read as bits % 64). */
VFGX_HD uint64_t vfgx_seq_mask(const struct vfgx_format *r)
{
	return ~(uint64_t)0 >> ((64u - r->seq_bits) & 63u);
}

/* vfgx_seq_extend with its mask (vfgx_seq_mask(r)) worked out by the
 * caller, once for many packets. */
VFGX_HD int vfgx_seq_extend_mask(const struct vfgx_format *r, uint64_t mask,
				 struct vfgx_seq_state *s, uint64_t v, uint64_t *ext)
{
	/* one turn 2^bits; for 64 bits 0 (mask + 1 wraps) */
	uint64_t one_turn = mask + 1;
	uint64_t d, back, e;

	v &= mask;
	/* the common case first: in order or a gap forward (have_bad
	 * written only when set: no store per packet beyond max_ext) */
	d = (v - s->max_ext) & mask;
	if (s->started && d < r->seq_max_dropout) {
		e = s->max_ext + d;
		s->max_ext = e;
		if (s->have_bad)
			s->have_bad = 0;
		*ext = e;
		return VFGX_FD_OK;
	}
	if (!s->started) {
		s->started = 1;
		s->have_bad = 0;
		s->max_ext = one_turn + v;
		*ext = s->max_ext;
		return VFGX_FD_OK;
	}
	back = (s->max_ext - v) & mask; /* = 2^bits - d */
	if (back <= r->seq_max_misorder) {
		if (back > s->max_ext)
			return VFGX_FD_LATE;
		*ext = s->max_ext - back;
		return VFGX_FD_OK;
	}
	if (s->have_bad && v == (s->bad_next & mask)) {
		/* restarted: keep the upper bits, so extended sequences of
		 * short counters still grow; a 64-bit sequence is v */
		e = ((s->max_ext & ~mask) + one_turn) | v;
		s->max_ext = e;
		s->have_bad = 0;
		*ext = e;
		return VFGX_FD_OK;
	}
	s->have_bad = 1;
	s->bad_next = (v + 1) & mask;
	return VFGX_FD_SEQ_JUMP;
}

VFGX_HD int vfgx_seq_extend(const struct vfgx_format *r, struct vfgx_seq_state *s,
			    uint64_t v, uint64_t *ext)
{
	return vfgx_seq_extend_mask(r, vfgx_seq_mask(r), s, v, ext);
}

/* A raw stream id's first slot in stream_slot (Fibonacci hashing: the
 * top 7 bits of id x 2^64 / golden ratio). */
VFGX_HD uint32_t vfgx_fmt_id_hash(uint64_t raw)
{
	return (uint32_t)((raw * 0x9e3779b97f4a7c15ull) >> 57) & (VFGX_FMT_STREAM_SLOTS - 1);
}

/* The position of raw in stream_ids by the hash index past its first
 * slot h, the probe run of vfgx_fmt_stream_index (n: the ids, at most
 * VFGX_FMT_MAX_STREAM_IDS): no run is longer than the ids, and a slot
 * that names no listed position ends it.  -1: not listed. */
VFGX_HD int32_t vfgx_fmt_id_probe(const struct vfgx_format *f, uint64_t raw, uint32_t h,
				  uint32_t n)
{
	for (uint32_t k = 1; k < n; k++) {
		uint32_t s;

		h = (h + 1) & (VFGX_FMT_STREAM_SLOTS - 1);
		s = f->stream_slot[h] - 1u;
		if (s >= n)
			return -1;
		if (f->stream_ids[s] == raw)
			return (int32_t)s;
	}
	return -1;
}

/* The stream index of a raw stream id: with stream_ids, its first
 * position there (by the hash index when vfgx_format_index built one,
 * else in order); without, the value itself.  An index at or past
 * max_streams, or an id not listed: VFGX_FD_BAD_STREAM.  A slot that
 * names no listed position ends a probe (bad_stream), so an index
 * written by hand reads nothing outside stream_ids. */
VFGX_HD int vfgx_fmt_stream_index(const struct vfgx_format *f, uint64_t raw,
				  uint32_t *idx)
{
	uint64_t i = raw;
	uint32_t n = f->n_stream_ids;

	if (n) {
		n = n < VFGX_FMT_MAX_STREAM_IDS ? n : VFGX_FMT_MAX_STREAM_IDS;
		if (f->stream_index) {
			/* the id at its first slot: the common case */
			uint32_t h = vfgx_fmt_id_hash(raw);
			uint32_t s = f->stream_slot[h] - 1u;

			if (s < n && f->stream_ids[s] == raw) {
				i = s;
			} else {
				int32_t pos = s < n ? vfgx_fmt_id_probe(f, raw, h, n) : -1;

				if (pos < 0)
					return VFGX_FD_BAD_STREAM;
				i = (uint32_t)pos;
			}
		} else {
			for (i = 0; i < n && f->stream_ids[i] != raw; i++)
				;
			if (i == n)
				return VFGX_FD_BAD_STREAM;
		}
	}
	if (i >= f->max_streams)
		return VFGX_FD_BAD_STREAM;
	*idx = (uint32_t)i;
	return VFGX_FD_OK;
}

/* RTP without stream_ids learns its streams: each new SSRC gets the next
 * stream index in order of arrival.  An engine keeps a table of the raw
 * ids seen (entry: raw + 1, 0: free) and looks raw up entry by entry from
 * the first with vfgx_fmt_learn_entry: MATCH, that entry's index is the
 * stream; FREE, the first free entry, which raw takes (written there, or
 * compare-and-swapped where placers share the table); NEXT, look on.  No
 * entry: -1.  vfgx_fmt_learned_stream gives the stream of an index. */
enum { VFGX_FMT_LEARN_NEXT = 0, VFGX_FMT_LEARN_MATCH = 1, VFGX_FMT_LEARN_FREE = 2 };

VFGX_HD int vfgx_fmt_learns(const struct vfgx_format *f)
{
	return (f->layout == VFGX_FMT_RTP || f->layout == VFGX_FMT_RFC4175) &&
	       !f->n_stream_ids;
}

VFGX_HD int vfgx_fmt_learn_entry(uint64_t entry, uint64_t raw)
{
	if (entry == raw + 1)
		return VFGX_FMT_LEARN_MATCH;
	return entry == 0 ? VFGX_FMT_LEARN_FREE : VFGX_FMT_LEARN_NEXT;
}

/* The stream of learned index i: UINT32_MAX (bad_stream) when the table
 * was full (-1) or i is at or past max_streams. */
VFGX_HD uint32_t vfgx_fmt_learned_stream(const struct vfgx_format *f, int32_t i)
{
	return i < 0 || (uint32_t)i >= f->max_streams ? UINT32_MAX : (uint32_t)i;
}

/* RFC 3550: 12 bytes, then 4 x CC bytes of CSRC, then with X a 4-byte
 * extension header whose 16-bit length counts further 32-bit words. */
VFGX_HD int vfgx_fmt_rtp_hdr_len(const uint8_t *p, uint32_t len, uint32_t *hl)
{
	uint32_t h;

	if (len < 12)
		return VFGX_FD_FIELD_OUTSIDE;
	if ((p[0] >> 6) != 2)
		return VFGX_FD_MISMATCH;
	h = 12 + 4u * (p[0] & 0x0f);
	if (p[0] & 0x10) {
		if (h + 4 > len)
			return VFGX_FD_FIELD_OUTSIDE;
		h += 4 + 4u * vfgx_rd16(p + h + 2);
	}
	if (h > len)
		return VFGX_FD_FIELD_OUTSIDE;
	/* padding (P): the last byte counts the padding bytes at the end */
	if ((p[0] & 0x20) && (len == h || p[len - 1] == 0 || p[len - 1] > len - h))
		return VFGX_FD_BAD_LENGTH;
	*hl = h;
	return VFGX_FD_OK;
}

/* RFC 4175 after the RTP header: the upper 16 bits of a 32-bit
 * sequence, then 6-byte segment headers (length, F|line, C|offset) while
 * C is set, then the segments' bytes in order. */
VFGX_HD int vfgx_fmt_rfc4175(const struct vfgx_format *f, const uint8_t *p,
			     uint32_t len, uint32_t hl, struct vfgx_fmt_pkt *o)
{
	uint32_t h = hl + 2, n = 0, src, end = len;
	uint64_t frame = f->chunk_bytes;

	if (h > len)
		return VFGX_FD_FIELD_OUTSIDE;
	/* the upper half of a 32-bit sequence, when the description reads
	 * one (seq_bits above 16): GStreamer's rtpvrawpay leaves it 0 */
	if (f->seq_bits > 16)
		o->seq |= (uint64_t)vfgx_rd16(p + hl) << 16;
	if (p[0] & 0x20)
		end = len - p[len - 1];
	for (;;) {
		if (h + 6 > end)
			return VFGX_FD_FIELD_OUTSIDE;
		if (n == VFGX_FMT_MAX_SEGS)
			return VFGX_FD_BAD_LENGTH;
		o->seg[n].len = vfgx_rd16(p + h);
		o->seg[n].line = vfgx_rd16(p + h + 2) & 0x7fff;
		o->seg[n].pixel = vfgx_rd16(p + h + 4) & 0x7fff;
		if (p[h + 2] & 0x80) /* F: the second field of interlaced video */
			return VFGX_FD_MISMATCH;
		n++;
		h += 6;
		if (!(p[h - 2] & 0x80))
			break;
	}
	src = h;
	for (uint32_t i = 0; i < n; i++) {
		struct vfgx_fmt_seg *s = &o->seg[i];

		if (s->len > end - src)
			return VFGX_FD_BAD_LENGTH;
		s->src_off = src;
		src += s->len;
		if (f->pgroup_pixels == 0 || s->pixel % f->pgroup_pixels)
			return VFGX_FD_SEGMENT_PAST_FRAME;
		s->dst_off = (uint64_t)s->line * f->stride +
			     (uint64_t)(s->pixel / f->pgroup_pixels) * f->pgroup_bytes;
		if (s->dst_off + s->len > frame ||
		    (uint64_t)(s->pixel / f->pgroup_pixels) * f->pgroup_bytes + s->len > f->stride)
			return VFGX_FD_SEGMENT_PAST_FRAME;
	}
	o->nseg = n;
	o->payload_off = h;
	o->payload_len = src - h;
	return VFGX_FD_OK;
}

/* VITA-49 (VRT) data packets, types 0-3: word 0 is type(4) C T r r TSI(2)
 * TSF(2) count(4) size(16, in 32-bit words); then a stream id (types 1
 * and 3), a class id (2 words, C), an integer timestamp (TSI != 0), a
 * fractional one (2 words, TSF != 0), the payload and a trailer (T). */
VFGX_HD int vfgx_fmt_vita49(const uint8_t *p, uint32_t len, struct vfgx_fmt_pkt *o)
{
	uint32_t w0, type, h = 4, end;

	if (len < 4)
		return VFGX_FD_FIELD_OUTSIDE;
	w0 = vfgx_rd32(p);
	type = w0 >> 28;
	if (type > 3)
		return VFGX_FD_MISMATCH;
	if ((w0 & 0xffff) * 4u != len)
		return VFGX_FD_BAD_LENGTH;
	end = len - ((w0 >> 26 & 1) ? 4 : 0);
	o->stream_raw = 0;
	if (type & 1) {
		if (h + 4 > end)
			return VFGX_FD_FIELD_OUTSIDE;
		o->stream_raw = vfgx_rd32(p + h);
		h += 4;
	}
	if (w0 >> 27 & 1)
		h += 8;
	o->timestamp = 0;
	o->ts_frac = 0;
	if (w0 >> 22 & 3) {
		if (h + 4 > end)
			return VFGX_FD_FIELD_OUTSIDE;
		o->timestamp = vfgx_rd32(p + h);
		h += 4;
	}
	if (w0 >> 20 & 3) {
		if (h + 8 > end)
			return VFGX_FD_FIELD_OUTSIDE;
		o->ts_frac = vfgx_rd64(p + h);
		h += 8;
	}
	if (h > end)
		return VFGX_FD_FIELD_OUTSIDE;
	o->seq = w0 >> 16 & 0xf;
	o->payload_off = h;
	o->payload_len = end - h;
	return VFGX_FD_OK;
}

/* SPEAD-64-48: header 0x53 0x04 0x02 0x06, 2 reserved bytes, 16-bit item
 * count; 8-byte item pointers (1 bit immediate, 15-bit id, 48-bit value):
 * 0x1 heap counter, 0x2 heap size, 0x3 heap offset, 0x4 payload length. */
#define VFGX_SPEAD_HEAP_CNT 0x1
#define VFGX_SPEAD_HEAP_SIZE 0x2
#define VFGX_SPEAD_HEAP_OFF 0x3
#define VFGX_SPEAD_PAYLOAD_LEN 0x4
/* A SPEAD packet's fields once its items are read (have: bit 0 heap
 * counter, 1 heap size, 2 heap offset, 3 payload length; h: the payload's
 * start): the checks after the items, then o's fields. */
VFGX_HD int vfgx_fmt_spead_fill(uint32_t len, uint32_t h, uint32_t have, uint64_t cnt,
				uint64_t size, uint64_t off, uint64_t plen, struct vfgx_fmt_pkt *o)
{
	if ((have & 0xd) != 0xd)
		return VFGX_FD_FIELD_OUTSIDE;
	if (plen != len - h)
		return VFGX_FD_BAD_LENGTH;
	if ((have & 2) && (off > size || plen > size - off))
		return VFGX_FD_OFFSET_PAST_CHUNK;
	o->seq = cnt;
	o->chunk = cnt;
	o->chunk_bytes = (have & 2) ? size : 0;
	o->end = (have & 2) && off + plen == size;
	o->payload_off = h;
	o->payload_len = (uint32_t)plen;
	o->nseg = 1;
	o->seg[0].src_off = h;
	o->seg[0].len = (uint32_t)plen;
	o->seg[0].dst_off = off;
	return VFGX_FD_OK;
}

/* The SPEAD packet that spead2 and vfgx send: 4 items, reserved bytes 0,
 * heap counter, heap size, heap offset, payload length in this order,
 * each immediate (0x8000 | id in the item's top 16 bits), read with one
 * compare for the header and one for the four ids, no loop.  Returns what
 * vfgx_fmt_spead returns for it, or -1 for any other packet (which
 * vfgx_fmt_spead reads item by item). */
VFGX_HD int vfgx_fmt_spead_common(const uint8_t *p, uint32_t len, struct vfgx_fmt_pkt *o)
{
	const uint64_t m48 = 0xffffffffffffull;

	if (len < 40 || vfgx_rd64(p) != 0x5304020600000004ull)
		return -1;
	/* each item's first two bytes (its id, big endian) as the low 16
	 * bits of a little-endian load: 0x80 0x01 reads 0x0180 */
	if (((vfgx_fmt_rd32le(p + 8) ^ 0x0180u) | (vfgx_fmt_rd32le(p + 16) ^ 0x0280u) |
	     (vfgx_fmt_rd32le(p + 24) ^ 0x0380u) | (vfgx_fmt_rd32le(p + 32) ^ 0x0480u)) & 0xffffu)
		return -1;
	return vfgx_fmt_spead_fill(len, 40, 0xf, vfgx_rd64(p + 8) & m48, vfgx_rd64(p + 16) & m48,
				   vfgx_rd64(p + 24) & m48, vfgx_rd64(p + 32) & m48, o);
}

/* Any SPEAD-64-48 packet, item by item, in any order, a later item
 * overriding an earlier one (vfgx_fmt_spead's reading of what
 * vfgx_fmt_spead_common does not read; it reads those alike). */
VFGX_HD int vfgx_fmt_spead_items(const uint8_t *p, uint32_t len, struct vfgx_fmt_pkt *o)
{
	const uint64_t m48 = 0xffffffffffffull;
	uint32_t n, h;
	uint64_t cnt = 0, off = 0, plen = 0, size = 0;
	uint32_t have = 0;

	if (len < 8)
		return VFGX_FD_FIELD_OUTSIDE;
	if (vfgx_rd32(p) != 0x53040206u)
		return VFGX_FD_MISMATCH;
	n = vfgx_rd16(p + 6);
	h = 8 + 8 * n;
	if (h > len)
		return VFGX_FD_FIELD_OUTSIDE;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t it = vfgx_rd64(p + 8 + 8 * i);
		uint32_t id = (uint32_t)(it >> 48) & 0x7fff;
		uint64_t val = it & m48;

		if (!(it >> 63)) /* an address into the heap, not one of ours */
			continue;
		if (id == VFGX_SPEAD_HEAP_CNT)
			cnt = val, have |= 1;
		else if (id == VFGX_SPEAD_HEAP_SIZE)
			size = val, have |= 2;
		else if (id == VFGX_SPEAD_HEAP_OFF)
			off = val, have |= 4;
		else if (id == VFGX_SPEAD_PAYLOAD_LEN)
			plen = val, have |= 8;
	}
	return vfgx_fmt_spead_fill(len, h, have, cnt, size, off, plen, o);
}

VFGX_HD int vfgx_fmt_spead(const uint8_t *p, uint32_t len, struct vfgx_fmt_pkt *o)
{
	int r = vfgx_fmt_spead_common(p, len, o);

	return r >= 0 ? r : vfgx_fmt_spead_items(p, len, o);
}

/* The end of field fl (offset + size; 0: absent) when it is read at a
 * fixed offset. */
VFGX_HD uint32_t vfgx_fmt_field_end(const struct vfgx_fmt_field *fl)
{
	return fl->size ? (uint32_t)fl->offset + fl->size : 0;
}

VFGX_HD uint32_t vfgx_fmt_max32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/* The least packet length of f's generic reading (struct vfgx_fmt_plan's
 * need).  The fields that VITA-49 and SPEAD read from their own headers
 * are not in it, as decode does not read them. */
VFGX_HD uint32_t vfgx_fmt_plan_need(const struct vfgx_format *f)
{
	uint32_t n = f->header_len;

	for (uint32_t i = 0; i < VFGX_FMT_MAX_MATCH; i++)
		n = vfgx_fmt_max32(n, vfgx_fmt_field_end(&f->match[i]));
	n = vfgx_fmt_max32(n, vfgx_fmt_field_end(&f->length));
	if (f->layout != VFGX_FMT_VITA49 && f->layout != VFGX_FMT_SPEAD) {
		n = vfgx_fmt_max32(n, vfgx_fmt_field_end(&f->stream));
		n = vfgx_fmt_max32(n, vfgx_fmt_field_end(&f->seq));
		n = vfgx_fmt_max32(n, vfgx_fmt_field_end(&f->seq_major));
		n = vfgx_fmt_max32(n, vfgx_fmt_field_end(&f->timestamp));
		n = vfgx_fmt_max32(n, vfgx_fmt_field_end(&f->ts_frac));
		n = vfgx_fmt_max32(n, vfgx_fmt_field_end(&f->end));
	}
	return n;
}

/* Read field fl of a UDP payload p of len bytes, as vfgx_fmt_field_get;
 * its bounds checked only when checked (the packet is shorter than the
 * plan's need). */
VFGX_HD int vfgx_fmt_pget(const struct vfgx_fmt_field *fl, const uint8_t *p, uint32_t len,
			  int checked, uint64_t *v)
{
	if (fl->size == 0) {
		*v = 0;
		return VFGX_FD_OK;
	}
	if (checked && (uint32_t)fl->offset + fl->size > len)
		return VFGX_FD_FIELD_OUTSIDE;
	*v = (vfgx_fmt_load(p + fl->offset, fl->size, fl->little) >> fl->shift) &
	     vfgx_fmt_mask(fl->bits);
	return VFGX_FD_OK;
}

#include "format_kinds.h"

/* The plan of f for vfgx_fmt_decode_plan, made once per description. */
VFGX_HD void vfgx_fmt_plan_make(const struct vfgx_format *f, struct vfgx_fmt_plan *c)
{
	c->need = vfgx_fmt_plan_need(f);
	c->kind = vfgx_fmt_plan_kind(f);
}

/*
 * Decode one UDP payload p of len bytes by f, reading each field as f
 * describes it, with need = vfgx_fmt_plan_need(f): what
 * vfgx_fmt_decode_plan does for every description, and what its
 * built-in kinds do with constants in place of f's fields.
 */
VFGX_HD int vfgx_fmt_decode_generic(const struct vfgx_format *f, uint32_t need,
				    const uint8_t *p, uint32_t len, struct vfgx_fmt_pkt *o)
{
	uint64_t v, major;
	uint32_t hl = f->header_len;
	int checked = len < need, r;

	vfgx_fmt_pkt_clear(o);
	if (len < f->header_len)
		return VFGX_FD_FIELD_OUTSIDE;
	for (uint32_t i = 0; i < VFGX_FMT_MAX_MATCH; i++) {
		if (!f->match[i].size)
			continue;
		if ((r = vfgx_fmt_pget(&f->match[i], p, len, checked, &v)))
			return r;
		if (v != f->match_value[i])
			return VFGX_FD_MISMATCH;
	}
	if (f->length.size) {
		if ((r = vfgx_fmt_pget(&f->length, p, len, checked, &v)))
			return r;
		if ((int64_t)(v * f->length_unit) + f->length_add != (int64_t)len)
			return VFGX_FD_BAD_LENGTH;
	}
	switch (f->layout) {
	case VFGX_FMT_VITA49:
		if ((r = vfgx_fmt_vita49(p, len, o)))
			return r;
		break;
	case VFGX_FMT_SPEAD:
		if ((r = vfgx_fmt_spead(p, len, o)))
			return r;
		break;
	default:
		/* RTP: the fixed fields (sequence, timestamp, SSRC, marker)
		 * are read as any others; the payload starts after the CSRCs
		 * and the extension */
		if ((f->layout == VFGX_FMT_RTP || f->layout == VFGX_FMT_RFC4175) &&
		    (r = vfgx_fmt_rtp_hdr_len(p, len, &hl)))
			return r;
		if ((r = vfgx_fmt_pget(&f->stream, p, len, checked, &o->stream_raw)) ||
		    (r = vfgx_fmt_pget(&f->seq, p, len, checked, &o->seq)) ||
		    (r = vfgx_fmt_pget(&f->timestamp, p, len, checked, &o->timestamp)) ||
		    (r = vfgx_fmt_pget(&f->ts_frac, p, len, checked, &o->ts_frac)) ||
		    (r = vfgx_fmt_pget(&f->end, p, len, checked, &v)) ||
		    (r = vfgx_fmt_pget(&f->seq_major, p, len, checked, &major)))
			return r;
		o->end = v != 0;
		/* composite (VDIF): major x seq_major_mult + minor; an absent
		 * major reads 0 */
		o->seq += major * f->seq_major_mult;
		if (f->layout == VFGX_FMT_RFC4175) {
			if ((r = vfgx_fmt_rfc4175(f, p, len, hl, o)))
				return r;
			break;
		}
		o->payload_off = hl;
		o->payload_len = len - hl;
		if (f->layout == VFGX_FMT_RTP && (p[0] & 0x20))
			o->payload_len -= p[len - 1];
		break;
	}
	return vfgx_fmt_stream_index(f, o->stream_raw, &o->stream);
}

/*
 * Decode one UDP payload p of len bytes by f, with c its plan
 * (vfgx_fmt_plan_make(f, c)): stream (index and raw), sequence as sent,
 * timestamp, payload, end mark, and the layout's own placement (SPEAD,
 * RFC 4175).  No state: vfgx_seq_extend and vfgx_fmt_place come after.
 * Returns VFGX_FD_OK or a drop reason, the first of the checks in this
 * order: least header, match fields, length field, the layout's header,
 * the fields, the stream.  Every kind gives what
 * vfgx_fmt_decode_generic gives, return and o alike.
 */
VFGX_HD int vfgx_fmt_decode_plan(const struct vfgx_format *f, const struct vfgx_fmt_plan *c,
				 const uint8_t *p, uint32_t len, struct vfgx_fmt_pkt *o)
{
	int r;

	switch (c->kind) {
	case VFGX_FMT_KIND_RTP:
		return vfgx_fmt_decode_rtp(f, p, len, o);
	case VFGX_FMT_KIND_ECPRI:
		return vfgx_fmt_decode_ecpri(f, p, len, o);
	case VFGX_FMT_KIND_VDIF:
		return vfgx_fmt_decode_vdif(f, p, len, o);
	case VFGX_FMT_KIND_GR_UDP:
		return vfgx_fmt_decode_gr_udp(f, p, len, o);
	case VFGX_FMT_KIND_VITA49:
		vfgx_fmt_pkt_clear(o);
		if ((r = vfgx_fmt_vita49(p, len, o)))
			return r;
		return vfgx_fmt_stream_index(f, o->stream_raw, &o->stream);
	case VFGX_FMT_KIND_SPEAD:
		vfgx_fmt_pkt_clear(o);
		if ((r = vfgx_fmt_spead(p, len, o)))
			return r;
		return vfgx_fmt_stream_index(f, o->stream_raw, &o->stream);
	default:
		return vfgx_fmt_decode_generic(f, c->need, p, len, o);
	}
}

/* The generic reading with its need worked out for this packet alone
 * (where an engine keeps no plan): no per-packet choice of a kind. */
VFGX_HD int vfgx_fmt_decode(const struct vfgx_format *f, const uint8_t *p,
			    uint32_t len, struct vfgx_fmt_pkt *o)
{
	return vfgx_fmt_decode_generic(f, vfgx_fmt_plan_need(f), p, len, o);
}

/*
 * Where the payload of o goes, after vfgx_seq_extend filled o->ext_seq:
 * the chunk id and each piece's byte offset in it.  Every piece is
 * checked to end inside the chunk (VFGX_FD_OFFSET_PAST_CHUNK otherwise),
 * so an engine that writes seg[i].len bytes at chunk + seg[i].dst_off
 * from payload + seg[i].src_off never writes outside its chunk.
 */
VFGX_HD int vfgx_fmt_place(const struct vfgx_format *f, struct vfgx_fmt_pkt *o)
{
	switch (f->place) {
	case VFGX_FMT_PLACE_SLOT:
		if (o->payload_len > f->payload_bytes || f->packets == 0)
			return VFGX_FD_OFFSET_PAST_CHUNK;
		o->chunk = o->ext_seq / f->packets;
		o->nseg = 1;
		o->seg[0].src_off = o->payload_off;
		o->seg[0].len = o->payload_len;
		o->seg[0].dst_off = (o->ext_seq % f->packets) * (uint64_t)f->payload_bytes;
		return VFGX_FD_OK;
	case VFGX_FMT_PLACE_OFFSET:
		if (o->nseg != 1 || o->seg[0].dst_off > f->chunk_bytes ||
		    o->seg[0].len > f->chunk_bytes - o->seg[0].dst_off ||
		    o->chunk_bytes > f->chunk_bytes)
			return VFGX_FD_OFFSET_PAST_CHUNK;
		return VFGX_FD_OK;
	case VFGX_FMT_PLACE_LINES:
		o->chunk = o->timestamp;
		for (uint32_t i = 0; i < o->nseg; i++)
			if (o->seg[i].dst_off > f->chunk_bytes ||
			    o->seg[i].len > f->chunk_bytes - o->seg[i].dst_off)
				return VFGX_FD_SEGMENT_PAST_FRAME;
		return VFGX_FD_OK;
	case VFGX_FMT_PLACE_USER:
		/* vfgx_place_apply checked the pieces against the packet */
		if (o->nseg == 0 || o->nseg > VFGX_FMT_MAX_SEGS)
			return VFGX_FD_OFFSET_PAST_CHUNK;
		for (uint32_t i = 0; i < o->nseg; i++)
			if (o->seg[i].dst_off > f->chunk_bytes ||
			    o->seg[i].len > f->chunk_bytes - o->seg[i].dst_off)
				return VFGX_FD_OFFSET_PAST_CHUNK;
		return VFGX_FD_OK;
	default:
		return VFGX_FD_MISMATCH;
	}
}

/* The engines' drop reason (VFGX_R_*, enum vfgx_drop_reason) of a format
 * rule's VFGX_FD_* code. */
VFGX_HD int vfgx_fmt_drop_reason(int fd)
{
	switch (fd) {
	case VFGX_FD_FIELD_OUTSIDE:
		return VFGX_R_FIELD_OUTSIDE;
	case VFGX_FD_BAD_LENGTH:
		return VFGX_R_BAD_LENGTH;
	case VFGX_FD_OFFSET_PAST_CHUNK:
		return VFGX_R_OFFSET_PAST_CHUNK;
	case VFGX_FD_SEGMENT_PAST_FRAME:
		return VFGX_R_SEGMENT_PAST_FRAME;
	case VFGX_FD_SEQ_JUMP:
		return VFGX_R_SEQ_JUMP;
	case VFGX_FD_LATE:
		return VFGX_R_LATE;
	case VFGX_FD_BAD_STREAM:
		return VFGX_R_BAD_STREAM;
	case VFGX_FD_USER_PLACE:
		return VFGX_R_USER_PLACE;
	case VFGX_FD_OK:
		return VFGX_STAGE_PASS;
	default:
		return VFGX_R_MISMATCH;
	}
}

/* A decoded packet's header timestamp as a chunk reports it (struct
 * vfgx_chunk.hdr_ts): VITA-49 integer seconds << 32 | the fractional
 * timestamp's upper 32 bits; any other the timestamp field (RTP's 32-bit
 * timestamp, VDIF's seconds).  0 when the format has none. */
VFGX_HD int vfgx_fmt_hdr_ts(const struct vfgx_format *f, const struct vfgx_fmt_pkt *o,
			    uint64_t *ts)
{
	if (f->layout == VFGX_FMT_VITA49) {
		*ts = o->timestamp << 32 | o->ts_frac >> 32;
		return 1;
	}
	*ts = o->timestamp;
	return f->timestamp.size != 0;
}

/* ---- host API (libvfgx) ------------------------------------------------- */
#ifndef __CUDACC__
#include "config.h"

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)
/* The i-th built-in profile's name, NULL past the last. */
const char *vfgx_format_profile_name(unsigned i);
/* Fill f with profile name ("vfgx", "rtp", "rtp-video", "vita49",
 * "ecpri", "spead", "vdif", "gr-udp", "gr-udp-size").  -ENOENT for an
 * unknown name. */
int vfgx_format_profile(const char *name, struct vfgx_format *f);
/* A YAML file on its own (what `vfgx format check` reads): either a map
 * with the format keys at the top, or a config with pipeline.format.  One
 * error line on ctx when bad. */
int vfgx_format_load_file(vfgx_ctx *ctx, const char *path, struct vfgx_format *f);
/* The same from len bytes of YAML text; name for messages. */
int vfgx_format_load_string(vfgx_ctx *ctx, const char *name, const char *yaml,
			    size_t len, struct vfgx_format *f);
/* A description against the UDP payload sizes it can receive: every
 * field and the least header inside the smallest (min_payload bytes),
 * the placement's sizes in range; a warning when slots are smaller than
 * the largest payload (max_payload; 0: unknown).  0, or -EINVAL with one
 * error line naming the key. */
int vfgx_format_check(vfgx_ctx *ctx, const struct vfgx_format *f,
		      uint32_t min_payload, uint32_t max_payload);
/* Build f's stream id index (stream_slot) from its stream_ids and turn
 * its use on for more than VFGX_FMT_IDS_IN_ORDER ids (stream_index).
 * Call it after changing stream_ids by hand: a stale index may miss ids
 * (bad_stream). */
void vfgx_format_index(struct vfgx_format *f);
const char *vfgx_fmt_drop_name(int reason);
/* Is f NULL or exactly the vfgx profile (the engines' app-header path)? */
int vfgx_format_is_vfgx(const struct vfgx_format *f);
#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* __CUDACC__ */

/* ---- encoding: a profile's headers for a sender (src/format/format_encode.c) ----
 * What `vfgx send --format` writes (docs/formats.md, "Sending"): the UDP
 * payload of a flow's k-th packet, built from k alone, so the generator's
 * loss, reordering and duplicates carry over as they are. */
#ifndef __CUDACC__
#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)

/* The values a sender puts in the header beyond the description
 * (send.header); defaults in brackets. */
struct vfgx_fmt_send {
	uint32_t argsz;           /* sizeof(struct vfgx_fmt_send) */
	uint32_t payload_type;    /* [96] RTP payload type, 0..127 */
	uint64_t stream_id;       /* [0] flow 0's SSRC, VITA-49 stream id,
				   * PC_ID or VDIF thread; flow s: + s */
	uint64_t seq_start;       /* [0] the first sequence (gr-udp: the
				   * counter before the first packet) */
	uint64_t timestamp_start; /* [0] RTP timestamp, VITA-49 / VDIF seconds */
	uint64_t timestamp_step;  /* [0: the profile's] per packet (rtp: 1),
				   * per frame (rtp-video: 1500), picoseconds
				   * per packet (vita49: 1000000) */
	uint32_t streams;         /* [1] SPEAD: flows whose heap counters
				   * interleave (heap counter = seq_start +
				   * heap x streams + flow) */
	uint32_t pad;
};

void vfgx_fmt_send_default(struct vfgx_fmt_send *s);
/* Whether f can be sent in UDP payloads of room bytes (the layout is
 * built in, the header and at least one body byte fit); 0 or -EINVAL
 * with one line naming the profile and the fix. */
int vfgx_fmt_encode_check(vfgx_ctx *ctx, const struct vfgx_format *f,
			  const struct vfgx_fmt_send *s, uint32_t room);
/* The UDP payload of packet k (0, 1, ...) of flow stream, written into
 * p: header and a body of the pattern vfgx_pattern_byte(stream, n, i).
 * Returns its length (at most room: VITA-49 rounds down to 32-bit words,
 * VDIF to 8 bytes, RFC 4175 to whole pixel groups), or -EINVAL where
 * vfgx_fmt_encode_check would fail. */
int vfgx_fmt_encode(const struct vfgx_format *f, const struct vfgx_fmt_send *s,
		    uint32_t stream, uint64_t k, uint8_t *p, uint32_t room);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* __CUDACC__ */

#endif
