/* capture.c - received packets to capture files, off the hot path.  Each
 * tapped rx queue has its own single-producer byte ring: the queue's
 * thread copies the packets the mode selects (up to snaplen) into it, or
 * counts them as ring_full when the writer is behind; one writer thread
 * drains the rings into files of the chosen format (capture_file.h: pcap
 * with libpcap, pcapng with libwiretap), rotating them by size.  A write
 * error (a full disk) cuts the file back to its last whole record, so no
 * file is left half-written, and counts what follows as failed. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/capture.h>
#include <vfgx/stages.h>

#include "backend.h"
#include "capture_file.h"
#include "capture_tap.h"
#include "vfgx_build.h"
#if VFGX_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#include "pcap_opts.h"

#define CAP_FLUSH_NS 50000000ull  /* flush at least this often while records come */
#define CAP_RELEASE_BYTES (256u << 10) /* ring space handed back this often */
#define CAP_IDLE_NS 100000        /* the writer's nap when every ring is empty */

/* A record in a ring: this header, then caplen bytes, padded to 8.  total
 * 0 marks the unused end of the ring (the next record starts at 0). */
struct cap_rec {
	uint32_t total;
	uint32_t caplen;
	uint32_t len;
	uint32_t pad;
	uint64_t ts_ns;
};

struct vfgx_capture_tap {
	struct vfgx_capture *cap;
	struct vfgx_port *port;
	uint16_t q;
	uint8_t *ring;
	uint64_t mask;
	uint64_t head; /* producer; release-stored */
	uint64_t tail; /* writer; release-stored */
	uint64_t nth;  /* sample counter */
#if VFGX_HAVE_CUDA
	cudaStream_t stream; /* copies out of GPU memory */
	bool gpu_err;
#endif
	/* producer's counters, read by any thread */
	uint64_t seen, selected, ring_full, skipped_gpu;
};

struct vfgx_capture {
	vfgx_ctx *ctx;
	struct vfgx_capture_conf conf;
	char *path;
	struct vfgx_capture_tap **taps;
	uint32_t nb_taps;
	pthread_mutex_t lock; /* taps[] against the writer */
	pthread_t writer;
	bool stop;
	int64_t wall_off_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC */
	const struct cap_format *fmt;
	struct cap_file *f;  /* the file being written; NULL after an error */
	int64_t good;        /* file offset after the last flushed record */
	uint64_t flushed_ns; /* last flush */
	uint32_t file_idx;
	/* writer's counters */
	uint64_t written, failed, bytes, bytes_closed;
	uint64_t written_flushed; /* of written, those before c->good */
	uint32_t files;
	int error;
};

/* File n of the capture: the path itself, then STEM.n.EXT. */
static void file_name(const struct vfgx_capture *c, uint32_t n, char *out, size_t len)
{
	const char *slash = strrchr(c->path, '/');
	const char *dot = strrchr(slash ? slash + 1 : c->path, '.');

	if (n == 0)
		snprintf(out, len, "%s", c->path);
	else if (!dot || dot == (slash ? slash + 1 : c->path))
		snprintf(out, len, "%s.%u", c->path, n);
	else
		snprintf(out, len, "%.*s.%u%s", (int)(dot - c->path), c->path, n, dot);
}

/* Open file c->file_idx, its header written and flushed; on failure
 * nothing is left on disk. */
static int file_open(struct vfgx_capture *c)
{
	char name[4096];
	int ret;

	file_name(c, c->file_idx, name, sizeof(name));
	if ((ret = c->fmt->open(c->ctx, name, c->conf.snaplen, &c->f)))
		return ret;
	c->good = c->fmt->size(c->f);
	c->flushed_ns = vfgx_now_ns();
	__atomic_fetch_add(&c->files, 1, __ATOMIC_RELAXED);
	if (c->conf.rotate_files && c->file_idx >= c->conf.rotate_files) {
		file_name(c, c->file_idx - c->conf.rotate_files, name, sizeof(name));
		unlink(name);
	}
	return 0;
}

