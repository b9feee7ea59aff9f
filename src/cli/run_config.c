/* run_config.c - `vfgx run`'s own config sections: expect:, metrics: and
 * ranks: (which interfaces, rx queues, GPU and CPU cores each MPI rank of
 * `mpirun vfgx run` uses, by rank or by local rank; docs/config.md,
 * docs/scale-out.md).  Each is one table read by the library at load
 * (vfgx_config_section); what ties keys together is checked here. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/core.h>

#include "run_config.h"

#define N(t) (sizeof(t) / sizeof((t)[0]))

#define EX_OPT(T, F, ...) VFGX_OPT(T, struct run_expect, F, __VA_ARGS__)
static const struct vfgx_opt expect_tab[] = {
	EX_OPT(BOOL, all_received, 0),
	EX_OPT(BOOL, in_order, 0),
	EX_OPT(BOOL, verified, 0),
	EX_OPT(U64, min_packets, 1, 0, 1.9e19),
};

struct run_metrics {
	const char *listen;
};

#define MX_OPT(T, F, ...) VFGX_OPT(T, struct run_metrics, F, __VA_ARGS__)
static const struct vfgx_opt metrics_tab[] = {
	MX_OPT(STR, listen, 0),
};

/* ranks[i] as read: rank and local_rank out of range when absent */
#define RANK_ABSENT 4294967295.0
struct rank_entry {
	uint32_t rank, local_rank, gpu;
	uint16_t rx_queues;
	uint16_t nb_ifaces, nb_cores;
	struct run_rank_iface *interfaces;
	uint16_t *cores;
	const char *where;
};

static const struct vfgx_opt iface_tab[] = {
	{ NULL, VFGX_OPT_STR, offsetof(struct run_rank_iface, name) },
	{ NULL, VFGX_OPT_WHERE, offsetof(struct run_rank_iface, where) },
};

static const struct vfgx_opt core_tab[] = {
	{ NULL, VFGX_OPT_U16, 0, 0, 0, RUN_MAX_RANK_CORES - 1 },
};

#define RK_OPT(T, F, ...) VFGX_OPT(T, struct rank_entry, F, __VA_ARGS__)
/* a list under key F, its count in field COUNT, items read by TAB */
#define RKLIST_OPT(T, F, COUNT, TAB, MAX)                                      \
	{ #F, VFGX_OPT_##T, offsetof(struct rank_entry, F), 0, 0, MAX,         \
	  .elem = TAB, .nb_elem = N(TAB),                                      \
	  .elem_size = sizeof(*((struct rank_entry *)0)->F),                   \
	  .count_off = offsetof(struct rank_entry, COUNT) }
static const struct vfgx_opt entry_tab[] = {
	RK_OPT(U32, rank, RANK_ABSENT, 0, INT32_MAX),
	RK_OPT(U32, local_rank, RANK_ABSENT, 0, INT32_MAX),
	RKLIST_OPT(LIST, interfaces, nb_ifaces, iface_tab, VFGX_MAX_IFACES),
	RK_OPT(U16, rx_queues, 0, 0, VFGX_MAX_QUEUES),
	/* absent: -1, the GPU the rank sees is left as it is */
	RK_OPT(U32, gpu, RANK_ABSENT, 0, 63),
	RKLIST_OPT(LIST, cores, nb_cores, core_tab, RUN_MAX_RANK_CORES),
	{ NULL, VFGX_OPT_WHERE, offsetof(struct rank_entry, where) },
};

struct run_ranks {
	uint16_t nb;
	struct rank_entry *e;
};

/* ranks: is a list: the one entry, with no key, reads the section itself */
static const struct vfgx_opt ranks_tab[] = {
	{ NULL, VFGX_OPT_LIST, offsetof(struct run_ranks, e), 0, 0,
	  RUN_MAX_RANK_ENTRIES, .elem = entry_tab, .nb_elem = N(entry_tab),
	  .elem_size = sizeof(struct rank_entry),
	  .count_off = offsetof(struct run_ranks, nb) },
};

