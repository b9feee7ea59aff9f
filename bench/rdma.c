/* rdma.c - `vfgx bench rdma`: perftest-like write_bw, write_lat, send_bw,
 * send_lat and read_lat over the vfgx_rdma library, and --report, which
 * runs them against perftest (ib_write_bw, ib_write_lat, ib_send_bw,
 * ib_send_lat, ib_read_lat) on the same device, same sizes, same run. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include <vfgx/rdma.h>
#include <vfgx/vfgx.h>

#include "cliopt.h"
#include "commands.h"
#include "results.h"
#include "core/numparse.h"

enum test { WRITE_BW, WRITE_LAT, SEND_BW, SEND_LAT, READ_LAT, NB_TESTS };
static const char *const test_names[] = { "write_bw", "write_lat", "send_bw",
					  "send_lat", "read_lat" };
static const char *const perftest_bin[] = { "ib_write_bw", "ib_write_lat",
					    "ib_send_bw", "ib_send_lat",
					    "ib_read_lat" };
static bool is_bw(enum test t) { return t == WRITE_BW || t == SEND_BW; }

#define TX_DEPTH 128
#define CQ_MOD 100
#define RX_DEPTH 512
#define MAX_INLINE 220
#define SPIN_TIMEOUT_NS (120ull * 1000000000u)
#define LAT_SIGNAL 16 /* latency loops: one signaled WR in 16 */

struct opts {
	enum test test;
	const char *dev, *server;
	int gid;
	uint32_t size, iters;
	uint32_t inline_size; /* -I: send this short inline (perftest's -I) */
	uint16_t port;
	bool rdma_cm;
};

struct run {
	vfgx_ctx *ctx;
	vfgx_rdma_dev *dev;
	vfgx_rdma_qp *qp;
	vfgx_rdma_mr *mr;
	uint8_t *buf; /* [0, size): what we send/write; [size, 2 size): where the peer writes */
	size_t buf_len;
	struct vfgx_rdma_endpoint peer;
	bool client;
};

/* ------------------------------------------------------------ connection */

static int tcp_exchange(const struct opts *o, struct run *r)
{
	struct vfgx_rdma_endpoint me;
	uint8_t out[64], in[64];
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(o->port) };
	int fd, one = 1, s = -1;

	vfgx_rdma_qp_endpoint(r->qp, r->mr, &me);
	/* fixed wire form: big endian fields */
	uint32_t w32[3] = { htonl(me.qpn), htonl(me.psn), htonl(me.rkey) };
	uint64_t w64[2] = { htobe64(me.addr), htobe64(me.len) };
	uint16_t lid = htons(me.lid);

	memset(out, 0, sizeof(out));
	memcpy(out, w32, 12);
	memcpy(out + 12, w64, 16);
	memcpy(out + 28, me.gid, 16);
	memcpy(out + 44, &lid, 2);
	out[46] = me.port;
	out[47] = me.mtu;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (r->client) {
		inet_pton(AF_INET, o->server, &sa.sin_addr);
		for (int i = 0; i < 100; i++) {
			if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
				s = fd;
				break;
			}
			usleep(100000);
			close(fd);
			fd = socket(AF_INET, SOCK_STREAM, 0);
		}
	} else if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		   listen(fd, 1) == 0) {
		s = accept(fd, NULL, NULL);
	}
	if (s < 0) {
		fprintf(stderr, "vfgx bench rdma: tcp exchange on port %u: %s\n",
			o->port, strerror(errno));
		close(fd);
		return -ECONNREFUSED;
	}
	if (write(s, out, 48) != 48 || recv(s, in, 48, MSG_WAITALL) != 48) {
		close(s);
		if (s != fd)
			close(fd);
		return -EIO;
	}
	memcpy(w32, in, 12);
	memcpy(w64, in + 12, 16);
	memcpy(&lid, in + 44, 2);
	r->peer.qpn = ntohl(w32[0]);
	r->peer.psn = ntohl(w32[1]);
	r->peer.rkey = ntohl(w32[2]);
	r->peer.addr = be64toh(w64[0]);
	r->peer.len = be64toh(w64[1]);
	memcpy(r->peer.gid, in + 28, 16);
	r->peer.lid = ntohs(lid);
	r->peer.port = in[46];
	r->peer.mtu = in[47];
	int ret = vfgx_rdma_qp_connect(r->qp, &r->peer);
	char c = 'R';

	/* both sides RTR before anything is sent */
	if (!ret && (write(s, &c, 1) != 1 || read(s, &c, 1) != 1))
		ret = -EIO;
	close(s);
	if (s != fd)
		close(fd);
	return ret;
}

