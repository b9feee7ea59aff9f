/* vfgx/stages.h - the packet stages as plain inline C that gcc compiles for
 * the CPU runner and nvcc compiles unchanged for the GPU runner: parse
 * Ethernet (+ one VLAN tag) / IPv4 / UDP, validate lengths and checksums,
 * filter by UDP destination port, read the application sequence header,
 * classify a sequence against a reorder window.  No libc, no globals. */
#ifndef VFGX_STAGES_H
#define VFGX_STAGES_H

#include <stdint.h>

#if defined(__CUDACC__)
#define VFGX_HD __host__ __device__ __forceinline__
#else
#define VFGX_HD static inline __attribute__((always_inline))
#endif

/* Drop reasons match enum vfgx_drop_reason in vfgx/port.h; repeated here as
 * plain constants so this header stands alone under nvcc. */
#define VFGX_STAGE_PASS (-1)
#define VFGX_R_TRUNCATED 2
#define VFGX_R_BAD_ETH 3
#define VFGX_R_BAD_IP 4
#define VFGX_R_BAD_IP_CSUM 5
#define VFGX_R_NOT_UDP 6
#define VFGX_R_BAD_UDP 7
#define VFGX_R_BAD_UDP_CSUM 8
#define VFGX_R_FILTERED 9
#define VFGX_R_BAD_APP_HDR 10
#define VFGX_R_BAD_STREAM 11
#define VFGX_R_LATE 12
#define VFGX_R_DUPLICATE 13
#define VFGX_R_TOO_BIG 14
#define VFGX_R_FIELD_OUTSIDE 16
#define VFGX_R_BAD_LENGTH 17
#define VFGX_R_MISMATCH 18
#define VFGX_R_OFFSET_PAST_CHUNK 19
#define VFGX_R_SEGMENT_PAST_FRAME 20
#define VFGX_R_SEQ_JUMP 21
#define VFGX_R_USER_PLACE 22

#define VFGX_ETH_HLEN 14
#define VFGX_VLAN_HLEN 4
#define VFGX_ETHERTYPE_IPV4 0x0800
#define VFGX_ETHERTYPE_VLAN 0x8100
#define VFGX_IPPROTO_UDP 17
#define VFGX_UDP_HLEN 8

/* Application header at the start of the UDP payload, network byte order:
 * stream id (4), flags (4), sequence (8). */
#define VFGX_APP_HLEN 16
#define VFGX_APP_FLAG_LAST 0x1 /* last packet of the stream */

struct vfgx_parsed {
	uint32_t src_ip, dst_ip; /* host byte order */
	uint16_t src_port, dst_port;
	uint16_t vlan;           /* VLAN id, 0 when untagged */
	uint16_t l3_off;
	uint16_t l4_off;
	uint16_t payload_off;    /* UDP payload */
	uint32_t payload_len;
};

struct vfgx_app_hdr {
	uint32_t stream;
	uint32_t flags;
	uint64_t seq;
};

VFGX_HD uint16_t vfgx_rd16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

VFGX_HD uint32_t vfgx_rd32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}

VFGX_HD uint64_t vfgx_rd64(const uint8_t *p)
{
	return ((uint64_t)vfgx_rd32(p) << 32) | vfgx_rd32(p + 4);
}

VFGX_HD void vfgx_wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

VFGX_HD void vfgx_wr32(uint8_t *p, uint32_t v)
{
	vfgx_wr16(p, (uint16_t)(v >> 16));
	vfgx_wr16(p + 2, (uint16_t)v);
}

VFGX_HD void vfgx_wr64(uint8_t *p, uint64_t v)
{
	vfgx_wr32(p, (uint32_t)(v >> 32));
	vfgx_wr32(p + 4, (uint32_t)v);
}

/* Ones-complement sum of big-endian 16-bit words, not folded to 16 bits.
 * Adds 32-bit words into a 64-bit accumulator (2^16 == 1 modulo 0xffff, so
 * this is congruent to the 16-bit sum) and folds to 32 bits at the end. */
