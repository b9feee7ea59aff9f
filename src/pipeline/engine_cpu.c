/* engine_cpu.c - the cpu engine of vfgx_pipeline: N worker threads, each
 * run to completion over its rx queues: receive a burst, process it,
 * release it in bulk.  A stream is reordered by one worker, the first to
 * receive it; a packet of it that arrives on another worker's queue
 * (SO_REUSEPORT and RSS spread by addresses, not by stream id) is copied
 * into the owner's inbox.  Stats (and, while observers are attached, queue
 * snapshots) are published to a snapshot under a per-worker lock every few
 * milliseconds, never per packet. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/pipeline.h>
#include <vfgx/stages.h>

#include "chunkset.h"
#include "engine.h"
#include "proc_steer.h"

_Static_assert(VFGX_R_TRUNCATED == VFGX_DROP_TRUNCATED, "stage codes");
_Static_assert(VFGX_R_BAD_UDP_CSUM == VFGX_DROP_BAD_UDP_CSUM, "stage codes");
_Static_assert(VFGX_R_TOO_BIG == VFGX_DROP_TOO_BIG, "stage codes");
_Static_assert(VFGX_R_FIELD_OUTSIDE == VFGX_DROP_FIELD_OUTSIDE &&
	       VFGX_R_BAD_LENGTH == VFGX_DROP_BAD_LENGTH &&
	       VFGX_R_MISMATCH == VFGX_DROP_MISMATCH &&
	       VFGX_R_OFFSET_PAST_CHUNK == VFGX_DROP_OFFSET_PAST_CHUNK &&
	       VFGX_R_SEGMENT_PAST_FRAME == VFGX_DROP_SEGMENT_PAST_FRAME &&
	       VFGX_R_SEQ_JUMP == VFGX_DROP_SEQ_JUMP &&
	       VFGX_R_USER_PLACE == VFGX_DROP_USER_PLACE && VFGX_DROP_MAX == 23,
	       "format drop codes (vfgx/stages.h, vfgx/port.h)");

#define SNAPSHOT_NS 5000000ull
#define INBOX_BYTES (4u << 20) /* per worker, when streams can be split */
/* bytes a packet counts against pipeline.max_in_flight_bytes on a queue
 * whose backend keeps buffers of its own (no memory_region pool) */
#define UNPOOLED_BUF 2048

/* Records other workers handed to this one.  Only streams split over
 * queues of several workers come here, so a mutex is fine: the common
 * path never takes it (it reads `count` only). */
struct inbox {
	pthread_mutex_t lock;
	_Atomic uint32_t count; /* entries waiting */
	uint32_t head, n, cap;
	size_t stride;          /* struct vfgx_handoff + reorder_slot bytes */
	uint8_t *mem;
};

struct poll_entry {
	vfgx_port *port;
	uint16_t q;
	uint32_t index; /* over all ports: the queue_snap index */
	uint16_t burst; /* packets per rx at most (pipeline.max_in_flight_bytes) */
};

struct worker {
	struct cpu_engine *pl;
	pthread_t thread;
	bool started;
	vfgx_proc *proc;
	struct poll_entry *polls;
	uint32_t nb_polls;
	pthread_mutex_t lock;
	struct vfgx_pipeline_stats snap;
	struct vfgx_queue_snap *queue_snap; /* per poll, when observed */
	/* order check: last delivered + 1 per stream; streams are per proc */
	uint64_t *next_seq;
	uint64_t order_errors;
	vfgx_user_stage_fn user_fn;
	void *user;
	struct inbox inbox;
	atomic_bool done;
	int error;
};

struct cpu_engine {
	vfgx_ctx *ctx;
	struct vfgx_pipeline_config conf;
	struct worker *workers;
	uint16_t nb_workers;
	uint32_t nb_queues;
	atomic_bool stop;
	bool stopped;
	_Atomic uint16_t *owner;       /* per stream id; NULL: no hand-over */
	_Atomic uint64_t *learned;     /* SSRCs seen (vfgx_proc_share_streams) */
	_Atomic uint64_t mem_used;     /* reorder bytes of all workers */
	_Atomic uint32_t receiving;    /* workers still in their rx loop */
	_Atomic uint32_t running;      /* workers not yet done */
	struct vfgx_chunkset *chunks;  /* pipeline.chunks, or NULL */
	bool queue_snaps; /* observers attached */
	char desc[96];
};

