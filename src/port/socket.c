/* socket.c - the kernel-socket port, the baseline every bypass backend is
 * measured against: UDP in bursts (recvmmsg/sendmmsg, UDP GRO/GSO when the
 * kernel offers them, SO_REUSEPORT with one socket per rx queue) and TCP
 * client/server carrying length-prefixed records.  Received datagrams and
 * records reach the pipeline as payload-only packets in pool buffers. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sock_diag.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <vfgx/socket.h>

#include "backend.h"
#include "core/opts.h"

#define SK_MAX_MSGS 256      /* datagrams per recvmmsg/sendmmsg */
#define SK_GRO_SLOT 65536    /* one coalesced GRO datagram */
#define SK_GRO_SLOTS 16
#define SK_GRO_EMPTY UINT32_MAX /* gro_seg of a zero-length datagram */
#define SK_GSO_MAX_SEGS 64
#define SK_GSO_MAX_BYTES 65000
#define SK_MAX_CONNS 64      /* TCP connections per queue */
#define SK_STAGE 262144      /* TCP receive staging per connection */
#define SK_CMSG 64
#define SK_TX_COPY 2048      /* bursts up to this many bytes go out as one
			      * contiguous send(): cheaper than an iovec */

enum { SK_UDP = 0, SK_TCP = 1 };
enum { SK_SERVER = 0, SK_CLIENT = 1 };

struct sk_conn {
	int fd;
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
	struct sk_conn *conns[SK_MAX_CONNS];
	uint32_t nb_conns;
	uint32_t rr;            /* TCP: next connection to read */
	uint32_t polls;         /* rx calls since the last accept attempt */
	bool had_conn;
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
	bool gro, gso, nodelay, end_on_close;
	uint16_t nb_socks;
	uint16_t bound_port;
	uint32_t closed;
	struct sk_queue q[VFGX_MAX_QUEUES];
};

/* --- configuration ---------------------------------------------------- */

/* udp://HOST:PORT or tcp://HOST:PORT, HOST numeric IPv4 or [IPv6]. */
static int sk_parse_uri(struct vfgx_port *port, struct sk_priv *sp,
			const char *uri)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *h, *colon;
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				  .ai_family = AF_UNSPEC };
	struct addrinfo *ai;
	char *end;
	unsigned long pnum;
	size_t hl;
	int ret;

	if (!strncmp(uri, "udp://", 6))
		sp->proto = SK_UDP;
	else if (!strncmp(uri, "tcp://", 6))
		sp->proto = SK_TCP;
	else
		goto bad;
	h = uri + 6;
	if (*h == '[') {
		const char *rb = strchr(h, ']');

		if (!rb || rb[1] != ':')
			goto bad;
		hl = (size_t)(rb - h - 1);
		h++;
		colon = rb + 1;
	} else {
		colon = strrchr(h, ':');
		if (!colon)
			goto bad;
		hl = (size_t)(colon - h);
	}
	if (hl == 0 || hl >= sizeof(host))
		goto bad;
	memcpy(host, h, hl);
	host[hl] = '\0';
	errno = 0;
	pnum = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || pnum > 65535)
		goto bad;
	hints.ai_socktype = sp->proto == SK_TCP ? SOCK_STREAM : SOCK_DGRAM;
	ret = getaddrinfo(host, colon + 1, &hints, &ai);
	if (ret)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: address '%s': '%s' is not a numeric IPv4 or IPv6 address (write udp://127.0.0.1:5000 or tcp://[::1]:5000)",
				      port->name, uri, host);
	memcpy(&sp->addr, ai->ai_addr, ai->ai_addrlen);
	sp->addr_len = ai->ai_addrlen;
	freeaddrinfo(ai);
	snprintf(sp->uri, sizeof(sp->uri), "%s", uri);
	return 0;
bad:
	return vfgx_set_error(port->ctx, -EINVAL,
			      "%s: address '%s' is malformed: write udp://ADDR:PORT or tcp://ADDR:PORT (e.g. udp://127.0.0.1:5000, tcp://[::1]:7000)",
			      port->name, uri);
}

static const char *const sk_roles[] = { "server", "client", NULL };
#define SK_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_socket_opts, F, __VA_ARGS__)
static const struct vfgx_opt sk_opts[] = {
	SK_OPT(STR, uri, 0),
	SK_OPT(ENUM, role, SK_SERVER, 0, 0, sk_roles),
	SK_OPT(U32, rcvbuf, 0, 0, 1u << 30),
	SK_OPT(U32, sndbuf, 0, 0, 1u << 30),
	SK_OPT(BOOL, gro, 1),
	SK_OPT(BOOL, gso, 1),
	SK_OPT(U32, max_record, 65536, 1, 1u << 30),
	SK_OPT(U32, buf_size, 0, 0, 1u << 30),
	SK_OPT(U32, num_bufs, 0, 0, 1u << 20),
	SK_OPT(BOOL, nodelay, 1),
	SK_OPT(TRI, end_on_close, -1, -1, 1),
	SK_OPT(U32, connect_timeout_ms, 5000, 1, 600000),
};
#define SK_NOPTS (sizeof(sk_opts) / sizeof(sk_opts[0]))

void vfgx_socket_opts_default(struct vfgx_socket_opts *o)
{
	vfgx_opts_default(sk_opts, SK_NOPTS, o, sizeof(*o));
}

int vfgx_socket_opts_from_yaml(const struct vfgx_cfg_node *map,
			       struct vfgx_socket_opts *o)
{
	return vfgx_opts_from_yaml(map, sk_opts, SK_NOPTS, o, sizeof(*o));
}

static int sk_parse(struct vfgx_port *port, struct sk_priv *sp,
		    const struct vfgx_port_conf *conf)
{
	struct vfgx_socket_opts o;
	const char *uri;
	int ret;

	ret = conf->backend_opts ?
		      vfgx_opts_from_user(port->ctx, port->name, "socket", sk_opts,
					  SK_NOPTS, conf->backend_opts, &o, sizeof(o)) :
		      vfgx_socket_opts_from_yaml(conf->opts, &o);
	if (ret)
		return ret;
	uri = o.uri ? o.uri : conf->address ? conf->address : "";
	if (strlen(uri) >= VFGX_ADDR_MAX)
		return vfgx_set_error(port->ctx, -EINVAL, "%s: socket uri is too long (at most %d characters)",
				      port->name, VFGX_ADDR_MAX - 1);
	sp->role = (int)o.role;
	sp->rcvbuf = o.rcvbuf;
	sp->sndbuf = o.sndbuf;
	sp->gro = o.gro;
	sp->gso = o.gso;
	sp->max_record = o.max_record;
	sp->buf_size = o.buf_size;
	sp->num_bufs = o.num_bufs;
	sp->nodelay = o.nodelay;
	sp->end_on_close = o.end_on_close < 0 ? sp->role == SK_CLIENT : o.end_on_close;
	sp->connect_ms = o.connect_timeout_ms;
	if (!uri[0])
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: socket backend needs an address: set interfaces[].address (or socket.uri) to udp://ADDR:PORT or tcp://ADDR:PORT",
				      port->name);
	ret = sk_parse_uri(port, sp, uri);
	if (ret)
		return ret;
	if (sp->proto == SK_TCP) {
		if (!sp->buf_size)
			sp->buf_size = sp->max_record < 2048 ? 2048 : sp->max_record;
		if (!sp->num_bufs)
			sp->num_bufs = sp->buf_size >= 262144 ? 32 : 512;
	} else {
		if (!sp->buf_size)
			sp->buf_size = 2048;
		if (!sp->num_bufs)
			sp->num_bufs = 4096;
	}
	return 0;
}