static int setup(const struct opts *o, struct run *r)
{
	struct vfgx_rdma_qp_conf qc = { .argsz = sizeof(qc), .max_send_wr = TX_DEPTH * 2,
					.max_recv_wr = RX_DEPTH,
					.max_inline = MAX_INLINE };
	struct vfgx_rdma_endpoint me = { 0 };
	int ret;

	memset(r, 0, sizeof(*r));
	r->client = o->server != NULL;
	if (vfgx_ctx_create(&r->ctx))
		return -ENOMEM;
	ret = vfgx_rdma_dev_open(r->ctx, o->dev, 1, o->gid, &r->dev);
	if (ret)
		return ret;
	r->buf_len = ((size_t)o->size * 2 + 4095) & ~(size_t)4095;
	r->buf = aligned_alloc(4096, r->buf_len);
	if (!r->buf)
		return -ENOMEM;
	memset(r->buf, 0, r->buf_len);
	ret = vfgx_rdma_reg_mem(r->dev, r->buf, r->buf_len, VFGX_RDMA_ACCESS_ALL,
				&r->mr);
	if (ret)
		return ret;
	me.addr = vfgx_rdma_mr_info(r->mr)->addr;
	me.rkey = vfgx_rdma_mr_info(r->mr)->rkey;
	me.len = r->buf_len;
	if (o->rdma_cm) {
		vfgx_rdma_listener *l;

		if (r->client) {
			for (int i = 0; i < 100; i++) {
				ret = vfgx_rdma_connect(r->dev, o->server, o->port, &qc,
							&me, &r->peer, 10000, &r->qp);
				if (ret != -ECONNREFUSED)
					break;
				usleep(100000);
			}
			return ret;
		}
		ret = vfgx_rdma_listen(r->ctx, NULL, o->port, &l);
		if (ret)
			return ret;
		ret = vfgx_rdma_accept(l, r->dev, &qc, &me, &r->peer, 60000, &r->qp);
		vfgx_rdma_listener_close(l);
		return ret;
	}
	ret = vfgx_rdma_qp_create(r->dev, &qc, &r->qp);
	return ret ? ret : tcp_exchange(o, r);
}

static void teardown(struct run *r)
{
	vfgx_rdma_qp_destroy(r->qp);
	vfgx_rdma_dereg(r->mr);
	free(r->buf);
	vfgx_rdma_dev_close(r->dev);
	vfgx_ctx_destroy(r->ctx);
}

/* ------------------------------------------------------------ hot loops */

/*
 * Timestamps in the hot loops are TSC reads, like perftest's get_cycles(),
 * scaled to ns by a clock_gettime() pair around the whole loop: in the
 * TCG guest the clocksource is hpet and clock_gettime() costs ~1.9 us,
 * which inside a ping-pong iteration showed up as latency.
 */
static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	return vfgx_now_ns();
#endif
}

struct tick_scale {
	uint64_t ns0, tk0;
};

static void tick_start(struct tick_scale *t)
{
	t->ns0 = vfgx_now_ns();
	t->tk0 = ticks();
}

/* ns per tick over the time since tick_start() */
static double tick_ns(const struct tick_scale *t)
{
	uint64_t tk = ticks() - t->tk0, ns = vfgx_now_ns() - t->ns0;

	return tk ? (double)ns / (double)tk : 1.0;
}

/* Spin timeout, checked every 65536 spins (spin 0: every call), so the
 * fast path reads no clock; *since is 0 until the first check. */
static bool spin_expired(unsigned spin, uint64_t *since)
{
	uint64_t now;

	if (spin & 0xffff)
		return false;
	now = vfgx_now_ns();
	if (!*since)
		*since = now;
	return now - *since > SPIN_TIMEOUT_NS;
}

