/* vfgx/rdma.h - RDMA verbs layer: open a device, register regions (GPUDirect
 * dma-buf -> peermem -> host chain), connect RC or UD queue pairs by
 * rdma_cm or by raw endpoint exchange, and post one-sided WRITE /
 * WRITE_WITH_IMM / READ / compare-and-swap with completion waiting under a
 * timeout. */
#ifndef VFGX_RDMA_H
#define VFGX_RDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "core.h"
#include "mem.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

/* rdma-core objects, for callers that want to use verbs directly; include
 * <infiniband/verbs.h> to dereference them. */
struct ibv_context;
struct ibv_pd;
struct ibv_qp;
struct ibv_cq;
struct ibv_mr;

typedef struct vfgx_rdma_dev vfgx_rdma_dev;
typedef struct vfgx_rdma_mr vfgx_rdma_mr;
typedef struct vfgx_rdma_qp vfgx_rdma_qp;
typedef struct vfgx_rdma_listener vfgx_rdma_listener;

/* ---------------------------------------------------------------- device */

/*
 * Open a verbs device and allocate its protection domain.  name is a verbs
 * device name ("rxe0", "mlx5_0") or a network interface name ("eth0"): a
 * netdev is mapped to the RDMA device bound to it.  NULL picks the first
 * device.  port is the device port (1 for nearly all NICs), gid_index the
 * GID table entry used for RoCE addressing (-1: pick the first RoCE v2
 * IPv4-mapped GID, else 0).  The device is shared with rdma_cm, so queue
 * pairs connected by vfgx_rdma_connect()/accept() can use its PD and MRs.
 * -ENODEV with the list of devices present when nothing matches.
 * A device may be used from several threads only for registration; each
 * queue pair is used by one thread.
 */
int vfgx_rdma_dev_open(vfgx_ctx *ctx, const char *name, uint8_t port,
		       int gid_index, vfgx_rdma_dev **out);
void vfgx_rdma_dev_close(vfgx_rdma_dev *dev);
const char *vfgx_rdma_dev_name(const vfgx_rdma_dev *dev);
uint8_t vfgx_rdma_dev_port(const vfgx_rdma_dev *dev);
int vfgx_rdma_dev_gid_index(const vfgx_rdma_dev *dev);
struct ibv_context *vfgx_rdma_dev_verbs(const vfgx_rdma_dev *dev);
struct ibv_pd *vfgx_rdma_dev_pd(const vfgx_rdma_dev *dev);
vfgx_ctx *vfgx_rdma_dev_ctx(const vfgx_rdma_dev *dev);

/* ---------------------------------------------------------- registration */

/* Access rights of a registration (ORed). LOCAL_WRITE is always added. */
#define VFGX_RDMA_ACCESS_REMOTE_WRITE 0x1
#define VFGX_RDMA_ACCESS_REMOTE_READ 0x2
#define VFGX_RDMA_ACCESS_REMOTE_ATOMIC 0x4
#define VFGX_RDMA_ACCESS_ALL 0x7

/* Which registration path was taken. */
enum vfgx_rdma_reg_path {
	VFGX_RDMA_REG_DMABUF = 0,  /* GPU memory via dma-buf fd + ibv_reg_dmabuf_mr */
	VFGX_RDMA_REG_PEERMEM = 1, /* GPU memory via nvidia-peermem (ibv_reg_mr) */
	VFGX_RDMA_REG_HOST = 2,    /* host memory (ibv_reg_mr) */
};
const char *vfgx_rdma_reg_path_name(enum vfgx_rdma_reg_path p);

struct vfgx_rdma_mr_info {
	enum vfgx_rdma_reg_path path;
	uint64_t addr;  /* address the MR covers: CPU or GPU device address */
	size_t len;
	uint32_t lkey;
	uint32_t rkey;
	/* errno (negative, 0 = not tried) of the steps that failed before the
	 * chosen one, indexed by enum vfgx_rdma_reg_path */
	int step_err[3];
};

