/* results.c - shared writer for benchmark result files. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/core.h>

#include "bench_commit.h"
#include "cliopt.h"
#include "results.h"

static char last_path[512];

const char *bench_results_path(void)
{
	return last_path[0] ? last_path : NULL;
}

const struct cli_opt bench_common_opts[] = {
	{ "out", 'o', "DIR", "write NAME.md and NAME.svg into DIR (default bench/results)" },
	{ "seconds", 's', "S", "measuring time per configuration" },
	{ "json", 'j', NULL, "the results file as one JSON document on stdout (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(buf, len, "unknown CPU");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && c) {
			c += 2;
			c[strcspn(c, "\n")] = '\0';
			snprintf(buf, len, "%s", c);
			break;
		}
	}
	fclose(f);
}

const char *bench_commit(void)
{
	return VFGX_BENCH_COMMIT;
}

void bench_machine(FILE *f)
{
	struct utsname u;
	char cpu[256];

	cpu_model(cpu, sizeof(cpu));
	uname(&u);
	fprintf(f, "- machine: %s, %ld online cores, Linux %s %s\n", cpu,
		sysconf(_SC_NPROCESSORS_ONLN), u.release, u.machine);
}

/* path can be written: created (and removed again) when it is not there,
 * opened for appending (nothing truncated) when it is; errno otherwise */
static int can_write(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd >= 0) {
		close(fd);
		return unlink(path);
	}
	if (errno != EEXIST)
		return -1;
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int bench_out_check(const char *dir, const char *name)
{
	static const char *const ext[] = { "md", "svg" };
	char path[600];
	struct stat st;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "vfgx bench: cannot create %s: %s (use --out DIR)\n",
			dir, strerror(errno));
		return 1;
	}
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "vfgx bench: %s is not a directory (use --out DIR)\n", dir);
		return 1;
	}
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s.%s", dir, name, ext[i]);
		if (can_write(path)) {
			fprintf(stderr, "vfgx bench: cannot write %s: %s (use --out DIR)\n",
				path, strerror(errno));
			return 1;
		}
	}
	return 0;
}

FILE *bench_results_open(const char *dir, const char *name, const char *title,
			 char *path, size_t path_len)
{
	char date[64];
	time_t now = time(NULL);
	FILE *f;

	mkdir(dir, 0755);
	snprintf(path, path_len, "%s/%s.md", dir, name);
	snprintf(last_path, sizeof(last_path), "%s", path);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "vfgx bench: cannot write %s: %s (use --out DIR)\n",
			path, strerror(errno));
		return NULL;
	}
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	fprintf(f, "# %s\n\n- date: %s\n- commit: %s\n", title, date, bench_commit());
	bench_machine(f);
	return f;
}

void bench_target_unmeasured(FILE *f, const char *name, double goal, const char *reason)
{
	fprintf(f, "target: %s measured=none reference=none ratio=none goal=%.4g met=no (%s)\n",
		name, goal, reason);
}

