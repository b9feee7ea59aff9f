/* packet.c - builds complete Ethernet/IPv4/UDP frames with the sequence
 * header and the verifiable payload pattern (vfgx/frame.h); in core, below
 * the ports (the loopback generator) that build frames. */
#include <string.h>

#include <vfgx/frame.h>
#include <vfgx/stages.h>

uint32_t vfgx_pkt_min_len(uint16_t vlan)
{
	return VFGX_ETH_HLEN + (vlan ? VFGX_VLAN_HLEN : 0) + 20 + VFGX_UDP_HLEN +
	       VFGX_APP_HLEN;
}

uint32_t vfgx_pkt_build(uint8_t *buf, uint32_t cap,
			const struct vfgx_pkt_spec *s)
{
	uint32_t off = VFGX_ETH_HLEN, ip_len, udp_len, pay_len;
	uint8_t *ip, *udp, *pay;

	if (s->frame_len < vfgx_pkt_min_len(s->vlan) || s->frame_len > cap ||
	    s->frame_len - VFGX_ETH_HLEN > 0xffff)
		return 0;
	memcpy(buf, s->dst_mac, 6);
	memcpy(buf + 6, s->src_mac, 6);
	if (s->vlan) {
		vfgx_wr16(buf + 12, VFGX_ETHERTYPE_VLAN);
		vfgx_wr16(buf + 14, s->vlan & 0x0fff);
		off += VFGX_VLAN_HLEN;
	}
	vfgx_wr16(buf + off - 2, VFGX_ETHERTYPE_IPV4);
	ip = buf + off;
	ip_len = s->frame_len - off;
	udp_len = ip_len - 20;
	pay_len = udp_len - VFGX_UDP_HLEN;
	ip[0] = 0x45;
	ip[1] = 0;
	vfgx_wr16(ip + 2, (uint16_t)ip_len);
	vfgx_wr16(ip + 4, (uint16_t)s->seq);
	vfgx_wr16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = VFGX_IPPROTO_UDP;
	vfgx_wr16(ip + 10, 0);
	vfgx_wr32(ip + 12, s->src_ip);
	vfgx_wr32(ip + 16, s->dst_ip);
	vfgx_wr16(ip + 10, vfgx_csum_fold(vfgx_csum_add(0, ip, 20)));
	udp = ip + 20;
	vfgx_wr16(udp, s->src_port);
	vfgx_wr16(udp + 2, s->dst_port);
	vfgx_wr16(udp + 4, (uint16_t)udp_len);
	vfgx_wr16(udp + 6, 0);
	pay = udp + VFGX_UDP_HLEN;
	vfgx_wr32(pay, s->stream);
	vfgx_wr32(pay + 4, s->flags);
	vfgx_wr64(pay + 8, s->seq);
	for (uint32_t i = VFGX_APP_HLEN; i < pay_len; i++)
		pay[i] = vfgx_pattern_byte(s->stream, s->seq, i - VFGX_APP_HLEN);
	if (s->udp_csum)
		vfgx_wr16(udp + 6, vfgx_udp_csum(s->src_ip, s->dst_ip, udp, udp_len));
	return s->frame_len;
}
