/* test_place_gpu.c TILE_PLACE_FATBIN BAD_PLACE_FATBIN - a user placement
 * function (vfgx/place.h) on both engines: examples/user_place/tile_place.c,
 * compiled into this test as C for the cpu engine and given to the gpu
 * engine as the fatbin nvcc made of the same source (linked into the
 * persistent kernel at run time), places the same faulty "tiles" traffic
 * (control packets, lying lengths, tiles lost, duplicated and reordered,
 * two streams).
 * - By slot (place: slot): both deliver the same records, stream,
 *   extended sequence, length and payload hash, in the same order, with
 *   the same counters (user_place drops included).
 * - By the function's own chunks and offsets (place: user, chunks by
 *   bytes), with tile_place and with bad_place.c (tile_place plus the
 *   mistakes a buggy function makes: pieces past the packet, no pieces,
 *   too many, a stream past the description's, offsets past the chunk or
 *   wrapping around, and a tile split in two pieces), and late replays:
 *   every chunk handed out equal (index, flags, present map, lengths,
 *   every byte, bytes, missing_bytes, first_seq, hdr_ts, hdr_flags), every
 *   placement counter and drop reason equal, every complete frame's tiles
 *   where the README's rule ((5k + 5) mod 16, computed here) puts them;
 *   the cpu run must show each mistake's drop, complete and closed
 *   chunks, late and duplicate packets and missing bytes.
 * Without a GPU: exit 77 (--cpu-only: the cpu engine's runs by offsets
 * and their coverage alone).  Then a symbol the module lacks is one error
 * line, and a pipeline that is not persistent is refused. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include <vfgx/format.h>
#include <vfgx/gpu.h>
#include <vfgx/place.h>
#include <vfgx/vfgx.h>

#include "pipeline/chunkset.h"
#include "pipeline/gpu_bench.h" /* vfgx_gpu_proc_log: a test hook */
#include "pipeline/gpu_iface.h" /* GPUK_K_*: the chunk counters */
#include "../../examples/user_place/tile_place.h"
#include "bad_place.h"
#include "chunk_compare.h" /* struct ck, ck_compare: the cpu/gpu parity check */
#include "gpu_start.h"

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
 * packet: kind 0 data, 1 control; a lying length when lie; fault (a
 * BAD_PLACE_*) in its first optional word, when it has one. */
static uint32_t tile_frame(uint8_t *f, uint32_t stream, uint32_t frame, uint32_t k,
			   uint32_t kind, int lie, uint32_t fault)
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
	if (opt && fault)
		p[8] = (uint8_t)fault;
	for (uint32_t i = 0; i < TB; i++)
		p[h + i] = (uint8_t)(stream * 101 + frame * 31 + k * 67 + i * 7 + 1);
	return len;
}

/* Every stream's frames, tile by tile: 2% lost, 2% twice, 1% followed by a
 * control packet, 1% by a copy whose length field lies; with faults, 12%
 * carry a bad_place fault and 1% are followed by a copy of a packet
 * 64-127 back (late, or a duplicate); then 20% swapped with one up to 7
 * ahead. */
