/* port.c - the backend table and the generic half of every port call. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "port_opts.h"
#include "tx_fill.h"
#include "capture_tap.h"
#include "core/argsz.h"
#include "core/opts.h"
#include "mem/pool_bytes.h"
#include "vfgx_build.h"

/* One line per backend (optional ones under their VFGX_HAVE_* guard). */
static const struct vfgx_port_ops *const backend_table[] = {
	&vfgx_loopback_ops,
	&vfgx_socket_ops,
#if VFGX_HAVE_AFXDP
	&vfgx_afxdp_ops,
#endif
#if VFGX_HAVE_DPDK
	&vfgx_dpdk_ops,
#endif
#if VFGX_HAVE_RDMA
	&vfgx_rdma_ops,
#endif
#if VFGX_HAVE_PCAP
	&vfgx_pcap_ops,
#endif
};

#define NB_BACKENDS (sizeof(backend_table) / sizeof(backend_table[0]))

const char *const *vfgx_port_backends(void)
{
	static const char *names[NB_BACKENDS + 1];

	for (size_t i = 0; i < NB_BACKENDS; i++)
		names[i] = backend_table[i]->name;
	names[NB_BACKENDS] = NULL;
	return names;
}

static const char *const drop_names[VFGX_DROP_MAX] = {
	"no_bufs",     "ring_full", "truncated",   "bad_eth",
	"bad_ip",      "bad_ip_csum", "not_udp",   "bad_udp",
	"bad_udp_csum", "filtered", "bad_app_hdr", "bad_stream",
	"late",        "duplicate", "too_big",     "user",
	"field_outside", "bad_length", "mismatch", "offset_past_chunk",
	"segment_past_frame", "seq_jump", "user_place",
};

const char *vfgx_drop_reason_name(enum vfgx_drop_reason r)
{
	return (unsigned)r < VFGX_DROP_MAX ? drop_names[r] : "?";
}

static const struct vfgx_port_ops *find_backend(const char *name)
{
	for (size_t i = 0; i < NB_BACKENDS; i++)
		if (strcmp(backend_table[i]->name, name) == 0)
			return backend_table[i];
	return NULL;
}

int vfgx_port_opts_from_yaml(const struct vfgx_cfg_node *map,
			     const struct vfgx_iface_config *ifc,
			     const struct vfgx_backend_opts **out)
{
	const struct vfgx_port_ops *ops = find_backend(ifc->backend);
	struct vfgx_backend_opts *o;

	*out = NULL;
	if (!ops) /* not in this build: opening the port says so */
		return 0;
	o = vfgx_cfg_alloc(map, ops->opts_size);
	if (!o)
		return -ENOMEM;
	*out = o;
	return ops->parse(map, ifc, o);
}

uint32_t vfgx_port_conf_frame_max(const struct vfgx_iface_config *ifc,
				  uint32_t buf_size, const char **key)
{
	const struct vfgx_port_ops *ops = find_backend(ifc->backend);

	*key = NULL;
	if (!ops) /* not in this build: the port will not open, and says why */
		return 0;
	return ops->rx_frame_max(ifc->backend_opts, ifc->address, buf_size, key);
}

/* After a successful open: o was checked by it (a program's struct is at
 * least the backend's size), NULL is the defaults. */
static void set_frame_max(struct vfgx_port *port, const struct vfgx_backend_opts *o,
			  const char *address)
{
	const char *key;

	for (uint16_t q = 0; q < port->nb_rx_queues; q++)
		port->rx_frame_max[q] = port->ops->rx_frame_max(
			o, address, port->rx_pools[q] ? vfgx_pool_buf_size(port->rx_pools[q]) : 0,
			&key);
}

uint32_t vfgx_port_rx_frame_max(const vfgx_port *port, uint16_t q)
{
	return q < port->nb_rx_queues ? port->rx_frame_max[q] : 0;
}

