/* flow_sum.c - a user module for `vfgx run` (include/vfgx/user.h), loaded
 * at run time from pipeline.user.library: no rebuild of libvfgx.
 *
 * Per record (the cpu engine's workers), it sums each stream's payload
 * bytes; per chunk (vfgx run's consumer thread), it sums the same bytes
 * from the chunk's present slots and, with arg "verify", checks each byte
 * against the loopback generator's pattern.  At the end both sums must
 * agree: every record the stage saw is in a chunk, byte for byte. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/stages.h>
#include <vfgx/user.h>

#define MAX_STREAMS 1024

struct flow_sum {
	bool verify;
	/* a stream's records come from one worker; sums are read at fini */
	_Atomic uint64_t records[MAX_STREAMS], record_sum[MAX_STREAMS];
	uint64_t slots[MAX_STREAMS], chunk_sum[MAX_STREAMS];
	uint64_t chunks, bad_bytes;
};

static int fs_init(const char *arg, void **state)
{
	struct flow_sum *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return -1;
	fs->verify = !strcmp(arg, "verify");
	*state = fs;
	return 0;
}

static uint64_t byte_sum(const uint8_t *p, uint32_t len)
{
	uint64_t s = 0;

	for (uint32_t i = 0; i < len; i++)
		s += p[i];
	return s;
}

static int fs_stage(void *user, uint32_t stream, uint64_t seq,
		    const uint8_t *payload, uint32_t len)
{
	struct flow_sum *fs = user;

	(void)seq;
	if (stream < MAX_STREAMS) {
		atomic_fetch_add_explicit(&fs->records[stream], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&fs->record_sum[stream], byte_sum(payload, len),
					  memory_order_relaxed);
	}
	return 0;
}

static int fs_chunk(void *state, const struct vfgx_chunk *c)
{
	struct flow_sum *fs = state;
	uint64_t bad = 0;

	if (c->mem == VFGX_MEM_GPU || c->stream >= MAX_STREAMS)
		return -1; /* a CPU module reads host or pinned chunks */
	fs->chunks++;
	for (uint32_t i = 0; i < c->packets; i++) {
		const uint8_t *p = (const uint8_t *)c->data + (size_t)i * c->payload_bytes;

		if (!(c->present[i / 64] >> (i % 64) & 1))
			continue;
		fs->slots[c->stream]++;
		fs->chunk_sum[c->stream] += byte_sum(p, c->lens[i]);
		if (!fs->verify)
			continue;
		for (uint32_t j = 0; j < c->lens[i]; j++)
			if (p[j] != vfgx_pattern_byte(c->stream, c->first + i, j))
				bad++;
	}
	fs->bad_bytes += bad;
	return bad ? -1 : 0;
}

static int fs_fini(void *state)
{
	struct flow_sum *fs = state;
	int bad = fs->bad_bytes != 0;

	for (uint32_t s = 0; s < MAX_STREAMS; s++) {
		uint64_t n = atomic_load(&fs->records[s]);
		uint64_t sum = atomic_load(&fs->record_sum[s]);

		if (!n && !fs->slots[s])
			continue;
		printf("flow_sum: stream %u: %llu records (sum %llu), %llu chunk slots (sum %llu)%s\n",
		       s, (unsigned long long)n, (unsigned long long)sum,
		       (unsigned long long)fs->slots[s], (unsigned long long)fs->chunk_sum[s],
		       n == fs->slots[s] && sum == fs->chunk_sum[s] ? "" : "  MISMATCH");
		if (n != fs->slots[s] || sum != fs->chunk_sum[s])
			bad = 1;
	}
	printf("flow_sum: %llu chunks read, %llu bytes off the pattern%s\n",
	       (unsigned long long)fs->chunks, (unsigned long long)fs->bad_bytes,
	       fs->verify ? "" : " (not verified)");
	free(fs);
	return bad;
}

const struct vfgx_user_module vfgx_user_module = {
	.abi_version = VFGX_USER_ABI_VERSION,
	.name = "flow_sum",
	.init = fs_init,
	.stage = fs_stage,
	.chunk = fs_chunk,
	.fini = fs_fini,
};
