/* gpu_chunks.cuh - pipeline.chunks on the GPU: phase B places each record
 * of a stream, in item order (its group's ticket), straight into its
 * chunk slot, by the rules of rules.h that chunk.c follows too
 * (vfgx/chunk.h's contract, the same counters and drop reasons), so the
 * two engines agree (tests/gpu/test_chunks_gpu.c).  A chunk made ready is told to the CPU by its slot's
 * descriptor and ready word and the stream's rel_head, all pinned
 * (chunk_gpu.c hands it out); a slot is reused once its returned word
 * says the consumer gave it back (vfgx_chunk_put or a CUDA stream).
 *
 * Every lane of the warp runs the same control flow on state read after a
 * __syncwarp(); lane 0 alone writes the state, then __syncwarp()s.  The
 * state is GPU memory touched only by the group's warp, handed from item
 * to item by the ticket (acquire / release), read with volatile loads.
 *
 * Persistent mode defers the work that needs no order (struct kc_defer):
 * phase B only decides where each record goes and which chunks are
 * released; the payload copies are listed and made by every warp of the
 * block after phase B (phase C, kc_phase_c), and the chunks released are
 * published (ready words, rel_head) after the copies, in item order: a
 * chunk's bytes come from several items, so item i publishes once every
 * item before it has (the chain word pub_ticket).  The other modes copy
 * and publish in place (df NULL).  Chunks by bytes place their pieces
 * with gpu_chunks_bytes.cuh.
 * Device code, included by gpu_proc.cu. */
#ifndef VFGX_GPU_CHUNKS_CUH
#define VFGX_GPU_CHUNKS_CUH

#include <vfgx/chunk.h>

#include "gpu_kcommon.cuh"
#include "rules.h"

#define KC_FREE 0
#define KC_FILLING 1
#define KC_READY 2
#define KC_DROP_NOBUFS 0 /* VFGX_DROP_NOBUFS (vfgx/port.h; chunk_gpu.c checks) */

struct kc_stream {
	/* pubh: chunks below it are published (ready words, rel_head);
	 * top_id: by bytes, the chunk id of chunk top */
	ull head, top, first_index, pending_gaps, open, pubh, top_id;
	ull c[GPUK_K_NCNT];
};

/* A ring slot; the header's fields of its chunk (first_seq, hdr_ts,
 * hdr_flags) and, by bytes, its chunk id, the payload bytes written and
 * the bytes it spans (chunk.c's chunk_id, bytes_in and desc.bytes). */
struct kc_slot {
	ull index, state, present_count, first_gt, last_gt;
	ull first_seq, hdr_ts, hdr_flags, chunk_id, bytes_in, span;
	/* by bytes: where the furthest piece placed so far ends (a piece
	 * from there on overlaps none before it: kc_piece_copies) */
	ull hw;
};

#define KV(x) (*(volatile ull *)&(x))

/* A warp's deferred work in one item (persistent mode): its copy list
 * and its publication list, each a slice of GPU memory of its own
 * (kparams kcp, kpb: blocks x WARPS slices).  A full copy list is copied
 * by the warp at once, in phase B, one piece a round trip; a full
 * publication list, and a wait for the consumer, publish at once
 * (kc_defer_flush).  KC_CP_CAP holds an item's 1024 packets of two pieces
 * each (RFC 4175 packets that cross a line), so that phase B copies
 * nothing itself and phase C's warps copy in parallel: with 256, a 4K
 * video stream's phase B copied most pieces from the pinned capture
 * buffers, one PCIe round trip each (23 frames a second on an H200,
 * against 118 with 2048: docs/formats.md). */
#ifndef KC_CP_CAP
#define KC_CP_CAP 2048
#endif
#define KC_PB_CAP 128
struct kc_cp {
	const uint8_t *src;
	uint8_t *dst;
	uint32_t len, pad;
};

struct kc_pb {
	ull s, head;
};

struct kc_defer {
	struct kc_cp *cp;
	struct kc_pb *pb;
	uint32_t ncp, npb;
	int quit; /* a wait for earlier items (kc_defer_drain) was told to quit */
	ull item;
};

