/* rdma.c - the RDMA port backend: one RC connection (or UD peer) made by
 * rdma_cm, receives pre-posted from the queue's pool (registered through
 * the GPUDirect chain) and sends copied from a registered tx pool. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vfgx/rdma.h>

#include "backend.h"
#include "core/numparse.h"
#include "core/opts.h"
#include "rdma_ring.h"

#define RDMA_DEFAULT_BUF 4096
#define RDMA_DEFAULT_NBUFS 512
#define RDMA_TX_NBUFS 256

struct rdma_priv {
	vfgx_rdma_dev *dev;
	vfgx_rdma_listener *listener;
	vfgx_rdma_qp *qp;
	vfgx_rdma_mr *rx_mr, *tx_mr;
	vfgx_pool *tx_pool;
	bool own_rx_pool;
	uintptr_t rx_base; /* pool address of the rx region's first byte */
	uint32_t rx_buf, tx_buf;
	uint32_t rx_off; /* UD: GRH bytes before the payload */
	bool rx_gpu;
	struct vfgx_queue_stats st;
	/* options */
	char device[64], peer[VFGX_ADDR_MAX];
	uint32_t port_num, recv_depth, timeout_ms, connect_timeout_ms;
	int gid_index, role, qp_type;
	bool fallback_host;
	uint32_t mode, ring_bytes;
	struct rdma_ring *ring; /* ring mode */
};

static const char *const rd_qtypes[] = { "rc", "ud", NULL };
static const char *const rd_roles[] = { "client", "server", NULL };
static const char *const rd_fallbacks[] = { "host", "fail", NULL };
static const char *const rd_modes[] = { "send", "ring", NULL };
#define RD_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_rdma_opts, F, __VA_ARGS__)
static const struct vfgx_opt rd_opts[] = {
	{ "rdma", VFGX_OPT_BACKEND, offsetof(struct vfgx_rdma_opts, hdr.backend) },
	RD_OPT(STR, device, 0),
	RD_OPT(U32, port, 1, 1, 255),
	RD_OPT(U32, gid_index, 1000, 0, 1000),
	RD_OPT(ENUM, role, 0, 0, 0, rd_roles),
	RD_OPT(STR, peer, 0),
	RD_OPT(U32, recv_depth, 256, 1, 4096),
	RD_OPT(U32, timeout_ms, 5000, 1, 3600000),
	RD_OPT(ENUM, memory_fallback, 0, 0, 0, rd_fallbacks),
	RD_OPT(ENUM, qp_type, 0, 0, 0, rd_qtypes),
	RD_OPT(ENUM, mode, 0, 0, 0, rd_modes),
	RD_OPT(U32, ring_bytes, 4u << 20, 4096, 1u << 30),
	RD_OPT(U32, connect_timeout_ms, 10000, 0, 3600000),
};
#define RD_NOPTS (sizeof(rd_opts) / sizeof(rd_opts[0]))

void vfgx_rdma_opts_default(struct vfgx_rdma_opts *o)
{
	vfgx_opts_default(rd_opts, RD_NOPTS, o, sizeof(*o));
}

/* What ring mode cannot take, or NULL (the caller says where). */
static const char *rd_ring_refusal(const struct vfgx_rdma_opts *o, char *buf,
				   size_t len)
{
	if (o->mode != VFGX_RDMA_MODE_RING)
		return NULL;
	if (o->ring_bytes & (o->ring_bytes - 1)) {
		snprintf(buf, len, "ring_bytes: %u is not a power of two", o->ring_bytes);
		return buf;
	}
	if (o->qp_type == VFGX_RDMA_UD)
		return "mode: ring WRITEs into the peer's memory, which needs qp_type: rc";
	return NULL;
}

static int vfgx_rdma_opts_from_yaml(const struct vfgx_cfg_node *map,
			     struct vfgx_rdma_opts *o)
{
	int ret = vfgx_opts_from_yaml(map, rd_opts, RD_NOPTS, o, sizeof(*o));
	char buf[96];
	const char *why = ret ? NULL : rd_ring_refusal(o, buf, sizeof(buf));

	return why ? vfgx_cfg_error(map, "%s", why) : ret;
}

static int rdma_opts_parse(const struct vfgx_cfg_node *map, const struct vfgx_iface_config *ifc,
			   struct vfgx_backend_opts *out)
{
	(void)ifc;
	return vfgx_rdma_opts_from_yaml(map, (struct vfgx_rdma_opts *)out);
}

