/* seqhdr.h - rewrite the sequence number of a built UDP frame in place, for
 * the sources that hand the same frames out again with sequences advanced
 * (loopback replay, pcap loops). */
#ifndef VFGX_PORT_SEQHDR_H
#define VFGX_PORT_SEQHDR_H

#include <vfgx/stages.h>

/* Bytes from the UDP checksum field to the end of the sequence header's
 * sequence number: checksum (2), UDP payload starts 2 bytes on, the
 * sequence is the application header's last 8 bytes. */
#define VFGX_SEQ_WIN (2 + VFGX_APP_HLEN)

/* Advance the frame whose window (UDP checksum .. end of the sequence) is w
 * by add sequences, updating a sent checksum incrementally (RFC 1624), so
 * a frame damaged on purpose stays damaged. */
static inline void vfgx_seq_advance(uint8_t *w, uint64_t add)
{
	uint8_t *sp = w + VFGX_SEQ_WIN - 8;
	uint64_t old = vfgx_rd64(sp), nw = old + add;
	uint16_t hc = vfgx_rd16(w);

	vfgx_wr64(sp, nw);
	if (hc) { /* 0: no checksum sent */
		/* ~HC + ~old + new over 16-bit words: added as 32-bit halves
		 * and folded, which gives the same ones'-complement sum (it is
		 * taken modulo 0xffff) without a loop over the words */
		uint64_t sum = (uint16_t)~hc;

		sum += (~old >> 32) + (~old & 0xffffffffu) + (nw >> 32) + (nw & 0xffffffffu);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		hc = vfgx_csum_fold((uint32_t)sum);
		vfgx_wr16(w, hc ? hc : 0xffff);
	}
}

#endif
