/* rings.c - one exposed message ring per peer between MPI ranks: the ring
 * algorithm of src/eba/ring.c over one of two transports chosen at open:
 * vfgx's own RDMA verbs channels (rings_verbs.c) where the ranks have an
 * RDMA device, or MPI one-sided operations in one window per rank (MPI_Put
 * for records, MPI_Rget for the consumer's head word, here); either way
 * the rings are published and checked through vfgx_eba_exchange_mpi. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rings_internal.h"

static int in_bounds(const struct remote_ring *rr, uint64_t off, uint64_t len)
{
	return off <= rr->size && len <= rr->size - off;
}

static int tr_write_rec(void *user, uint64_t off, const void *payload,
			uint32_t len, const void *hdr, bool wake)
{
	struct remote_ring *rr = user;
	MPI_Win win = rr->owner->win;

	(void)wake; /* the consumer polls: no completion to deliver */
	if (!in_bounds(rr, off, (uint64_t)VFGX_RING_HDR + len))
		return -ERANGE;
	if ((len && MPI_Put(payload, (int)len, MPI_BYTE, rr->target,
			    (MPI_Aint)(rr->base + off + VFGX_RING_HDR), (int)len,
			    MPI_BYTE, win) != MPI_SUCCESS) ||
	    MPI_Put(hdr, VFGX_RING_HDR, MPI_BYTE, rr->target,
		    (MPI_Aint)(rr->base + off), VFGX_RING_HDR, MPI_BYTE,
		    win) != MPI_SUCCESS ||
	    /* the ring may reuse payload and hdr on return */
	    MPI_Win_flush_local(rr->target, win) != MPI_SUCCESS)
		return -EIO;
	return 0;
}

static int tr_write(void *user, uint64_t off, const void *src, uint32_t len,
		    bool wake)
{
	struct remote_ring *rr = user;

	(void)wake;
	if (!in_bounds(rr, off, len))
		return -ERANGE;
	if (MPI_Put(src, (int)len, MPI_BYTE, rr->target, (MPI_Aint)(rr->base + off),
		    (int)len, MPI_BYTE, rr->owner->win) != MPI_SUCCESS ||
	    MPI_Win_flush_local(rr->target, rr->owner->win) != MPI_SUCCESS)
		return -EIO;
	return 0;
}

static int tr_read_start(void *user, uint64_t off)
{
	struct remote_ring *rr = user;

	if (!in_bounds(rr, off, 8))
		return -ERANGE;
	if (MPI_Rget(rr->word, 8, MPI_BYTE, rr->target, (MPI_Aint)(rr->base + off),
		     8, MPI_BYTE, rr->owner->win, &rr->req) != MPI_SUCCESS)
		return -EIO;
	return 0;
}

