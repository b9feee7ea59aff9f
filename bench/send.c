/* send.c - `vfgx bench send`: the sending side and capture files as a user
 * runs them (the `vfgx send` and `vfgx run` binaries, pinned with taskset),
 * each against its reference in the same run, rounds interleaved:
 * - `vfgx send` on DPDK net_null vs dpdk-testpmd --forward-mode=txonly,
 *   64 B, burst 32, the same lcore, steady-state windows;
 * - `vfgx send` over a UDP socket vs a plain C loop making the same system
 *   calls (send_ref.c), 64-byte payloads, the same CPU, across a veth
 *   pair whose far end discards them; `sockperf tp` and trafgen as rows;
 * - pacing at 1 Mpps and 100 kpps over the same veth pair: the rate and the
 *   burst gaps as a receiver on the far end timestamps them (pace_rx.c);
 * - capture of 1500 B packets to a tmpfs against a plain sequential write
 *   of the same bytes to the same tmpfs, and the pipeline's rate with the
 *   capture against without. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/vfgx.h>

#include "cliopt.h"
#include "commands.h"
#include "results.h"
#include "vfgx_build.h"
#include "pace_rx.h"
#include "send_ref.h"
#if VFGX_HAVE_DPDK
#include "testpmd.h"
#endif

#define MAX_ROUNDS 15
#define SP_PORT 23100

struct opts {
	double seconds;
	int rounds;
	int core, other; /* the measured CPU, and the sink's */
	const char *out;
	char vfgx[PATH_MAX];
	char tmp[64];
	const char *only; /* NULL: every row */
	struct pace_net net; /* the veth pair of the UDP and pacing rows */
	char net_why[160];   /* why it is not up */
};

/* Whether rows runs in this invocation (--only). */
static bool want_rows(const struct opts *o, const char *rows)
{
	return !o->only || !strcmp(o->only, rows);
}

static const struct cli_opt send_opts[] = {
	{ "out", 'o', "DIR", "write send.md and send.svg into DIR (default bench/results)" },
	{ "seconds", 's', "S", "seconds per round and side (default 2)" },
	{ "rounds", 'n', "N", "rounds of each comparison, 3..15 (default 5)" },
	{ "core", 'c', "CPU", "the CPU the measured sender runs on (default 0; the sink gets the next)" },
	{ "only", 'O', "ROWS", "run only these rows: dpdk, udp, pacing or capture (the other targets say not measured)" },
	{ "json", 'j', NULL, "the results file as one JSON document on stdout (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_bench_cli_send = {
	.name = "bench send",
	.summary = "vfgx send vs testpmd txonly and sockperf, pacing error, capture vs a tmpfs write",
	.opts = send_opts,
};

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -errno : 0;
}

/* Run a shell command, its stdout into buf; the exit status. */
static int run_cmd(const char *cmd, char *buf, size_t len)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0, r;

	if (!p)
		return -1;
	while (n + 1 < len && (r = fread(buf + n, 1, len - 1 - n, p)) > 0)
		n += r;
	buf[n] = '\0';
	return pclose(p);
}

/* A `--json` document's number at "a.b" (one level of nesting). */
static double jnum(const char *doc, const char *obj, const char *key)
{
	json_object *root = json_tokener_parse(doc), *o = root, *v;
	double d = -1;

	if (root && obj && !json_object_object_get_ex(root, obj, &o))
		o = NULL;
	if (o && json_object_object_get_ex(o, key, &v))
		d = json_object_get_double(v);
	json_object_put(root);
	return d;
}

/* vfgx send CONFIG --json pinned to o->core; its JSON in buf. */
static int vfgx_send(const struct opts *o, const char *cfg, char *buf, size_t len)
{
	char cmd[PATH_MAX * 2 + 128];
	int st;

	snprintf(cmd, sizeof(cmd), "taskset -c %d '%s' send --json '%s' 2>%s/send.err",
		 o->core, o->vfgx, cfg, o->tmp);
	st = run_cmd(cmd, buf, len);
	if (st != 0 || jnum(buf, NULL, "packets") <= 0) {
		fprintf(stderr, "vfgx bench send: vfgx send %s failed (status %d); its stderr: %s/send.err\n",
			cfg, st, o->tmp);
		return -1;
	}
	return 0;
}

