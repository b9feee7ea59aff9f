/* socket_tcp.c - `vfgx bench socket`'s TCP rows: message rate one way
 * (a sockperf tp pair vs a vfgx client port -> vfgx server port) and
 * ping-pong (sockperf pp vs a vfgx client and an echoing vfgx server). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/socket.h>
#include <vfgx/vfgx.h>

#include "socket_priv.h"

struct tcp_side {
	vfgx_port *port;
	uint32_t size;
	double secs;
	_Atomic bool stop;
	uint64_t count;
	double elapsed;
	int err;
};

/* One-way: send records of `size` bytes for `secs`, then close. */
static void *tcp_sender(void *arg)
{
	struct tcp_side *ts = arg;
	uint8_t *buf = calloc(1, ts->size);

	sb_pin(0, sb_cpu_send);
	struct vfgx_pkt pk[64];
	uint64_t t0 = vfgx_now_ns(), end = t0 + (uint64_t)(ts->secs * 1e9);
	/* ONE record per call, so one send() per record, as sockperf tp does
	 * one send() per message: the same records per system call */
	uint16_t burst = 1;

	for (int i = 0; i < 64; i++)
		pk[i] = (struct vfgx_pkt){ .data = buf, .len = ts->size };
	while (vfgx_now_ns() < end) {
		int n = vfgx_port_tx_burst(ts->port, 0, pk, burst);

		if (n < 0) {
			ts->err = n;
			break;
		}
		ts->count += (uint64_t)n;
		if (n < burst)
			sched_yield();
	}
	while (!ts->err && vfgx_socket_tx_pending(ts->port, 0))
		sched_yield();
	ts->elapsed = (double)(vfgx_now_ns() - t0) / 1e9;
	atomic_store(&ts->stop, true);
	free(buf);
	return NULL;
}

/* Echo every record back on the connection it came from. */
static void *tcp_echo(void *arg)
{
	struct tcp_side *ts = arg;
	struct vfgx_pkt pk[64];

	sb_pin(0, sb_cpu_recv);
	while (!atomic_load(&ts->stop)) {
		int n = vfgx_port_rx_burst(ts->port, 0, pk, 64), off = 0;

		if (n <= 0) {
			if (n < 0 || vfgx_port_rx_done(ts->port, 0))
				break;
			vfgx_socket_wait(ts->port, 0, -1);
			continue;
		}
		while (off < n && !atomic_load(&ts->stop)) {
			int w = vfgx_port_tx_burst(ts->port, 0, pk + off,
						   (uint16_t)(n - off));

			if (w < 0) {
				ts->err = w;
				break;
			}
			off += w;
		}
		vfgx_port_release(ts->port, 0, pk, (uint16_t)n);
		ts->count += (uint64_t)n;
		if (ts->err)
			break;
		/* the next one: block in recv() without a timeout, as sockperf
		 * does (a timed wait arms a kernel timer every time); the
		 * client's close ends it */
		vfgx_socket_wait(ts->port, 0, -1);
	}
	return NULL;
}

int sb_sockperf_tcp(uint16_t port, uint32_t size, double secs,
			bool pp, double *rate)
{
	char ps[16], ms[16], ts[16];
	/* -m: the server's largest message (its default is a UDP datagram) */
	char *srv[] = { "sockperf", "sr", "--tcp", "-i", "127.0.0.1", "-p", ps,
			"-m", "262144", NULL };
	char *cli[] = { "sockperf", pp ? "pp" : "tp", "--tcp", "-i", "127.0.0.1",
			"-p", ps, "-m", ms, "-t", ts, NULL };
	struct proc_out *s = calloc(1, sizeof(*s)), *c = calloc(1, sizeof(*c));
	int ret = -1;

	snprintf(ps, sizeof(ps), "%u", port);
	snprintf(ms, sizeof(ms), "%u", size);
	snprintf(ts, sizeof(ts), "%g", secs);
	if (!s || !c || sb_spawn_on(s, srv, sb_cpu_recv))
		goto out;
	if (!sb_wait_bound(port, true) || sb_spawn_on(c, cli, sb_cpu_send)) {
		sb_finish(s, SIGINT);
		goto out;
	}
	sb_finish(c, 0);
	sb_finish(s, SIGINT);
	if (pp) {
		/* round trips in the measured part (after sockperf's warm-up) */
		const char *v = strstr(c->buf, "[Valid Duration]");
		double t = v ? sb_find_num(v, "RunTime=") : -1;
		double n = v ? sb_find_num(v, "ReceivedMessages=") : -1;

		*rate = t > 0 && n >= 0 ? n / t : -1;
	} else {
		/* what the server received over the client's sending time */
		double got = sb_find_num(s->buf, "Total ");
		double t = sb_find_num(c->buf, "messages sent in ");

		*rate = got >= 0 && t > 0 ? got / t : -1;
	}
	if (*rate < 0)
		fprintf(stderr, "vfgx bench socket: sockperf output not understood:\n%s\n%s\n",
			c->buf, s->buf);
	else
		ret = 0;
out:
	free(s);
	free(c);
	return ret;
}

