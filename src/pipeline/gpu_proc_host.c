/* gpu_proc_host.c - the GPU processor's C side: the
 * producer loop over the communication list (submit, reap, timeouts), and
 * counters converted to vfgx_pipeline_stats.  Kernels: gpu_proc.cu. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/gpu.h>
#include <vfgx/place.h>
#include <vfgx/stages.h>

#include "chunkset.h"
#include "commlist_host.h"
#include "gpu_bench.h"
#include "gpu_iface.h"
#include "gpu_opts.h"
#include "gpu_runner.h"

_Static_assert(GPUK_POLL_DEPTH == VFGX_GPU_POLL_DEPTH && GPUK_POLL_GAP_NS == VFGX_GPU_POLL_GAP_NS,
	       "vfgx/bench.h's VFGX_GPU_POLL_* describe gpu_iface.h's GPUK_POLL_*");

_Static_assert(sizeof(struct gpuk_delivery) == sizeof(struct vfgx_gpu_delivery),
	       "delivery layout");
_Static_assert(VFGX_DROP_MAX == 23, "GPU counters hold 23 drop reasons");
/* VFGX_COMM_PKT_RECORDS: the kernels read struct vfgx_pkt in place */
_Static_assert(sizeof(struct vfgx_pkt) == 40 && offsetof(struct vfgx_pkt, data) == 0 &&
	       offsetof(struct vfgx_pkt, len) == 8 && offsetof(struct vfgx_pkt, queue) == 32 &&
	       offsetof(struct vfgx_pkt, flags) == 34, "struct vfgx_pkt layout");

/* cudaStreamQuery() (the fault check, a driver call) at most this often
 * while waiting.  (It was suspected of the persistent mode's old ~1 ms per
 * item; the cause was the kernel's reads of the host quit flag, see
 * bench/results/gpu.md.) */
#define HEALTH_NS 20000000ull

/* -Dgpu_item_stamps: the last STAMP_RING items with packets kept */
#define STAMP_RING (1u << 18)

/* One item's stamps: CPU clock (vfgx_now_ns()) rx (its oldest packet's
 * stamp), READY stored, DONE reaped; GPU %globaltimer READY seen, end of
 * phase A, end of phase B (and C), just before DONE. */
struct item_stamp {
	uint64_t rx, ready, reap, g_seen, g_a, g_b, g_done;
	uint32_t npk, in_flight;
};

/* fine latency histogram: 64 buckets per power of two */
#define LAT_SUB 64
#define LAT_FINE (LAT_SUB * 36)

int vfgx_gpu_probe(vfgx_ctx *ctx, uint32_t gpu_id, char *desc, size_t len)
{
	char err[256];
	int ret = gpuk_probe(gpu_id, desc, len, err, sizeof(err));

	return ret ? vfgx_set_error(ctx, ret, "%s", err) : 0;
}

struct vfgx_gpu_proc {
	vfgx_ctx *ctx;
	struct gpuk *g;
	bool quit; /* gpu_proc_quit done: the kernel was told to end */
	struct vfgx_comm_list *l;
	struct vfgx_gpu_opts o;
	uint32_t nb_items;
	uint64_t next;      /* next item number */
	uint64_t done;      /* items < done are finished and freed */
	uint32_t graph_fill;
	uint64_t *ts_min;   /* per slot: oldest packet timestamp */
	uint32_t *npk;      /* per slot: packets */
	uint64_t *ready_ns; /* per slot: vfgx_now_ns() just before READY */
	uint32_t *in_flight; /* per slot: items in flight when it was handed over */
	/* -Dgpu_done_counters: what reaped items handed back with DONE */
	uint64_t done_acc[GPUK_NCNT];
	struct item_stamp *st; /* -Dgpu_item_stamps: STAMP_RING */
	uint64_t nb_st;        /* items stamped (the ring holds the last) */
	uint64_t lat_hist[VFGX_LAT_BUCKETS];
	uint64_t lat_fine[LAT_FINE];
	uint64_t cnt[GPUK_NCNT];
	uint64_t last_health;
	struct vfgx_chunkset *chunks; /* placed by the kernels, or NULL */
	int error;
	char desc[384];
};

