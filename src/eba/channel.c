/* channel.c - exposed-buffer channels over RDMA verbs: bounds-checked
 * one-sided write/read into a peer's exposed buffer, fence, descriptor
 * exchange as a connection's first message, and the message ring's
 * producer plugged onto RDMA WRITE / WRITE_WITH_IMM / READ. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include <vfgx/eba.h>

#define CTL_SIZE 256
#define CTL_READ 0   /* 8 bytes: head word read back */
#define CTL_FENCE 8  /* 8 bytes: landing zone of a fence's READ */
#define RING_READ_ID UINT64_MAX /* wr_id of the head word's READ */
#define SIGNAL_EVERY 32 /* ring writes: one signaled in this many */
#define CTL_INLINE 64 /* up to 64 bytes copied for inline writes */
#define OP_TIMEOUT_MS 10000

struct vfgx_channel {
	vfgx_ctx *ctx;
	vfgx_rdma_qp *qp;
	struct vfgx_eba_desc remote;
	vfgx_rdma_mr *local;
	uint8_t *local_cpu; /* base address of the local MR (CPU or GPU) */
	size_t local_len;
	vfgx_rdma_mr *ctl;
	uint8_t *ctl_mem;
	struct vfgx_ring_producer ring;
	bool ring_ok;
	bool read_busy, read_done; /* head word READ posted / completed */
	uint32_t unsig; /* ring writes posted since the last signaled WR */
	int err; /* first failed completion */
};

static vfgx_ctx *qp_ctx(vfgx_rdma_qp *qp)
{
	return vfgx_rdma_dev_ctx(vfgx_rdma_qp_dev(qp));
}

int vfgx_eba_desc_from_mr(const vfgx_rdma_mr *mr, vfgx_rdma_qp *qp,
			  uint64_t node_id, uint32_t buffer_id,
			  enum vfgx_eba_type type, uint64_t state_off,
			  uint32_t lease_s, struct vfgx_eba_desc *out)
{
	const struct vfgx_rdma_mr_info *mi = vfgx_rdma_mr_info(mr);

	memset(out, 0, sizeof(*out));
	out->node_id = node_id;
	out->buffer_id = buffer_id;
	out->type = type;
	out->addr = mi->addr;
	out->rkey = mi->rkey;
	out->size = mi->len;
	out->state_off = state_off;
	out->lease_s = lease_s;
	if (qp) {
		vfgx_rdma_dev *dev = vfgx_rdma_qp_dev(qp);
		union ibv_gid gid;
		int gi = vfgx_rdma_dev_gid_index(dev);

		out->qpn = vfgx_rdma_qp_ibv(qp)->qp_num;
		if (gi >= 0 && !ibv_query_gid(vfgx_rdma_dev_verbs(dev),
					      vfgx_rdma_dev_port(dev), gi, &gid))
			memcpy(out->gid, gid.raw, 16);
	}
	return vfgx_eba_desc_check(qp ? qp_ctx(qp) : NULL, out);
}

int vfgx_eba_exchange(vfgx_rdma_qp *qp, const struct vfgx_eba_desc *mine,
		      struct vfgx_eba_desc *theirs, int timeout_ms)
{
	vfgx_ctx *ctx = qp_ctx(qp);
	struct vfgx_rdma_wc wc;
	vfgx_rdma_mr *mr = NULL;
	uint8_t *buf = aligned_alloc(64, CTL_SIZE);
	int ret;

	if (!buf)
		return vfgx_set_error(ctx, -ENOMEM, "eba exchange: out of memory");
	memset(buf, 0, CTL_SIZE);
	ret = vfgx_rdma_reg_mem(vfgx_rdma_qp_dev(qp), buf, CTL_SIZE, 0, &mr);
	if (ret)
		goto out;
	ret = vfgx_rdma_post_recv(qp, mr, buf + 128, 128, 0xEBA1);
	if (ret)
		goto out;
	ret = vfgx_eba_desc_encode(ctx, mine, buf, 128);
	if (ret < 0)
		goto out;
	ret = vfgx_rdma_post_send(qp, mr, buf, VFGX_EBA_DESC_LEN, 0xEBA2, 0);
	if (ret)
		goto out;
	ret = vfgx_rdma_fence(qp, timeout_ms);
	if (ret)
		goto out;
	ret = vfgx_rdma_wait(qp, true, &wc, 1, timeout_ms);
	if (ret < 0)
		goto out;
	if (wc.status) {
		ret = vfgx_set_error(ctx, wc.status, "eba exchange: receiving the peer's descriptor failed (%s)",
				     vfgx_strerror(wc.status));
		goto out;
	}
	ret = vfgx_eba_desc_decode(ctx, buf + 128, wc.byte_len, theirs);
	if (ret < 0)
		vfgx_set_error(ctx, ret, "eba exchange: peer's descriptor refused: %s",
			       vfgx_last_error(ctx));
	else
		ret = 0;
out:
	if (mr)
		vfgx_rdma_dereg(mr);
	free(buf);
	return ret;
}

