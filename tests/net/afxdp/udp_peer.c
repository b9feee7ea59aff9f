/* udp_peer.c - the plain-socket end of the AF_XDP tests and benchmark:
 * `send` writes a UDP stream whose payload is vfgx's sequence header plus
 * the generator pattern (kernel-computed checksums), `recv` receives such a
 * stream and checks count, order and every payload byte. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/core.h>
#include <vfgx/stages.h>

#define MAX_PAYLOAD 9000
#define BATCH 64

static void usage(void)
{
	fprintf(stderr,
		"usage: udp_peer send DST_IP PORT COUNT PAYLOAD_BYTES [STREAM [PPS]]\n"
		"       udp_peer recv PORT COUNT PAYLOAD_BYTES TIMEOUT_S\n"
		"  PAYLOAD_BYTES includes the %d-byte sequence header; COUNT 0 in\n"
		"  send means until killed\n", VFGX_APP_HLEN);
	exit(2);
}

static void fill_payload(uint8_t *p, uint32_t len, uint32_t stream,
			 uint64_t seq, bool last)
{
	vfgx_wr32(p, stream);
	vfgx_wr32(p + 4, last ? VFGX_APP_FLAG_LAST : 0);
	vfgx_wr64(p + 8, seq);
	for (uint32_t i = 0; i < len - VFGX_APP_HLEN; i++)
		p[VFGX_APP_HLEN + i] = vfgx_pattern_byte(stream, seq, i);
}

static int do_send(int argc, char **argv)
{
	static uint8_t bufs[BATCH][MAX_PAYLOAD];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in dst = { .sin_family = AF_INET };
	uint64_t count, seq = 0, t0;
	uint32_t len, stream = 0;
	double pps = 0;
	int fd;

	if (argc < 6)
		usage();
	if (inet_pton(AF_INET, argv[2], &dst.sin_addr) != 1)
		usage();
	dst.sin_port = htons((uint16_t)atoi(argv[3]));
	count = strtoull(argv[4], NULL, 10);
	len = (uint32_t)atoi(argv[5]);
	if (argc > 6)
		stream = (uint32_t)atoi(argv[6]);
	if (argc > 7)
		pps = atof(argv[7]);
	if (len < VFGX_APP_HLEN || len > MAX_PAYLOAD)
		usage();
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&dst, sizeof(dst))) {
		perror("udp_peer send: socket");
		return 1;
	}
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = len;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	t0 = vfgx_now_ns();
	while (!count || seq < count) {
		uint32_t n = BATCH;
		int sent;

		if (count && count - seq < n)
			n = (uint32_t)(count - seq);
		if (pps > 0) {
			double due = (double)(vfgx_now_ns() - t0) * 1e-9 * pps;

			if ((double)seq >= due) {
				struct timespec ts = { 0, 50000 };

				nanosleep(&ts, NULL);
				continue;
			}
		}
		for (uint32_t i = 0; i < n; i++)
			fill_payload(bufs[i], len, stream, seq + i,
				     count && seq + i == count - 1);
		sent = sendmmsg(fd, msgs, n, 0);
		if (sent < 0) {
			if (errno == ENOBUFS || errno == EAGAIN)
				continue;
			perror("udp_peer send: sendmmsg");
			return 1;
		}
		seq += (uint64_t)sent;
	}
	close(fd);
	printf("udp_peer: sent %" PRIu64 " datagrams of %u bytes\n", seq, len);
	return 0;
}

static int do_recv(int argc, char **argv)
{
	static uint8_t buf[MAX_PAYLOAD + 1];
	struct sockaddr_in me = { .sin_family = AF_INET };
	uint64_t count, got = 0, next = 0, bad = 0, misordered = 0;
	uint64_t deadline;
	uint32_t len;
	int fd, rcvbuf = 8 << 20;

	if (argc < 6)
		usage();
	me.sin_port = htons((uint16_t)atoi(argv[2]));
	count = strtoull(argv[3], NULL, 10);
	len = (uint32_t)atoi(argv[4]);
	deadline = vfgx_now_ns() + (uint64_t)(atof(argv[5]) * 1e9);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof(me))) {
		perror("udp_peer recv: bind");
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	printf("udp_peer: ready\n");
	fflush(stdout);
	while (got < count && vfgx_now_ns() < deadline) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t r;
		uint64_t seq;
		uint32_t stream;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		r = recv(fd, buf, sizeof(buf), 0);
		if (r < 0)
			continue;
		got++;
		if ((uint32_t)r != len) {
			bad++;
			continue;
		}
		stream = vfgx_rd32(buf);
		seq = vfgx_rd64(buf + 8);
		if (seq != next)
			misordered++;
		next = seq + 1;
		for (uint32_t i = 0; i < len - VFGX_APP_HLEN; i++)
			if (buf[VFGX_APP_HLEN + i] !=
			    vfgx_pattern_byte(stream, seq, i)) {
				bad++;
				break;
			}
	}
	close(fd);
	printf("udp_peer: received %" PRIu64 " of %" PRIu64
	       ", bad payloads %" PRIu64 ", out of order %" PRIu64 "\n",
	       got, count, bad, misordered);
	return got == count && !bad && !misordered ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "send"))
		return do_send(argc, argv);
	if (!strcmp(argv[1], "recv"))
		return do_recv(argc, argv);
	usage();
	return 2;
}