static int gp_fail(vfgx_gpu_proc *gp, int ret, const char *what, const char *err)
{
	if (!gp->error) {
		gp->error = ret;
		vfgx_set_error(gp->ctx, ret, "GPU %s: %s: %s; run stopped, counters so far kept",
			       gpuk_device_name(gp->g), what, err);
	}
	return gp->error;
}

int vfgx_gpu_proc_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
			 const struct vfgx_gpu_opts *user_opts, vfgx_gpu_proc **out)
{
	return vfgx_gpu_proc_create_chunks(ctx, conf, user_opts, NULL, out);
}

int vfgx_gpu_proc_create_chunks(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
				const struct vfgx_gpu_opts *user_opts,
				struct vfgx_chunkset *chunks, vfgx_gpu_proc **out)
{
	struct vfgx_gpu_opts o, *opts = &o;
	struct gpuk_conf c = { 0 };
	vfgx_gpu_proc *gp;
	char err[256];
	int ret;

	*out = NULL;
	if ((ret = vfgx_gpu_opts_check(ctx, user_opts, &o)))
		return ret;
	if (conf->reorder && (conf->reorder_window < 2 ||
			      (conf->reorder_window & (conf->reorder_window - 1))))
		return vfgx_set_error(ctx, -EINVAL,
				      "pipeline: reorder window must be a power of two >= 2");
	gp = calloc(1, sizeof(*gp));
	if (!gp)
		return -ENOMEM;
	gp->ctx = ctx;
	gp->o = *opts;
	gp->chunks = chunks;
	if (!gp->o.queues)
		gp->o.queues = 1;
	c.o = gp->o;
	c.reorder = conf->reorder;
	c.window = conf->reorder_window;
	c.slot = conf->reorder_slot;
	c.max_streams = conf->max_streams ? conf->max_streams : 1;
	c.verify = conf->verify_payload;
	if (!vfgx_format_is_vfgx(conf->format)) {
		if (!conf->reorder && !chunks) {
			free(gp);
			return vfgx_set_error(ctx, -ENOTSUP,
					      "pipeline.format %s: the gpu engine reads formats with reorder or chunks; delivery without either is the cpu engine's: use pipeline.device: cpu",
					      conf->format->name);
		}
		c.fmt_on = 1;
		c.fmt = *conf->format;
		vfgx_format_index(&c.fmt); /* the kernels look ids up by it */
		if (conf->place) { /* linked into the kernel (gpu_place_link.c) */
			c.place_module = conf->place->gpu_module;
			c.place_symbol = conf->place->symbol;
		}
		c.verify = 0; /* the pattern is vfgx's generator's */
	}
	c.nb_ranges = conf->nb_port_ranges;
	if (getenv("VFGX_GPU_TEST_WEDGE") && opts->mode == VFGX_GPU_PERSISTENT) {
		c.test_wedge = strtoull(getenv("VFGX_GPU_TEST_WEDGE"), NULL, 10) + 1;
		vfgx_warn(ctx, "GPU: VFGX_GPU_TEST_WEDGE: the kernel will stop answering at item %llu (a test)",
			  (unsigned long long)(c.test_wedge - 1));
	}
	if (chunks && (ret = vfgx_chunkset_gpu_attach(chunks, &c.ch))) {
		free(gp);
		return ret;
	}
	for (uint16_t i = 0; i < conf->nb_port_ranges && i < GPUK_MAX_RANGES; i++) {
		c.lo[i] = conf->port_ranges[i].lo;
		c.hi[i] = conf->port_ranges[i].hi;
	}
	ret = gpuk_create(&c, &gp->g, &gp->l, err, sizeof(err));
	if (ret) {
		free(gp);
		return vfgx_set_error(ctx, ret, "GPU %u: %s", opts->gpu_id, err);
	}
	gp->nb_items = gp->l->nb_items;
	gp->ts_min = calloc(gp->nb_items, sizeof(*gp->ts_min));
	gp->npk = calloc(gp->nb_items, sizeof(*gp->npk));
	gp->ready_ns = calloc(gp->nb_items, sizeof(*gp->ready_ns));
	gp->in_flight = calloc(gp->nb_items, sizeof(*gp->in_flight));
	if (gp->l->features & VFGX_COMM_F_STAMPS)
		gp->st = calloc(STAMP_RING, sizeof(*gp->st));
	if (!gp->ts_min || !gp->npk || !gp->ready_ns || !gp->in_flight ||
	    ((gp->l->features & VFGX_COMM_F_STAMPS) && !gp->st)) {
		vfgx_gpu_proc_destroy(gp);
		return -ENOMEM;
	}
	ret = gpuk_start(gp->g, err, sizeof(err));
	if (ret) {
		vfgx_set_error(ctx, ret, "GPU %s: %s", gpuk_device_name(gp->g), err);
		vfgx_gpu_proc_destroy(gp);
		return ret;
	}
	snprintf(gp->desc, sizeof(gp->desc),
		 "%s, mode %s, %u items x %u packets, status words in pinned host memory (no GDRCopy)%s%s%s%s%s",
		 gpuk_device_name(gp->g), vfgx_gpu_mode_name(opts->mode),
		 gp->nb_items, opts->burst, opts->stage_copy ? ", stage_copy" : "",
		 gp->l->features & VFGX_COMM_F_STAMPS ? ", item stamps" : "",
		 gp->l->features & VFGX_COMM_F_DONE_COUNTERS ? ", counters with DONE" : "",
		 gp->l->features & VFGX_COMM_F_INLINE ? ", header in the status line" : "",
		 gp->l->features & VFGX_COMM_F_LOCAL_B ? ", phase B on owner blocks" : "");
	*out = gp;
	return 0;
}

