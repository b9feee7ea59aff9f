/* test_pipeline.c - vfgx_pipeline over a real loopback port: the engine
 * pipeline.device picks (and the refusal of gpu where CUDA finds none),
 * the user stage and order counting on the cpu engine, observers started
 * before and stopped after the engine with the final counters readable,
 * queue snapshots, typed options without YAML, and option structs with an
 * argsz this library does not know. */
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

static const char two_queues[] =
	"memory_regions:\n"
	"  - { name: rx, kind: host, buf_size: 2048, num_bufs: 512 }\n"
	"interfaces:\n"
	"  - name: lo0\n"
	"    backend: loopback\n"
	"    rx: { queues: [ { id: 0, memory_region: rx }, { id: 1, memory_region: rx } ] }\n"
	"    loopback: { packets: 20000, flows: 2 }\n"
	"pipeline: { workers: 2, device: cpu }\n";

struct fixture {
	struct vfgx_config *cfg;
	vfgx_port *port;
	vfgx_pipeline *pl;
};

static void open_fixture(struct fixture *f, const char *yaml)
{
	assert_int_equal(vfgx_config_load_string(ctx, yaml, strlen(yaml), "t.yaml", &f->cfg), 0);
	assert_int_equal(vfgx_port_open_config(ctx, f->cfg, &f->cfg->ifaces[0], &f->port), 0);
	assert_int_equal(vfgx_pipeline_create(ctx, &f->cfg->pipeline, &f->port, 1, &f->pl), 0);
}

static void run_to_end(vfgx_pipeline *pl)
{
	assert_int_equal(vfgx_pipeline_start(pl), 0);
	while (!vfgx_pipeline_done(pl))
		;
	vfgx_pipeline_stop(pl);
}

static void close_fixture(struct fixture *f)
{
	vfgx_pipeline_destroy(f->pl);
	vfgx_port_close(f->port);
	vfgx_config_destroy(f->cfg);
}

/* --- user stage: sees every delivery; its drops are counted ------------- */
struct stage_count {
	_Atomic uint64_t seen;
};

static int drop_odd(void *user, uint32_t stream, uint64_t seq,
		    const uint8_t *payload, uint32_t len)
{
	struct stage_count *sc = user;

	(void)stream;
	(void)payload;
	(void)len;
	sc->seen++;
	return (int)(seq & 1);
}

static void test_cpu_user_stage(void **state)
{
	struct stage_count sc = { 0 };
	struct vfgx_pipeline_stats st;
	struct fixture f;

	(void)state;
	open_fixture(&f, two_queues);
	assert_string_equal(vfgx_pipeline_engine(f.pl), "cpu");
	assert_non_null(strstr(vfgx_pipeline_describe(f.pl), "2 worker(s) over 2 rx queue(s)"));
	assert_int_equal(vfgx_pipeline_set_user_stage(f.pl, drop_odd, &sc), 0);
	run_to_end(f.pl);
	vfgx_pipeline_stats(f.pl, &st);
	assert_int_equal(sc.seen, 20000);
	assert_int_equal(st.delivered, 10000);
	assert_int_equal(st.drops[VFGX_DROP_USER], 10000);
	assert_int_equal(st.order_errors, 0);
	assert_int_equal(vfgx_pipeline_error(f.pl), 0);
	close_fixture(&f);
}

/* With reorder off and the generator reordering, deliveries go out of
 * order: the engine counts them (what the GPU engine counts on the GPU). */
static void test_cpu_counts_order_errors(void **state)
{
	static const char y[] =
		"interfaces:\n"
		"  - backend: loopback\n"
		"    loopback: { packets: 20000, reorder: 0.1 }\n"
		"pipeline: { device: cpu, reorder: { enabled: false } }\n";
	struct vfgx_pipeline_stats st;
	struct fixture f;

	(void)state;
	open_fixture(&f, y);
	run_to_end(f.pl);
	vfgx_pipeline_stats(f.pl, &st);
	assert_true(st.order_errors > 0);
	assert_true(st.order_errors < st.delivered);
	close_fixture(&f);
}

/* --- observers ------------------------------------------------------------ */
struct obs_log {
	int started, stopped, released;
	uint64_t rx_at_stop;   /* queue snapshots at stop: the final counters */
	uint64_t delivered_at_stop;
	int snap_ret;
};

