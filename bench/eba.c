/* eba.c - `vfgx bench eba`: exposed-buffer message ring throughput and
 * message rate for 64 B, 4 KiB, 64 KiB and 1 MiB messages between two
 * processes on one RDMA device, against perftest's ib_write_bw on the same
 * device and a TCP socket pair with length-prefixed framing, all measured
 * in the same run.  Run it where a (soft-)RoCE device exists:
 * tests/vm/eba/bench.sh does so in the QEMU guest. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <vfgx/eba.h>
#include "vfgx_build.h"

#include "cliopt.h"
#include "commands.h"
#include "results.h"
#include "core/numparse.h"

static const struct cli_opt eba_opts[] = {
	{ "dev", 'd', "DEV", "RDMA device (default rxe0)" },
	{ "addr", 'a', "IP", "the device's IPv4 address (default 198.18.74.1)" },
	{ "out", 'o', "DIR", "write eba.md and eba.svg into DIR (default bench/results)" },
	{ "seconds", 's', "S", "seconds per round (default 1)" },
	{ "rounds", 'r', "N", "rounds (default 5)" },
	{ "consume", 'c', "SIZE:PORT:FD", "internal: the ring consumer process" },
	{ "json", 'j', NULL, "the results file as one JSON document on stdout (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_bench_cli_eba = {
	.name = "bench eba",
	.summary = "exposed-buffer ring vs ib_write_bw vs TCP (needs an RDMA device with an IPv4 address and perftest)",
	.opts = eba_opts,
};

#if VFGX_HAVE_RDMA

#define TMO 30000
#define NB_SIZES 4
#define MAX_ROUNDS 15

struct opts {
	const char *dev, *addr, *out;
	double seconds;
	uint16_t port;
	int rounds;
};

struct meas {
	double bytes_s, msgs_s;
	uint64_t msgs;
};

static int rd_all(int fd, void *b, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = read(fd, (uint8_t *)b + got, n - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static uint64_t ring_bytes(uint32_t size)
{
	return size * 16ull > (4u << 20) ? size * 16ull : 4u << 20;
}

/* child: expose a ring, count messages until the zero-length end marker */
static int ring_consumer(const struct opts *o, uint32_t size, uint16_t port,
			 int ready_fd)
{
	uint64_t rb = ring_bytes(size), n = 0;
	uint8_t *buf = aligned_alloc(4096, rb + 4096);
	struct vfgx_eba_desc mine, theirs;
	struct vfgx_ring_consumer c;
	vfgx_rdma_listener *l;
	vfgx_rdma_dev *dev;
	vfgx_rdma_mr *mr;
	vfgx_rdma_qp *qp;
	vfgx_ctx *ctx;

	if (!buf || vfgx_ctx_create(&ctx))
		return 1;
	if (vfgx_ring_consumer_init(&c, buf, rb, (_Atomic uint64_t *)(buf + rb)) ||
	    vfgx_rdma_dev_open(ctx, o->dev, 1, -1, &dev) ||
	    vfgx_rdma_reg_mem(dev, buf, rb + 64, VFGX_RDMA_ACCESS_REMOTE_WRITE |
			      VFGX_RDMA_ACCESS_REMOTE_READ, &mr) ||
	    vfgx_rdma_listen(ctx, o->addr, port, &l))
		goto fail;
	if (write(ready_fd, "r", 1) != 1 ||
	    vfgx_rdma_accept(l, dev, NULL, NULL, NULL, TMO, &qp) ||
	    vfgx_eba_desc_from_mr(mr, qp, 2, 1, VFGX_EBA_RX, rb, 60, &mine) ||
	    vfgx_eba_exchange(qp, &mine, &theirs, TMO))
		goto fail;
	for (;;) {
		const void *m;
		uint32_t len;
		int r = vfgx_ring_peek(&c, &m, &len);

		if (r < 0)
			goto fail;
		if (!r) {
			/* nothing yet: leave the CPU to rxe's kernel threads
			 * (two vCPUs, three busy parties otherwise) */
			sched_yield();
			continue;
		}
		vfgx_ring_release(&c);
		if (!len)
			break;
		if (len != size)
			goto fail;
		n++;
	}
	if (write(ready_fd, &n, 8) != 8)
		goto fail;
	/* until the producer hangs up */
	for (int i = 0; i < 50; i++) {
		struct vfgx_rdma_wc wc;

		if (vfgx_rdma_wait(qp, true, &wc, 1, 100) == -ECONNRESET)
			break;
	}
	return 0;
fail:
	fprintf(stderr, "vfgx bench eba: consumer: %s\n", vfgx_last_error(ctx));
	return 1;
}

