/* gpu_phase_a.cuh - phase A of the GPU data plane: parse, validate (a
 * warp-wide UDP checksum), filter, sequence header and delivery of
 * in-order records; one warp per packet (per_burst, graph) or 32 packets
 * per warp (phase_a_chunks, persistent).  Device code, included by
 * gpu_proc.cu. */
#ifndef VFGX_GPU_PHASE_A_CUH
#define VFGX_GPU_PHASE_A_CUH

#include "gpu_kcommon.cuh"
#include "rules.h"

/* ---- phase A: a warp per packet, or 32 per warp (phase_a_chunks) --------------------------------------- */

/* Payload verification folded into the same loads: the loopback pattern
 * (vfgx_pattern_byte) of the record body [body, body + blen) is
 * c + 13 * offset per byte, c = stream * 131 + seq * 7 + 1 (mod 256).
 * pat_diff returns the bits of the 4 bytes at body offset o that differ
 * from it (bytes outside the body masked out). */
__device__ __forceinline__ uint32_t pat_diff(uint32_t w, int64_t o, uint32_t blen,
					     uint32_t c)
{
	uint32_t d = w ^ __vadd4(((c + 13u * (uint32_t)o) & 0xffu) * 0x01010101u,
				 0x271A0D00u);

	if (o < 0 || o + 4 > (int64_t)blen) {
		uint32_t m = 0;

#pragma unroll
		for (int b = 0; b < 4; b++)
			if (o + b >= 0 && o + b < (int64_t)blen)
				m |= 0xffu << (8 * b);
		d &= m;
	}
	return d;
}

__device__ __forceinline__ bool pat_byte_bad(const uint8_t *p, uint32_t off,
					     const uint8_t *body, uint32_t blen,
					     uint32_t c)
{
	int64_t o = (int64_t)((p + off) - body);

	return o >= 0 && o < (int64_t)blen &&
	       p[off] != (uint8_t)(c + 13u * (uint32_t)o);
}

/* The sum of [start, end) is taken over whole 16-byte blocks, block b at
 * (start & ~15) + 16 b, the bytes of the end blocks outside the span
 * masked: a block holding one byte of a buffer never leaves the buffer's
 * allocation (regions, pools, staging areas and rx rings are laid out in
 * multiples of 16 bytes from 16-byte aligned bases), and the ends cost no
 * round trips of their own.  span_part is one lane's share when L lanes
 * take the span (blocks sub, sub + L, ...), CSUM_DEPTH loads per lane in
 * flight before any is summed, the 32-bit words added into one 64-bit
 * sum (two adds a word; the even and odd bytes summed apart cost about
 * ten operations a word, which bounded phase A at 8 KiB); e and o get the
 * low and high byte of that sum folded to 16 bits, and span_sum makes of
 * them a value congruent to the exact sum (modulo 0xffff, all the fold
 * needs); diff collects the bits of the body [body, body + blen) that
 * differ from the loopback pattern when verify is set. */
__device__ __forceinline__ uint32_t span_mask(uintptr_t wa, uintptr_t start, uintptr_t end)
{
	uint32_t m = 0;

#pragma unroll
	for (int b = 0; b < 4; b++)
		if (wa + b >= start && wa + b < end)
			m |= 0xffu << (8 * b);
	return m;
}

