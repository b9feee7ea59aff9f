/* qp.c - queue pairs: RC and UD creation, raw endpoint exchange and
 * connection, teardown, accessors. */
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
#include "core/argsz.h"
#include "rdma_internal.h"

/* ---------------------------------------------------------- queue pairs */

/* -EINVAL for an argsz this library does not know. */
static int conf_defaults(struct vfgx_rdma_qp_conf *c,
			 const struct vfgx_rdma_qp_conf *in)
{
	memset(c, 0, sizeof(*c));
	if (in && vfgx_argsz_copy(c, sizeof(*c), in, sizeof(*c)))
		return -EINVAL;
	c->max_send_wr = c->max_send_wr ? c->max_send_wr : 256;
	c->max_recv_wr = c->max_recv_wr ? c->max_recv_wr : 256;
	c->max_sge = c->max_sge ? c->max_sge : 1;
	c->max_inline = c->max_inline ? c->max_inline : 64;
	c->timeout = c->timeout ? c->timeout : 14;
	c->retry_cnt = c->retry_cnt ? c->retry_cnt : 7;
	c->rnr_retry = c->rnr_retry ? c->rnr_retry : 7;
	return 0;
}

int rdma_qp_alloc(vfgx_rdma_dev *dev, const struct vfgx_rdma_qp_conf *in,
		  vfgx_rdma_qp **out)
{
	vfgx_rdma_qp *qp = calloc(1, sizeof(*qp));

	*out = NULL;
	if (!qp)
		return -ENOMEM;
	qp->dev = dev;
	if (conf_defaults(&qp->conf, in)) {
		free(qp);
		return vfgx_set_error(dev->ctx, -EINVAL,
				      "%s: struct vfgx_rdma_qp_conf argsz %u not understood by this libvfgx",
				      dev->name, in->argsz);
	}
	if (qp->conf.type != VFGX_RDMA_RC && qp->conf.type != VFGX_RDMA_UD) {
		int t = qp->conf.type;

		free(qp);
		return vfgx_set_error(dev->ctx, -EINVAL,
				      "%s: queue pair type %d is neither RC nor UD",
				      dev->name, t);
	}
	qp->fifo = calloc(qp->conf.max_send_wr, sizeof(*qp->fifo));
	qp->scq = ibv_create_cq(dev->verbs, (int)qp->conf.max_send_wr, NULL,
				NULL, 0);
	qp->rcq = ibv_create_cq(dev->verbs, (int)qp->conf.max_recv_wr, NULL,
				NULL, 0);
	if (!qp->fifo || !qp->scq || !qp->rcq) {
		int ret = vfgx_set_error(dev->ctx, -ENOMEM,
					 "%s: cannot create completion queues of %u/%u entries",
					 dev->name, qp->conf.max_send_wr,
					 qp->conf.max_recv_wr);

		vfgx_rdma_qp_destroy(qp);
		return ret;
	}
	qp->psn = (uint32_t)(vfgx_now_ns() ^ (uintptr_t)qp) & 0xffffff;
	*out = qp;
	return 0;
}

void rdma_qp_init_attr(vfgx_rdma_qp *qp, struct ibv_qp_init_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->send_cq = qp->scq;
	a->recv_cq = qp->rcq;
	a->qp_type = qp->conf.type == VFGX_RDMA_UD ? IBV_QPT_UD : IBV_QPT_RC;
	a->cap.max_send_wr = qp->conf.max_send_wr;
	a->cap.max_recv_wr = qp->conf.max_recv_wr;
	a->cap.max_send_sge = qp->conf.max_sge;
	a->cap.max_recv_sge = qp->conf.max_sge;
	a->cap.max_inline_data = qp->conf.max_inline;
}

bool rdma_qp_ud(const struct vfgx_rdma_qp_conf *c)
{
	return c && c->type == VFGX_RDMA_UD;
}