/* What rules.h reads of the chunk options, and a stream's state. */
__device__ __forceinline__ struct vfgx_ck_conf kc_conf(const kparams &k)
{
	struct vfgx_ck_conf c;

	c.packets = k.ch.packets;
	c.in_flight = k.ch.in_flight;
	c.close_distance = k.ch.close_distance;
	c.payload_bytes = k.ch.payload_bytes;
	c.place = k.ch.place;
	c.field_offset = k.ch.field_offset;
	c.field_size = k.ch.field_size;
	c.field_step = k.ch.field_step;
	return c;
}

__device__ __forceinline__ struct vfgx_ck_stream kc_state(const struct kc_stream *st)
{
	struct vfgx_ck_stream v;

	v.head = KV(st->head);
	v.top = KV(st->top);
	v.open = KV(st->open) != 0;
	return v;
}

__device__ __forceinline__ void kc_set(ull &x, ull v, uint32_t lane)
{
	if (lane == 0)
		KV(x) = v;
}

__device__ __forceinline__ void kc_bump(struct kc_stream *st, int i, ull n,
					uint32_t lane)
{
	/* a reduction: no round trip for the old value */
	if (lane == 0 && n)
		atomicAdd(&st->c[i], n);
}

__device__ __forceinline__ size_t kc_si(const kparams &k, uint32_t s, uint64_t n)
{
	return (size_t)s * k.ch.in_flight + (size_t)(n % k.ch.in_flight);
}

__device__ __forceinline__ uint8_t *kc_base(const kparams &k, size_t si)
{
	return k.ch.data + si * k.ch.slot_stride;
}

__device__ __forceinline__ volatile ull *kc_present(const kparams &k, size_t si)
{
	return (volatile ull *)(kc_base(k, si) + k.ch.present_off);
}

__device__ __forceinline__ volatile uint32_t *kc_lens(const kparams &k, size_t si)
{
	return (volatile uint32_t *)(kc_base(k, si) + k.ch.lens_off);
}

/* Bits [a, b) of a 64-bit word (b - a <= 64). */
__device__ __forceinline__ ull kc_bits(uint32_t a, uint32_t b)
{
	return b - a >= 64 ? ~0ull : ((1ull << (b - a)) - 1) << a;
}

/* len bytes src -> dst across the warp: 4-byte stores where dst is
 * aligned (src's misalignment taken up by funnel shifts of aligned loads,
 * each of which holds a byte of src), KC_DEPTH words per lane in flight
 * (a 4 KiB piece per round trip: the copy is latency bound, one warp). */
#define KC_DEPTH 32
__device__ void kc_copy(uint8_t *dst, const uint8_t *src, uint32_t len,
			uint32_t lane)
{
	uint32_t nw = 0;

	if (((uintptr_t)dst & 3) == 0) {
		uint32_t o = (uint32_t)((uintptr_t)src & 3);
		const uint32_t *ws = (const uint32_t *)((uintptr_t)src & ~(uintptr_t)3);
		uint32_t *wd = (uint32_t *)dst;

		nw = len / 4;
		for (uint32_t j0 = 0; j0 < nw; j0 += 32 * KC_DEPTH) {
			uint32_t w[KC_DEPTH], jx = j0 + 32 * KC_DEPTH, extra = 0;

			/* every load of the round issued before any store (the
			 * stores may alias for all the compiler knows); with o,
			 * word nw holds a byte of src too; lane 31 also loads the
			 * word after the round */
#pragma unroll
			for (uint32_t u = 0; u < KC_DEPTH; u++) {
				uint32_t j = j0 + 32 * u + lane;

				w[u] = j < nw + (o != 0) ? ws[j] : 0;
			}
			if (lane == 31 && o && jx < nw + 1)
				extra = ws[jx];
#pragma unroll
			for (uint32_t u = 0; u < KC_DEPTH; u++) {
				uint32_t j = j0 + 32 * u + lane;
				/* the next word: the next lane's, or for lane 31
				 * the next row's first (the extra one after the
				 * last row) */
				uint32_t nx = __shfl_down_sync(FULL, w[u], 1);
				uint32_t row = __shfl_sync(FULL, u + 1 < KC_DEPTH ? w[u + 1 < KC_DEPTH ? u + 1 : u] : 0, 0);

				if (lane == 31)
					nx = u + 1 < KC_DEPTH ? row : extra;
				if (j < nw)
					wd[j] = o ? __funnelshift_r(w[u], nx, 8 * o) : w[u];
			}
		}
	}
	for (uint32_t b = nw * 4 + lane; b < len; b += 32)
		dst[b] = src[b];
	__syncwarp();
}

