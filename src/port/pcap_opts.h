/* pcap_opts.h - the options of the pcap port and of capture files, typed
 * or from YAML, checked the same way (pcap_opts.c, built with or without
 * libpcap). */
#ifndef VFGX_PCAP_OPTS_H
#define VFGX_PCAP_OPTS_H

#include <vfgx/capture.h>
#include <vfgx/pcap.h>

/* conf->backend_opts checked, or the YAML adapter over conf->opts. */
int vfgx_pcap_opts_get(vfgx_ctx *ctx, const char *name,
		       const struct vfgx_port_conf *conf, struct vfgx_pcap_opts *o);

/* A program's capture conf: argsz-checked copy into out, ranges checked. */
int vfgx_capture_conf_check(vfgx_ctx *ctx, const struct vfgx_capture_conf *user,
			    struct vfgx_capture_conf *out);

#endif
