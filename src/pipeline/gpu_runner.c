/* gpu_runner.c - `vfgx run` on the GPU: one CPU thread polls every rx queue
 * of every port, gathers what the queues have into one comm-list item (up
 * to pipeline.gpu.burst packets, several rx bursts and queues per item),
 * hands it to the GPU processor, and releases the packets to their ports
 * once the GPU marks the item DONE.  Packets in host memory the GPU cannot
 * read are copied into a pinned bounce area (with a warning saying how to
 * read them in place).  Where the time went before this design (one rx
 * burst of 64 packets per item): docs/gpu.md. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/gpu.h>

#include "chunkset.h"
#include "gpu_bench.h"
#include "gpu_iface.h"
#include "gpu_runner.h"
#include "port/backend.h"

#define RUN_BURST 1024   /* packets per item at most */
#define RUN_SEGS 64      /* rx bursts per item at most */
#define BOUNCE_SLOT 2048 /* bytes per packet in the bounce area */
/* Items in flight under which a partly filled item goes out at once. */
#define RUN_LOW_INFLIGHT 4

struct rx_entry {
	vfgx_port *port;
	uint16_t q;
	int readable; /* -1 unknown, 0 bounce, 1 in place */
};

/* One rx burst inside an item: pkts[at .. at + n) came from rx (NULL once
 * bounced: the port already has its buffers back). */
struct seg {
	struct rx_entry *rx;
	uint16_t at, n;
};

/* pkts: pinned host memory, which the GPU reads in place
 * (VFGX_COMM_PKT_RECORDS): rx_burst writes the records the GPU uses. */
struct held {
	uint16_t n, nsegs;
	struct seg segs[RUN_SEGS];
	struct vfgx_pkt *pkts;
	const struct vfgx_pkt *pkts_dev;
};

struct vfgx_gpu_pipeline {
	vfgx_ctx *ctx;
	struct vfgx_pipeline_config conf;
	struct vfgx_gpu_opts opts;
	vfgx_gpu_proc *gp;
	struct rx_entry *rx;
	uint32_t nb_rx;
	uint32_t rx_first;   /* queue polled first for the next item (rotates) */
	struct held *held;   /* per item slot */
	uint32_t nb_slots;
	vfgx_region *bounce;
	uint8_t *bounce_mem;
	vfgx_region *recs;   /* the held packet records, pinned */
	struct vfgx_gpu_feeder fd;
	struct vfgx_chunkset *chunks; /* placed by the kernels, or NULL */
	pthread_t thread;
	bool started, stopped;
	atomic_bool stop, done;
	int error;
	uint64_t released;
	uint64_t first_ns, end_ns; /* first packet received; feeder ended */
	pthread_mutex_t lock;
	struct vfgx_pipeline_stats snap;
	uint64_t snap_order;
};

/* Can every rx queue's buffers be read by the GPU in place (a pool over a
 * pinned or GPU region)?  Backends with their own buffers: unknown, so a
 * bounce area is made. */
static bool all_in_place(vfgx_port *const *ports, uint16_t nb_ports)
{
	for (uint16_t i = 0; i < nb_ports; i++)
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]); q++) {
			vfgx_pool *pool = ports[i]->rx_pools[q];
			enum vfgx_mem_kind kd;

			if (!pool)
				return false;
			kd = vfgx_region_info(vfgx_pool_region(pool))->kind;
			if (kd != VFGX_MEM_PINNED && kd != VFGX_MEM_GPU)
				return false;
		}
	return true;
}

