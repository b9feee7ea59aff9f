/* run_config.c - `vfgx run`'s own config sections: expect:, metrics: and
 * ranks: (which interfaces, rx queues, GPU and CPU cores each MPI rank of
 * `mpirun vfgx run` uses, by rank or by local rank; docs/config.md,
 * docs/scale-out.md), read with the library's config accessors. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "run_config.h"

static int parse_expect(const struct vfgx_cfg_node *root, struct run_expect *e)
{
	static const char *const keys[] = { "all_received", "in_order",
					    "verified", "min_packets", NULL };
	struct vfgx_cfg_node ex;
	int ret;

	vfgx_cfg_child(root, "expect", &ex);
	if ((ret = vfgx_cfg_check_keys(&ex, keys)) ||
	    (ret = vfgx_cfg_bool(&ex, "all_received", false, &e->all_received)) ||
	    (ret = vfgx_cfg_bool(&ex, "in_order", false, &e->in_order)) ||
	    (ret = vfgx_cfg_bool(&ex, "verified", false, &e->verified)) ||
	    (ret = vfgx_cfg_u64(&ex, "min_packets", 1, 0, UINT64_MAX, &e->min_packets)))
		return ret;
	return 0;
}

static int parse_metrics(const struct vfgx_cfg_node *root, struct run_config *rc)
{
	static const char *const keys[] = { "listen", NULL };
	struct vfgx_cfg_node mn;
	int ret;

	vfgx_cfg_child(root, "metrics", &mn);
	if ((ret = vfgx_cfg_check_keys(&mn, keys)) ||
	    (ret = vfgx_cfg_str(&mn, "listen", "", rc->metrics_listen,
				sizeof(rc->metrics_listen))))
		return ret;
	return 0;
}

/* A sequence under key of at most max items, each elem bytes zeroed:
 * its length (0 when absent), or -EINVAL / -ENOMEM. */
static int list_alloc(const struct vfgx_cfg_node *map, const char *key, int max,
		      size_t elem, struct vfgx_cfg_node *seq, void **out)
{
	int n;

	*out = NULL;
	if (vfgx_cfg_child(map, key, seq) != 0)
		return 0;
	n = vfgx_cfg_seq_len(seq);
	if (n <= 0)
		return n;
	if (n > max)
		return vfgx_cfg_error(seq, "%d items; at most %d %s", n, max, key);
	if (!(*out = calloc((size_t)n, elem)))
		return -ENOMEM;
	return n;
}

static int parse_ifaces(const struct vfgx_config *cfg, const struct vfgx_cfg_node *it,
			struct run_rank *r)
{
	struct vfgx_cfg_node seq, name;
	int n = list_alloc(it, "interfaces", VFGX_MAX_IFACES, sizeof(*r->ifaces), &seq,
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

static int parse_cores(const struct vfgx_cfg_node *it, struct run_rank *r)
{
	struct vfgx_cfg_node seq, item;
	uint16_t *cores;
	int n = list_alloc(it, "cores", RUN_MAX_RANK_CORES, sizeof(*cores), &seq,
			   (void **)&cores);

	if (n < 0)
		return n;
	r->cores = cores;
	for (int i = 0; i < n; i++) {
		uint32_t c;
		int ret;

		vfgx_cfg_seq_item(&seq, i, &item);
		if ((ret = vfgx_cfg_item_u32(&item, 0, RUN_MAX_RANK_CORES - 1, &c)))
			return ret;
		cores[i] = (uint16_t)c;
	}
	r->nb_cores = (uint16_t)n;
	return 0;
}

static int parse_entry(const struct vfgx_config *cfg, const struct vfgx_cfg_node *it,
		       struct run_rank *r)
{
	static const char *const keys[] = { "rank", "local_rank", "interfaces",
					    "rx_queues", "gpu", "cores", NULL };
	struct vfgx_cfg_node rk, lk;
	bool by_rank = vfgx_cfg_child(it, "rank", &rk) == 0;
	bool by_local = vfgx_cfg_child(it, "local_rank", &lk) == 0;
	uint32_t rank = 0, local = 0, q, gpu;
	int ret;

	if ((ret = vfgx_cfg_check_keys(it, keys)))
		return ret;
	if (by_rank == by_local)
		return vfgx_cfg_error(it, "give exactly one of rank or local_rank");
	/* no default: the one given is read */
	if ((by_rank && (ret = vfgx_cfg_item_u32(&rk, 0, INT32_MAX, &rank))) ||
	    (by_local && (ret = vfgx_cfg_item_u32(&lk, 0, INT32_MAX, &local))) ||
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

static int parse_ranks(const struct vfgx_config *cfg, const struct vfgx_cfg_node *root,
		       struct run_config *rc)
{
	struct vfgx_cfg_node seq, it;
	int n = list_alloc(root, "ranks", RUN_MAX_RANK_ENTRIES, sizeof(*rc->ranks), &seq,
			   (void **)&rc->ranks);

	if (n < 0)
		return n;
	rc->nb_ranks = (uint16_t)n; /* freed whole however far it got */
	for (int i = 0; i < n; i++) {
		struct run_rank *r = rc->ranks;
		int ret;

		vfgx_cfg_seq_item(&seq, i, &it);
		if ((ret = parse_entry(cfg, &it, &r[i])))
			return ret;
		for (int j = 0; j < i; j++)
			if (r[j].rank == r[i].rank && r[j].local_rank == r[i].local_rank)
				return vfgx_cfg_error(&it, "a second entry for %s %d",
						      r[i].rank >= 0 ? "rank" : "local_rank",
						      r[i].rank >= 0 ? r[i].rank : r[i].local_rank);
	}
	return 0;
}

int run_config_parse(const struct vfgx_config *cfg, struct run_config *rc)
{
	struct vfgx_cfg_node root;
	int ret;

	memset(rc, 0, sizeof(*rc));
	vfgx_config_root(cfg, &root);
	if ((ret = parse_expect(&root, &rc->expect)) || (ret = parse_metrics(&root, rc)) ||
	    (ret = parse_ranks(cfg, &root, rc)))
		return ret;
	return 0;
}

void run_config_free(struct run_config *rc)
{
	for (uint16_t i = 0; rc->ranks && i < rc->nb_ranks; i++) {
		free(rc->ranks[i].ifaces);
		free((void *)rc->ranks[i].cores);
	}
	free(rc->ranks);
	memset(rc, 0, sizeof(*rc));
}
