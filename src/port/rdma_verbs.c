/* rdma_verbs.c - the vfgx_rdma_* library over rdma-core: devices, the
 * GPUDirect registration chain, RC queue pairs connected by rdma_cm or raw
 * endpoint exchange, one-sided operations and completion waiting. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <vfgx/rdma.h>

#include "vfgx_build.h"

#define RDMA_MAX_RD_ATOMIC 16

struct vfgx_rdma_dev {
	vfgx_ctx *ctx;
	struct ibv_context **cm_list; /* rdma_get_devices(); NULL if own */
	struct ibv_context *verbs;
	bool own_verbs; /* opened with ibv_open_device (no rdma_cm) */
	struct ibv_pd *pd;
	struct ibv_port_attr pattr;
	struct ibv_device_attr dattr;
	union ibv_gid gid;
	uint8_t port;
	int gid_index;
	unsigned reg_fail;
	char name[IBV_SYSFS_NAME_MAX];
};

struct vfgx_rdma_mr {
	vfgx_rdma_dev *dev;
	struct ibv_mr *mr;
	void *cpu;       /* CPU view, NULL for GPU memory */
	void *own_host;  /* host fallback buffer owned by the MR */
	int dmabuf_fd;
	struct vfgx_rdma_mr_info info;
};

struct vfgx_rdma_qp {
	vfgx_rdma_dev *dev;
	struct rdma_event_channel *ec; /* rdma_cm only */
	struct rdma_cm_id *id;         /* rdma_cm only */
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct vfgx_rdma_qp_conf conf;
	uint32_t psn;
	uint32_t outstanding; /* send WQEs not yet retired */
	uint32_t unsig;       /* unsignaled WQEs since the last signaled one */
	uint32_t *fifo;       /* WQEs each signaled WR retires */
	uint32_t fifo_head, fifo_tail;
	bool dead;
	/* UD: where every datagram goes */
	struct ibv_ah *ah;
	uint32_t remote_qpn, remote_qkey;
	uint32_t max_msg; /* path MTU in bytes */
};

struct vfgx_rdma_listener {
	vfgx_ctx *ctx;
	enum vfgx_rdma_qp_type type;
	struct rdma_event_channel *ec;
	struct rdma_cm_id *id;
};

/* ---------------------------------------------------------------- device */

static int read_sysfs(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

/* True when dev's port is bound to network interface netdev. */
static bool dev_has_netdev(const char *dev, uint8_t port, const char *netdev)
{
	char path[256], val[64];

	for (int i = 0; i < 16; i++) {
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/%d",
			 dev, port, i);
		if (read_sysfs(path, val, sizeof(val)) == 0 &&
		    strcmp(val, netdev) == 0)
			return true;
	}
	return false;
}

/* First RoCE v2 IPv4-mapped GID, else 0. */
static int pick_gid(struct ibv_context *verbs, uint8_t port, int tbl_len)
{
	for (int i = 0; i < tbl_len; i++) {
		struct ibv_gid_entry e;
		const uint8_t *r;

		if (ibv_query_gid_ex(verbs, port, i, &e, 0))
			continue;
		r = e.gid.raw;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && r[10] == 0xff &&
		    r[11] == 0xff && !r[0] && !r[8])
			return i;
	}
	return 0;
}

static int dev_setup(vfgx_rdma_dev *dev, int gid_index)
{
	if (ibv_query_port(dev->verbs, dev->port, &dev->pattr))
		return vfgx_set_error(dev->ctx, -errno,
				      "%s: port %u: %s (use a port the device has, usually 1)",
				      dev->name, dev->port, strerror(errno));
	if (ibv_query_device(dev->verbs, &dev->dattr))
		return vfgx_set_error(dev->ctx, -errno, "%s: query device: %s",
				      dev->name, strerror(errno));
	if (dev->pattr.state != IBV_PORT_ACTIVE)
		vfgx_warn(dev->ctx, "%s: port %u is %s, not active (is the netdev up?)",
			  dev->name, dev->port,
			  ibv_port_state_str(dev->pattr.state));
	if (gid_index < 0)
		gid_index = pick_gid(dev->verbs, dev->port,
				     dev->pattr.gid_tbl_len);
	if (gid_index >= dev->pattr.gid_tbl_len)
		return vfgx_set_error(dev->ctx, -EINVAL,
				      "%s: gid index %d out of range (table has %d entries; see `ibv_devinfo -v`)",
				      dev->name, gid_index,
				      dev->pattr.gid_tbl_len);
	if (ibv_query_gid(dev->verbs, dev->port, gid_index, &dev->gid))
		return vfgx_set_error(dev->ctx, -errno, "%s: gid %d: %s",
				      dev->name, gid_index, strerror(errno));
	dev->gid_index = gid_index;
	dev->pd = ibv_alloc_pd(dev->verbs);
	if (!dev->pd)
		return vfgx_set_error(dev->ctx, -ENOMEM,
				      "%s: cannot allocate a protection domain",
				      dev->name);
	return 0;
}

int vfgx_rdma_dev_open(vfgx_ctx *ctx, const char *name, uint8_t port,
		       int gid_index, vfgx_rdma_dev **out)
{
	struct ibv_device **ibl = NULL;
	char seen[256] = "";
	vfgx_rdma_dev *dev;
	int n = 0, ret;

	*out = NULL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->ctx = ctx;
	dev->port = port ? port : 1;
	/* Prefer librdmacm's contexts so rdma_cm ids share our PD. */
	dev->cm_list = rdma_get_devices(&n);
	for (int i = 0; dev->cm_list && i < n; i++) {
		const char *dn = ibv_get_device_name(dev->cm_list[i]->device);

		snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen),
			 "%s%s", *seen ? ", " : "", dn);
		if (!name || !*name || !strcmp(dn, name) ||
		    dev_has_netdev(dn, dev->port, name)) {
			dev->verbs = dev->cm_list[i];
			break;
		}
	}
	if (!dev->verbs) {
		if (dev->cm_list)
			rdma_free_devices(dev->cm_list);
		dev->cm_list = NULL;
		*seen = 0;
		ibl = ibv_get_device_list(&n);
		for (int i = 0; ibl && i < n; i++) {
			const char *dn = ibv_get_device_name(ibl[i]);

			snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen),
				 "%s%s", *seen ? ", " : "", dn);
			if (!name || !*name || !strcmp(dn, name) ||
			    dev_has_netdev(dn, dev->port, name)) {
				dev->verbs = ibv_open_device(ibl[i]);
				dev->own_verbs = dev->verbs != NULL;
				break;
			}
		}
		if (ibl)
			ibv_free_device_list(ibl);
	}
	if (!dev->verbs) {
		free(dev);
		if (!*seen)
			return vfgx_set_error(ctx, -ENODEV,
					      "rdma: no RDMA device found (load a driver, or add soft-RoCE: rdma link add rxe0 type rxe netdev eth0)");
		return vfgx_set_error(ctx, -ENODEV,
				      "rdma: no device or netdev named '%s' (devices: %s)",
				      name, seen);
	}
	snprintf(dev->name, sizeof(dev->name), "%s",
		 ibv_get_device_name(dev->verbs->device));
	ret = dev_setup(dev, gid_index);
	if (ret) {
		vfgx_rdma_dev_close(dev);
		return ret;
	}
	*out = dev;
	return 0;
}

void vfgx_rdma_dev_close(vfgx_rdma_dev *dev)
{
	if (!dev)
		return;
	if (dev->pd)
		ibv_dealloc_pd(dev->pd);
	if (dev->own_verbs)
		ibv_close_device(dev->verbs);
	if (dev->cm_list)
		rdma_free_devices(dev->cm_list);
	free(dev);
}

