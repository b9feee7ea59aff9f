/* afxdp_opts.h - the AF_XDP port's options, typed or from YAML, checked
 * the same way (afxdp_opts.c, built with or without libxdp). */
#ifndef VFGX_AFXDP_OPTS_H
#define VFGX_AFXDP_OPTS_H

#include <vfgx/afxdp.h>

#include "core/cfgnode.h"

/* The port's options as one typed struct: conf->backend_opts checked, or
 * the defaults; the queue list checked against conf->nb_rx_queues. */
int vfgx_afxdp_opts_get(vfgx_ctx *ctx, const char *name,
			const struct vfgx_port_conf *conf, struct vfgx_afxdp_opts *o);

/* The ops table's parse entry (interfaces[].afxdp at load, the queue list
 * against ifc's rx queues) and rx_frame_max. */
int vfgx_afxdp_opts_parse(const struct vfgx_cfg_node *map, const struct vfgx_iface_config *ifc,
			  struct vfgx_backend_opts *out);
uint32_t vfgx_afxdp_frame_max(const struct vfgx_backend_opts *o, const char *address,
			      uint32_t buf_size, const char **key);
/* The YAML adapter (file:line:col errors). */
int vfgx_afxdp_opts_from_yaml(const struct vfgx_cfg_node *map,
			      struct vfgx_afxdp_opts *o);

#endif
