/* vfgx/mon.h - the gpurdma_mon kernel driver from user space: telemetry,
 * thresholds and events of /dev/gpurdma_mon, and the publisher that pushes
 * the library's counters to it (attached to a pipeline as an observer). */
#ifndef VFGX_MON_H
#define VFGX_MON_H

#include <stddef.h>
#include <stdint.h>

#include <gpurdma_mon.h>

#include "core.h"
#include "pipeline.h"
#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

#define VFGX_MON_DEFAULT_PATH "/dev/" GPURDMA_MON_DEVNAME

/* An open client of the device.  One thread at a time. */
typedef struct vfgx_mon vfgx_mon;

/*
 * Open the device (path NULL: $VFGX_MON_DEV, else /dev/gpurdma_mon) and
 * check its ABI version.  -ENOENT when the driver is not loaded, -EPROTO
 * on an ABI mismatch, errno of open() otherwise; each with a detail.
 */
int vfgx_mon_open(vfgx_ctx *ctx, const char *path, vfgx_mon **out);
void vfgx_mon_close(vfgx_mon *m);
int vfgx_mon_fd(const vfgx_mon *m);

int vfgx_mon_telemetry(vfgx_mon *m, struct gpurdma_mon_telemetry *t);
/* pressure_pct 1..100; bw_mbps 0: 90% of the estimated GPU-NIC bandwidth. */
int vfgx_mon_set_threshold(vfgx_mon *m, uint32_t pressure_pct,
			   uint64_t bw_mbps);
int vfgx_mon_get_threshold(vfgx_mon *m, struct gpurdma_mon_threshold *thr);
/* Push counters (argsz is filled in here). */
int vfgx_mon_publish(vfgx_mon *m, struct gpurdma_mon_publish *p);
/* The last counters anyone published (all zero before the first). */
int vfgx_mon_counters(vfgx_mon *m, struct gpurdma_mon_publish *p);

/*
 * Read up to max events, waiting up to timeout_ms (-1: forever, 0: not at
 * all).  Returns how many (0 on timeout) or a negative errno (-EINTR when
 * a signal arrived).
 */
int vfgx_mon_read(vfgx_mon *m, struct gpurdma_mon_event *ev, int max,
		  int timeout_ms);

const char *vfgx_mon_event_name(uint32_t type);
const char *vfgx_mon_severity_name(uint32_t severity);
const char *vfgx_mon_source_name(uint32_t source);
/* One line describing ev, without a newline. */
void vfgx_mon_format_event(const struct gpurdma_mon_event *ev, char *buf,
			   size_t len);

/* One rx queue's counters and its pool's occupancy. */
struct vfgx_mon_queue_snap {
	struct gpurdma_mon_queue_counters c;
	uint32_t pool_used;
	uint32_t pool_total;
};

/* Read queue q of port (stats and rx pool) on a thread that may: the one
 * that polls it. */
void vfgx_mon_queue_snap(vfgx_port *port, uint16_t q,
			 struct vfgx_mon_queue_snap *s);
/* Add s into p as queue index (indexes past GPURDMA_MON_MAX_QUEUES - 1
 * are added into the last slot); the caller sets p->nr_queues. */
void vfgx_mon_queue_add(struct gpurdma_mon_publish *p, uint32_t index,
			const struct vfgx_mon_queue_snap *s);
/* Both over every rx queue of the ports, in order, on this thread. */
void vfgx_mon_collect(vfgx_port *const *ports, uint16_t nb_ports,
		      struct gpurdma_mon_publish *p);

/*
 * Publisher: a thread that calls collect(user, p) and PUBLISHes the result
 * every period_ms, and once more when stopped.  When the device does not
 * exist it starts nothing, says nothing (a DEBUG log line) and sets *out
 * to NULL; vfgx_mon_publisher_stop(NULL) is a no-op.  collect runs on the
 * publisher thread and must be safe against the data path.
 */
typedef struct vfgx_mon_publisher vfgx_mon_publisher;
typedef void (*vfgx_mon_collect_fn)(void *user, struct gpurdma_mon_publish *p);

int vfgx_mon_publisher_start(vfgx_ctx *ctx, const char *path,
			     uint32_t period_ms, vfgx_mon_collect_fn collect,
			     void *user, vfgx_mon_publisher **out);
void vfgx_mon_publisher_stop(vfgx_mon_publisher *pub);
/* PUBLISH calls that succeeded so far. */
uint64_t vfgx_mon_publisher_count(const vfgx_mon_publisher *pub);

/*
 * Attach a publisher to pl as an observer (before vfgx_pipeline_start):
 * from the start it PUBLISHes the pipeline's queue snapshots every
 * period_ms (an engine without them, the gpu engine: its totals as queue
 * 0), and the final counters when the pipeline stops.  Without the driver
 * it publishes nothing and says so only at DEBUG.  path as vfgx_mon_open.
 */
int vfgx_mon_observe(vfgx_ctx *ctx, vfgx_pipeline *pl, const char *path,
		     uint32_t period_ms);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