static int reap(struct run *r, bool recv, struct vfgx_rdma_wc *wc, int max)
{
	int n = vfgx_rdma_poll(r->qp, recv, wc, max);

	for (int i = 0; i < n; i++)
		if (wc[i].status) {
			fprintf(stderr, "vfgx bench rdma: completion failed: %s\n",
				vfgx_strerror(wc[i].status));
			return -EIO;
		}
	return n;
}

/* Wait for one receive; repost it.  lazy: sleep between polls (a side that
 * only waits for the end must leave the CPU to the one measuring, as
 * perftest's servers do by blocking on their socket). */
static int wait_recv_mode(struct run *r, uint32_t len, bool lazy)
{
	struct vfgx_rdma_wc wc;
	uint64_t since = 0;
	int n;

	for (unsigned spin = 1; !(n = reap(r, true, &wc, 1)); spin++) {
		if (lazy)
			usleep(2000);
		if (spin_expired(lazy ? 0 : spin, &since))
			return -ETIMEDOUT;
	}
	if (n < 0)
		return n;
	return vfgx_rdma_post_recv(r->qp, r->mr, r->buf + len, len ? len : 1, 0);
}

static int wait_recv(struct run *r, uint32_t len)
{
	return wait_recv_mode(r, len, false);
}

static unsigned inl(const struct opts *o)
{
	return o->size <= o->inline_size ? VFGX_RDMA_INLINE : 0;
}

/* Client: stream iters WRITEs or SENDs, TX_DEPTH in flight, one signaled
 * per CQ_MOD.  Returns elapsed ns, peak ns per CQ_MOD batch in *peak. */
static int64_t bw_client(struct run *r, const struct opts *o, double *peak_ns)
{
	struct vfgx_rdma_wc wc[16];
	struct tick_scale ts;
	uint64_t posted = 0, t0 = vfgx_now_ns(), since = 0, last, done_at;
	double best = 1e30;
	unsigned fl, spin = 0;
	int ret;

	tick_start(&ts);
	last = ts.tk0;
	while (posted < o->iters || vfgx_rdma_qp_outstanding(r->qp)) {
		while (posted < o->iters &&
		       vfgx_rdma_qp_outstanding(r->qp) < TX_DEPTH) {
			fl = ((posted + 1) % CQ_MOD && posted + 1 != o->iters) ?
				     VFGX_RDMA_UNSIGNALED : 0;
			fl |= inl(o);
			ret = o->test == WRITE_BW ?
				      vfgx_rdma_write(r->qp, r->mr, 0, r->peer.addr + o->size,
						      r->peer.rkey, o->size, posted, fl) :
				      vfgx_rdma_post_send(r->qp, r->mr, r->buf, o->size,
							  posted, fl);
			if (ret)
				return ret;
			posted++;
		}
		ret = reap(r, false, wc, 16);
		if (ret < 0)
			return ret;
		if (ret) {
			uint64_t now = ticks();

			if ((double)(now - last) < best)
				best = (double)(now - last);
			last = now;
		}
		if (spin_expired(++spin, &since))
			return -ETIMEDOUT;
	}
	done_at = vfgx_now_ns();
	*peak_ns = best * tick_ns(&ts);
	return (int64_t)(done_at - t0);
}

/* Server of send_bw: take iters receives, polled up to 16 at a time and
 * each re-posted at once, so RX_DEPTH stay outstanding (perftest's
 * run_iter_bw_server). */
static int bw_server(struct run *r, const struct opts *o)
{
	struct vfgx_rdma_wc wc[16];
	uint64_t got = 0, since = 0;
	unsigned spin = 0;
	int n;

	while (got < o->iters) {
		n = reap(r, true, wc, 16);
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			int ret = vfgx_rdma_post_recv(r->qp, r->mr, r->buf + o->size,
						      o->size ? o->size : 1, 0);

			if (ret)
				return ret;
		}
		got += (uint64_t)n;
		if (!n && spin_expired(++spin, &since))
			return -ETIMEDOUT;
	}
	return 0;
}

/* Ping-pong latency: per-iteration one-way time (round trip / 2) for
 * write_lat and send_lat, the round trip for read_lat. */
