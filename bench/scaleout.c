/* scaleout.c - `vfgx bench scaleout`: what an MPI job of VectorFlow-GX
 * pays and moves on this host: the time from mpirun starting to every rank's
 * rings connected (examples/corner_turn, 4 ranks, and how it grows with the
 * rank count), and the corner turn through exposed-buffer rings against
 * MPI_Alltoall moving the same bytes between the same ranks in the same
 * run; with --guest, that comparison again in the QEMU guest over soft-RoCE
 * (tests/mpi/vm_corner_turn.sh), reported beside it.  The target is the
 * host's: there both sides use shared memory; in the guest the rings use
 * verbs on soft-RoCE while Open MPI uses TCP (it cannot use rxe there). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "cliopt.h"
#include "results.h"

#define MAX_ROUNDS 50
#define MAX_NP 16

static const struct cli_opt scaleout_opts[] = {
	{ "out", 'o', "DIR", "write scaleout.md into DIR (default bench/results)" },
	{ "rounds", 'r', "N", "mpirun runs at 4 ranks, each one round of both targets (default 7)" },
	{ "bench-rounds", 'b', "R", "corner turns of one chunk per rate measurement (default 400)" },
	{ "max-np", 'n', "N", "largest rank count of the bootstrap growth rows (default 8, at most 16)" },
	{ "guest", 'g', "SCRIPT", "then rings vs MPI_Alltoall in the QEMU guest over soft-RoCE (SCRIPT: tests/mpi/vm_corner_turn.sh), reported beside the host's (Open MPI uses TCP there, so the target stays the host's)" },
	{ "guest-rounds", 'G', "N", "mpirun runs of 2 ranks in the guest (default 7)" },
	{ "guest-log", 'L', "FILE", "with --guest: read the output SCRIPT gave in a guest already run (tests/vm/bench-guest.sh runs it with the other guest benchmarks in one boot) instead of booting one" },
	{ "json", 'j', NULL, "the results file as one JSON document on stdout (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_bench_cli_scaleout = {
	.name = "bench scaleout",
	.summary = "mpirun to all rings connected; corner turn over rings vs MPI_Alltoall",
	.opts = scaleout_opts,
};

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *corner_turn_path(void)
{
	const char *p = getenv("VFGX_CORNER_TURN");

	return p ? p : VFGX_CORNER_TURN;
}

/* The launcher's options: Debian's Open MPI on one host, more ranks than
 * cores, shared memory without cross-memory attach (containers). */
static const char mpirun_opts[] =
	"--oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none --bind-to none";

/* One mpirun of the corner turn: bootstrap ms, and with bench_rounds the
 * ring and MPI_Alltoall rates (Gbit/s).  0 or -1 after a message. */
static int run_once(int np, int bench_rounds, bool a2a_first, double *boot_ms,
		    double *init_ms, double *ring, double *a2a)
{
	char cmd[1024], line[512];
	int got = 0, ret = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "VFGX_BOOT_T0_NS=%" PRIu64 " mpirun %s %s -np %d '%s' --transport mpi --chunks 8%s%.0d%s 2>&1",
		 realtime_ns(), geteuid() == 0 ? "--allow-run-as-root" : "", mpirun_opts, np,
		 corner_turn_path(), bench_rounds ? " --bench " : "", bench_rounds,
		 a2a_first ? " --alltoall-first" : "");
	f = popen(cmd, "r");
	if (!f) {
		fprintf(stderr, "vfgx bench scaleout: cannot run mpirun: %s\n", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "bootstrap_ms=%lf init_ms=%lf", boot_ms, init_ms) == 2)
			got |= 1;
		else if (sscanf(line, "bench: rounds=%*u bytes=%*u ring_s=%*f alltoall_s=%*f ring_gbps=%lf alltoall_gbps=%lf",
				ring, a2a) == 2)
			got |= 2;
		else if (strstr(line, "errors: FAILED") || strstr(line, "corner_turn: rank"))
			fprintf(stderr, "vfgx bench scaleout: %s", line);
	}
	if (pclose(f) == 0 && got == (bench_rounds ? 3 : 1))
		ret = 0;
	else
		fprintf(stderr, "vfgx bench scaleout: mpirun -np %d %s failed (is openmpi-bin installed and the example built?)\n",
			np, corner_turn_path());
	return ret;
}