const char *vfgx_gpu_proc_describe(const vfgx_gpu_proc *gp)
{
	return gp->desc;
}

static unsigned lat_bucket(uint64_t ns)
{
	unsigned b = ns ? 63u - (unsigned)__builtin_clzll(ns) : 0;

	return b < VFGX_LAT_BUCKETS ? b : VFGX_LAT_BUCKETS - 1;
}

static unsigned fine_bucket(uint64_t ns)
{
	unsigned e, b;

	if (ns < LAT_SUB)
		return (unsigned)ns;
	e = 63u - (unsigned)__builtin_clzll(ns); /* >= 6 */
	b = (e - 5) * LAT_SUB + (unsigned)((ns >> (e - 6)) & (LAT_SUB - 1));
	return b < LAT_FINE ? b : LAT_FINE - 1;
}

static uint64_t fine_upper(unsigned b)
{
	unsigned e;

	if (b < LAT_SUB)
		return b + 1;
	e = b / LAT_SUB + 5;
	return (uint64_t)(LAT_SUB + b % LAT_SUB + 1) << (e - 6);
}

uint64_t vfgx_gpu_proc_lat_pct(const vfgx_gpu_proc *gp, double pct)
{
	uint64_t tot = 0, acc = 0;

	for (unsigned b = 0; b < LAT_FINE; b++)
		tot += gp->lat_fine[b];
	if (!tot)
		return 0;
	for (unsigned b = 0; b < LAT_FINE; b++) {
		acc += gp->lat_fine[b];
		if ((double)acc >= pct / 100.0 * (double)tot)
			return fine_upper(b);
	}
	return fine_upper(LAT_FINE - 1);
}

/* -Dgpu_item_stamps: the reaped item in slot into the ring. */
static void stamp_item(vfgx_gpu_proc *gp, uint32_t slot)
{
	struct item_stamp *t = &gp->st[gp->nb_st++ % STAMP_RING];

	t->rx = gp->ts_min[slot];
	t->ready = gp->ready_ns[slot];
	t->reap = vfgx_now_ns();
	t->g_seen = gp->l->seen_ns[4 * (size_t)slot];
	t->g_a = gp->l->stamps[4 * (size_t)slot];
	t->g_b = gp->l->stamps[4 * (size_t)slot + 1];
	t->g_done = gp->l->stamps[4 * (size_t)slot + 2];
	t->npk = gp->npk[slot];
	t->in_flight = gp->in_flight[slot];
}

