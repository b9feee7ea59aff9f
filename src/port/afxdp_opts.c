/* afxdp_opts.c - the AF_XDP port's option table: defaults, the YAML
 * adapter and the typed check, in every build (afxdp.c needs libxdp). */
#include <errno.h>

#include "afxdp_opts.h"
#include "core/opts.h"

static const char *const ax_modes[] = { "auto", "native", "generic", NULL };
static const char *const ax_zcs[] = { "auto", "on", "off", NULL };
#define AX_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_afxdp_opts, F, __VA_ARGS__)
static const struct vfgx_opt ax_opts[] = {
	{ "afxdp", VFGX_OPT_BACKEND, offsetof(struct vfgx_afxdp_opts, hdr.backend) },
	AX_OPT(ENUM, mode, 0, 0, 0, ax_modes),
	AX_OPT(ENUM, zero_copy, 0, 0, 0, ax_zcs),
	AX_OPT(SKIP, queues, 0),
	AX_OPT(U32, frame_size, 2048, 2048, 4096),
	AX_OPT(U32, num_frames, 4096, 64, 1u << 20),
	AX_OPT(U32, rx_ring, 2048, 64, 16384),
	AX_OPT(U32, tx_ring, 2048, 64, 16384),
	AX_OPT(U32, fill_ring, 2048, 64, 16384),
	AX_OPT(U32, comp_ring, 2048, 64, 16384),
};
#define AX_NOPTS (sizeof(ax_opts) / sizeof(ax_opts[0]))

void vfgx_afxdp_opts_default(struct vfgx_afxdp_opts *o)
{
	vfgx_opts_default(ax_opts, AX_NOPTS, o, sizeof(*o));
}

/* What the table cannot say: powers of two, two frame sizes.  map NULL:
 * typed options, the error names the port. */
static int ax_check(vfgx_ctx *ctx, const char *name, const struct vfgx_cfg_node *map,
		    const struct vfgx_afxdp_opts *o)
{
	static const char *const rings[] = { "rx_ring", "tx_ring", "fill_ring", "comp_ring" };
	const uint32_t v[] = { o->rx_ring, o->tx_ring, o->fill_ring, o->comp_ring };
	struct vfgx_cfg_node it;

	if (o->frame_size != 2048 && o->frame_size != 4096) {
		if (map && vfgx_cfg_child(map, "frame_size", &it) == 0)
			return vfgx_cfg_error(&it, "%u; AF_XDP frames are 2048 or 4096 bytes",
					      o->frame_size);
		return vfgx_set_error(ctx, -EINVAL, "%s: afxdp options: frame_size %u; AF_XDP frames are 2048 or 4096 bytes",
				      name, o->frame_size);
	}
	for (int i = 0; i < 4; i++) {
		if (!(v[i] & (v[i] - 1)))
			continue;
		if (map && vfgx_cfg_child(map, rings[i], &it) == 0)
			return vfgx_cfg_error(&it, "%u is not a power of two (use 64, 128, ... 16384)",
					      v[i]);
		return vfgx_set_error(ctx, -EINVAL, "%s: afxdp options: %s: %u is not a power of two (use 64, 128, ... 16384)",
				      name, rings[i], v[i]);
	}
	return 0;
}

/* afxdp.queues: interface queue ids, into memory of the document. */
static int ax_queues_from_yaml(const struct vfgx_cfg_node *map,
			       struct vfgx_afxdp_opts *o)
{
	struct vfgx_cfg_node seq, it;
	uint32_t *ids;
	int n = vfgx_cfg_list_alloc(map, "queues", VFGX_MAX_QUEUES,
				    "queue ids (one per rx queue)", sizeof(*ids),
				    &seq, (void **)&ids);
	int ret;

	if (n <= 0)
		return n;
	for (int i = 0; i < n; i++) {
		vfgx_cfg_seq_item(&seq, i, &it);
		if ((ret = vfgx_cfg_item_u32(&it, 0, 65535, &ids[i])))
			return ret;
	}
	o->queues = ids;
	o->nb_queues = (uint32_t)n;
	return 0;
}

int vfgx_afxdp_opts_from_yaml(const struct vfgx_cfg_node *map,
			      struct vfgx_afxdp_opts *o)
{
	int ret = vfgx_opts_from_yaml(map, ax_opts, AX_NOPTS, o, sizeof(*o));

	if (!ret)
		ret = ax_queues_from_yaml(map, o);
	return ret ? ret : ax_check(NULL, NULL, map, o);
}

/* The queue list against the port's rx queues; map: its YAML section. */
static int ax_check_queues(vfgx_ctx *ctx, const char *name, uint16_t nb_rx,
			   const struct vfgx_cfg_node *map,
			   const struct vfgx_afxdp_opts *o)
{
	struct vfgx_cfg_node seq;

	if (!o->queues)
		return 0;
	if (o->nb_queues != nb_rx) {
		if (map && vfgx_cfg_child(map, "queues", &seq) == 0)
			return vfgx_cfg_error(&seq, "%u queue ids for %u rx queues (list one interface queue id per rx queue)",
					      o->nb_queues, nb_rx);
		return vfgx_set_error(ctx, -EINVAL, "%s: afxdp options: %u queue ids for %u rx queues",
				      name, o->nb_queues, nb_rx);
	}
	for (uint32_t i = 0; i < o->nb_queues; i++)
		if (o->queues[i] > 65535)
			return vfgx_set_error(ctx, -EINVAL, "%s: afxdp options: queue id %u is not 0..65535",
					      name, o->queues[i]);
	return 0;
}

int vfgx_afxdp_opts_parse(const struct vfgx_cfg_node *map, const struct vfgx_iface_config *ifc,
			  struct vfgx_backend_opts *out)
{
	struct vfgx_afxdp_opts *o = (struct vfgx_afxdp_opts *)out;
	int ret = vfgx_afxdp_opts_from_yaml(map, o);

	return ret ? ret : ax_check_queues(NULL, ifc->name, ifc->nb_rx_queues, map, o);
}

/* A frame in one UMEM frame (no headroom: frame_size), or one pool buffer. */
uint32_t vfgx_afxdp_frame_max(const struct vfgx_backend_opts *bo, const char *address,
			      uint32_t buf_size, const char **key)
{
	struct vfgx_afxdp_opts d;

	(void)address;
	if (!bo)
		vfgx_afxdp_opts_default(&d);
	*key = buf_size ? NULL : "afxdp.frame_size";
	return buf_size ? buf_size : bo ? ((const struct vfgx_afxdp_opts *)bo)->frame_size :
					  d.frame_size;
}

int vfgx_afxdp_opts_get(vfgx_ctx *ctx, const char *name,
			const struct vfgx_port_conf *conf, struct vfgx_afxdp_opts *o)
{
	int ret = vfgx_opts_get(ctx, name, "afxdp", ax_opts, AX_NOPTS, conf->backend_opts, o,
				sizeof(*o));

	if (!ret)
		ret = ax_check(ctx, name, NULL, o);
	return ret ? ret : ax_check_queues(ctx, name, conf->nb_rx_queues, NULL, o);
}
