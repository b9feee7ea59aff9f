/* formats.h - `vfgx bench formats`' two files: the format rows and the
 * results file (formats.c), and the RFC 4175 video runs through
 * `vfgx run`'s pipeline (formats_video.c). */
#ifndef VFGX_BENCH_FORMATS_H
#define VFGX_BENCH_FORMATS_H

#include <stdbool.h>
#include <stdint.h>

#include <vfgx/vfgx.h>

/* Ethernet frame bytes of each RFC 4175 packet the video runs send */
#define FVIDEO_FRAME_LEN 1500

struct fvideo_res {
	bool ok;                /* the run happened (else why says what stopped it) */
	char why[256];
	uint32_t streams;
	uint32_t packets_per_frame;
	uint64_t frames_sent;   /* frames every stream sent, all streams */
	uint64_t complete;      /* chunks handed out complete (every byte) */
	uint64_t errored;       /* chunks handed out with bytes missing */
	uint64_t drops;         /* pipeline drops other than the filter's */
	uint64_t filtered;      /* the loopback generator's 1 pps, filtered out */
	double seconds;         /* first tx to the last frame handed out */
	double fps;             /* complete frames per second, per stream */
	double gbps;            /* payload of complete frames, all streams */
};

/* streams RFC 4175 UYVY streams of width x height, frames frames each,
 * unpaced, through a loopback port's tx -> rx loop into vfgx_pipeline on
 * the cpu engine (one worker, chunks in host memory) or the gpu engine
 * (pinned buffers, chunks in GPU memory), pipeline.format rtp-video,
 * one chunk per frame, a consumer thread taking and giving back every
 * chunk.  0 with *r filled (r->ok false and r->why when the library
 * refused the configuration), -1 on a failure of the benchmark itself. */
int fvideo_run(vfgx_ctx *ctx, bool gpu, uint32_t streams, uint32_t width, uint32_t height,
	       uint32_t frames, struct fvideo_res *r);

#endif
