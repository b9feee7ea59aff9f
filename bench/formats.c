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

#define NB_PROFILES 6
#define NB_SIZES 2
#define STREAMS 4           /* for the profiles with a stream field */
#define SSRC0 0x2a000000u   /* rtp: stream s is SSRC SSRC0 + s */
#define VDIF_FPS 100000     /* vdif: frames_per_second of the composite sequence */
#define SPEAD_HEAP_PKTS 8   /* spead: packets per heap */
/* gpu spead into chunks: packets per heap, a chunk each (a chunk of 8 would
 * make both sides' rate the consumer's: at the vfgx side's 30 Mpps, 3.75
 * million chunks a second through one thread's get and put) */
#define GPU_SPEAD_HEAP_PKTS 64
#define FPORT 5000
#define GPU_BYTES (128u << 20) /* frames in GPU memory, each side */
#define GPU_CHUNKS_IN_FLIGHT 1024 /* gpu spead: chunk buffers, each side */
#define SPEAD_HLEN 40       /* SPEAD-64-48 header and the profile's four items */
#define VFGX_HLEN 16        /* vfgx's own header */
#define STR_(x) #x
#define STR(x) STR_(x)
#define ETH_IP_UDP 42

static const char *const profiles[NB_PROFILES] = { "rtp", "vita49", "ecpri", "spead", "vdif",
						   "gr-udp" };
