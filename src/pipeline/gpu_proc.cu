/* gpu_proc.cu - the GPU data plane: kernels that run the shared stages
 * (vfgx/stages.h, compiled by nvcc) over comm-list items in three launch
 * modes, and the host code that allocates, launches and stops them.
 *
 * Work split: phase A (parse, validate with a warp-wide UDP checksum,
 * filter, sequence header) runs 32 packets per warp in persistent mode
 * (lane j parses packet j, the warp sums each checksum; phase_a_chunks),
 * one warp per packet otherwise, any number of items at once.  Phase B
 * (reorder, verify, user stage) must see each stream's packets in item
 * order, exactly as the CPU processor does: streams are
 * split into GPUK_GROUPS groups, one warp per group, and a per-group ticket
 * (the item number whose turn it is) orders items.  The reorder windows
 * (the output buffer) live in GPU memory.  Counters are summed per block in
 * shared memory and added to GPU-memory counters once per item.  Persistent
 * mode: groups without packets in the item pass their tickets on at once
 * (bitmap from phase A), and a group's share of the item is read before its
 * turn; see kernel_persistent and phase_b_group. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda/atomic>
#include <cuda_runtime.h>

#include <vfgx/stages.h>

#include "gpu_iface.h"
#include "gpu_user_stage.cuh"

#define FULL 0xffffffffu
/* 16 warps per block (one persistent block per SM): phase A keeps twice the
 * packets' loads in flight of 8, and each warp has 4 stream groups */
#define WARPS 16
#define THREADS (WARPS * 32)
#define PKT_FLAG_GPU 0x1
#define PKT_FLAG_PAYLOAD 0x2
#define RES_NONE 0
#define RES_INSERT 1
/* record flags: the app header's LAST bit, and RF_BAD when phase A found
 * the body differing from the loopback pattern (counted at delivery when
 * pipeline.verify_payload is on, as the CPU verifies delivered records) */
#define RF_BAD 0x80u
#define DROP_USER 15 /* VFGX_DROP_USER */
#define CSUM_DEPTH 16
/* one ticket per 128-byte line: the waiters of 64 groups poll 64 lines
 * (spread over L2 slices) instead of 4 */
#define TICKET_STRIDE 16
#define TICKET(k, g) (&(k).tickets[(size_t)(g) * TICKET_STRIDE])

typedef unsigned long long ull;

/* ld_item_hdr reads the header as seq | nb_pkts, cmd | pkts */
static_assert(offsetof(struct vfgx_comm_item, nb_pkts) == 8 &&
	      offsetof(struct vfgx_comm_item, cmd) == 12 &&
	      offsetof(struct vfgx_comm_item, pkts) == 16 &&
	      sizeof(struct vfgx_comm_item) % 16 == 0, "comm item header layout");

struct res {
	uint64_t seq;
	const uint8_t *body;
	uint32_t len;
	uint32_t stream; /* global stream index */
	uint32_t kind;
	uint32_t flags;
};

/* Everything a kernel needs, passed by value. */
struct kparams {
	struct vfgx_comm_item *items;
	struct vfgx_comm_status_word *status;
	const uint32_t *quit;
	uint32_t nb_items, burst;
	struct res *res;            /* nb_items * burst */
	uint8_t *grp;               /* nb_items * burst: stream group, 0xff none */
	uint8_t *stage;             /* stage_copy buffers or NULL */
	uint64_t *tickets;          /* GPUK_GROUPS, TICKET_STRIDE apart */
	uint64_t *seen;             /* persistent: 1 + the highest item observed READY */
	uint64_t *dquit;            /* persistent: quit seen, told to all blocks */
	uint64_t *seen_ns;          /* persistent, per slot (pinned), 4 words: %globaltimer after and
				     * before the load that saw READY, the CPU clock it read */
	ull *cnt;                   /* GPUK_NCNT */
	/* reorder state, nb_streams each (windows: * window) */
	uint64_t *base, *next;
	ull *ordinal;
	uint32_t *held, *slot_len;
	uint8_t *slot_flags, *slot_data;
	uint32_t nb_streams, max_streams, window, slot, reorder, verify;
	uint32_t nb_ranges;
	uint16_t lo[GPUK_MAX_RANGES], hi[GPUK_MAX_RANGES];
	struct vfgx_gpu_user_ctx user;
	struct gpuk_delivery *log;
	ull *log_n;
	uint64_t log_cap;
};

/* ---- memory-ordering helpers (see commlist.h) ---------------------------- */
__device__ __forceinline__ uint32_t ld_acquire_sys(const uint32_t *p)
{
	cuda::atomic_ref<const uint32_t, cuda::thread_scope_system> a(*p);
	return a.load(cuda::memory_order_acquire);
}

__device__ __forceinline__ uint32_t ld_relaxed_sys(const uint32_t *p)
{
	cuda::atomic_ref<const uint32_t, cuda::thread_scope_system> a(*p);
	return a.load(cuda::memory_order_relaxed);
}

__device__ __forceinline__ uint64_t ld_relaxed_dev(const uint64_t *p)
{
	cuda::atomic_ref<const uint64_t, cuda::thread_scope_device> a(*p);
	return a.load(cuda::memory_order_relaxed);
}

__device__ __forceinline__ void st_release_sys(uint32_t *p, uint32_t v)
{
	cuda::atomic_ref<uint32_t, cuda::thread_scope_system> a(*p);
	a.store(v, cuda::memory_order_release);
}

__device__ __forceinline__ uint64_t ld_acquire_dev(const uint64_t *p)
{
	cuda::atomic_ref<const uint64_t, cuda::thread_scope_device> a(*p);
	return a.load(cuda::memory_order_acquire);
}

__device__ __forceinline__ void st_release_dev(uint64_t *p, uint64_t v)
{
	cuda::atomic_ref<uint64_t, cuda::thread_scope_device> a(*p);
	a.store(v, cuda::memory_order_release);
}

/* An item header's seq, nb_pkts | cmd << 32 and pkts: two loads issued
 * together, one PCIe round trip (after the acquire of READY). */
__device__ __forceinline__ void ld_item_hdr(const struct vfgx_comm_item *it,
					    uint64_t &seq, uint64_t &nc,
					    uint64_t &pkts)
{
	asm volatile("ld.volatile.v2.u64 {%0, %1}, [%3];\n\t"
		     "ld.volatile.u64 %2, [%3+16];"
		     : "=l"(seq), "=l"(nc), "=l"(pkts) : "l"(it) : "memory");
}

#define POLL_DEPTH 4
#define POLL_GAP_NS 250

__device__ __forceinline__ uint64_t gtimer(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory");
	return t;
}

/* %globaltimer read only once v has arrived: the (never taken) trap on v
 * is issued, in order, before the timer read. */
