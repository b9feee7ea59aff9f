/* record_opts.h - the record: section's YAML adapter (record.c), which the
 * config loader (src/session/config_load.c) calls once, at load.  Not
 * exported: a program starts from vfgx_record_conf_default (vfgx/record.h). */
#ifndef VFGX_RECORD_OPTS_H
#define VFGX_RECORD_OPTS_H

#include <vfgx/record.h>

#include "core/cfgnode.h"

/* record: (map) into c; strings point into the document of map.  format
 * hdf5 in a build without libhdf5 is one error naming the fix. */
int vfgx_record_conf_from_yaml(const struct vfgx_cfg_node *map,
			       struct vfgx_record_conf *c);

#endif
