/* afxdp_opts.h - the AF_XDP port's options, typed or from YAML, checked
 * the same way (afxdp_opts.c, built with or without libxdp). */
#ifndef VFGX_AFXDP_OPTS_H
#define VFGX_AFXDP_OPTS_H

#include <vfgx/afxdp.h>

/* The port's options as one typed struct: conf->backend_opts checked, or
 * the YAML adapter over conf->opts (lists in memory of the document);
 * the queue list checked against conf->nb_rx_queues. */
int vfgx_afxdp_opts_get(vfgx_ctx *ctx, const char *name,
			const struct vfgx_port_conf *conf, struct vfgx_afxdp_opts *o);

#endif
