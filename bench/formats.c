/* formats.c - `vfgx bench formats` (#38's targets): each built-in
 * profile against the vfgx profile on the same frames, threads and stages,
 * the header read being the only difference (cpu engine: Mpps per CPU
 * second on one thread; gpu engine: Mpps with the frames in GPU memory),
 * in paired rounds; and RFC 4175 video assembled into frames through
 * `vfgx run`'s pipeline (formats_video.c): one 1080p60 stream on the cpu
 * engine, as many 4K60 streams as the gpu engine keeps whole.  The CPU
 * part runs anywhere; the GPU part where a GPU is, or alone with
 * --gpu-only, merged with the CPU part of an earlier run (--merge-from),
 * or the CPU part alone, --cpu-only, with an earlier run's GPU part when
 * --merge-from names one. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/bench.h>
#include <vfgx/gpu.h>
#include <vfgx/vfgx.h>

#include "cliopt.h"
#include "commands.h"
#include "formats.h"
#include "pipeline_work.h"
#include "results.h"
#include "vfgx_build.h"
#if VFGX_HAVE_CUDA
#include "gpu_bw.h"
#endif


static const char *const profiles[NB_PROFILES] = { "rtp", "vita49", "ecpri", "spead", "vdif",
						   "gr-udp" };
static const struct cli_opt formats_opts[] = {
	{ "out", 'o', "DIR", "write formats.md into DIR (default bench/results)" },
	{ "seconds", 's', "S", "measuring time per side and per round (default 0.3)" },
	{ "rounds", 'r', "N", "paired rounds, profile and vfgx interleaved (default 7)" },
	{ "working-set", 'w', "MB", "CPU frame memory per side (default twice the last-level cache, at least 64)" },
	{ "video-frames", 'f', "N", "frames per stream of each video run (default 60, one second of video)" },
	{ "video-streams", 'v', "LIST", "4K60 stream counts of the GPU sweep, comma-separated, 1..64 each (default 12,16)" },
	{ "only", 'p', "LIST", "measure these alone, comma-separated among rtp, vita49, ecpri, spead, vdif, gr-udp and video (the RFC 4175 runs); the rest are listed as not measured (default all)" },
	{ "cpu-only", 'c', NULL, "the CPU part alone (no GPU part even where a GPU is)" },
	{ "gpu-only", 'g', NULL, "the GPU part alone, merged after the CPU part of --merge-from" },
	{ "merge-from", 'm', "FILE", "the results file whose other part is kept: its CPU part with --gpu-only (default DIR/formats.md), its GPU part with --cpu-only" },
	{ "json", 'j', NULL, "the results file as one JSON document on stdout (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_bench_cli_formats = {
	.name = "bench formats",
	.summary = "producers' formats against the vfgx profile (cpu and gpu engines); RFC 4175 video frames assembled",
	.opts = formats_opts,
};

struct fopts {
	const char *out, *merge_from;
	double seconds;
	int rounds, ws_mb, video_frames;
	bool cpu_only, gpu_only;
	const char *only;       /* --only, as given (NULL: everything) */
	uint32_t only_mask;     /* bit i: profiles[i]; bit NB_PROFILES: video */
	uint32_t sweep[MAX_SWEEP]; /* --video-streams, ascending */
	int nsweep;
	const char *sweep_arg;
};

/* ---- the frames ---------------------------------------------------------
 * Frame i: stream i % streams, its packet i / streams, in order.  The vfgx
 * side is the generator's frame as vfgx_pkt_build makes it; the profile
 * side the same frame with its UDP payload written by vfgx_fmt_encode (what
 * `vfgx send --format` sends), the IPv4 and UDP lengths and both checksums
 * redone for it. */
struct traffic {
	uint32_t size, stride, streams, frame_len; /* frame_len: as encoded */
	uint64_t n;
	uint8_t *mem;
	struct vfgx_pkt *pkts;
};


static uint32_t profile_streams(const char *p)
{
	/* spead's stream is always 0 (heap counters interleave), gr-udp has
	 * no stream field */
	return !strcmp(p, "spead") || !strcmp(p, "gr-udp") ? 1 : STREAMS;
}

static int pair_setup(const char *profile, uint32_t size, struct pair *p)
{
	memset(p, 0, sizeof(*p));
	p->profile = profile;
	p->size = size;
	p->streams = profile_streams(profile);
	/* spead has no per-packet sequence: reorder is a config error, the
	 * packets are delivered as they come (both sides) */
	p->reorder = strcmp(profile, "spead") != 0;
	if (vfgx_format_profile(profile, &p->f))
		return -1;
	vfgx_fmt_send_default(&p->h);
	p->f.max_streams = p->streams;
	p->h.streams = p->streams;
	if (!strcmp(profile, "rtp")) {
		/* the gpu engine reads RTP streams by listed SSRCs; both engines get the list */
		p->h.stream_id = SSRC0;
		p->f.n_stream_ids = p->streams;
		for (uint32_t s = 0; s < p->streams; s++)
			p->f.stream_ids[s] = SSRC0 + s;
	} else if (!strcmp(profile, "vdif")) {
		p->f.seq_major_mult = VDIF_FPS;
	} else if (!strcmp(profile, "spead")) {
		p->heap_pkts = SPEAD_HEAP_PKTS;
		p->f.chunk_bytes = (uint64_t)p->heap_pkts * (size - ETH_IP_UDP - SPEAD_HLEN);
	}
	return 0;
}

