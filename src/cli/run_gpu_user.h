/* run_gpu_user.h - the CUDA module of pipeline.user.gpu_module in `vfgx
 * run` (run_gpu_user.c): loaded at run time, its per-chunk kernel launched
 * on every ready chunk (vfgx/user.h's struct vfgx_chunk_kargs). */
#ifndef VFGX_RUN_GPU_USER_H
#define VFGX_RUN_GPU_USER_H

#include <stdbool.h>
#include <stdint.h>

#include <vfgx/vfgx.h>

struct run_gpu_user {
	bool loaded;
	void *lib, *kernel, *stream; /* cudaLibrary_t, cudaKernel_t, cudaStream_t */
	void *state;
	uint64_t state_bytes;
	uint32_t threads;
	const char *path, *state_out;
	uint64_t launches;
	char error[256]; /* the first failure, one line */
};

/* Load the module and find its kernel; 0, or 2 after one line on stderr. */
int run_gpu_user_load(struct run_gpu_user *g, const struct vfgx_config *cfg);
/* Run the kernel on chunk c and wait for it: 0, or -1 with g->error set
 * (a faulting kernel: the run must stop). */
int run_gpu_user_chunk(struct run_gpu_user *g, const struct vfgx_chunk *c);
/* After the run: the state into gpu_state_out; -1 with g->error set. */
int run_gpu_user_finish(struct run_gpu_user *g);
void run_gpu_user_close(struct run_gpu_user *g);
#endif
