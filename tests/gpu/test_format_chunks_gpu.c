/* test_format_chunks_gpu.c - chunks of every built-in profile (#38), the
 * gpu engine against the cpu engine on the same packets.  Each profile's
 * packets are written byte by byte from its specification (RFC 3550 and
 * RFC 4175, VITA-49, eCPRI, SPEAD-64-48, VDIF, GNU Radio's UDP sink
 * headers) for several flows, then lost, duplicated, reordered, replayed
 * late and (in one run of two) corrupted; the same sequence of bursts
 * goes through the cpu processor and through the GPU kernels (each
 * launch mode, packets in pinned or GPU memory, chunks in GPU or pinned
 * memory).  Every chunk handed out must be the same on both engines, in
 * the same order per stream: index, flags, present map, lengths, every
 * byte of the chunk, bytes, missing_bytes, first_seq, hdr_ts and
 * hdr_flags; so must every placement counter (complete, closed, skipped,
 * placed, missing, late, duplicates, out_of_range, gaps) and every
 * pipeline counter and drop reason.  RTP without stream_ids learns its
 * SSRCs (corrupted ones too) on both.  Runs without corruption also check
 * each complete video frame and SPEAD heap against the generator's bytes.
 * A run must show complete and closed chunks, late and duplicate packets
 * and (by bytes) missing bytes, else it proves nothing.  Exit 77 without
 * a GPU.  The first difference is printed with the profile, the run, the
 * stream, the chunk and the field. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include <vfgx/format.h>
#include <vfgx/gpu.h>
#include <vfgx/stages.h>
#include <vfgx/vfgx.h>

#include "pipeline/chunkset.h"
#include "pipeline/gpu_bench.h"
#include "pipeline/gpu_iface.h"
#include "chunk_compare.h" /* struct ck, ck_compare: the cpu/gpu parity check */
#include "gpu_start.h"

#define FLOWS 4        /* flows of a profile with a stream field */
#define CK_STREAMS 3   /* chunk rings: stream 3 has none (bad_stream) */
#define PER_FLOW 700   /* packets per flow before faults */
#define PKT_MAX 1024
#define MAX_BURST 256
#define MAX_CHUNKS 8192
/* rtp-video: 64 x 16 pixels UYVY, a line per packet in two segments */
#define V_W 64
#define V_H 16
#define V_STRIDE (V_W / 2 * 4)
/* spead: heaps of 8 pieces of 256 bytes */
#define S_PIECE 256
#define S_PIECES 8

static int failures;
static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, v >> 16); wr16(p + 2, v); }
static void wr64(uint8_t *p, uint64_t v) { wr32(p, (uint32_t)(v >> 32)); wr32(p + 4, (uint32_t)v); }
static void le(uint8_t *p, uint64_t v, int n) { for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> 8 * i); }

static uint8_t pixel(uint32_t flow, uint64_t frame, uint32_t off)
{
	return (uint8_t)(flow * 59 + frame * 31 + off * 7 + 1);
}

static uint8_t heap_byte(uint64_t cnt, uint64_t off)
{
	return (uint8_t)(cnt * 13 + off * 3 + 5);
}

static void body(uint8_t *p, uint32_t n, uint32_t flow, uint32_t i)
{
	for (uint32_t k = 0; k < n; k++)
		p[k] = (uint8_t)(flow * 17 + i * 5 + k);
}

/* Packet i of flow of profile name (its UDP payload); returns its length.
 * The body sizes vary; one packet in 150 is larger than its slot. */
