/* chunk_compare.h - the GPU chunk tests' parity check: a cpu run's chunks
 * against a gpu run's of the same traffic, chunk by chunk per stream
 * (every descriptor field and a hash of the present words, lengths and
 * bytes), then each stream's chunk counters.  A difference prints one
 * "FAIL what: ..." line.  Shared by test_place_gpu.c and
 * test_format_chunks_gpu.c (chunk_compare.c compiled into both). */
#ifndef VFGX_TESTS_GPU_CHUNK_COMPARE_H
#define VFGX_TESTS_GPU_CHUNK_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include <vfgx/chunk.h>
#include <vfgx/pipeline.h>

#include "pipeline/chunkset.h"
#include "pipeline/gpu_iface.h" /* GPUK_K_*: the chunk counters */

/* A chunk as handed out: its descriptor's fields and a hash of its present
 * words, lengths and every byte of its chunk memory. */
struct ck {
	uint32_t stream, flags, present_count, missing, hdr_flags;
	uint64_t index, bytes, missing_bytes, first_seq, hdr_ts, hash;
};

/* FNV-1a over n bytes at p, from h (start: CK_FNV0). */
#define CK_FNV0 0xcbf29ce484222325ull
uint64_t ck_fnv(uint64_t h, const void *p, size_t n);

/* k: chunk c's descriptor fields and the hash of its present words,
 * lengths and bytes as copied to the host (present_n, lens_n, data_n
 * bytes of each). */
void ck_record(struct ck *k, const struct vfgx_chunk *c, const void *present,
	       size_t present_n, const void *lens, size_t lens_n, const void *data,
	       size_t data_n);

/* cnt[s * GPUK_K_NCNT + i]: stream s's chunk counter i, for the first
 * `streams` streams of cs, from whichever engine filled it. */
void ck_counters(const struct vfgx_chunkset *cs, uint32_t streams, uint64_t *cnt);

/* The gpu run's na chunks b and counters b_cnt against the cpu run's a
 * and a_cnt, stream by stream for `streams` streams; the counters as
 * ck_counters fills them.  All but GPUK_K_BACKPRESSURE compared (how often
 * a placer waited for the consumer is timing).  0 when the same; -1 after
 * one FAIL line naming `what`. */
int ck_compare(const char *what, uint32_t streams, const struct ck *a, uint32_t na,
	       const uint64_t *a_cnt, const struct ck *b, uint32_t nb, const uint64_t *b_cnt);

/* The per-reason drop counts of two runs' stats (cpu a, gpu b): 0 when the
 * same; -1 after one FAIL line. */
int ck_compare_drops(const char *what, const struct vfgx_pipeline_stats *a,
		     const struct vfgx_pipeline_stats *b);

#endif
