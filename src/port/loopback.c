/* loopback.c - the software port: generates a UDP/IPv4 stream with sequence
 * headers (rate, size, count, flows, optional loss/reorder/duplicate/
 * corruption injection) into pool buffers in bursts, and hands tx bursts
 * back on rx.  It is the embedded default and the reference source for
 * exact end-to-end checks.  Replay mode is in loopback_replay.c; the
 * state both share in loopback_priv.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/opts.h"
#include "mem/pool_bytes.h"
#include "loopback_priv.h"
#include "loopback_replay.h"

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: cheap, deterministic per seed */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static bool chance(uint64_t *s, double p)
{
	if (p <= 0)
		return false;
	return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0) < p;
}

#define LB_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_loopback_opts, F, __VA_ARGS__)
static const struct vfgx_opt lb_opts[] = {
	{ "loopback", VFGX_OPT_BACKEND, offsetof(struct vfgx_loopback_opts, hdr.backend) },
	LB_OPT(U64, packets, 100000, 0, (double)INT64_MAX, NULL, INT64_MAX),
	LB_OPT(U32, packet_size, 512, VFGX_ETH_HLEN + 20 + VFGX_UDP_HLEN + VFGX_APP_HLEN, 9216),
	LB_OPT(U32, flows, 4, 1, 65536),
	LB_OPT(DOUBLE, rate_pps, 0, 0, 1e10),
	LB_OPT(DOUBLE, loss, 0, 0, 1),
	LB_OPT(DOUBLE, reorder, 0, 0, 1),
	LB_OPT(U32, reorder_distance, 3, 1, 512),
	LB_OPT(DOUBLE, duplicate, 0, 0, 1),
	LB_OPT(DOUBLE, corrupt, 0, 0, 1),
	LB_OPT(U64, seed, 1, 0, 1.9e19),
	LB_OPT(U16, src_port, 4000, 1, 65535),
	LB_OPT(U16, dst_port, 5000, 1, 65535),
	LB_OPT(U16, vlan, 0, 0, 4094),
	LB_OPT(BOOL, udp_csum, 1),
	LB_OPT(BOOL, replay, 0),
	LB_OPT(U32, replay_frames, 0, 0, 1u << 26),
	LB_OPT(BOOL, replay_inline, 0),
};
#define LB_NOPTS (sizeof(lb_opts) / sizeof(lb_opts[0]))

void vfgx_loopback_opts_default(struct vfgx_loopback_opts *o)
{
	vfgx_opts_default(lb_opts, LB_NOPTS, o, sizeof(*o));
}

/* The rules between options (from YAML or from a program): what is wrong
 * into msg, or false when nothing is. */
static bool lb_opts_bad(const struct vfgx_loopback_opts *o, char *msg, size_t len)
{
	if (o->packet_size < vfgx_pkt_min_len(o->vlan))
		snprintf(msg, len, "packet_size: %u is below %u, the headers with a VLAN tag",
			 o->packet_size, vfgx_pkt_min_len(o->vlan));
	else if (o->replay_inline && !o->replay)
		snprintf(msg, len, "replay_inline: true needs replay: true (it says who advances the replayed frames)");
	else
		return false;
	return true;
}

static int vfgx_loopback_opts_from_yaml(const struct vfgx_cfg_node *o,
				 struct vfgx_loopback_opts *lp)
{
	int ret = vfgx_opts_from_yaml(o, lb_opts, LB_NOPTS, lp, sizeof(*lp));
	char msg[160];

	if (ret)
		return ret;
	return lb_opts_bad(lp, msg, sizeof(msg)) ? vfgx_cfg_error(o, "%s", msg) : 0;
}

static int lb_opts_parse(const struct vfgx_cfg_node *map, const struct vfgx_iface_config *ifc,
			 struct vfgx_backend_opts *out)
{
	(void)ifc;
	return vfgx_loopback_opts_from_yaml(map, (struct vfgx_loopback_opts *)out);
}

/* The generator's frames (a frame a tx queue loops back fits the buffers
 * the port opened with: the same bound or less). */
