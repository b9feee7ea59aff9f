/* test_typed_opts.c - the YAML adapters fill the typed option structs
 * completely, lists included (afxdp.queues, dpdk.eal_args, dpdk.flows),
 * with file:line:col errors for bad items; what a program gets from YAML
 * is what it could have filled by hand. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>

#include "vfgx_build.h" /* which optional backends this build links */

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

/* interfaces[0] of a config whose section is SECTION (indented 4). */
static struct vfgx_config *load_iface(const char *backend, const char *section)
{
	char y[1024];
	struct vfgx_config *cfg = NULL;

	snprintf(y, sizeof(y),
		 "interfaces:\n"
		 "  - name: x0\n"
		 "    backend: %s\n"
		 "    address: lo\n"
		 "    rx: { queues: [ { id: 0 }, { id: 1 } ] }\n"
		 "    %s:\n%s",
		 backend, backend, section);
	assert_int_equal(vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg), 0);
	assert_int_equal(cfg->nb_ifaces, 1);
	return cfg;
}

static void afxdp_queues(void **state)
{
	struct vfgx_config *cfg = load_iface("afxdp", "      queues: [7, 3]\n      rx_ring: 512\n");
	struct vfgx_afxdp_opts o;

	(void)state;
	assert_int_equal(vfgx_afxdp_opts_from_yaml(&cfg->ifaces[0].opts, &o), 0);
	assert_int_equal(o.hdr.argsz, sizeof(o));
	assert_int_equal(o.rx_ring, 512);
	assert_int_equal(o.nb_queues, 2);
	assert_non_null(o.queues);
	assert_int_equal(o.queues[0], 7);
	assert_int_equal(o.queues[1], 3);
	vfgx_config_destroy(cfg);

	/* absent: no list, rx queue q reads interface queue q */
	cfg = load_iface("afxdp", "      rx_ring: 64\n");
	assert_int_equal(vfgx_afxdp_opts_from_yaml(&cfg->ifaces[0].opts, &o), 0);
	assert_null(o.queues);
	assert_int_equal(o.nb_queues, 0);
	vfgx_config_destroy(cfg);

	cfg = load_iface("afxdp", "      queues: [1, 70000]\n");
	assert_int_equal(vfgx_afxdp_opts_from_yaml(&cfg->ifaces[0].opts, &o), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "t.yaml:7:"));
	assert_non_null(strstr(vfgx_last_error(ctx), "interfaces[0].afxdp.queues[1]"));
	vfgx_config_destroy(cfg);
}

static void dpdk_lists(void **state)
{
#if !VFGX_HAVE_DPDK
	(void)state;
	printf("SKIP: dpdk_lists: this build has no DPDK backend (libdpdk)\n");
	skip();
#else
	struct vfgx_config *cfg = load_iface("dpdk",
		"      eal_args: [\"-l\", \"0\", \"--no-pci\"]\n"
		"      flows: [ { udp_dst_port: 6001, queue: 1 }, { udp_dst_port: 6000, queue: 0 } ]\n"
		"      memory: { num_mbufs: 1023 }\n");
	struct vfgx_dpdk_opts o;

	(void)state;
	assert_int_equal(vfgx_dpdk_opts_from_yaml(&cfg->ifaces[0].opts, &o), 0);
	assert_int_equal(o.hdr.argsz, sizeof(o));
	assert_int_equal(o.num_mbufs, 1023);
	assert_int_equal(o.nb_eal_args, 3);
	assert_string_equal(o.eal_args[0], "-l");
	assert_string_equal(o.eal_args[2], "--no-pci");
	assert_int_equal(o.nb_flows, 2);
	assert_int_equal(o.flows[0].udp_dst_port, 6001);
	assert_int_equal(o.flows[0].queue, 1);
	assert_int_equal(o.flows[1].udp_dst_port, 6000);
	assert_int_equal(o.flows[1].queue, 0);
	vfgx_config_destroy(cfg);

	cfg = load_iface("dpdk", "      flows: [ { queue: 1 } ]\n");
	assert_int_equal(vfgx_dpdk_opts_from_yaml(&cfg->ifaces[0].opts, &o), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "udp_dst_port: required"));
	vfgx_config_destroy(cfg);

	cfg = load_iface("dpdk", "      eal_args: [ [\"-l\"] ]\n");
	assert_int_equal(vfgx_dpdk_opts_from_yaml(&cfg->ifaces[0].opts, &o), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "interfaces[0].dpdk.eal_args[0]"));
	vfgx_config_destroy(cfg);