/*
 * Register a region for RDMA.  GPU regions try, in order: dma-buf
 * (cuMemGetHandleForAddressRange + ibv_reg_dmabuf_mr), then nvidia-peermem
 * (ibv_reg_mr on the device pointer); each failure is logged with its
 * errno.  When both fail and host_fallback is true (config
 * `memory.fallback: host`), a pinned host buffer of the same size is
 * allocated, owned by the MR, and registered instead (path HOST; the
 * caller must then use info->addr, not the GPU pointer).  Host, hugepage
 * and pinned regions register directly (path HOST).  The region must
 * outlive the MR.
 */
int vfgx_rdma_reg_region(vfgx_rdma_dev *dev, vfgx_region *region,
			 unsigned access, bool host_fallback,
			 vfgx_rdma_mr **out);
/* Register plain host memory (path HOST). */
int vfgx_rdma_reg_mem(vfgx_rdma_dev *dev, void *addr, size_t len,
		      unsigned access, vfgx_rdma_mr **out);
void vfgx_rdma_dereg(vfgx_rdma_mr *mr);
const struct vfgx_rdma_mr_info *vfgx_rdma_mr_info(const vfgx_rdma_mr *mr);
/* CPU pointer to the registered memory, or NULL for GPU memory. */
void *vfgx_rdma_mr_cpu_addr(const vfgx_rdma_mr *mr);
struct ibv_mr *vfgx_rdma_mr_ibv(const vfgx_rdma_mr *mr);

/* ---------------------------------------------------------- queue pairs */

enum vfgx_rdma_qp_type {
	VFGX_RDMA_RC = 0, /* reliable connected: send/recv, WRITE, READ, atomics */
	VFGX_RDMA_UD = 1, /* unreliable datagram: send/recv of at most the path
			     MTU to the one peer it was connected to */
};

/* UD receives: the first 40 bytes of every receive buffer are reserved for
 * the GRH; the payload starts there and byte_len excludes it. */
#define VFGX_RDMA_GRH_BYTES 40
/* Q_Key of vfgx UD queue pairs (rdma_cm's RDMA_UDP_QKEY). */
#define VFGX_RDMA_UD_QKEY 0x01234567u

struct vfgx_rdma_qp_conf {
	uint32_t argsz;              /* sizeof(struct vfgx_rdma_qp_conf) */
	enum vfgx_rdma_qp_type type; /* default RC */
	uint32_t max_send_wr;        /* 0: 256 */
	uint32_t max_recv_wr;        /* 0: 256 */
	uint32_t max_sge;            /* 0: 1 */
	uint32_t max_inline;         /* 0: 64; data this short is sent inline */
	uint8_t timeout;             /* IB ack timeout exponent, 0: 14 (67 ms) */
	uint8_t retry_cnt;           /* 0: 7 */
	uint8_t rnr_retry;           /* 0: 7 (infinite) */
};

/*
 * What one side tells the other to connect a QP by hand (raw exchange, used
 * by the exposed-buffer layer's discovery) and which memory it exposes.
 * All fields host byte order; serialize explicitly when sending.
 */
struct vfgx_rdma_endpoint {
	uint32_t qpn;
	uint32_t psn;    /* 24 bits */
	uint8_t gid[16]; /* RoCE / global address; zero on IB without GRH */
	uint16_t lid;    /* InfiniBand only; 0 on RoCE */
	uint8_t port;
	uint8_t mtu;     /* enum ibv_mtu of the sender's active port */
	uint32_t qkey;   /* UD only; 0 means VFGX_RDMA_UD_QKEY */
	/* exposed region (0/0/0 when none) */
	uint64_t addr;
	uint32_t rkey;
	uint64_t len;
};

/* Create an RC (or, with conf->type VFGX_RDMA_UD, a UD) queue pair on dev
 * with its own send and receive completion queues, in state INIT.  Connect
 * it with vfgx_rdma_qp_connect() after exchanging endpoints.  The QP is
 * used by one thread at a time. */
