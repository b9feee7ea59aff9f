/* formats_video.c - the RFC 4175 video runs of `vfgx bench formats`
 * (formats.h): each stream's frames written once as RTP packets by vfgx's
 * own encoder (vfgx_fmt_encode, the rtp-video profile; tests/net/format
 * checks it against GStreamer), several streams a capture file (libpcap),
 * interleaved in send order and told apart by their SSRCs as on a wire;
 * a pcap port per file replays it as fast as it reads (`timing: fast`;
 * for the gpu engine preloaded into GPU memory, handed out without a
 * copy) into vfgx_pipeline with pipeline.format rtp-video and chunks: one chunk
 * per frame, taken and given back by a consumer thread.  The source alone
 * (the same ports, no pipeline) is the reference of what the files can
 * feed.  A pool is one thread's (vfgx/mem.h): no thread but the
 * pipeline's (or the source run's own, one a port) touches a port. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/bench.h>
#include <vfgx/vfgx.h>

#include "formats.h"
#include "vfgx_build.h"
#if VFGX_HAVE_PCAP
#include <pcap/pcap.h>
#endif

#define VIDEO_PORT 6000         /* UDP destination of every packet */
#define VIDEO_SSRC 0x4b000000u  /* stream s: SSRC VIDEO_SSRC + s */
#define VIDEO_SLOT 1536u        /* bytes per prebuilt packet */
#define VIDEO_TS_STEP 1500      /* 90 kHz RTP clock at 60 frames a second */
#define ETH_IP_UDP 42

struct vstream {
	uint8_t *mem;              /* npk x VIDEO_SLOT: one frame's packets */
	uint32_t *len;
	uint32_t npk;
};

struct vrun {
	vfgx_pipeline *pl;
	atomic_uint_fast64_t complete, errored;
	_Atomic uint64_t last_ns;
	_Atomic uint64_t consumer_cpu_ns; /* the consumer's thread CPU time so far */
};

static uint64_t cpu_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if VFGX_HAVE_PCAP
/* One RFC 4175 packet of the frame: the generator's frame layout (MACs,
 * IPv4, UDP to VIDEO_PORT, no UDP checksum) around vfgx_fmt_encode's
 * payload, the IPv4 and UDP lengths and the IPv4 checksum set for it. */
static int build_packet(const struct vfgx_format *f, const struct vfgx_fmt_send *h,
			uint32_t stream, uint64_t k, uint8_t *b, uint32_t *len)
{
	struct vfgx_pkt_spec sp = {
		.src_ip = 0xC6120001, .dst_ip = 0xC6120002, .src_port = 4000,
		.dst_port = VIDEO_PORT, .frame_len = FVIDEO_FRAME_LEN, .udp_csum = false,
	};
	int pl;

	if (!vfgx_pkt_build(b, VIDEO_SLOT, &sp))
		return -1;
	pl = vfgx_fmt_encode(f, h, stream, k, b + ETH_IP_UDP, FVIDEO_FRAME_LEN - ETH_IP_UDP);
	if (pl < 0)
		return -1;
	vfgx_wr16(b + 14 + 2, (uint16_t)(20 + 8 + pl));
	vfgx_wr16(b + 14 + 10, 0);
	vfgx_wr16(b + 14 + 10, vfgx_csum_fold(vfgx_csum_add(0, b + 14, 20)));
	vfgx_wr16(b + 34 + 4, (uint16_t)(8 + pl));
	vfgx_wr16(b + 34 + 6, 0);
	*len = ETH_IP_UDP + (uint32_t)pl;
	return 0;
}

