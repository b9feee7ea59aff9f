/* gpu_phase_b.cuh - phase B of the GPU data plane: reorder, one warp per
 * stream group in item order (tickets), window flush, block counters and
 * the item's DONE.  Device code, included by gpu_proc.cu. */
#ifndef VFGX_GPU_PHASE_B_CUH
#define VFGX_GPU_PHASE_B_CUH

#include "gpu_chunks.cuh"
#include "gpu_chunks_held.cuh"
#include "gpu_chunks_bytes.cuh"
#include "gpu_phase_a.cuh"
#include "rules.h"

/* ---- phase B: reorder, one warp per stream group --------------------------
 * All lanes run the same control flow on values read after __syncwarp();
 * lane 0 alone writes the window state, then __syncwarp() publishes it to
 * the warp.  State written by another multiprocessor is read with __ldcg
 * after the ticket's acquire. */

/* The reorder window by rules.h's vfgx_ro_* decisions (proc.c follows the
 * same); here only the window's memory and the warp's synchronisation. */

/* Deliver or skip the slot at base and advance. */
__device__ void kr_slot_advance(const kparams &k, ull *cnt, uint32_t s,
				uint32_t lane)
{
	uint64_t base = __ldcg(&k.base[s]);
	size_t i = (size_t)s * k.window + vfgx_ro_slot(base, k.window);
	uint32_t l = __ldcg(&k.slot_len[i]);

	if (l) {
		kd_deliver(k, cnt, s, base, k.slot_data + i * k.slot, l - 1,
			__ldcg(&k.slot_flags[i]), true, lane);
		if (lane == 0) {
			k.slot_len[i] = 0;
			k.held[s] = __ldcg(&k.held[s]) - 1;
		}
	} else if (lane == 0) {
		count(cnt, GPUK_C_GAPS, vfgx_ro_advance_gaps(0));
	}
	if (lane == 0)
		k.base[s] = base + 1;
	__syncwarp();
}

/* A record's bytes into its window slot, by the warp: 8 loads per lane
 * in flight before the stores, so a 512-byte record is copied in two
 * round trips instead of sixteen. */
__device__ __forceinline__ void kr_copy(uint8_t *dst, const uint8_t *src, uint32_t len,
					uint32_t lane)
{
	for (uint32_t b0 = 0; b0 < len; b0 += 32 * 8) {
		uint8_t v[8];

#pragma unroll
		for (uint32_t u = 0; u < 8; u++) {
			uint32_t b = b0 + 32 * u + lane;

			v[u] = b < len ? src[b] : 0;
		}
#pragma unroll
		for (uint32_t u = 0; u < 8; u++) {
			uint32_t b = b0 + 32 * u + lane;

			if (b < len)
				dst[b] = v[u];
		}
	}
}

/* Nothing to do per delivered record but count it (no user stage, no
 * delivery log): the window's runs are then delivered and stored a batch
 * at a time. */
__device__ __forceinline__ bool kr_bulk(const kparams &k)
{
	return !k.user.enabled && !k.log_cap;
}

/* The held run from base delivered up to 32 slots at a time, with the
 * counters that kr_slot_advance one slot after another adds (rules.h's
 * vfgx_ro_run: the filled slots from base; only the first delivery can
 * count as reordered).  Only when kr_bulk(k). */
__device__ __noinline__ void kr_drain_bulk(const kparams &k, ull *cnt, uint32_t s, uint32_t lane)
{
	uint64_t base = __ldcg(&k.base[s]), next = __ldcg(&k.next[s]);
	uint32_t held = __ldcg(&k.held[s]);
	uint32_t span = k.window < 32 ? k.window : 32;
	size_t row = (size_t)s * k.window;

	while (held) {
		size_t i = row + vfgx_ro_slot(base + lane, k.window);
		uint32_t l = lane < span && lane < held ? __ldcg(&k.slot_len[i]) : 0;
		uint32_t run = vfgx_ro_run(__ballot_sync(FULL, l != 0));
		bool mine = lane < run;
		uint32_t fl = mine ? __ldcg(&k.slot_flags[i]) : 0;
		ull bytes = warp_sum(mine ? l - 1 : 0);
		uint32_t last = __popc(__ballot_sync(FULL, mine && (fl & VFGX_APP_FLAG_LAST)));
		uint32_t vbad = __popc(__ballot_sync(FULL, mine && (fl & RF_BAD)));

		if (!run)
			break;
		if (mine)
			k.slot_len[i] = 0;
		if (lane == 0) {
			count(cnt, GPUK_C_DELIVERED, run);
			count(cnt, GPUK_C_DELIVERED_BYTES, bytes);
			if (last)
				count(cnt, GPUK_C_LAST_SEEN, last);
			if (k.verify && vbad)
				count(cnt, GPUK_C_VERIFY, vbad);
			if (base < next)
				count(cnt, GPUK_C_ORDER, 1);
		}
		next = base + run;
		base += run;
		held -= run;
		if (run < span)
			break;
	}
	if (lane == 0) {
		k.base[s] = base;
		k.next[s] = next;
		k.held[s] = held;
	}
	__syncwarp();
}

