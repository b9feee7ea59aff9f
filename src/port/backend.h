/* backend.h - what a backend implements: one ops table per file, listed in
 * port.c's table.  Adding a backend touches its file, its test and one line
 * in that table. */
#ifndef VFGX_PORT_BACKEND_H
#define VFGX_PORT_BACKEND_H

#include <stdbool.h>

#include <vfgx/port.h>

#include "core/cfgnode.h"

struct vfgx_port {
	vfgx_ctx *ctx;
	const struct vfgx_port_ops *ops;
	char name[VFGX_NAME_MAX];
	uint16_t nb_rx_queues;
	uint16_t nb_tx_queues;
	uint16_t burst;                        /* largest rx_burst[] */
	uint16_t rx_burst[VFGX_MAX_QUEUES];    /* per queue, 1..burst */
	uint16_t tx_burst[VFGX_MAX_QUEUES];    /* per queue, 0: no split */
	vfgx_pool *rx_pools[VFGX_MAX_QUEUES];
	bool own_pools; /* created by vfgx_port_open_config */
	vfgx_region *rx_regions[VFGX_MAX_QUEUES]; /* owned with the pools */
	void *priv;     /* backend state, ops->priv_size bytes, zeroed */
	/* capture taps per rx queue (capture.c), NULL: not captured */
	struct vfgx_capture_tap *tap[VFGX_MAX_QUEUES];
	/* the backend's release counts packets in the order rx handed them
	 * out (the loopback replay): a capture holding one back holds back
	 * every later one too */
	bool release_in_order;
	/* per rx queue: the largest frame it hands out (ops->rx_frame_max) */
	uint32_t rx_frame_max[VFGX_MAX_QUEUES];
};

struct vfgx_port_ops {
	const char *name;
	size_t priv_size;
	/* The backend's typed options (struct vfgx_<name>_opts, its header
	 * first): opts_size bytes.  parse fills them at config load from the
	 * interface's <name>: section (map; absent: the defaults) by the
	 * backend's VFGX_OPT table, with file:line:col errors; ifc is the
	 * interface (its queues and address) for checks between them. */
	size_t opts_size;
	int (*parse)(const struct vfgx_cfg_node *map, const struct vfgx_iface_config *ifc,
		     struct vfgx_backend_opts *out);
	/* The largest frame an rx queue hands out, with options o (checked;
	 * NULL: the defaults) and address: in a pool of buf_size-byte buffers,
	 * or in the backend's own (host memory) when buf_size is 0.  *key: the
	 * option that bounds it, for messages ("loopback.packet_size"). */
	uint32_t (*rx_frame_max)(const struct vfgx_backend_opts *o, const char *address,
				 uint32_t buf_size, const char **key);
	/* Check conf->backend_opts (NULL: the defaults), acquire resources,
	 * start receiving.  On failure release everything and set a detail
	 * with vfgx_set_error(). */
	int (*open)(struct vfgx_port *port, const struct vfgx_port_conf *conf);
	int (*rx_burst)(struct vfgx_port *port, uint16_t q,
			struct vfgx_pkt *pkts, uint16_t max);
	void (*release)(struct vfgx_port *port, uint16_t q,
			struct vfgx_pkt *pkts, uint16_t n);
	int (*tx_burst)(struct vfgx_port *port, uint16_t q,
			const struct vfgx_pkt *pkts, uint16_t n);
	int (*stats)(struct vfgx_port *port, uint16_t q,
		     struct vfgx_queue_stats *st);
	void (*close)(struct vfgx_port *port);
	/* Optional. */
	bool (*rx_done)(struct vfgx_port *port, uint16_t q);
	int (*source_report)(struct vfgx_port *port, uint16_t q,
			     struct vfgx_source_report *rep);
	/* launch times (vfgx_port_txtime_*); info and st are the library's
	 * own, zeroed */
	int (*txtime_enable)(struct vfgx_port *port,
			     struct vfgx_txtime_info *info);
	int (*txtime_stats)(struct vfgx_port *port, uint16_t q,
			    struct vfgx_txtime_stats *st);
	/* frames written into the port's tx buffers (tx_fill.h) */
	int (*tx_reserve)(struct vfgx_port *port, uint16_t q, void **bufs,
			  uint16_t n, uint32_t *room);
	int (*tx_submit)(struct vfgx_port *port, uint16_t q,
			 const uint32_t *lens, uint16_t n);
};

extern const struct vfgx_port_ops vfgx_loopback_ops;
extern const struct vfgx_port_ops vfgx_socket_ops;
extern const struct vfgx_port_ops vfgx_afxdp_ops;
extern const struct vfgx_port_ops vfgx_dpdk_ops;
extern const struct vfgx_port_ops vfgx_rdma_ops;
extern const struct vfgx_port_ops vfgx_pcap_ops;

/* Release helper for backends whose handles are pool buffers of queue q. */
void vfgx_port_release_to_pool(struct vfgx_port *port, uint16_t q,
			       struct vfgx_pkt *pkts, uint16_t n);

/* The kernel interface ifname exists in the caller's network namespace:
 * its ifindex, or -ENODEV with the one-line error that says so. */
int vfgx_port_find_iface(struct vfgx_port *port, const char *ifname);

/* A frame bound for rx_frame_max: bound, or buf_size when a pool's
 * buffers are smaller (buf_size 0: the backend's own buffers). */
static inline uint32_t vfgx_frame_bound(uint32_t bound, uint32_t buf_size)
{
	return buf_size && buf_size < bound ? buf_size : bound;
}

#endif
