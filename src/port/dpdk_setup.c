/* dpdk_setup.c - the DPDK port's set-up and tear-down: EAL (once per
 * process, from the first port's eal_args), the device by PCI address or
 * vdev, host or external-memory (GPU / pinned) mbuf pools, rx/tx queues
 * with header-data split, rte_flow or software UDP steering. */
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_memory.h>
#include <rte_mempool.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <vfgx/dpdk.h>
#include <vfgx/stages.h>

#include "backend.h"
#include "dpdk_priv.h"

/*
 * The EAL is process-wide and can be initialised once: the first DPDK port
 * opened in a process sets it up from its eal_args, later ports reuse it
 * (their eal_args are ignored with a warning).  This is the backend's only
 * global state, guarded by eal_lock.
 */
static pthread_mutex_t eal_lock = PTHREAD_MUTEX_INITIALIZER;
static bool eal_ready;
static char eal_owner[VFGX_NAME_MAX];
static unsigned int pool_seq; /* unique mempool names (atomic) */
static bool port_used[RTE_MAX_ETHPORTS];

static bool dk_is_pci(const char *s)
{
	unsigned int d, b, dv, f;
	char c;

	return sscanf(s, "%x:%x:%x.%x%c", &d, &b, &dv, &f, &c) == 4 ||
	       sscanf(s, "%x:%x:%x.%x,%c", &d, &b, &dv, &f, &c) == 5 ||
	       sscanf(s, "%x:%x.%x%c", &b, &dv, &f, &c) == 3 ||
	       sscanf(s, "%x:%x.%x,%c", &b, &dv, &f, &c) == 4;
}


/* ---- EAL ------------------------------------------------------------------ */

static bool dk_has_arg(const struct dk_opts *o, const char *const *names)
{
	for (int i = 0; i < o->nb_eal; i++)
		for (const char *const *n = names; *n; n++) {
			size_t l = strlen(*n);

			if (strncmp(o->eal[i], *n, l) == 0 &&
			    (o->eal[i][l] == 0 || o->eal[i][l] == '=' ||
			     ((*n)[1] != '-' && o->eal[i][l] != 0)))
				return true;
		}
	return false;
}

/* Free huge pages of any size and a hugetlbfs mount: what EAL needs. */
static bool dk_hugepages_usable(void)
{
	static const char *const sizes[] = { "hugepages-2048kB",
					     "hugepages-1048576kB" };
	unsigned long total = 0;
	bool mounted = false;
	char line[512];
	FILE *f;

	for (int i = 0; i < 2; i++) {
		char path[128];
		unsigned long v = 0;

		snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/%s/free_hugepages",
			 sizes[i]);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%lu", &v) == 1)
			total += v;
		fclose(f);
	}
	f = fopen("/proc/mounts", "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (strstr(line, " hugetlbfs "))
				mounted = true;
		fclose(f);
	}
	return total > 0 && mounted;
}