static const struct cli_opt formats_opts[] = {
	{ "out", 'o', "DIR", "write formats.md into DIR (default bench/results)" },
	{ "seconds", 's', "S", "measuring time per side and per round (default 0.3)" },
	{ "rounds", 'r', "N", "paired rounds, profile and vfgx interleaved (default 7)" },
	{ "working-set", 'w', "MB", "CPU frame memory per side (default twice the last-level cache, at least 64)" },
	{ "video-frames", 'f', "N", "frames per stream of each video run (default 60 at 1080p, 20 at 4K)" },
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

struct pair {
	const char *profile;
	uint32_t size, streams;
	bool reorder;
	bool chunks;        /* gpu spead: both sides into chunks of a heap */
	uint32_t heap_pkts; /* spead: packets per heap (and per chunk) */
	struct vfgx_format f;
	struct vfgx_fmt_send h;
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

/* ---- cpu engine: one vfgx_proc on this thread, as bench pipeline ------- */
static double cpu_side(vfgx_ctx *ctx, const struct pair *p, bool as_profile,
		       const struct traffic *t, double seconds)
{
	struct vfgx_pipeline_config pc = pair_conf(p, as_profile);
	struct vfgx_pipeline_stats st;
	vfgx_proc *proc = NULL;
	double cpu_ns = 0, ns = 0;
	uint64_t total = 0;

	if (vfgx_proc_create(ctx, &pc, &proc)) {
		fprintf(stderr, "vfgx bench formats: %s: %s\n", as_profile ? p->profile : "vfgx",
			vfgx_last_error(ctx));
		return NAN;
	}
	/* one untimed pass: the windows' first touch is set-up */
	for (uint64_t i = 0; i < t->n; i += 32)
		vfgx_proc_burst(proc, t->pkts + i, (uint32_t)(t->n - i < 32 ? t->n - i : 32));
	vfgx_proc_flush(proc);
	vfgx_proc_reset(proc);
	do {
		uint64_t w0 = vfgx_now_ns(), c0 = thread_cpu_ns();

		for (uint64_t i = 0; i < t->n; i += 32)
			vfgx_proc_burst(proc, t->pkts + i, (uint32_t)(t->n - i < 32 ? t->n - i : 32));
		vfgx_proc_flush(proc);
		cpu_ns += (double)(thread_cpu_ns() - c0);
		ns += (double)(vfgx_now_ns() - w0);
		vfgx_proc_stats(proc, &st);
		if (!pass_exact(&st, t->n, st.order_errors)) {
			fprintf(stderr, "vfgx bench formats: cpu %s %u B (%s side): offered %llu, delivered %llu of %llu, gaps %llu, order errors %llu, drops: the pass is not exact\n",
				p->profile, p->size, as_profile ? p->profile : "vfgx",
				(unsigned long long)st.packets, (unsigned long long)st.delivered,
				(unsigned long long)t->n, (unsigned long long)st.gaps,
				(unsigned long long)st.order_errors);
			vfgx_proc_destroy(proc);
			return NAN;
		}
		total += st.packets;
		vfgx_proc_reset(proc);
	} while (ns < seconds * 1e9);
	vfgx_proc_destroy(proc);
	return (double)total / cpu_ns * 1e3;
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
struct pair_rounds {
	struct pair p;
	uint32_t frame_profile, frame_vfgx; /* frame bytes as encoded */
	uint64_t frames;
	int n;
	double prof[MAX_ROUNDS], ref[MAX_ROUNDS], ratio[MAX_ROUNDS];
	char why[256]; /* the gpu side that could not run, and why */
};

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
		/* A B, then B A: neither side always goes first */
		for (int k = 0; k < 2; k++) {
			bool prof_turn = (k == 0) == (i % 2 == 0);

			if (prof_turn)
				pr->prof[i] = cpu_side(ctx, &pr->p, true, &a, o->seconds);
			else
				pr->ref[i] = cpu_side(ctx, &pr->p, false, &b, o->seconds);
		}
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

/* ---- the results file ----------------------------------------------------- */
static void pair_rows(FILE *f, const char *engine, const struct pair_rounds *pr, int np)
{
	char a[64], b[64], c[64];

	fprintf(f, "| profile | frame B (profile / vfgx) | streams | stages | frames a pass | rounds |\n|---|---|---|---|---|---|\n");
	for (int k = 0; k < np; k++)
		fprintf(f, "| %s | %u / %u | %u | %s | %llu | %d |\n", pr[k].p.profile,
			pr[k].frame_profile ? pr[k].frame_profile : pr[k].p.size,
			pr[k].frame_vfgx ? pr[k].frame_vfgx : pr[k].p.size, pr[k].p.streams,
			pr[k].p.chunks ? "parse + validate + filter + chunks of a heap (" STR(GPU_SPEAD_HEAP_PKTS) " packets; spead by heap offset, vfgx by slot; " STR(GPU_CHUNKS_IN_FLIGHT) " chunk buffers in GPU memory, a consumer thread)" :
			pr[k].p.reorder ? "parse + validate + filter + reorder (window 1024)" :
					  "parse + validate + filter, delivered without reorder",
			(unsigned long long)pr[k].frames, pr[k].n);
	fprintf(f, "\n| profile | frame B | round | profile Mpps | vfgx Mpps | ratio |\n|---|---|---|---|---|---|\n");
	for (int k = 0; k < np; k++)
		for (int i = 0; i < pr[k].n; i++)
			fprintf(f, "| %s | %u | %d | %.3f | %.3f | %.4f |\n", pr[k].p.profile,
				pr[k].p.size, i + 1, pr[k].prof[i], pr[k].ref[i], pr[k].ratio[i]);
	fprintf(f, "\n| profile | frame B | %s profile Mpps median (min..max) | vfgx | ratio |\n|---|---|---|---|---|\n",
		engine);
	for (int k = 0; k < np; k++)
		fprintf(f, "| %s | %u | %s | %s | %s |\n", pr[k].p.profile, pr[k].p.size,
			bench_fmt_spread(a, sizeof(a), "%.3f", pr[k].prof, pr[k].n),
			bench_fmt_spread(b, sizeof(b), "%.3f", pr[k].ref, pr[k].n),
			bench_fmt_spread(c, sizeof(c), "%.4f", pr[k].ratio, pr[k].n));
	fprintf(f, "\n");
	for (int k = 0; k < np; k++)
		if (pr[k].why[0])
			fprintf(f, "- %s %u B not measured: %s\n", pr[k].p.profile, pr[k].p.size,
				pr[k].why);
}

static void write_cpu(FILE *f, const struct pair_rounds *pr, int np, const struct fvideo_rounds *vr,
		      double seconds, size_t ws)
{
	fprintf(f, "## CPU engine: each profile against the vfgx profile\n\n");
	fprintf(f, "- method: per profile and frame size, two sets of the same frames (%zu MiB a side: frame i is stream i %% streams, its packet i / streams, in order): the generator's frames as vfgx_pkt_build makes them (the vfgx profile), and the same frames with their UDP payload written by vfgx_fmt_encode in the profile (what `vfgx send --format` sends; IPv4/UDP lengths and checksums redone). Each side: one vfgx_proc on this thread with the same pipeline config (pipeline.format = the profile, or none: the vfgx profile), bursts of 32, flush at the end of each pass, %g s of whole passes; every pass must deliver every frame in order with no drop and no gap. Rate = packets per second of this thread's CPU time (Mpps per CPU-second). Same on both sides: the frames' number, size (up to the profile's word rounding) and order, the streams, the thread, the stages, reorder window or delivery; different: the header the pipeline reads (the only difference). Rounds pair the two sides, the order flipped every round (A B, B A, ...).\n",
		ws >> 20, seconds);
	fprintf(f, "- profiles: rtp lists its SSRCs (stream_ids); vdif frames_per_second %d; spead heaps of %d packets, delivered without reorder on both sides (a SPEAD packet carries its heap's counter, not a sequence of its own: reorder is a config error for it); spead and gr-udp one stream (no stream field), the others %d.\n",
		VDIF_FPS, SPEAD_HEAP_PKTS, STREAMS);
	fprintf(f, "- sizes: 64 B, or where a profile's header and a body do not fit 64 B the smallest frame whose UDP payload holds the header and 8 bytes of body (the vfgx side the same size); and 1500 B. vita49 and vdif round their payload down to 4 and 8 bytes.\n\n");
	pair_rows(f, "cpu", pr, np);
	fprintf(f, "\n## RFC 4175 video on the CPU: one 1080p60 stream, one core\n\n");
	if (vr->n && !isnan(vr->v[0])) {
		const struct fvideo_res *r0 = &vr->last[0];

		fprintf(f, "- method: one 1920x1080 UYVY (8-bit 4:2:2) RFC 4175 stream, %d frames, each frame %u RTP packets of %u B Ethernet frames written by vfgx_fmt_encode (rtp-video) into a capture file once (libpcap), replayed by a pcap port as fast as it reads (timing: fast) into vfgx_pipeline on the cpu engine with one worker, pipeline.format rtp-video (stream_ids) and chunks in host memory, one chunk per frame; a consumer thread takes and gives back every frame (vfgx_chunk_get/put). A frame is whole when its chunk is complete with no byte missing. A round's rate (the target's) is whole frames per CPU-second of the pipeline's threads: the process's CPU time from the start to the end of the input, less the consumer's and the main thread's (the worker, which also reads the file through libpcap, and the engine's own threads), so that it says whether one core's worth of CPU time keeps up with 60 frames a second whatever else runs on the host; the wall-clock rate is listed too. A round with any frame error or any packet dropped counts 0.\n\n",
			(int)(r0->frames_sent), r0->packets_per_frame, FVIDEO_FRAME_LEN);
		fprintf(f, "| round | frames sent | complete | errored | drops | pipeline CPU-s | fps per pipeline CPU-s | seconds | fps (wall) | Gb/s of frames (wall) |\n|---|---|---|---|---|---|---|---|---|---|\n");
		for (int i = 0; i < vr->n; i++) {
			const struct fvideo_res *r = &vr->last[i];

			fprintf(f, "| %d | %llu | %llu | %llu | %llu | %.3f | %.1f | %.3f | %.1f | %.3f |\n",
				i + 1, (unsigned long long)r->frames_sent,
				(unsigned long long)r->complete, (unsigned long long)r->errored,
				(unsigned long long)r->drops, r->pipeline_cpu_s, r->fps_cpu, r->seconds,
				r->fps, r->gbps);
		}
		fprintf(f, "\n");
	} else {
		fprintf(f, "- not measured: %s\n\n", vr->why);
	}
}

static void write_gpu(FILE *f, const char *gpu_desc, const struct pair_rounds *pr, int np,
		      const struct fvideo_rounds *vr, double seconds)
{
	fprintf(f, "## GPU engine: each profile against the vfgx profile\n\n");
	fprintf(f, "- GPU: %s\n", gpu_desc);
	fprintf(f, "- method: the frames of the CPU part (up to %u MiB, at most 2^20 frames a side), copied once into GPU memory; the GPU processor (vfgx_gpu_proc, the gpu engine's, persistent mode, items of 1024 packets, 256 in flight) with the same pipeline config as the CPU rows (pipeline.format the profile or none), %g s of whole passes, each pass ended by a reset item; every pass must deliver every frame in order with no drop. Rate = packets per second by the wall clock (the GPU does the work; the CPU thread only submits). Same on both sides: frames, streams, stages, GPU, launch mode; different: the header read. Paired rounds, order flipped every round.\n",
		GPU_BYTES >> 20, seconds);
	fprintf(f, "- spead: the gpu engine reads a format with reorder or chunks, and SPEAD has no per-packet sequence to reorder by, so both spead rows run what a SPEAD user runs there: chunks by heap (pipeline.chunks with the spead profile's place offset: a chunk a heap of %d packets (the CPU rows' frames carry heaps of %d; a chunk of so few would make both sides' rate that of the consumer thread), each packet's payload at its heap offset, the heap's size reached releases it), the vfgx side the same chunks by slot (a chunk the same %d packets, a slot a packet's payload): the same ring of %d chunk buffers in GPU memory, the same consumer thread taking and giving back every chunk (vfgx_chunkset_get polling), the same passes, each ended by a flush item, every chunk of the pass taken, a reset item and the rings started over (the next pass's heap counters and sequences start again). A pass is exact when every packet was placed with no drop and every chunk came out complete. The one difference besides the header read: each packet's payload is the frame less the header, so the vfgx side copies %d bytes more a packet into its chunk (its header is %d bytes, spead's %d).\n\n",
		GPU_SPEAD_HEAP_PKTS, SPEAD_HEAP_PKTS, GPU_SPEAD_HEAP_PKTS, GPU_CHUNKS_IN_FLIGHT,
		SPEAD_HLEN - VFGX_HLEN, VFGX_HLEN,
		SPEAD_HLEN);
	pair_rows(f, "gpu", pr, np);
	fprintf(f, "\n## RFC 4175 video on the GPU: 4K60 streams at once\n\n");
	if (vr->n && vr->nruns) {
		const struct fvideo_res *r0 = &vr->runs[0];

		fprintf(f, "- method: N 3840x2160 UYVY (8-bit 4:2:2) RFC 4175 streams (%.0f Mb a frame, %.2f Gb/s each at 60 fps), each stream its own SSRC, %d frames of %u RTP packets of %u B Ethernet frames a stream, written once by vfgx_fmt_encode (rtp-video) into capture files (libpcap): the N streams share P = ceil(N / ceil(N / 8)) files (stream s in file s %% P; a config has at most 8 interfaces), each file its streams' packets interleaved in send order (packet j of each of its streams' frame, then packet j + 1), as several senders' streams arrive on one port. A pcap port a file (timing: fast, as fast as it reads; its buffers in a pinned memory region of its own, which the GPU reads in place) feeds vfgx_pipeline on the gpu engine: pipeline.format rtp-video listing the N SSRCs (stream_ids: the profile tells the streams apart by SSRC as on a wire), chunks in GPU memory, one per frame, 4 in flight a stream, a consumer thread taking and giving back each; the gpu engine reads the ports with one rx thread a port. No source replays a producer's packets from GPU memory yet (the loopback replay writes vfgx's own frames only), so the files are the replay. A frame error is a frame sent that was not handed out complete (handed out with bytes missing: incomplete, or never handed out); fps a stream = complete frames per stream per second by the wall clock, from the pipeline's start to the last frame handed out. A run keeps up when it has no frame error and no pipeline drop and at least 60 fps a stream. The source alone (the reference, the same run): the same ports on the same files and pinned buffers, one thread a port (as the engine's rx threads), each packet given back at once, no format, no chunks, no GPU; its fps a stream is the frames' worth of packets it read per stream per second, and it keeps up when it read every packet at 60 or more. Every stream count of the sweep (--video-streams) runs once a round, the pipeline and the source alone in an order flipped every round. A round's value (the target's measured) is the largest count whose run kept up, 0 when none; its reference the largest count whose source alone kept up: a reference below the goal says the files and pcap ports, not the pipeline, were the limit.\n\n",
			3840.0 * 2160 * 2 * 8 / 1e6, 3840.0 * 2160 * 2 * 8 * 60 / 1e9,
			(int)(r0->streams ? r0->frames_sent / r0->streams : 0), r0->packets_per_frame,
			FVIDEO_FRAME_LEN);
		fprintf(f, "| round | streams | ports | frames sent | complete | incomplete | frame errors | drops | fps a stream | Gb/s of frames | kept up | source fps a stream | source Gb/s | source kept up |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
		for (int i = 0; i < vr->nruns; i++) {
			const struct fvideo_res *r = &vr->runs[i];
			const struct fvideo_src *sr = &vr->srcs[i];
			bool src_ok = sr->ok && sr->packets == (uint64_t)r->packets_per_frame * r->frames_sent &&
				      sr->fps >= 60;

			fprintf(f, "| %d | %u | %u | %llu | %llu | %llu | %llu | %llu | %.1f | %.2f | %s | %.1f | %.2f | %s |\n",
				vr->run_round[i] + 1, r->streams, r->ports,
				(unsigned long long)r->frames_sent, (unsigned long long)r->complete,
				(unsigned long long)r->incomplete, (unsigned long long)r->errored,
				(unsigned long long)r->drops, r->fps, r->gbps,
				fvideo_keeps_up(r) ? "yes" : "no", sr->fps, sr->gbps, src_ok ? "yes" : "no");
		}
		fprintf(f, "\n| round | streams kept up (pipeline) | streams kept up (source alone) |\n|---|---|---|\n");
		for (int i = 0; i < vr->n; i++)
			fprintf(f, "| %d | %.0f | %.0f |\n", i + 1, vr->v[i], vr->src[i]);
		fprintf(f, "\n");
	} else {
		fprintf(f, "- not measured: %s\n\n", vr->why);
	}
}

static void pair_target(FILE *f, const char *engine, const struct pair_rounds *pr)
{
	char name[96];

	snprintf(name, sizeof(name), "format_%s_vs_vfgx_%s_%uB", engine, pr->p.profile, pr->p.size);
	if (pr->n < 1) {
		char why[320];

		snprintf(why, sizeof(why), "not measured: %s", pr->why[0] ? pr->why : "no round");
		bench_target_unmeasured(f, name, 0.9, why);
		return;
	}
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = name, .measured = pr->prof, .reference = pr->ref, .n = pr->n,
		.goal = 0.9, .goal_on_ratio = true, .higher_better = true });
}

static void video_target(FILE *f, const char *name, const struct fvideo_rounds *vr, double goal,
			 double ref)
{
	if (vr->n < 1 || isnan(vr->v[0])) {
		char why[320];

		snprintf(why, sizeof(why), "not measured: %s", vr->why);
		bench_target_unmeasured(f, name, goal, why);
		return;
	}
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = name, .measured = vr->v, .ref_value = ref, .n = vr->n, .goal = goal,
		.higher_better = true });
}

