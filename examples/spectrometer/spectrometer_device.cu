/* spectrometer_device.cu - the spectrometer of spectrometer.cu with its
 * FFT and power stage in a persistent kernel of its own that takes the
 * chunks through the device chunk API (vfgx/chunk_device.h): no
 * vfgx_chunk_get, no stream wait, no launch per chunk.  The same stream
 * and chunks (spectrometer.h), the same spectrum file:
 *
 *     spectrometer_device OUT.txt [--packets N]
 *
 * cuFFT cannot be called from a kernel that is already running (its device
 * API, cuFFTDx, is not part of the CUDA toolkit), so each block does its
 * FFT itself: a radix-2 decimation-in-time FFT of 4096 points in shared
 * memory (12 passes of 2048 butterflies, the twiddles from a table made
 * once in double precision).  A chunk of 64 packets holds 8 FFTs' samples;
 * block b of the 8 resident blocks transforms FFT b of every chunk and adds
 * its power into a spectrum of its own (no atomics on the spectrum), the
 * 8 are added at the end.  The last block done with a chunk gives it back
 * (a counter per ring slot).  tests/gpu/test-gpu-device.sh compares the
 * file with spectrometer_fftw's (FFTW on the CPU) and spectrometer's
 * (cuFFT). */
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#include <vfgx/chunk_device.h>
#include <vfgx/vfgx.h>

#include "spectrometer.h"

#define THREADS 1024               /* two butterflies a thread a pass */
#define LOG2_NFFT 12
#define MAX_SLOTS 64               /* ring slots (chunks.in_flight) at most */

static_assert(1 << LOG2_NFFT == SPEC_NFFT, "SPEC_NFFT is 2^LOG2_NFFT");
static_assert(SPEC_NFFT / 2 == 2 * THREADS, "two butterflies a thread");
static_assert(SPEC_SAMPLES % SPEC_NFFT == 0, "whole FFTs a chunk");

struct counts {
	unsigned long long chunks, skipped;
};

/* Block b: FFT b of each chunk of stream 0, n = 0, 1, ... until the end.
 * spec: SPEC_FFTS rows of SPEC_NFFT, row b this block's; done[r]: blocks
 * finished with the chunk in ring slot r. */
