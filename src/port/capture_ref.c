/* capture_ref.c - host packets captured by reference, on the rx queue's
 * own thread (capture_tap.h's hooks): rx records pcap's record header and
 * where each selected frame lies, in rx order, for the writer thread
 * (capture.c) to write straight from the packet's buffer.  A packet the
 * pipeline releases before the writer wrote it is held (a FIFO) and goes
 * back to its backend once the writer has passed it, however far out of
 * rx order it came back (ref_match); what the tap may hold is bounded,
 * past that rx copies into the arena (the tap's ring) or counts
 * ring_full, and a queue that finds nothing to receive copies out the
 * frames holding packets back (rescue). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "capture_ref.h"

/* A reference's tag, which rx writes into its packet's flags (the bits
 * VFGX_PKT_CAP_TAG): the low bits of its index, for the release to find
 * it again (ref_match). */
#define CAP_TAG_ONE (VFGX_PKT_CAP_TAG & -VFGX_PKT_CAP_TAG) /* the tag's lowest bit */
#define CAP_TAG_STRIDE ((uint64_t)(VFGX_PKT_CAP_TAG / CAP_TAG_ONE) + 1)

static inline uint64_t ref_tag(uint64_t ref)
{
	return ref & (CAP_TAG_STRIDE - 1);
}

/* A tap's records for host packets: references up to a sixteenth of the
 * queue's pool (the pipeline keeps the rest whatever the writer does, and
 * a source that hands its buffers out in a fixed order, the loopback
 * replay, stays far from the buffers the capture holds), 512 where the
 * port keeps its buffers itself; records for the arena's copies besides
 * (one per 256 bytes of it).  The FIFO of released packets starts at
 * twice the references and grows. */
int vfgx_cap_ref_alloc(struct vfgx_capture_tap *t, vfgx_pool *pool, uint32_t ring_bytes)
{
	uint64_t bound = 512, n = 64;

	if (pool) {
		struct vfgx_pool_stats ps;

		vfgx_pool_stats(pool, &ps);
		bound = ps.num_bufs / 16;
		if (!bound)
			bound = 1;
	}
	while (n < bound + ring_bytes / 256)
		n *= 2;
	t->nref = n;
	t->ref_bound = bound;
	t->arena_last = CAP_NONE;
	t->absorb_left = ring_bytes;
	t->held_cap = 64;
	while (t->held_cap < 2 * bound)
		t->held_cap *= 2;
	t->refs = calloc(n, sizeof(*t->refs));
	t->held = malloc(sizeof(*t->held) * t->held_cap);
	return t->refs && t->held ? 0 : -ENOMEM;
}

/* Hand the backend the held packets, oldest first, up to the first the
 * writer has not written (a reference at or past tail), in bursts. */
void vfgx_cap_held_release(struct vfgx_capture_tap *t, uint64_t tail)
{
	struct vfgx_pkt out[256];
	uint64_t mask = t->held_cap - 1;
	uint16_t k = 0;

	while (t->held_tail != t->held_head) {
		const struct cap_held *h = &t->held[t->held_tail & mask];

		if (h->ref != CAP_NONE && h->ref >= tail &&
		    __atomic_load_n(&t->refs[h->ref & (t->nref - 1)].state, __ATOMIC_RELAXED) !=
			    REF_COPIED)
			break;
		out[k++] = h->pkt;
		t->held_tail++;
		if (k == 256) {
			t->port->ops->release(t->port, t->q, out, k);
			k = 0;
		}
	}
	if (k)
		t->port->ops->release(t->port, t->q, out, k);
}

void vfgx_capture_tap_reclaim(struct vfgx_capture_tap *t)
{
	if (t->held_tail != t->held_head)
		vfgx_cap_held_release(t, __atomic_load_n(&t->rtail, __ATOMIC_ACQUIRE));
}

/* Room for a copy of cl bytes for record x in the arena (a copy lies
 * whole, so the arena's end may go unused): where, or NULL when the
 * writer has not given enough back.  Copies go in record order (the
 * writer frees the arena up to the last one it wrote). */
static uint8_t *arena_get(struct vfgx_capture_tap *t, uint64_t x, uint32_t cl, uint64_t *end)
{
	uint64_t pos = t->arena_head, at = pos & (t->size - 1);

	if (t->arena_last != CAP_NONE && x <= t->arena_last)
		return NULL;
	if (at + cl > t->size)
		pos += t->size - at;
	if (pos + cl - t->arena_tail_seen > t->size) {
		t->arena_tail_seen = __atomic_load_n(&t->arena_tail, __ATOMIC_ACQUIRE);
		if (pos + cl - t->arena_tail_seen > t->size)
			return NULL;
	}
	*end = pos + cl;
	return t->ring + (pos & (t->size - 1));
}

/* The queue found nothing to receive while it holds packets back for
 * the writer (which may be why: a source that hands its buffers out in
 * a fixed order, or a pool that ran dry): copy the frames of the oldest
 * references the writer has not claimed into the arena, in record
 * order, up to the oldest held packet's, and give back what that frees.
 * The queue's thread has nothing else to do. */
