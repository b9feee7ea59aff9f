/* socket_txtime.c - launch times on the socket backend's UDP tx path:
 * SO_TXTIME (CLOCK_TAI, errors reported) on each tx socket, one
 * SCM_TXTIME cmsg per datagram, the ETF qdisc found on the route's device
 * through rtnetlink (libmnl), and the qdisc's refusals read back from the socket's
 * error queue (SO_EE_ORIGIN_TXTIME) and counted. */
#include <errno.h>
#include <ifaddrs.h>
#include <libmnl/libmnl.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "socket_priv.h"

#ifndef SO_TXTIME
#define SO_TXTIME 61
#define SCM_TXTIME SO_TXTIME
#endif

#define TXT_CMSG CMSG_SPACE(sizeof(uint64_t))
#define TXT_ERRQ_BYTES (64 << 20) /* the tx sockets' receive buffer */

/* The device the connected socket's datagrams leave by: the one holding
 * its source address, or lo when the peer is this host. */
static int sk_route_dev(struct sk_priv *sp, int fd, char *dev, size_t len)
{
	struct sockaddr_storage src;
	socklen_t sl = sizeof(src);
	struct ifaddrs *ifs, *i;
	int ret = -ENODEV;

	if (getsockname(fd, (struct sockaddr *)&src, &sl))
		return -errno;
	if (getifaddrs(&ifs))
		return -errno;
	for (i = ifs; i && ret; i = i->ifa_next) {
		const struct sockaddr *a = i->ifa_addr;
		bool same = false;

		if (!a || a->sa_family != src.ss_family)
			continue;
		if (a->sa_family == AF_INET)
			same = ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
			       ((struct sockaddr_in *)&src)->sin_addr.s_addr;
		else if (a->sa_family == AF_INET6)
			same = !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
				       &((struct sockaddr_in6 *)&src)->sin6_addr,
				       sizeof(struct in6_addr));
		if (same) {
			snprintf(dev, len, "%s", i->ifa_name);
			ret = 0;
		}
	}
	freeifaddrs(ifs);
	/* the peer is one of our own addresses: the kernel loops it */
	if (!ret && src.ss_family == sp->addr.ss_family &&
	    ((src.ss_family == AF_INET &&
	      ((struct sockaddr_in *)&src)->sin_addr.s_addr ==
		      ((struct sockaddr_in *)&sp->addr)->sin_addr.s_addr) ||
	     (src.ss_family == AF_INET6 &&
	      !memcmp(&((struct sockaddr_in6 *)&src)->sin6_addr,
		      &((struct sockaddr_in6 *)&sp->addr)->sin6_addr,
		      sizeof(struct in6_addr)))))
		snprintf(dev, len, "lo");
	return ret;
}

struct etf_find {
	int ifindex, found;
	bool *root;
	struct tc_etf_qopt *qopt;
};

static int etf_attr(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);

	if (mnl_attr_type_valid(a, TCA_MAX) > 0)
		tb[type] = a;
	return MNL_CB_OK;
}

/* One RTM_NEWQDISC message: ifindex's ETF qdisc and its parameters? */
static int etf_qdisc(const struct nlmsghdr *nh, void *data)
{
	struct etf_find *f = data;
	const struct tcmsg *tc = mnl_nlmsg_get_payload(nh);
	const struct nlattr *tb[TCA_MAX + 1] = { 0 };
	const struct nlattr *a;

	if (f->found || tc->tcm_ifindex != f->ifindex ||
	    mnl_attr_parse(nh, sizeof(*tc), etf_attr, tb) < 0 || !tb[TCA_KIND] ||
	    mnl_attr_validate(tb[TCA_KIND], MNL_TYPE_NUL_STRING) < 0 ||
	    strcmp(mnl_attr_get_str(tb[TCA_KIND]), "etf") || !tb[TCA_OPTIONS])
		return MNL_CB_OK;
	mnl_attr_for_each_nested(a, tb[TCA_OPTIONS])
		if (mnl_attr_get_type(a) == TCA_ETF_PARMS &&
		    mnl_attr_get_payload_len(a) >= sizeof(*f->qopt)) {
			memcpy(f->qopt, mnl_attr_get_payload(a), sizeof(*f->qopt));
			*f->root = tc->tcm_parent == TC_H_ROOT;
			f->found = 1;
		}
	return MNL_CB_OK;
}

