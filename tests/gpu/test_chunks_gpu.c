/* test_chunks_gpu.c - chunks in GPU and pinned memory on a GPU machine
 * (exit 77 without one).  The cpu engine assembles them; a consumer copies
 * each GPU chunk back and checks every byte, mask and length against the
 * loopback generator; pinned chunks are checked in place and through
 * their device view; and a CUDA stream consumes chunks with no CPU in its
 * loop: vfgx_chunk_stream_wait, an async copy of the chunk's slot,
 * vfgx_chunk_stream_put, for every chunk of the run, enqueued before the
 * pipeline starts; and chunks taken with vfgx_chunk_get given back from a
 * CUDA stream.  The gpu engine, whose kernels place the records
 * themselves, gives the same chunks (every chunk's counts, mask and bytes)
 * and counters as the cpu engine on the same faulty traffic, in each
 * launch mode; CUDA streams consume its chunks the same way; a stale put
 * is refused on it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <vfgx/vfgx.h>

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); } } while (0)

static const char *yaml(const char *mem, const char *faults, uint32_t packets)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf),
		 "interfaces:\n"
		 "  - backend: loopback\n"
		 "    loopback: { packets: %u, flows: 2%s }\n"
		 "pipeline:\n"
		 "  device: cpu\n"
		 "  chunks: { payload_bytes: 512, packets: 64, streams: 2, in_flight: 4, mem: %s }\n",
		 packets, faults, mem);
	return buf;
}

struct run {
	struct vfgx_config *cfg;
	vfgx_port *port;
	vfgx_pipeline *pl;
};

static int open_run(vfgx_ctx *ctx, struct run *r, const char *y)
{
	memset(r, 0, sizeof(*r));
	if (vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &r->cfg) ||
	    vfgx_port_open_config(ctx, r->cfg, &r->cfg->ifaces[0], &r->port) ||
	    vfgx_pipeline_create(ctx, &r->cfg->pipeline, &r->port, 1, &r->pl)) {
		fprintf(stderr, "FAIL: %s\n", vfgx_last_error(ctx));
		failures++;
		return -1;
	}
	return 0;
}

static void close_run(struct run *r)
{
	vfgx_pipeline_destroy(r->pl);
	vfgx_port_close(r->port);
	vfgx_config_destroy(r->cfg);
}

/* One chunk's bytes, present words and lengths in host memory. */
static uint64_t check_host(const struct vfgx_chunk *c, const uint8_t *data,
			   const uint64_t *present, const uint32_t *lens)
{
	uint64_t bad = 0;

	for (uint32_t i = 0; i < c->packets; i++) {
		bool in = present[i / 64] >> (i % 64) & 1;

		if (!in) {
			bad += lens[i] != 0;
			continue;
		}
		for (uint32_t j = 0; j < lens[i]; j++)
			bad += data[(size_t)i * c->payload_bytes + j] !=
			       vfgx_pattern_byte(c->stream, c->first + i, j);
	}
	return bad;
}

/* check_host on a chunk of 64 x 512 B in GPU memory, copied back into
 * data (its bytes) first. */
static uint64_t check_device(const struct vfgx_chunk *c, uint8_t *data)
{
	uint64_t present[1] = { 0 };
	uint32_t lens[64] = { 0 };

	CHECK(cudaMemcpy(data, c->data, 64 * 512, cudaMemcpyDeviceToHost) == cudaSuccess &&
	      cudaMemcpy(present, c->present, 8, cudaMemcpyDeviceToHost) == cudaSuccess &&
	      cudaMemcpy(lens, c->lens, sizeof(lens), cudaMemcpyDeviceToHost) == cudaSuccess,
	      "copy back");
	return check_host(c, data, present, lens);
}