/* --- sockets ---------------------------------------------------------- */

static uint16_t sa_port(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	return ntohs(((const struct sockaddr_in *)a)->sin_port);
}

static void sa_str(const struct sockaddr_storage *a, char *buf, size_t len)
{
	char h[INET6_ADDRSTRLEN] = "?";

	if (a->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr,
			  h, sizeof(h));
	else
		inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, h,
			  sizeof(h));
	snprintf(buf, len, a->ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", h,
		 sa_port(a));
}

/* Set SO_RCVBUF/SO_SNDBUF; as root fall back to the FORCE variant; warn
 * when the kernel still grants less.  Returns what the kernel reports. */
static uint32_t sk_set_buf(struct vfgx_port *port, int fd, int opt,
			   int force_opt, uint32_t want, const char *what,
			   const char *sysctl, bool warn)
{
	int v = (int)want, got = 0;
	socklen_t l = sizeof(got);

	if (want) {
		setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
		getsockopt(fd, SOL_SOCKET, opt, &got, &l);
		if ((uint32_t)got < want) /* the kernel doubles what it grants */
			setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v));
	}
	l = sizeof(got);
	getsockopt(fd, SOL_SOCKET, opt, &got, &l);
	if (want && (uint32_t)got < want && warn)
		vfgx_warn(port->ctx,
			  "%s: %s %u clamped by the kernel to %d (raise %s to %u, or run with CAP_NET_ADMIN)",
			  port->name, what, want, got, sysctl, want);
	return (uint32_t)got;
}

static int sk_errno_msg(struct vfgx_port *port, struct sk_priv *sp,
			const char *call, int err)
{
	const char *hint = "";

	switch (err) {
	case EADDRINUSE:
		hint = " (another socket holds this port: stop it or pick another port)";
		break;
	case EADDRNOTAVAIL:
		hint = " (the address is not on any interface of this host or namespace)";
		break;
	case ENETUNREACH:
	case EHOSTUNREACH:
		hint = " (no route to that address from this namespace)";
		break;
	case ECONNREFUSED:
		hint = " (nothing listens there: start the server first)";
		break;
	case ETIMEDOUT:
		hint = " (no answer within connect_timeout_ms)";
		break;
	case EACCES:
		hint = " (ports below 1024 need CAP_NET_BIND_SERVICE)";
		break;
	default:
		break;
	}
	return vfgx_set_error(port->ctx, -err, "%s: %s: %s: %s%s", port->name,
			      sp->uri, call, strerror(err), hint);
}

static int sk_connect(struct vfgx_port *port, struct sk_priv *sp, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	int err = 0, r;
	socklen_t l = sizeof(err);

	if (connect(fd, (struct sockaddr *)&sp->addr, sp->addr_len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return sk_errno_msg(port, sp, "connect", errno);
	do
		r = poll(&pfd, 1, (int)sp->connect_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return sk_errno_msg(port, sp, "connect", ETIMEDOUT);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
	if (err)
		return sk_errno_msg(port, sp, "connect", err);
	return 0;
}

static struct sk_conn *sk_conn_new(int fd, const struct sockaddr_storage *a)
{
	struct sk_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->stage = malloc(SK_STAGE);
	if (!c->stage) {
		free(c);
		return NULL;
	}
	c->fd = fd;
	sa_str(a, c->peer, sizeof(c->peer));
	return c;
}

static int sk_tcp_flush(struct sk_conn *c);

static void sk_conn_free(struct vfgx_port *port, uint16_t q, struct sk_conn *c)
{
	/* records accepted by tx_burst go out before the close (bounded) */
	for (int i = 0; i < 200 && c->pend_off < c->pend_len; i++) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };

		if (sk_tcp_flush(c) < 0 || poll(&pfd, 1, 10) < 0)
			break;
	}
	if (c->cur)
		vfgx_pool_free_bulk(port->rx_pools[q], (void **)&c->cur, 1);
	close(c->fd);
	free(c->stage);
	free(c->pend);
	free(c);
}

static void sk_tcp_tune(struct sk_priv *sp, int fd)
{
	int one = 1;

	if (sp->nodelay)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* One socket for queue q: bound (server) or connected (client). */
static int sk_open_one(struct vfgx_port *port, struct sk_priv *sp, uint16_t q)
{
	struct sk_queue *sq = &sp->q[q];
	int type = sp->proto == SK_TCP ? SOCK_STREAM : SOCK_DGRAM;
	int one = 1, fd, ret;

	/* UDP sockets stay blocking: every data call passes MSG_DONTWAIT,
	 * and vfgx_socket_wait() blocks in recvmmsg() itself */
	fd = socket(sp->addr.ss_family,
		    type | (sp->proto == SK_TCP ? SOCK_NONBLOCK : 0) | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sk_errno_msg(port, sp, "socket", errno);
	sq->fd = fd;
	sp->got_rcvbuf = sk_set_buf(port, fd, SO_RCVBUF, SO_RCVBUFFORCE,
				    sp->rcvbuf, "rcvbuf", "net.core.rmem_max",
				    q == 0);
	sp->got_sndbuf = sk_set_buf(port, fd, SO_SNDBUF, SO_SNDBUFFORCE,
				    sp->sndbuf, "sndbuf", "net.core.wmem_max",
				    q == 0);
	if (sp->proto == SK_UDP) {
		if (sp->gro && setsockopt(fd, SOL_UDP, UDP_GRO, &one,
					  sizeof(one))) {
			vfgx_info(port->ctx, "%s: UDP GRO not offered by this kernel (%s); receiving datagram by datagram",
				  port->name, strerror(errno));
			sp->gro = false;
		}
	}
	if (sp->role == SK_SERVER) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (port->nb_rx_queues > 1)
			setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&sp->addr, sp->addr_len))
			return sk_errno_msg(port, sp, "bind", errno);
		if (q == 0) {
			struct sockaddr_storage a;
			socklen_t l = sizeof(a);

			/* port 0 in the URI: the others share the one picked */
			getsockname(fd, (struct sockaddr *)&a, &l);
			sp->bound_port = sa_port(&a);
			if (sp->addr.ss_family == AF_INET6)
				((struct sockaddr_in6 *)&sp->addr)->sin6_port = htons(sp->bound_port);
			else
				((struct sockaddr_in *)&sp->addr)->sin_port = htons(sp->bound_port);
		}
		if (sp->proto == SK_TCP && listen(fd, 128))
			return sk_errno_msg(port, sp, "listen", errno);
		return 0;
	}
	sp->bound_port = sa_port(&sp->addr);
	ret = sk_connect(port, sp, fd);
	if (ret)
		return ret;
	if (sp->proto == SK_TCP) {
		/* non-blocking only for the connect timeout (see accept) */
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		sk_tcp_tune(sp, fd);
		sq->conns[0] = sk_conn_new(fd, &sp->addr);
		if (!sq->conns[0])
			return -ENOMEM;
		sq->nb_conns = 1;
		sq->had_conn = true;
		sq->fd = -1; /* owned by the connection now */
	}
	return 0;
}