static int obs_start(void *user, vfgx_pipeline *pl)
{
	struct obs_log *l = user;

	assert_false(vfgx_pipeline_done(pl) && l->started); /* once */
	l->started++;
	return 0;
}

static void obs_stop(void *user, vfgx_pipeline *pl)
{
	struct obs_log *l = user;
	struct vfgx_pipeline_stats st;
	struct vfgx_queue_snap s;

	l->stopped++;
	vfgx_pipeline_stats(pl, &st);
	l->delivered_at_stop = st.delivered;
	for (uint32_t i = 0; i < vfgx_pipeline_nb_queues(pl); i++) {
		l->snap_ret = vfgx_pipeline_queue_snap(pl, i, &s);
		if (l->snap_ret)
			return;
		l->rx_at_stop += s.stats.rx_packets;
		assert_int_equal(s.pool_total, 512);
	}
}

static void obs_release(void *user)
{
	((struct obs_log *)user)->released++;
}

static void test_observer_lifecycle(void **state)
{
	struct obs_log l = { 0 };
	struct vfgx_observer o = {
		.argsz = sizeof(o), .user = &l,
		.start = obs_start, .stop = obs_stop, .release = obs_release,
	};
	struct vfgx_queue_snap s;
	struct fixture f;

	(void)state;
	open_fixture(&f, two_queues);
	assert_int_equal(vfgx_pipeline_nb_queues(f.pl), 2);
	assert_int_equal(vfgx_pipeline_queue_snap(f.pl, 2, &s), -EINVAL);
	assert_int_equal(vfgx_pipeline_add_observer(f.pl, &o), 0);
	run_to_end(f.pl);
	vfgx_pipeline_stop(f.pl); /* idempotent: no second stop callback */
	assert_int_equal(l.started, 1);
	assert_int_equal(l.stopped, 1);
	assert_int_equal(l.released, 0);
	assert_int_equal(l.snap_ret, 0);
	assert_int_equal(l.delivered_at_stop, 20000);
	assert_int_equal(l.rx_at_stop, 20000);
	close_fixture(&f);
	assert_int_equal(l.released, 1);
}

/* A newer caller's longer struct: accepted when the unknown tail is zero,
 * refused (and released) otherwise; a shorter one than version 1 too. */
static void test_observer_argsz(void **state)
{
	struct {
		struct vfgx_observer o;
		uint64_t newer_field;
	} big = { 0 };
	struct obs_log l = { 0 };
	struct fixture f;

	(void)state;
	open_fixture(&f, two_queues);
	big.o = (struct vfgx_observer){ .argsz = sizeof(big), .user = &l,
					.release = obs_release };
	assert_int_equal(vfgx_pipeline_add_observer(f.pl, &big.o), 0);
	big.newer_field = 1;
	assert_int_equal(vfgx_pipeline_add_observer(f.pl, &big.o), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "argsz"));
	assert_int_equal(l.released, 1); /* the refused one */
	big.newer_field = 0;
	big.o.argsz = 4;
	assert_int_equal(vfgx_pipeline_add_observer(f.pl, &big.o), -EINVAL);
	assert_int_equal(l.released, 1); /* too short to hold release: not called */
	close_fixture(&f);
	assert_int_equal(l.released, 2); /* then the attached one */
}

/* --- device resolution ---------------------------------------------------- */
static void test_device_gpu_without_gpu(void **state)
{
	static const char y[] =
		"interfaces:\n"
		"  - backend: loopback\n"
		"    loopback: { packets: 1000 }\n"
		"pipeline: { device: gpu }\n";
	struct vfgx_config *cfg;
	vfgx_pipeline *pl = (vfgx_pipeline *)1;
	vfgx_port *port;
	char desc[256];

	(void)state;
	if (vfgx_gpu_probe(ctx, 0, desc, sizeof(desc)) == 0) {
		printf("SKIP: test_device_gpu_without_gpu: a GPU is here (tests/gpu covers the gpu engine)\n");
		skip();
	}
	assert_int_equal(vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg), 0);
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	assert_int_equal(vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl), -ENODEV);
	assert_null(pl);
	assert_non_null(strstr(vfgx_last_error(ctx), "pipeline.device: gpu, but "));
	assert_non_null(strstr(vfgx_last_error(ctx), "use device: cpu or auto)"));
	/* the advice once (a build without CUDA said it twice: the probe's
	 * "set pipeline.device: cpu" and then the same again) */
	assert_null(strstr(strstr(vfgx_last_error(ctx), "device: cpu") + 1, "device: cpu"));
	/* auto falls back to the cpu engine */
	cfg->pipeline.device = VFGX_DEVICE_AUTO;
	assert_int_equal(vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl), 0);
	assert_string_equal(vfgx_pipeline_engine(pl), "cpu");
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

