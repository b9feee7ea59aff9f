/* send.c - `vfgx send [CONFIG]`: a stream out of one of the config's
 * interfaces.  The source is a port read like any other: the loopback
 * generator (the same traffic model, faults and sequence header as `vfgx
 * run`'s) or a pcap file (backend pcap: recorded timing, loops).  Each
 * burst waits for its turn in a token bucket (send.rate_pps / rate_bps),
 * then goes out with tx_burst; socket ports get the UDP payload, frame
 * ports the whole frame; replayed frames are copied straight into a DPDK
 * port's tx mbufs instead (port/tx_fill.h).  The wait spins its last
 * send.spin_us; send.sched_priority makes the sending thread SCHED_FIFO.
 * With send.txtime each packet also carries its launch time from the same
 * schedule (SO_TXTIME, the ETF qdisc holds it); where that cannot run, one
 * line says why and the token bucket alone paces.  A live line a second, a report (text or --json) with the rate
 * achieved, the pacing error and tx drops by reason. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <vfgx/vfgx.h>

#include "cliopt.h"
#include "commands.h"
#include "core/numparse.h"
#include "core/opts.h"
#include "port/loopback_replay.h"
#include "port/tx_fill.h"
#include "run_config.h"
#include "run_output.h"
#include "send_pace.h"

enum send_source { SRC_GENERATOR = 0, SRC_PCAP = 1 };

struct send_conf {
	uint32_t argsz;
	uint32_t source;       /* enum send_source */
	const char *interface; /* NULL: the first */
	double rate_pps;
	double rate_bps;
	uint32_t burst;
	double duration_s;
	uint32_t stall_ms;     /* no progress this long: the burst's rest is dropped */
	const char *memory_region; /* the generator's frames: a memory_regions[] name */
	bool txtime;           /* launch times through SO_TXTIME and ETF */
	double txtime_lead_us; /* launch time = the schedule's time + this */
	double spin_us;        /* pacing: the last this much of a wait spun */
	uint32_t sched_priority; /* the sending thread SCHED_FIFO at this; 0: not */
};

#define SD_OPT(T, F, ...) VFGX_OPT(T, struct send_conf, F, __VA_ARGS__)
static const char *const src_names[] = { "generator", "pcap", NULL };
static const struct vfgx_opt send_tab[] = {
	SD_OPT(ENUM, source, SRC_GENERATOR, 0, 0, src_names),
	SD_OPT(STR, interface, 0),
	SD_OPT(DOUBLE, rate_pps, 0, 0, 1e10),
	SD_OPT(DOUBLE, rate_bps, 0, 0, 1e13),
	SD_OPT(U32, burst, 32, 1, 1024),
	SD_OPT(DOUBLE, duration_s, 0, 0, 86400 * 365),
	SD_OPT(U32, stall_ms, 1000, 1, 600000),
	SD_OPT(STR, memory_region, 0),
	SD_OPT(BOOL, txtime, 0),
	SD_OPT(DOUBLE, txtime_lead_us, 1000, -1e6, 1e6),
	SD_OPT(DOUBLE, spin_us, 1000, 0, 1e6),
	SD_OPT(U32, sched_priority, 0, 0, 99),
	{ "generator", VFGX_OPT_SKIP, 0, 0, 0, 0, NULL },
	{ "pcap", VFGX_OPT_SKIP, 0, 0, 0, 0, NULL },
};
#define SEND_NOPTS (sizeof(send_tab) / sizeof(send_tab[0]))

/* Why a packet the source gave was not sent. */
enum send_drop { SD_STALLED, SD_ERROR, SD_NOT_UDP, SD_TXT_MISSED, SD_TXT_INVALID, SD_MAX };
static const char *const send_drop_names[SD_MAX] = { "stalled", "tx_error", "not_udp",
						     "txtime_missed", "txtime_invalid" };