VFGX_HD uint32_t vfgx_csum_add(uint32_t sum, const uint8_t *p, uint32_t len)
{
	uint64_t acc = sum;
	uint32_t i = 0;

	for (; i + 4 <= len; i += 4)
		acc += vfgx_rd32(p + i);
	for (; i + 1 < len; i += 2)
		acc += (uint32_t)((p[i] << 8) | p[i + 1]);
	if (i < len)
		acc += (uint32_t)(p[i] << 8);
	acc = (acc & 0xffffffffu) + (acc >> 32);
	acc = (acc & 0xffffffffu) + (acc >> 32);
	return (uint32_t)acc;
}

VFGX_HD uint16_t vfgx_csum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* UDP checksum over pseudo header + UDP header + payload (udp points at the
 * UDP header, udp_len from its length field). 0 is sent as 0xffff. */
VFGX_HD uint16_t vfgx_udp_csum(uint32_t src, uint32_t dst, const uint8_t *udp,
			       uint32_t udp_len)
{
	uint32_t sum = (src >> 16) + (src & 0xffff) + (dst >> 16) +
		       (dst & 0xffff) + VFGX_IPPROTO_UDP + udp_len;
	uint16_t c = vfgx_csum_fold(vfgx_csum_add(sum, udp, udp_len));

	return c ? c : 0xffff;
}

/*
 * Everything vfgx_parse checks except the UDP checksum, which *udp_csum
 * says must still be verified (non-zero checksum field): the GPU runner
 * sums the UDP bytes with a whole warp, then folds as vfgx_parse does.
 */
VFGX_HD int vfgx_parse_headers(const uint8_t *f, uint32_t len,
			       struct vfgx_parsed *o, int *udp_csum)
{
	uint32_t off = VFGX_ETH_HLEN;
	uint16_t et;
	uint32_t ihl, tot, udp_len;
	const uint8_t *ip, *udp;

	if (len < VFGX_ETH_HLEN)
		return VFGX_R_TRUNCATED;
	et = vfgx_rd16(f + 12);
	o->vlan = 0;
	if (et == VFGX_ETHERTYPE_VLAN) {
		if (len < VFGX_ETH_HLEN + VFGX_VLAN_HLEN)
			return VFGX_R_TRUNCATED;
		o->vlan = vfgx_rd16(f + 14) & 0x0fff;
		et = vfgx_rd16(f + 16);
		off += VFGX_VLAN_HLEN;
	}
	if (et != VFGX_ETHERTYPE_IPV4)
		return VFGX_R_BAD_ETH;
	if (len < off + 20)
		return VFGX_R_TRUNCATED;
	ip = f + off;
	if ((ip[0] >> 4) != 4)
		return VFGX_R_BAD_IP;
	ihl = (uint32_t)(ip[0] & 0xf) * 4;
	if (ihl < 20)
		return VFGX_R_BAD_IP;
	tot = vfgx_rd16(ip + 2);
	if (len < off + ihl)
		return VFGX_R_TRUNCATED;
	if (tot < ihl)
		return VFGX_R_BAD_IP;
	if (off + tot > len)
		return VFGX_R_TRUNCATED;
	/* more-fragments flag or a fragment offset: not reassembled here */
	if (vfgx_rd16(ip + 6) & 0x3fff)
		return VFGX_R_BAD_IP;
	if (vfgx_csum_fold(vfgx_csum_add(0, ip, ihl)) != 0)
		return VFGX_R_BAD_IP_CSUM;
	if (ip[9] != VFGX_IPPROTO_UDP)
		return VFGX_R_NOT_UDP;
	if (tot < ihl + VFGX_UDP_HLEN)
		return VFGX_R_TRUNCATED;
	udp = ip + ihl;
	udp_len = vfgx_rd16(udp + 4);
	if (udp_len < VFGX_UDP_HLEN || udp_len != tot - ihl)
		return VFGX_R_BAD_UDP;
	o->src_ip = vfgx_rd32(ip + 12);
	o->dst_ip = vfgx_rd32(ip + 16);
	*udp_csum = vfgx_rd16(udp + 6) != 0;
	o->src_port = vfgx_rd16(udp);
	o->dst_port = vfgx_rd16(udp + 2);
	o->l3_off = (uint16_t)off;
	o->l4_off = (uint16_t)(off + ihl);
	o->payload_off = (uint16_t)(off + ihl + VFGX_UDP_HLEN);
	o->payload_len = udp_len - VFGX_UDP_HLEN;
	return VFGX_STAGE_PASS;
}