/* Slots of the chunk at first below its highest present one that are
 * missing, not counting those before the stream's first packet; after
 * the highest, gaps only if the stream goes on (chunk.c's count_gaps). */
__device__ void kc_count_gaps(const kparams &k, struct kc_stream *st, size_t si,
			      ull first, bool later_known, uint32_t lane)
{
	volatile ull *present = kc_present(k, si);
	uint32_t W = k.ch.present_words, P = k.ch.packets, hi = 0;
	uint32_t from = vfgx_ck_gaps_from(first, KV(st->first_index));
	ull gaps = 0;
	struct vfgx_ck_gaps tail;

	for (uint32_t w = lane; w < W; w += 32) {
		ull v = present[w];

		if (v)
			hi = max(hi, vfgx_ck_word_hi(v, w));
	}
	hi = __reduce_max_sync(FULL, hi);
	for (uint32_t w = lane; w < W; w += 32)
		gaps += vfgx_ck_word_gaps(present[w], w, from, hi);
	gaps = warp_sum(gaps);
	kc_bump(st, GPUK_K_GAPS, gaps, lane);
	tail = vfgx_ck_gaps_split(later_known, P - 1 - hi);
	kc_bump(st, GPUK_K_GAPS, tail.now, lane);
	if (tail.pending)
		kc_set(st->pending_gaps, KV(st->pending_gaps) + tail.pending, lane);
	__syncwarp();
}

/* Hand the head chunk out (or skip it when it got no packet) and advance. */
__device__ void kc_release_head(const kparams &k, uint32_t s, uint32_t reason,
				bool later_known, uint32_t lane,
				const struct kc_defer *df)
{
	struct kc_stream *st = &k.kcs[s];
	ull head = KV(st->head), P = k.ch.packets;
	size_t si = kc_si(k, s, head);
	struct kc_slot *sl = &k.kcsl[si];
	ull pc = KV(sl->present_count), state = KV(sl->state), index = KV(sl->index);
	/* by bytes, the slot's span and bytes with its count: one round trip */
	ull bspan = k.ch.by_bytes ? KV(sl->span) : 0, bin = k.ch.by_bytes ? KV(sl->bytes_in) : 0;
	struct vfgx_ck_release rl = vfgx_ck_release(
		kc_conf(k), vfgx_ck_holds(state == KC_FILLING, index, head), pc, reason,
		later_known);
	ull missing = rl.missing;

	if (rl.skip) {
		kc_bump(st, GPUK_K_GAPS, rl.gaps.now, lane);
		if (rl.gaps.pending)
			kc_set(st->pending_gaps, KV(st->pending_gaps) + rl.gaps.pending, lane);
		kc_bump(st, GPUK_K_SKIPPED, 1, lane);
		kc_set(st->head, head + 1, lane);
		__syncwarp();
		return;
	}
	ull flags = rl.flags, span = P * k.ch.payload_bytes, missing_bytes;

	if (k.ch.by_bytes) {
		/* chunk.c's release_head: bytes, not packets, are missing */
		span = bspan;
		struct vfgx_ck_release_b rb = vfgx_ck_release_bytes(1, span, bin, reason);

		missing = 0;
		flags = rb.flags;
		missing_bytes = rb.missing_bytes;
		kc_bump(st, rb.missing_bytes ? GPUK_K_CLOSED : GPUK_K_COMPLETE, 1, lane);
	} else if (missing) {
		missing_bytes = missing * k.ch.payload_bytes;
		kc_bump(st, GPUK_K_CLOSED, 1, lane);
		kc_bump(st, GPUK_K_MISSING, missing, lane);
		__syncwarp();
		kc_count_gaps(k, st, si, head * P, later_known, lane);
	} else {
		missing_bytes = 0;
		kc_bump(st, GPUK_K_COMPLETE, 1, lane);
	}
	if (lane == 0) {
		volatile struct gpuk_chunk_desc *d = &k.ch.desc[si];
		volatile struct gpuk_chunk_hdr *hd = &k.ch.hdr[si];

		hd->first_seq = KV(sl->first_seq);
		hd->hdr_ts = KV(sl->hdr_ts);
		hd->hdr_flags = (uint32_t)KV(sl->hdr_flags);
		hd->bytes = span;
		hd->missing_bytes = missing_bytes;
		d->index = head;
		d->present_count = pc;
		d->missing = missing;
		d->flags = flags;
		d->stream_late = KV(st->c[GPUK_K_LATE]);
		d->last_gt = KV(sl->last_gt);
		KV(sl->state) = KC_READY;
		if (!df) {
			d->ready_gt = gtimer();
			/* the slot's data and the descriptor before the word */
			st_release_sys64(&k.ch.ready_word[si], head + 1);
		}
		KV(st->head) = head + 1;
	}
	__syncwarp();
}

