/* chunk_stamp.cu - GPU-side stamps of chunks taken by a CUDA stream
 * (chunk_stamp.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime.h>

#include <vfgx/chunk_device.h>

#include "chunk_stamp.h"

struct chunk_stamps {
	cudaStream_t stream;
	unsigned long long *dev; /* 2 per stamp */
	uint32_t n;
	cudaEvent_t ev[CHUNK_STAMPS_AHEAD]; /* stamp i recorded in ev[i % AHEAD] */
};

static int fail(char *err, size_t len, const char *what, cudaError_t e)
{
	snprintf(err, len, "%s: %s", what, cudaGetErrorString(e));
	return -EIO;
}

__global__ void stamp_kernel(unsigned long long *out, const unsigned long long *last,
			     const unsigned long long *ready)
{
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	out[0] = t - *(const volatile unsigned long long *)last;
	out[1] = t - *(const volatile unsigned long long *)ready;
}

/* The device chunk API's consumer (vfgx/chunk_device.h): one thread of a
 * resident kernel waits for chunk i of stream 0 on its slot's ready word,
 * stamps %globaltimer against the engine's record of the chunk (its last
 * packet written, its release), gives it back, for i < n; skipped chunks
 * get no stamp (0, 0); it returns at the end word. */
__global__ void device_consumer(struct vfgx_chunk_device v, unsigned long long *out, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		enum vfgx_dev_chunk r = vfgx_dev_chunk_wait(&v, 0, i);
		unsigned long long t;

		if (r == VFGX_DEV_CHUNK_END)
			break;
		if (r != VFGX_DEV_CHUNK_READY)
			continue;
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
		const volatile struct vfgx_chunk_device_meta *m = &v.meta[i % v.in_flight];

		out[2 * i] = t - m->last_packet_gt;
		out[2 * i + 1] = t - m->ready_gt;
		vfgx_dev_chunk_put(&v, 0, i);
	}
}

extern "C" int chunk_stamps_open(int gpu, uint32_t n, struct chunk_stamps **out,
				 char *err, size_t len)
{
	struct chunk_stamps *s = (struct chunk_stamps *)calloc(1, sizeof(*s));
	cudaError_t e;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->n = n;
	/* the kernel loaded now: loaded lazily at its first launch, the load
	 * would wait for the persistent kernel, which waits for this stream
	 * to give its chunks back */
	struct cudaFuncAttributes fa;

	if ((e = cudaSetDevice(gpu)) != cudaSuccess ||
	    (e = cudaFuncGetAttributes(&fa, stamp_kernel)) != cudaSuccess ||
	    (e = cudaFuncGetAttributes(&fa, device_consumer)) != cudaSuccess ||
	    (e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess ||
	    (e = cudaMalloc((void **)&s->dev, sizeof(*s->dev) * 2 * n)) != cudaSuccess ||
	    (e = cudaMemset(s->dev, 0, sizeof(*s->dev) * 2 * n)) != cudaSuccess) {
		chunk_stamps_close(s);
		return fail(err, len, "chunk stamps", e);
	}
	for (int i = 0; i < CHUNK_STAMPS_AHEAD; i++) {
		if ((e = cudaEventCreateWithFlags(&s->ev[i], cudaEventDisableTiming)) != cudaSuccess) {
			chunk_stamps_close(s);
			return fail(err, len, "chunk stamps", e);
		}
	}
	*out = s;
	return 0;
}

extern "C" void *chunk_stamps_stream(struct chunk_stamps *s)
{
	return s->stream;
}

extern "C" int chunk_stamps_add(struct chunk_stamps *s, uint32_t i, const uint64_t *last_gt,
				const uint64_t *ready_gt, char *err, size_t len)
{
	cudaError_t e;

	if (i >= s->n)
		return -EINVAL;
	stamp_kernel<<<1, 1, 0, s->stream>>>(s->dev + 2 * (size_t)i,
					     (const unsigned long long *)last_gt,
					     (const unsigned long long *)ready_gt);
	e = cudaGetLastError();
	if (e == cudaSuccess)
		e = cudaEventRecord(s->ev[i % CHUNK_STAMPS_AHEAD], s->stream);
	return e == cudaSuccess ? 0 : fail(err, len, "stamp kernel", e);
}

extern "C" int chunk_stamps_done(struct chunk_stamps *s, uint32_t i, char *err, size_t len)
{
	struct timespec t0, t;
	cudaError_t e;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((e = cudaEventQuery(s->ev[i % CHUNK_STAMPS_AHEAD])) == cudaErrorNotReady) {
		struct timespec nap = { 0, 20000 };

		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5) {
			snprintf(err, len, "chunk %u not stamped after 5 s", i);
			return -ETIMEDOUT;
		}
		nanosleep(&nap, NULL);
	}
	return e == cudaSuccess ? 0 : fail(err, len, "waiting for a stamp", e);
}

