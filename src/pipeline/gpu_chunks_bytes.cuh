/* gpu_chunks_bytes.cuh - pipeline.chunks by bytes on the GPU (a format
 * that places by offset or lines: SPEAD heaps, RFC 4175 frames; or a user
 * placement function, place: user, in the kernel linked with it): phase B
 * places each piece of a packet at the byte offset its header gives, by
 * the rules of vfgx/format.h and rules.h that chunk.c's place_bytes
 * follows, so the two engines agree (tests/gpu/test_format_chunks_gpu.c).
 * The ring, release and publication are gpu_chunks.cuh's.  Device code,
 * included by gpu_phase_b.cuh. */
#ifndef VFGX_GPU_CHUNKS_BYTES_CUH
#define VFGX_GPU_CHUNKS_BYTES_CUH

#include <vfgx/format.h>

#include "gpu_chunks_held.cuh"
#include "gpu_phase_a.cuh" /* kfmt_user_place */
#include "rules.h"

/* Does each of o's pieces, in order, start where the one before ends or
 * later, the first at from or later (so that it overlaps no piece placed
 * before it)?  *end_at: where the furthest ends; *got: their bytes. */
__device__ __forceinline__ bool kc_pieces_after(const struct vfgx_fmt_pkt &o, ull from,
						ull *end_at, ull *got)
{
	bool after = true;
	ull e = 0, g = 0;

	for (uint32_t i = 0; i < o.nseg; i++) {
		after = after && o.seg[i].dst_off >= from;
		from = o.seg[i].dst_off + o.seg[i].len;
		g += o.seg[i].len;
		if (from > e)
			e = from;
	}
	*end_at = e;
	*got = g;
	return after;
}

/* Record r's packet with its pieces placed: as phase A placed it (f, its
 * placed set: kfmt_hdr), else decoded again (vfgx_fmt_decode_plan, the
 * same answer as phase A's; place: user, the user's function over it)
 * and placed (vfgx_fmt_place, which checks every piece ends inside the
 * chunk).  Returns the decode's verdict (VFGX_FD_*; phase A passed the
 * record, so only a learned SSRC past the streams fails it, and that one
 * goes on), *pv the placement's. */
__device__ __forceinline__ int kc_pkt(const kparams &k, const struct res &r,
				      const struct kfplace &f, struct vfgx_fmt_pkt *o, int *pv)
{
	int v;

	if (f.placed) {
		o->end = f.end;
		o->chunk = f.chunk;
		o->chunk_bytes = f.chunk_bytes;
		o->payload_off = f.payload_off;
		o->payload_len = f.payload_len;
		o->nseg = 1;
		o->seg[0].src_off = f.src_off;
		o->seg[0].len = f.len;
		o->seg[0].dst_off = f.dst_off;
	} else {
		v = vfgx_fmt_decode_plan(k.fmt, &k.fplan, r.body, r.len, o);
		if (v != VFGX_FD_OK && v != VFGX_FD_BAD_STREAM)
			return v;
#if VFGX_USER_PLACE_LINK
		if (k.fmt->place == VFGX_FMT_PLACE_USER &&
		    (v = kfmt_user_place(k.fmt, r.body, r.len, o)) != VFGX_FD_OK)
			return v;
#endif
	}
	/* the walk's: its stream and extended sequence (placement reads it) */
	o->stream = r.stream;
	o->ext_seq = r.seq;
	*pv = f.placed ? f.pv : vfgx_fmt_place(k.fmt, o);
	return VFGX_FD_OK;
}

/* Record r's struct kfplace (placed 0 without k.fpl). */
__device__ __forceinline__ struct kfplace kc_fplace(const struct kfplace *fps,
						    const struct res &r)
{
	struct kfplace f;

	if (fps)
		return fps[r.at];
	f.placed = 0;
	return f;
}

/* The open chunk of stream s with id (chunk.c's place_bytes search: the
 * highest n from top down to head, at most in_flight of them, whose slot
 * holds it with that id), a lane a chunk: its words in one round trip
 * rather than in turn.  1 and *nf when found. */
