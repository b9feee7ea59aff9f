/* format.c - the built-in header profiles, the drop reasons' names and
 * the check of a description against the packet sizes it can receive. */
#include <errno.h>
#include <string.h>

#include <vfgx/core.h>
#include <vfgx/format.h>

#include "format/format_priv.h"

#define FLD(O, S) { .offset = (O), .size = (S) }
#define FLD_LE(O, S, SH, B) { .offset = (O), .size = (S), .little = 1, .shift = (SH), .bits = (B) }
#define BITS(O, S, SH, B) { .offset = (O), .size = (S), .shift = (SH), .bits = (B) }

static void fmt_base(struct vfgx_format *f, const char *name)
{
	memset(f, 0, sizeof(*f));
	f->argsz = sizeof(*f);
	strncpy(f->name, name, sizeof(f->name) - 1);
	f->max_streams = UINT32_MAX;
	f->seq_bits = 64;
	f->seq_max_dropout = 1ull << 62;
	f->seq_max_misorder = 1ull << 62;
	f->place = VFGX_FMT_PLACE_SLOT;
	f->packets = 1024;
	f->payload_bytes = 8972; /* a jumbo frame's UDP payload */
	f->chunk_bytes = 1ull << 24;
	f->length_unit = 1;
}

/* vfgx's own header: stream (4), flags (4, bit 0: last), sequence (8). */
static void prof_vfgx(struct vfgx_format *f)
{
	fmt_base(f, "vfgx");
	f->header_len = VFGX_APP_HLEN;
	f->stream = (struct vfgx_fmt_field)FLD(0, 4);
	f->end = (struct vfgx_fmt_field)BITS(4, 4, 0, 1);
	f->seq = (struct vfgx_fmt_field)FLD(8, 8);
}

/* RFC 3550: V P X CC | M PT | sequence (16) | timestamp (32) | SSRC (32). */
static void prof_rtp(struct vfgx_format *f)
{
	fmt_base(f, "rtp");
	f->layout = VFGX_FMT_RTP;
	f->header_len = 12;
	f->seq = (struct vfgx_fmt_field)FLD(2, 2);
	f->timestamp = (struct vfgx_fmt_field)FLD(4, 4);
	f->stream = (struct vfgx_fmt_field)FLD(8, 4);
	f->end = (struct vfgx_fmt_field)BITS(1, 1, 7, 1);
	f->seq_bits = 16;
	f->seq_max_dropout = 3000; /* RFC 3550 appendix A.1 */
	f->seq_max_misorder = 100;
}

/* RFC 4175 raw video over RTP (ST 2110-20 style): one frame per RTP
 * timestamp, the marker on a frame's last packet; 1080p UYVY by default.
 * The sequence is RTP's 16 bits, extended here: GStreamer's rtpvrawpay
 * leaves RFC 4175's extended sequence 0 across wraps (seq_bits: 32 reads
 * it, for a sender that keeps it).  Half the values each way: a frame is
 * thousands of packets, and a lost one is a gap, not a jump. */
static void prof_rtp_video(struct vfgx_format *f)
{
	prof_rtp(f);
	strcpy(f->name, "rtp-video");
	f->layout = VFGX_FMT_RFC4175;
	f->header_len = 14;
	f->seq_bits = 16;
	f->seq_max_dropout = 1u << 15;
	f->seq_max_misorder = 1u << 15;
	f->place = VFGX_FMT_PLACE_LINES;
	f->pgroup_bytes = 4;
	f->pgroup_pixels = 2;
	f->stride = 1920 / 2 * 4;
	f->chunk_bytes = (uint64_t)f->stride * 1080;
}

/* VITA-49 data packets: a 4-bit count; stream id, timestamps per the
 * header bits (vfgx_fmt_vita49). */
static void prof_vita49(struct vfgx_format *f)
{
	fmt_base(f, "vita49");
	f->layout = VFGX_FMT_VITA49;
	f->header_len = 4;
	f->seq_bits = 4;
	f->seq_max_dropout = 8;
	f->seq_max_misorder = 8;
}

