/* dpdk.c - `vfgx bench dpdk`: receive Mpps of vfgx's DPDK port (rx burst +
 * bulk release through the port API) against a DPDK loop doing the same
 * work and against dpdk-testpmd --forward-mode=rxonly, same lcore, burst
 * and pool, steady-state windows, in the same run: on net_null (the
 * abstraction's overhead), then over net_af_xdp on a veth pair fed by a
 * kernel UDP sender (needs root). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <vfgx/dpdk.h>
#include <vfgx/vfgx.h>

#include "cliopt.h"
#include "commands.h"
#include "results.h"
#include "testpmd.h"

#define MAX_ROUNDS 9
#define BURST 32
#define NB_MBUFS 32768
#define NS "dk"
#define VETH_NET "73"

struct bench_opts {
	double seconds;
	int rounds;
	int core, main_core;
	bool veth;
	bool huge;
	char mem_args[128];   /* EAL memory arguments, same for both sides */
};

/* Receive rate by the wall clock, and per second of CPU time the polling
 * thread got: on a shared machine the second is the one that compares. */
struct rate {
	double wall;
	double cpu;
	uint64_t packets;
};

static bool hugepages_usable(void)
{
	FILE *f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "r");
	unsigned long n = 0;
	char line[512];
	bool mounted = false;

	if (f) {
		if (fscanf(f, "%lu", &n) != 1)
			n = 0;
		fclose(f);
	}
	f = fopen("/proc/mounts", "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, " hugetlbfs "))
			mounted = true;
	if (f)
		fclose(f);
	return n >= 128 && mounted;
}

static int pin(int core)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(core, &s);
	return sched_setaffinity(0, sizeof(s), &s) ? -errno : 0;
}

/* vfgx: open the port from YAML, poll rx + release for `seconds`. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t raw_sink;

/* The same receive with DPDK calls only, on the port vfgx opened (same
 * pool, queue and lcore), each mbuf's data pointer and length read (what
 * any receiver that looks at its packets does; testpmd rxonly never
 * touches them), then:
 *   RAW_PUT_BULK   rte_mempool_put_bulk of the burst to its pool: what
 *                  vfgx does for single-segment, direct, refcnt-1 mbufs of
 *                  the queue's pool (net_null's are); the reference loop
 *   RAW_FREE_BULK  rte_pktmbuf_free_bulk (its per-mbuf checks)
 * The window starts after a warm-up, as vfgx's. */
enum raw_mode { RAW_PUT_BULK, RAW_FREE_BULK, NB_RAW };

static void raw_rx(uint16_t pid, enum raw_mode mode, double seconds, struct rate *res)
{
	struct rte_mbuf *mb[BURST];
	uint64_t total = 0, sink = 0, t0, end, t1, c0;

	for (int i = 0; i < 100000; i++) {
		uint16_t n = rte_eth_rx_burst(pid, 0, mb, BURST);

		rte_pktmbuf_free_bulk(mb, n);
	}
	t0 = vfgx_now_ns();
	c0 = thread_cpu_ns();
	end = t0 + (uint64_t)(seconds * 1e9);
	do {
		for (int i = 0; i < 64; i++) {
			uint16_t n = rte_eth_rx_burst(pid, 0, mb, BURST);

			for (uint16_t k = 0; k < n; k++)
				sink += (uintptr_t)rte_pktmbuf_mtod(mb[k], uint8_t *) +
					mb[k]->data_len;
			total += n;
			if (mode == RAW_PUT_BULK && n)
				rte_mempool_put_bulk(mb[0]->pool, (void **)mb, n);
			else
				rte_pktmbuf_free_bulk(mb, n);
		}
		t1 = vfgx_now_ns();
	} while (t1 < end);
	raw_sink = sink;
	res->wall = (double)total / (double)(t1 - t0) * 1e3;
	res->cpu = (double)total / (double)(thread_cpu_ns() - c0) * 1e3;
	res->packets = total;
}

