/* metrics_observer.c - the Prometheus endpoint as a pipeline observer: a
 * thread of its own publishes the pipeline's counters, the per-queue
 * snapshots and gpurdma_mon telemetry every period, and the final counters
 * when the pipeline stops; the engine and the runner know nothing of it. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vfgx/metrics.h>
#include <vfgx/mon.h>

struct metrics_observer {
	vfgx_ctx *ctx;
	vfgx_metrics *m;
	char *program;
	uint32_t period_ms;
	vfgx_pipeline *pl;
	vfgx_mon *mon;     /* NULL without the driver: no telemetry */
	struct vfgx_metrics_snapshot snap;
	struct vfgx_metrics_queue *queues; /* one per rx queue of the pipeline */
	pthread_t thread;
	bool running;
	pthread_mutex_t lock; /* wakes the thread early at stop */
	pthread_cond_t wake;
	bool quit;
};

/* The snapshot's common part; queues are filled by the caller. */
static void fill_common(struct metrics_observer *mo, bool final)
{
	struct vfgx_metrics_snapshot *s = &mo->snap;

	vfgx_pipeline_stats(mo->pl, &s->pipeline);
	s->finished = final;
	s->gpu = !strcmp(vfgx_pipeline_engine(mo->pl), "gpu");
	/* both engines count delivery order in the stats */
	s->has_order_errors = true;
	s->order_errors = s->pipeline.order_errors;
	s->has_mon = mo->mon && !vfgx_mon_telemetry(mo->mon, &s->mon);
	s->chunks.argsz = sizeof(s->chunks);
	s->has_chunks = vfgx_chunk_stats(mo->pl, &s->chunks) == 0;
}

/* While running: names from the ports, counters from the engine's copies,
 * never the queues themselves (their threads own them). */
static void publish_live(struct metrics_observer *mo)
{
	uint32_t n = 0, k = 0;
	struct vfgx_queue_snap qs;

	fill_common(mo, false);
	for (uint16_t i = 0; i < vfgx_pipeline_nb_ports(mo->pl); i++) {
		vfgx_port *p = vfgx_pipeline_port(mo->pl, i);

		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(p); q++, k++) {
			if (vfgx_pipeline_queue_snap(mo->pl, k, &qs))
				goto publish; /* no queue copies on this engine */
			mo->queues[n] = (struct vfgx_metrics_queue){
				.port = vfgx_port_name(p),
				.backend = vfgx_port_backend(p),
				.queue = q, .st = qs.stats,
			};
			n++;
		}
	}
publish:
	mo->snap.nb_queues = n == k ? n : 0;
	vfgx_metrics_publish(mo->m, &mo->snap);
}

static void *observer_main(void *arg)
{
	struct metrics_observer *mo = arg;
	struct timespec ts;

	pthread_mutex_lock(&mo->lock);
	while (!mo->quit) {
		pthread_mutex_unlock(&mo->lock);
		publish_live(mo);
		pthread_mutex_lock(&mo->lock);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += mo->period_ms / 1000;
		ts.tv_nsec += (long)(mo->period_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (!mo->quit &&
		       pthread_cond_timedwait(&mo->wake, &mo->lock, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&mo->lock);
	return NULL;
}

static int observer_start(void *user, vfgx_pipeline *pl)
{
	struct metrics_observer *mo = user;
	uint32_t nq = vfgx_pipeline_nb_queues(pl);
	int ret;

	mo->pl = pl;
	mo->queues = calloc(nq ? nq : 1, sizeof(*mo->queues));
	if (!mo->queues)
		return vfgx_set_error(mo->ctx, -ENOMEM, "metrics observer: out of memory");
	mo->snap.queues = mo->queues;
	/* telemetry when the driver is loaded; without it the page has none */
	if (vfgx_mon_open(mo->ctx, NULL, &mo->mon)) {
		mo->mon = NULL;
		vfgx_clear_error(mo->ctx);
	}
	mo->quit = false;
	ret = pthread_create(&mo->thread, NULL, observer_main, mo);
	if (ret)
		return vfgx_set_error(mo->ctx, -ret, "metrics observer: no thread");
	mo->running = true;
	return 0;
}

/* The engine has stopped: the ports' own counters are final and safe to
 * read here, on every engine. */
static void observer_stop(void *user, vfgx_pipeline *pl)
{
	struct metrics_observer *mo = user;
	uint16_t nb = vfgx_pipeline_nb_ports(pl);
	vfgx_port **ports = calloc(nb ? nb : 1, sizeof(*ports));

	if (mo->running) {
		pthread_mutex_lock(&mo->lock);
		mo->quit = true;
		pthread_cond_signal(&mo->wake);
		pthread_mutex_unlock(&mo->lock);
		pthread_join(mo->thread, NULL);
		mo->running = false;
	}
	fill_common(mo, true);
	mo->snap.nb_queues = 0;
	if (ports) {
		for (uint16_t i = 0; i < nb; i++)
			ports[i] = vfgx_pipeline_port(pl, i);
		mo->snap.nb_queues =
			vfgx_metrics_snapshot_ports(mo->queues, vfgx_pipeline_nb_queues(pl),
						    ports, nb);
		free(ports);
	}
	vfgx_metrics_publish(mo->m, &mo->snap);
}

static void observer_release(void *user)
{
	struct metrics_observer *mo = user;

	vfgx_mon_close(mo->mon);
	pthread_cond_destroy(&mo->wake);
	pthread_mutex_destroy(&mo->lock);
	free(mo->queues);
	free(mo->program);
	free(mo);
}

int vfgx_metrics_observe(vfgx_ctx *ctx, vfgx_pipeline *pl, vfgx_metrics *m,
			 const char *program, uint32_t period_ms)
{
	struct metrics_observer *mo;
	struct vfgx_observer obs = {
		.argsz = sizeof(obs),
		.start = observer_start,
		.stop = observer_stop,
		.release = observer_release,
	};
	pthread_condattr_t ca;

	if (!m || period_ms == 0)
		return vfgx_set_error(ctx, -EINVAL, "metrics observer: %s",
				      m ? "period must be > 0 ms" : "no endpoint");
	mo = calloc(1, sizeof(*mo));
	if (!mo || !(mo->program = strdup(program ? program : "vfgx"))) {
		free(mo);
		return -ENOMEM;
	}
	mo->ctx = ctx;
	mo->m = m;
	mo->period_ms = period_ms;
	mo->snap.argsz = sizeof(mo->snap);
	mo->snap.program = mo->program;
	pthread_mutex_init(&mo->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&mo->wake, &ca);
	pthread_condattr_destroy(&ca);
	obs.user = mo;
	return vfgx_pipeline_add_observer(pl, &obs);
}
