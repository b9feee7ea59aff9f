/* vfgx/metrics.h - the Prometheus endpoint: an HTTP server (libmicrohttpd)
 * that serves the last published counters snapshot in the Prometheus text
 * exposition format at /metrics.  The program publishes a snapshot from
 * its control loop; a scrape formats that copy and never reads the data
 * path. */
#ifndef VFGX_METRICS_H
#define VFGX_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <gpurdma_mon.h>

#include "chunk.h"
#include "core.h"
#include "pipeline.h"
#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default) /* the library builds hidden */

/* One rx queue's counters and labels. */
struct vfgx_metrics_queue {
	const char *port;    /* the port's name (label port=) */
	const char *backend; /* its backend (label backend=) */
	uint16_t queue;
	struct vfgx_queue_stats st;
};

/* Everything one scrape shows.  The publisher fills it and
 * vfgx_metrics_publish copies it, queues and names included, into the
 * server; the caller's memory is not read after publish returns.  Start
 * from zero with argsz = sizeof(struct vfgx_metrics_snapshot); may grow at
 * the end. */
struct vfgx_metrics_snapshot {
	uint32_t argsz;
	const char *program;        /* "run", "bench": the vfgx_info label */
	bool finished;              /* the final counters: the run has ended */
	bool gpu;                   /* the pipeline runs on the GPU */
	struct vfgx_pipeline_stats pipeline;
	bool has_order_errors;
	uint64_t order_errors;      /* out-of-order deliveries seen by the checker */
	bool has_mon;               /* /dev/gpurdma_mon was read */
	struct gpurdma_mon_telemetry mon;
	uint32_t nb_queues;
	const struct vfgx_metrics_queue *queues; /* nb_queues entries */
	bool has_chunks;            /* the pipeline has pipeline.chunks */
	struct vfgx_chunk_stats chunks; /* vfgx_chunk_stats (vfgx/chunk.h) */
};

typedef struct vfgx_metrics vfgx_metrics;

/*
 * Serve http://ADDR:PORT/metrics on a thread of its own.  listen is
 * "IPv4:PORT", "[IPv6]:PORT" or ":PORT" (all IPv4 addresses); port 0 picks
 * a free one (vfgx_metrics_port says which).  -EINVAL for a malformed
 * address, the bind error otherwise; each with a detail.  Until the first
 * vfgx_metrics_publish the page holds only vfgx_info.
 */
int vfgx_metrics_start(vfgx_ctx *ctx, const char *listen, vfgx_metrics **out);
uint16_t vfgx_metrics_port(const vfgx_metrics *m);
/* Copy snap in as what the next scrapes serve (any thread).  -EINVAL for
 * an argsz this library does not know (or queues NULL with nb_queues),
 * -ENOMEM; the page keeps the previous snapshot then. */
int vfgx_metrics_publish(vfgx_metrics *m,
			 const struct vfgx_metrics_snapshot *snap);
/* Scrapes answered so far. */
uint64_t vfgx_metrics_scrapes(const vfgx_metrics *m);
/* Stop serving and free; NULL is a no-op. */
void vfgx_metrics_stop(vfgx_metrics *m);

/* Write snap in the text exposition format (what a scrape returns).
 * Returns 0, or -EIO when f failed. */
int vfgx_metrics_format(FILE *f, const struct vfgx_metrics_snapshot *snap);

/* Fill qs (room for cap) from every rx queue of the ports, in port order,
 * with vfgx_port_stats; the names point to the ports' own.  Call where
 * reading the queues is safe: after the pipeline stopped, or on the
 * thread that polls them.  Returns the entries written. */
uint32_t vfgx_metrics_snapshot_ports(struct vfgx_metrics_queue *qs, uint32_t cap,
				     vfgx_port *const *ports, uint16_t nb_ports);

/*
 * Attach m to pl as an observer (vfgx_pipeline_add_observer): from
 * vfgx_pipeline_start, a thread of its own publishes every period_ms the
 * pipeline's counters, each rx queue's last snapshot (engines without
 * queue snapshots: none until the end) and /dev/gpurdma_mon's telemetry
 * when the driver is loaded; in vfgx_pipeline_stop it publishes the final
 * counters, read from the ports (finished = true).  program labels
 * vfgx_info.  m stays the caller's: stop it after vfgx_pipeline_destroy
 * (it may go on serving the final page).  Before start; -EINVAL for
 * period_ms 0.
 */
int vfgx_metrics_observe(vfgx_ctx *ctx, vfgx_pipeline *pl, vfgx_metrics *m,
			 const char *program, uint32_t period_ms);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
