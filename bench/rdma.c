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
#include "guest_targets.h"
#include "results.h"

enum test { WRITE_BW, WRITE_LAT, SEND_BW, SEND_LAT, READ_LAT, NB_TESTS };
static const char *const test_names[] = { "write_bw", "write_lat", "send_bw",
					  "send_lat", "read_lat" };
static const char *const perftest_bin[] = { "ib_write_bw", "ib_write_lat",
					    "ib_send_bw", "ib_send_lat",
					    "ib_read_lat" };
static bool is_bw(enum test t) { return t == WRITE_BW || t == SEND_BW; }

#define TX_DEPTH 128
/* Bandwidth loops signal one WR in cq_mod.  perftest's default: 100 up to
 * 8 KiB, every WR above (perftest_parameters.c: MSG_SIZE_CQ_MOD_LIMIT,
 * DISABLED_CQ_MOD_VALUE); --report passes that value as -Q to both tools. */
#define CQ_MOD 100
#define CQ_MOD_LIMIT 8192
#define RX_DEPTH 512
#define MAX_INLINE 220
#define SPIN_TIMEOUT_NS (120ull * 1000000000u)

struct opts {
	enum test test;
	const char *dev, *server;
	int gid;
	uint32_t size, iters;
	uint32_t inline_size; /* -I: send this short inline (perftest's -I) */
	uint32_t cq_mod;      /* -Q: bandwidth loops signal one WR in cq_mod */
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
 * per cq_mod.  Returns elapsed ns, peak ns per cq_mod batch in *peak. */
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
			fl = ((posted + 1) % o->cq_mod && posted + 1 != o->iters) ?
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
			double per = (double)(now - last) / ret; /* per signaled WR */

			if (per < best)
				best = per;
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
				/* as perftest's latency tests (tx depth 1, so
				 * cq_mod 1): every WR signaled, and its completion
				 * polled from the send CQ before going on */
				r->buf[o->size - 1] = tag;
				ret = o->test == WRITE_LAT ?
					      vfgx_rdma_write(r->qp, r->mr, 0,
							      r->peer.addr + o->size,
							      r->peer.rkey, o->size, i, inl(o)) :
					      vfgx_rdma_post_send(r->qp, r->mr, r->buf,
								  o->size, i, inl(o));
				if (ret)
					return ret;
				while (!(ret = reap(r, false, wc, 1)))
					if (spin_expired(++spin, &since))
						return -ETIMEDOUT;
				if (ret < 0)
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
			       peak < 1e29 ? (double)o->size * o->cq_mod / 1048576.0 / (peak / 1e9) : 0,
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
	char cmd[1024] = "", line[1024], last[2][256] = { "", "" };
	bool header = false;
	double v = -1;
	int st;
	FILE *p;

	for (int i = 0; argv[i]; i++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "%s ", argv[i]);
	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "2>&1");
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		snprintf(last[0], sizeof(last[0]), "%s", last[1]);
		snprintf(last[1], sizeof(last[1]), "%s", line);
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
	st = pclose(p);
	if (st != 0 || v < 0) {
		/* say why: the results file counts it as a failed round */
		fprintf(stderr, "vfgx bench rdma: no result from `%s` (status %d): %s%s", cmd, st,
			last[0], last[1]);
		v = -1;
	}
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

#define MAX_ROUNDS 15
#define NS 4
/* the size classes the targets are on: small <= 4 KiB, large >= 64 KiB,
 * each by its two ends (10 rounds of 5 tests x 4 sizes x 2 tools take
 * about 22 minutes in the TCG guest) */
static const uint32_t sizes[NS] = { 64, 4096, 65536, 1048576 };
#define SMALL_MAX 4096u
#define LARGE_MIN 65536u

/* perftest's default signalling for bandwidth tests at this size */
static uint32_t cq_mod_for(uint32_t size)
{
	return size > CQ_MOD_LIMIT ? 1 : CQ_MOD;
}

/* one (test, size): per round the vfgx and the perftest value, -1 failed */
struct cell {
	double m[MAX_ROUNDS], r[MAX_ROUNDS];
};

/* The rounds where both tools gave a finite value, appended to m[]/r[]
 * from *n. */
static void ok_pairs(const struct cell *c, int rounds, double *m, double *r, int *n)
{
	/* perftest prints "inf" when its clock failed: not a value */
	for (int k = 0; k < rounds; k++)
		if (c->m[k] > 0 && c->r[k] > 0 && isfinite(c->m[k]) && isfinite(c->r[k])) {
			m[*n] = c->m[k];
			r[*n] = c->r[k];
			(*n)++;
		}
}

/* argv of one run: perftest's binary or `vfgx-bench rdma TEST`, the same
 * flags for both; client when ip is given */