const char *vfgx_rdma_dev_name(const vfgx_rdma_dev *dev) { return dev->name; }
uint8_t vfgx_rdma_dev_port(const vfgx_rdma_dev *dev) { return dev->port; }
int vfgx_rdma_dev_gid_index(const vfgx_rdma_dev *dev) { return dev->gid_index; }
struct ibv_context *vfgx_rdma_dev_verbs(const vfgx_rdma_dev *dev) { return dev->verbs; }
struct ibv_pd *vfgx_rdma_dev_pd(const vfgx_rdma_dev *dev) { return dev->pd; }
vfgx_ctx *vfgx_rdma_dev_ctx(const vfgx_rdma_dev *dev) { return dev->ctx; }

void vfgx_rdma_dev_set_reg_fail(vfgx_rdma_dev *dev, unsigned mask)
{
	dev->reg_fail = mask;
}

/* ---------------------------------------------------------- registration */

static const char *const path_names[] = { "dma-buf", "peermem", "host" };

const char *vfgx_rdma_reg_path_name(enum vfgx_rdma_reg_path p)
{
	return (unsigned)p < 3 ? path_names[p] : "?";
}

static int ibv_access(unsigned access)
{
	int a = IBV_ACCESS_LOCAL_WRITE;

	if (access & VFGX_RDMA_ACCESS_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE;
	if (access & VFGX_RDMA_ACCESS_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	if (access & VFGX_RDMA_ACCESS_REMOTE_ATOMIC)
		a |= IBV_ACCESS_REMOTE_ATOMIC;
	return a;
}

/* cuMemGetHandleForAddressRange from the driver library, looked up at run
 * time so the library does not link libcuda. */
typedef int (*cu_get_handle_fn)(void *handle, uint64_t dptr, size_t size,
				int type, unsigned long long flags);
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1

static int reg_dmabuf(vfgx_rdma_mr *m, uint64_t daddr, size_t len, int access)
{
	static const char *const libs[] = { "libcuda.so.1", "libcuda.so" };
	cu_get_handle_fn get = NULL;
	void *lib = NULL;
	int fd = -1, cr;

	for (size_t i = 0; i < 2 && !lib; i++)
		lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
	if (lib)
		get = (cu_get_handle_fn)dlsym(lib, "cuMemGetHandleForAddressRange");
	if (!get) {
		if (lib)
			dlclose(lib);
		return -ENODEV; /* no CUDA driver, or one before 11.7 */
	}
	cr = get(&fd, daddr, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	dlclose(lib);
	if (cr != 0 || fd < 0)
		return -EOPNOTSUPP; /* driver refused the export (CUresult cr) */
	m->mr = ibv_reg_dmabuf_mr(m->dev->pd, 0, len, daddr, fd, access);
	if (!m->mr) {
		int err = -errno;

		close(fd);
		return err ? err : -EIO;
	}
	m->dmabuf_fd = fd;
	return 0;
}

static int reg_fail(vfgx_rdma_mr *m, enum vfgx_rdma_reg_path p, int err,
		    uint64_t addr, size_t len)
{
	m->info.step_err[p] = err;
	vfgx_warn(m->dev->ctx, "%s: %s registration of %zu bytes at 0x%llx failed: %s (errno %d)%s",
		  m->dev->name, path_names[p], len, (unsigned long long)addr,
		  strerror(-err), -err,
		  p == VFGX_RDMA_REG_DMABUF ? "; trying nvidia-peermem" :
					      "; trying pinned host memory");
	return err;
}

static int reg_host(vfgx_rdma_mr *m, void *addr, size_t len, int access)
{
	m->mr = ibv_reg_mr(m->dev->pd, addr, len, access);
	if (!m->mr)
		return -errno ? -errno : -EIO;
	m->cpu = addr;
	m->info.path = VFGX_RDMA_REG_HOST;
	return 0;
}

static void mr_fill(vfgx_rdma_mr *m)
{
	m->info.addr = (uint64_t)(uintptr_t)m->mr->addr;
	m->info.len = m->mr->length;
	m->info.lkey = m->mr->lkey;
	m->info.rkey = m->mr->rkey;
}

int vfgx_rdma_reg_region(vfgx_rdma_dev *dev, vfgx_region *region,
			 unsigned access, bool host_fallback,
			 vfgx_rdma_mr **out)
{
	const struct vfgx_region_info *ri = vfgx_region_info(region);
	int acc = ibv_access(access), ret;
	bool gpu = ri->kind == VFGX_MEM_GPU || dev->reg_fail;
	uint64_t daddr;
	vfgx_rdma_mr *m;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->dev = dev;
	m->dmabuf_fd = -1;
	if (!gpu) {
		ret = reg_host(m, ri->addr, ri->size, acc);
		if (ret) {
			free(m);
			return vfgx_set_error(dev->ctx, ret,
					      "%s: cannot register %zu bytes of %s memory: %s (check `ulimit -l`)",
					      dev->name, ri->size,
					      vfgx_mem_kind_name(ri->kind),
					      strerror(-ret));
		}
		goto done;
	}
	daddr = (uint64_t)(uintptr_t)(ri->kind == VFGX_MEM_GPU ? ri->dev_addr :
								  ri->addr);
	/* 1. dma-buf */
	ret = dev->reg_fail & (1u << VFGX_RDMA_REG_DMABUF) ?
		      -EOPNOTSUPP : reg_dmabuf(m, daddr, ri->size, acc);
	if (!ret) {
		m->info.path = VFGX_RDMA_REG_DMABUF;
		goto done;
	}
	reg_fail(m, VFGX_RDMA_REG_DMABUF, ret, daddr, ri->size);
	/* 2. nvidia-peermem: the NIC driver resolves the device pointer */
	if (dev->reg_fail & (1u << VFGX_RDMA_REG_PEERMEM)) {
		ret = -EOPNOTSUPP;
	} else {
		m->mr = ibv_reg_mr(dev->pd, (void *)(uintptr_t)daddr, ri->size,
				   acc);
		ret = m->mr ? 0 : (errno ? -errno : -EIO);
	}
	if (!ret) {
		m->info.path = VFGX_RDMA_REG_PEERMEM;
		m->cpu = ri->kind == VFGX_MEM_GPU ? NULL : ri->addr;
		goto done;
	}
	reg_fail(m, VFGX_RDMA_REG_PEERMEM, ret, daddr, ri->size);
	/* 3. pinned host memory */
	if (!host_fallback) {
		ret = vfgx_set_error(dev->ctx, -ENODEV,
				     "%s: GPU memory cannot be registered: dma-buf: %s, peermem: %s (load nvidia-peermem, or set memory.fallback: host)",
				     dev->name, strerror(-m->info.step_err[0]),
				     strerror(-m->info.step_err[1]));
		free(m);
		return ret;
	}
	if (posix_memalign(&m->own_host, 4096, ri->size)) {
		free(m);
		return -ENOMEM;
	}
	memset(m->own_host, 0, ri->size);
	ret = reg_host(m, m->own_host, ri->size, acc);
	if (ret) {
		free(m->own_host);
		free(m);
		return vfgx_set_error(dev->ctx, ret,
				      "%s: host fallback registration of %zu bytes failed: %s (check `ulimit -l`)",
				      dev->name, ri->size, strerror(-ret));
	}
	vfgx_warn(dev->ctx, "%s: GPU region registered through pinned host memory (no GPUDirect); data lands in host memory",
		  dev->name);
done:
	mr_fill(m);
	*out = m;
	return 0;
}

int vfgx_rdma_reg_mem(vfgx_rdma_dev *dev, void *addr, size_t len,
		      unsigned access, vfgx_rdma_mr **out)
{
	vfgx_rdma_mr *m;
	int ret;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->dev = dev;
	m->dmabuf_fd = -1;
	ret = reg_host(m, addr, len, ibv_access(access));
	if (ret) {
		free(m);
		return vfgx_set_error(dev->ctx, ret,
				      "%s: cannot register %zu bytes at %p: %s (check `ulimit -l`)",
				      dev->name, len, addr, strerror(-ret));
	}
	mr_fill(m);
	*out = m;
	return 0;
}

void vfgx_rdma_dereg(vfgx_rdma_mr *m)
{
	if (!m)
		return;
	if (m->mr)
		ibv_dereg_mr(m->mr);
	if (m->dmabuf_fd >= 0)
		close(m->dmabuf_fd);
	free(m->own_host);
	free(m);
}

const struct vfgx_rdma_mr_info *vfgx_rdma_mr_info(const vfgx_rdma_mr *m)
{
	return &m->info;
}

void *vfgx_rdma_mr_cpu_addr(const vfgx_rdma_mr *m) { return m->cpu; }
struct ibv_mr *vfgx_rdma_mr_ibv(const vfgx_rdma_mr *m) { return m->mr; }

/* ---------------------------------------------------------- queue pairs */

static void conf_defaults(struct vfgx_rdma_qp_conf *c,
			  const struct vfgx_rdma_qp_conf *in)
{
	if (in)
		*c = *in;
	else
		memset(c, 0, sizeof(*c));
	c->max_send_wr = c->max_send_wr ? c->max_send_wr : 256;
	c->max_recv_wr = c->max_recv_wr ? c->max_recv_wr : 256;
	c->max_sge = c->max_sge ? c->max_sge : 1;
	c->max_inline = c->max_inline ? c->max_inline : 64;
	c->timeout = c->timeout ? c->timeout : 14;
	c->retry_cnt = c->retry_cnt ? c->retry_cnt : 7;
	c->rnr_retry = c->rnr_retry ? c->rnr_retry : 7;
}

static int qp_alloc(vfgx_rdma_dev *dev, const struct vfgx_rdma_qp_conf *in,
		    vfgx_rdma_qp **out)
{
	vfgx_rdma_qp *qp = calloc(1, sizeof(*qp));

	*out = NULL;
	if (!qp)
		return -ENOMEM;
	qp->dev = dev;
	conf_defaults(&qp->conf, in);
	if (qp->conf.type != VFGX_RDMA_RC && qp->conf.type != VFGX_RDMA_UD) {
		int t = qp->conf.type;

		free(qp);
		return vfgx_set_error(dev->ctx, -EINVAL,
				      "%s: queue pair type %d is neither RC nor UD",
				      dev->name, t);
	}
	qp->fifo = calloc(qp->conf.max_send_wr, sizeof(*qp->fifo));
	qp->scq = ibv_create_cq(dev->verbs, (int)qp->conf.max_send_wr, NULL,
				NULL, 0);
	qp->rcq = ibv_create_cq(dev->verbs, (int)qp->conf.max_recv_wr, NULL,
				NULL, 0);
	if (!qp->fifo || !qp->scq || !qp->rcq) {
		int ret = vfgx_set_error(dev->ctx, -ENOMEM,
					 "%s: cannot create completion queues of %u/%u entries",
					 dev->name, qp->conf.max_send_wr,
					 qp->conf.max_recv_wr);

		vfgx_rdma_qp_destroy(qp);
		return ret;
	}
	qp->psn = (uint32_t)(vfgx_now_ns() ^ (uintptr_t)qp) & 0xffffff;
	*out = qp;
	return 0;
}

static void qp_init_attr(vfgx_rdma_qp *qp, struct ibv_qp_init_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->send_cq = qp->scq;
	a->recv_cq = qp->rcq;
	a->qp_type = qp->conf.type == VFGX_RDMA_UD ? IBV_QPT_UD : IBV_QPT_RC;
	a->cap.max_send_wr = qp->conf.max_send_wr;
	a->cap.max_recv_wr = qp->conf.max_recv_wr;
	a->cap.max_send_sge = qp->conf.max_sge;
	a->cap.max_recv_sge = qp->conf.max_sge;
	a->cap.max_inline_data = qp->conf.max_inline;
}

static bool qp_ud(const struct vfgx_rdma_qp_conf *c)
{
	return c && c->type == VFGX_RDMA_UD;
}

int vfgx_rdma_qp_create(vfgx_rdma_dev *dev,
			const struct vfgx_rdma_qp_conf *conf,
			vfgx_rdma_qp **out)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a = { 0 };
	vfgx_rdma_qp *qp;
	int ret;

	ret = qp_alloc(dev, conf, &qp);
	if (ret)
		return ret;
	qp_init_attr(qp, &ia);
	qp->qp = ibv_create_qp(dev->pd, &ia);
	if (!qp->qp) {
		ret = -errno;
		vfgx_rdma_qp_destroy(qp);
		return vfgx_set_error(dev->ctx, ret, "%s: cannot create a%s QP: %s",
				      dev->name,
				      qp_ud(conf) ? " UD" : "n RC",
				      strerror(-ret));
	}
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = dev->port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	a.qkey = VFGX_RDMA_UD_QKEY;
	if (ibv_modify_qp(qp->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					      IBV_QP_PORT |
					      (qp_ud(conf) ? IBV_QP_QKEY :
							     IBV_QP_ACCESS_FLAGS))) {
		ret = -errno;
		vfgx_rdma_qp_destroy(qp);
		return vfgx_set_error(dev->ctx, ret, "%s: QP to INIT: %s",
				      dev->name, strerror(-ret));
	}
	*out = qp;
	return 0;
}

int vfgx_rdma_qp_endpoint(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr,
			  struct vfgx_rdma_endpoint *ep)
{
	memset(ep, 0, sizeof(*ep));
	ep->qpn = qp->qp->qp_num;
	ep->psn = qp->psn;
	memcpy(ep->gid, qp->dev->gid.raw, 16);
	ep->lid = qp->dev->pattr.lid;
	ep->port = qp->dev->port;
	ep->mtu = (uint8_t)qp->dev->pattr.active_mtu;
	ep->qkey = qp->conf.type == VFGX_RDMA_UD ? VFGX_RDMA_UD_QKEY : 0;
	if (mr) {
		ep->addr = mr->info.addr;
		ep->rkey = mr->info.rkey;
		ep->len = mr->info.len;
	}
	return 0;
}

static uint8_t rd_atomic(const vfgx_rdma_dev *dev)
{
	int m = dev->dattr.max_qp_rd_atom;

	return (uint8_t)(m > 0 && m < RDMA_MAX_RD_ATOMIC ? m : RDMA_MAX_RD_ATOMIC);
}

/* UD: the address handle to the peer's gid/lid and where datagrams go. */
static int ud_target(vfgx_rdma_qp *qp, const struct ibv_ah_attr *aa,
		     uint32_t qpn, uint32_t qkey, int mtu)
{
	struct ibv_ah_attr a = *aa;

	if (qp->ah)
		ibv_destroy_ah(qp->ah);
	qp->ah = ibv_create_ah(qp->dev->pd, &a);
	if (!qp->ah)
		return vfgx_set_error(qp->dev->ctx, -errno,
				      "%s: UD QP %u: cannot create an address handle to qpn %u: %s (check the gid index with gid_index)",
				      qp->dev->name, qp->qp->qp_num, qpn,
				      strerror(errno));
	qp->remote_qpn = qpn;
	qp->remote_qkey = qkey ? qkey : VFGX_RDMA_UD_QKEY;
	qp->max_msg = 128u << mtu;
	return 0;
}

static void ah_from_ep(const vfgx_rdma_dev *dev,
		       const struct vfgx_rdma_endpoint *r,
		       struct ibv_ah_attr *aa)
{
	static const uint8_t zero[16];

	memset(aa, 0, sizeof(*aa));
	aa->dlid = r->lid;
	aa->port_num = dev->port;
	if (memcmp(r->gid, zero, 16)) {
		aa->is_global = 1;
		memcpy(aa->grh.dgid.raw, r->gid, 16);
		aa->grh.sgid_index = (uint8_t)dev->gid_index;
		aa->grh.hop_limit = 64;
	}
}

static int ud_connect(vfgx_rdma_qp *qp, const struct vfgx_rdma_endpoint *r,
		      int mtu)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	struct ibv_ah_attr aa;

	if (ibv_modify_qp(qp->qp, &a, IBV_QP_STATE))
		return vfgx_set_error(qp->dev->ctx, -errno, "%s: UD QP %u to RTR: %s",
				      qp->dev->name, qp->qp->qp_num,
				      strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = qp->psn;
	if (ibv_modify_qp(qp->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return vfgx_set_error(qp->dev->ctx, -errno, "%s: UD QP %u to RTS: %s",
				      qp->dev->name, qp->qp->qp_num,
				      strerror(errno));
	ah_from_ep(qp->dev, r, &aa);
	return ud_target(qp, &aa, r->qpn, r->qkey, mtu);
}

enum vfgx_rdma_qp_type vfgx_rdma_qp_type(const vfgx_rdma_qp *qp)
{
	return qp->conf.type;
}

uint32_t vfgx_rdma_qp_max_msg(const vfgx_rdma_qp *qp)
{
	return qp->conf.type == VFGX_RDMA_UD ? qp->max_msg : 0;
}

int vfgx_rdma_qp_connect(vfgx_rdma_qp *qp,
			 const struct vfgx_rdma_endpoint *r)
{
	vfgx_rdma_dev *dev = qp->dev;
	struct ibv_qp_attr a = { 0 };
	static const uint8_t zero[16];
	int mtu = r->mtu && r->mtu < dev->pattr.active_mtu ? r->mtu :
							   dev->pattr.active_mtu;

	if (qp->conf.type == VFGX_RDMA_UD)
		return ud_connect(qp, r, mtu);

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu;
	a.dest_qp_num = r->qpn;
	a.rq_psn = r->psn & 0xffffff;
	a.max_dest_rd_atomic = rd_atomic(dev);
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = r->lid;
	a.ah_attr.port_num = dev->port;
	if (memcmp(r->gid, zero, 16)) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, r->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)dev->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	if (ibv_modify_qp(qp->qp, &a, IBV_QP_STATE | IBV_QP_AV |
					      IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					      IBV_QP_RQ_PSN |
					      IBV_QP_MAX_DEST_RD_ATOMIC |
					      IBV_QP_MIN_RNR_TIMER))
		return vfgx_set_error(dev->ctx, -errno,
				      "%s: QP %u to RTR (remote qpn %u): %s (check the gid index with -x / gid_index)",
				      dev->name, qp->qp->qp_num, r->qpn,
				      strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = qp->conf.timeout;
	a.retry_cnt = qp->conf.retry_cnt;
	a.rnr_retry = qp->conf.rnr_retry;
	a.sq_psn = qp->psn;
	a.max_rd_atomic = rd_atomic(dev);
	if (ibv_modify_qp(qp->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
					      IBV_QP_RETRY_CNT |
					      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					      IBV_QP_MAX_QP_RD_ATOMIC))
		return vfgx_set_error(dev->ctx, -errno, "%s: QP %u to RTS: %s",
				      dev->name, qp->qp->qp_num,
				      strerror(errno));
	return 0;
}

void vfgx_rdma_qp_destroy(vfgx_rdma_qp *qp)
{
	if (!qp)
		return;
	if (qp->ah)
		ibv_destroy_ah(qp->ah);
	if (qp->id) {
		if (!qp->dead && qp->conf.type == VFGX_RDMA_RC)
			rdma_disconnect(qp->id);
		if (qp->qp)
			rdma_destroy_qp(qp->id);
		rdma_destroy_id(qp->id);
	} else if (qp->qp) {
		ibv_destroy_qp(qp->qp);
	}
	if (qp->scq)
		ibv_destroy_cq(qp->scq);
	if (qp->rcq)
		ibv_destroy_cq(qp->rcq);
	if (qp->ec)
		rdma_destroy_event_channel(qp->ec);
	free(qp->fifo);
	free(qp);
}

struct ibv_qp *vfgx_rdma_qp_ibv(const vfgx_rdma_qp *qp) { return qp->qp; }
struct ibv_cq *vfgx_rdma_qp_send_cq(const vfgx_rdma_qp *qp) { return qp->scq; }
struct ibv_cq *vfgx_rdma_qp_recv_cq(const vfgx_rdma_qp *qp) { return qp->rcq; }
vfgx_rdma_dev *vfgx_rdma_qp_dev(const vfgx_rdma_qp *qp) { return qp->dev; }
uint32_t vfgx_rdma_qp_outstanding(const vfgx_rdma_qp *qp) { return qp->outstanding; }

/* ---------------------------------------------------------------- rdma_cm */

/* Private data: the exposed region, big endian. */
struct cm_priv {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t magic;
} __attribute__((packed));
#define CM_PRIV_MAGIC 0x76666778u /* "vfgx" */

/* UD connection request: the client's QP, so the server can address it. */
struct cm_ud_priv {
	struct cm_priv base;
	uint32_t qpn;
	uint8_t gid[16];
	uint16_t lid;
} __attribute__((packed));

static void priv_pack(struct cm_priv *p, const struct vfgx_rdma_endpoint *ep)
{
	memset(p, 0, sizeof(*p));
	p->magic = htonl(CM_PRIV_MAGIC);
	if (!ep)
		return;
	p->addr = htobe64(ep->addr);
	p->len = htobe64(ep->len);
	p->rkey = htonl(ep->rkey);
}

static void priv_unpack(const void *data, uint8_t len,
			struct vfgx_rdma_endpoint *ep)
{
	struct cm_priv p;

	if (!ep)
		return;
	memset(ep, 0, sizeof(*ep));
	if (!data || len < sizeof(p))
		return;
	memcpy(&p, data, sizeof(p));
	if (ntohl(p.magic) != CM_PRIV_MAGIC)
		return;
	ep->addr = be64toh(p.addr);
	ep->len = be64toh(p.len);
	ep->rkey = ntohl(p.rkey);
}

/* Wait for the next event on ec; -ETIMEDOUT after timeout_ms. */
static int cm_next(struct rdma_event_channel *ec, int timeout_ms,
		   struct rdma_cm_event **ev)
{
	struct pollfd pfd = { .fd = ec->fd, .events = POLLIN };
	uint64_t end = timeout_ms < 0 ? UINT64_MAX :
					 vfgx_now_ns() + (uint64_t)timeout_ms * 1000000u;

	for (;;) {
		uint64_t now = vfgx_now_ns();
		int left = end == UINT64_MAX ? -1 :
			   now >= end ? 0 : (int)((end - now) / 1000000u) + 1;
		int r = poll(&pfd, 1, left);

		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0) {
			if (rdma_get_cm_event(ec, ev) == 0)
				return 0;
			if (errno != EAGAIN)
				return -errno;
		}
		if (r == 0 && left == 0)
			return -ETIMEDOUT;
	}
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

/* Wait for event `want` on ec, mapping the failure events to errors. */
static int cm_expect(vfgx_ctx *ctx, struct rdma_event_channel *ec,
		     enum rdma_cm_event_type want, int timeout_ms,
		     const char *what, struct vfgx_rdma_endpoint *theirs,
		     vfgx_rdma_qp *ud)
{
	struct rdma_cm_event *ev;
	int ret = cm_next(ec, timeout_ms, &ev), st;
	enum rdma_cm_event_type t;

	if (ret == -ETIMEDOUT)
		return vfgx_set_error(ctx, ret, "%s: no answer within %d ms (is the peer up and reachable?)",
				      what, timeout_ms);
	if (ret)
		return vfgx_set_error(ctx, ret, "%s: %s", what, strerror(-ret));
	t = ev->event;
	st = ev->status;
	if (t == want && t == RDMA_CM_EVENT_ESTABLISHED && ud) {
		/* SIDR reply: address handle, qpn and qkey of the server */
		priv_unpack(ev->param.ud.private_data,
			    ev->param.ud.private_data_len, theirs);
		ret = ud_target(ud, &ev->param.ud.ah_attr, ev->param.ud.qp_num,
				ev->param.ud.qkey,
				ud->dev->pattr.active_mtu);
		rdma_ack_cm_event(ev);
		return ret;
	}
	if (t == want && t == RDMA_CM_EVENT_ESTABLISHED && theirs)
		priv_unpack(ev->param.conn.private_data,
			    ev->param.conn.private_data_len, theirs);
	rdma_ack_cm_event(ev);
	if (t == want)
		return 0;
	switch (t) {
	case RDMA_CM_EVENT_REJECTED:
		return vfgx_set_error(ctx, -ECONNREFUSED,
				      "%s: connection refused (no listener on that address and port?)",
				      what);
	case RDMA_CM_EVENT_UNREACHABLE:
		/* a SIDR reply (UD) with status 1 (no such service) or 2
		 * (rejected): nobody listens there */
		if (ud && (st == 1 || st == 2))
			return vfgx_set_error(ctx, -ECONNREFUSED,
					      "%s: connection refused (no UD listener on that address and port?)",
					      what);
		/* fall through */
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return vfgx_set_error(ctx, -EHOSTUNREACH,
				      "%s: %s (status %d; is an RDMA device bound to the route's netdev?)",
				      what, rdma_event_str(t), st);
	default:
		return vfgx_set_error(ctx, -ECONNABORTED, "%s: unexpected %s (status %d)",
				      what, rdma_event_str(t), st);
	}
}

static int cm_make_qp(vfgx_rdma_dev *dev, struct rdma_cm_id *id,
		      const struct vfgx_rdma_qp_conf *conf, const char *what,
		      vfgx_rdma_qp **out)
{
	struct ibv_qp_init_attr ia;
	vfgx_rdma_qp *qp;
	int ret;

	if (id->verbs != dev->verbs)
		return vfgx_set_error(dev->ctx, -EXDEV,
				      "%s: the route uses device %s but the QP was asked on %s (open that device)",
				      what,
				      id->verbs ? ibv_get_device_name(id->verbs->device) : "?",
				      dev->name);
	ret = qp_alloc(dev, conf, &qp);
	if (ret)
		return ret;
	qp_init_attr(qp, &ia);
	if (rdma_create_qp(id, dev->pd, &ia)) {
		ret = -errno;
		vfgx_rdma_qp_destroy(qp);
		return vfgx_set_error(dev->ctx, ret, "%s: cannot create a QP: %s",
				      what, strerror(-ret));
	}
	qp->qp = id->qp;
	qp->id = id;
	qp->max_msg = 128u << dev->pattr.active_mtu;
	*out = qp;
	return 0;
}

static void conn_param(struct rdma_conn_param *cp, const struct cm_priv *p,
		       const vfgx_rdma_dev *dev)
{
	memset(cp, 0, sizeof(*cp));
	cp->private_data = p;
	cp->private_data_len = sizeof(*p);
	cp->responder_resources = rd_atomic(dev);
	cp->initiator_depth = rd_atomic(dev);
	cp->retry_count = 7;
	cp->rnr_retry_count = 7;
}

int vfgx_rdma_connect(vfgx_rdma_dev *dev, const char *host, uint16_t port,
		      const struct vfgx_rdma_qp_conf *conf,
		      const struct vfgx_rdma_endpoint *mine,
		      struct vfgx_rdma_endpoint *theirs, int timeout_ms,
		      vfgx_rdma_qp **out)
{
	struct addrinfo hints = { .ai_family = AF_INET }, *ai = NULL;
	struct rdma_event_channel *ec;
	struct rdma_conn_param cp;
	struct rdma_cm_id *id = NULL;
	struct cm_ud_priv priv;
	vfgx_rdma_qp *qp = NULL;
	char what[128], ps[8];
	int ret, tmo = timeout_ms < 0 ? 60000 : timeout_ms;

	*out = NULL;
	snprintf(what, sizeof(what), "rdma_cm %s:%u", host, port);
	snprintf(ps, sizeof(ps), "%u", port);
	ret = getaddrinfo(host, ps, &hints, &ai);
	if (ret)
		return vfgx_set_error(dev->ctx, -EINVAL, "%s: cannot resolve: %s",
				      what, gai_strerror(ret));
	ec = rdma_create_event_channel();
	if (!ec || set_nonblock(ec->fd) ||
	    rdma_create_id(ec, &id, NULL, qp_ud(conf) ? RDMA_PS_UDP : RDMA_PS_TCP)) {
		ret = vfgx_set_error(dev->ctx, -errno ? -errno : -ENODEV,
				     "%s: cannot create an rdma_cm id: %s (is rdma_ucm loaded?)",
				     what, strerror(errno));
		goto err;
	}
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, tmo)) {
		ret = vfgx_set_error(dev->ctx, -errno, "%s: resolve address: %s",
				     what, strerror(errno));
		goto err;
	}
	ret = cm_expect(dev->ctx, ec, RDMA_CM_EVENT_ADDR_RESOLVED, tmo + 100, what, NULL, NULL);
	if (ret)
		goto err;
	if (rdma_resolve_route(id, tmo)) {
		ret = vfgx_set_error(dev->ctx, -errno, "%s: resolve route: %s",
				     what, strerror(errno));
		goto err;
	}
	ret = cm_expect(dev->ctx, ec, RDMA_CM_EVENT_ROUTE_RESOLVED, tmo + 100, what, NULL, NULL);
	if (ret)
		goto err;
	ret = cm_make_qp(dev, id, conf, what, &qp);
	if (ret)
		goto err;
	qp->ec = ec;
	priv_pack(&priv.base, mine);
	conn_param(&cp, &priv.base, dev);
	if (qp_ud(conf)) {
		priv.qpn = htonl(qp->qp->qp_num);
		memcpy(priv.gid, dev->gid.raw, 16);
		priv.lid = htons(dev->pattr.lid);
		cp.private_data_len = sizeof(priv);
	}
	if (rdma_connect(id, &cp)) {
		ret = vfgx_set_error(dev->ctx, -errno, "%s: connect: %s", what,
				     strerror(errno));
		goto err_qp;
	}
	ret = cm_expect(dev->ctx, ec, RDMA_CM_EVENT_ESTABLISHED, tmo, what, theirs,
			qp_ud(conf) ? qp : NULL);
	if (ret)
		goto err_qp;
	freeaddrinfo(ai);
	*out = qp;
	return 0;
err_qp:
	qp->dead = true; /* never connected: no disconnect */
	vfgx_rdma_qp_destroy(qp); /* destroys id and ec too */
	freeaddrinfo(ai);
	return ret;
err:
	if (id)
		rdma_destroy_id(id);
	if (ec)
		rdma_destroy_event_channel(ec);
	freeaddrinfo(ai);
	return ret;
}

int vfgx_rdma_listen(vfgx_ctx *ctx, const char *addr, uint16_t port,
		     vfgx_rdma_listener **out)
{
	return vfgx_rdma_listen_type(ctx, addr, port, VFGX_RDMA_RC, out);
}

int vfgx_rdma_listen_type(vfgx_ctx *ctx, const char *addr, uint16_t port,
			  enum vfgx_rdma_qp_type type,
			  vfgx_rdma_listener **out)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	vfgx_rdma_listener *l;
	int ret;

	*out = NULL;
	if (addr && *addr && inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return vfgx_set_error(ctx, -EINVAL,
				      "rdma_cm listen: '%s' is not an IPv4 address",
				      addr);
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->ctx = ctx;
	l->type = type;
	l->ec = rdma_create_event_channel();
	if (!l->ec || set_nonblock(l->ec->fd) ||
	    rdma_create_id(l->ec, &l->id, NULL,
			   type == VFGX_RDMA_UD ? RDMA_PS_UDP : RDMA_PS_TCP)) {
		ret = vfgx_set_error(ctx, -errno ? -errno : -ENODEV,
				     "rdma_cm listen: %s (is rdma_ucm loaded?)",
				     strerror(errno));
		goto err;
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *)&sin) ||
	    rdma_listen(l->id, 16)) {
		ret = vfgx_set_error(ctx, -errno, "rdma_cm listen on %s:%u: %s",
				     addr && *addr ? addr : "0.0.0.0", port,
				     strerror(errno));
		goto err;
	}
	*out = l;
	return 0;
err:
	vfgx_rdma_listener_close(l);
	return ret;
}