/* A frame's packets, k = 0 .. until the one with the marker bit. */
static int build_stream(const struct vfgx_format *f, uint32_t s, struct vstream *vs)
{
	struct vfgx_fmt_send h;
	uint32_t cap = 1024;

	vfgx_fmt_send_default(&h);
	h.stream_id = VIDEO_SSRC;
	h.timestamp_step = VIDEO_TS_STEP;
	memset(vs, 0, sizeof(*vs));
	for (;;) {
		uint8_t *m = realloc(vs->mem, (size_t)cap * VIDEO_SLOT);
		uint32_t *l = realloc(vs->len, (size_t)cap * sizeof(*l));

		if (m)
			vs->mem = m;
		if (l)
			vs->len = l;
		if (!m || !l)
			return -1;
		for (; vs->npk < cap; vs->npk++) {
			uint8_t *b = vs->mem + (size_t)vs->npk * VIDEO_SLOT;

			if (build_packet(f, &h, s, vs->npk, b, &vs->len[vs->npk]))
				return -1;
			if (b[ETH_IP_UDP + 1] & 0x80) { /* the marker: the frame's last */
				vs->npk++;
				return 0;
			}
		}
		cap *= 2;
	}
}

/* Frame m's packets: sequence m x npk + j (RTP's 16 bits and RFC 4175's
 * upper 16), timestamp m x VIDEO_TS_STEP; the rest as built. */
static void rewrite_frame(struct vstream *vs, uint64_t m)
{
	for (uint32_t j = 0; j < vs->npk; j++) {
		uint8_t *p = vs->mem + (size_t)j * VIDEO_SLOT + ETH_IP_UDP;
		uint64_t k = m * vs->npk + j;

		vfgx_wr16(p + 2, (uint16_t)k);
		vfgx_wr32(p + 4, (uint32_t)(m * VIDEO_TS_STEP));
		vfgx_wr16(p + 12, (uint16_t)(k >> 16));
	}
}

/* The file of port p: its streams (s = p, p + ports, ...), frames frames
 * each, a frame's packets interleaved (packet j of every stream of the
 * port, then j + 1), the frame 1/60 s long (the pcap port reads them as
 * fast as it can: timing fast). */
static int write_port(const struct vfgx_format *f, const struct fvideo_files *fs, uint32_t p,
		      const char *path, uint32_t *npk)
{
	struct vstream vs[FVIDEO_MAX_STREAMS];
	pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
	pcap_dumper_t *d = dead ? pcap_dump_open(dead, path) : NULL;
	uint32_t ns = 0;
	int ret = -1;

	memset(vs, 0, sizeof(vs));
	if (!d) {
		fprintf(stderr, "vfgx bench formats: %s: %s\n", path,
			dead ? pcap_geterr(dead) : "pcap_open_dead");
		goto out;
	}
	for (uint32_t s = p; s < fs->streams; s += fs->ports, ns++)
		if (build_stream(f, s, &vs[ns]) || vs[ns].npk != vs[0].npk) {
			fprintf(stderr, "vfgx bench formats: %s: cannot build the RFC 4175 packets\n",
				path);
			ns++;
			goto out;
		}
	*npk = vs[0].npk;
	for (uint32_t m = 0; m < fs->frames; m++) {
		for (uint32_t q = 0; q < ns; q++)
			rewrite_frame(&vs[q], m);
		for (uint32_t j = 0; j < vs[0].npk; j++)
			for (uint32_t q = 0; q < ns; q++) {
				struct pcap_pkthdr ph = { .caplen = vs[q].len[j], .len = vs[q].len[j] };

				ph.ts.tv_sec = m / 60;
				ph.ts.tv_usec = (m % 60) * 16666 + (suseconds_t)((uint64_t)j * 16666 / vs[0].npk);
				pcap_dump((u_char *)d, &ph, vs[q].mem + (size_t)j * VIDEO_SLOT);
			}
	}
	/* on the disk before the first run: the kernel's writeback of the
	 * files otherwise runs during the first round, on its CPUs and memory
	 * bandwidth */
	if (pcap_dump_flush(d) == 0 && fsync(fileno(pcap_dump_file(d))) == 0)
		ret = 0;
	else
		fprintf(stderr, "vfgx bench formats: %s: %s\n", path, strerror(errno));
out:
	for (uint32_t q = 0; q < ns; q++) {
		free(vs[q].mem);
		free(vs[q].len);
	}
	if (d)
		pcap_dump_close(d);
	if (dead)
		pcap_close(dead);
	return ret;
}
#endif