static void build_argv(char **av, bool vfgx, const char *self, enum test t,
		       const char *dev, const char *gid, const char *sz,
		       const char *it, const char *q, const char *ps, const char *ip)
{
	int n = 0;

	if (vfgx) {
		av[n++] = (char *)self;
		av[n++] = "rdma";
		av[n++] = (char *)test_names[t];
	} else {
		av[n++] = (char *)perftest_bin[t];
	}
	av[n++] = "-d"; av[n++] = (char *)dev;
	av[n++] = "-x"; av[n++] = (char *)gid;
	av[n++] = "-s"; av[n++] = (char *)sz;
	av[n++] = "-n"; av[n++] = (char *)it;
	if (is_bw(t)) {
		av[n++] = "-Q";
		av[n++] = (char *)q;
	}
	av[n++] = "-p"; av[n++] = (char *)ps;
	if (ip)
		av[n++] = (char *)ip;
	av[n] = NULL;
}

static void write_report(FILE *f, const char *devname, const char *ip,
			 const char *gid, int rounds, struct cell (*cells)[NS],
			 double secs, double load0, double load1)
{
	static const char *const cls[2] = { "small", "large" };
	const char *host = getenv("VFGX_BENCH_HOST_LOAD");
	char b1[96], b2[96];

	fprintf(f, "- command: vfgx bench rdma --report -d %s --ip %s --rounds %d (inside the QEMU/TCG test guest: tests/vm/rdma-bench.sh)\n",
		devname, ip, rounds);
	fprintf(f, "- load: guest 1-minute load average %.2f at the start, %.2f at the end; host (2 cores shared with other work) %s\n",
		load0, load1, host ? host : "not given");
	fprintf(f, "- method: one rxe device (soft-RoCE on a veth end), server and client processes on it talking through loopback QPs, raw QP exchange over TCP (perftest's default), gid index %s. Each size runs perftest (ib_write_bw, ib_write_lat, ib_send_bw, ib_send_lat, ib_read_lat) and vfgx with the same -s/-n/-d/-x. Bandwidth: BW average [MB/s, 2^20]; latency: t_typical (median) [us], one way (round trip / 2) for write/send, the round trip for read, as perftest reports. TCG emulation: absolute numbers are far below hardware, compare ratios only.\n",
		gid);
	fprintf(f, "- signalling (bandwidth tests): both tools get the same `-Q` (--cq-mod), the value perftest uses by default: one signaled WR in %d up to %d bytes, every WR above (perftest disables CQ moderation for messages over 8 KiB). vfgx honours -Q the same way (one signaled WR in Q, and the last).\n",
		CQ_MOD, CQ_MOD_LIMIT);
	fprintf(f, "- signalling (latency tests): the same as perftest's. perftest's latency tests run with a send queue depth of 1, which caps its CQ moderation at 1: every WR is signaled and its completion polled from the send CQ right after the post, before the next step. vfgx does the same (every WR signaled, its completion polled at once). Arrival: write_lat polls the last byte of the peer's WRITE in memory (perftest's poll_buf), send_lat polls the receive CQ, read_lat polls the send CQ for the READ's completion, in both tools.\n");
	fprintf(f, "- rounds: %d per size, perftest and vfgx alternating (perftest first in odd-numbered rounds, vfgx first in even-numbered ones); a round where either tool failed (e.g. perftest's \"Can't produce a report\" under load, or a latency of inf when its clock calibration failed) is left out of that size's ratios (-1 in the rounds table); bandwidth runs move 32 MiB (20 .. 20000 messages), latency runs 1 MiB (20 .. 1000 round trips); the whole report took %.0f s\n",
		rounds, secs);
	fprintf(f, "- targets: one per test and size, each from that size's own paired rounds (the ratio vfgx/perftest per round, its median and interval); sizes are never pooled, since rounds of different sizes are not independent repeats of one quantity. Goal: bandwidth >= 0.95 of perftest, latency <= 1.05. A size class, small (<= %u B: ", SMALL_MAX);
	for (int s = 0; s < NS && sizes[s] <= SMALL_MAX; s++)
		fprintf(f, "%s%u", s ? ", " : "", sizes[s]);
	fprintf(f, ") or large (>= %u B: ", LARGE_MIN);
	for (int s = 0, first = 1; s < NS; s++)
		if (sizes[s] >= LARGE_MIN) {
			fprintf(f, "%s%u", first ? "" : ", ", sizes[s]);
			first = 0;
		}
	fprintf(f, "), is met only when every size in it is met on its own interval; the classes are summed up after the table.\n");
	fprintf(f, "- rule: %s\n\n", bench_ci_rule);
	fprintf(f, "| test | bytes | iterations | -Q | vfgx median (min..max) | perftest median (min..max) | ratio median | ratio interval | rounds |\n|---|---|---|---|---|---|---|---|---|\n");
	for (int t = 0; t < NB_TESTS; t++)
		for (int s = 0; s < NS; s++) {
			double m[MAX_ROUNDS], r[MAX_ROUNDS], q[MAX_ROUNDS];
			struct bench_stat st;
			int n = 0;

			ok_pairs(&cells[t][s], rounds, m, r, &n);
			for (int i = 0; i < n; i++)
				q[i] = m[i] / r[i];
			if (!n || bench_stat(q, n, &st)) {
				fprintf(f, "| %s | %u | %u | %s | - | - | - | - | 0 |\n", test_names[t],
					sizes[s], iters_for((enum test)t, sizes[s]),
					is_bw((enum test)t) ? "" : "-");
				continue;
			}
			fprintf(f, "| %s | %u | %u | ", test_names[t], sizes[s],
				iters_for((enum test)t, sizes[s]));
			if (is_bw((enum test)t))
				fprintf(f, "%u", cq_mod_for(sizes[s]));
			else
				fprintf(f, "-");
			fprintf(f, " | %s | %s | %.3f | [%.3f, %.3f] | %d |\n",
				bench_fmt_spread(b1, sizeof(b1), "%.2f", m, n),
				bench_fmt_spread(b2, sizeof(b2), "%.2f", r, n),
				st.median, st.lo, st.hi, n);
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
				fprintf(f, " %.2f / %.2f |", cells[t][s].m[k], cells[t][s].r[k]);
			fprintf(f, "\n");
		}
	fprintf(f, "\n");
	/* each size's target, into a buffer first: the class lines above
	 * them say which sizes met */
	char *tl = NULL;
	size_t tl_len = 0;
	FILE *tf = open_memstream(&tl, &tl_len);
	int met[NB_TESTS][NS];

	for (int t = 0; t < NB_TESTS; t++)
		for (int s = 0; s < NS; s++) {
			double m[MAX_ROUNDS], r[MAX_ROUNDS];
			bool bw = is_bw((enum test)t);
			char name[64];
			int n = 0;

			ok_pairs(&cells[t][s], rounds, m, r, &n);
			snprintf(name, sizeof(name), "rdma_%s_%uB_%s", test_names[t], sizes[s],
				 bw ? "mbps" : "usec");
			/* a round counts where both vfgx and perftest gave a
			 * result; with none the line says met=no, not measured */
			met[t][s] = bench_target_rounds(tf ? tf : f, &(struct bench_target_rounds){
				.name = name, .measured = m, .reference = r, .n = n,
				.goal = bw ? 0.95 : 1.05, .goal_on_ratio = true,
				.higher_better = bw });
		}
	if (tf)
		fclose(tf);
	fprintf(f, "Size classes (met only when every size in the class met its own target):\n\n");
	for (int t = 0; t < NB_TESTS; t++)
		for (int c = 0; c < 2; c++) {
			int in[NS], k = 0;

			fprintf(f, "- %s %s:", test_names[t], cls[c]);
			for (int s = 0; s < NS; s++)
				if (c == 0 ? sizes[s] <= SMALL_MAX : sizes[s] >= LARGE_MIN) {
					fprintf(f, " %u B %s;", sizes[s],
						met[t][s] == 1 ? "met" : met[t][s] == 0 ? "not met" : "not measured");
					in[k++] = met[t][s];
				}
			fprintf(f, " class %s\n", bench_class_met(in, k) ? "met" : "not met");
		}
	fprintf(f, "\n");
	if (tl)
		fputs(tl, f);
	free(tl);
}

