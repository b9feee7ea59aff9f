/* gpu_runner.c - `vfgx run` on the GPU.  Rx lanes gather what the rx
 * queues have into arrays of packet records in pinned memory (up to
 * pipeline.gpu.burst packets, several rx bursts and queues per array); a
 * dispatcher hands each filled array to the GPU processor as one comm-list
 * item, with no copy, and tells the lane when the GPU marked it DONE; the
 * lane then releases the packets to their ports.  With one lane the
 * dispatcher's thread polls the queues itself; with more (one per group of
 * rx queues, pipeline.gpu.rx_threads) each lane is a thread of its own, so
 * the rate is no longer that of one core's rx.  Packets in host memory the
 * GPU cannot read are copied into a pinned bounce area (with a warning
 * saying how to read them in place).  Where the time went before this
 * design: docs/gpu.md. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/gpu.h>

#include "chunkset.h"
#include "gpu_bench.h"
#include "gpu_iface.h"
#include "gpu_runner.h"
#include "rx_memory.h"

#define RUN_BURST 1024   /* packets per item at most */
#define RUN_SEGS 64      /* rx bursts per item at most */
#define BOUNCE_SLOT VFGX_GPU_BOUNCE_SLOT /* bytes per packet in the bounce area */
/* Items in flight under which a partly filled item goes out at once. */
#define RUN_LOW_INFLIGHT 4
/* The dispatcher waits (with the processor's timeout) for the oldest item
 * once nothing has finished for this long while items are out. */
#define STALL_NS 1000000ull

struct rx_entry {
	vfgx_port *port;
	uint16_t q;
	uint16_t space; /* stream space: the entry's index over all queues */
	int readable;   /* -1 unknown, 0 bounce, 1 in place */
};

/* One rx burst inside an array: pkts[at .. at + n) came from rx (NULL once
 * bounced: the port already has its buffers back). */
struct seg {
	struct rx_entry *rx;
	uint16_t at, n;
};

/* One array of records.  pkts: pinned host memory, which the GPU reads in
 * place (VFGX_COMM_PKT_RECORDS): rx_burst writes the records the GPU uses. */
struct held {
	uint16_t n, nsegs;
	struct seg segs[RUN_SEGS];
	struct vfgx_pkt *pkts;
	const struct vfgx_pkt *pkts_dev;
	uint8_t *bounce; /* this array's bounce slots, or NULL */
	uint64_t ts_min; /* oldest rx stamp, 0 if none */
};

/* A lane: some rx queues and a ring of arrays used in order.  Its counters,
 * each written by one side only:
 *   filled    by the lane, release: arrays filled (the next is filled %
 *             nb_arr), read by the dispatcher with acquire before it reads
 *             the array;
 *   finished  by the dispatcher, release: arrays (in fill order) whose
 *             item the GPU finished, read by the lane with acquire before
 *             it releases their packets and reuses them;
 *   released  the lane's own; taken the dispatcher's own (arrays handed
 *             to the GPU).
 * An array is the lane's to fill while filled - released < nb_arr. */
struct lane {
	struct vfgx_gpu_pipeline *gpl;
	struct rx_entry *rx; /* nb_rx entries of the pipeline's table */
	uint32_t nb_rx, rx_first;
	struct held *held;
	uint32_t nb_arr;
	pthread_t thread;
	bool started;
	uint64_t released;
	_Atomic uint64_t rx_ns;
	atomic_int error;
	atomic_bool drained; /* every queue ended and the last pass got nothing */
	_Alignas(64) _Atomic uint64_t filled;
	_Alignas(64) _Atomic uint64_t finished;
	uint64_t taken;
};

