/* post.c - the data path: post sends, receives and one-sided operations
 * (write, write with immediate, read, compare-and-swap), poll and wait for
 * completions, fences and the synchronous helpers. */
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

/* ------------------------------------------------------ post and poll */

static int check_range(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t off,
		       size_t len)
{
	if (off > mr->info.len || len > mr->info.len - off)
		return vfgx_set_error(qp->dev->ctx, -ERANGE,
				      "%s: local range %zu+%zu outside the %zu-byte registration",
				      qp->dev->name, off, len, mr->info.len);
	return 0;
}

static void wr_flags(struct ibv_send_wr *wr, unsigned flags)
{
	wr->send_flags = 0;
	if (!(flags & VFGX_RDMA_UNSIGNALED))
		wr->send_flags |= IBV_SEND_SIGNALED;
	if (flags & VFGX_RDMA_FENCE)
		wr->send_flags |= IBV_SEND_FENCE;
	if (flags & VFGX_RDMA_INLINE)
		wr->send_flags |= IBV_SEND_INLINE;
}

/* Account n posted WRs (wr and its successors): a signaled one retires
 * itself and the unsignaled ones before it. */
static void posted(vfgx_rdma_qp *qp, const struct ibv_send_wr *wr, unsigned n)
{
	for (unsigned i = 0; i < n; i++, wr = wr->next) {
		qp->outstanding++;
		if (wr->send_flags & IBV_SEND_SIGNALED) {
			qp->fifo[qp->fifo_tail++ % qp->conf.max_send_wr] = qp->unsig + 1;
			qp->unsig = 0;
		} else {
			qp->unsig++;
		}
	}
}

/* Post the chain of n WRs at wr with one ibv_post_send (one doorbell);
 * their send_flags are set. */
static int post_chain(vfgx_rdma_qp *qp, struct ibv_send_wr *wr, unsigned n)
{
	struct ibv_send_wr *bad = NULL;
	unsigned ok = 0;
	int ret;

	if (qp->outstanding + n > qp->conf.max_send_wr)
		return -ENOSPC;
	ret = ibv_post_send(qp->qp, wr, &bad);
	if (!ret) {
		posted(qp, wr, n);
		return 0;
	}
	/* the WRs before bad went out and will complete */
	for (struct ibv_send_wr *w = wr; bad && w && w != bad; w = w->next)
		ok++;
	posted(qp, wr, ok);
	return vfgx_set_error(qp->dev->ctx, -ret, "%s qp %u: post%s: %s",
			      qp->dev->name, qp->qp->qp_num,
			      n > 1 ? " list" : "", strerror(ret));
}

static int post(vfgx_rdma_qp *qp, struct ibv_send_wr *wr, unsigned flags)
{
	wr_flags(wr, flags);
	wr->next = NULL;
	return post_chain(qp, wr, 1);
}

int vfgx_rdma_post_send(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr,
			const void *buf, uint32_t len, uint64_t wr_id,
			unsigned flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len,
			       .lkey = mr->info.lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND };
	int ret = check_range(qp, mr, (uintptr_t)buf - mr->info.addr, len);

	if (ret)
		return ret;
	if (qp->conf.type == VFGX_RDMA_UD) {
		if (!qp->ah)
			return vfgx_set_error(qp->dev->ctx, -ENOTCONN,
					      "%s: UD QP %u has no peer yet (connect it first)",
					      qp->dev->name, qp->qp->qp_num);
		if (len > qp->max_msg)
			return vfgx_set_error(qp->dev->ctx, -EMSGSIZE,
					      "%s: UD QP %u: datagram of %u bytes exceeds the path MTU of %u bytes (send at most %u, or use an RC QP)",
					      qp->dev->name, qp->qp->qp_num, len,
					      qp->max_msg, qp->max_msg);
		wr.wr.ud.ah = qp->ah;
		wr.wr.ud.remote_qpn = qp->remote_qpn;
		wr.wr.ud.remote_qkey = qp->remote_qkey;
	}
	return post(qp, &wr, flags);
}

int vfgx_rdma_post_recv(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, void *buf,
			uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len,
			       .lkey = mr->info.lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	int ret = check_range(qp, mr, (uintptr_t)buf - mr->info.addr, len);

	if (ret)
		return ret;
	ret = ibv_post_recv(qp->qp, &wr, &bad);
	if (ret)
		return vfgx_set_error(qp->dev->ctx, -ret, "%s qp %u: post recv: %s",
				      qp->dev->name, qp->qp->qp_num,
				      strerror(ret));
	return 0;
}

