/* test_metrics.c - the Prometheus endpoint over real HTTP on loopback: the
 * page before and after a publish, histogram buckets cumulative with +Inf =
 * _count, label values escaped, gpurdma_mon telemetry when present, 404
 * for other paths, malformed listen addresses refused; promtool (when
 * installed) accepts a page with every section. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <vfgx/vfgx.h>

static char *http_get(uint16_t port, const char *path)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	char req[256], *buf = calloc(1, 1 << 20);
	size_t len = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0 && buf);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while ((n = read(fd, buf + len, (1 << 20) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	return buf;
}

static char queue_name[32];
static struct vfgx_metrics_queue queue0;

static void fill(struct vfgx_metrics_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->argsz = sizeof(*s);
	s->program = "test";
	s->pipeline.packets = 1000;
	s->pipeline.delivered = 990;
	s->pipeline.gaps = 3;
	s->pipeline.drops[VFGX_DROP_DUPLICATE] = 7;
	s->pipeline.lat_hist[10] = 600;  /* [1024, 2048) ns */
	s->pipeline.lat_hist[12] = 400;  /* [4096, 8192) ns */
	s->has_order_errors = true;
	s->nb_queues = 1;
	s->queues = &queue0;
	snprintf(queue_name, sizeof(queue_name), "we\"ird\\name");
	memset(&queue0, 0, sizeof(queue0));
	queue0.port = queue_name;
	queue0.backend = "loopback";
	queue0.st.rx_packets = 1000;
	queue0.st.drops[VFGX_DROP_NOBUFS] = 2;
	s->has_mon = true;
	s->mon.gpu.present = 1;
	s->mon.gpu.cur_width = 8;
	s->mon.gpu.max_width = 16;
	s->mon.gpu.cur_speed = 16000;
	s->mon.gpu.degraded = 1;
	s->mon.events = 5;
	s->mon.link_checks = 42;
	s->mon.pressure_pct = 37;
}

static void test_served_page(void **state)
{
	struct vfgx_metrics_snapshot *s = malloc(sizeof(*s));
	vfgx_metrics *m;
	vfgx_ctx *ctx;
	char *page;

	(void)state;
	assert_int_equal(vfgx_ctx_create(&ctx), 0);
	assert_int_equal(vfgx_metrics_start(ctx, "127.0.0.1:0", &m), 0);
	assert_true(vfgx_metrics_port(m) > 0);

	page = http_get(vfgx_metrics_port(m), "/metrics");
	assert_non_null(strstr(page, "HTTP/1.0 200") ? page : strstr(page, "HTTP/1.1 200"));
	assert_non_null(strstr(page, "text/plain; version=0.0.4"));
	assert_non_null(strstr(page, "\nvfgx_snapshot_published 0\n"));
	assert_null(strstr(page, "vfgx_pipeline_packets_total"));
	free(page);

	fill(s);
	assert_int_equal(vfgx_metrics_publish(m, s), 0);
	/* publish copied the snapshot, names included */
	snprintf(queue_name, sizeof(queue_name), "changed");
	memset(s, 0xff, sizeof(*s));
	page = http_get(vfgx_metrics_port(m), "/metrics");
	assert_non_null(strstr(page, "\nvfgx_snapshot_published 1\n"));
	assert_non_null(strstr(page, "\nvfgx_pipeline_packets_total{device=\"cpu\"} 1000\n"));
	assert_non_null(strstr(page, "\nvfgx_pipeline_gaps_total{device=\"cpu\"} 3\n"));
	assert_non_null(strstr(page, "\nvfgx_pipeline_drops_total{device=\"cpu\",reason=\"duplicate\"} 7\n"));
	/* cumulative: 600 up to 2048 ns, 1000 from 8192 ns, +Inf = _count */
	assert_non_null(strstr(page, "vfgx_pipeline_latency_seconds_bucket{device=\"cpu\",le=\"1.024e-06\"} 0\n"));
	assert_non_null(strstr(page, "vfgx_pipeline_latency_seconds_bucket{device=\"cpu\",le=\"2.048e-06\"} 600\n"));
	assert_non_null(strstr(page, "vfgx_pipeline_latency_seconds_bucket{device=\"cpu\",le=\"4.096e-06\"} 600\n"));
	assert_non_null(strstr(page, "vfgx_pipeline_latency_seconds_bucket{device=\"cpu\",le=\"8.192e-06\"} 1000\n"));
	assert_non_null(strstr(page, "vfgx_pipeline_latency_seconds_bucket{device=\"cpu\",le=\"+Inf\"} 1000\n"));
	assert_non_null(strstr(page, "vfgx_pipeline_latency_seconds_count{device=\"cpu\"} 1000\n"));
	/* label escaping */
	assert_non_null(strstr(page, "vfgx_port_rx_packets_total{port=\"we\\\"ird\\\\name\",backend=\"loopback\",queue=\"0\"} 1000\n"));
	assert_non_null(strstr(page, "reason=\"no_bufs\"} 2\n"));
	/* gpurdma_mon */
	assert_non_null(strstr(page, "\nvfgx_mon_events_total 5\n"));
	assert_non_null(strstr(page, "\nvfgx_mon_link_checks_total 42\n"));
	assert_non_null(strstr(page, "\nvfgx_mon_pool_pressure_ratio 0.37\n"));
	assert_non_null(strstr(page, "\nvfgx_mon_link_width{device=\"gpu\"} 8\n"));
	assert_non_null(strstr(page, "\nvfgx_mon_link_degraded{device=\"gpu\"} 1\n"));
	assert_null(strstr(page, "device=\"nic\"")); /* absent NIC: no series */
	free(page);

	page = http_get(vfgx_metrics_port(m), "/other");
	assert_non_null(strstr(page, " 404 "));
	free(page);
	/* a snapshot this library does not know is refused, the page kept */
	fill(s);
	s->argsz = 8;
	assert_int_equal(vfgx_metrics_publish(m, s), -EINVAL);
	s->argsz = sizeof(*s);
	s->queues = NULL;
	assert_int_equal(vfgx_metrics_publish(m, s), -EINVAL);
	page = http_get(vfgx_metrics_port(m), "/metrics");
	assert_non_null(strstr(page, "\nvfgx_pipeline_packets_total{device=\"cpu\"} 1000\n"));
	free(page);
	assert_true(vfgx_metrics_scrapes(m) >= 2);
	vfgx_metrics_stop(m);
	free(s);
	vfgx_ctx_destroy(ctx);
}

