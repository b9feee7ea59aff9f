/* pace_rx.h - `vfgx bench send`'s pacing rows measured where a user would
 * look: at a receiver on the far end of a veth pair (its own network
 * namespace), which timestamps every datagram in the kernel as it crosses
 * the pair (SO_TIMESTAMPNS), with UDP GRO on so a GSO burst stays one message.  The rate and the gaps between bursts come from
 * those timestamps, not from the sender's own schedule. */
#ifndef VFGX_BENCH_PACE_RX_H
#define VFGX_BENCH_PACE_RX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What the receiver's timestamps say about a paced sender.  The receiver's
 * socket has UDP GRO on, so a burst sent as one GSO super-datagram arrives
 * as one message with one timestamp (and a burst the kernel drops is
 * dropped whole).  Per message k: its timestamp ts[k] and how many
 * datagrams it held, cnt[k].  rate = (datagrams of every message but the
 * last) / (ts[last] - ts[0]); the gap error after message k is
 * |ts[k+1] - ts[k] - cnt[k] / asked rate|: the time its datagrams should
 * have taken at the asked rate against the time the next burst came. */
struct pace_rx_stats {
	uint64_t datagrams, messages;
	double rate_pps, rate_error_pct; /* signed: below the asked rate < 0 */
	double gap_p50_ns, gap_p99_ns, gap_max_ns;
};

/* From n messages in arrival order (ts non-decreasing, ns).  0, or -1 when
 * fewer than three arrived (no gap to speak of) or asked_pps <= 0. */
int pace_rx_compute(const uint64_t *ts, const uint32_t *cnt, size_t n, double asked_pps,
		    struct pace_rx_stats *st);

/* A veth pair: host_if in this namespace (host_ip), ns_if in namespace ns
 * (ns_ip), static neighbours both ways (no ARP in the measured window),
 * and RPS on ns_if to rps_cpu so the receive side's kernel work runs on
 * the receiver's CPU (-1: left alone).  sink_ip is a neighbour of host_if
 * at sink_mac, which no interface owns: what is sent to it crosses the
 * pair and is discarded by the far end on arrival (not for its MAC), so a
 * sender's rate is its own, never a receiver's. */
struct pace_net {
	char ns[32], host_if[16], ns_if[16], host_ip[20], ns_ip[20], sink_ip[20];
	uint8_t host_mac[6], ns_mac[6], sink_mac[6];
	int up;
};
int pace_net_up(struct pace_net *pn, int rps_cpu);
/* RPS on ns_if to cpu (-1: off).  0 or -1. */
int pace_net_rps(const struct pace_net *pn, int cpu);
void pace_net_down(struct pace_net *pn);

struct pace_rx_shared;
struct pace_rx {
	pid_t pid;
	struct pace_rx_shared *sh;
};
/* Forks the receiver into pn's namespace, bound to ns_ip:port, pinned to
 * cpu; returns once it is bound.  0 or -1 with a message. */
int pace_rx_start(struct pace_rx *r, const struct pace_net *pn, uint16_t port, int cpu);
/* Ends the receiver once its socket is quiet and computes *st.  *drops:
 * messages (whole bursts) the kernel dropped on its socket.  0, or -1 (too
 * few messages, or the receiver failed). */
int pace_rx_stop(struct pace_rx *r, double asked_pps, struct pace_rx_stats *st,
		 uint64_t *drops);

#endif
