/* tile_place.c - a user placement function (vfgx/place.h) for a made-up
 * "tiles" header that a description cannot express: the payload starts
 * where a header-length byte says (optional words in between), control
 * packets share the port and must be dropped, and a tile's place in its
 * frame is a table lookup (the sender sends tiles in a scrambled order).
 * The same source is built twice: by gcc as tile_place.so for the cpu
 * engine and by nvcc (-x cu -rdc=true) as tile_place.fatbin for the gpu
 * engine, which links it into its kernel at run time.
 *
 * The header, network byte order:
 *   byte 0     version (upper 4 bits, 1) | kind (lower 4: 0 data, 1 control)
 *   byte 1     header length in 32-bit words (>= 2); the payload follows it
 *   bytes 2-3  frame number
 *   byte 4     tile number as sent (0..15)
 *   byte 5     stream
 *   bytes 6-7  payload bytes (must match the packet)
 * A frame is 16 tiles of TILE_PLACE_BYTES bytes. */
#include <vfgx/place.h>

#include "tile_place.h"

/* where the tile sent k-th goes in its frame: a permutation of 0..15
 * (here (5k + 5) mod 16, as a table: any table works) */
#if defined(__CUDACC__)
__device__
#endif
static const uint8_t tile_order[TILE_PLACE_TILES] = {
	5, 10, 15, 4, 9, 14, 3, 8, 13, 2, 7, 12, 1, 6, 11, 0,
};

VFGX_PLACE_FUNC int tile_place(const uint8_t *pkt, uint32_t len,
			       const struct vfgx_fmt_pkt *d, struct vfgx_place *out)
{
	uint32_t hlen, plen, frame, tile;

	(void)d; /* the description reads nothing this header needs */
	if (len < 8 || pkt[0] >> 4 != 1 || (pkt[0] & 0x0f) != 0)
		return VFGX_PLACE_DROP; /* another version, or a control packet */
	hlen = 4u * pkt[1];
	plen = (uint32_t)pkt[6] << 8 | pkt[7];
	if (hlen < 8 || hlen > len || plen != len - hlen || pkt[4] >= TILE_PLACE_TILES)
		return VFGX_PLACE_DROP;
	frame = (uint32_t)pkt[2] << 8 | pkt[3];
	tile = tile_order[pkt[4]];
	out->stream = pkt[5];
	/* by slot (place: slot): the slot is seq modulo the frame's tiles */
	out->seq = (uint64_t)frame * TILE_PLACE_TILES + tile;
	/* by itself (place: user): the frame is the chunk, the tile its
	 * offset (a sender's length that lies is the pipeline's to refuse:
	 * it checks every piece against the chunk) */
	out->chunk = frame;
	out->end = 0;
	out->nseg = 1;
	out->seg[0].src_off = hlen;
	out->seg[0].len = plen;
	out->seg[0].dst_off = (uint64_t)tile * TILE_PLACE_BYTES;
	return VFGX_PLACE_OK;
}
