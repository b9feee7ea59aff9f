/* rules.h - the decisions of the stateful stages, written once: the reorder
 * window (deliver, late, duplicate, slide) and chunk placement and release
 * (index, open, late, ring advance, duplicate, release, gaps, close by
 * distance, timeout, end of input).  Pure VFGX_HD functions: they take the
 * state by value and return a decision; gcc compiles them into the cpu
 * engine (proc.c, chunk.c) and nvcc into the gpu engine (gpu_phase_b.cuh,
 * gpu_chunks.cuh), which call them from the lane that decides.  What stays
 * in each engine is memory movement (copies, slot words, descriptors,
 * publication) and synchronisation.  tests/unit/test_rules.c tests these
 * functions; tests/unit/rules_single_source.sh checks that the GPU files
 * take them from here and define none of their own. */
#ifndef VFGX_PIPELINE_RULES_H
#define VFGX_PIPELINE_RULES_H

#include <stdint.h>

#include <vfgx/chunk.h>
#include <vfgx/format.h>
#include <vfgx/stages.h>

#if defined(__CUDA_ARCH__)
#define VFGX_RULE_POPC64(v) ((uint32_t)__popcll(v))
#define VFGX_RULE_CLZ64(v) ((uint32_t)__clzll((long long)(v)))
#else
#define VFGX_RULE_POPC64(v) ((uint32_t)__builtin_popcountll(v))
#define VFGX_RULE_CLZ64(v) ((uint32_t)__builtin_clzll(v))
#endif

/* ---- common: moving a window or ring's base ------------------------------ */

/* Moving base up to target (target > base) over a window of `window`
 * places: steps one at a time (only the window can hold anything), then
 * the rest, skipped, at once; base ends at target. */
struct vfgx_rule_jump {
	uint64_t steps;
	uint64_t skipped;
};

VFGX_HD struct vfgx_rule_jump vfgx_rule_jump(uint64_t base, uint64_t target,
					     uint64_t window)
{
	struct vfgx_rule_jump j;

	if (target - base > window) {
		j.steps = window;
		j.skipped = target - base - window;
	} else {
		j.steps = target - base;
		j.skipped = 0;
	}
	return j;
}

/* ---- delivery ------------------------------------------------------------ */

/* The counters one delivered record adds: verify when the record differs
 * from the pattern (counted whatever the user stage says), then either the
 * user stage's drop or delivered, its bytes and LAST. */
struct vfgx_rule_delivery {
	uint32_t verify_error, user_drop, delivered, last;
	uint64_t bytes;
};

VFGX_HD struct vfgx_rule_delivery vfgx_rule_deliver(int bad, int user_dropped,
						    uint32_t len, uint32_t flags)
{
	struct vfgx_rule_delivery d;

	d.verify_error = bad ? 1u : 0u;
	d.user_drop = user_dropped ? 1u : 0u;
	d.delivered = user_dropped ? 0u : 1u;
	d.bytes = user_dropped ? 0u : len;
	d.last = !user_dropped && (flags & VFGX_APP_FLAG_LAST) ? 1u : 0u;
	return d;
}

/* ---- a producer's sequence: a run extended at once -------------------------- */

/* What a run's extension reads of a format, taken once (the gpu engine
 * keeps it in registers for a whole walk of a group's records). */
struct vfgx_seq_run {
	uint64_t mask;        /* 2^seq_bits - 1 (every bit for 0 or 64) */
	uint64_t max_dropout; /* seq_max_dropout */
};

VFGX_HD struct vfgx_seq_run vfgx_seq_run_of(const struct vfgx_format *f)
{
	struct vfgx_seq_run r;

	r.mask = vfgx_fmt_mask(f->seq_bits);
	r.max_dropout = f->seq_max_dropout;
	return r;
}

/* The step from sequence u to sequence v as sent: v - u modulo
 * 2^seq_bits (0: the same again, as a SPEAD heap's packets all carry its
 * counter). */
VFGX_HD uint64_t vfgx_seq_step(struct vfgx_seq_run r, uint64_t u, uint64_t v)
{
	return (v - u) & r.mask;
}

/* Sequences as sent, v0 first, each next one a step forward from the one
 * before it of less than seq_max_dropout (vfgx_seq_step; 0 included), the
 * steps summing to total, of a stream that has started, v0 itself a step
 * forward from its highest of less than seq_max_dropout: extended as the
 * calls of vfgx_seq_extend one by one would (each is in order), the first
 * to *ext0 and each next one its steps more, and the state left as those
 * calls leave it.  Returns 0 without touching anything when the stream
 * has not started or v0 is not such a step: the caller extends them one by
 * one.  The gpu engine extends a warp's 32 records of one stream this way
 * (kfmt_batch). */