/* 64 B where the profile's header and 8 body bytes fit the 22 bytes of
 * UDP payload; else the smallest frame whose payload holds them in whole
 * 8-byte words (vita49 74, vdif 82, spead 90). */
static uint32_t small_size(const char *profile)
{
	static const struct {
		const char *p;
		uint32_t hl;
	} hdr[] = { { "rtp", 12 }, { "vita49", 20 }, { "ecpri", 8 }, { "spead", 40 },
		    { "vdif", 32 }, { "gr-udp", 8 } };

	for (size_t i = 0; i < sizeof(hdr) / sizeof(hdr[0]); i++)
		if (!strcmp(hdr[i].p, profile))
			return hdr[i].hl + 8 <= 64 - ETH_IP_UDP ? 64 :
			       ETH_IP_UDP + (hdr[i].hl + 8 + 7) / 8 * 8;
	return 64;
}

static void fix_frame(uint8_t *b, uint32_t udp_payload)
{
	uint8_t *ip = b + 14, *udp = b + 34;
	uint32_t udp_len = 8 + udp_payload;

	vfgx_wr16(ip + 2, (uint16_t)(20 + udp_len));
	vfgx_wr16(ip + 10, 0);
	vfgx_wr16(ip + 10, vfgx_csum_fold(vfgx_csum_add(0, ip, 20)));
	vfgx_wr16(udp + 4, (uint16_t)udp_len);
	vfgx_wr16(udp + 6, 0);
	vfgx_wr16(udp + 6, vfgx_udp_csum(vfgx_rd32(ip + 12), vfgx_rd32(ip + 16), udp, udp_len));
}

/* n frames in about ws bytes (frames + descriptors), at least 1024, a
 * whole number per stream (and per SPEAD heap). */
static int traffic_build(struct traffic *t, const struct pair *p, bool as_profile, size_t ws)
{
	struct vfgx_pkt_spec sp = {
		.src_ip = 0xC6120001, .dst_ip = 0xC6120002, .src_port = 4000,
		.dst_port = FPORT, .frame_len = p->size, .udp_csum = true,
	};
	uint32_t unit = p->streams * (p->heap_pkts ? p->heap_pkts : SPEAD_HEAP_PKTS);

	memset(t, 0, sizeof(*t));
	t->size = p->size;
	t->streams = p->streams;
	t->stride = (p->size + 63) & ~63u;
	t->n = ws / (t->stride + sizeof(struct vfgx_pkt));
	if (t->n < 1024)
		t->n = 1024;
	t->n = t->n / unit * unit;
	t->mem = aligned_alloc(64, t->n * t->stride);
	t->pkts = calloc(t->n, sizeof(*t->pkts));
	if (!t->mem || !t->pkts)
		return -1;
	for (uint64_t i = 0; i < t->n; i++) {
		uint8_t *b = t->mem + i * t->stride;
		uint32_t len;

		sp.stream = (uint32_t)(i % p->streams);
		sp.seq = i / p->streams;
		len = vfgx_pkt_build(b, t->stride, &sp);
		if (!len)
			return -1;
		if (as_profile) {
			int pl = vfgx_fmt_encode(&p->f, &p->h, sp.stream, sp.seq, b + ETH_IP_UDP,
						 p->size - ETH_IP_UDP);

			if (pl < 0)
				return -1;
			fix_frame(b, (uint32_t)pl);
			len = ETH_IP_UDP + (uint32_t)pl;
		}
		t->frame_len = len;
		t->pkts[i] = (struct vfgx_pkt){ .data = b, .len = len };
	}
	return 0;
}

static void traffic_free(struct traffic *t)
{
	free(t->mem);
	free(t->pkts);
	t->mem = NULL;
	t->pkts = NULL;
}

