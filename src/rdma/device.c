/* device.c - RDMA devices: open by name (or the one with a netdev), the
 * port and GID chosen, the protection domain, accessors. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <vfgx/rdma.h>

#include "vfgx_build.h"
#include "rdma_internal.h"

/* ---------------------------------------------------------------- device */

static int read_sysfs(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

/* True when dev's port is bound to network interface netdev. */
static bool dev_has_netdev(const char *dev, uint8_t port, const char *netdev)
{
	char path[256], val[64];

	for (int i = 0; i < 16; i++) {
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/%d",
			 dev, port, i);
		if (read_sysfs(path, val, sizeof(val)) == 0 &&
		    strcmp(val, netdev) == 0)
			return true;
	}
	return false;
}

/* First RoCE v2 IPv4-mapped GID, else 0. */
static int pick_gid(struct ibv_context *verbs, uint8_t port, int tbl_len)
{
	for (int i = 0; i < tbl_len; i++) {
		struct ibv_gid_entry e;
		const uint8_t *r;

		if (ibv_query_gid_ex(verbs, port, i, &e, 0))
			continue;
		r = e.gid.raw;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && r[10] == 0xff &&
		    r[11] == 0xff && !r[0] && !r[8])
			return i;
	}
	return 0;
}

static int dev_setup(vfgx_rdma_dev *dev, int gid_index)
{
	if (ibv_query_port(dev->verbs, dev->port, &dev->pattr))
		return vfgx_set_error(dev->ctx, -errno,
				      "%s: port %u: %s (use a port the device has, usually 1)",
				      dev->name, dev->port, strerror(errno));
	if (ibv_query_device(dev->verbs, &dev->dattr))
		return vfgx_set_error(dev->ctx, -errno, "%s: query device: %s",
				      dev->name, strerror(errno));
	if (dev->pattr.state != IBV_PORT_ACTIVE)
		vfgx_warn(dev->ctx, "%s: port %u is %s, not active (is the netdev up?)",
			  dev->name, dev->port,
			  ibv_port_state_str(dev->pattr.state));
	if (gid_index < 0)
		gid_index = pick_gid(dev->verbs, dev->port,
				     dev->pattr.gid_tbl_len);
	if (gid_index >= dev->pattr.gid_tbl_len)
		return vfgx_set_error(dev->ctx, -EINVAL,
				      "%s: gid index %d out of range (table has %d entries; see `ibv_devinfo -v`)",
				      dev->name, gid_index,
				      dev->pattr.gid_tbl_len);
	if (ibv_query_gid(dev->verbs, dev->port, gid_index, &dev->gid))
		return vfgx_set_error(dev->ctx, -errno, "%s: gid %d: %s",
				      dev->name, gid_index, strerror(errno));
	dev->gid_index = gid_index;
	dev->pd = ibv_alloc_pd(dev->verbs);
	if (!dev->pd)
		return vfgx_set_error(dev->ctx, -ENOMEM,
				      "%s: cannot allocate a protection domain",
				      dev->name);
	return 0;
}

int vfgx_rdma_dev_open(vfgx_ctx *ctx, const char *name, uint8_t port,
		       int gid_index, vfgx_rdma_dev **out)
{
	struct ibv_device **ibl = NULL;
	char seen[256] = "";
	vfgx_rdma_dev *dev;
	int n = 0, ret;

	*out = NULL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->ctx = ctx;
	dev->port = port ? port : 1;
	/* Prefer librdmacm's contexts so rdma_cm ids share our PD. */
	dev->cm_list = rdma_get_devices(&n);
	for (int i = 0; dev->cm_list && i < n; i++) {
		const char *dn = ibv_get_device_name(dev->cm_list[i]->device);

		snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen),
			 "%s%s", *seen ? ", " : "", dn);
		if (!name || !*name || !strcmp(dn, name) ||
		    dev_has_netdev(dn, dev->port, name)) {
			dev->verbs = dev->cm_list[i];
			break;
		}
	}
	if (!dev->verbs) {
		if (dev->cm_list)
			rdma_free_devices(dev->cm_list);
		dev->cm_list = NULL;
		*seen = 0;
		ibl = ibv_get_device_list(&n);
		for (int i = 0; ibl && i < n; i++) {
			const char *dn = ibv_get_device_name(ibl[i]);

			snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen),
				 "%s%s", *seen ? ", " : "", dn);
			if (!name || !*name || !strcmp(dn, name) ||
			    dev_has_netdev(dn, dev->port, name)) {
				dev->verbs = ibv_open_device(ibl[i]);
				dev->own_verbs = dev->verbs != NULL;
				break;
			}
		}
		if (ibl)
			ibv_free_device_list(ibl);
	}
	if (!dev->verbs) {
		free(dev);
		if (!*seen)
			return vfgx_set_error(ctx, -ENODEV,
					      "rdma: no RDMA device found (load a driver, or add soft-RoCE: rdma link add rxe0 type rxe netdev eth0)");
		return vfgx_set_error(ctx, -ENODEV,
				      "rdma: no device or netdev named '%s' (devices: %s)",
				      name, seen);
	}
	snprintf(dev->name, sizeof(dev->name), "%s",
		 ibv_get_device_name(dev->verbs->device));
	ret = dev_setup(dev, gid_index);
	if (ret) {
		vfgx_rdma_dev_close(dev);
		return ret;
	}
	*out = dev;
	return 0;
}

void vfgx_rdma_dev_close(vfgx_rdma_dev *dev)
{
	if (!dev)
		return;
	if (dev->pd)
		ibv_dealloc_pd(dev->pd);
	if (dev->own_verbs)
		ibv_close_device(dev->verbs);
	if (dev->cm_list)
		rdma_free_devices(dev->cm_list);
	free(dev);
}

const char *vfgx_rdma_dev_name(const vfgx_rdma_dev *dev) { return dev->name; }
uint8_t vfgx_rdma_dev_port(const vfgx_rdma_dev *dev) { return dev->port; }
int vfgx_rdma_dev_gid_index(const vfgx_rdma_dev *dev) { return dev->gid_index; }
struct ibv_context *vfgx_rdma_dev_verbs(const vfgx_rdma_dev *dev) { return dev->verbs; }
struct ibv_pd *vfgx_rdma_dev_pd(const vfgx_rdma_dev *dev) { return dev->pd; }
vfgx_ctx *vfgx_rdma_dev_ctx(const vfgx_rdma_dev *dev) { return dev->ctx; }

void vfgx_rdma_dev_set_reg_fail(vfgx_rdma_dev *dev, unsigned mask)
{
	dev->reg_fail = mask;
}