/* Is there an ETF qdisc (root, or under mqprio/taprio) on ifindex?  1 and
 * *qopt, *root, 0 none, negative errno when rtnetlink could not be asked
 * (a dump of the qdiscs through libmnl). */
static int sk_etf_find(int ifindex, struct tc_etf_qopt *qopt, bool *root)
{
	struct etf_find f = { .ifindex = ifindex, .root = root, .qopt = qopt };
	char *buf = malloc(MNL_SOCKET_BUFFER_SIZE);
	struct mnl_socket *nl = NULL;
	struct nlmsghdr *nh;
	struct tcmsg *tc;
	unsigned int seq = 1, portid;
	int ret = -ENOMEM;

	if (!buf)
		return ret;
	nh = mnl_nlmsg_put_header(buf);
	nh->nlmsg_type = RTM_GETQDISC;
	nh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nh->nlmsg_seq = seq;
	tc = mnl_nlmsg_put_extra_header(nh, sizeof(*tc));
	tc->tcm_family = AF_UNSPEC;
	tc->tcm_ifindex = ifindex;
	nl = mnl_socket_open(NETLINK_ROUTE);
	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0 ||
	    mnl_socket_sendto(nl, nh, nh->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl, buf, MNL_SOCKET_BUFFER_SIZE);

		if (n < 0) {
			ret = -errno;
			break;
		}
		ret = mnl_cb_run(buf, (size_t)n, seq, portid, etf_qdisc, &f);
		if (ret <= MNL_CB_STOP) {
			ret = ret < 0 ? -errno : 0;
			break;
		}
	}
out:
	if (nl)
		mnl_socket_close(nl);
	free(buf);
	return ret ? ret : f.found;
}

