/* afxdp.c - the AF_XDP backend: one XDP socket per rx queue over a UMEM that
 * is the queue's pool region (host or CUDA-pinned memory, so the GPU reads
 * packets where the kernel put them), libxdp's xsk_def_prog attached with a
 * bpf_link so the kernel removes it however the process ends. */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include <vfgx/afxdp.h>

#include "afxdp_opts.h"
#include "backend.h"

/* free frames go to the fill ring this many at a time while packets flow */
#define AX_FILL_BATCH 64
#define AX_PROG_FILE "xsk_def_xdp_prog.o"
#define AX_PROG_NAME "xsk_def_prog"
#define AX_COMP_BATCH 256

enum ax_mode { AX_MODE_AUTO, AX_MODE_NATIVE, AX_MODE_GENERIC };
enum ax_zc { AX_ZC_AUTO, AX_ZC_ON, AX_ZC_OFF };

struct ax_queue {
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	uint8_t *base;        /* UMEM start (the pool region's CPU address) */
	uint64_t umem_size;
	vfgx_pool *pool;
	bool own_pool;
	void **frames;        /* every frame taken from the pool at open */
	uint32_t nb_frames;
	/* Frames held by us, neither in a ring nor out.  rx and tx have
	 * their own frames so the two sides share no state: tx_burst may run
	 * on another thread than rx_burst/release of the same queue. */
	uint64_t *free_addrs; /* rx: waiting for room in the fill ring */
	uint32_t nb_free;
	uint64_t *tx_addrs;   /* tx: free for tx_burst */
	uint32_t nb_tx;
	uint32_t nic_queue;
	struct vfgx_queue_stats st;
};

struct ax_priv {
	struct ax_queue q[VFGX_MAX_QUEUES];
	struct vfgx_afxdp_info info; /* its names point to the two below */
	char ifname[32];
	char driver[32];
	enum ax_mode mode;
	enum ax_zc zc;
	uint32_t frame_size, num_frames;
	uint32_t rx_ring, tx_ring, fill_ring, comp_ring;
	struct xdp_program *prog; /* libxdp handle that owns the bpf_object */
	int link_fd;
	int map_fd;
	uint16_t nq;
};

static int ax_parse(struct vfgx_port *port, struct ax_priv *ap,
		    const struct vfgx_port_conf *conf)
{
	struct vfgx_afxdp_opts ao;
	int ret;

	if ((ret = vfgx_afxdp_opts_get(port->ctx, port->name, conf, &ao)))
		return ret;
	ap->frame_size = ao.frame_size;
	ap->num_frames = ao.num_frames;
	ap->rx_ring = ao.rx_ring;
	ap->tx_ring = ao.tx_ring;
	ap->fill_ring = ao.fill_ring;
	ap->comp_ring = ao.comp_ring;
	ap->mode = (enum ax_mode)ao.mode;
	ap->zc = (enum ax_zc)ao.zero_copy;
	/* vfgx_afxdp_opts_get checked the list against the rx queues */
	for (uint16_t q = 0; q < port->nb_rx_queues; q++)
		ap->q[q].nic_queue = ao.queues ? ao.queues[q] : q;
	return 0;
}

static int ax_ethtool(const char *ifname, void *cmd)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = cmd;
	ret = ioctl(fd, SIOCETHTOOL, &ifr) ? -errno : 0;
	close(fd);
	return ret;
}

/* Interface present, driver name, and every configured queue id exists. */
static int ax_check_iface(struct vfgx_port *port, struct ax_priv *ap)
{
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	uint32_t nb;
	int idx = vfgx_port_find_iface(port, ap->info.ifname);

	if (idx < 0)
		return idx;
	ap->info.ifindex = idx;
	snprintf(ap->driver, sizeof(ap->driver), "?");
	if (!ax_ethtool(ap->info.ifname, &di))
		snprintf(ap->driver, sizeof(ap->driver), "%s",
			 di.driver);
	if (ax_ethtool(ap->info.ifname, &ch))
		return 0; /* no channel info: bind() will judge the queue ids */
	nb = ch.rx_count > ch.combined_count ? ch.rx_count : ch.combined_count;
	for (uint16_t q = 0; q < port->nb_rx_queues; q++)
		if (ap->q[q].nic_queue >= nb)
			return vfgx_set_error(port->ctx, -EINVAL,
					      "%s: %s has %u rx queue(s), no queue %u (set afxdp.queues to ids below %u; see ethtool -l %s)",
					      port->name, ap->info.ifname, nb,
					      ap->q[q].nic_queue, nb,
					      ap->info.ifname);
	return 0;
}

