/* test_bench_results.c - bench/results.c: the median's order-statistic
 * confidence interval and target lines computed from rounds. */
#include <math.h>
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

#include "guest_targets.h"
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
	/* one round is a ratio, but no 95% interval (issue #41: five-round
	 * targets passed at 93.8%) */
	assert_int_equal(target_line(&t, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "measured=0 reference=10 ratio=0.0000 goal=1.05 met=no rounds=1"));
	assert_non_null(strstr(buf, "(too few rounds for 95%: 6 needed)"));
}

/* issue #41: five rounds give min..max at 1 - 2/32 = 93.8%, below the 95%
 * the files state: every kind of goal is met=no with the reason, however
 * far inside the goal the rounds lie; six rounds (96.9%) can meet it */
static void target_needs_rounds_for_its_level(void **state)
{
	double m[] = { 200, 210, 205, 199, 201, 202, 203 };
	double r[] = { 100, 100, 100, 100, 100, 100, 100 };
	struct bench_target_rounds ratio_hi = {
		.name = "ratio_hi", .measured = m, .reference = r, .n = 5,
		.goal = 1.5, .goal_on_ratio = true, .higher_better = true,
	};
	struct bench_target_rounds ratio_lo = {
		.name = "ratio_lo", .measured = r, .reference = m, .n = 5,
		.goal = 0.9, .goal_on_ratio = true, .higher_better = false,
	};
	struct bench_target_rounds abs_hi = {
		.name = "abs_hi", .measured = m, .n = 5, .goal = 50, .higher_better = true,
	};
	struct bench_target_rounds abs_lo = {
		.name = "abs_lo", .measured = m, .n = 5, .goal = 1000, .higher_better = false,
	};
	struct bench_target_rounds const_ref = {
		.name = "const_ref", .measured = m, .ref_value = 100, .n = 5,
		.goal = 1.5, .goal_on_ratio = true, .higher_better = true,
	};
	struct bench_target_rounds *all[] = { &ratio_hi, &ratio_lo, &abs_hi, &abs_lo, &const_ref };
	char buf[512];

	(void)state;
	assert_int_equal(bench_rounds_needed(0.95), 6);
	assert_int_equal(bench_rounds_needed(0.99), 8);   /* 1 - 2^-7 = 0.992 */
	assert_int_equal(bench_rounds_needed(0.9), 5);    /* 1 - 2^-4 = 0.9375 */
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		all[i]->n = 5;
		assert_int_equal(target_line(all[i], buf, sizeof(buf)), 0);
		assert_non_null(strstr(buf, " met=no rounds=5 "));
		assert_non_null(strstr(buf, "level=0.938"));
		assert_non_null(strstr(buf, "(too few rounds for 95%: 6 needed)\n"));
		all[i]->n = 6;
		assert_int_equal(target_line(all[i], buf, sizeof(buf)), 1);
		assert_non_null(strstr(buf, " met=yes rounds=6 "));
		assert_non_null(strstr(buf, "level=0.969"));
		assert_null(strstr(buf, "too few"));
		all[i]->n = 7;
		assert_int_equal(target_line(all[i], buf, sizeof(buf)), 1);
		assert_non_null(strstr(buf, "level=0.984"));
	}
	/* the interval is the whole interval on both sides: with 7 rounds it is
	 * min..max, so a single round past the goal fails an upper and a
	 * lower goal alike */
	abs_lo.goal = 209;
	assert_int_equal(target_line(&abs_lo, buf, sizeof(buf)), 0);
	abs_hi.goal = 199.5;
	assert_int_equal(target_line(&abs_hi, buf, sizeof(buf)), 0);
	ratio_lo.goal = 1 / 2.05; /* r/m for m = 205 .. 210 lies above it */
	assert_int_equal(target_line(&ratio_lo, buf, sizeof(buf)), 0);
	/* with 20 rounds the interval is x(6)..x(15): the five highest rounds
	 * may lie over an upper goal, the median's interval does not */
	{
		double v[20];
		struct bench_target_rounds t20 = {
			.name = "t20", .measured = v, .n = 20, .goal = 15, .higher_better = false,
		};

		for (int i = 0; i < 20; i++)
			v[i] = (double)((i * 7) % 20 + 1);
		assert_int_equal(target_line(&t20, buf, sizeof(buf)), 1);
		assert_non_null(strstr(buf, "interval=[6,15] level=0.959"));
		t20.goal = 14.9;
		assert_int_equal(target_line(&t20, buf, sizeof(buf)), 0);
	}
}

