/* chunk_rig.h - the unit tests' engine-and-chunk-set helpers: hand an
 * engine one payload packet, take the next ready chunk without waiting,
 * destroy the pair.  Included after <vfgx/vfgx.h> and
 * "pipeline/chunkset.h" by the tests that drive a vfgx_proc into a
 * chunk set (test_chunks, test_chunk_bytes, test_user_place). */
#ifndef VFGX_TESTS_UNIT_CHUNK_RIG_H
#define VFGX_TESTS_UNIT_CHUNK_RIG_H

#include <stdint.h>

#include <vfgx/pipeline.h>

/* One packet of `len` payload bytes to the engine. */
static inline void proc_feed(vfgx_proc *p, const uint8_t *data, uint32_t len)
{
	struct vfgx_pkt k = { .data = (uint8_t *)data, .len = len, .flags = VFGX_PKT_PAYLOAD };

	vfgx_proc_burst(p, &k, 1);
}

/* The next ready chunk, or NULL (vfgx_chunk_get's polling side). */
static inline struct vfgx_chunk *next_ready(struct vfgx_chunkset *cs)
{
	struct vfgx_chunk *d;

	return vfgx_chunkset_get(cs, 0, &d) ? NULL : d;
}

static inline void proc_rig_free(vfgx_proc *p, struct vfgx_chunkset *cs)
{
	vfgx_proc_destroy(p);
	vfgx_chunkset_destroy(cs);
}

#endif