static int dk_eal_init(struct vfgx_port *port, const struct dk_opts *o)
{
	static const char *const prefix_args[] = { "--in-memory", "--file-prefix",
						   "--no-shconf", NULL };
	static const char *const mem_args[] = { "--no-huge", "-m",
						"--socket-mem", NULL };
	static const char *const core_args[] = { "-l", "-c", "--lcores", NULL };
	static const char *const bus_args[] = { "--no-pci", "-a", "-b",
						"--allow", "--block", NULL };
	static const char *const log_args[] = { "--log-level", NULL };
	static const char *const tel_args[] = { "--telemetry", "--no-telemetry",
						NULL };
	char *argv[DK_MAX_EAL_ARGS + 1];
	char core[16], joined[1024] = "";
	bool huge = dk_hugepages_usable();
	bool user_mem = dk_has_arg(o, mem_args);
	cpu_set_t saved;
	int argc = 0, ret;

	argv[argc++] = (char *)"vfgx";
	for (int i = 0; i < o->nb_eal; i++)
		argv[argc++] = (char *)o->eal[i];
	if (!user_mem && !huge) {
		vfgx_warn(port->ctx, "%s: no free hugepages (or no hugetlbfs mount): DPDK runs with --no-huge -m 512, which only vdevs and IOMMU-backed devices can use (echo 256 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages and mount hugetlbfs, or set dpdk.eal_args, to silence)",
			  port->name);
		argv[argc++] = (char *)"--no-huge";
		argv[argc++] = (char *)"-m";
		argv[argc++] = (char *)"512";
	}
	if (!dk_has_arg(o, prefix_args))
		/* several processes coexist: no shared runtime files */
		argv[argc++] = (char *)((huge || user_mem) ? "--in-memory" :
							     "--no-shconf");
	if (!dk_has_arg(o, core_args)) {
		/* one lcore: the CPU this thread runs on, so EAL's pinning of
		 * the main thread is harmless (it is undone below anyway) */
		int cpu = sched_getcpu();

		snprintf(core, sizeof(core), "%d", cpu < 0 ? 0 : cpu);
		argv[argc++] = (char *)"-l";
		argv[argc++] = core;
	}
	if (!dk_has_arg(o, bus_args)) {
		if (!dk_is_pci(o->port)) {
			argv[argc++] = (char *)"--no-pci";
		} else {
			/* only this device: EAL would otherwise probe every
			 * PCI NIC it can, the host's own included */
			argv[argc++] = (char *)"-a";
			argv[argc++] = (char *)o->port;
		}
	}
	if (!dk_has_arg(o, log_args))
		argv[argc++] = (char *)(vfgx_log_get_level(port->ctx) >=
							VFGX_LOG_DEBUG ?
						"--log-level=info" :
						"--log-level=warning");
	if (!dk_has_arg(o, tel_args))
		argv[argc++] = (char *)"--no-telemetry";
	argv[argc] = NULL;
	for (int i = 1; i < argc; i++)
		if (strlen(joined) + strlen(argv[i]) + 2 < sizeof(joined)) {
			strcat(joined, " ");
			strcat(joined, argv[i]);
		}
	vfgx_info(port->ctx, "%s: DPDK EAL:%s", port->name, joined);
	/* rte_eal_init pins the calling thread to the main lcore; the caller
	 * keeps its own placement */
	pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved);
	ret = rte_eal_init(argc, argv);
	pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	if (ret < 0)
		return vfgx_set_error(port->ctx, -(rte_errno ? rte_errno : EINVAL),
				      "%s: DPDK EAL rejected its arguments (%s):%s %s (fix dpdk.eal_args; EAL's own message is above)",
				      port->name, joined + 1, rte_errno == EALREADY ?
				      " EAL already initialised outside vfgx;" : "",
				      rte_strerror(rte_errno));
	return 0;
}

static int dk_eal_ensure(struct vfgx_port *port, const struct dk_opts *o)
{
	int ret = 0;

	if (eal_ready) {
		if (o->nb_eal)
			vfgx_warn(port->ctx, "%s: DPDK EAL was initialised by port %s in this process; this port's dpdk.eal_args are ignored (EAL starts once per process)",
				  port->name, eal_owner);
		return 0;
	}
	ret = dk_eal_init(port, o);
	if (!ret) {
		eal_ready = true;
		snprintf(eal_owner, sizeof(eal_owner), "%s", port->name);
	}
	return ret;
}

/* ---- device ------------------------------------------------------------- */

/* A PCI address this machine does not have: one line before EAL starts
 * (EAL would print its own two lines and a hugepage warning first). */
static int dk_check_pci(struct vfgx_port *port, const char *devargs)
{
	unsigned int d, b, dv, f;
	char path[80];

	if (sscanf(devargs, "%x:%x:%x.%x", &d, &b, &dv, &f) != 4) {
		d = 0; /* BB:DD.F: domain 0, as EAL reads it */
		if (sscanf(devargs, "%x:%x.%x", &b, &dv, &f) != 3)
			return 0;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%04x:%02x:%02x.%x",
		 d, b, dv, f);
	if (access(path, F_OK) == 0 || access("/sys/bus/pci/devices", F_OK))
		return 0; /* there, or no sysfs to tell: DPDK says */
	return vfgx_set_error(port->ctx, -ENODEV,
			      "%s: no PCI device %04x:%02x:%02x.%x on this machine (lspci -D lists them; dpdk-devbind.py --status shows which DPDK can use)",
			      port->name, d, b, dv, f);
}

