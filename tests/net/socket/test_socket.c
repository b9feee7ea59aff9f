/* test_socket.c - the socket backend against real kernel sockets, on
 * loopback (in a private network namespace when root) or across two
 * namespaces joined by veth (receiver in one, peer thread in the other):
 * UDP streams received intact and in order (plain-socket sender, and the
 * backend's own GSO sender), TCP records of 1 B .. 1 MB and byte-by-byte
 * writes reassembled, a peer closing mid-record reported, and one-line
 * errors for address in use, unreachable addresses and malformed URIs.
 *
 * usage: test_socket loopback
 *        test_socket netns NS_RX NS_PEER RX_ADDR UNREACHABLE_ADDR
 *        test_socket clamp   (rcvbuf clamp warning; root, else skip)
 *        test_socket send ADDR PORT PACKETS   (sender for vfgx run tests)
 * Exit 0 pass, 1 fail, 77 skip. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/socket.h>
#include <vfgx/stages.h>
#include <vfgx/vfgx.h>

#define UDP_OFF 42 /* Ethernet + IPv4 + UDP: the payload starts here */

static int failures;
static vfgx_ctx *ctx;
static char rx_addr[64] = "127.0.0.1";
static char unreach_addr[64];
static char peer_ns[64];
static char logbuf[8192];

#define CHECK(c, ...)                                                        \
	do {                                                                 \
		if (!(c)) {                                                  \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c); \
			fprintf(stderr, __VA_ARGS__);                        \
			fprintf(stderr, "\n");                               \
			failures++;                                          \
		}                                                            \
	} while (0)

static void log_sink(void *user, enum vfgx_log_level lvl, const char *msg)
{
	size_t l = strlen(logbuf);

	(void)user;
	(void)lvl;
	snprintf(logbuf + l, sizeof(logbuf) - l, "%s\n", msg);
}

static void enter_ns(const char *ns)
{
	char path[128];
	int fd;

	if (!ns[0])
		return;
	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		fprintf(stderr, "test_socket: cannot enter netns %s: %s\n", ns,
			strerror(errno));
		exit(1);
	}
	close(fd);
}

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static vfgx_port *open_port(const char *yaml, uint16_t nrx, uint16_t ntx,
			    struct vfgx_config **cfgp, int *err)
{
	struct vfgx_config *cfg;
	vfgx_port *port = NULL;

	*err = vfgx_config_load_string(ctx, yaml, strlen(yaml), "t.yaml", &cfg);
	if (*err)
		return NULL;
	cfg->ifaces[0].nb_rx_queues = nrx;
	cfg->ifaces[0].nb_tx_queues = ntx;
	*err = vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port);
	if (*err) {
		vfgx_config_destroy(cfg);
		return NULL;
	}
	*cfgp = cfg;
	return port;
}

static uint16_t port_of(vfgx_port *p)
{
	struct vfgx_socket_info si;

	vfgx_socket_info(p, &si);
	return si.port;
}

/* A TCP server port on rx_addr and a client port connected to it, with
 * client_keys added to the client's socket section.  NULL (counted as a
 * failure) when the server cannot be opened; *cp NULL (counted) when the
 * client cannot. */
static vfgx_port *open_tcp_pair(const char *what, const char *client_keys,
				struct vfgx_config **scfg, vfgx_port **cp,
				struct vfgx_config **ccfg)
{
	vfgx_port *sp;
	char y[512];
	int err;

	*cp = NULL;
	snprintf(y, sizeof(y), "interfaces:\n  - backend: socket\n    address: tcp://%s:0\n", rx_addr);
	sp = open_port(y, 1, 1, scfg, &err);
	CHECK(sp, "%s: open server: %s", what, vfgx_last_error(ctx));
	if (!sp)
		return NULL;
	snprintf(y, sizeof(y), "interfaces:\n  - backend: socket\n    address: tcp://%s:%u\n"
		 "    socket: {role: client%s}\n", rx_addr, port_of(sp), client_keys);
	*cp = open_port(y, 1, 1, ccfg, &err);
	CHECK(*cp, "%s: open client: %s", what, vfgx_last_error(ctx));
	return sp;
}

/* --- UDP ----------------------------------------------------------------- */

struct udp_peer {
	uint16_t dport;
	uint32_t packets, streams;
	_Atomic uint64_t *received; /* receiver's count, for the send window */
	uint32_t window;
	vfgx_port *tx_port;         /* send with the backend instead */
	bool pace;                  /* no window: pause 1 ms every 256 */
	int err;
};

static uint32_t build_payload(uint8_t *frame, uint32_t stream, uint64_t seq,
			      bool last, uint32_t frame_len)
{
	struct vfgx_pkt_spec s = {
		.src_ip = 0x7f000001, .dst_ip = 0x7f000001, .src_port = 4000,
		.dst_port = 5000, .stream = stream, .seq = seq,
		.flags = last ? VFGX_APP_FLAG_LAST : 0, .frame_len = frame_len,
	};

	return vfgx_pkt_build(frame, 2048, &s) - UDP_OFF;
}

