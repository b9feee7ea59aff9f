/* chunk.c - the chunk rings of a pipeline: memory for every stream's ring
 * (data, present bitmap and lengths of each slot laid out together, so a
 * slot is one contiguous copy), placement of records (by packet index, or
 * by bytes with a format) and the release rules of vfgx/chunk.h;
 * chunk_consumer.c is the consumer side. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vfgx/chunk.h>
#include <vfgx/stages.h>

#include "chunk_opts.h"
#include "chunkset.h"
#include "gpu_iface.h"
#include "rules.h"

#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))
/* Placers waiting for a held slot re-check this often (and on every put). */
#define BACKPRESSURE_WAIT_NS 200000
/* ...after polling a slot a CUDA stream may free for this long */
#define STREAM_SPIN_NS 1000000
#if defined(__x86_64__) || defined(__i386__)
#define spin_pause() __builtin_ia32_pause()
#else
#define spin_pause() ((void)0)
#endif

static void bump(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static uint64_t rd(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

/* The stream's state as rules.h takes it. */
static struct vfgx_ck_stream ck_state(const struct chunk_stream *st)
{
	struct vfgx_ck_stream v = { st->head, st->top, st->open };

	return v;
}

/* Does ring slot n % in_flight hold chunk n (filling)? */
static bool holds(const struct vfgx_chunkset *cs, const struct chunk_stream *st,
		  uint64_t n)
{
	uint32_t r = (uint32_t)(n % cs->conf.in_flight);

	return vfgx_ck_holds(atomic_load_explicit(&st->state[r], memory_order_relaxed) ==
				     CHUNK_FILLING,
			     st->desc[r].index, n);
}

/* Is the head chunk held with every packet present? */
static bool head_complete(const struct vfgx_chunkset *cs,
			  const struct chunk_stream *st)
{
	uint32_t r = (uint32_t)(st->head % cs->conf.in_flight);

	if (st->head > st->top || !holds(cs, st, st->head))
		return false;
	return cs->by_bytes ? st->bytes_in[r] >= st->desc[r].bytes :
			      st->desc[r].present_count == cs->conf.packets;
}

static size_t slot_index(const struct vfgx_chunkset *cs, uint32_t stream,
			 uint32_t slot)
{
	return vfgx_chunkset_slot(cs, stream, slot);
}

/* A slot's data holds its chunk's bytes and at least packets x
 * payload_bytes: what vfgx/chunk.h lets a consumer read at data (the
 * recorder's rows, Python's arrays), also by bytes, where a frame or heap
 * (chunk_bytes) may be smaller; else that read would reach the present
 * map and the next ring slot while the placer writes them. */
static size_t present_off(const struct vfgx_chunkset *cs)
{
	size_t slots = (size_t)cs->conf.packets * cs->conf.payload_bytes;

	return ALIGN_UP(cs->chunk_bytes > slots ? cs->chunk_bytes : slots, 256);
}

static size_t lens_off(const struct vfgx_chunkset *cs)
{
	return present_off(cs) + ALIGN_UP((size_t)cs->present_words * 8, 256);
}

static uint8_t *slot_host(const struct vfgx_chunkset *cs, uint32_t stream,
			  uint32_t slot)
{
	return cs->host_base + slot_index(cs, stream, slot) * cs->slot_stride;
}

static void desc_init(struct vfgx_chunkset *cs, uint32_t s, uint32_t r)
{
	struct vfgx_chunk *d = &cs->streams[s].desc[r];
	size_t off = slot_index(cs, s, r) * cs->slot_stride;
	uint8_t *dev = cs->dev_base ? cs->dev_base + off : NULL;
	/* what the consumer dereferences: the GPU's view for gpu memory */
	uint8_t *view = cs->conf.mem == VFGX_MEM_GPU ? dev : cs->host_base + off;

	memset(d, 0, sizeof(*d));
	d->stream = s;
	d->ring_slot = r;
	d->packets = cs->conf.packets;
	d->payload_bytes = cs->conf.payload_bytes;
	d->mem = cs->conf.mem;
	d->data = view;
	d->present = (uint64_t *)(view + present_off(cs));
	d->lens = (uint32_t *)(view + lens_off(cs));
	if (dev) {
		d->dev_data = dev;
		d->dev_present = (uint64_t *)(dev + present_off(cs));
		d->dev_lens = (uint32_t *)(dev + lens_off(cs));
	}
}

static int make_memory(struct vfgx_chunkset *cs)
{
	const struct vfgx_chunk_config *c = &cs->conf;
	size_t slots = (size_t)c->streams * c->in_flight;
	size_t bytes = slots * cs->slot_stride;
	const struct vfgx_region_info *ri;
	enum vfgx_mem_kind status_kind = c->mem == VFGX_MEM_HOST ?
						 VFGX_MEM_HOST : VFGX_MEM_PINNED;
	int ret;

	ret = vfgx_region_create(cs->ctx, c->mem, bytes, (int)c->gpu_id, false,
				 &cs->data_region);
	if (ret)
		return ret;
	ri = vfgx_region_info(cs->data_region);
	cs->dev_base = ri->dev_addr;
	if (c->mem == VFGX_MEM_GPU) {
		/* pinned, so that its copies to the GPU are DMA */
		ret = vfgx_region_create(cs->ctx, VFGX_MEM_PINNED, bytes, (int)c->gpu_id,
					 false, &cs->stage_region);
		if (ret || (ret = vfgx_chunk_cuda_stream(&cs->copy_stream, (int)c->gpu_id,
							   cs->ctx)))
			return ret;
		cs->stage = vfgx_region_info(cs->stage_region)->addr;
		cs->host_base = cs->stage;
	} else {
		cs->host_base = ri->addr;
	}
	memset(cs->host_base, 0, bytes);
	ret = vfgx_region_create(cs->ctx, status_kind,
				 ALIGN_UP((slots * 2 + 1) * sizeof(uint64_t), 4096),
				 (int)c->gpu_id, false, &cs->status_region);
	if (ret)
		return ret;
	ri = vfgx_region_info(cs->status_region);
	cs->ready_word = ri->addr;
	cs->returned_word = cs->ready_word + slots;
	cs->end_word = cs->ready_word + 2 * slots;
	if (ri->dev_addr) {
		cs->dev_ready_word = ri->dev_addr;
		cs->dev_returned_word = cs->dev_ready_word + slots;
		cs->dev_end_word = cs->dev_ready_word + 2 * slots;
	}
	memset(ri->addr, 0, (slots * 2 + 1) * sizeof(uint64_t));
	cs->total_bytes = bytes + (cs->stage ? bytes : 0);
	return 0;
}

int vfgx_chunkset_create(vfgx_ctx *ctx, const struct vfgx_chunk_config *conf,
			 struct vfgx_chunkset **out)
{
	return vfgx_chunkset_create_fmt(ctx, conf, NULL, out);
}

int vfgx_chunkset_create_fmt(vfgx_ctx *ctx, const struct vfgx_chunk_config *conf,
			     const struct vfgx_format *fmt, struct vfgx_chunkset **out)
{
	struct vfgx_chunkset *cs;
	int ret;

	*out = NULL;
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return -ENOMEM;
	cs->ctx = ctx;
	ret = vfgx_chunk_config_check(ctx, conf, &cs->conf);
	if (ret) {
		free(cs);
		return ret;
	}
	cs->rule = (struct vfgx_ck_conf){
		.packets = cs->conf.packets, .in_flight = cs->conf.in_flight,
		.close_distance = cs->conf.close_distance,
		.payload_bytes = cs->conf.payload_bytes, .place = cs->conf.place,
		.field_offset = cs->conf.field_offset,
		.field_size = cs->conf.field_size, .field_step = cs->conf.field_step,
	};
	cs->chunk_bytes = (size_t)cs->conf.packets * cs->conf.payload_bytes;
	if (fmt) {
		cs->fmt_copy = *fmt;
		cs->fmt = &cs->fmt_copy;
		/* slots: the rings' geometry is pipeline.chunks' */
		cs->fmt_copy.packets = cs->conf.packets;
		cs->fmt_copy.payload_bytes = cs->conf.payload_bytes;
		cs->by_bytes = fmt->place != VFGX_FMT_PLACE_SLOT;
	}
	if (cs->by_bytes) {
		/* the packet's place is the format's: its id, a present bit */
		cs->rule.place = VFGX_CHUNK_BY_SEQ;
		cs->chunk_bytes = fmt->chunk_bytes;
		cs->id_bits = fmt->place == VFGX_FMT_PLACE_LINES ? 32 : 48;
	}
	/* vfgx/chunk.h: a consumer (the recorders, Python, the device API)
	 * reads packets x payload_bytes at data; a format's larger chunk
	 * would be cut short there, silently */
	if (cs->by_bytes && cs->chunk_bytes > (uint64_t)cs->conf.packets * cs->conf.payload_bytes) {
		uint64_t need = (cs->chunk_bytes + cs->conf.payload_bytes - 1) / cs->conf.payload_bytes;

		ret = vfgx_set_error(ctx, -EINVAL,
				     "pipeline.chunks: the format's chunk is %llu bytes, more than packets x payload_bytes (%u x %u) that a chunk holds: set chunks.packets to at least %llu",
				     (unsigned long long)cs->chunk_bytes, cs->conf.packets,
				     cs->conf.payload_bytes, (unsigned long long)need);
		free(cs);
		return ret;
	}
	cs->present_words = (cs->conf.packets + 63) / 64;
	cs->slot_stride = ALIGN_UP(lens_off(cs) + (size_t)cs->conf.packets * 4, 4096);
	pthread_mutex_init(&cs->lock, NULL);
	pthread_cond_init(&cs->ready_cv, NULL);
	pthread_cond_init(&cs->free_cv, NULL);
	cs->q_cap = cs->conf.streams * cs->conf.in_flight;
	cs->queue = calloc(cs->q_cap, sizeof(*cs->queue));
	cs->streams = calloc(cs->conf.streams, sizeof(*cs->streams));
	if (!cs->queue || !cs->streams) {
		vfgx_chunkset_destroy(cs);
		return -ENOMEM;
	}
	for (uint32_t s = 0; s < cs->conf.streams; s++) {
		struct chunk_stream *st = &cs->streams[s];

		st->state = calloc(cs->conf.in_flight, sizeof(*st->state));
		st->desc = calloc(cs->conf.in_flight, sizeof(*st->desc));
		st->first_ns = calloc(cs->conf.in_flight, sizeof(*st->first_ns));
		st->copy_q = calloc(cs->conf.in_flight, sizeof(*st->copy_q));
		st->chunk_id = calloc(cs->conf.in_flight, sizeof(*st->chunk_id));
		st->bytes_in = calloc(cs->conf.in_flight, sizeof(*st->bytes_in));
		if (!st->state || !st->desc || !st->first_ns || !st->copy_q ||
		    !st->chunk_id || !st->bytes_in) {
			vfgx_chunkset_destroy(cs);
			return -ENOMEM;
		}
	}
	ret = make_memory(cs);
	if (ret) {
		vfgx_chunkset_destroy(cs);
		return ret;
	}
	for (uint32_t s = 0; s < cs->conf.streams; s++)
		for (uint32_t r = 0; r < cs->conf.in_flight; r++)
			desc_init(cs, s, r);
	*out = cs;
	return 0;
}

void vfgx_chunkset_destroy(struct vfgx_chunkset *cs)
{
	if (!cs)
		return;
	for (uint32_t s = 0; cs->streams && s < cs->conf.streams; s++) {
		free(cs->streams[s].state);
		free(cs->streams[s].desc);
		free(cs->streams[s].first_ns);
		free(cs->streams[s].copy_q);
		free(cs->streams[s].chunk_id);
		free(cs->streams[s].bytes_in);
	}
	vfgx_chunkset_gpu_detach(cs);
	free(cs->streams);
	free(cs->queue);
	vfgx_chunk_cuda_stream_destroy(cs->copy_stream);
	vfgx_region_destroy(cs->stage_region);
	vfgx_region_destroy(cs->data_region);
	vfgx_region_destroy(cs->status_region);
	pthread_mutex_destroy(&cs->lock);
	pthread_cond_destroy(&cs->ready_cv);
	pthread_cond_destroy(&cs->free_cv);
	free(cs);
}

/* The gaps inside closed chunk d (rules.h: vfgx_ck_gaps_from, _word_*). */
static void count_gaps(struct vfgx_chunkset *cs, struct chunk_stream *st,
		       const struct vfgx_chunk *d, const uint64_t *present,
		       bool later_known)
{
	uint32_t hi = 0, from = vfgx_ck_gaps_from(d->first, st->first_index);
	uint64_t gaps = 0;
	struct vfgx_ck_gaps tail;

	for (uint32_t w = cs->present_words; w-- > 0;) {
		if (present[w]) {
			hi = vfgx_ck_word_hi(present[w], w);
			break;
		}
	}
	for (uint32_t w = from / 64; w * 64 < hi; w++)
		gaps += vfgx_ck_word_gaps(present[w], w, from, hi);
	bump(&st->gaps, gaps);
	tail = vfgx_ck_gaps_split(later_known, d->packets - 1 - hi);
	bump(&st->gaps, tail.now);
	st->pending_gaps += tail.pending;
}

void vfgx_chunkset_enqueue_locked(struct vfgx_chunkset *cs, struct vfgx_chunk *d)
{
	cs->queue[(cs->q_head + cs->q_len) % cs->q_cap] = d;
	cs->q_len++;
	atomic_store_explicit(&cs->q_ready, cs->q_len, memory_order_release);
	pthread_cond_signal(&cs->ready_cv);
}

static void enqueue(struct vfgx_chunkset *cs, struct vfgx_chunk *d)
{
	pthread_mutex_lock(&cs->lock);
	vfgx_chunkset_enqueue_locked(cs, d);
	pthread_mutex_unlock(&cs->lock);
}

/* Chunk d (ring slot r of stream s) is ready: to the consumer.  Its
 * ready word may already say so (written by the copy's CUDA stream). */
static void publish(struct vfgx_chunkset *cs, uint32_t s, uint32_t r)
{
	struct chunk_stream *st = &cs->streams[s];
	struct vfgx_chunk *d = &st->desc[r];

	d->ready_ns = vfgx_now_ns(); /* visible from here on (after any copy) */
	atomic_store_explicit(&st->state[r], CHUNK_READY, memory_order_release);
	atomic_store_explicit(&cs->ready_word[slot_index(cs, s, r)], d->index + 1,
			      memory_order_release);
	if (!atomic_load_explicit(&st->cuda_consumed, memory_order_relaxed))
		enqueue(cs, d);
}

/* gpu memory: publish, oldest first, the released chunks of stream s
 * whose copies to the GPU are done: the copy's stream wrote the slot's
 * ready word (a load of pinned memory, no CUDA call).  With wait, every
 * one (after waiting for the copy stream). */
static void copies_done(struct vfgx_chunkset *cs, uint32_t s, bool wait)
{
	struct chunk_stream *st = &cs->streams[s];

	while (st->copy_qn) {
		uint32_t r = st->copy_q[st->copy_qh];

		if (atomic_load_explicit(&cs->ready_word[slot_index(cs, s, r)],
					 memory_order_acquire) < st->desc[r].index + 1) {
			if (!wait)
				return;
			/* a failed copy still goes out, as it is, with a line */
			if (vfgx_chunk_cuda_sync(cs->copy_stream, cs->ctx))
				vfgx_warn(cs->ctx, "chunks: stream %u chunk %" PRIu64 ": %s", s,
					  st->desc[r].index, vfgx_last_error(cs->ctx));
		}
		publish(cs, s, r);
		st->copy_qh = (st->copy_qh + 1) % cs->conf.in_flight;
		st->copy_qn--;
	}
}

/* Hand the head chunk out (or skip it when it got no packet) and advance.
 * later_known: a packet of a newer chunk has arrived.  A chunk in gpu
 * memory goes out once its copy is done (copies_done). */
static void release_head(struct vfgx_chunkset *cs, uint32_t s, uint32_t reason,
			 bool later_known)
{
	struct chunk_stream *st = &cs->streams[s];
	uint32_t r = (uint32_t)(st->head % cs->conf.in_flight);
	struct vfgx_chunk *d = &st->desc[r];
	uint8_t *host = slot_host(cs, s, r);
	struct vfgx_ck_release rl = vfgx_ck_release(
		cs->rule, holds(cs, st, st->head), d->present_count, reason, later_known);

	if (rl.skip) {
		bump(&st->gaps, rl.gaps.now);
		st->pending_gaps += rl.gaps.pending;
		bump(&st->skipped, 1);
		st->head++;
		return;
	}
	d->stream_late = rd(&st->late);
	if (cs->by_bytes) {
		struct vfgx_ck_release_b rb = vfgx_ck_release_bytes(1, d->bytes,
								    st->bytes_in[r], reason);

		d->missing = 0;
		d->flags = rb.flags;
		d->missing_bytes = rb.missing_bytes;
		bump(rb.missing_bytes ? &st->closed : &st->complete, 1);
		bump(&st->missing_bytes, rb.missing_bytes);
		goto out;
	}
	d->missing = rl.missing;
	d->flags = rl.flags;
	d->missing_bytes = (uint64_t)d->missing * cs->conf.payload_bytes;
	if (d->missing) {
		bump(&st->closed, 1);
		bump(&st->missing, d->missing);
		count_gaps(cs, st, d, (const uint64_t *)(host + present_off(cs)),
			   later_known);
	} else {
		bump(&st->complete, 1);
	}
out:
	if (cs->stage) {
		int ret = vfgx_chunk_cuda_copy_start(d->dev_data, host, cs->slot_stride,
						     cs->copy_stream,
						     cs->dev_ready_word + slot_index(cs, s, r),
						     d->index + 1, cs->ctx);

		atomic_store_explicit(&st->state[r], CHUNK_COPYING, memory_order_relaxed);
		st->copy_q[(st->copy_qh + st->copy_qn++) % cs->conf.in_flight] = r;
		if (ret) {
			/* it goes out at once, as it is, after those before it */
			vfgx_warn(cs->ctx, "chunks: stream %u chunk %" PRIu64 ": %s", s,
				  d->index, vfgx_last_error(cs->ctx));
			copies_done(cs, s, true);
		}
	} else {
		publish(cs, s, r);
	}
	st->head++;
}

/* Release chunks until head reaches target; a far jump releases what is
 * open and skips the rest at once. */
static void advance_to(struct vfgx_chunkset *cs, uint32_t s, uint64_t target,
		       uint32_t reason, bool later_known)
{
	struct chunk_stream *st = &cs->streams[s];
	struct vfgx_ck_advance a = vfgx_ck_advance(cs->rule, st->head, target,
						   later_known);

	for (uint64_t i = 0; i < a.jump.steps; i++)
		release_head(cs, s, reason, later_known);
	if (a.jump.skipped) {
		bump(&st->skipped, a.jump.skipped);
		bump(&st->gaps, a.gaps);
	}
	st->head = target;
}

/* A slot returned from a CUDA stream is free once its returned word says
 * so: a chunk the stream waited for (READY), or one taken with get and
 * given back with stream_put (HELD). */
static bool slot_free(struct vfgx_chunkset *cs, uint32_t s, uint32_t r)
{
	struct chunk_stream *st = &cs->streams[s];
	uint32_t v = atomic_load_explicit(&st->state[r], memory_order_acquire);

	if (v == CHUNK_FREE)
		return true;
	if ((v == CHUNK_READY || v == CHUNK_HELD) &&
	    atomic_load_explicit(&cs->returned_word[slot_index(cs, s, r)],
				 memory_order_acquire) >= st->desc[r].index + 1) {
		atomic_store_explicit(&st->state[r], CHUNK_FREE, memory_order_relaxed);
		return true;
	}
	return false;
}

/* Make ring slot r hold chunk n: wait while the consumer holds it; -1
 * when stopped meanwhile. */
static int slot_open(struct vfgx_chunkset *cs, uint32_t s, uint32_t r,
		     uint64_t n, uint64_t now)
{
	struct chunk_stream *st = &cs->streams[s];
	struct vfgx_chunk *d = &st->desc[r];
	uint8_t *host;

	if (atomic_load_explicit(&st->state[r], memory_order_relaxed) == CHUNK_FILLING)
		return 0; /* holds n: every chunk in [head, head + in_flight) */
	if (atomic_load_explicit(&st->state[r], memory_order_relaxed) == CHUNK_COPYING)
		copies_done(cs, s, true);
	if (!slot_free(cs, s, r)) {
		bump(&st->backpressure, 1);
		/* a CUDA stream frees a slot by writing its returned word and
		 * rings no bell: look for it a while before sleeping */
		if (cs->dev_returned_word)
			for (uint64_t t0 = vfgx_now_ns();
			     !slot_free(cs, s, r) && vfgx_now_ns() - t0 < STREAM_SPIN_NS &&
			     !atomic_load_explicit(&cs->stopping, memory_order_relaxed);)
				spin_pause();
		pthread_mutex_lock(&cs->lock);
		while (!slot_free(cs, s, r) &&
		       !atomic_load_explicit(&cs->stopping, memory_order_relaxed)) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += BACKPRESSURE_WAIT_NS;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&cs->free_cv, &cs->lock, &ts);
		}
		pthread_mutex_unlock(&cs->lock);
		if (!slot_free(cs, s, r)) {
			bump(&st->backpressure_drops, 1);
			return -1;
		}
	}
	host = slot_host(cs, s, r);
	memset(host + present_off(cs), 0, (size_t)cs->present_words * 8);
	memset(host + lens_off(cs), 0, (size_t)cs->conf.packets * 4);
	d->index = n;
	d->first = n * cs->conf.packets;
	__atomic_store_n(&d->late, 0, __ATOMIC_RELAXED);
	d->present_count = 0;
	d->missing = 0;
	d->flags = 0;
	d->hdr_flags = 0;
	d->first_seq = d->hdr_ts = d->missing_bytes = 0;
	d->ready_ns = 0; /* not the previous chunk's: count_late reads it */
	d->bytes = cs->chunk_bytes;
	st->bytes_in[r] = 0;
	st->first_ns[r] = now;
	atomic_store_explicit(&st->state[r], CHUNK_FILLING, memory_order_relaxed);
	return 0;
}