static uint32_t build(const char *name, uint32_t flow, uint32_t i, uint8_t *p)
{
	uint32_t n = 64 + (i * 37 + flow * 11) % 200;

	if (i % 150 == 149)
		n = 600;
	if (!strcmp(name, "vfgx")) {
		wr32(p, flow);
		wr32(p + 4, 0);
		wr64(p + 8, 5000 + i);
		body(p + 16, n, flow, i);
		return 16 + n;
	}
	if (!strcmp(name, "rtp")) {
		p[0] = 0x80;
		p[1] = (uint8_t)((i % 8 == 7 ? 0x80 : 0) | 96);
		wr16(p + 2, 65400 + i);
		wr32(p + 4, 3000 * (i / 8));
		wr32(p + 8, 0x1000 + flow);
		body(p + 12, n, flow, i);
		return 12 + n;
	}
	if (!strcmp(name, "rtp-video")) {
		uint32_t frame = i / V_H, line = i % V_H, h = 14;

		p[0] = 0x80;
		p[1] = (uint8_t)((line == V_H - 1 ? 0x80 : 0) | 96);
		wr16(p + 2, 65400 + i);
		wr32(p + 4, 1500 * frame + 7);
		wr32(p + 8, 0x1000 + flow);
		wr16(p + 12, 0);
		for (uint32_t s = 0; s < 2; s++) {
			wr16(p + h, V_STRIDE / 2);
			wr16(p + h + 2, line);
			wr16(p + h + 4, (s ? 0 : 0x8000) | s * (V_W / 2));
			h += 6;
		}
		for (uint32_t k = 0; k < V_STRIDE; k++)
			p[h + k] = pixel(flow, frame, line * V_STRIDE + k);
		return h + V_STRIDE;
	}
	if (!strcmp(name, "vita49")) {
		uint32_t words = 1 + 1 + 1 + 2 + n / 4;

		wr32(p, (1u << 28) | (1u << 22) | (2u << 20) | ((i & 15) << 16) | words);
		wr32(p + 4, flow);
		wr32(p + 8, 1000 + i / 50);
		wr64(p + 12, (uint64_t)i * 1000000007ull);
		body(p + 20, words * 4 - 20, flow, i);
		return words * 4;
	}
	if (!strcmp(name, "ecpri")) {
		p[0] = 0x10;
		p[1] = 0;
		wr16(p + 2, 4 + n);
		wr16(p + 4, flow);
		p[6] = (uint8_t)i;
		p[7] = 0x80;
		body(p + 8, n, flow, i);
		return 8 + n;
	}
	if (!strcmp(name, "spead")) {
		/* the flows' heaps interleave: counter 100 + heap x FLOWS + flow */
		uint64_t cnt = 100 + (uint64_t)(i / S_PIECES) * FLOWS + flow;
		uint64_t off = (uint64_t)(i % S_PIECES) * S_PIECE;
		static const uint8_t hdr[8] = { 0x53, 0x04, 0x02, 0x06, 0, 0, 0, 4 };

		memcpy(p, hdr, 8);
		wr64(p + 8, (1ull << 63) | (1ull << 48) | cnt);
		wr64(p + 16, (1ull << 63) | (2ull << 48) | (S_PIECE * S_PIECES));
		wr64(p + 24, (1ull << 63) | (3ull << 48) | off);
		wr64(p + 32, (1ull << 63) | (4ull << 48) | S_PIECE);
		for (uint32_t k = 0; k < S_PIECE; k++)
			p[40 + k] = heap_byte(cnt, off + k);
		return 40 + S_PIECE;
	}
	if (!strcmp(name, "vdif")) {
		le(p, 1000 + i / 100, 4);
		le(p + 4, i % 100, 4);
		le(p + 8, (2u << 24) | (32 + 64) / 8, 4);
		le(p + 12, (flow << 16) | 0x4142, 4);
		memset(p + 16, 0, 16);
		body(p + 32, 64, flow, i);
		return 96;
	}
	/* gr-udp, gr-udp-size */
	le(p, 1 + i, 8);
	if (!strcmp(name, "gr-udp-size")) {
		le(p + 8, 16 + n, 2);
		memset(p + 10, 0, 6);
		body(p + 16, n, flow, i);
		return 16 + n;
	}
	body(p + 8, n, flow, i);
	return 8 + n;
}

/* flip bytes of the headers, cut short or lengthen */
static uint32_t corrupt(uint8_t *p, uint32_t len)
{
	switch (rnd(3)) {
	case 0:
		for (int k = 0; k < 2; k++)
			p[rnd(len < 48 ? len : 48)] ^= (uint8_t)(1u << rnd(8));
		return len;
	case 1:
		return rnd(len);
	default: {
		uint32_t more = len + 1 + rnd(60);

		return more < PKT_MAX ? more : len;
	}
	}
}