static void sk_close(struct vfgx_port *port)
{
	struct sk_priv *sp = port->priv;

	for (uint16_t q = 0; q < VFGX_MAX_QUEUES; q++) {
		struct sk_queue *sq = &sp->q[q];

		for (uint32_t i = 0; i < sq->nb_conns; i++)
			sk_conn_free(port, q, sq->conns[i]);
		sq->nb_conns = 0;
		if (sq->fd >= 0)
			close(sq->fd);
		sq->fd = -1;
		free(sq->cmsg);
		free(sq->gro);
		free(sq->gso_buf);
		sq->cmsg = NULL;
		sq->gro = NULL;
		sq->gso_buf = NULL;
		if (sq->own_pool) {
			vfgx_pool_destroy(port->rx_pools[q]);
			port->rx_pools[q] = NULL;
			sq->own_pool = false;
		}
	}
}

static int sk_open(struct vfgx_port *port, const struct vfgx_port_conf *conf)
{
	struct sk_priv *sp = port->priv;
	int ret;

	for (uint16_t q = 0; q < VFGX_MAX_QUEUES; q++) {
		sp->q[q].fd = -1;
		sp->q[q].rcvtimeo_ms = 0; /* the kernel's default: no limit */
	}
	ret = sk_parse(port, sp, conf);
	if (ret)
		return ret;
	sp->nb_socks = port->nb_rx_queues > port->nb_tx_queues ?
			       port->nb_rx_queues : port->nb_tx_queues;
	if (sp->role == SK_SERVER && port->nb_tx_queues > port->nb_rx_queues)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: a socket server replies on its rx queues' sockets: use at most %u tx queues (or role: client)",
				      port->name, port->nb_rx_queues);
	if (sp->role == SK_SERVER)
		sp->nb_socks = port->nb_rx_queues;
	if (sp->nb_socks == 0)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: socket port needs at least one rx or tx queue",
				      port->name);
	for (uint16_t q = 0; q < port->nb_rx_queues; q++) {
		struct sk_queue *sq = &sp->q[q];

		if (!port->rx_pools[q]) {
			ret = vfgx_pool_create(port->ctx, NULL, sp->buf_size,
					       sp->num_bufs, &port->rx_pools[q]);
			if (ret)
				goto err;
			sq->own_pool = true;
		} else if (vfgx_region_info(vfgx_pool_region(port->rx_pools[q]))->kind ==
			   VFGX_MEM_GPU) {
			ret = vfgx_set_error(port->ctx, -EINVAL,
					     "%s: the kernel copies socket data with the CPU; queue %u's region is GPU memory (use host or pinned)",
					     port->name, q);
			goto err;
		}
		if (sp->proto == SK_TCP &&
		    vfgx_pool_buf_size(port->rx_pools[q]) < sp->max_record) {
			ret = vfgx_set_error(port->ctx, -EINVAL,
					     "%s: socket.max_record %u exceeds queue %u's buffer size %u (raise buf_size or lower max_record)",
					     port->name, sp->max_record, q,
					     vfgx_pool_buf_size(port->rx_pools[q]));
			goto err;
		}
		sq->cmsg = calloc(SK_MAX_MSGS, SK_CMSG);
		if (!sq->cmsg) {
			ret = -ENOMEM;
			goto err;
		}
	}
	for (uint16_t q = 0; q < sp->nb_socks; q++) {
		ret = sk_open_one(port, sp, q);
		if (ret)
			goto err;
		if (sp->proto == SK_UDP && sp->gro && q < port->nb_rx_queues) {
			sp->q[q].gro = malloc((size_t)SK_GRO_SLOTS * SK_GRO_SLOT);
			if (!sp->q[q].gro) {
				ret = -ENOMEM;
				goto err;
			}
		}
	}
	if (sp->proto == SK_UDP && sp->gso && port->nb_tx_queues) {
		int z = 0;

		/* a zero UDP_SEGMENT probes support without enabling it */
		if (setsockopt(sp->q[0].fd, SOL_UDP, UDP_SEGMENT, &z, sizeof(z))) {
			vfgx_info(port->ctx, "%s: UDP GSO not offered by this kernel (%s); sending datagram by datagram",
				  port->name, strerror(errno));
			sp->gso = false;
		}
		for (uint16_t q = 0; sp->gso && q < port->nb_tx_queues; q++) {
			sp->q[q].gso_buf = malloc(SK_GSO_MAX_BYTES);
			if (!sp->q[q].gso_buf) {
				ret = -ENOMEM;
				goto err;
			}
		}
	}
	if (sp->proto == SK_TCP)
		sp->gro = sp->gso = false;
	vfgx_info(port->ctx,
		  "%s: %s %s port %u, %u rx / %u tx queues%s, rcvbuf %u sndbuf %u%s%s",
		  port->name, sp->uri, sp->role == SK_SERVER ? "server" : "client",
		  sp->bound_port, port->nb_rx_queues, port->nb_tx_queues,
		  sp->role == SK_SERVER && port->nb_rx_queues > 1 ?
			  " (SO_REUSEPORT)" : "",
		  sp->got_rcvbuf, sp->got_sndbuf,
		  sp->proto == SK_UDP ? (sp->gro ? ", UDP GRO on" : ", UDP GRO off") : "",
		  sp->proto == SK_UDP ? (sp->gso ? ", UDP GSO on" : ", UDP GSO off") : "");
	return 0;
