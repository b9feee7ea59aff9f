/* dpdk.c - the DPDK port's fast path: zero-copy rx bursts (software
 * steering, header-data split), bulk release, tx, stats; set-up is in
 * dpdk_setup.c, options in dpdk_opts.c. */
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_memcpy.h>
#include <rte_memory.h>
#include <rte_prefetch.h>
#include <rte_mempool.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <vfgx/dpdk.h>
#include <vfgx/stages.h>

#include "backend.h"
#include "dpdk_priv.h"

/* ---- data path ------------------------------------------------------------- */

static inline uint64_t dk_now_ns(const struct dk_priv *dp)
{
	uint64_t d = rte_rdtsc() - dp->base_tsc;

	return dp->base_ns + (uint64_t)(((unsigned __int128)d * dp->ns_mult) >> 32);
}

/* Queue a packet belongs to under software steering, or q itself. */
static inline uint16_t dk_steer(const struct dk_priv *dp, struct rte_mbuf *m,
				uint16_t q)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = m->data_len, off = VFGX_ETH_HLEN, ihl;
	uint16_t et;

	if (len < VFGX_ETH_HLEN + 20 + VFGX_UDP_HLEN + VFGX_VLAN_HLEN)
		return q;
	et = vfgx_rd16(f + 12);
	if (et == VFGX_ETHERTYPE_VLAN) {
		et = vfgx_rd16(f + 16);
		off += VFGX_VLAN_HLEN;
	}
	if (et != VFGX_ETHERTYPE_IPV4 || f[off + 9] != VFGX_IPPROTO_UDP)
		return q;
	ihl = (uint32_t)(f[off] & 0xf) * 4;
	if (off + ihl + VFGX_UDP_HLEN > len || (vfgx_rd16(f + off + 6) & 0x1fff))
		return q;
	et = dp->steer[vfgx_rd16(f + off + ihl + 2)];
	return et ? (uint16_t)(et - 1) : q;
}

/* Header-data split: frame headers in m, UDP payload in m->next.
 * Returns -1 when handed over, else the drop reason. */
static inline int dk_split_pkt(struct rte_mbuf *m, struct vfgx_pkt *p)
{
	struct rte_mbuf *pay = m->next;

	if (m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_BAD)
		return VFGX_DROP_BAD_IP_CSUM;
	if (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_BAD)
		return VFGX_DROP_BAD_UDP_CSUM;
	if (pay->next)
		return VFGX_DROP_TRUNCATED; /* scatter is never enabled */
	p->data = rte_pktmbuf_mtod(pay, uint8_t *);
	p->len = pay->data_len;
	p->flags |= VFGX_PKT_PAYLOAD;
	return -1;
}

/* Multi-segment mbufs and header-data split: -1 when handed over, else
 * the drop reason. */
static int dk_rx_slow(const struct dk_priv *dp, struct rte_mbuf *m,
		      struct vfgx_pkt *p, uint16_t flags)
{
	int r;

	p->flags = 0;
	if (m->nb_segs == 1)
		return -1; /* not split: the header pool holds all of it */
	if (!dp->split)
		return VFGX_DROP_TRUNCATED; /* scatter is never enabled */
	r = dk_split_pkt(m, p);
	if (r < 0)
		p->flags |= flags;
	return r;
}

/* Descriptor halves for dk_rx_burst: ts_ns + handle, queue, flags ... */
#ifdef __SSE2__
/* the 16-byte stores below assume this layout (x86: little-endian) */
_Static_assert(offsetof(struct vfgx_pkt, len) == 8 &&
	       offsetof(struct vfgx_pkt, flow) == 12 &&
	       offsetof(struct vfgx_pkt, handle) ==
	       offsetof(struct vfgx_pkt, ts_ns) + 8,
	       "struct vfgx_pkt layout changed: update dk_fill_meta/dk_fill_data");
#endif
static inline void dk_fill_meta(struct vfgx_pkt *p, struct rte_mbuf *m,
				uint64_t now, uint16_t q, uint16_t flags)
{
#ifdef __SSE2__
	_mm_storeu_si128((__m128i *)&p->ts_ns,
			 _mm_set_epi64x((long long)(uintptr_t)m, (long long)now));
#else
	p->ts_ns = now;
	p->handle = m;
#endif
	p->queue = q;
	p->flags = flags;
}