static void cpu_destroy(void *e);
static int steer_init(struct cpu_engine *pl);
static int fit_in_flight(struct cpu_engine *pl);

/* Every delivery passes here: count order errors, then the user's stage. */
static int order_stage(void *user, uint32_t stream, uint64_t seq,
		       const uint8_t *payload, uint32_t len)
{
	struct worker *wk = user;

	/* chunks: records arrive in any order; chunks leave in order */
	if (!wk->pl->conf.chunks) {
		if (seq < wk->next_seq[stream])
			wk->order_errors++;
		wk->next_seq[stream] = seq + 1;
	}
	return wk->user_fn ? wk->user_fn(wk->user, stream, seq, payload, len) : 0;
}

static int cpu_set_chunks(struct cpu_engine *pl, struct vfgx_chunkset *cs);

static int cpu_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
		      vfgx_port *const *ports, uint16_t nb_ports,
		      struct vfgx_chunkset *chunks, void **out)
{
	struct cpu_engine *pl;
	uint32_t total = 0;
	int ret;

	*out = NULL;
	for (uint16_t i = 0; i < nb_ports; i++)
		total += vfgx_port_nb_rx_queues(ports[i]);
	if (total == 0)
		return vfgx_set_error(ctx, -EINVAL, "pipeline: no rx queues to poll");
	pl = calloc(1, sizeof(*pl));
	if (!pl)
		return -ENOMEM;
	pl->ctx = ctx;
	pl->conf = *conf;
	pl->nb_workers = conf->workers ? conf->workers : 1;
	if (pl->nb_workers > total) {
		vfgx_warn(ctx, "pipeline: %u workers for %u rx queues; using %u (add queues to use more workers)",
			  pl->nb_workers, total, total);
		pl->nb_workers = (uint16_t)total;
	}
	pl->workers = calloc(pl->nb_workers, sizeof(*pl->workers));
	if (!pl->workers) {
		free(pl);
		return -ENOMEM;
	}
	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		struct worker *wk = &pl->workers[w];

		wk->pl = pl;
		pthread_mutex_init(&wk->lock, NULL);
		pthread_mutex_init(&wk->inbox.lock, NULL);
		wk->polls = calloc(total, sizeof(*wk->polls));
		wk->queue_snap = calloc(total, sizeof(*wk->queue_snap));
		wk->next_seq = calloc(conf->max_streams ? conf->max_streams : 1,
				      sizeof(*wk->next_seq));
		ret = wk->polls && wk->queue_snap && wk->next_seq ?
			      vfgx_proc_create(ctx, conf, &wk->proc) : -ENOMEM;
		if (ret) {
			pl->nb_workers = (uint16_t)(w + 1);
			cpu_destroy(pl);
			return ret;
		}
		vfgx_proc_set_user_stage(wk->proc, order_stage, wk);
	}
	ret = steer_init(pl);
	if (ret) {
		cpu_destroy(pl);
		return ret;
	}
	/* Queue k (over all ports) goes to worker k % workers. */
	uint32_t k = 0;

	for (uint16_t i = 0; i < nb_ports; i++) {
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]); q++, k++) {
			struct worker *wk = &pl->workers[k % pl->nb_workers];

			wk->polls[wk->nb_polls].port = ports[i];
			wk->polls[wk->nb_polls].index = k;
			wk->polls[wk->nb_polls++].q = q;
		}
	}
	pl->nb_queues = total;
	if ((ret = fit_in_flight(pl)) || (chunks && (ret = cpu_set_chunks(pl, chunks)))) {
		cpu_destroy(pl);
		return ret;
	}
	int len = snprintf(pl->desc, sizeof(pl->desc), "cpu: %u worker(s) over %u rx queue(s)",
			   pl->nb_workers, total);

	if (conf->max_in_flight_bytes && len > 0 && (size_t)len < sizeof(pl->desc))
		snprintf(pl->desc + len, sizeof(pl->desc) - (size_t)len,
			 ", at most %llu B in flight",
			 (unsigned long long)conf->max_in_flight_bytes);
	*out = pl;
	return 0;
}

/* pipeline.max_in_flight_bytes: a worker holds one rx burst at a time
 * (received, processed, released before its next rx), so its share of the
 * budget caps its bursts at share / the queue's buffer size packets.  A
 * share below one buffer is refused here, with the numbers that fit. */