__device__ __forceinline__ int kc_find_id(const kparams &k, uint32_t s,
					  const struct vfgx_ck_stream &cv, ull id, uint32_t lane,
					  ull *nf)
{
	ull cnt;

	if (!cv.open || cv.top < cv.head)
		return 0;
	cnt = cv.top - cv.head + 1;
	if (cnt > k.ch.in_flight)
		cnt = k.ch.in_flight;
	for (ull r0 = 0; r0 < cnt; r0 += 32) {
		ull n = cv.top - r0 - lane;
		bool hit = false;

		if (r0 + lane < cnt) {
			struct kc_slot *sl = &k.kcsl[kc_si(k, s, n)];
			ull state = KV(sl->state), index = KV(sl->index), cid = KV(sl->chunk_id);

			hit = vfgx_ck_holds(state == KC_FILLING, index, n) && cid == id;
		}
		uint32_t b = __ballot_sync(FULL, hit);

		if (b) {
			*nf = cv.top - r0 - (uint32_t)(__ffs(b) - 1);
			return 1;
		}
	}
	return 0;
}

/*
 * Place one record by bytes (chunk.c's place_bytes, rule for rule): r
 * carries its whole UDP payload (kparams.fmt_raw) and its extended
 * sequence; its pieces are phase A's (fps) or placed again here
 * (kc_pkt).  The
 * chunk is the open one with the packet's id, or top + 1 for a newer id;
 * a packet of a released chunk (late), a duplicate (its present bit) or
 * a refused ring slot is decided before any byte is written.  Pieces of
 * different packets may overlap, and the last one's bytes must win, as on
 * the cpu engine: pieces in order from the slot's high-water mark on
 * (kc_pieces_after; what senders send in order) overlap none before them
 * and are listed for phase C (df) like a slot's payload; others are
 * copied here once every copy before them is done (kc_defer_drain).
 * *data, *len: the payload delivered; *n: the chunk placed into.
 */
