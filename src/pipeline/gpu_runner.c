/* gpu_runner.c - `vfgx run` on the GPU: one CPU thread polls every rx queue
 * of every port, hands each burst to the GPU processor as one comm-list
 * item, and releases the packets to their port once the GPU marks the item
 * DONE.  Packets in host memory the GPU cannot read are copied into a
 * pinned bounce area (with a warning saying how to read them in place). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/gpu.h>

#include "gpu_iface.h"
#include "gpu_runner.h"

#define RUN_BURST 256    /* rx burst, and packets per item */
#define BOUNCE_SLOT 2048 /* bytes per packet in the bounce area */

struct rx_entry {
	vfgx_port *port;
	uint16_t q;
	int readable; /* -1 unknown, 0 bounce, 1 in place */
};

struct held {
	struct rx_entry *rx;
	uint16_t n;
	bool bounced;
	struct vfgx_pkt pkts[RUN_BURST];
};

struct vfgx_gpu_pipeline {
	vfgx_ctx *ctx;
	struct vfgx_pipeline_config conf;
	struct vfgx_gpu_opts opts;
	vfgx_gpu_proc *gp;
	struct rx_entry *rx;
	uint32_t nb_rx;
	struct held *held;   /* per item slot */
	uint32_t nb_slots;
	vfgx_region *bounce;
	uint8_t *bounce_mem;
	pthread_t thread;
	bool started, stopped;
	atomic_bool stop, done;
	int error;
	uint64_t released;
	pthread_mutex_t lock;
	struct vfgx_pipeline_stats snap;
	uint64_t snap_order;
};

int vfgx_gpu_pipeline_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
			     vfgx_port *const *ports, uint16_t nb_ports,
			     vfgx_gpu_pipeline **out)
{
	struct vfgx_gpu_pipeline *gpl;
	uint32_t k = 0;
	int ret;

	*out = NULL;
	gpl = calloc(1, sizeof(*gpl));
	if (!gpl)
		return -ENOMEM;
	gpl->ctx = ctx;
	gpl->conf = *conf;
	pthread_mutex_init(&gpl->lock, NULL);
	ret = conf->gpu ? (gpl->opts = *conf->gpu, 0) :
			  vfgx_gpu_opts_parse(&conf->gpu_opts, &gpl->opts);
	if (ret)
		goto fail;
	for (uint16_t i = 0; i < nb_ports; i++)
		gpl->nb_rx += vfgx_port_nb_rx_queues(ports[i]);
	if (!gpl->nb_rx) {
		ret = vfgx_set_error(ctx, -EINVAL, "pipeline: no rx queues to poll");
		goto fail;
	}
	gpl->rx = calloc(gpl->nb_rx, sizeof(*gpl->rx));
	if (!gpl->rx) {
		ret = -ENOMEM;
		goto fail;
	}
	for (uint16_t i = 0; i < nb_ports; i++)
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]); q++, k++)
			gpl->rx[k] = (struct rx_entry){ ports[i], q, -1 };
	/* one stream space per rx queue, as the CPU runner's per-queue state */
	gpl->opts.queues = gpl->nb_rx;
	if (gpl->opts.burst > RUN_BURST)
		gpl->opts.burst = RUN_BURST;
	gpl->nb_slots = gpl->opts.mode == VFGX_GPU_GRAPH ? 2 * gpl->opts.graph_items :
							   gpl->opts.items;
	/* The bounce area is made before the kernels start: registering host
	 * memory while a persistent kernel runs is best avoided. */
	ret = vfgx_region_create(ctx, VFGX_MEM_PINNED,
				 (size_t)gpl->nb_slots * RUN_BURST * BOUNCE_SLOT,
				 (int)gpl->opts.gpu_id, false, &gpl->bounce);
	if (ret)
		goto fail;
	gpl->bounce_mem = vfgx_region_info(gpl->bounce)->addr;
	ret = vfgx_gpu_proc_create(ctx, conf, &gpl->opts, &gpl->gp);
	if (ret)
		goto fail;
	gpl->held = calloc(gpl->nb_slots, sizeof(*gpl->held));
	if (!gpl->held) {
		ret = -ENOMEM;
		goto fail;
	}
	*out = gpl;
	return 0;
fail:
	vfgx_gpu_pipeline_destroy(gpl);
	return ret;
}

const char *vfgx_gpu_pipeline_describe(const vfgx_gpu_pipeline *gpl)
{
	return vfgx_gpu_proc_describe(gpl->gp);
}