/* Refuse an interface that already has an XDP program: attaching ours
 * would fail (bpf_link) or replace someone else's. */
static int ax_check_no_prog(struct vfgx_port *port, struct ax_priv *ap)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, qo);
	struct bpf_prog_info pi = { 0 };
	uint32_t len = sizeof(pi);
	int ret, fd;

	ret = bpf_xdp_query(ap->info.ifindex, 0, &qo);
	if (ret || !qo.prog_id)
		return 0;
	fd = bpf_prog_get_fd_by_id(qo.prog_id);
	if (fd >= 0) {
		bpf_obj_get_info_by_fd(fd, &pi, &len);
		close(fd);
	}
	return vfgx_set_error(port->ctx, -EBUSY,
			      "%s: %s already carries XDP program %u '%s'; AF_XDP needs the interface to itself (remove it with `ip link set dev %s %s off`, or stop the program's owner)",
			      port->name, ap->info.ifname, qo.prog_id,
			      pi.name[0] ? pi.name : "?", ap->info.ifname,
			      qo.attach_mode == XDP_ATTACHED_SKB ? "xdpgeneric" :
			      qo.attach_mode == XDP_ATTACHED_HW ? "xdpoffload" :
								  "xdpdrv");
}

static int ax_frames_init(struct vfgx_port *port, struct ax_priv *ap,
			  uint16_t q)
{
	struct ax_queue *xq = &ap->q[q];
	const struct vfgx_region_info *ri;
	uint32_t bs;
	int ret;

	if (!port->rx_pools[q]) {
		ret = vfgx_pool_create(port->ctx, NULL, ap->frame_size,
				       ap->num_frames, &port->rx_pools[q]);
		if (ret)
			return ret;
		xq->own_pool = true;
	}
	xq->pool = port->rx_pools[q];
	ri = vfgx_region_info(vfgx_pool_region(xq->pool));
	bs = vfgx_pool_buf_size(xq->pool);
	if (ri->kind == VFGX_MEM_GPU)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: rx queue %u's memory region is GPU memory; an AF_XDP UMEM must be host memory the kernel can pin (use kind: pinned for GPU-readable frames)",
				      port->name, q);
	if (bs != 2048 && bs != 4096)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: rx queue %u's buffers are %u bytes; AF_XDP frames are 2048 or 4096 bytes (set the region's buf_size)",
				      port->name, q, bs);
	if (ap->info.frame_size && bs != ap->info.frame_size)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: all rx queues need the same buffer size (%u vs %u)",
				      port->name, ap->info.frame_size, bs);
	ap->info.frame_size = bs;
	xq->nb_frames = vfgx_pool_available(xq->pool);
	if (xq->nb_frames < 2 * 64)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: rx queue %u's pool has %u free buffers; AF_XDP needs at least 128",
				      port->name, q, xq->nb_frames);
	xq->frames = malloc(sizeof(void *) * xq->nb_frames);
	xq->free_addrs = malloc(sizeof(uint64_t) * xq->nb_frames);
	xq->tx_addrs = malloc(sizeof(uint64_t) * xq->nb_frames);
	if (!xq->frames || !xq->free_addrs || !xq->tx_addrs)
		return -ENOMEM;
	/* The UMEM is the whole region; every frame of the pool belongs to
	 * this socket until the port closes. */
	if (vfgx_pool_alloc_bulk(xq->pool, xq->frames, xq->nb_frames) < 0) {
		xq->nb_frames = 0;
		return vfgx_set_error(port->ctx, -ENOBUFS,
				      "%s: rx queue %u: pool buffers are in use by someone else",
				      port->name, q);
	}
	xq->base = ri->addr;
	xq->umem_size = ri->size;
	/* LIFO: lowest addresses handed out first */
	for (uint32_t i = 0; i < xq->nb_frames; i++)
		xq->free_addrs[i] =
			(uint64_t)((uint8_t *)xq->frames[xq->nb_frames - 1 - i] -
				   xq->base);
	xq->nb_free = xq->nb_frames;
	/* a quarter of the frames, at most a tx ring's worth, for tx */
	if (q < port->nb_tx_queues) {
		uint32_t ntx = xq->nb_frames / 4;

		if (ntx > ap->tx_ring)
			ntx = ap->tx_ring;
		while (xq->nb_tx < ntx)
			xq->tx_addrs[xq->nb_tx++] = xq->free_addrs[--xq->nb_free];
	}
	return 0;
}

