/* capture.c - received packets to capture files, off the hot path.  One
 * writer thread drains the tapped rx queues into files of the chosen
 * format (capture_file.h), rotating them by size.
 *
 * Packets in host or pinned memory are captured by reference
 * (capture_ref.c, on the queue's thread): the queue records pcap's
 * 16-byte record header and where the frame lies, in rx order, and the
 * writer here hands header and frame straight from the packet's buffer
 * to writev(2) (IOV_MAX pieces a call), so the queue copies nothing.  A
 * packet the pipeline releases before the writer wrote it is held until
 * the writer has passed it; copies rx or a rescue made into the tap's
 * ring (the arena) are written from there, and free it up to the last
 * one written.
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
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/capture.h>

#include "backend.h"
#include "capture_file.h"
#include "capture_open.h"
#include "capture_ref.h"
#include "capture_tap.h"
#include "pcap_opts.h"
#include "vfgx_build.h"

#define CAP_SPAN_MIN (256u << 10) /* less in a ring (or a quarter of a smaller
				   * ring) waits, up to CAP_FLUSH_NS */
#define CAP_SPAN_MAX (1u << 20)   /* one write; the ring space goes back after it */
#define CAP_IDLE_NS 200000        /* the writer's nap when the rings are empty */
#define CAP_WAIT_NS 50000         /* its nap when a ring holds less than a span
				   * within 1 ms of a write (a busy capture):
				   * queues capturing by reference hold their
				   * packets meanwhile */