int vfgx_sk_txtime_enable(struct vfgx_port *port, struct vfgx_txtime_info *info)
{
	struct sk_priv *sp = port->priv;
	struct tc_etf_qopt qopt = { 0 };
	struct sock_txtime st = { .clockid = CLOCK_TAI,
				  .flags = SOF_TXTIME_REPORT_ERRORS };
	int ret, ifindex;
	bool root = false;

	if (sp->proto != SK_UDP || sp->role != SK_CLIENT)
		return vfgx_set_error(port->ctx, -EOPNOTSUPP,
				      "%s: txtime needs a UDP socket port with role: client (a TCP stream has no per-datagram launch time; a server's device is known only once a peer has sent)",
				      port->name);
	if (!port->nb_tx_queues)
		return vfgx_set_error(port->ctx, -EOPNOTSUPP, "%s: txtime: the port has no tx queue",
				      port->name);
	if (sp->txtime)
		goto filled;
	ret = sk_route_dev(sp, sp->q[0].fd, sp->txtime_dev, sizeof(sp->txtime_dev));
	if (ret)
		return vfgx_set_error(port->ctx, ret, "%s: txtime: cannot tell the device that %s leaves by (%s)",
				      port->name, sp->uri, strerror(-ret));
	ifindex = (int)if_nametoindex(sp->txtime_dev);
	ret = ifindex ? sk_etf_find(ifindex, &qopt, &root) : -ENODEV;
	if (ret < 0)
		return vfgx_set_error(port->ctx, ret, "%s: txtime: cannot list the qdiscs of %s (%s)",
				      port->name, sp->txtime_dev, strerror(-ret));
	if (ret == 0)
		return vfgx_set_error(port->ctx, -ENOENT,
				      "%s: txtime: no ETF qdisc on %s, the device traffic to %s leaves by, so launch times would be ignored (add one: tc qdisc replace dev %s root etf clockid CLOCK_TAI delta 200000)",
				      port->name, sp->txtime_dev, sp->uri, sp->txtime_dev);
	if (qopt.clockid != CLOCK_TAI)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: txtime: the ETF qdisc on %s keeps clock %d, not CLOCK_TAI (%d): every launch time would be refused (tc ... etf clockid CLOCK_TAI)",
				      port->name, sp->txtime_dev, qopt.clockid, CLOCK_TAI);
	/* the socket's mode must be the qdisc's, or it refuses every packet */
	if (qopt.flags & TC_ETF_DEADLINE_MODE_ON)
		st.flags |= SOF_TXTIME_DEADLINE_MODE;
	for (uint16_t q = 0; q < port->nb_tx_queues; q++) {
		struct sk_queue *sq = &sp->q[q];

		if (setsockopt(sq->fd, SOL_SOCKET, SO_TXTIME, &st, sizeof(st))) {
			int err = errno;
			char why[160] = "";

			/* sending without launch times through a root ETF
			 * loses every packet, silently: no fallback then */
			if (root)
				snprintf(why, sizeof(why),
					 "; the ETF qdisc at the root of %s drops every packet without a launch time, so nothing could be sent (or remove the qdisc)",
					 sp->txtime_dev);
			return vfgx_set_error(port->ctx, root ? -EOPNOTSUPP : -err,
					      "%s: txtime: setsockopt(SO_TXTIME, CLOCK_TAI): %s%s%s",
					      port->name, strerror(err),
					      err == EPERM ? " (CLOCK_TAI launch times need CAP_NET_ADMIN)" : "",
					      why);
		}
		/* The qdisc's refusals queue on the socket's error queue,
		 * which counts against its receive buffer: a full one drops
		 * reports, and their packets would go uncounted.  Room for
		 * about 64k of them (SO_RCVBUFFORCE: CAP_NET_ADMIN, which
		 * SO_TXTIME with CLOCK_TAI needs anyway); else what the
		 * limit allows. */
		int rb = TXT_ERRQ_BYTES;

		if (setsockopt(sq->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rb, sizeof(rb)))
			(void)setsockopt(sq->fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb));
		if (!sq->txctl && !(sq->txctl = calloc(SK_MAX_MSGS, TXT_CMSG)))
			return -ENOMEM;
	}
	if (sp->gso)
		vfgx_info(port->ctx, "%s: txtime: UDP GSO off (one launch time per datagram)",
			  port->name);
	sp->gso = false;
	sp->txtime = true;
	vfgx_info(port->ctx, "%s: txtime on: SO_TXTIME CLOCK_TAI, ETF qdisc on %s (delta %d ns%s%s)",
		  port->name, sp->txtime_dev, qopt.delta,
		  qopt.flags & TC_ETF_DEADLINE_MODE_ON ? ", deadline mode" : "",
		  qopt.flags & TC_ETF_OFFLOAD_ON ? ", offload" : "");
	info->delta_ns = qopt.delta;
	info->deadline_mode = qopt.flags & TC_ETF_DEADLINE_MODE_ON;
	info->offload = qopt.flags & TC_ETF_OFFLOAD_ON;
filled:
	info->device = sp->txtime_dev;
	return 0;
}

/* The UDP payload length of a datagram the error queue gave back: the
 * qdisc's copy starts at the frame (Ethernet) or, on a device without a
 * link header, at the IP header.  0 when it does not parse. */