__device__ int kc_place_bytes(const kparams &k, const struct res &r,
			      const struct kfres *fr, const struct kfplace *fps, ull now, uint32_t lane,
			      struct kc_defer *df, const uint8_t **data, uint32_t *len,
			      ull *n_placed)
{
	uint32_t s = r.stream, kk = 0;
	struct kc_stream *st;
	struct kc_slot *sl;
	struct vfgx_fmt_pkt o;
	struct vfgx_ck_stream cv;
	struct vfgx_ck_bidx b;
	struct vfgx_ck_place pl;
	ull nf = 0, pw, bit, got = 0, end_at = 0, top_id, hw, pc, bin, span, hf, hf0, top;
	bool after;
	int found = 0, v, pv = VFGX_FD_OK;
	size_t si;

	if (s >= k.ch.streams)
		return VFGX_R_BAD_STREAM;
	KP_START(kp_b);
	st = &k.kcs[s];
	/* the stream's words, issued before the record's placement is read
	 * (nothing below writes them before they are used) */
	cv = kc_state(st);
	top_id = KV(st->top_id);
	/* place: user: the chunk, end mark and pieces are the user's
	 * function's, checked as on the cpu engine (vfgx_place_apply); phase
	 * A called it on the same bytes, so it passes here too */
	v = kc_pkt(k, r, kc_fplace(fps, r), &o, &pv);
	if (v != VFGX_FD_OK)
		return vfgx_fmt_drop_reason(v);
	*data = r.body + o.payload_off;
	*len = o.payload_len;
	v = pv;
	if (v != VFGX_FD_OK) {
		kc_bump(st, GPUK_K_OUT_OF_RANGE, 1, lane);
		__syncwarp();
		return vfgx_fmt_drop_reason(v);
	}
	if (o.nseg == 0)
		return VFGX_R_BAD_LENGTH;
	/* the open chunk with this id */
	found = kc_find_id(k, s, cv, o.chunk, lane, &nf);
	b = vfgx_ck_byte_chunk(cv, top_id, o.chunk, k.ch.id_bits, found, nf);
	if (b.late) {
		kc_bump(st, GPUK_K_LATE, 1, lane);
		__syncwarp();
		return VFGX_R_LATE;
	}
	v = vfgx_ck_byte_key(kc_conf(k), (int)k.ch.by_offset, o.ext_seq, o.seg[0].dst_off, &kk);
	if (v != VFGX_STAGE_PASS) {
		kc_bump(st, GPUK_K_OUT_OF_RANGE, 1, lane);
		__syncwarp();
		return v;
	}
	pl = vfgx_ck_place(kc_conf(k), cv, b.n * k.ch.packets + kk, NULL, 0);
	/* chunk.c's place_admit */
	if (pl.open) {
		if (lane == 0) {
			KV(st->open) = 1;
			KV(st->head) = pl.n;
			KV(st->top) = pl.n;
			KV(st->first_index) = pl.p;
		}
		__syncwarp();
	}
	if (pl.verdict != VFGX_STAGE_PASS) {
		if (pl.out_of_range || pl.late)
			kc_bump(st, pl.late ? GPUK_K_LATE : GPUK_K_OUT_OF_RANGE, 1, lane);
		__syncwarp();
		return pl.verdict;
	}
	if (pl.advance)
		kc_advance_to(k, s, pl.target, VFGX_CHUNK_BY_RING, true, lane, df);
	si = kc_si(k, s, pl.n);
	KP_END(KP_B_PRE, kp_b);
	KP_START(kp_s);
	if (!kc_slot_open(k, s, si, pl.n, now, lane, df))
		return KC_DROP_NOBUFS;
	KP_END(KP_SLOT_OPEN, kp_s);
	KP_START(kp_m);
	sl = &k.kcsl[si];
	/* the present word, the slot's words and the stream's top at once:
	 * this warp's lane 0 is their only writer while it places (the
	 * drain below waits for other items' publication, which writes
	 * none of them) */
	pw = kc_present(k, si)[pl.k / 64];
	hw = KV(sl->hw);
	pc = KV(sl->present_count);
	bin = KV(sl->bytes_in);
	span = KV(sl->span);
	hf = KV(sl->hdr_flags);
	top = KV(st->top);
	hf0 = hf;
	bit = 1ull << (pl.k % 64);
	if (vfgx_ck_dup(pw, pl.k) != VFGX_STAGE_PASS) {
		kc_bump(st, GPUK_K_DUPLICATES, 1, lane);
		__syncwarp();
		return VFGX_R_DUPLICATE;
	}
	after = kc_pieces_after(o, hw, &end_at, &got);
	/* a quit meanwhile: nothing written, the kernel ends */
	KP_START(kp_d);
	if (df && !after && !kc_defer_drain(k, df, lane))
		return KC_DROP_NOBUFS;
	KP_END(KP_DRAIN, kp_d);
	/* the chunk's first packet (kc_first, its flags word held here) */
	if (pc == 0 && lane == 0) {
		KV(sl->chunk_id) = o.chunk;
		KV(sl->first_seq) = o.ext_seq;
		if (fr && fr->has_ts) {
			KV(sl->hdr_ts) = fr->hts;
			hf |= VFGX_CHUNK_HDR_TS;
		}
	}
	if (b.new_top)
		kc_set(st->top_id, o.chunk, lane);
	for (uint32_t i = 0; i < o.nseg; i++) {
		uint8_t *dst = kc_base(k, si) + o.seg[i].dst_off;

		if (after)
			kc_defer_add(df, dst, r.body + o.seg[i].src_off, o.seg[i].len, lane);
		else
			kc_copy(dst, r.body + o.seg[i].src_off, o.seg[i].len, lane);
	}
	if (o.end)
		hf |= VFGX_CHUNK_ENDED;
	if (lane == 0) {
		if (end_at > hw)
			KV(sl->hw) = end_at;
		kc_lens(k, si)[pl.k] = (uint32_t)got;
		kc_present(k, si)[pl.k / 64] = pw | bit;
		KV(sl->present_count) = pc + 1;
		KV(sl->bytes_in) = bin + got;
		KV(sl->span) = vfgx_ck_byte_span(span, (int)o.end, end_at, o.chunk_bytes);
		if (hf != hf0)
			KV(sl->hdr_flags) = hf;
		KV(sl->last_gt) = now;
		if (pl.n > top)
			KV(st->top) = pl.n;
	}
	kc_bump(st, GPUK_K_PLACED, 1, lane);
	__syncwarp();
	KP_END(KP_B_MID, kp_m);
	KP_START(kp_t);
	/* kc_settle's question asked of the words held here when the
	 * placement moved neither the stream's head nor its ring (no open,
	 * no advance) and went into the head chunk; its full path when the
	 * answer is to release or close, or it cannot be asked here */
	{
		struct vfgx_ck_stream v = cv;
		bool held = !pl.open && !pl.advance && pl.n == cv.head;
		ull span2 = vfgx_ck_byte_span(span, (int)o.end, end_at, o.chunk_bytes);

		if (pl.n > v.top)
			v.top = pl.n;
		if (!held || vfgx_ck_settle(kc_conf(k), v, bin + got >= span2).act != VFGX_CK_SETTLED)
			kc_settle(k, s, lane, df);
	}
	KP_END(KP_SETTLE, kp_t);
	*n_placed = pl.n;
	return VFGX_STAGE_PASS;
}

