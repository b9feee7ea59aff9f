/* python_bench.c - `vfgx bench python`: chunks per second consumed from
 * Python (bench/python_consumer.py: a NumPy reduction over each 1 MiB
 * chunk) against a C consumer doing the same reduction on the same
 * pipeline config in the same round; and, where CuPy finds a GPU, the time
 * from a GPU chunk becoming ready to a CuPy array over it. */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vfgx/vfgx.h>

#include "commands.h"
#include "cliopt.h"
#include "results.h"

#define MAX_ROUNDS 50

static const struct cli_opt python_opts[] = {
	{ "out", 'o', "DIR", "write python.md into DIR (default bench/results)" },
	{ "seconds", 's', "S", "consuming time per side and per round (default 2)" },
	{ "rounds", 'r', "N", "rounds, C and Python interleaved (default 7)" },
	{ "python", 'p', "PATH", "the interpreter (default python3; it needs numpy, and cupy for the GPU row)" },
	{ "json", 'j', NULL, "the results file as one JSON document on stdout (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_bench_cli_python = {
	.name = "bench python",
	.summary = "chunks consumed from Python (NumPy) vs C, 1 MiB chunks; GPU hand-off to CuPy",
	.opts = python_opts,
};

/* 1 MiB chunks: 2048 packets of 512 B, an endless loopback source */
static const char host_yaml[] =
	"interfaces:\n"
	"  - backend: loopback\n"
	"    loopback: { packets: 0, flows: 1, packet_size: 570, replay: true }\n"
	"pipeline:\n"
	"  device: cpu\n"
	"  chunks: { payload_bytes: 512, packets: 2048, in_flight: 8 }\n";
static const char gpu_yaml[] =
	"interfaces:\n"
	"  - backend: loopback\n"
	"    loopback: { packets: 0, flows: 1, packet_size: 570, replay: true }\n"
	"pipeline:\n"
	"  device: cpu\n"
	"  chunks: { payload_bytes: 512, packets: 2048, in_flight: 8, mem: gpu }\n";

/* The reduction both sides run: the (wrapping) sum of the chunk's 64-bit
 * words, every byte read once (Python: data.view("<u8").sum()). */
static uint64_t word_sum(const uint8_t *p, size_t n)
{
	uint64_t acc = 0, w;

	for (size_t i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		acc += w;
	}
	return acc;
}

/* Both sides on the same two CPUs (2 and 3 where the machine has them):
 * the producer's and the consumer's placement moved the rate by up to 2x
 * between runs otherwise. */
static const char *pin_cpus(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? "2,3" : "0,1";
}

static int pin_self(cpu_set_t *saved)
{
	cpu_set_t set;
	const char *cpus = pin_cpus();

	CPU_ZERO(&set);
	CPU_SET(cpus[0] - '0', &set);
	CPU_SET(cpus[2] - '0', &set);
	if (sched_getaffinity(0, sizeof(*saved), saved))
		return -1;
	return sched_setaffinity(0, sizeof(set), &set);
}

static int run_c(double seconds, double *rate)
{
	struct vfgx_config *cfg = NULL;
	vfgx_pipeline *pl = NULL;
	vfgx_port *port = NULL;
	struct vfgx_chunk *c;
	uint64_t n = 0, sink = 0, t0, t;
	vfgx_ctx *ctx;
	cpu_set_t saved;
	int ret = -1;

	if (vfgx_ctx_create(&ctx))
		return -1;
	/* the pipeline's threads inherit this */
	if (pin_self(&saved)) {
		vfgx_ctx_destroy(ctx);
		return -1;
	}
	if (vfgx_config_load_string(ctx, host_yaml, sizeof(host_yaml) - 1, "bench", &cfg) ||
	    vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port) ||
	    vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl) || vfgx_pipeline_start(pl)) {
		fprintf(stderr, "vfgx bench python: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	t0 = t = vfgx_now_ns();
	while (t - t0 < (uint64_t)(seconds * 1e9)) {
		/* polling, as the Python side does */
		if (vfgx_chunk_get(pl, 0, &c) == 0) {
			sink += word_sum(c->data, (size_t)c->packets * c->payload_bytes);
			vfgx_chunk_put(pl, c->stream, c->index);
			n++;
		}
		t = vfgx_now_ns();
	}
	*rate = (double)n / ((double)(t - t0) / 1e9);
	ret = sink ? 0 : -1; /* every chunk holds bytes: a zero sum is a broken run */
out:
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	vfgx_ctx_destroy(ctx);
	sched_setaffinity(0, sizeof(saved), &saved);
	return ret;
}

/* The Python consumer: config on its stdin, its one line parsed. */
static int run_py(const char *python, double seconds, bool gpu, double *rate, double *handoff)
{
	char cmd[1024], line[512], tmp[] = "/tmp/vfgx-bench-py.XXXXXX";
	const char *yaml = gpu ? gpu_yaml : host_yaml;
	int fd = mkstemp(tmp), ret = -1;
	FILE *f;

	if (fd < 0 || write(fd, yaml, strlen(yaml)) != (ssize_t)strlen(yaml)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "PYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH} taskset -c %s '%s' '%s' --seconds %g %s < '%s'",
		 VFGX_PY_PATH, pin_cpus(), python, VFGX_PY_CONSUMER, seconds, gpu ? "--gpu" : "", tmp);
	f = popen(cmd, "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "chunks %*u seconds %*f chunks_per_s %lf handoff_us_median %lf",
				   rate, handoff) >= 1)
				ret = 0;
		if (pclose(f) != 0)
			ret = -1;
	}
	unlink(tmp);
	return ret;
}