static void consume_and_check(vfgx_ctx *ctx, const char *mem)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	size_t bytes = 64 * 512;
	uint8_t *data = malloc(bytes);
	uint64_t bad = 0, chunks = 0;
	struct vfgx_chunk *c;
	struct run r;
	int ret;

	if (!data || open_run(ctx, &r, yaml(mem, ", loss: 0.01, reorder: 0.02", 100000)))
		return;
	CHECK(vfgx_pipeline_start(r.pl) == 0, "start");
	while ((ret = vfgx_chunk_get(r.pl, 1000, &c)) != -ENODATA) {
		if (ret)
			continue;
		CHECK(c->dev_data != NULL, "%s chunk without a device address", mem);
		if (!strcmp(mem, "gpu")) {
			bad += check_device(c, data);
		} else {
			/* in place, and through the GPU's view of the same bytes */
			bad += check_host(c, c->data, c->present, c->lens);
			CHECK(cudaMemcpy(data, c->dev_data, bytes, cudaMemcpyDeviceToHost) == cudaSuccess,
			      "copy from the device view");
			CHECK(!memcmp(data, c->data, bytes), "pinned device view differs");
		}
		chunks++;
		vfgx_chunk_put(r.pl, c->stream, c->index);
	}
	vfgx_pipeline_stop(r.pl);
	CHECK(vfgx_chunk_stats(r.pl, &cs) == 0, "stats");
	CHECK(bad == 0, "%s: %llu bad bytes", mem, (unsigned long long)bad);
	CHECK(chunks == cs.handed_out && chunks > 0 && cs.closed > 0, "%s: %llu chunks",
	      mem, (unsigned long long)chunks);
	printf("ok   %s chunks: %llu checked (%llu complete), every byte\n", mem,
	       (unsigned long long)chunks, (unsigned long long)cs.complete);
	close_run(&r);
	free(data);
}

/* cpu engine, GPU memory: a consumer that takes every chunk and gives none
 * back.  The worker waits for a slot (its copies to the GPU done first),
 * stopping ends the wait with the packet dropped and no hang, and every
 * chunk handed out holds its bytes. */
static void cpu_engine_held(vfgx_ctx *ctx)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	struct vfgx_chunk *held[8];
	size_t bytes = 64 * 512;
	uint8_t *data = malloc(bytes);
	uint64_t bad = 0;
	uint32_t n = 0;
	struct run r;

	if (!data || open_run(ctx, &r, yaml("gpu", "", 100000))) {
		free(data);
		return;
	}
	CHECK(vfgx_pipeline_start(r.pl) == 0, "start");
	/* 2 streams x 4 in flight; once one stream's 4 are held the worker
	 * waits, and the other stream's chunks being filled stay open */
	while (n < 8 && vfgx_chunk_get(r.pl, 300, &held[n]) == 0)
		n++;
	for (int i = 0; i < 100 && vfgx_chunk_stats(r.pl, &cs) == 0 && !cs.backpressure; i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	vfgx_pipeline_stop(r.pl);
	CHECK(vfgx_chunk_stats(r.pl, &cs) == 0, "stats");
	for (uint32_t i = 0; i < n; i++) {
		const struct vfgx_chunk *c = held[i];

		bad += check_device(c, data);
	}
	CHECK(n >= 4, "held: %u chunks handed out before the worker waited", n);
	CHECK(cs.backpressure > 0 && cs.backpressure_drops > 0,
	      "held: %llu backpressure waits, %llu dropped at the stop",
	      (unsigned long long)cs.backpressure, (unsigned long long)cs.backpressure_drops);
	CHECK(bad == 0, "held: %llu bad bytes", (unsigned long long)bad);
	printf("ok   cpu engine, gpu memory, chunks held: %u handed out, %llu backpressure waits, "
	       "%llu dropped at the stop, no hang, every byte\n", n,
	       (unsigned long long)cs.backpressure, (unsigned long long)cs.backpressure_drops);
	close_run(&r);
	free(data);
}

/* Chunks taken with vfgx_chunk_get and given back from a CUDA stream
 * (vfgx_chunk_stream_put after an async copy of the chunk): the CPU never
 * waits for the GPU, the pipeline reuses a slot only after the stream's
 * copy of it (every byte of every chunk right), and the run ends. */
