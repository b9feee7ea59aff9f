/* test_dpdk.c - the DPDK backend in one process on software vdevs: bad EAL
 * arguments and unknown ports, zero-copy bursts from net_null freed in
 * bulk, tx -> rx over net_ring with payload and order checked, software
 * steering, the external-memory fallback on a vdev, header split off,
 * second port reusing the EAL, bad config keys.  Order matters: the EAL
 * starts once per process, so the bad-argument case runs first. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <vfgx/stages.h>
#include <vfgx/vfgx.h>

#include "unit_ctx.h"

static char warnings[8192];

/* LeakSanitizer (sanitizer builds): the EAL starts once per process and
 * keeps its own allocations until exit; only DPDK's are suppressed. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:librte_\n";
}

static void sink(void *user, enum vfgx_log_level level, const char *msg)
{
	(void)user;
	if (level <= VFGX_LOG_WARN &&
	    strlen(warnings) + strlen(msg) + 2 < sizeof(warnings)) {
		strcat(warnings, msg);
		strcat(warnings, "\n");
	}
}

/* Open interfaces[0] of a YAML text; returns the vfgx_port_open_config
 * result and leaves the config in *cfgp for the caller to destroy. */
static int open_yaml(const char *y, struct vfgx_config **cfgp, vfgx_port **port)
{
	*cfgp = cfg_of(y);
	warnings[0] = 0;
	vfgx_clear_error(ctx);
	return vfgx_port_open_config(ctx, *cfgp, &(*cfgp)->ifaces[0], port);
}

static void test_bad_eal_args(void **state)
{
	struct vfgx_config *cfg;
	vfgx_port *port = NULL;

	(void)state;
	assert_int_equal(open_yaml("interfaces:\n"
				   "  - name: bad\n"
				   "    backend: dpdk\n"
				   "    address: net_null0\n"
				   "    rx: { queues: [ { id: 0 } ] }\n"
				   "    dpdk: { eal_args: [\"--no-such-eal-option\"] }\n",
				   &cfg, &port), -EINVAL);
	assert_null(port);
	assert_non_null(strstr(vfgx_last_error(ctx), "bad: DPDK EAL rejected its arguments"));
	assert_non_null(strstr(vfgx_last_error(ctx), "--no-such-eal-option"));
	assert_non_null(strstr(vfgx_last_error(ctx), "fix dpdk.eal_args"));
	vfgx_config_destroy(cfg);
}

static const char null_yaml[] =
	"interfaces:\n"
	"  - name: n0\n"
	"    backend: dpdk\n"
	"    address: net_null0,size=96\n"
	"    rx: { queues: [ { id: 0, batch_size: 32 } ] }\n"
	"    dpdk: { eal_args: [\"--no-huge\", \"-m\", \"256\", \"--no-shconf\"], memory: { num_mbufs: 1023, cache: 32 } }\n";

