/* chunks.c - `vfgx bench chunks`: the CPU pipeline with chunk assembly
 * against the same pipeline without it (reorder windows), one core, on the
 * cold impaired traffic of `vfgx bench pipeline` (pipeline_work.c), in
 * interleaved rounds; and the latency from a chunk's last packet written
 * to the chunk in the consumer's hands (vfgx_chunk_get on another thread).
 * Where a GPU and the cuFFT spectrometer are there: its chunks per second
 * with the FFT consumer against none, and the gpu engine at 8192 B with
 * chunks against the same run without (chunks_gpu_vs_e2e_8192B). */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/bench.h>
#include <vfgx/vfgx.h>

#include "commands.h"
#include "cliopt.h"
#include "pipeline_work.h"
#include "results.h"
#include "vfgx_build.h"
#if VFGX_HAVE_CUDA
#include "chunk_stamp.h"
#endif

#define MAX_ROUNDS 50
#define CHUNK_PACKETS 1024
#define LAT_SAMPLES (1 << 16)

static const struct cli_opt chunks_opts[] = {
	{ "out", 'o', "DIR", "write chunks.md into DIR (default bench/results)" },
	{ "seconds", 's', "S", "measuring time per side and per round (default 0.5)" },
	{ "rounds", 'r', "N", "rounds, with and without chunks interleaved (default 7)" },
	{ "working-set", 'w', "MB", "buffer memory (default twice the last-level cache, at least 64)" },
	{ "spectrometer", 'S', "PATH", "the cuFFT spectrometer for the FFT-consumer rows (default: the build's; skipped without a GPU)" },
	{ "json", 'j', NULL, "the results file as one JSON document on stdout (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_bench_cli_chunks = {
	.name = "bench chunks",
	.summary = "CPU pipeline with chunk assembly vs without, one core at 64 B; chunk ready latency",
	.opts = chunks_opts,
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct side {
	vfgx_proc *proc;
	struct vfgx_chunkset *cs; /* NULL: reorder windows */
};

static int side_open(vfgx_ctx *ctx, const struct work *w, bool chunks, struct side *s)
{
	struct vfgx_pipeline_config pc = {
		.workers = 1, .nb_port_ranges = 1,
		.port_ranges = (const struct vfgx_port_range[]){ { WORK_PORT, WORK_PORT } },
		.reorder = true, .reorder_window = 1024, .reorder_slot = 2048,
		.max_streams = WORK_STREAMS,
	};
	struct vfgx_chunk_config cc;

	memset(s, 0, sizeof(*s));
	if (vfgx_proc_create(ctx, &pc, &s->proc))
		return -1;
	if (!chunks)
		return 0;
	vfgx_chunk_config_default(&cc);
	cc.payload_bytes = w->size;
	cc.packets = CHUNK_PACKETS;
	cc.streams = WORK_STREAMS;
	cc.in_flight = 4;
	cc.close_distance = 2;
	if (vfgx_chunkset_create(ctx, &cc, &s->cs) || vfgx_proc_set_chunks(s->proc, s->cs))
		return -1;
	return 0;
}

static void side_close(struct side *s)
{
	vfgx_proc_destroy(s->proc);
	vfgx_chunkset_destroy(s->cs);
}

/* The consumer, inline: hand back what is ready. */
static void drain(struct side *s)
{
	struct vfgx_chunk *c;

	while (s->cs && !vfgx_chunkset_get(s->cs, 0, &c))
		vfgx_chunkset_put(s->cs, c->stream, c->index);
}

/* Each unique sequence placed (or delivered), every copy late or a
 * duplicate, at most the lost ones as gaps (none after a stream's last
 * packet is one). */
static int check_pass(const struct work *w, const struct side *s)
{
	struct vfgx_pipeline_stats st;
	uint64_t gaps, dups;

	vfgx_proc_stats(s->proc, &st);
	dups = st.drops[VFGX_DROP_LATE] + st.drops[VFGX_DROP_DUPLICATE];
	gaps = s->cs ? vfgx_chunkset_gaps(s->cs) : st.gaps;
	if (st.packets == w->n && st.delivered == w->unique && dups == w->dups &&
	    gaps <= w->lost && gaps + WORK_STREAMS >= w->lost)
		return 0;
	fprintf(stderr, "vfgx bench chunks: %s: offered %llu, placed %llu of %llu, late+duplicate %llu of %llu, gaps %llu of %llu: broken\n",
		s->cs ? "chunks" : "reorder", (unsigned long long)st.packets,
		(unsigned long long)st.delivered, (unsigned long long)w->unique,
		(unsigned long long)dups, (unsigned long long)w->dups,
		(unsigned long long)gaps, (unsigned long long)w->lost);
	return -1;
}

static void side_reset(struct side *s)
{
	vfgx_proc_reset(s->proc);
	if (s->cs)
		vfgx_chunkset_reset(s->cs);
}

/* Whole passes (bursts of 32, consumer between bursts, flush) for
 * `seconds`; Mpps per CPU second of this thread. */
static int run_side(const struct work *w, struct side *s, double seconds, double *mpps)
{
	double cpu = 0;
	uint64_t total = 0;

	while (cpu < seconds * 1e9) {
		uint64_t c0 = thread_cpu_ns(), i;

		for (i = 0; i < w->n; i += 32) {
			vfgx_proc_burst(s->proc, w->pkts + i, (uint32_t)(w->n - i < 32 ? w->n - i : 32));
			drain(s);
		}
		vfgx_proc_flush(s->proc);
		drain(s);
		cpu += (double)(thread_cpu_ns() - c0);
		if (check_pass(w, s))
			return -1;
		total += w->n;
		side_reset(s);
	}
	*mpps = (double)total / cpu * 1e3;
	return 0;
}

/* --- ready latency: placer on this thread, consumer blocked in get ------ */
struct lat {
	struct vfgx_chunkset *cs;
	int cpu; /* the consumer's; the placer takes the one below */
	uint64_t ns[LAT_SAMPLES];
	_Atomic uint32_t n;
	atomic_bool stop;
};

/* This thread on `cpu` alone (saved: its CPUs before, when not NULL). */
static void pin_to(int cpu, cpu_set_t *saved)
{
	cpu_set_t one;

	if (saved && sched_getaffinity(0, sizeof(*saved), saved))
		CPU_ZERO(saved); /* nothing to restore */
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

static void *lat_consumer(void *arg)
{
	struct lat *l = arg;
	struct vfgx_chunk *c;
	int ret;

	pin_to(l->cpu, NULL);

	/* polling, as a consumer that owns a core does */
	while ((ret = vfgx_chunkset_get(l->cs, 0, &c)) != -ENODATA) {
		uint64_t now = vfgx_now_ns();
		uint32_t i;

		if (ret)
			continue;
		i = atomic_load(&l->n);
		if (i < LAT_SAMPLES && (c->flags & VFGX_CHUNK_COMPLETE)) {
			l->ns[i] = now - c->last_packet_ns;
			atomic_store(&l->n, i + 1);
		}
		vfgx_chunkset_put(l->cs, c->stream, c->index);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Chunks of 64 packets of 64 B placed in order with a pause between
 * chunks (a consumer that is waiting, as an application's is): the time
 * from the last packet's write to the consumer's get returning it.  The
 * consumer polls on a CPU of its own (the last one), the placer on the
 * one below it (where there is one). */
static int measure_latency(vfgx_ctx *ctx, int chunks, double *p50, double *p99)
{
	struct vfgx_chunk_config cc;
	struct lat *l = calloc(1, sizeof(*l));
	uint8_t body[48] = { 0 };
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t saved;
	pthread_t t;
	int ret = -1;

	if (!l)
		return -1;
	l->cpu = ncpu > 1 ? (int)ncpu - 1 : 0;
	vfgx_chunk_config_default(&cc);
	cc.payload_bytes = sizeof(body);
	cc.packets = 64;
	cc.in_flight = 8;
	if (vfgx_chunkset_create(ctx, &cc, &l->cs))
		goto out;
	if (pthread_create(&t, NULL, lat_consumer, l))
		goto out;
	pin_to(l->cpu > 0 ? l->cpu - 1 : 0, &saved);
	for (int k = 0; k < chunks && k < LAT_SAMPLES; k++) {
		struct timespec pause = { 0, 200000 };
		const uint8_t *slot;

		for (uint64_t i = 0; i < cc.packets; i++)
			vfgx_chunkset_place(l->cs, 0, (uint64_t)k * cc.packets + i, body,
					    sizeof(body), vfgx_now_ns(), &slot);
		nanosleep(&pause, NULL);
	}
	vfgx_chunkset_flush(l->cs, 0);
	vfgx_chunkset_finish(l->cs);
	pthread_join(t, NULL);
	if (CPU_COUNT(&saved))
		sched_setaffinity(0, sizeof(saved), &saved);
	uint32_t n = atomic_load(&l->n);

	if (n < 10)
		goto out;
	qsort(l->ns, n, sizeof(l->ns[0]), cmp_u64);
	*p50 = (double)l->ns[n / 2] / 1e3;
	*p99 = (double)l->ns[(size_t)((double)n * 0.99)] / 1e3;
	ret = 0;
out:
	vfgx_chunkset_destroy(l->cs);
	free(l);
	return ret;
}

/* --- the gpu engine: chunks against none, end to end ------------------- */
#define GPU_SIZE 8192
#define GPU_FLOWS 64
/* frames in flight: with 16384 both sides were bound by the pool's turn
 * around (an item's latency), 55 Mpps without chunks; 65536 (540 MiB of
 * GPU memory) lets the side without chunks run near 150 Mpps */
#define GPU_BUFS 65536

struct gpu_side {
	vfgx_pipeline *pl;
	atomic_bool stop;
	uint64_t chunks;
};

/* The consumer a user runs: take every ready chunk, give it back. */
static void *gpu_consumer(void *arg)
{
	struct gpu_side *g = arg;
	struct vfgx_chunk *c;
	int ret;

	while ((ret = vfgx_chunk_get(g->pl, 100, &c)) != -ENODATA) {
		if (!ret) {
			g->chunks++;
			vfgx_chunk_put(g->pl, c->stream, c->index);
		} else if (atomic_load(&g->stop)) {
			break;
		}
	}
	return NULL;
}

/* `vfgx run`'s path on the gpu engine (vfgx_pipeline), replay source of
 * 8192 B frames in GPU memory, 64 flows, persistent mode, for `seconds`:
 * Mpps over the run; with chunks (64 streams x 8 chunks of 256 packets
 * in GPU memory, a consumer thread) or with reorder windows (e2e's
 * pipeline).  -1 when the run failed or lost a packet. */
static int gpu_run(vfgx_ctx *ctx, bool chunks, double seconds, double *mpps,
		   uint64_t *nchunks, uint64_t *waits)
{
	struct vfgx_chunk_stats cst = { .argsz = sizeof(cst) };
	char y[2048];
	struct vfgx_config *cfg = NULL;
	struct vfgx_pipeline_stats st;
	struct gpu_side g = { 0 };
	vfgx_port *port = NULL;
	pthread_t t;
	bool thread = false;
	uint64_t t0, t1;
	int ret;

	snprintf(y, sizeof(y),
		 "log_level: warn\n"
		 "memory_regions: [{name: r, kind: gpu, buf_size: %u, num_bufs: %u}]\n"
		 "interfaces:\n"
		 "  - backend: loopback\n"
		 "    rx: {queues: [{id: 0, memory_region: r, batch_size: 256},\n"
		 "                  {id: 1, memory_region: r, batch_size: 256}]}\n"
		 "    loopback: {packets: 0, packet_size: %u, flows: %u, replay: true}\n"
		 "pipeline:\n"
		 "  device: gpu\n"
		 "  duration_s: %g\n"
		 "  filter: {udp_dst_ports: [5000]}\n"
		 "  gpu: {mode: persistent, items: 64, burst: 1024, timeout_ms: 20000}\n"
		 "%s",
		 GPU_SIZE + 64, GPU_BUFS, GPU_SIZE, GPU_FLOWS, seconds,
		 chunks ? "  chunks: {payload_bytes: 8192, packets: 256, streams: 64, in_flight: 8, mem: gpu}\n" :
			  "  reorder: {enabled: true, window: 1024, slot_size: 8192}\n");
	if ((ret = vfgx_config_load_string(ctx, y, strlen(y), "chunks-gpu.yaml", &cfg)) ||
	    (ret = vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port)) ||
	    (ret = vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &g.pl)))
		goto out;
	if (chunks && pthread_create(&t, NULL, gpu_consumer, &g) == 0)
		thread = true;
	t0 = vfgx_now_ns();
	if ((ret = vfgx_pipeline_start(g.pl)))
		goto out;
	while (!vfgx_pipeline_done(g.pl)) {
		struct timespec ts = { 0, 2000000 };

		nanosleep(&ts, NULL);
	}
	t1 = vfgx_now_ns();
	vfgx_pipeline_stop(g.pl);
	vfgx_pipeline_stats(g.pl, &st);
	*waits = chunks && !vfgx_chunk_stats(g.pl, &cst) ? cst.backpressure : 0;
	ret = vfgx_pipeline_error(g.pl);
	if (!ret && (st.packets == 0 || st.delivered != st.packets))
		ret = -EPROTO;
	*mpps = (double)st.packets / (double)(t1 - t0) * 1e3;
out:
	atomic_store(&g.stop, true);
	if (thread)
		pthread_join(t, NULL);
	*nchunks = g.chunks;
	if (ret)
		fprintf(stderr, "vfgx bench chunks: gpu engine %s chunks: %s\n",
			chunks ? "with" : "without", ret == -EPROTO ? "packets lost" :
			vfgx_last_error(ctx));
	vfgx_pipeline_destroy(g.pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	return ret ? -1 : 0;
}

#if VFGX_HAVE_CUDA
/* The gpu engine's chunks taken by a CUDA stream with no CPU in its loop:
 * for each chunk, vfgx_chunk_stream_wait, a one-thread stamp kernel,
 * vfgx_chunk_stream_put, kept CHUNK_STAMPS_AHEAD chunks ahead.  A paced source
 * (one chunk of 64 packets every 100 us, pinned frames, one stream); the
 * stamp reads %globaltimer and the chunk's descriptor the kernels wrote
 * (its last packet's and its release's %globaltimer): latency from the
 * last packet written to the consumer's stream running it, one clock. */
#define STREAM_CHUNKS 1000
#define STREAM_FIRST 100 /* the run's start, apart in the breakdown */
#define STREAM_SLOW_NS 200000

/* One run's latencies (us); the same without its first STREAM_FIRST
 * chunks; the chunks over STREAM_SLOW_NS and the last of them. */
struct stream_lat {
	double p50, p99, rel99, later50, later99;
	int slow, last_slow;
};

/* The paced source both GPU consumers of gpu-engine chunks take: one
 * stream, a chunk of 64 x 512 B packets every 100 us, 8 in flight in GPU
 * memory. */
static const char stream_yaml[] =
	"log_level: warn\n"
	"memory_regions: [{name: r, kind: pinned, buf_size: 2048, num_bufs: 8192}]\n"
	"interfaces:\n"
	"  - backend: loopback\n"
	"    rx: {queues: [{id: 0, memory_region: r, batch_size: 64}]}\n"
	"    loopback: {packets: 64000, packet_size: 512, flows: 1, rate_pps: 640000}\n"
	"pipeline:\n"
	"  device: gpu\n"
	"  chunks: {payload_bytes: 512, packets: 64, in_flight: 8, mem: gpu}\n";

static int gpu_stream_latency(vfgx_ctx *ctx, struct stream_lat *sl)
{
	static uint64_t last[STREAM_CHUNKS], ready[STREAM_CHUNKS];
	const char *y = stream_yaml;
	struct vfgx_config *cfg = NULL;
	struct chunk_stamps *cs = NULL;
	vfgx_port *port = NULL;
	vfgx_pipeline *pl = NULL;
	char err[256] = "";
	bool started = false;
	int ret;

	if ((ret = chunk_stamps_open(0, STREAM_CHUNKS, &cs, err, sizeof(err))) ||
	    (ret = vfgx_config_load_string(ctx, y, strlen(y), "chunks-stream.yaml", &cfg)) ||
	    (ret = vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port)) ||
	    (ret = vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl)))
		goto out;
	/* the first chunks' wait, stamp and put before the start, then each
	 * further chunk's once the stamp CHUNK_STAMPS_AHEAD before it ran (a
	 * thousand enqueued before the start hung once: either the stamp
	 * kernel's lazy load, now done at open, or a full stream queue made
	 * the enqueue wait for work that could not begin; not told apart) */
	for (uint32_t k = 0; k < STREAM_CHUNKS && !ret; k++) {
		const struct gpuk_chunk_desc *d =
			vfgx_chunkset_gpu_desc_dev(vfgx_pipeline_chunkset(pl), 0, k % 8);

		if (!d) {
			ret = -EINVAL;
			break;
		}
		if (k == CHUNK_STAMPS_AHEAD) {
			if ((ret = vfgx_pipeline_start(pl)))
				break;
			started = true;
		}
		if (k >= CHUNK_STAMPS_AHEAD &&
		    (ret = chunk_stamps_done(cs, k - CHUNK_STAMPS_AHEAD, err, sizeof(err))))
			break;
		/* last_gt and ready_gt: the 6th and 7th words (gpu_iface.h) */
		ret = vfgx_chunk_stream_wait(pl, 0, k, chunk_stamps_stream(cs)) ||
		      chunk_stamps_add(cs, k, (const uint64_t *)d + 5, (const uint64_t *)d + 6,
				       err, sizeof(err)) ||
		      vfgx_chunk_stream_put(pl, 0, k, chunk_stamps_stream(cs));
	}
	if (ret)
		goto out;
	while (!vfgx_pipeline_done(pl)) {
		struct timespec ts = { 0, 2000000 };

		nanosleep(&ts, NULL);
	}
	vfgx_pipeline_stop(pl);
	struct vfgx_chunk_stats st = { .argsz = sizeof(st) };

	if (vfgx_chunk_stats(pl, &st) || st.complete != STREAM_CHUNKS) {
		snprintf(err, sizeof(err), "%llu of %d chunks complete",
			 (unsigned long long)st.complete, STREAM_CHUNKS);
		ret = -EPROTO;
		goto out;
	}
	if (chunk_stamps_read(cs, last, ready, err[0] ? NULL : err, err[0] ? 0 : sizeof(err)) && !ret)
		ret = -EIO;
	if (ret)
		goto out;
	sl->slow = 0;
	sl->last_slow = -1;
	for (int i = 0; i < STREAM_CHUNKS; i++)
		if (last[i] > STREAM_SLOW_NS) {
			sl->slow++;
			sl->last_slow = i;
		}
	qsort(last + STREAM_FIRST, STREAM_CHUNKS - STREAM_FIRST, sizeof(last[0]), cmp_u64);
	sl->later50 = (double)last[STREAM_FIRST + (STREAM_CHUNKS - STREAM_FIRST) / 2] / 1e3;
	sl->later99 = (double)last[STREAM_FIRST + (STREAM_CHUNKS - STREAM_FIRST) * 99 / 100] / 1e3;
	qsort(last, STREAM_CHUNKS, sizeof(last[0]), cmp_u64);
	qsort(ready, STREAM_CHUNKS, sizeof(ready[0]), cmp_u64);
	sl->p50 = (double)last[STREAM_CHUNKS / 2] / 1e3;
	sl->p99 = (double)last[STREAM_CHUNKS * 99 / 100] / 1e3;
	sl->rel99 = (double)ready[STREAM_CHUNKS * 99 / 100] / 1e3;
out:
	if (ret)
		fprintf(stderr, "vfgx bench chunks: CUDA-stream consumer: %s\n",
			err[0] ? err : vfgx_last_error(ctx));
	if (ret && started) {
		/* a chunk never made ready would hold the stream for good: let
		 * every wait pass (the round counts as failed) */
		struct vfgx_chunkset *set = vfgx_pipeline_chunkset(pl);

		vfgx_pipeline_stop(pl);
		if (set)
			vfgx_chunkset_release_waits(set);
	}
	/* the pipeline (its persistent kernel) before cudaFree */
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	chunk_stamps_close(cs);
	return ret ? -1 : 0;
}

static int floor_wait(void *stream, uint64_t *word, uint64_t value, void *ctx)
{
	return vfgx_chunk_cuda_wait_geq(stream, word, value, ctx);
}

/* The same consumer (wait, stamp kernel) on a word a GPU kernel writes
 * every 100 us with no pipeline: the stream wait's own latency, p50 and
 * p99 in us. */
static int gpu_stream_floor(vfgx_ctx *ctx, double *p50, double *p99)
{
	static uint64_t since[STREAM_CHUNKS];
	struct chunk_stamps *cs = NULL;
	char err[256] = "";
	int ret;

	if (!(ret = chunk_stamps_open(0, STREAM_CHUNKS, &cs, err, sizeof(err))))
		ret = chunk_stamps_floor(cs, STREAM_CHUNKS, 100000, floor_wait, ctx, since, err,
					 sizeof(err));
	chunk_stamps_close(cs);
	if (ret) {
		fprintf(stderr, "vfgx bench chunks: stream wait floor: %s\n", err);
		return ret;
	}
	qsort(since, STREAM_CHUNKS, sizeof(since[0]), cmp_u64);
	*p50 = (double)since[STREAM_CHUNKS / 2] / 1e3;
	*p99 = (double)since[STREAM_CHUNKS * 99 / 100] / 1e3;
	return 0;
}

/* The same paced source and chunks taken by a resident kernel through the
 * device chunk API (vfgx/chunk_device.h): no stream wait, no launch per
 * chunk.  p50, p99 (us) from the last packet written, p99 from the
 * release, over every chunk of the run. */
static int gpu_device_latency(vfgx_ctx *ctx, double *p50, double *p99, double *rel99)
{
	static uint64_t last[STREAM_CHUNKS], ready[STREAM_CHUNKS];
	const char *y = stream_yaml;
	struct vfgx_chunk_device v = { .argsz = sizeof(v) };
	struct vfgx_chunk_stats st = { .argsz = sizeof(st) };
	struct vfgx_config *cfg = NULL;
	struct chunk_stamps *cs = NULL;
	vfgx_port *port = NULL;
	vfgx_pipeline *pl = NULL;
	char err[256] = "";
	int ret;

	/* its kernel loaded before the pipeline's persistent kernel runs */
	if ((ret = chunk_stamps_open(0, STREAM_CHUNKS, &cs, err, sizeof(err))) ||
	    (ret = vfgx_config_load_string(ctx, y, strlen(y), "chunks-device.yaml", &cfg)) ||
	    (ret = vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port)) ||
	    (ret = vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl)) ||
	    (ret = vfgx_chunk_device(pl, &v)) ||
	    (ret = chunk_stamps_device(cs, &v, err, sizeof(err))) ||
	    (ret = vfgx_pipeline_start(pl)))
		goto out;
	while (!vfgx_pipeline_done(pl)) {
		struct timespec ts = { 0, 2000000 };

		nanosleep(&ts, NULL);
	}
	vfgx_pipeline_stop(pl); /* the end word: the consumer kernel returns */
	if ((ret = chunk_stamps_read(cs, last, ready, err, sizeof(err))))
		goto out;
	if (vfgx_chunk_stats(pl, &st) || st.complete != STREAM_CHUNKS) {
		snprintf(err, sizeof(err), "%llu of %d chunks complete",
			 (unsigned long long)st.complete, STREAM_CHUNKS);
		ret = -EPROTO;
		goto out;
	}
	qsort(last, STREAM_CHUNKS, sizeof(last[0]), cmp_u64);
	qsort(ready, STREAM_CHUNKS, sizeof(ready[0]), cmp_u64);
	*p50 = (double)last[STREAM_CHUNKS / 2] / 1e3;
	*p99 = (double)last[STREAM_CHUNKS * 99 / 100] / 1e3;
	*rel99 = (double)ready[STREAM_CHUNKS * 99 / 100] / 1e3;
out:
	if (ret)
		fprintf(stderr, "vfgx bench chunks: device consumer: %s\n",
			err[0] ? err : vfgx_last_error(ctx));
	if (pl)
		vfgx_pipeline_stop(pl); /* the consumer kernel sees the end */
	chunk_stamps_close(cs);  /* waits for its stream */
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	return ret ? -1 : 0;
}
#endif

/* A spectrometer round: 251,250 chunks of 64 packets, the first phase of
 * 5000 a warm-up, then 48 timed phases (12 groups of on off off on), about
 * 9 s from the replay at 27,000 chunks/s (6 groups left rounds at 0.85
 * where a burst of host noise fell on the FFT phases). */
#define SPEC_RUN_CHUNKS 251250
#define SPEC_PHASE_CHUNKS 5000

/* One spectrometer run alternating the cuFFT consumer on and off in
 * phases (--alternate): the chunks per second of each side, both from the
 * same process, so that what moves one run's rate against the next
 * (placement, the host) moves both sides alike. */
static int run_spectrometer(const char *path, double *fft, double *none)
{
	char cmd[1024], line[512];
	FILE *f;
	int ret = -1;

	snprintf(cmd, sizeof(cmd), "taskset -c %s '%s' /dev/null --packets %lu --alternate %d 2>&1",
		 sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? "2,3" : "0,1", path,
		 (unsigned long)SPEC_RUN_CHUNKS * 64, SPEC_PHASE_CHUNKS);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "fft_chunks_per_s ");

		if (p && sscanf(p, "fft_chunks_per_s %lf none_chunks_per_s %lf", fft, none) == 2 &&
		    *fft > 0 && *none > 0)
			ret = 0;
	}
	if (pclose(f) != 0)
		ret = -1;
	return ret;
}

