/* vfgx/place.h - a user placement function: for a header a description
 * (vfgx/format.h) cannot express, the user's own code says where a packet
 * goes.  One contract for both engines: the same source compiles as C
 * for the cpu engine (a function in a shared object) and as CUDA
 * `__device__` code for the gpu engine (linked into its persistent kernel
 * at run time).  The pipeline checks what the function returns as it
 * checks a description's placement, so it can never make an engine read
 * outside the packet or write outside a chunk.  docs/formats.md, "A user
 * placement function", describes the contract and the keys. */
#ifndef VFGX_PLACE_H
#define VFGX_PLACE_H

#include <stdint.h>

#include "format.h"

/* What a placement function returns. */
#define VFGX_PLACE_OK 0   /* place the packet as *out says */
#define VFGX_PLACE_DROP 1 /* drop it: counted as user_place (any non-zero) */

/* One piece of the packet: len bytes from src_off (bytes from the start
 * of the UDP payload) to dst_off (bytes from the start of the chunk). */
struct vfgx_place_seg {
	uint32_t src_off;
	uint32_t len;
	uint64_t dst_off;
};

/*
 * Where a packet goes.  The engine fills it from what the description
 * decoded (vfgx_place_init) before the call, so a function sets only
 * what it computes.  Placement by slot (pipeline.format.place: slot):
 * stream, seq (as sent; the engine extends it with seq_bits) and seg[0]
 * (the payload; its dst_off is the slot's, not the function's).
 * Placement by the function (place: user): stream, seq, chunk (the
 * chunk's id, e.g. a frame or heap number), end (this packet ends its
 * chunk) and nseg pieces, each at its own dst_off.
 */
struct vfgx_place {
	uint32_t stream;   /* stream index, < the description's streams */
	uint32_t end;      /* non-zero: the packet ends its chunk */
	uint64_t seq;      /* the sequence as sent */
	uint64_t chunk;    /* place: user: the chunk id */
	uint32_t nseg;     /* place: user: 1..VFGX_FMT_MAX_SEGS pieces */
	uint32_t pad;
	struct vfgx_place_seg seg[VFGX_FMT_MAX_SEGS];
};

/*
 * The function: pkt is the UDP payload (len bytes), d what the
 * description decoded from it (stream, sequence as sent, timestamp,
 * payload_off/len, the end mark; d->ext_seq is not yet set).  Returns
 * VFGX_PLACE_OK with *out filled, or VFGX_PLACE_DROP.  It must not keep
 * pkt or d, write anything but *out, or depend on the order of calls:
 * the cpu engine may call it twice for one packet (once on the worker
 * that received it, once on the one owning its stream), and the gpu
 * engine calls it from many threads at once (with place: user, twice for
 * every packet: for its stream, sequence and end mark, then for its
 * chunk and pieces).
 */
typedef int vfgx_place_fn(const uint8_t *pkt, uint32_t len,
			  const struct vfgx_fmt_pkt *d, struct vfgx_place *out);

/* Define a placement function with this in front, the same source for
 * both engines: an exported C function (gcc; the shared object's symbol)
 * or an extern "C" __device__ function (nvcc -rdc=true; what the gpu
 * engine links against):
 *
 *     VFGX_PLACE_FUNC int my_place(const uint8_t *pkt, uint32_t len,
 *                                  const struct vfgx_fmt_pkt *d,
 *                                  struct vfgx_place *out) { ... }
 */
#if defined(__CUDACC__)
#define VFGX_PLACE_FUNC extern "C" __device__ __noinline__
#elif defined(__cplusplus)
#define VFGX_PLACE_FUNC extern "C" __attribute__((visibility("default")))
#else
#define VFGX_PLACE_FUNC __attribute__((visibility("default")))
#endif

/* ---- the engines' side (VFGX_HD): before and after the call ----------- */

