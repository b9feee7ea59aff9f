/* formats_video.c - the RFC 4175 video runs of `vfgx bench formats`
 * (formats.h): each stream's frame built once as RTP packets by vfgx's own
 * encoder (vfgx_fmt_encode, the rtp-video profile; tests/net/format checks
 * it against GStreamer), replayed frame after frame by feeder threads
 * (only the RTP sequence, its RFC 4175 extension and the timestamp are
 * rewritten per frame) into a loopback port's tx queues, which hand them
 * back on rx to vfgx_pipeline with pipeline.format rtp-video and chunks:
 * one chunk per frame, taken and given back by a consumer thread. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vfgx/vfgx.h>

#include "formats.h"

#define VIDEO_PORT 6000         /* the generator's frames go to 5000: filtered */
#define VIDEO_SSRC 0x4b000000u  /* stream s: SSRC VIDEO_SSRC + s */
#define VIDEO_SLOT 1536u        /* bytes per prebuilt packet */
#define VIDEO_FEEDERS_MAX 8
#define VIDEO_BURST 32
#define VIDEO_TS_STEP 1500      /* 90 kHz RTP clock at 60 frames a second */
#define VIDEO_DRAIN_NS 3000000000ull /* no frame handed out this long: the end */
#define ETH_IP_UDP 42

struct vstream {
	uint8_t *mem;              /* npk x VIDEO_SLOT: one frame's packets */
	struct vfgx_pkt *pkts;
	uint32_t npk;
};

struct vrun {
	vfgx_port *port;
	vfgx_pipeline *pl;
	struct vstream *vs;
	uint32_t streams, frames, nfeeders;
	atomic_bool feeding_done, stop;
	atomic_uint feeders_left;
	/* the consumer's counts */
	atomic_uint_fast64_t complete, errored;
	_Atomic uint64_t last_ns;
};