__device__ void kr_insert(const kparams &k, ull *cnt, const struct res *r,
			  uint32_t lane)
{
	uint32_t s = r->stream;
	uint64_t seq = r->seq;
	struct vfgx_ro_state rs;
	struct vfgx_ro_insert d;
	size_t i;

	rs.base = __ldcg(&k.base[s]);
	rs.held = __ldcg(&k.held[s]);
	d = vfgx_ro_insert(rs, k.window, seq);
	/* in order with nothing held: from the packet, no copy */
	if (d.act == VFGX_RO_DELIVER) {
		kd_deliver(k, cnt, s, seq, r->body, r->len, r->flags, true, lane);
		if (lane == 0)
			k.base[s] = rs.base + 1;
		__syncwarp();
		return;
	}
	if (d.act == VFGX_RO_LATE) {
		if (lane == 0)
			count(cnt, GPUK_C_DROP0 + VFGX_R_LATE, 1);
		return;
	}
	if (d.ahead) {
		for (uint64_t j = 0; j < d.slide.steps; j++)
			kr_slot_advance(k, cnt, s, lane);
		if (d.slide.skipped) {
			if (lane == 0) {
				count(cnt, GPUK_C_GAPS, d.slide.skipped);
				k.base[s] = d.target;
			}
			__syncwarp();
		}
	}
	i = (size_t)s * k.window + d.slot;
	if (vfgx_ro_store(__ldcg(&k.slot_len[i]) != 0) != VFGX_STAGE_PASS) {
		if (lane == 0)
			count(cnt, GPUK_C_DROP0 + VFGX_R_DUPLICATE, 1);
		return;
	}
	kr_copy(k.slot_data + i * k.slot, r->body, r->len, lane);
	__syncwarp();
	if (lane == 0) {
		k.slot_len[i] = r->len + 1;
		k.slot_flags[i] = (uint8_t)r->flags;
		k.held[s] = __ldcg(&k.held[s]) + 1;
	}
	__syncwarp();
	if (kr_bulk(k)) {
		kr_drain_bulk(k, cnt, s, lane);
		return;
	}
	for (;;) {
		uint64_t b2 = __ldcg(&k.base[s]);

		if (!__ldcg(&k.slot_len[(size_t)s * k.window + vfgx_ro_slot(b2, k.window)]))
			break;
		kr_slot_advance(k, cnt, s, lane);
	}
}

/* A batch of one stream's records (lane j: the j-th of batch) stored at
 * once when every one is quiet against the stream's state (rules.h's
 * vfgx_ro_quiet) and no two have the same sequence: the late ones and the
 * duplicates counted, the others copied into their slots, base unchanged.
 * cbase/cheld: the stream's state (the cache's; base is not written).
 * Returns false, having done nothing, for any other batch. */
__device__ __noinline__ bool kr_store_quiet(const kparams &k, ull *cnt, const struct res &mine,
			       uint32_t batch, uint32_t s, uint64_t cbase, uint32_t &cheld,
			       uint32_t lane)
{
	struct vfgx_ro_state st = { cbase, cheld };
	struct vfgx_ro_insert d = vfgx_ro_insert(st, k.window, mine.seq);
	bool in = lane < batch;
	uint32_t same = __match_any_sync(FULL, in ? mine.seq : ~0ull - lane);
	size_t i = (size_t)s * k.window + d.slot;
	uint32_t put, late, dup;

	if (!__all_sync(FULL, !in || (__popc(same) == 1 && vfgx_ro_quiet(st, d, mine.seq))))
		return false;
	late = __ballot_sync(FULL, in && d.act == VFGX_RO_LATE);
	dup = __ballot_sync(FULL, in && d.act == VFGX_RO_STORE &&
				  vfgx_ro_store(__ldcg(&k.slot_len[i]) != 0) != VFGX_STAGE_PASS);
	put = __ballot_sync(FULL, in) & ~late & ~dup;
	for (uint32_t m = put; m; m &= m - 1) {
		uint32_t j = __ffs(m) - 1;
		const uint8_t *src = (const uint8_t *)__shfl_sync(FULL, (ull)(uintptr_t)mine.body, j);
		uint32_t len = __shfl_sync(FULL, mine.len, j);
		size_t at = __shfl_sync(FULL, (ull)i, j);

		kr_copy(k.slot_data + at * k.slot, src, len, lane);
	}
	__syncwarp();
	if (put >> lane & 1) {
		k.slot_len[i] = mine.len + 1;
		k.slot_flags[i] = (uint8_t)mine.flags;
	}
	cheld += __popc(put);
	if (lane == 0) {
		if (late)
			count(cnt, GPUK_C_DROP0 + VFGX_R_LATE, __popc(late));
		if (dup)
			count(cnt, GPUK_C_DROP0 + VFGX_R_DUPLICATE, __popc(dup));
		k.held[s] = cheld;
	}
	__syncwarp();
	return true;
}

