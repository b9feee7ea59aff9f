/* metrics.c - the Prometheus endpoint: libmicrohttpd serves /metrics from
 * the last snapshot the program published; formatting happens on the
 * server's thread from a private copy, so a scrape costs the data path
 * nothing. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include <vfgx/metrics.h>

#include "core/argsz.h"
#include "core/numparse.h"
#include "vfgx_build.h"

/* A peer that sends its request a byte at a time could hold a slot for
 * ever (libmicrohttpd's idle timeout restarts at every byte): each
 * connection must have its request answered within METRICS_REQUEST_S of
 * its start or of its previous answer, or it is shut down; one source
 * address holds at most METRICS_PER_SOURCE of the METRICS_MAX_CONNS
 * connections (docs/security.md). */
#define METRICS_MAX_CONNS 64u
#define METRICS_PER_SOURCE 8u
#define METRICS_IDLE_S 10u
#define METRICS_REQUEST_S 5u
#define METRICS_SWEEP_MS 250

struct metrics_conn {
	int fd;            /* -1: a free entry */
	bool shut;         /* shut down by the deadline, not yet closed */
	uint64_t since_ns; /* connection start or its last answer */
};

struct vfgx_metrics {
	struct MHD_Daemon *daemon;
	/* the request deadline: entries made and freed by libmicrohttpd's
	 * thread (notify_conn, before it closes the socket), read by the
	 * sweeper, all under conns_lock, so a shut-down fd is always ours */
	pthread_mutex_t conns_lock;
	pthread_cond_t stop_cond;
	bool stopping;
	pthread_t sweeper;
	struct metrics_conn conns[METRICS_MAX_CONNS];
	_Atomic uint64_t deadline_closed;
	uint16_t port;
	pthread_mutex_t lock;
	bool published;
	/* under lock: the last snapshot, its queues and their names copied
	 * into memory of the server (snap.queues points to queues) */
	struct vfgx_metrics_snapshot snap;
	struct vfgx_metrics_queue *queues;
	uint32_t queues_cap;
	const char *program;
	_Atomic uint64_t scrapes;
};

/* --- formatting ------------------------------------------------------------ */

