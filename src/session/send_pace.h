/* send_pace.h - the token bucket of the sender (send_pace.c): each burst
 * waits until the packets and bits sent before it are due at the asked
 * rates, so bursts are spread evenly; what it measures is the pacing error
 * the report gives (achieved rate, burst gap error percentiles). */
#ifndef VFGX_SEND_PACE_H
#define VFGX_SEND_PACE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define SEND_PACE_BUCKETS 10000 /* gap error histogram: 100 ns each, to 1 ms */

struct send_pace {
	double rate_pps, rate_bps; /* 0: no limit */
	bool paced;
	uint64_t spin_ns;          /* waits this short are spun, longer ones sleep first */
	uint64_t t0, t_end;
	uint64_t pk, bytes;        /* sent before the current burst */
	uint64_t last_pk, last_bytes; /* of the last burst */
	uint64_t turn_due, turn_at;   /* the turn send_pace_turn() gave */
	uint64_t prev_due, prev_at, last_at;
	uint64_t gaps, err_max;
	uint64_t hist[SEND_PACE_BUCKETS + 1]; /* the last: 1 ms and more */
};

struct send_pace_result {
	bool paced;
	double seconds, pps, bps; /* over the whole run */
	double sched_pps, sched_bps; /* paced: achieved over the schedule */
	double rate_error_pct;    /* paced: achieved vs asked, over the schedule */
	double gap_err_p50_ns, gap_err_p99_ns, gap_err_max_ns;
	uint64_t gaps;
};

void send_pace_start(struct send_pace *p, double rate_pps, double rate_bps, uint64_t spin_ns,
		     uint64_t now);
/* Wait for the next burst's turn: until the packets and bytes sent before
 * it are due, *stop is set, or deadline (vfgx_now_ns() clock; 0: none)
 * passes, whichever comes first.  true: its turn came (at once when not
 * paced); false: stopped or past the deadline first, nothing may go.  The
 * burst is taken from the source only then, so what the source gave is
 * what is sent. */
bool send_pace_turn(struct send_pace *p, uint64_t deadline, volatile sig_atomic_t *stop);
/* The burst that went at the turn: n packets, bytes bytes (n 0: the
 * source had none, the turn stays for the next). */
void send_pace_sent(struct send_pace *p, uint32_t n, uint64_t bytes);
/* When the schedule has the packet that follows pk packets and bytes
 * bytes (vfgx_now_ns() clock): a burst's per-packet launch times. */
uint64_t send_pace_due_at(const struct send_pace *p, uint64_t pk, uint64_t bytes);
void send_pace_end(struct send_pace *p, uint64_t now);
void send_pace_result(const struct send_pace *p, struct send_pace_result *r);

#endif