/* sockperf tp with 64-byte messages on o->core: messages per second. */
static double sockperf_tp(const struct opts *o)
{
	char cmd[256], buf[16384];
	const char *p;

	snprintf(cmd, sizeof(cmd), "taskset -c %d sockperf tp -i %s -p %d -m 64 -t %d 2>&1",
		 o->core, o->net.sink_ip, SP_PORT, (int)o->seconds);
	run_cmd(cmd, buf, sizeof(buf));
	p = strstr(buf, "Message Rate is ");
	if (!p) {
		fprintf(stderr, "vfgx bench send: sockperf tp output not understood:\n%s\n", buf);
		return -1;
	}
	return atof(p + strlen("Message Rate is "));
}

#define UDP_SNDBUF 8388608
#define UDP_IFACE "  - { name: out, backend: socket, address: udp://%s:%d,\n" \
	"      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },\n" \
	"      socket: { role: client, sndbuf: 8388608 } }\n"
#define NULL_IFACE "  - { name: null0, backend: dpdk, address: net_null0,\n" \
	"      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },\n" \
	"      dpdk: { memory: { num_mbufs: 32767, fallback: host } } }\n"

/* Paced below this rate, a wait is long enough to sleep in: the sending
 * thread runs SCHED_FIFO and spins only the last PACE_FIFO_SPIN_US of each
 * wait (send.sched_priority, send.spin_us); at and above it, the defaults
 * (normal scheduling, waits spun whole). */
#define PACE_FIFO_BELOW_PPS 500000
#define PACE_FIFO_PRIORITY 50
#define PACE_FIFO_SPIN_US 200

/* A sender's config: on DPDK net_null (dpdk) or a UDP socket to ip,
 * frame_size-byte generated frames, paced at rate (0: not).  Unpaced, the
 * generator replays frames built once (its fast mode; vfgx send advances
 * their sequences itself as they are handed out); paced, it builds each
 * frame. */
static int send_cfg(const struct opts *o, const char *path, bool dpdk, const char *ip,
		    double rate, uint32_t frame_size, double seconds)
{
	char text[1024], iface[512], sched[96] = "";

	if (dpdk)
		snprintf(iface, sizeof(iface), NULL_IFACE);
	else
		snprintf(iface, sizeof(iface), UDP_IFACE, ip, SP_PORT);
	if (rate > 0 && rate < PACE_FIFO_BELOW_PPS)
		snprintf(sched, sizeof(sched), "  sched_priority: %d\n  spin_us: %d\n",
			 PACE_FIFO_PRIORITY, PACE_FIFO_SPIN_US);
	snprintf(text, sizeof(text),
		 "log_level: warn\ninterfaces:\n%s"
		 "send:\n  rate_pps: %.0f\n  burst: 32\n  duration_s: %g\n%s"
		 "  generator: { packets: 0, packet_size: %u, flows: 4, replay: %s }\n",
		 iface, rate, seconds, sched, frame_size, rate > 0 ? "false" : "true");
	(void)o;
	return write_file(path, text);
}

struct series {
	double m[MAX_ROUNDS], r[MAX_ROUNDS];
	int n;
};

/* UDP, 64-byte payloads (106-byte frames), all to the same discarding far
 * end of the veth pair: vfgx send against the same-syscall loop (the
 * target), sockperf tp and trafgen (rows).  Rounds rotate the order. */