struct sender {
	vfgx_ctx *ctx;
	vfgx_port *src, *out;
	bool payload_only; /* the out port sends UDP payloads (socket, rdma) */
	bool fill;         /* replayed frames copied into the out port's tx buffers */
	struct send_conf c;
	uint64_t packets, bytes, drops[SD_MAX];
	uint64_t full_waits; /* tx_burst took nothing: retried */
	struct send_pace pace;
	bool txtime;           /* launch times in use (send.txtime and the port could) */
	struct vfgx_txtime_info txi;
	struct vfgx_txtime_stats txs; /* all tx queues, after the run */
	uint64_t txt_last;     /* the latest launch time given */
	char txtime_off[320];  /* send.txtime asked but not in use: why */
	bool fifo;             /* the sending thread runs SCHED_FIFO */
	char sched_off[256];   /* send.sched_priority asked but refused: why */
	long csw_inv, csw_vol; /* the sending thread's context switches in the loop */
	vfgx_metrics *metrics; /* --metrics, or NULL */
	int error;
	char error_msg[256];
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static const struct cli_opt send_opts[] = {
	{ "duration", 'd', "SECONDS", "stop after SECONDS (overrides send.duration_s)" },
	{ "rate", 'r', "PPS", "packets per second, all queues together (overrides send.rate_pps)" },
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

/* The source port: the generator (loopback) with one queue per tx queue,
 * its frames in send.memory_region when named, or the pcap file.  A
 * region in GPU memory: no backend here sends from it, so one line says so
 * and the frames go in host memory. */
static int open_source(vfgx_ctx *ctx, const struct vfgx_config *cfg, struct sender *s,
		       uint16_t nq)
{
	struct vfgx_queue_config qs[VFGX_MAX_QUEUES];
	struct vfgx_iface_config ifc = {
		.name = "send.generator", .backend = "loopback", .address = "",
		.nb_rx_queues = nq, .rx_queues = qs, .tx_queues = qs,
	};
	const char *region = s->c.memory_region ? s->c.memory_region : "";
	const struct vfgx_region_config *rc = region[0] ? vfgx_config_find_region(cfg, region) : NULL;
	const struct vfgx_cfg_node *so = &cfg->send_opts;

	if (region[0] && !rc)
		return vfgx_set_error(ctx, -EINVAL, "send.memory_region: '%s' is not one of memory_regions[]",
				      region);
	if (rc && rc->kind == VFGX_MEM_GPU) {
		vfgx_warn(ctx, "send.memory_region %s is GPU memory: the %s port sends from host memory (it copies each frame, or the kernel does); the frames are built in host memory instead",
			  region, vfgx_port_backend(s->out));
		region = "";
	}
	if (s->c.source == SRC_PCAP) {
		ifc.name = "send.pcap";
		ifc.backend = "pcap";
		ifc.nb_rx_queues = 1;
		vfgx_cfg_child(so, "pcap", &ifc.opts);
	} else {
		vfgx_cfg_child(so, "generator", &ifc.opts);
	}
	for (uint16_t q = 0; q < VFGX_MAX_QUEUES; q++)
		qs[q] = (struct vfgx_queue_config){ .id = q, .batch_size = (uint16_t)s->c.burst,
						    .region = region };
	return vfgx_port_open_config(ctx, cfg, &ifc, &s->src);
}

/* Frames to what the out port sends: socket ports take the UDP payload. */
static uint16_t to_payload(struct sender *s, struct vfgx_pkt *pk, uint16_t n,
			   struct vfgx_pkt *out)
{
	uint16_t k = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct vfgx_parsed ps;
		int need;

		if (vfgx_parse_headers(pk[i].data, pk[i].len, &ps, &need) != VFGX_STAGE_PASS) {
			s->drops[SD_NOT_UDP]++;
			continue;
		}
		out[k] = pk[i];
		out[k].data += ps.payload_off;
		out[k].len = ps.payload_len;
		k++;
	}
	return k;
}

/* Each packet's launch time: when the schedule has it (the packets and
 * bytes before it, pk0 and b0 before the burst), plus the lead; unpaced,
 * now plus the lead.  A negative lead puts it in the past (the qdisc
 * refuses such packets, counted as txtime_invalid). */
static const struct vfgx_pkt *set_launch(struct sender *s, const struct vfgx_pkt *send,
					 struct vfgx_pkt *tx, uint16_t k, uint64_t pk0, uint64_t b0)
{
	int64_t lead = (int64_t)(s->c.txtime_lead_us * 1e3);
	uint64_t now = vfgx_now_ns(), b = 0;