__device__ void kr_flush(const kparams &k, ull *cnt, uint32_t s, uint32_t lane)
{
	uint64_t skipped = 0;

	for (uint32_t i = 0; i < k.window && __ldcg(&k.held[s]); i++) {
		uint64_t base = __ldcg(&k.base[s]);
		struct vfgx_ro_flush f = vfgx_ro_flush_step(
			skipped,
			__ldcg(&k.slot_len[(size_t)s * k.window + vfgx_ro_slot(base, k.window)]) != 0);

		if (lane == 0 && f.gaps_now)
			count(cnt, GPUK_C_GAPS, f.gaps_now);
		skipped = f.skipped;
		if (f.deliver) {
			kr_slot_advance(k, cnt, s, lane);
		} else {
			if (lane == 0)
				k.base[s] = base + 1;
			__syncwarp();
		}
	}
	if (lane == 0)
		k.base[s] = __ldcg(&k.base[s]) - skipped;
	__syncwarp();
}

/* Write a stream's cached base and next back (cs UINT32_MAX: none). */
__device__ __forceinline__ void cache_put(const kparams &k, uint32_t cs,
					  uint64_t base, uint64_t next,
					  uint32_t lane)
{
	if (cs == UINT32_MAX)
		return;
	if (lane == 0) {
		k.base[cs] = base;
		k.next[cs] = next;
	}
	__syncwarp();
}

/* Entries b0 .. b0 + 1023 of the item: bal[c] has bit j set when entry
 * b0 + 32 c + j belongs to group g; tot counts them.  Lane c loads entries
 * b0 + 32 c .. + 31 at once (two 16-byte loads where aligned, else 32
 * independent byte loads: one L2 round trip either way; the grp array has
 * 32 bytes of slack at its end) and the masks are shuffled to every lane. */
__device__ __forceinline__ void group_ballots(const uint8_t *grp, uint32_t b0,
					      uint32_t n, uint32_t g,
					      uint32_t lane, uint32_t (&bal)[32],
					      uint32_t &tot)
{
	uint32_t first = b0 + 32 * lane, m = 0;

	if (first < n) {
		const uint8_t *p = grp + first;
		uint32_t w[8], left = n - first;

		if (((uintptr_t)p & 15) == 0) {
			uint4 a = __ldcg((const uint4 *)p), b = __ldcg((const uint4 *)p + 1);

			w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w;
			w[4] = b.x; w[5] = b.y; w[6] = b.z; w[7] = b.w;
		} else {
			uint8_t v[32];

#pragma unroll
			for (uint32_t i = 0; i < 32; i++)
				v[i] = __ldcg(p + i);
#pragma unroll
			for (uint32_t i = 0; i < 8; i++)
				w[i] = (uint32_t)v[4 * i] | (uint32_t)v[4 * i + 1] << 8 |
				       (uint32_t)v[4 * i + 2] << 16 | (uint32_t)v[4 * i + 3] << 24;
		}
#pragma unroll
		for (uint32_t i = 0; i < 32; i++)
			m |= (uint32_t)(((w[i / 4] >> (8 * (i % 4))) & 0xff) == g) << i;
		if (left < 32)
			m &= (1u << left) - 1;
	}
	tot = 0;
#pragma unroll
	for (uint32_t c = 0; c < 32; c++) {
		bal[c] = __shfl_sync(FULL, m, c);
		tot += __popc(bal[c]);
	}
}

/* Lane j's entry: the index of the group's (r0 + j)-th entry among b0 ..
 * b0 + 1023, in arrival order (UINT32_MAX past the last). */
__device__ __forceinline__ uint32_t batch_index(const uint32_t (&bal)[32], uint32_t b0,
						uint32_t r0, uint32_t lane)
{
	uint32_t want = r0 + lane, acc = 0, idx = UINT32_MAX;

#pragma unroll
	for (uint32_t c = 0; c < 32; c++) {
		uint32_t p = __popc(bal[c]);

		if (want >= acc && want < acc + p) {
			uint32_t m = bal[c];

			for (uint32_t d = want - acc; d; d--)
				m &= m - 1;
			idx = b0 + 32 * c + (uint32_t)(__ffs(m) - 1);
		}
		acc += p;
	}
	return idx;
}

/* Lane j's record: the group's (r0 + j)-th entry among b0 .. b0 + 1023, in
 * arrival order (zero past the last), so a batch of 32 records arrives in
 * one L2 round trip. */
__device__ __forceinline__ struct res batch_record(const struct res *rs,
						   const uint32_t (&bal)[32],
						   uint32_t b0, uint32_t r0,
						   uint32_t lane)
{
	uint32_t idx = batch_index(bal, b0, r0, lane);
	struct res mine = { 0, NULL, 0, 0, 0, 0 };

	if (idx != UINT32_MAX)
		mine = rs[idx];
	return mine;
}

