/* rings.c - one exposed message ring per peer between MPI ranks: the ring
 * algorithm of src/eba/ring.c over MPI one-sided operations (MPI_Put for
 * records, MPI_Rget for the consumer's head word) in one window per rank,
 * the rings published and checked through vfgx_eba_exchange_mpi. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "vfgx_mpi.h"

#define RING_LEASE_S 3600 /* the job's lifetime bounds them; see scale-out.md */

/* The producer's view of one peer's ring for us. */
struct remote_ring {
	struct vfgx_mpi_rings *owner;
	int target;
	uint64_t base, size;   /* from the peer's descriptor */
	MPI_Request req;       /* the head word read in flight */
	uint8_t word[8];
	struct vfgx_ring_producer prod;
	struct vfgx_ring_consumer cons; /* our ring for records from target */
};

struct vfgx_mpi_rings {
	MPI_Comm comm;
	MPI_Win win;
	uint8_t *mem;          /* this rank's window */
	uint64_t ring_size, stride;
	int rank, size;
	struct remote_ring *peer; /* [size], [rank] unused */
	struct vfgx_eba_peer_table table;
	vfgx_ctx *ctx;
};

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

/* Our ring for records from peer p: its place in our window. */
static void local_desc(const struct vfgx_mpi_rings *r, int p,
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

static int connect_peers(struct vfgx_mpi_rings *r)
{
	struct vfgx_ring_transport tr = { tr_write, tr_read_start, tr_read_poll,
					  NULL, tr_write_rec };

	for (int p = 0; p < r->size; p++) {
		struct remote_ring *rr = &r->peer[p];
		const struct vfgx_eba_peer *e;

		if (p == r->rank)
			continue;
		rr->owner = r;
		rr->target = p;
		rr->req = MPI_REQUEST_NULL;
		/* the consumer side: records from p land in our window */
		if (vfgx_ring_consumer_init(&rr->cons, r->mem + (size_t)p * r->stride,
					    r->ring_size,
					    (VFGX_ATOMIC_U64 *)(r->mem + (size_t)p * r->stride +
								r->ring_size)))
			return vfgx_set_error(r->ctx, -EINVAL, "mpi rings: consumer init");
		/* the producer side: p's ring for us, as p published it */
		e = vfgx_eba_peers_find(&r->table, VFGX_MPI_NODE_ID(p), (uint32_t)r->rank);
		if (!e || e->desc.type != VFGX_EBA_RX || e->desc.state_off == VFGX_EBA_NO_STATE ||
		    e->desc.size < r->ring_size + 8)
			return vfgx_set_error(r->ctx, -EPROTO,
					      "mpi rings: rank %d published no ring of %llu bytes for rank %d",
					      p, (unsigned long long)r->ring_size, r->rank);
		rr->base = e->desc.addr;
		rr->size = e->desc.size;
		tr.user = rr;
		if (vfgx_ring_producer_init(&rr->prod, &tr, 0, r->ring_size, e->desc.state_off))
			return vfgx_set_error(r->ctx, -EPROTO,
					      "mpi rings: rank %d's ring descriptor cannot hold the ring", p);
	}
	return 0;
}

int vfgx_mpi_rings_open(vfgx_ctx *ctx, MPI_Comm comm, uint64_t ring_size,
			vfgx_mpi_rings **out)
{
	struct vfgx_eba_desc *descs = NULL;
	struct vfgx_mpi_rings *r;
	int ret, n = 0, ok, all_ok;

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
	     r->size - 1 <= VFGX_EBA_FRAME_MAX_DESCS && ring_size < (1ull << 40);
	/* agree before allocating: a bad size is every rank's or none's, but
	 * the rank count limit is checked by all */
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
	if (!all_ok) {
		ret = vfgx_set_error(ctx, -EINVAL,
				     "mpi rings: ring_size must be a power of two >= 4096 and at most %d ranks (got %llu bytes, %d ranks)",
				     VFGX_EBA_FRAME_MAX_DESCS + 1, (unsigned long long)ring_size,
				     r->size);
		goto err;
	}
	if (MPI_Win_allocate((MPI_Aint)(r->stride * (uint64_t)r->size), 1, MPI_INFO_NULL,
			     comm, &r->mem, &r->win) != MPI_SUCCESS) {
		ret = vfgx_set_error(ctx, -ENOMEM, "mpi rings: MPI_Win_allocate of %llu bytes failed",
				     (unsigned long long)(r->stride * (uint64_t)r->size));
		goto err;
	}
	r->peer = calloc((size_t)r->size, sizeof(*r->peer));
	descs = calloc((size_t)r->size, sizeof(*descs));
	ret = vfgx_eba_peers_init(&r->table, (uint32_t)r->size * (uint32_t)r->size + 1);
	if (!r->peer || !descs || ret) {
		/* the others are about to wait in the exchange */
		vfgx_set_error(ctx, -ENOMEM, "mpi rings: out of memory");
		MPI_Abort(comm, 1);
	}
	for (int p = 0; p < r->size; p++)
		if (p != r->rank)
			local_desc(r, p, &descs[n++]);
	MPI_Win_lock_all(MPI_MODE_NOCHECK, r->win);
	ret = vfgx_eba_exchange_mpi(ctx, comm, descs, (uint16_t)n, &r->table, vfgx_now_ns());
	free(descs);
	descs = NULL;
	if (ret < 0)
		goto err;
	ok = connect_peers(r) == 0;
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
	if (!all_ok) {
		if (ok)
			vfgx_set_error(ctx, -EPROTO, "mpi rings: another rank could not connect its rings");
		ret = -EPROTO;
		goto err;
	}
	*out = r;
	return 0;
err:
	free(descs);
	if (r->win != MPI_WIN_NULL) {
		MPI_Win_unlock_all(r->win);
		MPI_Win_free(&r->win);
	}
	vfgx_eba_peers_fini(&r->table);
	free(r->peer);
	free(r);
	return ret;
}

void vfgx_mpi_rings_close(vfgx_mpi_rings *r)
{
	if (!r)
		return;
	for (int p = 0; p < r->size; p++)
		if (p != r->rank && r->peer[p].req != MPI_REQUEST_NULL)
			MPI_Wait(&r->peer[p].req, MPI_STATUS_IGNORE);
	MPI_Win_flush_all(r->win);
	MPI_Barrier(r->comm); /* nobody writes into a window being freed */
	MPI_Win_unlock_all(r->win);
	MPI_Win_free(&r->win);
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
	 * components that need the target to call into MPI) */
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