/* ... and data, len with flow 0 (one 16-byte store where SSE2 is there). */
static inline void dk_fill_data(struct vfgx_pkt *p, uint8_t *data, uint32_t len)
{
#ifdef __SSE2__
	_mm_storeu_si128((__m128i *)p, _mm_set_epi64x((long long)len,
						      (long long)(uintptr_t)data));
#else
	p->data = data;
	p->len = len;
	p->flow = 0;
#endif
}

static int dk_rx_burst(struct vfgx_port *port, uint16_t q,
		       struct vfgx_pkt *pkts, uint16_t max)
{
	struct dk_priv *dp = port->priv;
	struct dk_queue *dq = &dp->q[q];
	struct rte_mbuf **mb = dq->last, *bad[1024];
	uint16_t n = 0, k, nb_bad = 0, out = 0, odd = 0;
	uint16_t flags = dq->gpu ? VFGX_PKT_GPU : 0;
	uint64_t now, bytes = 0;
	uintptr_t foreign = (uintptr_t)dq->ext_addr;

	if (unlikely(!dq->polled)) {
		/* the queue's thread, if not an EAL thread, gets an lcore id
		 * so mempool caches work (one thread per queue) */
		dq->polled = true;
		if (rte_lcore_id() == LCORE_ID_ANY)
			rte_thread_register();
	}
	dq->last_n = 0;
	if (max > port->burst)
		max = port->burst;
	if (unlikely(dp->sw_steer)) {
		uint16_t nq = port->nb_rx_queues, keep;

		/* packets other queues' threads steered to q come first */
		for (uint16_t s = 0; s < nq && n < max; s++)
			if (s != q)
				n += (uint16_t)vfgx_ring_dequeue_burst(
					&dp->rings[s * nq + q], (void **)mb + n,
					max - n);
		k = rte_eth_rx_burst(dp->pid, q, mb + n, max - n);
		keep = n;
		for (uint16_t i = n; i < n + k; i++) {
			uint16_t d = dk_steer(dp, mb[i], q);

			if (d == q) {
				mb[keep++] = mb[i];
			} else if (!vfgx_ring_enqueue_burst(&dp->rings[q * nq + d],
							    (void **)&mb[i], 1)) {
				dq->st.drops[VFGX_DROP_RING_FULL]++;
				bad[nb_bad++] = mb[i];
			}
		}
		n = keep;
	} else {
		n = rte_eth_rx_burst(dp->pid, q, mb, max);
	}
	if (!n)
		goto done;
	now = dk_now_ns(dp);
	/* fast path: one descriptor per mbuf, no branches; odd mbufs
	 * (several segments, header split) are redone below.  Two passes:
	 * first what needs no mbuf field (time + handle, queue, flags), then
	 * the mbuf loads (data, len, with the flow hint 0; the RSS hash is
	 * filled in only where RSS is configured).  On net_null, loading
	 * the mbufs the PMD has just written costs more than all the stores,
	 * and loads issued after the stores, which are merged into 16-byte
	 * ones, ran about 9% faster than one pass of field stores. */
	for (uint16_t i = 0; i < n; i++)
		dk_fill_meta(&pkts[i], mb[i], now, q, flags);
	for (uint16_t i = 0; i < n; i++) {
		const struct rte_mbuf *m = mb[i];

		dk_fill_data(&pkts[i], (uint8_t *)m->buf_addr + m->data_off,
			     m->data_len);
		odd |= (uint16_t)(m->nb_segs - 1);
		bytes += m->data_len;
		/* same cache line as the fields above; the reference
		 * count is checked at release */
		foreign |= (uintptr_t)m->pool ^ (uintptr_t)dq->mp;
	}
	if (dp->rss)
		for (uint16_t i = 0; i < n; i++)
			if (mb[i]->ol_flags & RTE_MBUF_F_RX_RSS_HASH)
				pkts[i].flow = mb[i]->hash.rss;
	out = n;
	if (unlikely(odd | dp->split)) {
		bytes = 0;
		out = 0;
		for (uint16_t i = 0; i < n; i++) {
			struct rte_mbuf *m = mb[i];
			int why = -1;

			pkts[out] = pkts[i];
			if ((m->nb_segs != 1) | dp->split)
				why = dk_rx_slow(dp, m, &pkts[out], flags);
			if (why >= 0) {
				dq->st.drops[why]++;
				bad[nb_bad++] = m;
				continue;
			}
			bytes += pkts[out++].len;
		}
	}
	if (likely(out == n)) {
		/* pkts[i].handle == mb[i] for the whole burst */
		dq->last_pkts = pkts;
		dq->last_n = n;
		dq->last_raw = !(foreign | odd | dp->split);
	}
	dq->st.rx_packets += out;
	dq->st.rx_bytes += bytes;
done:
	if (nb_bad)
		rte_pktmbuf_free_bulk(bad, nb_bad);
	return out;
}