static int tr_read_poll(void *user, void *dst, bool wait)
{
	struct remote_ring *rr = user;
	int done = 0;

	if (wait ? MPI_Wait(&rr->req, MPI_STATUS_IGNORE) != MPI_SUCCESS :
		   MPI_Test(&rr->req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
		return -EIO;
	if (!wait && !done)
		return 0;
	memcpy(dst, rr->word, 8);
	return 1;
}

/* Our ring for records from peer p: its place in our window (the verbs
 * transport puts its address, rkey, QP and GID in). */
void mpi_rings_local_desc(const struct vfgx_mpi_rings *r, int p,
			  struct vfgx_eba_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->node_id = VFGX_MPI_NODE_ID(r->rank);
	d->buffer_id = (uint32_t)p;
	d->type = VFGX_EBA_RX;
	d->addr = (uint64_t)p * r->stride; /* window displacement */
	d->size = r->stride;
	d->state_off = r->ring_size;
	d->lease_s = RING_LEASE_S;
}

int mpi_rings_consumer_init(struct vfgx_mpi_rings *r, int p)
{
	uint8_t *ring = r->mem + (size_t)p * r->stride;

	if (vfgx_ring_consumer_init(&r->peer[p].cons, ring, r->ring_size,
				    (VFGX_ATOMIC_U64 *)(ring + r->ring_size)))
		return vfgx_set_error(r->ctx, -EINVAL, "mpi rings: consumer init");
	return 0;
}

const struct vfgx_eba_desc *mpi_rings_peer_desc(struct vfgx_mpi_rings *r, int p)
{
	const struct vfgx_eba_peer *e =
		vfgx_eba_peers_find(&r->table, VFGX_MPI_NODE_ID(p), (uint32_t)r->rank);

	if (!e || e->desc.type != VFGX_EBA_RX || e->desc.state_off == VFGX_EBA_NO_STATE ||
	    e->desc.size < r->ring_size + 8) {
		vfgx_set_error(r->ctx, -EPROTO,
			       "mpi rings: rank %d published no ring of %llu bytes for rank %d",
			       p, (unsigned long long)r->ring_size, r->rank);
		return NULL;
	}
	return &e->desc;
}

int mpi_rings_agree(MPI_Comm comm, int ok)
{
	int all_ok = 0;

	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
	return all_ok;
}

static int window_connect(struct vfgx_mpi_rings *r)
{
	struct vfgx_ring_transport tr = { tr_write, tr_read_start, tr_read_poll,
					  NULL, tr_write_rec };

	for (int p = 0; p < r->size; p++) {
		struct remote_ring *rr = &r->peer[p];
		const struct vfgx_eba_desc *d;

		if (p == r->rank)
			continue;
		rr->owner = r;
		rr->target = p;
		rr->req = MPI_REQUEST_NULL;
		/* the consumer side: records from p land in our window */
		if (mpi_rings_consumer_init(r, p))
			return -EINVAL;
		/* the producer side: p's ring for us, as p published it */
		d = mpi_rings_peer_desc(r, p);
		if (!d)
			return -EPROTO;
		rr->base = d->addr;
		rr->size = d->size;
		tr.user = rr;
		if (vfgx_ring_producer_init(&rr->prod, &tr, 0, r->ring_size, d->state_off))
			return vfgx_set_error(r->ctx, -EPROTO,
					      "mpi rings: rank %d's ring descriptor cannot hold the ring", p);
	}
	return 0;
}

/* Collective: the rings in one MPI window per rank. */
static int window_open(struct vfgx_mpi_rings *r)
{
	struct vfgx_eba_desc *descs;
	int ret, n = 0;

	if (MPI_Win_allocate((MPI_Aint)(r->stride * (uint64_t)r->size), 1, MPI_INFO_NULL,
			     r->comm, &r->mem, &r->win) != MPI_SUCCESS)
		return vfgx_set_error(r->ctx, -ENOMEM, "mpi rings: MPI_Win_allocate of %llu bytes failed",
				      (unsigned long long)(r->stride * (uint64_t)r->size));
	descs = calloc((size_t)r->size, sizeof(*descs));
	if (!descs) {
		/* the others are about to wait in the exchange */
		vfgx_set_error(r->ctx, -ENOMEM, "mpi rings: out of memory");
		MPI_Abort(r->comm, 1);
	}
	for (int p = 0; p < r->size; p++)
		if (p != r->rank)
			mpi_rings_local_desc(r, p, &descs[n++]);
	MPI_Win_lock_all(MPI_MODE_NOCHECK, r->win);
	ret = vfgx_eba_exchange_mpi(r->ctx, r->comm, descs, (uint16_t)n, &r->table,
				    vfgx_now_ns());
	free(descs);
	if (ret >= 0) {
		ret = window_connect(r);
		if (!mpi_rings_agree(r->comm, ret == 0) && !ret)
			ret = vfgx_set_error(r->ctx, -EPROTO,
					     "mpi rings: another rank could not connect its rings");
	}
	if (ret < 0) {
		MPI_Win_unlock_all(r->win);
		MPI_Win_free(&r->win);
		r->mem = NULL;
		return ret;
	}
	return 0;
}

int vfgx_mpi_rings_open(vfgx_ctx *ctx, MPI_Comm comm, uint64_t ring_size,
			vfgx_mpi_rings **out)
{
	return vfgx_mpi_rings_open_transport(ctx, comm, ring_size, VFGX_MPI_RINGS_WINDOW,
					     NULL, out);
}

/* AUTO: verbs where every rank has a usable RDMA device, else the window. */
static enum vfgx_mpi_rings_transport pick(vfgx_ctx *ctx, MPI_Comm comm,
					  enum vfgx_mpi_rings_transport t,
					  const char *rdma_dev)
{
	if (t != VFGX_MPI_RINGS_AUTO)
		return t;
#if VFGX_MPI_VERBS
	if (mpi_rings_agree(comm, mpi_verbs_usable(ctx, rdma_dev)))
		return VFGX_MPI_RINGS_VERBS;
#else
	(void)ctx;
	(void)comm;
	(void)rdma_dev;
#endif
	return VFGX_MPI_RINGS_WINDOW;
}

int vfgx_mpi_rings_open_transport(vfgx_ctx *ctx, MPI_Comm comm, uint64_t ring_size,
				  enum vfgx_mpi_rings_transport transport,
				  const char *rdma_dev, vfgx_mpi_rings **out)
{
	struct vfgx_mpi_rings *r;
	int ret, ok;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return vfgx_set_error(ctx, -ENOMEM, "mpi rings: out of memory");
	r->ctx = ctx;
	r->comm = comm;
	r->win = MPI_WIN_NULL;
	MPI_Comm_rank(comm, &r->rank);
	MPI_Comm_size(comm, &r->size);
	r->ring_size = ring_size;
	r->stride = ring_size + 64; /* ring, head word, padding */
	ok = ring_size >= 4096 && !(ring_size & (ring_size - 1)) &&
	     r->size - 1 <= VFGX_EBA_FRAME_MAX_DESCS && ring_size < (1ull << 40) &&
	     transport >= VFGX_MPI_RINGS_AUTO && transport <= VFGX_MPI_RINGS_VERBS;
	/* agree before allocating: a bad size is every rank's or none's, but
	 * the rank count limit is checked by all */
	if (!mpi_rings_agree(comm, ok)) {
		ret = vfgx_set_error(ctx, -EINVAL,
				     "mpi rings: ring_size must be a power of two >= 4096, at most %d ranks and transport auto, window or verbs (got %llu bytes, %d ranks, transport %d)",
				     VFGX_EBA_FRAME_MAX_DESCS + 1, (unsigned long long)ring_size,
				     r->size, (int)transport);
		goto err;
	}
	r->peer = calloc((size_t)r->size, sizeof(*r->peer));
	ret = vfgx_eba_peers_init(&r->table, (uint32_t)r->size * (uint32_t)r->size + 1);
	if (!r->peer || ret) {
		/* the others are about to wait in the next collective */
		vfgx_set_error(ctx, -ENOMEM, "mpi rings: out of memory");
		MPI_Abort(comm, 1);
	}
	r->transport = pick(ctx, comm, transport, rdma_dev);
	if (r->transport == VFGX_MPI_RINGS_VERBS) {
#if VFGX_MPI_VERBS
		ret = mpi_verbs_open(r, rdma_dev);
#else
		/* the same library on every rank: every rank says so */
		ret = vfgx_set_error(ctx, -EOPNOTSUPP,
				     "mpi rings: this libvfgx_mpi was built without RDMA verbs (libibverbs-dev, librdmacm-dev at meson setup); use the window transport");
#endif
	} else {
		ret = window_open(r);
	}
	if (ret < 0)
		goto err;
	*out = r;
	return 0;
err:
	vfgx_eba_peers_fini(&r->table);
	free(r->peer);
	free(r);
	return ret;
}

void vfgx_mpi_rings_close(vfgx_mpi_rings *r)
{
	if (!r)
		return;
	if (r->transport == VFGX_MPI_RINGS_VERBS) {
#if VFGX_MPI_VERBS
		/* our WRITEs and reads are done before the barrier; after it
		 * nobody writes into memory being deregistered */
		mpi_verbs_fence(r);
		MPI_Barrier(r->comm);
		mpi_verbs_close(r);
#endif
	} else {
		for (int p = 0; p < r->size; p++)
			if (p != r->rank && r->peer[p].req != MPI_REQUEST_NULL)
				MPI_Wait(&r->peer[p].req, MPI_STATUS_IGNORE);
		MPI_Win_flush_all(r->win);
		MPI_Barrier(r->comm); /* nobody writes into a window being freed */
		MPI_Win_unlock_all(r->win);
		MPI_Win_free(&r->win);
	}
	vfgx_eba_peers_fini(&r->table);
	free(r->peer);
	free(r);
}

static struct remote_ring *peer_of(vfgx_mpi_rings *r, int peer)
{
	return peer < 0 || peer >= r->size || peer == r->rank ? NULL : &r->peer[peer];
}

int vfgx_mpi_rings_send(vfgx_mpi_rings *r, int peer, const void *msg,
			uint32_t len)
{
	struct remote_ring *rr = peer_of(r, peer);

	return rr ? vfgx_ring_send(&rr->prod, msg, len, false) : -EINVAL;
}

int vfgx_mpi_rings_peek(vfgx_mpi_rings *r, int peer, const void **msg,
			uint32_t *len)
{
	struct remote_ring *rr = peer_of(r, peer);

	if (!rr)
		return -EINVAL;
	/* see the peers' puts (unified window model; progress for osc
	 * components that need the target to call into MPI); the verbs
	 * rings' records are memory the NIC wrote, read with acquire loads */
	if (r->win != MPI_WIN_NULL)
		MPI_Win_sync(r->win);
	return vfgx_ring_peek(&rr->cons, msg, len);
}

void vfgx_mpi_rings_release(vfgx_mpi_rings *r, int peer)
{
	struct remote_ring *rr = peer_of(r, peer);

	if (rr)
		vfgx_ring_release(&rr->cons);
}

int vfgx_mpi_rings_flush(vfgx_mpi_rings *r)
{
	for (int p = 0; p < r->size; p++) {
		struct remote_ring *rr = peer_of(r, p);

		if (!rr)
			continue;
		while (rr->prod.cached_head != rr->prod.tail) {
			int ret = vfgx_ring_refresh(&rr->prod);

			if (ret)
				return ret;
		}
	}
	return 0;
}

const struct vfgx_eba_peer_table *vfgx_mpi_rings_peers(const vfgx_mpi_rings *r)
{
	return &r->table;
}

int vfgx_mpi_rings_register(vfgx_mpi_rings *r, void *addr, size_t len)
{
#if VFGX_MPI_VERBS
	if (r->transport == VFGX_MPI_RINGS_VERBS)
		return mpi_verbs_register(r, addr, len);
#endif
	(void)addr;
	(void)len;
	return r->transport == VFGX_MPI_RINGS_VERBS ? -EOPNOTSUPP : 0;
}

enum vfgx_mpi_rings_transport vfgx_mpi_rings_transport(const vfgx_mpi_rings *r)
{
	return r->transport;
}

const char *vfgx_mpi_rings_rdma_dev(const vfgx_mpi_rings *r)
{
#if VFGX_MPI_VERBS
	return mpi_verbs_dev_name(r);
#else
	(void)r;
	return NULL;
#endif
}