static struct vfgx_pipeline_config pair_conf(const struct pair *p, bool as_profile)
{
	static const struct vfgx_port_range ports[] = { { FPORT, FPORT } };
	struct vfgx_pipeline_config pc = {
		.workers = 1, .nb_port_ranges = 1, .port_ranges = ports,
		.reorder = p->reorder, .reorder_window = 1024, .reorder_slot = 2048,
		.max_streams = p->streams,
		.format = as_profile ? &p->f : NULL,
	};
	return pc;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* every frame delivered, none dropped, no gap, in order */
static bool pass_exact(const struct vfgx_pipeline_stats *st, uint64_t n, uint64_t order)
{
	bool ok = st->packets == n && st->delivered == n && st->gaps == 0 && order == 0;

	for (int i = 0; i < VFGX_DROP_MAX; i++)
		ok = ok && st->drops[i] == 0;
	return ok;
}

/* ---- cpu engine: one vfgx_proc a side on this thread, as bench pipeline --
 * The two sides run interleaved, a sixteenth of a pass at a time (A B,
 * B A, A B, ...), so that whatever slows this machine for a while (the
 * other tenants of a VM's host) slows both sides alike; a side's rate is
 * its packets over the CPU time of its own segments. */
#define CPU_SEGS 16

struct cpu_side {
	const struct pair *p;
	const struct traffic *t;
	bool as_profile;
	vfgx_proc *proc;
	uint64_t pos, seg, total; /* frames: where the pass stands, a segment */
	double cpu_ns, ns;
};

static bool cpu_side_open(vfgx_ctx *ctx, struct cpu_side *s)
{
	struct vfgx_pipeline_config pc = pair_conf(s->p, s->as_profile);
	const struct traffic *t = s->t;

	if (vfgx_proc_create(ctx, &pc, &s->proc)) {
		fprintf(stderr, "vfgx bench formats: %s: %s\n", s->as_profile ? s->p->profile : "vfgx",
			vfgx_last_error(ctx));
		return false;
	}
	/* one untimed pass: the windows' first touch is set-up */
	for (uint64_t i = 0; i < t->n; i += 32)
		vfgx_proc_burst(s->proc, t->pkts + i, (uint32_t)(t->n - i < 32 ? t->n - i : 32));
	vfgx_proc_flush(s->proc);
	vfgx_proc_reset(s->proc);
	/* bursts of 32 from the pass's start, as in one go */
	s->seg = (t->n / CPU_SEGS + 31) / 32 * 32;
	return true;
}

/* The next segment of the pass, timed; at the pass's end its flush (timed
 * too) and its check.  false: the pass was not exact (said). */
static bool cpu_side_step(struct cpu_side *s)
{
	const struct traffic *t = s->t;
	uint64_t end = t->n - s->pos > s->seg ? s->pos + s->seg : t->n;
	uint64_t w0 = vfgx_now_ns(), c0 = thread_cpu_ns();
	struct vfgx_pipeline_stats st;

	for (uint64_t i = s->pos; i < end; i += 32)
		vfgx_proc_burst(s->proc, t->pkts + i, (uint32_t)(end - i < 32 ? end - i : 32));
	if (end == t->n)
		vfgx_proc_flush(s->proc);
	s->cpu_ns += (double)(thread_cpu_ns() - c0);
	s->ns += (double)(vfgx_now_ns() - w0);
	s->pos = end == t->n ? 0 : end;
	if (s->pos)
		return true;
	vfgx_proc_stats(s->proc, &st);
	if (!pass_exact(&st, t->n, st.order_errors)) {
		fprintf(stderr, "vfgx bench formats: cpu %s %u B (%s side): offered %llu, delivered %llu of %llu, gaps %llu, order errors %llu, drops: the pass is not exact\n",
			s->p->profile, s->p->size, s->as_profile ? s->p->profile : "vfgx",
			(unsigned long long)st.packets, (unsigned long long)st.delivered,
			(unsigned long long)t->n, (unsigned long long)st.gaps,
			(unsigned long long)st.order_errors);
		return false;
	}
	s->total += st.packets;
	vfgx_proc_reset(s->proc);
	return true;
}

/* A side is done with seconds of whole passes. */
static bool cpu_side_done(const struct cpu_side *s, double seconds)
{
	return s->ns >= seconds * 1e9 && s->pos == 0;
}

/* One round: the profile's side (a) and the vfgx side (b) interleaved,
 * b first when b_first; their Mpps per CPU-second into *prof and *ref
 * (NAN both when a pass was not exact). */
static void cpu_round(vfgx_ctx *ctx, const struct pair *p, const struct traffic *a,
		      const struct traffic *b, double seconds, bool b_first, double *prof,
		      double *ref)
{
	struct cpu_side s[2] = { { .p = p, .t = a, .as_profile = true },
				 { .p = p, .t = b, .as_profile = false } };
	bool ok = cpu_side_open(ctx, &s[b_first]) && cpu_side_open(ctx, &s[!b_first]);

	for (uint64_t j = 0; ok && !(cpu_side_done(&s[0], seconds) &&
				     cpu_side_done(&s[1], seconds)); j++)
		for (int k = 0; ok && k < 2; k++) {
			/* A B, then B A: neither side always goes first */
			struct cpu_side *x = &s[(k + j + b_first) % 2];

			if (!cpu_side_done(x, seconds))
				ok = cpu_side_step(x);
		}
	*prof = ok ? (double)s[0].total / s[0].cpu_ns * 1e3 : NAN;
	*ref = ok ? (double)s[1].total / s[1].cpu_ns * 1e3 : NAN;
	vfgx_proc_destroy(s[0].proc);
	vfgx_proc_destroy(s[1].proc);
}

/* ---- gpu engine: the GPU processor on frames in GPU memory ------------- */
struct gpu_frames {
	vfgx_region *r;
	struct vfgx_pkt *pkts;
	uint32_t n;
};

#if VFGX_HAVE_CUDA
static int gpu_frames_make(vfgx_ctx *ctx, const struct pair *p, bool as_profile,
			   struct gpu_frames *g)
{
	struct traffic t;
	const struct vfgx_region_info *ri;
	int ret = -1;

