/* publisher.c - the thread that pushes the library's counters to
 * /dev/gpurdma_mon (PUBLISH) every period, the collector that reads them
 * from ports and pools, and the pipeline observer built on both.  Silent
 * when the device does not exist. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include <vfgx/mon.h>

struct vfgx_mon_publisher {
	vfgx_ctx *ctx;
	vfgx_mon *mon;
	uint32_t period_ms;
	vfgx_mon_collect_fn collect;
	void *user;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	_Atomic uint64_t published;
	bool failed; /* logged once */
};

void vfgx_mon_queue_snap(vfgx_port *port, uint16_t q,
			 struct vfgx_mon_queue_snap *s)
{
	struct vfgx_queue_stats st;
	struct vfgx_pool_stats ps;
	vfgx_pool *pool = vfgx_port_rx_pool(port, q);

	memset(s, 0, sizeof(*s));
	if (vfgx_port_stats(port, q, &st) == 0) {
		s->c.rx_packets = st.rx_packets;
		s->c.rx_bytes = st.rx_bytes;
		s->c.tx_packets = st.tx_packets;
		s->c.tx_bytes = st.tx_bytes;
		for (int d = 0; d < VFGX_DROP_MAX; d++)
			s->c.drops += st.drops[d];
	}
	if (pool) {
		vfgx_pool_stats(pool, &ps);
		s->pool_total = ps.num_bufs;
		s->pool_used = ps.num_bufs - ps.available;
	}
}

void vfgx_mon_queue_add(struct gpurdma_mon_publish *p, uint32_t index,
			const struct vfgx_mon_queue_snap *s)
{
	struct gpurdma_mon_queue_counters *c =
		&p->q[index < GPURDMA_MON_MAX_QUEUES ? index :
						       GPURDMA_MON_MAX_QUEUES - 1];

	c->rx_packets += s->c.rx_packets;
	c->rx_bytes += s->c.rx_bytes;
	c->tx_packets += s->c.tx_packets;
	c->tx_bytes += s->c.tx_bytes;
	c->drops += s->c.drops;
	p->pool_used += s->pool_used;
	p->pool_total += s->pool_total;
}

void vfgx_mon_collect(vfgx_port *const *ports, uint16_t nb_ports,
		      struct gpurdma_mon_publish *p)
{
	struct vfgx_mon_queue_snap s;
	uint32_t k = 0;

	memset(p, 0, sizeof(*p));
	for (uint16_t i = 0; i < nb_ports; i++) {
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]);
		     q++, k++) {
			vfgx_mon_queue_snap(ports[i], q, &s);
			vfgx_mon_queue_add(p, k, &s);
		}
	}
	p->nr_queues = k < GPURDMA_MON_MAX_QUEUES ? k : GPURDMA_MON_MAX_QUEUES;
}

static void publish_once(struct vfgx_mon_publisher *pub)
{
	struct gpurdma_mon_publish p;

	memset(&p, 0, sizeof(p));
	pub->collect(pub->user, &p);
	p.argsz = sizeof(p);
	/* the ioctl directly: the context's error detail is not ours to
	 * write from this thread; logging is */
	if (ioctl(vfgx_mon_fd(pub->mon), GPURDMA_MON_IOC_PUBLISH, &p) == 0) {
		atomic_fetch_add(&pub->published, 1);
	} else if (!pub->failed) {
		vfgx_warn(pub->ctx, "gpurdma_mon: PUBLISH refused: %s; counters not exported",
			  strerror(errno));
		pub->failed = true;
	}
}

static void *publisher_main(void *arg)
{
	struct vfgx_mon_publisher *pub = arg;
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&pub->lock);
	while (!pub->stop) {
		next.tv_sec += pub->period_ms / 1000;
		next.tv_nsec += (long)(pub->period_ms % 1000) * 1000000L;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		while (!pub->stop &&
		       pthread_cond_timedwait(&pub->cond, &pub->lock, &next) !=
			       ETIMEDOUT)
			;
		pthread_mutex_unlock(&pub->lock);
		/* the final publish on stop gives short runs their totals */
		publish_once(pub);
		pthread_mutex_lock(&pub->lock);
	}
	pthread_mutex_unlock(&pub->lock);
	return NULL;
}

int vfgx_mon_publisher_start(vfgx_ctx *ctx, const char *path,
			     uint32_t period_ms, vfgx_mon_collect_fn collect,
			     void *user, vfgx_mon_publisher **out)
{
	struct vfgx_mon_publisher *pub;
	pthread_condattr_t ca;
	vfgx_mon *mon;
	int ret;

	*out = NULL;
	if (!collect || period_ms == 0)
		return vfgx_set_error(ctx, -EINVAL,
				      "mon publisher: needs a collect function and a period > 0 ms");
	ret = vfgx_mon_open(ctx, path, &mon);
	if (ret) {
		/* no driver: publishing is optional, so stay quiet */
		vfgx_dbg(ctx, "mon publisher: not publishing: %s",
			 vfgx_last_error(ctx));
		vfgx_clear_error(ctx);
		return 0;
	}
	pub = calloc(1, sizeof(*pub));
	if (!pub) {
		vfgx_mon_close(mon);
		return -ENOMEM;
	}
	pub->ctx = ctx;
	pub->mon = mon;
	pub->period_ms = period_ms;
	pub->collect = collect;
	pub->user = user;
	pthread_mutex_init(&pub->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pub->cond, &ca);
	pthread_condattr_destroy(&ca);
	ret = pthread_create(&pub->thread, NULL, publisher_main, pub);
	if (ret) {
		pthread_cond_destroy(&pub->cond);
		pthread_mutex_destroy(&pub->lock);
		vfgx_mon_close(mon);
		free(pub);
		return vfgx_set_error(ctx, -ret,
				      "mon publisher: cannot start thread: %s",
				      strerror(ret));
	}
	vfgx_dbg(ctx, "mon publisher: publishing counters every %u ms",
		 period_ms);
	*out = pub;
	return 0;
}