err:
	sk_close(port);
	return ret;
}

/* --- UDP -------------------------------------------------------------- */

static void sk_cmsgs(struct msghdr *mh, uint32_t *gso)
{
	*gso = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			int v;

			memcpy(&v, CMSG_DATA(c), sizeof(v));
			*gso = (uint32_t)v;
		}
	}
}

static void sk_fill(struct vfgx_pkt *p, uint16_t q, void *buf, uint32_t len,
		    uint32_t flow, uint64_t now)
{
	p->data = buf;
	p->len = len;
	p->handle = buf;
	p->flow = flow;
	p->ts_ns = now;
	p->queue = q;
	p->flags = VFGX_PKT_PAYLOAD;
}

static void sk_prep_msg(struct sk_queue *sq, uint32_t i, void *base,
			uint32_t len)
{
	struct msghdr *mh = &sq->msgs[i].msg_hdr;

	sq->iov[i].iov_base = base;
	sq->iov[i].iov_len = len;
	memset(mh, 0, sizeof(*mh));
	mh->msg_iov = &sq->iov[i];
	mh->msg_iovlen = 1;
	mh->msg_control = sq->cmsg[i];
	mh->msg_controllen = SK_CMSG;
	if (i == 0) {
		/* remember the sender so a server's tx can reply */
		mh->msg_name = &sq->peer;
		mh->msg_namelen = sizeof(sq->peer);
	}
}

/* Datagram by datagram, straight into pool buffers. */
static int sk_udp_rx_direct(struct vfgx_port *port, uint16_t q,
			    struct vfgx_pkt *pkts, uint16_t max)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	vfgx_pool *pool = port->rx_pools[q];
	uint32_t bsz = vfgx_pool_buf_size(pool), avail = vfgx_pool_available(pool);
	uint32_t k = max, gso;
	uint16_t n = 0;
	uint64_t now;
	int r;

	if (k > SK_MAX_MSGS)
		k = SK_MAX_MSGS;
	if (k > avail) {
		if (!avail) {
			vfgx_pool_alloc_bulk(pool, sq->bufs, 1); /* counts it */
			return 0;
		}
		k = avail;
	}
	if (vfgx_pool_alloc_bulk(pool, sq->bufs, k) < 0)
		return 0;
	for (uint32_t i = 0; i < k; i++)
		sk_prep_msg(sq, i, sq->bufs[i], bsz);
	r = recvmmsg(sq->fd, sq->msgs, k, MSG_DONTWAIT, NULL);
	if (r < 0) {
		int err = errno;

		vfgx_pool_free_bulk(pool, sq->bufs, k);
		if (err == EAGAIN || err == EINTR || err == ECONNREFUSED)
			return 0;
		return vfgx_set_error(port->ctx, -err, "%s: rx queue %u: recvmmsg: %s",
				      port->name, q, strerror(err));
	}
	if (r > 0)
		sq->peer_len = sq->msgs[0].msg_hdr.msg_namelen;
	now = vfgx_now_ns();
	for (int i = 0; i < r; i++) {
		struct msghdr *mh = &sq->msgs[i].msg_hdr;

		sk_cmsgs(mh, &gso);
		if (mh->msg_flags & MSG_TRUNC) {
			sq->st.drops[VFGX_DROP_TRUNCATED]++;
			vfgx_pool_free_bulk(pool, &sq->bufs[i], 1);
			continue;
		}
		sk_fill(&pkts[n++], q, sq->bufs[i], sq->msgs[i].msg_len, 0, now);
		sq->st.rx_packets++;
		sq->st.rx_bytes += sq->msgs[i].msg_len;
	}
	if ((uint32_t)r < k)
		vfgx_pool_free_bulk(pool, sq->bufs + r, k - (uint32_t)r);
	return n;
}

/* Receive up to k (possibly coalesced) datagrams into the GRO slots.
 * Returns how many, 0 when none (or timed out), or a negative errno. */
static int sk_gro_fill(struct vfgx_port *port, uint16_t q, uint32_t k,
		       int flags)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	int r;

	for (uint32_t i = 0; i < k; i++)
		sk_prep_msg(sq, i, sq->gro + (size_t)i * SK_GRO_SLOT, SK_GRO_SLOT);
	r = recvmmsg(sq->fd, sq->msgs, k, flags, NULL);
	if (r < 0) {
		if (errno == EAGAIN || errno == EINTR || errno == ECONNREFUSED)
			return 0;
		return vfgx_set_error(port->ctx, -errno, "%s: rx queue %u: recvmmsg: %s",
				      port->name, q, strerror(errno));
	}
	if (r > 0)
		sq->peer_len = sq->msgs[0].msg_hdr.msg_namelen;
	for (int i = 0; i < r; i++) {
		uint32_t len = sq->msgs[i].msg_len, seg;

		sk_cmsgs(&sq->msgs[i].msg_hdr, &seg);
		if (sq->msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
			sq->st.drops[VFGX_DROP_TRUNCATED]++;
			len = 0;
		}
		sq->gro_len[i] = len;
		sq->gro_seg[i] = seg && seg < len ? seg : len;
		if (sq->msgs[i].msg_len == 0)
			sq->gro_seg[i] = SK_GRO_EMPTY;
		if (seg && seg < len)
			sq->gro_coalesced += (len + seg - 1) / seg;
	}
	sq->gro_n = (uint32_t)r;
	sq->gro_i = 0;
	sq->gro_off = 0;
	return r;
}

/* GRO: coalesced datagrams land in scratch slots and are split into one
 * pool buffer per original datagram (segment). */
static int sk_udp_rx_gro(struct vfgx_port *port, uint16_t q,
			 struct vfgx_pkt *pkts, uint16_t max)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	vfgx_pool *pool = port->rx_pools[q];
	uint32_t bsz = vfgx_pool_buf_size(pool);
	uint64_t now;
	uint16_t n = 0;

	if (sq->gro_i >= sq->gro_n) {
		int r = sk_gro_fill(port, q, max < SK_GRO_SLOTS ? max : SK_GRO_SLOTS,
				    MSG_DONTWAIT);

		if (r <= 0)
			return r;
	}
	now = vfgx_now_ns();
	while (n < max && sq->gro_i < sq->gro_n) {
		uint32_t i = sq->gro_i, left = sq->gro_len[i] - sq->gro_off;
		uint32_t seg = left < sq->gro_seg[i] ? left : sq->gro_seg[i];
		void *b;

		if (left == 0) {
			if (sq->gro_seg[i] == SK_GRO_EMPTY) {
				/* an empty datagram is one (empty) packet, as
				 * on the path without GRO */
				if (vfgx_pool_alloc_bulk(pool, &b, 1) < 0)
					break;
				sk_fill(&pkts[n++], q, b, 0, 0, now);
				sq->st.rx_packets++;
			}
			sq->gro_i++;
			sq->gro_off = 0;
			continue;
		}
		if (seg > bsz) {
			sq->st.drops[VFGX_DROP_TOO_BIG]++;
		} else {
			if (vfgx_pool_alloc_bulk(pool, &b, 1) < 0)
				break; /* keep the rest for the next call */
			memcpy(b, sq->gro + (size_t)i * SK_GRO_SLOT + sq->gro_off,
			       seg);
			sk_fill(&pkts[n++], q, b, seg, 0, now);
			sq->st.rx_packets++;
			sq->st.rx_bytes += seg;
		}
		sq->gro_off += seg;
	}
	return n;
}