	memset(g, 0, sizeof(*g));
	if (traffic_build(&t, p, as_profile, GPU_BYTES))
		goto out;
	g->n = t.n > (1u << 20) ? (1u << 20) : (uint32_t)t.n;
	g->n -= g->n % (p->streams * (p->heap_pkts ? p->heap_pkts : SPEAD_HEAP_PKTS));
	if (vfgx_region_create(ctx, VFGX_MEM_GPU, (size_t)g->n * t.stride, 0, false, &g->r))
		goto out;
	ri = vfgx_region_info(g->r);
	if (gpubw_copy_to_device(ri->dev_addr, t.mem, (size_t)g->n * t.stride))
		goto out;
	g->pkts = calloc(g->n, sizeof(*g->pkts));
	if (!g->pkts)
		goto out;
	for (uint32_t i = 0; i < g->n; i++)
		g->pkts[i] = (struct vfgx_pkt){ .data = (uint8_t *)ri->dev_addr + (size_t)i * t.stride,
						.len = t.pkts[i].len, .flags = VFGX_PKT_GPU,
						/* the items' stamps (-Dgpu_item_stamps) take
						 * an item's oldest; the frames were made now */
						.ts_ns = vfgx_now_ns() };
	ret = 0;
out:
	traffic_free(&t);
	return ret;
}

static void gpu_frames_free(struct gpu_frames *g)
{
	vfgx_region_destroy(g->r);
	free(g->pkts);
	memset(g, 0, sizeof(*g));
}

/* Passes over the frames for `seconds`, each ended by a reset item (the
 * streams start over, ordered on the GPU): Mpps by the wall clock, NAN
 * when a pass was not exact; why: the library's line when it refused. */
static double gpu_side(vfgx_ctx *ctx, const struct pair *p, bool as_profile,
		       const struct gpu_frames *g, double seconds, char *why, size_t wlen)
{
	struct vfgx_pipeline_config pc = pair_conf(p, as_profile);
	struct vfgx_pipeline_stats st0, st;
	struct vfgx_gpu_opts o;
	vfgx_gpu_proc *gp = NULL;
	uint64_t passes = 0, t0, ns, order0 = 0, order = 0;
	double mpps = NAN;
	int64_t r = 0;

	vfgx_gpu_opts_default(&o);
	o.mode = VFGX_GPU_PERSISTENT;
	o.burst = 1024;
	o.items = 256;
	o.timeout_ms = 20000;
	if (vfgx_gpu_proc_create(ctx, &pc, &o, &gp)) {
		snprintf(why, wlen, "%s", vfgx_last_error(ctx));
		return NAN;
	}
	for (uint32_t i = 0; i < g->n && r >= 0; i += o.burst)
		r = vfgx_gpu_proc_submit(gp, g->pkts + i, g->n - i < o.burst ? g->n - i : o.burst);
	if (r < 0 || vfgx_gpu_proc_flush(gp) || vfgx_gpu_proc_reset(gp) || vfgx_gpu_proc_sync(gp) ||
	    vfgx_gpu_proc_stats(gp, &st0, &order0))
		goto out;
	t0 = vfgx_now_ns();
	do {
		for (uint32_t i = 0; i < g->n && r >= 0; i += o.burst)
			r = vfgx_gpu_proc_submit(gp, g->pkts + i,
						 g->n - i < o.burst ? g->n - i : o.burst);
		/* in order: every frame delivered as it comes, no flush
		 * needed (as bench gpu's in-order rows) */
		if (r < 0 || vfgx_gpu_proc_reset(gp))
			goto out;
		passes++;
	} while (vfgx_now_ns() - t0 < (uint64_t)(seconds * 1e9));
	if (vfgx_gpu_proc_sync(gp) || vfgx_gpu_proc_stats(gp, &st, &order))
		goto out;
	ns = vfgx_now_ns() - t0;
	{
		/* -Dgpu_item_stamps: where the side's items spent their time */
		char sb[640];

		if (!vfgx_gpu_proc_item_stamps(gp, sb, sizeof(sb)))
			printf("gpu %s %u B %s side: %s\n", p->profile, p->size,
			       as_profile ? p->profile : "vfgx", sb);
	}
	st.packets -= st0.packets;
	st.delivered -= st0.delivered;
	st.gaps -= st0.gaps;
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		st.drops[i] -= st0.drops[i];
	if (pass_exact(&st, passes * g->n, order - order0))
		mpps = (double)st.packets / (double)ns * 1e3;
	else
		snprintf(why, wlen, "a pass was not exact: offered %llu, delivered %llu of %llu",
			 (unsigned long long)st.packets, (unsigned long long)st.delivered,
			 (unsigned long long)(passes * g->n));
out:
	if (isnan(mpps) && !why[0])
		snprintf(why, wlen, "%s", vfgx_last_error(ctx));
	vfgx_gpu_proc_destroy(gp);
	return mpps;
}
#endif

#if VFGX_HAVE_CUDA
/* spead on the gpu engine (formats_chunks.c): the side's chunks, by heap
 * for the profile, by slot for vfgx (a chunk a heap's packets, a
 * slot a packet's payload: the frame less the side's header). */
static double gpu_side_chunks(vfgx_ctx *ctx, const struct pair *p, bool as_profile,
			      const struct gpu_frames *g, double seconds, char *why, size_t wlen)
{
	struct vfgx_pipeline_config pc = pair_conf(p, as_profile);
	struct vfgx_chunk_config cc;

	vfgx_chunk_config_default(&cc);
	cc.packets = p->heap_pkts;
	cc.payload_bytes = p->size - ETH_IP_UDP - (as_profile ? SPEAD_HLEN : VFGX_HLEN);
	cc.streams = p->streams;
	cc.in_flight = GPU_CHUNKS_IN_FLIGHT;
	cc.mem = VFGX_MEM_GPU;
	pc.chunks = &cc;
	return fchunks_gpu_side(ctx, &pc, g->pkts, g->n, seconds, why, wlen);
}
#endif


/* ---- rounds of one pair -------------------------------------------------- */

static void round_line(const char *engine, struct pair_rounds *pr, int i)
{
	pr->ratio[i] = pr->prof[i] / pr->ref[i];
	printf("%s %-6s %4u B round %d: %s %.3f Mpps, vfgx %.3f (ratio %.3f)\n", engine,
	       pr->p.profile, pr->p.size, i + 1, pr->p.profile, pr->prof[i], pr->ref[i],
	       pr->ratio[i]);
}

static int cpu_pair(vfgx_ctx *ctx, const struct fopts *o, size_t ws, struct pair_rounds *pr)
{
	struct traffic a, b;
	int ret = -1;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (traffic_build(&a, &pr->p, true, ws) || traffic_build(&b, &pr->p, false, ws)) {
		fprintf(stderr, "vfgx bench formats: cannot build %s frames of %u B (%zu MiB; --working-set MB)\n",
			pr->p.profile, pr->p.size, ws >> 20);
		goto out;
	}
	pr->frame_profile = a.frame_len;
	pr->frame_vfgx = b.frame_len;
	pr->frames = a.n;
	pr->n = o->rounds;
	for (int i = 0; i < o->rounds; i++) {
		/* the profile's side first in even rounds, the vfgx side in odd */
		cpu_round(ctx, &pr->p, &a, &b, o->seconds, i % 2 == 1, &pr->prof[i], &pr->ref[i]);
		round_line("cpu", pr, i);
	}
	ret = 0;
out:
	traffic_free(&a);
	traffic_free(&b);
	return ret;
}

#if VFGX_HAVE_CUDA
static int gpu_pair(vfgx_ctx *ctx, const struct fopts *o, struct pair_rounds *pr)
{
	struct gpu_frames a, b;
	int ret = -1;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (gpu_frames_make(ctx, &pr->p, true, &a) || gpu_frames_make(ctx, &pr->p, false, &b)) {
		fprintf(stderr, "vfgx bench formats: %s %u B frames into GPU memory: %s\n",
			pr->p.profile, pr->p.size, vfgx_last_error(ctx));
		goto out;
	}
	pr->frames = a.n;
	pr->n = o->rounds;
	for (int i = 0; i < o->rounds; i++) {
		for (int k = 0; k < 2; k++) {
			bool prof_turn = (k == 0) == (i % 2 == 0);

			double (*side)(vfgx_ctx *, const struct pair *, bool,
				       const struct gpu_frames *, double, char *, size_t) =
				pr->p.chunks ? gpu_side_chunks : gpu_side;

			if (prof_turn)
				pr->prof[i] = side(ctx, &pr->p, true, &a, o->seconds, pr->why,
						   sizeof(pr->why));
			else
				pr->ref[i] = side(ctx, &pr->p, false, &b, o->seconds, pr->why,
						  sizeof(pr->why));
		}
		if (isnan(pr->prof[i]) || isnan(pr->ref[i])) {
			/* refused or broken: the same next round; one line says
			 * why, and no round is kept */
			fprintf(stderr, "vfgx bench formats: gpu %s %u B: %s\n", pr->p.profile,
				pr->p.size, pr->why);
			pr->n = 0;
			break;
		}
		round_line("gpu", pr, i);
	}
	ret = 0;
out:
	gpu_frames_free(&a);
	gpu_frames_free(&b);
	return ret;
}
#endif

/* ---- options and the run ------------------------------------------------- */
static int uint_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* --video-streams: 1..MAX_SWEEP counts of 1..FVIDEO_MAX_STREAMS, sorted
 * ascending, no count twice; 0, or 2 after one line on stderr. */
static int parse_sweep(const char *arg, struct fopts *o)
{
	const char *p = arg;

	o->nsweep = 0;
	while (*p) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (end == p || v < 1 || v > FVIDEO_MAX_STREAMS || (*end && *end != ',') ||
		    o->nsweep == MAX_SWEEP) {
			fprintf(stderr, "vfgx bench formats: --video-streams %s: up to %d counts of 1..%d streams, comma-separated (e.g. 12,16)\n",
				arg, MAX_SWEEP, FVIDEO_MAX_STREAMS);
			return 2;
		}
		o->sweep[o->nsweep++] = (uint32_t)v;
		p = *end ? end + 1 : end;
	}
	qsort(o->sweep, (size_t)o->nsweep, sizeof(o->sweep[0]), uint_cmp);
	for (int i = 1; i < o->nsweep; i++)
		if (o->sweep[i] == o->sweep[i - 1]) {
			fprintf(stderr, "vfgx bench formats: --video-streams %s: %u twice\n", arg,
				o->sweep[i]);
			return 2;
		}
	if (!o->nsweep) {
		fprintf(stderr, "vfgx bench formats: --video-streams: name at least one count (e.g. 12,16)\n");
		return 2;
	}
	return 0;
}