struct traffic {
	uint8_t *frames; /* n x PKT_MAX */
	struct vfgx_pkt *pkts;
	uint32_t n, *bursts, nb_bursts;
};

/* The flows' packets interleaved at random: 2% lost, 2% twice, 1% a copy
 * of one 30-60 packets back (late), with corrupt 2% corrupted; then
 * neighbours swapped within 6 (10%); then bursts of 1-256. */
static int gen(struct traffic *t, const char *name, uint32_t flows, bool bad)
{
	uint32_t cap = flows * PER_FLOW * 2 + 16, next[FLOWS] = { 0 }, left = flows;

	memset(t, 0, sizeof(*t));
	t->frames = calloc(cap, PKT_MAX);
	t->pkts = calloc(cap, sizeof(*t->pkts));
	t->bursts = calloc(cap, sizeof(*t->bursts));
	if (!t->frames || !t->pkts || !t->bursts)
		return -ENOMEM;
	while (left && t->n + 2 < cap) {
		uint32_t f = rnd(flows), k = rnd(100), i, reps = 1;

		if (next[f] >= PER_FLOW)
			continue;
		i = next[f]++;
		left -= next[f] == PER_FLOW;
		if (k < 2)
			continue;
		if (k < 4)
			reps = 2;
		if (k == 4 && i > 60)
			i -= 30 + rnd(30);
		for (uint32_t r = 0; r < reps; r++) {
			uint8_t *p = t->frames + (size_t)t->n * PKT_MAX;
			uint32_t len = build(name, f, i, p);

			if (bad && rnd(100) < 2)
				len = corrupt(p, len);
			t->pkts[t->n].data = p;
			t->pkts[t->n].len = len ? len : 1;
			t->pkts[t->n].flags = VFGX_PKT_PAYLOAD;
			t->n++;
		}
	}
	for (uint32_t j = 0; j + 8 < t->n; j++) {
		if (rnd(100) < 10) {
			uint32_t o = j + 1 + rnd(6), l = t->pkts[j].len;
			uint8_t tmp[PKT_MAX];
			uint8_t *a = t->frames + (size_t)j * PKT_MAX, *b = t->frames + (size_t)o * PKT_MAX;

			memcpy(tmp, a, PKT_MAX);
			memcpy(a, b, PKT_MAX);
			memcpy(b, tmp, PKT_MAX);
			t->pkts[j].len = t->pkts[o].len;
			t->pkts[o].len = l;
		}
	}
	for (uint32_t l = t->n; l;) {
		uint32_t b = 1 + rnd(rnd(4) ? MAX_BURST : 8);

		b = b > l ? l : b;
		t->bursts[t->nb_bursts++] = b;
		l -= b;
	}
	return 0;
}

static void traffic_free(struct traffic *t)
{
	free(t->frames);
	free(t->pkts);
	free(t->bursts);
}

struct run {
	struct vfgx_chunkset *cs;
	const struct vfgx_format *f;  /* NULL: vfgx's header */
	size_t chunk_bytes;
	struct ck *c;
	uint32_t n;
	uint64_t oracle_checked, oracle_bad; /* complete frames and heaps */
	bool oracle;
	uint8_t *data;
	uint64_t *present;
	uint32_t *lens;
	struct vfgx_pipeline_stats st;
	uint64_t cnt[CK_STREAMS][GPUK_K_NCNT];
	uint32_t items, graph_items; /* the gpu run's options (0: a cpu run) */
};

/* Complete frames and heaps (runs without corruption) hold the
 * generator's bytes: frame (hdr_ts - 7) / 1500 of its flow (the learned
 * index is the flow in arrival order, so the SSRC says it: read from the
 * flow's pixels of line 0), heap first_seq - 2^48. */
