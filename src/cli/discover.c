/* discover.c - `vfgx discover -i IFACE`: announce this node's descriptors
 * on a raw Ethernet interface (EtherType 0x88B5), collect peers for a
 * while, and print the peer table and the frame counters. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/eba.h>

#include "core/numparse.h"

#include "commands.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vfgx discover -i IFACE [-n NODE] [-p PEERS] [-t SECONDS] [-l LEASE] [-v]\n"
		"  -i IFACE    interface to broadcast on (needs CAP_NET_RAW)\n"
		"  -n NODE     node id (default: from the interface MAC)\n"
		"  -p PEERS    stop once this many peer nodes are known (default 0: run -t)\n"
		"  -t SECONDS  how long to run (default 3)\n"
		"  -l LEASE    lease of our announcement in seconds (default 30)\n"
		"  -v          print peers as they are added, changed and expire\n"
		"exit status: 0 when PEERS (or, with -p 0, any) peers are known, 1 otherwise\n");
}

static void fmt_mac(char *s, const uint8_t m[6])
{
	sprintf(s, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static void on_event(void *user, const struct vfgx_eba_peer *p, int ev,
		     bool expired)
{
	char mac[18];

	(void)user;
	if (ev == VFGX_EBA_PEER_RENEWED)
		return;
	fmt_mac(mac, p->src_mac);
	printf("event: %s node=%" PRIu64 " buffer=%u from %s\n",
	       expired ? "expired" : ev == VFGX_EBA_PEER_ADDED ? "added" : "changed",
	       p->desc.node_id, p->desc.buffer_id, mac);
	fflush(stdout);
}

int vfgx_cmd_discover(int argc, char **argv)
{
	struct vfgx_discovery_config cfg = { 0 };
	struct vfgx_discovery_stats st;
	const struct vfgx_eba_peer_table *t;
	uint64_t peers = 0, secs = 3, lease = 30, node = 0;
	bool verbose = false;
	vfgx_discovery *d;
	vfgx_ctx *ctx;
	int opt, n;

	while ((opt = getopt(argc, argv, "i:n:p:t:l:vh")) != -1) {
		switch (opt) {
		case 'i': cfg.ifname = optarg; break;
		case 'n':
			if (vfgx_flag_u64("discover", "-n", optarg, 1, UINT64_MAX, &node))
				return 2;
			break;
		case 'p':
			/* more could never be found: the table holds this many */
			if (vfgx_flag_u64("discover", "-p", optarg, 0,
					  VFGX_DISCOVERY_DEFAULT_PEERS, &peers))
				return 2;
			break;
		case 't':
			if (vfgx_flag_u64("discover", "-t", optarg, 0, 86400, &secs))
				return 2;
			break;
		case 'l':
			if (vfgx_flag_u64("discover", "-l", optarg, 1,
					  VFGX_EBA_LEASE_MAX, &lease))
				return 2;
			break;
		case 'v': verbose = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!cfg.ifname || optind != argc) {
		usage(stderr);
		return 2;
	}
	cfg.node_id = node;
	cfg.lease_s = (uint32_t)lease;
	if (vfgx_ctx_create(&ctx))
		return 1;
	if (vfgx_discovery_open(ctx, &cfg, &d)) {
		fprintf(stderr, "vfgx discover: %s\n", vfgx_last_error(ctx));
		vfgx_ctx_destroy(ctx);
		return 1;
	}
	if (verbose)
		vfgx_discovery_set_events(d, on_event, NULL);
	printf("node %" PRIu64 " on %s: announcing for up to %" PRIu64 " s\n",
	       vfgx_discovery_node_id(d), cfg.ifname, secs);
	fflush(stdout);
	n = vfgx_discovery_run(d, (uint32_t)(secs * 1000), (uint32_t)peers);
	if (n < 0) {
		fprintf(stderr, "vfgx discover: %s\n", vfgx_last_error(ctx));
		vfgx_discovery_close(d);
		vfgx_ctx_destroy(ctx);
		return 1;
	}
	t = vfgx_discovery_peers(d);
	printf("%-20s %-6s %-4s %-18s %-10s %-12s %-8s %-17s %s\n", "node", "buffer", "type",
	       "addr", "rkey", "size", "qpn", "mac", "lease_left_s");
	for (uint32_t i = 0; i < t->nb; i++) {
		const struct vfgx_eba_peer *p = &t->peers[i];
		uint64_t now = vfgx_now_ns();
		char mac[18];

		fmt_mac(mac, p->desc.mac);
		printf("%-20" PRIu64 " %-6u %-4s 0x%016" PRIx64 " 0x%08x %-12" PRIu64 " %-8u %-17s %.1f\n",
		       p->desc.node_id, p->desc.buffer_id, vfgx_eba_type_name(p->desc.type),
		       p->desc.addr, p->desc.rkey, p->desc.size, p->desc.qpn, mac,
		       p->expires_ns > now ? (double)(p->expires_ns - now) / 1e9 : 0.0);
	}
	vfgx_discovery_stats(d, &st);
	printf("peers: %d nodes, %u buffers\n", n, t->nb);
	printf("frames: tx=%" PRIu64 " rx=%" PRIu64 " valid=%" PRIu64 " own=%" PRIu64
	       " truncated=%" PRIu64 " bad_magic=%" PRIu64 " bad_version=%" PRIu64
	       " malformed=%" PRIu64 " table_full=%" PRIu64 " rate_limited=%" PRIu64
	       " evicted=%" PRIu64 " added=%" PRIu64 " expired=%" PRIu64 "\n",
	       st.tx_frames, st.rx_frames, st.rx_valid, st.rx_own, st.rx_truncated,
	       st.rx_bad_magic, st.rx_bad_version, st.rx_malformed, st.table_full,
	       st.rate_limited, st.peers_evicted, st.peers_added, st.peers_expired);
	vfgx_discovery_close(d);
	vfgx_ctx_destroy(ctx);
	return n >= (int)(peers ? peers : 1) ? 0 : 1;
}
