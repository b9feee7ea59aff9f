/* socket_udp.c - the socket backend's UDP fast path: recvmmsg() straight
 * into pool buffers, or UDP GRO batches split back into datagrams;
 * sendmmsg(), with runs of equal-sized datagrams sent as GSO batches. */
#include <errno.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <string.h>

#include "socket_priv.h"

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
int vfgx_sk_udp_rx_direct(struct vfgx_port *port, uint16_t q,
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
		vfgx_sk_fill(&pkts[n++], q, sq->bufs[i], sq->msgs[i].msg_len, 0, now);
		sq->st.rx_packets++;
		sq->st.rx_bytes += sq->msgs[i].msg_len;
	}
	if ((uint32_t)r < k)
		vfgx_pool_free_bulk(pool, sq->bufs + r, k - (uint32_t)r);
	return n;
}

/* Receive up to k (possibly coalesced) datagrams into the GRO slots.
 * Returns how many, 0 when none (or timed out), or a negative errno. */
int vfgx_sk_gro_fill(struct vfgx_port *port, uint16_t q, uint32_t k,
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
int vfgx_sk_udp_rx_gro(struct vfgx_port *port, uint16_t q,
			 struct vfgx_pkt *pkts, uint16_t max)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	vfgx_pool *pool = port->rx_pools[q];
	uint32_t bsz = vfgx_pool_buf_size(pool);
	uint64_t now;
	uint16_t n = 0;

	if (sq->gro_i >= sq->gro_n) {
		int r = vfgx_sk_gro_fill(port, q, max < SK_GRO_SLOTS ? max : SK_GRO_SLOTS,
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
				vfgx_sk_fill(&pkts[n++], q, b, 0, 0, now);
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
			vfgx_sk_fill(&pkts[n++], q, b, seg, 0, now);
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

int vfgx_sk_udp_tx(struct vfgx_port *port, uint16_t q,
		     const struct vfgx_pkt *pkts, uint16_t n)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	uint32_t k = n < SK_MAX_MSGS ? n : SK_MAX_MSGS;

	if (sp->role == SK_SERVER && !sq->peer_len)
		return vfgx_set_error(port->ctx, -ENOTCONN,
				      "%s: tx queue %u: a UDP server replies to the last sender and none has sent yet (use role: client to send first)",
				      port->name, q);
	if (sp->gso && n > 1)
		return sk_udp_tx_gso(port, q, pkts, (uint16_t)k);
	for (uint32_t i = 0; i < k; i++) {
		struct msghdr *mh = vfgx_sk_tx_msg(sq, i, &pkts[i]);

		if (sp->role == SK_SERVER) {
			mh->msg_name = &sq->peer;
			mh->msg_namelen = sq->peer_len;
		}
	}
	return vfgx_sk_sendmmsg(port, q, pkts, k);
}

int vfgx_sk_sendmmsg(struct vfgx_port *port, uint16_t q, const struct vfgx_pkt *pkts,
		     uint32_t k)
{
	struct sk_queue *sq = &((struct sk_priv *)port->priv)->q[q];
	int r = sendmmsg(sq->fd, sq->msgs, k, MSG_DONTWAIT);

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
