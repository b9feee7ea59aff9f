/* socket_priv.h - the socket backend's state, shared by its files:
 * socket.c (configuration, set-up, ops), socket_udp.c (datagram fast
 * path), socket_tcp.c (connections and records). */
#ifndef VFGX_SOCKET_PRIV_H
#define VFGX_SOCKET_PRIV_H

#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <vfgx/socket.h>

#include "backend.h"

#define SK_MAX_MSGS 256      /* datagrams per recvmmsg/sendmmsg */
#define SK_GRO_SLOT 65536    /* one coalesced GRO datagram */
#define SK_GRO_SLOTS 16
#define SK_GRO_EMPTY UINT32_MAX /* gro_seg of a zero-length datagram */
#define SK_GSO_MAX_SEGS 64
#define SK_GSO_MAX_BYTES 65000
#define SK_MAX_CONNS 4096    /* max_conns upper bound (per queue) */
#define SK_ACCEPT_NS 1000000ull /* a busy server tries accept() this often */
#define SK_ACCEPT_BATCH 64   /* connections taken per accept round */
#define SK_STAGE 262144      /* TCP receive staging per connection */
#define SK_CMSG 64
#define SK_TX_COPY 2048      /* bursts up to this many bytes go out as one
			      * contiguous send(): cheaper than an iovec */

enum { SK_UDP = 0, SK_TCP = 1 };
enum { SK_SERVER = 0, SK_CLIENT = 1 };

struct sk_conn {
	int fd;
	uint32_t slot;     /* place in sk_queue.conns, fixed for its life */
	uint32_t handle;   /* pkt.flow of its records: slot | generation */
	uint64_t last_ns;  /* accepted, last whole record received or burst
			    * sent whole (idle timeout: bytes do not count) */
	uint64_t rec_ns;   /* the record in cur got its buffer (record_timeout) */
	bool waiting;      /* header read, no buffer yet: the pool is empty or
			    * max_staged_records hold one (not idle: ours) */
	char peer[64];
	/* receive: staged stream bytes and the record being assembled */
	uint8_t *stage;
	uint32_t s_off, s_len;
	uint8_t hdr[VFGX_SOCKET_REC_HLEN];
	uint32_t hdr_got;
	bool in_rec;
	uint8_t *cur;      /* pool buffer, NULL while discarding */
	uint32_t rec_len, got;
	int rcvtimeo_ms;   /* SO_RCVTIMEO now set (0: none) */
	bool short_read;   /* vfgx_socket_wait's recv emptied the socket */
	/* send: bytes accepted but not yet taken by the kernel */
	uint8_t *pend;
	size_t pend_len, pend_off, pend_cap;
	uint8_t txbuf[SK_TX_COPY];
};

struct sk_queue {
	int fd;                 /* UDP socket, TCP listener (server) */
	/* TCP: connection slots never move while a connection lives, so the
	 * handle in a received packet names it and nothing else (see
	 * sk_conn_by_flow); live[] lists the used slots for iteration */
	struct sk_conn **conns; /* max_conns slots, NULL when free */
	uint32_t *live;
	uint32_t *scan;         /* rx: live[] copied for one round */
	uint32_t nb_conns;
	uint32_t rr;            /* TCP: next connection to read */
	uint64_t next_accept_ns; /* when a busy server tries accept() again */
	uint64_t next_idle_ns;  /* next idle sweep */
	bool accept_ready;      /* vfgx_socket_wait saw the listener readable */
	struct pollfd *pfd;     /* vfgx_socket_wait: listener + max_conns */
	bool had_conn;
	uint64_t refused;       /* connections closed at once: max_conns reached */
	uint64_t idle_closed;   /* connections closed by idle_timeout_ms */
	uint64_t slow_closed;   /* connections closed by record_timeout_ms */
	uint32_t staged;        /* pool buffers held by records still arriving */
	uint32_t max_staged;    /* max_staged_records, resolved at open */
	bool own_pool;
	/* UDP rx */
	struct mmsghdr msgs[SK_MAX_MSGS];
	struct iovec iov[SK_MAX_MSGS];
	uint8_t (*cmsg)[SK_CMSG];
	void *bufs[SK_MAX_MSGS];
	/* UDP GRO: coalesced datagrams not yet split into packets */
	uint8_t *gro;
	uint32_t gro_len[SK_GRO_SLOTS], gro_seg[SK_GRO_SLOTS];
	uint32_t gro_n, gro_i, gro_off;
	uint64_t gro_coalesced; /* datagrams that arrived coalesced */
	uint64_t gso_sent;      /* datagrams sent inside GSO batches */
	int rcvtimeo_ms;        /* SO_RCVTIMEO now set, for vfgx_socket_wait */
	/* UDP tx */
	uint8_t *gso_buf;
	uint8_t *txctl;         /* txtime: one SCM_TXTIME cmsg per message */
	uint64_t txt_sent, txt_missed, txt_invalid; /* launch-time counters */
	uint64_t txt_missed_bytes, txt_invalid_bytes;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	struct vfgx_queue_stats st;
};

