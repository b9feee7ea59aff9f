/* test_gpu_parity.c - CPU and GPU pipelines over the same randomized
 * traffic (malformed, corrupted, duplicated, reordered, lost, late, far
 * jumps, oversized, filtered, VLAN, payload-only packets) must produce
 * identical counters, identical reorder output (every delivered record in
 * order per stream, with its payload hash) and identical user-stage
 * per-flow sums, for every launch mode and both packet placements.
 * Exits 77 with the reason when no GPU is present.
 *   test_gpu_parity [--quick] [--fault] [--wedge]
 * --quick: less traffic (for compute-sanitizer); --fault: a packet at an
 * invalid device address must end the run with the CUDA error text;
 * --wedge (with VFGX_GPU_TEST_WEDGE=N): a persistent kernel that stops
 * answering must end the run with a timeout line, and tearing the
 * processor down must return, not hang. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include <vfgx/format.h>
#include <vfgx/gpu.h>
#include <vfgx/stages.h>
#include <vfgx/vfgx.h>

#include "pipeline/gpu_bench.h" /* vfgx_gpu_proc_log: a test hook */

#define SLOT 2048
#define STREAMS 8
#define MAX_BURST 256

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

struct traffic {
	uint8_t *frames;      /* n * SLOT, host */
	struct vfgx_pkt *pkts;
	uint32_t n;
	uint32_t *bursts;     /* burst sizes, sum = n */
	uint32_t nb_bursts;
};

struct rec_log {
	struct vfgx_gpu_delivery *r;
	uint64_t n, cap;
	uint64_t sums[STREAMS * 2];
	uint64_t ordinal[STREAMS * 2];
};

static int cpu_record(void *user, uint32_t stream, uint64_t seq,
		      const uint8_t *payload, uint32_t len)
{
	struct rec_log *l = user;

	for (uint32_t i = 0; i < len; i++)
		l->sums[stream] += payload[i];
	if (l->n < l->cap)
		l->r[l->n++] = (struct vfgx_gpu_delivery){
			.stream = stream, .len = len, .ordinal = l->ordinal[stream]++,
			.seq = seq, .hash = vfgx_gpu_payload_hash(payload, len) };
	return 0;
}

/* One frame with a fault drawn at random; returns its length. */
static uint32_t make_frame(uint8_t *f, uint32_t stream, uint64_t seq,
			   uint16_t *flags)
{
	struct vfgx_pkt_spec s = {
		.src_ip = 0x0a000001, .dst_ip = 0x0a000002, .src_port = 4000,
		.dst_port = 5000, .stream = stream, .seq = seq,
		.udp_csum = rnd(10) != 0, .vlan = rnd(8) == 0 ? 42 : 0,
	};
	uint32_t len, k = rnd(1000);

	*flags = 0;
	s.frame_len = vfgx_pkt_min_len(s.vlan) + rnd(rnd(4) == 0 ? 1400 : 200);
	if (k < 8)
		s.dst_port = 6000;                 /* filtered */
	else if (k < 12)
		s.stream = STREAMS + rnd(3);       /* bad stream */
	else if (k < 20)
		s.frame_len = vfgx_pkt_min_len(s.vlan) + 1100 + rnd(300); /* too big */
	len = vfgx_pkt_build(f, SLOT, &s);
	if (k >= 20 && k < 30 && len > 60)
		f[40 + rnd(len - 40)] ^= (uint8_t)(1 + rnd(255)); /* corrupted */
	else if (k >= 30 && k < 34)
		len = rnd(len);                    /* truncated */
	else if (k >= 34 && k < 37)
		f[12] = 0x86;                      /* not IPv4 */
	else if (k >= 37 && k < 40)
		f[(s.vlan ? 18 : 14) + 9] = 6;     /* TCP: checksum breaks first */
	else if (k >= 40 && k < 45 && len > 60) {
		/* payload only: strip to the UDP payload, as socket backends do */
		uint32_t off = (s.vlan ? 18u : 14u) + 28u;

		memmove(f, f + off, len - off);
		len -= off;
		*flags = VFGX_PKT_PAYLOAD;
	}
	return len;
}

