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
 * spectrometer_fftw.c computes the same spectrum with FFTW on the CPU.
 *
 * The work on a chunk (unpack, FFT, accumulate) is one CUDA graph per ring
 * slot, captured before the start: a slot's addresses are fixed
 * (vfgx_chunk_slot), so a chunk costs the CPU one graph launch and one
 * event.  Up to SPEC_DEPTH chunks are on the GPU at once; each goes back
 * (vfgx_chunk_put) once its event has passed, so the CPU never waits for
 * a chunk's FFT while another chunk is ready. */
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

/* chunks on the GPU at once: half the ring, the other half the pipeline's */
#define SPEC_DEPTH 4

/* The chunks on the GPU, oldest first, each with the event recorded after
 * its work. */
struct held {
	struct vfgx_chunk *c[SPEC_DEPTH];
	cudaEvent_t ev[SPEC_DEPTH];
	unsigned head, n;
};

/* The oldest held chunk, out of the list (h->n > 0). */
static struct vfgx_chunk *pop(struct held *h)
{
	struct vfgx_chunk *c = h->c[h->head];

	h->head = (h->head + 1) % SPEC_DEPTH;
	h->n--;
	return c;
}

/* Give back the oldest held chunk: at once if its work has passed, else
 * after waiting for it when `wait`.  1 when one went back, 0 when none
 * (none held, or not done and not `wait`), -1 on a CUDA error. */
static int give_back(vfgx_pipeline *pl, struct held *h, bool wait)
{
	cudaError_t e;

	if (!h->n)
		return 0;
	e = wait ? cudaEventSynchronize(h->ev[h->head]) : cudaEventQuery(h->ev[h->head]);
	if (e == cudaErrorNotReady)
		return 0;
	if (e != cudaSuccess) {
		fprintf(stderr, "spectrometer: chunk work: %s\n", cudaGetErrorString(e));
		return -1;
	}
	vfgx_chunk_put(pl, pop(h));
	return 1;
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
	struct held held = {};
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
	for (int i = 0; i < SPEC_DEPTH; i++)
		CK(cudaEventCreateWithFlags(&held.ev[i], cudaEventDisableTiming));
	if (vfgx_pipeline_start(pl)) {
		fprintf(stderr, "spectrometer: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	t0 = vfgx_now_ns();
	for (;;) {
		unsigned k;

		while ((ret = give_back(pl, &held, false)) > 0)
			;
		if (ret < 0)
			goto out;
		/* holding chunks: poll, and while none is ready finish the oldest */
		ret = vfgx_chunk_get(pl, held.n ? 0 : 1000, &c);
		if (ret == -EAGAIN) {
			if (give_back(pl, &held, true) < 0)
				goto out;
			continue;
		}
		if (ret == -ENODATA)
			break;
		if (ret)
			continue;
		chunks++;
		if (!fft) {
			vfgx_chunk_put(pl, c);
			continue;
		}
		if (c->ring_slot >= slots || c->data != vfgx_chunk_slot(pl, 0, c->ring_slot)->data) {
			fprintf(stderr, "spectrometer: chunk %lu is not at its slot's address\n",
				(unsigned long)c->index);
			vfgx_chunk_put(pl, c);
			goto out;
		}
		if (held.n == SPEC_DEPTH && give_back(pl, &held, true) < 0) {
			vfgx_chunk_put(pl, c);
			goto out;
		}
		k = (held.head + held.n) % SPEC_DEPTH;
		held.c[k] = c;
		held.n++;
		CK(cudaGraphLaunch(graphs[c->ring_slot], s));
		CK(cudaEventRecord(held.ev[k], s));
	}
	while ((ret = give_back(pl, &held, true)) > 0)
		;
	if (ret < 0)
		goto out;
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
	if (pl) {
		while (held.n)
			if (give_back(pl, &held, true) < 0)
				/* the GPU failed: its reads are over either way */
				vfgx_chunk_put(pl, pop(&held));
		vfgx_pipeline_destroy(pl);
	}
	for (uint32_t i = 0; graphs && i < slots; i++)
		if (graphs[i])
			cudaGraphExecDestroy(graphs[i]);
	free(graphs);
	for (int i = 0; i < SPEC_DEPTH; i++)
		if (held.ev[i])
			cudaEventDestroy(held.ev[i]);
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
