/* formats_write.c - `vfgx bench formats`' results file (formats.h): the
 * CPU and GPU parts' sections and the target lines of the pairs and the
 * video runs, from the rounds formats.c measured. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "results.h"

/* ---- the results file ----------------------------------------------------- */
static void pair_rows(FILE *f, const char *engine, const struct pair_rounds *pr, int np)
{
	char a[64], b[64], c[64];

	fprintf(f, "| profile | frame B (profile / vfgx) | streams | stages | frames a pass | rounds |\n|---|---|---|---|---|---|\n");
	for (int k = 0; k < np; k++)
		fprintf(f, "| %s | %u / %u | %u | %s | %llu | %d |\n", pr[k].p.profile,
			pr[k].frame_profile ? pr[k].frame_profile : pr[k].p.size,
			pr[k].frame_vfgx ? pr[k].frame_vfgx : pr[k].p.size, pr[k].p.streams,
			pr[k].p.chunks ? "parse + validate + filter + chunks of a heap (" STR(GPU_SPEAD_HEAP_PKTS) " packets; spead by heap offset, vfgx by slot; " STR(GPU_CHUNKS_IN_FLIGHT) " chunk buffers in GPU memory, a consumer thread)" :
			pr[k].p.reorder ? "parse + validate + filter + reorder (window 1024)" :
					  "parse + validate + filter, delivered without reorder",
			(unsigned long long)pr[k].frames, pr[k].n);
	fprintf(f, "\n| profile | frame B | round | profile Mpps | vfgx Mpps | ratio |\n|---|---|---|---|---|---|\n");
	for (int k = 0; k < np; k++)
		for (int i = 0; i < pr[k].n; i++)
			fprintf(f, "| %s | %u | %d | %.3f | %.3f | %.4f |\n", pr[k].p.profile,
				pr[k].p.size, i + 1, pr[k].prof[i], pr[k].ref[i], pr[k].ratio[i]);
	fprintf(f, "\n| profile | frame B | %s profile Mpps median (min..max) | vfgx | ratio |\n|---|---|---|---|---|\n",
		engine);
	for (int k = 0; k < np; k++)
		fprintf(f, "| %s | %u | %s | %s | %s |\n", pr[k].p.profile, pr[k].p.size,
			bench_fmt_spread(a, sizeof(a), "%.3f", pr[k].prof, pr[k].n),
			bench_fmt_spread(b, sizeof(b), "%.3f", pr[k].ref, pr[k].n),
			bench_fmt_spread(c, sizeof(c), "%.4f", pr[k].ratio, pr[k].n));
	fprintf(f, "\n");
	for (int k = 0; k < np; k++)
		if (pr[k].why[0])
			fprintf(f, "- %s %u B not measured: %s\n", pr[k].p.profile, pr[k].p.size,
				pr[k].why);
}

