/* gpu_chunks_held.cuh - pipeline.chunks on the GPU, by slot: a stream's
 * chunk held in registers while its records come one after another
 * (kc_place_fast), and a batch's run of records placed into it at once
 * (kc_place_run), with the deliveries a run counts (kd_count_run, which
 * the runs by bytes share).  The ring, release and publication are
 * gpu_chunks.cuh's.  Device code, included by gpu_chunks_bytes.cuh and
 * gpu_phase_b.cuh. */
#ifndef VFGX_GPU_CHUNKS_HELD_CUH
#define VFGX_GPU_CHUNKS_HELD_CUH

#include "gpu_chunks.cuh"
#include "rules.h"

/* A stream's state and its chunk n's slot held in registers (the same in
 * every lane) while records of that chunk come one after another: such a
 * record is placed with one read (its present word) instead of kc_place's
 * chain of reads.  Valid only while slot si is FILLING with chunk n (then
 * head <= n < head + in_flight: kc_place's late, ring and open steps have
 * nothing to do), nothing is pending and the head chunk is not complete
 * (kc_settle would release it); the slot's count, the stream's
 * top and PLACED are written back (kc_cache_put) before anything else
 * reads them. */
struct kc_cache {
	uint32_t s;       /* UINT32_MAX: nothing held */
	ull n, head, top, pc, last, placed;
	size_t si;
};

__device__ void kc_cache_put(const kparams &k, struct kc_cache &c, uint32_t lane)
{
	if (c.s == UINT32_MAX)
		return;
	if (lane == 0) {
		struct kc_slot *sl = &k.kcsl[c.si];

		KV(sl->present_count) = c.pc;
		KV(sl->last_gt) = c.last;
		KV(k.kcs[c.s].top) = c.top;
	}
	kc_bump(&k.kcs[c.s], GPUK_K_PLACED, c.placed, lane);
	__syncwarp();
	c.s = UINT32_MAX;
}

/* Hold stream s's chunk n if its slot is filling with it.  The words are
 * L2 loads (__ldcg: another multiprocessor wrote them before the group's
 * ticket came here, this warp's lane 0 since) issued at once: one round
 * trip, and a second only when the head chunk is another one. */
__device__ void kc_cache_get(const kparams &k, struct kc_cache &c, uint32_t s,
			     ull n, uint32_t lane)
{
	struct kc_stream *st = &k.kcs[s];
	size_t si = kc_si(k, s, n);
	struct kc_slot *sl = &k.kcsl[si];
	ull state = __ldcg(&sl->state), index = __ldcg(&sl->index);
	ull pending = __ldcg(&st->pending_gaps), head = __ldcg(&st->head);
	ull top = __ldcg(&st->top), pc = __ldcg(&sl->present_count);
	ull last = __ldcg(&sl->last_gt);

	if (state != KC_FILLING || index != n || pending)
		return;
	/* a complete head chunk left by a close by distance is released by
	 * the stream's next placement (kc_settle), as the cpu engine does:
	 * kc_place's path until then */
	if (head == n ? pc == k.ch.packets : false) {
		return;
	} else if (head != n) {
		struct kc_slot *h = &k.kcsl[kc_si(k, s, head)];
		ull hs = __ldcg(&h->state), hi = __ldcg(&h->index);
		ull hpc = __ldcg(&h->present_count);

		if (hs == KC_FILLING && hi == head && hpc == k.ch.packets)
			return;
	}
	c.s = s;
	c.n = n;
	c.si = si;
	c.head = head;
	c.top = top;
	c.pc = pc;
	c.last = last;
	c.placed = 0;
}

/* One record through the held chunk, if it can be: 1 when placed; 0 when
 * kc_place must take it (the cache written back first). */
__device__ int kc_place_fast(const kparams &k, struct kc_cache &c,
			     const struct res &r, ull now, uint32_t lane,
			     struct kc_defer *df)
{
	uint32_t P = k.ch.packets, kk;
	uint64_t p;
	ull n, pw, bit;
	volatile ull *present;

	if (c.s == UINT32_MAX || r.stream != c.s || r.len > k.ch.payload_bytes ||
	    (r.flags & RF_END) ||
	    vfgx_ck_index(kc_conf(k), r.seq, r.body, r.len, &p) != VFGX_STAGE_PASS ||
	    p / P != c.n) {
		kc_cache_put(k, c, lane);
		return 0;
	}
	n = c.n;
	kk = (uint32_t)(p % P);
	present = kc_present(k, c.si) + kk / 64;
	pw = *present;
	bit = 1ull << (kk % 64);
	/* a duplicate, the chunk's last packet (a release), or top moving
	 * to close_distance: kc_place's full path */
	if ((pw & bit) || c.pc + 1 == P ||
	    (n > c.top && k.ch.close_distance && n - c.head >= k.ch.close_distance)) {
		kc_cache_put(k, c, lane);
		return 0;
	}
	kc_defer_add(df, kc_base(k, c.si) + (size_t)kk * k.ch.payload_bytes, r.body,
		     r.len, lane);
	if (lane == 0) {
		kc_lens(k, c.si)[kk] = r.len;
		*present = pw | bit;
	}
	__syncwarp();
	c.pc++;
	c.placed++;
	c.last = now;
	if (n > c.top)
		c.top = n;
	return 1;
}