/* Flush what was written; on a write error cut the file back to its last
 * whole record and stop writing. */
static void file_flush(struct vfgx_capture *c)
{
	int err;

	if (!c->f)
		return;
	c->flushed_ns = vfgx_now_ns();
	if ((err = c->fmt->flush(c->f)) == 0) {
		c->good = c->fmt->size(c->f);
		c->written_flushed = c->written;
		return;
	}
	if (c->fmt->close(c->f, c->good) < 0)
		vfgx_warn(c->ctx, "capture: %s: cutting the file back after a write error failed: it may end in a partial record",
			  c->path);
	c->f = NULL;
	c->bytes = c->bytes_closed + (uint64_t)c->good;
	/* the records after c->good were counted written: they are not */
	__atomic_fetch_add(&c->failed, c->written - c->written_flushed, __ATOMIC_RELAXED);
	__atomic_store_n(&c->written, c->written_flushed, __ATOMIC_RELAXED);
	__atomic_store_n(&c->error, -err, __ATOMIC_RELEASE);
	vfgx_warn(c->ctx, "capture: %s: write failed (%s): capture stopped, the file ends at its last whole record",
		  c->path, strerror(err));
}

static void write_rec(struct vfgx_capture *c, const struct cap_rec *r)
{
	if (!c->f) {
		__atomic_fetch_add(&c->failed, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_fetch_add(&c->written, 1, __ATOMIC_RELAXED);
	if (c->fmt->write(c->f, (int64_t)r->ts_ns + c->wall_off_ns, r->caplen, r->len, r + 1)) {
		file_flush(c); /* says the error, cuts the file */
		return;
	}
	if (c->conf.rotate_bytes && (uint64_t)c->fmt->size(c->f) >= c->conf.rotate_bytes) {
		file_flush(c);
		if (!c->f)
			return;
		__atomic_fetch_add(&c->bytes_closed, (uint64_t)c->good, __ATOMIC_RELAXED);
		c->fmt->close(c->f, -1);
		c->f = NULL;
		c->file_idx++;
		if (file_open(c)) {
			__atomic_store_n(&c->error, -EIO, __ATOMIC_RELEASE);
			vfgx_warn(c->ctx, "%s", vfgx_last_error(c->ctx));
		}
	}
}

/* Write what tap t holds; the count.  The space goes back to the queue
 * every CAP_RELEASE_BYTES, not once at the end: a drain of a whole ring
 * takes milliseconds, in which the queue would find it full. */
static uint64_t drain(struct vfgx_capture *c, struct vfgx_capture_tap *t)
{
	uint64_t head = __atomic_load_n(&t->head, __ATOMIC_ACQUIRE);
	uint64_t tail = t->tail, given = tail, n = 0;

	while (tail != head) {
		const struct cap_rec *r = (const void *)(t->ring + (tail & t->mask));

		if (r->total == 0) { /* the rest of the ring is unused */
			tail += t->mask + 1 - (tail & t->mask);
			continue;
		}
		write_rec(c, r);
		tail += r->total;
		n++;
		if (tail - given >= CAP_RELEASE_BYTES) {
			__atomic_store_n(&t->tail, tail, __ATOMIC_RELEASE);
			given = tail;
			/* what came in meanwhile, in the same pass */
			head = __atomic_load_n(&t->head, __ATOMIC_ACQUIRE);
		}
	}
	__atomic_store_n(&t->tail, tail, __ATOMIC_RELEASE);
	return n;
}

static void *writer_main(void *arg)
{
	struct vfgx_capture *c = arg;

	for (;;) {
		bool stop = __atomic_load_n(&c->stop, __ATOMIC_ACQUIRE);
		uint64_t n = 0;

		pthread_mutex_lock(&c->lock);
		for (uint32_t i = 0; i < c->nb_taps; i++)
			n += drain(c, c->taps[i]);
		pthread_mutex_unlock(&c->lock);
		/* the buffer goes out when full; a flush makes what was written
		 * visible (and a write error known) at least every 50 ms */
		if ((n || stop) && (stop || vfgx_now_ns() - c->flushed_ns >= CAP_FLUSH_NS))
			file_flush(c);
		if (stop) /* the rings were drained after stop was seen */
			break;
		if (!n) {
			/* a ring of 8 MiB fills in 2 ms at 4 GB/s: look again
			 * well before that */
			struct timespec ts = { 0, CAP_IDLE_NS };

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

/* The writer of the format conf asks for (auto: the path's extension
 * says); NULL after a one-line error. */
static const struct cap_format *choose_format(vfgx_ctx *ctx, const struct vfgx_capture_conf *cc)
{
	size_t n = strlen(cc->path);
	uint32_t format = cc->format;

	if (format == VFGX_CAPTURE_FORMAT_AUTO)
		format = n >= 7 && !strcmp(cc->path + n - 7, ".pcapng") ? VFGX_CAPTURE_FORMAT_PCAPNG :
									VFGX_CAPTURE_FORMAT_PCAP;
	if (format == VFGX_CAPTURE_FORMAT_PCAP)
		return &vfgx_cap_pcap;
#if VFGX_HAVE_PCAPNG
	(void)ctx;
	return &vfgx_cap_pcapng;
#else
	vfgx_set_error(ctx, -ENOTSUP, "capture: %s: pcapng%s: this build has no libwiretap (install libwiretap-dev and rebuild, or set pipeline.capture.format: pcap)",
		       cc->path, cc->format ? "" : " (the file name ends in .pcapng)");
	return NULL;
#endif
}

int vfgx_capture_open(vfgx_ctx *ctx, const struct vfgx_capture_conf *conf,
		      vfgx_capture **out)
{
	struct vfgx_capture *c;
	struct timespec rt, mt;
	int ret;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->ctx = ctx;
	if ((ret = vfgx_capture_conf_check(ctx, conf, &c->conf))) {
		free(c);
		return ret;
	}
	if (!c->conf.path || !c->conf.path[0]) {
		free(c);
		return vfgx_set_error(ctx, -EINVAL, "capture: no file named (pipeline.capture.path or --capture FILE)");
	}
	if (c->conf.ring_bytes & (c->conf.ring_bytes - 1)) {
		free(c);
		return vfgx_set_error(ctx, -EINVAL, "capture: ring_bytes %u is not a power of two",
				      conf->ring_bytes);
	}
	if (!(c->fmt = choose_format(ctx, &c->conf))) {
		free(c);
		return -ENOTSUP;
	}
	c->path = strdup(c->conf.path);
	c->conf.path = c->path;
	pthread_mutex_init(&c->lock, NULL);
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	c->wall_off_ns = ((int64_t)rt.tv_sec - mt.tv_sec) * 1000000000 +
			 ((int64_t)rt.tv_nsec - mt.tv_nsec);
	ret = !c->path ? -ENOMEM : file_open(c);
	if (!ret && (ret = -pthread_create(&c->writer, NULL, writer_main, c)))
		vfgx_set_error(ctx, ret, "capture: writer thread: %s", strerror(-ret));
	if (ret) {
		if (c->f) {
			c->fmt->close(c->f, -1);
			unlink(c->path);
		}
		pthread_mutex_destroy(&c->lock);
		free(c->path);
		free(c);
		return ret;
	}
	*out = c;
	return 0;
}

int vfgx_capture_attach(vfgx_capture *c, vfgx_port *port)
{
	uint16_t nq = port->nb_rx_queues;
	struct vfgx_capture_tap **taps;

	if (!strcmp(port->ops->name, "socket") || !strcmp(port->ops->name, "rdma"))
		return vfgx_set_error(c->ctx, -ENOTSUP,
				      "capture: port %s (%s) hands payloads without their frame headers: nothing to write as Ethernet (capture its traffic with tcpdump)",
				      port->name, port->ops->name);
	for (uint16_t q = 0; q < nq; q++)
		if (port->tap[q])
			return vfgx_set_error(c->ctx, -EBUSY, "capture: port %s is tapped already",
					      port->name);
	taps = realloc(c->taps, sizeof(*taps) * (c->nb_taps + nq));
	if (!taps)
		return -ENOMEM;
	c->taps = taps;
	for (uint16_t q = 0; q < nq; q++) {
		struct vfgx_capture_tap *t = calloc(1, sizeof(*t));

		if (t)
			t->ring = aligned_alloc(64, c->conf.ring_bytes);
		if (!t || !t->ring) {
			free(t);
			return -ENOMEM; /* taps made so far stay attached: close frees them */
		}
		t->cap = c;
		t->port = port;
		t->q = q;
		t->mask = c->conf.ring_bytes - 1;
		pthread_mutex_lock(&c->lock);
		c->taps[c->nb_taps++] = t;
		pthread_mutex_unlock(&c->lock);
		port->tap[q] = t;
	}
	return 0;
}

#if VFGX_HAVE_CUDA
/* Queue the copy of one packet out of GPU memory on the tap's stream
 * (made on the queue's thread at its first GPU packet); 1 when queued. */
static int gpu_copy(struct vfgx_capture_tap *t, void *dst, const void *src, uint32_t len)
{
	if (!t->stream && cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking) != cudaSuccess) {
		t->stream = NULL;
		t->gpu_err = true;
		return 1;
	}
	if (cudaMemcpyAsync(dst, src, len, cudaMemcpyDeviceToHost, t->stream) != cudaSuccess)
		t->gpu_err = true;
	return 1;
}

/* Wait for the burst's copies; non-zero when one failed. */
static int gpu_wait(struct vfgx_capture_tap *t)
{
	bool err = t->gpu_err || !t->stream || cudaStreamSynchronize(t->stream) != cudaSuccess;

	t->gpu_err = false;
	return err;
}
#else
static int gpu_copy(struct vfgx_capture_tap *t, void *dst, const void *src, uint32_t len)
{
	(void)t;
	(void)dst;
	(void)src;
	(void)len;
	return 0;
}

static int gpu_wait(struct vfgx_capture_tap *t)
{
	(void)t;
	return 0;
}
#endif

static bool select_pkt(struct vfgx_capture_tap *t, const struct vfgx_pkt *p)
{
	struct vfgx_parsed ps;

	switch (t->cap->conf.mode) {
	case VFGX_CAPTURE_DROPS:
		return !(p->flags & VFGX_PKT_PAYLOAD) &&
		       vfgx_parse(p->data, p->len, &ps) != VFGX_STAGE_PASS;
	case VFGX_CAPTURE_SAMPLE:
		return t->nth++ % t->cap->conf.sample_every == 0;
	default:
		return true;
	}
}

void vfgx_capture_tap_burst(struct vfgx_capture_tap *t, const struct vfgx_pkt *pkts,
			    uint16_t n)
{
	uint64_t head = t->head, head0 = head, size = t->mask + 1;
	uint64_t tail = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
	uint64_t sel = 0, full = 0, gpu = 0, gpu_copies = 0;

	for (uint16_t i = 0; i < n; i++) {
		const struct vfgx_pkt *p = &pkts[i];
		uint32_t cl;
		uint64_t need, pos, room;
		struct cap_rec *r;

		if (p->flags & VFGX_PKT_GPU) {
			/* drops mode parses on the CPU: not from GPU memory */
			if (t->cap->conf.mode == VFGX_CAPTURE_DROPS)
				continue;
#if !VFGX_HAVE_CUDA
			gpu++;
			continue;
#endif
		}
		if (!(p->flags & VFGX_PKT_GPU) && !select_pkt(t, p))
			continue;
		if ((p->flags & VFGX_PKT_GPU) && t->cap->conf.mode == VFGX_CAPTURE_SAMPLE &&
		    t->nth++ % t->cap->conf.sample_every)
			continue;
		sel++;
		cl = p->len < t->cap->conf.snaplen ? p->len : t->cap->conf.snaplen;
		need = (sizeof(*r) + cl + 7) & ~7ull;
		pos = head & t->mask;
		room = size - pos;
		if (need > room) { /* skip to the ring's start */
			if (size - (head - tail) < room + need) {
				tail = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
				if (size - (head - tail) < room + need) {
					full++;
					continue;
				}
			}
			((struct cap_rec *)(t->ring + pos))->total = 0;
			head += room;
			pos = 0;
		} else if (size - (head - tail) < need) {
			tail = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
			if (size - (head - tail) < need) {
				full++;
				continue;
			}
		}
		r = (struct cap_rec *)(t->ring + pos);
		r->total = (uint32_t)need;
		r->caplen = cl;
		r->len = p->len;
		r->ts_ns = p->ts_ns ? p->ts_ns : vfgx_now_ns();
		if (p->flags & VFGX_PKT_GPU)
			gpu_copies += gpu_copy(t, r + 1, p->data, cl);
		else
			memcpy(r + 1, p->data, cl);
		head += need;
	}
	/* GPU packets: their copies were queued on the tap's stream; the burst
	 * is published once they are all in (or dropped whole if one failed) */
	if (gpu_copies && gpu_wait(t)) {
		head = head0;
		sel -= gpu_copies;
		gpu += gpu_copies;
	}
	__atomic_store_n(&t->head, head, __ATOMIC_RELEASE);
	__atomic_store_n(&t->seen, t->seen + n, __ATOMIC_RELAXED);
	__atomic_store_n(&t->selected, t->selected + sel, __ATOMIC_RELAXED);
	__atomic_store_n(&t->ring_full, t->ring_full + full, __ATOMIC_RELAXED);
	__atomic_store_n(&t->skipped_gpu, t->skipped_gpu + gpu, __ATOMIC_RELAXED);
}

void vfgx_capture_stats(vfgx_capture *c, struct vfgx_capture_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&c->lock);
	for (uint32_t i = 0; i < c->nb_taps; i++) {
		const struct vfgx_capture_tap *t = c->taps[i];

		st->seen += __atomic_load_n(&t->seen, __ATOMIC_RELAXED);
		st->selected += __atomic_load_n(&t->selected, __ATOMIC_RELAXED);
		st->ring_full += __atomic_load_n(&t->ring_full, __ATOMIC_RELAXED);
		st->skipped_gpu += __atomic_load_n(&t->skipped_gpu, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&c->lock);
	st->written = __atomic_load_n(&c->written, __ATOMIC_RELAXED);
	st->failed = __atomic_load_n(&c->failed, __ATOMIC_RELAXED);
	st->files = __atomic_load_n(&c->files, __ATOMIC_RELAXED);
	st->bytes = __atomic_load_n(&c->bytes_closed, __ATOMIC_RELAXED);
	st->error = __atomic_load_n(&c->error, __ATOMIC_ACQUIRE);
}

int vfgx_capture_close(vfgx_capture *c, struct vfgx_capture_stats *st)
{
	int err;

	if (!c)
		return 0;
	__atomic_store_n(&c->stop, true, __ATOMIC_RELEASE);
	pthread_join(c->writer, NULL);
	if (c->f) {
		int64_t size = c->fmt->close(c->f, -1);

		c->bytes = c->bytes_closed + (uint64_t)(size >= 0 ? size : c->good);
	}
	if (st) {
		vfgx_capture_stats(c, st);
		st->bytes = c->bytes;
	}
	err = c->error;
	for (uint32_t i = 0; i < c->nb_taps; i++) {
		c->taps[i]->port->tap[c->taps[i]->q] = NULL;
#if VFGX_HAVE_CUDA
		if (c->taps[i]->stream)
			cudaStreamDestroy(c->taps[i]->stream);
#endif
		free(c->taps[i]->ring);
		free(c->taps[i]);
	}
	free(c->taps);
	pthread_mutex_destroy(&c->lock);
	free(c->path);
	free(c);
	return err;
}
