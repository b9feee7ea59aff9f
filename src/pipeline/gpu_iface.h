/* gpu_iface.h - the plain C interface between the C side of the GPU data
 * plane (gpu_runner.c) and the CUDA side (gpu_proc.cu).  Public vfgx
 * headers only (they compile as C++, tests/abi/cxx_headers.cc): nvcc
 * compiles it as C++ and the internal headers use C11 atomics. */
#ifndef VFGX_GPU_IFACE_H
#define VFGX_GPU_IFACE_H

#include <stddef.h>
#include <stdint.h>

#include "commlist.h"

#include <vfgx/format.h>
#include <vfgx/gpu.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUK_MAX_RANGES 16
#define GPUK_GROUPS 64       /* stream groups: stream % GROUPS, one ticket each */
#define GPUK_STAGE_MAX 9216  /* stage_copy: largest packet copied */
/* Loads of an item's status line a persistent poller keeps in flight,
 * issued GPUK_POLL_GAP_NS apart.  One: an H100 serves one thread's loads
 * of the same host address one after another (4 in flight took 4.2 us
 * each, one 1.2 us; lines 64 B apart did overlap), so more sample no more
 * often and each one's flight, which bounds the hand-off, grows with the
 * queue. */
#define GPUK_POLL_DEPTH 1
#define GPUK_POLL_GAP_NS 250

/* pipeline.chunks placed by the GPU (chunk_gpu.c fills it; the kernels
 * of gpu_chunks.cuh read it).  Pointers are the GPU's views.  Counters of
 * one stream (gpuk_chunk_pub.cnt): */
enum {
	GPUK_K_COMPLETE, GPUK_K_CLOSED, GPUK_K_SKIPPED, GPUK_K_PLACED,
	GPUK_K_MISSING, GPUK_K_LATE, GPUK_K_DUPLICATES, GPUK_K_OUT_OF_RANGE,
	GPUK_K_BACKPRESSURE, GPUK_K_BP_DROPS, GPUK_K_GAPS, GPUK_K_NCNT
};

/* What the GPU says of a chunk it made ready, per ring slot (pinned):
 * written before the slot's ready word, read by the CPU after it. */
struct gpuk_chunk_desc {
	uint64_t index, present_count, missing, flags, stream_late, last_gt,
		ready_gt, pad;
};

/* What the GPU says of a chunk's producer header and bytes, per ring slot
 * (pinned, beside gpuk_chunk_desc, written before the ready word): the
 * fields of struct vfgx_chunk that chunk.c fills on the cpu engine. */
struct gpuk_chunk_hdr {
	uint64_t first_seq, hdr_ts, bytes, missing_bytes;
	uint32_t hdr_flags, pad;
	uint64_t pad2[3];
};

/* Per stream (pinned, written by the GPU once per item that touched the
 * stream, and before any wait for the consumer): rel_head, every chunk
 * below it was made ready or skipped; the stream's counters. */
struct gpuk_chunk_pub {
	uint64_t rel_head;
	uint64_t cnt[GPUK_K_NCNT];
	uint64_t pad[4];
};

struct gpuk_chunks {
	uint32_t on, payload_bytes, packets, streams, place, field_offset;
	uint32_t field_size, in_flight, close_distance, timeout_ms, present_words;
	uint32_t pad;
	uint64_t field_step, slot_stride, present_off, lens_off;
	uint8_t *data;               /* slot (stream * in_flight + r) at r * slot_stride */
	uint64_t *ready_word;        /* per slot: index + 1 of the chunk made ready */
	const uint64_t *returned_word; /* per slot: index + 1 of the chunk given back */
	struct gpuk_chunk_desc *desc; /* per slot */
	struct gpuk_chunk_pub *pub;  /* per stream */
	const uint32_t *stop;        /* the pipeline is stopping: waits give up */
	uint32_t *bp_wait;           /* set to 1 at least every ms while a warp
				      * waits for the consumer (the host clears it) */
	struct gpuk_chunk_hdr *hdr;  /* per slot */
	/* chunks by bytes (pipeline.format places by offset or lines):
	 * chunk_bytes per chunk, the chunk id's width, by_offset: the present
	 * bit is the heap offset's (SPEAD), else the extended sequence's */
	uint32_t by_bytes, by_offset, id_bits, pad2;
	uint64_t chunk_bytes;
};

