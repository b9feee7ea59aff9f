/* port_opts.h - the port layer's part of config load (src/core/config.c):
 * each interface's backend section parsed into typed options by its
 * backend's parse entry, and the largest frame each rx queue will hand
 * out, from those options (the gpu engine's bounce rule, rx_memory.h). */
#ifndef VFGX_PORT_OPTS_H
#define VFGX_PORT_OPTS_H

#include <stdint.h>

#include <vfgx/port.h>

#include "core/cfgnode.h"

/* interfaces[].<backend> (map; absent: the defaults) into *out, in memory
 * of the document, by ifc->backend's parse entry; *out NULL when that
 * backend is not in this build (opening the port says so).  0 or -EINVAL
 * with file:line:col: key.path in vfgx_last_error. */
int vfgx_port_opts_from_yaml(const struct vfgx_cfg_node *map,
			     const struct vfgx_iface_config *ifc,
			     const struct vfgx_backend_opts **out);

/* The largest frame an rx queue of ifc (its backend_opts parsed) hands
 * out in a pool of buf_size-byte buffers, or in the backend's own (host
 * memory) when buf_size is 0; *key: the option that bounds it, or NULL.
 * 0 for a backend not in this build (opening the port says so). */
uint32_t vfgx_port_conf_frame_max(const struct vfgx_iface_config *ifc,
				  uint32_t buf_size, const char **key);

#endif