	if (send != tx)
		memcpy(tx, send, (size_t)k * sizeof(*tx));
	for (uint16_t i = 0; i < k; i++) {
		int64_t t = (int64_t)(s->pace.paced ? send_pace_due_at(&s->pace, pk0 + i, b0 + b) : now) + lead;

		tx[i].ts_ns = t > 0 ? (uint64_t)t : 1;
		tx[i].flags |= VFGX_PKT_TXTIME;
		b += tx[i].len;
		if (tx[i].ts_ns > s->txt_last)
			s->txt_last = tx[i].ts_ns;
	}
	return tx;
}

/* tx_burst (or, with lens, tx_submit of the reserved buffers) until all
 * went, an error, or stall_ms without progress; bytes: the burst's (summed
 * once, for the pacing, when it all goes). */
static void tx_all(struct sender *s, uint16_t q, const struct vfgx_pkt *pk, const uint32_t *lens,
		   uint16_t n, uint64_t bytes)
{
	uint64_t last = 0;
	uint16_t off = 0;

	while (off < n) {
		int k = lens ? vfgx_port_tx_submit(s->out, q, lens + off, (uint16_t)(n - off)) :
			       vfgx_port_tx_burst(s->out, q, pk + off, (uint16_t)(n - off));

		if (k < 0) {
			s->error = k;
			s->drops[SD_ERROR] += n - off;
			return;
		}
		if (k == n) {
			s->bytes += bytes;
		} else {
			for (int i = 0; i < k; i++)
				s->bytes += lens ? lens[off + i] : pk[off + i].len;
		}
		s->packets += (uint64_t)k;
		off += (uint16_t)k;
		if (k) {
			last = 0;
			continue;
		}
		s->full_waits++;
		uint64_t now = vfgx_now_ns();

		if (!last)
			last = now;
		else if (now - last > (uint64_t)s->c.stall_ms * 1000000ull || interrupted) {
			/* what stays reserved is written over by the next burst */
			s->drops[SD_STALLED] += n - off;
			return;
		}
	}
}

/* The fused path (s->fill): source queue q's next frames copied straight
 * into tx queue txq's buffers, sequences advanced in the copy; no packet
 * descriptors, no second copy.  The frames the source gave (0: none now),
 * or < 0. */
static int fill_burst(struct sender *s, uint16_t q, uint16_t txq)
{
	void *bufs[1024];
	uint32_t lens[1024], room;
	uint64_t bytes = 0;
	int n = vfgx_port_tx_reserve(s->out, txq, bufs, (uint16_t)s->c.burst, &room);

	if (n <= 0) {
		if (n == 0)
			s->full_waits++; /* no tx buffer free: nothing taken, retried */
		return n;
	}
	n = vfgx_loopback_replay_copy(s->src, q, bufs, room, lens, (uint16_t)n);
	if (n <= 0)
		return n;
	for (int i = 0; i < n; i++)
		bytes += lens[i];
	send_pace_sent(&s->pace, (uint32_t)n, bytes);
	tx_all(s, txq, NULL, lens, (uint16_t)n, bytes);
	return n;
}

static void live_line(const struct sender *s, uint64_t prev_pk, uint64_t prev_b, double dt)
{
	uint64_t drops = 0;

	for (int i = 0; i < SD_MAX; i++)
		drops += s->drops[i];
	fprintf(stdout, "\r%8.3f Mpps %8.3f Gbps  sent %" PRIu64 "  drops %" PRIu64 "   ",
		(double)(s->packets - prev_pk) / dt / 1e6,
		(double)(s->bytes - prev_b) * 8 / dt / 1e9, s->packets, drops);
	fflush(stdout);
}

/* The out port's tx queues to the metrics endpoint, from the sending
 * thread (the one that calls tx_burst). */
static void publish(struct sender *s, bool finished)
{
	struct vfgx_metrics_queue qs[VFGX_MAX_QUEUES];
	struct vfgx_metrics_snapshot snap = { .argsz = sizeof(snap), .program = "send",
					      .finished = finished, .queues = qs };

	if (!s->metrics)
		return;
	for (uint16_t q = 0; q < vfgx_port_nb_tx_queues(s->out); q++) {
		qs[q] = (struct vfgx_metrics_queue){ .port = vfgx_port_name(s->out),
						     .backend = vfgx_port_backend(s->out),
						     .queue = q };
		vfgx_port_stats(s->out, q, &qs[q].st);
		snap.nb_queues++;
	}
	vfgx_metrics_publish(s->metrics, &snap);
}

/* After the last burst: wait until the qdisc has let the last launch time
 * pass (a missed one is reported then), read every queue's reports and
 * move the refused packets from sent to the drops. */
static void txtime_collect(struct sender *s)
{
	uint64_t until = s->txt_last + 50000000ull, now = vfgx_now_ns();

	if (until > now + 5000000000ull)
		until = now + 5000000000ull; /* a lead of seconds: wait no more */
	while (now < until && !interrupted) {
		uint64_t ns = until - now;
		struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

		nanosleep(&ts, NULL);
		now = vfgx_now_ns();
	}
	s->txs = (struct vfgx_txtime_stats){ 0 };
	for (uint16_t q = 0; q < vfgx_port_nb_tx_queues(s->out); q++) {
		struct vfgx_txtime_stats t = { .argsz = sizeof(t) };

		if (vfgx_port_txtime_stats(s->out, q, &t))
			continue;
		s->txs.sent += t.sent;
		s->txs.missed += t.missed;
		s->txs.invalid += t.invalid;
		s->txs.missed_bytes += t.missed_bytes;
		s->txs.invalid_bytes += t.invalid_bytes;
	}
	s->drops[SD_TXT_MISSED] = s->txs.missed;
	s->drops[SD_TXT_INVALID] = s->txs.invalid;
	s->packets -= s->txs.missed + s->txs.invalid;
	s->bytes -= s->txs.missed_bytes + s->txs.invalid_bytes;
}

/* The sending loop; every queue of the source in turn. */
static void send_loop(struct sender *s, bool live)
{
	uint16_t nq = vfgx_port_nb_rx_queues(s->src);
	uint16_t ntx = vfgx_port_nb_tx_queues(s->out);
	struct vfgx_pkt pk[1024], tx[1024];
	bool done[VFGX_MAX_QUEUES] = { false };
	uint16_t left = nq;
	uint64_t t0 = vfgx_now_ns(), tlast = t0, plast = 0, blast = 0, tpub = t0;
	uint64_t end = s->c.duration_s > 0 ? t0 + (uint64_t)(s->c.duration_s * 1e9) : 0;

	/* the clock for the end, the live line and the metrics: every round
	 * when paced (the pacing reads it anyway), every 16th when not (a
	 * clock read per burst is a few percent of an unpaced DPDK send) */
	uint32_t every, round = 0;
	bool stopped = false;

	struct rusage ru0, ru1;

	getrusage(RUSAGE_THREAD, &ru0);
	send_pace_start(&s->pace, s->c.rate_pps, s->c.rate_bps, (uint64_t)(s->c.spin_us * 1e3), t0);
	every = s->pace.paced ? 1 : 16;
	while (left && !interrupted && !s->error && !stopped) {
		for (uint16_t q = 0; q < nq && !s->error; q++) {
			uint16_t txq = (uint16_t)(q % ntx);
			int n;

			if (done[q])
				continue;
			/* the burst's turn before it is taken from the source:
			 * the end (duration) or a signal during the wait sends
			 * nothing more, and what the source gave went out */
			if (!send_pace_turn(&s->pace, end, &interrupted)) {
				stopped = true;
				break;
			}
			if (s->fill) {
				n = fill_burst(s, q, txq);
				if (n < 0) {
					s->error = n;
					break;
				}
				if (n == 0 && vfgx_port_rx_done(s->src, q)) {
					done[q] = true;
					left--;
				}
				continue;
			}
			n = vfgx_port_rx_burst(s->src, q, pk, (uint16_t)s->c.burst);
			if (n < 0) {
				s->error = n;
				break;
			}
			if (n == 0) {
				if (vfgx_port_rx_done(s->src, q)) {
					done[q] = true;
					left--;
				}
				continue;
			}
			uint64_t bytes = 0;
			const struct vfgx_pkt *send = pk;
			uint16_t k = (uint16_t)n;

			if (s->payload_only) {
				k = to_payload(s, pk, (uint16_t)n, tx);
				send = tx;
			}
			for (uint16_t i = 0; i < k; i++)
				bytes += send[i].len;
			uint64_t pk0 = s->pace.pk, b0 = s->pace.bytes;

			send_pace_sent(&s->pace, k, bytes);
			if (s->txtime)
				send = set_launch(s, send, tx, k, pk0, b0);
			tx_all(s, txq, send, NULL, k, bytes);
			vfgx_port_release(s->src, q, pk, (uint16_t)n);
		}
		if (++round % every)
			continue;
		uint64_t now = vfgx_now_ns();

		if (end && now >= end)
			break;
		if (s->metrics && now - tpub >= 1000000000ull) {
			publish(s, false);
			tpub = now;
		}
		if (live && now - tlast >= 1000000000ull) {
			live_line(s, plast, blast, (double)(now - tlast) / 1e9);
			plast = s->packets;
			blast = s->bytes;
			tlast = now;
		}
	}
	send_pace_end(&s->pace, vfgx_now_ns());
	getrusage(RUSAGE_THREAD, &ru1);
	s->csw_inv = ru1.ru_nivcsw - ru0.ru_nivcsw;
	s->csw_vol = ru1.ru_nvcsw - ru0.ru_nvcsw;
	if (s->txtime)
		txtime_collect(s);
	publish(s, true);
	if (s->error)
		snprintf(s->error_msg, sizeof(s->error_msg), "%s", vfgx_last_error(s->ctx));
}

static void source_sum(vfgx_port *src, struct vfgx_source_report *sum)
{
	memset(sum, 0, sizeof(*sum));
	sum->known = true;
	for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(src); q++) {
		struct vfgx_source_report r;

		if (vfgx_port_source_report(src, q, &r) || !r.known) {
			sum->known = false;
			continue;
		}
		sum->generated += r.generated;
		sum->lost += r.lost;
		sum->duplicated += r.duplicated;
		sum->corrupted += r.corrupted;
		sum->reordered += r.reordered;
	}
}

