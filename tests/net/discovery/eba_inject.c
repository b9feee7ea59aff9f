/* eba_inject.c - test helper: broadcast crafted discovery frames (valid,
 * truncated, wrong magic, wrong version, malformed) with EtherType 0x88B5
 * on an interface, to check that receivers count and drop the bad ones. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vfgx/eba.h>

int main(int argc, char **argv)
{
	struct vfgx_eba_frame f = { .count = 2 };
	struct sockaddr_ll to = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(VFGX_EBA_ETHERTYPE),
		.sll_halen = 6,
		.sll_addr = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
	};
	uint8_t buf[1500];
	const char *kind;
	int fd, len, count;

	if (argc != 5) {
		fprintf(stderr, "usage: %s IFACE valid|truncated|magic|version|malformed COUNT NODE\n", argv[0]);
		return 2;
	}
	kind = argv[2];
	count = atoi(argv[3]);
	f.node_id = strtoull(argv[4], NULL, 0);
	for (int i = 0; i < 2; i++)
		f.desc[i] = (struct vfgx_eba_desc){
			.node_id = f.node_id, .buffer_id = (uint32_t)i,
			.type = i ? VFGX_EBA_RX : VFGX_EBA_CTRL, .addr = 0x10000,
			.rkey = 0x77, .qpn = 17, .size = 1 << 16,
			.state_off = (1 << 16) - 8, .lease_s = 30,
		};
	len = vfgx_eba_frame_encode(NULL, &f, buf, sizeof(buf));
	if (len < 0)
		return 1;
	if (!strcmp(kind, "truncated")) {
		len -= 10; /* the second descriptor loses its tail */
	} else if (!strcmp(kind, "magic")) {
		buf[3] ^= 0x20;
	} else if (!strcmp(kind, "version")) {
		buf[4] = 2;
	} else if (!strcmp(kind, "malformed")) {
		buf[24 + 88 + 20] = 5; /* second descriptor: type 5 */
	} else if (strcmp(kind, "valid")) {
		fprintf(stderr, "%s: unknown kind '%s'\n", argv[0], kind);
		return 2;
	}
	to.sll_ifindex = (int)if_nametoindex(argv[1]);
	if (!to.sll_ifindex) {
		fprintf(stderr, "%s: %s: no such interface\n", argv[0], argv[1]);
		return 1;
	}
	fd = socket(AF_PACKET, SOCK_DGRAM, htons(VFGX_EBA_ETHERTYPE));
	if (fd < 0) {
		perror("socket(AF_PACKET)");
		return 1;
	}
	for (int i = 0; i < count; i++)
		if (sendto(fd, buf, (size_t)len, 0, (struct sockaddr *)&to, sizeof(to)) != len) {
			perror("sendto");
			return 1;
		}
	close(fd);
	return 0;
}
