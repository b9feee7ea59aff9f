/* gpu_bench.h - internal hooks of the GPU data plane (not part of the
 * public API in include/vfgx/gpu.h): the runner's zero-copy submit, and
 * what `vfgx bench e2e` measures. */
#ifndef VFGX_GPU_BENCH_H
#define VFGX_GPU_BENCH_H

#include <stdint.h>

#include <vfgx/bench.h> /* what vfgx-bench may call: exported */
#include <vfgx/gpu.h>

#include "gpu_runner.h"

/* Hand over n struct vfgx_pkt records that live in pinned host memory
 * (pkts_dev: their device address) as one item, with no copy; the records
 * must stay untouched until the item is finished.  ts_min: the oldest
 * receive stamp among them (latency).  Item number or -errno. */
/* Test and bench hooks, not in the ABI (tests/gpu, bench/gpu.c): */
/* Delivery log (log_records > 0), sorted by stream then ordinal.  Returns
 * the number of records written, or -ENOSPC when the log overflowed. */
int64_t vfgx_gpu_proc_log(vfgx_gpu_proc *gp, struct vfgx_gpu_delivery *recs,
			  uint64_t max);
/* Persistent mode, a finished item whose slot is not yet reused: the
 * vfgx_now_ns() taken just before READY was stored, and the GPU's
 * %globaltimer (ns) when it first saw READY (clocks differ: see
 * bench/gpu.c for the calibration).  -EINVAL otherwise. */
int vfgx_gpu_proc_handoff_stamps(const vfgx_gpu_proc *gp, uint64_t item,
				 uint64_t *ready_ns, uint64_t *gpu_seen_ns);
int64_t vfgx_gpu_proc_submit_records(vfgx_gpu_proc *gp, const struct vfgx_pkt *pkts_dev,
				     uint32_t n, uint64_t ts_min);

struct vfgx_chunkset;

/* vfgx_gpu_proc_create whose kernels place records into chunks (NULL:
 * none; gpu_chunks.cuh); refuses chunks in host memory. */
int vfgx_gpu_proc_create_chunks(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
				const struct vfgx_gpu_opts *opts,
				struct vfgx_chunkset *chunks, vfgx_gpu_proc **out);
/* Chunks: an item that releases those past timeout_ms (GPU clock). */
int vfgx_gpu_proc_tick(vfgx_gpu_proc *gp);

/* rx -> processed latency: per item, the time from the oldest packet's
 * receive stamp to the CPU reaping the item DONE, counted for each of its
 * packets, in 64 buckets per power of two (1.6% resolution).  Returns the
 * upper edge (ns) of the bucket holding the pct-th percentile, 0 when
 * nothing was counted. */
uint64_t vfgx_gpu_proc_lat_pct(const vfgx_gpu_proc *gp, double pct);

/* -Dgpu_item_stamps (persistent): the items' stamps summarised in buf
 * (vfgx_gpu_pipeline_item_stamps, vfgx/bench.h). */
int vfgx_gpu_proc_item_stamps(const vfgx_gpu_proc *gp, char *buf, size_t len);

int vfgx_gpu_proc_handoff_probe(vfgx_gpu_proc *gp, uint32_t every_ns,
				struct vfgx_gpu_handoff *h);

/* The runner's first received packet and the end of its dispatcher thread
 * (vfgx_now_ns()); its processor's latency percentile (as above). */
void vfgx_gpu_pipeline_window(const vfgx_gpu_pipeline *gpl, uint64_t *first_ns,
			      uint64_t *end_ns);
uint64_t vfgx_gpu_pipeline_lat_pct(const vfgx_gpu_pipeline *gpl, double pct);

void vfgx_gpu_pipeline_feeder(const vfgx_gpu_pipeline *gpl, struct vfgx_gpu_feeder *f);

#endif