/* The deliveries of a run's records (lanes below m, each len bytes
 * delivered), counted as kd_deliver counts them where delivery has no
 * per-record work (no user stage, no delivery log). */
__device__ void kd_count_run(const kparams &k, ull *cnt, uint32_t m, uint32_t len,
			     uint32_t flags, uint32_t lane)
{
	ull bytes = warp_sum(lane < m ? (ull)len : 0ull);
	uint32_t last = __popc(__ballot_sync(FULL, lane < m && (flags & VFGX_APP_FLAG_LAST)));
	uint32_t bad = __popc(__ballot_sync(FULL, lane < m && (flags & RF_BAD)));

	if (lane == 0) {
		count(cnt, GPUK_C_DELIVERED, m);
		count(cnt, GPUK_C_DELIVERED_BYTES, bytes);
		if (last)
			count(cnt, GPUK_C_LAST_SEEN, last);
		if (k.verify && bad)
			count(cnt, GPUK_C_VERIFY, bad);
	}
}

/* The longest run of a batch's first records (lane j holding the j-th,
 * batch of them) that the held chunk takes at once: its next packets in a
 * row (consecutive indices, none present yet), not when top moves to
 * close_distance.  The run may end with the packet that completes the
 * chunk: then *fin is set, the cache written back (kc_cache_put: nothing
 * held after it) and the stream settled (kc_settle: the release of a
 * complete head chunk), as kc_place does after such a packet; the caller
 * publishes the stream.  pw is lane j's present word of the held chunk
 * (read by the caller, with the cache's words when it could).  The
 * counters of their deliveries are added (the caller checked that
 * delivery has no per-record work).  Returns how many were placed (0: the
 * first goes one by one). */
__device__ uint32_t kc_place_run(const kparams &k, ull *cnt, struct kc_cache &c,
				 const struct res &mine, uint32_t batch, ull now,
				 ull pw, uint32_t lane, struct kc_defer *df, bool *fin)
{
	uint32_t P = k.ch.packets, kk = 0, kk0, end, wa, wb, m;
	uint64_t p = 0;
	ull n = c.n;
	bool good;
	volatile ull *present;

	*fin = false;
	if (c.s == UINT32_MAX || c.pc >= P ||
	    (n > c.top && k.ch.close_distance && n - c.head >= k.ch.close_distance))
		return 0;
	good = lane < batch && mine.stream == c.s && mine.len <= k.ch.payload_bytes &&
	       !(mine.flags & RF_END) &&
	       vfgx_ck_index(kc_conf(k), mine.seq, mine.body, mine.len, &p) ==
		       VFGX_STAGE_PASS && p / P == n;
	kk = (uint32_t)(p % P);
	kk0 = __shfl_sync(FULL, kk, 0);
	good = good && kk == kk0 + lane && !((pw >> (kk % 64)) & 1);
	m = (uint32_t)__ffs(~__ballot_sync(FULL, good));
	m = m ? m - 1 : 32;
	if (m > P - c.pc)
		m = (uint32_t)(P - c.pc);
	if (m == 0)
		return 0;
	present = kc_present(k, c.si);
	end = kk0 + m;
	wa = kk0 / 64;
	wb = (end - 1) / 64;
	{
		ull pa = __shfl_sync(FULL, pw, 0), pb = __shfl_sync(FULL, pw, m - 1);

		if (lane < m)
			kc_lens(k, c.si)[kk] = mine.len;
		if (lane == 0) {
			present[wa] = pa | kc_bits(kk0 % 64, min(end - wa * 64, 64u));
			if (wb != wa)
				present[wb] = pb | kc_bits(0, end - wb * 64);
		}
	}
	if (df) {
		if (df->ncp + m > KC_CP_CAP) {
			KP_START(kp_i);
			kc_defer_copy(df, lane);
			KP_END(KP_INLINE_COPY, kp_i);
		}
		if (lane < m) {
			struct kc_cp *e = &df->cp[df->ncp + lane];

			e->src = mine.body;
			e->dst = kc_base(k, c.si) + (size_t)kk * k.ch.payload_bytes;
			e->len = mine.len;
		}
		df->ncp += m;
	} else {
		for (uint32_t j = 0; j < m; j++) {
			const uint8_t *src = (const uint8_t *)__shfl_sync(FULL, (ull)(uintptr_t)mine.body, j);
			uint32_t len = __shfl_sync(FULL, mine.len, j);

			kc_copy(kc_base(k, c.si) + (size_t)(kk0 + j) * k.ch.payload_bytes, src,
				len, lane);
		}
	}
	kd_count_run(k, cnt, m, mine.len, mine.flags, lane);
	__syncwarp();
	c.pc += m;
	c.placed += m;
	c.last = now;
	if (n > c.top)
		c.top = n;
	if (c.pc == P) {
		uint32_t s = c.s;

		*fin = true;
		kc_cache_put(k, c, lane);
		kc_settle(k, s, lane, df);
	}
	return m;
}

#endif