/* The header's first-packet fields of a chunk just opened (d). */
static void chunk_first(const struct vfgx_chunkset *cs, struct vfgx_chunk *d,
			uint64_t seq, const struct vfgx_fmt_pkt *o)
{
	d->first_seq = seq;
	if (o && vfgx_fmt_hdr_ts(cs->fmt, o, &d->hdr_ts))
		d->hdr_flags |= VFGX_CHUNK_HDR_TS;
}

static int place_slot(struct vfgx_chunkset *cs, uint32_t stream, uint64_t seq,
		      const uint8_t *body, uint32_t len, uint64_t now,
		      const uint8_t **slot_data, const struct vfgx_fmt_pkt *o);

int vfgx_chunkset_place(struct vfgx_chunkset *cs, uint32_t stream,
			uint64_t seq, const uint8_t *body, uint32_t len,
			uint64_t now, const uint8_t **slot_data)
{
	return place_slot(cs, stream, seq, body, len, now, slot_data, NULL);
}

/* After a placement: release the complete head chunks, close by distance. */
static void settle(struct vfgx_chunkset *cs, uint32_t stream, uint64_t n)
{
	struct chunk_stream *st = &cs->streams[stream];
	struct vfgx_ck_settle se;

	if (n > st->top)
		st->top = n;
	while ((se = vfgx_ck_settle(cs->rule, ck_state(st), head_complete(cs, st))).act ==
	       VFGX_CK_RELEASE)
		release_head(cs, stream, VFGX_CHUNK_COMPLETE, se.later_known);
	if (se.act == VFGX_CK_CLOSE)
		advance_to(cs, stream, se.target, VFGX_CHUNK_BY_DISTANCE, true);
}