static void get_stream_put(vfgx_ctx *ctx, const char *device)
{
	enum { MAX = 400 };
	char y[640];
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	size_t bytes = 64 * 512;
	uint8_t *host = NULL;
	uint64_t (*present)[1] = NULL;
	uint32_t (*lens)[64] = NULL;
	struct vfgx_chunk *d = calloc(MAX, sizeof(*d)); /* descriptors at get */
	uint64_t bad = 0, n = 0;
	struct vfgx_chunk *c;
	cudaStream_t s;
	struct run r;
	int ret;

	/* 2 streams x 4 slots, 16,000 packets with losses: about 250 chunks */
	snprintf(y, sizeof(y),
		 "memory_regions: [{name: r, kind: pinned, buf_size: 2048, num_bufs: 4096}]\n"
		 "interfaces:\n  - backend: loopback\n    rx: {queues: [{id: 0, memory_region: r}]}\n"
		 "    loopback: { packets: 16000, flows: 2, loss: 0.01, reorder: 0.02 }\n"
		 "pipeline:\n  device: %s\n"
		 "  chunks: { payload_bytes: 512, packets: 64, streams: 2, in_flight: 4, mem: gpu }\n",
		 device);
	if (!d || open_run(ctx, &r, y)) {
		free(d);
		return;
	}
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
	CHECK(cudaMallocHost((void **)&host, bytes * MAX) == cudaSuccess &&
	      cudaMallocHost((void **)&present, sizeof(*present) * MAX) == cudaSuccess &&
	      cudaMallocHost((void **)&lens, sizeof(*lens) * MAX) == cudaSuccess, "host buffers");
	CHECK(vfgx_pipeline_start(r.pl) == 0, "start");
	while ((ret = vfgx_chunk_get(r.pl, 1000, &c)) != -ENODATA) {
		if (ret)
			continue;
		if (n == MAX) {
			vfgx_chunk_put(r.pl, c->stream, c->index);
			continue;
		}
		d[n] = *c;
		CHECK(cudaMemcpyAsync(host + n * bytes, c->data, bytes, cudaMemcpyDeviceToHost, s) ==
			      cudaSuccess &&
		      cudaMemcpyAsync(present[n], c->present, 8, cudaMemcpyDeviceToHost, s) == cudaSuccess &&
		      cudaMemcpyAsync(lens[n], c->lens, sizeof(lens[n]), cudaMemcpyDeviceToHost, s) ==
			      cudaSuccess, "async copies");
		CHECK(vfgx_chunk_stream_put(r.pl, c->stream, c->index, s) == 0, "stream_put: %s",
		      vfgx_last_error(ctx));
		n++;
	}
	CHECK(cudaStreamSynchronize(s) == cudaSuccess, "stream sync");
	vfgx_pipeline_stop(r.pl);
	for (uint64_t k = 0; k < n; k++)
		bad += check_host(&d[k], host + k * bytes, present[k], lens[k]);
	CHECK(vfgx_chunk_stats(r.pl, &cs) == 0, "stats");
	CHECK(n > 200 && n < MAX && cs.handed_out == n && cs.returned == 0 &&
	      cs.backpressure_drops == 0,
	      "get + stream_put (%s engine): %llu chunks, %llu handed out, %llu put, %llu dropped",
	      device, (unsigned long long)n, (unsigned long long)cs.handed_out,
	      (unsigned long long)cs.returned, (unsigned long long)cs.backpressure_drops);
	CHECK(bad == 0, "get + stream_put (%s engine): %llu bad bytes", device,
	      (unsigned long long)bad);
	printf("ok   get + stream_put (%s engine): %llu chunks given back from a CUDA stream, "
	       "%llu backpressure waits, every byte\n", device, (unsigned long long)n,
	       (unsigned long long)cs.backpressure);
	close_run(&r);
	cudaFreeHost(host);
	cudaFreeHost(present);
	cudaFreeHost(lens);
	cudaStreamDestroy(s);
	free(d);
}

/* ---- gpu engine vs cpu engine: the same traffic, the same chunks ------- */

/* One chunk as the consumer got it (the first differing one is named
 * when two engines' runs differ). */
struct got {
	uint32_t stream, flags;
	uint64_t present, missing, index, sum;
};

/* What a run made of its chunks: per stream, in hand-out order, each
 * chunk's index, flags, counts, present words and a hash of its present
 * slots (lengths and bytes). */
