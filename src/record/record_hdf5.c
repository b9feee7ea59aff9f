/* record_hdf5.c - HDF5 recording: one file per run or rotation; per
 * stream a group streamS with a chunked dataset data[n][packets]
 * [payload_bytes] whose HDF5 chunks are the vfgx chunks, written with
 * H5Dwrite_chunk (deflated with zlib first when compression is on), and
 * one row per chunk in its metadata datasets; the group's attribute
 * "chunks" says how many rows are whole (it is written last). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record_priv.h"
#include "vfgx_build.h"

#if VFGX_HAVE_HDF5
#include <hdf5.h>
#include <zlib.h>

#define H5_FORMAT_VERSION 2 /* 2: first_seq, hdr_ts, bytes, missing_bytes, hdr_flags; profile is pipeline.format's */

/* the per-chunk metadata datasets, 1-D unless words > 0 */
enum { M_INDEX, M_FIRST, M_READY, M_LAST, M_LATE, M_FIRST_SEQ, M_HDR_TS, M_BYTES,
       M_MISSING_BYTES, M_PCOUNT, M_MISSING, M_FLAGS, M_HDR_FLAGS, M_PRESENT, M_LENS,
       NB_META };
static const char *const meta_names[NB_META] = {
	"index", "first", "ready_ns", "last_packet_ns", "late", "first_seq", "hdr_ts",
	"bytes", "missing_bytes", "present_count", "missing", "flags", "hdr_flags",
	"present", "lens",
};

struct h5_stream {
	hid_t group, data, meta[NB_META];
	uint64_t rows;
};

struct h5_writer {
	int fd; /* the file as created: its identity and its link count */
	hid_t file;
	struct h5_stream *streams; /* r->streams, group 0 = not yet made */
	void *zbuf;
	size_t zcap;
};

/* HDF5 prints its error stack by default, per thread in thread-safe
 * builds: the recorder reports its own one line instead, on whichever
 * thread writes. */
static void quiet(void)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static hid_t meta_type(int m)
{
	if (m >= M_PCOUNT && m != M_PRESENT)
		return H5T_NATIVE_UINT32;
	return H5T_NATIVE_UINT64;
}

static int h5_err(vfgx_record *r, const char *what)
{
	int e = errno ? errno : EIO;

	return rec_fail(r, -e, "record: %s: HDF5 %s failed: %s; recording stopped (the pipeline goes on)",
			r->cur_path, what, strerror(e));
}

static int attr_str(hid_t obj, const char *name, const char *val)
{
	hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR), a;
	herr_t e = -1;

	/* variable length, UTF-8: h5py reads a str */
	H5Tset_size(t, H5T_VARIABLE);
	H5Tset_cset(t, H5T_CSET_UTF8);
	a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
	if (a >= 0) {
		e = H5Awrite(a, t, &val);
		H5Aclose(a);
	}
	H5Sclose(s);
	H5Tclose(t);
	return e < 0 ? -1 : 0;
}

static int attr_u64(hid_t obj, const char *name, uint64_t v, bool create)
{
	hid_t s, a;
	herr_t e = -1;

	if (create) {
		s = H5Screate(H5S_SCALAR);
		a = H5Acreate2(obj, name, H5T_NATIVE_UINT64, s, H5P_DEFAULT, H5P_DEFAULT);
		H5Sclose(s);
	} else {
		a = H5Aopen(obj, name, H5P_DEFAULT);
	}
	if (a >= 0) {
		e = H5Awrite(a, H5T_NATIVE_UINT64, &v);
		H5Aclose(a);
	}
	return e < 0 ? -1 : 0;
}