int vfgx_bench_python(int argc, char **argv)
{
	double c_rate[MAX_ROUNDS], py_rate[MAX_ROUNDS], ho[MAX_ROUNDS], dummy;
	const char *out = "bench/results", *python = "python3";
	double seconds = 2, load0, load1;
	int rounds = 7, c, n_gpu = 0;
	char path[512], a[64], b[64];
	bool gpu;
	FILE *f;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_bench_cli_python)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 's':
			if (vfgx_num_double(optarg, 0, 600, &seconds, NULL, 0) || seconds <= 0) {
				fprintf(stderr, "vfgx bench python: --seconds must be 0..600\n");
				return 2;
			}
			break;
		case 'r':
			if (vfgx_flag_int("bench python", "--rounds", optarg, 1, MAX_ROUNDS, &rounds))
				return 2;
			break;
		case 'p':
			python = optarg;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_bench_cli_python);
			return 0;
		default:
			return 2;
		}
	}
	if (optind != argc)
		return cli_bad_operands(&vfgx_bench_cli_python, "unexpected operand");
	if (bench_out_check(out, "python"))
		return 1;
	load0 = bench_loadavg1();
	for (int i = 0; i < rounds; i++) {
		bool py_first = i % 2;

		if ((py_first && run_py(python, seconds, false, &py_rate[i], &dummy)) ||
		    run_c(seconds, &c_rate[i]) ||
		    (!py_first && run_py(python, seconds, false, &py_rate[i], &dummy))) {
			fprintf(stderr, "vfgx bench python: round %d failed (is numpy installed for %s?)\n",
				i + 1, python);
			return 1;
		}
		printf("round %d: C %.1f chunks/s, Python %.1f (ratio %.3f)\n", i + 1, c_rate[i],
		       py_rate[i], py_rate[i] / c_rate[i]);
	}
	/* the GPU row where CuPy finds a GPU */
	gpu = run_py(python, 0.2, true, &dummy, &ho[0]) == 0;
	for (int i = 0; gpu && i < rounds; i++, n_gpu++)
		if (run_py(python, seconds, true, &dummy, &ho[i]))
			break;
	load1 = bench_loadavg1();
	f = bench_results_open(out, "python", "Python: chunks from NumPy and CuPy", path, sizeof(path));
	if (!f)
		return 1;
	fprintf(f, "- command: vfgx bench python --seconds %g --rounds %d --python %s\n", seconds, rounds, python);
	fprintf(f, "- load average (1 min) before %.2f, after %.2f on %ld online cores\n", load0, load1,
		sysconf(_SC_NPROCESSORS_ONLN));
	fprintf(f, "- work: an endless loopback replay stream into 1 MiB chunks (2048 packets x 512 B, host memory, cpu engine); each side consumes for %g s per round: C (this process) sums each chunk's 64-bit words; Python (bench/python_consumer.py, a separate process) polls for each chunk, gets it as a NumPy array over its memory and sums the same words (.view(\"<u8\").sum()); both give the chunk back; both poll vfgx_chunk_get (timeout 0). Rate = chunks consumed per second. Each side runs on the same two CPUs (%s: the process and its pipeline threads pinned there). Sides alternate, order flipped every round.\n", seconds, pin_cpus());
	fprintf(f, "- GPU hand-off: the same stream into chunks in GPU memory; for each chunk, time from the chunk becoming ready (its ready_ns: after its copy to the GPU, when a consumer can see it) to cupy.from_dlpack(chunk) returning in a polling consumer, median per round%s.\n\n",
		n_gpu ? "" : " (not measured: CuPy or a GPU missing here)");
	fprintf(f, "| round | C chunks/s | Python chunks/s | ratio |%s\n|---|---|---|---|%s\n",
		n_gpu ? " GPU hand-off median us |" : "", n_gpu ? "---|" : "");
	for (int i = 0; i < rounds; i++) {
		fprintf(f, "| %d | %.1f | %.1f | %.3f |", i + 1, c_rate[i], py_rate[i], py_rate[i] / c_rate[i]);
		if (n_gpu)
			fprintf(f, i < n_gpu ? " %.2f |" : " |", ho[i]);
		fprintf(f, "\n");
	}
	fprintf(f, "\n- C chunks/s median (min..max): %s; Python: %s\n",
		bench_fmt_spread(a, sizeof(a), "%.1f", c_rate, rounds),
		bench_fmt_spread(b, sizeof(b), "%.1f", py_rate, rounds));
	fprintf(f, "- rule: %s\n\n", bench_ci_rule);
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "python_chunks_vs_c_1MiB", .measured = py_rate, .reference = c_rate,
		.n = rounds, .goal = 0.9, .goal_on_ratio = true, .higher_better = true });
	if (n_gpu)
		bench_target_rounds(f, &(struct bench_target_rounds){
			.name = "python_gpu_chunk_overhead_us", .measured = ho, .n = n_gpu,
			.goal = 20, .higher_better = false });
	else
		fprintf(f, "target: python_gpu_chunk_overhead_us measured=none reference=none ratio=none goal=20 met=no\n");
	fclose(f);
	printf("wrote %s\n", path);
	return 0;
}