/* One lane waits until group g's ticket is item (the acquire pairs with the
 * release of the previous item's turn); 1 when told to quit. */
__device__ int wait_ticket(const kparams &k, uint32_t g, uint64_t item)
{
	uint32_t spins = 0;
	uint64_t t;

	while ((t = ld_acquire_dev(TICKET(k, g))) != item) {
		/* more than one item before ours: no hurry */
		if (item - t > 1)
			__nanosleep(100);
		/* the persistent kernel's quit word is GPU memory; the host's
		 * is read over PCIe, so only rarely */
		if ((++spins & 255) == 0 &&
		    (ld_relaxed_dev(k.dquit) ||
		     ((spins & 65535) == 0 && ld_quit(k.quit))))
			return 1;
	}
	return 0;
}

/* Make stream s the one whose window state (base, next, held) is cached
 * in registers, writing the previous one's back. */
__device__ __forceinline__ void cache_get(const kparams &k, uint32_t s,
					  uint32_t &cs, uint64_t &cbase,
					  uint64_t &cnext, uint32_t &cheld,
					  uint32_t lane)
{
	if (s == cs)
		return;
	cache_put(k, cs, cbase, cnext, lane);
	cs = s;
	cbase = __ldcg(&k.base[cs]);
	cnext = __ldcg(&k.next[cs]);
	cheld = __ldcg(&k.held[cs]);
}

/* Lane src's record, in this lane (src is per lane). */
__device__ __forceinline__ struct res shfl_res_from(const struct res &mine, uint32_t src)
{
	struct res r;

	r.seq = __shfl_sync(FULL, mine.seq, src);
	r.body = (const uint8_t *)__shfl_sync(FULL, (ull)(uintptr_t)mine.body, src);
	r.len = __shfl_sync(FULL, mine.len, src);
	r.stream = __shfl_sync(FULL, mine.stream, src);
	r.flags = __shfl_sync(FULL, mine.flags, src);
	r.at = __shfl_sync(FULL, mine.at, src);
	return r;
}

/* Record j of a batch (lane j's), in every lane. */
__device__ __forceinline__ struct res shfl_res(const struct res &mine, uint32_t j)
{
	return shfl_res_from(mine, j);
}

/* Group g's records of the item in arrival order, in batches of up to 32
 * (lane j holding the j-th): 1024 entries at a time, 32 independent byte
 * loads per lane, then one ballot per 32 entries; lane j then finds the
 * j-th match and loads its record, so the records of a batch arrive in
 * one L2 round trip instead of one per chunk.  fn(mine, batch) walks a
 * batch (through shfl_res).  bal, tot and mine0: what was read before the
 * group's turn (the first 1024 entries, the first batch). */
template <typename F>
__device__ __forceinline__ void group_walk(const struct res *rs, const uint8_t *grp,
					   uint32_t n, uint32_t g, uint32_t (&bal)[32],
					   uint32_t tot, struct res mine0, uint32_t lane,
					   F &&fn)
{
	for (uint32_t b0 = 0; b0 < n; b0 += 1024) {
		if (b0)
			group_ballots(grp, b0, n, g, lane, bal, tot);
#pragma unroll 1
		for (uint32_t r0 = 0; r0 < tot; r0 += 32) {
			uint32_t batch = tot - r0 < 32 ? tot - r0 : 32;

			fn(b0 == 0 && r0 == 0 ? mine0 : batch_record(rs, bal, b0, r0, lane),
			   batch);
		}
	}
}

/* a format's sequences extended (kfmt_*): after the walk's primitives */
#include "gpu_fmt_seq.cuh"

/* Chunks by bytes: group g's records, placed in arrival order, a run at
 * once when they are one stream's next pieces of the chunk its last
 * record went to and delivery has no per-record work
 * (kc_place_bytes_run), else one by one (kc_place_bytes), and delivered
 * (their payloads, as the cpu engine delivers them); each stream placed
 * into is published when the next record is of another stream, and at
 * the end.  A run is not tried for the record that ended the run before
 * (the run would stop at it again), nor for the one after a record that
 * ended or completed its chunk (the next record starts another).  The
 * records' sequences are extended here, a batch as the walk reaches it
 * (kfmt_chunk_batch), unless kfmt_extend did it before. */