static void test_promtool(void **state)
{
	struct vfgx_metrics_snapshot *s = malloc(sizeof(*s));
	char path[] = "/tmp/vfgx-metrics-XXXXXX", cmd[256];
	FILE *f;
	int fd, rc;

	(void)state;
	if (system("command -v promtool >/dev/null 2>&1")) {
		free(s);
		printf("SKIP: test_promtool: promtool not installed (prometheus package)\n");
		skip();
	}
	fill(s);
	s->gpu = true;
	/* the chunk series too */
	s->has_chunks = true;
	s->chunks = (struct vfgx_chunk_stats){ .argsz = sizeof(s->chunks), .complete = 3,
					       .closed = 1, .placed = 390, .missing = 10,
					       .chunk_bytes = 1 << 20 };
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_int_equal(vfgx_metrics_format(f, s), 0);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s 2>&1", path);
	rc = system(cmd);
	unlink(path);
	free(s);
	assert_int_equal(rc, 0);
}

/* The endpoint attached as a pipeline observer: the final page holds the
 * counters of the finished run, per queue from the ports. */
static void test_observer(void **state)
{
	struct vfgx_loopback_opts lo;
	struct vfgx_port_conf pc = {
		.argsz = sizeof(pc), .name = "gen", .backend = "loopback",
		.nb_rx_queues = 2, .burst = 32, .backend_opts = &lo.hdr,
	};
	struct vfgx_pipeline_config conf;
	vfgx_pipeline *pl;
	vfgx_metrics *m;
	vfgx_port *port;
	vfgx_ctx *ctx;
	char *page;

	(void)state;
	assert_int_equal(vfgx_ctx_create(&ctx), 0);
	vfgx_loopback_opts_default(&lo);
	lo.packets = 5000;
	assert_int_equal(vfgx_port_open(ctx, &pc, &port), 0);
	vfgx_pipeline_config_default(&conf);
	conf.device = VFGX_DEVICE_CPU;
	assert_int_equal(vfgx_pipeline_create(ctx, &conf, &port, 1, &pl), 0);
	assert_int_equal(vfgx_metrics_start(ctx, "127.0.0.1:0", &m), 0);
	assert_int_equal(vfgx_metrics_observe(ctx, pl, m, "obs", 0), -EINVAL);
	assert_int_equal(vfgx_metrics_observe(ctx, pl, m, "obs", 10), 0);
	assert_int_equal(vfgx_pipeline_start(pl), 0);
	while (!vfgx_pipeline_done(pl)) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	vfgx_pipeline_stop(pl);
	vfgx_pipeline_destroy(pl);
	page = http_get(vfgx_metrics_port(m), "/metrics");
	assert_non_null(strstr(page, "program=\"obs\""));
	assert_non_null(strstr(page, "\nvfgx_run_finished 1\n"));
	assert_non_null(strstr(page, "\nvfgx_pipeline_delivered_total{device=\"cpu\"} 5000\n"));
	assert_non_null(strstr(page, "vfgx_port_rx_packets_total{port=\"gen\",backend=\"loopback\",queue=\"1\"}"));
	free(page);
	vfgx_port_close(port);
	vfgx_metrics_stop(m);
	vfgx_ctx_destroy(ctx);
}