/* The chunk a stream's last record went to by bytes (where
 * kc_place_bytes_run looks first); s UINT32_MAX: none. */
struct kc_bhint {
	uint32_t s;
	ull n;
};

/* The first lane where ok is false (32: none). */
__device__ __forceinline__ uint32_t first_not(bool ok)
{
	uint32_t f = (uint32_t)__ffs(~__ballot_sync(FULL, ok));

	return f ? f - 1 : 32;
}

/*
 * The longest run of a batch's first records (lane j holding the j-th,
 * batch of them) that chunk h.n of stream h.s takes at once, each as
 * kc_place_bytes would place it, its pieces phase A's (fps) or placed
 * again in its own lane (kc_pkt).  The chunk is open and filling, between
 * head and top, and the stream settled (no release or close due:
 * kc_settle would do nothing after any of them).  Each record is of the
 * stream and the chunk's id, not the chunk's first, not a duplicate (its
 * key present, or an earlier one's of the run), and its pieces start
 * where those placed before end (the slot's high-water mark, the run's
 * earlier ones: kc_pieces_after), so they are listed for phase C in any
 * order.  Every record but the last neither ends the chunk (its end mark)
 * nor completes it; the last may, and then *fin is set and the stream
 * settled after it (kc_settle: the release of a complete head chunk).
 * The bits, lengths and the slot's words are written once; the
 * deliveries counted (the caller checked that delivery has no per-record
 * work).  The stream's and slot's words, the records' placements and the
 * chunk's present words (up to 32 of them) are loaded at once.
 * Persistent mode (df) only.  Returns how many were placed (0: the first
 * goes by kc_place_bytes).
 */
__device__ uint32_t kc_place_bytes_run(const kparams &k, ull *cnt, const struct kc_bhint &h,
				       const struct res &mine, const struct kfplace *fps,
				       uint32_t batch, ull now, uint32_t lane,
				       struct kc_defer *df, bool *fin)
{
	uint32_t s = h.s, kk = 0, m, nseg = 0, at, W = k.ch.present_words;
	struct vfgx_ck_stream cv;
	struct vfgx_fmt_pkt o;
	struct kfplace f;
	struct kc_stream *st;
	struct kc_slot *sl;
	ull state, index, id, pc, bin, span, hw, end_at = 0, got = 0, pw = 0, pwl = 0;
	ull cb = ~0ull, before, hw2, sp, sum, spl, chunk = 0, d0 = 0;
	uint32_t plen = 0;
	bool good, head_done, endm = false, last, one, after = false;
	size_t si;
	int v = VFGX_FD_MISMATCH, pv = VFGX_FD_OK;