static void help_type(FILE *f, const char *name, const char *type,
		      const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label values are port names from the config: escape \ " and newline. */
static void label_value(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void queue_labels(FILE *f, const struct vfgx_metrics_queue *q)
{
	fputs("{port=\"", f);
	label_value(f, q->port);
	fputs("\",backend=\"", f);
	label_value(f, q->backend);
	fprintf(f, "\",queue=\"%u\"", q->queue);
}

enum queue_field { QF_RX_PACKETS, QF_RX_BYTES, QF_TX_PACKETS, QF_TX_BYTES };

static void queue_counter(FILE *f, const struct vfgx_metrics_snapshot *s,
			  const char *name, const char *help,
			  enum queue_field field)
{
	help_type(f, name, "counter", help);
	for (uint32_t i = 0; i < s->nb_queues; i++) {
		const struct vfgx_queue_stats *st = &s->queues[i].st;
		uint64_t v = field == QF_RX_PACKETS ? st->rx_packets :
			     field == QF_RX_BYTES   ? st->rx_bytes :
			     field == QF_TX_PACKETS ? st->tx_packets :
						      st->tx_bytes;

		fputs(name, f);
		queue_labels(f, &s->queues[i]);
		fprintf(f, "} %" PRIu64 "\n", v);
	}
}

static void format_queues(FILE *f, const struct vfgx_metrics_snapshot *s)
{
	if (!s->nb_queues)
		return;
	queue_counter(f, s, "vfgx_port_rx_packets_total",
		      "Packets received on the queue.", QF_RX_PACKETS);
	queue_counter(f, s, "vfgx_port_rx_bytes_total",
		      "Bytes received on the queue.", QF_RX_BYTES);
	queue_counter(f, s, "vfgx_port_tx_packets_total",
		      "Packets sent on the queue.", QF_TX_PACKETS);
	queue_counter(f, s, "vfgx_port_tx_bytes_total",
		      "Bytes sent on the queue.", QF_TX_BYTES);
	help_type(f, "vfgx_port_drops_total", "counter",
		  "Packets the queue's backend dropped, by reason.");
	for (uint32_t i = 0; i < s->nb_queues; i++)
		for (int r = 0; r < VFGX_DROP_MAX; r++) {
			fputs("vfgx_port_drops_total", f);
			queue_labels(f, &s->queues[i]);
			fprintf(f, ",reason=\"%s\"} %" PRIu64 "\n",
				vfgx_drop_reason_name((enum vfgx_drop_reason)r),
				s->queues[i].st.drops[r]);
		}
}

static void pipeline_counter(FILE *f, const char *dev, const char *name,
			     const char *help, uint64_t v)
{
	help_type(f, name, "counter", help);
	fprintf(f, "%s{device=\"%s\"} %" PRIu64 "\n", name, dev, v);
}

/* The pipeline keeps a log2 histogram (bucket b: [2^b, 2^(b+1)) ns) and no
 * sum: _sum adds each sample's bucket upper bound, an upper bound of the
 * true sum (docs/metrics.md). */
static void format_latency(FILE *f, const char *dev,
			   const struct vfgx_pipeline_stats *p)
{
	const char *name = "vfgx_pipeline_latency_seconds";
	uint64_t cum = 0;
	double sum = 0;

	help_type(f, name, "histogram",
		  "Receive to processed latency per packet (log2 buckets; _sum from bucket upper bounds).");
	for (int b = 0; b < VFGX_LAT_BUCKETS; b++) {
		double le = (double)(1ull << (b + 1)) * 1e-9;

		cum += p->lat_hist[b];
		sum += (double)p->lat_hist[b] * le;
		fprintf(f, "%s_bucket{device=\"%s\",le=\"%.9g\"} %" PRIu64 "\n",
			name, dev, le, cum);
	}
	fprintf(f, "%s_bucket{device=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name, dev, cum);
	fprintf(f, "%s_sum{device=\"%s\"} %.9g\n", name, dev, sum);
	fprintf(f, "%s_count{device=\"%s\"} %" PRIu64 "\n", name, dev, cum);
}

static void format_pipeline(FILE *f, const struct vfgx_metrics_snapshot *s)
{
	const struct vfgx_pipeline_stats *p = &s->pipeline;
	const char *dev = s->gpu ? "gpu" : "cpu";

	pipeline_counter(f, dev, "vfgx_pipeline_packets_total",
			 "Packets offered to the pipeline.", p->packets);
	pipeline_counter(f, dev, "vfgx_pipeline_bytes_total",
			 "Frame bytes offered to the pipeline.", p->bytes);
	pipeline_counter(f, dev, "vfgx_pipeline_passed_total",
			 "Packets that passed parse, validate and filter.", p->passed);
	pipeline_counter(f, dev, "vfgx_pipeline_delivered_total",
			 "Records the reorder stage delivered in order.", p->delivered);
	pipeline_counter(f, dev, "vfgx_pipeline_delivered_bytes_total",
			 "Payload bytes delivered.", p->delivered_bytes);
	pipeline_counter(f, dev, "vfgx_pipeline_gaps_total",
			 "Sequence numbers skipped (never arrived in the window).", p->gaps);
	pipeline_counter(f, dev, "vfgx_pipeline_verify_errors_total",
			 "Delivered payloads not matching the generator's pattern.",
			 p->verify_errors);
	pipeline_counter(f, dev, "vfgx_pipeline_streams_finished_total",
			 "Streams that delivered their last-flagged record.", p->last_seen);
	help_type(f, "vfgx_pipeline_drops_total", "counter",
		  "Packets the pipeline dropped, by reason (late and duplicate included).");
	for (int r = 0; r < VFGX_DROP_MAX; r++)
		fprintf(f, "vfgx_pipeline_drops_total{device=\"%s\",reason=\"%s\"} %" PRIu64 "\n",
			dev, vfgx_drop_reason_name((enum vfgx_drop_reason)r),
			p->drops[r]);
	if (s->has_order_errors)
		pipeline_counter(f, dev, "vfgx_pipeline_order_errors_total",
				 s->gpu ? "Out-of-order deliveries counted on the GPU." :
					  "Out-of-order deliveries seen by the in-order checker.",
				 s->order_errors);
	format_latency(f, dev, p);
}

/* pipeline.chunks: what became of chunks and of the records in them */
static void format_chunks(FILE *f, const struct vfgx_metrics_snapshot *s)
{
	const struct vfgx_chunk_stats *c = &s->chunks;
	const char *dev = s->gpu ? "gpu" : "cpu";
	const struct {
		const char *label;
		uint64_t v;
	} chunks[] = {
		{ "complete", c->complete }, { "closed", c->closed }, { "skipped", c->skipped },
	}, packets[] = {
		{ "placed", c->placed }, { "missing", c->missing }, { "late", c->late },
		{ "duplicate", c->duplicates }, { "out_of_range", c->out_of_range },
		{ "backpressure_drop", c->backpressure_drops },
	};

	help_type(f, "vfgx_chunks_total", "counter",
		  "Chunks made ready, by state (complete, closed with slots missing), and chunks skipped with no packet.");
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++)
		fprintf(f, "vfgx_chunks_total{device=\"%s\",state=\"%s\"} %" PRIu64 "\n",
			dev, chunks[i].label, chunks[i].v);
	help_type(f, "vfgx_chunk_slots_total", "counter",
		  "Chunk slots and records by what became of them (placed, missing in closed chunks, late, duplicate, out of range, dropped at stop while waiting).");
	for (size_t i = 0; i < sizeof(packets) / sizeof(packets[0]); i++)
		fprintf(f, "vfgx_chunk_slots_total{device=\"%s\",kind=\"%s\"} %" PRIu64 "\n",
			dev, packets[i].label, packets[i].v);
	pipeline_counter(f, dev, "vfgx_chunk_backpressure_waits_total",
			 "Times the pipeline waited for a chunk the consumer held.", c->backpressure);
	pipeline_counter(f, dev, "vfgx_chunks_handed_out_total",
			 "Chunks the consumer took.", c->handed_out);
	pipeline_counter(f, dev, "vfgx_chunks_returned_total",
			 "Chunks the consumer gave back.", c->returned);
	help_type(f, "vfgx_chunk_memory_bytes", "gauge", "Memory of all chunk rings.");
	fprintf(f, "vfgx_chunk_memory_bytes{device=\"%s\"} %" PRIu64 "\n", dev, c->chunk_bytes);
}

static void mon_link(FILE *f, const char *name, const char *which,
		     const struct gpurdma_mon_link *l, double v)
{
	if (l->present)
		fprintf(f, "%s{device=\"%s\"} %.17g\n", name, which, v);
}

static void format_mon(FILE *f, const struct gpurdma_mon_telemetry *t)
{
	const struct gpurdma_mon_link *gpu = &t->gpu, *nic = &t->nic;

	help_type(f, "vfgx_mon_link_checks_total", "counter",
		  "gpurdma_mon periodic PCIe link checks.");
	fprintf(f, "vfgx_mon_link_checks_total %" PRIu64 "\n", (uint64_t)t->link_checks);
	help_type(f, "vfgx_mon_events_total", "counter", "gpurdma_mon events raised.");
	fprintf(f, "vfgx_mon_events_total %" PRIu64 "\n", (uint64_t)t->events);
	help_type(f, "vfgx_mon_publishes_total", "counter",
		  "Counter publishes gpurdma_mon accepted.");
	fprintf(f, "vfgx_mon_publishes_total %" PRIu64 "\n", (uint64_t)t->publishes);
	help_type(f, "vfgx_mon_clients", "gauge", "Open gpurdma_mon file descriptors.");
	fprintf(f, "vfgx_mon_clients %u\n", t->clients);
	help_type(f, "vfgx_mon_pool_pressure_ratio", "gauge",
		  "Pool occupancy last published (0..1).");
	fprintf(f, "vfgx_mon_pool_pressure_ratio %.2f\n", t->pressure_pct / 100.0);
	help_type(f, "vfgx_mon_rx_bytes_per_second", "gauge",
		  "Receive rate between the last two publishes.");
	fprintf(f, "vfgx_mon_rx_bytes_per_second %.17g\n", (double)t->rx_mbps * 125000);
	help_type(f, "vfgx_mon_estimated_bandwidth_bytes_per_second", "gauge",
		  "GPU to NIC peer-to-peer bandwidth estimate.");
	fprintf(f, "vfgx_mon_estimated_bandwidth_bytes_per_second %.17g\n",
		(double)t->est_bw_mbps * 125000);
	help_type(f, "vfgx_mon_numa_mismatch", "gauge", "1 when GPU and NIC sit on different NUMA nodes.");
	fprintf(f, "vfgx_mon_numa_mismatch %u\n", t->numa_mismatch ? 1 : 0);
	help_type(f, "vfgx_mon_same_switch", "gauge", "1 when GPU and NIC share a PCIe switch.");
	fprintf(f, "vfgx_mon_same_switch %u\n", t->same_switch ? 1 : 0);
	if (!gpu->present && !nic->present)
		return;
	help_type(f, "vfgx_mon_link_width", "gauge", "Current PCIe link width (lanes).");
	mon_link(f, "vfgx_mon_link_width", "gpu", gpu, gpu->cur_width);
	mon_link(f, "vfgx_mon_link_width", "nic", nic, nic->cur_width);
	help_type(f, "vfgx_mon_link_max_width", "gauge", "Maximum PCIe link width (lanes).");
	mon_link(f, "vfgx_mon_link_max_width", "gpu", gpu, gpu->max_width);
	mon_link(f, "vfgx_mon_link_max_width", "nic", nic, nic->max_width);
	help_type(f, "vfgx_mon_link_lane_speed_bytes_per_second", "gauge",
		  "Current PCIe link speed per lane.");
	mon_link(f, "vfgx_mon_link_lane_speed_bytes_per_second", "gpu", gpu, gpu->cur_speed * 125000.0);
	mon_link(f, "vfgx_mon_link_lane_speed_bytes_per_second", "nic", nic, nic->cur_speed * 125000.0);
	help_type(f, "vfgx_mon_link_degraded", "gauge", "1 when the link runs below its maximum.");
	mon_link(f, "vfgx_mon_link_degraded", "gpu", gpu, gpu->degraded ? 1 : 0);
	mon_link(f, "vfgx_mon_link_degraded", "nic", nic, nic->degraded ? 1 : 0);
	help_type(f, "vfgx_mon_link_bandwidth_bytes_per_second", "gauge",
		  "Usable bandwidth of the current link.");
	mon_link(f, "vfgx_mon_link_bandwidth_bytes_per_second", "gpu", gpu, (double)gpu->bw_mbps * 125000);
	mon_link(f, "vfgx_mon_link_bandwidth_bytes_per_second", "nic", nic, (double)nic->bw_mbps * 125000);
}

static void format_info(FILE *f, const char *program, bool published,
			bool finished)
{
	help_type(f, "vfgx_info", "gauge", "Build and program of this endpoint.");
	fputs("vfgx_info{version=\"" VFGX_VERSION "\",program=\"", f);
	label_value(f, program ? program : "");
	fputs("\"} 1\n", f);
	help_type(f, "vfgx_snapshot_published", "gauge",
		  "1 once the program published counters.");
	fprintf(f, "vfgx_snapshot_published %d\n", published ? 1 : 0);
	help_type(f, "vfgx_run_finished", "gauge",
		  "1 when the counters are final (the run ended).");
	fprintf(f, "vfgx_run_finished %d\n", finished ? 1 : 0);
}

int vfgx_metrics_format(FILE *f, const struct vfgx_metrics_snapshot *snap)
{
	format_info(f, snap->program, true, snap->finished);
	format_queues(f, snap);
	format_pipeline(f, snap);
	if (snap->has_chunks)
		format_chunks(f, snap);
	if (snap->has_mon)
		format_mon(f, &snap->mon);
	return ferror(f) ? -EIO : 0;
}

uint32_t vfgx_metrics_snapshot_ports(struct vfgx_metrics_queue *qs, uint32_t cap,
				     vfgx_port *const *ports, uint16_t nb_ports)
{
	uint32_t n = 0;

	for (uint16_t i = 0; i < nb_ports; i++)
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]) && n < cap; q++) {
			struct vfgx_metrics_queue *mq = &qs[n++];

			mq->port = vfgx_port_name(ports[i]);
			mq->backend = vfgx_port_backend(ports[i]);
			mq->queue = q;
			vfgx_port_stats(ports[i], q, &mq->st);
		}
	return n;
}