/* With pipeline.chunks the page carries the chunk counters, equal to
 * vfgx_chunk_stats at the end. */
static void test_observer_chunks(void **state)
{
	struct vfgx_loopback_opts lo;
	struct vfgx_port_conf pc = {
		.argsz = sizeof(pc), .name = "gen", .backend = "loopback",
		.nb_rx_queues = 1, .burst = 32, .backend_opts = &lo.hdr,
	};
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	struct vfgx_pipeline_config conf;
	struct vfgx_chunk_config cc;
	vfgx_pipeline *pl;
	vfgx_metrics *m;
	vfgx_port *port;
	vfgx_ctx *ctx;
	char *page, want[128];

	(void)state;
	assert_int_equal(vfgx_ctx_create(&ctx), 0);
	vfgx_loopback_opts_default(&lo);
	lo.packets = 5000;
	lo.flows = 4;
	assert_int_equal(vfgx_port_open(ctx, &pc, &port), 0);
	vfgx_pipeline_config_default(&conf);
	conf.device = VFGX_DEVICE_CPU;
	vfgx_chunk_config_default(&cc);
	cc.payload_bytes = 512;
	cc.packets = 100;
	cc.streams = 4;
	cc.in_flight = 16; /* every chunk of the run fits: no consumer needed */
	conf.chunks = &cc;
	assert_int_equal(vfgx_pipeline_create(ctx, &conf, &port, 1, &pl), 0);
	assert_int_equal(vfgx_metrics_start(ctx, "127.0.0.1:0", &m), 0);
	assert_int_equal(vfgx_metrics_observe(ctx, pl, m, "obs", 10), 0);
	assert_int_equal(vfgx_pipeline_start(pl), 0);
	while (!vfgx_pipeline_done(pl)) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	vfgx_pipeline_stop(pl);
	assert_int_equal(vfgx_chunk_stats(pl, &cs), 0);
	page = http_get(vfgx_metrics_port(m), "/metrics");
	snprintf(want, sizeof(want), "\nvfgx_chunks_total{device=\"cpu\",state=\"complete\"} %llu\n",
		 (unsigned long long)cs.complete);
	assert_non_null(strstr(page, want));
	snprintf(want, sizeof(want), "\nvfgx_chunks_total{device=\"cpu\",state=\"closed\"} %llu\n",
		 (unsigned long long)cs.closed);
	assert_non_null(strstr(page, want));
	assert_non_null(strstr(page, "\nvfgx_chunk_slots_total{device=\"cpu\",kind=\"placed\"} 5000\n"));
	assert_true(cs.complete == 48 && cs.closed == 4);
	free(page);
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_metrics_stop(m);
	vfgx_ctx_destroy(ctx);
}

static void test_bad_listen(void **state)
{
	static const char *const bad[] = { "9464", "127.0.0.1", "127.0.0.1:", "1.2.3.4:65536",
					   "127.0.0.1:-1", "[::1]9464", "host:9464", "::1:9464" };
	vfgx_metrics *m = (vfgx_metrics *)1;
	vfgx_ctx *ctx;

	(void)state;
	assert_int_equal(vfgx_ctx_create(&ctx), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(vfgx_metrics_start(ctx, bad[i], &m), -EINVAL);
		assert_null(m);
		assert_non_null(strstr(vfgx_last_error(ctx), "ADDR:PORT"));
	}
	/* IPv6 loopback works where the host has it */
	if (vfgx_metrics_start(ctx, "[::1]:0", &m) == 0) {
		assert_true(vfgx_metrics_port(m) > 0);
		vfgx_metrics_stop(m);
	}
	vfgx_metrics_stop(NULL);
	vfgx_ctx_destroy(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_served_page),
		cmocka_unit_test(test_promtool),
		cmocka_unit_test(test_observer),
		cmocka_unit_test(test_observer_chunks),
		cmocka_unit_test(test_bad_listen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