/* Reap finished items in order without waiting. */
static int reap(vfgx_gpu_proc *gp)
{
	int got = 0;

	while (gp->done < gp->next) {
		uint32_t slot = (uint32_t)(gp->done % gp->nb_items);
		uint32_t st = vfgx_comm_load(gp->l, slot);

		if (st != VFGX_COMM_DONE && st != VFGX_COMM_ERROR)
			break;
		if (gp->npk[slot] && gp->ts_min[slot]) {
			uint64_t now = vfgx_now_ns();

			if (now >= gp->ts_min[slot]) {
				gp->lat_hist[lat_bucket(now - gp->ts_min[slot])] += gp->npk[slot];
				gp->lat_fine[fine_bucket(now - gp->ts_min[slot])] += gp->npk[slot];
			}
		}
		/* read after the acquire of DONE (commlist.h): the GPU wrote
		 * them before it */
		if (st == VFGX_COMM_DONE && (gp->l->features & VFGX_COMM_F_DONE_COUNTERS))
			for (int i = 0; i < GPUK_NCNT; i++)
				gp->done_acc[i] += gp->l->done_cnt[(size_t)slot * VFGX_COMM_DONE_CNT + i];
		if (st == VFGX_COMM_DONE && gp->st && gp->npk[slot])
			stamp_item(gp, slot);
		vfgx_comm_free(gp->l, slot);
		gp->done++;
		got++;
	}
	return got;
}

static int health(vfgx_gpu_proc *gp)
{
	char err[256];
	int ret = gpuk_health(gp->g, err, sizeof(err));

	return ret ? gp_fail(gp, ret, "kernel", err) : 0;
}

static int launch(vfgx_gpu_proc *gp, uint32_t slot)
{
	char err[256];
	int ret = gpuk_launch(gp->g, slot, err, sizeof(err));

	return ret ? gp_fail(gp, ret, "launch", err) : 0;
}

/* Wait until item (already launched) is finished and reaped. */
static int wait_nokick(vfgx_gpu_proc *gp, uint64_t item)
{
	uint64_t t0 = vfgx_now_ns(), spins = 0;
	int ret;

	while (gp->done <= item) {
		if (reap(gp))
			continue;
		if ((++spins & 1023) == 0) {
			uint64_t now = vfgx_now_ns(), el = now - t0;
			char err[200];

			if (now - gp->last_health > HEALTH_NS) {
				gp->last_health = now;
				if ((ret = health(gp)))
					return ret;
			}
			/* a kernel waiting for the chunk consumer is not stuck */
			if (el > (uint64_t)gp->o.timeout_ms * 1000000ull && gp->chunks &&
			    vfgx_chunkset_gpu_waiting(gp->chunks)) {
				t0 = now;
				el = 0;
			}
			if (el > (uint64_t)gp->o.timeout_ms * 1000000ull) {
				snprintf(err, sizeof(err),
					 "item %" PRIu64 " not finished after %u ms (pipeline.gpu.timeout_ms)",
					 item, gp->o.timeout_ms);
				return gp_fail(gp, -ETIMEDOUT, "timeout", err);
			}
			if (el > 1000000)
				sched_yield();
		}
	}
	return 0;
}

int vfgx_gpu_proc_kick(vfgx_gpu_proc *gp)
{
	int ret;

	if (gp->error)
		return gp->error;
	if (gp->o.mode != VFGX_GPU_GRAPH || gp->graph_fill == 0)
		return 0;
	/* pad the half with empty items: the graph always runs all of them */
	while (gp->graph_fill) {
		uint32_t slot = (uint32_t)(gp->next % gp->nb_items);

		/* the slot's previous item ran in an earlier launch of this half */
		if (gp->next - gp->done >= gp->nb_items &&
		    (ret = wait_nokick(gp, gp->next - gp->nb_items)))
			return ret;
		gp->npk[slot] = 0;
		gp->ts_min[slot] = 0;
		gp->l->items[slot].pkts = gp->l->pkts_dev + (size_t)slot * gp->l->burst;
		vfgx_comm_publish(gp->l, slot, gp->next++, 0, VFGX_COMM_CMD_BURST);
		if (++gp->graph_fill == gp->o.graph_items) {
			gp->graph_fill = 0;
			return launch(gp, slot);
		}
	}
	return 0;
}

