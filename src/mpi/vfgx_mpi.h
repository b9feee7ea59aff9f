/* vfgx_mpi.h - libvfgx_mpi: the optional MPI part of VectorFlow-GX (meson
 * feature `mpi`).  libvfgx itself never links MPI; an application that is
 * launched by mpirun/srun links this small library too.  See
 * docs/scale-out.md. */
#ifndef VFGX_MPI_H
#define VFGX_MPI_H

#include <stdint.h>

#include <mpi.h>

#include <vfgx/core.h>
#include <vfgx/eba.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)

/* Bytes each rank contributes to the one MPI_Allgather: an 8-byte header
 * (status i32 | frame length u32, little-endian) and one discovery frame
 * (vfgx/eba.h) padded to its largest size. */
#define VFGX_MPI_BLOCK_LEN (8 + VFGX_EBA_FRAME_HDR_LEN + \
			    VFGX_EBA_FRAME_MAX_DESCS * VFGX_EBA_DESC_LEN)
/* The node id a rank's descriptors get when the caller leaves it 0. */
#define VFGX_MPI_NODE_ID(rank) (0x4D50490000000000ull | ((uint64_t)(rank) + 1))

/*
 * Exchange every rank's exposed-buffer descriptors with one collective
 * (MPI_Allgather over comm; every rank of comm must call it).
 *
 * Each rank encodes its nb_local descriptors (0: one CTRL presence
 * descriptor with a 30 s lease; at most VFGX_EBA_FRAME_MAX_DESCS, all of
 * one node id; node_id 0 becomes VFGX_MPI_NODE_ID(rank)) as a discovery
 * frame; the others' frames are decoded with vfgx_eba_frame_decode (the
 * decoder and checks of raw-Ethernet discovery) and entered in peers with
 * vfgx_eba_peers_update at now_ns, keyed by (node id, buffer id) with
 * their leases: a caller that repeats the exchange renews them, and
 * vfgx_eba_peers_expire drops what was not renewed in time.  The rank's
 * own frame is not entered.
 *
 * Errors are agreed: every rank first joins one MPI_Allreduce saying
 * whether it can take part (its arguments, its descriptors, its memory),
 * so a rank with NULL arguments, a bad count or bad descriptors returns
 * its own -EINVAL and every other rank -ECOMM naming the lowest such rank
 * and its error, instead of waiting for it in a collective it skipped.
 * Returns the number of peer ranks entered (size - 1), or -errno:
 * -EINVAL (bad local arguments or descriptors, a peer's frame failing a
 * check, two ranks with one node id), -ECOMM (another rank reported its
 * own error), -ENOSPC (peer table full), -ENOMEM (no memory for the
 * receive buffer, size * VFGX_MPI_BLOCK_LEN), -EIO (MPI error).  Detail on
 * ctx.
 */
int vfgx_eba_exchange_mpi(vfgx_ctx *ctx, MPI_Comm comm,
			  const struct vfgx_eba_desc *local, uint16_t nb_local,
			  struct vfgx_eba_peer_table *peers, uint64_t now_ns);

/*
 * Message rings between the ranks of comm: every rank exposes one ring per
 * peer (records from that peer only), publishes them as RX descriptors
 * (buffer id = the peer allowed to write, state word after the ring)
 * through vfgx_eba_exchange_mpi, and writes to each peer's ring for it with
 * the ring algorithm of vfgx/eba.h, bounds checked against the peer's
 * descriptor before anything is issued.  Two transports:
 *
 * - VERBS: vfgx's own RDMA channels (vfgx/eba.h vfgx_channel_*).  The
 *   rings are registered with the RDMA device, each rank has one RC queue
 *   pair per peer, and the descriptors carry the ring's address and rkey,
 *   the QP number and the GID (the PSN, MTU and LID go with one
 *   MPI_Alltoall); records are RDMA WRITEs (payload and header as one post
 *   list), the head word an RDMA READ.  MPI only launches and connects.
 * - WINDOW: one MPI window per rank, addr = the ring's displacement in it;
 *   records by MPI_Put, the head word by MPI_Rget.  Which wire that is is
 *   Open MPI's choice (osc sm between ranks of one node, osc rdma/ucx
 *   across nodes); rkey and qpn are 0.
 * - AUTO: VERBS when every rank can open the RDMA device (rdma_dev, or the
 *   first one) and its port is active, else WINDOW.
 *
 * At most VFGX_EBA_FRAME_MAX_DESCS + 1 ranks (one descriptor per peer in
 * one frame).  Not thread-safe: one thread per rank.
 */
