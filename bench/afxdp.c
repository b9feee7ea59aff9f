/* afxdp.c - `vfgx bench afxdp`: receive rate of an AF_XDP port over a
 * multi-queue veth for 64, 1024 and 1500-byte frames, fed by several pinned
 * UDP sender processes spread over the tx queues, against an SO_REUSEPORT
 * group of kernel UDP sockets (one per queue) polled with recvmmsg, one
 * such socket, and dpdk-testpmd (net_af_xdp, rxonly) on the same veth in
 * the same rounds, each receiver one thread on one CPU.  Writes
 * bench/results/afxdp.md. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/sock_diag.h>

#include <vfgx/afxdp.h>
#include <vfgx/stages.h>
#include <vfgx/vfgx.h>

#include "cliopt.h"
#include "commands.h"
#include "results.h"

#define NS "xdb"
#define NET "72"
#define IP_A "198.18." NET ".1"
#define IP_B "198.18." NET ".2"
#define UDP_PORT 5000
#define MAX_SENDERS 64
#define MAX_QUEUES 64 /* VFGX_MAX_QUEUES */
#define STR_(x) #x
#define STR(x) STR_(x)
#define HDRS 42 /* Ethernet + IPv4 + UDP */
#define MAX_ROUNDS 15
enum { RX_AFXDP, RX_RECVMMSG, RX_TESTPMD, RX_REUSEPORT };

static const unsigned sizes[] = { 64, 1024, 1500 };
#define NB_SIZES (sizeof(sizes) / sizeof(sizes[0]))

struct result {
	double sent_mpps[4];  /* what the senders managed, per receiver */
	double mpps[4];       /* afxdp, recvmmsg, testpmd, reuseport group */
	bool ok[4];
	uint64_t udp_drops[2]; /* kernel drops: one socket, reuseport group */
	uint64_t afxdp_drops; /* kernel: rx ring full + no fill frame */
	uint64_t q_sock[MAX_QUEUES]; /* afxdp window: packets per socket */
	uint64_t q_xdp[MAX_QUEUES];  /* afxdp window: veth rx_queue_N_xdp_packets */
	bool have_q_xdp;
	/* --touch: the sum of the last byte of every frame read in the run,
	 * per receiver; written to the results so the reads are not dead
	 * code the compiler may drop (issue #41) */
	uint64_t touched[4];
};

static struct {
	double seconds;
	int senders;
	int queues;
	bool xps_ok;
	bool touch;          /* --touch: read each received frame's last byte */
	int rounds;
	const char *out;
	const char *testpmd;
	int fd_a, fd_b;
	int rx_cpu;
	int ncpu;
	char mode[40];
	_Atomic uint64_t *sent; /* shared with the sender processes */
	pid_t pids[MAX_SENDERS];
} B;

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

static int sh(const char *cmd)
{
	int rc = system(cmd);

	return WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
}

/* Sender i runs on its own CPU, never the receive CPU (the last one), and
 * sends on tx queue i % queues through XPS. */
static int sender_cpu(int id)
{
	return B.ncpu > 1 ? id % (B.ncpu - 1) : 0;
}

/* XPS on the sending veth end: tx queue q is picked by the CPUs of the
 * senders i with i % queues == q, so each pinned sender's datagrams go
 * through its own queue pair and the receiving end's rx queue of the same
 * number (veth keeps the queue number).  Masks in 32-bit groups. */
static int xps_setup(void)
{
	for (int q = 0; q < B.queues; q++) {
		uint32_t m[(CPU_SETSIZE + 31) / 32] = { 0 };
		char cmd[512], mask[256] = "";
		int top = 0, len = 0;

		for (int i = q; i < B.senders; i += B.queues) {
			int c = sender_cpu(i);

			m[c / 32] |= 1u << (c % 32);
			if (c / 32 > top)
				top = c / 32;
		}
		for (int g = top; g >= 0; g--)
			len += snprintf(mask + len, sizeof(mask) - (size_t)len,
					g == top ? "%x" : ",%08x", m[g]);
		snprintf(cmd, sizeof(cmd),
			 "ip netns exec " NS "-a sh -c 'echo %s > /sys/class/net/" NS "-a0/queues/tx-%d/xps_cpus' 2>/dev/null",
			 mask, q);
		if (sh(cmd))
			return -EIO;
	}
	return 0;
}

/* The receiving veth end's per-rx-queue XDP packet counters (ethtool -S,
 * rx_queue_N_xdp_packets); the bench runs in that namespace. */
static bool veth_xdp_counts(uint64_t *per_q)
{
	char line[256];
	bool any = false;
	FILE *p = popen("ethtool -S " NS "-b0 2>/dev/null", "r");

	memset(per_q, 0, sizeof(uint64_t) * MAX_QUEUES);
	if (!p)
		return false;
	while (fgets(line, sizeof(line), p)) {
		unsigned q;
		unsigned long long v;

		if (sscanf(line, " rx_queue_%u_xdp_packets: %llu", &q, &v) == 2 &&
		    q < MAX_QUEUES) {
			per_q[q] = v;
			any = true;
		}
	}
	pclose(p);
	return any;
}