/* A message in one receive buffer: the pool's, or the port's own
 * RDMA_DEFAULT_BUF bytes. */
static uint32_t rdma_frame_max(const struct vfgx_backend_opts *o, const char *address,
			       uint32_t buf_size, const char **key)
{
	(void)o;
	(void)address;
	*key = NULL;
	return buf_size ? buf_size : RDMA_DEFAULT_BUF;
}

static int rdma_parse(struct vfgx_port *port, struct rdma_priv *rp,
		      const struct vfgx_port_conf *conf)
{
	struct vfgx_rdma_opts t;
	const char *dev, *peer, *why;
	char err[VFGX_NUM_ERR_MAX], buf[96];
	uint32_t gid;
	uint64_t pn;
	int fb, ret;

	ret = vfgx_opts_get(port->ctx, port->name, "rdma", rd_opts, RD_NOPTS,
			    conf->backend_opts, &t, sizeof(t));
	if (ret)
		return ret;
	dev = t.device ? t.device : conf->address ? conf->address : "";
	peer = t.peer ? t.peer : "";
	if (strlen(dev) >= sizeof(rp->device) || strlen(peer) >= sizeof(rp->peer))
		return vfgx_set_error(port->ctx, -EINVAL, "%s: rdma device or peer is too long (at most %zu and %zu characters)",
				      port->name, sizeof(rp->device) - 1, sizeof(rp->peer) - 1);
	snprintf(rp->device, sizeof(rp->device), "%s", dev);
	snprintf(rp->peer, sizeof(rp->peer), "%s", peer);
	rp->port_num = t.port;
	gid = t.gid_index;
	rp->role = (int)t.role;
	rp->recv_depth = t.recv_depth;
	rp->timeout_ms = t.timeout_ms;
	rp->connect_timeout_ms = t.connect_timeout_ms;
	fb = (int)t.memory_fallback;
	rp->qp_type = (int)t.qp_type;
	rp->gid_index = gid == 1000 ? -1 : (int)gid;
	rp->fallback_host = fb == 0;
	rp->mode = t.mode;
	rp->ring_bytes = t.ring_bytes;
	if ((why = rd_ring_refusal(&t, buf, sizeof(buf))))
		return vfgx_set_error(port->ctx, -EINVAL, "%s: rdma options: %s", port->name, why);
	if (!*rp->peer)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: rdma needs peer: \"host:port\" (the server's address for a client, the listen address for a server)",
				      port->name);
	if (!strrchr(rp->peer, ':'))
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: rdma peer '%s' has no port (write host:port, e.g. 10.0.0.1:7471)",
				      port->name, rp->peer);
	if (vfgx_num_u64(strrchr(rp->peer, ':') + 1, 1, 65535, 0, &pn, err,
			 sizeof(err)))
		return vfgx_set_error(port->ctx, -EINVAL, "%s: rdma peer '%s': port %s",
				      port->name, rp->peer, err);
	if (port->nb_rx_queues != 1 || port->nb_tx_queues > 1)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: rdma has one connection: use 1 rx queue and at most 1 tx queue",
				      port->name);
	return 0;
}

static void rdma_close(struct vfgx_port *port)
{
	struct rdma_priv *rp = port->priv;

	vfgx_rdma_ring_close(rp->ring);
	vfgx_rdma_qp_destroy(rp->qp);
	vfgx_rdma_listener_close(rp->listener);
	vfgx_rdma_dereg(rp->rx_mr);
	vfgx_rdma_dereg(rp->tx_mr);
	vfgx_pool_destroy(rp->tx_pool);
	if (rp->own_rx_pool) {
		vfgx_pool_destroy(port->rx_pools[0]);
		port->rx_pools[0] = NULL;
	}
	vfgx_rdma_dev_close(rp->dev);
	memset(rp, 0, sizeof(*rp));
}

/* Where the NIC writes pool buffer buf (differs from buf after a host
 * fallback of a GPU region). */
static uint8_t *rx_nic_addr(const struct rdma_priv *rp, const void *buf)
{
	return (uint8_t *)(uintptr_t)(vfgx_rdma_mr_info(rp->rx_mr)->addr +
				      ((uintptr_t)buf - rp->rx_base));
}