/* --- the server ------------------------------------------------------------ */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status,
			     char *body, size_t len, const char *type)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_data_size, void **req_cls)
{
	struct vfgx_metrics *m = cls;
	char *body = NULL;
	size_t len = 0;
	FILE *f;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)req_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, strdup("GET /metrics\n"),
			     13, "text/plain");
	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, strdup("GET /metrics\n"), 13,
			     "text/plain");
	f = open_memstream(&body, &len);
	if (!f)
		return MHD_NO;
	/* formatted under the lock: the snapshot's names live in the server,
	 * and the publisher waits at most one page's formatting */
	pthread_mutex_lock(&m->lock);
	if (m->published)
		vfgx_metrics_format(f, &m->snap);
	else
		format_info(f, m->snap.program, false, false);
	pthread_mutex_unlock(&m->lock);
	help_type(f, "vfgx_metrics_deadline_closed_total", "counter",
		  "Connections to this endpoint shut down: no request answered within 5 s of their start or last answer.");
	fprintf(f, "vfgx_metrics_deadline_closed_total %" PRIu64 "\n",
		atomic_load(&m->deadline_closed));
	fclose(f);
	atomic_fetch_add(&m->scrapes, 1);
	return reply(conn, MHD_HTTP_OK, body, len,
		     "text/plain; version=0.0.4; charset=utf-8");
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void notify_conn(void *cls, struct MHD_Connection *conn,
			void **socket_context, enum MHD_ConnectionNotificationCode code)
{
	struct vfgx_metrics *m = cls;
	struct metrics_conn *mc = *socket_context;

	pthread_mutex_lock(&m->conns_lock);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		/* never more than METRICS_MAX_CONNS (the daemon's limit) */
		for (unsigned i = 0; ci && i < METRICS_MAX_CONNS; i++) {
			if (m->conns[i].fd < 0) {
				m->conns[i] = (struct metrics_conn){
					.fd = ci->connect_fd, .since_ns = mono_ns()
				};
				*socket_context = &m->conns[i];
				break;
			}
		}
	} else if (mc) {
		mc->fd = -1;
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&m->conns_lock);
}

