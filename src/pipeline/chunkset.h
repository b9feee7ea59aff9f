/* chunkset.h - the chunk rings of one pipeline (chunk.c): their memory,
 * each stream's assembly state, the ready queue and the consumer side of
 * vfgx/chunk.h.  Both engines place into the same structure, so the
 * consumer API and the rules of vfgx/chunk.h are one piece of code.
 *
 * Threads: a stream is placed into by one thread at a time (the worker
 * that owns it, or the GPU runner's dispatcher); consumers call get/put from
 * any thread.  A ring slot moves FREE -> FILLING (placer) -> READY (placer,
 * queued) -> HELD (get) -> FREE (put), or READY -> FREE through the slot's
 * returned word when a CUDA stream gave it back (stream-consumed streams
 * are never queued for get). */
#ifndef VFGX_CHUNKSET_H
#define VFGX_CHUNKSET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vfgx/bench.h> /* what vfgx-bench may call: exported */
#include <vfgx/chunk.h>
#include <vfgx/format.h>
#include <vfgx/pipeline.h>

#include "rules.h"

enum chunk_slot_state {
	CHUNK_FREE = 0,
	CHUNK_FILLING = 1,
	CHUNK_READY = 2,
	CHUNK_HELD = 3,
	CHUNK_COPYING = 4, /* released, its copy to the GPU not yet done */
};

/* One stream's ring; every field but the atomics is the placer's. */
struct chunk_stream {
	bool open;               /* a first packet was placed */
	atomic_bool cuda_consumed; /* vfgx_chunk_stream_wait was called */
	uint64_t head;           /* oldest chunk not yet released */
	uint64_t top;            /* highest chunk index placed into */
	uint64_t first_index;    /* the stream's first packet index */
	uint64_t pending_gaps;   /* missing slots that are gaps if any
				  * later packet comes (timeout, end) */
	_Atomic uint32_t *state; /* in_flight slot states */
	struct vfgx_chunk *desc; /* in_flight descriptors (host) */
	uint64_t *first_ns;      /* per slot: time of its first packet */
	/* gpu memory: the ring slots released with their copies to the GPU
	 * not yet seen done, oldest first (a slot is in it at most once) */
	uint32_t *copy_q, copy_qh, copy_qn;
	/* single-writer counters (the placer): relaxed load + store */
	_Atomic uint64_t complete, closed, skipped, placed, missing, late,
		duplicates, out_of_range, backpressure, backpressure_drops,
		gaps, missing_bytes;
	uint64_t next_out;       /* the consumer side's order check (lock) */
	/* chunks by bytes (pipeline.format places by offset or lines) */
	uint64_t top_id;         /* the chunk id (heap counter, RTP
				  * timestamp) of chunk top */
	uint64_t *chunk_id;      /* per ring slot: its chunk's id */
	uint64_t *bytes_in;      /* per ring slot: payload bytes written */
};

struct vfgx_chunkset {
	vfgx_ctx *ctx;
	struct vfgx_chunk_config conf;
	struct vfgx_ck_conf rule; /* what rules.h reads of conf */
	size_t chunk_bytes;      /* packets * payload_bytes */
	uint32_t present_words;  /* (packets + 63) / 64 */
	size_t slot_stride;      /* data, present, lens of one ring slot */
	struct chunk_stream *streams; /* conf.streams */
	vfgx_region *data_region;     /* all rings' data, present, lens */
	uint8_t *host_base;      /* where the CPU writes: the region, or for
				  * gpu memory a host copy sent at release */
	uint8_t *dev_base;       /* the GPU's view (pinned, gpu), or NULL */
	vfgx_region *stage_region;
	uint8_t *stage;          /* the host copy (gpu memory), or NULL */
	void *copy_stream;       /* its copies' CUDA stream */
	vfgx_region *status_region;   /* ready and returned words */
	_Atomic uint64_t *ready_word;    /* streams * in_flight: index + 1 */
	_Atomic uint64_t *returned_word; /* written by CUDA streams */
	uint64_t *dev_ready_word, *dev_returned_word;
	/* set (release) once finished: what a GPU consumer polls for the end
	 * (vfgx/chunk_device.h); after the ready and returned words */
	_Atomic uint64_t *end_word;
	uint64_t *dev_end_word;
	uint64_t total_bytes;
	/* ready queue: FIFO of descriptors, capacity streams * in_flight */
	pthread_mutex_t lock;
	pthread_cond_t ready_cv; /* a chunk was queued, or finished */
	pthread_cond_t free_cv;  /* a slot was returned, or stopping */
	struct vfgx_chunk **queue;
	uint32_t q_head, q_len, q_cap;
	_Atomic uint32_t q_ready; /* q_len, readable without the lock */
	bool finished;           /* engine done: no more chunks */
	atomic_bool finished_flag; /* the same, readable without the lock */
	atomic_bool stopping;    /* waiting placers give up */
	uint64_t handed_out, returned, order_errors; /* under lock */
	/* placed by the gpu engine (chunk_gpu.c), else NULL: its counters
	 * are the GPU's, and get pulls what the GPU made ready */
	struct chunk_gpu *gpu;
	/* pipeline.format when it is not vfgx's header, else NULL; by_bytes:
	 * it places by offset or lines (chunk_bytes is its chunk size) */
	const struct vfgx_format *fmt;
	struct vfgx_format fmt_copy;
	bool by_bytes;
	uint32_t id_bits;        /* by bytes: the chunk id's width */
};