int vfgx_port_open(vfgx_ctx *ctx, const struct vfgx_port_conf *user_conf,
		   vfgx_port **out)
{
	const struct vfgx_port_ops *ops = NULL;
	struct vfgx_port_conf c, *conf = &c;
	struct vfgx_port *port;
	int ret;

	*out = NULL;
	if (vfgx_argsz_copy(&c, sizeof(c), user_conf, sizeof(c)))
		return vfgx_set_error(ctx, -EINVAL,
				      "port: struct vfgx_port_conf argsz %u not understood by libvfgx %s (set argsz = sizeof(struct vfgx_port_conf))",
				      user_conf->argsz, VFGX_VERSION_STRING);
	if (!conf->backend)
		return vfgx_set_error(ctx, -EINVAL, "%s: no backend named",
				      conf->name ? conf->name : "port");
	ops = find_backend(conf->backend);
	if (!ops) {
		static const char *const known[] = { "loopback", "socket",
						     "afxdp", "dpdk", "rdma",
						     "pcap" };

		for (size_t i = 0; i < 6; i++)
			if (strcmp(known[i], conf->backend) == 0)
				return vfgx_set_error(ctx, -ENOTSUP,
						      "%s: backend '%s' is not in this build (install its -dev package and rebuild; see the build summary)",
						      conf->name ? conf->name : "port",
						      conf->backend);
		return vfgx_set_error(ctx, -EINVAL,
				      "%s: unknown backend '%s' (use loopback, socket, afxdp, dpdk, rdma or pcap)",
				      conf->name ? conf->name : "port",
				      conf->backend);
	}
	/* batch_size: one meaning (port.h), checked here once per queue */
	if (conf->nb_rx_queues > VFGX_MAX_QUEUES ||
	    conf->nb_tx_queues > VFGX_MAX_QUEUES)
		return vfgx_set_error(ctx, -EINVAL, "%s: queues must be 0..%d",
				      conf->name ? conf->name : "port",
				      VFGX_MAX_QUEUES);
	if (conf->burst == 0 || conf->burst > VFGX_BATCH_MAX)
		return vfgx_set_error(ctx, -EINVAL, "%s: burst %u: must be 1..%d",
				      conf->name ? conf->name : "port",
				      conf->burst, VFGX_BATCH_MAX);
	for (int q = 0; q < VFGX_MAX_QUEUES; q++)
		if ((conf->rx_bursts && q < conf->nb_rx_queues && conf->rx_bursts[q] > VFGX_BATCH_MAX) ||
		    (conf->tx_bursts && q < conf->nb_tx_queues && conf->tx_bursts[q] > VFGX_BATCH_MAX))
			return vfgx_set_error(ctx, -EINVAL,
					      "%s: queue %d: batch_size must be 1..%d",
					      conf->name ? conf->name : "port", q,
					      VFGX_BATCH_MAX);
	port = calloc(1, sizeof(*port));
	if (!port)
		return -ENOMEM;
	port->priv = calloc(1, ops->priv_size ? ops->priv_size : 1);
	if (!port->priv) {
		free(port);
		return -ENOMEM;
	}
	port->ctx = ctx;
	port->ops = ops;
	snprintf(port->name, sizeof(port->name), "%s",
		 conf->name ? conf->name : ops->name);
	port->nb_rx_queues = conf->nb_rx_queues;
	port->nb_tx_queues = conf->nb_tx_queues;
	port->burst = conf->burst;
	for (int q = 0; q < VFGX_MAX_QUEUES; q++) {
		uint16_t rb = conf->rx_bursts && q < conf->nb_rx_queues ? conf->rx_bursts[q] : 0;

		port->rx_burst[q] = rb ? rb : conf->burst;
		port->tx_burst[q] = conf->tx_bursts && q < conf->nb_tx_queues ?
					    conf->tx_bursts[q] : 0;
	}
	/* backends size their per-burst state by the largest queue's */
	if (conf->nb_rx_queues) {
		port->burst = 1;
		for (uint16_t q = 0; q < conf->nb_rx_queues; q++)
			if (port->rx_burst[q] > port->burst)
				port->burst = port->rx_burst[q];
	}
	for (uint16_t q = 0; conf->rx_pools && q < conf->nb_rx_queues; q++)
		port->rx_pools[q] = conf->rx_pools[q];
	ret = ops->open(port, conf);
	if (ret) {
		free(port->priv);
		free(port);
		return ret;
	}
	set_frame_max(port, conf->backend_opts, conf->address);
	*out = port;
	return 0;
}

static void free_owned_pools(struct vfgx_port *port)
{
	for (int q = 0; q < VFGX_MAX_QUEUES; q++) {
		vfgx_pool_destroy(port->rx_pools[q]);
		vfgx_region_destroy(port->rx_regions[q]);
		port->rx_pools[q] = NULL;
		port->rx_regions[q] = NULL;
	}
}

