/* vfgx/user.h - user code `vfgx run` loads at run time, without rebuilding
 * libvfgx: a shared object named by pipeline.user.library that defines
 *
 *     const struct vfgx_user_module vfgx_user_module = { ... };
 *
 * with VFGX_USER_ABI_VERSION in abi_version.  Every callback is optional.
 * examples/user_module is one (docs/chunks.md). */
#ifndef VFGX_USER_H
#define VFGX_USER_H

#include <stdint.h>

#include "chunk.h"
#include "pipeline.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VFGX_USER_ABI_VERSION 1
#define VFGX_USER_MODULE_SYMBOL "vfgx_user_module"

struct vfgx_user_module {
	uint32_t abi_version; /* VFGX_USER_ABI_VERSION */
	const char *name;
	/* Before the pipeline starts; arg is pipeline.user.arg ("" when
	 * absent).  Non-zero stops the run (with errno's text). */
	int (*init)(const char *arg, void **state);
	/* The per-record stage (vfgx_user_stage_fn with user = state), on
	 * the cpu engine's workers. */
	vfgx_user_stage_fn stage;
	/* Every ready chunk, on `vfgx run`'s consumer thread, before it is
	 * given back; non-zero counts a user error for the chunk. */
	int (*chunk)(void *state, const struct vfgx_chunk *c);
	/* After the pipeline stopped: print a summary, free state.  A
	 * non-zero return fails the run. */
	int (*fini)(void *state);
};

/* The per-chunk kernel of a CUDA module named by pipeline.user.gpu_module:
 *
 *     extern "C" __global__ void vfgx_chunk_kernel(struct vfgx_chunk_kargs a);
 *
 * launched by `vfgx run` on every ready chunk in pinned or gpu memory, with
 * gpu_threads threads per block and one block per 256 packets; the chunk is
 * given back once the kernel finished.  A kernel that faults ends the run
 * with one line. */
struct vfgx_chunk_kargs {
	uint32_t stream;
	uint32_t packets;
	uint32_t payload_bytes;
	uint32_t present_count;
	uint64_t index;
	uint64_t first;           /* packet index of slot 0 */
	const uint8_t *data;      /* device addresses */
	const uint64_t *present;  /* bit i: slot i arrived */
	const uint32_t *lens;
	void *state;              /* gpu_state_bytes, zeroed at start */
	uint64_t state_bytes;
};

#ifdef __cplusplus
}
#endif
#endif
