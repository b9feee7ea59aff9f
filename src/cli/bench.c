/* bench.c - vfgx-bench NAME (what `vfgx bench NAME` runs): dispatch to the
 * benchmark programs, then draw NAME.svg next to NAME.md (bench/plot.py)
 * and, with --json, print the results file as one JSON document.  Linked
 * into vfgx-bench only (bench/main.c), never into vfgx. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cliopt.h"
#include "commands.h"
#include "results.h"
#include "vfgx_build.h"

#define BENCH_JSON_SCHEMA "vfgx.bench/1"

static const struct cli_cmd bench_gpu_cli = {
	.name = "bench gpu", .summary = "GPU data plane: hand-off, throughput, floors",
	.opts = bench_common_opts,
};

const struct cli_cmd *const vfgx_bench_clis[] = {
	&vfgx_bench_cli_pipeline, &vfgx_bench_cli_socket, &bench_gpu_cli, &vfgx_bench_cli_e2e,
	&vfgx_bench_cli_afxdp, &vfgx_bench_cli_chunks, &vfgx_bench_cli_python,
	&vfgx_bench_cli_send, &vfgx_bench_cli_formats,
#if VFGX_HAVE_DPDK
	&vfgx_bench_cli_dpdk,
#endif
	&vfgx_bench_cli_eba,
#if VFGX_HAVE_RDMA
	&vfgx_bench_cli_rdma,
#endif
#ifdef VFGX_HAVE_MPI
	&vfgx_bench_cli_scaleout,
#endif
	NULL,
};

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} benches[] = {
	{ "pipeline", vfgx_bench_pipeline },
	{ "socket", vfgx_bench_socket },
	{ "gpu", vfgx_bench_gpu },
	{ "e2e", vfgx_bench_e2e },
	{ "afxdp", vfgx_bench_afxdp },
	{ "chunks", vfgx_bench_chunks },
	{ "python", vfgx_bench_python },
	{ "send", vfgx_bench_send },
	{ "formats", vfgx_bench_formats },
#if VFGX_HAVE_DPDK
	{ "dpdk", vfgx_bench_dpdk },
#endif
	{ "eba", vfgx_bench_eba },
#if VFGX_HAVE_RDMA
	{ "rdma", vfgx_bench_rdma },
#endif
#ifdef VFGX_HAVE_MPI
	{ "scaleout", vfgx_bench_scaleout },
#endif
};
#define NB_BENCHES (sizeof(benches) / sizeof(benches[0]))

static const struct cli_opt bench_opts[] = {
	{ "help", 'h', NULL, "this help; vfgx bench NAME --help for a benchmark's options" },
	{ 0 },
};

static const struct cli_cmd bench_cli = {
	.name = "bench", .operands = "NAME [OPTIONS]",
	.summary = "benchmarks; writes bench/results/NAME.md and NAME.svg",
	.opts = bench_opts,
};

static void bench_usage(FILE *f)
{
	cli_usage(f, &bench_cli);
	fprintf(f, "benchmarks:");
	for (size_t i = 0; i < NB_BENCHES; i++)
		fprintf(f, " %s", benches[i].name);
	fprintf(f, "\nevery benchmark takes --json (the results as JSON on stdout, docs/json.md)\n");
}

/* bench/plot.py RESULTS.md: $VFGX_PLOT, else the source tree's copy. */
static int plot(const char *md)
{
	const char *script = getenv("VFGX_PLOT");
	pid_t pid;
	int st;

	if (!script)
		script = VFGX_PLOT_SCRIPT;
	if (access(script, X_OK)) {
		fprintf(stderr, "vfgx bench: warning: cannot run %s (%s): no plot for %s (set VFGX_PLOT)\n",
			script, strerror(errno), md);
		return 1;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* its "wrote X.svg" goes where the benchmark's progress goes */
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execl(script, script, md, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "vfgx bench: warning: %s %s failed, no plot (python3-matplotlib installed?)\n",
			script, md);
		return 1;
	}
	return 0;
}

/* "| a | b |" -> array of cell strings */
static json_object *row_cells(const char *line)
{
	json_object *a = json_object_new_array();
	const char *p = strchr(line, '|');

	while (p && p[1] && p[1] != '\n') {
		const char *q = strchr(p + 1, '|');
		const char *b = p + 1, *e;

		if (!q)
			break;
		e = q;
		while (b < e && *b == ' ')
			b++;
		while (e > b && e[-1] == ' ')
			e--;
		json_object_array_add(a, json_object_new_string_len(b, (int)(e - b)));
		p = q;
	}
	return a;
}

