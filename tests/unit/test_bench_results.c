/* test_bench_results.c - bench/results.c: the median's order-statistic
 * confidence interval and target lines computed from rounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "lo_rps.h"
#include "pace_rx.h"
#include "results.h"

static void stat_interval_from_binomial(void **state)
{
	double v[20];
	struct bench_stat s;

	(void)state;
	/* shuffled 1..20: the interval is x(6)..x(15), coverage
	 * 1 - 2 P(Bin(20, 1/2) <= 5) = 1 - 2 * 21700/1048576 */
	for (int i = 0; i < 20; i++)
		v[i] = (double)((i * 7) % 20 + 1);
	assert_int_equal(bench_stat(v, 20, &s), 0);
	assert_int_equal(s.n, 20);
	assert_true(s.median == 10.5 && s.min == 1 && s.max == 20);
	assert_true(s.lo == 6 && s.hi == 15);
	assert_true(s.level > 0.9586 && s.level < 0.9587);
	assert_true(v[0] == 1 && v[1] == 8); /* input untouched */
}

static void stat_few_rounds_is_min_max(void **state)
{
	double v5[] = { 5, 1, 4, 2, 3 }, v6[] = { 6, 1, 5, 2, 4, 3 };
	struct bench_stat s;

	(void)state;
	assert_int_equal(bench_stat(v5, 5, &s), 0);
	/* 5 rounds cannot give 95%: min..max, coverage 1 - 2/32 */
	assert_true(s.lo == 1 && s.hi == 5 && s.median == 3);
	assert_true(s.level == 1 - 2.0 / 32);
	assert_int_equal(bench_stat(v6, 6, &s), 0);
	assert_true(s.lo == 1 && s.hi == 6 && s.level == 1 - 2.0 / 64);
	assert_int_equal(bench_stat(v6, 0, &s), -1);
}

static int target_line(const struct bench_target_rounds *t, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");
	int met;

	assert_non_null(f);
	met = bench_target_rounds(f, t);
	fclose(f);
	return met;
}

static void target_met_needs_whole_interval(void **state)
{
	/* paired rounds: ratios 0.98 1.00 1.01 1.02 1.03 1.04 1.05: the median
	 * ratio 1.02 is above 0.99, but 7 rounds give min..max (98.4%), whose
	 * low end 0.98 is not */
	double m[] = { 98, 100, 101, 102, 103, 104, 105 };
	double r[] = { 100, 100, 100, 100, 100, 100, 100 };
	struct bench_target_rounds t = {
		.name = "x", .measured = m, .reference = r, .n = 7,
		.goal = 0.99, .goal_on_ratio = true, .higher_better = true,
	};
	char buf[512];

	(void)state;
	assert_int_equal(target_line(&t, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "target: x measured=102 reference=100 ratio=1.0200 goal=0.99 met=no rounds=7"));
	assert_non_null(strstr(buf, "interval=[0.98,1.05]"));
	assert_non_null(strstr(buf, "on=ratio"));
	m[0] = 99.5;
	assert_int_equal(target_line(&t, buf, sizeof(buf)), 1);
	assert_non_null(strstr(buf, "met=yes"));
}

static void target_absolute_and_lower_better(void **state)
{
	double m[] = { 12, 11, 30, 10.5, 13, 12.5, 11.5 };
	struct bench_target_rounds t = {
		.name = "lat", .measured = m, .n = 7, .goal = 20, .higher_better = false,
	};
	char buf[512];

	(void)state;
	/* one round at 30 puts the interval's high end over the goal of 20 */
	assert_int_equal(target_line(&t, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "measured=12 reference=0 "));
	assert_non_null(strstr(buf, "interval=[10.5,30]"));
	assert_non_null(strstr(buf, "on=measured"));
	/* a goal on a ratio needs a reference */
	t.goal_on_ratio = true;
	assert_int_equal(target_line(&t, buf, sizeof(buf)), -1);
}

/* issue #41: a latency class with no round where both sides ran printed
 * "measured=0 reference=0 ratio=0.000 goal=1 met=yes" (0 <= 1) */
