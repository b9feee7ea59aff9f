/* test_place_gpu.c TILE_PLACE_FATBIN - a user placement function
 * (vfgx/place.h) on both engines: examples/user_place/tile_place.c,
 * compiled into this test as C for the cpu engine and given to the gpu
 * engine as the fatbin nvcc made of the same source (linked into the
 * persistent kernel at run time), places the same faulty "tiles" traffic
 * (control packets, lying lengths, tiles lost, duplicated and reordered,
 * two streams): both deliver the same records, stream, extended sequence,
 * length and payload hash, in the same order, with the same counters
 * (user_place drops included).  Without a GPU: exit 77.  Then a symbol
 * the module lacks is one error line, and a pipeline that is not
 * persistent is refused. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include <vfgx/format.h>
#include <vfgx/gpu.h>
#include <vfgx/place.h>
#include <vfgx/vfgx.h>

#include "pipeline/gpu_bench.h" /* vfgx_gpu_proc_log: a test hook */
#include "../../examples/user_place/tile_place.h"

#define SLOT 256
#define STREAMS 2
#define FRAMES 200
#define TB TILE_PLACE_BYTES

static int failures;
static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

struct traffic {
	uint8_t *frames; /* n * SLOT */
	struct vfgx_pkt *pkts;
	uint32_t n;
};

/* An Ethernet/IPv4/UDP frame (no UDP checksum) whose payload is a tiles
 * packet: kind 0 data, 1 control; a lying length when lie. */
static uint32_t tile_frame(uint8_t *f, uint32_t stream, uint32_t frame, uint32_t k,
			   uint32_t kind, int lie)
{
	uint32_t opt = rnd(3), h = 8 + 4 * opt;
	struct vfgx_pkt_spec s = {
		.src_ip = 0x0a000001, .dst_ip = 0x0a000002, .src_port = 4000,
		.dst_port = 5000, .udp_csum = 0,
	};
	uint32_t len, off = VFGX_ETH_HLEN + 20 + VFGX_UDP_HLEN;
	uint8_t *p;

	s.frame_len = off + h + TB;
	len = vfgx_pkt_build(f, SLOT, &s);
	p = f + off;
	p[0] = (uint8_t)(0x10 | kind);
	p[1] = (uint8_t)(h / 4);
	p[2] = (uint8_t)(frame >> 8);
	p[3] = (uint8_t)frame;
	p[4] = (uint8_t)k;
	p[5] = (uint8_t)stream;
	p[6] = 0;
	p[7] = (uint8_t)(TB + (lie ? 1 : 0));
	memset(p + 8, 0xee, 4 * opt);
	for (uint32_t i = 0; i < TB; i++)
		p[h + i] = (uint8_t)(stream * 101 + frame * 31 + k * 67 + i * 7 + 1);
	return len;
}

static int gen(struct traffic *t)
{
	uint32_t cap = STREAMS * FRAMES * TILE_PLACE_TILES * 2 + 64;

	t->frames = calloc(cap, SLOT);
	t->pkts = calloc(cap, sizeof(*t->pkts));
	if (!t->frames || !t->pkts)
		return -ENOMEM;
	for (uint32_t f = 0; f < FRAMES; f++)
		for (uint32_t k = 0; k < TILE_PLACE_TILES; k++)
			for (uint32_t s = 0; s < STREAMS; s++) {
				uint32_t r = rnd(100), reps = r < 2 ? 2 : 1;

				if (r >= 2 && r < 4)
					continue; /* lost */
				for (uint32_t i = 0; i < reps + (r == 5) + (r == 6); i++) {
					uint8_t *fr = t->frames + (size_t)t->n * SLOT;

					t->pkts[t->n].data = fr;
					t->pkts[t->n].len = tile_frame(fr, s, f, k, i == reps && r == 5,
								       i == reps && r == 6);
					t->n++;
				}
			}
	/* reordered within 8 */
	for (uint32_t j = 0; j + 8 < t->n; j++)
		if (rnd(100) < 20) {
			uint32_t o = j + 1 + rnd(7);
			uint8_t tmp[SLOT];
			uint32_t l = t->pkts[j].len;

			memcpy(tmp, t->pkts[j].data, SLOT);
			memcpy(t->pkts[j].data, t->pkts[o].data, SLOT);
			memcpy(t->pkts[o].data, tmp, SLOT);
			t->pkts[j].len = t->pkts[o].len;
			t->pkts[o].len = l;
		}
	return 0;
}

struct rec_log {
	struct vfgx_gpu_delivery *r;
	uint64_t n, cap;
	uint64_t ordinal[STREAMS];
};

static int cpu_record(void *user, uint32_t stream, uint64_t seq, const uint8_t *payload,
		      uint32_t len)
{
	struct rec_log *l = user;

	if (l->n < l->cap && stream < STREAMS)
		l->r[l->n++] = (struct vfgx_gpu_delivery){
			.stream = stream, .len = len, .ordinal = l->ordinal[stream]++,
			.seq = seq, .hash = vfgx_gpu_payload_hash(payload, len) };
	return 0;
}