#endif
}

/* #44: loopback.packets goes to 2^63 - 1 and no further, from YAML and from
 * a struct alike, and the message names that bound exactly (the table's
 * double rounded it up: 2^63 was accepted, the range read
 * "0..9223372036854775808"). */
static void loopback_packets_range(void **state)
{
	struct vfgx_config *cfg = load_iface("loopback", "      packets: 9223372036854775807\n");
	struct vfgx_loopback_opts o;
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "x0", .backend = "loopback",
				     .nb_rx_queues = 1, .burst = 64, .backend_opts = &o.hdr };
	vfgx_port *p;

	(void)state;
	assert_int_equal(vfgx_loopback_opts_from_yaml(&cfg->ifaces[0].opts, &o), 0);
	assert_true(o.packets == INT64_MAX);
	vfgx_config_destroy(cfg);

	cfg = load_iface("loopback", "      packets: 9223372036854775808\n");
	assert_int_equal(vfgx_loopback_opts_from_yaml(&cfg->ifaces[0].opts, &o), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "t.yaml:7:"));
	assert_non_null(strstr(vfgx_last_error(ctx),
			       "9223372036854775808 is out of range (must be 0..9223372036854775807)"));
	vfgx_config_destroy(cfg);

	vfgx_loopback_opts_default(&o);
	o.packets = (uint64_t)INT64_MAX + 1;
	assert_int_equal(vfgx_port_open(ctx, &pc, &p), -EINVAL);
	assert_string_equal(vfgx_last_error(ctx),
			    "x0: loopback options: packets: 9223372036854775808 is out of range (must be 0..9223372036854775807)");
}

/* Backend options carry a header naming their backend: the defaults and
 * the YAML adapter set it, and a port refuses another backend's struct
 * in one line instead of reading it as its own. */
static void backend_header(void **state)
{
	struct vfgx_config *cfg = load_iface("socket", "      role: client\n");
	struct vfgx_socket_opts so;
	struct vfgx_loopback_opts lo;
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "x0", .backend = "loopback",
				     .nb_rx_queues = 1, .burst = 64, .backend_opts = &so.hdr };
	vfgx_port *p = NULL;

	(void)state;
	assert_int_equal(vfgx_socket_opts_from_yaml(&cfg->ifaces[0].opts, &so), 0);
	assert_string_equal(so.hdr.backend, "socket");
	assert_int_equal(so.hdr.argsz, sizeof(so));
	vfgx_config_destroy(cfg);
	vfgx_socket_opts_default(&so);
	assert_string_equal(so.hdr.backend, "socket");
	assert_int_equal(vfgx_port_open(ctx, &pc, &p), -EINVAL);
	assert_null(p);
	assert_string_equal(vfgx_last_error(ctx),
			    "x0: backend_opts are not struct vfgx_loopback_opts (their header names backend 'socket'; fill them with vfgx_loopback_opts_default)");
	/* a header with no name (a struct zeroed by hand) is refused too */
	memset(&lo, 0, sizeof(lo));
	lo.hdr.argsz = sizeof(lo);
	pc.backend_opts = &lo.hdr;
	assert_int_equal(vfgx_port_open(ctx, &pc, &p), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "header names backend '(none)'"));
	/* its own, from the defaults: opened */
	vfgx_loopback_opts_default(&lo);
	lo.packets = 10;
	assert_int_equal(vfgx_port_open(ctx, &pc, &p), 0);
	vfgx_port_close(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(afxdp_queues),
		cmocka_unit_test(dpdk_lists),
		cmocka_unit_test(loopback_packets_range),
		cmocka_unit_test(backend_header),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