static int gen_traffic(struct traffic *t, uint32_t per_stream, uint32_t window)
{
	uint32_t cap = per_stream * STREAMS * 2 + 64;
	uint64_t next[STREAMS] = { 0 };
	uint32_t i = 0;

	t->frames = calloc(cap, SLOT);
	t->pkts = calloc(cap, sizeof(*t->pkts));
	t->bursts = calloc(cap, sizeof(*t->bursts));
	if (!t->frames || !t->pkts || !t->bursts)
		return -ENOMEM;
	for (uint32_t left = STREAMS; left && i + 4 < cap;) {
		uint32_t st = rnd(STREAMS), k = rnd(100), reps = 1;
		uint64_t seq = next[st];

		if (next[st] >= per_stream) {
			left -= next[st] != UINT64_MAX;
			next[st] = UINT64_MAX;
			continue;
		}
		next[st]++;
		if (k < 3)
			continue;                              /* lost */
		if (k < 5)
			reps = 2;                              /* duplicated */
		if (k == 5)
			next[st] += window + rnd(3 * window);  /* far jump */
		if (k == 6 && seq > 2 * window)
			seq -= window + rnd(window);           /* late */
		for (uint32_t r = 0; r < reps; r++, i++) {
			uint16_t fl;

			t->pkts[i].data = t->frames + (size_t)i * SLOT;
			t->pkts[i].len = make_frame(t->pkts[i].data, st, seq, &fl);
			t->pkts[i].flags = fl;
		}
	}
	t->n = i;
	/* reorder: swap neighbours within a small distance */
	for (uint32_t j = 0; j + 8 < t->n; j++) {
		if (rnd(100) < 15) {
			uint32_t o = j + 1 + rnd(7);
			uint8_t tmp[SLOT];
			struct vfgx_pkt p = t->pkts[j];

			memcpy(tmp, t->pkts[j].data, SLOT);
			memcpy(t->pkts[j].data, t->pkts[o].data, SLOT);
			memcpy(t->pkts[o].data, tmp, SLOT);
			t->pkts[j].len = t->pkts[o].len;
			t->pkts[j].flags = t->pkts[o].flags;
			t->pkts[o].len = p.len;
			t->pkts[o].flags = p.flags;
		}
	}
	for (uint32_t left = t->n; left;) {
		uint32_t b = 1 + rnd(rnd(4) ? MAX_BURST : 8);

		b = b > left ? left : b;
		t->bursts[t->nb_bursts++] = b;
		left -= b;
	}
	return 0;
}

static int failures;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			printf("FAIL %s: ", what);                         \
			printf(__VA_ARGS__);                               \
			printf("\n");                                      \
			return -1;                                         \
		}                                                          \
	} while (0)