int vfgx_channel_open(vfgx_rdma_qp *qp, const struct vfgx_eba_desc *remote,
		      vfgx_rdma_mr *local, vfgx_channel **out)
{
	vfgx_ctx *ctx = qp_ctx(qp);
	vfgx_channel *ch;
	int ret;

	ret = vfgx_eba_desc_check(ctx, remote);
	if (ret)
		return ret;
	if (remote->type == VFGX_EBA_CTRL || !remote->size)
		return vfgx_set_error(ctx, -EINVAL, "channel: peer buffer %u of node %llu is a ctrl descriptor with no memory",
				      remote->buffer_id, (unsigned long long)remote->node_id);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return vfgx_set_error(ctx, -ENOMEM, "channel: out of memory");
	ch->ctx = ctx;
	ch->qp = qp;
	ch->remote = *remote;
	ch->local = local;
	if (local) {
		/* the address the MR covers: CPU, or GPU for a device region,
		 * so ring messages may come straight from GPU memory */
		ch->local_cpu = (uint8_t *)(uintptr_t)vfgx_rdma_mr_info(local)->addr;
		ch->local_len = vfgx_rdma_mr_info(local)->len;
	}
	ch->ctl_mem = aligned_alloc(64, CTL_SIZE);
	if (!ch->ctl_mem) {
		free(ch);
		return vfgx_set_error(ctx, -ENOMEM, "channel: out of memory");
	}
	memset(ch->ctl_mem, 0, CTL_SIZE);
	ret = vfgx_rdma_reg_mem(vfgx_rdma_qp_dev(qp), ch->ctl_mem, CTL_SIZE, 0, &ch->ctl);
	if (ret) {
		free(ch->ctl_mem);
		free(ch);
		return ret;
	}
	*out = ch;
	return 0;
}

void vfgx_channel_close(vfgx_channel *ch)
{
	if (!ch)
		return;
	vfgx_rdma_fence(ch->qp, OP_TIMEOUT_MS);
	vfgx_rdma_dereg(ch->ctl);
	free(ch->ctl_mem);
	free(ch);
}

const struct vfgx_eba_desc *vfgx_channel_remote(const vfgx_channel *ch)
{
	return &ch->remote;
}

static int check_range(vfgx_channel *ch, const char *op, uint64_t roff,
		       size_t loff, uint32_t len, bool need_local)
{
	if (roff > ch->remote.size || len > ch->remote.size - roff)
		return vfgx_set_error(ch->ctx, -ERANGE,
				      "channel %s: offset %llu + %u bytes beyond node %llu buffer %u (%llu bytes); nothing sent",
				      op, (unsigned long long)roff, len,
				      (unsigned long long)ch->remote.node_id,
				      ch->remote.buffer_id,
				      (unsigned long long)ch->remote.size);
	if (need_local && (!ch->local || loff > ch->local_len ||
			   len > ch->local_len - loff))
		return vfgx_set_error(ch->ctx, -EFAULT,
				      "channel %s: local offset %zu + %u bytes outside the channel's local MR (%zu bytes)",
				      op, loff, len, ch->local_len);
	return 0;
}

/* Reap send completions: wait for at least one (wait), or take what is
 * there.  Notes the head word READ's completion. */
static int reap_some(vfgx_channel *ch, bool wait)
{
	struct vfgx_rdma_wc wc[32];
	int n = wait ? vfgx_rdma_wait(ch->qp, false, wc, 32, OP_TIMEOUT_MS) :
		       vfgx_rdma_poll(ch->qp, false, wc, 32);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		if (!wc[i].status && wc[i].wr_id == RING_READ_ID)
			ch->read_done = true;
		if (wc[i].status && !ch->err)
			ch->err = vfgx_set_error(ch->ctx, wc[i].status,
						 "channel: operation %llu on node %llu buffer %u failed: %s",
						 (unsigned long long)wc[i].wr_id,
						 (unsigned long long)ch->remote.node_id,
						 ch->remote.buffer_id,
						 vfgx_strerror(wc[i].status));
	}
	return ch->err;
}

