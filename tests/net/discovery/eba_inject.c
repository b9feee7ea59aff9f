/* eba_inject.c - test helper: broadcast crafted discovery frames (valid,
 * truncated, wrong magic, wrong version, malformed) with EtherType 0x88B5
 * on an interface, to check that receivers count and drop the bad ones;
 * or a flood of frames each with a new node id (NODE, NODE+1, ...) and the
 * longest lease, from one forged source MAC or a new one per frame. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vfgx/eba.h>

/* COUNT frames, node ids from node, lease VFGX_EBA_LEASE_MAX, sent through
 * a raw socket so the Ethernet source can be forged: 02:00:00:00:00:01 for
 * every frame (one_mac), or 02:00:00 and the frame number.
 */
static int flood(int ifindex, int count, uint64_t node, bool one_mac)
{
	struct sockaddr_ll to = { .sll_family = AF_PACKET,
				  .sll_ifindex = ifindex, .sll_halen = 6 };
	uint8_t buf[1500];
	int fd = socket(AF_PACKET, SOCK_RAW, htons(VFGX_EBA_ETHERTYPE));

	if (fd < 0) {
		perror("socket(AF_PACKET, SOCK_RAW)");
		return 1;
	}
	for (int i = 0; i < count; i++) {
		struct vfgx_eba_frame f = { .count = 2, .node_id = node + (uint64_t)i };
		uint32_t k = one_mac ? 1 : (uint32_t)i + 1;
		uint16_t type = htons(VFGX_EBA_ETHERTYPE);
		int len;

		for (int j = 0; j < 2; j++)
			f.desc[j] = (struct vfgx_eba_desc){
				.node_id = f.node_id, .buffer_id = (uint32_t)j,
				.type = VFGX_EBA_CTRL, .state_off = VFGX_EBA_NO_STATE,
				.lease_s = VFGX_EBA_LEASE_MAX,
			};
		memset(buf, 0xff, 6);
		memcpy(buf + 6, (uint8_t[]){ 0x02, 0, 0, (uint8_t)(k >> 16),
					     (uint8_t)(k >> 8), (uint8_t)k }, 6);
		memcpy(buf + 12, &type, 2);
		len = vfgx_eba_frame_encode(NULL, &f, buf + ETH_HLEN,
					    sizeof(buf) - ETH_HLEN);
		if (len < 0)
			return 1;
		len += ETH_HLEN;
		if (sendto(fd, buf, (size_t)len, 0, (struct sockaddr *)&to,
			   sizeof(to)) != len) {
			perror("sendto");
			return 1;
		}
	}
	close(fd);
	return 0;
}

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
		fprintf(stderr, "usage: %s IFACE valid|truncated|magic|version|malformed|flood-one-mac|flood-many-macs COUNT NODE\n", argv[0]);
		return 2;
	}
	kind = argv[2];
	count = atoi(argv[3]);
	f.node_id = strtoull(argv[4], NULL, 0);
	if (!strncmp(kind, "flood-", 6)) {
		int ifindex = (int)if_nametoindex(argv[1]);

		if (!ifindex) {
			fprintf(stderr, "%s: %s: no such interface\n", argv[0], argv[1]);
			return 1;
		}
		return flood(ifindex, count, f.node_id, !strcmp(kind, "flood-one-mac"));
	}
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
