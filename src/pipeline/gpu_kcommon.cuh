/* gpu_kcommon.cuh - what every GPU data-plane kernel shares: launch shape,
 * record flags, the kernel parameter block, memory-ordering helpers
 * (commlist.h's protocol), the globaltimer and warp sum and scan helpers.  Device
 * code only; included by gpu_proc.cu, the one translation unit nvcc
 * builds (no relocatable device code). */
#ifndef VFGX_GPU_KCOMMON_CUH
#define VFGX_GPU_KCOMMON_CUH

#include <stddef.h>
#include <stdint.h>

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
/* record flags: the app header's LAST bit, RF_END when a format's end
 * mark is set (RTP marker, SPEAD heap size reached), and RF_BAD when phase A found
 * the body differing from the loopback pattern (counted at delivery when
 * pipeline.verify_payload is on, as the CPU verifies delivered records) */
#define RF_BAD 0x80u
#define RF_END 0x40u
#define DROP_USER 15 /* VFGX_DROP_USER */
#define CSUM_DEPTH 16
#ifndef VFGX_CSUM_PREFETCH
#define VFGX_CSUM_PREFETCH 0 /* meson -Dgpu_csum_prefetch=true */
#endif
/* #40, the item path's latency (docs/gpu.md, "Experiments behind build
 * options"), persistent mode only: per-item %globaltimer stamps; counters
 * handed back with DONE; the item's header read with its status; phase B's
 * window state on one multiprocessor */
#ifndef VFGX_FMT_WALK
#define VFGX_FMT_WALK 1 /* meson -Dgpu_fmt_walk=false: 0 */
#endif
#ifndef KC_BYTE_RUNS
#define KC_BYTE_RUNS 1 /* #38, chunks by bytes in runs; meson -Dgpu_byte_runs=false: 0 */
#endif
#ifndef VFGX_ITEM_STAMPS
#define VFGX_ITEM_STAMPS 0 /* meson -Dgpu_item_stamps=true */
#endif
#ifndef VFGX_DONE_COUNTERS
#define VFGX_DONE_COUNTERS 0 /* meson -Dgpu_done_counters=true */
#endif
#ifndef VFGX_ITEM_INLINE
#define VFGX_ITEM_INLINE 0 /* meson -Dgpu_item_inline=true */
#endif
#ifndef VFGX_LOCAL_B
#define VFGX_LOCAL_B 0 /* meson -Dgpu_local_b=true */
#endif
/* #38, where a chunk item's time goes (meson -Dgpu_chunk_prof=true):
 * clock64 cycles and counts of phase B's and C's steps, of reorder's
 * walk (KP_R_*: the walk, its extension, its records one by one) and of
 * a run by bytes' steps (KP_BR_*: its loads and checks, the placement of
 * its records, its writes, its counts, the settle after it), summed
 * over the run in g_kprof (KP_*), printed by gpuk_destroy; without it,
 * nothing */
#ifndef VFGX_CHUNK_PROF
#define VFGX_CHUNK_PROF 0
#endif
enum {
	KP_TURN, KP_EXTEND, KP_CHUNK_GROUP, KP_BRUN, KP_BRUN_CALLS, KP_BRUN_PKTS,
	KP_BONE, KP_BONE_CALLS, KP_SLOT_OPEN, KP_SETTLE, KP_PUBLISH, KP_DELIVER,
	KP_C_COPY, KP_C_CHAIN, KP_C_PUB, KP_PHASE_A, KP_SRUN, KP_SRUN_CALLS, KP_SONE,
	KP_SONE_CALLS, KP_DRAIN, KP_ITEMS, KP_C_BYTES, KP_INLINE_COPY, KP_B_PRE,
	KP_B_MID, KP_P_PRE, KP_P_OPEN, KP_P_MID, KP_P_SETTLE, KP_R_WALK, KP_R_BATCHES,
	KP_R_EXT, KP_R_ONE, KP_R_ONE_RECS, KP_BR_LOAD, KP_BR_PLACE, KP_BR_WRITE,
	KP_BR_COUNT, KP_BR_SETTLE, KP_N
};
#if VFGX_CHUNK_PROF
__device__ unsigned long long g_kprof[KP_N];
#define KP_START(v) long long v = clock64()
#define KP_END(i, v)                                                              \
	do {                                                                      \
		if ((threadIdx.x & 31) == 0)                                      \
			atomicAdd(&g_kprof[i], (unsigned long long)(clock64() - (v))); \
	} while (0)
#define KP_COUNT(i, n)                                                            \
	do {                                                                      \
		if ((threadIdx.x & 31) == 0)                                      \
			atomicAdd(&g_kprof[i], (unsigned long long)(n));          \
	} while (0)
#else
#define KP_START(v)
#define KP_END(i, v)
#define KP_COUNT(i, n)
#endif
/* -Dgpu_local_b: blocks whose warps own phase B's groups, one group a warp */
#define LOCAL_B_BLOCKS (GPUK_GROUPS / WARPS)
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
	uint32_t at;     /* the record's packet index in its item (its
			  * kparams.fres entry); grp says whether it is one */
	uint32_t flags;
};

/* A format's record beyond struct res (pipeline.format; phase A writes
 * it, phase B reads it): its header timestamp as a chunk reports it
 * (vfgx_fmt_hdr_ts; has_ts when the format has one) and, while RTP's
 * SSRCs are learned, the raw stream id. */
struct kfres {
	uint64_t hts, raw;
	uint32_t has_ts, pad;
};

/* Chunks by bytes placed by offset or lines (kparams.fpl): a record's
 * packet as phase A placed it (kfmt_hdr: vfgx_fmt_place's verdict pv,
 * and with it OK its one piece), so that phase B's serial walk reads this
 * instead of decoding the packet again.  placed 0: not placed there (a
 * packet of several pieces), phase B decodes it. */
