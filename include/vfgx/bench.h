/* vfgx/bench.h - what vfgx-bench measures below the public API: the chunk
 * rules and rings on their own (no port, no engine), the GPU runner
 * without the pipeline around it, and the GPU hand-off probes.  The one
 * header bench/ may use besides the public API (docs/api.md, "The bench
 * header").  Exported for vfgx-bench and nothing else: not included by
 * vfgx.h, no promise beyond libvfgx.so.1's soname, an application has no
 * use for it. */
#ifndef VFGX_BENCH_H
#define VFGX_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "chunk.h"
#include "gpu.h"
#include "pipeline.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

/* --- the chunk rings alone (src/pipeline/chunk.c) ------------------------ */
struct vfgx_chunkset;
struct gpuk_chunk_desc; /* a chunk's descriptor in device memory */

int vfgx_chunkset_create(vfgx_ctx *ctx, const struct vfgx_chunk_config *conf,
			 struct vfgx_chunkset **out);
/* The same for a producer's header fmt (NULL or the vfgx profile:
 * vfgx_chunkset_create): a format placing by offset or lines makes chunks
 * of its chunk_bytes. */
struct vfgx_format;
int vfgx_chunkset_create_fmt(vfgx_ctx *ctx, const struct vfgx_chunk_config *conf,
			     const struct vfgx_format *fmt, struct vfgx_chunkset **out);
void vfgx_chunkset_destroy(struct vfgx_chunkset *cs);
/* Place one record of stream with sequence seq: VFGX_STAGE_PASS when
 * written, else the drop reason; *slot_data: the bytes written. */
int vfgx_chunkset_place(struct vfgx_chunkset *cs, uint32_t stream,
			uint64_t seq, const uint8_t *body, uint32_t len,
			uint64_t now_ns, const uint8_t **slot_data);
/* End of input for stream: release every open chunk. */
void vfgx_chunkset_flush(struct vfgx_chunkset *cs, uint32_t stream);
int vfgx_chunkset_get(struct vfgx_chunkset *cs, int timeout_ms,
		      struct vfgx_chunk **out);
int vfgx_chunkset_put(struct vfgx_chunkset *cs, uint32_t stream, uint64_t index);
/* Every stream back to no packet seen (a benchmark's next pass). */
void vfgx_chunkset_reset(struct vfgx_chunkset *cs);
/* The engine is done: get returns -ENODATA once the queue is empty. */
void vfgx_chunkset_finish(struct vfgx_chunkset *cs);
/* Packet slots missing between each stream's first and last packet. */
uint64_t vfgx_chunkset_gaps(struct vfgx_chunkset *cs);
/* gpu chunks: slot's descriptor in device memory, or NULL. */
const struct gpuk_chunk_desc *vfgx_chunkset_gpu_desc_dev(const struct vfgx_chunkset *cs,
							 uint32_t stream, uint32_t slot);
/* Every wait on a ready word (vfgx/chunk_device.h, a CUDA stream's
 * vfgx_chunk_cuda_wait_geq) passes: a failed round's chunks that will
 * never be made ready no longer hold a stream. */
void vfgx_chunkset_release_waits(struct vfgx_chunkset *cs);
/* The chunks of a pipeline created with pipeline.chunks, else NULL. */
struct vfgx_chunkset *vfgx_pipeline_chunkset(vfgx_pipeline *pl);
/* A processor (vfgx_proc_create) places into cs instead of reordering. */
int vfgx_proc_set_chunks(vfgx_proc *p, struct vfgx_chunkset *cs);
/* Wait on a CUDA stream until the 64-bit word at dev_addr is >= value.
 * -ENOTSUP without CUDA. */
int vfgx_chunk_cuda_wait_geq(void *cuda_stream, uint64_t *dev_addr,
			     uint64_t value, vfgx_ctx *ctx);

/* --- the GPU runner without the pipeline (src/pipeline/gpu_runner.c) --- */
typedef struct vfgx_gpu_pipeline vfgx_gpu_pipeline;

/* chunks: the GPU places records into them, or NULL. */
int vfgx_gpu_pipeline_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
			     vfgx_port *const *ports, uint16_t nb_ports,
			     struct vfgx_chunkset *chunks, vfgx_gpu_pipeline **out);
int vfgx_gpu_pipeline_start(vfgx_gpu_pipeline *gpl);
bool vfgx_gpu_pipeline_done(vfgx_gpu_pipeline *gpl);
void vfgx_gpu_pipeline_stop(vfgx_gpu_pipeline *gpl);
void vfgx_gpu_pipeline_stats(vfgx_gpu_pipeline *gpl, struct vfgx_pipeline_stats *st,
			     uint64_t *order_errors);