/* Release chunks until head reaches target; a far jump releases what is
 * open and skips the rest at once. */
__device__ void kc_advance_to(const kparams &k, uint32_t s, ull target,
			      uint32_t reason, bool later_known, uint32_t lane,
			      const struct kc_defer *df)
{
	struct kc_stream *st = &k.kcs[s];
	struct vfgx_ck_advance a = vfgx_ck_advance(kc_conf(k), KV(st->head), target,
						   later_known);

	for (ull i = 0; i < a.jump.steps; i++)
		kc_release_head(k, s, reason, later_known, lane, df);
	if (a.jump.skipped) {
		kc_bump(st, GPUK_K_SKIPPED, a.jump.skipped, lane);
		kc_bump(st, GPUK_K_GAPS, a.gaps, lane);
		kc_set(st->head, target, lane);
		__syncwarp();
	}
}

/* The stream's counters and rel_head, for the CPU (pinned): the chunks
 * below head are published; the ready words of those released since
 * pubh (slots READY with their index, at most in_flight of them: a far
 * jump skips the rest) first when df deferred them. */
__device__ void kc_pub_now(const kparams &k, uint32_t s, ull head, bool words,
			   uint32_t lane)
{
	struct kc_stream *st = &k.kcs[s];
	volatile struct gpuk_chunk_pub *p = &k.ch.pub[s];
	ull from = KV(st->pubh);

	if (head < from)
		return;
	if (words) {
		uint32_t mine = 0;
		size_t si = 0;
		ull idx = 0;

		for (uint32_t r0 = 0; r0 < k.ch.in_flight; r0 += 32) {
			if (r0 + lane < k.ch.in_flight) {
				struct kc_slot *sl;

				si = (size_t)s * k.ch.in_flight + r0 + lane;
				sl = &k.kcsl[si];
				idx = KV(sl->index);
				mine = KV(sl->state) == KC_READY && idx >= from && idx < head;
			}
			/* every lane's view of the copies (phase C's barrier, or
			 * this warp's own copies) before its release store */
			__syncwarp();
			if (mine) {
				k.ch.desc[si].ready_gt = gtimer();
				st_release_sys64(&k.ch.ready_word[si], idx + 1);
			}
			mine = 0;
			__syncwarp();
		}
	}
	if (lane < GPUK_K_NCNT)
		p->cnt[lane] = KV(st->c[lane]);
	__syncwarp();
	if (lane == 0) {
		st_release_sys64(&k.ch.pub[s].rel_head, head);
		KV(st->pubh) = head;
	}
	__syncwarp();
}

/* One lane waits until every item before df's has published; 1 when the
 * kernel is told to quit (the stop word does not end it: the items before
 * end their waits for the consumer on it). */
__device__ int kc_wait_chain(const kparams &k, ull item)
{
	uint32_t spins = 0;

	while (ld_acquire_dev(k.pub_ticket) != item) {
		__nanosleep(200);
		if ((++spins & 255) == 0 &&
		    (ld_relaxed_dev(k.dquit) || ((spins & 65535) == 0 && ld_quit(k.quit))))
			return 1;
	}
	return 0;
}

/* Copy the warp's listed payloads now. */
__device__ void kc_defer_copy(struct kc_defer *df, uint32_t lane)
{
	for (uint32_t e = 0; e < df->ncp; e++) {
		struct kc_cp c = df->cp[e];

		kc_copy(c.dst, c.src, c.len, lane);
	}
	df->ncp = 0;
}