static void wait_window(struct udp_peer *up, uint64_t sent)
{
	while (sent > atomic_load(up->received) + up->window)
		sched_yield();
}

static void *udp_sender(void *arg)
{
	struct udp_peer *up = arg;
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_port = htons(up->dport) };
	int fds[16];
	uint64_t seq[16] = { 0 };
	uint8_t frame[2048];

	enter_ns(peer_ns);
	inet_pton(AF_INET, rx_addr, &dst.sin_addr);
	/* one socket (source port) per stream: REUSEPORT spreads them */
	for (uint32_t s = 0; s < up->streams; s++) {
		fds[s] = socket(AF_INET, SOCK_DGRAM, 0);
		if (fds[s] < 0 || connect(fds[s], (struct sockaddr *)&dst, sizeof(dst))) {
			up->err = -errno;
			return NULL;
		}
	}
	for (uint32_t i = 0; i < up->packets; i++) {
		uint32_t s = i % up->streams;
		uint32_t flen = UDP_OFF + 16 + (uint32_t)(rnd() % 1400);
		bool last = i + up->streams >= up->packets;
		uint32_t len = build_payload(frame, s, seq[s]++, last, flen);

		wait_window(up, i);
		if (up->pace && i % 256 == 255) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
		while (send(fds[s], frame + UDP_OFF, len, 0) < 0) {
			if (errno != ENOBUFS && errno != EAGAIN) {
				up->err = -errno;
				return NULL;
			}
			sched_yield();
		}
	}
	for (uint32_t s = 0; s < up->streams; s++)
		close(fds[s]);
	return NULL;
}

/* The backend's own sender: equal-sized datagrams in bursts (GSO). */
static void *udp_port_sender(void *arg)
{
	struct udp_peer *up = arg;
	static uint8_t mem[64][2048];
	struct vfgx_pkt pk[64];
	uint64_t sent = 0;

	while (sent < up->packets) {
		uint32_t n = up->packets - sent < 64 ? (uint32_t)(up->packets - sent) : 64;
		uint32_t off = 0;

		wait_window(up, sent + n);
		for (uint32_t i = 0; i < n; i++) {
			pk[i].data = mem[i] + UDP_OFF;
			pk[i].len = build_payload(mem[i], 0, sent + i,
						  sent + i + 1 == up->packets,
						  UDP_OFF + 1000);
			pk[i].flow = 0;
		}
		while (off < n) {
			int r = vfgx_port_tx_burst(up->tx_port, 0, pk + off,
						   (uint16_t)(n - off));

			if (r < 0) {
				up->err = r;
				return NULL;
			}
			off += (uint32_t)r;
			if (!r)
				sched_yield();
		}
		sent += n;
	}
	return NULL;
}

static void drain_until(vfgx_port *port, vfgx_proc *proc, _Atomic uint64_t *count,
			uint64_t want, double secs)
{
	struct vfgx_pkt pk[256];
	uint64_t end = vfgx_now_ns() + (uint64_t)(secs * 1e9);

	while (atomic_load(count) < want && vfgx_now_ns() < end) {
		bool any = false;

		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(port); q++) {
			int n = vfgx_port_rx_burst(port, q, pk, 256);

			CHECK(n >= 0, "rx_burst: %s", vfgx_last_error(ctx));
			if (n <= 0)
				continue;
			any = true;
			vfgx_proc_burst(proc, pk, (uint32_t)n);
			vfgx_port_release(port, q, pk, (uint16_t)n);
			atomic_fetch_add(count, (uint64_t)n);
		}
		if (!any)
			sched_yield();
	}
}

static vfgx_proc *make_proc(uint32_t slot, uint32_t window)
{
	struct vfgx_pipeline_config pc = {
		.workers = 1, .reorder = true, .reorder_window = window,
		.reorder_slot = slot, .max_streams = 16, .verify_payload = true,
	};
	vfgx_proc *proc;

	if (vfgx_proc_create(ctx, &pc, &proc))
		return NULL;
	return proc;
}

static void check_clean(const struct vfgx_pipeline_stats *st, uint64_t want,
			uint64_t streams, const char *what)
{
	CHECK(st->delivered == want, "%s: delivered %llu of %llu", what,
	      (unsigned long long)st->delivered, (unsigned long long)want);
	CHECK(st->verify_errors == 0, "%s: %llu verify errors", what,
	      (unsigned long long)st->verify_errors);
	CHECK(st->gaps == 0, "%s: %llu gaps", what, (unsigned long long)st->gaps);
	CHECK(st->last_seen == streams, "%s: %llu streams ended", what,
	      (unsigned long long)st->last_seen);
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		CHECK(st->drops[i] == 0, "%s: %llu drops %s", what,
		      (unsigned long long)st->drops[i],
		      vfgx_drop_reason_name((enum vfgx_drop_reason)i));
}