int vfgx_rdma_qp_create(vfgx_rdma_dev *dev,
			const struct vfgx_rdma_qp_conf *conf,
			vfgx_rdma_qp **out)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a = { 0 };
	vfgx_rdma_qp *qp;
	int ret;

	ret = rdma_qp_alloc(dev, conf, &qp);
	if (ret)
		return ret;
	rdma_qp_init_attr(qp, &ia);
	qp->qp = ibv_create_qp(dev->pd, &ia);
	if (!qp->qp) {
		ret = -errno;
		vfgx_rdma_qp_destroy(qp);
		return vfgx_set_error(dev->ctx, ret, "%s: cannot create a%s QP: %s",
				      dev->name,
				      rdma_qp_ud(conf) ? " UD" : "n RC",
				      strerror(-ret));
	}
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = dev->port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	a.qkey = VFGX_RDMA_UD_QKEY;
	if (ibv_modify_qp(qp->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					      IBV_QP_PORT |
					      (rdma_qp_ud(conf) ? IBV_QP_QKEY :
							  IBV_QP_ACCESS_FLAGS))) {
		ret = -errno;
		vfgx_rdma_qp_destroy(qp);
		return vfgx_set_error(dev->ctx, ret, "%s: QP to INIT: %s",
				      dev->name, strerror(-ret));
	}
	*out = qp;
	return 0;
}

int vfgx_rdma_qp_endpoint(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr,
			  struct vfgx_rdma_endpoint *ep)
{
	memset(ep, 0, sizeof(*ep));
	ep->qpn = qp->qp->qp_num;
	ep->psn = qp->psn;
	memcpy(ep->gid, qp->dev->gid.raw, 16);
	ep->lid = qp->dev->pattr.lid;
	ep->port = qp->dev->port;
	ep->mtu = (uint8_t)qp->dev->pattr.active_mtu;
	ep->qkey = qp->conf.type == VFGX_RDMA_UD ? VFGX_RDMA_UD_QKEY : 0;
	if (mr) {
		ep->addr = mr->info.addr;
		ep->rkey = mr->info.rkey;
		ep->len = mr->info.len;
	}
	return 0;
}

uint8_t rdma_rd_atomic(const vfgx_rdma_dev *dev)
{
	int m = dev->dattr.max_qp_rd_atom;

	return (uint8_t)(m > 0 && m < RDMA_MAX_RD_ATOMIC ? m : RDMA_MAX_RD_ATOMIC);
}

/* UD: the address handle to the peer's gid/lid and where datagrams go. */
int rdma_ud_target(vfgx_rdma_qp *qp, const struct ibv_ah_attr *aa,
		   uint32_t qpn, uint32_t qkey, int mtu)
{
	struct ibv_ah_attr a = *aa;

	if (qp->ah)
		ibv_destroy_ah(qp->ah);
	qp->ah = ibv_create_ah(qp->dev->pd, &a);
	if (!qp->ah)
		return vfgx_set_error(qp->dev->ctx, -errno,
				      "%s: UD QP %u: cannot create an address handle to qpn %u: %s (check the gid index with gid_index)",
				      qp->dev->name, qp->qp->qp_num, qpn,
				      strerror(errno));
	qp->remote_qpn = qpn;
	qp->remote_qkey = qkey ? qkey : VFGX_RDMA_UD_QKEY;
	qp->max_msg = 128u << mtu;
	return 0;
}

void rdma_ah_from_ep(const vfgx_rdma_dev *dev,
		     const struct vfgx_rdma_endpoint *r,
		     struct ibv_ah_attr *aa)
{
	static const uint8_t zero[16];

	memset(aa, 0, sizeof(*aa));
	aa->dlid = r->lid;
	aa->port_num = dev->port;
	if (memcmp(r->gid, zero, 16)) {
		aa->is_global = 1;
		memcpy(aa->grh.dgid.raw, r->gid, 16);
		aa->grh.sgid_index = (uint8_t)dev->gid_index;
		aa->grh.hop_limit = 64;
	}
}

