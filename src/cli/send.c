/* send.c - `vfgx send [CONFIG]`: a client of the library's sender
 * (vfgx/send.h), which sends a stream out of one of the config's
 * interfaces, paced (send.rate_pps / rate_bps, txtime); this file reads the
 * options, prints a live line a second and the report (text or --json)
 * with the rate achieved, the pacing error and tx drops by reason. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <vfgx/send.h>
#include <vfgx/vfgx.h>

#include "cliopt.h"
#include "commands.h"
#include "run_config.h"
#include "run_output.h"

static vfgx_sender *volatile sending; /* for the signal handler */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
	if (sending)
		vfgx_sender_interrupt(sending);
}

static const struct cli_opt send_opts[] = {
	{ "duration", 'd', "SECONDS", "stop after SECONDS (overrides send.duration_s)" },
	{ "rate", 'r', "PPS", "packets per second, all queues together (overrides send.rate_pps)" },
	{ "format", 'f', "PROFILE", "send the generator's packets in a built-in profile: rtp, rtp-video, vita49, ecpri, spead, vdif, gr-udp, gr-udp-size (sets send.format's profile; docs/formats.md#sending)" },
	{ "txtime", 't', NULL, "launch times from the pacing schedule via SO_TXTIME and the ETF qdisc (socket UDP ports; sets send.txtime)" },
	{ "quiet", 'q', NULL, "no live line" },
	{ "metrics", 'm', "ADDR:PORT", "serve the tx queues' counters at http://ADDR:PORT/metrics (overrides metrics.listen)" },
	{ "json", 'j', NULL, "the report as one JSON document on stdout (text report on stderr; docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_cli_send = {
	.name = "send", .operands = "CONFIG.yaml",
	.summary = "send a generated stream or a pcap file out of a config's interface",
	.more = "  the config's send: section names the source and the pacing (docs/send.md)\n",
	.opts = send_opts,
};

struct live {
	uint64_t t, packets, bytes;
};

static void live_line(void *user, const struct vfgx_send_progress *p)
{
	struct live *l = user;
	uint64_t now = vfgx_now_ns();
	double dt = (double)(now - l->t) / 1e9;

	fprintf(stdout, "\r%8.3f Mpps %8.3f Gbps  sent %" PRIu64 "  drops %" PRIu64 "   ",
		(double)(p->packets - l->packets) / dt / 1e6,
		(double)(p->bytes - l->bytes) * 8 / dt / 1e9, p->packets, p->drops);
	fflush(stdout);
	l->t = now;
	l->packets = p->packets;
	l->bytes = p->bytes;
}

/* null when send.txtime was not asked */
static json_object *txtime_json(const struct vfgx_send_opts *c, const struct vfgx_send_report *s)
{
	json_object *t;

	if (!c->txtime)
		return NULL;
	t = json_object_new_object();
	json_object_object_add(t, "used", json_object_new_boolean(s->txtime));
	json_object_object_add(t, "fallback", s->txtime ? NULL : json_object_new_string(s->txtime_off));
	json_object_object_add(t, "device", s->txtime ? json_object_new_string(s->txtime_device) : NULL);
	json_object_object_add(t, "delta_ns", json_object_new_int(s->txtime_delta_ns));
	json_object_object_add(t, "lead_us", json_object_new_double(c->txtime_lead_us));
	json_object_object_add(t, "sent", json_object_new_uint64(s->txtime_sent));
	json_object_object_add(t, "missed", json_object_new_uint64(s->txtime_missed));
	json_object_object_add(t, "invalid", json_object_new_uint64(s->txtime_invalid));
	return t;
}

/* null when send.sched_priority was not asked */
static json_object *sched_json(const struct vfgx_send_opts *c, const struct vfgx_send_report *s)
{
	json_object *o;

	if (!c->sched_priority)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "priority", json_object_new_int((int)c->sched_priority));
	json_object_object_add(o, "fifo", json_object_new_boolean(s->fifo));
	json_object_object_add(o, "refused", s->fifo ? NULL : json_object_new_string(s->sched_off));
	return o;
}

