/* gpu_bw.cu - measured floors for `vfgx bench gpu` (see gpu_bw.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "gpu_bw.h"

static int fail(char *err, size_t len, const char *what, cudaError_t e)
{
	snprintf(err, len, "%s: %s", what, cudaGetErrorString(e));
	return -EIO;
}

/* 16-byte loads, grid-stride; the sum keeps the loads alive. */
__global__ void read_kernel(const uint4 *p, size_t n, unsigned long long *sink)
{
	unsigned long long s = 0;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint4 v = p[i];

		s += v.x ^ v.y ^ v.z ^ v.w;
	}
	if (s == 0x5a5a5a5a5a5aull)
		*sink = s;
}

extern "C" int gpubw_d2d(int gpu, size_t bytes, int reps, double *gbs, char *err,
			 size_t len)
{
	void *a = NULL, *b = NULL;
	cudaEvent_t e0, e1;
	cudaError_t e;
	float best = 1e30f;

	if ((e = cudaSetDevice(gpu)) || (e = cudaMalloc(&a, bytes)) ||
	    (e = cudaMalloc(&b, bytes)))
		return fail(err, len, "d2d alloc", e);
	cudaMemset(a, 1, bytes);
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	for (int r = 0; r <= reps; r++) {
		float ms;

		cudaEventRecord(e0);
		cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
		cudaEventRecord(e1);
		cudaEventSynchronize(e1);
		cudaEventElapsedTime(&ms, e0, e1);
		if (r && ms < best) /* first one warms up */
			best = ms;
	}
	e = cudaGetLastError();
	cudaFree(a);
	cudaFree(b);
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	if (e != cudaSuccess)
		return fail(err, len, "d2d copy", e);
	*gbs = 2.0 * (double)bytes / (best * 1e-3) / 1e9;
	return 0;
}

extern "C" int gpubw_pinned_read(int gpu, size_t bytes, int reps, double *gbs,
				 char *err, size_t len)
{
	void *h = NULL, *d = NULL;
	unsigned long long *sink = NULL;
	cudaDeviceProp prop;
	cudaEvent_t e0, e1;
	cudaError_t e;
	float best = 1e30f;

	if ((e = cudaSetDevice(gpu)) || (e = cudaGetDeviceProperties(&prop, gpu)) ||
	    (e = cudaHostAlloc(&h, bytes, cudaHostAllocMapped)) ||
	    (e = cudaHostGetDevicePointer(&d, h, 0)) ||
	    (e = cudaMalloc((void **)&sink, sizeof(*sink))))
		return fail(err, len, "pinned alloc", e);
	for (size_t i = 0; i < bytes; i += 4096)
		((char *)h)[i] = (char)i;
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	for (int r = 0; r <= reps; r++) {
		float ms;

		cudaEventRecord(e0);
		read_kernel<<<prop.multiProcessorCount * 4, 512>>>((const uint4 *)d,
								bytes / 16, sink);
		cudaEventRecord(e1);
		cudaEventSynchronize(e1);
		cudaEventElapsedTime(&ms, e0, e1);
		if (r && ms < best)
			best = ms;
	}
	e = cudaGetLastError();
	cudaFreeHost(h);
	cudaFree(sink);
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	if (e != cudaSuccess)
		return fail(err, len, "pinned read kernel", e);
	*gbs = (double)bytes / (best * 1e-3) / 1e9;
	return 0;
}

/* The read-only floor: the same 16-byte grid-stride read kernel over a
 * device-memory buffer (the pipeline only reads the frames, so a copy's
 * read+write is the wrong floor for it).  Grid: 4 blocks of 512 per SM,
 * and the best of reps. */
extern "C" int gpubw_dev_read(int gpu, size_t bytes, int reps, double *gbs,
			      char *err, size_t len)
{
	void *d = NULL;
	unsigned long long *sink = NULL;
	cudaDeviceProp prop;
	cudaEvent_t e0, e1;
	cudaError_t e;
	float best = 1e30f;

	if ((e = cudaSetDevice(gpu)) || (e = cudaGetDeviceProperties(&prop, gpu)) ||
	    (e = cudaMalloc(&d, bytes)) || (e = cudaMalloc((void **)&sink, sizeof(*sink))))
		return fail(err, len, "device read alloc", e);
	cudaMemset(d, 1, bytes);
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	for (int r = 0; r <= reps; r++) {
		float ms;

		cudaEventRecord(e0);
		read_kernel<<<prop.multiProcessorCount * 4, 512>>>((const uint4 *)d,
								bytes / 16, sink);
		cudaEventRecord(e1);
		cudaEventSynchronize(e1);
		cudaEventElapsedTime(&ms, e0, e1);
		if (r && ms < best) /* first one warms up */
			best = ms;
	}
	e = cudaGetLastError();
	cudaFree(d);
	cudaFree(sink);
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	if (e != cudaSuccess)
		return fail(err, len, "device read kernel", e);
	*gbs = (double)bytes / (best * 1e-3) / 1e9;
	return 0;
}