static int ud_connect(vfgx_rdma_qp *qp, const struct vfgx_rdma_endpoint *r,
		      int mtu)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	struct ibv_ah_attr aa;

	if (ibv_modify_qp(qp->qp, &a, IBV_QP_STATE))
		return vfgx_set_error(qp->dev->ctx, -errno, "%s: UD QP %u to RTR: %s",
				      qp->dev->name, qp->qp->qp_num,
				      strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = qp->psn;
	if (ibv_modify_qp(qp->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return vfgx_set_error(qp->dev->ctx, -errno, "%s: UD QP %u to RTS: %s",
				      qp->dev->name, qp->qp->qp_num,
				      strerror(errno));
	rdma_ah_from_ep(qp->dev, r, &aa);
	return rdma_ud_target(qp, &aa, r->qpn, r->qkey, mtu);
}

enum vfgx_rdma_qp_type vfgx_rdma_qp_type(const vfgx_rdma_qp *qp)
{
	return qp->conf.type;
}

uint32_t vfgx_rdma_qp_max_msg(const vfgx_rdma_qp *qp)
{
	return qp->conf.type == VFGX_RDMA_UD ? qp->max_msg : 0;
}

int vfgx_rdma_qp_connect(vfgx_rdma_qp *qp,
			 const struct vfgx_rdma_endpoint *r)
{
	vfgx_rdma_dev *dev = qp->dev;
	struct ibv_qp_attr a = { 0 };
	static const uint8_t zero[16];
	int mtu = r->mtu && r->mtu < dev->pattr.active_mtu ? r->mtu :
							   dev->pattr.active_mtu;

	if (qp->conf.type == VFGX_RDMA_UD)
		return ud_connect(qp, r, mtu);

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu;
	a.dest_qp_num = r->qpn;
	a.rq_psn = r->psn & 0xffffff;
	a.max_dest_rd_atomic = rdma_rd_atomic(dev);
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = r->lid;
	a.ah_attr.port_num = dev->port;
	if (memcmp(r->gid, zero, 16)) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, r->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)dev->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	if (ibv_modify_qp(qp->qp, &a, IBV_QP_STATE | IBV_QP_AV |
					      IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					      IBV_QP_RQ_PSN |
					      IBV_QP_MAX_DEST_RD_ATOMIC |
					      IBV_QP_MIN_RNR_TIMER))
		return vfgx_set_error(dev->ctx, -errno,
				      "%s: QP %u to RTR (remote qpn %u): %s (check the gid index with -x / gid_index)",
				      dev->name, qp->qp->qp_num, r->qpn,
				      strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = qp->conf.timeout;
	a.retry_cnt = qp->conf.retry_cnt;
	a.rnr_retry = qp->conf.rnr_retry;
	a.sq_psn = qp->psn;
	a.max_rd_atomic = rdma_rd_atomic(dev);
	if (ibv_modify_qp(qp->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
					      IBV_QP_RETRY_CNT |
					      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					      IBV_QP_MAX_QP_RD_ATOMIC))
		return vfgx_set_error(dev->ctx, -errno, "%s: QP %u to RTS: %s",
				      dev->name, qp->qp->qp_num,
				      strerror(errno));
	return 0;
}

void vfgx_rdma_qp_destroy(vfgx_rdma_qp *qp)
{
	if (!qp)
		return;
	if (qp->ah)
		ibv_destroy_ah(qp->ah);
	if (qp->id) {
		if (!qp->dead && qp->conf.type == VFGX_RDMA_RC)
			rdma_disconnect(qp->id);
		if (qp->qp)
			rdma_destroy_qp(qp->id);
		rdma_destroy_id(qp->id);
	} else if (qp->qp) {
		ibv_destroy_qp(qp->qp);
	}
	if (qp->scq)
		ibv_destroy_cq(qp->scq);
	if (qp->rcq)
		ibv_destroy_cq(qp->rcq);
	if (qp->ec)
		rdma_destroy_event_channel(qp->ec);
	free(qp->fifo);
	free(qp);
}

struct ibv_qp *vfgx_rdma_qp_ibv(const vfgx_rdma_qp *qp) { return qp->qp; }
struct ibv_cq *vfgx_rdma_qp_send_cq(const vfgx_rdma_qp *qp) { return qp->scq; }
struct ibv_cq *vfgx_rdma_qp_recv_cq(const vfgx_rdma_qp *qp) { return qp->rcq; }
vfgx_rdma_dev *vfgx_rdma_qp_dev(const vfgx_rdma_qp *qp) { return qp->dev; }
uint32_t vfgx_rdma_qp_outstanding(const vfgx_rdma_qp *qp) { return qp->outstanding; }
