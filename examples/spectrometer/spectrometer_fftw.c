/* spectrometer_fftw.c - the CPU twin of spectrometer.cu: the same stream
 * into chunks in host memory, each chunk's complex int8 samples (missing
 * packets as zeros) transformed with FFTW in batches of 4096 channels and
 * its power accumulated; the spectrum is written the same way, so the two
 * files can be compared line by line:
 *
 *     spectrometer_fftw OUT.txt */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <fftw3.h>

#include <vfgx/vfgx.h>

#include "spectrometer.h"

int main(int argc, char **argv)
{
	static char yaml[1024];
	static double spec[SPEC_NFFT];
	struct vfgx_config *cfg = NULL;
	vfgx_pipeline *pl = NULL;
	vfgx_port *port = NULL;
	struct vfgx_chunk *c;
	unsigned long chunks = 0;
	fftwf_complex *buf;
	fftwf_plan plan;
	vfgx_ctx *ctx = NULL;
	int ret, rc = 1, n = SPEC_NFFT;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: spectrometer_fftw OUT.txt\n");
		return 2;
	}
	snprintf(yaml, sizeof(yaml), SPEC_YAML("host"), SPEC_PACKETS_DEFAULT);
	buf = fftwf_malloc(sizeof(fftwf_complex) * SPEC_SAMPLES);
	if (!buf)
		return 1;
	plan = fftwf_plan_many_dft(1, &n, SPEC_FFTS, buf, NULL, 1, SPEC_NFFT, buf, NULL,
				   1, SPEC_NFFT, FFTW_FORWARD, FFTW_ESTIMATE);
	if (vfgx_ctx_create(&ctx) ||
	    vfgx_config_load_string(ctx, yaml, strlen(yaml), "spectrometer", &cfg) ||
	    vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port) ||
	    vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl) ||
	    vfgx_pipeline_start(pl)) {
		fprintf(stderr, "spectrometer_fftw: %s\n", ctx ? vfgx_last_error(ctx) : "no memory");
		goto out;
	}
	while ((ret = vfgx_chunk_get(pl, 1000, &c)) != -ENODATA) {
		const int8_t *d = c->data;

		if (ret)
			continue;
		for (int i = 0; i < SPEC_SAMPLES; i++) {
			int pkt = i / (SPEC_PAYLOAD / 2);
			int in = (int)(c->present[pkt / 64] >> (pkt % 64) & 1);

			buf[i][0] = in ? (float)d[2 * i] : 0.0f;
			buf[i][1] = in ? (float)d[2 * i + 1] : 0.0f;
		}
		vfgx_chunk_put(pl, c->stream, c->index);
		fftwf_execute(plan);
		for (int b = 0; b < SPEC_FFTS; b++)
			for (int ch = 0; ch < SPEC_NFFT; ch++) {
				const float *v = buf[b * SPEC_NFFT + ch];

				spec[ch] += (double)v[0] * v[0] + (double)v[1] * v[1];
			}
		chunks++;
	}
	f = fopen(argv[1], "w");
	if (!f) {
		fprintf(stderr, "spectrometer_fftw: %s: %s\n", argv[1], strerror(errno));
		goto out;
	}
	for (int ch = 0; ch < SPEC_NFFT; ch++)
		fprintf(f, "%.10e\n", spec[ch]);
	if (fclose(f)) {
		fprintf(stderr, "spectrometer_fftw: %s: %s\n", argv[1], strerror(errno));
		goto out;
	}
	printf("spectrometer (FFTW): %lu chunks, %d channels -> %s\n", chunks, SPEC_NFFT, argv[1]);
	rc = chunks ? 0 : 1;
out:
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	if (ctx)
		vfgx_ctx_destroy(ctx);
	fftwf_destroy_plan(plan);
	fftwf_free(buf);
	return rc;
}