static void test_null_zero_copy(void **state)
{
	struct vfgx_config *cfg;
	struct vfgx_queue_stats st;
	struct vfgx_pkt pk[64];
	struct rte_mempool *mp;
	vfgx_port *port;
	unsigned int avail;
	uint64_t total = 0;

	(void)state;
	if (open_yaml(null_yaml, &cfg, &port))
		fail_msg("%s", vfgx_last_error(ctx));
	assert_int_equal(vfgx_port_rx_burst(port, 0, pk, 64), 32); /* burst cap */
	mp = ((struct rte_mbuf *)pk[0].handle)->pool;
	avail = rte_mempool_avail_count(mp);
	for (int i = 0; i < 32; i++) {
		struct rte_mbuf *m = pk[i].handle;

		/* zero copy: the packet is the mbuf's data */
		assert_ptr_equal(pk[i].data, rte_pktmbuf_mtod(m, uint8_t *));
		assert_int_equal(pk[i].len, 96);
		assert_int_equal(m->pool, mp);
		assert_int_equal(pk[i].flags, 0);
	}
	total += 32;
	vfgx_port_release(port, 0, pk, 32);
	assert_int_equal(rte_mempool_avail_count(mp), avail + 32);
	for (int r = 0; r < 100; r++) {
		int n = vfgx_port_rx_burst(port, 0, pk, 32);

		assert_true(n > 0);
		total += (uint64_t)n;
		vfgx_port_release(port, 0, pk, (uint16_t)n);
	}
	/* every mbuf back in the pool after bulk release */
	assert_int_equal(rte_mempool_in_use_count(mp), 0);
	/* release frees what the descriptors hold, also when the caller
	 * swapped handles with an earlier burst's copy or releases parts */
	{
		struct vfgx_pkt keep[32], tmp;
		struct rte_mbuf *a7;
		int n1 = vfgx_port_rx_burst(port, 0, pk, 32), n2, n3;

		assert_int_equal(n1, 32);
		memcpy(keep, pk, sizeof(keep));
		n2 = vfgx_port_rx_burst(port, 0, pk, 32);
		assert_int_equal(n2, 32);
		tmp = pk[5];
		pk[5] = keep[7];
		keep[7] = tmp;
		a7 = pk[5].handle;
		rte_mbuf_refcnt_update(a7, 1);
		vfgx_port_release(port, 0, pk, (uint16_t)n2);
		/* a7 was released once (refcnt 2 -> 1); the mbuf it displaced
		 * (now in keep[7]) was not: all of keep's burst and b5 */
		assert_int_equal(rte_mbuf_refcnt_read(a7), 1);
		assert_int_equal(rte_mempool_in_use_count(mp), 33);
		vfgx_port_release(port, 0, keep, (uint16_t)n1);
		assert_int_equal(rte_mempool_in_use_count(mp), 1);
		rte_pktmbuf_free(a7);
		n3 = vfgx_port_rx_burst(port, 0, pk, 32);
		assert_int_equal(n3, 32);
		vfgx_port_release(port, 0, pk, 10);
		assert_int_equal(rte_mempool_in_use_count(mp), 22);
		vfgx_port_release(port, 0, pk + 10, (uint16_t)(n3 - 10));
		assert_int_equal(rte_mempool_in_use_count(mp), 0);
		total += (uint64_t)(n1 + n2 + n3);
	}
	/* a reference the caller took on an mbuf of the last burst, with the
	 * descriptors untouched, survives the release (no raw put to the
	 * pool for it or its burst) */
	{
		int n4 = vfgx_port_rx_burst(port, 0, pk, 32);
		struct rte_mbuf *m3;

		assert_int_equal(n4, 32);
		m3 = pk[3].handle;
		rte_mbuf_refcnt_update(m3, 1);
		vfgx_port_release(port, 0, pk, (uint16_t)n4);
		assert_int_equal(rte_mbuf_refcnt_read(m3), 1);
		assert_int_equal(rte_mempool_in_use_count(mp), 1);
		rte_pktmbuf_free(m3);
		assert_int_equal(rte_mempool_in_use_count(mp), 0);
		total += (uint64_t)n4;
	}
	assert_int_equal(vfgx_port_stats(port, 0, &st), 0);
	assert_int_equal(st.rx_packets, total);
	assert_int_equal(st.rx_bytes, total * 96);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static void test_unknown_ports(void **state)
{
	static const char *const addrs[] = { "net_nosuchpmd0", "0000:ff:1f.7",
					     "no_such_device" };
	char y[512];

	(void)state;
	for (int i = 0; i < 3; i++) {
		struct vfgx_config *cfg;
		vfgx_port *port = NULL;

		snprintf(y, sizeof(y),
			 "interfaces:\n  - name: u%d\n    backend: dpdk\n"
			 "    address: \"%s\"\n    rx: { queues: [ { id: 0 } ] }\n",
			 i, addrs[i]);
		assert_true(open_yaml(y, &cfg, &port) < 0);
		assert_null(port);
		/* #44: a PCI address the machine lacks is refused before
		 * EAL starts, in one line of vfgx's own */
		assert_non_null(strstr(vfgx_last_error(ctx),
				       i == 1 && access("/sys/bus/pci/devices", F_OK) == 0 ?
				       "no PCI device" : "DPDK cannot attach"));
		assert_non_null(strstr(vfgx_last_error(ctx), addrs[i]));
		vfgx_config_destroy(cfg);
	}
}

static void test_no_port_and_bad_keys(void **state)
{
	struct vfgx_config *cfg;
	vfgx_port *port = NULL;

	(void)state;
	assert_int_equal(open_yaml("interfaces:\n  - name: e\n    backend: dpdk\n"
				   "    rx: { queues: [ { id: 0 } ] }\n",
				   &cfg, &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "e: no DPDK port"));
	vfgx_config_destroy(cfg);
	/* the dpdk section's keys and values, and its flows against the
	 * interface's rx queues: refused when the config loads */
	assert_int_equal(load_rc("interfaces:\n  - name: e\n    backend: dpdk\n"
				 "    address: net_null9\n"
				 "    rx: { queues: [ { id: 0 } ] }\n"
				 "    dpdk:\n      memory: { fallback: sometimes }\n"), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "t.yaml:7:"));
	assert_non_null(strstr(vfgx_last_error(ctx), "fallback"));
	assert_int_equal(load_rc("interfaces:\n  - name: e\n    backend: dpdk\n"
				 "    address: net_null9\n"
				 "    rx: { queues: [ { id: 0 } ] }\n"
				 "    dpdk:\n      flows: [ { udp_dst_port: 5000, queue: 3 } ]\n"), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "t.yaml:7:"));
	assert_non_null(strstr(vfgx_last_error(ctx), "1 rx queues"));
}

