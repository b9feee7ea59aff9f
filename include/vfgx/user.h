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

#ifdef __cplusplus
}
#endif
#endif