static int rdma_post_rx(struct rdma_priv *rp, void *buf)
{
	return vfgx_rdma_post_recv(rp->qp, rp->rx_mr, rx_nic_addr(rp, buf),
				   rp->rx_buf, (uintptr_t)buf);
}

static int rdma_mem(struct vfgx_port *port, struct rdma_priv *rp)
{
	const struct vfgx_region_info *ri;
	vfgx_pool *pool;
	int ret;

	if (!port->rx_pools[0]) {
		ret = vfgx_pool_create(port->ctx, NULL, RDMA_DEFAULT_BUF,
				       RDMA_DEFAULT_NBUFS, &port->rx_pools[0]);
		if (ret)
			return ret;
		rp->own_rx_pool = true;
	}
	pool = port->rx_pools[0];
	ri = vfgx_region_info(vfgx_pool_region(pool));
	rp->rx_base = (uintptr_t)(ri->kind == VFGX_MEM_GPU ? ri->dev_addr :
							     ri->addr);
	rp->rx_buf = vfgx_pool_buf_size(pool);
	ret = vfgx_rdma_reg_region(rp->dev, vfgx_pool_region(pool), 0,
				   rp->fallback_host, &rp->rx_mr);
	if (ret)
		return ret;
	rp->rx_gpu = vfgx_rdma_mr_info(rp->rx_mr)->path != VFGX_RDMA_REG_HOST &&
		     ri->kind == VFGX_MEM_GPU;
	vfgx_info(port->ctx, "%s: rx buffers registered on %s by %s", port->name,
		  vfgx_rdma_dev_name(rp->dev),
		  vfgx_rdma_reg_path_name(vfgx_rdma_mr_info(rp->rx_mr)->path));
	rp->tx_buf = rp->rx_buf;
	ret = vfgx_pool_create(port->ctx, NULL, rp->tx_buf, RDMA_TX_NBUFS,
			       &rp->tx_pool);
	if (ret)
		return ret;
	return vfgx_rdma_reg_region(rp->dev, vfgx_pool_region(rp->tx_pool), 0,
				    true, &rp->tx_mr);
}

/* The client's connect: refused (nothing listens at the peer yet, as when
 * the receiver starts after the sender) is tried again, the whole address,
 * route and connect sequence, 100 ms apart at first and up to 1 s, until
 * connect_timeout_ms after the first try; then the last refusal, once. */
static int rdma_connect_client(struct vfgx_port *port, struct rdma_priv *rp, const char *host,
			       uint16_t pn, const struct vfgx_rdma_qp_conf *qc)
{
	uint64_t end = vfgx_now_ns() + (uint64_t)rp->connect_timeout_ms * 1000000ull;
	uint64_t pause = 100000000ull, now;
	unsigned tries = 1;
	int ret;

	while ((ret = vfgx_rdma_connect(rp->dev, host, pn, qc, NULL, NULL, (int)rp->timeout_ms,
					&rp->qp)) == -ECONNREFUSED) {
		now = vfgx_now_ns();
		if (now >= end)
			break;
		if (tries == 1)
			vfgx_info(port->ctx, "%s: %s; trying again for up to %u ms (rdma.connect_timeout_ms)",
				  port->name, vfgx_last_error(port->ctx), rp->connect_timeout_ms);
		uint64_t ns = end - now < pause ? end - now : pause;
		struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

		nanosleep(&ts, NULL);
		pause = pause * 2 < 1000000000ull ? pause * 2 : 1000000000ull;
		tries++;
	}
	if (ret == -ECONNREFUSED && rp->connect_timeout_ms) {
		char why[256];

		snprintf(why, sizeof(why), "%s", vfgx_last_error(port->ctx));
		return vfgx_set_error(port->ctx, ret, "%s: %s; %u tries in %u ms (rdma.connect_timeout_ms)",
				      port->name, why, tries, rp->connect_timeout_ms);
	}
	return ret;
}