/* The consumer a user runs: every ready frame taken, counted, given back. */
static void *consumer_main(void *arg)
{
	struct vrun *v = arg;
	struct vfgx_chunk *c;
	uint64_t c0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	int ret;

	while ((ret = vfgx_chunk_get(v->pl, 50, &c)) != -ENODATA) {
		if (ret) {
			if (ret != -ETIMEDOUT && ret != -EAGAIN)
				break;
			continue;
		}
		if ((c->flags & VFGX_CHUNK_COMPLETE) && c->missing_bytes == 0)
			atomic_fetch_add(&v->complete, 1);
		else
			atomic_fetch_add(&v->errored, 1);
		vfgx_chunk_put(v->pl, c->stream, c->index);
		atomic_store(&v->consumer_cpu_ns, cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
		atomic_store(&v->last_ns, vfgx_now_ns());
	}
	return NULL;
}

/* The interfaces of fs: a pcap port a file.  For gpu each file is
 * preloaded (pcap.preload) into a GPU memory region of its own, a buffer a
 * record, before the run: rx then hands out frames already in GPU memory,
 * as a NIC's rx ring does, and the run measures the pipeline, not libpcap
 * reading the file. */
static int ports_yaml(char *y, size_t len, const struct fvideo_files *fs, bool gpu)
{
	/* the records of the file with the most streams */
	uint64_t recs = (uint64_t)(fs->streams + fs->ports - 1) / fs->ports * fs->frames *
			fs->packets_per_frame;
	size_t n = (size_t)snprintf(y, len, "log_level: warn\n");

	if (gpu) {
		n += (size_t)snprintf(y + n, len - n, "memory_regions:\n");
		for (uint32_t q = 0; q < fs->ports && n < len; q++)
			n += (size_t)snprintf(y + n, len - n,
					      "  - {name: rx%u, kind: gpu, buf_size: 2048, num_bufs: %llu}\n",
					      q, (unsigned long long)(recs ? recs : 1));
	}
	if (n < len)
		n += (size_t)snprintf(y + n, len - n, "interfaces:\n");
	for (uint32_t q = 0; q < fs->ports && n < len; q++) {
		n += (size_t)snprintf(y + n, len - n,
				      "  - name: video%u\n"
				      "    backend: pcap\n"
				      "    pcap: {file: %s/port%u.pcap, timing: fast, buf_size: 2048, num_bufs: 16384, preload: %s}\n",
				      q, fs->dir, q, gpu ? "true" : "false");
		if (gpu && n < len)
			n += (size_t)snprintf(y + n, len - n,
					      "    rx: {queues: [{id: 0, memory_region: rx%u}]}\n", q);
	}
	return n < len ? (int)n : -1;
}

static int video_yaml(char *y, size_t len, const struct fvideo_files *fs, bool gpu,
		      uint32_t chunk_packets)
{
	char ids[FVIDEO_MAX_STREAMS * 14] = "";
	int n0 = ports_yaml(y, len, fs, gpu);
	size_t n;

	if (n0 < 0)
		return -1;
	n = (size_t)n0;
	for (uint32_t q = 0; q < fs->streams; q++)
		snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s0x%x", q ? ", " : "",
			 VIDEO_SSRC + q);
	n += (size_t)snprintf(y + n, len - n,
			      "pipeline:\n"
			      "  device: %s\n"
			      "  workers: 1\n"
			      "  filter: {udp_dst_ports: [%u]}\n"
			      "  reorder: {max_streams: %u}\n"
			      "  format: {profile: rtp-video, width: %u, height: %u, stream_ids: [%s]}\n"
			      "  chunks: {payload_bytes: 1500, packets: %u, streams: %u, in_flight: 4, mem: %s}\n"
			      "  gpu: {mode: persistent, items: 64, burst: 1024, timeout_ms: 20000}\n",
			      gpu ? "gpu" : "cpu", VIDEO_PORT, fs->streams, fs->width, fs->height, ids,
			      chunk_packets, fs->streams, gpu ? "gpu" : "host");
	return n < len ? 0 : -1;
}

uint32_t fvideo_ports_for(uint32_t streams)
{
	uint32_t per = (streams + FVIDEO_MAX_PORTS - 1) / FVIDEO_MAX_PORTS;

	return per ? (streams + per - 1) / per : 1;
}