static int ud_one_sided(vfgx_rdma_qp *qp)
{
	return vfgx_set_error(qp->dev->ctx, -EOPNOTSUPP,
			      "%s: QP %u is UD: WRITE, READ and compare-and-swap need an RC QP",
			      qp->dev->name, qp->qp->qp_num);
}

static int one_sided(vfgx_rdma_qp *qp, enum ibv_wr_opcode op,
		     const vfgx_rdma_mr *mr, size_t loff, uint64_t raddr,
		     uint32_t rkey, uint32_t len, uint32_t imm, uint64_t wr_id,
		     unsigned flags)
{
	struct ibv_sge sge = { .addr = mr->info.addr + loff, .length = len,
			       .lkey = mr->info.lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = op };
	int ret = check_range(qp, mr, loff, len);

	if (ret)
		return ret;
	if (qp->conf.type == VFGX_RDMA_UD)
		return ud_one_sided(qp);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htonl(imm);
	return post(qp, &wr, flags);
}

int vfgx_rdma_write(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
		    uint64_t raddr, uint32_t rkey, uint32_t len, uint64_t wr_id,
		    unsigned flags)
{
	return one_sided(qp, IBV_WR_RDMA_WRITE, mr, loff, raddr, rkey, len, 0,
			 wr_id, flags);
}

int vfgx_rdma_write_list(vfgx_rdma_qp *qp, const struct vfgx_rdma_write_wr *w,
			 unsigned n)
{
	struct ibv_send_wr wr[VFGX_RDMA_LIST_MAX];
	struct ibv_sge sge[VFGX_RDMA_LIST_MAX];
	int ret;

	if (!n || n > VFGX_RDMA_LIST_MAX)
		return vfgx_set_error(qp->dev->ctx, -EINVAL,
				      "%s: a write list has 1..%d work requests, not %u",
				      qp->dev->name, VFGX_RDMA_LIST_MAX, n);
	if (qp->conf.type == VFGX_RDMA_UD)
		return ud_one_sided(qp);
	for (unsigned i = 0; i < n; i++) {
		ret = check_range(qp, w[i].mr, w[i].loff, w[i].len);
		if (ret)
			return ret;
		sge[i] = (struct ibv_sge){ .addr = w[i].mr->info.addr + w[i].loff,
					   .length = w[i].len,
					   .lkey = w[i].mr->info.lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = w[i].wr_id, .sg_list = &sge[i], .num_sge = 1,
			.opcode = w[i].with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM :
						  IBV_WR_RDMA_WRITE,
			.next = i + 1 < n ? &wr[i + 1] : NULL,
		};
		wr[i].wr.rdma.remote_addr = w[i].raddr;
		wr[i].wr.rdma.rkey = w[i].rkey;
		if (w[i].with_imm)
			wr[i].imm_data = htonl(w[i].imm);
		wr_flags(&wr[i], w[i].flags);
	}
	return post_chain(qp, wr, n);
}

int vfgx_rdma_write_imm(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
			uint64_t raddr, uint32_t rkey, uint32_t len,
			uint32_t imm, uint64_t wr_id, unsigned flags)
{
	return one_sided(qp, IBV_WR_RDMA_WRITE_WITH_IMM, mr, loff, raddr, rkey,
			 len, imm, wr_id, flags);
}

int vfgx_rdma_read(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
		   uint64_t raddr, uint32_t rkey, uint32_t len, uint64_t wr_id,
		   unsigned flags)
{
	return one_sided(qp, IBV_WR_RDMA_READ, mr, loff, raddr, rkey, len, 0,
			 wr_id, flags & ~VFGX_RDMA_INLINE);
}

int vfgx_rdma_cas(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
		  uint64_t raddr, uint32_t rkey, uint64_t compare,
		  uint64_t swap, uint64_t wr_id, unsigned flags)
{
	struct ibv_sge sge = { .addr = mr->info.addr + loff, .length = 8,
			       .lkey = mr->info.lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_CMP_AND_SWP };
	int ret = check_range(qp, mr, loff, 8);

	if (ret)
		return ret;
	if (qp->conf.type == VFGX_RDMA_UD)
		return ud_one_sided(qp);
	if (raddr & 7)
		return vfgx_set_error(qp->dev->ctx, -EINVAL,
				      "%s: compare-and-swap target 0x%llx is not 8-byte aligned",
				      qp->dev->name, (unsigned long long)raddr);
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare;
	wr.wr.atomic.swap = swap;
	return post(qp, &wr, flags & ~VFGX_RDMA_INLINE);
}