/* The guest part: one boot of the QEMU guest, `rounds` mpiruns of 2 ranks
 * there; the transport line and each run's rates.  0 or -1 after a message. */
static int run_guest(const char *script, const char *log, int rounds, int bench_rounds,
		     char *transport, size_t tlen, double *ring, double *a2a)
{
	char cmd[1024], line[2048];
	int got = 0, ret = -1;
	FILE *f;

	if (log)
		snprintf(cmd, sizeof(cmd), "cat '%s'", log);
	else
		snprintf(cmd, sizeof(cmd), "'%s' -n 2 -b %d -r %d '%s' 2>&1", script, rounds,
			 bench_rounds, corner_turn_path());
	f = popen(cmd, "r");
	if (!f) {
		fprintf(stderr, "vfgx bench scaleout: cannot run %s: %s\n", script, strerror(errno));
		return -1;
	}
	transport[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "transport: ", 11)) {
			snprintf(transport, tlen, "%s", line + 11);
			transport[strcspn(transport, "\n")] = 0;
		} else if (got < rounds &&
			   sscanf(line, "bench: rounds=%*u bytes=%*u ring_s=%*f alltoall_s=%*f ring_gbps=%lf alltoall_gbps=%lf",
				  &ring[got], &a2a[got]) == 2) {
			printf("guest round %d: rings %.3f Gbit/s, MPI_Alltoall %.3f Gbit/s (ratio %.3f)\n",
			       got + 1, ring[got], a2a[got], ring[got] / a2a[got]);
			got++;
		} else if (!strstr(line, " 0 errors: ok")) {
			fputs(line, stderr); /* the guest's own words on a failure */
		}
	}
	if (pclose(f) == 0 && got == rounds && transport[0])
		ret = 0;
	else
		fprintf(stderr, "vfgx bench scaleout: the guest part (%s) failed after %d of %d rounds\n",
			script, got, rounds);
	return ret;
}