static void test_udp_stream(bool backend_sender)
{
	char y[512];
	struct vfgx_config *cfg = NULL, *tcfg = NULL;
	struct vfgx_pipeline_stats st;
	struct vfgx_queue_stats qs;
	struct vfgx_socket_info si;
	_Atomic uint64_t count = 0;
	/* 16 source ports: SO_REUSEPORT hashing leaves a queue empty with
	 * probability 2^-15 */
	struct udp_peer up = { .packets = 20000, .streams = 16, .window = 256,
			       .received = &count };
	uint64_t per_q[2] = { 0 };
	const char *what = backend_sender ? "udp (backend GSO sender)" :
					    "udp (plain sender)";
	uint64_t kdrops = 0;
	pthread_t th;
	vfgx_proc *proc;
	vfgx_port *port;
	int err;

	snprintf(y, sizeof(y),
		 "interfaces:\n  - backend: socket\n    address: udp://%s:0\n"
		 "    socket: {rcvbuf: 4194304}\n", rx_addr);
	port = open_port(y, 2, 0, &cfg, &err);
	CHECK(port, "%s: open: %s", what, vfgx_last_error(ctx));
	if (!port)
		return;
	up.dport = port_of(port);
	proc = make_proc(2048, 256);
	if (backend_sender) {
		char saved[64];

		up.streams = 1;
		snprintf(y, sizeof(y),
			 "interfaces:\n  - backend: socket\n    address: udp://%s:%u\n"
			 "    socket: {role: client}\n", rx_addr, up.dport);
		/* the sending port lives in the peer namespace */
		snprintf(saved, sizeof(saved), "%s", peer_ns);
		if (peer_ns[0]) {
			int self = open("/proc/thread-self/ns/net", O_RDONLY);

			enter_ns(peer_ns);
			up.tx_port = open_port(y, 0, 1, &tcfg, &err);
			setns(self, CLONE_NEWNET);
			close(self);
		} else {
			up.tx_port = open_port(y, 0, 1, &tcfg, &err);
		}
		CHECK(up.tx_port, "%s: open sender: %s", what, vfgx_last_error(ctx));
		if (!up.tx_port)
			goto out;
		vfgx_socket_info(up.tx_port, &si);
		printf("  %s: sender UDP GSO %s\n", what, si.gso ? "on" : "off");
		pthread_create(&th, NULL, udp_port_sender, &up);
	} else {
		pthread_create(&th, NULL, udp_sender, &up);
	}
	drain_until(port, proc, &count, up.packets, 60);
	pthread_join(th, NULL);
	vfgx_proc_flush(proc);
	vfgx_proc_stats(proc, &st);
	for (uint16_t q = 0; q < 2; q++) {
		vfgx_port_stats(port, q, &qs);
		kdrops += qs.drops[VFGX_DROP_RING_FULL];
		per_q[q] = qs.rx_packets;
	}
	if (!backend_sender) {
		printf("  %s: SO_REUSEPORT spread: queue 0 %llu, queue 1 %llu\n", what,
		       (unsigned long long)per_q[0], (unsigned long long)per_q[1]);
		CHECK(per_q[0] > 0 && per_q[1] > 0, "%s: one rx queue got nothing", what);
	}
	vfgx_socket_info(port, &si);
	printf("  %s: %llu delivered, kernel drops %llu, receiver GRO %s (%llu arrived coalesced)\n",
	       what, (unsigned long long)st.delivered, (unsigned long long)kdrops,
	       si.gro ? "on" : "off", (unsigned long long)si.gro_coalesced);
	if (backend_sender) {
		struct vfgx_socket_info ti;

		vfgx_socket_info(up.tx_port, &ti);
		printf("  %s: %llu sent inside GSO batches\n", what,
		       (unsigned long long)ti.gso_sent);
		/* a GSO batch reaches a GRO socket whole over lo and veth */
		CHECK(!ti.gso || !si.gro || (ti.gso_sent > 0 && si.gro_coalesced > 0),
		      "%s: GSO sent %llu, GRO coalesced %llu", what,
		      (unsigned long long)ti.gso_sent,
		      (unsigned long long)si.gro_coalesced);
	}
	CHECK(up.err == 0, "%s: sender: %s", what, strerror(-up.err));
	CHECK(kdrops == 0, "%s: kernel dropped %llu datagrams (receive buffer full)",
	      what, (unsigned long long)kdrops);
	check_clean(&st, up.packets, up.streams, what);
	/* nothing left: a bounded wait comes back empty instead of hanging */
	CHECK(vfgx_socket_wait(port, 0, 20) == 0 && vfgx_socket_wait(port, 1, 0) == 0,
	      "%s: wait on an empty queue did not time out", what);
out:
	vfgx_proc_destroy(proc);
	vfgx_port_close(up.tx_port);
	vfgx_port_close(port);
	vfgx_config_destroy(tcfg);
	vfgx_config_destroy(cfg);
}

/* --- TCP ----------------------------------------------------------------- */

struct tcp_peer {
	uint16_t dport;
	uint32_t *sizes;
	uint32_t nb;
	bool byte_by_byte;
	uint32_t cut_after; /* close mid-record after this many records */
	int err;
};