uint16_t vfgx_rdma_listener_port(const vfgx_rdma_listener *l)
{
	return ntohs(rdma_get_src_port(l->id));
}

int vfgx_rdma_accept(vfgx_rdma_listener *l, vfgx_rdma_dev *dev,
		     const struct vfgx_rdma_qp_conf *conf,
		     const struct vfgx_rdma_endpoint *mine,
		     struct vfgx_rdma_endpoint *theirs, int timeout_ms,
		     vfgx_rdma_qp **out)
{
	struct rdma_event_channel *ec = NULL;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct rdma_cm_id *id;
	struct cm_ud_priv priv, upeer = { 0 };
	vfgx_rdma_qp *qp;
	char what[64];
	int ret;

	*out = NULL;
	snprintf(what, sizeof(what), "rdma_cm accept on port %u",
		 vfgx_rdma_listener_port(l));
	if (qp_ud(conf) != (l->type == VFGX_RDMA_UD))
		return vfgx_set_error(dev->ctx, -EINVAL,
				      "%s: the listener is for %s QPs but an %s QP was asked (use vfgx_rdma_listen_type)",
				      what, l->type == VFGX_RDMA_UD ? "UD" : "RC",
				      qp_ud(conf) ? "UD" : "RC");
	for (;;) {
		ret = cm_next(l->ec, timeout_ms, &ev);
		if (ret == -ETIMEDOUT)
			return vfgx_set_error(dev->ctx, ret, "%s: no connection within %d ms",
					      what, timeout_ms);
		if (ret)
			return vfgx_set_error(dev->ctx, ret, "%s: %s", what,
					      strerror(-ret));
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			break;
		rdma_ack_cm_event(ev); /* e.g. a late event of an old id */
	}
	id = ev->id;
	priv_unpack(ev->param.conn.private_data, ev->param.conn.private_data_len,
		    theirs);
	if (l->type == VFGX_RDMA_UD && ev->param.ud.private_data &&
	    ev->param.ud.private_data_len >= sizeof(upeer))
		memcpy(&upeer, ev->param.ud.private_data, sizeof(upeer));
	rdma_ack_cm_event(ev);
	if (l->type == VFGX_RDMA_UD &&
	    ntohl(upeer.base.magic) != CM_PRIV_MAGIC) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return vfgx_set_error(dev->ctx, -EPROTO,
				      "%s: UD request without the client's QP in its private data (peer is not vfgx?)",
				      what);
	}
	ec = rdma_create_event_channel();
	if (!ec || set_nonblock(ec->fd) || rdma_migrate_id(id, ec)) {
		ret = vfgx_set_error(dev->ctx, -errno ? -errno : -ENOMEM,
				     "%s: cannot move the connection to its own channel: %s",
				     what, strerror(errno));
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		if (ec)
			rdma_destroy_event_channel(ec);
		return ret;
	}
	ret = cm_make_qp(dev, id, conf, what, &qp);
	if (ret) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		rdma_destroy_event_channel(ec);
		return ret;
	}
	qp->ec = ec;
	priv_pack(&priv.base, mine);
	conn_param(&cp, &priv.base, dev);
	if (l->type == VFGX_RDMA_UD) {
		struct vfgx_rdma_endpoint pe = { .qpn = ntohl(upeer.qpn),
						 .lid = ntohs(upeer.lid),
						 .qkey = VFGX_RDMA_UD_QKEY };
		struct ibv_ah_attr aa;

		memcpy(pe.gid, upeer.gid, 16);
		ah_from_ep(dev, &pe, &aa);
		cp.qp_num = qp->qp->qp_num;
		ret = ud_target(qp, &aa, pe.qpn, pe.qkey,
				dev->pattr.active_mtu);
		if (ret || rdma_accept(id, &cp)) {
			if (!ret)
				ret = vfgx_set_error(dev->ctx, -errno, "%s: accept: %s",
						     what, strerror(errno));
			else
				rdma_reject(id, NULL, 0);
			qp->dead = true;
			vfgx_rdma_qp_destroy(qp);
			return ret;
		}
		/* no ESTABLISHED on the answering side of SIDR */
		*out = qp;
		return 0;
	}
	if (rdma_accept(id, &cp)) {
		ret = vfgx_set_error(dev->ctx, -errno, "%s: accept: %s", what,
				     strerror(errno));
		qp->dead = true;
		vfgx_rdma_qp_destroy(qp);
		return ret;
	}
	ret = cm_expect(dev->ctx, ec, RDMA_CM_EVENT_ESTABLISHED,
			timeout_ms < 0 ? 60000 : timeout_ms, what, NULL, NULL);
	if (ret) {
		qp->dead = true;
		vfgx_rdma_qp_destroy(qp);
		return ret;
	}
	*out = qp;
	return 0;
}