/* Reap send completions when the send queue is full. */
static int reap(vfgx_channel *ch)
{
	return reap_some(ch, true);
}

enum post_kind { POST_WRITE, POST_WRITE_IMM, POST_READ };

static int post(vfgx_channel *ch, enum post_kind k, const vfgx_rdma_mr *mr,
		size_t loff, uint64_t roff, uint32_t len, uint32_t imm,
		unsigned flags)
{
	uint64_t raddr = ch->remote.addr + roff;

	for (;;) {
		int ret;

		switch (k) {
		case POST_WRITE:
			ret = vfgx_rdma_write(ch->qp, mr, loff, raddr, ch->remote.rkey,
					      len, roff, flags);
			break;
		case POST_WRITE_IMM:
			ret = vfgx_rdma_write_imm(ch->qp, mr, loff, raddr, ch->remote.rkey,
						  len, imm, roff, flags);
			break;
		default:
			ret = vfgx_rdma_read(ch->qp, mr, loff, raddr, ch->remote.rkey,
					     len, roff, flags);
			break;
		}
		if (ret != -ENOSPC)
			return ret;
		ret = reap(ch);
		if (ret < 0)
			return ret;
	}
}

int vfgx_channel_write(vfgx_channel *ch, uint64_t roff, size_t loff,
		       uint32_t len)
{
	int ret = check_range(ch, "write", roff, loff, len, true);

	return ret ? ret : post(ch, POST_WRITE, ch->local, loff, roff, len, 0, 0);
}

int vfgx_channel_read(vfgx_channel *ch, uint64_t roff, size_t loff,
		      uint32_t len)
{
	int ret = check_range(ch, "read", roff, loff, len, true);

	return ret ? ret : post(ch, POST_READ, ch->local, loff, roff, len, 0, 0);
}

int vfgx_channel_fence(vfgx_channel *ch, int timeout_ms)
{
	int ret;

	if (ch->unsig) {
		/* ring writes since the last signaled WR give no completion:
		 * a signaled READ after them completes only after they did
		 * (send completions of one RC QP arrive in posting order) */
		for (;;) {
			ret = vfgx_rdma_read(ch->qp, ch->ctl, CTL_FENCE,
					     ch->remote.addr + ch->ring.state_off,
					     ch->remote.rkey, 8, 0, 0);
			if (ret != -ENOSPC)
				break;
			ret = reap(ch);
			if (ret < 0)
				return ret;
		}
		if (ret)
			return ret;
		ch->unsig = 0;
	}
	ret = vfgx_rdma_fence(ch->qp, timeout_ms);
	if (!ret && ch->read_busy)
		ch->read_done = true; /* the fence waited for it too */
	return ret ? ret : ch->err;
}

/* ring transport: offsets are into the peer's buffer */
static int ring_write(void *user, uint64_t off, const void *src, uint32_t len,
		      bool wake)
{
	vfgx_channel *ch = user;
	const uint8_t *s = src;
	enum post_kind k = wake ? POST_WRITE_IMM : POST_WRITE;
	int ret = check_range(ch, "ring write", off, 0, len, false);
	unsigned sig = VFGX_RDMA_UNSIGNALED;

	if (ret)
		return ret;
	/* one completion per SIGNAL_EVERY writes retires the ones before it;
	 * a failed write still completes (with its error) */
	if (++ch->unsig >= SIGNAL_EVERY) {
		sig = 0;
		ch->unsig = 0;
	}
	if (ch->local_cpu && s >= ch->local_cpu && len <= ch->local_len &&
	    (size_t)(s - ch->local_cpu) <= ch->local_len - len)
		return post(ch, k, ch->local, (size_t)(s - ch->local_cpu), off,
			    len, (uint32_t)off, sig);
	if (len > CTL_INLINE)
		return vfgx_set_error(ch->ctx, -EFAULT,
				      "channel ring: a %u-byte message must lie in the channel's local MR", len);
	/* small (the 16-byte record header): copied into the WQE at post */
	memcpy(ch->ctl_mem + CTL_INLINE, s, len);
	return post(ch, k, ch->ctl, CTL_INLINE, off, len, (uint32_t)off,
		    VFGX_RDMA_INLINE | sig);
}