static void udp_rounds(const struct opts *o, FILE *f, struct series *udp)
{
	char cfg[128], buf[16384];

	snprintf(cfg, sizeof(cfg), "%s/udp.yaml", o->tmp);
	send_cfg(o, cfg, false, o->net.sink_ip, 0, 106, o->seconds);
	for (int r = 0; r < o->rounds; r++) {
		double v = -1, loop = -1, sp = -1, tg = -1;

		for (int k = 0; k < 4; k++) {
			switch (r % 2 ? 3 - k : k) {
			case 0:
				v = vfgx_send(o, cfg, buf, sizeof(buf)) ? -1 : jnum(buf, NULL, "pps");
				break;
			case 1:
				loop = send_ref_udp(o->core, o->net.sink_ip, SP_PORT, 64, 32,
						    UDP_SNDBUF, o->seconds);
				break;
			case 2:
				sp = sockperf_tp(o);
				break;
			default:
				tg = send_ref_trafgen(o->core, o->tmp, o->net.host_if,
						      o->net.sink_mac, o->net.host_mac,
						      o->net.host_ip, o->net.sink_ip, SP_PORT, 64,
						      o->seconds);
				break;
			}
		}
		if (v <= 0 || loop <= 0)
			break;
		udp->m[udp->n] = v / 1e6;
		udp->r[udp->n++] = loop / 1e6;
		fprintf(f, "| %d | UDP 64 B payload%s | vfgx send %.3f Mpps | same-syscall loop %.3f Mpps; sockperf tp %.3f Mpps; trafgen %.3f Mpps | %.3f (vs sockperf %.3f, vs trafgen %.3f) |\n",
			r + 1, r % 2 ? ", order reversed" : "", v / 1e6, loop / 1e6, sp / 1e6,
			tg / 1e6, v / loop, sp > 0 ? v / sp : 0, tg > 0 ? v / tg : 0);
		fflush(f);
	}
}

/* Pacing at 1 Mpps and 100 kpps, burst 32, over the UDP socket across the
 * veth pair: the receiver on the far end timestamps every datagram. */
static void pace_rounds(const struct opts *o, FILE *f, struct series pace[2],
			struct series gap[2])
{
	static const double rates[2] = { 1e6, 1e5 };
	char cfg[128], buf[16384];

	snprintf(cfg, sizeof(cfg), "%s/pace.yaml", o->tmp);
	for (int r = 0; r < o->rounds; r++) {
		for (int k = 0; k < 2; k++) {
			struct pace_rx_stats st;
			struct pace_rx rx;
			uint64_t drops = 0;
			double sent;
			char how[64] = "";
			int e;

			send_cfg(o, cfg, false, o->net.ns_ip, rates[k], 106, o->seconds);
			if (pace_rx_start(&rx, &o->net, SP_PORT, o->other))
				return;
			e = vfgx_send(o, cfg, buf, sizeof(buf));
			if (pace_rx_stop(&rx, rates[k], &st, &drops) || e) {
				fprintf(stderr, "vfgx bench send: pacing at %.0f pps: the receiver got %llu datagrams in %llu messages (too few)\n",
					rates[k], (unsigned long long)st.datagrams,
					(unsigned long long)st.messages);
				return;
			}
			sent = jnum(buf, NULL, "packets");
			/* the scheduling it got: asked below PACE_FIFO_BELOW_PPS */
			if (rates[k] < PACE_FIFO_BELOW_PPS && jnum(buf, "sched", "fifo") > 0)
				snprintf(how, sizeof(how), ", SCHED_FIFO %d, spin %d us",
					 PACE_FIFO_PRIORITY, PACE_FIFO_SPIN_US);
			else if (rates[k] < PACE_FIFO_BELOW_PPS)
				snprintf(how, sizeof(how), ", sched_priority refused");
			pace[k].m[pace[k].n++] = st.rate_error_pct < 0 ? -st.rate_error_pct :
									  st.rate_error_pct;
			gap[k].m[gap[k].n++] = st.gap_p99_ns / 1e3;
			fprintf(f, "| %d | paced %.0f pps, burst 32, 64 B UDP payload over veth%s | at the receiver: %.1f pps (error %+.4f%%); %llu of %.0f datagrams arrived in %llu messages, %llu messages dropped by its socket | burst gap error p50 %.1f us, p99 %.1f us, max %.1f us (vfgx send's own report: p99 %.1f us, rate error %+.4f%%) | |\n",
				r + 1, rates[k], how, st.rate_pps, st.rate_error_pct,
				(unsigned long long)st.datagrams, sent, (unsigned long long)st.messages,
				(unsigned long long)drops, st.gap_p50_ns / 1e3, st.gap_p99_ns / 1e3,
				st.gap_max_ns / 1e3, jnum(buf, "pacing", "gap_error_p99_ns") / 1e3,
				jnum(buf, "pacing", "rate_error_pct"));
			fflush(f);
		}
	}
}

