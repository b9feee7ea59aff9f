/* test_loopback.c - the loopback port end to end through the processor:
 * clean streams, injected faults accounted exactly, tx looped back,
 * malformed frames counted, pool exhaustion as backpressure, the threaded
 * runner. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>

static vfgx_ctx *ctx;

static struct vfgx_config *cfg_of(const char *y)
{
	struct vfgx_config *cfg;

	if (vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg))
		fail_msg("%s", vfgx_last_error(ctx));
	return cfg;
}

/* Drain every queue of port into proc until the source says done. */
static void drain(vfgx_port *port, vfgx_proc *proc)
{
	struct vfgx_pkt pk[256];
	bool done = false;

	for (int guard = 0; !done && guard < 10000000; guard++) {
		done = true;
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(port); q++) {
			int n = vfgx_port_rx_burst(port, q, pk, 256);

			assert_true(n >= 0);
			if (n) {
				vfgx_proc_burst(proc, pk, (uint32_t)n);
				vfgx_port_release(port, q, pk, (uint16_t)n);
			}
			if (n || !vfgx_port_rx_done(port, q))
				done = false;
		}
	}
	assert_true(done);
	vfgx_proc_flush(proc);
}

static void run_cfg(const char *yaml, struct vfgx_pipeline_stats *st,
		    struct vfgx_source_report *rep)
{
	struct vfgx_config *cfg = cfg_of(yaml);
	vfgx_port *port;
	vfgx_proc *proc;

	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	assert_int_equal(vfgx_proc_create(ctx, &cfg->pipeline, &proc), 0);
	drain(port, proc);
	vfgx_proc_stats(proc, st);
	memset(rep, 0, sizeof(*rep));
	for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(port); q++) {
		struct vfgx_source_report r;

		vfgx_port_source_report(port, q, &r);
		assert_true(r.known);
		rep->generated += r.generated;
		rep->lost += r.lost;
		rep->duplicated += r.duplicated;
		rep->corrupted += r.corrupted;
		rep->reordered += r.reordered;
	}
	vfgx_proc_destroy(proc);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static void test_clean_stream(void **state)
{
	struct vfgx_pipeline_stats st;
	struct vfgx_source_report rep;

	(void)state;
	run_cfg("interfaces:\n"
		"  - backend: loopback\n"
		"    rx: {queues: [{id: 0}, {id: 1}, {id: 2}]}\n"
		"    loopback: {packets: 30001, flows: 5, packet_size: 300}\n"
		"pipeline: {verify_payload: true}\n",
		&st, &rep);
	assert_int_equal(rep.generated, 30001);
	assert_int_equal(st.packets, 30001);
	assert_int_equal(st.delivered, 30001);
	assert_int_equal(st.delivered_bytes, 30001ull * (300 - 58));
	assert_int_equal(st.verify_errors, 0);
	assert_int_equal(st.gaps, 0);
	assert_int_equal(st.last_seen, 5);
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		assert_int_equal(st.drops[i], 0);
}

static void test_faults_accounted(void **state)
{
	struct vfgx_pipeline_stats st;
	struct vfgx_source_report rep;

	(void)state;
	run_cfg("interfaces:\n"
		"  - backend: loopback\n"
		"    rx: {queues: [{id: 0}, {id: 1}]}\n"
		"    loopback: {packets: 50000, flows: 4, packet_size: 128, loss: 0.03,\n"
		"               reorder: 0.1, reorder_distance: 7, duplicate: 0.05,\n"
		"               corrupt: 0.02, seed: 42}\n"
		"pipeline: {verify_payload: true, reorder: {window: 64}}\n",
		&st, &rep);
	assert_true(rep.lost > 0 && rep.duplicated > 0 && rep.corrupted > 0 && rep.reordered > 0);
	assert_int_equal(st.packets, rep.generated - rep.lost + rep.duplicated);
	assert_int_equal(st.delivered, rep.generated - rep.lost - rep.corrupted);
	assert_int_equal(st.drops[VFGX_DROP_BAD_UDP_CSUM], rep.corrupted);
	assert_int_equal(st.drops[VFGX_DROP_DUPLICATE] + st.drops[VFGX_DROP_LATE], rep.duplicated);
	assert_true(st.gaps <= rep.lost + rep.corrupted);
	assert_int_equal(st.verify_errors, 0);
}

