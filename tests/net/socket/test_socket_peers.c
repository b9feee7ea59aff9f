/* test_socket_peers.c - the socket backend against peers that misbehave,
 * with real kernel sockets on loopback (a private network namespace when
 * root): replies reach only the connection a record came from, also after
 * other connections closed and their slots were reused; idle connections
 * cannot lock others out (connection limit, refusals counted, idle
 * timeout); a new connection is accepted on the next receive call; a
 * record both too big and cut by a close is counted once; one UDP stream
 * arriving on two queues of two workers is delivered once, in order, on
 * one thread.
 *
 * usage: test_socket_peers
 * Exit 0 pass, 1 fail. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/socket.h>
#include <vfgx/stages.h>
#include <vfgx/vfgx.h>

#include "sk_test.h"

static int failures;
static vfgx_ctx *ctx;




static vfgx_port *tcp_server(const char *keys, struct vfgx_config **cfg)
{
	char y[512];
	vfgx_port *p;
	int err;

	snprintf(y, sizeof(y), "interfaces:\n  - backend: socket\n    address: tcp://127.0.0.1:0\n"
		 "    socket: {%s}\n", keys);
	p = sk_open_port(ctx, y, 1, 1, cfg, &err);
	CHECK(p, "open server {%s}: %s", keys, vfgx_last_error(ctx));
	return p;
}

/* A plain blocking client with a receive timeout (a missing reply fails
 * the test instead of hanging it). */