#if VFGX_HAVE_DPDK
static void dpdk_rounds(const struct opts *o, FILE *f, struct series *s)
{
	char cfg[128], buf[16384];
	struct testpmd_run t = {
		.main_core = o->other, .core = o->core, .mem_args = "--no-huge -m 512",
		.seconds = o->seconds, .vdev = "net_null0", .skip = 1, .fwd = "txonly",
		.sample = "Tx-pps", .burst = 32, .nb_mbufs = 32768, .extra = "--txpkts=64",
		.who = "vfgx bench send",
	};

	snprintf(cfg, sizeof(cfg), "%s/null.yaml", o->tmp);
	send_cfg(o, cfg, true, NULL, 0, 64, o->seconds + 1);
	for (int r = 0; r < o->rounds; r++) {
		struct testpmd_rate tr = { 0 };
		int tries = 0;

		/* on a loaded machine testpmd can still be starting when its
		 * window opens (every sample 0 pps): that pair is run again,
		 * up to 3 times, and the row says so */
		do {
			if (vfgx_send(o, cfg, buf, sizeof(buf)) || testpmd_measure(&t, &tr))
				return;
		} while (tr.wall <= 0 && ++tries < 3);
		if (tr.wall <= 0)
			return;
		s->m[s->n] = jnum(buf, NULL, "pps") / 1e6;
		s->r[s->n] = tr.wall;
		fprintf(f, "| %d | DPDK net_null 64 B, burst 32%s | vfgx send %.2f Mpps | testpmd txonly %.2f Mpps | %.3f |\n",
			r + 1, tries ? " (pair run again: testpmd forwarded nothing in its window)" : "",
			s->m[s->n], tr.wall, s->m[s->n] / tr.wall);
		s->n++;
	}
}
#endif

/* --- capture to a tmpfs vs a plain write ------------------------------------ */

/* Write bytes in 1 MiB blocks to path, fsync'd: GB/s. */
static double plain_write(const char *path, uint64_t bytes)
{
	static char block[1 << 20];
	uint64_t t0, done = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -1;
	memset(block, 0x5a, sizeof(block));
	t0 = vfgx_now_ns();
	while (done < bytes) {
		ssize_t w = write(fd, block, sizeof(block));

		if (w <= 0)
			break;
		done += (uint64_t)w;
	}
	fsync(fd);
	close(fd);
	unlink(path);
	return (double)done / (double)(vfgx_now_ns() - t0);
}

static int run_cfg(const struct opts *o, const char *path, bool capture)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "log_level: warn\n"
		 "memory_regions:\n  - { name: rx, kind: host, buf_size: 2048, num_bufs: 8192 }\n"
		 "interfaces:\n"
		 "  - { name: lo0, backend: loopback, rx: { queues: [ { id: 0, memory_region: rx } ] },\n"
		 "      loopback: { packets: 0, packet_size: 1500, flows: 4, replay: true, replay_inline: true } }\n"
		 "pipeline:\n  device: cpu\n  workers: 1\n  duration_s: %g\n"
		 "  reorder: { enabled: true, window: 1024 }\n%s"
		 "expect: { min_packets: 1 }\n",
		 o->seconds,
		 capture ? "  capture: { path: /tmp/vfgx-bench-captmp/c.pcap }\n" : "");
	return write_file(path, text);
}

static int vfgx_run(const struct opts *o, const char *cfg, char *buf, size_t len)
{
	char cmd[PATH_MAX * 2 + 128];
	int st;

	snprintf(cmd, sizeof(cmd), "taskset -c %d,%d '%s' run -q --json '%s' 2>%s/run.err",
		 o->core, o->other, o->vfgx, cfg, o->tmp);
	st = run_cmd(cmd, buf, len);
	if (jnum(buf, "pipeline", "packets") <= 0) {
		fprintf(stderr, "vfgx bench send: vfgx run %s failed (status %d); its stderr: %s/run.err\n",
			cfg, st, o->tmp);
		return -1;
	}
	return 0;
}

