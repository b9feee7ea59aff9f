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

#define FVIDEO_MAX_STREAMS 16

struct fvideo_res {
	bool ok;                /* the run happened (else why says what stopped it) */
	char why[256];
	uint32_t streams;
	uint32_t packets_per_frame;
	uint64_t frames_sent;   /* frames in the files read, all streams */
	uint64_t complete;      /* chunks handed out complete (every byte) */
	uint64_t errored;       /* frames handed out with bytes missing, or never */
	uint64_t drops;         /* pipeline drops */
	double seconds;         /* start to the last frame handed out */
	double fps;             /* complete frames per second, per stream */
	double pipeline_cpu_s;  /* CPU time of the pipeline's threads (the
				 * process less the consumer and the caller's
				 * thread) until the input ended */
	double fps_cpu;         /* complete frames per stream per second of it */
	double gbps;            /* bytes of complete frames, all streams */
};

/* The capture files of the video runs: streams streams of frames
 * width x height UYVY frames each (RFC 4175, FVIDEO_FRAME_LEN-byte
 * frames), one file a stream in a directory of their own. */
struct fvideo_files {
	char dir[512];
	uint32_t streams, width, height, frames;
	uint32_t packets_per_frame;
	uint64_t frame_bytes;
};

/* 0; -1 after one line on stderr; -ENOTSUP in a build without libpcap. */
int fvideo_files_make(struct fvideo_files *fs, uint32_t streams, uint32_t width, uint32_t height,
		      uint32_t frames);
void fvideo_files_remove(struct fvideo_files *fs);

/* The first streams files of fs, each read by a pcap port (timing fast)
 * into vfgx_pipeline on the cpu engine (one worker, chunks in host
 * memory) or the gpu engine (chunks in GPU memory), pipeline.format
 * rtp-video, one chunk per frame, a consumer thread taking and giving
 * back every chunk.  0 with *r filled (r->ok false and r->why when the
 * library refused the configuration), -1 on a failure of the benchmark
 * itself. */
int fvideo_run(vfgx_ctx *ctx, const struct fvideo_files *fs, bool gpu, uint32_t streams,
	       struct fvideo_res *r);

/* --gpu-only: the CPU part of an earlier file.  The CPU part is the file
 * up to its first "## GPU" or "## RFC 4175 video on the GPU" section or
 * "## Targets" (after MERGED_MARK's line in a file merged before), its
 * title dropped and its date, commit, machine, command and load renamed
 * "CPU part's ..."; and its target lines whose names do not say gpu. */
struct cpu_part {
	char *body;     /* malloc'd */
	char *targets;  /* malloc'd */
};
/* The line a merged file writes before the CPU part it kept. */
#define MERGED_MARK "- the CPU part below is "
/* 0, or -1 after one line on stderr (no file, no CPU target line). */
int cpu_part_read(const char *path, struct cpu_part *cp);

#endif