static int check_entry(vfgx_ctx *ctx, const struct vfgx_config *cfg,
		       const struct rank_entry *e, struct run_rank *r)
{
	bool by_rank = e->rank != (uint32_t)RANK_ABSENT;
	bool by_local = e->local_rank != (uint32_t)RANK_ABSENT;

	if (by_rank == by_local)
		return vfgx_set_error(ctx, -EINVAL, "%s: give exactly one of rank or local_rank",
				      e->where);
	for (uint16_t i = 0; i < e->nb_ifaces; i++) {
		const char *s = e->interfaces[i].name;
		bool found = false;

		for (uint16_t k = 0; k < cfg->nb_ifaces; k++)
			found |= !strcmp(cfg->ifaces[k].name, s);
		if (!found)
			return vfgx_set_error(ctx, -EINVAL, "%s: '%s' is not the name of one of interfaces:",
					      e->interfaces[i].where, s);
		for (uint16_t k = 0; k < i; k++)
			if (!strcmp(e->interfaces[k].name, s))
				return vfgx_set_error(ctx, -EINVAL, "%s: '%s' listed twice",
						      e->interfaces[i].where, s);
	}
	*r = (struct run_rank){
		.rank = by_rank ? (int32_t)e->rank : -1,
		.local_rank = by_local ? (int32_t)e->local_rank : -1,
		.nb_ifaces = e->nb_ifaces, .ifaces = e->interfaces,
		.rx_queues = e->rx_queues,
		.gpu = e->gpu == (uint32_t)RANK_ABSENT ? -1 : (int32_t)e->gpu,
		.nb_cores = e->nb_cores, .cores = e->cores,
	};
	return 0;
}

static int parse_ranks(vfgx_ctx *ctx, const struct vfgx_config *cfg,
		       struct run_config *rc)
{
	struct run_ranks rk;
	int ret;

	if ((ret = vfgx_config_section(cfg, "ranks", ranks_tab, N(ranks_tab), &rk,
				       sizeof(rk))))
		return ret;
	if (rk.nb && !(rc->ranks = calloc(rk.nb, sizeof(*rc->ranks))))
		return vfgx_set_error(ctx, -ENOMEM, "ranks: out of memory");
	rc->nb_ranks = rk.nb;
	for (uint16_t i = 0; i < rk.nb; i++) {
		struct run_rank *r = rc->ranks;

		if ((ret = check_entry(ctx, cfg, &rk.e[i], &r[i])))
			return ret;
		for (uint16_t j = 0; j < i; j++)
			if (r[j].rank == r[i].rank && r[j].local_rank == r[i].local_rank)
				return vfgx_set_error(ctx, -EINVAL, "%s: a second entry for %s %d",
						      rk.e[i].where,
						      r[i].rank >= 0 ? "rank" : "local_rank",
						      r[i].rank >= 0 ? r[i].rank : r[i].local_rank);
	}
	return 0;
}

int run_config_parse(vfgx_ctx *ctx, const struct vfgx_config *cfg,
		     struct run_config *rc)
{
	struct run_metrics m;
	int ret;

	memset(rc, 0, sizeof(*rc));
	if ((ret = vfgx_config_section(cfg, "expect", expect_tab, N(expect_tab),
				       &rc->expect, sizeof(rc->expect))) ||
	    (ret = vfgx_config_section(cfg, "metrics", metrics_tab, N(metrics_tab),
				       &m, sizeof(m))) ||
	    (ret = parse_ranks(ctx, cfg, rc)))
		return ret;
	rc->metrics_listen = m.listen && m.listen[0] ? m.listen : NULL;
	return 0;
}

void run_config_free(struct run_config *rc)
{
	free(rc->ranks);
	memset(rc, 0, sizeof(*rc));
}
