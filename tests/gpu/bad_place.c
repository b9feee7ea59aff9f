/* bad_place.c - a faulty user placement function for the parity tests
 * (tests/gpu/test_place_gpu.c): examples/user_place's tile_place, with
 * the frame's last tile marked as its end, and with the mistakes a buggy
 * function makes, chosen by the packet's first optional header word
 * (byte 8, when byte 1 says the header has one).  Both engines must
 * refuse each mistake the same way (vfgx_place_apply, vfgx_fmt_place):
 * never read outside the packet or write outside a chunk.  Built as C into
 * the test, and by nvcc (-x cu -rdc=true) as bad_place.fatbin with
 * tile_place.c in the same unit, for the gpu engine's run-time link. */
#include <vfgx/place.h>

#include "bad_place.h"

#if defined(__CUDACC__) /* one module for the link: tile_place with it */
#include "../../examples/user_place/tile_place.c"
#else
#include "../../examples/user_place/tile_place.h"
#endif

VFGX_PLACE_FUNC int bad_place(const uint8_t *pkt, uint32_t len, const struct vfgx_fmt_pkt *d,
			      struct vfgx_place *out)
{
	int r = tile_place(pkt, len, d, out);
	uint64_t half;

	if (r != VFGX_PLACE_OK)
		return r;
	if (out->seg[0].dst_off == TILE_PLACE_FRAME - TILE_PLACE_BYTES)
		out->end = 1;
	if (pkt[1] < 3) /* no optional word: tile_place's answer */
		return r;
	switch (pkt[8]) {
	case BAD_PLACE_PAST_PACKET: /* one byte more than the packet has */
		out->seg[0].len += 1;
		break;
	case BAD_PLACE_SRC_PAST: /* a piece starting past the packet */
		out->seg[0].src_off = len + 4;
		break;
	case BAD_PLACE_NO_PIECES:
		out->nseg = 0;
		break;
	case BAD_PLACE_TOO_MANY:
		out->nseg = VFGX_FMT_MAX_SEGS + 1;
		break;
	case BAD_PLACE_STREAM: /* a stream past the description's */
		out->stream = 200;
		break;
	case BAD_PLACE_PAST_CHUNK: /* half of the tile past the frame */
		out->seg[0].dst_off = TILE_PLACE_FRAME - TILE_PLACE_BYTES / 2;
		break;
	case BAD_PLACE_WRAP: /* an offset whose end wraps around 2^64 */
		out->seg[0].dst_off = ~0ull - 8;
		break;
	case BAD_PLACE_SPLIT: /* not a mistake: the tile as two pieces, the
			       * second half first */
		half = out->seg[0].len / 2;
		out->nseg = 2;
		out->seg[1].src_off = out->seg[0].src_off;
		out->seg[1].len = (uint32_t)half;
		out->seg[1].dst_off = out->seg[0].dst_off;
		out->seg[0].src_off += (uint32_t)half;
		out->seg[0].len -= (uint32_t)half;
		out->seg[0].dst_off += half;
		break;
	case BAD_PLACE_DROP:
		return VFGX_PLACE_DROP;
	default:
		break;
	}
	return VFGX_PLACE_OK;
}