struct gpuk_chunks;
struct gpuk_chunk_desc;

/* Ring slot `slot` of stream `stream`: its index among all rings (status
 * words, data). */
static inline size_t vfgx_chunkset_slot(const struct vfgx_chunkset *cs, uint32_t stream,
					uint32_t slot)
{
	return (size_t)stream * cs->conf.in_flight + slot;
}

/* The options, checked (one line on ctx); memory made for every ring. */
int vfgx_chunkset_create(vfgx_ctx *ctx, const struct vfgx_chunk_config *conf,
			 struct vfgx_chunkset **out);
/* vfgx_chunkset_create_fmt, the same for a producer's header format, is
 * declared once, in vfgx/bench.h (included above); its chunks are placed
 * by vfgx_chunkset_place_pkt. */
void vfgx_chunkset_destroy(struct vfgx_chunkset *cs);

/* Place one record (payload after the app header) of stream `stream`
 * with app-header sequence seq: VFGX_STAGE_PASS when written, else the
 * drop reason (VFGX_R_LATE, _DUPLICATE, _TOO_BIG, _BAD_APP_HDR for a
 * placement field outside the payload or off its step, _BAD_STREAM for a
 * stream without a ring, VFGX_DROP_NOBUFS when stopped while waiting for
 * the consumer).  *slot_data: the bytes written (the host's copy). */
int vfgx_chunkset_place(struct vfgx_chunkset *cs, uint32_t stream,
			uint64_t seq, const uint8_t *body, uint32_t len,
			uint64_t now_ns, const uint8_t **slot_data);
/* Place one packet the format decoded (o, its sequence extended; pay
 * the UDP payload o was decoded from): slot formats as
 * vfgx_chunkset_place with the extended sequence; by bytes each piece at
 * the byte offset vfgx_fmt_place computes.  The same verdicts, and the
 * format's own (VFGX_R_OFFSET_PAST_CHUNK, _SEGMENT_PAST_FRAME).
 * *data, *len: what the user stage sees (the slot, or the payload). */
int vfgx_chunkset_place_pkt(struct vfgx_chunkset *cs, struct vfgx_fmt_pkt *o,
			    const uint8_t *pay, uint64_t now_ns,
			    const uint8_t **data, uint32_t *len);
/* Release the chunks of `stream` whose timeout passed at now_ns. */
void vfgx_chunkset_tick(struct vfgx_chunkset *cs, uint32_t stream,
			uint64_t now_ns);
/* gpu memory: hand out the released chunks of `stream` whose copies to
 * the GPU are done (the placer, every pass of its loop). */
void vfgx_chunkset_copies(struct vfgx_chunkset *cs, uint32_t stream);
/* End of input for stream: release every open chunk (BY_END) and wait
 * for their copies. */
void vfgx_chunkset_flush(struct vfgx_chunkset *cs, uint32_t stream);
/* The consumer side of vfgx_chunk_get/put (cs NULL: -ENOTSUP). */
int vfgx_chunkset_get(struct vfgx_chunkset *cs, int timeout_ms,
		      struct vfgx_chunk **out);
