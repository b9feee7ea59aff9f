/* pace_rx.c - the receiver behind `vfgx bench send`'s pacing rows: a veth
 * pair into a network namespace of its own, a UDP socket there with
 * SO_TIMESTAMPNS, and what its timestamps say about the rate and the gaps
 * (pace_rx.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdbool.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pace_rx.h"

#define PACE_RX_MAX (4u << 20) /* messages kept: over 2 min of 32-datagram bursts at 1 Mpps */
#define PACE_RX_BATCH 16

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* nearest rank: the smallest value with at least q of the values at or
 * below it */
static double rank(const double *sorted, size_t m, double q)
{
	size_t k = (size_t)(q * (double)m + 0.999999);

	return sorted[k ? (k > m ? m : k) - 1 : 0];
}

int pace_rx_compute(const uint64_t *ts, const uint32_t *cnt, size_t n, double asked_pps,
		    struct pace_rx_stats *st)
{
	double *gap, before_last = 0;
	size_t m;

	memset(st, 0, sizeof(*st));
	st->messages = n;
	for (size_t k = 0; k < n; k++)
		st->datagrams += cnt[k];
	if (n < 3 || asked_pps <= 0)
		return -1;
	m = n - 1;
	gap = malloc(sizeof(double) * m);
	if (!gap)
		return -1;
	for (size_t k = 0; k < m; k++) {
		double g = (double)ts[k + 1] - (double)ts[k] - (double)cnt[k] / asked_pps * 1e9;

		gap[k] = g < 0 ? -g : g;
		before_last += cnt[k];
	}
	qsort(gap, m, sizeof(double), cmp_dbl);
	st->rate_pps = ts[m] > ts[0] ? before_last / ((double)(ts[m] - ts[0]) / 1e9) : 0;
	st->rate_error_pct = (st->rate_pps - asked_pps) / asked_pps * 100;
	st->gap_p50_ns = rank(gap, m, 0.50);
	st->gap_p99_ns = rank(gap, m, 0.99);
	st->gap_max_ns = gap[m - 1];
	free(gap);
	return 0;
}

/* --- the veth pair ------------------------------------------------------- */

static int sh_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh_cmd(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st != 0)
		fprintf(stderr, "vfgx bench send: `%s` failed (status %d)\n", cmd, st);
	return st ? -1 : 0;
}

int pace_net_up(struct pace_net *pn, int rps_cpu)
{
	unsigned id = (unsigned)getpid() % 200 + 20; /* 10.251.id.0/29 */

	memset(pn, 0, sizeof(*pn));
	snprintf(pn->ns, sizeof(pn->ns), "vfgx-pace-%d", (int)getpid());
	snprintf(pn->host_if, sizeof(pn->host_if), "vfps%u", id);
	snprintf(pn->ns_if, sizeof(pn->ns_if), "vfpr%u", id);
	snprintf(pn->host_ip, sizeof(pn->host_ip), "10.251.%u.1", id);
	snprintf(pn->ns_ip, sizeof(pn->ns_ip), "10.251.%u.2", id);
	snprintf(pn->sink_ip, sizeof(pn->sink_ip), "10.251.%u.3", id);
	memcpy(pn->sink_mac, (uint8_t[6]){ 2, 0x76, 0x66, (uint8_t)id, 0, 9 }, 6);
	memcpy(pn->host_mac, (uint8_t[6]){ 2, 0x76, 0x66, (uint8_t)id, 0, 1 }, 6);
	memcpy(pn->ns_mac, (uint8_t[6]){ 2, 0x76, 0x66, (uint8_t)id, 0, 2 }, 6);
	if (sh_cmd("ip netns add %s", pn->ns))
		return -1;
	pn->up = 1;
	if (sh_cmd("ip link add %s address 02:76:66:%02x:00:01 type veth peer name %s address 02:76:66:%02x:00:02 netns %s",
		   pn->host_if, id, pn->ns_if, id, pn->ns) ||
	    sh_cmd("ip addr add %s/29 dev %s && ip link set %s up", pn->host_ip,
		   pn->host_if, pn->host_if) ||
	    sh_cmd("ip -n %s addr add %s/29 dev %s && ip -n %s link set %s up && ip -n %s link set lo up",
		   pn->ns, pn->ns_ip, pn->ns_if, pn->ns, pn->ns_if, pn->ns) ||
	    sh_cmd("ip neigh replace %s lladdr 02:76:66:%02x:00:02 dev %s nud permanent",
		   pn->ns_ip, id, pn->host_if) ||
	    sh_cmd("ip neigh replace %s lladdr 02:76:66:%02x:00:09 dev %s nud permanent",
		   pn->sink_ip, id, pn->host_if) ||
	    sh_cmd("ip -n %s neigh replace %s lladdr 02:76:66:%02x:00:01 dev %s nud permanent",
		   pn->ns, pn->host_ip, id, pn->ns_if))
		goto err;
	if (rps_cpu >= 0 && pace_net_rps(pn, rps_cpu))
		goto err;
	return 0;
err:
	pace_net_down(pn);
	return -1;
}

int pace_net_rps(const struct pace_net *pn, int cpu)
{
	if (cpu >= 32)
		return -1;
	return sh_cmd("ip netns exec %s sh -c 'echo %x > /sys/class/net/%s/queues/rx-0/rps_cpus'",
		      pn->ns, cpu < 0 ? 0 : 1u << cpu, pn->ns_if);
}