/* Pseudo-header part of the UDP checksum sum (not folded). */
VFGX_HD uint32_t vfgx_udp_pseudo_sum(const struct vfgx_parsed *o)
{
	uint32_t udp_len = o->payload_len + VFGX_UDP_HLEN;

	return (o->src_ip >> 16) + (o->src_ip & 0xffff) + (o->dst_ip >> 16) +
	       (o->dst_ip & 0xffff) + VFGX_IPPROTO_UDP + udp_len;
}

/*
 * Parse and validate one frame.  Returns VFGX_STAGE_PASS and fills *o, or
 * the drop reason.  Checks: room for every header, IPv4 version/IHL, total
 * length within the frame, no fragments, header checksum, UDP length
 * consistent with IPv4, UDP checksum unless it is 0 (not computed).
 */
VFGX_HD int vfgx_parse(const uint8_t *f, uint32_t len, struct vfgx_parsed *o)
{
	int need_csum;
	int r = vfgx_parse_headers(f, len, o, &need_csum);

	if (r != VFGX_STAGE_PASS || !need_csum)
		return r;
	if (vfgx_csum_fold(vfgx_csum_add(vfgx_udp_pseudo_sum(o), f + o->l4_off,
					 o->payload_len + VFGX_UDP_HLEN)) != 0)
		return VFGX_R_BAD_UDP_CSUM;
	return VFGX_STAGE_PASS;
}

/* Accept when no ranges are configured or port falls in one of them. */
VFGX_HD int vfgx_filter_port(const uint16_t *lo, const uint16_t *hi,
			     uint32_t n, uint16_t port)
{
	if (n == 0)
		return VFGX_STAGE_PASS;
	for (uint32_t i = 0; i < n; i++)
		if (port >= lo[i] && port <= hi[i])
			return VFGX_STAGE_PASS;
	return VFGX_R_FILTERED;
}

VFGX_HD int vfgx_app_hdr_read(const uint8_t *payload, uint32_t len,
			      uint32_t max_streams, struct vfgx_app_hdr *h)
{
	if (len < VFGX_APP_HLEN)
		return VFGX_R_BAD_APP_HDR;
	h->stream = vfgx_rd32(payload);
	h->flags = vfgx_rd32(payload + 4);
	h->seq = vfgx_rd64(payload + 8);
	if (h->stream >= max_streams)
		return VFGX_R_BAD_STREAM;
	return VFGX_STAGE_PASS;
}

/* Reorder window classification for sequence seq against base (the next
 * sequence to deliver).  Returns VFGX_R_LATE, or PASS with *ahead set when
 * seq is beyond the window (the window must slide first). */
VFGX_HD int vfgx_reorder_classify(uint64_t base, uint32_t window, uint64_t seq,
				  int *ahead)
{
	*ahead = 0;
	if (seq < base)
		return VFGX_R_LATE;
	if (seq - base >= window)
		*ahead = 1;
	return VFGX_STAGE_PASS;
}

/* The loopback generator's payload pattern (after the app header), so any
 * stage can verify a delivered record without a copy of the original. */
VFGX_HD uint8_t vfgx_pattern_byte(uint32_t stream, uint64_t seq, uint32_t i)
{
	return (uint8_t)(stream * 131u + (uint32_t)seq * 7u + i * 13u + 1u);
}

/* 1 when the len bytes at body are that pattern for stream and seq (a
 * record's body after the app header). */
VFGX_HD int vfgx_pattern_ok(uint32_t stream, uint64_t seq, const uint8_t *body, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (body[i] != vfgx_pattern_byte(stream, seq, i))
			return 0;
	return 1;
}

#endif