/* eCPRI 2.0 over UDP, IQ data (message type 0): revision 1, no
 * concatenation | type | payload size (bytes after these 4) | PC_ID |
 * SEQ_ID (sequence 8 bits, E bit, sub-sequence 7 bits). */
static void prof_ecpri(struct vfgx_format *f)
{
	fmt_base(f, "ecpri");
	f->header_len = 8;
	f->match[0] = (struct vfgx_fmt_field)FLD(0, 1);
	f->match_value[0] = 0x10;
	f->match[1] = (struct vfgx_fmt_field)FLD(1, 1);
	f->match_value[1] = 0;
	f->length = (struct vfgx_fmt_field)FLD(2, 2);
	f->length_add = 4;
	f->stream = (struct vfgx_fmt_field)FLD(4, 2);
	f->seq = (struct vfgx_fmt_field)FLD(6, 1);
	f->seq_bits = 8;
	f->seq_max_dropout = 128;
	f->seq_max_misorder = 128;
}

/* SPEAD-64-48 (vfgx_fmt_spead): heaps by heap counter, placed at the heap
 * offset; a heap ends when its size is reached. */
static void prof_spead(struct vfgx_format *f)
{
	fmt_base(f, "spead");
	f->layout = VFGX_FMT_SPEAD;
	f->header_len = 8;
	f->seq_bits = 48;
	f->seq_max_dropout = 1ull << 40;
	f->seq_max_misorder = 1ull << 40;
	f->place = VFGX_FMT_PLACE_OFFSET;
}

/* VDIF (VLBI Data Interchange Format 1.1), 32-byte header of four
 * little-endian 32-bit words: I L seconds(30) | epoch(6) frame#(24) |
 * version(3) log2 nchan(5) frame length / 8 (24) | C bits-1(5)
 * thread(10) station(16).  Sequence: seconds x frames_per_second +
 * frame#, which must be set (seq_major_mult). */
static void prof_vdif(struct vfgx_format *f)
{
	fmt_base(f, "vdif");
	f->header_len = 32;
	f->match[0] = (struct vfgx_fmt_field)FLD_LE(0, 4, 30, 1); /* legacy: 0 */
	f->seq = (struct vfgx_fmt_field)FLD_LE(4, 4, 0, 24);
	f->seq_major = (struct vfgx_fmt_field)FLD_LE(0, 4, 0, 30);
	f->timestamp = (struct vfgx_fmt_field)FLD_LE(0, 4, 0, 30);
	f->length = (struct vfgx_fmt_field)FLD_LE(8, 4, 0, 24);
	f->length_unit = 8;
	f->stream = (struct vfgx_fmt_field)FLD_LE(12, 4, 16, 10);
}

/* GNU Radio gr-network UDP sink: HEADERTYPE_SEQNUM, a 64-bit sequence in
 * the host's (little-endian) byte order, starting at 1. */
static void prof_gr_udp(struct vfgx_format *f)
{
	fmt_base(f, "gr-udp");
	f->header_len = 8;
	f->seq = (struct vfgx_fmt_field)FLD_LE(0, 8, 0, 0);
}

/* HEADERTYPE_SEQPLUSSIZE: the C++ struct {uint64 seqnum; int16 length;}
 * with its padding, 16 bytes; length is the whole UDP payload. */
static void prof_gr_udp_size(struct vfgx_format *f)
{
	prof_gr_udp(f);
	strcpy(f->name, "gr-udp-size");
	f->header_len = 16;
	f->length = (struct vfgx_fmt_field)FLD_LE(8, 2, 0, 0);
}

static const struct {
	const char *name;
	void (*fill)(struct vfgx_format *f);
} profiles[] = {
	{ "vfgx", prof_vfgx },
	{ "rtp", prof_rtp },
	{ "rtp-video", prof_rtp_video },
	{ "vita49", prof_vita49 },
	{ "ecpri", prof_ecpri },
	{ "spead", prof_spead },
	{ "vdif", prof_vdif },
	{ "gr-udp", prof_gr_udp },
	{ "gr-udp-size", prof_gr_udp_size },
};
#define NB_PROFILES (sizeof(profiles) / sizeof(profiles[0]))