/* An answered request restarts the connection's deadline (keep-alive). */
static void request_done(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct vfgx_metrics *m = cls;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct metrics_conn *mc = ci ? ci->socket_context : NULL;

	(void)req_cls;
	(void)toe;
	pthread_mutex_lock(&m->conns_lock);
	if (mc && mc->fd >= 0)
		mc->since_ns = mono_ns();
	pthread_mutex_unlock(&m->conns_lock);
}

/* Shut down connections past their deadline; libmicrohttpd's thread sees
 * the end of the stream and closes them as it closes any other. */
static void *sweep_conns(void *arg)
{
	struct vfgx_metrics *m = arg;
	struct timespec until;

	pthread_mutex_lock(&m->conns_lock);
	while (!m->stopping) {
		uint64_t now = mono_ns();

		for (unsigned i = 0; i < METRICS_MAX_CONNS; i++) {
			struct metrics_conn *mc = &m->conns[i];

			if (mc->fd < 0 || mc->shut ||
			    now - mc->since_ns < METRICS_REQUEST_S * 1000000000ull)
				continue;
			shutdown(mc->fd, SHUT_RDWR);
			mc->shut = true;
			atomic_fetch_add(&m->deadline_closed, 1);
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += METRICS_SWEEP_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&m->stop_cond, &m->conns_lock, &until);
	}
	pthread_mutex_unlock(&m->conns_lock);
	return NULL;
}

