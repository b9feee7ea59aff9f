/* record_raw.c - raw recording: one large sequential data file written
 * with O_DIRECT through io_uring, one record per chunk laid out as the
 * pipeline's ring slot (payload slots, present bitmap, lengths at the
 * slot's offsets, padded to 4096 bytes).  On the recorder's own thread
 * with chunks in host or pinned memory the slot itself is written and the
 * chunk given back when its write completed (record.ring held at most);
 * otherwise (vfgx_record_chunk, GPU chunks) the chunk is copied into one
 * of ring + 1 aligned staging buffers: the spare one takes the next
 * chunk's copy while ring writes keep the disk's queue full
 * and a sidecar PATH.index.jsonl: a header line, then one
 * line per chunk appended only after the chunk's write completed, so that
 * after a crash or SIGKILL the index still opens and lists exactly the
 * chunks on file (a reader ignores a last line without its newline). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <liburing.h>

#include "record_priv.h"
#include "vfgx_build.h"

#define RAW_ALIGN 4096u
/* 2: the record is the ring slot's layout; 3: index lines carry first_seq,
 * hdr_ts, bytes, missing_bytes and hdr_flags, and profile is pipeline.format's */
#define RAW_FORMAT_VERSION 3

struct raw_slot {
	void *buf;                /* staging, allocated on first use */
	bool busy;
	bool held;                /* writing the chunk's own slot: put it after */
	uint64_t submit_ns;
	/* the chunk's metadata, for its index line once written */
	uint32_t stream, present_count, missing, flags, hdr_flags;
	uint64_t index, first, ready_ns, last_packet_ns, late, offset;
	uint64_t first_seq, hdr_ts, bytes, missing_bytes;
};

struct raw_writer {
	int fd, index_fd;
	struct io_uring ring;
	bool ring_ok;
	uint32_t nslots, depth, in_flight; /* buffers, writes in flight at most */
	struct raw_slot *slots;
	size_t rec_bytes, present_off, lens_off;
	uint64_t next_off;
	bool abandoned;           /* writes left to the kernel after a stall */
	/* the index's bytes written, and the space reserved for it ahead
	 * (fallocate, the size kept): a full file system still takes the
	 * chunk lines and the stop line, which come after the data */
	uint64_t index_bytes, index_reserved;
	char index_path[4200];
};

#define INDEX_RESERVE (64u * 1024)

/* Keep INDEX_RESERVE bytes ahead of the index's end allocated, so that the
 * data file filling the disk leaves the index room to say so.  Best
 * effort: a file system without fallocate keeps today's behaviour. */
static void index_reserve(struct raw_writer *w)
{
	if (w->index_bytes + INDEX_RESERVE / 2 <= w->index_reserved)
		return;
	if (fallocate(w->index_fd, FALLOC_FL_KEEP_SIZE, (off_t)w->index_reserved,
		      INDEX_RESERVE) == 0)
		w->index_reserved += INDEX_RESERVE;
}

/* One line to the index, whole or not at all from the reader's view (a
 * line without its newline is ignored). */
static int index_line(vfgx_record *r, struct raw_writer *w, const char *line,
		      size_t len)
{
	ssize_t n = write(w->index_fd, line, len);

	if (n == (ssize_t)len) {
		rec_add_bytes(r, (uint64_t)len);
		w->index_bytes += len;
		index_reserve(w);
		return 0;
	}
	return rec_fail(r, n < 0 ? -errno : -ENOSPC, "record: %s: %s; recording stopped (the pipeline goes on)",
			w->index_path, n < 0 ? strerror(errno) : "short write (file system full?)");
}

static int write_header(vfgx_record *r, struct raw_writer *w, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t cap = 4096 + (r->config_text ? strlen(r->config_text) * 6 : 0);
	char *line = malloc(cap);
	size_t len;
	int ret;

	if (!line)
		return rec_fail(r, -ENOMEM, "record: out of memory");
	len = (size_t)snprintf(line, cap,
			       "{\"profile\":\"%s\",\"format\":\"raw\",\"format_version\":%d,"
			       "\"vfgx_version\":\"%s\",\"packets\":%u,\"payload_bytes\":%u,"
			       "\"streams\":%u,\"present_words\":%u,\"record_bytes\":%zu,"
			       "\"data_offset\":0,\"present_offset\":%zu,\"lens_offset\":%zu,"
			       "\"direct\":%s,\"data_file\":",
			       r->profile, RAW_FORMAT_VERSION, VFGX_VERSION, r->packets, r->payload_bytes,
			       r->streams, r->present_words, w->rec_bytes, w->present_off,
			       w->lens_off, r->st.direct ? "true" : "false");
	rec_json_str(line, cap, &len, base ? base + 1 : path);
	len += (size_t)snprintf(line + len, cap - len, ",\"config\":");
	if (r->config_text)
		rec_json_str(line, cap, &len, r->config_text);
	else
		len += (size_t)snprintf(line + len, cap - len, "null");
	len += (size_t)snprintf(line + len, cap - len, "}\n");
	ret = index_line(r, w, line, len);
	free(line);
	return ret;
}