static void oracle(struct run *r, const struct vfgx_chunk *c)
{
	if (!r->oracle || c->flags != VFGX_CHUNK_COMPLETE || !r->f)
		return;
	if (r->f->layout == VFGX_FMT_RFC4175) {
		uint64_t frame = (c->hdr_ts - 7) / 1500;
		uint32_t flow = FLOWS;

		for (uint32_t f = 0; f < FLOWS; f++)
			if (r->data[0] == pixel(f, frame, 0) && r->data[1] == pixel(f, frame, 1))
				flow = f;
		r->oracle_checked++;
		for (uint32_t k = 0; k < V_STRIDE * V_H; k++)
			r->oracle_bad += flow == FLOWS || r->data[k] != pixel(flow, frame, k);
	} else if (r->f->layout == VFGX_FMT_SPEAD) {
		uint64_t cnt = c->first_seq - (1ull << 48);

		r->oracle_checked++;
		for (uint32_t k = 0; k < S_PIECE * S_PIECES; k++)
			r->oracle_bad += r->data[k] != heap_byte(cnt, k);
	}
}

static void *consume(void *arg)
{
	struct run *r = arg;
	uint32_t P = r->cs->conf.packets, W = (P + 63) / 64;
	struct vfgx_chunk *c;
	int ret;

	while ((ret = vfgx_chunkset_get(r->cs, 50, &c)) != -ENODATA) {
		if (ret)
			continue;
		if (c->mem == VFGX_MEM_GPU) {
			if (cudaMemcpy(r->data, c->data, r->chunk_bytes, cudaMemcpyDeviceToHost) ||
			    cudaMemcpy(r->present, c->present, W * 8, cudaMemcpyDeviceToHost) ||
			    cudaMemcpy(r->lens, c->lens, (size_t)P * 4, cudaMemcpyDeviceToHost))
				failures++, printf("FAIL copy back\n");
		} else {
			memcpy(r->data, c->data, r->chunk_bytes);
			memcpy(r->present, c->present, W * 8);
			memcpy(r->lens, c->lens, (size_t)P * 4);
		}
		oracle(r, c);
		if (r->n < MAX_CHUNKS)
			ck_record(&r->c[r->n++], c, r->present, W * 8, r->lens, (size_t)P * 4,
				  r->data, r->chunk_bytes);
		vfgx_chunkset_put(r->cs, c->stream, c->index);
	}
	return NULL;
}

struct setup {
	const char *name;
	struct vfgx_format f;
	bool native; /* the vfgx profile: the engines' own header path */
	uint32_t flows;
	struct vfgx_chunk_config cc;
	struct vfgx_pipeline_config pc;
};

static int setup(struct setup *s, const char *name)
{
	memset(s, 0, sizeof(*s));
	s->name = name;
	if (vfgx_format_profile(name, &s->f))
		return -1;
	s->native = vfgx_format_is_vfgx(&s->f);
	s->flows = s->f.stream.size || s->f.layout == VFGX_FMT_VITA49 ||
			   s->f.layout == VFGX_FMT_SPEAD ? FLOWS : 1;
	s->f.max_streams = FLOWS;
	s->f.seq_major_mult = 100; /* VDIF: 100 frames a second */
	vfgx_chunk_config_default(&s->cc);
	s->cc.packets = 16;
	s->cc.payload_bytes = 512;
	s->cc.streams = CK_STREAMS;
	s->cc.in_flight = 4;
	s->cc.close_distance = 2;
	s->cc.timeout_ms = 0;
	if (s->f.layout == VFGX_FMT_RFC4175) {
		s->f.stride = V_STRIDE;
		s->f.chunk_bytes = V_STRIDE * V_H;
		s->cc.packets = 32; /* the present bit: sequence % packets */
	} else if (s->f.layout == VFGX_FMT_SPEAD) {
		/* one chunk stream for every flow's heaps: two flows, room
		 * for both flows' open heaps, closed by the ring */
		s->f.chunk_bytes = S_PIECE * S_PIECES;
		s->cc.packets = S_PIECES;
		s->cc.payload_bytes = S_PIECE;
		s->cc.in_flight = 8;
		s->cc.close_distance = 0;
		s->flows = 2;
	}
	vfgx_pipeline_config_default(&s->pc);
	s->pc.workers = 1;
	s->pc.max_streams = FLOWS;
	s->pc.verify_payload = false;
	s->pc.format = s->native ? NULL : &s->f;
	s->pc.chunks = &s->cc;
	return 0;
}

static int run_prepare(struct run *r, vfgx_ctx *ctx, const struct setup *s,
		       enum vfgx_mem_kind mem, bool oracle_on)
{
	struct vfgx_chunk_config cc = s->cc;