/* A vdev over a kernel interface (net_af_xdp, net_af_packet: iface=NAME)
 * whose interface is missing: say so before DPDK tries and reports
 * something unrelated ("Operation not permitted"). */
static int dk_check_iface(struct vfgx_port *port, const char *devargs)
{
	const char *v = strstr(devargs, ",iface=");
	char ifname[IF_NAMESIZE + 1];
	size_t n;

	if (!v)
		return 0;
	v += strlen(",iface=");
	n = strcspn(v, ",");
	if (n > IF_NAMESIZE)
		n = IF_NAMESIZE;
	memcpy(ifname, v, n);
	ifname[n] = 0;
	return vfgx_port_find_iface(port, ifname) < 0 ? -ENODEV : 0;
}

/* The device the port names, where vfgx can tell it is missing. */
static int dk_check_device(struct vfgx_port *port, const char *devargs)
{
	return dk_is_pci(devargs) ? dk_check_pci(port, devargs) :
				    dk_check_iface(port, devargs);
}

static int dk_find_port(const char *devname, uint16_t *pid)
{
	uint16_t p;

	if (rte_eth_dev_get_port_by_name(devname, pid) == 0)
		return 0;
	RTE_ETH_FOREACH_DEV(p) {
		struct rte_eth_dev_info di;

		if (rte_eth_dev_info_get(p, &di) == 0 && di.device &&
		    strcmp(rte_dev_name(di.device), devname) == 0) {
			*pid = p;
			return 0;
		}
	}
	return -ENODEV;
}

static int dk_attach(struct vfgx_port *port, struct dk_opts *o)
{
	struct dk_priv *dp = port->priv;
	char *comma;
	int ret;

	snprintf(dp->devname, sizeof(dp->devname), "%s", o->port);
	comma = strchr(dp->devname, ',');
	if (comma)
		*comma = 0;
	if (dk_find_port(dp->devname, &dp->pid) != 0) {
		/* EAL logs why a probe failed on lines of its own; the error
		 * below says it in one (EAL's lines come back with log_level:
		 * debug) */
		uint32_t level = rte_log_get_global_level();

		if (vfgx_log_get_level(port->ctx) < VFGX_LOG_DEBUG)
			rte_log_set_global_level(RTE_LOG_CRIT);
		ret = rte_dev_probe(o->port);
		rte_log_set_global_level(level);
		if (ret && ret != -EEXIST)
			return vfgx_set_error(port->ctx, ret < 0 ? ret : -ENODEV,
					      "%s: DPDK cannot attach '%s': %s (use a PCI address bound to vfio-pci or a mlx5 device, see dpdk-devbind.py --status; or a vdev such as net_null0, net_ring0, net_af_packet0,iface=eth0, net_af_xdp0,iface=eth0)",
					      port->name, o->port, rte_strerror(-ret));
		dp->probed = ret == 0;
		if (dk_find_port(dp->devname, &dp->pid) != 0)
			return vfgx_set_error(port->ctx, -ENODEV,
					      "%s: DPDK attached '%s' but it is not an ethdev port (use a network device)",
					      port->name, o->port);
	}
	if (port_used[dp->pid]) {
		dp->probed = false;
		return vfgx_set_error(port->ctx, -EBUSY,
				      "%s: DPDK port '%s' is already open in this process (close the other vfgx port first)",
				      port->name, dp->devname);
	}
	port_used[dp->pid] = true;
	dp->attached = true;
	return 0;
}

/* ---- pools -------------------------------------------------------------- */

static int dk_host_pool(struct vfgx_port *port, const char *what, uint32_t n,
			uint32_t data_room, uint32_t cache, int socket,
			struct rte_mempool **out)
{
	char name[RTE_MEMPOOL_NAMESIZE];

	snprintf(name, sizeof(name), "vfgx%u_%s",
		 __atomic_fetch_add(&pool_seq, 1, __ATOMIC_RELAXED), what);
	*out = rte_pktmbuf_pool_create(name, n, cache, 0, (uint16_t)data_room,
				       socket);
	if (!*out)
		return vfgx_set_error(port->ctx, -(rte_errno ? rte_errno : ENOMEM),
				      "%s: DPDK mbuf pool %s (%u x %u B) failed: %s (give EAL more memory: hugepages, or -m in dpdk.eal_args; or lower dpdk.memory.num_mbufs)",
				      port->name, name, n, data_room,
				      rte_strerror(rte_errno));
	return 0;
}

