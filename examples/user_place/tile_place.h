/* tile_place.h - the geometry of examples/user_place's made-up "tiles"
 * header, shared by the function and the programs that test it. */
#ifndef TILE_PLACE_H
#define TILE_PLACE_H

#define TILE_PLACE_TILES 16 /* tiles per frame */
#define TILE_PLACE_BYTES 64 /* bytes per tile */
#define TILE_PLACE_FRAME (TILE_PLACE_TILES * TILE_PLACE_BYTES)

#endif
