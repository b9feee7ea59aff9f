/* rings_verbs.c - vfgx_mpi_rings over vfgx's own RDMA verbs channels
 * (vfgx/eba.h, vfgx/rdma.h): every rank registers its rings with the RDMA
 * device, makes one RC queue pair per peer and publishes each ring as an RX
 * descriptor carrying its address, rkey, the QP number and the GID through
 * vfgx_eba_exchange_mpi; the rest of a QP's connection (PSN, MTU, LID)
 * goes with one MPI_Alltoall.  After the open, records travel as RDMA
 * WRITEs by the ring protocol of vfgx_channel_ring_* and MPI carries
 * nothing: the consumer finds them in its own memory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include <vfgx/rdma.h>

#include "rings_internal.h"

/* One QP endpoint on the wire: qpn u32 | psn u32 | lid u16 | mtu u8 |
 * zero, little-endian.  The GID travels in the ring's descriptor. */
#define EP_LEN 16

struct verbs_peer {
	struct mpi_verbs *v;
	vfgx_rdma_qp *qp;
	vfgx_channel *ch;
	vfgx_rdma_mr *stage_mr;
	/* A mirror of the peer's data area: a payload is copied here at its
	 * record's offset and written from here, so the caller's buffer is
	 * free on return.  Those bytes are rewritten only once the credit
	 * covers them again, i.e. after the consumer released the record,
	 * which it does only after the record's check value matched what
	 * landed: the WRITE that read them is complete at the responder, and
	 * a retransmitted duplicate is acknowledged, never re-executed. */
	uint8_t *stage;
	struct vfgx_ring_transport inner; /* the channel's ring transport */
	/* a second channel on the same QP whose local MR is the caller's
	 * registered region: payloads from there are written in place */
	vfgx_channel *zc;
	struct vfgx_ring_transport zc_inner;
};

struct mpi_verbs {
	vfgx_rdma_dev *dev;
	vfgx_rdma_mr *mr;        /* r->mem: every ring of this rank */
	struct verbs_peer *peer; /* [size], [rank] unused */
	vfgx_rdma_mr *user_mr;   /* vfgx_mpi_rings_register's region */
	const uint8_t *user;
	size_t user_len;
};

