/* test_chunks_seam_gpu.c - a chunk released while phase B walks another
 * stream reaches the consumer before the input ends.  Streams 0 and 64
 * share phase B's group (stream % GPUK_GROUPS), whose records come in
 * batches of 32.  One burst holds, in order: stream 0's packets 0-14,
 * stream 64's packets 0-16 (its chunk 0 complete, its chunk 1 begun) and
 * stream 0's packet 15.  The group's second batch starts with the packet
 * that completes stream 0's chunk 0, which chunk_group places as a run
 * of the held chunk while stream 64 is the stream last placed into: that
 * run must publish stream 64 before it makes stream 0 the last (the seam
 * of b190b5b).  Had it not, stream 64's chunk 0 would stay unpublished
 * until stream 64's next packet, and none comes before the end.
 *
 * So both chunks 0 must be handed out, complete and holding their
 * packets' bytes, while the engine still waits for input; then, at the
 * end, stream 64's chunk 1 is closed with 15 packets missing.  The gpu
 * engine in each launch mode, packets in pinned memory (the kernels read
 * them there), chunks in GPU memory; --cpu-only: the cpu engine alone
 * (the same checks, no GPU needed).  Exit 77 without a GPU. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include <vfgx/chunk.h>
#include <vfgx/gpu.h>
#include <vfgx/vfgx.h>

#include "pipeline/chunkset.h"
#include "pipeline/gpu_bench.h"
#include "gpu_start.h"

#define A 0u       /* stream 0 */
#define B 64u      /* stream 64: phase B's group of stream 0 */
#define P 16u      /* packets a chunk */
#define BODY 32u   /* body bytes after the 16-byte vfgx header */
#define SLOT 64u   /* payload_bytes */
#define NPKT 33u   /* A 0-14, B 0-16, A 15 */

static int failures;

#define CHECK(c, ...)                                  \
	do {                                           \
		if (!(c)) {                            \
			printf("FAIL: " __VA_ARGS__);  \
			printf("\n");                  \
			failures++;                    \
		}                                      \
	} while (0)

static uint8_t body_byte(uint32_t s, uint32_t i, uint32_t b)
{
	return (uint8_t)(s * 7 + i * 13 + b * 3 + 1);
}

/* vfgx's header (stream, reserved, sequence; big endian) and a body. */
static void build(uint8_t *p, uint32_t s, uint32_t i)
{
	memset(p, 0, 16);
	p[3] = (uint8_t)s;
	for (int k = 0; k < 8; k++)
		p[8 + k] = (uint8_t)((uint64_t)i >> (56 - 8 * k));
	for (uint32_t b = 0; b < BODY; b++)
		p[16 + b] = body_byte(s, i, b);
}

/* The burst, its frames at frames (NPKT x 64 bytes). */
static void traffic(uint8_t *frames, struct vfgx_pkt *pk)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < 15; i++)
		build(frames + 64 * n++, A, i);
	for (uint32_t i = 0; i < 17; i++)
		build(frames + 64 * n++, B, i);
	build(frames + 64 * n++, A, 15);
	for (uint32_t j = 0; j < NPKT; j++) {
		memset(&pk[j], 0, sizeof(pk[j]));
		pk[j].data = frames + 64 * j;
		pk[j].len = 16 + BODY;
		pk[j].flags = VFGX_PKT_PAYLOAD;
	}
}

/* A chunk handed out: it must be one of those expected, with its bytes. */
static void check_chunk(const struct vfgx_chunk *c, bool ended, int *got0)
{
	uint8_t data[P * SLOT];
	uint32_t s = c->stream;

	if (c->mem == VFGX_MEM_GPU) {
		CHECK(cudaMemcpy(data, c->data, sizeof(data), cudaMemcpyDeviceToHost) ==
			      cudaSuccess,
		      "copy back");
	} else {
		memcpy(data, c->data, sizeof(data));
	}
	if ((s == A || s == B) && c->index == 0) {
		uint32_t bad = 0;

		for (uint32_t k = 0; k < P; k++)
			for (uint32_t b = 0; b < BODY; b++)
				bad += data[k * SLOT + b] != body_byte(s, k, b);
		CHECK(c->flags == VFGX_CHUNK_COMPLETE && c->present_count == P && bad == 0,
		      "stream %u chunk 0: flags %#x, %u packets, %u bytes wrong", s, c->flags,
		      c->present_count, bad);
		got0[s == B]++;
		return;
	}
	CHECK(ended && s == B && c->index == 1 && c->present_count == 1 &&
		      c->missing == P - 1 && data[0] == body_byte(B, 16, 0),
	      "unexpected chunk: stream %u index %llu, %u packets, %u missing%s", s,
	      (unsigned long long)c->index, c->present_count, c->missing,
	      ended ? "" : ", before the end");
}

/* Chunks for up to ms; 1 when both chunks 0 came. */
static int take(struct vfgx_chunkset *cs, bool ended, int ms, int *got0)
{
	struct vfgx_chunk *c;
	int ret;

	for (int waited = 0; waited < ms || ended;) {
		ret = vfgx_chunkset_get(cs, 50, &c);
		if (ret == -ENODATA)
			break;
		if (ret) {
			waited += 50;
			if (!ended && got0[0] && got0[1])
				break;
			continue;
		}
		check_chunk(c, ended, got0);
		vfgx_chunkset_put(cs, c->stream, c->index);
	}
	return got0[0] == 1 && got0[1] == 1;
}

