/* proc.c - the single-threaded processor: runs the shared stages over a
 * burst and keeps per-stream reorder windows whose slots form the
 * contiguous output buffer, within a memory budget. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vfgx/format.h>
#include <vfgx/pipeline.h>
#include <vfgx/place.h>
#include <vfgx/stages.h>

#include "chunkset.h"
#include "core/hostmem.h"
#include "proc_steer.h"
#include "rules.h"

struct reorder_stream {
	uint64_t base;   /* next sequence to deliver */
	uint32_t held;   /* filled slots */
	uint8_t *data;   /* window * slot bytes: the output buffer */
	uint32_t *len;   /* payload length + 1; 0 = empty */
	uint8_t *flags;
	bool started;    /* formats: base set to the first extended sequence */
};

struct vfgx_proc {
	vfgx_ctx *ctx;
	struct vfgx_pipeline_config conf;
	uint16_t lo[VFGX_MAX_PORT_RANGES], hi[VFGX_MAX_PORT_RANGES];
	struct reorder_stream **streams; /* max_streams, allocated lazily */
	uint64_t max_mem;                /* reorder.max_memory */
	_Atomic uint64_t own_mem;        /* mem_used when not in a runner */
	struct vfgx_steer steer;         /* owner NULL: every stream is ours */
	vfgx_user_stage_fn user_fn;
	void *user;
	/* pipeline.chunks: records go into chunk slots, not windows */
	struct vfgx_chunkset *chunks;
	uint32_t slot_max;       /* payload bytes one record may carry */
	uint32_t *chunk_streams; /* streams this processor placed into */
	uint32_t nb_chunk_streams;
	uint8_t *chunk_mine;     /* per chunk stream: in chunk_streams */
	uint64_t last_tick;
	/* pipeline.format when it is not vfgx's header (else NULL: the app
	 * header fast path), and each stream's sequence extension state (a
	 * stream's packets are extended by the worker that owns it) */
	const struct vfgx_format *fmt;
	struct vfgx_fmt_plan plan;   /* fmt's, made once (vfgx_fmt_plan_make) */
	struct vfgx_seq_state *seq;
	uint32_t nb_seq;
	vfgx_place_fn *place_fn; /* pipeline.format.user_place, or NULL */
	bool verify;             /* verify_payload, for vfgx's header only */
	/* RTP without stream_ids: SSRCs get stream indices in order of
	 * arrival (own table, or the pipeline's shared one) */
	bool learn;
	_Atomic uint64_t *learned, *own_learned;
	uint32_t nb_learned;
	struct vfgx_pipeline_stats st;
	struct vfgx_format fmt_copy; /* fmt points here (cold: at the end) */
};

/* A hand-over of a whole UDP payload to the owner, which decodes it
 * (formats: the sequence state is the owner's). */
#define HANDOFF_RAW 0x80000000u

/* A stream the budget gave no window: its packets are bad_stream drops. */
static struct reorder_stream refused_stream;

static double gib(uint64_t bytes)
{
	return (double)bytes / (double)(1ull << 30);
}

static uint64_t stream_bytes(const struct vfgx_pipeline_config *conf)
{
	return (uint64_t)conf->reorder_window * (conf->reorder_slot + 5);
}

int vfgx_pipeline_check(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf)
{
	uint64_t budget = conf->reorder_max_memory ? conf->reorder_max_memory :
						     VFGX_REORDER_MAX_MEMORY;
	uint64_t host = vfgx_host_ram_bytes();
	uint64_t all;

	if (conf->reorder && !conf->chunks && conf->format &&
	    conf->format->layout == VFGX_FMT_SPEAD)
		return vfgx_set_error(ctx, -EINVAL,
				      "pipeline.format %s: every packet of a SPEAD heap carries the heap counter as its sequence, so a reorder window cannot order them; use pipeline.chunks (heaps as chunks) or reorder.enabled: false",
				      conf->format->name);
	if (!conf->reorder)
		return 0;
	if (conf->reorder_window < 2 ||
	    (conf->reorder_window & (conf->reorder_window - 1)) ||
	    conf->max_streams == 0 || conf->reorder_slot == 0)
		return vfgx_set_error(ctx, -EINVAL,
				      "pipeline: reorder window must be a power of two >= 2, slot and max_streams > 0");
	/* at most 2^20 * (2^16 + 5) * 2^16: no overflow */
	all = stream_bytes(conf) * conf->max_streams;
	if (all > host)
		return vfgx_set_error(ctx, -EINVAL,
				      "pipeline.reorder: window %u x slot_size %u x max_streams %u = %.1f GiB of reorder memory exceeds this host's %.1f GiB (lower window, slot_size or max_streams)",
				      conf->reorder_window, conf->reorder_slot,
				      conf->max_streams, gib(all), gib(host));
	if (stream_bytes(conf) > budget)
		return vfgx_set_error(ctx, -EINVAL,
				      "pipeline.reorder: one stream's window (window %u x slot_size %u = %.3f GiB) exceeds max_memory %.3f GiB (raise max_memory or lower window or slot_size)",
				      conf->reorder_window, conf->reorder_slot,
				      gib(stream_bytes(conf)), gib(budget));
	return 0;
}

