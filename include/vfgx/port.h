/* vfgx/port.h - one API over every backend (loopback, socket, AF_XDP, DPDK,
 * RDMA): open a port from an interface config, receive and send bursts,
 * release received buffers in bulk, read per-queue stats. */
#ifndef VFGX_PORT_H
#define VFGX_PORT_H

#include <stdint.h>

#include "config.h"
#include "core.h"
#include "mem.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

typedef struct vfgx_port vfgx_port;

/*
 * One received (or to-be-sent) packet.  data points into backend memory
 * (a pool buffer, an mbuf, a UMEM frame); handle is the backend's own token
 * for giving it back with vfgx_port_release().  data may be a GPU address
 * when the queue's region is GPU memory (then flags has VFGX_PKT_GPU).
 */
struct vfgx_pkt {
	uint8_t *data;
	uint32_t len;
	uint32_t flow;  /* backend's flow hint (RSS hash, stream id), or 0 */
	uint64_t ts_ns; /* vfgx_now_ns() at receive / generation */
	void *handle;
	uint16_t queue;
	uint16_t flags;
};

#define VFGX_PKT_GPU 0x1 /* data is a device address */
/* data is already the transport payload (a UDP datagram's payload or one
 * TCP record): the kernel parsed and validated the headers, so the pipeline
 * skips parse/validate/filter and starts at the sequence header. */
#define VFGX_PKT_PAYLOAD 0x2
/* tx: ts_ns is the packet's launch time, on the vfgx_now_ns() clock, for a
 * port whose launch times are on (vfgx_port_txtime_enable). */
#define VFGX_PKT_TXTIME 0x4
/* Bits 0x100 and above are the library's own: a capture (vfgx/capture.h)
 * marks the packets whose buffers it still reads.  Hand packets back to
 * vfgx_port_release with their flags as rx set them. */

/* Why a packet was dropped.  Port-level and pipeline-level reasons share
 * the enum so one stats block describes a queue. */
enum vfgx_drop_reason {
	VFGX_DROP_NOBUFS = 0,    /* pool exhausted (backpressure) */
	VFGX_DROP_RING_FULL,     /* backend ring full */
	VFGX_DROP_TRUNCATED,     /* shorter than its headers say */
	VFGX_DROP_BAD_ETH,       /* not IPv4 (after at most one VLAN tag) */
	VFGX_DROP_BAD_IP,        /* bad version/IHL/length/fragment */
	VFGX_DROP_BAD_IP_CSUM,
	VFGX_DROP_NOT_UDP,
	VFGX_DROP_BAD_UDP,       /* UDP length inconsistent */
	VFGX_DROP_BAD_UDP_CSUM,
	VFGX_DROP_FILTERED,      /* UDP destination port not accepted */
	VFGX_DROP_BAD_APP_HDR,   /* payload shorter than the sequence header */
	VFGX_DROP_BAD_STREAM,    /* stream id >= max_streams, or its stream
				  * was refused a reorder window */
	VFGX_DROP_LATE,          /* sequence already delivered */
	VFGX_DROP_DUPLICATE,     /* sequence already held in the window */
	VFGX_DROP_TOO_BIG,       /* payload larger than a reorder slot */
	VFGX_DROP_USER,          /* user stage said drop */
	/* the producer's header (pipeline.format, vfgx/format.h) */
	VFGX_DROP_FIELD_OUTSIDE, /* a field or header word past the packet */
	VFGX_DROP_BAD_LENGTH,    /* a length field that disagrees with it */
	VFGX_DROP_MISMATCH,      /* magic, version, type or match differs */
	VFGX_DROP_OFFSET_PAST_CHUNK, /* payload would end past its chunk */
	VFGX_DROP_SEGMENT_PAST_FRAME, /* RFC 4175 segment past its frame */
	VFGX_DROP_SEQ_JUMP,      /* sequence beyond the extension's limits */
	VFGX_DROP_USER_PLACE,    /* the user placement function said drop
				  * (vfgx/place.h) */
	VFGX_DROP_MAX
};

const char *vfgx_drop_reason_name(enum vfgx_drop_reason r);

struct vfgx_queue_stats {
	uint64_t rx_packets;
	uint64_t rx_bytes;
	uint64_t tx_packets;
	uint64_t tx_bytes;
	uint64_t drops[VFGX_DROP_MAX];
};

