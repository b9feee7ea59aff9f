/* afxdp_tx.c - transmit side of the AF_XDP net test: opens an afxdp port
 * through the public API, sends COUNT sequence-numbered UDP frames with
 * vfgx_port_tx_burst (a plain socket on the peer checks them), and prints
 * the modes the port got.  With HOLD_S it then keeps the port open so the
 * test can check a second open fails and that exit removes the program. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <vfgx/afxdp.h>
#include <vfgx/stages.h>
#include <vfgx/vfgx.h>

static int parse_mac(const char *s, uint8_t *m)
{
	return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2],
		      &m[3], &m[4], &m[5]) == 6 ? 0 : -1;
}

static int own_mac(const char *ifname, uint8_t *m)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), ret;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ret = fd >= 0 ? ioctl(fd, SIOCGIFHWADDR, &ifr) : -1;
	if (fd >= 0)
		close(fd);
	memcpy(m, ifr.ifr_hwaddr.sa_data, 6);
	return ret;
}

int main(int argc, char **argv)
{
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "xdptx", .backend = "afxdp",
				     .nb_rx_queues = 1, .nb_tx_queues = 1,
				     .burst = 64 };
	struct vfgx_pkt_spec s = { 0 };
	struct vfgx_afxdp_info info;
	struct vfgx_queue_stats st;
	struct in_addr a;
	static uint8_t frames[64][2048];
	struct vfgx_pkt pkts[64];
	uint64_t count, sent = 0, deadline;
	double hold;
	vfgx_port *port;
	vfgx_ctx *ctx;
	int ret;

	if (argc < 9) {
		fprintf(stderr, "usage: afxdp_tx IFACE DST_MAC SRC_IP DST_IP PORT COUNT FRAME_LEN HOLD_S\n");
		return 2;
	}
	pc.address = argv[1];
	if (parse_mac(argv[2], s.dst_mac) || own_mac(argv[1], s.src_mac)) {
		fprintf(stderr, "afxdp_tx: bad MAC or interface %s\n", argv[1]);
		return 2;
	}
	inet_pton(AF_INET, argv[3], &a);
	s.src_ip = ntohl(a.s_addr);
	inet_pton(AF_INET, argv[4], &a);
	s.dst_ip = ntohl(a.s_addr);
	s.src_port = 4000;
	s.dst_port = (uint16_t)atoi(argv[5]);
	count = strtoull(argv[6], NULL, 10);
	s.frame_len = (uint32_t)atoi(argv[7]);
	s.udp_csum = true;
	hold = atof(argv[8]);
	if (vfgx_ctx_create(&ctx))
		return 1;
	ret = vfgx_port_open(ctx, &pc, &port);
	if (ret) {
		fprintf(stderr, "afxdp_tx: %s\n", vfgx_last_error(ctx));
		vfgx_ctx_destroy(ctx);
		return 1;
	}
	vfgx_afxdp_info(port, &info);
	printf("afxdp_tx: %s driver %s: %s XDP, %s, program %u\n", info.ifname,
	       info.driver, info.native ? "native" : "generic",
	       info.zero_copy ? "zero-copy" : "copy", info.prog_id);
	fflush(stdout);
	deadline = vfgx_now_ns() + 10000000000ull;
	while (sent < count && vfgx_now_ns() < deadline) {
		uint16_t n = count - sent < 64 ? (uint16_t)(count - sent) : 64;
		int k;

		for (uint16_t i = 0; i < n; i++) {
			s.seq = sent + i;
			s.flags = sent + i == count - 1 ? VFGX_APP_FLAG_LAST : 0;
			pkts[i].data = frames[i];
			pkts[i].len = vfgx_pkt_build(frames[i], sizeof(frames[i]), &s);
		}
		k = vfgx_port_tx_burst(port, 0, pkts, n);
		if (k < 0) {
			fprintf(stderr, "afxdp_tx: tx_burst: %s\n", vfgx_strerror(k));
			break;
		}
		sent += (uint64_t)k;
		if (k < n) {
			struct timespec ts = { 0, 100000 };

			nanosleep(&ts, NULL);
		}
	}
	vfgx_port_stats(port, 0, &st);
	printf("afxdp_tx: sent %" PRIu64 " frames (tx_packets %" PRIu64 ")\n",
	       sent, st.tx_packets);
	fflush(stdout);
	if (hold > 0) {
		struct timespec ts = { (time_t)hold, 0 };

		printf("afxdp_tx: holding\n");
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	/* let the completion ring drain before the socket goes */
	for (int i = 0; i < 100; i++) {
		struct timespec ts = { 0, 1000000 };

		vfgx_port_tx_burst(port, 0, pkts, 0);
		nanosleep(&ts, NULL);
	}
	vfgx_port_close(port);
	vfgx_ctx_destroy(ctx);
	return sent == count ? 0 : 1;
}