static int report(const struct opts *o, const char *ip, const char *out,
		  const char *self, int rounds)
{
	static struct cell cells[NB_TESTS][NS];
	uint64_t t_start = vfgx_now_ns();
	double load0 = bench_loadavg1();
	uint16_t port = 19000;
	char path[512], gid[8], sz[16], it[16], q[16], ps[16], devname[64];
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
	snprintf(devname, sizeof(devname), "%s", vfgx_rdma_dev_name(dev));
	vfgx_rdma_dev_close(dev);
	vfgx_ctx_destroy(ctx);
	for (int t = 0; t < NB_TESTS; t++)
		for (int s = 0; s < NS; s++) {
			int col = is_bw((enum test)t) ? 3 : 4; /* BW average / t_typical */
			char *psrv[20], *pcli[20], *vsrv[20], *vcli[20];
			struct cell *c = &cells[t][s];
			struct bench_stat st;
			double qr[MAX_ROUNDS], mm[MAX_ROUNDS], rr[MAX_ROUNDS];
			int n = 0;

			snprintf(sz, sizeof(sz), "%u", sizes[s]);
			snprintf(it, sizeof(it), "%u", iters_for((enum test)t, sizes[s]));
			snprintf(q, sizeof(q), "%u", cq_mod_for(sizes[s]));
			/* perftest and vfgx, same flags (ps rewritten per run) */
			build_argv(psrv, false, self, (enum test)t, devname, gid, sz, it, q, ps, NULL);
			build_argv(pcli, false, self, (enum test)t, devname, gid, sz, it, q, ps, ip);
			build_argv(vsrv, true, self, (enum test)t, devname, gid, sz, it, q, ps, NULL);
			build_argv(vcli, true, self, (enum test)t, devname, gid, sz, it, q, ps, ip);
			/* alternate the two tools, perftest first in even rounds
			 * and vfgx first in odd ones, so load from other processes
			 * on the host hits both alike */
			for (int k = 0; k < rounds; k++)
				for (int step = 0; step < 2; step++) {
					snprintf(ps, sizeof(ps), "%u", port++);
					if ((step == 0) == (k % 2 == 0))
						c->r[k] = pair(psrv, pcli, col);
					else
						c->m[k] = pair(vsrv, vcli, col);
				}
			ok_pairs(c, rounds, mm, rr, &n);
			for (int i = 0; i < n; i++)
				qr[i] = mm[i] / rr[i];
			if (n && !bench_stat(qr, n, &st))
				printf("%-9s %8u B  vfgx %10.2f  perftest %10.2f %s  ratio %.3f [%.3f, %.3f] (%d rounds)\n",
				       test_names[t], sizes[s], bench_median(mm, n),
				       bench_median(rr, n), is_bw((enum test)t) ? "MB/s" : "us",
				       st.median, st.lo, st.hi, n);
			else
				printf("%-9s %8u B  every round failed\n", test_names[t], sizes[s]);
			fflush(stdout);
		}
	f = bench_results_open(out, "rdma",
			       "RDMA verbs: vfgx bench rdma vs perftest on the same soft-RoCE device",
			       path, sizeof(path));
	if (!f)
		return 1;
	write_report(f, devname, ip, gid, rounds, cells,
		     (double)(vfgx_now_ns() - t_start) / 1e9, load0, bench_loadavg1());
	fclose(f);
	printf("wrote %s\n", path);
	return 0;
}

