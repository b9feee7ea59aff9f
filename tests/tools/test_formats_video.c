/* test_formats_video.c - issue #38: the capture files of `vfgx bench
 * formats`' video runs (bench/formats_video.c) put several RFC 4175
 * streams on one port as a wire does.  tshark's RTP dissector is the
 * oracle for the files: each port's file holds exactly its streams'
 * SSRCs (stream s in file s % ports), their packets interleaved in send
 * order, each stream's RTP sequence in order with one marker bit a frame.
 * The runs read them: the cpu engine's pipeline assembles every frame of
 * every stream whole (rtp-video telling the streams apart by SSRC on the
 * shared ports), and the source alone reads every record tshark counted;
 * the sweep runs every count of every round with its source beside it.
 * Exit 77 without tshark or without libpcap in the build. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats.h"

#define VIDEO_SSRC0 0x4b000000u /* formats_video.c's VIDEO_SSRC */
#define T_STREAMS 5
#define PORTS 2
#define FRAMES 3

/* tshark's reading of one port file: every record's SSRC, sequence and
 * marker bit checked against the layout; its record count. */
static uint64_t check_port(const struct fvideo_files *fs, uint32_t p)
{
	uint32_t mine[T_STREAMS], nmine = 0, seq[T_STREAMS] = { 0 }, marks[T_STREAMS] = { 0 };
	uint64_t rec = 0;
	char cmd[1024], line[256];
	FILE *t;

	for (uint32_t s = p; s < fs->streams; s += fs->ports)
		mine[nmine++] = s;
	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s/port%u.pcap -d udp.port==6000,rtp -T fields -e rtp.ssrc -e rtp.seq -e rtp.marker 2>/dev/null",
		 fs->dir, p);
	t = popen(cmd, "r");
	if (!t) {
		CHECK(0, "popen tshark: %s", strerror(errno));
		return 0;
	}
	while (fgets(line, sizeof(line), t)) {
		unsigned long ssrc, sq, mk;
		uint32_t want = mine[rec % nmine], k = (uint32_t)(rec % nmine);

		if (sscanf(line, "%lx %lu %lu", &ssrc, &sq, &mk) != 3) {
			CHECK(0, "port %u record %llu: tshark printed '%s'", p,
			      (unsigned long long)rec + 1, line);
			break;
		}
		/* send order: packet j of each of the port's streams, then j + 1 */
		CHECK(ssrc == VIDEO_SSRC0 + want, "port %u record %llu: SSRC 0x%lx, wanted 0x%x", p,
		      (unsigned long long)rec + 1, ssrc, VIDEO_SSRC0 + want);
		CHECK(sq == (seq[k] & 0xffff), "port %u record %llu: sequence %lu, wanted %u", p,
		      (unsigned long long)rec + 1, sq, seq[k] & 0xffff);
		seq[k]++;
		marks[k] += mk == 1;
		rec++;
	}
	CHECK(pclose(t) == 0, "tshark on port %u failed", p);
	for (uint32_t k = 0; k < nmine; k++) {
		CHECK(marks[k] == fs->frames, "port %u stream %u: %u marker bits, wanted %u frames", p,
		      mine[k], marks[k], fs->frames);
		CHECK(seq[k] == fs->packets_per_frame * fs->frames,
		      "port %u stream %u: %u packets, wanted %u x %u", p, mine[k], seq[k],
		      fs->packets_per_frame, fs->frames);
	}
	return rec;
}

/* The sweep's plumbing on the cpu engine (the bench runs it on the gpu
 * engine at 4K): every count of every round run and its source read, the
 * order of the runs, each run clean; the values are counts of the sweep
 * (whether a run kept 60 fps is a rate: not asserted). */