__device__ __forceinline__ void chunk_group_bytes(const kparams &k, ull *cnt, const struct res *rs,
						  const struct kfres *frs, const struct kfplace *fps,
						  const uint8_t *grp, uint32_t n, uint32_t g,
						  uint32_t (&bal)[32], uint32_t tot, struct res mine0,
						  uint32_t lane, struct kc_defer *df)
{
	uint32_t last = UINT32_MAX;
	struct kc_bhint h = { UINT32_MAX, 0 };
	bool runs = df && !k.user.enabled && !k.log_cap && KC_BYTE_RUNS &&
		    k.fmt->place != VFGX_FMT_PLACE_USER;
	bool try_run = true, ext = kfmt_in_chunks(k);
	struct kfmt_cur fc = { UINT32_MAX, { 0, 0, 0, 0 } };
	struct vfgx_seq_run sr = vfgx_seq_run_of(k.fmt);

	group_walk(rs, grp, n, g, bal, tot, mine0, lane,
		   [&](const struct res &got, uint32_t batch) __attribute__((always_inline)) {
		struct res mine = got;
		uint32_t j = 0;

		if (ext) {
			KP_START(kp_x);
			batch = kfmt_chunk_batch(k, cnt, mine, batch, sr, fc, lane);
			KP_END(KP_EXTEND, kp_x);
		}
#pragma unroll 1
		while (j < batch) {
			ull now = __shfl_sync(FULL, lane == 0 ? gtimer() : 0ull, 0);

			if (runs && try_run) {
				/* records j.. (lane l holding record j + l) */
				bool fin;

				KP_START(kp_r);
				uint32_t placed = kc_place_bytes_run(k, cnt, h,
								     shfl_res_from(mine, lane + j),
								     fps, batch - j, now, lane, df,
								     &fin);

				KP_END(KP_BRUN, kp_r);
				KP_COUNT(KP_BRUN_CALLS, 1);
				KP_COUNT(KP_BRUN_PKTS, placed);
				if (placed) {
					if (last != h.s && last < k.ch.streams)
						kc_publish(k, last, lane, df);
					last = h.s;
					j += placed;
					try_run = j == batch && !fin;
					continue;
				}
			}
			struct res r = shfl_res(mine, j);
			const uint8_t *data = r.body;
			uint32_t len = r.len;
			ull placed_n = 0;
			int v;

			if (last != r.stream && last < k.ch.streams)
				kc_publish(k, last, lane, df);
			last = r.stream;
			KP_START(kp_o);
			v = kc_place_bytes(k, r, &frs[r.at], fps, now, lane, df, &data, &len,
					   &placed_n);
			KP_END(KP_BONE, kp_o);
			KP_COUNT(KP_BONE_CALLS, 1);
			try_run = !(r.flags & RF_END);
			if (v == VFGX_STAGE_PASS) {
				KP_START(kp_d);
				h.s = r.stream;
				h.n = placed_n;
				kd_deliver(k, cnt, r.stream, r.seq, data, len, r.flags, false, lane);
				KP_END(KP_DELIVER, kp_d);
			} else if (lane == 0) {
				count(cnt, GPUK_C_DROP0 + v, 1);
			}
			j++;
		}
	});
	if (ext)
		kfmt_cur_put(fc, k.fseq, lane);
	KP_START(kp_p);
	if (last < k.ch.streams)
		kc_publish(k, last, lane, df);
	KP_END(KP_PUBLISH, kp_p);
}

/* Chunks: group g's records of the item, in arrival order, placed one
 * after another (kc_place), or a run at once when they are one stream's
 * next packets of its held chunk and delivery has no per-record work
 * (kc_place_run), and delivered (from the packet: the same bytes as the
 * slot's, which df may not have copied yet); each stream placed into is
 * published when the next record is of another stream, and at the end.
 * frs: a format's records (their header timestamps), else NULL. */
__device__ __noinline__ void chunk_group(const kparams &k, ull *cnt, const struct res *rs,
			    const struct kfres *frs, const struct kfplace *fps, const uint8_t *grp,
			    uint32_t n, uint32_t g, uint32_t (&bal)[32], uint32_t tot,
			    struct res mine0, uint32_t lane, struct kc_defer *df)
{
	uint32_t last = UINT32_MAX;
	struct kc_cache c;

