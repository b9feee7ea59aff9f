/* socket.c - the kernel-socket port, the baseline every bypass backend is
 * measured against: UDP in bursts (recvmmsg/sendmmsg, UDP GRO/GSO when the
 * kernel offers them, SO_REUSEPORT with one socket per rx queue) and TCP
 * client/server carrying length-prefixed records.  Received datagrams and
 * records reach the pipeline as payload-only packets in pool buffers.
 * This file: configuration, sockets, the ops table; the fast paths are in
 * socket_udp.c and socket_tcp.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sock_diag.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/argsz.h"
#include "core/numparse.h"
#include "core/opts.h"
#include "socket_priv.h"

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
	char numerr[VFGX_NUM_ERR_MAX];
	uint64_t pnum;
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
	/* the strict parser: no sign, blanks, leading zeros or wrap */
	if (vfgx_num_u64(colon + 1, 0, 65535, 0, &pnum, numerr, sizeof(numerr)))
		return vfgx_set_error(port->ctx, -EINVAL, "%s: address '%s': port %s",
				      port->name, uri, numerr);
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
	{ "socket", VFGX_OPT_BACKEND, offsetof(struct vfgx_socket_opts, hdr.backend) },
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
	SK_OPT(U32, max_conns, 64, 1, SK_MAX_CONNS),
	SK_OPT(U32, idle_timeout_ms, 60000, 0, 86400000),
	SK_OPT(U32, record_timeout_ms, 10000, 0, 86400000),
	SK_OPT(U32, max_staged_records, 0, 0, 1u << 20),
};
#define SK_NOPTS (sizeof(sk_opts) / sizeof(sk_opts[0]))

void vfgx_socket_opts_default(struct vfgx_socket_opts *o)
{
	vfgx_opts_default(sk_opts, SK_NOPTS, o, sizeof(*o));
}

static int vfgx_socket_opts_from_yaml(const struct vfgx_cfg_node *map,
			       struct vfgx_socket_opts *o)
{
	return vfgx_opts_from_yaml(map, sk_opts, SK_NOPTS, o, sizeof(*o));
}

static int sk_opts_parse(const struct vfgx_cfg_node *map, const struct vfgx_iface_config *ifc,
			 struct vfgx_backend_opts *out)
{
	(void)ifc;
	return vfgx_socket_opts_from_yaml(map, (struct vfgx_socket_opts *)out);
}

/* UDP: a datagram's payload in one buffer (buf_size, 2048 by default);
 * TCP: a record, at most max_record, in one buffer. */
static uint32_t sk_frame_max(const struct vfgx_backend_opts *bo, const char *address,
			     uint32_t buf_size, const char **key)
{
	const struct vfgx_socket_opts *o = (const struct vfgx_socket_opts *)bo;
	struct vfgx_socket_opts d;
	const char *uri;
	bool tcp;

	if (!o) {
		vfgx_socket_opts_default(&d);
		o = &d;
	}
	uri = o->uri ? o->uri : address ? address : "";
	tcp = !strncmp(uri, "tcp://", 6);
	if (!buf_size && o->buf_size) {
		*key = "socket.buf_size";
		return tcp && o->max_record < o->buf_size ? o->max_record : o->buf_size;
	}
	if (tcp) {
		*key = buf_size && buf_size < o->max_record ? NULL : "socket.max_record";
		return vfgx_frame_bound(o->max_record, buf_size);
	}
	*key = buf_size ? NULL : "socket.buf_size";
	return buf_size ? buf_size : 2048;
}

