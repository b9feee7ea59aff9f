/* runner.c - N worker threads, each run to completion over its rx queues:
 * receive a burst, process it, release it in bulk.  A stream is reordered
 * by one worker, the first to receive it; a packet of it that arrives on
 * another worker's queue (SO_REUSEPORT and RSS spread by addresses, not by
 * stream id) is copied into the owner's inbox.  Stats are published to a
 * snapshot under a per-worker lock every few milliseconds, never per
 * packet; from there they go to /dev/gpurdma_mon once a second when the
 * driver is loaded. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/mon.h>
#include <vfgx/pipeline.h>
#include <vfgx/stages.h>

#include "proc_steer.h"

_Static_assert(VFGX_R_TRUNCATED == VFGX_DROP_TRUNCATED, "stage codes");
_Static_assert(VFGX_R_BAD_UDP_CSUM == VFGX_DROP_BAD_UDP_CSUM, "stage codes");
_Static_assert(VFGX_R_TOO_BIG == VFGX_DROP_TOO_BIG, "stage codes");

#define SNAPSHOT_NS 5000000ull
#define INBOX_BYTES (4u << 20) /* per worker, when streams can be split */

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
	uint32_t index; /* over all ports: the PUBLISH queue slot */
};

struct worker {
	struct vfgx_pipeline *pl;
	pthread_t thread;
	bool started;
	vfgx_proc *proc;
	struct poll_entry *polls;
	uint32_t nb_polls;
	pthread_mutex_t lock;
	struct vfgx_pipeline_stats snap;
	struct vfgx_mon_queue_snap *mon_snap; /* per poll, when publishing */
	struct inbox inbox;
	atomic_bool done;
	int error;
};

struct vfgx_pipeline {
	vfgx_ctx *ctx;
	struct vfgx_pipeline_config conf;
	struct worker *workers;
	uint16_t nb_workers;
	atomic_bool stop;
	bool stopped;
	_Atomic uint16_t *owner;       /* per stream id; NULL: no hand-over */
	_Atomic uint64_t mem_used;     /* reorder bytes of all workers */
	_Atomic uint32_t receiving;    /* workers still in their rx loop */
	vfgx_mon_publisher *mon; /* NULL when gpurdma_mon is absent */
};

static int steer_init(struct vfgx_pipeline *pl);

