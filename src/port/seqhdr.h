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
 * a frame damaged on purpose stays damaged; any sequence, a wrap past 2^64
 * included (a capture's may be anything). */
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

/* add modulo 0xffff: what adding add to a 64-bit field adds to a
 * ones'-complement sum over its 16-bit words (2^16 is 1 modulo 0xffff, so
 * the words of a number sum to the number itself there, whatever the
 * carries between them). */
static inline uint32_t vfgx_seq_csum_residue(uint64_t add)
{
	return (uint32_t)(add % 0xffff);
}

/* vfgx_seq_advance into a copy of the window (src -> dst), for many
 * frames advanced by the same add, res its vfgx_seq_csum_residue: one
 * addition and one fold per frame instead of the old and new halves' (the
 * same checksum while the sequences do not wrap past 2^64, as a replay
 * lap's never do). */
static inline void vfgx_seq_advance_res(const uint8_t *src, uint8_t *dst, uint64_t add,
					uint32_t res)
{
	uint16_t hc = vfgx_rd16(src);

	vfgx_wr64(dst + VFGX_SEQ_WIN - 8, vfgx_rd64(src + VFGX_SEQ_WIN - 8) + add);
	if (hc) { /* 0: no checksum sent */
		uint32_t t = (uint32_t)(uint16_t)~hc + res;

		t = (t & 0xffff) + (t >> 16);
		hc = (uint16_t)~t;
		vfgx_wr16(dst, hc ? hc : 0xffff);
	} else {
		vfgx_wr16(dst, 0);
	}
}

#endif