/* Sender process: joins namespace a, blasts datagrams with sendmmsg until
 * killed, counts into the shared array. */
static void sender(int id, unsigned frame)
{
	static uint8_t buf[64][2048];
	struct mmsghdr m[64];
	struct iovec iov[64];
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_port = htons(UDP_PORT) };
	uint32_t len = frame - HDRS;
	uint64_t seq = 0;
	int fd;

	cpu_set_t one;

	/* the parent is pinned to the receive CPU; each sender to its own,
	 * before its socket picks a tx queue (XPS) */
	CPU_ZERO(&one);
	CPU_SET(sender_cpu(id), &one);
	sched_setaffinity(0, sizeof(one), &one);
	if (setns(B.fd_a, CLONE_NEWNET))
		_exit(1);
	inet_pton(AF_INET, IP_B, &dst.sin_addr);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&dst, sizeof(dst)))
		_exit(1);
	memset(m, 0, sizeof(m));
	for (int i = 0; i < 64; i++) {
		vfgx_wr32(buf[i], (uint32_t)id);
		for (uint32_t k = VFGX_APP_HLEN; k < len; k++)
			buf[i][k] = vfgx_pattern_byte((uint32_t)id, 0, k);
		iov[i].iov_base = buf[i];
		iov[i].iov_len = len;
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	for (;;) {
		int n;

		for (int i = 0; i < 64; i++)
			vfgx_wr64(buf[i] + 8, seq + (uint64_t)i);
		n = sendmmsg(fd, m, 64, 0);
		if (n > 0) {
			seq += (uint64_t)n;
			atomic_fetch_add_explicit(&B.sent[id], (uint64_t)n,
						  memory_order_relaxed);
		}
	}
}

static int senders_start(unsigned frame)
{
	for (int i = 0; i < B.senders; i++) {
		atomic_store(&B.sent[i], 0);
		B.pids[i] = fork();
		if (B.pids[i] == 0)
			sender(i, frame);
		if (B.pids[i] < 0)
			return -errno;
	}
	return 0;
}

static void senders_stop(void)
{
	for (int i = 0; i < B.senders; i++)
		if (B.pids[i] > 0) {
			kill(B.pids[i], SIGKILL);
			waitpid(B.pids[i], NULL, 0);
			B.pids[i] = 0;
		}
}

static uint64_t sent_total(void)
{
	uint64_t s = 0;

	for (int i = 0; i < B.senders; i++)
		s += atomic_load_explicit(&B.sent[i], memory_order_relaxed);
	return s;
}

/* Measure a receive loop: warm up 0.5 s, then count for B.seconds. */
#define WINDOW(count_expr, poll_stmt, res, idx, at_start, at_end)              \
	do {                                                                    \
		uint64_t t0, t1, c0 = 0, s0, s1, end;                           \
		end = vfgx_now_ns() + 500000000ull;                             \
		while (vfgx_now_ns() < end && !stop_flag) {                     \
			poll_stmt;                                              \
		}                                                               \
		(void)c0;                                                       \
		c0 = (count_expr);                                              \
		s0 = sent_total();                                              \
		at_start;                                                       \
		t0 = vfgx_now_ns();                                             \
		end = t0 + (uint64_t)(B.seconds * 1e9);                         \
		while (vfgx_now_ns() < end && !stop_flag) {                     \
			poll_stmt;                                              \
		}                                                               \
		t1 = vfgx_now_ns();                                             \
		s1 = sent_total();                                              \
		at_end;                                                         \
		(res)->mpps[idx] = (double)((count_expr) - c0) / ((t1 - t0) * 1e-3); \
		(res)->sent_mpps[idx] = (double)(s1 - s0) / ((t1 - t0) * 1e-3); \
	} while (0)

/* Kernel drops of the port's sockets: rx ring full + no fill-ring frame;
 * per_q gets each socket's packet count. */
static uint64_t ax_drops(vfgx_port *port, uint64_t *per_q)
{
	struct vfgx_queue_stats qs;
	uint64_t d = 0;

	for (int q = 0; q < B.queues; q++) {
		if (vfgx_port_stats(port, (uint16_t)q, &qs))
			continue;
		d += qs.drops[VFGX_DROP_RING_FULL] + qs.drops[VFGX_DROP_NOBUFS];
		per_q[q] = qs.rx_packets;
	}
	return d;
}

static void ax_window_start(vfgx_port *port, struct result *r, uint64_t *d0,
			    uint64_t *s0, uint64_t *x0)
{
	*d0 = ax_drops(port, s0);
	r->have_q_xdp = veth_xdp_counts(x0);
}

