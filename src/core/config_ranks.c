/* config_ranks.c - the `ranks:` config section: which interfaces, rx
 * queues, GPU and CPU cores each MPI rank of `mpirun vfgx run` uses, by
 * rank or by local rank (docs/config.md, docs/scale-out.md). */
#include <errno.h>
#include <string.h>

#include "config_ranks.h"
#include "opts.h"

static int parse_ifaces(const struct vfgx_config *cfg,
			const struct vfgx_cfg_node *it,
			struct vfgx_rank_config *r)
{
	struct vfgx_cfg_node seq, name;
	int n = vfgx_cfg_list_alloc(it, "interfaces", VFGX_MAX_IFACES,
				    "interfaces", sizeof(*r->ifaces), &seq,
				    (void **)&r->ifaces);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		const char *s;
		bool found = false;

		vfgx_cfg_seq_item(&seq, i, &name);
		s = vfgx_cfg_scalar(&name);
		if (!s)
			return vfgx_cfg_error(&name, "must be an interface name");
		for (uint16_t k = 0; k < cfg->nb_ifaces; k++)
			found |= !strcmp(cfg->ifaces[k].name, s);
		if (!found)
			return vfgx_cfg_error(&name, "'%s' is not the name of one of interfaces:", s);
		for (int k = 0; k < i; k++)
			if (!strcmp(r->ifaces[k], s))
				return vfgx_cfg_error(&name, "'%s' listed twice", s);
		r->ifaces[i] = s;
	}
	r->nb_ifaces = (uint16_t)n;
	return 0;
}

static int parse_cores(const struct vfgx_cfg_node *it, struct vfgx_rank_config *r)
{
	struct vfgx_cfg_node seq, item;
	uint16_t *cores;
	int n = vfgx_cfg_list_alloc(it, "cores", VFGX_MAX_RANK_CORES, "cores",
				    sizeof(*cores), &seq, (void **)&cores);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		uint32_t c;
		int ret;

		vfgx_cfg_seq_item(&seq, i, &item);
		if ((ret = vfgx_cfg_item_u32(&item, 0, VFGX_MAX_RANK_CORES - 1, &c)))
			return ret;
		cores[i] = (uint16_t)c;
	}
	r->cores = cores;
	r->nb_cores = (uint16_t)n;
	return 0;
}

static int parse_entry(const struct vfgx_config *cfg,
		       const struct vfgx_cfg_node *it,
		       struct vfgx_rank_config *r)
{
	static const char *const keys[] = { "rank", "local_rank", "interfaces",
					    "rx_queues", "gpu", "cores", NULL };
	struct vfgx_cfg_node k;
	bool by_rank = vfgx_cfg_child(it, "rank", &k) == 0;
	bool by_local = vfgx_cfg_child(it, "local_rank", &k) == 0;
	uint32_t rank, local, q, gpu;
	int ret;

	if ((ret = vfgx_cfg_check_keys(it, keys)))
		return ret;
	if (by_rank == by_local)
		return vfgx_cfg_error(it, "give exactly one of rank or local_rank");
	if ((ret = vfgx_cfg_u32(it, "rank", 0, 0, INT32_MAX, &rank)) ||
	    (ret = vfgx_cfg_u32(it, "local_rank", 0, 0, INT32_MAX, &local)) ||
	    (ret = vfgx_cfg_u32(it, "rx_queues", 0, 0, VFGX_MAX_QUEUES, &q)) ||
	    (ret = vfgx_cfg_u32(it, "gpu", UINT32_MAX, 0, 63, &gpu)))
		return ret;
	r->rank = by_rank ? (int32_t)rank : -1;
	r->local_rank = by_local ? (int32_t)local : -1;
	r->rx_queues = (uint16_t)q;
	r->gpu = gpu == UINT32_MAX ? -1 : (int32_t)gpu;
	if ((ret = parse_ifaces(cfg, it, r)) || (ret = parse_cores(it, r)))
		return ret;
	return 0;
}

int vfgx_config_parse_ranks(struct vfgx_config *cfg,
			    const struct vfgx_cfg_node *root)
{
	struct vfgx_cfg_node seq, it;
	struct vfgx_rank_config *ranks;
	int n = vfgx_cfg_list_alloc(root, "ranks", VFGX_MAX_RANK_ENTRIES, "ranks",
				    sizeof(*ranks), &seq, (void **)&ranks);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		int ret;

		vfgx_cfg_seq_item(&seq, i, &it);
		if ((ret = parse_entry(cfg, &it, &ranks[i])))
			return ret;
		for (int j = 0; j < i; j++)
			if (ranks[j].rank == ranks[i].rank &&
			    ranks[j].local_rank == ranks[i].local_rank)
				return vfgx_cfg_error(&it, "a second entry for %s %d",
						      ranks[i].rank >= 0 ? "rank" : "local_rank",
						      ranks[i].rank >= 0 ? ranks[i].rank :
									   ranks[i].local_rank);
	}
	cfg->ranks = ranks;
	cfg->nb_ranks = (uint16_t)n;
	return 0;
}