static void port_path(char *path, size_t len, const struct fvideo_files *fs, uint32_t p)
{
	snprintf(path, len, "%s/port%u.pcap", fs->dir, p);
}

int fvideo_files_make(struct fvideo_files *fs, uint32_t streams, uint32_t ports, uint32_t width,
		      uint32_t height, uint32_t frames)
{
#if VFGX_HAVE_PCAP
	struct vfgx_format f;
	const char *tmp = getenv("TMPDIR");

	memset(fs, 0, sizeof(*fs));
	fs->streams = streams;
	fs->ports = ports;
	fs->width = width;
	fs->height = height;
	fs->frames = frames;
	snprintf(fs->dir, sizeof(fs->dir), "%s/vfgx-formats-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (streams == 0 || streams > FVIDEO_MAX_STREAMS || ports == 0 || ports > streams ||
	    ports > FVIDEO_MAX_PORTS) {
		fprintf(stderr, "vfgx bench formats: %u streams on %u ports: 1..%d streams, 1..%d ports, no more ports than streams\n",
			streams, ports, FVIDEO_MAX_STREAMS, FVIDEO_MAX_PORTS);
		fs->dir[0] = '\0';
		return -1;
	}
	if (!mkdtemp(fs->dir)) {
		fprintf(stderr, "vfgx bench formats: cannot make %s: %s\n", fs->dir, strerror(errno));
		fs->dir[0] = '\0';
		return -1;
	}
	if (vfgx_format_profile("rtp-video", &f))
		return -1;
	f.stride = width / f.pgroup_pixels * f.pgroup_bytes;
	f.chunk_bytes = (uint64_t)f.stride * height;
	fs->frame_bytes = f.chunk_bytes;
	for (uint32_t p = 0; p < ports; p++) {
		char path[600];

		port_path(path, sizeof(path), fs, p);
		if (write_port(&f, fs, p, path, &fs->packets_per_frame)) {
			fvideo_files_remove(fs);
			return -1;
		}
	}
	return 0;
#else
	memset(fs, 0, sizeof(*fs));
	(void)streams, (void)ports, (void)width, (void)height, (void)frames;
	return -ENOTSUP;
#endif
}

void fvideo_files_remove(struct fvideo_files *fs)
{
	if (!fs->dir[0])
		return;
	for (uint32_t p = 0; p < fs->ports; p++) {
		char path[600];

		port_path(path, sizeof(path), fs, p);
		unlink(path);
	}
	rmdir(fs->dir);
	fs->dir[0] = '\0';
}