struct vfgx_gpu_pipeline {
	vfgx_ctx *ctx;
	struct vfgx_pipeline_config conf;
	struct vfgx_gpu_opts opts;
	vfgx_gpu_proc *gp;
	struct rx_entry *rx; /* grouped by lane */
	uint32_t nb_rx;
	struct lane *lanes;
	uint32_t nb_lanes, lane_next;
	bool threaded;       /* lanes run on threads of their own */
	uint32_t cap;        /* packets an array takes at most (item_cap) */
	struct held *held;   /* every lane's arrays */
	uint32_t nb_arrays;
	/* per comm-list slot: the item a lane's array went out as, and the
	 * lane (graph mode pads batches with empty items of no lane) */
	struct slot_owner {
		uint64_t item;
		struct lane *lane;
	} *owner;
	uint32_t nb_slots;
	uint64_t reaped;     /* items seen finished (dispatcher) */
	uint64_t last_progress;
	vfgx_region *bounce;
	uint8_t *bounce_mem;
	vfgx_region *recs;   /* the arrays of records, pinned */
	struct vfgx_gpu_feeder fd;
	struct vfgx_chunkset *chunks; /* placed by the kernels, or NULL */
	pthread_t thread;
	bool started, stopped;
	atomic_bool stop, done, lanes_stop;
	_Atomic uint32_t in_flight; /* arrays filled and not yet finished */
	_Atomic uint64_t first_ns;  /* first packet received */
	int error;
	uint64_t end_ns;            /* dispatcher ended */
	pthread_mutex_t lock;
	struct vfgx_pipeline_stats snap;
	uint64_t snap_order;
	char desc[448];
};

/* Can every rx queue's buffers be read by the GPU in place (a pool over a
 * pinned or GPU region)?  Backends with their own buffers: unknown, so a
 * bounce area is made. */
static bool all_in_place(vfgx_port *const *ports, uint16_t nb_ports)
{
	for (uint16_t i = 0; i < nb_ports; i++)
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]); q++) {
			vfgx_pool *pool = vfgx_port_rx_pool(ports[i], q);
			enum vfgx_mem_kind kd;

			if (!pool)
				return false;
			kd = vfgx_region_info(vfgx_pool_region(pool))->kind;
			if (kd != VFGX_MEM_PINNED && kd != VFGX_MEM_GPU)
				return false;
		}
	return true;
}

/* rx_threads 0: a lane per rx queue while two CPUs stay for the
 * dispatcher and the rest of the process; one lane runs on the
 * dispatcher's thread. */
static uint32_t lanes_for(uint32_t nb_rx, uint32_t rx_threads)
{
	cpu_set_t set;
	uint32_t cpus = 1, n;

	if (rx_threads)
		return rx_threads < nb_rx ? rx_threads : nb_rx;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		cpus = (uint32_t)CPU_COUNT(&set);
	n = cpus > 3 ? cpus - 2 : 1;
	return n < nb_rx ? n : nb_rx;
}

/* The rx table, grouped by lane (queue i of all goes to lane i %
 * nb_lanes), and each lane's arrays. */
static int make_lanes(vfgx_gpu_pipeline *gpl, vfgx_port *const *ports, uint16_t nb_ports)
{
	uint32_t k = 0, per;

	gpl->rx = calloc(gpl->nb_rx, sizeof(*gpl->rx));
	gpl->lanes = calloc(gpl->nb_lanes, sizeof(*gpl->lanes));
	if (!gpl->rx || !gpl->lanes)
		return -ENOMEM;
	for (uint32_t l = 0; l < gpl->nb_lanes; l++) {
		uint32_t space = 0;

		gpl->lanes[l].rx = gpl->rx + k;
		for (uint16_t i = 0; i < nb_ports; i++)
			for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]); q++, space++)
				if (space % gpl->nb_lanes == l)
					gpl->rx[k++] = (struct rx_entry){ ports[i], q, (uint16_t)space, -1 };
		gpl->lanes[l].nb_rx = (uint32_t)(gpl->rx + k - gpl->lanes[l].rx);
	}
	/* one lane: an array per comm-list slot (an array is free exactly
	 * when its slot is); more: a share each and two to fill ahead */
	per = gpl->nb_lanes == 1 ? gpl->nb_slots : gpl->nb_slots / gpl->nb_lanes + 2;
	gpl->nb_arrays = per * gpl->nb_lanes;
	gpl->held = calloc(gpl->nb_arrays, sizeof(*gpl->held));
	gpl->owner = calloc(gpl->nb_slots, sizeof(*gpl->owner));
	if (!gpl->held || !gpl->owner)
		return -ENOMEM;
	for (uint32_t i = 0; i < gpl->nb_slots; i++)
		gpl->owner[i].item = UINT64_MAX;
	for (uint32_t l = 0; l < gpl->nb_lanes; l++) {
		struct lane *ln = &gpl->lanes[l];

		ln->gpl = gpl;
		ln->nb_arr = per;
		ln->held = gpl->held + (size_t)l * per;
	}
	return 0;
}

