/* commlist.h - the CPU<->GPU communication list: a ring of items, each a
 * burst of packet descriptors plus a status word.  Plain C shared by gcc
 * (the producer, src/pipeline/commlist.c) and nvcc (the consumer,
 * src/pipeline/gpu_proc.cu).
 *
 * Life of an item (slot = item number % nb_items):
 *
 *   CPU                                   GPU
 *   wait status == FREE (load-acquire)
 *   write pkts[], nb_pkts, cmd, seq
 *   status = READY (store-release)  --->  observe READY (ld.acquire.sys)
 *                                         read pkts[] (pinned, in place)
 *                                         run the stages, reduce counters
 *                                         __syncthreads()
 *   observe DONE/ERROR (load-acquire) <-  status = DONE (st.release.sys)
 *   release the packets, status = FREE
 *
 * Memory ordering, as in DPDK's rte_gpu_comm_list: the CPU's descriptor
 * stores must be visible before READY; x86 stores are ordered (TSO) but the
 * compiler is not, so READY is a C11 store-release.  The GPU reads READY
 * with a system-scope acquire load, after which its reads of the descriptors
 * (pinned host memory, read over PCIe) cannot be served from stale copies.
 * Before DONE the block synchronizes (__syncthreads) and one thread stores
 * DONE with st.release.sys, i.e. fence.acq_rel.sys + store, which is
 * cumulative over the block's writes (counters, reorder buffer, log); the
 * CPU's load-acquire of DONE then orders its later reads.  Only the CPU writes FREE/READY and
 * only the GPU writes DONE/ERROR, so no read-modify-write is needed.
 *
 * Placement: the status words would best live in GPU memory mapped for the
 * CPU (GDRCopy's gdrapi); Debian packages no GDRCopy, so they live in
 * pinned host memory (cudaHostAlloc, mapped), each on its own 64-byte line
 * so CPU writes of one item and GPU writes of the next never share a line.
 * The descriptor arrays are pinned host memory too.
 */
#ifndef VFGX_COMMLIST_H
#define VFGX_COMMLIST_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vfgx_comm_status {
	VFGX_COMM_FREE = 0,
	VFGX_COMM_READY = 1,
	VFGX_COMM_DONE = 2,
	VFGX_COMM_ERROR = 3,
};

enum vfgx_comm_cmd {
	VFGX_COMM_CMD_BURST = 0, /* process nb_pkts packets */
	VFGX_COMM_CMD_FLUSH = 1, /* end of input: drain the reorder windows */
	VFGX_COMM_CMD_RESET = 2, /* forget all stream state (windows emptied) */
	VFGX_COMM_CMD_TICK = 3,  /* chunks: release those past timeout_ms */
};
#define VFGX_COMM_CMD_MASK 0xffffu
/* cmd bit: pkts points at struct vfgx_pkt records (40 bytes: data at 0,
 * len at 8, queue and flags at 32, pinned host memory written by the
 * port's rx_burst) instead of vfgx_comm_pkt descriptors; the runner hands
 * its rx arrays over with no copy. */
#define VFGX_COMM_PKT_RECORDS 0x10000u

/* One packet: addr is readable by the GPU (device memory, or pinned host
 * memory through its device mapping). 24 bytes. */
struct vfgx_comm_pkt {
	uint64_t addr;
	uint32_t len;
	uint16_t queue; /* stream space: stream index = queue * max_streams + id */
	uint16_t flags; /* VFGX_PKT_GPU, VFGX_PKT_PAYLOAD */
	uint64_t ts_ns;
};

/* Item header; the status word is kept apart (see above). */
struct vfgx_comm_item {
	uint64_t seq;          /* item number; the GPU checks it */
	uint32_t nb_pkts;
	uint32_t cmd;
	struct vfgx_comm_pkt *pkts; /* device view of this item's descriptors */
	uint64_t pad[5];       /* the GPU writes nothing here */
};

/* v, and beside it in the same 16 bytes a CPU clock (vfgx_now_ns()) that a
 * measuring producer keeps rewriting while it waits for the item (0
 * otherwise): the GPU reads both in one 16-byte load (hand-off bounds
 * with no clock model, bench/e2e_handoff.c).
 *
 * The item's header rides in the same line (#40, read by kernels built
 * with -Dgpu_item_inline, one 32-byte load for status and header):
 * nc is nb_pkts | cmd << 16 | records << 24 (vfgx_comm_nc), stored with v
 * as one 64-bit store-release, so a v of READY comes with its own nc;
 * seq and pkts_tag (pkts | (seq & 0xffff) << 48) are stored before it,
 * and each carries the item number, so a reader that loads them with v
 * in any order takes them only when both name the item it waits for
 * (a line still holding an earlier item of the slot is never mistaken
 * for it). */
struct vfgx_comm_status_word {
	uint32_t v;
	uint32_t nc;
	uint64_t clock;
	uint64_t seq;
	uint64_t pkts_tag;
	uint32_t pad[8];
} __attribute__((aligned(64)));

#define VFGX_COMM_TAG_SHIFT 48
#define VFGX_COMM_PTR_MASK ((1ull << VFGX_COMM_TAG_SHIFT) - 1)

/* The status line's nc word: nb_pkts (at most 65535), the command, the
 * VFGX_COMM_PKT_RECORDS bit. */
static inline uint32_t vfgx_comm_nc(uint32_t nb_pkts, uint32_t cmd)
{
	return (nb_pkts & 0xffffu) | (cmd & 0xffu) << 16 |
	       ((cmd & VFGX_COMM_PKT_RECORDS) ? 1u << 24 : 0u);
}

/* Host and device views of the same pinned allocations. */
struct vfgx_comm_list {
	uint32_t nb_items;
	uint32_t burst;
	struct vfgx_comm_item *items;           /* host view */
	struct vfgx_comm_item *items_dev;       /* device view */
	struct vfgx_comm_pkt *pkts;             /* host view, nb_items * burst */
	struct vfgx_comm_pkt *pkts_dev;
	struct vfgx_comm_status_word *status;   /* host view */
	struct vfgx_comm_status_word *status_dev;
	volatile uint32_t *quit;                /* host view of the quit flag */
	uint32_t *quit_dev;
	/* persistent mode: per slot 4 words, written before DONE (host view):
	 * the GPU's %globaltimer (ns) just after and just before the 16-byte
	 * load of the status line that returned READY, and the CPU clock that
	 * load returned */
	volatile uint64_t *seen_ns;
	/* -Dgpu_item_stamps (persistent): per slot 4 words written before
	 * DONE, the %globaltimer at the end of phase A, the end of phase B
	 * (and C) and just before DONE (host view) */
	volatile uint64_t *stamps;
	/* -Dgpu_done_counters (persistent): per slot VFGX_COMM_DONE_CNT
	 * words, the item's counter increments (gpu_iface.h's GPUK_C_*),
	 * written before DONE; the CPU adds them up when it reaps DONE */
	volatile uint64_t *done_cnt;
	/* what the kernels were built with (VFGX_COMM_F_*) */
	uint32_t features;
};

#define VFGX_COMM_DONE_CNT 32
enum {
	VFGX_COMM_F_STAMPS = 1u << 0,        /* -Dgpu_item_stamps */
	VFGX_COMM_F_DONE_COUNTERS = 1u << 1, /* -Dgpu_done_counters */
	VFGX_COMM_F_INLINE = 1u << 2,        /* -Dgpu_item_inline */
	VFGX_COMM_F_LOCAL_B = 1u << 3,       /* -Dgpu_local_b */
};

#ifdef __cplusplus
}
#endif
#endif
