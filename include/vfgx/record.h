/* vfgx/record.h - record ready chunks as analysis-ready files: HDF5 (one
 * chunked dataset per stream, one HDF5 chunk per vfgx chunk, written with
 * direct chunk writes, plus per-chunk metadata datasets) or raw files
 * (large sequential files written with O_DIRECT through io_uring, plus a
 * JSON-lines index appended after each chunk's data is on file).
 *
 * The recorder is a chunk consumer: either it takes the chunks itself on a
 * thread of its own (vfgx_record_start), or the program's own consumer
 * hands it each chunk it took (vfgx_record_chunk) before giving it back.
 * A chunk is copied into the recorder's ring of staging buffers (pinned
 * memory for chunks in GPU memory, copied with cudaMemcpyAsync) and may be
 * given back as soon as the call returns: the recorder never holds more
 * than its ring.  On its own thread, raw recording of chunks in host or
 * pinned memory copies nothing: it writes each chunk's ring slot and gives
 * the chunk back when the write completed, holding at most record.ring
 * chunks.  A write error (a full disk, a file removed while
 * written) stops the recording, never the pipeline: later chunks are
 * counted as not recorded.  docs/record.md. */
#ifndef VFGX_RECORD_H
#define VFGX_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "chunk.h"
#include "config.h"
#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

enum vfgx_record_format {
	VFGX_RECORD_HDF5 = 0, /* one .h5 file per run or rotation (libhdf5;
			       * -ENOTSUP in a build without it) */
	VFGX_RECORD_RAW = 1,  /* a data file plus PATH.index.jsonl */
};

enum vfgx_record_compression {
	VFGX_RECORD_COMPRESSION_OFF = 0,
	VFGX_RECORD_COMPRESSION_DEFLATE = 1, /* hdf5 only: the deflate filter */
};

/* The record: section (docs/config.md); defaults in brackets.  The struct
 * may grow at the end: argsz says which version. */
struct vfgx_record_conf {
	uint32_t argsz;          /* sizeof(struct vfgx_record_conf) */
	const char *path;        /* [NULL: required] the first file; rotated
				  * ones are STEM.N.EXT (N = 1, 2, ...) */
	uint32_t format;         /* [hdf5] enum vfgx_record_format */
	uint64_t rotate_bytes;   /* [0: never] a new file once this many
				  * bytes are in the current one */
	double rotate_seconds;   /* [0: never] a new file after this long */
	uint32_t compression;    /* [off] enum vfgx_record_compression */
	uint32_t compression_level; /* [4] deflate level 1..9 */
	uint32_t ring;           /* [4] raw: writes in flight (from ring + 1
				  * staging buffers), 1..64 */
	bool overwrite;          /* [false] replace an existing regular file */
	/* not a config key: the text stored in the files' config attribute
	 * (the program's configuration), NULL: none */
	const char *config_text;
	uint32_t max_wait_ms;    /* [10000: 10 s; 0: never] a write not done
				  * after this long stops the recording (a disk
				  * slower than the stream); hdf5: a write that
				  * took longer */
};

struct vfgx_record_stats {
	uint64_t recorded;       /* chunks whose data and metadata are on file */
	uint64_t not_recorded;   /* chunks offered after the recording stopped,
				  * or whose write failed */
	uint64_t bytes;          /* file bytes written (data and metadata) */
	uint32_t files;          /* files opened */
	bool direct;             /* raw: the data file is written with O_DIRECT
				  * (false where the file system refuses it) */
	int error;               /* 0, or the -errno that stopped recording */
	char message[256];       /* the line that said why, or "" */
};

typedef struct vfgx_record vfgx_record;

void vfgx_record_conf_default(struct vfgx_record_conf *c);
/* A recorder for the chunks of pl (which must have chunks: -ENOTSUP),
 * with its first file open.  An existing path that is not a regular file
 * (a FIFO, a symlink, a directory) is refused (-EEXIST, or -ELOOP for a
 * symlink), so is an existing regular file unless conf->overwrite; the
 * path is opened without following symlinks.  One line on ctx and -errno
 * on error. */
int vfgx_record_open(vfgx_ctx *ctx, const struct vfgx_record_conf *conf,
		     vfgx_pipeline *pl, vfgx_record **out);
/* Record one chunk the caller took with vfgx_chunk_get and still holds;
 * the caller gives it back after the call.  Returns 0, or the error that
 * stopped recording (then and later: the chunk counted as not recorded).
 * One thread at a time. */
int vfgx_record_chunk(vfgx_record *r, const struct vfgx_chunk *c);
/* As vfgx_record_chunk, but the recorder may keep the chunk and give it
 * back itself (vfgx_chunk_put, by its stream and index) once written: raw
 * recording of chunks in host or pinned memory writes the chunk's ring
 * slot as it lies, with no staging copy, holding at most record.ring
 * chunks (fewer than the pipeline's in_flight: one line says so when
 * not).  Returns 1 when it keeps the chunk (the caller must not give it
 * back), 0 when the caller gives it back now, or the error that stopped
 * recording (the caller gives it back).  A consumer using it calls
 * vfgx_record_poll whenever vfgx_chunk_get found no chunk (give it a
 * short timeout while chunks are held: the pipeline may wait for one of
 * them).  One thread at a time, the thread calling vfgx_record_chunk. */
int vfgx_record_take(vfgx_record *r, const struct vfgx_chunk *c);
/* Take the writes completed meanwhile and give their chunks back, without
 * waiting (record.max_wait_ms applies); returns the chunks still held. */
uint32_t vfgx_record_poll(vfgx_record *r);
/* Consume the pipeline's chunks on a thread of the recorder's own (get,
 * write, put) until the pipeline has no more; for a program with no other
 * chunk consumer.  -EBUSY when started already. */
int vfgx_record_start(vfgx_record *r);
/* Counters so far; any thread. */
void vfgx_record_stats(vfgx_record *r, struct vfgx_record_stats *st);
/* Join the thread of vfgx_record_start (the pipeline stopped or ran dry),
 * finish the writes in flight, close the files.  Returns the error that
 * stopped recording, or 0; r is freed either way. */
int vfgx_record_close(vfgx_record *r, struct vfgx_record_stats *st);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