__device__ __forceinline__ void span_part(uintptr_t start, uintptr_t end, uint32_t L,
					  uint32_t sub, bool verify, uintptr_t body,
					  uint32_t blen, uint32_t c, uint32_t &e,
					  uint32_t &o, uint32_t &diff)
{
	uintptr_t a0 = start & ~(uintptr_t)15;
	uint32_t nb = (uint32_t)((end + 15 - a0) / 16);
	const uint4 *q = (const uint4 *)a0;
	ull acc = 0;

#pragma unroll 1
	for (uint32_t j0 = sub; j0 < nb; j0 += L * CSUM_DEPTH) {
		uint4 v[CSUM_DEPTH];

#pragma unroll
		for (uint32_t u = 0; u < CSUM_DEPTH; u++) {
			uint32_t j = j0 + L * u;

			v[u] = j < nb ? q[j] : make_uint4(0, 0, 0, 0);
		}
#pragma unroll
		for (uint32_t u = 0; u < CSUM_DEPTH; u++) {
			uintptr_t ba = a0 + 16 * (uintptr_t)(j0 + L * u);
			uint32_t w[4] = { v[u].x, v[u].y, v[u].z, v[u].w };

			if (j0 + L * u >= nb)
				break;
			if (verify) {
#pragma unroll
				for (int t = 0; t < 4; t++)
					diff |= pat_diff(w[t], (int64_t)(ba + 4 * t - body), blen, c);
			}
			/* only a block at either end holds bytes outside */
			if (ba < start || ba + 16 > end) {
#pragma unroll
				for (int t = 0; t < 4; t++)
					w[t] &= span_mask(ba + 4 * t, start, end);
			}
			acc += (ull)w[0] + w[1] + (ull)w[2] + w[3];
		}
	}
	/* The little-endian words' sum, folded to 16 bits, is congruent
	 * (modulo 0xffff) to E + 256 O, E and O the sums of the bytes at even
	 * and odd addresses; its low and high bytes as e and o make
	 * span_sum's value congruent to the exact one for either parity of
	 * the start (256 x == x with its bytes swapped, modulo 0xffff). */
	acc = (acc & 0xffffffffu) + (acc >> 32);
	acc = (acc & 0xffffu) + (acc >> 16);
	acc = (acc & 0xffffu) + (acc >> 16);
	acc = (acc & 0xffffu) + (acc >> 16);
	e += (uint32_t)(acc & 0xff);
	o += (uint32_t)(acc >> 8);
}

#if VFGX_CSUM_PREFETCH
/* The 128-byte lines of [start, end) asked into L2, lane sub of L taking
 * lines sub, sub + L, ...  A prefetch never faults and holds no register;
 * the first and last lines lie in the buffer's pages (pages are aligned
 * far beyond 128 bytes). */
__device__ __forceinline__ void span_prefetch(uintptr_t start, uintptr_t end, uint32_t L,
					      uint32_t sub)
{
	for (uintptr_t a = (start & ~(uintptr_t)127) + 128 * (uintptr_t)sub; a < end;
	     a += 128 * (uintptr_t)L)
		asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
}
#endif

/* The sums of the L lanes of each aligned segment of the warp, in all of
 * them (L a power of two, the same in every lane). */
__device__ __forceinline__ void span_reduce(uint32_t L, uint32_t &e, uint32_t &o,
					    uint32_t &diff)
{
	for (uint32_t off = 1; off < L; off <<= 1) {
		e += __shfl_xor_sync(FULL, e, off);
		o += __shfl_xor_sync(FULL, o, off);
		diff |= __shfl_xor_sync(FULL, diff, off);
	}
}

/* A sum of the big-endian 16-bit words from start congruent (modulo
 * 0xffff) to vfgx_csum_add's: a byte at an even offset from start is a
 * high byte. */
__device__ __forceinline__ ull span_sum(uintptr_t start, uint32_t e, uint32_t o)
{
	return (start & 1) ? ((ull)o << 8) + e : ((ull)e << 8) + o;
}

/* p[0..len) by the whole warp: its checksum sum, and when verify is set
 * whether the body [body, body + blen) (inside p[0..len)) differs from the
 * loopback pattern (*bad, the same in every lane). */
__device__ ull warp_scan(const uint8_t *p, uint32_t len, uint32_t lane,
			 bool verify, const uint8_t *body, uint32_t blen,
			 uint32_t c, bool *bad)
{
	uint32_t e = 0, o = 0, diff = 0;

	span_part((uintptr_t)p, (uintptr_t)p + len, 32, lane, verify, (uintptr_t)body, blen,
		  c, e, o, diff);
	span_reduce(32, e, o, diff);
	*bad = diff != 0;
	return span_sum((uintptr_t)p, e, o);
}