static void check_sweep(vfgx_ctx *ctx)
{
	static struct fvideo_rounds vr;
	static const uint32_t sweep[] = { 2, 3 };
	int ret = fvideo_sweep(ctx, false, 1280, 64, 2, FRAMES, sweep, 2, &vr);

	CHECK(ret == 0 && vr.n == 2 && vr.nruns == 4, "sweep: %d, %d rounds, %d runs (%s)", ret,
	      vr.n, vr.nruns, vr.why);
	for (int i = 0; i < vr.nruns && i < 4; i++) {
		const struct fvideo_res *r = &vr.runs[i];
		uint32_t n = sweep[i / 2];

		CHECK(vr.run_round[i] == i % 2 && r->streams == n && r->ports == fvideo_ports_for(n),
		      "sweep run %d: round %d, %u streams on %u ports", i, vr.run_round[i] + 1,
		      r->streams, r->ports);
		CHECK(fvideo_clean(r) && r->complete == (uint64_t)n * FRAMES,
		      "sweep run %d: %llu of %u frames complete, %llu errored", i,
		      (unsigned long long)r->complete, n * FRAMES, (unsigned long long)r->errored);
		CHECK(vr.srcs[i].ok &&
		      vr.srcs[i].packets == (uint64_t)n * FRAMES * r->packets_per_frame,
		      "sweep run %d: the source read %llu packets of %llu", i,
		      (unsigned long long)vr.srcs[i].packets,
		      (unsigned long long)n * FRAMES * r->packets_per_frame);
	}
	for (int i = 0; i < vr.n; i++)
		CHECK((vr.v[i] == 0 || vr.v[i] == 2 || vr.v[i] == 3) &&
		      (vr.src[i] == 0 || vr.src[i] == 2 || vr.src[i] == 3),
		      "sweep round %d: %g streams kept up, source %g: not a count of the sweep", i + 1,
		      vr.v[i], vr.src[i]);
}

int main(void)
{
	struct fvideo_files fs;
	struct fvideo_res r;
	struct fvideo_src src;
	uint64_t records = 0;
	vfgx_ctx *ctx = NULL;
	int ret;

	if (system("tshark -v >/dev/null 2>&1") != 0) {
		printf("SKIP: no tshark\n");
		return 77;
	}
	/* the ports a count shares: at most 8, the fewest streams a port */
	CHECK(fvideo_ports_for(1) == 1 && fvideo_ports_for(8) == 8 && fvideo_ports_for(12) == 6 &&
	      fvideo_ports_for(16) == 8 && fvideo_ports_for(20) == 7 && fvideo_ports_for(64) == 8,
	      "fvideo_ports_for: 1 %u, 8 %u, 12 %u, 16 %u, 20 %u, 64 %u", fvideo_ports_for(1),
	      fvideo_ports_for(8), fvideo_ports_for(12), fvideo_ports_for(16), fvideo_ports_for(20),
	      fvideo_ports_for(64));
	ret = fvideo_files_make(&fs, T_STREAMS, PORTS, 1280, 64, FRAMES);
	if (ret == -ENOTSUP) {
		printf("SKIP: this build has no libpcap\n");
		return 77;
	}
	if (ret) {
		printf("FAIL: fvideo_files_make\n");
		return 1;
	}
	CHECK(fs.packets_per_frame > 1, "a frame of %u packets: the test wants several",
	      fs.packets_per_frame);
	for (uint32_t p = 0; p < PORTS; p++)
		records += check_port(&fs, p);
	CHECK(records == (uint64_t)T_STREAMS * FRAMES * fs.packets_per_frame,
	      "tshark read %llu records, wanted %u x %u x %u", (unsigned long long)records, T_STREAMS,
	      FRAMES, fs.packets_per_frame);
	if (vfgx_ctx_create(&ctx)) {
		printf("FAIL: vfgx_ctx_create\n");
		fvideo_files_remove(&fs);
		return 1;
	}
	ret = fvideo_run(ctx, &fs, false, &r);
	CHECK(ret == 0 && r.ok, "the cpu engine's run: %d, %s", ret, r.why);
	CHECK(r.complete == (uint64_t)T_STREAMS * FRAMES && r.incomplete == 0 && r.errored == 0 &&
	      r.drops == 0 && fvideo_clean(&r),
	      "%u streams on %u ports: %llu frames complete, %llu incomplete, %llu errored, %llu drops; wanted %u complete",
	      T_STREAMS, PORTS, (unsigned long long)r.complete, (unsigned long long)r.incomplete,
	      (unsigned long long)r.errored, (unsigned long long)r.drops, T_STREAMS * FRAMES);
	ret = fvideo_source(ctx, &fs, false, &src);
	CHECK(ret == 0 && src.ok && src.packets == records,
	      "the source alone: %d, %s, %llu packets read, tshark counted %llu", ret, src.why,
	      (unsigned long long)src.packets, (unsigned long long)records);
	fvideo_files_remove(&fs);
	check_sweep(ctx);
	vfgx_ctx_destroy(ctx);
	if (!fails)
		printf("formats-video: %u streams on %u ports, %llu records as tshark reads them; %u frames whole through the cpu engine; the source alone read them all\n",
		       T_STREAMS, PORTS, (unsigned long long)records, T_STREAMS * FRAMES);
	return fails ? 1 : 0;
}