struct seen {
	uint64_t n, sum[4];
	struct vfgx_chunk_stats cs;
	struct vfgx_pipeline_stats st;
	struct got *got; /* n of them, in hand-out order */
	uint64_t cap;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int collect(vfgx_ctx *ctx, const char *y, uint32_t packets,
		   uint32_t payload, struct seen *out)
{
	size_t bytes = (size_t)packets * payload, words = (packets + 63) / 64;
	uint8_t *data = malloc(bytes);
	uint64_t *present = calloc(words, 8);
	uint32_t *lens = calloc(packets, 4);
	struct vfgx_chunk *c;
	struct run r;
	int ret;

	memset(out, 0, sizeof(*out));
	out->cs.argsz = sizeof(out->cs);
	for (int i = 0; i < 4; i++)
		out->sum[i] = 0xcbf29ce484222325ull;
	if (!data || !present || !lens || open_run(ctx, &r, y)) {
		free(data);
		free(present);
		free(lens);
		return -1;
	}
	CHECK(vfgx_pipeline_start(r.pl) == 0, "start");
	while ((ret = vfgx_chunk_get(r.pl, 2000, &c)) != -ENODATA) {
		uint64_t h;

		if (ret) {
			/* nothing for 2 s: say where it stands and stop */
			vfgx_chunk_stats(r.pl, &out->cs);
			vfgx_pipeline_stats(r.pl, &out->st);
			CHECK(0, "get: %d after %llu chunks; packets %llu delivered %llu, chunks "
			      "complete %llu closed %llu placed %llu backpressure %llu, done %d",
			      ret, (unsigned long long)out->n, (unsigned long long)out->st.packets,
			      (unsigned long long)out->st.delivered,
			      (unsigned long long)out->cs.complete, (unsigned long long)out->cs.closed,
			      (unsigned long long)out->cs.placed, (unsigned long long)out->cs.backpressure,
			      vfgx_pipeline_done(r.pl));
			break;
		}
		if (c->mem == VFGX_MEM_GPU) {
			CHECK(cudaMemcpy(data, c->data, bytes, cudaMemcpyDeviceToHost) == cudaSuccess &&
			      cudaMemcpy(present, c->present, words * 8, cudaMemcpyDeviceToHost) == cudaSuccess &&
			      cudaMemcpy(lens, c->lens, (size_t)packets * 4, cudaMemcpyDeviceToHost) == cudaSuccess,
			      "copy back");
		} else {
			memcpy(data, c->data, bytes);
			memcpy(present, c->present, words * 8);
			memcpy(lens, c->lens, (size_t)packets * 4);
		}
		h = fnv(out->sum[c->stream % 4], &c->index, 8);
		h = fnv(h, &c->flags, 4);
		h = fnv(h, &c->present_count, 4);
		h = fnv(h, &c->missing, 4);
		h = fnv(h, present, words * 8);
		for (uint32_t i = 0; i < packets; i++) {
			if (!(present[i / 64] >> (i % 64) & 1))
				continue;
			h = fnv(h, &lens[i], 4);
			h = fnv(h, data + (size_t)i * payload, lens[i]);
		}
		out->sum[c->stream % 4] = h;
		if (out->n == out->cap) {
			uint64_t cap = out->cap ? 2 * out->cap : 1024;
			struct got *g = realloc(out->got, cap * sizeof(*g));

			CHECK(g, "out of memory");
			if (!g)
				break;
			out->got = g;
			out->cap = cap;
		}
		out->got[out->n] = (struct got){ c->stream, c->flags, c->present_count,
						 c->missing, c->index,
						 fnv(0xcbf29ce484222325ull, present, words * 8) };
		out->n++;
		vfgx_chunk_put(r.pl, c->stream, c->index);
	}
	vfgx_pipeline_stop(r.pl);
	CHECK(vfgx_chunk_stats(r.pl, &out->cs) == 0, "chunk stats");
	vfgx_pipeline_stats(r.pl, &out->st);
	close_run(&r);
	free(data);
	free(present);
	free(lens);
	return 0;
}

#define SAME(f) CHECK(a.f == b.f, "%s: " #f " cpu %llu gpu %llu", what, \
		      (unsigned long long)a.f, (unsigned long long)b.f)

/* Each stream's chunks in hand-out order on both engines: the first that
 * differs (or is on one side only), per stream. */
static void first_difference(const char *what, const struct seen *a, const struct seen *b)
{
	for (uint32_t s = 0; s < 4; s++) {
		uint64_t i = 0, j = 0;

		for (;;) {
			while (i < a->n && a->got[i].stream != s)
				i++;
			while (j < b->n && b->got[j].stream != s)
				j++;
			if (i == a->n && j == b->n)
				break;
			if (i == a->n || j == b->n || a->got[i].index != b->got[j].index ||
			    a->got[i].flags != b->got[j].flags ||
			    a->got[i].present != b->got[j].present ||
			    a->got[i].missing != b->got[j].missing || a->got[i].sum != b->got[j].sum) {
				const struct got *x = i < a->n ? &a->got[i] : NULL;
				const struct got *y = j < b->n ? &b->got[j] : NULL;

				fprintf(stderr,
					"     %s: stream %u, first differing chunk (hand-out %llu / %llu): cpu index %lld flags 0x%x present %llu missing %llu; gpu index %lld flags 0x%x present %llu missing %llu; present words %s\n",
					what, s, (unsigned long long)i, (unsigned long long)j,
					x ? (long long)x->index : -1LL, x ? x->flags : 0,
					x ? (unsigned long long)x->present : 0ull,
					x ? (unsigned long long)x->missing : 0ull,
					y ? (long long)y->index : -1LL, y ? y->flags : 0,
					y ? (unsigned long long)y->present : 0ull,
					y ? (unsigned long long)y->missing : 0ull,
					x && y && x->sum == y->sum ? "the same" : "differ");
				break;
			}
			i++;
			j++;
		}
	}
}