	memset(r, 0, sizeof(*r));
	cc.mem = mem;
	if (vfgx_chunkset_create_fmt(ctx, &cc, s->pc.format, &r->cs)) {
		printf("FAIL %s: chunks: %s\n", s->name, vfgx_last_error(ctx));
		return -1;
	}
	r->f = s->pc.format;
	r->chunk_bytes = r->cs->chunk_bytes;
	r->oracle = oracle_on;
	r->c = calloc(MAX_CHUNKS, sizeof(*r->c));
	r->data = calloc(1, r->chunk_bytes);
	r->present = calloc((cc.packets + 63) / 64, 8);
	r->lens = calloc(cc.packets, 4);
	/* chunk memory starts zero on both engines: a byte never written
	 * hashes the same; waited for, as the engine's kernels run on a
	 * stream that does not wait for the legacy one */
	if (mem == VFGX_MEM_GPU &&
	    (cudaMemset(r->cs->dev_base, 0,
			(size_t)cc.streams * cc.in_flight * r->cs->slot_stride) != cudaSuccess ||
	     cudaStreamSynchronize(0) != cudaSuccess))
		return -1;
	return r->c && r->data && r->present && r->lens ? 0 : -1;
}

static void run_free(struct run *r)
{
	vfgx_chunkset_destroy(r->cs);
	free(r->c);
	free(r->data);
	free(r->present);
	free(r->lens);
}

static int cpu_run(vfgx_ctx *ctx, const struct setup *s, const struct traffic *t,
		   enum vfgx_mem_kind mem, bool oracle_on, struct run *r)
{
	vfgx_proc *p;
	pthread_t th;
	uint32_t at = 0;

	if (run_prepare(r, ctx, s, mem, oracle_on))
		return -1;
	if (vfgx_proc_create(ctx, &s->pc, &p) || vfgx_proc_set_chunks(p, r->cs)) {
		printf("FAIL %s: cpu: %s\n", s->name, vfgx_last_error(ctx));
		return -1;
	}
	pthread_create(&th, NULL, consume, r);
	for (uint32_t b = 0; b < t->nb_bursts; at += t->bursts[b++])
		vfgx_proc_burst(p, t->pkts + at, t->bursts[b]);
	vfgx_proc_flush(p);
	vfgx_chunkset_finish(r->cs);
	pthread_join(th, NULL);
	vfgx_proc_stats(p, &r->st);
	ck_counters(r->cs, CK_STREAMS, &r->cnt[0][0]);
	vfgx_proc_destroy(p);
	return 0;
}

/* VFGX_TEST_STREAM0_GATE=1: the legacy default stream is held (a host
 * function that waits) from just before the engine is created until 200
 * ms after burst 0 went in, or 3 s at most.  Work the engine queued there
 * at create (a cudaMemset of its counters, say) then runs after its
 * kernels started on their non-blocking stream, and wipes what burst 0
 * counted: the order a slow legacy stream could give by chance (the
 * flake of #38), forced.  An engine whose create waits on its own stream
 * is not affected. */
struct gate {
	int open;		/* the host function returns */
	int burst0;		/* burst 0 submitted */
	pthread_t th;
};

static void CUDART_CB gate_wait(void *arg)
{
	struct gate *g = arg;
	struct timespec d = { 0, 1000000 };

	while (!__atomic_load_n(&g->open, __ATOMIC_ACQUIRE))
		nanosleep(&d, NULL);
}

static void *gate_timer(void *arg)
{
	struct gate *g = arg;
	struct timespec d = { 0, 10000000 };

	for (int i = 0; i < 300; i++) {
		if (__atomic_load_n(&g->burst0, __ATOMIC_ACQUIRE)) {
			struct timespec w = { 0, 200000000 };

			nanosleep(&w, NULL);
			break;
		}
		nanosleep(&d, NULL);
	}
	__atomic_store_n(&g->open, 1, __ATOMIC_RELEASE);
	return NULL;
}