int vfgx_gpu_pipeline_error(vfgx_gpu_pipeline *gpl);
void vfgx_gpu_pipeline_destroy(vfgx_gpu_pipeline *gpl);
/* The runner's first received packet and the end of its dispatcher
 * thread (vfgx_now_ns()); its processor's latency percentile: the upper
 * edge (ns) of the bucket holding the pct-th percentile of rx ->
 * processed, 0 when nothing was counted. */
void vfgx_gpu_pipeline_window(const vfgx_gpu_pipeline *gpl, uint64_t *first_ns,
			      uint64_t *end_ns);
uint64_t vfgx_gpu_pipeline_lat_pct(const vfgx_gpu_pipeline *gpl, double pct);

/* Where the runner's threads' time went (ns), and its items. */
struct vfgx_gpu_feeder {
	uint64_t rx_ns, submit_ns, room_ns, items, packets;
	uint32_t rx_threads; /* rx lanes on threads of their own (0: on the dispatcher's) */
};
void vfgx_gpu_pipeline_feeder(const vfgx_gpu_pipeline *gpl, struct vfgx_gpu_feeder *f);
/* Builds with -Dgpu_item_stamps, persistent mode: where the items' time
 * went (rx, submit, reap on the CPU's clock; READY seen, phase A, B, DONE
 * on the GPU's), medians and p99 per phase over the items reaped, as one
 * line of text in buf (docs/gpu.md); -ENOTSUP otherwise, -ENODATA before
 * an item with packets was reaped. */
int vfgx_gpu_pipeline_item_stamps(const vfgx_gpu_pipeline *gpl, char *buf, size_t len);
/* The same for a GPU processor of its own (vfgx bench formats): the items
 * whose packets carry a ts_ns. */
int vfgx_gpu_proc_item_stamps(const vfgx_gpu_proc *gp, char *buf, size_t len);
/* The same for a pipeline on the gpu engine; -ENOTSUP on the cpu engine. */
int vfgx_pipeline_item_stamps(const vfgx_pipeline *pl, char *buf, size_t len);

/* --- the GPU processor's hand-off (src/pipeline/gpu_proc_host.c) ------- */
/* vfgx_gpu_proc_create whose kernels place records into chunks (NULL:
 * none); refuses chunks in host memory. */
int vfgx_gpu_proc_create_chunks(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
				const struct vfgx_gpu_opts *opts,
				struct vfgx_chunkset *chunks, vfgx_gpu_proc **out);
/* Hand over n records that live in pinned host memory (pkts_dev: their
 * device address) as one item, with no copy; ts_min: the oldest receive
 * stamp among them.  Item number or -errno. */
int64_t vfgx_gpu_proc_submit_records(vfgx_gpu_proc *gp, const struct vfgx_pkt *pkts_dev,
				     uint32_t n, uint64_t ts_min);
/* Persistent mode, a finished item whose slot is not yet reused: the
 * vfgx_now_ns() taken just before READY was stored, and the GPU's
 * %globaltimer (ns) when it first saw READY.  -EINVAL otherwise. */
int vfgx_gpu_proc_handoff_stamps(const vfgx_gpu_proc *gp, uint64_t item,
				 uint64_t *ready_ns, uint64_t *gpu_seen_ns);

/* How the GPU polls an item's status line, which the hand-off probe
 * reads: loads in flight, issued this far apart (src/pipeline/gpu_iface.h
 * builds the kernel with these; gpu_proc_host.c asserts they agree). */
#define VFGX_GPU_POLL_DEPTH 1
#define VFGX_GPU_POLL_GAP_NS 250

/* One hand-off sample, all from clocks read by one side each: the CPU's
 * vfgx_now_ns() just before storing READY (ready_ns); the CPU clock the
 * GPU's 16-byte load of the status line returned with READY (clock_ns);
 * the GPU's %globaltimer just before and just after that load; the longest
 * gap between two of the CPU's clock writes while it waited (gap_ns); the
 * CPU's clock two writes after the last write of clock_ns, each write
 * fenced before the next clock read, so the load read the line before
 * after2_ns (or the clock read after the wait, past the writes logged). */
struct vfgx_gpu_handoff {
	uint64_t ready_ns, clock_ns, g_before, g_after, gap_ns, after2_ns;
};
/* Persistent mode: submit an empty item and, until the GPU marks it DONE,
 * keep writing vfgx_now_ns() into its status line (each store followed by
 * a full fence; then, with every_ns, no store until every_ns passed); then
 * fill h.  -EINVAL in other modes. */
int vfgx_gpu_proc_handoff_probe(vfgx_gpu_proc *gp, uint32_t every_ns,
				struct vfgx_gpu_handoff *h);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