/*
 * Releasing the last burst of the queue from the array it went to: its
 * mbufs are still in dq->last in rx order, so when the descriptors still
 * hold exactly those handles (compared, not trusted: a caller may have
 * reordered or swapped descriptors) dq->last goes to the bulk free as it
 * is, without writing a gathered copy.  A subset, another array or other
 * handles gather the handles from the descriptors.
 */
static void dk_release(struct vfgx_port *port, uint16_t q,
		       struct vfgx_pkt *pkts, uint16_t n)
{
	struct dk_queue *dq = &((struct dk_priv *)port->priv)->q[q];
	struct rte_mbuf *mb[1024];

	if (pkts == dq->last_pkts && n == dq->last_n) {
		uintptr_t diff = 0;

		uint16_t shared = 0;

		/* the caller may have taken a reference since rx (handle is
		 * the mbuf): then the mbuf must go through the refcount */
		for (uint16_t i = 0; i < n; i++) {
			struct rte_mbuf *m = dq->last[i];

			diff |= (uintptr_t)pkts[i].handle ^ (uintptr_t)m;
			shared |= (uint16_t)(rte_mbuf_refcnt_read(m) - 1);
		}
		if (likely(!diff)) {
			dq->last_n = 0;
			if (likely(dq->last_raw && !shared))
				rte_mempool_put_bulk(dq->mp, (void **)dq->last,
						     n);
			else
				rte_pktmbuf_free_bulk(dq->last, n);
			return;
		}
	}
	for (uint16_t i = 0; i < n; i++)
		mb[i] = pkts[i].handle;
	rte_pktmbuf_free_bulk(mb, n);
}

/*
 * Each frame is copied into an mbuf of the tx pool (allocated in bulk)
 * and the burst goes to rte_eth_tx_burst; the mbufs are the driver's from
 * then on, so the bytes sent are summed from the frames, never read back
 * from a handed-over mbuf.  The copy is DPDK's inline rte_memcpy (a libc
 * call per 64-byte frame costs as much as the copy), with the frame a few
 * ahead prefetched: a generator's frames sit one pool buffer apart.
 */