static void vfgx_loop(vfgx_port *port, double seconds, struct rate *res)
{
	struct vfgx_pkt pk[BURST];
	uint64_t total = 0, t0, end, t1, c0;

	/* warm up: pool caches, page faults */
	for (int i = 0; i < 100000; i++) {
		int n = vfgx_port_rx_burst(port, 0, pk, BURST);

		if (n > 0)
			vfgx_port_release(port, 0, pk, (uint16_t)n);
	}
	t0 = vfgx_now_ns();
	c0 = thread_cpu_ns();
	end = t0 + (uint64_t)(seconds * 1e9);
	do {
		/* check the clock once per 64 bursts */
		for (int i = 0; i < 64; i++) {
			int n = vfgx_port_rx_burst(port, 0, pk, BURST);

			if (n > 0) {
				total += (uint64_t)n;
				vfgx_port_release(port, 0, pk, (uint16_t)n);
			}
		}
		t1 = vfgx_now_ns();
	} while (t1 < end);
	res->wall = (double)total / (double)(t1 - t0) * 1e3;
	res->cpu = (double)total / (double)(thread_cpu_ns() - c0) * 1e3;
	res->packets = total;
}

/* raw: NULL, or NB_RAW rates of the raw DPDK loops on the same port;
 * raw_first: the reference loops before vfgx's (rounds alternate). */
static int vfgx_rx(vfgx_ctx *ctx, const struct bench_opts *o, const char *addr,
		   bool raw_first, struct rate *res, struct rate *raw)
{
	struct vfgx_dpdk_opts dk;
	struct vfgx_port_conf pc = {
		.argsz = sizeof(pc), .name = "bench", .backend = "dpdk", .address = addr,
		.nb_rx_queues = 1, .nb_tx_queues = 1, .burst = BURST, .backend_opts = &dk.hdr,
	};
	const char *eal[16] = { "-l", NULL, "--no-pci" };
	char lcore[16], mem[128], *save = NULL;
	vfgx_port *port;
	int ret, ne = 3;

	snprintf(lcore, sizeof(lcore), "%d", o->core);
	eal[1] = lcore;
	snprintf(mem, sizeof(mem), "%s", o->mem_args);
	for (char *a = strtok_r(mem, " ", &save); a && ne < 16; a = strtok_r(NULL, " ", &save))
		eal[ne++] = a;
	vfgx_dpdk_opts_default(&dk);
	dk.eal_args = eal;
	dk.nb_eal_args = (uint32_t)ne;
	dk.num_mbufs = NB_MBUFS - 1;
	dk.cache = 250;
	ret = vfgx_port_open(ctx, &pc, &port);
	if (ret) {
		fprintf(stderr, "vfgx bench dpdk: %s\n", vfgx_last_error(ctx));
		return ret;
	}
	if (raw) {
		uint16_t pid;

		if (rte_eth_dev_get_port_by_name(addr, &pid) != 0) {
			fprintf(stderr, "vfgx bench dpdk: no DPDK port %s after open\n", addr);
			vfgx_port_close(port);
			return -ENODEV;
		}
		if (!raw_first)
			vfgx_loop(port, o->seconds, res);
		for (int m = 0; m < NB_RAW; m++)
			raw_rx(pid, (enum raw_mode)m, o->seconds, &raw[m]);
		if (raw_first)
			vfgx_loop(port, o->seconds, res);
	} else {
		vfgx_loop(port, o->seconds, res);
	}
	vfgx_port_close(port);
	return 0;
}

/* dpdk-testpmd rxonly on vdev, in the bench's window (bench/testpmd.c). */
static int testpmd_rx(const struct bench_opts *o, const char *vdev,
		      const char *netns, int skip, struct rate *res)
{
	struct testpmd_run t = {
		.main_core = o->main_core, .core = o->core, .mem_args = o->mem_args,
		.seconds = o->seconds, .vdev = vdev, .netns = netns, .skip = skip,
		.fwd = "rxonly", .sample = "Rx-pps", .burst = BURST, .nb_mbufs = NB_MBUFS,
		.who = "vfgx bench dpdk",
	};
	struct testpmd_rate r;
	int ret = testpmd_measure(&t, &r);

	res->wall = r.wall;
	res->cpu = r.cpu;
	res->packets = r.packets;
	return ret;
}

static int enter_ns(const char *path)
{
	int fd = open(path, O_RDONLY), ret;

	if (fd < 0)
		return -errno;
	ret = setns(fd, CLONE_NEWNET) ? -errno : 0;
	close(fd);
	return ret;
}

/* Kernel UDP flood from NS-b to NS-a's address until killed; writes the
 * number of datagrams sent to the pipe on SIGTERM. */