static uint32_t lb_frame_max(const struct vfgx_backend_opts *o, const char *address,
			     uint32_t buf_size, const char **key)
{
	struct vfgx_loopback_opts d;

	(void)address;
	if (!o)
		vfgx_loopback_opts_default(&d);
	*key = "loopback.packet_size";
	return vfgx_frame_bound(o ? ((const struct vfgx_loopback_opts *)o)->packet_size :
				    d.packet_size, buf_size);
}

static int lb_parse(struct vfgx_port *port, struct lb_priv *lp,
		    const struct vfgx_port_conf *conf, uint64_t *seed)
{
	struct vfgx_loopback_opts o;
	char msg[160];
	int ret;

	ret = vfgx_opts_get(port->ctx, port->name, "loopback", lb_opts, LB_NOPTS,
			    conf->backend_opts, &o, sizeof(o));
	if (!ret && lb_opts_bad(&o, msg, sizeof(msg)))
		ret = vfgx_set_error(port->ctx, -EINVAL, "%s: loopback options: %s",
				     port->name, msg);
	if (ret)
		return ret;
	lp->frame_len = o.packet_size;
	lp->flows = o.flows;
	lp->packets = o.packets;
	lp->rate_pps = o.rate_pps;
	lp->loss = o.loss;
	lp->reorder = o.reorder;
	lp->duplicate = o.duplicate;
	lp->corrupt = o.corrupt;
	lp->reorder_distance = o.reorder_distance;
	lp->src_port = o.src_port;
	lp->dst_port = o.dst_port;
	lp->vlan = o.vlan;
	lp->udp_csum = o.udp_csum;
	lp->replay = o.replay;
	lp->replay_frames = o.replay_frames;
	lp->replay_inline = o.replay_inline;
	port->release_in_order = o.replay;
	*seed = o.seed;
	return 0;
}

static void lb_close(struct vfgx_port *port)
{
	struct lb_priv *lp = port->priv;

	for (uint16_t q = 0; q < port->nb_rx_queues; q++) {
		struct lb_queue *lq = &lp->q[q];
		void *b;

		vfgx_lb_rp_free(port, q, lq->rp);
		lq->rp = NULL;

		if (lq->tx.slots) {
			while (vfgx_ring_dequeue_burst(&lq->tx, &b, 1))
				vfgx_pool_free_bulk(port->rx_pools[q], &b, 1);
			vfgx_ring_fini(&lq->tx);
		}
		free(lq->flows);
		if (lq->own_pool) {
			vfgx_pool_destroy(port->rx_pools[q]);
			port->rx_pools[q] = NULL;
		}
	}
}

