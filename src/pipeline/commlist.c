/* commlist.c - the CPU (producer) side of the communication list: fill an
 * item, publish it READY, observe DONE/ERROR, hand it back FREE.  The
 * ordering contract is written in commlist.h. */
#include <stdint.h>

#include "commlist.h"
#include "commlist_host.h"

uint32_t vfgx_comm_load(const struct vfgx_comm_list *l, uint32_t slot)
{
	/* acquire: pairs with the GPU's st.release.sys of DONE,
	 * so results the GPU wrote before DONE are visible after this. */
	return __atomic_load_n(&l->status[slot].v, __ATOMIC_ACQUIRE);
}

struct vfgx_comm_pkt *vfgx_comm_pkts(const struct vfgx_comm_list *l,
				     uint32_t slot)
{
	return l->pkts + (uint64_t)slot * l->burst;
}

void vfgx_comm_publish(struct vfgx_comm_list *l, uint32_t slot, uint64_t seq,
		       uint32_t nb_pkts, uint32_t cmd)
{
	struct vfgx_comm_item *it = &l->items[slot];
	struct vfgx_comm_status_word *w = &l->status[slot];
	uint64_t vnc = VFGX_COMM_READY | (uint64_t)vfgx_comm_nc(nb_pkts, cmd) << 32;

	it->seq = seq;
	it->nb_pkts = nb_pkts;
	it->cmd = cmd;
	/* the header's copy in the status line (commlist.h), each word
	 * naming the item */
	w->seq = seq;
	w->pkts_tag = ((uint64_t)(uintptr_t)it->pkts & VFGX_COMM_PTR_MASK) |
		      (seq & 0xffffu) << VFGX_COMM_TAG_SHIFT;
	/* release: descriptors and header above are visible before READY;
	 * v and nc in one store (v is the word's low half: x86 is little
	 * endian), so a reader of READY has this item's nc */
	__atomic_store_n((uint64_t *)(void *)&w->v, vnc, __ATOMIC_RELEASE);
	/* Not needed for ordering (x86 is TSO and cudaHostAlloc memory is
	 * write-back); it only bounds how long READY may sit in the store
	 * buffer (or a write-combining buffer, were the mapping ever WC).
	 * The ping-pong in bench/results/gpu.md measured no latency change
	 * from it (2.88 vs 3.12 us round trip): cheap, kept. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void vfgx_comm_free(struct vfgx_comm_list *l, uint32_t slot)
{
	/* release: our reads of the finished item complete before reuse */
	__atomic_store_n(&l->status[slot].v, VFGX_COMM_FREE, __ATOMIC_RELEASE);
}

void vfgx_comm_quit(struct vfgx_comm_list *l)
{
	__atomic_store_n(l->quit, 1u, __ATOMIC_RELEASE);
}
