/* bad_place.h - the faults of bad_place.c (tests/gpu/test_place_gpu.c):
 * the value of a tiles packet's byte 8 (its first optional word) that
 * makes the function return each mistake. */
#ifndef BAD_PLACE_H
#define BAD_PLACE_H

#include <vfgx/place.h>

enum {
	BAD_PLACE_PAST_PACKET = 1, /* field_outside */
	BAD_PLACE_SRC_PAST,        /* field_outside */
	BAD_PLACE_NO_PIECES,       /* field_outside */
	BAD_PLACE_TOO_MANY,        /* field_outside */
	BAD_PLACE_STREAM,          /* bad_stream */
	BAD_PLACE_PAST_CHUNK,      /* offset_past_chunk */
	BAD_PLACE_WRAP,            /* offset_past_chunk */
	BAD_PLACE_SPLIT,           /* placed, as two pieces */
	BAD_PLACE_DROP,            /* user_place */
	BAD_PLACE_FAULTS
};

VFGX_PLACE_FUNC int bad_place(const uint8_t *pkt, uint32_t len, const struct vfgx_fmt_pkt *d,
			      struct vfgx_place *out);

#endif
