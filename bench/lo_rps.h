/* lo_rps.h - the saturated UDP receive run of `vfgx bench socket`: RPS on
 * the private namespace's loopback moves the kernel's UDP receive work
 * onto the receiver's CPU (as a NIC's interrupt on the receiving core
 * does), and /proc/stat says how busy that CPU was. */
#ifndef VFGX_BENCH_LO_RPS_H
#define VFGX_BENCH_LO_RPS_H

#include <stdbool.h>
#include <stdint.h>

/* After unshare(CLONE_NEWNET): a private mount namespace with sysfs
 * mounted again, so /sys/class/net is this network namespace's.  0 or
 * -errno. */
int lo_rps_prepare(void);
/* Steer lo's receive processing to cpu (-1: off).  0 or -errno. */
int lo_rps_set(int cpu);

struct cpu_sample {
	uint64_t busy, total; /* jiffies */
	uint64_t irq;         /* of busy: hard and soft interrupts */
};
/* One CPU's line of /proc/stat.  0 or -1. */
int cpu_sample(int cpu, struct cpu_sample *s);
/* Busy fraction between two samples (0..1), -1 when unknown. */
double cpu_busy(const struct cpu_sample *a, const struct cpu_sample *b);
/* Interrupt (mostly softirq: the kernel's receive path) fraction between
 * two samples (0..1), -1 when unknown. */
double cpu_irq(const struct cpu_sample *a, const struct cpu_sample *b);

/* A receiver that was the bottleneck of its run: receive work (the
 * receiver's own CPU time plus the kernel's interrupt time on its CPU,
 * as a fraction of the run) >= 90% of its CPU, and >= 1% of the offered
 * datagrams lost (rx_work < 0: unknown, not saturated).  CPU time other
 * processes took does not count: a receiver starved by them is not one
 * that could not keep up. */
bool udp_saturated(double rx_work, double offered, double got);

#endif