static int gen(struct traffic *t, int faults)
{
	uint32_t cap = STREAMS * FRAMES * TILE_PLACE_TILES * 3 + 64;

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
					uint32_t fault = faults && rnd(100) < 12 ? 1 + rnd(BAD_PLACE_FAULTS - 1) : 0;

					t->pkts[t->n].data = fr;
					t->pkts[t->n].len = tile_frame(fr, s, f, k, i == reps && r == 5,
								       i == reps && r == 6, fault);
					t->n++;
					if (faults && t->n > 128 && rnd(100) < 1) {
						uint32_t from = t->n - 64 - rnd(64);

						memcpy(t->frames + (size_t)t->n * SLOT,
						       t->frames + (size_t)from * SLOT, SLOT);
						t->pkts[t->n].data = t->frames + (size_t)t->n * SLOT;
						t->pkts[t->n].len = t->pkts[from].len;
						t->n++;
					}
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

/* ---- place: user, chunks by bytes --------------------------------------- */

#define MAX_CHUNKS 4096

struct brun {
	struct vfgx_chunkset *cs;
	struct ck *c;
	uint32_t n;
	uint64_t oracle_checked, oracle_bad; /* complete frames */
	uint8_t data[TILE_PLACE_FRAME];
	uint64_t present;
	uint32_t lens[TILE_PLACE_TILES];
	struct vfgx_pipeline_stats st;
	uint64_t cnt[STREAMS][GPUK_K_NCNT];
};

/* A complete frame holds tile k of the sender (the generator's bytes) at
 * ((5k + 5) mod 16) x 64, the README's rule, whatever the function did;
 * the frame is the chunk's first sequence (frame x 16 + place, extended
 * from 32 bits: 2^32 above it) / 16. */
static void oracle(struct brun *r, const struct vfgx_chunk *c)
{
	uint64_t frame = (c->first_seq & 0xffffffffu) / TILE_PLACE_TILES;

	if (c->flags != VFGX_CHUNK_COMPLETE)
		return;
	r->oracle_checked++;
	for (uint32_t k = 0; k < TILE_PLACE_TILES; k++) {
		const uint8_t *at = r->data + ((5 * k + 5) % TILE_PLACE_TILES) * TB;

		for (uint32_t i = 0; i < TB; i++)
			r->oracle_bad += at[i] != (uint8_t)(c->stream * 101 + frame * 31 + k * 67 +
							     i * 7 + 1);
	}
}

static void *consume(void *arg)
{
	struct brun *r = arg;
	struct vfgx_chunk *c;
	int ret;

	while ((ret = vfgx_chunkset_get(r->cs, 50, &c)) != -ENODATA) {
		if (ret)
			continue;
		if (c->mem == VFGX_MEM_GPU) {
			if (cudaMemcpy(r->data, c->data, sizeof(r->data), cudaMemcpyDeviceToHost) ||
			    cudaMemcpy(&r->present, c->present, 8, cudaMemcpyDeviceToHost) ||
			    cudaMemcpy(r->lens, c->lens, sizeof(r->lens), cudaMemcpyDeviceToHost))
				failures++, printf("FAIL copy back\n");
		} else {
			memcpy(r->data, c->data, sizeof(r->data));
			memcpy(&r->present, c->present, 8);
			memcpy(r->lens, c->lens, sizeof(r->lens));
		}
		oracle(r, c);
		if (r->n < MAX_CHUNKS)
			ck_record(&r->c[r->n++], c, &r->present, 8, r->lens, sizeof(r->lens),
				  r->data, sizeof(r->data));
		vfgx_chunkset_put(r->cs, c->stream, c->index);
	}
	return NULL;
}

/* The description with the function placing by itself, and its chunks:
 * a frame of 16 tiles, 4 in flight, closed 2 frames behind the newest. */
static void describe_bytes(struct vfgx_format *f, struct vfgx_chunk_config *cc,
			   struct vfgx_pipeline_config *pc)
{
	describe(f);
	f->place = VFGX_FMT_PLACE_USER;
	f->chunk_bytes = TILE_PLACE_FRAME;
	vfgx_chunk_config_default(cc);
	cc->packets = TILE_PLACE_TILES;
	cc->payload_bytes = TB;
	cc->streams = STREAMS;
	cc->in_flight = 4;
	cc->close_distance = 2;
	cc->timeout_ms = 0;
	vfgx_pipeline_config_default(pc);
	pc->workers = 1;
	pc->max_streams = STREAMS;
	pc->verify_payload = false;
	pc->format = f;
	pc->chunks = cc;
}

static int brun_prepare(vfgx_ctx *ctx, struct brun *r, const struct vfgx_pipeline_config *pc,
			enum vfgx_mem_kind mem)
{
	struct vfgx_chunk_config cc = *pc->chunks;

	memset(r, 0, sizeof(*r));
	cc.mem = mem;
	r->c = calloc(MAX_CHUNKS, sizeof(*r->c));
	if (!r->c || vfgx_chunkset_create_fmt(ctx, &cc, pc->format, &r->cs)) {
		printf("FAIL chunks: %s\n", vfgx_last_error(ctx));
		return -1;
	}
	/* chunk memory starts zero on both engines: a byte never written
	 * hashes the same; waited for, as the engine's kernels run on a
	 * stream that does not wait for the legacy one */
	if (mem == VFGX_MEM_GPU &&
	    (cudaMemset(r->cs->dev_base, 0,
			(size_t)cc.streams * cc.in_flight * r->cs->slot_stride) != cudaSuccess ||
	     cudaStreamSynchronize(0) != cudaSuccess))
		return -1;
	return 0;
}

static void brun_free(struct brun *r)
{
	vfgx_chunkset_destroy(r->cs);
	free(r->c);
}

static int bytes_cpu(vfgx_ctx *ctx, const struct vfgx_pipeline_config *pc,
		     const struct traffic *t, struct brun *r)
{
	vfgx_proc *p;
	pthread_t th;

	if (brun_prepare(ctx, r, pc, VFGX_MEM_HOST))
		return -1;
	if (vfgx_proc_create(ctx, pc, &p) || vfgx_proc_set_chunks(p, r->cs)) {
		printf("FAIL cpu: %s\n", vfgx_last_error(ctx));
		return -1;
	}
	pthread_create(&th, NULL, consume, r);
	for (uint32_t at = 0; at < t->n; at += 64)
		vfgx_proc_burst(p, t->pkts + at, t->n - at < 64 ? t->n - at : 64);
	vfgx_proc_flush(p);
	vfgx_chunkset_finish(r->cs);
	pthread_join(th, NULL);
	vfgx_proc_stats(p, &r->st);
	ck_counters(r->cs, STREAMS, &r->cnt[0][0]);
	vfgx_proc_destroy(p);
	return 0;
}

static int bytes_gpu(vfgx_ctx *ctx, const struct vfgx_pipeline_config *pc,
		     const struct traffic *t, bool pkts_gpu, enum vfgx_mem_kind mem,
		     struct brun *r)
{
	const struct vfgx_region_info *ri;
	struct vfgx_pkt *pk = calloc(t->n, sizeof(*pk));
	size_t size = (size_t)t->n * SLOT;
	struct vfgx_gpu_opts o;
	vfgx_region *reg = NULL;
	vfgx_gpu_proc *gp = NULL;
	pthread_t th;
	int ret = -1;

	if (!pk || brun_prepare(ctx, r, pc, mem))
		goto out;
	if (vfgx_region_create(ctx, pkts_gpu ? VFGX_MEM_GPU : VFGX_MEM_PINNED, size, 0, false,
			       &reg)) {
		printf("FAIL region: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	ri = vfgx_region_info(reg);
	if (pkts_gpu)
		cudaMemcpy(ri->dev_addr, t->frames, size, cudaMemcpyHostToDevice);
	else
		memcpy(ri->addr, t->frames, size);
	for (uint32_t i = 0; i < t->n; i++) {
		pk[i] = t->pkts[i];
		pk[i].data = (uint8_t *)(pkts_gpu ? ri->dev_addr : ri->addr) +
			     (t->pkts[i].data - t->frames);
		if (pkts_gpu)
			pk[i].flags |= VFGX_PKT_GPU;
	}
	vfgx_gpu_opts_default(&o);
	o.mode = VFGX_GPU_PERSISTENT; /* the one the function links into */
	o.items = 8;
	o.burst = 64;
	o.timeout_ms = 20000;
	if (vfgx_gpu_proc_create_chunks(ctx, pc, &o, r->cs, &gp)) {
		printf("FAIL gpu create: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	pthread_create(&th, NULL, consume, r);
	for (uint32_t at = 0; at < t->n; at += 64)
		if (vfgx_gpu_proc_submit(gp, pk + at, t->n - at < 64 ? t->n - at : 64) < 0) {
			printf("FAIL gpu: burst at %u refused: %s\n", at, vfgx_last_error(ctx));
			break;
		}
	ret = vfgx_gpu_proc_flush(gp);
	vfgx_chunkset_finish(r->cs);
	pthread_join(th, NULL);
	if (ret || vfgx_gpu_proc_stats(gp, &r->st, NULL)) {
		printf("FAIL gpu run: %s\n", vfgx_last_error(ctx));
		ret = -1;
		goto out;
	}
	ck_counters(r->cs, STREAMS, &r->cnt[0][0]);
	ret = 0;
out:
	vfgx_gpu_proc_destroy(gp);
	vfgx_region_destroy(reg);
	free(pk);
	return ret;
}

/* The gpu run g against the cpu run c; 0 when the same. */
static int compare(const char *what, const struct brun *c, const struct brun *g)
{
	if (ck_compare(what, STREAMS, c->c, c->n, &c->cnt[0][0], g->c, g->n, &g->cnt[0][0]))
		return -1;
	if (c->st.packets != g->st.packets || c->st.delivered != g->st.delivered ||
	    c->st.delivered_bytes != g->st.delivered_bytes) {
		printf("FAIL %s: packets %" PRIu64 "/%" PRIu64 ", delivered %" PRIu64 "/%" PRIu64
		       ", delivered_bytes %" PRIu64 "/%" PRIu64 " (cpu/gpu)\n", what,
		       c->st.packets, g->st.packets, c->st.delivered, g->st.delivered,
		       c->st.delivered_bytes, g->st.delivered_bytes);
		return -1;
	}
	if (ck_compare_drops(what, &c->st, &g->st))
		return -1;
	if (g->oracle_bad) {
		printf("FAIL %s: %" PRIu64 " bytes of complete frames not where the rule puts them\n",
		       what, g->oracle_bad);
		return -1;
	}
	return 0;
}

/* What the cpu run must show for the comparison to mean something. */
static int coverage(const char *what, const struct brun *r, bool faults)
{
	uint64_t sum[GPUK_K_NCNT] = { 0 }, ended = 0, miss_b = 0;
	const uint64_t *d = r->st.drops;

	for (uint32_t s = 0; s < STREAMS; s++)
		for (int i = 0; i < GPUK_K_NCNT; i++)
			sum[i] += r->cnt[s][i];
	for (uint32_t i = 0; i < r->n; i++) {
		ended += (r->c[i].hdr_flags & VFGX_CHUNK_ENDED) != 0;
		miss_b += r->c[i].missing_bytes != 0;
	}
	if (r->n == 0 || r->n == MAX_CHUNKS || !sum[GPUK_K_COMPLETE] || !sum[GPUK_K_CLOSED] ||
	    !sum[GPUK_K_DUPLICATES] || !miss_b || !d[VFGX_DROP_USER_PLACE] ||
	    !r->oracle_checked ||
	    (faults && (!sum[GPUK_K_LATE] || !ended || !d[VFGX_DROP_FIELD_OUTSIDE] ||
			!d[VFGX_DROP_BAD_STREAM] || !d[VFGX_DROP_OFFSET_PAST_CHUNK] ||
			!sum[GPUK_K_OUT_OF_RANGE]))) {
		printf("FAIL %s: the traffic proves too little: %u chunks, %" PRIu64 " complete, %" PRIu64
		       " closed, %" PRIu64 " late, %" PRIu64 " duplicates, %" PRIu64
		       " with missing bytes, %" PRIu64 " ended, %" PRIu64 " frames checked; drops user_place %"
		       PRIu64 ", field_outside %" PRIu64 ", bad_stream %" PRIu64 ", offset_past_chunk %" PRIu64 "\n",
		       what, r->n, sum[GPUK_K_COMPLETE], sum[GPUK_K_CLOSED], sum[GPUK_K_LATE],
		       sum[GPUK_K_DUPLICATES], miss_b, ended, r->oracle_checked,
		       d[VFGX_DROP_USER_PLACE], d[VFGX_DROP_FIELD_OUTSIDE], d[VFGX_DROP_BAD_STREAM],
		       d[VFGX_DROP_OFFSET_PAST_CHUNK]);
		return -1;
	}
	if (r->oracle_bad) {
		printf("FAIL %s (cpu engine): %" PRIu64 " bytes of complete frames not where the rule puts them\n",
		       what, r->oracle_bad);
		return -1;
	}
	return 0;
}

/* place: user on both engines: fn (the C build) and symbol in fatbin (the
 * same source's device build) over the traffic t; cpu_only: the cpu
 * engine's run and what it must show, alone. */
static void bytes_parity(vfgx_ctx *ctx, const char *fatbin, const char *symbol,
			 vfgx_place_fn *fn, const struct traffic *t, bool faults, bool cpu_only)
{
	static const struct {
		bool pkts_gpu;
		enum vfgx_mem_kind mem;
		const char *name;
	} gruns[] = {
		{ false, VFGX_MEM_GPU, "pinned packets, gpu chunks" },
		{ true, VFGX_MEM_PINNED, "gpu packets, pinned chunks" },
	};
	struct vfgx_place_conf cpu_pc = { .argsz = sizeof(cpu_pc), .symbol = symbol, .fn = fn };
	struct vfgx_place_conf gpu_pc = { .argsz = sizeof(gpu_pc), .symbol = symbol,
					  .gpu_module = fatbin };
	struct vfgx_format fmt;
	struct vfgx_chunk_config cc;
	struct vfgx_pipeline_config pc;
	struct brun *c = calloc(1, sizeof(*c)), *g = calloc(1, sizeof(*g));
	char what[160];

	describe_bytes(&fmt, &cc, &pc);
	snprintf(what, sizeof(what), "place user, %s", symbol);
	pc.place = &cpu_pc;
	if (!c || !g || bytes_cpu(ctx, &pc, t, c) || coverage(what, c, faults)) {
		failures++;
		goto out;
	}
	if (cpu_only) {
		printf("ok   %s: cpu engine alone: %u packets, %u chunks, %" PRIu64
		       " frames checked, drops user_place %" PRIu64 ", field_outside %" PRIu64
		       ", bad_stream %" PRIu64 ", offset_past_chunk %" PRIu64 ", late %" PRIu64
		       ", duplicate %" PRIu64 "\n",
		       what, t->n, c->n, c->oracle_checked, c->st.drops[VFGX_DROP_USER_PLACE],
		       c->st.drops[VFGX_DROP_FIELD_OUTSIDE], c->st.drops[VFGX_DROP_BAD_STREAM],
		       c->st.drops[VFGX_DROP_OFFSET_PAST_CHUNK], c->st.drops[VFGX_DROP_LATE],
		       c->st.drops[VFGX_DROP_DUPLICATE]);
		goto out;
	}
	pc.place = &gpu_pc;
	for (size_t i = 0; i < sizeof(gruns) / sizeof(gruns[0]); i++) {
		char w2[256];

		snprintf(w2, sizeof(w2), "%s: persistent, %s", what, gruns[i].name);
		if (bytes_gpu(ctx, &pc, t, gruns[i].pkts_gpu, gruns[i].mem, g) || compare(w2, c, g)) {
			failures++;
		} else {
			uint64_t done = 0, closed = 0;

			for (uint32_t s = 0; s < STREAMS; s++)
				done += g->cnt[s][GPUK_K_COMPLETE], closed += g->cnt[s][GPUK_K_CLOSED];
			printf("ok   %s: %u packets, %u chunks (%" PRIu64 " complete, %" PRIu64
			       " closed, %" PRIu64 " frames checked), drops user_place %" PRIu64
			       ", field_outside %" PRIu64 ", bad_stream %" PRIu64 ", offset_past_chunk %"
			       PRIu64 ", late %" PRIu64 ", duplicate %" PRIu64 ": the same on both engines\n",
			       w2, t->n, g->n, done, closed, g->oracle_checked,
			       g->st.drops[VFGX_DROP_USER_PLACE], g->st.drops[VFGX_DROP_FIELD_OUTSIDE],
			       g->st.drops[VFGX_DROP_BAD_STREAM], g->st.drops[VFGX_DROP_OFFSET_PAST_CHUNK],
			       g->st.drops[VFGX_DROP_LATE], g->st.drops[VFGX_DROP_DUPLICATE]);
		}
		brun_free(g);
	}
out:
	brun_free(c);
	free(c);
	free(g);
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
	struct traffic t = { 0 }, tb = { 0 };
	/* --cpu-only, where no GPU is: the cpu engine's runs by the
	 * function's offsets and what their traffic must show, alone */
	bool cpu_only = argc > 1 && !strcmp(argv[1], "--cpu-only");
	vfgx_ctx *ctx;
	char desc[256];
	int st;

	if (argc < 3 && !cpu_only) {
		fprintf(stderr, "usage: test_place_gpu TILE_PLACE_FATBIN BAD_PLACE_FATBIN | --cpu-only\n");
		return 2;
	}
	if ((st = gpu_test_start(cpu_only, desc, sizeof(desc), &ctx)))
		return st;
	if (!cpu_only)
		printf("%s\n", desc);
	if (gen(&t, 0) || gen(&tb, 1))
		return 1;
	if (!cpu_only)
		parity(ctx, argv[1], VFGX_GPU_PERSISTENT, &t);
	bytes_parity(ctx, cpu_only ? NULL : argv[1], "tile_place", tile_place, &t, false, cpu_only);
	bytes_parity(ctx, cpu_only ? NULL : argv[2], "bad_place", bad_place, &tb, true, cpu_only);
	if (!cpu_only)
		refusals(ctx, argv[1]);
	free(t.frames);
	free(t.pkts);
	free(tb.frames);
	free(tb.pkts);
	vfgx_ctx_destroy(ctx);
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