/* A placement's late packet: counted, and on its chunk while held. */
static void count_late(struct chunk_stream *st, const struct vfgx_ck_place *pl)
{
	struct vfgx_chunk *old = &st->desc[pl->slot];

	bump(&st->late, 1);
	if (old->index == pl->n && old->ready_ns &&
	    atomic_load_explicit(&st->state[pl->slot], memory_order_relaxed) != CHUNK_FILLING)
		__atomic_store_n(&old->late, old->late + 1, __ATOMIC_RELAXED);
}

/* What both placements do with the rule's decision before writing: the
 * stream's first packet opens it, a refusal is counted, a packet past the
 * ring closes the oldest chunks, and the ring slot is opened (waiting
 * while the consumer holds it).  VFGX_STAGE_PASS: write the packet. */
static int place_admit(struct vfgx_chunkset *cs, uint32_t stream,
		       const struct vfgx_ck_place *pl, uint64_t now)
{
	struct chunk_stream *st = &cs->streams[stream];

	if (pl->open) {
		st->open = true;
		st->head = st->top = pl->n;
		st->first_index = pl->p;
	}
	if (pl->verdict != VFGX_STAGE_PASS) {
		if (pl->out_of_range)
			bump(&st->out_of_range, 1);
		if (pl->late)
			count_late(st, pl);
		return pl->verdict;
	}
	if (pl->advance)
		advance_to(cs, stream, pl->target, VFGX_CHUNK_BY_RING, true);
	if (slot_open(cs, stream, pl->slot, pl->n, now))
		return VFGX_DROP_NOBUFS;
	return VFGX_STAGE_PASS;
}