int sb_vfgx_tcp(vfgx_ctx *ctx, uint16_t port, uint32_t size, double secs,
		    bool pp, double *rate)
{
	struct vfgx_socket_opts so;
	char addr[64];
	struct tcp_side srv = { 0 }, cli = { 0 };
	struct vfgx_pkt pk[64];
	vfgx_port *sp, *cp = NULL;
	pthread_t th;
	int ret = -1;

	snprintf(addr, sizeof(addr), "tcp://127.0.0.1:%u", port);
	vfgx_socket_opts_default(&so);
	so.max_record = size < 2048 ? 2048 : size;
	sp = sb_open_port(ctx, addr, &so, 1, 1);
	if (!sp)
		return -1;
	so.role = VFGX_SOCKET_CLIENT;
	cp = sb_open_port(ctx, addr, &so, 1, 1);
	if (!cp)
		goto out;
	if (!pp) {
		uint64_t got = 0;

		cli = (struct tcp_side){ .port = cp, .size = size, .secs = secs };
		sb_pin(0, sb_cpu_recv); /* this thread receives */
		pthread_create(&th, NULL, tcp_sender, &cli);
		for (;;) {
			int n = vfgx_port_rx_burst(sp, 0, pk, 64);

			if (n > 0) {
				got += (uint64_t)n;
				vfgx_port_release(sp, 0, pk, (uint16_t)n);
				continue;
			}
			if (n < 0)
				break;
			if (atomic_load(&cli.stop) && (got >= cli.count || cli.err))
				break;
			vfgx_socket_wait(sp, 0, 10);
		}
		pthread_join(th, NULL);
		*rate = cli.elapsed > 0 && !cli.err ? (double)got / cli.elapsed : -1;
		ret = *rate > 0 ? 0 : -1;
		goto out;
	}
	srv = (struct tcp_side){ .port = sp };
	sb_pin(0, sb_cpu_send); /* this thread is the client */
	pthread_create(&th, NULL, tcp_echo, &srv);
	{
		uint8_t *buf = calloc(1, size);
		struct vfgx_pkt out = { .data = buf, .len = size };
		uint64_t t0 = 0, n = 0, warm = vfgx_now_ns() + 200000000ull;
		uint64_t end = warm + (uint64_t)(secs * 1e9);

		for (;;) {
			uint64_t now = vfgx_now_ns();
			int r;

			if (!t0 && now >= warm) {
				t0 = now;
				n = 0;
			}
			if (now >= end)
				break;
			while ((r = vfgx_port_tx_burst(cp, 0, &out, 1)) == 0)
				sched_yield();
			if (r < 0)
				break;
			/* block like sockperf pp does, rather than spin,
			 * and without a timeout, as it does */
			do
				vfgx_socket_wait(cp, 0, -1);
			while ((r = vfgx_port_rx_burst(cp, 0, pk, 64)) == 0);
			if (r < 0)
				break;
			vfgx_port_release(cp, 0, pk, (uint16_t)r);
			n += (uint64_t)r;
		}
		*rate = t0 ? (double)n / ((double)(vfgx_now_ns() - t0) / 1e9) : -1;
		free(buf);
	}
	atomic_store(&srv.stop, true);
	vfgx_port_close(cp); /* wakes the echo thread's recv() */
	cp = NULL;
	pthread_join(th, NULL);
	ret = *rate > 0 && !srv.err ? 0 : -1;
out:
	sb_unpin();
	vfgx_port_close(cp);
	vfgx_port_close(sp);
	if (ret)
		fprintf(stderr, "vfgx bench socket: vfgx tcp %s %u B failed: %s\n",
			pp ? "pp" : "tp", size, vfgx_last_error(ctx));
	return ret;
}

