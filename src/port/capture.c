/* capture.c - received packets to capture files, off the hot path.  One
 * writer thread drains the tapped rx queues into files of the chosen
 * format (capture_file.h), rotating them by size.
 *
 * Packets in host or pinned memory are captured by reference: the queue's
 * thread records pcap's 16-byte record header and where the frame lies,
 * in rx order, and the writer hands header and frame straight from the
 * packet's buffer to writev(2) (IOV_MAX pieces a call), so the queue
 * copies nothing.  A packet the pipeline releases before the writer wrote
 * it is held and goes back to its backend later, on the queue's own
 * thread (its next rx or release), once the writer has passed it; a port
 * whose release counts packets in rx order (the loopback replay, which
 * rewrites a frame's sequence once it is released) gets nothing past a
 * held packet.  What the capture may hold is bounded: a sixteenth of the
 * queue's pool unwritten.  Past that, rx copies records into the tap's
 * ring (the arena) to take a burst, up to the ring's size until the
 * writer has been idle a while; then ring_full, the pipeline never waits
 * for the disk.  A queue that finds nothing to receive while it holds
 * packets (a replay that must have a frame back before it can go on)
 * copies the oldest held frames into the arena and gives them back.
 *
 * Packets in GPU memory are copied by the queue's thread (cudaMemcpyAsync)
 * into a byte ring holding pcap records back to back (a record may wrap
 * around the ring's end), whose spans the writer hands to writev(2) as
 * they lie; a full ring drops the record as ring_full.
 *
 * pcapng records go through libwiretap one by one.  A write error (a full
 * disk) cuts the file back to its last whole record, so no file is left
 * half-written, and counts what follows as failed. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
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

#define CAP_FLUSH_NS 50000000ull  /* records wait at most this long for a span */
#define CAP_SPAN_MIN (256u << 10) /* less in a ring (or a quarter of a smaller
				   * ring) waits (above) */
#define CAP_SPAN_MAX (1u << 20)   /* one write; the ring space goes back after it */
#define CAP_IDLE_NS 200000        /* the writer's nap when the rings are empty */
#define CAP_WAIT_NS 50000         /* its nap when a ring holds less than a span
				   * within 1 ms of a write (a busy capture):
				   * queues capturing by reference hold their
				   * packets meanwhile */

/* A record in a ring: pcap's record header (sf-pcap.c's pcap_sf_pkthdr in
 * host order, nanoseconds as the file header says), then caplen bytes. */
struct cap_rec {
	uint32_t ts_sec;
	uint32_t ts_nsec;
	uint32_t caplen;
	uint32_t len;
};

/* One record of a tap capturing host packets, in rx order: its record
 * header and where its frame lies.  A reference (copied false) points
 * into the packet's own buffer and keeps its backend handle, to know the
 * packet again when it is released (CAP_GONE once matched out of order);
 * a copy (made by rx while the references are at their bound, or later
 * by a rescue) lies in the tap's arena, up to arena position copy_end.
 * state: REF_OPEN until the writer claims it for a span (REF_CLAIMED) or
 * the queue's thread copies the frame out to give the packet back early
 * (REF_COPIED), whichever comes first. */
struct cap_ref {
	struct cap_rec r;
	const uint8_t *data;
	void *handle;
	const uint8_t *copy;
	uint64_t copy_end;
	uint32_t state;
	bool copied;
};

enum { REF_OPEN, REF_CLAIMED, REF_COPIED };

/* A reference's tag, which rx writes into its packet's flags (the bits
 * VFGX_PKT_CAP_TAG): the low bits of its index, for the release to find
 * it again (ref_match). */
#define CAP_TAG_ONE (VFGX_PKT_CAP_TAG & -VFGX_PKT_CAP_TAG) /* the tag's lowest bit */
#define CAP_TAG_STRIDE ((uint64_t)(VFGX_PKT_CAP_TAG / CAP_TAG_ONE) + 1)

static inline uint64_t ref_tag(uint64_t ref)
{
	return ref & (CAP_TAG_STRIDE - 1);
}

#define CAP_GONE ((void *)~(uintptr_t)0)
#define CAP_NONE UINT64_MAX /* a held packet the capture does not reference */

/* A released packet whose backend release waits for the writer: the
 * reference it is (CAP_NONE: none, held only to keep the release order
 * of a port that needs it). */
struct cap_held {
	struct vfgx_pkt pkt;
	uint64_t ref;
};

/* The producer's fields and the writer's on cache lines of their own: the
 * queue's thread writes head (rhead) and its counters every burst, the
 * writer tail (rtail) every span; each reads the other's with acquire.
 * ring is the byte ring of GPU packets' records, or for host packets
 * (refs) the arena their copies go into; a queue whose memory the port
 * does not say gets both, and its first packet says which it uses. */
