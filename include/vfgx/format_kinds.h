/* vfgx/format_kinds.h - the built-in profiles' decoders, each the same
 * rule as vfgx_fmt_decode's reading of the description, written as
 * straight-line code with the profile's offsets as constants; which one
 * a description gets is chosen once (vfgx_fmt_plan_make), from its
 * fields.  Part of vfgx/format.h (include that): VFGX_HD, compiled by gcc
 * and nvcc alike. */
#ifndef VFGX_FORMAT_KINDS_H
#define VFGX_FORMAT_KINDS_H

#ifndef VFGX_FORMAT_H
#error "include <vfgx/format.h>, not <vfgx/format_kinds.h>"
#endif

/* How vfgx_fmt_decode_plan reads a packet (struct vfgx_fmt_plan.kind). */
enum vfgx_fmt_kind {
	VFGX_FMT_KIND_GENERIC = 0, /* field by field, as described */
	VFGX_FMT_KIND_RTP,         /* rtp: RFC 3550's fields (rtp-video: + RFC 4175) */
	VFGX_FMT_KIND_VITA49,      /* vita49: the VRT header alone */
	VFGX_FMT_KIND_ECPRI,       /* ecpri: revision, type, size, PC_ID, SEQ_ID */
	VFGX_FMT_KIND_SPEAD,       /* spead: the item pointers alone */
	VFGX_FMT_KIND_VDIF,        /* vdif: four little-endian words */
	VFGX_FMT_KIND_GR_UDP,      /* gr-udp (and gr-udp-size: + its length) */
	VFGX_FMT_KIND_MAX
};

/* Is fl exactly {offset, size, little, shift, bits}? */
VFGX_HD int vfgx_fmt_field_is(const struct vfgx_fmt_field *fl, uint32_t offset,
			      uint32_t size, uint32_t little, uint32_t shift, uint32_t bits)
{
	return fl->offset == offset && fl->size == size && fl->little == little &&
	       fl->shift == shift && fl->bits == bits;
}

/* None of fields n of f[] is present. */
VFGX_HD int vfgx_fmt_fields_absent(const struct vfgx_fmt_field *const *fl, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (fl[i]->size)
			return 0;
	return 1;
}

/*
 * The kind of f: a built-in profile's decoder when f's fields are exactly
 * those that decoder reads (the values compared with, match_value,
 * length_unit and length_add, seq_major_mult, the streams and the
 * placement stay f's, read per packet), else VFGX_FMT_KIND_GENERIC.  A
 * description that moves, adds or drops a field (YAML over a profile)
 * gets the generic reading.
 */