int vfgx_chunkset_put(struct vfgx_chunkset *cs, uint32_t stream, uint64_t index);
/* Every stream back to no packet seen, counters zero, queue empty (a
 * benchmark's next pass; not while anything runs). */
void vfgx_chunkset_reset(struct vfgx_chunkset *cs);
/* The engine is done: get returns -ENODATA once the queue is empty. */
void vfgx_chunkset_finish(struct vfgx_chunkset *cs);
/* Stopping: placers waiting for the consumer drop and return. */
void vfgx_chunkset_stop(struct vfgx_chunkset *cs);
/* Packet slots missing between each stream's first and last packet
 * (what the pipeline reports as gaps), and hand-out order errors. */
uint64_t vfgx_chunkset_gaps(struct vfgx_chunkset *cs);
uint64_t vfgx_chunkset_order_errors(struct vfgx_chunkset *cs);

/* Queue a ready descriptor for get (cs->lock held). */
void vfgx_chunkset_enqueue_locked(struct vfgx_chunkset *cs, struct vfgx_chunk *d);

/* The gpu engine places (chunk_gpu.c): refuse host memory (one line),
 * make the pinned words the kernels publish through and fill *ch for
 * them; before the kernels start.  detach: at destroy. */
int vfgx_chunkset_gpu_attach(struct vfgx_chunkset *cs, struct gpuk_chunks *ch);
void vfgx_chunkset_gpu_detach(struct vfgx_chunkset *cs);
/* Queue what the GPU made ready since the last pull, in index order per
 * stream (cs->lock held). */
void vfgx_chunkset_gpu_pull(struct vfgx_chunkset *cs);
/* Stream s's counters, GPUK_K_NCNT of them, as the GPU last published. */
void vfgx_chunkset_gpu_counters(const struct vfgx_chunkset *cs, uint32_t s,
				uint64_t *out);
/* The GPU's address of ring slot `slot`'s descriptor (struct
 * gpuk_chunk_desc: the GPU's stamps of the chunk last made ready there),
 * NULL unless the gpu engine places (a benchmark's GPU-side stamps). */
const struct gpuk_chunk_desc *vfgx_chunkset_gpu_desc_dev(const struct vfgx_chunkset *cs,
							 uint32_t stream, uint32_t slot);
void vfgx_chunkset_gpu_stop(struct vfgx_chunkset *cs);
/* Did a kernel wait for the consumer since the last call? */
bool vfgx_chunkset_gpu_waiting(struct vfgx_chunkset *cs);
/* The gpu engine's own state back to its start (vfgx_chunkset_reset
 * clears the ready and returned words for either engine). */
void vfgx_chunkset_gpu_reset(struct vfgx_chunkset *cs);

/* The pipeline's chunk set, or NULL (pipeline.c). */
struct vfgx_chunkset *vfgx_pipeline_chunkset(vfgx_pipeline *pl);

/* CUDA side (chunk_cuda.c): wait on / write a 64-bit word of pinned or
 * device memory from a CUDA stream.  -ENOTSUP without CUDA. */
int vfgx_chunk_cuda_wait_geq(void *cuda_stream, uint64_t *dev_addr,
			     uint64_t value, vfgx_ctx *ctx);
int vfgx_chunk_cuda_write(void *cuda_stream, uint64_t *dev_addr,
			  uint64_t value, vfgx_ctx *ctx);
/* A non-blocking CUDA stream for the copies below, and its end. */
int vfgx_chunk_cuda_stream(void **stream, int gpu_id, vfgx_ctx *ctx);
void vfgx_chunk_cuda_stream_destroy(void *stream);
/* Start copying n bytes host -> device on stream, then have the stream
 * write value into the 64-bit word at dev_word once the copy is done (gpu
 * chunk memory assembled by the CPU; the word is the slot's ready word). */
int vfgx_chunk_cuda_copy_start(void *dev, const void *host, size_t n, void *stream,
			       uint64_t *dev_word, uint64_t value, vfgx_ctx *ctx);
/* Wait for everything on stream; -EIO when it failed (one line on ctx). */
int vfgx_chunk_cuda_sync(void *stream, vfgx_ctx *ctx);

#endif