int vfgx_proc_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
		     vfgx_proc **out)
{
	struct vfgx_proc *p;
	int ret;

	*out = NULL;
	if (conf->nb_port_ranges > VFGX_MAX_PORT_RANGES)
		return vfgx_set_error(ctx, -EINVAL, "pipeline: %u port ranges; at most %d",
				      conf->nb_port_ranges, VFGX_MAX_PORT_RANGES);
	ret = vfgx_pipeline_check(ctx, conf);
	if (ret)
		return ret;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->ctx = ctx;
	p->conf = *conf;
	p->slot_max = conf->reorder_slot;
	p->max_mem = conf->reorder_max_memory ? conf->reorder_max_memory :
						VFGX_REORDER_MAX_MEMORY;
	p->steer.mem_used = &p->own_mem;
	p->verify = conf->verify_payload;
	if (!vfgx_format_is_vfgx(conf->format)) {
		p->fmt_copy = *conf->format;
		vfgx_format_index(&p->fmt_copy); /* whatever the caller's held */
		p->fmt = &p->fmt_copy;
		vfgx_fmt_plan_make(p->fmt, &p->plan);
		p->verify = false; /* the pattern is vfgx's generator's */
		p->learn = vfgx_fmt_learns(p->fmt);
		p->place_fn = conf->place ? conf->place->fn : NULL;
	}
	for (uint16_t i = 0; i < conf->nb_port_ranges; i++) {
		p->lo[i] = conf->port_ranges[i].lo;
		p->hi[i] = conf->port_ranges[i].hi;
	}
	if (!p->conf.max_streams)
		p->conf.max_streams = 1;
	p->streams = calloc(p->conf.max_streams, sizeof(*p->streams));
	p->nb_seq = p->conf.max_streams;
	if (p->fmt)
		p->seq = calloc(p->nb_seq, sizeof(*p->seq));
	if (p->learn) {
		p->nb_learned = p->conf.max_streams;
		p->learned = calloc(p->nb_learned, sizeof(*p->learned));
		p->own_learned = p->learned;
	}
	if (!p->streams || (p->fmt && !p->seq) || (p->learn && !p->learned)) {
		free(p->streams);
		free(p->seq);
		free(p->own_learned);
		free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

static void stream_free(struct reorder_stream *s)
{
	if (!s || s == &refused_stream)
		return;
	free(s->data);
	free(s->len);
	free(s->flags);
	free(s);
}

/* Keeps the stream buffers: a reset is cheap enough to run between
 * benchmark passes. */
void vfgx_proc_reset(vfgx_proc *p)
{
	for (uint32_t i = 0; i < p->conf.max_streams; i++) {
		struct reorder_stream *s = p->streams[i];

		if (!s || s == &refused_stream)
			continue;
		memset(s->len, 0, sizeof(*s->len) * p->conf.reorder_window);
		s->base = 0;
		s->held = 0;
		s->started = false;
	}
	for (uint32_t i = 0; i < p->nb_chunk_streams; i++)
		p->chunk_mine[p->chunk_streams[i]] = 0;
	p->nb_chunk_streams = 0;
	if (p->seq)
		memset(p->seq, 0, sizeof(*p->seq) * p->nb_seq);
	if (p->own_learned)
		memset((void *)p->own_learned, 0, sizeof(*p->own_learned) * p->conf.max_streams);
	{
		uint64_t held = p->st.reorder_bytes;

		memset(&p->st, 0, sizeof(p->st));
		p->st.reorder_bytes = held;
	}
}

void vfgx_proc_destroy(vfgx_proc *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->conf.max_streams; i++)
		stream_free(p->streams[i]);
	free(p->streams);
	free(p->chunk_streams);
	free(p->chunk_mine);
	free(p->seq);
	free(p->own_learned);
	free(p);
}

int vfgx_proc_set_chunks(vfgx_proc *p, struct vfgx_chunkset *cs)
{
	if (p->fmt && cs->conf.streams > p->nb_seq) {
		struct vfgx_seq_state *g = calloc(cs->conf.streams, sizeof(*g));

		if (!g)
			return -ENOMEM;
		free(p->seq);
		p->seq = g;
		p->nb_seq = cs->conf.streams;
	}
	p->chunk_streams = calloc(cs->conf.streams, sizeof(*p->chunk_streams));
	p->chunk_mine = calloc(cs->conf.streams, 1);
	if (!p->chunk_streams || !p->chunk_mine)
		return -ENOMEM;
	p->chunks = cs;
	p->slot_max = cs->conf.payload_bytes;
	return 0;
}

void vfgx_proc_set_user_stage(vfgx_proc *p, vfgx_user_stage_fn fn, void *user)
{
	p->user_fn = fn;
	p->user = user;
}

void vfgx_proc_stats(const vfgx_proc *p, struct vfgx_pipeline_stats *st)
{
	*st = p->st;
}

/* The window of stream id, made on its first packet while the budget
 * (shared by a runner's workers) allows; else the stream is refused for
 * the rest of the run: a sender cannot make this allocate more than
 * max_memory however many stream ids it uses. */
static struct reorder_stream *stream_get(vfgx_proc *p, uint32_t id)
{
	struct reorder_stream *s = p->streams[id];
	uint32_t w = p->conf.reorder_window;
	uint64_t cost = stream_bytes(&p->conf);

	if (s)
		return s;
	if (atomic_fetch_add_explicit(p->steer.mem_used, cost,
				      memory_order_relaxed) + cost > p->max_mem)
		goto refuse;
	s = calloc(1, sizeof(*s));
	if (!s)
		goto refuse;
	s->data = malloc((size_t)w * p->conf.reorder_slot);
	s->len = calloc(w, sizeof(*s->len));
	s->flags = calloc(w, 1);
	if (!s->data || !s->len || !s->flags) {
		stream_free(s);
		goto refuse;
	}
	p->st.reorder_bytes += cost;
	p->streams[id] = s;
	return s;
refuse:
	atomic_fetch_sub_explicit(p->steer.mem_used, cost, memory_order_relaxed);
	if (!p->st.streams_refused)
		vfgx_warn(p->ctx, "pipeline: stream %u refused a reorder window: pipeline.reorder.max_memory (%.3f GiB) reached; its packets are dropped as bad_stream",
			  id, gib(p->max_mem));
	p->st.streams_refused++;
	p->streams[id] = &refused_stream;
	return &refused_stream;
}

/* Verify (pipeline.verify_payload), the user stage, then the counters
 * rules.h's vfgx_rule_deliver says. */
static void deliver(vfgx_proc *p, uint32_t stream, uint64_t seq,
		    const uint8_t *data, uint32_t len, uint32_t flags)
{
	int bad = p->verify && !vfgx_pattern_ok(stream, seq, data, len);
	int drop = p->user_fn && p->user_fn(p->user, stream, seq, data, len);
	struct vfgx_rule_delivery d = vfgx_rule_deliver(bad, drop, len, flags);

	p->st.verify_errors += d.verify_error;
	p->st.drops[VFGX_DROP_USER] += d.user_drop;
	p->st.delivered += d.delivered;
	p->st.delivered_bytes += d.bytes;
	p->st.last_seen += d.last;
}

/* Deliver or skip the slot at s->base and advance. */
static void slot_advance(vfgx_proc *p, uint32_t id, struct reorder_stream *s)
{
	uint32_t i = vfgx_ro_slot(s->base, p->conf.reorder_window);

	p->st.gaps += vfgx_ro_advance_gaps(s->len[i] != 0);
	if (s->len[i]) {
		deliver(p, id, s->base,
			s->data + (size_t)i * p->conf.reorder_slot,
			s->len[i] - 1, s->flags[i]);
		s->len[i] = 0;
		s->held--;
	}
	s->base++;
}

/* A record of stream id by rules.h's vfgx_ro_insert into its window s:
 * delivered from the packet when in order with nothing held (no copy),
 * else slid to, stored and drained. */
static inline __attribute__((always_inline)) int
reorder_store(vfgx_proc *p, struct reorder_stream *s, uint32_t id, uint64_t seq,
	      uint32_t flags, const uint8_t *body, uint32_t len)
{
	struct vfgx_ro_insert d;
	struct vfgx_ro_state rs;
	uint32_t w = p->conf.reorder_window;

	rs.base = s->base;
	rs.held = s->held;
	d = vfgx_ro_insert(rs, w, seq);
	if (d.act == VFGX_RO_DELIVER) {
		deliver(p, id, seq, body, len, flags);
		s->base++;
		return VFGX_STAGE_PASS;
	}
	if (d.act == VFGX_RO_LATE)
		return VFGX_DROP_LATE;
	if (d.ahead) {
		for (uint64_t i = 0; i < d.slide.steps; i++)
			slot_advance(p, id, s);
		p->st.gaps += d.slide.skipped;
		s->base = d.target;
	}
	if (vfgx_ro_store(s->len[d.slot] != 0) != VFGX_STAGE_PASS)
		return VFGX_DROP_DUPLICATE;
	memcpy(s->data + (size_t)d.slot * p->conf.reorder_slot, body, len);
	s->len[d.slot] = len + 1;
	s->flags[d.slot] = (uint8_t)flags;
	s->held++;
	while (s->len[vfgx_ro_slot(s->base, w)])
		slot_advance(p, id, s);
	return VFGX_STAGE_PASS;
}

/* reorder_store for the format path where it reads its mode per packet
 * (fmt_any, a hand-over): one copy, out of line; the per-kind reorder
 * functions have it inline (a call, its frame and its register saves a
 * packet were 30 of rtp's 185 instructions a packet at 64 B) */
static int fmt_reorder_store(vfgx_proc *p, struct reorder_stream *s, uint32_t id,
			     uint64_t seq, const uint8_t *body, uint32_t len)
{
	return reorder_store(p, s, id, seq, 0, body, len);
}

/* A record of vfgx's header: too big for a slot, or its stream refused a
 * window, is a drop; else reorder_store. */
static int reorder_insert(vfgx_proc *p, const struct vfgx_app_hdr *h,
			  const uint8_t *body, uint32_t len)
{
	struct reorder_stream *s;

	if (len > p->conf.reorder_slot)
		return VFGX_DROP_TOO_BIG;
	/* a stream's window once made (or its refusal) without a call, as
	 * the format path's fmt_reorder reads it */
	s = p->streams[h->stream];
	if (!s)
		s = stream_get(p, h->stream);
	if (s == &refused_stream)
		return VFGX_DROP_BAD_STREAM;
	return reorder_store(p, s, h->stream, h->seq, h->flags, body, len);
}

/* This processor places into stream id's chunks (tick and flush them). */
static void chunk_claim(vfgx_proc *p, uint32_t id)
{
	if (!p->chunk_mine[id]) {
		p->chunk_mine[id] = 1;
		p->chunk_streams[p->nb_chunk_streams++] = id;
	}
}

/* Write a record into its chunk slot, then verify it and hand it to the
 * user stage there (its return value is counted; the record stays). */
static int chunk_insert(vfgx_proc *p, const struct vfgx_app_hdr *h,
			const uint8_t *body, uint32_t len, uint64_t now)
{
	const uint8_t *slot;
	int r = vfgx_chunkset_place(p->chunks, h->stream, h->seq, body, len,
				    now, &slot);

	if (r != VFGX_STAGE_PASS)
		return r;
	chunk_claim(p, h->stream);
	deliver(p, h->stream, h->seq, slot, len, h->flags);
	return VFGX_STAGE_PASS;
}

void vfgx_proc_tick(vfgx_proc *p, uint64_t now)
{
	if (!p->chunks)
		return;
	for (uint32_t i = 0; i < p->nb_chunk_streams; i++)
		vfgx_chunkset_copies(p->chunks, p->chunk_streams[i]);
	if (!p->chunks->conf.timeout_ms || now - p->last_tick < 1000000)
		return;
	p->last_tick = now;
	for (uint32_t i = 0; i < p->nb_chunk_streams; i++)
		vfgx_chunkset_tick(p->chunks, p->chunk_streams[i], now);
}

/* The worker that reorders stream id: the first to claim it.  One relaxed
 * load per packet once claimed; the claim is a compare-and-swap. */
static uint16_t stream_owner(vfgx_proc *p, uint32_t id)
{
	_Atomic uint16_t *o = &p->steer.owner[id];
	uint16_t w = atomic_load_explicit(o, memory_order_relaxed);

	if (!w && atomic_compare_exchange_strong_explicit(
			  o, &w, (uint16_t)(p->steer.self + 1),
			  memory_order_relaxed, memory_order_relaxed))
		return p->steer.self;
	return (uint16_t)(w - 1);
}

static unsigned lat_bucket(uint64_t ns)
{
	unsigned b = ns ? 63u - (unsigned)__builtin_clzll(ns) : 0;

	return b < VFGX_LAT_BUCKETS ? b : VFGX_LAT_BUCKETS - 1;
}

void vfgx_proc_share_streams(vfgx_proc *p, _Atomic uint64_t *learned, uint32_t n)
{
	if (!p->learn)
		return;
	p->learned = learned;
	p->nb_learned = n;
}

/* The stream index of an SSRC: its place in the table of those seen, a
 * new one taking the first free place (compare-and-swap: two workers
 * that add the same SSRC at once both end at its first place).  -1 when
 * the table is full (bad_stream). */
static int32_t learn_stream(vfgx_proc *p, uint64_t raw)
{
	uint64_t want = raw + 1;

	for (uint32_t i = 0; i < p->nb_learned; i++) {
		uint64_t v = atomic_load_explicit(&p->learned[i], memory_order_acquire);

		int e = vfgx_fmt_learn_entry(v, raw);

		if (e == VFGX_FMT_LEARN_MATCH)
			return (int32_t)i;
		if (e == VFGX_FMT_LEARN_FREE && atomic_compare_exchange_strong_explicit(
				      &p->learned[i], &v, want, memory_order_acq_rel,
				      memory_order_acquire))
			v = want;
		if (v == want) {
			/* the first place holding it (another worker may have
			 * added it before this one's place) */
			for (uint32_t j = 0; j < i; j++)
				if (atomic_load_explicit(&p->learned[j], memory_order_acquire) ==
				    want)
					return (int32_t)j;
			return (int32_t)i;
		}
	}
	return -1;
}

/* The user's placement function (vfgx/place.h) over what the description
 * decoded, its answer checked as vfgx_place_apply says. */
static int user_place(const vfgx_proc *p, const uint8_t *pay, uint32_t len,
		      struct vfgx_fmt_pkt *o)
{
	struct vfgx_place u;

	vfgx_place_init(o, &u);
	return vfgx_place_apply(p->fmt, len, p->place_fn(pay, len, o, &u), &u, o);
}

/* What the format path does after the sequence extension, fixed per
 * processor: FMT_DELIVER (reorder off, no chunks), FMT_REORDER (reorder
 * on, no chunks), or FMT_ANY, which reads it per packet (chunks, a user
 * placement function, a hand-over).  A constant in each of
 * fmt_packet's per-packet functions, so the other modes' branches and
 * loads leave it. */
enum { FMT_DELIVER, FMT_REORDER, FMT_ANY };

/* One burst's settings of the format path, gathered once per burst
 * rather than read from the processor per packet (a store to its
 * counters or a call could change them, as far as the compiler knows). */
struct fmt_burst {
	const struct vfgx_format *f;
	uint32_t need, kind;
	uint32_t nb_seq, max_streams, reorder_slot;
	bool learn, hand, chunks, reorder;
	struct vfgx_seq_state *seq;
	struct reorder_stream **streams;
	uint64_t now, seq_mask;
	/* SPEAD's stream (it has no stream field: raw 0) and its sequence
	 * state, NULL where vfgx_fmt_stream_index refuses it or it is not
	 * below nb_seq */
	uint32_t spead_stream;
	struct vfgx_seq_state *spead_seq;
};

static inline __attribute__((always_inline)) void
fmt_burst_make(const vfgx_proc *p, uint64_t now, struct fmt_burst *b)
{
	b->f = p->fmt;
	b->need = p->plan.need;
	b->kind = p->plan.kind;
	b->nb_seq = p->nb_seq;
	b->max_streams = p->conf.max_streams;
	b->reorder_slot = p->conf.reorder_slot;
	b->learn = p->learn;
	b->hand = p->steer.owner != NULL;
	b->chunks = p->chunks != NULL;
	b->reorder = p->conf.reorder;
	b->seq = p->seq;
	b->streams = p->streams;
	b->now = now;
	b->seq_mask = vfgx_seq_mask(p->fmt);
	b->spead_stream = 0;
	b->spead_seq = vfgx_fmt_stream_index(p->fmt, 0, &b->spead_stream) == VFGX_FD_OK &&
				       b->spead_stream < b->nb_seq ?
			       &p->seq[b->spead_stream] : NULL;
}

/* The processor's mode (FMT_DELIVER, FMT_REORDER or FMT_ANY). */
static int fmt_mode(const vfgx_proc *p)
{
	if (p->chunks || p->place_fn)
		return FMT_ANY;
	return p->conf.reorder ? FMT_REORDER : FMT_DELIVER;
}

/* Reorder a decoded packet by its extended sequence (its payload fits a
 * slot: fmt_packet checked); its stream's window starts at the stream's
 * first (an extended sequence starts anywhere: one turn in), not at 0.
 * A stream refused a window: bad_stream.  inl: reorder_store inline (a
 * per-kind function), else fmt_reorder_store's call. */
static inline __attribute__((always_inline)) void
fmt_reorder(vfgx_proc *p, const struct fmt_burst *b, const struct vfgx_fmt_pkt *o,
	    const uint8_t *pay, const bool inl)
{
	struct reorder_stream *s = b->streams[o->stream];
	int r;

	if (!s || !s->started) {
		s = stream_get(p, o->stream);
		if (s == &refused_stream) {
			p->st.drops[VFGX_DROP_BAD_STREAM]++;
			return;
		}
		s->started = true;
		s->base = o->ext_seq;
	}
	r = inl ? reorder_store(p, s, o->stream, o->ext_seq, 0, pay + o->payload_off, o->payload_len) :
		  fmt_reorder_store(p, s, o->stream, o->ext_seq, pay + o->payload_off, o->payload_len);
	if (r != VFGX_STAGE_PASS)
		p->st.drops[r]++;
}

/*
 * A packet by the producer's header (pipeline.format): decode it, hand it
 * to the worker that owns its stream (may_hand), extend its sequence with
 * the stream's state, then as vfgx's header: delivered as it comes
 * (reorder off), reordered by the extended sequence, or placed into its
 * chunk (slots, or bytes at the offsets the format computes).  The rules
 * are vfgx/format.h's and rules.h's, the same the gpu engine runs.  kind
 * (the plan's) and mode are constants in the per-packet functions
 * (FMT_PACKET_FN) and read from the burst's settings in fmt_any and a
 * hand-over.
 */
static void fmt_any(vfgx_proc *p, const struct fmt_burst *b, const uint8_t *pay, uint32_t len);

static inline __attribute__((always_inline)) void
fmt_packet(vfgx_proc *p, const struct fmt_burst *b, const uint8_t *pay, uint32_t len,
	   bool may_hand, const uint32_t kind, const int mode)
{
	const struct vfgx_fmt_plan c = { .need = b->need, .kind = kind };
	bool reorder = mode == FMT_ANY ? b->reorder && !b->chunks : mode == FMT_REORDER;
	struct vfgx_fmt_pkt o;
	const uint8_t *data;
	uint32_t dlen;
	int r;

	/* SPEAD (no stream field): its one stream's index, its bound and its
	 * sequence state worked out per burst (spead_seq: NULL when the
	 * stream is refused); what senders send read in the straight line;
	 * any other packet, or a refused stream, by the whole path, fmt_any
	 * (the same rules: vfgx_fmt_spead) */
	const bool spead = mode != FMT_ANY && kind == VFGX_FMT_KIND_SPEAD;

	if (spead) {
		vfgx_fmt_pkt_clear(&o);
		r = b->spead_seq ? vfgx_fmt_spead_common(pay, len, &o) : -1;
		if (r < 0) {
			fmt_any(p, b, pay, len);
			return;
		}
		o.stream = b->spead_stream;
	} else {
		r = vfgx_fmt_decode_plan(b->f, &c, pay, len, &o);
	}

	/* decode's stream check is its last: o is whole when it fails; only
	 * RTP learns streams (vfgx_fmt_learns), read by the rtp decoder or
	 * the generic one */
	if ((mode == FMT_ANY || kind == VFGX_FMT_KIND_RTP || kind == VFGX_FMT_KIND_GENERIC) &&
	    b->learn && (r == VFGX_FD_OK || r == VFGX_FD_BAD_STREAM)) {
		int32_t i = learn_stream(p, o.stream_raw);

		o.stream = vfgx_fmt_learned_stream(b->f, i);
		r = VFGX_FD_OK;
	}
	if (mode == FMT_ANY && r == VFGX_FD_OK && p->place_fn)
		r = user_place(p, pay, len, &o);
	if (r != VFGX_FD_OK || (!spead && o.stream >= b->nb_seq)) {
		p->st.drops[r != VFGX_FD_OK ? vfgx_fmt_drop_reason(r) : VFGX_R_BAD_STREAM]++;
		return;
	}
	if (may_hand && b->hand && o.stream < b->max_streams) {
		uint16_t to = stream_owner(p, o.stream);

		if (to != p->steer.self) {
			struct vfgx_handoff ho = {
				.stream = o.stream, .flags = HANDOFF_RAW,
				.body = pay, .len = len,
			};

			if (len > p->slot_max + VFGX_HANDOFF_HEADROOM) {
				p->st.drops[VFGX_R_TOO_BIG]++;
				return;
			}
			p->steer.hand(p->steer.user, to, &ho);
			p->st.handed_over++;
			return;
		}
	}
	if (reorder && o.payload_len > b->reorder_slot) {
		/* before the extension, as the gpu engine's phase A */
		p->st.drops[VFGX_R_TOO_BIG]++;
		return;
	}
	r = vfgx_seq_extend_mask(b->f, b->seq_mask, spead ? b->spead_seq : &b->seq[o.stream],
				 o.seq, &o.ext_seq);
	if (r != VFGX_FD_OK) {
		p->st.drops[vfgx_fmt_drop_reason(r)]++;
		return;
	}
	if (reorder) {
		fmt_reorder(p, b, &o, pay, mode == FMT_REORDER);
		return;
	}
	if (mode == FMT_ANY && b->chunks) {
		r = vfgx_chunkset_place_pkt(p->chunks, &o, pay, b->now, &data, &dlen);
		if (r != VFGX_STAGE_PASS) {
			p->st.drops[r]++;
			return;
		}
		chunk_claim(p, o.stream);
		deliver(p, o.stream, o.ext_seq, data, dlen, 0);
		return;
	}
	deliver(p, o.stream, o.ext_seq, pay + o.payload_off, o.payload_len, 0);
}

/* What every packet of a burst goes through first: the counters, the
 * latency histogram, then parse and port filter unless the port gave the
 * UDP payload alone.  false: dropped (counted). */
static inline __attribute__((always_inline)) bool
pkt_front(vfgx_proc *p, const struct vfgx_pkt *pk, uint64_t now, const uint8_t **pay,
	  uint32_t *len)
{
	struct vfgx_parsed ps;
	int r;

	p->st.packets++;
	p->st.bytes += pk->len;
	if (pk->ts_ns && now >= pk->ts_ns)
		p->st.lat_hist[lat_bucket(now - pk->ts_ns)]++;
	if (pk->flags & VFGX_PKT_PAYLOAD) {
		ps.payload_off = 0;
		ps.payload_len = pk->len;
	} else {
		r = vfgx_parse(pk->data, pk->len, &ps);
		if (r == VFGX_STAGE_PASS)
			r = vfgx_filter_port(p->lo, p->hi, p->conf.nb_port_ranges, ps.dst_port);
		if (r != VFGX_STAGE_PASS) {
			p->st.drops[r]++;
			return false;
		}
	}
	p->st.passed++;
	*pay = pk->data + ps.payload_off;
	*len = ps.payload_len;
	return true;
}

/*
 * fmt_packet with a built-in decoder's kind and a mode as constants, one
 * function each (FMT_ANY: one that reads them per packet), picked once
 * per burst: the switch on the kind and the other modes' branches and
 * loads leave the packet's path.  The burst loop around them stays one,
 * the one vfgx's header runs: its parse and checksum loop the same code
 * for every header (a copy of the loop per decoder made one profile's
 * 1500 B packets a third slower than another's on the same instructions,
 * by where its copy fell).
 */
typedef void fmt_packet_fn(vfgx_proc *p, const struct fmt_burst *b, const uint8_t *pay,
			   uint32_t len);

#define FMT_PACKET_FN(name, kind, mode)                                                 \
	static void name(vfgx_proc *p, const struct fmt_burst *b, const uint8_t *pay,  \
			 uint32_t len)                                                  \
	{                                                                               \
		fmt_packet(p, b, pay, len, true, kind, mode);                           \
	}

FMT_PACKET_FN(fmt_any, b->kind, FMT_ANY)
FMT_PACKET_FN(fmt_generic_deliver, VFGX_FMT_KIND_GENERIC, FMT_DELIVER)
FMT_PACKET_FN(fmt_generic_reorder, VFGX_FMT_KIND_GENERIC, FMT_REORDER)
FMT_PACKET_FN(fmt_rtp_deliver, VFGX_FMT_KIND_RTP, FMT_DELIVER)
FMT_PACKET_FN(fmt_rtp_reorder, VFGX_FMT_KIND_RTP, FMT_REORDER)
FMT_PACKET_FN(fmt_vita49_deliver, VFGX_FMT_KIND_VITA49, FMT_DELIVER)
FMT_PACKET_FN(fmt_vita49_reorder, VFGX_FMT_KIND_VITA49, FMT_REORDER)
FMT_PACKET_FN(fmt_ecpri_deliver, VFGX_FMT_KIND_ECPRI, FMT_DELIVER)
FMT_PACKET_FN(fmt_ecpri_reorder, VFGX_FMT_KIND_ECPRI, FMT_REORDER)
FMT_PACKET_FN(fmt_spead_deliver, VFGX_FMT_KIND_SPEAD, FMT_DELIVER)
FMT_PACKET_FN(fmt_spead_reorder, VFGX_FMT_KIND_SPEAD, FMT_REORDER)
FMT_PACKET_FN(fmt_vdif_deliver, VFGX_FMT_KIND_VDIF, FMT_DELIVER)
FMT_PACKET_FN(fmt_vdif_reorder, VFGX_FMT_KIND_VDIF, FMT_REORDER)
FMT_PACKET_FN(fmt_gr_udp_deliver, VFGX_FMT_KIND_GR_UDP, FMT_DELIVER)
FMT_PACKET_FN(fmt_gr_udp_reorder, VFGX_FMT_KIND_GR_UDP, FMT_REORDER)

/* The function of p's kind and mode (by kind: deliver, reorder). */
static fmt_packet_fn *fmt_packet_pick(const vfgx_proc *p)
{
	static fmt_packet_fn *const by_kind[VFGX_FMT_KIND_MAX][2] = {
		[VFGX_FMT_KIND_GENERIC] = { fmt_generic_deliver, fmt_generic_reorder },
		[VFGX_FMT_KIND_RTP] = { fmt_rtp_deliver, fmt_rtp_reorder },
		[VFGX_FMT_KIND_VITA49] = { fmt_vita49_deliver, fmt_vita49_reorder },
		[VFGX_FMT_KIND_ECPRI] = { fmt_ecpri_deliver, fmt_ecpri_reorder },
		[VFGX_FMT_KIND_SPEAD] = { fmt_spead_deliver, fmt_spead_reorder },
		[VFGX_FMT_KIND_VDIF] = { fmt_vdif_deliver, fmt_vdif_reorder },
		[VFGX_FMT_KIND_GR_UDP] = { fmt_gr_udp_deliver, fmt_gr_udp_reorder },
	};
	int mode = fmt_mode(p);

	if (mode == FMT_ANY || p->plan.kind >= VFGX_FMT_KIND_MAX)
		return fmt_any;
	return by_kind[p->plan.kind][mode == FMT_REORDER];
}

void vfgx_proc_burst(vfgx_proc *p, const struct vfgx_pkt *pkts, uint32_t n)
{
	uint64_t now = vfgx_now_ns();
	fmt_packet_fn *fmt = NULL;
	struct fmt_burst b;

	if (p->fmt) {
		fmt_burst_make(p, now, &b);
		fmt = fmt_packet_pick(p);
	}
	for (uint32_t k = 0; k < n; k++) {
		struct vfgx_app_hdr h;
		const uint8_t *pay;
		uint32_t plen;
		int r;

		if (!pkt_front(p, &pkts[k], now, &pay, &plen))
			continue;
		if (fmt) {
			fmt(p, &b, pay, plen);
			continue;
		}
		r = vfgx_app_hdr_read(pay, plen, p->conf.max_streams, &h);
		if (!p->conf.reorder && !p->chunks) {
			if (r == VFGX_STAGE_PASS)
				deliver(p, h.stream, h.seq, pay + VFGX_APP_HLEN,
					plen - VFGX_APP_HLEN, h.flags);
			else if (p->conf.verify_payload)
				p->st.drops[r]++;
			else
				deliver(p, 0, 0, pay, plen, 0);
			continue;
		}
		if (r == VFGX_STAGE_PASS && p->steer.owner &&
		    plen - VFGX_APP_HLEN <= p->slot_max) {
			uint16_t to = stream_owner(p, h.stream);

			if (to != p->steer.self) {
				struct vfgx_handoff ho = {
					.stream = h.stream, .flags = h.flags,
					.seq = h.seq, .body = pay + VFGX_APP_HLEN,
					.len = plen - VFGX_APP_HLEN,
				};

				p->steer.hand(p->steer.user, to, &ho);
				p->st.handed_over++;
				continue;
			}
		}
		if (r == VFGX_STAGE_PASS)
			r = p->chunks ? chunk_insert(p, &h, pay + VFGX_APP_HLEN,
						     plen - VFGX_APP_HLEN, now) :
					reorder_insert(p, &h, pay + VFGX_APP_HLEN,
						       plen - VFGX_APP_HLEN);
		if (r != VFGX_STAGE_PASS)
			p->st.drops[r]++;
	}
}

void vfgx_proc_set_steer(vfgx_proc *p, const struct vfgx_steer *s)
{
	p->steer = *s;
	if (!p->steer.mem_used)
		p->steer.mem_used = &p->own_mem;
}

void vfgx_proc_take(vfgx_proc *p, const struct vfgx_handoff *ho)
{
	struct vfgx_app_hdr h = { .stream = ho->stream, .flags = ho->flags,
				  .seq = ho->seq };
	int r;

	if (ho->flags & HANDOFF_RAW) {
		struct fmt_burst b;

		fmt_burst_make(p, vfgx_now_ns(), &b);
		fmt_packet(p, &b, ho->body, ho->len, false, b.kind, FMT_ANY);
		return;
	}
	r = p->chunks ? chunk_insert(p, &h, ho->body, ho->len, vfgx_now_ns()) :
			    reorder_insert(p, &h, ho->body, ho->len);

	if (r != VFGX_STAGE_PASS)
		p->st.drops[r]++;
}

void vfgx_proc_flush(vfgx_proc *p)
{
	uint32_t w = p->conf.reorder_window;

	if (p->chunks) {
		for (uint32_t i = 0; i < p->nb_chunk_streams; i++)
			vfgx_chunkset_flush(p->chunks, p->chunk_streams[i]);
		return;
	}
	if (!p->conf.reorder)
		return;
	for (uint32_t id = 0; id < p->conf.max_streams; id++) {
		struct reorder_stream *s = p->streams[id];
		uint64_t skipped = 0;

		if (!s || s == &refused_stream)
			continue;
		/* Deliver what is held; gaps count only between held slots. */
		for (uint32_t i = 0; i < w && s->held; i++) {
			struct vfgx_ro_flush f =
				vfgx_ro_flush_step(skipped, s->len[vfgx_ro_slot(s->base, w)] != 0);

			p->st.gaps += f.gaps_now;
			skipped = f.skipped;
			if (f.deliver)
				slot_advance(p, id, s);
			else
				s->base++;
		}
		s->base -= skipped;
	}
}

void vfgx_stats_add(struct vfgx_pipeline_stats *d,
		    const struct vfgx_pipeline_stats *s)
{
	d->packets += s->packets;
	d->bytes += s->bytes;
	d->passed += s->passed;
	d->delivered += s->delivered;
	d->delivered_bytes += s->delivered_bytes;
	d->gaps += s->gaps;
	d->verify_errors += s->verify_errors;
	d->last_seen += s->last_seen;
	d->handed_over += s->handed_over;
	d->streams_refused += s->streams_refused;
	d->reorder_bytes += s->reorder_bytes;
	d->order_errors += s->order_errors;
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		d->drops[i] += s->drops[i];
	for (int i = 0; i < VFGX_LAT_BUCKETS; i++)
		d->lat_hist[i] += s->lat_hist[i];
}

uint64_t vfgx_stats_lat_pct(const struct vfgx_pipeline_stats *st, double pct)
{
	uint64_t total = 0, acc = 0;

	for (int i = 0; i < VFGX_LAT_BUCKETS; i++)
		total += st->lat_hist[i];
	if (!total)
		return 0;
	for (int i = 0; i < VFGX_LAT_BUCKETS; i++) {
		acc += st->lat_hist[i];
		if ((double)acc >= (double)total * pct / 100.0)
			return 2ull << i;
	}
	return 2ull << (VFGX_LAT_BUCKETS - 1);
}