__device__ __forceinline__ uint32_t pat_base(uint32_t id, uint64_t seq)
{
	return id * 131u + (uint32_t)seq * 7u + 1u;
}

/* Returns false when the user stage dropped the record.  flags: LAST and
 * RF_BAD (verification was done in phase A, in the same loads as the
 * checksum). */
__device__ bool kd_deliver(const kparams &k, ull *cnt, uint32_t s, uint64_t seq,
			   const uint8_t *data, uint32_t len, uint32_t flags,
			   bool ordered, uint32_t lane)
{
	int drop = __shfl_sync(FULL, vfgx_gpu_user_stage(&k.user, s, seq, data, len,
							 lane), 0);
	struct vfgx_rule_delivery d = vfgx_rule_deliver(k.verify && (flags & RF_BAD),
							drop, len, flags);

	if (lane == 0 && d.verify_error)
		count(cnt, GPUK_C_VERIFY, 1);
	if (d.user_drop) {
		if (lane == 0)
			count(cnt, GPUK_C_DROP0 + DROP_USER, 1);
		return false;
	}
	if (k.log_cap) {
		ull a = 0, b = 0;

		for (uint32_t i = lane; i < len; i += 32) {
			ull v = __ldcg(data + i);

			a += v;
			b += v * (2ull * i + 1ull);
		}
		a = warp_sum(a);
		b = warp_sum(b);
		if (lane == 0) {
			ull ord = atomicAdd(&k.ordinal[s], 1ull);
			ull at = atomicAdd(k.log_n, 1ull);

			if (at < k.log_cap) {
				struct gpuk_delivery *d = &k.log[at];

				d->stream = s;
				d->len = len;
				d->ordinal = ord;
				d->seq = seq;
				d->hash = a ^ (b << 20) ^ ((ull)len << 52);
			}
		}
	}
	if (lane == 0) {
		count(cnt, GPUK_C_DELIVERED, d.delivered);
		count(cnt, GPUK_C_DELIVERED_BYTES, d.bytes);
		if (d.last)
			count(cnt, GPUK_C_LAST_SEEN, 1);
		if (ordered) {
			if (seq < __ldcg(&k.next[s]))
				count(cnt, GPUK_C_ORDER, 1);
			k.next[s] = seq + 1;
		}
	}
	__syncwarp();
	return true;
}

/* pipeline.format.user_place (vfgx/place.h): the user's __device__
 * function, whose name the run-time link gives vfgx_user_place_entry
 * (gpu_place_link.c).  Only the kernel built for that link
 * (VFGX_USER_PLACE_LINK, gpu_proc_place.fatbin) calls it; the kernel
 * built into the library has no such call. */
#if VFGX_USER_PLACE_LINK
#include <vfgx/place.h>

extern "C" __device__ int vfgx_user_place_entry(const uint8_t *pkt, uint32_t len,
						const struct vfgx_fmt_pkt *d,
						struct vfgx_place *out);

/* The function's answer checked as the cpu engine checks it
 * (vfgx_place_apply): here stream, sequence and end mark for phase B's
 * order; by slot the payload is seg[0], and place: user calls it again in
 * phase B for its chunk and pieces (kc_place_bytes). */
__device__ __noinline__ int kfmt_user_place(const struct vfgx_format *fmt, const uint8_t *pay,
					    uint32_t len, struct vfgx_fmt_pkt *o)
{
	struct vfgx_place u;

	vfgx_place_init(o, &u);
	return vfgx_place_apply(fmt, len, vfgx_user_place_entry(pay, len, o, &u), &u, o);
}
#endif

