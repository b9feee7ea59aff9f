/* results.h - writing bench/results/NAME.md: machine, date, raw numbers and
 * one `target:` line per issue target. */
#ifndef VFGX_BENCH_RESULTS_H
#define VFGX_BENCH_RESULTS_H

#include <stdbool.h>
#include <stdio.h>

#include "cliopt.h"

/* Opens DIR/NAME.md (DIR from --out, default bench/results) and writes the
 * title, date and machine description.  NULL with a message on failure. */
FILE *bench_results_open(const char *dir, const char *name, const char *title,
			 char *path, size_t path_len);
/* Machine line: CPU model, cores, kernel. */
void bench_machine(FILE *f);
/* "target: NAME measured=X reference=Y ratio=R goal=G met=yes|no";
 * met when measured >= goal (higher_better) or <= goal. */
void bench_target(FILE *f, const char *name, double measured, double reference,
		  double goal, bool higher_better);

/* Path of the results file opened last (vfgx bench reads it back for
 * --json and the plot), NULL before any. */
const char *bench_results_path(void);

/* --out, --seconds, --json (taken by `vfgx bench` itself), --help */
extern const struct cli_opt bench_common_opts[];

/* The options every benchmark shares: --out DIR, --seconds S (0 < S <=
 * max_seconds), -h (prints usage).  Returns -1 to go on, otherwise the exit
 * code (0 after -h, 2 for bad usage). */
int bench_parse_common(int argc, char **argv, const char *name,
		       const char *usage, double max_seconds, const char **out,
		       double *seconds);

/* 1-minute load average, -1 when unknown. */
double bench_loadavg1(void);
/* Median of n values (v is not changed); 0 when n < 1. */
double bench_median(const double *v, int n);

#endif