struct feeder {
	struct vrun *v;
	uint32_t first;
	uint64_t sent_frames;
	int err;
};

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
		struct vfgx_pkt *p = realloc(vs->pkts, (size_t)cap * sizeof(*p));
		uint32_t len;

		if (m)
			vs->mem = m;
		if (p)
			vs->pkts = p;
		if (!m || !p)
			return -1;
		for (; vs->npk < cap; vs->npk++) {
			uint8_t *b = vs->mem + (size_t)vs->npk * VIDEO_SLOT;

			if (build_packet(f, &h, s, vs->npk, b, &len))
				return -1;
			vs->pkts[vs->npk] = (struct vfgx_pkt){ .len = len };
			if (b[ETH_IP_UDP + 1] & 0x80) { /* the marker: the frame's last */
				vs->npk++;
				for (uint32_t i = 0; i < vs->npk; i++)
					vs->pkts[i].data = vs->mem + (size_t)i * VIDEO_SLOT;
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

/* Frames of streams first, first + nfeeders, ..., a burst of each in
 * turn; tx queue s carries stream s. */
static void *feeder_main(void *arg)
{
	struct feeder *fd = arg;
	struct vrun *v = fd->v;
	uint32_t mine = 0;
	uint32_t pos[64] = { 0 };
	uint64_t frame[64] = { 0 };

	for (uint32_t s = fd->first; s < v->streams; s += v->nfeeders) {
		rewrite_frame(&v->vs[s], 0);
		mine++;
	}
	while (mine && !atomic_load(&v->stop)) {
		uint32_t busy = 0;

		for (uint32_t s = fd->first, i = 0; s < v->streams; s += v->nfeeders, i++) {
			struct vstream *vs = &v->vs[s];
			uint32_t n;
			int sent;

			if (frame[i] == v->frames)
				continue;
			busy++;
			n = vs->npk - pos[i] < VIDEO_BURST ? vs->npk - pos[i] : VIDEO_BURST;
			sent = vfgx_port_tx_burst(v->port, (uint16_t)s, vs->pkts + pos[i], (uint16_t)n);
			if (sent < 0) {
				fd->err = sent;
				atomic_store(&v->stop, true);
				break;
			}
			pos[i] += (uint32_t)sent;
			if (pos[i] == vs->npk) {
				pos[i] = 0;
				frame[i]++;
				fd->sent_frames++;
				if (frame[i] < v->frames)
					rewrite_frame(vs, frame[i]);
			}
		}
		if (!busy)
			break;
	}
	if (atomic_fetch_sub(&v->feeders_left, 1) == 1)
		atomic_store(&v->feeding_done, true);
	return NULL;
}

/* The consumer a user runs: every ready frame taken, counted, given back. */
static void *consumer_main(void *arg)
{
	struct vrun *v = arg;
	struct vfgx_chunk *c;
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
		atomic_store(&v->last_ns, vfgx_now_ns());
		vfgx_chunk_put(v->pl, c->stream, c->index);
	}
	return NULL;
}

static int video_yaml(char *y, size_t len, bool gpu, uint32_t streams, uint32_t width,
		      uint32_t height, uint32_t chunk_packets)
{
	char qs[64 * 48] = "", ids[64 * 14] = "";

	for (uint32_t q = 0; q < streams; q++) {
		snprintf(qs + strlen(qs), sizeof(qs) - strlen(qs),
			 "%s{id: %u, memory_region: r, batch_size: 256}", q ? ", " : "", q);
		snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s0x%x", q ? ", " : "",
			 VIDEO_SSRC + q);
	}
	return snprintf(y, len,
			"log_level: warn\n"
			"memory_regions: [{name: r, kind: %s, buf_size: 2048, num_bufs: 16384}]\n"
			"interfaces:\n"
			"  - name: video\n"
			"    backend: loopback\n"
			"    rx: {queues: [%s]}\n"
			"    tx: {queues: [%s]}\n"
			"    loopback: {packets: 0, rate_pps: 1, flows: %u}\n"
			"pipeline:\n"
			"  device: %s\n"
			"  workers: 1\n"
			"  filter: {udp_dst_ports: [%u]}\n"
			"  reorder: {max_streams: %u}\n"
			"  format: {profile: rtp-video, width: %u, height: %u, stream_ids: [%s]}\n"
			"  chunks: {payload_bytes: 1500, packets: %u, streams: %u, in_flight: 4, mem: %s}\n"
			"  gpu: {mode: persistent, items: 64, burst: 1024, timeout_ms: 20000}\n",
			gpu ? "pinned" : "host", qs, qs, streams, gpu ? "gpu" : "cpu", VIDEO_PORT,
			streams, width, height, ids, chunk_packets, streams, gpu ? "gpu" : "host");
}

static void free_streams(struct vstream *vs, uint32_t n)
{
	for (uint32_t s = 0; vs && s < n; s++) {
		free(vs[s].mem);
		free(vs[s].pkts);
	}
	free(vs);
}