/* null when send.txtime was not asked */
static json_object *txtime_json(const struct sender *s)
{
	json_object *t;

	if (!s->c.txtime)
		return NULL;
	t = json_object_new_object();
	json_object_object_add(t, "used", json_object_new_boolean(s->txtime));
	json_object_object_add(t, "fallback", s->txtime ? NULL : json_object_new_string(s->txtime_off));
	json_object_object_add(t, "device", s->txtime ? json_object_new_string(s->txi.device) : NULL);
	json_object_object_add(t, "delta_ns", json_object_new_int(s->txi.delta_ns));
	json_object_object_add(t, "lead_us", json_object_new_double(s->c.txtime_lead_us));
	json_object_object_add(t, "sent", json_object_new_uint64(s->txs.sent));
	json_object_object_add(t, "missed", json_object_new_uint64(s->txs.missed));
	json_object_object_add(t, "invalid", json_object_new_uint64(s->txs.invalid));
	return t;
}

/* null when send.sched_priority was not asked */
static json_object *sched_json(const struct sender *s)
{
	json_object *o;

	if (!s->c.sched_priority)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "priority", json_object_new_int((int)s->c.sched_priority));
	json_object_object_add(o, "fifo", json_object_new_boolean(s->fifo));
	json_object_object_add(o, "refused", s->fifo ? NULL : json_object_new_string(s->sched_off));
	return o;
}