#define CAP_RESCUE_MAX 256 /* copies a call */

void vfgx_capture_tap_rescue(struct vfgx_capture_tap *t)
{
	uint64_t tail, upto = CAP_NONE, mask = t->nref - 1, x;
	uint32_t done = 0;

	if (t->held_tail == t->held_head)
		return;
	tail = __atomic_load_n(&t->rtail, __ATOMIC_ACQUIRE);
	for (uint64_t i = t->held_tail; i != t->held_head; i++) {
		const struct cap_held *h = &t->held[i & (t->held_cap - 1)];

		if (h->ref != CAP_NONE && h->ref >= tail) {
			upto = h->ref;
			break;
		}
	}
	if (upto == CAP_NONE) {
		vfgx_cap_held_release(t, tail);
		return;
	}
	x = t->rescue_at > tail ? t->rescue_at : tail;
	for (; x <= upto && done < CAP_RESCUE_MAX; x++, done++) {
		struct cap_ref *e = &t->refs[x & mask];
		uint32_t st = REF_OPEN;
		uint64_t end;
		uint8_t *dst;

		if (e->copied)
			continue;
		if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != REF_OPEN)
			break; /* the writer is on it: written soon */
		if (!(dst = arena_get(t, x, e->r.caplen, &end)))
			break;
		memcpy(dst, e->data, e->r.caplen);
		e->copy = dst;
		e->copy_end = end;
		if (!__atomic_compare_exchange_n(&e->state, &st, REF_COPIED, false,
						 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			break; /* claimed meanwhile: the copy is not used */
		t->arena_head = end;
		t->arena_last = x;
	}
	t->rescue_at = x;
	vfgx_cap_held_release(t, tail);
}

/* Hold p (reference ref) until the writer has passed it; the FIFO
 * doubles when full (at most as many packets as the queue has out). */
static void held_push(struct vfgx_capture_tap *t, const struct vfgx_pkt *p, uint64_t ref)
{
	if (t->held_head - t->held_tail == t->held_cap) {
		struct cap_held *bigger = malloc(sizeof(*bigger) * t->held_cap * 2);
		uint64_t n = t->held_head - t->held_tail;

		if (!bigger) {
			/* no memory: wait for the writer rather than let the
			 * backend reuse a buffer it has not written */
			while (t->held_head - t->held_tail == t->held_cap)
				vfgx_capture_tap_reclaim(t);
		} else {
			for (uint64_t i = 0; i < n; i++)
				bigger[i] = t->held[(t->held_tail + i) & (t->held_cap - 1)];
			free(t->held);
			t->held = bigger;
			t->held_cap *= 2;
			t->held_tail = 0;
			t->held_head = n;
		}
	}
	t->held[t->held_head & (t->held_cap - 1)] = (struct cap_held){ *p, ref };
	t->held_head++;
}

/* The reference of a released packet rx marked VFGX_PKT_CAP_REF: the
 * next one in rx order, or (released out of order, however far) the one
 * the packet's tag names; CAP_NONE for one the writer has passed.
 *
 * Every unwritten reference whose packet has not come back lies at or
 * past match (match is at or past the writer's tail; what lies between
 * was matched), and a buffer is referenced once while unwritten (it goes
 * back to its backend only once written), so handle and tag find the
 * packet's reference exactly: the references with its tag are one in
 * CAP_TAG_STRIDE, at most nref / CAP_TAG_STRIDE of them to look at.  One
 * not found there was written, and may go back at once: a buffer the
 * writer has still to read never goes back to its backend. */
static uint64_t ref_match(struct vfgx_capture_tap *t, const void *handle, uint64_t tag,
			  uint64_t head)
{
	uint64_t mask = t->nref - 1, m = t->match, x;

	while (m != head && t->refs[m & mask].handle == CAP_GONE)
		m++; /* copies, and references matched out of order */
	t->match = m;
	if (m == head)
		return CAP_NONE;
	if (ref_tag(m) == tag && t->refs[m & mask].handle == handle) {
		t->match = m + 1;
		return m;
	}
	/* the first reference past m with the packet's tag */
	for (x = m + 1 + ((tag - ref_tag(m + 1)) & (CAP_TAG_STRIDE - 1)); x < head;
	     x += CAP_TAG_STRIDE) {
		if (t->refs[x & mask].handle == handle) {
			t->refs[x & mask].handle = CAP_GONE;
			return x;
		}
	}
	return CAP_NONE;
}

void vfgx_capture_tap_release(struct vfgx_capture_tap *t, struct vfgx_pkt *pkts, uint16_t n)
{
	struct vfgx_port *port = t->port;
	uint64_t tail, head = t->rhead;
	uint16_t from = 0;

	if (!t->by_ref && t->held_tail == t->held_head) {
		port->ops->release(port, t->q, pkts, n);
		return;
	}
	/* references before the writer's tail may be reused by rx: none is
	 * looked at again */
	tail = __atomic_load_n(&t->rtail, __ATOMIC_ACQUIRE);
	if (t->match < tail)
		t->match = tail;
	for (uint16_t i = 0; i < n; i++) {
		uint64_t ref = CAP_NONE;

		if (pkts[i].flags & VFGX_PKT_CAP_REF) {
			uint64_t tag = (pkts[i].flags & VFGX_PKT_CAP_TAG) / CAP_TAG_ONE;

			ref = ref_match(t, pkts[i].handle, tag, head);
			pkts[i].flags &= (uint16_t)~(VFGX_PKT_CAP_REF | VFGX_PKT_CAP_TAG);
		}
		if (ref == CAP_NONE || ref < tail) {
			/* a port that counts releases in rx order (the
			 * loopback replay) gets nothing past a held packet */
			if (!t->in_order || t->held_tail == t->held_head)
				continue;
			ref = CAP_NONE;
		}
		if (i > from)
			port->ops->release(port, t->q, pkts + from, (uint16_t)(i - from));
		held_push(t, &pkts[i], ref);
		from = (uint16_t)(i + 1);
	}
	if (n > from)
		port->ops->release(port, t->q, pkts + from, (uint16_t)(n - from));
	vfgx_cap_held_release(t, tail);
}

/* The burst's host packets the mode selects, in rx order: references
 * (marked VFGX_PKT_CAP_REF) up to ref_bound of them unwritten, then
 * copies into the arena, to take a burst the writer is behind on: at
 * most the arena's size of them until the writer has had nothing to
 * write for CAP_FLUSH_NS.  A writer that stays behind would otherwise
 * have rx copy as many records as it writes, at the writer's pace (the
 * copies slow rx down to it): the cost references save.  No room:
 * ring_full. */
void vfgx_cap_tap_refs(struct vfgx_capture_tap *t, struct vfgx_pkt *pkts, uint16_t n)
{
	uint64_t head = t->rhead, hb = t->rhead_bytes, mask = t->nref - 1;
	uint64_t sel = 0, full = 0, gpu = 0;

	if (t->absorb_left < t->size) {
		/* copies again once the writer has had nothing to write for
		 * CAP_FLUSH_NS, at every burst in between */
		uint64_t now = pkts[0].ts_ns ? pkts[0].ts_ns : vfgx_now_ns();

		if (__atomic_load_n(&t->rtail, __ATOMIC_ACQUIRE) != head)
			t->idle_since = 0;
		else if (!t->idle_since)
			t->idle_since = now;
		else if (now - t->idle_since >= CAP_FLUSH_NS)
			t->absorb_left = t->size;
	}
	for (uint16_t i = 0; i < n; i++) {
		struct vfgx_pkt *p = &pkts[i];
		struct cap_ref *e;
		uint64_t end = 0;
		uint8_t *dst = NULL;
		uint32_t cl;
		bool ref;

		if (p->flags & VFGX_PKT_GPU) {
			/* a queue's packets are in one memory: not expected */
			if (t->mode != VFGX_CAPTURE_DROPS)
				gpu++;
			continue;
		}
		if (!cap_select(t, p))
			continue;
		sel++;
		cl = p->len < t->snaplen ? p->len : t->snaplen;
		if (head - t->rtail_seen >= t->nref ||
		    t->refs_made - t->rtail_refs_seen >= t->ref_bound) {
			/* what the writer gave back since the last look */
			t->rtail_seen = __atomic_load_n(&t->rtail, __ATOMIC_ACQUIRE);
			t->rtail_refs_seen = __atomic_load_n(&t->rtail_refs, __ATOMIC_ACQUIRE);
		}
		ref = t->refs_made - t->rtail_refs_seen < t->ref_bound;
		if (head - t->rtail_seen >= t->nref ||
		    (!ref && (cl > t->absorb_left || !(dst = arena_get(t, head, cl, &end))))) {
			full++;
			continue;
		}
		e = &t->refs[head & mask];
		e->r = cap_rec_of(t, p);
		e->copied = !ref;
		if (ref) {
			e->data = p->data;
			e->handle = p->handle;
			__atomic_store_n(&e->state, REF_OPEN, __ATOMIC_RELAXED);
			p->flags |= (uint16_t)(VFGX_PKT_CAP_REF | ref_tag(head) * CAP_TAG_ONE);
			t->refs_made++;
		} else {
			memcpy(dst, p->data, cl);
			e->data = e->copy = dst;
			e->copy_end = end;
			e->handle = CAP_GONE;
			__atomic_store_n(&e->state, REF_COPIED, __ATOMIC_RELAXED);
			t->arena_head = end;
			t->arena_last = head;
			t->absorb_left -= cl;
		}
		head++;
		hb += sizeof(e->r) + cl;
	}
	__atomic_store_n(&t->rhead_bytes, hb, __ATOMIC_RELAXED);
	__atomic_store_n(&t->rhead, head, __ATOMIC_RELEASE);
	__atomic_store_n(&t->seen, t->seen + n, __ATOMIC_RELAXED);
	__atomic_store_n(&t->selected, t->selected + sel, __ATOMIC_RELAXED);
	__atomic_store_n(&t->ring_full, t->ring_full + full, __ATOMIC_RELAXED);
	__atomic_store_n(&t->skipped_gpu, t->skipped_gpu + gpu, __ATOMIC_RELAXED);
}