/* A payload into its slot: listed for phase C, or copied now (no df). */
__device__ void kc_defer_add(struct kc_defer *df, uint8_t *dst,
			     const uint8_t *src, uint32_t len, uint32_t lane)
{
	if (!df) {
		kc_copy(dst, src, len, lane);
		return;
	}
	if (df->ncp == KC_CP_CAP) {
		KP_START(kp_i);
		kc_defer_copy(df, lane);
		KP_END(KP_INLINE_COPY, kp_i);
	}
	if (lane == 0) {
		struct kc_cp *c = &df->cp[df->ncp];

		c->src = src;
		c->dst = dst;
		c->len = len;
	}
	df->ncp++;
	__syncwarp();
}

/* Publish the warp's releases now: its copies, then, once every earlier
 * item has published, its list.  false when told to quit meanwhile. */
__device__ bool kc_defer_flush(const kparams &k, struct kc_defer *df,
			       uint32_t lane)
{
	int quit = 0;

	kc_defer_copy(df, lane);
	if (lane == 0)
		quit = kc_wait_chain(k, df->item);
	if (__shfl_sync(FULL, quit, 0))
		return false;
	__syncwarp();
	for (uint32_t e = 0; e < df->npb; e++)
		kc_pub_now(k, (uint32_t)df->pb[e].s, df->pb[e].head, true, lane);
	df->npb = 0;
	return true;
}

/* Every copy before this point done: the warp's listed ones now, and
 * every earlier item's (once it published, its copies were made); false
 * when told to quit meanwhile. */
__device__ bool kc_defer_drain(const kparams &k, struct kc_defer *df, uint32_t lane)
{
	int quit = df->quit;

	kc_defer_copy(df, lane);
	if (lane == 0 && !quit)
		quit = kc_wait_chain(k, df->item);
	quit = __shfl_sync(FULL, quit, 0);
	/* told to quit: the next ones do not wait again */
	df->quit = quit;
	__syncwarp();
	return !quit;
}

/* Stream s's releases so far, for the CPU: now, or listed for the end of
 * the item (df). */
__device__ void kc_publish(const kparams &k, uint32_t s, uint32_t lane,
			   struct kc_defer *df)
{
	ull head = KV(k.kcs[s].head);

	if (!df) {
		kc_pub_now(k, s, head, false, lane);
		return;
	}
	if (df->npb && df->pb[df->npb - 1].s == s) {
		if (lane == 0)
			df->pb[df->npb - 1].head = head;
		__syncwarp();
		return;
	}
	/* a quit meanwhile: the kernel ends, the list with it */
	if (df->npb == KC_PB_CAP && !kc_defer_flush(k, df, lane))
		df->npb = 0;
	if (lane == 0) {
		df->pb[df->npb].s = s;
		df->pb[df->npb].head = head;
	}
	df->npb++;
	__syncwarp();
}

/* Is slot si free (never used, or its chunk given back)? */
__device__ bool kc_slot_free(const kparams &k, size_t si, uint32_t lane)
{
	struct kc_slot *sl = &k.kcsl[si];
	int free = 0;

	if (lane == 0) {
		ull state = KV(sl->state);

		free = state == KC_FREE ||
		       (state == KC_READY &&
			ld_acquire_sys64(&k.ch.returned_word[si]) >= KV(sl->index) + 1);
		if (free)
			KV(sl->state) = KC_FREE;
	}
	free = __shfl_sync(FULL, free, 0);
	__syncwarp();
	return free;
}

/* Make slot si hold chunk n: wait while the consumer holds it; false when
 * the pipeline stopped meanwhile. */
