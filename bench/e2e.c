/* e2e.c - `vfgx bench e2e`: `vfgx run`'s own path on the GPU, from
 * replayed frames (no wire, no NIC): a loopback port in replay mode (frames
 * built once in pinned host or GPU memory) -> the GPU runner (a thread per rx queue and
 * the dispatcher) -> the
 * GPU processor -> release, for 64, 512, 1500 and 8192 B frames, every
 * launch mode, with and without payload verification, at full load and at
 * 10% of it; 64 B at 10, 50 and 90% of its peak, as configured and with
 * pipeline.max_in_flight_bytes (--max-in-flight); the kernel-only figure of `vfgx bench gpu`, the PCIe read
 * floor and the CPU pipeline on every online core on the demo's kind of
 * traffic in the same run; the replay source alone (one thread with
 * loopback.replay_inline, and with its rewriting thread, both counted);
 * and the comm-list hand-off bounded by one clock on each side (no clock
 * model).  Without a GPU (a CUDA build on a machine with none) it runs and
 * writes the CPU rows alone, the GPU targets unmeasured: one command,
 * `vfgx bench e2e`, gives the CPU rows anywhere and all rows on a GPU
 * host. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/bench.h>
#include <vfgx/gpu.h>
#include <vfgx/vfgx.h>

#include "commands.h"
#include "gpu_kernel.h"
#include "results.h"
#include "vfgx_build.h"

/* --seconds' upper bound and --max-in-flight's default, the same in a
 * build without CUDA (options are parsed before the build is looked at) */
#define E2E_MAX_SECONDS 30
#define E2E_IN_FLIGHT_DEFAULT (4u << 20)

static const struct cli_opt e2e_opts[] = {
	{ "out", 'o', "DIR", "write e2e.md and e2e.svg into DIR (default bench/results)" },
	{ "seconds", 's', "S", "measuring time per run (default 0.5, at most 30)" },
	{ "max-in-flight", 'm', "BYTES", "pipeline.max_in_flight_bytes of the bounded latency rows (default 4194304)" },
	{ "json", 'j', NULL, "the results file as one JSON document on stdout (docs/json.md)" },
	{ "latency-only", 'l', NULL, "only the 64 B latency runs (peak, 10/50/90%), 3 rounds, printed with the item stamps of a -Dgpu_item_stamps build; no results file" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_bench_cli_e2e = {
	.name = "bench e2e",
	.summary = "GPU product path end to end: vfgx run's GPU pipeline on replayed traffic; latency at 10, 50 and 90% of the peak, with and without pipeline.max_in_flight_bytes",
	.opts = e2e_opts,
};

/* -1: go on; else the exit status (help printed, or a usage error) */
static int e2e_parse(int argc, char **argv, const char **out, double *seconds,
		     uint64_t *in_flight, bool *lat_only)
{
	int c;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_bench_cli_e2e)) != -1) {
		switch (c) {
		case 'o':
			*out = optarg;
			break;
		case 's':
			if (vfgx_num_double(optarg, 0, E2E_MAX_SECONDS, seconds, NULL, 0) ||
			    *seconds <= 0) {
				fprintf(stderr, "vfgx bench e2e: --seconds must be 0..%d\n",
					E2E_MAX_SECONDS);
				return 2;
			}
			break;
		case 'm':
			if (vfgx_flag_u64("bench e2e", "--max-in-flight", optarg, 1, 1ull << 40,
					  in_flight))
				return 2;
			break;
		case 'l':
			*lat_only = true;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_bench_cli_e2e);
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc)
		return cli_bad_operands(&vfgx_bench_cli_e2e, "takes no operands");
	return -1;
}

#if VFGX_HAVE_CUDA
#include "gpu_bw.h"

#define NB_SIZES 4
#define NB_MODES 3
#define FLOWS 64         /* as the kernel-only reference's 64 streams, fed as these queues' items */
/* rx queues, each polled by a thread of its own (pipeline.gpu.rx_threads
 * 0 on a machine with 10 or more CPUs): one core's rx is not enough for
 * the kernel's rate at 64 B */
#define QUEUES 8
#define HANDOFFS 20000
/* target configurations repeated, each with its reference, for the target
 * lines (bench_target_rounds) */
#define ROUNDS 7
/* the CPU reference's workers and the demo traffic's queues: every online
 * core, at most this many */
#define MAX_CORES 32

static const uint32_t sizes[NB_SIZES] = { 64, 512, 1500, 8192 };
static const char *const place_names[2] = { "pinned", "gpu" };

struct e2e {
	double mpps, gbps, p50_us, p99_us;
	double rx_ns, submit_ns, room_ns; /* feeder, per packet */
	uint32_t rx_threads;              /* 0: rx on the dispatcher's thread */
	bool exact; /* every packet delivered, nothing dropped, in order */
	bool ok;
	char stamps[640]; /* -Dgpu_item_stamps: where the items' time went */
};

/* Items in flight: 256 up to 512 B, as the kernel-only reference keeps in
 * flight (fewer leave the H100's 132 blocks idle: 64 gave 0.71 of the
 * kernel's rate at 64 B); 32 from 1500 B (8192 B frames from pinned
 * memory reach the PCIe floor with them).  They bound the ring a queue
 * needs: every frame of an eighth must be released before the eighth is
 * rewritten. */
static uint32_t items_for(uint32_t size)
{
	return size >= 1500 ? 32 : 256;
}

static uint32_t ring_for(uint32_t items, uint32_t queues)
{
	return 4 * items * 1024 / queues;
}

/* The replay ring of a queue for frames of size bytes on QUEUES queues:
 * at 64 B 16 times its share of the packets in flight, above that 4
 * times.  The ring bounds the source: an eighth is rewritten only once
 * all its frames of the lap before are back, and at 64 B from GPU memory
 * (H200, `vfgx run` 2 s, 8 queues, 256 items) 4x gave 302-312 Mpps, 8x
 * 343-348, 16x 371-381 and 32x 375-377, against 373-378 for the kernel
 * alone; 16x of 64 B frames is 32 MiB a queue. */
static uint32_t ring_for_size(uint32_t size)
{
	return (size <= 64 ? 4 : 1) * ring_for(items_for(size), QUEUES);
}

static uint32_t buf_for(uint32_t size)
{
	return (size + 63) & ~63u;
}

/* The YAML of one run: replay port (queues queues, flows flows), pipeline
 * on device (gpu|cpu) with the stages of the kernel-only reference. */
