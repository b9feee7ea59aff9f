/* vfgx/afxdp.h - what an AF_XDP port actually got from the kernel (XDP
 * attach mode, zero-copy or copy, the program it attached), for reports,
 * tests and benchmarks. */
#ifndef VFGX_AFXDP_H
#define VFGX_AFXDP_H

#include <stdbool.h>
#include <stdint.h>

#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

/* Typed options (vfgx_port_conf.backend_opts; YAML: interfaces[].afxdp).
 * Defaults in brackets; exist in every build.  May grow: argsz. */
enum vfgx_afxdp_mode { VFGX_AFXDP_AUTO = 0, VFGX_AFXDP_NATIVE = 1, VFGX_AFXDP_GENERIC = 2 };
enum vfgx_afxdp_zc { VFGX_AFXDP_ZC_AUTO = 0, VFGX_AFXDP_ZC_ON = 1, VFGX_AFXDP_ZC_OFF = 2 };

struct vfgx_afxdp_opts {
	struct vfgx_backend_opts hdr; /* argsz, backend "afxdp": vfgx_afxdp_opts_default sets both */
	uint32_t mode;       /* [auto] enum vfgx_afxdp_mode: XDP attach mode */
	uint32_t zero_copy;  /* [auto] enum vfgx_afxdp_zc */
	uint32_t frame_size; /* [2048] UMEM frame, 2048 or 4096 */
	uint32_t num_frames; /* [4096] UMEM frames per queue, 64..2^20 */
	uint32_t rx_ring, tx_ring, fill_ring, comp_ring; /* [2048] powers of two 64..16384 */
	/* interface queue of each rx queue (nb_queues == the port's rx
	 * queues), or NULL: rx queue q reads interface queue q.  The YAML
	 * adapter fills it from afxdp.queues (memory of the config). */
	const uint32_t *queues;
	uint32_t nb_queues;
};

/* The defaults and the header; a loaded config has the interfaces[].afxdp
 * section parsed into these at load (vfgx_iface_config.backend_opts). */
void vfgx_afxdp_opts_default(struct vfgx_afxdp_opts *o);

/* The names point into the port: valid until vfgx_port_close. */
struct vfgx_afxdp_info {
	const char *ifname;
	const char *driver;   /* from ETHTOOL_GDRVINFO, "?" when unknown */
	int ifindex;
	bool native;          /* XDP in driver mode; false: generic (SKB) mode */
	bool zero_copy;       /* sockets bound with XDP_ZEROCOPY */
	uint32_t prog_id;     /* the attached xsk_def_prog */
	uint32_t frame_size;  /* UMEM chunk size */
	uint16_t nb_queues;   /* AF_XDP sockets, one per rx queue */
};

/* Fill *info for an open "afxdp" port.  -EINVAL for other backends,
 * -ENOTSUP when this build has no AF_XDP. */
int vfgx_afxdp_info(vfgx_port *port, struct vfgx_afxdp_info *info);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