int vfgx_pipeline_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
			 vfgx_port *const *ports, uint16_t nb_ports,
			 vfgx_pipeline **out)
{
	struct vfgx_pipeline *pl;
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
		wk->mon_snap = calloc(total, sizeof(*wk->mon_snap));
		ret = wk->polls && wk->mon_snap ?
			      vfgx_proc_create(ctx, conf, &wk->proc) : -ENOMEM;
		if (ret) {
			pl->nb_workers = (uint16_t)(w + 1);
			vfgx_pipeline_destroy(pl);
			return ret;
		}
	}
	ret = steer_init(pl);
	if (ret) {
		vfgx_pipeline_destroy(pl);
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
	*out = pl;
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
static int steer_init(struct vfgx_pipeline *pl)
{
	size_t stride = (sizeof(struct vfgx_handoff) + pl->conf.reorder_slot + 63) & ~(size_t)63;
	uint32_t cap = 256;

	if (!pl->conf.reorder || pl->nb_workers < 2)
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

void vfgx_pipeline_set_user_stage(vfgx_pipeline *pl, vfgx_user_stage_fn fn,
				  void *user)
{
	for (uint16_t w = 0; w < pl->nb_workers; w++)
		vfgx_proc_set_user_stage(pl->workers[w].proc, fn, user);
}

static void publish(struct worker *wk)
{
	pthread_mutex_lock(&wk->lock);
	vfgx_proc_stats(wk->proc, &wk->snap);
	/* queue stats are read on the thread that owns the queue */
	if (wk->pl->mon)
		for (uint32_t i = 0; i < wk->nb_polls; i++)
			vfgx_mon_queue_snap(wk->polls[i].port, wk->polls[i].q,
					    &wk->mon_snap[i]);
	pthread_mutex_unlock(&wk->lock);
}

/* Publisher thread: sum the workers' snapshots into one PUBLISH record. */
static void mon_collect(void *user, struct gpurdma_mon_publish *p)
{
	struct vfgx_pipeline *pl = user;
	uint32_t queues = 0;

	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		struct worker *wk = &pl->workers[w];

		pthread_mutex_lock(&wk->lock);
		for (uint32_t i = 0; i < wk->nb_polls; i++) {
			vfgx_mon_queue_add(p, wk->polls[i].index, &wk->mon_snap[i]);
			if (wk->polls[i].index + 1 > queues)
				queues = wk->polls[i].index + 1;
		}
		pthread_mutex_unlock(&wk->lock);
	}
	p->nr_queues = queues < GPURDMA_MON_MAX_QUEUES ? queues :
							  GPURDMA_MON_MAX_QUEUES;
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct vfgx_pipeline *pl = wk->pl;
	struct vfgx_pkt pkts[1024];
	uint64_t start = vfgx_now_ns(), last_pub = start;
	uint64_t end = pl->conf.duration_s > 0 ?
			       start + (uint64_t)(pl->conf.duration_s * 1e9) :
			       UINT64_MAX;
	uint32_t idle = 0;

	while (!atomic_load_explicit(&pl->stop, memory_order_relaxed)) {
		bool all_done = true, any = false;

		for (uint32_t i = 0; i < wk->nb_polls; i++) {
			struct poll_entry *pe = &wk->polls[i];
			int n = vfgx_port_rx_burst(pe->port, pe->q, pkts, 1024);

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
	return NULL;
}

int vfgx_pipeline_start(vfgx_pipeline *pl)
{
	/* before the workers, which read pl->mon; silent without the driver */
	if (vfgx_mon_publisher_start(pl->ctx, NULL, 1000, mon_collect, pl,
				     &pl->mon))
		vfgx_warn(pl->ctx, "%s", vfgx_last_error(pl->ctx));
	atomic_store(&pl->receiving, pl->nb_workers);
	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		struct worker *wk = &pl->workers[w];
		int ret = pthread_create(&wk->thread, NULL, worker_main, wk);

		if (ret) {
			/* the workers not started never leave a loop */
			atomic_fetch_sub(&pl->receiving, (uint32_t)(pl->nb_workers - w));
			vfgx_pipeline_stop(pl);
			return vfgx_set_error(pl->ctx, -ret,
					      "pipeline: cannot start worker %u: %s",
					      w, strerror(ret));
		}
		wk->started = true;
	}
	return 0;
}

bool vfgx_pipeline_done(vfgx_pipeline *pl)
{
	for (uint16_t w = 0; w < pl->nb_workers; w++)
		if (pl->workers[w].started && !atomic_load(&pl->workers[w].done))
			return false;
	return true;
}

void vfgx_pipeline_stop(vfgx_pipeline *pl)
{
	if (pl->stopped)
		return;
	atomic_store(&pl->stop, true);
	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		if (pl->workers[w].started)
			pthread_join(pl->workers[w].thread, NULL);
		pl->workers[w].started = false;
	}
	/* after the join: its last PUBLISH carries the final counters */
	vfgx_mon_publisher_stop(pl->mon);
	pl->mon = NULL;
	pl->stopped = true;
}

void vfgx_pipeline_stats(vfgx_pipeline *pl, struct vfgx_pipeline_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		struct worker *wk = &pl->workers[w];

		pthread_mutex_lock(&wk->lock);
		vfgx_stats_add(st, &wk->snap);
		pthread_mutex_unlock(&wk->lock);
	}
}

int vfgx_pipeline_error(vfgx_pipeline *pl)
{
	for (uint16_t w = 0; w < pl->nb_workers; w++)
		if (pl->workers[w].error)
			return pl->workers[w].error;
	return 0;
}

void vfgx_pipeline_destroy(vfgx_pipeline *pl)
{
	if (!pl)
		return;
	vfgx_pipeline_stop(pl);
	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		vfgx_proc_destroy(pl->workers[w].proc);
		free(pl->workers[w].polls);
		free(pl->workers[w].mon_snap);
		free(pl->workers[w].inbox.mem);
		pthread_mutex_destroy(&pl->workers[w].lock);
		pthread_mutex_destroy(&pl->workers[w].inbox.lock);
	}
	free(pl->owner);
	free(pl->workers);
	free(pl);
}