static void ax_window_end(vfgx_port *port, struct result *r, uint64_t d0,
			  const uint64_t *s0, const uint64_t *x0)
{
	uint64_t s1[MAX_QUEUES] = { 0 }, x1[MAX_QUEUES];

	r->afxdp_drops = ax_drops(port, s1) - d0;
	r->have_q_xdp = veth_xdp_counts(x1) && r->have_q_xdp;
	for (int q = 0; q < B.queues; q++) {
		r->q_sock[q] = s1[q] - s0[q];
		r->q_xdp[q] = x1[q] - x0[q];
	}
}

static int run_afxdp(vfgx_ctx *ctx, unsigned frame, struct result *r)
{
	/* one socket per veth queue, each with its own UMEM of 8192 frames
	 * and rx/fill rings of 4096 (testpmd gets --rxd 4096 per queue) */
	struct vfgx_afxdp_opts ao;
	struct vfgx_port_conf pc = {
		.argsz = sizeof(pc), .name = "bench", .backend = "afxdp",
		.address = NS "-b0", .burst = 64, .backend_opts = &ao.hdr,
	};
	struct vfgx_afxdp_info info;
	struct vfgx_pkt pkts[64];
	uint64_t got = 0, bytes = 0, d0 = 0;
	uint64_t qs0[MAX_QUEUES] = { 0 }, qx0[MAX_QUEUES] = { 0 };
	vfgx_port *port;
	int ret, nq = B.queues;

	vfgx_afxdp_opts_default(&ao);
	ao.rx_ring = 4096;
	ao.fill_ring = 4096;
	ao.num_frames = 8192;
	pc.nb_rx_queues = (uint16_t)nq;
	pc.nb_tx_queues = 1; /* as the YAML default */
	ret = vfgx_port_open(ctx, &pc, &port);
	if (ret) {
		fprintf(stderr, "vfgx bench afxdp: %s\n", vfgx_last_error(ctx));
		return ret;
	}
	vfgx_afxdp_info(port, &info);
	snprintf(B.mode, sizeof(B.mode), "%s XDP, %s",
		 info.native ? "native" : "generic",
		 info.zero_copy ? "zero-copy" : "copy mode");
	if ((ret = senders_start(frame)) == 0) {
		/* one thread polls every queue's socket in turn */
		WINDOW(got, {
			for (uint16_t q = 0; q < nq; q++) {
				int n = vfgx_port_rx_burst(port, q, pkts, 64);

				/* descriptors only, like testpmd rxonly (which
				 * frees its mbufs unread); --touch reads each
				 * frame's last byte */
				if (B.touch)
					for (int i = 0; i < n; i++)
						bytes += pkts[i].data[pkts[i].len - 1];
				if (n > 0) {
					vfgx_port_release(port, q, pkts,
							  (uint16_t)n);
					got += (uint64_t)n;
				}
			}
		}, r, 0, ax_window_start(port, r, &d0, qs0, qx0),
		   ax_window_end(port, r, d0, qs0, qx0));
		r->ok[0] = true;
		r->touched[RX_AFXDP] = bytes;
	}
	senders_stop();
	vfgx_port_close(port);
	return ret;
}

/* Kernel drops of UDP sockets (SO_MEMINFO's SK_MEMINFO_DROPS). */
static uint64_t udp_drops(const int *fds, int n)
{
	uint64_t d = 0;

	for (int i = 0; i < n; i++) {
		uint32_t mi[SK_MEMINFO_VARS] = { 0 };
		socklen_t len = sizeof(mi);

		if (!getsockopt(fds[i], SOL_SOCKET, SO_MEMINFO, mi, &len))
			d += mi[SK_MEMINFO_DROPS];
	}
	return d;
}

/* Kernel UDP receive with recvmmsg (64 per call, MSG_DONTWAIT) in ONE
 * thread: group false, one socket (idx RX_RECVMMSG); group true, an
 * SO_REUSEPORT group of one socket per queue polled in turn (RX_REUSEPORT),
 * the fair reference to one AF_XDP socket per queue (with one queue a
 * group of one: its row was left empty when the index followed the
 * socket count).  With --touch each datagram's last byte is read, as the
 * afxdp loop does. */