static void release_upto(vfgx_gpu_pipeline *gpl, uint64_t done)
{
	for (; gpl->released < done; gpl->released++) {
		struct held *h = &gpl->held[gpl->released % gpl->nb_slots];

		if (h->n && !h->bounced)
			vfgx_port_release(h->rx->port, h->rx->q, h->pkts, h->n);
		h->n = 0;
	}
}

/* First burst of a queue: can the GPU read its buffers in place? */
static void check_readable(vfgx_gpu_pipeline *gpl, struct rx_entry *e,
			   const struct vfgx_pkt *p)
{
	e->readable = (p->flags & VFGX_PKT_GPU) || gpuk_device_readable(p->data);
	if (!e->readable)
		vfgx_warn(gpl->ctx, "%s rx queue %u: buffers are host memory the GPU cannot read; copying them into pinned memory (set memory_regions[].kind: pinned to read in place)",
			  vfgx_port_name(e->port), e->q);
}

static int bounce(vfgx_gpu_pipeline *gpl, struct held *h, uint32_t slot,
		  struct vfgx_pkt *out)
{
	uint8_t *area = gpl->bounce_mem + (size_t)slot * RUN_BURST * BOUNCE_SLOT;

	for (uint16_t i = 0; i < h->n; i++) {
		if (h->pkts[i].len > BOUNCE_SLOT)
			return vfgx_set_error(gpl->ctx, -EMSGSIZE, "%s: %u-byte packet in host memory is larger than the GPU bounce slot (%u); use a pinned memory region",
					      vfgx_port_name(h->rx->port), h->pkts[i].len,
					      BOUNCE_SLOT);
		memcpy(area + (size_t)i * BOUNCE_SLOT, h->pkts[i].data, h->pkts[i].len);
		out[i] = h->pkts[i];
		out[i].data = area + (size_t)i * BOUNCE_SLOT;
	}
	vfgx_port_release(h->rx->port, h->rx->q, h->pkts, h->n);
	h->bounced = true;
	return 0;
}

static void publish(vfgx_gpu_pipeline *gpl)
{
	struct vfgx_pipeline_stats st;
	uint64_t order = 0;

	vfgx_gpu_proc_stats(gpl->gp, &st, &order);
	pthread_mutex_lock(&gpl->lock);
	gpl->snap = st;
	gpl->snap_order = order;
	pthread_mutex_unlock(&gpl->lock);
}

/* Wait until the next item's slot (and its held packets) are free. */
static int make_room(vfgx_gpu_pipeline *gpl)
{
	for (;;) {
		uint64_t next = vfgx_gpu_proc_next(gpl->gp);
		int64_t done = vfgx_gpu_proc_poll(gpl->gp);
		int ret;

		if (done < 0)
			return (int)done;
		release_upto(gpl, (uint64_t)done);
		if (next - (uint64_t)done < gpl->nb_slots)
			return 0;
		if ((ret = vfgx_gpu_proc_wait(gpl->gp, next - gpl->nb_slots)))
			return ret;
	}
}

static int feed_once(vfgx_gpu_pipeline *gpl, struct vfgx_pkt *rxbuf,
		     struct vfgx_pkt *sub, bool *any, bool *all_done)
{
	for (uint32_t e = 0; e < gpl->nb_rx; e++) {
		struct rx_entry *rx = &gpl->rx[e];
		struct held *h;
		int64_t item, done;
		int n, ret;

		n = vfgx_port_rx_burst(rx->port, rx->q, rxbuf, (uint16_t)gpl->opts.burst);
		if (n < 0) {
			vfgx_err(gpl->ctx, "%s: rx queue %u failed: %s",
				 vfgx_port_name(rx->port), rx->q, vfgx_strerror(n));
			return n;
		}
		if (n == 0) {
			if (!vfgx_port_rx_done(rx->port, rx->q))
				*all_done = false;
			continue;
		}
		*any = true;
		*all_done = false;
		if (rx->readable < 0)
			check_readable(gpl, rx, &rxbuf[0]);
		if ((ret = make_room(gpl))) {
			vfgx_port_release(rx->port, rx->q, rxbuf, (uint16_t)n);
			return ret;
		}
		item = (int64_t)vfgx_gpu_proc_next(gpl->gp);
		h = &gpl->held[(uint64_t)item % gpl->nb_slots];
		h->rx = rx;
		h->n = (uint16_t)n;
		h->bounced = false;
		memcpy(h->pkts, rxbuf, sizeof(*rxbuf) * (size_t)n);
		if (!rx->readable) {
			if ((ret = bounce(gpl, h, (uint32_t)(item % gpl->nb_slots), sub)))
				return ret;
		} else {
			memcpy(sub, rxbuf, sizeof(*rxbuf) * (size_t)n);
		}
		for (int i = 0; i < n; i++)
			sub[i].queue = (uint16_t)e; /* stream space of this queue */
		item = vfgx_gpu_proc_submit(gpl->gp, sub, (uint32_t)n);
		if (item < 0)
			return (int)item;
		done = vfgx_gpu_proc_poll(gpl->gp);
		if (done < 0)
			return (int)done;
		release_upto(gpl, (uint64_t)done);
	}
	return 0;
}