/* Move up to n frames from our free stack to the fill ring. */
static void ax_fill(struct ax_queue *xq, uint32_t n)
{
	uint32_t idx, room;

	if (n > xq->nb_free)
		n = xq->nb_free;
	room = n ? xsk_prod_nb_free(&xq->fill, n) : 0;
	if (n > room)
		n = room;
	if (!n || xsk_ring_prod__reserve(&xq->fill, n, &idx) != n)
		return;
	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&xq->fill, idx + i) =
			xq->free_addrs[--xq->nb_free];
	/* release inside submit: addresses visible before the producer */
	xsk_ring_prod__submit(&xq->fill, n);
}

static int ax_socket(struct vfgx_port *port, struct ax_priv *ap, uint16_t q,
		     bool zero_copy)
{
	struct ax_queue *xq = &ap->q[q];
	struct xsk_umem_config uc = {
		.fill_size = ap->fill_ring,
		.comp_size = ap->comp_ring,
		.frame_size = ap->info.frame_size,
		.frame_headroom = 0,
		.flags = 0,
	};
	struct xsk_socket_config sc = {
		.rx_size = ap->rx_ring,
		.tx_size = ap->tx_ring,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = 0,
		.bind_flags = XDP_USE_NEED_WAKEUP |
			      (zero_copy ? XDP_ZEROCOPY : XDP_COPY),
	};
	int ret;

	ret = xsk_umem__create(&xq->umem, xq->base, xq->umem_size, &xq->fill,
			       &xq->comp, &uc);
	if (ret)
		return vfgx_set_error(port->ctx, ret,
				      "%s: rx queue %u: UMEM registration of %" PRIu64 " bytes failed: %s (check the memory cgroup limit and ulimit -l)",
				      port->name, q, xq->umem_size, strerror(-ret));
	ret = xsk_socket__create(&xq->xsk, ap->info.ifname, xq->nic_queue,
				 xq->umem, &xq->rx, &xq->tx, &sc);
	if (ret) {
		xsk_umem__delete(xq->umem);
		xq->umem = NULL;
		xq->xsk = NULL;
	}
	return ret;
}

static int ax_sockets(struct vfgx_port *port, struct ax_priv *ap)
{
	bool zc = ap->zc != AX_ZC_OFF;
	int ret;

	for (uint16_t q = 0; q < ap->nq; q++) {
		ret = ax_socket(port, ap, q, zc);
		/* a socket closed just before (a previous run) releases its
		 * queue from a kernel work queue: give it a moment */
		for (int i = 0; ret == -EBUSY && i < 40; i++) {
			struct timespec ts = { 0, 25000000 };

			nanosleep(&ts, NULL);
			ret = ax_socket(port, ap, q, zc);
		}
		if (ret == -EOPNOTSUPP && zc && ap->zc == AX_ZC_AUTO && q == 0) {
			vfgx_info(port->ctx, "%s: no AF_XDP zero-copy in driver %s; using copy mode (set afxdp.zero_copy: off to silence)",
				  ap->info.ifname, ap->info.driver);
			zc = false;
			ret = ax_socket(port, ap, q, zc);
		}
		if (ret == -EOPNOTSUPP && zc)
			return vfgx_set_error(port->ctx, ret,
					      "%s: %s (driver %s) has no AF_XDP zero-copy (set afxdp.zero_copy: auto or off)",
					      port->name, ap->info.ifname,
					      ap->info.driver);
		if (ret == -EBUSY)
			return vfgx_set_error(port->ctx, ret,
					      "%s: %s queue %u already has an AF_XDP socket (another vfgx or AF_XDP program uses it)",
					      port->name, ap->info.ifname,
					      ap->q[q].nic_queue);
		if (ret && !vfgx_last_error(port->ctx)[0])
			return vfgx_set_error(port->ctx, ret,
					      "%s: AF_XDP socket on %s queue %u: %s (is the queue id valid? see ethtool -l %s)",
					      port->name, ap->info.ifname,
					      ap->q[q].nic_queue, strerror(-ret),
					      ap->info.ifname);
		if (ret)
			return ret;
		ap->info.zero_copy = zc;
		ax_fill(&ap->q[q], ap->fill_ring);
	}
	return 0;
}

