/* chunk_opts.h - pipeline.chunks options (chunk_opts.c): the YAML
 * adapter the config loader (src/session/config_load.c) calls once, at
 * load, and the check of a struct a program filled (chunk.c). */
#ifndef VFGX_CHUNK_OPTS_H
#define VFGX_CHUNK_OPTS_H

#include <vfgx/chunk.h>
#include <vfgx/config.h>

#include "core/cfgnode.h"

/* Defaults, then the keys of map (file:line:col errors). */
int vfgx_chunk_config_from_yaml(const struct vfgx_cfg_node *map,
				struct vfgx_chunk_config *c);
/* A program's struct: argsz-checked copy into out, every value checked;
 * errors name "pipeline: chunks options: KEY ...". */
int vfgx_chunk_config_check(vfgx_ctx *ctx, const struct vfgx_chunk_config *user,
			    struct vfgx_chunk_config *out);
#endif