	if (k.ch.by_bytes) {
		chunk_group_bytes(k, cnt, rs, frs, fps, grp, n, g, bal, tot, mine0, lane, df);
		return;
	}
	c.s = UINT32_MAX;
	group_walk(rs, grp, n, g, bal, tot, mine0, lane,
		   [&](const struct res &mine, uint32_t batch) {
		bool runs = !k.user.enabled && !k.log_cap;
		uint32_t j = 0;

#pragma unroll 1
		while (j < batch) {
			if (runs) {
				/* records j.. (lane l holding record j + l) as a run
				 * of the held chunk: the chunk of record j is
				 * fetched at the batch's start, held after that
				 * when a placement one by one left it there */
				struct res m = shfl_res_from(mine, lane + j);
				uint32_t nb = batch - j, st0 = __shfl_sync(FULL, m.stream, 0);
				uint64_t p = 0;
				ull n0;
				bool ok = lane < nb &&
					  vfgx_ck_index(kc_conf(k), m.seq, m.body, m.len, &p) ==
						  VFGX_STAGE_PASS;

				n0 = __shfl_sync(FULL, p, 0) / k.ch.packets;
				if (__shfl_sync(FULL, ok, 0) && st0 < k.ch.streams &&
				    (j == 0 || (c.s == st0 && c.n == n0))) {
					bool held = c.s == st0 && c.n == n0;
					ull pw = 0, now;
					uint32_t placed;
					bool fin;

					/* chunk n0's present words, loaded with
					 * the cache's words */
					if (!held)
						kc_cache_put(k, c, lane);
					if (ok && p / k.ch.packets == n0)
						pw = __ldcg((const ull *)kc_present(k, kc_si(k, st0, n0)) +
							    (p % k.ch.packets) / 64);
					if (!held)
						kc_cache_get(k, c, st0, n0, lane);
					now = __shfl_sync(FULL, lane == 0 ? gtimer() : 0ull, 0);
					KP_START(kp_r);
					placed = kc_place_run(k, cnt, c, m, nb, now, pw, lane, df,
							      &fin);
					KP_END(KP_SRUN, kp_r);
					KP_COUNT(KP_SRUN_CALLS, 1);
					if (fin) {
						/* it released: published as kc_place's are */
						if (last != st0 && last < k.ch.streams)
							kc_publish(k, last, lane, df);
						last = st0;
					}
					if (placed) {
						j += placed;
						continue;
					}
				}
			}
			struct res r = shfl_res(mine, j);
			ull now = __shfl_sync(FULL, lane == 0 ? gtimer() : 0ull, 0);
			int v = VFGX_STAGE_PASS;

			KP_START(kp_o);
			bool fast = kc_place_fast(k, c, r, now, lane, df);

			KP_END(KP_SONE, kp_o);
			KP_COUNT(KP_SONE_CALLS, 1);
			if (!fast) {
				if (last != r.stream && last < k.ch.streams)
					kc_publish(k, last, lane, df);
				last = r.stream;
				v = kc_place(k, r, frs ? &frs[r.at] : NULL, now, lane, df);
				uint64_t p;

				/* hold its chunk for the records that follow */
				if (v == VFGX_STAGE_PASS &&
				    vfgx_ck_index(kc_conf(k), r.seq, r.body, r.len, &p) ==
					    VFGX_STAGE_PASS)
					kc_cache_get(k, c, r.stream, p / k.ch.packets, lane);
			}
			if (v == VFGX_STAGE_PASS)
				kd_deliver(k, cnt, r.stream, r.seq, r.body, r.len, r.flags, false,
					lane);
			else if (lane == 0)
				count(cnt, GPUK_C_DROP0 + v, 1);
			j++;
		}
	});
	kc_cache_put(k, c, lane);
	if (last < k.ch.streams)
		kc_publish(k, last, lane, df);
}

/* Returns false when told to quit while waiting for the group's turn.
 * owned (-Dgpu_local_b): the calling warp takes group g for every item,
 * in item order, so there is no turn to wait for or hand on. */
