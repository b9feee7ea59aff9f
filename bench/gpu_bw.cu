/* gpu_bw.cu - measured floors for `vfgx bench gpu` (see gpu_bw.h). */
#include <errno.h>
#include <stdio.h>

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

extern "C" int gpubw_copy_to_device(void *dst, const void *src, size_t bytes)
{
	return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : -EIO;
}