VFGX_HD uint32_t vfgx_fmt_plan_kind(const struct vfgx_format *f)
{
	const struct vfgx_fmt_field *no_len_match[] = { &f->length, &f->match[0], &f->match[1] };
	const struct vfgx_fmt_field *rtp_absent[] = { &f->seq_major, &f->ts_frac, &f->length,
						      &f->match[0], &f->match[1] };
	const struct vfgx_fmt_field *ecpri_absent[] = { &f->end, &f->timestamp, &f->ts_frac,
							&f->seq_major };
	const struct vfgx_fmt_field *vdif_absent[] = { &f->match[1], &f->end, &f->ts_frac };
	const struct vfgx_fmt_field *gr_absent[] = { &f->stream, &f->seq_major, &f->timestamp,
						     &f->ts_frac, &f->end, &f->match[0],
						     &f->match[1] };

	switch (f->layout) {
	case VFGX_FMT_RTP:
	case VFGX_FMT_RFC4175:
		if (f->header_len == (f->layout == VFGX_FMT_RTP ? 12u : 14u) &&
		    vfgx_fmt_field_is(&f->seq, 2, 2, 0, 0, 0) &&
		    vfgx_fmt_field_is(&f->timestamp, 4, 4, 0, 0, 0) &&
		    vfgx_fmt_field_is(&f->stream, 8, 4, 0, 0, 0) &&
		    vfgx_fmt_field_is(&f->end, 1, 1, 0, 7, 1) &&
		    vfgx_fmt_fields_absent(rtp_absent, 5))
			return VFGX_FMT_KIND_RTP;
		return VFGX_FMT_KIND_GENERIC;
	case VFGX_FMT_VITA49:
		/* its own header says where each field is; the least
		 * header is the 4 bytes it checks first */
		return f->header_len <= 4 && vfgx_fmt_fields_absent(no_len_match, 3) ?
			       VFGX_FMT_KIND_VITA49 : VFGX_FMT_KIND_GENERIC;
	case VFGX_FMT_SPEAD:
		return f->header_len <= 8 && vfgx_fmt_fields_absent(no_len_match, 3) ?
			       VFGX_FMT_KIND_SPEAD : VFGX_FMT_KIND_GENERIC;
	case VFGX_FMT_FIXED:
		if (f->header_len == 8 && vfgx_fmt_field_is(&f->match[0], 0, 1, 0, 0, 0) &&
		    vfgx_fmt_field_is(&f->match[1], 1, 1, 0, 0, 0) &&
		    vfgx_fmt_field_is(&f->length, 2, 2, 0, 0, 0) &&
		    vfgx_fmt_field_is(&f->stream, 4, 2, 0, 0, 0) &&
		    vfgx_fmt_field_is(&f->seq, 6, 1, 0, 0, 0) &&
		    vfgx_fmt_fields_absent(ecpri_absent, 4))
			return VFGX_FMT_KIND_ECPRI;
		if (f->header_len == 32 && vfgx_fmt_field_is(&f->match[0], 0, 4, 1, 30, 1) &&
		    vfgx_fmt_field_is(&f->seq, 4, 4, 1, 0, 24) &&
		    vfgx_fmt_field_is(&f->seq_major, 0, 4, 1, 0, 30) &&
		    vfgx_fmt_field_is(&f->timestamp, 0, 4, 1, 0, 30) &&
		    vfgx_fmt_field_is(&f->length, 8, 4, 1, 0, 24) &&
		    vfgx_fmt_field_is(&f->stream, 12, 4, 1, 16, 10) &&
		    vfgx_fmt_fields_absent(vdif_absent, 3))
			return VFGX_FMT_KIND_VDIF;
		if (vfgx_fmt_field_is(&f->seq, 0, 8, 1, 0, 0) &&
		    vfgx_fmt_fields_absent(gr_absent, 7) &&
		    ((f->header_len == 8 && !f->length.size) ||
		     (f->header_len == 16 && vfgx_fmt_field_is(&f->length, 8, 2, 1, 0, 0))))
			return VFGX_FMT_KIND_GR_UDP;
		return VFGX_FMT_KIND_GENERIC;
	default:
		return VFGX_FMT_KIND_GENERIC;
	}
}

/* What every decoder writes before reading (o is whole on any return). */
VFGX_HD void vfgx_fmt_pkt_clear(struct vfgx_fmt_pkt *o)
{
	o->stream_raw = 0;
	o->stream = 0;
	o->end = 0;
	o->seq = 0;
	o->ext_seq = 0;
	o->timestamp = 0;
	o->ts_frac = 0;
	o->chunk = 0;
	o->chunk_bytes = 0;
	o->nseg = 0;
	o->pad = 0;
}

/* A drop before a fixed-layout decoder wrote o: o as vfgx_fmt_pkt_clear
 * leaves it (the generic reading's state at its first checks). */
VFGX_HD int vfgx_fmt_pkt_drop(struct vfgx_fmt_pkt *o, int r)
{
	vfgx_fmt_pkt_clear(o);
	return r;
}

/* A fixed-layout packet's fields, each written once: what
 * vfgx_fmt_pkt_clear and the generic reading's fields write, in one go
 * (no store of 0 before the value). */
VFGX_HD void vfgx_fmt_pkt_fixed(struct vfgx_fmt_pkt *o, uint64_t stream_raw, uint64_t seq,
				uint64_t timestamp, uint32_t end, uint32_t payload_off,
				uint32_t payload_len)
{
	o->stream_raw = stream_raw;
	o->stream = 0;
	o->end = end;
	o->seq = seq;
	o->ext_seq = 0;
	o->timestamp = timestamp;
	o->ts_frac = 0;
	o->chunk = 0;
	o->chunk_bytes = 0;
	o->payload_off = payload_off;
	o->payload_len = payload_len;
	o->nseg = 0;
	o->pad = 0;
}

/* A length field's rule (length x length_unit + length_add == the UDP
 * payload's bytes), as vfgx_fmt_decode_generic computes it. */
VFGX_HD int vfgx_fmt_length_ok(const struct vfgx_format *f, uint64_t v, uint32_t len)
{
	return (int64_t)(v * f->length_unit) + f->length_add == (int64_t)len;
}

/* rtp and rtp-video: sequence 2..3, timestamp 4..7, SSRC 8..11, marker
 * the top bit of byte 1; the payload after the CSRCs and the extension
 * (vfgx_fmt_rtp_hdr_len); RFC 4175's segments for rtp-video. */
