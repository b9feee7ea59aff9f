/* vfgx/pipeline.h - the processing pipeline: a single-threaded processor
 * (parse -> validate -> filter -> reorder -> user stage), the pipeline that
 * drives processing over ports on an engine (CPU worker threads or the GPU),
 * observers that read its counters off the hot path; plus the packet
 * builder used by the loopback generator, tests and benchmarks. */
#ifndef VFGX_PIPELINE_H
#define VFGX_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "core.h"
#include "frame.h"
#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

#define VFGX_LAT_BUCKETS 40 /* log2 ns histogram: bucket b holds [2^b, 2^(b+1)) */
/* pipeline.reorder.max_memory when the config leaves it 0 */
#define VFGX_REORDER_MAX_MEMORY (1ull << 30)

struct vfgx_pipeline_stats {
	uint64_t packets;          /* offered to the pipeline */
	uint64_t bytes;
	uint64_t passed;           /* survived parse/validate/filter */
	uint64_t delivered;        /* handed out in order by reorder */
	uint64_t delivered_bytes;  /* payload bytes delivered */
	uint64_t gaps;             /* sequences skipped (never arrived) */
	uint64_t verify_errors;    /* delivered payload not matching pattern */
	uint64_t last_seen;        /* streams that delivered their LAST flag */
	uint64_t handed_over;      /* passed to the worker owning their stream */
	uint64_t streams_refused;  /* stream ids given no reorder window
				    * (max_memory reached); their packets
				    * are bad_stream drops */
	uint64_t reorder_bytes;    /* reorder window memory allocated */
	uint64_t drops[VFGX_DROP_MAX];
	uint64_t lat_hist[VFGX_LAT_BUCKETS];
	uint64_t order_errors;     /* deliveries below their stream's last one */
};

/* Called for every record the reorder stage delivers, in sequence order per
 * stream (or for every passing packet when reorder is off).  Return 0 to
 * keep it, non-zero to count it as a VFGX_DROP_USER drop.  Called on the
 * worker thread that owns the stream. */
typedef int (*vfgx_user_stage_fn)(void *user, uint32_t stream, uint64_t seq,
				  const uint8_t *payload, uint32_t len);

/* --- single-threaded processor ------------------------------------------ */
typedef struct vfgx_proc vfgx_proc;

/* Check a pipeline config before anything is opened: reorder window a
 * power of two, and window x slot_size x max_streams (what senders could
 * make the reorder stage allocate) within this host's memory, one stream's
 * window within max_memory.  -EINVAL with a one-line detail. */
int vfgx_pipeline_check(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf);

int vfgx_proc_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
		     vfgx_proc **out);
void vfgx_proc_destroy(vfgx_proc *p);
void vfgx_proc_set_user_stage(vfgx_proc *p, vfgx_user_stage_fn fn,
			      void *user);
/* Run all stages over a burst of CPU-addressable packets. */
void vfgx_proc_burst(vfgx_proc *p, const struct vfgx_pkt *pkts, uint32_t n);
/* End of input: deliver what the reorder windows hold, counting gaps. */
void vfgx_proc_flush(vfgx_proc *p);
/* Forget all stream state (a new run over the same processor). */
void vfgx_proc_reset(vfgx_proc *p);
void vfgx_proc_stats(const vfgx_proc *p, struct vfgx_pipeline_stats *st);

/* --- pipeline: ports -> processing on an engine ---------------------------
 *
 * Engines (conf->device picks one in vfgx_pipeline_create):
 *   cpu  conf->workers threads; worker w polls rx queues w, w+workers, ...
 *        of every port, run to completion: receive a burst, process it,
 *        release it in bulk.
 *   gpu  one feeder thread hands each burst to the GPU processor
 *        (pipeline.gpu options, vfgx/gpu.h) and releases it when done.
 *   auto gpu when CUDA finds GPU pipeline.gpu.gpu_id, else cpu (logged at
 *        INFO with the reason).
 * What the gpu engine lacks: a host user stage (-ENOTSUP; use
 * pipeline.gpu.user_stage), pipeline.workers (one feeder thread) and
 * per-queue snapshots (-ENOTSUP; observers see the pipeline totals).
 * Everything else (stats, order_errors, duration_s, done/stop/error,
 * observers) is the same on both.
 */
typedef struct vfgx_pipeline vfgx_pipeline;

/* The defaults of docs/config.md's pipeline: keys, and argsz. */
void vfgx_pipeline_config_default(struct vfgx_pipeline_config *conf);
/* -ENODEV when device is gpu and CUDA finds no GPU (detail says why);
 * -EINVAL for bad options or an argsz this library does not know.  CPU
 * engine, reorder on: a stream belongs to the first worker that receives
 * it; a packet of it arriving on another worker's queue is copied to the
 * owner (handed_over), so each stream has one reorder window and its
 * records reach the user stage in order on one thread. */