/* --only: names among profiles[] and "video" into o->only_mask; 0, or 2
 * after one line on stderr. */
static int parse_only(const char *arg, struct fopts *o)
{
	const char *p = arg;

	o->only = arg;
	o->only_mask = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		int i;

		for (i = 0; i <= NB_PROFILES; i++) {
			const char *name = i < NB_PROFILES ? profiles[i] : "video";

			if (strlen(name) == n && !strncmp(p, name, n))
				break;
		}
		if (i > NB_PROFILES || !n) {
			fprintf(stderr, "vfgx bench formats: --only %s: '%.*s' is none of rtp, vita49, ecpri, spead, vdif, gr-udp, video\n",
				arg, (int)n, p);
			return 2;
		}
		o->only_mask |= 1u << i;
		p += n + (p[n] == ',');
	}
	if (!o->only_mask) {
		fprintf(stderr, "vfgx bench formats: --only: name at least one of rtp, vita49, ecpri, spead, vdif, gr-udp, video\n");
		return 2;
	}
	return 0;
}

static bool selected(const struct fopts *o, const char *name)
{
	for (int i = 0; i <= NB_PROFILES; i++)
		if (!strcmp(name, i < NB_PROFILES ? profiles[i] : "video"))
			return (o->only_mask >> i) & 1;
	return false;
}