static int parse_listen(vfgx_ctx *ctx, const char *listen,
			struct sockaddr_storage *ss, bool *v6)
{
	char host[64], err[VFGX_NUM_ERR_MAX];
	const char *colon;
	uint64_t port;
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	if (listen[0] == '[') {
		const char *close = strchr(listen, ']');

		if (!close || close[1] != ':')
			goto bad;
		hl = (size_t)(close - listen - 1);
		colon = close + 1;
		if (hl >= sizeof(host))
			goto bad;
		memcpy(host, listen + 1, hl);
	} else {
		colon = strrchr(listen, ':');
		if (!colon)
			goto bad;
		hl = (size_t)(colon - listen);
		if (hl >= sizeof(host))
			goto bad;
		memcpy(host, listen, hl);
	}
	host[hl] = '\0';
	/* the project's number rules: "+80", " 80", "0080", "\n80" are not 80 */
	if (vfgx_num_u64(colon + 1, 0, 65535, 0, &port, err, sizeof(err)))
		return vfgx_set_error(ctx, -EINVAL,
				      "metrics: '%s': port %s; expected ADDR:PORT (127.0.0.1:9464, [::1]:9464 or :9464)",
				      listen, err);
	*v6 = listen[0] == '[';
	if (*v6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			goto bad;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		if (!host[0])
			a->sin_addr.s_addr = htonl(INADDR_ANY);
		else if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			goto bad;
	}
	return 0;
bad:
	return vfgx_set_error(ctx, -EINVAL,
			      "metrics: '%s': expected ADDR:PORT (127.0.0.1:9464, [::1]:9464 or :9464), port 0..65535",
			      listen);
}