struct kfplace {
	uint64_t chunk, chunk_bytes, dst_off;
	uint32_t src_off, len, payload_off, payload_len;
	int32_t pv;
	uint32_t end, placed, pad;
};

/* GPU chunk placement state (gpu_chunks.cuh), GPU memory. */
struct kc_stream;
struct kc_slot;
struct kc_cp;
struct kc_pb;

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
	uint64_t *stamps;           /* persistent, per slot (pinned), 4 words: VFGX_ITEM_STAMPS */
	uint64_t *done_cnt;         /* persistent, per slot (pinned), VFGX_COMM_DONE_CNT words:
				     * VFGX_DONE_COUNTERS */
	/* VFGX_LOCAL_B, per slot (GPU memory): the item number + 1 once
	 * phase A is done (aready), the phase-B owner warps done with the
	 * slot's items so far (bdone), the item's nb_pkts | cmd << 32 and
	 * group mask (bhdr, 2 words) */
	uint64_t *aready, *bdone, *bhdr;
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
	uint64_t test_wedge;        /* gpuk_conf.test_wedge */
	/* chunks (ch.on): records go to phase B for placement, not reorder */
	struct gpuk_chunks ch;
	struct kc_stream *kcs;      /* ch.streams */
	struct kc_slot *kcsl;       /* ch.streams * ch.in_flight */
	/* persistent mode: each warp's deferred copies and publications
	 * (blocks x WARPS lists), and the item whose turn it is to publish */
	struct kc_cp *kcp;
	struct kc_pb *kpb;
	uint64_t *pub_ticket;
	uint32_t to_b;              /* reorder or chunks: phase B has records */
	/* pipeline.format (gpu_iface.h), or NULL: vfgx's header; fseq: each
	 * stream's sequence extension state (nb_fseq) */
	const struct vfgx_format *fmt;
	struct vfgx_seq_state *fseq;
	uint32_t nb_fseq;
	/* fmt: each record's struct kfres (nb_items * burst); learn: RTP's
	 * SSRCs get stream indices in order of arrival (learned: raw + 1 per
	 * index, max_streams of them; every record goes to group 0, so one
	 * warp sees them in that order); fmt_raw: chunks by bytes, records
	 * carry their whole UDP payload (phase B decodes it again) */
	struct kfres *fres;
	uint64_t *learned;
	uint32_t learn, fmt_raw;
	/* fmt_raw by offset or lines: each record's struct kfplace
	 * (nb_items * burst), else NULL */
	struct kfplace *fpl;
	/* fmt's decode plan (vfgx_fmt_plan_make), made once at create */
	struct vfgx_fmt_plan fplan;
};

/* The streams group g runs through (flush, tick, reset): every
 * GPUK_GROUPS-th from g, or while SSRCs are learned all of them in
 * group 0 (its warp places them all). */
__device__ __forceinline__ uint32_t kg_first(const kparams &k, uint32_t g, uint32_t n)
{
	return k.learn ? (g ? n : 0) : g;
}

__device__ __forceinline__ uint32_t kg_step(const kparams &k)
{
	return k.learn ? 1 : GPUK_GROUPS;
}

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

__device__ __forceinline__ void st_release_sys64(uint64_t *p, uint64_t v)
{
	cuda::atomic_ref<uint64_t, cuda::thread_scope_system> a(*p);
	a.store(v, cuda::memory_order_release);
}

__device__ __forceinline__ uint64_t ld_acquire_sys64(const uint64_t *p)
{
	cuda::atomic_ref<const uint64_t, cuda::thread_scope_system> a(*p);
	return a.load(cuda::memory_order_acquire);
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

/* -Dgpu_item_inline: the status line's first 32 bytes by a warp, lane l
 * loading 16 bytes at 16 (l & 1) (one 32-byte request for the warp): lane
 * 0 gets v | nc << 32 and the clock, lane 1 seq and pkts_tag (commlist.h).
 * An acquire load (sys scope): once a lane's load returned the item's
 * READY and tags, the reads after it (the records, by the block after its
 * barrier) see what the CPU wrote before READY, with no second load. */
__device__ __forceinline__ void ld_status_line(const struct vfgx_comm_status_word *w,
					      uint32_t lane, uint64_t &a, uint64_t &b)
{
	const uint64_t *p = (const uint64_t *)w + 2 * (lane & 1);

	asm volatile("ld.acquire.sys.v2.u64 {%0, %1}, [%2];"
		     : "=l"(a), "=l"(b) : "l"(p) : "memory");
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

/* Inclusive scans across the warp's lanes. */
__device__ __forceinline__ ull warp_scan_sum(ull v, uint32_t lane)
{
	for (uint32_t d = 1; d < 32; d *= 2) {
		ull u = __shfl_up_sync(FULL, v, d);

		if (lane >= d)
			v += u;
	}
	return v;
}

__device__ __forceinline__ ull warp_scan_max(ull v, uint32_t lane)
{
	for (uint32_t d = 1; d < 32; d *= 2) {
		ull u = __shfl_up_sync(FULL, v, d);

		if (lane >= d && u > v)
			v = u;
	}
	return v;
}

__device__ __forceinline__ ull warp_scan_min(ull v, uint32_t lane)
{
	for (uint32_t d = 1; d < 32; d *= 2) {
		ull u = __shfl_up_sync(FULL, v, d);

		if (lane >= d && u < v)
			v = u;
	}
	return v;
}

__device__ __forceinline__ void count(ull *cnt, int i, ull v)
{
	atomicAdd(&cnt[i], v);
}


#endif
