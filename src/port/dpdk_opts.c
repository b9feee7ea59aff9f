/* dpdk_opts.c - the DPDK port's options: the table behind
 * vfgx_dpdk_opts_default, the YAML adapter that fills struct
 * vfgx_dpdk_opts (lists included, in memory of the config), and the copy
 * into the port's own dk_opts with every check.  The port never reads
 * YAML. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "core/opts.h"
#include "dpdk_priv.h"

static const char *const dk_fallbacks[] = { "host", "fail", NULL };
static const char *const dk_steerings[] = { "auto", "flow", "software", NULL };
#define DK_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_dpdk_opts, F, __VA_ARGS__)
static const struct vfgx_opt dk_top_opts[] = {
	{ "dpdk", VFGX_OPT_BACKEND, offsetof(struct vfgx_dpdk_opts, hdr.backend) },
	DK_OPT(SKIP, eal_args, 0),
	DK_OPT(STR, port, 0),
	DK_OPT(U32, rx_desc, 1024, 32, 16384),
	DK_OPT(U32, tx_desc, 1024, 32, 16384),
	{ "memory", VFGX_OPT_SKIP, 0, 0, 0, 0, NULL },
	DK_OPT(BOOL, rss, 1),
	DK_OPT(BOOL, promiscuous, 1),
	DK_OPT(ENUM, steering, DK_STEER_AUTO, 0, 0, dk_steerings),
	DK_OPT(SKIP, flows, 0),
	DK_OPT(BOOL, header_split, 0),
};
/* dpdk.memory: the same struct, a nested section in YAML */
static const struct vfgx_opt dk_mem_opts[] = {
	DK_OPT(U32, num_mbufs, 8191, 64, 1u << 24),
	DK_OPT(U32, mbuf_size, RTE_MBUF_DEFAULT_BUF_SIZE, RTE_PKTMBUF_HEADROOM + 64, 65535),
	DK_OPT(U32, cache, 256, 0, RTE_MEMPOOL_CACHE_MAX_SIZE),
	DK_OPT(ENUM, fallback, 0, 0, 0, dk_fallbacks),
};
#define DK_NTOP (sizeof(dk_top_opts) / sizeof(dk_top_opts[0]))
#define DK_NMEM (sizeof(dk_mem_opts) / sizeof(dk_mem_opts[0]))

void vfgx_dpdk_opts_default(struct vfgx_dpdk_opts *o)
{
	vfgx_opts_default(dk_top_opts, DK_NTOP, o, sizeof(*o));
	vfgx_opts_default(dk_mem_opts, DK_NMEM, o, 0);
}

/* dpdk.eal_args: pointers to the document's strings. */
static int dk_eal_from_yaml(const struct vfgx_cfg_node *map,
			    struct vfgx_dpdk_opts *o)
{
	struct vfgx_cfg_node seq, it;
	const char **args;
	int n = vfgx_cfg_list_alloc(map, "eal_args", DK_MAX_EAL_ARGS - 16,
				    "EAL arguments", sizeof(*args), &seq,
				    (void **)&args);

	if (n <= 0)
		return n;
	for (int i = 0; i < n; i++) {
		vfgx_cfg_seq_item(&seq, i, &it);
		args[i] = vfgx_cfg_scalar(&it);
		if (!args[i] || strlen(args[i]) >= VFGX_ADDR_MAX)
			return vfgx_cfg_error(&it, "must be a string shorter than %d characters (one EAL argument per item, e.g. [\"-l\", \"2\"])",
					      VFGX_ADDR_MAX);
	}
	o->eal_args = args;
	o->nb_eal_args = (uint32_t)n;
	return 0;
}

/* dpdk.flows: { udp_dst_port, queue } maps; the queue is checked against
 * the port's rx queues by dk_parse, which knows them. */