static void raw_free(vfgx_record *r, struct raw_writer *w)
{
	if (w->ring_ok)
		io_uring_queue_exit(&w->ring);
	for (uint32_t i = 0; w->slots && i < w->nslots; i++)
		rec_host_free(r, w->slots[i].buf);
	free(w->slots);
	if (w->fd >= 0)
		close(w->fd);
	if (w->index_fd >= 0)
		close(w->index_fd);
	free(w);
}

static int raw_open(vfgx_record *r, const char *path, int fd)
{
	struct raw_writer *w = calloc(1, sizeof(*w));
	int ret;

	if (!w) {
		close(fd);
		return rec_fail(r, -ENOMEM, "record: out of memory");
	}
	w->fd = fd;
	w->index_fd = -1;
	w->present_off = r->present_off;
	w->lens_off = r->lens_off;
	w->rec_bytes = r->rec_bytes;
	w->depth = r->conf.ring;
	w->nslots = r->conf.ring + 1;
	/* O_DIRECT where the file system takes it (tmpfs before Linux 6.6
	 * does not): every write is a whole aligned record either way */
	pthread_mutex_lock(&r->lock);
	r->st.direct = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_DIRECT) == 0;
	pthread_mutex_unlock(&r->lock);
	snprintf(w->index_path, sizeof(w->index_path), "%s.index.jsonl", path);
	w->index_fd = rec_create(r, w->index_path, O_APPEND);
	if (w->index_fd < 0)
		goto fail;
	index_reserve(w);
	w->slots = calloc(w->nslots, sizeof(*w->slots));
	if (!w->slots) {
		rec_fail(r, -ENOMEM, "record: out of memory");
		goto fail;
	}
	ret = io_uring_queue_init(w->depth, &w->ring, 0);
	if (ret < 0) {
		rec_fail(r, ret, "record: io_uring: %s (raw recording writes through io_uring; check kernel.io_uring_disabled)",
			 strerror(-ret));
		goto fail;
	}
	w->ring_ok = true;
	r->w = w;
	if (write_header(r, w, path))
		return r->st.error;
	return 0;
fail:
	raw_free(r, w);
	return r->st.error ? r->st.error : -EIO;
}

/* Give a held chunk back: the pipeline may fill its slot again. */
static void release(vfgx_record *r, struct raw_slot *s)
{
	if (s->held)
		vfgx_chunk_put(r->pl, s->stream, s->index);
	s->held = false;
	s->busy = false;
}

/* No write completed within record.max_wait_ms: the disk is slower than
 * the stream.  Stop; the writes in flight are left to the kernel (their
 * chunks given back and counted as not recorded: never indexed, so a
 * reader never sees them; their bytes may or may not reach the file). */
static int stall(vfgx_record *r, struct raw_writer *w)
{
	int ret = rec_fail(r, -ETIMEDOUT,
			   "record: %s: a write has not completed in %u ms (record.max_wait_ms; the disk is slower than the stream); recording stopped (the pipeline goes on)",
			   r->cur_path, r->conf.max_wait_ms);

	for (uint32_t i = 0; i < w->nslots; i++)
		if (w->slots[i].busy) {
			release(r, &w->slots[i]);
			rec_count_not_recorded(r);
		}
	w->in_flight = 0;
	w->abandoned = true;
	return ret;
}

/* Wait for a completion, at most until the oldest write in flight is
 * record.max_wait_ms old. */
