/* record_priv.h - the recorder's parts: the handle (record.c), the two
 * file writers behind one small ops table (record_hdf5.c, record_raw.c)
 * and the helpers they share (safe file creation, staging of GPU chunks,
 * JSON strings). */
#ifndef VFGX_RECORD_PRIV_H
#define VFGX_RECORD_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <vfgx/format.h>
#include <vfgx/record.h>

/* A chunk as the writers read it: host addresses (the chunk's own for
 * host and pinned memory, the staging buffer's for GPU memory). */
struct rec_view {
	const struct vfgx_chunk *c;
	const uint8_t *data;      /* packets * payload_bytes */
	const uint64_t *present;  /* present_words */
	const uint32_t *lens;     /* packets */
};

struct rec_writer;

struct rec_ops {
	const char *name;
	/* Open the writer's file(s) at path (the data file already created
	 * by rec_create as fd, which the writer owns from here on). */
	int (*open)(vfgx_record *r, const char *path, int fd);
	/* Write one chunk; raw may copy c into its ring and return before
	 * the write completed.  hold (raw, chunks in host or pinned memory,
	 * vfgx_record_start's thread): write the chunk's ring slot itself
	 * and give the chunk back (vfgx_chunk_put) once its write completed
	 * or failed; returns 1 then (the chunk is the writer's), 0 when the
	 * caller gives it back, or -errno. */
	int (*chunk)(vfgx_record *r, const struct vfgx_chunk *c, bool hold);
	/* Finish what is in flight and close; returns the first error. */
	int (*close)(vfgx_record *r);
	/* Take the writes completed meanwhile, without waiting (stop on
	 * record.max_wait_ms); the writes still in flight.  NULL: none. */
	uint32_t (*pending)(vfgx_record *r);
	/* The data file's descriptor (to notice its removal), or -1. */
	int (*fd)(vfgx_record *r);
};

extern const struct rec_ops rec_hdf5_ops;
extern const struct rec_ops rec_raw_ops;

struct vfgx_record {
	vfgx_ctx *ctx;
	vfgx_pipeline *pl;
	struct vfgx_record_conf conf;
	char *path;               /* conf->path, owned */
	char *config_text;        /* conf->config_text, owned (or NULL) */
	const struct rec_ops *ops;
	void *w;                  /* the writer's state */
	/* the chunks' shape, from the pipeline */
	uint32_t packets, payload_bytes, streams, present_words;
	/* pipeline.format's profile name ("vfgx": vfgx's own header) */
	char profile[VFGX_FMT_NAME_MAX];
	enum vfgx_mem_kind mem;
	/* the raw record: the pipeline's ring slot layout (data at 0, the
	 * present bitmap at present_off, lens at lens_off, rec_bytes in all,
	 * a multiple of 4096), read from vfgx_chunk_slot's addresses */
	size_t present_off, lens_off, rec_bytes;
	bool hold_ok;             /* slots page-aligned, rec_bytes apart at least */
	bool hold;                /* raw writes from the slots (take, start) */
	uint32_t hold_depth;      /* chunks held at most: ring, < in_flight */
	uint64_t file_bytes;      /* bytes in the current file */
	uint64_t file_chunks;     /* chunks handed to the current file */
	uint64_t opened_ns;       /* when the current file was opened */
	char cur_path[4096];      /* the current file */
	/* GPU chunks: a pinned staging buffer and a CUDA stream */
	void *stage;
	void *cuda_stream;
	/* vfgx_record_start's thread */
	pthread_t thread;
	bool running;
	pthread_mutex_t lock;     /* st */
	struct vfgx_record_stats st;
	bool stopped;
};

/* Record the error that stops recording: one line on ctx and in the
 * stats (the first one only); returns err. */
int rec_fail(vfgx_record *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Create path for writing: O_CREAT | O_EXCL | O_NOFOLLOW, or with
 * conf.overwrite an existing regular file truncated (never a symlink, a
 * FIFO, a device or a directory).  The fd, or -errno after rec_fail. */
int rec_create(vfgx_record *r, const char *path, int extra_flags);
/* Copy chunk c (any memory) to host memory at data / present / lens:
 * memcpy, or cudaMemcpyAsync on the recorder's stream then a wait. */
int rec_stage(vfgx_record *r, const struct vfgx_chunk *c, void *data,
	      uint64_t *present, uint32_t *lens);
/* Host memory for staging (pinned when chunks are in GPU memory),
 * aligned to 4096; NULL when out of memory. */
void *rec_host_alloc(vfgx_record *r, size_t bytes);
void rec_host_free(vfgx_record *r, void *p);
/* Append s as a JSON string (quoted, escaped) to buf at *len; false
 * when it does not fit. */
bool rec_json_str(char *buf, size_t cap, size_t *len, const char *s);
/* raw: a chunk's write completed and its index line is on file. */
void rec_count_recorded(vfgx_record *r);
/* A chunk that will not be on file (its write failed, or came back
 * after the recording stopped). */
void rec_count_not_recorded(vfgx_record *r);
/* Count bytes written into the current file and the stats. */
void rec_add_bytes(vfgx_record *r, uint64_t n);

#endif