static int rdma_connect_peer(struct vfgx_port *port, struct rdma_priv *rp)
{
	struct vfgx_rdma_qp_conf qc = { .argsz = sizeof(qc), .max_send_wr = RDMA_TX_NBUFS,
					.max_recv_wr = rp->recv_depth,
					.type = rp->qp_type ? VFGX_RDMA_UD :
							      VFGX_RDMA_RC };
	char host[VFGX_ADDR_MAX];
	char *colon;
	unsigned long pn;

	snprintf(host, sizeof(host), "%s", rp->peer);
	colon = strrchr(host, ':');
	*colon = 0;
	pn = strtoul(colon + 1, NULL, 10);
	if (pn == 0 || pn > 65535)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: rdma peer '%s': port must be 1..65535",
				      port->name, rp->peer);
	if (rp->role == 0)
		return rdma_connect_client(port, rp, host, (uint16_t)pn, &qc);
	int ret = vfgx_rdma_listen_type(port->ctx, host, (uint16_t)pn, qc.type,
					&rp->listener);

	if (ret)
		return ret;
	return vfgx_rdma_accept(rp->listener, rp->dev, &qc, NULL, NULL,
				(int)rp->timeout_ms, &rp->qp);
}

static int rdma_open(struct vfgx_port *port, const struct vfgx_port_conf *conf)
{
	struct rdma_priv *rp = port->priv;
	vfgx_pool *pool;
	int ret;

	ret = rdma_parse(port, rp, conf);
	if (ret)
		return ret;
	ret = vfgx_rdma_dev_open(port->ctx, rp->device, (uint8_t)rp->port_num,
				 rp->gid_index, &rp->dev);
	if (ret)
		return ret;
	ret = rdma_mem(port, rp);
	if (ret)
		goto err;
	ret = rdma_connect_peer(port, rp);
	if (ret)
		goto err;
	if (rp->qp_type) {
		uint32_t mtu = vfgx_rdma_qp_max_msg(rp->qp);

		rp->rx_off = VFGX_RDMA_GRH_BYTES;
		if (rp->rx_buf < mtu + VFGX_RDMA_GRH_BYTES) {
			ret = vfgx_set_error(port->ctx, -EINVAL,
					     "%s: UD receive buffers of %u bytes cannot hold a %u-byte datagram plus the %u-byte GRH (use a pool with buffers of at least %u bytes)",
					     port->name, rp->rx_buf, mtu,
					     VFGX_RDMA_GRH_BYTES,
					     mtu + VFGX_RDMA_GRH_BYTES);
			goto err;
		}
		vfgx_info(port->ctx, "%s: UD datagrams up to %u bytes (path MTU)",
			  port->name, mtu);
	}
	pool = port->rx_pools[0];
	if (rp->mode == VFGX_RDMA_MODE_RING) {
		if (vfgx_region_info(vfgx_pool_region(pool))->kind == VFGX_MEM_GPU) {
			ret = vfgx_set_error(port->ctx, -EINVAL,
					     "%s: rdma mode: ring copies each record out of the ring on the CPU: give rx queue 0 a host or pinned region (mode: send receives into GPU memory)",
					     port->name);
			goto err;
		}
		ret = vfgx_rdma_ring_open(port, rp->dev, rp->qp, rp->ring_bytes,
					  rp->role == VFGX_RDMA_SERVER,
					  (int)rp->timeout_ms, &rp->ring);
		if (ret)
			goto err;
		return 0;
	}
	for (uint32_t i = 0; i < rp->recv_depth; i++) {
		void *b;

		if (vfgx_pool_alloc_bulk(pool, &b, 1) < 0) {
			ret = vfgx_set_error(port->ctx, -ENOBUFS,
					     "%s: rx pool has fewer than recv_depth %u buffers",
					     port->name, rp->recv_depth);
			goto err;
		}
		ret = rdma_post_rx(rp, b);
		if (ret)
			goto err;
	}
	return 0;
err:
	rdma_close(port);
	return ret;
}

static int rdma_rx_burst(struct vfgx_port *port, uint16_t q,
			 struct vfgx_pkt *pkts, uint16_t max)
{
	struct rdma_priv *rp = port->priv;
	struct vfgx_rdma_wc wc[64];
	int n, out = 0;

	(void)q;
	if (rp->ring)
		return vfgx_rdma_ring_rx(port, rp->ring, port->rx_pools[0], pkts, max,
					 &rp->st);
	n = vfgx_rdma_poll(rp->qp, true, wc, max < 64 ? max : 64);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		void *buf = (void *)(uintptr_t)wc[i].wr_id;
		struct vfgx_pkt *p = &pkts[out];