/* A producer's header (pipeline.format): vfgx/format.h's rules, the cpu
 * engine's: stream, sequence as sent (phase B extends it in order,
 * kfmt_extend), end mark, header timestamp (*fr), body.  learn: RTP's
 * SSRCs are learned in phase B, so a stream id past the streams passes
 * here with its raw value in *fr.  raw: the body is the whole UDP
 * payload (chunks by bytes: phase B places its pieces; fp, by offset or
 * lines: where they go, struct kfplace).  Out of line: its
 * packet record stays off the vfgx header's path. */
__device__ __noinline__ int kfmt_hdr(const struct vfgx_format *fmt,
				     const struct vfgx_fmt_plan plan, uint32_t max_streams,
				     uint32_t learn, uint32_t raw, const uint8_t *pay,
				     uint32_t len, struct vfgx_app_hdr *h, uint32_t *boff,
				     uint32_t *blen, struct kfres *fr, struct kfplace *fp)
{
	struct vfgx_fmt_pkt o;
	int v = vfgx_fmt_decode_plan(fmt, &plan, pay, len, &o);

#if VFGX_USER_PLACE_LINK
	if (v == VFGX_FD_OK) /* user_place: the kernel linked with it */
		v = kfmt_user_place(fmt, pay, len, &o);
#endif
	*boff = 0;
	*blen = 0;
	/* decode's stream check is its last: o is whole when it fails */
	if (learn && v == VFGX_FD_BAD_STREAM)
		v = VFGX_FD_OK;
	if (v != VFGX_FD_OK)
		return vfgx_fmt_drop_reason(v);
	if (!learn && o.stream >= max_streams)
		return VFGX_R_BAD_STREAM;
	h->stream = learn ? 0 : o.stream;
	h->seq = o.seq;
	h->flags = o.end ? RF_END : 0;
	fr->raw = o.stream_raw;
	fr->has_ts = (uint32_t)vfgx_fmt_hdr_ts(fmt, &o, &fr->hts);
	fr->pad = 0;
	*boff = raw ? 0 : o.payload_off;
	*blen = raw ? len : o.payload_len;
	if (fp) {
		/* by offset or lines the pieces do not depend on the extended
		 * sequence: placed here, in parallel, for phase B's walk */
		int pv = vfgx_fmt_place(fmt, &o);

		fp->placed = pv != VFGX_FD_OK || o.nseg == 1;
		fp->pv = pv;
		fp->end = o.end;
		fp->chunk = o.chunk;
		fp->chunk_bytes = o.chunk_bytes;
		fp->payload_off = o.payload_off;
		fp->payload_len = o.payload_len;
		fp->src_off = o.seg[0].src_off;
		fp->len = o.seg[0].len;
		fp->dst_off = o.seg[0].dst_off;
	}
	return VFGX_STAGE_PASS;
}

/* The record's header: vfgx's 16 bytes, or the format's; *boff and *blen
 * the body after it. */
__device__ __forceinline__ int k_hdr(const kparams &k, const uint8_t *pay, uint32_t len,
				     struct vfgx_app_hdr *h, uint32_t *boff, uint32_t *blen,
				     struct kfres *fr, struct kfplace *fp)
{
	if (k.fmt)
		return kfmt_hdr(k.fmt, k.fplan, k.max_streams, k.learn, k.fmt_raw, pay, len, h, boff,
				blen, fr, fp);
	*boff = VFGX_APP_HLEN;
	*blen = len - VFGX_APP_HLEN;
	return vfgx_app_hdr_read(pay, len, k.max_streams, h);
}

/* The flags a record keeps: LAST, and a format's end mark (vfgx's own
 * header has none: its other flag bits are not kept). */
#define RF_KEEP(k) ((k).fmt ? RF_END : VFGX_APP_FLAG_LAST)

/* A record's stream group: its stream's, or 0 while SSRCs are learned. */
__device__ __forceinline__ uint8_t k_group(const kparams &k, uint32_t stream)
{
	return k.learn ? 0 : (uint8_t)(stream % GPUK_GROUPS);
}

