/* socket.c - `vfgx bench socket`: the socket backend against sockperf on
 * the same loopback addresses in the same run: UDP receive rate (64, 1024,
 * 1500 B; the same sockperf `tp` sender feeds a sockperf server and then a
 * vfgx socket port), and the TCP rows of socket_tcp.c: message rate one way
 * and ping-pong, 64 B, 4 KB and 64 KB.  This file also holds the helpers
 * both share (socket_priv.h): processes, pinning, ports. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/udp.h>
#include <unistd.h>

#include <vfgx/socket.h>
#include <vfgx/vfgx.h>

#include "cliopt.h"
#include "commands.h"
#include "results.h"
#include "lo_rps.h"
#include "socket_priv.h"

#define BASE_PORT 21000

/* Runs argv with its output to a pipe, pinned to `cpu` (-1: not). */
int sb_spawn_on(struct proc_out *po, char *const argv[], int cpu)
{
	int p[2];

	if (pipe(p))
		return -errno;
	po->len = 0;
	po->buf[0] = '\0';
	po->pid = fork();
	if (po->pid < 0)
		return -errno;
	if (po->pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		sb_pin(0, cpu);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	po->fd = p[0];
	return 0;
}

/* Read until EOF (the process exited), then reap it. */
int sb_finish(struct proc_out *po, int sig)
{
	int st = 0;
	ssize_t r;

	if (sig && po->pid > 0)
		kill(po->pid, sig);
	while ((r = read(po->fd, po->buf + po->len,
			 sizeof(po->buf) - 1 - po->len)) > 0)
		po->len += (size_t)r;
	po->buf[po->len] = '\0';
	close(po->fd);
	if (po->pid > 0)
		waitpid(po->pid, &st, 0);
	po->pid = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

double sb_find_num(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);

	return p ? atof(p + strlen(key)) : -1;
}

static void msleep(unsigned ms)
{
	usleep(ms * 1000u);
}

/* Wait (up to 10 s) until a server has bound the port: on a loaded
 * machine a fixed sleep is not enough.  Looks at /proc/net/{udp,tcp} of
 * this namespace: state 07 (UDP bound) or 0A (TCP listening). */
bool sb_wait_bound(uint16_t port, bool tcp)
{
	char want[16], line[256];

	snprintf(want, sizeof(want), ":%04X", port);
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(tcp ? "/proc/net/tcp" : "/proc/net/udp", "r");
		bool found = false;

		while (f && fgets(line, sizeof(line), f)) {
			char local[64], remote[64], st[8];

			if (sscanf(line, "%*d: %63s %63s %7s", local, remote, st) == 3 &&
			    strstr(local, want) && !strcmp(st, tcp ? "0A" : "07"))
				found = true;
		}
		if (f)
			fclose(f);
		if (found)
			return true;
		msleep(10);
	}
	return false;
}

static int lo_up(void)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	int ret;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	ret = ioctl(fd, SIOCGIFFLAGS, &ifr);
	ifr.ifr_flags |= IFF_UP;
	if (!ret)
		ret = ioctl(fd, SIOCSIFFLAGS, &ifr);
	close(fd);
	return ret;
}

vfgx_port *sb_open_port(vfgx_ctx *ctx, const char *uri,
			const struct vfgx_socket_opts *so, uint16_t nrx, uint16_t ntx)
{
	struct vfgx_port_conf pc = {
		.argsz = sizeof(pc), .name = "bench", .backend = "socket",
		.address = uri, .nb_rx_queues = nrx, .nb_tx_queues = ntx,
		.burst = 64, .backend_opts = &so->hdr,
	};
	vfgx_port *port = NULL;

	if (vfgx_port_open(ctx, &pc, &port))
		fprintf(stderr, "vfgx bench socket: %s\n", vfgx_last_error(ctx));
	return port;
}

/* --udp-opts is a YAML flow mapping of socket options: config load
 * parses it into the typed struct (its strings live in *cfgp's document). */
static int parse_udp_opts(vfgx_ctx *ctx, const char *text, struct vfgx_config **cfgp,
			  struct vfgx_socket_opts *so)
{
	char y[512];

	vfgx_socket_opts_default(so);
	if (!text[0])
		return 0;
	snprintf(y, sizeof(y), "interfaces:\n  - backend: socket\n    socket: {%s}\n", text);
	if (vfgx_config_load_string(ctx, y, strlen(y), "--udp-opts", cfgp)) {
		fprintf(stderr, "vfgx bench socket: %s\n", vfgx_last_error(ctx));
		return -1;
	}
	*so = *(const struct vfgx_socket_opts *)(*cfgp)->ifaces[0].backend_opts;
	return 0;
}

#define MAX_ROUNDS 25

struct result {
	const char *what;
	uint32_t size;
	int n;
	double vfgx[MAX_ROUNDS], ref[MAX_ROUNDS]; /* per round, msg/s */
	double vm, rm;      /* medians */
	char raw[512];      /* every round: vfgx/sockperf */
};

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double t[MAX_ROUNDS];

	memcpy(t, v, sizeof(double) * (size_t)n);
	qsort(t, (size_t)n, sizeof(double), cmp_dbl);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static double best(const double *v, int n)
{
	double b = 0;

	for (int i = 0; i < n; i++)
		b = v[i] > b ? v[i] : b;
	return b;
}

static void add_round(struct result *r, double v, double ref)
{
	size_t l = strlen(r->raw);

	snprintf(r->raw + l, sizeof(r->raw) - l, "%s%.0f/%.0f", r->n ? ", " : "",
		 v, ref);
	r->vfgx[r->n] = v;
	r->ref[r->n++] = ref;
	r->vm = median(r->vfgx, r->n);
	r->rm = median(r->ref, r->n);
}