static int compare(const char *what, const struct vfgx_pipeline_stats *c,
		   const struct vfgx_pipeline_stats *g, const struct rec_log *cl,
		   const struct vfgx_gpu_delivery *gl, int64_t gn,
		   const uint64_t *gsums, uint64_t gorder, bool reorder)
{
	CHECK(c->packets == g->packets, "packets cpu %" PRIu64 " gpu %" PRIu64, c->packets, g->packets);
	CHECK(c->bytes == g->bytes, "bytes");
	CHECK(c->passed == g->passed, "passed cpu %" PRIu64 " gpu %" PRIu64, c->passed, g->passed);
	CHECK(c->delivered == g->delivered, "delivered cpu %" PRIu64 " gpu %" PRIu64, c->delivered, g->delivered);
	CHECK(c->delivered_bytes == g->delivered_bytes, "delivered_bytes");
	CHECK(c->gaps == g->gaps, "gaps cpu %" PRIu64 " gpu %" PRIu64, c->gaps, g->gaps);
	CHECK(c->verify_errors == g->verify_errors, "verify_errors cpu %" PRIu64 " gpu %" PRIu64,
	      c->verify_errors, g->verify_errors);
	CHECK(c->last_seen == g->last_seen, "last_seen");
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		CHECK(c->drops[i] == g->drops[i], "drop %s cpu %" PRIu64 " gpu %" PRIu64,
		      vfgx_drop_reason_name((enum vfgx_drop_reason)i), c->drops[i], g->drops[i]);
	CHECK(gorder == 0, "%" PRIu64 " out-of-order deliveries on the GPU", gorder);
	/* bare runs (no log, user stage or verify) compare the counters */
	if (!gl)
		goto done;
	CHECK((uint64_t)gn == cl->n, "log records cpu %" PRIu64 " gpu %" PRId64, cl->n, gn);
	for (int s = 0; s < STREAMS; s++)
		CHECK(cl->sums[s] == gsums[s], "flow %d payload sum cpu %" PRIu64 " gpu %" PRIu64,
		      s, cl->sums[s], gsums[s]);
	if (reorder) {
		/* CPU log in delivery order; per stream it must equal the GPU's */
		uint64_t k = 0;

		for (int s = 0; s < STREAMS; s++) {
			for (uint64_t i = 0; i < cl->n; i++) {
				const struct vfgx_gpu_delivery *a = &cl->r[i], *b = &gl[k];

				if (a->stream != (uint32_t)s)
					continue;
				if (a->seq != b->seq || a->len != b->len || a->hash != b->hash ||
				    a->stream != b->stream || a->ordinal != b->ordinal) {
					CHECK(0, "stream %d delivery %" PRIu64 ": cpu seq %" PRIu64 " len %u, gpu stream %u seq %" PRIu64 " len %u",
					      s, a->ordinal, a->seq, a->len, b->stream, b->seq, b->len);
				}
				k++;
			}
		}
	}
done:
	printf("ok   %s: %" PRIu64 " packets, %" PRIu64 " delivered, %" PRIu64 " gaps, %" PRIu64 " drops late/dup/csum %" PRIu64 "/%" PRIu64 "/%" PRIu64 "\n",
	       what, g->packets, g->delivered, g->gaps,
	       g->drops[VFGX_DROP_LATE] + g->drops[VFGX_DROP_DUPLICATE] + g->drops[VFGX_DROP_BAD_UDP_CSUM],
	       g->drops[VFGX_DROP_LATE], g->drops[VFGX_DROP_DUPLICATE], g->drops[VFGX_DROP_BAD_UDP_CSUM]);
	return 0;
}

static void cpu_run(vfgx_ctx *ctx, const struct vfgx_pipeline_config *pc,
		    const struct traffic *t, struct vfgx_pipeline_stats *st,
		    struct rec_log *log)
{
	vfgx_proc *p;
	uint32_t at = 0;

	if (vfgx_proc_create(ctx, pc, &p)) {
		printf("FAIL cpu proc: %s\n", vfgx_last_error(ctx));
		exit(1);
	}
	vfgx_proc_set_user_stage(p, cpu_record, log);
	for (uint32_t b = 0; b < t->nb_bursts; at += t->bursts[b++])
		vfgx_proc_burst(p, t->pkts + at, t->bursts[b]);
	vfgx_proc_flush(p);
	vfgx_proc_stats(p, st);
	vfgx_proc_destroy(p);
}

enum placement { PINNED, DEVICE, PINNED_STAGED };
static const char *const place_names[] = { "pinned", "gpu", "pinned+stage_copy" };

