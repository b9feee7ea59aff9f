/* vfgx/pipeline.h - the processing pipeline: a single-threaded processor
 * (parse -> validate -> filter -> reorder -> user stage) and a runner that
 * drives processors over ports on N worker threads; plus the packet builder
 * used by the loopback generator, tests and benchmarks. */
#ifndef VFGX_PIPELINE_H
#define VFGX_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "core.h"
#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VFGX_LAT_BUCKETS 40 /* log2 ns histogram: bucket b holds [2^b, 2^(b+1)) */

struct vfgx_pipeline_stats {
	uint64_t packets;          /* offered to the pipeline */
	uint64_t bytes;
	uint64_t passed;           /* survived parse/validate/filter */
	uint64_t delivered;        /* handed out in order by reorder */
	uint64_t delivered_bytes;  /* payload bytes delivered */
	uint64_t gaps;             /* sequences skipped (never arrived) */
	uint64_t verify_errors;    /* delivered payload not matching pattern */
	uint64_t last_seen;        /* streams that delivered their LAST flag */
	uint64_t drops[VFGX_DROP_MAX];
	uint64_t lat_hist[VFGX_LAT_BUCKETS];
};

/* Called for every record the reorder stage delivers, in sequence order per
 * stream (or for every passing packet when reorder is off).  Return 0 to
 * keep it, non-zero to count it as a VFGX_DROP_USER drop.  Called on the
 * worker thread that owns the stream. */
typedef int (*vfgx_user_stage_fn)(void *user, uint32_t stream, uint64_t seq,
				  const uint8_t *payload, uint32_t len);

/* --- single-threaded processor ------------------------------------------ */
typedef struct vfgx_proc vfgx_proc;

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

/* --- multi-threaded runner ---------------------------------------------- */
typedef struct vfgx_pipeline vfgx_pipeline;

/* Worker w polls rx queues w, w+workers, ... of every port, run to
 * completion: receive a burst, process it, release it in bulk. */
int vfgx_pipeline_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
			 vfgx_port *const *ports, uint16_t nb_ports,
			 vfgx_pipeline **out);
void vfgx_pipeline_set_user_stage(vfgx_pipeline *pl, vfgx_user_stage_fn fn,
				  void *user);
int vfgx_pipeline_start(vfgx_pipeline *pl);
/* True once every finite source is drained (or after stop). */
bool vfgx_pipeline_done(vfgx_pipeline *pl);
/* Ask workers to stop, join them, flush reorder windows. Idempotent. */
void vfgx_pipeline_stop(vfgx_pipeline *pl);
/* Sum of all workers; safe to call while running (values may lag). */
void vfgx_pipeline_stats(vfgx_pipeline *pl, struct vfgx_pipeline_stats *st);
/* Have the workers also copy each rx queue's counters when they publish
 * (every few ms, and at stop), for vfgx_pipeline_queue_stats.  Off by
 * default: it costs one stats read per queue per publish on the worker. */
void vfgx_pipeline_keep_queue_stats(vfgx_pipeline *pl);
/* Rx queue q of port as its worker last published it (zeros before
 * vfgx_pipeline_keep_queue_stats and the next publish); safe while
 * running.  -EINVAL when the pipeline does not poll that queue. */
int vfgx_pipeline_queue_stats(vfgx_pipeline *pl, vfgx_port *port, uint16_t q,
			      struct vfgx_queue_stats *st);
/* First fatal port error a worker hit (negative errno), or 0. */
int vfgx_pipeline_error(vfgx_pipeline *pl);
void vfgx_pipeline_destroy(vfgx_pipeline *pl);

void vfgx_stats_add(struct vfgx_pipeline_stats *dst,
		    const struct vfgx_pipeline_stats *src);
/* Latency percentile (0..100) from the histogram, in ns (bucket upper
 * bound); 0 when empty. */
uint64_t vfgx_stats_lat_pct(const struct vfgx_pipeline_stats *st, double pct);

/* --- packet builder -------------------------------------------------------- */
struct vfgx_pkt_spec {
	uint8_t src_mac[6], dst_mac[6];
	uint32_t src_ip, dst_ip;  /* host byte order */
	uint16_t src_port, dst_port;
	uint16_t vlan;            /* 0: untagged */
	uint32_t stream;
	uint32_t flags;
	uint64_t seq;
	uint32_t frame_len;       /* total frame bytes, >= headers + 16 */
	bool udp_csum;            /* compute the UDP checksum (else 0) */
};

/* Minimum frame length that holds all headers and the app header. */
uint32_t vfgx_pkt_min_len(uint16_t vlan);
/* Write a complete frame (checksums, pattern payload) into buf.  Returns
 * the frame length, or 0 when cap is too small or frame_len too short. */
uint32_t vfgx_pkt_build(uint8_t *buf, uint32_t cap,
			const struct vfgx_pkt_spec *s);

#ifdef __cplusplus
}
#endif
#endif