struct sk_priv {
	int proto, role;
	struct sockaddr_storage addr;
	socklen_t addr_len;
	char uri[VFGX_ADDR_MAX];
	uint32_t rcvbuf, sndbuf, got_rcvbuf, got_sndbuf;
	uint32_t max_record, buf_size, num_bufs, connect_ms;
	uint32_t max_conns, idle_ms, record_ms, max_staged;
	uint32_t slot_bits;     /* low bits of a connection handle: its slot */
	_Atomic uint32_t next_gen; /* port-wide: no handle names two queues */
	bool gro, gso, nodelay, end_on_close;
	bool txtime;            /* launch times on (socket_txtime.c) */
	char txtime_dev[16];    /* the route's device (IFNAMSIZ) */
	uint16_t nb_socks;
	uint16_t bound_port;
	uint32_t closed;
	struct sk_queue q[VFGX_MAX_QUEUES];
};

/* A payload-only packet in pool buffer buf. */
static inline void vfgx_sk_fill(struct vfgx_pkt *p, uint16_t q, void *buf,
				uint32_t len, uint32_t flow, uint64_t now)
{
	p->data = buf;
	p->len = len;
	p->handle = buf;
	p->flow = flow;
	p->ts_ns = now;
	p->queue = q;
	p->flags = VFGX_PKT_PAYLOAD;
}

void vfgx_sk_addr_str(const struct sockaddr_storage *a, char *buf, size_t len);

/* socket_udp.c */
int vfgx_sk_udp_rx_direct(struct vfgx_port *port, uint16_t q,
			  struct vfgx_pkt *pkts, uint16_t max);
int vfgx_sk_udp_rx_gro(struct vfgx_port *port, uint16_t q,
		       struct vfgx_pkt *pkts, uint16_t max);
int vfgx_sk_gro_fill(struct vfgx_port *port, uint16_t q, uint32_t k, int flags);
/* Message i of queue q's sendmmsg array: packet p as its one iovec, no
 * address, no control (the caller adds those it needs). */
static inline struct msghdr *vfgx_sk_tx_msg(struct sk_queue *sq, uint32_t i,
					    const struct vfgx_pkt *p)
{
	struct msghdr *mh = &sq->msgs[i].msg_hdr;

	memset(mh, 0, sizeof(*mh));
	sq->iov[i].iov_base = p->data;
	sq->iov[i].iov_len = p->len;
	mh->msg_iov = &sq->iov[i];
	mh->msg_iovlen = 1;
	return mh;
}

/* sendmmsg of the k messages already in queue q's msgs (non-blocking):
 * how many went (0 when the socket is full or the peer refuses), counted
 * in the queue's tx stats, or -errno with one line. */
int vfgx_sk_sendmmsg(struct vfgx_port *port, uint16_t q, const struct vfgx_pkt *pkts,
		     uint32_t k);
int vfgx_sk_udp_tx(struct vfgx_port *port, uint16_t q,
		   const struct vfgx_pkt *pkts, uint16_t n);

/* socket_txtime.c */
int vfgx_sk_txtime_enable(struct vfgx_port *port, struct vfgx_txtime_info *info);
int vfgx_sk_txtime_stats(struct vfgx_port *port, uint16_t q,
			 struct vfgx_txtime_stats *st);
int vfgx_sk_udp_tx_txtime(struct vfgx_port *port, uint16_t q,
			  const struct vfgx_pkt *pkts, uint16_t n);

/* socket_tcp.c */
void vfgx_sk_tcp_tune(struct sk_priv *sp, int fd);
int vfgx_sk_conn_add(struct sk_priv *sp, uint16_t q, int fd,
		     const struct sockaddr_storage *a);
void vfgx_sk_conn_free(struct vfgx_port *port, uint16_t q, struct sk_conn *c,
		       int wait_ms);
int vfgx_sk_tcp_flush(struct sk_conn *c);
int vfgx_sk_tcp_rx(struct vfgx_port *port, uint16_t q, struct vfgx_pkt *pkts,
		   uint16_t max);
int vfgx_sk_tcp_tx(struct vfgx_port *port, uint16_t q,
		   const struct vfgx_pkt *pkts, uint16_t n);

#endif