/* a round that is not a number is no interval (NaN sorts nowhere) */
static void target_refuses_nan_rounds(void **state)
{
	double m[] = { 1, 2, 3, 4, 5, 6, 0 }, r[] = { 1, 1, 1, 1, 1, 1, 1 };
	struct bench_target_rounds t = {
		.name = "nan", .measured = m, .reference = r, .n = 7,
		.goal = 100, .goal_on_ratio = true, .higher_better = false,
	};
	char buf[512];

	(void)state;
	m[6] = NAN;
	assert_int_equal(target_line(&t, buf, sizeof(buf)), -1);
	assert_non_null(strstr(buf, "met=no (a round that is not a finite number)"));
	m[6] = 7;
	r[3] = INFINITY;
	assert_int_equal(target_line(&t, buf, sizeof(buf)), -1);
	r[3] = 1;
	assert_int_equal(target_line(&t, buf, sizeof(buf)), 1);
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

/* bench/eba.c's targets: a round counts only where both sides ran and both
 * counted at least the floor of messages in the window */
static void guest_pairs_need_messages_on_both_sides(void **state)
{
	const double m[6] = { 10, 20, 0, 30, 40, 50 }, r[6] = { 11, 21, 22, 0, 41, 51 };
	const uint64_t mn[6] = { 1000, 999, 5000, 5000, 2000, 1500 };
	const uint64_t rn[6] = { 1000, 5000, 5000, 5000, 999, 1500 };
	double a[6], b[6];

	(void)state;
	assert_int_equal(bench_pairs_min_msgs(m, r, mn, rn, 6, 1000, a, b), 2);
	assert_true(a[0] == 10 && b[0] == 11 && a[1] == 50 && b[1] == 51);
	/* no floor: only the failed runs (0) are left out */
	assert_int_equal(bench_pairs_min_msgs(m, r, mn, rn, 6, 0, a, b), 4);
	assert_true(a[1] == 20 && b[2] == 41);
	assert_int_equal(bench_pairs_min_msgs(m, r, mn, rn, 0, 0, a, b), 0);
}

/* bench/rdma.c's size classes: met only when every size met its own
 * target, where pooling the sizes' rounds would have met */
static void guest_class_needs_every_size(void **state)
{
	/* per-round ratios (reference 1): size A all above the goal, size B
	 * with one round at 0.90, so B's 7-round interval (min..max) crosses
	 * 0.95, while the 14 pooled rounds' interval x(3)..x(12) does not */
	const double ra[7] = { 1.00, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06 };
	const double rb[7] = { 0.90, 0.96, 0.97, 0.98, 0.99, 1.00, 1.00 };
	double one[14], pooled[14];
	int met[2], both[2] = { 1, 1 }, unmeasured[2] = { 1, -1 };
	FILE *f = tmpfile();

	(void)state;
	assert_non_null(f);
	for (int i = 0; i < 14; i++) {
		one[i] = 1;
		pooled[i] = i < 7 ? ra[i] : rb[i - 7];
	}
	met[0] = bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "a", .measured = ra, .reference = one, .n = 7, .goal = 0.95,
		.goal_on_ratio = true, .higher_better = true });
	met[1] = bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "b", .measured = rb, .reference = one, .n = 7, .goal = 0.95,
		.goal_on_ratio = true, .higher_better = true });
	assert_int_equal(met[0], 1);
	assert_int_equal(met[1], 0);
	assert_int_equal(bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "pooled", .measured = pooled, .reference = one, .n = 14, .goal = 0.95,
		.goal_on_ratio = true, .higher_better = true }), 1);
	assert_int_equal(bench_class_met(met, 2), 0);
	assert_int_equal(bench_class_met(both, 2), 1);
	assert_int_equal(bench_class_met(unmeasured, 2), 0);
	assert_int_equal(bench_class_met(both, 0), 0);
	fclose(f);
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
		cmocka_unit_test(target_needs_rounds_for_its_level),
		cmocka_unit_test(target_refuses_nan_rounds),
		cmocka_unit_test(results_name_their_commit),
		cmocka_unit_test(out_checked_before_the_run),
		cmocka_unit_test(guest_pairs_need_messages_on_both_sides),
		cmocka_unit_test(guest_class_needs_every_size),
		cmocka_unit_test(pace_rx_on_schedule),
		cmocka_unit_test(pace_rx_late_burst_shows_in_gaps),
		cmocka_unit_test(pace_rx_slow_sender_fails_rate),
		cmocka_unit_test(saturated_needs_busy_and_loss),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
