/* gpu_bench.h - internal hooks of the GPU data plane (not part of the
 * public API in include/vfgx/gpu.h): the test hooks and the chunk-placing
 * processor.  What vfgx-bench calls (the runner's zero-copy submit, the
 * hand-off probes, the runner's window, latency and feeder) is declared
 * once, in vfgx/bench.h. */
#ifndef VFGX_GPU_BENCH_H
#define VFGX_GPU_BENCH_H

#include <stdint.h>

#include <vfgx/bench.h> /* what vfgx-bench may call: exported */
#include <vfgx/gpu.h>

#include "gpu_runner.h"

/* Test and bench hooks, not in the ABI (tests/gpu, bench/gpu.c): */
/* Delivery log (log_records > 0), sorted by stream then ordinal.  Returns
 * the number of records written, or -ENOSPC when the log overflowed. */
int64_t vfgx_gpu_proc_log(vfgx_gpu_proc *gp, struct vfgx_gpu_delivery *recs,
			  uint64_t max);

struct vfgx_chunkset;

/* vfgx_gpu_proc_create_chunks (kernels placing into chunks,
 * gpu_chunks.cuh): in vfgx/bench.h */
/* Chunks: an item that releases those past timeout_ms (GPU clock). */
int vfgx_gpu_proc_tick(vfgx_gpu_proc *gp);

/* rx -> processed latency: per item, the time from the oldest packet's
 * receive stamp to the CPU reaping the item DONE, counted for each of its
 * packets, in 64 buckets per power of two (1.6% resolution).  Returns the
 * upper edge (ns) of the bucket holding the pct-th percentile, 0 when
 * nothing was counted. */
uint64_t vfgx_gpu_proc_lat_pct(const vfgx_gpu_proc *gp, double pct);




#endif