static int gpu_run(vfgx_ctx *ctx, const struct vfgx_pipeline_config *pc,
		   bool bare, const struct traffic *t, enum vfgx_gpu_mode mode,
		   enum placement pl, const struct vfgx_pipeline_stats *cst,
		   const struct rec_log *cl, uint32_t timeout_ms)
{
	struct vfgx_gpu_opts o;
	struct vfgx_pipeline_stats st;
	struct vfgx_gpu_delivery *gl;
	struct vfgx_pkt *pk = calloc(t->n, sizeof(*pk));
	vfgx_region *reg = NULL;
	const struct vfgx_region_info *ri;
	vfgx_gpu_proc *gp = NULL;
	uint64_t sums[STREAMS] = { 0 }, order = 0;
	size_t size = (size_t)t->n * SLOT;
	char what[128];
	uint32_t at = 0;
	int64_t gn;
	int ret = -1;

	snprintf(what, sizeof(what), "%s/%s/reorder %s/window %u%s", vfgx_gpu_mode_name(mode),
		 place_names[pl], pc->reorder ? "on" : "off", pc->reorder_window,
		 bare ? "/counters only" : "");
	vfgx_gpu_opts_default(&o);
	o.mode = mode;
	o.items = 8 + rnd(8);
	o.graph_items = 2 + rnd(4);
	o.burst = MAX_BURST;
	/* bare: nothing per delivered record, so in-order runs take the
	 * GPU's batch delivery path */
	o.user = bare ? VFGX_GPU_USER_NONE : VFGX_GPU_USER_FLOW_SUM;
	o.log_records = bare ? 0 : (uint32_t)cl->n + 16;
	o.timeout_ms = timeout_ms;
	o.stage_copy = pl == PINNED_STAGED;
	gl = bare ? NULL : calloc(o.log_records, sizeof(*gl));
	if (vfgx_region_create(ctx, pl == DEVICE ? VFGX_MEM_GPU : VFGX_MEM_PINNED, size, 0,
			       false, &reg)) {
		printf("FAIL %s: %s\n", what, vfgx_last_error(ctx));
		goto out;
	}
	ri = vfgx_region_info(reg);
	if (pl == DEVICE) {
		/* waited for: a copy from pageable memory may return before it
		 * lands, and the engine's stream does not wait for this one */
		cudaError_t e = cudaMemcpy(ri->dev_addr, t->frames, size, cudaMemcpyHostToDevice);

		if (e == cudaSuccess)
			e = cudaStreamSynchronize(0);
		if (e != cudaSuccess) {
			printf("FAIL %s: frame copy: %s\n", what, cudaGetErrorString(e));
			goto out;
		}
	} else
		memcpy(ri->addr, t->frames, size);
	for (uint32_t i = 0; i < t->n; i++) {
		size_t off = (size_t)(t->pkts[i].data - t->frames);

		pk[i] = t->pkts[i];
		pk[i].data = (uint8_t *)(pl == DEVICE ? ri->dev_addr : ri->addr) + off;
		if (pl == DEVICE)
			pk[i].flags |= VFGX_PKT_GPU;
	}
	if (vfgx_gpu_proc_create(ctx, pc, &o, &gp)) {
		printf("FAIL %s: %s\n", what, vfgx_last_error(ctx));
		goto out;
	}
	for (uint32_t b = 0; b < t->nb_bursts; at += t->bursts[b++]) {
		if (vfgx_gpu_proc_submit(gp, pk + at, t->bursts[b]) < 0)
			break;
		if (rnd(16) == 0)
			vfgx_gpu_proc_poll(gp);
	}
	if (vfgx_gpu_proc_flush(gp) || vfgx_gpu_proc_stats(gp, &st, &order) ||
	    vfgx_gpu_proc_flow_sums(gp, sums, STREAMS)) {
		printf("FAIL %s: %s\n", what, vfgx_last_error(ctx));
		goto out;
	}
	gn = bare ? 0 : vfgx_gpu_proc_log(gp, gl, o.log_records);
	if (gn < 0) {
		printf("FAIL %s: %s\n", what, vfgx_last_error(ctx));
		goto out;
	}
	ret = compare(what, cst, &st, cl, gl, gn, sums, order, pc->reorder);
out:
	if (ret)
		failures++;
	vfgx_gpu_proc_destroy(gp);
	vfgx_region_destroy(reg);
	free(gl);
	free(pk);
	return ret;
}

