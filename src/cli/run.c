/* run.c - `vfgx run [config]`: a client of the library's session
 * (vfgx/session.h), which opens the config's ports and runs the pipeline;
 * prints a live line a second on a terminal, the final report, and exits 0
 * only when the run met the config's expectations (its expect: section). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/session.h>
#include <vfgx/vfgx.h>

#include "cliopt.h"
#include "commands.h"
#include "run_capture.h"
#include "run_config.h"
#include "run_mpi.h"
#include "run_output.h"

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void live_line(const struct vfgx_pipeline_stats *now,
		      const struct vfgx_pipeline_stats *prev, double dt)
{
	uint64_t drops = 0;

	for (int i = 0; i < VFGX_DROP_MAX; i++)
		drops += now->drops[i];
	fprintf(stdout,
		"\r%8.3f Mpps %8.3f Gbps  delivered %" PRIu64 "  drops %" PRIu64
		"  p99 latency %" PRIu64 " us   ",
		(double)(now->packets - prev->packets) / dt / 1e6,
		(double)(now->bytes - prev->bytes) * 8 / dt / 1e9,
		now->delivered, drops, vfgx_stats_lat_pct(now, 99) / 1000);
	fflush(stdout);
}

struct verdict {
	int failed;
};

static void check(struct verdict *v, bool wanted, bool ok, const char *what,
		  const char *detail)
{
	if (!wanted)
		return;
	run_output_expectation(what, ok, detail);
	printf("  %-13s %s%s%s\n", what, ok ? "ok" : "FAILED",
	       detail[0] ? "  " : "", detail);
	if (!ok)
		v->failed = 1;
}

/* The min_packets line; when nothing was delivered it says why. */
static void min_packets_detail(char *d, size_t len, const struct run_expect *ex,
			       const struct vfgx_pipeline_stats *st)
{
	int n = snprintf(d, len, "%" PRIu64 " delivered, at least %" PRIu64 " wanted",
			 st->delivered, ex->min_packets);

	if (st->delivered || n < 0 || (size_t)n >= len)
		return;
	if (!st->packets)
		snprintf(d + n, len - (size_t)n,
			 ": nothing received (is a sender running?); expect.min_packets: 0 accepts an empty run");
	else
		snprintf(d + n, len - (size_t)n,
			 ": %" PRIu64 " received, every one dropped (see the drop lines); expect.min_packets: 0 accepts an empty run",
			 st->packets);
}

/* What the run was given besides its config: a sender's report
 * (--expect-sent). */
struct run_extra {
	const struct vfgx_source_report *sent; /* NULL: the ports' own */
	const char *sent_file;                 /* --expect-sent, or NULL */
	char sent_line[256];                   /* its expectation's detail */
};

/* The session's report lines, then what the config's expect: section
 * asked of them. */
