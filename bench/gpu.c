/* gpu.c - `vfgx bench gpu`: the GPU data plane on an H100/H200.  Hand-off
 * latency through the comm list; throughput (Mpps, Gbps) for 64, 512, 1500
 * and 8192 B frames in each launch mode with packets in GPU memory and in
 * pinned host memory; and, in the same run, the floors: device-memory
 * bandwidth (device-to-device copy), pinned-host read bandwidth over PCIe,
 * and the CPU pipeline on one core. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/gpu.h>
#include <vfgx/vfgx.h>

#include "commands.h"
#include "results.h"
#include "vfgx_build.h"

#include "gpu_kernel.h"

#if VFGX_HAVE_CUDA
#include "gpu_bw.h"

#define NB_SIZES 4
#define NB_MODES 3
#define STREAMS 64
#define BUF_BYTES (128u << 20)
#define HANDOFFS 20000

static const uint32_t sizes[NB_SIZES] = { 64, 512, 1500, 8192 };

/* Ping-pong variants: what each piece of the persistent hand-off costs. */
#define NB_PP 7
#define PP_ITERS 1000
static const struct {
	int flags;
	const char *what;
} pp[NB_PP] = {
	{ 0, "volatile poll, volatile answer (the minimum)" },
	{ PP_CPUFENCE, "the minimum + a CPU mfence after the store" },
	{ PP_ACQUIRE | PP_FENCE | PP_RELEASE, "ld.acquire.sys poll; __threadfence_system + st.release.sys answer" },
	{ PP_ACQUIRE | PP_FENCE | PP_RELEASE | PP_SPINNERS, "same + one block per SM spinning on a GPU-memory word" },
	{ PP_ACQUIRE | PP_FENCE | PP_RELEASE | PP_SPINNERS | PP_HOSTQUIT, "same + those read a host word every 256 spins" },
	{ PP_ACQUIRE | PP_FENCE | PP_RELEASE | PP_STAMP, "acquire/fence/release + a weak host store before a GPU-scope release" },
	{ PP_ACQUIRE | PP_FENCE | PP_RELEASE | PP_SPINNERS | PP_HOSTQUIT | PP_STAMP, "all of the above (the old persistent hand-off)" },
};

static struct vfgx_pipeline_config bench_conf(uint32_t size, bool reorder)
{
	struct vfgx_pipeline_config pc = {
		.workers = 1, .nb_port_ranges = 1, .port_ranges = { { 5000, 5000 } },
		.reorder = reorder, .reorder_window = 1024,
		.reorder_slot = size < 64 ? 64 : size, .max_streams = STREAMS,
	};
	return pc;
}

static uint32_t stride_of(uint32_t size)
{
	return (size + 63) & ~63u;
}

/* Frames i: stream i % STREAMS, sequence i / STREAMS (in order). */
static uint8_t *build_frames(uint32_t size, uint32_t count)
{
	uint32_t stride = stride_of(size);
	uint8_t *m = calloc(count, stride);
	struct vfgx_pkt_spec s = {
		.src_ip = 0xC6120001, .dst_ip = 0xC6120002, .src_port = 4000,
		.dst_port = 5000, .frame_len = size, .udp_csum = true,
	};

	for (uint32_t i = 0; m && i < count; i++) {
		s.stream = i % STREAMS;
		s.seq = i / STREAMS;
		vfgx_pkt_build(m + (size_t)i * stride, stride, &s);
	}
	return m;
}