static json_object *csw_json(const struct sender *s)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "involuntary", json_object_new_int64(s->csw_inv));
	json_object_object_add(o, "voluntary", json_object_new_int64(s->csw_vol));
	return o;
}

static int report(const struct vfgx_config *cfg, const struct sender *s, bool json,
		  bool was_interrupted)
{
	struct vfgx_source_report src;
	struct send_pace_result pr;
	uint64_t drops = 0, tx_drops[VFGX_DROP_MAX] = { 0 };
	bool ok;
	FILE *f = json ? stderr : stdout;

	source_sum(s->src, &src);
	send_pace_result(&s->pace, &pr);
	for (int i = 0; i < SD_MAX; i++)
		drops += s->drops[i];
	for (uint16_t q = 0; q < vfgx_port_nb_tx_queues(s->out); q++) {
		struct vfgx_queue_stats qs;

		if (vfgx_port_stats(s->out, q, &qs) == 0)
			for (int k = 0; k < VFGX_DROP_MAX; k++)
				tx_drops[k] += qs.drops[k];
	}
	ok = !s->error && drops == 0;
	fprintf(f, "\n== vfgx send report (%s) ==\n", cli_esc(cfg->source));
	fprintf(f, "sent %" PRIu64 " packets, %" PRIu64 " bytes in %.3f s: %.3f Mpps, %.3f Gbps (port %s, %s)\n",
		s->packets, s->bytes, pr.seconds, pr.pps / 1e6, pr.bps / 1e9,
		vfgx_port_name(s->out), vfgx_port_backend(s->out));
	if (pr.paced)
		fprintf(f, "pacing: asked %.0f pps / %.0f bit/s, achieved %.0f pps (error %+.3f%%), burst gap error p50 %.1f us, p99 %.1f us, max %.1f us over %" PRIu64 " gaps\n",
			s->c.rate_pps, s->c.rate_bps, pr.sched_pps, pr.rate_error_pct,
			pr.gap_err_p50_ns / 1e3, pr.gap_err_p99_ns / 1e3, pr.gap_err_max_ns / 1e3,
			pr.gaps);
	if (pr.paced)
		fprintf(f, "pacing: waits spun for their last %.0f us (send.spin_us), slept before\n",
			s->c.spin_us);
	if (s->fifo)
		fprintf(f, "scheduling: the sending thread SCHED_FIFO, priority %u (send.sched_priority)\n",
			s->c.sched_priority);
	else if (s->c.sched_priority)
		fprintf(f, "scheduling: normal; send.sched_priority %u refused: %s\n",
			s->c.sched_priority, s->sched_off);
	fprintf(f, "sending thread: %ld involuntary, %ld voluntary context switches\n",
		s->csw_inv, s->csw_vol);
	if (s->txtime)
		fprintf(f, "txtime: on (SO_TXTIME, CLOCK_TAI; ETF qdisc on %s, delta %d ns), launch time = schedule %+.0f us: %" PRIu64 " sent with a launch time, refused by the qdisc: %" PRIu64 " missed, %" PRIu64 " invalid\n",
			cli_esc(s->txi.device), s->txi.delta_ns, s->c.txtime_lead_us, s->txs.sent,
			s->txs.missed, s->txs.invalid);
	else if (s->c.txtime)
		fprintf(f, "txtime: off, paced by the token bucket alone (%s)\n", s->txtime_off);
	if (s->fill)
		fprintf(f, "tx: replayed frames copied straight into the port's tx buffers\n");
	fprintf(f, "tx waits (port took nothing, retried): %" PRIu64 "\n", s->full_waits);
	for (int i = 0; i < SD_MAX; i++)
		if (s->drops[i])
			fprintf(f, "drop %-12s %" PRIu64 "\n", send_drop_names[i], s->drops[i]);
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
		json_object_object_add(root, "port", json_object_new_string(vfgx_port_name(s->out)));
		json_object_object_add(root, "backend", json_object_new_string(vfgx_port_backend(s->out)));
		json_object_object_add(root, "packets", json_object_new_uint64(s->packets));
		json_object_object_add(root, "bytes", json_object_new_uint64(s->bytes));
		json_object_object_add(root, "seconds", json_object_new_double(pr.seconds));
		json_object_object_add(root, "pps", json_object_new_double(pr.pps));
		json_object_object_add(root, "bps", json_object_new_double(pr.bps));
		json_object_object_add(pj, "rate_pps", json_object_new_double(s->c.rate_pps));
		json_object_object_add(pj, "rate_bps", json_object_new_double(s->c.rate_bps));
		json_object_object_add(pj, "achieved_pps", json_object_new_double(pr.sched_pps));
		json_object_object_add(pj, "achieved_bps", json_object_new_double(pr.sched_bps));
		json_object_object_add(pj, "rate_error_pct", json_object_new_double(pr.rate_error_pct));
		json_object_object_add(pj, "gap_error_p50_ns", json_object_new_double(pr.gap_err_p50_ns));
		json_object_object_add(pj, "gap_error_p99_ns", json_object_new_double(pr.gap_err_p99_ns));
		json_object_object_add(pj, "gap_error_max_ns", json_object_new_double(pr.gap_err_max_ns));
		json_object_object_add(pj, "gaps", json_object_new_uint64(pr.gaps));
		json_object_object_add(pj, "spin_us", json_object_new_double(s->c.spin_us));
		json_object_object_add(root, "pacing", pr.paced ? pj : NULL);
		if (!pr.paced)
			json_object_put(pj);
		json_object_object_add(root, "txtime", txtime_json(s));
		json_object_object_add(root, "tx_in_place", json_object_new_boolean(s->fill));
		json_object_object_add(root, "sched", sched_json(s));
		json_object_object_add(root, "context_switches", csw_json(s));
		json_object_object_add(root, "tx_waits", json_object_new_uint64(s->full_waits));
		for (int i = 0; i < SD_MAX; i++)
			json_object_object_add(dr, send_drop_names[i], json_object_new_uint64(s->drops[i]));
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

/* send.txtime: on, or refused (a backend without it: exit 2), or one line
 * and the token bucket alone (this host or device cannot). */
static int txtime_start(struct sender *s)
{
	int ret;

	s->txi.argsz = sizeof(s->txi);
	ret = vfgx_port_txtime_enable(s->out, &s->txi);
	if (ret == -EOPNOTSUPP) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(s->ctx));
		return 2;
	}
	if (ret) {
		snprintf(s->txtime_off, sizeof(s->txtime_off), "%s", vfgx_last_error(s->ctx));
		fprintf(stderr, "vfgx: %s; pacing with the token bucket instead\n", s->txtime_off);
		return 0;
	}
	s->txtime = true;
	return 0;
}