int vfgx_bench_chunks(int argc, char **argv)
{
	double fft[MAX_ROUNDS], nofft[MAX_ROUNDS];
	double gwith[MAX_ROUNDS], gwithout[MAX_ROUNDS];
	uint64_t gchunks[MAX_ROUNDS], gwaits[MAX_ROUNDS];
	double sl99[MAX_ROUNDS]; /* the CUDA-stream consumer's rounds */
	double dl99[MAX_ROUNDS]; /* the device-API consumer's rounds */
	int n_dl = 0;
	double fl99[MAX_ROUNDS]; /* ...and the stream wait's own, same rounds */
#if VFGX_HAVE_CUDA
	double sl50[MAX_ROUNDS], slrel99[MAX_ROUNDS], fl50[MAX_ROUNDS];
	double dl50[MAX_ROUNDS], dlrel99[MAX_ROUNDS];
	struct stream_lat slr[MAX_ROUNDS];
#endif
	int n_sl = 0;
	int n_gpu = 0;
	const char *spectrometer = VFGX_SPECTROMETER;
	int n_fft = 0;
	double with[MAX_ROUNDS], without[MAX_ROUNDS], ratio[MAX_ROUNDS];
	double p50[MAX_ROUNDS], p99[MAX_ROUNDS];
	const char *out = "bench/results";
	double seconds = 0.5, load0, load1;
	int rounds = 7, ws_mb = 0, c, ret = 1;
	size_t llc = work_llc_bytes(), ws;
	struct side sw = { 0 }, so = { 0 };
	char path[512], a[64], b[64], d[64];
	struct work w;
	vfgx_ctx *ctx;
	FILE *f;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_bench_cli_chunks)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 's':
			if (vfgx_num_double(optarg, 0, 600, &seconds, NULL, 0) || seconds <= 0) {
				fprintf(stderr, "vfgx bench chunks: --seconds must be 0..600\n");
				return 2;
			}
			break;
		case 'r':
			if (vfgx_flag_int("bench chunks", "--rounds", optarg, 1, MAX_ROUNDS, &rounds))
				return 2;
			break;
		case 'w':
			if (vfgx_flag_int("bench chunks", "--working-set", optarg, 1, 65536, &ws_mb))
				return 2;
			break;
		case 'S':
			spectrometer = optarg;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_bench_cli_chunks);
			return 0;
		default:
			return 2;
		}
	}
	if (optind != argc)
		return cli_bad_operands(&vfgx_bench_cli_chunks, "unexpected operand");
	if (bench_out_check(out, "chunks"))
		return 1;
	ws = ws_mb ? (size_t)ws_mb << 20 : 2 * llc;
	if (!ws_mb && ws < (64u << 20))
		ws = 64u << 20;
	if (vfgx_ctx_create(&ctx))
		return 1;
	load0 = bench_loadavg1();
	if (work_build(&w, 64, ws)) {
		fprintf(stderr, "vfgx bench chunks: cannot allocate %zu MiB (use --working-set MB)\n",
			ws >> 20);
		goto out_ctx;
	}
	if (side_open(ctx, &w, true, &sw) || side_open(ctx, &w, false, &so)) {
		fprintf(stderr, "vfgx bench chunks: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	/* an untimed pass each: first touch of windows and rings */
	if (run_side(&w, &sw, 1e-9, &with[0]) || run_side(&w, &so, 1e-9, &without[0]))
		goto out;
	for (int i = 0; i < rounds; i++) {
		for (int k = 0; k < 2; k++) {
			bool chunk_turn = (k == 0) == (i % 2 == 0);

			if (chunk_turn ? run_side(&w, &sw, seconds, &with[i]) :
					 run_side(&w, &so, seconds, &without[i]))
				goto out;
		}
		ratio[i] = with[i] / without[i];
		if (measure_latency(ctx, 2000, &p50[i], &p99[i]))
			goto out;
		printf("round %d: chunks %.2f Mpps/core, reorder %.2f (ratio %.3f); ready latency p50 %.1f us p99 %.1f us\n",
		       i + 1, with[i], without[i], ratio[i], p50[i], p99[i]);
	}
	/* the gpu engine with chunks against without, where there is a GPU */
	char gpu_desc[256];

	if (vfgx_gpu_probe(ctx, 0, gpu_desc, sizeof(gpu_desc)) == 0) {
		double m;
		uint64_t nc, nw;

		if (gpu_run(ctx, true, 0.3, &m, &nc, &nw) == 0) /* warm up */
			for (int i = 0; i < rounds; i++, n_gpu++) {
				bool first = i % 2 == 0;

				if ((first && gpu_run(ctx, true, seconds * 2, &gwith[i], &gchunks[i], &gwaits[i])) ||
				    gpu_run(ctx, false, seconds * 2, &gwithout[i], &nc, &nw) ||
				    (!first && gpu_run(ctx, true, seconds * 2, &gwith[i], &gchunks[i], &gwaits[i])))
					break;
				printf("round %d: gpu engine 8192 B, chunks %.2f Mpps (%llu chunks, %llu backpressure waits), reorder %.2f Mpps (ratio %.3f)\n",
				       i + 1, gwith[i], (unsigned long long)gchunks[i],
				       (unsigned long long)gwaits[i], gwithout[i], gwith[i] / gwithout[i]);
			}
#if VFGX_HAVE_CUDA
		for (int i = 0; i < rounds; i++, n_sl++) {
			if (gpu_stream_latency(ctx, &slr[i]) || gpu_stream_floor(ctx, &fl50[i], &fl99[i]))
				break;
			sl50[i] = slr[i].p50, sl99[i] = slr[i].p99, slrel99[i] = slr[i].rel99;
			printf("round %d: CUDA-stream consumer of gpu-engine chunks: last packet -> stream p50 %.1f us p99 %.1f us (release -> stream p99 %.1f us); after the first %d: p50 %.1f p99 %.1f us; %d over %d us, the last chunk %d; the stream wait alone p50 %.1f p99 %.1f us\n",
			       i + 1, sl50[i], sl99[i], slrel99[i], STREAM_FIRST, slr[i].later50,
			       slr[i].later99, slr[i].slow, STREAM_SLOW_NS / 1000, slr[i].last_slow,
			       fl50[i], fl99[i]);
		}
		for (int i = 0; i < rounds; i++, n_dl++) {
			if (gpu_device_latency(ctx, &dl50[i], &dl99[i], &dlrel99[i]))
				break;
			printf("round %d: device-API consumer of gpu-engine chunks: last packet -> consumer p50 %.1f us p99 %.1f us (release -> consumer p99 %.1f us)\n",
			       i + 1, dl50[i], dl99[i], dlrel99[i]);
		}
#endif
	}
	/* the cuFFT consumer on every chunk against none, same stream */
	if (access(spectrometer, X_OK) == 0)
		for (int i = 0; i < rounds; i++, n_fft++) {
			if (run_spectrometer(spectrometer, &fft[i], &nofft[i]))
				break;
			printf("round %d: spectrometer %.1f chunks/s with cuFFT, %.1f without (ratio %.3f)\n",
			       i + 1, fft[i], nofft[i], fft[i] / nofft[i]);
		}
	load1 = bench_loadavg1();
	f = bench_results_open(out, "chunks", "Ordered chunks: assembly cost and ready latency",
			       path, sizeof(path));
	if (!f)
		goto out;
	fprintf(f, "- command: vfgx bench chunks --seconds %g --rounds %d (one command: the CPU rows anywhere, the GPU rows where there is a GPU and the spectrometer build)\n",
		seconds, rounds);
	fprintf(f, "- load average (1 min) before %.2f, after %.2f on %ld online cores\n",
		load0, load1, sysconf(_SC_NPROCESSORS_ONLN));
	fprintf(f, "- traffic: `vfgx bench pipeline`'s 64 B frames (%d streams round-robin, 1%% lost, 0.5%% sent twice, 1%% swapped up to 16 places; UDP checksums on), %zu MiB working set against a %zu MiB last-level cache.\n",
		WORK_STREAMS, w.bytes >> 20, llc >> 20);
	fprintf(f, "- with chunks: one vfgx_proc on one thread, parse + validate + filter, each record's payload written into its slot of a chunk (%d packets, %u B slots, 4 in flight per stream, close_distance 2); a consumer inline between bursts takes and returns every ready chunk. Without: the same processor with reorder windows (1024 slots), the pipeline's default. Both sides: one thread, no system call in the timed loop, one copy of each accepted payload (into its chunk slot, or into its reorder window slot as src/pipeline/proc.c does at the commit above). Every pass is checked (each unique sequence placed, each copy late or duplicate, lost ones as gaps).\n",
		CHUNK_PACKETS, w.size);
	fprintf(f, "- rate = packets per second of the thread's CPU time; the two sides alternate in each round (order flipped every round).\n");
	fprintf(f, "- ready latency: a placer thread writes chunks of 64 packets of 48 B in order, 200 us apart; a consumer thread polling vfgx_chunk_get's path (vfgx_chunkset_get with timeout 0, as a consumer owning a core does; pinned to the last CPU, the placer to the one below) stamps each complete chunk: time from the last packet's write (its last_packet_ns) to get returning it. 2000 chunks per round.\n\n");
	fprintf(f, "| round | chunks Mpps/core | reorder Mpps/core | ratio | ready p50 us | ready p99 us |\n|---|---|---|---|---|---|\n");
	for (int i = 0; i < rounds; i++)
		fprintf(f, "| %d | %.3f | %.3f | %.3f | %.1f | %.1f |\n", i + 1, with[i], without[i],
			ratio[i], p50[i], p99[i]);
	fprintf(f, "\n| | median (min..max) |\n|---|---|\n| chunks Mpps/core | %s |\n| reorder Mpps/core | %s |\n| ratio | %s |\n",
		bench_fmt_spread(a, sizeof(a), "%.2f", with, rounds),
		bench_fmt_spread(b, sizeof(b), "%.2f", without, rounds),
		bench_fmt_spread(d, sizeof(d), "%.3f", ratio, rounds));
	fprintf(f, "| ready p99 us | %s |\n\n", bench_fmt_spread(a, sizeof(a), "%.1f", p99, rounds));
	if (n_fft) {
		fprintf(f, "- FFT consumer: examples/spectrometer --packets %lu --alternate %d, one process a round (a loopback replay source, its frames advanced by the receiving worker; the cpu engine assembles chunks of 64 x 1024 B complex int8 samples in GPU memory, one asynchronous copy per chunk). After %d chunks of warm-up the run goes in phases of %d chunks, the consumer's cuFFT on and off in the order on off off on, repeated (the whole groups of four timed, %d phases or a group more where the source's losses add chunks): on, it runs each chunk's CUDA graph (unpack, cuFFT over 8 x 4096 channels, accumulate the power), and gives the chunk back from its CUDA stream after the graph (vfgx_chunk_stream_put); off, it takes each chunk and gives it back untouched. Chunks per second of each side over its phases, each phase timed from its first chunk's get to the next phase's; pinned to two CPUs (taskset). Both sides share one process, so what moves one process's rate against the next (it varied by a third on these hosts) moves both alike.\n\n",
			(unsigned long)SPEC_RUN_CHUNKS * 64, SPEC_PHASE_CHUNKS, SPEC_PHASE_CHUNKS,
			SPEC_PHASE_CHUNKS, 4 * ((SPEC_RUN_CHUNKS / SPEC_PHASE_CHUNKS - 1) / 4));
		fprintf(f, "| round | with cuFFT chunks/s | no consumer chunks/s | ratio |\n|---|---|---|---|\n");
		for (int i = 0; i < n_fft; i++)
			fprintf(f, "| %d | %.1f | %.1f | %.3f |\n", i + 1, fft[i], nofft[i], fft[i] / nofft[i]);
		fprintf(f, "\n");
	} else {
		fprintf(f, "- FFT consumer: not measured here (no spectrometer build or no GPU: %s).\n", spectrometer);
	}
	if (n_gpu) {
		fprintf(f, "- gpu engine (%s): `vfgx run`'s path (vfgx_pipeline, device gpu, persistent), loopback replay of %d B frames in GPU memory (a pool of %d), %d flows on 2 queues, items of 1024 packets, verify off, %.1f s per side: with chunks (phase B of the kernels places each record and lists its copy, phase C copies the item's payloads into their slots with every warp of the block and publishes the chunks made ready in item order; 64 streams x 8 in flight x 256 packets of 8192 B in GPU memory; a consumer thread takes and returns every chunk with vfgx_chunk_get/put) against the same run with reorder windows (1024 x 8192 B, as `vfgx bench e2e`). Every run checked: every packet received was delivered. Mpps = packets / wall time; the two alternate (order flipped every round).\n\n",
			gpu_desc, GPU_SIZE, GPU_BUFS, GPU_FLOWS, seconds * 2);
		fprintf(f, "| round | with chunks Mpps | chunks handed out | backpressure waits | without Mpps | ratio |\n|---|---|---|---|---|---|\n");
		for (int i = 0; i < n_gpu; i++)
			fprintf(f, "| %d | %.2f | %llu | %llu | %.2f | %.3f |\n", i + 1, gwith[i],
				(unsigned long long)gchunks[i], (unsigned long long)gwaits[i],
				gwithout[i], gwith[i] / gwithout[i]);
		fprintf(f, "\n");
	} else {
		fprintf(f, "- gpu engine rows: not measured here (no GPU).\n");
	}
#if VFGX_HAVE_CUDA
	if (n_sl) {
		fprintf(f, "- CUDA-stream consumer (the GPU side of chunk_ready_latency): the gpu engine places chunks of 64 x 512 B packets (one stream, 8 in flight, GPU memory) from a loopback source paced at 640 kpps (a chunk every 100 us, pinned frames); a CUDA stream has, for each of %d chunks, vfgx_chunk_stream_wait, a one-thread kernel and vfgx_chunk_stream_put, enqueued up to %d chunks ahead of the last stamp that ran.  The kernel reads %%globaltimer and the chunk's descriptor the placing kernel wrote: time from the chunk's last packet written (and from its release) to the consumer's kernel running, both on the GPU's clock.\n\n",
			STREAM_CHUNKS, CHUNK_STAMPS_AHEAD);
		fprintf(f, "The target takes every chunk of the run; the columns after it leave out its first %d chunks, and count the chunks over %d us and give the last of them (chunk numbers from 0).\n\n",
			STREAM_FIRST, STREAM_SLOW_NS / 1000);
		fprintf(f, "The reference (same round, no pipeline): the same stream, wait and stamp kernel on a pinned word a one-thread GPU kernel writes every 100 us, %d times, stamping %%globaltimer just before each write: an instant release's latency to the consumer's kernel, which no pipeline can go below.\n\n",
			STREAM_CHUNKS);
		fprintf(f, "| round | last packet -> stream p50 us | p99 us | release -> stream p99 us | p50 us after the first %d | p99 us after the first %d | chunks over %d us | the last of them | stream wait alone p50 us | p99 us |\n|---|---|---|---|---|---|---|---|---|---|\n",
			STREAM_FIRST, STREAM_FIRST, STREAM_SLOW_NS / 1000);
		for (int i = 0; i < n_sl; i++)
			fprintf(f, "| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %d | %.1f | %.1f |\n", i + 1,
				sl50[i], sl99[i], slrel99[i], slr[i].later50, slr[i].later99, slr[i].slow,
				slr[i].last_slow, fl50[i], fl99[i]);
		fprintf(f, "\n");
	}
	if (n_dl) {
		fprintf(f, "- device-API consumer (vfgx/chunk_device.h): the same paced source and chunks; one thread of a kernel launched once, before the start, waits for each chunk on its ring slot's ready word (ld.acquire.sys, __nanosleep back-off up to 256 ns), reads %%globaltimer and the engine's record of the chunk, and gives it back (st.release.sys of the returned word): no stream wait, no launch, no CPU per chunk. Time from the chunk's last packet written (and from its release) to the consumer seeing it, both on the GPU's clock; every one of the %d chunks of a round.\n\n",
			STREAM_CHUNKS);
		fprintf(f, "| round | last packet -> consumer p50 us | p99 us | release -> consumer p99 us |\n|---|---|---|---|\n");
		for (int i = 0; i < n_dl; i++)
			fprintf(f, "| %d | %.1f | %.1f | %.1f |\n", i + 1, dl50[i], dl99[i], dlrel99[i]);
		fprintf(f, "\n");
	}
#endif
	fprintf(f, "- rule: %s\n\n", bench_ci_rule);
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "chunks_cpu_mpps_per_core_64B", .measured = with, .reference = without,
		.n = rounds, .goal = 0.8, .goal_on_ratio = true, .higher_better = true });
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "chunk_ready_latency_p99_us", .measured = p99, .n = rounds,
		.goal = 10, .higher_better = false });
	if (n_sl)
		bench_target_rounds(f, &(struct bench_target_rounds){
			.name = "chunk_ready_latency_p99_us_gpu_stream", .measured = sl99,
			.reference = fl99, .n = n_sl, .goal = 10, .higher_better = false });
	else
		bench_target_unmeasured(f, "chunk_ready_latency_p99_us_gpu_stream", 10,
					"no GPU here: vfgx bench chunks on a GPU host measures it");
	if (n_dl)
		bench_target_rounds(f, &(struct bench_target_rounds){
			.name = "chunk_ready_latency_p99_us_gpu_consumer", .measured = dl99,
			.n = n_dl, .goal = 10, .higher_better = false });
	else
		bench_target_unmeasured(f, "chunk_ready_latency_p99_us_gpu_consumer", 10,
					"no GPU here: vfgx bench chunks on a GPU host measures it");
	if (n_gpu)
		bench_target_rounds(f, &(struct bench_target_rounds){
			.name = "chunks_gpu_vs_e2e_8192B", .measured = gwith, .reference = gwithout,
			.n = n_gpu, .goal = 0.9, .goal_on_ratio = true, .higher_better = true });
	else
		bench_target_unmeasured(f, "chunks_gpu_vs_e2e_8192B", 0.9,
					"no GPU here: vfgx bench chunks on a GPU host measures it");
	if (n_fft)
		bench_target_rounds(f, &(struct bench_target_rounds){
			.name = "chunks_fft_consumer_vs_none", .measured = fft, .reference = nofft,
			.n = n_fft, .goal = 0.9, .goal_on_ratio = true, .higher_better = true });
	else
		bench_target_unmeasured(f, "chunks_fft_consumer_vs_none", 0.9,
					"no GPU or no spectrometer build here: vfgx bench chunks on a GPU host measures it");
	fclose(f);
	printf("wrote %s\n", path);
	ret = 0;
out:
	side_close(&sw);
	side_close(&so);
	work_free(&w);
out_ctx:
	vfgx_ctx_destroy(ctx);
	return ret;
}
