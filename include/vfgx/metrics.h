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

#include "core.h"
#include "pipeline.h"
#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default) /* the library builds hidden */

#define VFGX_METRICS_MAX_QUEUES 256

struct vfgx_metrics_queue {
	char port[64];
	char backend[16];
	uint16_t queue;
	struct vfgx_queue_stats st;
};

/* Everything one scrape shows.  Plain data: the publisher copies it in,
 * the server copies it out, each under the server's lock. */
struct vfgx_metrics_snapshot {
	const char *program;        /* "run", "bench": the vfgx_info label */
	bool finished;              /* the final counters: the run has ended */
	bool gpu;                   /* the pipeline runs on the GPU */
	struct vfgx_pipeline_stats pipeline;
	bool has_order_errors;
	uint64_t order_errors;      /* out-of-order deliveries seen by the checker */
	uint16_t nb_queues;
	struct vfgx_metrics_queue queues[VFGX_METRICS_MAX_QUEUES];
	bool has_mon;               /* /dev/gpurdma_mon was read */
	struct gpurdma_mon_telemetry mon;
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
/* Copy snap in as what the next scrapes serve (any thread). */
void vfgx_metrics_publish(vfgx_metrics *m,
			  const struct vfgx_metrics_snapshot *snap);
/* Scrapes answered so far. */
uint64_t vfgx_metrics_scrapes(const vfgx_metrics *m);
/* Stop serving and free; NULL is a no-op. */
void vfgx_metrics_stop(vfgx_metrics *m);

/* Write snap in the text exposition format (what a scrape returns).
 * Returns 0, or -EIO when f failed. */
int vfgx_metrics_format(FILE *f, const struct vfgx_metrics_snapshot *snap);

/* Fill snap->queues from every rx queue of the ports with
 * vfgx_port_stats (call where reading them is safe: after the pipeline
 * stopped, or on the thread that polls them). */
void vfgx_metrics_snapshot_ports(struct vfgx_metrics_snapshot *snap,
				 vfgx_port *const *ports, uint16_t nb_ports);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