/* Send runs of equal-sized packets as one GSO super-datagram. */
static int sk_udp_tx_gso(struct vfgx_port *port, uint16_t q,
			 const struct vfgx_pkt *pkts, uint16_t n)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	union {
		struct cmsghdr align;
		uint8_t b[CMSG_SPACE(sizeof(uint16_t))];
	} ctl[SK_GSO_MAX_SEGS];
	uint16_t first[SK_GSO_MAX_SEGS + 1];
	uint32_t g = 0, i = 0, used = 0;
	int r;

	memset(ctl, 0, sizeof(ctl));
	while (i < n && g < SK_GSO_MAX_SEGS) {
		uint32_t seg = pkts[i].len, cnt = 1, bytes = seg;
		struct msghdr *mh = &sq->msgs[g].msg_hdr;

		while (i + cnt < n && cnt < SK_GSO_MAX_SEGS &&
		       pkts[i + cnt].len <= seg &&
		       used + bytes + pkts[i + cnt].len <= SK_GSO_MAX_BYTES) {
			bytes += pkts[i + cnt].len;
			cnt++;
			if (pkts[i + cnt - 1].len < seg)
				break; /* a shorter one ends the run */
		}
		memset(mh, 0, sizeof(*mh));
		if (sp->role == SK_SERVER) {
			mh->msg_name = &sq->peer;
			mh->msg_namelen = sq->peer_len;
		}
		mh->msg_iov = &sq->iov[g];
		mh->msg_iovlen = 1;
		if (cnt == 1) {
			sq->iov[g].iov_base = pkts[i].data;
			sq->iov[g].iov_len = seg;
		} else {
			struct cmsghdr *c;
			uint16_t s16 = (uint16_t)seg;

			for (uint32_t j = 0; j < cnt; j++) {
				memcpy(sq->gso_buf + used, pkts[i + j].data,
				       pkts[i + j].len);
				used += pkts[i + j].len;
			}
			sq->iov[g].iov_base = sq->gso_buf + used - bytes;
			sq->iov[g].iov_len = bytes;
			mh->msg_control = ctl[g].b;
			mh->msg_controllen = sizeof(ctl[g].b);
			c = CMSG_FIRSTHDR(mh);
			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(s16));
			memcpy(CMSG_DATA(c), &s16, sizeof(s16));
		}
		first[g++] = (uint16_t)i;
		i += cnt;
		if (used + seg > SK_GSO_MAX_BYTES)
			break;
	}
	first[g] = (uint16_t)i;
	r = sendmmsg(sq->fd, sq->msgs, g, MSG_DONTWAIT);
	if (r < 0) {
		if (errno == EAGAIN || errno == ENOBUFS || errno == ECONNREFUSED)
			return 0;
		if (errno == EIO || errno == EINVAL) {
			vfgx_warn(port->ctx, "%s: UDP GSO refused by the device path (%s); sending datagram by datagram",
				  port->name, strerror(errno));
			sp->gso = false;
			return 0;
		}
		return vfgx_set_error(port->ctx, -errno, "%s: tx queue %u: sendmmsg: %s",
				      port->name, q, strerror(errno));
	}
	for (int k = 0; k < r; k++)
		if (first[k + 1] - first[k] > 1)
			sq->gso_sent += (uint64_t)(first[k + 1] - first[k]);
	for (uint16_t k = 0; k < first[r]; k++) {
		sq->st.tx_packets++;
		sq->st.tx_bytes += pkts[k].len;
	}
	return first[r];
}

static int sk_udp_tx(struct vfgx_port *port, uint16_t q,
		     const struct vfgx_pkt *pkts, uint16_t n)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	uint32_t k = n < SK_MAX_MSGS ? n : SK_MAX_MSGS;
	int r;

	if (sp->role == SK_SERVER && !sq->peer_len)
		return vfgx_set_error(port->ctx, -ENOTCONN,
				      "%s: tx queue %u: a UDP server replies to the last sender and none has sent yet (use role: client to send first)",
				      port->name, q);
	if (sp->gso && n > 1)
		return sk_udp_tx_gso(port, q, pkts, (uint16_t)k);
	for (uint32_t i = 0; i < k; i++) {
		struct msghdr *mh = &sq->msgs[i].msg_hdr;

		memset(mh, 0, sizeof(*mh));
		sq->iov[i].iov_base = pkts[i].data;
		sq->iov[i].iov_len = pkts[i].len;
		mh->msg_iov = &sq->iov[i];
		mh->msg_iovlen = 1;
		if (sp->role == SK_SERVER) {
			mh->msg_name = &sq->peer;
			mh->msg_namelen = sq->peer_len;
		}
	}
	r = sendmmsg(sq->fd, sq->msgs, k, MSG_DONTWAIT);
	if (r < 0) {
		if (errno == EAGAIN || errno == ENOBUFS || errno == ECONNREFUSED)
			return 0;
		return vfgx_set_error(port->ctx, -errno, "%s: tx queue %u: sendmmsg: %s",
				      port->name, q, strerror(errno));
	}
	for (int i = 0; i < r; i++) {
		sq->st.tx_packets++;
		sq->st.tx_bytes += pkts[i].len;
	}
	return r;
}

/* --- TCP -------------------------------------------------------------- */

static void sk_tcp_accept(struct vfgx_port *port, struct sk_priv *sp,
			  uint16_t q)
{
	struct sk_queue *sq = &sp->q[q];

	while (sq->nb_conns < SK_MAX_CONNS) {
		struct sockaddr_storage a;
		socklen_t l = sizeof(a);
		/* blocking like UDP sockets: data calls pass MSG_DONTWAIT and
		 * vfgx_socket_wait() may block in recv() */
		int fd = accept4(sq->fd, (struct sockaddr *)&a, &l, SOCK_CLOEXEC);
		struct sk_conn *c;

		if (fd < 0)
			return;
		sk_tcp_tune(sp, fd);
		c = sk_conn_new(fd, &a);
		if (!c) {
			close(fd);
			return;
		}
		sq->conns[sq->nb_conns++] = c;
		sq->had_conn = true;
		vfgx_dbg(port->ctx, "%s: rx queue %u: connection from %s",
			 port->name, q, c->peer);
	}
}