static int ring_producer(vfgx_ctx *ctx, const struct opts *o, uint32_t size,
			 uint16_t port, struct meas *m)
{
	uint8_t *buf = aligned_alloc(4096, size + 4096ull);
	struct vfgx_eba_desc mine, theirs;
	vfgx_rdma_dev *dev = NULL;
	vfgx_rdma_mr *mr = NULL;
	vfgx_rdma_qp *qp = NULL;
	vfgx_channel *ch = NULL;
	uint64_t t0, t1, n = 0;
	int ret = -1;

	if (!buf)
		return -ENOMEM;
	memset(buf, 0x5A, size);
	if (vfgx_rdma_dev_open(ctx, o->dev, 1, -1, &dev) ||
	    vfgx_rdma_reg_mem(dev, buf, size + 4096ull, 0, &mr) ||
	    vfgx_rdma_connect(dev, o->addr, port, NULL, NULL, NULL, TMO, &qp) ||
	    vfgx_eba_desc_from_mr(mr, qp, 1, 0, VFGX_EBA_TX, VFGX_EBA_NO_STATE, 60, &mine) ||
	    vfgx_eba_exchange(qp, &mine, &theirs, TMO) ||
	    vfgx_channel_open(qp, &theirs, mr, &ch) ||
	    vfgx_channel_ring_init(ch, theirs.state_off))
		goto out;
	/* the source never changes, so it is sent again without fencing */
	t0 = vfgx_now_ns();
	do {
		for (int i = 0; i < 16; i++, n++)
			if (vfgx_channel_ring_send(ch, buf, size, false, TMO))
				goto out;
	} while (vfgx_now_ns() - t0 < (uint64_t)(o->seconds * 1e9));
	if (vfgx_channel_ring_send(ch, buf, 0, false, TMO) ||
	    vfgx_channel_ring_drain(ch, TMO))
		goto out;
	t1 = vfgx_now_ns();
	m->msgs = n;
	m->msgs_s = (double)n / ((double)(t1 - t0) / 1e9);
	m->bytes_s = m->msgs_s * size;
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "vfgx bench eba: producer %u B: %s\n", size, vfgx_last_error(ctx));
	vfgx_channel_close(ch);
	if (qp)
		vfgx_rdma_qp_destroy(qp);
	if (mr)
		vfgx_rdma_dereg(mr);
	if (dev)
		vfgx_rdma_dev_close(dev);
	free(buf);
	return ret;
}