static void capture_rounds(const struct opts *o, FILE *f, struct series *gb, struct series *rate)
{
	const char *dir = "/tmp/vfgx-bench-captmp";
	char with[128], without[128], buf[1 << 16];

	mkdir(dir, 0755);
	if (mount("none", dir, "tmpfs", 0, "size=8g")) {
		fprintf(stderr, "vfgx bench send: mount tmpfs on %s: %s (capture rows skipped)\n",
			dir, strerror(errno));
		return;
	}
	snprintf(with, sizeof(with), "%s/cap.yaml", o->tmp);
	snprintf(without, sizeof(without), "%s/nocap.yaml", o->tmp);
	run_cfg(o, with, true);
	run_cfg(o, without, false);
	for (int r = 0; r < o->rounds; r++) {
		double secs, cap_gbs, plain, pps_cap, pps_none, ring_full, written;

		if (vfgx_run(o, without, buf, sizeof(buf)))
			break;
		pps_none = jnum(buf, "pipeline", "mpps");
		if (vfgx_run(o, with, buf, sizeof(buf)))
			break;
		secs = jnum(buf, NULL, "seconds");
		pps_cap = jnum(buf, "pipeline", "mpps");
		cap_gbs = jnum(buf, "capture", "bytes") / secs / 1e9;
		ring_full = jnum(buf, "capture", "ring_full");
		written = jnum(buf, "capture", "written");
		unlink("/tmp/vfgx-bench-captmp/c.pcap");
		plain = plain_write("/tmp/vfgx-bench-captmp/plain", (uint64_t)(jnum(buf, "capture", "bytes")));
		gb->m[gb->n] = cap_gbs;
		gb->r[gb->n++] = plain;
		rate->m[rate->n] = pps_cap;
		rate->r[rate->n++] = pps_none;
		fprintf(f, "| %d | capture 1500 B to tmpfs | %.2f GB/s (%.0f written, %.0f ring_full), pipeline %.3f Mpps | plain write %.2f GB/s; pipeline without capture %.3f Mpps | %.3f / %.3f |\n",
			r + 1, cap_gbs, written, ring_full, pps_cap, plain, pps_none,
			cap_gbs / plain, pps_cap / pps_none);
	}
	umount(dir);
	rmdir(dir);
}

