/* test_typed_opts.c - config load parses every backend's section, through
 * the parse entry of its ops table, into the typed option struct
 * (vfgx_iface_config.backend_opts), lists included (afxdp.queues,
 * dpdk.eal_args, dpdk.flows), with one file:line:col error for a bad key
 * or item; what a program gets from YAML is what it could have filled by
 * hand. */
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

#include "unit_ctx.h"

/* Load a config whose interfaces[0] (backend, 2 rx queues) has SECTION
 * (indented 6) as its backend section: the return of the load. */
static int load_section_rc(const char *backend, const char *section, struct vfgx_config **cfg)
{
	char y[1024];

	snprintf(y, sizeof(y),
		 "interfaces:\n"
		 "  - name: x0\n"
		 "    backend: %s\n"
		 "    address: lo\n"
		 "    rx: { queues: [ { id: 0 }, { id: 1 } ] }\n"
		 "    %s:\n%s",
		 backend, backend, section);
	*cfg = NULL;
	return vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", cfg);
}

/* interfaces[0] of a config whose section is SECTION (indented 6), loaded */
static struct vfgx_config *load_iface(const char *backend, const char *section)
{
	struct vfgx_config *cfg = NULL;

	assert_int_equal(load_section_rc(backend, section, &cfg), 0);
	assert_int_equal(cfg->nb_ifaces, 1);
	assert_non_null(cfg->ifaces[0].backend_opts);
	assert_string_equal(cfg->ifaces[0].backend_opts->backend, backend);
	return cfg;
}

/* The load fails with one line that holds every one of the strings. */
static void load_refused(const char *backend, const char *section, const char *want1,
			 const char *want2)
{
	struct vfgx_config *cfg = NULL;

	assert_int_equal(load_section_rc(backend, section, &cfg), -EINVAL);
	assert_null(cfg);
	if (!strstr(vfgx_last_error(ctx), want1) || (want2 && !strstr(vfgx_last_error(ctx), want2)))
		fail_msg("%s: '%s' lacks '%s' / '%s'", backend, vfgx_last_error(ctx), want1,
			 want2 ? want2 : "");
	assert_null(strchr(vfgx_last_error(ctx), '\n'));
}

