/* exchange.c - vfgx_eba_exchange_mpi: every rank's exposed-buffer
 * descriptors to every rank with one MPI_Allgather, decoded and checked by
 * the same code as raw-Ethernet discovery (src/eba/desc.c, peers.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vfgx_mpi.h"

#define DEFAULT_LEASE_S 30

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* This rank's block: 0 and the encoded frame, or the error and no frame. */
static int encode_block(vfgx_ctx *ctx, int rank,
			const struct vfgx_eba_desc *local, uint16_t nb_local,
			uint8_t *block)
{
	struct vfgx_eba_frame *f;
	int len = 0;

	memset(block, 0, VFGX_MPI_BLOCK_LEN);
	f = calloc(1, sizeof(*f));
	if (!f) {
		len = vfgx_set_error(ctx, -ENOMEM, "mpi exchange: out of memory");
		goto out;
	}
	if (nb_local > VFGX_EBA_FRAME_MAX_DESCS) {
		len = vfgx_set_error(ctx, -EINVAL,
				     "mpi exchange: %u descriptors, at most %d per rank",
				     nb_local, VFGX_EBA_FRAME_MAX_DESCS);
		goto out;
	}
	if (nb_local == 0) {
		f->desc[0].type = VFGX_EBA_CTRL;
		f->desc[0].state_off = VFGX_EBA_NO_STATE;
		f->desc[0].lease_s = DEFAULT_LEASE_S;
		f->count = 1;
	} else {
		memcpy(f->desc, local, nb_local * sizeof(*local));
		f->count = nb_local;
	}
	f->node_id = f->desc[0].node_id ? f->desc[0].node_id : VFGX_MPI_NODE_ID(rank);
	for (uint16_t i = 0; i < f->count; i++) {
		if (!f->desc[i].node_id)
			f->desc[i].node_id = f->node_id;
		if (f->desc[i].node_id != f->node_id) {
			len = vfgx_set_error(ctx, -EINVAL,
					     "mpi exchange: descriptor %u has node id %#llx, descriptor 0 %#llx (one node id per rank)",
					     i, (unsigned long long)f->desc[i].node_id,
					     (unsigned long long)f->node_id);
			goto out;
		}
	}
	len = vfgx_eba_frame_encode(ctx, f, block + 8, VFGX_MPI_BLOCK_LEN - 8);
out:
	free(f);
	if (len < 0) {
		put32(block, (uint32_t)len);
		return len;
	}
	put32(block + 4, (uint32_t)len);
	return 0;
}

/* Decode rank r's block into f with every check; 0 or -errno. */
static int decode_block(vfgx_ctx *ctx, int r, const uint8_t *block,
			struct vfgx_eba_frame *f)
{
	int32_t status = (int32_t)get32(block);
	uint32_t len = get32(block + 4);
	int ret;

	if (status)
		return vfgx_set_error(ctx, -ECOMM,
				      "mpi exchange: rank %d could not publish its descriptors: %s",
				      r, vfgx_strerror(status));
	if (len > VFGX_MPI_BLOCK_LEN - 8)
		return vfgx_set_error(ctx, -EINVAL,
				      "mpi exchange: rank %d: frame length %u beyond the block", r, len);
	ret = vfgx_eba_frame_decode(ctx, block + 8, len, f);
	if (ret < 0)
		return vfgx_set_error(ctx, -EINVAL, "mpi exchange: rank %d: %s", r,
				      vfgx_last_error(ctx));
	return 0;
}

/* Every rank learns whether every rank can take part, before the exchange:
 * the lowest rank with a local error (bad arguments, descriptors that do
 * not encode, no memory) and its code, through one MPI_Allreduce that every
 * rank joins whatever its arguments.  0 when all can go on; else this
 * rank's own error (detail already on ctx) or -ECOMM naming that rank. */
