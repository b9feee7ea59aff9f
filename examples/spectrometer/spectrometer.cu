/* spectrometer.cu - a radio-astronomy style spectrometer on chunks in GPU
 * memory: complex int8 samples (the loopback generator's payload stands in
 * for a digitiser's) arrive in chunks of 64 packets; each chunk is
 * unpacked to complex float on the GPU (missing packets as zeros, from the
 * chunk's present mask), transformed with cuFFT in batches of 4096
 * channels, and its power added to an accumulated spectrum.  At the end
 * the spectrum is written to a file, one value per line:
 *
 *     spectrometer OUT.txt [--no-fft] [--packets N]
 *
 * --no-fft takes and gives back every chunk without touching it (the
 * benchmark's "no consumer" side); both print the chunks per second.
 * spectrometer_fftw.c computes the same spectrum with FFTW on the CPU. */
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
	struct vfgx_chunk *c;
	unsigned long chunks = 0;
	vfgx_ctx *ctx = NULL;
	int ret, rc = 1;
	FILE *f;

	bool fft = true;
	uint64_t t0 = 0;
	double loop_s = 0;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--no-fft"))
			fft = false;
		else if (!strcmp(argv[i], "--packets") && i + 1 < argc)
			packets = strtoul(argv[++i], NULL, 10);
		else
			argc = 0;
	}
	if (argc < 2 || !packets) {
		fprintf(stderr, "usage: spectrometer OUT.txt [--no-fft] [--packets N]\n");
		return 2;
	}
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
	    vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl) ||
	    vfgx_pipeline_start(pl)) {
		fprintf(stderr, "spectrometer: %s\n", ctx ? vfgx_last_error(ctx) : "no memory");
		goto out;
	}
	t0 = vfgx_now_ns();
	while ((ret = vfgx_chunk_get(pl, 1000, &c)) != -ENODATA) {
		if (ret)
			continue;
		if (!fft) {
			vfgx_chunk_put(pl, c);
			chunks++;
			continue;
		}
		unpack<<<(SPEC_SAMPLES + 255) / 256, 256, 0, s>>>((const int8_t *)c->data,
								  c->present, buf);
		if (cufftExecC2C(plan, buf, buf, CUFFT_FORWARD) != CUFFT_SUCCESS) {
			fprintf(stderr, "spectrometer: cufftExecC2C failed\n");
			goto out;
		}
		accumulate<<<(SPEC_NFFT + 255) / 256, 256, 0, s>>>(buf, spec);
		/* the chunk goes back once the GPU has read it */
		CK(cudaStreamSynchronize(s));
		vfgx_chunk_put(pl, c);
		chunks++;
	}
	loop_s = (double)(vfgx_now_ns() - t0) / 1e9;
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
	printf("spectrometer (cuFFT%s): %lu chunks, %d channels -> %s; chunks_per_s %.1f\n",
	       fft ? "" : ", --no-fft", chunks, SPEC_NFFT, argv[1],
	       loop_s > 0 ? (double)chunks / loop_s : 0.0);
	rc = chunks ? 0 : 1;
out:
	if (pl)
		vfgx_pipeline_destroy(pl);
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