static int ax_attach_mode(struct ax_priv *ap, uint32_t flags)
{
	LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = flags);
	int fd = bpf_program__fd(bpf_object__find_program_by_name(
		xdp_program__bpf_obj(ap->prog), AX_PROG_NAME));

	if (fd < 0)
		return fd;
	ap->link_fd = bpf_link_create(fd, ap->info.ifindex, BPF_XDP, &lo);
	return ap->link_fd < 0 ? -errno : 0;
}

/* libbpf warns about libxdp's metadata sections it does not use; keep
 * real warnings. */
static int ax_libbpf_print(enum libbpf_print_level level, const char *fmt,
			   va_list args)
{
	if (level != LIBBPF_WARN || strstr(fmt, "skipping unrecognized"))
		return 0;
	fprintf(stderr, "libbpf: ");
	return vfprintf(stderr, fmt, args);
}

/* Load libxdp's redirect program (sized to the interface's queues) and
 * attach it with a bpf_link: the kernel detaches it when the link's last
 * fd closes, at vfgx_port_close() or at process exit, signals included. */
static int ax_attach(struct vfgx_port *port, struct ax_priv *ap)
{
	struct bpf_object *obj;
	struct bpf_map *map;
	struct bpf_prog_info pi = { 0 };
	uint32_t len = sizeof(pi), max_q = 0;
	char err[128];
	int ret;

	libbpf_print_fn_t prev = libbpf_set_print(ax_libbpf_print);

	ap->prog = xdp_program__find_file(AX_PROG_FILE, NULL, NULL);
	libbpf_set_print(prev);
	ret = (int)libxdp_get_error(ap->prog);
	if (ret) {
		ap->prog = NULL;
		libxdp_strerror(ret, err, sizeof(err));
		return vfgx_set_error(port->ctx, ret,
				      "%s: cannot open libxdp's %s: %s (install libxdp1, or set LIBXDP_OBJECT_PATH)",
				      port->name, AX_PROG_FILE, err);
	}
	obj = xdp_program__bpf_obj(ap->prog);
	map = bpf_object__find_map_by_name(obj, "xsks_map");
	for (uint16_t q = 0; q < ap->nq; q++)
		if (ap->q[q].nic_queue + 1 > max_q)
			max_q = ap->q[q].nic_queue + 1;
	prev = libbpf_set_print(ax_libbpf_print);
	if (map && !(ret = bpf_map__set_max_entries(map, max_q)))
		ret = bpf_object__load(obj);
	libbpf_set_print(prev);
	if (!map || ret)
		return vfgx_set_error(port->ctx, ret ? ret : -ENOENT,
				      "%s: loading %s failed: %s (needs root or CAP_BPF+CAP_NET_ADMIN)",
				      port->name, AX_PROG_FILE,
				      strerror(ret ? -ret : ENOENT));
	ap->map_fd = bpf_map__fd(map);
	ret = -EOPNOTSUPP;
	if (ap->mode != AX_MODE_GENERIC) {
		ret = ax_attach_mode(ap, XDP_FLAGS_DRV_MODE);
		if (!ret)
			ap->info.native = true;
		else if (ap->mode == AX_MODE_NATIVE)
			return vfgx_set_error(port->ctx, ret,
					      "%s: native XDP on %s (driver %s) failed: %s (set afxdp.mode: auto or generic)",
					      port->name, ap->info.ifname,
					      ap->info.driver, strerror(-ret));
		else
			vfgx_info(port->ctx, "%s: native XDP on %s (driver %s) failed: %s; using generic (SKB) mode (set afxdp.mode: generic to silence)",
				  port->name, ap->info.ifname, ap->info.driver,
				  strerror(-ret));
	}
	if (ret)
		ret = ax_attach_mode(ap, XDP_FLAGS_SKB_MODE);
	if (ret == -EBUSY || ret == -EEXIST)
		return ax_check_no_prog(port, ap) ? -EBUSY :
			vfgx_set_error(port->ctx, ret,
				       "%s: %s: another XDP program took the interface while vfgx attached (retry when it is gone)",
				       port->name, ap->info.ifname);
	if (ret)
		return vfgx_set_error(port->ctx, ret,
				      "%s: attaching XDP to %s failed: %s (needs root and kernel >= 5.9 for XDP bpf_link)",
				      port->name, ap->info.ifname, strerror(-ret));
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(bpf_object__find_program_by_name(obj, AX_PROG_NAME)),
				    &pi, &len))
		ap->info.prog_id = pi.id;
	for (uint16_t q = 0; q < ap->nq; q++) {
		ret = xsk_socket__update_xskmap(ap->q[q].xsk, ap->map_fd);
		if (ret)
			return vfgx_set_error(port->ctx, ret,
					      "%s: adding queue %u's socket to the XDP map failed: %s",
					      port->name, ap->q[q].nic_queue,
					      strerror(-ret));
	}
	return 0;
}