/* The description under the function: a fixed header of at least 8
 * bytes, 32-bit sequences, placing by slot (the gpu engine's placement). */
static void describe(struct vfgx_format *f)
{
	memset(f, 0, sizeof(*f));
	f->argsz = sizeof(*f);
	snprintf(f->name, sizeof(f->name), "tiles");
	f->layout = VFGX_FMT_FIXED;
	f->header_len = 8;
	f->seq_bits = 32;
	f->seq_max_dropout = 1u << 31;
	f->seq_max_misorder = 1u << 31;
	f->max_streams = STREAMS;
	f->place = VFGX_FMT_PLACE_SLOT;
	f->packets = TILE_PLACE_TILES;
	f->payload_bytes = TB;
}

static void parity(vfgx_ctx *ctx, const char *fatbin, enum vfgx_gpu_mode mode,
		   const struct traffic *t)
{
	struct vfgx_format fmt;
	struct vfgx_place_conf cpu_pc = { .argsz = sizeof(cpu_pc), .symbol = "tile_place",
					  .fn = tile_place };
	struct vfgx_place_conf gpu_pc = { .argsz = sizeof(gpu_pc), .symbol = "tile_place",
					  .gpu_module = fatbin };
	struct vfgx_pipeline_config pc = {
		.workers = 1, .reorder = true, .reorder_window = 64, .reorder_slot = 1024,
		.max_streams = STREAMS, .format = &fmt,
	};
	struct rec_log cl = { 0 };
	struct vfgx_pipeline_stats cst, gst;
	struct vfgx_gpu_opts o;
	struct vfgx_gpu_delivery *gl = NULL;
	vfgx_region *reg = NULL;
	vfgx_gpu_proc *gp = NULL;
	vfgx_proc *p;
	struct vfgx_pkt *pk = calloc(t->n, sizeof(*pk));
	uint64_t order = 0;
	int64_t gn;

	describe(&fmt);
	pc.argsz = sizeof(pc);
	/* cpu engine: the function compiled as C */
	pc.place = &cpu_pc;
	cl.cap = t->n + 16;
	cl.r = calloc(cl.cap, sizeof(*cl.r));
	if (!pk || !cl.r || vfgx_proc_create(ctx, &pc, &p)) {
		printf("FAIL cpu: %s\n", vfgx_last_error(ctx));
		failures++;
		goto out;
	}
	vfgx_proc_set_user_stage(p, cpu_record, &cl);
	for (uint32_t at = 0; at < t->n; at += 32)
		vfgx_proc_burst(p, t->pkts + at, t->n - at < 32 ? t->n - at : 32);
	vfgx_proc_flush(p);
	vfgx_proc_stats(p, &cst);
	vfgx_proc_destroy(p);
	/* gpu engine: the same source as a fatbin, linked at run time */
	pc.place = &gpu_pc;
	vfgx_gpu_opts_default(&o);
	o.mode = mode;
	o.items = 8;
	o.burst = 64;
	o.user = VFGX_GPU_USER_FLOW_SUM;
	o.log_records = (uint32_t)cl.n + 16;
	o.timeout_ms = 20000;
	gl = calloc(o.log_records, sizeof(*gl));
	if (vfgx_region_create(ctx, VFGX_MEM_PINNED, (size_t)t->n * SLOT, 0, false, &reg)) {
		printf("FAIL region: %s\n", vfgx_last_error(ctx));
		failures++;
		goto out;
	}
	memcpy(vfgx_region_info(reg)->addr, t->frames, (size_t)t->n * SLOT);
	for (uint32_t i = 0; i < t->n; i++) {
		pk[i] = t->pkts[i];
		pk[i].data = (uint8_t *)vfgx_region_info(reg)->addr + (t->pkts[i].data - t->frames);
	}
	if (vfgx_gpu_proc_create(ctx, &pc, &o, &gp)) {
		printf("FAIL gpu create: %s\n", vfgx_last_error(ctx));
		failures++;
		goto out;
	}
	for (uint32_t at = 0; at < t->n; at += 64)
		if (vfgx_gpu_proc_submit(gp, pk + at, t->n - at < 64 ? t->n - at : 64) < 0)
			break;
	if (vfgx_gpu_proc_flush(gp) || vfgx_gpu_proc_stats(gp, &gst, &order)) {
		printf("FAIL gpu run: %s\n", vfgx_last_error(ctx));
		failures++;
		goto out;
	}
	gn = vfgx_gpu_proc_log(gp, gl, o.log_records);
	if (cst.drops[VFGX_DROP_USER_PLACE] == 0 || cst.delivered == 0) {
		printf("FAIL: the traffic exercised nothing (user_place drops %" PRIu64 ", delivered %" PRIu64 ")\n",
		       cst.drops[VFGX_DROP_USER_PLACE], cst.delivered);
		failures++;
	}
	for (int r = 0; r < VFGX_DROP_MAX; r++)
		if (cst.drops[r] != gst.drops[r]) {
			printf("FAIL drops %s: cpu %" PRIu64 " gpu %" PRIu64 "\n",
			       vfgx_drop_reason_name((enum vfgx_drop_reason)r), cst.drops[r], gst.drops[r]);
			failures++;
		}
	if (cst.delivered != gst.delivered || cst.gaps != gst.gaps || gn != (int64_t)cl.n) {
		printf("FAIL delivered cpu %" PRIu64 " gpu %" PRIu64 ", gaps %" PRIu64 "/%" PRIu64 ", log %" PRIu64 "/%" PRId64 "\n",
		       cst.delivered, gst.delivered, cst.gaps, gst.gaps, cl.n, gn);
		failures++;
	}
	/* per stream, in order: the gpu log interleaves streams by group */
	for (uint32_t s = 0; s < STREAMS && gn == (int64_t)cl.n; s++) {
		uint64_t a = 0, b = 0;

		for (;; a++, b++) {
			while (a < cl.n && cl.r[a].stream != s)
				a++;
			while (b < (uint64_t)gn && gl[b].stream != s)
				b++;
			if (a >= cl.n || b >= (uint64_t)gn)
				break;
			if (cl.r[a].seq != gl[b].seq || cl.r[a].len != gl[b].len ||
			    cl.r[a].hash != gl[b].hash) {
				printf("FAIL stream %u delivery %" PRIu64 ": cpu seq %" PRIu64 " len %u, gpu seq %" PRIu64 " len %u\n",
				       s, cl.r[a].ordinal, cl.r[a].seq, cl.r[a].len, gl[b].seq, gl[b].len);
				failures++;
				break;
			}
		}
	}
	printf("%s %s: %u packets, delivered %" PRIu64 ", gaps %" PRIu64 ", user_place drops %" PRIu64 ", duplicates %" PRIu64 "\n",
	       failures ? "FAIL" : "ok  ", vfgx_gpu_mode_name(mode), t->n, gst.delivered, gst.gaps,
	       gst.drops[VFGX_DROP_USER_PLACE], gst.drops[VFGX_DROP_DUPLICATE]);
out:
	vfgx_gpu_proc_destroy(gp);
	vfgx_region_destroy(reg);
	free(gl);
	free(cl.r);
	free(pk);
}