static int e2e_yaml(char *y, size_t len, uint32_t size, const char *kind, uint32_t queues,
		    uint32_t flows, uint32_t ring, double rate, const char *device,
		    uint32_t workers, const char *mode, bool verify, uint32_t items,
		    double seconds, uint32_t rx_threads)
{
	char qs[MAX_CORES * 48] = "";

	for (uint32_t q = 0; q < queues && q < MAX_CORES; q++)
		snprintf(qs + strlen(qs), sizeof(qs) - strlen(qs),
			 "%s{id: %u, memory_region: r, batch_size: 256}", q ? ", " : "", q);
	return snprintf(y, len,
			"log_level: warn\n"
			"memory_regions: [{name: r, kind: %s, buf_size: %u, num_bufs: %u}]\n"
			"interfaces:\n"
			"  - name: rp\n"
			"    backend: loopback\n"
			"    rx: {queues: [%s]}\n"
			"    loopback: {packets: 0, packet_size: %u, flows: %u, replay: true,\n"
			"               rate_pps: %.0f}\n"
			"pipeline:\n"
			"  device: %s\n"
			"  workers: %u\n"
			"  duration_s: %g\n"
			"  filter: {udp_dst_ports: [5000]}\n"
			"  reorder: {enabled: true, window: 1024, slot_size: %u}\n"
			"  verify_payload: %s\n"
			"  gpu: {mode: %s, items: %u, burst: 1024, graph_items: %u, timeout_ms: 20000,\n"
			"        rx_threads: %u}\n",
			kind, buf_for(size), ring, qs, size, flows, rate, device, workers,
			seconds, size < 2048 ? 2048 : size, verify ? "true" : "false", mode,
			items, items / 2, rx_threads);
}

/* pipeline.max_in_flight_bytes added to a YAML of e2e_yaml (whose last
 * lines are the pipeline mapping's) */
static void with_in_flight(char *y, size_t len, uint64_t bytes)
{
	size_t n = strlen(y);

	snprintf(y + n, len - n, "  max_in_flight_bytes: %llu\n", (unsigned long long)bytes);
}

/* The verify target's traffic, the same for both sides: 512 B frames, n rx
 * queues (n = the host's online cores), 4 flows a queue, reorder 1024,
 * payload verification.  The CPU runs n workers (one per queue), frames in
 * host memory; the GPU runs n - 1 rx threads and the dispatcher (n CPU
 * threads, 1 when n is 1) and the GPU, frames in pinned memory. */
static void demo_yaml(char *y, size_t len, bool gpu, uint32_t n, double seconds)
{
	e2e_yaml(y, len, 512, gpu ? "pinned" : "host", n, 4 * n, ring_for(64, n), 0,
		 gpu ? "gpu" : "cpu", gpu ? 1 : n, "persistent", true, 64, 2 * seconds,
		 gpu ? (n > 1 ? n - 1 : 1) : 0);
}

/* One run of `vfgx run`'s path from a YAML config; wall time from start to
 * the runner's end. */
static int e2e_run(vfgx_ctx *ctx, const char *y, struct e2e *r)
{
	struct vfgx_config *cfg = NULL;
	vfgx_port *port = NULL;
	vfgx_gpu_pipeline *gpl = NULL;
	vfgx_pipeline *pl = NULL;
	struct vfgx_pipeline_stats st;
	uint64_t order = 0, t0, t1;
	bool gpu;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	if ((ret = vfgx_config_load_string(ctx, y, strlen(y), "e2e.yaml", &cfg)))
		return ret;
	gpu = cfg->pipeline.device == VFGX_DEVICE_GPU;
	/* the runner reads pipeline.gpu typed: config load parsed it */
	if ((ret = vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port)))
		goto out;
	ret = gpu ? vfgx_gpu_pipeline_create(ctx, &cfg->pipeline, &port, 1, NULL, &gpl) :
		    vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl);
	if (ret)
		goto out;
	t0 = vfgx_now_ns();
	if ((ret = gpu ? vfgx_gpu_pipeline_start(gpl) : vfgx_pipeline_start(pl)))
		goto out;
	while (!(gpu ? vfgx_gpu_pipeline_done(gpl) : vfgx_pipeline_done(pl))) {
		struct timespec ts = { 0, 2000000 };

		nanosleep(&ts, NULL);
	}
	if (gpu) {
		uint64_t first;
		struct vfgx_gpu_feeder fd;

		vfgx_gpu_pipeline_stop(gpl);
		vfgx_gpu_pipeline_window(gpl, &first, &t1);
		vfgx_gpu_pipeline_feeder(gpl, &fd);
		if (fd.packets) {
			r->rx_ns = (double)fd.rx_ns / (double)fd.packets;
			r->submit_ns = (double)fd.submit_ns / (double)fd.packets;
			r->room_ns = (double)fd.room_ns / (double)fd.packets;
		}
		r->rx_threads = fd.rx_threads;
		vfgx_gpu_pipeline_stats(gpl, &st, &order);
		ret = vfgx_gpu_pipeline_error(gpl);
		r->p50_us = (double)vfgx_gpu_pipeline_lat_pct(gpl, 50) / 1e3;
		r->p99_us = (double)vfgx_gpu_pipeline_lat_pct(gpl, 99) / 1e3;
	} else {
		vfgx_pipeline_stop(pl);
		t1 = vfgx_now_ns();
		vfgx_pipeline_stats(pl, &st);
		ret = vfgx_pipeline_error(pl);
		r->p50_us = (double)vfgx_stats_lat_pct(&st, 50) / 1e3;
		r->p99_us = (double)vfgx_stats_lat_pct(&st, 99) / 1e3;
	}
	if (ret)
		goto out;
	r->mpps = (double)st.packets / (double)(t1 - t0) * 1e3;
	r->gbps = (double)st.bytes * 8 / (double)(t1 - t0);
	r->exact = st.packets > 0 && st.delivered == st.packets && st.gaps == 0 &&
		   st.verify_errors == 0 && order == 0;
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		r->exact = r->exact && st.drops[i] == 0;
	r->ok = true;
	if (gpl && vfgx_gpu_pipeline_item_stamps(gpl, r->stamps, sizeof(r->stamps)))
		r->stamps[0] = 0;
out:
	vfgx_gpu_pipeline_destroy(gpl);
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	return ret;
}

