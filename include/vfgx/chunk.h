/* vfgx/chunk.h - ordered chunks: the pipeline writes each delivered payload
 * straight into its slot of a chunk (a contiguous block of packets x
 * payload_bytes in host, pinned or GPU memory) and hands complete or closed
 * chunks to the application with a bitmap of the packets that arrived.
 *
 * Contract shared by the cpu and gpu engines (parity-tested):
 *   - a packet's index p is its app-header sequence number (place: seq),
 *     or a big-endian field of the payload divided by field_step (place:
 *     field); it belongs to chunk n = p / packets, slot p % packets;
 *   - the payload written is the one after the 16-byte app header; a
 *     payload longer than payload_bytes, a field outside the payload, a
 *     field value not a multiple of field_step or an index from 2^63 on
 *     is a drop (out_of_range), never a write;
 *   - each stream id below `streams` has its own ring of in_flight chunk
 *     buffers; the n-th chunk of a stream always lives in ring slot
 *     n % in_flight, so a GPU
 *     consumer can wait for it without asking the CPU which buffer it is;
 *   - a stream's first packet opens its first chunk; a packet for a chunk
 *     older than the oldest open one is late: counted, never written;
 *   - a chunk is ready when every packet is in (complete), or closed with
 *     missing packets when the stream reached chunk n + close_distance,
 *     when timeout_ms passed since its first packet, when a packet needs
 *     its ring slot for chunk n + in_flight, or at the end of the run;
 *   - chunks are handed out in index order per stream (a complete chunk
 *     waits for the older ones of its stream); chunks that got no packet
 *     are never handed out (counted as skipped);
 *   - a packet that needs a ring slot the consumer still holds waits
 *     (backpressure, counted) until the consumer returns it or the
 *     pipeline stops (then it is dropped, counted).
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

/* Packet indexes from here on are out of range. */
#define VFGX_CHUNK_MAX_INDEX (1ull << 63)

enum vfgx_chunk_place {
	VFGX_CHUNK_BY_SEQ = 0,   /* the app header's sequence number */
	VFGX_CHUNK_BY_FIELD = 1, /* field_size bytes, big endian, at
				  * field_offset of the payload after the
				  * app header, divided by field_step */
};

/* pipeline.chunks (docs/config.md); vfgx_pipeline_config.chunks points
 * at one, NULL: no chunks. */
struct vfgx_chunk_config {
	uint32_t argsz;           /* sizeof(struct vfgx_chunk_config) */
	uint32_t payload_bytes;   /* slot size: payload bytes per packet */
	uint32_t packets;         /* packets per chunk */
	uint32_t streams;         /* stream ids 0 .. streams-1 get a ring
				   * (made at create); others: out_of_range */
	enum vfgx_chunk_place place;
	uint32_t field_offset;    /* place field only */
	uint32_t field_size;      /* 4 or 8 */
	uint64_t field_step;      /* >= 1 */
	uint32_t in_flight;       /* chunk buffers per stream, >= 2 */
	enum vfgx_mem_kind mem;   /* host, pinned or gpu */
	uint32_t gpu_id;          /* for pinned and gpu memory */
	uint32_t close_distance;  /* chunks; 0: in_flight */
	uint32_t timeout_ms;      /* 0: no timeout */
};

/* The defaults of docs/config.md's pipeline.chunks keys, and argsz. */
void vfgx_chunk_config_default(struct vfgx_chunk_config *c);

#define VFGX_CHUNK_COMPLETE 0x1  /* every packet arrived */
#define VFGX_CHUNK_BY_DISTANCE 0x2 /* closed: stream close_distance ahead */
#define VFGX_CHUNK_BY_TIMEOUT 0x4  /* closed: timeout_ms since first packet */
#define VFGX_CHUNK_BY_RING 0x8     /* closed: its slot needed for a newer chunk */
#define VFGX_CHUNK_BY_END 0x10     /* closed: the run ended */

/* One chunk as the consumer sees it, owned by the pipeline.  data, present
 * and lens are on the memory side of mem (device addresses for gpu; for
 * pinned, the host addresses, dev_* the GPU's view). */
struct vfgx_chunk {
	uint32_t stream;
	uint32_t ring_slot;       /* index % in_flight */
	uint64_t index;           /* n: the stream's n-th chunk */
	uint64_t first;           /* packet index of slot 0: n * packets */
	uint32_t packets;         /* slots */
	uint32_t payload_bytes;   /* slot size */
	uint32_t present_count;   /* slots written */
	uint32_t missing;         /* packets - present_count */
	uint32_t flags;           /* VFGX_CHUNK_COMPLETE or one BY_ reason */
	enum vfgx_mem_kind mem;
	void *data;               /* packets * payload_bytes */
	uint64_t *present;        /* bit i (word i / 64, bit i % 64): slot i in */
	uint32_t *lens;           /* per slot payload length; 0 when missing
				   * (or empty: present says which) */
	void *dev_data;           /* GPU addresses (pinned, gpu), else NULL */
	uint64_t *dev_present;
	uint32_t *dev_lens;
	uint64_t stream_late;     /* the stream's late packets so far */
	uint64_t last_packet_ns;  /* vfgx_now_ns of the last packet written */
	uint64_t ready_ns;        /* vfgx_now_ns when it became ready */
	/* packets for this chunk that came after it was made ready: counted
	 * (here until its buffer is reused), never written */
	uint64_t late;
	/* From the producer's header (pipeline.format, docs/formats.md): */
	uint64_t first_seq;       /* extended 64-bit sequence of the chunk's
				   * first packet that arrived */
	uint64_t hdr_ts;          /* that packet's header timestamp: RTP the
				   * 32-bit RTP (frame) timestamp, VITA-49
				   * integer seconds << 32 | the fractional
				   * timestamp's upper 32 bits, VDIF seconds;
				   * 0 where the format has none */
	uint64_t bytes;           /* payload bytes the chunk spans: slots
				   * packets x payload_bytes; by bytes the
				   * frame or heap size, or where the packet
				   * with the end mark ends */
	uint64_t missing_bytes;   /* of bytes, never written (slots: missing
				   * x payload_bytes) */
	uint32_t hdr_flags;       /* VFGX_CHUNK_HDR_TS, VFGX_CHUNK_ENDED */
};

