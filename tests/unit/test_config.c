/* test_config.c - the YAML loader: defaults, a full config, and each kind
 * of bad input producing one precise file:line:col message, escaped, and
 * the strict number parser and the size and depth limits behind it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>

#include "core/cfgnode.h"
#include "core/numparse.h"
#include "core/opts.h"

#include "unit_ctx.h"

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
	/* expect: is vfgx run's section: passed over, read by a table */
	struct ex { bool all_received; uint64_t min_packets; } ex;
	static const struct vfgx_opt ex_tab[] = {
		VFGX_OPT(BOOL, struct ex, all_received, 0),
		VFGX_OPT(U64, struct ex, min_packets, 1, 0, 1.9e19),
	};

	/* the default config's expect: has keys the table lacks: refused */
	assert_int_equal(vfgx_config_section(cfg, "expect", ex_tab, 1, &ex, sizeof(ex)),
			 -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "expect."));
	ex.all_received = false;
	assert_int_equal(vfgx_config_section(cfg, "nosuch", ex_tab, 2, &ex, sizeof(ex)), 0);
	assert_false(ex.all_received);
	assert_int_equal(ex.min_packets, 1);
	assert_int_equal(cfg->pipeline.reorder_window, 1024);
	vfgx_config_destroy(cfg);
}

