/* format_opts.h - pipeline.format's YAML adapter (format_opts.c), which
 * the config loader (src/session/config_load.c) and `vfgx send`'s
 * send.format (src/session/sender.c) call once, at load.  Not exported: a
 * program fills struct vfgx_format with vfgx_format_profile or
 * vfgx_format_load_file (vfgx/format.h). */
#ifndef VFGX_FORMAT_OPTS_H
#define VFGX_FORMAT_OPTS_H

#include <vfgx/format.h>

#include "core/cfgnode.h"

/* A profile and/or described fields over it (file:line:col errors).
 * Absent map: the vfgx profile. */
int vfgx_format_from_yaml(const struct vfgx_cfg_node *map, struct vfgx_format *f);

#endif