	*fin = false;
	if (!df || s >= k.ch.streams || __shfl_sync(FULL, mine.stream, 0) != s)
		return 0;
	KP_START(kp_l);
	st = &k.kcs[s];
	si = kc_si(k, s, h.n);
	sl = &k.kcsl[si];
	good = lane < batch && mine.stream == s;
	/* the stream's words, the slot's, the chunk's present words and the
	 * records' placements in one round trip (L2 loads: this warp's lane
	 * 0 wrote them last, or another multiprocessor before the group's
	 * ticket came here) */
	cv.head = __ldcg(&st->head);
	cv.top = __ldcg(&st->top);
	cv.open = __ldcg(&st->open) != 0;
	state = __ldcg(&sl->state);
	index = __ldcg(&sl->index);
	id = __ldcg(&sl->chunk_id);
	pc = __ldcg(&sl->present_count);
	bin = __ldcg(&sl->bytes_in);
	span = __ldcg(&sl->span);
	hw = __ldcg(&sl->hw);
	if (W <= 32 && lane < W)
		pwl = __ldcg((const ull *)kc_present(k, si) + lane);
	f.placed = 0;
	if (good)
		f = kc_fplace(fps, mine);
	/* phase A's one piece (f.placed) is read from f, in registers; any
	 * other record's packet is decoded and placed again into o (kc_pkt) */
	one = f.placed != 0;
	if (good && !one)
		v = kc_pkt(k, mine, f, &o, &pv);
	if (good && one) {
		v = VFGX_FD_OK;
		pv = f.pv;
	}
	if (!cv.open || !vfgx_ck_holds(state == KC_FILLING, index, h.n) || h.n < cv.head ||
	    h.n > cv.top || h.n - cv.head >= k.ch.in_flight || pc == 0)
		return 0;
	if (cv.head == h.n) {
		head_done = bin >= span;
	} else {
		struct kc_slot *hs = &k.kcsl[kc_si(k, s, cv.head)];

		head_done = vfgx_ck_holds(__ldcg(&hs->state) == KC_FILLING, __ldcg(&hs->index),
					  cv.head) &&
			    __ldcg(&hs->bytes_in) >= __ldcg(&hs->span);
	}
	if (vfgx_ck_settle(kc_conf(k), cv, head_done).act != VFGX_CK_SETTLED)
		return 0;
	KP_END(KP_BR_LOAD, kp_l);
	KP_START(kp_p);
	good = good && v == VFGX_FD_OK && pv == VFGX_FD_OK;
	if (good && one) {
		nseg = 1;
		chunk = f.chunk;
		d0 = f.dst_off;
		endm = f.end != 0;
		plen = f.payload_len;
		if (f.chunk_bytes)
			cb = f.chunk_bytes;
		end_at = f.dst_off + f.len;
		got = f.len;
		after = true;
	} else if (good) {
		nseg = o.nseg;
		chunk = o.chunk;
		d0 = nseg ? o.seg[0].dst_off : 0;
		endm = o.end != 0;
		plen = o.payload_len;
		if (o.chunk_bytes)
			cb = o.chunk_bytes;
		after = kc_pieces_after(o, 0, &end_at, &got);
	}
	/* the walk's extended sequence is the packet's (kc_pkt) */
	good = good && nseg != 0 && chunk == id &&
	       vfgx_ck_byte_key(kc_conf(k), (int)k.ch.by_offset, mine.seq, d0, &kk) ==
		       VFGX_STAGE_PASS;
	/* what vfgx_ck_place would add for packet kk of chunk h.n: the
	 * checks above exclude its open, late and ring steps (and n = h.n,
	 * k = kk), which leaves the index's range */
	good = good && h.n * k.ch.packets + kk < VFGX_CHUNK_MAX_INDEX;
	/* kk's present word: loaded above, else in a round trip of its own */
	pw = __shfl_sync(FULL, pwl, (kk / 64) & 31);
	if (good) {
		if (W > 32)
			pw = __ldcg((const ull *)kc_present(k, si) + kk / 64);
		good = vfgx_ck_dup(pw, kk) == VFGX_STAGE_PASS && after;
	}
	/* a key an earlier record of the run has: a duplicate (every lane
	 * matches, none skips the intrinsic) */
	uint32_t same = __match_any_sync(FULL, good ? kk : ~0u);