void vfgx_rdma_listener_close(vfgx_rdma_listener *l)
{
	if (!l)
		return;
	if (l->id)
		rdma_destroy_id(l->id);
	if (l->ec)
		rdma_destroy_event_channel(l->ec);
	free(l);
}

/* ------------------------------------------------------ post and poll */

static int check_range(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t off,
		       size_t len)
{
	if (off > mr->info.len || len > mr->info.len - off)
		return vfgx_set_error(qp->dev->ctx, -ERANGE,
				      "%s: local range %zu+%zu outside the %zu-byte registration",
				      qp->dev->name, off, len, mr->info.len);
	return 0;
}

static void wr_flags(struct ibv_send_wr *wr, unsigned flags)
{
	wr->send_flags = 0;
	if (!(flags & VFGX_RDMA_UNSIGNALED))
		wr->send_flags |= IBV_SEND_SIGNALED;
	if (flags & VFGX_RDMA_FENCE)
		wr->send_flags |= IBV_SEND_FENCE;
	if (flags & VFGX_RDMA_INLINE)
		wr->send_flags |= IBV_SEND_INLINE;
}

/* Account n posted WRs (wr and its successors): a signaled one retires
 * itself and the unsignaled ones before it. */
static void posted(vfgx_rdma_qp *qp, const struct ibv_send_wr *wr, unsigned n)
{
	for (unsigned i = 0; i < n; i++, wr = wr->next) {
		qp->outstanding++;
		if (wr->send_flags & IBV_SEND_SIGNALED) {
			qp->fifo[qp->fifo_tail++ % qp->conf.max_send_wr] = qp->unsig + 1;
			qp->unsig = 0;
		} else {
			qp->unsig++;
		}
	}
}