static int fault_test(vfgx_ctx *ctx, const struct vfgx_pipeline_config *pc)
{
	static const enum vfgx_gpu_mode modes[] = { VFGX_GPU_PERSISTENT, VFGX_GPU_PER_BURST };
	struct vfgx_gpu_opts o;
	struct vfgx_pipeline_stats st;
	struct vfgx_pkt p = { .data = (uint8_t *)(uintptr_t)0x10000, .len = 200,
			      .flags = VFGX_PKT_GPU };
	vfgx_gpu_proc *gp;
	int ret;
	/* A fault leaves the CUDA context unusable: one mode per process is
	 * what a real run sees; the mode comes from VFGX_FAULT_MODE. */
	const char *m = getenv("VFGX_FAULT_MODE");
	enum vfgx_gpu_mode mode = modes[m && !strcmp(m, "per_burst")];

	vfgx_gpu_opts_default(&o);
	o.mode = mode;
	o.timeout_ms = 10000;
	if (vfgx_gpu_proc_create(ctx, pc, &o, &gp)) {
		printf("FAIL fault: %s\n", vfgx_last_error(ctx));
		return 1;
	}
	vfgx_gpu_proc_submit(gp, &p, 1);
	ret = vfgx_gpu_proc_sync(gp);
	vfgx_gpu_proc_stats(gp, &st, NULL);
	printf("fault (%s): sync returned %d: %s\n", vfgx_gpu_mode_name(mode), ret,
	       vfgx_last_error(ctx));
	vfgx_gpu_proc_destroy(gp);
	if (ret != -EIO || !strstr(vfgx_last_error(ctx), "illegal")) {
		printf("FAIL fault: expected the CUDA illegal-address error\n");
		return 1;
	}
	printf("ok   fault: reported with the CUDA error text, ended cleanly\n");
	return 0;
}

/* The kernel wedges at item VFGX_GPU_TEST_WEDGE (the test seam in
 * gpu_proc_host.c): the flush must fail with -ETIMEDOUT after timeout_ms
 * with one line, and destroy must come back within about timeout_ms more
 * (it leaves the kernel to process exit). */
