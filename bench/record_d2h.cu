/* record_d2h.cu - the pinned-staging copy floor for bench/record.py
 * --device gpu (issue 42): the copies the recorder makes for each chunk in
 * GPU memory (src/record/record.c rec_stage: the slots, the present
 * bitmap and the lengths, cudaMemcpyAsync device to pinned host on one
 * non-blocking stream, then cudaStreamSynchronize), and nothing else, for
 * COUNT chunks through a ring of RING pinned staging buffers.  Prints one
 * JSON line: {"bytes", "seconds", "bytes_per_s", "chunks", "chunks_per_s"}
 * (bytes: the slot bytes; record.py compares chunks per second, since
 * the recording's bytes count its records' metadata and padding too).
 *
 *     record_d2h PACKETS PAYLOAD_BYTES COUNT RING [GPU]
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void check(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return;
	fprintf(stderr, "record_d2h: %s: %s\n", what, cudaGetErrorString(e));
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: record_d2h PACKETS PAYLOAD_BYTES COUNT RING [GPU]\n");
		return 2;
	}
	size_t packets = strtoul(argv[1], NULL, 10), payload = strtoul(argv[2], NULL, 10);
	unsigned long count = strtoul(argv[3], NULL, 10), ring = strtoul(argv[4], NULL, 10);
	int gpu = argc > 5 ? atoi(argv[5]) : 0;
	size_t dbytes = packets * payload, pbytes = (packets + 63) / 64 * 8, lbytes = packets * 4;
	uint8_t *dev, *host;
	cudaStream_t s;
	double t0, t1;

	if (!packets || !payload || !count || !ring || ring > 64) {
		fprintf(stderr, "record_d2h: PACKETS, PAYLOAD_BYTES, COUNT > 0, RING 1..64\n");
		return 2;
	}
	check(cudaSetDevice(gpu), "cudaSetDevice");
	check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
	/* RING chunks' rings in GPU memory (slots, bitmap, lengths, as a
	 * chunk ring holds them), RING staging buffers in pinned memory */
	size_t per = dbytes + pbytes + lbytes;
	check(cudaMalloc((void **)&dev, per * ring), "cudaMalloc");
	check(cudaMemset(dev, 0x5a, per * ring), "cudaMemset");
	check(cudaHostAlloc((void **)&host, per * ring, cudaHostAllocDefault), "cudaHostAlloc");
	for (unsigned long i = 0; i < ring * 2; i++) { /* warm up */
		size_t o = (i % ring) * per;
		check(cudaMemcpyAsync(host + o, dev + o, per, cudaMemcpyDeviceToHost, s), "warm-up copy");
	}
	check(cudaStreamSynchronize(s), "sync");
	t0 = now_s();
	for (unsigned long i = 0; i < count; i++) {
		size_t o = (i % ring) * per;

		check(cudaMemcpyAsync(host + o, dev + o, dbytes, cudaMemcpyDeviceToHost, s), "copy");
		check(cudaMemcpyAsync(host + o + dbytes, dev + o + dbytes, pbytes,
				      cudaMemcpyDeviceToHost, s), "copy");
		check(cudaMemcpyAsync(host + o + dbytes + pbytes, dev + o + dbytes + pbytes, lbytes,
				      cudaMemcpyDeviceToHost, s), "copy");
		check(cudaStreamSynchronize(s), "sync");
	}
	t1 = now_s();
	printf("{\"bytes\": %llu, \"seconds\": %.6f, \"bytes_per_s\": %.1f, \"chunks\": %lu, \"chunks_per_s\": %.2f}\n",
	       (unsigned long long)(dbytes * count), t1 - t0, (double)(dbytes * count) / (t1 - t0),
	       count, (double)count / (t1 - t0));
	cudaFreeHost(host);
	cudaFree(dev);
	cudaStreamDestroy(s);
	return 0;
}