static enum vfgx_rdma_op map_op(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return VFGX_RDMA_OP_SEND;
	case IBV_WC_RECV: return VFGX_RDMA_OP_RECV;
	case IBV_WC_RECV_RDMA_WITH_IMM: return VFGX_RDMA_OP_RECV_IMM;
	case IBV_WC_RDMA_WRITE: return VFGX_RDMA_OP_WRITE;
	case IBV_WC_RDMA_READ: return VFGX_RDMA_OP_READ;
	case IBV_WC_COMP_SWAP: return VFGX_RDMA_OP_CAS;
	default: return VFGX_RDMA_OP_OTHER;
	}
}

static int map_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return 0;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR: return -EACCES;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
	case IBV_WC_WR_FLUSH_ERR: return -ECONNRESET;
	default: return -EIO;
	}
}

int vfgx_rdma_poll(vfgx_rdma_qp *qp, bool recv, struct vfgx_rdma_wc *out,
		   int max)
{
	struct ibv_wc wc[32];
	int n, total = 0;

	while (total < max) {
		int want = max - total < 32 ? max - total : 32;

		n = ibv_poll_cq(recv ? qp->rcq : qp->scq, want, wc);
		if (n < 0)
			return vfgx_set_error(qp->dev->ctx, -EIO, "%s: poll CQ failed",
					      qp->dev->name);
		for (int i = 0; i < n; i++) {
			struct vfgx_rdma_wc *o = &out[total + i];

			o->wr_id = wc[i].wr_id;
			o->ibv_status = wc[i].status;
			o->status = map_status(wc[i].status);
			o->op = wc[i].status == IBV_WC_SUCCESS ?
					map_op(wc[i].opcode) :
					(recv ? VFGX_RDMA_OP_RECV : VFGX_RDMA_OP_OTHER);
			o->byte_len = wc[i].byte_len;
			if (recv && qp->conf.type == VFGX_RDMA_UD &&
			    o->byte_len >= VFGX_RDMA_GRH_BYTES)
				o->byte_len -= VFGX_RDMA_GRH_BYTES;
			o->has_imm = wc[i].wc_flags & IBV_WC_WITH_IMM;
			o->imm = o->has_imm ? ntohl(wc[i].imm_data) : 0;
			if (recv)
				continue;
			if (o->status) {
				/* the QP is in error: everything flushes */
				qp->dead = qp->dead || o->status == -ECONNRESET;
				if (qp->fifo_head != qp->fifo_tail) {
					qp->outstanding -= qp->outstanding <
									   qp->fifo[qp->fifo_head % qp->conf.max_send_wr] ?
								   qp->outstanding :
								   qp->fifo[qp->fifo_head % qp->conf.max_send_wr];
					qp->fifo_head++;
				} else if (qp->outstanding) {
					qp->outstanding--;
				}
			} else if (qp->fifo_head != qp->fifo_tail) {
				qp->outstanding -= qp->fifo[qp->fifo_head++ % qp->conf.max_send_wr];
			}
		}
		total += n;
		if (n < want)
			break;
	}
	return total;
}

/* Peer gone?  rdma_cm says so with DISCONNECTED; a raw QP only through
 * its state. */
static bool peer_gone(vfgx_rdma_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (qp->dead)
		return true;
	if (qp->ec) {
		struct rdma_cm_event *ev;

		while (rdma_get_cm_event(qp->ec, &ev) == 0) {
			if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
			    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
			    ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
				qp->dead = true;
			rdma_ack_cm_event(ev);
		}
	}
	if (!qp->dead && ibv_query_qp(qp->qp, &a, IBV_QP_STATE, &ia) == 0 &&
	    a.qp_state == IBV_QPS_ERR)
		qp->dead = true;
	return qp->dead;
}