static void sk_tcp_drop_conn(struct vfgx_port *port, uint16_t q, uint32_t i,
			     int err)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	struct sk_conn *c = sq->conns[i];

	if (c->in_rec || c->hdr_got) {
		sq->st.drops[VFGX_DROP_TRUNCATED]++;
		if (c->in_rec)
			vfgx_warn(port->ctx,
				  "%s: rx queue %u: peer %s %s in the middle of a record (%u of %u bytes received): record dropped",
				  port->name, q, c->peer,
				  err ? strerror(err) : "closed", c->got,
				  c->rec_len);
		else
			vfgx_warn(port->ctx,
				  "%s: rx queue %u: peer %s %s in the middle of a record header (%u of %d bytes): dropped",
				  port->name, q, c->peer,
				  err ? strerror(err) : "closed", c->hdr_got,
				  VFGX_SOCKET_REC_HLEN);
	} else if (err) {
		vfgx_warn(port->ctx, "%s: rx queue %u: peer %s: %s", port->name,
			  q, c->peer, strerror(err));
	}
	sk_conn_free(port, q, c);
	sq->conns[i] = sq->conns[--sq->nb_conns];
	sq->conns[sq->nb_conns] = NULL;
	sp->closed++;
}

/* Parse staged bytes into records.  Returns packets produced; *need_more
 * is set when the stage is empty (a recv is wanted). */
static uint16_t sk_tcp_parse(struct vfgx_port *port, uint16_t q,
			     struct sk_conn *c, uint32_t ci,
			     struct vfgx_pkt *pkts, uint16_t max, bool *stalled)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	vfgx_pool *pool = port->rx_pools[q];
	uint16_t n = 0;

	*stalled = false;
	while (n < max) {
		uint32_t avail = c->s_len - c->s_off, take;

		if (c->in_rec && c->got == c->rec_len) {
			c->in_rec = false;
			if (c->cur) {
				sk_fill(&pkts[n++], q, c->cur, c->rec_len, ci,
					vfgx_now_ns());
				sq->st.rx_packets++;
				sq->st.rx_bytes += c->rec_len;
				c->cur = NULL;
			}
			continue;
		}
		if (!avail && (c->in_rec || c->hdr_got < VFGX_SOCKET_REC_HLEN))
			break;
		if (!c->in_rec) {
			take = VFGX_SOCKET_REC_HLEN - c->hdr_got;
			if (take > avail)
				take = avail;
			memcpy(c->hdr + c->hdr_got, c->stage + c->s_off, take);
			c->hdr_got += take;
			c->s_off += take;
			if (c->hdr_got < VFGX_SOCKET_REC_HLEN)
				break;
			c->rec_len = ((uint32_t)c->hdr[0] << 24) |
				     ((uint32_t)c->hdr[1] << 16) |
				     ((uint32_t)c->hdr[2] << 8) | c->hdr[3];
			c->got = 0;
			c->cur = NULL;
			if (c->rec_len > sp->max_record ||
			    c->rec_len > vfgx_pool_buf_size(pool)) {
				sq->st.drops[VFGX_DROP_TOO_BIG]++;
				vfgx_warn(port->ctx, "%s: rx queue %u: peer %s sent a %u-byte record, above max_record %u: skipped",
					  port->name, q, c->peer, c->rec_len,
					  sp->max_record);
			} else if (vfgx_pool_alloc_bulk(pool, (void **)&c->cur, 1) < 0) {
				/* backpressure: keep the header, retry later */
				*stalled = true;
				break;
			}
			c->hdr_got = 0;
			c->in_rec = true;
			avail = c->s_len - c->s_off;
		}
		take = c->rec_len - c->got;
		if (take > avail)
			take = avail;
		if (c->cur)
			memcpy(c->cur + c->got, c->stage + c->s_off, take);
		c->got += take;
		c->s_off += take;
	}
	return n;
}

/* Read one connection: parse what is staged, refill, parse again. */
static int sk_tcp_rx_conn(struct vfgx_port *port, uint16_t q, uint32_t ci,
			  struct vfgx_pkt *pkts, uint16_t max)
{
	struct sk_priv *sp = port->priv;
	struct sk_conn *c = sp->q[q].conns[ci];
	uint16_t n = 0;
	bool stalled;

	bool drained = c->short_read;

	c->short_read = false;
	for (int rounds = 0; rounds < 8 && n < max; rounds++) {
		size_t want;
		ssize_t r;

		n += sk_tcp_parse(port, q, c, ci, pkts + n, (uint16_t)(max - n),
				  &stalled);
		/* a short read emptied the socket: another recv would only
		 * say EAGAIN, so leave it to the next call */
		if (stalled || drained || n >= max)
			break;
		if (c->in_rec && c->cur && c->rec_len - c->got >= SK_STAGE / 2) {
			/* large record: read straight into its buffer */
			want = c->rec_len - c->got;
			r = recv(c->fd, c->cur + c->got, want, MSG_DONTWAIT);
			if (r > 0) {
				c->got += (uint32_t)r;
				c->s_off = c->s_len = 0;
				drained = (size_t)r < want;
				continue;
			}
		} else {
			if (c->s_off == c->s_len) {
				c->s_off = c->s_len = 0;
			} else if (c->s_off) {
				memmove(c->stage, c->stage + c->s_off,
					c->s_len - c->s_off);
				c->s_len -= c->s_off;
				c->s_off = 0;
			}
			want = SK_STAGE - c->s_len;
			r = recv(c->fd, c->stage + c->s_len, want, MSG_DONTWAIT);
			if (r > 0) {
				c->s_len += (uint32_t)r;
				drained = (size_t)r < want;
				continue;
			}
		}
		if (r == 0) {
			sk_tcp_drop_conn(port, q, ci, 0);
			return -(int)n - 1; /* connection gone, n packets kept */
		}
		if (errno == EAGAIN || errno == EINTR)
			break;
		sk_tcp_drop_conn(port, q, ci, errno);
		return -(int)n - 1;
	}
	return n;
}