int bench_parse_common(int argc, char **argv, const char *name,
		       const char *summary, double max_seconds, const char **out,
		       double *seconds)
{
	char cname[64];
	struct cli_cmd cmd = { .name = cname, .summary = summary, .opts = bench_common_opts };
	int c;

	snprintf(cname, sizeof(cname), "bench %s", name);
	optind = 1;
	while ((c = cli_getopt(argc, argv, &cmd)) != -1) {
		switch (c) {
		case 'o':
			*out = optarg;
			break;
		case 's':
			if (vfgx_num_double(optarg, 0, max_seconds, seconds, NULL, 0) ||
			    *seconds <= 0) {
				fprintf(stderr, "vfgx bench %s: --seconds must be 0..%g\n",
					name, max_seconds);
				return 2;
			}
			break;
		case 'h':
			cli_usage(stdout, &cmd);
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc)
		return cli_bad_operands(&cmd, "takes no operands");
	return -1;
}

double bench_loadavg1(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f && fscanf(f, "%lf", &l) != 1)
		l = -1;
	if (f)
		fclose(f);
	return l;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bench_median(const double *v, int n)
{
	double *s = malloc(sizeof(double) * (size_t)n), m;

	if (!s || n < 1) {
		free(s);
		return 0;
	}
	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

/* --- Targets from rounds (see results.h) --- */

const char bench_ci_rule[] =
	"Every target line is computed by bench/results.c from the rounds listed above: "
	"the median over rounds, min..max, and a distribution-free confidence interval of "
	"the median (order statistics x(k)..x(n+1-k), k the largest rank whose binomial "
	"coverage is >= 95%). For a goal relative to a reference, the ratio is taken per "
	"round (reference measured in the same round) and the interval is that of the "
	"ratios. met=yes only when the whole interval meets the goal and its coverage is "
	"at least 95%: fewer than 6 rounds cannot give that (5 give 93.8%), so such a "
	"target is met=no (too few rounds for 95%).";

/* P(Bin(n, 1/2) <= j) */
static double binom_half_cdf(int n, int j)
{
	double p = 0, c = 1; /* C(n, 0) */

	for (int i = 0; i <= j && i <= n; i++) {
		p += c;
		c = c * (n - i) / (i + 1);
	}
	for (int i = 0; i < n; i++)
		p *= 0.5;
	return p;
}

int bench_rounds_needed(double level)
{
	int n = 1;

	/* the widest interval, min..max, covers 1 - 2 P(B <= 0) = 1 - 2^(1-n) */
	while (n < 64 && 1 - 2 * binom_half_cdf(n, 0) < level)
		n++;
	return n;
}

int bench_stat(const double *v, int n, struct bench_stat *s)
{
	double *x;
	int k = 1;

	if (n < 1 || !(x = malloc(sizeof(double) * (size_t)n)))
		return -1;
	memcpy(x, v, sizeof(double) * (size_t)n);
	qsort(x, (size_t)n, sizeof(double), cmp_double);
	s->n = n;
	s->min = x[0];
	s->max = x[n - 1];
	s->median = n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
	/* largest k with coverage 1 - 2 P(B <= k - 1) >= level */
	while (k + 1 <= (n + 1) / 2 &&
	       1 - 2 * binom_half_cdf(n, k) >= BENCH_CI_LEVEL)
		k++;
	s->lo = x[k - 1];
	s->hi = x[n - k];
	s->level = 1 - 2 * binom_half_cdf(n, k - 1);
	free(x);
	return 0;
}

const char *bench_fmt_spread(char *buf, size_t len, const char *fmt,
			     const double *v, int n)
{
	struct bench_stat s;
	char f3[64];

	if (bench_stat(v, n, &s)) {
		snprintf(buf, len, "-");
		return buf;
	}
	snprintf(f3, sizeof(f3), "%s (%s..%s)", fmt, fmt, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(buf, len, f3, s.median, s.min, s.max);
#pragma GCC diagnostic pop
	return buf;
}

int bench_target_rounds(FILE *f, const struct bench_target_rounds *t)
{
	struct bench_stat m, r = { 0 }, q = { 0 }, *on;
	double *ratio = NULL;
	char why[96] = "";
	bool met;

	if (t->n < 1 || bench_stat(t->measured, t->n, &m)) {
		bench_target_unmeasured(f, t->name, t->goal, "no round measured");
		return -1;
	}
	/* a round that is not a number sorts nowhere: no interval from it */
	for (int i = 0; i < t->n; i++)
		if (!isfinite(t->measured[i]) ||
		    (t->reference && !isfinite(t->reference[i]))) {
			bench_target_unmeasured(f, t->name, t->goal,
						"a round that is not a finite number");
			return -1;
		}
	/* a ratio needs a reference measured above 0 in every round: a round
	 * without one is no round (its ratio of 0 would meet any upper goal) */
	for (int i = 0; t->goal_on_ratio && i < t->n; i++)
		if (!(t->reference ? t->reference[i] > 0 : t->ref_value > 0)) {
			bench_target_unmeasured(f, t->name, t->goal,
						"a round without a reference above 0: no ratio");
			return -1;
		}
	if (t->reference || t->ref_value > 0) {
		ratio = malloc(sizeof(double) * (size_t)t->n);
		if (!ratio)
			return -1;
		for (int i = 0; i < t->n; i++) {
			double ref = t->reference ? t->reference[i] : t->ref_value;

			ratio[i] = ref > 0 ? t->measured[i] / ref : 0;
		}
		bench_stat(ratio, t->n, &q);
		if (t->reference)
			bench_stat(t->reference, t->n, &r);
		else
			r.median = t->ref_value;
		free(ratio);
	}
	on = t->goal_on_ratio ? &q : &m;
	/* the interval is two-sided at on->level; each goal is one side of it,
	 * so a met goal holds at (1 + level) / 2 or more */
	met = t->higher_better ? on->lo >= t->goal : on->hi <= t->goal;
	if (on->level < BENCH_CI_LEVEL) {
		met = false;
		snprintf(why, sizeof(why), " (too few rounds for %.0f%%: %d needed)",
			 BENCH_CI_LEVEL * 100, bench_rounds_needed(BENCH_CI_LEVEL));
	}
	fprintf(f, "target: %s measured=%.4g reference=%.4g ratio=%.4f goal=%.4g met=%s "
		"rounds=%d min=%.4g max=%.4g interval=[%.4g,%.4g] level=%.3f on=%s%s\n",
		t->name, m.median, r.median, q.median, t->goal, met ? "yes" : "no", t->n,
		on->min, on->max, on->lo, on->hi, on->level,
		t->goal_on_ratio ? "ratio" : "measured", why);
	return met;
}