int vfgx_bench_send(int argc, char **argv)
{
	struct opts o = { .seconds = 2, .rounds = 5, .core = 0, .out = "bench/results" };
	struct series udp = { 0 }, pace[2] = { 0 }, gap[2] = { 0 }, dk = { 0 }, cgb = { 0 },
		      crate = { 0 };
	char path[PATH_MAX], *slash;
	ssize_t n;
	FILE *f;
	int c;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_bench_cli_send)) != -1) {
		switch (c) {
		case 'o':
			o.out = optarg;
			break;
		case 's':
			if (vfgx_flag_double("bench send", "--seconds", optarg, 1, 60, &o.seconds))
				return 2;
			break;
		case 'n':
			if (vfgx_flag_int("bench send", "--rounds", optarg, 3, MAX_ROUNDS, &o.rounds))
				return 2;
			break;
		case 'c':
			if (vfgx_flag_int("bench send", "--core", optarg, 0, 1023, &o.core))
				return 2;
			break;
		case 'O':
			if (strcmp(optarg, "dpdk") && strcmp(optarg, "udp") &&
			    strcmp(optarg, "pacing") && strcmp(optarg, "capture")) {
				fprintf(stderr, "vfgx bench send: --only takes dpdk, udp, pacing or capture\n");
				return 2;
			}
			o.only = optarg;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_bench_cli_send);
			return 0;
		default:
			return 2;
		}
	}
	if (bench_out_check(o.out, "send"))
		return 1;
	o.other = (o.core + 1) % (int)sysconf(_SC_NPROCESSORS_ONLN);
	n = readlink("/proc/self/exe", o.vfgx, sizeof(o.vfgx) - 8);
	if (n <= 0 || !(slash = strrchr((o.vfgx[n] = '\0', o.vfgx), '/'))) {
		fprintf(stderr, "vfgx bench send: cannot find its own directory\n");
		return 1;
	}
	strcpy(slash + 1, "vfgx");
	if (access(o.vfgx, X_OK)) {
		fprintf(stderr, "vfgx bench send: %s: %s (vfgx-bench runs the vfgx beside it)\n",
			o.vfgx, strerror(errno));
		return 1;
	}
	snprintf(o.tmp, sizeof(o.tmp), "/tmp/vfgx-bench-send-XXXXXX");
	if (!mkdtemp(o.tmp)) {
		perror("vfgx bench send: mkdtemp");
		return 1;
	}
	f = bench_results_open(o.out, "send", "vfgx send and capture files", path, sizeof(path));
	if (!f)
		return 1;
	fprintf(f, "- load (1 min) at start: %.2f\n- rounds: %d per comparison, %g s per side, interleaved; measured sender on CPU %d, sinks and testpmd's main lcore on CPU %d%s%s\n\n",
		bench_loadavg1(), o.rounds, o.seconds, o.core, o.other,
		o.only ? "\n- rows: only " : "", o.only ? o.only : "");
	fprintf(f, "What runs is what a user runs: the `vfgx send` and `vfgx run` binaries, pinned with taskset, read back from their `--json` reports.\n\n"
		   "- DPDK: `vfgx send` (generator in replay mode: one lap of frames built once) takes raw mbufs from its tx pool per burst, copies the lap's next frames straight into them with each copy's sequence and UDP checksum set for its lap, on the sending thread (no thread beside it), and calls rte_eth_tx_burst; testpmd txonly builds its 64-byte frames from a template into mbufs it allocates. Same lcore, burst 32, net_null, steady-state windows (testpmd: its Tx-pps lines; vfgx: its report, the send loop only).\n"
		   "- Network of the UDP and pacing rows: a veth pair into a network namespace of its own (made for the run; static neighbours, so no ARP in a measured window). UDP rows: no RPS, so the far end's discard of each frame (a check of its destination MAC in softirq) runs on the sending CPU, for every sender alike. Pacing rows: RPS on the far end to the receiver's CPU, so the receive side's kernel work runs there, not on the measured sender's CPU.\n"
		   "- UDP (target: vfgx send / same-syscall loop, per round): every sender runs alone for its turn on the measured CPU, one thread, 64-byte payloads, to the same address across the veth pair, a neighbour entry whose MAC no interface owns: the far end discards every frame on arrival (not for its MAC), so no receiver's speed or socket buffer holds any sender back (a veth skb stays charged to its sender's socket until freed, so a slow sink socket would set the senders' rates). The veth keeps its default offloads: a GSO super-datagram crosses it whole, as it reaches a NIC with UDP segmentation offload. `vfgx send` (generator in replay mode) copies each frame's payload into the port's buffers and the socket port hands a burst of 32 to one sendmmsg() as one UDP GSO super-datagram (UDP_SEGMENT 64, copied into its GSO buffer), connected socket, SO_SNDBUF 8 MiB. The same-syscall loop (bench/send_ref.c) is a plain C loop doing exactly that: per burst, each of the 32 datagrams built into its own buffer (sequence set) and copied into a GSO buffer, one sendmmsg() of one message with UDP_SEGMENT 64, MSG_DONTWAIT, on a connected socket with the same SO_SNDBUF; so the ratio is the library's cost over the bare system calls. Rows, not targets: `sockperf tp -m 64` (one sendto() per datagram, no GSO) and netsniff-ng's trafgen (`trafgen -o HOST_VETH -P 1 -Q`, its default TX ring: PF_PACKET, one complete Ethernet/IPv4/UDP frame per ring slot, no GSO: every frame crosses the veth on its own), whose frames carry the same 64-byte payload to the same address. Rates are datagrams the sender handed to the kernel per second of its run (vfgx: its report; loop: its count; sockperf: its Message Rate; trafgen: its packets outgoing over its run time). Odd rounds run the four in reverse order.\n"
		   "- Pacing (targets: rate error and p99 burst gap error, measured at a receiver): `vfgx send` paced at 1 Mpps and 100 kpps, burst 32, 64-byte UDP payloads over the same veth pair; paced runs build each frame (no rewriting thread). A receiver (bench/pace_rx.c) in the far namespace, on the other CPU, one thread, recvmmsg() of 16 with SO_TIMESTAMPNS and UDP GRO on: the kernel stamps each packet as it crosses the pair, and a burst of 32 sent as one GSO super-datagram stays one message with one stamp (a burst the receiver's socket drops is dropped whole and counted). Per message k (its stamp t(k), its datagrams n(k)): rate = (datagrams of all messages but the last) / (t(last) - t(first)); a burst gap error is |t(k+1) - t(k) - n(k) / rate asked|, p50/p99/max over every gap of the run (the sender's warm-up included). A sender that falls behind and catches up shows in the gaps, whatever its own schedule says; its own report is listed beside. At 1 Mpps (32 us between bursts, too short to sleep in) with the defaults: each wait spun whole (send.spin_us: 1000) under normal scheduling. At 100 kpps (320 us) the sending thread runs SCHED_FIFO (send.sched_priority: 50) and spins the last 200 us of each wait, sleeping before (send.spin_us: 200); the row says so, or that the priority was refused. On this 2-core virtual machine the gaps are also set by when the vCPU runs: its 250 Hz timer tick and the hypervisor take it away (docs/send.md).\n"
		   "- Capture: `vfgx run` with a 1500 B loopback replay source, one worker, `pipeline.capture` to a tmpfs mounted for the bench (8 MiB rings, the default), against `write(2)` of the same bytes in 1 MiB blocks to the same tmpfs; the capture rate is the bytes the writer wrote over the run, the ring_full column what it could not keep up with. The worker records each packet it keeps by reference (pcap's record header and where the frame lies; a packet released before it is written goes back to the port once it is, a sixteenth of the pool held at most, a burst past that copied into the ring); the writer hands header and frame to writev(2) straight from the packet's buffer. The replay source's frames are advanced by the worker as it receives them (loopback.replay_inline: true, on both sides), so the run's threads on the 2 CPUs are the worker and, with capture, the writer (with the rewriting thread beside them, 9 pairs of runs before this one: the capture wrote 1.81 GB/s on average, 2.00 without it; docs/send.md).\n\n");
	fprintf(f, "| round | case | vfgx | reference | ratio |\n| --- | --- | --- | --- | --- |\n");