static int fit_in_flight(struct cpu_engine *pl)
{
	uint64_t budget = pl->conf.max_in_flight_bytes;
	uint64_t share = budget / pl->nb_workers;

	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		struct worker *wk = &pl->workers[w];

		for (uint32_t i = 0; i < wk->nb_polls; i++) {
			struct poll_entry *pe = &wk->polls[i];
			vfgx_pool *pool = vfgx_port_rx_pool(pe->port, pe->q);
			uint64_t buf = pool ? vfgx_pool_buf_size(pool) : UNPOOLED_BUF;
			uint64_t batch = vfgx_port_rx_batch(pe->port, pe->q);
			uint64_t n = budget ? share / buf : batch;

			if (!n)
				return vfgx_set_error(pl->ctx, -EINVAL,
						      "pipeline.max_in_flight_bytes %llu holds less than one %llu-byte packet buffer (%s rx queue %u) for each of %u worker(s): set it to at least %llu, or lower pipeline.workers",
						      (unsigned long long)budget,
						      (unsigned long long)buf,
						      vfgx_port_name(pe->port), pe->q,
						      pl->nb_workers,
						      (unsigned long long)(buf * pl->nb_workers));
			/* the queue's batch_size (at most VFGX_BATCH_MAX, checked
			 * at port open), fewer where the budget says so */
			pe->burst = (uint16_t)(n < batch ? n : batch);
		}
	}
	return 0;
}

static struct vfgx_handoff *inbox_entry(struct inbox *ib, uint32_t i)
{
	return (struct vfgx_handoff *)(ib->mem + (size_t)(i % ib->cap) * ib->stride);
}

/* Reorder what other workers handed over; returns how many. */
static uint32_t inbox_drain(struct worker *wk)
{
	struct inbox *ib = &wk->inbox;
	uint32_t n;

	if (!ib->mem || !atomic_load_explicit(&ib->count, memory_order_relaxed))
		return 0;
	pthread_mutex_lock(&ib->lock);
	n = ib->n;
	for (uint32_t i = 0; i < n; i++)
		vfgx_proc_take(wk->proc, inbox_entry(ib, ib->head + i));
	ib->head = (ib->head + n) % ib->cap;
	ib->n = 0;
	atomic_store_explicit(&ib->count, 0, memory_order_relaxed);
	pthread_mutex_unlock(&ib->lock);
	return n;
}

/* Called by a processor on worker `user`'s thread for a record whose
 * stream worker `to` owns.  A full inbox waits, taking this worker's own
 * inbox meanwhile, so two workers handing to each other both progress. */
static void hand_over(void *user, uint16_t to, const struct vfgx_handoff *h)
{
	struct worker *wk = user;
	struct inbox *ib = &wk->pl->workers[to].inbox;

	for (;;) {
		pthread_mutex_lock(&ib->lock);
		if (ib->n < ib->cap) {
			struct vfgx_handoff *e = inbox_entry(ib, ib->head + ib->n);
			uint8_t *body = (uint8_t *)(e + 1);

			*e = *h;
			memcpy(body, h->body, h->len);
			e->body = body;
			ib->n++;
			atomic_store_explicit(&ib->count, ib->n, memory_order_relaxed);
			pthread_mutex_unlock(&ib->lock);
			return;
		}
		pthread_mutex_unlock(&ib->lock);
		if (!inbox_drain(wk))
			sched_yield();
	}
}

/* Stream ownership and inboxes: only with reorder and several workers. */
static int steer_init(struct cpu_engine *pl)
{
	uint32_t slot = pl->conf.chunks ? pl->conf.chunks->payload_bytes :
					  pl->conf.reorder_slot;
	size_t stride = (sizeof(struct vfgx_handoff) + slot + VFGX_HANDOFF_HEADROOM + 63) &
			~(size_t)63;
	uint32_t cap = 256;

	if (pl->nb_workers < 2)
		return 0;
	/* RTP's SSRCs get one stream index for every worker */
	pl->learned = calloc(pl->conf.max_streams, sizeof(*pl->learned));
	if (!pl->learned)
		return -ENOMEM;
	for (uint16_t w = 0; w < pl->nb_workers; w++)
		vfgx_proc_share_streams(pl->workers[w].proc, pl->learned, pl->conf.max_streams);
	if (!pl->conf.reorder && !pl->conf.chunks)
		return 0;
	while (cap > 16 && cap * stride > INBOX_BYTES)
		cap /= 2;
	pl->owner = calloc(pl->conf.max_streams, sizeof(*pl->owner));
	if (!pl->owner)
		return -ENOMEM;
	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		struct worker *wk = &pl->workers[w];
		struct vfgx_steer st = { .owner = pl->owner, .self = w,
					 .hand = hand_over, .user = wk,
					 .mem_used = &pl->mem_used };

		wk->inbox.mem = malloc(cap * stride);
		if (!wk->inbox.mem)
			return -ENOMEM;
		wk->inbox.cap = cap;
		wk->inbox.stride = stride;
		vfgx_proc_set_steer(wk->proc, &st);
	}
	return 0;
}