__device__ __forceinline__ uint64_t gtimer_after(uint32_t v)
{
	uint64_t t;

	asm volatile("{\n\t.reg .pred p;\n\tsetp.eq.u32 p, %1, 0xffffffff;\n\t"
		     "@p trap;\n\tmov.u64 %0, %%globaltimer;\n\t}"
		     : "=l"(t) : "r"(v) : "memory");
	return t;
}

/* The status word and the CPU clock beside it (vfgx_comm_status_word), one
 * 16-byte load. */
__device__ __forceinline__ void ld_status_clock(const struct vfgx_comm_status_word *w,
					       uint64_t &v, uint64_t &clock)
{
	asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];"
		     : "=l"(v), "=l"(clock) : "l"(w) : "memory");
}

__device__ __forceinline__ uint32_t ld_quit(const uint32_t *q)
{
	return *(const volatile uint32_t *)q;
}

__device__ __forceinline__ ull warp_sum(ull v)
{
	for (int off = 16; off > 0; off >>= 1)
		v += __shfl_down_sync(FULL, v, off);
	return __shfl_sync(FULL, v, 0);
}

__device__ __forceinline__ void count(ull *cnt, int i, ull v)
{
	atomicAdd(&cnt[i], v);
}

/* ---- phase A: a warp per packet, or 32 per warp (phase_a_chunks) --------------------------------------- */

/* Exact (unfolded) sum of the big-endian 16-bit words of p[0..len), as
 * vfgx_csum_add computes it, split across the warp: 16-byte loads over the
 * aligned middle, bytes at the ends.  A byte at an even offset from p is a
 * high byte; the middle's even and odd bytes are summed apart and weighted
 * by the parity of p. */
__device__ __forceinline__ void csum_word(uint32_t w, uint32_t &e, uint32_t &o)
{
	uint32_t a = w & 0x00ff00ffu, b = (w >> 8) & 0x00ff00ffu;

	e += (a & 0xffff) + (a >> 16);
	o += (b & 0xffff) + (b >> 16);
}

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

/* One pass of 16-byte loads over p[0..len), split across the warp: the
 * exact (unfolded) sum of the big-endian 16-bit words, as vfgx_csum_add
 * computes it, and, when verify is set, whether the body [body, body +
 * blen) (inside p[0..len)) differs from the loopback pattern (*bad, the
 * same in every lane).  16-byte loads over the aligned middle, bytes at
 * the ends.  A byte at an even offset from p is a high byte; the middle's
 * even and odd bytes are summed apart and weighted by the parity of p. */
__device__ ull warp_scan(const uint8_t *p, uint32_t len, uint32_t lane,
			 bool verify, const uint8_t *body, uint32_t blen,
			 uint32_t c, bool *bad)
{
	uintptr_t start = (uintptr_t)p, end = start + len;
	uintptr_t a0 = (start + 15) & ~(uintptr_t)15, a1 = end & ~(uintptr_t)15;
	uint32_t diff = 0;
	ull s = 0;

	if (a0 >= a1) {
		for (uint32_t i = lane; i < len; i += 32) {
			s += (ull)p[i] << ((i & 1) ? 0 : 8);
			if (verify)
				diff |= pat_byte_bad(p, i, body, blen, c);
		}
		*bad = __any_sync(FULL, diff != 0);
		return warp_sum(s);
	}
	for (uint32_t i = lane; i < a0 - start; i += 32) {
		s += (ull)p[i] << ((i & 1) ? 0 : 8);
		if (verify)
			diff |= pat_byte_bad(p, i, body, blen, c);
	}
	for (uint32_t i = lane; i < end - a1; i += 32) {
		uint32_t off = (uint32_t)(a1 - start) + i;

		s += (ull)p[off] << ((off & 1) ? 0 : 8);
		if (verify)
			diff |= pat_byte_bad(p, off, body, blen, c);
	}
	{
		/* CSUM_DEPTH 16-byte loads per lane issued before any is summed:
		 * a warp has 8 KiB in flight, a whole 8192 B frame in one round
		 * trip (the loop bound alone had the compiler wait per load) */
		const uint4 *q = (const uint4 *)a0;
		uint32_t n16 = (uint32_t)((a1 - a0) / 16), e = 0, o = 0;
		int64_t o0 = (int64_t)(a0 - (uintptr_t)body);

#pragma unroll 1
		for (uint32_t j0 = 0; j0 < n16; j0 += 32 * CSUM_DEPTH) {
			uint4 v[CSUM_DEPTH];

#pragma unroll
			for (uint32_t u = 0; u < CSUM_DEPTH; u++) {
				uint32_t j = j0 + 32 * u + lane;

				v[u] = j < n16 ? q[j] : make_uint4(0, 0, 0, 0);
			}
#pragma unroll
			for (uint32_t u = 0; u < CSUM_DEPTH; u++) {
				csum_word(v[u].x, e, o);
				csum_word(v[u].y, e, o);
				csum_word(v[u].z, e, o);
				csum_word(v[u].w, e, o);
			}
			if (verify) {
#pragma unroll
				for (uint32_t u = 0; u < CSUM_DEPTH; u++) {
					uint32_t j = j0 + 32 * u + lane;
					int64_t ob = o0 + 16 * (int64_t)j;

					if (j < n16)
						diff |= pat_diff(v[u].x, ob, blen, c) |
							pat_diff(v[u].y, ob + 4, blen, c) |
							pat_diff(v[u].z, ob + 8, blen, c) |
							pat_diff(v[u].w, ob + 12, blen, c);
				}
			}
		}
		/* little endian: byte 0 of a word sits at an even address */
		s += (start & 1) ? ((ull)o << 8) + e : ((ull)e << 8) + o;
	}
	*bad = __any_sync(FULL, diff != 0);
	return warp_sum(s);
}

__device__ __forceinline__ uint32_t pat_base(uint32_t id, uint64_t seq)
{
	return id * 131u + (uint32_t)seq * 7u + 1u;
}

/* Returns false when the user stage dropped the record.  flags: LAST and
 * RF_BAD (verification was done in phase A, in the same loads as the
 * checksum). */
