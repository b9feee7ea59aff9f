/* record.c - the recorder's handle: the record: options, safe creation of
 * its files, rotation by size and time, the consumer thread, and the
 * rule that a write error stops the recording and never the pipeline. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vfgx/chunk.h>
#include <vfgx/pipeline.h>

#include "core/argsz.h"
#include "core/cfgdoc.h"
#include "core/opts.h"
#include "record_opts.h"
#include "record_priv.h"
#include "vfgx_build.h"

#if VFGX_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define RC_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_record_conf, F, __VA_ARGS__)
static const char *const rc_formats[] = { "hdf5", "raw", NULL };
static const char *const rc_compressions[] = { "off", "deflate", NULL };
static const struct vfgx_opt rc_opts[] = {
	RC_OPT(STR, path, 0),
	RC_OPT(ENUM, format, VFGX_RECORD_HDF5, 0, 0, rc_formats),
	RC_OPT(U64, rotate_bytes, 0, 0, (double)(1ull << 50)),
	RC_OPT(DOUBLE, rotate_seconds, 0, 0, 86400 * 365),
	RC_OPT(ENUM, compression, VFGX_RECORD_COMPRESSION_OFF, 0, 0, rc_compressions),
	RC_OPT(U32, compression_level, 4, 1, 9),
	RC_OPT(U32, ring, 4, 1, 64),
	RC_OPT(BOOL, overwrite, 0),
	RC_OPT(U32, max_wait_ms, 10000, 0, 3600000),
};
#define RC_NOPTS (sizeof(rc_opts) / sizeof(rc_opts[0]))

void vfgx_record_conf_default(struct vfgx_record_conf *c)
{
	vfgx_opts_default(rc_opts, RC_NOPTS, c, sizeof(*c));
}

int vfgx_record_conf_from_yaml(const struct vfgx_cfg_node *map,
			       struct vfgx_record_conf *c)
{
	struct vfgx_cfg_node n;
	int ret = vfgx_opts_from_yaml(map, rc_opts, RC_NOPTS, c, sizeof(*c));

	if (ret)
		return ret;
	if (!VFGX_HAVE_HDF5 && c->format == VFGX_RECORD_HDF5) {
		if (vfgx_cfg_child(map, "format", &n))
			n = *map;
		return vfgx_cfg_error(&n, "hdf5 (the default): this build has no libhdf5 (install libhdf5-dev and rebuild, or set record.format: raw)");
	}
	if (c->format == VFGX_RECORD_RAW &&
	    c->compression != VFGX_RECORD_COMPRESSION_OFF) {
		vfgx_cfg_child(map, "compression", &n);
		return vfgx_cfg_error(&n, "raw files are written uncompressed (use format: hdf5 for deflate, or compression: off)");
	}
	return 0;
}

int rec_fail(vfgx_record *r, int err, const char *fmt, ...)
{
	char line[sizeof(r->st.message)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&r->lock);
	if (!r->st.error) {
		r->st.error = err;
		snprintf(r->st.message, sizeof(r->st.message), "%s", line);
	}
	r->stopped = true;
	pthread_mutex_unlock(&r->lock);
	vfgx_set_error(r->ctx, err, "%s", line);
	return err;
}

void rec_add_bytes(vfgx_record *r, uint64_t n)
{
	r->file_bytes += n;
	pthread_mutex_lock(&r->lock);
	r->st.bytes += n;
	pthread_mutex_unlock(&r->lock);
}

static const char *kind_of(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISLNK(m))
		return "a symlink";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

int rec_create(vfgx_record *r, const char *path, int extra_flags)
{
	int base = O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | extra_flags;
	struct stat sb;
	int fd, err;

	fd = open(path, base | O_CREAT | O_EXCL, 0644);
	if (fd < 0 && errno == EEXIST) {
		if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
			return rec_fail(r, S_ISLNK(sb.st_mode) ? -ELOOP : -EEXIST,
					"record: %s exists and is %s; recording writes regular files only (choose another record.path)",
					path, kind_of(sb.st_mode));
		if (!r->conf.overwrite)
			return rec_fail(r, -EEXIST,
					"record: %s exists; remove it, choose another record.path, or set record.overwrite: true",
					path);
		/* O_NONBLOCK: a FIFO swapped in after lstat does not block
		 * the open; the fstat below refuses it */
		fd = open(path, base | O_TRUNC);
	}
	if (fd < 0) {
		err = -errno;
		if (err == -ELOOP)
			return rec_fail(r, err, "record: %s is a symlink; recording never follows one (choose another record.path)", path);
		return rec_fail(r, err, "record: cannot create %s: %s (check the directory exists and is writable, or choose another record.path)",
				path, strerror(-err));
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return rec_fail(r, -EEXIST, "record: %s is not a regular file (choose another record.path)", path);
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

void *rec_host_alloc(vfgx_record *r, size_t bytes)
{
	void *p = NULL;

#if VFGX_HAVE_CUDA
	if (r->mem == VFGX_MEM_GPU) {
		if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess)
			return NULL;
		memset(p, 0, bytes);
		return p;
	}
#else
	(void)r;
#endif
	if (posix_memalign(&p, 4096, bytes))
		return NULL;
	memset(p, 0, bytes);
	return p;
}