/* Replay: the traffic (faults included) is built once, so both runs see
 * the same packets in the same order whatever the engines' bursts. */
static void parity(vfgx_ctx *ctx, const char *what, const char *mem,
		   const char *traffic, const char *chunks, const char *gpu_mode,
		   uint32_t packets, uint32_t payload, bool some_chunks)
{
	static const char *const fmt =
		"memory_regions: [{name: r, kind: %s, buf_size: 1024, num_bufs: 65536}]\n"
		"interfaces:\n"
		"  - backend: loopback\n"
		"    rx: {queues: [{id: 0, memory_region: r, batch_size: 64}]}\n"
		"    loopback: { replay: true, %s }\n"
		"pipeline:\n"
		"  device: %s\n"
		"  workers: 1\n"
		"  verify_payload: true\n"
		"  gpu: { mode: %s, items: 16, graph_items: 4 }\n"
		"  chunks: { mem: %s, %s }\n";
	char y[2048];
	struct seen a, b;

	int failed0 = failures;

	snprintf(y, sizeof(y), fmt, "host", traffic, "cpu", gpu_mode, mem, chunks);
	if (collect(ctx, y, packets, payload, &a))
		return;
	fprintf(stderr, "     %s: cpu engine %llu chunks\n", what, (unsigned long long)a.n);
	snprintf(y, sizeof(y), fmt, "pinned", traffic, "gpu", gpu_mode, mem, chunks);
	if (collect(ctx, y, packets, payload, &b)) {
		free(a.got);
		return;
	}
	SAME(n);
	for (int i = 0; i < 4; i++)
		SAME(sum[i]);
	SAME(cs.complete);
	SAME(cs.closed);
	SAME(cs.skipped);
	SAME(cs.placed);
	SAME(cs.missing);
	SAME(cs.late);
	SAME(cs.duplicates);
	SAME(cs.out_of_range);
	SAME(cs.handed_out);
	SAME(st.packets);
	SAME(st.delivered);
	SAME(st.delivered_bytes);
	SAME(st.gaps);
	SAME(st.verify_errors);
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		SAME(st.drops[i]);
	CHECK(a.n > 0 || !some_chunks, "%s: no chunk", what);
	CHECK(a.st.packets > 0 && a.st.drops[VFGX_DROP_NOBUFS] == 0, "%s: %llu packets, %llu nobufs",
	      what, (unsigned long long)a.st.packets,
	      (unsigned long long)a.st.drops[VFGX_DROP_NOBUFS]);
	if (failures != failed0)
		first_difference(what, &a, &b);
	/* the line says what the gpu engine did; "ok" only when every
	 * comparison above held */
	printf("%s parity %s (%s, %s): %llu chunks (%llu complete, %llu closed, %llu skipped), "
	       "%llu placed, %llu late, %llu duplicates, %llu out of range: %s\n",
	       failures == failed0 ? "ok  " : "FAIL", what, mem, gpu_mode, (unsigned long long)b.n, (unsigned long long)b.cs.complete,
	       (unsigned long long)b.cs.closed, (unsigned long long)b.cs.skipped,
	       (unsigned long long)b.cs.placed, (unsigned long long)b.cs.late,
	       (unsigned long long)b.cs.duplicates, (unsigned long long)b.cs.out_of_range,
	       failures == failed0 ? "the same on both engines" : "the engines differ (above)");
	free(a.got);
	free(b.got);
}