/* By bytes: chunk by the format's id, present bit by vfgx_ck_byte_key,
 * every piece at its offset (vfgx_fmt_place checked each ends inside the
 * chunk). */
static int place_bytes(struct vfgx_chunkset *cs, struct vfgx_fmt_pkt *o,
		       const uint8_t *pay, uint64_t now)
{
	struct chunk_stream *st = &cs->streams[o->stream];
	struct vfgx_ck_bidx b;
	struct vfgx_ck_place pl;
	struct vfgx_chunk *d;
	uint64_t *present, nf = 0, end_at = 0, got = 0;
	uint32_t k, r;
	int found = 0, v;
	uint8_t *host;

	v = vfgx_fmt_place(cs->fmt, o);
	if (v != VFGX_FD_OK) {
		bump(&st->out_of_range, 1);
		return vfgx_fmt_drop_reason(v);
	}
	if (o->nseg == 0)
		return VFGX_R_BAD_LENGTH;
	/* the open chunk with this id: most packets are top's */
	for (uint64_t n = st->top + 1; st->open && n-- > st->head;) {
		r = (uint32_t)(n % cs->conf.in_flight);
		if (holds(cs, st, n) && st->chunk_id[r] == o->chunk) {
			found = 1;
			nf = n;
			break;
		}
		if (st->top - n + 1 >= cs->conf.in_flight)
			break;
	}
	b = vfgx_ck_byte_chunk(ck_state(st), st->top_id, o->chunk, cs->id_bits, found, nf);
	if (b.late) {
		bump(&st->late, 1);
		return VFGX_R_LATE;
	}
	v = vfgx_ck_byte_key(cs->rule, cs->fmt->place == VFGX_FMT_PLACE_OFFSET, o->ext_seq,
			     o->seg[0].dst_off, &k);
	if (v != VFGX_STAGE_PASS) {
		bump(&st->out_of_range, 1);
		return v;
	}
	pl = vfgx_ck_place(cs->rule, ck_state(st), b.n * cs->conf.packets + k, pay, 0);
	if ((v = place_admit(cs, o->stream, &pl, now)) != VFGX_STAGE_PASS)
		return v;
	d = &st->desc[pl.slot];
	host = slot_host(cs, o->stream, pl.slot);
	present = (uint64_t *)(host + present_off(cs)) + pl.k / 64;
	if (vfgx_ck_dup(*present, pl.k) != VFGX_STAGE_PASS) {
		bump(&st->duplicates, 1);
		return VFGX_R_DUPLICATE;
	}
	if (d->present_count == 0) {
		st->chunk_id[pl.slot] = o->chunk;
		chunk_first(cs, d, o->ext_seq, o);
	}
	if (b.new_top)
		st->top_id = o->chunk;
	for (uint32_t i = 0; i < o->nseg; i++) {
		memcpy(host + o->seg[i].dst_off, pay + o->seg[i].src_off, o->seg[i].len);
		got += o->seg[i].len;
		if (o->seg[i].dst_off + o->seg[i].len > end_at)
			end_at = o->seg[i].dst_off + o->seg[i].len;
	}
	((uint32_t *)(host + lens_off(cs)))[pl.k] = (uint32_t)got;
	*present |= 1ull << (pl.k % 64);
	d->present_count++;
	st->bytes_in[pl.slot] += got;
	d->bytes = vfgx_ck_byte_span(d->bytes, (int)o->end, end_at, o->chunk_bytes);
	if (o->end)
		d->hdr_flags |= VFGX_CHUNK_ENDED;
	d->last_packet_ns = now;
	bump(&st->placed, 1);
	settle(cs, o->stream, pl.n);
	return VFGX_STAGE_PASS;
}