/* Post the chain of n WRs at wr with one ibv_post_send (one doorbell);
 * their send_flags are set. */
static int post_chain(vfgx_rdma_qp *qp, struct ibv_send_wr *wr, unsigned n)
{
	struct ibv_send_wr *bad = NULL;
	unsigned ok = 0;
	int ret;

	if (qp->outstanding + n > qp->conf.max_send_wr)
		return -ENOSPC;
	ret = ibv_post_send(qp->qp, wr, &bad);
	if (!ret) {
		posted(qp, wr, n);
		return 0;
	}
	/* the WRs before bad went out and will complete */
	for (struct ibv_send_wr *w = wr; bad && w && w != bad; w = w->next)
		ok++;
	posted(qp, wr, ok);
	return vfgx_set_error(qp->dev->ctx, -ret, "%s qp %u: post%s: %s",
			      qp->dev->name, qp->qp->qp_num,
			      n > 1 ? " list" : "", strerror(ret));
}

static int post(vfgx_rdma_qp *qp, struct ibv_send_wr *wr, unsigned flags)
{
	wr_flags(wr, flags);
	wr->next = NULL;
	return post_chain(qp, wr, 1);
}

int vfgx_rdma_post_send(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr,
			const void *buf, uint32_t len, uint64_t wr_id,
			unsigned flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len,
			       .lkey = mr->info.lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND };
	int ret = check_range(qp, mr, (uintptr_t)buf - mr->info.addr, len);

	if (ret)
		return ret;
	if (qp->conf.type == VFGX_RDMA_UD) {
		if (!qp->ah)
			return vfgx_set_error(qp->dev->ctx, -ENOTCONN,
					      "%s: UD QP %u has no peer yet (connect it first)",
					      qp->dev->name, qp->qp->qp_num);
		if (len > qp->max_msg)
			return vfgx_set_error(qp->dev->ctx, -EMSGSIZE,
					      "%s: UD QP %u: datagram of %u bytes exceeds the path MTU of %u bytes (send at most %u, or use an RC QP)",
					      qp->dev->name, qp->qp->qp_num, len,
					      qp->max_msg, qp->max_msg);
		wr.wr.ud.ah = qp->ah;
		wr.wr.ud.remote_qpn = qp->remote_qpn;
		wr.wr.ud.remote_qkey = qp->remote_qkey;
	}
	return post(qp, &wr, flags);
}