const char *vfgx_format_profile_name(unsigned i)
{
	return i < NB_PROFILES ? profiles[i].name : NULL;
}

int vfgx_format_profile(const char *name, struct vfgx_format *f)
{
	for (size_t i = 0; i < NB_PROFILES; i++) {
		if (!strcmp(name, profiles[i].name)) {
			profiles[i].fill(f);
			return 0;
		}
	}
	return -ENOENT;
}

void vfgx_format_index(struct vfgx_format *f)
{
	uint32_t n = f->n_stream_ids < VFGX_FMT_MAX_STREAM_IDS ? f->n_stream_ids
							       : VFGX_FMT_MAX_STREAM_IDS;

	memset(f->stream_slot, 0, sizeof(f->stream_slot));
	f->stream_index = n > VFGX_FMT_IDS_IN_ORDER;
	/* in list order, so a listed-twice id's probe meets its first
	 * position first, as the search in order does */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t h = vfgx_fmt_id_hash(f->stream_ids[i]);

		while (f->stream_slot[h])
			h = (h + 1) & (VFGX_FMT_STREAM_SLOTS - 1);
		f->stream_slot[h] = (uint8_t)(i + 1);
	}
}

int vfgx_format_is_vfgx(const struct vfgx_format *f)
{
	struct vfgx_format v;

	if (!f)
		return 1;
	prof_vfgx(&v);
	return !memcmp(f, &v, sizeof(v));
}

const char *vfgx_fmt_drop_name(int reason)
{
	static const char *const names[VFGX_FD_MAX] = {
		[VFGX_FD_OK] = "ok",
		[VFGX_FD_FIELD_OUTSIDE] = "field_outside",
		[VFGX_FD_BAD_LENGTH] = "bad_length",
		[VFGX_FD_MISMATCH] = "mismatch",
		[VFGX_FD_OFFSET_PAST_CHUNK] = "offset_past_chunk",
		[VFGX_FD_SEGMENT_PAST_FRAME] = "segment_past_frame",
		[VFGX_FD_SEQ_JUMP] = "seq_jump",
		[VFGX_FD_LATE] = "late",
		[VFGX_FD_BAD_STREAM] = "bad_stream",
		[VFGX_FD_USER_PLACE] = "user_place",
	};

	return reason >= 0 && reason < VFGX_FD_MAX ? names[reason] : "?";
}

static const char *const field_names[] = { "stream", "seq", "seq_major",
	"timestamp", "ts_frac", "end", "length", "match[0]", "match[1]" };

const struct vfgx_fmt_field *vfgx_fmt_field_by_index(const struct vfgx_format *f,
						     unsigned i, const char **name)
{
	const struct vfgx_fmt_field *t[] = { &f->stream, &f->seq, &f->seq_major,
		&f->timestamp, &f->ts_frac, &f->end, &f->length, &f->match[0],
		&f->match[1] };

	if (i >= sizeof(t) / sizeof(t[0]))
		return NULL;
	*name = field_names[i];
	return t[i];
}

/* The least header bytes each variable layout needs before its payload. */
static uint32_t layout_min(const struct vfgx_format *f)
{
	switch (f->layout) {
	case VFGX_FMT_RTP:
		return 12;
	case VFGX_FMT_RFC4175:
		return 12 + 2 + 6;
	case VFGX_FMT_VITA49:
		return 4;
	case VFGX_FMT_SPEAD:
		return 8 + 4 * 8; /* header and the four items placement needs */
	default:
		return f->header_len;
	}
}