static void target_without_rounds_is_not_met(void **state)
{
	double m[] = { 0 }, r[] = { 0 };
	struct bench_target_rounds t = {
		.name = "lat", .measured = m, .reference = r, .n = 0,
		.goal = 1.05, .goal_on_ratio = true, .higher_better = false,
	};
	char buf[512] = "";

	(void)state;
	assert_int_equal(target_line(&t, buf, sizeof(buf)), -1);
	assert_non_null(strstr(buf, "target: lat measured=none reference=none ratio=none goal=1.05 met=no (no round measured)"));
	assert_null(strstr(buf, "met=yes"));
	/* a round whose reference gave nothing is no ratio either: 0 / 0
	 * would be a ratio of 0, under any upper goal */
	t.n = 1;
	buf[0] = '\0';
	assert_int_equal(target_line(&t, buf, sizeof(buf)), -1);
	assert_non_null(strstr(buf, "met=no (a round without a reference above 0: no ratio)"));
	assert_null(strstr(buf, "met=yes"));
	r[0] = 10;
	assert_int_equal(target_line(&t, buf, sizeof(buf)), 1);
	assert_non_null(strstr(buf, "measured=0 reference=10 ratio=0.0000 goal=1.05 met=yes rounds=1"));
}

static void target_unmeasured_line(void **state)
{
	char buf[256];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	(void)state;
	assert_non_null(f);
	bench_target_unmeasured(f, "x_usec", 1.05, "no round where both ran");
	fclose(f);
	assert_string_equal(buf, "target: x_usec measured=none reference=none ratio=none goal=1.05 met=no (no round where both ran)\n");
}

/* issue #41: every results file names the commit it measured */
static void results_name_their_commit(void **state)
{
	char dir[] = "/tmp/test_bench_results-XXXXXX", path[512], text[4096] = "", want[128];
	const char *c = bench_commit();
	FILE *f;
	size_t n;

	(void)state;
	assert_true(c && *c);
	assert_true(!strcmp(c, "unknown") || strspn(c, "0123456789abcdef") >= 7);
	assert_non_null(mkdtemp(dir));
	f = bench_results_open(dir, "x", "title", path, sizeof(path));
	assert_non_null(f);
	fclose(f);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	snprintf(want, sizeof(want), "\n- commit: %s\n", c);
	assert_non_null(strstr(text, want));
	unlink(path);
	rmdir(dir);
}

/* issue #44: --out is checked before the run, nothing written or cut */
static void out_checked_before_the_run(void **state)
{
	char dir[] = "/tmp/test_bench_results-XXXXXX", path[600], sub[600];
	struct stat st;
	FILE *f;

	(void)state;
	assert_int_equal(bench_out_check("/dev/null/x", "pipeline-cpu"), 1);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(bench_out_check(dir, "pipeline-cpu"), 0);
	snprintf(path, sizeof(path), "%s/pipeline-cpu.md", dir);
	assert_int_equal(stat(path, &st), -1); /* the probe left nothing */
	/* an existing results file is kept whole */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("old", f);
	fclose(f);
	assert_int_equal(bench_out_check(dir, "pipeline-cpu"), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 3);
	/* a missing directory is made, as bench_results_open does */
	snprintf(sub, sizeof(sub), "%s/new", dir);
	assert_int_equal(bench_out_check(sub, "x"), 0);
	assert_int_equal(stat(sub, &st), 0);
	rmdir(sub);
	/* a file where the directory should be */
	assert_int_equal(bench_out_check(path, "x"), 1);
	if (geteuid() != 0) { /* root writes anywhere */
		chmod(dir, 0555);
		assert_int_equal(bench_out_check(dir, "y"), 1);
		chmod(dir, 0755);
	}
	unlink(path);
	rmdir(dir);
}

/* bench/pace_rx.c: the pacing rows' numbers from a receiver's timestamps,
 * against values worked out by hand.  Bursts (messages) of 4 datagrams at
 * 1000 datagrams/s: one every 4 ms. */
static void pace_rx_on_schedule(void **state)
{
	uint64_t ts[10];
	uint32_t cnt[10];
	struct pace_rx_stats st;

	(void)state;
	for (int i = 0; i < 10; i++) {
		ts[i] = 1000000000ull + (uint64_t)i * 4000000ull;
		cnt[i] = 4;
	}
	assert_int_equal(pace_rx_compute(ts, cnt, 10, 1000, &st), 0);
	assert_int_equal(st.messages, 10);
	assert_int_equal(st.datagrams, 40);
	assert_true(st.rate_pps > 999.999 && st.rate_pps < 1000.001);
	assert_true(st.rate_error_pct > -1e-6 && st.rate_error_pct < 1e-6);
	assert_true(st.gap_p50_ns < 1e-3 && st.gap_p99_ns < 1e-3 && st.gap_max_ns < 1e-3);
}