	good = good && !(same & ((1u << lane) - 1));
	m = first_not(good);
	/* each one's pieces from where the slot's and the earlier ones' end
	 * (where the one before ends: every piece of each before it starts
	 * where those before it end, so the furthest end is the last one's);
	 * the chunk's span after it (chunk.c's span rule: a packet's own
	 * chunk size lowers it, an end mark sets it where the packet ends) */
	before = __shfl_up_sync(FULL, end_at, 1);
	if (lane == 0 || before < hw)
		before = hw;
	sp = warp_scan_min(lane < m ? cb : ~0ull, lane);
	if (sp > span)
		sp = span;
	spl = vfgx_ck_byte_span(sp, (int)endm, end_at, 0);
	sum = warp_scan_sum(lane < m ? got : 0ull, lane);
	good = lane < m && good && d0 >= before;
	/* those before the last neither end nor complete the chunk */
	last = endm || bin + sum >= spl;
	m = first_not(good && !last);
	*fin = __shfl_sync(FULL, good && last, m & 31) && m < 32;
	m += *fin;
	if (m == 0)
		return 0;
	KP_END(KP_BR_PLACE, kp_p);
	KP_START(kp_w);
	if (lane < m)
		kc_lens(k, si)[kk] = (uint32_t)got;
	{
		/* the bits, a word at a time */
		bool left = lane < m;
		uint32_t t;

		while ((t = __ballot_sync(FULL, left))) {
			uint32_t src = (uint32_t)__ffs(t) - 1;
			uint32_t w = __shfl_sync(FULL, kk / 64, src);
			ull wpw = __shfl_sync(FULL, pw, src);
			bool in = left && kk / 64 == w;
			ull bit = in ? 1ull << (kk % 64) : 0ull;
			uint32_t lo = __reduce_or_sync(FULL, (uint32_t)bit);
			uint32_t hi = __reduce_or_sync(FULL, (uint32_t)(bit >> 32));

			if (lane == 0)
				kc_present(k, si)[w] = wpw | ((ull)hi << 32) | lo;
			left = left && !in;
		}
	}
	/* the pieces listed for phase C, in order */
	at = (uint32_t)warp_scan_sum(lane < m ? nseg : 0u, lane);
	{
		uint32_t tot = __shfl_sync(FULL, at, m - 1);

		if (df->ncp + tot > KC_CP_CAP) {
			KP_START(kp_i);
			kc_defer_copy(df, lane);
			KP_END(KP_INLINE_COPY, kp_i);
		}
		at -= lane < m ? nseg : 0u;
		for (uint32_t i = 0; lane < m && i < nseg; i++) {
			struct kc_cp *e = &df->cp[df->ncp + at + i];

			e->src = mine.body + (one ? f.src_off : o.seg[i].src_off);
			e->dst = kc_base(k, si) + (one ? f.dst_off : o.seg[i].dst_off);
			e->len = one ? f.len : o.seg[i].len;
		}
		df->ncp += tot;
	}
	{
		ull bytes = __shfl_sync(FULL, sum, m - 1), span2 = __shfl_sync(FULL, spl, m - 1);
		bool ended = __shfl_sync(FULL, endm, m - 1);

		hw2 = __shfl_sync(FULL, end_at, m - 1);
		if (lane == 0) {
			KV(sl->present_count) = pc + m;
			KV(sl->bytes_in) = bin + bytes;
			KV(sl->span) = span2;
			if (hw2 > hw)
				KV(sl->hw) = hw2;
			if (ended)
				KV(sl->hdr_flags) = KV(sl->hdr_flags) | VFGX_CHUNK_ENDED;
			KV(sl->last_gt) = now;
		}
	}
	KP_END(KP_BR_WRITE, kp_w);
	KP_START(kp_c);
	kc_bump(st, GPUK_K_PLACED, m, lane);
	kd_count_run(k, cnt, m, lane < m ? plen : 0, mine.flags, lane);
	__syncwarp();
	KP_END(KP_BR_COUNT, kp_c);
	if (*fin) {
		KP_START(kp_s);
		kc_settle(k, s, lane, df);
		KP_END(KP_BR_SETTLE, kp_s);
	}
	return m;
}

#endif
