/* rdma_ring.h - the RDMA port's ring mode (rdma_ring.c): each side exposes
 * a message ring (vfgx/eba.h) and the peer WRITEs records into it over the
 * port's RC queue pair; receive copies each record into the rx pool. */
#ifndef VFGX_PORT_RDMA_RING_H
#define VFGX_PORT_RDMA_RING_H

#include <stdbool.h>
#include <stdint.h>

#include <vfgx/port.h>
#include <vfgx/rdma.h>

struct rdma_ring;

/* After the connection: the local ring registered and exposed, the
 * descriptors exchanged (the peer must be in ring mode too), a channel to
 * the peer's ring; timeout_ms bounds the exchange and, later, each wait
 * for posted WRITEs.  0 or -errno with one line on the port's context. */
int vfgx_rdma_ring_open(struct vfgx_port *port, vfgx_rdma_dev *dev,
			vfgx_rdma_qp *qp, uint32_t ring_bytes, bool server,
			int timeout_ms, struct rdma_ring **out);
/* Records waiting in the local ring, copied into buffers of pool (at most
 * max, and no more than the pool has free: the rest waits in the ring). */
int vfgx_rdma_ring_rx(struct vfgx_port *port, struct rdma_ring *r,
		      vfgx_pool *pool, struct vfgx_pkt *pkts, uint16_t max,
		      struct vfgx_queue_stats *st);
/* Packets appended to the peer's ring; fewer than n when it is full. */
int vfgx_rdma_ring_tx(struct vfgx_port *port, struct rdma_ring *r,
		      const struct vfgx_pkt *pkts, uint16_t n,
		      struct vfgx_queue_stats *st);
/* Waits (up to open's timeout_ms) for the WRITEs posted to complete, then
 * frees everything; before the queue pair goes.  NULL is a no-op. */
void vfgx_rdma_ring_close(struct rdma_ring *r);

#endif
