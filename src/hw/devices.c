/* devices.c - vfgx_devices_scan(): the hardware scan (hwscan.c) behind
 * the public API of vfgx/devices.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/devices.h>

#include "core/argsz.h"
#include "hwscan.h"

struct vfgx_devices {
	struct sysroot sr;
	struct hw_scan s; /* s.sr points at sr */
};

int vfgx_devices_scan(vfgx_ctx *ctx, const char *root, vfgx_devices **out)
{
	struct vfgx_devices *d;

	*out = NULL;
	d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	if (sysroot_init(&d->sr, root)) {
		free(d);
		return vfgx_set_error(ctx, -ENOENT,
				      "devices: %s: not a directory (give a tree holding sys/ and proc/)",
				      root);
	}
	hw_scan(&d->sr, &d->s);
	*out = d;
	return 0;
}

void vfgx_devices_free(vfgx_devices *d)
{
	free(d);
}

const char *vfgx_pcie_dist_name(enum vfgx_pcie_dist d)
{
	return hw_dist_name((enum hw_dist)d);
}

uint32_t vfgx_devices_nb_nics(const vfgx_devices *d)
{
	return (uint32_t)d->s.nb_nics;
}

uint32_t vfgx_devices_nb_gpus(const vfgx_devices *d)
{
	return (uint32_t)d->s.nb_gpus;
}

uint32_t vfgx_devices_nb_pairs(const vfgx_devices *d)
{
	return (uint32_t)d->s.nb_pairs;
}

int vfgx_devices_nic(const vfgx_devices *d, uint32_t i, struct vfgx_device_nic *out)
{
	const struct hw_nic *n = &d->s.nics[i];
	struct vfgx_device_nic v;

	if (i >= (uint32_t)d->s.nb_nics)
		return -EINVAL;
	v = (struct vfgx_device_nic){
		.name = n->name, .bdf = n->pci ? n->dev.bdf : "",
		.driver = n->pci ? n->dev.driver : "", .rdma = n->rdma,
		.xdp = n->xdp ? n->xdp : "", .numa = n->pci ? n->dev.numa : -1,
		.speed_mbps = n->speed_mbps, .xdp_zerocopy = n->xdp_zerocopy,
	};
	return vfgx_argsz_fill(out, &v, sizeof(v));
}

int vfgx_devices_gpu(const vfgx_devices *d, uint32_t i, struct vfgx_device_gpu *out)
{
	const struct hw_gpu *g = &d->s.gpus[i];
	struct vfgx_device_gpu v;

	if (i >= (uint32_t)d->s.nb_gpus)
		return -EINVAL;
	v = (struct vfgx_device_gpu){
		.name = g->name, .bdf = g->dev.bdf, .numa = g->dev.numa,
		.mem_bytes = g->mem_bytes, .bar1_bytes = g->bar1_bytes,
	};
	return vfgx_argsz_fill(out, &v, sizeof(v));
}

int vfgx_devices_pair(const vfgx_devices *d, uint32_t i, struct vfgx_device_pair *out)
{
	const struct hw_pair *p = &d->s.pairs[i];
	struct vfgx_device_pair v;

	if (i >= (uint32_t)d->s.nb_pairs)
		return -EINVAL;
	v = (struct vfgx_device_pair){
		.gpu = (uint32_t)p->gpu, .nic = (uint32_t)p->nic,
		.dist = (enum vfgx_pcie_dist)p->dist, .shared_bridges = p->shared,
	};
	return vfgx_argsz_fill(out, &v, sizeof(v));
}