int fvideo_run(vfgx_ctx *ctx, bool gpu, uint32_t streams, uint32_t width, uint32_t height,
	       uint32_t frames, struct fvideo_res *r)
{
	struct feeder fd[VIDEO_FEEDERS_MAX] = { 0 };
	pthread_t ft[VIDEO_FEEDERS_MAX], ct;
	struct vfgx_pipeline_stats st;
	struct vfgx_config *cfg = NULL;
	struct vfgx_format f;
	struct vrun v = { 0 };
	uint32_t nfeed = 0, chunk_packets;
	bool consumer = false;
	char y[16384];
	uint64_t t0, idle_from;
	int ret = -1;

	memset(r, 0, sizeof(*r));
	r->streams = streams;
	if (streams == 0 || streams > 64 || frames == 0)
		return -1;
	if (vfgx_format_profile("rtp-video", &f))
		return -1;
	f.stride = width / f.pgroup_pixels * f.pgroup_bytes;
	f.chunk_bytes = (uint64_t)f.stride * height;
	v.vs = calloc(streams, sizeof(*v.vs));
	if (!v.vs)
		return -1;
	for (uint32_t s = 0; s < streams; s++)
		if (build_stream(&f, s, &v.vs[s])) {
			fprintf(stderr, "vfgx bench formats: cannot build RFC 4175 packets of %ux%u\n",
				width, height);
			goto out;
		}
	r->packets_per_frame = v.vs[0].npk;
	/* the present bitmap: at least a frame's packets */
	chunk_packets = (v.vs[0].npk + 1023) / 1024 * 1024;
	video_yaml(y, sizeof(y), gpu, streams, width, height, chunk_packets);
	if (vfgx_config_load_string(ctx, y, strlen(y), "formats-video.yaml", &cfg) ||
	    vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &v.port) ||
	    vfgx_pipeline_create(ctx, &cfg->pipeline, &v.port, 1, &v.pl) ||
	    vfgx_pipeline_start(v.pl)) {
		/* the library refused it: its line is the result */
		snprintf(r->why, sizeof(r->why), "%s", vfgx_last_error(ctx));
		ret = 0;
		goto out;
	}
	v.streams = streams;
	v.frames = frames;
	v.nfeeders = nfeed = streams < VIDEO_FEEDERS_MAX ? streams : VIDEO_FEEDERS_MAX;
	atomic_store(&v.feeders_left, nfeed);
	if (pthread_create(&ct, NULL, consumer_main, &v))
		goto out;
	consumer = true;
	t0 = vfgx_now_ns();
	atomic_store(&v.last_ns, t0);
	for (uint32_t i = 0; i < nfeed; i++) {
		fd[i] = (struct feeder){ .v = &v, .first = i };
		if (pthread_create(&ft[i], NULL, feeder_main, &fd[i])) {
			atomic_store(&v.stop, true);
			nfeed = i;
			break;
		}
	}
	/* until every frame sent was handed out, or none came for a while */
	idle_from = 0;
	for (;;) {
		struct timespec ts = { 0, 1000000 };
		uint64_t got = atomic_load(&v.complete) + atomic_load(&v.errored);

		if (atomic_load(&v.feeding_done) || atomic_load(&v.stop)) {
			uint64_t sent = 0;

			for (uint32_t i = 0; i < nfeed; i++)
				sent += fd[i].sent_frames;
			if (got >= sent)
				break;
			if (!idle_from)
				idle_from = vfgx_now_ns();
			if (vfgx_now_ns() - atomic_load(&v.last_ns) > VIDEO_DRAIN_NS &&
			    vfgx_now_ns() - idle_from > VIDEO_DRAIN_NS)
				break;
		}
		if (vfgx_pipeline_error(v.pl))
			break;
		nanosleep(&ts, NULL);
	}
	atomic_store(&v.stop, true);
	for (uint32_t i = 0; i < nfeed; i++)
		pthread_join(ft[i], NULL);
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
	for (uint32_t i = 0; i < nfeed; i++) {
		r->frames_sent += fd[i].sent_frames;
		if (fd[i].err) {
			snprintf(r->why, sizeof(r->why), "tx: %s", vfgx_last_error(ctx));
			r->ok = false;
		}
	}
	r->complete = atomic_load(&v.complete);
	r->errored = atomic_load(&v.errored);
	/* a frame sent but never handed out is an errored frame too */
	if (r->complete + r->errored < r->frames_sent)
		r->errored = r->frames_sent - r->complete;
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		if (i == VFGX_DROP_FILTERED)
			r->filtered += st.drops[i];
		else
			r->drops += st.drops[i];
	r->seconds = (double)(atomic_load(&v.last_ns) - t0) / 1e9;
	if (r->seconds > 0) {
		r->fps = (double)r->complete / streams / r->seconds;
		r->gbps = (double)r->complete * (double)f.chunk_bytes * 8 / r->seconds / 1e9;
	}
	ret = 0;
out:
	if (consumer) {
		atomic_store(&v.stop, true);
		vfgx_pipeline_stop(v.pl);
		pthread_join(ct, NULL);
	}
	vfgx_pipeline_destroy(v.pl);
	vfgx_port_close(v.port);
	vfgx_config_destroy(cfg);
	free_streams(v.vs, streams);
	return ret;
}