/* Pinned memory for the records (and the bounce area): made before the
 * kernels start (compute-sanitizer flags reads of host memory registered
 * after the kernel's launch; registering while a persistent kernel runs is
 * best avoided). */
static int make_arrays(vfgx_gpu_pipeline *gpl, bool bounce)
{
	const struct vfgx_region_info *ri;
	int ret;

	if (bounce) {
		ret = vfgx_region_create(gpl->ctx, VFGX_MEM_PINNED,
					 (size_t)gpl->nb_arrays * gpl->opts.burst * BOUNCE_SLOT,
					 (int)gpl->opts.gpu_id, false, &gpl->bounce);
		if (ret)
			return ret;
		gpl->bounce_mem = vfgx_region_info(gpl->bounce)->addr;
	}
	ret = vfgx_region_create(gpl->ctx, VFGX_MEM_PINNED,
				 (size_t)gpl->nb_arrays * RUN_BURST * sizeof(struct vfgx_pkt),
				 (int)gpl->opts.gpu_id, false, &gpl->recs);
	if (ret)
		return ret;
	ri = vfgx_region_info(gpl->recs);
	for (uint32_t i = 0; i < gpl->nb_arrays; i++) {
		struct held *h = &gpl->held[i];

		h->pkts = (struct vfgx_pkt *)ri->addr + (size_t)i * RUN_BURST;
		h->pkts_dev = (const struct vfgx_pkt *)ri->dev_addr + (size_t)i * RUN_BURST;
		if (gpl->bounce_mem)
			h->bounce = gpl->bounce_mem + (size_t)i * gpl->opts.burst * BOUNCE_SLOT;
	}
	return 0;
}

/* The burst, and with chunks at most a RUN_LOW_INFLIGHT-th of the chunks
 * in flight (all streams' together): an item holding more of one stream's
 * chunks than the consumer has given back slots for waits inside the GPU
 * until a chunk comes back, while the runner, seeing the GPU busy,
 * gathers the next item larger still.  At 640 kpps with chunks of 64
 * packets and 8 in flight, items of 1024 packets kept every chunk 0.8-1.6
 * ms late from some point of a run on; items of 64 none (docs/chunks.md). */
static uint32_t item_cap(const vfgx_gpu_pipeline *gpl)
{
	uint64_t c;

	if (!gpl->chunks)
		return gpl->opts.burst;
	c = (uint64_t)gpl->chunks->conf.packets * gpl->chunks->conf.in_flight *
	    gpl->chunks->conf.streams / RUN_LOW_INFLIGHT;
	return c < gpl->opts.burst ? (c ? (uint32_t)c : 1) : gpl->opts.burst;
}

/* pipeline.max_in_flight_bytes: packets an item keeps while items can go */
#define FIT_MIN_CAP 128

/* Arrays of packets the lanes keep for slots comm-list slots (make_lanes). */
static uint64_t arrays_for(const vfgx_gpu_pipeline *gpl, uint32_t slots)
{
	return gpl->nb_lanes == 1 ? slots : (uint64_t)(slots / gpl->nb_lanes + 2) * gpl->nb_lanes;
}

/* pipeline.max_in_flight_bytes: the packets the runner holds (received,
 * not yet released) are at most its arrays x the packets an array takes,
 * each counted at the largest rx buffer.  Fewer packets an item first,
 * down to FIT_MIN_CAP (items in flight keep the GPU's blocks busy, and an
 * item's fixed cost is spread over that many packets), then fewer items,
 * down to two, then fewer packets again.  A budget below one packet an
 * array is refused, with the numbers that fit.  Before make_lanes: it
 * sizes the arrays from nb_slots. */