int vfgx_rdma_post_recv(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, void *buf,
			uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len,
			       .lkey = mr->info.lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	int ret = check_range(qp, mr, (uintptr_t)buf - mr->info.addr, len);

	if (ret)
		return ret;
	ret = ibv_post_recv(qp->qp, &wr, &bad);
	if (ret)
		return vfgx_set_error(qp->dev->ctx, -ret, "%s qp %u: post recv: %s",
				      qp->dev->name, qp->qp->qp_num,
				      strerror(ret));
	return 0;
}

static int ud_one_sided(vfgx_rdma_qp *qp)
{
	return vfgx_set_error(qp->dev->ctx, -EOPNOTSUPP,
			      "%s: QP %u is UD: WRITE, READ and compare-and-swap need an RC QP",
			      qp->dev->name, qp->qp->qp_num);
}

static int one_sided(vfgx_rdma_qp *qp, enum ibv_wr_opcode op,
		     const vfgx_rdma_mr *mr, size_t loff, uint64_t raddr,
		     uint32_t rkey, uint32_t len, uint32_t imm, uint64_t wr_id,
		     unsigned flags)
{
	struct ibv_sge sge = { .addr = mr->info.addr + loff, .length = len,
			       .lkey = mr->info.lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = op };
	int ret = check_range(qp, mr, loff, len);

	if (ret)
		return ret;
	if (qp->conf.type == VFGX_RDMA_UD)
		return ud_one_sided(qp);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htonl(imm);
	return post(qp, &wr, flags);
}