#define DK_TX_PREFETCH 4
static int dk_tx_burst(struct vfgx_port *port, uint16_t q,
		       const struct vfgx_pkt *pkts, uint16_t n)
{
	struct dk_priv *dp = port->priv;
	struct dk_queue *dq = &dp->q[q];
	struct rte_mbuf *mb[1024];
	uint32_t sum[1025]; /* bytes of the first k frames copied */
	uint16_t idx[1024], room, sent, ok = 0;

	if (n > 1024)
		n = 1024;
	/* raw mbufs, as testpmd's txonly takes them: only the fields of the
	 * first cache line are set below; next, nb_segs and refcnt are as the
	 * free that returned each to the pool left them (NULL, 1, 1: DPDK's
	 * invariant for pooled mbufs), and tx_offload is not read with
	 * ol_flags 0.  rte_pktmbuf_alloc_bulk's reset also writes the second
	 * cache line, one more miss a packet. */
	if (rte_mempool_get_bulk(dp->tx_mp, (void **)mb, n) != 0) {
		dq->st.drops[VFGX_DROP_NOBUFS]++;
		return 0; /* backpressure: the caller keeps them */
	}
	for (uint16_t i = 0; i < n && i < DK_TX_PREFETCH; i++)
		rte_prefetch0(pkts[i].data);
	room = (uint16_t)(mb[0]->buf_len - RTE_PKTMBUF_HEADROOM);
	sum[0] = 0;
	for (uint16_t i = 0; i < n; i++) {
		uint32_t len = pkts[i].len;

		if (i + DK_TX_PREFETCH < n)
			rte_prefetch0(pkts[i + DK_TX_PREFETCH].data);
		if (unlikely(len > room || (pkts[i].flags & VFGX_PKT_GPU))) {
			/* cannot be sent from host memory: counted, skipped */
			dq->st.drops[VFGX_DROP_TRUNCATED]++;
			continue;
		}
		struct rte_mbuf *m = mb[ok];

		m->data_off = RTE_PKTMBUF_HEADROOM;
		m->ol_flags = 0;
		m->packet_type = 0;
		m->vlan_tci = 0;
		m->vlan_tci_outer = 0;
		m->port = RTE_MBUF_PORT_INVALID;
		rte_memcpy(rte_pktmbuf_mtod(m, void *), pkts[i].data, len);
		m->data_len = (uint16_t)len;
		m->pkt_len = len;
		sum[ok + 1] = sum[ok] + len;
		idx[ok++] = i;
	}
	sent = rte_eth_tx_burst(dp->pid, q, mb, ok);
	if (sent < n)
		rte_pktmbuf_free_bulk(mb + sent, n - sent);
	dq->st.tx_packets += sent;
	dq->st.tx_bytes += sum[sent];
	/* accepted = the prefix of pkts up to the first one not sent */
	return sent == ok ? n : idx[sent];
}

/*
 * Frames written in place (tx_fill.h): the reserved mbufs are raw from the
 * tx pool, as dk_tx_burst takes them; the caller writes each frame at the
 * headroom's end, where rte_pktmbuf_mtod finds it once data_off is set at
 * submit.  No copy here, and nothing read from the frames.
 */
#define DK_RESV_MAX 1024

/* the wider stores of dk_tx_submit (little-endian x86 and arm64 alike) */
_Static_assert(offsetof(struct rte_mbuf, port) == offsetof(struct rte_mbuf, data_off) + 6,
	       "rte_mbuf: data_off, refcnt, nb_segs, port not one 8-byte word");
_Static_assert(offsetof(struct rte_mbuf, refcnt) == offsetof(struct rte_mbuf, data_off) + 2 &&
	       offsetof(struct rte_mbuf, nb_segs) == offsetof(struct rte_mbuf, data_off) + 4,
	       "rte_mbuf: data_off, refcnt, nb_segs, port out of order");
_Static_assert(offsetof(struct rte_mbuf, pkt_len) == offsetof(struct rte_mbuf, packet_type) + 4,
	       "rte_mbuf: packet_type, pkt_len not one 8-byte word");

static int dk_tx_reserve(struct vfgx_port *port, uint16_t q, void **bufs,
			 uint16_t n, uint32_t *room)
{
	struct dk_priv *dp = port->priv;
	struct dk_queue *dq = &dp->q[q];

	if (n > DK_RESV_MAX)
		n = DK_RESV_MAX;
	if (!dq->resv && !(dq->resv = malloc(DK_RESV_MAX * sizeof(*dq->resv))))
		return -ENOMEM;
	if (dq->resv_n < n) {
		if (rte_mempool_get_bulk(dp->tx_mp, (void **)dq->resv + dq->resv_n,
					 n - dq->resv_n) == 0) {
			dq->resv_n = n;
		} else {
			dq->st.drops[VFGX_DROP_NOBUFS]++;
			n = dq->resv_n;
		}
	}
	for (uint16_t i = 0; i < n; i++)
		bufs[i] = (char *)dq->resv[i]->buf_addr + RTE_PKTMBUF_HEADROOM;
	*room = n ? (uint32_t)(dq->resv[0]->buf_len - RTE_PKTMBUF_HEADROOM) : 0;
	return n;
}

