/* pipeline_cpu.c - `vfgx bench pipeline`: CPU Mpps on one core through
 * parse + validate (IPv4 and UDP checksums) + filter + reorder, for 64, 512
 * and 1500 B frames; the reference, measured in the same run, is a loop
 * that only reads every byte of each frame once (the memory-touch floor). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/vfgx.h>

#include "commands.h"
#include "results.h"

#define NB_PKTS 16384

struct size_result {
	uint32_t size;
	double mpps, gbps, ref_mpps;
	uint64_t delivered, packets;
};

static double touch_pass(const struct vfgx_pkt *pkts, uint32_t n,
			 volatile uint64_t *sink)
{
	uint64_t t0 = vfgx_now_ns(), acc = 0;

	for (uint32_t i = 0; i < n; i++)
		for (uint32_t b = 0; b < pkts[i].len; b += 8) {
			uint64_t v;

			memcpy(&v, pkts[i].data + b, 8);
			acc += v;
		}
	*sink += acc;
	return (double)(vfgx_now_ns() - t0);
}

static int run_size(vfgx_ctx *ctx, uint32_t size, double seconds,
		    struct size_result *res)
{
	struct vfgx_pipeline_config pc = {
		.workers = 1, .nb_port_ranges = 1,
		.port_ranges = (const struct vfgx_port_range[]){ { 5000, 5000 } },
		.reorder = true, .reorder_window = 1024, .reorder_slot = 2048,
		.max_streams = 4,
	};
	struct vfgx_pkt *pkts = calloc(NB_PKTS, sizeof(*pkts));
	uint8_t *mem = malloc((size_t)NB_PKTS * 2048);
	struct vfgx_pkt_spec s = {
		.src_ip = 0xC6120001, .dst_ip = 0xC6120002, .src_port = 4000,
		.dst_port = 5000, .frame_len = size, .udp_csum = true,
	};
	struct vfgx_pipeline_stats st;
	volatile uint64_t sink = 0;
	vfgx_proc *proc = NULL;
	double ns = 0, ref_ns = 0;
	uint64_t passes = 0, total = 0;
	int ret = -1;

	if (!pkts || !mem || vfgx_proc_create(ctx, &pc, &proc))
		goto out;
	for (uint32_t i = 0; i < NB_PKTS; i++) {
		s.seq = i;
		pkts[i].data = mem + (size_t)i * 2048;
		pkts[i].len = vfgx_pkt_build(pkts[i].data, 2048, &s);
	}
	/* warm up, then time whole passes until `seconds` have elapsed */
	vfgx_proc_burst(proc, pkts, NB_PKTS);
	vfgx_proc_reset(proc);
	while (ns < seconds * 1e9) {
		uint64_t t0 = vfgx_now_ns();

		for (uint32_t i = 0; i < NB_PKTS; i += 32)
			vfgx_proc_burst(proc, pkts + i, 32);
		ns += (double)(vfgx_now_ns() - t0);
		vfgx_proc_stats(proc, &st);
		if (st.delivered != NB_PKTS) {
			fprintf(stderr, "vfgx bench pipeline: %u B: delivered %llu of %u: pipeline broken\n",
				size, (unsigned long long)st.delivered, NB_PKTS);
			goto out;
		}
		total += st.packets;
		vfgx_proc_reset(proc);
		passes++;
	}
	for (uint64_t p = 0; p < passes; p++)
		ref_ns += touch_pass(pkts, NB_PKTS, &sink);
	res->size = size;
	res->packets = total;
	res->delivered = (uint64_t)NB_PKTS * passes;
	res->mpps = (double)total / ns * 1e3;
	res->gbps = (double)total * size * 8 / ns;
	res->ref_mpps = (double)total / ref_ns * 1e3;
	ret = 0;
out:
	vfgx_proc_destroy(proc);
	free(pkts);
	free(mem);
	return ret;
}

int vfgx_bench_pipeline(int argc, char **argv)
{
	static const uint32_t sizes[] = { 64, 512, 1500 };
	struct size_result res[3];
	const char *out = "bench/results";
	double seconds = 1.0;
	char path[512];
	vfgx_ctx *ctx;
	FILE *f;
	int c;

	c = bench_parse_common(argc, argv, "pipeline",
			       "usage: vfgx bench pipeline [--seconds S] [--out DIR]",
			       600, &out, &seconds);
	if (c >= 0)
		return c;
	if (vfgx_ctx_create(&ctx))
		return 1;
	for (int i = 0; i < 3; i++) {
		if (run_size(ctx, sizes[i], seconds, &res[i])) {
			vfgx_ctx_destroy(ctx);
			return 1;
		}
		printf("%5u B: %7.2f Mpps %7.2f Gbps per core (memory-touch reference %7.2f Mpps)\n",
		       res[i].size, res[i].mpps, res[i].gbps, res[i].ref_mpps);
	}
	vfgx_ctx_destroy(ctx);
	f = bench_results_open(out, "pipeline-cpu",
			       "CPU pipeline: parse + validate + filter + reorder, one core",
			       path, sizeof(path));
	if (!f)
		return 1;
	fprintf(f, "- command: vfgx bench pipeline --seconds %g\n", seconds);
	fprintf(f, "- method: %d frames (one stream, UDP checksums on) processed in bursts of 32 by one vfgx_proc on one thread, repeated for %g s per size; every pass must deliver every frame in order. Reference: a loop that reads every byte of the same frames once (memory-touch floor), same run.\n\n",
		NB_PKTS, seconds);
	fprintf(f, "| frame B | packets | Mpps/core | Gbps/core | reference Mpps | ratio |\n|---|---|---|---|---|---|\n");
	for (int i = 0; i < 3; i++)
		fprintf(f, "| %u | %llu | %.2f | %.2f | %.2f | %.3f |\n", res[i].size,
			(unsigned long long)res[i].packets, res[i].mpps, res[i].gbps,
			res[i].ref_mpps, res[i].mpps / res[i].ref_mpps);
	fprintf(f, "\n");
	bench_target(f, "cpu_pipeline_64B_mpps_per_core", res[0].mpps,
		     res[0].ref_mpps, 10, true);
	fclose(f);
	printf("wrote %s\n", path);
	return 0;
}