/* A program's own ports meet the same rule at vfgx_pipeline_create: a
 * port reports the largest frame each rx queue hands out (its backend's
 * options in its buffers), and under the gpu engine host-memory frames
 * above the bounce slot are one line, not an EMSGSIZE mid-run.  The
 * engine part needs a GPU (the probe says): skipped without. */
static void test_rx_memory_program_ports(void **state)
{
	struct vfgx_loopback_opts lo;
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "big0", .backend = "loopback",
				     .nb_rx_queues = 1, .burst = 64, .backend_opts = &lo.hdr };
	struct vfgx_pipeline_config conf;
	vfgx_pipeline *pl = NULL;
	vfgx_port *port;
	char desc[256];
	int ret;

	(void)state;
	vfgx_loopback_opts_default(&lo);
	lo.packets = 100;
	lo.packet_size = 3000;
	assert_int_equal(vfgx_port_open(ctx, &pc, &port), 0);
	assert_int_equal(vfgx_port_rx_frame_max(port, 0), 3000);
	assert_int_equal(vfgx_port_rx_frame_max(port, 1), 0); /* no such queue */
	vfgx_pipeline_config_default(&conf);
	conf.device = VFGX_DEVICE_GPU;
	if (vfgx_gpu_probe(ctx, 0, desc, sizeof(desc))) {
		vfgx_port_close(port);
		printf("SKIP: test_rx_memory_program_ports: the gpu engine part needs a GPU\n");
		skip();
	}
	ret = vfgx_pipeline_create(ctx, &conf, &port, 1, &pl);
	assert_int_equal(ret, -EINVAL);
	assert_null(pl);
	assert_non_null(strstr(vfgx_last_error(ctx),
			       "big0 rx queue 0: host memory with frames of up to 3000 bytes, but the gpu engine copies host-memory frames through 2048-byte slots"));
	assert_null(strchr(vfgx_last_error(ctx), '\n'));
	vfgx_port_close(port);
	/* frames that fit the slot: the engine is made */
	lo.packet_size = 2048;
	assert_int_equal(vfgx_port_open(ctx, &pc, &port), 0);
	assert_int_equal(vfgx_port_rx_frame_max(port, 0), 2048);
	assert_int_equal(vfgx_pipeline_create(ctx, &conf, &port, 1, &pl), 0);
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
}

/* pipeline.gpu.rx_threads: 0 (auto) by default, a count up to 64, and a
 * file:line error past it, with or without a GPU here. */
/* Rx memory an engine cannot read is refused at load, in one line, before
 * any region is made (so also here, without a GPU): GPU memory for the cpu
 * engine (its workers segfaulted reading replayed GPU frames), host
 * frames above the gpu engine's 2048-byte bounce slot (EMSGSIZE mid-run
 * before; larger buffers with frames that fit are read).  auto and what
 * each engine reads pass. */