VFGX_HD int vfgx_seq_extend_steps(struct vfgx_seq_run r, struct vfgx_seq_state *s, uint64_t v0,
				  uint64_t total, uint64_t *ext0)
{
	uint64_t d = vfgx_seq_step(r, s->max_ext, v0);

	if (!s->started || d >= r.max_dropout)
		return 0;
	*ext0 = s->max_ext + d;
	s->max_ext = *ext0 + total;
	s->have_bad = 0;
	return 1;
}

/* ---- reorder ------------------------------------------------------------- */

struct vfgx_ro_state {
	uint64_t base; /* next sequence to deliver */
	uint32_t held; /* filled slots */
};

enum {
	VFGX_RO_DELIVER = 0, /* in order, nothing held: deliver from the packet
			      * (what storing and draining would do, without
			      * the copy); base + 1 */
	VFGX_RO_STORE = 1,   /* into slot `slot`, after sliding when ahead */
	VFGX_RO_LATE = 2,    /* before base: dropped as late */
};

struct vfgx_ro_insert {
	int act;
	uint32_t slot;       /* seq's slot in the window */
	int ahead;           /* slide first: base to target */
	uint64_t target;     /* the window becomes [seq - window + 1, seq] */
	struct vfgx_rule_jump slide; /* slot advances, then gaps skipped */
};

/* window: a power of two. */
VFGX_HD struct vfgx_ro_insert vfgx_ro_insert(struct vfgx_ro_state s,
					     uint32_t window, uint64_t seq)
{
	struct vfgx_ro_insert d;

	d.slot = (uint32_t)seq & (window - 1);
	d.ahead = 0;
	d.target = s.base;
	d.slide.steps = d.slide.skipped = 0;
	if (seq == s.base && s.held == 0) {
		d.act = VFGX_RO_DELIVER;
		return d;
	}
	if (vfgx_reorder_classify(s.base, window, seq, &d.ahead) != VFGX_STAGE_PASS) {
		d.act = VFGX_RO_LATE;
		return d;
	}
	d.act = VFGX_RO_STORE;
	if (d.ahead) {
		d.target = seq - window + 1;
		d.slide = vfgx_rule_jump(s.base, d.target, window);
	}
	return d;
}

/* Whether an insert decision d for seq touches nothing but its own slot:
 * late (a drop), or a store inside the window that is not at base (no
 * slide before it, no delivery after it).  A batch of one stream's
 * records, each quiet against the same state and no two with the same
 * sequence, does to the window what inserting them one by one does, in
 * any order: each is late or lands in its own slot (a taken slot makes it
 * a duplicate) and base does not move.  The gpu engine stores such a
 * batch at once. */
VFGX_HD int vfgx_ro_quiet(struct vfgx_ro_state s, struct vfgx_ro_insert d, uint64_t seq)
{
	return d.act == VFGX_RO_LATE ||
	       (d.act == VFGX_RO_STORE && !d.ahead && seq != s.base);
}

/* A drain of the held run from base: how many slots from base are filled
 * (have: bit i set when the slot of base + i is; at most 32 looked at),
 * each delivered as a slot advance delivers it.  32 means look again. */
VFGX_HD uint32_t vfgx_ro_run(uint32_t have)
{
	uint32_t n = 0;

	while (n < 32 && (have >> n & 1u))
		n++;
	return n;
}

/* The slot of sequence base (the one a slot advance delivers or skips). */
VFGX_HD uint32_t vfgx_ro_slot(uint64_t base, uint32_t window)
{
	return (uint32_t)base & (window - 1);
}

/* Storing into a slot: a taken one makes the record a duplicate. */
VFGX_HD int vfgx_ro_store(int occupied)
{
	return occupied ? VFGX_R_DUPLICATE : VFGX_STAGE_PASS;
}

/* A slot advance: deliver what the slot holds, else one gap. */
VFGX_HD uint64_t vfgx_ro_advance_gaps(int occupied)
{
	return occupied ? 0 : 1;
}

/* End of input: the held slots are delivered in order, empty slots are
 * gaps only between held ones, and base returns over the empty run after
 * the last held slot.  One step per slot from base while something is
 * held (at most window steps). */
struct vfgx_ro_flush {
	uint64_t skipped;  /* empty slots since the last held one */
	uint64_t gaps_now; /* gaps to count at this step */
	int deliver;       /* slot advance (deliver); else base + 1 */
};