/* Packet i of the item in slot; its descriptor was read by the caller. */
__device__ void phase_a_packet(const kparams &k, ull *cnt, ull *gmask,
			       uint32_t slot, uint32_t i, uint64_t addr,
			       uint32_t len, uint32_t q, uint32_t flags,
			       uint32_t lane)
{
	struct res *out = &k.res[(size_t)slot * k.burst + i];
	uint8_t *grp = &k.grp[(size_t)slot * k.burst + i];
	const uint8_t *f = (const uint8_t *)(uintptr_t)addr;
	struct vfgx_parsed ps;
	struct vfgx_app_hdr h;
	struct kfres fr = { 0, 0, 0, 0 };
	const uint8_t *pay;
	uint32_t boff = 0, blen = 0;
	int r = VFGX_STAGE_PASS;

	if (lane == 0) {
		count(cnt, GPUK_C_PACKETS, 1);
		count(cnt, GPUK_C_BYTES, len);
		out->at = i;
		*grp = 0xff;
	}
	if (k.stage && !(flags & PKT_FLAG_GPU) && len <= GPUK_STAGE_MAX) {
		uint8_t *dst = k.stage + ((size_t)slot * k.burst + i) * GPUK_STAGE_MAX;

		for (uint32_t b = lane; b < len; b += 32)
			dst[b] = f[b];
		__syncwarp();
		f = dst;
	}
	if (flags & PKT_FLAG_PAYLOAD) {
		ps.payload_off = 0;
		ps.payload_len = len;
	} else {
		int need_csum = 0;

		r = vfgx_parse_headers(f, len, &ps, &need_csum);
		if (r == VFGX_STAGE_PASS && need_csum) {
			bool unused;
			ull s = warp_scan(f + ps.l4_off, ps.payload_len + VFGX_UDP_HLEN,
					  lane, false, NULL, 0, 0, &unused);

			s += vfgx_udp_pseudo_sum(&ps);
			if (vfgx_csum_fold((uint32_t)s) != 0)
				r = VFGX_R_BAD_UDP_CSUM;
		}
		if (r == VFGX_STAGE_PASS)
			r = vfgx_filter_port(k.lo, k.hi, k.nb_ranges, ps.dst_port);
		if (r != VFGX_STAGE_PASS) {
			if (lane == 0)
				count(cnt, GPUK_C_DROP0 + r, 1);
			return;
		}
	}
	if (lane == 0)
		count(cnt, GPUK_C_PASSED, 1);
	pay = f + ps.payload_off;
	r = k_hdr(k, pay, ps.payload_len, &h, &boff, &blen, &fr,
		  k.fpl && lane == 0 ? &k.fpl[(size_t)slot * k.burst + i] : NULL);
	/* learning: after the SSRC's turn, as the cpu engine (kfmt_extend) */
	if (r == VFGX_STAGE_PASS && k.reorder && blen > k.slot && !k.learn)
		r = VFGX_R_TOO_BIG;
	if (r == VFGX_STAGE_PASS) {
		bool bad = false;

		if (k.verify)
			warp_scan(pay + boff, blen, lane, true, pay + boff, blen,
				  pat_base(h.stream, h.seq), &bad);
		h.flags = (h.flags & RF_KEEP(k)) | (bad ? RF_BAD : 0);
	}
	if (!k.to_b) {
		if (r == VFGX_STAGE_PASS)
			kd_deliver(k, cnt, q * k.max_streams + h.stream, h.seq,
				pay + boff, blen, h.flags, false, lane);
		else if (k.verify) {
			if (lane == 0)
				count(cnt, GPUK_C_DROP0 + r, 1);
		} else {
			kd_deliver(k, cnt, q * k.max_streams, 0, pay, ps.payload_len,
				0, false, lane);
		}
		return;
	}
	if (r != VFGX_STAGE_PASS) {
		if (lane == 0)
			count(cnt, GPUK_C_DROP0 + r, 1);
		return;
	}
	if (lane == 0) {
		out->seq = h.seq;
		out->body = pay + boff;
		out->len = blen;
		out->stream = k.ch.on ? h.stream : q * k.max_streams + h.stream;
		out->flags = h.flags;
		*grp = k_group(k, out->stream);
		if (k.fres)
			k.fres[(size_t)slot * k.burst + i] = fr;
		if (gmask)
			atomicOr(gmask, 1ull << k_group(k, out->stream));
	}
}

