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

struct vfgx_afxdp_info {
	char ifname[32];
	char driver[32];      /* from ETHTOOL_GDRVINFO, "?" when unknown */
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