__device__ bool deliver(const kparams &k, ull *cnt, uint32_t s, uint64_t seq,
			const uint8_t *data, uint32_t len, uint32_t flags,
			bool ordered, uint32_t lane)
{
	int keep;

	if (k.verify && (flags & RF_BAD) && lane == 0)
		count(cnt, GPUK_C_VERIFY, 1);
	keep = !__shfl_sync(FULL, vfgx_gpu_user_stage(&k.user, s, seq, data, len,
						      lane), 0);
	if (!keep) {
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
		count(cnt, GPUK_C_DELIVERED, 1);
		count(cnt, GPUK_C_DELIVERED_BYTES, len);
		if (flags & VFGX_APP_FLAG_LAST)
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
	const uint8_t *pay;
	int r = VFGX_STAGE_PASS;

	if (lane == 0) {
		count(cnt, GPUK_C_PACKETS, 1);
		count(cnt, GPUK_C_BYTES, len);
		out->kind = RES_NONE;
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
	r = vfgx_app_hdr_read(pay, ps.payload_len, k.max_streams, &h);
	if (r == VFGX_STAGE_PASS && k.reorder && ps.payload_len - VFGX_APP_HLEN > k.slot)
		r = VFGX_R_TOO_BIG;
	if (r == VFGX_STAGE_PASS) {
		bool bad = false;

		if (k.verify)
			warp_scan(pay + VFGX_APP_HLEN, ps.payload_len - VFGX_APP_HLEN, lane,
				  true, pay + VFGX_APP_HLEN, ps.payload_len - VFGX_APP_HLEN,
				  pat_base(h.stream, h.seq), &bad);
		h.flags = (h.flags & VFGX_APP_FLAG_LAST) | (bad ? RF_BAD : 0);
	}
	if (!k.reorder) {
		if (r == VFGX_STAGE_PASS)
			deliver(k, cnt, q * k.max_streams + h.stream, h.seq,
				pay + VFGX_APP_HLEN, ps.payload_len - VFGX_APP_HLEN,
				h.flags, false, lane);
		else if (k.verify) {
			if (lane == 0)
				count(cnt, GPUK_C_DROP0 + r, 1);
		} else {
			deliver(k, cnt, q * k.max_streams, 0, pay, ps.payload_len,
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
		out->body = pay + VFGX_APP_HLEN;
		out->len = ps.payload_len - VFGX_APP_HLEN;
		out->stream = q * k.max_streams + h.stream;
		out->flags = h.flags;
		out->kind = RES_INSERT;
		*grp = (uint8_t)(out->stream % GPUK_GROUPS);
		if (gmask)
			atomicOr(gmask, 1ull << (out->stream % GPUK_GROUPS));
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
		int r = VFGX_STAGE_PASS, fr = VFGX_STAGE_PASS;
		int ar = VFGX_R_BAD_APP_HDR, need = 0;
		uint32_t pseudo = 0, left, act, passed, bit_lo = 0, bit_hi = 0;
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
				ar = vfgx_app_hdr_read(f + ps.payload_off, ps.payload_len,
						       k.max_streams, &h);
		}
		/* Records that may be delivered are checked against the
		 * loopback pattern (verify) in the same loads as their
		 * checksum, or in a pass of their own when no checksum is due. */
		if (ar == VFGX_STAGE_PASS && k.reorder &&
		    ps.payload_len - VFGX_APP_HLEN > k.slot)
			ar = VFGX_R_TOO_BIG;
		bool vneed = k.verify && i < n && r == VFGX_STAGE_PASS &&
			     fr == VFGX_STAGE_PASS && ar == VFGX_STAGE_PASS;
		bool vbad = false;

		/* the warp sums each checksum that must be verified */
		left = __ballot_sync(FULL, need || vneed);
		while (left) {
			uint32_t j = (uint32_t)(__ffs(left) - 1);
			bool nj = __shfl_sync(FULL, need, j), vj = __shfl_sync(FULL, vneed, j);
			const uint8_t *body = (const uint8_t *)(uintptr_t)
				__shfl_sync(FULL, (ull)(uintptr_t)(f + ps.payload_off + VFGX_APP_HLEN), j);
			uint32_t blen = __shfl_sync(FULL, ps.payload_len - VFGX_APP_HLEN, j);
			const uint8_t *p = nj ? (const uint8_t *)(uintptr_t)
				__shfl_sync(FULL, (ull)(uintptr_t)(f + ps.l4_off), j) : body;
			uint32_t l = nj ? __shfl_sync(FULL, ps.payload_len + VFGX_UDP_HLEN, j) : blen;
			uint32_t c = __shfl_sync(FULL, pat_base(h.stream, h.seq), j);
			bool bj;
			ull s = warp_scan(p, l, lane, vj, body, blen, c, &bj);

			left &= left - 1;
			if (lane == j) {
				if (nj)
					bad = vfgx_csum_fold((uint32_t)(s + pseudo)) != 0;
				vbad = bj;
			}
		}
		h.flags = (h.flags & VFGX_APP_FLAG_LAST) | (vbad ? RF_BAD : 0);
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
		if (!k.reorder) {
			/* deliver is warp-wide: one packet after another */
			for (uint32_t j = 0; j < m; j++) {
				const uint8_t *pay;
				uint32_t pl, qj;
				int aj;

				if (!((passed >> j) & 1))
					continue;
				pay = (const uint8_t *)(uintptr_t)__shfl_sync(FULL,
					(ull)(uintptr_t)(f + ps.payload_off), j);
				pl = __shfl_sync(FULL, ps.payload_len, j);
				qj = __shfl_sync(FULL, q, j);
				aj = __shfl_sync(FULL, ar, j);
				if (aj == VFGX_STAGE_PASS)
					deliver(k, cnt, qj * k.max_streams +
						__shfl_sync(FULL, h.stream, j),
						__shfl_sync(FULL, h.seq, j),
						pay + VFGX_APP_HLEN, pl - VFGX_APP_HLEN,
						__shfl_sync(FULL, h.flags, j), false, lane);
				else if (k.verify) {
					if (lane == 0)
						count(cnt, GPUK_C_DROP0 + aj, 1);
				} else {
					deliver(k, cnt, qj * k.max_streams, 0, pay, pl,
						0, false, lane);
				}
			}
			continue;
		}
		if (i < n) {
			struct res *out = &k.res[(size_t)slot * k.burst + i];
			uint8_t *grp = &k.grp[(size_t)slot * k.burst + i];
			uint32_t kind = RES_NONE;
			uint8_t gv = 0xff;

			if (r == VFGX_STAGE_PASS) {
				if (ar != VFGX_STAGE_PASS) {
					count(cnt, GPUK_C_DROP0 + ar, 1);
				} else {
					uint32_t st = q * k.max_streams + h.stream;

					out->seq = h.seq;
					out->body = f + ps.payload_off + VFGX_APP_HLEN;
					out->len = ps.payload_len - VFGX_APP_HLEN;
					out->stream = st;
					out->flags = h.flags;
					kind = RES_INSERT;
					gv = (uint8_t)(st % GPUK_GROUPS);
					if (gv < 32)
						bit_lo = 1u << gv;
					else
						bit_hi = 1u << (gv - 32);
				}
			}
			out->kind = kind;
			*grp = gv;
		}
		bit_lo = __reduce_or_sync(FULL, bit_lo);
		bit_hi = __reduce_or_sync(FULL, bit_hi);
		if (lane == 0 && gmask && (bit_lo | bit_hi))
			atomicOr(gmask, (ull)bit_lo | ((ull)bit_hi << 32));
	}
}

/* ---- phase B: reorder, one warp per stream group --------------------------
 * All lanes run the same control flow on values read after __syncwarp();
 * lane 0 alone writes the window state, then __syncwarp() publishes it to
 * the warp.  State written by another multiprocessor is read with __ldcg
 * after the ticket's acquire. */

__device__ void slot_advance(const kparams &k, ull *cnt, uint32_t s,
			     uint32_t lane)
{
	uint64_t base = __ldcg(&k.base[s]);
	size_t i = (size_t)s * k.window + (base & (k.window - 1));
	uint32_t l = __ldcg(&k.slot_len[i]);

	if (l) {
		deliver(k, cnt, s, base, k.slot_data + i * k.slot, l - 1,
			__ldcg(&k.slot_flags[i]), true, lane);
		if (lane == 0) {
			k.slot_len[i] = 0;
			k.held[s] = __ldcg(&k.held[s]) - 1;
		}
	} else if (lane == 0) {
		count(cnt, GPUK_C_GAPS, 1);
	}
	if (lane == 0)
		k.base[s] = base + 1;
	__syncwarp();
}

__device__ void slide_to(const kparams &k, ull *cnt, uint32_t s, uint64_t seq,
			 uint32_t lane)
{
	uint64_t w = k.window;
	uint64_t target = seq - w + 1;

	if (target - __ldcg(&k.base[s]) > w) {
		for (uint64_t i = 0; i < w; i++)
			slot_advance(k, cnt, s, lane);
		if (lane == 0) {
			count(cnt, GPUK_C_GAPS, target - __ldcg(&k.base[s]));
			k.base[s] = target;
		}
		__syncwarp();
		return;
	}
	while (__ldcg(&k.base[s]) < target)
		slot_advance(k, cnt, s, lane);
}

__device__ void reorder_insert(const kparams &k, ull *cnt, const struct res *r,
			       uint32_t lane)
{
	uint32_t s = r->stream, mask = k.window - 1;
	uint64_t seq = r->seq;
	uint64_t base = __ldcg(&k.base[s]);
	size_t i;

	/* In order with nothing held: inserting and draining would deliver
	 * this record at once from its slot, so deliver it from the packet
	 * (same bytes, same counters) and skip the copy. */
	if (seq == base && __ldcg(&k.held[s]) == 0) {
		deliver(k, cnt, s, seq, r->body, r->len, r->flags, true, lane);
		if (lane == 0)
			k.base[s] = base + 1;
		__syncwarp();
		return;
	}
	if (seq < base) {
		if (lane == 0)
			count(cnt, GPUK_C_DROP0 + VFGX_R_LATE, 1);
		return;
	}
	if (seq - base >= k.window)
		slide_to(k, cnt, s, seq, lane);
	i = (size_t)s * k.window + (seq & mask);
	if (__ldcg(&k.slot_len[i])) {
		if (lane == 0)
			count(cnt, GPUK_C_DROP0 + VFGX_R_DUPLICATE, 1);
		return;
	}
	{
		/* 8 loads per lane in flight before the stores: a 512-byte
		 * record is copied in two round trips instead of sixteen */
		const uint8_t *src = r->body;
		uint8_t *dst = k.slot_data + i * k.slot;

		for (uint32_t b0 = 0; b0 < r->len; b0 += 32 * 8) {
			uint8_t v[8];

#pragma unroll
			for (uint32_t u = 0; u < 8; u++) {
				uint32_t b = b0 + 32 * u + lane;

				v[u] = b < r->len ? src[b] : 0;
			}
#pragma unroll
			for (uint32_t u = 0; u < 8; u++) {
				uint32_t b = b0 + 32 * u + lane;

				if (b < r->len)
					dst[b] = v[u];
			}
		}
	}
	__syncwarp();
	if (lane == 0) {
		k.slot_len[i] = r->len + 1;
		k.slot_flags[i] = (uint8_t)r->flags;
		k.held[s] = __ldcg(&k.held[s]) + 1;
	}
	__syncwarp();
	for (;;) {
		uint64_t b2 = __ldcg(&k.base[s]);

		if (!__ldcg(&k.slot_len[(size_t)s * k.window + (b2 & mask)]))
			break;
		slot_advance(k, cnt, s, lane);
	}
}

__device__ void flush_stream(const kparams &k, ull *cnt, uint32_t s,
			     uint32_t lane)
{
	uint64_t skipped = 0;

	for (uint32_t i = 0; i < k.window && __ldcg(&k.held[s]); i++) {
		uint64_t base = __ldcg(&k.base[s]);

		if (__ldcg(&k.slot_len[(size_t)s * k.window + (base & (k.window - 1))])) {
			if (lane == 0 && skipped)
				count(cnt, GPUK_C_GAPS, skipped);
			skipped = 0;
			slot_advance(k, cnt, s, lane);
		} else {
			skipped++;
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

/* Lane j's record: the group's (r0 + j)-th entry among b0 .. b0 + 1023, in
 * arrival order (zero past the last), so a batch of 32 records arrives in
 * one L2 round trip. */
__device__ __forceinline__ struct res batch_record(const struct res *rs,
						   const uint32_t (&bal)[32],
						   uint32_t b0, uint32_t r0,
						   uint32_t lane)
{
	uint32_t want = r0 + lane, acc = 0, idx = UINT32_MAX;
	struct res mine = { 0, NULL, 0, 0, 0, 0 };

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

/* Returns false when told to quit while waiting for the group's turn. */
__device__ bool phase_b_group(const kparams &k, ull *cnt, uint32_t slot,
			      uint64_t item, uint32_t n, uint32_t cmd,
			      uint32_t g, uint32_t lane)
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
	if (k.reorder && cmd == VFGX_COMM_CMD_BURST && n) {
		group_ballots(grp, 0, n, g, lane, bal, tot);
		mine0 = batch_record(rs, bal, 0, 0, lane);
	}
	if (lane == 0)
		quit = wait_ticket(k, g, item);
	if (__shfl_sync(FULL, quit, 0))
		return false;
	__syncwarp();
	if (cmd == VFGX_COMM_CMD_RESET) {
		for (uint32_t s = g; s < k.nb_streams; s += GPUK_GROUPS) {
			for (uint32_t i = lane; i < k.window; i += 32)
				k.slot_len[(size_t)s * k.window + i] = 0;
			if (lane == 0) {
				k.base[s] = 0;
				k.held[s] = 0;
				k.next[s] = 0;
			}
		}
	} else if (k.reorder && cmd == VFGX_COMM_CMD_FLUSH) {
		for (uint32_t s = g; s < k.nb_streams; s += GPUK_GROUPS)
			flush_stream(k, cnt, s, lane);
	} else if (k.reorder) {
		/* One stream's window state cached in registers (the same in
		 * every lane) while its records come in order with nothing
		 * held: such a record is delivered from the packet with no
		 * access to the window (the fast path of reorder_insert), and
		 * base/next are written back when another stream's record or a
		 * record needing the window comes, and at the end. */
		uint32_t cs = UINT32_MAX, cheld = 0;
		uint64_t cbase = 0, cnext = 0;

		/* 1024 entries at a time: 32 independent byte loads per lane,
		 * then one ballot per 32 entries.  The group's matches (in
		 * arrival order) are then taken 32 at a time: lane j finds the
		 * j-th match and loads its record, so the records of a batch
		 * arrive in one L2 round trip instead of one per chunk; the
		 * warp then walks them in order through shuffles. */
		for (uint32_t b0 = 0; b0 < n; b0 += 1024) {
			if (b0)
				group_ballots(grp, b0, n, g, lane, bal, tot);
#pragma unroll 1
			for (uint32_t r0 = 0; r0 < tot; r0 += 32) {
				uint32_t batch = tot - r0 < 32 ? tot - r0 : 32;
				struct res mine = b0 == 0 && r0 == 0 ? mine0 :
					batch_record(rs, bal, b0, r0, lane);

				/* A batch that is one stream's next records in
				 * sequence, nothing held, and nothing to do per record
				 * (no user stage or delivery log; verification was
				 * done in phase A): delivered at once, with the
				 * counters the records one by one would add (only the
				 * first can count as reordered). */
				if (!k.user.enabled && !k.log_cap) {
					uint32_t st0 = __shfl_sync(FULL, mine.stream, 0);
					uint64_t s0 = __shfl_sync(FULL, mine.seq, 0);
					bool run = lane >= batch ||
						   (mine.stream == st0 && mine.seq == s0 + lane);

					if (__all_sync(FULL, run)) {
						cache_get(k, st0, cs, cbase, cnext, cheld, lane);
						if (s0 == cbase && cheld == 0) {
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
							continue;
						}
					}
				}

#pragma unroll 1
				for (uint32_t j = 0; j < batch; j++) {
					struct res r;

					r.seq = __shfl_sync(FULL, mine.seq, j);
					r.body = (const uint8_t *)__shfl_sync(FULL, (ull)(uintptr_t)mine.body, j);
					r.len = __shfl_sync(FULL, mine.len, j);
					r.stream = __shfl_sync(FULL, mine.stream, j);
					r.flags = __shfl_sync(FULL, mine.flags, j);
					r.kind = RES_INSERT;
					cache_get(k, r.stream, cs, cbase, cnext, cheld, lane);
					if (r.seq == cbase && cheld == 0) {
						if (deliver(k, cnt, cs, r.seq, r.body, r.len,
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
					reorder_insert(k, cnt, &r, lane);
				}
			}
		}
		cache_put(k, cs, cbase, cnext, lane);
	}
	__syncwarp();
	/* The release store orders this warp's window writes (published to
	 * lane 0 by the __syncwarp() above) before the next item's acquire:
	 * st.release.gpu is a fence.acq_rel.gpu plus the store, so no extra
	 * __threadfence() is needed. */
	if (lane == 0)
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

/* ---- per_burst and graph: three kernels per item --------------------------- */
__global__ void __launch_bounds__(THREADS) kernel_a(kparams k, uint32_t slot)
{
	__shared__ ull cnt[GPUK_NCNT];
	uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	uint32_t n = k.items[slot].nb_pkts;

	zero_counters(cnt);
	uint32_t cmd = k.items[slot].cmd;

	if ((cmd & VFGX_COMM_CMD_MASK) == VFGX_COMM_CMD_BURST) {
		const void *pkts = k.items[slot].pkts;

		for (uint32_t i = blockIdx.x * WARPS + warp; i < n;
		     i += gridDim.x * WARPS) {
			uint64_t addr;
			uint32_t len, q, flags;

			ld_desc(pkts, cmd, i, addr, len, q, flags);
			phase_a_packet(k, cnt, NULL, slot, i, addr, len, q, flags, lane);
		}
	}
	flush_counters(k, cnt);
}

__global__ void __launch_bounds__(THREADS) kernel_b(kparams k, uint32_t slot)
{
	__shared__ ull cnt[GPUK_NCNT];
	uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	const struct vfgx_comm_item *it = &k.items[slot];

	zero_counters(cnt);
	for (uint32_t g = blockIdx.x * WARPS + warp; g < GPUK_GROUPS;
	     g += gridDim.x * WARPS)
		if (!phase_b_group(k, cnt, slot, it->seq, it->nb_pkts,
				   it->cmd & VFGX_COMM_CMD_MASK, g,
				   lane))
			break;
	flush_counters(k, cnt);
}

__global__ void kernel_done(kparams k, uint32_t slot)
{
	if (threadIdx.x == 0)
		mark_done(k, slot);
}

/* ---- persistent: one kernel, block b takes items b, b + grid, ... ---------- */
#define LOOKAHEAD 4
__global__ void __launch_bounds__(THREADS) kernel_persistent(kparams k)
{
	__shared__ ull cnt[GPUK_NCNT];
	/* quit: set by thread 0 while waiting for an item, read after the
	 * next barrier; quit_b: set in phase B, read after flush_counters'
	 * barriers.  Two words so no write races a read across iterations. */
	__shared__ int quit, quit_b;
	__shared__ uint32_t n_sh, cmd_sh, rec_sh;
	__shared__ const void *pkts_sh;
	/* groups with a packet in the item: set in phase A, read in phase B,
	 * cleared by thread 0 after flush_counters' barriers */
	__shared__ ull gmask;
	uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;

	if (threadIdx.x == 0) {
		quit = 0;
		quit_b = 0;
		gmask = 0;
	}
	zero_counters(cnt);
	for (uint64_t item = blockIdx.x;; item += gridDim.x) {
		uint32_t slot = (uint32_t)(item % k.nb_items);

		if (threadIdx.x == 0) {
			uint32_t spins = 0;

			/* Up to LOOKAHEAD blocks poll their items' status words
			 * over PCIe (and the host's quit flag) at once: those
			 * whose item is below seen + LOOKAHEAD, seen being one
			 * past the highest item observed, so the PCIe round trips
			 * of consecutive items overlap.  The others wait on
			 * GPU-memory words (seen, dquit) and never touch host
			 * memory; one further away backs off so the spinning
			 * does not load the L2 slice holding seen. */
			for (;;) {
				uint64_t s = ld_relaxed_dev(k.seen);

				if (item < s + LOOKAHEAD)
					break;
				if (ld_relaxed_dev(k.dquit)) {
					quit = 1;
					break;
				}
				__nanosleep(item - s > 2 * LOOKAHEAD ? 1000 : 100);
			}
			/* relaxed polls, then one acquire load of the READY it saw
			 * (only the GPU moves a status word on from READY).  The
			 * %globaltimer of the poll that first returned READY is
			 * the observation time (bench: hand-off latency). */
			uint64_t t_obs = 0, t_pre = 0, clk = 0, hseq = 0, hnc = 0, hpkts = 0;
			uint64_t w0[POLL_DEPTH], w1[POLL_DEPTH], gs[POLL_DEPTH];
			bool seen = false;

			/* POLL_DEPTH 16-byte loads of the status line (status
			 * and the CPU clock beside it) in flight, issued about
			 * POLL_GAP_NS apart, so READY is sampled every round trip
			 * / POLL_DEPTH instead of once per round trip.  Each load
			 * is bracketed by %globaltimer just before it was issued
			 * and just after its value was tested. */
#pragma unroll
			for (int d = 0; d < POLL_DEPTH; d++) {
				gs[d] = gtimer();
				ld_status_clock(&k.status[slot], w0[d], w1[d]);
				while (gtimer() - gs[d] < POLL_GAP_NS)
					;
			}
			while (!seen && !quit) {
#pragma unroll
				for (int d = 0; d < POLL_DEPTH; d++) {
					uint64_t g1 = gtimer_after((uint32_t)w0[d]);

					if (!seen && (uint32_t)w0[d] == VFGX_COMM_READY &&
					    ld_acquire_sys(&k.status[slot].v) == VFGX_COMM_READY) {
						ld_item_hdr(&k.items[slot], hseq, hnc, hpkts);
						if (hseq == item) {
							seen = true;
							t_pre = gs[d];
							t_obs = g1;
							clk = w1[d];
						}
					}
					if (!seen) {
						gs[d] = gtimer();
						ld_status_clock(&k.status[slot], w0[d], w1[d]);
					}
				}
				if (!seen && (++spins & 15) == 0 && ld_quit(k.quit)) {
					quit = 1;
					st_release_dev(k.dquit, 1);
				}
			}
			if (!quit) {
				/* weak posted writes; ordered before DONE */
				k.seen_ns[4 * slot] = t_obs;
				k.seen_ns[4 * slot + 1] = t_pre;
				k.seen_ns[4 * slot + 2] = clk;
				n_sh = (uint32_t)hnc;
				cmd_sh = (uint32_t)(hnc >> 32) & VFGX_COMM_CMD_MASK;
				rec_sh = (uint32_t)(hnc >> 32) & VFGX_COMM_PKT_RECORDS;
				pkts_sh = (const void *)(uintptr_t)hpkts;
				/* throttles the pollers only: no data hangs on it */
				atomicMax((ull *)k.seen, (ull)(item + 1));
			}
		}
		__syncthreads();
		if (quit)
			return;
		/* phase A: each warp takes chunks of 32 packets */
		if (cmd_sh == VFGX_COMM_CMD_BURST)
			phase_a_chunks(k, cnt, &gmask, slot, pkts_sh, rec_sh, n_sh, warp, WARPS,
				       lane);
		__syncthreads();
		{
			/* this warp's groups with nothing to do pass their
			 * tickets on at once; the others run in turn */
			ull full = cmd_sh == VFGX_COMM_CMD_BURST ? (k.reorder ? gmask : 0) : ~0ull;
			uint32_t busy8 = 0;
			bool ok;

			for (uint32_t j = 0; j < GPUK_GROUPS / WARPS; j++)
				busy8 |= (uint32_t)((full >> (warp + WARPS * j)) & 1) << j;
			ok = pass_empty_groups(k, item, warp,
					       ~busy8 & ((1u << (GPUK_GROUPS / WARPS)) - 1), lane);
			for (uint32_t j = 0; ok && j < GPUK_GROUPS / WARPS; j++) {
				if (!((busy8 >> j) & 1))
					continue;
				ok = phase_b_group(k, cnt, slot, item, n_sh, cmd_sh,
						   warp + WARPS * j, lane);
			}
			if (!ok && lane == 0)
				atomicExch(&quit_b, 1);
		}
		flush_counters(k, cnt);
		if (quit_b)
			return;
		if (threadIdx.x == 0) {
			gmask = 0;
			mark_done(k, slot);
		}
	}
}

/* ---- host side -------------------------------------------------------------- */
struct gpuk {
	struct gpuk_conf c;
	struct vfgx_comm_list list;
	kparams k;
	cudaStream_t stream, stats_stream;
	cudaGraphExec_t graph[2];
	bool graph_ok[2];
	bool launched, failed;
	uint32_t grid_a, grid_b, blocks;
	ull *cnt_host;
	char name[256];
	void *allocs[24];
	int nb_allocs;
	void *hallocs[8];
	int nb_hallocs;
};

static int cuerr(char *err, size_t len, const char *what, cudaError_t e)
{
	snprintf(err, len, "%s: %s (%s)", what, cudaGetErrorString(e),
		 cudaGetErrorName(e));
	return -EIO;
}

static int dalloc(struct gpuk *g, void **p, size_t size, char *err, size_t len)
{
	cudaError_t e;

	if (size == 0)
		size = 64;
	e = cudaMalloc(p, size);
	if (e != cudaSuccess)
		return cuerr(err, len, "cudaMalloc", e);
	g->allocs[g->nb_allocs++] = *p;
	e = cudaMemset(*p, 0, size);
	return e == cudaSuccess ? 0 : cuerr(err, len, "cudaMemset", e);
}

static int halloc(struct gpuk *g, void **p, void **dev, size_t size, char *err,
		  size_t len)
{
	cudaError_t e = cudaHostAlloc(p, size, cudaHostAllocMapped |
						       cudaHostAllocPortable);

	if (e != cudaSuccess)
		return cuerr(err, len, "cudaHostAlloc", e);
	g->hallocs[g->nb_hallocs++] = *p;
	memset(*p, 0, size);
	e = cudaHostGetDevicePointer(dev, *p, 0);
	return e == cudaSuccess ? 0 : cuerr(err, len, "cudaHostGetDevicePointer", e);
}

extern "C" int gpuk_probe(uint32_t gpu_id, char *desc, size_t len, char *err,
			  size_t errlen)
{
	cudaDeviceProp prop;
	int n = 0, drv = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		snprintf(err, errlen, "CUDA finds no GPU: %s", cudaGetErrorString(e));
		return -ENODEV;
	}
	if ((int)gpu_id >= n) {
		snprintf(err, errlen, "GPU %u not present (CUDA sees %d)", gpu_id, n);
		return -ENODEV;
	}
	e = cudaGetDeviceProperties(&prop, (int)gpu_id);
	if (e != cudaSuccess)
		return cuerr(err, errlen, "cudaGetDeviceProperties", e);
	cudaDriverGetVersion(&drv);
	snprintf(desc, len, "GPU %u: %s (sm_%d%d, %d SMs, %.1f GiB, CUDA driver %d.%d)",
		 gpu_id, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
		 (double)prop.totalGlobalMem / (1 << 30), drv / 1000,
		 (drv % 1000) / 10);
	return 0;
}

extern "C" int gpuk_create(const struct gpuk_conf *c, struct gpuk **out,
			   struct vfgx_comm_list **list, char *err, size_t errlen)
{
	struct gpuk *g = (struct gpuk *)calloc(1, sizeof(*g));
	cudaDeviceProp prop;
	cudaError_t e;
	void *h, *d;
	size_t nw;
	int ret, can_host_ptr = 0;

	*out = NULL;
	if (!g)
		return -ENOMEM;
	kparams &k = g->k;
	g->c = *c;
	if ((e = cudaSetDevice((int)c->gpu_id)) != cudaSuccess ||
	    (e = cudaGetDeviceProperties(&prop, (int)c->gpu_id)) != cudaSuccess) {
		free(g);
		return cuerr(err, errlen, "cudaSetDevice", e);
	}
	cudaDeviceGetAttribute(&can_host_ptr,
			       cudaDevAttrCanUseHostPointerForRegisteredMem,
			       (int)c->gpu_id);
	if (!can_host_ptr) {
		free(g);
		snprintf(err, errlen, "%s cannot use host pointers of pinned memory directly (no unified addressing); this GPU data plane needs it",
			 prop.name);
		return -ENOTSUP;
	}
	snprintf(g->name, sizeof(g->name), "%s", prop.name);
	g->list.nb_items = c->mode == 2 ? 2 * c->graph_items : c->items;
	g->list.burst = c->burst;
	k.nb_items = g->list.nb_items;
	k.burst = c->burst;
	k.nb_streams = c->queues * c->max_streams;
	k.max_streams = c->max_streams;
	k.window = c->reorder ? c->window : 1;
	k.slot = c->slot;
	k.reorder = c->reorder;
	k.verify = c->verify;
	k.nb_ranges = c->nb_ranges;
	memcpy(k.lo, c->lo, sizeof(k.lo));
	memcpy(k.hi, c->hi, sizeof(k.hi));
	nw = (size_t)k.nb_streams * k.window;
	if ((e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) ||
	    (e = cudaStreamCreateWithFlags(&g->stats_stream, cudaStreamNonBlocking))) {
		free(g);
		return cuerr(err, errlen, "cudaStreamCreate", e);
	}
	/* comm list: item headers, descriptors, status words, quit: pinned */
	if ((ret = halloc(g, &h, &d, sizeof(struct vfgx_comm_item) * k.nb_items, err, errlen)))
		goto fail;
	g->list.items = (struct vfgx_comm_item *)h;
	g->list.items_dev = k.items = (struct vfgx_comm_item *)d;
	if ((ret = halloc(g, &h, &d, sizeof(struct vfgx_comm_pkt) * k.nb_items * c->burst, err, errlen)))
		goto fail;
	g->list.pkts = (struct vfgx_comm_pkt *)h;
	g->list.pkts_dev = (struct vfgx_comm_pkt *)d;
	for (uint32_t i = 0; i < k.nb_items; i++)
		g->list.items[i].pkts = g->list.pkts_dev + (size_t)i * c->burst;
	if ((ret = halloc(g, &h, &d, sizeof(struct vfgx_comm_status_word) * k.nb_items, err, errlen)))
		goto fail;
	g->list.status = (struct vfgx_comm_status_word *)h;
	g->list.status_dev = k.status = (struct vfgx_comm_status_word *)d;
	if ((ret = halloc(g, &h, &d, 64 + sizeof(ull) * GPUK_NCNT, err, errlen)))
		goto fail;
	g->list.quit = (volatile uint32_t *)h;
	g->list.quit_dev = (uint32_t *)d;
	k.quit = (const uint32_t *)d;
	g->cnt_host = (ull *)((char *)h + 64);
	if ((ret = halloc(g, &h, &d, 4 * sizeof(uint64_t) * k.nb_items, err, errlen)))
		goto fail;
	g->list.seen_ns = (volatile uint64_t *)h;
	k.seen_ns = (uint64_t *)d;
	/* GPU memory: results, tickets, counters, reorder windows, log */
	if ((ret = dalloc(g, (void **)&k.res, sizeof(struct res) * k.nb_items * c->burst, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.tickets, sizeof(uint64_t) * GPUK_GROUPS * TICKET_STRIDE, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.seen, 2 * sizeof(uint64_t), err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.grp, (size_t)k.nb_items * c->burst + 32, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.cnt, sizeof(ull) * GPUK_NCNT, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.base, sizeof(uint64_t) * k.nb_streams, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.next, sizeof(uint64_t) * k.nb_streams, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.ordinal, sizeof(ull) * k.nb_streams, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.held, sizeof(uint32_t) * k.nb_streams, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.slot_len, sizeof(uint32_t) * nw, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.slot_flags, nw, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.slot_data, c->reorder ? nw * c->slot : 64, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.user.flow_sum, sizeof(ull) * k.nb_streams, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.log_n, sizeof(ull), err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.log, sizeof(struct gpuk_delivery) * c->log_records, err, errlen)))
		goto fail;
	if (c->stage_copy &&
	    (ret = dalloc(g, (void **)&k.stage, (size_t)k.nb_items * c->burst * GPUK_STAGE_MAX, err, errlen)))
		goto fail;
	k.dquit = k.seen + 1;
	k.user.nb_flows = k.nb_streams;
	k.user.enabled = c->user == 1;
	k.log_cap = c->log_records;
	g->grid_a = (c->burst + WARPS - 1) / WARPS;
	g->grid_b = GPUK_GROUPS / WARPS;
	g->blocks = c->blocks ? c->blocks : (uint32_t)prop.multiProcessorCount;
	if (c->mode == 0) {
		/* every block of the persistent kernel must be resident at
		 * once: a block not yet scheduled would hold up the items
		 * after it forever */
		int per_sm = 0;

		e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_persistent,
								  THREADS, 0);
		if (e != cudaSuccess) {
			ret = cuerr(err, errlen, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", e);
			goto fail;
		}
		if (g->blocks > (uint32_t)per_sm * (uint32_t)prop.multiProcessorCount) {
			snprintf(err, errlen, "pipeline.gpu.blocks %u: only %d blocks of the persistent kernel fit on %s at once (%d per SM x %d SMs); lower it",
				 g->blocks, per_sm * prop.multiProcessorCount, prop.name,
				 per_sm, prop.multiProcessorCount);
			ret = -EINVAL;
			goto fail;
		}
	}
	*out = g;
	*list = &g->list;
	return 0;
fail:
	gpuk_destroy(g);
	return ret;
}

static int launch_item(struct gpuk *g, uint32_t slot)
{
	kernel_a<<<g->grid_a, THREADS, 0, g->stream>>>(g->k, slot);
	kernel_b<<<g->grid_b, THREADS, 0, g->stream>>>(g->k, slot);
	kernel_done<<<1, 32, 0, g->stream>>>(g->k, slot);
	return 0;
}

extern "C" int gpuk_start(struct gpuk *g, char *err, size_t errlen)
{
	cudaError_t e;

	if (g->c.mode == 0) {
		kernel_persistent<<<g->blocks, THREADS, 0, g->stream>>>(g->k);
		g->launched = true;
		e = cudaGetLastError();
		return e == cudaSuccess ? 0 : cuerr(err, errlen, "persistent kernel launch", e);
	}
	if (g->c.mode == 2) {
		for (int h = 0; h < 2; h++) {
			cudaGraph_t graph;

			e = cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal);
			if (e != cudaSuccess)
				return cuerr(err, errlen, "cudaStreamBeginCapture", e);
			for (uint32_t i = 0; i < g->c.graph_items; i++)
				launch_item(g, h * g->c.graph_items + i);
			e = cudaStreamEndCapture(g->stream, &graph);
			if (e != cudaSuccess)
				return cuerr(err, errlen, "cudaStreamEndCapture", e);
			e = cudaGraphInstantiate(&g->graph[h], graph, 0);
			cudaGraphDestroy(graph);
			if (e != cudaSuccess)
				return cuerr(err, errlen, "cudaGraphInstantiate", e);
			g->graph_ok[h] = true;
		}
	}
	return 0;
}

extern "C" int gpuk_launch(struct gpuk *g, uint32_t slot, char *err, size_t errlen)
{
	cudaError_t e;

	if (g->c.mode == 1)
		launch_item(g, slot);
	else if (g->c.mode == 2)
		cudaGraphLaunch(g->graph[slot / g->c.graph_items], g->stream);
	g->launched = true;
	e = cudaGetLastError();
	return e == cudaSuccess ? 0 : cuerr(err, errlen, "kernel launch", e);
}

extern "C" int gpuk_health(struct gpuk *g, char *err, size_t errlen)
{
	cudaError_t e = cudaStreamQuery(g->stream);

	if (e == cudaErrorNotReady)
		return 0;
	if (e != cudaSuccess) {
		g->failed = true;
		return cuerr(err, errlen, "GPU kernel failed", e);
	}
	if (g->c.mode == 0 && g->launched) {
		snprintf(err, errlen, "the persistent kernel ended unexpectedly");
		return -ESRCH;
	}
	return 0;
}

extern "C" int gpuk_read_counters(struct gpuk *g, uint64_t *cnt, char *err,
				  size_t errlen)
{
	cudaError_t e = cudaMemcpyAsync(g->cnt_host, g->k.cnt, sizeof(ull) * GPUK_NCNT,
					cudaMemcpyDeviceToHost, g->stats_stream);

	if (e == cudaSuccess)
		e = cudaStreamSynchronize(g->stats_stream);
	if (e != cudaSuccess)
		return cuerr(err, errlen, "reading GPU counters", e);
	memcpy(cnt, g->cnt_host, sizeof(ull) * GPUK_NCNT);
	return 0;
}

extern "C" int gpuk_read_flow_sums(struct gpuk *g, uint64_t *sums, uint32_t n,
				   char *err, size_t errlen)
{
	cudaError_t e;

	if (n > g->k.nb_streams)
		n = g->k.nb_streams;
	e = cudaMemcpyAsync(sums, g->k.user.flow_sum, sizeof(ull) * n,
			    cudaMemcpyDeviceToHost, g->stats_stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(g->stats_stream);
	return e == cudaSuccess ? 0 : cuerr(err, errlen, "reading flow sums", e);
}

extern "C" int64_t gpuk_read_log(struct gpuk *g, struct gpuk_delivery *recs,
				 uint64_t max, char *err, size_t errlen)
{
	ull n = 0;
	cudaError_t e = cudaMemcpyAsync(&n, g->k.log_n, sizeof(n),
					cudaMemcpyDeviceToHost, g->stats_stream);

	if (e == cudaSuccess)
		e = cudaStreamSynchronize(g->stats_stream);
	if (e != cudaSuccess)
		return cuerr(err, errlen, "reading the delivery log", e);
	if (n > g->k.log_cap || n > max)
		return -ENOSPC;
	if (n)
		e = cudaMemcpyAsync(recs, g->k.log, sizeof(*recs) * n,
				    cudaMemcpyDeviceToHost, g->stats_stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(g->stats_stream);
	return e == cudaSuccess ? (int64_t)n : cuerr(err, errlen, "reading the delivery log", e);
}

extern "C" int gpuk_device_readable(const void *p)
{
	cudaPointerAttributes a;

	if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
		cudaGetLastError(); /* not sticky: clear it */
		return 0;
	}
	return a.type != cudaMemoryTypeUnregistered;
}

extern "C" const char *gpuk_device_name(const struct gpuk *g)
{
	return g->name;
}

extern "C" int gpuk_stop(struct gpuk *g, uint32_t timeout_ms)
{
	struct timespec t0, t;

	__atomic_store_n(g->list.quit, 1u, __ATOMIC_RELEASE);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		cudaError_t e = cudaStreamQuery(g->stream);

		if (e != cudaErrorNotReady)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >
		    (long)timeout_ms) {
			g->failed = true;
			return -ETIMEDOUT;
		}
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
}

extern "C" void gpuk_destroy(struct gpuk *g)
{
	if (!g)
		return;
	if (g->launched && g->failed && cudaStreamQuery(g->stream) == cudaErrorNotReady) {
		/* a kernel that ignored the quit flag: freeing would block on it;
		 * process exit releases the memory */
		free(g);
		return;
	}
	for (int h = 0; h < 2; h++)
		if (g->graph_ok[h])
			cudaGraphExecDestroy(g->graph[h]);
	for (int i = 0; i < g->nb_allocs; i++)
		cudaFree(g->allocs[i]);
	for (int i = 0; i < g->nb_hallocs; i++)
		cudaFreeHost(g->hallocs[i]);
	if (g->stream)
		cudaStreamDestroy(g->stream);
	if (g->stats_stream)
		cudaStreamDestroy(g->stats_stream);
	free(g);
}