/* Replayed frames: copied straight into the out port's tx buffers where it
 * has them (DPDK) and nothing else is asked of each frame (the whole frame
 * goes, no launch time), else advanced by rx as handed out; either way on
 * the sending thread, where each frame is read next anyway, not by a
 * thread of the source beside it. */
static int replay_mode(struct sender *s)
{
	void *buf;
	uint32_t room;
	int ret;

	if (!s->payload_only && !s->c.txtime &&
	    vfgx_port_tx_reserve(s->out, 0, &buf, 1, &room) == 1) {
		ret = vfgx_loopback_replay_copy_mode(s->src, room);
		if (ret == 0) {
			s->fill = true;
			return 0;
		}
		if (ret != -ENOTSUP)
			return ret;
	}
	return vfgx_loopback_replay_inline(s->src);
}

/* send.sched_priority: the sending thread (this one) SCHED_FIFO, set after
 * the ports and the metrics server started their threads, so those stay
 * with normal scheduling; refused (no CAP_SYS_NICE, RLIMIT_RTPRIO): one
 * line, normal scheduling, said in the report. */
static void sched_start(struct sender *s)
{
	struct sched_param sp = { .sched_priority = (int)s->c.sched_priority };
	int ret;

	if (!s->c.sched_priority)
		return;
	ret = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (ret) {
		snprintf(s->sched_off, sizeof(s->sched_off),
			 "SCHED_FIFO priority %u: %s (needs CAP_SYS_NICE or an RLIMIT_RTPRIO of %u)",
			 s->c.sched_priority, strerror(ret), s->c.sched_priority);
		fprintf(stderr, "vfgx: send.sched_priority: %s; normal scheduling\n", s->sched_off);
		return;
	}
	s->fifo = true;
}

