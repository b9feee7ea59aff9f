/* formats_video.c - the RFC 4175 video runs of `vfgx bench formats`
 * (formats.h): each stream's frames written once as RTP packets by vfgx's
 * own encoder (vfgx_fmt_encode, the rtp-video profile; tests/net/format
 * checks it against GStreamer) into a capture file (libpcap), which a pcap
 * port per stream replays as fast as it reads (`timing: fast`) into
 * vfgx_pipeline with pipeline.format rtp-video and chunks: one chunk per
 * frame, taken and given back by a consumer thread.  A pool is one
 * thread's (vfgx/mem.h): no thread but the pipeline's touches a port. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* frames frames of stream s into path, 1/60 s apart (the pcap port
 * reads them as fast as it can: timing fast) */
static int write_stream(const struct vfgx_format *f, uint32_t s, uint32_t frames,
			const char *path, uint32_t *npk)
{
	struct vstream vs;
	pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
	pcap_dumper_t *d = dead ? pcap_dump_open(dead, path) : NULL;
	int ret = -1;

	if (!d || build_stream(f, s, &vs)) {
		fprintf(stderr, "vfgx bench formats: %s: %s\n", path,
			d ? "cannot build the RFC 4175 packets" : dead ? pcap_geterr(dead) : "pcap_open_dead");
		goto out;
	}
	*npk = vs.npk;
	for (uint32_t m = 0; m < frames; m++) {
		rewrite_frame(&vs, m);
		for (uint32_t j = 0; j < vs.npk; j++) {
			struct pcap_pkthdr ph = { .caplen = vs.len[j], .len = vs.len[j] };

			ph.ts.tv_sec = m / 60;
			ph.ts.tv_usec = (m % 60) * 16666;
			pcap_dump((u_char *)d, &ph, vs.mem + (size_t)j * VIDEO_SLOT);
		}
	}
	if (pcap_dump_flush(d) == 0)
		ret = 0;
	free(vs.mem);
	free(vs.len);
out:
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

static int video_yaml(char *y, size_t len, const struct fvideo_files *fs, bool gpu,
		      uint32_t streams, uint32_t chunk_packets)
{
	char ids[64 * 14] = "";
	size_t n;

	for (uint32_t q = 0; q < streams; q++)
		snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s0x%x", q ? ", " : "",
			 VIDEO_SSRC + q);
	n = (size_t)snprintf(y, len, "log_level: warn\ninterfaces:\n");
	for (uint32_t q = 0; q < streams && n < len; q++)
		n += (size_t)snprintf(y + n, len - n,
				      "  - name: video%u\n"
				      "    backend: pcap\n"
				      "    pcap: {file: %s/stream%u.pcap, timing: fast, buf_size: 2048, num_bufs: 16384}\n",
				      q, fs->dir, q);
	if (n < len)
		n += (size_t)snprintf(y + n, len - n,
				      "pipeline:\n"
				      "  device: %s\n"
				      "  workers: 1\n"
				      "  filter: {udp_dst_ports: [%u]}\n"
				      "  reorder: {max_streams: %u}\n"
				      "  format: {profile: rtp-video, width: %u, height: %u, stream_ids: [%s]}\n"
				      "  chunks: {payload_bytes: 1500, packets: %u, streams: %u, in_flight: 4, mem: %s}\n"
				      "  gpu: {mode: persistent, items: 64, burst: 1024, timeout_ms: 20000}\n",
				      gpu ? "gpu" : "cpu", VIDEO_PORT, streams, fs->width, fs->height, ids,
				      chunk_packets, streams, gpu ? "gpu" : "host");
	return n < len ? 0 : -1;
}