static void config(struct vfgx_chunk_config *cc, struct vfgx_pipeline_config *pc)
{
	vfgx_chunk_config_default(cc);
	cc->packets = P;
	cc->payload_bytes = SLOT;
	cc->streams = B + 1;
	cc->in_flight = 2;
	cc->close_distance = 0;
	cc->timeout_ms = 0;
	cc->mem = VFGX_MEM_GPU;
	vfgx_pipeline_config_default(pc);
	pc->workers = 1;
	pc->max_streams = B + 1;
	pc->verify_payload = false;
	pc->chunks = cc;
}

static void run_cpu(vfgx_ctx *ctx, struct vfgx_pkt *pk)
{
	struct vfgx_chunk_config cc;
	struct vfgx_pipeline_config pc;
	struct vfgx_chunkset *cs = NULL;
	vfgx_proc *p = NULL;
	int got0[2] = { 0, 0 };

	config(&cc, &pc);
	cc.mem = VFGX_MEM_HOST;
	if (vfgx_chunkset_create_fmt(ctx, &cc, NULL, &cs) || vfgx_proc_create(ctx, &pc, &p) ||
	    vfgx_proc_set_chunks(p, cs)) {
		CHECK(0, "cpu engine: %s", vfgx_last_error(ctx));
		goto out;
	}
	vfgx_proc_burst(p, pk, NPKT);
	CHECK(take(cs, false, 2000, got0), "cpu engine: chunks 0 before the end: stream %u %d, "
	      "stream %u %d", A, got0[0], B, got0[1]);
	vfgx_proc_flush(p);
	vfgx_chunkset_finish(cs);
	take(cs, true, 0, got0);
	printf("%s cpu engine: both chunks 0 handed out before the end\n",
	       failures ? "FAIL" : "ok  ");
out:
	vfgx_proc_destroy(p);
	vfgx_chunkset_destroy(cs);
}

static void run_gpu(vfgx_ctx *ctx, struct vfgx_pkt *pk, enum vfgx_gpu_mode mode,
		    const char *name)
{
	struct vfgx_chunk_config cc;
	struct vfgx_pipeline_config pc;
	struct vfgx_chunkset *cs = NULL;
	struct vfgx_gpu_opts o;
	vfgx_gpu_proc *gp = NULL;
	int got0[2] = { 0, 0 }, before = failures;

	config(&cc, &pc);
	if (vfgx_chunkset_create_fmt(ctx, &cc, NULL, &cs)) {
		CHECK(0, "%s: chunks: %s", name, vfgx_last_error(ctx));
		return;
	}
	vfgx_gpu_opts_default(&o);
	o.mode = mode;
	o.items = 8;
	o.graph_items = 2;
	o.burst = 64;
	o.timeout_ms = 20000;
	if (vfgx_gpu_proc_create_chunks(ctx, &pc, &o, cs, &gp)) {
		CHECK(0, "%s: gpu: %s", name, vfgx_last_error(ctx));
		vfgx_chunkset_destroy(cs);
		return;
	}
	CHECK(vfgx_gpu_proc_submit(gp, pk, NPKT) >= 0, "%s: submit: %s", name,
	      vfgx_last_error(ctx));
	/* a graph replays graph_items items at once: the burst's item is
	 * run when the graph is full or flushed, so there the end is the
	 * only point the chunks must have come by */
	if (mode != VFGX_GPU_GRAPH)
		CHECK(take(cs, false, 5000, got0),
		      "%s: chunks 0 before the end: stream %u %d, stream %u %d", name, A, got0[0],
		      B, got0[1]);
	CHECK(vfgx_gpu_proc_flush(gp) == 0, "%s: flush: %s", name, vfgx_last_error(ctx));
	vfgx_chunkset_finish(cs);
	take(cs, true, 0, got0);
	CHECK(got0[0] == 1 && got0[1] == 1, "%s: chunks 0: stream %u %d, stream %u %d", name, A,
	      got0[0], B, got0[1]);
	printf("%s %s: both chunks 0 handed out%s\n", failures > before ? "FAIL" : "ok  ", name,
	       mode != VFGX_GPU_GRAPH ? " before the end" : "");
	vfgx_gpu_proc_destroy(gp);
	vfgx_chunkset_destroy(cs);
}

int main(int argc, char **argv)
{
	bool cpu_only = argc > 1 && !strcmp(argv[1], "--cpu-only");
	static uint8_t host[NPKT * 64];
	const struct vfgx_region_info *ri;
	vfgx_region *reg = NULL;
	struct vfgx_pkt pk[NPKT];
	vfgx_ctx *ctx;
	char desc[256];
	int st = gpu_test_start(cpu_only, desc, sizeof(desc), &ctx);

	if (st)
		return st;
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	traffic(host, pk);
	run_cpu(ctx, pk);
	/* the kernels read the packets where they are: pinned memory */
	if (!cpu_only && vfgx_region_create(ctx, VFGX_MEM_PINNED, sizeof(host), 0, false, &reg)) {
		CHECK(0, "pinned region: %s", vfgx_last_error(ctx));
		cpu_only = true;
	}
	if (!cpu_only) {
		ri = vfgx_region_info(reg);
		traffic(ri->addr, pk);
		run_gpu(ctx, pk, VFGX_GPU_PERSISTENT, "persistent");
		run_gpu(ctx, pk, VFGX_GPU_PER_BURST, "per_burst");
		run_gpu(ctx, pk, VFGX_GPU_GRAPH, "graph");
	}
	vfgx_region_destroy(reg);
	vfgx_ctx_destroy(ctx);
	printf("%s\n", failures ? "test_chunks_seam_gpu: FAILED" : "test_chunks_seam_gpu: all passed");
	return failures ? 1 : 0;
}
