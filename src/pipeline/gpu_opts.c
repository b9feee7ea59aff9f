/* gpu_opts.c - pipeline.gpu: one option table gives the defaults, the
 * YAML adapter (the config loader's, at load) and the check of a struct a
 * program filled (vfgx_gpu_proc_create). */
#include <stddef.h>

#include <vfgx/gpu.h>

#include "core/opts.h"
#include "gpu_opts.h"

static const char *const gpu_modes[] = { "persistent", "per_burst", "graph", NULL };
static const char *const gpu_user_stages[] = { "none", "flow_sum", NULL };
#define GPU_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_gpu_opts, F, __VA_ARGS__)
/* the key user_stage is the field user (vfgx/gpu.h) */
#define STAGE_OPT(T, K, ...) \
	{ #K, VFGX_OPT_##T, offsetof(struct vfgx_gpu_opts, user), __VA_ARGS__ }
static const struct vfgx_opt gpu_opts[] = {
	GPU_OPT(ENUM, mode, 0, 0, 0, gpu_modes),
	GPU_OPT(BOOL, stage_copy, 0),
	GPU_OPT(U32, items, 64, 2, 4096),
	GPU_OPT(U32, burst, 1024, 1, 8192),
	GPU_OPT(U32, graph_items, 8, 1, 256),
	GPU_OPT(U32, blocks, 0, 0, 4096),
	GPU_OPT(U32, timeout_ms, 5000, 10, 3600000),
	STAGE_OPT(ENUM, user_stage, 0, 0, 0, gpu_user_stages),
	GPU_OPT(U32, log_records, 0, 0, 1u << 28),
	GPU_OPT(U32, gpu_id, 0, 0, 63),
	GPU_OPT(U32, rx_threads, 0, 0, 64),
};
#define GPU_NOPTS (sizeof(gpu_opts) / sizeof(gpu_opts[0]))

_Static_assert(sizeof(enum vfgx_gpu_mode) == sizeof(uint32_t) &&
	       sizeof(enum vfgx_gpu_user) == sizeof(uint32_t),
	       "VFGX_OPT_ENUM fields are 32 bits");

const char *vfgx_gpu_mode_name(enum vfgx_gpu_mode m)
{
	return (unsigned)m < sizeof(gpu_modes) / sizeof(gpu_modes[0]) - 1 ? gpu_modes[m] : "?";
}

void vfgx_gpu_opts_default(struct vfgx_gpu_opts *o)
{
	vfgx_opts_default(gpu_opts, GPU_NOPTS, o, sizeof(*o));
}

int vfgx_gpu_opts_from_yaml(const struct vfgx_cfg_node *map, struct vfgx_gpu_opts *o)
{
	return vfgx_opts_from_yaml(map, gpu_opts, GPU_NOPTS, o, sizeof(*o));
}

int vfgx_gpu_opts_check(vfgx_ctx *ctx, const struct vfgx_gpu_opts *user,
			struct vfgx_gpu_opts *out)
{
	return vfgx_opts_from_user(ctx, "pipeline", "gpu", gpu_opts, GPU_NOPTS,
				   user, out, sizeof(*out));
}
