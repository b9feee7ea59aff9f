/* sender.c - vfgx_sender (vfgx/send.h): a paced stream out of one of a
 * config's interfaces.  The source is a port read like any other: the
 * loopback generator or a pcap file.  Each burst waits for its turn in a
 * token bucket (send_pace.c), then goes out with tx_burst; socket ports
 * get the UDP payload, frame ports the whole frame; replayed frames are
 * copied straight into a DPDK port's tx buffers instead (port/tx_fill.h).
 * The wait spins its last spin_us; sched_priority makes the sending
 * thread SCHED_FIFO.  With txtime each packet also carries its launch time
 * from the same schedule (SO_TXTIME, the ETF qdisc holds it); where that
 * cannot run, the report says why and the token bucket alone paces.
 * send.format sends the generator's packets in a producer's profile
 * (send_format.c writes each from its flow and sequence). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <vfgx/send.h>
#include <vfgx/vfgx.h>

#include "core/argsz.h"
#include "core/opts.h"
#include "format/format_opts.h"
#include "port/port_opts.h"
#include "port/loopback_replay.h"
#include "port/tx_fill.h"
#include "send_format.h"
#include "send_pace.h"

#define SD_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_send_opts, F, __VA_ARGS__)
static const char *const src_names[] = { "generator", "pcap", NULL };
static const struct vfgx_opt send_tab[] = {
	SD_OPT(ENUM, source, VFGX_SEND_GENERATOR, 0, 0, src_names),
	SD_OPT(STR, interface, 0),
	SD_OPT(DOUBLE, rate_pps, 0, 0, 1e10),
	SD_OPT(DOUBLE, rate_bps, 0, 0, 1e13),
	SD_OPT(U32, burst, 32, 1, VFGX_BATCH_MAX),
	SD_OPT(DOUBLE, duration_s, 0, 0, 86400 * 365),
	SD_OPT(U32, stall_ms, 1000, 1, 600000),
	SD_OPT(STR, memory_region, 0),
	SD_OPT(BOOL, txtime, 0),
	SD_OPT(DOUBLE, txtime_lead_us, 1000, -1e6, 1e6),
	SD_OPT(DOUBLE, spin_us, 1000, 0, 1e6),
	SD_OPT(U32, sched_priority, 0, 0, 99),
	/* the sources' sections: their ports' tables (source_from_yaml) */
	SD_OPT(SKIP, generator, 0),
	SD_OPT(SKIP, pcap, 0),
	{ "format", VFGX_OPT_SKIP, 0, 0, 0, 0, NULL },
	{ "header", VFGX_OPT_SKIP, 0, 0, 0, 0, NULL },
};
#define SEND_NOPTS (sizeof(send_tab) / sizeof(send_tab[0]))

enum { SD_STALLED = VFGX_SEND_DROP_STALLED, SD_ERROR = VFGX_SEND_DROP_TX_ERROR,
       SD_NOT_UDP = VFGX_SEND_DROP_NOT_UDP, SD_TXT_MISSED = VFGX_SEND_DROP_TXTIME_MISSED,
       SD_TXT_INVALID = VFGX_SEND_DROP_TXTIME_INVALID, SD_ENCODE = VFGX_SEND_DROP_ENCODE,
       SD_MAX = VFGX_SEND_DROP_MAX };
enum { SRC_GENERATOR = VFGX_SEND_GENERATOR, SRC_PCAP = VFGX_SEND_PCAP };
static const char *const send_drop_names[SD_MAX] = { "stalled", "tx_error", "not_udp",
						     "txtime_missed", "txtime_invalid", "encode" };

struct vfgx_sender {
	vfgx_ctx *ctx;
	vfgx_port *src, *out;
	bool payload_only; /* the out port sends UDP payloads (socket, rdma) */
	bool fill;         /* replayed frames copied into the out port's tx buffers */
	struct send_format fmt; /* send.format */
	struct vfgx_send_opts c;
	uint64_t packets, bytes, drops[SD_MAX];
	uint64_t full_waits; /* tx_burst took nothing: retried */
	struct send_pace pace;
	bool txtime;           /* launch times in use (txtime and the port could) */
	struct vfgx_txtime_info txi;
	struct vfgx_txtime_stats txs; /* all tx queues, after the run */
	uint64_t txt_last;     /* the latest launch time given */
	char txtime_off[320];  /* txtime asked but not in use: why */
	bool fifo;             /* the sending thread runs SCHED_FIFO */
	char sched_off[256];   /* sched_priority asked but refused: why */
	long csw_inv, csw_vol; /* the sending thread's context switches in the loop */
	vfgx_metrics *metrics; /* or NULL */
	vfgx_send_progress_fn progress;
	void *progress_user;
	volatile sig_atomic_t interrupted;
	bool ran;
	int error;
	char error_msg[256];
};

