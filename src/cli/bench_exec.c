/* bench_exec.c - `vfgx bench NAME ...` runs the vfgx-bench program installed
 * beside vfgx (benchmarks and their reference tools are no part of vfgx);
 * vfgx_bench_complete reads its benchmark table for the bash completion. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cliopt.h"
#include "commands.h"

static const struct cli_opt bench_opts[] = {
	{ "help", 'h', NULL, "this help; vfgx bench NAME --help for a benchmark's options" },
	{ 0 },
};

const struct cli_cmd vfgx_cli_bench = {
	.name = "bench", .operands = "NAME [OPTIONS]",
	.summary = "benchmarks (vfgx-bench); writes bench/results/NAME.md and NAME.svg",
	.opts = bench_opts,
};

/* $VFGX_BENCH, else vfgx-bench in the directory of this vfgx. */
static int bench_path(char *buf, size_t len)
{
	const char *env = getenv("VFGX_BENCH");
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	snprintf(buf, len, "%s/vfgx-bench", self);
	return 0;
}

int vfgx_cmd_bench_exec(int argc, char **argv)
{
	char path[PATH_MAX];

	if (argc < 1)
		return 2;
	if (bench_path(path, sizeof(path)) || access(path, X_OK)) {
		fprintf(stderr, "vfgx bench: no vfgx-bench beside vfgx (%s); install it, or set VFGX_BENCH\n",
			bench_path(path, sizeof(path)) ? "cannot read /proc/self/exe" : cli_esc(path));
		return 1;
	}
	fflush(NULL);
	argv[0] = path; /* vfgx-bench sees: NAME [OPTIONS] as argv[1..] */
	execv(path, argv);
	fprintf(stderr, "vfgx bench: cannot run %s: %s\n", cli_esc(path), strerror(errno));
	return 1;
}

int vfgx_bench_complete(char ***lines)
{
	char path[PATH_MAX], *line = NULL, **out = NULL;
	size_t cap = 0;
	int fds[2], n = 0, st;
	pid_t pid;
	FILE *f;

	*lines = NULL;
	if (bench_path(path, sizeof(path)) || access(path, X_OK) || pipe(fds))
		return 0;
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execl(path, path, "--complete", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	while (f && getline(&line, &cap, f) > 0) {
		char **grown = realloc(out, sizeof(*out) * (size_t)(n + 1));

		if (!grown)
			break;
		out = grown;
		line[strcspn(line, "\n")] = '\0';
		out[n++] = strdup(line);
	}
	free(line);
	if (f)
		fclose(f);
	else
		close(fds[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	*lines = out;
	return n;
}
