/* format_encode.c - a built-in profile's headers written for a sender
 * (vfgx/format.h, "encoding"): the UDP payload of a flow's k-th packet
 * from k alone, each protocol's fields as its specification lays them
 * out, the body the pattern vfgx_pattern_byte.  `vfgx send --format` is
 * its user (docs/formats.md, "Sending"). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <vfgx/core.h>
#include <vfgx/format.h>

enum enc_kind { ENC_NONE = 0, ENC_RTP, ENC_RFC4175, ENC_VITA49, ENC_ECPRI, ENC_SPEAD,
		ENC_VDIF, ENC_GR_UDP, ENC_GR_UDP_SIZE };

#define RTP_HLEN 12
#define RFC4175_HLEN 14  /* RTP + the extended sequence's upper 16 bits */
#define RFC4175_SEG 6    /* length | F line | C offset */
#define VITA49_HLEN 20   /* word 0, stream id, integer and fractional timestamps */
#define ECPRI_HLEN 8     /* common header, PC_ID, SEQ_ID */
#define SPEAD_NITEMS 4
#define SPEAD_HLEN (8 + 8 * SPEAD_NITEMS)
#define VDIF_HLEN 32
#define GR_UDP_HLEN 8
#define GR_UDP_SIZE_HLEN 16
#define PS_PER_S 1000000000000ull

static enum enc_kind enc_kind(const struct vfgx_format *f)
{
	static const struct {
		const char *name;
		enum enc_kind kind;
		uint32_t layout;
	} t[] = {
		{ "rtp", ENC_RTP, VFGX_FMT_RTP },
		{ "rtp-video", ENC_RFC4175, VFGX_FMT_RFC4175 },
		{ "vita49", ENC_VITA49, VFGX_FMT_VITA49 },
		{ "ecpri", ENC_ECPRI, VFGX_FMT_FIXED },
		{ "spead", ENC_SPEAD, VFGX_FMT_SPEAD },
		{ "vdif", ENC_VDIF, VFGX_FMT_FIXED },
		{ "gr-udp", ENC_GR_UDP, VFGX_FMT_FIXED },
		{ "gr-udp-size", ENC_GR_UDP_SIZE, VFGX_FMT_FIXED },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(f->name, t[i].name) && f->layout == t[i].layout)
			return t[i].kind;
	return ENC_NONE;
}

void vfgx_fmt_send_default(struct vfgx_fmt_send *s)
{
	memset(s, 0, sizeof(*s));
	s->argsz = sizeof(*s);
	s->payload_type = 96;
	s->streams = 1;
}