int vfgx_metrics_start(vfgx_ctx *ctx, const char *listen, vfgx_metrics **out)
{
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	struct vfgx_metrics *m;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD; /* errors: ours, one line */
	bool v6 = false;
	int ret;

	*out = NULL;
	ret = parse_listen(ctx, listen, &ss, &v6);
	if (ret)
		return ret;
	m = calloc(1, sizeof(*m));
	if (!m)
		return vfgx_set_error(ctx, -ENOMEM, "metrics: out of memory");
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->conns_lock, NULL);
	pthread_cond_init(&m->stop_cond, NULL);
	for (unsigned i = 0; i < METRICS_MAX_CONNS; i++)
		m->conns[i].fd = -1;
	if (v6)
		flags |= MHD_USE_IPv6;
	/* port argument is ignored when MHD_OPTION_SOCK_ADDR is given */
	m->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, m,
				     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				     MHD_OPTION_CONNECTION_LIMIT, METRICS_MAX_CONNS,
				     MHD_OPTION_PER_IP_CONNECTION_LIMIT, METRICS_PER_SOURCE,
				     MHD_OPTION_CONNECTION_TIMEOUT, METRICS_IDLE_S,
				     MHD_OPTION_NOTIFY_CONNECTION, notify_conn, m,
				     MHD_OPTION_NOTIFY_COMPLETED, request_done, m,
				     MHD_OPTION_END);
	if (!m->daemon) {
		ret = errno ? -errno : -EADDRINUSE;
		goto err_free;
	}
	ret = -pthread_create(&m->sweeper, NULL, sweep_conns, m);
	if (ret) {
		MHD_stop_daemon(m->daemon);
		goto err_free;
	}
	info = MHD_get_daemon_info(m->daemon, MHD_DAEMON_INFO_BIND_PORT);
	m->port = info ? info->port : 0;
	*out = m;
	return 0;
