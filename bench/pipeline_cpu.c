/* pipeline_cpu.c - `vfgx bench pipeline`: CPU Mpps on one core through
 * parse + validate (IPv4 and UDP checksums) + filter + reorder, for 64, 512
 * and 1500 B frames of several impaired streams in buffers larger than the
 * last-level cache; the reference, measured in the same rounds, is an
 * l3fwd-style parse + checksum check of the same buffers (pipeline_work.c). */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
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
#include "cliopt.h"
#include "pipeline_work.h"

#define MAX_ROUNDS 300
#define SCRAPE_MS 100
#define PUBLISH_NS 100000000ull

static const struct cli_opt pipeline_opts[] = {
	{ "out", 'o', "DIR", "write pipeline-cpu.md and .svg into DIR (default bench/results)" },
	{ "seconds", 's', "S", "measuring time per size and per round, each side (default 0.5)" },
	{ "rounds", 'r', "N", "rounds per size, vfgx and the floor interleaved (default 7)" },
	{ "working-set", 'w', "MB", "buffer memory per size (default twice the last-level cache, at least 64)" },
	{ "metrics-overhead", 'm', "ROUNDS", "also measure 64 B with the metrics endpoint scraped every 100 ms: ROUNDS rounds of without / with / without again (A/A), 1..300" },
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
	double mpps, cpu_mpps;        /* per wall second, per CPU second */
	uint64_t packets;
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One pass must account for every frame: each unique sequence delivered,
 * every copy dropped as late or duplicate, every lost one a gap. */
static int check_pass(const struct work *w, const struct vfgx_pipeline_stats *st)
{
	uint64_t dups = st->drops[VFGX_DROP_LATE] + st->drops[VFGX_DROP_DUPLICATE];

	if (st->packets == w->n && st->delivered == w->unique && dups == w->dups &&
	    st->gaps == w->lost && !st->order_errors)
		return 0;
	fprintf(stderr, "vfgx bench pipeline: %u B: offered %llu, delivered %llu of %llu, "
		"late+duplicate %llu of %llu, gaps %llu of %llu, order errors %llu: pipeline broken\n",
		w->size, (unsigned long long)st->packets, (unsigned long long)st->delivered,
		(unsigned long long)w->unique, (unsigned long long)dups,
		(unsigned long long)w->dups, (unsigned long long)st->gaps,
		(unsigned long long)w->lost, (unsigned long long)st->order_errors);
	return -1;
}

/* Whole passes over the working set until `seconds` have elapsed; a pass
 * is bursts of 32, then the flush that ends the input. */
static int run_vfgx(vfgx_ctx *ctx, const struct work *w, double seconds,
		    struct metrics_load *ml, struct size_result *res)
{
	struct vfgx_pipeline_config pc = {
		.workers = 1, .nb_port_ranges = 1,
		.port_ranges = (const struct vfgx_port_range[]){ { WORK_PORT, WORK_PORT } },
		.reorder = true, .reorder_window = 1024, .reorder_slot = 2048,
		.max_streams = WORK_STREAMS,
	};
	struct vfgx_pipeline_stats st;
	vfgx_proc *proc = NULL;
	double ns = 0, cpu_ns = 0;
	uint64_t total = 0, last_pub = 0;
	int ret = -1;

	if (vfgx_proc_create(ctx, &pc, &proc))
		return -1;
	/* one untimed pass: the reorder windows' first touch is set-up */
	for (uint64_t i = 0; i < w->n; i += 32)
		vfgx_proc_burst(proc, w->pkts + i, (uint32_t)(w->n - i < 32 ? w->n - i : 32));
	vfgx_proc_flush(proc);
	vfgx_proc_reset(proc);
	while (ns < seconds * 1e9) {
		uint64_t t0 = vfgx_now_ns(), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		uint64_t i;

		for (i = 0; i + 32 <= w->n; i += 32) {
			vfgx_proc_burst(proc, w->pkts + i, 32);
			if (ml && !(i & 0xffff) && vfgx_now_ns() - last_pub >= PUBLISH_NS) {
				/* inside the timed loop: publishing is part of the cost */
				vfgx_proc_stats(proc, &st);
				ml->snap->pipeline = st;
				ml->snap->pipeline.packets += total;
				vfgx_metrics_publish(ml->m, ml->snap);
				last_pub = vfgx_now_ns();
			}
		}
		if (i < w->n)
			vfgx_proc_burst(proc, w->pkts + i, (uint32_t)(w->n - i));
		vfgx_proc_flush(proc);
		ns += (double)(vfgx_now_ns() - t0);
		cpu_ns += (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
		vfgx_proc_stats(proc, &st);
		if (check_pass(w, &st))
			goto out;
		total += st.packets;
		vfgx_proc_reset(proc);
	}
	res->packets = total;
	res->mpps = (double)total / ns * 1e3;
	res->cpu_mpps = (double)total / cpu_ns * 1e3;
	ret = 0;
out:
	vfgx_proc_destroy(proc);
	return ret;
}

static int run_floor(const struct work *w, double seconds, struct size_result *res)
{
	double ns = 0, cpu_ns = 0;
	uint64_t total = 0;

	while (ns < seconds * 1e9) {
		uint64_t t0 = vfgx_now_ns(), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		uint64_t ok = work_floor_pass(w);

		ns += (double)(vfgx_now_ns() - t0);
		cpu_ns += (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
		/* every frame is well formed: the floor must accept them all */
		if (ok != w->n) {
			fprintf(stderr, "vfgx bench pipeline: %u B: floor accepted %llu of %llu frames\n",
				w->size, (unsigned long long)ok, (unsigned long long)w->n);
			return -1;
		}
		total += w->n;
	}
	res->packets = total;
	res->mpps = (double)total / ns * 1e3;
	res->cpu_mpps = (double)total / cpu_ns * 1e3;
	return 0;
}

struct overhead {
	int rounds;
	double off[MAX_ROUNDS], on[MAX_ROUNDS], ratio[MAX_ROUNDS];       /* per CPU-s */
	double woff[MAX_ROUNDS], won[MAX_ROUNDS], wratio[MAX_ROUNDS];    /* wall clock */
	double ctl[MAX_ROUNDS], ctl_ratio[MAX_ROUNDS]; /* A/A: without, again */
	double other_cpu_s, with_wall_s; /* the endpoint's threads, with rounds */
	double load_before, load_after;
	uint64_t scrapes_ok, scrape_errors;
	int bench_cpu; /* the benchmark thread's CPU; -1: not pinned */
};

/* With two CPUs or more: the benchmark thread on the last one, the
 * endpoint's and the scraper's threads (created while *others is this
 * thread's mask, so they inherit it) on the rest, so that neither side's
 * wake-ups move the other.  Returns the benchmark CPU, or -1. */
static int split_cpus(cpu_set_t *saved, cpu_set_t *others)
{
	int last = -1;

	if (sched_getaffinity(0, sizeof(*saved), saved))
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, saved))
			last = c;
	if (last < 0 || CPU_COUNT(saved) < 2)
		return -1;
	*others = *saved;
	CPU_CLR(last, others);
	return last;
}

/* Alternating rounds at 64 B: without the endpoint, then with it being
 * scraped; the order flips every pair so a drift in the machine's load
 * does not favour one side. */
static int measure_overhead(vfgx_ctx *ctx, const struct work *w, double seconds,
			    struct overhead *ov)
{
	static const struct vfgx_metrics_queue bench_queue = {
		.port = "bench", .backend = "none",
	};
	struct metrics_load ml = { 0 };
	struct size_result r;
	cpu_set_t saved, others, mine;
	int ret = -1;

	ov->bench_cpu = split_cpus(&saved, &others);
	if (ov->bench_cpu >= 0)
		sched_setaffinity(0, sizeof(others), &others);
	ml.snap = calloc(1, sizeof(*ml.snap));
	if (!ml.snap || vfgx_metrics_start(ctx, "127.0.0.1:0", &ml.m)) {
		fprintf(stderr, "vfgx bench pipeline: %s\n", vfgx_last_error(ctx));
		free(ml.snap);
		if (ov->bench_cpu >= 0)
			sched_setaffinity(0, sizeof(saved), &saved);
		return -1;
	}
	if (ov->bench_cpu >= 0) {
		CPU_ZERO(&mine);
		CPU_SET(ov->bench_cpu, &mine);
		sched_setaffinity(0, sizeof(mine), &mine);
	}
	ml.snap->argsz = sizeof(*ml.snap);
	ml.snap->program = "bench";
	ml.snap->nb_queues = 1;
	ml.snap->queues = &bench_queue;
	ov->load_before = bench_loadavg1();
	for (int i = 0; i < ov->rounds; i++) {
		/* three runs a round: without (0), with (1), and without again,
		 * the A/A control (2), in the six orders in turn, so that every
		 * role takes every place equally often over 6 rounds: the A/A
		 * ratio is then the same statistic as the target's, with no
		 * endpoint, and no place (a cache warmed by the run before, a
		 * load that drifts) favours a side */
		static const int orders[6][3] = {
			{ 0, 1, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 0, 2, 1 }, { 2, 1, 0 }, { 1, 0, 2 },
		};

		for (int j = 0; j < 3; j++) {
			int k = orders[i % 6][j];
			bool with = k == 1;

			uint64_t p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
			uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w0 = vfgx_now_ns();

			if (with) {
				pthread_attr_t at;
				int e;

				atomic_store(&ml.stop, false);
				pthread_attr_init(&at);
				if (ov->bench_cpu >= 0)
					pthread_attr_setaffinity_np(&at, sizeof(others), &others);
				e = pthread_create(&ml.scraper, &at, scraper_main, &ml);
				pthread_attr_destroy(&at);
				if (e)
					goto out;
			}
			ret = run_vfgx(ctx, w, seconds, with ? &ml : NULL, &r);
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
			} else if (k == 2) {
				ov->ctl[i] = r.cpu_mpps;
			} else {
				ov->off[i] = r.cpu_mpps;
				ov->woff[i] = r.mpps;
			}
		}
		ov->ratio[i] = ov->on[i] / ov->off[i];
		ov->wratio[i] = ov->won[i] / ov->woff[i];
		ov->ctl_ratio[i] = ov->ctl[i] / ov->off[i];
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
	if (ov->bench_cpu >= 0)
		sched_setaffinity(0, sizeof(saved), &saved);
	return ret;
}

static void write_overhead(FILE *f, const struct overhead *ov, double seconds)
{
	char a[64], b[64], c[64], d[64], e[64], g[64], h[64];

	fprintf(f, "## Metrics endpoint overhead (64 B)\n\n");
	char pin[160];

	if (ov->bench_cpu >= 0)
		snprintf(pin, sizeof(pin), "The benchmark thread is pinned to CPU %d, the endpoint's and the scraper's threads to the other CPUs (with and without alike).",
			 ov->bench_cpu);
	else
		snprintf(pin, sizeof(pin), "Threads are not pinned (one CPU).");
	fprintf(f, "- method: %d rounds of three %g s runs at 64 B on the same cold, impaired traffic as above: without the endpoint, with it, and without it again (the A/A control), in the six orders of the three in turn (every role in every place equally often over 6 rounds). Without the endpoint, and with vfgx_metrics serving on 127.0.0.1 while the benchmark thread publishes a snapshot every 100 ms (inside its timed loop) and a second thread GETs /metrics every %d ms (%llu scrapes answered, %llu failed). %s Rate = packets per second of the benchmark thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so that wall-clock time taken by other work on the machine does not count (load below); wall-clock rates are listed too. Ratio = with / without, per pair; the target is on the paired ratios (interval: see the rule at the end).\n",
		ov->rounds, seconds, SCRAPE_MS, (unsigned long long)ov->scrapes_ok,
		(unsigned long long)ov->scrape_errors, pin);
	fprintf(f, "- the endpoint's own threads (scraper + libmicrohttpd) used %.2f%% of one core during the rounds with scraping (process CPU time less the benchmark thread's)\n",
		ov->with_wall_s > 0 ? 100 * ov->other_cpu_s / ov->with_wall_s : 0);
	fprintf(f, "- load average (1 min) before %.2f, after %.2f on %ld online cores\n\n",
		ov->load_before, ov->load_after, sysconf(_SC_NPROCESSORS_ONLN));
	fprintf(f, "- A/A control: control ratio = the second run without the endpoint / the first, per round: the target's statistic with nothing changed. Its interval is the resolution of this measurement on this host: the target is met only when the with/without interval lies at or above the goal AND the A/A interval lies within [goal, 1/goal], i.e. the run can tell a 1%% change from none (otherwise met=no, with the A/A interval as the reason: more rounds or a quieter host).\n\n");
	fprintf(f, "| round | without Mpps/CPU-s | with scraping Mpps/CPU-s | ratio | without wall Mpps | with wall Mpps | wall ratio | control ratio |\n|---|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < ov->rounds; i++)
		fprintf(f, "| %d | %.3f | %.3f | %.4f | %.3f | %.3f | %.4f | %.4f |\n", i + 1, ov->off[i],
			ov->on[i], ov->ratio[i], ov->woff[i], ov->won[i], ov->wratio[i], ov->ctl_ratio[i]);
	fprintf(f, "| median (min..max) | %s | %s | %s | %s | %s | %s | %s |\n",
		bench_fmt_spread(a, sizeof(a), "%.3f", ov->off, ov->rounds),
		bench_fmt_spread(b, sizeof(b), "%.3f", ov->on, ov->rounds),
		bench_fmt_spread(c, sizeof(c), "%.4f", ov->ratio, ov->rounds),
		bench_fmt_spread(d, sizeof(d), "%.3f", ov->woff, ov->rounds),
		bench_fmt_spread(e, sizeof(e), "%.3f", ov->won, ov->rounds),
		bench_fmt_spread(g, sizeof(g), "%.4f", ov->wratio, ov->rounds),
		bench_fmt_spread(h, sizeof(h), "%.4f", ov->ctl_ratio, ov->rounds));
	{
		struct bench_stat cs;

		if (!bench_stat(ov->ctl_ratio, ov->rounds, &cs))
			fprintf(f, "\nA/A control ratio: median %.4f, min..max %.4f..%.4f, interval of the median [%.4f, %.4f] (level %.3f).\n\n",
				cs.median, cs.min, cs.max, cs.lo, cs.hi, cs.level);
	}
}

/* metrics_overhead: the paired with/without ratios against goal, met only
 * when the A/A control's interval lies within [goal, 1/goal] too (the
 * run resolves a change of 1 - goal); the line bench_target_rounds writes,
 * turned to met=no with the A/A interval as the reason otherwise. */
static void write_overhead_target(FILE *f, const struct overhead *ov, double goal)
{
	struct bench_stat aa;
	char *line = NULL, *at;
	size_t len = 0;
	FILE *m = open_memstream(&line, &len);
	int met;

	if (!m)
		return;
	met = bench_target_rounds(m, &(struct bench_target_rounds){
		.name = "metrics_overhead", .measured = ov->on, .reference = ov->off,
		.n = ov->rounds, .goal = goal, .goal_on_ratio = true, .higher_better = true });
	fclose(m);
	if (met == 1 && !bench_stat(ov->ctl_ratio, ov->rounds, &aa) &&
	    !(aa.lo >= goal && aa.hi <= 1 / goal) && (at = strstr(line, " met=yes "))) {
		line[strcspn(line, "\n")] = '\0';
		fprintf(f, "%.*s met=no %s (the A/A control's interval [%.4f,%.4f] is wider than [%.4g,%.4g]: this run cannot resolve the goal)\n",
			(int)(at - line), line, at + 9, aa.lo, aa.hi, goal, 1 / goal);
	} else {
		fputs(line, f);
	}
	free(line);
}

struct size_rounds {
	uint32_t size;
	int n;
	double v[MAX_ROUNDS], fl[MAX_ROUNDS], ratio[MAX_ROUNDS];    /* per CPU-s */
	double vw[MAX_ROUNDS], flw[MAX_ROUNDS];                     /* wall */
	uint64_t frames, unique, lost, dups, reordered;
	size_t bytes;
};

/* Rounds of vfgx then the floor (order flipped every round) on one
 * working set. */
static int measure_size(vfgx_ctx *ctx, const struct work *w, double seconds,
			int rounds, struct size_rounds *sr)
{
	sr->size = w->size;
	sr->n = rounds;
	sr->frames = w->n;
	sr->unique = w->unique;
	sr->lost = w->lost;
	sr->dups = w->dups;
	sr->reordered = w->reordered;
	sr->bytes = w->bytes;
	for (int i = 0; i < rounds; i++) {
		struct size_result rv = { 0 }, rf = { 0 };

		for (int k = 0; k < 2; k++) {
			bool floor_turn = (k == 0) == (i % 2 == 1);

			if (floor_turn ? run_floor(w, seconds, &rf) : run_vfgx(ctx, w, seconds, NULL, &rv))
				return -1;
		}
		sr->v[i] = rv.cpu_mpps;
		sr->fl[i] = rf.cpu_mpps;
		sr->ratio[i] = rv.cpu_mpps / rf.cpu_mpps;
		sr->vw[i] = rv.mpps;
		sr->flw[i] = rf.mpps;
		printf("%5u B round %d: vfgx %7.2f Mpps/CPU-s, floor %7.2f (ratio %.3f); wall %.2f / %.2f\n",
		       w->size, i + 1, sr->v[i], sr->fl[i], sr->ratio[i], sr->vw[i], sr->flw[i]);
	}
	return 0;
}

static void write_sizes(FILE *f, const struct size_rounds *sr, int nsizes, size_t llc)
{
	char a[64], b[64], c[64], d[64];

	fprintf(f, "- traffic: %d streams round-robin, from a fixed seed: 1%% of sequences lost, 0.5%% of frames sent twice (the copy 1..4 frames later), 1%% swapped with a frame 1..16 places later; UDP checksums on. Frames packed at 64 B-aligned strides in arrival order, as a receive ring fills them. Working set (frames + descriptors) per size below, against a last-level cache of %zu MiB as the system reports it (each pass streams it from memory). Every vfgx pass must account for every frame: each unique sequence delivered in order, each copy dropped as late or duplicate, each lost one counted as a gap.\n",
		WORK_STREAMS, llc >> 20);
	fprintf(f, "- vfgx: one vfgx_proc on one thread, bursts of 32, parse + validate (IPv4 and UDP checksums) + filter + reorder, flush at the end of each pass; no system call in the timed loop; one copy: every accepted payload into its reorder window slot (src/pipeline/proc.c as committed at the commit above).\n");
	fprintf(f, "- floor (reference of the ratio, same buffers, same round): an l3fwd-style loop written in the benchmark, independent of libvfgx: Ethernet type, IPv4 version/IHL/length, IPv4 header checksum, protocol, UDP length and UDP checksum over pseudo header and payload, destination port match. It neither reorders nor keeps any state: one thread, no copy, no system call. The two do different work (vfgx more); the target is on vfgx's absolute rate, the floor is listed for scale.\n");
	fprintf(f, "- rate = packets per second of the benchmark thread's CPU time (Mpps per core); wall-clock rates in the rounds table. vfgx and the floor alternate within each round (order flipped every round).\n\n");
	fprintf(f, "| frame B | frames | working set MiB | unique | lost | duplicated | swapped |\n|---|---|---|---|---|---|---|\n");
	for (int s = 0; s < nsizes; s++)
		fprintf(f, "| %u | %llu | %zu | %llu | %llu | %llu | %llu |\n", sr[s].size,
			(unsigned long long)sr[s].frames, sr[s].bytes >> 20,
			(unsigned long long)sr[s].unique, (unsigned long long)sr[s].lost,
			(unsigned long long)sr[s].dups, (unsigned long long)sr[s].reordered);
	fprintf(f, "\n| frame B | round | Mpps/core | floor Mpps/core | ratio | wall Mpps | floor wall Mpps |\n|---|---|---|---|---|---|---|\n");
	for (int s = 0; s < nsizes; s++)
		for (int i = 0; i < sr[s].n; i++)
			fprintf(f, "| %u | %d | %.3f | %.3f | %.3f | %.3f | %.3f |\n", sr[s].size, i + 1,
				sr[s].v[i], sr[s].fl[i], sr[s].ratio[i], sr[s].vw[i], sr[s].flw[i]);
	fprintf(f, "\n| frame B | vfgx Mpps/core median (min..max) | floor | ratio | vfgx Gbps/core |\n|---|---|---|---|---|\n");
	for (int s = 0; s < nsizes; s++) {
		double gb[MAX_ROUNDS];

		for (int i = 0; i < sr[s].n; i++)
			gb[i] = sr[s].v[i] * sr[s].size * 8 / 1e3;
		fprintf(f, "| %u | %s | %s | %s | %s |\n", sr[s].size,
			bench_fmt_spread(a, sizeof(a), "%.2f", sr[s].v, sr[s].n),
			bench_fmt_spread(b, sizeof(b), "%.2f", sr[s].fl, sr[s].n),
			bench_fmt_spread(c, sizeof(c), "%.3f", sr[s].ratio, sr[s].n),
			bench_fmt_spread(d, sizeof(d), "%.2f", gb, sr[s].n));
	}
	fprintf(f, "\n");
}

int vfgx_bench_pipeline(int argc, char **argv)
{
	static const uint32_t sizes[] = { 64, 512, 1500 };
	struct size_rounds sr[3] = { 0 };
	const char *out = "bench/results";
	double seconds = 0.5, load0, load1;
	int rounds = 7, ws_mb = 0;
	size_t llc = work_llc_bytes(), ws;
	char path[512];
	vfgx_ctx *ctx;
	FILE *f;
	int c, ret = 1;
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
		case 'r':
			if (vfgx_flag_int("bench pipeline", "--rounds", optarg, 1, MAX_ROUNDS, &rounds))
				return 2;
			break;
		case 'w':
			if (vfgx_flag_int("bench pipeline", "--working-set", optarg, 1, 65536, &ws_mb))
				return 2;
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
	if (bench_out_check(out, "pipeline-cpu"))
		return 1;
	ws = ws_mb ? (size_t)ws_mb << 20 : 2 * llc;
	if (!ws_mb && ws < (64u << 20))
		ws = 64u << 20;
	if (vfgx_ctx_create(&ctx))
		return 1;
	load0 = bench_loadavg1();
	for (int i = 0; i < 3; i++) {
		struct work w;

		if (work_build(&w, sizes[i], ws)) {
			fprintf(stderr, "vfgx bench pipeline: cannot allocate %zu MiB (use --working-set MB)\n",
				ws >> 20);
			goto out;
		}
		if (measure_size(ctx, &w, seconds, rounds, &sr[i]) ||
		    (i == 0 && ov.rounds && measure_overhead(ctx, &w, seconds, &ov))) {
			work_free(&w);
			goto out;
		}
		work_free(&w);
	}
	load1 = bench_loadavg1();
	f = bench_results_open(out, "pipeline-cpu",
			       "CPU pipeline: parse + validate + filter + reorder, one core",
			       path, sizeof(path));
	if (!f)
		goto out;
	fprintf(f, "- command: vfgx bench pipeline --seconds %g --rounds %d%s", seconds, rounds,
		ws_mb ? " --working-set " : "");
	if (ws_mb)
		fprintf(f, "%d", ws_mb);
	if (ov.rounds)
		fprintf(f, " --metrics-overhead %d", ov.rounds);
	fprintf(f, "\n- load average (1 min) before %.2f, after %.2f on %ld online cores: absolute rates move with whatever else runs on this machine; the ratio against the floor measured in the same round is what counts\n",
		load0, load1, sysconf(_SC_NPROCESSORS_ONLN));
	write_sizes(f, sr, 3, llc);
	if (ov.rounds)
		write_overhead(f, &ov, seconds);
	fprintf(f, "- rule: %s\n\n", bench_ci_rule);
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "cpu_pipeline_64B_mpps_per_core", .measured = sr[0].v,
		.reference = sr[0].fl, .n = sr[0].n, .goal = 10, .higher_better = true });
	if (ov.rounds)
		write_overhead_target(f, &ov, 0.99);
	fclose(f);
	printf("wrote %s\n", path);
	ret = 0;
out:
	vfgx_ctx_destroy(ctx);
	return ret;
}