static double cpu_one_core(vfgx_ctx *ctx, uint32_t size, double seconds)
{
	struct vfgx_pipeline_config pc = bench_conf(size, true);
	uint32_t count = 16384, stride = stride_of(size);
	uint8_t *m = build_frames(size, count);
	struct vfgx_pkt *p = calloc(count, sizeof(*p));
	struct vfgx_pipeline_stats st;
	vfgx_proc *proc = NULL;
	double ns = 0, total = 0;

	if (!m || !p || vfgx_proc_create(ctx, &pc, &proc))
		goto out;
	for (uint32_t i = 0; i < count; i++)
		p[i] = (struct vfgx_pkt){ .data = m + (size_t)i * stride, .len = size };
	vfgx_proc_burst(proc, p, count);
	vfgx_proc_reset(proc);
	while (ns < seconds * 1e9) {
		uint64_t t0 = vfgx_now_ns();

		for (uint32_t i = 0; i < count; i += 32)
			vfgx_proc_burst(proc, p + i, 32);
		ns += (double)(vfgx_now_ns() - t0);
		vfgx_proc_stats(proc, &st);
		total += (double)st.delivered;
		vfgx_proc_reset(proc);
	}
out:
	vfgx_proc_destroy(proc);
	free(p);
	free(m);
	return ns > 0 ? total / ns * 1e3 : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

struct handoff_res {
	double p50, p99;          /* half the round trip */
	double r50, r99;          /* READY -> DONE round trip seen by the CPU */
	double d50, d99, dmin;    /* direct: READY store -> GPU's observation */
	double width0, width1;    /* calibration uncertainty before, after (ns) */
	double tick;              /* %globaltimer step (ns) */
	double drift_ppm;         /* globaltimer vs CLOCK_MONOTONIC */
	bool direct;
};

/* Empty items through the persistent kernel: CPU stores READY, the GPU
 * sees it, runs the (empty) stages, stores DONE, the CPU sees DONE.  Each
 * item gives the round trip (CPU clock) and, directly, the CPU's time
 * just before its READY store and the GPU's %globaltimer when its poll
 * first returned READY; the two clocks are related by a ping-pong
 * calibration just before and just after (offset interpolated linearly in
 * CPU time), so hand-off = GPU stamp + tick/2 - offset - READY time. */
static int handoff(vfgx_ctx *ctx, struct handoff_res *h)
{
	struct vfgx_pipeline_config pc = bench_conf(64, true);
	struct vfgx_gpu_opts o;
	vfgx_gpu_proc *gp;
	uint64_t *rtt = calloc(HANDOFFS, sizeof(*rtt));
	uint64_t *rdy = calloc(HANDOFFS, sizeof(*rdy));
	uint64_t *seen = calloc(HANDOFFS, sizeof(*seen));
	int64_t *one = calloc(HANDOFFS, sizeof(*one));
	long long off0 = 0, off1 = 0;
	unsigned long long at0 = 0, at1 = 0;
	double tick1 = 0;
	char err[256];
	int ret;

	memset(h, 0, sizeof(*h));
	vfgx_gpu_opts_default(&o);
	o.items = 256;
	if (!rtt || !rdy || !seen || !one) {
		ret = -ENOMEM;
		goto out;
	}
	h->direct = gpubw_clock_cal(0, 2000, &off0, &h->width0, &h->tick, &at0,
				    err, sizeof(err)) == 0;
	if (!h->direct)
		fprintf(stderr, "vfgx bench gpu: clock calibration: %s (direct hand-off not measured)\n", err);
	if ((ret = vfgx_gpu_proc_create(ctx, &pc, &o, &gp)))
		goto out;
	for (int i = 0; i < HANDOFFS + 1000 && !ret; i++) {
		uint64_t t0 = vfgx_now_ns();
		int64_t item = vfgx_gpu_proc_submit(gp, NULL, 0);

		ret = item < 0 ? (int)item : vfgx_gpu_proc_wait(gp, (uint64_t)item);
		if (i >= 1000) { /* the first 1000 warm up */
			rtt[i - 1000] = vfgx_now_ns() - t0;
			if (!ret && vfgx_gpu_proc_handoff_stamps(gp, (uint64_t)item,
								 &rdy[i - 1000], &seen[i - 1000]))
				h->direct = false;
		}
	}
	vfgx_gpu_proc_destroy(gp);
	if (ret)
		goto out;
	if (h->direct &&
	    gpubw_clock_cal(0, 2000, &off1, &h->width1, &tick1, &at1, err, sizeof(err))) {
		fprintf(stderr, "vfgx bench gpu: clock calibration: %s (direct hand-off not measured)\n", err);
		h->direct = false;
	}
	qsort(rtt, HANDOFFS, sizeof(*rtt), cmp_u64);
	h->r50 = (double)rtt[HANDOFFS / 2] / 1e3;
	h->r99 = (double)rtt[HANDOFFS * 99 / 100] / 1e3;
	h->p50 = h->r50 / 2;
	h->p99 = h->r99 / 2;
	if (h->direct) {
		double slope = at1 > at0 ? (double)(off1 - off0) / (double)(at1 - at0) : 0;

		h->drift_ppm = slope * 1e6;
		for (int i = 0; i < HANDOFFS; i++) {
			long long off = off0 + (long long)(slope * ((double)rdy[i] - (double)at0));

			one[i] = (int64_t)seen[i] + (int64_t)(h->tick / 2) - off - (int64_t)rdy[i];
		}
		qsort(one, HANDOFFS, sizeof(*one), cmp_i64);
		h->d50 = (double)one[HANDOFFS / 2] / 1e3;
		h->d99 = (double)one[HANDOFFS * 99 / 100] / 1e3;
		h->dmin = (double)one[0] / 1e3;
	}
out:
	free(rtt);
	free(rdy);
	free(seen);
	free(one);
	return ret;
}

static void mode_opts(struct vfgx_gpu_opts *o, enum vfgx_gpu_mode mode)
{
	vfgx_gpu_opts_default(o);
	o->mode = mode;
	o->burst = 1024;
	o->items = mode == VFGX_GPU_PERSISTENT ? 256 : 64;
	o->graph_items = 32;
	o->timeout_ms = 20000;
}

/* Passes over the same frames until `seconds` elapsed; each pass ends with
 * a reset item so sequences start over (ordered on the GPU, no wait). */
static int throughput(vfgx_ctx *ctx, uint32_t size, bool on_gpu,
		      enum vfgx_gpu_mode mode, bool reorder, double seconds,
		      const uint8_t *frames, void *gpu_frames, uint8_t *pinned,
		      uint32_t count, struct tput *res)
{
	struct vfgx_pipeline_config pc = bench_conf(size, reorder);
	struct vfgx_pipeline_stats st0, st;
	struct vfgx_gpu_opts o;
	struct vfgx_pkt *p = calloc(count, sizeof(*p));
	uint32_t stride = stride_of(size);
	vfgx_gpu_proc *gp = NULL;
	uint64_t passes = 0, t0, ns;
	int ret;

	(void)frames;
	if (!p)
		return -ENOMEM;
	mode_opts(&o, mode);
	for (uint32_t i = 0; i < count; i++) {
		uint8_t *base = on_gpu ? gpu_frames : pinned;

		p[i] = (struct vfgx_pkt){ .data = base + (size_t)i * stride, .len = size,
					  .flags = on_gpu ? VFGX_PKT_GPU : 0 };
	}
	if ((ret = vfgx_gpu_proc_create(ctx, &pc, &o, &gp)))
		goto out;
	/* warm-up pass */
	for (uint32_t i = 0; i < count && ret >= 0; i += o.burst)
		ret = (int)vfgx_gpu_proc_submit(gp, p + i, count - i < o.burst ? count - i : o.burst);
	if (ret < 0 || (ret = vfgx_gpu_proc_reset(gp)) || (ret = vfgx_gpu_proc_sync(gp)) ||
	    (ret = vfgx_gpu_proc_stats(gp, &st0, NULL)))
		goto out;
	t0 = vfgx_now_ns();
	do {
		for (uint32_t i = 0; i < count && ret >= 0; i += o.burst)
			ret = (int)vfgx_gpu_proc_submit(gp, p + i,
							count - i < o.burst ? count - i : o.burst);
		if (ret < 0 || (ret = vfgx_gpu_proc_reset(gp)))
			goto out;
		passes++;
	} while (vfgx_now_ns() - t0 < (uint64_t)(seconds * 1e9));
	if ((ret = vfgx_gpu_proc_sync(gp)))
		goto out;
	ns = vfgx_now_ns() - t0;
	if ((ret = vfgx_gpu_proc_stats(gp, &st, NULL)))
		goto out;
	res->packets = st.packets - st0.packets;
	res->complete = res->packets == passes * count &&
			st.delivered - st0.delivered == passes * count;
	res->mpps = (double)res->packets / (double)ns * 1e3;
	res->gbytes_s = (double)res->packets * size / (double)ns;
	res->gbps = res->gbytes_s * 8;
out:
	if (ret < 0)
		fprintf(stderr, "vfgx bench gpu: %u B %s %s: %s\n", size,
			on_gpu ? "gpu" : "pinned", vfgx_gpu_mode_name(mode),
			vfgx_last_error(ctx));
	vfgx_gpu_proc_destroy(gp);
	free(p);
	return ret < 0 ? ret : 0;
}

int bench_gpu_kernel_only(vfgx_ctx *ctx, uint32_t size, bool on_gpu,
			  enum vfgx_gpu_mode mode, double seconds, struct tput *res)
{
	uint32_t stride = stride_of(size), count = BUF_BYTES / stride;
	vfgx_region *rg = NULL, *rp = NULL;
	uint8_t *frames;
	int ret = -ENOMEM;

	count = count > (1u << 20) ? (1u << 20) : count;
	frames = build_frames(size, count);
	if (frames &&
	    !(ret = vfgx_region_create(ctx, VFGX_MEM_GPU, (size_t)count * stride, 0, false, &rg)) &&
	    !(ret = vfgx_region_create(ctx, VFGX_MEM_PINNED, (size_t)count * stride, 0, false, &rp))) {
		memcpy(vfgx_region_info(rp)->addr, frames, (size_t)count * stride);
		gpubw_copy_to_device(vfgx_region_info(rg)->dev_addr, frames, (size_t)count * stride);
		ret = throughput(ctx, size, on_gpu, mode, true, seconds, frames,
				 vfgx_region_info(rg)->dev_addr, vfgx_region_info(rp)->addr,
				 count, res);
	}
	vfgx_region_destroy(rg);
	vfgx_region_destroy(rp);
	free(frames);
	return ret;
}

void bench_gpu_driver_version(char *buf, size_t len)
{
	FILE *f = fopen("/proc/driver/nvidia/version", "r");
	char line[256];

	snprintf(buf, len, "unknown (no /proc/driver/nvidia/version)");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		snprintf(buf, len, "%s", line);
	}
	fclose(f);
}