static int fit_in_flight(vfgx_gpu_pipeline *gpl, vfgx_port *const *ports, uint16_t nb_ports)
{
	uint64_t budget = gpl->conf.max_in_flight_bytes, buf = 0, pkts;
	bool graph = gpl->opts.mode == VFGX_GPU_GRAPH;

	if (!budget)
		return 0;
	for (uint16_t i = 0; i < nb_ports; i++)
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]); q++) {
			vfgx_pool *pool = vfgx_port_rx_pool(ports[i], q);
			uint64_t b = pool ? vfgx_pool_buf_size(pool) : BOUNCE_SLOT;

			buf = b > buf ? b : buf;
		}
	pkts = budget / buf;
	if (arrays_for(gpl, gpl->nb_slots) * gpl->cap > pkts) {
		uint64_t c = pkts / arrays_for(gpl, gpl->nb_slots);
		uint32_t least = gpl->cap < FIT_MIN_CAP ? gpl->cap : FIT_MIN_CAP;

		gpl->cap = c > least ? (uint32_t)c : least;
	}
	while (gpl->nb_slots > 2 && arrays_for(gpl, gpl->nb_slots) * gpl->cap > pkts)
		gpl->nb_slots = graph ? 2 * (gpl->nb_slots / 4) :
				gpl->nb_slots / 2 > 2 ? gpl->nb_slots / 2 : 2;
	if (arrays_for(gpl, gpl->nb_slots) * gpl->cap > pkts) {
		uint64_t a = arrays_for(gpl, gpl->nb_slots);

		if (pkts < a)
			return vfgx_set_error(gpl->ctx, -EINVAL,
					      "pipeline.max_in_flight_bytes %llu holds less than one %llu-byte packet buffer for each of the gpu engine's %llu arrays of packets (%u comm-list items, %u rx lanes): set it to at least %llu, or lower pipeline.gpu.rx_threads",
					      (unsigned long long)budget, (unsigned long long)buf,
					      (unsigned long long)a, gpl->nb_slots, gpl->nb_lanes,
					      (unsigned long long)(a * buf));
		gpl->cap = (uint32_t)(pkts / a);
	}
	if (graph)
		gpl->opts.graph_items = gpl->nb_slots / 2;
	else
		gpl->opts.items = gpl->nb_slots;
	return 0;
}

int vfgx_gpu_pipeline_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
			     vfgx_port *const *ports, uint16_t nb_ports,
			     struct vfgx_chunkset *chunks, vfgx_gpu_pipeline **out)
{
	struct vfgx_gpu_pipeline *gpl;
	size_t len;
	int ret;

	*out = NULL;
	gpl = calloc(1, sizeof(*gpl));
	if (!gpl)
		return -ENOMEM;
	gpl->ctx = ctx;
	gpl->conf = *conf;
	gpl->chunks = chunks;
	pthread_mutex_init(&gpl->lock, NULL);
	/* pipeline.gpu, typed once at config load (or a program's struct,
	 * argsz-checked by vfgx_pipeline_create) */
	if (conf->gpu)
		gpl->opts = *conf->gpu;
	else
		vfgx_gpu_opts_default(&gpl->opts);
	for (uint16_t i = 0; i < nb_ports; i++)
		gpl->nb_rx += vfgx_port_nb_rx_queues(ports[i]);
	if (!gpl->nb_rx) {
		ret = vfgx_set_error(ctx, -EINVAL, "pipeline: no rx queues to poll");
		goto fail;
	}
	/* one stream space per rx queue, as the CPU runner's per-queue state */
	gpl->opts.queues = gpl->nb_rx;
	if (gpl->opts.burst > RUN_BURST)
		gpl->opts.burst = RUN_BURST;
	gpl->cap = item_cap(gpl);
	gpl->nb_slots = gpl->opts.mode == VFGX_GPU_GRAPH ? 2 * gpl->opts.graph_items :
							   gpl->opts.items;
	gpl->nb_lanes = lanes_for(gpl->nb_rx, gpl->opts.rx_threads);
	gpl->threaded = gpl->nb_lanes > 1;
	if ((ret = fit_in_flight(gpl, ports, nb_ports)) ||
	    (ret = make_lanes(gpl, ports, nb_ports)) ||
	    (ret = make_arrays(gpl, !all_in_place(ports, nb_ports))) ||
	    (ret = vfgx_gpu_proc_create_chunks(ctx, conf, &gpl->opts, chunks, &gpl->gp)))
		goto fail;
	len = (size_t)snprintf(gpl->desc, sizeof(gpl->desc), "%s", vfgx_gpu_proc_describe(gpl->gp));
	if (gpl->threaded && len < sizeof(gpl->desc))
		len += (size_t)snprintf(gpl->desc + len, sizeof(gpl->desc) - len, ", %u rx threads",
					gpl->nb_lanes);
	if (conf->max_in_flight_bytes && len < sizeof(gpl->desc))
		snprintf(gpl->desc + len, sizeof(gpl->desc) - len,
			 ", at most %llu B in flight (%u arrays of at most %u packets)",
			 (unsigned long long)conf->max_in_flight_bytes, gpl->nb_arrays, gpl->cap);
	else if (gpl->cap < gpl->opts.burst && len < sizeof(gpl->desc))
		snprintf(gpl->desc + len, sizeof(gpl->desc) - len,
			 ", items of at most %u packets (pipeline.chunks)", gpl->cap);
	*out = gpl;
	return 0;
fail:
	vfgx_gpu_pipeline_destroy(gpl);
	return ret;
}

