/* discover.c - `vfgx discover -i IFACE`: announce this node's descriptors
 * on a raw Ethernet interface (EtherType 0x88B5), collect peers for a
 * while, and print the peer table and the frame counters. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <vfgx/eba.h>

#include "cliopt.h"
#include "commands.h"

static const struct cli_opt discover_opts[] = {
	{ "iface", 'i', "IFACE", "interface to broadcast on (required; needs CAP_NET_RAW)" },
	{ "node", 'n', "NODE", "node id (default: from the interface MAC)" },
	{ "peers", 'p', "PEERS", "stop once this many peer nodes are known (default 0: run --time)" },
	{ "time", 't', "SECONDS", "how long to run (default 3)" },
	{ "lease", 'l', "SECONDS", "lease of our announcement (default 30)" },
	{ "verbose", 'v', NULL, "print peers as they are added, changed and expire" },
	{ "json", 'j', NULL, "the peer table and counters as one JSON document (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_cli_discover = {
	.name = "discover",
	.summary = "find exposed-buffer peers on an interface (raw Ethernet 0x88B5)",
	.more = "exit status: 0 when PEERS (or, with --peers 0, any) peers are known, 1 otherwise\n",
	.opts = discover_opts,
};

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

static void discover_json(vfgx_discovery *d, const char *ifname, int nodes,
			  const struct vfgx_eba_peer_table *t,
			  const struct vfgx_discovery_stats *st)
{
	json_object *root = json_object_new_object(), *peers = json_object_new_array();
	json_object *fr = json_object_new_object();
	uint64_t now = vfgx_now_ns();

	json_object_object_add(root, "schema", json_object_new_string("vfgx.discover/1"));
	json_object_object_add(root, "interface", json_object_new_string(ifname));
	json_object_object_add(root, "node", json_object_new_uint64(vfgx_discovery_node_id(d)));
	for (uint32_t i = 0; i < t->nb; i++) {
		const struct vfgx_eba_peer *p = &t->peers[i];
		json_object *o = json_object_new_object();
		char mac[18];

		fmt_mac(mac, p->desc.mac);
		json_object_object_add(o, "node", json_object_new_uint64(p->desc.node_id));
		json_object_object_add(o, "buffer", json_object_new_int64(p->desc.buffer_id));
		json_object_object_add(o, "type", json_object_new_string(vfgx_eba_type_name(p->desc.type)));
		json_object_object_add(o, "addr", json_object_new_uint64(p->desc.addr));
		json_object_object_add(o, "rkey", json_object_new_int64(p->desc.rkey));
		json_object_object_add(o, "size", json_object_new_uint64(p->desc.size));
		json_object_object_add(o, "qpn", json_object_new_int64(p->desc.qpn));
		json_object_object_add(o, "mac", json_object_new_string(mac));
		json_object_object_add(o, "lease_left_s", json_object_new_double(
			p->expires_ns > now ? (double)(p->expires_ns - now) / 1e9 : 0.0));
		json_object_array_add(peers, o);
	}
	json_object_object_add(root, "peers", peers);
	json_object_object_add(root, "nodes", json_object_new_int(nodes));
	json_object_object_add(root, "buffers", json_object_new_int64(t->nb));
#define FRAME(k) json_object_object_add(fr, #k, json_object_new_uint64(st->k))
	FRAME(tx_frames); FRAME(rx_frames); FRAME(rx_valid); FRAME(rx_own);
	FRAME(rx_truncated); FRAME(rx_bad_magic); FRAME(rx_bad_version);
	FRAME(rx_malformed); FRAME(table_full); FRAME(rate_limited); FRAME(peers_evicted);
	FRAME(peers_added); FRAME(peers_expired);
#undef FRAME
	json_object_object_add(root, "frames", fr);
	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
}

int vfgx_cmd_discover(int argc, char **argv)
{
	struct vfgx_discovery_config cfg = { .argsz = sizeof(cfg) };
	struct vfgx_discovery_stats st;
	const struct vfgx_eba_peer_table *t;
	uint64_t peers = 0, secs = 3, lease = 30, node = 0;
	bool verbose = false, json = false;
	vfgx_discovery *d;
	vfgx_ctx *ctx;
	int opt, n;

	optind = 1;
	while ((opt = cli_getopt(argc, argv, &vfgx_cli_discover)) != -1) {
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
		case 'j': json = true; break;
		case 'h': cli_usage(stdout, &vfgx_cli_discover); return 0;
		default: return 2;
		}
	}
	if (optind != argc)
		return cli_bad_operands(&vfgx_cli_discover, "unexpected operand");
	if (!cfg.ifname)
		return cli_bad_operands(&vfgx_cli_discover, "--iface IFACE is required");
	cfg.node_id = node;
	cfg.lease_s = (uint32_t)lease;
	if (vfgx_ctx_create(&ctx))
		return 1;
	if (vfgx_discovery_open(ctx, &cfg, &d)) {
		fprintf(stderr, "vfgx discover: %s\n", vfgx_last_error(ctx));
		vfgx_ctx_destroy(ctx);
		return 1;
	}
	if (verbose && !json)
		vfgx_discovery_set_events(d, on_event, NULL);
	if (!json) {
		printf("node %" PRIu64 " on %s: announcing for up to %" PRIu64 " s\n",
		       vfgx_discovery_node_id(d), cfg.ifname, secs);
		fflush(stdout);
	}
	n = vfgx_discovery_run(d, (uint32_t)(secs * 1000), (uint32_t)peers);
	if (n < 0) {
		fprintf(stderr, "vfgx discover: %s\n", vfgx_last_error(ctx));
		vfgx_discovery_close(d);
		vfgx_ctx_destroy(ctx);
		return 1;
	}
	t = vfgx_discovery_peers(d);
	vfgx_discovery_stats(d, &st);
	if (json) {
		discover_json(d, cfg.ifname, n, t, &st);
		goto done;
	}
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
	printf("peers: %d nodes, %u buffers\n", n, t->nb);
	printf("frames: tx=%" PRIu64 " rx=%" PRIu64 " valid=%" PRIu64 " own=%" PRIu64
	       " truncated=%" PRIu64 " bad_magic=%" PRIu64 " bad_version=%" PRIu64
	       " malformed=%" PRIu64 " table_full=%" PRIu64 " rate_limited=%" PRIu64
	       " evicted=%" PRIu64 " added=%" PRIu64 " expired=%" PRIu64 "\n",
	       st.tx_frames, st.rx_frames, st.rx_valid, st.rx_own, st.rx_truncated,
	       st.rx_bad_magic, st.rx_bad_version, st.rx_malformed, st.table_full,
	       st.rate_limited, st.peers_evicted, st.peers_added, st.peers_expired);
done:
	vfgx_discovery_close(d);
	vfgx_ctx_destroy(ctx);
	return n >= (int)(peers ? peers : 1) ? 0 : 1;
}