int fvideo_run(vfgx_ctx *ctx, const struct fvideo_files *fs, bool gpu, struct fvideo_res *r)
{
	vfgx_port *ports[FVIDEO_MAX_PORTS] = { 0 };
	struct vfgx_pipeline_stats st;
	struct vfgx_config *cfg = NULL;
	struct vrun v = { 0 };
	uint32_t chunk_packets, nports = 0;
	bool consumer = false;
	pthread_t ct;
	char y[FVIDEO_MAX_PORTS * 512 + FVIDEO_MAX_STREAMS * 16 + 1024];
	uint64_t t0, p0, m0;
	double pipe_ns;
	int ret = -1;

	memset(r, 0, sizeof(*r));
	r->streams = fs->streams;
	r->ports = fs->ports;
	r->packets_per_frame = fs->packets_per_frame;
	/* the present bitmap: at least a frame's packets */
	chunk_packets = (fs->packets_per_frame + 1023) / 1024 * 1024;
	if (video_yaml(y, sizeof(y), fs, gpu, chunk_packets))
		return -1;
	ret = vfgx_config_load_string(ctx, y, strlen(y), "formats-video.yaml", &cfg);
	for (uint32_t q = 0; !ret && q < fs->ports; q++)
		if (!(ret = vfgx_port_open_config(ctx, cfg, &cfg->ifaces[q], &ports[q])))
			nports++;
	if (ret || vfgx_pipeline_create(ctx, &cfg->pipeline, ports, (uint16_t)nports, &v.pl)) {
		/* the library refused it: its line is the result */
		snprintf(r->why, sizeof(r->why), "%s", vfgx_last_error(ctx));
		ret = 0;
		goto out;
	}
	t0 = vfgx_now_ns();
	p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
	m0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	atomic_store(&v.last_ns, t0);
	if (vfgx_pipeline_start(v.pl)) {
		snprintf(r->why, sizeof(r->why), "%s", vfgx_last_error(ctx));
		ret = 0;
		goto out;
	}
	if (pthread_create(&ct, NULL, consumer_main, &v)) {
		ret = -1;
		goto out;
	}
	consumer = true;
	/* the files end: the sources are done */
	while (!vfgx_pipeline_done(v.pl) && !vfgx_pipeline_error(v.pl)) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	/* the pipeline's threads: the process less the consumer and this
	 * thread, up to the end of the input (the worker's idle polls
	 * after it not counted) */
	pipe_ns = (double)(cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - p0) -
		  (double)(cpu_ns(CLOCK_THREAD_CPUTIME_ID) - m0) -
		  (double)atomic_load(&v.consumer_cpu_ns);
	vfgx_pipeline_stop(v.pl);
	pthread_join(ct, NULL);
	consumer = false;
	vfgx_pipeline_stats(v.pl, &st);
	{
		/* -Dgpu_item_stamps: where the gpu engine's items spent their time */
		char sb[640];

		if (gpu && !vfgx_pipeline_item_stamps(v.pl, sb, sizeof(sb)))
			printf("gpu video %u streams: %s\n", fs->streams, sb);
	}
	if ((ret = vfgx_pipeline_error(v.pl))) {
		snprintf(r->why, sizeof(r->why), "%s", vfgx_last_error(ctx));
		ret = 0;
		goto out;
	}
	r->ok = true;
	r->frames_sent = (uint64_t)fs->frames * fs->streams;
	r->complete = atomic_load(&v.complete);
	r->incomplete = atomic_load(&v.errored);
	r->errored = r->incomplete;
	/* a frame sent but never handed out is an errored frame too */
	if (r->complete + r->errored < r->frames_sent)
		r->errored = r->frames_sent - r->complete;
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		r->drops += st.drops[i];
	r->seconds = (double)(atomic_load(&v.last_ns) - t0) / 1e9;
	r->pipeline_cpu_s = pipe_ns / 1e9;
	if (pipe_ns > 0)
		r->fps_cpu = (double)r->complete / fs->streams / r->pipeline_cpu_s;
	if (r->seconds > 0) {
		r->fps = (double)r->complete / fs->streams / r->seconds;
		r->gbps = (double)r->complete * (double)fs->frame_bytes * 8 / r->seconds / 1e9;
	}
	ret = 0;
out:
	if (consumer) {
		vfgx_pipeline_stop(v.pl);
		pthread_join(ct, NULL);
	}
	vfgx_pipeline_destroy(v.pl);
	for (uint32_t q = 0; q < nports; q++)
		vfgx_port_close(ports[q]);
	vfgx_config_destroy(cfg);
	return ret;
}

/* ---- the source alone ------------------------------------------------------
 * One thread a port, as the gpu engine's rx lanes (one a queue while two
 * CPUs stay free; the files are at most FVIDEO_MAX_PORTS): rx_burst of the
 * queue's batch, every packet given back at once. */
struct src_thread {
	vfgx_port *port;
	pthread_t t;
	uint64_t packets, end_ns;
	int err;
};

static void *source_main(void *arg)
{
	struct src_thread *st = arg;
	uint16_t batch = vfgx_port_rx_batch(st->port, 0);
	struct vfgx_pkt pkts[256];
	int n;

	if (batch == 0 || batch > 256)
		batch = 256;
	for (;;) {
		n = vfgx_port_rx_burst(st->port, 0, pkts, batch);
		if (n < 0) {
			st->err = n;
			break;
		}
		if (n > 0) {
			st->packets += (uint64_t)n;
			vfgx_port_release(st->port, 0, pkts, (uint16_t)n);
		} else if (vfgx_port_rx_done(st->port, 0)) {
			break;
		}
	}
	st->end_ns = vfgx_now_ns();
	return NULL;
}