static int send_conf_load(vfgx_ctx *ctx, const struct vfgx_config *cfg, struct send_conf *c)
{
	if (vfgx_opts_from_yaml(&cfg->send_opts, send_tab, SEND_NOPTS, c, sizeof(*c))) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		return 2;
	}
	return 0;
}

int vfgx_cmd_send(int argc, char **argv)
{
	struct vfgx_config *cfg = NULL;
	struct sender s = { 0 };
	double duration = -1, rate = -1;
	bool quiet = false, json = false, txtime = false;
	const struct vfgx_iface_config *ifc = NULL;
	const char *listen = NULL;
	struct run_output ro = { 0 };
	struct run_config rcfg = { 0 };
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
	s.ctx = ctx;
	if ((rc = send_conf_load(ctx, cfg, &s.c)))
		goto out;
	if (run_config_parse(cfg, &rcfg)) { /* metrics.listen, as vfgx run */
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		rc = 2;
		goto out;
	}
	rc = 2;
	if (duration >= 0)
		s.c.duration_s = duration;
	if (rate >= 0)
		s.c.rate_pps = rate;
	if (txtime)
		s.c.txtime = true;
	for (uint16_t i = 0; i < cfg->nb_ifaces && !ifc; i++)
		if (!s.c.interface || !strcmp(cfg->ifaces[i].name, s.c.interface))
			ifc = &cfg->ifaces[i];
	if (!ifc) {
		fprintf(stderr, s.c.interface ? "vfgx: %s: send.interface: no interface named '%s'\n" :
						"vfgx: %s: no interfaces configured (add the one to send on under interfaces:)\n",
			cli_esc(cfg->source), s.c.interface ? cli_esc(s.c.interface) : "");
		goto out;
	}
	if (ifc->nb_tx_queues == 0) {
		fprintf(stderr, "vfgx: %s: interface %s has no tx queue (tx: queues:)\n",
			cli_esc(cfg->source), cli_esc(ifc->name));
		goto out;
	}
	if ((ret = vfgx_port_open_config(ctx, cfg, ifc, &s.out))) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		rc = ret == -EINVAL ? 2 : 1;
		goto out;
	}
	if ((ret = open_source(ctx, cfg, &s, ifc->nb_tx_queues))) {
		fprintf(stderr, "vfgx: %s: %s\n", cli_esc(cfg->source), vfgx_last_error(ctx));
		rc = ret == -EINVAL ? 2 : 1;
		goto out;
	}
	/* every frame is read on this thread (copied into a tx buffer, or by
	 * the kernel): replayed frames get their sequences advanced here as
	 * they are handed out, not by a thread of the source beside it */
	s.payload_only = !strcmp(ifc->backend, "socket") || !strcmp(ifc->backend, "rdma");
	if (s.c.source == SRC_GENERATOR && (ret = replay_mode(&s))) {
		fprintf(stderr, "vfgx: %s: %s\n", cli_esc(cfg->source), vfgx_last_error(ctx));
		goto out;
	}
	if (s.c.txtime && (rc = txtime_start(&s)))
		goto out;
	/* --metrics, else the config's metrics.listen, as vfgx run */
	ro.listen = listen;
	if (run_output_open(ctx, &rcfg, &ro)) {
		rc = ro.rc;
		goto out;
	}
	s.metrics = ro.metrics;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN); /* a TCP peer that goes: an error line, not a death */
	sched_start(&s);
	send_loop(&s, !quiet && !json && isatty(STDOUT_FILENO));
	rc = report(cfg, &s, json, interrupted);
out:
	run_output_close(&ro);
	vfgx_port_close(s.src);
	vfgx_port_close(s.out);
	run_config_free(&rcfg);
	vfgx_config_destroy(cfg);
	vfgx_ctx_destroy(ctx);
	return rc;
}
