/* vfgx/send.h - a paced stream out of one of a config's interfaces: the
 * sender `vfgx send` is a client of.  The source is a port read like any
 * other: the loopback generator (the traffic model, faults and sequence
 * header of `vfgx run`'s) or a pcap file (recorded timing, loops).  Each
 * burst waits for its turn in a token bucket (rate_pps / rate_bps), then
 * goes out with tx_burst; socket and rdma ports get the UDP payload,
 * frame ports the whole frame; replayed frames are copied straight into a
 * DPDK port's tx buffers instead.  With txtime each packet also carries
 * its launch time from the same schedule (SO_TXTIME, the ETF qdisc holds
 * it).  With send.format the generator's packets go out in a producer's
 * profile (RTP, RFC 4175 video, VITA-49, eCPRI, SPEAD, VDIF, GNU Radio's
 * UDP sink), each written from the flow and sequence the generator gave
 * (vfgx_fmt_encode).  docs/send.md.
 *
 * Thread-safety: one thread drives a sender (vfgx_sender_run sends on
 * the calling thread); vfgx_sender_interrupt may be called from any
 * thread or a signal handler. */
#ifndef VFGX_SEND_H
#define VFGX_SEND_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "core.h"
#include "format.h"
#include "metrics.h"
#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

struct vfgx_loopback_opts; /* vfgx/loopback.h */
struct vfgx_pcap_opts;     /* vfgx/pcap.h */

enum vfgx_send_source {
	VFGX_SEND_GENERATOR = 0, /* send.generator: the loopback generator */
	VFGX_SEND_PCAP = 1,      /* send.pcap: a pcap file */
};

/* The send: section (docs/send.md); defaults in brackets.  The struct may
 * grow at the end: argsz says which version. */
struct vfgx_send_opts {
	uint32_t argsz;          /* sizeof(struct vfgx_send_opts) */
	uint32_t source;         /* [generator] enum vfgx_send_source */
	const char *interface;   /* [NULL: the first] interfaces[].name */
	double rate_pps;         /* [0: no limit] all queues together */
	double rate_bps;         /* [0: no limit] */
	uint32_t burst;          /* [32] packets per tx_burst, 1..1024 */
	double duration_s;       /* [0: until the source ends] */
	uint32_t stall_ms;       /* [1000] no progress this long: the burst's
				  * rest is dropped */
	const char *memory_region; /* [NULL] the generator's frames */
	bool txtime;             /* [false] launch times via SO_TXTIME */
	double txtime_lead_us;   /* [1000] launch time = schedule + this */
	double spin_us;          /* [1000] the last this much of a wait spun */
	uint32_t sched_priority; /* [0: not] the sending thread SCHED_FIFO */
	/* the source's options (send.generator: the loopback port's,
	 * vfgx/loopback.h; send.pcap: the pcap port's, vfgx/pcap.h), or
	 * [NULL] its defaults */
	const struct vfgx_loopback_opts *generator;
	const struct vfgx_pcap_opts *pcap;
	const char *format_profile;  /* [NULL] a built-in profile (--format);
				      * with format_desc, the same profile */
	/* [NULL: vfgx, the frames as generated] the profile the generator's
	 * packets go out in (send.format: the keys of pipeline.format) */
	const struct vfgx_format *format_desc;
	/* [NULL: the defaults] the values written in its fields (send.header) */
	const struct vfgx_fmt_send *header_values;
};

void vfgx_send_opts_default(struct vfgx_send_opts *o);
/* The config's send: section (absent: the defaults), generator, pcap,
 * format and header included, typed in memory of cfg; 0 or -EINVAL with
 * the place in vfgx_last_error. */
int vfgx_send_opts_from_config(const struct vfgx_config *cfg, struct vfgx_send_opts *o);