int vfgx_rdma_write(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
		    uint64_t raddr, uint32_t rkey, uint32_t len, uint64_t wr_id,
		    unsigned flags)
{
	return one_sided(qp, IBV_WR_RDMA_WRITE, mr, loff, raddr, rkey, len, 0,
			 wr_id, flags);
}

int vfgx_rdma_write_list(vfgx_rdma_qp *qp, const struct vfgx_rdma_write_wr *w,
			 unsigned n)
{
	struct ibv_send_wr wr[VFGX_RDMA_LIST_MAX];
	struct ibv_sge sge[VFGX_RDMA_LIST_MAX];
	int ret;

	if (!n || n > VFGX_RDMA_LIST_MAX)
		return vfgx_set_error(qp->dev->ctx, -EINVAL,
				      "%s: a write list has 1..%d work requests, not %u",
				      qp->dev->name, VFGX_RDMA_LIST_MAX, n);
	if (qp->conf.type == VFGX_RDMA_UD)
		return ud_one_sided(qp);
	for (unsigned i = 0; i < n; i++) {
		ret = check_range(qp, w[i].mr, w[i].loff, w[i].len);
		if (ret)
			return ret;
		sge[i] = (struct ibv_sge){ .addr = w[i].mr->info.addr + w[i].loff,
					   .length = w[i].len,
					   .lkey = w[i].mr->info.lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = w[i].wr_id, .sg_list = &sge[i], .num_sge = 1,
			.opcode = w[i].with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM :
						  IBV_WR_RDMA_WRITE,
			.next = i + 1 < n ? &wr[i + 1] : NULL,
		};
		wr[i].wr.rdma.remote_addr = w[i].raddr;
		wr[i].wr.rdma.rkey = w[i].rkey;
		if (w[i].with_imm)
			wr[i].imm_data = htonl(w[i].imm);
		wr_flags(&wr[i], w[i].flags);
	}
	return post_chain(qp, wr, n);
}

int vfgx_rdma_write_imm(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
			uint64_t raddr, uint32_t rkey, uint32_t len,
			uint32_t imm, uint64_t wr_id, unsigned flags)
{
	return one_sided(qp, IBV_WR_RDMA_WRITE_WITH_IMM, mr, loff, raddr, rkey,
			 len, imm, wr_id, flags);
}

int vfgx_rdma_read(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
		   uint64_t raddr, uint32_t rkey, uint32_t len, uint64_t wr_id,
		   unsigned flags)
{
	return one_sided(qp, IBV_WR_RDMA_READ, mr, loff, raddr, rkey, len, 0,
			 wr_id, flags & ~VFGX_RDMA_INLINE);
}

int vfgx_rdma_cas(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
		  uint64_t raddr, uint32_t rkey, uint64_t compare,
		  uint64_t swap, uint64_t wr_id, unsigned flags)
{
	struct ibv_sge sge = { .addr = mr->info.addr + loff, .length = 8,
			       .lkey = mr->info.lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_CMP_AND_SWP };
	int ret = check_range(qp, mr, loff, 8);

	if (ret)
		return ret;
	if (qp->conf.type == VFGX_RDMA_UD)
		return ud_one_sided(qp);
	if (raddr & 7)
		return vfgx_set_error(qp->dev->ctx, -EINVAL,
				      "%s: compare-and-swap target 0x%llx is not 8-byte aligned",
				      qp->dev->name, (unsigned long long)raddr);
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare;
	wr.wr.atomic.swap = swap;
	return post(qp, &wr, flags & ~VFGX_RDMA_INLINE);
}

static enum vfgx_rdma_op map_op(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return VFGX_RDMA_OP_SEND;
	case IBV_WC_RECV: return VFGX_RDMA_OP_RECV;
	case IBV_WC_RECV_RDMA_WITH_IMM: return VFGX_RDMA_OP_RECV_IMM;
	case IBV_WC_RDMA_WRITE: return VFGX_RDMA_OP_WRITE;
	case IBV_WC_RDMA_READ: return VFGX_RDMA_OP_READ;
	case IBV_WC_COMP_SWAP: return VFGX_RDMA_OP_CAS;
	default: return VFGX_RDMA_OP_OTHER;
	}
}