/* Wrong uses, one line each. */
static void refusals(vfgx_ctx *ctx, const char *fatbin)
{
	struct vfgx_format fmt;
	struct vfgx_place_conf pc_missing = { .argsz = sizeof(pc_missing),
					      .symbol = "no_such_place", .gpu_module = fatbin };
	struct vfgx_place_conf pc_ok = { .argsz = sizeof(pc_ok), .symbol = "tile_place",
					 .gpu_module = fatbin };
	struct vfgx_pipeline_config pc = {
		.argsz = sizeof(pc), .workers = 1, .reorder = true, .reorder_window = 64,
		.reorder_slot = 1024, .max_streams = STREAMS, .format = &fmt,
	};
	struct vfgx_gpu_opts o;
	vfgx_gpu_proc *gp = NULL;

	describe(&fmt);
	vfgx_gpu_opts_default(&o);
	o.mode = VFGX_GPU_PERSISTENT;
	pc.place = &pc_missing;
	if (!vfgx_gpu_proc_create(ctx, &pc, &o, &gp) ||
	    !strstr(vfgx_last_error(ctx), "no_such_place") || strchr(vfgx_last_error(ctx), '\n')) {
		printf("FAIL missing symbol: %s\n", gp ? "accepted" : vfgx_last_error(ctx));
		failures++;
	} else {
		printf("ok   missing symbol: %s\n", vfgx_last_error(ctx));
	}
	vfgx_gpu_proc_destroy(gp);
	gp = NULL;
	o.mode = VFGX_GPU_PER_BURST;
	pc.place = &pc_ok;
	if (!vfgx_gpu_proc_create(ctx, &pc, &o, &gp) ||
	    !strstr(vfgx_last_error(ctx), "persistent")) {
		printf("FAIL per_burst: %s\n", gp ? "accepted" : vfgx_last_error(ctx));
		failures++;
	} else {
		printf("ok   per_burst refused: %s\n", vfgx_last_error(ctx));
	}
	vfgx_gpu_proc_destroy(gp);
}

int main(int argc, char **argv)
{
	struct traffic t = { 0 };
	vfgx_ctx *ctx;
	char desc[256];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: test_place_gpu TILE_PLACE_FATBIN\n");
		return 2;
	}
	if (vfgx_ctx_create(&ctx))
		return 1;
	if (vfgx_gpu_probe(ctx, 0, desc, sizeof(desc))) {
		printf("SKIP: no GPU: %s\n", vfgx_last_error(ctx));
		vfgx_ctx_destroy(ctx);
		return 77;
	}
	printf("%s\n", desc);
	if (gen(&t))
		return 1;
	parity(ctx, argv[1], VFGX_GPU_PERSISTENT, &t);
	refusals(ctx, argv[1]);
	free(t.frames);
	free(t.pkts);
	vfgx_ctx_destroy(ctx);
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