static bool ax_tx_pending(const struct ax_queue *xq)
{
	return __atomic_load_n(xq->tx.consumer, __ATOMIC_ACQUIRE) !=
	       *xq->tx.producer;
}

/* Copy mode sends at most 32 frames per wakeup (the kernel's per-call
 * budget): kick a few times so a burst leaves in one call, and again on
 * the next call for what is left. */
static void ax_kick_tx(struct ax_queue *xq)
{
	for (int i = 0; i < 4 && ax_tx_pending(xq); i++) {
		if (!xsk_ring_prod__needs_wakeup(&xq->tx))
			return;
		if (sendto(xsk_socket__fd(xq->xsk), NULL, 0, MSG_DONTWAIT,
			   NULL, 0) < 0 && errno != EAGAIN && errno != EBUSY &&
		    errno != ENOBUFS)
			return;
	}
}

static void ax_close(struct vfgx_port *port)
{
	struct ax_priv *ap = port->priv;

	/* The link first: no more redirects into sockets that are going. */
	if (ap->link_fd >= 0)
		close(ap->link_fd);
	ap->link_fd = -1;
	for (uint16_t q = 0; q < port->nb_rx_queues; q++) {
		struct ax_queue *xq = &ap->q[q];
		uint64_t until = vfgx_now_ns() + 200000000ull;

		/* frames tx_burst accepted leave before the socket goes */
		while (xq->xsk && ax_tx_pending(xq) && vfgx_now_ns() < until)
			ax_kick_tx(xq);
		xsk_socket__delete(xq->xsk);
		xsk_umem__delete(xq->umem);
		if (xq->nb_frames)
			vfgx_pool_free_bulk(xq->pool, xq->frames, xq->nb_frames);
		free(xq->frames);
		free(xq->free_addrs);
		free(xq->tx_addrs);
		if (xq->own_pool) {
			vfgx_pool_destroy(port->rx_pools[q]);
			port->rx_pools[q] = NULL;
		}
		memset(xq, 0, sizeof(*xq));
	}
	xdp_program__close(ap->prog);
	ap->prog = NULL;
}

