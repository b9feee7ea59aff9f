/* rdma_ring.c - the RDMA port's ring mode: each side exposes one message
 * ring (the record format and credit scheme of vfgx/eba.h) in registered
 * host memory and sends its descriptor over the connection; tx_burst
 * copies packets into a registered staging area and appends them to the
 * peer's ring with one-sided WRITEs (vfgx_channel_ring_send), rx_burst
 * checks the records that landed in the local ring and copies each into an
 * rx pool buffer, releasing its ring space at once.  No receives are
 * posted and the peer's CPU takes no part in the transfer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/eba.h>

#include "backend.h"
#include "rdma_ring.h"

#define RING_STAGE_BYTES (8u << 20) /* tx staging, reused after a fence */
#define RING_LEASE_S 86400          /* the connection bounds the ring */

struct rdma_ring {
	uint8_t *mem;                 /* local ring + its head word */
	uint32_t size;
	vfgx_rdma_mr *mr;
	struct vfgx_ring_consumer cons;
	uint8_t *stage;               /* what the WRITEs read */
	vfgx_rdma_mr *stage_mr;
	size_t cur;                   /* next free staging byte */
	uint32_t peer_max;            /* the largest record the peer's ring takes */
	int timeout_ms;               /* the port's: fences wait at most this */
	vfgx_channel *ch;
};

void vfgx_rdma_ring_close(struct rdma_ring *r)
{
	if (!r)
		return;
	if (r->ch) {
		/* the last records' WRITEs land before the queue pair goes */
		vfgx_channel_fence(r->ch, r->timeout_ms);
		vfgx_channel_close(r->ch);
	}
	vfgx_rdma_dereg(r->mr);
	vfgx_rdma_dereg(r->stage_mr);
	free(r->mem);
	free(r->stage);
	free(r);
}

int vfgx_rdma_ring_open(struct vfgx_port *port, vfgx_rdma_dev *dev,
			vfgx_rdma_qp *qp, uint32_t ring_bytes, bool server,
			int timeout_ms, struct rdma_ring **out)
{
	struct vfgx_eba_desc mine, theirs;
	struct rdma_ring *r = calloc(1, sizeof(*r));
	int ret;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->size = ring_bytes;
	r->timeout_ms = timeout_ms;
	r->mem = aligned_alloc(4096, (size_t)ring_bytes + 4096);
	r->stage = aligned_alloc(4096, RING_STAGE_BYTES);
	if (!r->mem || !r->stage) {
		ret = -ENOMEM;
		goto err;
	}
	/* the head word right after the data area, as vfgx_channel_ring_init
	 * expects of an rx descriptor (ring at 0, state_off = its size) */
	if ((ret = vfgx_ring_consumer_init(&r->cons, r->mem, ring_bytes,
					   (VFGX_ATOMIC_U64 *)(r->mem + ring_bytes))) ||
	    (ret = vfgx_rdma_reg_mem(dev, r->mem, (size_t)ring_bytes + 64,
				     VFGX_RDMA_ACCESS_REMOTE_WRITE |
					     VFGX_RDMA_ACCESS_REMOTE_READ,
				     &r->mr)) ||
	    (ret = vfgx_rdma_reg_mem(dev, r->stage, RING_STAGE_BYTES, 0,
				     &r->stage_mr)) ||
	    (ret = vfgx_eba_desc_from_mr(r->mr, qp, server ? 2 : 1, 0, VFGX_EBA_RX,
					 ring_bytes, RING_LEASE_S, &mine)))
		goto err;
	if ((ret = vfgx_eba_exchange(qp, &mine, &theirs, timeout_ms))) {
		vfgx_set_error(port->ctx, ret,
			       "%s: rdma ring mode: no ring descriptor from the peer (%s): is its rdma.mode ring too?",
			       port->name, vfgx_last_error(port->ctx));
		goto err;
	}
	if ((ret = vfgx_channel_open(qp, &theirs, r->stage_mr, &r->ch)) ||
	    (ret = vfgx_channel_ring_init(r->ch, theirs.state_off))) {
		vfgx_set_error(port->ctx, ret, "%s: rdma ring mode: %s", port->name,
			       vfgx_last_error(port->ctx));
		goto err;
	}
	r->peer_max = vfgx_ring_max_payload(theirs.state_off);
	if (r->peer_max > RING_STAGE_BYTES / 2)
		r->peer_max = RING_STAGE_BYTES / 2;
	vfgx_info(port->ctx, "%s: ring mode: %u-byte ring exposed, the peer's takes records up to %u bytes",
		  port->name, ring_bytes, r->peer_max);
	*out = r;
	return 0;
err:
	r->timeout_ms = 0; /* nothing was sent */
	vfgx_rdma_ring_close(r);
	return ret;
}

