/* rings_internal.h - what rings.c (MPI windows, the common part) and
 * rings_verbs.c (vfgx's own RDMA channels) share about vfgx_mpi_rings. */
#ifndef VFGX_MPI_RINGS_INTERNAL_H
#define VFGX_MPI_RINGS_INTERNAL_H

#include "vfgx_mpi.h"

#define RING_LEASE_S 3600 /* the job's lifetime bounds them; see scale-out.md */

/* One peer: the producer of our records into its ring for us, and the
 * consumer of its records in our ring for it. */
struct remote_ring {
	struct vfgx_mpi_rings *owner;
	int target;
	uint64_t base, size;   /* from the peer's descriptor */
	MPI_Request req;       /* window: the head word read in flight */
	uint8_t word[8];
	struct vfgx_ring_producer prod;
	struct vfgx_ring_consumer cons; /* our ring for records from target */
};

struct mpi_verbs; /* rings_verbs.c */

struct vfgx_mpi_rings {
	MPI_Comm comm;
	MPI_Win win;           /* window transport; MPI_WIN_NULL otherwise */
	uint8_t *mem;          /* this rank's rings: [size] x stride */
	uint64_t ring_size, stride;
	int rank, size;
	enum vfgx_mpi_rings_transport transport;
	struct remote_ring *peer; /* [size], [rank] unused */
	struct vfgx_eba_peer_table table;
	struct mpi_verbs *verbs;  /* verbs transport; NULL otherwise */
	vfgx_ctx *ctx;
};

/* Our ring for records from peer p at mem + p * stride: consumer set up. */
int mpi_rings_consumer_init(struct vfgx_mpi_rings *r, int p);
/* Peer p's ring for us as p published it, checked; NULL after a message. */
const struct vfgx_eba_desc *mpi_rings_peer_desc(struct vfgx_mpi_rings *r, int p);
/* The descriptor of our ring for peer p (addr/rkey/qpn/gid left to the
 * transport). */
void mpi_rings_local_desc(const struct vfgx_mpi_rings *r, int p,
			  struct vfgx_eba_desc *d);
/* Every rank's ok, agreed: 1 when all are. */
int mpi_rings_agree(MPI_Comm comm, int ok);

#if VFGX_MPI_VERBS
/* 1 when this rank can open dev_name (NULL: the first device) with an
 * active port; quiet otherwise. */
int mpi_verbs_usable(vfgx_ctx *ctx, const char *dev_name);
/* Collective: r's comm/rank/size/ring_size/stride set; allocates and
 * registers r->mem, one RC QP per peer, exchanges descriptors and QP
 * endpoints, connects, sets up r->peer[].  0 or -errno (agreed). */
int mpi_verbs_open(struct vfgx_mpi_rings *r, const char *dev_name);
/* After the closing barrier: QPs, registrations and memory go. */
void mpi_verbs_close(struct vfgx_mpi_rings *r);
/* vfgx_mpi_rings_register for the verbs transport. */
int mpi_verbs_register(struct vfgx_mpi_rings *r, void *addr, size_t len);
/* Wait until every WRITE posted has completed.  0 or -errno. */
int mpi_verbs_fence(struct vfgx_mpi_rings *r);
const char *mpi_verbs_dev_name(const struct vfgx_mpi_rings *r);
#endif

#endif
