/* formats.h - `vfgx bench formats`' files: the format rows (formats.c),
 * their results file (formats_write.c), the RFC 4175 video runs through
 * `vfgx run`'s pipeline (formats_video.c), the GPU rows into chunks
 * (formats_chunks.c) and the merge of an earlier file's part
 * (formats_merge.c). */
#ifndef VFGX_BENCH_FORMATS_H
#define VFGX_BENCH_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <vfgx/format.h>
#include <vfgx/vfgx.h>

/* Ethernet frame bytes of each RFC 4175 packet the video runs send */
#define FVIDEO_FRAME_LEN 1500

/* streams of one run (pipeline.format's stream_ids: at most 64) and the
 * ports (capture files) they share (a config's interfaces) */
#define FVIDEO_MAX_STREAMS 64
#define FVIDEO_MAX_PORTS VFGX_MAX_IFACES

struct fvideo_res {
	bool ok;                /* the run happened (else why says what stopped it) */
	char why[256];
	uint32_t streams, ports;
	uint32_t packets_per_frame;
	uint64_t frames_sent;   /* frames in the files read, all streams */
	uint64_t complete;      /* chunks handed out complete (every byte) */
	uint64_t incomplete;    /* chunks handed out with bytes missing */
	uint64_t errored;       /* frames not complete: incomplete, or never
				 * handed out */
	uint64_t drops;         /* pipeline drops */
	double seconds;         /* start to the last frame handed out */
	double fps;             /* complete frames per second, per stream */
	double pipeline_cpu_s;  /* CPU time of the pipeline's threads (the
				 * process less the consumer and the caller's
				 * thread) until the input ended */
	double fps_cpu;         /* complete frames per stream per second of it */
	double gbps;            /* bytes of complete frames, all streams */
};

/* The source alone: the same ports (files, memory) read by one thread a
 * port, each packet given back at once (no format, no chunks). */
struct fvideo_src {
	bool ok;
	char why[256];
	uint64_t packets;       /* read, all ports */
	double seconds;         /* the first rx_burst to the last port done */
	double fps;             /* frames' worth of packets a second, per stream */
	double gbps;            /* the frames' bytes those packets carry */
};

/* The capture files of the video runs: streams streams of width x height
 * UYVY frames (RFC 4175, FVIDEO_FRAME_LEN-byte frames, stream s SSRC
 * VIDEO_SSRC + s), sharing ports files (stream s in file s % ports), each
 * file its streams' packets interleaved in send order (packet j of each
 * of its streams' frame m, then packet j + 1), in a directory of their
 * own. */
struct fvideo_files {
	char dir[512];
	uint32_t streams, ports, width, height, frames;
	uint32_t packets_per_frame;
	uint64_t frame_bytes;
};

/* The ports a count of streams shares: at most FVIDEO_MAX_PORTS, the
 * fewest streams a port (ceil(streams / FVIDEO_MAX_PORTS)), as many
 * ports as that needs. */
uint32_t fvideo_ports_for(uint32_t streams);

/* 0; -1 after one line on stderr; -ENOTSUP in a build without libpcap. */
int fvideo_files_make(struct fvideo_files *fs, uint32_t streams, uint32_t ports, uint32_t width,
		      uint32_t height, uint32_t frames);
void fvideo_files_remove(struct fvideo_files *fs);

/* Every file of fs, each read by a pcap port (timing fast) into
 * vfgx_pipeline on the cpu engine (one worker, chunks in host memory) or
 * the gpu engine (the ports' buffers in pinned memory, chunks in GPU
 * memory), pipeline.format rtp-video listing every stream's SSRC, one
 * chunk per frame, a consumer thread taking and giving back every chunk.
 * 0 with *r filled (r->ok false and r->why when the library refused the
 * configuration), -1 on a failure of the benchmark itself. */
int fvideo_run(vfgx_ctx *ctx, const struct fvideo_files *fs, bool gpu, struct fvideo_res *r);

/* The source alone (struct fvideo_src): the ports fvideo_run opens for
 * gpu, the same files and buffers.  0 with *r filled (r->ok false and
 * r->why when refused), -1 on a failure of the benchmark itself. */
int fvideo_source(vfgx_ctx *ctx, const struct fvideo_files *fs, bool gpu, struct fvideo_src *r);

/* ---- the rounds (formats_video.c) ---------------------------------------- */
#define MAX_ROUNDS 51       /* --rounds */
#define MAX_SWEEP 8         /* --video-streams: stream counts a round tries */

struct fvideo_rounds {
	int n;
	double v[MAX_ROUNDS];        /* cpu: fps; gpu: streams kept whole at 60 fps */
	double src[MAX_ROUNDS];      /* gpu: streams the source alone fed at 60 fps */
	struct fvideo_res last[MAX_ROUNDS];
	/* gpu: every run of every round, and the source alone beside it */
	int nruns;
	struct fvideo_res runs[MAX_ROUNDS * MAX_SWEEP];
	struct fvideo_src srcs[MAX_ROUNDS * MAX_SWEEP];
	int run_round[MAX_ROUNDS * MAX_SWEEP];
	char why[256];
};

/* every frame sent handed out complete, no pipeline drop */
bool fvideo_clean(const struct fvideo_res *r);
/* clean, and at least 60 complete frames a second per stream (wall clock) */
bool fvideo_keeps_up(const struct fvideo_res *r);
/* every port read to its end without an error at 60 frames' worth of
 * packets a second per stream or more */
