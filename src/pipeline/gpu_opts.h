/* gpu_opts.h - pipeline.gpu's option table (gpu_opts.c): the YAML
 * adapter the config loader calls once, at load, and the check of a struct
 * a program filled; vfgx_gpu_opts_default is public (vfgx/gpu.h). */
#ifndef VFGX_GPU_OPTS_H
#define VFGX_GPU_OPTS_H

#include <vfgx/gpu.h>

#include "core/cfgnode.h"

/* pipeline.gpu (map; absent: the defaults) with file:line:col errors. */
int vfgx_gpu_opts_from_yaml(const struct vfgx_cfg_node *map, struct vfgx_gpu_opts *o);
/* A program's struct: argsz-checked copy into out, every value in its
 * range; errors name "pipeline: gpu options: KEY ...". */
int vfgx_gpu_opts_check(vfgx_ctx *ctx, const struct vfgx_gpu_opts *user,
			struct vfgx_gpu_opts *out);

#endif