static json_object *csw_json(const struct vfgx_send_report *s)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "involuntary", json_object_new_int64(s->csw_involuntary));
	json_object_object_add(o, "voluntary", json_object_new_int64(s->csw_voluntary));
	return o;
}

static int report(const struct vfgx_config *cfg, const struct vfgx_send_opts *c,
		  vfgx_port *out, const struct vfgx_send_report *s, bool json)
{
	const struct vfgx_source_report src = s->source;
	const uint64_t *tx_drops = s->port_drops;
	const struct vfgx_send_report *pr = s;
	bool was_interrupted = s->interrupted;
	uint64_t drops = 0;
	bool ok;
	FILE *f = json ? stderr : stdout;

	for (int i = 0; i < VFGX_SEND_DROP_MAX; i++)
		drops += s->drops[i];
	ok = !s->error && drops == 0;
	fprintf(f, "\n== vfgx send report (%s) ==\n", cli_esc(cfg->source));
	fprintf(f, "sent %" PRIu64 " packets, %" PRIu64 " bytes in %.3f s: %.3f Mpps, %.3f Gbps (port %s, %s)\n",
		s->packets, s->bytes, pr->seconds, pr->pps / 1e6, pr->bps / 1e9,
		vfgx_port_name(out), vfgx_port_backend(out));
	if (strcmp(s->format, "vfgx"))
		fprintf(f, "format: %s (send.format), written from the generator's flows and sequences\n",
			s->format);
	if (pr->paced)
		fprintf(f, "pacing: asked %.0f pps / %.0f bit/s, achieved %.0f pps (error %+.3f%%), burst gap error p50 %.1f us, p99 %.1f us, max %.1f us over %" PRIu64 " gaps\n",
			c->rate_pps, c->rate_bps, pr->sched_pps, pr->rate_error_pct,
			pr->gap_err_p50_ns / 1e3, pr->gap_err_p99_ns / 1e3, pr->gap_err_max_ns / 1e3,
			pr->gaps);
	if (pr->paced)
		fprintf(f, "pacing: waits spun for their last %.0f us (send.spin_us), slept before\n",
			c->spin_us);
	if (s->fifo)
		fprintf(f, "scheduling: the sending thread SCHED_FIFO, priority %u (send.sched_priority)\n",
			c->sched_priority);
	else if (c->sched_priority)
		fprintf(f, "scheduling: normal; send.sched_priority %u refused: %s\n",
			c->sched_priority, s->sched_off);
	fprintf(f, "sending thread: %ld involuntary, %ld voluntary context switches\n",
		s->csw_involuntary, s->csw_voluntary);
	if (s->txtime)
		fprintf(f, "txtime: on (SO_TXTIME, CLOCK_TAI; ETF qdisc on %s, delta %d ns), launch time = schedule %+.0f us: %" PRIu64 " sent with a launch time, refused by the qdisc: %" PRIu64 " missed, %" PRIu64 " invalid\n",
			cli_esc(s->txtime_device), s->txtime_delta_ns, c->txtime_lead_us, s->txtime_sent,
			s->txtime_missed, s->txtime_invalid);
	else if (c->txtime)
		fprintf(f, "txtime: off, paced by the token bucket alone (%s)\n", s->txtime_off);
	if (s->tx_in_place)
		fprintf(f, "tx: replayed frames copied straight into the port's tx buffers\n");
	fprintf(f, "tx waits (port took nothing, retried): %" PRIu64 "\n", s->tx_waits);
	for (int i = 0; i < VFGX_SEND_DROP_MAX; i++)
		if (s->drops[i])
			fprintf(f, "drop %-12s %" PRIu64 "\n",
				vfgx_send_drop_name((enum vfgx_send_drop)i), s->drops[i]);
	for (int k = 0; k < VFGX_DROP_MAX; k++)
		if (tx_drops[k])
			fprintf(f, "port drop %-12s %" PRIu64 "\n",
				vfgx_drop_reason_name((enum vfgx_drop_reason)k), tx_drops[k]);
	if (src.known)
		fprintf(f, "source: %" PRIu64 " sequences generated, injected: %" PRIu64
			" lost, %" PRIu64 " duplicated, %" PRIu64 " corrupted, %" PRIu64
			" reordered\n", src.generated, src.lost, src.duplicated, src.corrupted,
			src.reordered);
	if (s->error)
		fprintf(f, "error: %s\n", s->error_msg);
	if (was_interrupted)
		fprintf(f, "interrupted\n");
	fprintf(f, "result: %s\n", ok ? "PASSED" : "FAILED");
	if (json) {
		json_object *root = json_object_new_object(), *dr = json_object_new_object();
		json_object *pj = json_object_new_object();

		json_object_object_add(root, "schema", json_object_new_string("vfgx.send/1"));
		json_object_object_add(root, "config", json_object_new_string(cfg->source));
		json_object_object_add(root, "port", json_object_new_string(vfgx_port_name(out)));
		json_object_object_add(root, "backend", json_object_new_string(vfgx_port_backend(out)));
		json_object_object_add(root, "format", json_object_new_string(s->format));
		json_object_object_add(root, "packets", json_object_new_uint64(s->packets));
		json_object_object_add(root, "bytes", json_object_new_uint64(s->bytes));
		json_object_object_add(root, "seconds", json_object_new_double(pr->seconds));
		json_object_object_add(root, "pps", json_object_new_double(pr->pps));
		json_object_object_add(root, "bps", json_object_new_double(pr->bps));
		json_object_object_add(pj, "rate_pps", json_object_new_double(c->rate_pps));
		json_object_object_add(pj, "rate_bps", json_object_new_double(c->rate_bps));
		json_object_object_add(pj, "achieved_pps", json_object_new_double(pr->sched_pps));
		json_object_object_add(pj, "achieved_bps", json_object_new_double(pr->sched_bps));
		json_object_object_add(pj, "rate_error_pct", json_object_new_double(pr->rate_error_pct));
		json_object_object_add(pj, "gap_error_p50_ns", json_object_new_double(pr->gap_err_p50_ns));
		json_object_object_add(pj, "gap_error_p99_ns", json_object_new_double(pr->gap_err_p99_ns));
		json_object_object_add(pj, "gap_error_max_ns", json_object_new_double(pr->gap_err_max_ns));
		json_object_object_add(pj, "gaps", json_object_new_uint64(pr->gaps));
		json_object_object_add(pj, "spin_us", json_object_new_double(c->spin_us));
		json_object_object_add(root, "pacing", pr->paced ? pj : NULL);
		if (!pr->paced)
			json_object_put(pj);
		json_object_object_add(root, "txtime", txtime_json(c, s));
		json_object_object_add(root, "tx_in_place", json_object_new_boolean(s->tx_in_place));
		json_object_object_add(root, "sched", sched_json(c, s));
		json_object_object_add(root, "context_switches", csw_json(s));
		json_object_object_add(root, "tx_waits", json_object_new_uint64(s->tx_waits));
		for (int i = 0; i < VFGX_SEND_DROP_MAX; i++)
			json_object_object_add(dr, vfgx_send_drop_name((enum vfgx_send_drop)i),
					       json_object_new_uint64(s->drops[i]));
		json_object_object_add(root, "drops", dr);
		json_object_object_add(root, "source", run_output_source_json(&src));
		json_object_object_add(root, "error", s->error ? json_object_new_string(s->error_msg) : NULL);
		json_object_object_add(root, "interrupted", json_object_new_boolean(was_interrupted));
		json_object_object_add(root, "result", json_object_new_string(ok ? "PASSED" : "FAILED"));
		json_object_object_add(root, "exit_code", json_object_new_int(ok ? 0 : 1));
		printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
								       JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(root);
	}
	return ok ? 0 : 1;
}