/* An extendible dataset of rank 1..3 with dims[0] = 0 rows. */
static hid_t make_dset(vfgx_record *r, hid_t loc, const char *name, hid_t type,
		       int rank, const hsize_t *row, hsize_t chunk_rows, bool deflate)
{
	hsize_t dims[3] = { 0 }, maxd[3] = { H5S_UNLIMITED }, chunk[3] = { chunk_rows };
	hid_t sp, dcpl, d;

	for (int i = 1; i < rank; i++)
		dims[i] = maxd[i] = chunk[i] = row[i - 1];
	sp = H5Screate_simple(rank, dims, maxd);
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_chunk(dcpl, rank, chunk);
	if (deflate)
		H5Pset_deflate(dcpl, r->conf.compression_level);
	d = H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	H5Pclose(dcpl);
	H5Sclose(sp);
	return d;
}

static int make_stream(vfgx_record *r, struct h5_writer *w, uint32_t id)
{
	struct h5_stream *s = &w->streams[id];
	hsize_t row[2] = { r->packets, r->payload_bytes };
	char name[32];

	snprintf(name, sizeof(name), "stream%u", id);
	s->group = H5Gcreate2(w->file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	if (s->group < 0)
		return h5_err(r, "group create");
	if (attr_u64(s->group, "chunks", 0, true) || attr_u64(s->group, "stream", id, true))
		return h5_err(r, "attribute write");
	s->data = make_dset(r, s->group, "data", H5T_NATIVE_UINT8, 3, row, 1,
			    r->conf.compression == VFGX_RECORD_COMPRESSION_DEFLATE);
	if (s->data < 0)
		return h5_err(r, "dataset create");
	for (int m = 0; m < NB_META; m++) {
		hsize_t words = m == M_PRESENT ? r->present_words : r->packets;

		s->meta[m] = m >= M_PRESENT ?
			make_dset(r, s->group, meta_names[m], meta_type(m), 2, &words, 1, false) :
			make_dset(r, s->group, meta_names[m], meta_type(m), 1, NULL, 256, false);
		if (s->meta[m] < 0)
			return h5_err(r, "dataset create");
	}
	return 0;
}

/* Row `row` of a metadata dataset (extended to row + 1 rows). */
static int put_row(hid_t d, int rank, hsize_t row, hsize_t width, hid_t type,
		   const void *v)
{
	hsize_t dims[2] = { row + 1, width }, start[2] = { row, 0 }, count[2] = { 1, width };
	hid_t fs, ms;
	herr_t e;

	if (H5Dset_extent(d, dims) < 0)
		return -1;
	fs = H5Dget_space(d);
	ms = H5Screate_simple(rank, count, NULL);
	e = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
	if (e >= 0)
		e = H5Dwrite(d, type, ms, fs, H5P_DEFAULT, v);
	H5Sclose(ms);
	H5Sclose(fs);
	return e < 0 ? -1 : 0;
}

static int h5_chunk(vfgx_record *r, const struct vfgx_chunk *c, bool hold)
{
	struct h5_writer *w = r->w;
	struct h5_stream *s;
	const void *data = c->data, *wbuf;
	const uint64_t *present = c->present;
	const uint32_t *lens = c->lens;
	size_t dbytes = (size_t)r->packets * r->payload_bytes, wbytes = dbytes;
	/* late: the placer counts late packets on a chunk while it is held */
	uint64_t u64[M_PCOUNT] = { c->index, c->first, c->ready_ns, c->last_packet_ns,
				   __atomic_load_n(&c->late, __ATOMIC_RELAXED),
				   c->first_seq, c->hdr_ts, c->bytes, c->missing_bytes };
	uint32_t u32[M_PRESENT - M_PCOUNT] = { c->present_count, c->missing, c->flags,
					       c->hdr_flags };
	hsize_t dims[3] = { 0, r->packets, r->payload_bytes }, off[3] = { 0 };
	hsize_t size;
	uint64_t t0 = vfgx_now_ns();

	(void)hold; /* libhdf5 writes synchronously: nothing to hold */
	quiet();
	if (c->stream >= r->streams)
		return rec_fail(r, -EINVAL, "record: chunk of stream %u, the pipeline has %u streams", c->stream, r->streams);
	s = &w->streams[c->stream];
	if (!s->group && make_stream(r, w, c->stream))
		return r->st.error;
	if (c->mem == VFGX_MEM_GPU) {
		uint8_t *st = r->stage;

		if (rec_stage(r, c, st, (uint64_t *)(st + dbytes),
			      (uint32_t *)(st + dbytes + r->present_words * 8)))
			return r->st.error;
		data = st;
		present = (uint64_t *)(st + dbytes);
		lens = (uint32_t *)(st + dbytes + r->present_words * 8);
	}
	wbuf = data;
	if (r->conf.compression == VFGX_RECORD_COMPRESSION_DEFLATE) {
		uLongf zl = (uLongf)w->zcap;

		if (compress2(w->zbuf, &zl, data, (uLong)dbytes, (int)r->conf.compression_level) != Z_OK)
			return rec_fail(r, -EIO, "record: deflate of stream %u chunk %llu failed; recording stopped",
					c->stream, (unsigned long long)c->index);
		wbuf = w->zbuf;
		wbytes = zl;
	}
	errno = 0;
	dims[0] = s->rows + 1;
	off[0] = s->rows;
	if (H5Dset_extent(s->data, dims) < 0 ||
	    H5Dwrite_chunk(s->data, H5P_DEFAULT, 0, off, wbytes, wbuf) < 0)
		return h5_err(r, "direct chunk write");
	for (int m = 0; m < M_PCOUNT; m++)
		if (put_row(s->meta[m], 1, s->rows, 1, H5T_NATIVE_UINT64, &u64[m]))
			return h5_err(r, "metadata write");
	for (int m = M_PCOUNT; m < M_PRESENT; m++)
		if (put_row(s->meta[m], 1, s->rows, 1, H5T_NATIVE_UINT32, &u32[m - M_PCOUNT]))
			return h5_err(r, "metadata write");
	if (put_row(s->meta[M_PRESENT], 2, s->rows, r->present_words, H5T_NATIVE_UINT64, present) ||
	    put_row(s->meta[M_LENS], 2, s->rows, r->packets, H5T_NATIVE_UINT32, lens))
		return h5_err(r, "metadata write");
	s->rows++;
	/* last: the rows the group's readers may trust */
	if (attr_u64(s->group, "chunks", s->rows, false) ||
	    H5Fflush(w->file, H5F_SCOPE_LOCAL) < 0)
		return h5_err(r, "flush");
	if (H5Fget_filesize(w->file, &size) >= 0 && size > r->file_bytes)
		rec_add_bytes(r, size - r->file_bytes);
	/* a synchronous write: the deadline is checked after it (the chunk
	 * is on file and counted; the next ones are not) */
	if (r->conf.max_wait_ms &&
	    vfgx_now_ns() - t0 > (uint64_t)r->conf.max_wait_ms * 1000000u) {
		rec_fail(r, -ETIMEDOUT, "record: %s: a chunk's write took over %u ms (record.max_wait_ms; the disk is slower than the stream); recording stopped (the pipeline goes on)",
			 r->cur_path, r->conf.max_wait_ms);
		return 0;
	}
	return 0;
}

static void close_streams(vfgx_record *r, struct h5_writer *w)
{
	for (uint32_t i = 0; w->streams && i < r->streams; i++) {
		struct h5_stream *s = &w->streams[i];

		if (!s->group)
			continue;
		for (int m = 0; m < NB_META; m++)
			if (s->meta[m] > 0)
				H5Dclose(s->meta[m]);
		if (s->data > 0)
			H5Dclose(s->data);
		H5Gclose(s->group);
	}
}

static int h5_close(vfgx_record *r)
{
	struct h5_writer *w = r->w;
	int ret = 0;

	if (!w)
		return 0;
	quiet();
	close_streams(r, w);
	if (w->file > 0) {
		if (r->stopped && r->st.message[0])
			attr_str(w->file, "stopped", r->st.message);
		errno = 0;
		if (H5Fclose(w->file) < 0 && !r->stopped)
			ret = h5_err(r, "close");
	}
	if (w->fd >= 0) {
		/* on disk once closed, as raw (fsync on close) */
		if (!r->stopped && fsync(w->fd) && !ret)
			ret = rec_fail(r, -errno, "record: %s: %s on close", r->cur_path, strerror(errno));
		close(w->fd);
	}
	free(w->streams);
	free(w->zbuf);
	free(w);
	r->w = NULL;
	return ret ? ret : r->st.error;
}

static int h5_open(vfgx_record *r, const char *path, int fd)
{
	struct h5_writer *w = calloc(1, sizeof(*w));
	size_t dbytes = (size_t)r->packets * r->payload_bytes;
	struct stat a, b;
	void *vfd = NULL;

	if (!w) {
		close(fd);
		return rec_fail(r, -ENOMEM, "record: out of memory");
	}
	w->fd = fd;
	r->w = w;
	/* a file whose close failed (a full disk) stays in HDF5's tables;
	 * the library's own exit handler would close it again and crash:
	 * left to the process's end instead (refused, harmlessly, once a
	 * program used HDF5 before) */
	H5dont_atexit();
	quiet();
	w->streams = calloc(r->streams, sizeof(*w->streams));
	if (r->conf.compression) {
		w->zcap = compressBound((uLong)dbytes);
		w->zbuf = malloc(w->zcap);
	}
	if (r->mem == VFGX_MEM_GPU && !r->stage)
		r->stage = rec_host_alloc(r, dbytes + r->present_words * 8 + r->packets * 4u);
	if (!w->streams || (r->conf.compression && !w->zbuf) ||
	    (r->mem == VFGX_MEM_GPU && !r->stage)) {
		rec_fail(r, -ENOMEM, "record: out of memory");
		goto fail;
	}
	errno = 0;
	w->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	if (w->file < 0) {
		h5_err(r, "file create");
		goto fail;
	}
	/* the file HDF5 opened is the one created without following links */
	if (H5Fget_vfd_handle(w->file, H5P_DEFAULT, &vfd) < 0 || !vfd ||
	    fstat(*(int *)vfd, &a) || fstat(fd, &b) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		rec_fail(r, -EEXIST, "record: %s was replaced while it was opened; recording stopped (choose a path in a directory only you write)", path);
		goto fail;
	}
	errno = 0;
	if (attr_str(w->file, "profile", r->profile) ||
	    attr_str(w->file, "vfgx_version", VFGX_VERSION) ||
	    attr_u64(w->file, "format_version", H5_FORMAT_VERSION, true) ||
	    attr_u64(w->file, "packets", r->packets, true) ||
	    attr_u64(w->file, "payload_bytes", r->payload_bytes, true) ||
	    attr_u64(w->file, "streams", r->streams, true) ||
	    attr_str(w->file, "config", r->config_text ? r->config_text : "")) {
		h5_err(r, "attribute write");
		goto fail;
	}
	return 0;
fail:
	h5_close(r);
	return r->st.error ? r->st.error : -EIO;
}

static int h5_fd(vfgx_record *r)
{
	struct h5_writer *w = r->w;

	return w ? w->fd : -1;
}

#else /* a build without libhdf5: format hdf5 is refused at load and open */

static int h5_open(vfgx_record *r, const char *path, int fd)
{
	close(fd);
	unlink(path);
	return rec_fail(r, -ENOTSUP, "record: format hdf5: this build has no libhdf5 (install libhdf5-dev and rebuild, or use format raw)");
}

static int h5_chunk(vfgx_record *r, const struct vfgx_chunk *c, bool hold)
{
	(void)c;
	(void)hold;
	return r->st.error ? r->st.error : -ENOTSUP;
}

static int h5_close(vfgx_record *r)
{
	return r->st.error;
}

static int h5_fd(vfgx_record *r)
{
	(void)r;
	return -1;
}
#endif

const struct rec_ops rec_hdf5_ops = {
	.name = "hdf5",
	.open = h5_open,
	.chunk = h5_chunk,
	.close = h5_close,
	.fd = h5_fd,
};