int vfgx_format_check(vfgx_ctx *ctx, const struct vfgx_format *f,
		      uint32_t min_payload, uint32_t max_payload)
{
	const char *n = f->name[0] ? f->name : "format";
	const struct vfgx_fmt_field *fl;
	const char *fname;
	uint32_t least = layout_min(f);

	if (f->argsz < sizeof(*f))
		return vfgx_set_error(ctx, -EINVAL, "pipeline.format: argsz %u, wanted %zu",
				      f->argsz, sizeof(*f));
	if (f->layout >= VFGX_FMT_LAYOUT_MAX || f->place >= VFGX_FMT_PLACE_MAX)
		return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: layout %u or place %u unknown",
				      n, f->layout, f->place);
	for (unsigned i = 0; (fl = vfgx_fmt_field_by_index(f, i, &fname)); i++) {
		if (!fl->size)
			continue;
		if (fl->size > 8 || fl->shift >= fl->size * 8 || fl->bits > 64)
			return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: %s: size %u shift %u bits %u; a field is 1..8 bytes and its bits lie inside them",
					      n, fname, fl->size, fl->shift, fl->bits);
		if ((uint32_t)fl->offset + fl->size > min_payload)
			return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: %s ends at byte %u, past the smallest UDP payload this port receives (%u bytes)",
					      n, fname, fl->offset + fl->size, min_payload);
	}
	if (least > min_payload)
		return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: a %u-byte header does not fit the smallest UDP payload this port receives (%u bytes)",
				      n, least > f->header_len ? least : f->header_len, min_payload);
	if (f->seq_bits < 1 || f->seq_bits > 64)
		return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: seq_bits %u; 1..64",
				      n, f->seq_bits);
	if (f->seq_bits < 64 &&
	    f->seq_max_dropout + f->seq_max_misorder > (1ull << f->seq_bits))
		return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: seq_max_dropout %llu + seq_max_misorder %llu exceed the %u-bit sequence's %llu values",
				      n, (unsigned long long)f->seq_max_dropout,
				      (unsigned long long)f->seq_max_misorder, f->seq_bits,
				      1ull << f->seq_bits);
	if (f->seq_bits == 64 && f->seq_max_dropout > (1ull << 63))
		return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: seq_max_dropout above 2^63", n);
	if (f->seq_major.size && f->seq_major_mult == 0)
		return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: a composite sequence needs seq_major_mult (VDIF: frames_per_second)",
				      n);
	if (f->max_streams == 0 || f->n_stream_ids > VFGX_FMT_MAX_STREAM_IDS)
		return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: streams %u, stream_ids %u; streams >= 1, at most %d ids",
				      n, f->max_streams, f->n_stream_ids, VFGX_FMT_MAX_STREAM_IDS);
	if (f->length.size && f->length_unit == 0)
		return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: length unit 0", n);
	switch (f->place) {
	case VFGX_FMT_PLACE_SLOT:
		if (f->packets == 0 || f->payload_bytes == 0)
			return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: place slot needs packets and payload_bytes", n);
		if (max_payload > f->header_len &&
		    max_payload - f->header_len > f->payload_bytes)
			vfgx_warn(ctx, "pipeline.format %s: payload_bytes %u is smaller than the largest payload this port receives (%u bytes after the header); larger packets are dropped (offset_past_chunk)",
				  n, f->payload_bytes, max_payload - f->header_len);
		break;
	case VFGX_FMT_PLACE_OFFSET:
		if (f->layout != VFGX_FMT_SPEAD || f->chunk_bytes == 0)
			return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: place offset needs layout spead and chunk_bytes", n);
		break;
	case VFGX_FMT_PLACE_LINES:
		if (f->layout != VFGX_FMT_RFC4175 || !f->stride || !f->pgroup_bytes ||
		    !f->pgroup_pixels || f->chunk_bytes < f->stride)
			return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: place lines needs layout rfc4175, width, height and the pixel group", n);
		break;
	case VFGX_FMT_PLACE_USER:
		if (f->chunk_bytes == 0)
			return vfgx_set_error(ctx, -EINVAL, "pipeline.format %s: place user needs chunk_bytes (the size of a chunk the function places into)", n);
		break;
	}
	return 0;
}