static __global__ void __launch_bounds__(THREADS)
spectrometer(struct vfgx_chunk_device v, const float2 *twiddle, double *spec,
	     unsigned int *done, struct counts *cnt)
{
	__shared__ float2 x[SPEC_NFFT];
	__shared__ int state;
	const uint32_t b = blockIdx.x;
	double *row = spec + (size_t)b * SPEC_NFFT;

	for (uint64_t n = 0;; n++) {
		if (threadIdx.x == 0)
			state = vfgx_dev_chunk_wait(&v, 0, n);
		__syncthreads();
		if (state == VFGX_DEV_CHUNK_END)
			break;
		if (state == VFGX_DEV_CHUNK_SKIPPED) {
			if (b == 0 && threadIdx.x == 0)
				cnt->skipped++;
			__syncthreads(); /* state is rewritten for n + 1 */
			continue;
		}
		const int8_t *d = (const int8_t *)vfgx_dev_chunk_data(&v, 0, n);
		const uint64_t *present = vfgx_dev_chunk_present(&v, 0, n);

		/* unpack samples b * NFFT .. in bit-reversed order; a missing
		 * packet's samples are zeros */
		for (uint32_t i = threadIdx.x; i < SPEC_NFFT; i += THREADS) {
			uint32_t s = b * SPEC_NFFT + i, pkt = s / (SPEC_PAYLOAD / 2);
			bool in = present[pkt / 64] >> (pkt % 64) & 1;
			const int8_t *p = d + (size_t)pkt * v.payload_bytes + 2 * (s % (SPEC_PAYLOAD / 2));

			x[__brev(i) >> (32 - LOG2_NFFT)] =
				in ? make_float2((float)p[0], (float)p[1]) : make_float2(0.0f, 0.0f);
		}
		__syncthreads();
		/* every read of the chunk is done: the last block gives it back */
		if (threadIdx.x == 0) {
			uint32_t r = (uint32_t)(n % v.in_flight);

			__threadfence();
			if (atomicAdd(&done[r], 1u) == SPEC_FFTS - 1) {
				done[r] = 0; /* the slot's next chunk comes after the put */
				vfgx_dev_chunk_put(&v, 0, n);
				atomicAdd(&cnt->chunks, 1ull); /* the last block a chunk */
			}
		}
		/* 12 passes: span h = 1, 2, 4, ..., twiddle e^(-2 pi i k / N) */
		for (uint32_t h = 1, step = SPEC_NFFT / 2; h < SPEC_NFFT; h *= 2, step /= 2) {
			for (uint32_t j = threadIdx.x; j < SPEC_NFFT / 2; j += THREADS) {
				uint32_t pos = j & (h - 1), i0 = (j - pos) * 2 + pos, i1 = i0 + h;
				float2 w = twiddle[pos * step], a = x[i0], c = x[i1];
				float2 t = make_float2(w.x * c.x - w.y * c.y, w.x * c.y + w.y * c.x);

				x[i0] = make_float2(a.x + t.x, a.y + t.y);
				x[i1] = make_float2(a.x - t.x, a.y - t.y);
			}
			__syncthreads();
		}
		for (uint32_t k = threadIdx.x; k < SPEC_NFFT; k += THREADS)
			row[k] += (double)x[k].x * x[k].x + (double)x[k].y * x[k].y;
		__syncthreads(); /* x is rewritten for n + 1 */
	}
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "spectrometer_device: %s: %s\n", #x, cudaGetErrorString(e_)); goto out; } } while (0)

int main(int argc, char **argv)
{
	static char yaml[1024];
	static double part[SPEC_FFTS][SPEC_NFFT];
	static float2 tw[SPEC_NFFT / 2];
	unsigned long packets = SPEC_PACKETS_DEFAULT;
	struct vfgx_config *cfg = NULL;
	vfgx_pipeline *pl = NULL;
	vfgx_port *port = NULL;
	vfgx_ctx *ctx = NULL;
	cudaStream_t s = NULL;
	float2 *dtw = NULL;
	double *spec = NULL;
	unsigned int *done = NULL;
	struct counts *dcnt = NULL, cnt = { 0, 0 };
	struct vfgx_chunk_device v;
	struct vfgx_chunk_stats cst = { .argsz = sizeof(cst) };
	struct cudaFuncAttributes fa;
	uint64_t t0;
	double loop_s;
	int rc = 1;
	FILE *f;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--packets") && i + 1 < argc)
			packets = strtoul(argv[++i], NULL, 10);
		else
			argc = 0;
	}
	if (argc < 2 || !packets) {
		fprintf(stderr, "usage: spectrometer_device OUT.txt [--packets N]\n");
		return 2;
	}
	/* spectrometer.cu's config: the same chunks, written by the cpu
	 * engine into GPU memory */
	snprintf(yaml, sizeof(yaml), SPEC_YAML("gpu"), packets);
	for (int k = 0; k < SPEC_NFFT / 2; k++) {
		double a = -2.0 * M_PI * k / SPEC_NFFT;

		tw[k] = make_float2((float)cos(a), (float)sin(a));
	}
	/* memory and the kernel's module before the pipeline: the gpu
	 * engine's persistent kernel runs from vfgx_pipeline_create on, and
	 * an allocation, a lazy module load or a device-wide synchronize
	 * would wait for it */
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMalloc(&dtw, sizeof(tw)));
	CK(cudaMalloc(&spec, sizeof(part)));
	CK(cudaMalloc(&done, sizeof(*done) * MAX_SLOTS));
	CK(cudaMalloc(&dcnt, sizeof(*dcnt)));
	CK(cudaMemcpy(dtw, tw, sizeof(tw), cudaMemcpyHostToDevice));
	CK(cudaMemset(spec, 0, sizeof(part)));
	CK(cudaMemset(done, 0, sizeof(*done) * MAX_SLOTS));
	CK(cudaMemset(dcnt, 0, sizeof(*dcnt)));
	CK(cudaFuncGetAttributes(&fa, spectrometer));
	CK(cudaStreamSynchronize(0));
	if (vfgx_ctx_create(&ctx) ||
	    vfgx_config_load_string(ctx, yaml, strlen(yaml), "spectrometer_device", &cfg) ||
	    vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port) ||
	    vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl)) {
		fprintf(stderr, "spectrometer_device: %s\n", ctx ? vfgx_last_error(ctx) : "no memory");
		goto out;
	}
	v.argsz = sizeof(v);
	if (vfgx_chunk_device(pl, &v)) {
		fprintf(stderr, "spectrometer_device: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	if (v.in_flight > MAX_SLOTS || v.payload_bytes < SPEC_PAYLOAD || v.packets != SPEC_PACKETS) {
		fprintf(stderr, "spectrometer_device: chunks of %u packets x %u B, %u in flight: want %u x %u B, at most %u\n",
			v.packets, v.payload_bytes, v.in_flight, SPEC_PACKETS, SPEC_PAYLOAD, MAX_SLOTS);
		goto out;
	}
	t0 = vfgx_now_ns();
	if (vfgx_pipeline_start(pl)) {
		fprintf(stderr, "spectrometer_device: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	/* chunks wait in their slots (backpressure) until it runs */
	spectrometer<<<SPEC_FFTS, THREADS, 0, s>>>(v, dtw, spec, done, dcnt);
	if (cudaGetLastError() != cudaSuccess) {
		fprintf(stderr, "spectrometer_device: launching the FFT kernel failed\n");
		vfgx_pipeline_stop(pl);
		goto out;
	}
	while (!vfgx_pipeline_done(pl)) {
		struct timespec ts = { 0, 1000000 };
		cudaError_t e = cudaStreamQuery(s);

		if (e != cudaSuccess && e != cudaErrorNotReady) {
			fprintf(stderr, "spectrometer_device: the FFT kernel failed: %s\n",
				cudaGetErrorString(e));
			vfgx_pipeline_stop(pl);
			goto out;
		}
		nanosleep(&ts, NULL);
	}
	vfgx_pipeline_stop(pl); /* the end word: the kernel returns */
	CK(cudaStreamSynchronize(s));
	loop_s = (double)(vfgx_now_ns() - t0) / 1e9;
	CK(cudaMemcpy(part, spec, sizeof(part), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&cnt, dcnt, sizeof(cnt), cudaMemcpyDeviceToHost));
	if (vfgx_chunk_stats(pl, &cst))
		goto out;
	f = fopen(argv[1], "w");
	if (!f) {
		fprintf(stderr, "spectrometer_device: %s: %s\n", argv[1], strerror(errno));
		goto out;
	}
	for (int ch = 0; ch < SPEC_NFFT; ch++) {
		double p = 0;

		for (int b = 0; b < SPEC_FFTS; b++)
			p += part[b][ch];
		fprintf(f, "%.10e\n", p);
	}
	if (fclose(f)) {
		fprintf(stderr, "spectrometer_device: %s: %s\n", argv[1], strerror(errno));
		goto out;
	}
	printf("spectrometer_device (persistent kernel, radix-2 FFT): %llu chunks, %llu skipped, %d channels -> %s; complete %llu closed %llu backpressure waits %llu; chunks_per_s %.1f\n",
	       cnt.chunks, cnt.skipped, SPEC_NFFT, argv[1],
	       (unsigned long long)cst.complete, (unsigned long long)cst.closed,
	       (unsigned long long)cst.backpressure, loop_s > 0 ? (double)cnt.chunks / loop_s : 0.0);
	rc = cnt.chunks ? 0 : 1;
out:
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	if (ctx)
		vfgx_ctx_destroy(ctx);
	cudaFree(dtw);
	cudaFree(spec);
	cudaFree(done);
	cudaFree(dcnt);
	if (s)
		cudaStreamDestroy(s);
	return rc;
}
