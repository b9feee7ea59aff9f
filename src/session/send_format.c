/* send_format.c - send.format (docs/send.md): the generator's packets
 * sent in a producer's profile.  Each generator frame's flow and sequence
 * (its vfgx header) pick what vfgx_fmt_encode writes, so the generator's
 * loss, reordering and duplicates carry over as gaps, late and repeated
 * packets of the profile; a corrupted frame (its last byte flipped) is
 * sent with its last byte flipped the same way.  Frame ports get the
 * frame with its lengths and checksums redone, socket ports the payload. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/vfgx.h>

#include "core/numparse.h"
#include "core/opts.h"
#include "send_format.h"

/* a generator frame (at most 9216 bytes) and its rewrite */
#define SEND_FORMAT_SLOT 9216u

#define HD_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_fmt_send, F, __VA_ARGS__)
/* send.header, for a struct a program filled (vfgx_opts_from_user) */
static const struct vfgx_opt header_tab[] = {
	HD_OPT(U32, payload_type, 96, 0, 127),
	HD_OPT(U64, stream_id, 0, 0, 4294967295.0),
	HD_OPT(U64, seq_start, 0, 0, 281474976710655.0),
	HD_OPT(U64, timestamp_start, 0, 0, 4294967295.0),
	HD_OPT(U64, timestamp_step, 0, 0, 1e12),
	HD_OPT(U32, streams, 0, 0, 65536),
};
#define HEADER_NOPTS (sizeof(header_tab) / sizeof(header_tab[0]))

/* send.header from YAML: the same keys and ranges as header_tab, and
 * numbers in hex as well (an SSRC or stream id reads best that way) */
static const char *const header_keys[] = { "payload_type", "stream_id", "seq_start",
	"timestamp_start", "timestamp_step", "streams", NULL };

int send_header_from_yaml(const struct vfgx_cfg_node *map, struct vfgx_fmt_send *h)
{
	int ret;

	vfgx_opts_default(header_tab, HEADER_NOPTS, h, sizeof(*h));
	if (!vfgx_cfg_present(map))
		return 0;
	if ((ret = vfgx_cfg_check_keys(map, header_keys)))
		return ret;
	for (size_t i = 0; i < HEADER_NOPTS; i++) {
		const struct vfgx_opt *t = &header_tab[i];
		char err[VFGX_NUM_ERR_MAX];
		struct vfgx_cfg_node n;
		const char *v;
		uint64_t x;

		if (vfgx_cfg_child(map, t->key, &n))
			continue;
		if (!(v = vfgx_cfg_scalar(&n)))
			return vfgx_cfg_error(&n, "must be a single value");
		if (vfgx_num_u64(v, 0, (uint64_t)t->max, VFGX_NUM_HEX, &x, err, sizeof(err)))
			return vfgx_cfg_error(&n, "%s", err);
		if (t->type == VFGX_OPT_U32)
			*(uint32_t *)((char *)h + t->off) = (uint32_t)x;
		else
			*(uint64_t *)((char *)h + t->off) = x;
	}
	return 0;
}

/* the profile: format_desc (send.format, or the program's), which
 * format_profile, when given too, must name; else format_profile; else
 * vfgx */
static int resolve_format(vfgx_ctx *ctx, const struct vfgx_send_opts *o, struct vfgx_format *f)
{
	if (o->format_desc) {
		if (o->format_desc->argsz < sizeof(*f))
			return vfgx_set_error(ctx, -EINVAL, "sender: format_desc argsz %u, wanted %zu",
					      o->format_desc->argsz, sizeof(*f));
		*f = *o->format_desc;
		if (o->format_profile && strcmp(o->format_profile, f->name))
			return vfgx_set_error(ctx, -EINVAL, "--format %s: the config's send.format is profile %s; name one of them",
					      o->format_profile, f->name);
		return 0;
	}
	if (!o->format_profile) {
		vfgx_format_profile("vfgx", f);
		return 0;
	}
	if (vfgx_format_profile(o->format_profile, f)) {
		char names[256] = "";

		for (unsigned i = 0; vfgx_format_profile_name(i); i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 i ? ", " : "", vfgx_format_profile_name(i));
		return vfgx_set_error(ctx, -EINVAL, "--format %s: no such profile; built in: %s",
				      o->format_profile, names);
	}
	return 0;
}

/* A description that moved the vfgx profile's fields is a header of the
 * user's own: nothing here writes it. */
static bool is_plain_vfgx(const struct vfgx_format *f)
{
	struct vfgx_format v;

	vfgx_format_profile("vfgx", &v);
	return !strcmp(f->name, "vfgx") && f->layout == v.layout && f->header_len == v.header_len &&
	       !memcmp(&f->stream, &v.stream, (size_t)((const char *)&v.seq_major_mult -
						       (const char *)&v.stream));
}

