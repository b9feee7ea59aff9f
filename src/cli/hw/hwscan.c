/* hwscan.c - read network interfaces, RDMA devices, NVIDIA GPUs and the
 * PCIe topology between them from sysfs below a sysroot. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwscan.h"

#define PCI_VENDOR_NVIDIA 0x10de

/* Drivers with native XDP and with AF_XDP zero-copy (mainline kernels);
 * every other netdev gets generic (skb) XDP. */
static const char *const xdp_native[] = {
	"mlx5_core", "mlx4_core", "i40e", "ice", "ixgbe", "ixgbevf", "igb",
	"igc", "bnxt_en", "qede", "nfp", "virtio_net", "veth", "tun", "ena",
	"stmmac", "sfc", "hv_netvsc", "mvneta", "mvpp2", "fec", "enetc",
	"idpf", "gve", NULL
};
static const char *const xdp_zc[] = {
	"mlx5_core", "i40e", "ice", "ixgbe", "igc", "stmmac", "idpf", "gve",
	"veth", NULL
};

static bool in_list(const char *const *l, const char *s)
{
	for (; *l; l++)
		if (!strcmp(*l, s))
			return true;
	return false;
}

const char *hw_dist_name(enum hw_dist d)
{
	switch (d) {
	case HW_SAME_SWITCH:
		return "same-switch";
	case HW_SAME_ROOT_PORT:
		return "same-root-port";
	case HW_SAME_SOCKET:
		return "same-socket";
	default:
		return "cross-socket";
	}
}

static uint32_t read_hex(const struct sysroot *sr, const char *bdf,
			 const char *attr)
{
	int64_t v = 0;

	if (sysroot_read_s64(sr, &v, "/sys/bus/pci/devices/%s/%s", bdf, attr))
		return 0;
	return (uint32_t)v;
}

