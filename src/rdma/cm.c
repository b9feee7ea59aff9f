/* cm.c - rdma_cm: connect, listen and accept, with the endpoint data
 * carried in the private data of the CM messages. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <vfgx/rdma.h>

#include "vfgx_build.h"
#include "rdma_internal.h"

/* ---------------------------------------------------------------- rdma_cm */

/* Private data: the exposed region, big endian. */
struct cm_priv {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t magic;
} __attribute__((packed));
#define CM_PRIV_MAGIC 0x76666778u /* "vfgx" */

/* UD connection request: the client's QP, so the server can address it. */
struct cm_ud_priv {
	struct cm_priv base;
	uint32_t qpn;
	uint8_t gid[16];
	uint16_t lid;
} __attribute__((packed));

static void priv_pack(struct cm_priv *p, const struct vfgx_rdma_endpoint *ep)
{
	memset(p, 0, sizeof(*p));
	p->magic = htonl(CM_PRIV_MAGIC);
	if (!ep)
		return;
	p->addr = htobe64(ep->addr);
	p->len = htobe64(ep->len);
	p->rkey = htonl(ep->rkey);
}

static void priv_unpack(const void *data, uint8_t len,
			struct vfgx_rdma_endpoint *ep)
{
	struct cm_priv p;

	if (!ep)
		return;
	memset(ep, 0, sizeof(*ep));
	if (!data || len < sizeof(p))
		return;
	memcpy(&p, data, sizeof(p));
	if (ntohl(p.magic) != CM_PRIV_MAGIC)
		return;
	ep->addr = be64toh(p.addr);
	ep->len = be64toh(p.len);
	ep->rkey = ntohl(p.rkey);
}

/* Wait for the next event on ec; -ETIMEDOUT after timeout_ms. */
static int cm_next(struct rdma_event_channel *ec, int timeout_ms,
		   struct rdma_cm_event **ev)
{
	struct pollfd pfd = { .fd = ec->fd, .events = POLLIN };
	uint64_t end = timeout_ms < 0 ? UINT64_MAX :
					 vfgx_now_ns() + (uint64_t)timeout_ms * 1000000u;

	for (;;) {
		uint64_t now = vfgx_now_ns();
		int left = end == UINT64_MAX ? -1 :
			   now >= end ? 0 : (int)((end - now) / 1000000u) + 1;
		int r = poll(&pfd, 1, left);

		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0) {
			if (rdma_get_cm_event(ec, ev) == 0)
				return 0;
			if (errno != EAGAIN)
				return -errno;
		}
		if (r == 0 && left == 0)
			return -ETIMEDOUT;
	}
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

/* Wait for event `want` on ec, mapping the failure events to errors. */
static int cm_expect(vfgx_ctx *ctx, struct rdma_event_channel *ec,
		     enum rdma_cm_event_type want, int timeout_ms,
		     const char *what, struct vfgx_rdma_endpoint *theirs,
		     vfgx_rdma_qp *ud)
{
	struct rdma_cm_event *ev;
	int ret = cm_next(ec, timeout_ms, &ev), st;
	enum rdma_cm_event_type t;

	if (ret == -ETIMEDOUT)
		return vfgx_set_error(ctx, ret, "%s: no answer within %d ms (is the peer up and reachable?)",
				      what, timeout_ms);
	if (ret)
		return vfgx_set_error(ctx, ret, "%s: %s", what, strerror(-ret));
	t = ev->event;
	st = ev->status;
	if (t == want && t == RDMA_CM_EVENT_ESTABLISHED && ud) {
		/* SIDR reply: address handle, qpn and qkey of the server */
		priv_unpack(ev->param.ud.private_data,
			    ev->param.ud.private_data_len, theirs);
		ret = rdma_ud_target(ud, &ev->param.ud.ah_attr, ev->param.ud.qp_num,
				     ev->param.ud.qkey,
				     ud->dev->pattr.active_mtu);
		rdma_ack_cm_event(ev);
		return ret;
	}
	if (t == want && t == RDMA_CM_EVENT_ESTABLISHED && theirs)
		priv_unpack(ev->param.conn.private_data,
			    ev->param.conn.private_data_len, theirs);
	rdma_ack_cm_event(ev);
	if (t == want)
		return 0;
	switch (t) {
	case RDMA_CM_EVENT_REJECTED:
		return vfgx_set_error(ctx, -ECONNREFUSED,
				      "%s: connection refused (no listener on that address and port?)",
				      what);
	case RDMA_CM_EVENT_UNREACHABLE:
		/* a SIDR reply (UD) with status 1 (no such service) or 2
		 * (rejected): nobody listens there */
		if (ud && (st == 1 || st == 2))
			return vfgx_set_error(ctx, -ECONNREFUSED,
					      "%s: connection refused (no UD listener on that address and port?)",
					      what);
		/* fall through */
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return vfgx_set_error(ctx, -EHOSTUNREACH,
				      "%s: %s (status %d; is an RDMA device bound to the route's netdev?)",
				      what, rdma_event_str(t), st);
	default:
		return vfgx_set_error(ctx, -ECONNABORTED, "%s: unexpected %s (status %d)",
				      what, rdma_event_str(t), st);
	}
}

