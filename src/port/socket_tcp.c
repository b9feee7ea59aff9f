/* socket_tcp.c - the socket backend's TCP connections and records: a
 * fixed slot per connection (its handle in pkt.flow names it until it
 * closes), accept with a connection limit, records parsed from staged
 * stream bytes, sends with partial-write tails.  A peer is judged by whole
 * records, never by bytes: idle_timeout_ms closes a connection that
 * delivered no whole record that long, record_timeout_ms one whose record
 * holds an rx buffer that long, and max_staged_records bounds the buffers
 * records still arriving hold, so trickling peers cannot keep the pool or
 * the connection slots from the others (docs/security.md). */
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "socket_priv.h"

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
	vfgx_sk_addr_str(a, c->peer, sizeof(c->peer));
	return c;
}

/* A new connection's handle: a port-wide generation above the slot bits,
 * never 0, so flow 0 names no connection.  A handle comes back only after
 * 2^(32 - slot_bits) - 1 further connections on the port. */
static uint32_t sk_handle_new(struct sk_priv *sp, uint32_t slot)
{
	uint32_t gmax = UINT32_MAX >> sp->slot_bits;
	uint32_t gen = atomic_fetch_add_explicit(&sp->next_gen, 1,
						 memory_order_relaxed) % gmax + 1;

	return (gen << sp->slot_bits) | slot;
}

/* Put fd in a free slot of queue q (the caller checked there is one). */
int vfgx_sk_conn_add(struct sk_priv *sp, uint16_t q, int fd,
		       const struct sockaddr_storage *a)
{
	struct sk_queue *sq = &sp->q[q];
	struct sk_conn *c = sk_conn_new(fd, a);
	uint32_t slot = 0;

	if (!c)
		return -ENOMEM;
	while (sq->conns[slot])
		slot++;
	c->slot = slot;
	c->handle = sk_handle_new(sp, slot);
	c->last_ns = vfgx_now_ns();
	sq->conns[slot] = c;
	sq->live[sq->nb_conns++] = slot;
	sq->had_conn = true;
	return 0;
}

/* The connection a packet's flow names on queue q, or NULL when it is
 * gone: a handle is checked whole, so a reused slot does not match. */
static struct sk_conn *sk_conn_by_flow(struct sk_priv *sp, struct sk_queue *sq,
				       uint32_t flow)
{
	struct sk_conn *c;

	if (sp->role == SK_CLIENT) /* its one connection, whatever the flow */
		return sq->nb_conns ? sq->conns[0] : NULL;
	c = sq->conns[flow & ((1u << sp->slot_bits) - 1)];
	return c && c->handle == flow ? c : NULL;
}

/* wait_ms: how long records accepted by tx_burst may take to leave (at
 * port close); a connection closed while receiving gets what the kernel
 * takes at once, so a peer that stops reading cannot stall the queue. */
void vfgx_sk_conn_free(struct vfgx_port *port, uint16_t q, struct sk_conn *c,
			 int wait_ms)
{
	vfgx_sk_tcp_flush(c);
	for (int i = 0; i < wait_ms / 10 && c->pend_off < c->pend_len; i++) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };

		if (vfgx_sk_tcp_flush(c) < 0 || poll(&pfd, 1, 10) < 0)
			break;
	}
	if (c->cur) {
		vfgx_pool_free_bulk(port->rx_pools[q], (void **)&c->cur, 1);
		((struct sk_priv *)port->priv)->q[q].staged--;
	}
	close(c->fd);
	free(c->stage);
	free(c->pend);
	free(c);
}