int hw_pci_read(const struct sysroot *sr, const char *bdf, struct hw_pci *p)
{
	char path[SYSROOT_PATH_MAX], *save = NULL, *tok;
	int64_t numa = -1;
	int ret;

	memset(p, 0, sizeof(*p));
	snprintf(p->bdf, sizeof(p->bdf), "%s", bdf);
	p->numa = -1;
	ret = sysroot_resolve(sr, path, sizeof(path), "/sys/bus/pci/devices/%s", bdf);
	if (ret)
		return ret;
	/* /sys/devices/pci0000:16/0000:16:02.0/0000:17:00.0/... */
	for (tok = strtok_r(path, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (!strncmp(tok, "pci", 3) && !p->host[0])
			snprintf(p->host, sizeof(p->host), "%s", tok);
		else if (sysroot_is_bdf(tok) && p->depth < HW_MAX_DEPTH)
			snprintf(p->chain[p->depth++], sizeof(p->chain[0]), "%s", tok);
	}
	if (!sysroot_read_s64(sr, &numa, "/sys/bus/pci/devices/%s/numa_node", bdf))
		p->numa = (int)numa;
	p->vendor = read_hex(sr, bdf, "vendor");
	p->device = read_hex(sr, bdf, "device");
	p->class_code = read_hex(sr, bdf, "class");
	sysroot_link_name(sr, p->driver, sizeof(p->driver),
			  "/sys/bus/pci/devices/%s/driver", bdf);
	return 0;
}

/* The PCI function a class device hangs off: the last PCI address in its
 * resolved sysfs path (virtio netdevs sit one level below theirs). */
static bool class_dev_bdf(const struct sysroot *sr, const char *cls,
			  const char *name, char *bdf, size_t len)
{
	char path[SYSROOT_PATH_MAX], *save = NULL, *tok;
	bool found = false;

	if (sysroot_resolve(sr, path, sizeof(path), "/sys/class/%s/%s", cls, name))
		return false;
	if (strncmp(path, "/sys/devices/pci", 16))
		return false;
	for (tok = strtok_r(path, "/", &save); tok; tok = strtok_r(NULL, "/", &save))
		if (sysroot_is_bdf(tok)) {
			snprintf(bdf, len, "%s", tok);
			found = true;
		}
	return found;
}

static void scan_nics(struct hw_scan *s)
{
	char **names, bdf[16];
	int n = sysroot_list(s->sr, &names, "/sys/class/net");

	for (int i = 0; i < n && s->nb_nics < HW_MAX_NICS; i++) {
		struct hw_nic *nic = &s->nics[s->nb_nics];
		int64_t speed = -1, ifindex = 0;

		memset(nic, 0, sizeof(*nic));
		snprintf(nic->name, sizeof(nic->name), "%s", names[i]);
		nic->dev.numa = -1;
		if (class_dev_bdf(s->sr, "net", names[i], bdf, sizeof(bdf)) &&
		    !hw_pci_read(s->sr, bdf, &nic->dev))
			nic->pci = true;
		sysroot_link_name(s->sr, nic->dev.driver, sizeof(nic->dev.driver),
				  "/sys/class/net/%s/device/driver", names[i]);
		if (sysroot_read_s64(s->sr, &speed, "/sys/class/net/%s/speed", names[i]) ||
		    speed < 0)
			speed = -1;
		nic->speed_mbps = speed;
		sysroot_read(s->sr, nic->operstate, sizeof(nic->operstate),
			     "/sys/class/net/%s/operstate", names[i]);
		nic->xdp = in_list(xdp_native, nic->dev.driver) ? "native" : "generic";
		nic->xdp_source = "driver table";
		if (!sysroot_read_s64(s->sr, &ifindex, "/sys/class/net/%s/ifindex", names[i]))
			nic->ifindex = (int)ifindex;
		nic->xdp_zerocopy = in_list(xdp_zc, nic->dev.driver);
		s->nb_nics++;
	}
	free(names);
}

static void scan_port(struct hw_scan *s, const char *dev, struct hw_rdma_port *p)
{
	char **gids, buf[64];
	int n;

	sysroot_read(s->sr, buf, sizeof(buf), "/sys/class/infiniband/%s/ports/%d/state",
		     dev, p->port);
	/* "4: ACTIVE" */
	snprintf(p->state, sizeof(p->state), "%s", strchr(buf, ' ') ? strchr(buf, ' ') + 1 : buf);
	sysroot_read(s->sr, p->link_layer, sizeof(p->link_layer),
		     "/sys/class/infiniband/%s/ports/%d/link_layer", dev, p->port);
	n = sysroot_list(s->sr, &gids, "/sys/class/infiniband/%s/ports/%d/gids", dev, p->port);
	for (int i = 0; i < n && p->nb_gids < HW_MAX_GIDS; i++) {
		struct hw_gid *g = &p->gids[p->nb_gids];
		char *end;
		long idx = strtol(gids[i], &end, 10);

		if (*end || sysroot_read(s->sr, g->gid, sizeof(g->gid),
					 "/sys/class/infiniband/%s/ports/%d/gids/%ld",
					 dev, p->port, idx) < 0)
			continue;
		if (!strcmp(g->gid, "0000:0000:0000:0000:0000:0000:0000:0000"))
			continue;
		g->index = (int)idx;
		sysroot_read(s->sr, g->type, sizeof(g->type),
			     "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%ld",
			     dev, p->port, idx);
		sysroot_read(s->sr, g->ndev, sizeof(g->ndev),
			     "/sys/class/infiniband/%s/ports/%d/gid_attrs/ndevs/%ld",
			     dev, p->port, idx);
		p->nb_gids++;
	}
	free(gids);
	/* sysfs lists gids as text, so sort by number */
	for (int i = 1; i < p->nb_gids; i++)
		for (int j = i; j > 0 && p->gids[j - 1].index > p->gids[j].index; j--) {
			struct hw_gid t = p->gids[j];

			p->gids[j] = p->gids[j - 1];
			p->gids[j - 1] = t;
		}
}

static void scan_rdma(struct hw_scan *s)
{
	char **names, **ports, **nets, bdf[16];
	int n = sysroot_list(s->sr, &names, "/sys/class/infiniband");

	for (int i = 0; i < n && s->nb_rdma < HW_MAX_RDMA; i++) {
		struct hw_rdma *r = &s->rdma[s->nb_rdma];
		int np, nn;

		memset(r, 0, sizeof(*r));
		snprintf(r->name, sizeof(r->name), "%s", names[i]);
		r->dev.numa = -1;
		if (class_dev_bdf(s->sr, "infiniband", names[i], bdf, sizeof(bdf)) &&
		    !hw_pci_read(s->sr, bdf, &r->dev))
			r->pci = true;
		nn = sysroot_list(s->sr, &nets, "/sys/class/infiniband/%s/device/net", names[i]);
		if (nn > 0)
			snprintf(r->netdev, sizeof(r->netdev), "%s", nets[0]);
		free(nets);
		np = sysroot_list(s->sr, &ports, "/sys/class/infiniband/%s/ports", names[i]);
		for (int k = 0; k < np && r->nb_ports < HW_MAX_PORTS; k++) {
			r->ports[r->nb_ports].port = atoi(ports[k]);
			scan_port(s, names[i], &r->ports[r->nb_ports]);
			r->nb_ports++;
		}
		free(ports);
		for (int k = 0; k < s->nb_nics; k++)
			if (!strcmp(s->nics[k].name, r->netdev))
				snprintf(s->nics[k].rdma, sizeof(s->nics[k].rdma), "%s", r->name);
		s->nb_rdma++;
	}
	free(names);
}

/* BAR1 (the GPU memory aperture) is the second line of `resource`. */
static uint64_t bar1_size(const struct sysroot *sr, const char *bdf)
{
	char buf[1024], *line;
	unsigned long long start, end, flags;

	if (sysroot_read(sr, buf, sizeof(buf), "/sys/bus/pci/devices/%s/resource", bdf) < 0)
		return 0;
	line = strchr(buf, '\n');
	if (!line || sscanf(line + 1, "%llx %llx %llx", &start, &end, &flags) != 3 ||
	    end <= start)
		return 0;
	return end - start + 1;
}

static void scan_gpus(struct hw_scan *s)
{
	char **names;
	int n = sysroot_list(s->sr, &names, "/sys/bus/pci/devices");

	for (int i = 0; i < n && s->nb_gpus < HW_MAX_GPUS; i++) {
		struct hw_gpu *g = &s->gpus[s->nb_gpus];

		memset(g, 0, sizeof(*g));
		if (hw_pci_read(s->sr, names[i], &g->dev) ||
		    g->dev.vendor != PCI_VENDOR_NVIDIA || (g->dev.class_code >> 16) != 0x03)
			continue;
		snprintf(g->name, sizeof(g->name), "NVIDIA [%04x:%04x]", g->dev.vendor,
			 g->dev.device);
		g->bar1_bytes = bar1_size(s->sr, names[i]);
		g->source = "sysfs";
		sysroot_link_name(s->sr, g->iommu_group, sizeof(g->iommu_group),
				  "/sys/bus/pci/devices/%s/iommu_group", names[i]);
		s->nb_gpus++;
	}
	free(names);
}

static void classify(const struct hw_pci *a, const struct hw_pci *b, struct hw_pair *p)
{
	int shared = 0;

	/* bridges only: the last element of each chain is the device itself */
	while (shared < a->depth - 1 && shared < b->depth - 1 &&
	       !strcmp(a->chain[shared], b->chain[shared]))
		shared++;
	p->shared = shared;
	if (strcmp(a->host, b->host))
		p->shared = shared = 0;
	if (shared >= 2)
		p->dist = HW_SAME_SWITCH;
	else if (shared == 1)
		p->dist = HW_SAME_ROOT_PORT;
	else if (!strcmp(a->host, b->host) || a->numa < 0 || b->numa < 0 ||
		 a->numa == b->numa)
		p->dist = HW_SAME_SOCKET;
	else
		p->dist = HW_CROSS_SOCKET;
}

static int cmp_pairs(const void *x, const void *y)
{
	const struct hw_pair *a = x, *b = y;

	if (a->gpu != b->gpu)
		return a->gpu - b->gpu;
	if (a->dist != b->dist)
		return (int)a->dist - (int)b->dist;
	if (a->shared != b->shared)
		return b->shared - a->shared;
	return a->nic - b->nic;
}

static void rank_pairs(struct hw_scan *s)
{
	for (int g = 0; g < s->nb_gpus; g++)
		for (int k = 0; k < s->nb_nics; k++) {
			struct hw_pair *p = &s->pairs[s->nb_pairs];

			if (!s->nics[k].pci)
				continue;
			p->gpu = g;
			p->nic = k;
			classify(&s->gpus[g].dev, &s->nics[k].dev, p);
			s->nb_pairs++;
		}
	qsort(s->pairs, (size_t)s->nb_pairs, sizeof(s->pairs[0]), cmp_pairs);
}

static void scan_nvidia_stack(struct hw_scan *s)
{
	char buf[512];

	sysroot_read(s->sr, s->nv_driver, sizeof(s->nv_driver), "/sys/module/nvidia/version");
	if (sysroot_read(s->sr, buf, sizeof(buf), "/proc/driver/nvidia/version") > 0) {
		s->nv_open = strstr(buf, "Open Kernel Module") != NULL;
		if (!s->nv_driver[0]) {
			/* "NVRM version: NVIDIA UNIX ... Kernel Module  550.54.15  ..." */
			char *m = strstr(buf, "Kernel Module");
			unsigned a, b;

			if (m && sscanf(m + 13, " %u.%u", &a, &b) == 2)
				snprintf(s->nv_driver, sizeof(s->nv_driver), "%u.%u", a, b);
		}
	}
}

int hw_scan(const struct sysroot *sr, struct hw_scan *s)
{
	memset(s, 0, sizeof(*s));
	s->sr = sr;
	scan_nics(s);
	scan_rdma(s);
	scan_gpus(s);
	scan_nvidia_stack(s);
	rank_pairs(s);
	if (sr->real) {
		hw_xdp_features(s);
		hw_gpu_runtime(s);
	}
	else
		snprintf(s->gpu_note, sizeof(s->gpu_note),
			 "--root given: GPU facts from sysfs only (no CUDA/NVML)");
	return 0;
}
