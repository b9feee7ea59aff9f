/* gpu_opts.h - pipeline.gpu's YAML adapter (gpu_proc_host.c), which
 * config load (src/core/config.c) calls: the section becomes a typed
 * struct vfgx_gpu_opts once, there. */
#ifndef VFGX_GPU_OPTS_H
#define VFGX_GPU_OPTS_H

#include <vfgx/gpu.h>

#include "core/cfgnode.h"

/* pipeline.gpu (n; absent: the defaults) with file:line:col errors. */
int vfgx_gpu_opts_from_yaml(const struct vfgx_cfg_node *n, struct vfgx_gpu_opts *o);

#endif