static int sk_tcp_rx(struct vfgx_port *port, uint16_t q,
		     struct vfgx_pkt *pkts, uint16_t max)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	uint16_t n = 0;

	if (sp->role == SK_SERVER &&
	    (sq->nb_conns == 0 || ++sq->polls >= 256)) {
		sq->polls = 0;
		sk_tcp_accept(port, sp, q);
	}
	for (uint32_t k = 0; k < sq->nb_conns; k++)
		if (sq->conns[k]->pend_off < sq->conns[k]->pend_len)
			sk_tcp_flush(sq->conns[k]); /* a partial write's tail */
	for (uint32_t k = 0; k < sq->nb_conns && n < max; k++) {
		uint32_t ci = (sq->rr + k) % sq->nb_conns;
		int r = sk_tcp_rx_conn(port, q, ci, pkts + n, (uint16_t)(max - n));

		if (r < 0) {
			/* connection closed: indices moved, stop this round;
			 * the flow hint of packets from it is stale anyway */
			n += (uint16_t)(-r - 1);
			break;
		}
		n += (uint16_t)r;
	}
	if (sq->nb_conns)
		sq->rr = (sq->rr + 1) % sq->nb_conns;
	return n;
}

static int sk_tcp_flush(struct sk_conn *c)
{
	while (c->pend_off < c->pend_len) {
		ssize_t r = send(c->fd, c->pend + c->pend_off,
				 c->pend_len - c->pend_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		c->pend_off += (size_t)r;
	}
	c->pend_off = c->pend_len = 0;
	return 1;
}

/* Keep the unsent tail of iov (from byte `sent` on) for the next call. */
static int sk_tcp_keep(struct sk_conn *c, const struct iovec *iov, int niov,
		       size_t sent)
{
	size_t total = 0;

	for (int i = 0; i < niov; i++)
		total += iov[i].iov_len;
	if (total - sent > c->pend_cap) {
		uint8_t *p = realloc(c->pend, total - sent);

		if (!p)
			return -ENOMEM;
		c->pend = p;
		c->pend_cap = total - sent;
	}
	c->pend_len = 0;
	c->pend_off = 0;
	for (int i = 0; i < niov; i++) {
		size_t l = iov[i].iov_len;
		const uint8_t *b = iov[i].iov_base;

		if (sent >= l) {
			sent -= l;
			continue;
		}
		memcpy(c->pend + c->pend_len, b + sent, l - sent);
		c->pend_len += l - sent;
		sent = 0;
	}
	return 0;
}

static int sk_tcp_tx(struct vfgx_port *port, uint16_t q,
		     const struct vfgx_pkt *pkts, uint16_t n)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	struct iovec iov[2 * 256];
	uint8_t hdr[256][VFGX_SOCKET_REC_HLEN];
	struct sk_conn *c;
	uint16_t done = 0;
	int niov = 0, ret;

	if (sp->role == SK_SERVER && sq->nb_conns == 0)
		sk_tcp_accept(port, sp, q);
	if (sq->nb_conns == 0)
		return vfgx_set_error(port->ctx, -ENOTCONN,
				      "%s: tx queue %u: no TCP connection (%s)", port->name,
				      q, sp->role == SK_SERVER ? "no client has connected yet" :
								 "the server closed it");
	/* the flow hint of a received record names its connection: replies
	 * go back on it; otherwise the newest connection */
	c = sq->conns[pkts[0].flow < sq->nb_conns ? pkts[0].flow :
						    sq->nb_conns - 1];
	ret = sk_tcp_flush(c);
	if (ret < 0)
		return vfgx_set_error(port->ctx, ret, "%s: tx queue %u: send to %s: %s",
				      port->name, q, c->peer, strerror(-ret));
	if (ret == 0)
		return 0; /* the previous burst is still going out */
	for (; done < n && done < 256; done++) {
		if (done && pkts[done].flow != pkts[0].flow &&
		    pkts[done].flow < sq->nb_conns)
			break;
		hdr[done][0] = (uint8_t)(pkts[done].len >> 24);
		hdr[done][1] = (uint8_t)(pkts[done].len >> 16);
		hdr[done][2] = (uint8_t)(pkts[done].len >> 8);
		hdr[done][3] = (uint8_t)pkts[done].len;
		iov[niov].iov_base = hdr[done];
		iov[niov++].iov_len = VFGX_SOCKET_REC_HLEN;
		iov[niov].iov_base = pkts[done].data;
		iov[niov++].iov_len = pkts[done].len;
		sq->st.tx_packets++;
		sq->st.tx_bytes += pkts[done].len;
	}
	if (niov) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)niov };
		size_t total = 0;
		ssize_t r;

		for (int i = 0; i < niov && total <= SK_TX_COPY; i++)
			total += iov[i].iov_len;
		if (total <= SK_TX_COPY) {
			/* small records (a ping-pong's, a stream of tiny ones):
			 * copy into one buffer and send() it; the kernel's
			 * msghdr/iovec import costs more than the copy */
			size_t off = 0;

			for (int i = 0; i < niov; i++) {
				memcpy(c->txbuf + off, iov[i].iov_base, iov[i].iov_len);
				off += iov[i].iov_len;
			}
			iov[0] = (struct iovec){ c->txbuf, total };
			niov = 1;
			r = send(c->fd, c->txbuf, total, MSG_DONTWAIT | MSG_NOSIGNAL);
		} else {
			r = sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		}

		if (r < 0) {
			int err = errno;

			if (sp->role == SK_SERVER &&
			    (err == EPIPE || err == ECONNRESET)) {
				/* one client going away is not the port's end */
				vfgx_warn(port->ctx, "%s: tx queue %u: peer %s: %s: %u records lost",
					  port->name, q, c->peer, strerror(err), done);
				for (uint32_t i = 0; i < sq->nb_conns; i++)
					if (sq->conns[i] == c)
						sk_tcp_drop_conn(port, q, i, err);
				return done;
			}
			if (err != EAGAIN && err != EINTR)
				return vfgx_set_error(port->ctx, -err,
						      "%s: tx queue %u: send to %s: %s",
						      port->name, q, c->peer,
						      strerror(err));
			r = 0;
		}
		/* partial write: the rest is copied and sent first next time */
		ret = sk_tcp_keep(c, iov, niov, (size_t)r);
		if (ret)
			return ret;
		sk_tcp_flush(c);
	}
	return done;
}

/* --- ops -------------------------------------------------------------- */

static int sk_rx_burst(struct vfgx_port *port, uint16_t q,
		       struct vfgx_pkt *pkts, uint16_t max)
{
	struct sk_priv *sp = port->priv;

	if (max > port->burst)
		max = port->burst;
	if (sp->proto == SK_TCP)
		return sk_tcp_rx(port, q, pkts, max);
	if (sp->gro)
		return sk_udp_rx_gro(port, q, pkts, max);
	return sk_udp_rx_direct(port, q, pkts, max);
}