VFGX_HD struct vfgx_ro_flush vfgx_ro_flush_step(uint64_t skipped, int occupied)
{
	struct vfgx_ro_flush f;

	f.deliver = occupied;
	f.gaps_now = occupied ? skipped : 0;
	f.skipped = occupied ? 0 : skipped + 1;
	return f;
}

/* ---- chunks (vfgx/chunk.h) ----------------------------------------------- */

/* What the chunk rules read of pipeline.chunks (checked options). */
struct vfgx_ck_conf {
	uint32_t packets, in_flight, close_distance, payload_bytes;
	uint32_t place, field_offset, field_size;
	uint64_t field_step;
};

/* A stream's assembly state. */
struct vfgx_ck_stream {
	uint64_t head;        /* oldest chunk not yet released */
	uint64_t top;         /* highest chunk placed into */
	int open;             /* a first packet was placed */
};

/* The packet index of a record (seq, or the big-endian placement field of
 * its body divided by field_step), or VFGX_R_BAD_APP_HDR. */
VFGX_HD int vfgx_ck_index(struct vfgx_ck_conf c, uint64_t seq, const uint8_t *body,
			  uint32_t len, uint64_t *p)
{
	uint64_t v = 0;

	if (c.place == VFGX_CHUNK_BY_SEQ) {
		*p = seq;
		return seq < VFGX_CHUNK_MAX_INDEX ? VFGX_STAGE_PASS : VFGX_R_BAD_APP_HDR;
	}
	if ((uint64_t)c.field_offset + c.field_size > len)
		return VFGX_R_BAD_APP_HDR;
	for (uint32_t i = 0; i < c.field_size; i++)
		v = v << 8 | body[c.field_offset + i];
	if (v % c.field_step)
		return VFGX_R_BAD_APP_HDR;
	*p = v / c.field_step;
	return *p < VFGX_CHUNK_MAX_INDEX ? VFGX_STAGE_PASS : VFGX_R_BAD_APP_HDR;
}

/* Where a record goes, before its slot is opened. */
struct vfgx_ck_place {
	int verdict;          /* PASS, else the drop reason */
	int out_of_range;     /* the drop counts as out_of_range */
	int late;             /* ... as late */
	int open;             /* the stream's first packet: head = top = n,
			       * first_index = p */
	int advance;          /* release up to target first (BY_RING) */
	uint64_t target;
	uint64_t p, n;        /* packet index, chunk index */
	uint32_t k, slot;     /* packet in the chunk, ring slot */
};

VFGX_HD struct vfgx_ck_place vfgx_ck_place(struct vfgx_ck_conf c, struct vfgx_ck_stream st,
					   uint64_t seq, const uint8_t *body, uint32_t len)
{
	struct vfgx_ck_place d;
	uint64_t head;

	d.out_of_range = d.late = d.open = d.advance = 0;
	d.target = d.p = d.n = 0;
	d.k = d.slot = 0;
	if (len > c.payload_bytes) {
		d.verdict = VFGX_R_TOO_BIG;
		d.out_of_range = 1;
		return d;
	}
	d.verdict = vfgx_ck_index(c, seq, body, len, &d.p);
	if (d.verdict != VFGX_STAGE_PASS) {
		d.out_of_range = 1;
		return d;
	}
	d.n = d.p / c.packets;
	d.k = (uint32_t)(d.p % c.packets);
	d.slot = (uint32_t)(d.n % c.in_flight);
	d.open = !st.open;
	head = st.open ? st.head : d.n;
	if (d.n < head) {
		d.verdict = VFGX_R_LATE;
		d.late = 1;
		return d;
	}
	if (d.n - head >= c.in_flight) {
		d.advance = 1;
		d.target = d.n - c.in_flight + 1;
	}
	return d;
}

/* The present bit of packet k in its word: a duplicate when set. */
VFGX_HD int vfgx_ck_dup(uint64_t present_word, uint32_t k)
{
	return present_word >> (k % 64) & 1 ? VFGX_R_DUPLICATE : VFGX_STAGE_PASS;
}

/* Does the ring slot (its state FILLING, its index) hold chunk n? */
VFGX_HD int vfgx_ck_holds(int filling, uint64_t index, uint64_t n)
{
	return filling && index == n;
}

/* Gaps found at a release split by whether the stream is known to go on
 * (a packet of a later chunk came): counted now, or pending until a
 * packet of the stream is placed (at the end they are not gaps). */
struct vfgx_ck_gaps {
	uint64_t now, pending;
};