static void le_put(uint8_t *b, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t le_get(const uint8_t *b, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* ---- the ring transport: the channel's, with the payload staged ------ */

static int st_write(void *user, uint64_t off, const void *src, uint32_t len,
		    bool wake)
{
	struct verbs_peer *vp = user;

	/* only headers and wrap markers come this way (write_rec is set):
	 * the channel sends them inline */
	return vp->inner.write(vp->inner.user, off, src, len, wake);
}

static int st_write_rec(void *user, uint64_t off, const void *payload,
			uint32_t len, const void *hdr, bool wake)
{
	struct verbs_peer *vp = user;
	uint64_t size = vfgx_rdma_mr_info(vp->stage_mr)->len;

	/* records never wrap (vfgx/eba.h): the payload ends inside the ring */
	if (off > size || (uint64_t)VFGX_RING_HDR + len > size - off)
		return -ERANGE;
	if (vp->zc && (const uint8_t *)payload >= vp->v->user &&
	    len <= vp->v->user_len &&
	    (size_t)((const uint8_t *)payload - vp->v->user) <= vp->v->user_len - len)
		return vp->zc_inner.write_rec(vp->zc_inner.user, off, payload, len, hdr, wake);
	memcpy(vp->stage + off + VFGX_RING_HDR, payload, len);
	return vp->inner.write_rec(vp->inner.user, off, vp->stage + off + VFGX_RING_HDR,
				   len, hdr, wake);
}

static int st_read_start(void *user, uint64_t off)
{
	struct verbs_peer *vp = user;

	return vp->inner.read_start(vp->inner.user, off);
}

static int st_read_poll(void *user, void *dst, bool wait)
{
	struct verbs_peer *vp = user;

	return vp->inner.read_poll(vp->inner.user, dst, wait);
}

/* ---- open and close ---------------------------------------------------- */

int mpi_verbs_usable(vfgx_ctx *ctx, const char *dev_name)
{
	struct ibv_port_attr pa;
	vfgx_rdma_dev *dev;
	int ok;

	if (vfgx_rdma_dev_open(ctx, dev_name, 1, -1, &dev))
		return 0;
	ok = !ibv_query_port(vfgx_rdma_dev_verbs(dev), vfgx_rdma_dev_port(dev), &pa) &&
	     pa.state == IBV_PORT_ACTIVE;
	vfgx_rdma_dev_close(dev);
	return ok;
}

/* This rank's half: device, registered rings, a QP and a staging mirror
 * per peer, the descriptors (descs, one per peer) and endpoints (eps) to
 * publish, and the consumers.  0 or -errno (detail on ctx). */
static int setup_local(struct vfgx_mpi_rings *r, const char *dev_name,
		       struct vfgx_eba_desc *descs, uint8_t *eps)
{
	const struct vfgx_rdma_qp_conf qc = { .argsz = sizeof(qc), .type = VFGX_RDMA_RC };
	struct mpi_verbs *v = r->verbs;
	size_t len = (size_t)(r->stride * (uint64_t)r->size);
	int ret;

	ret = vfgx_rdma_dev_open(r->ctx, dev_name, 1, -1, &v->dev);
	if (ret)
		return ret;
	r->mem = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	if (!r->mem)
		return vfgx_set_error(r->ctx, -ENOMEM, "mpi rings: out of memory for %zu bytes of rings", len);
	ret = vfgx_rdma_reg_mem(v->dev, r->mem, len,
				VFGX_RDMA_ACCESS_REMOTE_WRITE | VFGX_RDMA_ACCESS_REMOTE_READ, &v->mr);
	if (ret)
		return ret;
	for (int p = 0; p < r->size; p++) {
		struct verbs_peer *vp = &v->peer[p];
		struct vfgx_rdma_endpoint ep;
		struct vfgx_eba_desc *d = &descs[p < r->rank ? p : p - 1];

		if (p == r->rank)
			continue;
		vp->v = v;
		ret = vfgx_rdma_qp_create(v->dev, &qc, &vp->qp);
		if (ret)
			return ret;
		vp->stage = aligned_alloc(4096, r->ring_size);
		if (!vp->stage)
			return vfgx_set_error(r->ctx, -ENOMEM, "mpi rings: out of memory");
		ret = vfgx_rdma_reg_mem(v->dev, vp->stage, r->ring_size, 0, &vp->stage_mr);
		if (ret)
			return ret;
		/* the whole registration's rkey and our QP for p; then the
		 * ring's own place and size in it */
		ret = vfgx_eba_desc_from_mr(v->mr, vp->qp, VFGX_MPI_NODE_ID(r->rank), (uint32_t)p,
					    VFGX_EBA_RX, r->ring_size, RING_LEASE_S, d);
		if (ret)
			return ret;
		d->addr += (uint64_t)p * r->stride;
		d->size = r->stride;
		ret = vfgx_rdma_qp_endpoint(vp->qp, NULL, &ep);
		if (ret)
			return ret;
		le_put(eps + (size_t)p * EP_LEN, ep.qpn, 4);
		le_put(eps + (size_t)p * EP_LEN + 4, ep.psn, 4);
		le_put(eps + (size_t)p * EP_LEN + 8, ep.lid, 2);
		eps[(size_t)p * EP_LEN + 10] = ep.mtu;
		ret = mpi_rings_consumer_init(r, p);
		if (ret)
			return ret;
	}
	return 0;
}

/* Connect our QP for each peer to the peer's QP for us, open a channel on
 * it to the peer's ring for us, and put the ring's producer on it. */
static int connect_peers(struct vfgx_mpi_rings *r, const uint8_t *eps)
{
	struct mpi_verbs *v = r->verbs;

	for (int p = 0; p < r->size; p++) {
		struct verbs_peer *vp = &v->peer[p];
		struct remote_ring *rr = &r->peer[p];
		const uint8_t *b = eps + (size_t)p * EP_LEN;
		struct vfgx_rdma_endpoint ep = { 0 };
		const struct vfgx_eba_desc *d;
		struct vfgx_ring_transport tr = { st_write, st_read_start, st_read_poll,
						  vp, st_write_rec };
		int ret;

		if (p == r->rank)
			continue;
		d = mpi_rings_peer_desc(r, p);
		if (!d)
			return -EPROTO;
		ep.qpn = (uint32_t)le_get(b, 4);
		ep.psn = (uint32_t)le_get(b + 4, 4);
		ep.lid = (uint16_t)le_get(b + 8, 2);
		ep.mtu = b[10];
		ep.port = vfgx_rdma_dev_port(v->dev);
		memcpy(ep.gid, d->gid, 16);
		if (ep.qpn != d->qpn || !ep.qpn)
			return vfgx_set_error(r->ctx, -EPROTO,
					      "mpi rings: rank %d's ring descriptor names QP %u but its endpoint QP %u",
					      p, d->qpn, ep.qpn);
		ret = vfgx_rdma_qp_connect(vp->qp, &ep);
		if (ret)
			return ret;
		ret = vfgx_channel_open(vp->qp, d, vp->stage_mr, &vp->ch);
		if (ret)
			return ret;
		ret = vfgx_channel_ring_init(vp->ch, r->ring_size);
		if (ret)
			return ret;
		vp->inner = vfgx_channel_ring(vp->ch)->tr;
		rr->owner = r;
		rr->target = p;
		rr->req = MPI_REQUEST_NULL;
		rr->base = d->addr;
		rr->size = d->size;
		if (vfgx_ring_producer_init(&rr->prod, &tr, 0, r->ring_size, d->state_off))
			return vfgx_set_error(r->ctx, -EPROTO,
					      "mpi rings: rank %d's ring descriptor cannot hold the ring", p);
	}
	return 0;
}

int mpi_verbs_open(struct vfgx_mpi_rings *r, const char *dev_name)
{
	struct vfgx_eba_desc *descs = calloc((size_t)r->size, sizeof(*descs));
	uint8_t *eps = calloc((size_t)r->size, 2 * EP_LEN);
	int ret;

	r->verbs = calloc(1, sizeof(*r->verbs));
	if (r->verbs)
		r->verbs->peer = calloc((size_t)r->size, sizeof(*r->verbs->peer));
	if (!descs || !eps || !r->verbs || !r->verbs->peer) {
		/* the others are about to wait in the collectives */
		vfgx_set_error(r->ctx, -ENOMEM, "mpi rings: out of memory");
		MPI_Abort(r->comm, 1);
	}
	ret = setup_local(r, dev_name, descs, eps);
	if (!mpi_rings_agree(r->comm, ret == 0)) {
		if (!ret)
			ret = vfgx_set_error(r->ctx, -EPROTO,
					     "mpi rings: another rank could not set up its verbs rings");
		goto out;
	}
	ret = vfgx_eba_exchange_mpi(r->ctx, r->comm, descs, (uint16_t)(r->size - 1),
				    &r->table, vfgx_now_ns());
	if (ret < 0)
		goto out;
	/* what each rank's QP for us needs of ours; eps[p] in, eps[p] out */
	if (MPI_Alltoall(MPI_IN_PLACE, EP_LEN, MPI_BYTE, eps, EP_LEN, MPI_BYTE,
			 r->comm) != MPI_SUCCESS) {
		ret = vfgx_set_error(r->ctx, -EIO, "mpi rings: MPI_Alltoall of the QP endpoints failed");
		goto out;
	}
	ret = connect_peers(r, eps);
	/* nobody writes before every QP is ready to receive */
	if (!mpi_rings_agree(r->comm, ret == 0) && !ret)
		ret = vfgx_set_error(r->ctx, -EPROTO,
				     "mpi rings: another rank could not connect its verbs rings");
out:
	free(descs);
	free(eps);
	if (ret)
		mpi_verbs_close(r);
	return ret;
}

int mpi_verbs_fence(struct vfgx_mpi_rings *r)
{
	int err = 0;

	for (int p = 0; p < r->size; p++) {
		struct verbs_peer *vp = &r->verbs->peer[p];
		/* each channel retires its own unsignaled writes */
		int ret = vp->ch ? vfgx_channel_fence(vp->ch, 10000) : 0;

		if (!ret && vp->zc)
			ret = vfgx_channel_fence(vp->zc, 10000);
		if (ret && !err)
			err = ret;
	}
	return err;
}

static void drop_user(struct mpi_verbs *v, int size)
{
	for (int p = 0; p < size; p++) {
		vfgx_channel_close(v->peer[p].zc); /* fences it */
		v->peer[p].zc = NULL;
	}
	if (v->user_mr)
		vfgx_rdma_dereg(v->user_mr);
	v->user_mr = NULL;
	v->user = NULL;
	v->user_len = 0;
}

int mpi_verbs_register(struct vfgx_mpi_rings *r, void *addr, size_t len)
{
	struct mpi_verbs *v = r->verbs;
	int ret;

	drop_user(v, r->size);
	if (!addr || !len)
		return 0;
	ret = vfgx_rdma_reg_mem(v->dev, addr, len, 0, &v->user_mr);
	if (ret)
		return ret;
	v->user = addr;
	v->user_len = len;
	for (int p = 0; p < r->size; p++) {
		struct verbs_peer *vp = &v->peer[p];

		if (p == r->rank)
			continue;
		ret = vfgx_channel_open(vp->qp, vfgx_channel_remote(vp->ch), v->user_mr, &vp->zc);
		if (!ret)
			ret = vfgx_channel_ring_init(vp->zc, r->ring_size);
		if (ret) {
			drop_user(v, r->size);
			return ret;
		}
		vp->zc_inner = vfgx_channel_ring(vp->zc)->tr;
	}
	return 0;
}

void mpi_verbs_close(struct vfgx_mpi_rings *r)
{
	struct mpi_verbs *v = r->verbs;

	if (!v)
		return;
	if (v->peer)
		drop_user(v, r->size);
	for (int p = 0; v->peer && p < r->size; p++) {
		struct verbs_peer *vp = &v->peer[p];

		vfgx_channel_close(vp->ch);
		vfgx_rdma_qp_destroy(vp->qp);
		if (vp->stage_mr)
			vfgx_rdma_dereg(vp->stage_mr);
		free(vp->stage);
	}
	if (v->mr)
		vfgx_rdma_dereg(v->mr);
	free(r->mem);
	r->mem = NULL;
	vfgx_rdma_dev_close(v->dev);
	free(v->peer);
	free(v);
	r->verbs = NULL;
}

const char *mpi_verbs_dev_name(const struct vfgx_mpi_rings *r)
{
	return r->verbs ? vfgx_rdma_dev_name(r->verbs->dev) : NULL;
}