void write_cpu(FILE *f, const struct pair_rounds *pr, int np, const struct fvideo_rounds *vr,
	       double seconds, size_t ws)
{
	fprintf(f, "## CPU engine: each profile against the vfgx profile\n\n");
	fprintf(f, "- method: per profile and frame size, two sets of the same frames (%zu MiB a side: frame i is stream i %% streams, its packet i / streams, in order): the generator's frames as vfgx_pkt_build makes them (the vfgx profile), and the same frames with their UDP payload written by vfgx_fmt_encode in the profile (what `vfgx send --format` sends; IPv4/UDP lengths and checksums redone). Each side: one vfgx_proc on this thread with the same pipeline config (pipeline.format = the profile, or none: the vfgx profile), bursts of 32, flush at the end of each pass, %g s of whole passes; every pass must deliver every frame in order with no drop and no gap. The two sides run interleaved on the thread, a sixteenth of a pass at a time (A B, B A, A B, ...; the side that starts flipped every round), so that whatever slows the machine for a while (other tenants of a VM's host) slows both alike. Rate = packets per second of this thread's CPU time in the side's own segments (Mpps per CPU-second). Same on both sides: the frames' number, size (up to the profile's word rounding) and order, the streams, the thread, the stages, reorder window or delivery; different: the header the pipeline reads (the only difference). A round is one such interleaved run of both sides.\n",
		ws >> 20, seconds);
	fprintf(f, "- profiles: rtp lists its SSRCs (stream_ids); vdif frames_per_second %d; spead heaps of %d packets, delivered without reorder on both sides (a SPEAD packet carries its heap's counter, not a sequence of its own: reorder is a config error for it); spead and gr-udp one stream (no stream field), the others %d.\n",
		VDIF_FPS, SPEAD_HEAP_PKTS, STREAMS);
	fprintf(f, "- sizes: 64 B, or where a profile's header and a body do not fit 64 B the smallest frame whose UDP payload holds the header and 8 bytes of body (the vfgx side the same size); and 1500 B. vita49 and vdif round their payload down to 4 and 8 bytes.\n\n");
	pair_rows(f, "cpu", pr, np);
	fprintf(f, "\n## RFC 4175 video on the CPU: one 1080p60 stream, one core\n\n");
	if (vr->n && !isnan(vr->v[0])) {
		const struct fvideo_res *r0 = &vr->last[0];

		fprintf(f, "- method: one 1920x1080 UYVY (8-bit 4:2:2) RFC 4175 stream, %d frames, each frame %u RTP packets of %u B Ethernet frames written by vfgx_fmt_encode (rtp-video) into a capture file once (libpcap), replayed by a pcap port as fast as it reads (timing: fast) into vfgx_pipeline on the cpu engine with one worker, pipeline.format rtp-video (stream_ids) and chunks in host memory, one chunk per frame; a consumer thread takes and gives back every frame (vfgx_chunk_get/put). A frame is whole when its chunk is complete with no byte missing. A round's rate (the target's) is whole frames per CPU-second of the pipeline's threads: the process's CPU time from the start to the end of the input, less the consumer's and the main thread's (the worker, which also reads the file through libpcap, and the engine's own threads), so that it says whether one core's worth of CPU time keeps up with 60 frames a second whatever else runs on the host; the wall-clock rate is listed too. A round with any frame error or any packet dropped counts 0.\n\n",
			(int)(r0->frames_sent), r0->packets_per_frame, FVIDEO_FRAME_LEN);
		fprintf(f, "| round | frames sent | complete | errored | drops | pipeline CPU-s | fps per pipeline CPU-s | seconds | fps (wall) | Gb/s of frames (wall) |\n|---|---|---|---|---|---|---|---|---|---|\n");
		for (int i = 0; i < vr->n; i++) {
			const struct fvideo_res *r = &vr->last[i];

			fprintf(f, "| %d | %llu | %llu | %llu | %llu | %.3f | %.1f | %.3f | %.1f | %.3f |\n",
				i + 1, (unsigned long long)r->frames_sent,
				(unsigned long long)r->complete, (unsigned long long)r->errored,
				(unsigned long long)r->drops, r->pipeline_cpu_s, r->fps_cpu, r->seconds,
				r->fps, r->gbps);
		}
		fprintf(f, "\n");
	} else {
		fprintf(f, "- not measured: %s\n\n", vr->why);
	}
}

