/* test_config.c - the YAML loader: defaults, a full config, and each kind
 * of bad input producing one precise file:line:col message. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>

static vfgx_ctx *ctx;

static int setup(void **state)
{
	(void)state;
	return vfgx_ctx_create(&ctx);
}

static int teardown(void **state)
{
	(void)state;
	vfgx_ctx_destroy(ctx);
	return 0;
}

static int load(const char *y, struct vfgx_config **cfg)
{
	return vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", cfg);
}

static void expect_error(const char *yaml, const char *needle)
{
	struct vfgx_config *cfg = NULL;
	int ret = load(yaml, &cfg);

	assert_int_equal(ret, -EINVAL);
	assert_null(cfg);
	if (!strstr(vfgx_last_error(ctx), needle))
		fail_msg("error '%s' lacks '%s'", vfgx_last_error(ctx), needle);
}

static void test_default_config(void **state)
{
	struct vfgx_config *cfg;

	(void)state;
	assert_int_equal(vfgx_config_load_default(ctx, &cfg), 0);
	assert_int_equal(cfg->nb_ifaces, 1);
	assert_string_equal(cfg->ifaces[0].backend, "loopback");
	assert_int_equal(cfg->ifaces[0].nb_rx_queues, 2);
	assert_true(cfg->expect.all_received);
	assert_int_equal(cfg->pipeline.reorder_window, 1024);
	vfgx_config_destroy(cfg);
}

static void test_full_config(void **state)
{
	struct vfgx_config *cfg;
	struct vfgx_cfg_node n;
	uint64_t v;

	(void)state;
	assert_int_equal(load("log_level: debug\n"
			      "memory_regions:\n"
			      "  - {name: a, kind: hugepage, buf_size: 4096, num_bufs: 10}\n"
			      "interfaces:\n"
			      "  - name: x\n"
			      "    backend: loopback\n"
			      "    rx:\n"
			      "      queues:\n"
			      "        - {id: 0, memory_region: a, batch_size: 32}\n"
			      "    loopback: {packets: 77}\n"
			      "pipeline:\n"
			      "  device: cpu\n"
			      "  workers: 3\n"
			      "  filter: {udp_dst_ports: [53, '1000-2000']}\n"
			      "  reorder: {enabled: false, window: 64}\n"
			      "expect: {min_packets: 5}\n",
			      &cfg),
			 0);
	assert_int_equal(cfg->log_level, VFGX_LOG_DEBUG);
	assert_int_equal(cfg->regions[0].kind, VFGX_MEM_HUGEPAGE);
	assert_int_equal(cfg->regions[0].buf_size, 4096);
	assert_int_equal(cfg->ifaces[0].rx_queues[0].batch_size, 32);
	assert_string_equal(cfg->ifaces[0].rx_queues[0].region, "a");
	assert_int_equal(cfg->pipeline.device, VFGX_DEVICE_CPU);
	assert_int_equal(cfg->pipeline.workers, 3);
	assert_int_equal(cfg->pipeline.nb_port_ranges, 2);
	assert_int_equal(cfg->pipeline.port_ranges[1].lo, 1000);
	assert_int_equal(cfg->pipeline.port_ranges[1].hi, 2000);
	assert_false(cfg->pipeline.reorder);
	assert_int_equal(cfg->expect.min_packets, 5);
	/* the backend section is handed over as a node */
	assert_true(vfgx_cfg_present(&cfg->ifaces[0].opts));
	assert_int_equal(vfgx_cfg_u64(&cfg->ifaces[0].opts, "packets", 1, 0, 100, &v), 0);
	assert_int_equal(v, 77);
	assert_int_equal(vfgx_cfg_child(&cfg->ifaces[0].opts, "nope", &n), -ENOENT);
	vfgx_config_destroy(cfg);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("bogus: 1\n", "t.yaml:1:1: bogus: unknown key (allowed:");
	expect_error("interfaces:\n  - backend: loopback\n    rx:\n      queues:\n        - {id: 0, batch_size: 5000}\n",
		     "t.yaml:5:31: interfaces[0].rx.queues[0].batch_size: 5000 is out of range (must be 1..1024)");
	expect_error("pipeline:\n  workers: many\n",
		     "t.yaml:2:12: pipeline.workers: 'many' is not a whole number");
	expect_error("pipeline:\n  device: tpu\n", "'tpu' is not allowed (use one of: auto, cpu, gpu)");
	expect_error("pipeline:\n  reorder: {window: 1000}\n", "not a power of two");
	expect_error("interfaces:\n  - backend: carrier-pigeon\n", "use one of: loopback, socket, afxdp, dpdk, rdma");
	expect_error("interfaces:\n  - backend: loopback\n    rx: {queues: [{id: 0, memory_region: nope}]}\n",
		     "'nope' is not defined under memory_regions");
	expect_error("interfaces:\n  - backend: loopback\n    afxdp: {}\n", "section for backend 'afxdp'");
	expect_error("pipeline: [1, 2]\n", "pipeline: must be a mapping");
	expect_error("pipeline:\n  workers: 1\n  workers: 2\n", "duplicate key");
	expect_error("pipeline:\n  filter: {udp_dst_ports: ['9-3']}\n", "LO <= HI");
	expect_error("a: [\n", "t.yaml:2:1: YAML syntax");
	expect_error("", "empty configuration");
	expect_error("expect: {verified: maybe}\n", "not a boolean");
	expect_error("memory_regions:\n  - {name: a}\n  - {name: a}\n", "used twice");
}

static void test_missing_file(void **state)
{
	struct vfgx_config *cfg;

	(void)state;
	assert_int_equal(vfgx_config_load_file(ctx, "/nonexistent/x.yaml", &cfg), -ENOENT);
	assert_non_null(strstr(vfgx_last_error(ctx), "/nonexistent/x.yaml: cannot open config"));
}

static void test_shipped_configs_load(void **state)
{
	static const char *const files[] = { "configs/loopback.yaml", "configs/loopback-faults.yaml" };
	struct vfgx_config *cfg;

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (vfgx_config_load_file(ctx, files[i], &cfg))
			fail_msg("%s: %s", files[i], vfgx_last_error(ctx));
		vfgx_config_destroy(cfg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_config),
		cmocka_unit_test(test_full_config),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_shipped_configs_load),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