VFGX_HD int vfgx_fmt_decode_rtp(const struct vfgx_format *f, const uint8_t *p, uint32_t len,
				struct vfgx_fmt_pkt *o)
{
	uint32_t hl;
	int r;

	if (len < f->header_len)
		return vfgx_fmt_pkt_drop(o, VFGX_FD_FIELD_OUTSIDE);
	/* version 2 without padding, extension or CSRCs: 12 bytes (len >=
	 * header_len >= 12); else RFC 3550's whole rule */
	if (p[0] == 0x80)
		hl = 12;
	else if ((r = vfgx_fmt_rtp_hdr_len(p, len, &hl)))
		return vfgx_fmt_pkt_drop(o, r);
	vfgx_fmt_pkt_fixed(o, vfgx_rd32(p + 8), vfgx_rd16(p + 2), vfgx_rd32(p + 4), p[1] >> 7,
			   hl, len - hl - ((p[0] & 0x20) ? p[len - 1] : 0u));
	if (f->layout == VFGX_FMT_RFC4175 && (r = vfgx_fmt_rfc4175(f, p, len, hl, o)))
		return r;
	return vfgx_fmt_stream_index(f, o->stream_raw, &o->stream);
}

/* ecpri: byte 0 and byte 1 matched, payload size 2..3, PC_ID 4..5,
 * SEQ_ID's sequence byte 6; the payload after the 8 bytes. */
VFGX_HD int vfgx_fmt_decode_ecpri(const struct vfgx_format *f, const uint8_t *p,
				  uint32_t len, struct vfgx_fmt_pkt *o)
{
	if (len < 8)
		return vfgx_fmt_pkt_drop(o, VFGX_FD_FIELD_OUTSIDE);
	if (p[0] != f->match_value[0] || p[1] != f->match_value[1])
		return vfgx_fmt_pkt_drop(o, VFGX_FD_MISMATCH);
	if (!vfgx_fmt_length_ok(f, vfgx_rd16(p + 2), len))
		return vfgx_fmt_pkt_drop(o, VFGX_FD_BAD_LENGTH);
	vfgx_fmt_pkt_fixed(o, vfgx_rd16(p + 4), p[6], 0, 0, 8, len - 8);
	return vfgx_fmt_stream_index(f, o->stream_raw, &o->stream);
}

/* vdif: word 0 legacy bit (matched) and seconds, word 1 frame number,
 * word 2 frame length in 8-byte units, word 3 thread; sequence seconds x
 * seq_major_mult + frame number. */
VFGX_HD int vfgx_fmt_decode_vdif(const struct vfgx_format *f, const uint8_t *p,
				 uint32_t len, struct vfgx_fmt_pkt *o)
{
	uint32_t w0;
	uint64_t secs;

	if (len < 32)
		return vfgx_fmt_pkt_drop(o, VFGX_FD_FIELD_OUTSIDE);
	w0 = vfgx_fmt_rd32le(p);
	if ((w0 >> 30 & 1) != f->match_value[0])
		return vfgx_fmt_pkt_drop(o, VFGX_FD_MISMATCH);
	if (!vfgx_fmt_length_ok(f, vfgx_fmt_rd32le(p + 8) & 0xffffff, len))
		return vfgx_fmt_pkt_drop(o, VFGX_FD_BAD_LENGTH);
	secs = w0 & 0x3fffffff;
	vfgx_fmt_pkt_fixed(o, vfgx_fmt_rd32le(p + 12) >> 16 & 0x3ff,
			   (vfgx_fmt_rd32le(p + 4) & 0xffffff) + secs * f->seq_major_mult, secs,
			   0, 32, len - 32);
	return vfgx_fmt_stream_index(f, o->stream_raw, &o->stream);
}

/* gr-udp: a 64-bit little-endian sequence; gr-udp-size: and a 16-bit
 * little-endian length at 8 (the whole UDP payload); stream 0. */
VFGX_HD int vfgx_fmt_decode_gr_udp(const struct vfgx_format *f, const uint8_t *p,
				   uint32_t len, struct vfgx_fmt_pkt *o)
{
	uint32_t hl = f->header_len;

	if (len < hl)
		return vfgx_fmt_pkt_drop(o, VFGX_FD_FIELD_OUTSIDE);
	if (hl == 16 && !vfgx_fmt_length_ok(f, (uint32_t)(p[8] | (p[9] << 8)), len))
		return vfgx_fmt_pkt_drop(o, VFGX_FD_BAD_LENGTH);
	vfgx_fmt_pkt_fixed(o, 0, vfgx_fmt_rd64le(p), 0, 0, hl, len - hl);
	return vfgx_fmt_stream_index(f, 0, &o->stream);
}

#endif