static volatile sig_atomic_t sender_stop;

static void on_term(int sig)
{
	(void)sig;
	sender_stop = 1;
}

static pid_t start_sender(int core, int report_fd, double delay_s)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(5000) };
	struct mmsghdr msgs[64];
	struct iovec iov;
	uint8_t payload[64] = { 0 };
	uint64_t sent = 0, t0, rep[2];
	int fd;

	signal(SIGTERM, on_term);
	pin(core);
	if (enter_ns("/var/run/netns/" NS "-b"))
		_exit(1);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	inet_pton(AF_INET, "198.18." VETH_NET ".1", &to.sin_addr);
	iov.iov_base = payload;
	iov.iov_len = sizeof(payload);
	for (int i = 0; i < 64; i++) {
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_name = &to;
		msgs[i].msg_hdr.msg_namelen = sizeof(to);
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	/* the receiver starts up first */
	usleep((useconds_t)(delay_s * 1e6));
	t0 = vfgx_now_ns();
	while (!sender_stop) {
		int n = sendmmsg(fd, msgs, 64, 0);

		if (n > 0)
			sent += (uint64_t)n;
	}
	rep[0] = sent;
	rep[1] = vfgx_now_ns() - t0;
	if (write(report_fd, rep, sizeof(rep)) != sizeof(rep))
		_exit(1);
	_exit(0);
}

/* Mpps the sender offered while it flooded. */
static double stop_sender(pid_t pid, int report_fd)
{
	uint64_t rep[2] = { 0, 0 };

	kill(pid, SIGTERM);
	if (read(report_fd, rep, sizeof(rep)) != sizeof(rep) || !rep[1])
		rep[0] = 0, rep[1] = 1;
	waitpid(pid, NULL, 0);
	return (double)rep[0] / (double)rep[1] * 1e3;
}

struct veth_result {
	struct rate vfgx, testpmd;  /* received */
	double sent_v, sent_t;      /* Mpps the sender offered in each phase */
	bool ok;
};

static void veth_bench(vfgx_ctx *ctx, const struct bench_opts *o,
		       struct veth_result *r)
{
	int self_ns = open("/proc/self/ns/net", O_RDONLY);
	int rep[2];
	pid_t snd;

	memset(r, 0, sizeof(*r));
	if (self_ns < 0 || pipe(rep) ||
	    system("VETH_NET=" VETH_NET " scripts/netns-veth.sh up " NS " >/dev/null && "
		   "ip -n " NS "-b neigh replace 198.18." VETH_NET ".1 lladdr "
		   "$(ip -n " NS "-a -o link show " NS "-a0 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2) "
		   "dev " NS "-b0 nud permanent") != 0) {
		fprintf(stderr, "vfgx bench dpdk: veth part skipped: cannot set up namespaces " NS "-a/" NS "-b (needs root, iproute2, run from the source tree)\n");
		return;
	}
	/* testpmd first: net_af_xdp in DPDK 22.11 keeps its socket bound
	 * until the process that closed the port exits (see docs) */
	snd = start_sender(o->main_core, rep[1], 3);
	r->ok = testpmd_rx(o, "net_af_xdp0,iface=" NS "-a0", NS "-a", 5, &r->testpmd) == 0;
	r->sent_t = stop_sender(snd, rep[0]);
	/* vfgx in NS-a (the EAL started for net_null is reused) */
	if (r->ok && enter_ns("/var/run/netns/" NS "-a") == 0) {
		int tries = 0;

		snd = start_sender(o->main_core, rep[1], 0);
		/* the kernel frees testpmd's AF_XDP socket some time after
		 * the process exits (the XSKMAP of its XDP program holds it):
		 * binding queue 0 meanwhile fails with EBUSY, so retry */
		while (vfgx_rx(ctx, o, "net_af_xdp0,iface=" NS "-a0", false, &r->vfgx, NULL)) {
			if (++tries == 10) {
				r->ok = false;
				break;
			}
			fprintf(stderr, "vfgx bench dpdk: net_af_xdp port busy (testpmd's socket not yet released), retrying in 0.5 s\n");
			usleep(500000);
		}
		r->sent_v = stop_sender(snd, rep[0]);
		setns(self_ns, CLONE_NEWNET);
	}
	if (system("VETH_NET=" VETH_NET " scripts/netns-veth.sh down " NS) != 0)
		fprintf(stderr, "vfgx bench dpdk: netns-veth.sh down failed\n");
	close(self_ns);
	close(rep[0]);
	close(rep[1]);
}

