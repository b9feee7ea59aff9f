/* fuzz_format_chunks.c - libFuzzer target: hostile packets of a producer's
 * header into chunks by bytes (the cpu engine's path: vfgx_fmt_decode,
 * vfgx_seq_extend, vfgx_chunkset_place_pkt).  The first bytes pick the
 * format (rtp-video or spead, small frames and heaps) and the ring; the
 * rest is packets (a length byte, then the UDP payload), each in its own
 * exact allocation (ASan sees overreads), with a consumer taking and
 * returning ready chunks between them.  Every piece placed must lie in
 * its chunk's bytes, and every handed-out chunk's counts must agree
 * (bytes <= chunk size, missing_bytes <= bytes, complete means none
 * missing, present_count = the present bits): a write past a chunk's
 * bytes in the shared region would show in its present map. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/vfgx.h>
#include <vfgx/format.h>

#include "pipeline/chunkset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_chunk(const struct vfgx_chunkset *cs, const struct vfgx_chunk *d)
{
	uint32_t n = 0;

	for (uint32_t w = 0; w < cs->present_words; w++)
		n += (uint32_t)__builtin_popcountll(d->present[w]);
	if (n != d->present_count || d->bytes > cs->chunk_bytes ||
	    d->missing_bytes > d->bytes ||
	    ((d->flags & VFGX_CHUNK_COMPLETE) && d->missing_bytes) ||
	    d->index % cs->conf.in_flight != d->ring_slot)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static vfgx_ctx *ctx;
	struct vfgx_chunk_config c;
	struct vfgx_chunkset *cs;
	struct vfgx_format f;
	struct vfgx_seq_state seq[2];
	size_t off = 4;

	if (size < 4 || size > 16384)
		return 0;
	if (!ctx && vfgx_ctx_create(&ctx))
		abort();
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	if (data[0] & 1) {
		vfgx_format_profile("rtp-video", &f);
		f.stride = 4u * (1 + data[1] % 16);
		f.chunk_bytes = (uint64_t)f.stride * (1 + data[1] / 16);
	} else {
		vfgx_format_profile("spead", &f);
		f.chunk_bytes = 16u * (1 + data[1] % 64);
	}
	f.max_streams = 2;
	vfgx_chunk_config_default(&c);
	c.payload_bytes = 1u + data[2] % 64;
	c.packets = 1u + data[3] % 70;
	c.in_flight = 2u + data[0] / 2 % 4;
	c.streams = 2;
	c.close_distance = data[0] / 8 % 4;
	if (vfgx_chunkset_create_fmt(ctx, &c, &f, &cs))
		return 0;
	memset(seq, 0, sizeof(seq));
	/* single-threaded: a placer must never wait for this consumer */
	vfgx_chunkset_stop(cs);
	while (off < size) {
		uint32_t len = data[off++];
		struct vfgx_fmt_pkt o;
		const uint8_t *shown = NULL;
		uint32_t shown_len = 0;
		uint8_t *pkt;
		int r;

		if (len > size - off)
			len = (uint32_t)(size - off);
		pkt = malloc(len ? len : 1);
		if (!pkt)
			break;
		memcpy(pkt, data + off, len);
		off += len;
		r = vfgx_fmt_decode(cs->fmt, pkt, len, &o);
		if (r == VFGX_FD_OK && o.stream < 2)
			r = vfgx_seq_extend(cs->fmt, &seq[o.stream], o.seq, &o.ext_seq);
		if (r == VFGX_FD_OK && o.stream < 2) {
			r = vfgx_chunkset_place_pkt(cs, &o, pkt, off * 1000, &shown, &shown_len);
			if (r == VFGX_STAGE_PASS)
				for (uint32_t i = 0; i < o.nseg; i++)
					if (o.seg[i].dst_off + o.seg[i].len > cs->chunk_bytes ||
					    o.seg[i].src_off + o.seg[i].len > len)
						abort();
		}
		free(pkt);
		for (struct vfgx_chunk *d; !vfgx_chunkset_get(cs, 0, &d);) {
			check_chunk(cs, d);
			vfgx_chunkset_put(cs, d->stream, d->index);
		}
	}
	for (uint32_t s = 0; s < c.streams; s++)
		vfgx_chunkset_flush(cs, s);
	vfgx_chunkset_finish(cs);
	for (struct vfgx_chunk *d; !vfgx_chunkset_get(cs, 0, &d);)
		check_chunk(cs, d);
	vfgx_chunkset_destroy(cs);
	return 0;
}