static void dk_ext_release(struct dk_queue *dq)
{
	if (dq->dma_dev)
		rte_dev_dma_unmap(dq->dma_dev, dq->ext_addr, RTE_BAD_IOVA,
				  dq->ext_len);
	if (dq->ext_addr)
		rte_extmem_unregister(dq->ext_addr, dq->ext_len);
	dq->dma_dev = NULL;
	dq->ext_addr = NULL;
}

/*
 * Packets of queue q land in the vfgx region of its pool: register the
 * region as external memory, DMA-map it for the device and build an
 * extbuf mbuf pool over it (mbuf headers in EAL memory, data in the
 * region).  Returns 1 when the device cannot DMA-map and the fallback
 * says host.
 */
static int dk_ext_pool(struct vfgx_port *port, const struct dk_opts *o,
		       uint16_t q, struct rte_device *dev, int socket)
{
	struct dk_priv *dp = port->priv;
	struct dk_queue *dq = &dp->q[q];
	vfgx_pool *vp = port->rx_pools[q];
	const struct vfgx_region_info *ri = vfgx_region_info(vfgx_pool_region(vp));
	struct rte_pktmbuf_extmem ext;
	size_t pg = ri->align ? ri->align : 4096;
	uint32_t elt = vfgx_pool_buf_size(vp);
	char name[RTE_MEMPOOL_NAMESIZE];
	void *addr = ri->kind == VFGX_MEM_GPU ? ri->dev_addr : ri->addr;
	size_t len = ri->size & ~(pg - 1);
	const char *why = NULL;
	int ret, err = 0;

	if (elt > 65535 || elt < RTE_PKTMBUF_HEADROOM + 64 || len < elt)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: rx queue %u: region buffers of %u B cannot be mbufs (need %u..65535 B)",
				      port->name, q, elt, RTE_PKTMBUF_HEADROOM + 64);
	/* A vdev's "DMA map" is a no-op that succeeds: its PMD moves packets
	 * with the CPU (which cannot touch GPU memory), so treat it as a
	 * device without DMA. */
	if (strcmp(rte_bus_name(rte_dev_bus(dev)), "vdev") == 0) {
		err = ENOTSUP;
		why = "a vdev moves packets with the CPU, it has no device DMA";
	} else if (rte_extmem_register(addr, len, NULL, 0, pg) != 0) {
		return vfgx_set_error(port->ctx, -(rte_errno ? rte_errno : EINVAL),
				      "%s: rx queue %u: rte_extmem_register of the %s region (%p, %zu B, pages %zu B) failed: %s",
				      port->name, q, vfgx_mem_kind_name(ri->kind),
				      addr, len, pg, rte_strerror(rte_errno));
	} else {
		dq->ext_addr = addr;
		dq->ext_len = len;
		if (rte_dev_dma_map(dev, addr, RTE_BAD_IOVA, len) != 0) {
			err = rte_errno;
			why = rte_strerror(err);
			dk_ext_release(dq);
		}
	}
	if (err) {
		if (o->fallback == VFGX_FALLBACK_FAIL)
			return vfgx_set_error(port->ctx, -ENOTSUP,
					      "%s: rx queue %u: device %s cannot DMA-map external memory (%s region): %s (use a device behind an IOMMU or one that maps memory itself such as mlx5; or set dpdk.memory.fallback: host)",
					      port->name, q, dp->devname,
					      vfgx_mem_kind_name(ri->kind), why);
		vfgx_warn(port->ctx, "%s: rx queue %u: device %s cannot DMA-map external memory (%s region): %s; using a host mbuf pool (set dpdk.memory.fallback: fail to make this an error)",
			  port->name, q, dp->devname,
			  vfgx_mem_kind_name(ri->kind), why);
		return 1;
	}
	dq->dma_dev = dev;
	ext.buf_ptr = addr;
	ext.buf_iova = RTE_BAD_IOVA;
	ext.buf_len = len;
	ext.elt_size = (uint16_t)elt;
	snprintf(name, sizeof(name), "vfgx%u_ext%u",
		 __atomic_fetch_add(&pool_seq, 1, __ATOMIC_RELAXED), q);
	dq->mp = rte_pktmbuf_pool_create_extbuf(name, (unsigned int)(len / elt),
						o->cache, 0, (uint16_t)elt,
						socket, &ext, 1);
	if (!dq->mp) {
		ret = vfgx_set_error(port->ctx, -(rte_errno ? rte_errno : ENOMEM),
				     "%s: rx queue %u: extbuf mbuf pool over the %s region failed: %s",
				     port->name, q, vfgx_mem_kind_name(ri->kind),
				     rte_strerror(rte_errno));
		dk_ext_release(dq);
		return ret;
	}
	dq->gpu = ri->kind == VFGX_MEM_GPU;
	return 0;
}