static void test_rx_memory_refused_at_load(void **state)
{
	static const char fmt[] =
		"memory_regions:\n"
		"  - { name: rx, kind: %s, buf_size: %u, num_bufs: 64 }\n"
		"interfaces:\n"
		"  - name: rp0\n"
		"    backend: loopback\n"
		"    rx: { queues: [ { id: 0, memory_region: rx }, { id: 1, memory_region: rx } ] }\n"
		"    loopback: { packets: 1000, replay: true, packet_size: %u }\n"
		"pipeline: { device: %s }\n";
	static const struct {
		const char *kind, *device;
		unsigned buf_size, frame;
		const char *want; /* NULL: loads */
	} cases[] = {
		{ "gpu", "cpu", 512, 512, "t.yaml: interface rp0 rx queue 0: memory_region rx: GPU memory, which the cpu engine cannot read" },
		{ "host", "gpu", 4096, 3000, "t.yaml: interface rp0 rx queue 0: memory_region rx: host memory with frames of up to 3000 bytes, but the gpu engine copies host-memory frames through 2048-byte slots (use memory_regions[].kind: pinned, or loopback.packet_size: 2048 or less)" },
		{ "hugepage", "gpu", 4096, 2049, "frames of up to 2049 bytes" },
		/* frames within the slot in larger host buffers: read */
		{ "host", "gpu", 4096, 2048, NULL },
		{ "host", "gpu", 2048, 512, NULL },
		{ "pinned", "gpu", 9000, 8000, NULL },
		{ "pinned", "cpu", 512, 512, NULL },
		{ "gpu", "auto", 512, 512, NULL },
		{ "host", "auto", 9000, 8000, NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vfgx_config *cfg = NULL;
		char y[1024];
		int ret;

		snprintf(y, sizeof(y), fmt, cases[i].kind, cases[i].buf_size, cases[i].frame,
			 cases[i].device);
		ret = vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg);
		if (!cases[i].want) {
			assert_int_equal(ret, 0);
			vfgx_config_destroy(cfg);
			continue;
		}
		assert_int_equal(ret, -EINVAL);
		assert_null(cfg);
		assert_non_null(strstr(vfgx_last_error(ctx), cases[i].want));
		assert_null(strchr(vfgx_last_error(ctx), '\n'));
	}
}

static void test_gpu_rx_threads_option(void **state)
{
	static const char *const y[] = {
		"pipeline: { device: cpu }\n",
		"pipeline:\n  device: cpu\n  gpu: { rx_threads: 3 }\n",
		"pipeline:\n  device: cpu\n  gpu: { rx_threads: 65 }\n",
	};
	(void)state;
	/* pipeline.gpu is parsed at load, whatever the device */
	for (int i = 0; i < 3; i++) {
		struct vfgx_config *cfg = NULL;
		int ret = vfgx_config_load_string(ctx, y[i], strlen(y[i]), "t.yaml", &cfg);

		if (i < 2) {
			assert_int_equal(ret, 0);
			assert_int_equal(cfg->pipeline.gpu->rx_threads, i ? 3 : 0);
		} else {
			assert_int_equal(ret, -EINVAL);
			assert_null(cfg);
			assert_non_null(strstr(vfgx_last_error(ctx), "t.yaml:3"));
			assert_non_null(strstr(vfgx_last_error(ctx), "rx_threads"));
		}
		vfgx_config_destroy(cfg);
	}
}

static bool have_backend(const char *name)
{
	for (const char *const *b = vfgx_port_backends(); *b; b++)
		if (!strcmp(*b, name))
			return true;
	return false;
}

/* --- typed options, no YAML ------------------------------------------------ */
static void test_typed_options(void **state)
{
	struct vfgx_loopback_opts lo;
	struct vfgx_pipeline_config pc;
	struct vfgx_gpu_opts go;
	vfgx_gpu_proc *gp = (vfgx_gpu_proc *)&go;
	struct vfgx_port_conf conf = {
		.argsz = sizeof(conf), .name = "gen", .backend = "loopback",
		.nb_rx_queues = 2, .burst = 64, .backend_opts = &lo.hdr,
	};
	struct vfgx_pipeline_stats st;
	vfgx_pipeline *pl;
	vfgx_port *port;

	(void)state;
	vfgx_loopback_opts_default(&lo);
	lo.packets = 3000;
	lo.packet_size = 128;
	lo.duplicate = 0.01;
	assert_int_equal(vfgx_port_open(ctx, &conf, &port), 0);
	vfgx_pipeline_config_default(&pc);
	pc.device = VFGX_DEVICE_CPU;
	pc.workers = 2;
	pc.verify_payload = true;
	assert_int_equal(vfgx_pipeline_create(ctx, &pc, &port, 1, &pl), 0);
	run_to_end(pl);
	vfgx_pipeline_stats(pl, &st);
	assert_int_equal(st.delivered, 3000);
	assert_int_equal(st.verify_errors, 0);
	assert_true(st.drops[VFGX_DROP_DUPLICATE] + st.drops[VFGX_DROP_LATE] > 0);
	assert_int_equal(st.bytes, st.packets * 128);
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);

	/* a range the YAML adapter would refuse is refused here too */
	lo.vlan = 5000;
	assert_int_equal(vfgx_port_open(ctx, &conf, &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "gen: loopback options: vlan: 5000 is out of range (must be 0..4094)"));
	lo.vlan = 0;
	lo.hdr.argsz = 8; /* older than any version */
	assert_int_equal(vfgx_port_open(ctx, &conf, &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "vfgx_loopback_opts argsz 8"));
	conf.argsz = 0;
	assert_int_equal(vfgx_port_open(ctx, &conf, &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "vfgx_port_conf argsz 0"));
	/* typed rdma options are checked before any device is opened */
	conf.argsz = sizeof(conf);
	conf.backend = "rdma";