int vfgx_port_open_config(vfgx_ctx *ctx, const struct vfgx_config *cfg,
			  const struct vfgx_iface_config *ifc, vfgx_port **out)
{
	struct vfgx_port tmp = { 0 };
	uint16_t rx_bursts[VFGX_MAX_QUEUES] = { 0 }, tx_bursts[VFGX_MAX_QUEUES] = { 0 };
	struct vfgx_port_conf pc = {
		.argsz = sizeof(pc),
		.name = ifc->name,
		.backend = ifc->backend,
		.address = ifc->address && ifc->address[0] ? ifc->address : NULL,
		.nb_rx_queues = ifc->nb_rx_queues,
		.nb_tx_queues = ifc->nb_tx_queues,
		.burst = ifc->nb_rx_queues ? ifc->rx_queues[0].batch_size : 64,
		.backend_opts = ifc->backend_opts,
		.rx_pools = tmp.rx_pools,
		.rx_bursts = rx_bursts,
		.tx_bursts = tx_bursts,
	};
	int ret = 0;

	for (uint16_t q = 0; q < ifc->nb_rx_queues; q++)
		rx_bursts[q] = ifc->rx_queues[q].batch_size;
	for (uint16_t q = 0; q < ifc->nb_tx_queues; q++)
		tx_bursts[q] = ifc->tx_queues[q].batch_size;

	for (uint16_t q = 0; q < ifc->nb_rx_queues; q++) {
		const struct vfgx_region_config *rc;

		if (!ifc->rx_queues[q].region || !ifc->rx_queues[q].region[0])
			continue;
		rc = vfgx_config_find_region(cfg, ifc->rx_queues[q].region);
		if (!rc)
			return vfgx_set_error(ctx, -EINVAL,
					      "%s: rx queue %u: memory region '%s' not defined",
					      ifc->name, q, ifc->rx_queues[q].region);
		ret = vfgx_region_create(ctx, rc->kind,
					 (size_t)vfgx_pool_bytes(rc->buf_size, rc->num_bufs),
					 rc->gpu_id,
					 rc->fallback == VFGX_FALLBACK_HOST,
					 &tmp.rx_regions[q]);
		if (!ret)
			ret = vfgx_pool_create(ctx, tmp.rx_regions[q],
					       rc->buf_size, rc->num_bufs,
					       &tmp.rx_pools[q]);
		if (ret) {
			free_owned_pools(&tmp);
			return ret;
		}
	}
	ret = vfgx_port_open(ctx, &pc, out);
	if (ret) {
		free_owned_pools(&tmp);
		return ret;
	}
	(*out)->own_pools = true;
	memcpy((*out)->rx_regions, tmp.rx_regions, sizeof(tmp.rx_regions));
	return 0;
}

void vfgx_port_close(vfgx_port *port)
{
	if (!port)
		return;
	port->ops->close(port);
	if (port->own_pools)
		free_owned_pools(port);
	free(port->priv);
	free(port);
}

int vfgx_port_rx_burst(vfgx_port *port, uint16_t q, struct vfgx_pkt *pkts,
		       uint16_t max)
{
	if (q >= port->nb_rx_queues)
		return -EINVAL;
	if (max > port->rx_burst[q])
		max = port->rx_burst[q];
#if VFGX_HAVE_PCAP
	if (port->tap[q]) {
		int n;

		vfgx_capture_tap_reclaim(port->tap[q]);
		n = port->ops->rx_burst(port, q, pkts, max);

		if (n > 0)
			vfgx_capture_tap_burst(port->tap[q], pkts, (uint16_t)n);
		else if (n == 0)
			vfgx_capture_tap_rescue(port->tap[q]);
		return n;
	}
#endif
	return port->ops->rx_burst(port, q, pkts, max);
}

void vfgx_port_release(vfgx_port *port, uint16_t q, struct vfgx_pkt *pkts,
		       uint16_t n)
{
	if (!n || q >= port->nb_rx_queues)
		return;
#if VFGX_HAVE_PCAP
	if (port->tap[q]) {
		vfgx_capture_tap_release(port->tap[q], pkts, n);
		return;
	}
#endif
	port->ops->release(port, q, pkts, n);
}

int vfgx_port_tx_burst(vfgx_port *port, uint16_t q,
		       const struct vfgx_pkt *pkts, uint16_t n)
{
	uint16_t chunk, done = 0;
	int ret;

	if (q >= port->nb_tx_queues)
		return -EINVAL;
	if (!port->ops->tx_burst)
		return -ENOTSUP;
	chunk = port->tx_burst[q] ? port->tx_burst[q] : n;
	if (n <= chunk)
		return port->ops->tx_burst(port, q, pkts, n);
	/* the queue's batch_size per backend call, while all are taken */
	while (done < n) {
		uint16_t k = (uint16_t)(n - done < chunk ? n - done : chunk);

		ret = port->ops->tx_burst(port, q, pkts + done, k);
		if (ret < 0)
			return done ? done : ret;
		done += (uint16_t)ret;
		if (ret < k)
			break;
	}
	return done;
}