static double best_of(const struct tput r[NB_MODES], int *mode)
{
	double b = 0;

	for (int m = 0; m < NB_MODES; m++)
		if (r[m].complete && r[m].mpps > b) {
			b = r[m].mpps;
			*mode = m;
		}
	return b;
}

int vfgx_bench_gpu(int argc, char **argv)
{
	static struct tput res[NB_SIZES][2][NB_MODES], var[2];
	double pp50[NB_PP] = { 0 }, pp99[NB_PP] = { 0 };
	double cpu[NB_SIZES], d2d = 0, pcie = 0;
	struct handoff_res ho;
	const char *out = "bench/results";
	double seconds = 0.5;
	char path[512], desc[256], drv[256], err[256];
	vfgx_ctx *ctx;
	FILE *f;
	int c, ret = 1;

	c = bench_parse_common(argc, argv, "gpu",
			       "usage: vfgx bench gpu [--seconds S per configuration] [--out DIR]",
			       60, &out, &seconds);
	if (c >= 0)
		return c;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (vfgx_ctx_create(&ctx))
		return 1;
	if (vfgx_gpu_probe(ctx, 0, desc, sizeof(desc))) {
		fprintf(stderr, "vfgx bench gpu: %s\n", vfgx_last_error(ctx));
		vfgx_ctx_destroy(ctx);
		return 77;
	}
	bench_gpu_driver_version(drv, sizeof(drv));
	printf("%s\n%s\n", desc, drv);
	if (gpubw_d2d(0, 1ull << 30, 5, &d2d, err, sizeof(err)) ||
	    gpubw_pinned_read(0, 1ull << 30, 3, &pcie, err, sizeof(err))) {
		fprintf(stderr, "vfgx bench gpu: floors: %s\n", err);
		goto out;
	}
	printf("floors: device-to-device copy %.1f GB/s (read+write), pinned host read %.1f GB/s\n",
	       d2d, pcie);
	for (int s = 0; s < NB_SIZES; s++) {
		cpu[s] = cpu_one_core(ctx, sizes[s], seconds);
		printf("cpu one core %5u B: %.2f Mpps\n", sizes[s], cpu[s]);
	}
	if (handoff(ctx, &ho)) {
		fprintf(stderr, "vfgx bench gpu: hand-off: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	printf("hand-off: direct median %.2f us, p99 %.2f us, min %.2f us (%s; calibration +-%.0f/%.0f ns, tick %.0f ns, drift %.2f ppm); half round trip median %.2f us, p99 %.2f us (round trip median %.2f, p99 %.2f)\n",
	       ho.d50, ho.d99, ho.dmin, ho.direct ? "measured" : "NOT measured",
	       ho.width0 / 2, ho.width1 / 2, ho.tick, ho.drift_ppm,
	       ho.p50, ho.p99, ho.r50, ho.r99);
	for (int v = 0; v < NB_PP; v++) {
		if (gpubw_pingpong(0, pp[v].flags, PP_ITERS, &pp50[v], &pp99[v], err,
				   sizeof(err))) {
			fprintf(stderr, "vfgx bench gpu: %s\n", err);
			goto out;
		}
		printf("ping-pong %-70s median %.2f us p99 %.2f us\n", pp[v].what,
		       pp50[v], pp99[v]);
	}
	for (int s = 0; s < NB_SIZES; s++) {
		uint32_t stride = stride_of(sizes[s]);
		uint32_t count = BUF_BYTES / stride;
		uint8_t *frames, *pinned;
		vfgx_region *rg = NULL, *rp = NULL;
		void *dev;

		count = count > (1u << 20) ? (1u << 20) : count;
		frames = build_frames(sizes[s], count);
		if (!frames ||
		    vfgx_region_create(ctx, VFGX_MEM_GPU, (size_t)count * stride, 0, false, &rg) ||
		    vfgx_region_create(ctx, VFGX_MEM_PINNED, (size_t)count * stride, 0, false, &rp)) {
			fprintf(stderr, "vfgx bench gpu: %s\n", vfgx_last_error(ctx));
			free(frames);
			vfgx_region_destroy(rg);
			goto out;
		}
		dev = vfgx_region_info(rg)->dev_addr;
		pinned = vfgx_region_info(rp)->addr;
		memcpy(pinned, frames, (size_t)count * stride);
		gpubw_copy_to_device(dev, frames, (size_t)count * stride);
		for (int g = 0; g < 2; g++)
			for (int m = 0; m < NB_MODES; m++) {
				if (throughput(ctx, sizes[s], g == 0, (enum vfgx_gpu_mode)m, true,
					       seconds, frames, dev, pinned, count, &res[s][g][m]))
					goto out;
				printf("%5u B %-6s %-10s %8.2f Mpps %8.1f Gbps%s\n", sizes[s],
				       g == 0 ? "gpu" : "pinned", vfgx_gpu_mode_name((enum vfgx_gpu_mode)m),
				       res[s][g][m].mpps, res[s][g][m].gbps,
				       res[s][g][m].complete ? "" : " (INCOMPLETE)");
			}
		if (s == 0 || s == NB_SIZES - 1) {
			struct tput *v = &var[s ? 1 : 0];

			throughput(ctx, sizes[s], true, VFGX_GPU_PERSISTENT, false, seconds,
				   frames, dev, pinned, count, v);
			printf("%5u B gpu persistent, reorder off: %.2f Mpps %.1f Gbps\n",
			       sizes[s], v->mpps, v->gbps);
		}
		vfgx_region_destroy(rg);
		vfgx_region_destroy(rp);
		free(frames);
	}

	f = bench_results_open(out, "gpu", "GPU data plane: hand-off, throughput, floors", path,
			       sizeof(path));
	if (!f)
		goto out;
	fprintf(f, "- device: %s\n- driver: %s\n", desc, drv);
	fprintf(f, "- command: vfgx bench gpu --seconds %g\n", seconds);
	fprintf(f, "- method: frames of 64 flows built once (UDP checksums on), placed in GPU memory (cudaMalloc) or pinned host memory read in place (no staging copy); items of 1024 packets through the comm list; stages: parse + IPv4/UDP checksum validation + port filter + sequence header + reorder (window 1024, payload copied into the GPU-memory reorder buffer), verify off, no user stage. Repeated passes for %g s per configuration, each pass ending with a reset item; wall time from first submit to the last item DONE. Every configuration must deliver every packet.\n",
		seconds);
	fprintf(f, "- comm-list status words: pinned host memory (GDRCopy is not packaged in Debian; not used)\n\n");
	fprintf(f, "## Floors (same run)\n\n| floor | value |\n|---|---|\n");
	fprintf(f, "| device-memory bandwidth, 1 GiB cudaMemcpy device-to-device, read+write | %.1f GB/s |\n", d2d);
	fprintf(f, "| pinned host memory read by a kernel over PCIe, 1 GiB | %.1f GB/s |\n", pcie);
	for (int s = 0; s < NB_SIZES; s++)
		fprintf(f, "| CPU pipeline, one core, %u B (same stages, vfgx_proc) | %.2f Mpps (%.2f Gbps) |\n",
			sizes[s], cpu[s], cpu[s] * sizes[s] * 8 / 1e3);
	fprintf(f, "\n## Hand-off latency (CPU stores READY -> GPU observes it)\n\n");
	fprintf(f, "%d empty items through the persistent kernel, each waited for.  Direct: the CPU takes CLOCK_MONOTONIC just before its READY store; the GPU thread polling the status word reads %%globaltimer when a poll first returns READY and stores it in pinned memory before DONE; the clocks are related by %d ping-pongs just before and just after (each bounds offset = globaltimer - monotonic to [g - t1, g + tick - t0]; intersection, middle; offset interpolated between the two); hand-off = stamp + tick/2 - offset - READY time.  Also half the READY->DONE round trip and the round trip itself.\n\n",
		HANDOFFS, 2000);
	fprintf(f, "| | median | p99 |\n|---|---|---|\n");
	if (ho.direct)
		fprintf(f, "| direct: READY store -> GPU observes it | %.2f us | %.2f us |\n", ho.d50, ho.d99);
	else
		fprintf(f, "| direct: not measured (calibration failed) | - | - |\n");
	fprintf(f, "| half round trip | %.2f us | %.2f us |\n| round trip READY -> DONE seen | %.2f us | %.2f us |\n\n",
		ho.p50, ho.p99, ho.r50, ho.r99);
	if (ho.direct)
		fprintf(f, "Calibration: offset interval width %.0f ns before, %.0f ns after (the direct value is uncertain by about +-%.0f ns); %%globaltimer step %.0f ns; drift between the two calibrations %.2f ppm; smallest direct sample %.2f us.\n\n",
			ho.width0, ho.width1, (ho.width0 > ho.width1 ? ho.width0 : ho.width1) / 2,
			ho.tick, ho.drift_ppm, ho.dmin);
	fprintf(f, "Ping-pong variants (same run): the CPU stores i to a pinned word, one GPU thread polls it and stores i to a second pinned word, the CPU polls that; %d round trips each.\n\n| variant | round trip median | p99 |\n|---|---|---|\n",
		PP_ITERS);
	for (int v = 0; v < NB_PP; v++)
		fprintf(f, "| %s | %.2f us | %.2f us |\n", pp[v].what, pp50[v], pp99[v]);
	fprintf(f, "\n## Throughput\n\n| frame B | packets in | mode | Mpps | Gbps | GB/s | all delivered |\n|---|---|---|---|---|---|---|\n");
	for (int s = 0; s < NB_SIZES; s++)
		for (int g = 0; g < 2; g++)
			for (int m = 0; m < NB_MODES; m++) {
				struct tput *t = &res[s][g][m];

				fprintf(f, "| %u | %s | %s | %.2f | %.1f | %.1f | %s |\n", sizes[s],
					g == 0 ? "GPU memory" : "pinned host",
					vfgx_gpu_mode_name((enum vfgx_gpu_mode)m), t->mpps, t->gbps,
					t->gbytes_s, t->complete ? "yes" : "NO");
			}
	fprintf(f, "\nVariant (what reorder costs): persistent, GPU memory, reorder off: 64 B %.2f Mpps; 8192 B %.2f Mpps (%.1f GB/s).\n\n",
		var[0].mpps, var[1].mpps, var[1].gbytes_s);
	{
		int m64 = 0, m1500 = 0, m8g = 0, m8p = 0;
		double b64 = best_of(res[0][0], &m64);
		double b1500 = best_of(res[2][0], &m1500);
		double b8g = best_of(res[3][0], &m8g) * 8192 / 1e3;
		double b8p = best_of(res[3][1], &m8p) * 8192 / 1e3;

		fprintf(f, "Best modes: 64 B GPU memory %s; 1500 B GPU memory %s; 8192 B GPU memory %s; 8192 B pinned %s.\n\n",
			vfgx_gpu_mode_name(m64), vfgx_gpu_mode_name(m1500),
			vfgx_gpu_mode_name(m8g), vfgx_gpu_mode_name(m8p));
		bench_target(f, "gpu_handoff_median_us", ho.direct ? ho.d50 : ho.p50, ho.r50,
			     2.0, false);
		bench_target(f, "gpu_64B_mpps_from_gpu_memory", b64, cpu[0], 100, true);
		bench_target(f, "gpu_8192B_gbytes_s_vs_device_bw", b8g, d2d, 0.5 * d2d, true);
		bench_target(f, "gpu_8192B_gbytes_s_pinned_vs_pcie_read", b8p, pcie, 0.8 * pcie, true);
		bench_target(f, "gpu_1500B_mpps_vs_one_cpu_core", b1500, cpu[2], 20 * cpu[2], true);
	}
	fclose(f);
	printf("wrote %s\n", path);
	ret = 0;
out:
	vfgx_ctx_destroy(ctx);
	return ret;
}
#else
int vfgx_bench_gpu(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return bench_gpu_no_cuda("gpu");
}
#endif

int bench_gpu_no_cuda(const char *name)
{
	fprintf(stderr, "vfgx bench %s: this build has no CUDA (install the CUDA toolkit so meson finds nvcc, and rebuild)\n",
		name);
	return 77;
}
