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
 * turn; see kernel_persistent and phase_b_group.  With chunks, persistent
 * mode adds phase C: the block's warps copy the item's payloads into their
 * chunk slots and publish the chunks made ready in item order
 * (gpu_chunks.cuh).
 *
 * Files: gpu_kcommon.cuh (parameters, memory ordering), gpu_phase_a.cuh and
 * gpu_phase_b.cuh (the stages' device code), included here so nvcc builds
 * one translation unit; this file holds the kernels' entry points (launch
 * modes) and the host side (allocation, launch, health, stop). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include "../mem/gpu_resident.h"
#include "gpu_kcommon.cuh"
#include "gpu_place_link.h"
#include "gpu_phase_a.cuh"
#include "gpu_phase_b.cuh"

/* ---- per_burst and graph: three kernels per item --------------------------- */
__global__ void __launch_bounds__(THREADS) kernel_a(const __grid_constant__ kparams k, uint32_t slot)
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

__global__ void __launch_bounds__(THREADS) kernel_b(const __grid_constant__ kparams k, uint32_t slot)
{
	__shared__ ull cnt[GPUK_NCNT];
	uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	const struct vfgx_comm_item *it = &k.items[slot];

	zero_counters(cnt);
	for (uint32_t g = blockIdx.x * WARPS + warp; g < GPUK_GROUPS;
	     g += gridDim.x * WARPS)
		if (!phase_b_group(k, cnt, slot, it->seq, it->nb_pkts,
				   it->cmd & VFGX_COMM_CMD_MASK, g,
				   lane, NULL, false))
			break;
	flush_counters(k, cnt);
}

__global__ void kernel_done(const __grid_constant__ kparams k, uint32_t slot)
{
	if (threadIdx.x == 0)
		mark_done(k, slot);
}

/* ---- persistent: one kernel, block b takes items b, b + grid, ... ---------- */
#define LOOKAHEAD 4

#if VFGX_ITEM_INLINE
/* -Dgpu_item_inline: warp 0 waits for item (its slot's status line) and
 * takes its header from the same load, one PCIe round trip where the
 * default path has three one after another (the poll, an acquire load of
 * READY, the header).  The same throttle as kernel_persistent's thread 0
 * (LOOKAHEAD blocks read host memory at once) and the same hand-off
 * stamps; lane 0 writes what the block reads after its barrier.  Every
 * decision is lane 0's, shuffled, so the warp stays converged. */
__device__ void poll_item_inline(const kparams &k, uint64_t item, uint32_t slot,
				 uint32_t lane, int *quit, uint32_t *n_sh, uint32_t *cmd_sh,
				 uint32_t *rec_sh, const void **pkts_sh)
{
	uint32_t spins = 0;
	int q = 0;

	for (;;) {
		uint64_t s = __shfl_sync(FULL, lane == 0 ? ld_relaxed_dev(k.seen) : 0ull, 0);

		if (item < s + LOOKAHEAD)
			break;
		q = __shfl_sync(FULL, lane == 0 ? (int)ld_relaxed_dev(k.dquit) : 0, 0);
		if (q)
			break;
		__nanosleep(item - s > 2 * LOOKAHEAD ? 1000 : 100);
	}
	uint64_t t_obs = 0, t_pre = 0, clk = 0, nc = 0, ptag = 0;

	while (!q) {
		uint64_t a, b, g0 = gtimer(), g1;

		ld_status_line(&k.status[slot], lane, a, b);
		/* lane 0's a is v | nc << 32, v never all ones (lane 1's is seq) */
		g1 = gtimer_after(lane & 1 ? 0u : (uint32_t)a);
		uint64_t vnc = __shfl_sync(FULL, a, 0), c = __shfl_sync(FULL, b, 0);
		uint64_t sq = __shfl_sync(FULL, a, 1), pt = __shfl_sync(FULL, b, 1);

		if ((uint32_t)vnc == VFGX_COMM_READY && sq == item &&
		    pt >> VFGX_COMM_TAG_SHIFT == (item & 0xffffu)) {
			t_pre = __shfl_sync(FULL, g0, 0);
			t_obs = __shfl_sync(FULL, g1, 0);
			clk = c;
			nc = vnc >> 32;
			ptag = pt;
			break;
		}
		if ((++spins & 15) == 0) {
			q = __shfl_sync(FULL, lane == 0 ? (int)ld_quit(k.quit) : 0, 0);
			if (q && lane == 0)
				st_release_dev(k.dquit, 1);
		}
	}
	/* the test seam: spin here for good (the block's other warps wait at
	 * the barrier after this) */
	while (!q && k.test_wedge && item + 1 == k.test_wedge)
		__nanosleep(1000000);
	if (lane != 0)
		return;
	if (q) {
		*quit = 1;
		return;
	}
	/* weak posted writes; ordered before DONE */
	k.seen_ns[4 * slot] = t_obs;
	k.seen_ns[4 * slot + 1] = t_pre;
	k.seen_ns[4 * slot + 2] = clk;
	*n_sh = (uint32_t)(nc & 0xffffu);
	*cmd_sh = (uint32_t)(nc >> 16) & 0xffu;
	*rec_sh = (nc >> 24) & 1 ? VFGX_COMM_PKT_RECORDS : 0;
	*pkts_sh = (const void *)(uintptr_t)(ptag & VFGX_COMM_PTR_MASK);
	/* throttles the pollers only: no data hangs on it */
	atomicMax((ull *)k.seen, (ull)(item + 1));
}
#endif