/* Wait until item is finished; launches its graph batch if still open. */
static int wait_item(vfgx_gpu_proc *gp, uint64_t item)
{
	int ret;

	if (item >= gp->next)
		return -EINVAL;
	if (gp->graph_fill && item >= gp->next - gp->graph_fill &&
	    (ret = vfgx_gpu_proc_kick(gp)))
		return ret;
	return wait_nokick(gp, item);
}

uint64_t vfgx_gpu_proc_next(const vfgx_gpu_proc *gp)
{
	return gp->next;
}

int vfgx_gpu_proc_wait(vfgx_gpu_proc *gp, uint64_t item)
{
	return gp->error ? gp->error : wait_item(gp, item);
}

static int64_t publish_item(vfgx_gpu_proc *gp, uint32_t slot, uint32_t n, uint32_t cmd,
			    const void *pkts);

/* Room for one more item of n packets (waits for the oldest); its slot. */
static int take_slot(vfgx_gpu_proc *gp, uint32_t n, uint32_t *slot)
{
	int ret;

	if (gp->error)
		return gp->error;
	if (n > gp->o.burst)
		return vfgx_set_error(gp->ctx, -EINVAL, "GPU: burst of %u packets, pipeline.gpu.burst is %u",
				      n, gp->o.burst);
	while (gp->next - gp->done >= gp->nb_items)
		if ((ret = wait_item(gp, gp->next - gp->nb_items)))
			return ret;
	*slot = (uint32_t)(gp->next % gp->nb_items);
	return 0;
}

int64_t vfgx_gpu_proc_submit_records(vfgx_gpu_proc *gp, const struct vfgx_pkt *pkts_dev,
				     uint32_t n, uint64_t ts_min)
{
	uint32_t slot;
	int ret = take_slot(gp, n, &slot);

	if (ret)
		return ret;
	gp->ts_min[slot] = ts_min;
	return publish_item(gp, slot, n, VFGX_COMM_CMD_BURST | VFGX_COMM_PKT_RECORDS, pkts_dev);
}

static int64_t submit_item(vfgx_gpu_proc *gp, const struct vfgx_pkt *pkts,
			   uint32_t n, uint32_t cmd)
{
	uint32_t slot;
	struct vfgx_comm_pkt *d;
	uint64_t ts = UINT64_MAX;
	int ret = take_slot(gp, n, &slot);

	if (ret)
		return ret;
	d = vfgx_comm_pkts(gp->l, slot);
	for (uint32_t i = 0; i < n; i++) {
		if (pkts[i].queue >= gp->o.queues)
			return vfgx_set_error(gp->ctx, -EINVAL, "GPU: packet of stream space %u, only %u configured",
					      pkts[i].queue, gp->o.queues);
		d[i].addr = (uint64_t)(uintptr_t)pkts[i].data;
		d[i].len = pkts[i].len;
		d[i].queue = pkts[i].queue;
		d[i].flags = pkts[i].flags;
		d[i].ts_ns = pkts[i].ts_ns;
		if (pkts[i].ts_ns && pkts[i].ts_ns < ts)
			ts = pkts[i].ts_ns;
	}
	gp->ts_min[slot] = ts == UINT64_MAX ? 0 : ts;
	return publish_item(gp, slot, n, cmd, gp->l->pkts_dev + (size_t)slot * gp->l->burst);
}

/* Publish the item in slot (its packets described at pkts, a device
 * address) and launch it in per_burst and graph mode. */