/* one burst 100 us late, the next back on schedule (a sender that catches
 * up): the average rate is exact, the gaps are not */
static void pace_rx_late_burst_shows_in_gaps(void **state)
{
	uint64_t ts[101];
	uint32_t cnt[101];
	struct pace_rx_stats st;

	(void)state;
	for (int i = 0; i < 101; i++) {
		ts[i] = (uint64_t)i * 4000000ull + (i == 50 ? 100000ull : 0);
		cnt[i] = 4;
	}
	assert_int_equal(pace_rx_compute(ts, cnt, 101, 1000, &st), 0);
	assert_true(st.rate_error_pct > -1e-6 && st.rate_error_pct < 1e-6);
	/* 100 gaps: 98 of 0, two of 100 us; the 99th smallest is 100 us */
	assert_true(st.gap_p50_ns < 1e-3);
	assert_true(st.gap_p99_ns > 99999.9 && st.gap_p99_ns < 100000.1);
	assert_true(st.gap_max_ns > 99999.9 && st.gap_max_ns < 100000.1);
}

/* every gap 1% long: 990.1 datagrams/s, -0.990%; a short burst is owed a
 * shorter gap */
static void pace_rx_slow_sender_fails_rate(void **state)
{
	uint64_t ts[10], t2[3] = { 0, 2000000, 6000000 };
	uint32_t cnt[10], c2[3] = { 2, 4, 4 };
	struct pace_rx_stats st;

	(void)state;
	for (int i = 0; i < 10; i++) {
		ts[i] = (uint64_t)i * 4040000ull;
		cnt[i] = 4;
	}
	assert_int_equal(pace_rx_compute(ts, cnt, 10, 1000, &st), 0);
	assert_true(st.rate_pps > 990.09 && st.rate_pps < 990.10);
	assert_true(st.rate_error_pct > -0.991 && st.rate_error_pct < -0.990);
	assert_true(st.gap_p99_ns > 39999.9 && st.gap_p99_ns < 40000.1);
	/* 2 then 4 datagrams: 2 ms then 4 ms, on time; 6 in 6 ms */
	assert_int_equal(pace_rx_compute(t2, c2, 3, 1000, &st), 0);
	assert_true(st.gap_max_ns < 1e-3);
	assert_true(st.rate_pps > 999.999 && st.rate_pps < 1000.001);
	/* fewer than three messages, or no rate asked: nothing to compute */
	assert_int_equal(pace_rx_compute(ts, cnt, 2, 1000, &st), -1);
	assert_int_equal(pace_rx_compute(ts, cnt, 10, 0, &st), -1);
}

/* bench/lo_rps.c: a saturated receiver spends its CPU receiving and loses
 * datagrams */
static void saturated_needs_busy_and_loss(void **state)
{
	(void)state;
	assert_true(udp_saturated(0.99, 1000, 980));
	assert_true(udp_saturated(0.90, 1000, 990));
	assert_false(udp_saturated(0.80, 1000, 500));  /* the CPU on other work */
	assert_false(udp_saturated(0.99, 1000, 995));  /* kept up: 0.5% lost */
	assert_false(udp_saturated(-1, 1000, 500));    /* busy unknown */
	assert_false(udp_saturated(0.99, 0, 0));       /* nothing offered */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stat_interval_from_binomial),
		cmocka_unit_test(stat_few_rounds_is_min_max),
		cmocka_unit_test(target_met_needs_whole_interval),
		cmocka_unit_test(target_absolute_and_lower_better),
		cmocka_unit_test(target_without_rounds_is_not_met),
		cmocka_unit_test(target_unmeasured_line),
		cmocka_unit_test(results_name_their_commit),
		cmocka_unit_test(out_checked_before_the_run),
		cmocka_unit_test(pace_rx_on_schedule),
		cmocka_unit_test(pace_rx_late_burst_shows_in_gaps),
		cmocka_unit_test(pace_rx_slow_sender_fails_rate),
		cmocka_unit_test(saturated_needs_busy_and_loss),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
