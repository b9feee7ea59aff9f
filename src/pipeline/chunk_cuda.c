/* chunk_cuda.c - what the chunk rings need of CUDA: stream memory
 * operations on a ring slot's status word (the driver's
 * cuStreamWaitValue64 / cuStreamWriteValue64, found through the runtime so
 * libvfgx does not link libcuda) and the copy of a chunk the CPU assembled
 * into GPU memory, with an event that says when it is done.  Without CUDA in the build each says so. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "chunkset.h"
#include "vfgx_build.h"

#if VFGX_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>

typedef CUresult (*value_op_fn)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);

static int entry(const char *sym, value_op_fn *fn, vfgx_ctx *ctx)
{
	enum cudaDriverEntryPointQueryResult q;
	void *p = NULL;
	cudaError_t e = cudaGetDriverEntryPointByVersion(sym, &p, 12000,
							 cudaEnableDefault, &q);

	if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p)
		return vfgx_set_error(ctx, -ENOTSUP, "chunks: the CUDA driver has no %s (%s)",
				      sym, cudaGetErrorString(e));
	*fn = (value_op_fn)p;
	return 0;
}

static int value_op(const char *sym, void *stream, uint64_t *addr,
		    uint64_t value, unsigned int flags, vfgx_ctx *ctx)
{
	value_op_fn fn = NULL;
	CUresult r;
	int ret = entry(sym, &fn, ctx);

	if (ret)
		return ret;
	r = fn((CUstream)stream, (CUdeviceptr)(uintptr_t)addr, value, flags);
	if (r != CUDA_SUCCESS)
		return vfgx_set_error(ctx, -EIO, "chunks: %s failed (CUresult %d)",
				      sym, (int)r);
	return 0;
}

int vfgx_chunk_cuda_wait_geq(void *stream, uint64_t *addr, uint64_t value,
			     vfgx_ctx *ctx)
{
	return value_op("cuStreamWaitValue64", stream, addr, value,
			CU_STREAM_WAIT_VALUE_GEQ, ctx);
}

int vfgx_chunk_cuda_write(void *stream, uint64_t *addr, uint64_t value,
			  vfgx_ctx *ctx)
{
	return value_op("cuStreamWriteValue64", stream, addr, value,
			CU_STREAM_WRITE_VALUE_DEFAULT, ctx);
}

/* A stream that never waits for the legacy default stream: a consumer
 * waiting on that one for a chunk must not hold up the chunk's copy. */
int vfgx_chunk_cuda_stream(void **stream, int gpu_id, vfgx_ctx *ctx)
{
	cudaStream_t s;
	cudaError_t e = cudaSetDevice(gpu_id);

	if (e == cudaSuccess)
		e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	if (e != cudaSuccess)
		return vfgx_set_error(ctx, -EIO, "chunks: cudaStreamCreate: %s",
				      cudaGetErrorString(e));
	*stream = s;
	return 0;
}

void vfgx_chunk_cuda_stream_destroy(void *stream)
{
	if (stream)
		cudaStreamDestroy((cudaStream_t)stream);
}

int vfgx_chunk_cuda_events(void **ev, size_t n, vfgx_ctx *ctx)
{
	for (size_t i = 0; i < n; i++) {
		cudaError_t e = cudaEventCreateWithFlags((cudaEvent_t *)&ev[i],
							 cudaEventDisableTiming);

		if (e != cudaSuccess)
			return vfgx_set_error(ctx, -EIO, "chunks: cudaEventCreate: %s",
					      cudaGetErrorString(e));
	}
	return 0;
}

void vfgx_chunk_cuda_events_destroy(void **ev, size_t n)
{
	for (size_t i = 0; ev && i < n; i++)
		if (ev[i])
			cudaEventDestroy((cudaEvent_t)ev[i]);
}

int vfgx_chunk_cuda_copy_start(void *dev, const void *host, size_t n, void *stream,
			       void *ev, vfgx_ctx *ctx)
{
	cudaError_t e = cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice,
					(cudaStream_t)stream);

	if (e == cudaSuccess)
		e = cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)stream);
	if (e != cudaSuccess)
		return vfgx_set_error(ctx, -EIO, "chunks: copy to the GPU: %s",
				      cudaGetErrorString(e));
	return 0;
}

int vfgx_chunk_cuda_done(void *ev, bool wait, vfgx_ctx *ctx)
{
	cudaError_t e = wait ? cudaEventSynchronize((cudaEvent_t)ev) :
			       cudaEventQuery((cudaEvent_t)ev);

	if (e == cudaErrorNotReady)
		return 0;
	if (e != cudaSuccess)
		return vfgx_set_error(ctx, -EIO, "chunks: copy to the GPU: %s",
				      cudaGetErrorString(e));
	return 1;
}
#else
static int no_cuda(vfgx_ctx *ctx)
{
	return vfgx_set_error(ctx, -ENOTSUP,
			      "chunks: this build has no CUDA (install the CUDA toolkit and rebuild)");
}

int vfgx_chunk_cuda_wait_geq(void *stream, uint64_t *addr, uint64_t value,
			     vfgx_ctx *ctx)
{
	(void)stream, (void)addr, (void)value;
	return no_cuda(ctx);
}

int vfgx_chunk_cuda_write(void *stream, uint64_t *addr, uint64_t value,
			  vfgx_ctx *ctx)
{
	(void)stream, (void)addr, (void)value;
	return no_cuda(ctx);
}

int vfgx_chunk_cuda_stream(void **stream, int gpu_id, vfgx_ctx *ctx)
{
	(void)stream, (void)gpu_id;
	return no_cuda(ctx);
}

void vfgx_chunk_cuda_stream_destroy(void *stream)
{
	(void)stream;
}

int vfgx_chunk_cuda_events(void **ev, size_t n, vfgx_ctx *ctx)
{
	(void)ev, (void)n;
	return no_cuda(ctx);
}

void vfgx_chunk_cuda_events_destroy(void **ev, size_t n)
{
	(void)ev, (void)n;
}

int vfgx_chunk_cuda_copy_start(void *dev, const void *host, size_t n, void *stream,
			       void *ev, vfgx_ctx *ctx)
{
	(void)dev, (void)host, (void)n, (void)stream, (void)ev;
	return no_cuda(ctx);
}

int vfgx_chunk_cuda_done(void *ev, bool wait, vfgx_ctx *ctx)
{
	(void)ev, (void)wait;
	return no_cuda(ctx);
}
#endif