#define VFGX_CHUNK_HDR_TS 0x1 /* hdr_ts is the header's timestamp */
#define VFGX_CHUNK_ENDED 0x2  /* a packet with the end mark (RTP marker,
			       * SPEAD heap size reached) arrived */

struct vfgx_chunk_stats {
	uint32_t argsz;           /* sizeof(struct vfgx_chunk_stats) */
	uint64_t complete;        /* chunks ready with every packet */
	uint64_t closed;          /* ready with missing packets */
	uint64_t skipped;         /* chunks passed over with no packet */
	uint64_t placed;          /* packets written into chunks */
	uint64_t missing;         /* slots never written in closed chunks */
	uint64_t late;            /* packets for closed chunks, not written */
	uint64_t duplicates;      /* packets for a slot already written */
	uint64_t out_of_range;    /* too long, field outside, bad step,
				   * stream id >= streams */
	uint64_t backpressure;    /* waits for a slot the consumer held */
	uint64_t backpressure_drops; /* packets dropped: stopped while waiting */
	uint64_t handed_out;      /* chunks given by vfgx_chunk_get */
	uint64_t returned;        /* chunks given back with vfgx_chunk_put */
	uint64_t chunk_bytes;     /* memory of all rings */
	uint64_t missing_bytes;   /* bytes never written in closed chunks
				   * (slots: missing x payload_bytes; by
				   * bytes: what `missing` cannot say) */
};

/* Next ready chunk, oldest first per stream.  timeout_ms < 0 blocks, 0
 * polls.  0 and *out set; -EAGAIN (polled, none ready), -ETIMEDOUT,
 * -ENODATA when the pipeline has stopped or its sources ended and every
 * chunk was handed out, -ENOTSUP when the pipeline has no chunks.  Any
 * thread; several consumers may call it. */
int vfgx_chunk_get(vfgx_pipeline *pl, int timeout_ms, struct vfgx_chunk **out);
/* Give back chunk `index` of `stream` (the descriptor's stream and index,
 * read before the put: the descriptor belongs to the ring slot and is
 * rewritten once the slot holds a newer chunk); its ring slot may be
 * reused after this.  A put names the exact chunk, never only its slot:
 * 0; -ESTALE when that chunk is not held (given back already, or never
 * handed out: a repeated or stale put, e.g. after another consumer took
 * the newer chunk of the same slot), -EINVAL for a stream without a ring,
 * -ENOTSUP without chunks.  Nothing changes on an error (one line on the
 * pipeline's ctx). */
int vfgx_chunk_put(vfgx_pipeline *pl, uint32_t stream, uint64_t index);
/* -EINVAL for an unknown argsz, -ENOTSUP without chunks. */
int vfgx_chunk_stats(vfgx_pipeline *pl, struct vfgx_chunk_stats *st);
/* The pipeline's chunk options (argsz and all), or NULL without chunks. */
const struct vfgx_chunk_config *vfgx_chunk_conf(vfgx_pipeline *pl);
/* The producer's header the chunks are placed by (pipeline.format,
 * vfgx/format.h), or NULL for vfgx's own header (the vfgx profile) or no
 * chunks. */
struct vfgx_format;
const struct vfgx_format *vfgx_chunk_format(vfgx_pipeline *pl);

/* GPU chunks without the CPU in the loop.  Every ring slot has a status
 * word in GPU-readable memory: the index + 1 of the chunk last made ready in
 * it.  stream_wait enqueues on the application's CUDA stream (a
 * cudaStream_t, NULL for the legacy stream) a wait until the stream's
 * chunk `index` is ready; stream_put enqueues the write that returns it,
 * so the pipeline may reuse the slot once the work before it on that
 * stream is done.  A chunk returned this way is not also returned with
 * vfgx_chunk_put; a chunk the application waits for on a CUDA stream is
 * not taken with vfgx_chunk_get (use one or the other per stream).  A
 * chunk taken with vfgx_chunk_get may be returned with stream_put (its
 * stream and index) instead of vfgx_chunk_put: the CPU launches the work
 * and never waits for it; the descriptor is not read after the call.
 * -ENOTSUP unless memory is pinned or gpu and the build has CUDA. */
int vfgx_chunk_stream_wait(vfgx_pipeline *pl, uint32_t stream, uint64_t index,
			   void *cuda_stream);
int vfgx_chunk_stream_put(vfgx_pipeline *pl, uint32_t stream, uint64_t index,
			  void *cuda_stream);
/* The descriptor of ring slot `slot` of stream `stream`: the addresses
 * are fixed from create to destroy (counts are those of the last chunk
 * made ready in it).  NULL when out of range. */
const struct vfgx_chunk *vfgx_chunk_slot(vfgx_pipeline *pl, uint32_t stream,
					 uint32_t slot);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
