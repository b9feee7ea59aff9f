/* user_gpu.c - pipeline.user.gpu_module: a CUDA module (cubin, fatbin
 * or PTX) a session loads with the runtime's library API
 * (cudaLibraryLoadFromFile), whose per-chunk kernel runs on every ready
 * chunk in pinned or GPU memory, one launch per chunk on a stream of its
 * own, waited for before the chunk is given back.  Its state (device
 * memory kept across chunks) goes to a file after the run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/user.h>

#include "session_priv.h"
#include "vfgx_build.h"

#if VFGX_HAVE_CUDA
#include <cuda_runtime_api.h>

static int cuda_fail(struct session_gpu_user *g, const char *what, cudaError_t e)
{
	snprintf(g->error, sizeof(g->error), "user gpu module %s: %s: %s",
		 g->path, what, cudaGetErrorString(e));
	return -1;
}

int session_gpu_user_load(struct session_gpu_user *g, vfgx_ctx *ctx,
			  const struct vfgx_config *cfg)
{
	cudaLibrary_t lib;
	cudaKernel_t k;
	cudaStream_t s;
	cudaError_t e;

	memset(g, 0, sizeof(*g));
	if (!cfg->user_gpu_module || !cfg->user_gpu_module[0])
		return 0;
	g->path = cfg->user_gpu_module;
	g->state_out = cfg->user_gpu_state_out;
	g->threads = cfg->user_gpu_threads;
	g->state_bytes = cfg->user_gpu_state_bytes;
	if (!cfg->pipeline.chunks || (cfg->pipeline.chunks->mem != VFGX_MEM_GPU &&
				      cfg->pipeline.chunks->mem != VFGX_MEM_PINNED)) {
		return vfgx_set_error(ctx, -EINVAL, "%s: pipeline.user.gpu_module needs pipeline.chunks with mem: gpu or pinned",
			cfg->source);
	}
	e = cudaSetDevice((int)cfg->pipeline.chunks->gpu_id);
	if (e == cudaSuccess)
		e = cudaLibraryLoadFromFile(&lib, g->path, NULL, NULL, 0, NULL, NULL, 0);
	if (e != cudaSuccess) {
		return vfgx_set_error(ctx, -EINVAL, "%s: pipeline.user.gpu_module %s: %s",
			cfg->source, g->path, cudaGetErrorString(e));
	}
	g->lib = lib;
	e = cudaLibraryGetKernel(&k, lib, cfg->user_gpu_kernel);
	if (e != cudaSuccess) {
		return vfgx_set_error(ctx, -EINVAL, "%s: pipeline.user.gpu_module %s has no kernel %s (an extern \"C\" __global__ function; see include/vfgx/user.h)",
			cfg->source, g->path, cfg->user_gpu_kernel);
	}
	g->kernel = k;
	/* Load the kernel's code now, before the gpu engine's persistent
	 * kernel runs: CUDA's lazy loading would load it at the first launch,
	 * which waits for the kernels running, and the persistent one waits
	 * for this one to give its chunk back. */
	struct cudaFuncAttributes fa;

	if ((e = cudaFuncGetAttributes(&fa, (const void *)k)) != cudaSuccess ||
	    (e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) != cudaSuccess ||
	    (g->stream = s, false) ||
	    (g->state_bytes && ((e = cudaMalloc(&g->state, g->state_bytes)) != cudaSuccess ||
				(e = cudaMemsetAsync(g->state, 0, g->state_bytes, s)) != cudaSuccess ||
				(e = cudaStreamSynchronize(s)) != cudaSuccess))) {
		return vfgx_set_error(ctx, -EINVAL, "%s: pipeline.user.gpu_module: %s", cfg->source,
			cudaGetErrorString(e));
	}
	g->loaded = true;
	return 0;
}

int session_gpu_user_chunk(struct session_gpu_user *g, const struct vfgx_chunk *c)
{
	struct vfgx_chunk_kargs a = {
		.stream = c->stream, .packets = c->packets,
		.payload_bytes = c->payload_bytes, .present_count = c->present_count,
		.index = c->index, .first = c->first,
		.data = c->dev_data, .present = c->dev_present, .lens = c->dev_lens,
		.state = g->state, .state_bytes = g->state_bytes,
	};
	void *args[] = { &a };
	dim3 grid = { (c->packets + 255) / 256, 1, 1 }, block = { g->threads, 1, 1 };
	cudaError_t e;

	if (!g->loaded || g->error[0])
		return -1;
	e = cudaLaunchKernel((const void *)g->kernel, grid, block, args, 0,
			     (cudaStream_t)g->stream);
	if (e != cudaSuccess)
		return cuda_fail(g, "launch", e);
	e = cudaStreamSynchronize((cudaStream_t)g->stream);
	if (e != cudaSuccess)
		return cuda_fail(g, "kernel", e);
	g->launches++;
	return 0;
}

int session_gpu_user_finish(struct session_gpu_user *g)
{
	FILE *f;
	void *buf;
	cudaError_t e;
	int ret = 0;

	if (!g->loaded || g->error[0] || !g->state_bytes || !g->state_out || !g->state_out[0])
		return g->error[0] ? -1 : 0;
	buf = malloc(g->state_bytes);
	if (!buf) {
		snprintf(g->error, sizeof(g->error), "user gpu module: no memory for its state");
		return -1;
	}
	e = cudaMemcpy(buf, g->state, g->state_bytes, cudaMemcpyDeviceToHost);
	if (e != cudaSuccess) {
		free(buf);
		return cuda_fail(g, "state copy", e);
	}
	f = fopen(g->state_out, "wb");
	if (!f || fwrite(buf, 1, g->state_bytes, f) != g->state_bytes) {
		snprintf(g->error, sizeof(g->error), "user gpu module: pipeline.user.gpu_state_out %s: %s",
			 g->state_out, strerror(errno));
		ret = -1;
	}
	if (f && fclose(f) && !ret) {
		snprintf(g->error, sizeof(g->error), "user gpu module: pipeline.user.gpu_state_out %s: %s",
			 g->state_out, strerror(errno));
		ret = -1;
	}
	free(buf);
	return ret;
}

void session_gpu_user_close(struct session_gpu_user *g)
{
	/* after a fault the context is gone: these fail quietly */
	if (g->state)
		cudaFree(g->state);
	if (g->stream)
		cudaStreamDestroy((cudaStream_t)g->stream);
	if (g->lib)
		cudaLibraryUnload((cudaLibrary_t)g->lib);
	memset(g, 0, sizeof(*g));
}
#else
int session_gpu_user_load(struct session_gpu_user *g, vfgx_ctx *ctx,
			  const struct vfgx_config *cfg)
{
	memset(g, 0, sizeof(*g));
	if (!cfg->user_gpu_module || !cfg->user_gpu_module[0])
		return 0;
	return vfgx_set_error(ctx, -EINVAL, "%s: pipeline.user.gpu_module: this build has no CUDA (install the CUDA toolkit and rebuild)",
		cfg->source);
}

int session_gpu_user_chunk(struct session_gpu_user *g, const struct vfgx_chunk *c)
{
	(void)g, (void)c;
	return -1;
}

int session_gpu_user_finish(struct session_gpu_user *g)
{
	(void)g;
	return 0;
}

void session_gpu_user_close(struct session_gpu_user *g)
{
	memset(g, 0, sizeof(*g));
}
#endif