void write_gpu(FILE *f, const char *gpu_desc, const struct pair_rounds *pr, int np,
	       const struct fvideo_rounds *vr, double seconds)
{
	fprintf(f, "## GPU engine: each profile against the vfgx profile\n\n");
	fprintf(f, "- GPU: %s\n", gpu_desc);
	fprintf(f, "- method: the frames of the CPU part (up to %u MiB, at most 2^20 frames a side), copied once into GPU memory; the GPU processor (vfgx_gpu_proc, the gpu engine's, persistent mode, items of 1024 packets, 256 in flight) with the same pipeline config as the CPU rows (pipeline.format the profile or none), %g s of whole passes, each pass ended by a reset item; every pass must deliver every frame in order with no drop. Rate = packets per second by the wall clock (the GPU does the work; the CPU thread only submits). Same on both sides: frames, streams, stages, GPU, launch mode; different: the header read. Paired rounds, order flipped every round.\n",
		GPU_BYTES >> 20, seconds);
	fprintf(f, "- spead: the gpu engine reads a format with reorder or chunks, and SPEAD has no per-packet sequence to reorder by, so both spead rows run what a SPEAD user runs there: chunks by heap (pipeline.chunks with the spead profile's place offset: a chunk a heap of %d packets (the CPU rows' frames carry heaps of %d; a chunk of so few would make both sides' rate that of the consumer thread), each packet's payload at its heap offset, the heap's size reached releases it), the vfgx side the same chunks by slot (a chunk the same %d packets, a slot a packet's payload): the same ring of %d chunk buffers in GPU memory, the same consumer thread taking and giving back every chunk (vfgx_chunkset_get polling), the same passes, each ended by a flush item, every chunk of the pass taken, a reset item and the rings started over (the next pass's heap counters and sequences start again). A pass is exact when every packet was placed with no drop and every chunk came out complete. The one difference besides the header read: each packet's payload is the frame less the header, so the vfgx side copies %d bytes more a packet into its chunk (its header is %d bytes, spead's %d).\n\n",
		GPU_SPEAD_HEAP_PKTS, SPEAD_HEAP_PKTS, GPU_SPEAD_HEAP_PKTS, GPU_CHUNKS_IN_FLIGHT,
		SPEAD_HLEN - VFGX_HLEN, VFGX_HLEN,
		SPEAD_HLEN);
	pair_rows(f, "gpu", pr, np);
	fprintf(f, "\n## RFC 4175 video on the GPU: 4K60 streams at once\n\n");
	if (vr->n && vr->nruns) {
		const struct fvideo_res *r0 = &vr->runs[0];

		fprintf(f, "- method: N 3840x2160 UYVY (8-bit 4:2:2) RFC 4175 streams (%.0f Mb a frame, %.2f Gb/s each at 60 fps), each stream its own SSRC, %d frames of %u RTP packets of %u B Ethernet frames a stream, written once by vfgx_fmt_encode (rtp-video) into capture files (libpcap), synced to the disk before the first run (fsync: the kernel's writeback does not run during a round): the N streams share P = ceil(N / ceil(N / 8)) files (stream s in file s %% P; a config has at most 8 interfaces), each file its streams' packets interleaved in send order (packet j of each of its streams' frame, then packet j + 1), as several senders' streams arrive on one port. A pcap port a file replays it: preloaded (pcap.preload: every record read once, before the run, into a GPU memory region of the port's own, a buffer a record), then handed out as fast as the pipeline takes it (timing: fast) without a read or a copy, as a NIC's rx ring leaves frames in GPU memory for the rx thread to hand on; it feeds vfgx_pipeline on the gpu engine: pipeline.format rtp-video listing the N SSRCs (stream_ids: the profile tells the streams apart by SSRC as on a wire), chunks in GPU memory, one per frame, 4 in flight a stream, a consumer thread taking and giving back each; the gpu engine reads the ports with one rx thread a port. A frame error is a frame sent that was not handed out complete (handed out with bytes missing: incomplete, or never handed out); fps a stream = complete frames per stream per second by the wall clock, from the pipeline's start to the last frame handed out. A run keeps up when it has no frame error and no pipeline drop and at least 60 fps a stream. The source alone (the reference, the same run): the same ports preloaded from the same files into GPU memory, one thread a port (as the engine's rx threads), each packet given back at once, no format, no chunks, no kernel; its fps a stream is the frames' worth of packets it read per stream per second, and it keeps up when it read every packet at 60 or more. Every stream count of the sweep (--video-streams) runs once a round, the pipeline and the source alone in an order flipped every round. A round's value (the target's measured) is the largest count whose run kept up, 0 when none; its reference the largest count whose source alone kept up: a reference below the goal says the replay, not the pipeline, was the limit.\n\n",
			3840.0 * 2160 * 2 * 8 / 1e6, 3840.0 * 2160 * 2 * 8 * 60 / 1e9,
			(int)(r0->streams ? r0->frames_sent / r0->streams : 0), r0->packets_per_frame,
			FVIDEO_FRAME_LEN);
		fprintf(f, "| round | streams | ports | frames sent | complete | incomplete | frame errors | drops | fps a stream | Gb/s of frames | kept up | source fps a stream | source Gb/s | source kept up |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
		for (int i = 0; i < vr->nruns; i++) {
			const struct fvideo_res *r = &vr->runs[i];
			const struct fvideo_src *sr = &vr->srcs[i];
			bool src_ok = sr->ok && sr->packets == (uint64_t)r->packets_per_frame * r->frames_sent &&
				      sr->fps >= 60;

			fprintf(f, "| %d | %u | %u | %llu | %llu | %llu | %llu | %llu | %.1f | %.2f | %s | %.1f | %.2f | %s |\n",
				vr->run_round[i] + 1, r->streams, r->ports,
				(unsigned long long)r->frames_sent, (unsigned long long)r->complete,
				(unsigned long long)r->incomplete, (unsigned long long)r->errored,
				(unsigned long long)r->drops, r->fps, r->gbps,
				fvideo_keeps_up(r) ? "yes" : "no", sr->fps, sr->gbps, src_ok ? "yes" : "no");
		}
		fprintf(f, "\n| round | streams kept up (pipeline) | streams kept up (source alone) |\n|---|---|---|\n");
		for (int i = 0; i < vr->n; i++)
			fprintf(f, "| %d | %.0f | %.0f |\n", i + 1, vr->v[i], vr->src[i]);
		fprintf(f, "\n");
	} else {
		fprintf(f, "- not measured: %s\n\n", vr->why);
	}
}

void pair_target(FILE *f, const char *engine, const struct pair_rounds *pr)
{
	char name[96];

	snprintf(name, sizeof(name), "format_%s_vs_vfgx_%s_%uB", engine, pr->p.profile, pr->p.size);
	if (pr->n < 1) {
		char why[320];

		snprintf(why, sizeof(why), "not measured: %s", pr->why[0] ? pr->why : "no round");
		bench_target_unmeasured(f, name, 0.9, why);
		return;
	}
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = name, .measured = pr->prof, .reference = pr->ref, .n = pr->n,
		.goal = 0.9, .goal_on_ratio = true, .higher_better = true });
}