static int64_t publish_item(vfgx_gpu_proc *gp, uint32_t slot, uint32_t n, uint32_t cmd,
			    const void *pkts)
{
	int ret;

	/* the status line carries the pointer in 48 bits (commlist.h);
	 * user-space addresses on x86-64 and arm64 fit */
	if ((gp->l->features & VFGX_COMM_F_INLINE) &&
	    ((uint64_t)(uintptr_t)pkts & ~VFGX_COMM_PTR_MASK))
		return vfgx_set_error(gp->ctx, -EINVAL,
				      "GPU: descriptors at %p, above the 48 bits the status line carries (a build with -Dgpu_item_inline); rebuild without it",
				      pkts);
	gp->npk[slot] = n;
	gp->in_flight[slot] = (uint32_t)(gp->next - gp->done);
	gp->ready_ns[slot] = vfgx_now_ns();
	gp->l->items[slot].pkts = (struct vfgx_comm_pkt *)(uintptr_t)pkts;
	vfgx_comm_publish(gp->l, slot, gp->next, n, cmd);
	if (gp->o.mode == VFGX_GPU_PER_BURST) {
		if ((ret = launch(gp, slot)))
			return ret;
	} else if (gp->o.mode == VFGX_GPU_GRAPH) {
		if (++gp->graph_fill == gp->o.graph_items) {
			gp->graph_fill = 0;
			if ((ret = launch(gp, slot)))
				return ret;
		}
	}
	return (int64_t)gp->next++;
}

int64_t vfgx_gpu_proc_submit(vfgx_gpu_proc *gp, const struct vfgx_pkt *pkts,
			     uint32_t n)
{
	return submit_item(gp, pkts, n, VFGX_COMM_CMD_BURST);
}

int64_t vfgx_gpu_proc_poll(vfgx_gpu_proc *gp)
{
	if (gp->error)
		return gp->error;
	if (!reap(gp) && gp->done < gp->next) {
		uint64_t now = vfgx_now_ns();

		if (now - gp->last_health > HEALTH_NS) {
			gp->last_health = now;
			if (health(gp))
				return gp->error;
		}
	}
	return (int64_t)gp->done;
}

int vfgx_gpu_proc_sync(vfgx_gpu_proc *gp)
{
	if (gp->error)
		return gp->error;
	return gp->next ? wait_item(gp, gp->next - 1) : 0;
}

int vfgx_gpu_proc_flush(vfgx_gpu_proc *gp)
{
	int64_t r = submit_item(gp, NULL, 0, VFGX_COMM_CMD_FLUSH);

	return r < 0 ? (int)r : vfgx_gpu_proc_sync(gp);
}

int vfgx_gpu_proc_tick(vfgx_gpu_proc *gp)
{
	int64_t r = submit_item(gp, NULL, 0, VFGX_COMM_CMD_TICK);

	return r < 0 ? (int)r : 0;
}

int vfgx_gpu_proc_reset(vfgx_gpu_proc *gp)
{
	int64_t r = submit_item(gp, NULL, 0, VFGX_COMM_CMD_RESET);

	return r < 0 ? (int)r : 0;
}

int vfgx_gpu_proc_stats(vfgx_gpu_proc *gp, struct vfgx_pipeline_stats *st,
			uint64_t *order_errors)
{
	char err[256];
	int ret = 0;

	if (!gp->error) {
		ret = gpuk_read_counters(gp->g, gp->cnt, err, sizeof(err));
		if (ret)
			gp_fail(gp, ret, "counters", err);
	}
	/* -Dgpu_done_counters: the reaped items' counters came with DONE;
	 * the GPU-memory ones hold what a block that quit had counted */
	uint64_t c[GPUK_NCNT];

	for (int i = 0; i < GPUK_NCNT; i++)
		c[i] = gp->cnt[i] + gp->done_acc[i];
	memset(st, 0, sizeof(*st));
	st->packets = c[GPUK_C_PACKETS];
	st->bytes = c[GPUK_C_BYTES];
	st->passed = c[GPUK_C_PASSED];
	st->delivered = c[GPUK_C_DELIVERED];
	st->delivered_bytes = c[GPUK_C_DELIVERED_BYTES];
	st->gaps = c[GPUK_C_GAPS];
	st->verify_errors = c[GPUK_C_VERIFY];
	st->last_seen = c[GPUK_C_LAST_SEEN];
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		st->drops[i] = c[GPUK_C_DROP0 + i];
	memcpy(st->lat_hist, gp->lat_hist, sizeof(st->lat_hist));
	if (order_errors)
		*order_errors = c[GPUK_C_ORDER];
	return ret;
}