static int cm_make_qp(vfgx_rdma_dev *dev, struct rdma_cm_id *id,
		      const struct vfgx_rdma_qp_conf *conf, const char *what,
		      vfgx_rdma_qp **out)
{
	struct ibv_qp_init_attr ia;
	vfgx_rdma_qp *qp;
	int ret;

	if (id->verbs != dev->verbs)
		return vfgx_set_error(dev->ctx, -EXDEV,
				      "%s: the route uses device %s but the QP was asked on %s (open that device)",
				      what,
				      id->verbs ? ibv_get_device_name(id->verbs->device) : "?",
				      dev->name);
	ret = rdma_qp_alloc(dev, conf, &qp);
	if (ret)
		return ret;
	rdma_qp_init_attr(qp, &ia);
	if (rdma_create_qp(id, dev->pd, &ia)) {
		ret = -errno;
		vfgx_rdma_qp_destroy(qp);
		return vfgx_set_error(dev->ctx, ret, "%s: cannot create a QP: %s",
				      what, strerror(-ret));
	}
	qp->qp = id->qp;
	qp->id = id;
	qp->max_msg = 128u << dev->pattr.active_mtu;
	*out = qp;
	return 0;
}

static void conn_param(struct rdma_conn_param *cp, const struct cm_priv *p,
		       const vfgx_rdma_dev *dev)
{
	memset(cp, 0, sizeof(*cp));
	cp->private_data = p;
	cp->private_data_len = sizeof(*p);
	cp->responder_resources = rdma_rd_atomic(dev);
	cp->initiator_depth = rdma_rd_atomic(dev);
	cp->retry_count = 7;
	cp->rnr_retry_count = 7;
}

int vfgx_rdma_connect(vfgx_rdma_dev *dev, const char *host, uint16_t port,
		      const struct vfgx_rdma_qp_conf *conf,
		      const struct vfgx_rdma_endpoint *mine,
		      struct vfgx_rdma_endpoint *theirs, int timeout_ms,
		      vfgx_rdma_qp **out)
{
	struct addrinfo hints = { .ai_family = AF_INET }, *ai = NULL;
	struct rdma_event_channel *ec;
	struct rdma_conn_param cp;
	struct rdma_cm_id *id = NULL;
	struct cm_ud_priv priv;
	vfgx_rdma_qp *qp = NULL;
	char what[128], ps[8];
	int ret, tmo = timeout_ms < 0 ? 60000 : timeout_ms;

	*out = NULL;
	snprintf(what, sizeof(what), "rdma_cm %s:%u", host, port);
	snprintf(ps, sizeof(ps), "%u", port);
	ret = getaddrinfo(host, ps, &hints, &ai);
	if (ret)
		return vfgx_set_error(dev->ctx, -EINVAL, "%s: cannot resolve: %s",
				      what, gai_strerror(ret));
	ec = rdma_create_event_channel();
	if (!ec || set_nonblock(ec->fd) ||
	    rdma_create_id(ec, &id, NULL, rdma_qp_ud(conf) ? RDMA_PS_UDP : RDMA_PS_TCP)) {
		ret = vfgx_set_error(dev->ctx, -errno ? -errno : -ENODEV,
				     "%s: cannot create an rdma_cm id: %s (is rdma_ucm loaded?)",
				     what, strerror(errno));
		goto err;
	}
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, tmo)) {
		ret = vfgx_set_error(dev->ctx, -errno, "%s: resolve address: %s",
				     what, strerror(errno));
		goto err;
	}
	ret = cm_expect(dev->ctx, ec, RDMA_CM_EVENT_ADDR_RESOLVED, tmo + 100, what, NULL, NULL);
	if (ret)
		goto err;
	if (rdma_resolve_route(id, tmo)) {
		ret = vfgx_set_error(dev->ctx, -errno, "%s: resolve route: %s",
				     what, strerror(errno));
		goto err;
	}
	ret = cm_expect(dev->ctx, ec, RDMA_CM_EVENT_ROUTE_RESOLVED, tmo + 100, what, NULL, NULL);
	if (ret)
		goto err;
	ret = cm_make_qp(dev, id, conf, what, &qp);
	if (ret)
		goto err;
	qp->ec = ec;
	priv_pack(&priv.base, mine);
	conn_param(&cp, &priv.base, dev);
	if (rdma_qp_ud(conf)) {
		priv.qpn = htonl(qp->qp->qp_num);
		memcpy(priv.gid, dev->gid.raw, 16);
		priv.lid = htons(dev->pattr.lid);
		cp.private_data_len = sizeof(priv);
	}
	if (rdma_connect(id, &cp)) {
		ret = vfgx_set_error(dev->ctx, -errno, "%s: connect: %s", what,
				     strerror(errno));
		goto err_qp;
	}
	ret = cm_expect(dev->ctx, ec, RDMA_CM_EVENT_ESTABLISHED, tmo, what, theirs,
			rdma_qp_ud(conf) ? qp : NULL);
	if (ret)
		goto err_qp;
	freeaddrinfo(ai);
	*out = qp;
	return 0;