static int dk_tx_submit(struct vfgx_port *port, uint16_t q,
			const uint32_t *lens, uint16_t n)
{
	struct dk_priv *dp = port->priv;
	struct dk_queue *dq = &dp->q[q];
	uint64_t bytes = 0;
	uint32_t room;
	uint16_t sent;

	if (n > dq->resv_n)
		return -EINVAL;
	if (!n)
		return 0;
	/* data_off, refcnt, nb_segs, port (little-endian, in that order) */
	const uint64_t rearm = RTE_PKTMBUF_HEADROOM | 1ull << 16 | 1ull << 32 |
			       (uint64_t)RTE_MBUF_PORT_INVALID << 48;

	/* one pool: every mbuf's room is the first's */
	room = (uint32_t)(dq->resv[0]->buf_len - RTE_PKTMBUF_HEADROOM);
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = dq->resv[i];

		if (unlikely(lens[i] > room))
			return -EMSGSIZE;
		/* the first cache line's fields dk_tx_burst sets, in wider
		 * stores: data_off, refcnt, nb_segs and port as one 8-byte
		 * word (refcnt and nb_segs are 1 in a pooled mbuf anyway), as
		 * DPDK's vector rx paths rearm an mbuf; packet_type 0 with
		 * pkt_len, data_len with vlan_tci 0 */
		uint64_t ptype_len = (uint64_t)lens[i] << 32;

		memcpy((uint8_t *)m + offsetof(struct rte_mbuf, data_off), &rearm, 8);
		m->ol_flags = 0;
		memcpy((uint8_t *)m + offsetof(struct rte_mbuf, packet_type), &ptype_len, 8);
		m->data_len = (uint16_t)lens[i];
		m->vlan_tci = 0;
		m->vlan_tci_outer = 0;
	}
	sent = rte_eth_tx_burst(dp->pid, q, dq->resv, n);
	for (uint16_t i = 0; i < sent; i++)
		bytes += lens[i];
	if (sent && sent < dq->resv_n) {
		/* the driver owns the sent ones: the rest move up, in order */
		memmove(dq->resv, dq->resv + sent, (size_t)(dq->resv_n - sent) * sizeof(*dq->resv));
	}
	dq->resv_n = (uint16_t)(dq->resv_n - sent);
	dq->st.tx_packets += sent;
	dq->st.tx_bytes += bytes;
	return sent;
}

static int dk_stats(struct vfgx_port *port, uint16_t q,
		    struct vfgx_queue_stats *st)
{
	struct dk_priv *dp = port->priv;
	uint64_t ids[2], vals[2] = { 0, 0 };
	int m = 0;

	*st = dp->q[q].st;
	if (q != 0)
		return 0;
	/* port-wide device counters are reported on queue 0 */
	for (int i = 0; i < 2; i++)
		if (dp->xs_ok[i])
			ids[m++] = dp->xs_id[i];
	if (m && rte_eth_xstats_get_by_id(dp->pid, ids, vals, m) == m) {
		m = 0;
		if (dp->xs_ok[0])
			st->drops[VFGX_DROP_NOBUFS] += vals[m++];
		if (dp->xs_ok[1])
			st->drops[VFGX_DROP_RING_FULL] += vals[m];
	}
	return 0;
}

const struct vfgx_port_ops vfgx_dpdk_ops = {
	.name = "dpdk",
	.priv_size = sizeof(struct dk_priv),
	.opts_size = sizeof(struct vfgx_dpdk_opts),
	.parse = vfgx_dpdk_opts_parse,
	.rx_frame_max = vfgx_dpdk_frame_max,
	.open = dk_open,
	.rx_burst = dk_rx_burst,
	.release = dk_release,
	.tx_burst = dk_tx_burst,
	.tx_reserve = dk_tx_reserve,
	.tx_submit = dk_tx_submit,
	.stats = dk_stats,
	.close = dk_close,
};