static int dk_pools(struct vfgx_port *port, const struct dk_opts *o,
		    const struct rte_eth_dev_info *di, int socket)
{
	struct dk_priv *dp = port->priv;
	int ret;

	for (uint16_t q = 0; q < port->nb_rx_queues; q++) {
		struct dk_queue *dq = &dp->q[q];

		ret = 1;
		if (port->rx_pools[q]) {
			ret = dk_ext_pool(port, o, q, di->device, socket);
			if (ret < 0)
				return ret;
		}
		if (ret == 1) {
			ret = dk_host_pool(port, "rx", o->num_mbufs,
					   o->mbuf_size, o->cache, socket,
					   &dq->mp);
			if (ret)
				return ret;
		}
		if (dp->split) {
			ret = dk_host_pool(port, "hdr", o->num_mbufs,
					   DK_HDR_ROOM + RTE_PKTMBUF_HEADROOM,
					   o->cache, socket, &dq->hdr_mp);
			if (ret)
				return ret;
		}
	}
	if (port->nb_tx_queues)
		return dk_host_pool(port, "tx", 2047u * port->nb_tx_queues,
				    o->mbuf_size, 256, socket, &dp->tx_mp);
	return 0;
}

/* ---- queues, steering ------------------------------------------------------- */

static bool dk_split_supported(struct vfgx_port *port,
			       const struct rte_eth_dev_info *di)
{
	if ((di->rx_offload_capa & RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT) &&
	    di->rx_seg_capa.max_nseg >= 2 && di->rx_seg_capa.multi_pools)
		return true;
	vfgx_warn(port->ctx, "%s: header_split: PMD %s has no buffer split (RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT with two pools); whole frames go to one pool (set dpdk.header_split: false to silence)",
		  port->name, di->driver_name);
	return false;
}

static int dk_rx_queue(struct vfgx_port *port, uint16_t q, uint16_t nb_desc,
		       int socket, const struct rte_eth_dev_info *di)
{
	struct dk_priv *dp = port->priv;
	struct dk_queue *dq = &dp->q[q];
	struct rte_eth_rxconf rxc = di->default_rxconf;
	union rte_eth_rxseg seg[2];
	uint32_t ptypes[32];
	int n, ret;

	if (!dp->split) {
		ret = rte_eth_rx_queue_setup(dp->pid, q, nb_desc, socket, &rxc,
					     dq->mp);
		goto out;
	}
	memset(seg, 0, sizeof(seg));
	seg[0].split.mp = dq->hdr_mp;
	seg[1].split.mp = dq->mp;
	n = rte_eth_buffer_split_get_supported_hdr_ptypes(dp->pid, ptypes, 32);
	for (int i = 0; i < n && i < 32; i++)
		if ((ptypes[i] & RTE_PTYPE_L4_MASK) == RTE_PTYPE_L4_UDP)
			seg[0].split.proto_hdr = ptypes[i];
	if (!seg[0].split.proto_hdr)
		seg[0].split.length = DK_SPLIT_HDR_LEN;
	rxc.offloads |= RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT;
	rxc.rx_seg = seg;
	rxc.rx_nseg = 2;
	ret = rte_eth_rx_queue_setup(dp->pid, q, nb_desc, socket, &rxc, NULL);
out:
	if (ret)
		return vfgx_set_error(port->ctx, ret,
				      "%s: DPDK rx queue %u setup (%u descriptors%s) failed: %s",
				      port->name, q, nb_desc,
				      dp->split ? ", header-data split" : "",
				      rte_strerror(-ret));
	return 0;
}