static int sk_parse(struct vfgx_port *port, struct sk_priv *sp,
		    const struct vfgx_port_conf *conf)
{
	struct vfgx_socket_opts o;
	const char *uri;
	int ret;

	ret = vfgx_opts_get(port->ctx, port->name, "socket", sk_opts, SK_NOPTS,
			    conf->backend_opts, &o, sizeof(o));
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
	sp->max_conns = sp->role == SK_CLIENT ? 1 : o.max_conns;
	sp->idle_ms = o.idle_timeout_ms;
	sp->record_ms = o.record_timeout_ms;
	sp->max_staged = o.max_staged_records;
	while ((1u << sp->slot_bits) < sp->max_conns)
		sp->slot_bits++;
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

void vfgx_sk_addr_str(const struct sockaddr_storage *a, char *buf,
		      size_t len)
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
		vfgx_sk_tcp_tune(sp, fd);
		ret = vfgx_sk_conn_add(sp, q, fd, &sp->addr);
		if (ret)
			return ret;
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
			vfgx_sk_conn_free(port, q, sq->conns[sq->live[i]], 2000);
		sq->nb_conns = 0;
		free(sq->conns);
		free(sq->live);
		free(sq->scan);
		sq->conns = NULL;
		sq->live = NULL;
		sq->scan = NULL;
		if (sq->fd >= 0)
			close(sq->fd);
		sq->fd = -1;
		free(sq->cmsg);
		free(sq->pfd);
		sq->pfd = NULL;
		free(sq->gro);
		free(sq->gso_buf);
		free(sq->txctl);
		sq->txctl = NULL;
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
		/* records still arriving leave the other half of the pool to
		 * records the application holds and to newcomers */
		sq->max_staged = sp->max_staged ? sp->max_staged :
			vfgx_pool_available(port->rx_pools[q]) / 2;
		if (!sq->max_staged)
			sq->max_staged = 1;
		if (sp->proto == SK_TCP &&
		    sq->max_staged > vfgx_pool_available(port->rx_pools[q])) {
			ret = vfgx_set_error(port->ctx, -EINVAL,
					     "%s: socket.max_staged_records %u exceeds queue %u's %u rx buffers (lower it, or raise num_bufs)",
					     port->name, sp->max_staged, q,
					     vfgx_pool_available(port->rx_pools[q]));
			goto err;
		}
		sq->cmsg = calloc(SK_MAX_MSGS, SK_CMSG);
		sq->pfd = calloc(sp->proto == SK_TCP ? sp->max_conns + 1 : 1,
				 sizeof(*sq->pfd));
		if (!sq->cmsg || !sq->pfd) {
			ret = -ENOMEM;
			goto err;
		}
	}
	for (uint16_t q = 0; sp->proto == SK_TCP && q < sp->nb_socks; q++) {
		sp->q[q].conns = calloc(1u << sp->slot_bits, sizeof(*sp->q[q].conns));
		sp->q[q].live = calloc(sp->max_conns, sizeof(*sp->q[q].live));
		sp->q[q].scan = calloc(sp->max_conns, sizeof(*sp->q[q].scan));
		if (!sp->q[q].conns || !sp->q[q].live || !sp->q[q].scan) {
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

/* --- ops -------------------------------------------------------------- */

static int sk_rx_burst(struct vfgx_port *port, uint16_t q,
		       struct vfgx_pkt *pkts, uint16_t max)
{
	struct sk_priv *sp = port->priv;

	if (max > port->burst)
		max = port->burst;
	if (sp->proto == SK_TCP)
		return vfgx_sk_tcp_rx(port, q, pkts, max);
	if (sp->gro)
		return vfgx_sk_udp_rx_gro(port, q, pkts, max);
	return vfgx_sk_udp_rx_direct(port, q, pkts, max);
}

static int sk_tx_burst(struct vfgx_port *port, uint16_t q,
		       const struct vfgx_pkt *pkts, uint16_t n)
{
	struct sk_priv *sp = port->priv;

	if (n == 0)
		return 0;
	if (sp->proto == SK_TCP)
		return vfgx_sk_tcp_tx(port, q, pkts, n);
	if (sp->txtime)
		return vfgx_sk_udp_tx_txtime(port, q, pkts, n);
	return vfgx_sk_udp_tx(port, q, pkts, n);
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
	struct pollfd *pfd;
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
		r = vfgx_sk_gro_fill(port, q, SK_GRO_SLOTS,
				timeout_ms ? MSG_WAITFORONE : MSG_DONTWAIT);
		return r < 0 ? r : r > 0;
	}
	if (sp->proto == SK_TCP && sq->nb_conns == 1 && timeout_ms) {
		/* one connection: block in recv() itself, one syscall per
		 * wake-up (a server accepts newcomers on the next rx_burst) */
		struct sk_conn *c = sq->conns[sq->live[0]];
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
	for (uint32_t i = 0; i < sq->nb_conns; i++) {
		struct sk_conn *c = sq->conns[sq->live[i]];

		if (c->s_off < c->s_len)
			return 1;
	}
	pfd = sq->pfd;
	if (sq->fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = sq->fd, .events = POLLIN };
	for (uint32_t i = 0; i < sq->nb_conns; i++)
		pfd[n++] = (struct pollfd){ .fd = sq->conns[sq->live[i]]->fd,
					    .events = POLLIN };
	r = poll(pfd, n, timeout_ms);
	if (r < 0) {
		r = errno == EINTR ? 0 : -errno;
	} else {
		/* a newcomer: the next rx_burst accepts it at once */
		if (sp->proto == SK_TCP && sq->fd >= 0 && (pfd[0].revents & POLLIN))
			sq->accept_ready = true;
		r = r > 0;
	}
	return r;
}

size_t vfgx_socket_tx_pending(vfgx_port *port, uint16_t q)
{
	struct sk_priv *sp;
	size_t left = 0;

	if (!port || port->ops != &vfgx_socket_ops || q >= VFGX_MAX_QUEUES)
		return 0;
	sp = port->priv;
	for (uint32_t i = 0; i < sp->q[q].nb_conns; i++) {
		struct sk_conn *c = sp->q[q].conns[sp->q[q].live[i]];

		vfgx_sk_tcp_flush(c);
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
		info->refused += sp->q[q].refused;
		info->idle_closed += sp->q[q].idle_closed;
		info->gro_coalesced += sp->q[q].gro_coalesced;
		info->gso_sent += sp->q[q].gso_sent;
	}
	return 0;
}

int vfgx_socket_tcp_stats(vfgx_port *port, struct vfgx_socket_tcp_stats *st)
{
	struct vfgx_socket_tcp_stats ours = { .argsz = sizeof(ours) };
	struct sk_priv *sp;

	if (!port || !st || port->ops != &vfgx_socket_ops)
		return -EINVAL;
	sp = port->priv;
	for (uint16_t q = 0; q < VFGX_MAX_QUEUES; q++) {
		ours.staged += sp->q[q].staged;
		ours.slow_closed += sp->q[q].slow_closed;
	}
	return vfgx_argsz_fill(st, &ours, sizeof(ours));
}

const struct vfgx_port_ops vfgx_socket_ops = {
	.name = "socket",
	.priv_size = sizeof(struct sk_priv),
	.opts_size = sizeof(struct vfgx_socket_opts),
	.parse = sk_opts_parse,
	.rx_frame_max = sk_frame_max,
	.open = sk_open,
	.rx_burst = sk_rx_burst,
	.release = vfgx_port_release_to_pool,
	.tx_burst = sk_tx_burst,
	.stats = sk_stats,
	.close = sk_close,
	.rx_done = sk_rx_done,
	.txtime_enable = vfgx_sk_txtime_enable,
	.txtime_stats = vfgx_sk_txtime_stats,
};
