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

#endif