static int wait_cqe(vfgx_record *r, struct raw_writer *w, struct io_uring_cqe **cqe)
{
	struct __kernel_timespec ts;
	uint64_t oldest = UINT64_MAX, now, dl;
	int ret;

	if (!r->conf.max_wait_ms)
		return io_uring_wait_cqe(&w->ring, cqe);
	for (uint32_t i = 0; i < w->nslots; i++)
		if (w->slots[i].busy && w->slots[i].submit_ns < oldest)
			oldest = w->slots[i].submit_ns;
	if (oldest == UINT64_MAX)
		return io_uring_wait_cqe(&w->ring, cqe);
	dl = oldest + (uint64_t)r->conf.max_wait_ms * 1000000u;
	now = vfgx_now_ns();
	dl = dl > now ? dl - now : 0;
	ts.tv_sec = (long long)(dl / 1000000000u);
	ts.tv_nsec = (long long)(dl % 1000000000u);
	ret = io_uring_wait_cqe_timeout(&w->ring, cqe, &ts);
	if (ret == -ETIME)
		return stall(r, w);
	return ret;
}

/* One completion: its index line when the write went whole. */
static int reap_one(vfgx_record *r, struct raw_writer *w, bool wait)
{
	struct io_uring_cqe *cqe;
	struct raw_slot *s;
	char line[768];
	int ret, res;

	ret = wait ? wait_cqe(r, w, &cqe) : io_uring_peek_cqe(&w->ring, &cqe);
	if (ret == -ETIMEDOUT && w->abandoned)
		return ret;
	if (ret == -EAGAIN || ret == -EINTR)
		return 1;
	if (ret < 0)
		return rec_fail(r, ret, "record: io_uring: %s; recording stopped (the pipeline goes on)",
				strerror(-ret));
	s = &w->slots[io_uring_cqe_get_data64(cqe)];
	res = cqe->res;
	io_uring_cqe_seen(&w->ring, cqe);
	w->in_flight--;
	if (res < 0 || (size_t)res != w->rec_bytes) {
		if (res >= 0)
			res = -ENOSPC; /* a short write: the file system is full */
		rec_fail(r, res, "record: %s: %s writing stream %u chunk %" PRIu64 "; recording stopped (the pipeline goes on)",
			 r->cur_path, strerror(-res), s->stream, s->index);
		release(r, s);
		rec_count_not_recorded(r);
		return res;
	}
	release(r, s);
	if (r->stopped) {
		/* written, but after the stop: not indexed */
		rec_count_not_recorded(r);
		return r->st.error;
	}
	rec_add_bytes(r, w->rec_bytes);
	snprintf(line, sizeof(line),
		 "{\"stream\":%u,\"index\":%" PRIu64 ",\"first\":%" PRIu64 ",\"offset\":%" PRIu64
		 ",\"present_count\":%u,\"missing\":%u,\"flags\":%u,\"ready_ns\":%" PRIu64
		 ",\"last_packet_ns\":%" PRIu64 ",\"late\":%" PRIu64 ",\"first_seq\":%" PRIu64
		 ",\"hdr_ts\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"missing_bytes\":%" PRIu64
		 ",\"hdr_flags\":%u}\n",
		 s->stream, s->index, s->first, s->offset, s->present_count, s->missing,
		 s->flags, s->ready_ns, s->last_packet_ns, s->late, s->first_seq, s->hdr_ts,
		 s->bytes, s->missing_bytes, s->hdr_flags);
	if ((ret = index_line(r, w, line, strlen(line)))) {
		rec_count_not_recorded(r);
		return ret;
	}
	rec_count_recorded(r);
	return 0;
}