#if VFGX_LOCAL_B
/* -Dgpu_local_b: phase B's window state stays on LOCAL_B_BLOCKS
 * multiprocessors.  The last LOCAL_B_BLOCKS blocks take no items: warp w
 * of owner block o runs group o * WARPS + w for every item, in item order
 * (no ticket handed between multiprocessors through L2: the order is the
 * warp's own loop), while the other blocks take the items (poll, phase A,
 * counters, DONE).  An item's block publishes its header and group mask
 * and releases aready; each owner warp acquires it, runs its group, adds
 * its counters to the GPU-memory ones and releases bdone (+1); the item's
 * block waits for all of them before its counters and DONE, so DONE's
 * release covers the owners' writes.  Not with chunks (phase C's deferred
 * lists are the item block's) nor with LOCAL_B_BLOCKS blocks or fewer:
 * the ticket path then, decided per launch. */
__device__ __forceinline__ bool local_b_on(const kparams &k)
{
	return gridDim.x > LOCAL_B_BLOCKS && !k.ch.on;
}

/* An owner warp: group g for every item; returns on quit.  wcnt: the
 * warp's own counters (shared memory). */
__device__ void local_b_owner(const kparams &k, ull *wcnt, uint32_t g, uint32_t lane)
{
	if (lane < GPUK_NCNT)
		wcnt[lane] = 0;
	__syncwarp();
	for (uint64_t item = 0;; item++) {
		uint32_t slot = (uint32_t)(item % k.nb_items);
		int q = 0;

		if (lane == 0) {
			uint32_t spins = 0;

			while (ld_acquire_dev(&k.aready[slot]) != item + 1) {
				if ((++spins & 255) == 0 && ld_relaxed_dev(k.dquit)) {
					q = 1;
					break;
				}
				__nanosleep(32);
			}
		}
		if (__shfl_sync(FULL, q, 0))
			return;
		__syncwarp();
		uint64_t h0 = __ldcg(&k.bhdr[2 * (size_t)slot]);
		uint64_t gm = __ldcg(&k.bhdr[2 * (size_t)slot + 1]);
		uint32_t n = (uint32_t)h0, cmd = (uint32_t)(h0 >> 32);
		ull full = cmd == VFGX_COMM_CMD_BURST ? (k.to_b ? gm : 0) : ~0ull;

		if ((full >> g) & 1)
			phase_b_group(k, wcnt, slot, item, n, cmd, g, lane, NULL, true);
		__syncwarp();
		if (lane < GPUK_NCNT) {
			ull v = wcnt[lane];

			if (v)
				atomicAdd(&k.cnt[lane], v);
			wcnt[lane] = 0;
		}
		/* the lanes' counters and window writes before the release */
		__syncwarp();
		if (lane == 0) {
			cuda::atomic_ref<uint64_t, cuda::thread_scope_device> a(k.bdone[slot]);

			a.fetch_add(1, cuda::memory_order_release);
		}
	}
}