#if VFGX_HAVE_RDMA
	if (have_backend("rdma")) {
		struct vfgx_rdma_opts ro;

		vfgx_rdma_opts_default(&ro);
		ro.peer = "10.0.0.1:7471";
		ro.qp_type = 2;
		conf.backend_opts = &ro.hdr;
		assert_int_equal(vfgx_port_open(ctx, &conf, &port), -EINVAL);
		assert_non_null(strstr(vfgx_last_error(ctx), "rdma options: qp_type: 2 is not one of the 2 values"));
		/* ring mode's own rules, the same words as the YAML path's */
		ro.qp_type = VFGX_RDMA_RC;
		ro.mode = VFGX_RDMA_MODE_RING;
		ro.ring_bytes = 5000;
		assert_int_equal(vfgx_port_open(ctx, &conf, &port), -EINVAL);
		assert_non_null(strstr(vfgx_last_error(ctx), "rdma options: ring_bytes: 5000 is not a power of two"));
		ro.ring_bytes = 8192;
		ro.qp_type = VFGX_RDMA_UD;
		assert_int_equal(vfgx_port_open(ctx, &conf, &port), -EINVAL);
		assert_non_null(strstr(vfgx_last_error(ctx), "rdma options: mode: ring WRITEs into the peer's memory, which needs qp_type: rc"));
		conf.backend_opts = &lo.hdr;
	}
#endif
	pc.argsz = 0;
	assert_int_equal(vfgx_pipeline_create(ctx, &pc, &port, 1, &pl), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "vfgx_pipeline_config argsz 0"));
	/* typed gpu options carry argsz too, checked on every engine */
	vfgx_pipeline_config_default(&pc);
	pc.device = VFGX_DEVICE_GPU;
	vfgx_gpu_opts_default(&go);
	assert_int_equal(go.argsz, sizeof(go));
	go.argsz = 4;
	pc.gpu = &go;
	assert_int_equal(vfgx_pipeline_create(ctx, &pc, &port, 1, &pl), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "vfgx_gpu_opts argsz 4"));
	go.argsz = sizeof(go);
	assert_int_equal(vfgx_gpu_proc_create(ctx, &pc, &(struct vfgx_gpu_opts){ .argsz = 2 }, &gp), -EINVAL);
	assert_null(gp);
	assert_non_null(strstr(vfgx_last_error(ctx), "vfgx_gpu_opts argsz 2"));
}

/* The socket port from typed options: a UDP server on a free port, and
 * the typed check refusing what the YAML adapter refuses. */
static void test_typed_socket(void **state)
{
	struct vfgx_socket_opts so;
	struct vfgx_port_conf conf = {
		.argsz = sizeof(conf), .name = "udp", .backend = "socket",
		.nb_rx_queues = 1, .burst = 64, .backend_opts = &so.hdr,
	};
	struct vfgx_socket_info si;
	vfgx_port *port;

	(void)state;
	vfgx_socket_opts_default(&so);
	so.uri = "udp://127.0.0.1:0";
	so.gro = false;
	assert_int_equal(vfgx_port_open(ctx, &conf, &port), 0);
	assert_int_equal(vfgx_socket_info(port, &si), 0);
	assert_false(si.tcp);
	assert_true(si.server);
	assert_false(si.gro);
	assert_true(si.port > 0);
	vfgx_port_close(port);
	so.role = 7;
	assert_int_equal(vfgx_port_open(ctx, &conf, &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "udp: socket options: role: 7 is not one of the 2 values"));
	so.role = VFGX_SOCKET_SERVER;
	so.connect_timeout_ms = 0;
	assert_int_equal(vfgx_port_open(ctx, &conf, &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "connect_timeout_ms: 0 is out of range (must be 1..600000)"));
}

