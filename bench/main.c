/* main.c - the vfgx-bench program: benchmarks, their reference runners
 * (testpmd, sockperf, perftest), netns set-up and reference loops, kept
 * out of vfgx and libvfgx.  `vfgx bench NAME ...` runs `vfgx-bench NAME
 * ...`; the benchmark table is src/cli/bench.c's.
 *
 * `vfgx-bench --complete` prints one line per benchmark for vfgx's bash
 * completion and `vfgx completion list`:
 *   bench NAME<TAB>--long -s --long -s ...  */
#include <stdio.h>
#include <string.h>

#include "cliopt.h"
#include "commands.h"

static void complete_words(void)
{
	for (const struct cli_cmd *const *b = vfgx_bench_clis; *b; b++) {
		printf("%s\t", (*b)->name);
		for (const struct cli_opt *o = (*b)->opts; o->name; o++)
			printf(" --%s -%c", o->name, o->val);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--complete")) {
		complete_words();
		return 0;
	}
	return vfgx_cmd_bench(argc, argv);
}