int vfgx_rdma_qp_create(vfgx_rdma_dev *dev,
			const struct vfgx_rdma_qp_conf *conf,
			vfgx_rdma_qp **out);
/* Fill ep with this QP's qpn/psn/gid/lid/port/mtu and, when mr is not
 * NULL, addr/rkey/len of mr. */
int vfgx_rdma_qp_endpoint(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr,
			  struct vfgx_rdma_endpoint *ep);
/* Move an INIT QP to RTR then RTS against the remote endpoint.  The path
 * MTU is the smaller of both ends'.  A UD QP gets an address handle for
 * the remote gid/lid and sends every datagram to its qpn/qkey. */
int vfgx_rdma_qp_connect(vfgx_rdma_qp *qp,
			 const struct vfgx_rdma_endpoint *remote);
enum vfgx_rdma_qp_type vfgx_rdma_qp_type(const vfgx_rdma_qp *qp);
/* Largest datagram a connected UD QP sends: the path MTU in bytes (RC: 0,
 * no limit). */
uint32_t vfgx_rdma_qp_max_msg(const vfgx_rdma_qp *qp);
void vfgx_rdma_qp_destroy(vfgx_rdma_qp *qp);

/*
 * rdma_cm connection, the default way to connect.  The client resolves
 * host:port (a numeric address or name), creates a QP on dev (which must
 * be the device the route leaves by: -EXDEV otherwise, naming both), and
 * connects.  mine (may be NULL) is sent to the peer in the connection's
 * private data (addr/rkey/len only); the peer's is returned in theirs
 * (may be NULL).  timeout_ms bounds each step; a refused connection is
 * -ECONNREFUSED with a one-line detail, no peer in time -ETIMEDOUT.
 */
int vfgx_rdma_connect(vfgx_rdma_dev *dev, const char *host, uint16_t port,
		      const struct vfgx_rdma_qp_conf *conf,
		      const struct vfgx_rdma_endpoint *mine,
		      struct vfgx_rdma_endpoint *theirs, int timeout_ms,
		      vfgx_rdma_qp **out);
/* Listen on addr:port (addr NULL or "0.0.0.0": all) for RC connections. */
int vfgx_rdma_listen(vfgx_ctx *ctx, const char *addr, uint16_t port,
		     vfgx_rdma_listener **out);
/* The same for QPs of the given type: UD uses rdma_cm's UDP port space
 * (RDMA_PS_UDP), where accept answers the peer's request (SIDR) and the
 * peer's qpn and gid travel in the private data. */
int vfgx_rdma_listen_type(vfgx_ctx *ctx, const char *addr, uint16_t port,
			  enum vfgx_rdma_qp_type type,
			  vfgx_rdma_listener **out);
/* The port actually bound (useful with port 0). */
uint16_t vfgx_rdma_listener_port(const vfgx_rdma_listener *l);
/* Wait up to timeout_ms (-1: forever) for one connection request, create
 * its QP on dev and accept it.  mine/theirs as in vfgx_rdma_connect(). */
int vfgx_rdma_accept(vfgx_rdma_listener *l, vfgx_rdma_dev *dev,
		     const struct vfgx_rdma_qp_conf *conf,
		     const struct vfgx_rdma_endpoint *mine,
		     struct vfgx_rdma_endpoint *theirs, int timeout_ms,
		     vfgx_rdma_qp **out);
void vfgx_rdma_listener_close(vfgx_rdma_listener *l);

struct ibv_qp *vfgx_rdma_qp_ibv(const vfgx_rdma_qp *qp);
struct ibv_cq *vfgx_rdma_qp_send_cq(const vfgx_rdma_qp *qp);
struct ibv_cq *vfgx_rdma_qp_recv_cq(const vfgx_rdma_qp *qp);
vfgx_rdma_dev *vfgx_rdma_qp_dev(const vfgx_rdma_qp *qp);

/* ------------------------------------------------------ post and poll */

/* Flags for posting. */
#define VFGX_RDMA_UNSIGNALED 0x1 /* no completion unless it fails */
#define VFGX_RDMA_FENCE 0x2      /* start only after earlier READs/atomics
				    on this QP completed (IBV_SEND_FENCE) */
