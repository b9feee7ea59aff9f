/* test_mon.c - the gpurdma_mon client without the driver (the guest test in
 * tests/vm/mon covers it with the driver): clear errors for a missing or
 * wrong device, a publisher that stays silent, counters collected from a
 * real loopback port, event formatting. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/mon.h>
#include <vfgx/vfgx.h>

#include "unit_ctx.h"

static int loud_logs; /* messages above DEBUG */

static void sink(void *user, enum vfgx_log_level level, const char *msg)
{
	(void)user;
	(void)msg;
	if (level < VFGX_LOG_DEBUG)
		loud_logs++;
}

static void test_open_missing(void **state)
{
	vfgx_mon *m = (vfgx_mon *)1;

	(void)state;
	assert_int_equal(vfgx_mon_open(ctx, "/nonexistent/gpurdma_mon", &m),
			 -ENOENT);
	assert_null(m);
	assert_non_null(strstr(vfgx_last_error(ctx),
			       "/nonexistent/gpurdma_mon: no such device"));
	assert_non_null(strstr(vfgx_last_error(ctx), "modprobe gpurdma_mon"));
	/* the environment names the device when the caller does not */
	setenv("VFGX_MON_DEV", "/nonexistent/other", 1);
	assert_int_equal(vfgx_mon_open(ctx, NULL, &m), -ENOENT);
	assert_non_null(strstr(vfgx_last_error(ctx), "/nonexistent/other"));
}

static void test_open_wrong_device(void **state)
{
	vfgx_mon *m;

	(void)state;
	/* a character device that does not speak the ioctls */
	assert_int_equal(vfgx_mon_open(ctx, "/dev/null", &m), -ENOTTY);
	assert_null(m);
	assert_non_null(strstr(vfgx_last_error(ctx), "/dev/null: GET_VERSION failed"));
}

static void never_called(void *user, struct gpurdma_mon_publish *p)
{
	(void)user;
	(void)p;
	fail_msg("collect called without a device");
}

static void test_publisher_silent_without_device(void **state)
{
	vfgx_mon_publisher *pub = (vfgx_mon_publisher *)1;

	(void)state;
	setenv("VFGX_MON_DEV", "/nonexistent/gpurdma_mon", 1);
	loud_logs = 0;
	vfgx_log_set_level(ctx, VFGX_LOG_DEBUG);
	vfgx_log_set_sink(ctx, sink, NULL);
	assert_int_equal(vfgx_mon_publisher_start(ctx, NULL, 1000, never_called,
						  NULL, &pub), 0);
	assert_null(pub);
	assert_string_equal(vfgx_last_error(ctx), "");
	vfgx_mon_publisher_stop(pub);
	assert_int_equal(vfgx_mon_publisher_count(pub), 0);
	assert_int_equal(loud_logs, 0);

	/* misuse is an error, device or not */
	assert_int_equal(vfgx_mon_publisher_start(ctx, NULL, 1000, NULL, NULL,
						  &pub), -EINVAL);
	assert_int_equal(vfgx_mon_publisher_start(ctx, NULL, 0, never_called,
						  NULL, &pub), -EINVAL);
	vfgx_log_set_sink(ctx, NULL, NULL);
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
}

static void test_pipeline_silent_without_device(void **state)
{
	static const char y[] =
		"interfaces:\n"
		"  - name: lo0\n"
		"    backend: loopback\n"
		"    rx: { queues: [ { id: 0 }, { id: 1 } ] }\n"
		"    loopback: { packets: 20000, flows: 2 }\n"
		"pipeline: { workers: 2, device: cpu }\n";
	struct vfgx_config *cfg;
	struct vfgx_pipeline_stats st;
	vfgx_pipeline *pl;
	vfgx_port *port;

	(void)state;
	setenv("VFGX_MON_DEV", "/nonexistent/gpurdma_mon", 1);
	loud_logs = 0;
	vfgx_log_set_level(ctx, VFGX_LOG_DEBUG);
	vfgx_log_set_sink(ctx, sink, NULL);
	assert_int_equal(vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg), 0);
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	assert_int_equal(vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl), 0);
	assert_int_equal(vfgx_mon_observe(ctx, pl, NULL, 1000), 0);
	assert_int_equal(vfgx_pipeline_start(pl), 0);
	while (!vfgx_pipeline_done(pl))
		;
	vfgx_pipeline_stop(pl);
	vfgx_pipeline_stats(pl, &st);
	assert_int_equal(st.delivered, 20000);
	assert_int_equal(loud_logs, 0);
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	vfgx_log_set_sink(ctx, NULL, NULL);
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
}