int vfgx_gpu_pipeline_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
			     vfgx_port *const *ports, uint16_t nb_ports,
			     struct vfgx_chunkset *chunks, vfgx_gpu_pipeline **out)
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
	gpl->chunks = chunks;
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
	if (!all_in_place(ports, nb_ports)) {
		ret = vfgx_region_create(ctx, VFGX_MEM_PINNED,
					 (size_t)gpl->nb_slots * gpl->opts.burst * BOUNCE_SLOT,
					 (int)gpl->opts.gpu_id, false, &gpl->bounce);
		if (ret)
			goto fail;
		gpl->bounce_mem = vfgx_region_info(gpl->bounce)->addr;
	}
	/* the records too (compute-sanitizer flags reads of host memory
	 * registered after the kernel's launch) */
	ret = vfgx_region_create(ctx, VFGX_MEM_PINNED,
				 (size_t)gpl->nb_slots * RUN_BURST * sizeof(struct vfgx_pkt),
				 (int)gpl->opts.gpu_id, false, &gpl->recs);
	if (ret)
		goto fail;
	ret = vfgx_gpu_proc_create_chunks(ctx, conf, &gpl->opts, chunks, &gpl->gp);
	if (ret)
		goto fail;
	gpl->held = calloc(gpl->nb_slots, sizeof(*gpl->held));
	if (!gpl->held) {
		ret = -ENOMEM;
		goto fail;
	}
	for (uint32_t i = 0; i < gpl->nb_slots; i++) {
		const struct vfgx_region_info *ri = vfgx_region_info(gpl->recs);

		gpl->held[i].pkts = (struct vfgx_pkt *)ri->addr + (size_t)i * RUN_BURST;
		gpl->held[i].pkts_dev = (const struct vfgx_pkt *)ri->dev_addr + (size_t)i * RUN_BURST;
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

static void release_held(struct held *h)
{
	for (uint16_t i = 0; i < h->nsegs; i++) {
		struct seg *sg = &h->segs[i];

		if (sg->rx)
			vfgx_port_release(sg->rx->port, sg->rx->q, h->pkts + sg->at, sg->n);
	}
	h->n = 0;
	h->nsegs = 0;
}

static void release_upto(vfgx_gpu_pipeline *gpl, uint64_t done)
{
	for (; gpl->released < done; gpl->released++)
		release_held(&gpl->held[gpl->released % gpl->nb_slots]);
}

/* First burst of a queue: can the GPU read its buffers in place? */
static int check_readable(vfgx_gpu_pipeline *gpl, struct rx_entry *e,
			  const struct vfgx_pkt *p)
{
	e->readable = (p->flags & VFGX_PKT_GPU) || gpuk_device_readable(p->data);
	if (e->readable)
		return 0;
	if (!gpl->bounce_mem)
		return vfgx_set_error(gpl->ctx, -EFAULT, "%s rx queue %u: buffers of a pinned/GPU region are not readable by the GPU",
				      vfgx_port_name(e->port), e->q);
	vfgx_warn(gpl->ctx, "%s rx queue %u: buffers are host memory the GPU cannot read; copying them into pinned memory (set memory_regions[].kind: pinned to read in place)",
		  vfgx_port_name(e->port), e->q);
	return 0;
}

/* Copy pkts[at .. at + n) of the item in slot into the bounce area and
 * give the port its buffers back at once. */
static int bounce(vfgx_gpu_pipeline *gpl, struct held *h, uint32_t slot,
		  struct seg *sg)
{
	uint8_t *area = gpl->bounce_mem + (size_t)slot * gpl->opts.burst * BOUNCE_SLOT;
	struct rx_entry *rx = sg->rx;
	uint32_t too_big = 0;

	for (uint16_t i = sg->at; i < sg->at + sg->n && !too_big; i++) {
		if (h->pkts[i].len > BOUNCE_SLOT)
			too_big = h->pkts[i].len;
		else
			memcpy(area + (size_t)i * BOUNCE_SLOT, h->pkts[i].data, h->pkts[i].len);
	}
	vfgx_port_release(rx->port, rx->q, h->pkts + sg->at, sg->n);
	sg->rx = NULL;
	if (too_big)
		return vfgx_set_error(gpl->ctx, -EMSGSIZE, "%s: %u-byte packet in host memory is larger than the GPU bounce slot (%u); use a pinned memory region",
				      vfgx_port_name(rx->port), too_big, BOUNCE_SLOT);
	for (uint16_t i = sg->at; i < sg->at + sg->n; i++)
		h->pkts[i].data = area + (size_t)i * BOUNCE_SLOT;
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

/* One rx burst of queue e into the item being filled; 0 packets, n, or
 * -errno.  *full: the queue gave all it was asked (more may be waiting). */
static int rx_into(vfgx_gpu_pipeline *gpl, struct held *h, uint32_t slot,
		   uint32_t e, uint32_t want, bool *all_done, bool *full)
{
	struct rx_entry *rx = &gpl->rx[e];
	struct seg *sg;
	int n, ret;

	if (want > rx->port->burst)
		want = rx->port->burst;
	n = vfgx_port_rx_burst(rx->port, rx->q, h->pkts + h->n, (uint16_t)want);
	if (n < 0) {
		vfgx_set_error(gpl->ctx, n, "%s: rx queue %u failed: %s",
			       vfgx_port_name(rx->port), rx->q, vfgx_strerror(n));
		return n;
	}
	*full = (uint32_t)n == want;
	if (n == 0) {
		if (!vfgx_port_rx_done(rx->port, rx->q))
			*all_done = false;
		return 0;
	}
	*all_done = false;
	if (!gpl->first_ns)
		gpl->first_ns = vfgx_now_ns();
	sg = &h->segs[h->nsegs++];
	*sg = (struct seg){ rx, h->n, (uint16_t)n };
	if (rx->readable == -1 && (ret = check_readable(gpl, rx, &h->pkts[h->n])))
		return ret;
	/* the queue field becomes the stream space of this rx queue (the
	 * ports' release does not read it) */
	for (int i = 0; i < n; i++)
		h->pkts[h->n + i].queue = (uint16_t)e;
	h->n = (uint16_t)(h->n + n);
	if (!rx->readable && (ret = bounce(gpl, h, slot, sg)))
		return ret;
	return n;
}

/* Fill one item from the queues (each queue in turn, a fair share per
 * round; more rounds while some queue gave a full burst, or while the GPU
 * is busy) and hand it to the GPU with no copy; then release what the GPU
 * finished. */
static int feed_once(vfgx_gpu_pipeline *gpl, bool *any, bool *all_done)
{
	uint32_t cap = gpl->opts.burst, share, slot;
	uint64_t t0 = vfgx_now_ns(), t1, t2, ts = UINT64_MAX;
	struct held *h;
	int64_t item, done;
	bool more = true;
	int ret;

	if ((ret = make_room(gpl)))
		return ret;
	t1 = vfgx_now_ns();
	gpl->fd.room_ns += t1 - t0;
	slot = (uint32_t)(vfgx_gpu_proc_next(gpl->gp) % gpl->nb_slots);
	h = &gpl->held[slot];
	h->n = h->nsegs = 0;
	share = cap / gpl->nb_rx ? cap / gpl->nb_rx : 1;
	while (more && h->n < cap && h->nsegs < RUN_SEGS) {
		more = false;
		for (uint32_t i = 0; i < gpl->nb_rx && h->n < cap && h->nsegs < RUN_SEGS; i++) {
			uint32_t e = (gpl->rx_first + i) % gpl->nb_rx;
			uint32_t want = cap - h->n < share ? cap - h->n : share;
			bool full = false;
			int n = rx_into(gpl, h, slot, e, want, all_done, &full);

			if (n < 0) {
				release_held(h);
				return n;
			}
			more |= full;
		}
		/* No queue backlogged: hand over what there is at once while
		 * the GPU has little in flight (low latency at low load);
		 * while it is busy, keep gathering until the item is full or
		 * it catches up (fewer, larger items: the GPU's cost is per
		 * item, and many small items would queue up behind it). */
		if (!more && h->n && h->n < cap && h->nsegs < RUN_SEGS &&
		    gpl->opts.mode != VFGX_GPU_GRAPH && /* a graph batch waits for items */
		    vfgx_gpu_proc_next(gpl->gp) - gpl->released >= RUN_LOW_INFLIGHT) {
			int64_t fin = vfgx_gpu_proc_poll(gpl->gp);

			if (fin < 0) {
				release_held(h);
				return (int)fin;
			}
			release_upto(gpl, (uint64_t)fin);
			more = vfgx_gpu_proc_next(gpl->gp) - gpl->released >= RUN_LOW_INFLIGHT &&
			       !atomic_load_explicit(&gpl->stop, memory_order_relaxed);
		}
	}
	gpl->rx_first = (gpl->rx_first + 1) % gpl->nb_rx;
	t2 = vfgx_now_ns();
	gpl->fd.rx_ns += t2 - t1;
	if (!h->n)
		return 0;
	*any = true;
	for (uint16_t i = 0; i < h->nsegs; i++) {
		uint64_t t = h->pkts[h->segs[i].at].ts_ns;

		if (t && t < ts)
			ts = t;
	}
	item = vfgx_gpu_proc_submit_records(gpl->gp, h->pkts_dev, h->n,
					    ts == UINT64_MAX ? 0 : ts);
	if (item < 0) {
		release_held(h);
		return (int)item;
	}
	gpl->fd.items++;
	gpl->fd.packets += h->n;
	done = vfgx_gpu_proc_poll(gpl->gp);
	if (done < 0)
		return (int)done;
	release_upto(gpl, (uint64_t)done);
	gpl->fd.submit_ns += vfgx_now_ns() - t2;
	return 0;
}

static void *gpu_main(void *arg)
{
	vfgx_gpu_pipeline *gpl = arg;
	uint64_t start = vfgx_now_ns(), last_pub = start, last_tick = start;
	/* chunks.timeout_ms runs on the GPU's clock, looked at by a tick
	 * item once a millisecond, as the cpu engine's workers do */
	bool ticks = gpl->chunks && gpl->chunks->conf.timeout_ms;
	uint64_t end = gpl->conf.duration_s > 0 ?
			       start + (uint64_t)(gpl->conf.duration_s * 1e9) :
			       UINT64_MAX;
	uint32_t idle = 0;
	int ret = 0;

	while (!ret && !atomic_load_explicit(&gpl->stop, memory_order_relaxed)) {
		bool any = false, all_done = true;
		uint64_t now;

		ret = feed_once(gpl, &any, &all_done);
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
		if (ticks && now - last_tick >= 1000000) {
			last_tick = now;
			if ((ret = vfgx_gpu_proc_tick(gpl->gp)))
				break;
		}
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
	gpl->end_ns = vfgx_now_ns();
	publish(gpl);
	/* no chunk comes after this (the flush item released the open ones) */
	if (gpl->chunks)
		vfgx_chunkset_finish(gpl->chunks);
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
	if (gpl->held && gpl->recs)
		for (uint64_t i = 0; i < gpl->nb_slots; i++)
			release_held(&gpl->held[i]);
	vfgx_region_destroy(gpl->bounce);
	vfgx_region_destroy(gpl->recs);
	free(gpl->held);
	free(gpl->rx);
	pthread_mutex_destroy(&gpl->lock);
	free(gpl);
}

void vfgx_gpu_pipeline_window(const vfgx_gpu_pipeline *gpl, uint64_t *first_ns,
			      uint64_t *end_ns)
{
	*first_ns = gpl->first_ns;
	*end_ns = gpl->end_ns;
}

uint64_t vfgx_gpu_pipeline_lat_pct(const vfgx_gpu_pipeline *gpl, double pct)
{
	return vfgx_gpu_proc_lat_pct(gpl->gp, pct);
}

void vfgx_gpu_pipeline_feeder(const vfgx_gpu_pipeline *gpl, struct vfgx_gpu_feeder *f)
{
	*f = gpl->fd;
}