void vfgx_mon_publisher_stop(vfgx_mon_publisher *pub)
{
	if (!pub)
		return;
	pthread_mutex_lock(&pub->lock);
	pub->stop = true;
	pthread_cond_signal(&pub->cond);
	pthread_mutex_unlock(&pub->lock);
	pthread_join(pub->thread, NULL);
	pthread_cond_destroy(&pub->cond);
	pthread_mutex_destroy(&pub->lock);
	vfgx_mon_close(pub->mon);
	free(pub);
}

uint64_t vfgx_mon_publisher_count(const vfgx_mon_publisher *pub)
{
	return pub ? atomic_load(&pub->published) : 0;
}

/* --- the publisher as a pipeline observer ------------------------------------ */
struct mon_observer {
	vfgx_ctx *ctx;
	char *path; /* NULL: $VFGX_MON_DEV or the default */
	uint32_t period_ms;
	vfgx_pipeline *pl;
	vfgx_mon_publisher *pub;
};

static void observer_collect(void *user, struct gpurdma_mon_publish *p)
{
	struct mon_observer *mo = user;
	uint32_t n = vfgx_pipeline_nb_queues(mo->pl);
	struct vfgx_pipeline_stats st;
	struct vfgx_mon_queue_snap ms;
	struct vfgx_queue_snap qs;

	for (uint32_t i = 0; i < n; i++) {
		if (vfgx_pipeline_queue_snap(mo->pl, i, &qs))
			break;
		memset(&ms, 0, sizeof(ms));
		ms.c.rx_packets = qs.stats.rx_packets;
		ms.c.rx_bytes = qs.stats.rx_bytes;
		ms.c.tx_packets = qs.stats.tx_packets;
		ms.c.tx_bytes = qs.stats.tx_bytes;
		for (int d = 0; d < VFGX_DROP_MAX; d++)
			ms.c.drops += qs.stats.drops[d];
		ms.pool_used = qs.pool_used;
		ms.pool_total = qs.pool_total;
		vfgx_mon_queue_add(p, i, &ms);
		p->nr_queues = i + 1 < GPURDMA_MON_MAX_QUEUES ? i + 1 :
								 GPURDMA_MON_MAX_QUEUES;
	}
	if (n && !p->nr_queues) {
		/* an engine without queue snapshots: its totals as one queue */
		vfgx_pipeline_stats(mo->pl, &st);
		p->q[0].rx_packets = st.packets;
		p->q[0].rx_bytes = st.bytes;
		for (int d = 0; d < VFGX_DROP_MAX; d++)
			p->q[0].drops += st.drops[d];
		p->nr_queues = 1;
	}
}

static int observer_start(void *user, vfgx_pipeline *pl)
{
	struct mon_observer *mo = user;

	mo->pl = pl;
	/* publishing is optional: a failure is a warning, not a failed start */
	if (vfgx_mon_publisher_start(mo->ctx, mo->path, mo->period_ms,
				     observer_collect, mo, &mo->pub))
		vfgx_warn(mo->ctx, "%s", vfgx_last_error(mo->ctx));
	return 0;
}

static void observer_stop(void *user, vfgx_pipeline *pl)
{
	struct mon_observer *mo = user;

	(void)pl;
	vfgx_mon_publisher_stop(mo->pub);
	mo->pub = NULL;
}

static void observer_release(void *user)
{
	struct mon_observer *mo = user;

	free(mo->path);
	free(mo);
}

int vfgx_mon_observe(vfgx_ctx *ctx, vfgx_pipeline *pl, const char *path,
		     uint32_t period_ms)
{
	struct mon_observer *mo = calloc(1, sizeof(*mo));
	struct vfgx_observer obs = {
		.argsz = sizeof(obs),
		.start = observer_start,
		.stop = observer_stop,
		.release = observer_release,
	};

	if (!mo)
		return -ENOMEM;
	if (period_ms == 0) {
		free(mo);
		return vfgx_set_error(ctx, -EINVAL, "mon observer: period must be > 0 ms");
	}
	mo->ctx = ctx;
	mo->period_ms = period_ms;
	if (path && !(mo->path = strdup(path))) {
		free(mo);
		return -ENOMEM;
	}
	obs.user = mo;
	return vfgx_pipeline_add_observer(pl, &obs);
}