extern "C" int gpubw_copy_to_device(void *dst, const void *src, size_t bytes)
{
	return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : -EIO;
}

/* ---- ping-pong: which part of the persistent hand-off costs --------------
 * The CPU stores i to a pinned word, block 0's thread 0 polls it and stores
 * i back to a second pinned word, the CPU polls that.  Flags pick what the
 * persistent kernel adds around that minimum (PP_* in gpu_bw.h). */
#include <cuda/atomic>
#include <time.h>

struct pp_words {
	volatile uint32_t go;      /* CPU -> GPU */
	uint32_t pad0[15];
	volatile uint32_t ack;     /* GPU -> CPU */
	uint32_t pad1[15];
	volatile uint32_t quit;    /* CPU -> GPU: give up */
	uint32_t pad2[15];
	volatile uint64_t stamp;   /* a weak GPU store to host memory */
};

__device__ __forceinline__ uint32_t pp_ld(const volatile uint32_t *p, bool acq)
{
	if (acq) {
		cuda::atomic_ref<const uint32_t, cuda::thread_scope_system> a(*(const uint32_t *)p);
		return a.load(cuda::memory_order_acquire);
	}
	return *p;
}

__global__ void pp_kernel(struct pp_words *w, uint64_t *dev, int iters, int flags)
{
	if (blockIdx.x) {
		/* the other blocks: wait on a GPU-memory word as the persistent
		 * kernel's waiting blocks do */
		uint32_t spins = 0;

		if (threadIdx.x)
			return;
		for (;;) {
			cuda::atomic_ref<uint64_t, cuda::thread_scope_device> a(dev[0]);

			if (a.load(cuda::memory_order_acquire) >= (uint64_t)iters)
				return;
			if ((flags & PP_HOSTQUIT) && (++spins & 255) == 0 && w->quit)
				return;
		}
	}
	if (threadIdx.x)
		return;
	for (int i = 1; i <= iters; i++) {
		uint32_t spins = 0;

		while (pp_ld(&w->go, flags & PP_ACQUIRE) != (uint32_t)i)
			if ((++spins & 63) == 0 && w->quit)
				goto out;
		if (flags & PP_STAMP) {
			uint64_t t;

			asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
			w->stamp = t;
		}
		{
			cuda::atomic_ref<uint64_t, cuda::thread_scope_device> a(dev[1]);

			a.store((uint64_t)i, cuda::memory_order_release);
		}
		if (flags & PP_FENCE)
			__threadfence_system();
		if (flags & PP_RELEASE) {
			cuda::atomic_ref<uint32_t, cuda::thread_scope_system> a(*(uint32_t *)&w->ack);

			a.store((uint32_t)i, cuda::memory_order_release);
		} else {
			w->ack = (uint32_t)i;
		}
	}
out:
	{
		cuda::atomic_ref<uint64_t, cuda::thread_scope_device> a(dev[0]);

		a.store((uint64_t)iters, cuda::memory_order_release);
	}
}

static uint64_t pp_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

extern "C" int gpubw_pingpong(int gpu, int flags, int iters, double *p50_us,
			      double *p99_us, char *err, size_t len)
{
	struct pp_words *h = NULL, *d = NULL;
	uint64_t *dev = NULL, *rtt = (uint64_t *)calloc((size_t)iters, sizeof(*rtt));
	cudaDeviceProp prop;
	cudaStream_t s;
	cudaError_t e;
	int ret = 0, n = 0;

	if (!rtt)
		return -ENOMEM;
	if ((e = cudaSetDevice(gpu)) || (e = cudaGetDeviceProperties(&prop, gpu)) ||
	    (e = cudaHostAlloc((void **)&h, sizeof(*h), cudaHostAllocMapped)) ||
	    (e = cudaHostGetDevicePointer((void **)&d, h, 0)) ||
	    (e = cudaMalloc((void **)&dev, 2 * sizeof(uint64_t))) ||
	    (e = cudaMemset(dev, 0, 2 * sizeof(uint64_t))) ||
	    (e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking))) {
		free(rtt);
		return fail(err, len, "ping-pong alloc", e);
	}
	memset((void *)h, 0, sizeof(*h));
	pp_kernel<<<(flags & PP_SPINNERS) ? prop.multiProcessorCount : 1, 32, 0, s>>>(d, dev, iters, flags);
	for (int i = 1; i <= iters; i++) {
		uint64_t t0 = pp_now(), t;

		__atomic_store_n(&h->go, (uint32_t)i, __ATOMIC_RELEASE);
		if (flags & PP_CPUFENCE)
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
		while (__atomic_load_n(&h->ack, __ATOMIC_ACQUIRE) != (uint32_t)i) {
			t = pp_now();
			if (t - t0 > 2000000000ull) {
				snprintf(err, len, "ping-pong: no answer to %d within 2 s", i);
				ret = -ETIMEDOUT;
				goto out;
			}
		}
		rtt[n++] = pp_now() - t0;
	}
