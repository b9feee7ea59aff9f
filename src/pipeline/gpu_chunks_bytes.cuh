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

#include "gpu_chunks.cuh"
#include "gpu_phase_a.cuh" /* kfmt_user_place */
#include "rules.h"

/*
 * Place one record by bytes (chunk.c's place_bytes, rule for rule): r
 * carries its whole UDP payload (kparams.fmt_raw) and its extended
 * sequence; the format's rules decode it again (vfgx_fmt_decode_plan, the
 * same answer as phase A's; place: user, the user's function over it)
 * and give each piece's offset (vfgx_fmt_place, which checks every piece
 * ends inside the chunk).  The
 * chunk is the open one with the packet's id, or top + 1 for a newer id;
 * a packet of a released chunk (late), a duplicate (its present bit) or
 * a refused ring slot is decided before any byte is written.  The pieces
 * are copied here, in arrival order (not deferred to phase C: pieces of
 * different packets may overlap, and the last one's bytes must win, as
 * on the cpu engine).  *data, *len: the payload delivered.
 */
__device__ int kc_place_bytes(const kparams &k, const struct res &r,
			      const struct kfres *fr, ull now, uint32_t lane,
			      struct kc_defer *df, const uint8_t **data, uint32_t *len)
{
	uint32_t s = r.stream, kk = 0;
	struct kc_stream *st;
	struct kc_slot *sl;
	struct vfgx_fmt_pkt o;
	struct vfgx_ck_bidx b;
	struct vfgx_ck_place pl;
	ull nf = 0, pw, bit, got = 0, end_at = 0;
	int found = 0, v;
	size_t si;

	if (s >= k.ch.streams)
		return VFGX_R_BAD_STREAM;
	st = &k.kcs[s];
	v = vfgx_fmt_decode_plan(k.fmt, &k.fplan, r.body, r.len, &o);
	/* phase A passed it (a learned SSRC is past the streams) */
	if (v != VFGX_FD_OK && v != VFGX_FD_BAD_STREAM)
		return vfgx_fmt_drop_reason(v);
#if VFGX_USER_PLACE_LINK
	/* place: user: the chunk, end mark and pieces are the user's
	 * function's, checked as on the cpu engine (vfgx_place_apply); phase
	 * A called it on the same bytes, so it passes here too */
	if (k.fmt->place == VFGX_FMT_PLACE_USER &&
	    (v = kfmt_user_place(k.fmt, r.body, r.len, &o)) != VFGX_FD_OK)
		return vfgx_fmt_drop_reason(v);
#endif
	o.stream = s;
	o.ext_seq = r.seq;
	*data = r.body + o.payload_off;
	*len = o.payload_len;
	v = vfgx_fmt_place(k.fmt, &o);
	if (v != VFGX_FD_OK) {
		kc_bump(st, GPUK_K_OUT_OF_RANGE, 1, lane);
		__syncwarp();
		return vfgx_fmt_drop_reason(v);
	}
	if (o.nseg == 0)
		return VFGX_R_BAD_LENGTH;
	/* the open chunk with this id: most packets are top's */
	{
		struct vfgx_ck_stream cv = kc_state(st);

		for (ull n = cv.top + 1; cv.open && n-- > cv.head;) {
			if (kc_holds(k, s, n) && KV(k.kcsl[kc_si(k, s, n)].chunk_id) == o.chunk) {
				found = 1;
				nf = n;
				break;
			}
			if (cv.top - n + 1 >= k.ch.in_flight)
				break;
		}
		b = vfgx_ck_byte_chunk(cv, KV(st->top_id), o.chunk, k.ch.id_bits, found, nf);
	}
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
	pl = vfgx_ck_place(kc_conf(k), kc_state(st), b.n * k.ch.packets + kk, NULL, 0);
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
	if (!kc_slot_open(k, s, si, pl.n, now, lane, df))
		return KC_DROP_NOBUFS;
	sl = &k.kcsl[si];
	pw = kc_present(k, si)[pl.k / 64];
	bit = 1ull << (pl.k % 64);
	if (vfgx_ck_dup(pw, pl.k) != VFGX_STAGE_PASS) {
		kc_bump(st, GPUK_K_DUPLICATES, 1, lane);
		__syncwarp();
		return VFGX_R_DUPLICATE;
	}
	if (KV(sl->present_count) == 0) {
		if (lane == 0)
			KV(sl->chunk_id) = o.chunk;
		kc_first(sl, o.ext_seq, fr, lane);
	}
	if (b.new_top)
		kc_set(st->top_id, o.chunk, lane);
	for (uint32_t i = 0; i < o.nseg; i++) {
		kc_copy(kc_base(k, si) + o.seg[i].dst_off, r.body + o.seg[i].src_off,
			o.seg[i].len, lane);
		got += o.seg[i].len;
		if (o.seg[i].dst_off + o.seg[i].len > end_at)
			end_at = o.seg[i].dst_off + o.seg[i].len;
	}
	if (lane == 0) {
		kc_lens(k, si)[pl.k] = (uint32_t)got;
		kc_present(k, si)[pl.k / 64] = pw | bit;
		KV(sl->present_count) = KV(sl->present_count) + 1;
		KV(sl->bytes_in) = KV(sl->bytes_in) + got;
		KV(sl->span) = vfgx_ck_byte_span(KV(sl->span), (int)o.end, end_at, o.chunk_bytes);
		if (o.end)
			KV(sl->hdr_flags) = KV(sl->hdr_flags) | VFGX_CHUNK_ENDED;
		KV(sl->last_gt) = now;
		if (pl.n > KV(st->top))
			KV(st->top) = pl.n;
	}
	kc_bump(st, GPUK_K_PLACED, 1, lane);
	__syncwarp();
	kc_settle(k, s, lane, df);
	return VFGX_STAGE_PASS;
}

#endif
