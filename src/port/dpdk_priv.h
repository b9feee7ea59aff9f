/* dpdk_priv.h - what the DPDK port's three files share: the parsed
 * options, the per-queue and per-port state, and the functions that cross
 * the seams (options -> set-up -> data path). */
#ifndef VFGX_PORT_DPDK_PRIV_H
#define VFGX_PORT_DPDK_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <vfgx/dpdk.h>

#include "backend.h"

#define DK_MAX_EAL_ARGS 64
#define DK_MAX_FLOWS 64
#define DK_SW_RING 1024
#define DK_HDR_ROOM 256 /* header segment data room with split */
#define DK_SPLIT_HDR_LEN 42 /* Ethernet + IPv4 + UDP, no options */

enum dk_steering { DK_STEER_AUTO, DK_STEER_FLOW, DK_STEER_SOFTWARE };

struct dk_flow_rule {
	uint16_t udp_dst_port;
	uint16_t queue;
};

struct dk_opts {
	char port[VFGX_ADDR_MAX];
	int nb_eal;
	char eal[DK_MAX_EAL_ARGS][VFGX_ADDR_MAX];
	uint32_t rx_desc, tx_desc;
	uint32_t num_mbufs, mbuf_size, cache;
	int fallback; /* enum vfgx_mem_fallback */
	bool rss, promiscuous, header_split;
	int steering;
	int nb_flows;
	struct dk_flow_rule flows[DK_MAX_FLOWS];
};

struct dk_queue {
	struct rte_mempool *mp;     /* payload (or whole-frame) pool */
	struct rte_mempool *hdr_mp; /* header pool with header-data split */
	void *ext_addr;             /* registered external memory, or NULL */
	size_t ext_len;
	struct rte_device *dma_dev; /* set when ext_addr is DMA-mapped */
	bool gpu;                   /* mbuf data are device addresses */
	bool polled;                /* rx thread registered with EAL */
	/* the last burst handed out: its mbufs in order, and the descriptor
	 * array they went to, so releasing exactly that burst frees this
	 * array instead of gathering handles from the 40-byte descriptors */
	struct rte_mbuf **last;
	const struct vfgx_pkt *last_pkts;
	uint16_t last_n;
	/* the last burst may go back with rte_mempool_put_bulk (what
	 * rte_mbuf_raw_free does per mbuf): every mbuf one segment, direct
	 * (host pool, no external buffer) and from dq->mp; dk_release adds
	 * the last condition, reference count 1 */
	bool last_raw;
	/* tx mbufs reserved for frames written in place (tx_fill.h), from
	 * dp->tx_mp, in order; allocated on the first reserve */
	struct rte_mbuf **resv;
	uint16_t resv_n;
	struct vfgx_queue_stats st;
};

struct dk_priv {
	uint16_t pid;
	bool attached;     /* port id valid and marked used */
	bool probed;       /* we attached the device: detach on close */
	bool started;
	bool promisc;      /* we turned promiscuous mode on */
	bool split;
	bool sw_steer;
	bool rss;          /* RSS configured: mbufs may carry a hash */
	char devname[VFGX_ADDR_MAX];
	struct rte_mempool *tx_mp;
	struct dk_queue q[VFGX_MAX_QUEUES];
	/* software steering: rings[src * nq + dst], and port -> queue + 1 */
	struct vfgx_ring *rings;
	uint8_t *steer;
	struct rte_flow *flows[DK_MAX_FLOWS];
	int nb_flows;
	/* rx timestamps from the TSC, in vfgx_now_ns() time: cheaper than a
	 * clock_gettime per burst; drift against CLOCK_MONOTONIC over a run
	 * is far below the latencies measured */
	uint64_t base_ns, base_tsc, ns_mult; /* ns = (tsc delta * mult) >> 32 */
	uint64_t xs_id[2]; /* rx_mbuf_allocation_errors, rx_missed_errors */
	bool xs_ok[2];
};

/* dpdk_opts.c: the port's options as one typed struct (conf->backend_opts,
 * or the defaults), copied and checked into o. */
int dk_parse(struct vfgx_port *port, const struct vfgx_port_conf *conf,
	     struct dk_opts *o);
/* dpdk_opts.c: the ops table's parse entry (interfaces[].dpdk at load,
 * flow queues against ifc's rx queues), rx_frame_max, the YAML adapter. */
int vfgx_dpdk_opts_parse(const struct vfgx_cfg_node *map, const struct vfgx_iface_config *ifc,
			 struct vfgx_backend_opts *out);
uint32_t vfgx_dpdk_frame_max(const struct vfgx_backend_opts *o, const char *address,
			     uint32_t buf_size, const char **key);
int vfgx_dpdk_opts_from_yaml(const struct vfgx_cfg_node *map, struct vfgx_dpdk_opts *o);

/* dpdk_setup.c: EAL, device, pools, queues, steering; open and close. */
int dk_open(struct vfgx_port *port, const struct vfgx_port_conf *conf);
void dk_close(struct vfgx_port *port);

#endif
