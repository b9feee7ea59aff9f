/* vfgx/socket.h - what the socket backend (kernel UDP and TCP) negotiated
 * with the kernel for an open port: offloads, buffer sizes, connections. */
#ifndef VFGX_SOCKET_H
#define VFGX_SOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

/* TCP records on the wire: a 4-byte big-endian payload length, then the
 * payload.  The pipeline sees one payload-only packet per record; its
 * flow is the handle of the connection it came from (slot and
 * generation, never 0), valid until that connection closes: tx with it
 * goes back on that connection only, or fails with -ENOTCONN once it is
 * gone.  A client's tx ignores flow (it has one connection). */
#define VFGX_SOCKET_REC_HLEN 4

/* Typed options (vfgx_port_conf.backend_opts; YAML: interfaces[].socket).
 * Defaults in brackets.  The struct may grow at the end: argsz. */
enum vfgx_socket_role {
	VFGX_SOCKET_SERVER = 0, /* bind (UDP) or listen (TCP) */
	VFGX_SOCKET_CLIENT = 1, /* connect */
};

struct vfgx_socket_opts {
	struct vfgx_backend_opts hdr; /* argsz, backend "socket": vfgx_socket_opts_default sets both */
	uint32_t role;               /* [server] enum vfgx_socket_role */
	const char *uri;             /* [NULL: the port's address] udp://ADDR:PORT or tcp://ADDR:PORT */
	uint32_t rcvbuf, sndbuf;     /* [0: the kernel's] bytes, ..2^30 */
	uint32_t max_record;         /* [65536] TCP record payload, 1..2^30 */
	uint32_t buf_size, num_bufs; /* [0: by protocol] rx pool of the port */
	uint32_t connect_timeout_ms; /* [5000] 1..600000 */
	bool gro, gso;               /* [true] UDP offloads when the kernel has them */
	bool nodelay;                /* [true] TCP_NODELAY */
	int8_t end_on_close;         /* [-1: client yes, server no] 0 or 1 */
	uint32_t max_conns;          /* [64] TCP server: connections per rx queue, 1..4096 */
	uint32_t idle_timeout_ms;    /* [60000] TCP server: close a connection that sent no whole record
				      * (and was sent no whole burst) this long; bytes alone do not count; 0 never */
	uint32_t record_timeout_ms;  /* [10000] TCP server: close a connection whose record does not arrive
				      * whole this long after it got its rx buffer; 0 never */
	uint32_t max_staged_records; /* [0: half the rx pool's buffers] TCP server: records still
				      * arriving that may hold an rx buffer at once, per rx queue */
};

/* The defaults and the header; a loaded config has the interfaces[].socket
 * section parsed into these at load (vfgx_iface_config.backend_opts). */
void vfgx_socket_opts_default(struct vfgx_socket_opts *o);

struct vfgx_socket_info {
	bool tcp;          /* false: UDP */
	bool server;       /* role: server (bind/listen) or client (connect) */
	bool gro;          /* UDP_GRO enabled on the rx sockets */
	bool gso;          /* UDP_SEGMENT used on tx */
	uint16_t port;     /* bound or connected port (server: actual, so
			    * port 0 in the URI picks a free one) */
	uint32_t rcvbuf;   /* SO_RCVBUF the kernel granted (bytes, as set) */
	uint32_t sndbuf;
	uint32_t conns;    /* TCP: connections open now, all queues */
	uint32_t closed;   /* TCP: connections closed so far (all causes) */
	uint64_t refused;  /* TCP server: connections closed at once because
			    * max_conns were open */
	uint64_t idle_closed; /* TCP server: closed after idle_timeout_ms */
	uint64_t gro_coalesced; /* UDP: datagrams received inside GRO batches */
	uint64_t gso_sent;      /* UDP: datagrams sent inside GSO batches */
};

/* -EINVAL when port is not a socket-backend port. */
int vfgx_socket_info(vfgx_port *port, struct vfgx_socket_info *info);

/* TCP counters added after vfgx_socket_info's layout was fixed (the ABI):
 * set argsz = sizeof(struct vfgx_socket_tcp_stats) before the call; an
 * older or newer struct gets the fields both know (the rest zero). */
struct vfgx_socket_tcp_stats {
	uint32_t argsz;
	uint32_t staged;       /* rx buffers held now by records still arriving
				* (all queues; each queue at most max_staged_records) */
	uint64_t slow_closed;  /* TCP server: connections closed by
				* record_timeout_ms (a record held a buffer
				* that long; the record counted as truncated) */
};

/* 0, or -EINVAL when port is not a socket-backend port or argsz is below
 * two words. */
int vfgx_socket_tcp_stats(vfgx_port *port, struct vfgx_socket_tcp_stats *st);

/* Sleep until rx queue q has something to read (a datagram, a connection,
 * stream bytes) or timeout_ms passes (-1: no limit): 1 ready, 0 timed out,
 * negative errno.  For callers that would rather block than poll, like a
 * blocking recvfrom(); UDP with GRO, and TCP with one connection, receive
 * while they wait (kept for the next rx_burst).  A TCP server blocked on
 * its one connection sees new clients on the next rx_burst.  Same thread
 * as the queue's rx_burst. */
int vfgx_socket_wait(vfgx_port *port, uint16_t q, int timeout_ms);

/* TCP: a partial write leaves the tail of accepted records in the port; it
 * goes out on the next tx_burst or rx_burst of the queue, or at close.
 * This pushes it now and returns the bytes still waiting (0: all sent). */
size_t vfgx_socket_tx_pending(vfgx_port *port, uint16_t q);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