static int cpu_set_user_stage(void *e, vfgx_user_stage_fn fn, void *user)
{
	struct cpu_engine *pl = e;

	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		pl->workers[w].user_fn = fn;
		pl->workers[w].user = user;
	}
	return 0;
}

static void cpu_want_queue_snaps(void *e)
{
	((struct cpu_engine *)e)->queue_snaps = true;
}

void vfgx_queue_snap_take(vfgx_port *port, uint16_t q, struct vfgx_queue_snap *s)
{
	vfgx_pool *pool = vfgx_port_rx_pool(port, q);
	struct vfgx_pool_stats ps;

	memset(s, 0, sizeof(*s));
	vfgx_port_stats(port, q, &s->stats);
	if (pool) {
		vfgx_pool_stats(pool, &ps);
		s->pool_total = ps.num_bufs;
		s->pool_used = ps.num_bufs - ps.available;
	}
}

static void publish(struct worker *wk)
{
	pthread_mutex_lock(&wk->lock);
	vfgx_proc_stats(wk->proc, &wk->snap);
	wk->snap.order_errors = wk->order_errors;
	/* queue stats are read on the thread that owns the queue */
	if (wk->pl->queue_snaps)
		for (uint32_t i = 0; i < wk->nb_polls; i++)
			vfgx_queue_snap_take(wk->polls[i].port, wk->polls[i].q,
					     &wk->queue_snap[i]);
	pthread_mutex_unlock(&wk->lock);
}

static int cpu_queue_snap(void *e, uint32_t index, struct vfgx_queue_snap *s)
{
	struct cpu_engine *pl = e;

	if (index >= pl->nb_queues)
		return -EINVAL;
	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		struct worker *wk = &pl->workers[w];

		for (uint32_t i = 0; i < wk->nb_polls; i++) {
			if (wk->polls[i].index != index)
				continue;
			pthread_mutex_lock(&wk->lock);
			*s = wk->queue_snap[i];
			pthread_mutex_unlock(&wk->lock);
			return 0;
		}
	}
	return -EINVAL;
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct cpu_engine *pl = wk->pl;
	struct vfgx_pkt pkts[VFGX_BATCH_MAX];
	uint64_t start = vfgx_now_ns(), last_pub = start;
	uint64_t end = pl->conf.duration_s > 0 ?
			       start + (uint64_t)(pl->conf.duration_s * 1e9) :
			       UINT64_MAX;
	uint32_t idle = 0;

	while (!atomic_load_explicit(&pl->stop, memory_order_relaxed)) {
		bool all_done = true, any = false;

		for (uint32_t i = 0; i < wk->nb_polls; i++) {
			struct poll_entry *pe = &wk->polls[i];
			int n = vfgx_port_rx_burst(pe->port, pe->q, pkts, pe->burst);

			if (n < 0) {
				wk->error = n;
				vfgx_err(pl->ctx, "%s: rx queue %u failed: %s",
					 vfgx_port_name(pe->port), pe->q,
					 vfgx_strerror(n));
				goto out;
			}
			if (n > 0) {
				vfgx_proc_burst(wk->proc, pkts, (uint32_t)n);
				vfgx_port_release(pe->port, pe->q, pkts, (uint16_t)n);
				any = true;
				all_done = false;
			} else if (!vfgx_port_rx_done(pe->port, pe->q)) {
				all_done = false;
			}
		}
		if (inbox_drain(wk))
			any = true;
		if (all_done)
			break;
		if (!any && ++idle > 64) {
			/* nothing arriving: give the core to the sender */
			sched_yield();
			idle = 0;
		}
		uint64_t now = vfgx_now_ns();

		if (pl->chunks)
			vfgx_proc_tick(wk->proc, now);
		if (now >= end)
			break;
		if (now - last_pub >= SNAPSHOT_NS) {
			publish(wk);
			last_pub = now;
		}
	}
