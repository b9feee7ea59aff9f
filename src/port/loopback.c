/* loopback.c - the software port: generates a UDP/IPv4 stream with sequence
 * headers (rate, size, count, flows, optional loss/reorder/duplicate/
 * corruption injection) into pool buffers in bursts, and hands tx bursts
 * back on rx.  It is the embedded default and the reference source for
 * exact end-to-end checks.
 *
 * Replay mode (loopback.replay: true) is a source fast enough to load a
 * GPU, like DPDK's null PMD: one lap of frames (every flow's sequences
 * 0 .. P-1, with the configured faults) is built once into the queue's
 * whole pool, host, pinned or GPU memory, and handed out again and again;
 * release only counts.  Sequences advance by P per lap: P is a multiple of
 * 256, the period of the payload pattern in the sequence number
 * (vfgx_pattern_byte), so only the 8-byte sequence and the UDP checksum
 * (updated incrementally, RFC 1624) change from one lap to the next, and
 * the reorder stage, verification and expectations see an endless exact
 * stream.  A thread of the port rewrites them, an eighth of the lap at a
 * time, as soon as that eighth's frames of the lap before are released:
 * host and pinned frames in place, GPU frames through one strided copy
 * (cudaMemcpy2DAsync) of those 18 bytes per frame; rx hands out only
 * frames already rewritten, and only after their release.  A consumer that
 * reads every frame on its rx thread anyway (vfgx send) stops that thread
 * (vfgx_loopback_replay_inline): rx advances host frames itself as it
 * hands them out.  Between eighths the thread spins a few microseconds,
 * then sleeps on a futex that release wakes once the eighth it waits for
 * is back: a spinning thread would take a CPU for nothing from whatever
 * shares the machine (a capture's writer, on 2 cores). */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/loopback.h>
#include <vfgx/pipeline.h>
#include <vfgx/stages.h>

#include "backend.h"
#include "core/opts.h"
#include "loopback_replay.h"
#include "seqhdr.h"
#include "vfgx_build.h"
#if VFGX_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define LB_DEFAULT_BUF 2048
#define LB_DEFAULT_NBUFS 4096
#define LB_TX_RING 1024
#define RP_SEGS 8       /* GPU replay: ring eighths rewritten ahead */
#define RP_WIN VFGX_SEQ_WIN /* bytes from the UDP checksum to the sequence's end */
#define RP_WSTRIDE 32   /* bytes per frame in the window shadow */

/* One frame of a replay lap: buffer index, length, stream. */
struct rp_frame {
	uint32_t idx, len, flow;
};

/* Replay state of one queue. */
struct lb_replay {
	struct vfgx_pkt *tmpl; /* the lap's frames in order (while building) */
	struct rp_frame *fr;   /* the lap's frames in order, compact */
	uint8_t *base;         /* frame i of the pool: base + i * cap */
	uint16_t pflags;       /* VFGX_PKT_GPU for GPU frames */
	void **bufs;           /* the pool buffers, address order, freed at close */
	uint32_t nb;           /* frames per lap */
	uint32_t nb_bufs;
	uint64_t period;       /* P: sequences per flow per lap */
	uint64_t handed, released, total; /* total: frames to hand out, 0 endless */
	uint32_t win_off;      /* UDP checksum offset in the frame */
	uint32_t cap;          /* bytes from one frame to the next */
	bool gpu;              /* frames in GPU memory */
	/* host frames advanced by rx, no rewriting thread
	 * (vfgx_loopback_replay_inline): the frames in hand-out order before
	 * adv_upto hold the sequences they go out with next; adv_j is
	 * adv_upto % nb */
	bool inline_adv;
	uint64_t adv_upto;
	uint32_t adv_j;
	struct vfgx_source_report lap; /* what one lap injects */
	uint64_t lap_bytes;
	/* GPU: window shadow (pinned); the lap each eighth of the ring holds
	 * on the GPU, published by the rewriting thread */
	uint8_t *shadow;
	uint64_t seg_ready[RP_SEGS];
	int gpu_id, prep_err;
	bool prep_stop, prep_started;
	/* the rewriting thread asleep until released reaches wake_at;
	 * release bumps wake_seq (the futex word) and wakes it */
	uint32_t sleeping, wake_seq;
	uint64_t wake_at;
	pthread_t prep;
#if VFGX_HAVE_CUDA
	cudaStream_t stream;
#endif
};