void vfgx_sk_tcp_tune(struct sk_priv *sp, int fd)
{
	int one = 1;

	if (sp->nodelay)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* --- TCP -------------------------------------------------------------- */

/* Close connection c of queue q: its slot is free for a newcomer, whose
 * handle differs (sk_handle_new).  err 0: the peer closed; ETIMEDOUT:
 * idle_timeout_ms; ETIME: record_timeout_ms; otherwise a socket error. */
static void sk_tcp_drop_conn(struct vfgx_port *port, uint16_t q,
			     struct sk_conn *c, int err)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];

	/* a record already counted as too_big (being skipped, c->cur NULL)
	 * is not counted again as truncated */
	if (err == ETIME) {
		sq->st.drops[VFGX_DROP_TRUNCATED]++;
		/* one line at the 1st, 2nd, 4th ... such close: a flood of
		 * slow peers must not flood the log */
		if (!(sq->slow_closed & (sq->slow_closed - 1)))
			vfgx_warn(port->ctx,
				  "%s: rx queue %u: peer %s sent %u of a %u-byte record in %u ms: closed, record dropped (socket.record_timeout_ms); %llu closed so far",
				  port->name, q, c->peer, c->got, c->rec_len,
				  sp->record_ms, (unsigned long long)sq->slow_closed);
	} else if ((c->in_rec && c->cur) || (!c->in_rec && c->hdr_got)) {
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
	} else if (err == ETIMEDOUT) {
		vfgx_info(port->ctx, "%s: rx queue %u: peer %s sent no whole record for %u ms: closed (idle_timeout_ms)",
			  port->name, q, c->peer, sp->idle_ms);
	} else if (err) {
		vfgx_warn(port->ctx, "%s: rx queue %u: peer %s: %s", port->name,
			  q, c->peer, strerror(err));
	}
	for (uint32_t k = 0; k < sq->nb_conns; k++) {
		if (sq->live[k] == c->slot) {
			sq->live[k] = sq->live[--sq->nb_conns];
			break;
		}
	}
	sq->conns[c->slot] = NULL;
	vfgx_sk_conn_free(port, q, c, 0);
	sp->closed++;
}

/* Take what waits in the listen queue.  Past max_conns a connection is
 * accepted and closed at once (the client sees the close rather than
 * hanging in the backlog) and counted as refused. */
static void sk_tcp_accept(struct vfgx_port *port, struct sk_priv *sp,
			  uint16_t q)
{
	struct sk_queue *sq = &sp->q[q];

	for (int i = 0; i < SK_ACCEPT_BATCH; i++) {
		struct sockaddr_storage a;
		socklen_t l = sizeof(a);
		/* blocking like UDP sockets: data calls pass MSG_DONTWAIT and
		 * vfgx_socket_wait() may block in recv() */
		int fd = accept4(sq->fd, (struct sockaddr *)&a, &l, SOCK_CLOEXEC);

		if (fd < 0)
			return;
		if (sq->nb_conns >= sp->max_conns) {
			char peer[64];

			close(fd);
			/* one line for the first refusal and at each power of two */
			if (!(sq->refused & (sq->refused + 1))) {
				vfgx_sk_addr_str(&a, peer, sizeof(peer));
				vfgx_warn(port->ctx, "%s: rx queue %u: connection from %s refused: %u connections open (socket.max_conns); %llu refused so far",
					  port->name, q, peer, sp->max_conns,
					  (unsigned long long)sq->refused + 1);
			}
			sq->refused++;
			continue;
		}
		vfgx_sk_tcp_tune(sp, fd);
		if (vfgx_sk_conn_add(sp, q, fd, &a)) {
			close(fd);
			return;
		}
		vfgx_dbg(port->ctx, "%s: rx queue %u: connection from %s",
			 port->name, q, sq->conns[sq->live[sq->nb_conns - 1]]->peer);
	}
}

/* Close server connections that delivered no whole record (and were sent
 * no whole burst) for idle_timeout_ms, or whose record has held an rx
 * buffer for record_timeout_ms; bytes that trickle in do not count.  A
 * connection waiting for a buffer waits on us, not idles.  Checked a few
 * times per timeout, not per call. */
