/* chunk_device.c - the host side of vfgx/chunk_device.h: the addresses a
 * GPU consumer kernel polls and writes (the ring slots' ready, returned
 * and end words, the chunk memory, the gpu engine's per-slot records),
 * and the switch that keeps every stream's chunks out of vfgx_chunk_get
 * (the same switch as vfgx_chunk_stream_wait's). */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <vfgx/chunk_device.h>

#include "chunkset.h"
#include "gpu_iface.h"
#include "vfgx_build.h"

/* the gpu engine's records are handed out as they are */
_Static_assert(sizeof(struct vfgx_chunk_device_meta) == sizeof(struct gpuk_chunk_desc),
	       "vfgx_chunk_device_meta is gpuk_chunk_desc");
_Static_assert(offsetof(struct vfgx_chunk_device_meta, last_packet_gt) ==
		       offsetof(struct gpuk_chunk_desc, last_gt) &&
	       offsetof(struct vfgx_chunk_device_meta, ready_gt) ==
		       offsetof(struct gpuk_chunk_desc, ready_gt) &&
	       offsetof(struct vfgx_chunk_device_meta, flags) ==
		       offsetof(struct gpuk_chunk_desc, flags),
	       "vfgx_chunk_device_meta is gpuk_chunk_desc");

int vfgx_chunk_device(vfgx_pipeline *pl, struct vfgx_chunk_device *out)
{
	struct vfgx_chunkset *cs = pl ? vfgx_pipeline_chunkset(pl) : NULL;
	const struct vfgx_chunk *d0;

	if (!cs)
		return -ENOTSUP;
	if (!out || out->argsz != sizeof(*out))
		return vfgx_set_error(cs->ctx, -EINVAL,
				      "chunks: vfgx_chunk_device: argsz %u is not this library's %zu",
				      out ? out->argsz : 0, sizeof(*out));
	if (!VFGX_HAVE_CUDA || !cs->dev_ready_word || !cs->dev_base)
		return vfgx_set_error(cs->ctx, -ENOTSUP,
				      "chunks: a GPU consumer needs pinned or gpu chunk memory (pipeline.chunks.mem) and a build with CUDA");
	d0 = &cs->streams[0].desc[0];
	memset(out, 0, sizeof(*out));
	out->argsz = sizeof(*out);
	out->streams = cs->conf.streams;
	out->in_flight = cs->conf.in_flight;
	out->packets = cs->conf.packets;
	out->payload_bytes = cs->conf.payload_bytes;
	out->present_words = cs->present_words;
	out->slot_stride = cs->slot_stride;
	out->present_off = (uint64_t)((uint8_t *)d0->dev_present - (uint8_t *)d0->dev_data);
	out->lens_off = (uint64_t)((uint8_t *)d0->dev_lens - (uint8_t *)d0->dev_data);
	out->data = cs->dev_base;
	out->ready = cs->dev_ready_word;
	out->returned = cs->dev_returned_word;
	out->end = cs->dev_end_word;
	out->meta = (const struct vfgx_chunk_device_meta *)vfgx_chunkset_gpu_desc_dev(cs, 0, 0);
	for (uint32_t s = 0; s < cs->conf.streams; s++)
		atomic_store(&cs->streams[s].cuda_consumed, true);
	return 0;
}
