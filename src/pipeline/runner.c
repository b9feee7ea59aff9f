/* runner.c - N worker threads, each run to completion over its rx queues:
 * receive a burst, process it, release it in bulk.  Stats are published to
 * a snapshot under a per-worker lock every few milliseconds, never per
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

_Static_assert(VFGX_R_TRUNCATED == VFGX_DROP_TRUNCATED, "stage codes");
_Static_assert(VFGX_R_BAD_UDP_CSUM == VFGX_DROP_BAD_UDP_CSUM, "stage codes");
_Static_assert(VFGX_R_TOO_BIG == VFGX_DROP_TOO_BIG, "stage codes");

#define SNAPSHOT_NS 5000000ull

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
	struct vfgx_queue_stats *qsnap;       /* per poll, always */
	atomic_bool done;
	int error;
};

struct vfgx_pipeline {
	vfgx_ctx *ctx;
	struct vfgx_pipeline_config conf;
	struct worker *workers;
	uint16_t nb_workers;
	atomic_bool stop;
	atomic_bool keep_queues; /* workers copy per-queue stats when publishing */
	bool stopped;
	vfgx_mon_publisher *mon; /* NULL when gpurdma_mon is absent */
};

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
		wk->polls = calloc(total, sizeof(*wk->polls));
		wk->mon_snap = calloc(total, sizeof(*wk->mon_snap));
		wk->qsnap = calloc(total, sizeof(*wk->qsnap));
		ret = wk->polls && wk->mon_snap && wk->qsnap ?
			      vfgx_proc_create(ctx, conf, &wk->proc) : -ENOMEM;
		if (ret) {
			pl->nb_workers = (uint16_t)(w + 1);
			vfgx_pipeline_destroy(pl);
			return ret;
		}
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
	if (atomic_load_explicit(&wk->pl->keep_queues, memory_order_relaxed))
		for (uint32_t i = 0; i < wk->nb_polls; i++)
			vfgx_port_stats(wk->polls[i].port, wk->polls[i].q, &wk->qsnap[i]);
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
	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		struct worker *wk = &pl->workers[w];
		int ret = pthread_create(&wk->thread, NULL, worker_main, wk);

		if (ret) {
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

void vfgx_pipeline_keep_queue_stats(vfgx_pipeline *pl)
{
	atomic_store(&pl->keep_queues, true);
}

int vfgx_pipeline_queue_stats(vfgx_pipeline *pl, vfgx_port *port, uint16_t q,
			      struct vfgx_queue_stats *st)
{
	for (uint16_t w = 0; w < pl->nb_workers; w++) {
		struct worker *wk = &pl->workers[w];

		for (uint32_t i = 0; i < wk->nb_polls; i++) {
			if (wk->polls[i].port != port || wk->polls[i].q != q)
				continue;
			pthread_mutex_lock(&wk->lock);
			*st = wk->qsnap[i];
			pthread_mutex_unlock(&wk->lock);
			return 0;
		}
	}
	memset(st, 0, sizeof(*st));
	return -EINVAL;
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
		free(pl->workers[w].qsnap);
		pthread_mutex_destroy(&pl->workers[w].lock);
	}
	free(pl->workers);
	free(pl);
}