int fvideo_source(vfgx_ctx *ctx, const struct fvideo_files *fs, bool gpu, struct fvideo_src *r)
{
	struct src_thread th[FVIDEO_MAX_PORTS];
	struct vfgx_config *cfg = NULL;
	char y[FVIDEO_MAX_PORTS * 512 + 256];
	uint32_t nports = 0, started = 0;
	uint64_t t0, end = 0;
	int ret;

	memset(r, 0, sizeof(*r));
	memset(th, 0, sizeof(th));
	if (ports_yaml(y, sizeof(y), fs, gpu) < 0)
		return -1;
	ret = vfgx_config_load_string(ctx, y, strlen(y), "formats-source.yaml", &cfg);
	for (uint32_t q = 0; !ret && q < fs->ports; q++)
		if (!(ret = vfgx_port_open_config(ctx, cfg, &cfg->ifaces[q], &th[q].port)))
			nports++;
	if (ret) {
		snprintf(r->why, sizeof(r->why), "%s", vfgx_last_error(ctx));
		ret = 0;
		goto out;
	}
	t0 = vfgx_now_ns();
	for (; started < nports; started++)
		if (pthread_create(&th[started].t, NULL, source_main, &th[started]))
			break;
	for (uint32_t q = 0; q < started; q++) {
		pthread_join(th[q].t, NULL);
		r->packets += th[q].packets;
		if (th[q].end_ns > end)
			end = th[q].end_ns;
		if (th[q].err && !r->why[0])
			snprintf(r->why, sizeof(r->why), "%s: rx failed: %s",
				 vfgx_port_name(th[q].port), vfgx_strerror(th[q].err));
	}
	if (started < nports) {
		ret = -1;
		goto out;
	}
	r->ok = !r->why[0];
	r->seconds = (double)(end - t0) / 1e9;
	if (r->seconds > 0 && fs->packets_per_frame) {
		double frames = (double)r->packets / fs->packets_per_frame;

		r->fps = frames / fs->streams / r->seconds;
		r->gbps = frames * (double)fs->frame_bytes * 8 / r->seconds / 1e9;
	}
	ret = 0;
out:
	for (uint32_t q = 0; q < nports; q++)
		vfgx_port_close(th[q].port);
	vfgx_config_destroy(cfg);
	return ret;
}

/* ---- the rounds of `vfgx bench formats` ------------------------------------ */

bool fvideo_clean(const struct fvideo_res *r)
{
	return r->ok && r->frames_sent && r->errored == 0 && r->drops == 0 &&
	       r->complete == r->frames_sent;
}

int fvideo_cpu_rounds(vfgx_ctx *ctx, int rounds, uint32_t frames, struct fvideo_rounds *vr)
{
	if (!frames)
		frames = 60;
	struct fvideo_files fs;
	int ret = fvideo_files_make(&fs, 1, 1, 1920, 1080, frames);

	if (ret) {
		snprintf(vr->why, sizeof(vr->why), "%s", ret == -ENOTSUP ?
			 "this build has no libpcap (the capture files the video runs replay)" :
			 "the capture files could not be written (stderr)");
		return ret == -ENOTSUP ? 0 : -1;
	}
	vr->n = rounds;
	for (int i = 0; i < rounds; i++) {
		struct fvideo_res *r = &vr->last[i];

		if (fvideo_run(ctx, &fs, false, r)) {
			fvideo_files_remove(&fs);
			return -1;
		}
		if (!r->ok) {
			snprintf(vr->why, sizeof(vr->why), "%s", r->why);
			fprintf(stderr, "vfgx bench formats: 1080p60 on the cpu engine: %s\n", r->why);
			vr->n = 0;
			break;
		}
		/* a frame with an error makes the round's rate 0 */
		vr->v[i] = fvideo_clean(r) ? r->fps_cpu : 0;
		printf("cpu 1080p round %d: %llu of %llu frames complete, %llu errored, %llu drops, %.1f fps per pipeline CPU-second, %.1f fps by the wall clock (%.2f Gb/s)\n",
		       i + 1, (unsigned long long)r->complete, (unsigned long long)r->frames_sent,
		       (unsigned long long)r->errored, (unsigned long long)r->drops, r->fps_cpu,
		       r->fps, r->gbps);
	}
	fvideo_files_remove(&fs);
	return 0;
}