/* *u from the description's decode of the packet. */
VFGX_HD void vfgx_place_init(const struct vfgx_fmt_pkt *d, struct vfgx_place *u)
{
	u->stream = d->stream;
	u->end = d->end;
	u->seq = d->seq;
	u->chunk = d->chunk;
	u->pad = 0;
	if (d->nseg) {
		u->nseg = d->nseg <= VFGX_FMT_MAX_SEGS ? d->nseg : VFGX_FMT_MAX_SEGS;
		for (uint32_t i = 0; i < u->nseg; i++) {
			u->seg[i].src_off = d->seg[i].src_off;
			u->seg[i].len = d->seg[i].len;
			u->seg[i].dst_off = d->seg[i].dst_off;
		}
	} else {
		u->nseg = 1;
		u->seg[0].src_off = d->payload_off;
		u->seg[0].len = d->payload_len;
		u->seg[0].dst_off = 0;
	}
	for (uint32_t i = u->nseg; i < VFGX_FMT_MAX_SEGS; i++) {
		u->seg[i].src_off = 0;
		u->seg[i].len = 0;
		u->seg[i].dst_off = 0;
	}
}

/*
 * The function's answer ret and *u for a packet of len bytes, checked and
 * written into o (the packet as the description decoded it): a drop
 * (VFGX_FD_USER_PLACE), a stream past the description's streams
 * (VFGX_FD_BAD_STREAM), a piece count out of 1..VFGX_FMT_MAX_SEGS or a
 * piece outside the packet (VFGX_FD_FIELD_OUTSIDE).  Where the pieces go
 * in the chunk is vfgx_fmt_place's check, the one every description
 * passes (VFGX_FD_OFFSET_PAST_CHUNK).  By slot (f->place slot) the
 * payload is seg[0]; by the function (VFGX_FMT_PLACE_USER) every piece.
 */
VFGX_HD int vfgx_place_apply(const struct vfgx_format *f, uint32_t len, int ret,
			     const struct vfgx_place *u, struct vfgx_fmt_pkt *o)
{
	uint32_t n = f->place == VFGX_FMT_PLACE_USER ? u->nseg : 1;

	if (ret != VFGX_PLACE_OK)
		return VFGX_FD_USER_PLACE;
	if (u->stream >= f->max_streams)
		return VFGX_FD_BAD_STREAM;
	if (n == 0 || n > VFGX_FMT_MAX_SEGS)
		return VFGX_FD_FIELD_OUTSIDE;
	for (uint32_t i = 0; i < n; i++)
		if (u->seg[i].src_off > len || u->seg[i].len > len - u->seg[i].src_off)
			return VFGX_FD_FIELD_OUTSIDE;
	o->stream = u->stream;
	o->end = u->end != 0;
	o->seq = u->seq;
	o->chunk = u->chunk;
	o->chunk_bytes = 0;
	o->payload_off = u->seg[0].src_off;
	o->payload_len = u->seg[0].len;
	o->nseg = n;
	for (uint32_t i = 0; i < n; i++) {
		o->seg[i].src_off = u->seg[i].src_off;
		o->seg[i].len = u->seg[i].len;
		o->seg[i].dst_off = u->seg[i].dst_off;
		o->seg[i].line = 0;
		o->seg[i].pixel = 0;
	}
	return VFGX_FD_OK;
}

/* ---- host API (libvfgx) ------------------------------------------------- */
#ifndef __CUDACC__
#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)

/* pipeline.format.user_place: where the function is.  A caller that has
 * the function already sets fn (library may then be NULL). */
struct vfgx_place_conf {
	uint32_t argsz;          /* sizeof(struct vfgx_place_conf) */
	uint32_t pad;
	const char *library;     /* cpu engine: shared object (dlopen) */
	const char *symbol;      /* the function's name, in both */
	const char *gpu_module;  /* gpu engine: relocatable device code
				  * (nvcc -rdc=true: cubin, fatbin, PTX or
				  * an object) with symbol in it */
	vfgx_place_fn *fn;       /* cpu engine: the function, or NULL: load
				  * it from library */
};

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* __CUDACC__ */

#endif
