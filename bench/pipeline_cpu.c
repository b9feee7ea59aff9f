/* pipeline_cpu.c - `vfgx bench pipeline`: CPU Mpps on one core through
 * parse + validate (IPv4 and UDP checksums) + filter + reorder, for 64, 512
 * and 1500 B frames; the reference, measured in the same run, is a loop
 * that only reads every byte of each frame once (the memory-touch floor). */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/vfgx.h>

#include "commands.h"
#include "results.h"
#include "core/numparse.h"

#define NB_PKTS 16384
#define MAX_ROUNDS 50
#define SCRAPE_MS 100
#define PUBLISH_NS 100000000ull

static const struct cli_opt pipeline_opts[] = {
	{ "out", 'o', "DIR", "write pipeline-cpu.md and .svg into DIR (default bench/results)" },
	{ "seconds", 's', "S", "measuring time per size and per round (default 1)" },
	{ "metrics-overhead", 'm', "ROUNDS", "also measure 64 B with the metrics endpoint scraped every 100 ms, ROUNDS alternating pairs" },
	{ "json", 'j', NULL, "the results file as one JSON document on stdout (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_bench_cli_pipeline = {
	.name = "bench pipeline",
	.summary = "CPU pipeline Mpps on one core at 64, 512, 1500 B",
	.opts = pipeline_opts,
};

/* With the endpoint on: the benchmark thread publishes a snapshot every
 * 100 ms (as vfgx run's control loop does once a second) and a scraper
 * thread GETs /metrics every 100 ms. */
struct metrics_load {
	vfgx_metrics *m;
	struct vfgx_metrics_snapshot *snap;
	pthread_t scraper;
	atomic_bool stop;
	uint64_t scrapes_ok, scrape_errors;
};

static int scrape_once(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	static const char req[] = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
	char buf[16384];
	ssize_t n, total = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1) {
		close(fd);
		return -1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	close(fd);
	return total > 0 && !strncmp(buf, "HTTP/1.", 7) ? 0 : -1;
}

static void *scraper_main(void *arg)
{
	struct metrics_load *ml = arg;
	uint16_t port = vfgx_metrics_port(ml->m);

	while (!atomic_load(&ml->stop)) {
		struct timespec ts = { 0, SCRAPE_MS * 1000 * 1000 };

		if (scrape_once(port))
			ml->scrape_errors++;
		else
			ml->scrapes_ok++;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

struct size_result {
	uint32_t size;
	double mpps, gbps, ref_mpps;
	double cpu_mpps;   /* per second of this thread's CPU time */
	uint64_t delivered, packets;
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char *ov_target_line; /* written last, after the other target */

static double touch_pass(const struct vfgx_pkt *pkts, uint32_t n,
			 volatile uint64_t *sink)
{
	uint64_t t0 = vfgx_now_ns(), acc = 0;

	for (uint32_t i = 0; i < n; i++)
		for (uint32_t b = 0; b < pkts[i].len; b += 8) {
			uint64_t v;

			memcpy(&v, pkts[i].data + b, 8);
			acc += v;
		}
	*sink += acc;
	return (double)(vfgx_now_ns() - t0);
}

static int run_size(vfgx_ctx *ctx, uint32_t size, double seconds,
		    struct metrics_load *ml, struct size_result *res)
{
	struct vfgx_pipeline_config pc = {
		.workers = 1, .nb_port_ranges = 1,
		.port_ranges = (const struct vfgx_port_range[]){ { 5000, 5000 } },
		.reorder = true, .reorder_window = 1024, .reorder_slot = 2048,
		.max_streams = 4,
	};
	struct vfgx_pkt *pkts = calloc(NB_PKTS, sizeof(*pkts));
	uint8_t *mem = malloc((size_t)NB_PKTS * 2048);
	struct vfgx_pkt_spec s = {
		.src_ip = 0xC6120001, .dst_ip = 0xC6120002, .src_port = 4000,
		.dst_port = 5000, .frame_len = size, .udp_csum = true,
	};
	struct vfgx_pipeline_stats st;
	volatile uint64_t sink = 0;
	vfgx_proc *proc = NULL;
	double ns = 0, ref_ns = 0, cpu_ns = 0;
	uint64_t passes = 0, total = 0, last_pub = 0;
	int ret = -1;

	if (!pkts || !mem || vfgx_proc_create(ctx, &pc, &proc))
		goto out;
	for (uint32_t i = 0; i < NB_PKTS; i++) {
		s.seq = i;
		pkts[i].data = mem + (size_t)i * 2048;
		pkts[i].len = vfgx_pkt_build(pkts[i].data, 2048, &s);
	}
	/* warm up, then time whole passes until `seconds` have elapsed */
	vfgx_proc_burst(proc, pkts, NB_PKTS);
	vfgx_proc_reset(proc);
	while (ns < seconds * 1e9) {
		uint64_t t0 = vfgx_now_ns(), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

		for (uint32_t i = 0; i < NB_PKTS; i += 32)
			vfgx_proc_burst(proc, pkts + i, 32);
		ns += (double)(vfgx_now_ns() - t0);
		cpu_ns += (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
		vfgx_proc_stats(proc, &st);
		if (st.delivered != NB_PKTS) {
			fprintf(stderr, "vfgx bench pipeline: %u B: delivered %llu of %u: pipeline broken\n",
				size, (unsigned long long)st.delivered, NB_PKTS);
			goto out;
		}
		total += st.packets;
		if (ml && vfgx_now_ns() - last_pub >= PUBLISH_NS) {
			/* counted inside the timed time: publishing is part of the cost */
			uint64_t t1 = vfgx_now_ns(), c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

			ml->snap->pipeline = st;
			ml->snap->pipeline.packets = total;
			vfgx_metrics_publish(ml->m, ml->snap);
			last_pub = vfgx_now_ns();
			ns += (double)(last_pub - t1);
			cpu_ns += (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - c1);
		}
		vfgx_proc_reset(proc);
		passes++;
	}
	for (uint64_t p = 0; p < passes; p++)
		ref_ns += touch_pass(pkts, NB_PKTS, &sink);
	res->size = size;
	res->packets = total;
	res->delivered = (uint64_t)NB_PKTS * passes;
	res->mpps = (double)total / ns * 1e3;
	res->cpu_mpps = (double)total / cpu_ns * 1e3;
	res->gbps = (double)total * size * 8 / ns;
	res->ref_mpps = (double)total / ref_ns * 1e3;
	ret = 0;
out:
	vfgx_proc_destroy(proc);
	free(pkts);
	free(mem);
	return ret;
}

struct overhead {
	int rounds;
	double off[MAX_ROUNDS], on[MAX_ROUNDS], ratio[MAX_ROUNDS];       /* per CPU-s */
	double woff[MAX_ROUNDS], won[MAX_ROUNDS], wratio[MAX_ROUNDS];    /* wall clock */
	double other_cpu_s, with_wall_s; /* the endpoint's threads, with rounds */
	double load_before, load_after;
	uint64_t scrapes_ok, scrape_errors;
};

/* Alternating rounds at 64 B: without the endpoint, then with it being
 * scraped; the order flips every pair so a drift in the machine's load
 * does not favour one side. */
static int measure_overhead(vfgx_ctx *ctx, double seconds, struct overhead *ov)
{
	static const struct vfgx_metrics_queue bench_queue = {
		.port = "bench", .backend = "none",
	};
	struct metrics_load ml = { 0 };
	struct size_result r;
	int ret = -1;

	ml.snap = calloc(1, sizeof(*ml.snap));
	if (!ml.snap || vfgx_metrics_start(ctx, "127.0.0.1:0", &ml.m)) {
		fprintf(stderr, "vfgx bench pipeline: %s\n", vfgx_last_error(ctx));
		free(ml.snap);
		return -1;
	}
	ml.snap->argsz = sizeof(*ml.snap);
	ml.snap->program = "bench";
	ml.snap->nb_queues = 1;
	ml.snap->queues = &bench_queue;
	ov->load_before = bench_loadavg1();
	for (int i = 0; i < ov->rounds; i++) {
		for (int k = 0; k < 2; k++) {
			bool with = (k == 0) == (i % 2 == 1);

			uint64_t p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
			uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w0 = vfgx_now_ns();

			if (with) {
				atomic_store(&ml.stop, false);
				if (pthread_create(&ml.scraper, NULL, scraper_main, &ml))
					goto out;
			}
			ret = run_size(ctx, 64, seconds, with ? &ml : NULL, &r);
			if (with) {
				atomic_store(&ml.stop, true);
				pthread_join(ml.scraper, NULL);
				/* process CPU less this thread's: the scraper and MHD */
				ov->other_cpu_s += (double)((clock_ns(CLOCK_PROCESS_CPUTIME_ID) - p0) -
							    (clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0)) / 1e9;
				ov->with_wall_s += (double)(vfgx_now_ns() - w0) / 1e9;
			}
			if (ret)
				goto out;
			if (with) {
				ov->on[i] = r.cpu_mpps;
				ov->won[i] = r.mpps;
			} else {
				ov->off[i] = r.cpu_mpps;
				ov->woff[i] = r.mpps;
			}
		}
		ov->ratio[i] = ov->on[i] / ov->off[i];
		ov->wratio[i] = ov->won[i] / ov->woff[i];
		printf("  metrics overhead round %d: per CPU-s %.2f Mpps without, %.2f with scraping (ratio %.4f); wall %.2f / %.2f (%.4f)\n",
		       i + 1, ov->off[i], ov->on[i], ov->ratio[i], ov->woff[i], ov->won[i],
		       ov->wratio[i]);
	}
	ov->load_after = bench_loadavg1();
	ov->scrapes_ok = ml.scrapes_ok;
	ov->scrape_errors = ml.scrape_errors;
	ret = ml.scrapes_ok && !ml.scrape_errors ? 0 : -1;
	if (ret)
		fprintf(stderr, "vfgx bench pipeline: %llu scrapes answered, %llu failed\n",
			(unsigned long long)ml.scrapes_ok, (unsigned long long)ml.scrape_errors);
out:
	vfgx_metrics_stop(ml.m);
	free(ml.snap);
	return ret;
}

static void write_overhead(FILE *f, const struct overhead *ov, double seconds)
{
	double lo = ov->ratio[0], hi = ov->ratio[0], med = bench_median(ov->ratio, ov->rounds);
	char line[256];

	for (int i = 1; i < ov->rounds; i++) {
		lo = ov->ratio[i] < lo ? ov->ratio[i] : lo;
		hi = ov->ratio[i] > hi ? ov->ratio[i] : hi;
	}
	fprintf(f, "## Metrics endpoint overhead (64 B)\n\n");
	fprintf(f, "- method: %d alternating pairs of %g s runs at 64 B (order flipped every pair): without the endpoint, and with vfgx_metrics serving on 127.0.0.1 while the benchmark thread publishes a snapshot every 100 ms (inside its timed loop) and a second thread GETs /metrics every %d ms (%llu scrapes answered, %llu failed). Rate = packets per second of the benchmark thread's CPU time (CLOCK_THREAD_CPUTIME_ID), because this machine is shared and wall-clock rates measure the other tenants (load below); wall-clock rates are listed too. Ratio = with / without, per pair; the target line gives their median as measured (reference 1 = the rate without) and min..max as the interval; met=yes only when the whole interval is >= 0.99.\n",
		ov->rounds, seconds, SCRAPE_MS, (unsigned long long)ov->scrapes_ok,
		(unsigned long long)ov->scrape_errors);
	fprintf(f, "- the endpoint's own threads (scraper + libmicrohttpd) used %.2f%% of one core during the rounds with scraping (process CPU time less the benchmark thread's)\n",
		ov->with_wall_s > 0 ? 100 * ov->other_cpu_s / ov->with_wall_s : 0);
	fprintf(f, "- load average (1 min) before %.2f, after %.2f on %ld online cores (other work shares this machine)\n\n",
		ov->load_before, ov->load_after, sysconf(_SC_NPROCESSORS_ONLN));
	fprintf(f, "| round | without Mpps/CPU-s | with scraping Mpps/CPU-s | ratio | without wall Mpps | with wall Mpps | wall ratio |\n|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < ov->rounds; i++)
		fprintf(f, "| %d | %.3f | %.3f | %.4f | %.3f | %.3f | %.4f |\n", i + 1, ov->off[i],
			ov->on[i], ov->ratio[i], ov->woff[i], ov->won[i], ov->wratio[i]);
	fprintf(f, "| median | %.3f | %.3f | %.4f | %.3f | %.3f | %.4f |\n\n",
		bench_median(ov->off, ov->rounds), bench_median(ov->on, ov->rounds), med,
		bench_median(ov->woff, ov->rounds), bench_median(ov->won, ov->rounds),
		bench_median(ov->wratio, ov->rounds));
	snprintf(line, sizeof(line),
		 "target: metrics_overhead measured=%.4f reference=1 ratio=%.4f goal=0.99 met=%s interval=[%.4f,%.4f]\n",
		 med, med, lo >= 0.99 ? "yes" : "no", lo, hi);
	ov_target_line = strdup(line);
}

int vfgx_bench_pipeline(int argc, char **argv)
{
	static const uint32_t sizes[] = { 64, 512, 1500 };
	struct size_result res[3];
	const char *out = "bench/results";
	double seconds = 1.0;
	char path[512];
	vfgx_ctx *ctx;
	FILE *f;
	int c;

	struct overhead ov = { 0 };

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_bench_cli_pipeline)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 's':
			if (vfgx_num_double(optarg, 0, 600, &seconds, NULL, 0) ||
			    seconds <= 0) {
				fprintf(stderr, "vfgx bench pipeline: --seconds must be 0..600\n");
				return 2;
			}
			break;
		case 'm':
			if (vfgx_flag_int("bench pipeline", "--metrics-overhead", optarg, 1,
					  MAX_ROUNDS, &ov.rounds))
				return 2;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_bench_cli_pipeline);
			return 0;
		default:
			return 2;
		}
	}
	if (optind != argc)
		return cli_bad_operands(&vfgx_bench_cli_pipeline, "unexpected operand");
	if (vfgx_ctx_create(&ctx))
		return 1;
	if (ov.rounds && measure_overhead(ctx, seconds, &ov)) {
		vfgx_ctx_destroy(ctx);
		return 1;
	}
	for (int i = 0; i < 3; i++) {
		if (run_size(ctx, sizes[i], seconds, NULL, &res[i])) {
			vfgx_ctx_destroy(ctx);
			return 1;
		}
		printf("%5u B: %7.2f Mpps %7.2f Gbps per core (memory-touch reference %7.2f Mpps)\n",
		       res[i].size, res[i].mpps, res[i].gbps, res[i].ref_mpps);
	}
	vfgx_ctx_destroy(ctx);
	f = bench_results_open(out, "pipeline-cpu",
			       "CPU pipeline: parse + validate + filter + reorder, one core",
			       path, sizeof(path));
	if (!f)
		return 1;
	if (ov.rounds)
		fprintf(f, "- command: vfgx bench pipeline --seconds %g --metrics-overhead %d\n",
			seconds, ov.rounds);
	else
		fprintf(f, "- command: vfgx bench pipeline --seconds %g\n", seconds);
	fprintf(f, "- method: %d frames (one stream, UDP checksums on) processed in bursts of 32 by one vfgx_proc on one thread, repeated for %g s per size; every pass must deliver every frame in order. Reference: a loop that reads every byte of the same frames once (memory-touch floor), same run.\n\n",
		NB_PKTS, seconds);
	fprintf(f, "| frame B | packets | Mpps/core | Gbps/core | reference Mpps | ratio |\n|---|---|---|---|---|---|\n");
	for (int i = 0; i < 3; i++)
		fprintf(f, "| %u | %llu | %.2f | %.2f | %.2f | %.3f |\n", res[i].size,
			(unsigned long long)res[i].packets, res[i].mpps, res[i].gbps,
			res[i].ref_mpps, res[i].mpps / res[i].ref_mpps);
	fprintf(f, "\n");
	if (ov.rounds)
		write_overhead(f, &ov, seconds);
	bench_target(f, "cpu_pipeline_64B_mpps_per_core", res[0].mpps,
		     res[0].ref_mpps, 10, true);
	if (ov_target_line) {
		fputs(ov_target_line, f);
		free(ov_target_line);
		ov_target_line = NULL;
	}
	fclose(f);
	printf("wrote %s\n", path);
	return 0;
}