static int tcp_client(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 10 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		CHECK(0, "connect: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* One record: 4-byte length, then `len` bytes of `id`. */
static void send_record(int fd, uint8_t id, uint32_t len)
{
	uint8_t b[4 + 64];

	vfgx_wr32(b, len);
	memset(b + 4, id, len);
	CHECK(send(fd, b, 4 + len, MSG_NOSIGNAL) == (ssize_t)(4 + len),
	      "client send: %s", strerror(errno));
}

/* The next record on fd; its first byte, or -1 (closed, timeout). */
static int recv_record(int fd)
{
	uint8_t b[4 + 64];
	ssize_t got = 0, r;

	while (got < 4 + 8) {
		r = recv(fd, b + got, (size_t)(4 + 8 - got), 0);
		if (r <= 0)
			return -1;
		got += r;
	}
	return b[4];
}

static void ms_sleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Receive on the server until `want` records are held or a deadline. */
static int rx_until(vfgx_port *sp, struct vfgx_pkt *pk, int have, int want)
{
	uint64_t end = vfgx_now_ns() + 10ull * 1000000000ull;

	while (have < want && vfgx_now_ns() < end) {
		int n = vfgx_port_rx_burst(sp, 0, pk + have, (uint16_t)(want - have));

		CHECK(n >= 0, "server rx: %s", vfgx_last_error(ctx));
		if (n < 0)
			break;
		have += n;
		if (!n)
			ms_sleep(2);
	}
	return have;
}

/* n clients that send nothing, each accepted before the next connects (so
 * slots follow connect order); the server must hand out no record.
 * -1 when a client cannot connect. */
static int connect_quiet(vfgx_port *sp, int *fd, int n, const char *what)
{
	struct vfgx_pkt pk[64];

	for (int i = 0; i < n; i++) {
		int r;

		fd[i] = tcp_client(sk_port_of(sp));
		if (fd[i] < 0)
			return -1;
		ms_sleep(3);
		r = vfgx_port_rx_burst(sp, 0, pk, 64);
		CHECK(r == 0, "%s: rx %d after client %d connected, before any was sent", what, r, i);
		if (r > 0)
			vfgx_port_release(sp, 0, pk, (uint16_t)r);
	}
	return 0;
}

/* Four clients each send a record; client 0 closes.  Replies with each
 * record's flow reach its own client; client 0's reply is -ENOTCONN, also
 * after a new client took the freed slot. */
static void test_reply_identity(void)
{
	const char *what = "tcp reply identity";
	struct vfgx_config *cfg = NULL;
	struct vfgx_pkt pk[16], one;
	struct vfgx_socket_info si;
	int fd[5], n = 0, r;
	uint32_t flow0 = 0;
	vfgx_port *sp;

	sp = tcp_server("idle_timeout_ms: 0", &cfg);
	if (!sp)
		return;
	if (connect_quiet(sp, fd, 4, what) < 0)
		goto out;
	vfgx_socket_info(sp, &si);
	CHECK(si.conns == 4, "%s: %u connections accepted, want 4", what, si.conns);
	for (int i = 0; i < 4; i++)
		send_record(fd[i], (uint8_t)('A' + i), 8);
	close(fd[0]);
	/* all four records, and client 0's close */
	for (uint64_t end = vfgx_now_ns() + 10ull * 1000000000ull;
	     vfgx_now_ns() < end && (n < 4 || si.closed < 1);) {
		r = vfgx_port_rx_burst(sp, 0, pk + n, (uint16_t)(16 - n));
		CHECK(r >= 0, "%s: rx: %s", what, vfgx_last_error(ctx));
		if (r < 0)
			break;
		n += r;
		vfgx_socket_info(sp, &si);
		if (!r)
			ms_sleep(1);
	}
	CHECK(n == 4 && si.closed == 1, "%s: %d records, %u closed", what, n, si.closed);
	if (n != 4)
		goto out;
	/* reply to every record on its own connection */
	for (int i = 0; i < n; i++) {
		int id = pk[i].data[0] - 'A';

		r = vfgx_port_tx_burst(sp, 0, &pk[i], 1);
		if (id == 0) {
			flow0 = pk[i].flow;
			CHECK(r == -ENOTCONN, "%s: reply to the closed client 0 gave %d, want -ENOTCONN",
			      what, r);
			CHECK(strstr(vfgx_last_error(ctx), "gone"), "%s: message: %s", what,
			      vfgx_last_error(ctx));
		} else {
			CHECK(r == 1, "%s: reply to client %d: %d (%s)", what, id, r,
			      vfgx_last_error(ctx));
		}
	}
	for (int i = 1; i < 4; i++) {
		r = recv_record(fd[i]);
		CHECK(r == 'A' + i, "%s: client %d got the reply meant for %c", what, i,
		      r < 0 ? '-' : r);
	}
	/* a newcomer takes the freed slot: the old flow still names nobody */
	fd[4] = tcp_client(sk_port_of(sp));
	if (fd[4] < 0)
		goto out_rel;
	send_record(fd[4], 'E', 8);
	ms_sleep(3);
	r = rx_until(sp, &one, 0, 1);
	CHECK(r == 1 && one.data[0] == 'E', "%s: newcomer's record not received", what);
	vfgx_socket_info(sp, &si);
	CHECK(si.conns == 4, "%s: %u connections, want 4", what, si.conns);
	for (int i = 0; i < n; i++)
		if (pk[i].data[0] == 'A')
			CHECK(vfgx_port_tx_burst(sp, 0, &pk[i], 1) == -ENOTCONN,
			      "%s: stale flow %#x sent to the connection in its slot", what, flow0);
	if (r == 1) {
		CHECK(vfgx_port_tx_burst(sp, 0, &one, 1) == 1, "%s: echo to newcomer: %s", what,
		      vfgx_last_error(ctx));
		vfgx_port_release(sp, 0, &one, 1);
	}
	r = recv_record(fd[4]);
	CHECK(r == 'E', "%s: newcomer got '%c' before its own echo", what, r < 0 ? '-' : r);
	/* a flow that was never handed out */
	one = (struct vfgx_pkt){ .data = (uint8_t *)"12345678", .len = 8, .flow = 0 };
	CHECK(vfgx_port_tx_burst(sp, 0, &one, 1) == -ENOTCONN,
	      "%s: a server sent a packet with flow 0 (no connection named)", what);
	close(fd[4]);
out_rel:
	vfgx_port_release(sp, 0, pk, (uint16_t)n);
	for (int i = 1; i < 4; i++)
		close(fd[i]);
out:
	printf("  %s: %d records, replies checked\n", what, n);
	vfgx_port_close(sp);
	vfgx_config_destroy(cfg);
}

/* max_conns idle clients: the next one is refused (closed at once) and
 * counted; with an idle timeout the idle ones go and a newcomer gets in,
 * while a client that keeps sending stays. */
static void test_conn_limit(void)
{
	const char *what = "tcp connection limit";
	struct vfgx_config *cfg = NULL;
	struct vfgx_socket_info si;
	struct vfgx_pkt pk[64];
	int fd[6], r;
	uint8_t c;
	vfgx_port *sp;

	sp = tcp_server("max_conns: 4, idle_timeout_ms: 0", &cfg);
	if (!sp)
		return;
	if (connect_quiet(sp, fd, 5, what) < 0)
		goto out;
	vfgx_socket_info(sp, &si);
	CHECK(si.conns == 4 && si.refused == 1, "%s: %u open, %llu refused; want 4 and 1",
	      what, si.conns, (unsigned long long)si.refused);
	/* the refused client sees the close */
	CHECK(recv(fd[4], &c, 1, 0) == 0, "%s: refused client not closed", what);
	for (int i = 0; i < 5; i++)
		close(fd[i]);
	vfgx_port_close(sp);
	vfgx_config_destroy(cfg);

	what = "tcp idle timeout";
	sp = tcp_server("max_conns: 4, idle_timeout_ms: 2000", &cfg);
	if (!sp)
		return;
	if (connect_quiet(sp, fd, 4, what) < 0)
		goto out;
	/* client 0 keeps talking; 1..3 stay silent until they are closed */
	for (uint64_t end = vfgx_now_ns() + 20ull * 1000000000ull; vfgx_now_ns() < end;) {
		send_record(fd[0], 'A', 8);
		ms_sleep(20);
		r = vfgx_port_rx_burst(sp, 0, pk, 64);
		if (r > 0)
			vfgx_port_release(sp, 0, pk, (uint16_t)r);
		vfgx_socket_info(sp, &si);
		if (si.idle_closed >= 3)
			break;
	}
	CHECK(si.idle_closed == 3 && si.conns == 1,
	      "%s: %llu closed as idle, %u open; want 3 and 1", what,
	      (unsigned long long)si.idle_closed, si.conns);
	for (int i = 1; i < 4; i++)
		CHECK(recv(fd[i], &c, 1, 0) == 0, "%s: idle client %d not closed", what, i);
	fd[4] = tcp_client(sk_port_of(sp));
	send_record(fd[4], 'E', 8);
	ms_sleep(3);
	r = rx_until(sp, pk, 0, 1);
	CHECK(r >= 1, "%s: newcomer's record not received after the idle ones went", what);
	if (r > 0)
		vfgx_port_release(sp, 0, pk, (uint16_t)r);
	printf("  %s: %llu idle connections closed, the talking one kept\n", what,
	       (unsigned long long)si.idle_closed);
	for (int i = 0; i < 5; i++)
		close(fd[i]);
out:
	vfgx_port_close(sp);
	vfgx_config_destroy(cfg);
}

/* While one connection is busy, a new client's record is read on the
 * first receive call after the connection is made (no waiting for a
 * 256th call). */
static void test_accept_prompt(void)
{
	const char *what = "tcp prompt accept";
	struct vfgx_config *cfg = NULL;
	struct vfgx_pkt pk[64];
	int busy, fd, got = 0;
	vfgx_port *sp;

	sp = tcp_server("idle_timeout_ms: 0", &cfg);
	if (!sp)
		return;
	busy = tcp_client(sk_port_of(sp));
	ms_sleep(3);
	vfgx_port_rx_burst(sp, 0, pk, 64);
	for (int i = 0; i < 5; i++) {
		int n, seen = 0;

		fd = tcp_client(sk_port_of(sp));
		send_record(busy, 'B', 8);
		send_record(fd, (uint8_t)('0' + i), 8);
		ms_sleep(3); /* > the backend's accept interval */
		n = vfgx_port_rx_burst(sp, 0, pk, 64);
		for (int k = 0; k < n; k++)
			seen += pk[k].data[0] == '0' + i;
		if (n > 0)
			vfgx_port_release(sp, 0, pk, (uint16_t)n);
		got += seen;
		close(fd);
	}
	printf("  %s: %d of 5 newcomers read on the first call\n", what, got);
	CHECK(got == 5, "%s: %d of 5 new connections read on the first receive call", what, got);
	close(busy);
	vfgx_port_close(sp);
	vfgx_config_destroy(cfg);
}

/* A record above max_record whose sender closes halfway: one drop,
 * too_big, not also truncated. */
static void test_too_big_cut(void)
{
	const char *what = "tcp too big and cut";
	struct vfgx_config *cfg = NULL;
	struct vfgx_queue_stats qs;
	struct vfgx_socket_info si = { 0 };
	struct vfgx_pkt pk[8];
	uint8_t b[4 + 100] = { 0 };
	vfgx_port *sp;
	int fd;

	sp = tcp_server("max_record: 1000, idle_timeout_ms: 0", &cfg);
	if (!sp)
		return;
	fd = tcp_client(sk_port_of(sp));
	vfgx_wr32(b, 5000);
	send(fd, b, sizeof(b), MSG_NOSIGNAL);
	close(fd);
	for (uint64_t end = vfgx_now_ns() + 10ull * 1000000000ull;
	     vfgx_now_ns() < end && si.closed < 1;) {
		vfgx_port_rx_burst(sp, 0, pk, 8);
		vfgx_socket_info(sp, &si);
		ms_sleep(1);
	}
	vfgx_port_stats(sp, 0, &qs);
	printf("  %s: too_big %llu truncated %llu\n", what,
	       (unsigned long long)qs.drops[VFGX_DROP_TOO_BIG],
	       (unsigned long long)qs.drops[VFGX_DROP_TRUNCATED]);
	CHECK(si.closed == 1 && qs.drops[VFGX_DROP_TOO_BIG] == 1 &&
	      qs.drops[VFGX_DROP_TRUNCATED] == 0,
	      "%s: closed %u, too_big %llu, truncated %llu; want 1, 1, 0", what, si.closed,
	      (unsigned long long)qs.drops[VFGX_DROP_TOO_BIG],
	      (unsigned long long)qs.drops[VFGX_DROP_TRUNCATED]);
	vfgx_port_close(sp);
	vfgx_config_destroy(cfg);
}

/* The next byte of a trickle: -1 once the server closed fd. */
static int trickle(int fd, uint8_t b)
{
	uint8_t c;
	ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT);

	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
		return -1;
	send(fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	return 0;
}

/* One byte to each of n trickling peers still open; a peer the server
 * closed is closed here and set to -1.  Returns how many were closed. */
static int trickle_all(int *fd, int n, uint8_t b)
{
	int closed = 0;

	for (int i = 0; i < n; i++)
		if (fd[i] >= 0 && trickle(fd[i], b) < 0) {
			close(fd[i]);
			fd[i] = -1;
			closed++;
		}
	return closed;
}

#define TR_IDLE 4

/* Peers that send a byte every 200 ms and never a whole record (issue
 * #43: 64 such connections held every slot at the default idle timeout):
 * with max_conns 5 and idle_timeout_ms 1000, TR_IDLE of them inside a
 * record above max_record are closed idle (bytes are not records), while
 * a client that sends whole records stays and every record gets through;
 * a newcomer then gets a slot. */
static void test_trickle_idle(void)
{
	const char *what = "tcp trickling peers, slots";
	struct vfgx_config *cfg = NULL;
	struct vfgx_socket_info si = { 0 };
	struct vfgx_pkt pk[64];
	int idle[TR_IDLE], good = -1, late = -1, idle_seen = 0, r;
	uint32_t sent = 0, got = 0;
	uint8_t hdr[4];
	uint64_t next_byte = 0, end;
	vfgx_port *sp;

	sp = tcp_server("max_conns: 5, idle_timeout_ms: 1000", &cfg);
	if (!sp)
		return;
	for (int i = 0; i < TR_IDLE; i++)
		idle[i] = -1;
	for (int i = 0; i < TR_IDLE; i++) {
		idle[i] = tcp_client(sk_port_of(sp));
		if (idle[i] < 0)
			goto out;
		vfgx_wr32(hdr, 0x7fffffffu);
		send(idle[i], hdr, 4, MSG_NOSIGNAL);
		ms_sleep(3);
		vfgx_port_rx_burst(sp, 0, pk, 64);
	}
	good = tcp_client(sk_port_of(sp));
	if (good < 0)
		goto out;
	for (end = vfgx_now_ns() + 30ull * 1000000000ull; vfgx_now_ns() < end;) {
		int n = vfgx_port_rx_burst(sp, 0, pk, 64);

		CHECK(n >= 0, "%s: rx: %s", what, vfgx_last_error(ctx));
		if (n < 0)
			break;
		for (int k = 0; k < n; k++)
			got += pk[k].data[0] == 'G';
		if (n > 0)
			vfgx_port_release(sp, 0, pk, (uint16_t)n);
		if (vfgx_now_ns() >= next_byte) {
			next_byte = vfgx_now_ns() + 200000000ull;
			idle_seen += trickle_all(idle, TR_IDLE, 'i');
			send_record(good, 'G', 64);
			sent++;
		}
		if (idle_seen == TR_IDLE && got >= 10 && got == sent)
			break;
		if (!n)
			ms_sleep(2);
	}
	vfgx_socket_info(sp, &si);
	printf("  %s: %llu closed idle, good client %u of %u records\n", what,
	       (unsigned long long)si.idle_closed, got, sent);
	CHECK(idle_seen == TR_IDLE && si.idle_closed == TR_IDLE,
	      "%s: %d of %d peers trickling without a record saw the close; %llu closed idle",
	      what, idle_seen, TR_IDLE, (unsigned long long)si.idle_closed);
	CHECK(got == sent && got >= 10, "%s: the good client got %u of %u records through", what,
	      got, sent);
	CHECK(si.conns == 1, "%s: %u connections open at the end, want the good one", what, si.conns);
	late = tcp_client(sk_port_of(sp));
	if (late >= 0) {
		send_record(late, 'L', 8);
		r = rx_until(sp, pk, 0, 1);
		CHECK(r == 1 && pk[0].data[0] == 'L', "%s: a newcomer's record not received", what);
		if (r > 0)
			vfgx_port_release(sp, 0, pk, (uint16_t)r);
		close(late);
	}
out:
	for (int i = 0; i < TR_IDLE; i++)
		if (idle[i] >= 0)
			close(idle[i]);
	if (good >= 0)
		close(good);
	vfgx_port_close(sp);
	vfgx_config_destroy(cfg);
}

#define TR_SLOW 32

/* Peers that send a byte every 200 ms and never a whole record (issue
 * #43): TR_IDLE inside a record above max_record (no buffer: the idle
 * timeout closes them, bytes are not records) and TR_SLOW inside 1 MiB
 * records (as many as the pool's 32 buffers: at most max_staged_records,
 * half the pool, hold one at a time, and record_timeout_ms closes each).
 * Meanwhile every record of a client that sends whole records gets
 * through and that client stays. */
static void test_trickle(void)
{
	const char *what = "tcp trickling peers";
	struct vfgx_config *cfg = NULL;
	struct vfgx_socket_info si = { 0 };
	struct vfgx_socket_tcp_stats ts = { .argsz = sizeof(ts) };
	struct vfgx_queue_stats qs;
	struct vfgx_pkt pk[64];
	int idle[TR_IDLE], slow[TR_SLOW], good = -1, idle_seen = 0, slow_seen = 0, n_err = 0;
	uint32_t min_avail = UINT32_MAX, sent = 0, got = 0;
	uint8_t hdr[4];
	uint64_t next_byte = 0, end;
	vfgx_pool *pool;
	vfgx_port *sp;

	/* a budget above the pool: one line naming the key and the fix */
	sp = sk_open_port(ctx, "interfaces:\n  - backend: socket\n    address: tcp://127.0.0.1:0\n"
			  "    socket: {num_bufs: 8, max_staged_records: 9}\n", 1, 1, &cfg, &n_err);
	CHECK(!sp && n_err == -EINVAL && strstr(vfgx_last_error(ctx), "max_staged_records 9") &&
	      strstr(vfgx_last_error(ctx), "8 rx buffers") && !strchr(vfgx_last_error(ctx), '\n'),
	      "%s: max_staged_records above the pool: %d, %s", what, n_err, vfgx_last_error(ctx));
	vfgx_port_close(sp);
	vfgx_config_destroy(cfg);
	cfg = NULL;
	sp = tcp_server("max_record: 1048576, idle_timeout_ms: 1000, record_timeout_ms: 1000", &cfg);
	if (!sp)
		return;
	pool = vfgx_port_rx_pool(sp, 0);
	for (int i = 0; i < TR_IDLE + TR_SLOW; i++)
		*(i < TR_IDLE ? &idle[i] : &slow[i - TR_IDLE]) = -1;
	for (int i = 0; i < TR_IDLE + TR_SLOW; i++) {
		int fd = tcp_client(sk_port_of(sp));

		if (fd < 0)
			goto out;
		vfgx_wr32(hdr, i < TR_IDLE ? 0x7fffffffu : 1u << 20);
		send(fd, hdr, 4, MSG_NOSIGNAL);
		if (i < TR_IDLE)
			idle[i] = fd;
		else
			slow[i - TR_IDLE] = fd;
		ms_sleep(3); /* accepted and its header read before the next */
		vfgx_port_rx_burst(sp, 0, pk, 64);
	}
	good = tcp_client(sk_port_of(sp));
	if (good < 0)
		goto out;
	for (end = vfgx_now_ns() + 30ull * 1000000000ull; vfgx_now_ns() < end;) {
		int n = vfgx_port_rx_burst(sp, 0, pk, 64);
		uint32_t avail = vfgx_pool_available(pool) + (uint32_t)(n > 0 ? n : 0);

		CHECK(n >= 0, "%s: rx: %s", what, vfgx_last_error(ctx));
		if (n < 0)
			break;
		/* buffers free apart from the records just handed to us */
		if (avail < min_avail)
			min_avail = avail;
		for (int k = 0; k < n; k++)
			got += pk[k].data[0] == 'G';
		if (n > 0)
			vfgx_port_release(sp, 0, pk, (uint16_t)n);
		if (vfgx_now_ns() >= next_byte) {
			next_byte = vfgx_now_ns() + 200000000ull;
			idle_seen += trickle_all(idle, TR_IDLE, 'i');
			slow_seen += trickle_all(slow, TR_SLOW, 's');
			send_record(good, 'G', 64);
			sent++;
		}
		vfgx_socket_info(sp, &si);
		if (idle_seen == TR_IDLE && slow_seen == TR_SLOW && got >= 10 && got == sent)
			break;
		if (!n)
			ms_sleep(2);
	}
	vfgx_socket_info(sp, &si);
	CHECK(vfgx_socket_tcp_stats(sp, &ts) == 0, "%s: vfgx_socket_tcp_stats", what);
	vfgx_port_stats(sp, 0, &qs);
	printf("  %s: %llu closed idle, %llu closed slow, good client %u of %u records, at least %u of 32 buffers free\n",
	       what, (unsigned long long)si.idle_closed, (unsigned long long)ts.slow_closed, got, sent,
	       min_avail);
	CHECK(idle_seen == TR_IDLE && si.idle_closed == TR_IDLE,
	      "%s: %d of %d peers trickling without a record saw the close; %llu closed idle",
	      what, idle_seen, TR_IDLE, (unsigned long long)si.idle_closed);
	CHECK(slow_seen == TR_SLOW && ts.slow_closed == TR_SLOW,
	      "%s: %d of %d peers trickling a record saw the close; %llu closed by record_timeout_ms",
	      what, slow_seen, TR_SLOW, (unsigned long long)ts.slow_closed);
	CHECK(qs.drops[VFGX_DROP_TRUNCATED] == TR_SLOW,
	      "%s: %llu records counted truncated, want %d", what,
	      (unsigned long long)qs.drops[VFGX_DROP_TRUNCATED], TR_SLOW);
	CHECK(got == sent && got >= 10, "%s: the good client got %u of %u records through", what,
	      got, sent);
	CHECK(si.conns == 1, "%s: %u connections open at the end, want the good one", what, si.conns);
	CHECK(min_avail >= 16, "%s: only %u of 32 buffers were free at one point; records still arriving may hold at most 16 (max_staged_records: half the pool)",
	      what, min_avail);
out:
	for (int i = 0; i < TR_IDLE; i++)
		if (idle[i] >= 0)
			close(idle[i]);
	for (int i = 0; i < TR_SLOW; i++)
		if (slow[i] >= 0)
			close(slow[i]);
	if (good >= 0)
		close(good);
	vfgx_port_close(sp);
	vfgx_config_destroy(cfg);
}

/* --- one stream over two workers ------------------------------------------ */

#define SPLIT_N 20000

struct split_check {
	_Atomic(unsigned long) owner; /* pthread_t of the delivering thread */
	_Atomic uint64_t threads_seen, out_of_order, delivered;
	uint64_t next; /* written only by the owner */
};

static int split_stage(void *user, uint32_t stream, uint64_t seq,
		       const uint8_t *payload, uint32_t len)
{
	struct split_check *sc = user;
	unsigned long self = (unsigned long)pthread_self(), none = 0;

	(void)payload;
	(void)len;
	if (stream != 0)
		return 0;
	if (!atomic_compare_exchange_strong(&sc->owner, &none, self) && none != self) {
		atomic_fetch_add(&sc->threads_seen, 1);
		return 0; /* another thread: do not touch the owner's state */
	}
	if (seq < sc->next)
		atomic_fetch_add(&sc->out_of_order, 1);
	sc->next = seq + 1;
	atomic_fetch_add(&sc->delivered, 1);
	return 0;
}

/* Stream 0 goes to two UDP ports (one queue each, so two workers): even
 * sequences to one, odd to the other, in a window the receiver keeps up
 * with.  It must be delivered once, in order, by one thread. */
static void test_stream_split(void)
{
	const char *what = "udp stream over two workers";
	struct vfgx_config *cfg[2] = { 0 };
	struct vfgx_pipeline_config pc;
	struct vfgx_pipeline_stats st;
	struct split_check sc = { 0 };
	struct sockaddr_in dst = { .sin_family = AF_INET };
	vfgx_port *ports[2] = { 0 };
	vfgx_pipeline *pl = NULL;
	uint8_t frame[2048];
	int fd = -1, err;

	vfgx_pipeline_config_default(&pc);
	pc.device = VFGX_DEVICE_CPU;
	pc.workers = 2;
	pc.max_streams = 4;
	pc.verify_payload = true;
	pc.reorder_max_memory = 64u << 20;
	for (int i = 0; i < 2; i++) {
		ports[i] = sk_open_port(ctx, "interfaces:\n  - backend: socket\n    address: udp://127.0.0.1:0\n"
				     "    socket: {rcvbuf: 4194304}\n", 1, 0, &cfg[i], &err);
		CHECK(ports[i], "%s: open: %s", what, vfgx_last_error(ctx));
		if (!ports[i])
			goto out;
	}
	CHECK(vfgx_pipeline_create(ctx, &pc, ports, 2, &pl) == 0, "%s: pipeline: %s", what,
	      vfgx_last_error(ctx));
	if (!pl)
		goto out;
	vfgx_pipeline_set_user_stage(pl, split_stage, &sc);
	CHECK(vfgx_pipeline_start(pl) == 0, "%s: start", what);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	for (uint64_t seq = 0; seq < SPLIT_N; seq++) {
		struct vfgx_pkt_spec s = { .src_ip = 1, .dst_ip = 2, .stream = 0, .seq = seq,
					   .flags = seq + 1 == SPLIT_N ? VFGX_APP_FLAG_LAST : 0,
					   .frame_len = 42 + 16 + 200 };
		uint32_t len = vfgx_pkt_build(frame, sizeof(frame), &s) - 42;

		dst.sin_port = htons(sk_port_of(ports[seq & 1]));
		/* stay within the reorder window of what was processed */
		for (int spin = 0; spin < 100000; spin++) {
			vfgx_pipeline_stats(pl, &st);
			if (st.packets + 256 > seq)
				break;
			sched_yield();
		}
		while (sendto(fd, frame + 42, len, 0, (struct sockaddr *)&dst, sizeof(dst)) < 0 &&
		       (errno == ENOBUFS || errno == EAGAIN))
			sched_yield();
	}
	for (uint64_t end = vfgx_now_ns() + 20ull * 1000000000ull; vfgx_now_ns() < end;) {
		vfgx_pipeline_stats(pl, &st);
		if (st.packets >= SPLIT_N)
			break;
		ms_sleep(5);
	}
	vfgx_pipeline_stop(pl);
	vfgx_pipeline_stats(pl, &st);
	printf("  %s: %llu received, %llu delivered (%llu by other threads), %llu out of order, gaps %llu, handed over %llu\n",
	       what, (unsigned long long)st.packets, (unsigned long long)st.delivered,
	       (unsigned long long)sc.threads_seen, (unsigned long long)sc.out_of_order,
	       (unsigned long long)st.gaps, (unsigned long long)st.handed_over);
	CHECK(st.packets == SPLIT_N, "%s: received %llu of %d", what,
	      (unsigned long long)st.packets, SPLIT_N);
	CHECK(st.delivered == SPLIT_N && sc.delivered == SPLIT_N && sc.threads_seen == 0,
	      "%s: delivered %llu (owner thread %llu, other threads %llu) of %d", what,
	      (unsigned long long)st.delivered, (unsigned long long)sc.delivered,
	      (unsigned long long)sc.threads_seen, SPLIT_N);
	CHECK(sc.out_of_order == 0 && st.gaps == 0 && st.last_seen == 1,
	      "%s: %llu out of order, %llu gaps, %llu ends", what,
	      (unsigned long long)sc.out_of_order, (unsigned long long)st.gaps,
	      (unsigned long long)st.last_seen);
	CHECK(st.handed_over > 0, "%s: nothing was handed to the stream's worker", what);
out:
	if (fd >= 0)
		close(fd);
	vfgx_pipeline_destroy(pl);
	for (int i = 0; i < 2; i++) {
		vfgx_port_close(ports[i]);
		vfgx_config_destroy(cfg[i]);
	}
}


int main(void)
{
	if (unshare(CLONE_NEWNET) == 0 && sk_lo_up() == 0)
		printf("loopback in a private network namespace\n");
	else
		printf("loopback in the host namespace (not root)\n");
	if (vfgx_ctx_create(&ctx))
		return 1;
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	test_reply_identity();
	test_conn_limit();
	test_accept_prompt();
	test_too_big_cut();
	test_trickle_idle();
	test_trickle();
	test_stream_split();
	vfgx_ctx_destroy(ctx);
	printf("%s (%d failures)\n", failures ? "FAILED" : "passed", failures);
	return failures ? 1 : 0;
}