static int ax_open(struct vfgx_port *port, const struct vfgx_port_conf *conf)
{
	struct ax_priv *ap = port->priv;
	int ret;

	ap->link_fd = -1;
	ap->nq = port->nb_rx_queues;
	ap->info.ifname = ap->ifname;
	ap->info.driver = ap->driver;
	if ((ret = ax_parse(port, ap, conf)))
		return ret;
	if (!conf->address || !conf->address[0])
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: address: required for afxdp (the network interface, e.g. vfgx-b0)",
				      port->name);
	if (strlen(conf->address) >= IFNAMSIZ)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: address '%s' is longer than an interface name (%d)",
				      port->name, conf->address, IFNAMSIZ - 1);
	if (ap->nq == 0 || port->nb_tx_queues > ap->nq)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: afxdp needs 1..%d rx queues and at most as many tx queues (tx queue q sends on rx queue q's socket)",
				      port->name, VFGX_MAX_QUEUES);
	snprintf(ap->ifname, sizeof(ap->ifname), "%s", conf->address);
	ap->info.nb_queues = ap->nq;
	vfgx_clear_error(port->ctx);
	if ((ret = ax_check_iface(port, ap)) || (ret = ax_check_no_prog(port, ap)))
		return ret;
	for (uint16_t q = 0; q < ap->nq; q++)
		if ((ret = ax_frames_init(port, ap, q)))
			goto err;
	if ((ret = ax_sockets(port, ap)) || (ret = ax_attach(port, ap)))
		goto err;
	vfgx_info(port->ctx, "%s: AF_XDP on %s (driver %s): %s XDP, %s, %u queue(s), %u-byte frames in %s memory; program %u detached when the port closes or the process exits",
		  port->name, ap->info.ifname, ap->info.driver,
		  ap->info.native ? "native" : "generic (SKB)",
		  ap->info.zero_copy ? "zero-copy" : "copy mode", ap->nq,
		  ap->info.frame_size,
		  vfgx_mem_kind_name(vfgx_region_info(vfgx_pool_region(ap->q[0].pool))->kind),
		  ap->info.prog_id);
	return 0;
err:
	ax_close(port);
	return ret;
}

static void ax_reclaim_tx(struct ax_queue *xq)
{
	uint32_t idx, n = xsk_ring_cons__peek(&xq->comp, AX_COMP_BATCH, &idx);

	for (uint32_t i = 0; i < n; i++)
		xq->tx_addrs[xq->nb_tx++] =
			*xsk_ring_cons__comp_addr(&xq->comp, idx + i);
	if (n)
		xsk_ring_cons__release(&xq->comp, n);
}

static int ax_rx_burst(struct vfgx_port *port, uint16_t q,
		       struct vfgx_pkt *pkts, uint16_t max)
{
	struct ax_priv *ap = port->priv;
	struct ax_queue *xq = &ap->q[q];
	uint64_t mask = ~(uint64_t)(ap->info.frame_size - 1);
	uint32_t idx, n;
	uint64_t now, bytes = 0;

	/* the fill ring's producer index is a cache line the kernel's NAPI
	 * context reads on another CPU: refill in batches while packets
	 * flow, and whatever is left when the ring runs empty */
	if (xq->nb_free >= AX_FILL_BATCH)
		ax_fill(xq, xq->nb_free);
	if (max > port->burst)
		max = port->burst;
	n = xsk_ring_cons__peek(&xq->rx, max, &idx);
	if (!n) {
		if (xq->nb_free)
			ax_fill(xq, xq->nb_free);
		/* zero-copy drivers sleep until woken when the fill ring ran
		 * dry; copy mode never sets the flag */
		if (xsk_ring_prod__needs_wakeup(&xq->fill))
			recvfrom(xsk_socket__fd(xq->xsk), NULL, 0, MSG_DONTWAIT,
				 NULL, NULL);
		return 0;
	}
	now = vfgx_now_ns();
	for (uint32_t i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&xq->rx, idx + i);

		pkts[i].data = xq->base + d->addr;
		pkts[i].len = d->len;
		pkts[i].flow = 0;
		pkts[i].ts_ns = now;
		pkts[i].handle = (void *)(uintptr_t)(d->addr & mask);
		pkts[i].queue = q;
		pkts[i].flags = 0;
		bytes += d->len;
	}
	/* release: descriptors read before the kernel may reuse the slots */
	xsk_ring_cons__release(&xq->rx, n);
	xq->st.rx_packets += n;
	xq->st.rx_bytes += bytes;
	return (int)n;
}

/* Released frames wait on the free stack; rx_burst gives them to the fill
 * ring AX_FILL_BATCH at a time (all of them when the rx ring is empty). */
static void ax_release(struct vfgx_port *port, uint16_t q,
		       struct vfgx_pkt *pkts, uint16_t n)
{
	struct ax_queue *xq = &((struct ax_priv *)port->priv)->q[q];

	/* onto the free stack; rx_burst hands them to the fill ring */
	for (uint32_t i = 0; i < n; i++)
		xq->free_addrs[xq->nb_free++] = (uint64_t)(uintptr_t)pkts[i].handle;
}