extern "C" int chunk_stamps_read(struct chunk_stamps *s, uint64_t *since_last,
				 uint64_t *since_ready, char *err, size_t len)
{
	unsigned long long *h = (unsigned long long *)malloc(sizeof(*h) * 2 * s->n);
	cudaError_t e;

	if (!h)
		return -ENOMEM;
	e = cudaMemcpyAsync(h, s->dev, sizeof(*h) * 2 * s->n, cudaMemcpyDeviceToHost, s->stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(s->stream);
	if (e != cudaSuccess) {
		free(h);
		return fail(err, len, "reading chunk stamps", e);
	}
	for (uint32_t i = 0; i < s->n; i++) {
		since_last[i] = h[2 * i];
		since_ready[i] = h[2 * i + 1];
	}
	free(h);
	return 0;
}

extern "C" int chunk_stamps_device(struct chunk_stamps *s, const struct vfgx_chunk_device *v,
				   char *err, size_t len)
{
	cudaError_t e;

	if (!v->meta) {
		snprintf(err, len, "device consumer: no engine records (the cpu engine)");
		return -EINVAL;
	}
	device_consumer<<<1, 1, 0, s->stream>>>(*v, s->dev, s->n);
	e = cudaGetLastError();
	return e == cudaSuccess ? 0 : fail(err, len, "device consumer kernel", e);
}

/* Writes 1..n into *word, gap_ns apart, after a first gap of 2 ms (the
 * waits enqueued first); tw[i] = %globaltimer just before write i + 1. */
__global__ void floor_writer(volatile unsigned long long *word, unsigned long long *tw,
			     uint32_t n, unsigned long long gap_ns)
{
	unsigned long long last, t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(last));
	for (uint32_t i = 0; i < n; i++) {
		do
			asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
		while (t - last < (i ? gap_ns : 2000000ull));
		last = t;
		tw[i] = t;
		__threadfence_system();
		*word = i + 1;
		__threadfence_system();
	}
}

extern "C" int chunk_stamps_floor(struct chunk_stamps *s, uint32_t n, uint64_t gap_ns,
				  int (*wait)(void *stream, uint64_t *dev_word, uint64_t value,
					      void *arg),
				  void *arg, uint64_t *since, char *err, size_t len)
{
	unsigned long long *word = NULL, *word_dev = NULL, *tw = NULL;
	cudaStream_t ws = NULL;
	uint64_t *unused = NULL;
	cudaError_t e;
	int ret = 0;

	if (n > s->n || !(unused = (uint64_t *)malloc(sizeof(*unused) * s->n)))
		return n > s->n ? -EINVAL : -ENOMEM;
	if ((e = cudaHostAlloc((void **)&word, 64, cudaHostAllocMapped)) != cudaSuccess ||
	    (e = cudaHostGetDevicePointer((void **)&word_dev, word, 0)) != cudaSuccess ||
	    (e = cudaMalloc((void **)&tw, sizeof(*tw) * n)) != cudaSuccess ||
	    (e = cudaStreamCreateWithFlags(&ws, cudaStreamNonBlocking)) != cudaSuccess) {
		ret = fail(err, len, "stamp floor", e);
		goto out;
	}
	*word = 0;
	floor_writer<<<1, 1, 0, ws>>>(word_dev, tw, n, gap_ns);
	if ((e = cudaGetLastError()) != cudaSuccess) {
		ret = fail(err, len, "stamp floor writer", e);
		goto out;
	}
	for (uint32_t i = 0; i < n && !ret; i++) {
		if (i >= CHUNK_STAMPS_AHEAD &&
		    (ret = chunk_stamps_done(s, i - CHUNK_STAMPS_AHEAD, err, len)))
			break;
		if ((ret = wait(s->stream, (uint64_t *)word_dev, i + 1, arg))) {
			snprintf(err, len, "stamp floor: waiting on a CUDA stream failed");
			break;
		}
		ret = chunk_stamps_add(s, i, (const uint64_t *)(tw + i), (const uint64_t *)(tw + i),
				       err, len);
	}
	if (ret) {
		*word = n; /* let every wait queued pass */
		cudaStreamSynchronize(s->stream);
		goto out;
	}
	if ((e = cudaStreamSynchronize(ws)) != cudaSuccess) {
		ret = fail(err, len, "stamp floor writer", e);
		goto out;
	}
	ret = chunk_stamps_read(s, since, unused, err, len);
out:
	if (ws) {
		cudaStreamSynchronize(ws);
		cudaStreamDestroy(ws);
	}
	cudaFree(tw);
	cudaFreeHost(word);
	free(unused);
	return ret;
}

extern "C" void chunk_stamps_close(struct chunk_stamps *s)
{
	if (!s)
		return;
	for (int i = 0; i < CHUNK_STAMPS_AHEAD; i++)
		if (s->ev[i])
			cudaEventDestroy(s->ev[i]);
	if (s->dev)
		cudaFree(s->dev);
	if (s->stream)
		cudaStreamDestroy(s->stream);
	free(s);
}