static void wr16le(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void wr32le(uint8_t *p, uint32_t v)
{
	wr16le(p, (uint16_t)v);
	wr16le(p + 2, (uint16_t)(v >> 16));
}

static void wr64le(uint8_t *p, uint64_t v)
{
	wr32le(p, (uint32_t)v);
	wr32le(p + 4, (uint32_t)(v >> 32));
}

/* len bytes of flow stream's chunk or packet n from byte off on: the
 * bytes vfgx_pattern_byte(stream, n, off + i), a first byte and steps of
 * 13; eight at a time on a little-endian host (bytewise sums in a 64-bit
 * word, no carry between the bytes), the sender's one pass over them */
static void body(uint8_t *p, uint32_t len, uint32_t stream, uint64_t n, uint64_t off)
{
	uint8_t c = vfgx_pattern_byte(stream, n, (uint32_t)off);
	uint32_t i = 0;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t hi = 0x8080808080808080ull, steps = 0x5b4e4134271a0d00ull; /* 13 j */

	for (; i + 8 <= len; i += 8) {
		uint64_t x = 0x0101010101010101ull * (uint8_t)(c + i * 13u);
		uint64_t v = ((x & ~hi) + (steps & ~hi)) ^ ((x ^ steps) & hi);

		memcpy(p + i, &v, 8);
	}
#endif
	for (; i < len; i++)
		p[i] = (uint8_t)(c + i * 13u);
}

/* RFC 4175: the frame bytes each packet carries, a whole number of pixel
 * groups, the most whose segment headers (one per line touched) still fit
 * room: with nseg headers, a run from any pixel group touches at most
 * nseg lines when it is at most nseg - 1 lines long (stride is whole
 * pixel groups), a whole frame exactly its lines.  0 when none fit. */
static uint32_t rfc4175_bytes(const struct vfgx_format *f, uint32_t room)
{
	uint64_t frame = f->chunk_bytes, best = 0;

	for (uint32_t nseg = 1; nseg <= VFGX_FMT_MAX_SEGS; nseg++) {
		uint32_t hl = RFC4175_HLEN + RFC4175_SEG * nseg;
		uint64_t b;

		if (room <= hl)
			break;
		b = (room - hl) / f->pgroup_bytes * f->pgroup_bytes;
		if (b >= frame && frame / f->stride <= nseg)
			b = frame;
		else if (b > (uint64_t)(nseg - 1) * f->stride)
			b = (uint64_t)(nseg - 1) * f->stride;
		if (b > best)
			best = b;
	}
	return (uint32_t)best;
}

int vfgx_fmt_encode_check(vfgx_ctx *ctx, const struct vfgx_format *f,
			  const struct vfgx_fmt_send *s, uint32_t room)
{
	enum enc_kind k = enc_kind(f);
	uint32_t need = 0;

	switch (k) {
	case ENC_NONE:
		return vfgx_set_error(ctx, -EINVAL, "send.format: '%s' (layout %u) is not a built-in profile a sender writes (rtp, rtp-video, vita49, ecpri, spead, vdif, gr-udp, gr-udp-size; vfgx is the generator's own)",
				      f->name, f->layout);
	case ENC_RTP:
		need = RTP_HLEN;
		break;
	case ENC_RFC4175:
		if (!f->stride || !f->pgroup_bytes || !f->pgroup_pixels || f->chunk_bytes < f->stride ||
		    f->chunk_bytes % f->stride || f->stride % f->pgroup_bytes ||
		    f->chunk_bytes / f->stride > 32767)
			return vfgx_set_error(ctx, -EINVAL, "send.format rtp-video: stride %u, frame %llu bytes, pixel group %u bytes / %u pixels: a frame is height whole lines of whole pixel groups (set width, height, pgroup_bytes, pgroup_pixels)",
					      f->stride, (unsigned long long)f->chunk_bytes,
					      f->pgroup_bytes, f->pgroup_pixels);
		if (f->stride / f->pgroup_bytes * f->pgroup_pixels > 32767)
			return vfgx_set_error(ctx, -EINVAL, "send.format rtp-video: a line of %u pixels; RFC 4175 offsets are 15 bits",
					      f->stride / f->pgroup_bytes * f->pgroup_pixels);
		if (!rfc4175_bytes(f, room))
			return vfgx_set_error(ctx, -EINVAL, "send.format rtp-video: a %u-byte UDP payload holds no %u-byte pixel group after the RTP and segment headers (raise generator.packet_size)",
					      room, f->pgroup_bytes);
		break;
	case ENC_VITA49:
		need = VITA49_HLEN + 3;
		if (room > 0xffffu * 4)
			return vfgx_set_error(ctx, -EINVAL, "send.format vita49: a %u-byte UDP payload; a packet is at most 65535 words",
					      room);
		break;
	case ENC_ECPRI:
		need = ECPRI_HLEN;
		break;
	case ENC_SPEAD:
		need = SPEAD_HLEN;
		if (f->chunk_bytes == 0 || f->chunk_bytes >= (1ull << 48))
			return vfgx_set_error(ctx, -EINVAL, "send.format spead: chunk_bytes %llu: the heap size, 1..2^48-1",
					      (unsigned long long)f->chunk_bytes);
		if (s->streams == 0)
			return vfgx_set_error(ctx, -EINVAL, "send.header.streams: 0; SPEAD heap counters interleave over 1 or more flows");
		break;
	case ENC_VDIF:
		need = VDIF_HLEN + 7;
		if (f->seq_major_mult == 0 || f->seq_major_mult > (1u << 24))
			return vfgx_set_error(ctx, -EINVAL, "send.format vdif: frames_per_second %llu; set it, 1..2^24 (the frame number is 24 bits)",
					      (unsigned long long)f->seq_major_mult);
		if (room / 8 >= (1u << 24))
			return vfgx_set_error(ctx, -EINVAL, "send.format vdif: a %u-byte frame is past the 24-bit length", room);
		break;
	case ENC_GR_UDP:
		need = GR_UDP_HLEN;
		break;
	case ENC_GR_UDP_SIZE:
		need = GR_UDP_SIZE_HLEN;
		if (room > 32767)
			return vfgx_set_error(ctx, -EINVAL, "send.format gr-udp-size: a %u-byte UDP payload; its length field is a signed 16-bit number",
					      room);
		break;
	}
	if (room <= need)
		return vfgx_set_error(ctx, -EINVAL, "send.format %s: a %u-byte UDP payload does not hold the %u-byte header and a body (raise generator.packet_size)",
				      f->name, room, need);
	if (k == ENC_RTP || k == ENC_RFC4175) {
		if (s->payload_type > 127)
			return vfgx_set_error(ctx, -EINVAL, "send.header.payload_type: %u; RTP payload types are 0..127",
					      s->payload_type);
	}
	return 0;
}

static uint64_t step_or(const struct vfgx_fmt_send *s, uint64_t def)
{
	return s->timestamp_step ? s->timestamp_step : def;
}

/* RFC 3550 fixed header: V=2, no padding, extension or CSRC. */
static void rtp_hdr(uint8_t *p, const struct vfgx_fmt_send *s, uint32_t stream, int marker,
		    uint64_t seq, uint64_t ts)
{
	p[0] = 0x80;
	p[1] = (uint8_t)((marker ? 0x80 : 0) | (s->payload_type & 0x7f));
	vfgx_wr16(p + 2, (uint16_t)seq);
	vfgx_wr32(p + 4, (uint32_t)ts);
	vfgx_wr32(p + 8, (uint32_t)(s->stream_id + stream));
}

/* RFC 4175: packet k carries frame bytes [j x b, j x b + b) of frame
 * k / per_frame (j = k % per_frame; the last packet the rest, with the
 * marker), one segment per line touched. */
static int enc_rfc4175(const struct vfgx_format *f, const struct vfgx_fmt_send *s,
		       uint32_t stream, uint64_t k, uint8_t *p, uint32_t room)
{
	uint64_t frame = f->chunk_bytes, b = rfc4175_bytes(f, room);
	uint64_t per_frame = (frame + b - 1) / b, n = k / per_frame, j = k % per_frame;
	uint64_t off = j * b, end = off + b < frame ? off + b : frame, seq = s->seq_start + k;
	uint32_t nseg = 0, h;

	rtp_hdr(p, s, stream, j == per_frame - 1, seq, s->timestamp_start + n * step_or(s, 1500));
	vfgx_wr16(p + RTP_HLEN, (uint16_t)(seq >> 16));
	for (uint64_t o = off; o < end; nseg++)
		o = (o / f->stride + 1) * f->stride;
	h = RFC4175_HLEN + RFC4175_SEG * nseg;
	for (uint64_t o = off, i = 0; o < end; i++) {
		uint64_t line = o / f->stride, lend = (line + 1) * f->stride;
		uint64_t e = lend < end ? lend : end;
		uint32_t pix = (uint32_t)((o % f->stride) / f->pgroup_bytes * f->pgroup_pixels);
		uint8_t *sh = p + RFC4175_HLEN + RFC4175_SEG * i;

		vfgx_wr16(sh, (uint16_t)(e - o));
		vfgx_wr16(sh + 2, (uint16_t)(line & 0x7fff));
		vfgx_wr16(sh + 4, (uint16_t)((pix & 0x7fff) | (i + 1 < nseg ? 0x8000 : 0)));
		o = e;
	}
	body(p + h, (uint32_t)(end - off), stream, n, off);
	return (int)(h + (end - off));
}

/* VITA-49.0 IF data packet with stream id (type 1), no class id or
 * trailer, TSI 1 (UTC seconds) and TSF 2 (real-time picoseconds). */
static int enc_vita49(const struct vfgx_fmt_send *s, uint32_t stream, uint64_t k, uint8_t *p,
		      uint32_t room)
{
	uint32_t len = room / 4 * 4;
	uint64_t t = (s->seq_start + k) * step_or(s, 1000000);

	vfgx_wr32(p, (1u << 28) | (1u << 22) | (2u << 20) |
			     (uint32_t)(((s->seq_start + k) & 0xf) << 16) | (len / 4));
	vfgx_wr32(p + 4, (uint32_t)(s->stream_id + stream));
	vfgx_wr32(p + 8, (uint32_t)(s->timestamp_start + t / PS_PER_S));
	vfgx_wr64(p + 12, t % PS_PER_S);
	body(p + VITA49_HLEN, len - VITA49_HLEN, stream, k, 0);
	return (int)len;
}

/* eCPRI 2.0: revision 1, no concatenation, IQ data (type 0), payload
 * size after the 4-byte common header; PC_ID; SEQ_ID = sequence, E=1
 * with sub-sequence 0 (a message in one packet). */
static int enc_ecpri(const struct vfgx_fmt_send *s, uint32_t stream, uint64_t k, uint8_t *p,
		     uint32_t room)
{
	p[0] = 0x10;
	p[1] = 0;
	vfgx_wr16(p + 2, (uint16_t)(room - 4));
	vfgx_wr16(p + 4, (uint16_t)(s->stream_id + stream));
	p[6] = (uint8_t)(s->seq_start + k);
	p[7] = 0x80;
	body(p + ECPRI_HLEN, room - ECPRI_HLEN, stream, k, 0);
	return (int)room;
}

/* SPEAD-64-48: heaps of chunk_bytes, each in packets of room - 40 payload
 * bytes; every packet has the heap counter, heap size, heap offset and
 * payload length items (immediate). */
static int enc_spead(const struct vfgx_format *f, const struct vfgx_fmt_send *s,
		     uint32_t stream, uint64_t k, uint8_t *p, uint32_t room)
{
	uint64_t heap = f->chunk_bytes, b = room - SPEAD_HLEN;
	uint64_t per_heap = (heap + b - 1) / b, n = k / per_heap, off = (k % per_heap) * b;
	uint64_t len = off + b < heap ? b : heap - off;
	uint64_t cnt = s->seq_start + n * s->streams + stream;
	const uint64_t items[SPEAD_NITEMS][2] = {
		{ 0x1, cnt }, { 0x2, heap }, { 0x3, off }, { 0x4, len },
	};

	p[0] = 0x53;
	p[1] = 4;
	p[2] = 2;
	p[3] = 6;
	vfgx_wr16(p + 4, 0);
	vfgx_wr16(p + 6, SPEAD_NITEMS);
	for (int i = 0; i < SPEAD_NITEMS; i++)
		vfgx_wr64(p + 8 + 8 * i, (1ull << 63) | items[i][0] << 48 |
						 (items[i][1] & 0xffffffffffffull));
	body(p + SPEAD_HLEN, (uint32_t)len, stream, n, off);
	return (int)(SPEAD_HLEN + len);
}

/* VDIF 1.1 frame header, four little-endian words and four of extended
 * user data (EDV 0): valid, not legacy, seconds | epoch 0, frame number
 * | version 0, one channel, length / 8 | real, 8 bits a sample, thread,
 * station 0. */
static int enc_vdif(const struct vfgx_format *f, const struct vfgx_fmt_send *s,
		    uint32_t stream, uint64_t k, uint8_t *p, uint32_t room)
{
	uint32_t len = room / 8 * 8;
	uint64_t n = s->seq_start + k, fps = f->seq_major_mult;

	memset(p, 0, VDIF_HLEN);
	wr32le(p, (uint32_t)((s->timestamp_start + n / fps) & 0x3fffffff));
	wr32le(p + 4, (uint32_t)(n % fps));
	wr32le(p + 8, len / 8);
	wr32le(p + 12, (7u << 26) | (uint32_t)((s->stream_id + stream) & 0x3ff) << 16);
	body(p + VDIF_HLEN, len - VDIF_HLEN, stream, k, 0);
	return (int)len;
}

/* GNU Radio gr-network udp_sink: the sequence (counted before the packet
 * goes: the first is seq_start + 1) in host order (little endian); with
 * the size, the struct's int16 length (the whole payload) and padding. */
static int enc_gr_udp(const struct vfgx_fmt_send *s, bool size, uint32_t stream, uint64_t k,
		      uint8_t *p, uint32_t room)
{
	uint32_t hl = size ? GR_UDP_SIZE_HLEN : GR_UDP_HLEN;

	memset(p, 0, hl);
	wr64le(p, s->seq_start + k + 1);
	if (size)
		wr16le(p + 8, (uint16_t)room);
	body(p + hl, room - hl, stream, k, 0);
	return (int)room;
}

int vfgx_fmt_encode(const struct vfgx_format *f, const struct vfgx_fmt_send *s,
		    uint32_t stream, uint64_t k, uint8_t *p, uint32_t room)
{
	if (vfgx_fmt_encode_check(NULL, f, s, room))
		return -EINVAL;
	switch (enc_kind(f)) {
	case ENC_RTP:
		rtp_hdr(p, s, stream, 0, s->seq_start + k, s->timestamp_start + k * step_or(s, 1));
		body(p + RTP_HLEN, room - RTP_HLEN, stream, k, 0);
		return (int)room;
	case ENC_RFC4175:
		return enc_rfc4175(f, s, stream, k, p, room);
	case ENC_VITA49:
		return enc_vita49(s, stream, k, p, room);
	case ENC_ECPRI:
		return enc_ecpri(s, stream, k, p, room);
	case ENC_SPEAD:
		return enc_spead(f, s, stream, k, p, room);
	case ENC_VDIF:
		return enc_vdif(f, s, stream, k, p, room);
	case ENC_GR_UDP:
		return enc_gr_udp(s, false, stream, k, p, room);
	case ENC_GR_UDP_SIZE:
		return enc_gr_udp(s, true, stream, k, p, room);
	default:
		return -EINVAL;
	}
}