static void test_double_open_and_eal_reuse(void **state)
{
	struct vfgx_config *c1, *c2;
	vfgx_port *p1, *p2 = NULL;

	(void)state;
	if (open_yaml(null_yaml, &c1, &p1))
		fail_msg("%s", vfgx_last_error(ctx));
	/* the second port's eal_args are ignored: EAL starts once */
	assert_non_null(strstr(warnings, "n0: DPDK EAL was initialised by port n0"));
	assert_int_equal(open_yaml(null_yaml, &c2, &p2), -EBUSY);
	assert_null(p2);
	assert_non_null(strstr(vfgx_last_error(ctx), "already open"));
	vfgx_config_destroy(c2);
	vfgx_port_close(p1);
	/* closed ports can be opened again */
	if (open_yaml(null_yaml, &c2, &p2))
		fail_msg("%s", vfgx_last_error(ctx));
	vfgx_port_close(p2);
	vfgx_config_destroy(c1);
	vfgx_config_destroy(c2);
}

static uint32_t build(uint8_t *buf, uint16_t dport, uint32_t stream,
		      uint64_t seq, uint32_t len)
{
	struct vfgx_pkt_spec s = {
		.src_mac = { 2, 0, 0, 0, 0, 1 }, .dst_mac = { 2, 0, 0, 0, 0, 2 },
		.src_ip = 0xC6124901, .dst_ip = 0xC6124902, .src_port = 4000,
		.dst_port = dport, .stream = stream, .seq = seq,
		.frame_len = len, .udp_csum = true,
	};

	return vfgx_pkt_build(buf, 2048, &s);
}

/* Check a received frame: valid, port, stream, sequence, and the
 * generator's payload pattern (rebuilt and compared byte for byte). */
static void check_frame(const struct vfgx_pkt *p, uint16_t dport,
			uint32_t stream, uint64_t seq)
{
	struct vfgx_parsed ps = { 0 };
	uint8_t ref[2048];
	uint32_t len = build(ref, dport, stream, seq, p->len);

	assert_int_equal(vfgx_parse(p->data, p->len, &ps), VFGX_STAGE_PASS);
	assert_int_equal(ps.dst_port, dport);
	assert_int_equal(vfgx_rd32(p->data + ps.payload_off), stream);
	assert_int_equal(vfgx_rd64(p->data + ps.payload_off + 8), seq);
	assert_int_equal(len, p->len);
	assert_memory_equal(ref, p->data, len);
}