static void test_collect_from_port(void **state)
{
	static const char y[] =
		"memory_regions:\n"
		"  - { name: rx, kind: host, buf_size: 2048, num_bufs: 512 }\n"
		"interfaces:\n"
		"  - name: lo0\n"
		"    backend: loopback\n"
		"    rx: { queues: [ { id: 0, memory_region: rx }, { id: 1, memory_region: rx } ] }\n"
		"    loopback: { packets: 1000, flows: 2 }\n";
	struct gpurdma_mon_publish p;
	struct vfgx_queue_stats qs[2];
	struct vfgx_pkt pk[64];
	struct vfgx_config *cfg;
	vfgx_port *port;
	int n;

	(void)state;
	assert_int_equal(vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg), 0);
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	/* hold a burst of queue 0 so the pool shows buffers in use */
	n = vfgx_port_rx_burst(port, 0, pk, 64);
	assert_true(n > 0);
	vfgx_mon_collect(&port, 1, &p);
	assert_int_equal(p.nr_queues, 2);
	assert_int_equal(p.pool_total, 1024);
	assert_true(p.pool_used >= (uint32_t)n);
	vfgx_port_stats(port, 0, &qs[0]);
	vfgx_port_stats(port, 1, &qs[1]);
	assert_int_equal(p.q[0].rx_packets, qs[0].rx_packets);
	assert_int_equal(p.q[0].rx_bytes, qs[0].rx_bytes);
	assert_int_equal(p.q[1].rx_packets, qs[1].rx_packets);
	assert_int_equal(p.q[0].rx_packets, (uint64_t)n);
	vfgx_port_release(port, 0, pk, (uint16_t)n);
	vfgx_mon_collect(&port, 1, &p);
	assert_int_equal(p.pool_used, 0);

	/* queues past the last slot fold into it */
	struct vfgx_mon_queue_snap s = { .c = { .rx_packets = 3 } };

	memset(&p, 0, sizeof(p));
	vfgx_mon_queue_add(&p, GPURDMA_MON_MAX_QUEUES - 1, &s);
	vfgx_mon_queue_add(&p, GPURDMA_MON_MAX_QUEUES + 5, &s);
	assert_int_equal(p.q[GPURDMA_MON_MAX_QUEUES - 1].rx_packets, 6);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static void test_format_event(void **state)
{
	struct gpurdma_mon_event ev = {
		.seq = 42,
		.timestamp_ns = 3000000001ull,
		.type = GPURDMA_MON_EV_PRESSURE,
		.severity = GPURDMA_MON_SEV_CRIT,
		.source = GPURDMA_MON_SRC_LIB,
		.lost = 3,
		.value = 100,
		.threshold = 90,
	};
	char line[256];

	(void)state;
	memset(ev.detail, 'x', sizeof(ev.detail)); /* unterminated */
	vfgx_mon_format_event(&ev, line, sizeof(line));
	assert_non_null(strstr(line, "#42 3.000000001 PRESSURE"));
	assert_non_null(strstr(line, "crit lib value=100 threshold=90"));
	assert_non_null(strstr(line, "(3 lost before)"));
	assert_int_equal(strlen(strchr(line, '"') + 1) - strlen(strrchr(line, '"')),
			 GPURDMA_MON_DETAIL_LEN);
	assert_string_equal(vfgx_mon_event_name(99), "UNKNOWN");
	assert_string_equal(vfgx_mon_event_name(GPURDMA_MON_EV_LINK_DEGRADED),
			    "LINK_DEGRADED");
	assert_string_equal(vfgx_mon_severity_name(7), "unknown");
	/* the uapi layout is fixed: sizes are part of the ABI */
	assert_int_equal(sizeof(struct gpurdma_mon_event), 112);
	assert_int_equal(sizeof(struct gpurdma_mon_link), 48);
	assert_int_equal(sizeof(struct gpurdma_mon_telemetry), 160);
	assert_int_equal(sizeof(struct gpurdma_mon_threshold), 16);
	assert_int_equal(sizeof(struct gpurdma_mon_publish), 32 + 40 * GPURDMA_MON_MAX_QUEUES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_missing),
		cmocka_unit_test(test_open_wrong_device),
		cmocka_unit_test(test_publisher_silent_without_device),
		cmocka_unit_test(test_pipeline_silent_without_device),
		cmocka_unit_test(test_collect_from_port),
		cmocka_unit_test(test_format_event),
	};

	return cmocka_run_group_tests(tests, ctx_quiet_setup, ctx_teardown);
}