#if VFGX_HAVE_DPDK
	if (want_rows(&o, "dpdk"))
		dpdk_rounds(&o, f, &dk);
#endif
	if ((want_rows(&o, "udp") || want_rows(&o, "pacing")) &&
	    pace_net_up(&o.net, -1))
		snprintf(o.net_why, sizeof(o.net_why),
			 "not measured: the veth pair could not be made (needs root and ip netns)");
	if (want_rows(&o, "udp") && o.net.up)
		udp_rounds(&o, f, &udp);
	if (want_rows(&o, "pacing") && o.net.up && !pace_net_rps(&o.net, o.other))
		pace_rounds(&o, f, pace, gap);
	pace_net_down(&o.net);
	if (want_rows(&o, "capture"))
		capture_rounds(&o, f, &cgb, &crate);
	fprintf(f, "\n%s\n\n", bench_ci_rule);
	{
		struct bench_target_rounds t[] = {
			{ "send_dpdk_null_vs_testpmd_txonly", dk.m, dk.r, 0, dk.n, 0.95, true, true },
			{ "send_udp_64B_vs_same_syscall_loop", udp.m, udp.r, 0, udp.n, 0.9, true, true },
			{ "send_pacing_error_pct_1Mpps", pace[0].m, NULL, 0, pace[0].n, 1, false, false },
			{ "send_pacing_error_pct_100kpps", pace[1].m, NULL, 0, pace[1].n, 1, false, false },
			{ "send_pacing_gap_p99_us_1Mpps", gap[0].m, NULL, 0, gap[0].n, 10, false, false },
			{ "send_pacing_gap_p99_us_100kpps", gap[1].m, NULL, 0, gap[1].n, 10, false, false },
			{ "capture_gbps_vs_tmpfs_write", cgb.m, cgb.r, 0, cgb.n, 0.8, true, true },
			{ "capture_pipeline_rate_vs_none", crate.m, crate.r, 0, crate.n, 0.95, true, true },
		};

		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			if (t[i].n == 0) {
				bench_target_unmeasured(f, t[i].name, t[i].goal,
							o.net_why[0] && strncmp(t[i].name, "capture", 7) &&
									strncmp(t[i].name, "send_dpdk", 9) ?
								o.net_why :
								"not measured in this run: see the lines above");
				continue;
			}
			bench_target_rounds(f, &t[i]);
		}
	}
	fclose(f);
	printf("vfgx bench send: wrote %s\n", path);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", o.tmp);
		if (system(cmd))
			fprintf(stderr, "vfgx bench send: could not remove %s\n", o.tmp);
	}
	return 0;
}