static int dk_flow_create(struct vfgx_port *port, const struct dk_flow_rule *r,
			  bool validate_only, struct rte_flow **out)
{
	struct dk_priv *dp = port->priv;
	struct rte_flow_attr attr = { .ingress = 1 };
	struct rte_flow_item_udp udp = { .hdr.dst_port = rte_cpu_to_be_16(r->udp_dst_port) };
	struct rte_flow_item_udp udp_mask = { .hdr.dst_port = RTE_BE16(0xffff) };
	struct rte_flow_item pattern[] = {
		{ .type = RTE_FLOW_ITEM_TYPE_ETH },
		{ .type = RTE_FLOW_ITEM_TYPE_IPV4 },
		{ .type = RTE_FLOW_ITEM_TYPE_UDP, .spec = &udp, .mask = &udp_mask },
		{ .type = RTE_FLOW_ITEM_TYPE_END },
	};
	struct rte_flow_action_queue queue = { .index = r->queue };
	struct rte_flow_action actions[] = {
		{ .type = RTE_FLOW_ACTION_TYPE_QUEUE, .conf = &queue },
		{ .type = RTE_FLOW_ACTION_TYPE_END },
	};
	struct rte_flow_error err = { 0 };

	if (validate_only) {
		if (rte_flow_validate(dp->pid, &attr, pattern, actions, &err))
			goto fail;
		return 0;
	}
	*out = rte_flow_create(dp->pid, &attr, pattern, actions, &err);
	if (*out)
		return 0;
fail:
	return vfgx_set_error(port->ctx, -ENOTSUP,
			      "UDP port %u -> queue %u: %s",
			      r->udp_dst_port, r->queue,
			      err.message ? err.message : rte_strerror(rte_errno));
}

static int dk_software_steering(struct vfgx_port *port, const struct dk_opts *o)
{
	struct dk_priv *dp = port->priv;
	uint16_t nq = port->nb_rx_queues;

	dp->steer = calloc(65536, 1);
	dp->rings = calloc((size_t)nq * nq, sizeof(*dp->rings));
	if (!dp->steer || !dp->rings)
		return -ENOMEM;
	for (int i = 0; i < o->nb_flows; i++)
		dp->steer[o->flows[i].udp_dst_port] =
			(uint8_t)(o->flows[i].queue + 1);
	for (uint16_t s = 0; s < nq; s++)
		for (uint16_t d = 0; d < nq; d++)
			if (s != d && vfgx_ring_init(&dp->rings[s * nq + d],
						     DK_SW_RING))
				return -ENOMEM;
	dp->sw_steer = true;
	return 0;
}

static int dk_steering(struct vfgx_port *port, const struct dk_opts *o,
		       const struct rte_eth_dev_info *di)
{
	struct dk_priv *dp = port->priv;
	int ret = 0;

	if (!o->nb_flows)
		return 0;
	if (o->steering != DK_STEER_SOFTWARE) {
		for (int i = 0; i < o->nb_flows && !ret; i++)
			ret = dk_flow_create(port, &o->flows[i], true, NULL);
		for (int i = 0; i < o->nb_flows && !ret; i++) {
			ret = dk_flow_create(port, &o->flows[i], false,
					     &dp->flows[i]);
			if (!ret)
				dp->nb_flows++;
		}
		if (!ret) {
			vfgx_info(port->ctx, "%s: %d rte_flow rules (UDP destination port -> queue)",
				  port->name, o->nb_flows);
			return 0;
		}
		if (o->steering == DK_STEER_FLOW)
			return vfgx_set_error(port->ctx, -ENOTSUP,
					      "%s: PMD %s refused an rte_flow rule: %s (set dpdk.steering: auto or software to steer in the backend)",
					      port->name, di->driver_name,
					      vfgx_last_error(port->ctx));
		vfgx_warn(port->ctx, "%s: PMD %s refused an rte_flow rule (%s): steering in software (set dpdk.steering: software to silence)",
			  port->name, di->driver_name, vfgx_last_error(port->ctx));
		vfgx_clear_error(port->ctx);
		rte_flow_flush(dp->pid, NULL);
		dp->nb_flows = 0;
	}
	ret = dk_software_steering(port, o);
	if (!ret)
		vfgx_info(port->ctx, "%s: %d UDP steering rules in software", port->name,
			  o->nb_flows);
	return ret;
}