int vfgx_pipeline_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
			 vfgx_port *const *ports, uint16_t nb_ports,
			 vfgx_pipeline **out);
/* "cpu" or "gpu": the engine create chose. */
const char *vfgx_pipeline_engine(const vfgx_pipeline *pl);
/* One line: engine, workers or GPU device and launch mode, then what this
 * engine lacks ("; lacks a host user stage ..."), if anything. */
const char *vfgx_pipeline_describe(const vfgx_pipeline *pl);
/* Before start.  -ENOTSUP on the gpu engine (detail in vfgx_last_error). */
int vfgx_pipeline_set_user_stage(vfgx_pipeline *pl, vfgx_user_stage_fn fn,
				 void *user);
int vfgx_pipeline_start(vfgx_pipeline *pl);
/* True once every finite source is drained (or after stop). */
bool vfgx_pipeline_done(vfgx_pipeline *pl);
/* Ask the engine to stop, join it, flush reorder windows, then stop the
 * observers (they read the final counters).  Idempotent. */
void vfgx_pipeline_stop(vfgx_pipeline *pl);
/* Sum over the engine; safe to call while running (values may lag by a
 * snapshot period: 5 ms on the cpu engine, 1 s on the gpu engine). */
void vfgx_pipeline_stats(vfgx_pipeline *pl, struct vfgx_pipeline_stats *st);
/* Before start: have the engine copy each rx queue's counters when it
 * publishes, for vfgx_pipeline_queue_snap, without an observer attached
 * (the metrics endpoint of `vfgx run`).  Off by default: it costs one
 * stats read per queue per publish on the worker. */
void vfgx_pipeline_keep_queue_stats(vfgx_pipeline *pl);
/* First fatal error (negative errno), or 0; the gpu engine's detail is in
 * vfgx_last_error. */
int vfgx_pipeline_error(vfgx_pipeline *pl);
/* Stops (as vfgx_pipeline_stop), then releases the observers. */
void vfgx_pipeline_destroy(vfgx_pipeline *pl);

/* One rx queue as the thread that polls it last saw it. */
struct vfgx_queue_snap {
	struct vfgx_queue_stats stats;
	uint32_t pool_used;  /* rx pool buffers out; 0 and 0 when the */
	uint32_t pool_total; /* backend keeps its own buffers */
};
/* The ports given to create, in that order (NULL past nb_ports). */
uint16_t vfgx_pipeline_nb_ports(const vfgx_pipeline *pl);
vfgx_port *vfgx_pipeline_port(const vfgx_pipeline *pl, uint16_t i);
/* Rx queues over all ports, in port order (the index of queue_snap). */
uint32_t vfgx_pipeline_nb_queues(const vfgx_pipeline *pl);
/* Last snapshot of queue index; taken every 5 ms while an observer is
 * attached.  -ENOTSUP on the gpu engine, -EINVAL past nb_queues.  Safe
 * from any thread. */
int vfgx_pipeline_queue_snap(vfgx_pipeline *pl, uint32_t index,
			     struct vfgx_queue_snap *s);

/*
 * An observer: a side output (the gpurdma_mon publisher, a metrics
 * endpoint) the application attaches.  It reads the pipeline only through
 * vfgx_pipeline_stats/queue_snap, from a thread of its own that start()
 * may create.  Every callback is optional.
 */
struct vfgx_observer {
	uint32_t argsz; /* sizeof(struct vfgx_observer) */
	uint32_t flags; /* 0 */
	void *user;
	/* In vfgx_pipeline_start, before the engine starts; non-zero fails
	 * the start (with a detail set on the context). */
	int (*start)(void *user, vfgx_pipeline *pl);
	/* In vfgx_pipeline_stop, after the engine stopped: final counters. */
	void (*stop)(void *user, vfgx_pipeline *pl);
	/* In vfgx_pipeline_destroy, or when attaching fails: free user. */
	void (*release)(void *user);
};
/* Before start; obs is copied.  -EINVAL for an unknown argsz or flags
 * (release is called then too). */
int vfgx_pipeline_add_observer(vfgx_pipeline *pl, const struct vfgx_observer *obs);

void vfgx_stats_add(struct vfgx_pipeline_stats *dst,
		    const struct vfgx_pipeline_stats *src);
/* Latency percentile (0..100) from the histogram, in ns (bucket upper
 * bound); 0 when empty. */
uint64_t vfgx_stats_lat_pct(const struct vfgx_pipeline_stats *st, double pct);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
