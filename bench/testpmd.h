/* testpmd.h - dpdk-testpmd as a benchmark's reference (testpmd.c). */
#ifndef VFGX_BENCH_TESTPMD_H
#define VFGX_BENCH_TESTPMD_H

#include <stdint.h>

struct testpmd_run {
	int main_core, core;  /* testpmd's main lcore and its forwarding one */
	const char *mem_args; /* EAL memory arguments, space-separated */
	double seconds;       /* the window */
	const char *vdev;     /* --vdev */
	const char *netns;    /* run inside this namespace, or NULL */
	int skip;             /* seconds of forwarding before the window */
	const char *fwd;      /* --forward-mode: "rxonly", "txonly" */
	const char *sample;   /* the per-second line measured: "Rx-pps", "Tx-pps" */
	int burst, nb_mbufs;
	const char *extra;    /* one more testpmd argument (e.g. --txpkts=64), or NULL */
	const char *who;      /* the bench, for messages */
};

/* Rate by the wall clock (Mpps) and per second of CPU time the forwarding
 * thread got, packets in the window. */
struct testpmd_rate {
	double wall;
	double cpu;
	uint64_t packets;
};

/* dpdk-testpmd with one forwarding lcore, measured over a steady-state
 * window of o->seconds that starts once it has forwarded for o->skip s
 * (its start-up and its teardown are outside): wall rate = mean of the
 * sample lines printed in the window (one per second), CPU rate = that
 * over the forwarding thread's share of a CPU in the window (the schedstat
 * run time in the window of the testpmd thread that ran most in it).  0, or -errno after a message on stderr. */
int testpmd_measure(const struct testpmd_run *o, struct testpmd_rate *res);

#endif