static int parse(int argc, char **argv, struct fopts *o)
{
	int c;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_bench_cli_formats)) != -1) {
		switch (c) {
		case 'o':
			o->out = optarg;
			break;
		case 's':
			if (vfgx_num_double(optarg, 0, 60, &o->seconds, NULL, 0) || o->seconds <= 0) {
				fprintf(stderr, "vfgx bench formats: --seconds must be 0..60\n");
				return 2;
			}
			break;
		case 'r':
			if (vfgx_flag_int("bench formats", "--rounds", optarg, 1, MAX_ROUNDS, &o->rounds))
				return 2;
			break;
		case 'w':
			if (vfgx_flag_int("bench formats", "--working-set", optarg, 1, 65536, &o->ws_mb))
				return 2;
			break;
		case 'f':
			if (vfgx_flag_int("bench formats", "--video-frames", optarg, 1, 100000,
					  &o->video_frames))
				return 2;
			break;
		case 'v':
			o->sweep_arg = optarg;
			if (parse_sweep(optarg, o))
				return 2;
			break;
		case 'p':
			if (parse_only(optarg, o))
				return 2;
			break;
		case 'c':
			o->cpu_only = true;
			break;
		case 'g':
			o->gpu_only = true;
			break;
		case 'm':
			o->merge_from = optarg;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_bench_cli_formats);
			return 0;
		default:
			return 2;
		}
	}
	if (optind != argc)
		return cli_bad_operands(&vfgx_bench_cli_formats, "unexpected operand");
	if (o->cpu_only && o->gpu_only) {
		fprintf(stderr, "vfgx bench formats: --cpu-only and --gpu-only: name one of them\n");
		return 2;
	}
	if (o->merge_from && !o->gpu_only && !o->cpu_only) {
		fprintf(stderr, "vfgx bench formats: --merge-from goes with --gpu-only or --cpu-only\n");
		return 2;
	}
	return -1;
}