static int map_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return 0;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR: return -EACCES;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
	case IBV_WC_WR_FLUSH_ERR: return -ECONNRESET;
	default: return -EIO;
	}
}

int vfgx_rdma_poll(vfgx_rdma_qp *qp, bool recv, struct vfgx_rdma_wc *out,
		   int max)
{
	struct ibv_wc wc[32];
	int n, total = 0;

	while (total < max) {
		int want = max - total < 32 ? max - total : 32;

		n = ibv_poll_cq(recv ? qp->rcq : qp->scq, want, wc);
		if (n < 0)
			return vfgx_set_error(qp->dev->ctx, -EIO, "%s: poll CQ failed",
					      qp->dev->name);
		for (int i = 0; i < n; i++) {
			struct vfgx_rdma_wc *o = &out[total + i];

			o->wr_id = wc[i].wr_id;
			o->ibv_status = wc[i].status;
			o->status = map_status(wc[i].status);
			o->op = wc[i].status == IBV_WC_SUCCESS ?
					map_op(wc[i].opcode) :
					(recv ? VFGX_RDMA_OP_RECV : VFGX_RDMA_OP_OTHER);
			o->byte_len = wc[i].byte_len;
			if (recv && qp->conf.type == VFGX_RDMA_UD &&
			    o->byte_len >= VFGX_RDMA_GRH_BYTES)
				o->byte_len -= VFGX_RDMA_GRH_BYTES;
			o->has_imm = wc[i].wc_flags & IBV_WC_WITH_IMM;
			o->imm = o->has_imm ? ntohl(wc[i].imm_data) : 0;
			if (recv)
				continue;
			if (o->status) {
				/* the QP is in error: everything flushes */
				qp->dead = qp->dead || o->status == -ECONNRESET;
				if (qp->fifo_head != qp->fifo_tail) {
					qp->outstanding -= qp->outstanding <
									   qp->fifo[qp->fifo_head % qp->conf.max_send_wr] ?
								   qp->outstanding :
								   qp->fifo[qp->fifo_head % qp->conf.max_send_wr];
					qp->fifo_head++;
				} else if (qp->outstanding) {
					qp->outstanding--;
				}
			} else if (qp->fifo_head != qp->fifo_tail) {
				qp->outstanding -= qp->fifo[qp->fifo_head++ % qp->conf.max_send_wr];
			}
		}
		total += n;
		if (n < want)
			break;
	}
	return total;
}

/* Peer gone?  rdma_cm says so with DISCONNECTED; a raw QP only through
 * its state. */
static bool peer_gone(vfgx_rdma_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (qp->dead)
		return true;
	if (qp->ec) {
		struct rdma_cm_event *ev;

		while (rdma_get_cm_event(qp->ec, &ev) == 0) {
			if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
			    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
			    ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
				qp->dead = true;
			rdma_ack_cm_event(ev);
		}
	}
	if (!qp->dead && ibv_query_qp(qp->qp, &a, IBV_QP_STATE, &ia) == 0 &&
	    a.qp_state == IBV_QPS_ERR)
		qp->dead = true;
	return qp->dead;
}

int vfgx_rdma_wait(vfgx_rdma_qp *qp, bool recv, struct vfgx_rdma_wc *wc,
		   int max, int timeout_ms)
{
	uint64_t start = vfgx_now_ns(), next_check = start + 1000000u;
	uint64_t end = timeout_ms < 0 ? UINT64_MAX :
					 start + (uint64_t)timeout_ms * 1000000u;

	for (unsigned spin = 0;; spin++) {
		int n = vfgx_rdma_poll(qp, recv, wc, max);
		uint64_t now;

		if (n)
			return n;
		if (spin & 255)
			continue;
		now = vfgx_now_ns();
		if (now >= next_check) {
			next_check = now + 1000000u;
			if (peer_gone(qp)) {
				/* drain what the flush produced first */
				n = vfgx_rdma_poll(qp, recv, wc, max);
				if (n)
					return n;
				return vfgx_set_error(qp->dev->ctx, -ECONNRESET,
						      "%s qp %u: peer disconnected or the connection failed (%u sends outstanding)",
						      qp->dev->name, qp->qp->qp_num,
						      qp->outstanding);
			}
		}
		if (now >= end)
			return vfgx_set_error(qp->dev->ctx, -ETIMEDOUT,
					      "%s qp %u: no %s completion within %d ms (%u sends outstanding)",
					      qp->dev->name, qp->qp->qp_num,
					      recv ? "receive" : "send", timeout_ms,
					      qp->outstanding);
	}
}

static const char *op_name(enum vfgx_rdma_op op)
{
	static const char *const n[] = { "SEND", "RECV", "RECV_IMM", "WRITE",
					 "READ", "CAS", "op" };

	return n[op <= VFGX_RDMA_OP_OTHER ? op : VFGX_RDMA_OP_OTHER];
}

int vfgx_rdma_fence(vfgx_rdma_qp *qp, int timeout_ms)
{
	struct vfgx_rdma_wc wc[16];
	int first = 0;

	/* unsignaled WRs after the last signaled one give no completion to
	 * wait for: only signaled ones are waited on */
	while (qp->fifo_head != qp->fifo_tail) {
		int n = vfgx_rdma_wait(qp, false, wc, 16, timeout_ms);

		if (n < 0) {
			if (first)
				break;
			return n;
		}
		for (int i = 0; i < n; i++) {
			if (!wc[i].status || first)
				continue;
			first = wc[i].status;
			vfgx_set_error(qp->dev->ctx, first,
				       "%s qp %u: %s wr %llu: %s%s",
				       qp->dev->name, qp->qp->qp_num,
				       op_name(wc[i].op),
				       (unsigned long long)wc[i].wr_id,
				       ibv_wc_status_str(wc[i].ibv_status),
				       first == -EACCES ? " (bad rkey, remote range or access rights)" :
				       first == -ECONNRESET ? " (peer gone or unreachable)" : "");
		}
		if (first && qp->dead)
			break;
	}
	if (first) {
		qp->outstanding = 0;
		qp->unsig = 0;
		qp->fifo_head = qp->fifo_tail;
	}
	return first;
}

int vfgx_rdma_write_sync(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr,
			 size_t loff, uint64_t raddr, uint32_t rkey,
			 uint32_t len, int timeout_ms)
{
	int ret = vfgx_rdma_write(qp, mr, loff, raddr, rkey, len, 0, 0);

	return ret ? ret : vfgx_rdma_fence(qp, timeout_ms);
}

int vfgx_rdma_read_sync(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
			uint64_t raddr, uint32_t rkey, uint32_t len,
			int timeout_ms)
{
	int ret = vfgx_rdma_read(qp, mr, loff, raddr, rkey, len, 0, 0);

	return ret ? ret : vfgx_rdma_fence(qp, timeout_ms);
}

int vfgx_rdma_cas_sync(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
		       uint64_t raddr, uint32_t rkey, uint64_t compare,
		       uint64_t swap, uint64_t *old, int timeout_ms)
{
	int ret = vfgx_rdma_cas(qp, mr, loff, raddr, rkey, compare, swap, 0, 0);

	if (!ret)
		ret = vfgx_rdma_fence(qp, timeout_ms);
	if (ret)
		return ret;
	if (!mr->cpu)
		return vfgx_set_error(qp->dev->ctx, -EINVAL,
				      "%s: compare-and-swap result landed in GPU memory; read it there",
				      qp->dev->name);
	memcpy(old, (uint8_t *)mr->cpu + loff, 8);
	return 0;
}