void rec_host_free(vfgx_record *r, void *p)
{
	if (!p)
		return;
#if VFGX_HAVE_CUDA
	if (r->mem == VFGX_MEM_GPU) {
		cudaFreeHost(p);
		return;
	}
#else
	(void)r;
#endif
	free(p);
}

int rec_stage(vfgx_record *r, const struct vfgx_chunk *c, void *data,
	      uint64_t *present, uint32_t *lens)
{
	size_t dbytes = (size_t)c->packets * c->payload_bytes;

	if (c->mem != VFGX_MEM_GPU) {
		memcpy(data, c->data, dbytes);
		memcpy(present, c->present, r->present_words * sizeof(uint64_t));
		memcpy(lens, c->lens, c->packets * sizeof(uint32_t));
		return 0;
	}
#if VFGX_HAVE_CUDA
	/* compile-tested only on hosts without a GPU (docs/record.md) */
	cudaStream_t s = r->cuda_stream;

	if (cudaMemcpyAsync(data, c->data, dbytes, cudaMemcpyDeviceToHost, s) ||
	    cudaMemcpyAsync(present, c->present, r->present_words * sizeof(uint64_t),
			    cudaMemcpyDeviceToHost, s) ||
	    cudaMemcpyAsync(lens, c->lens, c->packets * sizeof(uint32_t),
			    cudaMemcpyDeviceToHost, s) ||
	    cudaStreamSynchronize(s))
		return rec_fail(r, -EIO, "record: copying stream %u chunk %llu out of GPU memory failed: %s",
				c->stream, (unsigned long long)c->index,
				cudaGetErrorString(cudaGetLastError()));
	return 0;
#else
	return rec_fail(r, -ENOTSUP, "record: chunks in GPU memory need a build with CUDA");
#endif
}

bool rec_json_str(char *buf, size_t cap, size_t *len, const char *s)
{
	size_t n = *len;

	if (n + 2 > cap)
		return false;
	buf[n++] = '"';
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		char esc[8];
		size_t el;

		if (ch == '"' || ch == '\\') {
			esc[0] = '\\';
			esc[1] = (char)ch;
			el = 2;
		} else if (ch == '\n') {
			memcpy(esc, "\\n", 2);
			el = 2;
		} else if (ch < 0x20 || ch == 0x7f) {
			el = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", ch);
		} else {
			esc[0] = (char)ch;
			el = 1;
		}
		if (n + el + 1 > cap)
			return false;
		memcpy(buf + n, esc, el);
		n += el;
	}
	if (n + 2 > cap)
		return false;
	buf[n++] = '"';
	buf[n] = 0;
	*len = n;
	return true;
}

/* The k-th file: PATH, then STEM.k.EXT (the extension after the last dot
 * of the last path component, if any). */
