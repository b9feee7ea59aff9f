/* gpu_consumer.cu - chunks consumed by a persistent kernel of the
 * application's own, through the device chunk API (vfgx/chunk_device.h):
 * no vfgx_chunk_get, no cuStreamWaitValue, no launch per chunk.  One
 * block waits for chunk n of stream 0, sums the bytes of the packets that
 * arrived, records when it saw the chunk, gives it back and goes on to
 * n + 1, until the pipeline's end word says no chunk will come.
 *
 *     gpu_consumer OUT.txt [--engine gpu|cpu] [--mem gpu|pinned]
 *                          [--chunks N] [--rate PPS] [--loss P]
 *     gpu_consumer OUT.txt --reference [--chunks N] [--rate PPS] [--loss P]
 *     gpu_consumer OUT.txt --hold [--engine ...] [--mem ...]
 *     gpu_consumer OUT.txt --fault [--engine ...] [--mem ...]
 *
 * OUT.txt gets one line per chunk: "index present_count byte_sum".
 * --reference takes the same stream's chunks in host memory on the CPU
 * (vfgx_chunk_get) and sums them there: the two files are the same
 * (tests/gpu/test-gpu-user.sh compares them).  With the gpu engine the
 * consumer also reads the engine's per-slot record of the chunk, and the
 * last line printed gives the latency from the chunk's last packet
 * written to the consumer seeing it ready, both on the GPU's clock
 * (%globaltimer): `vfgx bench chunks` reports it.  --hold: the consumer
 * never gives a chunk back; after 2 s the program stops the pipeline,
 * which ends (its waits for the held slots counted as backpressure, what
 * waited dropped) instead of hanging.  --fault: the consumer writes through
 * a null pointer at its 4th chunk (an illegal address: the GPU context is
 * lost, the pipeline's own kernel with it); the program sees its stream
 * fail, stops the pipeline and ends with one line naming the fault (the
 * library's error lines kept, the first one joined to it) and the report
 * line, exit 1, instead of hanging. */
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <pthread.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include <vfgx/chunk_device.h>
#include <vfgx/vfgx.h>

#define THREADS 256

struct result {
	unsigned long long index, present, sum, seen_ns;
};