err_qp:
	qp->dead = true; /* never connected: no disconnect */
	vfgx_rdma_qp_destroy(qp); /* destroys id and ec too */
	freeaddrinfo(ai);
	return ret;
err:
	if (id)
		rdma_destroy_id(id);
	if (ec)
		rdma_destroy_event_channel(ec);
	freeaddrinfo(ai);
	return ret;
}

int vfgx_rdma_listen(vfgx_ctx *ctx, const char *addr, uint16_t port,
		     vfgx_rdma_listener **out)
{
	return vfgx_rdma_listen_type(ctx, addr, port, VFGX_RDMA_RC, out);
}

int vfgx_rdma_listen_type(vfgx_ctx *ctx, const char *addr, uint16_t port,
			  enum vfgx_rdma_qp_type type,
			  vfgx_rdma_listener **out)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	vfgx_rdma_listener *l;
	int ret;

	*out = NULL;
	if (addr && *addr && inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return vfgx_set_error(ctx, -EINVAL,
				      "rdma_cm listen: '%s' is not an IPv4 address",
				      addr);
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->ctx = ctx;
	l->type = type;
	l->ec = rdma_create_event_channel();
	if (!l->ec || set_nonblock(l->ec->fd) ||
	    rdma_create_id(l->ec, &l->id, NULL,
			   type == VFGX_RDMA_UD ? RDMA_PS_UDP : RDMA_PS_TCP)) {
		ret = vfgx_set_error(ctx, -errno ? -errno : -ENODEV,
				     "rdma_cm listen: %s (is rdma_ucm loaded?)",
				     strerror(errno));
		goto err;
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *)&sin) ||
	    rdma_listen(l->id, 16)) {
		ret = vfgx_set_error(ctx, -errno, "rdma_cm listen on %s:%u: %s",
				     addr && *addr ? addr : "0.0.0.0", port,
				     strerror(errno));
		goto err;
	}
	*out = l;
	return 0;
err:
	vfgx_rdma_listener_close(l);
	return ret;
}

uint16_t vfgx_rdma_listener_port(const vfgx_rdma_listener *l)
{
	return ntohs(rdma_get_src_port(l->id));
}