static __device__ __forceinline__ bool phase_b_group(const kparams &k, ull *cnt, uint32_t slot,
			      uint64_t item, uint32_t n, uint32_t cmd,
			      uint32_t g, uint32_t lane, struct kc_defer *df,
			      bool owned)
{
	const struct res *rs = &k.res[(size_t)slot * k.burst];
	const uint8_t *grp = &k.grp[(size_t)slot * k.burst];
	uint32_t bal[32], tot = 0;
	struct res mine0 = { 0, NULL, 0, 0, 0, 0 };
	int quit = 0;

	/* What phase A of this block left for the group (its entries of the
	 * first 1024 and the first 32 records) does not depend on earlier
	 * items: read it before waiting for the group's turn, so the turn
	 * itself only covers the window state. */
	/* With a format (pipeline.format) the records carry the sequences as
	 * sent: ahead of chunks by slot (or while SSRCs are learned) they
	 * are read once extended (kfmt_extend), after the turn; reorder and
	 * chunks by bytes extend them in their walks (kfmt_in_walk,
	 * kfmt_in_chunks), so they read them before.  One site reads them
	 * either way (a second costs every path registers). */
	bool pre = k.to_b && cmd == VFGX_COMM_CMD_BURST && n;
	bool after = pre && k.fmt && !kfmt_in_walk(k) && !kfmt_in_chunks(k);

#pragma unroll 1
	for (uint32_t turn = 0; turn < 2; turn++) {
		if (turn == 1) {
			KP_START(kp_t);

			if (lane == 0 && !owned)
				quit = wait_ticket(k, g, item);
			if (__shfl_sync(FULL, quit, 0))
				return false;
			__syncwarp();
			KP_END(KP_TURN, kp_t);
			if (!after)
				break;
			KP_START(kp_x);
			kfmt_extend(k.fmt, k.fseq, k.nb_fseq, k.reorder ? k.base : NULL,
				    &k.res[(size_t)slot * k.burst], &k.grp[(size_t)slot * k.burst],
				    cnt, n, g, lane, &k.fres[(size_t)slot * k.burst],
				    k.learn ? k.learned : NULL, k.max_streams,
				    k.reorder ? k.slot : 0);
			KP_END(KP_EXTEND, kp_x);
		}
		if (pre && after == (turn == 1)) {
			group_ballots(grp, 0, n, g, lane, bal, tot);
			mine0 = batch_record(rs, bal, 0, 0, lane);
		}
	}
	/* deferred chunks: a reset acts once the items before published */
	if (df && cmd == VFGX_COMM_CMD_RESET) {
		if (lane == 0)
			quit = kc_wait_chain(k, item);
		if (__shfl_sync(FULL, quit, 0))
			return false;
		__syncwarp();
	}
	if (cmd == VFGX_COMM_CMD_RESET) {
		for (uint32_t s = kg_first(k, g, k.nb_fseq); k.fmt && s < k.nb_fseq;
		     s += kg_step(k))
			if (lane == 0)
				k.fseq[s] = vfgx_seq_state{ 0, 0, 0, 0 };
		for (uint32_t i = lane; k.learn && g == 0 && i < k.max_streams; i += 32)
			k.learned[i] = 0;
		for (uint32_t s = kg_first(k, g, k.nb_streams); s < k.nb_streams;
		     s += kg_step(k)) {
			for (uint32_t i = lane; i < k.window; i += 32)
				k.slot_len[(size_t)s * k.window + i] = 0;
			if (lane == 0) {
				k.base[s] = 0;
				k.held[s] = 0;
				k.next[s] = 0;
			}
		}
		for (uint32_t s = kg_first(k, g, k.ch.streams); k.ch.on && s < k.ch.streams;
		     s += kg_step(k))
			kc_reset(k, s, lane);
	} else if (k.ch.on && cmd != VFGX_COMM_CMD_BURST) {
		/* end of input, or a tick of the clock for timeout_ms */
		ull now = __shfl_sync(FULL, lane == 0 ? gtimer() : 0ull, 0);

		for (uint32_t s = kg_first(k, g, k.ch.streams); s < k.ch.streams;
		     s += kg_step(k)) {
			if (cmd == VFGX_COMM_CMD_FLUSH)
				kc_flush(k, s, lane, df);
			else
				kc_tick(k, s, now, lane, df);
			kc_publish(k, s, lane, df);
		}
	} else if (k.ch.on) {
		KP_START(kp_c);
		chunk_group(k, cnt, rs, k.fres ? &k.fres[(size_t)slot * k.burst] : NULL,
			    k.fpl ? &k.fpl[(size_t)slot * k.burst] : NULL, grp, n, g, bal, tot,
			    mine0, lane, df);
		KP_END(KP_CHUNK_GROUP, kp_c);
	} else if (k.reorder && cmd == VFGX_COMM_CMD_FLUSH) {
		for (uint32_t s = kg_first(k, g, k.nb_streams); s < k.nb_streams;
		     s += kg_step(k))
			kr_flush(k, cnt, s, lane);
	} else if (k.reorder) {
		/* One stream's window state cached in registers (the same in
		 * every lane) while its records come in order with nothing
		 * held: such a record is delivered from the packet with no
		 * access to the window (the fast path of reorder_insert), and
		 * base/next are written back when another stream's record or a
		 * record needing the window comes, and at the end. */
		uint32_t cs = UINT32_MAX, cheld = 0;
		uint64_t cbase = 0, cnext = 0;
		struct kfmt_cur fc = { UINT32_MAX, { 0, 0, 0, 0 } };
		struct vfgx_seq_run sr = { 0, 0 };

		if (kfmt_in_walk(k))
			sr = vfgx_seq_run_of(k.fmt);
		KP_START(kp_w);
		group_walk(rs, grp, n, g, bal, tot, mine0, lane,
			   [&](struct res mine, uint32_t batch) {
				bool xrun = false;

				KP_COUNT(KP_R_BATCHES, 1);
				/* a format's sequences as sent: extended first */
				if (kfmt_in_walk(k)) {
					KP_START(kp_x);
					batch = kfmt_walk_batch(k, cnt, mine, batch, sr, fc, cs,
								cbase, cnext, cheld, xrun, lane);
					KP_END(KP_R_EXT, kp_x);
					if (!batch)
						return;
				}

				/* A batch that is one stream's next records in
				 * sequence, nothing held, and nothing to do per record
				 * (no user stage or delivery log; verification was
				 * done in phase A): delivered at once, with the
				 * counters the records one by one would add (only the
				 * first can count as reordered). */
				if (kr_bulk(k)) {
					/* xrun: the extension found the run (every
					 * lane holds its stream and sequence) */
					uint32_t st0 = xrun ? mine.stream :
							      __shfl_sync(FULL, mine.stream, 0);
					uint64_t s0 = xrun ? mine.seq - lane :
							     __shfl_sync(FULL, mine.seq, 0);
					bool run = lane >= batch ||
						   (mine.stream == st0 && mine.seq == s0 + lane);

					if (xrun || __all_sync(FULL, run)) {
						cache_get(k, st0, cs, cbase, cnext, cheld, lane);
						struct vfgx_ro_state rs = { cbase, cheld };

						if (vfgx_ro_insert(rs, k.window, s0).act ==
						    VFGX_RO_DELIVER) {
							ull bytes = warp_sum(lane < batch ? mine.len : 0);
							uint32_t last = __popc(__ballot_sync(FULL,
								lane < batch && (mine.flags & VFGX_APP_FLAG_LAST)));
							uint32_t vbad = __popc(__ballot_sync(FULL,
								lane < batch && (mine.flags & RF_BAD)));

							if (lane == 0) {
								count(cnt, GPUK_C_DELIVERED, batch);
								count(cnt, GPUK_C_DELIVERED_BYTES, bytes);
								if (last)
									count(cnt, GPUK_C_LAST_SEEN, last);
								if (k.verify && vbad)
									count(cnt, GPUK_C_VERIFY, vbad);
								if (s0 < cnext)
									count(cnt, GPUK_C_ORDER, 1);
							}
							cbase = cnext = s0 + batch;
							return;
						}
					}
					/* a stream with a hole at base: its next
					 * records stored at once (after the in-order
					 * run above, which this leaves as it was) */
					if (__all_sync(FULL, lane >= batch || mine.stream == st0)) {
						cache_get(k, st0, cs, cbase, cnext, cheld, lane);
						if (cheld && kr_store_quiet(k, cnt, mine, batch, st0,
									    cbase, cheld, lane))
							return;
					}
				}

				KP_START(kp_o);
				KP_COUNT(KP_R_ONE_RECS, batch);
#pragma unroll 1
				for (uint32_t j = 0; j < batch; j++) {
					struct res r = shfl_res(mine, j);

					cache_get(k, r.stream, cs, cbase, cnext, cheld, lane);
					struct vfgx_ro_state rs = { cbase, cheld };

					if (vfgx_ro_insert(rs, k.window, r.seq).act ==
					    VFGX_RO_DELIVER) {
						if (kd_deliver(k, cnt, cs, r.seq, r.body, r.len,
							    r.flags, false, lane)) {
							if (lane == 0 && r.seq < cnext)
								count(cnt, GPUK_C_ORDER, 1);
							cnext = r.seq + 1;
						}
						cbase = r.seq + 1;
						continue;
					}
					cache_put(k, cs, cbase, cnext, lane);
					cs = UINT32_MAX;
					kr_insert(k, cnt, &r, lane);
				}
				KP_END(KP_R_ONE, kp_o);
		});
		KP_END(KP_R_WALK, kp_w);
		cache_put(k, cs, cbase, cnext, lane);
		if (VFGX_FMT_WALK)
			kfmt_cur_put(fc, k.fseq, lane);
	}
	__syncwarp();
	/* The release store orders this warp's window writes (published to
	 * lane 0 by the __syncwarp() above) before the next item's acquire:
	 * st.release.gpu is a fence.acq_rel.gpu plus the store, so no extra
	 * __threadfence() is needed. */
	if (lane == 0 && !owned)
		st_release_dev(TICKET(k, g), item + 1);
	return true;
}