static void *gpu_main(void *arg)
{
	vfgx_gpu_pipeline *gpl = arg;
	struct vfgx_pkt *rxbuf = calloc(RUN_BURST, sizeof(*rxbuf));
	struct vfgx_pkt *sub = calloc(RUN_BURST, sizeof(*sub));
	uint64_t start = vfgx_now_ns(), last_pub = start;
	uint64_t end = gpl->conf.duration_s > 0 ?
			       start + (uint64_t)(gpl->conf.duration_s * 1e9) :
			       UINT64_MAX;
	uint32_t idle = 0;
	int ret = rxbuf && sub ? 0 : -ENOMEM;

	while (!ret && !atomic_load_explicit(&gpl->stop, memory_order_relaxed)) {
		bool any = false, all_done = true;
		uint64_t now;

		ret = feed_once(gpl, rxbuf, sub, &any, &all_done);
		if (ret || all_done)
			break;
		if (!any) {
			/* nothing arriving: launch a partial graph batch, let
			 * the sender run */
			if ((ret = vfgx_gpu_proc_kick(gpl->gp)))
				break;
			if (++idle > 64) {
				sched_yield();
				idle = 0;
			}
		}
		now = vfgx_now_ns();
		if (now >= end)
			break;
		if (now - last_pub >= 1000000000ull) {
			publish(gpl);
			last_pub = now;
		}
	}
	if (!ret)
		ret = vfgx_gpu_proc_flush(gpl->gp);
	if (!ret) {
		int64_t done = vfgx_gpu_proc_poll(gpl->gp);

		if (done >= 0)
			release_upto(gpl, (uint64_t)done);
	}
	if (ret) {
		gpl->error = ret;
		vfgx_err(gpl->ctx, "%s", vfgx_last_error(gpl->ctx));
	}
	publish(gpl);
	free(rxbuf);
	free(sub);
	atomic_store(&gpl->done, true);
	return NULL;
}

int vfgx_gpu_pipeline_start(vfgx_gpu_pipeline *gpl)
{
	int ret = pthread_create(&gpl->thread, NULL, gpu_main, gpl);

	if (ret)
		return vfgx_set_error(gpl->ctx, -ret, "pipeline: cannot start the GPU feeder thread: %s",
				      strerror(ret));
	gpl->started = true;
	return 0;
}

bool vfgx_gpu_pipeline_done(vfgx_gpu_pipeline *gpl)
{
	return !gpl->started || atomic_load(&gpl->done);
}

void vfgx_gpu_pipeline_stop(vfgx_gpu_pipeline *gpl)
{
	if (gpl->stopped)
		return;
	atomic_store(&gpl->stop, true);
	if (gpl->started)
		pthread_join(gpl->thread, NULL);
	gpl->started = false;
	gpl->stopped = true;
}

void vfgx_gpu_pipeline_stats(vfgx_gpu_pipeline *gpl, struct vfgx_pipeline_stats *st,
			     uint64_t *order_errors)
{
	pthread_mutex_lock(&gpl->lock);
	*st = gpl->snap;
	if (order_errors)
		*order_errors = gpl->snap_order;
	pthread_mutex_unlock(&gpl->lock);
}

int vfgx_gpu_pipeline_error(vfgx_gpu_pipeline *gpl)
{
	return gpl->error;
}

void vfgx_gpu_pipeline_destroy(vfgx_gpu_pipeline *gpl)
{
	if (!gpl)
		return;
	vfgx_gpu_pipeline_stop(gpl);
	/* packets still held by unfinished items go back to their ports only
	 * once the GPU is stopped */
	vfgx_gpu_proc_destroy(gpl->gp);
	if (gpl->held)
		for (uint64_t i = 0; i < gpl->nb_slots; i++) {
			struct held *h = &gpl->held[i];

			if (h->n && !h->bounced)
				vfgx_port_release(h->rx->port, h->rx->q, h->pkts, h->n);
		}
	vfgx_region_destroy(gpl->bounce);
	free(gpl->held);
	free(gpl->rx);
	pthread_mutex_destroy(&gpl->lock);
	free(gpl);
}