int vfgx_port_stats(vfgx_port *port, uint16_t q, struct vfgx_queue_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (q >= port->nb_rx_queues && q >= port->nb_tx_queues)
		return -EINVAL;
	return port->ops->stats(port, q, st);
}

bool vfgx_port_rx_done(vfgx_port *port, uint16_t q)
{
	return port->ops->rx_done ? port->ops->rx_done(port, q) : false;
}

int vfgx_port_tx_reserve(vfgx_port *port, uint16_t q, void **bufs, uint16_t n,
			 uint32_t *room)
{
	if (q >= port->nb_tx_queues)
		return -EINVAL;
	if (!port->ops->tx_reserve)
		return -ENOTSUP;
	return port->ops->tx_reserve(port, q, bufs, n, room);
}

int vfgx_port_tx_submit(vfgx_port *port, uint16_t q, const uint32_t *lens, uint16_t n)
{
	if (q >= port->nb_tx_queues)
		return -EINVAL;
	if (!port->ops->tx_submit)
		return -ENOTSUP;
	return port->ops->tx_submit(port, q, lens, n);
}

int vfgx_port_source_report(vfgx_port *port, uint16_t q,
			    struct vfgx_source_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	if (!port->ops->source_report)
		return 0;
	return port->ops->source_report(port, q, rep);
}

int vfgx_port_txtime_enable(vfgx_port *port, struct vfgx_txtime_info *info)
{
	struct vfgx_txtime_info ours = { .argsz = sizeof(ours) };
	int ret;

	if (info && vfgx_argsz_fill(info, &ours, sizeof(ours)))
		return vfgx_set_error(port->ctx, -EINVAL, "vfgx_txtime_info: argsz %u too small",
				      *(const uint32_t *)info);
	if (!port->ops->txtime_enable)
		return vfgx_set_error(port->ctx, -EOPNOTSUPP,
				      "%s: the %s backend has no launch-time transmit (txtime: socket ports over UDP with the ETF qdisc only)",
				      port->name, port->ops->name);
	ret = port->ops->txtime_enable(port, &ours);
	if (!ret && info)
		vfgx_argsz_fill(info, &ours, sizeof(ours));
	return ret;
}

int vfgx_port_txtime_stats(vfgx_port *port, uint16_t q, struct vfgx_txtime_stats *st)
{
	struct vfgx_txtime_stats ours = { .argsz = sizeof(ours) };
	int ret;

	if (vfgx_argsz_fill(st, &ours, sizeof(ours)))
		return -EINVAL;
	if (q >= port->nb_tx_queues || !port->ops->txtime_stats)
		return -EINVAL;
	ret = port->ops->txtime_stats(port, q, &ours);
	if (!ret)
		vfgx_argsz_fill(st, &ours, sizeof(ours));
	return ret;
}

const char *vfgx_port_name(const vfgx_port *port)
{
	return port->name;
}

const char *vfgx_port_backend(const vfgx_port *port)
{
	return port->ops->name;
}

uint16_t vfgx_port_nb_rx_queues(const vfgx_port *port)
{
	return port->nb_rx_queues;
}

vfgx_pool *vfgx_port_rx_pool(const vfgx_port *port, uint16_t q)
{
	return q < port->nb_rx_queues ? port->rx_pools[q] : NULL;
}

uint16_t vfgx_port_nb_tx_queues(const vfgx_port *port)
{
	return port->nb_tx_queues;
}

uint16_t vfgx_port_rx_batch(const vfgx_port *port, uint16_t q)
{
	return q < port->nb_rx_queues ? port->rx_burst[q] : 0;
}

void vfgx_port_release_to_pool(struct vfgx_port *port, uint16_t q,
			       struct vfgx_pkt *pkts, uint16_t n)
{
	void *bufs[VFGX_BATCH_MAX];

	for (uint16_t i = 0; i < n; i++)
		bufs[i] = pkts[i].handle;
	vfgx_pool_free_bulk(port->rx_pools[q], bufs, n);
}

int vfgx_port_find_iface(struct vfgx_port *port, const char *ifname)
{
	unsigned int idx = if_nametoindex(ifname);

	if (!idx)
		return vfgx_set_error(port->ctx, -ENODEV,
				      "%s: interface '%s' not found in this network namespace (check `ip link`; run vfgx inside the interface's namespace with ip netns exec)",
				      port->name, ifname);
	return (int)idx;
}