out:
	/* others may still hand records over until every worker has left its
	 * rx loop; take them all before flushing the windows */
	atomic_fetch_sub(&pl->receiving, 1);
	while (wk->inbox.mem) {
		uint32_t n = inbox_drain(wk);

		if (!atomic_load(&pl->receiving) &&
		    !atomic_load(&wk->inbox.count))
			break;
		if (!n)
			sched_yield();
	}
	vfgx_proc_flush(wk->proc);
	publish(wk);
	atomic_store(&wk->done, true);
	/* the last worker out: no chunk comes after this */
	if (atomic_fetch_sub(&pl->running, 1) == 1 && pl->chunks)
		vfgx_chunkset_finish(pl->chunks);
	return NULL;
}

static void cpu_stop(void *e);

static int cpu_start(void *e)
{
	struct cpu_engine *pl = e;

	atomic_store(&pl->receiving, pl->nb_workers);
	atomic_store(&pl->running, pl->nb_workers);
	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		struct worker *wk = &pl->workers[w];
		int ret = pthread_create(&wk->thread, NULL, worker_main, wk);

		if (ret) {
			/* the workers not started never leave a loop */
			atomic_fetch_sub(&pl->receiving, (uint32_t)(pl->nb_workers - w));
			atomic_fetch_sub(&pl->running, (uint32_t)(pl->nb_workers - w));
			cpu_stop(pl);
			return vfgx_set_error(pl->ctx, -ret,
					      "pipeline: cannot start worker %u: %s",
					      w, strerror(ret));
		}
		wk->started = true;
	}
	return 0;
}

static bool cpu_done(void *e)
{
	struct cpu_engine *pl = e;

	for (uint16_t w = 0; w < pl->nb_workers; w++)
		if (pl->workers[w].started && !atomic_load(&pl->workers[w].done))
			return false;
	return true;
}

static void cpu_stop(void *e)
{
	struct cpu_engine *pl = e;

	if (pl->stopped)
		return;
	atomic_store(&pl->stop, true);
	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		if (pl->workers[w].started)
			pthread_join(pl->workers[w].thread, NULL);
		pl->workers[w].started = false;
	}
	pl->stopped = true;
}

static void cpu_stats(void *e, struct vfgx_pipeline_stats *st)
{
	struct cpu_engine *pl = e;

	memset(st, 0, sizeof(*st));
	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		struct worker *wk = &pl->workers[w];

		pthread_mutex_lock(&wk->lock);
		vfgx_stats_add(st, &wk->snap);
		pthread_mutex_unlock(&wk->lock);
	}
}

static int cpu_error(void *e)
{
	struct cpu_engine *pl = e;

	for (uint16_t w = 0; w < pl->nb_workers; w++)
		if (pl->workers[w].error)
			return pl->workers[w].error;
	return 0;
}

static int cpu_set_chunks(struct cpu_engine *pl, struct vfgx_chunkset *cs)
{
	int ret;

	for (uint16_t w = 0; w < pl->nb_workers; w++)
		if ((ret = vfgx_proc_set_chunks(pl->workers[w].proc, cs)))
			return ret;
	pl->chunks = cs;
	return 0;
}

static const char *cpu_describe(void *e)
{
	return ((struct cpu_engine *)e)->desc;
}

static void cpu_destroy(void *e)
{
	struct cpu_engine *pl = e;

	if (!pl)
		return;
	cpu_stop(pl);
	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		vfgx_proc_destroy(pl->workers[w].proc);
		free(pl->workers[w].polls);
		free(pl->workers[w].queue_snap);
		free(pl->workers[w].next_seq);
		free(pl->workers[w].inbox.mem);
		pthread_mutex_destroy(&pl->workers[w].lock);
		pthread_mutex_destroy(&pl->workers[w].inbox.lock);
	}
	free(pl->owner);
	free(pl->learned);
	free(pl->workers);
	free(pl);
}

const struct vfgx_engine_ops vfgx_engine_cpu = {
	.name = "cpu",
	.create = cpu_create,
	.set_user_stage = cpu_set_user_stage,
	.want_queue_snaps = cpu_want_queue_snaps,
	.start = cpu_start,
	.done = cpu_done,
	.stop = cpu_stop,
	.stats = cpu_stats,
	.error = cpu_error,
	.queue_snap = cpu_queue_snap,
	.describe = cpu_describe,
	.destroy = cpu_destroy,
};
