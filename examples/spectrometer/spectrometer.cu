/* spectrometer.cu - a radio-astronomy style spectrometer on chunks in GPU
 * memory: complex int8 samples (the loopback generator's payload stands in
 * for a digitiser's) arrive in chunks of 64 packets; each chunk is
 * unpacked to complex float on the GPU (missing packets as zeros, from the
 * chunk's present mask), transformed with cuFFT in batches of 4096
 * channels, and its power added to an accumulated spectrum.  At the end
 * the spectrum is written to a file, one value per line:
 *
 *     spectrometer OUT.txt [--no-fft | --alternate N] [--packets N]
 *
 * --no-fft takes and gives back every chunk without touching it (the
 * benchmark's "no consumer" side); both print the chunks per second.
 * --alternate N measures the two sides in one run: after N chunks of
 * warm-up, phases of N chunks each, the FFT on and off in the order
 * on off off on (repeated, so a steady drift cancels), and prints the
 * chunks per second of each side over the whole groups of four phases;
 * the spectrum then covers the FFT phases only.
 * spectrometer_fftw.c computes the same spectrum with FFTW on the CPU.
 *
 * The work on a chunk (unpack, FFT, accumulate) is one CUDA graph per ring
 * slot, captured before the start: a slot's addresses are fixed
 * (vfgx_chunk_slot).  The chunk goes back from the CUDA stream after its
 * graph (vfgx_chunk_stream_put), so a chunk costs the CPU one graph launch
 * and one stream write, and the CPU never waits for the GPU: the pipeline
 * reuses the slot once the stream has passed the write. */
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cufft.h>
#include <cuda_runtime.h>

#include <vfgx/vfgx.h>

#include "spectrometer.h"

static __global__ void unpack(const int8_t *data, const uint64_t *present,
			      cufftComplex *out)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; /* sample */
	uint32_t pkt = i / (SPEC_PAYLOAD / 2);
	bool in;

	if (i >= SPEC_SAMPLES)
		return;
	in = present[pkt / 64] >> (pkt % 64) & 1;
	out[i].x = in ? (float)data[2 * i] : 0.0f;
	out[i].y = in ? (float)data[2 * i + 1] : 0.0f;
}

static __global__ void accumulate(const cufftComplex *f, double *spec)
{
	uint32_t ch = blockIdx.x * blockDim.x + threadIdx.x;
	double p = 0;

	if (ch >= SPEC_NFFT)
		return;
	for (uint32_t b = 0; b < SPEC_FFTS; b++) {
		cufftComplex v = f[b * SPEC_NFFT + ch];

		p += (double)v.x * v.x + (double)v.y * v.y;
	}
	spec[ch] += p;
}

/* The graph of ring slot `d`'s work: unpack, FFT, accumulate on `s`. */
static int capture_slot(const struct vfgx_chunk *d, cudaStream_t s, cufftHandle plan,
			cufftComplex *buf, double *spec, cudaGraphExec_t *out)
{
	cudaGraph_t g = NULL;
	bool ok;

	if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
		return -1;
	unpack<<<(SPEC_SAMPLES + 255) / 256, 256, 0, s>>>((const int8_t *)d->data,
							  d->present, buf);
	ok = cufftExecC2C(plan, buf, buf, CUFFT_FORWARD) == CUFFT_SUCCESS;
	accumulate<<<(SPEC_NFFT + 255) / 256, 256, 0, s>>>(buf, spec);
	if (cudaStreamEndCapture(s, &g) != cudaSuccess || !ok ||
	    cudaGraphInstantiate(out, g, 0) != cudaSuccess) {
		if (g)
			cudaGraphDestroy(g);
		return -1;
	}
	cudaGraphDestroy(g);
	return 0;
}

/* --alternate: phases kept (whole groups of four) */
#define SPEC_PHASES_MAX 4096