/* Packet i's descriptor fields: a vfgx_comm_pkt (24 bytes), or with
 * VFGX_COMM_PKT_RECORDS a struct vfgx_pkt (40 bytes; queue and flags at 32). */
__device__ __forceinline__ void ld_desc(const void *pkts, uint32_t cmd, uint32_t i,
					uint64_t &addr, uint32_t &len, uint32_t &q,
					uint32_t &flags)
{
	if (cmd & VFGX_COMM_PKT_RECORDS) {
		const uint8_t *d = (const uint8_t *)pkts + (size_t)i * 40;
		uint32_t qf = *(const uint32_t *)(d + 32);

		addr = *(const uint64_t *)d;
		len = *(const uint32_t *)(d + 8);
		q = qf & 0xffff;
		flags = qf >> 16;
	} else {
		const struct vfgx_comm_pkt *d = (const struct vfgx_comm_pkt *)pkts + i;

		addr = d->addr;
		len = d->len;
		q = d->queue;
		flags = d->flags;
	}
}

/* Packets first .. first + 32 * nchunks of the item (chunks of 32 spaced by
 * stride chunks): each lane reads one descriptor (one coalesced read over
 * PCIe per 32 packets).  Lane j then parses, filters and reads the sequence
 * header of packet j itself (the header round trips of 32 packets overlap
 * instead of following one another), the warp sums the UDP checksums one
 * packet after another (warp_scan, which also checks the payload pattern), and lane j records its packet's result.
 * The counters and results are those of phase_a_packet for every packet.
 * With stage_copy the packets run one by one through phase_a_packet. */
