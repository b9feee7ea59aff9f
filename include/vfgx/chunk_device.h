/* vfgx/chunk_device.h - chunks consumed by the application's own GPU
 * kernel, with no CPU in the loop: no vfgx_chunk_get, no
 * cuStreamWaitValue, no launch per chunk.  A kernel that is already
 * running (a persistent consumer) polls the ready word of the ring slot
 * that chunk n of stream s always lives in (vfgx/chunk.h: slot
 * n % in_flight), works on the chunk in place, and gives it back by
 * writing the slot's returned word, which the pipeline (either engine)
 * reads before it reuses the slot.
 *
 * On the host, vfgx_chunk_device() fills a struct vfgx_chunk_device (plain
 * addresses and sizes) and from then on the pipeline hands none of the
 * pipeline's chunks to vfgx_chunk_get: every stream is consumed on the
 * GPU.  Copy the struct to the kernel (by value as a kernel argument, or
 * into GPU memory).  With the gpu engine the pipeline's persistent kernel
 * runs from vfgx_pipeline_create on: make the consumer's memory and load
 * its kernel (cudaFuncGetAttributes) before creating the pipeline, and
 * launch it on a non-blocking stream (an allocation, a lazy module load or
 * cudaDeviceSynchronize would wait for the pipeline's kernel).  Chunk memory must be pinned or gpu (pipeline.chunks.mem),
 * in a build with CUDA.
 *
 * In CUDA code (nvcc, or NVRTC / CuPy RawKernel with this header on the
 * include path) the __device__ functions below are defined:
 *
 *     enum vfgx_dev_chunk r = vfgx_dev_chunk_wait(&v, s, n);
 *     if (r == VFGX_DEV_CHUNK_READY) {
 *             ... read vfgx_dev_chunk_data(&v, s, n), present, lens ...
 *             (every thread that read the chunk is done, e.g. __syncthreads)
 *             vfgx_dev_chunk_put(&v, s, n);      (one thread)
 *     }
 *     n++;   (READY and SKIPPED both move on; END: no chunk will come)
 *
 * Chunk n is SKIPPED when it got no packet (vfgx/chunk.h: never handed
 * out): the consumer learns it when its slot holds a newer chunk, or at
 * the end.  A chunk the consumer holds and never gives back holds its
 * slot: the pipeline counts backpressure and, at its stop, drops what
 * waits for that slot (vfgx_chunk_stats) — it never hangs.  The end word
 * is set once the pipeline has made its last chunk ready (its sources
 * ended, or vfgx_pipeline_stop); the consumer kernel must then return, as
 * the pipeline's memory is freed by vfgx_pipeline_destroy (which waits for
 * the device: stop the pipeline, let the kernel see END, synchronize,
 * destroy).  docs/chunks.md. */
#ifndef VFGX_CHUNK_DEVICE_H
#define VFGX_CHUNK_DEVICE_H

#ifdef __CUDACC_RTC__
/* NVRTC (a cupy.RawKernel) has no C library headers: libcu++'s types */
#include <cuda/std/cstdint>
using cuda::std::uint8_t;
using cuda::std::uint32_t;
using cuda::std::uint64_t;
#else
#include <stdint.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The per-slot record the gpu engine keeps in GPU-readable memory (meta;
 * times on the GPU's %globaltimer clock, ns). */
struct vfgx_chunk_device_meta {
	uint64_t index;         /* the chunk last made ready in the slot */
	uint64_t present_count;
	uint64_t missing;
	uint64_t flags;         /* VFGX_CHUNK_COMPLETE or one VFGX_CHUNK_BY_ */
	uint64_t stream_late;
	uint64_t last_packet_gt; /* its last packet written */
	uint64_t ready_gt;      /* it was made ready */
	uint64_t pad;
};

/* Everything a consumer kernel needs; all addresses are the GPU's. */
struct vfgx_chunk_device {
	uint32_t argsz;          /* sizeof(struct vfgx_chunk_device) */
	uint32_t streams;        /* stream ids 0 .. streams - 1 */
	uint32_t in_flight;      /* ring slots per stream */
	uint32_t packets;        /* slots (packets) per chunk */
	uint32_t payload_bytes;  /* bytes per packet slot */
	uint32_t present_words;  /* uint64 words of the present bitmap */
	uint64_t slot_stride;    /* bytes from one ring slot's data to the next */
	uint64_t present_off;    /* from a slot's data to its present bitmap */
	uint64_t lens_off;       /* from a slot's data to its uint32 lengths */
	uint8_t *data;           /* ring slot (s, r) at data + (s * in_flight + r)
				  * * slot_stride */
	const uint64_t *ready;   /* [s * in_flight + r]: index + 1 of the chunk
				  * last made ready in the slot */
	uint64_t *returned;      /* [s * in_flight + r]: index + 1 of the chunk
				  * last given back */
	const uint64_t *end;     /* non-zero: no chunk will be made ready */
	/* the gpu engine's per-slot records, NULL with the cpu engine */
	const struct vfgx_chunk_device_meta *meta;
};