static int raw_chunk(vfgx_record *r, const struct vfgx_chunk *c, bool hold)
{
	struct raw_writer *w = r->w;
	struct io_uring_sqe *sqe;
	struct raw_slot *s = NULL;
	uint32_t i, depth = w->depth;
	const void *buf;
	int ret;

	/* the slot as it lies: host or pinned memory, aligned for O_DIRECT */
	hold = hold && c->mem != VFGX_MEM_GPU && ((uintptr_t)c->data % RAW_ALIGN) == 0;
	if (hold && r->hold_depth < depth)
		depth = r->hold_depth;
	while (w->in_flight && reap_one(r, w, false) == 0)
		; /* take what completed meanwhile, without waiting */
	if (r->stopped)
		return r->st.error;
	if (hold) {
		/* nothing to copy: wait for a place in the queue first */
		while (w->in_flight >= depth)
			if ((ret = reap_one(r, w, true)) < 0)
				return ret;
	}
	/* at most depth < nslots writes in flight: a buffer is free, and
	 * the copy into it overlaps depth writes */
	for (i = 0; i < w->nslots && !s; i++)
		if (!w->slots[i].busy)
			s = &w->slots[i];
	if (hold) {
		buf = c->data;
	} else {
		if (!s->buf && !(s->buf = rec_host_alloc(r, w->rec_bytes)))
			return rec_fail(r, -ENOMEM, "record: out of memory for a staging buffer of %zu bytes (lower record.ring); recording stopped",
					w->rec_bytes);
		if ((ret = rec_stage(r, c, s->buf, (uint64_t *)((uint8_t *)s->buf + w->present_off),
				     (uint32_t *)((uint8_t *)s->buf + w->lens_off))))
			return ret;
		buf = s->buf;
		while (w->in_flight >= depth)
			if ((ret = reap_one(r, w, true)) < 0)
				return ret;
	}
	if (r->stopped)
		return r->st.error;
	s->stream = c->stream;
	s->index = c->index;
	s->first = c->first;
	s->present_count = c->present_count;
	s->missing = c->missing;
	s->flags = c->flags;
	s->ready_ns = c->ready_ns;
	s->last_packet_ns = c->last_packet_ns;
	/* the placer counts late packets on a chunk while it is held */
	s->late = __atomic_load_n(&c->late, __ATOMIC_RELAXED);
	s->first_seq = c->first_seq;
	s->hdr_ts = c->hdr_ts;
	s->bytes = c->bytes;
	s->missing_bytes = c->missing_bytes;
	s->hdr_flags = c->hdr_flags;
	s->offset = w->next_off;
	sqe = io_uring_get_sqe(&w->ring);
	if (!sqe)
		return rec_fail(r, -EBUSY, "record: io_uring: no submission entry; recording stopped");
	io_uring_prep_write(sqe, w->fd, buf, (unsigned)w->rec_bytes, s->offset);
	io_uring_sqe_set_data64(sqe, (uint64_t)(s - w->slots));
	ret = io_uring_submit(&w->ring);
	if (ret < 0)
		return rec_fail(r, ret, "record: io_uring submit: %s; recording stopped", strerror(-ret));
	s->busy = true;
	s->held = hold;
	s->submit_ns = vfgx_now_ns();
	w->in_flight++;
	w->next_off += w->rec_bytes;
	return hold ? 1 : 0;
}

static int raw_close(vfgx_record *r)
{
	struct raw_writer *w = r->w;
	int ret = 0;

	if (!w)
		return 0;
	for (int tries = 0; w->in_flight && tries < 1000; tries++) {
		uint32_t before = w->in_flight;

		reap_one(r, w, true);
		if (w->in_flight == before && r->stopped)
			break; /* the ring itself failed: nothing more comes */
	}
	for (uint32_t i = 0; i < w->nslots; i++)
		if (w->slots[i].busy) {
			/* the ring failed with these in flight */
			release(r, &w->slots[i]);
			rec_count_not_recorded(r);
		}
	if (!r->stopped && fsync(w->fd))
		ret = rec_fail(r, -errno, "record: %s: %s on close", r->cur_path, strerror(errno));
	if (r->stopped && r->st.message[0]) {
		char line[600];
		size_t len = (size_t)snprintf(line, sizeof(line), "{\"stopped\":");

		rec_json_str(line, sizeof(line) - 4, &len, r->st.message);
		len += (size_t)snprintf(line + len, sizeof(line) - len, "}\n");
		/* best effort: the disk may be full; a reader treats the
		 * index's last complete line as the end either way */
		if (write(w->index_fd, line, len) == (ssize_t)len)
			rec_add_bytes(r, len);
	}
	raw_free(r, w);
	r->w = NULL;
	return ret ? ret : r->st.error;
}

static uint32_t raw_pending(vfgx_record *r)
{
	struct raw_writer *w = r->w;
	uint64_t now;

	if (!w)
		return 0;
	while (w->in_flight && reap_one(r, w, false) == 0)
		;
	if (w->in_flight && r->conf.max_wait_ms) {
		now = vfgx_now_ns();
		for (uint32_t i = 0; i < w->nslots; i++)
			if (w->slots[i].busy &&
			    now - w->slots[i].submit_ns > (uint64_t)r->conf.max_wait_ms * 1000000u) {
				stall(r, w);
				break;
			}
	}
	return w->in_flight;
}

static int raw_fd(vfgx_record *r)
{
	struct raw_writer *w = r->w;

	return w ? w->fd : -1;
}

const struct rec_ops rec_raw_ops = {
	.name = "raw",
	.open = raw_open,
	.chunk = raw_chunk,
	.close = raw_close,
	.pending = raw_pending,
	.fd = raw_fd,
};
