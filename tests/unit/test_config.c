/* test_config.c - the YAML loader: defaults, a full config, and each kind
 * of bad input producing one precise file:line:col message, escaped, and
 * the strict number parser and the size and depth limits behind it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>

#include "core/numparse.h"

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
	/* expect: is vfgx run's section: passed over, readable through the
	 * document's root */
	struct vfgx_cfg_node root, ex;
	bool all = false;

	vfgx_config_root(cfg, &root);
	assert_int_equal(vfgx_cfg_child(&root, "expect", &ex), 0);
	assert_int_equal(vfgx_cfg_bool(&ex, "all_received", false, &all), 0);
	assert_true(all);
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
	struct vfgx_cfg_node root, ex;
	uint64_t minp = 0;

	vfgx_config_root(cfg, &root);
	assert_int_equal(vfgx_cfg_child(&root, "expect", &ex), 0);
	assert_int_equal(vfgx_cfg_u64(&ex, "min_packets", 1, 0, UINT64_MAX, &minp), 0);
	assert_int_equal(minp, 5);
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
	expect_error("pipeline: {reorder: {enabled: maybe}}\n", "not a boolean");
	expect_error("memory_regions:\n  - {name: a}\n  - {name: a}\n", "used twice");
}

/* One strict number parser: no base 0, sign, blanks, nan, inf, wrap. */
static void test_numbers(void **state)
{
	static const struct { const char *yaml, *needle; } bad[] = {
		{ "pipeline: {workers: 010}\n", "pipeline.workers: '010' has a leading zero" },
		{ "pipeline: {workers: 0x10}\n", "'0x10' is not a whole number" },
		{ "pipeline: {workers: +4}\n", "'+4' is not a whole number" },
		{ "pipeline: {workers: ' 4'}\n", "' 4' is not a whole number" },
		{ "pipeline: {workers: ''}\n", "'' is empty" },
		{ "pipeline: {workers: 4294967297}\n", "4294967297 is out of range (must be 1..64)" },
		{ "pipeline: {reorder: {max_memory: 18446744073709551616}}\n", "18446744073709551616 is out of range" },
		{ "pipeline: {duration_s: nan}\n", "'nan' is not a decimal number" },
		{ "pipeline: {duration_s: inf}\n", "'inf' is not a decimal number" },
		{ "pipeline: {duration_s: 1e300}\n", "1e300 is out of range" },
		{ "pipeline: {duration_s: 0x10}\n", "'0x10' is not a decimal number" },
		{ "pipeline: {duration_s: ''}\n", "'' is empty" },
		{ "pipeline: {filter: {udp_dst_ports: ['+80']}}\n", "'+80' is not a whole number" },
		{ "pipeline: {filter: {udp_dst_ports: ['80-']}}\n", "'' is empty" },
		{ "pipeline: {filter: {udp_dst_ports: ['080']}}\n", "leading zero" },
		{ "pipeline: {filter: {udp_dst_ports: ['65537']}}\n", "65537 is out of range" },
	};
	char err[VFGX_NUM_ERR_MAX];
	struct vfgx_config *cfg;
	uint64_t u = 7;
	double d = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_error(bad[i].yaml, bad[i].needle);
	assert_int_equal(load("pipeline: {workers: 10, duration_s: 2.5e1, filter: {udp_dst_ports: ['9-30', '0', '7']}}\n", &cfg), -EINVAL);
	assert_int_equal(load("pipeline: {workers: 10, duration_s: 2.5e1, filter: {udp_dst_ports: ['9-30', '7']}}\n", &cfg), 0);
	assert_int_equal(cfg->pipeline.workers, 10);
	assert_true(cfg->pipeline.duration_s == 25.0);
	assert_int_equal(cfg->pipeline.port_ranges[0].hi, 30);
	vfgx_config_destroy(cfg);

	/* the parser itself, as the command-line flags use it */
	assert_int_equal(vfgx_num_u64("0x1f", 0, 100, VFGX_NUM_HEX, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 31);
	assert_int_equal(vfgx_num_u64("0", 0, 0, 0, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 0);
	assert_int_equal(vfgx_num_u64("99999999999999999999999", 0, UINT64_MAX, 0, &u, err, sizeof(err)), -EINVAL);
	assert_int_equal(u, 0); /* untouched on error */
	assert_int_equal(vfgx_num_u64("-1", 0, UINT64_MAX, 0, &u, err, sizeof(err)), -EINVAL);
	assert_int_equal(vfgx_num_double("-1.5e-3", -1, 1, &d, err, sizeof(err)), 0);
	assert_true(d == -1.5e-3);
	assert_int_equal(vfgx_num_double("1.", 0, 10, &d, err, sizeof(err)), 0);
	assert_int_equal(vfgx_num_double(".", 0, 10, &d, err, sizeof(err)), -EINVAL);
	assert_int_equal(vfgx_num_double("1e", 0, 10, &d, err, sizeof(err)), -EINVAL);
	assert_int_equal(vfgx_num_double("1e-400", 0, 10, &d, err, sizeof(err)), -EINVAL);
	assert_int_equal(vfgx_num_double("0x1p3", 0, 10, &d, err, sizeof(err)), -EINVAL);
}

/* A value with a newline or a terminal escape cannot forge a line. */
static void test_escaped_errors(void **state)
{
	const char *msg;

	(void)state;
	expect_error("pipeline: {device: \"x\\nvfgx: info: all good\\e[31m\\u009b\\x7f\"}\n",
		     "'x\\nvfgx: info: all good\\x1b[31m\\xc2\\x9b\\x7f' is not allowed");
	msg = vfgx_last_error(ctx);
	for (const char *p = msg; *p; p++)
		assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
	/* printable UTF-8 passes as it is */
	expect_error("pipeline: {device: \"gr\u00fcn\"}\n", "'gr\xc3\xbcn' is not allowed");
	/* a number that is not one is echoed escaped too */
	expect_error("pipeline: {workers: \"1\\r2\"}\n", "'1\\r2' is not a whole number");
}

/* Depth, node count and size are refused before the document is built. */
static void test_limits(void **state)
{
	size_t n = 100000;
	char *y = malloc(2 * n + 2);
	struct vfgx_config *cfg = NULL;

	(void)state;
	assert_non_null(y);
	memset(y, '[', n);
	memset(y + n, ']', n);
	y[2 * n] = '\0';
	expect_error(y, "t.yaml:1:65: nested deeper than 64 levels");
	/* 70000 values in one flow list */
	y[0] = '[';
	for (size_t i = 0; i < 70000; i++)
		memcpy(y + 1 + 2 * i, "0,", 2);
	strcpy(y + 1 + 2 * 70000 - 1, "]");
	expect_error(y, "more than 65536 values");
	free(y);
	y = malloc(VFGX_CONFIG_MAX_BYTES + 2);
	assert_non_null(y);
	memset(y, '#', VFGX_CONFIG_MAX_BYTES + 1);
	y[VFGX_CONFIG_MAX_BYTES + 1] = '\0';
	assert_int_equal(load(y, &cfg), -EFBIG);
	assert_null(cfg);
	free(y);
}

/* Reader errors (bad UTF-8, a NUL byte) at their position, not at 1:1. */
static void test_reader_error_position(void **state)
{
	static const char nul[] = "name: a\nlog_level: in\0fo\n";
	struct vfgx_config *cfg = NULL;

	(void)state;
	expect_error("name: a\nlog_level: \xff\n", "t.yaml:2:12: YAML: invalid leading UTF-8 octet (byte 19)");
	assert_int_equal(vfgx_config_load_string(ctx, nul, sizeof(nul) - 1, "t.yaml", &cfg), -EINVAL);
	if (!strstr(vfgx_last_error(ctx), "t.yaml:2:14: YAML: control characters are not allowed"))
		fail_msg("error '%s'", vfgx_last_error(ctx));
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
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_escaped_errors),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_reader_error_position),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_shipped_configs_load),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