/* A record's payload WRITE and its header WRITE (inline, WRITE_WITH_IMM
 * when wake) as one post list: one doorbell per record.  The consumer does
 * not rely on the order they land in: the header's check value covers
 * the payload. */
static int ring_write_rec(void *user, uint64_t off, const void *payload,
			  uint32_t len, const void *hdr, bool wake)
{
	vfgx_channel *ch = user;
	const uint8_t *s = payload;
	struct vfgx_rdma_write_wr w[2];
	int ret;

	if (!ch->local_cpu || s < ch->local_cpu || len > ch->local_len ||
	    (size_t)(s - ch->local_cpu) > ch->local_len - len) {
		/* not in the local MR: small payloads go inline, one by one */
		ret = ring_write(user, off + VFGX_RING_HDR, payload, len, false);
		return ret ? ret : ring_write(user, off, hdr, VFGX_RING_HDR, wake);
	}
	ret = check_range(ch, "ring write", off, 0, VFGX_RING_HDR + len, false);
	if (ret)
		return ret;
	memcpy(ch->ctl_mem + CTL_INLINE, hdr, VFGX_RING_HDR);
	w[0] = (struct vfgx_rdma_write_wr){
		.mr = ch->local, .loff = (size_t)(s - ch->local_cpu),
		.raddr = ch->remote.addr + off + VFGX_RING_HDR,
		.rkey = ch->remote.rkey, .len = len,
		.wr_id = off + VFGX_RING_HDR, .flags = VFGX_RDMA_UNSIGNALED,
	};
	w[1] = (struct vfgx_rdma_write_wr){
		.mr = ch->ctl, .loff = CTL_INLINE, .raddr = ch->remote.addr + off,
		.rkey = ch->remote.rkey, .len = VFGX_RING_HDR, .wr_id = off,
		.flags = VFGX_RDMA_INLINE | VFGX_RDMA_UNSIGNALED,
		.with_imm = wake, .imm = (uint32_t)off,
	};
	/* one completion per SIGNAL_EVERY writes, as in ring_write() */
	ch->unsig += 2;
	if (ch->unsig >= SIGNAL_EVERY) {
		w[1].flags &= ~VFGX_RDMA_UNSIGNALED;
		ch->unsig = 0;
	}
	for (;;) {
		ret = vfgx_rdma_write_list(ch->qp, w, 2);
		if (ret != -ENOSPC)
			return ret;
		ret = reap(ch);
		if (ret < 0)
			return ret;
	}
}

static int ring_read_start(void *user, uint64_t off)
{
	vfgx_channel *ch = user;
	int ret = check_range(ch, "ring read", off, 0, 8, false);

	if (ret)
		return ret;
	for (;;) {
		ret = vfgx_rdma_read(ch->qp, ch->ctl, CTL_READ,
				     ch->remote.addr + off, ch->remote.rkey, 8,
				     RING_READ_ID, 0);
		if (ret != -ENOSPC)
			break;
		ret = reap(ch);
		if (ret < 0)
			return ret;
	}
	if (ret)
		return ret;
	ch->read_busy = true;
	ch->read_done = false;
	ch->unsig = 0; /* the READ's completion retires the writes before it */
	return 0;
}

static int ring_read_poll(void *user, void *dst, bool wait)
{
	vfgx_channel *ch = user;

	if (!ch->read_busy)
		return -EINVAL;
	while (!ch->read_done) {
		int ret = reap_some(ch, wait);

		if (ret < 0)
			return ret;
		if (!wait && !ch->read_done)
			return 0;
	}
	memcpy(dst, ch->ctl_mem + CTL_READ, 8);
	ch->read_busy = ch->read_done = false;
	return 1;
}