static void nth_path(const char *path, uint32_t k, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(slash ? slash + 1 : path, '.');

	if (k == 0)
		snprintf(out, len, "%s", path);
	else if (dot && dot != (slash ? slash + 1 : path))
		snprintf(out, len, "%.*s.%u%s", (int)(dot - path), path, k, dot);
	else
		snprintf(out, len, "%s.%u", path, k);
}

static int open_next(vfgx_record *r)
{
	uint32_t k = r->st.files;
	int fd;

	nth_path(r->path, k, r->cur_path, sizeof(r->cur_path));
	fd = rec_create(r, r->cur_path, 0);
	if (fd < 0)
		return fd;
	r->file_bytes = 0;
	r->file_chunks = 0;
	r->opened_ns = vfgx_now_ns();
	if (r->ops->open(r, r->cur_path, fd))
		return r->st.error ? r->st.error : -EIO;
	pthread_mutex_lock(&r->lock);
	r->st.files++;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

void rec_count_not_recorded(vfgx_record *r)
{
	pthread_mutex_lock(&r->lock);
	r->st.not_recorded++;
	pthread_mutex_unlock(&r->lock);
}

static bool want_rotation(vfgx_record *r)
{
	if (!r->file_chunks)
		return false; /* every file holds a chunk at least */
	if (r->conf.rotate_bytes && r->file_bytes >= r->conf.rotate_bytes)
		return true;
	return r->conf.rotate_seconds > 0 &&
	       (double)(vfgx_now_ns() - r->opened_ns) / 1e9 >= r->conf.rotate_seconds;
}

/* The data file still has a name: a file removed while written would
 * take the recording with it when closed. */
static int check_linked(vfgx_record *r)
{
	int fd = r->ops->fd(r);
	struct stat sb;

	if (fd < 0 || fstat(fd, &sb) || sb.st_nlink > 0)
		return 0;
	return rec_fail(r, -ENOENT, "record: %s was removed while recorded; recording stopped (the pipeline goes on)",
			r->cur_path);
}

/* One chunk; 1 when the writer holds it (and gives it back itself). */
static int record_one(vfgx_record *r, const struct vfgx_chunk *c, bool hold)
{
	int ret;

	if (r->stopped) {
		rec_count_not_recorded(r);
		return r->st.error;
	}
	if (want_rotation(r)) {
		ret = r->ops->close(r);
		if (!ret)
			ret = open_next(r);
		if (ret) {
			rec_count_not_recorded(r);
			return ret;
		}
	}
	r->file_chunks++;
	ret = r->ops->chunk(r, c, hold);
	if (ret >= 0 && check_linked(r)) {
		if (ret > 0)
			return ret; /* held: counted when its write comes back */
		ret = r->st.error;
	}
	if (ret < 0) {
		rec_count_not_recorded(r);
		return ret;
	}
	/* raw counts its chunks once their writes complete */
	if (r->ops == &rec_hdf5_ops) {
		pthread_mutex_lock(&r->lock);
		r->st.recorded++;
		pthread_mutex_unlock(&r->lock);
	}
	return ret;
}

int vfgx_record_chunk(vfgx_record *r, const struct vfgx_chunk *c)
{
	int ret = record_one(r, c, false);

	return ret > 0 ? 0 : ret;
}

void rec_count_recorded(vfgx_record *r)
{
	pthread_mutex_lock(&r->lock);
	r->st.recorded++;
	pthread_mutex_unlock(&r->lock);
}

int vfgx_record_take(vfgx_record *r, const struct vfgx_chunk *c)
{
	return record_one(r, c, r->hold);
}

uint32_t vfgx_record_poll(vfgx_record *r)
{
	return r->ops->pending ? r->ops->pending(r) : 0;
}

static void *consume(void *arg)
{
	vfgx_record *r = arg;
	struct vfgx_chunk *c;
	uint32_t held = 0;
	int ret;

	/* with chunks held, look at their writes every millisecond while no
	 * chunk is ready: the pipeline may wait for one of them */
	while ((ret = vfgx_chunk_get(r->pl, held ? 1 : 200, &c)) != -ENODATA) {
		uint32_t stream;
		uint64_t index;

		if (ret) {
			held = vfgx_record_poll(r); /* -ETIMEDOUT: look again */
			continue;
		}
		stream = c->stream;
		index = c->index;
		/* held: the raw writer gives it back once written */
		if (vfgx_record_take(r, c) <= 0)
			vfgx_chunk_put(r->pl, stream, index);
		held = r->hold ? vfgx_record_poll(r) : 0;
	}
	return NULL;
}

int vfgx_record_start(vfgx_record *r)
{
	int ret;

	if (r->running)
		return vfgx_set_error(r->ctx, -EBUSY, "record: started already");
	ret = pthread_create(&r->thread, NULL, consume, r);
	if (ret)
		return vfgx_set_error(r->ctx, -ret, "record: thread: %s", strerror(ret));
	r->running = true;
	return 0;
}

void vfgx_record_stats(vfgx_record *r, struct vfgx_record_stats *st)
{
	pthread_mutex_lock(&r->lock);
	*st = r->st;
	pthread_mutex_unlock(&r->lock);
}

static void rec_free(vfgx_record *r)
{
#if VFGX_HAVE_CUDA
	if (r->cuda_stream)
		cudaStreamDestroy(r->cuda_stream);
#endif
	rec_host_free(r, r->stage);
	pthread_mutex_destroy(&r->lock);
	free(r->path);
	free(r->config_text);
	free(r);
}

/* The raw record is the pipeline's ring slot: its offsets from the
 * addresses of slot 0 (the GPU's view for gpu memory: the same offsets),
 * and whether slots can be written as they lie (page-aligned, a record
 * apart at least). */
static void rec_layout(vfgx_record *r, vfgx_pipeline *pl)
{
	const struct vfgx_chunk *d0 = vfgx_chunk_slot(pl, 0, 0);
	const struct vfgx_chunk *d1 = vfgx_chunk_slot(pl, 0, 1);
	size_t dbytes = (size_t)r->packets * r->payload_bytes;
	size_t pw = (size_t)r->present_words * 8;
	uintptr_t base = d0 ? (uintptr_t)d0->data : 0;

	if (d0 && (uintptr_t)d0->present >= base + dbytes && (uintptr_t)d0->present % 8 == 0 &&
	    (uintptr_t)d0->lens >= (uintptr_t)d0->present + pw && (uintptr_t)d0->lens % 4 == 0) {
		r->present_off = (uintptr_t)d0->present - base;
		r->lens_off = (uintptr_t)d0->lens - base;
	} else {
		/* chunk.c's layout (include/vfgx/chunk.h does not promise one) */
		r->present_off = (dbytes + 255) / 256 * 256;
		r->lens_off = r->present_off + (pw + 255) / 256 * 256;
	}
	r->rec_bytes = (r->lens_off + (size_t)r->packets * 4 + 4095) / 4096 * 4096;
	r->hold_ok = d0 && d1 && r->mem != VFGX_MEM_GPU && base % 4096 == 0 &&
		     (uintptr_t)d1->data >= base + r->rec_bytes &&
		     (uintptr_t)d0->present - base == r->present_off &&
		     (uintptr_t)d0->lens - base == r->lens_off;
}

int vfgx_record_open(vfgx_ctx *ctx, const struct vfgx_record_conf *conf,
		     vfgx_pipeline *pl, vfgx_record **out)
{
	const struct vfgx_chunk_config *cc = pl ? vfgx_chunk_conf(pl) : NULL;
	struct vfgx_record_conf c;
	vfgx_record *r;
	int ret;

	*out = NULL;
	if (!conf || vfgx_argsz_copy(&c, sizeof(c), conf, sizeof(c)))
		return vfgx_set_error(ctx, -EINVAL, "record: struct vfgx_record_conf argsz %u not understood by libvfgx %s (use vfgx_record_conf_default)",
				      conf ? conf->argsz : 0, VFGX_VERSION);
	conf = &c;
	if ((ret = vfgx_opts_check(ctx, "record", "record", rc_opts, RC_NOPTS, conf)))
		return ret;
	if (!conf->path || !conf->path[0])
		return vfgx_set_error(ctx, -EINVAL, "record: no path (set record.path, or vfgx run --record PATH)");
	if (!cc)
		return vfgx_set_error(ctx, -ENOTSUP, "record: the pipeline has no chunks; recording writes chunks (add pipeline.chunks)");
	if (conf->format == VFGX_RECORD_HDF5 && !VFGX_HAVE_HDF5)
		return vfgx_set_error(ctx, -ENOTSUP, "record: format hdf5: this build has no libhdf5 (install libhdf5-dev and rebuild, or record raw files: record.format: raw, or a --record name not ending in .h5 or .hdf5)");
	if (conf->format == VFGX_RECORD_RAW && conf->compression)
		return vfgx_set_error(ctx, -EINVAL, "record: raw files are written uncompressed (use format hdf5 for deflate)");
	r = calloc(1, sizeof(*r));
	if (!r)
		return vfgx_set_error(ctx, -ENOMEM, "record: out of memory");
	pthread_mutex_init(&r->lock, NULL);
	r->ctx = ctx;
	r->pl = pl;
	memcpy(&r->conf, conf, sizeof(r->conf));
	r->path = strdup(conf->path);
	r->config_text = conf->config_text ? strdup(conf->config_text) : NULL;
	r->packets = cc->packets;
	r->payload_bytes = cc->payload_bytes;
	r->streams = cc->streams;
	r->present_words = (cc->packets + 63) / 64;
	r->mem = cc->mem;
	snprintf(r->profile, sizeof(r->profile), "%s",
		 vfgx_chunk_format(pl) ? vfgx_chunk_format(pl)->name : "vfgx");
	rec_layout(r, pl);
	r->ops = conf->format == VFGX_RECORD_RAW ? &rec_raw_ops : &rec_hdf5_ops;
	if (!r->path || (conf->config_text && !r->config_text)) {
		rec_free(r);
		return vfgx_set_error(ctx, -ENOMEM, "record: out of memory");
	}
	if (r->mem == VFGX_MEM_GPU) {
#if VFGX_HAVE_CUDA
		cudaStream_t s;

		if (cudaSetDevice((int)cc->gpu_id) ||
		    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) {
			rec_free(r);
			return vfgx_set_error(ctx, -ENODEV, "record: chunks in GPU memory: no CUDA stream on GPU %u: %s",
					      cc->gpu_id, cudaGetErrorString(cudaGetLastError()));
		}
		r->cuda_stream = s;
#else
		rec_free(r);
		return vfgx_set_error(ctx, -ENOTSUP, "record: chunks in GPU memory need a build with CUDA");
#endif
	}
	/* raw writes go out from the chunks' own ring slots (vfgx_record_take,
	 * vfgx_record_start), at most ring chunks held, and the pipeline
	 * needs a free slot per stream beside them */
	r->hold = r->hold_ok && r->ops == &rec_raw_ops;
	r->hold_depth = r->conf.ring;
	if (r->hold && r->hold_depth >= cc->in_flight) {
		r->hold_depth = cc->in_flight - 1;
		vfgx_log(ctx, VFGX_LOG_WARN,
			 "record: record.ring %u is not below pipeline.chunks.in_flight %u: the recorder holds at most %u chunks (raise in_flight above ring for ring writes in flight)",
			 r->conf.ring, cc->in_flight, r->hold_depth);
	}
	if ((ret = open_next(r))) {
		rec_free(r);
		return ret;
	}
	*out = r;
	return 0;
}

int vfgx_record_close(vfgx_record *r, struct vfgx_record_stats *st)
{
	int ret;

	if (!r)
		return 0;
	if (r->running)
		pthread_join(r->thread, NULL);
	r->running = false;
	r->ops->close(r);
	ret = r->st.error;
	if (st)
		*st = r->st;
	rec_free(r);
	return ret;
}