out:
	h->quit = 1;
	e = cudaStreamSynchronize(s);
	if (!ret && e != cudaSuccess)
		ret = fail(err, len, "ping-pong kernel", e);
	if (!ret && n) {
		qsort(rtt, (size_t)n, sizeof(*rtt), cmp_u64);
		*p50_us = (double)rtt[n / 2] / 1e3;
		*p99_us = (double)rtt[(size_t)n * 99 / 100] / 1e3;
	}
	cudaStreamDestroy(s);
	cudaFree(dev);
	cudaFreeHost(h);
	free(rtt);
	return ret;
}

/* One thread: measure the step of %globaltimer, then answer each go = i
 * with the %globaltimer read when it was seen. */
__global__ void cal_kernel(struct pp_words *w, int iters)
{
	uint64_t tick = ~0ull;

	for (int n = 0; n < 16; n++) {
		uint64_t a, b;

		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(a));
		do
			asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(b));
		while (b == a);
		if (b - a < tick)
			tick = b - a;
	}
	w->stamp = tick;
	__threadfence_system();
	w->ack = 0xffffffffu;
	for (int i = 1; i <= iters; i++) {
		uint32_t spins = 0;
		uint64_t t;

		while (w->go != (uint32_t)i)
			if ((++spins & 63) == 0 && w->quit)
				return;
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
		w->stamp = t;
		__threadfence_system();
		w->ack = (uint32_t)i;
	}
}

extern "C" int gpubw_clock_cal(int gpu, int iters, long long *off_ns,
			       double *width_ns, double *tick_ns,
			       unsigned long long *at_ns, char *err, size_t len)
{
	struct pp_words *h = NULL, *d = NULL;
	long long lo = LLONG_MIN, hi = LLONG_MAX;
	uint64_t tick = 0, first = 0, last = 0;
	cudaStream_t s;
	cudaError_t e;
	int ret = 0;

	if ((e = cudaSetDevice(gpu)) ||
	    (e = cudaHostAlloc((void **)&h, sizeof(*h), cudaHostAllocMapped)) ||
	    (e = cudaHostGetDevicePointer((void **)&d, h, 0)) ||
	    (e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)))
		return fail(err, len, "clock calibration alloc", e);
	memset((void *)h, 0, sizeof(*h));
	cal_kernel<<<1, 1, 0, s>>>(d, iters);
	{
		uint64_t t0 = pp_now();

		while (__atomic_load_n(&h->ack, __ATOMIC_ACQUIRE) != 0xffffffffu)
			if (pp_now() - t0 > 2000000000ull) {
				snprintf(err, len, "clock calibration: kernel did not start within 2 s");
				ret = -ETIMEDOUT;
				goto out;
			}
		tick = h->stamp;
	}
	for (int i = 1; i <= iters; i++) {
		uint64_t t0 = pp_now(), t1;
		long long g;

		__atomic_store_n(&h->go, (uint32_t)i, __ATOMIC_RELEASE);
		while (__atomic_load_n(&h->ack, __ATOMIC_ACQUIRE) != (uint32_t)i)
			if (pp_now() - t0 > 2000000000ull) {
				snprintf(err, len, "clock calibration: no answer to %d within 2 s", i);
				ret = -ETIMEDOUT;
				goto out;
			}
		t1 = pp_now();
		g = (long long)h->stamp;
		if (g - (long long)t1 > lo)
			lo = g - (long long)t1;
		if (g + (long long)tick - (long long)t0 < hi)
			hi = g + (long long)tick - (long long)t0;
		if (!first)
			first = t0;
		last = t1;
	}
	*off_ns = lo + (hi - lo) / 2;
	*width_ns = (double)(hi - lo);
	*tick_ns = (double)tick;
	*at_ns = first + (last - first) / 2;
out:
	h->quit = 1;
	e = cudaStreamSynchronize(s);
	if (!ret && e != cudaSuccess)
		ret = fail(err, len, "clock calibration kernel", e);
	cudaStreamDestroy(s);
	cudaFreeHost(h);
	return ret;
}