static int dk_flows_from_yaml(const struct vfgx_cfg_node *map,
			      struct vfgx_dpdk_opts *o)
{
	static const char *const flow_keys[] = { "udp_dst_port", "queue", NULL };
	struct vfgx_cfg_node seq, it;
	struct vfgx_dpdk_flow *flows;
	uint32_t p, q;
	int n = vfgx_cfg_list_alloc(map, "flows", DK_MAX_FLOWS, "flow rules",
				    sizeof(*flows), &seq, (void **)&flows);
	int ret;

	if (n <= 0)
		return n;
	for (int i = 0; i < n; i++) {
		vfgx_cfg_seq_item(&seq, i, &it);
		if ((ret = vfgx_cfg_check_keys(&it, flow_keys)) ||
		    (ret = vfgx_cfg_u32(&it, "udp_dst_port", 0, 1, 65535, &p)) ||
		    (ret = vfgx_cfg_u32(&it, "queue", 0, 0, VFGX_MAX_QUEUES - 1, &q)))
			return ret;
		if (p == 0)
			return vfgx_cfg_error(&it, "udp_dst_port: required (1..65535)");
		flows[i].udp_dst_port = (uint16_t)p;
		flows[i].queue = (uint16_t)q;
	}
	o->flows = flows;
	o->nb_flows = (uint32_t)n;
	return 0;
}

int vfgx_dpdk_opts_from_yaml(const struct vfgx_cfg_node *map,
			     struct vfgx_dpdk_opts *o)
{
	struct vfgx_cfg_node mem = { 0 };
	int ret;

	vfgx_dpdk_opts_default(o);
	if ((ret = vfgx_opts_from_yaml(map, dk_top_opts, DK_NTOP, o, sizeof(*o))))
		return ret;
	vfgx_cfg_child(map, "memory", &mem);
	if ((ret = vfgx_opts_from_yaml(&mem, dk_mem_opts, DK_NMEM, o, 0)) ||
	    (ret = dk_eal_from_yaml(map, o)))
		return ret;
	return dk_flows_from_yaml(map, o);
}

/* A flow rule's queue past the interface's nb_rx rx queues, reported at
 * the rule in the YAML section (map) when the options come from one. */
static int dk_check_flow_queues(vfgx_ctx *ctx, const char *name, uint16_t nb_rx,
				const struct vfgx_cfg_node *map,
				const struct vfgx_dpdk_opts *t)
{
	struct vfgx_cfg_node seq, it;

	for (uint32_t i = 0; i < t->nb_flows; i++) {
		if (t->flows[i].queue < nb_rx)
			continue;
		if (map && vfgx_cfg_child(map, "flows", &seq) == 0 &&
		    vfgx_cfg_seq_item(&seq, (int)i, &it) == 0)
			return vfgx_cfg_error(&it, "queue: %u but the interface has %u rx queues",
					      t->flows[i].queue, nb_rx);
		return vfgx_set_error(ctx, -EINVAL, "%s: dpdk options: flows[%u]: queue %u but the interface has %u rx queues",
				      name, i, t->flows[i].queue, nb_rx);
	}
	return 0;
}

int vfgx_dpdk_opts_parse(const struct vfgx_cfg_node *map, const struct vfgx_iface_config *ifc,
			 struct vfgx_backend_opts *out)
{
	struct vfgx_dpdk_opts *o = (struct vfgx_dpdk_opts *)out;
	int ret = vfgx_dpdk_opts_from_yaml(map, o);

	return ret ? ret : dk_check_flow_queues(NULL, ifc->name, ifc->nb_rx_queues, map, o);
}

/* A frame in one mbuf's data room (mbuf_size less the headroom), or in
 * one pool buffer. */
uint32_t vfgx_dpdk_frame_max(const struct vfgx_backend_opts *bo, const char *address,
			     uint32_t buf_size, const char **key)
{
	struct vfgx_dpdk_opts d;
	const struct vfgx_dpdk_opts *o = (const struct vfgx_dpdk_opts *)bo;

	(void)address;
	if (!o) {
		vfgx_dpdk_opts_default(&d);
		o = &d;
	}
	*key = buf_size ? NULL : "dpdk.memory.mbuf_size";
	return buf_size ? buf_size : o->mbuf_size - RTE_PKTMBUF_HEADROOM;
}