#ifndef __CUDACC_RTC__
#pragma GCC visibility push(default) /* the library builds hidden */
typedef struct vfgx_pipeline vfgx_pipeline;
/* Fill *out (out->argsz set by the caller) and hand every stream's chunks
 * to the GPU consumer from now on.  Before or after vfgx_pipeline_start.
 * 0; -ENOTSUP without chunks, with host chunk memory or without CUDA;
 * -EINVAL for an unknown argsz (one line on the pipeline's ctx). */
int vfgx_chunk_device(vfgx_pipeline *pl, struct vfgx_chunk_device *out);
#pragma GCC visibility pop
#endif

#ifdef __CUDACC__
enum vfgx_dev_chunk {
	VFGX_DEV_CHUNK_WAIT = 0,    /* not ready yet */
	VFGX_DEV_CHUNK_READY = 1,   /* chunk n is in its slot: read it, put it */
	VFGX_DEV_CHUNK_SKIPPED = 2, /* chunk n got no packet: go on to n + 1 */
	VFGX_DEV_CHUNK_END = 3,     /* the pipeline made its last chunk ready */
};

static __device__ __forceinline__ uint64_t vfgx_dev_ld_acquire(const uint64_t *p)
{
	uint64_t v;

	asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

static __device__ __forceinline__ uint64_t vfgx_dev_chunk_slot(const struct vfgx_chunk_device *v,
							       uint32_t s, uint64_t n)
{
	return (uint64_t)s * v->in_flight + n % v->in_flight;
}

/* One look, no waiting.  Its acquire orders the chunk's data, present
 * bitmap and lengths (and meta) after it. */
static __device__ __forceinline__ enum vfgx_dev_chunk
vfgx_dev_chunk_poll(const struct vfgx_chunk_device *v, uint32_t s, uint64_t n)
{
	const uint64_t *w = v->ready + vfgx_dev_chunk_slot(v, s, n);
	uint64_t r = vfgx_dev_ld_acquire(w);

	if (r == n + 1)
		return VFGX_DEV_CHUNK_READY;
	if (r > n + 1)
		return VFGX_DEV_CHUNK_SKIPPED;
	if (!vfgx_dev_ld_acquire(v->end))
		return VFGX_DEV_CHUNK_WAIT;
	/* made ready before the end word was set: look once more */
	r = vfgx_dev_ld_acquire(w);
	return r == n + 1 ? VFGX_DEV_CHUNK_READY :
	       r > n + 1 ? VFGX_DEV_CHUNK_SKIPPED : VFGX_DEV_CHUNK_END;
}

/* Poll until chunk n of stream s is ready, skipped, or the end (call it
 * from one thread, or from every thread of a block: each sees the same). */
static __device__ __forceinline__ enum vfgx_dev_chunk
vfgx_dev_chunk_wait(const struct vfgx_chunk_device *v, uint32_t s, uint64_t n)
{
	enum vfgx_dev_chunk r;
	unsigned int nap = 32;

	while ((r = vfgx_dev_chunk_poll(v, s, n)) == VFGX_DEV_CHUNK_WAIT) {
		__nanosleep(nap);
		if (nap < 256)
			nap *= 2;
	}
	return r;
}

static __device__ __forceinline__ uint8_t *vfgx_dev_chunk_data(const struct vfgx_chunk_device *v,
							       uint32_t s, uint64_t n)
{
	return v->data + vfgx_dev_chunk_slot(v, s, n) * v->slot_stride;
}

/* bit i of word i / 64: packet slot i was written */
static __device__ __forceinline__ const uint64_t *
vfgx_dev_chunk_present(const struct vfgx_chunk_device *v, uint32_t s, uint64_t n)
{
	return (const uint64_t *)(vfgx_dev_chunk_data(v, s, n) + v->present_off);
}

static __device__ __forceinline__ const uint32_t *
vfgx_dev_chunk_lens(const struct vfgx_chunk_device *v, uint32_t s, uint64_t n)
{
	return (const uint32_t *)(vfgx_dev_chunk_data(v, s, n) + v->lens_off);
}

/* Give chunk n back (one thread, after every read of it is done: the
 * release orders them before the pipeline may rewrite the slot). */
static __device__ __forceinline__ void vfgx_dev_chunk_put(const struct vfgx_chunk_device *v,
							  uint32_t s, uint64_t n)
{
	uint64_t *w = v->returned + vfgx_dev_chunk_slot(v, s, n);

	__threadfence_system();
	asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(w), "l"(n + 1) : "memory");
}
#endif /* __CUDACC__ */

#ifdef __cplusplus
}
#endif
#endif