static uint32_t sk_err_payload(const uint8_t *d, size_t len)
{
	for (size_t l2 = 14;; l2 = 0) {
		size_t ip = l2, udp = 0;

		if (len > ip + 20 && (d[ip] >> 4) == 4 && d[ip + 9] == IPPROTO_UDP)
			udp = ip + (size_t)(d[ip] & 15) * 4;
		else if (len > ip + 40 && (d[ip] >> 4) == 6 && d[ip + 6] == IPPROTO_UDP)
			udp = ip + 40;
		if (udp && len >= udp + 8) {
			uint32_t ul = (uint32_t)d[udp + 4] << 8 | d[udp + 5];

			return ul >= 8 ? ul - 8 : 0;
		}
		if (!l2)
			return 0;
	}
}

/* Count what the qdisc refused since the last call: the error queue holds
 * one report per packet, which also keeps it from filling (a full error
 * queue loses reports: it is charged to the receive buffer). */
static void sk_txtime_drain(struct sk_queue *sq)
{
	for (;;) {
		uint8_t data[96];
		union {
			struct cmsghdr align;
			uint8_t b[CMSG_SPACE(sizeof(struct sock_extended_err) +
					     sizeof(struct sockaddr_in6)) * 2];
		} ctl;
		struct iovec iov = { data, sizeof(data) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
		ssize_t r = recvmsg(sq->fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT);

		if (r < 0)
			return;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			struct sock_extended_err ee;
			uint32_t bytes;

			if (!((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
			      (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)))
				continue;
			memcpy(&ee, CMSG_DATA(c), sizeof(ee));
			if (ee.ee_origin != SO_EE_ORIGIN_TXTIME)
				continue;
			bytes = sk_err_payload(data, (size_t)r);
			if (ee.ee_code == SO_EE_CODE_TXTIME_MISSED) {
				sq->txt_missed++;
				sq->txt_missed_bytes += bytes;
			} else {
				sq->txt_invalid++;
				sq->txt_invalid_bytes += bytes;
			}
		}
	}
}

int vfgx_sk_txtime_stats(struct vfgx_port *port, uint16_t q, struct vfgx_txtime_stats *st)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];

	if (!sp->txtime)
		return -EINVAL;
	sk_txtime_drain(sq);
	st->sent = sq->txt_sent;
	st->missed = sq->txt_missed;
	st->invalid = sq->txt_invalid;
	st->missed_bytes = sq->txt_missed_bytes;
	st->invalid_bytes = sq->txt_invalid_bytes;
	return 0;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Datagram by datagram (no GSO: one launch time each), a flagged packet
 * with its SCM_TXTIME. */
int vfgx_sk_udp_tx_txtime(struct vfgx_port *port, uint16_t q,
			  const struct vfgx_pkt *pkts, uint16_t n)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	uint32_t k = n < SK_MAX_MSGS ? n : SK_MAX_MSGS;
	/* the vfgx_now_ns() clock (MONOTONIC) to the qdisc's: read per call,
	 * so a step of the wall clock moves the next burst, not the run */
	uint64_t tai = clock_ns(CLOCK_TAI), mono = clock_ns(CLOCK_MONOTONIC);
	int64_t off = (int64_t)(tai - mono);
	uint64_t timed = 0;
	int r;

	sk_txtime_drain(sq);
	for (uint32_t i = 0; i < k; i++) {
		struct msghdr *mh = vfgx_sk_tx_msg(sq, i, &pkts[i]);

		if (pkts[i].flags & VFGX_PKT_TXTIME) {
			uint8_t *b = sq->txctl + (size_t)i * TXT_CMSG;
			struct cmsghdr *c = (struct cmsghdr *)b;
			uint64_t t = (uint64_t)((int64_t)pkts[i].ts_ns + off);

			mh->msg_control = b;
			mh->msg_controllen = TXT_CMSG;
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_TXTIME;
			c->cmsg_len = CMSG_LEN(sizeof(t));
			memcpy(CMSG_DATA(c), &t, sizeof(t));
		}
	}
	r = vfgx_sk_sendmmsg(port, q, pkts, k);
	for (int i = 0; i < r; i++)
		timed += (pkts[i].flags & VFGX_PKT_TXTIME) != 0;
	sq->txt_sent += timed;
	return r;
}