static void test_tx_loops_back_malformed(void **state)
{
	struct vfgx_config *cfg = cfg_of("interfaces:\n"
					 "  - backend: loopback\n"
					 "    loopback: {packets: 0, rate_pps: 1}\n");
	struct vfgx_pkt_spec s = { .src_ip = 1, .dst_ip = 2, .src_port = 9,
				   .dst_port = 5000, .frame_len = 100,
				   .udp_csum = true };
	uint8_t good[128], bad[128];
	struct vfgx_pkt tx[3] = {
		{ .data = good, .len = 100 },
		{ .data = bad, .len = 100 },
		{ .data = good, .len = 20 }, /* truncated */
	};
	struct vfgx_pkt rx[8];
	struct vfgx_pipeline_stats st;
	struct vfgx_queue_stats qs;
	vfgx_port *port;
	vfgx_proc *proc;
	int n;

	(void)state;
	vfgx_pkt_build(good, sizeof(good), &s);
	memcpy(bad, good, 100);
	bad[14] = 0x46; /* IHL 24 > header: checksum no longer matches */
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	assert_int_equal(vfgx_proc_create(ctx, &cfg->pipeline, &proc), 0);
	assert_int_equal(vfgx_port_tx_burst(port, 0, tx, 3), 3);
	n = vfgx_port_rx_burst(port, 0, rx, 8);
	assert_true(n >= 3);
	assert_memory_equal(rx[0].data, good, 100);
	assert_int_equal(rx[2].len, 20);
	vfgx_proc_burst(proc, rx, 3);
	vfgx_port_release(port, 0, rx, (uint16_t)n);
	vfgx_proc_stats(proc, &st);
	assert_int_equal(st.passed, 1);
	assert_int_equal(st.drops[VFGX_DROP_BAD_IP_CSUM], 1);
	assert_int_equal(st.drops[VFGX_DROP_TRUNCATED], 1);
	vfgx_port_stats(port, 0, &qs);
	assert_int_equal(qs.tx_packets, 3);
	assert_int_equal(vfgx_port_tx_burst(port, 1, tx, 1), -EINVAL);
	assert_false(vfgx_port_rx_done(port, 0)); /* endless source */
	vfgx_proc_destroy(proc);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static void test_backpressure(void **state)
{
	struct vfgx_config *cfg = cfg_of("memory_regions: [{name: small, num_bufs: 8}]\n"
					 "interfaces:\n"
					 "  - backend: loopback\n"
					 "    rx: {queues: [{id: 0, memory_region: small}]}\n"
					 "    loopback: {packets: 20, flows: 1}\n");
	struct vfgx_pkt a[32], b[32];
	struct vfgx_queue_stats qs;
	vfgx_port *port;
	int n, m;

	(void)state;
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	n = vfgx_port_rx_burst(port, 0, a, 32);
	assert_int_equal(n, 8);
	/* pool empty: nothing produced, nothing overwritten, refusal counted */
	assert_int_equal(vfgx_port_rx_burst(port, 0, b, 32), 0);
	vfgx_port_stats(port, 0, &qs);
	assert_true(qs.drops[VFGX_DROP_NOBUFS] >= 1);
	for (int i = 0; i < n; i++)
		assert_int_equal(a[i].data[14 + 20 + 8 + 15], i); /* seq low byte intact */
	vfgx_port_release(port, 0, a, (uint16_t)n);
	m = vfgx_port_rx_burst(port, 0, b, 32);
	assert_int_equal(m, 8);
	assert_int_equal(b[0].data[14 + 20 + 8 + 15], 8); /* sequence resumes */
	vfgx_port_release(port, 0, b, (uint16_t)m);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static void test_open_errors(void **state)
{
	struct vfgx_config *cfg;
	vfgx_port *port;

	(void)state;
	cfg = cfg_of("interfaces:\n  - backend: loopback\n    loopback: {bogus: 1}\n");
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "interfaces[0].loopback.bogus: unknown key"));
	vfgx_config_destroy(cfg);
	cfg = cfg_of("memory_regions: [{name: tiny, buf_size: 128}]\n"
		     "interfaces:\n  - backend: loopback\n    rx: {queues: [{id: 0, memory_region: tiny}]}\n");
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "exceeds queue 0's buffer size"));
	vfgx_config_destroy(cfg);
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "p", .backend = "warp-drive",
				     .burst = 32 };

	assert_int_equal(vfgx_port_open(ctx, &pc, &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "unknown backend"));
}

static void test_threaded_runner(void **state)
{
	struct vfgx_config *cfg;
	vfgx_port *port;
	vfgx_pipeline *pl;
	struct vfgx_pipeline_stats st;

	(void)state;
	assert_int_equal(vfgx_config_load_default(ctx, &cfg), 0);
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	cfg->pipeline.device = VFGX_DEVICE_CPU; /* the worker threads */
	assert_int_equal(vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl), 0);
	assert_int_equal(vfgx_pipeline_start(pl), 0);
	while (!vfgx_pipeline_done(pl))
		;
	vfgx_pipeline_stop(pl);
	vfgx_pipeline_stats(pl, &st);
	assert_int_equal(st.delivered, 1000000);
	assert_int_equal(st.verify_errors, 0);
	assert_int_equal(vfgx_pipeline_error(pl), 0);
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_stream),
		cmocka_unit_test(test_faults_accounted),
		cmocka_unit_test(test_tx_loops_back_malformed),
		cmocka_unit_test(test_backpressure),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_threaded_runner),
	};
	int ret;

	vfgx_ctx_create(&ctx);
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	vfgx_ctx_destroy(ctx);
	return ret;
}
