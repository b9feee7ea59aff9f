/* run.c - `vfgx run [config]`: open the config's ports, run the pipeline,
 * print a live line a second on a terminal, print the final report and
 * exit 0 only when the run met the config's expectations. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/mon.h>
#include <vfgx/socket.h>
#include <vfgx/vfgx.h>

#include "cliopt.h"
#include "commands.h"
#include "core/numparse.h"
#include "run_capture.h"
#include "run_chunks.h"
#include "run_mpi.h"
#include "run_output.h"
#include "run_record.h"

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
static void min_packets_detail(char *d, size_t len, const struct vfgx_config *cfg,
			       const struct vfgx_pipeline_stats *st)
{
	int n = snprintf(d, len, "%" PRIu64 " delivered, at least %" PRIu64 " wanted",
			 st->delivered, cfg->expect.min_packets);

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

/* What the run was given besides its ports: a sender's report
 * (--expect-sent) and the capture. */
struct run_extra {
	const struct vfgx_source_report *sent; /* NULL: the ports' own */
	const char *sent_file;                 /* --expect-sent, or NULL */
	char sent_line[256];                   /* its expectation's detail */
	const char *capture_path;              /* NULL: no capture */
	struct vfgx_capture_stats cap;
	bool capture_ok;
	const struct run_record *rec;
};