/* Phase p (1-based; 0 is the warm-up) runs the FFT: on off off on. */
static bool phase_fft(unsigned long p)
{
	return p && ((p - 1) % 4 == 0 || (p - 1) % 4 == 3);
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "spectrometer: %s: %s\n", #x, cudaGetErrorString(e_)); goto out; } } while (0)

int main(int argc, char **argv)
{
	static char yaml[1024];
	unsigned long packets = SPEC_PACKETS_DEFAULT;
	static double host_spec[SPEC_NFFT];
	struct vfgx_config *cfg = NULL;
	vfgx_pipeline *pl = NULL;
	vfgx_port *port = NULL;
	cufftComplex *buf = NULL;
	double *spec = NULL;
	cufftHandle plan = 0;
	cudaStream_t s = NULL;
	cudaGraphExec_t *graphs = NULL;
	uint32_t slots = 0;
	struct vfgx_chunk *c;
	struct vfgx_chunk_stats cst = { .argsz = sizeof(cst) };
	unsigned long chunks = 0;
	vfgx_ctx *ctx = NULL;
	int ret, rc = 1;
	FILE *f;

	bool fft = true, no_fft = false;
	uint64_t t0 = 0;
	double loop_s = 0;
	unsigned long phase_len = 0, phase = 0; /* --alternate */
	static uint64_t phase_t[SPEC_PHASES_MAX + 1]; /* phase p started at [p] */

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--no-fft"))
			no_fft = true;
		else if (!strcmp(argv[i], "--packets") && i + 1 < argc)
			packets = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--alternate") && i + 1 < argc)
			phase_len = strtoul(argv[++i], NULL, 10);
		else
			argc = 0;
	}
	if (argc < 2 || !packets || (no_fft && phase_len) ||
	    (phase_len && packets / SPEC_PACKETS / phase_len < 5)) {
		fprintf(stderr, "usage: spectrometer OUT.txt [--no-fft | --alternate N] [--packets N]\n"
			"  (--alternate N needs at least 5 phases of N chunks: --packets >= %u x 5N)\n",
			SPEC_PACKETS);
		return 2;
	}
	fft = !no_fft && !phase_len;
	snprintf(yaml, sizeof(yaml), SPEC_YAML("gpu"), packets);
	CK(cudaStreamCreate(&s));
	CK(cudaMalloc(&buf, sizeof(cufftComplex) * SPEC_SAMPLES));
	CK(cudaMalloc(&spec, sizeof(double) * SPEC_NFFT));
	CK(cudaMemset(spec, 0, sizeof(double) * SPEC_NFFT));
	if (cufftPlan1d(&plan, SPEC_NFFT, CUFFT_C2C, SPEC_FFTS) != CUFFT_SUCCESS ||
	    cufftSetStream(plan, s) != CUFFT_SUCCESS) {
		fprintf(stderr, "spectrometer: cufftPlan1d failed\n");
		goto out;
	}
	if (vfgx_ctx_create(&ctx) ||
	    vfgx_config_load_string(ctx, yaml, strlen(yaml), "spectrometer", &cfg) ||
	    vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port) ||
	    vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl)) {
		fprintf(stderr, "spectrometer: %s\n", ctx ? vfgx_last_error(ctx) : "no memory");
		goto out;
	}
	slots = vfgx_chunk_conf(pl)->in_flight;
	graphs = (cudaGraphExec_t *)calloc(slots, sizeof(*graphs));
	if (!graphs)
		goto out;
	for (uint32_t i = 0; i < slots; i++)
		if (capture_slot(vfgx_chunk_slot(pl, 0, i), s, plan, buf, spec, &graphs[i])) {
			fprintf(stderr, "spectrometer: capturing slot %u's graph failed\n", i);
			goto out;
		}
	if (vfgx_pipeline_start(pl)) {
		fprintf(stderr, "spectrometer: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	t0 = vfgx_now_ns();
	for (;;) {
		ret = vfgx_chunk_get(pl, 1000, &c);
		if (ret == -ENODATA)
			break;
		if (ret)
			continue;
		if (phase_len && chunks % phase_len == 0 && phase < SPEC_PHASES_MAX) {
			phase = chunks / phase_len;
			phase_t[phase] = vfgx_now_ns();
			fft = phase_fft(phase);
		}
		chunks++;
		if (!fft) {
			vfgx_chunk_put(pl, c->stream, c->index);
			continue;
		}
		if (c->ring_slot >= slots || c->data != vfgx_chunk_slot(pl, 0, c->ring_slot)->data) {
			fprintf(stderr, "spectrometer: chunk %lu is not at its slot's address\n",
				(unsigned long)c->index);
			vfgx_chunk_put(pl, c->stream, c->index);
			goto out;
		}
		CK(cudaGraphLaunch(graphs[c->ring_slot], s));
		if (vfgx_chunk_stream_put(pl, c->stream, c->index, s)) {
			fprintf(stderr, "spectrometer: %s\n", vfgx_last_error(ctx));
			goto out;
		}
	}
	CK(cudaStreamSynchronize(s));
	loop_s = (double)(vfgx_now_ns() - t0) / 1e9;
	if (vfgx_chunk_stats(pl, &cst))
		goto out;
	CK(cudaMemcpy(host_spec, spec, sizeof(host_spec), cudaMemcpyDeviceToHost));
	f = fopen(argv[1], "w");
	if (!f) {
		fprintf(stderr, "spectrometer: %s: %s\n", argv[1], strerror(errno));
		goto out;
	}
	for (int ch = 0; ch < SPEC_NFFT; ch++)
		fprintf(f, "%.10e\n", host_spec[ch]);
	if (fclose(f)) {
		fprintf(stderr, "spectrometer: %s: %s\n", argv[1], strerror(errno));
		goto out;
	}
	if (phase_len) {
		/* phases 1 .. 4g, each timed to the next one's start */
		unsigned long groups = phase ? (phase - 1) / 4 : 0, n[2] = { 0, 0 };
		uint64_t ns[2] = { 0, 0 };

		for (unsigned long p = 1; p <= 4 * groups; p++) {
			n[phase_fft(p)] += phase_len;
			ns[phase_fft(p)] += phase_t[p + 1] - phase_t[p];
		}
		if (!groups || !ns[0] || !ns[1]) {
			fprintf(stderr, "spectrometer: %lu chunks make no whole group of four phases of %lu\n",
				chunks, phase_len);
			goto out;
		}
		printf("spectrometer (cuFFT alternating every %lu chunks): %lu chunks, %lu phases, %d channels -> %s; backpressure waits %llu; fft_chunks_per_s %.1f none_chunks_per_s %.1f\n",
		       phase_len, chunks, 4 * groups, SPEC_NFFT, argv[1],
		       (unsigned long long)cst.backpressure,
		       (double)n[1] * 1e9 / (double)ns[1], (double)n[0] * 1e9 / (double)ns[0]);
	} else {
		printf("spectrometer (cuFFT%s): %lu chunks, %d channels -> %s; backpressure waits %llu; chunks_per_s %.1f\n",
		       fft ? "" : ", --no-fft", chunks, SPEC_NFFT, argv[1],
		       (unsigned long long)cst.backpressure, loop_s > 0 ? (double)chunks / loop_s : 0.0);
	}
	rc = chunks ? 0 : 1;
out:
	/* the stream's writes of returned words end before the pipeline
	 * frees them (after a GPU error nothing more runs) */
	if (s)
		cudaStreamSynchronize(s);
	vfgx_pipeline_destroy(pl);
	for (uint32_t i = 0; graphs && i < slots; i++)
		if (graphs[i])
			cudaGraphExecDestroy(graphs[i]);
	free(graphs);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	if (ctx)
		vfgx_ctx_destroy(ctx);
	if (plan)
		cufftDestroy(plan);
	cudaFree(buf);
	cudaFree(spec);
	if (s)
		cudaStreamDestroy(s);
	return rc;
}