struct gpuk_conf {
	/* pipeline.gpu as parsed at load (or a program's, checked), with
	 * queues set by the runner (at least 1) */
	struct vfgx_gpu_opts o;
	uint32_t reorder, window, slot, max_streams, verify, nb_ranges;
	uint16_t lo[GPUK_MAX_RANGES], hi[GPUK_MAX_RANGES];
	/* test seam (VFGX_GPU_TEST_WEDGE=N, persistent mode): the block that
	 * takes item N stops answering, neither finishing it nor reading the
	 * quit flag, as a kernel wedged in user code would; 0: never, else
	 * N + 1 */
	uint64_t test_wedge;
	struct gpuk_chunks ch;       /* ch.on: records go into chunks */
	/* pipeline.format other than vfgx's header (fmt_on): phase A
	 * decodes it, phase B learns RTP's SSRCs (no stream_ids), extends
	 * the sequence and, by bytes, places each piece at its offset */
	uint32_t fmt_on;
	struct vfgx_format fmt;
	/* pipeline.format.user_place (vfgx/place.h), or NULL: the user's
	 * relocatable device code and its function's name, linked with the
	 * persistent kernel at create (gpu_place_link.c) */
	const char *place_module, *place_symbol;
};

/* Counter indexes (reduced on the GPU, one u64 each). */
enum {
	GPUK_C_PACKETS, GPUK_C_BYTES, GPUK_C_PASSED, GPUK_C_DELIVERED,
	GPUK_C_DELIVERED_BYTES, GPUK_C_GAPS, GPUK_C_VERIFY, GPUK_C_LAST_SEEN,
	GPUK_C_ORDER, GPUK_C_DROP0, GPUK_NCNT = GPUK_C_DROP0 + 23
};

/* Same layout as struct vfgx_gpu_delivery. */
struct gpuk_delivery {
	uint32_t stream, len;
	uint64_t ordinal, seq, hash;
};

struct gpuk;

/* All return 0 or -errno with the CUDA error text in err. */
int gpuk_probe(uint32_t gpu_id, char *desc, size_t len, char *err, size_t errlen);
int gpuk_create(const struct gpuk_conf *c, struct gpuk **out,
		struct vfgx_comm_list **list, char *err, size_t errlen);
/* persistent: launch the kernel; graph: capture the two graphs. */
int gpuk_start(struct gpuk *g, char *err, size_t errlen);
/* per_burst: launch the kernels of one slot; graph: replay the graph of
 * half slot / graph_items. */
int gpuk_launch(struct gpuk *g, uint32_t slot, char *err, size_t errlen);
/* 0 while healthy, -EIO with the CUDA error, -ESRCH when the persistent
 * kernel is gone. */
int gpuk_health(struct gpuk *g, char *err, size_t errlen);
int gpuk_read_counters(struct gpuk *g, uint64_t *cnt, char *err, size_t errlen);
int gpuk_read_flow_sums(struct gpuk *g, uint64_t *sums, uint32_t n, char *err,
			size_t errlen);
/* Returns records copied (<= max), -ENOSPC when the log overflowed. */
int64_t gpuk_read_log(struct gpuk *g, struct gpuk_delivery *recs, uint64_t max,
		      char *err, size_t errlen);
const char *gpuk_device_name(const struct gpuk *g);
/* 1 when the GPU can read p in place (device or registered host memory). */
int gpuk_device_readable(const void *p);
/* Set the quit flag and wait for the kernels at most timeout_ms;
 * -ETIMEDOUT when they did not end (memory is then left to process exit). */
int gpuk_stop(struct gpuk *g, uint32_t timeout_ms);
void gpuk_destroy(struct gpuk *g);

#ifdef __cplusplus
}
#endif
#endif
