/* loopback_replay.c - the loopback port's replay mode (loopback.replay:
 * true), a source fast enough to load a GPU, like DPDK's null PMD: one lap
 * of frames (every flow's sequences 0 .. P-1, with the configured faults)
 * is built once into the queue's whole pool, host, pinned or GPU memory,
 * and handed out again and again;
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
 * reads every frame on its rx thread anyway (vfgx send; a CPU worker, with
 * loopback.replay_inline) stops that thread (vfgx_loopback_replay_inline):
 * rx advances host frames itself as it hands them out.  Between eighths
 * the thread spins a few microseconds, then sleeps on a futex that release
 * wakes once the eighth it waits for is back: a spinning thread would take
 * a CPU for nothing from whatever shares the machine (a capture's writer,
 * on 2 cores). */
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

#include "loopback_priv.h"
#include "loopback_replay.h"
#if VFGX_HAVE_CUDA
#include "mem/gpu_resident.h"
#endif

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

void vfgx_lb_rp_free(struct vfgx_port *port, uint16_t q, struct lb_replay *rp)
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
	vfgx_gpu_release(VFGX_GPU_FREE_HOST, rp->shadow, 0);
#endif
	if (rp->bufs && rp->nb_bufs)
		vfgx_pool_free_bulk(port->rx_pools[q], rp->bufs, rp->nb_bufs);
	free(rp->bufs);
	free(rp->tmpl);
	free(rp->fr);
	free(rp);
}


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
		n = vfgx_lb_gen(port, lp, lq, q, ptrs, want, cap, pk, 0, 256, &used);
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

