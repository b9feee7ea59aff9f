/* chunk_compare.c - the GPU chunk tests' parity check (chunk_compare.h). */
#include <inttypes.h>
#include <stdio.h>

#include <vfgx/port.h>

#include "chunk_compare.h"

static const char *const k_names[GPUK_K_NCNT] = {
	"complete", "closed", "skipped", "placed", "missing", "late", "duplicates",
	"out_of_range", "backpressure", "backpressure_drops", "gaps",
};

uint64_t ck_fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

void ck_record(struct ck *k, const struct vfgx_chunk *c, const void *present,
	       size_t present_n, const void *lens, size_t lens_n, const void *data,
	       size_t data_n)
{
	*k = (struct ck){
		.stream = c->stream, .flags = c->flags,
		.present_count = c->present_count, .missing = c->missing,
		.hdr_flags = c->hdr_flags, .index = c->index, .bytes = c->bytes,
		.missing_bytes = c->missing_bytes, .first_seq = c->first_seq,
		.hdr_ts = c->hdr_ts,
	};
	k->hash = ck_fnv(ck_fnv(ck_fnv(CK_FNV0, present, present_n), lens, lens_n), data,
			 data_n);
}

void ck_counters(const struct vfgx_chunkset *cs, uint32_t streams, uint64_t *cnt)
{
	for (uint32_t s = 0; s < streams; s++) {
		const struct chunk_stream *c = &cs->streams[s];
		uint64_t *v = cnt + (size_t)s * GPUK_K_NCNT;

		if (cs->gpu) {
			vfgx_chunkset_gpu_counters(cs, s, v);
			continue;
		}
		v[GPUK_K_COMPLETE] = c->complete;
		v[GPUK_K_CLOSED] = c->closed;
		v[GPUK_K_SKIPPED] = c->skipped;
		v[GPUK_K_PLACED] = c->placed;
		v[GPUK_K_MISSING] = c->missing;
		v[GPUK_K_LATE] = c->late;
		v[GPUK_K_DUPLICATES] = c->duplicates;
		v[GPUK_K_OUT_OF_RANGE] = c->out_of_range;
		v[GPUK_K_BACKPRESSURE] = c->backpressure;
		v[GPUK_K_BP_DROPS] = c->backpressure_drops;
		v[GPUK_K_GAPS] = c->gaps;
	}
}

#define DIFF(f) if (a->f != b->f) { \
	printf("FAIL %s: stream %u chunk %u (index %" PRIu64 "): " #f " cpu %" PRIu64 " gpu %" PRIu64 "\n", \
	       what, s, j, a->index, (uint64_t)a->f, (uint64_t)b->f); return -1; }

int ck_compare(const char *what, uint32_t streams, const struct ck *ca, uint32_t na,
	       const uint64_t *a_cnt, const struct ck *cb, uint32_t nb, const uint64_t *b_cnt)
{
	for (uint32_t s = 0; s < streams; s++) {
		const uint64_t *va = a_cnt + (size_t)s * GPUK_K_NCNT;
		const uint64_t *vb = b_cnt + (size_t)s * GPUK_K_NCNT;
		uint32_t ia = 0, ib = 0, j = 0;

		for (;; j++) {
			const struct ck *a, *b;

			while (ia < na && ca[ia].stream != s)
				ia++;
			while (ib < nb && cb[ib].stream != s)
				ib++;
			if (ia == na || ib == nb) {
				if (ia != na || ib != nb) {
					printf("FAIL %s: stream %u: the gpu engine handed out %s chunks (%u the same)\n",
					       what, s, ia == na ? "more" : "fewer", j);
					return -1;
				}
				break;
			}
			a = &ca[ia++];
			b = &cb[ib++];
			DIFF(index);
			DIFF(flags);
			DIFF(present_count);
			DIFF(missing);
			DIFF(bytes);
			DIFF(missing_bytes);
			DIFF(first_seq);
			DIFF(hdr_ts);
			DIFF(hdr_flags);
			if (a->hash != b->hash) {
				printf("FAIL %s: stream %u chunk %u (index %" PRIu64 "): present map, lengths or bytes differ\n",
				       what, s, j, a->index);
				return -1;
			}
		}
		for (int i = 0; i < GPUK_K_NCNT; i++) {
			/* how often a placer waited for the consumer is timing */
			if (i != GPUK_K_BACKPRESSURE && va[i] != vb[i]) {
				printf("FAIL %s: stream %u chunk counter %s cpu %" PRIu64 " gpu %" PRIu64 "\n",
				       what, s, k_names[i], va[i], vb[i]);
				return -1;
			}
		}
	}
	return 0;
}

int ck_compare_drops(const char *what, const struct vfgx_pipeline_stats *a,
		     const struct vfgx_pipeline_stats *b)
{
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		if (a->drops[i] != b->drops[i]) {
			printf("FAIL %s: drop %s cpu %" PRIu64 " gpu %" PRIu64 "\n", what,
			       vfgx_drop_reason_name((enum vfgx_drop_reason)i), a->drops[i],
			       b->drops[i]);
			return -1;
		}
	return 0;
}
