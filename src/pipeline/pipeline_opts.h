/* pipeline_opts.h - the pipeline's own keys (YAML pipeline: and
 * pipeline.reorder:) as option tables (pipeline_opts.c): one source of
 * their defaults, for vfgx_pipeline_config_default (vfgx/pipeline.h) and
 * for the config loader, which reads the YAML by them at load. */
#ifndef VFGX_PIPELINE_OPTS_H
#define VFGX_PIPELINE_OPTS_H

#include <stddef.h>

#include "core/opts.h"

/* pipeline: its own keys into struct vfgx_pipeline_config; the nested
 * sections (filter, reorder, gpu, chunks, user, capture, format) are in
 * the table for the key check only, each read by its own reader. */
extern const struct vfgx_opt vfgx_pipeline_opts[];
extern const size_t vfgx_pipeline_nopts;
/* pipeline.reorder: into struct vfgx_pipeline_config. */
extern const struct vfgx_opt vfgx_reorder_opts[];
extern const size_t vfgx_reorder_nopts;

#endif