int vfgx_lb_rp_build(struct vfgx_port *port, struct lb_priv *lp, uint16_t q)
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
	if (rp->gpu && lp->replay_inline)
		return vfgx_set_error(port->ctx, -EINVAL, "%s: replay_inline: queue %u replays GPU memory, which only the rewriting thread updates (set replay_inline: false, or a host or pinned memory_region)",
				      port->name, q);
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
	for (uint32_t i = 0; i < used; i++) {
		rp->lap_bytes += rp->tmpl[i].len;
		if (rp->tmpl[i].len > rp->len_max)
			rp->len_max = rp->tmpl[i].len;
	}
	if (lp->packets) {
		/* whole laps: the flow with the most sequences sets their number */
		uint64_t c = lp->packets / lp->flows + (lp->packets % lp->flows != 0);

		rp->total = (c + period - 1) / period * used;
	}
	rp->base = rp->bufs[0];
	if (!rp->gpu && lp->replay_inline) {
		/* no rewriting thread: rx advances the frames (rp_advance) */
		rp->inline_adv = true;
		rp->adv_upto = rp->nb; /* lap 0 is as built */
		rp->adv_j = 0;
		return rp_compact(rp);
	}
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
		/* copied on the port's own stream and waited for: a cudaMemcpy
		 * from pageable memory may return before the copy lands, and a
		 * kernel on a non-blocking stream would not wait for it */
		if (e == cudaSuccess)
			e = cudaStreamCreateWithFlags(&rp->stream, cudaStreamNonBlocking);
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(rp->bufs[0], ordered, (size_t)used * cap,
					    cudaMemcpyHostToDevice, rp->stream);
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(rp->stream);
		if (e == cudaSuccess)
			e = cudaHostAlloc((void **)&rp->shadow, (size_t)used * RP_WSTRIDE,
					  cudaHostAllocPortable);
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
			/* spin a little while frames come back, then sleep
			 * until they are back.  No sched_yield: next to a
			 * thread that keeps its CPU busy (a capture's writer
			 * on 2 cores) a yield gave the CPU away until the next
			 * tick, 4 ms, and the thread ran 0.2 ms in every 4 ms
			 * while the worker waited for its frames; a thread
			 * woken from the futex gets the CPU back at once */
			if (++idle > RP_SPIN) {
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

/* Up to max frames that may go now: the run's total, the generator's
 * rate (counted from the first call). */
static uint32_t rp_due(struct lb_priv *lp, struct lb_queue *lq, uint32_t max)
{
	struct lb_replay *rp = lq->rp;
	uint32_t n = max;

	if (!lq->rx_started) {
		/* building the lap took time no packet was due in */
		lq->start_ns = vfgx_now_ns();
		lq->rx_started = true;
	}
	if (rp->total && rp->total - rp->handed < n)
		n = (uint32_t)(rp->total - rp->handed);
	if (lp->rate_pps > 0) {
		double due = (double)(vfgx_now_ns() - lq->start_ns) * 1e-9 * lp->rate_pps;
		double room = due - (double)lq->emitted;

		if (room < n)
			n = room > 0 ? (uint32_t)room : 0;
	}
	return n;
}

/* n frames (bytes bytes) went out: the queue's counters, and when they
 * end a lap (lap_end), what it injected. */
static void rp_handed(struct lb_queue *lq, uint32_t n, uint64_t bytes, bool lap_end)
{
	struct lb_replay *rp = lq->rp;

	rp->handed += n;
	lq->emitted += n;
	lq->st.rx_packets += n;
	lq->st.rx_bytes += bytes;
	if (n && lap_end) {
		lq->rep.generated += rp->lap.generated;
		lq->rep.lost += rp->lap.lost;
		lq->rep.duplicated += rp->lap.duplicated;
		lq->rep.corrupted += rp->lap.corrupted;
		lq->rep.reordered += rp->lap.reordered;
	}
}

int vfgx_lb_rp_rx_burst(struct vfgx_port *port, struct lb_priv *lp, struct lb_queue *lq,
			struct vfgx_pkt *pkts, uint16_t max)
{
	struct lb_replay *rp = lq->rp;
	uint64_t h = rp->handed, lap = h / rp->nb, ts, bytes = 0;
	uint32_t j = (uint32_t)(h % rp->nb), n;

	if (rp->copy)
		return vfgx_set_error(port->ctx, -EBUSY, "%s: replay: queue %u is in copy mode (vfgx_loopback_replay_copy), it hands no frame out",
				      port->name, (unsigned)(lq - lp->q));
	n = rp_due(lp, lq, max);
	/* a frame goes out again only once released */
	uint64_t rel = __atomic_load_n(&rp->released, __ATOMIC_ACQUIRE);

	if (rel + rp->nb - h < n)
		n = (uint32_t)(rel + rp->nb - h);
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
	rp_handed(lq, n, bytes, j + n == rp->nb);
	return (int)n;
}

/* Stop queue rp's rewriting thread (inline and copy modes). */
static void rp_stop_thread(struct lb_replay *rp)
{
	if (rp->prep_started) {
		__atomic_store_n(&rp->prep_stop, true, __ATOMIC_RELEASE);
		rp_wake(rp);
		pthread_join(rp->prep, NULL);
		rp->prep_started = false;
	}
}

int vfgx_loopback_replay_inline(vfgx_port *port)
{
	struct lb_priv *lp = port->priv;

	if (port->ops != &vfgx_loopback_ops)
		return -EINVAL;
	for (uint16_t q = 0; q < port->nb_rx_queues; q++) {
		struct lb_replay *rp = lp->q[q].rp;

		if (!rp || rp->gpu || rp->inline_adv || rp->copy)
			continue;
		if (rp->handed)
			return vfgx_set_error(port->ctx, -EBUSY, "%s: replay: queue %u has handed out frames already",
					      port->name, q);
		rp_stop_thread(rp);
		rp->inline_adv = true;
		rp->adv_upto = rp->nb; /* lap 0 is as built */
		rp->adv_j = 0;
	}
	return 0;
}

int vfgx_loopback_replay_copy_mode(vfgx_port *port, uint32_t room)
{
	struct lb_priv *lp = port->priv;

	if (port->ops != &vfgx_loopback_ops || !port->nb_rx_queues)
		return -ENOTSUP;
	/* all queues or none: checked before any changes */
	for (uint16_t q = 0; q < port->nb_rx_queues; q++) {
		struct lb_replay *rp = lp->q[q].rp;

		if (!rp || rp->gpu || rp->len_max > room)
			return -ENOTSUP;
		if (rp->handed)
			return vfgx_set_error(port->ctx, -EBUSY, "%s: replay: queue %u has handed out frames already",
					      port->name, q);
	}
	for (uint16_t q = 0; q < port->nb_rx_queues; q++) {
		rp_stop_thread(lp->q[q].rp);
		/* copies carry their lap's sequence: no frame is advanced */
		lp->q[q].rp->inline_adv = false;
		lp->q[q].rp->copy = true;
	}
	return 0;
}

/* len bytes from s to d in 32-byte moves, the last one overlapping the
 * one before it: no libc call per frame (it would cost as much as a
 * 64-byte copy), and no byte past len read or written. */
static inline void rp_copy_frame(uint8_t *d, const uint8_t *s, uint32_t len)
{
	uint32_t o = 0;

	if (len < 32) {
		memcpy(d, s, len);
		return;
	}
	for (; o + 32 <= len; o += 32)
		memcpy(d + o, s + o, 32);
	if (o < len)
		memcpy(d + len - 32, s + len - 32, 32);
}

#define RP_PREFETCH 4 /* frames ahead: a frame is a pool buffer from the last */

int vfgx_loopback_replay_copy(vfgx_port *port, uint16_t q, void *const *dst, uint32_t room,
			      uint32_t *lens, uint16_t max)
{
	struct lb_priv *lp = port->priv;
	struct lb_queue *lq = &lp->q[q];
	struct lb_replay *rp = lq->rp;
	uint32_t n, done = 0;

	if (!rp || !rp->copy)
		return vfgx_set_error(port->ctx, -EINVAL, "%s: replay: queue %u is not in copy mode",
				      port->name, q);
	if (rp->len_max > room)
		return vfgx_set_error(port->ctx, -EMSGSIZE, "%s: replay: frames of up to %u bytes, buffers of %u",
				      port->name, rp->len_max, room);
	n = rp_due(lp, lq, max);
	while (done < n) {
		/* to the lap's end at most: one lap's sequences at a time, the
		 * pool's frames (lap 0) plus lap x period; where the lap is
		 * and its add kept from call to call (a division per burst
		 * would cost more than a frame's checksum) */
		uint32_t j = rp->copy_j, k = n - done;
		uint64_t add = rp->copy_add, bytes = 0;
		uint32_t res = rp->copy_res;
		const struct rp_frame *fr = rp->fr + j;

		if (rp->nb - j < k)
			k = rp->nb - j;
		for (uint32_t i = 0; i < k && i < RP_PREFETCH; i++)
			__builtin_prefetch(rp->base + (size_t)fr[i].idx * rp->cap);
		for (uint32_t i = 0; i < k; i++) {
			const uint8_t *src = rp->base + (size_t)fr[i].idx * rp->cap;
			uint8_t *d = dst[done + i];

			if (i + RP_PREFETCH < k)
				__builtin_prefetch(rp->base + (size_t)fr[i + RP_PREFETCH].idx * rp->cap);
			rp_copy_frame(d, src, fr[i].len);
			/* from the pool's frame, not the copy just stored (no
			 * load waits on those stores) */
			if (add)
				vfgx_seq_advance_res(src + rp->win_off, d + rp->win_off, add, res);
			lens[done + i] = fr[i].len;
			bytes += fr[i].len;
		}
		rp->copy_j = j + k;
		if (rp->copy_j == rp->nb) {
			rp->copy_j = 0;
			rp->copy_add += rp->period;
			rp->copy_res = vfgx_seq_csum_residue(rp->copy_add);
		}
		rp_handed(lq, k, bytes, rp->copy_j == 0);
		done += k;
	}
	return (int)n;
}

void vfgx_lb_rp_release(struct lb_replay *rp, uint16_t n)
{
	uint64_t rel = __atomic_add_fetch(&rp->released, n, __ATOMIC_SEQ_CST);

	if (__atomic_load_n(&rp->sleeping, __ATOMIC_SEQ_CST) &&
	    rel >= __atomic_load_n(&rp->wake_at, __ATOMIC_RELAXED))
		rp_wake(rp);
}
