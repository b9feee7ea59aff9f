/* gpu_fmt_seq.cuh - phase B's part of pipeline.format: a producer's
 * sequences as sent extended in item order (vfgx/format.h's and rules.h's
 * rules, the cpu engine's), RTP's SSRCs learned, per batch of a group's
 * records: ahead of chunks by slot (kfmt_extend), or inside the walk of
 * reorder (kfmt_walk_batch) or of chunks by bytes (kfmt_chunk_batch).
 * Device code, included by gpu_phase_b.cuh after the group walk's
 * primitives (group_ballots, batch_index, shfl_res_from, cache_get) and
 * before chunk_group_bytes and phase_b_group, which call it. */
#ifndef VFGX_GPU_FMT_SEQ_CUH
#define VFGX_GPU_FMT_SEQ_CUH

#include <vfgx/format.h>

#include "gpu_kcommon.cuh"
#include "rules.h"

/* RTP's SSRCs without stream_ids (vfgx_fmt_learn_entry's rule, the cpu
 * engine's learn_stream): a raw stream id's index is its place in the
 * table of those seen, a new one taking the first free place; -1 when the
 * table is full.  One lane of group 0's warp, in item order (the group's
 * turn orders the items), so no compare-and-swap. */
__device__ int32_t kfmt_learn(uint64_t *learned, uint32_t nb, uint64_t raw)
{
	volatile uint64_t *t = learned;

	for (uint32_t i = 0; i < nb; i++) {
		int e = vfgx_fmt_learn_entry(t[i], raw);

		if (e == VFGX_FMT_LEARN_FREE)
			t[i] = raw + 1;
		if (e != VFGX_FMT_LEARN_NEXT)
			return (int32_t)i;
	}
	return -1;
}

/* The stream whose sequence state a warp holds in registers while it
 * extends a group's records (written back when the stream changes and at
 * the end), so no record waits for the store of the one before. */
struct kfmt_cur {
	uint32_t cs; /* UINT32_MAX: none */
	struct vfgx_seq_state st;
};

__device__ __forceinline__ void kfmt_cur_take(struct kfmt_cur &c, struct vfgx_seq_state *fseq,
					      uint32_t s, uint32_t lane)
{
	if (s == c.cs)
		return;
	if (c.cs != UINT32_MAX && lane == 0)
		fseq[c.cs] = c.st;
	c.cs = s;
	c.st = fseq[s];
}

__device__ __forceinline__ void kfmt_cur_put(const struct kfmt_cur &c, struct vfgx_seq_state *fseq,
					     uint32_t lane)
{
	if (c.cs != UINT32_MAX && lane == 0)
		fseq[c.cs] = c.st;
	__syncwarp();
}

/* pipeline.format: one batch of a group's records (lane j the j-th, lanes
 * below nb), its sequences as sent extended with their streams' state
 * (vfgx_seq_extend, the cpu engine's rule), in arrival order.  With
 * learned (RTP's SSRCs), a record's stream index first (every record is
 * group 0's), then a record past too_big (reorder's slot; 0: none) is
 * dropped, as proc.c's order has it.  A bad stream, jump or a sequence
 * below 0 drops the record: its reason (VFGX_R_*) is returned, 0 for a
 * record kept, whose stream and seq are now the extended ones.  *fresh:
 * the record started its stream (the window starts at it, as proc.c's).
 *
 * A batch that is one stream's next sequences is extended at once
 * (vfgx_seq_extend_steps), each lane its own record: with steps, when
 * each is a step forward from the one before of less than
 * seq_max_dropout (the same sequence again, as a SPEAD heap's packets,
 * or the next); without, a run of steps of 1 only (reorder's walk, whose
 * producers send runs: with the scan there too its rows were 2-4 % lower,
 * H200, bd2776c).  *run when every step is 1 (every lane, past nb too,
 * then holds its stream and sequence e0 + lane); s0: lane 0's stream;
 * any other batch is walked record by record, every lane computing the
 * same decision on values shuffled from the record's lane. */