err_free:
	pthread_cond_destroy(&m->stop_cond);
	pthread_mutex_destroy(&m->conns_lock);
	pthread_mutex_destroy(&m->lock);
	free(m);
	return vfgx_set_error(ctx, ret, "metrics: cannot serve on %s: %s", listen,
			      strerror(-ret));
}

uint16_t vfgx_metrics_port(const vfgx_metrics *m)
{
	return m->port;
}

/* A copy of s owned by the server: the old one when equal (names rarely
 * change, and publishing stays an allocation-free copy then). */
static int keep_name(const char **dst, const char *s)
{
	char *c;

	if (*dst && s && !strcmp(*dst, s))
		return 0;
	c = s ? strdup(s) : NULL;
	if (s && !c)
		return -ENOMEM;
	free((char *)*dst);
	*dst = c;
	return 0;
}

int vfgx_metrics_publish(vfgx_metrics *m,
			 const struct vfgx_metrics_snapshot *user_snap)
{
	struct vfgx_metrics_snapshot snap;
	struct vfgx_metrics_queue *qs;
	int ret = 0;

	if (vfgx_argsz_copy(&snap, sizeof(snap), user_snap, sizeof(snap)) ||
	    (snap.nb_queues && !snap.queues))
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	if (snap.nb_queues > m->queues_cap) {
		qs = realloc(m->queues, snap.nb_queues * sizeof(*qs));
		if (!qs) {
			ret = -ENOMEM;
			goto out;
		}
		memset(qs + m->queues_cap, 0,
		       (snap.nb_queues - m->queues_cap) * sizeof(*qs));
		m->queues = qs;
		m->queues_cap = snap.nb_queues;
	}
	for (uint32_t i = 0; i < snap.nb_queues; i++) {
		struct vfgx_metrics_queue *d = &m->queues[i];
		const struct vfgx_metrics_queue *q = &snap.queues[i];

		if ((ret = keep_name(&d->port, q->port)) ||
		    (ret = keep_name(&d->backend, q->backend)))
			goto out;
		d->queue = q->queue;
		d->st = q->st;
	}
	if ((ret = keep_name(&m->program, snap.program)))
		goto out;
	snap.program = m->program;
	snap.queues = m->queues;
	m->snap = snap;
	m->published = true;
out:
	pthread_mutex_unlock(&m->lock);
	return ret;
}

uint64_t vfgx_metrics_scrapes(const vfgx_metrics *m)
{
	return atomic_load(&((struct vfgx_metrics *)m)->scrapes);
}

void vfgx_metrics_stop(vfgx_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->conns_lock);
	m->stopping = true;
	pthread_cond_signal(&m->stop_cond);
	pthread_mutex_unlock(&m->conns_lock);
	pthread_join(m->sweeper, NULL);
	MHD_stop_daemon(m->daemon); /* closes the rest: notify_conn */
	pthread_cond_destroy(&m->stop_cond);
	pthread_mutex_destroy(&m->conns_lock);
	pthread_mutex_destroy(&m->lock);
	for (uint32_t i = 0; i < m->queues_cap; i++) {
		free((char *)m->queues[i].port);
		free((char *)m->queues[i].backend);
	}
	free(m->queues);
	free((char *)m->program);
	free(m);
}