static int agree(vfgx_ctx *ctx, MPI_Comm comm, int rank, int size, int own_err)
{
	struct {
		int rank;
		int err;
	} in = { own_err ? rank : size, own_err }, worst;

	if (MPI_Allreduce(&in, &worst, 1, MPI_2INT, MPI_MINLOC, comm) != MPI_SUCCESS)
		return vfgx_set_error(ctx, -EIO, "mpi exchange: MPI_Allreduce failed");
	if (worst.rank >= size)
		return 0;
	if (own_err)
		return own_err;
	return vfgx_set_error(ctx, -ECOMM,
			      "mpi exchange: rank %d could not publish its descriptors: %s",
			      worst.rank, vfgx_strerror(worst.err));
}

int vfgx_eba_exchange_mpi(vfgx_ctx *ctx, MPI_Comm comm,
			  const struct vfgx_eba_desc *local, uint16_t nb_local,
			  struct vfgx_eba_peer_table *peers, uint64_t now_ns)
{
	struct vfgx_eba_frame *f = NULL;
	uint8_t *all = NULL, mine[VFGX_MPI_BLOCK_LEN];
	uint64_t *ids = NULL;
	int rank, size, ret, own_err;

	if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
	    MPI_Comm_size(comm, &size) != MPI_SUCCESS)
		return vfgx_set_error(ctx, -EIO, "mpi exchange: not a valid communicator");
	/* a local error still joins the agreement, so no rank waits for ever
	 * in a collective this one skipped */
	if (!peers || (nb_local && !local))
		own_err = vfgx_set_error(ctx, -EINVAL,
					 "mpi exchange: %s (pass a peer table and nb_local descriptors, or nb_local 0)",
					 !peers ? "no peer table" : "descriptors NULL with a count above 0");
	else
		own_err = encode_block(ctx, rank, local, nb_local, mine);
	if (!own_err) {
		all = malloc((size_t)size * VFGX_MPI_BLOCK_LEN);
		if (!all)
			own_err = vfgx_set_error(ctx, -ENOMEM,
						 "mpi exchange: out of memory for %d blocks", size);
	}
	ret = agree(ctx, comm, rank, size, own_err);
	if (ret)
		goto out;
	if (MPI_Allgather(mine, VFGX_MPI_BLOCK_LEN, MPI_BYTE, all,
			  VFGX_MPI_BLOCK_LEN, MPI_BYTE, comm) != MPI_SUCCESS) {
		ret = vfgx_set_error(ctx, -EIO, "mpi exchange: MPI_Allgather failed");
		goto out;
	}
	f = calloc(1, sizeof(*f));
	ids = calloc((size_t)size, sizeof(*ids));
	if (!f || !ids) {
		ret = vfgx_set_error(ctx, -ENOMEM, "mpi exchange: out of memory");
		goto out;
	}
	/* every rank checks every frame (its own too), so all agree on errors */
	for (int r = 0; r < size; r++) {
		ret = decode_block(ctx, r, all + (size_t)r * VFGX_MPI_BLOCK_LEN, f);
		if (ret)
			goto out;
		ids[r] = f->node_id;
		for (int q = 0; q < r; q++)
			if (ids[q] == ids[r]) {
				ret = vfgx_set_error(ctx, -EINVAL,
						     "mpi exchange: ranks %d and %d both use node id %#llx",
						     q, r, (unsigned long long)ids[r]);
				goto out;
			}
	}
	for (int r = 0; r < size; r++) {
		if (r == rank)
			continue;
		decode_block(ctx, r, all + (size_t)r * VFGX_MPI_BLOCK_LEN, f);
		for (uint16_t i = 0; i < f->count; i++) {
			ret = vfgx_eba_peers_update(peers, &f->desc[i], f->desc[i].mac, now_ns);
			if (ret < 0) {
				ret = vfgx_set_error(ctx, ret,
						     "mpi exchange: peer table full (capacity %u) at rank %d's descriptors",
						     peers->cap, r);
				goto out;
			}
		}
	}
	ret = size - 1;
out:
	free(ids);
	free(f);
	free(all);
	return ret;
}