__device__ __forceinline__ int kfmt_batch(const struct vfgx_format *__restrict__ fmt,
					  struct vfgx_seq_run sr, struct vfgx_seq_state *fseq,
					  uint32_t nb_fseq, uint64_t *learned, uint32_t nb_learned,
					  uint32_t too_big, uint32_t nb, uint32_t lane, uint32_t s0,
					  uint32_t &my_stream, uint64_t &my_seq, uint32_t my_len,
					  uint64_t my_raw, bool &fresh, bool &run, struct kfmt_cur &c,
					  const bool steps)
{
	bool in = lane < nb, seq_ok;
	uint64_t q0 = __shfl_sync(FULL, my_seq, 0);
	uint64_t raw0 = learned ? __shfl_sync(FULL, my_raw, 0) : 0;
	uint64_t step = 1;
	int my_v = 0;

	if (steps) {
		uint64_t prev = __shfl_up_sync(FULL, my_seq, 1);

		/* lane 0's step is from the stream's highest
		 * (vfgx_seq_extend_steps) */
		step = in && lane ? vfgx_seq_step(sr, prev, my_seq) : 0;
		seq_ok = step < sr.max_dropout;
	} else {
		/* q0 + lane modulo 2^seq_bits */
		seq_ok = vfgx_seq_step(sr, q0 + lane, my_seq) == 0;
	}
	fresh = false;
	run = false;
	if (__all_sync(FULL, !in || (my_stream == s0 && seq_ok &&
				     (!learned || (my_raw == raw0 &&
						   !(too_big && my_len > too_big)))))) {
		uint32_t s = s0;
		uint64_t e0;
		bool ok = true;

		if (learned) {
			int32_t li = 0;
			uint32_t x;

			if (lane == 0)
				li = kfmt_learn(learned, nb_learned, raw0);
			x = vfgx_fmt_learned_stream(fmt, __shfl_sync(FULL, li, 0));
			ok = x != UINT32_MAX && s + x < nb_fseq;
			s += x;
		}
		/* each lane's steps from lane 0's sequence */
		uint64_t from0 = step, total = nb - 1;
		bool unit = true;

		if (steps) {
			from0 = warp_scan_sum(step, lane);
			unit = __all_sync(FULL, !in || lane == 0 || step == 1);
			total = __shfl_sync(FULL, from0, 31);
		}
		if (ok && s < nb_fseq) {
			kfmt_cur_take(c, fseq, s, lane);
			/* a step of 1 is in order only from seq_max_dropout 2 */
			if ((steps || nb == 1 || sr.max_dropout >= 2) &&
			    vfgx_seq_extend_steps(sr, &c.st, q0, total, &e0)) {
				/* every lane (those past nb too): s, and with
				 * steps of 1 e0 + lane */
				my_stream = s;
				my_seq = unit ? e0 + lane : e0 + from0;
				run = unit;
				return 0;
			}
		}
	}
	for (uint32_t m = __ballot_sync(FULL, in); m; m &= m - 1) {
		uint32_t jl = (uint32_t)(__ffs(m) - 1);
		uint32_t s = __shfl_sync(FULL, my_stream, jl);
		uint64_t seq = __shfl_sync(FULL, my_seq, jl);
		uint64_t ext = 0;
		int v = VFGX_FD_OK, reason = 0;
		bool fr = false;

		if (learned) {
			int32_t li = 0;
			uint64_t raw = __shfl_sync(FULL, my_raw, jl);
			uint32_t len = __shfl_sync(FULL, my_len, jl);
			uint32_t x;

			if (lane == 0)
				li = kfmt_learn(learned, nb_learned, raw);
			x = vfgx_fmt_learned_stream(fmt, __shfl_sync(FULL, li, 0));
			if (x == UINT32_MAX || s + x >= nb_fseq) {
				v = VFGX_FD_BAD_STREAM;
			} else {
				s += x;
				if (too_big && len > too_big)
					reason = VFGX_R_TOO_BIG;
			}
		}
		if (!reason && v == VFGX_FD_OK && s >= nb_fseq)
			v = VFGX_FD_BAD_STREAM;
		if (!reason && v == VFGX_FD_OK) {
			kfmt_cur_take(c, fseq, s, lane);
			fr = !c.st.started;
			v = vfgx_seq_extend(fmt, &c.st, seq, &ext);
		}
		if (!reason && v != VFGX_FD_OK)
			reason = vfgx_fmt_drop_reason(v);
		if (lane == jl) {
			my_stream = s;
			my_seq = ext;
			my_v = reason;
			fresh = fr && v == VFGX_FD_OK && !reason;
		}
	}
	return my_v;
}

