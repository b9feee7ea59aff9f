/* chunk_cuda.c - what the chunk rings need of CUDA: stream memory
 * operations on a ring slot's status word (the driver's
 * cuStreamWaitValue64 / cuStreamWriteValue64, found through the runtime so
 * libvfgx does not link libcuda) and the copy of a chunk the CPU assembled
 * into GPU memory, followed on its stream by the write of the slot's
 * ready word.  Without CUDA in the build each says so. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "chunkset.h"
#include "vfgx_build.h"

#if VFGX_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>

typedef CUresult (*value_op_fn)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);

/* The driver's two entry points, looked up once (a lookup is a runtime
 * call; the cpu engine writes a word after every chunk's copy). */
enum { OP_WAIT, OP_WRITE, NB_OPS };
static struct {
	const char *sym;
	value_op_fn fn;
	cudaError_t e;
} ops[NB_OPS] = { [OP_WAIT] = { "cuStreamWaitValue64", NULL, cudaSuccess },
		  [OP_WRITE] = { "cuStreamWriteValue64", NULL, cudaSuccess } };
static pthread_once_t ops_once = PTHREAD_ONCE_INIT;

static void ops_find(void)
{
	for (int i = 0; i < NB_OPS; i++) {
		enum cudaDriverEntryPointQueryResult q;
		void *p = NULL;

		ops[i].e = cudaGetDriverEntryPointByVersion(ops[i].sym, &p, 12000,
							    cudaEnableDefault, &q);
		if (ops[i].e == cudaSuccess && q == cudaDriverEntryPointSuccess)
			ops[i].fn = (value_op_fn)p;
	}
}

static int value_op(int op, void *stream, uint64_t *addr, uint64_t value,
		    unsigned int flags, vfgx_ctx *ctx)
{
	CUresult r;

	pthread_once(&ops_once, ops_find);
	if (!ops[op].fn)
		return vfgx_set_error(ctx, -ENOTSUP, "chunks: the CUDA driver has no %s (%s)",
				      ops[op].sym, cudaGetErrorString(ops[op].e));
	r = ops[op].fn((CUstream)stream, (CUdeviceptr)(uintptr_t)addr, value, flags);
	if (r != CUDA_SUCCESS)
		return vfgx_set_error(ctx, -EIO, "chunks: %s failed (CUresult %d)",
				      ops[op].sym, (int)r);
	return 0;
}

int vfgx_chunk_cuda_wait_geq(void *stream, uint64_t *addr, uint64_t value,
			     vfgx_ctx *ctx)
{
	return value_op(OP_WAIT, stream, addr, value,
			CU_STREAM_WAIT_VALUE_GEQ, ctx);
}

int vfgx_chunk_cuda_write(void *stream, uint64_t *addr, uint64_t value,
			  vfgx_ctx *ctx)
{
	return value_op(OP_WRITE, stream, addr, value,
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

int vfgx_chunk_cuda_copy_start(void *dev, const void *host, size_t n, void *stream,
			       uint64_t *dev_word, uint64_t value, vfgx_ctx *ctx)
{
	cudaError_t e = cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice,
					(cudaStream_t)stream);

	if (e != cudaSuccess)
		return vfgx_set_error(ctx, -EIO, "chunks: copy to the GPU: %s",
				      cudaGetErrorString(e));
	return vfgx_chunk_cuda_write(stream, dev_word, value, ctx);
}

int vfgx_chunk_cuda_sync(void *stream, vfgx_ctx *ctx)
{
	cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);

	if (e != cudaSuccess)
		return vfgx_set_error(ctx, -EIO, "chunks: copy to the GPU: %s",
				      cudaGetErrorString(e));
	return 0;
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

int vfgx_chunk_cuda_copy_start(void *dev, const void *host, size_t n, void *stream,
			       uint64_t *dev_word, uint64_t value, vfgx_ctx *ctx)
{
	(void)dev, (void)host, (void)n, (void)stream, (void)dev_word, (void)value;
	return no_cuda(ctx);
}

int vfgx_chunk_cuda_sync(void *stream, vfgx_ctx *ctx)
{
	(void)stream;
	return no_cuda(ctx);
}
#endif