/* rtp_video_streams_gpu: streams kept up per round against the streams
 * the source alone fed in the same round (top: the sweep's largest
 * count).  Where the goal is not met the line says what held the count
 * down (results.c writes the line; the note follows): the sweep (every
 * count kept up, the largest below the goal), the pipeline (it kept fewer
 * than the source fed) or the source (it fed fewer than the goal). */
static void streams_target(FILE *f, const char *name, const struct fvideo_rounds *vr, double goal,
			   uint32_t top)
{
	char *line = NULL;
	size_t len = 0;
	double mv, ms;
	FILE *m;
	int met;

	if (vr->n < 1 || !vr->nruns) {
		char why[320];

		snprintf(why, sizeof(why), "not measured: %s", vr->why);
		bench_target_unmeasured(f, name, goal, why);
		return;
	}
	m = open_memstream(&line, &len);
	if (!m)
		return;
	met = bench_target_rounds(m, &(struct bench_target_rounds){
		.name = name, .measured = vr->v, .reference = vr->src, .n = vr->n, .goal = goal,
		.higher_better = true });
	fclose(m);
	if (len && line[len - 1] == '\n')
		line[--len] = '\0';
	mv = bench_median(vr->v, vr->n);
	ms = bench_median(vr->src, vr->n);
	if (met == 0 && mv >= top && top < goal)
		fprintf(f, "%s (the sweep was the limit: every count up to its largest, %u, kept up; run --video-streams with counts of %g and more)\n",
			line, top, goal);
	else if (met == 0 && mv < goal && mv < ms)
		fprintf(f, "%s (the pipeline was the limit: it kept a median of %g streams whole at 60 fps, the pcap ports alone fed %g)\n",
			line, mv, ms);
	else if (met == 0 && ms < goal)
		fprintf(f, "%s (the source was the limit: the pcap ports alone fed a median of %g streams at 60 fps, the pipeline kept %g)\n",
			line, ms, mv);
	else
		fprintf(f, "%s\n", line);
	free(line);
}

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