static void sk_tcp_timeout_sweep(struct vfgx_port *port, struct sk_priv *sp,
				 uint16_t q, uint64_t now)
{
	struct sk_queue *sq = &sp->q[q];
	uint64_t idle_ns = (uint64_t)sp->idle_ms * 1000000ull;
	uint64_t rec_ns = (uint64_t)sp->record_ms * 1000000ull;
	uint64_t step = 100000000ull;

	if (idle_ns && idle_ns / 4 < step)
		step = idle_ns / 4;
	if (rec_ns && rec_ns / 4 < step)
		step = rec_ns / 4;
	sq->next_idle_ns = now + step;
	for (uint32_t k = 0; k < sq->nb_conns;) {
		struct sk_conn *c = sq->conns[sq->live[k]];

		if (rec_ns && c->cur) {
			if (now >= c->rec_ns + rec_ns) {
				sq->slow_closed++;
				sk_tcp_drop_conn(port, q, c, ETIME);
				continue; /* live[k] now holds another slot */
			}
		} else if (idle_ns && !c->waiting && now >= c->last_ns + idle_ns) {
			sq->idle_closed++;
			sk_tcp_drop_conn(port, q, c, ETIMEDOUT);
			continue;
		}
		k++;
	}
}

/* Parse staged bytes into records.  Returns packets produced; *stalled is
 * set when the pool has no buffer for the next record. */
static uint16_t sk_tcp_parse(struct vfgx_port *port, uint16_t q,
			     struct sk_conn *c, struct vfgx_pkt *pkts,
			     uint16_t max, bool *stalled)
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
			c->last_ns = vfgx_now_ns(); /* a whole record: not idle */
			if (c->cur) {
				vfgx_sk_fill(&pkts[n++], q, c->cur, c->rec_len,
					c->handle, c->last_ns);
				sq->st.rx_packets++;
				sq->st.rx_bytes += c->rec_len;
				sq->staged--;
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
			} else if (sq->staged >= sq->max_staged ||
				   vfgx_pool_alloc_bulk(pool, (void **)&c->cur, 1) < 0) {
				/* backpressure: keep the header, retry later */
				c->waiting = true;
				*stalled = true;
				break;
			} else {
				sq->staged++;
				c->rec_ns = vfgx_now_ns();
			}
			c->waiting = false;
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

/* Read one connection: parse what is staged, refill, parse again.  A
 * negative return -(n + 1): the connection closed, n packets kept. */
static int sk_tcp_rx_conn(struct vfgx_port *port, uint16_t q,
			  struct sk_conn *c, struct vfgx_pkt *pkts,
			  uint16_t max)
{
	uint16_t n = 0;
	bool stalled;

	bool drained = c->short_read;

	c->short_read = false;
	for (int rounds = 0; rounds < 8 && n < max; rounds++) {
		size_t want;
		ssize_t r;

		n += sk_tcp_parse(port, q, c, pkts + n, (uint16_t)(max - n),
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
			sk_tcp_drop_conn(port, q, c, 0);
			return -(int)n - 1;
		}
		if (errno == EAGAIN || errno == EINTR)
			break;
		sk_tcp_drop_conn(port, q, c, errno);
		return -(int)n - 1;
	}
	return n;
}