		if (wc[i].status) {
			vfgx_pool_free_bulk(port->rx_pools[0], &buf, 1);
			return vfgx_set_error(port->ctx, wc[i].status,
					      "%s: receive failed: %s (peer gone?)",
					      port->name,
					      vfgx_strerror(wc[i].status));
		}
		p->data = rx_nic_addr(rp, buf) + rp->rx_off;
		p->len = wc[i].byte_len;
		p->flow = wc[i].has_imm ? wc[i].imm : 0;
		p->ts_ns = vfgx_now_ns();
		p->handle = buf;
		p->queue = 0;
		p->flags = VFGX_PKT_PAYLOAD | (rp->rx_gpu ? VFGX_PKT_GPU : 0);
		rp->st.rx_packets++;
		rp->st.rx_bytes += p->len;
		out++;
	}
	return out;
}

static void rdma_release(struct vfgx_port *port, uint16_t q,
			 struct vfgx_pkt *pkts, uint16_t n)
{
	struct rdma_priv *rp = port->priv;

	(void)q;
	for (uint16_t i = 0; i < n; i++)
		if (rp->ring || rdma_post_rx(rp, pkts[i].handle))
			vfgx_pool_free_bulk(port->rx_pools[0], &pkts[i].handle, 1);
}

static void rdma_reap_tx(struct rdma_priv *rp)
{
	struct vfgx_rdma_wc wc[64];
	int n;

	while ((n = vfgx_rdma_poll(rp->qp, false, wc, 64)) > 0)
		for (int i = 0; i < n; i++) {
			void *b = (void *)(uintptr_t)wc[i].wr_id;

			vfgx_pool_free_bulk(rp->tx_pool, &b, 1);
		}
}

static int rdma_tx_burst(struct vfgx_port *port, uint16_t q,
			 const struct vfgx_pkt *pkts, uint16_t n)
{
	struct rdma_priv *rp = port->priv;
	uint16_t done = 0;

	(void)q;
	if (rp->ring)
		return vfgx_rdma_ring_tx(port, rp->ring, pkts, n, &rp->st);
	rdma_reap_tx(rp);
	for (; done < n; done++) {
		void *b;

		if (rp->qp_type && pkts[done].len > vfgx_rdma_qp_max_msg(rp->qp)) {
			/* refused, not consumed: the caller sees why */
			if (done)
				break;
			rp->st.drops[VFGX_DROP_TOO_BIG]++;
			return vfgx_set_error(port->ctx, -EMSGSIZE,
					      "%s: UD datagram of %u bytes exceeds the path MTU of %u bytes (send at most %u, or set rdma.qp_type: rc)",
					      port->name, pkts[done].len,
					      vfgx_rdma_qp_max_msg(rp->qp),
					      vfgx_rdma_qp_max_msg(rp->qp));
		}
		if (pkts[done].len > rp->tx_buf) {
			rp->st.drops[VFGX_DROP_TOO_BIG]++;
			continue;
		}
		if (vfgx_pool_alloc_bulk(rp->tx_pool, &b, 1) < 0)
			break; /* all tx buffers in flight: caller retries */
		memcpy(b, pkts[done].data, pkts[done].len);
		if (vfgx_rdma_post_send(rp->qp, rp->tx_mr, b, pkts[done].len,
					(uintptr_t)b, 0)) {
			vfgx_pool_free_bulk(rp->tx_pool, &b, 1);
			break;
		}
		rp->st.tx_packets++;
		rp->st.tx_bytes += pkts[done].len;
	}
	return done;
}

static int rdma_stats(struct vfgx_port *port, uint16_t q,
		      struct vfgx_queue_stats *st)
{
	struct rdma_priv *rp = port->priv;
	struct vfgx_pool_stats ps;

	(void)q;
	*st = rp->st;
	vfgx_pool_stats(port->rx_pools[0], &ps);
	st->drops[VFGX_DROP_NOBUFS] = ps.alloc_fail;
	return 0;
}

const struct vfgx_port_ops vfgx_rdma_ops = {
	.name = "rdma",
	.priv_size = sizeof(struct rdma_priv),
	.opts_size = sizeof(struct vfgx_rdma_opts),
	.parse = rdma_opts_parse,
	.rx_frame_max = rdma_frame_max,
	.open = rdma_open,
	.rx_burst = rdma_rx_burst,
	.release = rdma_release,
	.tx_burst = rdma_tx_burst,
	.stats = rdma_stats,
	.close = rdma_close,
};