/* pipeline.format ahead of chunks (or of reorder while SSRCs are
 * learned): each of the group's records of the item gets its sequence
 * extended (kfmt_batch) in item order, before chunks or reorder see it:
 * the group's turn orders the items and a stream lives in one group.  A
 * dropped record has its group mark cleared.  Reorder without learning
 * extends inside its own walk instead (phase_b_group), each record read
 * once. */
__device__ __noinline__ void kfmt_extend(const struct vfgx_format *__restrict__ fmt,
					 struct vfgx_seq_state *fseq, uint32_t nb_fseq,
					 uint64_t *base, struct res *rs, uint8_t *grp,
					 ull *cnt, uint32_t n, uint32_t g, uint32_t lane,
					 const struct kfres *frs, uint64_t *learned,
					 uint32_t nb_learned, uint32_t too_big)
{
	struct kfmt_cur c = { UINT32_MAX, { 0, 0, 0, 0 } };
	struct vfgx_seq_run sr = vfgx_seq_run_of(fmt);
	uint32_t bal[32], tot;

	for (uint32_t b0 = 0; b0 < n; b0 += 1024) {
		group_ballots(grp, b0, n, g, lane, bal, tot);
		for (uint32_t r0 = 0; r0 < tot; r0 += 32) {
			uint32_t nb = tot - r0 < 32 ? tot - r0 : 32;
			bool in = lane < nb, fresh, run;
			uint32_t i = in ? batch_index(bal, b0, r0, lane) : 0;
			uint32_t my_stream = in ? rs[i].stream : 0, my_len = in ? rs[i].len : 0;
			uint64_t my_seq = in ? rs[i].seq : 0;
			uint64_t my_raw = in && learned ? frs[i].raw : 0;
			int my_v = kfmt_batch(fmt, sr, fseq, nb_fseq, learned, nb_learned, too_big,
					      nb, lane, __shfl_sync(FULL, my_stream, 0), my_stream,
					      my_seq, my_len, my_raw, fresh, run, c, true);

			/* the window starts at the stream's first extended
			 * sequence (proc.c does the same) */
			if (fresh && base)
				base[my_stream] = my_seq;
			if (in) {
				if (my_v) {
					grp[i] = 0xff;
					count(cnt, GPUK_C_DROP0 + my_v, 1);
				} else {
					rs[i].stream = my_stream;
					rs[i].seq = my_seq;
				}
			}
		}
	}
	kfmt_cur_put(c, fseq, lane);
}

/* A batch's records after kfmt_batch (v: each lane's verdict): the
 * dropped ones counted and the rest moved down to lanes 0 .. kept - 1.
 * Returns how many were kept. */
__device__ __forceinline__ uint32_t kfmt_keep(ull *cnt, struct res &mine, uint32_t batch, int v,
					      uint32_t lane)
{
	uint32_t kept = __ballot_sync(FULL, lane < batch && !v);

	if (kept == (batch < 32 ? (1u << batch) - 1 : FULL))
		return batch;
	if (lane < batch && v)
		count(cnt, GPUK_C_DROP0 + v, 1);
	/* lane j takes the j-th record kept */
	uint32_t m = kept, src = lane;

	if (lane < (uint32_t)__popc(kept)) {
		for (uint32_t d = lane; d; d--)
			m &= m - 1;
		src = (uint32_t)(__ffs(m) - 1);
	}
	mine = shfl_res_from(mine, src);
	return (uint32_t)__popc(kept);
}

/* Reorder's walk with a format (not learning SSRCs): the batch's
 * sequences extended in place (kfmt_batch, the records read once), the
 * dropped ones counted and the rest moved down to lanes 0 .. kept - 1;
 * a stream started here gets its window's base at its first extended
 * sequence, through the walk's cache.  The extension state and the
 * window state of lane 0's stream are loaded together (one round trip
 * when the stream changes).  A batch that is the next sequences of the
 * stream both caches hold already is extended at once before any of that
 * (the steady state of a stream's walk).  Returns the batch's records
 * kept; *run as kfmt_batch's (the whole batch one stream's run, every lane
 * holding it). */