static json_object *target_json(const char *line)
{
	char name[128], met[8];
	double m, r, ratio, g;
	json_object *o;

	if (sscanf(line, "target: %127s measured=%lf reference=%lf ratio=%lf goal=%lf met=%7s",
		   name, &m, &r, &ratio, &g, met) != 6)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "measured", json_object_new_double(m));
	json_object_object_add(o, "reference", json_object_new_double(r));
	json_object_object_add(o, "ratio", json_object_new_double(ratio));
	json_object_object_add(o, "goal", json_object_new_double(g));
	json_object_object_add(o, "met", json_object_new_boolean(!strncmp(met, "yes", 3)));
	/* the interval bench_target_rounds writes, when there is one */
	{
		const char *iv = strstr(line, " interval=[");
		const char *rn = strstr(line, " rounds=");
		double lo, hi;
		int n;

		if (iv && sscanf(iv, " interval=[%lf,%lf]", &lo, &hi) == 2) {
			json_object *a = json_object_new_array();

			json_object_array_add(a, json_object_new_double(lo));
			json_object_array_add(a, json_object_new_double(hi));
			json_object_object_add(o, "interval", a);
		}
		if (rn && sscanf(rn, " rounds=%d", &n) == 1)
			json_object_object_add(o, "rounds", json_object_new_int(n));
	}
	/* anything after met=yes|no (an interval, a note) is kept as text */
	json_object_object_add(o, "line", json_object_new_string_len(line, (int)strcspn(line, "\n")));
	return o;
}

/* The results file as JSON: title, "- key: value" lines, every table
 * (header + rows of cell strings) and every target line. */
static int results_json(const char *name, const char *md)
{
	json_object *root, *info, *tables, *targets, *cur = NULL;
	FILE *f = fopen(md, "r");
	char line[8192], svg[600];
	bool sep_seen = false;

	if (!f) {
		fprintf(stderr, "vfgx bench: cannot read %s: %s\n", md, strerror(errno));
		return 1;
	}
	root = json_object_new_object();
	info = json_object_new_object();
	tables = json_object_new_array();
	targets = json_object_new_array();
	snprintf(svg, sizeof(svg), "%.*s.svg", (int)(strlen(md) - 3), md);
	json_object_object_add(root, "schema", json_object_new_string(BENCH_JSON_SCHEMA));
	json_object_object_add(root, "bench", json_object_new_string(name));
	json_object_object_add(root, "file", json_object_new_string(md));
	json_object_object_add(root, "svg", json_object_new_string(svg));
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '|') {
			if (!cur) {
				cur = json_object_new_object();
				json_object_object_add(cur, "columns", row_cells(line));
				json_object_object_add(cur, "rows", json_object_new_array());
				json_object_array_add(tables, cur);
				sep_seen = false;
			} else if (!sep_seen && strspn(line, "|-: ") == strlen(line)) {
				sep_seen = true;
			} else {
				json_object *rows;

				json_object_object_get_ex(cur, "rows", &rows);
				json_object_array_add(rows, row_cells(line));
			}
			continue;
		}
		cur = NULL;
		if (line[0] == '#' && !json_object_object_get_ex(root, "title", NULL)) {
			json_object_object_add(root, "title", json_object_new_string(line + strspn(line, "# ")));
		} else if (!strncmp(line, "- ", 2) && strchr(line, ':')) {
			char *colon = strchr(line, ':');

			*colon = '\0';
			json_object_object_add(info, line + 2,
					       json_object_new_string(colon + 1 + strspn(colon + 1, " ")));
		} else if (!strncmp(line, "target: ", 8)) {
			json_object *t = target_json(line);

			if (t)
				json_object_array_add(targets, t);
		}
	}
	fclose(f);
	json_object_object_add(root, "info", info);
	json_object_object_add(root, "tables", tables);
	json_object_object_add(root, "targets", targets);
	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
	return 0;
}

int vfgx_cmd_bench(int argc, char **argv)
{
	char **args;
	int n = 0, rc, saved = -1;
	bool json = false;
	size_t i;

	if (argc < 2) {
		fprintf(stderr, "vfgx bench: which benchmark? (vfgx bench --help lists them)\n");
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		bench_usage(stdout);
		return 0;
	}
	for (i = 0; i < NB_BENCHES; i++)
		if (!strcmp(argv[1], benches[i].name))
			break;
	if (i == NB_BENCHES) {
		fprintf(stderr, "vfgx bench: unknown %s '%s' (vfgx bench --help lists them)\n",
			argv[1][0] == '-' ? "option" : "benchmark", cli_esc(argv[1]));
		return 2;
	}
	/* --json is ours: the benchmark never sees it */
	args = calloc((size_t)argc + 1, sizeof(*args));
	if (!args)
		return 1;
	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--json") || !strcmp(argv[a], "-j"))
			json = true;
		else
			args[n++] = argv[a];
	}
	if (json) {
		/* the benchmark's progress lines go to stderr, the JSON alone to stdout */
		fflush(stdout);
		saved = dup(STDOUT_FILENO);
		dup2(STDERR_FILENO, STDOUT_FILENO);
	}
	rc = benches[i].fn(n, args);
	free(args);
	/* a machine without matplotlib still gets its results file: the
	 * missing plot is one line on stderr, not a failed benchmark */
	if (rc == 0 && bench_results_path())
		plot(bench_results_path());
	if (saved >= 0) {
		fflush(stdout);
		dup2(saved, STDOUT_FILENO);
		close(saved);
	}
	if (rc == 0 && json && bench_results_path())
		rc = results_json(benches[i].name, bench_results_path());
	return rc;
}