static __device__ unsigned long long now_gt(void)
{
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* One block, resident until the end: out[k] for the k-th chunk seen,
 * *count of them, *skipped chunks that got no packet.  seen_ns: from the
 * chunk's last packet written to this block seeing it (gpu engine), 0
 * without the engine's records. */
static __global__ void consume(struct vfgx_chunk_device v, struct result *out,
			       unsigned int cap, unsigned int *count,
			       unsigned long long *skipped, bool hold, bool fault,
			       unsigned long long *bad)
{
	__shared__ int state;
	__shared__ unsigned long long seen, part[THREADS / 32];
	unsigned int k = 0;

	for (uint64_t n = 0;; n++) {
		if (threadIdx.x == 0) {
			state = vfgx_dev_chunk_wait(&v, 0, n);
			seen = now_gt();
		}
		__syncthreads();
		if (state == VFGX_DEV_CHUNK_END)
			break;
		if (state == VFGX_DEV_CHUNK_SKIPPED) {
			if (threadIdx.x == 0)
				(*skipped)++;
			__syncthreads();
			continue;
		}
		/* --fault: bad is the host's NULL */
		if (fault && n == 3 && threadIdx.x == 0)
			*(volatile unsigned long long *)bad = n;
		const uint8_t *d = vfgx_dev_chunk_data(&v, 0, n);
		const uint64_t *present = vfgx_dev_chunk_present(&v, 0, n);
		const uint32_t *lens = vfgx_dev_chunk_lens(&v, 0, n);
		unsigned long long sum = 0, in = 0;

		for (uint32_t p = 0; p < v.packets; p++) {
			if (!(present[p / 64] >> (p % 64) & 1))
				continue;
			in++;
			for (uint32_t b = threadIdx.x; b < lens[p]; b += THREADS)
				sum += d[(size_t)p * v.payload_bytes + b];
		}
		for (int o = 16; o; o >>= 1)
			sum += __shfl_xor_sync(0xffffffffu, sum, o);
		if (threadIdx.x % 32 == 0)
			part[threadIdx.x / 32] = sum;
		__syncthreads();
		if (threadIdx.x == 0) {
			sum = 0;
			for (int w = 0; w < THREADS / 32; w++)
				sum += part[w];
			if (k < cap) {
				out[k].index = n;
				out[k].present = in;
				out[k].sum = sum;
				out[k].seen_ns = v.meta ? seen - v.meta[n % v.in_flight].last_packet_gt : 0;
			}
			k++;
			if (!hold)
				vfgx_dev_chunk_put(&v, 0, n); /* every read above is done */
		}
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*count = k;
}

/* --trace: where main is, and the ring's words, every second on stderr */
static const char *volatile phase = "setup";
static vfgx_pipeline *trace_pl;
static struct vfgx_chunk_device *trace_v;

static void *trace(void *arg)
{
	(void)arg;
	for (;;) {
		struct vfgx_chunk_stats st = { .argsz = sizeof(st) };
		char w[512];
		int n = 0;

		sleep(1);
		if (trace_pl)
			vfgx_chunk_stats(trace_pl, &st);
		w[0] = 0;
		/* pinned words: their GPU address is the host's (unified addressing) */
		for (uint32_t r = 0; trace_v && trace_v->ready && r < trace_v->in_flight && n < 400; r++)
			n += snprintf(w + n, sizeof(w) - n, " %u:%llu/%llu", r,
				      (unsigned long long)((volatile const uint64_t *)trace_v->ready)[r],
				      (unsigned long long)((volatile uint64_t *)trace_v->returned)[r]);
		fprintf(stderr, "trace: %s: complete %llu closed %llu backpressure %llu drops %llu; end %llu; ready/returned%s\n",
			phase, (unsigned long long)st.complete, (unsigned long long)st.closed,
			(unsigned long long)st.backpressure, (unsigned long long)st.backpressure_drops,
			trace_v && trace_v->end ? (unsigned long long)*(volatile const uint64_t *)trace_v->end : 0ull,
			w);
	}
	return NULL;
}

static const char *yaml_fmt =
	"log_level: warn\n"
	"memory_regions: [{name: r, kind: %s, buf_size: 2048, num_bufs: 8192}]\n"
	"interfaces:\n"
	"  - backend: loopback\n"
	"    rx: {queues: [{id: 0, memory_region: r, batch_size: 64}]}\n"
	"    loopback: {packets: %lu, packet_size: 560, flows: 1, loss: %g, seed: 7,\n"
	"               rate_pps: %lu}\n"
	"pipeline:\n"
	"  device: %s\n"
	"  chunks: {payload_bytes: 512, packets: 64, in_flight: 8, mem: %s}\n";

/* --fault: the library's error lines kept (the first joined to the one
 * line the program ends with), the rest of its log on stderr as before */
static char lib_error[512];

static void keep_errors(void *user, enum vfgx_log_level level, const char *msg)
{
	(void)user;
	if (level != VFGX_LOG_ERROR)
		fprintf(stderr, "vfgx: %s: %s\n", level == VFGX_LOG_WARN ? "warn" : "info", msg);
	else if (!lib_error[0])
		snprintf(lib_error, sizeof(lib_error), "%s", msg);
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "gpu_consumer: %s: %s\n", #x, cudaGetErrorString(e_)); goto out; } } while (0)

static int write_out(const char *path, const std::vector<result> &r)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "gpu_consumer: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (const result &x : r)
		fprintf(f, "%llu %llu %llu\n", x.index, x.present, x.sum);
	if (fclose(f)) {
		fprintf(stderr, "gpu_consumer: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The same stream in host memory, summed on the CPU. */
static int reference(vfgx_pipeline *pl, std::vector<result> &r)
{
	struct vfgx_chunk *c;
	int ret;

	while ((ret = vfgx_chunk_get(pl, 1000, &c)) != -ENODATA) {
		if (ret)
			continue;
		result x = { c->index, 0, 0, 0 };

		for (uint32_t p = 0; p < c->packets; p++) {
			if (!(c->present[p / 64] >> (p % 64) & 1))
				continue;
			x.present++;
			for (uint32_t b = 0; b < c->lens[p]; b++)
				x.sum += ((const uint8_t *)c->data)[(size_t)p * c->payload_bytes + b];
		}
		r.push_back(x);
		vfgx_chunk_put(pl, c->stream, c->index);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *engine = "gpu", *mem = "gpu";
	unsigned long chunks = 1000, rate = 640000;
	double loss = 0;
	bool ref = false, hold = false, tr = false, fault = false;
	cudaError_t failed = cudaSuccess;
	static char yaml[2048];
	struct vfgx_config *cfg = NULL;
	vfgx_pipeline *pl = NULL;
	vfgx_port *port = NULL;
	vfgx_ctx *ctx = NULL;
	cudaStream_t s = NULL;
	struct result *dout = NULL;
	unsigned int *dcount = NULL, count = 0;
	unsigned long long *dskipped = NULL, skipped = 0;
	struct vfgx_chunk_device v;
	struct vfgx_chunk_stats st = { .argsz = sizeof(st) };
	std::vector<result> res;
	int rc = 1;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--engine") && i + 1 < argc)
			engine = argv[++i];
		else if (!strcmp(argv[i], "--mem") && i + 1 < argc)
			mem = argv[++i];
		else if (!strcmp(argv[i], "--chunks") && i + 1 < argc)
			chunks = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
			rate = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--loss") && i + 1 < argc)
			loss = strtod(argv[++i], NULL);
		else if (!strcmp(argv[i], "--reference"))
			ref = true;
		else if (!strcmp(argv[i], "--hold"))
			hold = true;
		else if (!strcmp(argv[i], "--fault"))
			fault = true;
		else if (!strcmp(argv[i], "--trace"))
			tr = true;
		else
			argc = 0;
	}
	if (argc < 2 || !chunks || (ref && hold) || (fault && (ref || hold)) || (strcmp(engine, "gpu") && strcmp(engine, "cpu")) ||
	    (strcmp(mem, "gpu") && strcmp(mem, "pinned"))) {
		fprintf(stderr, "usage: gpu_consumer OUT.txt [--engine gpu|cpu] [--mem gpu|pinned] [--chunks N] [--rate PPS] [--loss P] [--hold | --fault]\n"
			"       gpu_consumer OUT.txt --reference [--chunks N] [--rate PPS] [--loss P]\n");
		return 2;
	}
	if (tr) {
		pthread_t t;

		pthread_create(&t, NULL, trace, NULL);
		pthread_detach(t);
	}
	snprintf(yaml, sizeof(yaml), yaml_fmt, ref ? "host" : "pinned", chunks * 64, loss, rate,
		 ref ? "cpu" : engine, ref ? "host" : mem);
	if (!ref) {
		struct cudaFuncAttributes fa;

		/* memory and the kernel's module before the pipeline: the gpu
		 * engine's persistent kernel runs from vfgx_pipeline_create on,
		 * and an allocation, a lazy module load or a device-wide
		 * synchronize would wait for it */
		CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
		CK(cudaMalloc(&dout, sizeof(*dout) * chunks));
		CK(cudaMalloc(&dcount, sizeof(*dcount)));
		CK(cudaMalloc(&dskipped, sizeof(*dskipped)));
		CK(cudaMemset(dskipped, 0, sizeof(*dskipped)));
		CK(cudaFuncGetAttributes(&fa, consume));
		CK(cudaStreamSynchronize(0));
	}
	if (!vfgx_ctx_create(&ctx) && fault)
		vfgx_log_set_sink(ctx, keep_errors, NULL);
	if (!ctx ||
	    vfgx_config_load_string(ctx, yaml, strlen(yaml), "gpu_consumer", &cfg) ||
	    vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port) ||
	    vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl)) {
		fprintf(stderr, "gpu_consumer: %s\n", ctx ? vfgx_last_error(ctx) : "no memory");
		goto out;
	}
	if (ref) {
		if (vfgx_pipeline_start(pl) || reference(pl, res)) {
			fprintf(stderr, "gpu_consumer: %s\n", vfgx_last_error(ctx));
			goto out;
		}
		vfgx_pipeline_stop(pl);
	} else {
		v.argsz = sizeof(v);
		if (vfgx_chunk_device(pl, &v)) {
			fprintf(stderr, "gpu_consumer: %s\n", vfgx_last_error(ctx));
			goto out;
		}
		trace_pl = pl;
		trace_v = &v;
		phase = "start";
		if (vfgx_pipeline_start(pl)) {
			fprintf(stderr, "gpu_consumer: %s\n", vfgx_last_error(ctx));
			goto out;
		}
		phase = "launch";
		consume<<<1, THREADS, 0, s>>>(v, dout, (unsigned int)chunks, dcount, dskipped,
					      hold, fault, NULL);
		CK(cudaGetLastError());
		phase = "run";
		uint64_t t0 = vfgx_now_ns();

		while (!vfgx_pipeline_done(pl) && (!hold || vfgx_now_ns() - t0 < 2000000000ull)) {
			struct timespec ts = { 0, 1000000 };

			/* the consumer failed: no chunk will be given back */
			if (fault && (failed = cudaStreamQuery(s)) != cudaErrorNotReady &&
			    failed != cudaSuccess)
				break;
			nanosleep(&ts, NULL);
		}
		phase = "stop";
		vfgx_pipeline_stop(pl); /* the end word: the consumer returns */
		phase = "consumer's end";
		if (fault) {
			/* after a fault every CUDA call fails: the counts are
			 * the library's alone */
			failed = cudaStreamSynchronize(s);
			if (failed != cudaSuccess)
				goto report;
		}
		CK(cudaStreamSynchronize(s));
		phase = "results";
		CK(cudaMemcpy(&count, dcount, sizeof(count), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(&skipped, dskipped, sizeof(skipped), cudaMemcpyDeviceToHost));
		res.resize(std::min<unsigned long>(count, chunks));
		CK(cudaMemcpy(res.data(), dout, sizeof(result) * res.size(),
			      cudaMemcpyDeviceToHost));
	}
report:
	if (vfgx_chunk_stats(pl, &st) || write_out(argv[1], res))
		goto out;
	if (failed != cudaSuccess)
		fprintf(stderr, "gpu_consumer: the consumer kernel failed: %s; the pipeline stopped%s%s\n",
			cudaGetErrorString(failed), lib_error[0] ? ": " : "", lib_error);
	printf("gpu_consumer (%s%s): %zu chunks, %llu skipped, complete %llu closed %llu backpressure %llu backpressure_drops %llu -> %s\n",
	       ref ? "reference, cpu engine, host memory" : engine,
	       hold ? ", --hold" : fault ? ", --fault" : "",
	       res.size(), skipped, (unsigned long long)st.complete,
	       (unsigned long long)st.closed, (unsigned long long)st.backpressure,
	       (unsigned long long)st.backpressure_drops, argv[1]);
	if (!ref && v.meta && !res.empty()) {
		std::vector<double> us;

		for (const result &x : res)
			us.push_back((double)x.seen_ns / 1000.0);
		std::sort(us.begin(), us.end());
		printf("latency_us last_packet_to_consumer p50 %.3f p99 %.3f max %.3f n %zu\n",
		       us[us.size() / 2], us[std::min(us.size() - 1, us.size() * 99 / 100)],
		       us.back(), us.size());
	}
	rc = res.empty() || failed != cudaSuccess ? 1 : 0;
out:
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	if (ctx)
		vfgx_ctx_destroy(ctx);
	cudaFree(dout);
	cudaFree(dcount);
	cudaFree(dskipped);
	if (s)
		cudaStreamDestroy(s);
	return rc;
}