static int setup_pairs(struct pair_rounds *pr)
{
	for (int i = 0; i < NB_PROFILES; i++)
		for (int s = 0; s < NB_SIZES; s++)
			if (pair_setup(profiles[i], s ? 1500 : small_size(profiles[i]),
				       &pr[i * NB_SIZES + s].p))
				return -1;
	return 0;
}

int vfgx_bench_formats(int argc, char **argv)
{
	static struct pair_rounds cpu[NB_PROFILES * NB_SIZES], gpu[NB_PROFILES * NB_SIZES];
	static struct fvideo_rounds cvid, gvid;
	struct fopts o = { .out = "bench/results", .seconds = 0.3, .rounds = 7,
			   .sweep = { 12, 16 }, .nsweep = 2,
			   .only_mask = (1u << (NB_PROFILES + 1)) - 1 };
	struct kept_part kp = { 0 };
	const int np = NB_PROFILES * NB_SIZES;
	char path[512], merge_path[600], gpu_desc[256] = "";
	const char *nogpu;
	size_t llc = work_llc_bytes(), ws;
	double load0, load1;
	bool run_cpu, run_gpu = false, merged;
	vfgx_ctx *ctx = NULL;
	FILE *f;
	int ret;

	if ((ret = parse(argc, argv, &o)) >= 0)
		return ret;
	if (bench_out_check(o.out, "formats"))
		return 1;
	ws = o.ws_mb ? (size_t)o.ws_mb << 20 : 2 * llc;
	if (!o.ws_mb && ws < (64u << 20))
		ws = 64u << 20;
	run_cpu = !o.gpu_only;
	if (vfgx_ctx_create(&ctx))
		return 1;
	if (!o.cpu_only) {
		run_gpu = VFGX_HAVE_CUDA && vfgx_gpu_probe(ctx, 0, gpu_desc, sizeof(gpu_desc)) == 0;
		if (!run_gpu)
			printf("vfgx bench formats: no GPU (%s): %s\n", vfgx_last_error(ctx),
			       o.gpu_only ? "nothing to measure, results file left as it was" :
					    "the CPU part alone");
		if (!run_gpu && o.gpu_only) {
			vfgx_ctx_destroy(ctx);
			return 0;
		}
	}
	/* the other part kept: always with --gpu-only, with --cpu-only when
	 * --merge-from names the file */
	merged = o.gpu_only || o.merge_from;
	if (merged) {
		snprintf(merge_path, sizeof(merge_path), "%s",
			 o.merge_from ? o.merge_from : "");
		if (!o.merge_from)
			snprintf(merge_path, sizeof(merge_path), "%s/formats.md", o.out);
		if (part_read(merge_path, o.cpu_only, &kp)) {
			vfgx_ctx_destroy(ctx);
			return 1;
		}
	}
	ret = 1;
	if (setup_pairs(cpu) || setup_pairs(gpu))
		goto out;
	/* spead on the gpu engine: into chunks by heap (it has no per-packet
	 * sequence to reorder by), the vfgx side into the same chunks by slot */
	for (int k = 0; k < np; k++)
		if (!strcmp(gpu[k].p.profile, "spead")) {
			struct pair *p = &gpu[k].p;

			p->chunks = true;
			p->heap_pkts = GPU_SPEAD_HEAP_PKTS;
			p->f.chunk_bytes = (uint64_t)p->heap_pkts * (p->size - ETH_IP_UDP - SPEAD_HLEN);
		}
	/* --only: the rest not measured, and said so */
	for (int k = 0; k < np; k++)
		if (!selected(&o, cpu[k].p.profile)) {
			snprintf(cpu[k].why, sizeof(cpu[k].why), "not among --only %s", o.only);
			snprintf(gpu[k].why, sizeof(gpu[k].why), "not among --only %s", o.only);
		}
	if (!selected(&o, "video")) {
		snprintf(cvid.why, sizeof(cvid.why), "not among --only %s", o.only);
		snprintf(gvid.why, sizeof(gvid.why), "not among --only %s", o.only);
	}
	load0 = bench_loadavg1();
	for (int k = 0; run_cpu && k < np; k++)
		if (selected(&o, cpu[k].p.profile) && cpu_pair(ctx, &o, ws, &cpu[k]))
			goto out;
	if (run_cpu && selected(&o, "video") &&
	    fvideo_cpu_rounds(ctx, o.rounds, (uint32_t)o.video_frames, &cvid))
		goto out;
#if VFGX_HAVE_CUDA
	if (run_gpu) {
		/* the GPU rows take the CPU part's frames: built here too */
		for (int k = 0; k < np; k++) {
			struct traffic a, b;

			if (!selected(&o, gpu[k].p.profile))
				continue;
			memset(&a, 0, sizeof(a));
			memset(&b, 0, sizeof(b));
			if (traffic_build(&a, &gpu[k].p, true, 4096) ||
			    traffic_build(&b, &gpu[k].p, false, 4096)) {
				traffic_free(&a);
				traffic_free(&b);
				goto out;
			}
			gpu[k].frame_profile = a.frame_len;
			gpu[k].frame_vfgx = b.frame_len;
			traffic_free(&a);
			traffic_free(&b);
			if (gpu_pair(ctx, &o, &gpu[k]))
				goto out;
		}
		if (selected(&o, "video") &&
		    fvideo_sweep(ctx, true, 3840, 2160, o.rounds, (uint32_t)o.video_frames, o.sweep,
				 o.nsweep, &gvid))
			goto out;
	}
#endif
	load1 = bench_loadavg1();
	f = bench_results_open(o.out, "formats",
			       "Producers' formats: each profile against the vfgx profile; RFC 4175 video frames",
			       path, sizeof(path));
	if (!f)
		goto out;
	fprintf(f, "- command: vfgx bench formats --seconds %g --rounds %d%s%s", o.seconds, o.rounds,
		o.cpu_only ? " --cpu-only" : "", o.gpu_only ? " --gpu-only" : "");
	if (o.ws_mb)
		fprintf(f, " --working-set %d", o.ws_mb);
	if (o.video_frames)
		fprintf(f, " --video-frames %d", o.video_frames);
	if (o.sweep_arg)
		fprintf(f, " --video-streams %s", o.sweep_arg);
	if (o.only)
		fprintf(f, " --only %s", o.only);
	fprintf(f, "\n- load average (1 min) before %.2f, after %.2f on %ld online cores: absolute rates move with whatever else runs on this machine; the paired same-round ratios are what count\n",
		load0, load1, sysconf(_SC_NPROCESSORS_ONLN));
	if (merged)
		fprintf(f, "%s%s's, measured earlier (its date, commit, machine, command and load follow); the %s part is this run's\n\n%s\n",
			o.gpu_only ? MERGED_MARK : MERGED_MARK_GPU, merge_path,
			o.gpu_only ? "GPU" : "CPU", kp.head);
	else
		fprintf(f, "\n");
	if (o.gpu_only)
		fputs(kp.body, f);
	if (run_cpu)
		write_cpu(f, cpu, np, &cvid, o.seconds, ws);
	if (merged && o.cpu_only)
		fputs(kp.body, f);
	if (run_gpu)
		write_gpu(f, gpu_desc, gpu, np, &gvid, o.seconds);
	fprintf(f, "## Targets\n\n- rule: %s\n\n", bench_ci_rule);
	if (o.gpu_only)
		fputs(kp.targets, f);
	for (int k = 0; run_cpu && k < np; k++)
		pair_target(f, "cpu", &cpu[k]);
	if (run_cpu)
		video_target(f, "rtp_video_1080p60_cpu", &cvid, 60, 60);
	if (merged && o.cpu_only)
		fputs(kp.targets, f);
	for (int k = 0; run_gpu && k < np; k++)
		pair_target(f, "gpu", &gpu[k]);
	if (run_gpu)
		streams_target(f, "rtp_video_streams_gpu", &gvid, 12, o.sweep[o.nsweep - 1]);
	/* the CPU part alone still lists the GPU targets, unmeasured (a
	 * --gpu-only run on a GPU host later replaces them: the merge keeps
	 * only the CPU part's target lines) */
	nogpu = o.cpu_only ? "the CPU part alone (--cpu-only); vfgx bench formats --gpu-only on a GPU host adds it" :
			     "no GPU here; vfgx bench formats --gpu-only on a GPU host adds it";
	for (int k = 0; !run_gpu && !merged && k < np; k++) {
		if (!gpu[k].why[0]) /* --only's reason stands */
			snprintf(gpu[k].why, sizeof(gpu[k].why), "%s", nogpu);
		pair_target(f, "gpu", &gpu[k]);
	}
	if (!run_gpu && !merged) {
		if (!gvid.why[0])
			snprintf(gvid.why, sizeof(gvid.why), "%s", nogpu);
		streams_target(f, "rtp_video_streams_gpu", &gvid, 12, o.sweep[o.nsweep - 1]);
	}
	fclose(f);
	printf("wrote %s\n", path);
	ret = 0;
out:
	kept_part_free(&kp);
	vfgx_ctx_destroy(ctx);
	return ret;
}