static int sk_tx_burst(struct vfgx_port *port, uint16_t q,
		       const struct vfgx_pkt *pkts, uint16_t n)
{
	struct sk_priv *sp = port->priv;

	if (n == 0)
		return 0;
	if (sp->proto == SK_TCP)
		return sk_tcp_tx(port, q, pkts, n);
	return sk_udp_tx(port, q, pkts, n);
}

static int sk_stats(struct vfgx_port *port, uint16_t q,
		    struct vfgx_queue_stats *st)
{
	struct sk_priv *sp = port->priv;
	struct vfgx_pool_stats ps;

	*st = sp->q[q].st;
	if (sp->proto == SK_UDP && q < port->nb_rx_queues && sp->q[q].fd >= 0) {
		uint32_t mi[SK_MEMINFO_VARS];
		socklen_t l = sizeof(mi);

		/* datagrams the kernel dropped on this socket (receive buffer
		 * full): read here rather than as a per-datagram SO_RXQ_OVFL
		 * control message, which costs every recvmmsg() */
		if (!getsockopt(sp->q[q].fd, SOL_SOCKET, SO_MEMINFO, mi, &l) &&
		    l > SK_MEMINFO_DROPS * sizeof(uint32_t))
			st->drops[VFGX_DROP_RING_FULL] = mi[SK_MEMINFO_DROPS];
	}
	if (q < port->nb_rx_queues && port->rx_pools[q]) {
		vfgx_pool_stats(port->rx_pools[q], &ps);
		st->drops[VFGX_DROP_NOBUFS] = ps.alloc_fail;
	}
	return 0;
}

/* A TCP port with end_on_close is finite: done when its connections have
 * come and gone. */
static bool sk_rx_done(struct vfgx_port *port, uint16_t q)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];

	return sp->proto == SK_TCP && sp->end_on_close && sq->had_conn &&
	       sq->nb_conns == 0;
}

int vfgx_socket_wait(vfgx_port *port, uint16_t q, int timeout_ms)
{
	struct pollfd pfd[SK_MAX_CONNS + 1];
	struct sk_priv *sp;
	struct sk_queue *sq;
	nfds_t n = 0;
	int r;

	if (!port || port->ops != &vfgx_socket_ops || q >= port->nb_rx_queues)
		return -EINVAL;
	sp = port->priv;
	sq = &sp->q[q];
	/* data already pulled from the kernel is ready now */
	if (sq->gro_i < sq->gro_n)
		return 1;
	if (sp->proto == SK_UDP && sp->gro) {
		/* one syscall per wake-up: block in recvmmsg() until the first
		 * datagram, take what else is queued, keep it for rx_burst */
		if (timeout_ms && timeout_ms != sq->rcvtimeo_ms) {
			struct timeval tv = { .tv_sec = timeout_ms / 1000,
					      .tv_usec = (timeout_ms % 1000) * 1000 };

			if (timeout_ms < 0)
				tv = (struct timeval){ 0 };
			setsockopt(sq->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			sq->rcvtimeo_ms = timeout_ms;
		}
		r = sk_gro_fill(port, q, SK_GRO_SLOTS,
				timeout_ms ? MSG_WAITFORONE : MSG_DONTWAIT);
		return r < 0 ? r : r > 0;
	}
	if (sp->proto == SK_TCP && sq->nb_conns == 1 && timeout_ms) {
		/* one connection: block in recv() itself, one syscall per
		 * wake-up (a server accepts newcomers on the next rx_burst) */
		struct sk_conn *c = sq->conns[0];
		ssize_t got;

		if (c->s_off < c->s_len)
			return 1;
		c->s_off = c->s_len = 0;
		if (timeout_ms != c->rcvtimeo_ms) {
			struct timeval tv = { .tv_sec = timeout_ms / 1000,
					      .tv_usec = (timeout_ms % 1000) * 1000 };

			if (timeout_ms < 0)
				tv = (struct timeval){ 0 };
			setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			c->rcvtimeo_ms = timeout_ms;
		}
		got = recv(c->fd, c->stage, SK_STAGE, 0);
		if (got > 0) {
			c->s_len = (uint32_t)got;
			c->short_read = got < SK_STAGE;
			return 1;
		}
		if (got == 0 || (errno != EAGAIN && errno != EINTR))
			return 1; /* end or error: rx_burst reports it */
		return 0;
	}
	if (sq->fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = sq->fd, .events = POLLIN };
	for (uint32_t i = 0; i < sq->nb_conns; i++) {
		if (sq->conns[i]->s_off < sq->conns[i]->s_len)
			return 1;
		pfd[n++] = (struct pollfd){ .fd = sq->conns[i]->fd, .events = POLLIN };
	}
	r = poll(pfd, n, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	return r > 0;
}

size_t vfgx_socket_tx_pending(vfgx_port *port, uint16_t q)
{
	struct sk_priv *sp;
	size_t left = 0;

	if (!port || port->ops != &vfgx_socket_ops || q >= VFGX_MAX_QUEUES)
		return 0;
	sp = port->priv;
	for (uint32_t i = 0; i < sp->q[q].nb_conns; i++) {
		struct sk_conn *c = sp->q[q].conns[i];

		sk_tcp_flush(c);
		left += c->pend_len - c->pend_off;
	}
	return left;
}

int vfgx_socket_info(vfgx_port *port, struct vfgx_socket_info *info)
{
	struct sk_priv *sp;

	memset(info, 0, sizeof(*info));
	if (!port || port->ops != &vfgx_socket_ops)
		return -EINVAL;
	sp = port->priv;
	info->tcp = sp->proto == SK_TCP;
	info->server = sp->role == SK_SERVER;
	info->gro = sp->gro;
	info->gso = sp->gso;
	info->port = sp->bound_port;
	info->rcvbuf = sp->got_rcvbuf;
	info->sndbuf = sp->got_sndbuf;
	info->closed = sp->closed;
	for (uint16_t q = 0; q < VFGX_MAX_QUEUES; q++) {
		info->conns += sp->q[q].nb_conns;
		info->gro_coalesced += sp->q[q].gro_coalesced;
		info->gso_sent += sp->q[q].gso_sent;
	}
	return 0;
}

const struct vfgx_port_ops vfgx_socket_ops = {
	.name = "socket",
	.priv_size = sizeof(struct sk_priv),
	.open = sk_open,
	.rx_burst = sk_rx_burst,
	.release = vfgx_port_release_to_pool,
	.tx_burst = sk_tx_burst,
	.stats = sk_stats,
	.close = sk_close,
	.rx_done = sk_rx_done,
};