int vfgx_rdma_ring_rx(struct vfgx_port *port, struct rdma_ring *r,
		      vfgx_pool *pool, struct vfgx_pkt *pkts, uint16_t max,
		      struct vfgx_queue_stats *st)
{
	uint32_t room = vfgx_pool_available(pool), cap = vfgx_pool_buf_size(pool);
	int out = 0;

	while (out < max) {
		const void *msg;
		uint32_t len;
		void *b;
		int ret = vfgx_ring_peek(&r->cons, &msg, &len);

		if (ret < 0) {
			if (out)
				break; /* the error again on the next call */
			return vfgx_set_error(port->ctx, ret,
					      "%s: rdma ring mode: %s in the exposed ring after %llu records (the ring cannot go on)",
					      port->name,
					      ret == -EBADMSG ? "a torn record" : "an impossible record length",
					      (unsigned long long)st->rx_packets);
		}
		if (!ret)
			break;
		if (len > cap) {
			st->drops[VFGX_DROP_TOO_BIG]++;
			vfgx_ring_release(&r->cons);
			continue;
		}
		/* no free buffer: the record waits in the ring, nothing lost */
		if (!room || vfgx_pool_alloc_bulk(pool, &b, 1) < 0)
			break;
		room--;
		memcpy(b, msg, len);
		vfgx_ring_release(&r->cons);
		pkts[out] = (struct vfgx_pkt){
			.data = b, .len = len, .ts_ns = vfgx_now_ns(), .handle = b,
			.flags = VFGX_PKT_PAYLOAD,
		};
		st->rx_packets++;
		st->rx_bytes += len;
		out++;
	}
	return out;
}

int vfgx_rdma_ring_tx(struct vfgx_port *port, struct rdma_ring *r,
		      const struct vfgx_pkt *pkts, uint16_t n,
		      struct vfgx_queue_stats *st)
{
	uint16_t done = 0;

	for (; done < n; done++) {
		uint32_t len = pkts[done].len;
		int ret;

		if (len > r->peer_max) {
			st->drops[VFGX_DROP_TOO_BIG]++;
			continue;
		}
		if (r->cur + len > RING_STAGE_BYTES) {
			/* staged sources stay unchanged until their WRITEs
			 * completed */
			if ((ret = vfgx_channel_fence(r->ch, r->timeout_ms)))
				return done ? done :
					      vfgx_set_error(port->ctx, ret, "%s: rdma ring mode: %s",
							     port->name, vfgx_last_error(port->ctx));
			r->cur = 0;
		}
		memcpy(r->stage + r->cur, pkts[done].data, len);
		ret = vfgx_channel_ring_send(r->ch, r->stage + r->cur, len, false, 0);
		if (ret == -ETIMEDOUT)
			break; /* the peer's ring is full: the caller retries */
		if (ret)
			return done ? done :
				      vfgx_set_error(port->ctx, ret, "%s: rdma ring mode: %s",
						     port->name, vfgx_last_error(port->ctx));
		r->cur += (len + 63) & ~(size_t)63;
		st->tx_packets++;
		st->tx_bytes += len;
	}
	return done;
}