static void result_row(FILE *f, const struct result *r, const char *what)
{
	fprintf(f, "| %s | %u | %.0f | %.0f | %.3f | %.0f | %.0f | %s |\n", what, r->size, r->vm,
		r->rm, r->vm / r->rm, best(r->vfgx, r->n), best(r->ref, r->n), r->raw);
}

/* --- UDP receive ------------------------------------------------------- */

/* The receiver is what is measured, so the offered load is the same for
 * both receivers and as high as the machine gives: `udp_senders` forked
 * processes, each sendmmsg()ing bursts of 64 datagrams as fast as it can.
 * Senders and receiver are pinned the same way for sockperf and vfgx
 * (senders on sb_cpu_send, receiver on sb_cpu_recv).  Received and dropped
 * datagrams come from the kernel's own counters (Udp InDatagrams and
 * RcvbufErrors of this private namespace), identical for both receivers;
 * the receiver's CPU time from /proc/PID/task/X/schedstat (sockperf) and
 * CLOCK_THREAD_CPUTIME_ID (vfgx). */

static const char *udp_opts = "";
struct vfgx_socket_opts udp_so; /* udp_opts through the YAML adapter */
static struct vfgx_config *udp_opts_cfg;
int udp_senders = 2;
static double udp_rate; /* datagrams/s offered in all; 0: 90% of the unpaced rate */
int sb_cpu_send = 0, sb_cpu_recv = 1; /* -1: not pinned */

int sb_pin(pid_t pid, int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(pid, sizeof(set), &set) ? -errno : 0;
}

void sb_unpin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Udp InDatagrams (datagrams handed to a reader) and RcvbufErrors
 * (dropped: receive buffer full) of this namespace. */
int udp_snmp(struct udp_snmp *u)
{
	char hdr[1024], val[1024];
	FILE *f = fopen("/proc/net/snmp", "r");
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(hdr, sizeof(hdr), f)) {
		char *hs, *vs, *h, *v;

		if (strncmp(hdr, "Udp: ", 5) || !fgets(val, sizeof(val), f))
			continue;
		h = strtok_r(hdr + 5, " \n", &hs);
		v = strtok_r(val + 5, " \n", &vs);
		for (; h && v; h = strtok_r(NULL, " \n", &hs),
			       v = strtok_r(NULL, " \n", &vs)) {
			if (!strcmp(h, "InDatagrams"))
				u->in = strtoull(v, NULL, 10);
			else if (!strcmp(h, "RcvbufErrors"))
				u->rcvbuf_err = strtoull(v, NULL, 10);
		}
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

/* Bytes still queued on the UDP socket bound to port (rx_queue). */
unsigned long udp_queued(uint16_t port)
{
	char want[16], line[256];
	unsigned long q = 0;
	FILE *f = fopen("/proc/net/udp", "r");

	snprintf(want, sizeof(want), ":%04X", port);
	while (f && fgets(line, sizeof(line), f)) {
		char local[64];
		unsigned long tx, rx;

		if (sscanf(line, "%*d: %63s %*s %*s %lx:%lx", local, &tx, &rx) == 3 &&
		    strstr(local, want))
			q += rx;
	}
	if (f)
		fclose(f);
	return q;
}

/* CPU time (ns) of every thread of process pid, from schedstat. */
static double proc_cpu_ns(pid_t pid)
{
	char path[64], tp[128];
	double ns = 0;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		unsigned long long t;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(tp, sizeof(tp), "%s/%s/schedstat", path, e->d_name);
		f = fopen(tp, "r");
		if (f && fscanf(f, "%llu", &t) == 1)
			ns += (double)t;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return ns;
}

double thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* A sockperf message header (as `sockperf tp` sends it: 8-byte sequence
 * number, 16-bit flags = client, 32-bit length, network order), so that
 * sockperf sr handles our datagrams exactly like its own sender's. */
static void sockperf_hdr(uint8_t *b, uint64_t seq, uint32_t len)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(seq >> (56 - 8 * i));
	b[8] = 0;
	b[9] = 1;
	b[10] = (uint8_t)(len >> 24);
	b[11] = (uint8_t)(len >> 16);
	b[12] = (uint8_t)(len >> 8);
	b[13] = (uint8_t)len;
}

/* Fork the senders: they wait for sh->go, send bursts of 64 for secs (at
 * `rate` datagrams/s each when rate > 0, else as fast as they can), record
 * what the kernel accepted, and exit. */
