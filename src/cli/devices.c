/* devices.c - `vfgx devices [--json] [--root DIR]`: network interfaces,
 * RDMA devices, GPUs and GPU-NIC pairs ranked by PCIe distance. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cliopt.h"
#include "commands.h"
#include "hwscan.h"

static const char *numa_str(int numa, char *buf, size_t len)
{
	if (numa < 0)
		return "-";
	snprintf(buf, len, "%d", numa);
	return buf;
}

static const char *bytes_str(uint64_t b, char *buf, size_t len)
{
	if (!b)
		return "unknown";
	if (b >= (1ull << 30))
		snprintf(buf, len, "%.0f GiB", (double)b / (1ull << 30));
	else
		snprintf(buf, len, "%.0f MiB", (double)b / (1ull << 20));
	return buf;
}

static void print_text(const struct hw_scan *s)
{
	char a[32], b[32], c[32];

	printf("network interfaces:\n");
	if (!s->nb_nics)
		printf("  none\n");
	for (int i = 0; i < s->nb_nics; i++) {
		const struct hw_nic *n = &s->nics[i];
		char speed[32];

		if (n->speed_mbps < 0)
			snprintf(speed, sizeof(speed), "-");
		else
			snprintf(speed, sizeof(speed), "%" PRId64 " Mb/s", n->speed_mbps);
		printf("  %-12s pci %-12s driver %-11s numa %-2s speed %-12s %-5s xdp %s%s%s%s\n",
		       n->name, n->pci ? n->dev.bdf : "-",
		       n->dev.driver[0] ? n->dev.driver : "-", numa_str(n->dev.numa, a, sizeof(a)),
		       speed, n->operstate[0] ? n->operstate : "-", n->xdp,
		       n->xdp_zerocopy ? " zero-copy" : "", n->rdma[0] ? " rdma " : "", n->rdma);
	}
	if (s->nb_nics)
		printf("  (xdp: %s)\n", !strcmp(s->nics[0].xdp_source, "kernel") ?
		       "as the kernel reports it" :
		       "guessed from the driver: kernel < 6.3 or --root");
	printf("rdma devices:\n");
	if (!s->nb_rdma)
		printf("  none\n");
	for (int i = 0; i < s->nb_rdma; i++) {
		const struct hw_rdma *r = &s->rdma[i];

		printf("  %-12s pci %-12s netdev %-12s numa %s\n", r->name,
		       r->pci ? r->dev.bdf : "-", r->netdev[0] ? r->netdev : "-",
		       numa_str(r->dev.numa, a, sizeof(a)));
		for (int p = 0; p < r->nb_ports; p++) {
			const struct hw_rdma_port *pt = &r->ports[p];

			printf("    port %d %s %s\n", pt->port, pt->state, pt->link_layer);
			for (int k = 0; k < pt->nb_gids; k++)
				printf("      gid %-3d %s %s %s\n", pt->gids[k].index,
				       pt->gids[k].gid, pt->gids[k].type[0] ? pt->gids[k].type : "-",
				       pt->gids[k].ndev[0] ? pt->gids[k].ndev : "-");
		}
	}
	printf("gpus:\n");
	if (!s->nb_gpus)
		printf("  none (no PCI device with vendor 0x10de and a display class)\n");
	for (int i = 0; i < s->nb_gpus; i++) {
		const struct hw_gpu *g = &s->gpus[i];

		printf("  %-12s %s numa %s memory %s bar1 %s driver %s (%s)\n", g->dev.bdf,
		       g->name, numa_str(g->dev.numa, a, sizeof(a)),
		       bytes_str(g->mem_bytes, b, sizeof(b)),
		       bytes_str(g->bar1_bytes, c, sizeof(c)),
		       g->dev.driver[0] ? g->dev.driver : "-", g->source);
	}
	if (s->nb_gpus && s->gpu_note[0])
		printf("  note: %s\n", s->gpu_note);
	printf("gpu-nic pairs (closest first):\n");
	if (!s->nb_pairs)
		printf("  none\n");
	for (int i = 0; i < s->nb_pairs; i++) {
		const struct hw_pair *p = &s->pairs[i];
		const struct hw_nic *n = &s->nics[p->nic];

		printf("  gpu %s - nic %s (%s) %s\n", s->gpus[p->gpu].dev.bdf, n->name,
		       n->dev.bdf, hw_dist_name(p->dist));
	}
}

static json_object *jstr(const char *s)
{
	return s && s[0] ? json_object_new_string(s) : NULL;
}

static json_object *jnuma(int numa)
{
	return numa < 0 ? NULL : json_object_new_int(numa);
}

static json_object *to_json(const struct hw_scan *s)
{
	json_object *root = json_object_new_object();
	json_object *nics = json_object_new_array(), *rdma = json_object_new_array();
	json_object *gpus = json_object_new_array(), *pairs = json_object_new_array();

	json_object_object_add(root, "schema", json_object_new_string("vfgx.devices/1"));

	for (int i = 0; i < s->nb_nics; i++) {
		const struct hw_nic *n = &s->nics[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "name", jstr(n->name));
		json_object_object_add(o, "pci", n->pci ? jstr(n->dev.bdf) : NULL);
		json_object_object_add(o, "driver", jstr(n->dev.driver));
		json_object_object_add(o, "numa_node", jnuma(n->dev.numa));
		json_object_object_add(o, "speed_mbps", n->speed_mbps < 0 ? NULL :
					json_object_new_int64(n->speed_mbps));
		json_object_object_add(o, "operstate", jstr(n->operstate));
		json_object_object_add(o, "xdp", jstr(n->xdp));
		json_object_object_add(o, "xdp_zerocopy", json_object_new_boolean(n->xdp_zerocopy));
		json_object_object_add(o, "xdp_source", jstr(n->xdp_source));
		json_object_object_add(o, "rdma_device", jstr(n->rdma));
		json_object_array_add(nics, o);
	}
	for (int i = 0; i < s->nb_rdma; i++) {
		const struct hw_rdma *r = &s->rdma[i];
		json_object *o = json_object_new_object(), *ports = json_object_new_array();

		json_object_object_add(o, "name", jstr(r->name));
		json_object_object_add(o, "pci", r->pci ? jstr(r->dev.bdf) : NULL);
		json_object_object_add(o, "netdev", jstr(r->netdev));
		json_object_object_add(o, "numa_node", jnuma(r->dev.numa));
		for (int p = 0; p < r->nb_ports; p++) {
			const struct hw_rdma_port *pt = &r->ports[p];
			json_object *po = json_object_new_object(), *gids = json_object_new_array();

			json_object_object_add(po, "port", json_object_new_int(pt->port));
			json_object_object_add(po, "state", jstr(pt->state));
			json_object_object_add(po, "link_layer", jstr(pt->link_layer));
			for (int k = 0; k < pt->nb_gids; k++) {
				json_object *go = json_object_new_object();

				json_object_object_add(go, "index", json_object_new_int(pt->gids[k].index));
				json_object_object_add(go, "gid", jstr(pt->gids[k].gid));
				json_object_object_add(go, "type", jstr(pt->gids[k].type));
				json_object_object_add(go, "netdev", jstr(pt->gids[k].ndev));
				json_object_array_add(gids, go);
			}
			json_object_object_add(po, "gids", gids);
			json_object_array_add(ports, po);
		}
		json_object_object_add(o, "ports", ports);
		json_object_array_add(rdma, o);
	}
	for (int i = 0; i < s->nb_gpus; i++) {
		const struct hw_gpu *g = &s->gpus[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "pci", jstr(g->dev.bdf));
		json_object_object_add(o, "name", jstr(g->name));
		json_object_object_add(o, "numa_node", jnuma(g->dev.numa));
		json_object_object_add(o, "memory_bytes", g->mem_bytes ?
					json_object_new_uint64(g->mem_bytes) : NULL);
		json_object_object_add(o, "bar1_bytes", g->bar1_bytes ?
					json_object_new_uint64(g->bar1_bytes) : NULL);
		json_object_object_add(o, "driver", jstr(g->dev.driver));
		json_object_object_add(o, "source", jstr(g->source));
		json_object_array_add(gpus, o);
	}
	for (int i = 0; i < s->nb_pairs; i++) {
		const struct hw_pair *p = &s->pairs[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "gpu", jstr(s->gpus[p->gpu].dev.bdf));
		json_object_object_add(o, "nic", jstr(s->nics[p->nic].name));
		json_object_object_add(o, "nic_pci", jstr(s->nics[p->nic].dev.bdf));
		json_object_object_add(o, "distance", jstr(hw_dist_name(p->dist)));
		json_object_object_add(o, "rank", json_object_new_int((int)p->dist));
		json_object_array_add(pairs, o);
	}
	json_object_object_add(root, "interfaces", nics);
	json_object_object_add(root, "rdma_devices", rdma);
	json_object_object_add(root, "gpus", gpus);
	json_object_object_add(root, "gpu_nic_pairs", pairs);
	json_object_object_add(root, "nvidia_driver", jstr(s->nv_driver));
	json_object_object_add(root, "cuda_driver_version",
			       s->cuda_version ? json_object_new_int(s->cuda_version) : NULL);
	json_object_object_add(root, "note", jstr(s->gpu_note));
	return root;
}

static const struct cli_opt devices_opts[] = {
	{ "json", 'j', NULL, "one JSON document (docs/json.md)" },
	{ "root", 'r', "DIR", "read sys/, proc/ and dev/ below DIR (a fixture tree)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_cli_devices = {
	.name = "devices",
	.summary = "network interfaces, RDMA devices, GPUs and GPU-NIC PCIe distance",
	.opts = devices_opts,
};

int vfgx_cmd_devices(int argc, char **argv)
{
	const char *root = NULL;
	struct sysroot sr;
	struct hw_scan *s;
	bool json = false;
	int c;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_cli_devices)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'r':
			root = optarg;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_cli_devices);
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vfgx devices: unexpected argument '%s' (vfgx devices -h)\n",
			cli_esc(argv[optind]));
		return 2;
	}
	if (sysroot_init(&sr, root)) {
		fprintf(stderr, "vfgx devices: --root %s: not a directory (give a tree holding sys/ and proc/)\n",
			cli_esc(root));
		return 2;
	}
	s = malloc(sizeof(*s));
	if (!s)
		return 1;
	hw_scan(&sr, s);
	if (json) {
		json_object *o = to_json(s);

		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								 JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		print_text(s);
	}
	free(s);
	return 0;
}