void pace_net_down(struct pace_net *pn)
{
	if (!pn->up)
		return;
	/* deleting the namespace takes its end of the pair, and the pair */
	sh_cmd("ip netns del %s", pn->ns);
	pn->up = 0;
}

/* --- the receiver -------------------------------------------------------- */

struct pace_rx_shared {
	_Atomic int ready, stop, done;
	int failed;
	uint64_t n, drops;
	uint64_t ts[PACE_RX_MAX];
	uint32_t cnt[PACE_RX_MAX];
};

static void rx_child(struct pace_rx_shared *sh, const struct pace_net *pn, uint16_t port,
		     int cpu)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	static uint8_t data[PACE_RX_BATCH][65536];
	static uint8_t ctl[PACE_RX_BATCH][CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(sizeof(int))];
	struct mmsghdr m[PACE_RX_BATCH];
	struct iovec iov[PACE_RX_BATCH];
	struct timeval tmo = { 0, 100000 };
	int one = 1, rb = 64 << 20, fd, nsfd;
	char path[96];
	cpu_set_t set;

	snprintf(path, sizeof(path), "/run/netns/%s", pn->ns);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	if (nsfd < 0 || setns(nsfd, CLONE_NEWNET))
		goto fail;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	inet_pton(AF_INET, pn->ns_ip, &a.sin_addr);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) || bind(fd, (struct sockaddr *)&a, sizeof(a)))
		goto fail;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rb, sizeof(rb)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	atomic_store(&sh->ready, 1);
	for (;;) {
		int r;

		for (int i = 0; i < PACE_RX_BATCH; i++) {
			iov[i] = (struct iovec){ data[i], sizeof(data[i]) };
			memset(&m[i].msg_hdr, 0, sizeof(m[i].msg_hdr));
			m[i].msg_hdr.msg_iov = &iov[i];
			m[i].msg_hdr.msg_iovlen = 1;
			m[i].msg_hdr.msg_control = ctl[i];
			m[i].msg_hdr.msg_controllen = sizeof(ctl[i]);
		}
		r = recvmmsg(fd, m, PACE_RX_BATCH, MSG_WAITFORONE, NULL);
		if (r <= 0) {
			/* quiet for 100 ms after the sender ended: all in */
			if (atomic_load(&sh->stop))
				break;
			continue;
		}
		for (int i = 0; i < r; i++) {
			struct msghdr *mh = &m[i].msg_hdr;
			uint32_t seg = 0;
			bool have_ts = false;
			struct timespec t;

			for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
				if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
					memcpy(&t, CMSG_DATA(c), sizeof(t));
					have_ts = true;
				} else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
					int v;

					memcpy(&v, CMSG_DATA(c), sizeof(v));
					seg = v > 0 ? (uint32_t)v : 0;
				}
			}
			if (!have_ts || !m[i].msg_len || sh->n >= PACE_RX_MAX)
				continue; /* no timestamp: not counted */
			sh->ts[sh->n] = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
			sh->cnt[sh->n++] = seg && seg < m[i].msg_len ?
						   (m[i].msg_len + seg - 1) / seg : 1;
		}
	}
	{
		uint32_t mi[SK_MEMINFO_VARS];
		socklen_t l = sizeof(mi);

		if (!getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &l) &&
		    l > SK_MEMINFO_DROPS * sizeof(uint32_t))
			sh->drops = mi[SK_MEMINFO_DROPS];
	}
	atomic_store(&sh->done, 1);
	_exit(0);
fail:
	sh->failed = errno ? errno : EINVAL;
	atomic_store(&sh->ready, 1);
	_exit(1);
}

int pace_rx_start(struct pace_rx *r, const struct pace_net *pn, uint16_t port, int cpu)
{
	r->sh = mmap(NULL, sizeof(*r->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	if (r->sh == MAP_FAILED) {
		r->sh = NULL;
		return -1;
	}
	r->pid = fork();
	if (r->pid < 0)
		return -1;
	if (r->pid == 0)
		rx_child(r->sh, pn, port, cpu);
	for (int i = 0; i < 1000 && !atomic_load(&r->sh->ready); i++)
		usleep(10000);
	if (!atomic_load(&r->sh->ready) || r->sh->failed) {
		fprintf(stderr, "vfgx bench send: the pacing receiver in %s could not start: %s\n",
			pn->ns, strerror(r->sh->failed ? r->sh->failed : ETIMEDOUT));
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
		munmap(r->sh, sizeof(*r->sh));
		r->sh = NULL;
		return -1;
	}
	return 0;
}

int pace_rx_stop(struct pace_rx *r, double asked_pps, struct pace_rx_stats *st,
		 uint64_t *drops)
{
	int ret, status = 0;

	atomic_store(&r->sh->stop, 1);
	waitpid(r->pid, &status, 0);
	ret = atomic_load(&r->sh->done) && WIFEXITED(status) && !WEXITSTATUS(status) ?
		      pace_rx_compute(r->sh->ts, r->sh->cnt, r->sh->n, asked_pps, st) : -1;
	*drops = r->sh->drops;
	if (ret && !atomic_load(&r->sh->done))
		memset(st, 0, sizeof(*st));
	munmap(r->sh, sizeof(*r->sh));
	r->sh = NULL;
	return ret;
}
