/* dpdk_veth_rx.c - one end-to-end run over a veth pair: a child in the
 * sender namespace sends COUNT UDP datagrams (sequence header + pattern)
 * through the kernel; this process, in the receiver namespace, receives
 * them with a vfgx DPDK port on net_af_packet or net_af_xdp and checks
 * count, order and every payload byte.  The sender keeps at most WINDOW
 * datagrams unacknowledged, so the result does not depend on timing.
 * usage: dpdk_veth_rx af_packet|af_xdp RX_NS TX_NS IFACE DST_IP COUNT */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vfgx/stages.h>
#include <vfgx/vfgx.h>

#define DST_PORT 5000
#define PAYLOAD 600
/* at most this many datagrams in flight: below every PMD's rx ring, so a
 * receiver descheduled on a busy machine loses nothing */
#define WINDOW 128

static int enter_ns(const char *ns)
{
	char path[256];
	int fd, ret;

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	ret = setns(fd, CLONE_NEWNET) ? -errno : 0;
	close(fd);
	return ret;
}

/* The payload the sender puts in datagram seq: the vfgx generator's
 * (sequence header + pattern), cut out of a built frame. */
static uint32_t payload_of(uint64_t seq, uint8_t *out)
{
	struct vfgx_pkt_spec s = {
		.src_ip = 1, .dst_ip = 2, .src_port = 1, .dst_port = DST_PORT,
		.stream = 3, .seq = seq,
		.frame_len = VFGX_ETH_HLEN + 20 + VFGX_UDP_HLEN + PAYLOAD,
	};
	uint8_t frame[2048];
	uint32_t len = vfgx_pkt_build(frame, sizeof(frame), &s);
	uint32_t off = VFGX_ETH_HLEN + 20 + VFGX_UDP_HLEN;

	memcpy(out, frame + off, len - off);
	return len - off;
}

/* The receiver writes how many datagrams it has taken (a uint64_t) to
 * ack_fd; the first write also says it is ready. */
static int sender(const char *ns, const char *dst, uint64_t count, int ack_fd)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(DST_PORT) };
	uint8_t buf[2048];
	uint64_t acked = 0;
	int one = 1, fd;

	if (enter_ns(ns) || read(ack_fd, &acked, sizeof(acked)) != sizeof(acked))
		return 2;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	inet_pton(AF_INET, dst, &to.sin_addr);
	/* checksum 0 ("not computed"): veth would otherwise leave a partial
	 * checksum that only the kernel knows how to finish */
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one)))
		return 2;
	for (uint64_t seq = 0; seq < count; seq++) {
		uint32_t len = payload_of(seq, buf);

		while (seq >= acked + WINDOW)
			if (read(ack_fd, &acked, sizeof(acked)) != sizeof(acked))
				return 3; /* receiver gave up */
		while (sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
			if (errno != ENOBUFS && errno != EAGAIN)
				return 2;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .backend = "dpdk", .nb_rx_queues = 1,
				     .burst = 32, .name = "veth" };
	uint64_t count, next = 0, other = 0, bad = 0;
	char addr[256];
	uint8_t ref[2048];
	int pipefd[2], status;
	vfgx_port *port;
	vfgx_ctx *ctx;
	pid_t child;
	uint64_t deadline;

	if (argc != 7) {
		fprintf(stderr, "usage: %s af_packet|af_xdp RX_NS TX_NS IFACE DST_IP COUNT\n", argv[0]);
		return 2;
	}
	count = strtoull(argv[6], NULL, 0);
	signal(SIGPIPE, SIG_IGN);
	if (pipe(pipefd))
		return 1;
	child = fork();
	if (child == 0) {
		close(pipefd[1]);
		_exit(sender(argv[3], argv[5], count, pipefd[0]));
	}
	close(pipefd[0]);
	if (enter_ns(argv[2])) {
		printf("cannot enter netns %s\n", argv[2]);
		kill(child, SIGKILL);
		return 1;
	}
	snprintf(addr, sizeof(addr), "net_%s0,iface=%s", argv[1], argv[4]);
	pc.address = addr;
	if (vfgx_ctx_create(&ctx) || vfgx_port_open(ctx, &pc, &port)) {
		printf("%s: %s\n", addr, vfgx_last_error(ctx));
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return 1;
	}
	if (write(pipefd[1], &next, sizeof(next)) != sizeof(next))
		return 1;
	/* a guard against a hang, not a timing assertion */
	deadline = vfgx_now_ns() + 20000000000ull;
	while (next < count && vfgx_now_ns() < deadline) {
		struct vfgx_pkt pk[32];
		int n = vfgx_port_rx_burst(port, 0, pk, 32);

		for (int i = 0; i < n; i++) {
			struct vfgx_parsed ps = { 0 };
			uint32_t len;

			if (vfgx_parse(pk[i].data, pk[i].len, &ps) != VFGX_STAGE_PASS ||
			    ps.dst_port != DST_PORT) {
				other++; /* IPv6 neighbour discovery and such */
				continue;
			}
			len = payload_of(next, ref);
			if (ps.payload_len != len ||
			    memcmp(pk[i].data + ps.payload_off, ref, len)) {
				if (bad++ < 5)
					printf("datagram %llu: sequence %llu or payload differs (len %u, want %u)\n",
					       (unsigned long long)next,
					       (unsigned long long)vfgx_rd64(pk[i].data + ps.payload_off + 8),
					       ps.payload_len, len);
			}
			next++;
		}
		if (n > 0) {
			vfgx_port_release(port, 0, pk, (uint16_t)n);
			/* fails harmlessly (EPIPE) once the sender has finished */
			ssize_t w = write(pipefd[1], &next, sizeof(next));

			(void)w;
		}
	}
	close(pipefd[1]);
	waitpid(child, &status, 0);
	vfgx_port_close(port);
	vfgx_ctx_destroy(ctx);
	printf("%s: received %llu of %llu datagrams in order, %llu payload mismatches, %llu other frames ignored\n",
	       argv[1], (unsigned long long)next, (unsigned long long)count,
	       (unsigned long long)bad, (unsigned long long)other);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("sender failed\n");
		return 1;
	}
	return next == count && bad == 0 ? 0 : 1;
}