static int run_ring(vfgx_ctx *ctx, const struct opts *o, uint32_t size,
		    uint16_t port, struct meas *m)
{
	int p[2], st;
	uint64_t got = 0;
	char r;
	pid_t pid;
	int ret;

	if (pipe(p))
		return -errno;
	pid = fork();
	if (pid == 0) {
		/* a fresh image: librdmacm's process-wide device state must not be
		 * inherited across fork */
		char arg[64];

		close(p[0]);
		snprintf(arg, sizeof(arg), "%u:%u:%d", size, port, p[1]);
		/* /proc/self/exe is vfgx-bench: NAME [OPTIONS] */
		execl("/proc/self/exe", "vfgx-bench", "eba", "--dev", o->dev, "--addr",
		      o->addr, "--consume", arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	if (pid < 0 || rd_all(p[0], &r, 1)) {
		close(p[0]);
		return -ECHILD;
	}
	ret = ring_producer(ctx, o, size, port, m);
	if (!ret && (rd_all(p[0], &got, 8) || got != m->msgs)) {
		fprintf(stderr, "vfgx bench eba: consumer counted %" PRIu64 " of %" PRIu64 " messages\n",
			got, m->msgs);
		ret = -EIO;
	}
	close(p[0]);
	if (ret)
		kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return ret;
}

/* perftest ib_write_bw on the same device: server child, client parsed.
 * Both run under timeout(1): on rxe in an emulated guest a run sometimes
 * hangs, so it is retried; -ETIMEDOUT when every try failed. */
static int ib_write_bw_once(const struct opts *o, uint32_t size, uint16_t port,
			    uint64_t iters, struct meas *m)
{
	char cmd[512], line[512], sz[16], it[24], pt[16];
	pid_t pid;
	FILE *f;
	int st, ret = -ETIMEDOUT;

	snprintf(sz, sizeof(sz), "%u", size);
	snprintf(it, sizeof(it), "%" PRIu64, iters);
	snprintf(pt, sizeof(pt), "%u", port);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execlp("timeout", "timeout", "45", "ib_write_bw", "-d", o->dev, "-R", "-s", sz,
		       "-n", it, "-p", pt, (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -errno;
	usleep(1500000); /* the server's listen */
	snprintf(cmd, sizeof(cmd), "timeout 40 ib_write_bw -d %s -R -s %s -n %s -p %s %s 2>&1",
		 o->dev, sz, it, pt, o->addr);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long b, n;
		double peak, avg, mpps;

		if (sscanf(line, "%llu %llu %lf %lf %lf", &b, &n, &peak, &avg, &mpps) == 5 &&
		    b == size && mpps > 0) {
			m->msgs = n;
			m->msgs_s = mpps * 1e6;
			m->bytes_s = m->msgs_s * size; /* unit-free: from the message rate */
			ret = 0;
		}
	}
	if (f)
		pclose(f);
	waitpid(pid, &st, 0);
	return ret;
}

static int run_ib_write_bw(const struct opts *o, uint32_t size, uint16_t port,
			   uint64_t iters, struct meas *m, int *tries)
{
	for (*tries = 1; *tries <= 3; (*tries)++) {
		if (!ib_write_bw_once(o, size, (uint16_t)(port + 20 * (*tries - 1)), iters, m))
			return 0;
		fprintf(stderr, "vfgx bench eba: ib_write_bw %u B: no result (hung or failed), try %d of 3\n",
			size, *tries);
	}
	memset(m, 0, sizeof(*m));
	return -ETIMEDOUT;
}

/* the stream model: TCP on 127.0.0.1, [u32 length | payload] frames that
 * the receiver must reassemble into its own buffer */
static int run_tcp(const struct opts *o, uint32_t size, struct meas *m)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	uint8_t *buf = malloc(size);
	uint64_t n = 0, got = 0, t0, t1;
	int ls, fd, st;
	pid_t pid;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (!buf || ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(ls, 1) || getsockname(ls, (struct sockaddr *)&a, &al))
		return -errno;
	pid = fork();
	if (pid == 0) {
		int c = accept(ls, NULL, NULL);
		uint32_t len;
		uint64_t cnt = 0;

		while (c >= 0 && !rd_all(c, &len, 4) && len != UINT32_MAX) {
			if (len > size || rd_all(c, buf, len))
				_exit(1);
			cnt++;
		}
		_exit(c >= 0 && write(c, &cnt, 8) == 8 ? 0 : 1);
	}
	close(ls);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (pid < 0 || fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return -errno;
	memset(buf, 0x5A, size);
	t0 = vfgx_now_ns();
	do {
		for (int i = 0; i < 16; i++, n++) {
			uint32_t len = size;
			struct iovec iov[2] = { { &len, 4 }, { buf, size } };
			size_t left = 4 + (size_t)size;
			int k = 0;

			while (left) {
				ssize_t w = writev(fd, iov + k, 2 - k);

				if (w <= 0)
					return -EIO;
				left -= (size_t)w;
				while (k < 2 && (size_t)w >= iov[k].iov_len) {
					w -= (ssize_t)iov[k].iov_len;
					k++;
				}
				if (k < 2) {
					iov[k].iov_base = (uint8_t *)iov[k].iov_base + w;
					iov[k].iov_len -= (size_t)w;
				}
			}
		}
	} while (vfgx_now_ns() - t0 < (uint64_t)(o->seconds * 1e9));
	{
		uint32_t end = UINT32_MAX;

		if (write(fd, &end, 4) != 4 || rd_all(fd, &got, 8))
			return -EIO;
	}
	t1 = vfgx_now_ns();
	close(fd);
	waitpid(pid, &st, 0);
	free(buf);
	if (got != n)
		return -EIO;
	m->msgs = n;
	m->msgs_s = (double)n / ((double)(t1 - t0) / 1e9);
	m->bytes_s = m->msgs_s * size;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of the n values v[i] > 0 (failed runs are 0); 0 when none. */
static double median(const double *v, int n)
{
	double ok[MAX_ROUNDS];
	int m = 0;

	for (int i = 0; i < n; i++)
		if (v[i] > 0)
			ok[m++] = v[i];
	if (!m)
		return 0;
	qsort(ok, (size_t)m, sizeof(*ok), cmp_double);
	return m % 2 ? ok[m / 2] : (ok[m / 2 - 1] + ok[m / 2]) / 2;
}

static uint64_t ib_iters(uint64_t ring_msgs)
{
	return ring_msgs < 20 ? 20 : ring_msgs > 100000 ? 100000 : ring_msgs;
}


int vfgx_bench_eba(int argc, char **argv)
{
	static const uint32_t sizes[NB_SIZES] = { 64, 4096, 65536, 1 << 20 };
	struct opts o = { .dev = "rxe0", .addr = "198.18.74.1", .out = "bench/results",
			  .seconds = 1, .port = 7480, .rounds = 5 };
	/* per size and round: ring and ib_write_bw MB/s and msg/s (0: failed) */
	double ring_mb[NB_SIZES][MAX_ROUNDS], ring_mr[NB_SIZES][MAX_ROUNDS];
	double ib_mb[NB_SIZES][MAX_ROUNDS], ib_mr[NB_SIZES][MAX_ROUNDS];
	uint64_t ib_n[NB_SIZES][MAX_ROUNDS];
	struct meas tcp[NB_SIZES];
	int ib_fail[NB_SIZES] = { 0 };
	uint16_t port;
	char path[512];
	vfgx_ctx *ctx;
	FILE *f;
	int c;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_bench_cli_eba)) != -1) {
		switch (c) {
		case 'c': {
			/* internal: the ring consumer process, SIZE:PORT:FD */
			unsigned sz, pt;
			int fd;

			if (sscanf(optarg, "%u:%u:%d", &sz, &pt, &fd) != 3)
				return 2;
			return ring_consumer(&o, sz, (uint16_t)pt, fd);
		}
		case 'd': o.dev = optarg; break;
		case 'a': o.addr = optarg; break;
		case 'o': o.out = optarg; break;
		case 's':
			if (vfgx_flag_double("bench eba", "--seconds", optarg, 0, 60, &o.seconds))
				return 2;
			if (o.seconds <= 0) {
				fprintf(stderr, "vfgx bench eba: --seconds must be 0..60\n");
				return 2;
			}
			break;
		case 'r':
			if (vfgx_flag_int("bench eba", "--rounds", optarg, 1, MAX_ROUNDS, &o.rounds))
				return 2;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_bench_cli_eba);
			return 0;
		default:
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (vfgx_ctx_create(&ctx))
		return 1;
	port = o.port;
	for (int i = 0; i < NB_SIZES; i++) {
		uint64_t n = 0;

		fprintf(stderr, "vfgx bench eba: %u B ...\n", sizes[i]);
		/* the two alternate, ring first in even rounds and last in odd
		 * ones, so a load change on the host hits both alike; perftest
		 * moves as many messages as the ring's last run did */
		for (int k = 0; k < o.rounds; k++) {
			struct meas r = { 0 }, b = { 0 };
			int tries;

			for (int step = 0; step < 2; step++) {
				if ((step == 0) == (k % 2 == 0)) {
					if (run_ring(ctx, &o, sizes[i], port++, &r)) {
						fprintf(stderr, "vfgx bench eba: %u B failed\n", sizes[i]);
						vfgx_ctx_destroy(ctx);
						return 1;
					}
					n = r.msgs;
				} else {
					if (!n)
						continue; /* odd round 0 cannot happen */
					ib_n[i][k] = ib_iters(n);
					if (run_ib_write_bw(&o, sizes[i], port, ib_n[i][k], &b, &tries))
						ib_fail[i]++;
					port += 60;
				}
			}
			ring_mb[i][k] = r.bytes_s / 1e6;
			ring_mr[i][k] = r.msgs_s;
			ib_mb[i][k] = b.bytes_s / 1e6;
			ib_mr[i][k] = b.msgs_s;
			printf("%8u B round %d: ring %9.1f MB/s %9.0f msg/s | ib_write_bw %9.1f MB/s %9.0f msg/s\n",
			       sizes[i], k + 1, ring_mb[i][k], ring_mr[i][k], ib_mb[i][k], ib_mr[i][k]);
			fflush(stdout);
		}
		if (run_tcp(&o, sizes[i], &tcp[i])) {
			fprintf(stderr, "vfgx bench eba: TCP %u B failed\n", sizes[i]);
			vfgx_ctx_destroy(ctx);
			return 1;
		}
	}
	vfgx_ctx_destroy(ctx);
	f = bench_results_open(o.out, "eba", "Exposed-buffer message ring vs ib_write_bw vs TCP framing",
			       path, sizeof(path));
	if (!f)
		return 1;
	fprintf(f, "- command: vfgx bench eba --dev %s --addr %s --seconds %g --rounds %d (tests/vm/eba/bench.sh)\n",
		o.dev, o.addr, o.seconds, o.rounds);
	fprintf(f, "- method: per size, %d rounds of (1) the message ring for %g s: a producer process sends records with vfgx_channel_ring_send (per record one post list of two RDMA WRITEs, payload then the 8-byte inline header, one doorbell; one write in 32 signaled; an RDMA READ of the head word posted without waiting once credit falls below half the ring, waited for only when a record does not fit) into a ring of max(4 MiB, 16 x size) exposed by a consumer process that peeks and releases every record (sched_yield when none is there); time from the first send until the head word shows everything consumed; and (2) perftest `ib_write_bw -R -n N` on the same device with N = the message count of the ring's run in that round (20..100000), bandwidth from its message rate x size. The two alternate (ring first in odd-numbered rounds, ib_write_bw first in even-numbered ones) so host load changes hit both; the table has the medians over the rounds, the ratio is median / median. (3) once per size, TCP on 127.0.0.1 for %g s: [u32 length | payload] frames written with writev, read back into one buffer by a receiver process, timed until the receiver acknowledges the count. MB = 10^6 bytes.\n\n",
		o.rounds, o.seconds, o.seconds);
	fprintf(f, "| size B | ring MB/s | ring msg/s | ib_write_bw MB/s | ib_write_bw msg/s | ring/ib | TCP MB/s | TCP msg/s | ring/TCP |\n|---|---|---|---|---|---|---|---|---|\n");
	double rm[NB_SIZES], im[NB_SIZES];

	for (int i = 0; i < NB_SIZES; i++) {
		rm[i] = median(ring_mb[i], o.rounds);
		im[i] = median(ib_mb[i], o.rounds);
		fprintf(f, "| %u | %.1f | %.0f | %.1f | %.0f | %.3f | %.1f | %.0f | %.3f |\n",
			sizes[i], rm[i], median(ring_mr[i], o.rounds), im[i],
			median(ib_mr[i], o.rounds), im[i] > 0 ? rm[i] / im[i] : 0,
			tcp[i].bytes_s / 1e6, tcp[i].msgs_s,
			tcp[i].bytes_s > 0 ? rm[i] / (tcp[i].bytes_s / 1e6) : 0);
	}
	fprintf(f, "\nAll rounds, MB/s (ring / ib_write_bw, its -n; 0: ib_write_bw gave no result after 3 tries):\n\n| size B |");
	for (int k = 0; k < o.rounds; k++)
		fprintf(f, " round %d |", k + 1);
	fprintf(f, "\n|---|");
	for (int k = 0; k < o.rounds; k++)
		fprintf(f, "---|");
	fprintf(f, "\n");
	for (int i = 0; i < NB_SIZES; i++) {
		fprintf(f, "| %u |", sizes[i]);
		for (int k = 0; k < o.rounds; k++)
			fprintf(f, " %.1f / %.1f (-n %" PRIu64 ") |", ring_mb[i][k], ib_mb[i][k], ib_n[i][k]);
		fprintf(f, "\n");
	}
	fprintf(f, "\n");
	for (int i = 0; i < NB_SIZES; i++)
		if (ib_fail[i])
			fprintf(f, "- ib_write_bw %u B: no result in %d of %d rounds (hung or failed 3 times; left out of the median)\n",
				sizes[i], ib_fail[i], o.rounds);
	fprintf(f, "\n");
	bench_target(f, "eba_ring_64KB_vs_ib_write_bw_MBps", rm[2], im[2], 0.9 * im[2], true);
	bench_target(f, "eba_ring_1MB_vs_ib_write_bw_MBps", rm[3], im[3], 0.9 * im[3], true);
	fclose(f);
	printf("wrote %s\n", path);
	return 0;
}

#else

int vfgx_bench_eba(int argc, char **argv)
{
	int c;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_bench_cli_eba)) != -1) {
		if (c != 'h')
			return 2;
		cli_usage(stdout, &vfgx_bench_cli_eba);
		return 0;
	}
	fprintf(stderr, "vfgx bench eba: this build has no rdma-core (libibverbs, librdmacm); install them and rebuild\n");
	return 1;
}

#endif