static void test_ring_loopback(void **state)
{
	struct vfgx_config *cfg;
	struct vfgx_pkt tx[32], rx[32];
	struct vfgx_queue_stats st;
	uint8_t frames[32][2048];
	vfgx_port *port;
	uint64_t next = 0;

	(void)state;
	if (open_yaml("interfaces:\n  - name: r0\n    backend: dpdk\n"
		      "    address: net_ring0\n"
		      "    rx: { queues: [ { id: 0, batch_size: 32 } ] }\n"
		      "    tx: { queues: [ { id: 0 } ] }\n",
		      &cfg, &port))
		fail_msg("%s", vfgx_last_error(ctx));
	for (uint64_t base = 0; base < 1000; base += 25) {
		int n;

		for (int i = 0; i < 25; i++) {
			tx[i].len = build(frames[i], 5000, 7, base + (uint64_t)i,
					  64 + (uint32_t)((base + (uint64_t)i) % 1400));
			tx[i].data = frames[i];
			tx[i].flags = 0;
		}
		assert_int_equal(vfgx_port_tx_burst(port, 0, tx, 25), 25);
		n = vfgx_port_rx_burst(port, 0, rx, 32);
		assert_int_equal(n, 25);
		for (int i = 0; i < n; i++)
			check_frame(&rx[i], 5000, 7, next++);
		vfgx_port_release(port, 0, rx, (uint16_t)n);
	}
	assert_int_equal(next, 1000);
	assert_int_equal(vfgx_port_stats(port, 0, &st), 0);
	assert_int_equal(st.rx_packets, 1000);
	assert_int_equal(st.tx_packets, 1000);
	assert_int_equal(st.rx_bytes, st.tx_bytes);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static void test_software_steering(void **state)
{
	struct vfgx_config *cfg;
	struct vfgx_pkt tx[32], rx[32];
	uint8_t frames[32][2048];
	uint64_t next[2] = { 0, 0 };
	vfgx_port *port = NULL;
	const char *y =
		"interfaces:\n  - name: s0\n    backend: dpdk\n"
		"    address: net_ring1\n"
		"    rx: { queues: [ { id: 0, batch_size: 32 }, { id: 1, batch_size: 32 } ] }\n"
		"    tx: { queues: [ { id: 0 } ] }\n"
		"    dpdk:\n"
		"      steering: %s\n"
		"      flows: [ { udp_dst_port: 6001, queue: 1 } ]\n";
	char buf[512];

	(void)state;
	snprintf(buf, sizeof(buf), y, "flow");
	assert_int_equal(open_yaml(buf, &cfg, &port), -ENOTSUP);
	assert_non_null(strstr(vfgx_last_error(ctx), "refused an rte_flow rule"));
	vfgx_config_destroy(cfg);
	snprintf(buf, sizeof(buf), y, "auto");
	if (open_yaml(buf, &cfg, &port))
		fail_msg("%s", vfgx_last_error(ctx));
	assert_non_null(strstr(warnings, "steering in software"));
	for (uint64_t base = 0; base < 640; base += 32) {
		int n;

		/* everything goes out on tx 0 = rx 0; odd packets are 6001 */
		for (int i = 0; i < 32; i++) {
			uint64_t k = base + (uint64_t)i;

			tx[i].len = build(frames[i], k & 1 ? 6001 : 6000,
					  (uint32_t)(k & 1), k / 2, 200);
			tx[i].data = frames[i];
			tx[i].flags = 0;
		}
		assert_int_equal(vfgx_port_tx_burst(port, 0, tx, 32), 32);
		n = vfgx_port_rx_burst(port, 0, rx, 32);
		assert_int_equal(n, 16);
		for (int i = 0; i < n; i++)
			check_frame(&rx[i], 6000, 0, next[0]++);
		vfgx_port_release(port, 0, rx, (uint16_t)n);
		n = vfgx_port_rx_burst(port, 1, rx, 32);
		assert_int_equal(n, 16);
		for (int i = 0; i < n; i++)
			check_frame(&rx[i], 6001, 1, next[1]++);
		vfgx_port_release(port, 1, rx, (uint16_t)n);
	}
	assert_int_equal(next[0], 320);
	assert_int_equal(next[1], 320);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static const char ext_yaml[] =
	"memory_regions:\n"
	"  - { name: pinned_rx, kind: host, buf_size: 2048, num_bufs: 1024 }\n"
	"interfaces:\n  - name: x0\n    backend: dpdk\n"
	"    address: net_null1\n"
	"    rx: { queues: [ { id: 0, memory_region: pinned_rx, batch_size: 16 } ] }\n"
	"    dpdk: { memory: { fallback: %s } }\n";

static void test_extmem_fallback(void **state)
{
	struct vfgx_config *cfg;
	struct vfgx_pkt pk[16];
	vfgx_port *port = NULL;
	char y[1024];
	int n;

	(void)state;
	snprintf(y, sizeof(y), ext_yaml, "fail");
	assert_int_equal(open_yaml(y, &cfg, &port), -ENOTSUP);
	assert_null(port);
	assert_non_null(strstr(vfgx_last_error(ctx),
			       "x0: rx queue 0: device net_null1 cannot DMA-map external memory (host region)"));
	assert_non_null(strstr(vfgx_last_error(ctx), "fallback: host"));
	vfgx_config_destroy(cfg);

	snprintf(y, sizeof(y), ext_yaml, "host");
	if (open_yaml(y, &cfg, &port))
		fail_msg("%s", vfgx_last_error(ctx));
	assert_non_null(strstr(warnings, "cannot DMA-map external memory"));
	assert_non_null(strstr(warnings, "using a host mbuf pool"));
	n = vfgx_port_rx_burst(port, 0, pk, 16);
	assert_int_equal(n, 16);
	/* host fallback: a DPDK pool, not the region */
	assert_int_equal(pk[0].flags & VFGX_PKT_GPU, 0);
	assert_ptr_equal(pk[0].data, rte_pktmbuf_mtod((struct rte_mbuf *)pk[0].handle,
						     uint8_t *));
	vfgx_port_release(port, 0, pk, (uint16_t)n);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static void test_header_split_off(void **state)
{
	struct vfgx_config *cfg;
	struct vfgx_pkt pk[8];
	vfgx_port *port = NULL;
	int n;

	(void)state;
	if (open_yaml("interfaces:\n  - name: h0\n    backend: dpdk\n"
		      "    address: net_null2\n"
		      "    rx: { queues: [ { id: 0, batch_size: 8 } ] }\n"
		      "    dpdk: { header_split: true }\n",
		      &cfg, &port))
		fail_msg("%s", vfgx_last_error(ctx));
	assert_non_null(strstr(warnings, "h0: header_split: PMD net_null has no buffer split"));
	n = vfgx_port_rx_burst(port, 0, pk, 8);
	assert_int_equal(n, 8);
	assert_int_equal(pk[0].flags & VFGX_PKT_PAYLOAD, 0);
	vfgx_port_release(port, 0, pk, (uint16_t)n);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_eal_args),
		cmocka_unit_test(test_null_zero_copy),
		cmocka_unit_test(test_unknown_ports),
		cmocka_unit_test(test_no_port_and_bad_keys),
		cmocka_unit_test(test_double_open_and_eal_reuse),
		cmocka_unit_test(test_ring_loopback),
		cmocka_unit_test(test_software_steering),
		cmocka_unit_test(test_extmem_fallback),
		cmocka_unit_test(test_header_split_off),
	};
	int ret;

	if (geteuid() != 0) {
		printf("test_dpdk: skipped: DPDK's EAL needs root here (run as root)\n");
		return 77;
	}
	if (vfgx_ctx_create(&ctx))
		return 1;
	vfgx_log_set_sink(ctx, sink, NULL);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	vfgx_ctx_destroy(ctx);
	return ret;
}