static void afxdp_queues(void **state)
{
#if !VFGX_HAVE_AFXDP
	(void)state;
	printf("SKIP: afxdp_queues: this build has no AF_XDP backend (libxdp)\n");
	skip();
#else
	struct vfgx_config *cfg = load_iface("afxdp", "      queues: [7, 3]\n      rx_ring: 512\n");
	const struct vfgx_afxdp_opts *o = (const void *)cfg->ifaces[0].backend_opts;

	(void)state;
	assert_int_equal(o->hdr.argsz, sizeof(*o));
	assert_int_equal(o->rx_ring, 512);
	assert_int_equal(o->nb_queues, 2);
	assert_non_null(o->queues);
	assert_int_equal(o->queues[0], 7);
	assert_int_equal(o->queues[1], 3);
	vfgx_config_destroy(cfg);

	/* absent: no list, rx queue q reads interface queue q */
	cfg = load_iface("afxdp", "      rx_ring: 64\n");
	o = (const void *)cfg->ifaces[0].backend_opts;
	assert_null(o->queues);
	assert_int_equal(o->nb_queues, 0);
	vfgx_config_destroy(cfg);

	load_refused("afxdp", "      queues: [1, 70000]\n", "t.yaml:7:",
		     "interfaces[0].afxdp.queues[1]");
	/* the list against the interface's rx queues, at load */
	load_refused("afxdp", "      queues: [1]\n", "t.yaml:7:",
		     "interfaces[0].afxdp.queues: 1 queue ids for 2 rx queues");
	load_refused("afxdp", "      rx_ring: 100\n", "t.yaml:7:",
		     "100 is not a power of two");
#endif
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
	const struct vfgx_dpdk_opts *o = (const void *)cfg->ifaces[0].backend_opts;

	(void)state;
	assert_int_equal(o->hdr.argsz, sizeof(*o));
	assert_int_equal(o->num_mbufs, 1023);
	assert_int_equal(o->nb_eal_args, 3);
	assert_string_equal(o->eal_args[0], "-l");
	assert_string_equal(o->eal_args[2], "--no-pci");
	assert_int_equal(o->nb_flows, 2);
	assert_int_equal(o->flows[0].udp_dst_port, 6001);
	assert_int_equal(o->flows[0].queue, 1);
	assert_int_equal(o->flows[1].udp_dst_port, 6000);
	assert_int_equal(o->flows[1].queue, 0);
	vfgx_config_destroy(cfg);

	load_refused("dpdk", "      flows: [ { queue: 1 } ]\n", "udp_dst_port: required", NULL);
	load_refused("dpdk", "      eal_args: [ [\"-l\"] ]\n", "interfaces[0].dpdk.eal_args[0]",
		     NULL);
	/* a flow's queue against the interface's rx queues, at load */
	load_refused("dpdk", "      flows: [ { udp_dst_port: 6000, queue: 2 } ]\n",
		     "t.yaml:7:", "queue: 2 but the interface has 2 rx queues");
	load_refused("dpdk", "      memory: { mbufs: 10 }\n", "t.yaml:7:",
		     "interfaces[0].dpdk.memory.mbufs: unknown key");
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
	assert_true(((const struct vfgx_loopback_opts *)(const void *)cfg->ifaces[0].backend_opts)
			    ->packets == INT64_MAX);
	vfgx_config_destroy(cfg);

	load_refused("loopback", "      packets: 9223372036854775808\n", "t.yaml:7:",
		     "9223372036854775808 is out of range (must be 0..9223372036854775807)");

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
	so = *(const struct vfgx_socket_opts *)(const void *)cfg->ifaces[0].backend_opts;
	assert_string_equal(so.hdr.backend, "socket");
	assert_int_equal(so.hdr.argsz, sizeof(so));
	assert_int_equal(so.role, 1); /* client */
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

/* Each backend's section is parsed at load through its ops table's parse
 * entry: an unknown key or a value out of range is one line naming the
 * file, line, column and key, before any port exists. */
static void unknown_keys_at_load(void **state)
{
	static const struct {
		const char *backend, *section, *want;
		int have;
	} cases[] = {
		{ "loopback", "      packet_sise: 64\n", "interfaces[0].loopback.packet_sise: unknown key (allowed: packets, packet_size", 1 },
		{ "loopback", "      flows: 0\n", "interfaces[0].loopback.flows: 0 is out of range", 1 },
		{ "socket", "      rcvbuff: 1\n", "interfaces[0].socket.rcvbuff: unknown key (allowed: uri, role", 1 },
		{ "socket", "      role: listener\n", "interfaces[0].socket.role", 1 },
		{ "afxdp", "      mode: fast\n", "interfaces[0].afxdp.mode", VFGX_HAVE_AFXDP },
		{ "afxdp", "      umem: 1\n", "interfaces[0].afxdp.umem: unknown key", VFGX_HAVE_AFXDP },
		{ "dpdk", "      rx_descs: 64\n", "interfaces[0].dpdk.rx_descs: unknown key", VFGX_HAVE_DPDK },
		{ "rdma", "      qp: rc\n", "interfaces[0].rdma.qp: unknown key (allowed: device, port", VFGX_HAVE_RDMA },
		{ "rdma", "      mode: ring\n      qp_type: ud\n", "qp_type: rc", VFGX_HAVE_RDMA },
		{ "pcap", "      loop: 2\n", "interfaces[0].pcap.loop: unknown key (allowed: file, loops", VFGX_HAVE_PCAP },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!cases[i].have) {
			printf("SKIP: %s: not in this build\n", cases[i].backend);
			continue;
		}
		load_refused(cases[i].backend, cases[i].section, "t.yaml:", cases[i].want);
	}
}

/* A section absent: the backend's defaults, typed, at load. */
static void defaults_at_load(void **state)
{
	struct vfgx_config *cfg = NULL;
	const char *y = "interfaces:\n  - { name: l0, backend: loopback }\n";
	const struct vfgx_loopback_opts *o;

	(void)state;
	assert_int_equal(vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg), 0);
	o = (const void *)cfg->ifaces[0].backend_opts;
	assert_non_null(o);
	assert_string_equal(o->hdr.backend, "loopback");
	assert_int_equal(o->hdr.argsz, sizeof(*o));
	assert_int_equal(o->packet_size, 512);
	assert_int_equal(o->packets, 100000);
	vfgx_config_destroy(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(afxdp_queues),
		cmocka_unit_test(dpdk_lists),
		cmocka_unit_test(loopback_packets_range),
		cmocka_unit_test(backend_header),
		cmocka_unit_test(unknown_keys_at_load),
		cmocka_unit_test(defaults_at_load),
	};

	return cmocka_run_group_tests(tests, ctx_setup, ctx_teardown);
}