static int report(const struct vfgx_config *cfg, const struct run_expect *expect,
		  vfgx_session *s, const struct vfgx_session_report *r,
		  const struct run_extra *ex)
{
	const struct vfgx_pipeline_stats *st = &r->pipeline;
	struct vfgx_source_report src = ex->sent ? *ex->sent : r->source;
	uint64_t drops = 0, explained, port_drops = r->port_drops, refused = r->conns_refused;
	struct verdict v = { 0 };
	char d[256];

	printf("\n== vfgx run report (%s) ==\n", cli_esc(cfg->source));
	vfgx_session_report_print(s, ex->sent, stdout);
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		drops += st->drops[i];

	printf("expectations:\n");
	/* a report that cannot be used fails the run, in text and JSON alike */
	check(&v, ex->sent_file != NULL, ex->sent != NULL, "expect_sent", ex->sent_line);
	if (expect->all_received) {
		if (!src.known) {
			/* a live source: nothing known of what was sent, so
			 * every packet that reached the host must be delivered
			 * and no layer may have dropped or refused anything */
			snprintf(d, sizeof(d),
				 "live source: received %" PRIu64 ", delivered %" PRIu64
				 "; dropped by ports %" PRIu64 ", by the pipeline %" PRIu64
				 ", gaps %" PRIu64 ", connections refused %" PRIu64,
				 r->rx_packets, st->delivered, port_drops, drops,
				 st->gaps, refused);
			check(&v, true,
			      port_drops == 0 && drops == 0 && refused == 0 &&
				      st->gaps == 0 && st->delivered == st->packets &&
				      r->rx_packets == st->packets,
			      "all_received", d);
		} else {
			/* a corrupted packet is dropped by the UDP checksum,
			 * or, sent through a kernel socket that checksums the
			 * damaged payload anew, delivered and caught by verify */
			uint64_t csum = st->drops[VFGX_DROP_BAD_UDP_CSUM];
			uint64_t via_verify = ex->sent ? st->verify_errors : 0;
			uint64_t want = src.generated - src.lost - csum;
			uint64_t sent = src.generated - src.lost + src.duplicated;

			explained = csum +
				    st->drops[VFGX_DROP_DUPLICATE] +
				    st->drops[VFGX_DROP_LATE];
			snprintf(d, sizeof(d),
				 "delivered %" PRIu64 " of %" PRIu64 " expected; received %" PRIu64
				 " of %" PRIu64 " sent; unexplained drops %" PRIu64,
				 st->delivered, want, st->packets, sent,
				 drops - explained + port_drops + refused);
			check(&v, true,
			      st->delivered == want && st->packets == sent &&
				      r->rx_packets == sent && drops == explained &&
				      port_drops == 0 && refused == 0 &&
				      csum + via_verify == src.corrupted &&
				      st->drops[VFGX_DROP_DUPLICATE] +
						      st->drops[VFGX_DROP_LATE] ==
					      src.duplicated,
			      "all_received", d);
		}
	}
	if (r->user_module || r->gpu_module) {
		snprintf(d, sizeof(d), "%" PRIu64 " chunk callbacks failed%s%s%s",
			 r->user_errors, r->user_fini ? "; its fini failed" : "",
			 r->gpu_error[0] ? "; " : "", r->gpu_error);
		check(&v, true, r->user_fini == 0 && r->user_errors == 0 && !r->gpu_error[0],
		      "user_module", d);
	}
	snprintf(d, sizeof(d), "%" PRIu64 " out-of-order deliveries", st->order_errors);
	check(&v, expect->in_order, st->order_errors == 0, "in_order", d);
	if (ex->sent && src.corrupted) {
		snprintf(d, sizeof(d), "%" PRIu64 " payload mismatches, %" PRIu64
			 " corrupted by the sender and not dropped by a checksum",
			 st->verify_errors, src.corrupted - st->drops[VFGX_DROP_BAD_UDP_CSUM]);
		check(&v, expect->verified,
		      st->verify_errors + st->drops[VFGX_DROP_BAD_UDP_CSUM] == src.corrupted,
		      "verified", d);
	} else {
		snprintf(d, sizeof(d), "%" PRIu64 " payload mismatches", st->verify_errors);
		check(&v, expect->verified, st->verify_errors == 0, "verified", d);
	}
	if (r->capture) {
		bool ok = run_capture_verdict(&r->capture_stats, r->capture_closed, d, sizeof(d));

		check(&v, true, ok, "capture", d);
	}
	if (r->record) {
		snprintf(d, sizeof(d), "%s", r->record_stats.error ? r->record_stats.message : "");
		check(&v, true, r->record_stats.error == 0, "record", d);
	}
	min_packets_detail(d, sizeof(d), expect, st);
	check(&v, expect->min_packets > 0,
	      st->delivered >= expect->min_packets, "min_packets", d);
	printf("result: %s\n", v.failed ? "FAILED" : "PASSED");
	return v.failed ? 1 : 0;
}

/* The JSON report's "chunks" object, or NULL without chunks. */
static json_object *chunks_json(vfgx_pipeline *pl, const struct vfgx_session_report *r)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	json_object *o;

	if (!pl || vfgx_chunk_stats(pl, &cs))
		return NULL;
	o = json_object_new_object();
#define J(f) json_object_object_add(o, #f, json_object_new_uint64(cs.f))
	J(handed_out);
	J(complete);
	J(closed);
	J(missing);
	J(skipped);
	J(placed);
	J(late);
	J(duplicates);
	J(out_of_range);
	J(backpressure);
	J(backpressure_drops);
	J(chunk_bytes);
	J(missing_bytes);