static uint64_t process_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The replay source alone: rx + release on one queue, in this thread.
 * inline_adv: loopback.replay_inline (rx advances the frames; no other
 * thread), otherwise the port's rewriting thread advances them.  Returns
 * Mpps by the wall clock; *cpu_mpps: per second of the whole process's
 * CPU time (this thread and the rewriting one: every thread of the port). */
static double source_rate(vfgx_ctx *ctx, const char *kind, bool inline_adv, double seconds,
			  double *cpu_mpps)
{
	char y[1024];
	struct vfgx_config *cfg = NULL;
	vfgx_port *port = NULL;
	struct vfgx_pkt pk[256];
	uint64_t n = 0, t0, t1, c0, c1;

	*cpu_mpps = 0;
	snprintf(y, sizeof(y),
		 "memory_regions: [{name: r, kind: %s, buf_size: 64, num_bufs: 65536}]\n"
		 "interfaces:\n"
		 "  - backend: loopback\n"
		 "    rx: {queues: [{id: 0, memory_region: r, batch_size: 256}]}\n"
		 "    loopback: {packets: 0, packet_size: 64, flows: 64, replay: true,\n"
		 "               replay_inline: %s}\n",
		 kind, inline_adv ? "true" : "false");
	if (vfgx_config_load_string(ctx, y, strlen(y), "src.yaml", &cfg) ||
	    vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port)) {
		fprintf(stderr, "vfgx bench e2e: source: %s\n", vfgx_last_error(ctx));
		vfgx_config_destroy(cfg);
		return 0;
	}
	c0 = process_cpu_ns();
	t0 = t1 = vfgx_now_ns();
	while (t1 - t0 < (uint64_t)(seconds * 1e9)) {
		for (int i = 0; i < 1000; i++) {
			int m = vfgx_port_rx_burst(port, 0, pk, 256);

			if (m > 0) {
				vfgx_port_release(port, 0, pk, (uint16_t)m);
				n += (uint64_t)m;
			}
		}
		t1 = vfgx_now_ns();
	}
	c1 = process_cpu_ns();
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	if (c1 > c0)
		*cpu_mpps = (double)n / (double)(c1 - c0) * 1e3;
	return (double)n / (double)(t1 - t0) * 1e3;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct handoff {
	double lo50, hi50, lo99, hi99, step50, load50, gap_max, load_max, tick;
	int n;
};

/* READY store -> GPU observes it, bounded per item with no clock model:
 * the CPU keeps writing its clock into the item's status line (a full
 * fence after each store, before the next clock read) while the GPU polls
 * status and clock with one 16-byte load between two %globaltimer reads
 * g0, g1.  The load that returned READY with the CPU's clock c read the
 * line after c was written and before the write two on was made (clock
 * c2: the write after c was fenced before c2 was read), and the value
 * travelled back within g1 - g0 (+ one timer tick):
 * observation - ready in [c - ready, c2 - ready + g1 - g0 + tick]. */
static int handoff(vfgx_ctx *ctx, double tick, uint32_t every_ns, struct handoff *h)
{
	struct vfgx_pipeline_config pc = {
		.workers = 1, .nb_port_ranges = 1, .port_ranges = (const struct vfgx_port_range[]){ { 5000, 5000 } },
		.reorder = true, .reorder_window = 1024, .reorder_slot = 64, .max_streams = 64,
	};
	struct vfgx_gpu_opts o;
	vfgx_gpu_proc *gp = NULL;
	double *lo = calloc(HANDOFFS, sizeof(*lo)), *hi = calloc(HANDOFFS, sizeof(*hi));
	double *step = calloc(HANDOFFS, sizeof(*step)), *ld = calloc(HANDOFFS, sizeof(*ld));
	int ret = -ENOMEM;

	memset(h, 0, sizeof(*h));
	vfgx_gpu_opts_default(&o);
	o.items = 256;
	if (!lo || !hi || !step || !ld || (ret = vfgx_gpu_proc_create(ctx, &pc, &o, &gp)))
		goto out;
	for (int i = 0; i < HANDOFFS + 1000; i++) {
		struct vfgx_gpu_handoff s;
		double load, gap;
		int j = i - 1000;

		if ((ret = vfgx_gpu_proc_handoff_probe(gp, every_ns, &s)))
			goto out;
		if (j < 0)
			continue; /* warm-up */
		load = (double)(s.g_after - s.g_before) + tick;
		gap = (double)s.gap_ns;
		lo[j] = ((double)s.clock_ns - (double)s.ready_ns) / 1e3;
		hi[j] = ((double)s.after2_ns - (double)s.ready_ns + load) / 1e3;
		step[j] = (double)(s.after2_ns - s.clock_ns);
		ld[j] = load;
		h->gap_max = gap > h->gap_max ? gap : h->gap_max;
		h->load_max = load > h->load_max ? load : h->load_max;
	}
	/* the true median lies between the medians of the bounds */
	qsort(lo, HANDOFFS, sizeof(*lo), cmp_dbl);
	qsort(hi, HANDOFFS, sizeof(*hi), cmp_dbl);
	h->lo50 = lo[HANDOFFS / 2];
	h->hi50 = hi[HANDOFFS / 2];
	h->lo99 = lo[HANDOFFS * 99 / 100];
	h->hi99 = hi[HANDOFFS * 99 / 100];
	h->step50 = bench_median(step, HANDOFFS);
	h->load50 = bench_median(ld, HANDOFFS);
	h->tick = tick;
	h->n = HANDOFFS;
out:
	vfgx_gpu_proc_destroy(gp);
	free(lo);
	free(hi);
	free(step);
	free(ld);
	return ret;
}

/* Latency under load: fractions of the peak (the 64 B full-load rate of
 * the same round) */
#define NB_LOADS 3
static const double loads[NB_LOADS] = { 0.1, 0.5, 0.9 };

struct e2e_lat {
	double mpps, p50, p99; /* 1e9 us when the run was not exact */
};

/* One round of every target's configuration next to its reference. */
struct e2e_round {
	double e64, k64, e8p, pcie, dgpu, dcpu, p99low, p99full;
	/* [0]: as configured; [1]: with pipeline.max_in_flight_bytes */
	struct e2e_lat lat[2][NB_LOADS];
	double src, src2; /* replay per CPU-s: inline (one thread); with its rewriting thread */
	double src_w, src2_w; /* the same by the wall clock */
	uint32_t gpu_threads; /* the verify run's CPU threads on the GPU side */
};