/* Persistent mode: the groups of this warp (warp, warp + WARPS, ...) that
 * have no packet in the item (bit j of empty8 for group warp + WARPS * j)
 * only pass their ticket on.  Lane j waits for group j's turn and releases
 * it, all at once, instead of one wait, fence and release after another.
 * The acquire then release by the same lane keeps the chain of earlier
 * items' window writes intact for the next item.  Returns false on quit. */
__device__ bool pass_empty_groups(const kparams &k, uint64_t item,
				  uint32_t warp, uint32_t empty8, uint32_t lane)
{
	int quit = 0;

	if (lane < GPUK_GROUPS / WARPS && ((empty8 >> lane) & 1)) {
		uint32_t g = warp + WARPS * lane;

		quit = wait_ticket(k, g, item);
		if (!quit)
			st_release_dev(TICKET(k, g), item + 1);
	}
	return !__any_sync(FULL, quit);
}

__device__ void zero_counters(ull *cnt)
{
	for (uint32_t t = threadIdx.x; t < GPUK_NCNT; t += blockDim.x)
		cnt[t] = 0;
	__syncthreads();
}

/* Block-level reduction: one atomic per non-zero counter per block. */
__device__ void flush_counters(const kparams &k, ull *cnt)
{
	__syncthreads();
	for (uint32_t t = threadIdx.x; t < GPUK_NCNT; t += blockDim.x) {
		ull v = cnt[t];

		if (v)
			atomicAdd(&k.cnt[t], v);
		cnt[t] = 0;
	}
	__syncthreads();
}

__device__ void mark_done(const kparams &k, uint32_t slot)
{
	/* results, counters and the reorder buffer before DONE (commlist.h):
	 * the caller's __syncthreads() orders the block's writes before this
	 * thread's, and st.release.sys is a fence.acq_rel.sys plus the store,
	 * cumulative over them; a __threadfence_system() (fence.sc.sys) in
	 * front of it adds nothing to the ordering. */
	st_release_sys(&k.status[slot].v, VFGX_COMM_DONE);
}

#endif