__device__ __forceinline__ uint32_t kfmt_walk_batch(const kparams &k, ull *cnt, struct res &mine,
						    uint32_t batch, struct vfgx_seq_run sr,
						    struct kfmt_cur &c, uint32_t &cs,
						    uint64_t &cbase, uint64_t &cnext,
						    uint32_t &cheld, bool &run, uint32_t lane)
{
	uint32_t s0 = __shfl_sync(FULL, mine.stream, 0);
	uint64_t q0 = __shfl_sync(FULL, mine.seq, 0);
	bool fresh;

	/* The steady state first: the batch is the next sequences as sent of
	 * the stream whose states both caches already hold (kfmt_batch's run
	 * without steps, its loads and stream changes left out): the stream
	 * and the first sequence shuffled together, one vote. */
	if (s0 == c.cs && s0 == cs && s0 < k.nb_fseq && s0 < k.nb_streams &&
	    (batch == 1 || sr.max_dropout >= 2) &&
	    __all_sync(FULL, lane >= batch ||
				 (mine.stream == s0 && vfgx_seq_step(sr, q0 + lane, mine.seq) == 0))) {
		uint64_t e0;

		if (vfgx_seq_extend_steps(sr, &c.st, q0, batch - 1, &e0)) {
			mine.stream = s0;
			mine.seq = e0 + lane;
			run = true;
			return batch;
		}
	}
	if (s0 < k.nb_fseq && s0 < k.nb_streams) {
		kfmt_cur_take(c, k.fseq, s0, lane);
		cache_get(k, s0, cs, cbase, cnext, cheld, lane);
	}
	int v = kfmt_batch(k.fmt, sr, k.fseq, k.nb_fseq, NULL, 0, 0, batch, lane, s0, mine.stream,
			   mine.seq, mine.len, 0, fresh, run, c, false);

	if (run)
		return batch;
	for (uint32_t m = __ballot_sync(FULL, fresh); m; m &= m - 1) {
		uint32_t jl = (uint32_t)(__ffs(m) - 1);

		cache_get(k, __shfl_sync(FULL, mine.stream, jl), cs, cbase, cnext, cheld, lane);
		cbase = __shfl_sync(FULL, mine.seq, jl);
	}
	return kfmt_keep(cnt, mine, batch, v, lane);
}

/* Chunks by bytes with a format (not learning SSRCs): the batch's
 * sequences extended in place as the walk reaches it (kfmt_batch, the
 * records read once, in item order: the group's turn orders the items),
 * the dropped ones counted and the rest moved down (kfmt_keep).  Returns
 * the batch's records kept. */
__device__ __forceinline__ uint32_t kfmt_chunk_batch(const kparams &k, ull *cnt, struct res &mine,
						     uint32_t batch, struct vfgx_seq_run sr,
						     struct kfmt_cur &c, uint32_t lane)
{
	bool fresh, run;
	int v = kfmt_batch(k.fmt, sr, k.fseq, k.nb_fseq, NULL, 0, 0, batch, lane,
			   __shfl_sync(FULL, mine.stream, 0), mine.stream, mine.seq, mine.len, 0,
			   fresh, run, c, true);

	return kfmt_keep(cnt, mine, batch, v, lane);
}

/* Whether the reorder walk extends a format's sequences itself
 * (kfmt_walk_batch) rather than kfmt_extend ahead of it: reorder without
 * chunks, SSRCs not learned (learning takes its turn first).
 * -Dgpu_fmt_walk=false: never (kfmt_extend ahead of every path, as
 * before the walk did it), an A/B for the vfgx header's rows. */
__device__ __forceinline__ bool kfmt_in_walk(const kparams &k)
{
	return VFGX_FMT_WALK && k.fmt && k.reorder && !k.ch.on && !k.learn;
}

/* Whether chunks by bytes extend a format's sequences in their own walk
 * (kfmt_chunk_batch) rather than kfmt_extend ahead of it: no reorder,
 * SSRCs not learned.  -Dgpu_fmt_walk=false: never. */
__device__ __forceinline__ bool kfmt_in_chunks(const kparams &k)
{
	return VFGX_FMT_WALK && k.fmt && k.ch.on && k.ch.by_bytes && !k.reorder && !k.learn;
}

#endif