int vfgx_bench_scaleout(int argc, char **argv)
{
	double gring[MAX_ROUNDS], ga2a[MAX_ROUNDS];
	const char *guest = NULL, *guest_log = NULL;
	int guest_rounds = 7;
	char transport[1024];
	double boot[MAX_ROUNDS], init[MAX_ROUNDS], ring[MAX_ROUNDS], a2a[MAX_ROUNDS];
	double grow[MAX_NP + 1][3], grow_init[MAX_NP + 1][3];
	const char *out = "bench/results";
	int rounds = 7, bench_rounds = 400, max_np = 8, c, nps[MAX_NP], n_nps = 0;
	double load0, load1, d1, d2;
	char path[512], a[64], b[64], e[64];
	FILE *f;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_bench_cli_scaleout)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'r':
			if (vfgx_flag_int("bench scaleout", "--rounds", optarg, 1, MAX_ROUNDS, &rounds))
				return 2;
			break;
		case 'b':
			if (vfgx_flag_int("bench scaleout", "--bench-rounds", optarg, 1, 100000,
					  &bench_rounds))
				return 2;
			break;
		case 'n':
			if (vfgx_flag_int("bench scaleout", "--max-np", optarg, 2, MAX_NP, &max_np))
				return 2;
			break;
		case 'g':
			guest = optarg;
			break;
		case 'G':
			if (vfgx_flag_int("bench scaleout", "--guest-rounds", optarg, 1, MAX_ROUNDS,
					  &guest_rounds))
				return 2;
			break;
		case 'L':
			guest_log = optarg;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_bench_cli_scaleout);
			return 0;
		default:
			return 2;
		}
	}
	if (optind != argc)
		return cli_bad_operands(&vfgx_bench_cli_scaleout, "unexpected operand");
	if (bench_out_check(out, "scaleout"))
		return 1;
	load0 = bench_loadavg1();
	for (int i = 0; i < rounds; i++) {
		if (run_once(4, bench_rounds, i % 2, &boot[i], &init[i], &ring[i], &a2a[i]))
			return 1;
		printf("round %d: bootstrap %.1f ms (MPI_Init %.1f), rings %.3f Gbit/s, MPI_Alltoall %.3f Gbit/s (ratio %.3f)\n",
		       i + 1, boot[i], init[i], ring[i], a2a[i], ring[i] / a2a[i]);
	}
	/* 2, 3, 4, then doubling, and max_np itself */
	for (int np = 2; np <= max_np; np = np < 4 ? np + 1 : np * 2 <= max_np ? np * 2 :
					       np < max_np ? max_np : max_np + 1) {
		for (int k = 0; k < 3; k++)
			if (run_once(np, 0, false, &grow[n_nps][k], &grow_init[n_nps][k], &d1, &d2))
				return 1;
		printf("bootstrap at %d ranks: %.1f %.1f %.1f ms\n", np, grow[n_nps][0],
		       grow[n_nps][1], grow[n_nps][2]);
		nps[n_nps++] = np;
	}
	load1 = bench_loadavg1();
	if (guest && run_guest(guest, guest_log, guest_rounds, bench_rounds, transport,
			       sizeof(transport), gring, ga2a))
		return 1;
	f = bench_results_open(out, "scaleout", "Scale-out: MPI bootstrap and corner turn", path,
			       sizeof(path));
	if (!f)
		return 1;
	fprintf(f, "- command: vfgx bench scaleout --rounds %d --bench-rounds %d --max-np %d",
		rounds, bench_rounds, max_np);
	if (guest && guest_log)
		fprintf(f, " --guest %s --guest-rounds %d --guest-log %s (the host part here; the guest part is %s's output in a boot of the QEMU guest made earlier, read from %s: tests/vm/bench-guest.sh runs it first of the guest benchmarks in its one boot)",
			guest, guest_rounds, guest_log, guest, guest_log);
	else if (guest)
		fprintf(f, " --guest %s --guest-rounds %d (one command: the host part, then one boot of the QEMU guest for the guest part)",
			guest, guest_rounds);
	fprintf(f, "\n");
	fprintf(f, "- load average (1 min) before %.2f, after %.2f on %ld online cores\n", load0,
		load1, sysconf(_SC_NPROCESSORS_ONLN));
	fprintf(f, "- launcher: Debian's Open MPI, `mpirun %s -np N %s --transport mpi --chunks 8 [--bench R]`, all ranks on this host\n",
		mpirun_opts, "examples/corner_turn/corner_turn");
	fprintf(f, "- transport on the host (no RDMA device): the rings are vfgx_mpi_rings over MPI windows (--transport mpi): MPI_Put/MPI_Rget into each peer's MPI window, which Open MPI carries with its osc sm component (shared memory between the ranks of one host); MPI_Alltoall goes through the vader (shared memory) BTL.\n");
	if (guest)
		fprintf(f, "- transport in the guest (QEMU/TCG, 2 vCPUs, 2 ranks, one soft-RoCE device rxe0 on veth ct0; each run a checked corner turn of 8 chunks first): %s. Why Open MPI itself does not use rxe0 (UCX, its openib BTL), with the errors they gave: %s's header. So in the guest the two sides use different transports (the rings verbs on rxe0, MPI_Alltoall TCP): its rows are reported, not a target.\n",
			transport, guest);
	else
		fprintf(f, "- no guest part (run with --guest tests/mpi/vm_corner_turn.sh for the soft-RoCE one).\n");
	fprintf(f, "- the corner_turn_vs_mpi_alltoall target is the host's: both sides on the same transport (shared memory between the ranks of one host: osc sm for the rings' windows, the vader BTL for MPI_Alltoall), the same ranks, bytes and rounds.\n");
	fprintf(f, "- bootstrap_ms: CLOCK_REALTIME just before mpirun is started (VFGX_BOOT_T0_NS) to rank 0 passing the barrier after every rank opened its rings (MPI_Win_allocate of one 1 MiB ring per peer, descriptors through vfgx_eba_exchange_mpi, every producer and consumer set up): launcher start, MPI_Init, the exchange and the window included. The MPI_Init column is the same clock to a barrier right after MPI_Init (the launcher's and Open MPI's share); rings open = the rest.\n");
	fprintf(f, "- corner turn vs MPI_Alltoall: in each round's run, after the checked corner turn of 8 chunks, %d corner turns of one block (one 64 KiB slice from every rank to every other rank) through the rings, and %d MPI_Alltoall calls with the same 64 KiB per pair, each between barriers (rings first in odd rounds, MPI_Alltoall first in even ones); time = slowest rank; rate = bytes between distinct ranks x 8 / time (Gbit/s). The ring side sends from the same block, registered with vfgx_mpi_rings_register (the verbs rings' WRITEs read it in place, as MPI_Alltoall reads its send buffer; the window rings ignore it); its consumer finds each record in its own memory, checked (the ring's 64-bit check over the payload), reads it in place and releases it; MPI_Alltoall delivers into a receive buffer. Each rank releases what arrived after every send, and polls with sched_yield when nothing arrived (4 ranks on the host's cores).\n\n",
		bench_rounds, bench_rounds);
	fprintf(f, "| round | bootstrap ms (4 ranks) | of it: mpirun to MPI_Init done ms | rings open ms | rings Gbit/s | MPI_Alltoall Gbit/s | ratio |\n|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < rounds; i++)
		fprintf(f, "| %d | %.1f | %.1f | %.1f | %.3f | %.3f | %.3f |\n", i + 1, boot[i], init[i],
			boot[i] - init[i], ring[i], a2a[i], ring[i] / a2a[i]);
	fprintf(f, "\nBootstrap growth with the rank count (3 runs each, without --bench; ranks beyond %ld cores are oversubscribed; in brackets: of it, mpirun start to every rank past MPI_Init):\n\n| ranks | run 1 ms | run 2 ms | run 3 ms | median ms | median MPI_Init part ms |\n|---|---|---|---|---|---|\n",
		sysconf(_SC_NPROCESSORS_ONLN));
	for (int k = 0; k < n_nps; k++)
		fprintf(f, "| %d | %.1f (%.1f) | %.1f (%.1f) | %.1f (%.1f) | %.1f | %.1f |\n", nps[k],
			grow[k][0], grow_init[k][0], grow[k][1], grow_init[k][1], grow[k][2],
			grow_init[k][2], bench_median(grow[k], 3), bench_median(grow_init[k], 3));
	if (guest) {
		fprintf(f, "\nIn the guest, 2 ranks, %d corner turns of one block per rate (MPI_Alltoall first in even rounds); different transports (rings: verbs on rxe0; MPI_Alltoall: TCP), so no target:\n\n| guest round | rings Gbit/s | MPI_Alltoall Gbit/s | ratio |\n|---|---|---|---|\n",
			bench_rounds);
		for (int i = 0; i < guest_rounds; i++)
			fprintf(f, "| %d | %.3f | %.3f | %.3f |\n", i + 1, gring[i], ga2a[i],
				gring[i] / ga2a[i]);
	}
	fprintf(f, "\n- bootstrap ms median (min..max): %s; rings Gbit/s: %s; MPI_Alltoall Gbit/s: %s\n",
		bench_fmt_spread(a, sizeof(a), "%.1f", boot, rounds),
		bench_fmt_spread(b, sizeof(b), "%.3f", ring, rounds),
		bench_fmt_spread(e, sizeof(e), "%.3f", a2a, rounds));
	if (guest)
		fprintf(f, "- guest rings Gbit/s: %s; guest MPI_Alltoall Gbit/s: %s\n",
			bench_fmt_spread(a, sizeof(a), "%.3f", gring, guest_rounds),
			bench_fmt_spread(b, sizeof(b), "%.3f", ga2a, guest_rounds));
	fprintf(f, "- rule: %s\n", bench_ci_rule);
	if (guest) {
		struct bench_stat gs;
		double gq[MAX_ROUNDS];

		for (int i = 0; i < guest_rounds; i++)
			gq[i] = gring[i] / ga2a[i];
		if (!bench_stat(gq, guest_rounds, &gs))
			fprintf(f, "- guest rings / MPI_Alltoall per round (verbs on rxe0 vs TCP, reported only): median %.3f, interval [%.3f, %.3f] (level %.3f, %d rounds)\n",
				gs.median, gs.lo, gs.hi, gs.level, guest_rounds);
	}
	fprintf(f, "- targets: bootstrap_ms_np4 and corner_turn_vs_mpi_alltoall from the host rounds (the same transport on both sides)\n\n");
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "bootstrap_ms_np4", .measured = boot, .n = rounds, .goal = 500,
		.higher_better = false });
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "corner_turn_vs_mpi_alltoall", .measured = ring, .reference = a2a,
		.n = rounds, .goal = 1.0, .goal_on_ratio = true, .higher_better = true });
	fclose(f);
	printf("wrote %s\n", path);
	return 0;
}
