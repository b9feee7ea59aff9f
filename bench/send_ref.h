/* send_ref.h - the references of `vfgx bench send`'s UDP row, each run
 * pinned to one CPU for a number of seconds:
 * - send_ref_udp: a plain C loop making exactly the system calls `vfgx send`
 *   makes on a UDP socket port (one sendmmsg() per burst of `burst`
 *   datagrams of `payload` bytes, sent as one UDP GSO super-datagram, on a
 *   connected socket with the same SO_SNDBUF), with the same two copies per
 *   datagram (build the datagram into its own buffer, then copy it into the
 *   GSO buffer);
 * - send_ref_trafgen: netsniff-ng's trafgen, the fastest sender Debian
 *   ships, at the packet layer (PF_PACKET TX ring on lo): complete
 *   Ethernet/IPv4/UDP frames with the same payload size.
 * Both send to ip:port (a veth pair's far end).
 * Each returns datagrams per second, or -1 after a message on stderr. */
#ifndef VFGX_BENCH_SEND_REF_H
#define VFGX_BENCH_SEND_REF_H

#include <stdint.h>

double send_ref_udp(int cpu, const char *ip, uint16_t port, uint32_t payload,
		    uint32_t burst, int sndbuf, double secs);
/* trafgen on dev, frames from smac/sip to dmac/dip:port (config written in
 * tmpdir) */
double send_ref_trafgen(int cpu, const char *tmpdir, const char *dev, const uint8_t dmac[6],
			const uint8_t smac[6], const char *sip, const char *dip, uint16_t port,
			uint32_t payload, double secs);

#endif