static void record_bytes(uint8_t *b, uint32_t len, uint64_t seq)
{
	if (len >= VFGX_APP_HLEN) {
		vfgx_wr32(b, 0);
		vfgx_wr32(b + 4, 0);
		vfgx_wr64(b + 8, seq);
		for (uint32_t j = VFGX_APP_HLEN; j < len; j++)
			b[j] = vfgx_pattern_byte(0, seq, j - VFGX_APP_HLEN);
	} else {
		for (uint32_t j = 0; j < len; j++)
			b[j] = vfgx_pattern_byte(7, seq, j);
	}
}

static int send_all(int fd, const uint8_t *b, size_t len, bool one)
{
	while (len) {
		ssize_t r = send(fd, b, one ? 1 : len, MSG_NOSIGNAL);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += r;
		len -= (size_t)r;
	}
	return 0;
}

static void *tcp_sender(void *arg)
{
	struct tcp_peer *tp = arg;
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_port = htons(tp->dport) };
	uint8_t *buf = malloc((1u << 20) + 4);
	uint64_t seq = 0;
	int one = 1, fd;

	enter_ns(peer_ns);
	inet_pton(AF_INET, rx_addr, &dst.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&dst, sizeof(dst))) {
		tp->err = -errno;
		goto out;
	}
	for (uint32_t i = 0; i < tp->nb; i++) {
		uint32_t len = tp->sizes[i];

		vfgx_wr32(buf, len);
		record_bytes(buf + 4, len, len >= VFGX_APP_HLEN ? seq++ : i);
		if (tp->cut_after && i == tp->cut_after) {
			/* half a record, then close */
			tp->err = send_all(fd, buf, 4 + len / 2, false);
			break;
		}
		tp->err = send_all(fd, buf, 4 + (size_t)len, tp->byte_by_byte);
		if (tp->err)
			break;
	}
out:
	close(fd);
	free(buf);
	return NULL;
}

/* Receive records until the sender closes; check each against what was
 * sent, in order, and run them through the processor as well. */
static void test_tcp(const char *what, uint32_t nb, uint32_t max_size,
		     bool byte_by_byte, uint32_t cut_after)
{
	char y[512];
	struct vfgx_config *cfg = NULL;
	struct vfgx_pipeline_stats st;
	struct vfgx_queue_stats qs;
	struct tcp_peer tp = { .nb = nb, .byte_by_byte = byte_by_byte,
			       .cut_after = cut_after };
	struct vfgx_pkt pk[64];
	uint32_t got = 0, small = 0, bad = 0, big = 0;
	uint8_t *expect = malloc(1u << 20);
	uint64_t seq = 0, end;
	pthread_t th;
	vfgx_proc *proc;
	vfgx_port *port;
	int err;

	tp.sizes = calloc(nb, sizeof(*tp.sizes));
	for (uint32_t i = 0; i < nb; i++) {
		/* log-uniform over 1 B .. max_size, both ends included */
		uint32_t bits = (uint32_t)(rnd() % 21);
		uint32_t v = (uint32_t)(1 + rnd() % (1ull << bits));

		tp.sizes[i] = i == 0 ? 1 : i == 1 ? max_size :
			      v > max_size ? max_size : v;
		if (tp.sizes[i] < VFGX_APP_HLEN && (!cut_after || i < cut_after))
			small++;
		if (tp.sizes[i] > big)
			big = tp.sizes[i];
	}
	snprintf(y, sizeof(y),
		 "interfaces:\n  - backend: socket\n    address: tcp://%s:0\n"
		 "    socket: {max_record: 1048576, end_on_close: true}\n",
		 rx_addr);
	logbuf[0] = '\0';
	port = open_port(y, 1, 1, &cfg, &err);
	CHECK(port, "%s: open: %s", what, vfgx_last_error(ctx));
	if (!port)
		goto out_free;
	tp.dport = port_of(port);
	proc = make_proc(1u << 20, 4);
	pthread_create(&th, NULL, tcp_sender, &tp);
	end = vfgx_now_ns() + 60ull * 1000000000ull;
	while (!vfgx_port_rx_done(port, 0) && vfgx_now_ns() < end) {
		int n = vfgx_port_rx_burst(port, 0, pk, 64);

		CHECK(n >= 0, "%s: rx_burst: %s", what, vfgx_last_error(ctx));
		if (n <= 0) {
			sched_yield();
			continue;
		}
		for (int k = 0; k < n; k++, got++) {
			uint32_t len = got < nb ? tp.sizes[got] : 0;

			if (got >= nb || pk[k].len != len) {
				bad++;
				continue;
			}
			record_bytes(expect, len, len >= VFGX_APP_HLEN ? seq++ : got);
			if (memcmp(expect, pk[k].data, len))
				bad++;
		}
		vfgx_proc_burst(proc, pk, (uint32_t)n);
		vfgx_port_release(port, 0, pk, (uint16_t)n);
	}
	pthread_join(th, NULL);
	vfgx_proc_flush(proc);
	vfgx_proc_stats(proc, &st);
	vfgx_port_stats(port, 0, &qs);
	printf("  %s: %u records (largest %u B), %u mismatched, truncated %llu\n",
	       what, got, big, bad, (unsigned long long)qs.drops[VFGX_DROP_TRUNCATED]);
	CHECK(vfgx_port_rx_done(port, 0), "%s: hung: the peer's close was not seen", what);
	CHECK(tp.err == 0, "%s: sender: %s", what, strerror(-tp.err));
	CHECK(bad == 0, "%s: %u records differ from what was sent", what, bad);
	if (cut_after) {
		CHECK(got == cut_after, "%s: %u records before the cut, want %u", what,
		      got, cut_after);
		CHECK(qs.drops[VFGX_DROP_TRUNCATED] == 1,
		      "%s: truncated record not counted", what);
		CHECK(strstr(logbuf, "in the middle of a record"),
		      "%s: no warning about the cut record in the log: %s", what, logbuf);
	} else {
		CHECK(got == nb, "%s: %u of %u records", what, got, nb);
		CHECK(st.delivered == nb - small, "%s: pipeline delivered %llu of %u",
		      what, (unsigned long long)st.delivered, nb - small);
		CHECK(st.drops[VFGX_DROP_BAD_APP_HDR] == small,
		      "%s: %llu records below the app header, want %u", what,
		      (unsigned long long)st.drops[VFGX_DROP_BAD_APP_HDR], small);
		CHECK(st.verify_errors == 0 && st.gaps == 0,
		      "%s: verify errors %llu gaps %llu", what,
		      (unsigned long long)st.verify_errors, (unsigned long long)st.gaps);
	}
	vfgx_proc_destroy(proc);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
out_free:
	free(tp.sizes);
	free(expect);
}