VFGX_HD struct vfgx_ck_gaps vfgx_ck_gaps_split(int later_known, uint64_t n)
{
	struct vfgx_ck_gaps g;

	g.now = later_known ? n : 0;
	g.pending = later_known ? 0 : n;
	return g;
}

/* Releasing the head chunk: skipped when its slot does not hold it (no
 * packet came: its packets are gaps), else handed out complete or closed
 * by `reason` with its missing packets. */
struct vfgx_ck_release {
	int skip;
	uint32_t missing;
	uint32_t flags;       /* VFGX_CHUNK_COMPLETE or reason */
	struct vfgx_ck_gaps gaps; /* of a skipped chunk */
};

VFGX_HD struct vfgx_ck_release vfgx_ck_release(struct vfgx_ck_conf c, int holds_head,
					       uint64_t present_count, uint32_t reason,
					       int later_known)
{
	struct vfgx_ck_release d;

	d.skip = !holds_head;
	d.missing = holds_head ? (uint32_t)(c.packets - present_count) : 0;
	d.flags = d.missing ? reason : VFGX_CHUNK_COMPLETE;
	d.gaps = vfgx_ck_gaps_split(later_known, holds_head ? 0 : c.packets);
	return d;
}

/* The gaps inside a closed chunk: missing packets from `from` (the
 * stream's first packet, when in this chunk) below the highest present
 * one, hi; after hi, gaps only if the stream goes on (vfgx_ck_gaps_split
 * of packets - 1 - hi).  Computed a present word at a time. */
VFGX_HD uint32_t vfgx_ck_gaps_from(uint64_t chunk_first, uint64_t stream_first)
{
	return chunk_first < stream_first ? (uint32_t)(stream_first - chunk_first) : 0;
}

/* The highest present packet in word w (v != 0). */
VFGX_HD uint32_t vfgx_ck_word_hi(uint64_t v, uint32_t w)
{
	return w * 64 + 63 - VFGX_RULE_CLZ64(v);
}

/* Missing packets of word w (present bits v) in [from, hi). */
VFGX_HD uint64_t vfgx_ck_word_gaps(uint64_t v, uint32_t w, uint32_t from, uint32_t hi)
{
	uint32_t a = w * 64 > from ? w * 64 : from;
	uint32_t b = w * 64 + 64 < hi ? w * 64 + 64 : hi;
	uint32_t lo, n;

	if (a >= b)
		return 0;
	lo = a - w * 64;
	n = b - a;
	return VFGX_RULE_POPC64(~v & (n >= 64 ? ~0ull : ((1ull << n) - 1) << lo));
}

/* Releasing up to target: the releases one by one (at most in_flight:
 * only those can hold packets), then chunks skipped at once, whose
 * packets are gaps when the stream is known to go on. */
struct vfgx_ck_advance {
	struct vfgx_rule_jump jump;
	uint64_t gaps;        /* of the chunks skipped at once */
};

VFGX_HD struct vfgx_ck_advance vfgx_ck_advance(struct vfgx_ck_conf c, uint64_t head,
					       uint64_t target, int later_known)
{
	struct vfgx_ck_advance a;

	a.jump = vfgx_rule_jump(head, target, c.in_flight);
	a.gaps = later_known ? a.jump.skipped * c.packets : 0;
	return a;
}

/* After a placement: release the head chunk while it is complete, then
 * close (BY_DISTANCE) what lies close_distance behind top. */
enum {
	VFGX_CK_SETTLED = 0,
	VFGX_CK_RELEASE = 1,  /* release the head, COMPLETE; ask again */
	VFGX_CK_CLOSE = 2,    /* advance to target, BY_DISTANCE; then done */
};

struct vfgx_ck_settle {
	int act;
	int later_known;      /* of a release */
	uint64_t target;
};

/* head_complete: the head's slot holds it with every packet present. */
VFGX_HD struct vfgx_ck_settle vfgx_ck_settle(struct vfgx_ck_conf c, struct vfgx_ck_stream st,
					     int head_complete)
{
	struct vfgx_ck_settle d;

	d.act = VFGX_CK_SETTLED;
	d.later_known = st.head < st.top;
	d.target = 0;
	if (st.head <= st.top && head_complete) {
		d.act = VFGX_CK_RELEASE;
	} else if (c.close_distance && st.top >= st.head &&
		   st.top - st.head >= c.close_distance) {
		d.act = VFGX_CK_CLOSE;
		d.target = st.top - c.close_distance + 1;
	}
	return d;
}