struct lb_flow {
	uint64_t next_seq;
	uint64_t count; /* sequences this flow emits; 0 = endless */
};

struct lb_queue {
	struct lb_flow *flows; /* flows of this queue: stream = q + i*nq */
	uint32_t nb_flows;
	uint32_t cur;          /* round-robin flow index */
	uint32_t live_flows;
	uint64_t rng;
	uint64_t start_ns;
	uint64_t emitted;      /* packets built (for the rate limit) */
	/* reorder injection: one packet held back for `hold_left` packets */
	struct vfgx_pkt held;
	bool has_held;
	uint32_t hold_left;
	bool dup_pending;      /* next packet repeats the previous sequence */
	struct vfgx_pkt_spec last;
	struct vfgx_ring tx;   /* looped-back tx packets (pool buffers) */
	bool own_pool;
	struct vfgx_queue_stats st;
	struct vfgx_source_report rep;
	struct lb_replay *rp;  /* replay mode */
	bool rx_started;       /* replay: the rate limit counts from the first rx */
};

struct lb_priv {
	struct lb_queue q[VFGX_MAX_QUEUES];
	uint32_t frame_len;
	uint32_t flows;
	uint64_t packets;
	double rate_pps; /* per queue */
	double loss, reorder, duplicate, corrupt;
	uint32_t reorder_distance;
	uint16_t src_port, dst_port, vlan;
	bool udp_csum;
	bool replay;
	uint32_t replay_frames; /* per queue at most; 0: the whole pool */
};

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
	LB_OPT(U64, packets, 100000, 0, (double)(UINT64_MAX / 2)),
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
};
#define LB_NOPTS (sizeof(lb_opts) / sizeof(lb_opts[0]))

void vfgx_loopback_opts_default(struct vfgx_loopback_opts *o)
{
	vfgx_opts_default(lb_opts, LB_NOPTS, o, sizeof(*o));
}

int vfgx_loopback_opts_from_yaml(const struct vfgx_cfg_node *o,
				 struct vfgx_loopback_opts *lp)
{
	int ret = vfgx_opts_from_yaml(o, lb_opts, LB_NOPTS, lp, sizeof(*lp));

	if (ret)
		return ret;
	if (lp->packet_size < vfgx_pkt_min_len(lp->vlan))
		return vfgx_cfg_error(o, "packet_size: %u is below %u, the headers with a VLAN tag",
				      lp->packet_size, vfgx_pkt_min_len(lp->vlan));
	return 0;
}

static int lb_parse(struct vfgx_port *port, struct lb_priv *lp,
		    const struct vfgx_port_conf *conf, uint64_t *seed)
{
	struct vfgx_loopback_opts o;
	int ret;

	if (conf->backend_opts) {
		ret = vfgx_opts_from_user(port->ctx, port->name, "loopback", lb_opts,
					  LB_NOPTS, conf->backend_opts, &o, sizeof(o));
		if (!ret && o.packet_size < vfgx_pkt_min_len(o.vlan))
			ret = vfgx_set_error(port->ctx, -EINVAL,
					     "%s: loopback options: packet_size %u is below %u, the headers with a VLAN tag",
					     port->name, o.packet_size, vfgx_pkt_min_len(o.vlan));
	} else {
		ret = vfgx_loopback_opts_from_yaml(conf->opts, &o);
	}
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
	*seed = o.seed;
	return 0;
}

#define RP_SPIN 2000 /* looks at released before sleeping (a few us) */

