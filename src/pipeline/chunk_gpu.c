/* chunk_gpu.c - the CPU's side of chunks placed by the GPU engine
 * (gpu_chunks.cuh): the pinned words the kernels publish through (per
 * slot descriptors, per stream rel_head and counters, the stop and
 * backpressure words), the parameters handed to the kernels, and the pull
 * that turns chunks the GPU made ready into descriptors in the ready
 * queue of chunk.c, in index order per stream. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/chunk.h>
#include <vfgx/port.h>

#include "chunkset.h"
#include "gpu_iface.h"

_Static_assert(VFGX_DROP_NOBUFS == 0, "gpu_chunks.cuh's KC_DROP_NOBUFS");

#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

struct chunk_gpu {
	vfgx_region *region;          /* pinned: desc, pub, stop, bp_wait, hdr */
	struct gpuk_chunk_desc *desc; /* streams * in_flight */
	struct gpuk_chunk_hdr *hdr;   /* streams * in_flight */
	const struct gpuk_chunk_desc *desc_dev; /* the GPU's view */
	struct gpuk_chunk_pub *pub;   /* streams */
	volatile uint32_t *stop, *bp_wait;
	uint64_t *seen;               /* per slot: the ready word last pulled */
	uint64_t *rel_seen;           /* per stream: rel_head last pulled */
	uint32_t *order;              /* pull's scratch: in_flight slots */
	uint64_t *word;               /* and their ready words */
};