/* The backend on both ends: a client port sends records, the server port
 * echoes each on the connection it came from (pkt.flow), the client checks
 * every echo; one thread, non-blocking both ways, so partial writes and
 * their pending tails are exercised. */
static void test_tcp_echo(void)
{
	const char *what = "tcp echo (backend both ends)";
	struct vfgx_config *scfg = NULL, *ccfg = NULL;
	static uint8_t buf[65536], expect[65536];
	struct vfgx_pkt pk[64], out[8];
	uint32_t sizes[300], sent = 0, got = 0, echoed = 0, bad = 0;
	uint64_t end = vfgx_now_ns() + 60ull * 1000000000ull;
	vfgx_port *sp, *cp = NULL;

	for (uint32_t i = 0; i < 300; i++)
		sizes[i] = VFGX_APP_HLEN + (uint32_t)(rnd() % (65536 - VFGX_APP_HLEN));
	sp = open_tcp_pair(what, "", &scfg, &cp, &ccfg);
	if (!sp)
		return;
	while (cp && got < 300 && vfgx_now_ns() < end) {
		int n;

		if (sent < 300) {
			uint32_t k = 0;

			/* one shared buffer: only sends of a single record */
			record_bytes(buf, sizes[sent], sent);
			out[k++] = (struct vfgx_pkt){ .data = buf, .len = sizes[sent] };
			n = vfgx_port_tx_burst(cp, 0, out, (uint16_t)k);
			CHECK(n >= 0, "%s: client tx: %s", what, vfgx_last_error(ctx));
			if (n > 0)
				sent++;
		}
		n = vfgx_port_rx_burst(sp, 0, pk, 64);
		CHECK(n >= 0, "%s: server rx: %s", what, vfgx_last_error(ctx));
		for (int off = 0; n > 0 && off < n;) {
			int w = vfgx_port_tx_burst(sp, 0, pk + off, (uint16_t)(n - off));

			CHECK(w >= 0, "%s: server tx: %s", what, vfgx_last_error(ctx));
			if (w < 0)
				break;
			off += w;
			echoed += (uint32_t)w;
			if (off < n) {
				/* drain the client so the echo can go on */
				int m = vfgx_port_rx_burst(cp, 0, out, 8);

				for (int j = 0; j < m; j++, got++) {
					record_bytes(expect, sizes[got], got);
					if (out[j].len != sizes[got] ||
					    memcmp(expect, out[j].data, sizes[got]))
						bad++;
				}
				if (m > 0)
					vfgx_port_release(cp, 0, out, (uint16_t)m);
			}
		}
		if (n > 0)
			vfgx_port_release(sp, 0, pk, (uint16_t)n);
		n = vfgx_port_rx_burst(cp, 0, pk, 64);
		CHECK(n >= 0, "%s: client rx: %s", what, vfgx_last_error(ctx));
		for (int j = 0; j < n; j++, got++) {
			if (got >= 300) {
				bad++;
				continue;
			}
			record_bytes(expect, sizes[got], got);
			if (pk[j].len != sizes[got] || memcmp(expect, pk[j].data, sizes[got]))
				bad++;
		}
		if (n > 0)
			vfgx_port_release(cp, 0, pk, (uint16_t)n);
	}
	printf("  %s: sent %u, echoed %u, received %u, mismatched %u\n", what, sent,
	       echoed, got, bad);
	CHECK(got == 300 && echoed == 300 && bad == 0,
	      "%s: %u of 300 echoes back, %u mismatched", what, got, bad);
	/* quiet connection: a bounded wait times out; once the client is
	 * gone the server's wait returns at once and rx_burst sees the end */
	CHECK(cp && vfgx_socket_wait(cp, 0, 20) == 0, "%s: wait did not time out", what);
	vfgx_port_close(cp);
	cp = NULL;
	CHECK(vfgx_socket_wait(sp, 0, 5000) == 1, "%s: server wait missed the close", what);
	CHECK(vfgx_port_rx_burst(sp, 0, pk, 64) == 0, "%s: data after the close", what);
	{
		struct vfgx_socket_info si;

		vfgx_socket_info(sp, &si);
		CHECK(si.conns == 0 && si.closed == 1, "%s: conns %u closed %u after the client left",
		      what, si.conns, si.closed);
	}
	vfgx_port_close(cp);
	vfgx_port_close(sp);
	vfgx_config_destroy(ccfg);
	vfgx_config_destroy(scfg);
}