int vfgx_gpu_proc_flow_sums(vfgx_gpu_proc *gp, uint64_t *sums, uint32_t n)
{
	char err[256];
	int ret = gp->error ? gp->error : gpuk_read_flow_sums(gp->g, sums, n, err, sizeof(err));

	return ret && !gp->error ? gp_fail(gp, ret, "flow sums", err) : ret;
}

static int cmp_delivery(const void *a, const void *b)
{
	const struct vfgx_gpu_delivery *x = a, *y = b;

	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

int64_t vfgx_gpu_proc_log(vfgx_gpu_proc *gp, struct vfgx_gpu_delivery *recs,
			  uint64_t max)
{
	char err[256];
	int64_t n;

	if (gp->error)
		return gp->error;
	n = gpuk_read_log(gp->g, (struct gpuk_delivery *)recs, max, err, sizeof(err));
	if (n == -ENOSPC)
		return vfgx_set_error(gp->ctx, -ENOSPC, "GPU delivery log overflowed (raise pipeline.gpu.log_records)");
	if (n < 0)
		return gp_fail(gp, (int)n, "delivery log", err);
	qsort(recs, (size_t)n, sizeof(*recs), cmp_delivery);
	return n;
}

void gpu_proc_quit(vfgx_gpu_proc *gp)
{
	if (!gp || !gp->g || gp->quit)
		return;
	gp->quit = true;
	if (gpuk_stop(gp->g, gp->o.timeout_ms) == -ETIMEDOUT)
		vfgx_err(gp->ctx, "GPU %s: kernel did not stop within %u ms after the quit flag; leaving its memory to process exit",
			 gpuk_device_name(gp->g), gp->o.timeout_ms);
}

void vfgx_gpu_proc_destroy(vfgx_gpu_proc *gp)
{
	if (!gp)
		return;
	gpu_proc_quit(gp);
	gpuk_destroy(gp->g);
	free(gp->ts_min);
	free(gp->npk);
	free(gp->ready_ns);
	free(gp->in_flight);
	free(gp->st);
	free(gp);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median and p99 of v[0..n) (sorted in place) into buf, in us when
 * us is set. */
static int pct_fmt(char *buf, size_t len, const char *name, int64_t *v, uint64_t n, bool us)
{
	double d = us ? 1e3 : 1;

	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	return snprintf(buf, len, "%s %.1f/%.1f", name, (double)v[n / 2] / d,
			(double)v[n * 99 / 100] / d);
}

int vfgx_gpu_proc_item_stamps(const vfgx_gpu_proc *gp, char *buf, size_t len)
{
	/* per item: fields below, CPU differences, then GPU ones; rest =
	 * handed over -> reaped less the GPU's READY seen -> DONE (the
	 * hand-off, the DONE store's fence and flight, the reaping), two
	 * differences of one clock each */
	static const char *const names[] = {
		"packets", "in flight", "rx->reaped", "gathered", "handed->reaped",
		"phase A", "phase B", "counters+DONE", "GPU", "rest",
	};
	enum { NF = sizeof(names) / sizeof(names[0]) };
	uint64_t n = gp->nb_st < STAMP_RING ? gp->nb_st : STAMP_RING, m = 0;
	int64_t *v;
	size_t at;

	if (!gp->st)
		return -ENOTSUP;
	if (!n)
		return -ENODATA;
	v = malloc(sizeof(*v) * (size_t)n * NF);
	if (!v)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		const struct item_stamp *t = &gp->st[i];
		int64_t *r = v + (size_t)m * NF;

		/* an item without a receive stamp (a source with none) is
		 * left out */
		if (!t->rx || t->ready < t->rx)
			continue;
		r[0] = t->npk;
		r[1] = t->in_flight;
		r[2] = (int64_t)(t->reap - t->rx);
		r[3] = (int64_t)(t->ready - t->rx);
		r[4] = (int64_t)(t->reap - t->ready);
		r[5] = (int64_t)(t->g_a - t->g_seen);
		r[6] = (int64_t)(t->g_b - t->g_a);
		r[7] = (int64_t)(t->g_done - t->g_b);
		r[8] = (int64_t)(t->g_done - t->g_seen);
		r[9] = r[4] - r[8];
		m++;
	}
	if (!m) {
		free(v);
		return -ENODATA;
	}
	/* one field's values contiguous, then sorted */
	int64_t *col = malloc(sizeof(*col) * (size_t)m);

	if (!col) {
		free(v);
		return -ENOMEM;
	}
	at = (size_t)snprintf(buf, len, "items %llu, p50/p99 (us; packets and in flight: counts):",
			       (unsigned long long)m);
	for (int f = 0; f < NF && at < len; f++) {
		for (uint64_t i = 0; i < m; i++)
			col[i] = v[(size_t)i * NF + f];
		at += (size_t)snprintf(buf + at, len - at, "%s", f ? ", " : " ");
		if (at < len)
			at += (size_t)pct_fmt(buf + at, len - at, names[f], col, m, f >= 2);
	}
	free(col);
	free(v);
	return 0;
}

int vfgx_gpu_proc_handoff_stamps(const vfgx_gpu_proc *gp, uint64_t item,
				 uint64_t *ready_ns, uint64_t *gpu_seen_ns)
{
	uint32_t slot = (uint32_t)(item % gp->nb_items);

	if (gp->o.mode != VFGX_GPU_PERSISTENT || item >= gp->done ||
	    gp->next - item > gp->nb_items)
		return -EINVAL;
	*ready_ns = gp->ready_ns[slot];
	*gpu_seen_ns = gp->l->seen_ns[4 * slot];
	return 0;
}

/* The clocks written while one item waits; past the log's end the bound
 * falls back to the clock read after the wait (a looser one). */
#define HANDOFF_LOG 1024

int vfgx_gpu_proc_handoff_probe(vfgx_gpu_proc *gp, uint32_t every_ns,
				struct vfgx_gpu_handoff *h)
{
	uint64_t log[HANDOFF_LOG];
	volatile uint64_t *clk;
	uint64_t item, prev, gap = 0, t0, t_end;
	uint32_t slot, nlog = 0, k;
	int ret;

	if (gp->o.mode != VFGX_GPU_PERSISTENT)
		return -EINVAL;
	if (gp->error)
		return gp->error;
	while (gp->next - gp->done >= gp->nb_items)
		if ((ret = wait_item(gp, gp->next - gp->nb_items)))
			return ret;
	item = gp->next;
	slot = (uint32_t)(item % gp->nb_items);
	clk = &gp->l->status[slot].clock;
	gp->npk[slot] = 0;
	gp->ts_min[slot] = 0;
	prev = t0 = vfgx_now_ns();
	*clk = t0; /* a READY seen before the first write below returns t0 */
	log[nlog++] = t0;
	gp->ready_ns[slot] = t0;
	vfgx_comm_publish(gp->l, slot, gp->next++, 0, VFGX_COMM_CMD_BURST);
	for (;;) {
		uint64_t t = vfgx_now_ns();

		*clk = t;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (nlog < HANDOFF_LOG)
			log[nlog++] = t;
		if (t - prev > gap)
			gap = t - prev;
		prev = t;
		if (vfgx_comm_load(gp->l, slot) != VFGX_COMM_READY)
			break;
		if (t - t0 > (uint64_t)gp->o.timeout_ms * 1000000ull)
			break; /* wait_nokick below reports the timeout */
		while (every_ns && vfgx_now_ns() - t < every_ns)
			;
	}
	t_end = vfgx_now_ns();
	if ((ret = wait_nokick(gp, item)))
		return ret;
	*clk = 0;
	h->ready_ns = t0;
	h->clock_ns = gp->l->seen_ns[4 * slot + 2];
	h->g_after = gp->l->seen_ns[4 * slot];
	h->g_before = gp->l->seen_ns[4 * slot + 1];
	h->gap_ns = gap;
	/* the last write of the clock the GPU returned, then two on (or the
	 * clock after the wait when the log has no such write) */
	for (k = nlog; k > 0 && log[k - 1] != h->clock_ns; k--)
		;
	h->after2_ns = k && k + 1 < nlog ? log[k + 1] : t_end;
	return 0;
}