/* A run keeps up: every frame sent handed out complete, no pipeline drop,
 * and at least 60 complete frames a second per stream by the wall clock. */
bool fvideo_keeps_up(const struct fvideo_res *r)
{
	return fvideo_clean(r) && r->fps >= 60;
}

/* The source alone keeps up: every port read to its end without an error
 * at 60 frames' worth of packets a second per stream or more. */
bool fvideo_source_keeps_up(const struct fvideo_src *s, const struct fvideo_files *fs)
{
	return s->ok && s->packets == (uint64_t)fs->packets_per_frame * fs->frames * fs->streams &&
	       s->fps >= 60;
}

/* The sweep, one stream count at a time (its files made, its rounds run,
 * its files removed: the counts' files never share the disk): in each
 * round the pipeline and the source alone, in an order flipped every
 * round.  A round's value: the largest count whose run kept up
 * (video_keeps_up), 0 when none; its reference the largest count whose
 * source alone kept up. */
int fvideo_sweep(vfgx_ctx *ctx, bool gpu, uint32_t width, uint32_t height, int rounds,
		 uint32_t frames, const uint32_t *sweep, int nsweep, struct fvideo_rounds *vr)
{
	/* a second of video a stream: at 10 frames (a sixth of a second) the
	 * rounds of 12 streams spread from 59.5 to 91.8 fps (H200, 03130ae),
	 * at 20 from 57.1 to 77.7, at 60 from 60.6 to 83.2 */
	if (!frames)
		frames = 60;

	vr->n = rounds;
	for (int k = 0; k < nsweep; k++) {
		uint32_t n = sweep[k];
		struct fvideo_files fs;
		int ret = fvideo_files_make(&fs, n, fvideo_ports_for(n), width, height, frames);

		if (ret) {
			snprintf(vr->why, sizeof(vr->why), "%s", ret == -ENOTSUP ?
				 "this build has no libpcap (the capture files the video runs replay)" :
				 "the capture files could not be written (stderr)");
			vr->n = 0;
			return ret == -ENOTSUP ? 0 : -1;
		}
		for (int i = 0; i < rounds; i++) {
			struct fvideo_res *r = &vr->runs[vr->nruns];
			struct fvideo_src *sr = &vr->srcs[vr->nruns];

			for (int side = 0; side < 2; side++) {
				bool pipe_turn = (side == 0) == (i % 2 == 0);

				ret = pipe_turn ? fvideo_run(ctx, &fs, gpu, r) :
						  fvideo_source(ctx, &fs, gpu, sr);
				if (ret) {
					fvideo_files_remove(&fs);
					return -1;
				}
			}
			vr->run_round[vr->nruns++] = i;
			if (!r->ok || !sr->ok) {
				snprintf(vr->why, sizeof(vr->why), "%u streams: %s", n,
					 r->ok ? sr->why : r->why);
				fprintf(stderr, "vfgx bench formats: %ux%u on the %s engine: %s\n", width,
					height, gpu ? "gpu" : "cpu", vr->why);
				fvideo_files_remove(&fs);
				vr->n = 0;
				return 0;
			}
			printf("%s %ux%u round %d, %u streams on %u ports: %llu of %llu frames complete, %llu incomplete, %llu errored, %llu drops, %.1f fps a stream (%.1f Gb/s); the source alone %.1f fps a stream (%.1f Gb/s)\n",
			       gpu ? "gpu" : "cpu", width, height, i + 1, n, fs.ports,
			       (unsigned long long)r->complete,
			       (unsigned long long)r->frames_sent, (unsigned long long)r->incomplete,
			       (unsigned long long)r->errored, (unsigned long long)r->drops, r->fps,
			       r->gbps, sr->fps, sr->gbps);
			if (fvideo_keeps_up(r))
				vr->v[i] = n; /* the sweep ascends: the largest so far */
			if (fvideo_source_keeps_up(sr, &fs))
				vr->src[i] = n;
		}
		fvideo_files_remove(&fs);
	}
	return 0;
}