static uint64_t ld_acq(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void gpu_free(struct chunk_gpu *g)
{
	if (!g)
		return;
	vfgx_region_destroy(g->region);
	free(g->seen);
	free(g->rel_seen);
	free(g->order);
	free(g->word);
	free(g);
}

int vfgx_chunkset_gpu_attach(struct vfgx_chunkset *cs, struct gpuk_chunks *ch)
{
	const struct vfgx_chunk_config *c = &cs->conf;
	size_t slots = (size_t)c->streams * c->in_flight;
	size_t d_bytes = ALIGN_UP(slots * sizeof(struct gpuk_chunk_desc), 128);
	size_t p_bytes = ALIGN_UP((size_t)c->streams * sizeof(struct gpuk_chunk_pub), 128);
	size_t h_bytes = ALIGN_UP(slots * sizeof(struct gpuk_chunk_hdr), 128);
	const struct vfgx_region_info *ri;
	struct chunk_gpu *g;
	uint8_t *h, *d;
	int ret;

	if (c->mem == VFGX_MEM_HOST)
		return vfgx_set_error(cs->ctx, -EINVAL,
				      "pipeline.chunks: mem host with device gpu: the GPU writes chunks into pinned or gpu memory (set chunks.mem)");
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->seen = calloc(slots, sizeof(*g->seen));
	g->rel_seen = calloc(c->streams, sizeof(*g->rel_seen));
	g->order = calloc(c->in_flight, sizeof(*g->order));
	g->word = calloc(c->in_flight, sizeof(*g->word));
	if (!g->seen || !g->rel_seen || !g->order || !g->word) {
		ret = -ENOMEM;
		goto fail;
	}
	/* before any kernel starts: compute-sanitizer flags host memory
	 * registered after a launch */
	ret = vfgx_region_create(cs->ctx, VFGX_MEM_PINNED, d_bytes + p_bytes + 128 + h_bytes,
				 (int)c->gpu_id, false, &g->region);
	if (ret)
		goto fail;
	ri = vfgx_region_info(g->region);
	h = ri->addr;
	d = ri->dev_addr;
	memset(h, 0, d_bytes + p_bytes + 128 + h_bytes);
	g->desc = (struct gpuk_chunk_desc *)h;
	g->hdr = (struct gpuk_chunk_hdr *)(h + d_bytes + p_bytes + 128);
	g->pub = (struct gpuk_chunk_pub *)(h + d_bytes);
	g->stop = (volatile uint32_t *)(h + d_bytes + p_bytes);
	g->bp_wait = g->stop + 16;
	/* the GPU writes gpu chunks in place: the host copy goes */
	if (cs->stage) {
		vfgx_chunk_cuda_stream_destroy(cs->copy_stream);
		vfgx_region_destroy(cs->stage_region);
		cs->total_bytes -= vfgx_region_info(cs->data_region)->size;
		cs->copy_stream = NULL;
		cs->stage_region = NULL;
		cs->stage = NULL;
		cs->host_base = NULL;
	}
	memset(ch, 0, sizeof(*ch));
	ch->on = 1;
	ch->payload_bytes = c->payload_bytes;
	ch->packets = c->packets;
	ch->streams = c->streams;
	/* what rules.h reads (by bytes: the packet's place is the format's) */
	ch->place = cs->rule.place;
	ch->field_offset = c->field_offset;
	ch->field_size = c->field_size;
	ch->in_flight = c->in_flight;
	ch->close_distance = c->close_distance;
	ch->timeout_ms = c->timeout_ms;
	ch->present_words = cs->present_words;
	ch->field_step = c->field_step;
	ch->slot_stride = cs->slot_stride;
	ch->present_off = (uint64_t)((uint8_t *)cs->streams[0].desc[0].dev_present -
				     (uint8_t *)cs->streams[0].desc[0].dev_data);
	ch->lens_off = (uint64_t)((uint8_t *)cs->streams[0].desc[0].dev_lens -
				  (uint8_t *)cs->streams[0].desc[0].dev_data);
	ch->data = cs->dev_base;
	ch->ready_word = cs->dev_ready_word;
	ch->returned_word = cs->dev_returned_word;
	ch->desc = (struct gpuk_chunk_desc *)d;
	g->desc_dev = ch->desc;
	ch->pub = (struct gpuk_chunk_pub *)(d + d_bytes);
	ch->stop = (const uint32_t *)(d + d_bytes + p_bytes);
	ch->bp_wait = (uint32_t *)(d + d_bytes + p_bytes) + 16;
	ch->hdr = (struct gpuk_chunk_hdr *)(d + d_bytes + p_bytes + 128);
	ch->by_bytes = cs->by_bytes;
	ch->by_offset = cs->by_bytes && cs->fmt->place == VFGX_FMT_PLACE_OFFSET;
	ch->id_bits = cs->id_bits;
	ch->chunk_bytes = cs->chunk_bytes;
	if (!ch->data || !ch->ready_word || !ch->returned_word || !d) {
		ret = vfgx_set_error(cs->ctx, -EINVAL,
				     "pipeline.chunks: chunk memory has no GPU view (mem %s)",
				     c->mem == VFGX_MEM_PINNED ? "pinned" : "gpu");
		goto fail;
	}
	cs->gpu = g;
	return 0;
fail:
	gpu_free(g);
	return ret;
}

void vfgx_chunkset_gpu_detach(struct vfgx_chunkset *cs)
{
	gpu_free(cs->gpu);
	cs->gpu = NULL;
}

void vfgx_chunkset_gpu_pull(struct vfgx_chunkset *cs)
{
	struct chunk_gpu *g = cs->gpu;
	uint32_t F = cs->conf.in_flight;
	uint64_t now = 0;

	for (uint32_t s = 0; s < cs->conf.streams; s++) {
		struct chunk_stream *st = &cs->streams[s];
		uint64_t rel = ld_acq(&g->pub[s].rel_head);
		uint32_t m = 0;

		if (rel == g->rel_seen[s])
			continue;
		/* the slots made ready below rel since the last pull (the GPU
		 * wrote them before rel), oldest first */
		for (uint32_t r = 0; r < F; r++) {
			size_t i = (size_t)s * F + r;
			uint64_t w = ld_acq((const uint64_t *)&cs->ready_word[i]);
			uint32_t at = m;

			if (w <= g->seen[i] || w - 1 >= rel)
				continue;
			for (; at && g->word[at - 1] > w; at--) {
				g->order[at] = g->order[at - 1];
				g->word[at] = g->word[at - 1];
			}
			g->order[at] = r;
			g->word[at] = w;
			m++;
		}
		if (m && !now)
			now = vfgx_now_ns();
		for (uint32_t j = 0; j < m; j++) {
			uint32_t r = g->order[j];
			size_t i = (size_t)s * F + r;
			const volatile struct gpuk_chunk_desc *md = &g->desc[i];
			const volatile struct gpuk_chunk_hdr *mh = &g->hdr[i];
			struct vfgx_chunk *d = &st->desc[r];
			uint64_t gpu_wait = md->ready_gt - md->last_gt;

			d->index = md->index;
			d->first = d->index * cs->conf.packets;
			d->present_count = (uint32_t)md->present_count;
			d->missing = (uint32_t)md->missing;
			d->flags = (uint32_t)md->flags;
			/* the header's fields and bytes, as chunk.c fills them */
			d->bytes = mh->bytes;
			d->missing_bytes = mh->missing_bytes;
			d->first_seq = mh->first_seq;
			d->hdr_ts = mh->hdr_ts;
			d->hdr_flags = mh->hdr_flags;
			d->stream_late = md->stream_late;
			d->late = 0;
			d->ready_ns = now;
			/* on the GPU's clock: last packet to made ready */
			d->last_packet_ns = now > gpu_wait ? now - gpu_wait : 0;
			g->seen[i] = d->index + 1;
			atomic_store_explicit(&st->state[r], CHUNK_READY, memory_order_release);
			if (!atomic_load_explicit(&st->cuda_consumed, memory_order_relaxed))
				vfgx_chunkset_enqueue_locked(cs, d);
		}
		g->rel_seen[s] = rel;
	}
}

void vfgx_chunkset_gpu_counters(const struct vfgx_chunkset *cs, uint32_t s,
				uint64_t *out)
{
	const volatile struct gpuk_chunk_pub *p = &cs->gpu->pub[s];

	for (int i = 0; i < GPUK_K_NCNT; i++)
		out[i] = p->cnt[i];
}

const struct gpuk_chunk_desc *vfgx_chunkset_gpu_desc_dev(const struct vfgx_chunkset *cs,
							 uint32_t stream, uint32_t slot)
{
	if (!cs->gpu || stream >= cs->conf.streams || slot >= cs->conf.in_flight)
		return NULL;
	return cs->gpu->desc_dev + (size_t)stream * cs->conf.in_flight + slot;
}

void vfgx_chunkset_gpu_stop(struct vfgx_chunkset *cs)
{
	__atomic_store_n(cs->gpu->stop, 1u, __ATOMIC_RELEASE);
}

bool vfgx_chunkset_gpu_waiting(struct vfgx_chunkset *cs)
{
	/* the GPU sets it at least once a millisecond while it waits */
	return __atomic_exchange_n(cs->gpu->bp_wait, 0u, __ATOMIC_ACQ_REL) != 0;
}

void vfgx_chunkset_gpu_reset(struct vfgx_chunkset *cs)
{
	struct chunk_gpu *g = cs->gpu;
	size_t slots = (size_t)cs->conf.streams * cs->conf.in_flight;

	memset(g->seen, 0, slots * sizeof(*g->seen));
	memset(g->rel_seen, 0, cs->conf.streams * sizeof(*g->rel_seen));
	memset((void *)g->pub, 0, cs->conf.streams * sizeof(*g->pub));
	*g->stop = 0;
}