/* Empty datagrams become one empty packet with and without GRO; datagrams
 * the kernel drops for a full receive buffer are counted as ring_full
 * (the socket's SO_MEMINFO drop count). */
static void test_udp_empty_and_drops(bool gro)
{
	char what[64], y[512];
	struct vfgx_config *cfg = NULL;
	struct vfgx_queue_stats qs;
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct vfgx_pkt pk[64];
	static uint8_t payload[64];
	uint64_t got = 0, empty = 0;
	const uint32_t sent = 3000;
	vfgx_port *p;
	int err, fd, n;

	snprintf(what, sizeof(what), "udp empty datagram and drops (GRO %s)",
		 gro ? "on" : "off");
	snprintf(y, sizeof(y), "interfaces:\n  - backend: socket\n    address: udp://%s:0\n"
		 "    socket: {gro: %s, rcvbuf: 4096}\n", rx_addr, gro ? "true" : "false");
	p = open_port(y, 1, 0, &cfg, &err);
	CHECK(p, "%s: open: %s", what, vfgx_last_error(ctx));
	if (!p)
		return;
	a.sin_port = htons(port_of(p));
	inet_pton(AF_INET, rx_addr, &a.sin_addr);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a)),
	      "%s: sender socket: %s", what, strerror(errno));
	/* one empty datagram */
	CHECK(send(fd, payload, 0, 0) == 0, "%s: send empty: %s", what, strerror(errno));
	CHECK(vfgx_socket_wait(p, 0, 5000) == 1, "%s: the empty datagram did not wake the wait", what);
	n = vfgx_port_rx_burst(p, 0, pk, 64);
	CHECK(n == 1 && pk[0].len == 0, "%s: empty datagram gave %d packets (len %u)", what,
	      n, n > 0 ? pk[0].len : 0);
	if (n > 0)
		vfgx_port_release(p, 0, pk, (uint16_t)n);
	/* far more than a 4 KiB receive buffer holds, nobody reading */
	for (uint32_t i = 0; i < sent; i++)
		if (send(fd, payload, sizeof(payload), 0) != (ssize_t)sizeof(payload))
			break;
	while ((n = vfgx_port_rx_burst(p, 0, pk, 64)) > 0) {
		for (int i = 0; i < n; i++) {
			got += pk[i].len == sizeof(payload);
			empty += pk[i].len == 0;
		}
		vfgx_port_release(p, 0, pk, (uint16_t)n);
	}
	vfgx_port_stats(p, 0, &qs);
	printf("  %s: sent %u, received %llu, kernel drops counted %llu\n", what, sent,
	       (unsigned long long)got, (unsigned long long)qs.drops[VFGX_DROP_RING_FULL]);
	CHECK(empty == 0 && got > 0 && qs.drops[VFGX_DROP_RING_FULL] > 0 &&
	      got + qs.drops[VFGX_DROP_RING_FULL] <= sent,
	      "%s: received %llu, drops %llu of %u sent", what, (unsigned long long)got,
	      (unsigned long long)qs.drops[VFGX_DROP_RING_FULL], sent);
	if (fd >= 0)
		close(fd);
	vfgx_port_close(p);
	vfgx_config_destroy(cfg);
}

/* Bursts of small records (0 .. 300 B, each its own buffer) go out through
 * the contiguous-copy send path, with partial writes while the server is
 * not reading; all arrive whole and in order. */