static int lb_open(struct vfgx_port *port, const struct vfgx_port_conf *conf)
{
	struct lb_priv *lp = port->priv;
	uint16_t nq = port->nb_rx_queues;
	uint64_t seed = 1;
	int ret;

	ret = lb_parse(port, lp, conf, &seed);
	if (ret)
		return ret;
	if (nq == 0)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: loopback needs at least one rx queue",
				      port->name);
	if (port->nb_tx_queues > nq)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: loopback tx queue q loops back to rx queue q: use at most %u tx queues",
				      port->name, nq);
	if (lp->rate_pps > 0)
		lp->rate_pps /= nq;
	for (uint16_t q = 0; q < nq; q++) {
		struct lb_queue *lq = &lp->q[q];

		if (!port->rx_pools[q]) {
			/* with no tx to loop back, nothing but the generator's
			 * frames goes in: buffers of the frame's size (a 64 B
			 * lap of 4096 frames is 256 KiB, not 8 MiB) */
			uint32_t bs = port->nb_tx_queues ? LB_DEFAULT_BUF :
				      vfgx_pool_stride(lp->frame_len);

			ret = vfgx_pool_create(port->ctx, NULL, bs, LB_DEFAULT_NBUFS,
					       &port->rx_pools[q]);
			if (ret)
				goto err;
			lq->own_pool = true;
		} else if (!lp->replay &&
			   vfgx_region_info(vfgx_pool_region(port->rx_pools[q]))->kind ==
			   VFGX_MEM_GPU) {
			ret = vfgx_set_error(port->ctx, -EINVAL,
					     "%s: loopback writes packets with the CPU; queue %u's region is GPU memory (use host or pinned, or loopback.replay: true)",
					     port->name, q);
			goto err;
		}
		if (vfgx_pool_buf_size(port->rx_pools[q]) < lp->frame_len) {
			ret = vfgx_set_error(port->ctx, -EINVAL,
					     "%s: packet_size %u exceeds queue %u's buffer size %u",
					     port->name, lp->frame_len, q,
					     vfgx_pool_buf_size(port->rx_pools[q]));
			goto err;
		}
		/* flows f with f % nq == q belong to queue q */
		lq->nb_flows = lp->flows / nq + (q < lp->flows % nq);
		lq->flows = calloc(lq->nb_flows ? lq->nb_flows : 1,
				   sizeof(*lq->flows));
		ret = lq->flows ? vfgx_ring_init(&lq->tx, LB_TX_RING) : -ENOMEM;
		if (ret)
			goto err;
		for (uint32_t i = 0; i < lq->nb_flows; i++) {
			uint32_t f = q + i * nq;
			uint64_t c = lp->packets / lp->flows +
				     (f < lp->packets % lp->flows);

			lq->flows[i].count = lp->packets ? c : 0;
			if (!lp->packets || c)
				lq->live_flows++;
		}
		lq->rng = seed * 0x9E3779B97F4A7C15ull + q + 1;
		lq->start_ns = vfgx_now_ns();
		if (lp->replay && (ret = vfgx_lb_rp_build(port, lp, q)))
			goto err;
	}
	return 0;
err:
	lb_close(port);
	return ret;
}

static void lb_spec(const struct lb_priv *lp, uint32_t stream, uint64_t seq,
		    bool last, struct vfgx_pkt_spec *s)
{
	static const uint8_t smac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
	static const uint8_t dmac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };

	memset(s, 0, sizeof(*s));
	memcpy(s->src_mac, smac, 6);
	memcpy(s->dst_mac, dmac, 6);
	s->src_ip = 0xC6120001; /* 198.18.0.1, benchmarking range */
	s->dst_ip = 0xC6120002;
	s->src_port = (uint16_t)(lp->src_port + stream);
	s->dst_port = lp->dst_port;
	s->vlan = lp->vlan;
	s->stream = stream;
	s->seq = seq;
	s->flags = last ? VFGX_APP_FLAG_LAST : 0;
	s->frame_len = lp->frame_len;
	s->udp_csum = lp->udp_csum;
}

/* Losses in a row one call may draw before it gives up for now: an
 * endless source with loss 1 (or near it) would otherwise never return. */
#define LB_LOSS_RUN 4096

/* Pick the next (stream, seq) to emit, applying loss.  false when done,
 * or for now after LB_LOSS_RUN losses in a row (live_flows tells which). */
static bool lb_next(struct lb_priv *lp, struct lb_queue *lq, uint16_t q,
		    uint16_t nq, struct vfgx_pkt_spec *s)
{
	uint32_t lost = 0;

	while (lq->live_flows && lost < LB_LOSS_RUN) {
		struct lb_flow *f = &lq->flows[lq->cur];
		uint32_t stream = q + lq->cur * nq;
		bool last;
		uint64_t seq;

		lq->cur = (lq->cur + 1) % lq->nb_flows;
		if (f->count && f->next_seq >= f->count)
			continue;
		seq = f->next_seq++;
		last = f->count && f->next_seq == f->count;
		if (last)
			lq->live_flows--;
		lq->rep.generated++;
		if (chance(&lq->rng, lp->loss)) {
			lq->rep.lost++;
			lost++;
			continue;
		}
		lb_spec(lp, stream, seq, last, s);
		return true;
	}
	return false;
}

