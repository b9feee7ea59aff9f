/* py_user_module.c - a user module (include/vfgx/user.h) for
 * tests/python/test_session.py, loaded by a vfgx.Session from
 * pipeline.user.library.  Its arg is words "drop=K out=PATH":
 *   - the per-record stage drops every record whose sequence is a
 *     multiple of K (a VFGX_DROP_USER drop: the slot stays missing in its
 *     chunk) and counts and sums the bytes of those it keeps, per stream;
 *   - built with PY_CHUNK_CALLBACK, the per-chunk callback (on the
 *     session's consumer thread) counts and sums the present slots' bytes
 *     per stream;
 *   - fini writes what it saw to PATH as JSON.
 * The test computes the same with NumPy from the generator's definition
 * and from the chunks (or their recording). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/user.h>

#define MAX_STREAMS 16

struct py_mod {
	uint64_t drop;
	char out[256];
	_Atomic uint64_t records[MAX_STREAMS], record_sum[MAX_STREAMS], dropped;
	uint64_t slots[MAX_STREAMS], chunk_sum[MAX_STREAMS], chunks;
};

static int pm_init(const char *arg, void **state)
{
	struct py_mod *m = calloc(1, sizeof(*m));
	const char *p;

	if (!m)
		return -1;
	p = strstr(arg, "drop=");
	m->drop = p ? strtoull(p + 5, NULL, 10) : 0;
	p = strstr(arg, "out=");
	if (p)
		sscanf(p + 4, "%255s", m->out);
	*state = m;
	return 0;
}

static uint64_t byte_sum(const uint8_t *p, uint32_t len)
{
	uint64_t s = 0;

	for (uint32_t i = 0; i < len; i++)
		s += p[i];
	return s;
}

static int pm_stage(void *user, uint32_t stream, uint64_t seq, const uint8_t *payload,
		    uint32_t len)
{
	struct py_mod *m = user;

	if (stream >= MAX_STREAMS)
		return 1;
	if (m->drop && seq % m->drop == 0) {
		atomic_fetch_add(&m->dropped, 1);
		return 1;
	}
	atomic_fetch_add(&m->records[stream], 1);
	atomic_fetch_add(&m->record_sum[stream], byte_sum(payload, len));
	return 0;
}

#ifdef PY_CHUNK_CALLBACK
static int pm_chunk(void *state, const struct vfgx_chunk *c)
{
	struct py_mod *m = state;

	if (c->mem == VFGX_MEM_GPU || c->stream >= MAX_STREAMS)
		return -1;
	m->chunks++;
	for (uint32_t i = 0; i < c->packets; i++) {
		if (!(c->present[i / 64] >> (i % 64) & 1))
			continue;
		m->slots[c->stream]++;
		m->chunk_sum[c->stream] +=
			byte_sum((const uint8_t *)c->data + (size_t)i * c->payload_bytes, c->lens[i]);
	}
	return 0;
}
#endif

static void put_list(FILE *f, const char *name, const uint64_t *v, const char *sep)
{
	fprintf(f, "\"%s\": [", name);
	for (int s = 0; s < MAX_STREAMS; s++)
		fprintf(f, "%s%llu", s ? ", " : "", (unsigned long long)v[s]);
	fprintf(f, "]%s", sep);
}

static int pm_fini(void *state)
{
	struct py_mod *m = state;
	uint64_t rec[MAX_STREAMS], sum[MAX_STREAMS];
	FILE *f;
	int ret = 0;

	for (int s = 0; s < MAX_STREAMS; s++) {
		rec[s] = atomic_load(&m->records[s]);
		sum[s] = atomic_load(&m->record_sum[s]);
	}
	f = m->out[0] ? fopen(m->out, "w") : NULL;
	if (f) {
		fprintf(f, "{\"dropped\": %llu, \"chunks\": %llu, ",
			(unsigned long long)atomic_load(&m->dropped), (unsigned long long)m->chunks);
		put_list(f, "records", rec, ", ");
		put_list(f, "record_sum", sum, ", ");
		put_list(f, "slots", m->slots, ", ");
		put_list(f, "chunk_sum", m->chunk_sum, "}\n");
		ret = fclose(f) ? -1 : 0;
	} else if (m->out[0]) {
		ret = -1;
	}
	free(m);
	return ret;
}

const struct vfgx_user_module vfgx_user_module = {
	.abi_version = VFGX_USER_ABI_VERSION,
#ifdef PY_CHUNK_CALLBACK
	.name = "py_chunks",
	.chunk = pm_chunk,
#else
	.name = "py_stage",
#endif
	.init = pm_init,
	.stage = pm_stage,
	.fini = pm_fini,
};
