/* formats.c - `vfgx bench formats` (#38's targets): each built-in
 * profile against the vfgx profile on the same frames, threads and stages,
 * the header read being the only difference (cpu engine: Mpps per CPU
 * second on one thread; gpu engine: Mpps with the frames in GPU memory),
 * in paired rounds; and RFC 4175 video assembled into frames through
 * `vfgx run`'s pipeline (formats_video.c): one 1080p60 stream on the cpu
 * engine, as many 4K60 streams as the gpu engine keeps whole.  The CPU
 * part runs anywhere; the GPU part where a GPU is, or alone with
 * --gpu-only, merged into the CPU part of an earlier run (--merge-from). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

#define MAX_ROUNDS 51
#define NB_PROFILES 6
#define NB_SIZES 2
#define STREAMS 4           /* for the profiles with a stream field */
#define SSRC0 0x2a000000u   /* rtp: stream s is SSRC SSRC0 + s */
#define VDIF_FPS 100000     /* vdif: frames_per_second of the composite sequence */
#define SPEAD_HEAP_PKTS 8   /* spead: packets per heap */
#define FPORT 5000
#define GPU_BYTES (128u << 20) /* frames in GPU memory, each side */
#define GPU_STREAM_STEPS 6
#define ETH_IP_UDP 42

static const char *const profiles[NB_PROFILES] = { "rtp", "vita49", "ecpri", "spead", "vdif",
						   "gr-udp" };
#if VFGX_HAVE_CUDA
/* 4K60 stream counts tried, largest first, in each GPU round */
static const uint32_t gpu_stream_steps[GPU_STREAM_STEPS] = { 16, 12, 8, 4, 2, 1 };
#endif