static void test_tcp_small_bursts(void)
{
	const char *what = "tcp small-record bursts";
	struct vfgx_config *scfg = NULL, *ccfg = NULL;
	static uint8_t bufs[32][300], expect[300];
	struct vfgx_pkt out[32], pk[64];
	const uint32_t total = 60000;
	uint32_t sent = 0, got = 0, bad = 0, sizes_seed = 7, stalls = 0;
	uint64_t end = vfgx_now_ns() + 60ull * 1000000000ull;
	vfgx_port *sp, *cp = NULL;

	sp = open_tcp_pair(what, ", sndbuf: 4096", &scfg, &cp, &ccfg);
	if (!sp)
		return;
	/* record i: length (i * 7919 + seed) % 301, bytes (i + j) & 0xff */
	while (cp && got < total && vfgx_now_ns() < end) {
		int n = 0;

		if (sent < total) {
			uint16_t k = 0;

			for (; k < 32 && sent + k < total; k++) {
				uint32_t id = sent + k, len = (id * 7919u + sizes_seed) % 301;

				for (uint32_t j = 0; j < len; j++)
					bufs[k][j] = (uint8_t)(id + j);
				out[k] = (struct vfgx_pkt){ .data = bufs[k], .len = len };
			}
			n = vfgx_port_tx_burst(cp, 0, out, k);
			CHECK(n >= 0, "%s: client tx: %s", what, vfgx_last_error(ctx));
			if (n < 0)
				break;
			stalls += n == 0; /* a partial write's tail is pending */
			sent += (uint32_t)n;
		}
		/* let the client's send buffer fill (partial writes): read
		 * only when the client is stuck or every 64th burst */
		if (n > 0 && (sent / 32) % 64 != 0)
			continue;
		n = vfgx_port_rx_burst(sp, 0, pk, 64);
		CHECK(n >= 0, "%s: server rx: %s", what, vfgx_last_error(ctx));
		for (int i = 0; i < n; i++, got++) {
			uint32_t len = (got * 7919u + sizes_seed) % 301;

			for (uint32_t j = 0; j < len; j++)
				expect[j] = (uint8_t)(got + j);
			if (pk[i].len != len || memcmp(expect, pk[i].data, len))
				bad++;
		}
		if (n > 0)
			vfgx_port_release(sp, 0, pk, (uint16_t)n);
		vfgx_socket_tx_pending(cp, 0);
	}
	printf("  %s: sent %u, received %u, mismatched %u, sends stalled on a partial write %u\n",
	       what, sent, got, bad, stalls);
	CHECK(stalls > 0, "%s: the send buffer never filled: partial writes untested", what);
	CHECK(sent == total && got == total && bad == 0,
	      "%s: %u of %u received, %u mismatched", what, got, total, bad);
	vfgx_port_close(cp);
	vfgx_port_close(sp);
	vfgx_config_destroy(ccfg);
	vfgx_config_destroy(scfg);
}

/* --- errors -------------------------------------------------------------- */