int vfgx_chunkset_place_pkt(struct vfgx_chunkset *cs, struct vfgx_fmt_pkt *o,
			    const uint8_t *pay, uint64_t now,
			    const uint8_t **data, uint32_t *len)
{
	if (o->stream >= cs->conf.streams)
		return VFGX_R_BAD_STREAM;
	if (!cs->by_bytes) {
		*len = o->payload_len;
		return place_slot(cs, o->stream, o->ext_seq, pay + o->payload_off,
				  o->payload_len, now, data, o);
	}
	*data = pay + o->payload_off;
	*len = o->payload_len;
	return place_bytes(cs, o, pay, now);
}

static int place_slot(struct vfgx_chunkset *cs, uint32_t stream, uint64_t seq,
		      const uint8_t *body, uint32_t len, uint64_t now,
		      const uint8_t **slot_data, const struct vfgx_fmt_pkt *o)
{
	const struct vfgx_chunk_config *c = &cs->conf;
	struct chunk_stream *st;
	struct vfgx_chunk *d;
	struct vfgx_ck_place pl;
	uint64_t *present;
	int ret;
	uint8_t *host;

	if (stream >= c->streams)
		return VFGX_R_BAD_STREAM;
	st = &cs->streams[stream];
	pl = vfgx_ck_place(cs->rule, ck_state(st), seq, body, len);
	if ((ret = place_admit(cs, stream, &pl, now)) != VFGX_STAGE_PASS)
		return ret;
	d = &st->desc[pl.slot];
	host = slot_host(cs, stream, pl.slot);
	present = (uint64_t *)(host + present_off(cs)) + pl.k / 64;
	if (vfgx_ck_dup(*present, pl.k) != VFGX_STAGE_PASS) {
		bump(&st->duplicates, 1);
		return VFGX_R_DUPLICATE;
	}
	if (st->pending_gaps) {
		bump(&st->gaps, st->pending_gaps);
		st->pending_gaps = 0;
	}
	if (d->present_count == 0)
		chunk_first(cs, d, seq, o);
	memcpy(host + (size_t)pl.k * c->payload_bytes, body, len);
	((uint32_t *)(host + lens_off(cs)))[pl.k] = len;
	*present |= 1ull << (pl.k % 64);
	d->present_count++;
	d->last_packet_ns = now;
	bump(&st->placed, 1);
	*slot_data = host + (size_t)pl.k * c->payload_bytes;
	if (o && o->end)
		d->hdr_flags |= VFGX_CHUNK_ENDED;
	settle(cs, stream, pl.n);
	return VFGX_STAGE_PASS;
}