static int parse_args(int argc, char **argv, struct bench_opts *o,
		      const char **out)
{
	int c;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_bench_cli_dpdk)) != -1) {
		switch (c) {
		case 'o':
			*out = optarg;
			break;
		case 's':
			/* testpmd's rate is the mean of its samples, one a
			 * second: a window holds one from 1 s on */
			if (vfgx_flag_double("bench dpdk", "--seconds", optarg, 1, 60, &o->seconds))
				return 2;
			break;
		case 'r':
			if (vfgx_flag_int("bench dpdk", "--rounds", optarg, 1, MAX_ROUNDS, &o->rounds))
				return 2;
			break;
		case 'c':
			if (vfgx_flag_int("bench dpdk", "--core", optarg, 0, 1023, &o->core))
				return 2;
			break;
		case 'n':
			o->veth = false;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_bench_cli_dpdk);
			return 1; /* the caller exits 0 */
		default:
			return 2;
		}
	}
	return 0;
}

static const struct cli_opt dpdk_opts[] = {
	{ "out", 'o', "DIR", "write dpdk.md and dpdk.svg into DIR (default bench/results)" },
	{ "seconds", 's', "S", "seconds per round, 1..60 (default 3)" },
	{ "rounds", 'r', "N", "rounds" },
	{ "core", 'c', "C", "the polling core" },
	{ "no-veth", 'n', NULL, "skip the veth (net_af_packet) measurement" },
	{ "json", 'j', NULL, "the results file as one JSON document on stdout (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_bench_cli_dpdk = {
	.name = "bench dpdk",
	.summary = "DPDK backend: vfgx port rx vs dpdk-testpmd rxonly",
	.opts = dpdk_opts,
};

int vfgx_bench_dpdk(int argc, char **argv)
{
	struct bench_opts o = { .seconds = 3, .rounds = 3, .core = 1, .veth = true };
	struct rate v[MAX_ROUNDS], t[MAX_ROUNDS], raw[MAX_ROUNDS][NB_RAW];
	double vc[MAX_ROUNDS], tc[MAX_ROUNDS], vw[MAX_ROUNDS], tw[MAX_ROUNDS];
	double pc[MAX_ROUNDS], pw[MAX_ROUNDS], fc[MAX_ROUNDS];
	char s1[64], s2[64], s3[64], s4[64], s5[64], s6[64], s7[64];
	struct veth_result vr = { 0 };
	const char *out = "bench/results";
	char path[512];
	vfgx_ctx *ctx;
	FILE *f;
	int ret;

	ret = parse_args(argc, argv, &o, &out);
	if (ret)
		return ret == 1 ? 0 : ret;
	if (bench_out_check(out, "dpdk"))
		return 1;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || o.core < 0 ||
	    o.core >= sysconf(_SC_NPROCESSORS_ONLN)) {
		fprintf(stderr, "vfgx bench dpdk: needs 2 cores and --core within them (testpmd's main lcore takes another)\n");
		return 2;
	}
	o.main_core = o.core == 0 ? 1 : 0;
	o.huge = hugepages_usable();
	if (o.huge) {
		snprintf(o.mem_args, sizeof(o.mem_args), "--in-memory");
	} else {
		snprintf(o.mem_args, sizeof(o.mem_args), "--no-huge -m 512 --no-shconf");
	}
	if (geteuid() != 0)
		fprintf(stderr, "vfgx bench dpdk: not root: EAL may fail and the veth part is skipped\n");
	if (vfgx_ctx_create(&ctx))
		return 1;
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	if (pin(o.core)) {
		fprintf(stderr, "vfgx bench dpdk: cannot pin to core %d\n", o.core);
		return 1;
	}
	/* alternate the order every round so machine noise hits all alike */
	for (int r = 0; r < o.rounds; r++) {
		bool ref_first = r % 2;

		if ((ref_first && testpmd_rx(&o, "net_null0", NULL, 2, &t[r])) ||
		    vfgx_rx(ctx, &o, "net_null0", ref_first, &v[r], raw[r]) ||
		    (!ref_first && testpmd_rx(&o, "net_null0", NULL, 2, &t[r]))) {
			vfgx_ctx_destroy(ctx);
			return 1;
		}
		vc[r] = v[r].cpu;
		vw[r] = v[r].wall;
		pc[r] = raw[r][RAW_PUT_BULK].cpu;
		pw[r] = raw[r][RAW_PUT_BULK].wall;
		fc[r] = raw[r][RAW_FREE_BULK].cpu;
		tc[r] = t[r].cpu;
		tw[r] = t[r].wall;
		printf("round %d: net_null rx, burst %d, lcore %d, Mpps per CPU-s: vfgx %.2f, reference loop %.2f (ratio %.3f), testpmd %.2f (%.3f); wall: vfgx %.2f, reference loop %.2f, testpmd %.2f\n",
		       r + 1, BURST, o.core, vc[r], pc[r], vc[r] / pc[r], tc[r], vc[r] / tc[r],
		       vw[r], pw[r], tw[r]);
	}
	if (o.veth && geteuid() == 0) {
		veth_bench(ctx, &o, &vr);
		if (vr.ok)
			printf("net_af_xdp on veth: vfgx %.3f Mpps (sender offered %.3f), testpmd %.3f Mpps (sender offered %.3f)\n",
			       vr.vfgx.wall, vr.sent_v, vr.testpmd.wall, vr.sent_t);
	}
	vfgx_ctx_destroy(ctx);
	f = bench_results_open(out, "dpdk", "DPDK backend: vfgx port rx vs dpdk-testpmd rxonly",
			       path, sizeof(path));
	if (!f)
		return 1;
	fprintf(f, "- command: vfgx bench dpdk --seconds %g --rounds %d --core %d%s\n",
		o.seconds, o.rounds, o.core, o.veth ? "" : " --no-veth");
	fprintf(f, "- DPDK: %s; EAL memory: %s (both sides)\n", "22.11 (Debian libdpdk)", o.mem_args);
	fprintf(f, "- method: net_null0 (64 B frames, no copy), one rx queue, burst %d, %d mbufs with a 250-mbuf cache, receive loop pinned to lcore %d for every side. Each side is timed over a steady-state window of %g s that starts after its warm-up (vfgx and the reference loop: 100000 bursts; testpmd: its start-up plus 2 s of forwarding) and ends before any teardown.\n",
		BURST, NB_MBUFS, o.core, o.seconds);
	fprintf(f, "- vfgx: vfgx_port_rx_burst + vfgx_port_release through the public port API (the release puts the burst back with one rte_mempool_put_bulk when rx saw every mbuf single-segment, direct, with reference count 1 and from the queue's pool, the conditions of rte_mbuf_raw_free; rte_pktmbuf_free_bulk otherwise).\n");
	fprintf(f, "- reference loop (the target's reference): in the same process, on the port vfgx opened (same pool, queue, lcore), DPDK calls only, doing what vfgx does: rte_eth_rx_burst, read each mbuf's data pointer and data_len, rte_mempool_put_bulk of the burst to its pool. Also listed: the same loop with rte_pktmbuf_free_bulk (its per-mbuf checks) instead of the put.\n");
	fprintf(f, "- dpdk-testpmd -l %d,%d --forward-mode=rxonly, same burst, pool and cache (22.11's rxonly frees each mbuf with rte_pktmbuf_free and never reads data or len: different work, listed as the tool users compare with). Its window: wall rate = mean of its Rx-pps samples (--stats-period=1) printed inside the window; CPU rate = that rate over the forwarding thread's share of a CPU in the same window (the testpmd thread that ran most in the window, by the /proc schedstat run time of each of its threads at both ends), so its start-up and teardown are outside.\n",
		o.main_core, o.core);
	fprintf(f, "- metric: Mpps per CPU-second of the polling thread (vfgx and the reference loop: CLOCK_THREAD_CPUTIME_ID over the window) and Mpps by the wall clock; targets on both, as paired per-round ratios. Rounds alternate the order (odd rounds vfgx first). Wall-clock rates move with whatever else runs on this machine (load average below), CPU-time rates much less; ratios against references measured in the same round are what count.\n");
	{
		double la[3] = { 0, 0, 0 };

		if (getloadavg(la, 3) == 3)
			fprintf(f, "- load average at the end of the net_null rounds: %.2f %.2f %.2f (%ld online cores)\n",
				la[0], la[1], la[2], sysconf(_SC_NPROCESSORS_ONLN));
	}
	fprintf(f, "\n| round | vfgx Mpps/CPU-s | reference loop Mpps/CPU-s | ratio | vfgx wall Mpps | reference loop wall Mpps | wall ratio | testpmd Mpps/CPU-s | testpmd wall Mpps | loop with free_bulk Mpps/CPU-s |\n|---|---|---|---|---|---|---|---|---|---|\n");
	for (int r = 0; r < o.rounds; r++)
		fprintf(f, "| %d | %.2f | %.2f | %.3f | %.2f | %.2f | %.3f | %.2f | %.2f | %.2f |\n", r + 1,
			vc[r], pc[r], vc[r] / pc[r], vw[r], pw[r], vw[r] / pw[r], tc[r], tw[r], fc[r]);
	{
		double rcv[MAX_ROUNDS], rwv[MAX_ROUNDS];

		for (int r = 0; r < o.rounds; r++) {
			rcv[r] = vc[r] / pc[r];
			rwv[r] = vw[r] / pw[r];
		}
		fprintf(f, "\nmedian (min..max) over rounds: vfgx %s Mpps/CPU-s, reference loop %s, ratio %s; wall: vfgx %s, reference loop %s, ratio %s; testpmd %s Mpps/CPU-s.\n\n",
			bench_fmt_spread(s1, sizeof(s1), "%.2f", vc, o.rounds),
			bench_fmt_spread(s2, sizeof(s2), "%.2f", pc, o.rounds),
			bench_fmt_spread(s3, sizeof(s3), "%.3f", rcv, o.rounds),
			bench_fmt_spread(s4, sizeof(s4), "%.2f", vw, o.rounds),
			bench_fmt_spread(s5, sizeof(s5), "%.2f", pw, o.rounds),
			bench_fmt_spread(s6, sizeof(s6), "%.3f", rwv, o.rounds),
			bench_fmt_spread(s7, sizeof(s7), "%.2f", tc, o.rounds));
	}
	if (vr.ok) {
		fprintf(f, "net_af_xdp on a veth pair (namespaces " NS "-a/" NS "-b), 64 B UDP payloads from a kernel sendmmsg sender pinned to core %d, receiver on lcore %d, %g s each:\n\n",
			o.main_core, o.core, o.seconds);
		fprintf(f, "| receiver | received Mpps | sender offered Mpps |\n|---|---|---|\n");
		fprintf(f, "| vfgx | %.3f | %.3f |\n| dpdk-testpmd rxonly | %.3f | %.3f |\n\n",
			vr.vfgx.wall, vr.sent_v, vr.testpmd.wall, vr.sent_t);
		fprintf(f, "On veth both receivers get what the kernel sender and veth deliver on a machine with %ld cores; this row compares delivery, not the port abstraction's cost (net_null above does).\n\n",
			sysconf(_SC_NPROCESSORS_ONLN));
	} else {
		fprintf(f, "net_af_xdp on veth: not measured in this run (--no-veth, not root, or namespace set-up failed).\n\n");
	}
	fprintf(f, "- rule: %s\n\n", bench_ci_rule);
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "dpdk_net_null_rx_cpu_vs_reference_loop", .measured = vc, .reference = pc,
		.n = o.rounds, .goal = 0.95, .goal_on_ratio = true, .higher_better = true });
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "dpdk_net_null_rx_wall_vs_reference_loop", .measured = vw, .reference = pw,
		.n = o.rounds, .goal = 0.95, .goal_on_ratio = true, .higher_better = true });
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "dpdk_net_null_rx_mpps_vs_testpmd", .measured = vc, .reference = tc,
		.n = o.rounds, .goal = 0.95, .goal_on_ratio = true, .higher_better = true });
	bench_target_rounds(f, &(struct bench_target_rounds){
		.name = "dpdk_net_null_rx_wall_vs_testpmd", .measured = vw, .reference = tw,
		.n = o.rounds, .goal = 0.95, .goal_on_ratio = true, .higher_better = true });
	fclose(f);
	printf("wrote %s\n", path);
	return 0;
}