static const struct cli_opt rdma_opts[] = {
	{ "dev", 'd', "DEV", "RDMA device" },
	{ "gid-index", 'x', "N", "GID index" },
	{ "size", 's', "BYTES", "message size, 1..1G" },
	{ "iters", 'n', "N", "iterations, 1..1e8" },
	{ "port", 'p', "PORT", "TCP port of the out-of-band exchange" },
	{ "inline", 'I', "BYTES", "inline size" },
	{ "cq-mod", 'Q', "N", "bandwidth tests: one signaled WR in N (default perftest's: 100 up to 8 KiB, 1 above)" },
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
	.more = "forms:\n"
		"  vfgx bench rdma TEST [-d dev] [-x gid_index] [-s size] [-n iterations] [-p port] [-I inline_size] [-Q cq_mod] [--rdma_cm] [server_ip]\n"
		"  vfgx bench rdma --report [-d dev] [-x gid_index] --ip IP [--rounds N] [--out DIR]\n"
		"TEST: write_bw write_lat send_bw send_lat read_lat; without server_ip: server\n",
};

int vfgx_bench_rdma(int argc, char **argv)
{
	struct opts o = { .gid = -1, .size = 65536, .iters = 1000, .port = 18515,
			  .inline_size = UINT32_MAX };
	const char *ip = NULL, *out = "bench/results";
	bool rep = false;
	int rounds = 10;
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
		case 'Q':
			if (vfgx_flag_u32("bench rdma", "-Q", optarg, 1, TX_DEPTH, &o.cq_mod))
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
		case 'h': cli_usage(stdout, &vfgx_bench_cli_rdma); return 0;
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
		if (bench_out_check(out, "rdma"))
			return 1;
		return report(&o, ip, out, self, rounds);
	}
	if (optind >= argc)
		return cli_bad_operands(&vfgx_bench_cli_rdma,
					"which test? write_bw write_lat send_bw send_lat read_lat, or --report");
	for (o.test = 0; o.test < NB_TESTS; o.test++)
		if (!strcmp(argv[optind], test_names[o.test]))
			break;
	if (o.test == NB_TESTS) {
		fprintf(stderr, "vfgx bench rdma: unknown test '%s' (write_bw write_lat send_bw send_lat read_lat)\n",
			cli_esc(argv[optind]));
		return 2;
	}
	if (optind + 1 < argc)
		o.server = argv[optind + 1];
	/* perftest's defaults: inline for the latency tests only */
	if (o.inline_size == UINT32_MAX)
		o.inline_size = is_bw(o.test) || o.test == READ_LAT ? 0 : MAX_INLINE;
	if (!o.cq_mod)
		o.cq_mod = cq_mod_for(o.size);
	if (o.test == WRITE_LAT && o.size < 2)
		o.size = 2;
	return run_test(&o);
}