#define VFGX_RDMA_INLINE 0x4     /* copy data into the WQE (len <= max_inline) */

enum vfgx_rdma_op {
	VFGX_RDMA_OP_SEND = 0,
	VFGX_RDMA_OP_RECV,
	VFGX_RDMA_OP_RECV_IMM, /* receive completion of a WRITE_WITH_IMM */
	VFGX_RDMA_OP_WRITE,
	VFGX_RDMA_OP_READ,
	VFGX_RDMA_OP_CAS,
	VFGX_RDMA_OP_OTHER,
};

/* One completion. */
struct vfgx_rdma_wc {
	uint64_t wr_id;
	int status;          /* 0, or a negative errno mapped from ibv status:
				-EACCES remote access error (bad rkey/range),
				-ECONNRESET retry exceeded / flushed (peer
				gone), -EIO others */
	uint32_t ibv_status; /* enum ibv_wc_status as reported */
	enum vfgx_rdma_op op;
	uint32_t byte_len;   /* received bytes (receives) */
	uint32_t imm;        /* immediate data, host order (has_imm) */
	bool has_imm;
};

/* Two-sided.  buf must lie inside mr.  On a UD QP a send longer than
 * vfgx_rdma_qp_max_msg() is refused with -EMSGSIZE, and receive buffers
 * start with VFGX_RDMA_GRH_BYTES reserved bytes. */
int vfgx_rdma_post_send(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr,
			const void *buf, uint32_t len, uint64_t wr_id,
			unsigned flags);
int vfgx_rdma_post_recv(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, void *buf,
			uint32_t len, uint64_t wr_id);

/*
 * One-sided operations.  Local memory is given as (mr, offset); remote
 * memory as (raddr, rkey), e.g. from a vfgx_rdma_endpoint.  All return 0
 * once posted (-ENOSPC: send queue full, poll first), completion comes on
 * the send CQ.  write_imm also consumes a posted receive at the peer,
 * which gets a RECV_IMM completion carrying imm.  cas compares the 8-byte
 * remote word at raddr (8-byte aligned) with compare and, if equal,
 * stores swap; the old value lands in the 8 local bytes at (mr, loff),
 * in host byte order once the completion arrived.
 */
int vfgx_rdma_write(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
		    uint64_t raddr, uint32_t rkey, uint32_t len, uint64_t wr_id,
		    unsigned flags);
int vfgx_rdma_write_imm(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
			uint64_t raddr, uint32_t rkey, uint32_t len,
			uint32_t imm, uint64_t wr_id, unsigned flags);
/*
 * Several RDMA WRITEs (or WRITE_WITH_IMMs) posted with one ibv_post_send,
 * i.e. one doorbell, executed in list order like separate posts.  Each
 * entry as for vfgx_rdma_write(); -ENOSPC (nothing posted) unless the send
 * queue has room for all n; on a post failure the entries before the
 * failing one were posted and will complete.
 */
#define VFGX_RDMA_LIST_MAX 8
struct vfgx_rdma_write_wr {
	const vfgx_rdma_mr *mr;
	size_t loff;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t len;
	uint64_t wr_id;
	unsigned flags;  /* VFGX_RDMA_UNSIGNALED / FENCE / INLINE */
	bool with_imm;   /* WRITE_WITH_IMM carrying imm */
	uint32_t imm;
};
int vfgx_rdma_write_list(vfgx_rdma_qp *qp, const struct vfgx_rdma_write_wr *w,
			 unsigned n);
int vfgx_rdma_read(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
		   uint64_t raddr, uint32_t rkey, uint32_t len, uint64_t wr_id,
		   unsigned flags);
int vfgx_rdma_cas(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
		  uint64_t raddr, uint32_t rkey, uint64_t compare,
		  uint64_t swap, uint64_t wr_id, unsigned flags);

/* Poll without waiting: returns the number of completions (0..max) from
 * the send (recv false) or receive (recv true) CQ, or a negative errno. */