__device__ void phase_a_chunks(const kparams &k, ull *cnt, ull *gmask,
			       uint32_t slot,
			       const void *pkts, uint32_t cmd, uint32_t n,
			       uint32_t chunk, uint32_t stride, uint32_t lane)
{
	for (uint32_t c0 = chunk * 32; c0 < n; c0 += stride * 32) {
		uint32_t i = c0 + lane, m = n - c0 < 32 ? n - c0 : 32;
		uint64_t addr = 0;
		uint32_t len = 0, q = 0, flags = 0;

		if (i < n)
			ld_desc(pkts, cmd, i, addr, len, q, flags);
		if (k.stage) {
			for (uint32_t j = 0; j < m; j++)
				phase_a_packet(k, cnt, gmask, slot, c0 + j,
					       __shfl_sync(FULL, addr, j),
					       __shfl_sync(FULL, len, j), __shfl_sync(FULL, q, j),
					       __shfl_sync(FULL, flags, j), lane);
			continue;
		}

		const uint8_t *f = (const uint8_t *)(uintptr_t)addr;
		struct vfgx_parsed ps;
		struct vfgx_app_hdr h = { 0, 0, 0 };
		struct kfres fx = { 0, 0, 0, 0 };
		int r = VFGX_STAGE_PASS, fr = VFGX_STAGE_PASS;
		int ar = VFGX_R_BAD_APP_HDR, need = 0;
		uint32_t pseudo = 0, left, act, passed, bit_lo = 0, bit_hi = 0;
		uint32_t boff = VFGX_APP_HLEN, blen = 0;
		bool bad = false;
		ull bytes;

		memset(&ps, 0, sizeof(ps));
		if (i < n) {
			if (flags & PKT_FLAG_PAYLOAD) {
				ps.payload_off = 0;
				ps.payload_len = len;
			} else {
				r = vfgx_parse_headers(f, len, &ps, &need);
				if (r == VFGX_STAGE_PASS) {
					fr = vfgx_filter_port(k.lo, k.hi, k.nb_ranges,
							      ps.dst_port);
					if (need)
						pseudo = vfgx_udp_pseudo_sum(&ps);
				} else {
					need = 0;
				}
			}
			if (r == VFGX_STAGE_PASS && fr == VFGX_STAGE_PASS)
				ar = k_hdr(k, f + ps.payload_off, ps.payload_len, &h, &boff,
					   &blen, &fx,
					   k.fpl ? &k.fpl[(size_t)slot * k.burst + i] : NULL);
		}
		/* Records that may be delivered are checked against the
		 * loopback pattern (verify) in the same loads as their
		 * checksum, or in a pass of their own when no checksum is due. */
		if (ar == VFGX_STAGE_PASS && k.reorder && blen > k.slot && !k.learn)
			ar = VFGX_R_TOO_BIG;
		bool vneed = k.verify && i < n && r == VFGX_STAGE_PASS &&
			     fr == VFGX_STAGE_PASS && ar == VFGX_STAGE_PASS;
		bool vbad = false;

		/* The sums that must be taken, 32 / L at a time: L lanes per
		 * span, L the fewest (a power of two) whose CSUM_DEPTH loads
		 * each cover the chunk's longest span, so short frames (L = 1,
		 * each lane its own) cost one round trip for the whole chunk
		 * and an 8 KiB one still has the whole warp. */
		left = __ballot_sync(FULL, need || vneed);
		if (left) {
			uintptr_t bo = (uintptr_t)(f + ps.payload_off + boff);
			uintptr_t so = need ? (uintptr_t)(f + ps.l4_off) : bo;
			uint32_t sl = need ? ps.payload_len + VFGX_UDP_HLEN : blen;
			uint32_t nbk = need || vneed ?
					       (uint32_t)((so + sl + 15 - (so & ~(uintptr_t)15)) / 16) :
					       0;
			uint32_t mx = __reduce_max_sync(FULL, nbk), L = 1;

			while (L < 32 && L * CSUM_DEPTH < mx)
				L <<= 1;
			uint32_t per = 32 / L, g = lane / L;

			while (left) {
				uint32_t mm = left, e = 0, o = 0, diff = 0;

				for (uint32_t t = 0; t < g && mm; t++)
					mm &= mm - 1;
				/* segment g takes the g-th packet still left */
				uint32_t j = mm ? (uint32_t)(__ffs(mm) - 1) : lane;
				bool vj = __shfl_sync(FULL, vneed, j);
				uintptr_t body = __shfl_sync(FULL, (ull)bo, j);
				uint32_t bl = __shfl_sync(FULL, blen, j);
				uintptr_t sp = __shfl_sync(FULL, (ull)so, j);
				uint32_t l = __shfl_sync(FULL, sl, j);
				uint32_t c = __shfl_sync(FULL, pat_base(h.stream, h.seq), j);

#if VFGX_CSUM_PREFETCH
				/* -Dgpu_csum_prefetch: the span this segment takes
				 * next is asked into L2 while this one is summed, so
				 * twice a warp's register-bound loads are in flight
				 * (prefetches hold no register) */
				{
					uint32_t m2 = mm;

					for (uint32_t t = 0; t < per && m2; t++)
						m2 &= m2 - 1;
					uint32_t j2 = m2 ? (uint32_t)(__ffs(m2) - 1) : lane;
					uintptr_t sp2 = __shfl_sync(FULL, (ull)so, j2);
					uint32_t l2 = __shfl_sync(FULL, sl, j2);

					if (m2)
						span_prefetch(sp2, sp2 + l2, L, lane % L);
				}
#endif
				if (mm)
					span_part(sp, sp + l, L, lane % L, vj, body, bl, c, e, o,
						  diff);
				span_reduce(L, e, o, diff);
				ull s = span_sum(sp, e, o);
				/* this lane's packet, if it was the k-th left,
				 * went to segment k */
				uint32_t kk = (uint32_t)__popc(left & ((1u << lane) - 1));
				bool mine = ((left >> lane) & 1) && kk < per;
				uint32_t src = mine ? kk * L : lane;

				s = __shfl_sync(FULL, s, src);
				diff = __shfl_sync(FULL, diff, src);
				if (mine) {
					if (need)
						bad = vfgx_csum_fold((uint32_t)(s + pseudo)) != 0;
					vbad = diff != 0;
				}
				for (uint32_t t = 0; t < per && left; t++)
					left &= left - 1;
			}
		}
		h.flags = (h.flags & RF_KEEP(k)) | (vbad ? RF_BAD : 0);
		if (i < n) {
			if (r == VFGX_STAGE_PASS && bad)
				r = VFGX_R_BAD_UDP_CSUM;
			if (r == VFGX_STAGE_PASS)
				r = fr;
			if (r != VFGX_STAGE_PASS)
				count(cnt, GPUK_C_DROP0 + r, 1);
		}
		act = __ballot_sync(FULL, i < n);
		passed = __ballot_sync(FULL, i < n && r == VFGX_STAGE_PASS);
		bytes = warp_sum(i < n ? len : 0);
		if (lane == 0) {
			count(cnt, GPUK_C_PACKETS, __popc(act));
			count(cnt, GPUK_C_BYTES, bytes);
			if (passed)
				count(cnt, GPUK_C_PASSED, __popc(passed));
		}
		if (!k.to_b) {
			/* deliver is warp-wide: one packet after another */
			for (uint32_t j = 0; j < m; j++) {
				const uint8_t *pay;
				uint32_t pl, qj, bj;
				int aj;

				if (!((passed >> j) & 1))
					continue;
				pay = (const uint8_t *)(uintptr_t)__shfl_sync(FULL,
					(ull)(uintptr_t)(f + ps.payload_off), j);
				pl = __shfl_sync(FULL, ps.payload_len, j);
				qj = __shfl_sync(FULL, q, j);
				aj = __shfl_sync(FULL, ar, j);
				bj = __shfl_sync(FULL, boff, j);
				if (aj == VFGX_STAGE_PASS)
					kd_deliver(k, cnt, qj * k.max_streams +
						__shfl_sync(FULL, h.stream, j),
						__shfl_sync(FULL, h.seq, j),
						pay + bj, __shfl_sync(FULL, blen, j),
						__shfl_sync(FULL, h.flags, j), false, lane);
				else if (k.verify) {
					if (lane == 0)
						count(cnt, GPUK_C_DROP0 + aj, 1);
				} else {
					kd_deliver(k, cnt, qj * k.max_streams, 0, pay, pl,
						0, false, lane);
				}
			}
			continue;
		}
		if (i < n) {
			struct res *out = &k.res[(size_t)slot * k.burst + i];
			uint8_t *grp = &k.grp[(size_t)slot * k.burst + i];
			uint8_t gv = 0xff;

			if (r == VFGX_STAGE_PASS) {
				if (ar != VFGX_STAGE_PASS) {
					count(cnt, GPUK_C_DROP0 + ar, 1);
				} else {
					/* chunks: the app header's stream, as
					 * the cpu engine places it */
					uint32_t st = k.ch.on ? h.stream :
						      q * k.max_streams + h.stream;

					out->seq = h.seq;
					out->body = f + ps.payload_off + boff;
					out->len = blen;
					out->stream = st;
					out->flags = h.flags;
					if (k.fres)
						k.fres[(size_t)slot * k.burst + i] = fx;
					gv = k_group(k, st);
					if (gv < 32)
						bit_lo = 1u << gv;
					else
						bit_hi = 1u << (gv - 32);
				}
			}
			out->at = i;
			*grp = gv;
		}
		bit_lo = __reduce_or_sync(FULL, bit_lo);
		bit_hi = __reduce_or_sync(FULL, bit_hi);
		if (lane == 0 && gmask && (bit_lo | bit_hi))
			atomicOr(gmask, (ull)bit_lo | ((ull)bit_hi << 32));
	}
}

#endif