/* The item's block: hand the item to the owners and wait for them
 * (thread 0); 1 when told to quit while waiting. */
__device__ int local_b_item(const kparams &k, uint64_t item, uint32_t slot, uint32_t n,
			    uint32_t cmd, ull gmask)
{
	uint64_t want = (item / k.nb_items + 1) * (uint64_t)(LOCAL_B_BLOCKS * WARPS);
	uint32_t spins = 0;

	k.bhdr[2 * (size_t)slot] = n | (uint64_t)cmd << 32;
	k.bhdr[2 * (size_t)slot + 1] = gmask;
	/* phase A's results (the block's, before the caller's barrier) and
	 * the header before aready */
	st_release_dev(&k.aready[slot], item + 1);
	while (ld_acquire_dev(&k.bdone[slot]) < want) {
		if ((++spins & 255) == 0 &&
		    (ld_relaxed_dev(k.dquit) || ((spins & 65535) == 0 && ld_quit(k.quit))))
			return 1;
	}
	return 0;
}
static_assert(GPUK_NCNT <= 32, "an owner warp's lanes flush its counters");
static_assert(LOCAL_B_BLOCKS * WARPS == GPUK_GROUPS, "one group an owner warp");
#endif

#if VFGX_DONE_COUNTERS
/* -Dgpu_done_counters: the block's counters of the item written into its
 * slot's words in pinned memory (one coalesced write, every word, zeros
 * too, so nothing of the slot's previous item stays) instead of atomics
 * on the GPU-memory counters; the DONE store after the caller's barrier
 * orders them before DONE (commlist.h), and the CPU adds them up when it
 * reaps the item.  After the caller's barrier (the block's counts are
 * in), by warp 0 alone, whose __syncwarp lets thread 0's DONE cover the
 * lanes' writes: no second block barrier (the other warps' next shared
 * writes come after the next item's barrier). */
__device__ void publish_counters(const kparams &k, ull *cnt, uint32_t slot)
{
	if (threadIdx.x >= 32)
		return;
	if (threadIdx.x < GPUK_NCNT) {
		k.done_cnt[(size_t)slot * VFGX_COMM_DONE_CNT + threadIdx.x] = cnt[threadIdx.x];
		cnt[threadIdx.x] = 0;
	}
	__syncwarp();
}
static_assert(GPUK_NCNT <= VFGX_COMM_DONE_CNT && GPUK_NCNT <= 32,
	      "counters fit a slot's words and warp 0");
#endif
#if VFGX_USER_PLACE_LINK
extern "C" /* found by name in the image linked with user_place */
#endif
__global__ void __launch_bounds__(THREADS) kernel_persistent(const __grid_constant__ kparams k)
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
	/* chunks: each warp's deferred copies and publications (phase C);
	 * quit_c: set in phase C, read after its barriers */
	__shared__ uint32_t ncp_sh[WARPS], npb_sh[WARPS];
	__shared__ int quit_c;
	uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	uint32_t nb_a = gridDim.x; /* blocks that take items */

	if (threadIdx.x == 0) {
		quit = 0;
		quit_b = 0;
		quit_c = 0;
		gmask = 0;
	}
	zero_counters(cnt);
#if VFGX_LOCAL_B
	if (local_b_on(k)) {
		/* each owner warp's counters (block counters stay unused) */
		__shared__ ull wcnt[WARPS][GPUK_NCNT];

		nb_a = gridDim.x - LOCAL_B_BLOCKS;
		if (blockIdx.x >= nb_a) {
			local_b_owner(k, wcnt[warp], (blockIdx.x - nb_a) * WARPS + warp, lane);
			return;
		}
	}
