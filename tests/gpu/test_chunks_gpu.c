/* test_chunks_gpu.c - chunks in GPU and pinned memory on a GPU machine
 * (exit 77 without one).  The cpu engine assembles them; a consumer copies
 * each GPU chunk back and checks every byte, mask and length against the
 * loopback generator; pinned chunks are checked in place and through
 * their device view; and a CUDA stream consumes chunks with no CPU in its
 * loop: vfgx_chunk_stream_wait, an async copy of the chunk's slot,
 * vfgx_chunk_stream_put, for every chunk of the run, enqueued before the
 * pipeline starts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void consume_and_check(vfgx_ctx *ctx, const char *mem)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	size_t bytes = 64 * 512;
	uint8_t *data = malloc(bytes);
	uint64_t present[1], bad = 0, chunks = 0;
	uint32_t lens[64];
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
			CHECK(cudaMemcpy(data, c->data, bytes, cudaMemcpyDeviceToHost) == cudaSuccess &&
			      cudaMemcpy(present, c->present, 8, cudaMemcpyDeviceToHost) == cudaSuccess &&
			      cudaMemcpy(lens, c->lens, sizeof(lens), cudaMemcpyDeviceToHost) == cudaSuccess,
			      "copy back");
			bad += check_host(c, data, present, lens);
		} else {
			/* in place, and through the GPU's view of the same bytes */
			bad += check_host(c, c->data, c->present, c->lens);
			CHECK(cudaMemcpy(data, c->dev_data, bytes, cudaMemcpyDeviceToHost) == cudaSuccess,
			      "copy from the device view");
			CHECK(!memcmp(data, c->data, bytes), "pinned device view differs");
		}
		chunks++;
		vfgx_chunk_put(r.pl, c);
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

/* Every chunk of stream 0 (20 complete ones) taken by a CUDA stream. */
static void stream_consumer(vfgx_ctx *ctx)
{
	enum { N = 20 };
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	size_t bytes = 64 * 512;
	uint8_t *host = NULL;
	cudaStream_t s;
	struct run r;
	uint64_t bad = 0;

	/* one flow: stream 0 gets every packet, 20 chunks of 64 */
	if (open_run(ctx, &r, "interfaces:\n  - backend: loopback\n    loopback: { packets: 1280, flows: 1 }\n"
			      "pipeline:\n  device: cpu\n  chunks: { payload_bytes: 512, packets: 64, in_flight: 4, mem: gpu }\n"))
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
	printf("ok   CUDA stream consumer: %d chunks waited for and returned on the GPU, every byte\n", N);
	cudaFreeHost(host);
	cudaStreamDestroy(s);
	close_run(&r);
}

int main(void)
{
	vfgx_ctx *ctx;
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("SKIP: no GPU (cudaGetDeviceCount found none)\n");
		return 77;
	}
	if (vfgx_ctx_create(&ctx))
		return 1;
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	consume_and_check(ctx, "gpu");
	consume_and_check(ctx, "pinned");
	stream_consumer(ctx);
	vfgx_ctx_destroy(ctx);
	printf("%s\n", failures ? "test_chunks_gpu: FAILED" : "test_chunks_gpu: all passed");
	return failures ? 1 : 0;
}