static const struct cli_opt formats_opts[] = {
	{ "out", 'o', "DIR", "write formats.md into DIR (default bench/results)" },
	{ "seconds", 's', "S", "measuring time per side and per round (default 0.3)" },
	{ "rounds", 'r', "N", "paired rounds, profile and vfgx interleaved (default 7)" },
	{ "working-set", 'w', "MB", "CPU frame memory per side (default twice the last-level cache, at least 64)" },
	{ "video-frames", 'f', "N", "frames per stream of each video run (default 60 at 1080p, 30 at 4K)" },
	{ "cpu-only", 'c', NULL, "the CPU part alone (no GPU part even where a GPU is)" },
	{ "gpu-only", 'g', NULL, "the GPU part alone, merged after the CPU part of --merge-from" },
	{ "merge-from", 'm', "FILE", "--gpu-only: the results file whose CPU part is kept (default DIR/formats.md)" },
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
		p->f.chunk_bytes = (uint64_t)SPEAD_HEAP_PKTS * (size - ETH_IP_UDP - 40);
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
	uint32_t unit = p->streams * SPEAD_HEAP_PKTS;

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
	g->n -= g->n % (p->streams * SPEAD_HEAP_PKTS);
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
						.len = t.pkts[i].len, .flags = VFGX_PKT_GPU };
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

			if (prof_turn)
				pr->prof[i] = gpu_side(ctx, &pr->p, true, &a, o->seconds, pr->why,
						       sizeof(pr->why));
			else
				pr->ref[i] = gpu_side(ctx, &pr->p, false, &b, o->seconds, pr->why,
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

/* ---- the video runs ------------------------------------------------------ */
struct video_rounds {
	int n;
	double v[MAX_ROUNDS];        /* cpu: fps; gpu: streams kept whole at 60 fps */
	struct fvideo_res last[MAX_ROUNDS];
	/* gpu: every run of every round */
	int nruns;
	struct fvideo_res runs[MAX_ROUNDS * GPU_STREAM_STEPS];
	char why[256];
};

static bool video_clean(const struct fvideo_res *r)
{
	return r->ok && r->frames_sent && r->errored == 0 && r->drops == 0 &&
	       r->complete == r->frames_sent;
}

static int cpu_video(vfgx_ctx *ctx, const struct fopts *o, struct video_rounds *vr)
{
	uint32_t frames = o->video_frames ? (uint32_t)o->video_frames : 60;
	struct fvideo_files fs;
	int ret = fvideo_files_make(&fs, 1, 1920, 1080, frames);

	if (ret) {
		snprintf(vr->why, sizeof(vr->why), "%s", ret == -ENOTSUP ?
			 "this build has no libpcap (the capture files the video runs replay)" :
			 "the capture files could not be written (stderr)");
		return ret == -ENOTSUP ? 0 : -1;
	}
	vr->n = o->rounds;
	for (int i = 0; i < o->rounds; i++) {
		struct fvideo_res *r = &vr->last[i];

		if (fvideo_run(ctx, &fs, false, 1, r)) {
			fvideo_files_remove(&fs);
			return -1;
		}
		if (!r->ok) {
			snprintf(vr->why, sizeof(vr->why), "%s", r->why);
			fprintf(stderr, "vfgx bench formats: 1080p60 on the cpu engine: %s\n", r->why);
			vr->n = 0;
			break;
		}
		/* a frame with an error makes the round's rate 0 */
		vr->v[i] = video_clean(r) ? r->fps_cpu : 0;
		printf("cpu 1080p round %d: %llu of %llu frames complete, %llu errored, %llu drops, %.1f fps per pipeline CPU-second, %.1f fps by the wall clock (%.2f Gb/s)\n",
		       i + 1, (unsigned long long)r->complete, (unsigned long long)r->frames_sent,
		       (unsigned long long)r->errored, (unsigned long long)r->drops, r->fps_cpu,
		       r->fps, r->gbps);
	}
	fvideo_files_remove(&fs);
	return 0;
}

#if VFGX_HAVE_CUDA
/* Each round: the stream counts largest first; the round's value is the
 * first count whose run keeps every frame whole at 60 fps or more per
 * stream (0 when none). */
/* One run of gpu_stream_steps[k] streams: 1 kept every frame whole at
 * 60 fps or more a stream, 0 not, -1 on a failure, -2 refused (why). */
static int gpu_video_try(vfgx_ctx *ctx, const struct fvideo_files *fs, struct video_rounds *vr,
			 int round, int k)
{
	struct fvideo_res *r = &vr->runs[vr->nruns];

	if (vr->nruns == MAX_ROUNDS * GPU_STREAM_STEPS ||
	    fvideo_run(ctx, fs, true, gpu_stream_steps[k], r))
		return -1;
	vr->nruns++;
	if (!r->ok) {
		snprintf(vr->why, sizeof(vr->why), "%s", r->why);
		fprintf(stderr, "vfgx bench formats: 4K60 on the gpu engine: %s\n", r->why);
		return -2;
	}
	printf("gpu 4K round %d, %u streams: %llu of %llu frames complete, %llu errored, %.1f fps a stream (%.1f Gb/s)\n",
	       round + 1, r->streams, (unsigned long long)r->complete,
	       (unsigned long long)r->frames_sent, (unsigned long long)r->errored, r->fps, r->gbps);
	return video_clean(r) && r->fps >= 60;
}

/* Each round: the largest count of gpu_stream_steps whose run keeps every
 * frame whole at 60 fps a stream (0 when none).  The first round tries
 * them largest first; a later one starts one step above the count the
 * round before kept, going down while a run fails and up while the first
 * one it tried kept up. */
static int gpu_video(vfgx_ctx *ctx, const struct fopts *o, struct video_rounds *vr)
{
	uint32_t frames = o->video_frames ? (uint32_t)o->video_frames : 30;
	struct fvideo_files fs;
	int ret = fvideo_files_make(&fs, gpu_stream_steps[0], 3840, 2160, frames);
	int k0 = 0;

	if (ret) {
		snprintf(vr->why, sizeof(vr->why), "%s", ret == -ENOTSUP ?
			 "this build has no libpcap (the capture files the video runs replay)" :
			 "the capture files could not be written (stderr)");
		return ret == -ENOTSUP ? 0 : -1;
	}
	ret = 0;
	vr->n = o->rounds;
	for (int i = 0; i < o->rounds; i++) {
		int k = k0, got = gpu_video_try(ctx, &fs, vr, i, k);

		while (got == 0 && k + 1 < GPU_STREAM_STEPS)
			got = gpu_video_try(ctx, &fs, vr, i, ++k);
		if (got == 1 && k == k0)
			while (k > 0) {
				int up = gpu_video_try(ctx, &fs, vr, i, k - 1);

				if (up < 0) {
					got = up;
					break;
				}
				if (!up)
					break;
				k--;
			}
		if (got < 0) {
			vr->n = 0;
			ret = got == -1 ? -1 : 0;
			break;
		}
		vr->v[i] = got == 1 ? gpu_stream_steps[k] : 0;
		k0 = got == 1 && k > 0 ? k - 1 : got == 1 ? 0 : GPU_STREAM_STEPS - 1;
	}
	fvideo_files_remove(&fs);
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

static void write_cpu(FILE *f, const struct pair_rounds *pr, int np, const struct video_rounds *vr,
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
		      const struct video_rounds *vr, double seconds)
{
	fprintf(f, "## GPU engine: each profile against the vfgx profile\n\n");
	fprintf(f, "- GPU: %s\n", gpu_desc);
	fprintf(f, "- method: the frames of the CPU part (up to %u MiB, at most 2^20 frames a side), copied once into GPU memory; the GPU processor (vfgx_gpu_proc, the gpu engine's, persistent mode, items of 1024 packets, 256 in flight) with the same pipeline config as the CPU rows (pipeline.format the profile or none), %g s of whole passes, each pass ended by a reset item; every pass must deliver every frame in order with no drop. Rate = packets per second by the wall clock (the GPU does the work; the CPU thread only submits). Same on both sides: frames, streams, stages, GPU, launch mode; different: the header read. Paired rounds, order flipped every round.\n\n",
		GPU_BYTES >> 20, seconds);
	pair_rows(f, "gpu", pr, np);
	fprintf(f, "\n## RFC 4175 video on the GPU: 4K60 streams at once\n\n");
	if (vr->n && !isnan(vr->v[0])) {
		fprintf(f, "- method: N 3840x2160 UYVY RFC 4175 streams (%.0f Mb a frame, %.2f Gb/s each at 60 fps), each stream's frames written once by vfgx_fmt_encode into a capture file of its own (libpcap), replayed by one pcap port a stream (timing: fast; the port's buffers in host memory, which the gpu engine reads through its 2048-byte slots) into vfgx_pipeline on the gpu engine: pipeline.format rtp-video (stream_ids), chunks in GPU memory, one per frame, a consumer thread taking and giving back each. No source replays a producer's packets from GPU memory yet (the loopback replay writes vfgx's own frames only), so the files are the replay. Each round tries N from 16, 12, 8, 4, 2, 1, largest first (the first round from 16, each later one from the step above the count the round before kept: down while a run fails, up while the first count tried keeps up), and keeps the largest N whose run had every frame whole and at least 60 whole frames a second per stream by the wall clock.\n\n",
			3840.0 * 2160 * 2 * 8 / 1e6, 3840.0 * 2160 * 2 * 8 * 60 / 1e9);
		fprintf(f, "| run | streams | frames sent | complete | errored | drops | fps a stream | Gb/s of frames |\n|---|---|---|---|---|---|---|---|\n");
		for (int i = 0; i < vr->nruns; i++) {
			const struct fvideo_res *r = &vr->runs[i];

			fprintf(f, "| %d | %u | %llu | %llu | %llu | %llu | %.1f | %.2f |\n", i + 1,
				r->streams, (unsigned long long)r->frames_sent,
				(unsigned long long)r->complete, (unsigned long long)r->errored,
				(unsigned long long)r->drops, r->fps, r->gbps);
		}
		fprintf(f, "\n| round | streams kept whole at 60 fps |\n|---|---|\n");
		for (int i = 0; i < vr->n; i++)
			fprintf(f, "| %d | %.0f |\n", i + 1, vr->v[i]);
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

static void video_target(FILE *f, const char *name, const struct video_rounds *vr, double goal,
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

/* ---- options and the run ------------------------------------------------- */
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
	if (o->merge_from && !o->gpu_only) {
		fprintf(stderr, "vfgx bench formats: --merge-from goes with --gpu-only\n");
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
	static struct video_rounds cvid, gvid;
	struct fopts o = { .out = "bench/results", .seconds = 0.3, .rounds = 7 };
	struct cpu_part cp = { 0 };
	const int np = NB_PROFILES * NB_SIZES;
	char path[512], merge_path[600], gpu_desc[256] = "";
	size_t llc = work_llc_bytes(), ws;
	double load0, load1;
	bool run_cpu, run_gpu = false;
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
	if (o.gpu_only) {
		snprintf(merge_path, sizeof(merge_path), "%s",
			 o.merge_from ? o.merge_from : "");
		if (!o.merge_from)
			snprintf(merge_path, sizeof(merge_path), "%s/formats.md", o.out);
		if (cpu_part_read(merge_path, &cp)) {
			vfgx_ctx_destroy(ctx);
			return 1;
		}
	}
	ret = 1;
	if (setup_pairs(cpu) || setup_pairs(gpu))
		goto out;
	load0 = bench_loadavg1();
	for (int k = 0; run_cpu && k < np; k++)
		if (cpu_pair(ctx, &o, ws, &cpu[k]))
			goto out;
	if (run_cpu && cpu_video(ctx, &o, &cvid))
		goto out;
#if VFGX_HAVE_CUDA
	if (run_gpu) {
		/* the GPU rows take the CPU part's frames: built here too */
		for (int k = 0; k < np; k++) {
			struct traffic a, b;

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
		if (gpu_video(ctx, &o, &gvid))
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
	fprintf(f, "\n- load average (1 min) before %.2f, after %.2f on %ld online cores: absolute rates move with whatever else runs on this machine; the paired same-round ratios are what count\n",
		load0, load1, sysconf(_SC_NPROCESSORS_ONLN));
	if (o.gpu_only)
		fprintf(f, MERGED_MARK "%s's, measured earlier (its date, commit, machine, command and load follow); the GPU part is this run's\n%s",
			merge_path, cp.body);
	else
		fprintf(f, "\n");
	if (run_cpu)
		write_cpu(f, cpu, np, &cvid, o.seconds, ws);
	if (run_gpu)
		write_gpu(f, gpu_desc, gpu, np, &gvid, o.seconds);
	fprintf(f, "## Targets\n\n- rule: %s\n\n", bench_ci_rule);
	if (o.gpu_only)
		fputs(cp.targets, f);
	for (int k = 0; run_cpu && k < np; k++)
		pair_target(f, "cpu", &cpu[k]);
	if (run_cpu)
		video_target(f, "rtp_video_1080p60_cpu", &cvid, 60, 60);
	for (int k = 0; run_gpu && k < np; k++)
		pair_target(f, "gpu", &gpu[k]);
	if (run_gpu)
		video_target(f, "rtp_video_streams_gpu", &gvid, 12, 0);
	fclose(f);
	printf("wrote %s\n", path);
	ret = 0;
out:
	free(cp.body);
	free(cp.targets);
	vfgx_ctx_destroy(ctx);
	return ret;
}