int vfgx_rdma_wait(vfgx_rdma_qp *qp, bool recv, struct vfgx_rdma_wc *wc,
		   int max, int timeout_ms)
{
	uint64_t start = vfgx_now_ns(), next_check = start + 1000000u;
	uint64_t end = timeout_ms < 0 ? UINT64_MAX :
					 start + (uint64_t)timeout_ms * 1000000u;

	for (unsigned spin = 0;; spin++) {
		int n = vfgx_rdma_poll(qp, recv, wc, max);
		uint64_t now;

		if (n)
			return n;
		if (spin & 255)
			continue;
		now = vfgx_now_ns();
		if (now >= next_check) {
			next_check = now + 1000000u;
			if (peer_gone(qp)) {
				/* drain what the flush produced first */
				n = vfgx_rdma_poll(qp, recv, wc, max);
				if (n)
					return n;
				return vfgx_set_error(qp->dev->ctx, -ECONNRESET,
						      "%s qp %u: peer disconnected or the connection failed (%u sends outstanding)",
						      qp->dev->name, qp->qp->qp_num,
						      qp->outstanding);
			}
		}
		if (now >= end)
			return vfgx_set_error(qp->dev->ctx, -ETIMEDOUT,
					      "%s qp %u: no %s completion within %d ms (%u sends outstanding)",
					      qp->dev->name, qp->qp->qp_num,
					      recv ? "receive" : "send", timeout_ms,
					      qp->outstanding);
	}
}

static const char *op_name(enum vfgx_rdma_op op)
{
	static const char *const n[] = { "SEND", "RECV", "RECV_IMM", "WRITE",
					 "READ", "CAS", "op" };

	return n[op <= VFGX_RDMA_OP_OTHER ? op : VFGX_RDMA_OP_OTHER];
}

int vfgx_rdma_fence(vfgx_rdma_qp *qp, int timeout_ms)
{
	struct vfgx_rdma_wc wc[16];
	int first = 0;

	/* unsignaled WRs after the last signaled one give no completion to
	 * wait for: only signaled ones are waited on */
	while (qp->fifo_head != qp->fifo_tail) {
		int n = vfgx_rdma_wait(qp, false, wc, 16, timeout_ms);

		if (n < 0) {
			if (first)
				break;
			return n;
		}
		for (int i = 0; i < n; i++) {
			if (!wc[i].status || first)
				continue;
			first = wc[i].status;
			vfgx_set_error(qp->dev->ctx, first,
				       "%s qp %u: %s wr %llu: %s%s",
				       qp->dev->name, qp->qp->qp_num,
				       op_name(wc[i].op),
				       (unsigned long long)wc[i].wr_id,
				       ibv_wc_status_str(wc[i].ibv_status),
				       first == -EACCES ? " (bad rkey, remote range or access rights)" :
				       first == -ECONNRESET ? " (peer gone or unreachable)" : "");
		}
		if (first && qp->dead)
			break;
	}
	if (first) {
		qp->outstanding = 0;
		qp->unsig = 0;
		qp->fifo_head = qp->fifo_tail;
	}
	return first;
}

int vfgx_rdma_write_sync(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr,
			 size_t loff, uint64_t raddr, uint32_t rkey,
			 uint32_t len, int timeout_ms)
{
	int ret = vfgx_rdma_write(qp, mr, loff, raddr, rkey, len, 0, 0);

	return ret ? ret : vfgx_rdma_fence(qp, timeout_ms);
}

int vfgx_rdma_read_sync(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
			uint64_t raddr, uint32_t rkey, uint32_t len,
			int timeout_ms)
{
	int ret = vfgx_rdma_read(qp, mr, loff, raddr, rkey, len, 0, 0);

	return ret ? ret : vfgx_rdma_fence(qp, timeout_ms);
}

int vfgx_rdma_cas_sync(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
		       uint64_t raddr, uint32_t rkey, uint64_t compare,
		       uint64_t swap, uint64_t *old, int timeout_ms)
{
	int ret = vfgx_rdma_cas(qp, mr, loff, raddr, rkey, compare, swap, 0, 0);

	if (!ret)
		ret = vfgx_rdma_fence(qp, timeout_ms);
	if (ret)
		return ret;
	if (!mr->cpu)
		return vfgx_set_error(qp->dev->ctx, -EINVAL,
				      "%s: compare-and-swap result landed in GPU memory; read it there",
				      qp->dev->name);
	memcpy(old, (uint8_t *)mr->cpu + loff, 8);
	return 0;
}