/* AF_XDP options are checked before any interface is touched. */
static void test_typed_afxdp_checks(void **state)
{
	struct vfgx_afxdp_opts ao;
	struct vfgx_port_conf conf = {
		.argsz = sizeof(conf), .name = "xdp", .backend = "afxdp",
		.address = "lo", .nb_rx_queues = 1, .burst = 64, .backend_opts = &ao.hdr,
	};
	vfgx_port *port;
	(void)state;
	if (!have_backend("afxdp")) {
		printf("SKIP: test_typed_afxdp_checks: this build has no AF_XDP backend (libxdp)\n");
		skip();
	}
	vfgx_afxdp_opts_default(&ao);
	ao.fill_ring = 3000;
	assert_int_equal(vfgx_port_open(ctx, &conf, &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "xdp: afxdp options: fill_ring: 3000 is not a power of two"));
	ao.fill_ring = 2048;
	ao.frame_size = 3000;
	assert_int_equal(vfgx_port_open(ctx, &conf, &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "frame_size 3000; AF_XDP frames are 2048 or 4096 bytes"));
}

/* DPDK from typed options: EAL arguments and the pool size without YAML;
 * net_null hands out 96-byte frames.  A bad rule is refused first. */
static void test_typed_dpdk(void **state)
{
	static const char *const eal[] = { "--no-huge", "-m", "256", "--no-shconf", "--no-pci" };
	struct vfgx_dpdk_flow bad = { .udp_dst_port = 5000, .queue = 3 };
	struct vfgx_dpdk_opts dk;
	struct vfgx_port_conf conf = {
		.argsz = sizeof(conf), .name = "null", .backend = "dpdk",
		.address = "net_null0,size=96", .nb_rx_queues = 1, .burst = 32,
		.backend_opts = &dk.hdr,
	};
	struct vfgx_pkt pk[32];
	vfgx_port *port;
	int n;

	(void)state;
#if !VFGX_HAVE_DPDK
	(void)bad; (void)eal; (void)conf; (void)pk; (void)port; (void)n;
	printf("SKIP: test_typed_dpdk: this build has no DPDK backend (libdpdk)\n");
	skip();
#else
	if (!have_backend("dpdk")) {
		printf("SKIP: test_typed_dpdk: the dpdk backend is not registered\n");
		skip();
	}
	vfgx_dpdk_opts_default(&dk);
	dk.eal_args = eal;
	dk.nb_eal_args = 5;
	dk.num_mbufs = 1023;
	dk.cache = 32;
	dk.flows = &bad;
	dk.nb_flows = 1;
	assert_int_equal(vfgx_port_open(ctx, &conf, &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "null: dpdk options: flows[0]"));
	dk.nb_flows = 0;
	dk.cache = 600;
	assert_int_equal(vfgx_port_open(ctx, &conf, &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "cache: 600 is out of range"));
	dk.cache = 32;
	assert_int_equal(vfgx_port_open(ctx, &conf, &port), 0);
	n = vfgx_port_rx_burst(port, 0, pk, 32);
	assert_int_equal(n, 32);
	assert_int_equal(pk[0].len, 96);
	vfgx_port_release(port, 0, pk, (uint16_t)n);
	vfgx_port_close(port);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_user_stage),
		cmocka_unit_test(test_cpu_counts_order_errors),
		cmocka_unit_test(test_observer_lifecycle),
		cmocka_unit_test(test_observer_argsz),
		cmocka_unit_test(test_device_gpu_without_gpu),
		cmocka_unit_test(test_rx_memory_refused_at_load),
		cmocka_unit_test(test_rx_memory_program_ports),
		cmocka_unit_test(test_gpu_rx_threads_option),
		cmocka_unit_test(test_typed_options),
		cmocka_unit_test(test_typed_socket),
		cmocka_unit_test(test_typed_afxdp_checks),
		cmocka_unit_test(test_typed_dpdk),
	};

	return cmocka_run_group_tests(tests, ctx_quiet_setup, ctx_teardown);
}