/* The gpu engine with chunks in host memory: refused in one line. */
static void gpu_host_refused(vfgx_ctx *ctx)
{
	const char *y = "interfaces:\n  - backend: loopback\n    loopback: { packets: 100 }\n"
			"pipeline:\n  device: gpu\n  chunks: { mem: host }\n";
	struct vfgx_config *cfg = NULL;
	vfgx_port *port = NULL;
	vfgx_pipeline *pl = NULL;

	CHECK(vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg) == 0 &&
	      vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port) == 0, "open");
	CHECK(port && vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl) == -EINVAL &&
	      strstr(vfgx_last_error(ctx), "mem host with device gpu") &&
	      !strchr(vfgx_last_error(ctx), '\n'),
	      "gpu engine, host chunks: %s", vfgx_last_error(ctx));
	printf("ok   gpu engine refuses host chunks: %s\n", vfgx_last_error(ctx));
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

/* A put names the exact chunk on the gpu engine too (the kernels place,
 * the consumer side is chunk.c's): chunk A given back twice, and again
 * once B, two chunks on, holds A's ring slot, is refused with -ESTALE and
 * changes nothing (returned stays; B still held until its own put). */
static void gpu_engine_stale_put(vfgx_ctx *ctx)
{
	struct vfgx_chunk_stats before = { .argsz = sizeof(before) };
	struct vfgx_chunk_stats after = { .argsz = sizeof(after) };
	struct vfgx_chunk *c;
	uint64_t a_index = 0, b_index = 0;
	uint32_t a_slot = 0;
	bool have_a = false, have_b = false;
	struct run r;
	int ret;

	if (open_run(ctx, &r,
		     "memory_regions: [{name: r, kind: pinned, buf_size: 2048, num_bufs: 8192}]\n"
		     "interfaces:\n  - backend: loopback\n    rx: {queues: [{id: 0, memory_region: r}]}\n"
		     "    loopback: { packets: 1280, flows: 1 }\n"
		     "pipeline:\n  device: gpu\n"
		     "  chunks: { payload_bytes: 512, packets: 64, in_flight: 2, mem: gpu }\n"))
		return;
	CHECK(vfgx_pipeline_start(r.pl) == 0, "start");
	while ((ret = vfgx_chunk_get(r.pl, 2000, &c)) != -ENODATA) {
		if (ret) {
			CHECK(0, "stale put (gpu engine): get: %d", ret);
			break;
		}
		if (!have_a) {
			have_a = true;
			a_index = c->index;
			a_slot = c->ring_slot;
			CHECK(vfgx_chunk_put(r.pl, c->stream, a_index) == 0, "put A");
			CHECK(vfgx_chunk_put(r.pl, 0, a_index) == -ESTALE,
			      "a second put of A: %s", vfgx_last_error(ctx));
			continue;
		}
		if (!have_b && c->ring_slot == a_slot) {
			have_b = true;
			b_index = c->index;
			CHECK(vfgx_chunk_stats(r.pl, &before) == 0, "stats");
			CHECK(vfgx_chunk_put(r.pl, 0, a_index) == -ESTALE &&
			      strstr(vfgx_last_error(ctx), "which is not held"),
			      "A's stale put while B holds its slot: %s", vfgx_last_error(ctx));
			CHECK(vfgx_chunk_stats(r.pl, &after) == 0 && after.returned == before.returned,
			      "the stale put counted as returned");
			CHECK(vfgx_chunk_put(r.pl, 0, b_index) == 0, "put B: %s", vfgx_last_error(ctx));
			CHECK(vfgx_chunk_put(r.pl, 0, b_index) == -ESTALE, "a second put of B");
			continue;
		}
		CHECK(vfgx_chunk_put(r.pl, c->stream, c->index) == 0, "put");
	}
	vfgx_pipeline_stop(r.pl);
	CHECK(have_a && have_b && b_index == a_index + 2,
	      "stale put (gpu engine): chunks A %llu and B %llu in one slot",
	      (unsigned long long)a_index, (unsigned long long)b_index);
	printf("ok   gpu engine refuses a stale put: chunk %llu's put after chunk %llu took its slot\n",
	       (unsigned long long)a_index, (unsigned long long)b_index);
	close_run(&r);
}

/* The gpu engine's clock and its waits: a paced lossy stream whose
 * chunks close by timeout_ms (the feeder's tick items), and a consumer
 * that holds its first chunks while the GPU needs their slots (the
 * kernel waits, counted, and loses nothing). */