int vfgx_channel_ring_init(vfgx_channel *ch, uint64_t ring_size)
{
	struct vfgx_ring_transport tr = { ring_write, ring_read_start,
					  ring_read_poll, ch, ring_write_rec };

	if (ch->remote.type != VFGX_EBA_RX || ch->remote.state_off == VFGX_EBA_NO_STATE ||
	    ring_size > ch->remote.size)
		return vfgx_set_error(ch->ctx, -EINVAL,
				      "channel ring: node %llu buffer %u must be an rx buffer with a state word and >= %llu bytes",
				      (unsigned long long)ch->remote.node_id,
				      ch->remote.buffer_id, (unsigned long long)ring_size);
	/* each record's check value is computed over its payload on the CPU */
	if (ch->local && !vfgx_rdma_mr_cpu_addr(ch->local))
		return vfgx_set_error(ch->ctx, -EINVAL,
				      "channel ring: the local MR is GPU memory, but ring records carry a check value computed on the CPU (send ring messages from host memory; vfgx_channel_write sends GPU memory)");
	if (vfgx_ring_producer_init(&ch->ring, &tr, 0, ring_size, ch->remote.state_off))
		return vfgx_set_error(ch->ctx, -EINVAL,
				      "channel ring: size %llu must be a power of two >= 64 with the state word (offset %llu) outside it",
				      (unsigned long long)ring_size,
				      (unsigned long long)ch->remote.state_off);
	ch->ring_ok = true;
	return 0;
}

int vfgx_channel_ring_send(vfgx_channel *ch, const void *msg, uint32_t len,
			   bool wake, int timeout_ms)
{
	uint64_t end = 0;
	int ret;

	if (!ch->ring_ok)
		return vfgx_set_error(ch->ctx, -EINVAL, "channel ring: call vfgx_channel_ring_init() first");
	while ((ret = vfgx_ring_send(&ch->ring, msg, len, wake)) == -EAGAIN) {
		uint64_t now = vfgx_now_ns();

		if (!end)
			end = now + (uint64_t)timeout_ms * 1000000ull;
		else if (timeout_ms >= 0 && now > end)
			return vfgx_set_error(ch->ctx, -ETIMEDOUT,
					      "channel ring: node %llu buffer %u stayed full for %d ms (consumer not releasing)",
					      (unsigned long long)ch->remote.node_id,
					      ch->remote.buffer_id, timeout_ms);
		sched_yield();
	}
	if (ret == -EMSGSIZE)
		return vfgx_set_error(ch->ctx, ret, "channel ring: %u-byte message over the ring's limit of %u",
				      len, vfgx_ring_max_payload(ch->ring.size));
	if (ret == -EPROTO)
		return vfgx_set_error(ch->ctx, ret, "channel ring: node %llu's head word is beyond what was sent (corrupt ring)",
				      (unsigned long long)ch->remote.node_id);
	return ret;
}

const struct vfgx_ring_producer *vfgx_channel_ring(const vfgx_channel *ch)
{
	return &ch->ring;
}

int vfgx_channel_ring_drain(vfgx_channel *ch, int timeout_ms)
{
	uint64_t end = vfgx_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int ret;

	ret = vfgx_channel_fence(ch, timeout_ms);
	while (!ret && ch->ring.cached_head != ch->ring.tail) {
		if (vfgx_now_ns() > end)
			return vfgx_set_error(ch->ctx, -ETIMEDOUT,
					      "channel ring: node %llu released %llu of %llu bytes within %d ms",
					      (unsigned long long)ch->remote.node_id,
					      (unsigned long long)ch->ring.cached_head,
					      (unsigned long long)ch->ring.tail, timeout_ms);
		ret = vfgx_ring_refresh(&ch->ring);
		if (ret == -EPROTO)
			vfgx_set_error(ch->ctx, ret, "channel ring: node %llu's head word is beyond what was sent (corrupt ring)",
				       (unsigned long long)ch->remote.node_id);
	}
	return ret;
}

int vfgx_channel_wake_arm(vfgx_rdma_qp *qp, vfgx_rdma_mr *mr, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		int ret = vfgx_rdma_post_recv(qp, mr, vfgx_rdma_mr_cpu_addr(mr), 0, 0xEBA3);

		if (ret)
			return ret;
	}
	return 0;
}

int vfgx_channel_wake_wait(vfgx_rdma_qp *qp, vfgx_rdma_mr *mr, int timeout_ms)
{
	struct vfgx_rdma_wc wc;
	int ret = vfgx_rdma_wait(qp, true, &wc, 1, timeout_ms);

	if (ret == -ETIMEDOUT)
		return 0;
	if (ret < 0)
		return ret;
	if (wc.status)
		return wc.status;
	ret = vfgx_channel_wake_arm(qp, mr, 1);
	return ret ? ret : 1;
}