static int wedge_test(vfgx_ctx *ctx, const struct vfgx_pipeline_config *pc)
{
	struct traffic t = { 0 };
	struct vfgx_gpu_opts o;
	struct vfgx_pkt *pk;
	vfgx_region *reg;
	vfgx_gpu_proc *gp;
	uint64_t t0, t1;
	uint32_t at = 0;
	int ret = 0;

	if (!getenv("VFGX_GPU_TEST_WEDGE")) {
		printf("FAIL wedge: set VFGX_GPU_TEST_WEDGE=N\n");
		return 1;
	}
	if (gen_traffic(&t, 300, pc->reorder_window) ||
	    vfgx_region_create(ctx, VFGX_MEM_PINNED, (size_t)t.n * SLOT, 0, false, &reg))
		return 1;
	memcpy(vfgx_region_info(reg)->addr, t.frames, (size_t)t.n * SLOT);
	pk = calloc(t.n, sizeof(*pk));
	for (uint32_t i = 0; i < t.n; i++) {
		pk[i] = t.pkts[i];
		pk[i].data = (uint8_t *)vfgx_region_info(reg)->addr + (t.pkts[i].data - t.frames);
	}
	vfgx_gpu_opts_default(&o);
	o.mode = VFGX_GPU_PERSISTENT;
	o.items = 8;
	o.burst = MAX_BURST;
	o.timeout_ms = 1000;
	if (vfgx_gpu_proc_create(ctx, pc, &o, &gp)) {
		printf("FAIL wedge: %s\n", vfgx_last_error(ctx));
		return 1;
	}
	t0 = vfgx_now_ns();
	for (uint32_t b = 0; b < t.nb_bursts && !ret; at += t.bursts[b++])
		ret = vfgx_gpu_proc_submit(gp, pk + at, t.bursts[b]) < 0;
	ret = vfgx_gpu_proc_flush(gp);
	t1 = vfgx_now_ns();
	printf("wedge: flush returned %d after %.0f ms: %s\n", ret, (double)(t1 - t0) / 1e6,
	       vfgx_last_error(ctx));
	if (ret != -ETIMEDOUT || !strstr(vfgx_last_error(ctx), "not finished after 1000 ms") ||
	    strchr(vfgx_last_error(ctx), '\n')) {
		printf("FAIL wedge: expected one timeout line from the flush\n");
		return 1;
	}
	vfgx_gpu_proc_destroy(gp);
	printf("wedge: destroy returned after %.0f ms\n", (double)(vfgx_now_ns() - t1) / 1e6);
	/* the kernel still runs: the region's pinned memory goes with the
	 * process, like the processor's */
	printf("ok   wedge: timed out in one line, torn down without hanging\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const enum vfgx_gpu_mode modes[] = { VFGX_GPU_PERSISTENT, VFGX_GPU_PER_BURST,
						    VFGX_GPU_GRAPH };
	bool quick = false, fault = false, wedge = false;
	vfgx_ctx *ctx;
	char desc[256];
	int cases = 0;

	for (int i = 1; i < argc; i++) {
		quick |= !strcmp(argv[i], "--quick");
		fault |= !strcmp(argv[i], "--fault");
		wedge |= !strcmp(argv[i], "--wedge");
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (vfgx_ctx_create(&ctx))
		return 1;
	if (vfgx_gpu_probe(ctx, 0, desc, sizeof(desc))) {
		printf("SKIP: no GPU: %s\n", vfgx_last_error(ctx));
		vfgx_ctx_destroy(ctx);
		return 77;
	}
	printf("%s\n", desc);
	struct vfgx_pipeline_config pc = {
		.workers = 1, .nb_port_ranges = 2,
		.port_ranges = (const struct vfgx_port_range[]){ { 5000, 5000 }, { 7000, 7100 } },
		.reorder = true, .reorder_window = 64, .reorder_slot = 1024,
		.max_streams = STREAMS, .verify_payload = true,
	};
	if (fault || wedge) {
		int r = fault ? fault_test(ctx, &pc) : wedge_test(ctx, &pc);

		vfgx_ctx_destroy(ctx);
		return r;
	}
	/* A described header (pipeline.format, #38) over the same frames:
	 * vfgx's stream field, but only the low 12 bits of its sequence, so
	 * both engines extend it (vfgx_seq_extend) across many wraps, late
	 * packets and far jumps before reordering. */
	struct vfgx_format short_seq;

	vfgx_format_profile("vfgx", &short_seq);
	snprintf(short_seq.name, sizeof(short_seq.name), "seq12");
	short_seq.seq.bits = 12;
	short_seq.seq_bits = 12;
	short_seq.seq_max_dropout = 2048;
	short_seq.seq_max_misorder = 2048;
	/* two traffic sets: small window (many slides, late, far jumps) and a
	 * larger one; then reorder off; then the small window again with the
	 * described header (its payload pattern not verified: formats are
	 * not the generator's) */
	for (int variant = 0; variant < 4; variant++) {
		struct traffic t = { 0 };
		struct rec_log cl = { 0 };
		struct vfgx_pipeline_stats cst;

		pc.reorder = variant != 2;
		pc.format = variant == 3 ? &short_seq : NULL;
		pc.verify_payload = variant != 3;
		pc.reorder_window = variant == 1 ? 1024 : 64;
		if (gen_traffic(&t, quick ? 300 : 3000, pc.reorder_window))
			return 1;
		cl.cap = t.n + 16;
		cl.r = calloc(cl.cap, sizeof(*cl.r));
		cpu_run(ctx, &pc, &t, &cst, &cl);
		printf("traffic %d: %u packets in %u bursts; CPU delivered %" PRIu64 ", gaps %" PRIu64 "\n",
		       variant, t.n, t.nb_bursts, cst.delivered, cst.gaps);
		for (int m = 0; m < 3; m++) {
			for (int pl = 0; pl < 3; pl++) {
				if (variant == 2 && pl == PINNED_STAGED)
					continue;
				if (quick && pl == PINNED_STAGED && m != 0)
					continue;
				gpu_run(ctx, &pc, false, &t, modes[m], (enum placement)pl, &cst, &cl,
					quick ? 120000 : 10000);
				cases++;
			}
		}
		if (pc.reorder) {
			/* counters only, against the CPU without payload
			 * verification */
			struct vfgx_pipeline_config bare = pc;
			struct rec_log bl = { 0 };

			bare.verify_payload = false;
			bl.cap = t.n + 16;
			bl.r = calloc(bl.cap, sizeof(*bl.r));
			cpu_run(ctx, &bare, &t, &cst, &bl);
			for (int m = 0; m < 3; m++) {
				gpu_run(ctx, &bare, true, &t, modes[m], m == 1 ? PINNED : DEVICE,
					&cst, &bl, quick ? 120000 : 10000);
				cases++;
			}
			free(bl.r);
		}
		free(cl.r);
		free(t.frames);
		free(t.pkts);
		free(t.bursts);
	}
	vfgx_ctx_destroy(ctx);
	printf("%d cases, %d failed\n", cases, failures);
	return failures ? 1 : 0;
}
