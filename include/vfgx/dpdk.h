/* vfgx/dpdk.h - typed options of the DPDK port (ethdev by PCI address or
 * vdev), for vfgx_port_conf.backend_opts; YAML's interfaces[].dpdk section
 * fills the same struct.  Built where DPDK is (the build summary says). */
#ifndef VFGX_DPDK_H
#define VFGX_DPDK_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

enum vfgx_dpdk_steering {
	VFGX_DPDK_STEER_AUTO = 0,     /* rte_flow, else software */
	VFGX_DPDK_STEER_FLOW = 1,     /* rte_flow only */
	VFGX_DPDK_STEER_SOFTWARE = 2, /* the port moves packets between queues */
};

/* One steering rule: UDP destination port -> rx queue. */
struct vfgx_dpdk_flow {
	uint16_t udp_dst_port; /* 1..65535 */
	uint16_t queue;        /* < the port's rx queues */
};

/* Defaults in brackets.  May grow at the end: argsz. */
struct vfgx_dpdk_opts {
	struct vfgx_backend_opts hdr; /* argsz, backend "dpdk": vfgx_dpdk_opts_default sets both */
	const char *port;       /* [NULL: the port's address] PCI address or vdev */
	uint32_t rx_desc;       /* [1024] 32..16384 */
	uint32_t tx_desc;       /* [1024] 32..16384 */
	uint32_t num_mbufs;     /* [8191] per rx queue, 64..2^24 (YAML: memory.num_mbufs) */
	uint32_t mbuf_size;     /* [RTE_MBUF_DEFAULT_BUF_SIZE] data room (memory.mbuf_size) */
	uint32_t cache;         /* [256] per-core cache, <= num_mbufs/2 (memory.cache) */
	uint32_t fallback;      /* [host] enum vfgx_mem_fallback for GPU/pinned pools (memory.fallback) */
	uint32_t steering;      /* [auto] enum vfgx_dpdk_steering */
	bool rss;               /* [true] */
	bool promiscuous;       /* [true] */
	bool header_split;      /* [false] headers and payload in separate mbufs */
	/* EAL arguments, used by the first DPDK port of the process; and the
	 * steering rules.  The YAML adapter fills both from dpdk.eal_args and
	 * dpdk.flows (memory of the config, valid while it lives). */
	const char *const *eal_args;
	uint32_t nb_eal_args;
	const struct vfgx_dpdk_flow *flows;
	uint32_t nb_flows;
};

/* The defaults and the header; a loaded config has the interfaces[].dpdk
 * section parsed into these at load (vfgx_iface_config.backend_opts). */
void vfgx_dpdk_opts_default(struct vfgx_dpdk_opts *o);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