int vfgx_rdma_accept(vfgx_rdma_listener *l, vfgx_rdma_dev *dev,
		     const struct vfgx_rdma_qp_conf *conf,
		     const struct vfgx_rdma_endpoint *mine,
		     struct vfgx_rdma_endpoint *theirs, int timeout_ms,
		     vfgx_rdma_qp **out)
{
	struct rdma_event_channel *ec = NULL;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct rdma_cm_id *id;
	struct cm_ud_priv priv, upeer = { 0 };
	vfgx_rdma_qp *qp;
	char what[64];
	int ret;

	*out = NULL;
	snprintf(what, sizeof(what), "rdma_cm accept on port %u",
		 vfgx_rdma_listener_port(l));
	if (rdma_qp_ud(conf) != (l->type == VFGX_RDMA_UD))
		return vfgx_set_error(dev->ctx, -EINVAL,
				      "%s: the listener is for %s QPs but an %s QP was asked (use vfgx_rdma_listen_type)",
				      what, l->type == VFGX_RDMA_UD ? "UD" : "RC",
				      rdma_qp_ud(conf) ? "UD" : "RC");
	for (;;) {
		ret = cm_next(l->ec, timeout_ms, &ev);
		if (ret == -ETIMEDOUT)
			return vfgx_set_error(dev->ctx, ret, "%s: no connection within %d ms",
					      what, timeout_ms);
		if (ret)
			return vfgx_set_error(dev->ctx, ret, "%s: %s", what,
					      strerror(-ret));
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			break;
		rdma_ack_cm_event(ev); /* e.g. a late event of an old id */
	}
	id = ev->id;
	priv_unpack(ev->param.conn.private_data, ev->param.conn.private_data_len,
		    theirs);
	if (l->type == VFGX_RDMA_UD && ev->param.ud.private_data &&
	    ev->param.ud.private_data_len >= sizeof(upeer))
		memcpy(&upeer, ev->param.ud.private_data, sizeof(upeer));
	rdma_ack_cm_event(ev);
	if (l->type == VFGX_RDMA_UD &&
	    ntohl(upeer.base.magic) != CM_PRIV_MAGIC) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return vfgx_set_error(dev->ctx, -EPROTO,
				      "%s: UD request without the client's QP in its private data (peer is not vfgx?)",
				      what);
	}
	ec = rdma_create_event_channel();
	if (!ec || set_nonblock(ec->fd) || rdma_migrate_id(id, ec)) {
		ret = vfgx_set_error(dev->ctx, -errno ? -errno : -ENOMEM,
				     "%s: cannot move the connection to its own channel: %s",
				     what, strerror(errno));
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		if (ec)
			rdma_destroy_event_channel(ec);
		return ret;
	}
	ret = cm_make_qp(dev, id, conf, what, &qp);
	if (ret) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		rdma_destroy_event_channel(ec);
		return ret;
	}
	qp->ec = ec;
	priv_pack(&priv.base, mine);
	conn_param(&cp, &priv.base, dev);
	if (l->type == VFGX_RDMA_UD) {
		struct vfgx_rdma_endpoint pe = { .qpn = ntohl(upeer.qpn),
						 .lid = ntohs(upeer.lid),
						 .qkey = VFGX_RDMA_UD_QKEY };
		struct ibv_ah_attr aa;

		memcpy(pe.gid, upeer.gid, 16);
		rdma_ah_from_ep(dev, &pe, &aa);
		cp.qp_num = qp->qp->qp_num;
		ret = rdma_ud_target(qp, &aa, pe.qpn, pe.qkey,
				     dev->pattr.active_mtu);
		if (ret || rdma_accept(id, &cp)) {
			if (!ret)
				ret = vfgx_set_error(dev->ctx, -errno, "%s: accept: %s",
						     what, strerror(errno));
			else
				rdma_reject(id, NULL, 0);
			qp->dead = true;
			vfgx_rdma_qp_destroy(qp);
			return ret;
		}
		/* no ESTABLISHED on the answering side of SIDR */
		*out = qp;
		return 0;
	}
	if (rdma_accept(id, &cp)) {
		ret = vfgx_set_error(dev->ctx, -errno, "%s: accept: %s", what,
				     strerror(errno));
		qp->dead = true;
		vfgx_rdma_qp_destroy(qp);
		return ret;
	}
	ret = cm_expect(dev->ctx, ec, RDMA_CM_EVENT_ESTABLISHED,
			timeout_ms < 0 ? 60000 : timeout_ms, what, NULL, NULL);
	if (ret) {
		qp->dead = true;
		vfgx_rdma_qp_destroy(qp);
		return ret;
	}
	*out = qp;
	return 0;
}

void vfgx_rdma_listener_close(vfgx_rdma_listener *l)
{
	if (!l)
		return;
	if (l->id)
		rdma_destroy_id(l->id);
	if (l->ec)
		rdma_destroy_event_channel(l->ec);
	free(l);
}