void video_target(FILE *f, const char *name, const struct fvideo_rounds *vr, double goal,
		  double ref)
{
	if (vr->n < 1 || isnan(vr->v[0])) {
		char why[320];

		snprintf(why, sizeof(why), "not measured: %s", vr->why);
		bench_target_unmeasured(f, name, goal, why);
		return;
	}
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = name, .measured = vr->v, .ref_value = ref, .n = vr->n, .goal = goal,
		.higher_better = true });
}

/* rtp_video_streams_gpu: streams kept up per round against the streams
 * the source alone fed in the same round (top: the sweep's largest
 * count).  Where the goal is not met the line says what held the count
 * down (results.c writes the line; the note follows): the sweep (every
 * count kept up, the largest below the goal), the pipeline (it kept fewer
 * than the source fed) or the source (it fed fewer than the goal). */
void streams_target(FILE *f, const char *name, const struct fvideo_rounds *vr, double goal,
		    uint32_t top)
{
	char *line = NULL;
	size_t len = 0;
	double mv, ms;
	FILE *m;
	int met;

	if (vr->n < 1 || !vr->nruns) {
		char why[320];

		snprintf(why, sizeof(why), "not measured: %s", vr->why);
		bench_target_unmeasured(f, name, goal, why);
		return;
	}
	m = open_memstream(&line, &len);
	if (!m)
		return;
	met = bench_target_rounds(m, &(struct bench_target_rounds){
		.name = name, .measured = vr->v, .reference = vr->src, .n = vr->n, .goal = goal,
		.higher_better = true });
	fclose(m);
	if (len && line[len - 1] == '\n')
		line[--len] = '\0';
	mv = bench_median(vr->v, vr->n);
	ms = bench_median(vr->src, vr->n);
	if (met == 0 && mv >= top && top < goal)
		fprintf(f, "%s (the sweep was the limit: every count up to its largest, %u, kept up; run --video-streams with counts of %g and more)\n",
			line, top, goal);
	else if (met == 0 && mv < goal && mv < ms)
		fprintf(f, "%s (the pipeline was the limit: it kept a median of %g streams whole at 60 fps, the pcap ports alone fed %g)\n",
			line, mv, ms);
	else if (met == 0 && ms < goal)
		fprintf(f, "%s (the source was the limit: the pcap ports alone fed a median of %g streams at 60 fps, the pipeline kept %g)\n",
			line, ms, mv);
	else
		fprintf(f, "%s\n", line);
	free(line);
}
