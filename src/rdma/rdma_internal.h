/* rdma_internal.h - the layout of the vfgx_rdma_* objects, shared by the
 * files of src/rdma (device.c, reg.c, qp.c, cm.c, post.c); the RDMA port
 * (src/port/rdma.c) and the exposed-buffer channels (src/eba/channel.c)
 * use the API of vfgx/rdma.h only. */
#ifndef VFGX_RDMA_INTERNAL_H
#define VFGX_RDMA_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <vfgx/rdma.h>

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

/* qp.c, for cm.c */
int rdma_ud_target(vfgx_rdma_qp *qp, const struct ibv_ah_attr *aa,
		   uint32_t qpn, uint32_t qkey, int mtu);
int rdma_qp_alloc(vfgx_rdma_dev *dev, const struct vfgx_rdma_qp_conf *in,
		  vfgx_rdma_qp **out);
void rdma_qp_init_attr(vfgx_rdma_qp *qp, struct ibv_qp_init_attr *a);
uint8_t rdma_rd_atomic(const vfgx_rdma_dev *dev);
bool rdma_qp_ud(const struct vfgx_rdma_qp_conf *c);
void rdma_ah_from_ep(const vfgx_rdma_dev *dev,
		     const struct vfgx_rdma_endpoint *r,
		     struct ibv_ah_attr *aa);

/* A test hook, not in the ABI (tests/vm/test_rdma.c). */
/*
 * Test seam: make the first registration steps fail as if the platform
 * lacked them.  mask bit (1 << VFGX_RDMA_REG_DMABUF) and/or
 * (1 << VFGX_RDMA_REG_PEERMEM) force those steps to fail with -EOPNOTSUPP
 * and are reported in step_err like a real failure.  It also lets a host
 * region walk the GPU chain (treated as if it were device memory), which
 * is how the chain is tested where no GPU exists.  0 restores normal
 * behaviour.
 */
void vfgx_rdma_dev_set_reg_fail(vfgx_rdma_dev *dev, unsigned mask);

#endif
