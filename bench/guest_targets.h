/* guest_targets.h - which rounds and sizes carry the targets of the QEMU
 * soft-RoCE guest benchmarks (bench/rdma.c, bench/eba.c); header-only so
 * that tests/unit/test_bench_results.c checks the same code. */
#ifndef VFGX_BENCH_GUEST_TARGETS_H
#define VFGX_BENCH_GUEST_TARGETS_H

#include <stdint.h>

/* The rounds that can carry a paired target: both sides ran (value > 0)
 * and both counted at least min_msgs messages in the measured window.
 * Copies their values, in round order, to a[] (measured) and b[]
 * (reference); returns how many. */
static inline int bench_pairs_min_msgs(const double *m, const double *r, const uint64_t *m_n,
				       const uint64_t *r_n, int rounds, uint64_t min_msgs,
				       double *a, double *b)
{
	int n = 0;

	for (int k = 0; k < rounds; k++)
		if (m[k] > 0 && r[k] > 0 && m_n[k] >= min_msgs && r_n[k] >= min_msgs) {
			a[n] = m[k];
			b[n] = r[k];
			n++;
		}
	return n;
}

/* A size class from its sizes' own targets (bench_target_rounds' return:
 * 1 met, 0 not met, -1 not measured): met (1) only when every size met;
 * 0 for no size at all. */
static inline int bench_class_met(const int *size_met, int n)
{
	if (n < 1)
		return 0;
	for (int i = 0; i < n; i++)
		if (size_met[i] != 1)
			return 0;
	return 1;
}

#endif