/* The typed eal_args and flows into o. */
static int dk_copy_lists(struct vfgx_port *port, const struct vfgx_dpdk_opts *t,
			 struct dk_opts *o)
{
	if (t->nb_eal_args > DK_MAX_EAL_ARGS - 16 || t->nb_flows > DK_MAX_FLOWS)
		return vfgx_set_error(port->ctx, -EINVAL, "%s: dpdk options: at most %d EAL arguments and %d flow rules",
				      port->name, DK_MAX_EAL_ARGS - 16, DK_MAX_FLOWS);
	if ((t->nb_eal_args && !t->eal_args) || (t->nb_flows && !t->flows))
		return vfgx_set_error(port->ctx, -EINVAL, "%s: dpdk options: nb_eal_args or nb_flows set with a NULL list",
				      port->name);
	o->nb_eal = (int)t->nb_eal_args;
	for (uint32_t i = 0; i < t->nb_eal_args; i++) {
		if (!t->eal_args[i] || strlen(t->eal_args[i]) >= VFGX_ADDR_MAX)
			return vfgx_set_error(port->ctx, -EINVAL, "%s: dpdk options: eal_args[%u] must be a string shorter than %d characters",
					      port->name, i, VFGX_ADDR_MAX);
		snprintf(o->eal[i], VFGX_ADDR_MAX, "%s", t->eal_args[i]);
	}
	o->nb_flows = (int)t->nb_flows;
	for (uint32_t i = 0; i < t->nb_flows; i++) {
		if (!t->flows[i].udp_dst_port)
			return vfgx_set_error(port->ctx, -EINVAL, "%s: dpdk options: flows[%u]: udp_dst_port must be 1..65535",
					      port->name, i);
		o->flows[i].udp_dst_port = t->flows[i].udp_dst_port;
		o->flows[i].queue = t->flows[i].queue;
	}
	return 0;
}

int dk_parse(struct vfgx_port *port, const struct vfgx_port_conf *conf,
	     struct dk_opts *o)
{
	struct vfgx_dpdk_opts t;
	const char *pname;
	int ret;

	ret = vfgx_opts_get(port->ctx, port->name, "dpdk", dk_top_opts, DK_NTOP,
			    conf->backend_opts, &t, sizeof(t));
	if (!ret && conf->backend_opts)
		ret = vfgx_opts_check(port->ctx, port->name, "dpdk", dk_mem_opts, DK_NMEM, &t);
	else if (!ret)
		vfgx_opts_default(dk_mem_opts, DK_NMEM, &t, 0);
	if (ret || (ret = dk_check_flow_queues(port->ctx, port->name, port->nb_rx_queues,
					       NULL, &t)))
		return ret;
	pname = t.port ? t.port : conf->address ? conf->address : "";
	if (strlen(pname) >= sizeof(o->port))
		return vfgx_set_error(port->ctx, -EINVAL, "%s: dpdk port '%s' is too long",
				      port->name, pname);
	snprintf(o->port, sizeof(o->port), "%s", pname);
	o->rx_desc = t.rx_desc;
	o->tx_desc = t.tx_desc;
	o->rss = t.rss;
	o->promiscuous = t.promiscuous;
	o->header_split = t.header_split;
	o->steering = (int)t.steering;
	o->num_mbufs = t.num_mbufs;
	o->mbuf_size = t.mbuf_size;
	o->cache = t.cache;
	o->fallback = (int)t.fallback;
	if (!o->port[0])
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: no DPDK port: set interfaces[].address or dpdk.port to a PCI address (0000:03:00.0) or a vdev (net_null0)",
				      port->name);
	if ((ret = dk_copy_lists(port, &t, o)))
		return ret;
	if (o->mbuf_size > 65535 || o->cache > o->num_mbufs / 2)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: dpdk.memory.cache %u must be at most num_mbufs/2 (%u)",
				      port->name, o->cache, o->num_mbufs / 2);
	return 0;
}
