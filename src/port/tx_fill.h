/* tx_fill.h - frames written straight into a port's tx buffers: a sender
 * that builds or copies each frame anyway (vfgx send from the loopback
 * replay source) writes it into the buffer the port sends from (a DPDK
 * mbuf), in place of handing over a frame the port copies.  Reserve
 * buffers, write frames into them, submit: like libxdp's xsk_ring_prod
 * reserve and submit.  Backends without it answer -ENOTSUP. */
#ifndef VFGX_PORT_TX_FILL_H
#define VFGX_PORT_TX_FILL_H

#include <vfgx/port.h>

/* n empty tx buffers of queue q (fewer when the port has no more), their
 * data addresses in bufs[], each room bytes: those reserved and not yet
 * sent come first, as the caller left them.  The count, or < 0. */
int vfgx_port_tx_reserve(vfgx_port *port, uint16_t q, void **bufs, uint16_t n,
			 uint32_t *room);
/* Send the first n reserved buffers, lens[i] bytes each: how many the port
 * took (a prefix).  Those it did not take stay reserved, first, with their
 * frames, for the next submit; buffers reserved past n stay reserved. */
int vfgx_port_tx_submit(vfgx_port *port, uint16_t q, const uint32_t *lens, uint16_t n);

#endif
