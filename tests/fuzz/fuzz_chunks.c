/* fuzz_chunks.c - libFuzzer target: hostile records into a chunk set.
 * The first bytes pick the placement (sequence or a header field, its
 * offset, size and step, packets per chunk, ring size, close distance);
 * the rest is records (stream, sequence, length, payload) placed one after
 * another, with a consumer taking and returning ready chunks between them.
 * Must never write outside the slot a record belongs to (checked against
 * the slot's bounds, not only by ASan: slots share one region), never
 * crash, and keep every handed-out chunk's mask, lengths and counts
 * consistent. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/vfgx.h>

#include "pipeline/chunkset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_chunk(const struct vfgx_chunkset *cs, const struct vfgx_chunk *d)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < d->packets; i++) {
		int in = (int)(d->present[i / 64] >> (i % 64) & 1);

		if ((!in && d->lens[i]) || d->lens[i] > d->payload_bytes)
			abort();
		n += (uint32_t)in;
	}
	if (n != d->present_count || d->missing != d->packets - n ||
	    d->index % cs->conf.in_flight != d->ring_slot)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static vfgx_ctx *ctx;
	struct vfgx_chunk_config c;
	struct vfgx_chunkset *cs;
	size_t off = 8;

	if (size < 8 || size > 8192)
		return 0;
	if (!ctx && vfgx_ctx_create(&ctx))
		abort();
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	vfgx_chunk_config_default(&c);
	c.payload_bytes = 1u + data[0] % 48;
	c.packets = 1u + data[1] % 70;
	c.in_flight = 2u + data[2] % 4;
	c.streams = 1u + data[3] % 3;
	c.place = data[4] & 1 ? VFGX_CHUNK_BY_FIELD : VFGX_CHUNK_BY_SEQ;
	c.field_offset = data[5] % 64;
	c.field_size = data[4] & 2 ? 8 : 4;
	c.field_step = 1u + data[6] % 5;
	c.close_distance = data[7] % 6;
	c.timeout_ms = data[4] & 4 ? 1 : 0;
	if (vfgx_chunkset_create(ctx, &c, &cs))
		return 0;
	/* single-threaded: a placer must never wait for this consumer */
	vfgx_chunkset_stop(cs);
	while (off + 11 <= size) {
		uint32_t stream = data[off] % 4;
		uint64_t seq = 0, now = off * 100000ull;
		uint32_t len = data[off + 9] % 64;
		const uint8_t *slot = NULL;
		uint8_t *body;
		int r;

		for (int i = 0; i < 8; i++)
			seq = seq << 8 | data[off + 1 + i];
		if (data[off + 10] & 1)
			seq %= 512; /* mostly near one another */
		off += 11;
		if (len > size - off)
			len = (uint32_t)(size - off);
		body = malloc(len ? len : 1); /* exact size: ASan sees overreads */
		if (!body)
			break;
		memcpy(body, data + off, len);
		off += len;
		r = vfgx_chunkset_place(cs, stream, seq, body, len, now, &slot);
		if (r == VFGX_STAGE_PASS) {
			const struct chunk_stream *st = &cs->streams[stream];
			uintptr_t lo = (uintptr_t)cs->host_base;
			size_t ring = (size_t)cs->conf.streams * cs->conf.in_flight * cs->slot_stride;
			size_t in_slot;

			if ((uintptr_t)slot < lo || (uintptr_t)slot >= lo + ring)
				abort();
			in_slot = ((uintptr_t)slot - lo) % cs->slot_stride;
			if (in_slot % cs->conf.payload_bytes ||
			    in_slot + len > cs->chunk_bytes || memcmp(slot, body, len) ||
			    !st->open)
				abort();
		}
		free(body);
		vfgx_chunkset_tick(cs, stream, now);
		/* the consumer: take what is ready, return it */
		for (struct vfgx_chunk *d; !vfgx_chunkset_get(cs, 0, &d);) {
			check_chunk(cs, d);
			vfgx_chunkset_put(cs, d->stream, d->index);
		}
	}
	for (uint32_t s = 0; s < cs->conf.streams; s++)
		vfgx_chunkset_flush(cs, s);
	vfgx_chunkset_finish(cs);
	for (struct vfgx_chunk *d; !vfgx_chunkset_get(cs, 0, &d);)
		check_chunk(cs, d);
	vfgx_chunkset_destroy(cs);
	return 0;
}