int vfgx_cmd_send(int argc, char **argv)
{
	struct vfgx_config *cfg = NULL;
	struct vfgx_send_opts so;
	struct vfgx_send_report rep = { .argsz = sizeof(rep) };
	struct vfgx_send_run args = { .argsz = sizeof(args) };
	struct run_config rcfg = { 0 };
	struct live live = { 0 };
	vfgx_sender *s = NULL;
	double duration = -1, rate = -1;
	bool quiet = false, json = false, txtime = false;
	const char *listen = NULL, *format = NULL;
	struct run_output ro = { 0 };
	vfgx_ctx *ctx;
	int c, ret, rc = 1;

	optind = 1;
	interrupted = 0;
	while ((c = cli_getopt(argc, argv, &vfgx_cli_send)) != -1) {
		switch (c) {
		case 'd':
			if (vfgx_flag_double("send", "--duration", optarg, 0, 86400 * 365, &duration))
				return 2;
			break;
		case 'r':
			if (vfgx_flag_double("send", "--rate", optarg, 0, 1e10, &rate))
				return 2;
			break;
		case 'q':
			quiet = true;
			break;
		case 't':
			txtime = true;
			break;
		case 'f':
			format = optarg;
			break;
		case 'm':
			listen = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_cli_send);
			return 0;
		default:
			return 2;
		}
	}
	if (argc - optind != 1)
		return cli_bad_operands(&vfgx_cli_send, "one CONFIG.yaml");
	if (vfgx_ctx_create(&ctx))
		return 1;
	if (vfgx_config_load_file(ctx, argv[optind], &cfg)) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		vfgx_ctx_destroy(ctx);
		return 2;
	}
	vfgx_log_set_level(ctx, cfg->log_level);
	rc = 2;
	if (vfgx_send_opts_from_config(cfg, &so) || run_config_parse(ctx, cfg, &rcfg)) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	if (duration >= 0)
		so.duration_s = duration;
	if (rate >= 0)
		so.rate_pps = rate;
	if (txtime)
		so.txtime = true;
	so.format_profile = format;
	if ((ret = vfgx_sender_create(ctx, cfg, &so, &s))) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		rc = ret == -EINVAL || ret == -EOPNOTSUPP ? 2 : 1;
		goto out;
	}
	vfgx_sender_report(s, &rep);
	if (rep.txtime_off[0])
		fprintf(stderr, "vfgx: %s; pacing with the token bucket instead\n", rep.txtime_off);
	/* --metrics, else the config's metrics.listen, as vfgx run */
	ro.listen = listen;
	if (run_output_open(ctx, &rcfg, &ro)) {
		rc = ro.rc;
		goto out;
	}
	args.metrics = ro.metrics;
	if (!quiet && !json && isatty(STDOUT_FILENO)) {
		live.t = vfgx_now_ns();
		args.progress = live_line;
		args.progress_user = &live;
	}
	sending = s;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN); /* a TCP peer that goes: an error line, not a death */
	if (interrupted)
		vfgx_sender_interrupt(s);
	vfgx_sender_run(s, &args);
	vfgx_sender_report(s, &rep);
	if (rep.sched_off[0])
		fprintf(stderr, "vfgx: send.sched_priority: %s; normal scheduling\n", rep.sched_off);
	rc = report(cfg, &so, vfgx_sender_port(s), &rep, json);
out:
	sending = NULL;
	run_output_close(&ro);
	vfgx_sender_destroy(s);
	run_config_free(&rcfg);
	vfgx_config_destroy(cfg);
	vfgx_ctx_destroy(ctx);
	return rc;
}