__device__ bool kc_slot_open(const kparams &k, uint32_t s, size_t si, ull n,
			     ull now, uint32_t lane, struct kc_defer *df)
{
	struct kc_stream *st = &k.kcs[s];
	struct kc_slot *sl = &k.kcsl[si];

	if (KV(sl->state) == KC_FILLING)
		return true; /* holds n: every chunk in [head, head + in_flight) */
	if (!kc_slot_free(k, si, lane)) {
		int free = 0;

		kc_bump(st, GPUK_K_BACKPRESSURE, 1, lane);
		__syncwarp();
		/* what is ready must reach the consumer that frees the slot
		 * (deferred: this warp's copies and releases, once the items
		 * before have published theirs) */
		kc_publish(k, s, lane, df);
		bool go = !df || kc_defer_flush(k, df, lane);

		if (lane == 0 && go) {
			uint64_t beat = 0;

			for (;;) {
				ull state = KV(sl->state);

				if (state == KC_READY &&
				    ld_acquire_sys64(&k.ch.returned_word[si]) >= KV(sl->index) + 1) {
					KV(sl->state) = KC_FREE;
					free = 1;
					break;
				}
				if (ld_quit(k.ch.stop) || ld_quit(k.quit) ||
				    (k.dquit && ld_relaxed_dev(k.dquit)))
					break;
				if (gtimer() - beat > 1000000) {
					beat = gtimer();
					*(volatile uint32_t *)k.ch.bp_wait = 1;
				}
				__nanosleep(2000);
			}
		}
		free = __shfl_sync(FULL, free, 0);
		__syncwarp();
		if (!free) {
			kc_bump(st, GPUK_K_BP_DROPS, 1, lane);
			__syncwarp();
			return false;
		}
	}
	volatile ull *present = kc_present(k, si);
	volatile uint32_t *lens = kc_lens(k, si);

	for (uint32_t w = lane; w < k.ch.present_words; w += 32)
		present[w] = 0;
	for (uint32_t i = lane; i < k.ch.packets; i += 32)
		lens[i] = 0;
	if (lane == 0) {
		KV(sl->index) = n;
		KV(sl->present_count) = 0;
		KV(sl->first_gt) = now;
		KV(sl->first_seq) = 0;
		KV(sl->hdr_ts) = 0;
		KV(sl->hdr_flags) = 0;
		KV(sl->bytes_in) = 0;
		KV(sl->hw) = 0;
		KV(sl->span) = k.ch.by_bytes ? k.ch.chunk_bytes :
					       (ull)k.ch.packets * k.ch.payload_bytes;
		KV(sl->state) = KC_FILLING;
	}
	__syncwarp();
	return true;
}

/* After a record was placed: release the head chunks that are complete,
 * and close those close_distance behind the top. */
__device__ void kc_settle(const kparams &k, uint32_t s, uint32_t lane,
			  const struct kc_defer *df)
{
	struct kc_stream *st = &k.kcs[s];
	struct vfgx_ck_settle se;

	for (;;) {
		struct vfgx_ck_stream v = kc_state(st);
		struct kc_slot *h = &k.kcsl[kc_si(k, s, v.head)];
		bool complete = v.head <= v.top &&
				vfgx_ck_holds(KV(h->state) == KC_FILLING, KV(h->index), v.head) &&
				(k.ch.by_bytes ? KV(h->bytes_in) >= KV(h->span) :
						 KV(h->present_count) == k.ch.packets);

		se = vfgx_ck_settle(kc_conf(k), v, complete);
		if (se.act != VFGX_CK_RELEASE)
			break;
		kc_release_head(k, s, VFGX_CHUNK_COMPLETE, se.later_known, lane, df);
	}
	if (se.act == VFGX_CK_CLOSE)
		kc_advance_to(k, s, se.target, VFGX_CHUNK_BY_DISTANCE, true, lane, df);
}

/* The header's fields of a chunk's first packet (chunk.c's chunk_first):
 * its sequence (extended, with a format), and with a format (fr) its
 * header timestamp. */
__device__ __forceinline__ void kc_first(struct kc_slot *sl, ull seq,
					 const struct kfres *fr, uint32_t lane)
{
	if (lane == 0) {
		KV(sl->first_seq) = seq;
		if (fr && fr->has_ts) {
			KV(sl->hdr_ts) = fr->hts;
			KV(sl->hdr_flags) = KV(sl->hdr_flags) | VFGX_CHUNK_HDR_TS;
		}
	}
}

/* Place one record (vfgx_chunkset_place; with a format fr, its
 * vfgx_chunkset_place_pkt by slot): VFGX_STAGE_PASS, else the drop
 * reason. */