int vfgx_sk_tcp_rx(struct vfgx_port *port, uint16_t q,
		     struct vfgx_pkt *pkts, uint16_t max)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	uint64_t now = vfgx_now_ns();
	uint16_t n = 0;
	uint32_t nb, k;

	if (sp->role == SK_SERVER) {
		/* a newcomer waits at most SK_ACCEPT_NS (or one call after
		 * vfgx_socket_wait saw it): an accept() per call would cost a
		 * system call on every receive of a busy connection */
		if (sq->nb_conns == 0 || sq->accept_ready ||
		    now >= sq->next_accept_ns) {
			sq->accept_ready = false;
			sq->next_accept_ns = now + SK_ACCEPT_NS;
			sk_tcp_accept(port, sp, q);
		}
	}
	for (k = 0; k < sq->nb_conns; k++) {
		struct sk_conn *c = sq->conns[sq->live[k]];

		if (c->pend_off < c->pend_len)
			vfgx_sk_tcp_flush(c); /* a partial write's tail */
	}
	/* a close reorders live[]: walk a copy (no accept happens meanwhile,
	 * so a slot emptied by a close stays empty) */
	nb = sq->nb_conns;
	for (k = 0; k < nb; k++)
		sq->scan[k] = sq->live[(sq->rr + k) % nb];
	for (k = 0; k < nb && n < max; k++) {
		struct sk_conn *c = sq->conns[sq->scan[k]];
		int r;

		if (!c)
			continue;
		r = sk_tcp_rx_conn(port, q, c, pkts + n, (uint16_t)(max - n));
		/* negative: the connection closed, -r - 1 packets kept (they
		 * keep its handle; a reply to them gets -ENOTCONN) */
		n += (uint16_t)(r < 0 ? -r - 1 : r);
	}
	/* after every connection was read this call (or a second late, when
	 * full bursts keep ending the round early): what waited in the kernel
	 * while the application did not call counts for the peer */
	if (sp->role == SK_SERVER && (sp->idle_ms || sp->record_ms) &&
	    now >= sq->next_idle_ns &&
	    (k == nb || now >= sq->next_idle_ns + 1000000000ull))
		sk_tcp_timeout_sweep(port, sp, q, now);
	if (sq->nb_conns)
		sq->rr = (sq->rr + 1) % sq->nb_conns;
	return n;
}

int vfgx_sk_tcp_flush(struct sk_conn *c)
{
	if (c->pend_off == c->pend_len)
		return 1;
	while (c->pend_off < c->pend_len) {
		ssize_t r = send(c->fd, c->pend + c->pend_off,
				 c->pend_len - c->pend_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		c->pend_off += (size_t)r;
	}
	c->pend_off = c->pend_len = 0;
	c->last_ns = vfgx_now_ns(); /* a burst went out whole */
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

int vfgx_sk_tcp_tx(struct vfgx_port *port, uint16_t q,
		     const struct vfgx_pkt *pkts, uint16_t n)
{
	struct sk_priv *sp = port->priv;
	struct sk_queue *sq = &sp->q[q];
	struct iovec iov[2 * 256];
	uint8_t hdr[256][VFGX_SOCKET_REC_HLEN];
	struct sk_conn *c;
	uint16_t done = 0;
	int niov = 0, ret;

	if (sq->nb_conns == 0 && sp->role == SK_CLIENT)
		return vfgx_set_error(port->ctx, -ENOTCONN,
				      "%s: tx queue %u: no TCP connection (the server closed it)",
				      port->name, q);
	/* a server sends only on the connection a received record names
	 * (its flow); a gone one is never replaced by another peer's */
	c = sk_conn_by_flow(sp, sq, pkts[0].flow);
	if (!c)
		return vfgx_set_error(port->ctx, -ENOTCONN,
				      "%s: tx queue %u: connection %#x is gone or was never opened: a server replies with the flow of a record received on this queue",
				      port->name, q, pkts[0].flow);
	ret = vfgx_sk_tcp_flush(c);
	if (ret < 0)
		return vfgx_set_error(port->ctx, ret, "%s: tx queue %u: send to %s: %s",
				      port->name, q, c->peer, strerror(-ret));
	if (ret == 0)
		return 0; /* the previous burst is still going out */
	for (; done < n && done < 256; done++) {
		if (done && sp->role == SK_SERVER &&
		    pkts[done].flow != pkts[0].flow)
			break; /* another connection: the next call */
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
				sk_tcp_drop_conn(port, q, c, err);
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
		if (c->pend_len == 0)
			c->last_ns = vfgx_now_ns(); /* the burst went out whole */
		vfgx_sk_tcp_flush(c);
	}
	return done;
}