void vfgx_send_opts_default(struct vfgx_send_opts *o)
{
	vfgx_opts_default(send_tab, SEND_NOPTS, o, sizeof(*o));
	o->generator = NULL;
	o->pcap = NULL;
	o->format_profile = NULL;
	o->format_desc = NULL;
	o->header_values = NULL;
}

/* send.generator / send.pcap by their ports' tables (the parse entries
 * of port/port_opts.h); NULL when absent (the defaults). */
static int source_from_yaml(const struct vfgx_cfg_node *so, const char *key, const char *backend,
			    const struct vfgx_backend_opts **out)
{
	struct vfgx_iface_config ifc = { .name = key, .backend = backend, .address = "",
					 .nb_rx_queues = 1 };
	struct vfgx_cfg_node n;

	*out = NULL;
	if (vfgx_cfg_child(so, key, &n))
		return 0;
	return vfgx_port_opts_from_yaml(&n, &ifc, out);
}

int vfgx_send_opts_from_config(const struct vfgx_config *cfg, struct vfgx_send_opts *o)
{
	struct vfgx_cfg_node root = { .doc = cfg->doc, .index = 1 }, so, n;
	const struct vfgx_backend_opts *gen, *pcap;
	int ret;

	memset(o, 0, sizeof(*o));
	vfgx_cfg_child(&root, "send", &so);
	if ((ret = vfgx_opts_from_yaml(&so, send_tab, SEND_NOPTS, o, sizeof(*o))) ||
	    (ret = source_from_yaml(&so, "generator", "loopback", &gen)) ||
	    (ret = source_from_yaml(&so, "pcap", "pcap", &pcap)))
		return ret;
	o->generator = (const struct vfgx_loopback_opts *)gen;
	o->pcap = (const struct vfgx_pcap_opts *)pcap;
	if (!vfgx_cfg_child(&so, "format", &n)) {
		struct vfgx_format *f = vfgx_cfg_alloc(&n, sizeof(*f));

		if (!f)
			return -ENOMEM;
		if ((ret = vfgx_format_from_yaml(&n, f)))
			return ret;
		o->format_desc = f;
	}
	if (!vfgx_cfg_child(&so, "header", &n)) {
		struct vfgx_fmt_send *h = vfgx_cfg_alloc(&n, sizeof(*h));

		if (!h)
			return -ENOMEM;
		if ((ret = send_header_from_yaml(&n, h)))
			return ret;
		o->header_values = h;
	}
	return 0;
}

const char *vfgx_send_drop_name(enum vfgx_send_drop d)
{
	return (unsigned)d < SD_MAX ? send_drop_names[d] : "?";
}

/* The source port: the generator (loopback) with one queue per tx queue,
 * its frames in send.memory_region when named, or the pcap file.  A
 * region in GPU memory: no backend here sends from it, so one line says so
 * and the frames go in host memory. */
static int open_source(vfgx_ctx *ctx, const struct vfgx_config *cfg, struct vfgx_sender *s,
		       uint16_t nq)
{
	struct vfgx_queue_config qs[VFGX_MAX_QUEUES];
	struct vfgx_iface_config ifc = {
		.name = "send.generator", .backend = "loopback", .address = "",
		.nb_rx_queues = nq, .rx_queues = qs, .tx_queues = qs,
	};
	const char *region = s->c.memory_region ? s->c.memory_region : "";
	const struct vfgx_region_config *rc = region[0] ? vfgx_config_find_region(cfg, region) : NULL;

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
		ifc.backend_opts = s->c.pcap ? &s->c.pcap->hdr : NULL;
	} else {
		ifc.backend_opts = s->c.generator ? &s->c.generator->hdr : NULL;
	}
	for (uint16_t q = 0; q < VFGX_MAX_QUEUES; q++)
		qs[q] = (struct vfgx_queue_config){ .id = q, .batch_size = (uint16_t)s->c.burst,
						    .region = region };
	return vfgx_port_open_config(ctx, cfg, &ifc, &s->src);
}