__device__ int kc_place(const kparams &k, const struct res &r, const struct kfres *fr,
			ull now, uint32_t lane, struct kc_defer *df)
{
	uint32_t s = r.stream;
	struct kc_stream *st;
	struct vfgx_ck_place pl;
	ull pw, bit;
	uint32_t kk;
	size_t si;

	if (s >= k.ch.streams)
		return VFGX_R_BAD_STREAM;
	KP_START(kp_b);
	st = &k.kcs[s];
	pl = vfgx_ck_place(kc_conf(k), kc_state(st), r.seq, r.body, r.len);
	if (pl.verdict != VFGX_STAGE_PASS) {
		kc_bump(st, pl.late ? GPUK_K_LATE : GPUK_K_OUT_OF_RANGE, 1, lane);
		__syncwarp();
		return pl.verdict;
	}
	if (pl.open) {
		if (lane == 0) {
			KV(st->open) = 1;
			KV(st->head) = pl.n;
			KV(st->top) = pl.n;
			KV(st->first_index) = pl.p;
		}
		__syncwarp();
	}
	if (pl.advance)
		kc_advance_to(k, s, pl.target, VFGX_CHUNK_BY_RING, true, lane, df);
	si = kc_si(k, s, pl.n);
	KP_END(KP_P_PRE, kp_b);
	KP_START(kp_o);
	if (!kc_slot_open(k, s, si, pl.n, now, lane, df))
		return KC_DROP_NOBUFS;
	KP_END(KP_P_OPEN, kp_o);
	KP_START(kp_m);
	kk = pl.k;
	pw = kc_present(k, si)[kk / 64];
	bit = 1ull << (kk % 64);
	if (vfgx_ck_dup(pw, kk) != VFGX_STAGE_PASS) {
		kc_bump(st, GPUK_K_DUPLICATES, 1, lane);
		__syncwarp();
		return VFGX_R_DUPLICATE;
	}
	if (KV(st->pending_gaps)) {
		kc_bump(st, GPUK_K_GAPS, KV(st->pending_gaps), lane);
		kc_set(st->pending_gaps, 0, lane);
	}
	kc_defer_add(df, kc_base(k, si) + (size_t)kk * k.ch.payload_bytes, r.body,
		     r.len, lane);
	if (KV(k.kcsl[si].present_count) == 0)
		kc_first(&k.kcsl[si], r.seq, fr, lane);
	if (lane == 0) {
		struct kc_slot *sl = &k.kcsl[si];

		if (r.flags & RF_END)
			KV(sl->hdr_flags) = KV(sl->hdr_flags) | VFGX_CHUNK_ENDED;
		kc_lens(k, si)[kk] = r.len;
		kc_present(k, si)[kk / 64] = pw | bit;
		KV(sl->present_count) = KV(sl->present_count) + 1;
		KV(sl->last_gt) = now;
		if (pl.n > KV(st->top))
			KV(st->top) = pl.n;
	}
	kc_bump(st, GPUK_K_PLACED, 1, lane);
	__syncwarp();
	KP_END(KP_P_MID, kp_m);
	KP_START(kp_t);
	kc_settle(k, s, lane, df);
	KP_END(KP_P_SETTLE, kp_t);
	return VFGX_STAGE_PASS;
}

__device__ bool kc_holds(const kparams &k, uint32_t s, ull n)
{
	struct kc_slot *sl = &k.kcsl[kc_si(k, s, n)];

	return vfgx_ck_holds(KV(sl->state) == KC_FILLING, KV(sl->index), n);
}

/* The oldest chunk with packets timed out: release it with the empty ones
 * before it (chunk.c's vfgx_chunkset_tick, on the GPU's clock). */
__device__ void kc_tick(const kparams &k, uint32_t s, ull now, uint32_t lane,
			const struct kc_defer *df)
{
	struct kc_stream *st = &k.kcs[s];
	ull limit = (ull)k.ch.timeout_ms * 1000000ull;

	if (!limit || !KV(st->open))
		return;
	for (;;) {
		struct vfgx_ck_stream v = kc_state(st);
		ull m = v.head, end;

		while (m <= v.top && !kc_holds(k, s, m))
			m++;
		end = vfgx_ck_tick(v, m, m <= v.top ? KV(k.kcsl[kc_si(k, s, m)].first_gt) : 0,
				   now, limit);
		if (!end)
			break;
		while (KV(st->head) < end)
			kc_release_head(k, s, VFGX_CHUNK_BY_TIMEOUT,
					KV(st->head) < KV(st->top), lane, df);
	}
}