/* The oldest chunk with packets timed out: release it with the empty ones
 * before it (an empty chunk has no time of its own). */
void vfgx_chunkset_tick(struct vfgx_chunkset *cs, uint32_t stream, uint64_t now)
{
	uint64_t limit = (uint64_t)cs->conf.timeout_ms * 1000000ull;
	struct chunk_stream *st;

	if (stream >= cs->conf.streams)
		return;
	st = &cs->streams[stream];
	for (;;) {
		uint64_t m = st->head, end;

		while (m <= st->top && !holds(cs, st, m))
			m++;
		end = vfgx_ck_tick(ck_state(st), m,
				   m <= st->top ? st->first_ns[m % cs->conf.in_flight] : 0,
				   now, limit);
		if (!end)
			break;
		while (st->head < end)
			release_head(cs, stream, VFGX_CHUNK_BY_TIMEOUT,
				     st->head < st->top);
	}
}

void vfgx_chunkset_flush(struct vfgx_chunkset *cs, uint32_t stream)
{
	struct chunk_stream *st;

	if (stream >= cs->conf.streams || !cs->streams[stream].open)
		return;
	st = &cs->streams[stream];
	for (uint64_t i = vfgx_ck_flush(cs->rule, ck_state(st)); i > 0; i--)
		release_head(cs, stream, VFGX_CHUNK_BY_END, st->head < st->top);
	st->top = st->head;
	if (cs->stage)
		copies_done(cs, stream, true);
}