/* A tick at now: m is the oldest chunk from head on that holds packets (m >
 * top: none), first its first packet's time.  Returns the chunk to release
 * up to, exclusive (m + 1: BY_TIMEOUT, the empty ones before it with it),
 * or 0 when nothing times out. */
VFGX_HD uint64_t vfgx_ck_tick(struct vfgx_ck_stream st, uint64_t m, uint64_t first,
			      uint64_t now, uint64_t limit)
{
	if (!limit || !st.open || st.head > st.top || m > st.top || now - first < limit)
		return 0;
	return m + 1;
}

/* End of input: how many head releases (BY_END) to make; top = head after. */
VFGX_HD uint64_t vfgx_ck_flush(struct vfgx_ck_conf c, struct vfgx_ck_stream st)
{
	uint64_t n;

	if (!st.open || st.head > st.top)
		return 0;
	n = st.top - st.head + 1;
	return n < c.in_flight ? n : c.in_flight;
}

/* ---- chunks by bytes (pipeline.format places by offset or lines) -------- */

/* The chunk index of a packet whose header names its chunk by an id (SPEAD
 * heap counter, RFC 4175's RTP timestamp) of id_bits bits: the index of
 * the open chunk with that id when one holds it (found, at n_found); else
 * an id after top's (serial arithmetic: ahead by less than half the ids)
 * opens top + 1; else the chunk was released already (late).  A stream's
 * first packet opens index 0. */
struct vfgx_ck_bidx {
	int late;
	int new_top;          /* the id is the stream's newest: top_id = id */
	uint64_t n;
};

VFGX_HD struct vfgx_ck_bidx vfgx_ck_byte_chunk(struct vfgx_ck_stream st, uint64_t top_id,
					       uint64_t id, uint32_t id_bits, int found,
					       uint64_t n_found)
{
	struct vfgx_ck_bidx b;
	uint64_t mask = id_bits >= 64 ? ~0ull : (1ull << id_bits) - 1;
	uint64_t d = (id - top_id) & mask;

	b.late = 0;
	b.new_top = 0;
	b.n = 0;
	if (!st.open) {
		b.new_top = 1;
		return b;
	}
	if (found) {
		b.n = n_found;
		return b;
	}
	if (d != 0 && d <= (mask >> 1)) {
		b.n = st.top + 1;
		b.new_top = 1;
		return b;
	}
	b.late = 1;
	b.n = st.head ? st.head - 1 : 0;
	return b;
}

/* A packet's bit in its chunk's present map: by_offset (SPEAD) the heap
 * offset in payload_bytes units, which must be below packets; else its
 * extended sequence modulo packets (packets >= a frame's packets). */
VFGX_HD int vfgx_ck_byte_key(struct vfgx_ck_conf c, int by_offset, uint64_t ext_seq,
			     uint64_t dst_off, uint32_t *k)
{
	if (by_offset) {
		if (dst_off % c.payload_bytes || dst_off / c.payload_bytes >= c.packets)
			return VFGX_R_OFFSET_PAST_CHUNK;
		*k = (uint32_t)(dst_off / c.payload_bytes);
		return VFGX_STAGE_PASS;
	}
	*k = (uint32_t)(ext_seq % c.packets);
	return VFGX_STAGE_PASS;
}

/* The bytes a chunk spans: an end mark sets it to where that packet ends;
 * else the packet's own chunk size (SPEAD heap size) when it says one, else
 * the configured chunk. */
VFGX_HD uint64_t vfgx_ck_byte_span(uint64_t span, int end, uint64_t end_at,
				   uint64_t pkt_chunk_bytes)
{
	if (end)
		return end_at;
	if (pkt_chunk_bytes && pkt_chunk_bytes < span)
		return pkt_chunk_bytes;
	return span;
}

/* Releasing a chunk placed by bytes: complete when every byte it spans
 * was written, else closed by `reason` with the bytes missing. */
struct vfgx_ck_release_b {
	int skip;
	uint32_t flags;
	uint64_t missing_bytes;
	struct vfgx_ck_gaps gaps;
};

VFGX_HD struct vfgx_ck_release_b vfgx_ck_release_bytes(int holds_head, uint64_t span,
						       uint64_t bytes_in, uint32_t reason)
{
	struct vfgx_ck_release_b d;

	d.skip = !holds_head;
	d.missing_bytes = holds_head && bytes_in < span ? span - bytes_in : 0;
	d.flags = d.missing_bytes ? reason : VFGX_CHUNK_COMPLETE;
	/* a chunk by bytes that got no packet is not known to exist */
	d.gaps.now = d.gaps.pending = 0;
	return d;
}

#endif