/* A queue's batch_size (YAML rx/tx queues[].batch_size, or a port_conf's
 * burst and rx_bursts/tx_bursts): the most packets one vfgx_port_rx_burst
 * of the queue returns, and the most one backend call of its
 * vfgx_port_tx_burst is handed; 1..VFGX_BATCH_MAX, checked when the port
 * opens.  A caller's burst array of VFGX_BATCH_MAX entries always fits. */
#define VFGX_BATCH_MAX 1024

struct vfgx_port_conf {
	uint32_t argsz;      /* sizeof(struct vfgx_port_conf) */
	const char *name;
	const char *backend; /* "loopback", "socket", "afxdp", "dpdk", "rdma", "pcap" */
	const char *address; /* backend-specific; may be NULL */
	uint16_t nb_rx_queues;
	uint16_t nb_tx_queues;
	uint16_t burst;      /* batch_size of every queue that rx_bursts /
			      * tx_bursts leave 0 (tx: 0 there means no
			      * limit), 1..VFGX_BATCH_MAX */
	/* nb_rx_queues pools (a NULL entry: the backend creates its own for
	 * that queue), or NULL for all. */
	vfgx_pool *const *rx_pools;
	/* The backend's typed options (&o.hdr of a struct vfgx_loopback_opts,
	 * vfgx_socket_opts, vfgx_afxdp_opts, vfgx_dpdk_opts, vfgx_rdma_opts or
	 * vfgx_pcap_opts: vfgx/loopback.h, socket.h, afxdp.h, dpdk.h, rdma.h,
	 * pcap.h; a loaded config's vfgx_iface_config.backend_opts), or NULL:
	 * the defaults.  Options for another backend than this port's are
	 * refused with one line. */
	const struct vfgx_backend_opts *backend_opts;
	/* Per queue, nb_rx_queues / nb_tx_queues entries, or NULL; an entry
	 * 0: as burst (rx) / no limit (tx).  rx: a queue's rx_burst returns
	 * at most this many; tx: tx_burst hands the backend at most this many
	 * per call and goes on while it accepts them all. */
	const uint16_t *rx_bursts;
	const uint16_t *tx_bursts;
};

/* Open a port.  -ENOTSUP with a clear message when the backend was not
 * built in, -EINVAL for bad options, errno of the failing system call
 * otherwise.  The port starts receiving when opened. */
int vfgx_port_open(vfgx_ctx *ctx, const struct vfgx_port_conf *conf,
		   vfgx_port **out);
/* Build a port_conf from an interface config, creating the pools its
 * queues name (looked up in cfg->regions); pools are owned by the port. */
int vfgx_port_open_config(vfgx_ctx *ctx, const struct vfgx_config *cfg,
			  const struct vfgx_iface_config *ifc, vfgx_port **out);
void vfgx_port_close(vfgx_port *port);

/*
 * Receive up to max packets from queue q.  Returns the count (0 when none
 * waiting) or a negative errno on a fatal port error.  Thread-safety: one
 * thread per queue; different queues may be polled concurrently.
 */
int vfgx_port_rx_burst(vfgx_port *port, uint16_t q, struct vfgx_pkt *pkts,
		       uint16_t max);
/* Give received packets back to their backend, in bulk.  Same thread as
 * the queue's rx_burst.  On a captured queue, packets the capture's
 * writer has not written yet go back to the backend later, from this
 * queue's own rx_burst or release calls (or vfgx_capture_close). */
void vfgx_port_release(vfgx_port *port, uint16_t q, struct vfgx_pkt *pkts,
		       uint16_t n);
/* Send n packets (data/len from caller memory; the backend copies or
 * references them until it returns).  Returns how many were accepted. */
int vfgx_port_tx_burst(vfgx_port *port, uint16_t q,
		       const struct vfgx_pkt *pkts, uint16_t n);
int vfgx_port_stats(vfgx_port *port, uint16_t q, struct vfgx_queue_stats *st);

const char *vfgx_port_name(const vfgx_port *port);
const char *vfgx_port_backend(const vfgx_port *port);
uint16_t vfgx_port_nb_rx_queues(const vfgx_port *port);
uint16_t vfgx_port_nb_tx_queues(const vfgx_port *port);
/* The most one vfgx_port_rx_burst of queue q returns (its batch_size);
 * 0 for a queue the port lacks. */