static void gpu_timeout_backpressure(vfgx_ctx *ctx)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	uint64_t bad = 0, timed_out = 0, chunks = 0;
	struct vfgx_chunk *c;
	struct run r;
	int ret;

	if (open_run(ctx, &r,
		     "memory_regions: [{name: r, kind: pinned, buf_size: 2048, num_bufs: 8192}]\n"
		     "interfaces:\n  - backend: loopback\n    rx: {queues: [{id: 0, memory_region: r}]}\n"
		     "    loopback: { packets: 4000, flows: 1, rate_pps: 20000, loss: 0.05, seed: 5 }\n"
		     "pipeline:\n  device: gpu\n"
		     "  chunks: { payload_bytes: 512, packets: 64, in_flight: 2, close_distance: 2,"
		     " timeout_ms: 5, mem: pinned }\n"))
		return;
	CHECK(vfgx_pipeline_start(r.pl) == 0, "start");
	while ((ret = vfgx_chunk_get(r.pl, 2000, &c)) != -ENODATA) {
		CHECK(ret == 0, "get: %d", ret);
		if (ret)
			break;
		bad += check_host(c, c->data, c->present, c->lens);
		timed_out += (c->flags & VFGX_CHUNK_BY_TIMEOUT) != 0;
		if (chunks++ < 3) {
			struct timespec hold = { 0, 30000000 };

			nanosleep(&hold, NULL);
		}
		vfgx_chunk_put(r.pl, c->stream, c->index);
	}
	vfgx_pipeline_stop(r.pl);
	CHECK(vfgx_chunk_stats(r.pl, &cs) == 0, "stats");
	CHECK(bad == 0, "timeout/backpressure: %llu bad bytes", (unsigned long long)bad);
	CHECK(timed_out > 0, "no chunk closed by timeout_ms (%llu chunks)", (unsigned long long)chunks);
	CHECK(cs.backpressure > 0 && cs.backpressure_drops == 0,
	      "backpressure %llu, drops %llu", (unsigned long long)cs.backpressure,
	      (unsigned long long)cs.backpressure_drops);
	CHECK(cs.handed_out == chunks && cs.returned == chunks, "handed out %llu returned %llu of %llu",
	      (unsigned long long)cs.handed_out, (unsigned long long)cs.returned,
	      (unsigned long long)chunks);
	printf("ok   gpu engine: %llu chunks, %llu closed by timeout_ms, %llu backpressure waits, "
	       "no drop, every byte\n", (unsigned long long)chunks,
	       (unsigned long long)timed_out, (unsigned long long)cs.backpressure);
	close_run(&r);
}

/* Every chunk of stream 0 (20 complete ones) taken by a CUDA stream. */
static void stream_consumer(vfgx_ctx *ctx, const char *device)
{
	char y[512];
	enum { N = 20 };
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	size_t bytes = 64 * 512;
	uint8_t *host = NULL;
	cudaStream_t s;
	struct run r;
	uint64_t bad = 0;

	/* one flow: stream 0 gets every packet, 20 chunks of 64 */
	snprintf(y, sizeof(y),
		 "memory_regions: [{name: r, kind: pinned, buf_size: 2048, num_bufs: 4096}]\n"
		 "interfaces:\n  - backend: loopback\n    rx: {queues: [{id: 0, memory_region: r}]}\n"
		 "    loopback: { packets: 1280, flows: 1 }\n"
		 "pipeline:\n  device: %s\n  chunks: { payload_bytes: 512, packets: 64, in_flight: 4, mem: gpu }\n",
		 device);
	if (open_run(ctx, &r, y))
		return;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
	CHECK(cudaMallocHost((void **)&host, bytes * N) == cudaSuccess, "host buffer");
	for (uint64_t k = 0; k < N; k++) {
		const struct vfgx_chunk *slot = vfgx_chunk_slot(r.pl, 0, (uint32_t)(k % 4));

		CHECK(vfgx_chunk_stream_wait(r.pl, 0, k, s) == 0, "stream_wait: %s", vfgx_last_error(ctx));
		CHECK(cudaMemcpyAsync(host + k * bytes, slot->dev_data, bytes,
				      cudaMemcpyDeviceToHost, s) == cudaSuccess, "async copy");
		CHECK(vfgx_chunk_stream_put(r.pl, 0, k, s) == 0, "stream_put: %s", vfgx_last_error(ctx));
	}
	CHECK(vfgx_pipeline_start(r.pl) == 0, "start");
	CHECK(cudaStreamSynchronize(s) == cudaSuccess, "stream sync");
	while (!vfgx_pipeline_done(r.pl))
		;
	vfgx_pipeline_stop(r.pl);
	for (uint64_t k = 0; k < N; k++)
		for (uint32_t i = 0; i < 64; i++)
			for (uint32_t j = 0; j < 454; j++) /* 512 B frames: 454 B after the app header */
				bad += host[k * bytes + i * 512 + j] != vfgx_pattern_byte(0, k * 64 + i, j);
	CHECK(vfgx_chunk_stats(r.pl, &cs) == 0 && cs.complete == N && cs.handed_out == 0,
	      "stream consumer: %llu complete, %llu handed out", (unsigned long long)cs.complete,
	      (unsigned long long)cs.handed_out);
	CHECK(bad == 0, "stream consumer: %llu bad bytes", (unsigned long long)bad);
	printf("ok   CUDA stream consumer (%s engine): %d chunks waited for and returned on the GPU, every byte\n",
	       device, N);
	/* the pipeline (and a persistent kernel) first: cudaFreeHost waits
	 * for all work on the device */
	close_run(&r);
	cudaFreeHost(host);
	cudaStreamDestroy(s);
}