int fvideo_files_make(struct fvideo_files *fs, uint32_t streams, uint32_t width, uint32_t height,
		      uint32_t frames)
{
#if VFGX_HAVE_PCAP
	struct vfgx_format f;
	const char *tmp = getenv("TMPDIR");

	memset(fs, 0, sizeof(*fs));
	fs->streams = streams;
	fs->width = width;
	fs->height = height;
	fs->frames = frames;
	snprintf(fs->dir, sizeof(fs->dir), "%s/vfgx-formats-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (streams == 0 || streams > FVIDEO_MAX_STREAMS || !mkdtemp(fs->dir)) {
		fprintf(stderr, "vfgx bench formats: cannot make %s: %s\n", fs->dir, strerror(errno));
		fs->dir[0] = '\0';
		return -1;
	}
	if (vfgx_format_profile("rtp-video", &f))
		return -1;
	f.stride = width / f.pgroup_pixels * f.pgroup_bytes;
	f.chunk_bytes = (uint64_t)f.stride * height;
	fs->frame_bytes = f.chunk_bytes;
	for (uint32_t s = 0; s < streams; s++) {
		char path[600];

		snprintf(path, sizeof(path), "%s/stream%u.pcap", fs->dir, s);
		if (write_stream(&f, s, frames, path, &fs->packets_per_frame)) {
			fvideo_files_remove(fs);
			return -1;
		}
	}
	return 0;
#else
	memset(fs, 0, sizeof(*fs));
	(void)streams, (void)width, (void)height, (void)frames;
	return -ENOTSUP;
#endif
}

void fvideo_files_remove(struct fvideo_files *fs)
{
	if (!fs->dir[0])
		return;
	for (uint32_t s = 0; s < fs->streams; s++) {
		char path[600];

		snprintf(path, sizeof(path), "%s/stream%u.pcap", fs->dir, s);
		unlink(path);
	}
	rmdir(fs->dir);
	fs->dir[0] = '\0';
}

int fvideo_run(vfgx_ctx *ctx, const struct fvideo_files *fs, bool gpu, uint32_t streams,
	       struct fvideo_res *r)
{
	vfgx_port *ports[FVIDEO_MAX_STREAMS] = { 0 };
	struct vfgx_pipeline_stats st;
	struct vfgx_config *cfg = NULL;
	struct vrun v = { 0 };
	uint32_t chunk_packets, nports = 0;
	bool consumer = false;
	pthread_t ct;
	char y[FVIDEO_MAX_STREAMS * 256 + 1024];
	uint64_t t0, p0, m0;
	double pipe_ns;
	int ret = -1;

	memset(r, 0, sizeof(*r));
	r->streams = streams;
	r->packets_per_frame = fs->packets_per_frame;
	if (streams == 0 || streams > fs->streams)
		return -1;
	/* the present bitmap: at least a frame's packets */
	chunk_packets = (fs->packets_per_frame + 1023) / 1024 * 1024;
	if (video_yaml(y, sizeof(y), fs, gpu, streams, chunk_packets))
		return -1;
	ret = vfgx_config_load_string(ctx, y, strlen(y), "formats-video.yaml", &cfg);
	for (uint32_t q = 0; !ret && q < streams; q++)
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
	if ((ret = vfgx_pipeline_error(v.pl))) {
		snprintf(r->why, sizeof(r->why), "%s", vfgx_last_error(ctx));
		ret = 0;
		goto out;
	}
	r->ok = true;
	r->frames_sent = (uint64_t)fs->frames * streams;
	r->complete = atomic_load(&v.complete);
	r->errored = atomic_load(&v.errored);
	/* a frame sent but never handed out is an errored frame too */
	if (r->complete + r->errored < r->frames_sent)
		r->errored = r->frames_sent - r->complete;
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		r->drops += st.drops[i];
	r->seconds = (double)(atomic_load(&v.last_ns) - t0) / 1e9;
	r->pipeline_cpu_s = pipe_ns / 1e9;
	if (pipe_ns > 0)
		r->fps_cpu = (double)r->complete / streams / r->pipeline_cpu_s;
	if (r->seconds > 0) {
		r->fps = (double)r->complete / streams / r->seconds;
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
