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
 * Errors are agreed: a rank whose own descriptors do not encode still
 * takes part and sends its error code, so every rank returns an error
 * naming that rank instead of waiting for it.
 * Returns the number of peer ranks entered (size - 1), or -errno:
 * -EINVAL (bad local descriptors, a peer's frame failing a check, two
 * ranks with one node id), -ECOMM (a peer reported its own error),
 * -ENOSPC (peer table full), -EIO (MPI error).  Detail on ctx.  Out of
 * memory for the receive buffer (size * VFGX_MPI_BLOCK_LEN) is MPI_Abort:
 * the other ranks would wait for this one in the collective.
 */
int vfgx_eba_exchange_mpi(vfgx_ctx *ctx, MPI_Comm comm,
			  const struct vfgx_eba_desc *local, uint16_t nb_local,
			  struct vfgx_eba_peer_table *peers, uint64_t now_ns);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
