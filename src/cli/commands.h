/* commands.h - the vfgx subcommands; each returns the process exit code
 * (0 ok, 1 failure or unmet expectation, 2 bad usage or bad config). */
#ifndef VFGX_CLI_COMMANDS_H
#define VFGX_CLI_COMMANDS_H

#include "cliopt.h"

/* each subcommand's option table (cliopt.h), next to its code */
extern const struct cli_cmd vfgx_cli_run, vfgx_cli_send, vfgx_cli_bench, vfgx_cli_discover,
	vfgx_cli_devices, vfgx_cli_doctor, vfgx_cli_mon, vfgx_cli_completion, vfgx_cli_format;
/* vfgx-bench: one per compiled-in benchmark ("bench pipeline", ...), NULL-terminated */
extern const struct cli_cmd *const vfgx_bench_clis[];
extern const struct cli_cmd vfgx_bench_cli_pipeline, vfgx_bench_cli_socket,
	vfgx_bench_cli_chunks, vfgx_bench_cli_python, vfgx_bench_cli_send,
	vfgx_bench_cli_e2e, vfgx_bench_cli_formats,
	vfgx_bench_cli_afxdp, vfgx_bench_cli_dpdk, vfgx_bench_cli_eba,
	vfgx_bench_cli_rdma, vfgx_bench_cli_scaleout;

int vfgx_cmd_run(int argc, char **argv);
int vfgx_cmd_send(int argc, char **argv);
/* vfgx: runs vfgx-bench (bench_exec.c); vfgx-bench: the dispatcher (bench.c) */
int vfgx_cmd_bench_exec(int argc, char **argv);
int vfgx_cmd_bench(int argc, char **argv);
/* vfgx-bench --complete's lines ("bench NAME\t --long -s ..."), malloc'd;
 * their number, 0 without vfgx-bench */
int vfgx_bench_complete(char ***lines);
int vfgx_cmd_discover(int argc, char **argv);
int vfgx_cmd_devices(int argc, char **argv);
int vfgx_cmd_doctor(int argc, char **argv);
int vfgx_cmd_mon(int argc, char **argv);
int vfgx_cmd_completion(int argc, char **argv);
int vfgx_cmd_format(int argc, char **argv);

/* vfgx bench subcommands, one file each under bench/ */
int vfgx_bench_pipeline(int argc, char **argv);
int vfgx_bench_chunks(int argc, char **argv);
int vfgx_bench_python(int argc, char **argv);
int vfgx_bench_send(int argc, char **argv);
int vfgx_bench_formats(int argc, char **argv);
int vfgx_bench_socket(int argc, char **argv);
int vfgx_bench_gpu(int argc, char **argv);
int vfgx_bench_e2e(int argc, char **argv);
int vfgx_bench_afxdp(int argc, char **argv);
int vfgx_bench_dpdk(int argc, char **argv);
int vfgx_bench_eba(int argc, char **argv);
int vfgx_bench_rdma(int argc, char **argv);
int vfgx_bench_scaleout(int argc, char **argv);

#endif