static void dk_xstats_ids(struct dk_priv *dp)
{
	static const char *const names[2] = { "rx_mbuf_allocation_errors",
					      "rx_missed_errors" };

	for (int i = 0; i < 2; i++)
		dp->xs_ok[i] = rte_eth_xstats_get_id_by_name(dp->pid, names[i],
							     &dp->xs_id[i]) == 0;
}

/* ---- open / close ----------------------------------------------------------- */

void dk_close(struct vfgx_port *port)
{
	struct dk_priv *dp = port->priv;
	struct rte_device *dev = NULL;
	uint16_t nq = port->nb_rx_queues;

	pthread_mutex_lock(&eal_lock);
	if (dp->attached) {
		struct rte_eth_dev_info di;

		if (dp->nb_flows)
			rte_flow_flush(dp->pid, NULL);
		if (rte_eth_dev_info_get(dp->pid, &di) == 0)
			dev = di.device;
		if (dp->promisc)
			rte_eth_promiscuous_disable(dp->pid);
		if (dp->started)
			rte_eth_dev_stop(dp->pid);
		rte_eth_dev_close(dp->pid);
		if (dp->probed && dev)
			rte_dev_remove(dev);
		port_used[dp->pid] = false;
	}
	if (dp->rings) {
		for (uint32_t i = 0; i < (uint32_t)nq * nq; i++) {
			struct rte_mbuf *m;

			while (dp->rings[i].slots &&
			       vfgx_ring_dequeue_burst(&dp->rings[i], (void **)&m, 1))
				rte_pktmbuf_free(m);
			if (dp->rings[i].slots)
				vfgx_ring_fini(&dp->rings[i]);
		}
		free(dp->rings);
	}
	free(dp->steer);
	for (uint16_t q = 0; q < port->nb_tx_queues; q++) {
		/* reserved and never submitted: back before the pool goes */
		if (dp->q[q].resv_n)
			rte_mempool_put_bulk(dp->tx_mp, (void **)dp->q[q].resv, dp->q[q].resv_n);
		free(dp->q[q].resv);
		dp->q[q].resv = NULL;
		dp->q[q].resv_n = 0;
	}
	for (uint16_t q = 0; q < nq; q++) {
		rte_mempool_free(dp->q[q].mp);
		rte_mempool_free(dp->q[q].hdr_mp);
		dk_ext_release(&dp->q[q]);
		free(dp->q[q].last);
	}
	rte_mempool_free(dp->tx_mp);
	pthread_mutex_unlock(&eal_lock);
}

static int dk_configure(struct vfgx_port *port, const struct dk_opts *o,
			struct rte_eth_dev_info *di)
{
	struct dk_priv *dp = port->priv;
	struct rte_eth_conf ec = { 0 };
	uint16_t nb_rxd = (uint16_t)o->rx_desc, nb_txd = (uint16_t)o->tx_desc;
	uint16_t nb_txq = port->nb_tx_queues;
	int socket = rte_eth_dev_socket_id(dp->pid);
	int ret;

