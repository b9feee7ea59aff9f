/* loopback_replay.h - for a consumer that reads every frame of the
 * loopback replay source on its rx thread (vfgx send copies each one into
 * a tx buffer, or the kernel does): the sequences are advanced there. */
#ifndef VFGX_PORT_LOOPBACK_REPLAY_H
#define VFGX_PORT_LOOPBACK_REPLAY_H

#include <vfgx/port.h>

/* Host-memory replay queues of port stop their rewriting thread: from
 * now on rx_burst advances each frame's sequence (and UDP checksum) by one
 * lap as it hands the frame out again, on the calling thread, where the
 * frame is read next anyway.  Queues not in replay mode or with GPU frames
 * stay as they are.  Call before the first rx_burst; 0, -EINVAL when port
 * is not a loopback port, -EBUSY once frames were handed out. */
int vfgx_loopback_replay_inline(vfgx_port *port);

/* Copy mode, for a consumer that writes frames straight into its own
 * buffers (vfgx send into DPDK mbufs): no frame is handed out; each one is
 * copied into the caller's buffer with its lap's sequence and UDP checksum
 * written in the copy, so the frames in the pool are only read and no
 * packet descriptor is made.  Every rx queue of port must replay host
 * frames of at most room bytes, and none may have handed out frames; the
 * rewriting threads stop.  0, or -ENOTSUP (nothing changed) when port is
 * not such a loopback port, -EBUSY once frames were handed out. */
int vfgx_loopback_replay_copy_mode(vfgx_port *port, uint32_t room);

/* Queue q's next frames (at most n) copied into dst[i] (room bytes each),
 * their lengths into lens[i], in the order and with the sequences rx_burst
 * would hand them out, counted as received.  The number copied: 0 when
 * none is due now (the generator's rate) or the queue is done
 * (vfgx_port_rx_done), < 0 on an error. */
int vfgx_loopback_replay_copy(vfgx_port *port, uint16_t q, void *const *dst, uint32_t room,
			      uint32_t *lens, uint16_t n);

#endif
