/* vfgx/loopback.h - typed options of the loopback port (the software
 * source: a UDP/IPv4 stream with sequence headers and optional injected
 * faults), for vfgx_port_conf.backend_opts; YAML's interfaces[].loopback
 * section fills the same struct. */
#ifndef VFGX_LOOPBACK_H
#define VFGX_LOOPBACK_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

/* Defaults (vfgx_loopback_opts_default) in brackets; ranges checked at
 * open.  The struct may grow at the end: argsz says which version. */
struct vfgx_loopback_opts {
	struct vfgx_backend_opts hdr; /* argsz, backend "loopback": vfgx_loopback_opts_default sets both */
	uint32_t packet_size;      /* [512] frame bytes, headers..9216 */
	uint64_t packets;          /* [100000] over all flows; 0 = endless */
	uint32_t flows;            /* [4] streams, 1..65536, spread over queues */
	uint32_t reorder_distance; /* [3] packets a reordered one is held, 1..512 */
	double rate_pps;           /* [0] all queues together; 0 = no limit */
	double loss;               /* [0] fraction of sequences never sent, 0..1 */
	double reorder;            /* [0] fraction sent late, 0..1 */
	double duplicate;          /* [0] fraction sent twice, 0..1 */
	double corrupt;            /* [0] fraction with a damaged byte, 0..1 */
	uint64_t seed;             /* [1] fault injection pseudo-random seed */
	uint16_t src_port;         /* [4000] UDP, 1..65535 */
	uint16_t dst_port;         /* [5000] UDP, 1..65535 */
	uint16_t vlan;             /* [0] untagged, else the VLAN id 1..4094 */
	bool udp_csum;             /* [true] compute UDP checksums */
	/* [false] build one lap of frames into the whole pool once and hand
	 * it out again and again, sequences advanced per lap (a source fast
	 * enough to load a GPU; docs/gpu.md) */
	bool replay;
	uint32_t replay_frames;    /* [0: all] pool buffers per queue the lap may use, ..2^26 */
	/* [false] replay (host memory): the rx thread advances each frame's
	 * sequence as it hands the frame out again, instead of a rewriting
	 * thread of the port (vfgx_loopback_replay_inline) */
	bool replay_inline;
};

/* The defaults and the header; a loaded config has the interfaces[].loopback
 * section parsed into these at load (vfgx_iface_config.backend_opts). */
void vfgx_loopback_opts_default(struct vfgx_loopback_opts *o);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