static int report(const struct vfgx_config *cfg, const struct run_chunks *ch,
		  vfgx_port **ports,
		  uint16_t nb_ports, const struct vfgx_pipeline_stats *st,
		  double secs, const struct run_extra *ex)
{
	struct vfgx_source_report src = { .known = true };
	struct vfgx_queue_stats qsum = { 0 };
	uint64_t drops = 0, explained, port_drops = 0, refused = 0;
	bool any_known = false;
	struct verdict v = { 0 };
	char d[256];

	printf("\n== vfgx run report (%s) ==\n", cli_esc(cfg->source));
	for (uint16_t i = 0; i < nb_ports; i++) {
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]); q++) {
			struct vfgx_queue_stats qs;
			struct vfgx_source_report r;

			vfgx_port_stats(ports[i], q, &qs);
			vfgx_port_source_report(ports[i], q, &r);
			printf("port %s (%s) rx queue %u: %" PRIu64 " packets, %" PRIu64
			       " bytes, no-buffer events %" PRIu64 "\n",
			       vfgx_port_name(ports[i]), vfgx_port_backend(ports[i]), q,
			       qs.rx_packets, qs.rx_bytes, qs.drops[VFGX_DROP_NOBUFS]);
			/* what the backend dropped before the pipeline saw it;
			 * no_bufs (pool exhausted) is printed above as events:
			 * backpressure on loopback and socket (the source or
			 * the kernel keeps the packet); NIC drops it counts on
			 * afxdp and dpdk show as gaps */
			for (int k = VFGX_DROP_NOBUFS + 1; k < VFGX_DROP_MAX; k++) {
				if (!qs.drops[k])
					continue;
				printf("port %s rx queue %u drop %-12s %" PRIu64 "\n",
				       vfgx_port_name(ports[i]), q,
				       vfgx_drop_reason_name((enum vfgx_drop_reason)k),
				       qs.drops[k]);
				port_drops += qs.drops[k];
			}
			qsum.rx_packets += qs.rx_packets;
			if (r.known) {
				any_known = true;
				src.generated += r.generated;
				src.lost += r.lost;
				src.duplicated += r.duplicated;
				src.corrupted += r.corrupted;
				src.reordered += r.reordered;
			} else {
				src.known = false;
			}
		}
	}
	for (uint16_t i = 0; i < nb_ports; i++) {
		struct vfgx_socket_tcp_stats ts = { .argsz = sizeof(ts) };
		struct vfgx_socket_info si;

		if (vfgx_socket_info(ports[i], &si) || !si.tcp ||
		    vfgx_socket_tcp_stats(ports[i], &ts))
			continue;
		printf("port %s (socket) connections: %u open, %u closed, %" PRIu64
		       " refused (max_conns), %" PRIu64 " closed idle, %" PRIu64
		       " closed slow (record_timeout_ms)\n",
		       vfgx_port_name(ports[i]), si.conns, si.closed, si.refused,
		       si.idle_closed, ts.slow_closed);
		refused += si.refused;
	}
	src.known = src.known && any_known;
	if (ex->sent) /* the sender's account replaces the live ports' none */
		src = *ex->sent;
	printf("pipeline: %" PRIu64 " packets in %.3f s (%.3f Mpps, %.3f Gbps), passed %" PRIu64
	       ", delivered %" PRIu64 " (%" PRIu64 " payload bytes), gaps %" PRIu64
	       ", verify errors %" PRIu64 "\n",
	       st->packets, secs, secs > 0 ? (double)st->packets / secs / 1e6 : 0,
	       secs > 0 ? (double)st->bytes * 8 / secs / 1e9 : 0, st->passed,
	       st->delivered, st->delivered_bytes, st->gaps, st->verify_errors);
	if (st->handed_over || st->streams_refused)
		printf("reorder: %" PRIu64 " packets handed to their stream's worker, %" PRIu64
		       " streams refused a window (pipeline.reorder.max_memory), %.1f MiB of windows\n",
		       st->handed_over, st->streams_refused,
		       (double)st->reorder_bytes / (1 << 20));
	printf("latency (rx to processed): p50 <= %" PRIu64 " ns, p99 <= %" PRIu64 " ns\n",
	       vfgx_stats_lat_pct(st, 50), vfgx_stats_lat_pct(st, 99));
	for (int i = 0; i < VFGX_DROP_MAX; i++) {
		drops += st->drops[i];
		if (st->drops[i])
			printf("drop %-12s %" PRIu64 "\n",
			       vfgx_drop_reason_name((enum vfgx_drop_reason)i),
			       st->drops[i]);
	}
	if (ex->capture_path)
		run_capture_report(&ex->cap, ex->capture_path);
	if (src.known)
		printf("%s: %" PRIu64 " sequences generated, injected: %" PRIu64
		       " lost, %" PRIu64 " duplicated, %" PRIu64 " corrupted, %" PRIu64
		       " reordered\n", ex->sent ? "sender" : "source",
		       src.generated, src.lost, src.duplicated, src.corrupted,
		       src.reordered);

	bool user_ok = run_chunks_report(ch);
	bool record_ok = run_record_report(ex->rec);

	printf("expectations:\n");
	/* a report that cannot be used fails the run, in text and JSON alike */
	check(&v, ex->sent_file != NULL, ex->sent != NULL, "expect_sent", ex->sent_line);
	if (cfg->expect.all_received) {
		if (!src.known) {
			/* a live source: nothing known of what was sent, so
			 * every packet that reached the host must be delivered
			 * and no layer may have dropped or refused anything */
			snprintf(d, sizeof(d),
				 "live source: received %" PRIu64 ", delivered %" PRIu64
				 "; dropped by ports %" PRIu64 ", by the pipeline %" PRIu64
				 ", gaps %" PRIu64 ", connections refused %" PRIu64,
				 qsum.rx_packets, st->delivered, port_drops, drops,
				 st->gaps, refused);
			check(&v, true,
			      port_drops == 0 && drops == 0 && refused == 0 &&
				      st->gaps == 0 && st->delivered == st->packets &&
				      qsum.rx_packets == st->packets,
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
				      qsum.rx_packets == sent && drops == explained &&
				      port_drops == 0 && refused == 0 &&
				      csum + via_verify == src.corrupted &&
				      st->drops[VFGX_DROP_DUPLICATE] +
						      st->drops[VFGX_DROP_LATE] ==
					      src.duplicated,
			      "all_received", d);
		}
	}
	if (ch->mod || ch->gpu.loaded) {
		snprintf(d, sizeof(d), "%" PRIu64 " chunk callbacks failed%s%s%s",
			 ch->user_errors, ch->fini_ret ? "; its fini failed" : "",
			 ch->gpu.error[0] ? "; " : "", ch->gpu.error);
		check(&v, true, user_ok, "user_module", d);
	}
	snprintf(d, sizeof(d), "%" PRIu64 " out-of-order deliveries", st->order_errors);
	check(&v, cfg->expect.in_order, st->order_errors == 0, "in_order", d);
	if (ex->sent && src.corrupted) {
		snprintf(d, sizeof(d), "%" PRIu64 " payload mismatches, %" PRIu64
			 " corrupted by the sender and not dropped by a checksum",
			 st->verify_errors, src.corrupted - st->drops[VFGX_DROP_BAD_UDP_CSUM]);
		check(&v, cfg->expect.verified,
		      st->verify_errors + st->drops[VFGX_DROP_BAD_UDP_CSUM] == src.corrupted,
		      "verified", d);
	} else {
		snprintf(d, sizeof(d), "%" PRIu64 " payload mismatches", st->verify_errors);
		check(&v, cfg->expect.verified, st->verify_errors == 0, "verified", d);
	}
	if (ex->capture_path) {
		bool ok = run_capture_verdict(&ex->cap, ex->capture_ok, d, sizeof(d));

		check(&v, true, ok, "capture", d);
	}
	if (ex->rec->on) {
		snprintf(d, sizeof(d), "%s", ex->rec->st.error ? ex->rec->st.message : "");
		check(&v, true, record_ok, "record", d);
	}
	min_packets_detail(d, sizeof(d), cfg, st);
	check(&v, cfg->expect.min_packets > 0,
	      st->delivered >= cfg->expect.min_packets, "min_packets", d);
	printf("result: %s\n", v.failed ? "FAILED" : "PASSED");
	return v.failed ? 1 : 0;
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
	struct run_chunks chunks = { 0 };
	struct run_record rec = { 0 };
	struct run_extra ex = { 0 };
	struct vfgx_source_report sent;
	const char *capture_flag = NULL, *sent_file = NULL, *record_flag = NULL;
	vfgx_capture *cap = NULL;
	struct run_mpi mpi = { 0 };
	struct vfgx_config *cfg = NULL;
	vfgx_port *ports[VFGX_MAX_IFACES] = { 0 };
	vfgx_pipeline *pl = NULL;
	struct vfgx_pipeline_stats st = { 0 }, prev = { 0 };
	bool quiet = false, force = false;
	double duration = -1;
	vfgx_ctx *ctx;
	int c, ret, rc = 1;
	uint16_t nb_ports = 0;
	uint64_t t0, tlast;

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
	if (vfgx_pipeline_check(ctx, &cfg->pipeline)) {
		fprintf(stderr, "vfgx: %s: %s\n", cli_esc(cfg->source), vfgx_last_error(ctx));
		rc = 2;
		goto out;
	}
	vfgx_log_set_level(ctx, cfg->log_level);
	if ((rc = run_chunks_load(&chunks, cfg)))
		goto out;
	rc = 1;
	if (duration >= 0)
		cfg->pipeline.duration_s = duration;
	if ((rc = run_mpi_begin(&mpi, cfg, ro.json)))
		goto out; /* MPI launch: this rank's ranks: entry applied */
	rc = 1;
	if (cfg->nb_ifaces == 0) {
		fprintf(stderr, "vfgx: %s: no interfaces configured (add one under interfaces:)\n",
			cli_esc(cfg->source));
		rc = 2;
		goto out;
	}
	for (uint16_t i = 0; i < cfg->nb_ifaces; i++, nb_ports++) {
		ret = vfgx_port_open_config(ctx, cfg, &cfg->ifaces[i], &ports[i]);
		if (ret) {
			fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
			rc = ret == -EINVAL ? 2 : 1;
			goto out;
		}
	}
	if ((rc = run_capture_open(ctx, cfg, capture_flag, force, ports, nb_ports, &cap)))
		goto out;
	rc = 1;
	if (cap)
		ex.capture_path = capture_flag ? capture_flag : cfg->capture->path;
	if (run_output_open(ctx, cfg, &ro)) {
		rc = ro.rc;
		goto out;
	}
	ret = vfgx_pipeline_create(ctx, &cfg->pipeline, ports, nb_ports, &pl);
	if (ret) {
		/* -ENODEV: pipeline.device names a GPU this machine lacks */
		if (ret == -ENODEV)
			fprintf(stderr, "vfgx: %s: %s\n", cli_esc(cfg->source), vfgx_last_error(ctx));
		else
			fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		rc = ret == -EINVAL || ret == -ENODEV ? 2 : 1;
		goto out;
	}
	/* the endpoint is an observer like any other the program attaches */
	if (ro.metrics && vfgx_metrics_observe(ctx, pl, ro.metrics, "run", 1000)) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	/* telemetry to gpurdma_mon once a second, when the driver is loaded */
	if (vfgx_mon_observe(ctx, pl, NULL, 1000)) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	if ((rc = run_record_open(&rec, ctx, cfg, optind < argc ? argv[optind] : NULL,
				  record_flag, pl)))
		goto out;
	rc = 1;
	ex.rec = &rec;
	chunks.rec = rec.on ? &rec : NULL;
	if ((ret = run_chunks_start(&chunks, ctx, pl))) {
		rc = ret;
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	t0 = tlast = vfgx_now_ns();
	if (vfgx_pipeline_start(pl)) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	bool live = !quiet && !ro.json && isatty(STDOUT_FILENO);

	while (!interrupted && !vfgx_pipeline_done(pl) && !run_chunks_failed(&chunks)) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		uint64_t now;

		nanosleep(&ts, NULL);
		now = vfgx_now_ns();
		if (live && now - tlast >= 1000000000ull) {
			vfgx_pipeline_stats(pl, &st);
			live_line(&st, &prev, (double)(now - tlast) / 1e9);
			prev = st;
			tlast = now;
		}
	}
	vfgx_pipeline_stop(pl);
	run_chunks_stop(&chunks);
	run_record_close(&rec); /* the writes in flight, the files closed */
	ex.capture_ok = run_capture_close(cap, &ex.cap);
	cap = NULL;
	double secs = (double)(vfgx_now_ns() - t0) / 1e9;

	run_output_text_begin(&ro);

	if (interrupted)
		printf("\ninterrupted: stopping\n");
	vfgx_pipeline_stats(pl, &st);
	ret = vfgx_pipeline_error(pl);
	ex.sent_file = sent_file;
	if (sent_file &&
	    run_sent_load(sent_file, &sent, ex.sent_line, sizeof(ex.sent_line)) == 0)
		ex.sent = &sent;
	rc = mpi.on ? run_mpi_report(&mpi, cfg, ports, nb_ports, &st, ret, secs) :
		      report(cfg, &chunks, ports, nb_ports, &st, secs, &ex);
	if (sent_file && !ex.sent && mpi.on) {
		fprintf(stderr, "vfgx: %s\n", ex.sent_line);
		rc = 1;
	}
	run_output_text_end(&ro);
	if (ret) {
		fprintf(stderr, "vfgx: %s pipeline error: %s\n",
			vfgx_pipeline_engine(pl), vfgx_strerror(ret));
		rc = 1;
	}
	json_object *extra = json_object_new_object();

	json_object_object_add(extra, "chunks", run_chunks_json(&chunks));
	json_object_object_add(extra, "capture", ex.capture_path ?
				run_capture_json(&ex.cap, ex.capture_path) : NULL);
	json_object_object_add(extra, "record", run_record_json(&rec));
	run_output_json(&ro, cfg, ports, nb_ports, &st, pl, secs, interrupted, rc, extra);
	run_output_hold(&ro, &interrupted);
out:
	if (pl)
		vfgx_pipeline_stop(pl); /* the consumer ends with it */
	run_chunks_stop(&chunks);
	run_record_free(&rec);
	run_capture_close(cap, &ex.cap); /* a failed start: the ports never ran */
	vfgx_pipeline_destroy(pl); /* its observers first: one publishes to ro */
	run_chunks_close(&chunks);
	run_output_close(&ro);
	for (uint16_t i = 0; i < nb_ports; i++)
		vfgx_port_close(ports[i]);
	vfgx_config_destroy(cfg);
	vfgx_ctx_destroy(ctx);
	run_mpi_end(&mpi, rc); /* a rank failing before the report ends the job */
	return rc;
}