static bool gate_hold(struct gate *g)
{
	const char *e = getenv("VFGX_TEST_STREAM0_GATE");

	memset(g, 0, sizeof(*g));
	if (!e || strcmp(e, "1"))
		return false;
	if (cudaLaunchHostFunc(0, gate_wait, g) != cudaSuccess) {
		printf("FAIL: VFGX_TEST_STREAM0_GATE: cudaLaunchHostFunc refused\n");
		failures++;
		return false;
	}
	pthread_create(&g->th, NULL, gate_timer, g);
	return true;
}

static void gate_release(struct gate *g, bool held)
{
	if (!held)
		return;
	__atomic_store_n(&g->burst0, 1, __ATOMIC_RELEASE);
	pthread_join(g->th, NULL);
	cudaStreamSynchronize(0);
}

static int gpu_run(vfgx_ctx *ctx, const struct setup *s, const struct traffic *t,
		   enum vfgx_gpu_mode mode, bool pkts_gpu, enum vfgx_mem_kind mem,
		   bool oracle_on, struct run *r)
{
	struct vfgx_gpu_opts o;
	struct vfgx_pkt *pk = calloc(t->n, sizeof(*pk));
	size_t size = (size_t)t->n * PKT_MAX;
	const struct vfgx_region_info *ri;
	vfgx_region *reg = NULL;
	vfgx_gpu_proc *gp = NULL;
	pthread_t th;
	struct gate gate;
	bool held = false;
	uint32_t at = 0;
	int ret = -1;

	if (!pk || run_prepare(r, ctx, s, mem, oracle_on))
		goto out;
	if (vfgx_region_create(ctx, pkts_gpu ? VFGX_MEM_GPU : VFGX_MEM_PINNED, size, 0, false,
			       &reg)) {
		printf("FAIL %s: %s\n", s->name, vfgx_last_error(ctx));
		goto out;
	}
	ri = vfgx_region_info(reg);
	if (pkts_gpu) {
		/* waited for: a copy from pageable memory may return before it
		 * lands, and the engine's stream does not wait for this one */
		cudaError_t e = cudaMemcpy(ri->dev_addr, t->frames, size, cudaMemcpyHostToDevice);

		if (e == cudaSuccess)
			e = cudaStreamSynchronize(0);
		if (e != cudaSuccess) {
			printf("FAIL %s: frame copy: %s\n", s->name, cudaGetErrorString(e));
			goto out;
		}
	} else {
		memcpy(ri->addr, t->frames, size);
	}
	for (uint32_t i = 0; i < t->n; i++) {
		pk[i] = t->pkts[i];
		pk[i].data = (uint8_t *)(pkts_gpu ? ri->dev_addr : ri->addr) +
			     (t->pkts[i].data - t->frames);
		if (pkts_gpu)
			pk[i].flags |= VFGX_PKT_GPU;
	}
	vfgx_gpu_opts_default(&o);
	o.mode = mode;
	o.items = 8 + rnd(8);
	o.graph_items = 2 + rnd(4);
	r->items = o.items;
	r->graph_items = o.graph_items;
	o.burst = MAX_BURST;
	o.timeout_ms = 20000;
	held = gate_hold(&gate);
	if (vfgx_gpu_proc_create_chunks(ctx, &s->pc, &o, r->cs, &gp)) {
		printf("FAIL %s: gpu: %s\n", s->name, vfgx_last_error(ctx));
		gate_release(&gate, held);
		goto out;
	}
	pthread_create(&th, NULL, consume, r);
	for (uint32_t b = 0; b < t->nb_bursts; at += t->bursts[b++]) {
		int64_t it = vfgx_gpu_proc_submit(gp, pk + at, t->bursts[b]);

		if (b == 0)
			gate_release(&gate, held);

		if (it < 0) {
			printf("FAIL %s: gpu: burst %u of %u refused (%s): %s\n", s->name, b,
			       t->nb_bursts, strerror((int)-it), vfgx_last_error(ctx));
			break;
		}
	}
	ret = vfgx_gpu_proc_flush(gp);
	vfgx_chunkset_finish(r->cs);
	pthread_join(th, NULL);
	if (ret || vfgx_gpu_proc_stats(gp, &r->st, NULL)) {
		printf("FAIL %s: gpu: %s\n", s->name, vfgx_last_error(ctx));
		ret = -1;
		goto out;
	}
	ck_counters(r->cs, CK_STREAMS, &r->cnt[0][0]);
	ret = 0;
out:
	vfgx_gpu_proc_destroy(gp);
	vfgx_region_destroy(reg);
	free(pk);
	return ret;
}