uint16_t vfgx_port_rx_batch(const vfgx_port *port, uint16_t q);
/* The largest frame rx queue q hands out (bytes): what the backend's
 * options and the queue's buffers allow (loopback.packet_size, a socket
 * datagram's buffer, a UMEM frame, an mbuf's data room, ...); 0 for a
 * queue the port lacks. */
uint32_t vfgx_port_rx_frame_max(const vfgx_port *port, uint16_t q);
/* The pool rx queue q receives into (read its vfgx_pool_stats on the
 * queue's thread), or NULL when the backend keeps its own buffers. */
vfgx_pool *vfgx_port_rx_pool(const vfgx_port *port, uint16_t q);
/* True when the source is finite and has delivered everything (loopback
 * with a packet count); a live port never ends. */
bool vfgx_port_rx_done(vfgx_port *port, uint16_t q);

/* Expectations a finite source can state about itself, so a run can be
 * checked exactly (what was generated, what was deliberately damaged). */
struct vfgx_source_report {
	bool known;          /* false for live ports */
	uint64_t generated;  /* distinct sequence numbers emitted */
	uint64_t lost;       /* sequence numbers deliberately never sent */
	uint64_t duplicated; /* extra copies sent */
	uint64_t corrupted;  /* packets whose bytes were damaged */
	uint64_t reordered;  /* packets sent out of order */
};
int vfgx_port_source_report(vfgx_port *port, uint16_t q,
			    struct vfgx_source_report *rep);

/* --- launch times on transmit ---------------------------------------------
 *
 * The socket backend (UDP, role client) sends a packet flagged
 * VFGX_PKT_TXTIME with its ts_ns as an SO_TXTIME launch time (CLOCK_TAI,
 * converted from the vfgx_now_ns() clock per burst); the ETF qdisc on the
 * route's device holds it until then.  Packets the qdisc refuses come back
 * on the socket's error queue and are counted by vfgx_port_txtime_stats.
 */
struct vfgx_txtime_info {
	uint32_t argsz;      /* the caller sets sizeof; the library fills */
	const char *device;  /* the route's device (owned by the port) */
	int32_t delta_ns;    /* the ETF qdisc's delta */
	bool deadline_mode;  /* the qdisc's deadline_mode (then launch times
			      * are deadlines) */
	bool offload;        /* the qdisc hands launch times to the NIC */
};
/* Turn launch times on for every tx queue.  0: on (info filled, may be
 * NULL); -EOPNOTSUPP: this backend or configuration has none (UDP socket
 * ports with role client only; the detail says why: AF_XDP sends bypass
 * the qdisc layer), or SO_TXTIME was refused while an ETF qdisc at the
 * device's root would drop every packet sent without one; another
 * negative errno: this host cannot now (no ETF qdisc on the device,
 * setsockopt(SO_TXTIME) refused), the detail says which and the port
 * sends as before.  Before the first tx_burst. */
int vfgx_port_txtime_enable(vfgx_port *port, struct vfgx_txtime_info *info);

struct vfgx_txtime_stats {
	uint32_t argsz;      /* the caller sets sizeof; the library fills */
	uint64_t sent;       /* packets sent with a launch time */
	uint64_t missed;     /* taken, then dropped: the qdisc could not send
			      * them by their launch time (SO_EE_CODE_TXTIME_MISSED) */
	uint64_t invalid;    /* refused on entry: launch time already past or
			      * before one already queued, or a clock or mode
			      * unlike the qdisc's (SO_EE_CODE_TXTIME_INVALID_PARAM) */
	uint64_t missed_bytes, invalid_bytes; /* as tx_bytes counts them */
};
/* Tx queue q's launch-time counters; reads the error reports the kernel
 * queued so far (the queue's tx thread, or after it stopped).  A refused
 * packet is still in tx_packets: the kernel took it before the qdisc
 * dropped it.  -EINVAL when launch times are not on. */
int vfgx_port_txtime_stats(vfgx_port *port, uint16_t q,
			   struct vfgx_txtime_stats *st);

/* Names of the backends compiled into this build, NULL-terminated. */
const char *const *vfgx_port_backends(void);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