void vfgx_chunkset_copies(struct vfgx_chunkset *cs, uint32_t stream)
{
	if (cs->stage && stream < cs->conf.streams && cs->streams[stream].open)
		copies_done(cs, stream, false);
}

void vfgx_chunkset_reset(struct vfgx_chunkset *cs)
{
	size_t slots = (size_t)cs->conf.streams * cs->conf.in_flight;

	for (uint32_t s = 0; s < cs->conf.streams; s++) {
		struct chunk_stream *st = &cs->streams[s];

		st->open = false;
		st->pending_gaps = 0;
		st->next_out = 0;
		st->copy_qh = st->copy_qn = 0;
		for (uint32_t r = 0; r < cs->conf.in_flight; r++)
			atomic_store(&st->state[r], CHUNK_FREE);
		atomic_store(&st->complete, 0);
		atomic_store(&st->closed, 0);
		atomic_store(&st->skipped, 0);
		atomic_store(&st->placed, 0);
		atomic_store(&st->missing, 0);
		atomic_store(&st->missing_bytes, 0);
		atomic_store(&st->late, 0);
		atomic_store(&st->duplicates, 0);
		atomic_store(&st->out_of_range, 0);
		atomic_store(&st->backpressure, 0);
		atomic_store(&st->backpressure_drops, 0);
		atomic_store(&st->gaps, 0);
	}
	/* chunk indexes start again: no word may say a new one is ready or
	 * returned (either engine) */
	memset((void *)cs->ready_word, 0, slots * sizeof(uint64_t));
	memset((void *)cs->returned_word, 0, slots * sizeof(uint64_t));
	atomic_store(cs->end_word, 0);
	if (cs->gpu)
		vfgx_chunkset_gpu_reset(cs);
	pthread_mutex_lock(&cs->lock);
	cs->q_head = cs->q_len = 0;
	atomic_store(&cs->q_ready, 0);
	cs->handed_out = cs->returned = cs->order_errors = 0;
	cs->finished = false;
	atomic_store(&cs->finished_flag, false);
	pthread_mutex_unlock(&cs->lock);
}

void vfgx_chunkset_finish(struct vfgx_chunkset *cs)
{
	pthread_mutex_lock(&cs->lock);
	cs->finished = true;
	atomic_store(&cs->finished_flag, true);
	/* after every ready word (the engine is done): a GPU consumer that
	 * sees it looks at its slot once more (vfgx_dev_chunk_poll) */
	atomic_store_explicit(cs->end_word, 1, memory_order_release);
	pthread_cond_broadcast(&cs->ready_cv);
	pthread_mutex_unlock(&cs->lock);
}

void vfgx_chunkset_stop(struct vfgx_chunkset *cs)
{
	atomic_store(&cs->stopping, true);
	if (cs->gpu)
		vfgx_chunkset_gpu_stop(cs);
	pthread_mutex_lock(&cs->lock);
	pthread_cond_broadcast(&cs->free_cv);
	pthread_mutex_unlock(&cs->lock);
}
