/* vfgx/gpu.h - the GPU data plane: a processor that runs the shared stages
 * (parse, validate, filter, reorder, user stage) in CUDA over bursts handed
 * through the CPU<->GPU communication list (ports feed it through
 * vfgx_pipeline with pipeline.device gpu).  Plain C; every function exists in every build and fails with a
 * clear message (-ENOTSUP) where the build has no CUDA. */
#ifndef VFGX_GPU_H
#define VFGX_GPU_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "core.h"
#include "pipeline.h"
#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

enum vfgx_gpu_mode {
	VFGX_GPU_PERSISTENT = 0, /* one long-running kernel polls the list */
	VFGX_GPU_PER_BURST = 1,  /* one launch per item */
	VFGX_GPU_GRAPH = 2,      /* a CUDA graph of graph_items items replayed */
};

enum vfgx_gpu_user {
	VFGX_GPU_USER_NONE = 0,
	VFGX_GPU_USER_FLOW_SUM = 1, /* the compiled-in example: payload sum per flow */
};

/* pipeline.gpu: every field has the default noted (docs/config.md).
 * Start from vfgx_gpu_opts_default (it sets argsz); may grow at the end. */
struct vfgx_gpu_opts {
	uint32_t argsz;           /* sizeof(struct vfgx_gpu_opts) */
	enum vfgx_gpu_mode mode;  /* mode: persistent */
	bool stage_copy;          /* stage_copy: false (read pinned packets in place) */
	uint32_t items;           /* items: 64 comm-list items */
	uint32_t burst;           /* burst: 1024 packets per item at most */
	uint32_t graph_items;     /* graph_items: 8 items per graph replay */
	uint32_t blocks;          /* blocks: 0 = one per multiprocessor (persistent) */
	uint32_t timeout_ms;      /* timeout_ms: 5000 before a kernel is declared dead */
	enum vfgx_gpu_user user;  /* user_stage: none | flow_sum */
	uint32_t log_records;     /* log_records: 0 (delivery log for tests) */
	uint32_t gpu_id;          /* gpu_id: 0 */
	uint32_t queues;          /* stream spaces (one per rx queue): set by the runner; 0 = 1 */
	uint32_t rx_threads;      /* rx_threads: 0 = a thread per rx queue while 2 CPUs stay free */
};

/* The defaults (the table's that also reads pipeline.gpu); a loaded
 * config has pipeline.gpu parsed into these at load
 * (vfgx_pipeline_config.gpu).  vfgx_gpu_proc_create checks a program's
 * struct against the same table's ranges. */
void vfgx_gpu_opts_default(struct vfgx_gpu_opts *o);
const char *vfgx_gpu_mode_name(enum vfgx_gpu_mode m);

/* 0 when CUDA finds GPU gpu_id; desc gets "NVIDIA H100 80GB HBM3 (driver
 * 13.0, 132 SMs)".  -ENOTSUP (no CUDA in this build) or -ENODEV (no GPU),
 * with the reason in vfgx_last_error(ctx). */
int vfgx_gpu_probe(vfgx_ctx *ctx, uint32_t gpu_id, char *desc, size_t len);

/* --- processor: one comm list, one set of reorder windows ---------------- */
typedef struct vfgx_gpu_proc vfgx_gpu_proc;

/* A delivered record, for comparing against the CPU processor. */
struct vfgx_gpu_delivery {
	uint32_t stream;   /* queue * max_streams + stream id */
	uint32_t len;
	uint64_t ordinal;  /* position among this stream's deliveries */
	uint64_t seq;
	uint64_t hash;     /* vfgx_gpu_payload_hash() of the payload */
};

/* -EINVAL for an argsz of opts this library does not know. */
int vfgx_gpu_proc_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
			 const struct vfgx_gpu_opts *opts, vfgx_gpu_proc **out);
/* Hand a burst (n <= opts.burst) to the GPU; queue selects the stream
 * space.  Packet data must be GPU-readable: a device address (flag
 * VFGX_PKT_GPU) or host memory registered with CUDA (pinned).  Blocks while
 * the list is full.  Returns the item number (>= 0) or -errno. */
int64_t vfgx_gpu_proc_submit(vfgx_gpu_proc *gp, const struct vfgx_pkt *pkts,
			     uint32_t n);
/* Items 0..N-1 are finished (their packets may be released); reaps what
 * the GPU completed without waiting.  Negative errno after a GPU fault or
 * timeout (detail names the CUDA error). */
int64_t vfgx_gpu_proc_poll(vfgx_gpu_proc *gp);
/* The number the next submitted item will get. */
uint64_t vfgx_gpu_proc_next(const vfgx_gpu_proc *gp);
/* Wait until item number item is finished (kicks a graph batch). */
int vfgx_gpu_proc_wait(vfgx_gpu_proc *gp, uint64_t item);
/* Launch a partly filled graph batch (graph mode; no-op otherwise). */
int vfgx_gpu_proc_kick(vfgx_gpu_proc *gp);
/* Wait until every submitted item is finished. */
int vfgx_gpu_proc_sync(vfgx_gpu_proc *gp);
/* End of input: deliver what the reorder windows hold (like
 * vfgx_proc_flush), then sync. */
int vfgx_gpu_proc_flush(vfgx_gpu_proc *gp);
/* Queue an item that forgets all stream state (empty windows, sequence
 * bases 0), ordered after the items before it; counters are kept. */
int vfgx_gpu_proc_reset(vfgx_gpu_proc *gp);
/* Counters reduced on the GPU (read with one copy); after a fault, the last
 * counters read.  order_errors: deliveries not in sequence order. */
int vfgx_gpu_proc_stats(vfgx_gpu_proc *gp, struct vfgx_pipeline_stats *st,
			uint64_t *order_errors);
/* Per-stream sums of the flow_sum user stage; n entries. */
int vfgx_gpu_proc_flow_sums(vfgx_gpu_proc *gp, uint64_t *sums, uint32_t n);
/* One line: device, mode, placement of status words. */
const char *vfgx_gpu_proc_describe(const vfgx_gpu_proc *gp);
/* Stop (quit flag), wait for the kernel at most timeout_ms, free. */
void vfgx_gpu_proc_destroy(vfgx_gpu_proc *gp);

/* Hash used in the delivery log (also for the CPU side of comparisons). */
static inline uint64_t vfgx_gpu_payload_hash(const uint8_t *p, uint32_t len)
{
	uint64_t a = 0, b = 0;

	for (uint32_t i = 0; i < len; i++) {
		a += p[i];
		b += (uint64_t)p[i] * (2u * i + 1u);
	}
	return a ^ (b << 20) ^ ((uint64_t)len << 52);
}

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