bool fvideo_source_keeps_up(const struct fvideo_src *s, const struct fvideo_files *fs);
/* rounds runs of one 1080p stream on the cpu engine (frames a run, 0: 60):
 * vr->v[i] the round's whole frames per pipeline CPU-second, 0 with a
 * frame error.  0 (vr->n 0 and vr->why when refused or no libpcap), -1 on
 * a failure of the benchmark itself. */
int fvideo_cpu_rounds(vfgx_ctx *ctx, int rounds, uint32_t frames, struct fvideo_rounds *vr);
/* The sweep (the 4K60 one on the gpu engine: gpu, 3840 x 2160; frames a
 * stream, 0: 20; sweep ascending): one count at a time (its files made,
 * its rounds run, its files removed), each round the pipeline and the
 * source alone in an order flipped every round; vr->v[i] the largest
 * count whose run kept up (fvideo_keeps_up), 0 when none; vr->src[i] the
 * largest whose source alone did.  Returns as fvideo_cpu_rounds. */
int fvideo_sweep(vfgx_ctx *ctx, bool gpu, uint32_t width, uint32_t height, int rounds,
		 uint32_t frames, const uint32_t *sweep, int nsweep, struct fvideo_rounds *vr);

/* The gpu rows into chunks (formats_chunks.c): the GPU processor
 * (persistent, items of 1024 packets, 256 in flight) with pc and its
 * pc->chunks in GPU memory (pc->format NULL or a profile), the n frames at
 * pkts (in GPU memory) a pass: each pass submitted, a flush item, every
 * chunk of the pass taken by a consumer thread, a reset item and the rings
 * started over; an untimed pass first, then whole passes for seconds.
 * Mpps by the wall clock, or NAN with why (refused, or a pass not exact:
 * every packet placed, no drop, every chunk complete). */
double fchunks_gpu_side(vfgx_ctx *ctx, const struct vfgx_pipeline_config *pc,
			const struct vfgx_pkt *pkts, uint32_t n, double seconds, char *why,
			size_t wlen);

/* ---- the pairs formats.c measures, and their results (formats_write.c) --- */
#define NB_PROFILES 6
#define NB_SIZES 2
#define STREAMS 4           /* for the profiles with a stream field */
#define SSRC0 0x2a000000u   /* rtp: stream s is SSRC SSRC0 + s */
#define VDIF_FPS 100000     /* vdif: frames_per_second of the composite sequence */
#define SPEAD_HEAP_PKTS 8   /* spead: packets per heap */
/* gpu spead into chunks: packets per heap, a chunk each (a chunk of 8 would
 * make both sides' rate the consumer's: at the vfgx side's 30 Mpps, 3.75
 * million chunks a second through one thread's get and put) */
#define GPU_SPEAD_HEAP_PKTS 64
#define FPORT 5000
#define GPU_BYTES (128u << 20) /* frames in GPU memory, each side */
#define GPU_CHUNKS_IN_FLIGHT 1024 /* gpu spead: chunk buffers, each side */
#define SPEAD_HLEN 40       /* SPEAD-64-48 header and the profile's four items */
#define VFGX_HLEN 16        /* vfgx's own header */
#define STR_(x) #x
#define STR(x) STR_(x)
#define ETH_IP_UDP 42

/* A profile against the vfgx profile at one frame size. */
struct pair {
	const char *profile;
	uint32_t size, streams;
	bool reorder;
	bool chunks;        /* gpu spead: both sides into chunks of a heap */
	uint32_t heap_pkts; /* spead: packets per heap (and per chunk) */
	struct vfgx_format f;
	struct vfgx_fmt_send h;
};

/* Its paired rounds on one engine. */
struct pair_rounds {
	struct pair p;
	uint32_t frame_profile, frame_vfgx; /* frame bytes as encoded */
	uint64_t frames;
	int n;
	double prof[MAX_ROUNDS], ref[MAX_ROUNDS], ratio[MAX_ROUNDS];
	char why[256]; /* the gpu side that could not run, and why */
};

/* The results file's parts: the CPU and GPU sections (np pairs each),
 * and one target line a pair or video run. */
void write_cpu(FILE *f, const struct pair_rounds *pr, int np, const struct fvideo_rounds *vr,
	       double seconds, size_t ws);
void write_gpu(FILE *f, const char *gpu_desc, const struct pair_rounds *pr, int np,
	       const struct fvideo_rounds *vr, double seconds);
void pair_target(FILE *f, const char *engine, const struct pair_rounds *pr);
void video_target(FILE *f, const char *name, const struct fvideo_rounds *vr, double goal,
		  double ref);
void streams_target(FILE *f, const char *name, const struct fvideo_rounds *vr, double goal,
		    uint32_t top);

/* The part of an earlier file a merge keeps (formats_merge.c): --gpu-only
 * keeps its CPU part, --cpu-only --merge-from its GPU part.  head: the
 * part's own header lines (date, commit, machine, command, load renamed
 * "CPU part's ..." or "GPU part's ..."); body: its sections; targets: its
 * target lines (names without gpu for the CPU part, with it for the GPU
 * part). */
struct kept_part {
	char *head;     /* malloc'd */
	char *body;     /* malloc'd */
	char *targets;  /* malloc'd */
};
/* The line a merged file writes before the part it kept. */
#define MERGED_MARK "- the CPU part below is "
#define MERGED_MARK_GPU "- the GPU part below is "
/* 0, or -1 after one line on stderr (no file, no target line of the part). */
int part_read(const char *path, bool gpu, struct kept_part *kp);
void kept_part_free(struct kept_part *kp);

#endif
