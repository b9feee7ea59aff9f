/* results.h - writing bench/results/NAME.md: machine, date, raw numbers and
 * one `target:` line per issue target. */
#ifndef VFGX_BENCH_RESULTS_H
#define VFGX_BENCH_RESULTS_H

#include <stdbool.h>
#include <stdio.h>

#include "cliopt.h"

/* Opens DIR/NAME.md (DIR from --out, default bench/results) and writes the
 * title, date, the commit measured ("- commit: HASH", "-dirty" when the
 * build had uncommitted changes; scripts/bench-stale.py reads it) and the
 * machine description.  NULL with a message on failure. */
FILE *bench_results_open(const char *dir, const char *name, const char *title,
			 char *path, size_t path_len);
/* Before any work: DIR (created when missing) is a directory in which
 * NAME.md and NAME.svg can be written (an existing file is not changed).
 * 0, or 1 after one line on stderr.  Every benchmark calls it once its
 * options are parsed, so a bad --out fails at once, not after the run. */
int bench_out_check(const char *dir, const char *name);
/* Machine line: CPU model, cores, kernel. */
void bench_machine(FILE *f);
/* A target this run could not measure:
 * "target: NAME measured=none reference=none ratio=none goal=G met=no (REASON)".
 * met=yes is written only by bench_target_rounds, from measured rounds. */
void bench_target_unmeasured(FILE *f, const char *name, double goal, const char *reason);

/* Path of the results file opened last (vfgx bench reads it back for
 * --json and the plot), NULL before any. */
const char *bench_results_path(void);

/* The commit vfgx-bench was built from (git describe --always --dirty),
 * "unknown" outside a git checkout. */
const char *bench_commit(void);

/* --out, --seconds, --json (taken by `vfgx bench` itself), --help */
extern const struct cli_opt bench_common_opts[];

/* The options every benchmark shares: --out DIR, --seconds S (0 < S <=
 * max_seconds), -h (prints the usage with summary under it); no operands.
 * Returns -1 to go on, otherwise the exit code (0 after -h, 2 for bad
 * usage). */
int bench_parse_common(int argc, char **argv, const char *name,
		       const char *summary, double max_seconds, const char **out,
		       double *seconds);

/* 1-minute load average, -1 when unknown. */
double bench_loadavg1(void);
/* Median of n values (v is not changed); 0 when n < 1. */
double bench_median(const double *v, int n);

/* --- Targets from rounds -------------------------------------------------
 * Every target line is computed here from the rounds the results file
 * lists.  A quantity measured over n rounds is summarised by its median,
 * min and max and a distribution-free confidence interval of the median:
 * the order statistics [x(k), x(n+1-k)] of the sorted rounds, k the
 * largest rank whose binomial coverage 1 - 2 P(Bin(n, 1/2) < k) is at
 * least the level asked (BENCH_CI_LEVEL).  No normality is assumed; with
 * too few rounds for the level the interval is min..max and its actual
 * (lower) coverage is printed, and a target over it is not met. */
#define BENCH_CI_LEVEL 0.95
/* The fewest rounds whose min..max interval of the median covers level:
 * 6 for 0.95 (1 - 2^-5 = 0.969; 5 rounds give 0.938). */
int bench_rounds_needed(double level);

struct bench_stat {
	int n;
	double median, min, max;
	double lo, hi;   /* confidence interval of the median */
	double level;    /* its coverage (exact, from the binomial) */
};

/* Fills *s from v[0..n-1] (v is not changed); -1 when n < 1. */
int bench_stat(const double *v, int n, struct bench_stat *s);

/* One target over rounds.  measured[i] and reference[i] come from the same
 * round (interleaved runs), so the ratio is taken per round; reference may
 * be NULL (an absolute goal with no reference) or ref_value a constant.
 * goal_on_ratio: the goal applies to measured/reference (paired ratios),
 * otherwise to measured itself.  The line:
 *   target: NAME measured=MED reference=MED ratio=MED goal=G met=yes|no
 *           rounds=N min=.. max=.. interval=[LO,HI] level=0.95 on=ratio|measured
 * where min, max and the interval are of the quantity the goal is on, and
 * met=yes only when the whole interval meets the goal and its coverage is at
 * least BENCH_CI_LEVEL; with fewer rounds than bench_rounds_needed() the
 * line is met=no and ends " (too few rounds for 95%: 6 needed)".  A round
 * that is not finite makes the line bench_target_unmeasured's. */
struct bench_target_rounds {
	const char *name;
	const double *measured;
	const double *reference;  /* per round, or NULL */
	double ref_value;         /* used when reference is NULL (0: none) */
	int n;
	double goal;
	bool goal_on_ratio;
	bool higher_better;
};
/* Writes the line to f; returns 1 when met, 0 when not, -1 on input with
 * nothing to compute from (no round, or a goal on the ratio with a round
 * whose reference is not above 0), for which the line is
 * bench_target_unmeasured's (met=no and why). */
int bench_target_rounds(FILE *f, const struct bench_target_rounds *t);
/* "median (min..max)" of v into buf with printf format fmt for each. */
const char *bench_fmt_spread(char *buf, size_t len, const char *fmt,
			     const double *v, int n);
/* The sentence the results files quote for the rule above. */
extern const char bench_ci_rule[];

#endif