static void rp_wake(struct lb_replay *rp)
{
	__atomic_store_n(&rp->sleeping, 0, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&rp->wake_seq, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &rp->wake_seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* The rewriting thread: sleep until released reaches want (or stop, or
 * 1 ms: a stopped run).  Both sides store, then load the other's word,
 * sequentially consistent: either release sees sleeping, or this thread
 * sees the release. */
static void rp_sleep(struct lb_replay *rp, uint64_t want)
{
	uint32_t seq = __atomic_load_n(&rp->wake_seq, __ATOMIC_SEQ_CST);
	struct timespec ts = { 0, 1000000 };

	__atomic_store_n(&rp->wake_at, want, __ATOMIC_SEQ_CST);
	__atomic_store_n(&rp->sleeping, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&rp->released, __ATOMIC_SEQ_CST) < want &&
	    !__atomic_load_n(&rp->prep_stop, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &rp->wake_seq, FUTEX_WAIT_PRIVATE, seq, &ts, NULL, 0);
	__atomic_store_n(&rp->sleeping, 0, __ATOMIC_RELAXED);
}

static void rp_free(struct vfgx_port *port, uint16_t q, struct lb_replay *rp)
{
	if (!rp)
		return;
	if (rp->prep_started) {
		__atomic_store_n(&rp->prep_stop, true, __ATOMIC_RELEASE);
		rp_wake(rp);
		pthread_join(rp->prep, NULL);
	}
#if VFGX_HAVE_CUDA
	if (rp->stream) {
		cudaStreamSynchronize(rp->stream);
		cudaStreamDestroy(rp->stream);
	}
	if (rp->shadow)
		cudaFreeHost(rp->shadow);
#endif
	if (rp->bufs && rp->nb_bufs)
		vfgx_pool_free_bulk(port->rx_pools[q], rp->bufs, rp->nb_bufs);
	free(rp->bufs);
	free(rp->tmpl);
	free(rp->fr);
	free(rp);
}

static void lb_close(struct vfgx_port *port)
{
	struct lb_priv *lp = port->priv;

	for (uint16_t q = 0; q < port->nb_rx_queues; q++) {
		struct lb_queue *lq = &lp->q[q];
		void *b;

		rp_free(port, q, lq->rp);
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

static int rp_build(struct vfgx_port *port, struct lb_priv *lp, uint16_t q);
/* Inline mode: advance the frames in hand-out order up to upto (released
 * ones only) by one lap each, from the lap before to the one they go out
 * in next. */
static void rp_advance(struct lb_replay *rp, uint64_t upto)
{
	uint32_t j = rp->adv_j;

	for (uint64_t a = rp->adv_upto; a < upto; a++) {
		vfgx_seq_advance(rp->base + (size_t)rp->fr[j].idx * rp->cap + rp->win_off,
				 rp->period);
		if (++j == rp->nb)
			j = 0;
	}
	if (upto > rp->adv_upto) {
		rp->adv_upto = upto;
		rp->adv_j = j;
	}
}

static int rp_rx_burst(struct vfgx_port *port, struct lb_priv *lp,
		       struct lb_queue *lq, struct vfgx_pkt *pkts, uint16_t max);

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
			ret = vfgx_pool_create(port->ctx, NULL, LB_DEFAULT_BUF,
					       LB_DEFAULT_NBUFS, &port->rx_pools[q]);
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
		if (lp->replay && (ret = rp_build(port, lp, q)))
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

/* Pick the next (stream, seq) to emit, applying loss.  false when done. */
static bool lb_next(struct lb_priv *lp, struct lb_queue *lq, uint16_t q,
		    uint16_t nq, struct vfgx_pkt_spec *s)
{
	while (lq->live_flows) {
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
static uint16_t lb_gen(struct vfgx_port *port, struct lb_priv *lp,
		       struct lb_queue *lq, uint16_t q, void **bufs,
		       uint32_t want, uint32_t cap, struct vfgx_pkt *pkts,
		       uint16_t n, uint16_t max, uint32_t *used_out)
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
		return rp_rx_burst(port, lp, lq, pkts, max);
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

	n = lb_gen(port, lp, lq, q, bufs, want, vfgx_pool_buf_size(pool), pkts, n,
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

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return x < y ? -1 : x > y;
}

/* Emit one lap (every flow's sequences 0 .. period-1 with the configured
 * faults) into frames[0 .. nb) (cap bytes apart); returns the frames used,
 * or nb + 1 when the lap does not fit. */
static uint32_t rp_gen_lap(struct vfgx_port *port, struct lb_priv *lp,
			   struct lb_queue *lq, uint16_t q, uint8_t *frames,
			   uint32_t nb, uint32_t cap, uint64_t period,
			   struct vfgx_pkt *out)
{
	void *ptrs[256];
	struct vfgx_pkt pk[256];
	uint32_t at = 0, emitted = 0;

	lq->live_flows = 0;
	for (uint32_t i = 0; i < lq->nb_flows; i++) {
		lq->flows[i] = (struct lb_flow){ 0, period };
		lq->live_flows++;
	}
	lq->cur = 0;
	lq->has_held = lq->dup_pending = false;
	memset(&lq->rep, 0, sizeof(lq->rep));
	for (;;) {
		uint32_t want = nb - at < 256 ? nb - at : 256, used = 0;
		uint16_t n;

		for (uint32_t i = 0; i < want; i++)
			ptrs[i] = frames + (size_t)(at + i) * cap;
		n = lb_gen(port, lp, lq, q, ptrs, want, cap, pk, 0, 256, &used);
		memcpy(out + emitted, pk, sizeof(*pk) * n);
		emitted += n;
		at += used;
		if (!lq->live_flows && !lq->has_held && !lq->dup_pending)
			return emitted == at ? at : nb + 1;
		if (at == nb)
			return nb + 1;
	}
}

static int rp_start(struct vfgx_port *port, struct lb_replay *rp);

/* The lap as buffer index, length and stream per frame (12 bytes a frame
 * read on rx instead of a 40-byte record). */
static int rp_compact(struct lb_replay *rp)
{
	rp->fr = calloc(rp->nb, sizeof(*rp->fr));
	if (!rp->fr)
		return -ENOMEM;
	for (uint32_t i = 0; i < rp->nb; i++)
		rp->fr[i] = (struct rp_frame){
			(uint32_t)(((uint8_t *)rp->tmpl[i].data - rp->base) / rp->cap),
			rp->tmpl[i].len, rp->tmpl[i].flow };
	free(rp->tmpl);
	rp->tmpl = NULL;
	return 0;
}

static int rp_build(struct vfgx_port *port, struct lb_priv *lp, uint16_t q)
{
	struct lb_queue *lq = &lp->q[q];
	vfgx_pool *pool = port->rx_pools[q];
	const struct vfgx_region_info *ri = vfgx_region_info(vfgx_pool_region(pool));
	uint32_t cap = vfgx_pool_buf_size(pool), avail = vfgx_pool_available(pool);
	uint32_t nb = lp->replay_frames && lp->replay_frames < avail ? lp->replay_frames : avail;
	uint32_t per = lq->nb_flows * 256, used;
	uint64_t period;
	struct lb_replay *rp;
	int ret;
	uint8_t *frames;

	if (!lq->nb_flows)
		return vfgx_set_error(port->ctx, -EINVAL, "%s: replay: queue %u has no flow (flows below the queue count)",
				      port->name, q);
	period = 256 * (uint64_t)((double)nb / (per * (1.0 + lp->duplicate + 0.01)));
	if (!period)
		return vfgx_set_error(port->ctx, -EINVAL, "%s: replay: queue %u needs at least %u buffers (its %u flows x 256 sequences, the payload pattern's period), has %u",
				      port->name, q, (uint32_t)((double)per * (1.0 + lp->duplicate + 0.01)) + 1,
				      lq->nb_flows, nb);
	rp = calloc(1, sizeof(*rp));
	if (!rp)
		return -ENOMEM;
	lq->rp = rp;
	rp->bufs = calloc(nb, sizeof(*rp->bufs));
	rp->tmpl = calloc(nb, sizeof(*rp->tmpl));
	if (!rp->bufs || !rp->tmpl)
		return -ENOMEM;
	if (vfgx_pool_alloc_bulk(pool, rp->bufs, nb) < 0)
		return vfgx_set_error(port->ctx, -ENOBUFS, "%s: replay: cannot take %u buffers of queue %u's pool",
				      port->name, nb, q);
	rp->nb_bufs = nb;
	rp->cap = cap;
	qsort(rp->bufs, nb, sizeof(*rp->bufs), cmp_ptr);
	rp->gpu = ri->kind == VFGX_MEM_GPU;
	if ((uintptr_t)rp->bufs[nb - 1] - (uintptr_t)rp->bufs[0] != (uintptr_t)(nb - 1) * cap)
		return vfgx_set_error(port->ctx, -EINVAL, "%s: replay: queue %u's buffers are not contiguous (a fresh pool's are)",
				      port->name, q);
	/* GPU frames are built in host memory and copied once */
	frames = rp->gpu ? malloc((size_t)nb * cap) : rp->bufs[0];
	if (!frames)
		return -ENOMEM;
	while ((used = rp_gen_lap(port, lp, lq, q, frames, nb, cap, period, rp->tmpl)) > nb) {
		if (period <= 256) {
			if (rp->gpu)
				free(frames);
			return vfgx_set_error(port->ctx, -EINVAL, "%s: replay: one lap of queue %u does not fit its %u buffers (raise num_bufs or lower duplicate)",
					      port->name, q, nb);
		}
		period -= 256;
	}
	rp->nb = used;
	rp->period = period;
	rp->lap = lq->rep;
	memset(&lq->rep, 0, sizeof(lq->rep));
	rp->win_off = (lp->vlan ? 18u : 14u) + 20u + 6u;
	for (uint32_t i = 0; i < used; i++)
		rp->lap_bytes += rp->tmpl[i].len;
	if (lp->packets) {
		/* whole laps: the flow with the most sequences sets their number */
		uint64_t c = lp->packets / lp->flows + (lp->packets % lp->flows != 0);

		rp->total = (c + period - 1) / period * used;
	}
	rp->base = rp->bufs[0];
	if (!rp->gpu)
		return (ret = rp_compact(rp)) ? ret : rp_start(port, rp);
#if VFGX_HAVE_CUDA
	{
		/* on the GPU, frame k of the ring is the k-th handed out, so an
		 * eighth of the ring is one strided range */
		uint8_t *ordered = malloc((size_t)used * cap);
		cudaError_t e = ordered ? cudaSetDevice(ri->gpu_id) : cudaErrorMemoryAllocation;

		for (uint32_t i = 0; ordered && i < used; i++) {
			struct vfgx_pkt *t = &rp->tmpl[i];

			memcpy(ordered + (size_t)i * cap, t->data, t->len);
			t->data = (uint8_t *)rp->bufs[0] + (size_t)i * cap;
			t->handle = t->data;
			t->flags = VFGX_PKT_GPU;
			t->ts_ns = 0;
		}
		if (e == cudaSuccess)
			e = cudaMemcpy(rp->bufs[0], ordered, (size_t)used * cap, cudaMemcpyHostToDevice);
		if (e == cudaSuccess)
			e = cudaHostAlloc((void **)&rp->shadow, (size_t)used * RP_WSTRIDE,
					  cudaHostAllocPortable);
		if (e == cudaSuccess)
			e = cudaStreamCreateWithFlags(&rp->stream, cudaStreamNonBlocking);
		for (uint32_t i = 0; e == cudaSuccess && i < used; i++)
			memcpy(rp->shadow + (size_t)i * RP_WSTRIDE,
			       ordered + (size_t)i * cap + rp->win_off, RP_WIN);
		free(ordered);
		free(frames);
		if (e != cudaSuccess)
			return vfgx_set_error(port->ctx, -EIO, "%s: replay: queue %u: CUDA: %s",
					      port->name, q, cudaGetErrorString(e));
		rp->pflags = VFGX_PKT_GPU;
		rp->gpu_id = ri->gpu_id;
		return (ret = rp_compact(rp)) ? ret : rp_start(port, rp);
	}
#else
	free(frames);
	return vfgx_set_error(port->ctx, -ENOTSUP, "%s: replay into GPU memory needs a CUDA build",
			      port->name);
#endif
}

/* GPU frames: eighth s of the ring, [*a, *b). */
static void rp_seg(const struct lb_replay *rp, uint32_t s, uint32_t *a, uint32_t *b)
{
	*a = (uint32_t)((uint64_t)rp->nb * s / RP_SEGS);
	*b = (uint32_t)((uint64_t)rp->nb * (s + 1) / RP_SEGS);
}

/* The rewriting thread.  In hand-out order, eighth s of the lap for lap
 * L: once every frame of it from lap L - 1 is released, advance each
 * frame's sequence by P (host and pinned frames in place; GPU frames in
 * the shadow windows, then one strided copy of 18 bytes a frame into GPU
 * memory, waited for), then publish seg_ready[s] = L; rx hands out an
 * eighth only when it holds the lap due, so the feeding thread writes no
 * frame. */
static void *rp_prep_main(void *arg)
{
	struct lb_replay *rp = arg;
	uint64_t lap = 1;
	uint32_t s = 0, idle = 0;
	int err = 0;

#if VFGX_HAVE_CUDA
	if (rp->gpu && cudaSetDevice(rp->gpu_id) != cudaSuccess)
		err = EIO;
#endif
	while (!err && !__atomic_load_n(&rp->prep_stop, __ATOMIC_ACQUIRE)) {
		uint32_t a, b;

		rp_seg(rp, s, &a, &b);
		if (__atomic_load_n(&rp->released, __ATOMIC_ACQUIRE) < (lap - 1) * rp->nb + b) {
			/* spin a little while frames come back, yielding (the
			 * feeding thread may share this CPU: `taskset -c 0
			 * vfgx send`), then sleep until they are back */
			if (++idle % 64 == 0)
				sched_yield();
			if (idle > RP_SPIN) {
				rp_sleep(rp, (lap - 1) * rp->nb + b);
				idle = 0;
			}
			continue;
		}
		idle = 0;
		if (!rp->gpu) {
			for (uint32_t i = a; i < b; i++)
				vfgx_seq_advance(rp->base + (size_t)rp->fr[i].idx * rp->cap + rp->win_off,
					   rp->period);
		} else {
#if VFGX_HAVE_CUDA
			cudaError_t e;

			for (uint32_t i = a; i < b; i++)
				vfgx_seq_advance(rp->shadow + (size_t)i * RP_WSTRIDE, rp->period);
			e = cudaMemcpy2DAsync(rp->base + (size_t)a * rp->cap + rp->win_off, rp->cap,
					      rp->shadow + (size_t)a * RP_WSTRIDE, RP_WSTRIDE,
					      RP_WIN, b - a, cudaMemcpyHostToDevice, rp->stream);
			if (e == cudaSuccess)
				e = cudaStreamSynchronize(rp->stream);
			if (e != cudaSuccess)
				err = (int)e;
#endif
		}
		if (!err)
			__atomic_store_n(&rp->seg_ready[s], lap, __ATOMIC_RELEASE);
		if (++s == RP_SEGS) {
			s = 0;
			lap++;
		}
	}
	if (err)
		__atomic_store_n(&rp->prep_err, err, __ATOMIC_RELEASE);
	return NULL;
}

/* Start the rewriting thread (rp_prep_main). */
static int rp_start(struct vfgx_port *port, struct lb_replay *rp)
{
	int ret = pthread_create(&rp->prep, NULL, rp_prep_main, rp);

	if (ret)
		return vfgx_set_error(port->ctx, -ret, "%s: replay: cannot start the frame rewriting thread",
				      port->name);
	rp->prep_started = true;
	return 0;
}

static int rp_rx_burst(struct vfgx_port *port, struct lb_priv *lp,
		       struct lb_queue *lq, struct vfgx_pkt *pkts, uint16_t max)
{
	struct lb_replay *rp = lq->rp;
	uint64_t h = rp->handed, lap = h / rp->nb, ts, bytes = 0;
	uint32_t j = (uint32_t)(h % rp->nb), n = max;

	if (!lq->rx_started) {
		/* building the lap took time no packet was due in */
		lq->start_ns = vfgx_now_ns();
		lq->rx_started = true;
	}

	if (rp->total && rp->total - h < n)
		n = (uint32_t)(rp->total - h);
	/* a frame goes out again only once released */
	uint64_t rel = __atomic_load_n(&rp->released, __ATOMIC_ACQUIRE);

	if (rel + rp->nb - h < n)
		n = (uint32_t)(rel + rp->nb - h);
	if (lp->rate_pps > 0) {
		double due = (double)(vfgx_now_ns() - lq->start_ns) * 1e-9 * lp->rate_pps;
		double room = due - (double)lq->emitted;

		if (room < n)
			n = room > 0 ? (uint32_t)room : 0;
	}
	if (rp->nb - j < n)
		n = rp->nb - j; /* stop at the lap's end */
	if (n && !rp->inline_adv) {
		uint32_t s = (uint32_t)((uint64_t)j * RP_SEGS / rp->nb), a, b;
		int err = __atomic_load_n(&rp->prep_err, __ATOMIC_ACQUIRE);

		if (err)
			return vfgx_set_error(port->ctx, -EIO, "%s: replay: rewriting frames failed (CUDA error %d)",
					      port->name, err);
		/* j may sit on an eighth's last frames when nb % 8 != 0 */
		while (rp_seg(rp, s, &a, &b), j >= b)
			s++;
		if (__atomic_load_n(&rp->seg_ready[s], __ATOMIC_ACQUIRE) != lap) {
			/* its frames are being rewritten for this lap: let the
			 * rewriting thread run if it shares this CPU */
			sched_yield();
			return 0;
		}
		if (b - j < n)
			n = b - j;
	}
	if (rp->inline_adv && n) {
		/* this burst's frames, and the next burst's ahead of time (all
		 * released): by the time the consumer copies a frame, the
		 * stores that advanced it have left the store buffer */
		uint64_t ahead = h + 2 * (uint64_t)n;

		rp_advance(rp, ahead < rel + rp->nb ? ahead : rel + rp->nb);
	}
	ts = vfgx_now_ns();
	for (uint32_t i = 0; i < n; i++) {
		const struct rp_frame *f = &rp->fr[j + i];
		struct vfgx_pkt *p = &pkts[i];

		p->data = rp->base + (size_t)f->idx * rp->cap;
		p->len = f->len;
		p->flow = f->flow;
		p->ts_ns = ts;
		p->handle = p->data;
		p->queue = (uint16_t)(lq - lp->q);
		p->flags = rp->pflags;
		bytes += f->len;
	}
	rp->handed += n;
	lq->emitted += n;
	lq->st.rx_packets += n;
	lq->st.rx_bytes += bytes;
	if (n && rp->handed % rp->nb == 0) {
		/* a whole lap handed out: what it injected */
		lq->rep.generated += rp->lap.generated;
		lq->rep.lost += rp->lap.lost;
		lq->rep.duplicated += rp->lap.duplicated;
		lq->rep.corrupted += rp->lap.corrupted;
		lq->rep.reordered += rp->lap.reordered;
	}
	return (int)n;
}

int vfgx_loopback_replay_inline(vfgx_port *port)
{
	struct lb_priv *lp = port->priv;

	if (port->ops != &vfgx_loopback_ops)
		return -EINVAL;
	for (uint16_t q = 0; q < port->nb_rx_queues; q++) {
		struct lb_replay *rp = lp->q[q].rp;

		if (!rp || rp->gpu || rp->inline_adv)
			continue;
		if (rp->handed)
			return vfgx_set_error(port->ctx, -EBUSY, "%s: replay: queue %u has handed out frames already",
					      port->name, q);
		if (rp->prep_started) {
			__atomic_store_n(&rp->prep_stop, true, __ATOMIC_RELEASE);
			rp_wake(rp);
			pthread_join(rp->prep, NULL);
			rp->prep_started = false;
		}
		rp->inline_adv = true;
		rp->adv_upto = rp->nb; /* lap 0 is as built */
		rp->adv_j = 0;
	}
	return 0;
}

static void lb_release(struct vfgx_port *port, uint16_t q, struct vfgx_pkt *pkts,
		       uint16_t n)
{
	struct lb_priv *lp = port->priv;

	struct lb_replay *rp = lp->q[q].rp;

	if (rp) { /* in the order handed out */
		uint64_t rel = __atomic_add_fetch(&rp->released, n, __ATOMIC_SEQ_CST);

		if (__atomic_load_n(&rp->sleeping, __ATOMIC_SEQ_CST) &&
		    rel >= __atomic_load_n(&rp->wake_at, __ATOMIC_RELAXED))
			rp_wake(rp);
	} else
		vfgx_port_release_to_pool(port, q, pkts, n);
}

const struct vfgx_port_ops vfgx_loopback_ops = {
	.name = "loopback",
	.priv_size = sizeof(struct lb_priv),
	.open = lb_open,
	.rx_burst = lb_rx_burst,
	.release = lb_release,
	.tx_burst = lb_tx_burst,
	.stats = lb_stats,
	.close = lb_close,
	.rx_done = lb_rx_done,
	.source_report = lb_source_report,
};
