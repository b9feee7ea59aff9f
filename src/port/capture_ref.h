/* capture_ref.h - what capture.c (the writer, files, GPU packets) and
 * capture_ref.c (host packets by reference, on the queue's thread) share:
 * a tap and its records, and the calls between the two. */
#ifndef VFGX_CAPTURE_REF_H
#define VFGX_CAPTURE_REF_H

#include <stdbool.h>
#include <stdint.h>

#include <vfgx/capture.h>
#include <vfgx/mem.h>
#include <vfgx/stages.h>

#include "capture_tap.h"
#include "vfgx_build.h"
#if VFGX_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define CAP_FLUSH_NS 50000000ull  /* records wait at most this long for a span */

/* A record in a ring: pcap's record header (sf-pcap.c's pcap_sf_pkthdr in
 * host order, nanoseconds as the file header says), then caplen bytes. */
struct cap_rec {
	uint32_t ts_sec;
	uint32_t ts_nsec;
	uint32_t caplen;
	uint32_t len;
};

/* One record of a tap capturing host packets, in rx order: its record
 * header and where its frame lies.  A reference (copied false) points
 * into the packet's own buffer and keeps its backend handle, to know the
 * packet again when it is released (CAP_GONE once matched out of order);
 * a copy (made by rx while the references are at their bound, or later
 * by a rescue) lies in the tap's arena, up to arena position copy_end.
 * state: REF_OPEN until the writer claims it for a span (REF_CLAIMED) or
 * the queue's thread copies the frame out to give the packet back early
 * (REF_COPIED), whichever comes first. */
struct cap_ref {
	struct cap_rec r;
	const uint8_t *data;
	void *handle;
	const uint8_t *copy;
	uint64_t copy_end;
	uint32_t state;
	bool copied;
};

enum { REF_OPEN, REF_CLAIMED, REF_COPIED };

#define CAP_GONE ((void *)~(uintptr_t)0)
#define CAP_NONE UINT64_MAX /* a held packet the capture does not reference */

/* A released packet whose backend release waits for the writer: the
 * reference it is (CAP_NONE: none, held only to keep the release order
 * of a port that needs it). */
struct cap_held {
	struct vfgx_pkt pkt;
	uint64_t ref;
};

/* The producer's fields and the writer's on cache lines of their own: the
 * queue's thread writes head (rhead) and its counters every burst, the
 * writer tail (rtail) every span; each reads the other's with acquire.
 * ring is the byte ring of GPU packets' records, or for host packets
 * (refs) the arena their copies go into; a queue whose memory the port
 * does not say gets both, and its first packet says which it uses. */
struct vfgx_capture_tap {
	struct vfgx_capture *cap;
	struct vfgx_port *port;
	uint16_t q;
	uint8_t *ring;
	uint64_t size;        /* ring bytes, a power of two */
	int64_t wall_off_ns;  /* the capture's, for the record headers */
	uint32_t snaplen, mode, sample_every;
	uint32_t sample_left; /* sample mode: packets to skip before the next */
	uint64_t room_tail;   /* the tail last read: free space without a load */
#if VFGX_HAVE_CUDA
	cudaStream_t stream; /* copies out of GPU memory */
	bool gpu_err;
#endif
	/* host packets: nref records (a power of two), at most ref_bound
	 * of them references the writer has still to write, copies in the
	 * ring (the arena) for the rest; the queue thread's own fields */
	struct cap_ref *refs;
	uint64_t nref, ref_bound;
	bool by_ref, mode_known;
	bool in_order;        /* the backend wants releases in rx order */
	uint64_t absorb_left; /* bytes rx may still copy (see tap_refs) */
	uint64_t idle_since;  /* when the writer was first seen caught up */
	uint64_t refs_made;   /* references recorded so far */
	uint64_t match;       /* the next reference a release should be */
	uint64_t rescue_at;   /* the next reference a rescue may copy */
	uint64_t arena_head;  /* arena bytes handed out, in record order */
	uint64_t arena_last;  /* the record of the last copy (CAP_NONE: none) */
	uint64_t arena_tail_seen, rtail_refs_seen;
	uint64_t rtail_seen, rtail_bytes_seen;
	struct cap_held *held; /* released, waiting for the writer: a FIFO */
	uint64_t held_cap, held_head, held_tail;
	uint64_t head __attribute__((aligned(64))); /* producer; release-stored */
	uint64_t rhead, rhead_bytes;                 /* the same, references */
	/* producer's counters, read by any thread */
	uint64_t seen, selected, ring_full, skipped_gpu;
	uint64_t tail __attribute__((aligned(64))); /* writer; release-stored */
	uint64_t rtail, rtail_bytes;                 /* the same, references */
	uint64_t rtail_refs;  /* references written */
	uint64_t arena_tail;  /* arena bytes written */
};

/* Sample mode: the first packet, then one in sample_every. */
static inline bool cap_sample(struct vfgx_capture_tap *t)
{
	if (t->sample_left) {
		t->sample_left--;
		return false;
	}
	t->sample_left = t->sample_every - 1;
	return true;
}

static inline bool cap_select(struct vfgx_capture_tap *t, const struct vfgx_pkt *p)
{
	struct vfgx_parsed ps;

	switch (t->mode) {
	case VFGX_CAPTURE_DROPS:
		return !(p->flags & VFGX_PKT_PAYLOAD) &&
		       vfgx_parse(p->data, p->len, &ps) != VFGX_STAGE_PASS;
	case VFGX_CAPTURE_SAMPLE:
		return cap_sample(t);
	default:
		return true;
	}
}

/* pcap's record header of p as the tap keeps it (snap length, wall
 * clock of its rx stamp, or of now when it has none). */
static inline struct cap_rec cap_rec_of(const struct vfgx_capture_tap *t,
					const struct vfgx_pkt *p)
{
	uint64_t wall = (p->ts_ns ? p->ts_ns : vfgx_now_ns()) + (uint64_t)t->wall_off_ns;

	return (struct cap_rec){ .ts_sec = (uint32_t)(wall / 1000000000),
				 .ts_nsec = (uint32_t)(wall % 1000000000),
				 .caplen = p->len < t->snaplen ? p->len : t->snaplen,
				 .len = p->len };
}

/* capture_ref.c: the records of a tap capturing host packets (attach);
 * 0 or -ENOMEM (the caller frees what was made). */
int vfgx_cap_ref_alloc(struct vfgx_capture_tap *t, vfgx_pool *pool, uint32_t ring_bytes);
/* The burst's host packets, recorded (tap_burst). */
void vfgx_cap_tap_refs(struct vfgx_capture_tap *t, struct vfgx_pkt *pkts, uint16_t n);
/* Hand the backend the held packets the writer has passed (tail: its
 * rtail; UINT64_MAX at close, once it wrote everything). */
void vfgx_cap_held_release(struct vfgx_capture_tap *t, uint64_t tail);

#endif