int vfgx_rdma_poll(vfgx_rdma_qp *qp, bool recv, struct vfgx_rdma_wc *wc,
		   int max);
/*
 * Wait up to timeout_ms (-1: forever) for at least one completion; returns
 * the count, -ETIMEDOUT (with a detail naming the QP and how many sends
 * were outstanding), or -ECONNRESET when the QP went to the error state
 * or rdma_cm reported the peer disconnected.  Busy-polls the CQ.
 */
int vfgx_rdma_wait(vfgx_rdma_qp *qp, bool recv, struct vfgx_rdma_wc *wc,
		   int max, int timeout_ms);
/*
 * Fence: wait until every signaled send-side operation posted so far has
 * completed.  Returns 0, the first failed completion's status (with a
 * detail: "rxe0 qp 17: WRITE wr 5: remote access error (bad rkey or
 * range)"), or -ETIMEDOUT.
 */
int vfgx_rdma_fence(vfgx_rdma_qp *qp, int timeout_ms);
/* Post + fence in one call: the simple blocking forms. */
int vfgx_rdma_write_sync(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr,
			 size_t loff, uint64_t raddr, uint32_t rkey,
			 uint32_t len, int timeout_ms);
int vfgx_rdma_read_sync(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
			uint64_t raddr, uint32_t rkey, uint32_t len,
			int timeout_ms);
/* Returns 0 and the old remote value in *old. */
int vfgx_rdma_cas_sync(vfgx_rdma_qp *qp, const vfgx_rdma_mr *mr, size_t loff,
		       uint64_t raddr, uint32_t rkey, uint64_t compare,
		       uint64_t swap, uint64_t *old, int timeout_ms);
/* Signaled send-side operations posted and not yet completed. */
uint32_t vfgx_rdma_qp_outstanding(const vfgx_rdma_qp *qp);

/* --- the RDMA port's typed options --------------------------------------
 * (vfgx_port_conf.backend_opts; YAML: interfaces[].rdma).  Defaults in
 * brackets.  May grow at the end: argsz. */
enum vfgx_rdma_role { VFGX_RDMA_CLIENT = 0, VFGX_RDMA_SERVER = 1 };
/* send: SENDs into posted receives; ring: each side exposes a message
 * ring (vfgx/eba.h) and the peer WRITEs records into it, one-sided (RC) */
enum vfgx_rdma_port_mode { VFGX_RDMA_MODE_SEND = 0, VFGX_RDMA_MODE_RING = 1 };

struct vfgx_rdma_opts {
	struct vfgx_backend_opts hdr; /* argsz, backend "rdma": vfgx_rdma_opts_default sets both */
	const char *device;       /* [NULL: the port's address] RDMA device */
	const char *peer;         /* required: "host:port" (client: the server; server: listen) */
	uint32_t port;            /* [1] device port, 1..255 */
	uint32_t gid_index;       /* [1000: the device's IPv4-mapped GID] 0..1000 */
	uint32_t role;            /* [client] enum vfgx_rdma_role */
	uint32_t recv_depth;      /* [256] posted receives, 1..4096 */
	uint32_t timeout_ms;      /* [5000] connection set-up, 1..3600000 */
	uint32_t memory_fallback; /* [host] 0 host, 1 fail: when GPU memory cannot be registered */
	uint32_t qp_type;         /* [rc] enum vfgx_rdma_qp_type */
	uint32_t mode;            /* [send] enum vfgx_rdma_port_mode */
	uint32_t ring_bytes;      /* [4 MiB] ring mode: the exposed ring, a
				   * power of two, 4 KiB..1 GiB */
	uint32_t connect_timeout_ms; /* [10000] client: a refused connect (no
				      * listener yet) tried again until this
				      * long after the first; 0: once */
};

/* The defaults and the header; a loaded config has the interfaces[].rdma
 * section parsed into these at load (vfgx_iface_config.backend_opts). */
void vfgx_rdma_opts_default(struct vfgx_rdma_opts *o);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