/* One round; gpu false: the CPU rows alone (no GPU on this machine). */
static void e2e_round(vfgx_ctx *ctx, double seconds, int m64, int m8, bool gpu,
		      uint32_t ncpu, uint64_t in_flight, struct e2e_round *r)
{
	struct e2e a = { 0 }, b = { 0 };
	struct tput k = { 0 };
	char y[4096], err[256];
	const char *mode64 = vfgx_gpu_mode_name((enum vfgx_gpu_mode)m64);
	uint32_t r64 = ring_for_size(64), r8k = ring_for_size(8192);

	memset(r, 0, sizeof(*r));
	/* the CPU rows first: the verify target's reference on every core,
	 * and the replay source with one thread and with two */
	demo_yaml(y, sizeof(y), false, ncpu, seconds);
	if (!e2e_run(ctx, y, &a) && a.exact)
		r->dcpu = a.mpps;
	r->src_w = source_rate(ctx, "host", true, seconds, &r->src);
	r->src2_w = source_rate(ctx, "host", false, seconds, &r->src2);
	if (!gpu)
		return;
	/* the reference: the faster of the two kernel-only figures */
	if (!bench_gpu_kernel_only(ctx, 64, true, VFGX_GPU_PERSISTENT, false, QUEUES, seconds, &k))
		r->k64 = k.mpps;
	if (!bench_gpu_kernel_only(ctx, 64, true, VFGX_GPU_PERSISTENT, true, QUEUES, seconds, &k) &&
	    k.mpps > r->k64)
		r->k64 = k.mpps;
	memset(&a, 0, sizeof(a));
	e2e_yaml(y, sizeof(y), 64, "gpu", QUEUES, FLOWS, r64, 0, "gpu", 1, mode64, false,
		 items_for(64), seconds, 0);
	/* an inexact run's latency does not count: 1e9 us fails the goal */
	for (int bd = 0; bd < 2; bd++)
		for (int l = 0; l < NB_LOADS; l++)
			r->lat[bd][l] = (struct e2e_lat){ 0, 1e9, 1e9 };
	if (!e2e_run(ctx, y, &a) && a.exact) {
		r->e64 = a.mpps;
		r->p99full = a.p99_us;
		/* 10, 50 and 90% of this rate, as configured, then with the
		 * in-flight bound */
		for (int bd = 0; bd < 2; bd++)
			for (int l = 0; l < NB_LOADS; l++) {
				e2e_yaml(y, sizeof(y), 64, "gpu", QUEUES, FLOWS, r64,
					 a.mpps * 1e6 * loads[l], "gpu", 1, mode64, false,
					 items_for(64), seconds, 0);
				if (bd)
					with_in_flight(y, sizeof(y), in_flight);
				memset(&b, 0, sizeof(b));
				if (!e2e_run(ctx, y, &b) && b.exact)
					r->lat[bd][l] = (struct e2e_lat){ b.mpps, b.p50_us, b.p99_us };
				if (b.stamps[0])
					printf("latency 64 B %.0f%%%s, item stamps: %s\n", loads[l] * 100,
					       bd ? " bounded" : "", b.stamps);
			}
	}
	r->p99low = r->lat[0][0].p99;
	if (gpubw_pinned_read(0, 1ull << 30, 1, &r->pcie, err, sizeof(err)))
		fprintf(stderr, "vfgx bench e2e: PCIe floor: %s\n", err);
	e2e_yaml(y, sizeof(y), 8192, "pinned", QUEUES, FLOWS, r8k, 0, "gpu", 1,
		 vfgx_gpu_mode_name((enum vfgx_gpu_mode)m8), false, items_for(8192), seconds, 0);
	memset(&a, 0, sizeof(a));
	if (!e2e_run(ctx, y, &a) && a.exact)
		r->e8p = a.gbps / 8;
	demo_yaml(y, sizeof(y), true, ncpu, seconds);
	memset(&a, 0, sizeof(a));
	if (!e2e_run(ctx, y, &a) && a.exact) {
		r->dgpu = a.mpps;
		r->gpu_threads = (a.rx_threads ? a.rx_threads : 0) + 1;
	}
}

/* --latency-only: the 64 B latency runs alone, a quick A/B of builds
 * (docs/gpu.md, "Experiments behind build options"): per round the peak,
 * then 10, 50 and 90% of it, as configured; printed with the item stamps
 * where the build has them; no results file. */
#define LAT_ROUNDS 3
static int e2e_latency_only(vfgx_ctx *ctx, double seconds)
{
	char y[4096];

	for (int i = 0; i < LAT_ROUNDS; i++) {
		struct e2e a = { 0 }, b;

		e2e_yaml(y, sizeof(y), 64, "gpu", QUEUES, FLOWS, ring_for_size(64), 0, "gpu", 1,
			 "persistent", false, items_for(64), seconds, 0);
		if (e2e_run(ctx, y, &a) || !a.exact) {
			fprintf(stderr, "vfgx bench e2e: 64 B peak run %s: %s\n",
				a.ok ? "not exact" : "failed", vfgx_last_error(ctx));
			return 1;
		}
		printf("round %d 64 B peak: %.2f Mpps p50 %.1f p99 %.1f us\n", i + 1, a.mpps,
		       a.p50_us, a.p99_us);
		if (a.stamps[0])
			printf("  item stamps: %s\n", a.stamps);
		for (int l = 0; l < NB_LOADS; l++) {
			e2e_yaml(y, sizeof(y), 64, "gpu", QUEUES, FLOWS, ring_for_size(64),
				 a.mpps * 1e6 * loads[l], "gpu", 1, "persistent", false,
				 items_for(64), seconds, 0);
			memset(&b, 0, sizeof(b));
			int ret = e2e_run(ctx, y, &b);

			printf("round %d 64 B at %.0f%%: %.2f Mpps p50 %.1f p99 %.1f us%s\n", i + 1,
			       loads[l] * 100, b.mpps, b.p50_us, b.p99_us,
			       ret || !b.exact ? " (NOT EXACT)" : "");
			if (b.stamps[0])
				printf("  item stamps: %s\n", b.stamps);
		}
	}
	return 0;
}

/* The target lines of the GPU rows, unmeasured on a machine without one. */
static const char *const gpu_targets[] = {
	"e2e_64B_gpu_vs_kernel", "e2e_64B_gpu_replay_mpps", "e2e_8192B_pinned_vs_pcie",
	"e2e_512B_verify_gpu_vs_cpu_all_cores", "e2e_p99_latency_10pct_load_us",
	"e2e_p99_latency_50pct_load_us",
};
static const double gpu_goals[] = { 0.8, 100, 0.8, 10, 20, 50 };