/* Frames to what the out port sends: socket ports take the UDP payload. */
static uint16_t to_payload(struct vfgx_sender *s, struct vfgx_pkt *pk, uint16_t n,
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
static const struct vfgx_pkt *set_launch(struct vfgx_sender *s, const struct vfgx_pkt *send,
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
static void tx_all(struct vfgx_sender *s, uint16_t q, const struct vfgx_pkt *pk, const uint32_t *lens,
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
		else if (now - last > (uint64_t)s->c.stall_ms * 1000000ull || s->interrupted) {
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
static int fill_burst(struct vfgx_sender *s, uint16_t q, uint16_t txq)
{
	void *bufs[VFGX_BATCH_MAX];
	uint32_t lens[VFGX_BATCH_MAX], room;
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

/* The out port's tx queues to the metrics endpoint, from the sending
 * thread (the one that calls tx_burst). */
static void publish(struct vfgx_sender *s, bool finished)
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
static void txtime_collect(struct vfgx_sender *s)
{
	uint64_t until = s->txt_last + 50000000ull, now = vfgx_now_ns();

	if (until > now + 5000000000ull)
		until = now + 5000000000ull; /* a lead of seconds: wait no more */
	while (now < until && !s->interrupted) {
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
static void send_loop(struct vfgx_sender *s)
{
	uint16_t nq = vfgx_port_nb_rx_queues(s->src);
	uint16_t ntx = vfgx_port_nb_tx_queues(s->out);
	struct vfgx_pkt pk[VFGX_BATCH_MAX], tx[VFGX_BATCH_MAX];
	bool done[VFGX_MAX_QUEUES] = { false };
	uint16_t left = nq;
	uint64_t t0 = vfgx_now_ns(), tlast = t0, tpub = t0;
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
	while (left && !s->interrupted && !s->error && !stopped) {
		for (uint16_t q = 0; q < nq && !s->error; q++) {
			uint16_t txq = (uint16_t)(q % ntx);
			int n;

			if (done[q])
				continue;
			/* the burst's turn before it is taken from the source:
			 * the end (duration) or a signal during the wait sends
			 * nothing more, and what the source gave went out */
			if (!send_pace_turn(&s->pace, end, &s->interrupted)) {
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

			if (s->fmt.on) {
				k = send_format_burst(&s->fmt, pk, (uint16_t)n, tx, s->payload_only,
						      &s->drops[SD_NOT_UDP], &s->drops[SD_ENCODE]);
				send = tx;
			} else if (s->payload_only) {
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
		if (s->progress && now - tlast >= 1000000000ull) {
			struct vfgx_send_progress p = { .packets = s->packets, .bytes = s->bytes };

			for (int i = 0; i < SD_MAX; i++)
				p.drops += s->drops[i];
			s->progress(s->progress_user, &p);
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

/* txtime: on, or refused (a backend without it: -EOPNOTSUPP), or the
 * token bucket alone, the report saying why (this host or device cannot). */
static int txtime_start(struct vfgx_sender *s)
{
	int ret;

	s->txi.argsz = sizeof(s->txi);
	ret = vfgx_port_txtime_enable(s->out, &s->txi);
	if (ret == -EOPNOTSUPP)
		return ret;
	if (ret) {
		snprintf(s->txtime_off, sizeof(s->txtime_off), "%s", vfgx_last_error(s->ctx));
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
static int replay_mode(struct vfgx_sender *s)
{
	void *buf;
	uint32_t room;
	int ret;

	if (!s->payload_only && !s->c.txtime && !s->fmt.on &&
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
 * with normal scheduling; refused (no CAP_SYS_NICE, RLIMIT_RTPRIO): normal
 * scheduling, said in the report. */
static void sched_start(struct vfgx_sender *s)
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
		return;
	}
	s->fifo = true;
}

int vfgx_sender_create(vfgx_ctx *ctx, const struct vfgx_config *cfg,
		       const struct vfgx_send_opts *o, vfgx_sender **out)
{
	const struct vfgx_iface_config *ifc = NULL;
	struct vfgx_sender *s;
	char why[512];
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return vfgx_set_error(ctx, -ENOMEM, "sender: out of memory");
	s->ctx = ctx;
	if (o)
		ret = vfgx_opts_from_user(ctx, "sender", "send", send_tab, SEND_NOPTS, o, &s->c,
					  sizeof(s->c));
	else
		ret = vfgx_send_opts_from_config(cfg, &s->c);
	if (ret)
		goto fail;
	if ((ret = send_format_open(ctx, cfg, &s->c, &s->fmt)))
		goto fail;
	for (uint16_t i = 0; i < cfg->nb_ifaces && !ifc; i++)
		if (!s->c.interface || !strcmp(cfg->ifaces[i].name, s->c.interface))
			ifc = &cfg->ifaces[i];
	ret = -EINVAL;
	if (!ifc) {
		if (s->c.interface)
			vfgx_set_error(ctx, -EINVAL, "%s: send.interface: no interface named '%s'",
				       cfg->source, s->c.interface);
		else
			vfgx_set_error(ctx, -EINVAL,
				       "%s: no interfaces configured (add the one to send on under interfaces:)",
				       cfg->source);
		goto fail;
	}
	if (ifc->nb_tx_queues == 0) {
		vfgx_set_error(ctx, -EINVAL, "%s: interface %s has no tx queue (tx: queues:)",
			       cfg->source, ifc->name);
		goto fail;
	}
	if ((ret = vfgx_port_open_config(ctx, cfg, ifc, &s->out)))
		goto fail;
	if ((ret = open_source(ctx, cfg, s, ifc->nb_tx_queues))) {
		snprintf(why, sizeof(why), "%s", vfgx_last_error(ctx));
		vfgx_set_error(ctx, ret, "%s: %s", cfg->source, why);
		goto fail;
	}
	/* every frame is read on this thread (copied into a tx buffer, or by
	 * the kernel): replayed frames get their sequences advanced here as
	 * they are handed out, not by a thread of the source beside it */
	s->payload_only = !strcmp(ifc->backend, "socket") || !strcmp(ifc->backend, "rdma");
	if (s->c.source == SRC_GENERATOR && (ret = replay_mode(s))) {
		snprintf(why, sizeof(why), "%s", vfgx_last_error(ctx));
		vfgx_set_error(ctx, ret, "%s: %s", cfg->source, why);
		goto fail;
	}
	if (s->c.txtime && (ret = txtime_start(s)))
		goto fail;
	*out = s;
	return 0;
fail:
	vfgx_sender_destroy(s);
	return ret;
}

int vfgx_sender_run(vfgx_sender *s, const struct vfgx_send_run *args)
{
	struct vfgx_send_run a = { 0 };

	if (args && vfgx_argsz_copy(&a, sizeof(a), args, sizeof(a)))
		return vfgx_set_error(s->ctx, -EINVAL, "sender: run argsz %u is not a struct vfgx_send_run",
				      args->argsz);
	if (s->ran)
		return vfgx_set_error(s->ctx, -EALREADY, "sender: already ran");
	s->ran = true;
	s->metrics = a.metrics;
	s->progress = a.progress;
	s->progress_user = a.progress_user;
	sched_start(s);
	send_loop(s);
	return 0;
}

void vfgx_sender_interrupt(vfgx_sender *s)
{
	s->interrupted = 1;
}

vfgx_port *vfgx_sender_port(vfgx_sender *s)
{
	return s->out;
}

int vfgx_sender_report(vfgx_sender *s, struct vfgx_send_report *rep)
{
	struct vfgx_send_report r = { .argsz = sizeof(r) };
	struct send_pace_result pr;

	send_pace_result(&s->pace, &pr);
	r.packets = s->packets;
	r.bytes = s->bytes;
	memcpy(r.drops, s->drops, sizeof(r.drops));
	for (uint16_t q = 0; q < vfgx_port_nb_tx_queues(s->out); q++) {
		struct vfgx_queue_stats qs;

		if (vfgx_port_stats(s->out, q, &qs) == 0)
			for (int k = 0; k < VFGX_DROP_MAX; k++)
				r.port_drops[k] += qs.drops[k];
	}
	r.tx_waits = s->full_waits;
	r.seconds = pr.seconds;
	r.pps = pr.pps;
	r.bps = pr.bps;
	r.paced = pr.paced;
	r.sched_pps = pr.sched_pps;
	r.sched_bps = pr.sched_bps;
	r.rate_error_pct = pr.rate_error_pct;
	r.gap_err_p50_ns = pr.gap_err_p50_ns;
	r.gap_err_p99_ns = pr.gap_err_p99_ns;
	r.gap_err_max_ns = pr.gap_err_max_ns;
	r.gaps = pr.gaps;
	r.txtime = s->txtime;
	r.txtime_off = s->txtime_off;
	r.txtime_device = s->txtime && s->txi.device ? s->txi.device : "";
	r.txtime_delta_ns = s->txi.delta_ns;
	r.txtime_sent = s->txs.sent;
	r.txtime_missed = s->txs.missed;
	r.txtime_invalid = s->txs.invalid;
	r.fifo = s->fifo;
	r.sched_off = s->sched_off;
	r.tx_in_place = s->fill;
	r.csw_involuntary = s->csw_inv;
	r.csw_voluntary = s->csw_vol;
	source_sum(s->src, &r.source);
	r.interrupted = s->interrupted;
	r.error = s->error;
	r.error_msg = s->error_msg;
	r.format = s->fmt.f.name;
	return vfgx_argsz_fill(rep, &r, sizeof(r));
}

void vfgx_sender_destroy(vfgx_sender *s)
{
	if (!s)
		return;
	vfgx_port_close(s->src);
	vfgx_port_close(s->out);
	send_format_close(&s->fmt);
	free(s);
}