int send_format_open(vfgx_ctx *ctx, const struct vfgx_config *cfg,
		     const struct vfgx_send_opts *o, struct send_format *sf)
{
	struct vfgx_loopback_opts gen;
	uint32_t size, vlan, flows, room;
	int ret = 0;

	memset(sf, 0, sizeof(*sf));
	if ((ret = resolve_format(ctx, o, &sf->f)))
		return ret;
	if (is_plain_vfgx(&sf->f))
		return 0;
	if (!strcmp(sf->f.name, "vfgx"))
		return vfgx_set_error(ctx, -EINVAL, "%s: send.format: a described header of your own is not sent; vfgx send writes the built-in profiles (docs/formats.md#sending)",
				      cfg->source);
	if (o->source != VFGX_SEND_GENERATOR)
		return vfgx_set_error(ctx, -EINVAL, "%s: send.format %s: only the generator's packets are written in a profile; a pcap file is sent as recorded (drop send.format, or use source: generator)",
				      cfg->source, sf->f.name);
	if (o->header_values)
		ret = vfgx_opts_from_user(ctx, "sender", "send.header", header_tab, HEADER_NOPTS,
					  o->header_values, &sf->hdr, sizeof(sf->hdr));
	else
		vfgx_opts_default(header_tab, HEADER_NOPTS, &sf->hdr, sizeof(sf->hdr));
	if (ret)
		return ret;
	/* the generator's frame: its UDP payload is the room each packet of
	 * the profile is written in */
	if (o->generator) {
		gen = *o->generator;
	} else {
		vfgx_loopback_opts_default(&gen);
	}
	size = gen.packet_size;
	vlan = gen.vlan;
	flows = gen.flows;
	if (!sf->hdr.streams)
		sf->hdr.streams = flows ? flows : 1;
	if (size > SEND_FORMAT_SLOT)
		size = SEND_FORMAT_SLOT; /* the generator refuses it itself */
	room = size > vfgx_pkt_min_len((uint16_t)vlan) ? size - vfgx_pkt_min_len((uint16_t)vlan) + VFGX_APP_HLEN : 0;
	if ((ret = vfgx_fmt_encode_check(ctx, &sf->f, &sf->hdr, room))) {
		char why[512];

		snprintf(why, sizeof(why), "%s", vfgx_last_error(ctx));
		return vfgx_set_error(ctx, ret, "%s: %s", cfg->source, why);
	}
	sf->burst = o->burst;
	sf->buf = malloc((size_t)sf->burst * SEND_FORMAT_SLOT);
	if (!sf->buf)
		return vfgx_set_error(ctx, -ENOMEM, "sender: out of memory for send.format's frames");
	sf->on = true;
	return 0;
}

/* The IPv4 and UDP lengths and checksums of a frame whose UDP payload is
 * now len bytes (UDP checksum only where the generator computed one). */
static void fix_frame(uint8_t *b, const struct vfgx_parsed *ps, uint32_t len, int udp_csum)
{
	uint8_t *ip = b + ps->l3_off, *udp = b + ps->l4_off;
	uint32_t ihl = ps->l4_off - ps->l3_off, udp_len = VFGX_UDP_HLEN + len;

	vfgx_wr16(ip + 2, (uint16_t)(ihl + udp_len));
	vfgx_wr16(ip + 10, 0);
	vfgx_wr16(ip + 10, vfgx_csum_fold(vfgx_csum_add(0, ip, ihl)));
	vfgx_wr16(udp + 4, (uint16_t)udp_len);
	vfgx_wr16(udp + 6, 0);
	if (udp_csum)
		vfgx_wr16(udp + 6, vfgx_udp_csum(ps->src_ip, ps->dst_ip, udp, udp_len));
}

uint16_t send_format_burst(struct send_format *sf, const struct vfgx_pkt *pk, uint16_t n,
			   struct vfgx_pkt *out, bool payload_only, uint64_t *not_udp,
			   uint64_t *encode_drops)
{
	uint16_t k = 0;

	for (uint16_t i = 0; i < n && i < sf->burst; i++) {
		struct vfgx_parsed ps;
		const uint8_t *pay;
		uint8_t *b = sf->buf + (size_t)i * SEND_FORMAT_SLOT, *dst;
		uint32_t hl, stream;
		uint64_t seq;
		int csum, len;
		bool corrupt;

		if (vfgx_parse_headers(pk[i].data, pk[i].len, &ps, &csum) != VFGX_STAGE_PASS) {
			(*not_udp)++;
			continue;
		}
		pay = pk[i].data + ps.payload_off;
		if (ps.payload_len <= VFGX_APP_HLEN || pk[i].len > SEND_FORMAT_SLOT) {
			(*encode_drops)++;
			continue;
		}
		stream = vfgx_rd32(pay);
		seq = vfgx_rd64(pay + 8);
		/* the generator's corruption flips the frame's last byte */
		corrupt = pay[ps.payload_len - 1] !=
			  vfgx_pattern_byte(stream, seq, ps.payload_len - 1 - VFGX_APP_HLEN);
		hl = payload_only ? 0 : ps.payload_off;
		dst = b + hl;
		if (hl)
			memcpy(b, pk[i].data, hl);
		len = vfgx_fmt_encode(&sf->f, &sf->hdr, stream, seq, dst, ps.payload_len);
		if (len <= 0) {
			(*encode_drops)++;
			continue;
		}
		if (hl)
			fix_frame(b, &ps, (uint32_t)len, csum);
		if (corrupt)
			dst[len - 1] ^= 0x40;
		out[k] = pk[i];
		out[k].data = b;
		out[k].len = hl + (uint32_t)len;
		k++;
	}
	return k;
}

void send_format_close(struct send_format *sf)
{
	free(sf->buf);
	sf->buf = NULL;
	sf->on = false;
}