	if (socket < 0)
		socket = (int)rte_socket_id();
	if (port->nb_rx_queues > di->max_rx_queues ||
	    port->nb_tx_queues > di->max_tx_queues)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: %s (driver %s) has at most %u rx and %u tx queues; the interface asks for %u and %u",
				      port->name, dp->devname, di->driver_name,
				      di->max_rx_queues, di->max_tx_queues,
				      port->nb_rx_queues, port->nb_tx_queues);
	if (o->header_split)
		dp->split = dk_split_supported(port, di);
	if (port->nb_rx_queues > 1 && o->rss) {
		ec.rx_adv_conf.rss_conf.rss_hf =
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP) &
			di->flow_type_rss_offloads;
		if (ec.rx_adv_conf.rss_conf.rss_hf) {
			ec.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
			dp->rss = true;
		} else
			vfgx_info(port->ctx, "%s: PMD %s has no RSS; each rx queue gets what the PMD puts there",
				  port->name, di->driver_name);
	}
	if (dp->split)
		ec.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT;
	ret = dk_pools(port, o, di, socket);
	if (ret)
		return ret;
	/* queue-pair PMDs (net_af_xdp) want as many tx as rx queues: extra
	 * tx queues are set up and never used */
	if (nb_txq < port->nb_rx_queues && port->nb_rx_queues <= di->max_tx_queues)
		nb_txq = port->nb_rx_queues;
	ret = rte_eth_dev_configure(dp->pid, port->nb_rx_queues, nb_txq, &ec);
	if (!ret)
		ret = rte_eth_dev_adjust_nb_rx_tx_desc(dp->pid, &nb_rxd, &nb_txd);
	if (ret)
		return vfgx_set_error(port->ctx, ret,
				      "%s: DPDK configure of %s (%u rx, %u tx queues) failed: %s",
				      port->name, dp->devname, port->nb_rx_queues,
				      port->nb_tx_queues, rte_strerror(-ret));
	for (uint16_t q = 0; q < port->nb_rx_queues; q++)
		if ((ret = dk_rx_queue(port, q, nb_rxd, socket, di)))
			return ret;
	for (uint16_t q = 0; q < nb_txq; q++) {
		ret = rte_eth_tx_queue_setup(dp->pid, q, nb_txd, socket,
					     &di->default_txconf);
		if (ret)
			return vfgx_set_error(port->ctx, ret,
					      "%s: DPDK tx queue %u setup failed: %s",
					      port->name, q, rte_strerror(-ret));
	}
	return 0;
}

int dk_open(struct vfgx_port *port, const struct vfgx_port_conf *conf)
{
	struct dk_priv *dp = port->priv;
	struct rte_eth_dev_info di;
	struct dk_opts *o;
	int ret;

	if (port->nb_rx_queues == 0 && port->nb_tx_queues == 0)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: a DPDK port needs at least one rx or tx queue",
				      port->name);
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	ret = dk_parse(port, conf, o);
	if (!ret)
		ret = dk_check_device(port, o->port);
	if (ret)
		goto out_free;
	pthread_mutex_lock(&eal_lock);
	ret = dk_eal_ensure(port, o);
	if (!ret)
		ret = dk_attach(port, o);
	pthread_mutex_unlock(&eal_lock);
	if (ret)
		goto err;
	ret = rte_eth_dev_info_get(dp->pid, &di);
	if (ret) {
		ret = vfgx_set_error(port->ctx, ret, "%s: DPDK device info: %s",
				     port->name, rte_strerror(-ret));
		goto err;
	}
	ret = dk_configure(port, o, &di);
	if (ret)
		goto err;
	ret = rte_eth_dev_start(dp->pid);
	if (ret) {
		ret = vfgx_set_error(port->ctx, ret, "%s: DPDK start of %s failed: %s",
				     port->name, dp->devname, rte_strerror(-ret));
		goto err;
	}
	dp->started = true;
	if (o->promiscuous && rte_eth_promiscuous_get(dp->pid) == 0)
		dp->promisc = rte_eth_promiscuous_enable(dp->pid) == 0;
	ret = dk_steering(port, o, &di);
	if (ret)
		goto err;
	for (uint16_t q = 0; q < port->nb_rx_queues; q++) {
		dp->q[q].last = malloc(port->burst * sizeof(*dp->q[q].last));
		if (!dp->q[q].last) {
			ret = vfgx_set_error(port->ctx, -ENOMEM,
					     "%s: no memory for rx queue %u's burst array",
					     port->name, q);
			goto err;
		}
	}
	dk_xstats_ids(dp);
	dp->base_tsc = rte_rdtsc();
	dp->base_ns = vfgx_now_ns();
	dp->ns_mult = (uint64_t)((1000000000.0 * 4294967296.0) / (double)rte_get_tsc_hz());
	vfgx_info(port->ctx, "%s: DPDK port %u = %s (driver %s): %u rx / %u tx queues%s%s",
		  port->name, dp->pid, o->port, di.driver_name,
		  port->nb_rx_queues, port->nb_tx_queues,
		  dp->split ? ", header-data split" : "",
		  dp->q[0].gpu ? ", GPU-resident mbufs" : "");
	free(o);
	return 0;
err:
	dk_close(port);
out_free:
	free(o);
	return ret;
}