/* End of input: release every open chunk (BY_END). */
__device__ void kc_flush(const kparams &k, uint32_t s, uint32_t lane,
			 const struct kc_defer *df)
{
	struct kc_stream *st = &k.kcs[s];

	if (!KV(st->open))
		return;
	for (ull i = vfgx_ck_flush(kc_conf(k), kc_state(st)); i > 0; i--)
		kc_release_head(k, s, VFGX_CHUNK_BY_END, KV(st->head) < KV(st->top), lane,
				df);
	kc_set(st->top, KV(st->head), lane);
	__syncwarp();
}

/* Forget stream s (the RESET command): no packet seen, counters zero. */
__device__ void kc_reset(const kparams &k, uint32_t s, uint32_t lane)
{
	volatile ull *w = (volatile ull *)&k.kcs[s];

	for (uint32_t i = lane; i < sizeof(struct kc_stream) / 8; i += 32)
		w[i] = 0;
	for (uint32_t r = lane; r < k.ch.in_flight; r += 32)
		KV(k.kcsl[(size_t)s * k.ch.in_flight + r].state) = KC_FREE;
	__syncwarp();
}

/* Warp w of this block's lists (persistent mode). */
__device__ __forceinline__ struct kc_cp *kc_cp_list(const kparams &k, uint32_t w)
{
	return k.kcp + ((size_t)blockIdx.x * WARPS + w) * KC_CP_CAP;
}

__device__ __forceinline__ struct kc_pb *kc_pb_list(const kparams &k, uint32_t w)
{
	return k.kpb + ((size_t)blockIdx.x * WARPS + w) * KC_PB_CAP;
}

__device__ __forceinline__ void kc_defer_init(const kparams &k, struct kc_defer &df,
					      ull item, uint32_t warp)
{
	df.cp = kc_cp_list(k, warp);
	df.pb = kc_pb_list(k, warp);
	df.ncp = 0;
	df.npb = 0;
	df.quit = 0;
	df.item = item;
}

/* Entry t of the block's lists taken in warp order (ncp: each warp's
 * list length). */
__device__ __forceinline__ struct kc_cp kc_cp_at(const kparams &k, const uint32_t *ncp,
						 uint32_t t)
{
	uint32_t w = 0;

	while (t >= ncp[w])
		t -= ncp[w++];
	return kc_cp_list(k, w)[t];
}

/* Phase C (persistent mode, after phase B's barrier): every warp of the
 * block copies the item's listed payloads (ncp: each warp's list length),
 * then, once every item before has published, each warp publishes its
 * list (npb) and the block passes the chain on.  *quit_c (shared) set when
 * told to quit meanwhile. */
__device__ void kc_phase_c(const kparams &k, ull item, const uint32_t *ncp,
			   const uint32_t *npb, int *quit_c, uint32_t warp,
			   uint32_t lane)
{
	uint32_t tot = 0;
	KP_START(kp_c);

	for (uint32_t w = 0; w < WARPS; w++)
		tot += ncp[w];
	for (uint32_t t = warp; t < tot; t += WARPS) {
		struct kc_cp c = kc_cp_at(k, ncp, t);

		kc_copy(c.dst, c.src, c.len, lane);
		KP_COUNT(KP_C_BYTES, c.len);
	}
	__syncthreads();
	KP_END(KP_C_COPY, kp_c);
	KP_START(kp_w);
	if (threadIdx.x == 0)
		*quit_c = kc_wait_chain(k, item);
	__syncthreads();
	if (threadIdx.x == 0)
		KP_END(KP_C_CHAIN, kp_w);
	if (*quit_c)
		return;
	struct kc_pb *pb = kc_pb_list(k, warp);
	KP_START(kp_p);

	for (uint32_t e = 0; e < npb[warp]; e++)
		kc_pub_now(k, (uint32_t)pb[e].s, pb[e].head, true, lane);
	/* every warp's publications before the chain moves on */
	__syncthreads();
	if (threadIdx.x == 0) {
		KP_END(KP_C_PUB, kp_p);
		KP_COUNT(KP_ITEMS, 1);
	}
	if (threadIdx.x == 0)
		st_release_dev(k.pub_ticket, item + 1);
}

#endif
