/* bench.c - `vfgx bench NAME`: dispatch to the benchmark programs. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "vfgx_build.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} benches[] = {
	{ "pipeline", vfgx_bench_pipeline },
	{ "socket", vfgx_bench_socket },
	{ "gpu", vfgx_bench_gpu },
	{ "e2e", vfgx_bench_e2e },
	{ "afxdp", vfgx_bench_afxdp },
#if VFGX_HAVE_DPDK
	{ "dpdk", vfgx_bench_dpdk },
#endif
	{ "eba", vfgx_bench_eba },
#if VFGX_HAVE_RDMA
	{ "rdma", vfgx_bench_rdma },
#endif
};

int vfgx_cmd_bench(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h")) {
		fprintf(argc < 2 ? stderr : stdout, "usage: vfgx bench NAME [options]\nbenchmarks:");
		for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++)
			fprintf(argc < 2 ? stderr : stdout, " %s", benches[i].name);
		fprintf(argc < 2 ? stderr : stdout, "\n");
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++)
		if (!strcmp(argv[1], benches[i].name))
			return benches[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "vfgx bench: unknown benchmark '%s'\n", argv[1]);
	return 2;
}