static void expect_error(const char *yaml, uint16_t nrx, uint16_t ntx,
			 int want, const char *needle)
{
	struct vfgx_config *cfg = NULL;
	vfgx_port *port;
	const char *msg;
	int err;

	port = open_port(yaml, nrx, ntx, &cfg, &err);
	msg = vfgx_last_error(ctx);
	CHECK(!port && err == want, "%s: got %d (%s), want %d", yaml, err, msg, want);
	CHECK(strstr(msg, needle), "'%s' lacks '%s'", msg, needle);
	CHECK(!strchr(msg, '\n'), "message is not one line: %s", msg);
	printf("  error: %s\n", msg);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static void test_errors(void)
{
	static const char *const bad[] = {
		"udp//127.0.0.1:5000", "udp://127.0.0.1", "udp://127.0.0.1:99999",
		"sctp://127.0.0.1:5000", "udp://localhost:5000", "tcp://[::1:5000",
		"udp://:5000", "udp://127.0.0.1:50x0",
	};
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	char y[512];
	int fd;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(y, sizeof(y), "interfaces:\n  - backend: socket\n    address: '%s'\n",
			 bad[i]);
		expect_error(y, 1, 0, -EINVAL, "address");
	}
	expect_error("interfaces:\n  - backend: socket\n    address: udp://127.0.0.1:1\n"
		     "    socket: {role: sideways}\n", 1, 0, -EINVAL, "t.yaml:4:");
	expect_error("interfaces:\n  - backend: socket\n", 1, 0, -EINVAL,
		     "needs an address");
	/* address in use: a plain socket holds the port (UDP and TCP) */
	for (int tcp = 0; tcp < 2; tcp++) {
		fd = socket(AF_INET, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
		inet_pton(AF_INET, rx_addr, &a.sin_addr);
		a.sin_port = 0;
		bind(fd, (struct sockaddr *)&a, sizeof(a));
		if (tcp)
			listen(fd, 1);
		getsockname(fd, (struct sockaddr *)&a, &al);
		snprintf(y, sizeof(y), "interfaces:\n  - backend: socket\n    address: %s://%s:%u\n",
			 tcp ? "tcp" : "udp", rx_addr, ntohs(a.sin_port));
		expect_error(y, 1, 0, -EADDRINUSE, "Address already in use");
		/* nothing listens on a bound, non-listening port: refused */
		if (!tcp) {
			int t = socket(AF_INET, SOCK_STREAM, 0);
			struct sockaddr_in b = a;
			socklen_t bl = sizeof(b);

			b.sin_port = 0;
			bind(t, (struct sockaddr *)&b, sizeof(b));
			getsockname(t, (struct sockaddr *)&b, &bl);
			snprintf(y, sizeof(y), "interfaces:\n  - backend: socket\n    address: tcp://%s:%u\n"
				 "    socket: {role: client}\n", rx_addr, ntohs(b.sin_port));
			expect_error(y, 1, 1, -ECONNREFUSED, "start the server first");
			close(t);
		}
		close(fd);
	}
	/* an address that is on no interface here */
	snprintf(y, sizeof(y), "interfaces:\n  - backend: socket\n    address: udp://198.18.%s.9:5000\n",
		 unreach_addr[0] ? "71" : "70");
	expect_error(y, 1, 0, -EADDRNOTAVAIL, "not on any interface");
	if (unreach_addr[0]) {
		snprintf(y, sizeof(y), "interfaces:\n  - backend: socket\n    address: tcp://%s:5000\n"
			 "    socket: {role: client, connect_timeout_ms: 2000}\n", unreach_addr);
		expect_error(y, 1, 1, -ENETUNREACH, "no route");
	}
}

/* Without CAP_NET_ADMIN the kernel clamps rcvbuf to net.core.rmem_max:
 * the port opens and says so in one warning. */
static void test_clamp_warning(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	char y[256];
	pid_t pid;
	int st = 0;

	fflush(stdout); /* nothing buffered for the child to print twice */
	pid = fork();
	if (pid == 0) {
		struct vfgx_config *cfg = NULL;
		vfgx_port *port;
		int err;

		/* drop every capability in this child only */
		if (syscall(SYS_capset, &h, d)) {
			fprintf(stderr, "capset: %s\n", strerror(errno));
			_exit(2);
		}
		logbuf[0] = '\0';
		snprintf(y, sizeof(y), "interfaces:\n  - backend: socket\n    address: udp://%s:0\n"
			 "    socket: {rcvbuf: 1073741824}\n", rx_addr);
		port = open_port(y, 1, 0, &cfg, &err);
		printf("  rcvbuf clamp: %s", logbuf);
		fflush(stdout);
		_exit(port && strstr(logbuf, "rcvbuf 1073741824 clamped by the kernel") ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "no clamp warning for an oversized rcvbuf without CAP_NET_ADMIN");
}

/* --- sender mode and main ------------------------------------------------ */

static int send_mode(const char *addr, uint16_t dport, uint32_t packets)
{
	_Atomic uint64_t fake = 0;
	struct udp_peer up = { .dport = dport, .packets = packets, .streams = 4,
			       .received = &fake, .window = UINT32_MAX,
			       .pace = true };

	snprintf(rx_addr, sizeof(rx_addr), "%s", addr);
	udp_sender(&up);
	if (up.err)
		fprintf(stderr, "test_socket send: %s\n", strerror(-up.err));
	return up.err ? 1 : 0;
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

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "send"))
		return send_mode(argv[2], (uint16_t)atoi(argv[3]),
				 (uint32_t)atoi(argv[4]));
	if (argc == 2 && !strcmp(argv[1], "clamp") && geteuid() != 0) {
		printf("SKIP: rcvbuf clamp: needs root (a child drops CAP_NET_ADMIN to meet the clamp)\n");
		return 77;
	}
	if (argc == 2 && !strcmp(argv[1], "clamp")) {
		printf("rcvbuf clamp without CAP_NET_ADMIN, on 127.0.0.1\n");
	} else if (argc == 2 && !strcmp(argv[1], "loopback")) {
		/* a private namespace keeps the ports clear of everyone else */
		if (unshare(CLONE_NEWNET) == 0 && lo_up() == 0)
			printf("loopback in a private network namespace\n");
		else
			printf("loopback in the host namespace (not root)\n");
	} else if (argc == 6 && !strcmp(argv[1], "netns")) {
		enter_ns(argv[2]);
		snprintf(peer_ns, sizeof(peer_ns), "%s", argv[3]);
		snprintf(rx_addr, sizeof(rx_addr), "%s", argv[4]);
		snprintf(unreach_addr, sizeof(unreach_addr), "%s", argv[5]);
		printf("receiver in %s at %s, peer in %s\n", argv[2], rx_addr, peer_ns);
	} else {
		fprintf(stderr, "usage: test_socket loopback | clamp | netns NS_RX NS_PEER RX_ADDR UNREACH | send ADDR PORT N\n");
		return 2;
	}
	if (vfgx_ctx_create(&ctx))
		return 1;
	vfgx_log_set_sink(ctx, log_sink, NULL);
	vfgx_log_set_level(ctx, VFGX_LOG_WARN);
	if (!strcmp(argv[1], "clamp")) {
		test_clamp_warning();
		vfgx_ctx_destroy(ctx);
		printf("%s (%d failures)\n", failures ? "FAILED" : "passed", failures);
		return failures ? 1 : 0;
	}
	test_udp_stream(false);
	test_udp_stream(true);
	test_tcp("tcp records 1 B .. 1 MB", 120, 1u << 20, false, 0);
	test_tcp("tcp byte-by-byte", 40, 3000, true, 0);
	test_tcp("tcp peer closes mid-record", 10, 5000, false, 5);
	test_tcp_echo();
	test_udp_empty_and_drops(true);
	test_udp_empty_and_drops(false);
	test_tcp_small_bursts();
	test_errors();
	vfgx_ctx_destroy(ctx);
	printf("%s (%d failures)\n", failures ? "FAILED" : "passed", failures);
	return failures ? 1 : 0;
}