static void lb_fill(struct vfgx_port *port, uint16_t q, struct vfgx_pkt *p,
		    void *buf, uint32_t len)
{
	p->data = buf;
	p->len = len;
	p->handle = buf;
	p->queue = q;
	p->flags = 0;
	p->ts_ns = vfgx_now_ns();
	p->flow = 0;
	(void)port;
}

/* Build up to want frames into bufs (cap bytes each) with the injected
 * faults and emit them into pkts[n .. max); returns the new n, and in
 * *used_out the buffers used (the rest stay the caller's). */
uint16_t vfgx_lb_gen(struct vfgx_port *port, struct lb_priv *lp, struct lb_queue *lq,
		     uint16_t q, void **bufs, uint32_t want, uint32_t cap,
		     struct vfgx_pkt *pkts, uint16_t n, uint16_t max, uint32_t *used_out)
{
	uint32_t used = 0;

	while (used < want && n < max) {
		struct vfgx_pkt_spec s;
		uint8_t *b = bufs[used];
		uint32_t len;

		bool is_dup = lq->dup_pending;

		if (is_dup) {
			s = lq->last;
			lq->dup_pending = false;
			lq->rep.duplicated++;
		} else if (!lb_next(lp, lq, q, port->nb_rx_queues, &s)) {
			break;
		} else if (chance(&lq->rng, lp->duplicate)) {
			lq->dup_pending = true;
		}
		lq->last = s;
		len = vfgx_pkt_build(b, cap, &s);
		/* Injections are exclusive per sequence (a duplicated sequence
		 * is never corrupted) so a run's outcome is exactly predictable. */
		if (!is_dup && !lq->dup_pending && chance(&lq->rng, lp->corrupt)) {
			/* flip one payload bit: the UDP checksum must catch it */
			b[len - 1] ^= 0x40;
			lq->rep.corrupted++;
		}
		used++;
		lq->emitted++;
		if (!lq->has_held && chance(&lq->rng, lp->reorder)) {
			lb_fill(port, q, &lq->held, b, len);
			lq->held.flow = s.stream;
			lq->has_held = true;
			lq->hold_left = lp->reorder_distance;
			lq->rep.reordered++;
			continue;
		}
		lb_fill(port, q, &pkts[n], b, len);
		pkts[n++].flow = s.stream;
		if (lq->has_held && lq->hold_left)
			lq->hold_left--;
		if (lq->has_held && !lq->hold_left && n < max) {
			pkts[n++] = lq->held;
			lq->has_held = false;
		}
	}
	/* Source exhausted: the held packet goes out last. */
	if (lq->has_held && !lq->live_flows && !lq->dup_pending && n < max) {
		pkts[n++] = lq->held;
		lq->has_held = false;
	}
	*used_out = used;
	return n;
}

static int lb_rx_burst(struct vfgx_port *port, uint16_t q,
		       struct vfgx_pkt *pkts, uint16_t max)
{
	struct lb_priv *lp = port->priv;
	struct lb_queue *lq = &lp->q[q];
	vfgx_pool *pool = port->rx_pools[q];
	void *bufs[1024];
	uint16_t n = 0;
	uint32_t want, avail;

	if (max > port->burst)
		max = port->burst;
	if (lq->rp)
		return vfgx_lb_rp_rx_burst(port, lp, lq, pkts, max);
	/* Looped-back tx packets first. */
	n = (uint16_t)vfgx_ring_dequeue_burst(&lq->tx, bufs, max);
	for (uint16_t i = 0; i < n; i++) {
		uint32_t len;

		memcpy(&len, bufs[i], sizeof(len)); /* length stashed by tx */
		memmove(bufs[i], (uint8_t *)bufs[i] + 64, len);
		lb_fill(port, q, &pkts[i], bufs[i], len);
		pkts[i].flow = 0;
	}
	want = max - n;
	if (lp->rate_pps > 0) {
		double due = (double)(vfgx_now_ns() - lq->start_ns) * 1e-9 *
			     lp->rate_pps;
		double room = due - (double)lq->emitted;

		if (room < want)
			want = room > 0 ? (uint32_t)room : 0;
	}
	avail = vfgx_pool_available(pool);
	if (want > avail) {
		if (avail == 0 && want)
			vfgx_pool_alloc_bulk(pool, bufs, want); /* counts the refusal */
		want = avail;
	}
	if (want && vfgx_pool_alloc_bulk(pool, bufs, want) < 0)
		want = 0;
	uint32_t used = 0;

