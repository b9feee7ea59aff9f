/* vfgx/frame.h - the frame builder: complete Ethernet/IPv4/UDP frames with
 * the sequence header and the verifiable payload pattern, as the loopback
 * generator and `vfgx send` make them and the stages (vfgx/stages.h)
 * parse them.  It sits in core, below the ports that use it
 * (src/core/packet.c). */
#ifndef VFGX_FRAME_H
#define VFGX_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

struct vfgx_pkt_spec {
	uint8_t src_mac[6], dst_mac[6];
	uint32_t src_ip, dst_ip;  /* host byte order */
	uint16_t src_port, dst_port;
	uint16_t vlan;            /* 0: untagged */
	uint32_t stream;
	uint32_t flags;
	uint64_t seq;
	uint32_t frame_len;       /* total frame bytes, >= headers + 16 */
	bool udp_csum;            /* compute the UDP checksum (else 0) */
};

/* Minimum frame length that holds all headers and the app header. */
uint32_t vfgx_pkt_min_len(uint16_t vlan);
/* Write a complete frame (checksums, pattern payload) into buf.  Returns
 * the frame length, or 0 when cap is too small or frame_len too short. */
uint32_t vfgx_pkt_build(uint8_t *buf, uint32_t cap,
			const struct vfgx_pkt_spec *s);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