/* faults: loss, reorder, duplicates, corruption; chunks closed by
 * distance and by the ring; 3 streams, one without a ring */
static void faults_cases(vfgx_ctx *ctx)
{
	parity(ctx, "faults", "gpu",
	       "packets: 60000, flows: 3, packet_size: 600, loss: 0.01, reorder: 0.05, "
	       "reorder_distance: 40, duplicate: 0.02, corrupt: 0.01, seed: 7",
	       "payload_bytes: 600, packets: 64, streams: 2, in_flight: 4, close_distance: 2",
	       "persistent", 64, 600, true);
	parity(ctx, "faults", "pinned",
	       "packets: 30000, flows: 2, packet_size: 300, loss: 0.02, reorder: 0.05, "
	       "reorder_distance: 300, duplicate: 0.02, seed: 9",
	       "payload_bytes: 256, packets: 100, streams: 2, in_flight: 3",
	       "per_burst", 100, 256, true);
}

/* test_chunks_gpu [--faults N]: with --faults, only the two faults cases,
 * N times (the gpu engine differed from the cpu engine in one of 7 runs
 * on an H200, 2026-11-30: this repeats it, naming the chunk). */
int main(int argc, char **argv)
{
	vfgx_ctx *ctx;
	int n = 0, repeat = 0;

	if (argc == 3 && strcmp(argv[1], "--faults") == 0) {
		repeat = atoi(argv[2]);
	} else if (argc != 1) {
		fprintf(stderr, "usage: test_chunks_gpu [--faults N]\n");
		return 2;
	}
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("SKIP: no GPU (cudaGetDeviceCount found none)\n");
		return 77;
	}
	if (vfgx_ctx_create(&ctx))
		return 1;
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	if (repeat > 0) {
		int runs_failed = 0;

		for (int i = 0; i < repeat; i++) {
			int before = failures;

			faults_cases(ctx);
			runs_failed += failures != before;
		}
		vfgx_ctx_destroy(ctx);
		printf("test_chunks_gpu --faults %d: %d of %d runs differed\n", repeat, runs_failed,
		       repeat);
		return failures ? 1 : 0;
	}
	consume_and_check(ctx, "gpu");
	consume_and_check(ctx, "pinned");
	cpu_engine_held(ctx);
	get_stream_put(ctx, "cpu");
	get_stream_put(ctx, "gpu");
	stream_consumer(ctx, "cpu");
	stream_consumer(ctx, "gpu");
	gpu_host_refused(ctx);
	gpu_engine_stale_put(ctx);
	gpu_timeout_backpressure(ctx);
	faults_cases(ctx);
	/* hostile placement: a 4-byte field of the payload, far jumps */
	parity(ctx, "field", "gpu",
	       "packets: 20000, flows: 2, packet_size: 200, seed: 11",
	       "payload_bytes: 256, packets: 32, streams: 2, in_flight: 4, place: field, "
	       "field_offset: 2, field_size: 4, field_step: 3",
	       "graph", 32, 256, true);
	/* a payload larger than the slot: out of range on both */
	parity(ctx, "too big", "gpu",
	       "packets: 5000, flows: 1, packet_size: 700, seed: 3",
	       "payload_bytes: 512, packets: 64, in_flight: 2",
	       "persistent", 64, 512, false);
	vfgx_ctx_destroy(ctx);
	printf("%s\n", failures ? "test_chunks_gpu: FAILED" : "test_chunks_gpu: all passed");
	return failures ? 1 : 0;
}
