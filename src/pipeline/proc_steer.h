/* proc_steer.h - what the threaded runner (runner.c) tells a processor so
 * that every stream is reordered and delivered by one worker: the shared
 * stream-owner table, the hand-over to another worker, the shared count of
 * reorder memory.  Not public: vfgx_proc alone never needs it. */
#ifndef VFGX_PROC_STEER_H
#define VFGX_PROC_STEER_H

#include <stdatomic.h>

#include <vfgx/bench.h> /* what vfgx-bench may call: exported */
#include <vfgx/pipeline.h>

/* A record for the worker that owns its stream (payload after the app
 * header, at most reorder_slot bytes). */
/* Inbox bytes beyond a slot: a format's packet goes over with its
 * header (the owner decodes it). */
#define VFGX_HANDOFF_HEADROOM 256

struct vfgx_handoff {
	uint32_t stream;
	uint32_t flags;
	uint64_t seq;
	uint32_t len;
	const uint8_t *body;
};

struct vfgx_steer {
	/* per stream id: 0 unclaimed, else owning worker + 1; a claim is a
	 * compare-and-swap from 0 and never changes afterwards */
	_Atomic uint16_t *owner;
	uint16_t self;
	/* copy h to worker `to`; called on this worker's thread */
	void (*hand)(void *user, uint16_t to, const struct vfgx_handoff *h);
	void *user;
	_Atomic uint64_t *mem_used; /* reorder bytes of all workers */
};

void vfgx_proc_set_steer(vfgx_proc *p, const struct vfgx_steer *s);
/* On the owner: reorder a record another worker handed over. */
void vfgx_proc_take(vfgx_proc *p, const struct vfgx_handoff *h);

struct vfgx_chunkset;
/* Place records into cs's chunk slots instead of reorder windows. */
int vfgx_proc_set_chunks(vfgx_proc *p, struct vfgx_chunkset *cs);
/* RTP layouts without stream_ids (vfgx_proc): the SSRCs seen, in order
 * of arrival, shared by every worker of a pipeline (n entries: SSRC + 1,
 * 0 free).  Before the first burst. */
void vfgx_proc_share_streams(vfgx_proc *p, _Atomic uint64_t *learned, uint32_t n);
/* Release the chunks of this processor's streams that timed out. */
void vfgx_proc_tick(vfgx_proc *p, uint64_t now_ns);

#endif