const char *vfgx_gpu_pipeline_describe(const vfgx_gpu_pipeline *gpl)
{
	return gpl->desc;
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

/* --- rx lanes -------------------------------------------------------------- */

/* Give the ports the packets of every array whose item is finished. */
static void lane_release(struct lane *ln)
{
	uint64_t fin = atomic_load_explicit(&ln->finished, memory_order_acquire);

	for (; ln->released < fin; ln->released++)
		release_held(&ln->held[ln->released % ln->nb_arr]);
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

/* Copy pkts[at .. at + n) of array h into its bounce slots and give the
 * port its buffers back at once. */
static int bounce(vfgx_gpu_pipeline *gpl, struct held *h, struct seg *sg)
{
	struct rx_entry *rx = sg->rx;
	uint32_t too_big = 0;

	for (uint16_t i = sg->at; i < sg->at + sg->n && !too_big; i++) {
		if (h->pkts[i].len > BOUNCE_SLOT)
			too_big = h->pkts[i].len;
		else
			memcpy(h->bounce + (size_t)i * BOUNCE_SLOT, h->pkts[i].data, h->pkts[i].len);
	}
	vfgx_port_release(rx->port, rx->q, h->pkts + sg->at, sg->n);
	sg->rx = NULL;
	if (too_big)
		return vfgx_set_error(gpl->ctx, -EMSGSIZE, "%s: %u-byte packet in host memory is larger than the GPU bounce slot (%u); use a pinned memory region",
				      vfgx_port_name(rx->port), too_big, BOUNCE_SLOT);
	for (uint16_t i = sg->at; i < sg->at + sg->n; i++)
		h->pkts[i].data = h->bounce + (size_t)i * BOUNCE_SLOT;
	return 0;
}

/* One rx burst of queue rx into array h; 0 packets, n, or -errno.  *full:
 * the queue gave all it was asked (more may be waiting). */
static int rx_into(vfgx_gpu_pipeline *gpl, struct held *h, struct rx_entry *rx,
		   uint32_t want, bool *all_done, bool *full)
{
	struct seg *sg;
	uint64_t zero = 0;
	int n, ret;

	if (want > vfgx_port_rx_batch(rx->port, rx->q))
		want = vfgx_port_rx_batch(rx->port, rx->q);
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
	if (!atomic_load_explicit(&gpl->first_ns, memory_order_relaxed))
		atomic_compare_exchange_strong(&gpl->first_ns, &zero, vfgx_now_ns());
	sg = &h->segs[h->nsegs++];
	*sg = (struct seg){ rx, h->n, (uint16_t)n };
	if (rx->readable == -1 && (ret = check_readable(gpl, rx, &h->pkts[h->n])))
		return ret;
	/* the queue field becomes the stream space of this rx queue (the
	 * ports' release does not read it) */
	for (int i = 0; i < n; i++)
		h->pkts[h->n + i].queue = rx->space;
	h->n = (uint16_t)(h->n + n);
	if (!rx->readable && (ret = bounce(gpl, h, sg)))
		return ret;
	return n;
}

static bool gpu_busy(vfgx_gpu_pipeline *gpl)
{
	return atomic_load_explicit(&gpl->in_flight, memory_order_relaxed) >= RUN_LOW_INFLIGHT;
}

static int disp_reap(vfgx_gpu_pipeline *gpl);

enum { FILL_NONE, FILL_ONE, FILL_NO_ARRAY };

/* Fill the lane's next array from its queues (each queue in turn, a fair
 * share per round; more rounds while some queue gave a full burst, or
 * while the GPU is busy) and publish it to the dispatcher: FILL_ONE,
 * FILL_NONE (nothing arrived), FILL_NO_ARRAY (all in flight) or -errno. */
static int lane_fill(struct lane *ln)
{
	vfgx_gpu_pipeline *gpl = ln->gpl;
	uint64_t f = atomic_load_explicit(&ln->filled, memory_order_relaxed);
	uint32_t cap = gpl->cap, share = cap / ln->nb_rx ? cap / ln->nb_rx : 1;
	bool more = true, all_done = true;
	uint64_t t0, ts = UINT64_MAX;
	struct held *h;

	lane_release(ln);
	if (f - ln->released >= ln->nb_arr)
		return FILL_NO_ARRAY;
	h = &ln->held[f % ln->nb_arr];
	h->n = h->nsegs = 0;
	t0 = vfgx_now_ns();
	while (more && h->n < cap && h->nsegs < RUN_SEGS) {
		more = false;
		for (uint32_t i = 0; i < ln->nb_rx && h->n < cap && h->nsegs < RUN_SEGS; i++) {
			struct rx_entry *rx = &ln->rx[(ln->rx_first + i) % ln->nb_rx];
			uint32_t want = cap - h->n < share ? cap - h->n : share;
			bool full = false;
			int n = rx_into(gpl, h, rx, want, &all_done, &full);

			if (n < 0) {
				release_held(h);
				return n;
			}
			more |= full;
		}
		/* No queue backlogged: hand over what there is at once while
		 * the GPU has little in flight (low latency at low load);
		 * while it is busy, keep gathering until the array is full or
		 * it catches up (fewer, larger items: the GPU's cost is per
		 * item, and many small items would queue up behind it). */
		if (!more && h->n && h->n < cap && h->nsegs < RUN_SEGS &&
		    gpl->opts.mode != VFGX_GPU_GRAPH && /* a graph batch waits for items */
		    gpu_busy(gpl)) {
			if (!gpl->threaded) {
				int ret = disp_reap(gpl);

				if (ret) {
					release_held(h);
					return ret;
				}
			}
			more = gpu_busy(gpl) && !atomic_load_explicit(&gpl->stop, memory_order_relaxed) &&
			       !atomic_load_explicit(&gpl->lanes_stop, memory_order_relaxed);
		}
	}
	ln->rx_first = (ln->rx_first + 1) % ln->nb_rx;
	atomic_fetch_add_explicit(&ln->rx_ns, vfgx_now_ns() - t0, memory_order_relaxed);
	if (!h->n) {
		if (all_done)
			atomic_store_explicit(&ln->drained, true, memory_order_release);
		return FILL_NONE;
	}
	for (uint16_t i = 0; i < h->nsegs; i++) {
		uint64_t t = h->pkts[h->segs[i].at].ts_ns;

		if (t && t < ts)
			ts = t;
	}
	h->ts_min = ts == UINT64_MAX ? 0 : ts;
	atomic_fetch_add_explicit(&gpl->in_flight, 1, memory_order_relaxed);
	atomic_store_explicit(&ln->filled, f + 1, memory_order_release);
	return FILL_ONE;
}

static void *lane_main(void *arg)
{
	struct lane *ln = arg;
	vfgx_gpu_pipeline *gpl = ln->gpl;
	uint32_t idle = 0;

	while (!atomic_load_explicit(&gpl->lanes_stop, memory_order_acquire)) {
		int r = lane_fill(ln);

		if (r < 0) {
			atomic_store_explicit(&ln->error, r, memory_order_release);
			break;
		}
		if (r == FILL_ONE)
			idle = 0;
		else if (++idle > 64) {
			sched_yield();
			idle = 0;
		}
	}
	return NULL;
}

/* --- dispatcher ------------------------------------------------------------ */

/* Items the GPU finished: tell their lanes (in item order, which is each
 * lane's fill order). */
static int disp_reap(vfgx_gpu_pipeline *gpl)
{
	int64_t done = vfgx_gpu_proc_poll(gpl->gp);

	if (done < 0)
		return (int)done;
	if (gpl->reaped < (uint64_t)done)
		gpl->last_progress = vfgx_now_ns();
	for (; gpl->reaped < (uint64_t)done; gpl->reaped++) {
		const struct slot_owner *o = &gpl->owner[gpl->reaped % gpl->nb_slots];
		uint64_t fin;

		if (o->item != gpl->reaped)
			continue; /* a graph batch's padding */
		fin = atomic_load_explicit(&o->lane->finished, memory_order_relaxed);
		atomic_fetch_sub_explicit(&gpl->in_flight, 1, memory_order_relaxed);
		atomic_store_explicit(&o->lane->finished, fin + 1, memory_order_release);
	}
	if (!gpl->threaded)
		lane_release(&gpl->lanes[0]);
	return 0;
}

/* Wait (with the processor's timeout and health checks) for the oldest
 * item out, then reap. */
static int disp_wait_oldest(vfgx_gpu_pipeline *gpl)
{
	int ret = vfgx_gpu_proc_wait(gpl->gp, gpl->reaped);

	return ret ? ret : disp_reap(gpl);
}

/* Hand the arrays filled so far to the GPU, lanes in turn, each lane's up
 * to what it had filled when its turn came (lanes fill as fast as this
 * submits: looping until none is left would never return to the
 * dispatcher's clock); *any when some went. */
static int disp_submit(vfgx_gpu_pipeline *gpl, bool *any)
{
	for (uint32_t i = 0; i < gpl->nb_lanes; i++) {
		uint32_t l = (gpl->lane_next + i) % gpl->nb_lanes;
		struct lane *ln = &gpl->lanes[l];
		uint64_t upto = atomic_load_explicit(&ln->filled, memory_order_acquire);

		while (ln->taken < upto) {
			uint64_t t0 = vfgx_now_ns(), t1;
			struct held *h;
			int64_t item;
			int ret;

			while (vfgx_gpu_proc_next(gpl->gp) - gpl->reaped >= gpl->nb_slots)
				if ((ret = disp_wait_oldest(gpl)))
					return ret;
			t1 = vfgx_now_ns();
			gpl->fd.room_ns += t1 - t0;
			h = &ln->held[ln->taken % ln->nb_arr];
			item = vfgx_gpu_proc_submit_records(gpl->gp, h->pkts_dev, h->n, h->ts_min);
			if (item < 0)
				return (int)item;
			gpl->owner[(uint64_t)item % gpl->nb_slots] =
				(struct slot_owner){ (uint64_t)item, ln };
			ln->taken++;
			gpl->fd.items++;
			gpl->fd.packets += h->n;
			if ((ret = disp_reap(gpl)))
				return ret;
			gpl->fd.submit_ns += vfgx_now_ns() - t1;
			*any = true;
		}
	}
	gpl->lane_next = (gpl->lane_next + 1) % gpl->nb_lanes;
	return 0;
}

static bool lanes_drained(vfgx_gpu_pipeline *gpl)
{
	for (uint32_t l = 0; l < gpl->nb_lanes; l++) {
		struct lane *ln = &gpl->lanes[l];

		if (!atomic_load_explicit(&ln->drained, memory_order_acquire) ||
		    ln->taken != atomic_load_explicit(&ln->filled, memory_order_acquire))
			return false;
	}
	return true;
}

static int lanes_error(vfgx_gpu_pipeline *gpl)
{
	for (uint32_t l = 0; l < gpl->nb_lanes; l++) {
		int e = atomic_load_explicit(&gpl->lanes[l].error, memory_order_acquire);

		if (e)
			return e;
	}
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

/* One turn of the dispatcher: reap, fill (one lane: here), submit. */
static int disp_once(vfgx_gpu_pipeline *gpl, bool *any)
{
	int ret, r = FILL_NONE;

	if ((ret = disp_reap(gpl)))
		return ret;
	if (!gpl->threaded) {
		r = lane_fill(&gpl->lanes[0]);
		if (r < 0)
			return r;
	} else if ((ret = lanes_error(gpl))) {
		return ret;
	}
	if ((ret = disp_submit(gpl, any)))
		return ret;
	if (*any || vfgx_gpu_proc_next(gpl->gp) == gpl->reaped)
		gpl->last_progress = vfgx_now_ns();
	else if (r == FILL_NO_ARRAY || vfgx_now_ns() - gpl->last_progress > STALL_NS)
		return disp_wait_oldest(gpl);
	return 0;
}

/* The lanes stopped: what they filled goes to the GPU too (a packet
 * counted as received is processed), then the flush. */
static int disp_finish(vfgx_gpu_pipeline *gpl)
{
	bool any = false;
	int ret;

	atomic_store_explicit(&gpl->lanes_stop, true, memory_order_release);
	for (uint32_t l = 0; l < gpl->nb_lanes; l++)
		if (gpl->lanes[l].started) {
			pthread_join(gpl->lanes[l].thread, NULL);
			gpl->lanes[l].started = false;
		}
	if ((ret = lanes_error(gpl)) || (ret = disp_submit(gpl, &any)) ||
	    (ret = vfgx_gpu_proc_flush(gpl->gp)) || (ret = disp_reap(gpl)))
		return ret;
	for (uint32_t l = 0; l < gpl->nb_lanes; l++)
		lane_release(&gpl->lanes[l]);
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
	int ret = 0, fin;

	gpl->last_progress = start;
	while (!ret && !atomic_load_explicit(&gpl->stop, memory_order_relaxed)) {
		bool any = false;
		uint64_t now;

		ret = disp_once(gpl, &any);
		if (ret || lanes_drained(gpl))
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
	fin = disp_finish(gpl);
	if (!ret)
		ret = fin;
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
	int ret = 0;

	for (uint32_t l = 0; gpl->threaded && l < gpl->nb_lanes && !ret; l++) {
		ret = pthread_create(&gpl->lanes[l].thread, NULL, lane_main, &gpl->lanes[l]);
		gpl->lanes[l].started = !ret;
	}
	if (!ret)
		ret = pthread_create(&gpl->thread, NULL, gpu_main, gpl);
	if (ret) {
		atomic_store(&gpl->lanes_stop, true);
		for (uint32_t l = 0; l < gpl->nb_lanes; l++)
			if (gpl->lanes[l].started) {
				pthread_join(gpl->lanes[l].thread, NULL);
				gpl->lanes[l].started = false;
			}
		return vfgx_set_error(gpl->ctx, -ret, "pipeline: cannot start the GPU runner's threads: %s",
				      strerror(ret));
	}
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
	gpu_proc_quit(gpl->gp);
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
		for (uint32_t i = 0; i < gpl->nb_arrays; i++)
			release_held(&gpl->held[i]);
	vfgx_region_destroy(gpl->bounce);
	vfgx_region_destroy(gpl->recs);
	free(gpl->held);
	free(gpl->owner);
	free(gpl->lanes);
	free(gpl->rx);
	pthread_mutex_destroy(&gpl->lock);
	free(gpl);
}

void vfgx_gpu_pipeline_window(const vfgx_gpu_pipeline *gpl, uint64_t *first_ns,
			      uint64_t *end_ns)
{
	*first_ns = atomic_load(&gpl->first_ns);
	*end_ns = gpl->end_ns;
}

uint64_t vfgx_gpu_pipeline_lat_pct(const vfgx_gpu_pipeline *gpl, double pct)
{
	return vfgx_gpu_proc_lat_pct(gpl->gp, pct);
}

int vfgx_gpu_pipeline_item_stamps(const vfgx_gpu_pipeline *gpl, char *buf, size_t len)
{
	return vfgx_gpu_proc_item_stamps(gpl->gp, buf, len);
}

void vfgx_gpu_pipeline_feeder(const vfgx_gpu_pipeline *gpl, struct vfgx_gpu_feeder *f)
{
	*f = gpl->fd;
	f->rx_ns = 0;
	for (uint32_t l = 0; l < gpl->nb_lanes; l++)
		f->rx_ns += atomic_load(&gpl->lanes[l].rx_ns);
	f->rx_threads = gpl->threaded ? gpl->nb_lanes : 0;
}