#endif
	for (uint64_t item = blockIdx.x;; item += nb_a) {
		uint32_t slot = (uint32_t)(item % k.nb_items);
#if VFGX_ITEM_STAMPS
		uint64_t t_a = 0, t_b = 0;
#endif

#if VFGX_ITEM_INLINE
		if (warp == 0)
			poll_item_inline(k, item, slot, lane, &quit, &n_sh, &cmd_sh, &rec_sh,
					 &pkts_sh);
#else
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
			uint64_t w0[GPUK_POLL_DEPTH], w1[GPUK_POLL_DEPTH], gs[GPUK_POLL_DEPTH];
			bool seen = false;

			/* GPUK_POLL_DEPTH 16-byte loads of the status line (status
			 * and the CPU clock beside it) in flight, issued about
			 * GPUK_POLL_GAP_NS apart (gpu_iface.h says why one).
			 * Each load is bracketed by %globaltimer just before it
			 * was issued and just after its value was tested. */
#pragma unroll
			for (int d = 0; d < GPUK_POLL_DEPTH; d++) {
				gs[d] = gtimer();
				ld_status_clock(&k.status[slot], w0[d], w1[d]);
				while (gtimer() - gs[d] < GPUK_POLL_GAP_NS)
					;
			}
			while (!seen && !quit) {
#pragma unroll
				for (int d = 0; d < GPUK_POLL_DEPTH; d++) {
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
			/* the test seam: spin here for good (the block's other
			 * threads wait at the barrier below) */
			while (!quit && k.test_wedge && item + 1 == k.test_wedge)
				__nanosleep(1000000);
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
#endif
		__syncthreads();
		if (quit)
			return;
		/* phase A: each warp takes chunks of 32 packets */
		KP_START(kp_a);
		if (cmd_sh == VFGX_COMM_CMD_BURST)
			phase_a_chunks(k, cnt, &gmask, slot, pkts_sh, rec_sh, n_sh, warp, WARPS,
				       lane);
		__syncthreads();
		if (threadIdx.x == 0)
			KP_END(KP_PHASE_A, kp_a);
#if VFGX_ITEM_STAMPS
		if (threadIdx.x == 0)
			t_a = gtimer();
#endif
#if VFGX_LOCAL_B
		if (nb_a != gridDim.x) {
			/* phase B on the owner blocks (local_b_owner) */
			if (threadIdx.x == 0 &&
			    local_b_item(k, item, slot, n_sh, cmd_sh, gmask))
				quit_b = 1;
		} else
#endif
		{
			/* this warp's groups with nothing to do pass their
			 * tickets on at once; the others run in turn */
			ull full = cmd_sh == VFGX_COMM_CMD_BURST ? (k.to_b ? gmask : 0) : ~0ull;
			uint32_t busy8 = 0;
			struct kc_defer df;
			bool ok;

			kc_defer_init(k, df, item, warp);
			for (uint32_t j = 0; j < GPUK_GROUPS / WARPS; j++)
				busy8 |= (uint32_t)((full >> (warp + WARPS * j)) & 1) << j;
			ok = pass_empty_groups(k, item, warp,
					       ~busy8 & ((1u << (GPUK_GROUPS / WARPS)) - 1), lane);
			for (uint32_t j = 0; ok && j < GPUK_GROUPS / WARPS; j++) {
				if (!((busy8 >> j) & 1))
					continue;
				ok = phase_b_group(k, cnt, slot, item, n_sh, cmd_sh,
						   warp + WARPS * j, lane, k.ch.on ? &df : NULL,
						   false);
			}
			if (!ok && lane == 0)
				atomicExch(&quit_b, 1);
			if (lane == 0) {
				ncp_sh[warp] = df.ncp;
				npb_sh[warp] = df.npb;
			}
		}
		__syncthreads();
		if (k.ch.on && !quit_b)
			kc_phase_c(k, item, ncp_sh, npb_sh, &quit_c, warp, lane);
#if VFGX_ITEM_STAMPS
		if (threadIdx.x == 0)
			t_b = gtimer();
#endif
#if VFGX_DONE_COUNTERS
		/* quit_b and quit_c are read after a barrier: a block that
		 * quits adds what it counted to the GPU-memory counters, as
		 * without the option, and the item is not DONE */
		__syncthreads();
		if (quit_b || quit_c) {
			flush_counters(k, cnt);
			return;
		}
		publish_counters(k, cnt, slot);
#else
		flush_counters(k, cnt);
		if (quit_b || quit_c)
			return;
#endif
		if (threadIdx.x == 0) {
			gmask = 0;
#if VFGX_ITEM_STAMPS
			/* weak posted writes, ordered before DONE */
			k.stamps[4 * slot] = t_a;
			k.stamps[4 * slot + 1] = t_b;
			k.stamps[4 * slot + 2] = gtimer();
#endif
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
	bool resident; /* counted in gpu_resident.c until seen to end */
	uint32_t grid_a, grid_b, blocks;
	ull *cnt_host;
	char name[256];
	void *allocs[32];
	int nb_allocs;
	void *hallocs[8];
	int nb_hallocs;
	/* user_place: the persistent kernel linked with the user's function */
	cudaLibrary_t place_lib;
	cudaKernel_t place_kernel;
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
	/* on the kernels' stream: a cudaMemset on the legacy default stream
	 * is not ordered before a cudaStreamNonBlocking stream's kernels, and
	 * could zero item 0's counters after kernel_a added them;
	 * gpuk_create waits for the stream before it returns */
	e = cudaMemsetAsync(*p, 0, size, g->stream);
	return e == cudaSuccess ? 0 : cuerr(err, len, "cudaMemsetAsync", e);
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

/* user_place: link the persistent kernel's relocatable image with the
 * user's function for this GPU (gpu_place_link.c) and load it; gpuk_start
 * launches that kernel instead of the one built in. */
static int place_load(struct gpuk *g, const struct gpuk_conf *c, const cudaDeviceProp &prop,
		      char *err, size_t errlen)
{
	void *cubin = NULL;
	size_t size = 0;
	cudaError_t e;
	int ret;

	if (c->o.mode != 0) {
		snprintf(err, errlen, "pipeline.format.user_place runs in the persistent kernel; set pipeline.gpu.mode: persistent");
		return -EINVAL;
	}
	ret = vfgx_place_link(c->place_module, c->place_symbol, prop.major, prop.minor,
			      &cubin, &size, err, errlen);
	if (ret)
		return ret;
	e = cudaLibraryLoadData(&g->place_lib, cubin, NULL, NULL, 0, NULL, NULL, 0);
	free(cubin);
	if (e != cudaSuccess)
		return cuerr(err, errlen, "pipeline.format.user_place: loading the linked kernel", e);
	e = cudaLibraryGetKernel(&g->place_kernel, g->place_lib, "kernel_persistent");
	if (e != cudaSuccess)
		return cuerr(err, errlen, "pipeline.format.user_place: the linked kernel", e);
	/* loaded now, not at the launch (CUDA's lazy loading) */
	struct cudaFuncAttributes fa;

	e = cudaFuncGetAttributes(&fa, (const void *)g->place_kernel);
	return e == cudaSuccess ? 0 : cuerr(err, errlen, "pipeline.format.user_place: the linked kernel", e);
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
	if (vfgx_gpu_resident()) {
		free(g);
		snprintf(err, errlen, "a device: gpu pipeline is already running in this process and CUDA would wait for its persistent kernel; create this one before starting that one, or after stopping it");
		return -EBUSY;
	}
	kparams &k = g->k;
	g->c = *c;
	if ((e = cudaSetDevice((int)c->o.gpu_id)) != cudaSuccess ||
	    (e = cudaGetDeviceProperties(&prop, (int)c->o.gpu_id)) != cudaSuccess) {
		free(g);
		return cuerr(err, errlen, "cudaSetDevice", e);
	}
	cudaDeviceGetAttribute(&can_host_ptr,
			       cudaDevAttrCanUseHostPointerForRegisteredMem,
			       (int)c->o.gpu_id);
	if (!can_host_ptr) {
		free(g);
		snprintf(err, errlen, "%s cannot use host pointers of pinned memory directly (no unified addressing); this GPU data plane needs it",
			 prop.name);
		return -ENOTSUP;
	}
	snprintf(g->name, sizeof(g->name), "%s", prop.name);
	g->list.nb_items = c->o.mode == 2 ? 2 * c->o.graph_items : c->o.items;
	g->list.burst = c->o.burst;
	k.nb_items = g->list.nb_items;
	k.burst = c->o.burst;
	k.nb_streams = c->o.queues * c->max_streams;
	k.max_streams = c->max_streams;
	k.window = c->reorder ? c->window : 1;
	k.slot = c->slot;
	k.reorder = c->reorder && !c->ch.on;
	k.ch = c->ch;
	k.to_b = k.reorder || c->ch.on;
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
	if ((ret = halloc(g, &h, &d, sizeof(struct vfgx_comm_pkt) * k.nb_items * c->o.burst, err, errlen)))
		goto fail;
	g->list.pkts = (struct vfgx_comm_pkt *)h;
	g->list.pkts_dev = (struct vfgx_comm_pkt *)d;
	for (uint32_t i = 0; i < k.nb_items; i++)
		g->list.items[i].pkts = g->list.pkts_dev + (size_t)i * c->o.burst;
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
	/* #40's options (persistent mode): stamps, counters with DONE */
	if ((ret = halloc(g, &h, &d, 4 * sizeof(uint64_t) * k.nb_items, err, errlen)))
		goto fail;
	g->list.stamps = (volatile uint64_t *)h;
	k.stamps = (uint64_t *)d;
	if ((ret = halloc(g, &h, &d, VFGX_COMM_DONE_CNT * sizeof(uint64_t) * k.nb_items, err,
			  errlen)))
		goto fail;
	g->list.done_cnt = (volatile uint64_t *)h;
	k.done_cnt = (uint64_t *)d;
	if (c->o.mode == 0)
		g->list.features = (VFGX_ITEM_STAMPS ? VFGX_COMM_F_STAMPS : 0) |
				   (VFGX_DONE_COUNTERS ? VFGX_COMM_F_DONE_COUNTERS : 0) |
				   (VFGX_ITEM_INLINE ? VFGX_COMM_F_INLINE : 0);
	/* the owner blocks (VFGX_LOCAL_B, local_b_on) are known once the
	 * grid is: below */
	/* GPU memory: results, tickets, counters, reorder windows, log */
	if ((ret = dalloc(g, (void **)&k.res, sizeof(struct res) * k.nb_items * c->o.burst, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.tickets, sizeof(uint64_t) * GPUK_GROUPS * TICKET_STRIDE, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.seen, 2 * sizeof(uint64_t), err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.grp, (size_t)k.nb_items * c->o.burst + 32, err, errlen)) ||
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
	    (ret = dalloc(g, (void **)&k.log, sizeof(struct gpuk_delivery) * c->o.log_records, err, errlen)))
		goto fail;
	if (c->ch.on &&
	    ((ret = dalloc(g, (void **)&k.kcs, sizeof(struct kc_stream) * c->ch.streams, err, errlen)) ||
	     (ret = dalloc(g, (void **)&k.kcsl, sizeof(struct kc_slot) * c->ch.streams *
						 (size_t)c->ch.in_flight, err, errlen))))
		goto fail;
	if (c->o.stage_copy &&
	    (ret = dalloc(g, (void **)&k.stage, (size_t)k.nb_items * c->o.burst * GPUK_STAGE_MAX, err, errlen)))
		goto fail;
	if (c->fmt_on) {
		/* the description in GPU memory (the kernels read it as the
		 * cpu engine does), one extension state per stream */
		struct vfgx_format *fd;

		k.nb_fseq = k.nb_streams;
		/* RTP without stream_ids learns the SSRCs (proc.c's rule);
		 * chunks by bytes decode each record again in phase B */
		k.learn = vfgx_fmt_learns(&c->fmt);
		k.fmt_raw = c->ch.on && c->ch.by_bytes;
		if ((ret = dalloc(g, (void **)&fd, sizeof(*fd), err, errlen)) ||
		    (ret = dalloc(g, (void **)&k.fseq, sizeof(*k.fseq) * k.nb_fseq, err, errlen)) ||
		    /* records' header fields beyond struct res: read by
		     * chunks and by learning only (reorder has none to read,
		     * so phase A writes none) */
		    ((c->ch.on || k.learn) &&
		     (ret = dalloc(g, (void **)&k.fres,
				   sizeof(struct kfres) * k.nb_items * c->o.burst, err, errlen))) ||
		    (k.learn && (ret = dalloc(g, (void **)&k.learned,
					      sizeof(uint64_t) * k.max_streams, err, errlen))) ||
		    /* by offset or lines phase A places each record too */
		    (k.fmt_raw &&
		     (c->fmt.place == VFGX_FMT_PLACE_OFFSET || c->fmt.place == VFGX_FMT_PLACE_LINES) &&
		     (ret = dalloc(g, (void **)&k.fpl,
				   sizeof(struct kfplace) * k.nb_items * c->o.burst, err, errlen))))
			goto fail;
		if ((e = cudaMemcpyAsync(fd, &c->fmt, sizeof(*fd), cudaMemcpyHostToDevice,
					 g->stream))) {
			ret = cuerr(err, errlen, "cudaMemcpyAsync", e);
			goto fail;
		}
		k.fmt = fd;
		vfgx_fmt_plan_make(&c->fmt, &k.fplan);
	}
	/* -Dgpu_local_b (gpu_proc.cu's local_b_owner) */
	if ((ret = dalloc(g, (void **)&k.aready, sizeof(uint64_t) * k.nb_items, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.bdone, sizeof(uint64_t) * k.nb_items, err, errlen)) ||
	    (ret = dalloc(g, (void **)&k.bhdr, 2 * sizeof(uint64_t) * k.nb_items, err, errlen)))
		goto fail;
	k.dquit = k.seen + 1;
	k.user.nb_flows = k.nb_streams;
	k.user.enabled = c->o.user == 1;
	k.log_cap = c->o.log_records;
	k.test_wedge = c->test_wedge;
	g->grid_a = (c->o.burst + WARPS - 1) / WARPS;
	g->grid_b = GPUK_GROUPS / WARPS;
	g->blocks = c->o.blocks ? c->o.blocks : (uint32_t)prop.multiProcessorCount;
	/* A persistent block takes a whole SM (512 threads x 128 registers):
	 * with chunks, whose consumers run their own kernels on them (a
	 * CUDA stream waiting for a chunk, user.gpu_module, cuFFT), an eighth
	 * of the SMs (at least 2) is left free unless blocks says otherwise,
	 * or those kernels would wait for the persistent one, which waits
	 * for them to give the chunks back. */
	if (c->o.mode == 0 && !c->o.blocks && c->ch.on) {
		uint32_t spare = g->blocks / 8 > 2 ? g->blocks / 8 : 2;

		g->blocks = g->blocks > spare ? g->blocks - spare : 1;
	}
	if (c->place_module && (ret = place_load(g, c, prop, err, errlen)))
		goto fail;
	if (c->o.mode == 0) {
		/* every block of the persistent kernel must be resident at
		 * once: a block not yet scheduled would hold up the items
		 * after it forever */
		int per_sm = 0;

		e = g->place_kernel ?
			cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm,
				(const void *)g->place_kernel, THREADS, 0) :
			cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_persistent,
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
	if (c->o.mode == 0 && VFGX_LOCAL_B && g->blocks > LOCAL_B_BLOCKS && !c->ch.on)
		g->list.features |= VFGX_COMM_F_LOCAL_B;
	/* persistent chunks: the warps' deferred lists (gpu_chunks.cuh) */
	if (c->o.mode == 0 && c->ch.on &&
	    ((ret = dalloc(g, (void **)&k.kcp, sizeof(struct kc_cp) * g->blocks * WARPS *
						  (size_t)KC_CP_CAP, err, errlen)) ||
	     (ret = dalloc(g, (void **)&k.kpb, sizeof(struct kc_pb) * g->blocks * WARPS *
						  (size_t)KC_PB_CAP, err, errlen)) ||
	     (ret = dalloc(g, (void **)&k.pub_ticket, sizeof(uint64_t), err, errlen))))
		goto fail;
	/* the zeroing and the format copy land before any launch */
	if ((e = cudaStreamSynchronize(g->stream))) {
		ret = cuerr(err, errlen, "cudaStreamSynchronize", e);
		goto fail;
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

	if (g->c.o.mode == 0) {
		/* counted before the launch: from here CUDA frees are queued */
		vfgx_gpu_resident_add(1);
		g->resident = true;
		if (g->place_kernel) {
			/* user_place: the kernel linked with the user's function */
			void *args[] = { &g->k };

			e = cudaLaunchKernel((const void *)g->place_kernel, dim3(g->blocks),
					     dim3(THREADS), args, 0, g->stream);
			g->launched = true;
			return e == cudaSuccess ? 0 : cuerr(err, errlen, "persistent kernel launch", e);
		}
		kernel_persistent<<<g->blocks, THREADS, 0, g->stream>>>(g->k);
		g->launched = true;
		e = cudaGetLastError();
		return e == cudaSuccess ? 0 : cuerr(err, errlen, "persistent kernel launch", e);
	}
	if (g->c.o.mode == 2) {
		for (int h = 0; h < 2; h++) {
			cudaGraph_t graph;

			e = cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal);
			if (e != cudaSuccess)
				return cuerr(err, errlen, "cudaStreamBeginCapture", e);
			for (uint32_t i = 0; i < g->c.o.graph_items; i++)
				launch_item(g, h * g->c.o.graph_items + i);
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

	if (g->c.o.mode == 1)
		launch_item(g, slot);
	else if (g->c.o.mode == 2)
		cudaGraphLaunch(g->graph[slot / g->c.o.graph_items], g->stream);
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
	if (g->c.o.mode == 0 && g->launched) {
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

		if (e != cudaErrorNotReady) {
			if (g->resident)
				vfgx_gpu_resident_add(-1);
			g->resident = false;
			return 0;
		}
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

#if VFGX_CHUNK_PROF
/* -Dgpu_chunk_prof: the run's sums (cycles at the SM clock, counts), then
 * zeroed for the next processor */
static void kprof_print(void)
{
	static const char *const name[KP_N] = {
		"turn wait", "extension", "chunk group", "byte runs", "byte run calls",
		"byte run packets", "bytes one by one", "one by one calls", "slot open",
		"settle", "publish", "deliver one", "C copy (warps)", "C chain",
		"C publish", "phase A", "slot runs", "slot run calls", "slot one by one",
		"slot one calls", "drain", "items", "C bytes", "inline copies",
		"bytes before open", "bytes open to settle", "slot place before open",
		"slot place open", "slot place open to settle", "slot place settle",
		"reorder walk", "reorder batches", "reorder extension", "reorder one by one",
		"reorder records one by one", "byte run loads", "byte run placement",
		"byte run writes", "byte run counts", "byte run settle",
	};
	unsigned long long v[KP_N] = { 0 };
	int khz = 0;

	if (cudaMemcpyFromSymbol(v, g_kprof, sizeof(v)) != cudaSuccess)
		return;
	cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
	fprintf(stderr, "vfgx: chunk prof (SM clock %d MHz; cycles, or counts):", khz / 1000);
	for (int i = 0; i < KP_N; i++)
		fprintf(stderr, " %s %llu;", name[i], v[i]);
	fprintf(stderr, "\n");
	memset(v, 0, sizeof(v));
	cudaMemcpyToSymbol(g_kprof, v, sizeof(v));
}
#endif

extern "C" void gpuk_destroy(struct gpuk *g)
{
	if (!g)
		return;
#if VFGX_CHUNK_PROF
	if (g->launched && cudaStreamQuery(g->stream) != cudaErrorNotReady)
		kprof_print();
#endif
	if (g->launched && g->failed && cudaStreamQuery(g->stream) == cudaErrorNotReady) {
		/* a kernel that ignored the quit flag: freeing would block on it;
		 * process exit releases the memory */
		free(g);
		return;
	}
	for (int h = 0; h < 2; h++)
		if (g->graph_ok[h])
			cudaGraphExecDestroy(g->graph[h]);
	if (g->resident && cudaStreamQuery(g->stream) != cudaErrorNotReady)
		vfgx_gpu_resident_add(-1);
	/* queued while another pipeline's persistent kernel runs */
	for (int i = 0; i < g->nb_allocs; i++)
		vfgx_gpu_release(VFGX_GPU_FREE_DEVICE, g->allocs[i], 0);
	for (int i = 0; i < g->nb_hallocs; i++)
		vfgx_gpu_release(VFGX_GPU_FREE_HOST, g->hallocs[i], 0);
	if (g->stream)
		cudaStreamDestroy(g->stream);
	if (g->stats_stream)
		cudaStreamDestroy(g->stats_stream);
	if (g->place_lib)
		cudaLibraryUnload(g->place_lib);
	free(g);
}
