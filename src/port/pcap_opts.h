/* pcap_opts.h - the options of the pcap port and of capture files, typed
 * or from YAML, checked the same way (pcap_opts.c, built with or without
 * libpcap). */
#ifndef VFGX_PCAP_OPTS_H
#define VFGX_PCAP_OPTS_H

#include <vfgx/capture.h>
#include <vfgx/pcap.h>

#include "core/cfgnode.h"

/* conf->backend_opts checked, or the defaults. */
int vfgx_pcap_opts_get(vfgx_ctx *ctx, const char *name,
		       const struct vfgx_port_conf *conf, struct vfgx_pcap_opts *o);

/* The ops table's parse entry (interfaces[].pcap at load), rx_frame_max,
 * and the YAML adapter. */
int vfgx_pcap_opts_parse(const struct vfgx_cfg_node *map, const struct vfgx_iface_config *ifc,
			 struct vfgx_backend_opts *out);
uint32_t vfgx_pcap_frame_max(const struct vfgx_backend_opts *o, const char *address,
			     uint32_t buf_size, const char **key);
int vfgx_pcap_opts_from_yaml(const struct vfgx_cfg_node *map, struct vfgx_pcap_opts *o);

/* pipeline.capture (the config loader's, at load); strings point into
 * the document of map. */
int vfgx_capture_conf_from_yaml(const struct vfgx_cfg_node *map,
				struct vfgx_capture_conf *c);
/* A program's capture conf: argsz-checked copy into out, ranges checked. */
int vfgx_capture_conf_check(vfgx_ctx *ctx, const struct vfgx_capture_conf *user,
			    struct vfgx_capture_conf *out);

#endif