int udp_start_senders(struct udp_shared *sh, pid_t *pids, uint16_t port,
		      uint32_t size, double secs, double rate, bool mark)
{
	int gso = sh->gso;

	memset(sh, 0, sizeof(*sh));
	sh->mark = mark;
	sh->gso = gso;
	for (int i = 0; i < udp_senders; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return -errno;
		if (pids[i] == 0) {
			struct sockaddr_in a = { .sin_family = AF_INET,
						 .sin_port = htons(port),
						 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
			uint8_t *buf = malloc((size_t)64 * size);
			struct mmsghdr m[64];
			struct iovec iov[64];
			uint64_t sent = 0, seq = 1 + ((uint64_t)i << 40), t0, end, now;
			int fd = socket(AF_INET, SOCK_DGRAM, 0);
			union {
				struct cmsghdr align;
				uint8_t b[CMSG_SPACE(sizeof(uint16_t))];
			} gctl;

			sb_pin(0, sb_cpu_send);
			if (!buf || fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
				_exit(1);
			memset(m, 0, sizeof(m));
			memset(buf, 0x5a, (size_t)64 * size);
			for (int k = 0; k < 64; k++) {
				iov[k] = (struct iovec){ buf + (size_t)k * size, size };
				m[k].msg_hdr.msg_iov = &iov[k];
				m[k].msg_hdr.msg_iovlen = 1;
			}
			if (gso > 1) {
				/* one super-datagram of gso datagrams per call */
				struct cmsghdr *c;
				uint16_t s16 = (uint16_t)size;

				iov[0].iov_len = (size_t)gso * size;
				m[0].msg_hdr.msg_control = gctl.b;
				m[0].msg_hdr.msg_controllen = sizeof(gctl.b);
				c = CMSG_FIRSTHDR(&m[0].msg_hdr);
				c->cmsg_level = SOL_UDP;
				c->cmsg_type = UDP_SEGMENT;
				c->cmsg_len = CMSG_LEN(sizeof(s16));
				memcpy(CMSG_DATA(c), &s16, sizeof(s16));
			}
			while (!atomic_load(&sh->go))
				usleep(1000);
			t0 = vfgx_now_ns();
			end = t0 + (uint64_t)(secs * 1e9);
			while ((now = vfgx_now_ns()) < end) {
				int r;

				if (rate > 0) {
					uint64_t due = t0 + (uint64_t)((double)sent / rate * 1e9);

					if (due > now + 200000)
						usleep((unsigned)((due - now) / 1000 - 100));
					if (due > now)
						continue;
				}
				for (int k = 0; k < 64 && size >= 14; k++)
					sockperf_hdr(buf + (size_t)k * size, seq + (uint64_t)k, size);
				r = sendmmsg(fd, m, gso > 1 ? 1 : 64, 0);
				if (r > 0 && gso > 1)
					r = gso;
				if (r > 0) {
					sent += (uint64_t)r;
					seq += (uint64_t)r;
				}
			}
			sh->sent[i] = sent;
			sh->secs[i] = (double)(vfgx_now_ns() - t0) / 1e9;
			atomic_fetch_add(&sh->done, 1);
			/* wake a receiver that blocks without a timeout */
			while (sh->mark && !atomic_load(&sh->ack)) {
				send(fd, buf, 0, 0);
				usleep(1000);
			}
			_exit(0);
		}
	}
	return 0;
}

void udp_reap(pid_t *pids)
{
	for (int i = 0; i < udp_senders; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
}

void udp_totals(struct udp_shared *sh, struct udp_side *u)
{
	u->sent = 0;
	u->wall_s = 0;
	for (int i = 0; i < udp_senders; i++) {
		u->sent += (double)sh->sent[i];
		if (sh->secs[i] > u->wall_s)
			u->wall_s = sh->secs[i];
	}
}

/* sockperf sr on sb_cpu_recv, fed by the senders. */
static int udp_rx_sockperf(uint32_t size, double secs, double rate,
			   uint16_t port, struct udp_shared *sh,
			   struct udp_side *u)
{
	char ps[16];
	char *srv[] = { "sockperf", "sr", "-i", "127.0.0.1", "-p", ps, NULL };
	struct proc_out *s = calloc(1, sizeof(*s));
	pid_t pids[16] = { 0 };
	struct cpu_sample k0 = { 0 }, k1;
	struct udp_snmp a, b;
	double c0, c1;
	int ret = -1;

	snprintf(ps, sizeof(ps), "%u", port);
	if (!s || sb_spawn_on(s, srv, sb_cpu_recv))
		goto out;
	if (!sb_wait_bound(port, false) ||
	    udp_start_senders(sh, pids, port, size, secs, rate, false))
		goto stop;
	msleep(100); /* sockperf's warm-up messages are behind us */
	if (udp_snmp(&a))
		goto stop;
	c0 = proc_cpu_ns(s->pid);
	cpu_sample(sb_cpu_recv, &k0);
	atomic_store(&sh->go, 1);
	while (atomic_load(&sh->done) < udp_senders)
		msleep(5);
	u->busy = cpu_sample(sb_cpu_recv, &k1) ? -1 : cpu_busy(&k0, &k1);
	u->irq = u->busy < 0 ? -1 : cpu_irq(&k0, &k1);
	for (int i = 0; i < 200 && udp_queued(port); i++)
		msleep(5); /* what the receiver still has to read */
	c1 = proc_cpu_ns(s->pid);
	if (udp_snmp(&b))
		goto stop;
	udp_totals(sh, u);
	u->got = (double)(b.in - a.in);
	u->drops = sh->gso > 1 ? u->sent - u->got : (double)(b.rcvbuf_err - a.rcvbuf_err);
	u->cpu_s = (c1 - c0) / 1e9;
	ret = u->cpu_s > 0 && u->got > 0 ? 0 : -1;
stop:
	sb_finish(s, SIGINT);
	udp_reap(pids);
	if (ret)
		fprintf(stderr, "vfgx bench socket: sockperf sr failed:\n%s\n", s->buf);
out:
	free(s);
	return ret;
}

/* A vfgx socket port (default config, 1 rx queue) with a vfgx_proc behind
 * it, in this thread, pinned to sb_cpu_recv. */
static int udp_rx_vfgx(vfgx_ctx *ctx, uint32_t size, double secs,
		       double rate, uint16_t port, struct udp_shared *sh, struct udp_side *u,
		       char *note, size_t note_len)
{
	struct vfgx_pipeline_config pc = { .workers = 1, .max_streams = 1 };
	struct vfgx_queue_stats qs;
	struct vfgx_socket_info si;
	struct vfgx_pkt pk[64];
	struct cpu_sample k0 = { 0 }, k1;
	struct udp_snmp a, b;
	pid_t pids[16] = { 0 };
	vfgx_port *p = NULL;
	vfgx_proc *proc = NULL;
	char addr[64];
	double c0, c1;
	uint64_t marks = 0;
	int ret = -1;

	snprintf(addr, sizeof(addr), "udp://127.0.0.1:%u", port);
	p = sb_open_port(ctx, addr, &udp_so, 1, 0);
	if (!p || vfgx_proc_create(ctx, &pc, &proc) ||
	    udp_start_senders(sh, pids, port, size, secs, rate, true))
		goto out;
	sb_pin(0, sb_cpu_recv);
	if (udp_snmp(&a))
		goto out;
	c0 = thread_cpu_ns();
	cpu_sample(sb_cpu_recv, &k0);
	u->busy = -1;
	atomic_store(&sh->go, 1);
	for (bool ended = false;;) {
		int n = vfgx_port_rx_burst(p, 0, pk, 64);

		if (!ended && atomic_load(&sh->done) == udp_senders) {
			ended = true;
			u->busy = cpu_sample(sb_cpu_recv, &k1) ? -1 : cpu_busy(&k0, &k1);
			u->irq = u->busy < 0 ? -1 : cpu_irq(&k0, &k1);
		}

		if (n > 0) {
			for (int i = 0; i < n; i++)
				marks += pk[i].len == 0;
			vfgx_proc_burst(proc, pk, (uint32_t)n);
			vfgx_port_release(p, 0, pk, (uint16_t)n);
			/* a full burst, or the end: read on without waiting */
			if (n == 64 || atomic_load(&sh->done) == udp_senders)
				continue;
		} else if (n < 0) {
			goto out;
		} else if (atomic_load(&sh->done) == udp_senders && marks) {
			break; /* senders gone and nothing queued */
		}
		/* block like sockperf's recvfrom(), without a timeout (the
		 * senders end with empty datagrams to wake us) */
		vfgx_socket_wait(p, 0, -1);
	}
	c1 = thread_cpu_ns();
	if (udp_snmp(&b))
		goto out;
	udp_totals(sh, u);
	u->got = (double)(b.in - a.in - marks);
	u->drops = (double)(b.rcvbuf_err - a.rcvbuf_err);
	u->cpu_s = (c1 - c0) / 1e9;
	vfgx_port_stats(p, 0, &qs);
	vfgx_socket_info(p, &si);
	if (sh->gso > 1) {
		/* the kernel counts a GRO batch as one datagram: the port's
		 * own count, and what did not arrive */
		u->got = (double)(qs.rx_packets - marks);
		u->drops = u->sent - u->got;
	}
	snprintf(note, note_len, "vfgx port counted %llu received (with the empty end datagrams), %llu dropped (SO_MEMINFO); GRO %s",
		 (unsigned long long)qs.rx_packets,
		 (unsigned long long)qs.drops[VFGX_DROP_RING_FULL],
		 si.gro ? "on" : "off");
	ret = u->cpu_s > 0 && u->got > 0 ? 0 : -1;
out:
	atomic_store(&sh->ack, 1);
	sb_unpin();
	udp_reap(pids);
	if (ret)
		fprintf(stderr, "vfgx bench socket: vfgx udp receiver failed: %s\n",
			vfgx_last_error(ctx));
	vfgx_proc_destroy(proc);
	vfgx_port_close(p);
	return ret;
}

/* One round of the three receivers, each fed by the same senders in turn:
 * u3[0] sockperf sr, u3[1] vfgx, u3[2] the same-syscall loop; odd rounds
 * in reverse order. */
static int udp_three(vfgx_ctx *ctx, uint32_t size, double secs, double rate, uint16_t port,
		     int round, struct udp_shared *sh, struct udp_side u3[3], char *note,
		     size_t note_len)
{
	for (int side = 0; side < 3; side++) {
		int who = round % 2 ? 2 - side : side, e;

		if (who == 0)
			e = udp_rx_sockperf(size, secs, rate, port, sh, &u3[0]);
		else if (who == 1)
			e = udp_rx_vfgx(ctx, size, secs, rate, (uint16_t)(port + 1), sh, &u3[1],
					note, note_len);
		else
			e = udp_rx_ref(size, secs, rate, (uint16_t)(port + 2), sh, &u3[2]);
		if (e)
			return -1;
	}
	return 0;
}

/* The receiving CPU's share spent on receiving: the receiver's own CPU
 * time over the run plus the kernel's interrupt (softirq) share. */
static double rx_work(const struct udp_side *u)
{
	if (u->irq < 0 || u->wall_s <= 0)
		return -1;
	return u->cpu_s / u->wall_s + u->irq;
}

static void udp_raw_rows(char *out, size_t len, uint32_t size, const char *lbl,
			 const struct udp_side u3[3], const char *note)
{
	static const char *const who[3] = { "sockperf sr", "vfgx", "same-syscall loop" };
	size_t l = 0;

	out[0] = '\0';
	for (int j = 0; j < 3 && l < len; j++)
		l += (size_t)snprintf(out + l, len - l,
				      "| %u | %s | %s | %.0f | %.0f | %.0f | %.3f | %.0f | %.0f | %s |\n",
				      size, lbl, who[j], u3[j].sent, u3[j].got, u3[j].drops,
				      u3[j].cpu_s, u3[j].got / u3[j].wall_s, u3[j].got / u3[j].cpu_s,
				      j == 1 ? note : "");
}

/* --- main ----------------------------------------------------------------- */

/* --cpus SEND,RECV: two CPU numbers, each by the strict parser. */
static int parse_cpus(const char *s, int *send, int *recv)
{
	const char *comma = strchr(s, ',');
	char first[16];
	uint64_t a, b;

	if (!comma || (size_t)(comma - s) >= sizeof(first))
		return -EINVAL;
	snprintf(first, sizeof(first), "%.*s", (int)(comma - s), s);
	if (vfgx_num_u64(first, 0, CPU_SETSIZE - 1, 0, &a, NULL, 0) ||
	    vfgx_num_u64(comma + 1, 0, CPU_SETSIZE - 1, 0, &b, NULL, 0))
		return -EINVAL;
	*send = (int)a;
	*recv = (int)b;
	return 0;
}

static const struct cli_opt socket_opts[] = {
	{ "out", 'o', "DIR", "write socket.md and socket.svg into DIR (default bench/results)" },
	{ "seconds", 's', "S", "whole seconds per round (sockperf's -t; default 2)" },
	{ "rounds", 'r', "N", "rounds per test (default 5)" },
	{ "udp-opts", 'u', "YAML", "extra socket options for the UDP receiver, e.g. 'gro: false'" },
	{ "senders", 'n', "N", "UDP sender processes, 1..16" },
	{ "cpus", 'c', "SEND,RECV", "pin sender and receiver (or none)" },
	{ "only", 'O', "TEST", "udp, tcp, tcp_tp or tcp_pp" },
	{ "udp-rate", 'R', "PPS", "UDP datagrams/s offered (0: 90% of the unpaced senders)" },
	{ "json", 'j', NULL, "the results file as one JSON document on stdout (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_bench_cli_socket = {
	.name = "bench socket",
	.summary = "socket backend vs sockperf (needs sockperf; as root in a private network namespace)",
	.opts = socket_opts,
};

int vfgx_bench_socket(int argc, char **argv)
{
	static const uint32_t usizes[] = { 64, 1024, 1500 };
	static const uint32_t tsizes[] = { 64, 4096, 65536 };
	static struct result res[9], wall[3], sat[3], vs_sp[3], sat_sp[3];
	static struct udp_side sat_u[3][MAX_ROUNDS][3];
	int rps = -ENOSYS;
	static char udp_raw[3][MAX_ROUNDS + 1][800];
	double offered[3] = { 0 };
	const char *out = "bench/results", *ns = "host namespace", *only = "";
	struct udp_shared *sh;
	double secs = 2.0, load0 = bench_loadavg1();
	int rounds = 5;
	char path[512], name[64];
	uint16_t port = BASE_PORT;
	vfgx_ctx *ctx;
	FILE *f;
	int c, nres = 0;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_bench_cli_socket)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 's':
			if (vfgx_flag_double("bench socket", "--seconds", optarg, 1, 600, &secs))
				return 2;
			/* sockperf takes whole seconds */
			if (secs != (double)(int)secs) {
				fprintf(stderr, "vfgx bench socket: --seconds must be a whole number 1..600 (sockperf's -t)\n");
				return 2;
			}
			break;
		case 'u':
			udp_opts = optarg;
			break;
		case 'n':
			if (vfgx_flag_int("bench socket", "--senders", optarg, 1, 16, &udp_senders))
				return 2;
			break;
		case 'c':
			if (!strcmp(optarg, "none")) {
				sb_cpu_send = sb_cpu_recv = -1;
			} else if (parse_cpus(optarg, &sb_cpu_send, &sb_cpu_recv)) {
				fprintf(stderr, "vfgx bench socket: --cpus takes SEND,RECV (e.g. 0,1) or none\n");
				return 2;
			}
			break;
		case 'R':
			if (vfgx_num_double(optarg, 0, 1e9, &udp_rate, NULL, 0)) {
				fprintf(stderr, "vfgx bench socket: --udp-rate must be >= 0 datagrams/s (0: 90%% of what the senders reach unpaced)\n");
				return 2;
			}
			break;
		case 'O':
			only = optarg;
			if (strcmp(only, "udp") && strcmp(only, "tcp_tp") &&
			    strcmp(only, "tcp_pp") && strcmp(only, "tcp")) {
				fprintf(stderr, "vfgx bench socket: --only takes udp, tcp, tcp_tp or tcp_pp\n");
				return 2;
			}
			break;
		case 'r':
			if (vfgx_flag_int("bench socket", "--rounds", optarg, 1, MAX_ROUNDS, &rounds))
				return 2;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_bench_cli_socket);
			return 0;
		default:
			return 2;
		}
	}
	if (bench_out_check(out, "socket"))
		return 1;
	if (system("sockperf --version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "vfgx bench socket: sockperf not found: install the Debian package sockperf (scripts/install-deps.sh)\n");
		return 1;
	}
	if ((sb_cpu_send >= 0 && sb_cpu_send >= sysconf(_SC_NPROCESSORS_ONLN)) ||
	    (sb_cpu_recv >= 0 && sb_cpu_recv >= sysconf(_SC_NPROCESSORS_ONLN))) {
		fprintf(stderr, "vfgx bench socket: --cpus %d,%d: this machine has %ld online CPUs (use --cpus none)\n",
			sb_cpu_send, sb_cpu_recv, sysconf(_SC_NPROCESSORS_ONLN));
		return 2;
	}
	/* loopback of our own: no other process shares these ports, and the
	 * kernel's UDP counters are this benchmark's alone */
	if (unshare(CLONE_NEWNET) == 0 && lo_up() == 0) {
		ns = "private network namespace (unshare)";
		/* for the saturated run: this namespace's lo in /sys */
		rps = sb_cpu_recv >= 0 ? lo_rps_prepare() : -EINVAL;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || vfgx_ctx_create(&ctx))
		return 1;
	vfgx_log_set_level(ctx, VFGX_LOG_WARN);
	if (parse_udp_opts(ctx, udp_opts, &udp_opts_cfg, &udp_so)) {
		vfgx_config_destroy(udp_opts_cfg);
	vfgx_ctx_destroy(ctx);
		return 2;
	}
	/* rounds rotate which receiver goes first; the median is reported */
	for (int i = 0; i < 3 && (!only[0] || !strcmp(only, "udp")); i++) {
		struct result *r = &res[nres], *w = &wall[i], *vs = &vs_sp[i];
		double rate = udp_rate / udp_senders; /* per sender */

		r->what = w->what = vs->what = "udp_rx";
		r->size = w->size = vs->size = usizes[i];
		sh->gso = 0;
		/* round 0: unpaced, to find what the senders can offer to
		 * each receiver; the measured rounds offer 90% of the lowest */
		for (int k = udp_rate > 0 ? 1 : 0; k <= rounds; k++, port += 3) {
			struct udp_side u3[3] = { 0 };
			char note[160], lbl[32];

			if (udp_three(ctx, usizes[i], secs, rate, port, k, sh, u3, note, sizeof(note)))
				goto fail;
			if (k == 0) {
				/* what the slowest receiver took, not what the
				 * senders offered: the paced rounds stay below
				 * every receiver's capacity */
				double lo = 0;

				for (int j = 0; j < 3; j++)
					if (!lo || u3[j].got / u3[j].wall_s < lo)
						lo = u3[j].got / u3[j].wall_s;
				rate = 0.9 * lo / udp_senders;
				offered[i] = rate * udp_senders;
			} else {
				add_round(r, u3[1].got / u3[1].cpu_s, u3[2].got / u3[2].cpu_s);
				add_round(vs, u3[1].got / u3[1].cpu_s, u3[0].got / u3[0].cpu_s);
				add_round(w, u3[1].got / u3[1].wall_s, u3[2].got / u3[2].wall_s);
			}
			if (k)
				snprintf(lbl, sizeof(lbl), "%d%s", k, k % 2 ? " (reversed order)" : "");
			else
				snprintf(lbl, sizeof(lbl), "0 (unpaced)");
			udp_raw_rows(udp_raw[i][k], sizeof(udp_raw[i][k]), usizes[i], lbl, u3, note);
			printf("udp_rx %5u B round %d%s: got %.0f/%.0f/%.0f rx cpu %.3f/%.3f/%.3f s (sockperf/vfgx/loop)\n",
			       usizes[i], k, k ? "" : " (unpaced)", u3[0].got, u3[1].got, u3[2].got,
			       u3[0].cpu_s, u3[1].cpu_s, u3[2].cpu_s);
			fflush(stdout);
		}
		/* saturated: unpaced senders sending GSO batches (the kernel's
		 * cost per datagram moves to the receiving side), and RPS on lo
		 * puts the kernel's receive work on the receiver's CPU */
		sat[i].what = sat_sp[i].what = "udp_rx_saturated";
		sat[i].size = sat_sp[i].size = usizes[i];
		sh->gso = (int)(60000 / usizes[i] < 64 ? 60000 / usizes[i] : 64);
		if (!rps && !(rps = lo_rps_set(sb_cpu_recv))) {
			for (int k = 1; k <= rounds; k++, port += 3) {
				struct udp_side u3[3] = { 0 };
				char note[160];

				if (udp_three(ctx, usizes[i], secs, 0, port, k, sh, u3, note,
					      sizeof(note))) {
					lo_rps_set(-1);
					goto fail;
				}
				add_round(&sat[i], u3[1].got / u3[1].wall_s, u3[2].got / u3[2].wall_s);
				add_round(&sat_sp[i], u3[1].got / u3[1].wall_s, u3[0].got / u3[0].wall_s);
				memcpy(sat_u[i][k - 1], u3, sizeof(u3));
				printf("udp_rx saturated %5u B round %d: msg/s %.0f/%.0f/%.0f, rx CPU busy %.0f/%.0f/%.0f%%, receive work %.0f/%.0f/%.0f%%, lost %.0f/%.0f/%.0f (sockperf/vfgx/loop)\n",
				       usizes[i], k, u3[0].got / u3[0].wall_s, u3[1].got / u3[1].wall_s,
				       u3[2].got / u3[2].wall_s, 100 * u3[0].busy, 100 * u3[1].busy,
				       100 * u3[2].busy, 100 * rx_work(&u3[0]), 100 * rx_work(&u3[1]),
				       100 * rx_work(&u3[2]), u3[0].drops, u3[1].drops, u3[2].drops);
				fflush(stdout);
			}
			rps = lo_rps_set(-1);
		}
		sh->gso = 0;
		printf("udp_rx %5u B: per rx CPU-second vfgx %.0f loop %.0f ratio %.3f (sockperf %.0f) (medians, offered %.0f/s)\n",
		       r->size, r->vm, r->rm, r->vm / r->rm, vs->rm, offered[i]);
		fflush(stdout);
		nres++;
	}
	munmap(sh, sizeof(*sh));
	for (int pp = 0; pp < 2; pp++) {
		if (only[0] && strcmp(only, "tcp") &&
		    strcmp(only, pp ? "tcp_pp" : "tcp_tp"))
			continue;
		for (int i = 0; i < 3; i++) {
			struct result *r = &res[nres];

			r->what = pp ? "tcp_pp" : "tcp_tp";
			r->size = tsizes[i];
			for (int k = 0; k < rounds; k++, port += 2) {
				double a, b;
				int e;

				if (k % 2)
					e = sb_vfgx_tcp(ctx, port + 1, tsizes[i], secs, pp, &b) ||
					    sb_sockperf_tcp(port, tsizes[i], secs, pp, &a);
				else
					e = sb_sockperf_tcp(port, tsizes[i], secs, pp, &a) ||
					    sb_vfgx_tcp(ctx, port + 1, tsizes[i], secs, pp, &b);
				if (e)
					goto fail;
				add_round(r, b, a);
			}
			printf("%s %5u B: vfgx %10.0f msg/s  sockperf %10.0f msg/s  ratio %.3f (medians; rounds %s)\n",
			       r->what, r->size, r->vm, r->rm, r->vm / r->rm, r->raw);
			fflush(stdout);
			nres++;
		}
	}
	vfgx_config_destroy(udp_opts_cfg);
	vfgx_ctx_destroy(ctx);
	f = bench_results_open(out, "socket",
			       "Socket backend vs sockperf (kernel UDP/TCP on loopback)",
			       path, sizeof(path));
	if (!f)
		return 1;
	snprintf(name, sizeof(name), "%d,%d", sb_cpu_send, sb_cpu_recv);
	fprintf(f, "- command: vfgx bench socket --seconds %g --rounds %d --senders %d --cpus %s%s%s%s%s%s\n",
		secs, rounds, udp_senders, sb_cpu_send < 0 ? "none" : name,
		only[0] ? " --only " : "", only,
		udp_opts[0] ? " --udp-opts '" : "", udp_opts, udp_opts[0] ? "'" : "");
	if (sb_cpu_send >= 0)
		fprintf(f, "- cpus: senders/clients on CPU %d, receivers/servers on CPU %d (the same for sockperf and vfgx)\n",
			sb_cpu_send, sb_cpu_recv);
	fprintf(f, "- load average (1 min) at start %.2f, at end %.2f\n", load0, bench_loadavg1());
	fprintf(f, "- each number is the MEDIAN of %d rounds; in every round the sides run back to back, odd rounds in reverse order (every round's numbers are in the tables)\n", rounds);
	fprintf(f, "- where: 127.0.0.1 in a %s; sockperf 3.7 (Debian package), same run, same ports range\n", ns);
	fprintf(f, "- udp_rx measures the RECEIVER. Offered load, identical for all three: %d sender processes on the senders' CPU, each sendmmsg()ing bursts of 64 UDP datagrams of SIZE payload bytes (a sockperf message header in front, so sockperf sr handles them like its own sender's) to 127.0.0.1 for %g s. Round 0 runs the senders unpaced into each receiver; the measured rounds pace them at %s. Receivers on the receivers' CPU, one thread each, all blocking without a timeout (the senders end with empty datagrams to wake them, not counted): (1) a vfgx socket port (1 rx queue, default config: UDP GRO socket option on) with a vfgx_proc behind it, blocking in vfgx_socket_wait(port, 0, -1): recvmmsg() of 16 slots of 64 KiB, each coalesced datagram split into its datagrams, each copied into a pool buffer, then vfgx_proc_burst (header parse, reorder) and release; (2) the same-syscall loop (bench/socket_ref.c), the target's reference: a plain loop on the same kind of socket (same rcvbuf, UDP GRO on) doing the same recvmmsg() of 16 slots of 64 KiB with MSG_WAITFORONE and the same split and copy of each datagram into a buffer of its own, with nothing behind it; (3) `sockperf sr` (recvfrom(), one datagram per call, no GRO), a row, not the target. Received = the kernel's Udp InDatagrams delta, drops = Udp RcvbufErrors delta (this namespace only: the same counters for all); receiver CPU = schedstat run time of sockperf's threads / CLOCK_THREAD_CPUTIME_ID of the vfgx or loop thread, from the senders' start until the socket is drained.\n",
		udp_senders, secs, udp_rate > 0 ? "--udp-rate in all" : "90% of the lowest rate the three receivers took unpaced");
	fprintf(f, "- udp_rx target = vfgx / same-syscall loop in datagrams received per receiver CPU-second (received / receiver CPU time) at that identical offered load: the library's cost over the bare system calls. The rows against sockperf compare different syscalls (recvfrom per datagram, no GRO) and are listed, not targets.\n");
	fprintf(f, "- udp_rx_saturated: the receiver must be the bottleneck. The senders run unpaced and send GSO batches (UDP_SEGMENT: %s datagrams of SIZE bytes per sendmsg(), each with its sockperf header), so the kernel's per-datagram cost lands on the receiving side; RPS on this namespace's lo (rps_cpus = the receivers' CPU) runs the kernel's IP/UDP receive work (and, for sockperf's socket without GRO, the split into datagrams) on the receiver's CPU next to the receiver, as a NIC's interrupt on the receiving core does. With GRO on (vfgx and the loop) a batch reaches the socket whole, the kernel counts it as one datagram, so received = the receiver's own count of datagrams (vfgx: the port's rx_packets; loop: its split count; sockperf: InDatagrams) and lost = offered - received. Rate = received per second of the senders' time. Per round: the receiving CPU's busy fraction (/proc/stat, from the senders' start to their end; every process counts, and this machine is shared), its interrupt (softirq: the kernel's receive path) part, the receiver's own CPU time over the senders' time, and the receive work = the last two added. A round counts as saturated when the receive work was >= 90%% of the CPU and >= 1%% of the offered datagrams were lost, for both vfgx and the loop: a receiver starved by other processes is not one that could not keep up. The target is computed only when every round is saturated, and says why not otherwise.\n",
		"64 (64 B), 58 (1024 B), 40 (1500 B)");
	fprintf(f, "- tcp_tp: messages per second received one way, the same records per system call on both sides. Reference: `sockperf tp --tcp -m SIZE` into `sockperf sr --tcp` (server's received count / client time); sockperf tp does one send() per message. vfgx: a socket client port sends one SIZE-byte record (plus its 4-byte length prefix) per vfgx_port_tx_burst call, which the TCP path turns into one send() (src/port/socket_tcp.c: a burst is one send()/sendmsg(); a partial send finishes in the next call, as sockperf's does). Receivers: both read the byte stream with whatever is queued per recv(). Sender on the senders' CPU, receiver on the receivers' CPU, for both.\n");
	fprintf(f, "- tcp_pp: round trips per second, one message in flight. Reference: `sockperf pp --tcp -m SIZE` (client, senders' CPU) against `sockperf sr --tcp` (receivers' CPU), valid-duration ReceivedMessages / RunTime. vfgx: client port (senders' CPU) sends one record, a server port in a thread on the receivers' CPU echoes it on the same connection; both block in vfgx_socket_wait(port, 0, -1), i.e. recv() without a timeout, as sockperf does. Both: 2 system calls per side per round trip (send + recv).\n");
	fprintf(f, "- goal per line: vfgx >= 0.9 x its reference (udp: the same-syscall loop; tcp: sockperf), on the per-round ratios (rule at the end).\n- absolute rates move with whatever else runs on this machine (load above); the ratios against the reference measured in the same round are what count.\n\n");
	fprintf(f, "| test | size B | vfgx (median) | reference (median) | ratio | vfgx best | reference best | every round vfgx/reference |\n|---|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < nres; i++)
		result_row(f, &res[i], !strcmp(res[i].what, "udp_rx") ?
				  "udp_rx (per rx CPU-s; reference: same-syscall loop)" :
				  !strcmp(res[i].what, "tcp_tp") ? "tcp_tp (msg/s; reference: sockperf)" :
								   "tcp_pp (msg/s; reference: sockperf)");
	for (int i = 0; i < 3 && vs_sp[i].n; i++)
		result_row(f, &vs_sp[i], "udp_rx (per rx CPU-s; reference: sockperf sr, not a target)");
	for (int i = 0; i < 3 && wall[i].n; i++)
		result_row(f, &wall[i], "udp_rx (wall msg/s; reference: same-syscall loop, not a target)");
	for (int i = 0; i < 3 && sat[i].n; i++)
		result_row(f, &sat[i], "udp_rx_saturated (msg/s; reference: same-syscall loop)");
	for (int i = 0; i < 3 && sat_sp[i].n; i++)
		result_row(f, &sat_sp[i], "udp_rx_saturated (msg/s; reference: sockperf sr, not a target)");
	if (wall[0].n) {
		fprintf(f, "\nUDP rounds (offered = datagrams the senders' sendmmsg() accepted; rx CPU s = receiver CPU time; wall = received / senders' time):\n\n");
		fprintf(f, "| size B | round | receiver | offered | received | kernel drops | rx CPU s | wall msg/s | msg per rx CPU-s | notes |\n|---|---|---|---|---|---|---|---|---|---|\n");
		for (int i = 0; i < 3; i++)
			for (int k = 0; k <= wall[i].n; k++)
				fputs(udp_raw[i][k], f);
	}
	if (sat[0].n) {
		static const char *const who[3] = { "sockperf sr", "vfgx", "same-syscall loop" };

		fprintf(f, "\nSaturated UDP receive (unpaced GSO senders, RPS on lo to the receivers' CPU %d; odd rounds in reverse order):\n\n", sb_cpu_recv);
		fprintf(f, "| size B | round | receiver | offered | received | lost | lost %% | msg/s | rx CPU busy %% (all processes) | of it softirq %% | receiver's own CPU %% | receive work %% (own + softirq) | saturated |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
		for (int i = 0; i < 3; i++)
			for (int k = 0; k < sat[i].n; k++)
				for (int j = 0; j < 3; j++) {
					const struct udp_side *u = &sat_u[i][k][j];

					fprintf(f, "| %u | %d | %s | %.0f | %.0f | %.0f | %.1f | %.0f | %.1f | %.1f | %.1f | %.1f | %s |\n",
						sat[i].size, k + 1, who[j], u->sent, u->got, u->drops,
						u->sent > 0 ? 100 * u->drops / u->sent : 0,
						u->got / u->wall_s, 100 * u->busy, 100 * u->irq,
						100 * u->cpu_s / u->wall_s, 100 * rx_work(u),
						udp_saturated(rx_work(u), u->sent, u->got) ? "yes" : "no");
				}
	} else if (!only[0] || !strcmp(only, "udp")) {
		fprintf(f, "\nSaturated UDP receive: not run (RPS on the namespace's lo unavailable: %s; needs root, --cpus).\n",
			strerror(rps < 0 ? -rps : EINVAL));
	}
	fprintf(f, "\n- rule: %s\n\n", bench_ci_rule);
	for (int i = 0; i < nres; i++) {
		snprintf(name, sizeof(name), "socket_%s_%uB_%s", res[i].what,
			 res[i].size, !strcmp(res[i].what, "udp_rx") ?
					      "msgs_per_rx_cpu_s" : "msgs_per_s");
		bench_target_rounds(f, &(struct bench_target_rounds){
			.name = name, .measured = res[i].vfgx, .reference = res[i].ref,
			.n = res[i].n, .goal = 0.9, .goal_on_ratio = true, .higher_better = true });
	}
	for (int i = 0; i < 3 && (!only[0] || !strcmp(only, "udp")); i++) {
		int unsat = 0;
		char why[200];

		snprintf(name, sizeof(name), "socket_udp_rx_saturated_%uB_msgs_per_s", usizes[i]);
		for (int k = 0; k < sat[i].n; k++)
			unsat += !udp_saturated(rx_work(&sat_u[i][k][1]), sat_u[i][k][1].sent,
						sat_u[i][k][1].got) ||
				 !udp_saturated(rx_work(&sat_u[i][k][2]), sat_u[i][k][2].sent,
						sat_u[i][k][2].got);
		if (!sat[i].n) {
			bench_target_unmeasured(f, name, 0.9, "not run: RPS on the namespace's lo unavailable");
		} else if (unsat) {
			snprintf(why, sizeof(why), "not measured: the receivers were not saturated in %d of %d rounds (receive work < 90%% of their CPU, or < 1%% lost; table above)",
				 unsat, sat[i].n);
			bench_target_unmeasured(f, name, 0.9, why);
		} else {
			bench_target_rounds(f, &(struct bench_target_rounds){
				.name = name, .measured = sat[i].vfgx, .reference = sat[i].ref,
				.n = sat[i].n, .goal = 0.9, .goal_on_ratio = true, .higher_better = true });
		}
	}
	fclose(f);
	printf("wrote %s\n", path);
	return 0;
fail:
	vfgx_config_destroy(udp_opts_cfg);
	vfgx_ctx_destroy(ctx);
	return 1;
}