static int ax_tx_burst(struct vfgx_port *port, uint16_t q,
		       const struct vfgx_pkt *pkts, uint16_t n)
{
	struct ax_priv *ap = port->priv;
	struct ax_queue *xq = &ap->q[q];
	uint32_t idx, k = 0, room;
	uint16_t done = 0;

	ax_reclaim_tx(xq);
	room = xsk_prod_nb_free(&xq->tx, n);
	if (room > n)
		room = n;
	if (room > xq->nb_tx)
		room = xq->nb_tx;
	if (room && xsk_ring_prod__reserve(&xq->tx, room, &idx) == room) {
		for (; done < room; done++) {
			struct xdp_desc *d;
			uint64_t a;

			if (pkts[done].len > ap->info.frame_size ||
			    !pkts[done].len) {
				xq->st.drops[VFGX_DROP_TRUNCATED]++;
				continue; /* counted and dropped, not retried */
			}
			a = xq->tx_addrs[--xq->nb_tx];
			memcpy(xq->base + a, pkts[done].data, pkts[done].len);
			d = xsk_ring_prod__tx_desc(&xq->tx, idx + k++);
			d->addr = a;
			d->len = pkts[done].len;
			d->options = 0;
			xq->st.tx_bytes += pkts[done].len;
		}
		/* hand back the reserved slots that oversized packets left */
		xq->tx.cached_prod -= room - k;
		xsk_ring_prod__submit(&xq->tx, k);
		xq->st.tx_packets += k;
	}
	ax_kick_tx(xq);
	return done;
}

static int ax_stats(struct vfgx_port *port, uint16_t q,
		    struct vfgx_queue_stats *st)
{
	struct ax_priv *ap = port->priv;
	struct xdp_statistics xs = { 0 };
	socklen_t len = sizeof(xs);

	if (q >= ap->nq)
		return -EINVAL;
	*st = ap->q[q].st;
	if (getsockopt(xsk_socket__fd(ap->q[q].xsk), SOL_XDP, XDP_STATISTICS,
		       &xs, &len))
		return -errno;
	/* kernel drops: no fill-ring frame (rx_dropped), rx ring full,
	 * descriptors the kernel refused */
	st->drops[VFGX_DROP_NOBUFS] += xs.rx_dropped;
	st->drops[VFGX_DROP_RING_FULL] += xs.rx_ring_full;
	st->drops[VFGX_DROP_TRUNCATED] += xs.rx_invalid_descs +
					  xs.tx_invalid_descs;
	return 0;
}

/* AF_XDP frames skip the qdisc layer (the kernel hands them to the driver,
 * or copies them past the qdisc in copy mode), so an ETF qdisc never sees
 * them.  The AF_XDP way is a launch time in the frame's tx metadata
 * (XDP_TXMD_FLAGS_LAUNCH_TIME, Linux 6.15), a hardware offload of a few
 * drivers (igc, stmmac; not veth) on the NIC's clock: tx metadata itself
 * came in 6.8, after the 6.1 kernels this is built and tested on. */
static int ax_txtime_enable(struct vfgx_port *port, struct vfgx_txtime_info *info)
{
	(void)info;
	return vfgx_set_error(port->ctx, -EOPNOTSUPP,
			      "%s: txtime is not available on AF_XDP: its frames bypass the qdisc layer, so the ETF qdisc never sees them, and AF_XDP's own launch time (tx metadata, Linux 6.15+, NIC offload in igc/stmmac only, not veth) is newer than the 6.1 kernels here; use a socket port (UDP) for txtime",
			      port->name);
}

int vfgx_afxdp_info(vfgx_port *port, struct vfgx_afxdp_info *info)
{
	if (port->ops != &vfgx_afxdp_ops)
		return -EINVAL;
	*info = ((struct ax_priv *)port->priv)->info;
	return 0;
}

const struct vfgx_port_ops vfgx_afxdp_ops = {
	.name = "afxdp",
	.priv_size = sizeof(struct ax_priv),
	.opts_size = sizeof(struct vfgx_afxdp_opts),
	.parse = vfgx_afxdp_opts_parse,
	.rx_frame_max = vfgx_afxdp_frame_max,
	.open = ax_open,
	.rx_burst = ax_rx_burst,
	.release = ax_release,
	.tx_burst = ax_tx_burst,
	.stats = ax_stats,
	.close = ax_close,
	.txtime_enable = ax_txtime_enable,
};