struct file_id {
	dev_t dev;
	ino_t ino;
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
	bool replace;        /* an existing regular file may be truncated */
	bool created;        /* the open file was made by this capture */
	struct stat made;    /* ... and is this one */
	struct file_id *kept; /* rotate_files: file n's identity at n % rotate_files */
	struct stat *inputs; /* files the run reads: never written */
	const char **input_paths;
	uint32_t nb_inputs;
	/* writer's counters */
	uint64_t written, failed, bytes_closed; /* bytes_closed: of every file
						     * closed, as it ended */
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

/* Remove name if it is still the file (dev, ino) this capture made: the
 * name may lead elsewhere since, and what the capture did not make is
 * never removed. */
static void unlink_made(const char *name, dev_t dev, ino_t ino)
{
	struct stat now;

	if (lstat(name, &now) == 0 && S_ISREG(now.st_mode) && now.st_dev == dev &&
	    now.st_ino == ino)
		unlink(name);
}

static const char *file_kind(mode_t m)
{
	return S_ISLNK(m) ? "a symbolic link" : S_ISDIR(m) ? "a directory" :
	       S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" :
	       S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/* The descriptor of capture file name, opened for writing: created new
 * (O_EXCL, *created), or, where c->replace allows, an existing regular
 * file truncated.  A symbolic link is never followed and a device, FIFO
 * or socket never opened (O_NONBLOCK besides: a FIFO put there meanwhile
 * cannot block the open); a file one of the run's ports reads is refused
 * before anything is written to it.  -errno after one line. */
static int file_create(struct vfgx_capture *c, const char *name, int *fd, bool *created,
		       struct stat *made)
{
	const int fl = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
	struct stat st;
	bool have_st = false;
	int err;

	*created = false;
	if ((*fd = open(name, fl | O_CREAT | O_EXCL, 0666)) >= 0) {
		*created = true;
		goto opened;
	}
	if (errno != EEXIST)
		goto fail;
	if (lstat(name, &st))
		goto fail;
	if (!S_ISREG(st.st_mode))
		return vfgx_set_error(c->ctx, -EINVAL,
				      "capture: %s is %s: a capture is written to a new file or a regular one (name another path)",
				      name, file_kind(st.st_mode));
	for (uint32_t i = 0; i < c->nb_inputs; i++)
		if (st.st_dev == c->inputs[i].st_dev && st.st_ino == c->inputs[i].st_ino)
			return vfgx_set_error(c->ctx, -EINVAL,
					      "capture: %s is the file this run reads (%s): name another path",
					      name, c->input_paths[i]);
	if (!c->replace)
		return vfgx_set_error(c->ctx, -EEXIST,
				      "capture: %s exists: not replaced (vfgx run --force replaces it, or name another path)",
				      name);
	if ((*fd = open(name, fl)) < 0)
		goto fail;
opened:
	/* what was opened is what was checked: a regular file, no input */
	if (fstat(*fd, &st))
		goto fail_fd;
	have_st = true;
	if (!S_ISREG(st.st_mode)) {
		close(*fd);
		return vfgx_set_error(c->ctx, -EINVAL,
				      "capture: %s is %s: a capture is written to a new file or a regular one (name another path)",
				      name, file_kind(st.st_mode));
	}
	for (uint32_t i = 0; i < c->nb_inputs; i++)
		if (st.st_dev == c->inputs[i].st_dev && st.st_ino == c->inputs[i].st_ino) {
			close(*fd);
			return vfgx_set_error(c->ctx, -EINVAL,
					      "capture: %s is the file this run reads (%s): name another path",
					      name, c->input_paths[i]);
		}
	if (!*created && ftruncate(*fd, 0))
		goto fail_fd;
	/* O_NONBLOCK off: the writes wait as a regular file's do */
	if (fcntl(*fd, F_SETFL, O_WRONLY) < 0)
		goto fail_fd;
	*made = st;
	return 0;
fail_fd:
	err = errno;
	close(*fd);
	if (*created && have_st)
		unlink_made(name, st.st_dev, st.st_ino);
	return vfgx_set_error(c->ctx, -err, "capture: %s: %s", name, strerror(err));
fail:
	err = errno;
	if (err == ELOOP) /* O_NOFOLLOW on a symbolic link */
		return vfgx_set_error(c->ctx, -EINVAL,
				      "capture: %s is a symbolic link: a capture is written to a new file or a regular one (name the link's target)",
				      name);
	return vfgx_set_error(c->ctx, -err, "capture: %s: %s", name, strerror(err));
}

/* Open file c->file_idx, its header written and flushed; on failure
 * nothing this run created is left on disk (a file it replaced stays,
 * empty). */
static int file_open(struct vfgx_capture *c)
{
	char name[4096];
	struct stat st;
	bool created;
	int ret, fd;

	file_name(c, c->file_idx, name, sizeof(name));
	if ((ret = file_create(c, name, &fd, &created, &st)))
		return ret;
	if ((ret = c->fmt->open(c->ctx, fd, name, c->conf.snaplen, &c->f))) {
		if (created)
			unlink_made(name, st.st_dev, st.st_ino);
		return ret;
	}
	c->created = created;
	c->made = st;
	c->good = c->fmt->size(c->f);
	c->flushed_ns = vfgx_now_ns();
	__atomic_fetch_add(&c->files, 1, __ATOMIC_RELAXED);
	if (c->kept) {
		struct file_id *k = &c->kept[c->file_idx % c->conf.rotate_files];

		/* the oldest kept file goes, if it is still the one written */
		if (c->file_idx >= c->conf.rotate_files) {
			file_name(c, c->file_idx - c->conf.rotate_files, name, sizeof(name));
			unlink_made(name, k->dev, k->ino);
		}
		*k = (struct file_id){ st.st_dev, st.st_ino };
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
	__atomic_fetch_add(&c->bytes_closed, (uint64_t)c->good, __ATOMIC_RELAXED);
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
	int64_t size = c->fmt->close(c->f, -1);
	int ret;

	/* every closed file's bytes count, also when the next cannot open */
	__atomic_fetch_add(&c->bytes_closed, (uint64_t)(size >= 0 ? size : c->good),
			   __ATOMIC_RELAXED);
	c->f = NULL;
	c->file_idx++;
	if ((ret = file_open(c))) {
		__atomic_store_n(&c->error, ret, __ATOMIC_RELEASE);
		vfgx_warn(c->ctx, "%s: capture stopped", vfgx_last_error(c->ctx));
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

/* nrec whole records went into the file: count them, and rotate past
 * rotate_bytes. */
static void span_written(struct vfgx_capture *c, uint64_t nrec)
{
	__atomic_fetch_add(&c->written, nrec, __ATOMIC_RELAXED);
	c->good = c->fmt->size(c->f);
	c->written_flushed = c->written;
	if (c->conf.rotate_bytes && (uint64_t)c->good >= c->conf.rotate_bytes)
		file_rotate(c);
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
		span_written(c, nrec);
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
		span_written(c, nrec);
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

static void guard_free(struct vfgx_capture *c)
{
	free(c->inputs);
	free(c->input_paths);
}

/* The input files of the guard's ports, to compare with every file the
 * capture opens. */
static int guard_take(struct vfgx_capture *c, const struct vfgx_capture_guard *g)
{
	c->replace = !g || g->replace;
	if (!g || !g->nb_inputs)
		return 0;
	c->inputs = calloc(g->nb_inputs, sizeof(*c->inputs));
	c->input_paths = calloc(g->nb_inputs, sizeof(*c->input_paths));
	if (!c->inputs || !c->input_paths)
		return -ENOMEM;
	for (uint16_t i = 0; i < g->nb_inputs; i++)
		if (vfgx_port_input_file(g->inputs[i], &c->inputs[c->nb_inputs],
					 &c->input_paths[c->nb_inputs]) == 0)
			c->nb_inputs++;
	return 0;
}

int vfgx_capture_open(vfgx_ctx *ctx, const struct vfgx_capture_conf *conf,
		      vfgx_capture **out)
{
	return vfgx_capture_open_guarded(ctx, conf, NULL, out);
}

int vfgx_capture_open_guarded(vfgx_ctx *ctx, const struct vfgx_capture_conf *conf,
			      const struct vfgx_capture_guard *guard, vfgx_capture **out)
{
	struct vfgx_capture *c;
	struct timespec rt, mt;
	int ret;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->ctx = ctx;
	if (guard_take(c, guard)) {
		guard_free(c);
		free(c);
		return -ENOMEM;
	}
	if ((ret = vfgx_capture_conf_check(ctx, conf, &c->conf))) {
		guard_free(c);
		free(c);
		return ret;
	}
	if (!c->conf.path || !c->conf.path[0]) {
		guard_free(c);
		free(c);
		return vfgx_set_error(ctx, -EINVAL, "capture: no file named (pipeline.capture.path or --capture FILE)");
	}
	if (c->conf.ring_bytes & (c->conf.ring_bytes - 1)) {
		guard_free(c);
		free(c);
		return vfgx_set_error(ctx, -EINVAL, "capture: ring_bytes %u is not a power of two",
				      conf->ring_bytes);
	}
	if (!(c->fmt = choose_format(ctx, &c->conf))) {
		guard_free(c);
		free(c);
		return -ENOTSUP;
	}
	if ((!c->fmt->write_raw && !(c->bounce = malloc(c->conf.snaplen))) ||
	    !(c->iov = malloc(sizeof(*c->iov) * IOV_MAX))) {
		free(c->bounce);
		guard_free(c);
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
	if (c->conf.rotate_files &&
	    !(c->kept = calloc(c->conf.rotate_files, sizeof(*c->kept))))
		ret = -ENOMEM;
	else
		ret = !c->path ? -ENOMEM : file_open(c);
	if (!ret && (ret = -pthread_create(&c->writer, NULL, writer_main, c)))
		vfgx_set_error(ctx, ret, "capture: writer thread: %s", strerror(-ret));
	if (ret) {
		if (c->f) {
			c->fmt->close(c->f, -1);
			if (c->created)
				unlink_made(c->path, c->made.st_dev, c->made.st_ino);
		}
		free(c->kept);
		guard_free(c);
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
				ok = !vfgx_cap_ref_alloc(t, pool, c->conf.ring_bytes);
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
		vfgx_cap_tap_refs(t, pkts, n);
		return;
	}
	for (uint16_t i = 0; i < n; i++) {
		const struct vfgx_pkt *p = &pkts[i];
		struct cap_rec r;
		uint32_t cl;

		if (p->flags & VFGX_PKT_GPU) {
			/* drops mode parses on the CPU: not from GPU memory */
			if (t->mode == VFGX_CAPTURE_DROPS)
				continue;
#if !VFGX_HAVE_CUDA
			gpu++;
			continue;
#endif
			if (t->mode == VFGX_CAPTURE_SAMPLE && !cap_sample(t))
				continue;
		} else if (!cap_select(t, p)) {
			continue;
		}
		sel++;
		r = cap_rec_of(t, p);
		cl = r.caplen;
		if (sizeof(r) + cl > room) {
			/* the space the writer gave back since the last look */
			t->room_tail = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
			room = t->size - (head - t->room_tail);
			if (sizeof(r) + cl > room) {
				full++;
				continue;
			}
		}
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

		c->bytes_closed += (uint64_t)(size >= 0 ? size : c->good);
		c->f = NULL;
	}
	if (st)
		vfgx_capture_stats(c, st);
	err = c->error;
	for (uint32_t i = 0; i < c->nb_taps; i++) {
		struct vfgx_capture_tap *t = c->taps[i];

		/* the writer wrote every reference: what the pipeline
		 * released goes back (the queues are not polled now) */
		vfgx_cap_held_release(t, UINT64_MAX);
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
	free(c->kept);
	guard_free(c);
	pthread_mutex_destroy(&c->lock);
	free(c->path);
	free(c->bounce);
	free(c->iov);
	free(c);
	return err;
}
