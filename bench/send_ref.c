/* send_ref.c - the same-syscall UDP sender loop and the trafgen run that
 * `vfgx bench send` sets beside `vfgx send` (send_ref.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "send_ref.h"

#define REF_MAX_BURST 64

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* The child's loop: what vfgx's socket port does with a burst of equal
 * datagrams (src/port/socket_udp.c, sk_udp_tx_gso), minus the library
 * around it.  Writes datagrams/s to wfd. */
static void ref_child(int wfd, const char *ip, uint16_t port, uint32_t payload,
		      uint32_t burst, int sndbuf, double secs)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	union {
		struct cmsghdr align;
		uint8_t b[CMSG_SPACE(sizeof(uint16_t))];
	} ctl;
	static uint8_t pkt[REF_MAX_BURST][2048], gso[REF_MAX_BURST * 2048];
	struct mmsghdr m = { 0 };
	struct iovec iov = { gso, (size_t)payload * burst };
	struct cmsghdr *c;
	uint64_t sent = 0, seq = 0, t0, end, t1;
	uint16_t s16 = (uint16_t)payload;
	int fd = socket(AF_INET, SOCK_DGRAM, 0), got = 0, zero = 0;
	socklen_t l = sizeof(got);
	double rate;

	pin(-1);
	inet_pton(AF_INET, ip, &a.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		_exit(1);
	/* the port's sk_set_buf: ask, and as root force what was refused */
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &got, &l);
	if (got < sndbuf)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf));
	if (setsockopt(fd, SOL_UDP, UDP_SEGMENT, &zero, sizeof(zero))) {
		fprintf(stderr, "vfgx bench send: reference loop: no UDP GSO in this kernel\n");
		_exit(1);
	}
	memset(pkt, 0x5a, sizeof(pkt));
	m.msg_hdr.msg_iov = &iov;
	m.msg_hdr.msg_iovlen = 1;
	m.msg_hdr.msg_control = ctl.b;
	m.msg_hdr.msg_controllen = sizeof(ctl.b);
	c = CMSG_FIRSTHDR(&m.msg_hdr);
	c->cmsg_level = SOL_UDP;
	c->cmsg_type = UDP_SEGMENT;
	c->cmsg_len = CMSG_LEN(sizeof(s16));
	memcpy(CMSG_DATA(c), &s16, sizeof(s16));
	t0 = now_ns();
	end = t0 + (uint64_t)(secs * 1e9);
	while (now_ns() < end) {
		int r;

		/* copy 1: each datagram built into its own buffer (its
		 * sequence set); copy 2: into the GSO buffer */
		for (uint32_t i = 0; i < burst; i++) {
			uint64_t s = seq + i;

			memcpy(pkt[i] + 8, &s, sizeof(s));
			memcpy(gso + (size_t)i * payload, pkt[i], payload);
		}
		r = sendmmsg(fd, &m, 1, MSG_DONTWAIT);
		if (r == 1) {
			sent += burst;
			seq += burst;
		} else if (r < 0 && errno != EAGAIN && errno != ENOBUFS &&
			   errno != ECONNREFUSED) {
			_exit(1);
		}
	}
	t1 = now_ns();
	rate = (double)sent / ((double)(t1 - t0) / 1e9);
	if (write(wfd, &rate, sizeof(rate)) != sizeof(rate))
		_exit(1);
	_exit(0);
}

double send_ref_udp(int cpu, const char *ip, uint16_t port, uint32_t payload,
		    uint32_t burst, int sndbuf, double secs)
{
	double rate = -1;
	int p[2], st = 0;
	pid_t pid;

	if (burst > REF_MAX_BURST || payload > 2048 || payload < 16 || pipe(p))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[0]);
		pin(cpu);
		ref_child(p[1], ip, port, payload, burst, sndbuf, secs);
	}
	close(p[1]);
	if (read(p[0], &rate, sizeof(rate)) != sizeof(rate))
		rate = -1;
	close(p[0]);
	waitpid(pid, &st, 0);
	if (rate <= 0)
		fprintf(stderr, "vfgx bench send: the same-syscall reference loop failed (status %d)\n",
			st);
	return rate;
}

double send_ref_trafgen(int cpu, const char *tmpdir, const char *dev, const uint8_t dmac[6],
			const uint8_t smac[6], const char *sip, const char *dip, uint16_t port,
			uint32_t payload, double secs)
{
	char cfg[256], cmd[1024], out[8192];
	unsigned s[4], d[4];
	const char *p;
	size_t n = 0, r;
	FILE *f;

	if (sscanf(sip, "%u.%u.%u.%u", &s[0], &s[1], &s[2], &s[3]) != 4 ||
	    sscanf(dip, "%u.%u.%u.%u", &d[0], &d[1], &d[2], &d[3]) != 4)
		return -1;
	snprintf(cfg, sizeof(cfg), "%s/trafgen.cfg", tmpdir);
	f = fopen(cfg, "w");
	if (!f)
		return -1;
	/* Ethernet, IPv4 (its checksum by trafgen), UDP without a checksum
	 * (0: none, valid for IPv4), payload */
	fprintf(f, "{\n  0x%02x,0x%02x,0x%02x,0x%02x,0x%02x,0x%02x, 0x%02x,0x%02x,0x%02x,0x%02x,0x%02x,0x%02x, c16(0x0800),\n",
		dmac[0], dmac[1], dmac[2], dmac[3], dmac[4], dmac[5],
		smac[0], smac[1], smac[2], smac[3], smac[4], smac[5]);
	fprintf(f, "  0x45, 0x00, c16(%u), c16(0), c16(0x4000), 64, 17, csumip(14, 33),\n",
		payload + 28);
	fprintf(f, "  %u, %u, %u, %u, %u, %u, %u, %u,\n", s[0], s[1], s[2], s[3], d[0], d[1],
		d[2], d[3]);
	fprintf(f, "  c16(40000), c16(%u), c16(%u), c16(0),\n  fill(0x5a, %u)\n}\n", port,
		payload + 8, payload);
	if (fclose(f))
		return -1;
	/* as its users run it: one process (-P 1) on the measured CPU, the
	 * TX ring (its default), IRQ affinity left alone (-Q) */
	snprintf(cmd, sizeof(cmd), "timeout -s INT %g taskset -c %d trafgen -o %s -i %s -P 1 -Q 2>&1",
		 secs, cpu, dev, cfg);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (n + 1 < sizeof(out) && (r = fread(out + n, 1, sizeof(out) - 1 - n, f)) > 0)
		n += r;
	out[n] = '\0';
	pclose(f);
	/* "N packets outgoing ... S sec, U usec on CPU0" */
	p = strstr(out, "packets outgoing");
	if (p) {
		const char *q = p;
		unsigned long long pk, sec, usec;

		while (q > out && q[-1] != '\n' && q[-1] != '\r')
			q--;
		p = strstr(p, " sec, ");
		if (sscanf(q, "%llu", &pk) == 1 && p) {
			while (p > out && p[-1] != '\n' && p[-1] != '\r')
				p--;
			if (sscanf(p, "%llu sec, %llu usec", &sec, &usec) == 2 &&
			    sec * 1000000ull + usec > 0)
				return (double)pk / ((double)sec + (double)usec / 1e6);
		}
	}
	fprintf(stderr, "vfgx bench send: trafgen output not understood:\n%s\n", out);
	return -1;
}
