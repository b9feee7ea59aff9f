/* chunk_stamp.h - `vfgx bench chunks`' GPU-side stamp of a chunk's
 * arrival (chunk_stamp.cu): a CUDA stream that waits for each chunk
 * (vfgx_chunk_stream_wait) runs a one-thread kernel reading %globaltimer
 * and the GPU's own stamps of the chunk, so the latency from the chunk's
 * last packet written to the consumer's stream running needs no clock
 * model (both ends on the GPU's clock). */
#ifndef VFGX_BENCH_CHUNK_STAMP_H
#define VFGX_BENCH_CHUNK_STAMP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct chunk_stamps;

/* Stamps enqueued ahead of those known to have run, at most. */
#define CHUNK_STAMPS_AHEAD 16

/* A non-blocking stream, room for n stamps and the stamp kernel loaded,
 * all before any persistent kernel runs (cudaMalloc, cudaFree and a lazy
 * module load may wait for the whole device). */
int chunk_stamps_open(int gpu, uint32_t n, struct chunk_stamps **out, char *err,
		      size_t len);
void *chunk_stamps_stream(struct chunk_stamps *s);
/* Enqueue stamp i: %globaltimer minus the word at last_gt, and minus the
 * word at ready_gt (GPU addresses of the chunk's descriptor fields). */
int chunk_stamps_add(struct chunk_stamps *s, uint32_t i, const uint64_t *last_gt,
		     const uint64_t *ready_gt, char *err, size_t len);
/* Wait until stamp i (one of the last CHUNK_STAMPS_AHEAD added) ran. */
int chunk_stamps_done(struct chunk_stamps *s, uint32_t i, char *err, size_t len);
/* Wait for the stream; since_last[i], since_ready[i] in ns. */
int chunk_stamps_read(struct chunk_stamps *s, uint64_t *since_last,
		      uint64_t *since_ready, char *err, size_t len);
/* The floor of that path: a one-thread kernel on another stream writes
 * value i + 1 into a pinned word (as the placing kernel writes a chunk's
 * ready word) every gap_ns, stamping %globaltimer just before each write;
 * this stream waits for each value with wait() (the call
 * vfgx_chunk_stream_wait makes) and runs the same stamp kernel, kept
 * CHUNK_STAMPS_AHEAD ahead.  since[i] = stamp - write (ns) for i < n (n
 * at most open's; since has room for open's n): an instant release's
 * latency to the consumer. */
int chunk_stamps_floor(struct chunk_stamps *s, uint32_t n, uint64_t gap_ns,
		       int (*wait)(void *stream, uint64_t *dev_word, uint64_t value, void *arg),
		       void *arg, uint64_t *since, char *err, size_t len);
/* The device chunk API's consumer (vfgx/chunk_device.h; the gpu engine's
 * chunks, after vfgx_chunk_device): one resident kernel on this stream
 * waits for chunks 0 .. n-1 of stream 0 (n of open), stamps each against
 * the engine's record of it (as chunk_stamps_add's stamps) and gives it
 * back; chunk_stamps_read after the pipeline's end has the stamps (0, 0
 * for a skipped chunk).  Launched after vfgx_pipeline_create (its module
 * was loaded at open). */
struct vfgx_chunk_device;
int chunk_stamps_device(struct chunk_stamps *s, const struct vfgx_chunk_device *v,
			char *err, size_t len);
void chunk_stamps_close(struct chunk_stamps *s);

#ifdef __cplusplus
}
#endif
#endif