static int run_recvmmsg(unsigned frame, struct result *r, bool group)
{
	int nsock = group ? B.queues : 1;
	static uint8_t buf[64][2048];
	struct mmsghdr m[64];
	struct iovec iov[64];
	struct sockaddr_in me = { .sin_family = AF_INET,
				  .sin_port = htons(UDP_PORT) };
	int fds[MAX_QUEUES], rb = 8 << 20, ret = 0, one = 1, idx;
	uint64_t got = 0, bytes = 0, d0 = 0;

	idx = group ? RX_REUSEPORT : RX_RECVMMSG;
	for (int i = 0; i < nsock; i++) {
		fds[i] = socket(AF_INET, SOCK_DGRAM, 0);
		if (fds[i] < 0 ||
		    (group && setsockopt(fds[i], SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) ||
		    bind(fds[i], (struct sockaddr *)&me, sizeof(me))) {
			ret = -errno;
			perror("vfgx bench afxdp: recvmmsg socket");
			for (int k = 0; k <= i; k++)
				if (fds[k] >= 0)
					close(fds[k]);
			return ret;
		}
		setsockopt(fds[i], SOL_SOCKET, SO_RCVBUFFORCE, &rb, sizeof(rb));
	}
	memset(m, 0, sizeof(m));
	for (int i = 0; i < 64; i++) {
		iov[i].iov_base = buf[i];
		iov[i].iov_len = sizeof(buf[i]);
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	if ((ret = senders_start(frame)) == 0) {
		WINDOW(got, {
			for (int k = 0; k < nsock; k++) {
				int n = recvmmsg(fds[k], m, 64, MSG_DONTWAIT, NULL);

				if (n > 0) {
					got += (uint64_t)n;
					if (B.touch)
						for (int i = 0; i < n; i++)
							bytes += buf[i][m[i].msg_len ? m[i].msg_len - 1 : 0];
				}
			}
		}, r, idx, d0 = udp_drops(fds, nsock),
		   r->udp_drops[idx == RX_REUSEPORT] = udp_drops(fds, nsock) - d0);
		r->ok[idx] = true;
		r->touched[idx] = bytes;
	}
	senders_stop();
	for (int i = 0; i < nsock; i++)
		close(fds[i]);
	return ret;
}

/* testpmd's periodic "RX-packets: N" lines, read with their arrival time. */
struct line_reader {
	int fd;
	char buf[8192];
	size_t len;
};

static int read_line(struct line_reader *lr, char *line, size_t cap,
		     int timeout_ms)
{
	for (;;) {
		char *nl = memchr(lr->buf, '\n', lr->len);
		struct pollfd pfd = { .fd = lr->fd, .events = POLLIN };
		ssize_t n;

		if (nl) {
			size_t l = (size_t)(nl - lr->buf);

			snprintf(line, cap, "%.*s", (int)l, lr->buf);
			memmove(lr->buf, nl + 1, lr->len - l - 1);
			lr->len -= l + 1;
			return 1;
		}
		if (lr->len == sizeof(lr->buf))
			lr->len = 0; /* a line longer than the buffer: drop it */
		if (poll(&pfd, 1, timeout_ms) <= 0)
			return 0;
		n = read(lr->fd, lr->buf + lr->len, sizeof(lr->buf) - lr->len);
		if (n <= 0)
			return -1;
		lr->len += (size_t)n;
	}
}

static int run_testpmd(unsigned frame, struct result *r)
{
	struct line_reader lr = { 0 };
	char cmd[8192], vdevs[6144], line[1024];
	uint64_t deadline, t0 = 0, t1 = 0, c0 = 0, c1 = 0, s0 = 0, s1 = 0;
	uint64_t port_rx[MAX_QUEUES] = { 0 };
	bool started = false;
	int p[2], ret = 0, st, len = 0, cur = -1;
	pid_t pid;

	/* net_af_xdp (DPDK 22.11) takes queue_count only up to the
	 * interface's combined channels, and veth has none (it reports
	 * separate rx/tx counts, read as 1): one vdev port per veth queue,
	 * all polled by the one forwarding lcore, is the same N sockets */
	for (int q = 0; q < B.queues; q++)
		len += snprintf(vdevs + len, sizeof(vdevs) - (size_t)len,
				" --vdev net_af_xdp%d,iface=" NS "-b0,start_queue=%d,queue_count=1",
				q, q);
	snprintf(cmd, sizeof(cmd),
		 "mount -t bpf bpf /sys/fs/bpf 2>/dev/null; exec %s -l %d,%d --no-pci --no-huge -m 1024 --file-prefix vfgx-bench-afxdp%s -- --forward-mode=rxonly --rxq=1 --txq=1 --total-num-mbufs=%d --rxd=4096 --stats-period 1 --nb-cores=1 --burst=64",
		 B.testpmd, B.rx_cpu ? 0 : 1, B.rx_cpu, vdevs,
		 B.queues * 8192 + 8192);
	if (pipe(p))
		return -errno;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		execlp("ip", "ip", "netns", "exec", NS "-b", "sh", "-c", cmd,
		       (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	lr.fd = p[0];
	deadline = vfgx_now_ns() + 30000000000ull;
	while (!started && vfgx_now_ns() < deadline && !stop_flag) {
		if (read_line(&lr, line, sizeof(line), 500) < 0)
			break;
		started = strstr(line, "start packet forwarding") != NULL;
	}
	if (!started) {
		fprintf(stderr, "vfgx bench afxdp: dpdk-testpmd did not start forwarding (last line: %s)\n",
			line);
		ret = -EIO;
		goto out;
	}
	if ((ret = senders_start(frame)))
		goto out;
	deadline = vfgx_now_ns() + 500000000ull;
	while (!stop_flag && vfgx_now_ns() < deadline + (uint64_t)((B.seconds + 3) * 1e9)) {
		char *rx, *ps;
		uint64_t now, sum = 0;

		if (read_line(&lr, line, sizeof(line), 1500) < 0)
			break;
		/* per period: "NIC statistics for port N" then its
		 * "RX-packets: X" line, for every port; a sample is taken
		 * when the last port's count arrives */
		if ((ps = strstr(line, "NIC statistics for port "))) {
			cur = atoi(ps + 24);
			continue;
		}
		rx = strstr(line, "RX-packets:");
		if (!rx || cur < 0 || cur >= B.queues)
			continue;
		port_rx[cur] = strtoull(rx + 11, NULL, 10);
		if (cur != B.queues - 1)
			continue;
		for (int q = 0; q < B.queues; q++)
			sum += port_rx[q];
		now = vfgx_now_ns();
		if (now < deadline)
			continue;
		if (!t0) {
			t0 = now;
			c0 = sum;
			s0 = sent_total();
			continue;
		}
		t1 = now;
		c1 = sum;
		s1 = sent_total();
		if (t1 - t0 >= (uint64_t)(B.seconds * 1e9))
			break;
	}
	if (t1 > t0) {
		r->mpps[2] = (double)(c1 - c0) / ((t1 - t0) * 1e-3);
		r->sent_mpps[2] = (double)(s1 - s0) / ((t1 - t0) * 1e-3);
		r->ok[2] = true;
	} else {
		fprintf(stderr, "vfgx bench afxdp: dpdk-testpmd gave %s in the window (last line: %s)\n",
			t0 ? "one stats sample" : "no stats sample", line);
		ret = -EIO;
	}
out:
	senders_stop();
	kill(pid, SIGINT);
	deadline = vfgx_now_ns() + 10000000000ull;
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (vfgx_now_ns() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		sleep_s(0.05);
	}
	close(p[0]);
	/* testpmd's XDP program is removed when it exits on SIGINT; make
	 * sure in case it had to be killed, and drop its runtime dir */
	sh("ip -n " NS "-b link set dev " NS "-b0 xdp off 2>/dev/null;"
	   " ip -n " NS "-b link set dev " NS "-b0 xdpgeneric off 2>/dev/null;"
	   " rm -rf /var/run/dpdk/vfgx-bench-afxdp");
	return ret;
}

static void write_results(FILE *f, struct result (*rr)[NB_SIZES], bool have_tp)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	char load[128] = "?";
	FILE *la = fopen("/proc/loadavg", "r");

	if (la) {
		if (fgets(load, sizeof(load), la))
			load[strcspn(load, "\n")] = '\0';
		fclose(la);
	}

	const struct result *res = rr[0];

	fprintf(f, "- command: vfgx bench afxdp --seconds %g --rounds %d --senders %d --queues %d%s%s\n",
		B.seconds, B.rounds, B.senders, B.queues, have_tp ? "" : " --testpmd none",
		B.touch ? " --touch" : "");
	fprintf(f, "- cores: %ld online; the issue's target needs a 16-core machine so that the senders are not the bottleneck.%s\n",
		cores, cores < 16 ? " THIS RUN HAD FEWER: senders, kernel softirq work (veth XDP and the UDP stack run on the sending CPU) and the receiver share the same cores, so every number below is bounded by the senders and says little about the receivers' limits." : "");
	fprintf(f, "- load average at the end of the run (other work on this machine counts): %s\n",
		load);
	fprintf(f, "- setup: veth pair " NS "-a0/" NS "-b0 between two namespaces, created with %d tx and %d rx queues on each end (`QUEUES=%d scripts/netns-veth.sh`); %d sender processes in " NS "-a (UDP sendmmsg, 64 per call, tx checksum offload off), sender i pinned to CPU i %% %d and sending on tx queue i %% %d through XPS (%s), so veth runs XDP and the copy into the UMEM in one NAPI context per queue on the senders' CPUs; %g s window after 0.5 s warm-up, per receiver and size\n",
		B.queues, B.queues, B.queues, B.senders,
		B.ncpu > 1 ? B.ncpu - 1 : 1, B.queues,
		B.xps_ok ? "xps_cpus set" : "setting xps_cpus FAILED: the kernel's hash picked the queues",
		B.seconds);
	fprintf(f, "- receiving-thread budget, the same for all four: ONE thread pinned to CPU %d. vfgx afxdp port: one AF_XDP socket per veth queue (%d), all polled in turn by that thread (%s; per queue rx/fill rings 4096, 8192 frames; rx_burst 64 + release to the fill ring; %s). Reference of the target: an SO_REUSEPORT group of as many kernel UDP sockets as queues, polled in turn by that thread with recvmmsg (64 per call, MSG_DONTWAIT, 8 MiB rcvbuf each; with --touch each datagram's last byte read too): like the AF_XDP sockets, the kernel spreads the flows over them and does its receive work in softirq on the senders' CPUs. Also listed: ONE UDP socket with recvmmsg in that thread (the reference of the earlier runs), whose single queue all senders contend on. dpdk-testpmd: %d net_af_xdp ports `net_af_xdpQ,iface=" NS "-b0,start_queue=Q,queue_count=1`, one per veth queue (DPDK 22.11's net_af_xdp refuses queue_count above the interface's combined channel count, which veth reports as none), each --rxq=1 --txq=1, all polled by ONE forwarding lcore on CPU %d, rxonly, burst 64, --rxd 4096, --no-huge\n\n",
		B.rx_cpu, B.queues, B.mode[0] ? B.mode : "?",
		B.touch ? "the last byte of each frame read (--touch), as every receiver that uses its packets does" :
			  "descriptors only, no frame byte read, as testpmd rxonly frees its mbufs unread",
		B.queues, B.rx_cpu);
	fprintf(f, "- rounds: %d; in each, per size: afxdp, the reuseport group, one socket, testpmd (odd rounds run the references first). Drops: AF_XDP sockets' XDP_STATISTICS (rx ring full, no fill-ring frame); UDP sockets' SO_MEMINFO drop counts (receive buffer full), during the window.\n\n",
		B.rounds);
	fprintf(f, "| frame B | round | afxdp Mpps | reuseport recvmmsg Mpps | recvmmsg Mpps | testpmd Mpps | afxdp/reuseport | senders Mpps (afxdp / reuseport / one socket / testpmd runs) | afxdp drops | reuseport drops | one-socket drops |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < NB_SIZES; i++)
		for (int k = 0; k < B.rounds; k++) {
			const struct result *r = &rr[k][i];
			char tp[32] = "n/a";

			if (r->ok[RX_TESTPMD])
				snprintf(tp, sizeof(tp), "%.3f", r->mpps[RX_TESTPMD]);
			fprintf(f, "| %u | %d | %.3f | %.3f | %.3f | %s | %.3f | %.3f / %.3f / %.3f / %.3f | %llu | %llu | %llu |\n",
				sizes[i], k + 1, r->mpps[RX_AFXDP], r->mpps[RX_REUSEPORT],
				r->mpps[RX_RECVMMSG], tp,
				r->mpps[RX_REUSEPORT] > 0 ? r->mpps[RX_AFXDP] / r->mpps[RX_REUSEPORT] : 0,
				r->sent_mpps[RX_AFXDP], r->sent_mpps[RX_REUSEPORT],
				r->sent_mpps[RX_RECVMMSG], r->sent_mpps[RX_TESTPMD],
				(unsigned long long)r->afxdp_drops,
				(unsigned long long)r->udp_drops[1],
				(unsigned long long)r->udp_drops[0]);
		}
	if (B.touch) {
		uint64_t sum[4] = { 0 };

		for (size_t i = 0; i < NB_SIZES; i++)
			for (int k = 0; k < B.rounds; k++)
				for (int x = 0; x < 4; x++)
					sum[x] += rr[k][i].touched[x];
		fprintf(f, "\n--touch: sum of the last byte of every frame read (warm-up and window, all sizes and rounds): afxdp %llu, reuseport recvmmsg %llu, one-socket recvmmsg %llu (the reads this figure needs are the touch)\n",
			(unsigned long long)sum[RX_AFXDP], (unsigned long long)sum[RX_REUSEPORT],
			(unsigned long long)sum[RX_RECVMMSG]);
	}
	fprintf(f, "\nPackets per queue during round 1's afxdp window (thousands; socket = what vfgx read from that queue's AF_XDP socket, xdp = veth's rx_queue_N_xdp_packets on " NS "-b0 from `ethtool -S`):\n\n| frame B | queue:socket/xdp ... | queues with packets |\n|---|---|---|\n");
	for (size_t i = 0; i < NB_SIZES; i++) {
		int used = 0;

		fprintf(f, "| %u | ", sizes[i]);
		for (int q = 0; q < B.queues; q++) {
			if (res[i].have_q_xdp)
				fprintf(f, "%d:%.1f/%.1f ", q, res[i].q_sock[q] / 1e3,
					res[i].q_xdp[q] / 1e3);
			else
				fprintf(f, "%d:%.1f/? ", q, res[i].q_sock[q] / 1e3);
			used += res[i].q_sock[q] > 0;
		}
		fprintf(f, "| %d of %d |\n", used, B.queues);
	}
	fprintf(f, "\n");
	if (cores < 16)
		fprintf(f, "**Verdict: not established.** With %ld cores each receiver gets about what its senders managed in that run (compare each Mpps with its senders column), so a ratio of these rounds compares sender throughput between runs, not receivers: both targets are written unmeasured (met=no) below; they need this benchmark on a machine with at least 16 cores.\n\n",
			cores);
	{
		double ax[MAX_ROUNDS], rp[MAX_ROUNDS], tp[MAX_ROUNDS];
		bool tp_ok = have_tp;

		for (int k = 0; k < B.rounds; k++) {
			ax[k] = rr[k][0].mpps[RX_AFXDP];
			rp[k] = rr[k][0].mpps[RX_REUSEPORT];
			tp[k] = rr[k][0].mpps[RX_TESTPMD];
			tp_ok = tp_ok && rr[k][0].ok[RX_TESTPMD];
		}
		fprintf(f, "- rule: %s\n\n", bench_ci_rule);
		if (cores < 16) {
			char why[128];

			snprintf(why, sizeof(why), "%ld cores: the senders bound every receiver; the target needs 16 or more",
				 cores);
			bench_target_unmeasured(f, "afxdp_64B_vs_recvmmsg", 1.5, why);
			bench_target_unmeasured(f, "afxdp_64B_vs_testpmd_af_xdp", 1.0, why);
			return;
		}
		if (B.touch)
			bench_target_rounds(f, &(struct bench_target_rounds){
				.name = "afxdp_64B_vs_recvmmsg", .measured = ax, .reference = rp,
				.n = B.rounds, .goal = 1.5, .goal_on_ratio = true, .higher_better = true });
		else
			bench_target_unmeasured(f, "afxdp_64B_vs_recvmmsg", 1.5,
						"the target is taken with --touch: AF_XDP reading its frames, as recvmmsg's copy does");
		if (tp_ok)
			bench_target_rounds(f, &(struct bench_target_rounds){
				.name = "afxdp_64B_vs_testpmd_af_xdp", .measured = ax, .reference = tp,
				.n = B.rounds, .goal = 1.0, .goal_on_ratio = true, .higher_better = true });
		else
			bench_target_unmeasured(f, "afxdp_64B_vs_testpmd_af_xdp", 1.0,
						have_tp ? "dpdk-testpmd failed in a round: see the bench's stderr" :
							  "dpdk-testpmd not available");
	}
}

static const struct cli_opt afxdp_opts[] = {
	{ "seconds", 's', "S", "seconds per round (default 3)" },
	{ "senders", 'n', "N", "sender processes" },
	{ "rounds", 'r', "N", "rounds (default 3)" },
	{ "queues", 'q', "Q", "veth queue pairs (default: N senders)" },
	{ "testpmd", 't', "PATH", "dpdk-testpmd for the reference, or none" },
	{ "touch", 'T', NULL, "vfgx reads each frame's last byte (testpmd rxonly reads none)" },
	{ "out", 'o', "DIR", "write afxdp.md and afxdp.svg into DIR (default bench/results)" },
	{ "json", 'j', NULL, "the results file as one JSON document on stdout (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_bench_cli_afxdp = {
	.name = "bench afxdp",
	.summary = "AF_XDP receive over veth vs recvmmsg and dpdk-testpmd (root; uses scripts/netns-veth.sh)",
	.opts = afxdp_opts,
	.more = "needs root; run from the repository root (uses scripts/netns-veth.sh);\n"
		"creates namespaces " NS "-a/" NS "-b (198.18." NET ".0/24) with a veth of Q queue\n"
		"pairs (default Q = N senders, at most " STR(MAX_QUEUES) ") and removes them\n",
};

int vfgx_bench_afxdp(int argc, char **argv)
{
	static struct result res[MAX_ROUNDS][NB_SIZES];
	char path[512], cmd[256];
	bool have_tp;
	cpu_set_t cs;
	vfgx_ctx *ctx = NULL;
	FILE *f;
	int c, rc = 1;

	B.seconds = 3;
	B.rounds = 3;
	B.senders = 3;
	B.queues = 0;
	B.out = "bench/results";
	B.testpmd = "dpdk-testpmd";
	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_bench_cli_afxdp)) != -1) {
		switch (c) {
		case 's':
			if (vfgx_flag_double("bench afxdp", "--seconds", optarg, 0, 600, &B.seconds))
				return 2;
			break;
		case 'r':
			if (vfgx_flag_int("bench afxdp", "--rounds", optarg, 1, MAX_ROUNDS, &B.rounds))
				return 2;
			break;
		case 'n':
			if (vfgx_flag_int("bench afxdp", "--senders", optarg, 1, MAX_SENDERS, &B.senders))
				return 2;
			break;
		case 'q':
			if (vfgx_flag_int("bench afxdp", "--queues", optarg, 1, MAX_QUEUES, &B.queues))
				return 2;
			break;
		case 't':
			B.testpmd = optarg;
			break;
		case 'T':
			B.touch = true;
			break;
		case 'o':
			B.out = optarg;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_bench_cli_afxdp);
			return 0;
		default:
			return 2;
		}
	}
	if (B.seconds <= 0 || B.seconds > 600 || B.senders < 1 ||
	    B.senders > MAX_SENDERS) {
		fprintf(stderr, "vfgx bench afxdp: --seconds 0..600 and --senders 1..%d\n",
			MAX_SENDERS);
		return 2;
	}
	if (bench_out_check(B.out, "afxdp"))
		return 1;
	if (!B.queues)
		B.queues = B.senders < MAX_QUEUES ? B.senders : MAX_QUEUES;
	B.ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (geteuid() != 0) {
		fprintf(stderr, "vfgx bench afxdp: needs root (network namespaces, XDP)\n");
		return 1;
	}
	if (access("scripts/netns-veth.sh", X_OK)) {
		fprintf(stderr, "vfgx bench afxdp: scripts/netns-veth.sh not found: run from the repository root\n");
		return 2;
	}
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null", B.testpmd);
	have_tp = strcmp(B.testpmd, "none") && sh(cmd) == 0;
	if (!have_tp && strcmp(B.testpmd, "none"))
		fprintf(stderr, "vfgx bench afxdp: %s not found; measuring without it (apt install dpdk-dev, or --testpmd none)\n",
			B.testpmd);
	B.sent = mmap(NULL, sizeof(uint64_t) * MAX_SENDERS,
		      PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (B.sent == MAP_FAILED)
		return 1;
	snprintf(cmd, sizeof(cmd), "QUEUES=%d VETH_NET=" NET " scripts/netns-veth.sh up " NS " >/dev/null",
		 B.queues);
	if (sh(cmd) ||
	    sh("ip -n " NS "-a neigh replace " IP_B " lladdr $(ip -n " NS "-b -br link show " NS "-b0 | awk '{print $3}') dev " NS "-a0 nud permanent &&"
	       " ip netns exec " NS "-a ethtool -K " NS "-a0 tx off >/dev/null")) {
		fprintf(stderr, "vfgx bench afxdp: setting up namespaces " NS "-a/" NS "-b failed\n");
		goto out_ns;
	}
	B.xps_ok = xps_setup() == 0;
	if (!B.xps_ok)
		fprintf(stderr, "vfgx bench afxdp: setting XPS on " NS "-a0 failed; the kernel's flow hash spreads the senders over the tx queues\n");
	B.fd_a = open("/var/run/netns/" NS "-a", O_RDONLY | O_CLOEXEC);
	B.fd_b = open("/var/run/netns/" NS "-b", O_RDONLY | O_CLOEXEC);
	if (B.fd_a < 0 || B.fd_b < 0 || setns(B.fd_b, CLONE_NEWNET)) {
		perror("vfgx bench afxdp: joining the namespaces");
		goto out_ns;
	}
	B.rx_cpu = B.ncpu - 1;
	CPU_ZERO(&cs);
	CPU_SET(B.rx_cpu, &cs);
	sched_setaffinity(0, sizeof(cs), &cs);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (vfgx_ctx_create(&ctx))
		goto out_ns;
	vfgx_log_set_level(ctx, VFGX_LOG_WARN);
	for (int k = 0; k < B.rounds && !stop_flag; k++)
		for (size_t i = 0; i < NB_SIZES && !stop_flag; i++) {
			struct result *r = &res[k][i];
			bool refs_first = k % 2;

			printf("afxdp bench: round %d, %u-byte frames ...\n", k + 1, sizes[i]);
			fflush(stdout);
			if ((!refs_first && run_afxdp(ctx, sizes[i], r)) ||
			    run_recvmmsg(sizes[i], r, true) ||
			    run_recvmmsg(sizes[i], r, false) ||
			    (refs_first && run_afxdp(ctx, sizes[i], r)))
				goto out_ns;
			if (have_tp && run_testpmd(sizes[i], r) && !stop_flag) {
				fprintf(stderr, "vfgx bench afxdp: dpdk-testpmd run failed; trying once more\n");
				run_testpmd(sizes[i], r);
			}
			printf("  afxdp %.3f Mpps, reuseport group %.3f, one socket %.3f, testpmd %.3f (senders %.3f / %.3f / %.3f / %.3f Mpps)\n",
			       r->mpps[RX_AFXDP], r->mpps[RX_REUSEPORT], r->mpps[RX_RECVMMSG],
			       r->mpps[RX_TESTPMD], r->sent_mpps[RX_AFXDP], r->sent_mpps[RX_REUSEPORT],
			       r->sent_mpps[RX_RECVMMSG], r->sent_mpps[RX_TESTPMD]);
		}
	if (stop_flag)
		goto out_ns;
	f = bench_results_open(B.out, "afxdp", "vfgx bench afxdp - AF_XDP receive over veth",
			       path, sizeof(path));
	if (!f)
		goto out_ns;
	write_results(f, res, have_tp);
	fclose(f);
	printf("wrote %s\n", path);
	rc = 0;
out_ns:
	senders_stop();
	vfgx_ctx_destroy(ctx);
	sh("scripts/netns-veth.sh down " NS);
	return rc;
}