#undef J
	json_object_object_add(o, "user_errors", json_object_new_uint64(r->user_errors));
	return o;
}

/* The JSON report's "record" object, or NULL when off. */
static json_object *record_json(const struct vfgx_session_report *r)
{
	const struct vfgx_record_stats *st = &r->record_stats;
	json_object *o;

	if (!r->record)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(r->record_path));
	json_object_object_add(o, "recorded", json_object_new_uint64(st->recorded));
	json_object_object_add(o, "not_recorded", json_object_new_uint64(st->not_recorded));
	json_object_object_add(o, "files", json_object_new_uint64(st->files));
	json_object_object_add(o, "bytes", json_object_new_uint64(st->bytes));
	json_object_object_add(o, "direct", json_object_new_boolean(st->direct));
	json_object_object_add(o, "error", st->error ? json_object_new_string(st->message) : NULL);
	return o;
}

static const struct cli_opt run_opts[] = {
	{ "duration", 'd', "SECONDS", "stop after SECONDS (overrides pipeline.duration_s)" },
	{ "quiet", 'q', NULL, "no live line" },
	{ "metrics", 'm', "ADDR:PORT", "serve Prometheus metrics at http://ADDR:PORT/metrics (overrides metrics.listen)" },
	{ "metrics-hold", 'H', "SECONDS", "after the report, keep serving the final counters this long" },
	{ "capture", 'c', "FILE", "write received packets to FILE: pcap, or pcapng for a name ending in .pcapng (overrides pipeline.capture.path)" },
	{ "record", 'r', "PATH", "record every chunk to PATH: HDF5 for a name ending in .h5 or .hdf5, raw files otherwise (overrides record.path; docs/record.md)" },
	{ "force", 'f', NULL, "replace an existing capture file (a regular file the run does not read; without it the run refuses)" },
	{ "expect-sent", 'e', "FILE", "after the run, check expectations against FILE, a `vfgx send --json` report (two-process runs)" },
	{ "json", 'j', NULL, "the report as one JSON document on stdout (text report on stderr; docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_cli_run = {
	.name = "run", .operands = "[CONFIG.yaml]",
	.summary = "run ports and pipeline from a config (default: embedded loopback)",
	.more = "  without CONFIG, runs the embedded configs/loopback.yaml\n",
	.opts = run_opts,
};

int vfgx_cmd_run(int argc, char **argv)
{
	struct run_output ro = { 0 };
	struct run_extra ex = { 0 };
	struct vfgx_source_report sent;
	struct vfgx_session_opts so;
	struct vfgx_session_report rep = { .argsz = sizeof(rep) };
	const char *capture_flag = NULL, *sent_file = NULL, *record_flag = NULL;
	struct run_mpi mpi = { 0 };
	struct run_config rcfg = { 0 };
	struct vfgx_config *cfg = NULL;
	vfgx_session *s = NULL;
	vfgx_port *ports[VFGX_MAX_IFACES] = { 0 };
	struct vfgx_pipeline_stats st = { 0 }, prev = { 0 };
	bool quiet = false, force = false;
	double duration = -1;
	vfgx_ctx *ctx;
	int c, ret, rc = 1;
	uint16_t nb_ports;
	uint64_t tlast;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_cli_run)) != -1) {
		switch (c) {
		case 'd':
			/* the config's own limit for pipeline.duration_s */
			if (vfgx_flag_double("run", "--duration", optarg, 0,
					     86400 * 365, &duration))
				return 2;
			break;
		case 'q':
			quiet = true;
			break;
		case 'm':
			ro.listen = optarg;
			break;
		case 'H':
			if (vfgx_flag_double("run", "--metrics-hold", optarg, 0, 86400,
					     &ro.hold_s))
				return 2;
			break;
		case 'j':
			ro.json = true;
			break;
		case 'c':
			capture_flag = optarg;
			break;
		case 'r':
			record_flag = optarg;
			break;
		case 'f':
			force = true;
			break;
		case 'e':
			sent_file = optarg; /* read after the run: the sender writes it */
			if ((ret = run_sent_check(sent_file)))
				return ret;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_cli_run);
			return 0;
		default:
			return 2;
		}
	}
	if (argc - optind > 1)
		return cli_bad_operands(&vfgx_cli_run, "one CONFIG.yaml at most");
	if (vfgx_ctx_create(&ctx))
		return 1;
	ret = optind < argc ? vfgx_config_load_file(ctx, argv[optind], &cfg) :
			      vfgx_config_load_default(ctx, &cfg);
	if (ret) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		vfgx_ctx_destroy(ctx);
		return 2;
	}
	/* expect:, metrics:, ranks: are this program's sections */
	if (run_config_parse(ctx, cfg, &rcfg)) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		rc = 2;
		goto out;
	}
	if ((rc = run_mpi_begin(&mpi, cfg, &rcfg, ro.json)))
		goto out; /* MPI launch: this rank's ranks: entry applied */
	rc = 1;
	if (run_output_open(ctx, &rcfg, &ro)) {
		rc = ro.rc;
		goto out;
	}
	/* the library assembles the run: user code, ports, capture,
	 * pipeline, observers, recorder */
	vfgx_session_opts_default(&so);
	so.duration_s = duration;
	so.capture_path = capture_flag;
	so.capture_replace = force;
	so.record_path = record_flag;
	so.config_path = optind < argc ? argv[optind] : NULL;
	so.metrics = ro.metrics;
	so.metrics_job = "run";
	if ((ret = vfgx_session_create(ctx, cfg, &so, &s))) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		rc = ret == -EINVAL ? 2 : 1;
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	tlast = vfgx_now_ns();
	if ((ret = vfgx_session_start(s))) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		rc = ret == -EINVAL ? 2 : 1;
		goto out;
	}
	bool live = !quiet && !ro.json && isatty(STDOUT_FILENO);

	while (!interrupted && !vfgx_session_done(s)) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		uint64_t now;

		nanosleep(&ts, NULL);
		now = vfgx_now_ns();
		if (live && now - tlast >= 1000000000ull) {
			vfgx_session_stats(s, &st);
			live_line(&st, &prev, (double)(now - tlast) / 1e9);
			prev = st;
			tlast = now;
		}
	}
	vfgx_session_stop(s); /* the consumer, the recorder, the capture */
	run_output_text_begin(&ro);

	if (interrupted)
		printf("\ninterrupted: stopping\n");
	vfgx_session_report(s, &rep);
	st = rep.pipeline;
	ret = rep.pipeline_error;
	nb_ports = vfgx_session_nb_ports(s);
	for (uint16_t i = 0; i < nb_ports; i++)
		ports[i] = vfgx_session_port(s, i);
	ex.sent_file = sent_file;
	if (sent_file &&
	    run_sent_load(sent_file, &sent, ex.sent_line, sizeof(ex.sent_line)) == 0)
		ex.sent = &sent;
	rc = mpi.on ? run_mpi_report(&mpi, cfg, &rcfg, ports, nb_ports, &st, ret, rep.secs) :
		      report(cfg, &rcfg.expect, s, &rep, &ex);
	if (sent_file && !ex.sent && mpi.on) {
		fprintf(stderr, "vfgx: %s\n", ex.sent_line);
		rc = 1;
	}
	run_output_text_end(&ro);
	if (ret) {
		fprintf(stderr, "vfgx: %s pipeline error: %s\n",
			vfgx_pipeline_engine(vfgx_session_pipeline(s)), vfgx_strerror(ret));
		rc = 1;
	}
	json_object *extra = json_object_new_object();

	json_object_object_add(extra, "chunks", chunks_json(vfgx_session_pipeline(s), &rep));
	json_object_object_add(extra, "capture", rep.capture ?
				run_capture_json(&rep.capture_stats, rep.capture_path) : NULL);
	json_object_object_add(extra, "record", record_json(&rep));
	run_output_json(&ro, cfg, ports, nb_ports, &st, vfgx_session_pipeline(s), rep.secs,
			interrupted, rc, extra);
	run_output_hold(&ro, &interrupted);
out:
	vfgx_session_destroy(s); /* its observers first: one publishes to ro */
	run_output_close(&ro);
	run_config_free(&rcfg);
	vfgx_config_destroy(cfg);
	vfgx_ctx_destroy(ctx);
	run_mpi_end(&mpi, rc); /* a rank failing before the report ends the job */
	return rc;
}