struct vfgx_capture_tap {
	struct vfgx_capture *cap;
	struct vfgx_port *port;
	uint16_t q;
	uint8_t *ring;
	uint64_t size;        /* ring bytes, a power of two */
	int64_t wall_off_ns;  /* the capture's, for the record headers */
	uint32_t snaplen, mode, sample_every;
	uint32_t sample_left; /* sample mode: packets to skip before the next */
	uint64_t room_tail;   /* the tail last read: free space without a load */
#if VFGX_HAVE_CUDA
	cudaStream_t stream; /* copies out of GPU memory */
	bool gpu_err;
#endif
	/* host packets: nref records (a power of two), at most ref_bound
	 * of them references the writer has still to write, copies in the
	 * ring (the arena) for the rest; the queue thread's own fields */
	struct cap_ref *refs;
	uint64_t nref, ref_bound;
	bool by_ref, mode_known;
	bool in_order;        /* the backend wants releases in rx order */
	uint64_t absorb_left; /* bytes rx may still copy (see tap_refs) */
	uint64_t idle_since;  /* when the writer was first seen caught up */
	uint64_t refs_made;   /* references recorded so far */
	uint64_t match;       /* the next reference a release should be */
	uint64_t rescue_at;   /* the next reference a rescue may copy */
	uint64_t arena_head;  /* arena bytes handed out, in record order */
	uint64_t arena_last;  /* the record of the last copy (CAP_NONE: none) */
	uint64_t arena_tail_seen, rtail_refs_seen;
	uint64_t rtail_seen, rtail_bytes_seen;
	struct cap_held *held; /* released, waiting for the writer: a FIFO */
	uint64_t held_cap, held_head, held_tail;
	uint64_t head __attribute__((aligned(64))); /* producer; release-stored */
	uint64_t rhead, rhead_bytes;                 /* the same, references */
	/* producer's counters, read by any thread */
	uint64_t seen, selected, ring_full, skipped_gpu;
	uint64_t tail __attribute__((aligned(64))); /* writer; release-stored */
	uint64_t rtail, rtail_bytes;                 /* the same, references */
	uint64_t rtail_refs;  /* references written */
	uint64_t arena_tail;  /* arena bytes written */
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
	uint8_t *bounce;     /* formats without write_raw: a record that wraps */
	struct iovec *iov;   /* IOV_MAX: a span of references */
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

/* Copy len bytes at ring offset pos (any, it wraps) out of t's ring. */
static void ring_get(const struct vfgx_capture_tap *t, uint64_t pos, void *dst, uint32_t len)
{
	uint64_t at = pos & (t->size - 1), first = t->size - at;

	if (len <= first) {
		memcpy(dst, t->ring + at, len);
	} else {
		memcpy(dst, t->ring + at, first);
		memcpy((uint8_t *)dst + first, t->ring, len - first);
	}
}

/* The file reached rotate_bytes: close it, open the next. */
static void file_rotate(struct vfgx_capture *c)
{
	__atomic_fetch_add(&c->bytes_closed, (uint64_t)c->good, __ATOMIC_RELAXED);
	c->fmt->close(c->f, -1);
	c->f = NULL;
	c->file_idx++;
	if (file_open(c)) {
		__atomic_store_n(&c->error, -EIO, __ATOMIC_RELEASE);
		vfgx_warn(c->ctx, "%s", vfgx_last_error(c->ctx));
	}
}

/* One record through the format's own writer (pcapng); data is its
 * frame, whole. */
static void write_rec(struct vfgx_capture *c, const struct cap_rec *r, const void *data)
{
	if (!c->f) {
		__atomic_fetch_add(&c->failed, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_fetch_add(&c->written, 1, __ATOMIC_RELAXED);
	if (c->fmt->write(c->f, (int64_t)r->ts_sec * 1000000000 + r->ts_nsec, r->caplen, r->len,
			  data)) {
		file_flush(c); /* says the error, cuts the file */
		return;
	}
	if (c->conf.rotate_bytes && (uint64_t)c->fmt->size(c->f) >= c->conf.rotate_bytes) {
		file_flush(c);
		if (c->f)
			file_rotate(c);
	}
}

/* Records [from, to) of t, nrec of them, as they lie (pcap).  On a write
 * error the file is cut at the end of the last record that reached it
 * whole; those count written, the rest failed. */
static void write_span(struct vfgx_capture *c, struct vfgx_capture_tap *t, uint64_t from,
		       uint64_t to, uint64_t nrec)
{
	uint64_t at = from & (t->size - 1), len = to - from, done, whole = 0, k = 0;
	struct iovec iov[2] = { { t->ring + at, len }, { t->ring, 0 } };
	int err;

	if (!c->f) {
		__atomic_fetch_add(&c->failed, nrec, __ATOMIC_RELAXED);
		return;
	}
	if (at + len > t->size) {
		iov[0].iov_len = t->size - at;
		iov[1].iov_len = len - iov[0].iov_len;
	}
	if ((err = c->fmt->write_raw(c->f, iov, 2, &done)) == 0) {
		__atomic_fetch_add(&c->written, nrec, __ATOMIC_RELAXED);
		c->good = c->fmt->size(c->f);
		c->written_flushed = c->written;
		if (c->conf.rotate_bytes && (uint64_t)c->good >= c->conf.rotate_bytes)
			file_rotate(c);
		return;
	}
	for (struct cap_rec r; k < nrec; k++) {
		ring_get(t, from + whole, &r, sizeof(r));
		if (whole + sizeof(r) + r.caplen > done)
			break;
		whole += sizeof(r) + r.caplen;
	}
	__atomic_fetch_add(&c->written, k, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->failed, nrec - k, __ATOMIC_RELAXED);
	c->good += (int64_t)whole;
	c->written_flushed = c->written;
	file_flush(c); /* the format returns err: the cut, the one line */
}

/* Records [from, to) of t one by one through the format's writer; a
 * record that wraps around the ring's end is put together in c->bounce. */
static void write_recs(struct vfgx_capture *c, struct vfgx_capture_tap *t, uint64_t from,
		       uint64_t to)
{
	while (from != to) {
		struct cap_rec r;
		uint64_t at;

		ring_get(t, from, &r, sizeof(r));
		at = (from + sizeof(r)) & (t->size - 1);
		if (at + r.caplen <= t->size) {
			write_rec(c, &r, t->ring + at);
		} else {
			ring_get(t, from + sizeof(r), c->bounce, r.caplen);
			write_rec(c, &r, c->bounce);
		}
		from += sizeof(r) + r.caplen;
	}
}

/* Write what tap t holds, in spans of up to CAP_SPAN_MAX, each ending
 * where the file reaches rotate_bytes (so the next file starts with the
 * next record); with !all only when a span's worth is there.  The ring
 * space goes back after each span: a drain of a whole ring takes
 * milliseconds, in which the queue would find it full.  The count. */
static uint64_t drain(struct vfgx_capture *c, struct vfgx_capture_tap *t, bool all)
{
	uint64_t head = __atomic_load_n(&t->head, __ATOMIC_ACQUIRE);
	uint64_t tail = t->tail, n = 0;

	if (!all && head - tail < CAP_SPAN_MIN && head - tail < t->size / 4)
		return 0;
	while (tail != head) {
		uint64_t end = tail, nrec = 0;
		uint64_t to_rotate = c->f && c->conf.rotate_bytes ?
			c->conf.rotate_bytes - (uint64_t)c->fmt->size(c->f) : UINT64_MAX;

		/* at least one record a span: a file holds one record at the
		 * least, however small rotate_bytes (at or under the file
		 * header's size, a span of none would rotate for ever) */
		while (end != head &&
		       (end == tail || (end - tail < CAP_SPAN_MAX && end - tail < to_rotate))) {
			struct cap_rec r;

			ring_get(t, end, &r, sizeof(r));
			end += sizeof(r) + r.caplen;
			nrec++;
		}
		if (c->fmt->write_raw)
			write_span(c, t, tail, end, nrec);
		else
			write_recs(c, t, tail, end);
		tail = end;
		n += nrec;
		__atomic_store_n(&t->tail, tail, __ATOMIC_RELEASE);
	}
	return n;
}

/* References [from, to) of t, their nrec records in iovcnt pieces (pcap):
 * header and frame of each straight from where they lie.  On a write
 * error as write_span. */
static void write_ref_span(struct vfgx_capture *c, struct vfgx_capture_tap *t, uint64_t from,
			   uint64_t to, int iovcnt)
{
	uint64_t nrec = to - from, done, whole = 0, k = 0;
	int err;

	if (!c->f) {
		__atomic_fetch_add(&c->failed, nrec, __ATOMIC_RELAXED);
		return;
	}
	if ((err = c->fmt->write_raw(c->f, c->iov, iovcnt, &done)) == 0) {
		__atomic_fetch_add(&c->written, nrec, __ATOMIC_RELAXED);
		c->good = c->fmt->size(c->f);
		c->written_flushed = c->written;
		if (c->conf.rotate_bytes && (uint64_t)c->good >= c->conf.rotate_bytes)
			file_rotate(c);
		return;
	}
	for (; k < nrec; k++) {
		const struct cap_rec *r = &t->refs[(from + k) & (t->nref - 1)].r;

		if (whole + sizeof(*r) + r->caplen > done)
			break;
		whole += sizeof(*r) + r->caplen;
	}
	__atomic_fetch_add(&c->written, k, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->failed, nrec - k, __ATOMIC_RELAXED);
	c->good += (int64_t)whole;
	c->written_flushed = c->written;
	file_flush(c); /* the format returns err: the cut, the one line */
}

/* drain() for a tap capturing by reference: spans of up to IOV_MAX / 2
 * records or CAP_SPAN_MAX bytes, each ending where the file reaches
 * rotate_bytes; the references go back (and with them the packets the
 * pipeline released) after each span. */
static uint64_t drain_ref(struct vfgx_capture *c, struct vfgx_capture_tap *t, bool all)
{
	uint64_t head = __atomic_load_n(&t->rhead, __ATOMIC_ACQUIRE);
	uint64_t tail = t->rtail, tail_bytes = t->rtail_bytes, n = 0;
	uint64_t mask = t->nref - 1;

	if (tail == head)
		return 0;
	if (!all) {
		uint64_t pend = __atomic_load_n(&t->rhead_bytes, __ATOMIC_RELAXED) - tail_bytes;

		/* or half the references the queue may hold */
		if (pend < CAP_SPAN_MIN && pend < t->size / 4 && head - tail < t->ref_bound / 2)
			return 0;
	}
	while (tail != head) {
		uint64_t end = tail, bytes = 0;
		uint64_t to_rotate = c->f && c->conf.rotate_bytes ?
			c->conf.rotate_bytes - (uint64_t)c->fmt->size(c->f) : UINT64_MAX;
		int k = 0;

		/* at least one record a span (see drain) */
		uint64_t arena_end = 0, nrefs = 0;

		while (end != head && k + 2 <= IOV_MAX &&
		       (end == tail || (bytes < CAP_SPAN_MAX && bytes < to_rotate))) {
			struct cap_ref *e = &t->refs[end & mask];
			uint32_t st = REF_OPEN;
			const uint8_t *data = e->data;

			/* the frame stays where it is from here on, unless the
			 * queue's thread copied it out first */
			if (!__atomic_compare_exchange_n(&e->state, &st, REF_CLAIMED, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				data = e->copy;
				arena_end = e->copy_end;
			}
			nrefs += !e->copied;
			c->iov[k++] = (struct iovec){ &e->r, sizeof(e->r) };
			c->iov[k++] = (struct iovec){ (void *)data, e->r.caplen };
			bytes += sizeof(e->r) + e->r.caplen;
			end++;
		}
		if (c->fmt->write_raw) {
			write_ref_span(c, t, tail, end, k);
		} else {
			for (int i = 0; i < k; i += 2)
				write_rec(c, c->iov[i].iov_base, c->iov[i + 1].iov_base);
		}
		/* copies lie in the arena in record order: the last one's
		 * end frees every one before it */
		if (arena_end)
			__atomic_store_n(&t->arena_tail, arena_end, __ATOMIC_RELEASE);
		__atomic_store_n(&t->rtail_refs, t->rtail_refs + nrefs, __ATOMIC_RELEASE);
		n += end - tail;
		tail = end;
		tail_bytes += bytes;
		__atomic_store_n(&t->rtail_bytes, tail_bytes, __ATOMIC_RELAXED);
		__atomic_store_n(&t->rtail, tail, __ATOMIC_RELEASE);
	}
	return n;
}

static void *writer_main(void *arg)
{
	struct vfgx_capture *c = arg;
	uint64_t wrote_ns = 0;

	for (;;) {
		bool stop = __atomic_load_n(&c->stop, __ATOMIC_ACQUIRE), pending = false;
		/* a ring holding less than a span waits for more, up to 50 ms */
		bool all = stop || vfgx_now_ns() - c->flushed_ns >= CAP_FLUSH_NS;
		uint64_t n = 0;

		pthread_mutex_lock(&c->lock);
		for (uint32_t i = 0; i < c->nb_taps; i++) {
			struct vfgx_capture_tap *t = c->taps[i];

			n += drain_ref(c, t, all) + drain(c, t, all);
			pending |= __atomic_load_n(&t->rhead, __ATOMIC_ACQUIRE) != t->rtail ||
				   __atomic_load_n(&t->head, __ATOMIC_ACQUIRE) != t->tail;
		}
		pthread_mutex_unlock(&c->lock);
		/* what a format buffers (pcapng) goes out at least every 50 ms
		 * and at the end; a write error is known then */
		if (all)
			file_flush(c);
		if (stop) /* the rings were drained after stop was seen */
			break;
		if (n) {
			wrote_ns = vfgx_now_ns();
		} else {
			/* an 8 MiB ring fills in 2 ms at 4 GB/s: look again
			 * well before that */
			bool busy = pending && vfgx_now_ns() - wrote_ns < 1000000;
			struct timespec ts = { 0, busy ? CAP_WAIT_NS : CAP_IDLE_NS };

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
	if ((!c->fmt->write_raw && !(c->bounce = malloc(c->conf.snaplen))) ||
	    !(c->iov = malloc(sizeof(*c->iov) * IOV_MAX))) {
		free(c->bounce);
		free(c);
		return -ENOMEM;
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
		free(c->bounce);
		free(c->iov);
		free(c);
		return ret;
	}
	*out = c;
	return 0;
}

/* A tap's records for host packets: references up to a sixteenth of the
 * queue's pool (the pipeline keeps the rest whatever the writer does, and
 * a source that hands its buffers out in a fixed order, the loopback
 * replay, stays far from the buffers the capture holds), 512 where the
 * port keeps its buffers itself; records for the arena's copies besides
 * (one per 256 bytes of it).  The FIFO of released packets starts at
 * twice the references and grows. */
static int ref_alloc(struct vfgx_capture_tap *t, vfgx_pool *pool, uint32_t ring_bytes)
{
	uint64_t bound = 512, n = 64;

	if (pool) {
		struct vfgx_pool_stats ps;

		vfgx_pool_stats(pool, &ps);
		bound = ps.num_bufs / 16;
		if (!bound)
			bound = 1;
	}
	while (n < bound + ring_bytes / 256)
		n *= 2;
	t->nref = n;
	t->ref_bound = bound;
	t->arena_last = CAP_NONE;
	t->absorb_left = ring_bytes;
	t->held_cap = 64;
	while (t->held_cap < 2 * bound)
		t->held_cap *= 2;
	t->refs = calloc(n, sizeof(*t->refs));
	t->held = malloc(sizeof(*t->held) * t->held_cap);
	return t->refs && t->held ? 0 : -ENOMEM;
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
		struct vfgx_capture_tap *t = aligned_alloc(64, sizeof(*t));
		vfgx_pool *pool = port->rx_pools[q];
		bool gpu = pool &&
			   vfgx_region_info(vfgx_pool_region(pool))->kind == VFGX_MEM_GPU;
		bool ok = t != NULL;

		if (t) {
			memset(t, 0, sizeof(*t));
			ok = (t->ring = aligned_alloc(64, c->conf.ring_bytes)) != NULL;
			if (ok && !gpu)
				ok = !ref_alloc(t, pool, c->conf.ring_bytes);
		}
		if (!ok) {
			if (t) {
				free(t->ring);
				free(t->refs);
				free(t->held);
			}
			free(t);
			return -ENOMEM; /* taps made so far stay attached: close frees them */
		}
		t->in_order = port->release_in_order;
		t->by_ref = t->refs && pool;
		t->mode_known = gpu || pool;
		t->cap = c;
		t->port = port;
		t->q = q;
		t->size = c->conf.ring_bytes;
		t->wall_off_ns = c->wall_off_ns;
		t->snaplen = c->conf.snaplen;
		t->mode = c->conf.mode;
		t->sample_every = c->conf.sample_every;
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

/* Sample mode: the first packet, then one in sample_every. */
static bool sample_pkt(struct vfgx_capture_tap *t)
{
	if (t->sample_left) {
		t->sample_left--;
		return false;
	}
	t->sample_left = t->sample_every - 1;
	return true;
}

static bool select_pkt(struct vfgx_capture_tap *t, const struct vfgx_pkt *p)
{
	struct vfgx_parsed ps;

	switch (t->mode) {
	case VFGX_CAPTURE_DROPS:
		return !(p->flags & VFGX_PKT_PAYLOAD) &&
		       vfgx_parse(p->data, p->len, &ps) != VFGX_STAGE_PASS;
	case VFGX_CAPTURE_SAMPLE:
		return sample_pkt(t);
	default:
		return true;
	}
}

/* Copy len bytes to ring offset pos (any: it wraps). */
static void ring_put(struct vfgx_capture_tap *t, uint64_t pos, const void *src, uint32_t len)
{
	uint64_t at = pos & (t->size - 1), first = t->size - at;

	if (len <= first) {
		memcpy(t->ring + at, src, len);
	} else {
		memcpy(t->ring + at, src, first);
		memcpy(t->ring, (const uint8_t *)src + first, len - first);
	}
}

/* The same out of GPU memory, queued on the tap's stream; copies queued. */
static int ring_put_gpu(struct vfgx_capture_tap *t, uint64_t pos, const void *src, uint32_t len)
{
	uint64_t at = pos & (t->size - 1), first = t->size - at;

	if (len <= first)
		return gpu_copy(t, t->ring + at, src, len);
	return gpu_copy(t, t->ring + at, src, (uint32_t)first) +
	       gpu_copy(t, t->ring, (const uint8_t *)src + first, len - (uint32_t)first);
}

/* ---- capture by reference: the queue's thread ----------------------------- */

/* Hand the backend the held packets, oldest first, up to the first the
 * writer has not written (a reference at or past tail), in bursts. */
static void held_release(struct vfgx_capture_tap *t, uint64_t tail)
{
	struct vfgx_pkt out[256];
	uint64_t mask = t->held_cap - 1;
	uint16_t k = 0;

	while (t->held_tail != t->held_head) {
		const struct cap_held *h = &t->held[t->held_tail & mask];

		if (h->ref != CAP_NONE && h->ref >= tail &&
		    __atomic_load_n(&t->refs[h->ref & (t->nref - 1)].state, __ATOMIC_RELAXED) !=
			    REF_COPIED)
			break;
		out[k++] = h->pkt;
		t->held_tail++;
		if (k == 256) {
			t->port->ops->release(t->port, t->q, out, k);
			k = 0;
		}
	}
	if (k)
		t->port->ops->release(t->port, t->q, out, k);
}

void vfgx_capture_tap_reclaim(struct vfgx_capture_tap *t)
{
	if (t->held_tail != t->held_head)
		held_release(t, __atomic_load_n(&t->rtail, __ATOMIC_ACQUIRE));
}

/* Room for a copy of cl bytes for record x in the arena (a copy lies
 * whole, so the arena's end may go unused): where, or NULL when the
 * writer has not given enough back.  Copies go in record order (the
 * writer frees the arena up to the last one it wrote). */
static uint8_t *arena_get(struct vfgx_capture_tap *t, uint64_t x, uint32_t cl, uint64_t *end)
{
	uint64_t pos = t->arena_head, at = pos & (t->size - 1);

	if (t->arena_last != CAP_NONE && x <= t->arena_last)
		return NULL;
	if (at + cl > t->size)
		pos += t->size - at;
	if (pos + cl - t->arena_tail_seen > t->size) {
		t->arena_tail_seen = __atomic_load_n(&t->arena_tail, __ATOMIC_ACQUIRE);
		if (pos + cl - t->arena_tail_seen > t->size)
			return NULL;
	}
	*end = pos + cl;
	return t->ring + (pos & (t->size - 1));
}

/* The queue found nothing to receive while it holds packets back for
 * the writer (which may be why: a source that hands its buffers out in
 * a fixed order, or a pool that ran dry): copy the frames of the oldest
 * references the writer has not claimed into the arena, in record
 * order, up to the oldest held packet's, and give back what that frees.
 * The queue's thread has nothing else to do. */
#define CAP_RESCUE_MAX 256 /* copies a call */

void vfgx_capture_tap_rescue(struct vfgx_capture_tap *t)
{
	uint64_t tail, upto = CAP_NONE, mask = t->nref - 1, x;
	uint32_t done = 0;

	if (t->held_tail == t->held_head)
		return;
	tail = __atomic_load_n(&t->rtail, __ATOMIC_ACQUIRE);
	for (uint64_t i = t->held_tail; i != t->held_head; i++) {
		const struct cap_held *h = &t->held[i & (t->held_cap - 1)];

		if (h->ref != CAP_NONE && h->ref >= tail) {
			upto = h->ref;
			break;
		}
	}
	if (upto == CAP_NONE) {
		held_release(t, tail);
		return;
	}
	x = t->rescue_at > tail ? t->rescue_at : tail;
	for (; x <= upto && done < CAP_RESCUE_MAX; x++, done++) {
		struct cap_ref *e = &t->refs[x & mask];
		uint32_t st = REF_OPEN;
		uint64_t end;
		uint8_t *dst;

		if (e->copied)
			continue;
		if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != REF_OPEN)
			break; /* the writer is on it: written soon */
		if (!(dst = arena_get(t, x, e->r.caplen, &end)))
			break;
		memcpy(dst, e->data, e->r.caplen);
		e->copy = dst;
		e->copy_end = end;
		if (!__atomic_compare_exchange_n(&e->state, &st, REF_COPIED, false,
						 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			break; /* claimed meanwhile: the copy is not used */
		t->arena_head = end;
		t->arena_last = x;
	}
	t->rescue_at = x;
	held_release(t, tail);
}

/* Hold p (reference ref) until the writer has passed it; the FIFO
 * doubles when full (at most as many packets as the queue has out). */
static void held_push(struct vfgx_capture_tap *t, const struct vfgx_pkt *p, uint64_t ref)
{
	if (t->held_head - t->held_tail == t->held_cap) {
		struct cap_held *bigger = malloc(sizeof(*bigger) * t->held_cap * 2);
		uint64_t n = t->held_head - t->held_tail;

		if (!bigger) {
			/* no memory: wait for the writer rather than let the
			 * backend reuse a buffer it has not written */
			while (t->held_head - t->held_tail == t->held_cap)
				vfgx_capture_tap_reclaim(t);
		} else {
			for (uint64_t i = 0; i < n; i++)
				bigger[i] = t->held[(t->held_tail + i) & (t->held_cap - 1)];
			free(t->held);
			t->held = bigger;
			t->held_cap *= 2;
			t->held_tail = 0;
			t->held_head = n;
		}
	}
	t->held[t->held_head & (t->held_cap - 1)] = (struct cap_held){ *p, ref };
	t->held_head++;
}

/* The reference of a released packet rx marked VFGX_PKT_CAP_REF: the
 * next one in rx order, or (released out of order, however far) the one
 * the packet's tag names; CAP_NONE for one the writer has passed.
 *
 * Every unwritten reference whose packet has not come back lies at or
 * past match (match is at or past the writer's tail; what lies between
 * was matched), and a buffer is referenced once while unwritten (it goes
 * back to its backend only once written), so handle and tag find the
 * packet's reference exactly: the references with its tag are one in
 * CAP_TAG_STRIDE, at most nref / CAP_TAG_STRIDE of them to look at.  One
 * not found there was written, and may go back at once: a buffer the
 * writer has still to read never goes back to its backend. */
static uint64_t ref_match(struct vfgx_capture_tap *t, const void *handle, uint64_t tag,
			  uint64_t head)
{
	uint64_t mask = t->nref - 1, m = t->match, x;

	while (m != head && t->refs[m & mask].handle == CAP_GONE)
		m++; /* copies, and references matched out of order */
	t->match = m;
	if (m == head)
		return CAP_NONE;
	if (ref_tag(m) == tag && t->refs[m & mask].handle == handle) {
		t->match = m + 1;
		return m;
	}
	/* the first reference past m with the packet's tag */
	for (x = m + 1 + ((tag - ref_tag(m + 1)) & (CAP_TAG_STRIDE - 1)); x < head;
	     x += CAP_TAG_STRIDE) {
		if (t->refs[x & mask].handle == handle) {
			t->refs[x & mask].handle = CAP_GONE;
			return x;
		}
	}
	return CAP_NONE;
}

void vfgx_capture_tap_release(struct vfgx_capture_tap *t, struct vfgx_pkt *pkts, uint16_t n)
{
	struct vfgx_port *port = t->port;
	uint64_t tail, head = t->rhead;
	uint16_t from = 0;

	if (!t->by_ref && t->held_tail == t->held_head) {
		port->ops->release(port, t->q, pkts, n);
		return;
	}
	/* references before the writer's tail may be reused by rx: none is
	 * looked at again */
	tail = __atomic_load_n(&t->rtail, __ATOMIC_ACQUIRE);
	if (t->match < tail)
		t->match = tail;
	for (uint16_t i = 0; i < n; i++) {
		uint64_t ref = CAP_NONE;

		if (pkts[i].flags & VFGX_PKT_CAP_REF) {
			uint64_t tag = (pkts[i].flags & VFGX_PKT_CAP_TAG) / CAP_TAG_ONE;

			ref = ref_match(t, pkts[i].handle, tag, head);
			pkts[i].flags &= (uint16_t)~(VFGX_PKT_CAP_REF | VFGX_PKT_CAP_TAG);
		}
		if (ref == CAP_NONE || ref < tail) {
			/* a port that counts releases in rx order (the
			 * loopback replay) gets nothing past a held packet */
			if (!t->in_order || t->held_tail == t->held_head)
				continue;
			ref = CAP_NONE;
		}
		if (i > from)
			port->ops->release(port, t->q, pkts + from, (uint16_t)(i - from));
		held_push(t, &pkts[i], ref);
		from = (uint16_t)(i + 1);
	}
	if (n > from)
		port->ops->release(port, t->q, pkts + from, (uint16_t)(n - from));
	held_release(t, tail);
}

/* The burst's host packets the mode selects, in rx order: references
 * (marked VFGX_PKT_CAP_REF) up to ref_bound of them unwritten, then
 * copies into the arena, to take a burst the writer is behind on: at
 * most the arena's size of them until the writer has had nothing to
 * write for CAP_FLUSH_NS.  A writer that stays behind would otherwise
 * have rx copy as many records as it writes, at the writer's pace (the
 * copies slow rx down to it): the cost references save.  No room:
 * ring_full. */
static void tap_refs(struct vfgx_capture_tap *t, struct vfgx_pkt *pkts, uint16_t n)
{
	uint64_t head = t->rhead, hb = t->rhead_bytes, mask = t->nref - 1;
	uint64_t sel = 0, full = 0, gpu = 0;

	if (t->absorb_left < t->size) {
		/* copies again once the writer has had nothing to write for
		 * CAP_FLUSH_NS, at every burst in between */
		uint64_t now = pkts[0].ts_ns ? pkts[0].ts_ns : vfgx_now_ns();

		if (__atomic_load_n(&t->rtail, __ATOMIC_ACQUIRE) != head)
			t->idle_since = 0;
		else if (!t->idle_since)
			t->idle_since = now;
		else if (now - t->idle_since >= CAP_FLUSH_NS)
			t->absorb_left = t->size;
	}
	for (uint16_t i = 0; i < n; i++) {
		struct vfgx_pkt *p = &pkts[i];
		struct cap_ref *e;
		uint64_t wall, end = 0;
		uint8_t *dst = NULL;
		uint32_t cl;
		bool ref;

		if (p->flags & VFGX_PKT_GPU) {
			/* a queue's packets are in one memory: not expected */
			if (t->mode != VFGX_CAPTURE_DROPS)
				gpu++;
			continue;
		}
		if (!select_pkt(t, p))
			continue;
		sel++;
		cl = p->len < t->snaplen ? p->len : t->snaplen;
		if (head - t->rtail_seen >= t->nref ||
		    t->refs_made - t->rtail_refs_seen >= t->ref_bound) {
			/* what the writer gave back since the last look */
			t->rtail_seen = __atomic_load_n(&t->rtail, __ATOMIC_ACQUIRE);
			t->rtail_refs_seen = __atomic_load_n(&t->rtail_refs, __ATOMIC_ACQUIRE);
		}
		ref = t->refs_made - t->rtail_refs_seen < t->ref_bound;
		if (head - t->rtail_seen >= t->nref ||
		    (!ref && (cl > t->absorb_left || !(dst = arena_get(t, head, cl, &end))))) {
			full++;
			continue;
		}
		e = &t->refs[head & mask];
		wall = (p->ts_ns ? p->ts_ns : vfgx_now_ns()) + (uint64_t)t->wall_off_ns;
		e->r.ts_sec = (uint32_t)(wall / 1000000000);
		e->r.ts_nsec = (uint32_t)(wall % 1000000000);
		e->r.caplen = cl;
		e->r.len = p->len;
		e->copied = !ref;
		if (ref) {
			e->data = p->data;
			e->handle = p->handle;
			__atomic_store_n(&e->state, REF_OPEN, __ATOMIC_RELAXED);
			p->flags |= (uint16_t)(VFGX_PKT_CAP_REF | ref_tag(head) * CAP_TAG_ONE);
			t->refs_made++;
		} else {
			memcpy(dst, p->data, cl);
			e->data = e->copy = dst;
			e->copy_end = end;
			e->handle = CAP_GONE;
			__atomic_store_n(&e->state, REF_COPIED, __ATOMIC_RELAXED);
			t->arena_head = end;
			t->arena_last = head;
			t->absorb_left -= cl;
		}
		head++;
		hb += sizeof(e->r) + cl;
	}
	__atomic_store_n(&t->rhead_bytes, hb, __ATOMIC_RELAXED);
	__atomic_store_n(&t->rhead, head, __ATOMIC_RELEASE);
	__atomic_store_n(&t->seen, t->seen + n, __ATOMIC_RELAXED);
	__atomic_store_n(&t->selected, t->selected + sel, __ATOMIC_RELAXED);
	__atomic_store_n(&t->ring_full, t->ring_full + full, __ATOMIC_RELAXED);
	__atomic_store_n(&t->skipped_gpu, t->skipped_gpu + gpu, __ATOMIC_RELAXED);
}

void vfgx_capture_tap_burst(struct vfgx_capture_tap *t, struct vfgx_pkt *pkts, uint16_t n)
{
	uint64_t head = t->head, head0 = head;
	uint64_t room = t->size - (head - t->room_tail);
	uint64_t sel = 0, full = 0, gpu = 0, gpu_copies = 0, gpu_sel = 0;

	if (!t->mode_known) {
		/* a queue whose memory the port did not say: its first packet */
		t->by_ref = !(pkts[0].flags & VFGX_PKT_GPU);
		t->mode_known = true;
	}
	if (t->by_ref) {
		tap_refs(t, pkts, n);
		return;
	}
	for (uint16_t i = 0; i < n; i++) {
		const struct vfgx_pkt *p = &pkts[i];
		struct cap_rec r;
		uint64_t wall;
		uint32_t cl;

		if (p->flags & VFGX_PKT_GPU) {
			/* drops mode parses on the CPU: not from GPU memory */
			if (t->mode == VFGX_CAPTURE_DROPS)
				continue;
#if !VFGX_HAVE_CUDA
			gpu++;
			continue;
#endif
			if (t->mode == VFGX_CAPTURE_SAMPLE && !sample_pkt(t))
				continue;
		} else if (!select_pkt(t, p)) {
			continue;
		}
		sel++;
		cl = p->len < t->snaplen ? p->len : t->snaplen;
		if (sizeof(r) + cl > room) {
			/* the space the writer gave back since the last look */
			t->room_tail = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
			room = t->size - (head - t->room_tail);
			if (sizeof(r) + cl > room) {
				full++;
				continue;
			}
		}
		wall = (p->ts_ns ? p->ts_ns : vfgx_now_ns()) + (uint64_t)t->wall_off_ns;
		r.ts_sec = (uint32_t)(wall / 1000000000);
		r.ts_nsec = (uint32_t)(wall % 1000000000);
		r.caplen = cl;
		r.len = p->len;
		ring_put(t, head, &r, sizeof(r));
		if (p->flags & VFGX_PKT_GPU) {
			gpu_copies += (uint64_t)ring_put_gpu(t, head + sizeof(r), p->data, cl);
			gpu_sel++;
		} else {
			ring_put(t, head + sizeof(r), p->data, cl);
		}
		head += sizeof(r) + cl;
		room -= sizeof(r) + cl;
	}
	/* GPU packets: their copies were queued on the tap's stream; the burst
	 * is published once they are all in (or dropped whole if one failed) */
	if (gpu_copies && gpu_wait(t)) {
		head = head0;
		sel -= gpu_sel;
		gpu += gpu_sel;
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
		struct vfgx_capture_tap *t = c->taps[i];

		/* the writer wrote every reference: what the pipeline
		 * released goes back (the queues are not polled now) */
		held_release(t, UINT64_MAX);
		free(t->refs);
		free(t->held);
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
	free(c->bounce);
	free(c->iov);
	free(c);
	return err;
}