typedef struct vfgx_mpi_rings vfgx_mpi_rings;

enum vfgx_mpi_rings_transport {
	VFGX_MPI_RINGS_AUTO = 0,
	VFGX_MPI_RINGS_WINDOW = 1,
	VFGX_MPI_RINGS_VERBS = 2,
};

/* Collective.  ring_size: data bytes per ring, a power of two >= 4096.
 * rdma_dev: a verbs device or netdev name ("rxe0", "mlx5_0"), NULL for
 * the first device; used by VERBS and AUTO.  0 or -errno (detail on ctx);
 * errors are agreed: every rank returns one.  VERBS in a build without
 * RDMA is -EOPNOTSUPP. */
int vfgx_mpi_rings_open_transport(vfgx_ctx *ctx, MPI_Comm comm, uint64_t ring_size,
				  enum vfgx_mpi_rings_transport transport,
				  const char *rdma_dev, vfgx_mpi_rings **out);
/* The same with the WINDOW transport. */
int vfgx_mpi_rings_open(vfgx_ctx *ctx, MPI_Comm comm, uint64_t ring_size,
			vfgx_mpi_rings **out);
/* Collective: every rank stops using the rings, then they go. */
void vfgx_mpi_rings_close(vfgx_mpi_rings *r);
/* The transport chosen at open (never AUTO), and for VERBS the device's
 * name (NULL otherwise). */
enum vfgx_mpi_rings_transport vfgx_mpi_rings_transport(const vfgx_mpi_rings *r);
const char *vfgx_mpi_rings_rdma_dev(const vfgx_mpi_rings *r);
/* Append one record (len <= vfgx_ring_max_payload(ring_size)) to peer's
 * ring for this rank.  0; -EAGAIN when that ring is full (drain your own
 * rings, then retry); -EINVAL for a bad peer; -EMSGSIZE; -ERANGE when an
 * offset falls outside the peer's descriptor; -EIO for an MPI error; a
 * verbs error (a failed completion: -EACCES, -ETIMEDOUT, ...). */
int vfgx_mpi_rings_send(vfgx_mpi_rings *r, int peer, const void *msg,
			uint32_t len);
/* The next record from peer in this rank's ring for it: 1 with *msg and
 * *len (valid until release), 0 when none yet, or the ring's error
 * (-EBADMSG torn, -EPROTO). */
int vfgx_mpi_rings_peek(vfgx_mpi_rings *r, int peer, const void **msg,
			uint32_t *len);
void vfgx_mpi_rings_release(vfgx_mpi_rings *r, int peer);
/* Wait until every record sent has been released by its consumer, while
 * releasing nothing of ours: call only when the peers drain on their own.
 * 0 or -errno. */
int vfgx_mpi_rings_flush(vfgx_mpi_rings *r);
/* Sends whose message lies in [addr, addr + len) go without the copy into
 * the staging mirror: with the verbs transport that memory is registered
 * with the RDMA device and the WRITEs read it in place (the window
 * transport ignores the call).  So the bytes of a record sent from there
 * must not change until its consumer released it: vfgx_mpi_rings_flush()
 * before changing or freeing them, and before registering another region
 * (one at a time) or dropping this one (NULL, 0).  Not collective.
 * 0 or -errno (detail on the ctx of the open). */
int vfgx_mpi_rings_register(vfgx_mpi_rings *r, void *addr, size_t len);
/* The peer table the exchange filled (every peer's ring descriptors). */
const struct vfgx_eba_peer_table *vfgx_mpi_rings_peers(const vfgx_mpi_rings *r);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
