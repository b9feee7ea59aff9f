/* main.c - the vfgx command: dispatches to one subcommand. */
#include <stdio.h>
#include <string.h>

#include <vfgx/core.h>

#include "commands.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
	{ "run", vfgx_cmd_run, "run ports and pipeline from a config (default: embedded loopback)" },
	{ "bench", vfgx_cmd_bench, "benchmarks; writes bench/results/*.md" },
	{ "discover", vfgx_cmd_discover, "find exposed-buffer peers on an interface (raw Ethernet 0x88B5)" },
	{ "devices", vfgx_cmd_devices, "network interfaces, RDMA devices, GPUs and GPU-NIC PCIe distance" },
	{ "doctor", vfgx_cmd_doctor, "check the system for GPUDirect networking; prints the fixes" },
	{ "mon", vfgx_cmd_mon, "gpurdma_mon driver: telemetry, then events live" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: vfgx COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nvfgx COMMAND -h for a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("vfgx %s\n", VFGX_VERSION_STRING);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "vfgx: unknown command '%s' (vfgx -h lists them)\n", argv[1]);
	return 2;
}