/* The gpu run b against the cpu run a; 0 when the same. */
static int compare(const char *what, const struct run *a_run, const struct run *b_run)
{
	if (ck_compare(what, CK_STREAMS, a_run->c, a_run->n, &a_run->cnt[0][0], b_run->c,
		       b_run->n, &b_run->cnt[0][0]))
		return -1;
#define SAME(f) if (a_run->st.f != b_run->st.f) { \
	printf("FAIL %s: " #f " cpu %" PRIu64 " gpu %" PRIu64 " (gpu items %u, graph_items %u)\n", \
	       what, (uint64_t)a_run->st.f, (uint64_t)b_run->st.f, b_run->items, \
	       b_run->graph_items); return -1; }
	SAME(packets);
	SAME(passed);
	SAME(delivered);
	SAME(delivered_bytes);
	if (ck_compare_drops(what, &a_run->st, &b_run->st))
		return -1;
	if (b_run->oracle_bad) {
		printf("FAIL %s: %" PRIu64 " bytes of complete chunks differ from the generator's\n",
		       what, b_run->oracle_bad);
		return -1;
	}
	return 0;
}

/* What the cpu run must show for the comparison to mean something. */
static int coverage(const char *what, const struct setup *s, const struct run *r,
		    bool bad)
{
	uint64_t sum[GPUK_K_NCNT] = { 0 }, ended = 0, ts = 0, miss_b = 0, drops = 0;
	bool want_end = !s->native && (s->f.end.size || s->f.layout == VFGX_FMT_SPEAD);
	bool want_ts = !s->native && (s->f.timestamp.size || s->f.layout == VFGX_FMT_VITA49);
	bool want_oracle = r->oracle && (s->f.layout == VFGX_FMT_RFC4175 ||
					 s->f.layout == VFGX_FMT_SPEAD);

	/* late: a released chunk's packet, or one the sequence extension
	 * put below 0; a 4-bit count (VITA-49) cannot tell a packet 30-60
	 * back from a jump, which corruption's jumps make likelier */
	bool short_count = s->f.seq_bits && s->f.seq_bits <= 4 && !s->native;
	uint64_t late;

	for (int i = 0; i < VFGX_DROP_MAX; i++)
		drops += i == VFGX_DROP_LATE || i == VFGX_DROP_DUPLICATE ? 0 : r->st.drops[i];

	for (uint32_t st = 0; st < CK_STREAMS; st++)
		for (int i = 0; i < GPUK_K_NCNT; i++)
			sum[i] += r->cnt[st][i];
	late = sum[GPUK_K_LATE] + r->st.drops[VFGX_DROP_LATE];
	for (uint32_t i = 0; i < r->n; i++) {
		ended += (r->c[i].hdr_flags & VFGX_CHUNK_ENDED) != 0;
		ts += (r->c[i].hdr_flags & VFGX_CHUNK_HDR_TS) != 0;
		miss_b += r->c[i].missing_bytes != 0;
	}
	if (r->n == 0 || r->n == MAX_CHUNKS || !sum[GPUK_K_COMPLETE] || !sum[GPUK_K_CLOSED] ||
	    (!late && !short_count) || !sum[GPUK_K_DUPLICATES] || !miss_b || (bad && !drops) ||
	    (want_end && !ended) || (want_ts && !ts) || (want_oracle && !r->oracle_checked)) {
		printf("FAIL %s: the traffic proves too little: %u chunks, %" PRIu64 " complete, %" PRIu64
		       " closed, %" PRIu64 " late, %" PRIu64 " duplicates, %" PRIu64 " with missing bytes, %" PRIu64
		       " ended, %" PRIu64 " with hdr_ts, %" PRIu64 " frames/heaps checked, %" PRIu64
		       " other drops\n",
		       what, r->n, sum[GPUK_K_COMPLETE], sum[GPUK_K_CLOSED], sum[GPUK_K_LATE],
		       sum[GPUK_K_DUPLICATES], miss_b, ended, ts, r->oracle_checked, drops);
		return -1;
	}
	if (r->oracle_bad) {
		printf("FAIL %s (cpu engine): %" PRIu64 " bytes of complete chunks differ from the generator's\n",
		       what, r->oracle_bad);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const profiles[] = { "vfgx", "rtp", "rtp-video", "vita49", "ecpri",
						"spead", "vdif", "gr-udp", "gr-udp-size" };
	static const struct {
		enum vfgx_gpu_mode mode;
		bool pkts_gpu;
		enum vfgx_mem_kind mem;
		const char *name;
	} gruns[] = {
		{ VFGX_GPU_PERSISTENT, false, VFGX_MEM_GPU, "persistent, pinned packets, gpu chunks" },
		{ VFGX_GPU_PER_BURST, true, VFGX_MEM_PINNED, "per_burst, gpu packets, pinned chunks" },
		{ VFGX_GPU_GRAPH, false, VFGX_MEM_GPU, "graph, pinned packets, gpu chunks" },
	};
	/* [--cpu-only] [PROFILE]: --cpu-only, where no GPU is: the cpu
	 * engine's runs alone (host chunk memory), their coverage and the
	 * generator's bytes checked */
	bool cpu_only = argc > 1 && !strcmp(argv[1], "--cpu-only");
	const char *only = argc > 1 + cpu_only ? argv[1 + cpu_only] : NULL;
	vfgx_ctx *ctx;
	char desc[256];
	int cases = 0, ret = gpu_test_start(cpu_only, desc, sizeof(desc), &ctx);

	if (ret)
		return ret;
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	if (!cpu_only)
		printf("%s\n", desc);
	for (size_t pi = 0; pi < sizeof(profiles) / sizeof(profiles[0]); pi++) {
		if (only && strcmp(only, profiles[pi]))
			continue;
		for (int bad = 0; bad < 2; bad++) {
			struct setup s;
			struct traffic t;
			struct run a;
			char what[192];

			rng = 0x9e3779b97f4a7c15ull + pi * 7919 + (uint64_t)bad;
			if (setup(&s, profiles[pi]) || gen(&t, s.name, s.flows, bad)) {
				printf("FAIL %s: setup\n", profiles[pi]);
				failures++;
				continue;
			}
			snprintf(what, sizeof(what), "%s, %s", s.name, bad ? "corrupted" : "clean");
			if (cpu_run(ctx, &s, &t, cpu_only ? VFGX_MEM_HOST : VFGX_MEM_PINNED, !bad, &a) ||
			    coverage(what, &s, &a, bad)) {
				failures++;
				run_free(&a);
				traffic_free(&t);
				continue;
			}
			if (cpu_only) {
				cases++;
				printf("ok   %s: cpu engine alone: %u packets, %u chunks, %" PRIu64
				       " checked against the generator\n", what, t.n, a.n, a.oracle_checked);
			}
			for (size_t g = 0; !cpu_only && g < sizeof(gruns) / sizeof(gruns[0]); g++) {
				struct run b;
				char w2[320];

				snprintf(w2, sizeof(w2), "%s: %s", what, gruns[g].name);
				cases++;
				if (gpu_run(ctx, &s, &t, gruns[g].mode, gruns[g].pkts_gpu, gruns[g].mem,
					    !bad, &b) ||
				    compare(w2, &a, &b)) {
					failures++;
				} else {
					uint64_t c0 = 0, c1 = 0;

					for (uint32_t st = 0; st < CK_STREAMS; st++)
						c0 += b.cnt[st][GPUK_K_COMPLETE], c1 += b.cnt[st][GPUK_K_CLOSED];
					printf("ok   %s: %u packets, %u chunks (%" PRIu64 " complete, %" PRIu64
					       " closed, %" PRIu64 " checked against the generator), the same on both engines\n",
					       w2, t.n, b.n, c0, c1, b.oracle_checked);
				}
				run_free(&b);
			}
			run_free(&a);
			traffic_free(&t);
		}
	}
	vfgx_ctx_destroy(ctx);
	printf("%d cases, %d failed\n", cases, failures);
	return failures ? 1 : 0;
}