/* Why a packet the source gave was not sent. */
enum vfgx_send_drop {
	VFGX_SEND_DROP_STALLED = 0,  /* stall_ms without progress */
	VFGX_SEND_DROP_TX_ERROR,     /* tx_burst failed */
	VFGX_SEND_DROP_NOT_UDP,      /* a payload port and a frame not UDP */
	VFGX_SEND_DROP_TXTIME_MISSED, /* the qdisc found its launch time past */
	VFGX_SEND_DROP_TXTIME_INVALID, /* the qdisc refused its launch time */
	VFGX_SEND_DROP_ENCODE,       /* send.format: no generator frame to
				      * write the profile from */
	VFGX_SEND_DROP_MAX,
};
/* "stalled", "tx_error", "not_udp", "txtime_missed", "txtime_invalid",
 * "encode" */
const char *vfgx_send_drop_name(enum vfgx_send_drop d);

typedef struct vfgx_sender vfgx_sender;

/* Open cfg's interface (o->interface, else the first) and the source;
 * txtime enabled where asked (-EOPNOTSUPP: a backend without it; on a
 * host or device that cannot, the report's txtime_off says why and the
 * token bucket alone paces).  cfg must outlive the sender.  o NULL: the
 * config's send: section.  -EINVAL: the config's or the options' fault. */
int vfgx_sender_create(vfgx_ctx *ctx, const struct vfgx_config *cfg,
		       const struct vfgx_send_opts *o, vfgx_sender **out);

/* What vfgx_sender_run calls once a second, from the sending thread. */
struct vfgx_send_progress {
	uint64_t packets, bytes, drops;
};
typedef void (*vfgx_send_progress_fn)(void *user, const struct vfgx_send_progress *p);

struct vfgx_send_run {
	uint32_t argsz;          /* sizeof(struct vfgx_send_run) */
	vfgx_metrics *metrics;   /* NULL, or an endpoint fed the tx queues'
				  * counters once a second */
	vfgx_send_progress_fn progress; /* NULL: none */
	void *progress_user;
};

/* Send on the calling thread until the source ends, duration_s, an
 * error or vfgx_sender_interrupt.  0; the error, if any, is in the
 * report (the run ran and has one). */
int vfgx_sender_run(vfgx_sender *s, const struct vfgx_send_run *args);
void vfgx_sender_interrupt(vfgx_sender *s);
vfgx_port *vfgx_sender_port(vfgx_sender *s);

struct vfgx_send_report {
	uint32_t argsz;          /* the caller sets sizeof; the library fills */
	uint64_t packets, bytes; /* sent (refused launch times taken out) */
	uint64_t drops[VFGX_SEND_DROP_MAX];
	uint64_t port_drops[VFGX_DROP_MAX]; /* the out port's tx queues */
	uint64_t tx_waits;       /* tx_burst took nothing: retried */
	double seconds, pps, bps; /* over the whole run */
	bool paced;
	double sched_pps, sched_bps; /* paced: achieved over the schedule */
	double rate_error_pct;   /* paced: achieved vs asked */
	double gap_err_p50_ns, gap_err_p99_ns, gap_err_max_ns;
	uint64_t gaps;
	bool txtime;             /* launch times in use */
	const char *txtime_off;  /* txtime asked but not in use: why, or "" */
	const char *txtime_device; /* the route's device ("" when off) */
	int32_t txtime_delta_ns;
	uint64_t txtime_sent, txtime_missed, txtime_invalid;
	bool fifo;               /* the sending thread ran SCHED_FIFO */
	const char *sched_off;   /* sched_priority asked but refused: why, or "" */
	bool tx_in_place;        /* replayed frames copied into tx buffers */
	long csw_involuntary, csw_voluntary; /* of the sending thread */
	struct vfgx_source_report source;
	bool interrupted;
	int error;               /* 0, or what stopped the run */
	const char *error_msg;   /* "" or its line */
	const char *format;      /* the profile sent ("vfgx": as generated) */
};

int vfgx_sender_report(vfgx_sender *s, struct vfgx_send_report *r);
void vfgx_sender_destroy(vfgx_sender *s);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
