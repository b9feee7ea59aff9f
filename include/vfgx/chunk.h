/* vfgx/chunk.h - ordered chunks: the pipeline writes each delivered payload
 * straight into its slot of a chunk (a contiguous block of packets x
 * payload_bytes in host, pinned or GPU memory) and hands complete or closed
 * chunks to the application, with a bitmap of the packets that arrived.
 *
 * Contract shared by the cpu and gpu engines (parity-tested):
 *   - a stream's packet p (its sequence number, or the placement field)
 *     belongs to chunk p / packets, slot p % packets;
 *   - each stream has its own ring of `in_flight` chunk buffers; the n-th
 *     chunk of stream s always lives in ring slot n % in_flight, so a GPU
 *     consumer can wait for it without asking the CPU which buffer it is;
 *   - a chunk is ready when every packet is in (complete), or when the
 *     stream has reached chunk n + close_distance, or timeout_ms passed
 *     since its first packet (closed, with missing > 0);
 *   - a packet for a chunk already closed (or older than the ring) is
 *     counted late and never written; one past the ring while every buffer
 *     is held by the consumer waits (backpressure, counted) until the
 *     consumer returns one;
 *   - a payload longer than payload_bytes, or a placement field outside
 *     the stream's range, is a drop (counted), never a write.
 */
#ifndef VFGX_CHUNK_H
#define VFGX_CHUNK_H

#include <stdbool.h>
#include <stdint.h>

#include "mem.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

typedef struct vfgx_pipeline vfgx_pipeline;

enum vfgx_chunk_place {
	VFGX_CHUNK_BY_SEQ = 0,   /* the 16-byte app header's sequence number */
	VFGX_CHUNK_BY_FIELD = 1, /* field_size bytes, big endian, at
				  * field_offset of the payload (after the
				  * app header) */
};

/* pipeline.chunks (docs/config.md).  enabled false: no chunks. */
struct vfgx_chunk_config {
	uint32_t argsz;           /* sizeof(struct vfgx_chunk_config) */
	bool enabled;
	uint32_t payload_bytes;   /* slot size: payload bytes per packet */
	uint32_t packets;         /* packets per chunk */
	enum vfgx_chunk_place place;
	uint32_t field_offset;    /* VFGX_CHUNK_BY_FIELD only */
	uint32_t field_size;      /* 4 or 8 */
	uint32_t in_flight;       /* chunk buffers per stream */
	enum vfgx_mem_kind mem;   /* host, pinned or gpu */
	uint32_t close_distance;  /* chunks; 0 = only by timeout/end */
	uint32_t timeout_ms;      /* 0 = no timeout */
	uint32_t gpu_id;          /* for pinned/gpu memory */
};

void vfgx_chunk_config_default(struct vfgx_chunk_config *c);

/* One chunk as the consumer sees it.  data and present are on the memory
 * side of `mem` (device addresses for VFGX_MEM_GPU). */
struct vfgx_chunk {
	uint32_t stream;          /* stream id */
	uint64_t index;           /* n: the stream's n-th chunk */
	uint64_t first_seq;       /* n * packets */
	uint32_t packets;         /* slots */
	uint32_t payload_bytes;   /* slot size */
	uint32_t present_count;   /* slots written */
	uint32_t missing;         /* packets - present_count */
	uint64_t late;            /* late packets seen for this stream so far */
	enum vfgx_mem_kind mem;
	void *data;               /* packets * payload_bytes */
	void *present;            /* packets bits, bit i of byte i/8 */
	uint32_t *lens;           /* per slot payload length (0: missing);
				   * same memory side as data */
	uint32_t ring_slot;       /* index % in_flight */
};

struct vfgx_chunk_stats {
	uint64_t complete;        /* chunks ready with every packet */
	uint64_t closed;          /* ready with missing packets */
	uint64_t missing;         /* packets never arrived in closed chunks */
	uint64_t late;            /* packets for closed chunks, not written */
	uint64_t out_of_range;    /* placement outside the ring / too long */
	uint64_t backpressure;    /* times the engine waited for a buffer */
	uint64_t consumed;        /* chunks returned by the consumer */
};

/* Next ready chunk, oldest first.  timeout_ms < 0 blocks, 0 polls.
 * 0 and *out set; -EAGAIN (poll, none ready), -ETIMEDOUT, -ENODATA when
 * the pipeline is done and every chunk was handed out, -ENOTSUP when the
 * pipeline has no chunks. */
int vfgx_chunk_get(vfgx_pipeline *pl, int timeout_ms, struct vfgx_chunk **out);
/* Give a chunk back; its buffer may be reused after this. */
void vfgx_chunk_put(vfgx_pipeline *pl, struct vfgx_chunk *c);
void vfgx_chunk_stats(vfgx_pipeline *pl, struct vfgx_chunk_stats *st);

/* GPU chunks without the CPU in the loop: enqueue on the application's
 * CUDA stream (a CUstream / cudaStream_t) a wait until the stream's
 * index-th chunk is ready (a stream memory operation on its status word),
 * and later a write that returns it.  The chunk's addresses are known in
 * advance from vfgx_chunk_ring_addr.  -ENOTSUP unless mem is gpu or
 * pinned and the build has CUDA. */
int vfgx_chunk_stream_wait(vfgx_pipeline *pl, uint32_t stream,
			   uint64_t index, void *cuda_stream);
int vfgx_chunk_stream_put(vfgx_pipeline *pl, uint32_t stream, uint64_t index,
			  void *cuda_stream);
/* Addresses of ring slot `slot` of stream `stream`: data, present and
 * lens as in struct vfgx_chunk (index, counts left 0). */
int vfgx_chunk_ring_addr(vfgx_pipeline *pl, uint32_t stream, uint32_t slot,
			 struct vfgx_chunk *c);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