static void test_full_config(void **state)
{
	struct vfgx_config *cfg;
	const struct vfgx_loopback_opts *lo;

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
	struct ex { uint64_t min_packets; } ex;
	static const struct vfgx_opt ex_tab[] = {
		VFGX_OPT(U64, struct ex, min_packets, 1, 0, 1.9e19),
	};

	assert_int_equal(vfgx_config_section(cfg, "expect", ex_tab, 1, &ex, sizeof(ex)), 0);
	assert_int_equal(ex.min_packets, 5);
	/* the backend section is parsed at load into the backend's typed
	 * options, the other keys at their defaults */
	assert_non_null(cfg->ifaces[0].backend_opts);
	assert_string_equal(cfg->ifaces[0].backend_opts->backend, "loopback");
	lo = (const struct vfgx_loopback_opts *)(const void *)cfg->ifaces[0].backend_opts;
	assert_int_equal(lo->packets, 77);
	assert_int_equal(lo->packet_size, 512);
	/* pipeline.gpu too, its defaults where absent */
	assert_non_null(cfg->pipeline.gpu);
	assert_int_equal(cfg->pipeline.gpu->argsz, sizeof(struct vfgx_gpu_opts));
	assert_int_equal(cfg->pipeline.gpu->items, 64);
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

/* A program's own section read by a table (vfgx_config_section): lists of
 * mappings and of scalars, the place of each item, and the library's
 * one-line errors for a bad item, an unknown key and a non-list. */
struct t_iface { const char *name; const char *where; };
struct t_entry {
	uint32_t rank;
	uint16_t nb_ifaces, nb_cores;
	struct t_iface *ifaces;
	uint16_t *cores;
	const char *where;
};
struct t_ranks { uint16_t nb; struct t_entry *e; };

static const struct vfgx_opt t_iface_tab[] = {
	{ NULL, VFGX_OPT_STR, offsetof(struct t_iface, name) },
	{ NULL, VFGX_OPT_WHERE, offsetof(struct t_iface, where) },
};
static const struct vfgx_opt t_core_tab[] = {
	{ NULL, VFGX_OPT_U16, 0, 0, 0, 63 },
};
static const struct vfgx_opt t_entry_tab[] = {
	VFGX_OPT(U32, struct t_entry, rank, 7, 0, 100),
	{ "interfaces", VFGX_OPT_LIST, offsetof(struct t_entry, ifaces), 0, 0, 2,
	  .elem = t_iface_tab, .nb_elem = 2, .elem_size = sizeof(struct t_iface),
	  .count_off = offsetof(struct t_entry, nb_ifaces) },
	{ "cores", VFGX_OPT_LIST, offsetof(struct t_entry, cores), 0, 0, 8,
	  .elem = t_core_tab, .nb_elem = 1, .elem_size = sizeof(uint16_t),
	  .count_off = offsetof(struct t_entry, nb_cores) },
	{ NULL, VFGX_OPT_WHERE, offsetof(struct t_entry, where) },
};
static const struct vfgx_opt t_ranks_tab[] = {
	{ NULL, VFGX_OPT_LIST, offsetof(struct t_ranks, e), 0, 0, 4,
	  .elem = t_entry_tab, .nb_elem = 4, .elem_size = sizeof(struct t_entry),
	  .count_off = offsetof(struct t_ranks, nb) },
};

static void section_error(const char *ranks_yaml, const char *needle)
{
	char y[512];
	struct vfgx_config *cfg;
	struct t_ranks r;

	snprintf(y, sizeof(y), "interfaces:\n  - {name: lb0, backend: loopback}\nranks:%s\n",
		 ranks_yaml);
	assert_int_equal(load(y, &cfg), 0);
	assert_int_equal(vfgx_config_section(cfg, "ranks", t_ranks_tab, 1, &r, sizeof(r)),
			 -EINVAL);
	if (!strstr(vfgx_last_error(ctx), needle))
		fail_msg("error '%s' lacks '%s'", vfgx_last_error(ctx), needle);
	vfgx_config_destroy(cfg);
}

static void test_program_section(void **state)
{
	struct vfgx_config *cfg;
	struct t_ranks r;

	(void)state;
	assert_int_equal(load("interfaces:\n"
			      "  - {name: lb0, backend: loopback}\n"
			      "ranks:\n"
			      "  - {rank: 3, interfaces: [lb0, lb1], cores: [1, 63]}\n"
			      "  - {cores: []}\n",
			      &cfg),
			 0);
	assert_int_equal(vfgx_config_section(cfg, "ranks", t_ranks_tab, 1, &r, sizeof(r)), 0);
	assert_int_equal(r.nb, 2);
	assert_int_equal(r.e[0].rank, 3);
	assert_int_equal(r.e[0].nb_ifaces, 2);
	assert_string_equal(r.e[0].ifaces[1].name, "lb1");
	assert_string_equal(r.e[0].ifaces[1].where, "t.yaml:4:33: ranks[0].interfaces[1]");
	assert_string_equal(r.e[0].where, "t.yaml:4:5: ranks[0]");
	assert_int_equal(r.e[0].nb_cores, 2);
	assert_int_equal(r.e[0].cores[1], 63);
	assert_int_equal(r.e[1].rank, 7); /* the default */
	assert_int_equal(r.e[1].nb_ifaces, 0);
	assert_null(r.e[1].ifaces);
	assert_int_equal(r.e[1].nb_cores, 0);
	vfgx_config_destroy(cfg);
	/* absent: the defaults, no list */
	assert_int_equal(load("interfaces:\n  - {name: lb0, backend: loopback}\n", &cfg), 0);
	r.nb = 9;
	assert_int_equal(vfgx_config_section(cfg, "ranks", t_ranks_tab, 1, &r, sizeof(r)), 0);
	assert_int_equal(r.nb, 0);
	assert_null(r.e);
	vfgx_config_destroy(cfg);

	section_error("\n  - {cores: [64]}", "ranks[0].cores[0]:");
	section_error("\n  - {rank: 1, gpu: 2}", "ranks[0].gpu: unknown key");
	section_error(" 5", "t.yaml:3:8: ranks: must be a list");
	section_error("\n  - {interfaces: [a, b, c]}", "3 items; at most 2 interfaces");
	section_error("\n  - {}\n  - {}\n  - {}\n  - {}\n  - {}", "5 items; at most 4 ranks");
}

/* VFGX_OPT_STRN: a bounded string with a default, for a program's
 * section as for the library's; a program's struct is judged by the same
 * bound. */
struct t_strn { const char *a, *b; };
static const char *const t_strn_def[] = { "dflt", NULL };
static const struct vfgx_opt t_strn_tab[] = {
	{ "a", VFGX_OPT_STRN, offsetof(struct t_strn, a), 0, 0, 4 },
	{ "b", VFGX_OPT_STRN, offsetof(struct t_strn, b), 0, 0, 8, t_strn_def },
};

static void test_strn_kind(void **state)
{
	struct vfgx_config *cfg;
	struct t_strn t;

	(void)state;
	vfgx_opts_default(t_strn_tab, 2, &t, 0);
	assert_string_equal(t.a, "");
	assert_string_equal(t.b, "dflt");
	assert_int_equal(vfgx_opts_check(ctx, "x", "t", t_strn_tab, 2, &t), 0);
	t.a = "abcd";
	assert_int_equal(vfgx_opts_check(ctx, "x", "t", t_strn_tab, 2, &t), -EINVAL);
	assert_string_equal(vfgx_last_error(ctx), "x: t options: a: is too long (at most 3 characters)");
	t.a = NULL;
	assert_int_equal(vfgx_opts_check(ctx, "x", "t", t_strn_tab, 2, &t), -EINVAL);

	assert_int_equal(load("interfaces:\n  - {backend: loopback}\nmetrics: {a: abc}\n", &cfg), 0);
	assert_int_equal(vfgx_config_section(cfg, "metrics", t_strn_tab, 2, &t, sizeof(t)), 0);
	assert_string_equal(t.a, "abc");
	assert_string_equal(t.b, "dflt");
	vfgx_config_destroy(cfg);
	assert_int_equal(load("interfaces:\n  - {backend: loopback}\nmetrics: {b: 12345678}\n", &cfg), 0);
	assert_int_equal(vfgx_config_section(cfg, "metrics", t_strn_tab, 2, &t, sizeof(t)), -EINVAL);
	assert_string_equal(vfgx_last_error(ctx), "t.yaml:3:14: metrics.b: value is too long (at most 7 characters)");
	vfgx_config_destroy(cfg);
}

/* #39: memory_regions, interfaces (their rx/tx queues) and pipeline's own
 * keys (reorder, user) are option tables: per section a default, a bound
 * error, a wrong type and an unknown key, with the cross-checks a table
 * cannot make (a name used twice, queue order, an undefined region, a
 * window that is no power of two) still made. */
static void test_section_tables(void **state)
{
	struct vfgx_pipeline_config def;
	struct vfgx_config *cfg;
	char y[512], longname[VFGX_NAME_MAX + 1];

	(void)state;
	/* defaults */
	assert_int_equal(load("memory_regions:\n  - {name: r}\n"
			      "interfaces:\n  - backend: socket\n"
			      "    rx: {queues: [{memory_region: r}, {}]}\n", &cfg), 0);
	assert_int_equal(cfg->nb_regions, 1);
	assert_string_equal(cfg->regions[0].name, "r");
	assert_int_equal(cfg->regions[0].kind, VFGX_MEM_HOST);
	assert_int_equal(cfg->regions[0].buf_size, 2048);
	assert_int_equal(cfg->regions[0].num_bufs, 8192);
	assert_int_equal(cfg->regions[0].gpu_id, 0);
	assert_int_equal(cfg->regions[0].fallback, VFGX_FALLBACK_HOST);
	assert_string_equal(cfg->ifaces[0].name, "socket0"); /* BACKEND<i> */
	assert_string_equal(cfg->ifaces[0].address, "");
	assert_int_equal(cfg->ifaces[0].nb_rx_queues, 2);
	assert_int_equal(cfg->ifaces[0].rx_queues[1].id, 1); /* its position */
	assert_int_equal(cfg->ifaces[0].rx_queues[1].batch_size, 64);
	assert_string_equal(cfg->ifaces[0].rx_queues[0].region, "r");
	assert_string_equal(cfg->ifaces[0].rx_queues[1].region, "");
	assert_int_equal(cfg->ifaces[0].nb_tx_queues, 1); /* absent: one */
	assert_int_equal(cfg->ifaces[0].tx_queues[0].batch_size, 64);
	/* the pipeline's: those vfgx_pipeline_config_default gives a program */
	vfgx_pipeline_config_default(&def);
	assert_int_equal(cfg->pipeline.argsz, sizeof(def));
	assert_int_equal(cfg->pipeline.device, def.device);
	assert_int_equal(cfg->pipeline.workers, def.workers);
	assert_true(cfg->pipeline.reorder == def.reorder);
	assert_int_equal(cfg->pipeline.reorder_window, def.reorder_window);
	assert_int_equal(cfg->pipeline.reorder_slot, def.reorder_slot);
	assert_int_equal(cfg->pipeline.max_streams, def.max_streams);
	assert_false(cfg->pipeline.verify_payload);
	assert_true(cfg->pipeline.duration_s == 0);
	assert_int_equal(cfg->pipeline.max_in_flight_bytes, 0);
	assert_int_equal(cfg->pipeline.reorder_max_memory, 1073741824);
	assert_string_equal(cfg->user_library, "");
	assert_string_equal(cfg->user_arg, "");
	assert_string_equal(cfg->user_gpu_module, "");
	assert_string_equal(cfg->user_gpu_kernel, "vfgx_chunk_kernel");
	assert_int_equal(cfg->user_gpu_threads, 256);
	assert_int_equal(cfg->user_gpu_state_bytes, 0);
	assert_string_equal(cfg->user_gpu_state_out, "");
	vfgx_config_destroy(cfg);
	/* values given, and the name given as empty stays empty */
	assert_int_equal(load("interfaces:\n  - {backend: loopback, name: \"\", address: x}\n"
			      "pipeline:\n  reorder: {enabled: false, max_memory: 1048576}\n"
			      "  user: {gpu_kernel: k, gpu_threads: 32, gpu_state_bytes: 4294967296}\n",
			      &cfg), 0);
	assert_string_equal(cfg->ifaces[0].name, "");
	assert_string_equal(cfg->ifaces[0].address, "x");
	assert_false(cfg->pipeline.reorder);
	assert_int_equal(cfg->pipeline.reorder_max_memory, 1048576);
	assert_string_equal(cfg->user_gpu_kernel, "k");
	assert_int_equal(cfg->user_gpu_threads, 32);
	assert_int_equal(cfg->user_gpu_state_bytes, 4294967296ull);
	vfgx_config_destroy(cfg);

	/* bounds */
	expect_error("memory_regions:\n  - {name: r, buf_size: 32}\n",
		     "t.yaml:2:25: memory_regions[0].buf_size: 32 is out of range");
	expect_error("memory_regions:\n  - {name: r, gpu_id: 64}\n",
		     "memory_regions[0].gpu_id: 64 is out of range");
	expect_error("interfaces:\n  - backend: loopback\n    tx: {queues: [{batch_size: 0}]}\n",
		     "interfaces[0].tx.queues[0].batch_size: 0 is out of range");
	expect_error("interfaces:\n  - backend: loopback\n    rx: {queues: [{id: 64}]}\n",
		     "interfaces[0].rx.queues[0].id: 64 is out of range");
	expect_error("pipeline:\n  workers: 65\n", "pipeline.workers: 65 is out of range");
	expect_error("pipeline:\n  max_in_flight_bytes: 1099511627777\n",
		     "pipeline.max_in_flight_bytes: 1099511627777 is out of range");
	expect_error("pipeline:\n  reorder: {slot_size: 15}\n",
		     "pipeline.reorder.slot_size: 15 is out of range");
	expect_error("pipeline:\n  reorder: {max_memory: 1048575}\n",
		     "pipeline.reorder.max_memory: 1048575 is out of range");
	expect_error("pipeline:\n  user: {gpu_threads: 31}\n",
		     "pipeline.user.gpu_threads: 31 is out of range");
	expect_error("pipeline:\n  user: {gpu_state_bytes: 4294967297}\n",
		     "pipeline.user.gpu_state_bytes: 4294967297 is out of range");
	memset(longname, 'n', VFGX_NAME_MAX);
	longname[VFGX_NAME_MAX] = '\0';
	snprintf(y, sizeof(y), "memory_regions:\n  - {name: %s}\n", longname);
	expect_error(y, "memory_regions[0].name: value is too long (at most 63 characters)");
	snprintf(y, sizeof(y), "pipeline:\n  user: {gpu_kernel: %s}\n", longname);
	expect_error(y, "pipeline.user.gpu_kernel: value is too long (at most 63 characters)");
	/* wrong types */
	expect_error("memory_regions:\n  - {name: r, kind: vram}\n",
		     "memory_regions[0].kind: 'vram' is not allowed (use one of: host, hugepage, pinned, gpu)");
	expect_error("memory_regions:\n  - {name: [r]}\n", "memory_regions[0].name: must be a single value");
	expect_error("interfaces:\n  - {backend: loopback, address: {a: 1}}\n",
		     "interfaces[0].address: must be a single value");
	expect_error("interfaces:\n  - backend: loopback\n    rx: {queues: [{batch_size: big}]}\n",
		     "interfaces[0].rx.queues[0].batch_size: 'big' is not a whole number");
	expect_error("pipeline:\n  verify_payload: sometimes\n", "pipeline.verify_payload: 'sometimes' is not a boolean");
	expect_error("pipeline:\n  duration_s: soon\n", "pipeline.duration_s: 'soon'");
	expect_error("pipeline:\n  reorder: [1]\n", "pipeline.reorder: must be a mapping");
	expect_error("pipeline:\n  user: {gpu_threads: -1}\n", "pipeline.user.gpu_threads: '-1'");
	/* unknown keys, with what is allowed in the order docs/config.md gives */
	expect_error("memory_regions:\n  - {name: r, size: 1}\n",
		     "memory_regions[0].size: unknown key (allowed: name, kind, buf_size, num_bufs, gpu_id, fallback)");
	expect_error("interfaces:\n  - {backend: loopback, mtu: 9000}\n",
		     "interfaces[0].mtu: unknown key (allowed: name, backend, address, rx, tx, loopback, socket, afxdp, dpdk, rdma, pcap)");
	expect_error("interfaces:\n  - backend: loopback\n    rx: {queues: [{ring: 1}]}\n",
		     "interfaces[0].rx.queues[0].ring: unknown key (allowed: id, memory_region, batch_size)");
	expect_error("interfaces:\n  - backend: loopback\n    rx: {queue: []}\n",
		     "interfaces[0].rx.queue: unknown key (allowed: queues)");
	expect_error("pipeline:\n  threads: 2\n", "pipeline.threads: unknown key (allowed: device, workers, filter, reorder,");
	expect_error("pipeline:\n  filter: {ports: [1]}\n", "pipeline.filter.ports: unknown key (allowed: udp_dst_ports)");
	expect_error("pipeline:\n  reorder: {size: 4}\n",
		     "pipeline.reorder.size: unknown key (allowed: enabled, window, slot_size, max_streams, max_memory)");
	expect_error("pipeline:\n  user: {lib: x.so}\n",
		     "pipeline.user.lib: unknown key (allowed: library, arg, gpu_module, gpu_kernel, gpu_threads, gpu_state_bytes, gpu_state_out)");
	/* what a table cannot say */
	expect_error("memory_regions:\n  - {kind: host}\n", "memory_regions[0]: name: required");
	expect_error("interfaces:\n  - backend: loopback\n    rx: {queues: [{id: 1}]}\n",
		     "id: queues must be listed in order 0..0 (got 1 at position 0)");
	expect_error("memory_regions:\n  - {name: r, num_bufs: 16777216, buf_size: 1048576}\n",
		     "more than this machine's memory");
	expect_error("interfaces:\n  - {backend: loopback}\n  - {backend: loopback}\n  - {backend: loopback}\n"
		     "  - {backend: loopback}\n  - {backend: loopback}\n  - {backend: loopback}\n"
		     "  - {backend: loopback}\n  - {backend: loopback}\n  - {backend: loopback}\n",
		     "interfaces: at most 8 interfaces");
}

/* #39: pipeline.gpu is one option table: every key read at load into
 * struct vfgx_gpu_opts (the values docs/config.md gives), absent keys at
 * the defaults vfgx_gpu_opts_default gives a program, and a program's
 * struct judged by the same ranges when it makes a GPU processor. */
static void test_gpu_opts(void **state)
{
	struct vfgx_pipeline_config pc;
	struct vfgx_gpu_opts def, o;
	struct vfgx_config *cfg;
	vfgx_gpu_proc *gp = NULL;

	(void)state;
	assert_int_equal(load("pipeline:\n  gpu: {mode: graph, stage_copy: true, items: 128, burst: 512,"
			      " graph_items: 16, blocks: 8, timeout_ms: 250, user_stage: flow_sum,"
			      " log_records: 4096, gpu_id: 3, rx_threads: 2}\n", &cfg), 0);
	assert_int_equal(cfg->pipeline.gpu->argsz, sizeof(struct vfgx_gpu_opts));
	assert_int_equal(cfg->pipeline.gpu->mode, VFGX_GPU_GRAPH);
	assert_true(cfg->pipeline.gpu->stage_copy);
	assert_int_equal(cfg->pipeline.gpu->items, 128);
	assert_int_equal(cfg->pipeline.gpu->burst, 512);
	assert_int_equal(cfg->pipeline.gpu->graph_items, 16);
	assert_int_equal(cfg->pipeline.gpu->blocks, 8);
	assert_int_equal(cfg->pipeline.gpu->timeout_ms, 250);
	assert_int_equal(cfg->pipeline.gpu->user, VFGX_GPU_USER_FLOW_SUM);
	assert_int_equal(cfg->pipeline.gpu->log_records, 4096);
	assert_int_equal(cfg->pipeline.gpu->gpu_id, 3);
	assert_int_equal(cfg->pipeline.gpu->rx_threads, 2);
	vfgx_config_destroy(cfg);

	/* the defaults, from docs/config.md's rows */
	vfgx_gpu_opts_default(&def);
	assert_int_equal(def.argsz, sizeof(def));
	assert_int_equal(def.mode, VFGX_GPU_PERSISTENT);
	assert_false(def.stage_copy);
	assert_int_equal(def.items, 64);
	assert_int_equal(def.burst, 1024);
	assert_int_equal(def.graph_items, 8);
	assert_int_equal(def.blocks, 0);
	assert_int_equal(def.timeout_ms, 5000);
	assert_int_equal(def.user, VFGX_GPU_USER_NONE);
	assert_int_equal(def.log_records, 0);
	assert_int_equal(def.gpu_id, 0);
	assert_int_equal(def.rx_threads, 0);
	/* a section with one key: the rest are the program's defaults */
	assert_int_equal(load("pipeline:\n  gpu: {burst: 256}\n", &cfg), 0);
	o = def;
	o.burst = 256;
	assert_memory_equal(cfg->pipeline.gpu, &o, sizeof(o));
	vfgx_config_destroy(cfg);

	expect_error("pipeline:\n  gpu: {itmes: 64}\n", "t.yaml:2:9: pipeline.gpu.itmes: unknown key (allowed: mode, stage_copy, items,");
	expect_error("pipeline:\n  gpu: {items: 1}\n", "t.yaml:2:16: pipeline.gpu.items: 1 is out of range (must be 2..4096)");
	expect_error("pipeline:\n  gpu: {burst: 8193}\n", "pipeline.gpu.burst: 8193 is out of range (must be 1..8192)");
	expect_error("pipeline:\n  gpu: {mode: fast}\n", "pipeline.gpu.mode: 'fast' is not allowed (use one of: persistent, per_burst, graph)");
	expect_error("pipeline:\n  gpu: {stage_copy: 2}\n", "pipeline.gpu.stage_copy: '2' is not a boolean");
	expect_error("pipeline:\n  gpu: [persistent]\n", "pipeline.gpu: must be a mapping");

	/* a program's struct: the same ranges, one line naming the key */
	vfgx_pipeline_config_default(&pc);
	o = def;
	o.items = 1;
	assert_int_equal(vfgx_gpu_proc_create(ctx, &pc, &o, &gp), -EINVAL);
	assert_null(gp);
	assert_string_equal(vfgx_last_error(ctx),
			    "pipeline: gpu options: items: 1 is out of range (must be 2..4096)");
	o = def;
	o.mode = (enum vfgx_gpu_mode)3;
	assert_int_equal(vfgx_gpu_proc_create(ctx, &pc, &o, &gp), -EINVAL);
	assert_string_equal(vfgx_last_error(ctx),
			    "pipeline: gpu options: mode: 3 is not one of the 3 values");
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
		cmocka_unit_test(test_program_section),
		cmocka_unit_test(test_gpu_opts),
		cmocka_unit_test(test_section_tables),
		cmocka_unit_test(test_strn_kind),
	};
	return cmocka_run_group_tests(tests, ctx_setup, ctx_teardown);
}