int vfgx_bench_e2e(int argc, char **argv)
{
	static struct e2e full[NB_SIZES][2][NB_MODES][2], low[NB_SIZES][2][NB_MODES][2];
	static struct tput kern[NB_SIZES], kstaged[NB_SIZES];
	static struct e2e_round rr[ROUNDS];
	struct handoff ho = { 0 }, ho0 = { 0 };
	const char *out = "bench/results";
	double seconds = 0.5, pcie = 0, src_pinned = 0, src_gpu = 0, unused, tick = 32, width,
	       load0, v[20][ROUNDS];
	uint64_t in_flight = E2E_IN_FLIGHT_DEFAULT;
	long long off;
	unsigned long long at;
	char path[512], desc[256] = "", drv[256] = "-", err[256], y[4096], nogpu[256] = "";
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t ncpu = online < 1 ? 1 : online > MAX_CORES ? MAX_CORES : (uint32_t)online;
	int m64 = 0, m8 = 0;
	bool gpu, lat_only = false;
	vfgx_ctx *ctx;
	FILE *f;
	int c, ret = 1;

	c = e2e_parse(argc, argv, &out, &seconds, &in_flight, &lat_only);
	if (c >= 0)
		return c;
	if (!lat_only && bench_out_check(out, "e2e"))
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	load0 = bench_loadavg1();
	if (vfgx_ctx_create(&ctx))
		return 1;
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	gpu = !vfgx_gpu_probe(ctx, 0, desc, sizeof(desc));
	if (!gpu) {
		snprintf(nogpu, sizeof(nogpu), "%s", vfgx_last_error(ctx));
		snprintf(desc, sizeof(desc), "none (%s)", nogpu);
		if (lat_only) {
			fprintf(stderr, "vfgx bench e2e: --latency-only needs a GPU (%s)\n", nogpu);
			goto out;
		}
		printf("no GPU (%s): the CPU rows alone; the GPU rows need `vfgx bench e2e` on a GPU host\n",
		       nogpu);
	} else {
		bench_gpu_driver_version(drv, sizeof(drv));
		printf("%s\n%s\n", desc, drv);
		if (lat_only) {
			ret = e2e_latency_only(ctx, seconds);
			goto out;
		}
		if (gpubw_pinned_read(0, 1ull << 30, 3, &pcie, err, sizeof(err)) ||
		    gpubw_clock_cal(0, 200, &off, &width, &tick, &at, err, sizeof(err))) {
			fprintf(stderr, "vfgx bench e2e: floors: %s\n", err);
			goto out;
		}
		printf("PCIe read floor %.1f GB/s, %%globaltimer tick %.0f ns\n", pcie, tick);
		src_pinned = source_rate(ctx, "pinned", false, seconds, &unused);
		src_gpu = source_rate(ctx, "gpu", false, seconds, &unused);
		printf("replay source, one queue, 64 B, with its rewriting thread: pinned %.1f Mpps, gpu %.1f Mpps\n",
		       src_pinned, src_gpu);
		/* the CPU writing its clock as fast as it can, and every 200 ns
		 * (less traffic on the line the GPU polls) */
		if (handoff(ctx, tick, 0, &ho0) || handoff(ctx, tick, 200, &ho)) {
			fprintf(stderr, "vfgx bench e2e: hand-off: %s\n", vfgx_last_error(ctx));
			goto out;
		}
		for (int s = 0; s < NB_SIZES; s++) {
			if (bench_gpu_kernel_only(ctx, sizes[s], true, VFGX_GPU_PERSISTENT, false,
						  QUEUES, seconds, &kern[s]) ||
			    bench_gpu_kernel_only(ctx, sizes[s], true, VFGX_GPU_PERSISTENT, true,
						  QUEUES, seconds, &kstaged[s])) {
				fprintf(stderr, "vfgx bench e2e: kernel-only %u B: %s\n", sizes[s],
					vfgx_last_error(ctx));
				goto out;
			}
			printf("kernel-only %5u B gpu persistent: %.2f Mpps, records staged %.2f Mpps\n",
			       sizes[s], kern[s].mpps, kstaged[s].mpps);
		}
		for (int s = 0; s < NB_SIZES; s++)
			for (int p = 0; p < 2; p++)
				for (int m = 0; m < NB_MODES; m++)
					for (int vv = 0; vv < 2; vv++) {
						const char *mode = vfgx_gpu_mode_name((enum vfgx_gpu_mode)m);
						struct e2e *r = &full[s][p][m][vv], *l = &low[s][p][m][vv];
						uint32_t ring = ring_for_size(sizes[s]);

						e2e_yaml(y, sizeof(y), sizes[s], place_names[p], QUEUES,
							 FLOWS, ring, 0, "gpu", 1, mode, vv,
							 items_for(sizes[s]), seconds, 0);
						if (e2e_run(ctx, y, r))
							fprintf(stderr, "vfgx bench e2e: %s\n", vfgx_last_error(ctx));
						/* 10% of the load this configuration reached */
						e2e_yaml(y, sizeof(y), sizes[s], place_names[p], QUEUES,
							 FLOWS, ring, r->mpps * 1e5, "gpu", 1, mode, vv,
							 items_for(sizes[s]), seconds, 0);
						if (r->ok && e2e_run(ctx, y, l))
							fprintf(stderr, "vfgx bench e2e: %s\n", vfgx_last_error(ctx));
						printf("%5u B %-6s %-10s verify %-3s %8.2f Mpps %8.1f Gbps p50 %7.1f p99 %7.1f us | 10%%: %7.2f Mpps p50 %6.1f p99 %6.1f us | feeder ns/pkt rx %.1f submit %.1f wait %.1f%s\n",
						       sizes[s], place_names[p], mode, vv ? "on" : "off",
						       r->mpps, r->gbps, r->p50_us, r->p99_us, l->mpps,
						       l->p50_us, l->p99_us, r->rx_ns, r->submit_ns,
						       r->room_ns, r->exact && l->exact ? "" : " (NOT EXACT)");
					}
		/* best mode per target from the sweep (exact runs only) */
		for (int m = 1; m < NB_MODES; m++) {
			if (full[0][1][m][0].exact && full[0][1][m][0].mpps > full[0][1][m64][0].mpps)
				m64 = m;
			if (full[3][0][m][0].exact && full[3][0][m][0].gbps > full[3][0][m8][0].gbps)
				m8 = m;
		}
	}
	/* ROUNDS rounds of every target's configuration with its reference */
	for (int i = 0; i < ROUNDS; i++) {
		struct handoff h = { 0 };

		e2e_round(ctx, seconds, m64, m8, gpu, ncpu, in_flight, &rr[i]);
		v[9][i] = v[10][i] = 0;
		if (gpu && !handoff(ctx, tick, 0, &h))
			v[9][i] = h.hi50, v[10][i] = h.lo50;
		printf("round %d: 64 B %.2f Mpps (kernel %.2f), 10%% p99 %.1f us, 8192 B pinned %.2f GB/s (PCIe %.2f), verify 512 B gpu %.2f / cpu %u cores %.2f Mpps, hand-off median <= %.2f us, replay per CPU-s inline %.1f / with rewriting thread %.1f Mpps\n",
		       i + 1, rr[i].e64, rr[i].k64, rr[i].p99low, rr[i].e8p, rr[i].pcie, rr[i].dgpu,
		       ncpu, rr[i].dcpu, v[9][i], rr[i].src, rr[i].src2);
		v[0][i] = rr[i].e64, v[1][i] = rr[i].k64, v[2][i] = rr[i].e8p;
		v[3][i] = rr[i].pcie, v[4][i] = rr[i].dgpu, v[5][i] = rr[i].dcpu;
		v[6][i] = rr[i].p99low, v[7][i] = rr[i].p99full, v[8][i] = rr[i].src;
		v[11][i] = rr[i].src2, v[12][i] = rr[i].src_w, v[13][i] = rr[i].src2_w;
		for (int bd = 0; bd < 2; bd++)
			for (int l = 0; l < NB_LOADS; l++)
				v[14 + 3 * bd + l][i] = rr[i].lat[bd][l].p99;
		if (gpu)
			printf("round %d latency 64 B (peak %.2f Mpps), p50 / p99 us at 10/50/90%%: %.1f / %.1f, %.1f / %.1f, %.1f / %.1f; with max_in_flight_bytes %llu: %.1f / %.1f, %.1f / %.1f, %.1f / %.1f\n",
			       i + 1, rr[i].e64, rr[i].lat[0][0].p50, rr[i].lat[0][0].p99,
			       rr[i].lat[0][1].p50, rr[i].lat[0][1].p99, rr[i].lat[0][2].p50,
			       rr[i].lat[0][2].p99, (unsigned long long)in_flight,
			       rr[i].lat[1][0].p50, rr[i].lat[1][0].p99, rr[i].lat[1][1].p50,
			       rr[i].lat[1][1].p99, rr[i].lat[1][2].p50, rr[i].lat[1][2].p99);
	}

	f = bench_results_open(out, "e2e", "GPU data plane end to end: vfgx run's path from replayed frames (no wire)",
			       path, sizeof(path));
	if (!f)
		goto out;
	fprintf(f, "- device: %s\n- driver: %s\n", desc, drv);
	fprintf(f, "- command: vfgx bench e2e --seconds %g (the same command gives the CPU rows alone on a machine without a GPU, the GPU rows unmeasured)\n",
		seconds);
	fprintf(f, "- load: 1-minute load average %.2f at the start, %.2f at the end, %ld online cores\n",
		load0, bench_loadavg1(), online);
	if (gpu) {
		fprintf(f, "- method: `vfgx run`'s own path: a loopback port in replay mode (%d flows over %d rx queues, frames built once into a pinned host or GPU memory region and handed out again, each lap's sequences one lap on) -> the GPU runner (pipeline.gpu.rx_threads 0: here one rx thread per queue, each gathering rx bursts of 256 into arrays of up to 1024 packets, and a dispatcher thread handing each array to the GPU as one comm-list item) -> the GPU processor (parse + IPv4/UDP checksum + port filter + sequence header + reorder, window 1024; verify when on) -> release to the port.  Each run %g s, wall time from start to the dispatcher's end; Mpps counts packets processed by the GPU.  Latency rx -> processed: per item, from the oldest packet's rx stamp to the CPU reaping the item DONE (counted for every packet of the item; an upper bound for the others), in buckets of 1.6%%.  10%% load: the same configuration with the source's rate limited to a tenth of the Mpps it reached.  \"exact\": every packet received was delivered, in order, none dropped, no verify error.  Items: 256 (32 from 1500 B) x 1024 packets; the replay rings of all queues together hold 16x the packets in flight at 64 B, 4x above (a ring of 4x held 64 B from GPU memory to about 0.8 of the kernel's rate on an H200).\n\n",
			FLOWS, QUEUES, seconds);
		fprintf(f, "## References (same run)\n\n| reference | value |\n|---|---|\n");
		fprintf(f, "| pinned host memory read by a kernel over PCIe, 1 GiB (best of 3) | %.1f GB/s |\n", pcie);
		for (int s = 0; s < NB_SIZES; s++)
			fprintf(f, "| kernel only (bench/gpu.c's harness: 1024-packet items, each holding one of the %d rx queues' flows round-robin as the runner's items do, frames in GPU memory, each item's descriptors copied in by vfgx_gpu_proc_submit, persistent, same stages, verify off), %u B | %.2f Mpps (%.1f Gbps) |\n"
				"| the same with the items' records built once in pinned memory and handed over where they lie (as the runner's), %u B | %.2f Mpps (%.1f Gbps) |\n",
				QUEUES, sizes[s], kern[s].mpps, kern[s].gbps, sizes[s], kstaged[s].mpps,
				kstaged[s].gbps);
		fprintf(f, "| replay source alone, one queue, 64 B, rx + release, with its rewriting thread, pinned memory (wall clock) | %.1f Mpps |\n", src_pinned);
		fprintf(f, "| the same, GPU memory (sequences advanced by the rewriting thread's strided copies of 18 bytes a frame) | %.1f Mpps |\n",
			src_gpu);
		fprintf(f, "\n## Hand-off (CPU stores READY -> GPU observes it), bounded per item\n\n");
		fprintf(f, "%d empty items through the persistent kernel.  The CPU reads its clock, writes it into the item's status line, stores READY, then keeps writing its clock there (a full fence after each store) until DONE; the polling GPU thread reads status and clock in one 16-byte load between two %%globaltimer reads g0, g1.  For the load that returned READY with clock c: the load read the line after c was written and before the write two on was visible (each write is fenced before the next clock read; c2 = that clock, from the CPU's log of its writes), and its value came back within g1 - g0, so observation - READY in [c - ready, c2 - ready + (g1 - g0) + tick]; no relation between the two clocks is assumed.  The median lies between the medians of the two bounds.\n\n",
			ho.n);
		fprintf(f, "Two runs: the CPU writing its clock back to back, and at most every 200 ns (less traffic on the line the GPU polls).  The target takes the first, once per round (below): c2 - c enters the upper bound whole.\n\n");
		fprintf(f, "| CPU clock writes | median lower | median upper | p99 lower | p99 upper | median c2 - c | median load (g1 - g0 + tick) | longest gap between writes | longest load |\n|---|---|---|---|---|---|---|---|---|\n");
		fprintf(f, "| back to back | %.2f us | %.2f us | %.2f us | %.2f us | %.0f ns | %.0f ns | %.0f ns | %.0f ns |\n",
			ho0.lo50, ho0.hi50, ho0.lo99, ho0.hi99, ho0.step50, ho0.load50, ho0.gap_max,
			ho0.load_max);
		fprintf(f, "| every 200 ns | %.2f us | %.2f us | %.2f us | %.2f us | %.0f ns | %.0f ns | %.0f ns | %.0f ns |\n\n",
			ho.lo50, ho.hi50, ho.lo99, ho.hi99, ho.step50, ho.load50, ho.gap_max, ho.load_max);
		fprintf(f, "%%globaltimer tick %.0f ns.  The GPU keeps %d load(s) of the status line in flight (VFGX_GPU_POLL_DEPTH), issued about %d ns apart.\n\n",
			ho.tick, VFGX_GPU_POLL_DEPTH, VFGX_GPU_POLL_GAP_NS);
		fprintf(f, "## End to end\n\nFeeder: the runner's time per packet at full load: rx (the replay port's rx_burst, building the arrays), summed over the rx threads, and on the dispatcher's thread submit (handing an array over, reaping) and wait (for a free comm-list slot); rx threads: how many the runner started (0: rx on the dispatcher's thread).\n\n| frame B | frames in | mode | verify | Mpps | Gbps | p50 us | p99 us | 10%% load Mpps | p50 us | p99 us | feeder rx / submit / wait ns | rx threads | exact |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
		for (int s = 0; s < NB_SIZES; s++)
			for (int p = 0; p < 2; p++)
				for (int m = 0; m < NB_MODES; m++)
					for (int vv = 0; vv < 2; vv++) {
						struct e2e *r = &full[s][p][m][vv], *l = &low[s][p][m][vv];

						fprintf(f, "| %u | %s | %s | %s | %.2f | %.1f | %.1f | %.1f | %.2f | %.1f | %.1f | %.1f / %.1f / %.1f | %u | %s |\n",
							sizes[s], place_names[p],
							vfgx_gpu_mode_name((enum vfgx_gpu_mode)m),
							vv ? "on" : "off", r->mpps, r->gbps, r->p50_us,
							r->p99_us, l->mpps, l->p50_us, l->p99_us, r->rx_ns,
							r->submit_ns, r->room_ns, r->rx_threads,
							r->ok && l->ok && r->exact && l->exact ? "yes" : "NO");
					}
	} else {
		fprintf(f, "- GPU: none on this machine (%s): the GPU rows and targets are unmeasured here; `vfgx bench e2e` on a GPU host writes them, with the CPU rows of that host.\n\n",
			nogpu);
	}
	fprintf(f, "\n## Target rounds\n\n%d rounds, each running every target's configuration next to its reference, in this order: the verify target's CPU reference (below), the replay source with replay_inline and with its rewriting thread%s.  A run that was not exact counts as 0 Mpps (1e9 us for a latency).\n\n",
		ROUNDS, gpu ? ", kernel only 64 B (the faster of its two figures: descriptors copied in, records staged), 64 B from GPU memory in the mode fastest in the sweep, the same at 10, 50 and 90% of its rate as configured and again with pipeline.max_in_flight_bytes (below), the PCIe read floor, 8192 B from pinned memory in the fastest mode, the verify target's GPU side, the hand-off (clock written back to back)" : "");
	if (gpu)
		fprintf(f, "Modes from the sweep: 64 B %s, 8192 B %s.\n\n",
			vfgx_gpu_mode_name((enum vfgx_gpu_mode)m64),
			vfgx_gpu_mode_name((enum vfgx_gpu_mode)m8));
	fprintf(f, "- e2e_512B_verify_gpu_vs_cpu_all_cores: both sides run the same traffic and stages: a replay port of %u rx queues (this host's %ld online cores%s), 4 flows a queue, 512 B frames, parse + IPv4/UDP checksums + port filter + reorder (window 1024 a stream) + payload verification, `vfgx run`'s path on each side. CPU: %u worker threads (pipeline.workers = cores, one queue each), frames in host memory; the reorder copy as src/pipeline/proc.c does it at the commit above. GPU: %u CPU threads (pipeline.gpu.rx_threads %u + the dispatcher; started per round: %u) and the GPU, frames in pinned memory; the GPU skips the reorder copy for a packet that arrives in order (gpu_phase_b.cuh). Both sides' threads together use every core; Mpps = packets delivered over the run's wall time.\n",
		ncpu, online, online > MAX_CORES ? ", at most 32" : "", ncpu,
		ncpu > 1 ? ncpu : 1, ncpu > 1 ? ncpu - 1 : 1, gpu ? rr[0].gpu_threads : 0);
	fprintf(f, "- replay_64B_mpps_per_core: the loopback port's replay source alone, from replayed frames in host memory (no wire): one queue, 64 B frames, 64 flows, rx bursts of 256 + release, with loopback.replay_inline (rx advances each frame's sequence itself: one thread, no other thread of the port). Rate = packets per second of the whole process's CPU time (CLOCK_PROCESS_CPUTIME_ID: every thread counted). Listed beside it: the same without replay_inline, where the port's rewriting thread advances the frames, its CPU time counted too.\n\n");
	fprintf(f, "| round | verify 512 B: CPU %u cores Mpps | GPU Mpps | 64 B Mpps | kernel 64 B Mpps | 64 B p99 us | at 10%%: p99 us | 8192 B pinned GB/s | PCIe GB/s | hand-off median upper / lower us | replay inline Mpps/CPU-s (wall) | replay + rewriting thread Mpps/CPU-s (wall) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
		ncpu);
	for (int i = 0; i < ROUNDS; i++) {
		if (gpu)
			fprintf(f, "| %d | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f | %.2f | %.2f | %.2f / %.2f | %.1f (%.1f) | %.1f (%.1f) |\n",
				i + 1, rr[i].dcpu, rr[i].dgpu, rr[i].e64, rr[i].k64, rr[i].p99full,
				rr[i].p99low, rr[i].e8p, rr[i].pcie, v[9][i], v[10][i], rr[i].src,
				rr[i].src_w, rr[i].src2, rr[i].src2_w);
		else
			fprintf(f, "| %d | %.2f | - | - | - | - | - | - | - | - | %.1f (%.1f) | %.1f (%.1f) |\n",
				i + 1, rr[i].dcpu, rr[i].src, rr[i].src_w, rr[i].src2, rr[i].src2_w);
	}
	if (gpu) {
		fprintf(f, "\n## Latency under load (64 B from GPU memory)\n\nEach round: the 64 B configuration above at full load (its rate: the peak), then the same with the source's rate limited (loopback.rate_pps) to 10, 50 and 90%% of that peak: first as configured (what is in flight is bounded by the replay rings and pipeline.gpu.items %u x burst 1024 only), then with `pipeline.max_in_flight_bytes: %llu` (docs/config.md: the runner fits its arrays of packets to it; 64 B frames in 64-byte buffers, so at most %llu packets).  Latency rx -> processed as in the sweep (per item, from the oldest packet's rx stamp to the CPU reaping the item DONE).  Each cell: Mpps reached / p50 us / p99 us; a run that was not exact shows 1e9 us.\n\n",
			items_for(64), (unsigned long long)in_flight,
			(unsigned long long)(in_flight / buf_for(64)));
		fprintf(f, "| round | peak Mpps | 10%% | 50%% | 90%% | bounded 10%% | bounded 50%% | bounded 90%% |\n|---|---|---|---|---|---|---|---|\n");
		for (int i = 0; i < ROUNDS; i++) {
			fprintf(f, "| %d | %.2f |", i + 1, rr[i].e64);
			for (int bd = 0; bd < 2; bd++)
				for (int l = 0; l < NB_LOADS; l++)
					fprintf(f, " %.2f / %.1f / %.1f |", rr[i].lat[bd][l].mpps,
						rr[i].lat[bd][l].p50, rr[i].lat[bd][l].p99);
			fprintf(f, "\n");
		}
	}
	fprintf(f, "\n%s\n\n", bench_ci_rule);
	fprintf(f, "e2e_64B_gpu_replay_mpps: vfgx run's GPU path at 64 B from replayed frames in GPU memory (the loopback port's replay mode: no wire, no NIC).\n\n");
	if (gpu) {
		bench_target_rounds(f, &(struct bench_target_rounds){
			.name = gpu_targets[0], .measured = v[0], .reference = v[1],
			.n = ROUNDS, .goal = gpu_goals[0], .goal_on_ratio = true, .higher_better = true });
		bench_target_rounds(f, &(struct bench_target_rounds){
			.name = gpu_targets[1], .measured = v[0], .n = ROUNDS, .goal = gpu_goals[1],
			.higher_better = true });
		bench_target_rounds(f, &(struct bench_target_rounds){
			.name = gpu_targets[2], .measured = v[2], .reference = v[3],
			.n = ROUNDS, .goal = gpu_goals[2], .goal_on_ratio = true, .higher_better = true });
		bench_target_rounds(f, &(struct bench_target_rounds){
			.name = gpu_targets[3], .measured = v[4], .reference = v[5],
			.n = ROUNDS, .goal = gpu_goals[3], .goal_on_ratio = true, .higher_better = true });
		bench_target_rounds(f, &(struct bench_target_rounds){
			.name = gpu_targets[4], .measured = v[6], .reference = v[7],
			.n = ROUNDS, .goal = gpu_goals[4], .higher_better = false });
		bench_target_rounds(f, &(struct bench_target_rounds){
			.name = gpu_targets[5], .measured = v[15], .reference = v[7],
			.n = ROUNDS, .goal = gpu_goals[5], .higher_better = false });
		/* a reported interval, no longer a target (issue 40): without
		 * a CPU mapping of GPU memory (no gdrdrv) it cannot be shown
		 * under 2 us; wire-to-processed latency is what counts */
		char up[96], lo[96];

		fprintf(f, "Hand-off (reported, not a target): median upper bound %s us, lower bound %s us over the rounds.\n\n",
			bench_fmt_spread(up, sizeof(up), "%.2f", v[9], ROUNDS),
			bench_fmt_spread(lo, sizeof(lo), "%.2f", v[10], ROUNDS));
		/* 90% and the bounded runs: reported rows, median (min..max) */
		char b10[96], b50[96], b90[96];

		fprintf(f, "Latency at 90%% of the peak (reported, not a target): e2e_p99_latency_90pct_load_us %s as configured; with pipeline.max_in_flight_bytes %llu: p99 at 10%% %s, 50%% %s, 90%% %s us.\n\n",
			bench_fmt_spread(up, sizeof(up), "%.1f", v[16], ROUNDS),
			(unsigned long long)in_flight,
			bench_fmt_spread(b10, sizeof(b10), "%.1f", v[17], ROUNDS),
			bench_fmt_spread(b50, sizeof(b50), "%.1f", v[18], ROUNDS),
			bench_fmt_spread(b90, sizeof(b90), "%.1f", v[19], ROUNDS));
	} else {
		for (size_t i = 0; i < sizeof(gpu_targets) / sizeof(gpu_targets[0]); i++)
			bench_target_unmeasured(f, gpu_targets[i], gpu_goals[i],
						"no GPU on this machine: run vfgx bench e2e on a GPU host");
	}
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "replay_64B_mpps_per_core", .measured = v[8], .n = ROUNDS,
		.goal = 50, .higher_better = true });
	fclose(f);
	printf("wrote %s\n", path);
	ret = 0;
out:
	vfgx_ctx_destroy(ctx);
	return ret;
}
#else
int vfgx_bench_e2e(int argc, char **argv)
{
	const char *out = "bench/results";
	double seconds = 0.5;
	uint64_t in_flight = E2E_IN_FLIGHT_DEFAULT;
	bool lat_only = false;
	int c = e2e_parse(argc, argv, &out, &seconds, &in_flight, &lat_only);

	return c >= 0 ? c : bench_gpu_no_cuda("e2e");
}
#endif