static int lat_loop(struct run *r, const struct opts *o, double *lat_us)
{
	volatile uint8_t *inbox = r->buf + o->size + o->size - 1;
	struct vfgx_rdma_wc wc[16];
	struct tick_scale ts;
	uint64_t prev;
	double scale;
	int ret;

	tick_start(&ts);
	prev = ts.tk0;
	for (uint32_t i = 1; i <= o->iters; i++) {
		uint8_t tag = (uint8_t)i;
		uint64_t since = 0;
		unsigned spin = 0;

		if (o->test == READ_LAT) {
			uint64_t t0 = ticks();

			ret = vfgx_rdma_read(r->qp, r->mr, 0, r->peer.addr + o->size,
					     r->peer.rkey, o->size, i, 0);
			if (ret)
				return ret;
			while (!(ret = reap(r, false, wc, 1)))
				if (spin_expired(++spin, &since))
					return -ETIMEDOUT;
			if (ret < 0)
				return ret;
			lat_us[i - 1] = (double)(ticks() - t0); /* ticks, scaled below */
			continue;
		}
		bool my_turn = r->client; /* the client speaks first */

		for (int half = 0; half < 2; half++, my_turn = !my_turn) {
			if (my_turn) {
				unsigned fl = inl(o) |
					      (i % LAT_SIGNAL && i != o->iters ? VFGX_RDMA_UNSIGNALED : 0);

				r->buf[o->size - 1] = tag;
				ret = o->test == WRITE_LAT ?
					      vfgx_rdma_write(r->qp, r->mr, 0,
							      r->peer.addr + o->size,
							      r->peer.rkey, o->size, i, fl) :
					      vfgx_rdma_post_send(r->qp, r->mr, r->buf,
								  o->size, i, fl);
				if (ret)
					return ret;
			} else if (o->test == WRITE_LAT) {
				while (*inbox != tag)
					if (spin_expired(++spin, &since))
						return -ETIMEDOUT;
			} else {
				ret = wait_recv(r, o->size);
				if (ret)
					return ret;
			}
		}
		while (vfgx_rdma_qp_outstanding(r->qp) > 2 * LAT_SIGNAL)
			if (reap(r, false, wc, 16) < 0)
				return -EIO;
		uint64_t now = ticks();

		lat_us[i - 1] = (double)(now - prev); /* a round trip, in ticks */
		prev = now;
	}
	/* round trip for read_lat, one way (half the round trip) otherwise */
	scale = tick_ns(&ts) / (o->test == READ_LAT ? 1e3 : 2e3);
	for (uint32_t i = 0; i < o->iters; i++)
		lat_us[i] *= scale;
	return vfgx_rdma_fence(r->qp, 10000);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void print_lat(const struct opts *o, double *lat, double *typical)
{
	double sum = 0, sq = 0, avg, sd;
	uint32_t n = o->iters;

	qsort(lat, n, sizeof(*lat), cmp_double);
	for (uint32_t i = 0; i < n; i++) {
		sum += lat[i];
		sq += lat[i] * lat[i];
	}
	avg = sum / n;
	sd = sqrt(fmax(0, sq / n - avg * avg));
	*typical = lat[n / 2];
	printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
	printf(" %-7u %-10u     %-7.2f        %-7.2f      %-7.2f          %-7.2f        %-7.2f          %-7.2f                 %-7.2f\n",
	       o->size, n, lat[0], lat[n - 1], *typical, avg, sd,
	       lat[(size_t)(n * 0.99)], lat[(size_t)(n * 0.999)]);
}

/* Run one test as server or client; prints perftest-like lines. */
static int run_test(const struct opts *o)
{
	struct run r;
	int ret = setup(o, &r);

	if (ret) {
		fprintf(stderr, "vfgx bench rdma: %s\n",
			r.ctx ? vfgx_last_error(r.ctx) : vfgx_strerror(ret));
		if (r.ctx)
			teardown(&r);
		return 1;
	}
	/* receives: the final "done" message, or the streamed sends */
	for (int i = 0; i < (o->test == SEND_BW ? RX_DEPTH :
			     o->test == SEND_LAT ? RX_DEPTH / 2 : 4); i++)
		if ((ret = vfgx_rdma_post_recv(r.qp, r.mr, r.buf + o->size,
					       o->size ? o->size : 1, 0)))
			goto out;
	if (is_bw(o->test)) {
		if (r.client) {
			double peak = 1e30;
			int64_t ns = bw_client(&r, o, &peak);
			double mb = (double)o->size * o->iters / 1048576.0;

			if (ns < 0) {
				ret = (int)ns;
				goto out;
			}
			printf(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n");
			printf(" %-7u    %-10u       %-7.2f            %-7.2f\t\t   %-7.6f\n",
			       o->size, o->iters,
			       peak < 1e29 ? (double)o->size * CQ_MOD / 1048576.0 / (peak / 1e9) : 0,
			       mb / ((double)ns / 1e9),
			       o->iters * 1e3 / (double)ns);
			if (o->test == WRITE_BW)
				ret = vfgx_rdma_post_send(r.qp, r.mr, r.buf, 0, 0, 0) ?:
				      vfgx_rdma_fence(r.qp, 10000);
			else
				ret = wait_recv(&r, o->size);
		} else if (o->test == WRITE_BW) {
			ret = wait_recv_mode(&r, o->size, true);
		} else {
			ret = bw_server(&r, o);
			if (!ret)
				ret = vfgx_rdma_post_send(r.qp, r.mr, r.buf, 0, 0, 0) ?:
				      vfgx_rdma_fence(r.qp, 10000);
		}
	} else if (o->test == READ_LAT && !r.client) {
		ret = wait_recv_mode(&r, o->size, true);
	} else {
		double *lat = calloc(o->iters, sizeof(*lat)), typ;

		ret = lat ? lat_loop(&r, o, lat) : -ENOMEM;
		if (!ret && r.client)
			print_lat(o, lat, &typ);
		free(lat);
		if (!ret && o->test == READ_LAT)
			ret = vfgx_rdma_post_send(r.qp, r.mr, r.buf, 0, 0, 0) ?:
			      vfgx_rdma_fence(r.qp, 10000);
	}
out:
	if (ret)
		fprintf(stderr, "vfgx bench rdma: %s %s: %s\n", test_names[o->test],
			r.client ? "client" : "server",
			*vfgx_last_error(r.ctx) ? vfgx_last_error(r.ctx) : vfgx_strerror(ret));
	teardown(&r);
	return ret ? 1 : 0;
}

/* ------------------------------------------------------------ --report */

/* Start argv in the background (stdout/err to /dev/null), return its pid. */
static pid_t spawn(char *const *argv)
{
	pid_t pid = fork();

	if (pid == 0) {
		FILE *nul = freopen("/dev/null", "w", stdout);

		(void)nul;
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* Run argv, parse the first data line after the " #bytes" header: the
 * column col (0-based).  Returns the value or -1. */
static double run_parse(char *const *argv, int col)
{
	char cmd[1024] = "", line[1024];
	bool header = false;
	double v = -1;
	FILE *p;

	for (int i = 0; argv[i]; i++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "%s ", argv[i]);
	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "2>&1");
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		if (strstr(line, "#bytes")) {
			header = true;
			continue;
		}
		if (header && v < 0) {
			char *tok = strtok(line, " \t\n");

			for (int c = 0; tok && c < col; c++)
				tok = strtok(NULL, " \t\n");
			if (tok)
				v = atof(tok);
		}
	}
	if (pclose(p) != 0 && v >= 0)
		v = -1;
	return v;
}

static double pair(char **srv, char **cli, int col)
{
	pid_t pid = spawn(srv);
	double v;
	int st;

	usleep(500000);
	v = run_parse(cli, col);
	if (v < 0 && waitpid(pid, &st, WNOHANG) == 0) {
		/* the server was not listening yet (slow start under emulation) */
		sleep(2);
		v = run_parse(cli, col);
	}
	for (int i = 0; i < 100; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return v;
		usleep(100000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return v;
}

/* Bandwidth runs move 32 MiB (at most 20000 messages, at least 20): about
 * a second each under TCG, so a scheduling hiccup of a few tens of ms (a
 * retransmit timer, a host process) stays small against the run, as it
 * was not with the 4 MiB / 2000-message runs that swung 2x per size. */
static uint32_t iters_for(enum test t, uint32_t size)
{
	uint64_t n = is_bw(t) ? (32u << 20) / size : (1u << 20) / size;

	if (is_bw(t))
		return (uint32_t)(n < 20 ? 20 : n > 20000 ? 20000 : n);
	return (uint32_t)(n < 20 ? 20 : n > 1000 ? 1000 : n);
}

#define MAX_ROUNDS 9

/* Median of the successful runs (value >= 0), -1 when none succeeded. */
static double median(double *v, int n)
{
	double ok[MAX_ROUNDS];
	int m = 0;

	for (int i = 0; i < n; i++)
		if (v[i] >= 0)
			ok[m++] = v[i];
	if (!m)
		return -1;
	qsort(ok, (size_t)m, sizeof(*ok), cmp_double);
	return m % 2 ? ok[m / 2] : (ok[m / 2 - 1] + ok[m / 2]) / 2;
}

static int report(const struct opts *o, const char *ip, const char *out,
		  const char *self, int rounds)
{
	static const uint32_t sizes[] = { 64, 1024, 16384, 262144, 1048576 };
	enum { NS = 5 };
	double mine[NB_TESTS][NS], ref[NB_TESTS][NS];
	double raw_m[NB_TESTS][NS][MAX_ROUNDS], raw_r[NB_TESTS][NS][MAX_ROUNDS];
	uint64_t t_start = vfgx_now_ns();
	uint16_t port = 19000;
	char path[512], gid[8], sz[16], it[16], ps[16];
	vfgx_rdma_dev *dev;
	vfgx_ctx *ctx;
	FILE *f;

	if (vfgx_ctx_create(&ctx))
		return 1;
	if (vfgx_rdma_dev_open(ctx, o->dev, 1, o->gid, &dev)) {
		fprintf(stderr, "vfgx bench rdma: %s\n", vfgx_last_error(ctx));
		vfgx_ctx_destroy(ctx);
		return 1;
	}
	snprintf(gid, sizeof(gid), "%d", vfgx_rdma_dev_gid_index(dev));
	char devname[64];

	snprintf(devname, sizeof(devname), "%s", vfgx_rdma_dev_name(dev));
	vfgx_rdma_dev_close(dev);
	vfgx_ctx_destroy(ctx);
	for (int t = 0; t < NB_TESTS; t++)
		for (int s = 0; s < NS; s++) {
			int col = is_bw((enum test)t) ? 3 : 4; /* BW average / t_typical */

			snprintf(sz, sizeof(sz), "%u", sizes[s]);
			snprintf(it, sizeof(it), "%u", iters_for((enum test)t, sizes[s]));
			/* perftest and vfgx, same flags (ps rewritten per run) */
			char *psrv[] = { (char *)perftest_bin[t], "-d", devname, "-x", gid,
					 "-s", sz, "-n", it, "-p", ps, NULL };
			char *pcli[] = { (char *)perftest_bin[t], "-d", devname, "-x", gid,
					 "-s", sz, "-n", it, "-p", ps, (char *)ip, NULL };
			char *vsrv[] = { (char *)self, "bench", "rdma", (char *)test_names[t],
					 "-d", devname, "-x", gid, "-s", sz, "-n", it,
					 "-p", ps, NULL };
			char *vcli[] = { (char *)self, "bench", "rdma", (char *)test_names[t],
					 "-d", devname, "-x", gid, "-s", sz, "-n", it,
					 "-p", ps, (char *)ip, NULL };
			double *rv = raw_r[t][s], *mv = raw_m[t][s];

			/* alternate the two tools, rounds times, perftest first in
			 * even rounds and vfgx first in odd ones; keep medians, so
			 * load from other processes on the host hits both alike */
			for (int k = 0; k < rounds; k++)
				for (int step = 0; step < 2; step++) {
					snprintf(ps, sizeof(ps), "%u", port++);
					if ((step == 0) == (k % 2 == 0))
						rv[k] = pair(psrv, pcli, col);
					else
						mv[k] = pair(vsrv, vcli, col);
				}
			ref[t][s] = median(rv, rounds);
			mine[t][s] = median(mv, rounds);
			printf("%-9s %8u B  vfgx %10.2f  perftest %10.2f %s\n",
			       test_names[t], sizes[s], mine[t][s], ref[t][s],
			       is_bw((enum test)t) ? "MB/s" : "us");
			fflush(stdout);
		}
	f = bench_results_open(out, "rdma",
			       "RDMA verbs: vfgx bench rdma vs perftest on the same soft-RoCE device",
			       path, sizeof(path));
	if (!f)
		return 1;
	fprintf(f, "- command: vfgx bench rdma --report -d %s --ip %s (inside the QEMU/TCG test guest: tests/vm/vm-run.sh -w bench/results -- tests/vm/rxe-env.sh build/src/cli/vfgx bench rdma --report)\n",
		devname, ip);
	fprintf(f, "- method: one rxe device (soft-RoCE on a veth end), server and client processes on it talking through loopback QPs, raw QP exchange over TCP (perftest's default), gid index %s. Each size runs perftest (%s) then vfgx with the same -s/-n/-d/-x. Bandwidth: BW average [MB/s, 2^20]; latency: t_typical (median) [us], one way (round trip / 2) for write/send, the round trip for read, as perftest reports. TCG emulation: absolute numbers are far below hardware, compare ratios only.\n\n",
		gid, "ib_write_bw, ib_write_lat, ib_send_bw, ib_send_lat, ib_read_lat");
	fprintf(f, "- rounds: %d per size, alternating perftest and vfgx (perftest first in odd-numbered rounds, vfgx first in even-numbered ones); the table has the medians (failed runs, e.g. perftest's \"Can't produce a report\" under load, are left out of the median; -1: every round failed); all rounds are listed below the targets\n",
		rounds);
	fprintf(f, "- bandwidth runs move 32 MiB per run (20 .. 20000 messages), latency runs 1 MiB (20 .. 1000 round trips); the whole report took %.0f s\n\n",
		(double)(vfgx_now_ns() - t_start) / 1e9);
	fprintf(f, "| test | bytes | iterations | vfgx | perftest | ratio |\n|---|---|---|---|---|---|\n");
	for (int t = 0; t < NB_TESTS; t++)
		for (int s = 0; s < NS; s++)
			fprintf(f, "| %s | %u | %u | %.2f | %.2f | %.3f |\n", test_names[t],
				sizes[s], iters_for((enum test)t, sizes[s]), mine[t][s],
				ref[t][s], ref[t][s] > 0 ? mine[t][s] / ref[t][s] : 0);
	fprintf(f, "\nTargets use the geometric mean over the sizes of each test (bandwidth >= 95%% of perftest, latency <= 105%%).\n\n");
	for (int t = 0; t < NB_TESTS; t++) {
		double lm = 0, lr = 0;
		bool ok = true;
		char name[64];

		for (int s = 0; s < NS; s++) {
			ok = ok && mine[t][s] > 0 && ref[t][s] > 0;
			lm += log(mine[t][s] > 0 ? mine[t][s] : 1e-9);
			lr += log(ref[t][s] > 0 ? ref[t][s] : 1e-9);
		}
		lm = exp(lm / NS);
		lr = exp(lr / NS);
		if (!ok)
			fprintf(f, "(%s: a run failed, see the table: value -1)\n", test_names[t]);
		snprintf(name, sizeof(name), "rdma_%s_%s", test_names[t],
			 is_bw((enum test)t) ? "mbps" : "usec");
		bench_target(f, name, lm, lr, is_bw((enum test)t) ? 0.95 * lr : 1.05 * lr,
			     is_bw((enum test)t));
	}
	fprintf(f, "\nAll rounds (vfgx / perftest; -1: failed run):\n\n| test | bytes |");
	for (int k = 0; k < rounds; k++)
		fprintf(f, " round %d |", k + 1);
	fprintf(f, "\n|---|---|");
	for (int k = 0; k < rounds; k++)
		fprintf(f, "---|");
	fprintf(f, "\n");
	for (int t = 0; t < NB_TESTS; t++)
		for (int s = 0; s < NS; s++) {
			fprintf(f, "| %s | %u |", test_names[t], sizes[s]);
			for (int k = 0; k < rounds; k++)
				fprintf(f, " %.2f / %.2f |", raw_m[t][s][k], raw_r[t][s][k]);
			fprintf(f, "\n");
		}
	fclose(f);
	printf("wrote %s\n", path);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: vfgx bench rdma TEST [-d dev] [-x gid_index] [-s size] [-n iterations] [-p port] [-I inline_size] [--rdma_cm] [server_ip]\n"
		   "       vfgx bench rdma --report [-d dev] [-x gid_index] --ip IP [--rounds N] [--out DIR]\n"
		   "TEST: write_bw write_lat send_bw send_lat read_lat; without server_ip: server\n");
}

static const struct cli_opt rdma_opts[] = {
	{ "dev", 'd', "DEV", "RDMA device" },
	{ "gid-index", 'x', "N", "GID index" },
	{ "size", 's', "BYTES", "message size, 1..1G" },
	{ "iters", 'n', "N", "iterations, 1..1e8" },
	{ "port", 'p', "PORT", "TCP port of the out-of-band exchange" },
	{ "inline", 'I', "BYTES", "inline size" },
	{ "rdma_cm", 'R', NULL, "connect through rdma_cm" },
	{ "report", 'r', NULL, "run every test against perftest and write rdma.md" },
	{ "ip", 'i', "IP", "with --report: the address of the device's netdev" },
	{ "out", 'o', "DIR", "write rdma.md and rdma.svg into DIR (default bench/results)" },
	{ "rounds", 'N', "N", "with --report: rounds" },
	{ "json", 'j', NULL, "the results file as one JSON document on stdout (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_bench_cli_rdma = {
	.name = "bench rdma", .operands = "[TEST [server_ip]]",
	.summary = "verbs tests against perftest",
	.opts = rdma_opts,
};

int vfgx_bench_rdma(int argc, char **argv)
{
	struct opts o = { .gid = -1, .size = 65536, .iters = 1000, .port = 18515,
			  .inline_size = UINT32_MAX };
	const char *ip = NULL, *out = "bench/results";
	bool rep = false;
	int rounds = 3;
	char self[512];
	int c;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_bench_cli_rdma)) != -1) {
		switch (c) {
		case 'd': o.dev = optarg; break;
		case 'x':
			if (vfgx_flag_int("bench rdma", "-x", optarg, 0, 255, &o.gid))
				return 2;
			break;
		case 's':
			if (vfgx_flag_u32("bench rdma", "-s", optarg, 1, 1u << 30, &o.size))
				return 2;
			break;
		case 'n':
			if (vfgx_flag_u32("bench rdma", "-n", optarg, 1, 100000000, &o.iters))
				return 2;
			break;
		case 'p': {
			uint32_t port;

			if (vfgx_flag_u32("bench rdma", "-p", optarg, 1, 65535, &port))
				return 2;
			o.port = (uint16_t)port;
			break;
		}
		case 'I':
			if (vfgx_flag_u32("bench rdma", "-I", optarg, 0, MAX_INLINE, &o.inline_size))
				return 2;
			break;
		case 'R': o.rdma_cm = true; break;
		case 'r': rep = true; break;
		case 'i': ip = optarg; break;
		case 'o': out = optarg; break;
		case 'N':
			if (vfgx_flag_int("bench rdma", "--rounds", optarg, 1, MAX_ROUNDS, &rounds))
				return 2;
			break;
		case 'h': usage(stdout); cli_usage(stdout, &vfgx_bench_cli_rdma); return 0;
		default: return 2;
		}
	}
	if (o.size < 1 || o.size > (1u << 30) || o.iters < 1 || o.iters > 100000000) {
		fprintf(stderr, "vfgx bench rdma: -s must be 1..1G and -n 1..1e8\n");
		return 2;
	}
	if (rep) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (!ip || n <= 0) {
			fprintf(stderr, "vfgx bench rdma --report: needs --ip (the address of the device's netdev)\n");
			return 2;
		}
		self[n] = 0;
		return report(&o, ip, out, self, rounds);
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (o.test = 0; o.test < NB_TESTS; o.test++)
		if (!strcmp(argv[optind], test_names[o.test]))
			break;
	if (o.test == NB_TESTS) {
		fprintf(stderr, "vfgx bench rdma: unknown test '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (optind + 1 < argc)
		o.server = argv[optind + 1];
	/* perftest's defaults: inline for the latency tests only */
	if (o.inline_size == UINT32_MAX)
		o.inline_size = is_bw(o.test) || o.test == READ_LAT ? 0 : MAX_INLINE;
	if (o.test == WRITE_LAT && o.size < 2)
		o.size = 2;
	return run_test(&o);
}