	n = vfgx_lb_gen(port, lp, lq, q, bufs, want, vfgx_pool_buf_size(pool), pkts, n,
		   max, &used);
	if (used < want)
		vfgx_pool_free_bulk(pool, bufs + used, want - used);
	for (uint16_t i = 0; i < n; i++) {
		lq->st.rx_packets++;
		lq->st.rx_bytes += pkts[i].len;
	}
	return n;
}

static int lb_tx_burst(struct vfgx_port *port, uint16_t q,
		       const struct vfgx_pkt *pkts, uint16_t n)
{
	struct lb_priv *lp = port->priv;
	struct lb_queue *lq = &lp->q[q];
	vfgx_pool *pool = port->rx_pools[q];
	uint32_t room = vfgx_pool_buf_size(pool);
	uint16_t done = 0;

	for (; done < n; done++) {
		void *b;

		if (pkts[done].len + 64 > room) {
			lq->st.drops[VFGX_DROP_TRUNCATED]++;
			continue;
		}
		if (vfgx_pool_alloc_bulk(pool, &b, 1) < 0)
			break; /* backpressure: caller keeps the rest */
		/* stash the length in the first cache line, frame after it */
		memcpy(b, &pkts[done].len, sizeof(pkts[done].len));
		memcpy((uint8_t *)b + 64, pkts[done].data, pkts[done].len);
		if (!vfgx_ring_enqueue_burst(&lq->tx, &b, 1)) {
			vfgx_pool_free_bulk(pool, &b, 1);
			break;
		}
		lq->st.tx_packets++;
		lq->st.tx_bytes += pkts[done].len;
	}
	return done;
}

static int lb_stats(struct vfgx_port *port, uint16_t q,
		    struct vfgx_queue_stats *st)
{
	struct lb_priv *lp = port->priv;
	struct vfgx_pool_stats ps;

	*st = lp->q[q].st;
	vfgx_pool_stats(port->rx_pools[q], &ps);
	st->drops[VFGX_DROP_NOBUFS] = ps.alloc_fail;
	return 0;
}

static bool lb_rx_done(struct vfgx_port *port, uint16_t q)
{
	struct lb_priv *lp = port->priv;
	struct lb_queue *lq = &lp->q[q];

	if (lq->rp)
		return lq->rp->total && lq->rp->handed == lq->rp->total;
	return lp->packets && !lq->live_flows && !lq->has_held &&
	       !lq->dup_pending && vfgx_ring_count(&lq->tx) == 0;
}

static int lb_source_report(struct vfgx_port *port, uint16_t q,
			    struct vfgx_source_report *rep)
{
	struct lb_priv *lp = port->priv;

	*rep = lp->q[q].rep;
	rep->known = lp->packets != 0;
	return 0;
}


/* ---- replay mode ---------------------------------------------------------- */

static void lb_release(struct vfgx_port *port, uint16_t q, struct vfgx_pkt *pkts,
		       uint16_t n)
{
	struct lb_priv *lp = port->priv;

	if (lp->q[q].rp) /* in the order handed out */
		vfgx_lb_rp_release(lp->q[q].rp, n);
	else
		vfgx_port_release_to_pool(port, q, pkts, n);
}

const struct vfgx_port_ops vfgx_loopback_ops = {
	.name = "loopback",
	.priv_size = sizeof(struct lb_priv),
	.opts_size = sizeof(struct vfgx_loopback_opts),
	.parse = lb_opts_parse,
	.rx_frame_max = lb_frame_max,
	.open = lb_open,
	.rx_burst = lb_rx_burst,
	.release = lb_release,
	.tx_burst = lb_tx_burst,
	.stats = lb_stats,
	.close = lb_close,
	.rx_done = lb_rx_done,
	.source_report = lb_source_report,
};
