/* tile_place.h - the geometry of examples/user_place's made-up "tiles"
 * header, shared by the function and the programs that test it. */
#ifndef TILE_PLACE_H
#define TILE_PLACE_H

#define TILE_PLACE_TILES 16 /* tiles per frame */
#define TILE_PLACE_BYTES 64 /* bytes per tile */
#define TILE_PLACE_FRAME (TILE_PLACE_TILES * TILE_PLACE_BYTES)

#include <vfgx/place.h>

/* the placement function (tile_place.c) */
VFGX_PLACE_FUNC int tile_place(const uint8_t *pkt, uint32_t len,
			       const struct vfgx_fmt_pkt *d, struct vfgx_place *out);

#endif
