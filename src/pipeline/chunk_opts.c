/* chunk_opts.c - pipeline.chunks: the option table (defaults, the YAML
 * adapter and the check of a struct a program filled) and the rules the
 * table cannot say. */
#include <errno.h>

#include <vfgx/chunk.h>

#include "chunk_opts.h"
#include "core/cfgdoc.h"
#include "core/opts.h"

static const char *const ck_places[] = { "seq", "field", NULL };
static const char *const ck_mems[] = { "host", "hugepage", "pinned", "gpu", NULL };
#define CK_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_chunk_config, F, __VA_ARGS__)
static const struct vfgx_opt ck_opts[] = {
	CK_OPT(U32, payload_bytes, 1024, 1, 1u << 20),
	CK_OPT(U32, packets, 1024, 1, 1u << 24),
	CK_OPT(U32, streams, 1, 1, 65536),
	CK_OPT(ENUM, place, 0, 0, 0, ck_places),
	CK_OPT(U32, field_offset, 0, 0, 65535),
	CK_OPT(U32, field_size, 8, 4, 8),
	CK_OPT(U64, field_step, 1, 1, 1e18),
	CK_OPT(U32, in_flight, 4, 2, 4096),
	CK_OPT(ENUM, mem, 0, 0, 0, ck_mems),
	CK_OPT(U32, gpu_id, 0, 0, 63),
	CK_OPT(U32, close_distance, 0, 0, 4096),
	CK_OPT(U32, timeout_ms, 0, 0, 3600000),
};
#define CK_NOPTS (sizeof(ck_opts) / sizeof(ck_opts[0]))

/* One ring slot must fit size_t arithmetic and one stream's ring this
 * many bytes: the limit keeps a typo from asking for terabytes. */
#define CK_MAX_RING_BYTES (64ull << 30)

void vfgx_chunk_config_default(struct vfgx_chunk_config *c)
{
	vfgx_opts_default(ck_opts, CK_NOPTS, c, sizeof(*c));
}

/* What the table cannot say.  map NULL: a program's struct. */
static int ck_check(vfgx_ctx *ctx, const struct vfgx_cfg_node *map,
		    const struct vfgx_chunk_config *c)
{
	struct vfgx_cfg_node it;
	uint64_t ring = (uint64_t)c->packets * c->payload_bytes * c->in_flight;

	if (c->field_size != 4 && c->field_size != 8) {
		if (map && vfgx_cfg_child(map, "field_size", &it) == 0)
			return vfgx_cfg_error(&it, "%u; a placement field is 4 or 8 bytes",
					      c->field_size);
		return vfgx_set_error(ctx, -EINVAL, "pipeline.chunks: field_size %u; a placement field is 4 or 8 bytes",
				      c->field_size);
	}
	if (c->mem == VFGX_MEM_HUGEPAGE) {
		if (map && vfgx_cfg_child(map, "mem", &it) == 0)
			return vfgx_cfg_error(&it, "hugepage: chunks live in host, pinned or gpu memory");
		return vfgx_set_error(ctx, -EINVAL, "pipeline.chunks: mem hugepage: chunks live in host, pinned or gpu memory");
	}
	if (ring > CK_MAX_RING_BYTES) {
		if (map && vfgx_cfg_child(map, "packets", &it) == 0)
			return vfgx_cfg_error(&it, "one stream's ring (packets %u x payload_bytes %u x in_flight %u) is %.1f GiB; at most 64 GiB",
					      c->packets, c->payload_bytes, c->in_flight,
					      (double)ring / (double)(1ull << 30));
		return vfgx_set_error(ctx, -EINVAL, "pipeline.chunks: one stream's ring (packets %u x payload_bytes %u x in_flight %u) is %.1f GiB; at most 64 GiB",
				      c->packets, c->payload_bytes, c->in_flight,
				      (double)ring / (double)(1ull << 30));
	}
	return 0;
}

int vfgx_chunk_config_from_yaml(const struct vfgx_cfg_node *map,
				struct vfgx_chunk_config *c)
{
	int ret = vfgx_opts_from_yaml(map, ck_opts, CK_NOPTS, c, sizeof(*c));

	return ret ? ret : ck_check(map->doc ? map->doc->ctx : NULL, map, c);
}

int vfgx_chunk_config_check(vfgx_ctx *ctx, const struct vfgx_chunk_config *user,
			    struct vfgx_chunk_config *out)
{
	int ret = vfgx_opts_from_user(ctx, "pipeline", "chunks", ck_opts, CK_NOPTS,
				      user, out, sizeof(*out));

	return ret ? ret : ck_check(ctx, NULL, out);
}
